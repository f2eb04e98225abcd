// SPDX-License-Identifier: MIT
/*
 * fw.fuzz='s guards and crashes (docs/fuzzing.md): firmware maps all memory
 * and has no sanitizer, so a read past a buffer goes unnoticed. Here:
 *  - the input's last byte ends a page, and the page after it is not present
 *    (fw.fuzz.guard=input, the default);
 *  - fw.fuzz.guard=pool: while an execution runs, the boot services table's
 *    AllocatePool/FreePool and AllocatePages/FreePages are a guarded heap's
 *    (kernel/fuzz/guard_heap.c, as EDK2's HeapGuard): each allocation ends at
 *    a page end before a not-present page, freed memory stays not present
 *    for the last FUZZ_GUARD_QUARANTINE frees;
 *  - fw.fuzz.timeout=MS: an interrupt that returns to an execution past its
 *    deadline ends it there (irq_set_return_hook()).
 * Page attributes change through the firmware (set_memory_flags() reaches
 * its SetMemoryAttributes in this phase). An execution runs under
 * fw_fuzz_guarded(): an exception in it (in the target or in firmware it
 * called), a guard page hit, a bad free or the timeout stops its trace at
 * once and comes back there, with the fault said (struct fw_fuzz_fault).
 */
#define pr_fmt(fmt) "fw.fuzz: " fmt
#include "internal.h"
#include <topaz/fuzz.h>
#include <topaz/tracing.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/traps.h>
#include <topaz/paging.h>
#include <topaz/cpu.h>
#include <topaz/errno.h>
#include <topaz/time.h>

extern const char __text_start[] __hidden, __text_end[] __hidden;

enum { GUARD_NONE, GUARD_INPUT, GUARD_POOL };
static int guard_mode = GUARD_INPUT;
static const char *const guard_names[] = { "none", "input", "pool", NULL };
KPARAM_ENUM("fw.fuzz.guard", fw_fuzz_guard, &guard_mode, guard_names,
	    "fw.fuzz: guard pages: none; input (after the input's last byte); pool (and around AllocatePool/AllocatePages memory, freed memory kept unmapped)");
static u64 guard_mib = 16;
KPARAM_UINT("fw.fuzz.guard_mem", fw_fuzz_guard_mem, &guard_mib, 1, 1024,
	    "fw.fuzz.guard=pool: MiB of the guarded heap (from AllocatePages at the start)");
static u64 timeout_ms;
KPARAM_UINT("fw.fuzz.timeout", fw_fuzz_timeout, &timeout_ms, 0, 3600 * 1000ull,
	    "fw.fuzz: ms one execution may run before it is a crash (kind=timeout; 0: no limit)");

/* The exceptions an execution may raise; #DB, #BP, NMI, #DF and #MC stay as they are. */
static const u8 crash_vectors[] = {
	X86_TRAP_DE, X86_TRAP_OF, X86_TRAP_BR, X86_TRAP_UD, X86_TRAP_NM, X86_TRAP_TS,
	X86_TRAP_NP, X86_TRAP_SS, X86_TRAP_GP, X86_TRAP_PF, X86_TRAP_MF, X86_TRAP_AC,
	X86_TRAP_XF,
};

static struct {
	/* the input guard: the input ends at in_guard, a not-present page */
	u64 in_mem, in_pages, in_guard;
	const u8 *in_data;
	size_t in_size;
	/* the guarded heap and the firmware's services it stands in for */
	struct fuzz_guard_heap heap;
	u64 arena;
	EFI_ALLOCATE_POOL alloc_pool;
	EFI_FREE_POOL free_pool;
	EFI_ALLOCATE_PAGES alloc_pages;
	EFI_FREE_PAGES free_pages;
	bool hooked, busy;
	u64 fallbacks;		/* allocations the full heap left to the firmware */
	u64 deadline;		/* fw.fuzz.timeout=: ktime_get_ns() the execution ends at */
	/* the execution running */
	volatile bool armed;
	void *jb[5];		/* __builtin_setjmp's */
	u64 rflags;
	EFI_TPL tpl;		/* the campaign's TPL, put back after a crash */
	struct fw_fuzz_fault fault;
	trap_handler_t prev[32];
	bool started;
} g;

/* The stack a crash's frame returns on, to longjmp from (the faulting one may be bad). */
static u8 recover_stack[4096] __aligned(16);

static int protect(void *ctx, u64 addr, u64 len, bool present)
{
	return present ? set_memory_flags(addr, addr + len, PTE_P | PTE_W, 0) :
			 set_memory_flags(addr, addr + len, 0, PTE_P);
}

/* ------------------------------------------------------------ crashes */

static __noinline __noreturn void recover(void)
{
	__builtin_longjmp(g.jb, 1);
}

/* A trap frame returns to recover(), on its own stack, with the campaign's flags. */
static void redirect(struct pt_regs *regs)
{
	regs->rip = (u64)(uintptr_t)recover;
	regs->rsp = (u64)(uintptr_t)(recover_stack + sizeof(recover_stack)) - 8;
	regs->rflags = g.rflags & ~(u64)(X86_EFLAGS_TF | X86_EFLAGS_RF | BIT(10) /* DF */ |
					 BIT(18) /* AC */);
}

static void record(const char *kind, unsigned int vector, u64 rip, u64 addr, u64 error_code)
{
	g.armed = false;
	g.fault = (struct fw_fuzz_fault){ .kind = kind, .vector = vector, .rip = rip,
					  .addr = addr, .error_code = error_code };
}

/* In traced code (a hook the target called): its trace ends here, as a window does. */
static __noreturn void crash_from_call(void)
{
	if (pt_boot_active())
		pt_trace_end();
	__builtin_longjmp(g.jb, 1);
}

static bool crash_trap(struct pt_regs *regs)
{
	unsigned int v = (unsigned int)regs->vector;

	if (v < ARRAY_SIZE(g.prev) && g.prev[v] && g.prev[v](regs))
		return true;	/* the trace engine's own (its code cache, PTWRITE) */
	if (!g.armed || trap_depth() != 1)
		return false;	/* not the execution's: as before (a fixup or a panic) */
	record(v == X86_TRAP_PF ? "page-fault" : NULL, v, regs->rip,
	       v == X86_TRAP_PF ? read_cr2() : 0, regs->error_code);
	/* the trace ends at the faulting instruction: its FUP is in, the engine stops */
	pt_trace_abort();
	redirect(regs);
	return true;
}

/*
 * fw.fuzz.timeout=, as an interrupt returns to the execution: the firmware's
 * timer ticks (10 ms on OVMF) whatever the TPL the target runs at (the TPL
 * holds back event notifications, not interrupts), so a loop at TPL_NOTIFY
 * (HiiDatabaseDxe's, holding its lock) is caught, which a timer event could
 * never be. Past the deadline, by the kernel's clock, the interrupted frame
 * goes to recover(): its RIP is where the target hung. Not while topaz's own
 * code runs in the execution (the guarded heap's bookkeeping, kmalloc, the
 * trace engine: their state half changed): the next tick in the target's.
 */
static void timeout_check(struct pt_regs *regs)
{
	u64 rip = regs->rip;

	if (!g.armed || g.busy || ktime_get_ns() < g.deadline)
		return;
	if (rip >= (uintptr_t)__text_start && rip < (uintptr_t)__text_end)
		return;
	record("timeout", ~0u, rip, 0, 0);
	/* the trace ends where the interrupt came in, as at a fault */
	pt_trace_abort();
	redirect(regs);
}

/* ------------------------------------------------------- the guarded heap */

/*
 * The target's allocations: not those of the firmware's timer events, which
 * the timer's interrupt dispatches (in a trap, here) and which may be freed
 * after the execution, through the firmware's own FreePool.
 */
static bool guarded(EFI_MEMORY_TYPE type)
{
	return !g.busy && !trap_depth() && (type == EfiBootServicesData || type == EfiLoaderData);
}

static EFI_STATUS EFIAPI guard_allocate_pool(EFI_MEMORY_TYPE type, UINTN size, VOID **buf)
{
	u64 p;

	if (!buf || !guarded(type))
		return g.alloc_pool(type, size, buf);
	g.busy = true;	/* SetMemoryAttributes may allocate: the firmware's then */
	p = fuzz_guard_alloc(&g.heap, size, 8, false);
	g.busy = false;
	if (!p) {
		g.fallbacks++;
		return g.alloc_pool(type, size, buf);
	}
	*buf = (VOID *)(uintptr_t)p;
	return EFI_SUCCESS;
}

static EFI_STATUS EFIAPI guard_allocate_pages(EFI_ALLOCATE_TYPE how, EFI_MEMORY_TYPE type,
					      UINTN pages, EFI_PHYSICAL_ADDRESS *mem)
{
	u64 p;

	if (how != AllocateAnyPages || !guarded(type) || !mem || !pages ||
	    pages >= g.heap.npages)
		return g.alloc_pages(how, type, pages, mem);
	g.busy = true;
	p = fuzz_guard_alloc(&g.heap, (u64)pages * FUZZ_GUARD_PAGE, FUZZ_GUARD_PAGE, true);
	g.busy = false;
	if (!p) {
		g.fallbacks++;
		return g.alloc_pages(how, type, pages, mem);
	}
	*mem = p;
	return EFI_SUCCESS;
}

/* A free of the heap's memory: 0 done, 1 not the heap's; a bad one is a crash. */
static int guard_free(u64 addr, bool pages_api, UINTN pages, u64 site)
{
	const struct fuzz_guard_alloc *a;
	int err;

	if (g.busy)
		return 1;
	g.busy = true;
	err = fuzz_guard_free(&g.heap, addr, pages_api, &a);
	if (!err && pages_api && a->pages != pages)
		err = -EINVAL;	/* (it is freed: the count was wrong) */
	g.busy = false;
	if (err == -ENOENT)
		return 1;
	if (!err || !g.armed || trap_depth())
		return 0;	/* not the target's call: an interrupt's (no way out of it from here) */
	record(err == -EALREADY ? "double-free" : "bad-free", ~0u, site, addr, pages);
	crash_from_call();
}

static EFI_STATUS EFIAPI guard_free_pool(VOID *buf)
{
	if (guard_free((u64)(uintptr_t)buf, false, 0, (u64)(uintptr_t)__builtin_return_address(0)))
		return g.free_pool(buf);
	return EFI_SUCCESS;
}

static EFI_STATUS EFIAPI guard_free_pages(EFI_PHYSICAL_ADDRESS mem, UINTN pages)
{
	if (guard_free(mem, true, pages, (u64)(uintptr_t)__builtin_return_address(0)))
		return g.free_pages(mem, pages);
	return EFI_SUCCESS;
}

static void hook_heap(bool on)
{
	if (on == g.hooked)
		return;
	if (on) {
		g.alloc_pool = fw.bs->AllocatePool;
		g.free_pool = fw.bs->FreePool;
		g.alloc_pages = fw.bs->AllocatePages;
		g.free_pages = fw.bs->FreePages;
		fw.bs->AllocatePool = guard_allocate_pool;
		fw.bs->FreePool = guard_free_pool;
		fw.bs->AllocatePages = guard_allocate_pages;
		fw.bs->FreePages = guard_free_pages;
	} else {
		fw.bs->AllocatePool = g.alloc_pool;
		fw.bs->FreePool = g.free_pool;
		fw.bs->AllocatePages = g.alloc_pages;
		fw.bs->FreePages = g.free_pages;
	}
	g.hooked = on;
	fw_bs_crc();
}

/* ------------------------------------------------------ the execution */

static void disarm(void)
{
	g.armed = false;
	if (timeout_ms)
		irq_set_return_hook(NULL);
	hook_heap(false);
}

int fw_fuzz_guarded(int (*fn)(const u8 *data, size_t size), const u8 *data, size_t size,
		    int *ret, struct fw_fuzz_fault *f)
{
	static struct fw_fuzz_fault *volatile out;
	static int *volatile result;
	EFI_TPL t;

	out = f;
	result = ret;
	if (__builtin_setjmp(g.jb)) {
		/* a crash sent execution here: its trace was stopped there */
		disarm();
		t = fw.bs->RaiseTPL(TPL_HIGH_LEVEL);	/* from the TPL it was at ... */
		fw.bs->RestoreTPL(g.tpl);		/* ... to the campaign's */
		(void)t;
		if (pt_boot_active() && !pt_session_engine())
			pt_trace_end();	/* silicon: TraceEn goes off */
		*out = g.fault;
		return 1;
	}
	__asm__ volatile("pushfq; pop %0" : "=r"(g.rflags));
	if (guard_mode == GUARD_POOL)
		hook_heap(true);
	if (timeout_ms) {
		g.deadline = ktime_get_ns() + timeout_ms * 1000000;
		irq_set_return_hook(timeout_check);
	}
	g.armed = true;
	*result = fn(data, size);
	disarm();
	return 0;
}

const u8 *fw_fuzz_guard_place(const u8 *data, size_t size)
{
	u8 *to;

	if (!g.in_guard)
		return data;
	to = (u8 *)(uintptr_t)(g.in_guard - size);
	memcpy(to, data, size);
	g.in_data = to;
	g.in_size = size;
	return to;
}

/* ------------------------------------------------------------ reports */

/* "hello!fib+0x10" of fw_module_format()'s "0x..., hello!fib+0x10", or the address. */
static const char *site_of(u64 rip, char *buf, size_t n)
{
	const char *s = fw_module_format(rip, buf, n), *c = strstr(s, ", ");

	return c ? c + 2 : s;
}

void fw_fuzz_fault_print(const struct fw_fuzz_fault *f)
{
	const struct fuzz_guard_alloc *a = NULL;
	char at[160];
	const char *name, *desc = NULL;

	if (f->vector < 32) {
		name = trap_name(f->vector, &desc);
		pr_err("crash: %s (%s) at %s, error code %#llx\n", name, desc ? desc : "?",
		       fw_module_format(f->rip, at, sizeof(at)), f->error_code);
	} else if (f->rip && (!strcmp(f->kind, "double-free") || !strcmp(f->kind, "bad-free"))) {
		pr_err("crash: %s in the call that returns to %s\n", f->kind,
		       fw_module_format(f->rip, at, sizeof(at)));
	} else if (f->rip) {
		pr_err("crash: %s at %s\n", f->kind, fw_module_format(f->rip, at, sizeof(at)));
	}
	if (!strcmp(f->kind, "timeout") && f->rip)
		pr_err("crash: still running after %llu ms (fw.fuzz.timeout=): it hung there\n",
		       timeout_ms);
	if (f->vector == X86_TRAP_PF || !strcmp(f->kind, "double-free") ||
	    !strcmp(f->kind, "bad-free")) {
		const char *rw = f->vector != X86_TRAP_PF ? "free" :
				 f->error_code & 16 ? "fetch" : f->error_code & 2 ? "write" : "read";

		if (f->addr >= g.in_guard && f->addr - g.in_guard < FUZZ_GUARD_PAGE && g.in_guard)
			pr_err("crash: %s of %#llx: %llu bytes after the %zu-byte input at %p (its guard page)\n",
			       rw, f->addr, f->addr - g.in_guard, g.in_size, g.in_data);
		else if (g.heap.owner && fuzz_guard_lookup(&g.heap, f->addr, &a) != FUZZ_GUARD_OUTSIDE && a)
			pr_err("crash: %s of %#llx: %lld bytes %s the %llu-byte allocation at %#llx (%s%s)\n",
			       rw, f->addr,
			       (long long)(f->addr >= a->addr + a->size ? f->addr - a->addr - a->size :
					   f->addr >= a->addr ? f->addr - a->addr : a->addr - f->addr),
			       f->addr >= a->addr + a->size ? "after" : f->addr >= a->addr ? "into" : "before",
			       a->size, a->addr, a->pages_api ? "AllocatePages" : "AllocatePool",
			       a->state == FUZZ_GA_FREED ? ", freed" : "");
		else if (g.heap.owner && fuzz_guard_lookup(&g.heap, f->addr, &a) == FUZZ_GUARD_WILD)
			pr_err("crash: %s of %#llx: in the guarded heap where no allocation is (freed more than %u frees ago, or never allocated)\n",
			       rw, f->addr, FUZZ_GUARD_QUARANTINE);
		else if (f->vector == X86_TRAP_PF)
			pr_err("crash: %s of %#llx: %s\n", rw, f->addr,
			       f->addr < FUZZ_GUARD_PAGE ? "a NULL pointer's page" :
			       f->error_code & 1 ? "not allowed there" : "not present");
	}
}

/* What kind of crash the fault is: the guard it hit names it. */
static const char *kind_of(const struct fw_fuzz_fault *f)
{
	const struct fuzz_guard_alloc *a;
	static const char *const names[32] = {
		[X86_TRAP_DE] = "divide-error", [X86_TRAP_OF] = "overflow", [X86_TRAP_BR] = "bound",
		[X86_TRAP_UD] = "ud", [X86_TRAP_NM] = "nm", [X86_TRAP_TS] = "ts", [X86_TRAP_NP] = "np",
		[X86_TRAP_SS] = "ss", [X86_TRAP_GP] = "gp", [X86_TRAP_MF] = "fpu", [X86_TRAP_AC] = "ac",
		[X86_TRAP_XF] = "simd",
	};

	if (f->vector != X86_TRAP_PF)
		return f->kind ? f->kind : f->vector < 32 && names[f->vector] ? names[f->vector] :
		       "exception";
	if (g.in_guard && f->addr >= g.in_guard && f->addr - g.in_guard < FUZZ_GUARD_PAGE)
		return f->error_code & 2 ? "input-overflow" : "overread";
	if (!g.heap.owner)
		return "page-fault";
	switch (fuzz_guard_lookup(&g.heap, f->addr, &a)) {
	case FUZZ_GUARD_OVERFLOW:
		return a->pages_api ? "page-overflow" : "pool-overflow";
	case FUZZ_GUARD_UAF:
		return "use-after-free";
	case FUZZ_GUARD_UNDERFLOW:
		return "pool-underflow";
	case FUZZ_GUARD_WILD:
		return "heap-wild";
	default:
		return "page-fault";
	}
}

const char *fw_fuzz_fault_kind(const struct fw_fuzz_fault *f)
{
	return kind_of(f);
}

const char *fw_fuzz_fault_site(const struct fw_fuzz_fault *f, char *buf, size_t n)
{
	if (!f->rip) {
		ksnprintf(buf, n, "a-firmware-call");
		return buf;
	}
	return site_of(f->rip, buf, n);
}

/* ------------------------------------------------------- start and stop */

static u64 fw_pages(u64 pages, const char *what)
{
	EFI_PHYSICAL_ADDRESS mem = 0;
	EFI_STATUS s = fw.bs->AllocatePages(AllocateAnyPages, EfiBootServicesData, pages, &mem);

	if (s != EFI_SUCCESS) {
		pr_err("no %llu pages from the firmware for %s (AllocatePages: EFI status %#lx)\n",
		       pages, what, (unsigned long)s);
		return 0;
	}
	return mem;
}

int fw_fuzz_guard_start(size_t max_len)
{
	EFI_TPL t;
	int err;

	memset(&g, 0, sizeof(g));
	g.started = true;
	t = fw.bs->RaiseTPL(TPL_HIGH_LEVEL);
	fw.bs->RestoreTPL(t);
	g.tpl = t;
	for (unsigned int i = 0; i < ARRAY_SIZE(crash_vectors); i++) {
		g.prev[crash_vectors[i]] = trap_get_handler(crash_vectors[i]);
		trap_set_handler(crash_vectors[i], crash_trap);
	}
	if (guard_mode >= GUARD_INPUT) {
		g.in_pages = ALIGN_UP((u64)max_len, FUZZ_GUARD_PAGE) / FUZZ_GUARD_PAGE + 1;
		g.in_mem = fw_pages(g.in_pages, "the input's guard page");
		if (!g.in_mem)
			return -ENOMEM;
		err = protect(NULL, g.in_mem + (g.in_pages - 1) * FUZZ_GUARD_PAGE, FUZZ_GUARD_PAGE,
			      false);
		if (err) {
			pr_err("fw.fuzz.guard=%s: the firmware would not unmap the input's guard page (error %d): boot with fw.fuzz.guard=none\n",
			       guard_names[guard_mode], err);
			return err;
		}
		g.in_guard = g.in_mem + (g.in_pages - 1) * FUZZ_GUARD_PAGE;
	}
	if (guard_mode >= GUARD_POOL) {
		u32 pages = (u32)(guard_mib << (20 - 12));

		g.arena = fw_pages(pages, "fw.fuzz.guard=pool's heap (fw.fuzz.guard_mem=)");
		if (!g.arena)
			return -ENOMEM;
		err = fuzz_guard_init(&g.heap, g.arena, pages, protect, NULL);
		if (err) {
			pr_err("fw.fuzz.guard=pool: no guarded heap (error %d)\n", err);
			return err;
		}
	}
	char limit[32] = "none";

	if (timeout_ms)
		ksnprintf(limit, sizeof(limit), "%llu ms", timeout_ms);
	printk("fuzz: guards (fw.fuzz.guard=%s): %s%s; timeout: %s\n", guard_names[guard_mode],
	       g.in_guard ? "the input ends where an unmapped page starts" : "none",
	       g.arena ? "; AllocatePool/AllocatePages guarded (an unmapped page after each allocation, the last 64 frees kept unmapped)" : "",
	       limit);
	return 0;
}

void fw_fuzz_guard_stop(void)
{
	if (!g.started)
		return;
	disarm();
	for (unsigned int i = 0; i < ARRAY_SIZE(crash_vectors); i++)
		trap_set_handler(crash_vectors[i], g.prev[crash_vectors[i]]);
	if (g.in_mem) {
		if (!g.in_guard ||
		    !protect(NULL, g.in_guard, FUZZ_GUARD_PAGE, true))
			fw.bs->FreePages(g.in_mem, g.in_pages);
	}
	if (g.arena) {
		u32 pages = (u32)(guard_mib << (20 - 12));

		if (g.heap.live) {
			/* the firmware may still use (and free) them: the heap stays as it is */
			pr_warn("fw.fuzz.guard=pool: %u guarded allocations still live at the end: the heap's %llu MiB stay the firmware's\n",
				g.heap.live, guard_mib);
		} else if (!protect(NULL, g.arena, (u64)pages * FUZZ_GUARD_PAGE, true)) {
			fw.bs->FreePages(g.arena, pages);
		}
		if (g.fallbacks)
			pr_warn("fw.fuzz.guard=pool: %llu allocations did not fit in the guarded heap (fw.fuzz.guard_mem=%llu): the firmware served them unguarded\n",
				g.fallbacks, guard_mib);
		fuzz_guard_destroy(&g.heap);
	}
	g.started = false;
}
