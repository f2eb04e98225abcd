// SPDX-License-Identifier: MIT
/*
 * The rules of the PT trace unit model, as tables: the WRMSR/RDMSR accesses
 * that raise #GP, and the operational errors that set STATUS.Error. Section
 * numbers are those of the SDM Vol. 3C chapter "Intel Processor Trace" in the
 * 2016 edition (chapter 36; chapter 33 in current editions, same subsections).
 */
#include "internal.h"
#include <topaz/errno.h>
#include <topaz/kernel.h>

#define R	1	/* applies to RDMSR */
#define W	2	/* applies to WRMSR */

/* Bits of IA32_RTIT_CTL reserved on every processor (Table 36-6). Bits 4-6,
 * 31 and 55-56 are feature bits with their own rows below. */
#define CTL_RSVD	(BIT_ULL(18) | BIT_ULL(23) | GENMASK_ULL(30, 28) | \
			 GENMASK_ULL(54, 48) | GENMASK_ULL(63, 57))

static unsigned int field(u64 v, unsigned int shift) { return (unsigned int)(v >> shift) & 0xf; }
static unsigned int addr_cfg(u64 ctl, unsigned int n) { return field(ctl, RTIT_CTL_ADDRn_OFFSET(n)); }
static unsigned int addr_index(u32 msr) { return (msr - MSR_IA32_RTIT_ADDR0_A) / 2; }

static bool canonical(u64 v)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);
	unsigned int bits = m->prof->linear_bits;

	return (u64)((s64)(v << (64 - bits)) >> (64 - bits)) == v;
}

/* --- IA32_RTIT_CTL */
static bool ctl_while_traceen(u32 m, u64 v)
{
	const struct pt_model *pm = this_cpu_ptr(pt_model_cpu);

	/* Writing the same value is allowed, and so is any write that clears
	 * TraceEn together with other changes. */
	return ptm_trace_en() && v != pm->ctl && (v & RTIT_CTL_TRACEEN);
}
static bool ctl_reserved(u32 m, u64 v) { return v & CTL_RSVD; }
static bool ctl_cyc_psb(u32 m, u64 v)
{
	return !ptm_ebx(PT_CAP_PSB_CYC) &&
	       (v & (RTIT_CTL_CYCLEACC | RTIT_CTL_CYC_THRESH | RTIT_CTL_PSB_FREQ));
}
static bool ctl_mtc(u32 m, u64 v)
{
	return !ptm_ebx(PT_CAP_MTC) && (v & (RTIT_CTL_MTC_EN | RTIT_CTL_MTC_RANGE));
}
static bool ctl_ptw(u32 m, u64 v)
{
	return !ptm_ebx(PT_CAP_PTWRITE) && (v & (RTIT_CTL_PTW_EN | RTIT_CTL_FUP_ON_PTW));
}
static bool ctl_pwr(u32 m, u64 v) { return !ptm_ebx(PT_CAP_POWER_EVENT) && (v & RTIT_CTL_PWR_EVT_EN); }
static bool ctl_cr3(u32 m, u64 v) { return !ptm_ebx(PT_CAP_CR3_FILTER) && (v & RTIT_CTL_CR3EN); }
static bool ctl_topa(u32 m, u64 v) { return !ptm_ecx(PT_CAP_TOPA) && (v & RTIT_CTL_TOPA); }
static bool ctl_fabric(u32 m, u64 v) { return !ptm_ecx(PT_CAP_FABRIC) && (v & RTIT_CTL_FABRIC_EN); }
static bool ctl_event(u32 m, u64 v) { return !ptm_ebx(PT_CAP_EVENT_TRACE) && (v & RTIT_CTL_EVENT_EN); }
static bool ctl_distnt(u32 m, u64 v) { return !ptm_ebx(PT_CAP_TNT_DISABLE) && (v & RTIT_CTL_NOTNT); }
static bool ctl_inject(u32 m, u64 v)
{
	return !ptm_ebx(PT_CAP_PSB_PMI_PRESERVE) && (v & RTIT_CTL_INJECT_PSB_PMI);
}
static bool ctl_addr_unsupported(u32 m, u64 v)
{
	for (unsigned int n = ptm_nr_ranges(); n < 4; n++)
		if (addr_cfg(v, n))
			return true;
	return false;
}
static bool ctl_addr_reserved(u32 m, u64 v)
{
	for (unsigned int n = 0; n < 4; n++)
		if (addr_cfg(v, n) > RTIT_ADDR_CFG_STOP)
			return true;
	return false;
}
static bool ctl_mtc_freq(u32 m, u64 v)
{
	return ptm_ebx(PT_CAP_MTC) &&
	       !((ptm_cap(1, 0) >> PT_CAP_MTC_PERIODS_SHIFT) & BIT(field(v, RTIT_CTL_MTC_RANGE_OFFSET)));
}
static bool ctl_cyc_thresh(u32 m, u64 v)
{
	return ptm_ebx(PT_CAP_PSB_CYC) &&
	       !(ptm_cap(1, 1) & PT_CAP_CYC_THRESHOLDS_MASK & BIT(field(v, RTIT_CTL_CYC_THRESH_OFFSET)));
}
static bool ctl_psb_freq(u32 m, u64 v)
{
	return ptm_ebx(PT_CAP_PSB_CYC) &&
	       !((ptm_cap(1, 1) >> PT_CAP_PSB_PERIODS_SHIFT) & BIT(field(v, RTIT_CTL_PSB_FREQ_OFFSET)));
}
static bool ctl_no_output(u32 m, u64 v)
{
	return (v & RTIT_CTL_TRACEEN) && !(v & (RTIT_CTL_TOPA | RTIT_CTL_FABRIC_EN)) &&
	       !ptm_ecx(PT_CAP_SINGLE_RANGE);
}
static bool ctl_bdm106(u32 m, u64 v)
{
	const struct pt_model *pm = this_cpu_ptr(pt_model_cpu);

	return (pm->prof->errata & PT_ERRATUM_BDM106) && (v & RTIT_CTL_TRACEEN) &&
	       !(v & RTIT_CTL_BRANCH_EN);
}

/* --- IA32_RTIT_STATUS */
static bool status_while_traceen(u32 m, u64 v) { return ptm_trace_en(); }
static bool status_reserved(u32 m, u64 v)
{
	u64 ok = RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN | RTIT_STATUS_TRIGGEREN |
		 RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | RTIT_STATUS_BYTECNT;

	if (ptm_ebx(PT_CAP_PSB_PMI_PRESERVE))
		ok |= RTIT_STATUS_PENDPSB | RTIT_STATUS_PENDTOPAPMI;
	return v & ~ok;
}
static bool status_bytecnt(u32 m, u64 v) { return !ptm_ebx(PT_CAP_PSB_CYC) && (v & RTIT_STATUS_BYTECNT); }

/* --- IA32_RTIT_OUTPUT_BASE, IA32_RTIT_OUTPUT_MASK_PTRS */
static bool output_unsupported(u32 m, u64 v) { return !ptm_ecx(PT_CAP_TOPA) && !ptm_ecx(PT_CAP_SINGLE_RANGE); }
static bool output_while_traceen(u32 m, u64 v) { return ptm_trace_en(); }
static bool output_base_reserved(u32 m, u64 v)
{
	const struct pt_model *pm = this_cpu_ptr(pt_model_cpu);

	return (v & 0x7f) || (v >> pm->prof->maxphyaddr);
}

/* --- IA32_RTIT_CR3_MATCH */
static bool cr3_unsupported(u32 m, u64 v) { return !ptm_ebx(PT_CAP_CR3_FILTER); }
static bool cr3_while_traceen(u32 m, u64 v) { return ptm_trace_en(); }
static bool cr3_reserved(u32 m, u64 v) { return v & 0x1f; }

/* --- IA32_RTIT_ADDRn_A/B */
static bool addr_unsupported(u32 m, u64 v) { return addr_index(m) >= ptm_nr_ranges(); }
static bool addr_while_traceen(u32 m, u64 v) { return ptm_trace_en(); }
static bool addr_noncanonical(u32 m, u64 v) { return !canonical(v); }

struct gp_row {
	struct pt_rule_info info;
	u32 lo, hi;		/* MSRs the row applies to */
	unsigned int acc;	/* R, W */
	bool (*hit)(u32 msr, u64 val);
};

/*
 * Checked in this order; the first row that hits is the #GP reported. Rows
 * about an MSR that does not exist come first, then TraceEn=1, then values.
 */
static const struct gp_row gp_rules[PT_GP_NR] = {
	[PT_GP_OUTPUT_UNSUPPORTED] = { { "OUTPUT_UNSUPPORTED",
		"36.2.7.7/36.2.7.8; Table 36-11 ECX[0], ECX[2]",
		"OUTPUT_BASE or OUTPUT_MASK_PTRS accessed when neither ToPA nor single-range output exists" },
		MSR_IA32_RTIT_OUTPUT_BASE, MSR_IA32_RTIT_OUTPUT_MASK, R | W, output_unsupported },
	[PT_GP_CR3_UNSUPPORTED] = { { "CR3_UNSUPPORTED",
		"36.2.7.6; Table 36-11 EBX[0]",
		"IA32_RTIT_CR3_MATCH accessed without CR3 filtering support" },
		MSR_IA32_RTIT_CR3_MATCH, MSR_IA32_RTIT_CR3_MATCH, R | W, cr3_unsupported },
	[PT_GP_ADDR_UNSUPPORTED] = { { "ADDR_UNSUPPORTED",
		"36.2.7.5; Table 36-12 EAX[2:0] (RANGECNT)",
		"IA32_RTIT_ADDRn_A/B accessed for n >= the number of address ranges" },
		MSR_IA32_RTIT_ADDR0_A, MSR_IA32_RTIT_ADDR3_B, R | W, addr_unsupported },
	[PT_GP_CTL_WHILE_TRACEEN] = { { "CTL_WHILE_TRACEEN",
		"36.2.7.2 (IA32_RTIT_CTL)",
		"IA32_RTIT_CTL changed while TraceEn=1 by a write that keeps TraceEn set" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_while_traceen },
	[PT_GP_STATUS_WHILE_TRACEEN] = { { "STATUS_WHILE_TRACEEN",
		"36.2.7.4, Table 36-7 (Error/Stopped: writable only when TraceEn=0)",
		"IA32_RTIT_STATUS written while TraceEn=1" },
		MSR_IA32_RTIT_STATUS, MSR_IA32_RTIT_STATUS, W, status_while_traceen },
	[PT_GP_OUTPUT_WHILE_TRACEEN] = { { "OUTPUT_WHILE_TRACEEN",
		"36.2.7.7, 36.2.7.8",
		"OUTPUT_BASE or OUTPUT_MASK_PTRS written while TraceEn=1" },
		MSR_IA32_RTIT_OUTPUT_BASE, MSR_IA32_RTIT_OUTPUT_MASK, W, output_while_traceen },
	[PT_GP_CR3_WHILE_TRACEEN] = { { "CR3_WHILE_TRACEEN",
		"36.2.7.6",
		"IA32_RTIT_CR3_MATCH written while TraceEn=1" },
		MSR_IA32_RTIT_CR3_MATCH, MSR_IA32_RTIT_CR3_MATCH, W, cr3_while_traceen },
	[PT_GP_ADDR_WHILE_TRACEEN] = { { "ADDR_WHILE_TRACEEN",
		"36.2.7.5 (as KVM's vmx_set_msr enforces it)",
		"IA32_RTIT_ADDRn_A/B written while TraceEn=1" },
		MSR_IA32_RTIT_ADDR0_A, MSR_IA32_RTIT_ADDR3_B, W, addr_while_traceen },
	[PT_GP_CTL_RESERVED] = { { "CTL_RESERVED",
		"36.2.7.1, Table 36-6 (bits 18, 23, 30:28, 54:48, 63:57)",
		"IA32_RTIT_CTL write sets a reserved bit" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_reserved },
	[PT_GP_CTL_CYC_PSB_UNSUPPORTED] = { { "CTL_CYC_PSB_UNSUPPORTED",
		"Table 36-6 CYCEn/CycThresh/PSBFreq; Table 36-11 EBX[1]",
		"CYCEn, CycThresh or PSBFreq set without configurable PSB and cycle-accurate mode" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_cyc_psb },
	[PT_GP_CTL_MTC_UNSUPPORTED] = { { "CTL_MTC_UNSUPPORTED",
		"Table 36-6 MTCEn/MTCFreq; Table 36-11 EBX[3]",
		"MTCEn or MTCFreq set without MTC support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_mtc },
	[PT_GP_CTL_PTW_UNSUPPORTED] = { { "CTL_PTW_UNSUPPORTED",
		"Table 36-6 PTWEn/FUPonPTW; Table 36-11 EBX[4]",
		"PTWEn or FUPonPTW set without PTWRITE support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_ptw },
	[PT_GP_CTL_PWR_UNSUPPORTED] = { { "CTL_PWR_UNSUPPORTED",
		"Table 36-6 PwrEvtEn; Table 36-11 EBX[5]",
		"PwrEvtEn set without power event trace support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_pwr },
	[PT_GP_CTL_CR3_UNSUPPORTED] = { { "CTL_CR3_UNSUPPORTED",
		"Table 36-6 CR3Filter; Table 36-11 EBX[0]",
		"CR3Filter set without CR3 filtering support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_cr3 },
	[PT_GP_CTL_TOPA_UNSUPPORTED] = { { "CTL_TOPA_UNSUPPORTED",
		"Table 36-6 ToPA; Table 36-11 ECX[0]",
		"ToPA set without ToPA output support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_topa },
	[PT_GP_CTL_FABRIC_UNSUPPORTED] = { { "CTL_FABRIC_UNSUPPORTED",
		"Table 36-6 FabricEn; Table 36-11 ECX[3]",
		"FabricEn set without trace transport output" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_fabric },
	[PT_GP_CTL_EVENT_UNSUPPORTED] = { { "CTL_EVENT_UNSUPPORTED",
		"IA32_RTIT_CTL.EventEn (bit 31); CPUID.14H.0:EBX[7] (newer SDMs)",
		"EventEn set without event trace support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_event },
	[PT_GP_CTL_DISTNT_UNSUPPORTED] = { { "CTL_DISTNT_UNSUPPORTED",
		"IA32_RTIT_CTL.DisTNT (bit 55); CPUID.14H.0:EBX[8] (newer SDMs)",
		"DisTNT set without TNT-disable support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_distnt },
	[PT_GP_CTL_INJECT_UNSUPPORTED] = { { "CTL_INJECT_UNSUPPORTED",
		"IA32_RTIT_CTL.InjectPsbPmiOnEnable (bit 56); CPUID.14H.0:EBX[6] (newer SDMs)",
		"InjectPsbPmiOnEnable set without PSB/PMI preservation support" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_inject },
	[PT_GP_CTL_ADDR_CFG_UNSUPPORTED] = { { "CTL_ADDR_CFG_UNSUPPORTED",
		"Table 36-6 ADDRn_CFG; Table 36-12 EAX[2:0]; Table 36-11 EBX[2]",
		"ADDRn_CFG non-zero for a range the processor does not have" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_addr_unsupported },
	[PT_GP_CTL_ADDR_CFG_RESERVED] = { { "CTL_ADDR_CFG_RESERVED",
		"Table 36-6 ADDRn_CFG: 3..15 reserved (#GP)",
		"ADDRn_CFG set to a reserved encoding" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_addr_reserved },
	[PT_GP_CTL_MTC_FREQ] = { { "CTL_MTC_FREQ",
		"Table 36-6 MTCFreq; Table 36-12 EAX[31:16]",
		"MTCFreq encoding not in the supported bitmap" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_mtc_freq },
	[PT_GP_CTL_CYC_THRESH] = { { "CTL_CYC_THRESH",
		"Table 36-6 CycThresh; Table 36-12 EBX[15:0]",
		"CycThresh encoding not in the supported bitmap" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_cyc_thresh },
	[PT_GP_CTL_PSB_FREQ] = { { "CTL_PSB_FREQ",
		"Table 36-6 PSBFreq; Table 36-12 EBX[31:16]",
		"PSBFreq encoding not in the supported bitmap" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_psb_freq },
	[PT_GP_CTL_NO_OUTPUT] = { { "CTL_NO_OUTPUT",
		"Table 36-6 ToPA note; Table 36-11 ECX[2]",
		"TraceEn set with ToPA=0 and FabricEn=0 when single-range output is unsupported" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_no_output },
	[PT_GP_CTL_BDM106] = { { "CTL_BDM106",
		"Erratum BDM106 (Broadwell); Linux pt.c branch_en_always_on",
		"TraceEn set with BranchEn=0 on a part with erratum BDM106" },
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CTL, W, ctl_bdm106 },
	[PT_GP_STATUS_RESERVED] = { { "STATUS_RESERVED",
		"36.2.7.4, Table 36-7 (bits 3, 31:8, 63:49; 7:6 without EBX[6])",
		"IA32_RTIT_STATUS write sets a reserved bit" },
		MSR_IA32_RTIT_STATUS, MSR_IA32_RTIT_STATUS, W, status_reserved },
	[PT_GP_STATUS_BYTECNT_UNSUPPORTED] = { { "STATUS_BYTECNT_UNSUPPORTED",
		"Table 36-11 EBX[1] (0: a non-zero PacketByteCnt write #GPs)",
		"non-zero PacketByteCnt written without configurable PSB support" },
		MSR_IA32_RTIT_STATUS, MSR_IA32_RTIT_STATUS, W, status_bytecnt },
	[PT_GP_OUTPUT_BASE_RESERVED] = { { "OUTPUT_BASE_RESERVED",
		"36.2.7.7, Table 36-8 (bits 6:0, bits >= MAXPHYADDR)",
		"OUTPUT_BASE write sets bits 6:0 or bits at or above MAXPHYADDR" },
		MSR_IA32_RTIT_OUTPUT_BASE, MSR_IA32_RTIT_OUTPUT_BASE, W, output_base_reserved },
	[PT_GP_CR3_RESERVED] = { { "CR3_RESERVED",
		"36.2.7.6 (bits 4:0 reserved)",
		"IA32_RTIT_CR3_MATCH write sets bits 4:0" },
		MSR_IA32_RTIT_CR3_MATCH, MSR_IA32_RTIT_CR3_MATCH, W, cr3_reserved },
	[PT_GP_ADDR_NONCANONICAL] = { { "ADDR_NONCANONICAL",
		"36.2.7.5 (\"properly sign-extended, otherwise a #GP\")",
		"IA32_RTIT_ADDRn_A/B written with a non-canonical address" },
		MSR_IA32_RTIT_ADDR0_A, MSR_IA32_RTIT_ADDR3_B, W, addr_noncanonical },
};

/* The order rows are tried in (enum order would group by register). */
static const u8 gp_order[PT_GP_NR] = {
	PT_GP_OUTPUT_UNSUPPORTED, PT_GP_CR3_UNSUPPORTED, PT_GP_ADDR_UNSUPPORTED,
	PT_GP_CTL_WHILE_TRACEEN, PT_GP_STATUS_WHILE_TRACEEN, PT_GP_OUTPUT_WHILE_TRACEEN,
	PT_GP_CR3_WHILE_TRACEEN, PT_GP_ADDR_WHILE_TRACEEN,
	PT_GP_CTL_RESERVED, PT_GP_CTL_CYC_PSB_UNSUPPORTED, PT_GP_CTL_MTC_UNSUPPORTED,
	PT_GP_CTL_PTW_UNSUPPORTED, PT_GP_CTL_PWR_UNSUPPORTED, PT_GP_CTL_CR3_UNSUPPORTED,
	PT_GP_CTL_TOPA_UNSUPPORTED, PT_GP_CTL_FABRIC_UNSUPPORTED, PT_GP_CTL_EVENT_UNSUPPORTED,
	PT_GP_CTL_DISTNT_UNSUPPORTED, PT_GP_CTL_INJECT_UNSUPPORTED,
	PT_GP_CTL_ADDR_CFG_UNSUPPORTED, PT_GP_CTL_ADDR_CFG_RESERVED,
	PT_GP_CTL_MTC_FREQ, PT_GP_CTL_CYC_THRESH, PT_GP_CTL_PSB_FREQ,
	PT_GP_CTL_NO_OUTPUT, PT_GP_CTL_BDM106,
	PT_GP_STATUS_RESERVED, PT_GP_STATUS_BYTECNT_UNSUPPORTED,
	PT_GP_OUTPUT_BASE_RESERVED, PT_GP_CR3_RESERVED, PT_GP_ADDR_NONCANONICAL,
};

/*
 * The rows that apply to each RTIT MSR (OUTPUT_BASE 0x560 to ADDR3_B 0x587)
 * and access, in gp_order: a window's start and stop make about ten
 * accesses, and trying all rows for each was a tenth of a fuzzer's
 * execution on a small target.
 */
#define REG_FIRST	MSR_IA32_RTIT_OUTPUT_BASE
#define NREG		(MSR_IA32_RTIT_ADDR3_B - REG_FIRST + 1)
static u8 rows_of[NREG][2][PT_GP_NR], rows_n[NREG][2];
static bool rows_ready;
static bool ctl_memo;	/* CTL_WHILE_TRACEEN is CTL's first row: the rest may be remembered */

void ptm_rules_init(void)
{
	if (rows_ready)
		return;
	for (u32 msr = REG_FIRST; msr < REG_FIRST + NREG; msr++) {
		for (unsigned int w = 0; w < 2; w++) {
			u8 n = 0;

			for (unsigned int i = 0; i < PT_GP_NR; i++) {
				const struct gp_row *r = &gp_rules[gp_order[i]];

				if (msr >= r->lo && msr <= r->hi && (r->acc & (w ? W : R)))
					rows_of[msr - REG_FIRST][w][n++] = gp_order[i];
			}
			rows_n[msr - REG_FIRST][w] = n;
		}
	}
	ctl_memo = rows_n[MSR_IA32_RTIT_CTL - REG_FIRST][1] &&
		   rows_of[MSR_IA32_RTIT_CTL - REG_FIRST][1][0] == PT_GP_CTL_WHILE_TRACEEN;
	barrier();	/* x86 keeps stores in order: the lists before the flag */
	WRITE_ONCE(rows_ready, true);
}

/* The profile's words the value-only CTL rows read. */
static void ctl_caps(const struct pt_profile *p, u32 caps[4])
{
	caps[0] = p->leaf14[0][1];
	caps[1] = p->leaf14[0][2];
	caps[2] = p->leaf14[1][0];
	caps[3] = p->leaf14[1][1];
}

/* @val passed CTL's rows after CTL_WHILE_TRACEEN before, with this profile. */
static bool ctl_known_ok(const struct pt_model *m, u64 val)
{
	u32 caps[4];

	ctl_caps(m->prof, caps);
	for (unsigned int j = 0; j < ARRAY_SIZE(m->ctl_ok); j++) {
		const struct ptm_ctl_ok *e = &m->ctl_ok[j];

		if (e->valid && e->val == val && e->errata == m->prof->errata &&
		    e->caps[0] == caps[0] && e->caps[1] == caps[1] && e->caps[2] == caps[2] &&
		    e->caps[3] == caps[3])
			return true;
	}
	return false;
}

static void ctl_remember_ok(struct pt_model *m, u64 val)
{
	struct ptm_ctl_ok *e = &m->ctl_ok[m->ctl_ok_next];

	m->ctl_ok_next = (u8)((m->ctl_ok_next + 1) % ARRAY_SIZE(m->ctl_ok));
	e->val = val;
	ctl_caps(m->prof, e->caps);
	e->errata = m->prof->errata;
	e->valid = true;
}

int ptm_check_access(u32 msr, bool write, u64 val)
{
	unsigned int acc = write ? W : R;
	const u8 *order = gp_order;
	unsigned int n = PT_GP_NR;
	bool ctl_write = false;
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	if (msr - REG_FIRST < NREG && READ_ONCE(rows_ready)) {
		barrier();
		order = rows_of[msr - REG_FIRST][write];
		n = rows_n[msr - REG_FIRST][write];
		ctl_write = write && msr == MSR_IA32_RTIT_CTL && ctl_memo;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct gp_row *r = &gp_rules[order[i]];

		if (msr < r->lo || msr > r->hi || !(r->acc & acc))
			continue;
		/* CTL's rows after CTL_WHILE_TRACEEN read only the value and the profile */
		if (ctl_write && order[i] != PT_GP_CTL_WHILE_TRACEEN) {
			if (ctl_known_ok(m, val))
				return -1;
			ctl_write = false;	/* asked once */
		}
		if (r->hit(msr, val))
			return order[i];
	}
	if (write && msr == MSR_IA32_RTIT_CTL && ctl_memo)
		ctl_remember_ok(m, val);
	return -1;
}

const struct pt_rule_info *pt_model_gp_rule(enum pt_gp_rule r)
{
	return (unsigned int)r < PT_GP_NR ? &gp_rules[r].info : NULL;
}

/* Operational errors (36.2.6.2 "ToPA Errors", 36.2.7.7, 36.3.9): detected when
 * tracing is enabled or when the output walk reaches the entry. */
static const struct pt_rule_info operr_rules[PT_OPERR_NR] = {
	[PT_OPERR_TABLE_MISALIGNED] = { "TABLE_MISALIGNED",
		"36.2.7.7, Table 36-8 (ToPA=1: bits 11:7 non-zero do not #GP but signal an "
		"operational error once TraceEn is set)",
		"ToPA table base in OUTPUT_BASE is not 4 KiB aligned" },
	[PT_OPERR_ENTRY_RESERVED] = { "ENTRY_RESERVED",
		"36.2.6.2 ToPA Errors (1): reserved bit violation (bits 1, 3, 5, 11:10, "
		">= MAXPHYADDR)",
		"ToPA entry sets a reserved bit or a base above MAXPHYADDR" },
	[PT_OPERR_REGION_MISALIGNED] = { "REGION_MISALIGNED",
		"36.2.6.2 ToPA Errors (1): base not aligned to the region size",
		"ToPA output region base is not aligned to its size" },
	[PT_OPERR_OFFSET_TOO_LARGE] = { "OFFSET_TOO_LARGE",
		"36.2.6.2 ToPA Errors (2): illegal output offset for the region size",
		"OutputOffset >= region size with Stopped=0 when tracing starts" },
	[PT_OPERR_END_INT_STOP] = { "END_INT_STOP",
		"36.2.6.2 ToPA Errors (3): END=1 with INT or STOP set",
		"ToPA END entry has INT or STOP set" },
	[PT_OPERR_END_AT_ENTRY0] = { "END_AT_ENTRY0",
		"36.2.6.2 ToPA Errors (3): table whose first entry is END (END pointing at END)",
		"ToPA table has no output region: its entry 0 is an END" },
	[PT_OPERR_SINGLE_ENTRY_LAYOUT] = { "SINGLE_ENTRY_LAYOUT",
		"Table 36-11 ECX[1]=0; 36.2.6.2 Single Output Region ToPA Implementation",
		"without multi-entry ToPA: more than one output entry, or the END does not "
		"point back to the table" },
	[PT_OPERR_SINGLE_RANGE_MISALIGNED] = { "SINGLE_RANGE_MISALIGNED",
		"36.2.6.1, Table 36-8 (ToPA=0: base must not overlap the mask)",
		"single-range OUTPUT_BASE is not aligned to the region size" },
	[PT_OPERR_SINGLE_RANGE_MASK] = { "SINGLE_RANGE_MASK",
		"36.2.6.1, Table 36-9 (the mask selects a power-of-two region)",
		"single-range mask is not of the form 2^n-1: unsupported region size" },
};

const struct pt_rule_info *pt_model_operr_rule(enum pt_operr e)
{
	return (unsigned int)e < PT_OPERR_NR ? &operr_rules[e] : NULL;
}

void ptm_operational_error(enum pt_operr e)
{
	struct pt_model *m = this_cpu_ptr(pt_model_cpu);

	m->status |= RTIT_STATUS_ERROR;
	m->trigger_en = false;
	m->packet_en = false;
	m->out_ready = false;
	m->last_operr = (int)e;
	pr_debug("pt-model: operational error %s\n", operr_rules[e].name);
}
