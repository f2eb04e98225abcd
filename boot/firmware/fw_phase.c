// SPDX-License-Identifier: MIT
/*
 * The firmware phase: trace firmware code while boot services are live.
 *
 * The firmware owns the machine here, so topaz borrows what it needs and
 * gives it back: memory for its allocators from AllocatePages; the #DB, #BP
 * and PMI vectors claimed through EFI_CPU_ARCH_PROTOCOL.RegisterInterruptHandler
 * (a vector the firmware uses is refused, and said so); the local APIC as the
 * firmware set it up, with LVTPC saved and restored. While the phase runs,
 * topaz's IDT stands in for the firmware's with every vector topaz does not
 * handle passed on to the firmware's own handler (idt_firmware_enter()), so
 * the firmware's timer interrupts reach it as before and show in the trace
 * as asynchronous events. The kernel's allocators, trace session, software
 * trace unit and engine then run as they do after ExitBootServices.
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include <efidebug.h>
#include <topaz/fw_phase.h>
#include <topaz/bootinfo.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/traps.h>
#include <topaz/apic.h>
#include <topaz/time.h>
#include <topaz/mm.h>
#include <topaz/slab.h>
#include <topaz/probe.h>
#include <topaz/cpu.h>
#include <topaz/smp.h>
#include <topaz/pt.h>
#include <topaz/tracing.h>
#include <topaz/trace_engine.h>
#include <topaz/power.h>
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/paging.h>

struct fw_ctx fw;

static const char *run_spec;
KPARAM_STR("fw.run", fw_run, &run_spec,
	   "firmware phase (before ExitBootServices): firmware workloads NAME[,NAME...], all, or list");
enum { THEN_EXIT, THEN_KERNEL };
static int then_mode = THEN_EXIT;
static const char *const then_names[] = { "exit", "kernel", NULL };
KPARAM_ENUM("fw.then", fw_then, &then_mode, then_names,
	    "after the firmware phase: exit (power off with its result) or kernel (go on booting)");
static u64 pmi_vector = PT_PMI_VECTOR;
KPARAM_UINT("fw.vector", fw_vector, &pmi_vector, 32, 254,
	    "firmware phase: the PMI's vector, claimed from the firmware (0xfe; OVMF's timer has 0x20)");
static u64 pool_mib = 64;
KPARAM_UINT("fw.mem", fw_mem, &pool_mib, 8, 4096,
	    "firmware phase: MiB taken from the firmware (AllocatePages) for topaz's allocators");
static const char *image_spec;
KPARAM_STR("fw.image", fw_image, &image_spec,
	   "firmware phase: run an EFI image from the boot volume, traced: \"\\EFI\\tools\\app.efi args\"");
static u64 timeout_ms;
KPARAM_UINT("fw.timeout", fw_timeout, &timeout_ms, 0, 24 * 3600 * 1000ull,
	    "firmware phase: ms fw.image may run before its trace is ended and written (0: no limit)");
static bool oracle_sync;
KPARAM_BOOL("fw.oracle", fw_oracle, &oracle_sync,
	    "testing: before the traced windows, wait for a key (the fidelity oracle's host turns QEMU's log on), then have every module's code translated again");
static bool fake_no_mem_attrs;
KPARAM_BOOL("fw.no_mem_attrs", fw_no_mem_attrs, &fake_no_mem_attrs,
	    "fault injection: act as if the firmware's SetMemoryAttributes were unsupported (no code cache: branch-step)");
static bool fake_no_cpu_arch;
KPARAM_BOOL("fw.no_cpu_arch", fw_no_cpu_arch, &fake_no_cpu_arch,
	    "fault injection: act as if the firmware had no EFI_CPU_ARCH_PROTOCOL");

/* EFI_CPU_ARCH_PROTOCOL (UEFI PI specification, volume 2), the part used here. */
typedef void (EFIAPI *cpu_interrupt_handler)(EFI_EXCEPTION_TYPE type, EFI_SYSTEM_CONTEXT ctx);
struct efi_cpu_arch {
	void *flush_data_cache, *enable_interrupt, *disable_interrupt, *get_interrupt_state, *init;
	EFI_STATUS (EFIAPI *register_interrupt_handler)(struct efi_cpu_arch *self,
							EFI_EXCEPTION_TYPE type,
							cpu_interrupt_handler handler);
	void *get_timer_value;
	EFI_STATUS (EFIAPI *set_memory_attributes)(struct efi_cpu_arch *self, EFI_PHYSICAL_ADDRESS base,
						   UINT64 length, UINT64 attributes);
	UINT32 number_of_timers, dma_buffer_alignment;
};
#define EFI_MEMORY_RO_ATTR	0x20000ull	/* UEFI 2.5's EFI_MEMORY_RO (gnu-efi has none) */
static EFI_GUID cpu_arch_guid = { 0x26baccb1, 0x6f42, 0x11d4,
				  { 0xbc, 0xe7, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81 } };
static struct efi_cpu_arch *cpu_arch;

bool fw_phase_wanted(void)
{
	return (run_spec && *run_spec) || (image_spec && *image_spec) || fw_fuzz_wanted();
}

/*
 * The firmware's handler for a claimed vector runs only while the
 * firmware's IDT is loaded (before or after the phase): nothing of topaz's
 * should arrive then. Said, not silent; a stray PMI is acknowledged.
 */
static u64 strays[3];
static EFI_EXCEPTION_TYPE claimed_vector(unsigned int i);

static void EFIAPI stray(EFI_EXCEPTION_TYPE type, EFI_SYSTEM_CONTEXT ctx)
{
	u64 rip = ctx.SystemContextX64 ? ctx.SystemContextX64->Rip : 0;

	if (type == claimed_vector(2)) {
		strays[2]++;
		if (type != X86_TRAP_NMI)
			apic_eoi();
		return;
	}
	strays[type == X86_TRAP_BP]++;
	printk(KERN_ERR "fw: %s at %#llx while the firmware's IDT was loaded: not topaz's to handle\n",
	       trap_name((unsigned int)type, NULL), rip);
	if (type == X86_TRAP_DB && ctx.SystemContextX64)
		ctx.SystemContextX64->Rflags &= ~(u64)X86_EFLAGS_TF;
}

static const EFI_EXCEPTION_TYPE claimed[] = { X86_TRAP_DB, X86_TRAP_BP, -1 /* the PMI's */ };

/* The PMI comes as an NMI with pt.pmi=nmi: then NMI is the vector claimed. */
static EFI_EXCEPTION_TYPE claimed_vector(unsigned int i)
{
	if (claimed[i] >= 0)
		return claimed[i];
	return pt_boot_pmi_nmi() ? X86_TRAP_NMI : (EFI_EXCEPTION_TYPE)pmi_vector;
}

static void release_vectors(unsigned int n)
{
	while (n--)
		cpu_arch->register_interrupt_handler(cpu_arch, claimed_vector(n), NULL);
}

/* #DB, #BP and the PMI's vector, registered with the firmware; -EBUSY names the one refused. */
static int claim_vectors(void)
{
	EFI_STATUS s;

	if (fake_no_cpu_arch ||
	    fw.bs->LocateProtocol(&cpu_arch_guid, NULL, (void **)&cpu_arch) != EFI_SUCCESS) {
		pr_err("the firmware has no EFI_CPU_ARCH_PROTOCOL%s: topaz cannot take #DB, #BP and the PMI from it, so nothing can be traced before ExitBootServices\n",
		       fake_no_cpu_arch ? " (fw.no_cpu_arch)" : "");
		return -ENODEV;
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(claimed); i++) {
		EFI_EXCEPTION_TYPE v = claimed_vector(i);

		s = cpu_arch->register_interrupt_handler(cpu_arch, v, stray);
		if (s != EFI_SUCCESS) {
			pr_err("the firmware refused vector %#llx (%s) to RegisterInterruptHandler: %s (EFI status %#lx)%s\n",
			       (unsigned long long)v, i < 2 ? trap_name((unsigned int)v, NULL) : "the PMI",
			       s == EFI_ALREADY_STARTED ? "a handler of its own has it" : "refused",
			       (unsigned long)s,
			       i == 2 ? "; choose another with fw.vector= (0xf0-0xfe are free on OVMF)" : "");
			release_vectors(i);
			return -EBUSY;
		}
	}
	return 0;
}

/*
 * set_memory_flags() in this phase (the trace engine's code cache and its
 * guard page): the firmware's page tables, changed by the firmware. Its CPU
 * driver gives the range exactly these attributes (no cache attribute: the
 * MTRRs are left alone).
 */
static int fw_set_memory(u64 start, u64 len, u64 flags)
{
	UINT64 attrs = (flags & PTE_P ? 0 : EFI_MEMORY_RP) | (flags & PTE_W ? 0 : EFI_MEMORY_RO_ATTR) |
		       (flags & PTE_NX ? EFI_MEMORY_XP : 0);
	EFI_STATUS s = fake_no_mem_attrs ? EFI_UNSUPPORTED :
		       cpu_arch->set_memory_attributes(cpu_arch, start, len, attrs);

	if (s != EFI_SUCCESS) {
		pr_err("the firmware would not set attributes %#llx on %#llx-%#llx (SetMemoryAttributes: EFI status %#lx%s)\n",
		       (unsigned long long)attrs, start,
		       start + len - 1, (unsigned long)s,
		       fake_no_mem_attrs ? ", fw.no_mem_attrs" : "");
		return s == EFI_UNSUPPORTED ? -EOPNOTSUPP : -EIO;
	}
	return 0;
}

/* The kernel's services, on memory and devices borrowed from the firmware. */
static int environment_init(struct boot_info *bi)
{
	EFI_PHYSICAL_ADDRESS mem = 0xffffffffull;
	u64 pages = pool_mib << (20 - PAGE_SHIFT);
	EFI_STATUS s;

	/* below 4 GiB where it can be (the ToPA entries do not care, the APs would) */
	s = fw.bs->AllocatePages(AllocateMaxAddress, EfiLoaderData, pages, &mem);
	if (s != EFI_SUCCESS)
		s = fw.bs->AllocatePages(AllocateAnyPages, EfiLoaderData, pages, &mem);
	if (s != EFI_SUCCESS) {
		pr_err("fw.mem=%llu: the firmware has no %llu MiB to give (AllocatePages: EFI status %#lx)\n",
		       pool_mib, pool_mib, (unsigned long)s);
		return -ENOMEM;
	}
	smp_prepare(bi);	/* nr_cpu_ids, before the slab lays its CPU arrays out */
	page_alloc_init();
	page_alloc_add_range(mem, mem + (pages << PAGE_SHIFT));
	bi->fw_pool = mem;
	kmem_cache_init();
	pt_ptwrite_register();
	probes_init();
	tsc_calibrate();
	pt_unit_boot();
	cpu_identify();
	apic_attach();
	pt_unit_boot_cpus();	/* the other CPUs stay the firmware's: this one only */
	return 0;
}

/* fw.run=a,b or all: each in its own window (traced when pt=on); returns how many failed. */
static int run_workloads(const char *spec)
{
	static char all[128];

	if (!strcmp(spec, "all")) {
		size_t n = 0;

		for (unsigned int i = 0; i < fw_nr_workloads; i++)
			n += ksnprintf(all + n, sizeof(all) - n, "%s%s", i ? "," : "", fw_workloads[i].name);
		spec = all;
	}
	return workload_run_list("fw.run", spec, fw_workload_find, fw_workload_list,
				 "firmware workload");
}

extern const struct trace_modules fw_trace_modules;

/* What the phase changed, for phase_end() to put back. */
static struct {
	bool active;		/* claimed, IDT in: phase_end() has work */
	u32 lvtpc;
	int failed;
	u64 t0;
	EFI_HANDLE image;	/* fw.image's handle, while it runs */
	EFI_EVENT timer;	/* fw.timeout= */
	EFI_STATUS (EFIAPI *ebs)(EFI_HANDLE image, UINTN key);	/* the firmware's ExitBootServices */
	bool ebs_called;
} ph;
static struct boot_info *fw_bi;
static void hook_load_image(bool on);

/* The sideband and the trailer written, everything back as the firmware had it. */
static void phase_end(void)
{
	unsigned long flags;

	if (!ph.active)
		return;
	ph.active = false;
	/* images the traced code loaded since the start (not inside
	 * ExitBootServices: allocating there would change the memory map) */
	if (fw_bi->fw_traced && !ph.ebs_called)
		fw_modules_scan();
	pt_boot_finish();
	if (trace_engine_exit())	/* its code cache's page attributes back as they were */
		ph.failed++;
	paging_set_firmware_ops(NULL);
	if (fw_bi->fw_traced && pt_boot_writes_file() && fw_write_trace_file())
		ph.failed++;
	fw_bi->fw_phase_active = false;
	flags = local_irq_save();
	idt_firmware_leave();
	apic_write_lvtpc(ph.lvtpc);
	local_irq_restore(flags);
	pt_irq_set_vector(PT_PMI_VECTOR);	/* the kernel's own, should it go on */
	hook_load_image(false);
	release_vectors(ARRAY_SIZE(claimed));
	trace_set_modules(NULL);
	if (strays[0] + strays[1] + strays[2])
		pr_warn("%llu #DB, %llu #BP and %llu PMIs arrived at the firmware's handlers\n",
			strays[0], strays[1],
			strays[2]);
	printk("fw: firmware phase done in %llu ms, %d failure%s\n",
	       tsc_to_ns(rdtsc() - ph.t0) / 1000000, ph.failed,
	       ph.failed == 1 ? "" : "s");
}

/* The boot services table changed: its CRC as the specification wants it. */
void fw_bs_crc(void)
{
	UINT32 crc = 0;

	fw.bs->Hdr.CRC32 = 0;
	fw.bs->CalculateCrc32(fw.bs, fw.bs->Hdr.HeaderSize, &crc);
	fw.bs->Hdr.CRC32 = crc;
}

static void set_ebs(EFI_STATUS (EFIAPI *fn)(EFI_HANDLE, UINTN))
{
	fw.bs->ExitBootServices = (EFI_EXIT_BOOT_SERVICES)fn;
	fw_bs_crc();
}

/*
 * LoadImage while the phase runs (the Shell starting a program, an image
 * loading a driver): the new image is a module from now on, named and its
 * code copied before it runs, so the sideband has it even once unloaded.
 */
static EFI_IMAGE_LOAD orig_load_image;

static EFI_STATUS EFIAPI load_image_hook(BOOLEAN boot_policy, EFI_HANDLE parent,
					 EFI_DEVICE_PATH *path, VOID *src, UINTN size,
					 EFI_HANDLE *handle)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li;
	EFI_STATUS s = orig_load_image(boot_policy, parent, path, src, size, handle);

	if (s == EFI_SUCCESS && fw.bs->HandleProtocol(*handle, &li_guid, (void **)&li) == EFI_SUCCESS) {
		fw_modules_add_copy(li, NULL);
		/* maybe where an image the code cache translated was unloaded */
		trace_engine_code_loaded((uintptr_t)li->ImageBase, li->ImageSize);
	}
	return s;
}

EFI_STATUS fw_load_image_unhooked(BOOLEAN boot_policy, EFI_HANDLE parent, EFI_DEVICE_PATH *path,
				  VOID *src, UINTN size, EFI_HANDLE *handle)
{
	EFI_IMAGE_LOAD load = orig_load_image ? orig_load_image : fw.bs->LoadImage;

	return load(boot_policy, parent, path, src, size, handle);
}

static void hook_load_image(bool on)
{
	if (on && !orig_load_image) {
		orig_load_image = fw.bs->LoadImage;
		fw.bs->LoadImage = load_image_hook;
	} else if (!on && orig_load_image) {
		fw.bs->LoadImage = orig_load_image;
		orig_load_image = NULL;
	}
	fw_bs_crc();
}

/*
 * The image calls ExitBootServices: its trace ends here and is written (the
 * firmware still runs, the modules are still in memory), then the call goes on.
 */
static EFI_STATUS EFIAPI ebs_hook(EFI_HANDLE image, UINTN key)
{
	u64 from = (uintptr_t)__builtin_return_address(0);
	char at[160];

	pt_trace_end();
	set_ebs(ph.ebs);
	pr_info("the image called ExitBootServices from %s: the trace ends there and is written first\n",
		fw_module_format(from, at, sizeof(at)));
	ph.ebs_called = true;
	phase_end();
	printk("result: fw.phase failed=%d\n", ph.failed);
	return ph.ebs(image, key);
}

/*
 * fw.timeout=: the image has run too long; its trace ends where it was.
 * From the timer's interrupt, this runs in an untraced handler: the engine
 * stops at once. From a firmware call the traced image made (RestoreTPL
 * dispatching the event), this runs traced, from the code cache: the trace
 * ends here as a window ends (pt_trace_end()), which takes it out of the
 * cache; an abort would leave it running there untraced until its record
 * buffer's guard page faulted (a #PF in the cache, a panic).
 */
static void EFIAPI timeout_notify(EFI_EVENT ev, void *ctx)
{
	bool in_trap = trap_depth() != 0;
	char at[160];

	if (in_trap)
		pt_trace_abort();
	else
		pt_trace_end();
	pr_err("fw.image=%s: still running after %llu ms (fw.timeout=): at %s; the trace ends there\n",
	       image_spec, (unsigned long long)timeout_ms,
	       in_trap ? fw_module_format(trap_outer_rip(), at, sizeof(at)) : "a firmware call (an event it dispatched)");
	set_ebs(ph.ebs);
	ph.failed++;
	phase_end();
	printk("result: fw.phase failed=%d\n", ph.failed);
	power_off(false);
}

static u64 run_image(void)
{
	UINTN exit_size = 0;
	CHAR16 *exit_data = NULL;
	EFI_STATUS s;

	s = fw.bs->StartImage(ph.image, &exit_size, &exit_data);
	if (exit_data && !ph.ebs_called)
		fw.bs->FreePool(exit_data);
	return s;
}

static const struct workload image_workload = { "image", run_image, "fw.image=", false };

/* fw.image= (loaded): run it (traced when tracing is on), say how it ended. */
static int image_run(void)
{
	EFI_STATUS s;
	u64 t0;

	ph.ebs = (void *)fw.bs->ExitBootServices;
	set_ebs(ebs_hook);
	if (timeout_ms &&
	    (fw.bs->CreateEvent(EVT_TIMER | EVT_NOTIFY_SIGNAL, TPL_CALLBACK, timeout_notify, NULL,
				&ph.timer) != EFI_SUCCESS ||
	     fw.bs->SetTimer(ph.timer, TimerRelative, timeout_ms * 10000) != EFI_SUCCESS)) {
		pr_err("fw.timeout=%llu: the firmware gave no timer event: no time limit\n",
		       timeout_ms);
		ph.timer = NULL;
	}
	t0 = rdtsc();
	/* a fuzz harness is run untraced: its campaign's windows are traced */
	s = pt_boot_active() && !fw_fuzz_image() ? pt_run_traced(&image_workload) : run_image();
	if (ph.ebs_called) {
		/* boot services are gone: nothing of the firmware's may be called */
		pr_err("fw.image=%s: returned (status %#lx) after ExitBootServices: powering off\n",
		       image_spec, (unsigned long)s);
		power_off(!cmdline_fails_boot(&fw_bi->cmdline_result) && ph.failed == 0);
	}
	if (ph.timer)
		fw.bs->CloseEvent(ph.timer);
	set_ebs(ph.ebs);
	printk("fw: run: image %s returned EFI status %#lx in %llu us\n", image_spec, (unsigned long)s,
	       tsc_to_ns(rdtsc() - t0) / 1000);
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: the image returned an error (EFI status %#lx)\n", image_spec,
		       (unsigned long)s);
		return 1;
	}
	return 0;
}

/*
 * fw.oracle: QEMU's log of the firmware's code cannot run from the boot (the
 * firmware runs gigabytes of it before topaz starts). Here the host, told by
 * the marker line, switches the log on through QEMU's monitor and presses a
 * key; then every module (and topaz) is written back as it is, which makes
 * QEMU drop what it translated there: every block the windows run is
 * translated again, and logged with its instructions.
 */
static int oracle_wait(void)
{
	EFI_INPUT_KEY key;
	u64 end = rdtsc() + 120 * 1000 * tsc_khz;

	printk("fw: oracle: waiting for the host (a key)\n");
	while (fw.st->ConIn->ReadKeyStroke(fw.st->ConIn, &key) != EFI_SUCCESS) {
		if (rdtsc() > end) {
			pr_err("fw.oracle: no key from the host within 120 s\n");
			return -ETIMEDOUT;
		}
		fw.bs->Stall(1000);
	}
	printk("fw: oracle: %llu bytes of code written back; the windows start\n",
	       (unsigned long long)fw_modules_touch());
	return 0;
}

int fw_phase_run(struct boot_info *bi, void *image)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	unsigned long flags;

	if (!fw_phase_wanted())
		return 0;
	if (run_spec && !strcmp(run_spec, "list")) {
		/* a question, not a job (as help): the boot goes on only if asked to */
		fw_workload_list();
		if (then_mode == THEN_EXIT)
			power_off(!cmdline_fails_boot(&bi->cmdline_result));
		return 0;
	}
	ph.t0 = rdtsc();
	fw_bi = bi;
	fw.image = image;
	fw.st = bi->system_table;
	fw.bs = fw.st->BootServices;
	fw.rt = fw.st->RuntimeServices;
	fw.self_base = bi->image_base;
	fw.self_size = bi->image_size;
	if (fw.bs->HandleProtocol(image, &li_guid, (void **)&fw.li) != EFI_SUCCESS) {
		pr_err("no loaded-image protocol on topaz's own handle: no firmware phase\n");
		ph.failed++;
		goto out;
	}
	printk("fw: firmware phase: %s%s%s%s%s, boot services live\n", run_spec ? "fw.run=" : "",
	       run_spec ? run_spec : "", run_spec && image_spec ? " " : "",
	       image_spec ? "fw.image=" : "", image_spec ? image_spec : "");
	if (claim_vectors()) {
		ph.failed++;
		goto out;
	}
	if (environment_init(bi)) {
		release_vectors(ARRAY_SIZE(claimed));
		ph.failed++;
		goto out;
	}
	paging_set_firmware_ops(fw_set_memory);	/* the trace engine's code cache */
	pr_info("%u loaded images listed as modules\n", fw_modules_scan());
	trace_set_modules(&fw_trace_modules);
	ph.lvtpc = apic_read_lvtpc();
	pt_irq_set_vector((u8)pmi_vector);
	flags = local_irq_save();
	idt_firmware_enter();
	ph.active = true;
	bi->fw_phase_active = true;
	local_irq_restore(flags);

	/*
	 * fw.image= is loaded before tracing starts: pt.filter may name its
	 * functions (Module!symbol, from the symbol file beside it)
	 */
	if (image_spec && fw_image_load(image_spec, &ph.image)) {
		ph.image = NULL;
		ph.failed++;
	}
	fw_modules_resolver(true);
	if (pt_boot_init(bi))
		ph.failed++;
	fw_modules_resolver(false);	/* the filters are set: module names mean nothing later */
	bi->fw_traced = pt_boot_active();
	if (pt_boot_active())
		trace_engine_init();
	hook_load_image(true);
	if (oracle_sync && oracle_wait())
		ph.failed++;
	if (run_spec)
		ph.failed += run_workloads(run_spec) + fw_fuzz_seeds_failed;
	if (fw_fuzz_wanted() && !fw_fuzz_image())
		ph.failed += fw_fuzz_run_builtin();
	if (ph.image && fw_fuzz_image()) {
		if (fw_fuzz_protocol(true)) {
			ph.failed++;
		} else {
			ph.failed += image_run();
			ph.failed += fw_fuzz_protocol(false);
		}
	} else if (ph.image) {
		ph.failed += image_run();
	} else if (fw_fuzz_image() && !image_spec) {
		pr_err("fw.fuzz=image: the harness is the image fw.image= names: none given\n");
		ph.failed++;
	}
	phase_end();
out:
	printk("result: fw.phase failed=%d\n", ph.failed);
	/* the boot ends here: a word not applied fails it, as kernel_main would */
	if (then_mode == THEN_EXIT)
		power_off(!cmdline_fails_boot(&bi->cmdline_result) && ph.failed == 0);
	return ph.failed;
}
