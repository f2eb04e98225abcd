// SPDX-License-Identifier: MIT
/*
 * The model's common-case path (ev_insn_fast in pt_model_events.c) against
 * its full path: the same long random flow of branches, calls, returns that
 * the decoder's stack predicts and returns it does not, indirect transfers,
 * PTWRITEs, interrupts and their IRETs, run once with the fast path off and
 * once with it on, under configurations that let it run (RET compression,
 * TNT-8 and TNT-64) and configurations that must keep it out (IP filters,
 * MTC, DisRETC, small ToPA regions with PMIs). The packet bytes and every
 * counter must be identical; the fast path must have run where it may.
 * A third run feeds the near branches in batches of edge records
 * (pt_model_ev_edges(), as the translating trace engine does): the same.
 * A fourth does that with the inline TNT of the code cache's Jcc stubs
 * (kernel/trace_engine/xlat.h: the results straight into the pending TNT
 * while no record waits, handed over when the packet fills and before any
 * other event): the same again; and with one result's bit dropped, not.
 * Its full TNT packets go into the output as the code's tnt_put routine
 * stores them (xlat.c) where the model allows it (pt_model_tnt_direct()),
 * and must have done so in the loops; so do the TIPs of indirect branches
 * and RETs not compressed, with the pending TNT before them, as tip_put
 * stores them (in the calls' flows); with their bytes kept from the
 * model's account at the hand-over, or a TIP's Last IP not updated, the
 * trace must change.
 */
#include "test_pt_common.h"
#include <topaz/x86_insn.h>
#include "../../kernel/trace_engine/xlat.h"

static int setup(void **state)
{
	(void)state;
	lowmem_init();
	return 0;
}

static u64 rnd_state;
static u64 rnd(void) { return hosted_rand(&rnd_state); }

#define CODE_LO		0x400000ULL
#define CODE_SPAN	0x100000ULL
#define HANDLER		0x7f0000ULL

struct fp_config {
	const char *name, *profile;
	u64 ctl;
	bool filter, short_tnt, small_region, ptw;
	bool fast_expected;
	bool loops;	/* mostly Jccs: long TNT packets fill inside the batches' runs */
	bool calls;	/* ... and direct CALLs, RETs to them (deeper than the RET
			 * stack too), direct JMPs: the inline paths of each */
};

/* Batched runs: the near branches as edge records, fed a batch at a time. */
#define BATCH	97	/* records: not a divisor of anything in the flow */
static struct ptm_edge *edges;
static u64 recs[2 * BATCH];
static unsigned int nrec, nedge;
static u64 edge_insns;
static bool batched;
/* the inline TNT (batched runs), as the engine's consume and its stubs use it */
static bool inlined;
static struct xlat_cpu inl_x;
static u64 inl_taken, inl_drop;	/* inl_drop: the taken result whose bit is dropped (a mutation) */
static u64 inl_calls, inl_nopush;	/* inl_nopush: the inline CALL whose push is lost (a mutation) */
static bool inl_unaccounted;	/* a mutation: the stored packets kept from the model */
static bool inl_stale_ip;	/* a mutation: tip_put's Last IP not updated */

/* As the engine's xlat_consume(): the inline results, the records, armed again. */
static void batch_flush(u64 to)
{
	u64 insns = 0, tnt_insns = 0;
	const u64 *end = recs + 2 * nrec;
	unsigned int n = 0;

	const u64 *lead = recs;	/* (the inline results came before any record) */

	if (inlined && inl_unaccounted)
		inl_x.tnt_out0 = inl_x.tnt_out;
	if (inlined)
		n = xlat_tnt_hand_over(&inl_x, to, &tnt_insns);
	if (!inl_unaccounted)
		assert_int_equal(tnt_insns, n);	/* each result one instruction here */
	assert_ptr_equal(pt_model_ev_edges(lead, end, edges, &insns), end);
	edge_insns += insns;
	assert_int_equal(insns, nrec);	/* each edge stands for one instruction here */
	nrec = 0;
	nedge = 0;
	if (inlined)
		xlat_tnt_arm_out(&inl_x, pt_model_tnt_room());
}

/* tnt_put (xlat.c): the full packet into the output when the model allowed it, else the flush */
static void inline_full(u64 to)
{
	u64 hdr, w;
	unsigned int shift;

	assert_true(xlat_tnt64_layout(&hdr, &shift));
	if (inl_x.tnt_lim && inl_x.tnt_out + 8 < inl_x.tnt_lim) {
		w = (inl_x.tnt_w << shift) | hdr;
		memcpy((void *)(uintptr_t)inl_x.tnt_out, &w, 8);
		inl_x.tnt_out += 8;
		inl_x.tnt_w = inl_x.tnt_w0;
		inl_x.tnt_full++;
		return;
	}
	batch_flush(to);	/* xlat_rt_flush: the packet is full */
}

/* tnt_cnt's low byte, as the stubs' check loads it (0: armed) */
static u64 inline_check(void)
{
	return inl_x.tnt_cnt & 0xff;
}

/* Off: a record counted (false), or its count's wrap asks for the arming again (true). */
static bool inline_count(void)
{
	u64 c = (inl_x.tnt_cnt & 0xff) + 1;

	if (c == 0x100)
		return true;
	inl_x.tnt_cnt = c;
	return false;
}

/* Armed, a record now: off, the results so far kept (tnt_turn_off()). */
static void inline_turn_off(void)
{
	inl_x.tnt_keep = inl_x.tnt_w;
	inl_x.tnt_ins_keep = inl_x.tnt_ins;
	xlat_tnt_remark(&inl_x);
	inl_x.tnt_cnt = XLAT_CNT_WAIT;
}

/*
 * A Jcc's stub (cond_path() in xlat.c): count and bit first, then byte 7
 * says armed (done, or the packet full) or off (the mark again, and a
 * record counted: false, or its count's wrap and the stub again). True:
 * no record.
 */
static bool inline_jcc(bool taken, u64 to)
{
	for (;;) {
		bool armed = !xlat_tnt_off(&inl_x);
		unsigned int state;

		inl_x.tnt_ins += 1;
		inl_x.tnt_w = 2 * inl_x.tnt_w + (taken && (!armed || ++inl_taken != inl_drop));
		state = xlat_tnt_state(inl_x.tnt_w);
		if (!state)
			return true;
		if (state == 1) {
			inline_full(to);
			return true;
		}
		assert_false(armed);
		xlat_tnt_remark(&inl_x);
		if (!inline_count())
			return false;
		batch_flush(0);	/* xlat_rt_flush, and the stub again from its check */
	}
}

/*
 * A direct JMP's or CALL's stub (plain_path()) or a RET's (indirect_tail())
 * while armed: its event counted, a CALL's push on the lent stack, a RET
 * that matches its top popped and a 1. False: it writes a record.
 */
static bool inline_other(enum ptm_class cls, u64 next, u64 to)
{
	if (inline_check())
		return false;	/* off */
	if ((cls == PTM_JUMP || cls == PTM_CALL) && inl_x.plain_inline) {
		inl_x.tnt_ins += 1;
		inl_x.tnt_jc += 1;
		if (cls == PTM_CALL && to != next && ++inl_calls != inl_nopush)
			ptm_rs_push(&inl_x.rs, next);
		return true;
	}
	if (cls != PTM_RET || !inl_x.ret_inline || !ptm_rs_pop_if(&inl_x.rs, to))
		return false;
	inl_x.tnt_ins += 1;
	inl_x.tnt_w = 2 * inl_x.tnt_w + 1;
	if (xlat_tnt_state(inl_x.tnt_w))
		inline_full(to);
	return true;
}

/*
 * tip_put (xlat.c), armed for a whole packet with room short of tip_lim:
 * the pending results' TNT packet, then the TIP against tip_last, and an
 * indirect CALL's push. False: no room, the stub's record.
 */
static bool inline_tip(enum ptm_class cls, u64 next, u64 to)
{
	u8 *o = (u8 *)(uintptr_t)inl_x.tnt_out;
	struct ptpk tip = { .type = PTPK_TIP, .ip = { .ipc = ptpk_ip_compress(to, inl_x.tip_last), .ip = to } };
	const unsigned int s0 = XLAT_TNT_TOP - PTPK_TNT64_MAX;

	if (!inl_x.tip_lim || inl_x.tnt_out + 17 >= inl_x.tip_lim)
		return false;
	if (cls == PTM_CALL_IND && ++inl_calls != inl_nopush)
		ptm_rs_push(&inl_x.rs, next);
	inl_x.tnt_ins += 1;
	if (inl_x.tnt_w != inl_x.tnt_w0) {
		unsigned int n = 63u - (unsigned int)__builtin_clzll(inl_x.tnt_w) - s0;
		struct ptpk t = { .type = n <= PTPK_TNT8_MAX ? PTPK_TNT8 : PTPK_TNT64,
				  .tnt = { .nbits = (u8)n, .bits = inl_x.tnt_w & ((1ull << n) - 1) } };

		o += ptpk_encode(&t, o);
		inl_x.tip_pk++;
		inl_x.tip_res += n;
		inl_x.tnt_w = inl_x.tnt_w0;
	}
	o += ptpk_encode(&tip, o);
	if (!inl_stale_ip)
		inl_x.tip_last = to;
	inl_x.tip_n++;
	inl_x.tnt_out = (uintptr_t)o;
	return true;
}

/* A near branch: to the model at once, or as a record of the batch. */
static void near(enum ptm_class cls, u64 ip, u64 next, u64 to, bool taken)
{
	bool dynamic = cls == PTM_JUMP_IND || cls == PTM_CALL_IND || cls == PTM_RET;

	if (!batched) {
		pt_model_ev_branch(cls, ip, next, to, taken);
		return;
	}
	/* a stub that checks the arming (all but the direct JMPs and CALLs of
	 * the stubs for timing packets): inline, or off with a record waiting
	 * (armed), or a record counted (off), whose count's wrap asks for the
	 * arming again; the others turn it off */
	while (inlined && cls != PTM_COND && (inl_x.plain_inline || (cls != PTM_JUMP && cls != PTM_CALL))) {
		bool armed = !inline_check();

		if (inline_other(cls, next, to))
			return;
		if (armed && dynamic && inline_tip(cls, next, to))
			return;
		if (armed) {
			inline_turn_off();
			break;
		}
		if (!inline_count())
			break;
		batch_flush(0);	/* xlat_rt_flush, and the check again */
	}
	if (inlined && cls == PTM_COND && inline_jcc(taken, to))
		return;
	edges[nedge] = (struct ptm_edge){ .ip = ip, .next = next, .to = dynamic ? 0 : to,
					  .cls = (u8)cls, .taken = taken, .insns = 1 };
	/* the high half as a sign-extended imm32 store leaves it (ignored) */
	recs[2 * nrec] = ptm_rec_word(nedge * sizeof(*edges), &edges[nedge]) |
			 (nrec & 1 ? 0xffffffff00000000ull : 0);
	recs[2 * nrec + 1] = to;
	nedge++;
	/* the timing packets' direct JMP and CALL stubs: a record waits (tnt_off_if_armed()) */
	if (inlined && !inl_x.plain_inline && (cls == PTM_JUMP || cls == PTM_CALL) && !inline_check())
		inline_turn_off();
	if (++nrec == BATCH) {
		batch_flush(0);	/* the full buffer's fault */
		if (inlined)
			xlat_tnt_wait(&inl_x);
	}
}

/* Before any other event, the batch so far goes in (the engine's order),
 * and the inline TNT stays off until the next (the model is elsewhere). */
static void other(u64 ip)
{
	if (batched && (nrec || inlined))
		batch_flush(ip);	/* where the flow is: the last result's target */
	if (inlined)
		xlat_tnt_wait(&inl_x);
}

/* One run of the flow under @c: the bytes it made and the model's counters. */
static void run_flow(const struct fp_config *c, bool no_fast, u8 **bytes, size_t *len,
		     struct pt_model_stats *st)
{
	struct pt_model_config cfg;
	u64 stack[128], ip = CODE_LO + 0x100, t, region;
	unsigned int depth = 0;

	lowmem_init();
	xlat_tnt_arm(&inl_x, 0);
	inl_x.tnt_out = inl_x.tnt_out0 = 0;
	inl_x.tnt_put = (u8 *)&inl_x;	/* not called: inline_full() stands for it */
	inl_x.tip_put = (u8 *)&inl_x;	/* ... and inline_tip() for tip_put */
	memset(&inl_x.st, 0, sizeof(inl_x.st));
	inl_taken = 0;
	model_setup(c->profile);
	pt_model_get_config(&cfg);
	cfg.no_fast_path = no_fast;
	cfg.long_tnt = !c->short_tnt;
	pt_model_set_config(&cfg);
	t = c->small_region ? topa_simple(0, TOPA_INT, &region) : topa_simple(9, 0, &region);
	topa_program(t, 0, 0);
	if (c->filter) {
		wr(MSR_IA32_RTIT_ADDR0_A, CODE_LO);
		wr(MSR_IA32_RTIT_ADDR0_B, CODE_LO + CODE_SPAN / 2);
	}
	pt_model_ev_context(ip, 0, PTM_MODE_64);
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN | RTIT_CTL_TOPA | RTIT_CTL_OS |
	   RTIT_CTL_USR | c->ctl |
	   (c->filter ? (u64)RTIT_ADDR_CFG_FILTER << RTIT_CTL_ADDR0_OFFSET : 0));
	pt_model_ev_at(ip);
	inl_x.timed = pt_model_tnt_timed();
	/* the stubs as the engine makes them for this configuration, its stack lent */
	inl_x.plain_inline = !inl_x.timed;
	inl_x.ret_inline = pt_model_ret_compressed();
	pt_model_lend_retstack(0, inlined ? &inl_x.rs : NULL);
	inl_calls = 0;
	rnd_state = 0x9e3779b97f4a7c15ull;
	for (unsigned int i = 0; i < 40000; i++) {
		unsigned int r = (unsigned int)(rnd() % 100);
		u64 far = CODE_LO + (rnd() % CODE_SPAN);
		u64 near_to = ip + 16 + (rnd() % 256);

		if (c->loops)	/* mostly Jccs, now and then anything */
			r = (unsigned int)(r < 97 ? rnd() % (c->calls ? 72 : 40) : rnd() % 100);
		if (c->calls && r >= 52 && r < 66 && !depth)
			r = 40;	/* a CALL: the RETs return where their CALL said */

		if (r < 40) {
			bool taken = rnd() & 1;

			near(PTM_COND, ip, ip + 2, taken ? near_to : ip + 2, taken);
			ip = taken ? near_to : ip + 2;
		} else if (r < 52) {
			if (depth < ARRAY_SIZE(stack))
				stack[depth++] = ip + 5;
			near(PTM_CALL, ip, ip + 5, far, false);
			ip = far;
		} else if (r < 66) {
			/* mostly where the call said; sometimes elsewhere (longjmp) */
			u64 to = depth && (rnd() % 8) ? stack[--depth] : far;

			near(PTM_RET, ip, 0, to, false);
			ip = to;
		} else if (r < 72) {
			near(PTM_JUMP, ip, 0, near_to, false);
			ip = near_to;
		} else if (r < 78) {
			near(PTM_JUMP_IND, ip, 0, far, false);
			ip = far;
		} else if (r < 82) {
			if (depth < ARRAY_SIZE(stack))
				stack[depth++] = ip + 2;
			near(PTM_CALL_IND, ip, ip + 2, far, false);
			ip = far;
		} else if (r < 85 && c->ptw) {
			other(ip);
			pt_model_ev_ptwrite(ip, ip + 5, rnd(), 8);
			ip += 5;
		} else if (r < 87) {
			/* an interrupt, its handler's IRET back */
			other(ip);
			pt_model_ev_interrupt(PTM_INTR_HW, ip, HANDLER, 32, 0, PTM_MODE_64);
			pt_model_ev_far(HANDLER + 0x40, ip, 0, PTM_MODE_64);
		} else {
			near(PTM_COND, ip, ip + 6, ip + 6, false);
			ip += 6;
		}
	}
	other(ip);
	wr(MSR_IA32_RTIT_CTL, rd(MSR_IA32_RTIT_CTL) & ~RTIT_CTL_TRACEEN);
	pt_model_get_stats(st);
	/* what the hook saw is what the region holds (it did not wrap) */
	if (!c->small_region) {
		assert_true(cap.len < TOPA_ENTRY_SIZE(9));
		assert_memory_equal(pv(region), cap.bytes, cap.len);
	}
	*len = cap.len;
	*bytes = malloc(cap.len + 1);
	memcpy(*bytes, cap.bytes, cap.len);
}

/* The two runs made the same bytes. */
static void same_bytes(const char *name, const char *what, const u8 *a, size_t na, const u8 *b,
		       size_t nb)
{
	size_t i = 0;

	if (na == nb && !memcmp(a, b, na))
		return;
	while (i < na && i < nb && a[i] == b[i])
		i++;
	fail_msg("%s: %s changed the trace: %zu bytes against %zu, first difference at byte %zu",
		 name, what, nb, na, i);
}

/* A run of @c's inline flow with the mutation set by the caller: its trace must not be @a's. */
static void mutant_differs(const struct fp_config *c, const u8 *a, size_t na, const char *what)
{
	struct pt_model_stats st;
	u8 *b;
	size_t nb;

	run_flow(c, false, &b, &nb, &st);
	if (na == nb && !memcmp(a, b, na))
		fail_msg("%s: %s left the same trace", c->name, what);
	free(b);
}

static void check_config(const struct fp_config *c)
{
	struct pt_model_stats slow, fast;
	u8 *a, *b;
	size_t na, nb;

	run_flow(c, true, &a, &na, &slow);
	batched = true;
	edges = calloc(BATCH, sizeof(*edges));
	run_flow(c, false, &b, &nb, &fast);
	batched = false;
	free(edges);
	same_bytes(c->name, "batches of edges", a, na, b, nb);
	{
		struct pt_model_stats bst = fast;

		if (c->fast_expected && bst.fast < 10000)
			fail_msg("%s: batches took the fast path only %llu times", c->name,
				 bst.fast);
		bst.fast = slow.fast;
		assert_memory_equal(&slow, &bst, sizeof(slow));
	}
	free(b);
	/* the inline TNT: the same bytes; and it must have run where it may */
	batched = inlined = true;
	edges = calloc(BATCH, sizeof(*edges));
	run_flow(c, false, &b, &nb, &fast);
	print_message("%s: %llu of the Jcc and RET results inline, %llu direct JMPs and CALLs, %llu full packets and %llu TIPs stored from the code\n",
		      c->name, (unsigned long long)inl_x.st.inline_tnt,
		      (unsigned long long)inl_x.st.inline_plain,
		      (unsigned long long)inl_x.st.tnt_direct, (unsigned long long)inl_x.st.inline_tip);
	same_bytes(c->name, "the inline TNT", a, na, b, nb);
	/* (a record turns it off until a run of Jccs asks again: the loops' Jccs) */
	/* (with timing packets, every direct JMP and CALL writes a record: the
	 * calls' flow keeps it off) */
	if (c->fast_expected && c->loops &&
	    inl_x.st.inline_tnt < (!c->calls ? 5000u : inl_x.timed ? 0u : 1000u))
		fail_msg("%s: only %llu results went inline", c->name,
			 (unsigned long long)inl_x.st.inline_tnt);
	if (c->fast_expected && c->calls && inl_x.plain_inline && inl_x.st.inline_plain < 300)
		fail_msg("%s: only %llu direct JMPs and CALLs went inline", c->name,
			 (unsigned long long)inl_x.st.inline_plain);
	if (inl_x.timed && inl_x.st.inline_plain)
		fail_msg("%s: %llu direct JMPs and CALLs went inline with timing packets", c->name,
			 (unsigned long long)inl_x.st.inline_plain);
	if (c->fast_expected && c->loops && !c->calls && !c->short_tnt &&
	    !(c->ctl & RTIT_CTL_CYCLEACC) && inl_x.st.tnt_direct < 50)
		fail_msg("%s: only %llu full packets went from the code", c->name,
			 (unsigned long long)inl_x.st.tnt_direct);
	if ((c->short_tnt || (c->ctl & RTIT_CTL_CYCLEACC)) && inl_x.st.tnt_direct)
		fail_msg("%s: %llu full packets went from the code where they must not", c->name,
			 (unsigned long long)inl_x.st.tnt_direct);
	if (!c->fast_expected && inl_x.st.inline_tnt)
		fail_msg("%s: %llu results went inline where they must not", c->name,
			 (unsigned long long)inl_x.st.inline_tnt);
	fast.fast = slow.fast;
	assert_memory_equal(&slow, &fast, sizeof(slow));
	free(b);
	if (c->fast_expected && c->loops && inl_x.st.inline_tnt) {
		/* a mutation the comparison must see: one taken result's bit dropped */
		inl_drop = 500;
		mutant_differs(c, a, na, "a dropped TNT bit");
		inl_drop = 0;
	}
	if (c->fast_expected && c->loops && inl_x.plain_inline && inl_x.ret_inline) {
		/* a mutation: one inline CALL's return address not pushed */
		inl_nopush = 20;
		mutant_differs(c, a, na, "a CALL missing from the RET stack");
		inl_nopush = 0;
	}
	if (c->fast_expected && c->calls && !c->short_tnt && !(c->ctl & RTIT_CTL_CYCLEACC) &&
	    inl_x.st.inline_tip < 300)
		fail_msg("%s: only %llu TIPs went from the code", c->name,
			 (unsigned long long)inl_x.st.inline_tip);
	if ((c->short_tnt || (c->ctl & RTIT_CTL_CYCLEACC) || !c->fast_expected) && inl_x.st.inline_tip)
		fail_msg("%s: %llu TIPs went from the code where they must not", c->name,
			 (unsigned long long)inl_x.st.inline_tip);
	if (inl_x.st.inline_tip) {
		/* a mutation: tip_put's Last IP left as it was */
		inl_stale_ip = true;
		mutant_differs(c, a, na, "a Last IP not updated");
		inl_stale_ip = false;
	}
	if (inl_x.st.tnt_direct || inl_x.st.inline_tip) {
		/* a mutation: the packets the code stored kept from the model's account */
		inl_unaccounted = true;
		mutant_differs(c, a, na, "packets the model never counted");
		inl_unaccounted = false;
	}
	batched = inlined = false;
	free(edges);
	run_flow(c, false, &b, &nb, &fast);
	same_bytes(c->name, "the fast path", a, na, b, nb);
	assert_int_equal(slow.fast, 0);
	if (c->fast_expected && fast.fast < 10000)
		fail_msg("%s: the fast path took only %llu instructions", c->name,
			 fast.fast);
	if (!c->fast_expected && fast.fast)
		fail_msg("%s: the fast path ran %llu times where it must not", c->name,
			 fast.fast);
	fast.fast = 0;
	assert_memory_equal(&slow, &fast, sizeof(slow));
	assert_true(slow.packets > (c->loops ? 500u : 1000u));
	/* and libipt reads it all */
	assert_int_equal(ipt_parse_all(b, nb) > 0, 1);
	free(a);
	free(b);
}

static void test_fast_path_same_trace(void **state)
{
	static const struct fp_config configs[] = {
		{ "skylake", "skylake", 0, false, false, false, false, true, false, false },
		{ "skylake TNT-8", "skylake", 0, false, true, false, false, true, false, false },
		{ "broadwell", "broadwell", 0, false, false, false, false, true, false, false },
		{ "arrowlake PTWRITE CYC TSC", "arrowlake",
		  RTIT_CTL_PTW_EN | RTIT_CTL_CYCLEACC | RTIT_CTL_TSC_EN, false, false, false, true, true, false, false },
		{ "skylake small ToPA, PMIs", "skylake", 0, false, false, true, false, true, false, false },
		{ "skylake DisRETC", "skylake", RTIT_CTL_DISRETC, false, false, false, false, true, false, false },
		{ "skylake IP filter", "skylake", 0, true, false, false, false, false, false, false },
		{ "skylake MTC", "skylake", RTIT_CTL_MTC_EN | RTIT_CTL_TSC_EN, false, false, false,
		  false, false, false, false },
		{ "skylake loops", "skylake", 0, false, false, false, false, true, true, false },
		{ "skylake loops, small ToPA, PMIs", "skylake", 0, false, false, true, false, true, true, false },
		{ "broadwell loops TNT-8", "broadwell", 0, false, true, false, false, true, true, false },
		{ "arrowlake loops CYC TSC", "arrowlake", RTIT_CTL_CYCLEACC | RTIT_CTL_TSC_EN, false,
		  false, false, false, true, true, false },
		{ "skylake calls", "skylake", 0, false, false, false, false, true, true, true },
		{ "skylake calls, small ToPA, PMIs", "skylake", 0, false, false, true, false, true,
		  true, true },
		{ "skylake calls DisRETC", "skylake", RTIT_CTL_DISRETC, false, false, false, false,
		  true, true, true },
		{ "arrowlake calls CYC TSC", "arrowlake", RTIT_CTL_CYCLEACC | RTIT_CTL_TSC_EN, false,
		  false, false, false, true, true, true },
	};

	(void)state;
	for (unsigned int i = 0; i < ARRAY_SIZE(configs); i++)
		check_config(&configs[i]);
}

/*
 * The RET compression stack's ring (struct ptm_retstack: poisoned slots, no
 * length) against the decoder's as libipt keeps it (64 entries, a length,
 * the oldest overwritten): random pushes, pops of the top or of another
 * address, and resets, deep past 64 and back: the same answer every time.
 */
static void test_retstack_is_the_decoders(void **state)
{
	struct ptm_retstack rs;
	u64 ref[PTM_RS_SLOTS], pops = 0;
	unsigned int top = 0, len = 0;

	(void)state;
	ptm_rs_reset(&rs);
	rnd_state = 12345;
	for (unsigned int i = 0; i < 200000; i++) {
		unsigned int r = (unsigned int)(rnd() % 1000);
		/* phases that go deep, and that unwind (past the 64th, rarely reset) */
		bool deep = (i / 5000) & 1;
		u64 a = 0x1000 + (rnd() % 32) * 0x10;

		if (r < (deep ? 600u : 350u)) {
			ptm_rs_push(&rs, a);
			top = (top + 1) % PTM_RS_SLOTS;
			ref[top] = a;
			len += len < PTM_RS_SLOTS;
		} else if (r < 999) {
			/* mostly the top (when there is one), else any */
			u64 to = len && r < 900 ? ref[top] : a;
			bool want = len && ref[top] == to;

			if (ptm_rs_pop_if(&rs, to) != want)
				fail_msg("op %u: a RET to %#llx %s, the decoder's stack %s (length %u)", i,
					 (unsigned long long)to, want ? "not compressed" : "compressed",
					 want ? "has it on top" : "has not", len);
			if (want) {
				top = (top + PTM_RS_SLOTS - 1) % PTM_RS_SLOTS;
				len--;
				pops++;
			}
		} else {
			*ptm_rs_top(&rs) = PTM_RS_POISON;	/* a PSB: the decoder's stack empty */
			len = 0;
		}
	}
	assert_true(pops > 50000);
	assert_false(ptm_rs_pop_if(&rs, PTM_RS_POISON));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retstack_is_the_decoders),
		cmocka_unit_test_setup(test_fast_path_same_trace, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
