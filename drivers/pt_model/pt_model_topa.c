// SPDX-License-Identifier: MIT
/*
 * Trace output of the PT model: the ToPA walk (SDM 36.2.6.2) and single-range
 * output (36.2.6.1). The position lives in the architectural registers, as on
 * hardware: OUTPUT_BASE holds the current table, OUTPUT_MASK_PTRS the entry
 * index (MaskOrTableOffset) and the byte offset in the region (OutputOffset),
 * so a driver that clears TraceEn reads back exactly where output stopped.
 */
#include "internal.h"
#include <topaz/kernel.h>
#include <topaz/mm.h>

static u64 topa_index(void) { return (ptm.output_mask & RTIT_OUTPUT_MASK_OFFSET) >> RTIT_OUTPUT_MASK_OFFSET_SHIFT; }
static u64 out_offset(void) { return ptm.output_mask >> RTIT_OUTPUT_OFFSET_SHIFT; }

static void set_topa_pos(u64 table, u64 idx, u64 off)
{
	ptm.output_base = table;
	ptm.output_mask = RTIT_OUTPUT_LOWER_MASK | (idx << RTIT_OUTPUT_MASK_OFFSET_SHIFT) |
			  (off << RTIT_OUTPUT_OFFSET_SHIFT);
}

static void set_offset(u64 off)
{
	ptm.output_mask = (ptm.output_mask & 0xffffffffULL) | (off << RTIT_OUTPUT_OFFSET_SHIFT);
}

static u64 read_entry(u64 table, u64 idx)
{
	return READ_ONCE(*(const volatile u64 *)phys_to_virt(table + idx * 8));
}

bool ptm_output_single_entry(void)
{
	return !ptm_ecx(PT_CAP_TOPA_MULTI);
}

static bool entry_reserved(u64 e)
{
	return (e & TOPA_RSVD_LOW) || (e >> ptm.prof->maxphyaddr);
}

/*
 * Make the entry at (OUTPUT_BASE, MaskOrTableOffset) the current output
 * region, following END links. @starting: tracing is being enabled, so the
 * current OutputOffset must fit the region.
 */
static bool topa_load(bool starting)
{
	u64 table = ptm.output_base, idx = topa_index();

	for (;;) {
		u64 e = read_entry(table, idx);

		if (entry_reserved(e)) {
			ptm_operational_error(PT_OPERR_ENTRY_RESERVED);
			return false;
		}
		if (e & TOPA_END) {
			u64 next = e & ~0xfffULL;

			if (e & (TOPA_INT | TOPA_STOP)) {
				ptm_operational_error(PT_OPERR_END_INT_STOP);
				return false;
			}
			if (idx == 0) {
				ptm_operational_error(PT_OPERR_END_AT_ENTRY0);
				return false;
			}
			if (ptm_output_single_entry() && (idx != 1 || next != table)) {
				ptm_operational_error(PT_OPERR_SINGLE_ENTRY_LAYOUT);
				return false;
			}
			table = next;
			idx = 0;
			set_topa_pos(table, 0, 0);
			continue;
		}
		if (ptm_output_single_entry()) {
			u64 e1 = read_entry(table, 1);

			/* one output entry, then an END back to this table */
			if (idx != 0 || !(e1 & TOPA_END) || (e1 & ~0xfffULL) != table) {
				ptm_operational_error(PT_OPERR_SINGLE_ENTRY_LAYOUT);
				return false;
			}
		}
		ptm.region_size = TOPA_ENTRY_REGION(e);
		ptm.region_base = e & ~0xfffULL;
		if (ptm.region_base & (ptm.region_size - 1)) {
			ptm_operational_error(PT_OPERR_REGION_MISALIGNED);
			return false;
		}
		if (starting && out_offset() >= ptm.region_size) {
			ptm_operational_error(PT_OPERR_OFFSET_TOO_LARGE);
			return false;
		}
		ptm.entry = e;
		ptm.out_ready = true;
		return true;
	}
}

bool ptm_output_start(void)
{
	ptm.out_ready = false;
	ptm.early_done = false;
	if (ptm.ctl & RTIT_CTL_FABRIC_EN) {
		/* trace transport: bytes leave the core, nothing to model */
		ptm.out_ready = true;
		return true;
	}
	if (!(ptm.ctl & RTIT_CTL_TOPA)) {
		u64 mask = (ptm.output_mask & 0xffffffffULL) | RTIT_OUTPUT_LOWER_MASK;

		if ((mask + 1) & mask) {
			ptm_operational_error(PT_OPERR_SINGLE_RANGE_MASK);
			return false;
		}
		if (ptm.output_base & mask) {
			ptm_operational_error(PT_OPERR_SINGLE_RANGE_MISALIGNED);
			return false;
		}
		ptm.region_base = ptm.output_base;
		ptm.region_size = mask + 1;
		ptm.out_ready = true;
		return true;
	}
	if (ptm.output_base & 0xf80) {
		ptm_operational_error(PT_OPERR_TABLE_MISALIGNED);
		return false;
	}
	return topa_load(true);
}

/* The region filled with INT=1 (or, single-entry, is about to): set
 * TraceToPAPMI now; the PMI is taken after the skid. */
static void signal_pmi(void)
{
	ptm.topa_pmi = true;
	ptm.st.pmis++;
	if (ptm.pmi_armed)
		return;		/* merges with the one in flight */
	if (!ptm.cfg.pmi_skid) {
		ptm.pmi_pending = true;
		return;
	}
	ptm.pmi_armed = true;
	ptm.skid_left = ptm.cfg.pmi_skid;
}

void ptm_output_flush_pmi(void)
{
	if (ptm.pmi_armed) {
		ptm.pmi_armed = false;
		ptm.pmi_pending = true;
	}
}

static void count_skid(u64 n)
{
	if (!ptm.pmi_armed)
		return;
	if (ptm.skid_left <= n) {
		ptm.pmi_armed = false;
		ptm.pmi_pending = true;
	} else {
		ptm.skid_left -= n;
	}
}

static void store(u64 phys, const u8 *b, u64 n)
{
	memcpy(phys_to_virt(phys), b, n);
	ptm.st.bytes_written += n;
}

static void write_single_range(const u8 *b, u64 n)
{
	while (n) {
		u64 off = out_offset() & (ptm.region_size - 1);
		u64 k = min(n, ptm.region_size - off);

		store(ptm.region_base + off, b, k);
		b += k;
		n -= k;
		off += k;
		/* the offset wraps to the base when it passes the mask */
		set_offset(off == ptm.region_size ? 0 : off);
	}
}

static void write_topa(const u8 *b, u64 n)
{
	while (n && ptm.out_ready) {
		u64 off = out_offset();
		u64 k = min(n, ptm.region_size - off);
		bool intr = ptm.entry & TOPA_INT;
		u64 early = ptm.cfg.single_pmi_early;

		/* Single-entry ToPA delivers the PMI before the region fills:
		 * stop the chunk where the early point lies. */
		if (intr && ptm_output_single_entry() && !ptm.early_done && early < ptm.region_size) {
			u64 at = ptm.region_size - early;

			if (off >= at) {
				ptm.early_done = true;
				signal_pmi();
			} else {
				k = min(k, at - off);
			}
		}
		store(ptm.region_base + off, b, k);
		count_skid(k);
		b += k;
		n -= k;
		off += k;
		set_offset(off);
		if (off < ptm.region_size)
			continue;

		/* region full */
		if (intr && !ptm.early_done)
			signal_pmi();
		if (ptm.entry & TOPA_STOP) {
			/* Stopped; TriggerEn clear; OutputOffset stays at the
			 * region size; what is left of the packet is lost. */
			ptm.status |= RTIT_STATUS_STOPPED;
			ptm.trigger_en = false;
			ptm.packet_en = false;
			ptm.out_ready = false;
			ptm_output_flush_pmi();
			break;
		}
		ptm.early_done = false;
		set_topa_pos(ptm.output_base, topa_index() + 1, 0);
		if (!topa_load(false))
			ptm_output_flush_pmi();
	}
	ptm.st.bytes_lost += n;
}

/*
 * Where @n bytes go in the common case, as write_topa() does it: a ToPA
 * region with room for them short of its end, no PMI point (a single entry's
 * early one) in the way, no PMI skid being counted. NULL otherwise.
 */
static __always_inline u8 *fast_room(u64 n)
{
	if (likely(ptm.out_ready && !ptm.pmi_armed &&
		   (ptm.ctl & (RTIT_CTL_TOPA | RTIT_CTL_FABRIC_EN)) == RTIT_CTL_TOPA)) {
		u64 off = out_offset(), lim = ptm.region_size;

		if ((ptm.entry & TOPA_INT) && ptm_output_single_entry() && !ptm.early_done &&
		    ptm.cfg.single_pmi_early < lim)
			lim -= ptm.cfg.single_pmi_early;
		if (off + n < lim)
			return phys_to_virt(ptm.region_base + off);
	}
	return NULL;
}

/* @n bytes were stored where fast_room() said */
static __always_inline void fast_done(u64 n)
{
	set_offset(out_offset() + n);
	ptm.st.bytes_written += n;
}

bool ptm_output_put(const u8 *b, unsigned int n)
{
	u8 *to = fast_room(n);

	if (!to)
		return false;
	memcpy(to, b, n);
	fast_done(n);
	return true;
}

void ptm_output_write(const u8 *b, int n)
{
	u8 *to = fast_room((u64)n);

	if (likely(to)) {
		memcpy(to, b, (size_t)n);
		fast_done((u64)n);
		return;
	}
	if (!ptm.out_ready) {
		ptm.st.bytes_lost += (u64)n;
		return;
	}
	if (ptm.ctl & RTIT_CTL_FABRIC_EN)
		ptm.st.bytes_written += (u64)n;
	else if (!(ptm.ctl & RTIT_CTL_TOPA))
		write_single_range(b, (u64)n);
	else
		write_topa(b, (u64)n);
}
