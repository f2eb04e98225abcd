// SPDX-License-Identifier: MIT
/*
 * The last traced window as a container of its own (pt_window_trace()): a
 * fuzzer's crashing execution, whatever the session's sink. Its bytes are
 * still in this CPU's ring: a ring in normal mode holds the last pt.buf
 * bytes the trace unit wrote, drained or not (drained bytes are only
 * overwritten by later ones), so nothing is copied while the campaign runs.
 * A decoder starts at a PSB, and the trace unit writes one every few KiB,
 * not at each window: the container starts at the last PSB before the
 * window, and so with the end of what ran before it.
 */
#define pr_fmt(fmt) "pt: " fmt
#include "session.h"
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/pt_packet.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>


/* The container being built (one at a time) and its writer, for add_image(). */
static struct trace_mem_sink win_sink;
static struct trace_writer win_writer;

static void add_image(const char *name, u64 vaddr, const void *data, u64 size)
{
	trace_write_live_image(&win_writer, name, vaddr, data, (size_t)size);
}

/* The last PSB starting at or before @at in @p (@n bytes), or -1. */
static s64 last_psb(const u8 *p, u64 n, u64 at)
{
	u8 psb[PTPK_MAX_SIZE];
	int len = ptpk_encode(&(struct ptpk){ .type = PTPK_PSB }, psb);	/* the one encoding */

	if (len <= 0 || n < (u64)len)
		return -1;
	for (s64 i = (s64)min(at, n - len); i >= 0; i--)
		if (p[i] == psb[0] && !memcmp(p + i, psb, len))
			return i;
	return -1;
}

const void *pt_window_trace(u64 max, u64 *len, struct pt_window_info *info)
{
	struct pt_session *s = &pt_session;
	struct pt_stream *st = this_cpu_ptr(pt_streams);
	const struct trace_engine_ops *engine = pt_session_engine();
	struct trace_totals t = { 0 };
	struct trace_chunk c = { 0 };
	struct pt_aux *aux;
	u64 head, ring, lo, n, start;
	unsigned int order;
	s64 at;
	u8 *tmp;
	int err;

	*info = (struct pt_window_info){ 0 };
	pt_window_trace_free();
	if (!pt_session_has_cpu(smp_processor_id())) {
		pr_err("the window's trace: no trace session on this CPU\n");
		return NULL;
	}
	aux = st->aux;
	if (aux->snapshot) {
		pr_err("the window's trace: pt.snapshot=1's flight recorder keeps it, for the session's container\n");
		return NULL;
	}
	/* a crash aborted the window: its last bytes are published when it stops */
	if (st->running)
		pt_session_stop();
	pt_session_drain();	/* what it lost is known (and where) once drained */

	head = aux->head;
	ring = (u64)aux->nr_pages << PAGE_SHIFT;
	n = min(ring, max);
	lo = head - min(head, n);
	if (st->gap_head > lo)
		lo = st->gap_head;	/* before a loss: not the same flow */
	n = head - lo;
	if (!n || head == st->window_head) {
		pr_err("the window's trace: the window left no bytes in the ring\n");
		return NULL;
	}
	order = get_order((size_t)n);
	tmp = (u8 *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);
	if (!tmp) {
		pr_err("the window's trace: no memory for its %llu bytes\n", n);
		return NULL;
	}
	pt_aux_copy(aux, lo, tmp, n);
	at = st->window_head >= lo ? last_psb(tmp, n, st->window_head - lo) : -1;
	if (at >= 0) {
		start = (u64)at;
	} else {
		/* the window's start is not kept (longer than @max or the ring,
		 * or a loss in it), or no PSB before it: its last bytes, as a
		 * flight recorder's, decoded from their first PSB */
		start = st->window_head >= lo ? st->window_head - lo : 0;
		info->cut = true;
		c.flags = TPZ_TRACE_WRAPPED;
	}
	info->trace_bytes = n - start;
	info->before_window = st->window_head >= lo + start ? st->window_head - lo - start : 0;

	win_sink = (struct trace_mem_sink){ 0 };
	trace_writer_init(&win_writer, &(struct trace_sink){ trace_mem_sink_write, &win_sink });
	trace_write_header(&win_writer, &s->header);
	c.cpu = (u32)st->event.cpu;
	c.tsc = rdtsc();
	trace_write_trace(&win_writer, &c, tmp + start, (size_t)(n - start));
	free_pages((uintptr_t)tmp, order);
	/* the code it ran, as the session's close writes it */
	if (engine)
		engine->write_sideband(add_image);
	trace_modules_write(add_image, !engine);
	/* a loss after its last byte (the trace unit stopped, full) */
	if (st->gap_head == head && st->gap_pending)
		t.lost_at_end = st->lost_pending;
	t.end_tsc = rdtsc();
	trace_write_trailer(&win_writer, &t);
	err = trace_writer_sink_error(&win_writer, NULL, NULL);
	if (err) {
		pr_err("the window's trace: no memory for its container (error %d, %llu bytes of trace)\n",
		       err, info->trace_bytes);
		pt_window_trace_free();
		return NULL;
	}
	*len = win_sink.len;
	return win_sink.buf;
}

void pt_window_trace_free(void)
{
	trace_mem_sink_free(&win_sink);
}
