// SPDX-License-Identifier: MIT
/*
 * Host tests of the translator of pt.step=translate (kernel/trace_engine/
 * xlat.c): functions of this file are translated into an executable region
 * near them and run there by this CPU. Their results must be the CPU's, and
 * the records they leave must describe one connected path: each block starts
 * where the branch before it went, from the function's entry to its return
 * to the caller. The runtime here is the kernel's (xlat_rt.S) without CLI
 * (user space), calling the translator the same way. Also: the map from
 * cache addresses back to original instructions, a record buffer filling up
 * many times in one run, and the forms left to the CPU (exits). The Jcc
 * stubs' inline TNT is armed (a small room, so it fills and calls the
 * runtime often): its results are replayed block by block from where the
 * flow was, and must join the records into the same one path; armed for
 * whole packets, the packets tnt_put and tip_put store (TNT-8, TNT-64,
 * TIP) are read back by a decoder of its own into that path too.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <ucontext.h>
#include <cmocka.h>
#include "hosted.h"
#include <topaz/x86_insn.h>
#include <topaz/pt_model.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include "../../kernel/trace_engine/xlat.h"

#define NOSAN __attribute__((noinline, no_sanitize("address", "undefined")))

static struct xlat_cpu *X;
static struct xlat_env env;
static u64 ret_native;		/* the harness's return point: leaves the cache */

/* What the records said, in order. */
/* (copied when consumed: a cache reset reuses the sites) */
struct step { u64 start, to; u8 kind, cls; bool taken; };
static struct step *steps;
static size_t nsteps, cap;
static u64 flushes_full, flushes_tnt, inline_results;
static u64 flow_at;	/* where the flow is after the steps so far */
#define TEST_ROOM	5	/* the inline TNT's room: fills every few results */
static unsigned int room = TEST_ROOM;
/* test_direct_packets(): the output tnt_put stores full packets in, as the
 * model would allow (pt_model_tnt_direct()): its bytes until the limit */
static u8 direct_out[4096];
static u64 direct_room, direct_packets;
static bool direct_tip;		/* ... and tip_put its TIPs */
static u64 model_last;		/* the Last IP lent at the arming (tip_put's) */

/* The arming, as the engine's after a hand-over (xlat_tnt_arm_out()). */
static void arm(void)
{
	xlat_tnt_arm(X, room);
	if (direct_room && room == PTPK_TNT64_MAX && X->tnt_put) {
		X->tnt_out = X->tnt_out0 = (uintptr_t)direct_out;
		X->tnt_lim = (uintptr_t)direct_out + direct_room;
		X->tip_lim = direct_tip ? X->tnt_lim : 0;
		X->tip_last = model_last;
	}
}

static void add_step(const struct step *st)
{
	if (nsteps == cap) {
		cap = cap ? cap * 2 : 4096;
		steps = realloc(steps, cap * sizeof(*steps));
		assert_non_null(steps);
	}
	steps[nsteps++] = *st;
	flow_at = st->to;
}

/* The step record @p stands for. */
static void rec_step(const u64 *p)
{
	u64 w = p[0];
	const struct xlat_site *s = &X->sites[xlat_word_site(w)];
	struct step st = { .start = s->start, .kind = s->kind, .cls = s->cls,
			   .taken = ((u32)w & PTM_REC_EDGE) % sizeof(struct xlat_site) != 0 };

	switch (s->kind) {
	case XK_COND: st.to = st.taken ? s->target : s->next; break;
	case XK_IND: st.to = p[1]; break;
	case XK_PTW: st.to = s->next; break;
	default: st.to = s->target; break;
	}
	add_step(&st);
}

/*
 * The trace unit's RET compression stack as the records and the inline
 * results leave it, replayed here (the stubs' own is X->rs): a CALL pushes,
 * a RET pops when it matches. What a RET compressed inline went to is its top.
 */
static struct ptm_retstack shadow;
static u64 rec_steps;	/* steps that came as records */

static void shadow_step(const struct step *st, u64 next)
{
	if ((st->cls == PTM_CALL && st->to != next) || st->cls == PTM_CALL_IND)
		ptm_rs_push(&shadow, next);
	else if (st->cls == PTM_RET)
		ptm_rs_pop_if(&shadow, st->to);
}

/* A record as the trace unit takes it: the step, and the lent stack's change. */
static void rec_apply(const u64 *p)
{
	const struct xlat_site *s = &X->sites[xlat_word_site(p[0])];

	rec_step(p);
	rec_steps++;
	shadow_step(&steps[nsteps - 1], s->next);
	if ((s->cls == PTM_CALL && s->target != s->next) || s->cls == PTM_CALL_IND)
		ptm_rs_push(&X->rs, s->next);
	else if (s->cls == PTM_RET)
		ptm_rs_pop_if(&X->rs, steps[nsteps - 1].to);
}

/*
 * What the code stored (tnt_put's full TNT-64s, tip_put's TNT-8s, TNT-64s
 * and TIPs) read back into one queue, oldest first, by a decoder of its
 * own (the SDM's formats), the TIPs' Last IP as the model lent it.
 */
enum { Q_BIT, Q_TIP };
static struct { u8 kind; u64 v; } queue[32768];
static unsigned int nq_all;
static u64 direct_tips;

static void queue_add(u8 kind, u64 v)
{
	assert_true(nq_all < ARRAY_SIZE(queue));
	queue[nq_all].kind = kind;
	queue[nq_all++].v = v;
}

/* A TNT payload @v (its stop bit above the results, the newest lowest) into the queue. */
static void queue_tnt(u64 v)
{
	assert_true(v > 1);
	for (int b = 62 - __builtin_clzll(v); b >= 0; b--)
		queue_add(Q_BIT, (v >> b) & 1);
}

/* The stored bytes into the queue, checked against the code's counts. */
static void parse_direct(void)
{
	static const u8 ip_len[8] = { [1] = 2, [2] = 4, [3] = 6, [4] = 6, [6] = 8 };
	const u8 *b = (const u8 *)(uintptr_t)X->tnt_out0, *e = (const u8 *)(uintptr_t)X->tnt_out;
	unsigned int full = 0, tips = 0, tnt = 0;

	while (b < e) {
		u64 v = 0;

		if (b[0] == 0x02 && b[1] == 0xa3) {		/* TNT-64 */
			memcpy(&v, b + 2, 6);
			full += v >> 47 == 1;
			tnt += v >> 47 != 1;
			queue_tnt(v);
			b += 8;
		} else if (!(b[0] & 1)) {			/* TNT-8 */
			queue_tnt(b[0] >> 1);
			tnt++;
			b++;
		} else if ((b[0] & 0x1f) == 0x0d && ip_len[b[0] >> 5]) {	/* TIP */
			unsigned int ipc = b[0] >> 5;

			memcpy(&v, b + 1, ip_len[ipc]);
			v = ptpk_ip_reconstruct((enum ptpk_ipc)ipc, v, model_last);
			/* compressed as the encoder's rule says */
			assert_int_equal(ipc, ptpk_ip_compress(v, model_last));
			model_last = v;
			queue_add(Q_TIP, v);
			tips++;
			b += 1 + ip_len[ipc];
		} else {
			fail_msg("stored byte %#x at %zu: not a packet tip_put or tnt_put writes",
				 b[0], (size_t)(b - (const u8 *)(uintptr_t)X->tnt_out0));
		}
	}
	assert_ptr_equal(b, e);
	assert_int_equal(full, X->tnt_full);
	assert_int_equal(tips, X->tip_n);
	assert_int_equal(tnt, X->tip_pk);
	if (tips)
		assert_int_equal(model_last, X->tip_last);
	direct_packets += full;
}

/*
 * The inline results, oldest first, replayed block by block from where the
 * flow is: a Jcc's bit, a RET's bit (1: compressed, to the stack's top),
 * a direct JMP's or CALL's event; and the direct JMPs' and CALLs' records
 * that may come between them (with records only for those: before any
 * other record, the engine hands them over first), in the order the flow
 * took them; then the other records. The stack replayed must end as the
 * stubs left theirs.
 */
static void consume(void)
{
	u64 *p = X->rec_read, *end = (u64 *)(uintptr_t)X->rec_ptr, *lead = p, bits, insns = 0;
	unsigned int n = xlat_tnt_taken(X, &bits), i;
	u64 jc = X->tnt_w0 == XLAT_TNT_OFF ? 0 : X->tnt_jc;
	unsigned int q = 0;

	while (!X->plain_inline && lead < end &&
	       (X->sites[xlat_word_site(lead[0])].kind == XK_JMP ||
		X->sites[xlat_word_site(lead[0])].kind == XK_CALL))
		lead += 2;
	/* the packets the code stored (tnt_put, tip_put) first, then tnt_w's */
	nq_all = 0;
	parse_direct();
	for (i = n; i; i--)
		queue_add(Q_BIT, (bits >> (i - 1)) & 1);
	for (; q < nq_all || jc || p < lead;) {
		const struct xlat_site *s = xlat_lookup(X, flow_at);
		bool bit_site = s && (s->kind == XK_COND || s->cls == PTM_RET);

		if (bit_site && q < nq_all && queue[q].kind == Q_BIT) {
			bool taken = queue[q++].v;

			insns += s->insns;
			if (s->kind == XK_COND) {
				add_step(&(struct step){ .start = s->start, .kind = s->kind, .cls = s->cls,
							 .taken = taken, .to = taken ? s->target : s->next });
				continue;
			}
			/* a RET compressed inline: a 1, to the stack's top */
			if (!taken || *ptm_rs_top(&shadow) == PTM_RS_POISON)
				fail_msg("inline result %u of %u: a RET's %s at %#llx", q, nq_all,
					 taken ? "1 with an empty stack" : "0",
					 (unsigned long long)flow_at);
			add_step(&(struct step){ .start = s->start, .kind = s->kind, .cls = s->cls,
						 .taken = true, .to = *ptm_rs_top(&shadow) });
			shadow_step(&steps[nsteps - 1], s->next);
		} else if (s && s->kind == XK_IND && q < nq_all && queue[q].kind == Q_TIP) {
			/* its TIP from the code (tip_put) */
			insns += s->insns;
			add_step(&(struct step){ .start = s->start, .kind = s->kind, .cls = s->cls,
						 .to = queue[q++].v });
			shadow_step(&steps[nsteps - 1], s->next);
			direct_tips++;
		} else if (s && jc && (s->kind == XK_JMP || s->kind == XK_CALL)) {
			jc--;
			insns += s->insns;
			add_step(&(struct step){ .start = s->start, .kind = s->kind, .cls = s->cls,
						 .to = s->target });
			shadow_step(&steps[nsteps - 1], s->next);
		} else if (p < lead) {
			rec_apply(p);
			p += 2;
		} else {
			fail_msg("inline result %u of %u (%llu JMP/CALL left): no block for it at %#llx",
				 q + 1, nq_all, (unsigned long long)jc, (unsigned long long)flow_at);
		}
	}
	assert_int_equal(xlat_tnt_insns(X), insns);
	for (i = 0; i < nq_all; i++)
		inline_results += queue[i].kind == Q_BIT;
	nq_all = 0;
	for (; p < end; p += 2)
		rec_apply(p);
	assert_memory_equal(&shadow, &X->rs, sizeof(shadow));
	X->rec_read = X->rec_base;
	X->rec_ptr = (uintptr_t)X->rec_base;
	X->tnt_out0 = X->tnt_out;
	arm();
}

/* The store into the guard page (a full buffer): as the kernel's #PF path. */
static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	u64 rip = (u64)uc->uc_mcontext.gregs[REG_RIP];

	if (si->si_addr != (void *)X->rec_guard || !xlat_owns(X, rip)) {
		signal(sig, SIG_DFL);	/* not ours: crash as it would have */
		return;
	}
	flushes_full++;
	consume();
	xlat_tnt_wait(X);	/* the faulting stub's record comes next */
	uc->uc_mcontext.gregs[REG_RCX] = (greg_t)X->rec_ptr;
}

/* The runtime's C halves, as the engine has them (used: only the asm below calls them). */
static __used u64 t_rt_link_c(u64 id)
{
	consume();
	return xlat_link(X, &env, id);
}

static __used u64 t_rt_flush_c(u64 ret)
{
	flushes_tnt++;
	consume();
	return ret;
}

static __used u64 t_rt_lookup_c(u64 target)
{
	struct xlat_site *s;

	consume();
	if (target == ret_native)
		return target;	/* back to the harness, natively */
	s = xlat_translate(X, &env, target);
	return s ? xlat_entry(X, s) : 0;
}

/* xlat_rt.S without CLI; t_run(entry, arg) calls translated code. */
__asm__(
	".text\n"
	".macro TSAVE\n pushfq\n push %rax\n push %rcx\n push %rdx\n push %rbx\n push %rsi\n"
	" push %rdi\n push %rbp\n push %r8\n push %r9\n push %r10\n push %r11\n push %r12\n"
	" push %r13\n push %r14\n push %r15\n mov %rsp, %rbx\n and $-16, %rsp\n.endm\n"
	"t_rt_link:\n TSAVE\n mov 128(%rbx), %rdi\n call t_rt_link_c\n mov %rax, 128(%rbx)\n jmp t_rt_tail\n"
	"t_rt_lookup:\n TSAVE\n mov 128(%rbx), %rdi\n call t_rt_lookup_c\n mov %rax, 128(%rbx)\n jmp t_rt_tail\n"
	"t_rt_flush:\n TSAVE\n mov 128(%rbx), %rdi\n call t_rt_flush_c\n mov %rax, 128(%rbx)\n jmp t_rt_tail\n"
	"t_rt_tail:\n mov %rbx, %rsp\n pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %r11\n"
	" pop %r10\n pop %r9\n pop %r8\n pop %rbp\n pop %rdi\n pop %rsi\n pop %rbx\n pop %rdx\n"
	" pop %rcx\n pop %rax\n popfq\n ret\n"
	/* u64 t_run(u64 entry, u64 arg): call the cache at entry with arg in RDI */
	".globl t_run\nt_run:\n push %rbx\n mov %rdi, %rax\n mov %rsi, %rdi\n"
	" lea t_back(%rip), %rbx\n push %rbx\n jmp *%rax\n"
	".globl t_back\nt_back:\n pop %rbx\n ret\n");
extern const char t_rt_link[], t_rt_lookup[], t_rt_flush[], t_back[];
u64 t_run(u64 entry, u64 arg);

static int read_insn(u64 ip, u8 *bytes, struct x86_insn *in)
{
	memcpy(bytes, (const void *)(uintptr_t)ip, X86_INSN_MAX_LEN);
	return x86_insn_decode(bytes, X86_INSN_MAX_LEN, in) ? -EINVAL : 0;
}

/* ---------------------------------------------------------------- the code run */

static volatile u64 sink_v;
static u64 table_g[64];

static NOSAN u64 leaf_a(u64 x) { return x * 3 + 1; }
static NOSAN u64 leaf_b(u64 x) { return (x >> 1) ^ 0x5a; }
static u64 (*volatile ops[2])(u64) = { leaf_a, leaf_b };

static NOSAN u64 f_loop(u64 n)
{
	u64 acc = 1;

	for (u64 i = 0; i < n; i++) {
		if (i % 3 == 0)
			acc += leaf_a(acc);
		else
			acc ^= ops[i & 1](acc + i);	/* indirect call */
		if (acc > 100000)
			acc %= 977;
		table_g[i & 63] += acc;		/* RIP-relative store */
	}
	return acc;
}

static NOSAN u64 f_fib(u64 n)
{
	return n < 2 ? n : f_fib(n - 1) + f_fib(n - 2);
}

static NOSAN u64 f_switch(u64 n)
{
	u64 acc = 0;

	for (u64 i = 0; i < n; i++) {
		switch ((i * 7 + acc) % 9) {	/* a jump table, at -O1 and up */
		case 0: acc += 11; break;
		case 1: acc ^= 0x33; break;
		case 2: acc = acc * 5 + 1; break;
		case 3: acc -= 7; break;
		case 4: acc += i; break;
		case 5: acc = ~acc; break;
		case 6: acc >>= 1; break;
		case 7: acc += leaf_b(acc); break;
		default: acc += 3; break;
		}
	}
	return acc;
}

static NOSAN u64 f_sort(u64 n)
{
	u64 a[128], h = 0;

	for (u64 i = 0; i < n; i++)
		a[i] = (i * 2654435761u) & 0xffff;
	for (u64 i = 1; i < n; i++) {
		u64 v = a[i], j = i;

		while (j > 0 && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
	for (u64 i = 0; i < n; i++)
		h = h * 31 + a[i];
	return h;
}

/* ---------------------------------------------------------------- harness */

static u8 *region;

static int setup(void **state)
{
	size_t size = (size_t)PAGE_SIZE << XLAT_REGION_ORDER;
	uintptr_t near = ((uintptr_t)f_loop & ~((uintptr_t)(1 << 21) - 1)) + (64u << 20);
	static struct xlat_site sites[XLAT_MAX_SITES];

	(void)state;
	/* within reach of the code it translates (rel32) */
	for (int i = 0; i < 64 && !region; i++, near += 32u << 20) {
		void *p = mmap((void *)near, size, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p != MAP_FAILED)
			region = p;
	}
	assert_non_null(region);
	X = (struct xlat_cpu *)region;
	xlat_cpu_init(X, region, sites);
	/* the stubs with the inline TNT (pt.inline_tnt): Jccs, RETs, direct JMPs and CALLs */
	xlat_set_stubs(X, true, false, true);
	ptm_rs_reset(&shadow);
	env = (struct xlat_env){ .read = read_insn, .end_ip = 0, .rt_link = (uintptr_t)t_rt_link,
				 .rt_lookup = (uintptr_t)t_rt_lookup, .rt_flush = (uintptr_t)t_rt_flush };
	assert_int_equal(mprotect(X->rec_guard, PAGE_SIZE, PROT_NONE), 0);
	ret_native = (uintptr_t)t_back;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(region, (size_t)PAGE_SIZE << XLAT_REGION_ORDER);
	free(steps);
	return 0;
}

/* Run @fn(@arg) translated; its result, the records checked for one path. */
static u64 run(u64 (*fn)(u64), u64 arg)
{
	struct xlat_site *s = xlat_translate(X, &env, (uintptr_t)fn);
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	u64 r, at = (uintptr_t)fn;

	/* cmocka takes SIGSEGV for each test: the guard page's is ours here */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, NULL), 0);

	assert_non_null(s);
	assert_int_not_equal(s->kind, XK_EXIT);
	nsteps = 0;
	flow_at = at;
	arm();
	r = t_run(xlat_entry(X, s), arg);
	consume();
	assert_true(nsteps > 0);
	for (size_t i = 0; i < nsteps; i++) {
		/* each block starts where the last branch went */
		if (steps[i].start != at)
			fail_msg("record %zu of %zu: block at %#llx, the flow was at %#llx", i, nsteps,
				 steps[i].start, at);
		at = steps[i].to;
	}
	assert_int_equal(steps[nsteps - 1].cls, PTM_RET);
	assert_int_equal(at, ret_native);
	return r;
}

/*
 * Flags live across its branches: JB then JE on one CMP, ADC and SETZ
 * after them. A stub that wrote flags there (fast_path() where
 * flags_dead() was wrong) changes its result.
 */
u64 f_flags(u64 n);
__asm__(".text\n.globl f_flags\n.type f_flags,@function\nf_flags:\n"
	"	xor %eax,%eax\n	mov %rdi,%rcx\n"
	"1:	mov %rcx,%rdx\n	and $7,%rdx\n	cmp $3,%rdx\n	jb 2f\n	je 3f\n"
	"	adc $5,%rax\n	jmp 4f\n"
	"2:	adc $1,%rax\n	jmp 4f\n"
	"3:	setz %dl\n	add %rdx,%rax\n"
	"4:	dec %rcx\n	jnz 1b\n	ret\n"
	".size f_flags,.-f_flags\n");

/*
 * Direct JMPs to code that writes flags first (plain_fast()), and to code
 * that reads them (JMP's own stub, the other path).
 */
u64 f_jumps(u64 n);
__asm__(".text\n.globl f_jumps\n.type f_jumps,@function\nf_jumps:\n"
	"	xor %eax,%eax\n	mov %rdi,%rcx\n"
	"1:	jmp 2f\n"
	"2:	add $3,%rax\n	test $1,%cl\n	jmp 3f\n"
	"3:	jz 4f\n	add $5,%rax\n"
	"4:	dec %rcx\n	jnz 1b\n	ret\n"
	".size f_jumps,.-f_jumps\n");

static void test_results_and_flow(void **state)
{
	(void)state;
	memset(table_g, 0, sizeof(table_g));
	u64 want = f_loop(300);
	u64 tab[64];

	memcpy(tab, table_g, sizeof(tab));
	memset(table_g, 0, sizeof(table_g));
	assert_int_equal(run(f_loop, 300), want);
	assert_memory_equal(tab, table_g, sizeof(tab));	/* RIP-relative stores re-aimed */
	assert_int_equal(run(f_fib, 15), f_fib(15));
	assert_int_equal(run(f_switch, 500), f_switch(500));
	assert_int_equal(run(f_sort, 100), f_sort(100));
	assert_int_equal(run(f_flags, 1000), f_flags(1000));
	assert_int_equal(run(f_jumps, 1000), f_jumps(1000));
	/* the stubs that keep flags everywhere (the paths those above take when off) */
	X->keep_flags = true;
	xlat_reset(X);
	assert_int_equal(run(f_flags, 1000), f_flags(1000));
	assert_int_equal(run(f_jumps, 1000), f_jumps(1000));
	assert_int_equal(run(f_fib, 15), f_fib(15));
	assert_int_equal(run(f_sort, 100), f_sort(100));
	X->keep_flags = false;
	xlat_reset(X);
	assert_int_equal(run(f_sort, 100), f_sort(100));
	/* again, warm: every edge chained, nothing translated */
	u64 blocks = X->st.blocks;

	assert_int_equal(run(f_sort, 100), f_sort(100));
	assert_int_equal(X->st.blocks, blocks);
}

static void test_record_kinds(void **state)
{
	size_t cond = 0, ind = 0, call = 0, ret = 0;

	(void)state;
	run(f_loop, 50);
	for (size_t i = 0; i < nsteps; i++) {
		cond += steps[i].kind == XK_COND;
		call += steps[i].cls == PTM_CALL;
		ind += steps[i].cls == PTM_CALL_IND;
		ret += steps[i].cls == PTM_RET;
	}
	/* 50 iterations: 17 direct calls, 33 through the table, a return each */
	assert_true(cond >= 100);
	/* the loop's Jccs went inline between the calls' records, and filled it */
	assert_true(inline_results > 0);
	assert_true(flushes_tnt > 0);
	assert_int_equal(call, 17);
	assert_int_equal(ind, 33);
	assert_int_equal(ret, 17 + 33 + 1);
}

/*
 * The full packets the code stores itself (tnt_put): armed for a whole
 * TNT-64 with room in the output, the Jccs' results go out as packets; their
 * results, read back from the bytes, join the path (consume()). With room
 * for three, the fourth goes to the runtime's flush, and on.
 */
static void test_direct_packets(void **state)
{
	u64 flushes = flushes_tnt;

	(void)state;
	room = PTPK_TNT64_MAX;
	direct_room = sizeof(direct_out);
	direct_packets = 0;
	assert_int_equal(run(f_sort, 100), f_sort(100));
	assert_true(direct_packets >= 50);
	assert_non_null(X->tnt_put);
	direct_room = 3 * 8 + 1;	/* three packets, then the runtime */
	direct_packets = 0;
	assert_int_equal(run(f_sort, 100), f_sort(100));
	assert_true(direct_packets >= 3);
	assert_true(flushes_tnt > flushes);
	direct_room = 0;
	room = TEST_ROOM;
}

/*
 * The TIPs the code stores itself (tip_put): armed for a whole packet with
 * room, an indirect CALL's or JMP's TIP (and a RET's the stack does not
 * predict) goes out after the pending results' TNT-8 or TNT-64, with Last
 * IP compression, and an indirect CALL pushes onto the lent stack; read
 * back (parse_direct()), they join the one path. With little room, the
 * record again. And where each TIP has retired: its target.
 */
static void test_direct_tips(void **state)
{
	u64 tips = direct_tips, recs;
	struct xlat_pos pos;

	(void)state;
	room = PTPK_TNT64_MAX;
	direct_room = sizeof(direct_out);
	direct_tip = true;
	assert_int_equal(run(f_loop, 300), f_loop(300));
	assert_non_null(X->tip_put);
	assert_true(direct_tips - tips >= 150);	/* 200 calls through the table */
	assert_int_equal(run(f_switch, 500), f_switch(500));
	assert_int_equal(run(f_fib, 18), f_fib(18));
	assert_int_equal(run(f_sort, 100), f_sort(100));
	for (u32 i = 0; i < X->nr_sites; i++) {
		struct xlat_site *s = &X->sites[i];

		if (s->kind != XK_IND || !s->tip_at[0])
			continue;
		X->tip_last = 0x1234;
		assert_true(xlat_where(X, xlat_entry(X, s) - s->entry + s->stub + s->tip_at[0], &pos));
		assert_true(pos.retired);
		assert_int_equal(pos.ip, 0x1234);
		assert_int_equal(pos.rewind, 0);
		/* the JMP before it (tip_put's return when it sent nothing): not retired */
		assert_true(xlat_where(X, xlat_entry(X, s) - s->entry + s->stub + s->tip_at[0] - 2, &pos));
		assert_false(pos.retired);
		assert_int_equal(pos.rewind, s->inl[0][XLAT_INL_CHECK]);
	}
	tips = direct_tips;
	recs = rec_steps;
	direct_room = 40;	/* a TIP or two, then the records */
	assert_int_equal(run(f_loop, 300), f_loop(300));
	assert_true(direct_tips > tips);
	assert_true(rec_steps - recs >= 100);
	direct_tip = false;
	direct_room = 0;
	room = TEST_ROOM;
}

static void test_buffer_fills(void **state)
{
	u64 before = flushes_full;

	(void)state;
	/* fib(24): ~75k calls and as many returns, many buffers' worth (the
	 * stubs with records only: inline, they write none) */
	xlat_set_stubs(X, false, false, true);
	assert_int_equal(run(f_fib, 24), f_fib(24));
	assert_true(flushes_full - before >= 2 * 75025 / (XLAT_REC_BYTES / 16));
	xlat_set_stubs(X, true, false, true);
	assert_int_equal(run(f_fib, 24), f_fib(24));	/* inline: the same path */
}

static void test_where(void **state)
{
	struct xlat_site *s = xlat_translate(X, &env, (uintptr_t)f_sort);
	struct xlat_pos pos;
	u64 entry;

	(void)state;
	assert_non_null(s);
	entry = xlat_entry(X, s);
	/* the body maps byte for byte; the stub's first byte is the branch */
	for (u64 a = entry; a < (uintptr_t)X->region + s->stub; a++) {
		assert_true(xlat_where(X, a, &pos));
		assert_true(pos.body);
		assert_int_equal(pos.ip, s->start + (a - entry));
	}
	assert_true(xlat_where(X, (uintptr_t)X->region + s->stub, &pos));
	assert_false(pos.body);
	assert_false(pos.retired);
	assert_int_equal(pos.ip, s->ip);
	assert_false(xlat_where(X, (uintptr_t)X->code_cur + 16, &pos));
	assert_ptr_equal(xlat_lookup(X, (uintptr_t)f_sort), s);
}

/*
 * A cache that fills up in the middle of a run starts again empty: a link
 * or lookup then translates into the new cache, and the edge it came from
 * (gone with the reset) is not patched. The run goes on, right.
 */
/*
 * What each byte of a Jcc's stub stands for (cond_path()), armed and off:
 * before its bit, the Jcc (back to its check, the count taken back after
 * it); between its bit and Z, its target when armed (on at Z) and the Jcc
 * when off (it was: the bit went nowhere); Z and its edge, the target; its
 * RETRY and OFF up to the record's publication, the Jcc; after it, the
 * target. Records only: everything after the record is the target.
 */
static void check_where_cond(const struct xlat_site *s, unsigned int i, bool off)
{
	const u32 *in = s->inl[i], z = in[XLAT_INL_Z];
	const u64 to = i ? s->target : s->next;

	for (u32 o = in[XLAT_INL_CHECK]; o < s->post[i][1]; o++) {
		struct xlat_pos pos;
		bool jcc = o < in[XLAT_INL_RETIRED] || (o < z && off) ||
			   (o >= z + XLAT_Z_LEN && o < s->post[i][0]);

		assert_true(xlat_where(X, (uintptr_t)X->region + o, &pos));
		assert_int_equal(pos.retired, !jcc);
		assert_int_equal(pos.ip, jcc ? s->ip : to);
		assert_int_equal(pos.rewind, jcc ? in[XLAT_INL_CHECK] : o < z ? z : 0);
		assert_int_equal(pos.undo_ins, o >= in[XLAT_INL_COUNTED] && o < in[XLAT_INL_RETIRED]);
	}
}

/*
 * The same for a Jcc's path that writes flags (fast_path()), before the one
 * that keeps them: before its bit, the Jcc (its count taken back after
 * it); between its bit and Z, its target when armed (on at Z), the Jcc
 * when off; from Z (tnt_put's return) to OFF, the target; OFF up to the
 * push, the Jcc. Its PUSHF, and with the flags pushed, from MARK: the Jcc
 * where it is.
 */
static void check_where_fast(const struct xlat_site *s, unsigned int i, bool off)
{
	const u64 to = i ? s->target : s->next;
	u32 m[XLAT_FAST_NR];

	xlat_fast_marks(s, i, m);
	assert_int_equal(m[XLAT_FAST_KEEP], s->inl[i][XLAT_INL_CHECK]);
	if (!(s->fast_at[i] & XLAT_FAST_PUSHF)) {
		/* after tnt_put (or the runtime's flush), where the arming may
		 * be off, Z goes on past the JNO, whose place says "the arming
		 * decides": to the other path's edge (it failed the oracle once) */
		const u8 *z = X->region + m[XLAT_FAST_Z];
		s32 rel;

		assert_int_equal(z[0], 0xe9);
		memcpy(&rel, z + 1, 4);
		assert_int_equal(m[XLAT_FAST_Z] + 5 + rel, s->inl[i][XLAT_INL_Z] + 1);
	}
	for (u32 o = m[XLAT_FAST_START]; o < m[XLAT_FAST_KEEP]; o++) {
		struct xlat_pos pos;
		bool at_z = o >= m[XLAT_FAST_Z] && o < m[XLAT_FAST_OFF];
		bool here = o < m[XLAT_FAST_CHECK] ||
			    (o >= m[XLAT_FAST_MARK] && m[XLAT_FAST_MARK] > m[XLAT_FAST_OFF]);
		bool jcc = !at_z && (o < m[XLAT_FAST_RETIRED] || o >= m[XLAT_FAST_OFF] || off);

		assert_true(xlat_where(X, (uintptr_t)X->region + o, &pos));
		assert_int_equal(pos.retired, !jcc && !here);
		assert_int_equal(pos.ip, jcc || here ? s->ip : to);
		assert_int_equal(pos.rewind, here ? 0 : jcc ? m[XLAT_FAST_CHECK] : at_z ? 0 :
					     (s->fast_at[i] & XLAT_FAST_PUSHF) ? m[XLAT_FAST_Z] :
					     s->inl[i][XLAT_INL_Z] + 1);
		assert_int_equal(pos.undo_ins, !here && o >= m[XLAT_FAST_COUNTED] &&
					       o < m[XLAT_FAST_RETIRED]);
	}
}

/*
 * A direct JMP's or CALL's path that writes flags (plain_fast()): before
 * its push is committed, the branch, back to its check (from its push of
 * RDX, through UNDO), its counts taken back after them; then the target;
 * from UNDO to the other path's check, the branch where it is.
 */
static void check_where_plain(const struct xlat_site *s)
{
	const bool push = s->kind == XK_CALL && s->target != s->next;
	u32 m[XLAT_PF_NR];

	xlat_plain_marks(s, push, m);
	assert_int_equal(m[XLAT_PF_KEEP], s->inl[0][XLAT_INL_CHECK]);
	for (u32 o = m[XLAT_PF_CHECK]; o < m[XLAT_PF_KEEP]; o++) {
		struct xlat_pos pos;
		bool before = o < m[XLAT_PF_PUSHED], retired = !before && o < m[XLAT_PF_UNDO];

		assert_true(xlat_where(X, (uintptr_t)X->region + o, &pos));
		assert_int_equal(pos.retired, retired);
		assert_int_equal(pos.ip, retired ? s->target : s->ip);
		assert_int_equal(pos.rewind, !before ? 0 : o >= m[XLAT_PF_PUSH] ? m[XLAT_PF_UNDO] :
					     m[XLAT_PF_CHECK]);
		assert_int_equal(pos.undo_ins, before && o >= m[XLAT_PF_COUNTED]);
		assert_int_equal(pos.undo_jc, before && o >= m[XLAT_PF_JC]);
	}
}

/*
 * A RET's path with its flags pushed (ret_fast()): after its check and
 * before its pop (on either way, FULL's too), the RET, back to its check
 * (its count and bit taken back after them); from its pop to OUT,
 * retired to ret_to (the popped slot to poison before POISONED or
 * FULL_POISONED); elsewhere the RET where it is.
 */
static void check_where_ret(const struct xlat_site *s)
{
	u32 m[XLAT_RF_NR];

	xlat_ret_marks(s, m);
	X->ret_to = 0x1234;
	for (u32 o = m[XLAT_RF_START]; o < m[XLAT_RF_OUT] + 3; o++) {
		struct xlat_pos pos;
		bool full = o >= m[XLAT_RF_FULL] && o < m[XLAT_RF_FULL_RETIRED];
		bool back = (o >= m[XLAT_RF_CHECK] && o < m[XLAT_RF_RETIRED]) || full;
		bool retired = o >= m[XLAT_RF_RETIRED] && o < m[XLAT_RF_OUT] && !full;
		bool poison = o < m[XLAT_RF_POISONED] ||
			      (o >= m[XLAT_RF_FULL_RETIRED] && o < m[XLAT_RF_FULL_POISONED]);

		assert_true(xlat_where(X, (uintptr_t)X->region + o, &pos));
		assert_int_equal(pos.retired, retired);
		assert_int_equal(pos.ip, retired ? 0x1234 : s->ip);
		assert_int_equal(pos.rewind, back ? m[XLAT_RF_CHECK] : 0);
		assert_int_equal(pos.undo_ins, back && o >= m[XLAT_RF_COUNTED]);
		assert_int_equal(pos.undo_bit, back && o >= m[XLAT_RF_BIT]);
		assert_int_equal(pos.rs_poison, retired && poison);
	}
	assert_int_equal(m[XLAT_RF_OUT] + 3 + 8, s->inl[0][XLAT_INL_CHECK]);
}

static void test_where_cond(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		size_t conds = 0, fast = 0, pushf = 0, plain = 0, calls = 0, rets = 0;

		xlat_set_stubs(X, mode, false, true);
		xlat_reset(X);
		assert_int_equal(run(f_sort, 40), f_sort(40));
		assert_int_equal(run(f_fib, 10), f_fib(10));
		assert_int_equal(run(f_switch, 50), f_switch(50));
		assert_int_equal(run(f_jumps, 50), f_jumps(50));
		for (u32 k = 0; k < X->nr_sites; k++) {
			const struct xlat_site *s = &X->sites[k];

			if (s->kind == XK_IND && s->ret_at) {
				rets++;
				check_where_ret(s);
			}
			if ((s->kind == XK_JMP || s->kind == XK_CALL) && s->fast_at[0]) {
				plain++;
				calls += s->kind == XK_CALL;
				check_where_plain(s);
			}
			if (s->kind != XK_COND)
				continue;
			conds++;
			for (unsigned int i = 0; i < 2; i++) {
				if (mode) {
					fast += s->fast_at[i] != 0;
					pushf += !!(s->fast_at[i] & XLAT_FAST_PUSHF);
					arm();
					check_where_cond(s, i, false);
					if (s->fast_at[i])
						check_where_fast(s, i, false);
					xlat_tnt_wait(X);
					check_where_cond(s, i, true);
					if (s->fast_at[i])
						check_where_fast(s, i, true);
					continue;
				}
				assert_int_equal(s->inl[i][XLAT_INL_CHECK], 0);
				for (u32 o = s->post[i][0]; o < s->post[i][1]; o++) {
					struct xlat_pos pos;

					assert_true(xlat_where(X, (uintptr_t)X->region + o, &pos));
					assert_true(pos.retired);
					assert_int_equal(pos.ip, i ? s->target : s->next);
					assert_int_equal(pos.rewind, 0);
				}
			}
		}
		assert_true(conds > 0);
		/* every outcome has the path (the flags pushed where they are
		 * live); most of f_sort's go where they are written first */
		assert_true(!mode || (fast == 2 * conds && pushf > 0 && pushf < conds));
		/* (a CALL's push there: its slots 32-bit absolute, this test not PIE) */
		assert_true(!mode || (plain > calls && calls > 0 && rets > 0));
	}
	arm();
}

static void test_resets(void **state)
{
	u64 resets;

	(void)state;
	xlat_reset(X);		/* cold: everything is translated again */
	resets = X->st.resets;
	X->max_sites = 12;	/* f_switch alone needs more */
	assert_int_equal(run(f_switch, 500), f_switch(500));
	assert_int_equal(run(f_loop, 300), f_loop(300));
	assert_int_equal(run(f_sort, 100), f_sort(100));
	X->max_sites = XLAT_MAX_SITES;
	if (X->st.resets - resets < 2)
		fail_msg("%llu resets", X->st.resets - resets);
	assert_true(X->nr_sites <= 12);
}

/*
 * Code rewritten where blocks came from (the firmware loading an image where
 * one was unloaded): the old blocks run on until xlat_invalidate(); then
 * every lookup misses and the next translation starts the cache again.
 */
static void test_invalidate(void **state)
{
	static const u8 one[] = { 0xb8, 1, 0, 0, 0, 0xc3 };		/* mov $1,%eax; ret */
	static const u8 two[] = { 0x31, 0xc0, 0x83, 0xc0, 0x02, 0xc3 };	/* xor %eax,%eax; add $2,%eax; ret */
	u8 *code = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	u64 (*fn)(u64) = (u64 (*)(u64))(void *)code;
	u64 resets;

	(void)state;
	assert_true(code != MAP_FAILED);
	memcpy(code, one, sizeof(one));
	assert_int_equal(run(fn, 0), 1);
	assert_int_equal(run(f_loop, 40), f_loop(40));
	memcpy(code, two, sizeof(two));
	assert_int_equal(run(fn, 0), 1);	/* the old block: why the engine must be told */
	resets = X->st.resets;
	assert_false(xlat_invalidate(X, (uintptr_t)code + 64, (uintptr_t)code + PAGE_SIZE));
	assert_false(X->stale);
	assert_non_null(xlat_lookup(X, (uintptr_t)f_loop));
	assert_true(xlat_invalidate(X, (uintptr_t)code + 5, (uintptr_t)code + 6));	/* its RET */
	assert_null(xlat_lookup(X, (uintptr_t)f_loop));	/* every lookup misses ... */
	assert_null(xlat_lookup(X, (uintptr_t)code));
	assert_int_equal(X->st.resets, resets);		/* ... the reset waits for a translation */
	assert_int_equal(run(fn, 0), 2);
	assert_int_equal(X->st.resets, resets + 1);
	assert_false(X->stale);
	assert_int_equal(run(f_loop, 40), f_loop(40));
	assert_int_equal(run(f_fib, 15), f_fib(15));
	munmap(code, PAGE_SIZE);
}

/* Forms left to the CPU end a block at an exit (an INT3 back to the engine). */
static void test_exits(void **state)
{
	static const u8 code[][8] = {
		{ 0x90, 0xcd, 0x80 },			/* nop; int $0x80 */
		{ 0x90, 0x90, 0x48, 0xcf },		/* nop; nop; iretq */
		{ 0x90, 0xc2, 0x08, 0x00 },		/* nop; ret $8 */
		{ 0x66, 0xe9, 0x00, 0x00 },		/* jmp rel16 (operand size) */
		{ 0x0f, 0x05 },				/* syscall */
	};
	static const enum xlat_exit_why why[] = { XE_FAR, XE_FAR, XE_FORM, XE_FORM, XE_FAR };
	static const u16 body[] = { 1, 2, 1, 0, 0 };
	u8 *page = region + ((size_t)PAGE_SIZE << XLAT_REGION_ORDER) - PAGE_SIZE;

	(void)state;
	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++) {
		u8 *at = page + i * 64;
		struct xlat_site *s;

		memcpy(at, code[i], sizeof(code[i]));
		s = xlat_translate(X, &env, (uintptr_t)at);
		assert_non_null(s);
		assert_int_equal(s->kind, XK_EXIT);
		assert_int_equal(s->why, why[i]);
		assert_int_equal(s->insns, body[i]);
		assert_int_equal(s->ip, (uintptr_t)at + body[i]);
		assert_int_equal(*((u8 *)X->region + s->stub), 0xcc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_results_and_flow),
		cmocka_unit_test(test_record_kinds),
		cmocka_unit_test(test_buffer_fills),
		cmocka_unit_test(test_direct_packets),
		cmocka_unit_test(test_direct_tips),
		cmocka_unit_test(test_where),
		cmocka_unit_test(test_where_cond),
		cmocka_unit_test(test_resets),
		cmocka_unit_test(test_exits),
		cmocka_unit_test(test_invalidate),
	};

	return cmocka_run_group_tests_name("xlat", tests, setup, teardown);
}
