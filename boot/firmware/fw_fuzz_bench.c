// SPDX-License-Identifier: MIT
/*
 * fw.fuzz.bench=N: what tracing costs the fuzz loop (make bench,
 * tests/bench/fuzz_speed.sh). The campaign's first N mutants run untraced,
 * then the same N (the same seed, nothing kept) traced with coverage, in
 * the same boot; every execution is timed in three parts: the target in its
 * trace window, the trace's stop (pt_trace_end) and the window's coverage
 * decode (pt_coverage_window_end). The coverage decoder runs inside all
 * three (the drains of a PMI in the target, the stop's drain): its own
 * time (pt_coverage_ticks()) is a fourth figure, part of the other three.
 * Medians and rates as result: lines.
 */
#include "internal.h"
#include <topaz/arch.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/slab.h>
#include <topaz/time.h>
#include <topaz/errno.h>
#include <topaz/tracing.h>

#define BENCH_MAX	20000

static u64 bench_runs;
KPARAM_UINT("fw.fuzz.bench", fw_fuzz_bench, &bench_runs, 0, BENCH_MAX,
	    "fw.fuzz: time the first N mutants untraced, then the same N traced with coverage, and stop (make bench)");

/* A pass's samples: one per execution, TSC ticks. */
struct bench_pass {
	u64 *target, *stop, *decode, *cov;
	u32 n, cap;
	u64 execs, t0, ticks;
};

static struct {
	bool timing;
	u64 t[FW_FUZZ_T_NR];
	struct bench_pass pass[2];	/* untraced, traced */
	struct bench_pass *cur;
} bench;

u64 fw_fuzz_bench_runs(void)
{
	return bench_runs;
}

void fw_fuzz_stamp(unsigned int i)
{
	if (!bench.timing)
		return;
	bench.t[i] = rdtsc();
	if (i == FW_FUZZ_T_START)
		bench.t[FW_FUZZ_T_COV0] = pt_coverage_ticks();
	else if (i == FW_FUZZ_T_DECODED)
		bench.t[FW_FUZZ_T_COV1] = pt_coverage_ticks();
}

void fw_fuzz_bench_sample(void)
{
	struct bench_pass *p = bench.cur;

	if (!bench.timing || !p || p->n >= p->cap)
		return;
	p->target[p->n] = bench.t[FW_FUZZ_T_RAN] - bench.t[FW_FUZZ_T_START];
	p->stop[p->n] = bench.t[FW_FUZZ_T_STOPPED] - bench.t[FW_FUZZ_T_RAN];
	p->decode[p->n] = bench.t[FW_FUZZ_T_DECODED] - bench.t[FW_FUZZ_T_STOPPED];
	p->cov[p->n] = bench.t[FW_FUZZ_T_COV1] - bench.t[FW_FUZZ_T_COV0];
	p->n++;
}

static void bench_free(void)
{
	for (unsigned int i = 0; i < 2; i++) {
		kfree(bench.pass[i].target);
		kfree(bench.pass[i].stop);
		kfree(bench.pass[i].decode);
		kfree(bench.pass[i].cov);
		memset(&bench.pass[i], 0, sizeof(bench.pass[i]));
	}
	bench.cur = NULL;
	bench.timing = false;
}

int fw_fuzz_bench_begin(bool traced, u64 execs)
{
	struct bench_pass *p = &bench.pass[traced];
	/* calibration runs a new-coverage input twice: room for that */
	u32 cap = (u32)bench_runs * 2;

	p->target = kmalloc(cap * sizeof(u64), GFP_KERNEL);
	p->stop = kmalloc(cap * sizeof(u64), GFP_KERNEL);
	p->decode = kmalloc(cap * sizeof(u64), GFP_KERNEL);
	p->cov = kmalloc(cap * sizeof(u64), GFP_KERNEL);
	if (!p->target || !p->stop || !p->decode || !p->cov) {
		pr_err("fw.fuzz.bench=%llu: no memory for the samples (fw.mem=)\n", bench_runs);
		bench_free();
		return -ENOMEM;
	}
	p->cap = cap;
	p->n = 0;
	p->execs = execs;
	bench.cur = p;
	bench.timing = true;
	p->t0 = rdtsc();
	return 0;
}

void fw_fuzz_bench_end(u64 execs)
{
	struct bench_pass *p = bench.cur;

	if (!p)
		return;
	p->ticks = rdtsc() - p->t0;
	p->execs = execs - p->execs;
	bench.timing = false;
	bench.cur = NULL;
}

/* Heapsort: no allocation, and N log N at 20000 samples in the guest. */
static void sift_down(u64 *v, u32 i, u32 n)
{
	for (;;) {
		u32 c = 2 * i + 1;
		u64 tmp;

		if (c >= n)
			return;
		if (c + 1 < n && v[c + 1] > v[c])
			c++;
		if (v[i] >= v[c])
			return;
		tmp = v[i];
		v[i] = v[c];
		v[c] = tmp;
		i = c;
	}
}

static u64 median_ns(u64 *v, u32 n)
{
	if (!n)
		return 0;
	for (u32 i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (u32 end = n - 1; end > 0; end--) {
		u64 tmp = v[0];

		v[0] = v[end];
		v[end] = tmp;
		sift_down(v, 0, end);
	}
	return tsc_to_ns(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

/* The mean of @v in ns (before median_ns() sorts it). */
static u64 mean_ns(const u64 *v, u32 n)
{
	u64 sum = 0;

	for (u32 i = 0; i < n; i++)
		sum += v[i];
	return n ? tsc_to_ns(sum / n) : 0;
}

static u64 per_second(u64 execs, u64 ticks)
{
	u64 ns = tsc_to_ns(ticks);

	return ns ? execs * 1000000000ull / ns : 0;
}

void fw_fuzz_bench_report(const char *name)
{
	struct bench_pass *u = &bench.pass[0], *t = &bench.pass[1];
	u64 urate = per_second(u->execs, u->ticks), trate = per_second(t->execs, t->ticks);
	/* means first: the medians sort the samples */
	u64 tmean = mean_ns(t->target, t->n), smean = mean_ns(t->stop, t->n);
	u64 dmean = mean_ns(t->decode, t->n), cmean = mean_ns(t->cov, t->n);
	u64 per_exec = t->execs ? tsc_to_ns(t->ticks) / t->execs : 0;
	u64 parts = tmean + smean + dmean;
	u64 umed = median_ns(u->target, u->n);
	u64 tmed = median_ns(t->target, t->n), smed = median_ns(t->stop, t->n);
	u64 dmed = median_ns(t->decode, t->n), cmed = median_ns(t->cov, t->n);

	printk("result: fuzz bench target=%s runs=%llu untraced_execs=%llu untraced_rate=%llu "
	       "traced_execs=%llu traced_rate=%llu traced_per_mille=%llu\n", name, bench_runs,
	       u->execs, urate, t->execs, trate, urate ? trate * 1000 / urate : 0);
	printk("result: fuzz bench split target=%s untraced_target_ns=%llu target_ns=%llu stop_ns=%llu "
	       "decode_ns=%llu decoder_ns=%llu (medians of %u and %u executions)\n", name, umed, tmed,
	       smed, dmed, cmed, u->n, t->n);
	printk("result: fuzz bench mean target=%s per_exec_ns=%llu target_ns=%llu stop_ns=%llu decode_ns=%llu "
	       "loop_ns=%llu decoder_ns=%llu (the loop: the window's start, mutation, bitmap compare, "
	       "calibration; the decoder: the coverage decoder's time, inside the target's PMIs, the stop "
	       "and the decode)\n", name, per_exec, tmean, smean, dmean,
	       per_exec > parts ? per_exec - parts : 0, cmean);
	bench_free();
}
