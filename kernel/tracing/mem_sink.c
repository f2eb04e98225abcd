// SPDX-License-Identifier: MIT
/*
 * pt.sink=memory: the container kept in RAM (a debugger or a dump reads it),
 * in one block of pages that doubles as it fills. When a bigger block cannot
 * be had, the sink fails: the container keeps every byte up to that write and
 * the writer stops there (a container with a piece missing in its middle
 * would be worse than one that ends early).
 */
#include "session.h"
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define MEM_SINK_FIRST	(256 * 1024)

int trace_mem_sink_write(void *ctx, const void *buf, size_t n)
{
	struct trace_mem_sink *m = ctx;

	if (m->len + n > m->cap) {
		u64 cap = m->cap ? m->cap * 2 : MEM_SINK_FIRST;
		u8 *nb;

		while (cap < m->len + n)
			cap *= 2;
		/* atomic: drains run in the PMI */
		nb = (u8 *)__get_free_pages(GFP_ATOMIC | __GFP_NOWARN, get_order((size_t)cap));
		if (!nb) {
			m->failed_at = m->len + n;
			return -ENOMEM;
		}
		if (m->buf) {
			memcpy(nb, m->buf, (size_t)m->len);
			free_pages((uintptr_t)m->buf, get_order((size_t)m->cap));
		}
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, buf, n);
	m->len += n;
	return 0;
}

void trace_mem_sink_free(struct trace_mem_sink *m)
{
	if (m->buf)
		free_pages((uintptr_t)m->buf, get_order((size_t)m->cap));
	*m = (struct trace_mem_sink){ 0 };
}
