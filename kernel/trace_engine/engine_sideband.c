// SPDX-License-Identifier: MIT
/*
 * What the trace engine hands over at the end of a trace: the code pages
 * outside the kernel image that traced code ran (firmware), for the
 * session's sideband, and on request the code cache's map back to the
 * original code (pt.translate_map, for the fidelity oracle).
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/tracing.h>
#include "engine.h"
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>

extern const char ImageBase[] __hidden, __image_end[] __hidden;

/* pt.translate_map: print every CPU's blocks at the end (the fidelity oracle
 * reads QEMU's log of the cache back to the original instructions) */
static bool xlat_map;
KPARAM_BOOL("pt.translate_map", pt_translate_map, &xlat_map,
	    "pt.step=translate: print each CPU's translated blocks at the end (for tests/qemu/oracle.py)");

static bool in_image(u64 ip)
{
	return ip >= (uintptr_t)ImageBase && ip < (uintptr_t)__image_end;
}

/**
 * engine_note_foreign() - traced code ran the instruction at @ip
 * @e: this CPU's engine
 * @ip: its address
 *
 * Code outside the kernel (firmware) goes to the sideband, page by page.
 */
void engine_note_foreign(struct engine *e, u64 ip)
{
	u64 page = ip & PAGE_MASK;

	if (in_image(ip) || trace_module_find(ip))
		return;	/* a known module goes to the sideband whole, named */
	for (unsigned int i = 0; i < e->st.foreign_pages; i++)
		if (e->foreign[i] == page)
			return;
	if (e->st.foreign_pages < MAX_FOREIGN)
		e->foreign[e->st.foreign_pages++] = page;
}

/**
 * engine_note_range() - traced code runs the code from @start to @end
 * @e: this CPU's engine
 * @start: its first byte
 * @end: its last byte (inclusive)
 */
__noinline void engine_note_range(struct engine *e, u64 start, u64 end)
{
	for (u64 p = start & PAGE_MASK; p <= end; p += PAGE_SIZE)
		engine_note_foreign(e, p < start ? start : p);
}

/*
 * The map from cache code to original code, one line a block: its body
 * (entry..stub) is the original code from start, byte for byte; the stub's
 * first instruction (at stub) stands for the branch at ip (an exit's INT3
 * for nothing: the instruction at ip then ran on the CPU).
 */
static void xlat_print_map(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct xlat_cpu *x = per_cpu_ptr(engines, cpu)->xc;

		if (!x)
			continue;
		pr_info("xlat-map: cpu=%u code=%#lx-%#lx blocks=%u resets=%llu\n", cpu,
			(unsigned long)(uintptr_t)x->code, (unsigned long)(uintptr_t)x->code_end,
			x->nr_sites, x->st.resets);
		if (x->tnt_put)	/* instrumentation, as the runtime (xlat_rt.S) */
			pr_info("xlat-map: cpu=%u runtime=%#lx-%#lx\n", cpu,
				(unsigned long)(uintptr_t)x->tnt_put,
				(unsigned long)(uintptr_t)(x->region + x->put_end));
		for (u32 i = 0; i < x->nr_sites; i++) {
			const struct xlat_site *s = &x->sites[i];
			u64 base = (uintptr_t)x->region;

			pr_info("xlat-map: cpu=%u entry=%#llx stub=%#llx end=%#llx start=%#llx ip=%#llx kind=%s\n",
				cpu, base + s->entry,
				base + s->stub, base + s->end,
				s->start, s->ip,
				s->kind == XK_EXIT ? "exit" : "branch");
		}
	}
}

/* Every CPU's foreign pages into @pages, each once; modules listed since left out. Returns how many. */
static unsigned int collect_foreign(u64 *pages)
{
	unsigned int n = 0, cpu;

	for_each_possible_cpu(cpu) {
		const struct engine *e = per_cpu_ptr(engines, cpu);

		for (unsigned int i = 0; i < e->st.foreign_pages; i++) {
			unsigned int j = 0;

			/* a module listed since (an image the traced code loaded) */
			if (trace_module_find(e->foreign[i]))
				continue;

			while (j < n && pages[j] != e->foreign[i])
				j++;
			if (j == n)
				pages[n++] = e->foreign[i];
		}
	}
	return n;
}

/**
 * engine_write_sideband() - the session's sideband op: the foreign code pages
 * @add: the session's writer of one image
 *
 * Code pages outside the image that any CPU ran: each once, runs of pages
 * as one image.
 */
void engine_write_sideband(trace_image_fn add)
{
	if (xlat_map && engine_step_mode == TRACE_STEP_TRANSLATE)
		xlat_print_map();

	unsigned int order = get_order(sizeof(u64) * MAX_FOREIGN * nr_cpu_ids), n;
	u64 *pages = (u64 *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);

	if (!pages) {
		pr_err("no memory to list the firmware pages: the sideband has none\n");
		return;
	}
	n = collect_foreign(pages);
	for (unsigned int i = 0; i < n; i++) {
		u64 start = pages[i], end = start + PAGE_SIZE;
		bool more, covered = false;

		do {
			more = false;
			for (unsigned int j = 0; j < n; j++)
				if (pages[j] == end) {
					end += PAGE_SIZE;
					more = true;
				}
		} while (more);
		for (unsigned int j = 0; j < n; j++)
			if (pages[j] == start - PAGE_SIZE)
				covered = true;
		if (!covered)
			add("firmware", start, (const void *)start, end - start);
	}
	free_pages((uintptr_t)pages, order);
}
