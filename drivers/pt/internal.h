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
void pt_topa_dump(const struct pt_buffer *buf);

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

/* ------------------------------------------------------------ per-CPU state */

/**
 * struct pt - the driver's state on one CPU (Linux's struct pt), in pt.c's
 * static per-CPU pt_ctx: nothing outside the driver reads or writes it (the
 * session uses pt_set_wakeup() and pt_get_cpu_stats())
 * @event: the event set up on this CPU, or NULL
 * @handle_nmi: a PMI here is this event's to service
 * @filters: @output_base: @output_mask: what the MSRs hold (writes skipped
 *	when equal); @output_valid: @filters_valid: they hold something at all
 * @pmis: PMIs serviced; @stale_pmis: PMIs with no event to service
 * @bytes: bytes published; @truncations: STOP regions filled (data dropped);
 * @errors: ToPA errors; @pad_bytes: zeroes (PAD packets) written past an
 *	early single-entry PMI
 * @wakeup: the consumer, called at the end of a PMI that published data
 *
 * The PMI and the stop race on this CPU: a PMI (an interrupt, or an NMI with
 * pt.pmi=nmi) can arrive anywhere in pt_event_start(), pt_event_stop() and
 * pt_snapshot_copy(), and a late one (the status bit the stopping WRMSR's
 * flush set) after pt_event_stop() returned. What keeps them apart:
 *
 * - @handle_nmi is written only on this CPU, with WRITE_ONCE(): true in
 *   pt_event_start() before TraceEn is set, false in pt_event_stop() before
 *   TraceEn is cleared (a barrier() between), so a PMI that finds it false
 *   (READ_ONCE() in intel_pt_interrupt()) neither publishes nor restarts the
 *   trace unit: it counts as stale and pt_event_stop() publishes instead.
 * - A PMI that finds it true runs to its end before the interrupted code goes
 *   on (it is an interrupt on this CPU): it stops the trace unit, publishes,
 *   and restarts it unless the ring is full; the stop that it interrupted
 *   then finds TraceEn as the PMI left it (pt_config_stop() checks
 *   @event->hw_config, which only this CPU writes).
 * - @event and @wakeup may be written from another CPU (the session sets
 *   every CPU's up from one), only while this CPU's event is stopped; the
 *   PMI reads them with READ_ONCE().
 */
struct pt {
	struct perf_event *event;
	bool handle_nmi;
	struct pt_filter filters[PT_FILTERS_NUM];
	u64 output_base, output_mask;
	bool output_valid, filters_valid;
	u64 pmis, stale_pmis, bytes, truncations, errors;
	u64 pad_bytes;
	void (*wakeup)(struct perf_event *event);
};

/**
 * pt_cpu_ctx() - CPU @cpu's driver state, for the driver's white-box host
 * tests and benchmark only (the driver's own files use pt_ctx)
 * @cpu: a CPU number below NR_CPUS
 * Return: that CPU's struct pt.
 */
struct pt *pt_cpu_ctx(int cpu);

#endif
