// SPDX-License-Identifier: MIT
/*
 * Flow tests of the PT model: a small code image of real x86 bytes is run by
 * a tiny simulator that feeds the model's event API; the trace is decoded by
 * libipt's instruction-flow decoder (pt_insn_*, memory through
 * pt_image_set_callback), and the decoded instruction addresses must equal
 * the executed ones exactly. Capstone checks the hand-assembled image.
 */
#include "test_pt_common.h"
#include <capstone/capstone.h>

/* ------------------------------------------------------------ the image */

#define IMG_BASE	0x400000ULL
#define IMG_SIZE	0x8000

static u8 code[IMG_SIZE];
static size_t code_len;
static struct { u64 start, end; bool bits32; } segs[8];
static int nsegs;

static u64 here(void) { return IMG_BASE + code_len; }

static u64 emit(const u8 *b, size_t n)
{
	u64 at = here();

	assert_true(code_len + n <= IMG_SIZE);
	memcpy(code + code_len, b, n);
	code_len += n;
	return at;
}

static void img_reset(void)
{
	memset(code, 0xcc, sizeof(code));
	code_len = 0;
	nsegs = 0;
}

/* a run of code in one mode, for the capstone cross-check */
static void seg_begin(bool bits32)
{
	segs[nsegs].start = here();
	segs[nsegs].bits32 = bits32;
}
static void seg_end(void) { segs[nsegs++].end = here(); }

static void put32(u64 at, u32 v) { memcpy(code + (at - IMG_BASE), &v, 4); }
static void put64(u64 at, u64 v) { memcpy(code + (at - IMG_BASE), &v, 8); }

static u64 a_nop(void) { return emit((const u8[]){ 0x90 }, 1); }
static u64 a_jcc(u64 t) { u64 a = emit((const u8[]){ 0x0f, 0x84, 0, 0, 0, 0 }, 6); put32(a + 2, (u32)(t - (a + 6))); return a; }
static u64 a_jmp(u64 t) { u64 a = emit((const u8[]){ 0xe9, 0, 0, 0, 0 }, 5); put32(a + 1, (u32)(t - (a + 5))); return a; }
static u64 a_call(u64 t) { u64 a = emit((const u8[]){ 0xe8, 0, 0, 0, 0 }, 5); put32(a + 1, (u32)(t - (a + 5))); return a; }
static void fix_jcc(u64 a, u64 t) { put32(a + 2, (u32)(t - (a + 6))); }
static void fix_rel5(u64 a, u64 t) { put32(a + 1, (u32)(t - (a + 5))); }
static u64 a_ret(void) { return emit((const u8[]){ 0xc3 }, 1); }
static u64 a_mov_rax(u64 v) { u64 a = emit((const u8[]){ 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0 }, 10); put64(a + 2, v); return a; }
static void fix_mov_rax(u64 a, u64 v) { put64(a + 2, v); }
static u64 a_jmp_rax(void) { return emit((const u8[]){ 0xff, 0xe0 }, 2); }
static u64 a_call_rax(void) { return emit((const u8[]){ 0xff, 0xd0 }, 2); }
static u64 a_ljmp_rax(void) { return emit((const u8[]){ 0xff, 0x28 }, 2); }	/* jmp far [rax] */
static u64 a_ljmp32(u64 t) { u64 a = emit((const u8[]){ 0xea, 0, 0, 0, 0, 0x33, 0 }, 7); put32(a + 1, (u32)t); return a; }
static u64 a_ptwrite_rax(void) { return emit((const u8[]){ 0xf3, 0x48, 0x0f, 0xae, 0xe0 }, 5); }
static u64 a_int(u8 n) { return emit((const u8[]){ 0xcd, n }, 2); }
static u64 a_iretq(void) { return emit((const u8[]){ 0x48, 0xcf }, 2); }
static u64 a_syscall(void) { return emit((const u8[]){ 0x0f, 0x05 }, 2); }
static u64 a_sysretq(void) { return emit((const u8[]){ 0x48, 0x0f, 0x07 }, 3); }
static u64 a_mov_cr3(void) { return emit((const u8[]){ 0x0f, 0x22, 0xd8 }, 3); }
static u64 a_hlt(void) { return emit((const u8[]){ 0xf4 }, 1); }
static u64 a_pop_rcx(void) { return emit((const u8[]){ 0x59 }, 1); }

/* Capstone must see an instruction start of the same length at every
 * address the simulator executes. */
static u8 insn_len_at[IMG_SIZE];

static void capstone_check(void)
{
	memset(insn_len_at, 0, sizeof(insn_len_at));
	for (int s = 0; s < nsegs; s++) {
		csh h;
		cs_insn *insn;
		size_t n;

		assert_int_equal(cs_open(CS_ARCH_X86, segs[s].bits32 ? CS_MODE_32 : CS_MODE_64, &h), CS_ERR_OK);
		for (u64 at = segs[s].start; at < segs[s].end;) {
			static const u8 ptwrite_rax[] = { 0xf3, 0x48, 0x0f, 0xae, 0xe0 };

			n = cs_disasm(h, code + (at - IMG_BASE), segs[s].end - at, at, 0, &insn);
			for (size_t i = 0; i < n; i++)
				insn_len_at[insn[i].address - IMG_BASE] = (u8)insn[i].size;
			if (n) {
				at = insn[n - 1].address + insn[n - 1].size;
				cs_free(insn, n);
			}
			if (at == segs[s].end)
				break;
			/* capstone 4 does not know PTWRITE: step over exactly that */
			if (memcmp(code + (at - IMG_BASE), ptwrite_rax, sizeof(ptwrite_rax)))
				fail_msg("capstone cannot decode the image at %#llx", at);
			insn_len_at[at - IMG_BASE] = sizeof(ptwrite_rax);
			at += sizeof(ptwrite_rax);
		}
		cs_close(&h);
	}
}

/* ------------------------------------------------------------ the CPU */

struct exec_rec { u64 ip; u8 cpl; };

struct sim {
	u64 ip;
	u8 cpl;
	enum ptm_mode mode;
	u64 rax, rcx;
	u64 stack[1024];
	int sp;
	struct exec_rec *ex;
	size_t n, cap;
	bool report_all;		/* feed non-branch instructions too */
	bool (*cond)(struct sim *s, u64 ip);
	void (*before)(struct sim *s);	/* test actions before each instruction */
	u64 far_target;
	u64 lstar;
	u64 idt[256];
	size_t intr_at[8];		/* external interrupts before instruction n */
	u8 intr_vec[8];
	int nintr;
	size_t max_steps;
	u64 tracing_ctl;		/* RTIT_CTL while tracing */
	bool stopped;
	u64 x;				/* test-private */
};
static struct sim S;

static void sim_push(u64 v) { assert_true(S.sp < 1024); S.stack[S.sp++] = v; }
static u64 sim_pop(void) { assert_true(S.sp > 0); return S.stack[--S.sp]; }

static void sim_record(u64 ip)
{
	u8 len = insn_len_at[ip - IMG_BASE];

	if (!len)
		fail_msg("executed %#llx is not an instruction start per capstone", ip);
	if (S.n == S.cap) {
		S.cap = S.cap ? S.cap * 2 : 4096;
		S.ex = realloc(S.ex, S.cap * sizeof(*S.ex));
	}
	S.ex[S.n++] = (struct exec_rec){ ip, S.cpl };
}

static void other(u64 ip, u64 next)
{
	if (S.report_all) {
		struct ptm_insn in = { .cls = PTM_OTHER, .ip = ip, .next = next };

		pt_model_ev_insn(&in);
	}
}

/* Execute one instruction; false at HLT. */
static bool sim_step(void)
{
	const u8 *b = code + (S.ip - IMG_BASE);
	u64 ip = S.ip, t;

	for (int i = 0; i < S.nintr; i++)
		if (S.intr_at[i] == S.n && S.intr_vec[i]) {
			u8 v = S.intr_vec[i];

			S.intr_vec[i] = 0;
			sim_push(ip);
			sim_push(((u64)S.mode << 8) | S.cpl);
			pt_model_ev_interrupt(PTM_INTR_HW, ip, S.idt[v], v, 0, PTM_MODE_64);
			S.ip = S.idt[v];
			S.cpl = 0;
			S.mode = PTM_MODE_64;
			return true;
		}
	if (S.before)
		S.before(&S);
	if (b[0] == 0xf4)
		return false;
	sim_record(ip);
	switch (b[0]) {
	case 0x90:
		S.ip = ip + 1;
		other(ip, S.ip);
		break;
	case 0x0f:
		if (b[1] == 0x84) {
			bool taken = S.cond(&S, ip);

			t = ip + 6 + (u64)(s64)(s32)(b[2] | b[3] << 8 | b[4] << 16 | (u32)b[5] << 24);
			if (S.mode == PTM_MODE_32)
				t &= 0xffffffffULL;
			pt_model_ev_cond(ip, ip + 6, t, taken);
			S.ip = taken ? t : ip + 6;
		} else if (b[1] == 0x05) {
			S.rcx = ip + 2;
			S.ip = S.lstar;
			S.cpl = 0;
			pt_model_ev_far(ip, S.ip, 0, PTM_MODE_64);
		} else if (b[1] == 0x22) {
			struct ptm_insn in = { .cls = PTM_MOV_CR3, .ip = ip, .next = ip + 3, .cr3 = S.rax };

			pt_model_ev_insn(&in);
			S.ip = ip + 3;
		} else {
			fail_msg("bad opcode at %#llx", ip);
		}
		break;
	case 0x59:
		S.rcx = sim_pop();
		S.ip = ip + 1;
		other(ip, S.ip);
		break;
	case 0xe9:
		t = ip + 5 + (u64)(s64)(s32)(b[1] | b[2] << 8 | b[3] << 16 | (u32)b[4] << 24);
		pt_model_ev_jump(ip, t);
		S.ip = t;
		break;
	case 0xe8:
		t = ip + 5 + (u64)(s64)(s32)(b[1] | b[2] << 8 | b[3] << 16 | (u32)b[4] << 24);
		sim_push(ip + 5);
		pt_model_ev_call(ip, ip + 5, t);
		S.ip = t;
		break;
	case 0xc3:
		t = sim_pop();
		pt_model_ev_ret(ip, t);
		S.ip = t;
		break;
	case 0x48:
		if (b[1] == 0xb8) {
			memcpy(&S.rax, b + 2, 8);
			S.ip = ip + 10;
			other(ip, S.ip);
		} else if (b[1] == 0xcf) {
			u64 m = sim_pop();

			t = sim_pop();
			S.cpl = (u8)m;
			S.mode = (enum ptm_mode)(m >> 8);
			pt_model_ev_far(ip, t, S.cpl, S.mode);
			S.ip = t;
		} else if (b[1] == 0x0f && b[2] == 0x07) {
			S.cpl = 3;
			S.ip = S.rcx;
			pt_model_ev_far(ip, S.ip, 3, PTM_MODE_64);
		} else {
			fail_msg("bad opcode at %#llx", ip);
		}
		break;
	case 0xff:
		if (b[1] == 0xe0) {
			pt_model_ev_jump_indirect(ip, S.rax);
			S.ip = S.rax;
		} else if (b[1] == 0xd0) {
			sim_push(ip + 2);
			pt_model_ev_call_indirect(ip, ip + 2, S.rax);
			S.ip = S.rax;
		} else if (b[1] == 0x28) {
			S.mode = PTM_MODE_32;
			pt_model_ev_far(ip, S.far_target, S.cpl, PTM_MODE_32);
			S.ip = S.far_target;
		} else {
			fail_msg("bad opcode at %#llx", ip);
		}
		break;
	case 0xea:
		memcpy(&t, b + 1, 4);
		t &= 0xffffffffULL;
		S.mode = PTM_MODE_64;
		pt_model_ev_far(ip, t, S.cpl, PTM_MODE_64);
		S.ip = t;
		break;
	case 0xf3:
		S.ip = ip + 5;
		pt_model_ev_ptwrite(ip, S.ip, S.rax, 8);
		break;
	case 0xcd:
		sim_push(ip + 2);
		sim_push(((u64)S.mode << 8) | S.cpl);
		pt_model_ev_interrupt(PTM_INTR_SW, ip, S.idt[b[1]], b[1], 0, PTM_MODE_64);
		S.ip = S.idt[b[1]];
		S.cpl = 0;
		S.mode = PTM_MODE_64;
		break;
	default:
		fail_msg("bad opcode %#x at %#llx", b[0], ip);
	}
	assert_int_equal(S.ip != ip, true);
	return true;
}

static bool cond_random(struct sim *s, u64 ip)
{
	s->x = s->x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (s->x >> 33) & 1;
}

/* ------------------------------------------------------------ tracing */

static u64 out_region;
#define OUT_SZ	11	/* 8 MiB */

static void sim_init(u64 entry, u8 cpl, enum ptm_mode mode)
{
	free(S.ex);
	memset(&S, 0, sizeof(S));
	S.ip = entry;
	S.cpl = cpl;
	S.mode = mode;
	S.cond = cond_random;
	S.x = 12345;
	S.max_steps = 200000;
	capstone_check();
}

static void trace_on_ctl(u64 ctl_extra, u64 ctl_clear)
{
	u64 t = topa_simple(OUT_SZ, 0, &out_region);

	topa_program(t, 0, 0);
	pt_model_ev_context(S.ip, S.cpl, S.mode);
	S.tracing_ctl = (RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN | RTIT_CTL_TOPA | RTIT_CTL_OS |
			 RTIT_CTL_USR | ctl_extra) & ~ctl_clear;
	wr(MSR_IA32_RTIT_CTL, S.tracing_ctl);
	pt_model_ev_at(S.ip);		/* the enable point */
}

static void trace_on(u64 ctl_extra)
{
	trace_on_ctl(ctl_extra, 0);
}

/* Run to HLT, then disable at the HLT as a driver's WRMSR would. */
static void run(void)
{
	size_t steps = 0;

	while (sim_step())
		assert_true(++steps < S.max_steps);
	pt_model_ev_at(S.ip);
	wr(MSR_IA32_RTIT_CTL, S.tracing_ctl & ~RTIT_CTL_TRACEEN);
}

/* The bytes in the output region are exactly the generated stream. */
static size_t trace_len(void)
{
	u64 off = rd(MSR_IA32_RTIT_OUTPUT_MASK) >> 32;

	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK) & 0xffffff80ULL, 0);
	assert_int_equal(off, cap.len);
	assert_memory_equal(pv(out_region), cap.bytes, cap.len);
	check_capture_against_libipt();
	return off;
}

/* ------------------------------------------------------------ decoding */

struct dec {
	u64 *ip;
	size_t n;
	unsigned int nev[32];
	u64 ptw[64];
	unsigned int nptw;
	int errors;
	int first_err;
	uint64_t first_err_off;
};

static int read_image(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	size_t n;

	if (ip < IMG_BASE || ip >= IMG_BASE + code_len)
		return -pte_nomap;
	n = min(size, (size_t)(IMG_BASE + code_len - ip));
	memcpy(buf, code + (ip - IMG_BASE), n);
	return (int)n;
}

static void dec_err(struct dec *d, struct pt_insn_decoder *dc, int st)
{
	if (!d->errors++) {
		d->first_err = st;
		pt_insn_get_offset(dc, &d->first_err_off);
	}
}

/* Decode from the first PSB, or from the PSB at @sync_off when >= 0. */
static void decode(struct dec *d, const u8 *buf, size_t len, long sync_off)
{
	struct pt_config cfg;
	struct pt_insn_decoder *dc;
	int st;

	memset(d, 0, sizeof(*d));
	d->ip = calloc(S.n + 16, sizeof(u64));
	pt_config_init(&cfg);
	cfg.begin = (u8 *)buf;
	cfg.end = (u8 *)buf + len;
	dc = pt_insn_alloc_decoder(&cfg);
	assert_non_null(dc);
	assert_int_equal(pt_image_set_callback(pt_insn_get_image(dc), read_image, NULL), 0);
	st = sync_off >= 0 ? pt_insn_sync_set(dc, (u64)sync_off) : pt_insn_sync_forward(dc);
	if (st < 0) {
		dec_err(d, dc, st);
		goto out;
	}
	for (;;) {
		struct pt_insn insn;

		while (st & pts_event_pending) {
			struct pt_event ev;

			st = pt_insn_event(dc, &ev, sizeof(ev));
			if (st < 0)
				break;
			if (ev.type < 32)
				d->nev[ev.type]++;
			if (ev.type == ptev_ptwrite && d->nptw < 64)
				d->ptw[d->nptw++] = ev.variant.ptwrite.payload;
		}
		if (st >= 0 && (st & pts_eos))
			break;
		if (st >= 0) {
			memset(&insn, 0, sizeof(insn));
			st = pt_insn_next(dc, &insn, sizeof(insn));
			if (insn.iclass != ptic_error) {
				if (getenv("PT_FLOW_DEBUG"))
					fprintf(stderr, "decoded %#llx st %d\n", (unsigned long long)insn.ip, st);
				assert_true(d->n < S.n + 16);
				d->ip[d->n++] = insn.ip;
			}
		}
		if (st < 0) {
			if (st == -pte_eos)
				break;
			dec_err(d, dc, st);
			st = pt_insn_sync_forward(dc);
			if (st < 0)
				break;
		}
	}
out:
	pt_insn_free_decoder(dc);
}

static void dec_free(struct dec *d) { free(d->ip); }

/* decoded == expected, instruction for instruction */
static void expect_ips(const struct dec *d, const u64 *exp, size_t n)
{
	if (d->errors)
		fail_msg("decoder error %s at trace offset %llu (after %zu instructions)",
			 pt_errstr(pt_errcode(d->first_err)), (unsigned long long)d->first_err_off, d->n);
	for (size_t i = 0; i < min(n, d->n); i++)
		if (d->ip[i] != exp[i])
			fail_msg("instruction %zu: decoded %#llx, executed %#llx", i,
				 d->ip[i], exp[i]);
	if (d->n != n)
		fail_msg("decoded %zu instructions, executed %zu", d->n, n);
}

/* FilterEn as the SDM has it: re-evaluated where a taken branch lands (an
 * instruction whose successor is not the next sequential one), starting at
 * the enable point. Independent of the model; @in_range decides a target. */
static bool (*range_of)(u64 ip);
static bool *filter_oracle(void)
{
	bool *on = calloc(S.n + 1, sizeof(bool));
	bool f = S.n && range_of(S.ex[0].ip);

	for (size_t i = 0; i < S.n; i++) {
		on[i] = f;
		if (i + 1 < S.n && S.ex[i + 1].ip != S.ex[i].ip + insn_len_at[S.ex[i].ip - IMG_BASE])
			f = range_of(S.ex[i + 1].ip);
	}
	return on;
}

/* the executed IPs for which @traced holds */
static size_t expected(u64 *out, bool (*traced)(const struct exec_rec *e))
{
	size_t k = 0;

	for (size_t i = 0; i < S.n; i++)
		if (!traced || traced(&S.ex[i]))
			out[k++] = S.ex[i].ip;
	return k;
}

static void decode_and_compare(bool (*traced)(const struct exec_rec *e))
{
	size_t len = trace_len();
	u64 *exp = calloc(S.n + 1, sizeof(u64));
	size_t n = expected(exp, traced);
	struct dec d;

	decode(&d, pv(out_region), len, -1);
	expect_ips(&d, exp, n);
	dec_free(&d);
	free(exp);
}

static int setup(void **state)
{
	lowmem_init();
	model_setup("skylake");
	img_reset();
	return 0;
}

/* ------------------------------------------------------------ programs */

/* loops, direct and indirect calls and jumps, conditional branches */
static u64 build_mixed(void)
{
	u64 main, loop, skip, f, f1, g, h, jl, js, mh, mg, jf, jj, fj;

	seg_begin(false);
	main = a_nop();
	mg = a_mov_rax(0);
	loop = a_call(0);
	js = a_jcc(0);
	a_nop();
	skip = a_call_rax();
	a_nop();
	jl = a_jcc(loop);
	mh = a_mov_rax(0);
	a_jmp_rax();
	h = a_nop();
	a_hlt();
	f = a_nop();
	jf = a_jcc(0);
	jj = a_jmp(0);
	a_nop();			/* jumped over */
	fj = a_nop();
	f1 = a_ret();
	g = a_call(f);
	a_nop();
	a_ret();
	seg_end();
	fix_rel5(loop, f);
	fix_jcc(js, skip);
	fix_jcc(jf, f1);
	fix_rel5(jj, fj);
	fix_mov_rax(mg, g);
	fix_mov_rax(mh, h);
	S.x = jl;	/* remembered for the loop condition */
	(void)h;
	return main;
}

static u64 loop_jcc;
static int loop_left;

static bool cond_loop(struct sim *s, u64 ip)
{
	if (ip == loop_jcc)
		return loop_left-- > 0;
	return cond_random(s, ip);
}

/* the mixed program at its start, its loop taken @loops times */
static void start_mixed(int loops)
{
	u64 main = build_mixed();

	loop_jcc = S.x;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = loops;
}

static void run_mixed(u64 ctl_extra, int iters, bool long_tnt)
{
	struct pt_model_config c;
	u64 main = build_mixed();

	loop_jcc = S.x;
	pt_model_get_config(&c);
	c.long_tnt = long_tnt;
	pt_model_set_config(&c);
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = iters;
	trace_on(ctl_extra);
	run();
	decode_and_compare(NULL);
}

static void test_mixed_flow(void **state)
{
	run_mixed(0, 300, true);
	assert_true(capture_count(PTPK_TNT64) > 0);
	assert_true(capture_count(PTPK_TNT8) > 0);
	assert_true(capture_count(PTPK_TIP) > 0);
	assert_int_equal(capture_count(PTPK_TIP_PGE), 1);
	assert_int_equal(capture_count(PTPK_TIP_PGD), 1);
}

static void test_mixed_flow_short_tnt(void **state)
{
	run_mixed(0, 200, false);
	assert_int_equal(capture_count(PTPK_TNT64), 0);
}

static void test_mixed_flow_disretc(void **state)
{
	size_t rets = 0;

	run_mixed(RTIT_CTL_DISRETC, 100, true);
	/* every RET is a TIP: TIPs = indirect calls + indirect jump + rets */
	for (size_t i = 0; i < S.n; i++)
		rets += code[S.ex[i].ip - IMG_BASE] == 0xc3;
	assert_int_equal(capture_count(PTPK_TIP), rets + 101 + 1);
}

/* Recursion deeper than the 64-entry return stack: RETs compress while the
 * matching CALL is among the last 64, and go out as TIPs beyond. */
static u64 rec_entry, rec_base;
static int rec_depth;

static bool cond_depth(struct sim *s, u64 ip)
{
	return s->sp >= rec_depth;
}

static void run_recursion(int depth, u64 ctl_extra)
{
	u64 main, jb, call;

	seg_begin(false);
	main = a_call(0);
	a_hlt();
	rec_entry = jb = a_jcc(0);
	call = a_call(rec_entry);
	a_nop();
	a_ret();
	rec_base = a_ret();
	seg_end();
	fix_rel5(main, rec_entry);
	fix_jcc(jb, rec_base);
	(void)call;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_depth;
	rec_depth = depth;
	trace_on(ctl_extra);
	run();
	decode_and_compare(NULL);
}

static void test_deep_recursion(void **state)
{
	run_recursion(100, 0);
	/* 100 CALLs and RETs; the innermost 64 compress (TNT), the rest are TIPs */
	assert_int_equal(capture_count(PTPK_TIP), 100 - 64);
}

static void test_shallow_recursion_all_compressed(void **state)
{
	run_recursion(40, 0);
	assert_int_equal(capture_count(PTPK_TIP), 0);
}

static void test_recursion_disretc(void **state)
{
	run_recursion(70, RTIT_CTL_DISRETC);
	assert_int_equal(capture_count(PTPK_TIP), 70);
}

/* A RET that does not go back to its CALL's next instruction (the callee
 * dropped its return address) must not be compressed: the decoder's stack
 * would send it to the wrong place. */
static void test_ret_elsewhere_is_not_compressed(void **state)
{
	u64 main, loop, jl, ca, A, cb, B;

	seg_begin(false);
	main = a_nop();
	loop = ca = a_call(0);
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	A = cb = a_call(0);
	a_nop();			/* never reached: B returns past A */
	a_ret();
	B = a_pop_rcx();
	a_ret();
	seg_end();
	fix_rel5(ca, A);
	fix_rel5(cb, B);
	(void)main;
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 10;
	trace_on(0);
	run();
	decode_and_compare(NULL);
	assert_int_equal(capture_count(PTPK_TIP), 11);
}

/* ------------------------------------------------------------ PSB */

static size_t psb_at_insn[256];
static u64 psb_off[256];
static int npsb;

static void psb_hook(const struct ptpk *p, const u8 *b, int len, u64 off, void *ctx)
{
	capture_hook(p, b, len, off, ctx);
	if (p->type == PTPK_PSB && npsb < 256) {
		psb_at_insn[npsb] = S.n;	/* instructions executed before it */
		psb_off[npsb++] = off;
	}
}

static void test_psb_resync(void **state)
{
	size_t len;

	start_mixed(3000);
	npsb = 0;
	pt_model_set_packet_hook(psb_hook, &cap);
	trace_on(0 << RTIT_CTL_PSB_FREQ_OFFSET);	/* every 2 KiB */
	run();
	len = trace_len();
	assert_true(npsb >= 4);
	decode_and_compare(NULL);
	/* from every later PSB: exactly the instructions from there on */
	for (int i = 1; i < npsb; i++) {
		struct dec d;
		u64 *exp = calloc(S.n + 1, sizeof(u64));
		size_t n = expected(exp, NULL);

		decode(&d, pv(out_region), len, (long)psb_off[i]);
		expect_ips(&d, exp + psb_at_insn[i], n - psb_at_insn[i]);
		dec_free(&d);
		free(exp);
	}
	/* PSB spacing follows PacketByteCnt and PSBFreq: 2 KiB plus at most
	 * one event's packets */
	for (int i = 1; i < npsb; i++) {
		assert_true(psb_off[i] - psb_off[i - 1] >= 2048);
		assert_true(psb_off[i] - psb_off[i - 1] < 2048 + 64);
	}
}

/* ------------------------------------------------------------ filtering */

static u64 f_lo, f_hi;
static bool *f_on;

static bool in_range(u64 ip) { return ip >= f_lo && ip <= f_hi; }
static bool in_filter(const struct exec_rec *e) { return f_on[e - S.ex]; }

static void test_filter_region(void **state)
{
	u64 main, loop, jl, F, f1, jf, cg, G, jg, g1;

	seg_begin(false);
	main = a_nop();
	loop = a_call(0);
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	F = a_nop();
	jf = a_jcc(0);
	a_nop();
	f1 = cg = a_call(0);
	a_nop();
	a_ret();
	f_hi = here() - 1;
	G = a_nop();
	jg = a_jcc(0);
	a_nop();
	g1 = a_ret();
	seg_end();
	f_lo = F;
	fix_rel5(loop, F);
	fix_jcc(jf, f1);
	fix_rel5(cg, G);
	fix_jcc(jg, g1);
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 50;
	wr(MSR_IA32_RTIT_ADDR0_A, f_lo);
	wr(MSR_IA32_RTIT_ADDR0_B, f_hi);
	trace_on((u64)RTIT_ADDR_CFG_FILTER << RTIT_CTL_ADDR0_OFFSET);
	run();
	range_of = in_range;
	f_on = filter_oracle();
	for (size_t i = 0; i < S.n; i++)	/* here the oracle is just the range */
		assert_int_equal(f_on[i], in_range(S.ex[i].ip));
	decode_and_compare(in_filter);
	free(f_on);
	/* entered 51 times by the call, 51 times by G's return; left as often */
	assert_int_equal(capture_count(PTPK_TIP_PGE), 102);
	assert_int_equal(capture_count(PTPK_TIP_PGD), 102);
}

/* Straight-line flow out of a filter range does not clear FilterEn, and
 * into one does not set it: only branch targets count (36.2.4.3, 36.2.5.5).
 * Tracing starts where the JMP lands inside the range, runs past its end,
 * and stops at the Jcc that branches back out. */
static void test_filter_only_at_branch_targets(void **state)
{
	u64 main, jm, F, j;

	seg_begin(false);
	main = a_nop();
	a_nop();			/* sequentially into the range: no PGE */
	f_lo = a_nop();
	jm = a_jmp(0);
	a_nop();			/* jumped over */
	F = a_nop();
	f_hi = a_nop();
	a_nop();			/* sequentially out of it: still traced */
	a_nop();
	j = a_jcc(main);
	a_hlt();
	seg_end();
	fix_rel5(jm, F);
	loop_jcc = j;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	S.report_all = true;
	loop_left = 5;
	wr(MSR_IA32_RTIT_ADDR1_A, f_lo);
	wr(MSR_IA32_RTIT_ADDR1_B, f_hi);
	trace_on((u64)RTIT_ADDR_CFG_FILTER << RTIT_CTL_ADDR1_OFFSET);
	run();
	range_of = in_range;
	f_on = filter_oracle();
	decode_and_compare(in_filter);
	/* each pass: PGE at F, PGD at the Jcc; the last pass falls through to
	 * HLT still traced and ends with the disable's FUP, TIP.PGD() */
	assert_int_equal(capture_count(PTPK_TIP_PGE), 6);
	assert_int_equal(capture_count(PTPK_TIP_PGD), 6);
	assert_int_equal(capture_count(PTPK_FUP), 1);
	free(f_on);
}

/* TraceStop: a branch into the stop range ends tracing for good. */
static void test_tracestop(void **state)
{
	u64 main, loop, jl, stop_fn, cs;
	u64 st;

	seg_begin(false);
	main = a_nop();
	loop = a_nop();
	jl = a_jcc(loop);
	cs = a_call(0);
	a_nop();
	a_hlt();
	stop_fn = a_nop();
	a_ret();
	seg_end();
	fix_rel5(cs, stop_fn);
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 10;
	wr(MSR_IA32_RTIT_ADDR1_A, stop_fn);
	wr(MSR_IA32_RTIT_ADDR1_B, stop_fn + 1);
	trace_on((u64)RTIT_ADDR_CFG_STOP << RTIT_CTL_ADDR1_OFFSET);
	while (sim_step())
		;
	st = rd(MSR_IA32_RTIT_STATUS);
	assert_true(st & RTIT_STATUS_STOPPED);
	assert_false(st & RTIT_STATUS_TRIGGEREN);
	wr(MSR_IA32_RTIT_CTL, S.tracing_ctl & ~RTIT_CTL_TRACEEN);
	assert_int_equal(capture_count(PTPK_STOP), 1);
	assert_int_equal(cap.pk[cap.n - 1].type, PTPK_STOP);
	assert_int_equal(cap.pk[cap.n - 2].type, PTPK_TIP_PGD);
	{
		/* traced: everything up to and including the CALL */
		size_t len = trace_len();
		struct dec d;
		u64 exp[64];
		size_t n = 0;

		for (size_t i = 0; i < S.n && S.ex[i].ip <= cs; i++)
			exp[n++] = S.ex[i].ip;
		decode(&d, pv(out_region), len, -1);
		expect_ips(&d, exp, n);
		assert_int_equal(d.nev[ptev_stop], 1);
		dec_free(&d);
	}
}

/* ------------------------------------------------------------ interrupts */

/* libipt 2.0.5 takes the FUP(CLIP), TIP of a software interrupt as an async
 * branch from the INT's own IP, so it lists the handler in place of the INT
 * instruction (pt-packets.md, Table 36-50 row 12e). */
static bool not_int_n(const struct exec_rec *e) { return code[e->ip - IMG_BASE] != 0xcd; }

static void test_interrupts(void **state)
{
	u64 main, loop, jl, h1, jh, h1x, h2;

	seg_begin(false);
	main = a_nop();
	loop = a_nop();
	a_nop();
	a_int(0x80);
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	h1 = a_nop();
	jh = a_jcc(0);
	a_nop();
	h1x = a_iretq();
	h2 = a_nop();
	a_iretq();
	seg_end();
	fix_jcc(jh, h1x);
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 20;
	S.idt[0x20] = h1;
	S.idt[0x80] = h2;
	for (int i = 0; i < 5; i++) {
		S.intr_at[i] = 7 + (size_t)i * 23;
		S.intr_vec[i] = 0x20;
	}
	S.nintr = 5;
	trace_on(5ULL << RTIT_CTL_PSB_FREQ_OFFSET);	/* no periodic PSB+ FUPs */
	run();
	decode_and_compare(not_int_n);
	/* 5 external + 21 INT 0x80 */
	assert_int_equal(capture_count(PTPK_FUP), 26 + 1);
}

/* User-only tracing across SYSCALL/SYSRET and interrupts taken in ring 3. */
static bool user_only(const struct exec_rec *e) { return e->cpl == 3; }

static void test_user_only_syscalls_and_interrupts(void **state)
{
	u64 main, loop, jl, k, jk, k1, h;

	seg_begin(false);
	main = a_nop();
	loop = a_nop();
	a_syscall();
	a_nop();
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	k = a_nop();
	jk = a_jcc(0);
	a_nop();
	k1 = a_sysretq();
	h = a_nop();
	a_nop();
	a_iretq();
	seg_end();
	fix_jcc(jk, k1);
	loop_jcc = jl;
	sim_init(main, 3, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 12;
	S.lstar = k;
	S.idt[0x21] = h;
	for (int i = 0; i < 3; i++) {
		S.intr_at[i] = 4 + (size_t)i * 17;
		S.intr_vec[i] = 0x21;
	}
	S.nintr = 3;
	trace_on_ctl(0, RTIT_CTL_OS);
	run();
	decode_and_compare(user_only);
	/* SYSCALL: TIP.PGD() with the IP suppressed; back with TIP.PGE */
	{
		size_t sup = 0;

		for (size_t i = 0; i < cap.n; i++)
			sup += cap.pk[i].type == PTPK_TIP_PGD && cap.pk[i].ip.ipc == PTPK_IPC_SUPPRESSED;
		assert_int_equal(sup, capture_count(PTPK_TIP_PGD));
	}
	{
		size_t back = 0;

		for (size_t i = 0; i < S.n; i++)
			back += S.ex[i].cpl == 3 && (i == 0 || S.ex[i - 1].cpl == 0);
		/* an interrupt right after SYSRET re-disables before any
		 * user instruction ran, so PGEs can outnumber the returns */
		assert_true(capture_count(PTPK_TIP_PGE) >= back);
		assert_true(back >= 13);
	}
}

/* MODE.Exec on far transfers into 32-bit code and back. */
static void test_mode_change(void **state)
{
	u64 main, c32, loop, jl, back, mv;

	seg_begin(false);
	main = a_nop();
	mv = a_mov_rax(0);
	a_ljmp_rax();
	back = a_nop();
	a_hlt();
	seg_end();
	seg_begin(true);
	c32 = a_nop();
	loop = a_nop();
	jl = a_jcc(loop);
	a_ljmp32(back);
	seg_end();
	fix_mov_rax(mv, 0);
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	S.far_target = c32;
	loop_left = 9;
	trace_on(0);
	run();
	decode_and_compare(NULL);
	{
		size_t m32 = 0;

		for (size_t i = 0; i < cap.n; i++)
			m32 += cap.pk[i].type == PTPK_MODE_EXEC && cap.pk[i].exec.csd;
		assert_int_equal(m32, 1);
	}
}

/* ------------------------------------------------------------ OVF */

static size_t ovf_begin_at, ovf_end_at;

static void ovf_before(struct sim *s)
{
	if (s->n == ovf_begin_at)
		pt_model_ev_overflow_begin();
	if (s->n == ovf_end_at) {
		pt_model_ev_at(s->ip);
		pt_model_ev_overflow_end();
	}
}

static void test_overflow_recovery(void **state)
{
	size_t len, i, last_branch = 0, first_lost = 0;
	struct dec d;

	start_mixed(80);
	ovf_begin_at = 150;
	ovf_end_at = 400;
	S.before = ovf_before;
	trace_on(0);
	run();
	len = trace_len();
	assert_int_equal(capture_count(PTPK_OVF), 1);
	decode(&d, pv(out_region), len, -1);
	if (d.errors)
		fail_msg("decoder error %s", pt_errstr(pt_errcode(d.first_err)));
	assert_int_equal(d.nev[ptev_overflow], 1);
	/* decoded = executed[0, p) then executed[400, end). p reaches the
	 * last branch whose packet went out (libipt takes the pending OVF
	 * before that branch's result) and at most the first lost branch. */
	for (i = 0; i < ovf_begin_at; i++)
		if (insn_len_at[S.ex[i].ip - IMG_BASE] && code[S.ex[i].ip - IMG_BASE] != 0x90 &&
		    code[S.ex[i].ip - IMG_BASE] != 0x48)
			last_branch = i;
	for (i = ovf_begin_at; i < S.n; i++)
		if (code[S.ex[i].ip - IMG_BASE] != 0x90 && code[S.ex[i].ip - IMG_BASE] != 0x48) {
			first_lost = i;
			break;
		}
	{
		size_t tail = S.n - ovf_end_at, p = d.n - tail;

		assert_true(d.n >= tail);
		if (!(p >= last_branch && p <= first_lost + 1))
			fail_msg("decoded %zu: prefix %zu, last branch sent %zu, first lost %zu",
				 d.n, p, last_branch, first_lost);
		for (i = 0; i < p; i++)
			assert_int_equal(d.ip[i], S.ex[i].ip);
		for (i = 0; i < tail; i++)
			assert_int_equal(d.ip[p + i], S.ex[ovf_end_at + i].ip);
	}
	dec_free(&d);
}

/* ------------------------------------------------------------ PTWRITE */

static void test_ptwrite(void **state)
{
	u64 main, loop, jl, mv;
	struct dec d;
	size_t len;

	model_setup("arrowlake");
	seg_begin(false);
	main = a_nop();
	loop = mv = a_mov_rax(0x1122334455667788ULL);
	a_ptwrite_rax();
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	seg_end();
	(void)mv;
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 4;
	trace_on(RTIT_CTL_PTW_EN | RTIT_CTL_FUP_ON_PTW);
	run();
	len = trace_len();
	assert_int_equal(capture_count(PTPK_PTW), 5);
	decode(&d, pv(out_region), len, -1);
	{
		u64 *exp = calloc(S.n + 1, sizeof(u64));

		expect_ips(&d, exp, expected(exp, NULL));
		free(exp);
	}
	assert_int_equal(d.nptw, 5);
	for (unsigned int i = 0; i < d.nptw; i++)
		assert_int_equal(d.ptw[i], 0x1122334455667788ULL);
	dec_free(&d);
}

/* ------------------------------------------------------------ timing */

static void test_timing_packets(void **state)
{
	struct pt_model_config c;

	pt_model_get_config(&c);
	c.cycles_per_event = 40;
	pt_model_set_config(&c);
	pt_model_set_tsc(0x123456789ULL);
	run_mixed(RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN | (3ULL << RTIT_CTL_MTC_RANGE_OFFSET) |
		  RTIT_CTL_CYCLEACC | (2ULL << RTIT_CTL_CYC_THRESH_OFFSET), 200, true);
	assert_int_equal(capture_count(PTPK_TSC), capture_count(PTPK_PSB));
	assert_int_equal(capture_count(PTPK_TMA), capture_count(PTPK_PSB));
	assert_true(capture_count(PTPK_MTC) > 10);
	assert_true(capture_count(PTPK_CYC) > 10);
	assert_int_equal(cap.pk[1].type, PTPK_TSC);
	assert_int_equal(cap.pk[1].tsc, 0x123456789ULL);
}

/* ------------------------------------------------------------ restart */

static size_t stop_at, restart_at;

static void restart_before(struct sim *s)
{
	if (s->n == stop_at) {
		pt_model_ev_at(s->ip);
		wr(MSR_IA32_RTIT_CTL, s->tracing_ctl & ~RTIT_CTL_TRACEEN);
	}
	if (s->n == restart_at) {
		wr(MSR_IA32_RTIT_CTL, s->tracing_ctl);
		pt_model_ev_at(s->ip);
	}
}

/* A PMI-handler style stop and restart: no new PSB (PacketByteCnt carries
 * over), and decoding continues across the gap. */
static void test_disable_reenable(void **state)
{
	size_t len;
	struct dec d;
	u64 *exp;
	size_t n = 0;

	start_mixed(60);
	stop_at = 100;
	restart_at = 230;
	S.before = restart_before;
	trace_on(5ULL << RTIT_CTL_PSB_FREQ_OFFSET);	/* 64 KiB: no periodic PSB */
	run();
	len = trace_len();
	assert_int_equal(capture_count(PTPK_PSB), 1);
	assert_int_equal(capture_count(PTPK_TIP_PGE), 2);
	exp = calloc(S.n + 1, sizeof(u64));
	for (size_t i = 0; i < S.n; i++)
		if (i < stop_at || i >= restart_at)
			exp[n++] = S.ex[i].ip;
	decode(&d, pv(out_region), len, -1);
	expect_ips(&d, exp, n);
	dec_free(&d);
	free(exp);
}

/*
 * A panic's stop NMI that comes while the trace unit is half-way through a
 * packet (trace-smp-fault once stopped CPU 0 there: 8 bytes produced, never
 * stored) is put off to the outermost model call's end, where the model calls
 * smp_stop_pending(): the stop hook then finds every produced byte stored.
 */
static int stop_nmi_at, stop_nmi_packets;
static size_t stop_nmi_insn, stop_insn;
static bool stop_hook_busy;
static struct pt_model_stats stop_stats;

static void stop_nmi_hook(const struct ptpk *p, const u8 *b, int len, u64 off, void *ctx)
{
	capture_hook(p, b, len, off, ctx);
	if (++stop_nmi_packets != stop_nmi_at)
		return;
	/* the NMI: inside the unit, so the stop waits (the kernel's stop_when()) */
	assert_true(pt_model_busy());
	hosted_stop_put_off = true;
	stop_nmi_insn = S.n;
}

static void stop_hook(void)
{
	stop_hook_busy = pt_model_busy();
	stop_insn = S.n;
	pt_model_get_stats(&stop_stats);
	wr(MSR_IA32_RTIT_CTL, rd(MSR_IA32_RTIT_CTL) & ~RTIT_CTL_TRACEEN);	/* what the park does */
}

static void test_stop_nmi_waits_for_the_unit(void **state)
{
	struct pt_model_stats st;

	start_mixed(200);
	stop_nmi_packets = 0;
	stop_nmi_at = 40;
	stop_hook_busy = true;
	stop_insn = 0;
	memset(&stop_stats, 0, sizeof(stop_stats));
	hosted_stop_hook = stop_hook;
	pt_model_set_packet_hook(stop_nmi_hook, &cap);
	trace_on(0);
	assert_false(pt_model_busy());
	run();
	hosted_stop_hook = NULL;
	assert_false(hosted_stop_put_off);		/* the hook ran */
	assert_true(stop_nmi_packets > stop_nmi_at);	/* the disable's own packets came after */
	assert_false(stop_hook_busy);
	assert_int_equal(stop_insn, stop_nmi_insn);	/* at the end of the same event */
	assert_true(stop_stats.bytes > 0);
	assert_int_equal(stop_stats.bytes, stop_stats.bytes_written + stop_stats.bytes_lost);
	pt_model_get_stats(&st);
	assert_int_equal(st.bytes, st.bytes_written + st.bytes_lost);
	assert_int_equal(rd(MSR_IA32_RTIT_CTL) & RTIT_CTL_TRACEEN, 0);
}

/* MOV CR3 with CR3 filtering: PIP, and PacketEn follows the CR3 match. */
static void test_cr3_filter(void **state)
{
	u64 main, m1, m2, jl, loop;
	struct dec d;
	size_t len;
	u64 exp[256];
	size_t n = 0;
	bool on = true;

	seg_begin(false);
	main = a_nop();
	loop = m1 = a_mov_rax(0x5000);
	a_mov_cr3();
	a_nop();
	a_nop();
	m2 = a_mov_rax(0x7000);
	a_mov_cr3();
	a_nop();
	jl = a_jcc(loop);
	a_hlt();
	seg_end();
	(void)m1;
	(void)m2;
	loop_jcc = jl;
	sim_init(main, 0, PTM_MODE_64);
	S.cond = cond_loop;
	loop_left = 3;
	wr(MSR_IA32_RTIT_CR3_MATCH, 0x7000);
	{
		struct ptm_insn in = { .cls = PTM_MOV_CR3, .ip = 0, .next = main, .cr3 = 0x7000 };

		pt_model_ev_insn(&in);	/* start with CR3 = 0x7000 */
	}
	trace_on(RTIT_CTL_CR3EN);
	run();
	len = trace_len();
	for (size_t i = 0; i < S.n; i++) {
		if (on)
			exp[n++] = S.ex[i].ip;
		if (code[S.ex[i].ip - IMG_BASE] == 0x0f && code[S.ex[i].ip - IMG_BASE + 1] == 0x22)
			on = S.ex[i - 1].ip == m2;
	}
	assert_true(capture_count(PTPK_PIP) >= 4);
	decode(&d, pv(out_region), len, -1);
	expect_ips(&d, exp, n);
	dec_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_mixed_flow, setup),
		cmocka_unit_test_setup(test_mixed_flow_short_tnt, setup),
		cmocka_unit_test_setup(test_mixed_flow_disretc, setup),
		cmocka_unit_test_setup(test_deep_recursion, setup),
		cmocka_unit_test_setup(test_shallow_recursion_all_compressed, setup),
		cmocka_unit_test_setup(test_recursion_disretc, setup),
		cmocka_unit_test_setup(test_ret_elsewhere_is_not_compressed, setup),
		cmocka_unit_test_setup(test_psb_resync, setup),
		cmocka_unit_test_setup(test_filter_region, setup),
		cmocka_unit_test_setup(test_filter_only_at_branch_targets, setup),
		cmocka_unit_test_setup(test_tracestop, setup),
		cmocka_unit_test_setup(test_interrupts, setup),
		cmocka_unit_test_setup(test_user_only_syscalls_and_interrupts, setup),
		cmocka_unit_test_setup(test_mode_change, setup),
		cmocka_unit_test_setup(test_overflow_recovery, setup),
		cmocka_unit_test_setup(test_ptwrite, setup),
		cmocka_unit_test_setup(test_timing_packets, setup),
		cmocka_unit_test_setup(test_disable_reenable, setup),
		cmocka_unit_test_setup(test_stop_nmi_waits_for_the_unit, setup),
		cmocka_unit_test_setup(test_cr3_filter, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
