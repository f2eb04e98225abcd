// SPDX-License-Identifier: MIT
/* kernel_main: bring the machine up after ExitBootServices, run the job. */
#include <topaz/bootinfo.h>
#include <topaz/kernel.h>
#include <topaz/cmdline.h>
#include <topaz/cpu.h>
#include <topaz/gdt.h>
#include <topaz/crash.h>
#include <topaz/symbols.h>
#include <topaz/traps.h>
#include <topaz/paging.h>
#include <topaz/apic.h>
#include <topaz/time.h>
#include <topaz/mm.h>
#include <topaz/ktest.h>
#include <topaz/power.h>
#include <topaz/arch.h>
#include <topaz/workload.h>
#include <topaz/slab.h>
#include <topaz/probe.h>
#include <topaz/tracing.h>
#include <topaz/trace_engine.h>
#include <topaz/smp.h>

#ifndef TOPAZ_VERSION
#define TOPAZ_VERSION "unknown"
#endif

extern const u8 __build_id_note[] __hidden;

static const char *test_spec;
KPARAM_STR("test", test, &test_spec, "run in-kernel tests: all, suite names, or suite.name patterns");
static const char *run_spec;
KPARAM_STR("run", run, &run_spec, "run workloads: NAME[,NAME...] (run=list shows them)");
static bool mm_stats;
KPARAM_BOOL("mm.stats", mm_stats, &mm_stats, "print page allocator statistics at power-off too");

static const char *const mem_type_names[EFI_NR_TYPES] = {
	"reserved", "loader code", "loader data", "boot services code", "boot services data",
	"runtime code", "runtime data", "conventional", "unusable", "ACPI reclaim", "ACPI NVS",
	"MMIO", "MMIO port", "PAL code", "persistent", "unaccepted",
};

static void print_build_id(void)
{
	const u32 *n = (const u32 *)__build_id_note;	/* namesz, descsz, type, "GNU\0" */
	const u8 *id = __build_id_note + 16;

	printk("topaz: build id ");
	for (u32 i = 0; i < n[1] && i < 20; i++)
		pr_cont("%02x", id[i]);
	pr_cont("\n");
}

/* Summarise the memory map and give the usable RAM to the page allocator. */
static void memory_init(const struct boot_info *bi)
{
	u64 pages[EFI_NR_TYPES] = { 0 }, count[EFI_NR_TYPES] = { 0 };
	u64 run_start = 0, run_end = 0;

	if (!bi->fw_pool)	/* else the firmware phase's range is its first */
		page_alloc_init();
	for (const u8 *p = bi->mmap; p < (const u8 *)bi->mmap + bi->mmap_size; p += bi->desc_size) {
		const struct efi_mem_desc *d = (const void *)p;
		u64 start = d->phys_start, end = start + (d->num_pages << PAGE_SHIFT);
		u32 t = d->type < EFI_NR_TYPES ? d->type : EFI_RESERVED;

		pages[t] += d->num_pages;
		count[t]++;
		/* Boot-services memory is free now; keep loader memory (us, our
		 * stacks and page tables) and the first MiB (firmware leftovers). */
		if ((t != EFI_CONVENTIONAL && t != EFI_BOOT_CODE && t != EFI_BOOT_DATA) ||
		    !(d->attribute & EFI_MEMORY_WB))
			continue;
		if (start < 0x100000)
			start = 0x100000;
		if (end <= start)
			continue;
		if (start == run_end) {
			run_end = end;
			continue;
		}
		if (run_end > run_start)
			page_alloc_add_range(run_start, run_end);
		run_start = start;
		run_end = end;
	}
	if (run_end > run_start)
		page_alloc_add_range(run_start, run_end);

	printk("memory map: %llu descriptors of %llu bytes (version %u)\n",
	       bi->mmap_size / bi->desc_size, bi->desc_size,
	       bi->desc_version);
	for (int t = 0; t < EFI_NR_TYPES; t++)
		if (count[t])
			printk("memory map: %-20s %6llu KiB in %llu ranges\n", mem_type_names[t],
			       pages[t] * 4, count[t]);
	page_alloc_show_stats();
}

/* run=a,b,c: each workload in turn; returns how many could not run. */
static int run_workloads(const char *spec)
{
	if (!strcmp(spec, "list")) {
		workload_list();
		return 0;
	}
	if (!strcmp(spec, "demo"))	/* and with several CPUs, work on each of them */
		spec = num_online_cpus() > 1 ? "sort,recursion,dispatch,slab,timer,firmware,psort" :
		       "sort,recursion,dispatch,slab,timer,firmware";
	return workload_run_list("run", spec, workload_find, workload_list, "workload");
}

void kernel_main(struct boot_info *bi)
{
	uintptr_t ist[NR_IST_STACKS];
	struct cmdline_result cr = bi->cmdline_result;	/* parsed by efi_main */
	u64 ready;
	int failed, pt_err, smp_err;

	printk("\ntopaz %s: a unikernel around an Intel PT driver\n", TOPAZ_VERSION);
	print_build_id();
	printk("topaz: loaded at %#lx, %llu KiB, %u symbols; ExitBootServices took %u tries\n",
	       (unsigned long)bi->image_base, (unsigned long long)(bi->image_size >> 10), ksym_count(),
	       bi->ebs_tries);
	printk("topaz: command line (from %s): \"%s\", %u applied, %u errors, %u unknown keys\n",
	       bi->cmdline_source, cmdline_get(), cr.applied, cr.errors, cr.unknown);
	if (cmdline_help_asked() && !run_spec && !test_spec) {
		/* help alone is a question, not a job: no self-tests after it */
		printk("topaz: 'help' without run= or test=: nothing else to do\n");
		power_off(!cmdline_fails_boot(&cr) && !cr.unknown);
	}
	printk("topaz: ACPI RSDP at %#llx\n", bi->rsdp);

	for (int i = 0; i < NR_IST_STACKS; i++)
		ist[i] = ist_stack_top(bi, i);
	gdt_init(0, ist);
	idt_init();
	tsc_calibrate();
	paging_init(bi);
	/* nr_cpu_ids before the slab lays its per-CPU arrays out */
	smp_err = smp_prepare(bi);
	memory_init(bi);
	kmem_cache_init();
	pt_ptwrite_register();
	probes_init();
	/* Before the CPU report, so it shows what the driver will see. */
	pt_unit_boot();
	cpu_identify();
	cpu_report();
	if (pt_unit_caps_asked() && !run_spec && !test_spec) {
		/* a question about the CPU, as help is about the line */
		printk("topaz: 'pt.caps' without run= or test=: nothing else to do\n");
		power_off(!cmdline_fails_boot(&cr) && !cr.unknown);
	}
	apic_init();
	timer_init();
	local_irq_enable();
	smp_boot_cpus();
	pt_unit_boot_cpus();	/* each CPU its trace unit */

	ready = rdtsc();
	printk("topaz: ready %llu ms after EFI entry (%llu TSC cycles at %llu kHz)\n",
	       tsc_to_ns(ready - bi->tsc_at_entry) / 1000000,
	       ready - bi->tsc_at_entry, tsc_khz);

	if (bi->fw_traced) {
		/* one container per boot: it holds the firmware phase's trace */
		pr_info("pt: the firmware phase's trace was written; the kernel phase is not traced\n");
		pt_err = 0;
	} else {
		pt_err = pt_boot_init(bi);
	}
	if (pt_boot_active())
		trace_engine_init();	/* registers when the software trace unit answers */
	crash_if_requested();
	if (run_spec) {
		failed = run_workloads(run_spec);
		if (test_spec)
			failed += ktest_run(test_spec) != 0;
	} else {
		/* The default job, until the traced demo: the self-tests. */
		failed = ktest_run(test_spec ? test_spec : "all");
	}
	pt_boot_finish();
	failed += bi->fw_failed;	/* fw.then=kernel: the firmware phase's result counts */
	/* a word not applied: what it asked for may not have happened */
	failed += cmdline_fails_boot(&bi->cmdline_result);
	if (pt_err) {
		/* a trace asked for and not taken: the job did not do what it was for */
		pr_err("topaz: pt=on, but no trace was taken (error %d): the boot fails\n", pt_err);
		failed++;
	}
	if (smp_err) {
		pr_err("topaz: cpus= asked for more CPUs than there are: the boot fails\n");
		failed++;
	}
	if (mm_stats)
		page_alloc_show_stats();
	power_off(failed == 0);
}
