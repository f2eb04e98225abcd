// SPDX-License-Identifier: MIT
/*
 * The translator of pt.step=translate (see xlat.h): original code in, a block
 * of cache code out. No trap, no lock: the caller owns @x (its CPU's cache).
 *
 * The traced code must keep nothing below its stack pointer (no red zone:
 * the kernel is built -mno-red-zone, the MS ABI firmware uses has none).
 * Every stub keeps RFLAGS as the traced code left them (only MOV, LEA, PUSH,
 * POP, NOT, MOVZX, JRCXZ, LOOP and CALL, none of which writes a flag) and uses the
 * traced stack below its pointer only by pushing, as an interrupt would.
 */
#include <topaz/x86_insn.h>
#include <topaz/pt_model.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include "xlat.h"

#define STUB_MAX	320	/* bytes a stub may take, link stubs included */
#define TABLE_MASK	((1u << XLAT_TABLE_BITS) - 1)

/*
 * The region: the data page; the records, aligned to their size and followed
 * by a guard page (the store into it faults: the buffer is full); the table;
 * then code.
 */
#define OFF_RECS	XLAT_REC_BYTES
#define OFF_GUARD	(OFF_RECS + XLAT_REC_BYTES)
#define OFF_TABLE	(OFF_GUARD + PAGE_SIZE)
#define OFF_CODE	(OFF_TABLE + (8u << XLAT_TABLE_BITS))
#define REGION_SIZE	(PAGE_SIZE << XLAT_REGION_ORDER)

static void table_clear(struct xlat_cpu *x)
{
	for (u32 i = 0; i <= TABLE_MASK; i++)
		x->table[i] = (uintptr_t)&x->dummy_entry;
}

void xlat_reset(struct xlat_cpu *x)
{
	table_clear(x);
	x->code_cur = x->code;
	x->tnt_put = NULL;	/* made again first (xlat_translate()) */
	x->tip_put = x->tip_call = NULL;
	x->nr_sites = 0;
	x->st.resets++;
}

void xlat_cpu_init(struct xlat_cpu *x, u8 *region, struct xlat_site *sites)
{
	memset(x, 0, sizeof(*x));
	x->region = region;
	x->rec_base = x->rec_read = (u64 *)(region + OFF_RECS);
	x->rec_ptr = (uintptr_t)x->rec_base;
	x->rec_guard = region + OFF_GUARD;
	x->table = (u64 *)(region + OFF_TABLE);
	x->code = x->code_cur = region + OFF_CODE;
	x->code_end = region + REGION_SIZE;
	x->sites = sites;
	x->max_sites = XLAT_MAX_SITES;
	x->dummy_key = ~0ull;	/* no target is -1: an empty slot never matches */
	ptm_rs_reset(&x->rs);
	xlat_tnt_arm(x, 0);
	table_clear(x);
}

unsigned int xlat_tnt_taken(const struct xlat_cpu *x, u64 *bits)
{
	/* off: the results before it, as the stub that turned it off kept them */
	u64 w = xlat_tnt_off(x) ? x->tnt_keep : x->tnt_w;
	unsigned int s0, pos;

	*bits = 0;
	/* a mark in what was kept holds nothing (the stub kept what an
	 * interrupt had left); armed, the stop bit is the highest */
	if (x->tnt_w0 == XLAT_TNT_OFF || xlat_tnt_marked(w) || !w)
		return 0;
	s0 = (unsigned int)__builtin_ctzll(x->tnt_w0);
	pos = 63u - (unsigned int)__builtin_clzll(w);
	if (pos <= s0)
		return 0;
	*bits = w & ((1ull << (pos - s0)) - 1);
	return pos - s0;
}

unsigned int xlat_tnt_hand_over(struct xlat_cpu *x, u64 to, u64 *insns)
{
	u64 bits;
	const struct ptm_direct d = {
		.bytes = x->tnt_out - x->tnt_out0, .full = x->tnt_full,
		.tnt = x->tip_pk, .res = x->tip_res, .tips = x->tip_n, .last_ip = x->tip_last,
	};
	unsigned int n = xlat_tnt_taken(x, &bits);
	unsigned int all = n + (unsigned int)(d.full * PTPK_TNT64_MAX + d.res);
	u64 jc = x->tnt_jc;	/* 0 unless armed: xlat_tnt_arm() zeroes it */

	if (d.bytes) {
		/* the packets came before the results still in tnt_w */
		pt_model_tnt_direct_done(&d, to);
		x->tnt_out0 = x->tnt_out;
		x->st.tnt_direct += d.full;
	}
	/* their events' time before a packet the last result may fill */
	pt_model_ev_plain(jc, n ? 0 : to);
	if (n)
		pt_model_ev_tnt(bits, n, to);
	if (all || jc || d.tips) {
		*insns += xlat_tnt_insns(x);
		x->st.inline_tnt += all;
		x->st.inline_plain += jc;
		x->st.inline_tip += d.tips;
	}
	xlat_tnt_arm(x, 0);	/* until armed again */
	return all + (unsigned int)(jc + d.tips);
}

void xlat_tnt_arm_out(struct xlat_cpu *x, unsigned int room)
{
	u64 out_room;
	u8 *out;

	xlat_tnt_arm(x, room);
	if (room != PTPK_TNT64_MAX || !x->tnt_put)
		return;
	out = pt_model_tnt_direct(&out_room);
	if (!out)
		return;
	x->tnt_out = x->tnt_out0 = (uintptr_t)out;
	x->tnt_lim = (uintptr_t)out + out_room;
	if (x->tip_put) {
		x->tip_last = pt_model_last_ip();
		x->tip_lim = x->tnt_lim;
	}
}

bool xlat_tnt64_layout(u64 *hdr, unsigned int *shift)
{
	static const u64 tries[] = { 0, 0x5a5a5a5a5a5aull, ~0ull };
	u8 buf[PTPK_MAX_SIZE];
	u64 one, w, v;

	if (ptpk_encode_tnt64(buf, PTPK_TNT64_MAX, 0) != 8)
		return false;
	memcpy(hdr, buf, 8);	/* the header and the stop bit: no result set */
	ptpk_encode_tnt64(buf, PTPK_TNT64_MAX, 1);
	memcpy(&one, buf, 8);
	if (!(one ^ *hdr))
		return false;
	*shift = (unsigned int)__builtin_ctzll(one ^ *hdr);	/* where the newest result goes */
	/* w: the results in its low 47 bits, the newest lowest, its stop bit
	 * at XLAT_TNT_TOP shifted out; checked as the encoder makes it */
	for (unsigned int i = 0; i < ARRAY_SIZE(tries); i++) {
		u64 bits = tries[i] & ((1ull << PTPK_TNT64_MAX) - 1);

		ptpk_encode_tnt64(buf, PTPK_TNT64_MAX, bits);
		memcpy(&v, buf, 8);
		w = 1ull << XLAT_TNT_TOP | bits;
		if (v != ((w << *shift) | *hdr))
			return false;
	}
	return true;
}

void xlat_set_batch(struct xlat_cpu *x, unsigned int records)
{
	records = max(records, 16u);
	records = min(records, (unsigned int)(XLAT_REC_BYTES / 16));
	x->rec_base = x->rec_read = (u64 *)(x->rec_guard - records * 16u);
	x->rec_ptr = (uintptr_t)x->rec_base;
}

bool xlat_invalidate(struct xlat_cpu *x, u64 start, u64 end)
{
	for (u32 i = 0; i < x->nr_sites; i++) {
		const struct xlat_site *s = &x->sites[i];

		if (s->start < end && max(s->next, s->start + 1) > start) {
			table_clear(x);
			x->stale = true;
			return true;
		}
	}
	return false;
}

struct xlat_site *xlat_lookup(struct xlat_cpu *x, u64 ip)
{
	u64 e = x->table[ip & TABLE_MASK], key;

	if (e == (uintptr_t)&x->dummy_entry)
		return NULL;
	memcpy(&key, (const void *)(uintptr_t)(e - 8), 8);	/* unaligned */
	if (key != ip)
		return NULL;
	/* the entry's site: the sites are in code order, search them */
	for (u32 lo = 0, hi = x->nr_sites; lo < hi;) {
		u32 mid = (lo + hi) / 2;
		u64 a = xlat_entry(x, &x->sites[mid]);

		if (a == e)
			return &x->sites[mid];
		if (a < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---------------------------------------------------------------- emitting */

struct emit {
	u8 *p, *start;
	struct xlat_cpu *x;
	bool far;	/* a rel8 patched out of its reach (patch8()): the code is not used */
};

static inline void b1(struct emit *e, u8 v) { *e->p++ = v; }
static void bn(struct emit *e, const void *v, size_t n) { memcpy(e->p, v, n); e->p += n; }
static inline void b4(struct emit *e, u32 v) { bn(e, &v, 4); }
static inline void b8(struct emit *e, u64 v) { bn(e, &v, 8); }
static inline u32 off(const struct emit *e, const u8 *p) { return (u32)(p - e->x->region); }
static inline u32 here(const struct emit *e) { return off(e, e->p); }

/* A rel32 field at @at (its instruction ends right after it) to @to. */
static bool put_rel32(u8 *at, u64 to)
{
	s64 d = (s64)(to - ((uintptr_t)at + 4));

	s32 v = (s32)d;

	if (d != v)
		return false;
	memcpy(at, &v, 4);	/* unaligned */
	return true;
}

/* MOV or LEA with a RIP-relative operand: opcode bytes, then rel32 to @to. */
static bool rip_op(struct emit *e, const u8 *op, size_t n, u64 to)
{
	bn(e, op, n);
	e->p += 4;
	return put_rel32(e->p - 4, to);
}

/* rip_op() with an immediate of @isz bytes after the rel32 */
static bool rip_imm(struct emit *e, const u8 *op, size_t n, u64 to, u32 imm, unsigned int isz)
{
	bn(e, op, n);
	e->p += 4;
	bn(e, &imm, isz);
	return put_rel32(e->p - 4 - isz, to - isz);
}

static bool jmp_to(struct emit *e, u64 to)
{
	b1(e, 0xe9);
	e->p += 4;
	return put_rel32(e->p - 4, to);
}

/* movb $@v, @at(%rip) */
static bool mov_b(struct emit *e, u64 at, u8 v)
{
	bn(e, (const u8[]){ 0xc6, 0x05 }, 2);
	e->p += 4;
	b1(e, v);
	/* rel32 counts from the end of the instruction, the imm8 after it */
	return put_rel32(e->p - 5, at - 1);
}

/*
 * Armed, now off (RCX free): a record is waiting, so later results wait
 * too, in order, until enough records ask for the arming again (xlat.h).
 * The results so far are kept first.
 *
 *	mov tnt_w(%rip),%rcx; mov %rcx,tnt_keep(%rip)
 *	mov tnt_ins(%rip),%rcx; mov %rcx,tnt_ins_keep(%rip)
 *	movb $XLAT_TNT_MARK,tnt_w+7(%rip); movb $XLAT_CNT_WAIT,tnt_cnt(%rip)
 */
static bool tnt_turn_off(struct emit *e)
{
	static const u8 ld[] = { 0x48, 0x8b, 0x0d }, st[] = { 0x48, 0x89, 0x0d };
	struct xlat_cpu *x = e->x;
	bool ok;

	ok = rip_op(e, ld, 3, (uintptr_t)&x->tnt_w);
	ok &= rip_op(e, st, 3, (uintptr_t)&x->tnt_keep);
	ok &= rip_op(e, ld, 3, (uintptr_t)&x->tnt_ins);
	ok &= rip_op(e, st, 3, (uintptr_t)&x->tnt_ins_keep);
	ok &= mov_b(e, (uintptr_t)&x->tnt_w + 7, XLAT_TNT_MARK);
	return ok && mov_b(e, (uintptr_t)&x->tnt_cnt, XLAT_CNT_WAIT);
}

/* movzbl tnt_cnt(%rip),%ecx: 0 when armed */
static bool tnt_load(struct emit *e)
{
	return rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x0d }, 3, (uintptr_t)&e->x->tnt_cnt);
}

/* cmpb $0,tnt_cnt(%rip): ZF when armed (the stubs that write flags) */
static bool tnt_test(struct emit *e)
{
	return rip_imm(e, (const u8[]){ 0x80, 0x3d }, 2, (uintptr_t)&e->x->tnt_cnt, 0, 1);
}

/* tnt_load(); jrcxz <patched>: the rel8's address */
static u8 *tnt_check(struct emit *e, bool *ok)
{
	*ok &= tnt_load(e);
	b1(e, 0xe3);
	return e->p++;
}

/* The rel8 @d; out of its reach, @e's code is not used (emit.far) */
static inline u8 rel8(struct emit *e, long d)
{
	e->far |= d < -128 || d > 127;
	return (u8)d;
}

static inline void patch8(struct emit *e, u8 *rel)
{
	*rel = rel8(e, e->p - (rel + 1));
}

/* jmp @to, emitted already (back), by its rel8 */
static inline void jmp8(struct emit *e, const u8 *to)
{
	b1(e, 0xeb);
	b1(e, rel8(e, to - (e->p + 1)));
}

/*
 * After a record that a stub writes whether armed or not (direct_path(): a
 * PTWRITE, and with timing packets a direct JMP or CALL, whose event's time
 * must not come after results that followed it): when armed, off (RCX
 * free). An event in it starts it again (xlat_where(): the arming may have
 * changed, and a copy half made would keep results handed over already).
 *
 *	movzbl tnt_cnt(%rip),%ecx; jrcxz ARMED; jmp DONE
 * ARMED: <tnt_turn_off()>
 * DONE:
 */
static bool tnt_off_if_armed(struct emit *e)
{
	bool ok = true;
	u8 *j_armed = tnt_check(e, &ok), *j_done;

	b1(e, 0xeb);							/* jmp DONE */
	j_done = e->p++;
	patch8(e, j_armed);
	ok &= tnt_turn_off(e);
	patch8(e, j_done);
	return ok;
}

/* What a record's second word is. */
enum second { SEC_NONE, SEC_RAX, SEC_REG };

/*
 * Append a record (16 bytes): @word (site << 1 | outcome), then RAX or
 * general register @reg. RCX is the caller's (pushed): it is the pointer
 * here. The record is published by the store to rec_ptr; *@commit is the
 * offset after it. No bound check: a full buffer ends at the guard page, the
 * first store faults, and the engine hands the records on and points RCX at
 * the start again before the store is retried (xlat_full()).
 */
static bool record(struct emit *e, u32 word, enum second sec, unsigned int reg, u32 *commit)
{
	static const u8 ld[] = { 0x48, 0x8b, 0x0d }, st[] = { 0x48, 0x89, 0x0d };
	bool ok = true;

	ok &= rip_op(e, ld, 3, (uintptr_t)&e->x->rec_ptr);		/* mov rec_ptr(%rip),%rcx */
	bn(e, (const u8[]){ 0x48, 0xc7, 0x01 }, 3);			/* movq $word,(%rcx): may fault */
	b4(e, word);
	if (sec == SEC_RAX) {
		bn(e, (const u8[]){ 0x48, 0x89, 0x41, 0x08 }, 4);	/* mov %rax,8(%rcx) */
	} else if (sec == SEC_REG && reg == 1) {
		/* RCX's own value is the one pushed: through RAX */
		bn(e, (const u8[]){ 0x50, 0x48, 0x8b, 0x44, 0x24, 0x08,	/* push %rax; mov 8(%rsp),%rax */
				    0x48, 0x89, 0x41, 0x08, 0x58 }, 11);	/* mov %rax,8(%rcx); pop %rax */
	} else if (sec == SEC_REG) {
		b1(e, (u8)(0x48 | ((reg & 8) >> 1)));			/* mov %reg,8(%rcx) */
		b1(e, 0x89);
		b1(e, (u8)(0x41 | ((reg & 7) << 3)));
		b1(e, 0x08);
	}
	bn(e, (const u8[]){ 0x48, 0x8d, 0x49, 0x10 }, 4);		/* lea 16(%rcx),%rcx */
	ok &= rip_op(e, st, 3, (uintptr_t)&e->x->rec_ptr);		/* mov %rcx,rec_ptr(%rip): published */
	*commit = here(e);
	return ok;
}

/*
 * A direct edge (@s's outcome @taken) to @to: chained when @to is
 * translated, else through a link stub emitted later (link_stubs()).
 */
static bool edge(struct emit *e, struct xlat_site *s, unsigned int taken, u64 to)
{
	struct xlat_site *t = xlat_lookup(e->x, to);

	s->link[taken] = here(e) + 1;
	if (t) {
		s->link[taken] = 0;
		return jmp_to(e, xlat_entry(e->x, t));
	}
	b1(e, 0xe9);
	e->p += 4;	/* filled by link_stubs() */
	return true;
}

/*
 * A Jcc's outcome whose path has its flags dead takes its edge by its JNO
 * too (fast_path()), linked with the other path's JMP (s->link, at its Z):
 * the JNO's rel32, 0 when none.
 */
static u32 fast_jno(const struct xlat_site *s, unsigned int taken)
{
	u32 m[XLAT_FAST_NR];

	if (s->kind != XK_COND || !s->fast_at[taken] || (s->fast_at[taken] & XLAT_FAST_PUSHF))
		return 0;
	xlat_fast_marks(s, taken, m);
	return m[XLAT_FAST_EDGE] + 2;
}

static bool link_stubs(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx)
{
	const u32 jno[2] = { fast_jno(s, 0), fast_jno(s, 1) };
	bool ok = true;

	for (unsigned int i = 0; i < 2; i++) {
		u32 jmp = s->inl[i][XLAT_INL_Z] + 2;	/* pop %rcx; jmp */
		s32 rel;

		if (!jno[i])
			continue;
		memcpy(&rel, e->x->region + jmp, 4);
		ok &= put_rel32(e->x->region + jno[i], (uintptr_t)e->x->region + jmp + 4 + rel);
	}

	for (unsigned int i = 0; i < 2; i++) {
		if (!s->link[i])
			continue;
		s->linkstub[i][0] = here(e);
		ok &= put_rel32(e->x->region + s->link[i], (uintptr_t)e->p);
		if (jno[i])
			ok &= put_rel32(e->x->region + jno[i], (uintptr_t)e->p);
		b1(e, 0x68);						/* push $id */
		b4(e, idx << 1 | i);
		ok &= jmp_to(e, env->rt_link);
		s->linkstub[i][1] = here(e);
	}
	return ok;
}

/*
 * A path that records @word and goes to @to by a direct edge; with the
 * inline TNT, it turns it off when armed (tnt_off_if_armed(): from
 * post[taken][0] to inl[1][2], which an event starts again).
 */
static bool direct_path(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx,
			unsigned int taken, u64 to, enum second sec, unsigned int reg)
{
	bool ok;

	(void)env;
	b1(e, 0x51);							/* push %rcx */
	ok = record(e, xlat_word(s, idx, taken), sec, reg, &s->post[taken][0]);
	if (e->x->inline_tnt) {
		ok &= tnt_off_if_armed(e);
		s->inl[1][2] = here(e);
	}
	b1(e, 0x59);							/* pop %rcx */
	ok &= edge(e, s, taken, to);
	s->post[taken][1] = here(e);
	return ok;
}

/*
 * tnt_put, at the start of an empty cache's code (xlat.h): called by a Jcc
 * stub whose bit filled the packet (it keeps every register: fast_path()
 * calls it with none pushed). When
 * the trace unit allowed it (tnt_lim) and the packet ends below tnt_lim, it
 * stores the packet at tnt_out and starts the inline TNT again; else it goes
 * to the runtime's flush, the stub's return address on top as it expects.
 *
 *	pushfq; cli; push %rax; push %rcx
 *	mov tnt_out(%rip),%rax; lea 8(%rax),%rax; cmp tnt_lim(%rip),%rax; jae SLOW
 *	mov tnt_w(%rip),%rcx; shl $shift,%rcx; or tnt_hdr(%rip),%rcx; mov %rcx,-8(%rax)
 *	mov %rax,tnt_out(%rip); mov tnt_w0(%rip),%rcx; mov %rcx,tnt_w(%rip)
 *	incq tnt_full(%rip); pop %rcx; pop %rax; popfq
 * RET:	ret
 * SLOW: pop %rcx; pop %rax; popfq
 * JMP:	jmp rt_flush
 *
 * Interrupts wait until RET or JMP (put_tail): the stub's place then. (Host
 * tests run it in user space, where CLI faults: a NOP there.)
 */
static bool emit_tnt_put(struct emit *e, const struct xlat_env *env)
{
	static const u8 ld_rax[] = { 0x48, 0x8b, 0x05 }, st_rax[] = { 0x48, 0x89, 0x05 },
			cmp_rax[] = { 0x48, 0x3b, 0x05 }, ld_rcx[] = { 0x48, 0x8b, 0x0d },
			st_rcx[] = { 0x48, 0x89, 0x0d }, or_rcx[] = { 0x48, 0x0b, 0x0d };
	struct xlat_cpu *x = e->x;
	unsigned int shift;
	u8 *slow, *put = e->p;
	bool ok;

	x->tnt_put = NULL;
	if (!xlat_tnt64_layout(&x->tnt_hdr, &shift))
		return true;	/* every full packet to the runtime */
#ifdef TOPAZ_HOSTED
	bn(e, (const u8[]){ 0x9c, 0x90, 0x50, 0x51 }, 4);		/* pushfq; nop; push %rax; push %rcx */
#else
	bn(e, (const u8[]){ 0x9c, 0xfa, 0x50, 0x51 }, 4);		/* pushfq; cli; push %rax; push %rcx */
#endif
	ok = rip_op(e, ld_rax, 3, (uintptr_t)&x->tnt_out);
	bn(e, (const u8[]){ 0x48, 0x8d, 0x40, 0x08 }, 4);		/* lea 8(%rax),%rax */
	ok &= rip_op(e, cmp_rax, 3, (uintptr_t)&x->tnt_lim);
	b1(e, 0x73);							/* jae SLOW */
	slow = e->p++;
	ok &= rip_op(e, ld_rcx, 3, (uintptr_t)&x->tnt_w);
	bn(e, (const u8[]){ 0x48, 0xc1, 0xe1, (u8)shift }, 4);		/* shl $shift,%rcx */
	ok &= rip_op(e, or_rcx, 3, (uintptr_t)&x->tnt_hdr);
	bn(e, (const u8[]){ 0x48, 0x89, 0x48, 0xf8 }, 4);		/* mov %rcx,-8(%rax) */
	ok &= rip_op(e, st_rax, 3, (uintptr_t)&x->tnt_out);
	ok &= rip_op(e, ld_rcx, 3, (uintptr_t)&x->tnt_w0);
	ok &= rip_op(e, st_rcx, 3, (uintptr_t)&x->tnt_w);
	ok &= rip_op(e, (const u8[]){ 0x48, 0xff, 0x05 }, 3, (uintptr_t)&x->tnt_full); /* incq tnt_full(%rip) */
	bn(e, (const u8[]){ 0x59, 0x58, 0x9d }, 3);			/* pop %rcx; pop %rax; popfq */
	x->put_tail[0] = here(e);
	b1(e, 0xc3);							/* ret */
	*slow = (u8)(e->p - (slow + 1));
	bn(e, (const u8[]){ 0x59, 0x58, 0x9d }, 3);			/* SLOW: pop %rcx; pop %rax; popfq */
	x->put_tail[1] = here(e);
	ok &= jmp_to(e, env->rt_flush);
	x->put_end = here(e);
	if (ok)
		x->tnt_put = put;
	return ok;
}

bool xlat_tip_layout(u64 *hdr, unsigned int shift, u8 tip[5])
{
	static const enum ptpk_ipc ipcs[5] = { PTPK_IPC_UPDATE_16, PTPK_IPC_UPDATE_32, PTPK_IPC_UPDATE_48,
					       PTPK_IPC_SEXT_48, PTPK_IPC_FULL };
	static const u64 tries[] = { 0, 0x5a5a5a5a5a5aull, ~0ull };
	static const u64 ips[] = { 0xffff800012345678ull, 0x00007fffa5c3e1f0ull };
	u8 buf[PTPK_MAX_SIZE];

	*hdr &= (1ull << shift) - 1;	/* the header's bytes: no stop bit */
	for (unsigned int n = 1; n < PTPK_TNT64_MAX; n++) {
		for (unsigned int i = 0; i < ARRAY_SIZE(tries); i++) {
			u64 bits = tries[i] & ((1ull << n) - 1), w = 1ull << n | bits, v;
			struct ptpk t = { .type = PTPK_TNT8, .tnt = { .nbits = (u8)n, .bits = bits } };

			/* as the model sends them (ptm_tnt_packet()): TNT-8 when they fit */
			if (n <= PTPK_TNT8_MAX) {
				if (ptpk_encode(&t, buf) != 1 || buf[0] != (u8)(w << 1))
					return false;
				continue;
			}
			if (ptpk_encode_tnt64(buf, n, bits) != 8)
				return false;
			memcpy(&v, buf, 8);
			if (v != ((w << shift) | *hdr))
				return false;
		}
	}
	for (unsigned int k = 0; k < 5; k++) {
		for (unsigned int i = 0; i < ARRAY_SIZE(ips); i++) {
			struct ptpk t = { .type = PTPK_TIP, .ip = { .ipc = ipcs[k], .ip = ips[i] } };
			const int len = ptpk_ip_bytes(ipcs[k]);

			if (ptpk_encode(&t, buf) != 1 + len || (i && buf[0] != tip[k]) ||
			    memcmp(buf + 1, &ips[i], (size_t)len))
				return false;
			tip[k] = buf[0];
		}
	}
	return true;
}

/*
 * tip_put, after tnt_put (xlat.h): called by an indirect branch's stub while
 * armed, its target T in RAX, its instructions in RCX (RCX and RDX free: the
 * stub pushed them), and at tip_call by an indirect CALL's, its return
 * address in RDX. With room short of tip_lim it sends the pending results
 * and T's TIP, adds the instructions, pushes RDX onto the lent stack
 * (tip_call) and returns past the 2-byte JMP after the stub's CALL; else
 * it returns to that JMP (the stub's record) having done nothing.
 *
 * CALL:	pushfq; cli; push %rsi; push %rdi
 *	mov tnt_out(%rip),%rsi; lea 17(%rsi),%rsi; cmp tip_lim(%rip),%rsi; jae SLOW
 *	movzbl top4(%rip),%esi; add $4,%sil; mov %sil,top4(%rip)
 *	lea slot(%rip),%rdi; mov %rdx,(%rdi,%rsi,2); jmp BODY
 * PUT:	<the same four and check>
 * BODY: add %rcx,tnt_ins(%rip); mov tnt_out(%rip),%rdi
 *	mov tnt_w(%rip),%rcx; cmp tnt_w0(%rip),%rcx; je TIP
 *	bsr %rcx,%rsi; btc %rsi,%rcx; sub $s0,%esi; bts %rsi,%rcx	(n results, their stop bit at n)
 *	add %rsi,tip_res(%rip); incq tip_pk(%rip)
 *	cmp $6,%esi; ja LONG
 *	add %rcx,%rcx; mov %cl,(%rdi); lea 1(%rdi),%rdi; jmp EMPTY	TNT-8
 * LONG: shl $shift,%rcx; or tip_hdr(%rip),%rcx; mov %rcx,(%rdi); lea 8(%rdi),%rdi
 * EMPTY: mov tnt_w0(%rip),%rcx; mov %rcx,tnt_w(%rip)
 * TIP:	mov %rax,%rcx; xor tip_last(%rip),%rcx; mov %rax,tip_last(%rip)
 *	shr $16,%rcx; jz I16; shr $16,%rcx; jz I32; shr $16,%rcx; jz I48
 *	mov %rax,%rcx; shl $16,%rcx; sar $16,%rcx; cmp %rax,%rcx; je SEXT
 *	movb $FULL,(%rdi); mov %rax,1(%rdi); lea 9(%rdi),%rdi; jmp DONE
 * I16:	movb $U16,(%rdi); mov %ax,1(%rdi); lea 3(%rdi),%rdi; jmp DONE
 * I32:	movb $U32,(%rdi); mov %eax,1(%rdi); lea 5(%rdi),%rdi; jmp DONE
 * SEXT: movb $SEXT,(%rdi); jmp W48
 * I48:	movb $U48,(%rdi)
 * W48:	mov %rax,1(%rdi); lea 7(%rdi),%rdi	(2 bytes scribbled past it)
 * DONE: mov %rdi,tnt_out(%rip); incq tip_n(%rip); addq $2,24(%rsp)
 *	pop %rdi; pop %rsi; popfq
 * RET:	ret
 * SLOW: pop %rdi; pop %rsi; popfq
 * RET:	ret
 *
 * Its compression is ptpk_ip_compress()'s, the bytes the encoder's
 * (xlat_tip_layout()). Interrupts wait until a RET (put_tail).
 */
static bool emit_tip_put(struct emit *e)
{
	struct xlat_cpu *x = e->x;
	const unsigned int s0 = XLAT_TNT_TOP - PTPK_TNT64_MAX;	/* armed for a whole packet */
	unsigned int shift;
	u8 tip[5], *j_slow[2], *j_body, *j_tip, *j_long, *j_empty, *j_done[4], *j_w48, *j_ip[4];
	u64 hdr;
	bool ok;

	x->tip_put = x->tip_call = NULL;
	if (!xlat_tnt64_layout(&hdr, &shift) || !xlat_tip_layout(&hdr, shift, tip))
		return true;	/* every TIP to a record */
	x->tip_hdr = hdr;
	ok = true;
	for (unsigned int k = 0; k < 2; k++) {
		if (k)
			x->tip_put = e->p;
		else
			x->tip_call = e->p;
#ifdef TOPAZ_HOSTED
		bn(e, (const u8[]){ 0x9c, 0x90, 0x56, 0x57 }, 4);	/* pushfq; nop; push %rsi; push %rdi */
#else
		bn(e, (const u8[]){ 0x9c, 0xfa, 0x56, 0x57 }, 4);	/* pushfq; cli; push %rsi; push %rdi */
#endif
		ok &= rip_op(e, (const u8[]){ 0x48, 0x8b, 0x35 }, 3, (uintptr_t)&x->tnt_out);
		bn(e, (const u8[]){ 0x48, 0x8d, 0x76, 0x11 }, 4);	/* lea 17(%rsi),%rsi */
		ok &= rip_op(e, (const u8[]){ 0x48, 0x3b, 0x35 }, 3, (uintptr_t)&x->tip_lim);
		bn(e, (const u8[]){ 0x0f, 0x83 }, 2);			/* jae SLOW */
		e->p += 4;
		j_slow[k] = e->p - 4;
		if (k)
			break;
		ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x35 }, 3, (uintptr_t)&x->rs.top4);
		bn(e, (const u8[]){ 0x40, 0x80, 0xc6, 0x04 }, 4);	/* add $4,%sil */
		ok &= rip_op(e, (const u8[]){ 0x40, 0x88, 0x35 }, 3, (uintptr_t)&x->rs.top4);
		ok &= rip_op(e, (const u8[]){ 0x48, 0x8d, 0x3d }, 3, (uintptr_t)x->rs.slot);
		bn(e, (const u8[]){ 0x48, 0x89, 0x14, 0x77, 0xeb }, 5);	/* mov %rdx,(%rdi,%rsi,2); jmp BODY */
		j_body = e->p++;
	}
	patch8(e, j_body);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x01, 0x0d }, 3, (uintptr_t)&x->tnt_ins);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x8b, 0x3d }, 3, (uintptr_t)&x->tnt_out);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x8b, 0x0d }, 3, (uintptr_t)&x->tnt_w);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x3b, 0x0d }, 3, (uintptr_t)&x->tnt_w0);
	b1(e, 0x74);							/* je TIP */
	j_tip = e->p++;
	bn(e, (const u8[]){ 0x48, 0x0f, 0xbd, 0xf1,			/* bsr %rcx,%rsi */
			    0x48, 0x0f, 0xbb, 0xf1,			/* btc %rsi,%rcx */
			    0x83, 0xee, (u8)s0,				/* sub $s0,%esi */
			    0x48, 0x0f, 0xab, 0xf1 }, 15);		/* bts %rsi,%rcx */
	ok &= rip_op(e, (const u8[]){ 0x48, 0x01, 0x35 }, 3, (uintptr_t)&x->tip_res);
	ok &= rip_op(e, (const u8[]){ 0x48, 0xff, 0x05 }, 3, (uintptr_t)&x->tip_pk);
	bn(e, (const u8[]){ 0x83, 0xfe, PTPK_TNT8_MAX, 0x77 }, 4);	/* cmp $6,%esi; ja LONG */
	j_long = e->p++;
	bn(e, (const u8[]){ 0x48, 0x01, 0xc9, 0x88, 0x0f,		/* add %rcx,%rcx; mov %cl,(%rdi) */
			    0x48, 0x8d, 0x7f, 0x01, 0xeb }, 10);	/* lea 1(%rdi),%rdi; jmp EMPTY */
	j_empty = e->p++;
	patch8(e, j_long);
	bn(e, (const u8[]){ 0x48, 0xc1, 0xe1, (u8)shift }, 4);		/* LONG: shl $shift,%rcx */
	ok &= rip_op(e, (const u8[]){ 0x48, 0x0b, 0x0d }, 3, (uintptr_t)&x->tip_hdr);
	bn(e, (const u8[]){ 0x48, 0x89, 0x0f, 0x48, 0x8d, 0x7f, 0x08 }, 7); /* mov %rcx,(%rdi); lea 8(%rdi),%rdi */
	patch8(e, j_empty);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x8b, 0x0d }, 3, (uintptr_t)&x->tnt_w0);	/* EMPTY */
	ok &= rip_op(e, (const u8[]){ 0x48, 0x89, 0x0d }, 3, (uintptr_t)&x->tnt_w);
	patch8(e, j_tip);
	bn(e, (const u8[]){ 0x48, 0x89, 0xc1 }, 3);			/* TIP: mov %rax,%rcx */
	ok &= rip_op(e, (const u8[]){ 0x48, 0x33, 0x0d }, 3, (uintptr_t)&x->tip_last);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x89, 0x05 }, 3, (uintptr_t)&x->tip_last);
	for (unsigned int k = 0; k < 3; k++) {
		bn(e, (const u8[]){ 0x48, 0xc1, 0xe9, 0x10, 0x74 }, 5);	/* shr $16,%rcx; jz I16/I32/I48 */
		j_ip[k] = e->p++;
	}
	bn(e, (const u8[]){ 0x48, 0x89, 0xc1, 0x48, 0xc1, 0xe1, 0x10,	/* mov %rax,%rcx; shl $16,%rcx */
			    0x48, 0xc1, 0xf9, 0x10, 0x48, 0x39, 0xc1, 0x74 }, 15); /* sar $16,%rcx; cmp; je SEXT */
	j_ip[3] = e->p++;
	bn(e, (const u8[]){ 0xc6, 0x07, tip[4], 0x48, 0x89, 0x47, 0x01,	/* movb $FULL,(%rdi); mov %rax,1(%rdi) */
			    0x48, 0x8d, 0x7f, 0x09, 0xeb }, 12);	/* lea 9(%rdi),%rdi; jmp DONE */
	j_done[0] = e->p++;
	patch8(e, j_ip[0]);
	bn(e, (const u8[]){ 0xc6, 0x07, tip[0], 0x66, 0x89, 0x47, 0x01,	/* I16: movb; mov %ax,1(%rdi) */
			    0x48, 0x8d, 0x7f, 0x03, 0xeb }, 12);	/* lea 3(%rdi),%rdi; jmp DONE */
	j_done[1] = e->p++;
	patch8(e, j_ip[1]);
	bn(e, (const u8[]){ 0xc6, 0x07, tip[1], 0x89, 0x47, 0x01,	/* I32: movb; mov %eax,1(%rdi) */
			    0x48, 0x8d, 0x7f, 0x05, 0xeb }, 11);	/* lea 5(%rdi),%rdi; jmp DONE */
	j_done[2] = e->p++;
	patch8(e, j_ip[3]);
	bn(e, (const u8[]){ 0xc6, 0x07, tip[3], 0xeb }, 4);		/* SEXT: movb; jmp W48 */
	j_w48 = e->p++;
	patch8(e, j_ip[2]);
	bn(e, (const u8[]){ 0xc6, 0x07, tip[2] }, 3);			/* I48: movb */
	patch8(e, j_w48);
	bn(e, (const u8[]){ 0x48, 0x89, 0x47, 0x01, 0x48, 0x8d, 0x7f, 0x07 }, 8); /* W48 */
	j_done[3] = e->p;
	for (unsigned int k = 0; k < 3; k++)
		*j_done[k] = (u8)(j_done[3] - (j_done[k] + 1));
	ok &= rip_op(e, (const u8[]){ 0x48, 0x89, 0x3d }, 3, (uintptr_t)&x->tnt_out);	/* DONE */
	ok &= rip_op(e, (const u8[]){ 0x48, 0xff, 0x05 }, 3, (uintptr_t)&x->tip_n);
	bn(e, (const u8[]){ 0x48, 0x83, 0x44, 0x24, 0x18, 0x02,	/* addq $2,24(%rsp) */
			    0x5f, 0x5e, 0x9d }, 9);			/* pop %rdi; pop %rsi; popfq */
	x->put_tail[2] = here(e);
	b1(e, 0xc3);							/* ret */
	for (unsigned int k = 0; k < 2; k++)
		ok &= put_rel32(j_slow[k], (uintptr_t)e->p);
	bn(e, (const u8[]){ 0x5f, 0x5e, 0x9d }, 3);			/* SLOW: pop %rdi; pop %rsi; popfq */
	x->put_tail[3] = here(e);
	b1(e, 0xc3);							/* ret */
	x->put_end = here(e);
	if (!ok)
		x->tip_put = x->tip_call = NULL;
	return ok;
}

/* The 64-bit word at @at += @add: MOV, LEA, MOV through RCX (no flag written). */
static bool count_add(struct emit *e, u64 at, u32 add)
{
	static const u8 ld[] = { 0x48, 0x8b, 0x0d }, st[] = { 0x48, 0x89, 0x0d };
	bool ok = rip_op(e, ld, 3, at);

	bn(e, (const u8[]){ 0x48, 0x8d, 0x89 }, 3);			/* lea add(%rcx),%rcx */
	b4(e, add);
	return ok && rip_op(e, st, 3, at);
}

/* tnt_w = 2 * tnt_w + @taken: the result into the inline TNT */
static bool tnt_bit(struct emit *e, unsigned int taken)
{
	static const u8 ld[] = { 0x48, 0x8b, 0x0d }, st[] = { 0x48, 0x89, 0x0d };
	const u64 w = (uintptr_t)&e->x->tnt_w;
	bool ok = rip_op(e, ld, 3, w);

	bn(e, (const u8[]){ 0x48, 0x8d, 0x4c, 0x09, (u8)taken }, 5);	/* lea taken(%rcx,%rcx),%rcx */
	return ok && rip_op(e, st, 3, w);
}

/* call tnt_put (the runtime's flush when the cache has none): it keeps every register and RFLAGS */
static bool call_put(struct emit *e, const struct xlat_env *env)
{
	b1(e, 0xe8);
	e->p += 4;
	return put_rel32(e->p - 4, e->x->tnt_put ? (uintptr_t)e->x->tnt_put : env->rt_flush);
}

/* addq $insns,tnt_ins(%rip): xlat_add_len(@s) bytes (writes flags) */
static bool add_insns(struct emit *e, const struct xlat_site *s)
{
	const u64 at = (uintptr_t)&e->x->tnt_ins;

	if (s->insns < 128)
		return rip_imm(e, (const u8[]){ 0x48, 0x83, 0x05 }, 3, at, s->insns, 1);
	return rip_imm(e, (const u8[]){ 0x48, 0x81, 0x05 }, 3, at, s->insns, 4);
}

/*
 * RCX = xlat_tnt_state() of tnt_w just doubled, no flag written:
 * movzbl tnt_w+7(%rip),%ecx; lea (%rcx,%rcx,2),%ecx; movzbl %ch,%ecx
 */
static bool tnt_state(struct emit *e)
{
	bool ok = rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x0d }, 3, (uintptr_t)&e->x->tnt_w + 7);

	bn(e, (const u8[]){ 0x8d, 0x0c, 0x49, 0x0f, 0xb6, 0xcd }, 6);
	return ok;
}

/* A result filled the packet (armed: state 1): call tnt_put. The rel8 to patch past it. */
static u8 *tnt_full(struct emit *e, const struct xlat_env *env, bool *ok)
{
	u8 *j;

	*ok &= tnt_state(e);
	b1(e, 0xe3);							/* jrcxz Z */
	j = e->p++;
	*ok &= call_put(e, env);
	return j;
}

/*
 * Off (RCX as tnt_check() loads it: tnt_cnt): count this record, and when
 * the count wraps go to RETRY (@*j_retry, to patch), which asks the
 * runtime to arm it again: lea 1(%rcx),%ecx; movzbl %cl,%ecx;
 * jrcxz RETRY; mov %cl,tnt_cnt(%rip)
 */
static bool off_count(struct emit *e, u8 **j_retry)
{
	bn(e, (const u8[]){ 0x8d, 0x49, 0x01,				/* lea 1(%rcx),%ecx */
			    0x0f, 0xb6, 0xc9, 0xe3 }, 7);		/* movzbl %cl,%ecx; jrcxz RETRY */
	*j_retry = e->p++;
	return rip_op(e, (const u8[]){ 0x88, 0x0d }, 2, (uintptr_t)&e->x->tnt_cnt);
}

/* RETRY: call xlat_rt_flush; jmp CHECK (@check) */
static bool off_retry(struct emit *e, const struct xlat_env *env, const u8 *check)
{
	b1(e, 0xe8);							/* call xlat_rt_flush */
	e->p += 4;
	return put_rel32(e->p - 4, env->rt_flush) && jmp_to(e, (uintptr_t)check);
}

/*
 * Are the arithmetic flags dead at @ip: written before any read by the
 * instructions from there (direct JMPs and CALLs followed, at most 16, no
 * other branch)? A stub going there may then write them. (Code read here
 * that changes later is an image loaded over another: the branch's own
 * block is in it, as direct branches do not leave an image, so
 * xlat_invalidate() empties the cache for it.)
 */
static bool flags_dead(const struct xlat_env *env, u64 ip)
{
	u32 need = X86_ARITH_ALL;

	for (unsigned int n = 0; n < 16; n++) {
		u8 bytes[X86_INSN_MAX_LEN];
		struct x86_insn in;
		u32 rd, wr;

		if (ip == env->end_ip || env->read(ip, bytes, &in))
			return false;
		if (in.cls == X86_INSN_JMP_DIRECT || in.cls == X86_INSN_CALL_DIRECT) {
			ip = x86_insn_branch_target(&in, ip);
			continue;
		}
		if (in.cofi != X86_COFI_NONE || !x86_insn_arith_flags(&in, &rd, &wr) || (rd & need))
			return false;
		need &= ~wr;
		if (!need)
			return true;
		ip += in.length;
	}
	return false;
}

/*
 * A Jcc's outcome @taken to @to: its count and bit by instructions that
 * write flags, PUSHF and POPF around them unless the flags are dead at @to
 * (flags_dead(), @pushf false): while armed and not full, 3 instructions
 * (4 taken), its JNO the edge itself (the doubling's OF: full or off,
 * xlat.h); with the flags pushed, 6 (7). Full, tnt_put; off, the mark
 * again and the path that keeps flags (cond_path() below, from its push),
 * whose Z takes the edge (the flags dead: the JNO follows the same link,
 * fast_jno()) or comes back to this one's EDGE.
 *
 * The flags dead:			The flags pushed:
 * CHECK:	addq $insns,tnt_ins(%rip)	pushfq
 * COUNTED:	[stc;] shlq/rclq $1,tnt_w(%rip)	CHECK: (the same)
 * RETIRED:				RETIRED: jno Z
 * EDGE:	jno <edge>			 cmpb $0x80,...; jne OFF; call tnt_put
 *		cmpb $0x80,tnt_w+7(%rip)	Z: popfq
 *		jne OFF; call tnt_put		EDGE: jmp <edge>
 * Z:		jmp <cond_path()'s edge>	OFF: popfq
 * OFF/MARK:	movb $XLAT_TNT_MARK,tnt_w+7(%rip)
 *		<cond_path()'s>
 *
 * (Z must not come back to EDGE: there the arming decides, and after
 * tnt_put or the runtime's flush it may be off, with the bit handed over.)
 *
 * An event before RETIRED resumes at CHECK, its count taken back from
 * COUNTED; in [RETIRED, Z) the arming says, as in cond_path() (armed: on
 * at the other path's edge or at Z); from Z it has retired; in [OFF, MARK)
 * it was off: at CHECK; at MARK, on from there, or at CHECK when the flags
 * were not pushed (xlat_where()). The offsets are fixed (xlat_fast_marks()).
 */
static bool fast_path(struct emit *e, const struct xlat_env *env, struct xlat_site *s,
		      unsigned int taken, u64 to, bool pushf)
{
	struct xlat_cpu *x = e->x;
	const u64 w7 = (uintptr_t)&x->tnt_w + 7;
	u32 m[XLAT_FAST_NR];
	u8 *j_off, *j_z = NULL;
	bool ok;

	s->fast_at[taken] = (u16)((here(e) - s->stub + 1) | (pushf ? XLAT_FAST_PUSHF : 0));
	xlat_fast_marks(s, taken, m);
	if (pushf)
		b1(e, 0x9c);						/* pushfq */
	ok = here(e) == m[XLAT_FAST_CHECK];
	ok &= add_insns(e, s);					/* addq $insns,tnt_ins(%rip) */
	ok &= here(e) == m[XLAT_FAST_COUNTED];
	if (taken)
		b1(e, 0xf9);						/* stc */
	ok &= rip_op(e, (const u8[]){ 0x48, 0xd1, taken ? 0x15 : 0x25 }, 3,	/* rclq/shlq $1,tnt_w */
		     (uintptr_t)&x->tnt_w);
	ok &= here(e) == m[XLAT_FAST_RETIRED];
	if (pushf) {
		b1(e, 0x71);						/* jno Z */
		j_z = e->p++;
	} else {
		ok &= here(e) == m[XLAT_FAST_EDGE];
		bn(e, (const u8[]){ 0x0f, 0x81 }, 2);			/* jno <edge>: fast_jno() */
		e->p += 4;
	}
	ok &= rip_imm(e, (const u8[]){ 0x80, 0x3d }, 2, w7, XLAT_TNT_FULL, 1); /* cmpb $0x80,tnt_w+7 */
	b1(e, 0x75);							/* jne OFF */
	j_off = e->p++;
	ok &= call_put(e, env);						/* call tnt_put */
	ok &= here(e) == m[XLAT_FAST_Z];
	if (pushf) {
		patch8(e, j_z);
		b1(e, 0x9d);						/* popfq */
		ok &= edge(e, s, taken, to);
	} else {
		b1(e, 0xe9);						/* jmp <cond_path()'s edge> */
		e->p += 4;						/* (cond_path() fills it) */
	}
	patch8(e, j_off);
	ok &= here(e) == m[XLAT_FAST_OFF];
	if (pushf)
		b1(e, 0x9d);						/* popfq */
	ok &= mov_b(e, w7, XLAT_TNT_MARK);				/* MARK */
	return ok;
}

/*
 * A Jcc's outcome @taken: its TNT bit straight into the inline TNT when
 * armed, else a record (xlat.h). Then the direct edge to @to. It does not
 * look first: the count and the bit go in, and byte 7 then says whether it
 * was armed (state 0, or 1 when the packet is full: xlat_tnt_state()) or
 * off (2: the count and the bit went nowhere, the results before are
 * kept). It keeps
 * RFLAGS without PUSHF: fast_path() comes first and goes on here when off
 * (all of it with keep_flags).
 *
 *	[fast_path()]
 *	push %rcx
 * CHECK: mov tnt_ins(%rip),%rcx; lea insns(%rcx),%rcx; mov %rcx,tnt_ins(%rip)
 * COUNTED: mov tnt_w(%rip),%rcx; lea taken(%rcx,%rcx),%rcx; mov %rcx,tnt_w(%rip)
 * RETIRED: <RCX = the state (tnt_state())>; jrcxz Z; loop OFF
 *	call tnt_put					the packet is full
 * Z:	pop %rcx; jmp <edge>
 * RETRY: call xlat_rt_flush; jmp CHECK			(off_retry())
 * OFF:	movb $XLAT_TNT_MARK,tnt_w+7(%rip); movzbl tnt_cnt(%rip),%ecx
 *	<count in tnt_cnt, RETRY when it wraps>		(off_count())
 *	<record>; jmp Z				(its publication: post[taken][0])
 *
 * An event before RETIRED resumes at CHECK, its count taken back from
 * COUNTED; in [RETIRED, Z) the arming says (xlat_where()): armed, the
 * branch ran and it goes on at Z; off, at CHECK. In [RETRY, the record's
 * publication), at CHECK.
 */
static bool cond_path(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx,
		      unsigned int taken, u64 to)
{
	struct xlat_cpu *x = e->x;
	u8 *j_z, *j_off, *j_retry, *check, *z, *retry, *fast_z = NULL;
	bool ok = true;

	x->st.cond_paths++;
	if (!x->keep_flags) {
		bool dead = flags_dead(env, to);
		u32 m[XLAT_FAST_NR];

		x->st.fast_paths += dead;
		ok &= fast_path(e, env, s, taken, to, !dead);
		xlat_fast_marks(s, taken, m);
		if (!dead)
			fast_z = x->region + m[XLAT_FAST_EDGE];
		ok &= here(e) + 1 == m[XLAT_FAST_KEEP];
	}
	b1(e, 0x51);							/* push %rcx */
	check = e->p;
	s->inl[taken][XLAT_INL_CHECK] = here(e);
	ok &= count_add(e, (uintptr_t)&x->tnt_ins, s->insns);
	s->inl[taken][XLAT_INL_COUNTED] = here(e);
	ok &= tnt_bit(e, taken);
	s->inl[taken][XLAT_INL_RETIRED] = here(e);
	ok &= tnt_state(e);
	b1(e, 0xe3);							/* jrcxz Z */
	j_z = e->p++;
	b1(e, 0xe2);							/* loop OFF */
	j_off = e->p++;
	ok &= call_put(e, env);						/* call tnt_put */
	patch8(e, j_z);
	z = e->p;
	s->inl[taken][XLAT_INL_Z] = here(e);
	b1(e, 0x59);							/* Z: pop %rcx */
	ok &= fast_z ? jmp_to(e, (uintptr_t)fast_z) : edge(e, s, taken, to);
	if (s->fast_at[taken] && !(s->fast_at[taken] & XLAT_FAST_PUSHF)) {
		u32 m[XLAT_FAST_NR];

		/* fast_path()'s Z: to this edge, which has retired whatever the arming */
		xlat_fast_marks(s, taken, m);
		ok &= put_rel32(x->region + m[XLAT_FAST_Z] + 1, (uintptr_t)(z + 1));
	}
	retry = e->p;
	ok &= here(e) == s->inl[taken][XLAT_INL_Z] + XLAT_Z_LEN;
	ok &= off_retry(e, env, check);
	patch8(e, j_off);
	ok &= mov_b(e, (uintptr_t)&x->tnt_w + 7, XLAT_TNT_MARK);	/* OFF */
	ok &= tnt_load(e);
	ok &= off_count(e, &j_retry);
	*j_retry = (u8)(retry - (j_retry + 1));
	ok &= record(e, xlat_word(s, idx, taken), SEC_NONE, 0, &s->post[taken][0]);
	jmp8(e, z);							/* jmp Z */
	s->post[taken][1] = here(e);
	return ok;
}

/*
 * A direct JMP or CALL (its return address pushed already) with the inline
 * TNT made for no timing packets (plain_inline): while armed, no record,
 * only its instructions and its event counted and, a CALL's (not CALL +0),
 * its return address pushed on the lent RET compression stack. Off: a
 * record, which keeps it off (results after it must come after it). Where
 * the flags are dead at the target, plain_fast() comes first and goes on
 * here when off.
 *
 *	[plain_fast()]
 *	push %rcx; [push %rdx]
 * CHECK: movzbl tnt_cnt(%rip),%ecx; jrcxz START	(tnt_check())
 *	<count in tnt_cnt>; <record>; jmp Z	(its publication: post[0][0])
 * RETRY: call xlat_rt_flush; jmp CHECK		(off_count(), off_retry())
 * START: tnt_ins += insns
 * COUNTED: tnt_jc += 1
 * JC:	[movzbl top4(%rip),%edx; lea 4(%rdx),%rdx; movzbl %dl,%edx
 *	 lea slot(%rip),%rcx; movq $next,(%rcx,%rdx,2)	(or through RDX: movabs)
 *	 mov %dl,top4(%rip)]			the push, committed by the index
 * RETIRED:
 * Z:	[pop %rdx]; pop %rcx; jmp <edge>
 *
 * An event in [CHECK, the publication) or [RETRY, RETIRED) resumes at
 * CHECK, its counts taken back (xlat_where()); a slot written above the
 * top before the index moved is not on the stack.
 */
static bool plain_fast(struct emit *e, struct xlat_site *s, bool push);

static bool plain_path(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx)
{
	struct xlat_cpu *x = e->x;
	const bool push = s->kind == XK_CALL && s->target != s->next;
	const u64 top4 = (uintptr_t)&x->rs.top4, slot = (uintptr_t)x->rs.slot;
	u8 *j_start, *j_rec, *j_retry, *check, *fast_edge = NULL;
	bool ok = true;

	x->st.plain_paths++;
	if (!x->keep_flags && (!push || ((s64)slot == (s32)slot && (s64)s->next == (s32)s->next)) &&
	    flags_dead(env, s->target)) {
		u32 m[XLAT_PF_NR];

		x->st.fast_plain++;
		ok &= plain_fast(e, s, push);
		xlat_plain_marks(s, push, m);
		fast_edge = x->region + m[XLAT_PF_RETIRED];
		ok &= here(e) + 1 + push == m[XLAT_PF_KEEP];
	}
	b1(e, 0x51);							/* push %rcx */
	if (push)
		b1(e, 0x52);						/* push %rdx */
	check = e->p;
	s->inl[0][XLAT_INL_CHECK] = here(e);
	j_start = tnt_check(e, &ok);
	ok &= off_count(e, &j_retry);
	ok &= record(e, xlat_word(s, idx, 0), SEC_NONE, 0, &s->post[0][0]);
	b1(e, 0xeb);							/* jmp Z */
	j_rec = e->p++;
	patch8(e, j_retry);
	s->inl[0][XLAT_INL_START] = here(e);				/* RETRY */
	ok &= off_retry(e, env, check);
	patch8(e, j_start);
	ok &= count_add(e, (uintptr_t)&x->tnt_ins, s->insns);
	s->inl[0][XLAT_INL_COUNTED] = here(e);
	ok &= count_add(e, (uintptr_t)&x->tnt_jc, 1);
	s->inl[1][0] = here(e);
	if (push) {
		ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x15 }, 3, top4);	/* movzbl top4(%rip),%edx */
		bn(e, (const u8[]){ 0x48, 0x8d, 0x52, 0x04,			/* lea 4(%rdx),%rdx */
				    0x0f, 0xb6, 0xd2 }, 7);			/* movzbl %dl,%edx */
		ok &= rip_op(e, (const u8[]){ 0x48, 0x8d, 0x0d }, 3, slot);	/* lea slot(%rip),%rcx */
		if ((s64)s->next == (s32)s->next) {
			bn(e, (const u8[]){ 0x48, 0xc7, 0x04, 0x51 }, 4);	/* movq $next,(%rcx,%rdx,2) */
			b4(e, (u32)s->next);
			ok &= rip_op(e, (const u8[]){ 0x88, 0x15 }, 2, top4);	/* mov %dl,top4(%rip) */
		} else {
			bn(e, (const u8[]){ 0x48, 0x8d, 0x0c, 0x51,		/* lea (%rcx,%rdx,2),%rcx */
					    0x48, 0xba }, 6);			/* movabs $next,%rdx */
			b8(e, s->next);
			bn(e, (const u8[]){ 0x48, 0x89, 0x11 }, 3);		/* mov %rdx,(%rcx) */
			ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x15 }, 3, top4);	/* movzbl top4(%rip),%edx */
			bn(e, (const u8[]){ 0x48, 0x8d, 0x52, 0x04 }, 4);	/* lea 4(%rdx),%rdx */
			ok &= rip_op(e, (const u8[]){ 0x88, 0x15 }, 2, top4);	/* mov %dl,top4(%rip) */
		}
	}
	s->inl[0][XLAT_INL_RETIRED] = here(e);
	patch8(e, j_rec);
	if (push)
		b1(e, 0x5a);						/* Z: pop %rdx */
	b1(e, 0x59);							/* pop %rcx */
	ok &= fast_edge ? jmp_to(e, (uintptr_t)fast_edge) : edge(e, s, 0, s->target);
	s->post[0][1] = here(e);
	return ok;
}

/*
 * A direct JMP's or CALL's inline path where the flags are dead at its
 * target (flags_dead()), armed: 4 instructions and its edge for a JMP, 10
 * for a CALL that pushes its return address on the lent stack (when the
 * stack's slots and the address are 32-bit absolute). Off: plain_path()
 * from its push, whose Z comes back to RETIRED.
 *
 * CHECK:	cmpb $0,tnt_cnt(%rip); jne OFF
 * START:	addq $insns,tnt_ins(%rip)
 * COUNTED:	addq $1,tnt_jc(%rip)
 * JC:		[push %rdx
 * PUSH:	 movzbl top4(%rip),%edx; addb $4,%dl; movq $next,slot(,%rdx,2)
 *		 mov %dl,top4(%rip)
 * PUSHED:	 pop %rdx]
 * RETIRED:	jmp <edge>
 * UNDO:	[pop %rdx; jmp CHECK]
 * OFF:		<plain_path()>
 *
 * An event before PUSHED goes back to CHECK (through UNDO from PUSH), its
 * counts taken back (xlat_where()); from PUSHED it has retired.
 */
static bool plain_fast(struct emit *e, struct xlat_site *s, bool push)
{
	struct xlat_cpu *x = e->x;
	const u64 top4 = (uintptr_t)&x->rs.top4, slot = (uintptr_t)x->rs.slot;
	u32 m[XLAT_PF_NR];
	u8 *j_off;
	bool ok;

	s->fast_at[0] = (u16)(here(e) - s->stub + 1);
	xlat_plain_marks(s, push, m);
	ok = tnt_test(e);						/* cmpb $0,tnt_cnt */
	b1(e, 0x75);							/* jne OFF */
	j_off = e->p++;
	ok &= here(e) == m[XLAT_PF_START];
	ok &= add_insns(e, s);					/* addq $insns,tnt_ins(%rip) */
	ok &= here(e) == m[XLAT_PF_COUNTED];
	ok &= rip_imm(e, (const u8[]){ 0x48, 0x83, 0x05 }, 3, (uintptr_t)&x->tnt_jc, 1, 1);
	ok &= here(e) == m[XLAT_PF_JC];
	if (push) {
		b1(e, 0x52);						/* push %rdx */
		ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x15 }, 3, top4);	/* movzbl top4(%rip),%edx */
		bn(e, (const u8[]){ 0x80, 0xc2, 0x04,			/* addb $4,%dl */
				    0x48, 0xc7, 0x04, 0x55 }, 7);	/* movq $next,slot(,%rdx,2) */
		b4(e, (u32)slot);
		b4(e, (u32)s->next);
		ok &= rip_op(e, (const u8[]){ 0x88, 0x15 }, 2, top4);	/* mov %dl,top4(%rip) */
		ok &= here(e) == m[XLAT_PF_PUSHED];
		b1(e, 0x5a);						/* pop %rdx */
	}
	ok &= here(e) == m[XLAT_PF_RETIRED];
	ok &= edge(e, s, 0, s->target);
	if (push) {
		b1(e, 0x5a);						/* UNDO: pop %rdx */
		ok &= jmp_to(e, (uintptr_t)x->region + m[XLAT_PF_CHECK]);
	}
	patch8(e, j_off);
	return ok && here(e) == m[XLAT_PF_OFF];
}

/*
 * The table lookup of target T (in RAX; RAX, RCX and RDX pushed over T on
 * the stack): the entry's key is the 8 bytes before it. A hit replaces T
 * with the block's address and RETs there; a miss goes to the runtime with
 * T on the stack.
 */
static bool lookup_tail(struct emit *e, const struct xlat_env *env)
{
	static const u8 lea_table[] = { 0x48, 0x8d, 0x15 };
	u8 *jr;
	bool ok;

	ok = rip_op(e, lea_table, 3, (uintptr_t)e->x->table);		/* lea table(%rip),%rdx */
	bn(e, (const u8[]){ 0x0f, 0xb7, 0xc8,				/* movzwl %ax,%ecx */
			    0x48, 0x8b, 0x14, 0xca,			/* mov (%rdx,%rcx,8),%rdx */
			    0x48, 0x8b, 0x4a, 0xf8,			/* mov -8(%rdx),%rcx */
			    0x48, 0xf7, 0xd1,				/* not %rcx */
			    0x48, 0x8d, 0x4c, 0x01, 0x01 }, 19);	/* lea 1(%rcx,%rax),%rcx: T - key */
	b1(e, 0xe3);							/* jrcxz hit */
	jr = e->p++;
	bn(e, (const u8[]){ 0x5a, 0x59, 0x58 }, 3);			/* pop %rdx; pop %rcx; pop %rax */
	ok &= jmp_to(e, env->rt_lookup);				/* miss: [T] */
	patch8(e, jr);
	bn(e, (const u8[]){ 0x48, 0x89, 0x54, 0x24, 0x18,		/* mov %rdx,24(%rsp) */
			    0x5a, 0x59, 0x58, 0xc3 }, 9);		/* pop %rdx; pop %rcx; pop %rax; ret */
	return ok;
}

/*
 * Armed, an indirect branch's TIP from the code (tip_put, when there is
 * room), T in RAX: on at the lookup when it was sent, else on to SLOW.
 *
 *	mov $insns,%ecx; [mov $next,%rdx]; call tip_put (tip_call)
 *	jmp SLOW				(tip_put returns here when not)
 * SENT: <lookup>				(tip_at: retired)
 * SLOW:
 */
static bool tip_path(struct emit *e, const struct xlat_env *env, struct xlat_site *s)
{
	const bool call = s->cls == PTM_CALL_IND;
	u8 *j_slow;
	bool ok;

	b1(e, 0xb9);							/* mov $insns,%ecx */
	b4(e, s->insns);
	if (call && (s64)s->next == (s32)s->next) {
		bn(e, (const u8[]){ 0x48, 0xc7, 0xc2 }, 3);		/* mov $next,%rdx */
		b4(e, (u32)s->next);
	} else if (call) {
		bn(e, (const u8[]){ 0x48, 0xba }, 2);			/* movabs $next,%rdx */
		b8(e, s->next);
	}
	b1(e, 0xe8);							/* call tip_put */
	e->p += 4;
	ok = put_rel32(e->p - 4, (uintptr_t)(call ? e->x->tip_call : e->x->tip_put));
	b1(e, 0xeb);							/* jmp SLOW */
	j_slow = e->p++;
	s->tip_at[0] = (u16)(here(e) - s->stub);
	ok &= lookup_tail(e, env);
	s->tip_at[1] = (u16)(here(e) - s->stub);
	patch8(e, j_slow);
	return ok;
}

/* ret_fast()'s pop: ret_to, the index down, the slot it took poisoned (at @retired, @poisoned) */
static bool ret_pop(struct emit *e, u32 retired, u32 poisoned)
{
	struct xlat_cpu *x = e->x;
	bool ok;

	ok = rip_op(e, (const u8[]){ 0x48, 0x89, 0x0d }, 3, (uintptr_t)&x->ret_to); /* mov %rcx,ret_to */
	ok &= rip_imm(e, (const u8[]){ 0x80, 0x2d }, 2, (uintptr_t)&x->rs.top4, 4, 1); /* subb $4,top4 */
	ok &= here(e) == retired;
	bn(e, (const u8[]){ 0x48, 0xc7, 0x04, 0x55 }, 4);		/* movq $POISON,slot(,%rdx,2) */
	b4(e, (u32)(uintptr_t)x->rs.slot);
	b4(e, (u32)PTM_RS_POISON);
	return ok && here(e) == poisoned;
}

/*
 * A RET's compression inline, its flags pushed: the common case (armed,
 * the lent stack's top matches) in 25 instructions, its block looked up
 * at the end with T still in RCX (tnt_put keeps it). Else OUT: the path
 * that keeps flags (indirect_tail()). Its slots and the table are
 * addressed 32-bit absolute (the caller checks).
 *
 *	pushfq; push %rcx; push %rdx			(T at 24(%rsp))
 * CHECK: cmpb $0,tnt_cnt(%rip); jne OUT
 *	movzbl top4(%rip),%edx; mov slot(,%rdx,2),%rcx; cmp %rcx,24(%rsp); jne OUT
 * HIT:	addq $insns,tnt_ins(%rip)
 * COUNTED: stc; rclq $1,tnt_w(%rip)
 * BIT:	jo FULL						(the packet full: xlat.h)
 *	mov %rcx,ret_to(%rip); subb $4,top4(%rip)
 * RETIRED: movq $PTM_RS_POISON,slot(,%rdx,2)	(an imm32, sign-extended)
 * POISONED:
 * LOOK: movzwl %cx,%edx; mov table(,%rdx,8),%rdx; cmp %rcx,-8(%rdx); jne MISS
 *	mov %rdx,24(%rsp); pop %rdx; pop %rcx; popfq; ret
 * MISS: pop %rdx; pop %rcx; popfq; jmp rt_lookup
 * FULL: mov %rcx,ret_to(%rip); subb $4,top4(%rip)
 * FULL_RETIRED: movq $PTM_RS_POISON,slot(,%rdx,2)
 * FULL_POISONED: call tnt_put; jmp LOOK
 * OUT:	pop %rdx; pop %rcx; popfq			(then indirect_tail()'s)
 *
 * An event in [CHECK, RETIRED) or [FULL, FULL_RETIRED) goes back to
 * CHECK, its count and bit taken back; elsewhere from RETIRED it has
 * retired to ret_to, and before POISONED or FULL_POISONED it poisons the
 * popped slot itself (xlat_where()). The offsets are fixed
 * (xlat_ret_marks()).
 */
static bool ret_fast(struct emit *e, const struct xlat_env *env, struct xlat_site *s)
{
	struct xlat_cpu *x = e->x;
	const u64 top4 = (uintptr_t)&x->rs.top4, w = (uintptr_t)&x->tnt_w;
	u32 m[XLAT_RF_NR];
	u8 *j_out[2], *j_full, *j_miss, *look;
	bool ok;

	s->ret_at = (u16)(here(e) - s->stub + 1);
	xlat_ret_marks(s, m);
	bn(e, (const u8[]){ 0x9c, 0x51, 0x52 }, 3);			/* pushfq; push %rcx; push %rdx */
	ok = here(e) == m[XLAT_RF_CHECK];
	ok &= tnt_test(e);						/* cmpb $0,tnt_cnt */
	bn(e, (const u8[]){ 0x0f, 0x85 }, 2);				/* jne OUT (rel32: past FULL) */
	e->p += 4;
	j_out[0] = e->p - 4;
	ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x15 }, 3, top4);	/* movzbl top4(%rip),%edx */
	bn(e, (const u8[]){ 0x48, 0x8b, 0x0c, 0x55 }, 4);		/* mov slot(,%rdx,2),%rcx */
	b4(e, (u32)(uintptr_t)x->rs.slot);
	bn(e, (const u8[]){ 0x48, 0x39, 0x4c, 0x24, 0x18, 0x75 }, 6);	/* cmp %rcx,24(%rsp); jne OUT */
	j_out[1] = e->p++;
	ok &= here(e) == m[XLAT_RF_HIT];
	ok &= add_insns(e, s);					/* addq $insns,tnt_ins(%rip) */
	ok &= here(e) == m[XLAT_RF_COUNTED];
	b1(e, 0xf9);							/* stc */
	ok &= rip_op(e, (const u8[]){ 0x48, 0xd1, 0x15 }, 3, w);	/* rclq $1,tnt_w(%rip) */
	ok &= here(e) == m[XLAT_RF_BIT];
	b1(e, 0x70);							/* jo FULL */
	j_full = e->p++;
	ok &= ret_pop(e, m[XLAT_RF_RETIRED], m[XLAT_RF_POISONED]);
	look = e->p;
	bn(e, (const u8[]){ 0x0f, 0xb7, 0xd1,				/* LOOK: movzwl %cx,%edx */
			    0x48, 0x8b, 0x14, 0xd5 }, 7);		/* mov table(,%rdx,8),%rdx */
	b4(e, (u32)(uintptr_t)x->table);
	bn(e, (const u8[]){ 0x48, 0x39, 0x4a, 0xf8, 0x75 }, 5);	/* cmp %rcx,-8(%rdx); jne MISS */
	j_miss = e->p++;
	bn(e, (const u8[]){ 0x48, 0x89, 0x54, 0x24, 0x18,		/* mov %rdx,24(%rsp) */
			    0x5a, 0x59, 0x9d, 0xc3 }, 9);		/* pop %rdx; pop %rcx; popfq; ret */
	patch8(e, j_miss);
	bn(e, (const u8[]){ 0x5a, 0x59, 0x9d }, 3);			/* MISS: pop %rdx; pop %rcx; popfq */
	ok &= jmp_to(e, env->rt_lookup);
	ok &= here(e) == m[XLAT_RF_FULL];
	patch8(e, j_full);
	ok &= ret_pop(e, m[XLAT_RF_FULL_RETIRED], m[XLAT_RF_FULL_POISONED]);
	ok &= call_put(e, env);						/* call tnt_put */
	jmp8(e, look);							/* jmp LOOK */
	ok &= here(e) == m[XLAT_RF_OUT];
	ok &= put_rel32(j_out[0], (uintptr_t)e->p);
	patch8(e, j_out[1]);
	bn(e, (const u8[]){ 0x5a, 0x59, 0x9d }, 3);			/* OUT: pop %rdx; pop %rcx; popfq */
	return ok;
}

/*
 * The indirect tail: the target T on top of the stack (pushed by the stub,
 * or RET's own). Record it and look it up (lookup_tail()). With the inline
 * TNT, a record while armed turns it off (results after it must come after
 * it), and one while off counts in tnt_cnt, as a Jcc's; and a RET with
 * ret_inline first compares T with the top of the lent RET compression
 * stack: a match pops it and is a TNT bit, with no record. That RET's
 * common case comes first, with its flags pushed (ret_fast()).
 *
 *	[ret_fast()]
 *	push %rax; push %rcx; push %rdx; mov 24(%rsp),%rax
 * CHECK: movzbl tnt_cnt(%rip),%ecx; jrcxz START	(with the inline TNT)
 *	<count in tnt_cnt>
 * REC:	<record T>; <lookup>			(publication: post[0][0])
 * RETRY: call xlat_rt_flush; jmp CHECK
 * START: [movzbl top4(%rip),%edx; lea slot(%rip),%rcx; lea (%rcx,%rdx,2),%rdx
 *	 mov (%rdx),%rcx; not %rcx; lea 1(%rcx,%rax),%rcx; jrcxz HIT]
 *	[<its TIP from the code, and the lookup (tip_path())>]
 *	<off: the results kept (tnt_turn_off())>; jmp REC
 * HIT: tnt_ins += insns
 * COUNTED: tnt_w = 2 * tnt_w + 1
 * BIT:	mov %rax,ret_to(%rip)
 *	movzbl top4(%rip),%ecx; lea -4(%rcx),%rcx; mov %cl,top4(%rip)
 * RETIRED: movq $PTM_RS_POISON,(%rdx)			(post[1][0])
 * POISONED: <the packet full? tnt_put>; <lookup>
 *
 * An event in [CHECK, the publication) or [RETRY, RETIRED) resumes at
 * CHECK, the RET's count and bit taken back; in [RETIRED, POISONED) it
 * poisons the popped slot itself; after a TIP sent, it has retired to
 * tip_last (xlat_where()). (A RET to PTM_RS_POISON
 * itself would match an empty stack here; nothing is mapped there, so
 * such a RET faults on the CPU and its trace is wrong only in that.)
 */
static bool indirect_tail(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx)
{
	struct xlat_cpu *x = e->x;
	const bool inl = x->inline_tnt, ret = s->cls == PTM_RET && x->ret_inline;
	const u64 top4 = (uintptr_t)&x->rs.top4;
	u8 *j_start = NULL, *j_retry = NULL, *check = NULL, *rec, *j_hit = NULL, *j_full;
	bool ok = true;

	if (ret) {
		const u64 slot = (uintptr_t)x->rs.slot, table = (uintptr_t)x->table;

		x->st.ret_paths++;
		if (!x->keep_flags && slot + sizeof(x->rs.slot) < (1ull << 31) &&
		    table + (8ull << XLAT_TABLE_BITS) < (1ull << 31)) {
			x->st.fast_rets++;
			ok &= ret_fast(e, env, s);
		}
	}
	bn(e, (const u8[]){ 0x50, 0x51, 0x52,				/* push %rax; push %rcx; push %rdx */
			    0x48, 0x8b, 0x44, 0x24, 0x18 }, 8);		/* mov 24(%rsp),%rax */
	if (inl) {
		check = e->p;
		s->inl[0][XLAT_INL_CHECK] = here(e);
		j_start = tnt_check(e, &ok);
		ok &= off_count(e, &j_retry);
	}
	rec = e->p;
	ok &= record(e, xlat_word(s, idx, 0), SEC_RAX, 0, &s->post[0][0]);
	ok &= lookup_tail(e, env);
	s->post[0][1] = here(e);
	if (!inl)
		return ok;
	patch8(e, j_retry);
	s->inl[0][XLAT_INL_START] = here(e);				/* RETRY */
	ok &= off_retry(e, env, check);
	patch8(e, j_start);
	if (ret) {
		ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x15 }, 3, top4);	/* movzbl top4(%rip),%edx */
		ok &= rip_op(e, (const u8[]){ 0x48, 0x8d, 0x0d }, 3, (uintptr_t)x->rs.slot); /* lea slot(%rip),%rcx */
		bn(e, (const u8[]){ 0x48, 0x8d, 0x14, 0x51,		/* lea (%rcx,%rdx,2),%rdx */
				    0x48, 0x8b, 0x0a,			/* mov (%rdx),%rcx */
				    0x48, 0xf7, 0xd1,			/* not %rcx */
				    0x48, 0x8d, 0x4c, 0x01, 0x01, 0xe3 }, 16); /* lea 1(%rcx,%rax),%rcx; jrcxz HIT */
		j_hit = e->p++;
	}
	if (x->tip_put)
		ok &= tip_path(e, env, s);
	ok &= tnt_turn_off(e);						/* armed: off, a record waits */
	ok &= jmp_to(e, (uintptr_t)rec);
	if (!ret) {
		/* no inline result: nothing to count or take back */
		s->inl[0][XLAT_INL_COUNTED] = s->inl[0][XLAT_INL_RETIRED] = here(e);
		s->inl[1][0] = here(e);
		return ok;
	}
	patch8(e, j_hit);
	ok &= count_add(e, (uintptr_t)&x->tnt_ins, s->insns);
	s->inl[0][XLAT_INL_COUNTED] = here(e);
	ok &= tnt_bit(e, 1);
	s->inl[1][0] = here(e);
	ok &= rip_op(e, (const u8[]){ 0x48, 0x89, 0x05 }, 3, (uintptr_t)&x->ret_to); /* mov %rax,ret_to(%rip) */
	ok &= rip_op(e, (const u8[]){ 0x0f, 0xb6, 0x0d }, 3, top4);	/* movzbl top4(%rip),%ecx */
	bn(e, (const u8[]){ 0x48, 0x8d, 0x49, 0xfc }, 4);		/* lea -4(%rcx),%rcx */
	ok &= rip_op(e, (const u8[]){ 0x88, 0x0d }, 2, top4);		/* mov %cl,top4(%rip) */
	s->inl[0][XLAT_INL_RETIRED] = here(e);
	s->post[1][0] = here(e);
	bn(e, (const u8[]){ 0x48, 0xc7, 0x02 }, 3);			/* movq $POISON,(%rdx) */
	b4(e, (u32)PTM_RS_POISON);
	s->inl[1][1] = here(e);
	j_full = tnt_full(e, env, &ok);
	patch8(e, j_full);
	ok &= lookup_tail(e, env);
	s->post[1][1] = here(e);
	return ok;
}

/* push $ret (the original return address) */
static void push_ret(struct emit *e, u64 ret)
{
	if ((s64)ret == (s32)ret) {
		b1(e, 0x68);
		b4(e, (u32)ret);
		return;
	}
	/* lea -8(%rsp),%rsp; push %rax; movabs $ret,%rax; mov %rax,8(%rsp); pop %rax */
	bn(e, (const u8[]){ 0x48, 0x8d, 0x64, 0x24, 0xf8, 0x50, 0x48, 0xb8 }, 8);
	b8(e, ret);
	bn(e, (const u8[]){ 0x48, 0x89, 0x44, 0x24, 0x08, 0x58 }, 6);
}

/* Copy @in (at @ip, @bytes) to the cache, a RIP-relative operand re-aimed. */
static bool copy_insn(struct emit *e, const struct x86_insn *in, u64 ip, const u8 *bytes)
{
	u8 *at = e->p;

	bn(e, bytes, in->length);
	if (in->flags & X86_INSN_F_RIPREL) {
		u8 *disp = at + in->modrm_off + 1;
		u64 to = ip + in->length + (s64)in->disp;
		s64 d = (s64)(to - ((uintptr_t)at + in->length));

		s32 v = (s32)d;

		if (d != v)
			return false;
		memcpy(disp, &v, 4);
	}
	return true;
}

/* PUSH r/m64 with the operand of JMP/CALL r/m64 @in: the target on the stack. */
static bool push_operand(struct emit *e, const struct x86_insn *in, u64 ip, const u8 *bytes)
{
	u8 copy[X86_INSN_MAX_LEN];

	memcpy(copy, bytes, in->length);
	copy[in->modrm_off] = (u8)((in->modrm & ~0x38) | (6 << 3));	/* FF /6 */
	return copy_insn(e, in, ip, copy);
}

/* ---------------------------------------------------------------- blocks */

static enum xlat_exit_why exit_reason(const struct x86_insn *in)
{
	switch (in->cls) {
	case X86_INSN_INT3:
		return XE_DECODE;	/* an INT3 not ours */
	case X86_INSN_RET_NEAR:
	case X86_INSN_PTWRITE:
		return XE_FORM;
	default:
		return XE_FAR;
	}
}

/* Does @in end a block with a stub? Anything else that ends one is an exit. */
static bool is_branch(const struct x86_insn *in)
{
	switch (in->cls) {
	case X86_INSN_JCC: case X86_INSN_JCXZ: case X86_INSN_LOOP:
	case X86_INSN_JMP_DIRECT: case X86_INSN_CALL_DIRECT:
	case X86_INSN_JMP_INDIRECT: case X86_INSN_CALL_INDIRECT:
	case X86_INSN_RET_NEAR: case X86_INSN_PTWRITE:
		return true;
	default:
		return false;
	}
}

/* Code to run as it is: no change of flow (HLT waits and goes on). */
static bool is_plain(const struct x86_insn *in)
{
	return (in->cls == X86_INSN_OTHER || in->cls == X86_INSN_HLT ||
		in->cls == X86_INSN_MOV_CR3) && in->cofi == X86_COFI_NONE &&
	       (!(in->flags & X86_INSN_F_RIPREL) || in->addrsize == 8);
}

static bool stub(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx,
		 const struct x86_insn *in, u64 ip, const u8 *bytes)
{
	u64 next = ip + in->length;
	bool ok = true;

	s->next = next;
	switch (in->cls) {
	case X86_INSN_JCC:
	case X86_INSN_JCXZ:
	case X86_INSN_LOOP:
		s->kind = XK_COND;
		s->cls = PTM_COND;
		s->target = x86_insn_branch_target(in, ip);
		if (in->cls == X86_INSN_JCC) {
			b1(e, 0x0f);					/* jcc rel32 -> taken */
			b1(e, (u8)(0x80 | (in->opcode & 0xf)));
		} else {
			/* the instruction itself (its prefixes: ECX with 67),
			 * rel8 -> a JMP to the taken path; not taken skips it */
			bn(e, bytes, in->length - 1);
			b1(e, 2);
			bn(e, (const u8[]){ 0xeb, 0x05, 0xe9 }, 3);	/* jmp +5; jmp taken */
		}
		e->p += 4;
		{
			u8 *rel = e->p - 4;	/* the condition's way to the taken path */

			ok &= e->x->inline_tnt ? cond_path(e, env, s, idx, 0, next) :
			      direct_path(e, env, s, idx, 0, next, SEC_NONE, 0);
			ok &= put_rel32(rel, (uintptr_t)e->p);
		}
		ok &= e->x->inline_tnt ? cond_path(e, env, s, idx, 1, s->target) :
		      direct_path(e, env, s, idx, 1, s->target, SEC_NONE, 0);
		break;
	case X86_INSN_JMP_DIRECT:
		s->kind = XK_JMP;
		s->cls = PTM_JUMP;
		s->target = x86_insn_branch_target(in, ip);
		ok &= e->x->plain_inline ? plain_path(e, env, s, idx) :
		      direct_path(e, env, s, idx, 0, s->target, SEC_NONE, 0);
		break;
	case X86_INSN_CALL_DIRECT:
		s->kind = XK_CALL;
		s->cls = PTM_CALL;
		s->target = x86_insn_branch_target(in, ip);
		push_ret(e, next);
		ok &= e->x->plain_inline ? plain_path(e, env, s, idx) :
		      direct_path(e, env, s, idx, 0, s->target, SEC_NONE, 0);
		break;
	case X86_INSN_JMP_INDIRECT:
		s->kind = XK_IND;
		s->cls = PTM_JUMP_IND;
		ok &= push_operand(e, in, ip, bytes);
		ok &= indirect_tail(e, env, s, idx);
		break;
	case X86_INSN_CALL_INDIRECT:
		s->kind = XK_IND;
		s->cls = PTM_CALL_IND;
		ok &= push_operand(e, in, ip, bytes);
		if ((s64)next == (s32)next) {
			/* push (%rsp); movq $next,8(%rsp): [T, next] */
			bn(e, (const u8[]){ 0xff, 0x34, 0x24, 0x48, 0xc7, 0x44, 0x24, 0x08 }, 8);
			b4(e, (u32)next);
		} else {
			/* push (%rsp); push %rax; movabs $next,%rax; mov %rax,16(%rsp); pop %rax */
			bn(e, (const u8[]){ 0xff, 0x34, 0x24, 0x50, 0x48, 0xb8 }, 6);
			b8(e, next);
			bn(e, (const u8[]){ 0x48, 0x89, 0x44, 0x24, 0x10, 0x58 }, 6);
		}
		ok &= indirect_tail(e, env, s, idx);
		break;
	case X86_INSN_RET_NEAR:
		s->kind = XK_IND;
		s->cls = PTM_RET;
		ok &= indirect_tail(e, env, s, idx);
		break;
	case X86_INSN_PTWRITE: {
		unsigned int reg = (in->modrm & 7) | ((in->rex & 1) << 3);

		s->kind = XK_PTW;
		s->cls = PTM_PTWRITE;
		s->size = (in->rex & 8) ? 8 : 4;
		ok &= direct_path(e, env, s, idx, 0, next, SEC_REG, reg);
		break;
	}
	default:
		return false;
	}
	for (unsigned int i = 0; i < 2; i++)
		s->edge[i] = (struct ptm_edge){
			.ip = ip, .next = next, .cls = s->cls, .taken = (u8)i, .insns = s->insns,
			.to = xlat_edge_to(s, i),
		};
	return ok && link_stubs(e, env, s, idx);
}

/* A form of a branch the stubs leave to the CPU (branch-step takes it). */
static bool branch_refused(const struct x86_insn *in)
{
	if (in->prefixes & X86_PFX_OSIZE)
		return true;	/* 16-bit operand: vendors differ */
	switch (in->cls) {
	case X86_INSN_RET_NEAR:
		return in->opcode == 0xc2;	/* RET imm16 */
	case X86_INSN_PTWRITE:
		return (in->modrm >> 6) != 3 || ((in->modrm & 7) | ((in->rex & 1) << 3)) == 4;
	case X86_INSN_JMP_INDIRECT:
	case X86_INSN_CALL_INDIRECT:
		return (in->flags & X86_INSN_F_RIPREL) && in->addrsize != 8;
	default:
		return false;
	}
}

/* Emit block @idx at @ip into @e; false when it does not fit or reach. */
static bool emit_block(struct emit *e, const struct xlat_env *env, struct xlat_site *s, u32 idx,
		       u64 ip)
{
	u8 bytes[X86_INSN_MAX_LEN];
	struct x86_insn in;
	u64 cur = ip;
	int err;

	memset(s, 0, sizeof(*s));
	s->start = ip;
	b8(e, ip);				/* the key the inline lookup checks */
	s->entry = here(e);
	for (;;) {
		if (e->x->code_end - e->p < X86_INSN_MAX_LEN + STUB_MAX)
			return false;
		if (cur == env->end_ip) {
			s->why = XE_END;
			break;
		}
		err = env->read(cur, bytes, &in);
		if (err) {
			s->why = err == -EFAULT ? XE_UNMAPPED : XE_DECODE;
			break;
		}
		if (is_branch(&in)) {
			if (branch_refused(&in)) {
				s->why = XE_FORM;
				break;
			}
			s->ip = cur;
			s->insns++;
			s->stub = here(e);
			if (!stub(e, env, s, idx, &in, cur, bytes))
				return false;
			s->end = here(e);
			return true;
		}
		if (!is_plain(&in)) {
			s->why = (in.flags & X86_INSN_F_RIPREL) ? XE_FORM : exit_reason(&in);
			break;
		}
		if (s->insns >= XLAT_BLOCK_MAX) {
			s->why = XE_LONG;
			break;
		}
		if (!copy_insn(e, &in, cur, bytes)) {
			e->p -= in.length;
			s->why = XE_RANGE;
			break;
		}
		s->insns++;
		cur += in.length;
	}
	/* an exit: the engine takes over at @cur (INT3 back to it) */
	s->kind = XK_EXIT;
	s->ip = s->next = cur;
	s->stub = here(e);
	b1(e, 0xcc);
	s->end = here(e);
	return true;
}

struct xlat_site *xlat_translate(struct xlat_cpu *x, const struct xlat_env *env, u64 ip)
{
	struct xlat_site *s;
	struct emit e;

	if (x->stale) {
		x->stale = false;
		xlat_reset(x);
	}
	s = xlat_lookup(x, ip);
	if (s)
		return s;
	for (int tries = 0; tries < 2; tries++) {
		if (x->nr_sites >= x->max_sites) {
			xlat_reset(x);
			continue;
		}
		if (x->code_cur == x->code) {
			/* an empty cache: its tnt_put first (none when it cannot be made) */
			e = (struct emit){ .p = x->code_cur, .start = x->code_cur, .x = x };
			if (!emit_tnt_put(&e, env) || e.far)
				x->tnt_put = NULL;
			if (!x->tnt_put || !emit_tip_put(&e) || e.far)
				x->tip_put = x->tip_call = NULL;
			x->code_cur = e.p;
		}
		s = &x->sites[x->nr_sites];
		e = (struct emit){ .p = x->code_cur, .start = x->code_cur, .x = x };
		if (!emit_block(&e, env, s, x->nr_sites, ip) || e.far) {
			if (e.x->code_end - e.p < X86_INSN_MAX_LEN + STUB_MAX) {
				xlat_reset(x);	/* full: start again, empty */
				continue;
			}
			/* a stub that does not reach (rel32 or rel8): the CPU's */
			e.p = x->code_cur;
			s->why = XE_RANGE;
			b8(&e, ip);
			s->entry = here(&e);
			s->kind = XK_EXIT;
			s->ip = s->next = s->start = ip;
			s->insns = 0;
			s->stub = here(&e);
			b1(&e, 0xcc);
			s->end = here(&e);
		}
		if (s->kind == XK_EXIT)
			x->st.exits[s->why]++;
		x->code_cur = e.p;
		x->nr_sites++;
		x->table[ip & TABLE_MASK] = xlat_entry(x, s);
		x->st.blocks++;
		x->st.code_bytes += (u64)(e.p - e.start);
		return s;
	}
	return NULL;
}

u64 xlat_link(struct xlat_cpu *x, const struct xlat_env *env, u64 id)
{
	struct xlat_site *s = &x->sites[id >> 1], *t;
	unsigned int taken = id & 1;
	u64 to = xlat_edge_to(s, taken);	/* a direct edge's: links are made for those only */
	u32 resets = (u32)x->st.resets;

	t = xlat_translate(x, env, to);
	if (!t)
		return 0;
	x->st.links++;
	/* a reset on the way took @s with it: nothing to patch */
	if ((u32)x->st.resets == resets && s->link[taken]) {
		u32 jno = fast_jno(s, taken);

		put_rel32(x->region + s->link[taken], xlat_entry(x, t));
		if (jno)
			put_rel32(x->region + jno, xlat_entry(x, t));
	}
	return xlat_entry(x, t);
}

bool xlat_where(struct xlat_cpu *x, u64 addr, struct xlat_pos *pos)
{
	u32 o = (u32)(addr - (uintptr_t)x->region);
	struct xlat_site *s = NULL;

	if (!xlat_owns(x, addr))
		return false;
	for (u32 lo = 0, hi = x->nr_sites; lo < hi;) {
		u32 mid = (lo + hi) / 2;

		if (x->sites[mid].entry <= o) {
			s = &x->sites[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (!s || o >= s->end)
		return false;	/* a key between blocks */
	memset(pos, 0, sizeof(*pos));
	pos->site = s;
	if (o < s->stub) {
		pos->body = true;
		pos->ip = s->start + (o - s->entry);
		return true;
	}
	pos->ip = s->ip;
	if (s->kind == XK_IND && s->tip_at[0] && o >= s->stub + s->tip_at[0] &&
	    o < s->stub + s->tip_at[1]) {
		/* its TIP sent by tip_put: on to the lookup */
		pos->retired = true;
		pos->ip = x->tip_last;
		return true;
	}
	if (s->kind == XK_IND && s->ret_at) {
		/* ret_fast(): which part */
		u32 m[XLAT_RF_NR];

		xlat_ret_marks(s, m);
		if ((o >= m[XLAT_RF_CHECK] && o < m[XLAT_RF_RETIRED]) ||
		    (o >= m[XLAT_RF_FULL] && o < m[XLAT_RF_FULL_RETIRED])) {
			/* before its pop: back to its check, its count and bit taken back */
			pos->rewind = m[XLAT_RF_CHECK];
			pos->undo_ins = o >= m[XLAT_RF_COUNTED];
			pos->undo_bit = o >= m[XLAT_RF_BIT];
			return true;
		}
		if (o >= m[XLAT_RF_RETIRED] && o < m[XLAT_RF_OUT]) {
			pos->retired = true;
			pos->ip = x->ret_to;
			pos->rs_poison = o < m[XLAT_RF_POISONED] ||
					 (o >= m[XLAT_RF_FULL_RETIRED] && o < m[XLAT_RF_FULL_POISONED]);
			return true;
		}
		if (o >= m[XLAT_RF_START] && o < m[XLAT_RF_OUT] + 3)
			return true;	/* nothing done: on from there */
	}
	if ((s->kind == XK_JMP || s->kind == XK_CALL) && s->fast_at[0]) {
		/* plain_fast(): which part */
		const bool push = s->kind == XK_CALL && s->target != s->next;
		u32 m[XLAT_PF_NR];

		xlat_plain_marks(s, push, m);
		if (o >= m[XLAT_PF_CHECK] && o < m[XLAT_PF_PUSHED]) {
			/* before its push committed: back to its check (RDX
			 * pushed: through UNDO), its counts taken back */
			pos->rewind = o >= m[XLAT_PF_PUSH] ? m[XLAT_PF_UNDO] : m[XLAT_PF_CHECK];
			pos->undo_ins = o >= m[XLAT_PF_COUNTED];
			pos->undo_jc = o >= m[XLAT_PF_JC];
			return true;
		}
		if (o >= m[XLAT_PF_PUSHED] && o < m[XLAT_PF_UNDO]) {
			pos->retired = true;
			pos->ip = s->target;
			return true;
		}
		if (o >= m[XLAT_PF_UNDO] && o < m[XLAT_PF_KEEP])
			return true;	/* nothing counted: on from there */
	}
	if (s->kind != XK_COND && s->inl[0][XLAT_INL_CHECK]) {
		/* a direct JMP's, CALL's or RET's inline path (plain_path(), indirect_tail()) */
		const u32 *in = s->inl[0];

		if ((o >= in[XLAT_INL_CHECK] && o < s->post[0][0]) ||
		    (o >= in[XLAT_INL_START] && o < in[XLAT_INL_RETIRED])) {
			bool counted = o >= in[XLAT_INL_START] && o < in[XLAT_INL_RETIRED];

			pos->rewind = in[XLAT_INL_CHECK];
			pos->undo_ins = counted && o >= in[XLAT_INL_COUNTED];
			pos->undo_jc = counted && s->kind != XK_IND && o >= s->inl[1][0];
			pos->undo_bit = counted && s->kind == XK_IND && o >= s->inl[1][0];
			return true;
		}
		if (s->kind == XK_IND && o >= s->post[1][0] && o < s->post[1][1]) {
			pos->retired = true;
			pos->ip = x->ret_to;
			pos->rs_poison = o < s->inl[1][1];
			return true;
		}
	}
	for (unsigned int i = 0; s->kind == XK_COND && i < 2; i++) {
		/* fast_path(): which part */
		u32 m[XLAT_FAST_NR];

		if (!s->fast_at[i])
			continue;
		xlat_fast_marks(s, i, m);
		if (o < m[XLAT_FAST_START] || o >= m[XLAT_FAST_KEEP])
			continue;
		if (o < m[XLAT_FAST_CHECK] ||
		    (o >= m[XLAT_FAST_MARK] && m[XLAT_FAST_MARK] > m[XLAT_FAST_OFF]))
			return true;	/* PUSHF not run, or POPF run while off: on from there */
		if (o >= m[XLAT_FAST_Z] && o < m[XLAT_FAST_OFF]) {
			pos->retired = true;	/* (tnt_put's return) */
			pos->ip = i ? s->target : s->next;
		} else if (o >= m[XLAT_FAST_RETIRED] && o < m[XLAT_FAST_Z] && !xlat_tnt_off(x)) {
			/* its packet handed over with the rest when full: on
			 * at Z (POPF), or at the other path's edge (its JMP) */
			pos->retired = true;
			pos->ip = i ? s->target : s->next;
			pos->rewind = (s->fast_at[i] & XLAT_FAST_PUSHF) ? m[XLAT_FAST_Z] :
				      s->inl[i][XLAT_INL_Z] + 1;
		} else {
			/* before its bit, or it was off: back to its check */
			pos->rewind = m[XLAT_FAST_CHECK];
			pos->undo_ins = o >= m[XLAT_FAST_COUNTED] && o < m[XLAT_FAST_RETIRED];
		}
		return true;
	}
	for (unsigned int i = 0; s->kind == XK_COND && i < 2; i++) {
		/* cond_path(): which part of its stub (the arming decides one) */
		const u32 *in = s->inl[i], z = in[XLAT_INL_Z], retry = z + XLAT_Z_LEN;

		if (!in[XLAT_INL_CHECK])
			break;	/* stubs without the inline TNT */
		if (o >= in[XLAT_INL_CHECK] && o < in[XLAT_INL_RETIRED]) {
			/* before its bit: not retired, and back to its check */
			pos->rewind = in[XLAT_INL_CHECK];
			pos->undo_ins = o >= in[XLAT_INL_COUNTED];
			return true;
		}
		if ((o >= in[XLAT_INL_RETIRED] && o < z && xlat_tnt_off(x)) ||
		    (o >= retry && o < s->post[i][0])) {
			/* its count and bit went nowhere (it was off), or
			 * before its record: back to its check */
			pos->rewind = in[XLAT_INL_CHECK];
			return true;
		}
		if (o >= in[XLAT_INL_RETIRED] && o < retry) {
			/* after its bit while armed (its packet handed over
			 * with the rest when full): on after tnt_put */
			pos->retired = true;
			pos->ip = i ? s->target : s->next;
			pos->rewind = o < z ? z : 0;
			return true;
		}
	}
	for (unsigned int i = 0; i < 2; i++) {
		bool post = (o >= s->post[i][0] && o < s->post[i][1]) ||
			    (s->link[i] && o >= s->linkstub[i][0] && o < s->linkstub[i][1]);

		if (!post || s->kind == XK_EXIT)
			continue;
		pos->retired = true;
		if (s->kind != XK_COND && s->inl[1][2] && o >= s->post[0][0] && o < s->inl[1][2])
			pos->rewind = s->post[0][0];	/* its turning off, again from its check */
		switch (s->kind) {
		case XK_COND:
			pos->ip = i ? s->target : s->next;
			break;
		case XK_IND:
			pos->ip = ((const u64 *)(uintptr_t)x->rec_ptr)[-1];	/* its target */
			break;
		case XK_PTW:
			pos->ip = s->next;
			break;
		default:
			pos->ip = s->target;
			break;
		}
	}
	return true;
}
