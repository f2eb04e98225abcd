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

static u64 psb_period(void)
{
	unsigned int f = 0;

	if (ptm_ebx(PT_CAP_PSB_CYC))
		f = (unsigned int)((ptm.ctl & RTIT_CTL_PSB_FREQ) >> RTIT_CTL_PSB_FREQ_OFFSET);
	return 2048ULL << f;
}

/* Report and count packet @p, encoded in @buf (@n bytes). */
static __always_inline void emit_counted(const struct ptpk *p, const u8 *buf, int n)
{
	if (ptm.hook)
		ptm.hook(p, buf, n, ptm.st.bytes, ptm.hook_ctx);
	ptm.st.packets++;
	ptm.st.bytes += (u64)n;
	if (p->type == PTPK_PSB)
		ptm.st.psbs++;
	/* PacketByteCnt counts output bytes; crossing the PSBFreq period asks
	 * for a PSB at the next instruction boundary (36.4.2.17). */
	ptm.byte_cnt += (u64)n;
	if (ptm.byte_cnt >= psb_period())
		ptm.psb_pending = true;
}

/* @p into @buf: its size, or negative (the model's TNT-64s are always in range) */
static __always_inline int encode(const struct ptpk *p, u8 *buf)
{
	return p->type == PTPK_TNT64 ? ptpk_encode_tnt64(buf, p->tnt.nbits, p->tnt.bits) :
	       ptpk_encode(p, buf);
}

/* The TNT packet for @n pending results @bits: TNT-8 when they fit */
static __always_inline struct ptpk tnt_packet(unsigned int n, u64 bits)
{
	return (struct ptpk){ .type = n <= PTPK_TNT8_MAX ? PTPK_TNT8 : PTPK_TNT64,
			      .tnt = { .nbits = (u8)n, .bits = bits } };
}

/* Encode, report, count and store one packet. */
void ptm_emit(const struct ptpk *p)
{
	u8 buf[PTPK_MAX_SIZE];
	int n = encode(p, buf);

	if (n < 0) {
		pr_err("pt-model: cannot encode a %s packet\n", ptpk_type_name(p->type));
		return;
	}
	emit_counted(p, buf, n);
	ptm_output_write(buf, n);
}

static u64 ctc_of(u64 tsc)
{
	return ptm.prof->ctc_num ? tsc * ptm.prof->ctc_den / ptm.prof->ctc_num : tsc;
}

/* CYC: cycles since the last CYC, sent before the first packet after time
 * passed (36.4.2.14), when at least the CycThresh threshold elapsed. */
static void cyc_point(void)
{
	unsigned int thr = (unsigned int)((ptm.ctl & RTIT_CTL_CYC_THRESH) >> RTIT_CTL_CYC_THRESH_OFFSET);
	u64 d = ptm.tsc - ptm.cyc_tsc;
	struct ptpk p = { .type = PTPK_CYC };

	if (!(ptm.ctl & RTIT_CTL_CYCLEACC) || !d || d < (thr ? 1ULL << (thr - 1) : 1))
		return;
	p.cyc = d;
	ptm.cyc_tsc = ptm.tsc;
	ptm_emit(&p);
}

static void flush_tnt(void)
{
	struct ptpk p;

	if (!ptm.tnt_n)
		return;
	cyc_point();
	p = tnt_packet(ptm.tnt_n, ptm.tnt_bits);
	ptm.tnt_n = 0;
	ptm.tnt_bits = 0;
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
	struct ptpk p = { .type = t };

	if (suppressed) {
		p.ip.ipc = PTPK_IPC_SUPPRESSED;
	} else {
		p.ip.ipc = ptpk_ip_compress(ip, ptm.last_ip);
		p.ip.ip = ip;
		ptm.last_ip = ip;
	}
	pkt(&p);
}

static __always_inline void tnt_add(bool taken)
{
	ptm.tnt_bits = (ptm.tnt_bits << 1) | (taken ? 1 : 0);
	if (++ptm.tnt_n == (ptm.cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX))
		flush_tnt();
}

static void mode_exec(void)
{
	struct ptpk p = { .type = PTPK_MODE_EXEC };

	p.exec.csl = ptm.mode == PTM_MODE_64;
	p.exec.csd = ptm.mode == PTM_MODE_32;
	pkt(&p);
	ptm.mode_sent = (int)ptm.mode;
}

static void psb_plus(void)
{
	struct ptpk p;

	flush_tnt();
	ptm.byte_cnt = 0;
	ptm.psb_pending = false;
	p.type = PTPK_PSB;
	ptm_emit(&p);
	/* the decoder resets Last IP and its return stack at every PSB, and
	 * learns the mode again from PSB+ */
	ptm.last_ip = 0;
	ptm.rs_len = 0;
	ptm.mode_sent = -1;
	if (ptm.ctl & RTIT_CTL_TSC_EN) {
		p.type = PTPK_TSC;
		p.tsc = ptm.tsc & GENMASK_ULL(55, 0);
		ptm_emit(&p);
		if (ptm.ctl & RTIT_CTL_MTC_EN) {
			u64 ctc = ctc_of(ptm.tsc);
			u64 per = ptm.prof->ctc_den ? ptm.prof->ctc_num / ptm.prof->ctc_den : 1;

			p.type = PTPK_TMA;
			p.tma.ctc = (u16)ctc;
			p.tma.fc = (u16)(per ? (ptm.tsc % per) & 0x1ff : 0);
			ptm_emit(&p);
		}
	}
	if (ptm.cr3_valid && (ptm.ctl & RTIT_CTL_OS) && ptm_context_en(ptm.cpl)) {
		p.type = PTPK_PIP;
		p.pip.cr3 = ptm.cr3;
		p.pip.nr = false;
		ptm_emit(&p);
	}
	p.type = PTPK_CBR;
	p.cbr = ptm.prof->cbr;
	ptm_emit(&p);
	if (ptm.packet_en) {
		mode_exec();
		ip_pkt(PTPK_FUP, ptm.ip, false);
	}
	p.type = PTPK_PSBEND;
	ptm_emit(&p);
}

/* MTC each time CTC bit MTCFreq toggles (36.4.2.16). */
static __always_inline void tick(u64 cycles)
{
	unsigned int n = (unsigned int)((ptm.ctl & RTIT_CTL_MTC_RANGE) >> RTIT_CTL_MTC_RANGE_OFFSET);
	u64 c0, c1;

	if (!cycles)
		return;
	ptm.tsc += cycles;
	if (!ptm.trigger_en || ptm.overflow || !(ptm.ctl & RTIT_CTL_MTC_EN))
		return;
	c0 = ctc_of(ptm.tsc - cycles) >> n;
	c1 = ctc_of(ptm.tsc) >> n;
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
	if (!(ptm.ctl & RTIT_CTL_ADDR_CFG_ALL))
		return false;
	for (unsigned int n = 0; n < ptm_nr_ranges(); n++)
		if (ptm_addr_cfg(n) == RTIT_ADDR_CFG_STOP && ip >= ptm.addr_a[n] && ip <= ptm.addr_b[n])
			return true;
	return false;
}

static __always_inline bool pe_with(bool filter, u8 cpl)
{
	return ptm.trigger_en && (ptm.ctl & RTIT_CTL_BRANCH_EN) && ptm_context_en(cpl) && filter &&
	       !ptm.unseen;
}

/* FilterEn after a transfer landing at @ip: it toggles only while
 * ContextEn=1 (36.2.5.5). */
static __always_inline bool filter_after(u64 ip, u8 cpl)
{
	return ptm_context_en(cpl) ? ptm_filter_match(ip) : ptm.filter_en;
}

bool pt_model_packet_en(void)
{
	return ptm.packet_en;
}

static __always_inline bool generating(void)
{
	return ptm.trigger_en && !ptm.overflow;
}

/* PacketEn 0->1: MODE.Exec when the mode changed or none was sent since the
 * PSB (Table 36-50), then TIP.PGE. The return stack starts empty, so a RET is
 * only compressed against CALLs the decoder has seen since. */
static void pge(u64 ip)
{
	if ((int)ptm.mode != ptm.mode_sent)
		mode_exec();
	ip_pkt(PTPK_TIP_PGE, ip, false);
	ptm.rs_len = 0;
}

/* Straight-line arrival at @ip. After TraceEn was set this is the enable
 * point: FilterEn and PacketEn are evaluated here, and TIP.PGE carries @ip
 * (the next IP of the WRMSR, 36.4.2.4). */
static __always_inline void point(u64 ip)
{
	ptm.ip = ip;
	if (!generating() || !ptm.enable_pending)
		return;
	ptm.enable_pending = false;
	ptm.filter_en = filter_after(ip, ptm.cpl);
	ptm.packet_en = pe_with(ptm.filter_en, ptm.cpl);
	if (ptm.packet_en)
		pge(ip);
}

static __always_inline void ev_end(void)
{
	if (ptm.psb_pending && generating())
		psb_plus();
}

/*
 * The outermost exit of an event. A PMI it raised is delivered here; as an
 * NMI its handler runs at once, at the instruction boundary where this event
 * left the CPU (@ptm.ip). When that handler sets TraceEn again (a PMI
 * restarts the trace), this boundary is the enable point: TIP.PGE here, not
 * at the next event's IP, since the code between runs traced. (A vector PMI
 * waits for IF=1 and arrives later as an interrupt event of its own; in an
 * unseen handler the return is the enable point.)
 */
static __always_inline void ev_exit(void)
{
	if (--ptm.depth)
		return;
	for (int i = 0; i < 4 && ptm.pmi_pending; i++) {
		ptm_deliver_pmis();
		if (!ptm.enable_pending || ptm.unseen)
			break;
		ptm.depth++;
		point(ptm.ip);
		ev_end();
		ptm.depth--;
	}
	smp_stop_pending();	/* as ptm_exit() */
}

void ptm_trace_enable(void)
{
	bool psb;

	ptm.packet_en = false;
	ptm.enable_pending = false;
	ptm.overflow = false;
	ptm.mode_sent = -1;
	ptm.tnt_n = 0;
	ptm.tnt_bits = 0;
	ptm.trigger_en = !(ptm.status & (RTIT_STATUS_STOPPED | RTIT_STATUS_ERROR));
	if (!ptm.trigger_en || !ptm_output_start())
		return;
	ptm.enable_pending = true;
	ptm.cyc_tsc = ptm.tsc;
	/* A full PSB+ when PacketByteCnt is 0; always without configurable
	 * PSB (Table 36-11 EBX[1]). */
	psb = !ptm_ebx(PT_CAP_PSB_CYC) || ptm.byte_cnt == 0;
	if (ptm.ctl & RTIT_CTL_INJECT_PSB_PMI) {
		if (ptm.status & RTIT_STATUS_PENDPSB)
			psb = true;
		if (ptm.status & RTIT_STATUS_PENDTOPAPMI) {
			ptm.topa_pmi = true;
			ptm.pmi_pending = true;
			ptm.st.pmis++;
		}
		ptm.status &= ~(RTIT_STATUS_PENDPSB | RTIT_STATUS_PENDTOPAPMI);
	}
	if (psb)
		psb_plus();
}

/* TraceEn 1->0 by WRMSR: FUP(CLIP), TIP.PGD() when PacketEn, then the
 * internal buffers drain so OUTPUT_* are final. */
void ptm_trace_disable(void)
{
	struct ptpk p;

	if (ptm.overflow && ptm.trigger_en) {
		p.type = PTPK_OVF;
		ptm.overflow = false;
		ptm_emit(&p);
	} else if (ptm.trigger_en) {
		if (ptm.packet_en) {
			ip_pkt(PTPK_FUP, ptm.ip, false);
			ip_pkt(PTPK_TIP_PGD, 0, true);
		} else {
			flush_tnt();
		}
	}
	if ((ptm.ctl & RTIT_CTL_INJECT_PSB_PMI) && ptm_ebx(PT_CAP_PSB_PMI_PRESERVE)) {
		/* the pending PSB/PMI is preserved for the next enable */
		if (ptm.psb_pending)
			ptm.status |= RTIT_STATUS_PENDPSB;
		if (ptm.pmi_armed) {
			ptm.pmi_armed = false;
			ptm.status |= RTIT_STATUS_PENDTOPAPMI;
		}
	}
	ptm_output_flush_pmi();
	ptm.trigger_en = false;
	ptm.packet_en = false;
	ptm.enable_pending = false;
	ptm.overflow = false;
	ptm.out_ready = false;
}

void ptm_trace_reset(void)
{
	ptm.trigger_en = ptm.packet_en = ptm.enable_pending = ptm.overflow = false;
	ptm.filter_en = true;
	ptm.unseen = false;
	ptm.ip = 0;
	ptm.cpl = 0;
	ptm.mode = PTM_MODE_64;
	ptm.mode_sent = -1;
	ptm.cr3 = 0;
	ptm.cr3_valid = false;
	ptm.last_ip = 0;
	ptm.tnt_bits = 0;
	ptm.tnt_n = 0;
	ptm.rs_top = ptm.rs_len = 0;
	ptm.psb_pending = false;
	ptm.tsc = ptm.cyc_tsc = 0;
}

/* ------------------------------------------------------------ the RET stack */

static void rs_push(u64 ret)
{
	ptm.rs_top = (ptm.rs_top + 1) % PTM_RETSTACK;
	ptm.retstack[ptm.rs_top] = ret;
	if (ptm.rs_len < PTM_RETSTACK)
		ptm.rs_len++;	/* when full, the oldest entry is overwritten */
}

static bool rs_pop_if(u64 target)
{
	if (!ptm.rs_len || ptm.retstack[ptm.rs_top] != target)
		return false;
	ptm.rs_top = (ptm.rs_top + PTM_RETSTACK - 1) % PTM_RETSTACK;
	ptm.rs_len--;
	return true;
}

/* ------------------------------------------------------------ events */

static bool is_branch(enum ptm_class c)
{
	return c != PTM_OTHER && c != PTM_PTWRITE && c != PTM_MOV_CR3;
}

/* PacketEn stays 1 across the instruction. */
static __always_inline void cofi(const struct ptm_insn *in, u64 to)
{
	bool notnt = ptm.ctl & RTIT_CTL_NOTNT;

	switch (in->cls) {
	case PTM_COND:
		if (!notnt)
			tnt_add(in->taken);
		break;
	case PTM_CALL:
		if (in->target != in->next)	/* CALL +0 is not a call */
			rs_push(in->next);
		break;
	case PTM_CALL_IND:
		rs_push(in->next);
		ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_JUMP_IND:
		ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_RET:
		if (!(ptm.ctl & RTIT_CTL_DISRETC) && !notnt && rs_pop_if(to))
			tnt_add(true);
		else
			ip_pkt(PTPK_TIP, to, false);
		break;
	case PTM_FAR:
		if ((int)ptm.mode != ptm.mode_sent)
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
	unsigned int max = ptm.cfg.long_tnt ? PTPK_TNT64_MAX : PTPK_TNT8_MAX;
	u64 to = target;
	int bit = -1;

	if (ptm.gate != PTM_GATE_FAST || ptm.depth || ptm.cfg.no_fast_path ||
	    (ptm.ctl & (RTIT_CTL_ADDR_CFG_ALL | RTIT_CTL_MTC_EN | RTIT_CTL_NOTNT)) ||
	    ptm.tnt_n + 1u >= max)
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
			rs_push(next);
		break;
	case PTM_RET:
		if ((ptm.ctl & RTIT_CTL_DISRETC) || !rs_pop_if(to))
			return false;	/* a TIP: nothing changed yet */
		bit = 1;
		break;
	default:
		return false;
	}
	ptm.st.fast++;
	ptm.tsc += ptm.cfg.cycles_per_event;	/* tick() without MTC */
	if (bit >= 0) {
		ptm.tnt_bits = (ptm.tnt_bits << 1) | (u64)bit;
		ptm.tnt_n++;
	}
	ptm.ip = to;
	return true;
}

/*
 * Where an instruction or an interrupt lands, the half both events share:
 * the new position and privilege, FilterEn and PacketEn there, and TraceStop
 * (36.2.4.3: TIP.PGD written by the caller, then TraceStop, Stopped=1).
 */
static void arrive(u64 to, u8 cpl, enum ptm_mode mode, bool filt, bool pe2, bool stop)
{
	ptm.cpl = cpl;
	ptm.mode = mode;
	ptm.ip = to;
	ptm.filter_en = filt;
	ptm.packet_en = pe2;
	if (stop) {
		struct ptpk p = { .type = PTPK_STOP };

		pkt(&p);
		ptm.status |= RTIT_STATUS_STOPPED;
		ptm.trigger_en = false;
		ptm.packet_en = false;
		ptm_output_flush_pmi();
	}
}

void pt_model_ev_insn(const struct ptm_insn *in)
{
	u64 to = in->next;
	u8 cpl = ptm.cpl;
	enum ptm_mode mode = ptm.mode;
	bool pe, pe2, lands, filt, stop = false;

	if (ev_insn_fast(in->cls, in->next, in->target, in->taken))
		return;
	ptm_enter();
	tick(ptm.cfg.cycles_per_event);
	point(in->ip);
	pe = ptm.packet_en;

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

	if (in->cls == PTM_PTWRITE && generating() && (ptm.ctl & RTIT_CTL_PTW_EN) &&
	    ptm_context_en(ptm.cpl) && ptm.filter_en) {
		struct ptpk p = { .type = PTPK_PTW };
		bool fup = ptm.ctl & RTIT_CTL_FUP_ON_PTW;

		p.ptw.plc = in->size == 8 ? 1 : 0;
		p.ptw.ip = fup;
		p.ptw.payload = in->size == 8 ? in->payload : (in->payload & 0xffffffffULL);
		pkt(&p);
		if (fup)
			ip_pkt(PTPK_FUP, in->ip, false);
	}
	if (in->cls == PTM_MOV_CR3) {
		if (generating() && (ptm.ctl & RTIT_CTL_OS) && ptm_context_en(ptm.cpl)) {
			struct ptpk p = { .type = PTPK_PIP, .pip = { in->cr3, false } };

			pkt(&p);
		}
		ptm.cr3 = in->cr3;
		ptm.cr3_valid = true;
	}

	filt = lands ? filter_after(to, cpl) : ptm.filter_en;
	if (!generating()) {
		arrive(to, cpl, mode, filt, ptm.overflow && pe_with(filt, cpl), false);
		goto out;
	}

	pe2 = pe_with(filt, cpl);
	if (lands && ptm_context_en(cpl) && in_stop_range(to)) {
		stop = true;
		pe2 = false;
	}
	if (pe && pe2) {
		ptm.mode = mode;
		cofi(in, to);
	} else if (pe) {
		leave(in, to, !ptm_context_en(cpl));
	} else if (pe2) {
		ptm.mode = mode;
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
	bool pe, pe2, filt, stop = false, unseen = target == PTM_UNSEEN;

	ptm_enter();
	tick(ptm.cfg.cycles_per_event);
	/* All kinds report the IP execution had reached: the next instruction
	 * (external interrupt), the faulting one (exception), or INT n. */
	point(from);
	pe = ptm.packet_en;
	/* An unseen handler is a context outside the trace: FilterEn holds, and
	 * PacketEn is 0 there (pe_with()) until pt_model_ev_return(). */
	ptm.unseen = unseen;
	filt = unseen ? ptm.filter_en : filter_after(target, cpl);
	if (!generating()) {
		arrive(target, cpl, mode, filt, ptm.overflow && pe_with(filt, cpl), false);
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
			ptm.mode = mode;
			if ((int)mode != ptm.mode_sent)
				mode_exec();
			ip_pkt(PTPK_TIP, target, false);
		} else {
			ip_pkt(PTPK_TIP_PGD, target, unseen || !ptm_context_en(cpl));
		}
	} else if (pe2) {
		ptm.mode = mode;
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
	bool filt, pe2, stop = false;

	ptm.unseen = false;
	if (ptm.enable_pending) {
		point(ip);
		return;
	}
	filt = filter_after(ip, ptm.cpl);
	if (!generating()) {
		arrive(ip, ptm.cpl, ptm.mode, filt, ptm.overflow && pe_with(filt, ptm.cpl), false);
		return;
	}
	pe2 = pe_with(filt, ptm.cpl);
	if (ptm_context_en(ptm.cpl) && in_stop_range(ip)) {
		stop = true;
		pe2 = false;
	}
	if (pe2)
		pge(ip);
	arrive(ip, ptm.cpl, ptm.mode, filt, pe2, stop);
}

void pt_model_ev_return(u64 ip)
{
	ptm_enter();
	tick(ptm.cfg.cycles_per_event);
	if (ptm.unseen)
		unseen_return(ip);
	else
		point(ip);
	ev_end();
	ev_exit();
}

void pt_model_ev_context(u64 ip, u8 cpl, enum ptm_mode mode)
{
	ptm_enter();
	ptm.unseen = false;
	ptm.ip = ip;
	ptm.cpl = cpl;
	ptm.mode = mode;
	ptm.filter_en = filter_after(ip, cpl);
	if (generating() && !ptm.enable_pending)
		ptm.packet_en = pe_with(ptm.filter_en, cpl);
	ev_exit();
}

void pt_model_ev_at(u64 ip)
{
	ptm_enter();
	if (unlikely(ptm.unseen))
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
	ptm.tsc = ptm.cyc_tsc = tsc;
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
	ptm_enter();
	if (generating()) {
		/* what was generated before the overflow point goes out;
		 * packets from here on are lost */
		flush_tnt();
		ptm.overflow = true;
	}
	ev_exit();
}

void pt_model_ev_overflow_end(void)
{
	struct ptpk p = { .type = PTPK_OVF };

	ptm_enter();
	if (ptm.overflow && ptm.trigger_en) {
		ptm.overflow = false;
		pkt(&p);
		/* the decoder resets Last IP and its return stack at OVF */
		ptm.last_ip = 0;
		ptm.rs_len = 0;
		ptm.packet_en = pe_with(ptm.filter_en, ptm.cpl);
		if (ptm.packet_en) {
			/* OVF, FUP: tracing resumes at the FUP's IP. If the
			 * mode changed while packets were lost, re-enable with
			 * MODE.Exec, TIP.PGE instead (the decoder only learns
			 * a mode from MODE.Exec). */
			if ((int)ptm.mode == ptm.mode_sent)
				ip_pkt(PTPK_FUP, ptm.ip, false);
			else
				pge(ptm.ip);
		}
		ev_end();
	}
	ptm.overflow = false;
	ev_exit();
}

/* ------------------------------------------------------------ convenience */

bool pt_model_ev_branch_fast(enum ptm_class cls, u64 next, u64 target, bool taken)
{
	return ev_insn_fast(cls, next, target, taken);
}

/* A near branch through the full path (the scripted tests' forms use it too). */
static void ev_near(enum ptm_class cls, u64 ip, u64 next, u64 target, bool taken)
{
	struct ptm_insn in = { .cls = cls, .ip = ip, .next = next, .target = target,
			       .taken = taken, .mode = PTM_MODE_64 };

	pt_model_ev_insn(&in);
}

void pt_model_ev_branch(enum ptm_class cls, u64 ip, u64 next, u64 target, bool taken)
{
	if (!ev_insn_fast(cls, next, target, taken))
		ev_near(cls, ip, next, target, taken);
}

static inline const struct ptm_edge *edge_at(const void *base, const u64 *rec)
{
	return (const void *)((const u8 *)base + ((u32)rec[0] & PTM_REC_EDGE));
}

static inline unsigned int rec_insns(const u64 *rec)
{
	return (u32)rec[0] >> PTM_REC_INSNS_SHIFT;
}

/*
 * The full path's end for a Jcc or compressed RET whose bit fills the TNT
 * packet, in the common case's state (PacketEn staying on, no IP filter, no
 * MTC): the packet goes out, then what is due at the instruction boundary
 * (a PSB+ the bytes asked for, a PMI the output raised).
 */
static void edges_tnt_full(void)
{
	ptm_enter();
	flush_tnt();
	ev_end();
	ev_exit();
}

/*
 * edges_tnt_full()'s common case, without its calls: a full TNT-64 that goes
 * straight into the output region (ptm_output_put()), no CYC before it, no
 * PSB due after it, so nothing else happens at that boundary. False, with
 * nothing done, in any other case.
 */
static __always_inline bool edges_tnt_fast(struct pt_model *m)
{
	u8 buf[PTPK_MAX_SIZE];
	bool ok;

	if (m->tnt_n != PTPK_TNT64_MAX || (m->ctl & RTIT_CTL_CYCLEACC) ||
	    m->byte_cnt + 8 >= psb_period())
		return false;
	ptpk_encode_tnt64(buf, m->tnt_n, m->tnt_bits);
	m->depth++;	/* a stop NMI waits for the packet's end (pt_model_busy()) */
	ok = ptm_output_put(buf, 8);
	if (ok) {
		struct ptpk p = { .type = PTPK_TNT64, .tnt = { .nbits = m->tnt_n, .bits = m->tnt_bits } };

		emit_counted(&p, buf, 8);	/* no PSB comes due: checked above */
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
	unsigned int room = max - m->tnt_n, top = m->rs_top, len = m->rs_len;
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
			top = (top + 1) % PTM_RETSTACK;
			m->retstack[top] = edge_at(base, rec)->next;
			len += len < PTM_RETSTACK;	/* full: the oldest is overwritten */
			break;
		case PTM_REC_RET:
			if (!retc || !len || m->retstack[top] != rec[1])
				goto out;	/* a TIP */
			top = (top + PTM_RETSTACK - 1) % PTM_RETSTACK;
			len--;
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
	m->rs_top = top;
	m->rs_len = len;
	*insns += n;
	*filled = full;
	if (full && !edges_tnt_fast(m))
		edges_tnt_full();
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
		if (!(m->ctl & RTIT_CTL_DISRETC) && m->rs_len && m->retstack[m->rs_top] == to)
			return false;	/* compressed: a TNT bit */
		break;
	default:
		return false;
	}
	if (m->tnt_n) {
		t = tnt_packet(m->tnt_n, m->tnt_bits);
		nt = encode(&t, buf);
	}
	tip.ip.ipc = ptpk_ip_compress(to, m->last_ip);
	tip.ip.ip = to;
	n = ptpk_encode(&tip, buf + nt);
	if (nt < 0 || n < 0 || m->byte_cnt + (u64)(nt + n) >= psb_period())
		return false;
	m->depth++;	/* a stop NMI waits for the packets' end (pt_model_busy()) */
	ok = ptm_output_put(buf, (unsigned int)(nt + n));
	if (ok) {
		if (nt)
			emit_counted(&t, buf, nt);
		emit_counted(&tip, buf + nt, n);	/* no PSB comes due: checked above */
		m->tnt_n = 0;
		m->tnt_bits = 0;
		m->last_ip = to;
		if (e->cls == PTM_CALL_IND)
			rs_push(e->next);
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
			ev_near(e->cls, e->ip, e->next, to, e->taken);
		rec += 2;
	}
	*insns += n;
	return rec;
}

void pt_model_ev_cond(u64 ip, u64 next, u64 target, bool taken)
{
	ev_near(PTM_COND, ip, next, target, taken);
}

void pt_model_ev_jump(u64 ip, u64 target)
{
	ev_near(PTM_JUMP, ip, 0, target, false);
}

void pt_model_ev_call(u64 ip, u64 next, u64 target)
{
	ev_near(PTM_CALL, ip, next, target, false);
}

void pt_model_ev_jump_indirect(u64 ip, u64 target)
{
	ev_near(PTM_JUMP_IND, ip, 0, target, false);
}

void pt_model_ev_call_indirect(u64 ip, u64 next, u64 target)
{
	ev_near(PTM_CALL_IND, ip, next, target, false);
}

void pt_model_ev_ret(u64 ip, u64 target)
{
	ev_near(PTM_RET, ip, 0, target, false);
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
