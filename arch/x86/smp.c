// SPDX-License-Identifier: MIT
/*
 * The other CPUs: found in the ACPI MADT, started with INIT-SIPI-SIPI through
 * the real-mode trampoline (arch/x86/smp_trampoline.S, copied to the page below
 * 1 MiB that boot/ reserved from the firmware), each with its own GDT, TSS and
 * IST stacks (guard pages under them), the shared IDT, its local APIC and
 * timer, and its per-CPU header in GS. Then they wait in HLT for calls
 * (smp_call_function_single(), on_each_cpu()) that an IPI brings.
 *
 * A panic stops the other CPUs with an NMI; each reports its registers.
 */
#define pr_fmt(fmt) "smp: " fmt
#include <topaz/smp.h>
#include <topaz/acpi.h>
#include <topaz/apic.h>
#include <topaz/arch.h>
#include <topaz/bootinfo.h>
#include <topaz/cmdline.h>
#include <topaz/cpu.h>
#include <topaz/gdt.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>
#include <topaz/paging.h>
#include <topaz/spinlock.h>
#include <topaz/time.h>
#include <topaz/traps.h>

extern const char smp_trampoline_start[] __hidden, smp_trampoline_end[] __hidden;
extern const u32 smp_tr_off_prot32 __hidden, smp_tr_off_long64 __hidden;
extern const u32 smp_tr_off_gdtr __hidden, smp_tr_off_gdt __hidden;
extern const char smp_tr_fields[] __hidden;

/* The trampoline's fields (smp_trampoline.S, smp_tr_fields): keep in step. */
struct smp_tr_fields {
	u32 far32_off, far32_sel;
	u32 far64_off, far64_sel;
	u32 cr0, cr3, cr4, efer;
	u64 stack, entry, arg;
} __packed;

/* Each application processor's stacks: one order-5 block, a guard page under each stack. */
#define AP_STACK_ORDER	5
#define AP_KSTACK_PAGES	11
#define AP_IST_PAGES	4

enum { AP_DOWN, AP_ALIVE, AP_ONLINE };

/*
 * What smp.c knows of each CPU. An AP's entry is read and written by CPU
 * number, from the boot CPU and from the AP before its GS base is set.
 */
struct smp_cpu {
	u32 apic_id;
	u32 state;		/* AP_DOWN, AP_ALIVE, AP_ONLINE */
	uintptr_t stacks;	/* an AP's block of stacks (0: none yet) */
};
static DEFINE_PER_CPU(struct smp_cpu, smp_cpus);

static unsigned int madt_count;		/* usable CPUs the MADT lists (all if it lists more) */
static unsigned int cpus_wanted;	/* cpus=: 0 = all */
static uintptr_t trampoline;		/* the page below 1 MiB */
static u64 ready_tsc;			/* when the last CPU came online */

/*
 * A call another CPU asks this one to make: @seq counts the calls posted,
 * @done the calls made; a slot is free when they are equal. Posters take
 * @lock; the owner runs the call from its IPI.
 */
struct call_slot {
	spinlock_t lock;
	smp_call_func_t fn;
	void *info;
	u64 seq, done;
	u32 waker;	/* the caller's CPU + 1 when it waits for the call (0: it does not) */
	u32 wakeups_at_post;	/* the owner's call interrupts when the last call was posted */
};
static DEFINE_PER_CPU(struct call_slot, call_slots);

/* Call-vector interrupts this CPU took (calls, wake-ups), and how many of
 * them its last smp_wait_relax() turn had seen. */
static DEFINE_PER_CPU(u32, wakeups);
static DEFINE_PER_CPU(u32, wakeups_seen);

static int set_cpus(const char *val, char *why, size_t whylen)
{
	u64 n;

	if (!strcmp(val, "all")) {
		cpus_wanted = 0;
		return 0;
	}
	if (kstrtou64(val, 0, &n) || n < 1 || n > NR_CPUS) {
		ksnprintf(why, whylen, "'%s' is not a CPU count: give 1..%u or 'all'", val, NR_CPUS);
		return -EINVAL;
	}
	cpus_wanted = (unsigned int)n;
	return 0;
}
KPARAM_CUSTOM("cpus", cpus, set_cpus, "CPUs to bring up: N or all (default all)");

u32 cpu_apic_id(unsigned int cpu)
{
	return cpu < NR_CPUS ? per_cpu_ptr(smp_cpus, cpu)->apic_id : ~0u;
}

/* The boot CPU's APIC ID without the APIC: CPUID leaf 0xB (x2APIC ID), else leaf 1. */
static u32 boot_apic_id(void)
{
	struct cpuid_regs r;

	arch_cpuid(0, 0, &r);
	if (r.eax >= 0xb) {
		struct cpuid_regs b;

		arch_cpuid(0xb, 0, &b);
		if (b.ebx)
			return b.edx;
	}
	arch_cpuid(1, 0, &r);
	return r.ebx >> 24;
}

int smp_prepare(const struct boot_info *bi)
{
	static struct acpi_cpu cpus[NR_CPUS];
	struct acpi_madt_info mi;
	char why[160];
	u32 me = boot_apic_id();
	unsigned int n = 1;

	per_cpu_ptr(smp_cpus, 0)->apic_id = me;
	trampoline = bi->smp_trampoline;
	if (acpi_madt_cpus(bi->rsdp, cpus, NR_CPUS, &mi, why, sizeof(why))) {
		pr_warn("%s: only the boot CPU is known\n", why);
		madt_count = 1;
	} else {
		madt_count = mi.ncpus ? mi.ncpus : 1;
		if (mi.dropped)
			pr_warn("the MADT lists %u usable CPUs; topaz is built for %u (NR_CPUS): the rest stay down\n",
				mi.ncpus + mi.dropped, NR_CPUS);
		for (unsigned int i = 0; i < mi.ncpus && n < NR_CPUS; i++)
			if (cpus[i].apic_id != me)
				per_cpu_ptr(smp_cpus, n++)->apic_id = cpus[i].apic_id;
		madt_count = n;
	}
	if (cpus_wanted > madt_count) {
		pr_err("cpus=%u: this machine has %u CPU%s (the MADT's): using all %u\n", cpus_wanted,
		       madt_count, madt_count == 1 ? "" : "s", madt_count);
		nr_cpu_ids = madt_count;
		return -EINVAL;
	}
	nr_cpu_ids = cpus_wanted ? cpus_wanted : madt_count;
	return 0;
}

static uintptr_t kstack_top(unsigned int cpu)
{
	return per_cpu_ptr(smp_cpus, cpu)->stacks + (1 + AP_KSTACK_PAGES) * PAGE_SIZE;
}

static uintptr_t ist_top(unsigned int cpu, int i)
{
	return kstack_top(cpu) + (uintptr_t)(i + 1) * (1 + AP_IST_PAGES) * PAGE_SIZE;
}

/* The stacks of CPU @cpu, with a not-present guard page under each. */
static int alloc_ap_stacks(unsigned int cpu)
{
	uintptr_t base = __get_free_pages(GFP_KERNEL, AP_STACK_ORDER);

	if (!base)
		return -ENOMEM;
	per_cpu_ptr(smp_cpus, cpu)->stacks = base;
	set_memory_flags(base, base + PAGE_SIZE, 0, PTE_P);
	for (int i = 0; i < NR_IST_STACKS; i++) {
		uintptr_t g = ist_top(cpu, i) - AP_IST_PAGES * PAGE_SIZE - PAGE_SIZE;

		set_memory_flags(g, g + PAGE_SIZE, 0, PTE_P);
	}
	return 0;
}

const char *smp_stack_guard_name(u64 addr, char *buf, size_t len)
{
	for (unsigned int cpu = 1; cpu < NR_CPUS; cpu++) {
		uintptr_t stacks = per_cpu_ptr(smp_cpus, cpu)->stacks;

		if (!stacks)
			continue;
		if (addr >= stacks && addr < stacks + PAGE_SIZE) {
			ksnprintf(buf, len, "CPU %u's kernel", cpu);
			return buf;
		}
		for (int i = 0; i < NR_IST_STACKS; i++) {
			u64 g = ist_top(cpu, i) - (AP_IST_PAGES + 1) * PAGE_SIZE;

			if (addr >= g && addr < g + PAGE_SIZE) {
				ksnprintf(buf, len, "CPU %u's IST %d", cpu, i + 1);
				return buf;
			}
		}
	}
	return NULL;
}

static bool call_function_interrupt(struct pt_regs *regs);

/* A job for a CPU's idle loop (run_on_cpu()): posted, then taken. */
struct cpu_job {
	smp_call_func_t fn;
	void *info;
	u32 busy;	/* set by the poster, cleared when the job has returned */
	u32 poster;	/* the poster's CPU: woken when the job has returned */
};
static DEFINE_PER_CPU(struct cpu_job, cpu_jobs);

static void (*job_wrapper)(smp_call_func_t fn, void *info);

void smp_set_job_wrapper(void (*wrap)(smp_call_func_t fn, void *info))
{
	__atomic_store_n(&job_wrapper, wrap, __ATOMIC_RELEASE);
}

/* What an application processor does between jobs: wait in HLT. */
static __noreturn void ap_idle(unsigned int cpu)
{
	struct cpu_job *j = per_cpu_ptr(cpu_jobs, cpu);

	for (;;) {
		local_irq_disable();
		if (__atomic_load_n(&j->busy, __ATOMIC_ACQUIRE) == 1) {
			void (*wrap)(smp_call_func_t, void *) = __atomic_load_n(&job_wrapper, __ATOMIC_ACQUIRE);

			j->busy = 2;	/* taken */
			local_irq_enable();
			unsigned int poster = j->poster;

			if (wrap)
				wrap(j->fn, j->info);
			else
				j->fn(j->info);
			__atomic_store_n(&j->busy, 0, __ATOMIC_RELEASE);
			/* the poster may wait in HLT (smp_wait_relax()): the call
			 * vector's handler finds no call and returns */
			apic_send_ipi(cpu_apic_id(poster), APIC_DM_FIXED | APIC_INT_ASSERT |
				      CALL_FUNCTION_VECTOR);
			continue;
		}
		/* STI's shadow: an interrupt after the check still ends this HLT */
		__asm__ volatile("sti; hlt" ::: "memory");
	}
}

/* An application processor's first C code, on its own stack. */
static __noreturn void ap_entry(void *arg)
{
	unsigned int cpu = (unsigned int)(uintptr_t)arg;
	uintptr_t ist[NR_IST_STACKS];

	for (int i = 0; i < NR_IST_STACKS; i++)
		ist[i] = ist_top(cpu, i);
	gdt_init(cpu, ist);	/* GS: smp_processor_id() works from here */
	idt_load();
	__atomic_store_n(&per_cpu_ptr(smp_cpus, cpu)->state, AP_ALIVE, __ATOMIC_RELEASE);
	apic_init_secondary();
	apic_timer_start_secondary(TIMER_VECTOR);
	set_cpu_online(cpu, true);
	__atomic_store_n(&per_cpu_ptr(smp_cpus, cpu)->state, AP_ONLINE, __ATOMIC_RELEASE);
	ap_idle(cpu);
}

static bool wait_state(unsigned int cpu, u32 state, u64 us)
{
	u64 end = rdtsc() + us * tsc_khz / 1000;

	while (__atomic_load_n(&per_cpu_ptr(smp_cpus, cpu)->state, __ATOMIC_ACQUIRE) < state)
		if (rdtsc() > end)
			return false;
	return true;
}

/* Fault injection: a CPU that never answers (as a broken or disabled core). */
static u64 silent_cpu;
KPARAM_UINT("smp.silent", smp_silent, &silent_cpu, 0, NR_CPUS - 1,
	    "fault injection: send CPU N (1..) no STARTUP IPI, so it never answers (0: none)");

/* The first half of starting CPU @cpu: its stacks, and INIT (the SDM's
 * 10 ms wait after it is the caller's, once for every CPU). */
static int init_cpu(unsigned int cpu)
{
	u32 id = cpu_apic_id(cpu);

	if (id > 0xff && !apic_is_x2apic()) {
		pr_err("CPU %u: APIC ID %u needs x2APIC mode (apic.mode=xapic): left out\n", cpu, id);
		return -ENODEV;
	}
	if (alloc_ap_stacks(cpu)) {
		pr_err("CPU %u (APIC ID %u): no memory for its stacks: left out\n", cpu, id);
		return -ENOMEM;
	}
	apic_send_ipi(id, APIC_DM_INIT | APIC_INT_ASSERT);
	return 0;
}

/* The second half: STARTUP twice (the SDM's MP initialization protocol),
 * one CPU at a time (they share the trampoline's fields). */
static int sipi_cpu(unsigned int cpu, struct smp_tr_fields *f)
{
	u32 id = cpu_apic_id(cpu);

	f->stack = kstack_top(cpu);
	f->entry = (u64)(uintptr_t)ap_entry;
	f->arg = cpu;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (int sipi = 0; sipi < 2; sipi++) {
		if (cpu != silent_cpu)
			apic_send_ipi(id, APIC_DM_STARTUP | APIC_INT_ASSERT | (u32)(trampoline >> 12));
		if (wait_state(cpu, AP_ALIVE, sipi ? 1000000 : 200))
			break;
	}
	if (!wait_state(cpu, AP_ALIVE, 1))
		return -ETIMEDOUT;
	if (!wait_state(cpu, AP_ONLINE, 1000000))
		return -EIO;
	return 0;
}

unsigned int smp_boot_cpus(void)
{
	size_t len = (size_t)(smp_tr_fields - smp_trampoline_start);
	struct smp_tr_fields *f;
	unsigned int up = 1, cpu;
	u64 t0 = rdtsc(), inited = 0;
	char ids[256];
	size_t il = 0;

	irq_set_handler(CALL_FUNCTION_VECTOR, call_function_interrupt);
	if (nr_cpu_ids == 1)
		goto report;
	if (!trampoline) {
		pr_err("no page below 1 MiB for the start-up code (the firmware gave none): only the boot CPU runs\n");
		goto report;
	}
	if (read_cr3() >> 32) {
		pr_err("the page tables are above 4 GiB (CR3 %#llx), out of the start-up code's reach: only the boot CPU runs\n",
		       read_cr3());
		goto report;
	}
	/* the copy, its GDT descriptor and far pointers at this page */
	memcpy((void *)trampoline, smp_trampoline_start,
	       (size_t)(smp_trampoline_end - smp_trampoline_start));
	*(u32 *)(trampoline + smp_tr_off_gdtr + 2) = (u32)(trampoline + smp_tr_off_gdt);
	f = (struct smp_tr_fields *)(trampoline + len);
	f->far32_off = (u32)(trampoline + smp_tr_off_prot32);
	f->far64_off = (u32)(trampoline + smp_tr_off_long64);
	f->cr0 = (u32)read_cr0();
	f->cr3 = (u32)read_cr3();
	f->cr4 = (u32)read_cr4() & ~(u32)BIT(17);	/* PCIDE: only in long mode */
	f->efer = (u32)rdmsr(MSR_EFER) & ~(u32)BIT(10);	/* LMA is the CPU's to set */
	/* the kernel's page tables map low memory no-execute: not this page */
	set_memory_flags(trampoline, trampoline + PAGE_SIZE, 0, PTE_NX);

	/* INIT to every CPU, one wait for all of them, then each one's STARTUPs */
	for (cpu = 1; cpu < nr_cpu_ids; cpu++)
		if (!init_cpu(cpu))
			inited |= 1ull << cpu;
	if (inited)
		udelay(10000);
	for (cpu = 1; cpu < nr_cpu_ids; cpu++) {
		int err = (inited >> cpu) & 1 ? sipi_cpu(cpu, f) : -ENODEV;

		if (!err) {
			up++;
			continue;
		}
		pr_err("CPU %u (APIC ID %u) %s: left out, the others go on\n", cpu, cpu_apic_id(cpu),
		       err == -ETIMEDOUT ? "did not answer INIT-SIPI-SIPI within 1 s" :
		       err == -EIO ? "started but did not come online within 1 s" : "could not start");
	}
	set_memory_flags(trampoline, trampoline + PAGE_SIZE, PTE_NX, 0);
report:
	ready_tsc = rdtsc();
	for_each_online_cpu(cpu)
		il += ksnprintf(ids + il, il < sizeof(ids) ? sizeof(ids) - il : 0, "%s%u", il ? ", " : "",
				cpu_apic_id(cpu));
	printk("smp: %u of %u CPUs online (APIC IDs %s), %s mode; bring-up took %llu us, %llu ms after EFI entry\n",
	       up, madt_count, ids, apic_is_x2apic() ? "x2APIC" : "xAPIC",
	       tsc_to_ns(ready_tsc - t0) / 1000,
	       boot_info ? tsc_to_ns(ready_tsc - boot_info->tsc_at_entry) / 1000000 : 0);
	return up;
}

/* ------------------------------------------------------------ cross-CPU calls */

static bool call_function_interrupt(struct pt_regs *regs)
{
	struct call_slot *s = this_cpu_ptr(call_slots);
	u64 seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

	++*this_cpu_ptr(wakeups);
	if (seq != s->done) {
		u32 waker = s->waker;

		s->fn(s->info);
		__atomic_store_n(&s->done, seq, __ATOMIC_RELEASE);
		/* the caller may wait in HLT (smp_wait_relax()) */
		if (waker)
			apic_send_ipi(cpu_apic_id(waker - 1), APIC_DM_FIXED | APIC_INT_ASSERT |
				      CALL_FUNCTION_VECTOR);
	}
	return true;
}

/* Post @fn to @cpu's slot and send the IPI; returns the call's number. */
static u64 call_post(unsigned int cpu, smp_call_func_t fn, void *info, bool wait)
{
	struct call_slot *s = per_cpu_ptr(call_slots, cpu);
	unsigned int spins = 0;
	u64 seq;

	spin_lock(&s->lock);
	while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) != s->seq)
		smp_wait_relax(&spins);	/* the previous call is still to run */
	s->fn = fn;
	s->info = info;
	s->waker = wait ? smp_processor_id() + 1 : 0;
	s->wakeups_at_post = __atomic_load_n(per_cpu_ptr(wakeups, cpu), __ATOMIC_RELAXED);
	seq = s->seq + 1;
	__atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
	apic_send_ipi(cpu_apic_id(cpu), APIC_DM_FIXED | APIC_INT_ASSERT | CALL_FUNCTION_VECTOR);
	spin_unlock(&s->lock);
	return seq;
}

static void call_wait(unsigned int cpu, u64 seq)
{
	struct call_slot *s = per_cpu_ptr(call_slots, cpu);
	u64 warn = rdtsc() + 1000 * tsc_khz;	/* 1 s */
	bool warned = false;
	unsigned int spins = 0;

	while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) < seq) {
		if (!warned && rdtsc() > warn) {
			u32 took = __atomic_load_n(per_cpu_ptr(wakeups, cpu), __ATOMIC_RELAXED) -
				   s->wakeups_at_post;

			/* a call interrupt there makes every posted call: none since
			 * means its IPI did not arrive (or that CPU has not run) */
			if (took)
				pr_warn("CPU %u has not made the call from CPU %u after 1 s, %u call interrupts there since it was posted (slow: that CPU, or the call itself): still waiting\n",
					cpu, smp_processor_id(), took);
			else
				pr_warn("CPU %u has not made the call from CPU %u after 1 s: no call interrupt there since it was posted (a lost IPI, or that CPU has not run): still waiting\n",
					cpu, smp_processor_id());
			warned = true;
		}
		smp_wait_relax(&spins);
	}
}

int smp_call_function_single(unsigned int cpu, smp_call_func_t fn, void *info, bool wait)
{
	if (cpu == smp_processor_id()) {
		unsigned long flags = local_irq_save();

		fn(info);
		local_irq_restore(flags);
		return 0;
	}
	if (!cpu_online(cpu))
		return -EINVAL;
	if (irqs_disabled()) {
		pr_err("a call to CPU %u with interrupts disabled (it could wait for this CPU for ever): refused, from %pS\n",
		       cpu, __builtin_return_address(0));
		return -EINVAL;
	}
	u64 seq = call_post(cpu, fn, info, wait);

	if (wait)
		call_wait(cpu, seq);
	return 0;
}

void on_each_cpu(smp_call_func_t fn, void *info, bool wait)
{
	unsigned int me = smp_processor_id(), cpu;
	u64 seqs[NR_CPUS];
	unsigned long flags;
	bool others = !irqs_disabled();

	if (!others && num_online_cpus() > 1)
		pr_err("on_each_cpu with interrupts disabled: run on CPU %u only, from %pS\n", me,
		       __builtin_return_address(0));
	if (others) {
		for_each_online_cpu(cpu) {
			if (cpu != me)
				seqs[cpu] = call_post(cpu, fn, info, wait);
		}
	}
	flags = local_irq_save();
	fn(info);
	local_irq_restore(flags);
	if (others && wait) {
		for_each_online_cpu(cpu) {
			if (cpu != me)
				call_wait(cpu, seqs[cpu]);
		}
	}
}

/* ------------------------------------------------------------ jobs */

int run_on_cpu(unsigned int cpu, smp_call_func_t fn, void *info)
{
	struct cpu_job *j;
	u32 free = 0;

	if (cpu == smp_processor_id()) {
		fn(info);
		return 0;
	}
	if (!cpu_online(cpu))
		return -EINVAL;
	j = per_cpu_ptr(cpu_jobs, cpu);
	if (!__atomic_compare_exchange_n(&j->busy, &free, 3, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return -EBUSY;
	j->fn = fn;
	j->info = info;
	j->poster = smp_processor_id();
	__atomic_store_n(&j->busy, 1, __ATOMIC_RELEASE);
	/* wake it: any interrupt ends its HLT (this one finds no call to make) */
	apic_send_ipi(cpu_apic_id(cpu), APIC_DM_FIXED | APIC_INT_ASSERT | CALL_FUNCTION_VECTOR);
	return 0;
}

void smp_wait_relax(unsigned int *spins)
{
	u32 *seen = this_cpu_ptr(wakeups_seen);

	if (*spins < SMP_WAIT_SPINS || irqs_disabled()) {
		++*spins;
		*seen = READ_ONCE(*this_cpu_ptr(wakeups));
		cpu_relax();
		return;
	}
	/*
	 * The caller checked its condition after the last turn: a wake-up
	 * taken since then may have come after that check, so no HLT, the
	 * caller checks again. Otherwise one can only come after the CLI: it
	 * stays pending and ends the HLT (STI's shadow holds it until then).
	 */
	local_irq_disable();
	if (*this_cpu_ptr(wakeups) == *seen)
		__asm__ volatile("sti; hlt" ::: "memory");
	else
		local_irq_enable();
	*seen = READ_ONCE(*this_cpu_ptr(wakeups));
}

void run_on_cpu_wait(unsigned int cpu)
{
	unsigned int spins = 0;

	if (cpu == smp_processor_id() || cpu >= NR_CPUS)
		return;
	while (__atomic_load_n(&per_cpu_ptr(cpu_jobs, cpu)->busy, __ATOMIC_ACQUIRE))
		smp_wait_relax(&spins);
}

unsigned int run_on_each_cpu(smp_call_func_t fn, void *info)
{
	unsigned int me = smp_processor_id(), cpu, ran = 1;
	u64 started = 0;

	for_each_online_cpu(cpu) {
		if (cpu != me && !run_on_cpu(cpu, fn, info)) {
			started |= 1ull << cpu;
			ran++;
		}
	}
	fn(info);
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		if ((started >> cpu) & 1)
			run_on_cpu_wait(cpu);
	return ran;
}

/* ------------------------------------------------------------ stopping on panic */

static u32 stop_requester;	/* the panicking CPU + 1 */
static u64 stopped_bits;
static DEFINE_SPINLOCK(stop_report_lock);

static void (*stop_hook)(void);
static enum smp_stop_when (*stop_defer)(void);
/* a stop put off until this CPU leaves what it must finish (smp_stop_pending()) */
static DEFINE_PER_CPU(bool, stop_put_off);
static DEFINE_PER_CPU(struct pt_regs, stop_regs);

void smp_set_stop_hook(void (*fn)(void), enum smp_stop_when (*defer)(void))
{
	__atomic_store_n(&stop_hook, fn, __ATOMIC_RELEASE);
	__atomic_store_n(&stop_defer, defer, __ATOMIC_RELEASE);
}

static __attribute__((noreturn)) void stop_this_cpu(const struct pt_regs *regs, u32 req, bool late)
{
	unsigned int me = smp_processor_id();
	void (*hook)(void) = __atomic_load_n(&stop_hook, __ATOMIC_ACQUIRE);

	if (hook)
		hook();	/* before this CPU reports: the panicking CPU waits for that */
	spin_lock(&stop_report_lock);	/* one CPU's report at a time */
	printk(KERN_EMERG "CPU %u (APIC ID %u) stopped by the panic on CPU %u%s; it was here:\n", me,
	       cpu_apic_id(me), req - 1, late ? " once it had left the trace writer or trace unit" : "");
	show_regs(regs);
	spin_unlock(&stop_report_lock);
	set_cpu_online(me, false);
	__atomic_or_fetch(&stopped_bits, 1ull << me, __ATOMIC_RELEASE);
	for (;;)
		__asm__ volatile("cli; hlt");
}

enum smp_stop_when smp_stop_nmi(struct pt_regs *regs)
{
	u32 req = __atomic_load_n(&stop_requester, __ATOMIC_ACQUIRE);
	unsigned int me = smp_processor_id();
	enum smp_stop_when (*defer)(void) = __atomic_load_n(&stop_defer, __ATOMIC_ACQUIRE);
	enum smp_stop_when when;

	if (!req || req == me + 1)
		return SMP_STOP_NOW;
	when = defer ? defer() : SMP_STOP_NOW;
	if (when != SMP_STOP_NOW) {
		/* inside a write the panicking CPU needs finished (it would wait
		 * for its lock for ever), or inside the trace unit the stop hook
		 * turns off: stop at its end, as if here */
		*this_cpu_ptr(stop_regs) = *regs;
		*this_cpu_ptr(stop_put_off) = true;
		return when;
	}
	stop_this_cpu(regs, req, false);
}

void smp_stop_pending(void)
{
	enum smp_stop_when (*defer)(void);

	if (likely(!*this_cpu_ptr(stop_put_off)))
		return;
	/* the end of one of two nested reasons (a trace unit call inside a
	 * write): the stop waits for the outer one's end too */
	defer = __atomic_load_n(&stop_defer, __ATOMIC_ACQUIRE);
	if (defer && defer() != SMP_STOP_NOW)
		return;
	/* the stop hook calls the trace unit, which ends here again */
	*this_cpu_ptr(stop_put_off) = false;
	stop_this_cpu(this_cpu_ptr(stop_regs), __atomic_load_n(&stop_requester, __ATOMIC_ACQUIRE), true);
}

void smp_send_stop(void)
{
	unsigned int me = smp_processor_id(), cpu;
	u64 want = cpu_online_bits & ~(1ull << me), end;

	if (!want)
		return;
	__atomic_store_n(&stop_requester, me + 1, __ATOMIC_RELEASE);
	apic_send_ipi_allbutself(APIC_DM_NMI | APIC_INT_ASSERT);
	end = rdtsc() + 2000 * tsc_khz;	/* 2 s: each prints a backtrace */
	while ((__atomic_load_n(&stopped_bits, __ATOMIC_ACQUIRE) & want) != want && rdtsc() < end)
		cpu_relax();
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		if ((want >> cpu) & 1 && !((stopped_bits >> cpu) & 1))
			printk(KERN_EMERG "CPU %u (APIC ID %u) did not answer the stop NMI within 2 s\n",
			       cpu, cpu_apic_id(cpu));
}
