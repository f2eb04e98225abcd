/* SPDX-License-Identifier: MIT */
/*
 * The PT driver's internals (drivers/pt/): ToPA tables and the output buffer
 * built from them, and the MSR programming steps. Other subsystems use
 * include/topaz/pt.h; the driver's host tests and benchmark include this too.
 */
#ifndef TOPAZ_DRIVERS_PT_INTERNAL_H
#define TOPAZ_DRIVERS_PT_INTERNAL_H

#include <topaz/pt.h>

/* ------------------------------------------------------------ ToPA */

/* Software metadata of a ToPA table, in the last bytes of the table's page. */
struct topa {
	struct list_head list;
	u64 offset;		/* buffer offset of this table's first region */
	u64 size;		/* bytes of this table's regions */
	int last;		/* data entries written = index of the next free slot */
	unsigned int z_count;	/* entries 1..z_count have entry 0's size */
};

#define TOPA_PAGE_SIZE	4096
#define TENTS_PER_PAGE	((TOPA_PAGE_SIZE - sizeof(struct topa)) / sizeof(u64))

struct topa_page {
	u64 table[TENTS_PER_PAGE];
	struct topa topa;
};

/**
 * struct pt_buffer - one trace buffer (Linux's per-AUX-buffer state)
 * @tables: ToPA tables in hardware order (empty for single-range output)
 * @cur: @cur_idx: @output_off: where the trace unit writes next
 * @nr_pages: data pages; @data_pages: their addresses
 * @chunk_order: order of each chunk, indexed by its first page (-1 elsewhere)
 * @head: logical write position; @data_size: bytes since the last publish
 * @stop_te: @intr_te: entries carrying STOP (+INT) and INT
 */
struct pt_buffer {
	struct list_head tables;
	struct topa *first, *last, *cur;
	unsigned int cur_idx;
	u64 output_off;
	unsigned long nr_pages;
	u64 data_size;
	u64 head;
	bool snapshot, single, wrapped;
	bool multi;		/* CPUID.14H.0:ECX[1], cached for the PMI path */
	long stop_pos, intr_pos;
	u64 *stop_te, *intr_te;
	void **data_pages;
	s8 *chunk_order;
	int cpu;
	bool truncated;		/* the current transaction lost data */
	/*
	 * O(1) page -> entry when every region has one size (the usual case:
	 * one buddy order throughout): @region_te[i] is the entry of region i
	 * in ring order, @region_shift log2 of the region size (0: not uniform,
	 * the table walk is used).
	 */
	u64 **region_te;
	unsigned long nr_regions;
	unsigned int region_shift;
};

struct topa *topa_alloc(int cpu, gfp_t gfp);
void topa_free(struct topa *topa);
void topa_insert_table(struct pt_buffer *buf, struct topa *topa);
bool topa_table_full(const struct topa *topa);
int topa_insert_pages(struct pt_buffer *buf, int cpu, gfp_t gfp);
void pt_topa_dump(const struct pt_buffer *buf);
u64 *topa_entry(struct topa *t, int i);
struct topa *topa_of_entry(const u64 *te);

void pt_buffer_advance(struct pt_buffer *buf);
u64 pt_topa_region_offset_slow(struct pt_buffer *buf);
void *pt_buffer_region(const struct pt_buffer *buf);

/* Small and on the PMI path: inline. */
static inline u64 pt_topa_phys(const struct topa *t)
{
	return (u64)(uintptr_t)container_of(t, struct topa_page, topa);	/* identity map */
}

/** pt_buffer_region_size() - bytes of the current output region */
static inline u64 pt_buffer_region_size(const struct pt_buffer *buf)
{
	u64 te = container_of(buf->cur, struct topa_page, topa)->table[buf->cur_idx];

	return TOPA_ENTRY_REGION(te);
}

/** pt_topa_region_offset_of() - buffer offset of the current region */
static inline u64 pt_topa_region_offset_of(struct pt_buffer *buf)
{
	if (buf->region_shift)
		return buf->cur->offset + ((u64)buf->cur_idx << buf->region_shift);
	return pt_topa_region_offset_slow(buf);
}
u64 *pt_topa_entry_for_page(struct pt_buffer *buf, unsigned long pg);
u64 *pt_topa_prev_entry(struct pt_buffer *buf, u64 *te);
void pt_buffer_reset_offsets(struct pt_buffer *buf, u64 head);
void pt_buffer_fini_topa(struct pt_buffer *buf);
int pt_buffer_init_topa(struct pt_buffer *buf, int cpu, unsigned long nr_pages, gfp_t gfp);

/* ------------------------------------------------------------ programming */

void *pt_buffer_setup_aux(struct perf_event *event, void **pages, unsigned long nr_pages,
			  bool snapshot);
void pt_buffer_free_aux(void *data);
int pt_buffer_reset_markers(struct pt_buffer *buf, struct pt_aux_handle *handle);
void pt_read_offset(struct pt_buffer *buf);
void pt_handle_status(struct pt *pt);
void pt_update_head(struct pt *pt);
void pt_config_buffer(struct pt_buffer *buf);
u64 pt_config_filters(struct perf_event *event);
void pt_config(struct perf_event *event);
void pt_config_start(struct perf_event *event);
void pt_config_stop(struct perf_event *event);
/** intel_pt_interrupt() - the ToPA PMI (called with bit 55 seen and acknowledged) */
void intel_pt_interrupt(void);

#endif
