/* SPDX-License-Identifier: MIT */
/*
 * The software Intel PT trace unit: a model of the PT hardware behind the real
 * MSR and CPUID interface (arch_set_interceptor), so a PT driver runs unchanged
 * on the model and on silicon. See docs/pt-model.md.
 *
 * The model is one trace unit for one CPU. It is not reentrant: events and MSR
 * accesses must come from one context at a time. A PMI it raises is delivered
 * (apic_pmi_deliver) when the outermost model call returns, as an interrupt is
 * taken at the next instruction boundary. So is another CPU's panic stop that
 * came as an NMI inside a model call (pt_model_busy(), smp_stop_pending()).
 */
#ifndef TOPAZ_PT_MODEL_H
#define TOPAZ_PT_MODEL_H

#include <topaz/types.h>
#include <topaz/pt_packet.h>

/* ------------------------------------------------------------ CPU profiles */

#define PT_ERRATUM_BDM106	BIT(0)	/* Broadwell: TraceEn=1 with BranchEn=0 #GPs */

/**
 * struct pt_profile - the PT-relevant CPUID of one real processor
 * @name: the pt.profile= value
 * @cpu: the processor the values were read from
 * @source: the public CPUID dump they come from
 * @family: @model: @stepping: its CPUID.1 signature (decoders key errata on it)
 * @leaf14: CPUID.(EAX=14H, ECX=0) and (ECX=1): eax, ebx, ecx, edx
 * @maxphyaddr: CPUID.80000008H:EAX[7:0]
 * @linear_bits: CPUID.80000008H:EAX[15:8] (canonical-address checks)
 * @cbr: maximum non-turbo ratio (MSR_PLATFORM_INFO[15:8]) sent in CBR packets
 * @ctc_den: @ctc_num: CPUID.15H EAX and EBX (TSC = CTC * @ctc_num / @ctc_den)
 * @errata: PT_ERRATUM_* the model mimics for this part
 */
struct pt_profile {
	const char *name;
	const char *cpu;
	const char *source;
	u8 family, model, stepping;
	u32 leaf14[2][4];
	u8 maxphyaddr;
	u8 linear_bits;
	u8 cbr;
	u32 ctc_den, ctc_num;
	u32 errata;
};

extern const struct pt_profile pt_profiles[];
extern const unsigned int pt_nr_profiles;
#define PT_PROFILE_DEFAULT	"skylake"

/** pt_profile_find() - the profile called @name, or NULL */
const struct pt_profile *pt_profile_find(const char *name);
/** pt_profile_list() - "broadwell, skylake, ..." into @buf (for messages) */
void pt_profile_list(char *buf, size_t size);

/* ------------------------------------------------------------ installation */

/**
 * pt_cpu_has_pt() - whether the CPU itself (under any interceptor) has PT:
 * CPUID.7.0:EBX[25] and a leaf 0x14 within the maximum basic leaf
 */
bool pt_cpu_has_pt(void);

/**
 * pt_model_init() - install the model as the MSR/CPUID interceptor
 * @profile_name: a pt_profiles[] name; NULL or "" means PT_PROFILE_DEFAULT
 * @force: install even when the CPU has PT (pt.model=on)
 *
 * Return: 1 when the model was installed, 0 when the CPU has PT and @force is
 * clear (nothing changed), -EINVAL for an unknown profile (the valid names are
 * printed), -EBUSY when another interceptor is installed.
 */
int pt_model_init(const char *profile_name, bool force);

/**
 * pt_model_init_profile() - pt_model_init() with a profile of the caller's
 * (tests use synthetic ones for capabilities no real part lacks); @prof must
 * outlive the installation
 */
int pt_model_init_profile(const struct pt_profile *prof, bool force);


/** pt_model_uninstall() - remove the interceptor (the MSRs vanish again) */
void pt_model_uninstall(void);
/**
 * pt_model_active() - whether this CPU's trace unit model is installed
 * Return: true when it is.
 */
bool pt_model_active(void);
/**
 * pt_model_profile() - the profile this CPU's model runs with
 * Return: it, or NULL when the model is not installed.
 */
const struct pt_profile *pt_model_profile(void);

/**
 * pt_model_reset() - power-on state: every RTIT MSR 0, GLOBAL_STATUS bit 55
 * clear, trace state (last IP, TNT, return stack) cleared, hooks kept
 */
void pt_model_reset(void);

/**
 * struct pt_model_config - knobs that are not architectural
 * @pmi_skid: bytes written after an INT region fills before the PMI is taken
 * @single_pmi_early: profiles without multi-entry ToPA signal the PMI this
 *	many bytes before the region is full (the SDM: "before the region is
 *	filled")
 * @long_tnt: pack up to 47 results into TNT-64 (else TNT-8 only)
 * @cycles_per_event: core cycles charged to every event (drives MTC and CYC)
 * @no_fast_path: take the full path for every instruction (tests compare the
 *	two: the fast path must not change a byte)
 */
struct pt_model_config {
	u32 pmi_skid;
	u32 single_pmi_early;
	bool long_tnt;
	u32 cycles_per_event;
	bool no_fast_path;
};
#define PT_MODEL_DEFAULT_SKID		96
#define PT_MODEL_DEFAULT_EARLY		256
/** pt_model_get_config() - copy this CPU's model configuration into @cfg */
void pt_model_get_config(struct pt_model_config *cfg);
/** pt_model_set_config() - replace this CPU's model configuration with @cfg */
void pt_model_set_config(const struct pt_model_config *cfg);

/* ------------------------------------------------------------ rules */

/* #GP rules: one row each in pt_model_rules.c, with the SDM reference. */
enum pt_gp_rule {
	PT_GP_CTL_WHILE_TRACEEN,
	PT_GP_CTL_RESERVED,
	PT_GP_CTL_CYC_PSB_UNSUPPORTED,
	PT_GP_CTL_MTC_UNSUPPORTED,
	PT_GP_CTL_PTW_UNSUPPORTED,
	PT_GP_CTL_PWR_UNSUPPORTED,
	PT_GP_CTL_CR3_UNSUPPORTED,
	PT_GP_CTL_TOPA_UNSUPPORTED,
	PT_GP_CTL_FABRIC_UNSUPPORTED,
	PT_GP_CTL_EVENT_UNSUPPORTED,
	PT_GP_CTL_DISTNT_UNSUPPORTED,
	PT_GP_CTL_INJECT_UNSUPPORTED,
	PT_GP_CTL_ADDR_CFG_UNSUPPORTED,
	PT_GP_CTL_ADDR_CFG_RESERVED,
	PT_GP_CTL_MTC_FREQ,
	PT_GP_CTL_CYC_THRESH,
	PT_GP_CTL_PSB_FREQ,
	PT_GP_CTL_NO_OUTPUT,
	PT_GP_CTL_BDM106,
	PT_GP_STATUS_WHILE_TRACEEN,
	PT_GP_STATUS_RESERVED,
	PT_GP_STATUS_BYTECNT_UNSUPPORTED,
	PT_GP_OUTPUT_UNSUPPORTED,
	PT_GP_OUTPUT_WHILE_TRACEEN,
	PT_GP_OUTPUT_BASE_RESERVED,
	PT_GP_CR3_UNSUPPORTED,
	PT_GP_CR3_WHILE_TRACEEN,
	PT_GP_CR3_RESERVED,
	PT_GP_ADDR_UNSUPPORTED,
	PT_GP_ADDR_WHILE_TRACEEN,
	PT_GP_ADDR_NONCANONICAL,
	PT_GP_NR
};

/* Operational errors: STATUS.Error set, tracing halted (SDM "ToPA Errors"). */
enum pt_operr {
	PT_OPERR_TABLE_MISALIGNED,
	PT_OPERR_ENTRY_RESERVED,
	PT_OPERR_REGION_MISALIGNED,
	PT_OPERR_OFFSET_TOO_LARGE,
	PT_OPERR_END_INT_STOP,
	PT_OPERR_END_AT_ENTRY0,
	PT_OPERR_SINGLE_ENTRY_LAYOUT,
	PT_OPERR_SINGLE_RANGE_MISALIGNED,
	PT_OPERR_SINGLE_RANGE_MASK,
	PT_OPERR_NR
};

/**
 * struct pt_rule_info - one row of a rule table
 * @name: short name ("CTL_WHILE_TRACEEN")
 * @sdm: the SDM section/table the rule comes from
 * @what: what is refused or fails, in words
 */
struct pt_rule_info {
	const char *name;
	const char *sdm;
	const char *what;
};
/**
 * pt_model_gp_rule() - the name, SDM reference and text of #GP rule @r
 * Return: it, or NULL for an unknown rule.
 */
const struct pt_rule_info *pt_model_gp_rule(enum pt_gp_rule r);
/**
 * pt_model_operr_rule() - the name, SDM reference and text of operational error @e
 * Return: it, or NULL for an unknown error.
 */
const struct pt_rule_info *pt_model_operr_rule(enum pt_operr e);
/** pt_model_last_gp() - the rule behind the last refused access, or -1 */
int pt_model_last_gp(void);
/** pt_model_last_operr() - the last operational error, or -1 */
int pt_model_last_operr(void);
/** pt_model_clear_faults() - forget the last #GP and operational error */
void pt_model_clear_faults(void);

/* ------------------------------------------------------------ observation */

/*
 * Called for every packet the model generates, with its bytes and the number
 * of bytes generated before it since pt_model_reset() (bytes are counted
 * whether or not the output took them).
 */
typedef void (*pt_model_packet_hook_t)(const struct ptpk *p, const u8 *bytes, int len,
				       u64 stream_off, void *ctx);
/**
 * pt_model_set_packet_hook() - call @fn(..., @ctx) on each packet this CPU's
 * model writes (NULL: none)
 */
void pt_model_set_packet_hook(pt_model_packet_hook_t fn, void *ctx);

/**
 * struct pt_model_stats - counters since pt_model_reset()
 * @packets: packets generated
 * @bytes: bytes generated
 * @bytes_written: bytes stored to the output
 * @bytes_lost: generated but not stored (STOP, operational error)
 * @pmis: PMIs signalled; @pmis_delivered: of those, taken through LVTPC
 * @psbs: PSB packets
 * @fast: instructions the common-case path took (no packet, nothing due)
 */
struct pt_model_stats {
	u64 packets, bytes, bytes_written, bytes_lost;
	u64 pmis, pmis_delivered, psbs;
	u64 fast;
};
/** pt_model_get_stats() - copy this CPU's trace unit's statistics into @st */
void pt_model_get_stats(struct pt_model_stats *st);
/** pt_model_get_stats_cpu() - CPU @cpu's trace unit's statistics */
void pt_model_get_stats_cpu(unsigned int cpu, struct pt_model_stats *st);
/**
 * pt_model_init_this_cpu() - on a CPU that came up after the model was
 * installed: its own trace unit, with the boot CPU's profile and
 * configuration, reset (each CPU has one, as each has its PT unit)
 */
void pt_model_init_this_cpu(void);
/**
 * pt_model_busy() - this CPU is inside a model call: its packet state is half
 * updated, so an NMI here must not call the model (a panic's stop NMI is put
 * off to the call's end, where the model calls smp_stop_pending()).
 */
bool pt_model_busy(void);
/**
 * pt_model_bytes_lost() - this CPU's trace unit: bytes generated and not
 * stored, a running total
 */
u64 pt_model_bytes_lost(void);

/** pt_model_packet_en() - PacketEn at the current IP (tests, the trace engine) */
bool pt_model_packet_en(void);

/* ------------------------------------------------------------ events */

enum ptm_mode { PTM_MODE_16, PTM_MODE_32, PTM_MODE_64 };

/* The class of a retired instruction, as the trace unit sees it. */
enum ptm_class {
	PTM_OTHER,		/* no control transfer */
	PTM_COND,		/* Jcc, JrCXZ, LOOPcc: @taken */
	PTM_JUMP,		/* direct near JMP */
	PTM_CALL,		/* direct near CALL (pushes @next) */
	PTM_JUMP_IND,		/* indirect near JMP */
	PTM_CALL_IND,		/* indirect near CALL */
	PTM_RET,		/* near RET */
	PTM_FAR,		/* far JMP/CALL/RET, SYSCALL/SYSRET, SYSENTER/SYSEXIT, IRET */
	PTM_PTWRITE,		/* PTWRITE of @payload (@size 4 or 8) */
	PTM_MOV_CR3,		/* MOV to CR3 of @cr3 */
};

/**
 * struct ptm_insn - "the CPU just executed this instruction"
 * @cls: what kind of instruction
 * @ip: its address
 * @next: the next sequential instruction (fall-through / return address)
 * @target: where a taken branch went (unused for PTM_OTHER, PTM_PTWRITE,
 *	PTM_MOV_CR3 and a not-taken PTM_COND)
 * @taken: PTM_COND outcome
 * @cpl: @mode: PTM_FAR: the privilege level and mode at @target
 * @payload: @size: PTM_PTWRITE operand and its size in bytes
 * @cr3: PTM_MOV_CR3 new value
 */
struct ptm_insn {
	enum ptm_class cls;
	u64 ip, next, target;
	bool taken;
	u8 cpl;
	enum ptm_mode mode;
	u64 payload;
	u8 size;
	u64 cr3;
};

/** pt_model_ev_insn() - feed one retired instruction */
void pt_model_ev_insn(const struct ptm_insn *in);

enum ptm_intr {
	PTM_INTR_HW,		/* external interrupt, NMI: @from is the next instruction */
	PTM_INTR_EXCEPTION,	/* fault: @from is the faulting instruction */
	PTM_INTR_SW,		/* INT n, INT3, INTO: @from is that instruction */
};

/*
 * @target of pt_model_ev_interrupt() for a handler nobody reports (the trace
 * engine does not follow handlers): the CPU is outside the trace until
 * pt_model_ev_return(), as in a handler a CPL filter excludes (FUP, TIP.PGD
 * without IP, then TIP.PGE where it returns).
 */
#define PTM_UNSEEN	(~0ULL)

/**
 * pt_model_ev_interrupt() - an interrupt or exception is delivered
 * @kind: which kind
 * @from: the IP the FUP reports (see enum ptm_intr)
 * @target: the handler, or PTM_UNSEEN
 * @vector: the vector (not traced by PT; kept for the trace engine's log)
 * @cpl: @mode: privilege level and mode of the handler
 */
void pt_model_ev_interrupt(enum ptm_intr kind, u64 from, u64 target, u8 vector,
			   u8 cpl, enum ptm_mode mode);
/**
 * pt_model_ev_return() - the unseen handler returned to @ip (its IRET):
 * TIP.PGE there if @ip is traced. A TraceEn set inside the handler (a PMI's
 * restart) has its enable point here too.
 */
void pt_model_ev_return(u64 ip);

/**
 * pt_model_ev_context() - set where the CPU is without generating packets:
 * the next instruction, CPL and mode (start of a script; resync)
 */
void pt_model_ev_context(u64 ip, u8 cpl, enum ptm_mode mode);

/**
 * pt_model_ev_at() - execution reached @ip by straight-line flow. This is the
 * enable point after a WRMSR that sets TraceEn (TIP.PGE carries @ip) and the
 * disable point before one that clears it (the FUP carries @ip). Without it,
 * the first event after the enable is the enable point. (Straight-line flow
 * never changes FilterEn: only branch and event targets are checked.) Inside
 * an unseen handler it is pt_model_ev_return(@ip): a new window that starts
 * where the last one ended in a handler.
 */
void pt_model_ev_at(u64 ip);

/**
 * pt_model_ev_branch() - a near branch retired (PTM_COND, PTM_JUMP, PTM_CALL,
 * PTM_JUMP_IND, PTM_CALL_IND, PTM_RET), as pt_model_ev_insn() with the
 * fields in registers: the trace engine's hot path
 */
void pt_model_ev_branch(enum ptm_class cls, u64 ip, u64 next, u64 target, bool taken);
/**
 * pt_model_ev_branch_fast() - pt_model_ev_branch() when the model's common
 * case holds (no packet, nothing due, no filter: see docs/pt-model.md);
 * returns false, having changed nothing, otherwise
 */
bool pt_model_ev_branch_fast(enum ptm_class cls, u64 next, u64 target, bool taken);

/**
 * pt_model_tnt_room() - how many Jcc results a translating engine may put
 * straight into the pending TNT before handing them over with
 * pt_model_ev_tnt(): the one that fills the TNT packet is the last. The
 * model's common case must hold (PacketEn staying on, nothing due, no IP
 * filter or TraceStop range, no MTC, no DisTNT, the fast path on), and
 * nothing else may reach the model before the hand-over.
 * Return: 1 to 47 (TNT-8 profiles: 6); 0 when they must come as events.
 */
unsigned int pt_model_tnt_room(void);
/**
 * pt_model_tnt_inline_off() - why this configuration keeps Jcc results out
 * of the pending TNT (pt_model_tnt_room() 0 whatever the state), or NULL
 */
const char *pt_model_tnt_inline_off(void);
/**
 * pt_model_tnt_timed() - do the packets tell the time of events (TSC in
 * PSB+, CYC)? Then results handed over with pt_model_ev_tnt() must not
 * pass another event: its time would change.
 */
bool pt_model_tnt_timed(void);
/** pt_model_ret_compressed() - are RETs compressed (no DisRETC)? */
bool pt_model_ret_compressed(void);
/**
 * pt_model_tnt_direct() - where a translating engine's code may store full
 * TNT-64 packets (47 results each, ptpk_encode_tnt64()) itself, one after
 * another, when nothing is pending in the TNT: the packet a 47th result
 * fills goes there when nothing else is due at it (no CYC before it, no
 * PSB after it, the ToPA region's end and its PMI point short of it), so
 * the model would have stored the same bytes there. The next may go at
 * the byte after it while their sum plus 8 stays below *@room.
 * Nothing may reach the model before pt_model_tnt_direct_done().
 * Return: where the first goes, or NULL when the model must send them.
 */
u8 *pt_model_tnt_direct(u64 *room);
/**
 * pt_model_last_ip() - the Last IP the next TIP is compressed against. Where
 * pt_model_tnt_direct() allows it, the code may store there the TIPs of
 * indirect branches (and RETs not compressed) too, each after the pending
 * results' TNT packet, as edges_tip_fast() would send them, compressed
 * from this one on.
 */
u64 pt_model_last_ip(void);
/**
 * struct ptm_direct - what a translating engine's code stored where
 * pt_model_tnt_direct() said, in order
 * @bytes: all of it
 * @full: full TNT-64 packets (47 results each)
 * @tnt: @res: the other TNT packets (sent before a TIP), their results
 * @tips: TIPs (pt_model_last_ip()), each one event
 * @last_ip: the last TIP's IP
 */
struct ptm_direct {
	u64 bytes, full, tnt, res, tips, last_ip;
};
/**
 * pt_model_tnt_direct_done() - @d was stored where pt_model_tnt_direct()
 * said: the model's state as if it had sent it (pt_model_ev_tnt() of the
 * results, the TIPs' branches); @to where the last event went (0: unknown).
 * Before any other hand-over of results.
 */
void pt_model_tnt_direct_done(const struct ptm_direct *d, u64 to);
/**
 * pt_model_ev_tnt() - @n Jcc results @bits (the oldest highest), as @n
 * events of the common case, which pt_model_tnt_room() allowed (@n at most
 * its value). When they fill the packet it goes out at the last, then what
 * is due there (a PSB+ carries @to, where that Jcc went). @to: where the
 * last went (0: unknown, only when they do not fill the packet).
 */
void pt_model_ev_tnt(u64 bits, unsigned int n, u64 to);

/*
 * The decoder's return stack for RET compression (SDM 36.2.1.2; libipt's is
 * 64 deep, the oldest entry overwritten), as the model keeps it and a
 * translating engine's code updates it inline (pt_model_lend_retstack()).
 * A ring of PTM_RS_SLOTS; @top4 is the top slot's index times 4, one byte,
 * so that a byte store wraps it (no flag written). It has no length: the
 * slot just below the oldest entry holds PTM_RS_POISON, which no return
 * address is (the top of the upper half, which firmware and topaz never
 * map: a RET there faults), and so does a slot a RET took. It is a
 * sign-extended imm32, so that translated code stores it in one MOV. An empty
 * stack's top is that slot. (A push over 64 entries overwrites the oldest,
 * which is then the slot below the oldest, so nothing counts the length.)
 */
#define PTM_RS_SLOTS	64
#define PTM_RS_POISON	0xffffffffdeadbeefull
_Static_assert((u64)(s64)(s32)PTM_RS_POISON == PTM_RS_POISON, "the poison is an imm32");
struct ptm_retstack {
	u64 slot[PTM_RS_SLOTS];
	u8 top4;
};

/** ptm_rs_top() - the top slot of @rs (PTM_RS_POISON: empty) */
static inline u64 *ptm_rs_top(struct ptm_retstack *rs)
{
	return &rs->slot[rs->top4 / 4];
}

/** ptm_rs_reset() - @rs empty, every slot poisoned */
static inline void ptm_rs_reset(struct ptm_retstack *rs)
{
	for (unsigned int i = 0; i < PTM_RS_SLOTS; i++)
		rs->slot[i] = PTM_RS_POISON;
	rs->top4 = 0;
}

/** ptm_rs_push() - a CALL's return address @ret onto @rs */
static inline void ptm_rs_push(struct ptm_retstack *rs, u64 ret)
{
	rs->top4 = (u8)(rs->top4 + 4);
	*ptm_rs_top(rs) = ret;
}

/** ptm_rs_pop_if() - does a RET to @to compress? It takes the top then. */
static inline bool ptm_rs_pop_if(struct ptm_retstack *rs, u64 to)
{
	u64 *top = ptm_rs_top(rs);

	if (to == PTM_RS_POISON || *top != to)
		return false;
	*top = PTM_RS_POISON;
	rs->top4 = (u8)(rs->top4 - 4);
	return true;
}

/**
 * pt_model_lend_retstack() - from now on CPU @cpu's model keeps its RET
 * compression stack at @rs (its state moved there), where a translating
 * engine's code pushes and pops it inline while pt_model_tnt_room() allows
 * results inline; NULL: back in the model. Not while that CPU traces.
 */
void pt_model_lend_retstack(unsigned int cpu, struct ptm_retstack *rs);
/**
 * pt_model_ev_plain() - @n direct JMPs and CALLs (not CALL +0) that
 * translated code took inline while pt_model_tnt_room() allowed results
 * (their CALLs pushed on the lent stack), as the events they are; @to where
 * the last went (0: unknown). With pt_model_ev_tnt(), which they did not fill.
 */
void pt_model_ev_plain(u64 n, u64 to);

/**
 * struct ptm_edge - a near branch as a translating engine knows it ahead of
 * time: one outcome of a branch instruction
 * @ip: @next: the branch and the instruction after it
 * @to: where this outcome goes (a Jcc's edge: its target or @next); 0 when
 *	the record carries it (indirect JMP, CALL, RET)
 * @cls: PTM_COND, PTM_JUMP, PTM_CALL, PTM_JUMP_IND, PTM_CALL_IND, PTM_RET;
 *	anything else ends a batch (pt_model_ev_edges())
 * @taken: PTM_COND: this is the taken edge
 * @insns: instructions the edge stands for, summed for the caller
 */
struct ptm_edge {
	u64 ip, next, to;
	u8 cls, taken;
	u16 insns;
	u32 pad;
};

/*
 * A record's first word (its low 32 bits are read): the byte offset of its
 * struct ptm_edge from the batch's base, 32-byte aligned and under 2 MiB,
 * with the edge's instruction count above and, for a Jcc, its outcome in the
 * low bits, so the common record needs no look at the edge.
 */
#define PTM_REC_TAKEN		0x1u		/* a PTM_COND edge's taken one */
#define PTM_REC_COND		0x2u		/* a PTM_COND edge */
#define PTM_REC_KIND		0xcu		/* else what it does to the state: */
#define PTM_REC_JUMP		0x4u		/* nothing (direct JMP, CALL +0) */
#define PTM_REC_CALL		0x8u		/* pushes @next (direct CALL) */
#define PTM_REC_RET		0xcu		/* pops the target in the record, or a TIP */
#define PTM_REC_EDGE		0x001fffe0u	/* the edge's offset */
#define PTM_REC_INSNS_SHIFT	21		/* the edge's @insns (at most 2047) */
#define PTM_REC_INSNS_MAX	2047u

/** ptm_rec_word() - the first word of a record of edge @e, which is at @off from the base */
static inline u32 ptm_rec_word(u32 off, const struct ptm_edge *e)
{
	u32 w = off | (u32)e->insns << PTM_REC_INSNS_SHIFT;

	switch (e->cls) {
	case PTM_COND:
		return w | PTM_REC_COND | (e->taken ? PTM_REC_TAKEN : 0);
	case PTM_JUMP:
		return e->to ? w | PTM_REC_JUMP : w;
	case PTM_CALL:	/* CALL +0 is not a call */
		return !e->to ? w : e->to == e->next ? w | PTM_REC_JUMP : w | PTM_REC_CALL;
	case PTM_RET:
		return e->to ? w : w | PTM_REC_RET;
	default:
		return w;	/* the model looks at the edge */
	}
}

/**
 * pt_model_ev_edges() - a batch of branches, as pt_model_ev_branch() each:
 * records of two words from @rec to @end, the first made by ptm_rec_word()
 * (a struct ptm_edge at @base + its offset), then the target when the edge
 * has none
 * @insns: the edges' instruction counts are added here
 * Return: where it stopped: @end, or the first record whose edge is not a
 * near branch (the caller's to feed, then call again past it).
 */
const u64 *pt_model_ev_edges(const u64 *rec, const u64 *end, const void *base, u64 *insns);

/* Convenience forms of pt_model_ev_insn(). */
/**
 * pt_model_ev_cond() - pt_model_ev_insn() of a conditional branch at @ip,
 * @taken to @target or not (to @next)
 */
void pt_model_ev_cond(u64 ip, u64 next, u64 target, bool taken);
/** pt_model_ev_jump() - pt_model_ev_insn() of a direct near JMP at @ip to @target */
void pt_model_ev_jump(u64 ip, u64 target);
/**
 * pt_model_ev_call() - pt_model_ev_insn() of a direct near CALL at @ip to
 * @target, returning to @next
 */
void pt_model_ev_call(u64 ip, u64 next, u64 target);
/** pt_model_ev_jump_indirect() - pt_model_ev_insn() of an indirect near JMP at @ip to @target */
void pt_model_ev_jump_indirect(u64 ip, u64 target);
/**
 * pt_model_ev_call_indirect() - pt_model_ev_insn() of an indirect near CALL at
 * @ip to @target, returning to @next
 */
void pt_model_ev_call_indirect(u64 ip, u64 next, u64 target);
/** pt_model_ev_ret() - pt_model_ev_insn() of a near RET at @ip to @target */
void pt_model_ev_ret(u64 ip, u64 target);
/**
 * pt_model_ev_far() - pt_model_ev_insn() of a far transfer at @ip to @target,
 * at privilege @cpl in @mode
 */
void pt_model_ev_far(u64 ip, u64 target, u8 cpl, enum ptm_mode mode);
/**
 * pt_model_ev_ptwrite() - pt_model_ev_insn() of a PTWRITE at @ip (next @next)
 * of @size bytes of @payload
 */
void pt_model_ev_ptwrite(u64 ip, u64 next, u64 payload, unsigned int size);

/** pt_model_ev_cycles() - @cycles core cycles pass (MTC, CYC, TSC) */
void pt_model_ev_cycles(u64 cycles);
/** pt_model_set_tsc() - set the model's TSC (and the crystal clock with it) */
void pt_model_set_tsc(u64 tsc);
/** pt_model_ev_pad() - @n PAD packets (alignment filler, as hardware may emit) */
void pt_model_ev_pad(unsigned int n);

/**
 * pt_model_ev_overflow_begin() - the internal packet buffer overflows: from
 * now on packet generation ceases (results already generated go out first)
 */
void pt_model_ev_overflow_begin(void);
/**
 * pt_model_ev_overflow_end() - the buffer drained: OVF, then FUP at the
 * current IP when PacketEn (or a PSB+ when the mode changed meanwhile)
 */
void pt_model_ev_overflow_end(void);

#endif
