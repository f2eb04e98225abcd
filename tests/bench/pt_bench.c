// SPDX-License-Identifier: MIT
/*
 * The PT driver's benchmarks (make bench): the cost of a ToPA PMI and of
 * building a large buffer, on a fake CPU with PT whose RTIT MSRs are plain
 * fake MSRs (not the trace unit model), so that only the driver's
 * instructions, and the fake machine's trivial MSR accessors, are counted.
 *
 *   pt_bench pmi [--size BYTES] [--max-order N] [--pmis N]
 *   pt_bench setup [--size BYTES] [--max-order N] [--runs N]
 *
 * pmi: a normal-mode event on a ring of --size bytes (chunks of at most
 * 2^max-order pages). Between two PMIs the harness does what a trace unit
 * does: it fills the regions from the current output position up to the
 * first one with INT, leaves OUTPUT_BASE/OUTPUT_MASK_PTRS after it (or, on
 * a STOP region, at its end with RTIT_STATUS.Stopped), sets
 * IA32_PERF_GLOBAL_STATUS bit 55, and masks LVTPC as the APIC does on
 * delivery. The consumer (pt_set_wakeup()) drains everything, so the ring
 * never runs out of room. Run it under valgrind --tool=callgrind
 * --collect-atstart=no --toggle-collect=pt_pmi_handle to count exactly the
 * instructions of the PMIs.
 *
 * setup: wall-clock times of pt_aux_alloc, pt_event_init and the teardown
 * (pt_event_destroy + pt_aux_free), medians of --runs runs after one warm-up
 * (which faults the arena in); "setups" counts them all, for callgrind
 * --toggle-collect on those four functions.
 *
 * Prints key=value lines; exits 1 when the driver misbehaves (a PMI that
 * publishes the wrong amount, a stopped event, ToPA errors).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "../host/hosted.h"
#include "../../drivers/pt/internal.h"
#include <topaz/msr-index.h>
#include <topaz/apic.h>
#include <topaz/mm.h>

#define ARENA_SLACK	(64ull << 20)	/* mem_map (~12 MiB for 1 GiB), arrays, tables */
#define ARENA_ALIGN	(4ull << 20)	/* MAX_ORDER blocks */

static struct perf_event event;

static void die(const char *what)
{
	fprintf(stderr, "pt_bench: %s\n", what);
	exit(1);
}

static void setup_memory(u64 size)
{
	u64 len = size + ARENA_SLACK + ARENA_ALIGN;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t start;

	if (p == MAP_FAILED)
		die("cannot map the arena");
	start = ALIGN_UP((uintptr_t)p, ARENA_ALIGN);
	page_alloc_init();
	if (page_alloc_add_range(start, start + size + ARENA_SLACK))
		die("cannot add the arena to the page allocator");
}

/* A Skylake client core with PT: CPUID leaves 0, 1, 7, 0x14 and the MSRs. */
static void setup_cpu(void)
{
	static const u32 msrs[] = {
		MSR_CORE_PERF_GLOBAL_STATUS, MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		MSR_IA32_RTIT_OUTPUT_BASE, MSR_IA32_RTIT_OUTPUT_MASK,
		MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_STATUS, MSR_IA32_RTIT_CR3_MATCH,
		MSR_IA32_RTIT_ADDR0_A, MSR_IA32_RTIT_ADDR0_B,
		MSR_IA32_RTIT_ADDR1_A, MSR_IA32_RTIT_ADDR1_B,
	};
	struct cpuid_regs l0 = { .eax = 0x16, .ebx = 0x756e6547, .ecx = 0x6c65746e, .edx = 0x49656e69 };
	struct cpuid_regs l1 = { .eax = 0x000506e3 };
	struct cpuid_regs l7 = { .ebx = CPUID_7_0_EBX_INTEL_PT };
	struct cpuid_regs l14_0 = { 0x00000001, 0x0000000f, 0x00000007, 0 };
	struct cpuid_regs l14_1 = { 0x02490002, 0x003f3fff, 0, 0 };

	hosted_cpuid_reset();
	hosted_cpuid_set(0, 0, &l0);
	hosted_cpuid_set(1, 0, &l1);
	hosted_cpuid_set(7, 0, &l7);
	hosted_cpuid_set(0x14, 0, &l14_0);
	hosted_cpuid_set(0x14, 1, &l14_1);
	/* in numeric order: the fake machine scans its table linearly */
	hosted_msr_reset();
	for (size_t i = 0; i < sizeof(msrs) / sizeof(msrs[0]); i++)
		hosted_msr_define(msrs[i], 0);
	if (pt_pmu_hw_init())
		die("pt_pmu_hw_init refused the fake CPU");
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		memset(pt_cpu_ctx(cpu), 0, sizeof(struct pt));	/* every CPU's */
}

static u64 msr(u32 m)
{
	u64 v;

	if (!hosted_msr_get(m, &v))
		die("an MSR the harness defined vanished");
	return v;
}

/* The consumer: everything published is read at once. */
static void drain(struct perf_event *e)
{
	e->aux->tail = e->aux->head;
}

static struct pt_aux *buffer_setup(u64 size, unsigned int max_order)
{
	struct pt_event_attr attr = { 0 };
	struct pt_aux *aux = pt_aux_alloc(0, size, max_order, false, GFP_KERNEL);

	if (!aux)
		die("pt_aux_alloc failed");
	if (pt_event_init(&event, &attr, aux, 0))
		die("pt_event_init failed");
	return aux;
}

static void buffer_teardown(struct pt_aux *aux)
{
	pt_event_destroy(&event);
	pt_aux_free(aux);
}

static void count_topa(const struct pt_buffer *buf, unsigned int *tables, unsigned long *entries)
{
	const struct topa *t;

	*tables = 0;
	*entries = 0;
	list_for_each_entry(t, &buf->tables, list) {
		(*tables)++;
		*entries += (unsigned long)t->last + 1;	/* data entries and the END */
	}
}

/*
 * The trace unit between two PMIs: from the output position, fill regions
 * until one with INT is full. Returns the bytes written; sets *stopped when
 * that region also had STOP (the trace unit then stays at its end).
 */
static u64 trace_unit_fill(bool *stopped)
{
	u64 base = msr(MSR_IA32_RTIT_OUTPUT_BASE), mask = msr(MSR_IA32_RTIT_OUTPUT_MASK);
	u64 idx = (mask & RTIT_OUTPUT_MASK_OFFSET) >> RTIT_OUTPUT_MASK_OFFSET_SHIFT;
	u64 off = mask >> RTIT_OUTPUT_OFFSET_SHIFT, bytes = 0;
	unsigned long steps = 0;

	*stopped = false;
	if (!(msr(MSR_IA32_RTIT_CTL) & RTIT_CTL_TRACEEN))
		die("TraceEn is clear before a PMI: the driver stopped the event");
	for (;;) {
		u64 e = ((u64 *)phys_to_virt(base))[idx], rsize;

		if (++steps > (1ul << 22))
			die("no INT entry in the ToPA ring");
		if (e & TOPA_END) {
			base = e & ~0xfffull;
			idx = 0;
			continue;
		}
		rsize = TOPA_ENTRY_SIZE((e & TOPA_SIZE_MASK) >> TOPA_SIZE_SHIFT);
		if (off > rsize)
			die("OutputOffset beyond its region");
		bytes += rsize - off;
		if (e & TOPA_STOP) {
			if (!(e & TOPA_INT))
				die("STOP without INT: the trace unit would stop with no PMI");
			off = rsize;
			*stopped = true;
			break;
		}
		idx++;
		off = 0;
		if (e & TOPA_INT) {
			/* the next entry is loaded at once: follow an END */
			e = ((u64 *)phys_to_virt(base))[idx];
			if (e & TOPA_END) {
				base = e & ~0xfffull;
				idx = 0;
			}
			break;
		}
	}
	hosted_msr_define(MSR_IA32_RTIT_OUTPUT_BASE, base);
	hosted_msr_define(MSR_IA32_RTIT_OUTPUT_MASK, RTIT_OUTPUT_LOWER_MASK |
			  (idx << RTIT_OUTPUT_MASK_OFFSET_SHIFT) | (off << RTIT_OUTPUT_OFFSET_SHIFT));
	if (*stopped)
		hosted_msr_define(MSR_IA32_RTIT_STATUS, msr(MSR_IA32_RTIT_STATUS) | RTIT_STATUS_STOPPED);
	return bytes;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run_pmi(u64 size, unsigned int max_order, unsigned long pmis)
{
	struct pt *pt = pt_cpu_ctx((int)smp_processor_id());
	struct pt_aux *aux;
	unsigned long stops = 0;
	unsigned int tables;
	unsigned long entries;
	u64 expect = 0;
	double t0, t, clock_cost = 0;

	aux = buffer_setup(size, max_order);
	count_topa(event.buf, &tables, &entries);
	pt_set_wakeup((int)smp_processor_id(), drain);
	if (pt_event_start(&event))
		die("pt_event_start failed");
	/* the cost of reading the clock, taken off the PMI times */
	for (unsigned long i = 0; i < pmis; i++) {
		t0 = now();
		clock_cost += now() - t0;
	}
	t = 0;
	for (unsigned long i = 0; i < pmis; i++) {
		bool stopped;
		u64 ack;

		expect += trace_unit_fill(&stopped);
		stops += stopped;
		hosted_msr_define(MSR_CORE_PERF_GLOBAL_STATUS,
				  msr(MSR_CORE_PERF_GLOBAL_STATUS) | GLOBAL_STATUS_TRACE_TOPAPMI);
		hosted_msr_define(MSR_CORE_PERF_GLOBAL_OVF_CTRL, 0);
		hosted_lvtpc = PT_PMI_VECTOR | APIC_LVT_MASKED;	/* masked at delivery */
		t0 = now();
		if (!pt_pmi_handle())
			die("pt_pmi_handle did not claim the PMI");
		t += now() - t0;
		ack = msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL);
		if (!(ack & MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI))
			die("the PMI was not acknowledged (IA32_PERF_GLOBAL_OVF_CTRL bit 55)");
		/* the acknowledgement clears the status bit */
		hosted_msr_define(MSR_CORE_PERF_GLOBAL_STATUS,
				  msr(MSR_CORE_PERF_GLOBAL_STATUS) & ~GLOBAL_STATUS_TRACE_TOPAPMI);
		if (hosted_lvtpc & APIC_LVT_MASKED)
			die("LVTPC left masked after the PMI");
		if (aux->head != expect) {
			fprintf(stderr, "pt_bench: PMI %lu: %llu bytes published, the trace unit wrote %llu\n",
				i, aux->head, expect);
			return 1;
		}
		if (event.stopped)
			die("the event stopped during the PMI loop");
	}
	if (pt->pmis != pmis || pt->stale_pmis || pt->errors)
		die("PMI counters disagree (pmis, stale or errors)");
	buffer_teardown(aux);
	printf("mode=pmi size=%llu max_order=%u pmis=%lu tables=%u entries=%lu bytes_per_pmi=%llu "
	       "stops=%lu truncations=%llu ns_per_pmi=%.0f\n",
	       size, max_order, pmis, tables, entries,
	       expect / pmis, stops, pt->truncations,
	       (t > clock_cost ? t - clock_cost : 0) / (double)pmis * 1e9);
	return 0;
}

static int run_setup(u64 size, unsigned int max_order, unsigned int runs)
{
	double *ta = calloc(runs, sizeof(double)), *ti = calloc(runs, sizeof(double));
	double *tf = calloc(runs, sizeof(double)), *tt = calloc(runs, sizeof(double));
	unsigned int tables = 0;
	unsigned long entries = 0;

	for (unsigned int r = 0; r <= runs; r++) {	/* run 0 warms up */
		struct pt_event_attr attr = { 0 };
		struct pt_aux *aux;
		double t0, t1, t2, t3;

		t0 = now();
		aux = pt_aux_alloc(0, size, max_order, false, GFP_KERNEL);
		t1 = now();
		if (!aux || pt_event_init(&event, &attr, aux, 0))
			die("buffer setup failed");
		t2 = now();
		if (!r)		/* the warm-up counts the tables, untimed */
			count_topa(event.buf, &tables, &entries);
		buffer_teardown(aux);
		t3 = now();
		if (!r)
			continue;
		ta[r - 1] = t1 - t0;
		ti[r - 1] = t2 - t1;
		tf[r - 1] = t3 - t2;
		tt[r - 1] = t3 - t0;
	}
	printf("mode=setup size=%llu max_order=%u runs=%u setups=%u tables=%u entries=%lu "
	       "aux_alloc_ms=%.3f event_init_us=%.1f teardown_us=%.1f total_ms=%.3f\n",
	       size, max_order, runs, runs + 1, tables, entries,
	       median(ta, runs) * 1e3,
	       median(ti, runs) * 1e6, median(tf, runs) * 1e6, median(tt, runs) * 1e3);
	return 0;
}

int main(int argc, char **argv)
{
	u64 size = 64 << 10;
	unsigned int max_order = 10, runs = 5;
	unsigned long pmis = 2000;
	const char *mode = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--max-order") && i + 1 < argc)
			max_order = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--pmis") && i + 1 < argc)
			pmis = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = (unsigned int)strtoul(argv[++i], NULL, 0);
		else
			mode = "";
	}
	if ((strcmp(mode, "pmi") && strcmp(mode, "setup")) || !pmis || !runs ||
	    size < PAGE_SIZE || (size & (size - 1))) {
		fprintf(stderr, "usage: %s pmi|setup [--size BYTES (a power of two)] [--max-order N] "
			"[--pmis N] [--runs N]\n", argv[0]);
		return 2;
	}
	setup_memory(size);
	setup_cpu();
	return !strcmp(mode, "pmi") ? run_pmi(size, max_order, pmis) : run_setup(size, max_order, runs);
}
