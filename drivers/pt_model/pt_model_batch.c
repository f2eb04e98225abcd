// SPDX-License-Identifier: MIT
/*
 * The trace unit's batch fast path (pt_model_ev_edges()): the records of the
 * trace engine's code cache (kernel/trace_engine, pt.step=translate), one
 * edge a branch, taken in runs of the common case with the state it touches
 * in registers, with the same checks and the same result as the event API's
 * full path (pt_model_events.c) record by record; a record that leaves the
 * common case goes there.
 */
#include "internal.h"
#include <topaz/kernel.h>

static inline const struct ptm_edge *edge_at(const void *base, const u64 *rec)
{
	return (const void *)((const u8 *)base + ((u32)rec[0] & PTM_REC_EDGE));
}

static inline unsigned int rec_insns(const u64 *rec)
{
	return (u32)rec[0] >> PTM_REC_INSNS_SHIFT;
}

/*
 * ptm_tnt_full()'s common case, without its calls: a full TNT-64 that goes
 * straight into the output region (ptm_output_put()), no CYC before it, no
 * PSB due after it, so nothing else happens at that boundary. False, with
 * nothing done, in any other case.
 */
static __always_inline bool edges_tnt_fast(struct pt_model *m)
{
	u8 buf[PTPK_MAX_SIZE];
	bool ok;

	if (m->tnt_n != PTPK_TNT64_MAX || (m->ctl & RTIT_CTL_CYCLEACC) ||
	    m->byte_cnt + 8 >= ptm_psb_period())
		return false;
	ptpk_encode_tnt64(buf, m->tnt_n, m->tnt_bits);
	m->depth++;	/* a stop NMI waits for the packet's end (pt_model_busy()) */
	ok = ptm_output_put(buf, 8);
	if (ok) {
		struct ptpk p = { .type = PTPK_TNT64, .tnt = { .nbits = m->tnt_n, .bits = m->tnt_bits } };

		ptm_emit_counted(&p, buf, 8);	/* no PSB comes due: checked above */
		m->tnt_n = 0;
		m->tnt_bits = 0;
	}
	m->depth--;
	if (ok)
		smp_stop_pending();	/* as ev_exit() */
	return ok;
}

/*
 * ev_insn_fast()'s common case over a run of records, with the state it
 * touches in registers: Jcc, direct JMP and CALL, and a RET that RET
 * compression turns into a TNT bit; a bit that fills the TNT packet sends
 * it and ends the run. It stops before a record that needs a packet of its
 * own (an indirect branch, a RET not compressed), which the full path then
 * takes. The time, the IP and the counts are worked out once at the end:
 * the same sums as record by record.
 */
static __always_inline const u64 *edges_run(struct pt_model *m, const u64 *rec, const u64 *end,
					    const void *base, u64 *insns, bool *filled)
{
	const unsigned int max = m->cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX;
	const bool retc = !(m->ctl & RTIT_CTL_DISRETC);
	const u64 *first = rec;
	/* room: TNT bits until the packet is full (never 0 here: it is sent then) */
	unsigned int room = max - m->tnt_n;
	struct ptm_retstack *rs = m->rs;
	u8 top4 = rs->top4;
	u64 bits = m->tnt_bits, n = 0, done;
	bool full = false;

	while (rec < end) {
		u32 w = (u32)rec[0];

		/* a run of Jccs, in a loop of its own */
		while (w & PTM_REC_COND) {
			bits = bits + bits + (w & PTM_REC_TAKEN);
			n += w >> PTM_REC_INSNS_SHIFT;
			rec += 2;
			if (unlikely(!--room)) {
				full = true;
				goto out;
			}
			if (rec == end)
				goto out;
			w = (u32)rec[0];
		}
		switch (w & PTM_REC_KIND) {
		case PTM_REC_JUMP:
			break;
		case PTM_REC_CALL:
			top4 = (u8)(top4 + 4);	/* the byte wraps: the ring's */
			rs->slot[top4 / 4] = edge_at(base, rec)->next;
			break;
		case PTM_REC_RET:
			if (!retc || rs->slot[top4 / 4] != rec[1] || rec[1] == PTM_RS_POISON)
				goto out;	/* a TIP */
			rs->slot[top4 / 4] = PTM_RS_POISON;	/* ptm_rs_pop_if() */
			top4 = (u8)(top4 - 4);
			bits = (bits << 1) | 1;
			full = !--room;
			break;
		default:
			goto out;	/* an indirect JMP or CALL: a TIP */
		}
		n += w >> PTM_REC_INSNS_SHIFT;
		rec += 2;
		if (unlikely(full))
			break;
	}
out:
	done = (u64)(rec - first) / 2;
	if (done) {
		const struct ptm_edge *e = edge_at(base, rec - 2);

		m->ip = e->to ? e->to : rec[-1];
		m->tsc += m->cfg.cycles_per_event * done;
		m->st.fast += done;
	}
	m->tnt_bits = bits;
	m->tnt_n = (u8)(max - room);
	rs->top4 = top4;
	*insns += n;
	*filled = full;
	if (full && !edges_tnt_fast(m))
		ptm_tnt_full();
	return rec;
}

/*
 * ev_insn_fast()'s sibling for a branch that sends a TIP (an indirect JMP or
 * CALL, a RET not compressed) while PacketEn stays on (edges_gate()): the
 * pending TNT, then the TIP, straight into the output region, when no CYC
 * goes before them, no PSB comes due and the region has room short of its
 * end, so nothing else happens at that branch. The state ends as the full
 * path leaves it. False, with nothing done, in any other case.
 */
static __always_inline bool edges_tip_fast(struct pt_model *m, const struct ptm_edge *e, u64 to)
{
	struct ptpk t, tip = { .type = PTPK_TIP };
	u8 buf[2 * PTPK_MAX_SIZE];
	int nt = 0, n;
	bool ok;

	if (m->ctl & RTIT_CTL_CYCLEACC)
		return false;
	switch (e->cls) {
	case PTM_JUMP_IND:
	case PTM_CALL_IND:
		break;
	case PTM_RET:
		if (!(m->ctl & RTIT_CTL_DISRETC) && to != PTM_RS_POISON && *ptm_rs_top(m->rs) == to)
			return false;	/* compressed: a TNT bit */
		break;
	default:
		return false;
	}
	if (m->tnt_n) {
		t = ptm_tnt_packet(m->tnt_n, m->tnt_bits);
		nt = ptm_encode(&t, buf);
	}
	tip.ip.ipc = ptpk_ip_compress(to, m->last_ip);
	tip.ip.ip = to;
	n = ptpk_encode(&tip, buf + nt);
	if (nt < 0 || n < 0 || m->byte_cnt + (u64)(nt + n) >= ptm_psb_period())
		return false;
	m->depth++;	/* a stop NMI waits for the packets' end (pt_model_busy()) */
	ok = ptm_output_put(buf, (unsigned int)(nt + n));
	if (ok) {
		if (nt)
			ptm_emit_counted(&t, buf, nt);
		ptm_emit_counted(&tip, buf + nt, n);	/* no PSB comes due: checked above */
		m->tnt_n = 0;
		m->tnt_bits = 0;
		m->last_ip = to;
		if (e->cls == PTM_CALL_IND)
			ptm_call_push(e->next);
		m->tsc += m->cfg.cycles_per_event;	/* tick() without MTC */
		m->ip = to;
		m->st.fast++;
	}
	m->depth--;
	if (ok)
		smp_stop_pending();	/* as ev_exit() */
	return ok;
}

/* The state the common case needs (ev_insn_fast()'s test, less the TNT's room). */
static __always_inline bool edges_gate(const struct pt_model *m)
{
	return m->gate == PTM_GATE_FAST && !m->depth && !m->cfg.no_fast_path &&
	       !(m->ctl & (RTIT_CTL_ADDR_CFG_ALL | RTIT_CTL_MTC_EN | RTIT_CTL_NOTNT));
}

/* Runs of the common case, one after another while a full TNT packet was all that stopped them. */
static __noinline const u64 *edges_fast(struct pt_model *m, const u64 *rec, const u64 *end,
					const void *base, u64 *insns)
{
	bool filled;

	do
		rec = edges_run(m, rec, end, base, insns, &filled);
	while (filled && rec < end && edges_gate(m));
	return rec;
}

unsigned int pt_model_tnt_room(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	const unsigned int max = m->cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX;

	return edges_gate(m) ? max - m->tnt_n : 0;
}

const char *pt_model_tnt_inline_off(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (m->cfg.no_fast_path)
		return "the model's fast path is off";
	if (m->ctl & RTIT_CTL_MTC_EN)
		return "MTC is on (each branch's time may send one)";
	if (m->ctl & RTIT_CTL_ADDR_CFG_ALL)
		return "IP filter or TraceStop ranges are set";
	if (m->ctl & RTIT_CTL_NOTNT)
		return "DisTNT is set";
	return NULL;
}

bool pt_model_tnt_timed(void)
{
	return this_cpu_ptr(pt_model_cpu)->ctl & (RTIT_CTL_TSC_EN | RTIT_CTL_CYCLEACC);
}

bool pt_model_ret_compressed(void)
{
	return !(this_cpu_ptr(pt_model_cpu)->ctl & RTIT_CTL_DISRETC);
}

u8 *pt_model_tnt_direct(u64 *room)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 out_room;
	u8 *to;

	/* edges_tnt_fast()'s conditions, for every packet from an empty TNT */
	if (!edges_gate(m) || !m->cfg.long_tnt || m->tnt_n || (m->ctl & RTIT_CTL_CYCLEACC))
		return NULL;
	to = ptm_output_room(&out_room);
	if (!to)
		return NULL;
	/* no PSB due after any of them: byte_cnt + 8 < the period (the gate
	 * says none is pending, so byte_cnt is below it) */
	*room = min(out_room, ptm_psb_period() - m->byte_cnt);
	return to;
}

u64 pt_model_last_ip(void)
{
	return this_cpu_ptr(pt_model_cpu)->last_ip;
}

/*
 * The hook's view of @d's bytes at @b: each packet as edges_tnt_fast() and
 * edges_tip_fast() would have shown it (TNT-8, TNT-64, TIP; the code wrote
 * nothing else). False when they are not that.
 */
static bool direct_hook(struct pt_model *m, const u8 *b, const struct ptm_direct *d)
{
	u8 h[PTPK_MAX_SIZE];
	u64 last = m->last_ip, at = 0;

	ptpk_encode_tnt64(h, 1, 0);	/* its two header bytes */
	while (at < d->bytes) {
		const u8 *p = b + at;
		struct ptpk k = { .type = PTPK_TNT8 };
		u64 v = 0;
		int n = 1;

		if (p[0] == h[0] && p[1] == h[1]) {
			k.type = PTPK_TNT64;
			memcpy(&v, p + 2, 6);
			n = 8;
		} else if (!(p[0] & 1)) {
			v = p[0] >> 1;
		} else {
			enum ptpk_ipc ipc = (enum ptpk_ipc)(p[0] >> 5);
			int len = ptpk_ip_bytes(ipc);

			if ((p[0] & 0x1f) != 0x0d || len <= 0)
				return false;
			memcpy(&v, p + 1, (size_t)len);
			k = (struct ptpk){ .type = PTPK_TIP, .ip = { .ipc = ipc, .ip = v } };
			last = ptpk_ip_reconstruct(ipc, v, last);
			k.ip.ip = last;
			n = 1 + len;
		}
		if (k.type != PTPK_TIP) {
			if (!v)
				return false;
			k.tnt.nbits = (u8)(63 - __builtin_clzll(v));
			k.tnt.bits = v & ((1ull << k.tnt.nbits) - 1);
		}
		m->hook(&k, p, n, m->st.bytes + at, m->hook_ctx);
		at += (u64)n;
	}
	return at == d->bytes;
}

void pt_model_tnt_direct_done(const struct ptm_direct *d, u64 to)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 events = d->full * PTPK_TNT64_MAX + d->res + d->tips, room;
	const u8 *b;

	if (!d->bytes)
		return;
	/* what edges_tnt_fast() and edges_tip_fast() do for each (the hook
	 * sees them now, in order, where the model has not moved on:
	 * ptm_output_room() says where) */
	b = m->hook ? ptm_output_room(&room) : NULL;
	if (b && !direct_hook(m, b, d))
		pr_warn("pt_model: the code's stored packets do not parse (%llu bytes)\n", d->bytes);
	ptm_output_stored(d->bytes);
	m->st.packets += d->full + d->tnt + d->tips;
	m->st.bytes += d->bytes;
	m->byte_cnt += d->bytes;
	m->tsc += m->cfg.cycles_per_event * events;	/* tick() without MTC */
	m->st.fast += events;
	if (d->tips)
		m->last_ip = d->last_ip;
	if (to)
		m->ip = to;
}

/* @n of ev_insn_fast()'s direct JMPs and CALLs: their time, their count (the pushes are done) */
void pt_model_ev_plain(u64 n, u64 to)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (!n)
		return;
	m->tsc += m->cfg.cycles_per_event * n;	/* tick() without MTC */
	m->st.fast += n;
	if (to)
		m->ip = to;
}

/*
 * @n results as ev_insn_fast() takes them one by one (the room checked when
 * they were allowed: none fills the packet but maybe the last); a last one
 * that fills it as edges_run() ends a run on it.
 */
void pt_model_ev_tnt(u64 bits, unsigned int n, u64 to)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	const unsigned int max = m->cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX;

	if (!n)
		return;
	m->tnt_bits = (m->tnt_bits << n) | bits;
	m->tnt_n = (u8)(m->tnt_n + n);
	m->tsc += m->cfg.cycles_per_event * n;	/* tick() without MTC */
	m->st.fast += n;
	if (to)
		m->ip = to;
	if (m->tnt_n >= max && !edges_tnt_fast(m))
		ptm_tnt_full();
}

/*
 * A batch: runs of ev_insn_fast()'s common case with the state it touches in
 * registers (the same checks and the same result, record by record), and
 * the full path for a record that leaves it.
 */
const u64 *pt_model_ev_edges(const u64 *rec, const u64 *end, const void *base, u64 *insns)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 n = 0;

	while (rec < end) {
		const struct ptm_edge *e = edge_at(base, rec);
		u64 to;

		if (edges_gate(m)) {
			rec = edges_fast(m, rec, end, base, &n);
			if (rec == end)
				break;
			e = edge_at(base, rec);
		}
		if (e->cls == PTM_OTHER || e->cls >= PTM_FAR)
			break;	/* not a near branch: the caller's */
		to = e->to ? e->to : rec[1];
		n += rec_insns(rec);
		if (!edges_gate(m) || !edges_tip_fast(m, e, to))
			ptm_ev_near(e->cls, e->ip, e->next, to, e->taken);
		rec += 2;
	}
	*insns += n;
	return rec;
}
