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
 */
#include "test_pt_common.h"

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
};

/* One run of the flow under @c: the bytes it made and the model's counters. */
static void run_flow(const struct fp_config *c, bool no_fast, u8 **bytes, size_t *len,
		     struct pt_model_stats *st)
{
	struct pt_model_config cfg;
	u64 stack[128], ip = CODE_LO + 0x100, t;
	unsigned int depth = 0;

	lowmem_init();
	model_setup(c->profile);
	pt_model_get_config(&cfg);
	cfg.no_fast_path = no_fast;
	cfg.long_tnt = !c->short_tnt;
	pt_model_set_config(&cfg);
	t = c->small_region ? topa_simple(0, TOPA_INT, NULL) : topa_simple(9, 0, NULL);
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
	rnd_state = 0x9e3779b97f4a7c15ull;
	for (unsigned int i = 0; i < 40000; i++) {
		unsigned int r = (unsigned int)(rnd() % 100);
		u64 far = CODE_LO + (rnd() % CODE_SPAN);
		u64 near = ip + 16 + (rnd() % 256);

		if (r < 40) {
			bool taken = rnd() & 1;

			pt_model_ev_cond(ip, ip + 2, near, taken);
			ip = taken ? near : ip + 2;
		} else if (r < 52) {
			if (depth < ARRAY_SIZE(stack))
				stack[depth++] = ip + 5;
			pt_model_ev_call(ip, ip + 5, far);
			ip = far;
		} else if (r < 66) {
			/* mostly where the call said; sometimes elsewhere (longjmp) */
			u64 to = depth && (rnd() % 8) ? stack[--depth] : far;

			pt_model_ev_ret(ip, to);
			ip = to;
		} else if (r < 72) {
			pt_model_ev_jump(ip, near);
			ip = near;
		} else if (r < 78) {
			pt_model_ev_jump_indirect(ip, far);
			ip = far;
		} else if (r < 82) {
			if (depth < ARRAY_SIZE(stack))
				stack[depth++] = ip + 2;
			pt_model_ev_call_indirect(ip, ip + 2, far);
			ip = far;
		} else if (r < 85 && c->ptw) {
			pt_model_ev_ptwrite(ip, ip + 5, rnd(), 8);
			ip += 5;
		} else if (r < 87) {
			/* an interrupt, its handler's IRET back */
			pt_model_ev_interrupt(PTM_INTR_HW, ip, HANDLER, 32, 0, PTM_MODE_64);
			pt_model_ev_far(HANDLER + 0x40, ip, 0, PTM_MODE_64);
		} else {
			pt_model_ev_cond(ip, ip + 6, near, false);
			ip += 6;
		}
	}
	wr(MSR_IA32_RTIT_CTL, rd(MSR_IA32_RTIT_CTL) & ~RTIT_CTL_TRACEEN);
	pt_model_get_stats(st);
	*len = cap.len;
	*bytes = malloc(cap.len + 1);
	memcpy(*bytes, cap.bytes, cap.len);
}

static void check_config(const struct fp_config *c)
{
	struct pt_model_stats slow, fast;
	u8 *a, *b;
	size_t na, nb;

	run_flow(c, true, &a, &na, &slow);
	run_flow(c, false, &b, &nb, &fast);
	if (na != nb || memcmp(a, b, na)) {
		size_t i = 0;

		while (i < na && i < nb && a[i] == b[i])
			i++;
		fail_msg("%s: the fast path changed the trace: %zu bytes against %zu, first "
			 "difference at byte %zu", c->name, nb, na, i);
	}
	assert_int_equal(slow.fast, 0);
	if (c->fast_expected && fast.fast < 10000)
		fail_msg("%s: the fast path took only %llu instructions", c->name,
			 (unsigned long long)fast.fast);
	if (!c->fast_expected && fast.fast)
		fail_msg("%s: the fast path ran %llu times where it must not", c->name,
			 (unsigned long long)fast.fast);
	fast.fast = 0;
	assert_memory_equal(&slow, &fast, sizeof(slow));
	assert_true(slow.packets > 1000);
	/* and libipt reads it all */
	assert_int_equal(ipt_parse_all(b, nb) > 0, 1);
	free(a);
	free(b);
}

static void test_fast_path_same_trace(void **state)
{
	static const struct fp_config configs[] = {
		{ "skylake", "skylake", 0, false, false, false, false, true },
		{ "skylake TNT-8", "skylake", 0, false, true, false, false, true },
		{ "broadwell", "broadwell", 0, false, false, false, false, true },
		{ "arrowlake PTWRITE CYC TSC", "arrowlake",
		  RTIT_CTL_PTW_EN | RTIT_CTL_CYCLEACC | RTIT_CTL_TSC_EN, false, false, false, true, true },
		{ "skylake small ToPA, PMIs", "skylake", 0, false, false, true, false, true },
		{ "skylake DisRETC", "skylake", RTIT_CTL_DISRETC, false, false, false, false, true },
		{ "skylake IP filter", "skylake", 0, true, false, false, false, false },
		{ "skylake MTC", "skylake", RTIT_CTL_MTC_EN | RTIT_CTL_TSC_EN, false, false, false,
		  false, false },
	};

	(void)state;
	for (unsigned int i = 0; i < ARRAY_SIZE(configs); i++)
		check_config(&configs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fast_path_same_trace, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
