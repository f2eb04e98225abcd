// SPDX-License-Identifier: MIT
/*
 * pt.coverage=on: each CPU's trace, as the session drains it, also goes
 * through a coverage decoder (kernel/coverage, include/topaz/ptcov.h), which
 * reads the code the trace ran through from memory, as it is now. At the
 * session's end each CPU's blocks, edges and bitmap digest are a "result:"
 * line, which ptdecode --coverage computes again from the container.
 */
#include "session.h"
#include <topaz/ptcov.h>
#include <topaz/errno.h>
#include <topaz/paging.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/percpu.h>
#include <topaz/slab.h>
#include <topaz/arch.h>

/* Per CPU: its decoder, fed only by that CPU's drains (a panic's parked CPUs
 * are drained by the panicking one, which they no longer race with). */
static DEFINE_PER_CPU(struct ptcov *, cov_cpu);
/* TSC ticks in each CPU's decoder (pt_coverage_ticks()) */
static DEFINE_PER_CPU(u64, cov_ticks);

KPARAM_BOOL("pt.coverage", pt_coverage, &pt_session_opts.coverage,
	    "decode each CPU's trace into edge coverage as it is drained; a result: coverage line per CPU at the end");

/* The code at @addr as the traced code saw it: live memory, with the
 * engine's own patches (branch-step's INT3s) seen through. */
static size_t read_code(void *ctx, u64 addr, u8 *buf, size_t len)
{
	const struct trace_engine_ops *e = pt_session_engine();
	u64 room = PAGE_SIZE - (addr & (PAGE_SIZE - 1));

	(void)ctx;
	if (!addr_is_mapped((uintptr_t)addr))
		return 0;
	if (room < len && !addr_is_mapped((uintptr_t)(addr + room)))
		len = (size_t)room;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	if (e && e->see_through)
		e->see_through(addr, buf, len);
	return len;
}

void pt_coverage_open(void)
{
	struct ptcov_config cfg = { .read = read_code };
	unsigned int cpu;

	if (!pt_session_opts.coverage)
		return;
	if (pt_session_opts.snapshot) {
		pr_err("pt.coverage=on: a flight recorder (pt.snapshot) keeps only its last bytes: no coverage\n");
		return;
	}
	for_each_possible_cpu(cpu) {
		if (!pt_session_has_cpu(cpu))
			continue;
		*per_cpu_ptr(cov_cpu, cpu) = ptcov_create(&cfg, GFP_KERNEL);
		if (!*per_cpu_ptr(cov_cpu, cpu))
			pr_err("pt.coverage=on: no memory for CPU %u's coverage decoder: none for that CPU\n", cpu);
	}
}

void pt_coverage_feed(unsigned int cpu, u32 flags, const u8 *p, size_t n)
{
	struct ptcov *c = *per_cpu_ptr(cov_cpu, cpu);
	u64 t0;

	if (!c)
		return;
	t0 = rdtsc();
	if (flags & TPZ_TRACE_LOST)
		ptcov_gap(c, PTCOV_GAP_LOST);
	ptcov_feed(c, p, n);
	if (flags & TPZ_TRACE_TRUNCATED)
		ptcov_gap(c, PTCOV_GAP_LOST);
	*per_cpu_ptr(cov_ticks, cpu) += rdtsc() - t0;
}

u64 pt_coverage_ticks(void)
{
	return *this_cpu_ptr(cov_ticks);
}

void pt_coverage_close(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct ptcov **slot = per_cpu_ptr(cov_cpu, cpu);
		const struct ptcov_stats *st;
		u64 gaps = 0;

		if (!*slot)
			continue;
		ptcov_end_stream(*slot);
		st = ptcov_get_stats(*slot);
		for (int g = 0; g < PTCOV_NR_GAPS; g++)
			gaps += st->gaps[g];
		pr_info("coverage: CPU %u: %llu blocks, %llu edges, %llu instructions in %llu blocks run; "
			"%llu gaps (%llu lost, %llu overflow, %llu desync, %llu no code)\n",
			cpu, st->blocks, st->edges, st->insns, st->transitions, gaps,
			st->gaps[PTCOV_GAP_LOST], st->gaps[PTCOV_GAP_OVF],
			st->gaps[PTCOV_GAP_DESYNC], st->gaps[PTCOV_GAP_NOCODE]);
		pr_info("result: coverage cpu=%u blocks=%llu edges=%llu transitions=%llu insns=%llu digest=%#x "
			"decodes=%llu dropped=%llu\n",
			cpu, st->blocks, st->edges, st->transitions, st->insns,
			ptcov_bitmap_digest(*slot), st->block_decodes,
			st->blocks_dropped + st->edges_dropped);
		ptcov_destroy(*slot);
		*slot = NULL;
	}
}

/* The fuzzer's window: what this CPU reached from here ... */
int pt_coverage_window_begin(void)
{
	struct ptcov *c = *this_cpu_ptr(cov_cpu);

	if (!c)
		return -ENODEV;
	/* the window's bitmap is all a fuzzer asks for: no edge list, half of
	 * a short window's decode (ptcov_set_edge_list()) */
	ptcov_set_edge_list(c, false);
	ptcov_clear(c);
	return 0;
}

/* ... to here: the trace published since is drained (and decoded) first. */
const u8 *pt_coverage_window_end(u32 *size)
{
	struct ptcov *c = *this_cpu_ptr(cov_cpu);

	if (!c)
		return NULL;
	pt_session_drain();
	return ptcov_bitmap(c, size);
}

const u32 *pt_coverage_window_touched(u32 *n)
{
	struct ptcov *c = *this_cpu_ptr(cov_cpu);

	*n = 0;
	return c ? ptcov_bitmap_touched(c, n) : NULL;
}
