// SPDX-License-Identifier: MIT
/*
 * The PT trace unit model in the kernel: CPUID leaf 7/0x14 and the RTIT MSRs
 * answered through cpuid_count/rdmsr/wrmsr, #GP via wrmsr_safe, trace bytes in
 * a ToPA region in real memory, and the ToPA PMI through the local APIC.
 */
#include <topaz/ktest.h>
#include <topaz/apic.h>
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>
#include <topaz/msr-index.h>
#include <topaz/pt_model.h>
#include <topaz/time.h>
#include <topaz/traps.h>
#include <topaz/tracing.h>

/* Install the model for the test unless boot did (pt.model=auto on a CPU
 * without PT); returns whether the test installed it. */
static bool model_begin(struct ktest_ctx *t)
{
	bool mine = false;

	if (!pt_model_active()) {
		/* as the command line asks (pt.model=, pt.profile=); forced
		 * when that leaves it out (pt.model=off, or a CPU with PT) */
		int r = pt_unit_boot();

		if (r != 1)
			r = pt_model_init(PT_PROFILE_DEFAULT, true);
		if (r != 1)
			ktest_fail(t, __FILE__, __LINE__, "pt_model_init: %d", r);
		mine = true;
	}
	pt_model_reset();
	return mine;
}

static void model_end(bool mine)
{
	pt_model_reset();
	if (mine)
		pt_model_uninstall();
}

static unsigned int nr_ranges(void)
{
	const struct pt_profile *p = pt_model_profile();

	return (p->leaf14[0][1] & PT_CAP_IP_FILTER) ? p->leaf14[1][0] & PT_CAP_NUM_RANGES_MASK : 0;
}

KTEST(ptmodel, cpuid_leaf7_and_0x14)
{
	bool mine = model_begin(t);
	const struct pt_profile *p = pt_model_profile();
	u32 a, b, c, d;

	KT_ASSERT(p);
	printk("ptmodel: the CPU %s Intel PT; model profile %s\n",
	       pt_cpu_has_pt() ? "has" : "lacks", p->name);
	cpuid_count(0, 0, &a, &b, &c, &d);
	KT_EXPECT(a >= 0x14);
	cpuid_count(7, 0, &a, &b, &c, &d);
	KT_EXPECT(b & CPUID_7_0_EBX_INTEL_PT);
	for (u32 sub = 0; sub < 2; sub++) {
		u32 want[4];

		for (int i = 0; i < 4; i++)
			want[i] = sub <= p->leaf14[0][0] ? p->leaf14[sub][i] : 0;
		cpuid_count(0x14, sub, &a, &b, &c, &d);
		KT_EXPECT_EQ(a, want[0]);
		KT_EXPECT_EQ(b, want[1]);
		KT_EXPECT_EQ(c, want[2]);
		KT_EXPECT_EQ(d, want[3]);
	}
	model_end(mine);
}

KTEST(ptmodel, rtit_msrs_read_back)
{
	bool mine = model_begin(t);
	u64 page = __get_free_page(GFP_KERNEL);
	u64 v = 0;

	KT_ASSERT(page);
	wrmsr(MSR_IA32_RTIT_OUTPUT_BASE, virt_to_phys((void *)page));
	KT_EXPECT_EQ(rdmsr(MSR_IA32_RTIT_OUTPUT_BASE), virt_to_phys((void *)page));
	wrmsr(MSR_IA32_RTIT_OUTPUT_MASK, 0);
	KT_EXPECT_EQ(rdmsr(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f);	/* LowerMask reads as ones */
	wrmsr(MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA | RTIT_CTL_TSC_EN | RTIT_CTL_BRANCH_EN);
	KT_EXPECT_EQ(rdmsr(MSR_IA32_RTIT_CTL), RTIT_CTL_TOPA | RTIT_CTL_TSC_EN | RTIT_CTL_BRANCH_EN);
	KT_EXPECT_EQ(rdmsr_safe(MSR_IA32_RTIT_STATUS, &v), 0);
	KT_EXPECT_EQ(v, 0);
	if (nr_ranges()) {
		wrmsr(MSR_IA32_RTIT_ADDR0_A, 0xffffffff80000000ULL);
		KT_EXPECT_EQ(rdmsr(MSR_IA32_RTIT_ADDR0_A), 0xffffffff80000000ULL);
	}
	wrmsr(MSR_IA32_RTIT_CTL, 0);
	free_page(page);
	model_end(mine);
}

KTEST(ptmodel, gp_through_wrmsr_safe)
{
	bool mine = model_begin(t);
	u64 v;

	/* a reserved CTL bit, a non-canonical filter address, a missing range */
	KT_EXPECT_EQ(wrmsr_safe(MSR_IA32_RTIT_CTL, BIT_ULL(18)), -EIO);
	KT_EXPECT_EQ(pt_model_last_gp(), PT_GP_CTL_RESERVED);
	KT_EXPECT_EQ(wrmsr_safe(MSR_IA32_RTIT_ADDR0_A, 0x0000800000000000ULL), -EIO);
	KT_EXPECT_EQ(pt_model_last_gp(), nr_ranges() ? PT_GP_ADDR_NONCANONICAL : PT_GP_ADDR_UNSUPPORTED);
	KT_EXPECT_EQ(rdmsr_safe(MSR_IA32_RTIT_ADDR3_B, &v), -EIO);
	KT_EXPECT_EQ(pt_model_last_gp(), PT_GP_ADDR_UNSUPPORTED);
	KT_EXPECT_EQ(wrmsr_safe(MSR_IA32_RTIT_OUTPUT_BASE, 0x1040), -EIO);
	KT_EXPECT_EQ(pt_model_last_gp(), PT_GP_OUTPUT_BASE_RESERVED);
	/* the register kept its value */
	KT_EXPECT_EQ(rdmsr(MSR_IA32_RTIT_CTL), 0);
	model_end(mine);
}

static volatile unsigned int pt_pmis;
static bool on_pt_pmi(struct pt_regs *r)
{
	pt_pmis++;
	return true;
}

/* Trace into a ToPA region of real memory; the INT region raises the PMI on
 * PT_PMI_VECTOR through LVTPC, which the delivery masks. */
KTEST(ptmodel, topa_output_and_pmi)
{
	bool mine = model_begin(t);
	u64 table = get_zeroed_page(GFP_KERNEL);
	u64 r0 = get_zeroed_page(GFP_KERNEL), r1 = get_zeroed_page(GFP_KERNEL);
	u64 *e = (u64 *)table, mask, gs;
	const u8 *out = (const u8 *)r0;
	struct pt_model_config cfg;
	unsigned int before;
	/* the first PT generation takes one output entry per table */
	bool multi = pt_model_profile()->leaf14[0][2] & PT_CAP_TOPA_MULTI;

	KT_ASSERT(table && r0 && r1);
	pt_model_get_config(&cfg);
	e[0] = TOPA_ENTRY(virt_to_phys((void *)r0), TOPA_SZ_4K, TOPA_INT);
	if (multi) {
		e[1] = TOPA_ENTRY(virt_to_phys((void *)r1), TOPA_SZ_4K, 0);
		e[2] = TOPA_ENTRY(virt_to_phys((void *)table), 0, TOPA_END);
	} else {
		e[1] = TOPA_ENTRY(virt_to_phys((void *)table), 0, TOPA_END);
	}
	irq_set_handler(PT_PMI_VECTOR, on_pt_pmi);
	apic_write_lvtpc(APIC_DM_FIXED | PT_PMI_VECTOR);
	before = pt_pmis;

	wrmsr(MSR_IA32_RTIT_OUTPUT_BASE, virt_to_phys((void *)table));
	wrmsr(MSR_IA32_RTIT_OUTPUT_MASK, 0x7f);
	wrmsr(MSR_IA32_RTIT_STATUS, 0);
	pt_model_ev_context(0xffffffff81000000ULL, 0, PTM_MODE_64);
	wrmsr(MSR_IA32_RTIT_CTL, RTIT_CTL_TRACEEN | RTIT_CTL_TOPA | RTIT_CTL_BRANCH_EN | RTIT_CTL_OS);
	KT_EXPECT(rdmsr(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_TRIGGEREN);
	pt_model_ev_at(0xffffffff81000000ULL);
	for (int i = 0; i < 2000 && pt_pmis == before; i++)
		pt_model_ev_jump_indirect(0xffffffff81000000ULL, 0xffffffff81000000ULL + (u64)i * 0x1234);
	for (int i = 0; i < 100 && pt_pmis == before; i++)
		udelay(10);
	KT_EXPECT_EQ(pt_pmis, before + 1);
	KT_EXPECT(apic_read_lvtpc() & APIC_LVT_MASKED);
	gs = rdmsr(MSR_CORE_PERF_GLOBAL_STATUS);
	KT_EXPECT(gs & GLOBAL_STATUS_TRACE_TOPAPMI);

	wrmsr(MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA | RTIT_CTL_BRANCH_EN | RTIT_CTL_OS);
	mask = rdmsr(MSR_IA32_RTIT_OUTPUT_MASK);
	if (multi) {
		/* into the second region, at least the skid past its start */
		KT_EXPECT_EQ((mask >> 7) & 0x1ffffff, 1);
		KT_EXPECT((mask >> 32) >= cfg.pmi_skid);
	} else {
		/* single entry: the PMI comes before the region is full */
		KT_EXPECT_EQ((mask >> 7) & 0x1ffffff, 0);
		KT_EXPECT((mask >> 32) >= 4096 - cfg.single_pmi_early + cfg.pmi_skid);
	}
	/* the stream starts with PSB, and tracing begins with TIP.PGE */
	for (int i = 0; i < 16; i += 2) {
		KT_EXPECT_EQ(out[i], 0x02);
		KT_EXPECT_EQ(out[i + 1], 0x82);
	}
	{
		bool pge = false;

		for (int i = 16; i < 64; i++)
			if (out[i] == 0x99 && out[i + 1] == 0x01 && (out[i + 2] & 0x1f) == 0x11)
				pge = true;
		KT_EXPECT(pge);
	}
	wrmsr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI);
	KT_EXPECT(!(rdmsr(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI));

	apic_write_lvtpc(APIC_LVT_MASKED | PT_PMI_VECTOR);
	irq_set_handler(PT_PMI_VECTOR, NULL);
	free_page(table);
	free_page(r0);
	free_page(r1);
	model_end(mine);
}
