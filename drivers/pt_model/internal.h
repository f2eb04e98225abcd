/* SPDX-License-Identifier: MIT */
/* State shared by the files of the PT trace unit model. */
#ifndef TOPAZ_PT_MODEL_INTERNAL_H
#define TOPAZ_PT_MODEL_INTERNAL_H

#include <topaz/pt_model.h>
#include <topaz/percpu.h>
#include <topaz/smp.h>
#include <topaz/msr-index.h>


struct pt_model {
	const struct pt_profile *prof;
	bool installed;
	struct pt_model_config cfg;

	/* Architectural registers. @status holds only the software-visible
	 * sticky bits (Error, Stopped, PendPSB, PendTopaPMI); FilterEn,
	 * ContextEn, TriggerEn and PacketByteCnt are composed on read. */
	u64 ctl, status, output_base, output_mask, cr3_match;
	u64 addr_a[4], addr_b[4];
	u64 byte_cnt;		/* PacketByteCnt, unclamped */
	bool topa_pmi;		/* IA32_PERF_GLOBAL_STATUS.TraceToPAPMI */

	/* Output: the entry the hardware is writing into (read when the walk
	 * reaches it, as hardware caches entries). */
	bool out_ready;
	u64 region_base, region_size;
	u64 entry;
	u64 skid_left;		/* bytes until an armed PMI is taken */
	bool pmi_armed, early_done;

	/* Trace generation. The flags the common-case path tests are one word
	 * too (@gate), so it tests them at once: PTM_GATE_FAST when tracing goes
	 * on and nothing is due. */
	union {
		struct {
			bool trigger_en;	/* TraceEn && !Stopped && !Error */
			bool packet_en;		/* PacketEn at @ip */
			bool enable_pending;	/* TraceEn set; TIP.PGE at the next IP */
			bool overflow;		/* internal buffer overflowed: generation ceased */
			bool psb_pending;	/* a PSB+ at the next instruction boundary */
			bool pmi_pending;	/* a PMI to deliver at the outermost exit */
			u8 gate_pad[2];
		};
		u64 gate;
	};
	bool filter_en;		/* FilterEn: re-evaluated where branches land */
	bool unseen;		/* in a handler the trace engine does not follow
				 * (PTM_UNSEEN): PacketEn stays 0 until it returns */
	u64 ip;			/* the next instruction to execute */
	u8 cpl;
	enum ptm_mode mode;
	int mode_sent;		/* mode the decoder knows, -1 when unknown */
	u64 cr3;
	bool cr3_valid;
	u64 last_ip;
	u64 tnt_bits;
	u8 tnt_n;
	struct ptm_retstack *rs;	/* RET compression's: &@rs_own, or lent */
	struct ptm_retstack rs_own;
	u64 tsc, cyc_tsc;	/* TSC now; TSC at the last CYC */

	int depth;		/* nesting of model entry points */
	int last_gp, last_operr;
	/*
	 * ptm_check_access(): the last three IA32_RTIT_CTL values that
	 * passed the rows that depend only on the value and the profile (a
	 * window writes two: TraceEn on, and off), with the profile's words
	 * those rows read (a profile may change in place).
	 */
	struct ptm_ctl_ok {
		u64 val;
		u32 caps[4], errata;
		bool valid;
	} ctl_ok[3];
	u8 ctl_ok_next;
	pt_model_packet_hook_t hook;
	void *hook_ctx;
	struct pt_model_stats st;
};

/* Each CPU has its trace unit; every function of the model works on this
 * CPU's, through a pointer it takes once: this_cpu_ptr(pt_model_cpu). */
DECLARE_PER_CPU(struct pt_model, pt_model_cpu);

/* @gate when TriggerEn and PacketEn are set and nothing else (bytes in order) */
#define PTM_GATE_FAST	0x0101ULL
_Static_assert(sizeof(bool) == 1, "the gate word holds one byte a flag");

/* profile capabilities */
static inline u32 ptm_cap(int sub, int reg) { return this_cpu_ptr(pt_model_cpu)->prof->leaf14[sub][reg]; }
static inline bool ptm_ebx(u32 bit) { return ptm_cap(0, 1) & bit; }
static inline bool ptm_ecx(u32 bit) { return ptm_cap(0, 2) & bit; }
/* CPUID.14H.1:EAX[2:0] may say up to 7, but only ADDR0..3 (and ADDR0..3_CFG)
 * exist: a profile claiming more has 4, not an index past addr_a[]/addr_b[]
 * (found by tests/fuzz/fuzz_msr with a synthetic profile). */
static inline unsigned int ptm_nr_ranges(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int n = ptm_ebx(PT_CAP_IP_FILTER) ? (ptm_cap(1, 0) & PT_CAP_NUM_RANGES_MASK) : 0;

	return min(n, (unsigned int)ARRAY_SIZE(m->addr_a));
}
static inline unsigned int ptm_addr_cfg(unsigned int n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return (unsigned int)(m->ctl >> RTIT_CTL_ADDRn_OFFSET(n)) & 0xf;
}
static inline bool ptm_trace_en(void) { return this_cpu_ptr(pt_model_cpu)->ctl & RTIT_CTL_TRACEEN; }

/* pt_model.c: entry/exit brackets every public call; the outermost exit
 * delivers a pending PMI. */
void ptm_deliver_pmis(void);

static inline void ptm_enter(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->depth++;
}

/* An interrupt is taken at an instruction boundary: deliver a pending PMI
 * once the outermost model call is done, so the handler finds the model in
 * a consistent state (and may itself use the MSRs). A panic's stop NMI that
 * came inside the call (pt_model_busy()) stops this CPU here, for the same
 * reason: its stop hook turns the model off. */
static inline void ptm_exit(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (--m->depth)
		return;
	if (m->pmi_pending)
		ptm_deliver_pmis();
	smp_stop_pending();
}

/* pt_model_rules.c */
int ptm_check_access(u32 msr, bool write, u64 val);	/* rule id, or -1 */
void ptm_rules_init(void);	/* ptm_check_access()'s row lists (idempotent) */
void ptm_operational_error(enum pt_operr e);

/* pt_model_topa.c */
bool ptm_output_start(void);	/* false after an operational error */
void ptm_output_write(const u8 *b, int n);
/* ptm_output_write()'s common case; false (nothing stored) when it is not that */
bool ptm_output_put(const u8 *b, unsigned int n);
/* where ptm_output_put() would store now, *@room: it takes n bytes while n < *@room */
u8 *ptm_output_room(u64 *room);
/* @n bytes were stored there (at most what ptm_output_room() allowed) */
void ptm_output_stored(u64 n);
void ptm_output_flush_pmi(void);
bool ptm_output_single_entry(void);

/* pt_model_events.c */
void ptm_trace_enable(void);
void ptm_trace_disable(void);
void ptm_trace_reset(void);
void ptm_emit(const struct ptpk *p);
void ptm_tnt_full(void);

/* Bytes of output between PSBs: PSBFreq's period (36.4.2.17). */
static inline u64 ptm_psb_period(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int f = 0;

	if (ptm_ebx(PT_CAP_PSB_CYC))
		f = (unsigned int)((m->ctl & RTIT_CTL_PSB_FREQ) >> RTIT_CTL_PSB_FREQ_OFFSET);
	return 2048ULL << f;
}

/* Report and count packet @p, encoded in @buf (@n bytes). */
static __always_inline void ptm_emit_counted(const struct ptpk *p, const u8 *buf, int n)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (m->hook)
		m->hook(p, buf, n, m->st.bytes, m->hook_ctx);
	m->st.packets++;
	m->st.bytes += (u64)n;
	if (p->type == PTPK_PSB)
		m->st.psbs++;
	/* PacketByteCnt counts output bytes; crossing the PSBFreq period asks
	 * for a PSB at the next instruction boundary (36.4.2.17). */
	m->byte_cnt += (u64)n;
	if (m->byte_cnt >= ptm_psb_period())
		m->psb_pending = true;
}

/* @p into @buf: its size, or negative (the model's TNT-64s are always in range) */
static __always_inline int ptm_encode(const struct ptpk *p, u8 *buf)
{
	return p->type == PTPK_TNT64 ? ptpk_encode_tnt64(buf, p->tnt.nbits, p->tnt.bits) :
	       ptpk_encode(p, buf);
}

/* The TNT packet for @n pending results @bits: TNT-8 when they fit */
static __always_inline struct ptpk ptm_tnt_packet(unsigned int n, u64 bits)
{
	return (struct ptpk){ .type = n <= PTPK_TNT8_MAX ? PTPK_TNT8 : PTPK_TNT64,
			      .tnt = { .nbits = (u8)n, .bits = bits } };
}

/* The decoder resets its return stack (PSB, OVF, TIP.PGE): empty. */
static inline void ptm_rs_clear_top(struct pt_model *m)
{
	*ptm_rs_top(m->rs) = PTM_RS_POISON;
}

/* A CALL's return address onto the decoder's stack (RET compression). */
static inline void ptm_call_push(u64 ret)
{
	ptm_rs_push(this_cpu_ptr(pt_model_cpu)->rs, ret);
}

/* A near branch through the full path (the scripted tests' forms use it too). */
static inline void ptm_ev_near(enum ptm_class cls, u64 ip, u64 next, u64 target, bool taken)
{
	struct ptm_insn in = { .cls = cls, .ip = ip, .next = next, .target = target,
			       .taken = taken, .mode = PTM_MODE_64 };

	pt_model_ev_insn(&in);
}

static inline bool ptm_context_en(u8 cpl)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool c = cpl == 0 ? (m->ctl & RTIT_CTL_OS) : (m->ctl & RTIT_CTL_USR);

	if (m->ctl & RTIT_CTL_CR3EN)
		c = c && (m->cr3 & ~0x1fULL) == (m->cr3_match & ~0x1fULL);
	return c;
}

/* Whether @ip passes the IP filter: always, unless some ADDRn_CFG is 1
 * (36.2.5.5). FilterEn itself only changes where a taken branch or an event
 * lands, like TraceStop (36.2.4.3): straight-line flow out of a range keeps
 * tracing until the next branch. */
static inline bool ptm_filter_match(u64 ip)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool any = false;

	if (!(m->ctl & RTIT_CTL_ADDR_CFG_ALL))
		return true;	/* the common case: no ranges at all */
	for (unsigned int n = 0; n < ptm_nr_ranges(); n++) {
		if (ptm_addr_cfg(n) != RTIT_ADDR_CFG_FILTER)
			continue;
		any = true;
		if (ip >= m->addr_a[n] && ip <= m->addr_b[n])
			return true;
	}
	return !any;
}

#endif
