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

static u64 topa_index(void)
{
	return (this_cpu_ptr(pt_model_cpu)->output_mask & RTIT_OUTPUT_MASK_OFFSET) >>
	       RTIT_OUTPUT_MASK_OFFSET_SHIFT;
}

static u64 out_offset(void)
{
	return this_cpu_ptr(pt_model_cpu)->output_mask >> RTIT_OUTPUT_OFFSET_SHIFT;
}

static void set_topa_pos(u64 table, u64 idx, u64 off)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->output_base = table;
	m->output_mask = RTIT_OUTPUT_LOWER_MASK | (idx << RTIT_OUTPUT_MASK_OFFSET_SHIFT) |
			  (off << RTIT_OUTPUT_OFFSET_SHIFT);
}

static void set_offset(u64 off)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->output_mask = (m->output_mask & 0xffffffffULL) | (off << RTIT_OUTPUT_OFFSET_SHIFT);
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
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return (e & TOPA_RSVD_LOW) || (e >> m->prof->maxphyaddr);
}

/*
 * Make the entry at (OUTPUT_BASE, MaskOrTableOffset) the current output
 * region, following END links. @starting: tracing is being enabled, so the
 * current OutputOffset must fit the region.
 */
static bool topa_load(bool starting)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 table = m->output_base, idx = topa_index();

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
		m->region_size = TOPA_ENTRY_REGION(e);
		m->region_base = e & ~0xfffULL;
		if (m->region_base & (m->region_size - 1)) {
			ptm_operational_error(PT_OPERR_REGION_MISALIGNED);
			return false;
		}
		if (starting && out_offset() >= m->region_size) {
			ptm_operational_error(PT_OPERR_OFFSET_TOO_LARGE);
			return false;
		}
		m->entry = e;
		m->out_ready = true;
		return true;
	}
}

bool ptm_output_start(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->out_ready = false;
	m->early_done = false;
	if (m->ctl & RTIT_CTL_FABRIC_EN) {
		/* trace transport: bytes leave the core, nothing to model */
		m->out_ready = true;
		return true;
	}
	if (!(m->ctl & RTIT_CTL_TOPA)) {
		u64 mask = (m->output_mask & 0xffffffffULL) | RTIT_OUTPUT_LOWER_MASK;

		if ((mask + 1) & mask) {
			ptm_operational_error(PT_OPERR_SINGLE_RANGE_MASK);
			return false;
		}
		if (m->output_base & mask) {
			ptm_operational_error(PT_OPERR_SINGLE_RANGE_MISALIGNED);
			return false;
		}
		m->region_base = m->output_base;
		m->region_size = mask + 1;
		m->out_ready = true;
		return true;
	}
	if (m->output_base & 0xf80) {
		ptm_operational_error(PT_OPERR_TABLE_MISALIGNED);
		return false;
	}
	return topa_load(true);
}

/* The region filled with INT=1 (or, single-entry, is about to): set
 * TraceToPAPMI now; the PMI is taken after the skid. */
static void signal_pmi(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->topa_pmi = true;
	m->st.pmis++;
	if (m->pmi_armed)
		return;		/* merges with the one in flight */
	if (!m->cfg.pmi_skid) {
		m->pmi_pending = true;
		return;
	}
	m->pmi_armed = true;
	m->skid_left = m->cfg.pmi_skid;
}

void ptm_output_flush_pmi(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (m->pmi_armed) {
		m->pmi_armed = false;
		m->pmi_pending = true;
	}
}

static void count_skid(u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (!m->pmi_armed)
		return;
	if (m->skid_left <= n) {
		m->pmi_armed = false;
		m->pmi_pending = true;
	} else {
		m->skid_left -= n;
	}
}

static void store(u64 phys, const u8 *b, u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	memcpy(phys_to_virt(phys), b, n);
	m->st.bytes_written += n;
}

static void write_single_range(const u8 *b, u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	while (n) {
		u64 off = out_offset() & (m->region_size - 1);
		u64 k = min(n, m->region_size - off);

		store(m->region_base + off, b, k);
		b += k;
		n -= k;
		off += k;
		/* the offset wraps to the base when it passes the mask */
		set_offset(off == m->region_size ? 0 : off);
	}
}

static void write_topa(const u8 *b, u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	while (n && m->out_ready) {
		u64 off = out_offset();
		u64 k = min(n, m->region_size - off);
		bool intr = m->entry & TOPA_INT;
		u64 early = m->cfg.single_pmi_early;

		/* Single-entry ToPA delivers the PMI before the region fills:
		 * stop the chunk where the early point lies. */
		if (intr && ptm_output_single_entry() && !m->early_done && early < m->region_size) {
			u64 at = m->region_size - early;

			if (off >= at) {
				m->early_done = true;
				signal_pmi();
			} else {
				k = min(k, at - off);
			}
		}
		store(m->region_base + off, b, k);
		count_skid(k);
		b += k;
		n -= k;
		off += k;
		set_offset(off);
		if (off < m->region_size)
			continue;

		/* region full */
		if (intr && !m->early_done)
			signal_pmi();
		if (m->entry & TOPA_STOP) {
			/* Stopped; TriggerEn clear; OutputOffset stays at the
			 * region size; what is left of the packet is lost. */
			m->status |= RTIT_STATUS_STOPPED;
			m->trigger_en = false;
			m->packet_en = false;
			m->out_ready = false;
			ptm_output_flush_pmi();
			break;
		}
		m->early_done = false;
		set_topa_pos(m->output_base, topa_index() + 1, 0);
		if (!topa_load(false))
			ptm_output_flush_pmi();
	}
	m->st.bytes_lost += n;
}

/*
 * The common case, as write_topa() does it: a ToPA region, no PMI point (a
 * single entry's early one) in the way, no PMI skid being counted. Its
 * limit: @n bytes go at *@off while *@off + @n < it; 0 otherwise.
 */
static __always_inline u64 fast_limit(u64 *off)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (likely(m->out_ready && !m->pmi_armed &&
		   (m->ctl & (RTIT_CTL_TOPA | RTIT_CTL_FABRIC_EN)) == RTIT_CTL_TOPA)) {
		u64 lim = m->region_size;

		*off = out_offset();
		if ((m->entry & TOPA_INT) && ptm_output_single_entry() && !m->early_done &&
		    m->cfg.single_pmi_early < lim)
			lim -= m->cfg.single_pmi_early;
		return lim;
	}
	return 0;
}

/* Where @n bytes go in the common case (fast_limit()); NULL otherwise. */
static __always_inline u8 *fast_room(u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 off = 0, lim = fast_limit(&off);

	if (off + n < lim)
		return phys_to_virt(m->region_base + off);
	return NULL;
}

/* @n bytes were stored where fast_room() said */
static __always_inline void fast_done(u64 n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	set_offset(out_offset() + n);
	m->st.bytes_written += n;
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

u8 *ptm_output_room(u64 *room)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 off = 0, lim = fast_limit(&off);

	if (off >= lim)
		return NULL;
	*room = lim - off;
	return phys_to_virt(m->region_base + off);
}

void ptm_output_stored(u64 n)
{
	fast_done(n);
}

void ptm_output_write(const u8 *b, int n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u8 *to = fast_room((u64)n);

	if (likely(to)) {
		memcpy(to, b, (size_t)n);
		fast_done((u64)n);
		return;
	}
	if (!m->out_ready) {
		m->st.bytes_lost += (u64)n;
		return;
	}
	if (m->ctl & RTIT_CTL_FABRIC_EN)
		m->st.bytes_written += (u64)n;
	else if (!(m->ctl & RTIT_CTL_TOPA))
		write_single_range(b, (u64)n);
	else
		write_topa(b, (u64)n);
}
