// SPDX-License-Identifier: MIT
/*
 * The PT trace unit model: its registers behind the MSR interface, its CPUID
 * answers, installation and the pt.* command-line keys. Packet generation is
 * in pt_model_events.c, output in pt_model_topa.c, the #GP and operational
 * error tables in pt_model_rules.c, CPU profiles in pt_model_profiles.c.
 */
#define pr_fmt(fmt) "pt-model: " fmt
#include "internal.h"
#include <topaz/arch.h>
#include <topaz/apic.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

DEFINE_PER_CPU(struct pt_model, pt_model_cpu) = PER_CPU_INIT({
	.cfg = {
		.pmi_skid = PT_MODEL_DEFAULT_SKID,
		.single_pmi_early = PT_MODEL_DEFAULT_EARLY,
		.long_tnt = true,
		.cycles_per_event = 1,
	},
	.last_gp = -1,
	.last_operr = -1,
	.mode = PTM_MODE_64,
	.mode_sent = -1,
});

static u32 real_max_leaf;
/*
 * The CPU that installed the model (pt_model_init_profile()): its profile,
 * configuration and hook are what every other CPU copies when it brings up
 * its own unit (pt_model_init_this_cpu()).
 */
static unsigned int install_cpu;

/* ------------------------------------------------------------ entry/exit */

void ptm_deliver_pmis(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	for (int i = 0; m->pmi_pending && i < 4; i++) {
		m->pmi_pending = false;
		if (apic_pmi_deliver())
			m->st.pmis_delivered++;
	}
}

/* ------------------------------------------------------------ MSRs */

static bool is_pt_msr(u32 msr)
{
	return msr == MSR_IA32_RTIT_OUTPUT_BASE || msr == MSR_IA32_RTIT_OUTPUT_MASK ||
	       (msr >= MSR_IA32_RTIT_CTL && msr <= MSR_IA32_RTIT_CR3_MATCH) ||
	       (msr >= MSR_IA32_RTIT_ADDR0_A && msr <= MSR_IA32_RTIT_ADDR3_B);
}

static bool model_claims(u32 msr)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->installed && (is_pt_msr(msr) || msr == MSR_CORE_PERF_GLOBAL_STATUS ||
				msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL);
}

static u64 status_read(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 v = m->status;

	if (ptm_trace_en()) {
		bool ctx = ptm_context_en(m->cpl);

		if (m->trigger_en)
			v |= RTIT_STATUS_TRIGGEREN;
		if (ctx)
			v |= RTIT_STATUS_CONTEXTEN;
		if (ctx && m->filter_en)
			v |= RTIT_STATUS_FILTEREN;
	}
	if (ptm_ebx(PT_CAP_PSB_CYC))
		v |= min(m->byte_cnt, 0x1ffffULL) << RTIT_STATUS_BYTECNT_OFFSET;
	return v;
}

static void status_write(u64 val)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	u64 cnt = (val & RTIT_STATUS_BYTECNT) >> RTIT_STATUS_BYTECNT_OFFSET;

	/* FilterEn, ContextEn, TriggerEn: writes ignored */
	m->status = val & (RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED |
			   RTIT_STATUS_PENDPSB | RTIT_STATUS_PENDTOPAPMI);
	/* The field is 17 bits; writing back what was read keeps the count. */
	if (cnt != min(m->byte_cnt, 0x1ffffULL))
		m->byte_cnt = cnt;
}

static void ctl_write(u64 val)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	bool was = ptm_trace_en(), now = val & RTIT_CTL_TRACEEN;

	if (val == m->ctl)
		return;
	if (was && !now) {
		/* packets of the disable follow the old configuration */
		ptm_trace_disable();
		m->ctl = val;
	} else if (!was && now) {
		m->ctl = val;
		ptm_trace_enable();
	} else {
		m->ctl = val;
	}
}

/* The #GP rules first: a refused access records its rule (for messages) and faults. */
static bool refused(u32 msr, bool write, u64 val)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	int rule = ptm_check_access(msr, write, val);

	if (rule < 0)
		return false;
	m->last_gp = rule;
	return true;
}

static int model_read(u32 msr, u64 *val)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	int ret = 0;

	ptm_enter();
	if (refused(msr, false, 0)) {
		ret = -EIO;
		goto out;
	}
	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		*val = m->ctl;
		break;
	case MSR_IA32_RTIT_STATUS:
		*val = status_read();
		break;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		*val = m->output_base;
		break;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		*val = m->output_mask;
		break;
	case MSR_IA32_RTIT_CR3_MATCH:
		*val = m->cr3_match;
		break;
	case MSR_CORE_PERF_GLOBAL_STATUS: {
		u64 v = 0;

		/* the CPU's other status bits, with the model's TraceToPAPMI */
		if (arch_rdmsr_safe(msr, &v))
			v = 0;
		v &= ~GLOBAL_STATUS_TRACE_TOPAPMI;
		if (m->topa_pmi)
			v |= GLOBAL_STATUS_TRACE_TOPAPMI;
		*val = v;
		break;
	}
	case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
		if (arch_rdmsr_safe(msr, val))
			*val = 0;
		break;
	default: {
		unsigned int n = (msr - MSR_IA32_RTIT_ADDR0_A) / 2;

		*val = (msr & 1) ? m->addr_b[n] : m->addr_a[n];
		break;
	}
	}
out:
	ptm_exit();
	return ret;
}

static int model_write(u32 msr, u64 val)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	int ret = 0;

	ptm_enter();
	if (refused(msr, true, val)) {
		ret = -EIO;
		goto out;
	}
	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		ctl_write(val);
		break;
	case MSR_IA32_RTIT_STATUS:
		status_write(val);
		break;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		m->output_base = val;
		break;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		m->output_mask = val | RTIT_OUTPUT_LOWER_MASK;
		break;
	case MSR_IA32_RTIT_CR3_MATCH:
		m->cr3_match = val;
		break;
	case MSR_CORE_PERF_GLOBAL_STATUS:
		/* read-only: the CPU decides (a #GP on real parts) */
		ret = arch_wrmsr_safe(msr, val);
		break;
	case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
		/* The CPU's bits first: a WRMSR that #GPs has no effect, so a
		 * write the CPU refuses must not clear TraceToPAPMI either
		 * (found by tests/fuzz/fuzz_msr). */
		if (val & ~MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI)
			ret = arch_wrmsr_safe(msr, val & ~MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI);
		if (!ret && (val & MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI))
			m->topa_pmi = false;
		break;
	default: {
		unsigned int n = (msr - MSR_IA32_RTIT_ADDR0_A) / 2;

		if (msr & 1)
			m->addr_b[n] = val;
		else
			m->addr_a[n] = val;
		break;
	}
	}
out:
	ptm_exit();
	return ret;
}

/* ------------------------------------------------------------ CPUID */

static bool model_cpuid(u32 leaf, u32 subleaf, struct cpuid_regs *r)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (!m->installed)
		return false;
	if (leaf == 0) {
		arch_cpuid(0, 0, r);
		if (r->eax < CPUID_LEAF_PT)
			r->eax = CPUID_LEAF_PT;
		if (m->prof->ctc_den && r->eax < 0x15)
			r->eax = 0x15;
		return true;
	}
	if (leaf == 1) {
		/*
		 * The processor signature is the profile's: drivers and decoders
		 * key errata on family/model (Linux's BDM106 check, libipt's
		 * pt_config.cpu), and the model mimics the profile's errata.
		 * The other leaf-1 registers are the CPU's.
		 */
		const struct pt_profile *p = m->prof;

		arch_cpuid(1, 0, r);
		r->eax = (u32)p->stepping | ((u32)(p->model & 0xf) << 4) | ((u32)(p->family & 0xf) << 8) |
			 ((u32)(p->model >> 4) << 16);
		return true;
	}
	if (leaf == 0x15 && m->prof->ctc_den) {
		/* TSC/crystal ratio, for the decoder's timing (MTC/CTC) */
		*r = (struct cpuid_regs){ m->prof->ctc_den, m->prof->ctc_num, 0, 0 };
		return true;
	}
	if (leaf == 7 && subleaf == 0) {
		if (real_max_leaf >= 7)
			arch_cpuid(7, 0, r);
		else
			*r = (struct cpuid_regs){ 0, 0, 0, 0 };
		r->ebx |= CPUID_7_0_EBX_INTEL_PT;
		return true;
	}
	if (leaf == CPUID_LEAF_PT) {
		if (subleaf <= ptm_cap(0, 0) && subleaf < 2)
			*r = (struct cpuid_regs){ ptm_cap((int)subleaf, 0), ptm_cap((int)subleaf, 1),
						  ptm_cap((int)subleaf, 2), ptm_cap((int)subleaf, 3) };
		else
			*r = (struct cpuid_regs){ 0, 0, 0, 0 };
		return true;
	}
	/* leaves the raised maximum newly exposes are "not supported": 0 */
	if (leaf > real_max_leaf && leaf <= 0x15) {
		*r = (struct cpuid_regs){ 0, 0, 0, 0 };
		return true;
	}
	return false;
}

static const struct msr_interceptor pt_model_ic = {
	.name = "pt-model",
	.claims_msr = model_claims,
	.read = model_read,
	.write = model_write,
	.cpuid = model_cpuid,
};

/* ------------------------------------------------------------ control */

bool pt_cpu_has_pt(void)
{
	struct cpuid_regs r;

	arch_cpuid(0, 0, &r);
	if (r.eax < CPUID_LEAF_PT)
		return false;
	arch_cpuid(7, 0, &r);
	return r.ebx & CPUID_7_0_EBX_INTEL_PT;
}

void pt_model_reset(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->depth = 0;		/* a reset is always an outermost call */
	ptm_enter();
	m->ctl = m->status = m->output_base = m->output_mask = m->cr3_match = 0;
	for (int i = 0; i < 4; i++)
		m->addr_a[i] = m->addr_b[i] = 0;
	m->byte_cnt = 0;
	m->topa_pmi = false;
	m->out_ready = false;
	m->region_base = m->region_size = m->entry = 0;
	m->skid_left = 0;
	m->pmi_armed = m->pmi_pending = m->early_done = false;
	ptm_trace_reset();
	m->last_gp = m->last_operr = -1;
	memset(m->ctl_ok, 0, sizeof(m->ctl_ok));
	m->st = (struct pt_model_stats){ 0 };
	ptm_exit();
}

int pt_model_init(const char *profile_name, bool force)
{
	const struct pt_profile *prof = pt_profile_find(profile_name);

	if (!prof) {
		char names[128];

		pt_profile_list(names, sizeof(names));
		pr_err("unknown CPU profile '%s'; valid profiles: %s\n", profile_name, names);
		return -EINVAL;
	}
	return pt_model_init_profile(prof, force);
}

int pt_model_init_profile(const struct pt_profile *prof, bool force)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	const struct msr_interceptor *cur = arch_get_interceptor();
	struct cpuid_regs r;

	if (!force && pt_cpu_has_pt()) {
		pr_info("the CPU has Intel PT: model not installed (pt.model=on forces it)\n");
		return 0;
	}
	if (cur && cur != &pt_model_ic) {
		pr_err("MSR interceptor '%s' already installed: model not installed\n", cur->name);
		return -EBUSY;
	}
	arch_cpuid(0, 0, &r);
	real_max_leaf = r.eax;
	install_cpu = smp_processor_id();
	ptm_rules_init();
	m->prof = prof;
	pt_model_reset();
	m->installed = true;
	arch_set_interceptor(&pt_model_ic);
	pr_info("installed: profile %s, %s\n", prof->name, prof->cpu);
	return 1;
}

void pt_model_uninstall(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (arch_get_interceptor() == &pt_model_ic)
		arch_set_interceptor(NULL);
	m->installed = false;
}

bool pt_model_active(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->installed;
}

const struct pt_profile *pt_model_profile(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->installed ? m->prof : NULL;
}

void pt_model_get_config(struct pt_model_config *cfg)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	*cfg = m->cfg;
}

void pt_model_set_config(const struct pt_model_config *cfg)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	/* TNT bits pending beyond what the new packet size holds go out first,
	 * in the packet they were gathered for (else the next packet's count
	 * would run past its payload) */
	if (!cfg->long_tnt && m->tnt_n >= PTPK_TNT8_MAX)
		ptm_tnt_full();
	m->cfg = *cfg;
}

int pt_model_last_gp(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->last_gp;
}

int pt_model_last_operr(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->last_operr;
}

void pt_model_clear_faults(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->last_gp = m->last_operr = -1;
}

void pt_model_set_packet_hook(pt_model_packet_hook_t fn, void *ctx)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->hook = fn;
	m->hook_ctx = ctx;
}

void pt_model_get_stats(struct pt_model_stats *st)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	*st = m->st;
}

void pt_model_get_stats_cpu(unsigned int cpu, struct pt_model_stats *st)
{
	*st = per_cpu_ptr(pt_model_cpu, cpu)->st;
}

void pt_model_init_this_cpu(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	const struct pt_model *boot = per_cpu_ptr(pt_model_cpu, install_cpu);

	if (!boot->installed || smp_processor_id() == install_cpu)
		return;
	m->prof = boot->prof;
	m->cfg = boot->cfg;
	m->hook = boot->hook;
	m->hook_ctx = boot->hook_ctx;
	pt_model_reset();
	pt_model_set_tsc(rdtsc());	/* as the boot CPU's: TSC packets say the time */
	m->installed = true;
}

bool pt_model_busy(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->depth != 0;
}

u64 pt_model_bytes_lost(void)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	return m->st.bytes_lost;
}
