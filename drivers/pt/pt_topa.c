// SPDX-License-Identifier: MIT
/*
 * ToPA tables and buffer bookkeeping, as Linux's pt.c: one page per table,
 * the software metadata in the page's last bytes, one entry per buddy block
 * of the buffer, END links closing the tables into a ring. On CPUs without
 * multiple-entry ToPA every table is one data entry and an END to itself.
 */
#define pr_fmt(fmt) "pt: " fmt
#include "internal.h"
#include <topaz/msr-index.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/smp.h>


static bool multi(void)
{
	return intel_pt_validate_hw_cap(PT_CAP_topa_multiple_entries) != 0;
}

static struct topa_page *topa_to_page(const struct topa *t)
{
	return container_of(t, struct topa_page, topa);
}


/* Entry @i of @t; -1 means the first unused slot (Linux's TOPA_ENTRY(t, -1)). */
static u64 *topa_entry(struct topa *t, int i)
{
	return &topa_to_page(t)->table[i < 0 ? t->last : i];
}

static struct topa *topa_of_entry(const u64 *te)
{
	return &((struct topa_page *)ALIGN_DOWN((uintptr_t)te, TOPA_PAGE_SIZE))->topa;
}

static unsigned int te_size(u64 te)
{
	return (unsigned int)((te & TOPA_SIZE_MASK) >> TOPA_SIZE_SHIFT);
}

static u64 te_bytes(u64 te)
{
	return TOPA_ENTRY_REGION(te);
}

/**
 * topa_alloc() - a zeroed ToPA table page on @cpu's node
 * Without multiple-entry support, entry 1 is an END back to the table itself.
 */
struct topa *topa_alloc(int cpu, gfp_t gfp)
{
	struct page *p = alloc_pages_node(cpu_to_node(cpu), gfp | __GFP_ZERO, 0);
	struct topa_page *tp;

	if (!p)
		return NULL;
	tp = page_address(p);
	tp->topa.last = 0;
	if (!multi())
		tp->table[1] = TOPA_ENTRY(virt_to_phys(tp), 0, TOPA_END);
	return &tp->topa;
}

void topa_free(struct topa *topa)
{
	free_pages((uintptr_t)topa_to_page(topa), 0);
}

/** topa_insert_table() - append @topa to @buf; link the previous table to it (multi) */
static void topa_insert_table(struct pt_buffer *buf, struct topa *topa)
{
	struct topa *last = buf->last;

	list_add_tail(&topa->list, &buf->tables);
	if (!buf->first) {
		buf->first = buf->last = buf->cur = topa;
		return;
	}
	topa->offset = last->offset + last->size;
	buf->last = topa;
	if (!multi())
		return;
	BUG_ON(last->last != (int)TENTS_PER_PAGE - 1);
	*topa_entry(last, -1) = TOPA_ENTRY(pt_topa_phys(topa), 0, TOPA_END);
}

static bool topa_table_full(const struct topa *topa)
{
	if (!multi())
		return topa->last != 0;
	return topa->last == (int)TENTS_PER_PAGE - 1;
}

/** topa_insert_pages() - add the buffer's next chunk as one entry */
static int topa_insert_pages(struct pt_buffer *buf, int cpu, gfp_t gfp)
{
	struct topa *topa = buf->last;
	int order = buf->chunk_order[buf->nr_pages];
	void *region = buf->data_pages[buf->nr_pages];
	u64 flags = 0;

	if (order < 0)
		return -EINVAL;
	if (topa_table_full(topa)) {
		topa = topa_alloc(cpu, gfp);
		if (!topa)
			return -ENOMEM;
		topa_insert_table(buf, topa);
	}
	if (topa->z_count == (unsigned int)topa->last - 1 &&
	    order == (int)te_size(*topa_entry(topa, topa->last - 1)))
		topa->z_count++;
	if (!buf->snapshot && !multi())
		flags = TOPA_INT | TOPA_STOP;
	*topa_entry(topa, -1) = TOPA_ENTRY(virt_to_phys(region), order, flags);
	topa->last++;
	topa->size += TOPA_ENTRY_SIZE(order);
	buf->nr_pages += 1ul << order;
	return 0;
}

void pt_topa_dump(const struct pt_buffer *buf)
{
	struct topa *t;

	list_for_each_entry(t, &buf->tables, list) {
		struct topa_page *tp = topa_to_page(t);

		printk("pt: table %#llx offset %#llx size %#llx entries %d (%u uniform)\n",
		       pt_topa_phys(t), t->offset,
		       t->size, t->last, t->z_count);
		for (int i = 0; i < (int)TENTS_PER_PAGE; i++) {
			u64 e = tp->table[i];

			if (i && i <= (int)t->z_count && i < t->last - 1 && !(e & (TOPA_INT | TOPA_STOP)))
				continue;
			printk("pt:   [%3d] %#014llx size %#llx %c%c%c\n", i,
			       e & ~0xfffull, te_bytes(e),
			       e & TOPA_END ? 'E' : ' ', e & TOPA_INT ? 'I' : ' ',
			       e & TOPA_STOP ? 'S' : ' ');
			if (e & TOPA_END)
				break;
			if (!e)
				break;
		}
	}
}

/* Buffer offset of region @idx of table @t. */
static u64 topa_region_offset(struct topa *t, unsigned int idx)
{
	u64 off = t->offset;
	unsigned int uniform = min(idx, t->z_count + 1);

	off += (u64)uniform * te_bytes(*topa_entry(t, 0));
	for (unsigned int i = uniform; i < idx; i++)
		off += te_bytes(*topa_entry(t, (int)i));
	return off;
}

/** pt_topa_region_offset_of() - buffer offset of the current region */
u64 pt_topa_region_offset_slow(struct pt_buffer *buf)
{
	return topa_region_offset(buf->cur, buf->cur_idx);
}

void pt_buffer_advance(struct pt_buffer *buf)
{
	buf->output_off = 0;
	buf->cur_idx++;
	if ((int)buf->cur_idx == buf->cur->last) {
		if (buf->cur == buf->last) {
			buf->cur = buf->first;
			buf->wrapped = true;
		} else {
			buf->cur = list_entry(buf->cur->list.next, struct topa, list);
		}
		buf->cur_idx = 0;
	}
}

void *pt_buffer_region(const struct pt_buffer *buf)
{
	return phys_to_virt(*topa_entry(buf->cur, (int)buf->cur_idx) & ~0xfffull);
}


/** pt_topa_entry_for_page() - the entry whose region holds page @pg of the buffer */
u64 *pt_topa_entry_for_page(struct pt_buffer *buf, unsigned long pg)
{
	u64 off = (u64)pg << PAGE_SHIFT;
	struct topa *t;

	if (pg >= buf->nr_pages) {
		pr_warn("page %lu outside the %lu-page buffer\n", pg, buf->nr_pages);
		return NULL;
	}
	if (buf->region_shift)
		return buf->region_te[off >> buf->region_shift];
	list_for_each_entry(t, &buf->tables, list) {
		u64 pos, span0;
		unsigned int i;

		if (off >= t->offset + t->size)
			continue;
		/* entries 0..z_count are uniform: an index by a shift */
		unsigned int shift = TOPA_SHIFT + te_size(*topa_entry(t, 0));

		span0 = 1ull << shift;
		if (((off - t->offset) >> shift) <= t->z_count)
			return topa_entry(t, (int)((off - t->offset) >> shift));
		pos = t->offset + (u64)(t->z_count + 1) * span0;
		for (i = t->z_count + 1; (int)i < t->last; i++) {
			pos += te_bytes(*topa_entry(t, (int)i));
			if (off < pos)
				return topa_entry(t, (int)i);
		}
	}
	pr_warn("no entry for page %lu\n", pg);
	return NULL;
}

/** pt_topa_prev_entry() - the entry before @te in ring order */
u64 *pt_topa_prev_entry(struct pt_buffer *buf, u64 *te)
{
	struct topa *t = topa_of_entry(te);

	if (buf->region_shift) {
		/* region index from the table's offset and the entry's slot */
		unsigned long i = (unsigned long)(t->offset >> buf->region_shift) +
				  (unsigned long)(te - topa_entry(t, 0));

		return buf->region_te[(i - 1) & (buf->nr_regions - 1)];
	}

	if (te != topa_entry(t, 0))
		return te - 1;
	t = t == buf->first ? buf->last : list_entry(t->list.prev, struct topa, list);
	return topa_entry(t, t->last - 1);
}

/** pt_buffer_reset_offsets() - place the write position at logical offset @head */
void pt_buffer_reset_offsets(struct pt_buffer *buf, u64 head)
{
	u64 size = (u64)buf->nr_pages << PAGE_SHIFT;

	if (buf->snapshot)
		head &= size - 1;
	if (!buf->single) {
		unsigned long pg = (unsigned long)((head >> PAGE_SHIFT) & (buf->nr_pages - 1));
		u64 *te = pt_topa_entry_for_page(buf, pg);
		struct topa *t = topa_of_entry(te);

		buf->cur = t;
		buf->cur_idx = (unsigned int)(te - topa_entry(t, 0));
		/* region starts are computed, not assumed aligned to their size */
		buf->output_off = (head & (size - 1)) - topa_region_offset(t, buf->cur_idx);
	} else {
		buf->output_off = head & (size - 1);
	}
	buf->head = head;
	buf->data_size = 0;
}

/* Build buf->region_te when all regions have one size and there are 2^n. */
static void index_regions(struct pt_buffer *buf)
{
	unsigned long n = 0, i = 0;
	unsigned int size = te_size(*topa_entry(buf->first, 0));
	struct topa *t;

	list_for_each_entry(t, &buf->tables, list) {
		for (int k = 0; k < t->last; k++)
			if (te_size(*topa_entry(t, k)) != size)
				return;
		n += (unsigned long)t->last;
	}
	if (n & (n - 1))
		return;
	buf->region_te = (u64 **)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, get_order(n * sizeof(u64 *)));
	if (!buf->region_te)
		return;	/* the table walk still works */
	list_for_each_entry(t, &buf->tables, list)
		for (int k = 0; k < t->last; k++)
			buf->region_te[i++] = topa_entry(t, k);
	buf->nr_regions = n;
	buf->region_shift = TOPA_SHIFT + size;
}

void pt_buffer_fini_topa(struct pt_buffer *buf)
{
	struct topa *t, *n;

	if (buf->single)
		return;
	if (buf->region_te)
		free_pages((uintptr_t)buf->region_te, get_order(buf->nr_regions * sizeof(u64 *)));
	buf->region_te = NULL;
	buf->region_shift = 0;
	list_for_each_entry_safe(t, n, &buf->tables, list)
		topa_free(t);
	INIT_LIST_HEAD(&buf->tables);
	buf->first = buf->last = buf->cur = NULL;
}

/** pt_buffer_init_topa() - tables for @nr_pages data pages; the ring closed (multi) */
int pt_buffer_init_topa(struct pt_buffer *buf, int cpu, unsigned long nr_pages, gfp_t gfp)
{
	struct topa *topa = topa_alloc(cpu, gfp);

	if (!topa)
		return -ENOMEM;
	topa_insert_table(buf, topa);
	while (buf->nr_pages < nr_pages) {
		int err = topa_insert_pages(buf, cpu, gfp);

		if (err) {
			pt_buffer_fini_topa(buf);
			return err;
		}
	}
	if (multi())
		*topa_entry(buf->last, -1) = TOPA_ENTRY(pt_topa_phys(buf->first), 0, TOPA_END);
	index_regions(buf);
	return 0;
}
