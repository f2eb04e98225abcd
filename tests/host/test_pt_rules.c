// SPDX-License-Identifier: MIT
/*
 * The PT model's rules, one negative test per #GP rule and per operational
 * error, asserting the exact rule (or STATUS bits); its CPUID answers; the
 * pass-through of everything it does not claim; and the pt.* command line.
 */
#include "test_pt_common.h"
#include <topaz/tracing.h>
#include <topaz/pt.h>
#include <topaz/cmdline.h>
#include <topaz/printk.h>

static bool gp_seen[PT_GP_NR], operr_seen[PT_OPERR_NR];

static int setup(void **state)
{
	lowmem_init();
	model_setup("skylake");
	return 0;
}

/* The access faults as #GP, by @rule: the _safe form returns -EIO. */
static void expect_gp_w(u32 msr, u64 val, enum pt_gp_rule rule)
{
	pt_model_clear_faults();
	if (wrmsr_safe(msr, val) != -EIO)
		fail_msg("wrmsr %#x <- %#llx was accepted; expected #GP by %s", msr,
			 (unsigned long long)val, pt_model_gp_rule(rule)->name);
	if (pt_model_last_gp() != (int)rule)
		fail_msg("wrmsr %#x <- %#llx: #GP by %s, expected %s", msr, val,
			 pt_model_last_gp() >= 0 ? pt_model_gp_rule(pt_model_last_gp())->name : "?",
			 pt_model_gp_rule(rule)->name);
	gp_seen[rule] = true;
}

static void expect_gp_r(u32 msr, enum pt_gp_rule rule)
{
	u64 v = 0x5a5a;

	pt_model_clear_faults();
	assert_int_equal(rdmsr_safe(msr, &v), -EIO);
	assert_int_equal(pt_model_last_gp(), rule);
	gp_seen[rule] = true;
}

static void setup_profile(const char *name)
{
	lowmem_init();
	model_setup(name);
}

/* A table with one 4 KiB region and END back: tracing can be enabled. */
static u64 simple_output(void)
{
	u64 r, t = topa_simple(0, 0, &r);

	topa_program(t, 0, 0);
	return t;
}

static const u64 EN = RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN | RTIT_CTL_TOPA | RTIT_CTL_OS;

/* --------------------------------------------------------- IA32_RTIT_CTL */

static void test_ctl_while_traceen(void **state)
{
	simple_output();
	wr(MSR_IA32_RTIT_CTL, EN);
	wr(MSR_IA32_RTIT_CTL, EN);			/* the same value: allowed */
	expect_gp_w(MSR_IA32_RTIT_CTL, EN | RTIT_CTL_USR, PT_GP_CTL_WHILE_TRACEEN);
	assert_int_equal(rd(MSR_IA32_RTIT_CTL), EN);	/* unchanged */
	/* clearing TraceEn together with other changes is allowed */
	wr(MSR_IA32_RTIT_CTL, (EN & ~RTIT_CTL_TRACEEN) | RTIT_CTL_USR | RTIT_CTL_TSC_EN);
	assert_int_equal(rd(MSR_IA32_RTIT_CTL), (EN & ~RTIT_CTL_TRACEEN) | RTIT_CTL_USR | RTIT_CTL_TSC_EN);
}

static void test_ctl_value_rules_skylake(void **state)
{
	static const struct { u64 v; enum pt_gp_rule r; } cases[] = {
		{ BIT_ULL(18), PT_GP_CTL_RESERVED },
		{ BIT_ULL(23), PT_GP_CTL_RESERVED },
		{ BIT_ULL(29), PT_GP_CTL_RESERVED },
		{ BIT_ULL(50), PT_GP_CTL_RESERVED },
		{ BIT_ULL(60), PT_GP_CTL_RESERVED },
		{ RTIT_CTL_PTW_EN, PT_GP_CTL_PTW_UNSUPPORTED },
		{ RTIT_CTL_FUP_ON_PTW, PT_GP_CTL_PTW_UNSUPPORTED },
		{ RTIT_CTL_PWR_EVT_EN, PT_GP_CTL_PWR_UNSUPPORTED },
		{ RTIT_CTL_FABRIC_EN, PT_GP_CTL_FABRIC_UNSUPPORTED },
		{ RTIT_CTL_EVENT_EN, PT_GP_CTL_EVENT_UNSUPPORTED },
		{ RTIT_CTL_NOTNT, PT_GP_CTL_DISTNT_UNSUPPORTED },
		{ RTIT_CTL_INJECT_PSB_PMI, PT_GP_CTL_INJECT_UNSUPPORTED },
		{ 1ULL << RTIT_CTL_ADDR2_OFFSET, PT_GP_CTL_ADDR_CFG_UNSUPPORTED },
		{ 2ULL << RTIT_CTL_ADDR3_OFFSET, PT_GP_CTL_ADDR_CFG_UNSUPPORTED },
		{ 3ULL << RTIT_CTL_ADDR0_OFFSET, PT_GP_CTL_ADDR_CFG_RESERVED },
		{ 15ULL << RTIT_CTL_ADDR1_OFFSET, PT_GP_CTL_ADDR_CFG_RESERVED },
		{ 1ULL << RTIT_CTL_MTC_RANGE_OFFSET, PT_GP_CTL_MTC_FREQ },	/* bitmap 0x249 */
		{ 15ULL << RTIT_CTL_MTC_RANGE_OFFSET, PT_GP_CTL_MTC_FREQ },
		{ 14ULL << RTIT_CTL_CYC_THRESH_OFFSET, PT_GP_CTL_CYC_THRESH },	/* bitmap 0x3fff */
		{ 6ULL << RTIT_CTL_PSB_FREQ_OFFSET, PT_GP_CTL_PSB_FREQ },	/* bitmap 0x3f */
	};
	static const u64 ok[] = {
		3ULL << RTIT_CTL_MTC_RANGE_OFFSET, 9ULL << RTIT_CTL_MTC_RANGE_OFFSET,
		13ULL << RTIT_CTL_CYC_THRESH_OFFSET, 5ULL << RTIT_CTL_PSB_FREQ_OFFSET,
		RTIT_CTL_CYCLEACC | RTIT_CTL_MTC_EN | RTIT_CTL_CR3EN | RTIT_CTL_DISRETC,
		(1ULL << RTIT_CTL_ADDR0_OFFSET) | (2ULL << RTIT_CTL_ADDR1_OFFSET),
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		expect_gp_w(MSR_IA32_RTIT_CTL, cases[i].v, cases[i].r);
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
		wr(MSR_IA32_RTIT_CTL, ok[i]);
}

static void test_ctl_feature_rules_broadwell(void **state)
{
	setup_profile("broadwell");
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_CYCLEACC, PT_GP_CTL_CYC_PSB_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CTL, 1ULL << RTIT_CTL_PSB_FREQ_OFFSET, PT_GP_CTL_CYC_PSB_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CTL, 1ULL << RTIT_CTL_CYC_THRESH_OFFSET, PT_GP_CTL_CYC_PSB_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_MTC_EN, PT_GP_CTL_MTC_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CTL, 3ULL << RTIT_CTL_MTC_RANGE_OFFSET, PT_GP_CTL_MTC_UNSUPPORTED);
	/* no IP filtering at all: every ADDRn_CFG is reserved */
	expect_gp_w(MSR_IA32_RTIT_CTL, 1ULL << RTIT_CTL_ADDR0_OFFSET, PT_GP_CTL_ADDR_CFG_UNSUPPORTED);
	/* no single-range output */
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN, PT_GP_CTL_NO_OUTPUT);
	/* BDM106: BranchEn must stay set while tracing */
	simple_output();
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_TOPA, PT_GP_CTL_BDM106);
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA);		/* without TraceEn it is fine */
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_TOPA | RTIT_CTL_BRANCH_EN);
}

static void test_ctl_features_present_elsewhere(void **state)
{
	/* Skylake has no BDM106: tracing with BranchEn=0 is fine */
	simple_output();
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_TOPA);
	wr(MSR_IA32_RTIT_CTL, 0);
	/* Arrow Lake: PTWRITE and DisTNT; InjectPsbPmiOnEnable */
	setup_profile("arrowlake");
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_PTW_EN | RTIT_CTL_FUP_ON_PTW | RTIT_CTL_NOTNT |
	   RTIT_CTL_INJECT_PSB_PMI);
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_PWR_EVT_EN, PT_GP_CTL_PWR_UNSUPPORTED);
	/* Tiger Lake: CycThresh 13 is not in its 0x1fff bitmap */
	setup_profile("tigerlake");
	wr(MSR_IA32_RTIT_CTL, 12ULL << RTIT_CTL_CYC_THRESH_OFFSET);
	expect_gp_w(MSR_IA32_RTIT_CTL, 13ULL << RTIT_CTL_CYC_THRESH_OFFSET, PT_GP_CTL_CYC_THRESH);
	/* Skylake single-range: TraceEn with ToPA=0 is allowed */
	setup_profile("skylake");
	wr(MSR_IA32_RTIT_OUTPUT_BASE, lm_alloc(4096, 4096));
	wr(MSR_IA32_RTIT_OUTPUT_MASK, 0xfff);
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN);
}

/* Capabilities no real profile lacks, on synthetic profiles. */
static const struct pt_profile no_output = {
	.name = "synthetic-no-output", .cpu = "synthetic", .source = "test",
	.leaf14 = { { 0, 0x0, 0x0, 0 }, { 0, 0, 0, 0 } },
	.maxphyaddr = 39, .linear_bits = 48, .cbr = 1,
};

static void install(const struct pt_profile *p)
{
	pt_model_uninstall();
	assert_int_equal(pt_model_init_profile(p, false), 1);
	pt_model_set_packet_hook(capture_hook, &cap);
}

static void test_synthetic_capability_rules(void **state)
{
	install(&no_output);
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_CR3EN, PT_GP_CTL_CR3_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA, PT_GP_CTL_TOPA_UNSUPPORTED);
	expect_gp_r(MSR_IA32_RTIT_CR3_MATCH, PT_GP_CR3_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_CR3_MATCH, 0x1000, PT_GP_CR3_UNSUPPORTED);
	expect_gp_r(MSR_IA32_RTIT_OUTPUT_BASE, PT_GP_OUTPUT_UNSUPPORTED);
	expect_gp_r(MSR_IA32_RTIT_OUTPUT_MASK, PT_GP_OUTPUT_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_BASE, 0x1000, PT_GP_OUTPUT_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_MASK, 0x7f, PT_GP_OUTPUT_UNSUPPORTED);
	/* CTL and STATUS always exist */
	assert_int_equal(rd(MSR_IA32_RTIT_CTL), 0);
	assert_int_equal(rd(MSR_IA32_RTIT_STATUS), 0);
}

/*
 * A CTL value that passed the value-only rows is remembered with the
 * profile's words (ptm_check_access()): the same value must be refused once
 * the profile, changed in place as tests/fuzz/fuzz_msr changes its synthetic
 * one, no longer has the feature, and accepted again when it has it back;
 * and the remembered value must not let TraceEn's own rule by.
 */
static struct pt_profile mutable_caps = {
	.name = "synthetic-mutable", .cpu = "synthetic", .source = "test",
	.leaf14 = { { 1, PT_CAP_PTWRITE | PT_CAP_PSB_CYC, PT_CAP_TOPA | PT_CAP_TOPA_MULTI, 0 },
		    { 0, 0x3f << 16 | 1, 0, 0 } },
	.maxphyaddr = 39, .linear_bits = 48, .cbr = 1,
};

static void test_ctl_memo_follows_the_profile(void **state)
{
	const u64 v = RTIT_CTL_PTW_EN | RTIT_CTL_TOPA;

	install(&mutable_caps);
	wr(MSR_IA32_RTIT_CTL, v);
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_CTL, v);		/* remembered now */
	wr(MSR_IA32_RTIT_CTL, 0);
	mutable_caps.leaf14[0][1] &= ~PT_CAP_PTWRITE;
	expect_gp_w(MSR_IA32_RTIT_CTL, v, PT_GP_CTL_PTW_UNSUPPORTED);
	mutable_caps.leaf14[0][1] |= PT_CAP_PTWRITE;
	wr(MSR_IA32_RTIT_CTL, v);
	/* tracing on with a remembered value, then another one: still refused */
	simple_output();
	wr(MSR_IA32_RTIT_CTL, v | EN);
	wr(MSR_IA32_RTIT_CTL, v | EN);		/* the same value: allowed */
	expect_gp_w(MSR_IA32_RTIT_CTL, v | EN | RTIT_CTL_USR, PT_GP_CTL_WHILE_TRACEEN);
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_CTL, v | EN | RTIT_CTL_USR);	/* remembered */
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_CTL, v | EN);
	expect_gp_w(MSR_IA32_RTIT_CTL, v | EN | RTIT_CTL_USR, PT_GP_CTL_WHILE_TRACEEN);
	wr(MSR_IA32_RTIT_CTL, 0);
}

/*
 * CPUID.14H.1:EAX[2:0] can say 7 ranges, but only ADDR0..3 exist: the model
 * has 4. With 7, FilterEn looked at ADDR6_CFG (CTL bits 59:56, where
 * InjectPsbPmiOnEnable is bit 56) and read addr_a[6] (fuzz_msr found it).
 */
static const struct pt_profile seven_ranges = {
	.name = "synthetic-seven-ranges", .cpu = "synthetic", .source = "test",
	.leaf14 = { { 1, PT_CAP_IP_FILTER | PT_CAP_PSB_PMI_PRESERVE, PT_CAP_TOPA | PT_CAP_TOPA_MULTI, 0 },
		    { 7, 0, 0, 0 } },
	.maxphyaddr = 39, .linear_bits = 48, .cbr = 1,
};

static void test_more_ranges_than_msrs(void **state)
{
	install(&seven_ranges);
	simple_output();
	wr(MSR_IA32_RTIT_ADDR3_B, 0x1000);
	wr(MSR_IA32_RTIT_ADDR0_A, 0x401000);
	wr(MSR_IA32_RTIT_ADDR0_B, 0x401fff);
	wr(MSR_IA32_RTIT_CTL, EN | (1ULL << RTIT_CTL_ADDR0_OFFSET) | RTIT_CTL_INJECT_PSB_PMI);
	capture_reset();
	/* enable point outside ADDR0: FilterEn=0, no TIP.PGE */
	pt_model_ev_at(0x500000);
	assert_int_equal(capture_count(PTPK_TIP_PGE), 0);
	assert_false(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_FILTEREN);
	pt_model_ev_jump_indirect(0x500000, 0x401800);
	assert_int_equal(capture_count(PTPK_TIP_PGE), 1);
	assert_true(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_FILTEREN);
}

/* --------------------------------------------------------- STATUS */

static void test_status_rules(void **state)
{
	simple_output();
	expect_gp_w(MSR_IA32_RTIT_STATUS, RTIT_STATUS_BUFFOVF, PT_GP_STATUS_RESERVED);
	expect_gp_w(MSR_IA32_RTIT_STATUS, BIT_ULL(8), PT_GP_STATUS_RESERVED);
	expect_gp_w(MSR_IA32_RTIT_STATUS, BIT_ULL(49), PT_GP_STATUS_RESERVED);
	expect_gp_w(MSR_IA32_RTIT_STATUS, RTIT_STATUS_PENDPSB, PT_GP_STATUS_RESERVED);	/* no EBX[6] */
	/* the enables are read-only: writes ignored, no #GP */
	wr(MSR_IA32_RTIT_STATUS, RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN | RTIT_STATUS_TRIGGEREN);
	assert_int_equal(rd(MSR_IA32_RTIT_STATUS), 0);
	/* Error and Stopped: sticky, software-writable while TraceEn=0 */
	wr(MSR_IA32_RTIT_STATUS, RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
	assert_int_equal(rd(MSR_IA32_RTIT_STATUS), RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
	wr(MSR_IA32_RTIT_STATUS, 0);
	wr(MSR_IA32_RTIT_CTL, EN);
	expect_gp_w(MSR_IA32_RTIT_STATUS, 0, PT_GP_STATUS_WHILE_TRACEEN);
	/* Tiger Lake has PSB/PMI preservation: PendPSB/PendTopaPMI writable */
	setup_profile("tigerlake");
	wr(MSR_IA32_RTIT_STATUS, RTIT_STATUS_PENDPSB | RTIT_STATUS_PENDTOPAPMI);
	setup_profile("broadwell");
	expect_gp_w(MSR_IA32_RTIT_STATUS, 1ULL << 32, PT_GP_STATUS_BYTECNT_UNSUPPORTED);
}

/* --------------------------------------------------------- output MSRs */

static void test_output_rules(void **state)
{
	u64 t = simple_output();

	expect_gp_w(MSR_IA32_RTIT_OUTPUT_BASE, t | 0x40, PT_GP_OUTPUT_BASE_RESERVED);
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(39), PT_GP_OUTPUT_BASE_RESERVED);
	wr(MSR_IA32_RTIT_OUTPUT_BASE, t | 0x80);	/* bits 11:7: no #GP (an operational error later) */
	wr(MSR_IA32_RTIT_OUTPUT_BASE, t);
	wr(MSR_IA32_RTIT_CTL, EN);
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_BASE, t, PT_GP_OUTPUT_WHILE_TRACEEN);
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_MASK, 0x7f, PT_GP_OUTPUT_WHILE_TRACEEN);
	/* reads are always allowed */
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t);
	/* Arrow Lake's MAXPHYADDR is 46: bit 39 is fine there, bit 46 not */
	setup_profile("arrowlake");
	wr(MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(39));
	expect_gp_w(MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(46), PT_GP_OUTPUT_BASE_RESERVED);
}

/* --------------------------------------------------------- CR3_MATCH, ADDRn */

static void test_cr3_and_addr_rules(void **state)
{
	simple_output();
	expect_gp_w(MSR_IA32_RTIT_CR3_MATCH, 0x1001, PT_GP_CR3_RESERVED);
	expect_gp_w(MSR_IA32_RTIT_CR3_MATCH, 0x1010, PT_GP_CR3_RESERVED);
	wr(MSR_IA32_RTIT_CR3_MATCH, 0x1020);
	expect_gp_w(MSR_IA32_RTIT_ADDR0_A, 0x0000800000000000ULL, PT_GP_ADDR_NONCANONICAL);
	expect_gp_w(MSR_IA32_RTIT_ADDR1_B, 0x7fff000000000000ULL, PT_GP_ADDR_NONCANONICAL);
	wr(MSR_IA32_RTIT_ADDR0_A, 0xffff800000000000ULL);
	wr(MSR_IA32_RTIT_ADDR1_B, 0x00007fffffffffffULL);
	/* two ranges on Skylake: ADDR2/3 do not exist */
	expect_gp_r(MSR_IA32_RTIT_ADDR2_A, PT_GP_ADDR_UNSUPPORTED);
	expect_gp_w(MSR_IA32_RTIT_ADDR3_B, 0, PT_GP_ADDR_UNSUPPORTED);
	wr(MSR_IA32_RTIT_CTL, EN);
	expect_gp_w(MSR_IA32_RTIT_CR3_MATCH, 0x2000, PT_GP_CR3_WHILE_TRACEEN);
	expect_gp_w(MSR_IA32_RTIT_ADDR0_B, 0x1000, PT_GP_ADDR_WHILE_TRACEEN);
	assert_int_equal(rd(MSR_IA32_RTIT_ADDR0_A), 0xffff800000000000ULL);
	/* Broadwell: no IP filtering, no ADDRn at all */
	setup_profile("broadwell");
	expect_gp_r(MSR_IA32_RTIT_ADDR0_A, PT_GP_ADDR_UNSUPPORTED);
}

/* A plain WRMSR that faults takes the #GP path (arch_msr_fault). */
static void test_plain_access_faults(void **state)
{
	jmp_buf jb;
	unsigned int before = hosted_msr_faults;
	volatile int stage = 0;

	hosted_panic_jmp = &jb;
	if (!setjmp(jb)) {
		wrmsr(MSR_IA32_RTIT_CTL, BIT_ULL(18));
		stage = 1;
	}
	assert_int_equal(stage, 0);
	assert_int_equal(hosted_msr_faults, before + 1);
	assert_non_null(strstr(hosted_panic_msg, "wrmsr of MSR 0x570"));
	if (!setjmp(jb)) {
		(void)rdmsr(MSR_IA32_RTIT_ADDR2_A);
		stage = 2;
	}
	assert_int_equal(stage, 0);
	assert_int_equal(hosted_msr_faults, before + 2);
	hosted_panic_jmp = NULL;
	/* and a plain access that is fine just works */
	wrmsr(MSR_IA32_RTIT_CTL, RTIT_CTL_TSC_EN);
	assert_int_equal(rdmsr(MSR_IA32_RTIT_CTL), RTIT_CTL_TSC_EN);
}

/* --------------------------------------------------------- operational errors */

static void expect_operr(enum pt_operr e)
{
	u64 st = rd(MSR_IA32_RTIT_STATUS);
	struct pt_model_stats s;
	size_t n = cap.n;

	if (!(st & RTIT_STATUS_ERROR))
		fail_msg("no operational error; expected %s", pt_model_operr_rule(e)->name);
	if (pt_model_last_operr() != (int)e)
		fail_msg("operational error %s, expected %s",
			 pt_model_last_operr() >= 0 ? pt_model_operr_rule(pt_model_last_operr())->name : "none",
			 pt_model_operr_rule(e)->name);
	assert_false(st & RTIT_STATUS_TRIGGEREN);
	/* tracing is halted */
	pt_model_get_stats(&s);
	pt_model_ev_at(0x401000);
	pt_model_ev_jump_indirect(0x401000, 0x402000);
	pt_model_ev_pad(4);
	assert_int_equal(cap.n, n);
	operr_seen[e] = true;
}

static void enable_topa(void)
{
	pt_model_clear_faults();
	wr(MSR_IA32_RTIT_CTL, EN);
}

static void test_operr_table_misaligned(void **state)
{
	u64 t = simple_output();

	wr(MSR_IA32_RTIT_OUTPUT_BASE, t | 0x180);
	enable_topa();
	expect_operr(PT_OPERR_TABLE_MISALIGNED);
	assert_int_equal(cap.len, 0);
}

static void test_operr_entry_reserved(void **state)
{
	static const u64 bad[] = { BIT_ULL(1), BIT_ULL(3), BIT_ULL(5), BIT_ULL(10), BIT_ULL(11), BIT_ULL(40) };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		u64 r, t;

		setup_profile("skylake");
		t = topa_simple(0, 0, &r);
		((u64 *)pv(t))[0] |= bad[i];
		topa_program(t, 0, 0);
		enable_topa();
		expect_operr(PT_OPERR_ENTRY_RESERVED);
	}
}

/* An error met during the walk: the region before it is written, then
 * tracing halts with the position at the bad entry. */
static void test_operr_end_at_entry0_during_walk(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), t1 = lm_alloc(4096, 4096), t2 = lm_alloc(4096, 4096);
	struct pt_model_stats s;

	((u64 *)pv(t1))[0] = TOPA_ENTRY(r0, 0, 0);
	((u64 *)pv(t1))[1] = TOPA_ENTRY(t2, 0, TOPA_END);
	((u64 *)pv(t2))[0] = TOPA_ENTRY(t1, 0, TOPA_END);	/* END pointing at END */
	topa_program(t1, 0, 0);
	enable_topa();
	assert_false(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR);
	while (!(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR) && cap.len < 10000)
		pt_model_ev_pad(1);
	expect_operr(PT_OPERR_END_AT_ENTRY0);
	pt_model_get_stats(&s);
	assert_int_equal(s.bytes_written, 4096);
	wr(MSR_IA32_RTIT_CTL, 0);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t2);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f);
}

static void test_operr_end_int_stop(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), t = lm_alloc(4096, 4096);

	((u64 *)pv(t))[0] = TOPA_ENTRY(r0, 0, 0);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t, 0, TOPA_END | TOPA_INT);
	topa_program(t, 1, 0);
	enable_topa();
	expect_operr(PT_OPERR_END_INT_STOP);
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_STATUS, 0);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t, 0, TOPA_END | TOPA_STOP);
	enable_topa();
	expect_operr(PT_OPERR_END_INT_STOP);
}

static void test_operr_region_and_offset(void **state)
{
	u64 r = lm_alloc(16384, 16384), t = lm_alloc(4096, 4096);

	((u64 *)pv(t))[0] = TOPA_ENTRY(r + 4096, 1, 0);	/* 8 KiB at a 4 KiB boundary */
	((u64 *)pv(t))[1] = TOPA_ENTRY(t, 0, TOPA_END);
	topa_program(t, 0, 0);
	enable_topa();
	expect_operr(PT_OPERR_REGION_MISALIGNED);
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_STATUS, 0);
	((u64 *)pv(t))[0] = TOPA_ENTRY(r, 1, 0);
	topa_program(t, 0, 8192);			/* OutputOffset = region size */
	enable_topa();
	expect_operr(PT_OPERR_OFFSET_TOO_LARGE);
}

static void test_operr_single_entry(void **state)
{
	u64 r0, t;

	setup_profile("broadwell");
	t = topa_simple(0, 0, &r0);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t + 4096, 0, TOPA_END);	/* END elsewhere */
	topa_program(t, 0, 0);
	enable_topa();
	expect_operr(PT_OPERR_SINGLE_ENTRY_LAYOUT);
}

static void test_operr_single_range(void **state)
{
	u64 base = lm_alloc(16384, 16384);

	wr(MSR_IA32_RTIT_OUTPUT_BASE, base + 4096);
	wr(MSR_IA32_RTIT_OUTPUT_MASK, 0x1fff);		/* 8 KiB at a 4 KiB boundary */
	pt_model_clear_faults();
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN);
	expect_operr(PT_OPERR_SINGLE_RANGE_MISALIGNED);
	wr(MSR_IA32_RTIT_CTL, 0);
	wr(MSR_IA32_RTIT_STATUS, 0);
	wr(MSR_IA32_RTIT_OUTPUT_BASE, base);
	wr(MSR_IA32_RTIT_OUTPUT_MASK, 0x2fff);		/* not 2^n - 1 */
	pt_model_clear_faults();
	wr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN);
	expect_operr(PT_OPERR_SINGLE_RANGE_MASK);
}

/* --------------------------------------------------------- CPUID */

static void test_cpuid_answers(void **state)
{
	struct cpuid_regs r;
	const struct pt_profile *p = pt_profile_find("skylake");

	cpuid_regs(7, 0, &r);
	assert_true(r.ebx & CPUID_7_0_EBX_INTEL_PT);
	cpuid_regs(0, 0, &r);
	assert_true(r.eax >= 0x14);
	cpuid_regs(0x14, 0, &r);
	assert_int_equal(r.eax, p->leaf14[0][0]);
	assert_int_equal(r.ebx, 0x0f);
	assert_int_equal(r.ecx, 0x07);
	assert_int_equal(r.edx, 0);
	cpuid_regs(0x14, 1, &r);
	assert_int_equal(r.eax, 0x02490002);
	assert_int_equal(r.ebx, 0x003f3fff);
	cpuid_regs(0x14, 2, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	/* leaves the raised maximum exposes read as "not supported" */
	cpuid_regs(0x10, 0, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	/* Broadwell reports no sub-leaf 1 */
	setup_profile("broadwell");
	cpuid_regs(0x14, 0, &r);
	assert_int_equal(r.eax, 0);
	assert_int_equal(r.ebx, 1);
	assert_int_equal(r.ecx, 1);
	/* uninstalled: the fake CPU has no PT */
	pt_model_uninstall();
	cpuid_regs(7, 0, &r);
	assert_false(r.ebx & CPUID_7_0_EBX_INTEL_PT);
	{
		u64 v;

		assert_int_equal(rdmsr_safe(MSR_IA32_RTIT_CTL, &v), -EIO);
	}
}

static void test_cpuid_keeps_cpu_bits(void **state)
{
	struct cpuid_regs l0 = { 0x20, 1, 2, 3 }, l7 = { 0, 0x00000209, 0x4, 0x8 }, r;

	/* a CPU without PT but with other leaf-7 features */
	pt_model_uninstall();
	hosted_cpuid_set(0, 0, &l0);
	hosted_cpuid_set(7, 0, &l7);
	assert_int_equal(pt_model_init("skylake", false), 1);
	cpuid_regs(0, 0, &r);
	assert_int_equal(r.eax, 0x20);
	assert_int_equal(r.ebx, 1);
	cpuid_regs(7, 0, &r);
	assert_int_equal(r.ebx, 0x00000209 | CPUID_7_0_EBX_INTEL_PT);
	assert_int_equal(r.ecx, 0x4);
	assert_int_equal(r.edx, 0x8);
}

/* Everything the model does not claim goes to the CPU. */
static void test_pass_through(void **state)
{
	u64 v;

	hosted_msr_define(0x10, 1234);
	assert_int_equal(rd(0x10), 1234);
	wr(0x10, 99);
	assert_true(hosted_msr_get(0x10, &v));
	assert_int_equal(v, 99);
	assert_int_equal(rdmsr_safe(0x123, &v), -EIO);	/* absent on the fake CPU */
	assert_int_equal(pt_model_last_gp(), -1);
	/* GLOBAL_STATUS is read-only on the CPU */
	assert_int_equal(wrmsr_safe(MSR_CORE_PERF_GLOBAL_STATUS, 0), -EIO);
}

/*
 * An OVF_CTRL write the CPU refuses (#GP) changes nothing: TraceToPAPMI
 * stays set. The model used to clear it before passing the CPU's bits on
 * (fuzz_msr found it).
 */
static void test_refused_ovf_ctrl_keeps_topa_pmi(void **state)
{
	const u64 ack = MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI;

	/* Tiger Lake: a preserved ToPA PMI sets TraceToPAPMI at the enable */
	setup_profile("tigerlake");
	simple_output();
	wr(MSR_IA32_RTIT_STATUS, RTIT_STATUS_PENDTOPAPMI);
	wr(MSR_IA32_RTIT_CTL, EN | RTIT_CTL_INJECT_PSB_PMI);
	assert_true(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	/* the fake CPU has no OVF_CTRL: its bit 0 faults, bit 55 must stay */
	pt_model_clear_faults();
	assert_int_equal(wrmsr_safe(MSR_CORE_PERF_GLOBAL_OVF_CTRL, ack | BIT_ULL(0)), -EIO);
	assert_int_equal(pt_model_last_gp(), -1);
	assert_true(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	/* bit 55 alone is the model's: accepted, and it clears */
	wr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, ack);
	assert_false(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	/* with the CPU's OVF_CTRL present, both go through */
	hosted_msr_define(MSR_CORE_PERF_GLOBAL_OVF_CTRL, 0);
	wr(MSR_IA32_RTIT_CTL, EN & ~RTIT_CTL_TRACEEN);
	wr(MSR_IA32_RTIT_STATUS, RTIT_STATUS_PENDTOPAPMI);
	wr(MSR_IA32_RTIT_CTL, EN | RTIT_CTL_INJECT_PSB_PMI);
	assert_true(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	wr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, ack | BIT_ULL(0));
	assert_false(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
}

static void test_install_decisions(void **state)
{
	struct cpuid_regs l0 = { 0x20, 0, 0, 0 }, l7 = { 0, CPUID_7_0_EBX_INTEL_PT, 0, 0 };
	char out[1024];

	pt_model_uninstall();
	/* a CPU with PT: not installed unless forced */
	hosted_cpuid_set(0, 0, &l0);
	hosted_cpuid_set(7, 0, &l7);
	assert_true(pt_cpu_has_pt());
	assert_int_equal(pt_model_init("skylake", false), 0);
	assert_false(pt_model_active());
	assert_int_equal(pt_model_init("skylake", true), 1);
	assert_true(pt_model_active());
	pt_model_uninstall();
	/* an unknown profile is refused with the valid names */
	printk_capture_start(out, sizeof(out));
	assert_int_equal(pt_model_init("haswell", true), -EINVAL);
	printk_capture_stop();
	assert_non_null(strstr(out, "unknown CPU profile 'haswell'"));
	assert_non_null(strstr(out, "broadwell, skylake, tigerlake, arrowlake"));
	assert_false(pt_model_active());
}

static void test_command_line(void **state)
{
	struct cmdline_result res;
	char out[2048];

	pt_model_uninstall();
	printk_capture_start(out, sizeof(out));
	cmdline_parse("pt.profile=haswell pt.model=maybe", &res);
	printk_capture_stop();
	assert_int_equal(res.errors, 2);
	assert_non_null(strstr(out, "expected one of: broadwell, skylake, tigerlake, arrowlake"));
	assert_non_null(strstr(out, "expected auto, on or off"));
	cmdline_parse("pt.model=off", &res);
	assert_int_equal(res.errors, 0);
	assert_int_equal(pt_unit_boot(), 0);
	assert_false(pt_model_active());
	/* auto on a CPU without PT: installed, with the profile asked for */
	cmdline_parse("pt.model=auto pt.profile=arrowlake pt.skid=7", &res);
	assert_int_equal(res.errors, 0);
	assert_int_equal(pt_unit_boot(), 1);
	assert_string_equal(pt_model_profile()->name, "arrowlake");
	{
		struct pt_model_config c;

		pt_model_get_config(&c);
		assert_int_equal(c.pmi_skid, 7);
	}
	/* on: installed even on a CPU with PT */
	pt_model_uninstall();
	{
		struct cpuid_regs l0 = { 0x20, 0, 0, 0 }, l7 = { 0, CPUID_7_0_EBX_INTEL_PT, 0, 0 };

		hosted_cpuid_set(0, 0, &l0);
		hosted_cpuid_set(7, 0, &l7);
	}
	cmdline_parse("pt.model=auto", &res);
	assert_int_equal(pt_unit_boot(), 0);
	cmdline_parse("pt.model=on pt.profile=broadwell", &res);
	assert_int_equal(pt_unit_boot(), 1);
	assert_string_equal(pt_model_profile()->name, "broadwell");
	cmdline_parse("pt.model=auto pt.profile=skylake pt.skid=96", &res);
}

/* Every profile names its source and is self-consistent. */
static void test_profiles(void **state)
{
	assert_true(pt_nr_profiles >= 3);
	for (unsigned int i = 0; i < pt_nr_profiles; i++) {
		const struct pt_profile *p = &pt_profiles[i];

		assert_non_null(strstr(p->source, "dump") ? p->source : strstr(p->source, "database"));
		assert_true(p->family == 6 && p->model);
		assert_true(p->leaf14[0][2] & PT_CAP_TOPA);
		assert_true(p->cbr);
		assert_ptr_equal(pt_profile_find(p->name), p);
	}
	/* the three kinds the issue asks for */
	assert_false(pt_profile_find("broadwell")->leaf14[0][2] & PT_CAP_TOPA_MULTI);
	assert_int_equal(pt_profile_find("skylake")->leaf14[1][0] & 7, 2);
	assert_true(pt_profile_find("skylake")->leaf14[0][1] & (PT_CAP_MTC | PT_CAP_PSB_CYC));
	assert_true(pt_profile_find("arrowlake")->leaf14[0][1] & PT_CAP_PTWRITE);
}

/* Runs last: every rule of both tables was triggered above. */
static void test_every_rule_covered(void **state)
{
	for (int r = 0; r < PT_GP_NR; r++) {
		const struct pt_rule_info *i = pt_model_gp_rule((enum pt_gp_rule)r);

		assert_non_null(i);
		assert_true(strlen(i->sdm) > 4);
		if (!gp_seen[r])
			fail_msg("#GP rule %s has no negative test", i->name);
	}
	for (int e = 0; e < PT_OPERR_NR; e++) {
		const struct pt_rule_info *i = pt_model_operr_rule((enum pt_operr)e);

		assert_non_null(i);
		if (!operr_seen[e])
			fail_msg("operational error %s has no negative test", i->name);
	}
}

/* One "pt caps: NAME VALUE SUB:REG[HI:LO] ..." line into @regs; false for others. */
static bool caps_line(const char *line, u32 regs[2][4], char *name)
{
	static const char names[4][4] = { "EAX", "EBX", "ECX", "EDX" };
	unsigned int v, sub, hi, lo;
	char reg[4];

	if (sscanf(line, "pt caps: %63s %x %u:%3[A-Z][%u:%u]", name, &v, &sub, reg, &hi, &lo) == 6) {
		/* a field of several bits */
	} else if (sscanf(line, "pt caps: %63s %x %u:%3[A-Z][%u]", name, &v, &sub, reg, &lo) == 5) {
		hi = lo;
	} else {
		return false;
	}
	assert_in_range(sub, 0, 1);
	assert_true(hi >= lo && hi < 32);
	assert_true(hi - lo == 31 || v < (1u << (hi - lo + 1)));
	for (int r = 0; r < 4; r++)
		if (!strcmp(reg, names[r]))
			regs[sub][r] |= v << lo;
	return true;
}

/*
 * pt.caps: every profile's leaf 0x14 comes back whole from the decoded fields
 * alone (each bit the SDM defines is a line, at its place), each of perf's
 * caps names is one of them, and set bits the SDM reserves are named.
 */
static void test_caps_print(void **state)
{
	static char out[8192];
	char name[64], *line;

	for (unsigned int i = 0; i < pt_nr_profiles; i++) {
		const struct pt_profile *pp = &pt_profiles[i];
		u32 regs[2][4] = { { 0 } };
		unsigned int fields = 0;

		pt_model_uninstall();
		assert_int_equal(pt_model_init(pp->name, true), 1);
		printk_capture_start(out, sizeof(out));
		pt_caps_print();
		printk_capture_stop();
		for (line = strstr(out, "pt caps: "); line; line = strstr(line + 1, "pt caps: "))
			fields += caps_line(line, regs, name);
		assert_int_equal(fields, 19);	/* 18 of perf's, and EBX[6] */
		for (int sub = 0; sub < 2; sub++)
			for (int r = 0; r < 4; r++)
				if (regs[sub][r] != pp->leaf14[sub][r])
					fail_msg("%s: leaf 0x14.%d reg %d decoded as %#x, the profile has %#x",
						 pp->name, sub, r, regs[sub][r], pp->leaf14[sub][r]);
		for (int c = 0; c < PT_CAP_NR; c++) {
			char want[64];

			snprintf(want, sizeof(want), "pt caps: %s ", pt_cap_name(c));
			assert_non_null(strstr(out, want));
		}
		assert_null(strstr(out, "reserves"));
	}
	/* a CPU with PT whose leaf sets reserved bits: named, not decoded away */
	pt_model_uninstall();
	hosted_cpuid_reset();
	hosted_cpuid_set(0, 0, &(struct cpuid_regs){ 0x20, 0, 0, 0 });
	hosted_cpuid_set(7, 0, &(struct cpuid_regs){ 0, CPUID_7_0_EBX_INTEL_PT, 0, 0 });
	hosted_cpuid_set(0x14, 0, &(struct cpuid_regs){ 1, 0x201, 0x80000011, 5 });
	hosted_cpuid_set(0x14, 1, &(struct cpuid_regs){ 0x8, 0, 0, 0 });
	printk_capture_start(out, sizeof(out));
	pt_caps_print();
	printk_capture_stop();
	assert_non_null(strstr(out, "sub-leaf 0 EBX: bits 0x00000200 set that the SDM reserves"));
	assert_non_null(strstr(out, "sub-leaf 0 ECX: bits 0x00000010 set that the SDM reserves"));
	assert_non_null(strstr(out, "sub-leaf 0 EDX: bits 0x00000005 set that the SDM reserves"));
	assert_non_null(strstr(out, "sub-leaf 1 EAX: bits 0x00000008 set that the SDM reserves"));
	/* and a CPU without PT says so */
	hosted_cpuid_set(7, 0, &(struct cpuid_regs){ 0, 0, 0, 0 });
	printk_capture_start(out, sizeof(out));
	pt_caps_print();
	printk_capture_stop();
	assert_non_null(strstr(out, "this CPU has no Intel PT"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ctl_while_traceen, setup),
		cmocka_unit_test_setup(test_ctl_value_rules_skylake, setup),
		cmocka_unit_test_setup(test_ctl_feature_rules_broadwell, setup),
		cmocka_unit_test_setup(test_ctl_features_present_elsewhere, setup),
		cmocka_unit_test_setup(test_synthetic_capability_rules, setup),
		cmocka_unit_test_setup(test_ctl_memo_follows_the_profile, setup),
		cmocka_unit_test_setup(test_more_ranges_than_msrs, setup),
		cmocka_unit_test_setup(test_status_rules, setup),
		cmocka_unit_test_setup(test_output_rules, setup),
		cmocka_unit_test_setup(test_cr3_and_addr_rules, setup),
		cmocka_unit_test_setup(test_plain_access_faults, setup),
		cmocka_unit_test_setup(test_operr_table_misaligned, setup),
		cmocka_unit_test_setup(test_operr_entry_reserved, setup),
		cmocka_unit_test_setup(test_operr_end_at_entry0_during_walk, setup),
		cmocka_unit_test_setup(test_operr_end_int_stop, setup),
		cmocka_unit_test_setup(test_operr_region_and_offset, setup),
		cmocka_unit_test_setup(test_operr_single_entry, setup),
		cmocka_unit_test_setup(test_operr_single_range, setup),
		cmocka_unit_test_setup(test_cpuid_answers, setup),
		cmocka_unit_test_setup(test_cpuid_keeps_cpu_bits, setup),
		cmocka_unit_test_setup(test_pass_through, setup),
		cmocka_unit_test_setup(test_refused_ovf_ctrl_keeps_topa_pmi, setup),
		cmocka_unit_test_setup(test_install_decisions, setup),
		cmocka_unit_test_setup(test_command_line, setup),
		cmocka_unit_test_setup(test_profiles, setup),
		cmocka_unit_test_setup(test_caps_print, setup),
		cmocka_unit_test(test_every_rule_covered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
