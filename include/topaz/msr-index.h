/* SPDX-License-Identifier: MIT */
/*
 * MSR numbers and bit fields, with Linux's names (arch/x86/include/asm/
 * msr-index.h), for the Intel PT registers and the PMU bits the ToPA PMI
 * uses. Bit layouts follow the Intel SDM Vol. 3C chapter "Intel Processor
 * Trace" (chapter 36 in the 2016 edition, 33 in current ones).
 */
#ifndef TOPAZ_MSR_INDEX_H
#define TOPAZ_MSR_INDEX_H

#include <topaz/types.h>

/* ------------------------------------------------------------ PMU */
#define MSR_CORE_PERF_GLOBAL_STATUS	0x0000038e
#define MSR_CORE_PERF_GLOBAL_CTRL	0x0000038f
/* IA32_PERF_GLOBAL_OVF_CTRL; named IA32_PERF_GLOBAL_STATUS_RESET from perfmon v4 */
#define MSR_CORE_PERF_GLOBAL_OVF_CTRL	0x00000390
#define GLOBAL_STATUS_TRACE_TOPAPMI_BIT	55
#define GLOBAL_STATUS_TRACE_TOPAPMI	BIT_ULL(GLOBAL_STATUS_TRACE_TOPAPMI_BIT)
#define MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI_BIT 55
#define MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI \
	BIT_ULL(MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI_BIT)

/* ------------------------------------------------------------ Intel PT */
#define MSR_IA32_RTIT_OUTPUT_BASE	0x00000560
#define MSR_IA32_RTIT_OUTPUT_MASK	0x00000561	/* IA32_RTIT_OUTPUT_MASK_PTRS */
#define MSR_IA32_RTIT_CTL		0x00000570
#define MSR_IA32_RTIT_STATUS		0x00000571
#define MSR_IA32_RTIT_CR3_MATCH		0x00000572
#define MSR_IA32_RTIT_ADDR0_A		0x00000580
#define MSR_IA32_RTIT_ADDR0_B		0x00000581
#define MSR_IA32_RTIT_ADDR1_A		0x00000582
#define MSR_IA32_RTIT_ADDR1_B		0x00000583
#define MSR_IA32_RTIT_ADDR2_A		0x00000584
#define MSR_IA32_RTIT_ADDR2_B		0x00000585
#define MSR_IA32_RTIT_ADDR3_A		0x00000586
#define MSR_IA32_RTIT_ADDR3_B		0x00000587
#define MSR_IA32_RTIT_ADDRn_A(n)	(MSR_IA32_RTIT_ADDR0_A + 2 * (n))
#define MSR_IA32_RTIT_ADDRn_B(n)	(MSR_IA32_RTIT_ADDR0_B + 2 * (n))

/* IA32_RTIT_CTL (SDM Table 36-6) */
#define RTIT_CTL_TRACEEN		BIT_ULL(0)
#define RTIT_CTL_CYCLEACC		BIT_ULL(1)	/* CYCEn */
#define RTIT_CTL_OS			BIT_ULL(2)
#define RTIT_CTL_USR			BIT_ULL(3)
#define RTIT_CTL_PWR_EVT_EN		BIT_ULL(4)
#define RTIT_CTL_FUP_ON_PTW		BIT_ULL(5)
#define RTIT_CTL_FABRIC_EN		BIT_ULL(6)
#define RTIT_CTL_CR3EN			BIT_ULL(7)	/* CR3Filter */
#define RTIT_CTL_TOPA			BIT_ULL(8)
#define RTIT_CTL_MTC_EN			BIT_ULL(9)
#define RTIT_CTL_TSC_EN			BIT_ULL(10)
#define RTIT_CTL_DISRETC		BIT_ULL(11)
#define RTIT_CTL_PTW_EN			BIT_ULL(12)
#define RTIT_CTL_BRANCH_EN		BIT_ULL(13)
#define RTIT_CTL_MTC_RANGE_OFFSET	14
#define RTIT_CTL_MTC_RANGE		(0x0fULL << RTIT_CTL_MTC_RANGE_OFFSET)
#define RTIT_CTL_CYC_THRESH_OFFSET	19
#define RTIT_CTL_CYC_THRESH		(0x0fULL << RTIT_CTL_CYC_THRESH_OFFSET)
#define RTIT_CTL_PSB_FREQ_OFFSET	24
#define RTIT_CTL_PSB_FREQ		(0x0fULL << RTIT_CTL_PSB_FREQ_OFFSET)
#define RTIT_CTL_EVENT_EN		BIT_ULL(31)
#define RTIT_CTL_ADDR0_OFFSET		32
#define RTIT_CTL_ADDR0			(0x0fULL << RTIT_CTL_ADDR0_OFFSET)
#define RTIT_CTL_ADDR1_OFFSET		36
#define RTIT_CTL_ADDR1			(0x0fULL << RTIT_CTL_ADDR1_OFFSET)
#define RTIT_CTL_ADDR2_OFFSET		40
#define RTIT_CTL_ADDR2			(0x0fULL << RTIT_CTL_ADDR2_OFFSET)
#define RTIT_CTL_ADDR3_OFFSET		44
#define RTIT_CTL_ADDR3			(0x0fULL << RTIT_CTL_ADDR3_OFFSET)
#define RTIT_CTL_ADDRn_OFFSET(n)	(RTIT_CTL_ADDR0_OFFSET + 4 * (n))
#define RTIT_CTL_ADDR_CFG_ALL		(RTIT_CTL_ADDR0 | RTIT_CTL_ADDR1 | RTIT_CTL_ADDR2 | RTIT_CTL_ADDR3)
#define RTIT_CTL_NOTNT			BIT_ULL(55)	/* DisTNT */
#define RTIT_CTL_INJECT_PSB_PMI		BIT_ULL(56)	/* InjectPsbPmiOnEnable */

/* ADDRn_CFG encodings */
#define RTIT_ADDR_CFG_UNUSED		0
#define RTIT_ADDR_CFG_FILTER		1
#define RTIT_ADDR_CFG_STOP		2

/* IA32_RTIT_STATUS (SDM Table 36-7) */
#define RTIT_STATUS_FILTEREN		BIT_ULL(0)
#define RTIT_STATUS_CONTEXTEN		BIT_ULL(1)
#define RTIT_STATUS_TRIGGEREN		BIT_ULL(2)
#define RTIT_STATUS_BUFFOVF		BIT_ULL(3)	/* reserved in the SDM table */
#define RTIT_STATUS_ERROR		BIT_ULL(4)
#define RTIT_STATUS_STOPPED		BIT_ULL(5)
#define RTIT_STATUS_PENDPSB		BIT_ULL(6)
#define RTIT_STATUS_PENDTOPAPMI		BIT_ULL(7)
#define RTIT_STATUS_BYTECNT_OFFSET	32
#define RTIT_STATUS_BYTECNT		(0x1ffffULL << RTIT_STATUS_BYTECNT_OFFSET)

/* IA32_RTIT_OUTPUT_MASK_PTRS */
#define RTIT_OUTPUT_LOWER_MASK		0x7fULL
#define RTIT_OUTPUT_MASK_OFFSET_SHIFT	7	/* MaskOrTableOffset, bits 31:7 */
#define RTIT_OUTPUT_MASK_OFFSET		(0x1ffffffULL << RTIT_OUTPUT_MASK_OFFSET_SHIFT)
#define RTIT_OUTPUT_OFFSET_SHIFT	32	/* OutputOffset, bits 63:32 */

/* ToPA table entry (SDM Figure 36-2; Linux struct topa_entry) */
#define TOPA_END			BIT_ULL(0)
#define TOPA_INT			BIT_ULL(2)
#define TOPA_STOP			BIT_ULL(4)
#define TOPA_SIZE_SHIFT			6
#define TOPA_SIZE_MASK			(0x0fULL << TOPA_SIZE_SHIFT)
#define TOPA_RSVD_LOW			(BIT_ULL(1) | BIT_ULL(3) | BIT_ULL(5) | BIT_ULL(10) | BIT_ULL(11))
#define TOPA_SHIFT			12
#define TOPA_SZ_4K			0
#define TOPA_SZ_128M			15
#define TOPA_ENTRY_SIZE(sz)		(4096ULL << (sz))
/* the bytes of the region a ToPA entry @te describes */
#define TOPA_ENTRY_REGION(te)		TOPA_ENTRY_SIZE(((te) & TOPA_SIZE_MASK) >> TOPA_SIZE_SHIFT)
#define TOPA_ENTRY(base, sz, flags)	(((u64)(base) & ~0xfffULL) | \
					 ((u64)(sz) << TOPA_SIZE_SHIFT) | (flags))

/* ------------------------------------------------------------ CPUID */
#define CPUID_7_0_EBX_INTEL_PT		BIT(25)
#define CPUID_LEAF_PT			0x14
/* leaf 0x14 sub-leaf 0 EBX */
#define PT_CAP_CR3_FILTER		BIT(0)
#define PT_CAP_PSB_CYC			BIT(1)
#define PT_CAP_IP_FILTER		BIT(2)
#define PT_CAP_MTC			BIT(3)
#define PT_CAP_PTWRITE			BIT(4)
#define PT_CAP_POWER_EVENT		BIT(5)
#define PT_CAP_PSB_PMI_PRESERVE		BIT(6)
#define PT_CAP_EVENT_TRACE		BIT(7)
#define PT_CAP_TNT_DISABLE		BIT(8)
/* leaf 0x14 sub-leaf 0 ECX */
#define PT_CAP_TOPA			BIT(0)
#define PT_CAP_TOPA_MULTI		BIT(1)
#define PT_CAP_SINGLE_RANGE		BIT(2)
#define PT_CAP_FABRIC			BIT(3)
#define PT_CAP_LIP			BIT(31)
/* leaf 0x14 sub-leaf 1 */
#define PT_CAP_NUM_RANGES_MASK		0x7u		/* EAX[2:0] */
#define PT_CAP_MTC_PERIODS_SHIFT	16		/* EAX[31:16] */
#define PT_CAP_CYC_THRESHOLDS_MASK	0xffffu		/* EBX[15:0] */
#define PT_CAP_PSB_PERIODS_SHIFT	16		/* EBX[31:16] */

#endif
