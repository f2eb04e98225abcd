/* SPDX-License-Identifier: MIT */
/*
 * The translating trace engine (pt.step=translate): blocks of traced code are
 * copied into a per-CPU code cache and every change of flow rewritten to
 * record what the trace unit needs (a conditional's outcome, an indirect
 * target) in a per-CPU record buffer, with no trap. The engine hands the
 * records to the trace unit in batches (kernel/trace_engine/engine_dispatch.c).
 * See docs/trace-engine.md, "Translate".
 *
 * Invariants of one CPU's cache (struct xlat_cpu):
 * - Only its own CPU runs its code or writes its records; nothing here is
 *   shared, so nothing is locked.
 * - A block's body is the original instructions, byte for byte the same
 *   length (RIP-relative operands re-encoded), so an address in a body maps
 *   to the original instruction at the same offset. Its stub (the branch,
 *   rewritten) is after it; a record is published by its store to rec_ptr.
 * - Return addresses on the traced stack are original addresses: translated
 *   calls push them. No cache address is ever on the traced stack except
 *   transiently inside a stub or the runtime (xlat_rt.S).
 * - Records (16 bytes each: a word, and a target or payload) up to rec_read
 *   were handed to the trace unit; rec_ptr is reset to the start only where
 *   no stub holds it in a register (the runtime's calls, the engine's traps
 *   at an exit, the fault of a full buffer, which points the faulting stub's
 *   RCX at the start), never by an interrupt.
 */
#ifndef TOPAZ_XLAT_H
#define TOPAZ_XLAT_H

#include <topaz/types.h>
#include <topaz/pt_model.h>

#define XLAT_REGION_ORDER	9		/* 2 MiB per CPU: data, records, table, code */
#define XLAT_REC_BYTES		0x10000		/* record buffer: 4096 records of 16 bytes */
#define XLAT_BATCH_MAX		2048		/* records a batch at most (xlat_set_batch()) */
#define XLAT_TABLE_BITS		16		/* lookup table: original IP -> block */
#define XLAT_MAX_SITES		8192		/* blocks per cache fill */
#define XLAT_BLOCK_MAX		1024		/* instructions in one block */

/* How a block ends (struct xlat_site.kind). */
enum xlat_kind {
	XK_COND,	/* Jcc, JRCXZ, LOOP: taken or not */
	XK_JMP,		/* JMP rel */
	XK_CALL,	/* CALL rel32: the original return address pushed */
	XK_IND,		/* JMP, CALL r/m64, RET: the target looked up inline */
	XK_PTW,		/* PTWRITE r32/r64: the payload recorded */
	XK_EXIT,	/* an INT3 back to the engine: code it does not translate */
};

/* Why a block ends at an exit (counted, struct xlat_stats.exits). */
enum xlat_exit_why {
	XE_END,		/* pt_trace_end(): the window ends (not a fallback) */
	XE_FAR,		/* far transfers, IRET, SYSCALL/SYSRET, INT n, UD, XBEGIN */
	XE_FORM,	/* a form left to the CPU: operand-size prefix, RET imm16,
			 * PTWRITE from memory or RSP, 32-bit RIP-relative */
	XE_DECODE,	/* bytes that do not decode, or an INT3 not ours */
	XE_UNMAPPED,	/* code it cannot read */
	XE_RANGE,	/* a RIP-relative operand out of reach from the cache */
	XE_LONG,	/* more than XLAT_BLOCK_MAX instructions without a branch */
	XE_NR
};

/*
 * The branch that ends a block (or its exit): what a record of it means. A
 * record's word is the byte offset of one of its edges from the site table
 * (xlat_word()), as the trace unit's batches take them (pt_model_ev_edges()).
 */
struct xlat_site {
	struct ptm_edge edge[2];	/* per outcome: not taken, taken (one for
					 * the others; PTM_PTWRITE for XK_PTW) */
	u64 ip;			/* the branch (exit: the first instruction not run) */
	u64 start;		/* the block's first instruction */
	u64 next;		/* ip + its length */
	u64 target;		/* direct branches */
	u32 entry;		/* the block's code: offset in the region */
	u32 stub;		/* where the body ends and the stub begins */
	u32 end;		/* past the stub */
	u32 post[2][2];		/* per outcome: [from, to) offsets after its record
				 * is published, where the branch has retired */
	u32 link[2];		/* per outcome: the JMP rel32 to patch (0: none) */
	u32 linkstub[2][2];	/* ... and its link stub [from, to) */
	u32 inl[2][4];		/* XK_COND, per outcome: the inline TNT path's
				 * check, its Z (after the bit: the edge, then its
				 * retry), after its instruction count, after its
				 * bit; XLAT_INL_*.
				 * A direct JMP's or CALL's inline path: inl[0] its
				 * check, start, count, retired; inl[1][0] after its
				 * event count. A RET's: inl[0] its check, the
				 * compare's start, count, the pop (retired);
				 * inl[1][0] after its bit, inl[1][1] after the
				 * popped slot's poison (0: no inline path). A
				 * stub that records with the inline TNT whether
				 * armed or not (direct_path()): inl[1][2] the end
				 * of its turning off, from post[0][0] */
	union {
		u16 tip_at[2];	/* XK_IND: where its TIP written inline has
				 * retired, [from, to) from stub (0: none) */
		u16 fast_at[2];	/* XK_COND, per outcome, and XK_JMP, XK_CALL
				 * ([0]): its path that writes flags (fast_path(),
				 * plain_fast()), 1 + its offset from stub (0: none) */
	};
	u16 insns;		/* instructions a record counts (exit: the body's) */
	u16 ret_at;		/* a RET's path that keeps flags by PUSHF (ret_fast()),
				 * 1 + its offset from stub (0: none) */
	u8 kind, cls;		/* enum xlat_kind, enum ptm_class */
	u8 size;		/* PTWRITE: 4 or 8 */
	u8 why;			/* XK_EXIT: enum xlat_exit_why */
};

struct xlat_stats {
	u64 blocks, code_bytes, resets, links, misses, flushes, exits[XE_NR];
	u64 inline_tnt;		/* Jcc results the code put straight into the pending TNT */
	u64 tnt_direct;		/* ... full TNT packets it stored in the output itself */
	u64 inline_plain;	/* direct JMPs and CALLs it took with no record */
	u64 inline_tip;		/* TIPs of indirect branches it stored itself */
	u64 fast_paths;		/* Jcc outcomes whose stub writes flags (dead there) */
	u64 cond_paths;		/* ... of all Jcc outcomes translated with the inline TNT */
	u64 fast_plain;		/* direct JMPs and CALLs whose stub writes flags */
	u64 plain_paths;	/* ... of all translated inline */
	u64 fast_rets;		/* RETs with the path that pushes flags (ret_fast()) */
	u64 ret_paths;		/* ... of all compressed inline */
};

/*
 * The inline TNT: while armed, a Jcc's stub adds its block's instructions
 * to tnt_ins, doubles tnt_w and adds its bit (ADD, SHL or STC+RCL, the
 * flags dead at its target or pushed around them: fast_path(); LEA, no
 * flag written, in the path that goes on from there when off), with
 * no record; so does a RET's that the RET compression stack predicts (a 1,
 * the stack popped); a direct JMP's or CALL's adds its instructions and
 * counts its event in tnt_jc (a CALL's push on the stack). tnt_w starts as
 * a single 1 at bit 63 - room (room: pt_model_tnt_room()), so that the
 * result that fills the TNT packet moves it to bit 63: byte 7 is then
 * 0x80 (below that, at most 0x40), and the doubling's OF, bit 63 XOR
 * bit 62 before it, says so without a compare. That stub calls tnt_put
 * (below) or xlat_rt_flush.
 *
 * Off, byte 7 is XLAT_TNT_MARK: records are waiting, which must come
 * before any later result (a record stub turned it off), or the model
 * cannot take results now (XLAT_TNT_OFF). The results armed before it and
 * their instructions are then in tnt_keep and tnt_ins_keep (the stub that
 * turned it off copied them there); tnt_w's other bytes and tnt_ins hold
 * nothing. A Jcc's stub does not look first: it doubles tnt_w, and then
 * byte 7 says armed (at most 0x40: done), armed and full (0x80) or off
 * (XLAT_TNT_MARK doubled: it writes the mark again and a record); OF is
 * set for the last two. (Without flags: byte 7 times 3, its bits 8 and 9,
 * 0, 1 or 2: xlat_tnt_state().) The other stubs look at tnt_cnt, 0 only
 * when armed. Each record written while off counts in tnt_cnt: the one
 * that carries it past 0xff calls xlat_rt_flush instead, whose hand-over
 * arms it again if it can, and goes back to its check.
 */
#define XLAT_TNT_TOP		63
#define XLAT_TNT_B7		56	/* byte 7's shift in tnt_w */
#define XLAT_TNT_FULL		0x80	/* byte 7 when the packet is full */
#define XLAT_TNT_MARK		0x70	/* byte 7 while off: doubled, 0xe0 */
#define XLAT_TNT_OFF		((u64)XLAT_TNT_MARK << XLAT_TNT_B7)	/* tnt_w0: not armed */
#define XLAT_CNT_WAIT		0xc0	/* tnt_cnt: 64 records, then a hand-over */
#define XLAT_CNT_OFF		1	/* ... 255 records (the model could not take results) */
/*
 * The packet a Jcc fills goes into the output from the cache's code itself
 * (its tnt_put routine, xlat.c) when the trace unit allows it
 * (pt_model_tnt_direct(): armed for a whole packet, nothing else due): the
 * packet is tnt_w in the encoder's TNT-64 layout (xlat_tnt64_layout()),
 * stored at tnt_out while tnt_out + 8 stays below tnt_lim; the bytes from
 * tnt_out0 go to the model's account at the hand-over, before the results
 * still in tnt_w. tnt_lim 0: every full packet goes to the runtime.
 */
enum { XLAT_INL_CHECK, XLAT_INL_START, XLAT_INL_COUNTED, XLAT_INL_RETIRED };
#define XLAT_INL_Z	XLAT_INL_START	/* a Jcc's: where it goes on after its bit */
#define XLAT_Z_LEN	6		/* ... pop %rcx; jmp rel32, then its RETRY */

/* bytes of the ADD of a stub's instruction count to tnt_ins (imm8 or imm32) */
static inline u32 xlat_add_len(const struct xlat_site *s)
{
	return s->insns < 128 ? 8 : 11;
}

/*
 * The offsets in a Jcc's path that writes flags (fast_path()), from its
 * fast_at: its start, its check (after PUSHF where the flags are live),
 * after its count, after its bit (retired), its edge (the flags dead: the
 * JNO that takes it), Z, OFF, the mark (after POPF), and the path that
 * keeps flags (its check).
 */
#define XLAT_FAST_PUSHF		0x8000	/* fast_at: the flags pushed around it */
enum { XLAT_FAST_START, XLAT_FAST_CHECK, XLAT_FAST_COUNTED, XLAT_FAST_RETIRED, XLAT_FAST_EDGE,
       XLAT_FAST_Z, XLAT_FAST_OFF, XLAT_FAST_MARK, XLAT_FAST_KEEP, XLAT_FAST_NR };

static inline void xlat_fast_marks(const struct xlat_site *s, unsigned int taken, u32 m[XLAT_FAST_NR])
{
	const u32 pf = !!(s->fast_at[taken] & XLAT_FAST_PUSHF);

	m[XLAT_FAST_START] = s->stub + (s->fast_at[taken] & ~XLAT_FAST_PUSHF) - 1;
	m[XLAT_FAST_CHECK] = m[XLAT_FAST_START] + pf;
	m[XLAT_FAST_COUNTED] = m[XLAT_FAST_CHECK] + xlat_add_len(s);
	m[XLAT_FAST_RETIRED] = m[XLAT_FAST_COUNTED] + 7 + taken;
	if (pf) {
		m[XLAT_FAST_Z] = m[XLAT_FAST_RETIRED] + 16;
		m[XLAT_FAST_EDGE] = m[XLAT_FAST_Z] + 1;
		m[XLAT_FAST_OFF] = m[XLAT_FAST_EDGE] + 5;
	} else {
		m[XLAT_FAST_EDGE] = m[XLAT_FAST_RETIRED];
		m[XLAT_FAST_Z] = m[XLAT_FAST_EDGE] + 20;
		m[XLAT_FAST_OFF] = m[XLAT_FAST_Z] + 5;
	}
	m[XLAT_FAST_MARK] = m[XLAT_FAST_OFF] + pf;
	m[XLAT_FAST_KEEP] = m[XLAT_FAST_MARK] + 8;
}

/*
 * The offsets in a direct JMP's or CALL's path that writes flags
 * (plain_fast()), from its fast_at[0]: its check, after its armed test,
 * after its instruction count, after its event count (JC: a CALL's push
 * on the lent stack, RDX pushed for it, from PUSH), the push committed,
 * its edge, a CALL's UNDO (RDX popped, back to the check), OFF (the path
 * that keeps flags, from its push of RCX), and that path's check.
 */
enum { XLAT_PF_CHECK, XLAT_PF_START, XLAT_PF_COUNTED, XLAT_PF_JC, XLAT_PF_PUSH,
       XLAT_PF_PUSHED, XLAT_PF_RETIRED, XLAT_PF_UNDO, XLAT_PF_OFF, XLAT_PF_KEEP, XLAT_PF_NR };

static inline void xlat_plain_marks(const struct xlat_site *s, bool push, u32 m[XLAT_PF_NR])
{
	m[XLAT_PF_CHECK] = s->stub + s->fast_at[0] - 1;
	m[XLAT_PF_START] = m[XLAT_PF_CHECK] + 9;
	m[XLAT_PF_COUNTED] = m[XLAT_PF_START] + xlat_add_len(s);
	m[XLAT_PF_JC] = m[XLAT_PF_COUNTED] + 8;
	m[XLAT_PF_PUSH] = m[XLAT_PF_JC] + push;
	m[XLAT_PF_PUSHED] = m[XLAT_PF_PUSH] + (push ? 28 : 0);
	m[XLAT_PF_RETIRED] = m[XLAT_PF_PUSHED] + push;
	m[XLAT_PF_UNDO] = m[XLAT_PF_RETIRED] + 5;
	m[XLAT_PF_OFF] = m[XLAT_PF_UNDO] + (push ? 6 : 0);
	m[XLAT_PF_KEEP] = m[XLAT_PF_OFF] + 1 + push;
}

/*
 * The offsets in a RET's path with its flags pushed (ret_fast()), from its
 * ret_at: its start, its check (RCX, RDX pushed), the compare's end (a
 * match), after its instruction count, after its bit (its JO), after the
 * pop (retired; the popped slot not poisoned yet), after the poison; the
 * same two on the way where its bit filled the packet (FULL, from its
 * start), and OUT (no match or off: to the other path).
 */
enum { XLAT_RF_START, XLAT_RF_CHECK, XLAT_RF_HIT, XLAT_RF_COUNTED, XLAT_RF_BIT, XLAT_RF_RETIRED,
       XLAT_RF_POISONED, XLAT_RF_FULL, XLAT_RF_FULL_RETIRED, XLAT_RF_FULL_POISONED, XLAT_RF_OUT,
       XLAT_RF_NR };

static inline void xlat_ret_marks(const struct xlat_site *s, u32 m[XLAT_RF_NR])
{
	m[XLAT_RF_START] = s->stub + s->ret_at - 1;
	m[XLAT_RF_CHECK] = m[XLAT_RF_START] + 3;
	m[XLAT_RF_HIT] = m[XLAT_RF_CHECK] + 35;
	m[XLAT_RF_COUNTED] = m[XLAT_RF_HIT] + xlat_add_len(s);
	m[XLAT_RF_BIT] = m[XLAT_RF_COUNTED] + 8;
	m[XLAT_RF_RETIRED] = m[XLAT_RF_BIT] + 16;
	m[XLAT_RF_POISONED] = m[XLAT_RF_RETIRED] + 12;
	m[XLAT_RF_FULL] = m[XLAT_RF_POISONED] + 34;
	m[XLAT_RF_FULL_RETIRED] = m[XLAT_RF_FULL] + 14;
	m[XLAT_RF_FULL_POISONED] = m[XLAT_RF_FULL_RETIRED] + 12;
	m[XLAT_RF_OUT] = m[XLAT_RF_FULL_POISONED] + 7;
}

/*
 * One CPU's region. Its first words (rec_ptr, the inline TNT's) are read
 * and written by translated code (RIP-relative); the page they are in
 * holds no code (a store there must not make QEMU drop translated blocks).
 */
struct xlat_cpu {
	u64 rec_ptr;		/* where the next record goes */
	u64 dummy_key;		/* ~0: empty table slots point just past it */
	u64 dummy_entry;
	u64 tnt_w;		/* the inline TNT (above), written by the stubs */
	u64 tnt_cnt;		/* records while off (its low byte; 0: armed) */
	u64 tnt_ins;
	u64 tnt_keep, tnt_ins_keep;	/* tnt_w and tnt_ins when they turned off */
	u64 tnt_w0;		/* tnt_w as armed (XLAT_TNT_OFF: not) */
	u64 tnt_out, tnt_lim;	/* the full packets' output (above), written by tnt_put */
	u64 tnt_hdr;		/* what tnt_put ORs into tnt_w shifted (xlat_tnt64_layout()) */
	u64 tnt_out0;		/* tnt_out at the arming: the model knows up to there */
	u64 tip_lim;		/* tip_put's limit (0: every TIP to a record) */
	u64 tip_last;		/* the Last IP, lent (tip_put's TIPs) */
	u64 tip_hdr;		/* what tip_put ORs into a TNT-64's results shifted */
	u64 tip_n, tip_pk, tip_res, tnt_full;	/* since the arming (above) */
	u8 *tnt_put;		/* the routine (NULL: the runtime's flush) */
	u8 *tip_put, *tip_call;	/* the TIP routine, and its entry for an
				 * indirect CALL (NULL: no inline TIP) */
	u32 put_tail[4];	/* tnt_put's RET and its JMP to the runtime,
				 * tip_put's two RETs: an interrupt there goes
				 * on where the stub does */
	u32 put_end;		/* past their code */
	u64 tnt_jc;		/* direct JMPs and CALLs taken inline since the arming */
	u64 ret_to;		/* the last RET compressed inline: where it went */
	bool inline_tnt;	/* the Jcc stubs were made with the inline TNT */
	bool timed;		/* ... for timing packets: a direct JMP or CALL
				 * turns the inline TNT off (xlat_set_stubs()) */
	bool plain_inline;	/* direct JMP and CALL stubs go inline when armed */
	bool ret_inline;	/* RET stubs compress inline when armed */
	bool keep_flags;	/* only the stubs that keep flags without
				 * PUSHF (the paths taken while off; tests) */
	/*
	 * RET compression's stack, lent to this CPU's trace unit
	 * (pt_model_lend_retstack()): while armed, a CALL's stub pushes its
	 * return address and a RET's pops it when it matches (a TNT bit).
	 */
	struct ptm_retstack rs;
	u64 *rec_base, *rec_read;
	u8 *rec_guard;		/* the page after the records: not present */
	u64 *table;		/* 1 << XLAT_TABLE_BITS block entries, by the IP's low bits */
	u8 *region, *code, *code_cur, *code_end;
	struct xlat_site *sites;
	u32 nr_sites, max_sites;	/* XLAT_MAX_SITES (tests make it small) */
	bool stale;		/* code under some block changed: reset at the next translation */
	struct xlat_stats st;
};

/* Where @s's outcome @taken goes when it is known ahead (0: an indirect one's, in its record) */
static inline u64 xlat_edge_to(const struct xlat_site *s, unsigned int taken)
{
	return s->kind == XK_COND ? (taken ? s->target : s->next) :
	       s->kind == XK_IND ? 0 : s->kind == XK_PTW ? s->next : s->target;
}

/* A record's first word: @s (number @idx) and its outcome @taken, its cls and insns set */
static inline u32 xlat_word(const struct xlat_site *s, u32 idx, unsigned int taken)
{
	/* the edge as it will be made */
	const struct ptm_edge e = {
		.next = s->next, .cls = s->cls, .taken = (u8)taken, .insns = s->insns,
		.to = xlat_edge_to(s, taken),
	};

	return ptm_rec_word(idx * (u32)sizeof(struct xlat_site) + taken * (u32)sizeof(struct ptm_edge), &e);
}

/* The site a record's first word names */
static inline u32 xlat_word_site(u64 word)
{
	return ((u32)word & PTM_REC_EDGE) / (u32)sizeof(struct xlat_site);
}

/* the records' word holds an edge's offset and insns in their fields */
_Static_assert(sizeof(struct xlat_site) % 32 == 0 && sizeof(struct ptm_edge) == 32 &&
	       (u64)XLAT_MAX_SITES * sizeof(struct xlat_site) <= PTM_REC_EDGE + 32ull &&
	       XLAT_BLOCK_MAX + 1 <= PTM_REC_INSNS_MAX, "xlat_word() fields");

/* What a cache address stands for (xlat_where()). */
struct xlat_pos {
	u64 ip;			/* the original instruction there */
	struct xlat_site *site;
	u16 done;		/* body: instructions of the block before @ip */
	bool body;		/* in the body (an instruction boundary) */
	bool retired;		/* in a stub after its record: the branch ran, @ip its target */
	u32 rewind;		/* resume at this region offset instead: in an
				 * inline path before it retired, its check, having
				 * taken its instruction count back when @undo_ins,
				 * its event count when @undo_jc, its TNT bit when
				 * @undo_bit; retired, where its stub goes on (a
				 * Jcc's Z, a turning off's start) */
	bool undo_ins, undo_jc, undo_bit;
	bool rs_poison;		/* a RET popped inline, its slot not poisoned yet */
};

/**
 * xlat_cpu_init() - set up a region of (1 << XLAT_REGION_ORDER) pages at
 * @region (executable and writable) with room for @max_sites sites at @sites
 */
void xlat_cpu_init(struct xlat_cpu *x, u8 *region, struct xlat_site *sites);
/**
 * xlat_set_batch() - at most @records records a batch (16 up to the whole
 * buffer): the buffer starts that far before the guard page. Only between
 * windows (the buffer empty).
 */
void xlat_set_batch(struct xlat_cpu *x, unsigned int records);
/** xlat_reset() - forget every block (the records must have been handed on) */
void xlat_reset(struct xlat_cpu *x);
/**
 * xlat_invalidate() - the code at [@start, @end) changed (an image loaded
 * there): when a block came from it, every lookup misses from now on and the
 * next xlat_translate() empties the cache first. Blocks already linked to
 * each other still run until then: none of them can lead into new code but
 * through a lookup. Return: whether a block came from there.
 */
bool xlat_invalidate(struct xlat_cpu *x, u64 start, u64 end);
/** xlat_lookup() - the block at @ip, or NULL */
struct xlat_site *xlat_lookup(struct xlat_cpu *x, u64 ip);

/* What the translator needs from its surroundings (the engine gives it). */
struct xlat_env {
	/* the instruction at @ip: its bytes as the CPU would run them (our
	 * INT3s seen through); 0, -EFAULT unmapped, -EINVAL undecodable */
	int (*read)(u64 ip, u8 *bytes, struct x86_insn *in);
	u64 end_ip;		/* pt_trace_end: never translated, an exit */
	u64 rt_link, rt_lookup, rt_flush;	/* xlat_rt.S */
};

/**
 * xlat_translate() - the block at @ip, translated now if it is not yet
 * (the whole cache is reset first when it is full: records handed on before)
 * Return: its site (an exit when it cannot be translated), NULL when even an
 * exit does not fit (the cache was just reset).
 */
struct xlat_site *xlat_translate(struct xlat_cpu *x, const struct xlat_env *env, u64 ip);
/** xlat_entry() - where block @s starts in the cache */
static inline u64 xlat_entry(const struct xlat_cpu *x, const struct xlat_site *s)
{
	return (uintptr_t)x->region + s->entry;
}
/**
 * xlat_link() - the direct edge @id (site << 1 | outcome) is taken for the
 * first time: its target translated and its JMP pointed there
 * Return: the code address to go on at.
 */
u64 xlat_link(struct xlat_cpu *x, const struct xlat_env *env, u64 id);
/**
 * xlat_tnt_arm() - the inline TNT starts empty: armed for @room results
 * (1 to 47: the @room-th fills the packet), or off when 0. Only where no
 * stub is between its check and its bit (the caller's pos.rewind says so).
 */
static inline void xlat_tnt_arm(struct xlat_cpu *x, unsigned int room)
{
	x->tnt_w0 = room ? 1ull << (XLAT_TNT_TOP - room) : XLAT_TNT_OFF;
	x->tnt_w = x->tnt_w0;
	x->tnt_cnt = room ? 0 : XLAT_CNT_OFF;
	x->tnt_ins = 0;
	x->tnt_keep = x->tnt_ins_keep = 0;
	x->tnt_jc = 0;
	x->tnt_lim = 0;	/* full packets to the runtime, until xlat_tnt_arm_out() */
	x->tip_lim = 0;	/* ... and every TIP to a record */
	x->tip_n = x->tip_pk = x->tip_res = x->tnt_full = 0;
}
/**
 * xlat_tnt_state() - what byte 7 of @w just doubled says, as a stub without
 * flags reads it: 0 armed, 1 armed and the packet full, 2 off (the mark
 * doubled)
 */
static inline unsigned int xlat_tnt_state(u64 w)
{
	return (unsigned int)((w >> XLAT_TNT_B7) * 3) >> 8;
}
/** xlat_tnt_marked() - does @w hold the off mark, doubled or not (byte 7 0x70 or 0xe0)? */
static inline bool xlat_tnt_marked(u64 w)
{
	return ((w >> XLAT_TNT_B7) & 0x60) == 0x60;	/* armed: a single bit there, or none */
}
/** xlat_tnt_off() - is the inline TNT off (its results, if any, kept: above)? */
static inline bool xlat_tnt_off(const struct xlat_cpu *x)
{
	return xlat_tnt_marked(x->tnt_w);
}
/**
 * xlat_tnt_remark() - byte 7 the off mark again, the other bytes as they
 * are (a Jcc's stub while off writes it after its doubling)
 */
static inline void xlat_tnt_remark(struct xlat_cpu *x)
{
	x->tnt_w = (x->tnt_w & ((1ull << XLAT_TNT_B7) - 1)) | XLAT_TNT_OFF;
}
/** xlat_tnt_insns() - the instructions of the results written inline since the arming */
static inline u64 xlat_tnt_insns(const struct xlat_cpu *x)
{
	return xlat_tnt_off(x) ? x->tnt_ins_keep : x->tnt_ins;
}
/**
 * xlat_tnt_arm_out() - xlat_tnt_arm(), and when @room is a whole TNT-64,
 * the full packets straight into the output where the trace unit allows it
 * (pt_model_tnt_direct()). After a hand-over (xlat_tnt_hand_over()).
 */
void xlat_tnt_arm_out(struct xlat_cpu *x, unsigned int room);
/**
 * xlat_tip_layout() - the packets tip_put writes, read off the encoder
 * (ptpk_encode()) and checked against it: a TNT-8 of n results is the
 * byte w << 1, a TNT-64's 8 bytes are (w << @shift) | *@hdr (w: the
 * results, the newest lowest, with their stop bit above them); a TIP is
 * @tip[ipc] then the IP's low bytes, little-endian (2, 4, 6, 6 or 8 by
 * PTPK_IPC_UPDATE_16, _32, _48, SEXT_48, FULL). Return: false when not.
 */
bool xlat_tip_layout(u64 *hdr, unsigned int shift, u8 tip[5]);
/**
 * xlat_tnt64_layout() - a full TNT-64 packet (47 results) as the 8 bytes
 * of the little-endian word (w << *@shift) | *@hdr, w the inline TNT's
 * full word (the results in bits 46..0, the newest lowest; its own stop
 * bit, XLAT_TNT_TOP, shifted out), read off ptpk_encode_tnt64() and checked
 * against it. Return: false when it has no such layout.
 */
bool xlat_tnt64_layout(u64 *hdr, unsigned int *shift);
/** xlat_put_tail() - is @addr tnt_put's RET or its JMP to the runtime, or tip_put's RETs? */
static inline bool xlat_put_tail(const struct xlat_cpu *x, u64 addr)
{
	for (unsigned int i = 0; x->tnt_put && i < (x->tip_put ? 4u : 2u); i++)
		if (addr == (uintptr_t)x->region + x->put_tail[i])
			return true;
	return false;
}
/** xlat_tnt_wait() - the inline TNT off until some Jccs ask for it again (records are waiting) */
static inline void xlat_tnt_wait(struct xlat_cpu *x)
{
	xlat_tnt_arm(x, 0);
	x->tnt_cnt = XLAT_CNT_WAIT;
}
/**
 * xlat_tnt_taken() - the results written inline since the arming: their
 * number (0 when off), @bits the results (the oldest highest)
 */
unsigned int xlat_tnt_taken(const struct xlat_cpu *x, u64 *bits);
/**
 * xlat_tnt_hand_over() - the inline TNT's results to the trace unit: the
 * full packets the code stored (pt_model_tnt_direct_done()), then those in
 * tnt_w (pt_model_ev_tnt(), @to where the last went: 0 when unknown, only
 * when they do not fill the packet), their instructions added to *@insns;
 * off until armed again. Before any record waiting: they came first.
 * Return: how many results.
 */
unsigned int xlat_tnt_hand_over(struct xlat_cpu *x, u64 to, u64 *insns);
/**
 * xlat_set_stubs() - the Jcc stubs with the inline TNT (@inline_tnt) or
 * with records only, the trace unit sending timing packets (@timed) or
 * not, and compressing RETs (@retc) or not: the stubs made for another
 * choice go (the cache starts again empty). With the inline TNT, a RET's
 * stub compresses it inline (@retc), and without timing packets a direct
 * JMP's or CALL's stub goes inline too. Only where no stub runs, with
 * nothing waiting.
 */
static inline void xlat_set_stubs(struct xlat_cpu *x, bool inline_tnt, bool timed, bool retc)
{
	bool plain = inline_tnt && !timed, ret = inline_tnt && retc;

	timed = inline_tnt && timed;
	if (x->inline_tnt == inline_tnt && x->timed == timed && x->plain_inline == plain &&
	    x->ret_inline == ret)
		return;
	x->inline_tnt = inline_tnt;
	x->timed = timed;
	x->plain_inline = plain;
	x->ret_inline = ret;
	if (x->nr_sites)
		xlat_reset(x);
}
_Static_assert(sizeof(struct xlat_cpu) <= 4096, "the data page holds one CPU's words");
/** xlat_owns() - is @addr in @x's code? */
static inline bool xlat_owns(const struct xlat_cpu *x, u64 addr)
{
	return x && x->code && addr >= (uintptr_t)x->code && addr < (uintptr_t)x->code_cur;
}
/**
 * xlat_where() - what the code address @addr of @x stands for
 * Return: false when @addr is in no block.
 */
bool xlat_where(struct xlat_cpu *x, u64 addr, struct xlat_pos *pos);

#endif
