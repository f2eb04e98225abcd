// SPDX-License-Identifier: MIT
/* crash=KIND: fail on purpose after boot, so the QEMU tests can check the
 * panic path end to end (report, backtrace, failure exit status). */
#include <topaz/crash.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/smp.h>
#include <topaz/arch.h>
#include <topaz/time.h>

static const char *const kinds[] = { "pf", "gp", "ud", "panic", "stack", "ap-gp", "ap-stack" };
static const char *crash_kind;

static int set_crash(const char *v, char *why, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (v && !strcmp(v, kinds[i])) {
			crash_kind = kinds[i];
			return 0;
		}
	ksnprintf(why, n, "expected pf, gp, ud, panic, stack, ap-gp or ap-stack");
	return -EINVAL;
}
KPARAM_CUSTOM("crash", crash, set_crash,
	      "fault injection: crash on purpose after boot: pf, gp, ud, panic, stack; ap-gp, ap-stack on the last CPU while the others spin");

static __noinline void crash_page_fault(void)
{
	uintptr_t addr = 0x28;

	__asm__ volatile("" : "+r"(addr));	/* hide the constant from the compiler */
	(void)*(volatile u64 *)addr;
}

static __noinline void crash_general_protection(void)
{
	(void)*(volatile u64 *)0xdead000000000000ull;
}

static __noinline void crash_invalid_opcode(void)
{
	__asm__ volatile("ud2");
}

static u64 (*volatile recurse)(u64);

static __noinline u64 crash_stack_overflow(u64 depth)
{
	volatile u8 pad[512];

	pad[0] = (u8)depth;
	return recurse(depth + 1) + pad[0];
}

static void crash_gp_job(void *arg)
{
	crash_general_protection();
}

static void crash_stack_job(void *arg)
{
	recurse = crash_stack_overflow;
	crash_stack_overflow(0);
}

static volatile u64 spins;
static u32 spinning;	/* CPUs that reached crash_spin_here() */

/* Where the other CPUs are when the crashing one stops them (their reports show it). */
static __noinline void crash_spin_here(void *arg)
{
	__atomic_fetch_add(&spinning, 1, __ATOMIC_RELEASE);
	for (;;)
		spins++;
}

/* The last CPU crashes while every other one spins in crash_spin_here(). */
static void crash_on_another_cpu(bool stack)
{
	unsigned int cpu, last = 0, others = 0;
	u64 end;

	for_each_online_cpu(cpu)
		last = cpu;
	for_each_online_cpu(cpu)
		if (cpu != last && cpu != smp_processor_id() && !run_on_cpu(cpu, crash_spin_here, NULL))
			others++;
	/* a job starts when its CPU wakes: crash only once they all spin there */
	end = rdtsc() + 1000 * tsc_khz;
	while (__atomic_load_n(&spinning, __ATOMIC_ACQUIRE) < others && rdtsc() < end)
		cpu_relax();
	printk("crash: CPU %u crashes while the other %u spin\n", last, num_online_cpus() - 1);
	run_on_cpu(last, stack ? crash_stack_job : crash_gp_job, NULL);
	crash_spin_here(NULL);
}

/** crash_if_requested() - carry out crash= (does not return when set) */
void crash_if_requested(void)
{
	if (!crash_kind)
		return;
	printk("crash: crashing on purpose: %s\n", crash_kind);
	if (!strcmp(crash_kind, "pf"))
		crash_page_fault();
	else if (!strcmp(crash_kind, "gp"))
		crash_general_protection();
	else if (!strcmp(crash_kind, "ud"))
		crash_invalid_opcode();
	else if (!strcmp(crash_kind, "ap-gp") || !strcmp(crash_kind, "ap-stack"))
		crash_on_another_cpu(!strcmp(crash_kind, "ap-stack"));
	else if (!strcmp(crash_kind, "stack")) {
		recurse = crash_stack_overflow;
		crash_stack_overflow(0);
	}
	else
		panic("crash=panic requested");
}
