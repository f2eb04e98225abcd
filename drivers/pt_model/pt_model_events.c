// SPDX-License-Identifier: MIT
/*
 * Packet generation of the PT model, driven by the event API: "the CPU just
 * executed an instruction of class X at IP a, and the next one is at b".
 *
 * The enables follow SDM 36.2.5: PacketEn = TriggerEn && ContextEn && FilterEn
 * && BranchEn, with TriggerEn = TraceEn && !Stopped && !Error. What each
 * operation emits follows Table 36-50 "Packet Generation under Different
 * Enable Conditions"; stream rules the decoder depends on (TNT flushed before
 * any other packet, RET compression mirroring the decoder's 64-deep stack,
 * Last IP reset at PSB and OVF) are listed in docs/pt-model.md.
 */
#include "internal.h"
#include <topaz/errno.h>
#include <topaz/kernel.h>

/* ------------------------------------------------------------ emission */





/* Encode, report, count and store one packet. */
void ptm_emit(const struct ptpk *p)
{
	u8 buf[PTPK_MAX_SIZE];
	int n = ptm_encode(p, buf);

	if (n < 0) {
		pr_err("pt-model: cannot encode a %s packet\n", ptpk_type_name(p->type));
		return;
	}
	ptm_emit_counted(p, buf, n);
	ptm_output_write(buf, n);
}

static u64 ctc_of(u64 tsc)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->prof->ctc_num ? tsc * m->prof->ctc_den / m->prof->ctc_num : tsc;
}

/* CYC: cycles since the last CYC, sent before the first packet after time
 * passed (36.4.2.14), when at least the CycThresh threshold elapsed. */
static void cyc_point(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int thr = (unsigned int)((m->ctl & RTIT_CTL_CYC_THRESH) >> RTIT_CTL_CYC_THRESH_OFFSET);
	u64 d = m->tsc - m->cyc_tsc;
	struct ptpk p = { .type = PTPK_CYC };

	if (!(m->ctl & RTIT_CTL_CYCLEACC) || !d || d < (thr ? 1ULL << (thr - 1) : 1))
		return;
	p.cyc = d;
	m->cyc_tsc = m->tsc;
	ptm_emit(&p);
}

static void flush_tnt(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p;

	if (!m->tnt_n)
		return;
	cyc_point();
	p = ptm_tnt_packet(m->tnt_n, m->tnt_bits);
	m->tnt_n = 0;
	m->tnt_bits = 0;
	ptm_emit(&p);
}

/* Any packet but TNT: pending TNT results go out first, so no branch result
 * is ever reordered with another packet. */
static void pkt(struct ptpk *p)
{
	cyc_point();
	flush_tnt();
	ptm_emit(p);
}

static void ip_pkt(enum ptpk_type t, u64 ip, bool suppressed)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p = { .type = t };

	if (suppressed) {
		p.ip.ipc = PTPK_IPC_SUPPRESSED;
	} else {
		p.ip.ipc = ptpk_ip_compress(ip, m->last_ip);
		p.ip.ip = ip;
		m->last_ip = ip;
	}
	pkt(&p);
}

static __always_inline void tnt_add(bool taken)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->tnt_bits = (m->tnt_bits << 1) | (taken ? 1 : 0);
	if (++m->tnt_n == (m->cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX))
		flush_tnt();
}

static void mode_exec(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p = { .type = PTPK_MODE_EXEC };

	p.exec.csl = m->mode == PTM_MODE_64;
	p.exec.csd = m->mode == PTM_MODE_32;
	pkt(&p);
	m->mode_sent = (int)m->mode;
}

static void psb_plus(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p;

	flush_tnt();
	m->byte_cnt = 0;
	m->psb_pending = false;
	p.type = PTPK_PSB;
	ptm_emit(&p);
	/* the decoder resets Last IP and its return stack at every PSB, and
	 * learns the mode again from PSB+ */
	m->last_ip = 0;
	ptm_rs_clear_top(m);
	m->mode_sent = -1;
	if (m->ctl & RTIT_CTL_TSC_EN) {
		p.type = PTPK_TSC;
		p.tsc = m->tsc & GENMASK_ULL(55, 0);
		ptm_emit(&p);
		if (m->ctl & RTIT_CTL_MTC_EN) {
			u64 ctc = ctc_of(m->tsc);
			u64 per = m->prof->ctc_den ? m->prof->ctc_num / m->prof->ctc_den : 1;

			p.type = PTPK_TMA;
			p.tma.ctc = (u16)ctc;
			p.tma.fc = (u16)(per ? (m->tsc % per) & 0x1ff : 0);
			ptm_emit(&p);
		}
	}
	if (m->cr3_valid && (m->ctl & RTIT_CTL_OS) && ptm_context_en(m->cpl)) {
		p.type = PTPK_PIP;
		p.pip.cr3 = m->cr3;
		p.pip.nr = false;
		ptm_emit(&p);
	}
	p.type = PTPK_CBR;
	p.cbr = m->prof->cbr;
	ptm_emit(&p);
	if (m->packet_en) {
		mode_exec();
		ip_pkt(PTPK_FUP, m->ip, false);
	}
	p.type = PTPK_PSBEND;
	ptm_emit(&p);
}

/* MTC each time CTC bit MTCFreq toggles (36.4.2.16). */
static __always_inline void tick(u64 cycles)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int n = (unsigned int)((m->ctl & RTIT_CTL_MTC_RANGE) >> RTIT_CTL_MTC_RANGE_OFFSET);
	u64 c0, c1;

	if (!cycles)
		return;
	m->tsc += cycles;
	if (!m->trigger_en || m->overflow || !(m->ctl & RTIT_CTL_MTC_EN))
		return;
	c0 = ctc_of(m->tsc - cycles) >> n;
	c1 = ctc_of(m->tsc) >> n;
	if (c1 == c0)
		return;
	/* a long gap sends the last few; decoders count the rest as lost */
	for (u64 c = c1 - min(c1 - c0, 8ULL) + 1; c <= c1; c++) {
		struct ptpk p = { .type = PTPK_MTC, .mtc = (u8)c };

		pkt(&p);
	}
}

/* ------------------------------------------------------------ enables */

static __always_inline bool in_stop_range(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (!(m->ctl & RTIT_CTL_ADDR_CFG_ALL))
		return false;
	for (unsigned int n = 0; n < ptm_nr_ranges(); n++)
		if (ptm_addr_cfg(n) == RTIT_ADDR_CFG_STOP && ip >= m->addr_a[n] && ip <= m->addr_b[n])
			return true;
	return false;
}

static __always_inline bool pe_with(bool filter, u8 cpl)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->trigger_en && (m->ctl & RTIT_CTL_BRANCH_EN) && ptm_context_en(cpl) && filter &&
	       !m->unseen;
}

/* FilterEn after a transfer landing at @ip: it toggles only while
 * ContextEn=1 (36.2.5.5). */
static __always_inline bool filter_after(u64 ip, u8 cpl)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return ptm_context_en(cpl) ? ptm_filter_match(ip) : m->filter_en;
}

bool pt_model_packet_en(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->packet_en;
}

static __always_inline bool generating(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->trigger_en && !m->overflow;
}

/* PacketEn 0->1: MODE.Exec when the mode changed or none was sent since the
 * PSB (Table 36-50), then TIP.PGE. The return stack starts empty, so a RET is
 * only compressed against CALLs the decoder has seen since. */
static void pge(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if ((int)m->mode != m->mode_sent)
		mode_exec();
	ip_pkt(PTPK_TIP_PGE, ip, false);
	ptm_rs_clear_top(m);
}

/* Straight-line arrival at @ip. After TraceEn was set this is the enable
 * point: FilterEn and PacketEn are evaluated here, and TIP.PGE carries @ip
 * (the next IP of the WRMSR, 36.4.2.4). */
static __always_inline void point(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->ip = ip;
	if (!generating() || !m->enable_pending)
		return;
	m->enable_pending = false;
	m->filter_en = filter_after(ip, m->cpl);
	m->packet_en = pe_with(m->filter_en, m->cpl);
	if (m->packet_en)
		pge(ip);
}

static __always_inline void ev_end(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (m->psb_pending && generating())
		psb_plus();
}

/*
 * The outermost exit of an event. A PMI it raised is delivered here; as an
 * NMI its handler runs at once, at the instruction boundary where this event
 * left the CPU (its @ip). When that handler sets TraceEn again (a PMI
 * restarts the trace), this boundary is the enable point: TIP.PGE here, not
 * at the next event's IP, since the code between runs traced. (A vector PMI
 * waits for IF=1 and arrives later as an interrupt event of its own; in an
 * unseen handler the return is the enable point.)
 */
static __always_inline void ev_exit(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (--m->depth)
		return;
	for (int i = 0; i < 4 && m->pmi_pending; i++) {
		ptm_deliver_pmis();
		if (!m->enable_pending || m->unseen)
			break;
		m->depth++;
		point(m->ip);
		ev_end();
		m->depth--;
	}
	smp_stop_pending();	/* as ptm_exit() */
}

void ptm_trace_enable(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool psb;

	m->packet_en = false;
	m->enable_pending = false;
	m->overflow = false;
	m->mode_sent = -1;
	m->tnt_n = 0;
	m->tnt_bits = 0;
	m->trigger_en = !(m->status & (RTIT_STATUS_STOPPED | RTIT_STATUS_ERROR));
	if (!m->trigger_en || !ptm_output_start())
		return;
	m->enable_pending = true;
	m->cyc_tsc = m->tsc;
	/* A full PSB+ when PacketByteCnt is 0; always without configurable
	 * PSB (Table 36-11 EBX[1]). */
	psb = !ptm_ebx(PT_CAP_PSB_CYC) || m->byte_cnt == 0;
	if (m->ctl & RTIT_CTL_INJECT_PSB_PMI) {
		if (m->status & RTIT_STATUS_PENDPSB)
			psb = true;
		if (m->status & RTIT_STATUS_PENDTOPAPMI) {
			m->topa_pmi = true;
			m->pmi_pending = true;
			m->st.pmis++;
		}
		m->status &= ~(RTIT_STATUS_PENDPSB | RTIT_STATUS_PENDTOPAPMI);
	}
	if (psb)
		psb_plus();
}

/* TraceEn 1->0 by WRMSR: FUP(CLIP), TIP.PGD() when PacketEn, then the
 * internal buffers drain so OUTPUT_* are final. */
void ptm_trace_disable(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p;

	if (m->overflow && m->trigger_en) {
		p.type = PTPK_OVF;
		m->overflow = false;
		ptm_emit(&p);
	} else if (m->trigger_en) {
		if (m->packet_en) {
			ip_pkt(PTPK_FUP, m->ip, false);
			ip_pkt(PTPK_TIP_PGD, 0, true);
		} else {
			flush_tnt();
		}
	}
	if ((m->ctl & RTIT_CTL_INJECT_PSB_PMI) && ptm_ebx(PT_CAP_PSB_PMI_PRESERVE)) {
		/* the pending PSB/PMI is preserved for the next enable */
		if (m->psb_pending)
			m->status |= RTIT_STATUS_PENDPSB;
		if (m->pmi_armed) {
			m->pmi_armed = false;
			m->status |= RTIT_STATUS_PENDTOPAPMI;
		}
	}
	ptm_output_flush_pmi();
	m->trigger_en = false;
	m->packet_en = false;
	m->enable_pending = false;
	m->overflow = false;
	m->out_ready = false;
}

void ptm_trace_reset(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->trigger_en = m->packet_en = m->enable_pending = m->overflow = false;
	m->filter_en = true;
	m->unseen = false;
	m->ip = 0;
	m->cpl = 0;
	m->mode = PTM_MODE_64;
	m->mode_sent = -1;
	m->cr3 = 0;
	m->cr3_valid = false;
	m->last_ip = 0;
	m->tnt_bits = 0;
	m->tnt_n = 0;
	if (!m->rs)
		m->rs = &m->rs_own;
	ptm_rs_reset(m->rs);
	m->psb_pending = false;
	m->tsc = m->cyc_tsc = 0;
}

/* ------------------------------------------------------------ the RET stack */


static bool rs_pop_if(u64 target)
{
	return ptm_rs_pop_if(this_cpu_ptr(pt_model_cpu)->rs, target);
}

void pt_model_lend_retstack(unsigned int cpu, struct ptm_retstack *rs)
{
	struct pt_model *m = per_cpu_ptr(pt_model_cpu, cpu);

	if (!rs)
		rs = &m->rs_own;
	if (!m->rs) {
		m->rs = &m->rs_own;	/* never reset: as it would be */
		ptm_rs_reset(m->rs);
	}
	if (rs != m->rs) {
		*rs = *m->rs;
		m->rs = rs;
	}
}

/* ------------------------------------------------------------ events */

static bool is_branch(enum ptm_class c)
{
	return c != PTM_OTHER && c != PTM_PTWRITE && c != PTM_MOV_CR3;
}

/* PacketEn stays 1 across the instruction. */
static __always_inline void cofi(const struct ptm_insn *in, u64 to)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool notnt = m->ctl & RTIT_CTL_NOTNT;

	switch (in->cls) {
	case PTM_COND:
		if (!notnt)
			tnt_add(in->taken);
		break;
	case PTM_CALL:
		if (in->target != in->next)	/* CALL +0 is not a call */
			ptm_call_push(in->next);
		break;
	case PTM_CALL_IND:
		ptm_call_push(in->next);
		ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_JUMP_IND:
		ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_RET:
		if (!(m->ctl & RTIT_CTL_DISRETC) && !notnt && rs_pop_if(to))
			tnt_add(true);
		else
			ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_FAR:
		if ((int)m->mode != m->mode_sent)
			mode_exec();
		ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_JUMP:
	case PTM_OTHER:
	case PTM_PTWRITE:
	case PTM_MOV_CR3:
		break;
	}
}

/*
 * PacketEn 1->0 across the instruction (Table 36-50 rows 7e/7f, 9c, 10c/d):
 * pending TNT results go out, then TIP.PGD. A taken Jcc or compressible RET
 * that leaves adds no TNT bit of its own: the TIP.PGD stands for it. Leaving
 * by IP filter gives the target (36.2.5.5; for a Jcc the SDM suppresses it,
 * which libipt 2.0.5 cannot decode, so the target is given there too);
 * losing ContextEn suppresses it.
 */
static void leave(const struct ptm_insn *in, u64 to, bool ctx_lost)
{
	ip_pkt(PTPK_TIP_PGD, to, ctx_lost);
}

/*
 * The common case, in one place: PacketEn on and staying on (no IP filter or
 * TraceStop range configured, nothing due: enable point, PSB, PMI, MTC), and
 * a branch that adds at most one TNT bit short of a full packet: a Jcc, a
 * direct JMP or CALL, or a RET the decoder's stack predicts. The state ends
 * as the full path below leaves it (the host tests compare the two); any
 * other case returns false and takes that path.
 */
static __always_inline bool ev_insn_fast(enum ptm_class cls, u64 next, u64 target, bool taken)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int max = m->cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX;
	u64 to = target;
	int bit = -1;

	if (m->gate != PTM_GATE_FAST || m->depth || m->cfg.no_fast_path ||
	    (m->ctl & (RTIT_CTL_ADDR_CFG_ALL | RTIT_CTL_MTC_EN | RTIT_CTL_NOTNT)) ||
	    m->tnt_n + 1u >= max)
		return false;
	switch (cls) {
	case PTM_COND:
		bit = taken;
		if (!taken)
			to = next;
		break;
	case PTM_JUMP:
		break;
	case PTM_CALL:
		if (target != next)	/* CALL +0 is not a call */
			ptm_call_push(next);
		break;
	case PTM_RET:
		if ((m->ctl & RTIT_CTL_DISRETC) || !rs_pop_if(to))
			return false;	/* a TIP: nothing changed yet */
		bit = 1;
		break;
	default:
		return false;
	}
	m->st.fast++;
	m->tsc += m->cfg.cycles_per_event;	/* tick() without MTC */
	if (bit >= 0) {
		m->tnt_bits = (m->tnt_bits << 1) | (u64)bit;
		m->tnt_n++;
	}
	m->ip = to;
	return true;
}

/*
 * Where an instruction or an interrupt lands, the half both events share:
 * the new position and privilege, FilterEn and PacketEn there, and TraceStop
 * (36.2.4.3: TIP.PGD written by the caller, then TraceStop, Stopped=1).
 */
static void arrive(u64 to, u8 cpl, enum ptm_mode mode, bool filt, bool pe2, bool stop)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->cpl = cpl;
	m->mode = mode;
	m->ip = to;
	m->filter_en = filt;
	m->packet_en = pe2;
	if (stop) {
		struct ptpk p = { .type = PTPK_STOP };

		pkt(&p);
		m->status |= RTIT_STATUS_STOPPED;
		m->trigger_en = false;
		m->packet_en = false;
		ptm_output_flush_pmi();
	}
}

void pt_model_ev_insn(const struct ptm_insn *in)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 to = in->next;
	u8 cpl = m->cpl;
	enum ptm_mode mode = m->mode;
	bool pe, pe2, lands, filt, stop = false;

	if (ev_insn_fast(in->cls, in->next, in->target, in->taken))
		return;
	ptm_enter();
	tick(m->cfg.cycles_per_event);
	point(in->ip);
	pe = m->packet_en;

	switch (in->cls) {
	case PTM_COND:
		to = in->taken ? in->target : in->next;
		break;
	case PTM_FAR:
		cpl = in->cpl;
		mode = in->mode;
		to = in->target;
		break;
	case PTM_OTHER:
	case PTM_PTWRITE:
	case PTM_MOV_CR3:
		break;
	default:
		to = in->target;
		break;
	}
	/* a taken branch lands: FilterEn and TraceStop are evaluated there */
	lands = is_branch(in->cls) && !(in->cls == PTM_COND && !in->taken);

	if (in->cls == PTM_PTWRITE && generating() && (m->ctl & RTIT_CTL_PTW_EN) &&
	    ptm_context_en(m->cpl) && m->filter_en) {
		struct ptpk p = { .type = PTPK_PTW };
		bool fup = m->ctl & RTIT_CTL_FUP_ON_PTW;

		p.ptw.plc = in->size == 8 ? 1 : 0;
		p.ptw.ip = fup;
		p.ptw.payload = in->size == 8 ? in->payload : (in->payload & 0xffffffffULL);
		pkt(&p);
		if (fup)
			ip_pkt(PTPK_FUP, in->ip, false);
	}
	if (in->cls == PTM_MOV_CR3) {
		if (generating() && (m->ctl & RTIT_CTL_OS) && ptm_context_en(m->cpl)) {
			struct ptpk p = { .type = PTPK_PIP, .pip = { in->cr3, false } };

			pkt(&p);
		}
		m->cr3 = in->cr3;
		m->cr3_valid = true;
	}

	filt = lands ? filter_after(to, cpl) : m->filter_en;
	if (!generating()) {
		arrive(to, cpl, mode, filt, m->overflow && pe_with(filt, cpl), false);
		goto out;
	}

	pe2 = pe_with(filt, cpl);
	if (lands && ptm_context_en(cpl) && in_stop_range(to)) {
		stop = true;
		pe2 = false;
	}
	if (pe && pe2) {
		m->mode = mode;
		cofi(in, to);
	} else if (pe) {
		leave(in, to, !ptm_context_en(cpl));
	} else if (pe2) {
		m->mode = mode;
		pge(to);
	}
	arrive(to, cpl, mode, filt, pe2, stop);
out:
	ev_end();
	ev_exit();
}

void pt_model_ev_interrupt(enum ptm_intr kind, u64 from, u64 target, u8 vector,
			   u8 cpl, enum ptm_mode mode)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool pe, pe2, filt, stop = false, unseen = target == PTM_UNSEEN;

	ptm_enter();
	tick(m->cfg.cycles_per_event);
	/* All kinds report the IP execution had reached: the next instruction
	 * (external interrupt), the faulting one (exception), or INT n. */
	point(from);
	pe = m->packet_en;
	/* An unseen handler is a context outside the trace: FilterEn holds, and
	 * PacketEn is 0 there (pe_with()) until pt_model_ev_return(). */
	m->unseen = unseen;
	filt = unseen ? m->filter_en : filter_after(target, cpl);
	if (!generating()) {
		arrive(target, cpl, mode, filt, m->overflow && pe_with(filt, cpl), false);
		goto out;
	}
	pe2 = pe_with(filt, cpl);
	if (!unseen && ptm_context_en(cpl) && in_stop_range(target)) {
		stop = true;
		pe2 = false;
	}
	if (pe) {
		ip_pkt(PTPK_FUP, from, false);
		if (pe2) {
			m->mode = mode;
			if ((int)mode != m->mode_sent)
				mode_exec();
			ip_pkt(PTPK_TIP, target, false);
		} else {
			ip_pkt(PTPK_TIP_PGD, target, unseen || !ptm_context_en(cpl));
		}
	} else if (pe2) {
		m->mode = mode;
		pge(target);
	}
	arrive(target, cpl, mode, filt, pe2, stop);
out:
	(void)kind;
	(void)vector;
	ev_end();
	ev_exit();
}

/* Back from an unseen handler at @ip (its IRET, or a TraceEn set inside it
 * whose enable point this is): PacketEn is evaluated there, as a far
 * transfer into the traced context; TIP.PGE when it becomes 1. */
static void unseen_return(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool filt, pe2, stop = false;

	m->unseen = false;
	if (m->enable_pending) {
		point(ip);
		return;
	}
	filt = filter_after(ip, m->cpl);
	if (!generating()) {
		arrive(ip, m->cpl, m->mode, filt, m->overflow && pe_with(filt, m->cpl), false);
		return;
	}
	pe2 = pe_with(filt, m->cpl);
	if (ptm_context_en(m->cpl) && in_stop_range(ip)) {
		stop = true;
		pe2 = false;
	}
	if (pe2)
		pge(ip);
	arrive(ip, m->cpl, m->mode, filt, pe2, stop);
}

void pt_model_ev_return(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	ptm_enter();
	tick(m->cfg.cycles_per_event);
	if (m->unseen)
		unseen_return(ip);
	else
		point(ip);
	ev_end();
	ev_exit();
}

void pt_model_ev_context(u64 ip, u8 cpl, enum ptm_mode mode)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	ptm_enter();
	m->unseen = false;
	m->ip = ip;
	m->cpl = cpl;
	m->mode = mode;
	m->filter_en = filter_after(ip, cpl);
	if (generating() && !m->enable_pending)
		m->packet_en = pe_with(m->filter_en, cpl);
	ev_exit();
}

void pt_model_ev_at(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	ptm_enter();
	if (unlikely(m->unseen))
		unseen_return(ip);	/* a window that ended inside one: seen again */
	else
		point(ip);
	ev_end();
	ev_exit();
}

void pt_model_ev_cycles(u64 cycles)
{
	ptm_enter();
	tick(cycles);
	ev_exit();
}

void pt_model_set_tsc(u64 tsc)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->tsc = m->cyc_tsc = tsc;
}

void pt_model_ev_pad(unsigned int n)
{
	ptm_enter();
	for (unsigned int i = 0; i < n && generating(); i++) {
		struct ptpk p = { .type = PTPK_PAD };

		pkt(&p);
	}
	ev_exit();
}

void pt_model_ev_overflow_begin(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	ptm_enter();
	if (generating()) {
		/* what was generated before the overflow point goes out;
		 * packets from here on are lost */
		flush_tnt();
		m->overflow = true;
	}
	ev_exit();
}

void pt_model_ev_overflow_end(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	struct ptpk p = { .type = PTPK_OVF };

	ptm_enter();
	if (m->overflow && m->trigger_en) {
		m->overflow = false;
		pkt(&p);
		/* the decoder resets Last IP and its return stack at OVF */
		m->last_ip = 0;
		ptm_rs_clear_top(m);
		m->packet_en = pe_with(m->filter_en, m->cpl);
		if (m->packet_en) {
			/* OVF, FUP: tracing resumes at the FUP's IP. If the
			 * mode changed while packets were lost, re-enable with
			 * MODE.Exec, TIP.PGE instead (the decoder only learns
			 * a mode from MODE.Exec). */
			if ((int)m->mode == m->mode_sent)
				ip_pkt(PTPK_FUP, m->ip, false);
			else
				pge(m->ip);
		}
		ev_end();
	}
	m->overflow = false;
	ev_exit();
}

/* ------------------------------------------------------------ convenience */

bool pt_model_ev_branch_fast(enum ptm_class cls, u64 next, u64 target, bool taken)
{
	return ev_insn_fast(cls, next, target, taken);
}


void pt_model_ev_branch(enum ptm_class cls, u64 ip, u64 next, u64 target, bool taken)
{
	if (!ev_insn_fast(cls, next, target, taken))
		ptm_ev_near(cls, ip, next, target, taken);
}

/*
 * The full path's end for a Jcc or compressed RET whose bit fills the TNT
 * packet, in the common case's state (PacketEn staying on, no IP filter, no
 * MTC): the packet goes out, then what is due at the instruction boundary
 * (a PSB+ the bytes asked for, a PMI the output raised). The batches'
 * (pt_model_batch.c) way out when the packet cannot go straight out.
 */
void ptm_tnt_full(void)
{
	ptm_enter();
	flush_tnt();
	ev_end();
	ev_exit();
}

void pt_model_ev_cond(u64 ip, u64 next, u64 target, bool taken)
{
	ptm_ev_near(PTM_COND, ip, next, target, taken);
}

void pt_model_ev_jump(u64 ip, u64 target)
{
	ptm_ev_near(PTM_JUMP, ip, 0, target, false);
}

void pt_model_ev_call(u64 ip, u64 next, u64 target)
{
	ptm_ev_near(PTM_CALL, ip, next, target, false);
}

void pt_model_ev_jump_indirect(u64 ip, u64 target)
{
	ptm_ev_near(PTM_JUMP_IND, ip, 0, target, false);
}

void pt_model_ev_call_indirect(u64 ip, u64 next, u64 target)
{
	ptm_ev_near(PTM_CALL_IND, ip, next, target, false);
}

void pt_model_ev_ret(u64 ip, u64 target)
{
	ptm_ev_near(PTM_RET, ip, 0, target, false);
}

void pt_model_ev_far(u64 ip, u64 target, u8 cpl, enum ptm_mode mode)
{
	struct ptm_insn in = { .cls = PTM_FAR, .ip = ip, .target = target, .cpl = cpl, .mode = mode };

	pt_model_ev_insn(&in);
}

void pt_model_ev_ptwrite(u64 ip, u64 next, u64 payload, unsigned int size)
{
	struct ptm_insn in = { .cls = PTM_PTWRITE, .ip = ip, .next = next, .payload = payload,
			       .size = (u8)size };

	pt_model_ev_insn(&in);
}
