// SPDX-License-Identifier: MIT
/*
 * The AUX ring: what perf's AUX buffer is for Linux's PT driver. The trace
 * unit writes at the producer position; a consumer drains up to it; the
 * driver's STOP marker keeps the trace unit off data not yet consumed.
 */
#include "internal.h"
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/smp.h>

static void free_chunks(struct pt_aux *aux)
{
	for (unsigned long pg = 0; pg < aux->nr_pages;) {
		int order = aux->chunk_order[pg];

		if (order < 0 || !aux->data_pages[pg])
			break;
		free_pages((uintptr_t)aux->data_pages[pg], (unsigned int)order);
		pg += 1ul << order;
	}
}

/* Pages on node @nid, as an address (NULL when there are none). */
static void *alloc_node(int nid, gfp_t gfp, unsigned int order)
{
	struct page *p = alloc_pages_node(nid, gfp, order);

	return p ? page_address(p) : NULL;
}

static void *alloc_array(int nid, size_t bytes, gfp_t gfp)
{
	return alloc_node(nid, gfp | __GFP_ZERO, get_order(bytes));
}

static void free_array(void *p, size_t bytes)
{
	if (p)
		free_pages((uintptr_t)p, get_order(bytes));
}

struct pt_aux *pt_aux_alloc(int cpu, u64 size, unsigned int max_order, bool snapshot, gfp_t gfp)
{
	int nid = cpu_to_node(cpu);
	unsigned long nr_pages = (unsigned long)(size >> PAGE_SHIFT), pg = 0;
	unsigned int order = min(max_order, (unsigned int)MAX_ORDER);
	struct pt_aux *aux;

	if (size < PAGE_SIZE || (size & (size - 1)))
		return NULL;
	aux = alloc_array(nid, sizeof(*aux), gfp);
	if (!aux)
		return NULL;
	aux->nr_pages = nr_pages;
	aux->snapshot = snapshot;
	aux->data_pages = alloc_array(nid, nr_pages * sizeof(void *), gfp);
	aux->chunk_order = alloc_array(nid, nr_pages, gfp);
	if (!aux->data_pages || !aux->chunk_order)
		goto fail;
	memset(aux->chunk_order, 0xff, nr_pages);
	/* The largest naturally aligned blocks first, smaller ones when memory is short. */
	while (pg < nr_pages) {
		void *a;

		while ((1ul << order) > nr_pages - pg)
			order--;
		a = alloc_node(nid, gfp | __GFP_ZERO | __GFP_NOWARN, order);
		if (!a) {
			if (!order)
				goto fail;
			order--;
			continue;
		}
		aux->chunk_order[pg] = (s8)order;
		for (unsigned long i = 0; i < (1ul << order); i++)
			aux->data_pages[pg + i] = (char *)a + i * PAGE_SIZE;
		pg += 1ul << order;
	}
	aux->watermark = size / 2;
	aux->wakeup = aux->watermark;
	return aux;
fail:
	pt_aux_free(aux);
	return NULL;
}

void pt_aux_free(struct pt_aux *aux)
{
	if (!aux)
		return;
	if (aux->data_pages && aux->chunk_order)
		free_chunks(aux);
	free_array(aux->data_pages, aux->nr_pages * sizeof(void *));
	free_array(aux->chunk_order, aux->nr_pages);
	free_array(aux, sizeof(*aux));
}

void pt_aux_copy(const struct pt_aux *aux, u64 pos, void *dst, u64 len)
{
	u64 ring = (u64)aux->nr_pages << PAGE_SHIFT;
	u8 *d = dst;

	while (len) {
		u64 off = pos & (ring - 1);
		u64 in_page = PAGE_SIZE - (off & (PAGE_SIZE - 1));
		u64 n = min(len, in_page);

		memcpy(d, (const u8 *)aux->data_pages[off >> PAGE_SHIFT] + (off & (PAGE_SIZE - 1)), n);
		d += n;
		pos += n;
		len -= n;
	}
}
