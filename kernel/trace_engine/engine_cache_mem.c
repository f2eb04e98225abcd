// SPDX-License-Identifier: MIT
/*
 * The code caches' memory (pt.step=translate): for every CPU a region (data,
 * records, lookup table, code) and a site table, the code part made
 * executable and the page after the records a guard (the #PF of a full
 * buffer); given back at the end with the pages' flags as they were.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/tracing.h>
#include "engine.h"
#include <topaz/pt_model.h>
#include <topaz/paging.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include <topaz/arch.h>
#include <topaz/smp.h>

#ifndef TOPAZ_HOSTED
static void flush_tlb_here(void *unused)
{
	write_cr3(read_cr3());
}

static u64 code_nx;	/* the code part's NX before engine_cache_init() (the firmware's tables may have none) */

/*
 * Every CPU's region and sites freed, their pages' flags as they were
 * before, checked: a region whose flags did not go back is kept, not handed
 * to the allocator with its guard page missing. Returns the regions kept.
 */
static unsigned int xlat_free(void)
{
	unsigned int cpu, kept = 0, sorder = get_order(sizeof(struct xlat_site) * XLAT_MAX_SITES);

	for_each_possible_cpu(cpu) {
		struct engine *e = per_cpu_ptr(engines, cpu);
		struct xlat_cpu *x = e->xc;

		if (!x)
			continue;
		e->xc = NULL;
		pt_model_lend_retstack(cpu, NULL);	/* back in the trace unit */
		if (code_nx)
			set_memory_flags((uintptr_t)x->code, (uintptr_t)x->code_end, PTE_NX, 0);
		set_memory_flags((uintptr_t)x->rec_guard, (uintptr_t)x->rec_guard + PAGE_SIZE, PTE_P, 0);
		if ((paging_lookup((uintptr_t)x->code, NULL) & PTE_NX) != code_nx ||
		    (paging_lookup((uintptr_t)x->code_end - 1, NULL) & PTE_NX) != code_nx ||
		    !paging_lookup((uintptr_t)x->rec_guard, NULL)) {
			pr_err("translate: CPU %u's code cache at %#lx: its pages' flags did not go back (executable, or the guard page missing): kept, not freed\n",
			       cpu, (unsigned long)(uintptr_t)x);
			kept++;
			continue;
		}
		free_pages((uintptr_t)x->sites, sorder);
		free_pages((uintptr_t)x, XLAT_REGION_ORDER);
	}
	return kept;
}

/* CPU @cpu's region and sites, its code executable, its guard page absent. */
static int cache_init_cpu(unsigned int cpu, unsigned int sorder)
{
	struct engine *e = per_cpu_ptr(engines, cpu);
	uintptr_t region = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, XLAT_REGION_ORDER);
	uintptr_t sites = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, sorder);
	struct xlat_cpu *x = (struct xlat_cpu *)region;
	int err;

	if (!region || !sites) {
		if (region)
			free_pages(region, XLAT_REGION_ORDER);
		if (sites)
			free_pages(sites, sorder);
		return -ENOMEM;
	}
	xlat_cpu_init(x, (u8 *)region, (struct xlat_site *)sites);
	e->xc = x;	/* xlat_free() puts its flags back, should this fail */
	pt_model_lend_retstack(cpu, &x->rs);	/* the stubs push and pop it inline */
	code_nx = paging_lookup((uintptr_t)x->code, NULL) & PTE_NX;
	err = set_memory_flags((uintptr_t)x->code, (uintptr_t)x->code_end, 0, PTE_NX);
	if (!err)
		err = set_memory_flags((uintptr_t)x->rec_guard,
				       (uintptr_t)x->rec_guard + PAGE_SIZE, 0, PTE_P);
	if (err)
		return err;
	/*
	 * A batch's packets go out with interrupts off (in the #PF of a
	 * full buffer): a vector PMI waits for its end. At most a 128th
	 * of the ring a batch (about a byte a branch, and far below a
	 * ring's worth even at 64 bytes a record), so the PMI comes
	 * before the ring fills: that is the skid. And at most 2048
	 * records: the last batch goes at the window's stop.
	 */
	xlat_set_batch(x, (unsigned int)min(pt_session_buffer_size() / 128, (u64)XLAT_BATCH_MAX));
	return 0;
}

/**
 * engine_cache_init() - pt.step=translate: every CPU's code cache
 *
 * Each CPU translates into its own: nothing is shared or locked.
 *
 * Return: 0, or a negative errno with nothing kept (-ENODEV: the page
 * tables are the firmware's).
 */
int engine_cache_init(void)
{
	unsigned int cpu, sorder = get_order(sizeof(struct xlat_site) * XLAT_MAX_SITES);
	int err = 0;

	engine_xenv = (struct xlat_env){
		.read = branch_insn_read, .end_ip = (uintptr_t)pt_trace_end,
		.rt_link = (uintptr_t)xlat_rt_link, .rt_lookup = (uintptr_t)xlat_rt_lookup,
		.rt_flush = (uintptr_t)xlat_rt_flush,
	};
	for_each_possible_cpu(cpu) {
		err = cache_init_cpu(cpu, sorder);
		if (err)
			break;
	}
	if (err) {
		xlat_free();
		return err;
	}
	on_each_cpu(flush_tlb_here, NULL, true);	/* no CPU keeps the NX */
	return 0;
}

/**
 * engine_cache_exit() - every CPU's code cache given back
 *
 * Return: 0, or -EIO when a region's pages' flags did not go back (kept).
 */
int engine_cache_exit(void)
{
	if (xlat_free())
		return -EIO;
	pr_info("translate: the code caches given back, their pages' flags as before (%s, the guard pages present)\n",
		code_nx ? "not executable" : "executable: they had no NX");
	return 0;
}
#else
int engine_cache_init(void)
{
	return -EOPNOTSUPP;	/* the hosted tests script stops, not code */
}

int engine_cache_exit(void)
{
	return 0;
}
#endif
