// SPDX-License-Identifier: MIT
/*
 * Output of the PT model through the MSR interface: multi-table ToPA rings,
 * STOP and INT placement, PMI skid and delivery through LVTPC, single-range
 * output with its mask, the single-entry ToPA of the first PT generation, and
 * every region size. What lands in memory is compared with the generated
 * stream byte for byte, and OUTPUT_BASE/OUTPUT_MASK_PTRS with the position.
 */
#include "test_pt_common.h"

static int setup(void **state)
{
	lowmem_init();
	model_setup("skylake");
	return 0;
}

/* Generate about @n bytes of varied packets (TIPs with changing IPs). */
static void traffic(size_t n)
{
	static u64 x = 1;
	size_t start = cap.len;

	pt_model_ev_at(0x401000);
	while (cap.len - start < n) {
		x = x * 6364136223846793005ULL + 1;
		pt_model_ev_jump_indirect(0x401000, 0x400000 + ((x >> 30) & 0xfffff));
		if (!pt_model_packet_en())
			break;
	}
}

static void pads(size_t n)
{
	for (size_t i = 0; i < n; i++)
		pt_model_ev_pad(1);
}

/* --------------------------------------------------------- multi-table ring */

static void test_multi_table_ring(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), r1 = lm_alloc(8192, 8192), r2 = lm_alloc(4096, 4096);
	u64 t1 = lm_alloc(4096, 4096), t2 = lm_alloc(4096, 4096);
	const u64 S = 16384;
	size_t L;
	u64 pos;

	((u64 *)pv(t1))[0] = TOPA_ENTRY(r0, 0, 0);
	((u64 *)pv(t1))[1] = TOPA_ENTRY(r1, 1, 0);
	((u64 *)pv(t1))[2] = TOPA_ENTRY(t2, 0, TOPA_END);
	((u64 *)pv(t2))[0] = TOPA_ENTRY(r2, 0, 0);
	((u64 *)pv(t2))[1] = TOPA_ENTRY(t1, 0, TOPA_END);
	topa_program(t1, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	traffic(3 * S + 777);
	trace_disable();
	L = cap.len;
	assert_true(L > 3 * S);
	/* the last S bytes of the stream are in the ring, each in its place */
	for (size_t i = L - S; i < L; i++) {
		u64 k = i % S;
		u8 *m = k < 4096 ? pv(r0 + k) : k < 12288 ? pv(r1 + k - 4096) : pv(r2 + k - 12288);

		if (*m != cap.bytes[i])
			fail_msg("stream byte %zu (ring offset %llu) differs", i, k);
	}
	/* and the registers name where the next byte goes */
	pos = L % S;
	if (pos < 4096) {
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t1);
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | (pos << 32));
	} else if (pos < 12288) {
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t1);
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | (1 << 7) | ((pos - 4096) << 32));
	} else {
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t2);
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | ((pos - 12288) << 32));
	}
	assert_int_equal(rd(MSR_IA32_RTIT_STATUS) & (RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED), 0);
	check_capture_against_libipt();
}

/* MaskOrTableOffset may point at an END: the walk follows it when tracing
 * starts. */
static void test_start_on_end_entry(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), r1 = lm_alloc(4096, 4096);
	u64 t1 = lm_alloc(4096, 4096), t2 = lm_alloc(4096, 4096);

	((u64 *)pv(t1))[0] = TOPA_ENTRY(r0, 0, 0);
	((u64 *)pv(t1))[1] = TOPA_ENTRY(t2, 0, TOPA_END);
	((u64 *)pv(t2))[0] = TOPA_ENTRY(r1, 0, 0);
	((u64 *)pv(t2))[1] = TOPA_ENTRY(t1, 0, TOPA_END);
	topa_program(t1, 1, 0);
	trace_enable(RTIT_CTL_TOPA);
	pads(10);
	trace_disable();
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t2);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | ((u64)cap.len << 32));
	assert_memory_equal(pv(r1), cap.bytes, cap.len);
}

/* --------------------------------------------------------- STOP */

static void test_stop_region(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), r1 = lm_alloc(4096, 4096);
	u64 e[] = { TOPA_ENTRY(r0, 0, 0), TOPA_ENTRY(r1, 0, TOPA_STOP), 0 };
	u64 t, st;
	struct pt_model_stats s;
	size_t n;

	e[2] = 0;
	t = topa_table(e, 2);
	((u64 *)pv(t))[2] = TOPA_ENTRY(t, 0, TOPA_END);
	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	traffic(12000);
	/* Stopped, TriggerEn clear, the offset at the region size */
	st = rd(MSR_IA32_RTIT_STATUS);
	assert_true(st & RTIT_STATUS_STOPPED);
	assert_false(st & RTIT_STATUS_TRIGGEREN);
	assert_false(st & RTIT_STATUS_ERROR);
	pt_model_get_stats(&s);
	assert_int_equal(s.bytes_written, 8192);
	assert_true(s.bytes_lost > 0 || cap.len == 8192);
	assert_memory_equal(pv(r0), cap.bytes, 4096);
	assert_memory_equal(pv(r1), cap.bytes + 4096, 4096);
	/* nothing more is generated */
	n = cap.n;
	pads(100);
	traffic(100);
	assert_int_equal(cap.n, n);
	trace_disable();
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), t);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | (1 << 7) | (4096ULL << 32));

	/* re-enabled with Stopped still set: tracing stays off */
	trace_enable(RTIT_CTL_TOPA);
	assert_false(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_TRIGGEREN);
	pads(10);
	assert_int_equal(cap.n, n);
	trace_disable();

	/* Stopped cleared but the offset left at the region size: error */
	wr(MSR_IA32_RTIT_STATUS, 0);
	trace_enable(RTIT_CTL_TOPA);
	st = rd(MSR_IA32_RTIT_STATUS);
	assert_true(st & RTIT_STATUS_ERROR);
	assert_int_equal(pt_model_last_operr(), PT_OPERR_OFFSET_TOO_LARGE);
	trace_disable();

	/* rewound by software: tracing again, from the start of region 0 */
	wr(MSR_IA32_RTIT_STATUS, 0);
	topa_program(t, 0, 0);
	capture_reset();
	trace_enable(RTIT_CTL_TOPA);
	pads(5);
	trace_disable();
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | ((u64)cap.len << 32));
	assert_memory_equal(pv(r0), cap.bytes, cap.len);
}

/* --------------------------------------------------------- INT / PMI */

static struct {
	unsigned int calls;
	bool nmi;
	u64 global_status, base, mask, status;
	u32 lvtpc_at_entry;
	u64 global_after_ack;
} pmi;

/* A driver's PMI handler, as the SDM and WindowsIntelPT do it: check
 * TraceToPAPMI, clear TraceEn, read the position, acknowledge via 0x390. */
static void pmi_handler(bool nmi)
{
	pmi.calls++;
	pmi.nmi = nmi;
	pmi.lvtpc_at_entry = hosted_lvtpc;
	pmi.global_status = rd(MSR_CORE_PERF_GLOBAL_STATUS);
	trace_disable();
	pmi.base = rd(MSR_IA32_RTIT_OUTPUT_BASE);
	pmi.mask = rd(MSR_IA32_RTIT_OUTPUT_MASK);
	pmi.status = rd(MSR_IA32_RTIT_STATUS);
	wr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI);
	pmi.global_after_ack = rd(MSR_CORE_PERF_GLOBAL_STATUS);
}

static u64 int_table(u64 *r0, u64 *r1)
{
	u64 e[4];

	*r0 = lm_alloc(4096, 4096);
	*r1 = lm_alloc(4096, 4096);
	e[0] = TOPA_ENTRY(*r0, 0, TOPA_INT);
	e[1] = TOPA_ENTRY(*r1, 0, 0);
	e[2] = 0;
	{
		u64 t = topa_table(e, 2);

		((u64 *)pv(t))[2] = TOPA_ENTRY(t, 0, TOPA_END);
		return t;
	}
}

static void run_to_pmi(u64 t, size_t limit)
{
	memset(&pmi, 0, sizeof(pmi));
	hosted_pmi_handler = pmi_handler;
	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	for (size_t i = 0; i < limit && !pmi.calls; i++)
		pt_model_ev_pad(1);
}

static void test_int_pmi_after_skid(void **state)
{
	u64 r0, r1, t = int_table(&r0, &r1);
	struct pt_model_config c;

	hosted_lvtpc = PT_PMI_VECTOR;
	pt_model_get_config(&c);
	assert_true(c.pmi_skid > 0);		/* non-zero by default */
	memset(&pmi, 0, sizeof(pmi));
	hosted_pmi_handler = pmi_handler;
	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	/* fill region 0 exactly: TraceToPAPMI is set, the PMI not yet taken */
	while (cap.len < 4096)
		pt_model_ev_pad(1);
	assert_int_equal(cap.len, 4096);
	assert_true(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	assert_int_equal(pmi.calls, 0);
	for (size_t i = 0; i < 1000 && !pmi.calls; i++)
		pt_model_ev_pad(1);
	assert_int_equal(pmi.calls, 1);
	assert_false(pmi.nmi);
	assert_int_equal(hosted_pmi_count, 1);
	/* taken exactly @skid bytes into the next region */
	assert_int_equal(pmi.base, t);
	assert_int_equal(pmi.mask, 0x7f | (1 << 7) | ((u64)c.pmi_skid << 32));
	assert_true(pmi.global_status & GLOBAL_STATUS_TRACE_TOPAPMI);
	assert_false(pmi.global_after_ack & GLOBAL_STATUS_TRACE_TOPAPMI);
	/* delivered through the unmasked LVTPC, which the delivery masked:
	 * the handler already sees the mask bit */
	assert_true(pmi.lvtpc_at_entry & APIC_LVT_MASKED);
	assert_true(hosted_lvtpc & APIC_LVT_MASKED);
	assert_int_equal(hosted_lvtpc & APIC_VECTOR_MASK, PT_PMI_VECTOR);
	assert_memory_equal(pv(r0), cap.bytes, 4096);
	assert_memory_equal(pv(r1), cap.bytes + 4096, c.pmi_skid);
}

static void test_int_pmi_as_nmi_and_skid_zero(void **state)
{
	u64 r0, r1, t = int_table(&r0, &r1);
	struct pt_model_config c;

	pt_model_get_config(&c);
	c.pmi_skid = 0;
	pt_model_set_config(&c);
	hosted_lvtpc = APIC_DM_NMI;
	run_to_pmi(t, 10000);
	assert_int_equal(pmi.calls, 1);
	assert_true(pmi.nmi);
	assert_int_equal(hosted_nmi_count, 1);
	assert_int_equal(pmi.mask, 0x7f | (1 << 7));
	assert_true(hosted_lvtpc & APIC_LVT_MASKED);
}

static void test_int_pmi_masked_lvtpc(void **state)
{
	u64 r0, r1, t = int_table(&r0, &r1);
	struct pt_model_stats s;

	hosted_lvtpc = PT_PMI_VECTOR | APIC_LVT_MASKED;
	run_to_pmi(t, 6000);
	assert_int_equal(pmi.calls, 0);
	assert_true(rd(MSR_CORE_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPAPMI);
	pt_model_get_stats(&s);
	assert_int_equal(s.pmis, 1);
	assert_int_equal(s.pmis_delivered, 0);
	trace_disable();
}

/* Clearing TraceEn inside the skid: the PMI still comes, at the disable. */
static void test_int_pmi_taken_at_disable(void **state)
{
	u64 r0, r1, t = int_table(&r0, &r1);

	hosted_lvtpc = PT_PMI_VECTOR;
	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	while (cap.len < 4096 + 10)
		pt_model_ev_pad(1);
	assert_int_equal(hosted_pmi_count, 0);
	memset(&pmi, 0, sizeof(pmi));
	trace_disable();
	assert_int_equal(hosted_pmi_count, 1);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | (1 << 7) | (10ULL << 32));
}

/* The GLOBAL_STATUS read keeps the CPU's own bits, adding bit 55. */
static void test_global_status_merges_cpu_bits(void **state)
{
	u64 r0, r1, t = int_table(&r0, &r1);

	hosted_msr_define(MSR_CORE_PERF_GLOBAL_STATUS, 0x3);
	hosted_msr_define(MSR_CORE_PERF_GLOBAL_OVF_CTRL, 0);
	hosted_lvtpc = PT_PMI_VECTOR | APIC_LVT_MASKED;
	run_to_pmi(t, 5000);
	assert_int_equal(rd(MSR_CORE_PERF_GLOBAL_STATUS), 0x3 | GLOBAL_STATUS_TRACE_TOPAPMI);
	/* 0x390: bit 55 is the model's, the rest reach the CPU */
	wr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, GLOBAL_STATUS_TRACE_TOPAPMI | 0x1);
	assert_int_equal(rd(MSR_CORE_PERF_GLOBAL_STATUS), 0x3);
	{
		u64 v;

		assert_true(hosted_msr_get(MSR_CORE_PERF_GLOBAL_OVF_CTRL, &v));
		assert_int_equal(v, 0x1);
	}
	trace_disable();
}

/* STOP with INT: the PMI comes at once (no bytes follow to count the skid). */
static void test_stop_int_region(void **state)
{
	u64 r0 = lm_alloc(4096, 4096);
	u64 t = lm_alloc(4096, 4096);

	((u64 *)pv(t))[0] = TOPA_ENTRY(r0, 0, TOPA_INT | TOPA_STOP);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t, 0, TOPA_END);
	hosted_lvtpc = PT_PMI_VECTOR;
	run_to_pmi(t, 10000);
	assert_int_equal(pmi.calls, 1);
	assert_int_equal(pmi.mask, 0x7f | (4096ULL << 32));
	assert_true(pmi.status & RTIT_STATUS_STOPPED);
}

/* --------------------------------------------------------- single range */

static void test_single_range_wrap(void **state)
{
	u64 base = lm_alloc(8192, 8192);
	const size_t S = 8192;
	size_t L;

	wr(MSR_IA32_RTIT_OUTPUT_BASE, base);
	wr(MSR_IA32_RTIT_OUTPUT_MASK, 0x1f80);	/* LowerMask reads as ones */
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x1fff);
	trace_enable(0);
	traffic(2 * S + 1234);
	trace_disable();
	L = cap.len;
	for (size_t i = L - S; i < L; i++)
		if (((u8 *)pv(base))[i % S] != cap.bytes[i])
			fail_msg("stream byte %zu not at offset %zu", i, i % S);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE), base);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x1fff | ((u64)(L % S) << 32));
	assert_false(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR);
	check_capture_against_libipt();
}

static void test_single_range_start_offset(void **state)
{
	u64 base = lm_alloc(4096, 4096);

	wr(MSR_IA32_RTIT_OUTPUT_BASE, base);
	wr(MSR_IA32_RTIT_OUTPUT_MASK, 0xfff | (4090ULL << 32));
	trace_enable(0);
	pads(10);
	trace_disable();
	/* PSB+ first, then 10 PADs: it starts at 4090 and wraps to 0 */
	assert_memory_equal(pv(base + 4090), cap.bytes, 6);
	assert_memory_equal(pv(base), cap.bytes + 6, cap.len - 6);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK) >> 32, cap.len - 6);
}

/* --------------------------------------------------------- single-entry ToPA */

static void test_single_entry_profile(void **state)
{
	u64 r0 = lm_alloc(8192, 8192), t = lm_alloc(4096, 4096);
	struct pt_model_config c;

	model_setup("broadwell");
	pt_model_get_config(&c);
	((u64 *)pv(t))[0] = TOPA_ENTRY(r0, 1, TOPA_INT);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t, 0, TOPA_END);
	hosted_lvtpc = PT_PMI_VECTOR;
	run_to_pmi(t, 20000);
	/* the PMI comes before the region fills: early, plus the skid */
	assert_int_equal(pmi.calls, 1);
	assert_int_equal(pmi.base, t);
	assert_int_equal(pmi.mask, 0x7f | ((8192ULL - c.single_pmi_early + c.pmi_skid) << 32));
	assert_false(pmi.status & RTIT_STATUS_ERROR);
	/* the one region is a ring: run it round and check the wrap */
	wr(MSR_IA32_RTIT_STATUS, 0);
	topa_program(t, 0, 0);
	hosted_pmi_handler = NULL;
	capture_reset();
	trace_enable(RTIT_CTL_TOPA);
	traffic(20000);
	trace_disable();
	for (size_t i = cap.len - 8192; i < cap.len; i++)
		assert_int_equal(((u8 *)pv(r0))[i % 8192], cap.bytes[i]);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | ((u64)(cap.len % 8192) << 32));
	/* no PacketByteCnt on this part */
	assert_int_equal(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_BYTECNT, 0);
}

static void test_single_entry_layout_errors(void **state)
{
	u64 r0 = lm_alloc(4096, 4096), r1 = lm_alloc(4096, 4096);
	u64 t = lm_alloc(4096, 4096), t2 = lm_alloc(4096, 4096);

	model_setup("broadwell");
	/* two output entries */
	((u64 *)pv(t))[0] = TOPA_ENTRY(r0, 0, 0);
	((u64 *)pv(t))[1] = TOPA_ENTRY(r1, 0, 0);
	((u64 *)pv(t))[2] = TOPA_ENTRY(t, 0, TOPA_END);
	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA);
	assert_true(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR);
	assert_int_equal(pt_model_last_operr(), PT_OPERR_SINGLE_ENTRY_LAYOUT);
	trace_disable();
	/* END to another table */
	wr(MSR_IA32_RTIT_STATUS, 0);
	((u64 *)pv(t))[1] = TOPA_ENTRY(t2, 0, TOPA_END);
	((u64 *)pv(t2))[0] = TOPA_ENTRY(r1, 0, 0);
	((u64 *)pv(t2))[1] = TOPA_ENTRY(t2, 0, TOPA_END);
	pt_model_clear_faults();
	trace_enable(RTIT_CTL_TOPA);
	assert_true(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR);
	assert_int_equal(pt_model_last_operr(), PT_OPERR_SINGLE_ENTRY_LAYOUT);
	assert_int_equal(cap.len, 0);		/* not even a PSB */
	trace_disable();
}

/* --------------------------------------------------------- region sizes */

static void test_every_region_size(void **state)
{
	for (int sz = TOPA_SZ_4K; sz <= TOPA_SZ_128M; sz++) {
		u64 size = TOPA_ENTRY_SIZE(sz);
		u64 r, r2, t;

		lowmem_init();
		model_setup("skylake");
		r = lm_alloc(size, size);
		r2 = lm_alloc(4096, 4096);
		t = lm_alloc(4096, 4096);
		((u64 *)pv(t))[0] = TOPA_ENTRY(r, sz, 0);
		((u64 *)pv(t))[1] = TOPA_ENTRY(r2, 0, 0);
		((u64 *)pv(t))[2] = TOPA_ENTRY(t, 0, TOPA_END);
		topa_program(t, 0, size - 16);
		trace_enable(RTIT_CTL_TOPA);
		pads(32);
		trace_disable();
		assert_true(cap.len > 32);
		assert_memory_equal(pv(r + size - 16), cap.bytes, 16);
		assert_memory_equal(pv(r2), cap.bytes + 16, cap.len - 16);
		assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK), 0x7f | (1 << 7) | ((cap.len - 16) << 32));
		/* a region not aligned to its size is an operational error */
		if (sz) {
			wr(MSR_IA32_RTIT_STATUS, 0);
			((u64 *)pv(t))[0] = TOPA_ENTRY(r + size / 2, sz, 0);
			topa_program(t, 0, 0);
			trace_enable(RTIT_CTL_TOPA);
			assert_true(rd(MSR_IA32_RTIT_STATUS) & RTIT_STATUS_ERROR);
			assert_int_equal(pt_model_last_operr(), PT_OPERR_REGION_MISALIGNED);
			trace_disable();
		}
	}
}

/* PacketByteCnt carries over a PMI-style restart: no second PSB. */
static void test_bytecnt_across_restart(void **state)
{
	u64 r0, t = topa_simple(4, 0, &r0);
	u64 st;

	topa_program(t, 0, 0);
	trace_enable(RTIT_CTL_TOPA | (5ULL << RTIT_CTL_PSB_FREQ_OFFSET));
	pads(100);
	trace_disable();
	st = rd(MSR_IA32_RTIT_STATUS);
	assert_int_equal((st & RTIT_STATUS_BYTECNT) >> 32, cap.len);
	wr(MSR_IA32_RTIT_STATUS, st);		/* written back as read */
	trace_enable(RTIT_CTL_TOPA | (5ULL << RTIT_CTL_PSB_FREQ_OFFSET));
	pads(10);
	trace_disable();
	assert_int_equal(capture_count(PTPK_PSB), 1);
	/* STATUS = 0 forces a PSB at the next enable */
	wr(MSR_IA32_RTIT_STATUS, 0);
	trace_enable(RTIT_CTL_TOPA | (5ULL << RTIT_CTL_PSB_FREQ_OFFSET));
	trace_disable();
	assert_int_equal(capture_count(PTPK_PSB), 2);
	assert_memory_equal(pv(r0), cap.bytes, cap.len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_multi_table_ring, setup),
		cmocka_unit_test_setup(test_start_on_end_entry, setup),
		cmocka_unit_test_setup(test_stop_region, setup),
		cmocka_unit_test_setup(test_int_pmi_after_skid, setup),
		cmocka_unit_test_setup(test_int_pmi_as_nmi_and_skid_zero, setup),
		cmocka_unit_test_setup(test_int_pmi_masked_lvtpc, setup),
		cmocka_unit_test_setup(test_int_pmi_taken_at_disable, setup),
		cmocka_unit_test_setup(test_global_status_merges_cpu_bits, setup),
		cmocka_unit_test_setup(test_stop_int_region, setup),
		cmocka_unit_test_setup(test_single_range_wrap, setup),
		cmocka_unit_test_setup(test_single_range_start_offset, setup),
		cmocka_unit_test_setup(test_single_entry_profile, setup),
		cmocka_unit_test_setup(test_single_entry_layout_errors, setup),
		cmocka_unit_test_setup(test_every_region_size, setup),
		cmocka_unit_test_setup(test_bytecnt_across_restart, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
