/* SPDX-License-Identifier: MIT */
/*
 * The CPUs: which are online, and running a function on one or all of them.
 * The kernel brings the CPUs the ACPI MADT lists up with INIT-SIPI-SIPI
 * (arch/x86/smp.c) and calls functions on them with an IPI; the hosted build
 * runs the function on the calling thread as if it were that CPU.
 */
#ifndef TOPAZ_SMP_H
#define TOPAZ_SMP_H

#include <topaz/types.h>
#include <topaz/percpu.h>

struct boot_info;
struct pt_regs;

/* Online CPUs: a bit each (cpus 0..NR_CPUS-1). */
extern u64 cpu_online_bits;

static inline bool cpu_online(unsigned int cpu)
{
	return cpu < NR_CPUS && (__atomic_load_n(&cpu_online_bits, __ATOMIC_ACQUIRE) >> cpu) & 1;
}
static inline unsigned int num_online_cpus(void)
{
	u64 m = __atomic_load_n(&cpu_online_bits, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	for (; m; m &= m - 1)	/* no libgcc in the kernel: no __popcountdi2 */
		n++;
	return n;
}
/** set_cpu_online() - mark CPU @cpu online or offline (@online) in the online mask */
void set_cpu_online(unsigned int cpu, bool online);

/*
 * NUMA node of each CPU. topaz reads no SRAT yet, so every CPU is on node 0
 * (the page allocator's only node); the table exists so that per-CPU memory
 * (a CPU's ToPA tables and trace buffer) is asked for on its CPU's node, and
 * the host tests move a CPU to a node that has no memory to prove it is.
 */
DECLARE_PER_CPU(u8, cpu_node);

/** cpu_to_node() - the node CPU @cpu's memory comes from (Linux's name) */
static inline int cpu_to_node(int cpu)
{
	return cpu >= 0 && cpu < NR_CPUS ? *per_cpu_ptr(cpu_node, cpu) : 0;
}

#define for_each_online_cpu(cpu)					\
	for ((cpu) = 0; (cpu) < nr_cpu_ids; (cpu)++)			\
		if (!cpu_online(cpu)) {} else

typedef void (*smp_call_func_t)(void *info);

/**
 * smp_call_function_single() - run @fn(@info) on CPU @cpu
 * @wait: return only once @fn has returned there
 *
 * @fn runs in interrupt context with interrupts disabled. Not with interrupts
 * disabled here (two CPUs waiting on each other would never finish): that,
 * or an offline @cpu, returns -EINVAL. On this CPU, @fn runs directly.
 */
int smp_call_function_single(unsigned int cpu, smp_call_func_t fn, void *info, bool wait);

/** on_each_cpu() - run @fn(@info) on every online CPU, this one included */
void on_each_cpu(smp_call_func_t fn, void *info, bool wait);

/**
 * run_on_cpu() - have CPU @cpu run @fn(@info) as its next job, outside
 * interrupt context and with interrupts enabled (it may call other CPUs,
 * take locks, allocate); returns at once, 0 or -EINVAL for an offline CPU or
 * one that still has a job. run_on_cpu_wait() waits for the job to finish.
 * On this CPU, @fn runs at once.
 */
int run_on_cpu(unsigned int cpu, smp_call_func_t fn, void *info);
/**
 * smp_wait_relax() - one turn of a loop that waits for another CPU: PAUSE
 * for the first SMP_WAIT_SPINS turns (@spins counts them, 0 at the start),
 * then HLT until an interrupt (the other CPU's wake-up IPI, the timer), so
 * that a wait in traced code costs a few instructions a tick, not a loop
 * as long as the host keeps the other CPU waiting. A wake-up IPI taken
 * between the caller's check and the HLT is not slept through: that turn
 * returns at once. With interrupts disabled it only PAUSEs (nothing would
 * end the HLT).
 */
void smp_wait_relax(unsigned int *spins);
#define SMP_WAIT_SPINS	64

/** run_on_cpu_wait() - wait until CPU @cpu finished its run_on_cpu() job (at once for this CPU) */
void run_on_cpu_wait(unsigned int cpu);
/**
 * run_on_each_cpu() - @fn(@info) as a job on every online CPU at once, this
 * one included; returns when all have finished. Returns how many CPUs ran it.
 */
unsigned int run_on_each_cpu(smp_call_func_t fn, void *info);

/**
 * smp_set_job_wrapper() - every job another CPU runs (run_on_cpu()) goes
 * through @wrap(fn, info), which must call fn(info): the tracing session
 * opens that CPU's traced window around it. NULL: jobs run as they are.
 */
void smp_set_job_wrapper(void (*wrap)(smp_call_func_t fn, void *info));

/* What a panic's stop NMI does on a CPU (the stop hook's @defer answers). */
enum smp_stop_when {
	SMP_STOP_NOW,		/* stop in the NMI */
	SMP_STOP_PUT_OFF,	/* at smp_stop_pending(); the NMI's handler runs now (a PMI may have come with it) */
	SMP_STOP_PUT_OFF_NMI,	/* at smp_stop_pending(), no handler now: the CPU is inside what it would use */
};

/**
 * smp_set_stop_hook() - @fn runs on each CPU a panic stops, in its stop NMI,
 * before it reports and halts (the tracing session publishes that CPU's
 * trace there). @defer: whether the NMI came inside something the panicking
 * CPU needs finished (a write of the trace under its lock) or the hook needs
 * whole (the software trace unit, half-way through a packet): that CPU then
 * stops at smp_stop_pending(), called where it ends. NULL: always now.
 */
void smp_set_stop_hook(void (*fn)(void), enum smp_stop_when (*defer)(void));

/** smp_stop_pending() - stop here if a panic's stop was put off (see above) */
void smp_stop_pending(void);

/** cpu_apic_id() - the local APIC ID of CPU @cpu */
u32 cpu_apic_id(unsigned int cpu);

/* The kernel's bring-up (arch/x86/smp.c). */
/**
 * smp_prepare() - read the MADT and the cpus= parameter: nr_cpu_ids
 *
 * Before the allocators are set up (the slab lays out its per-CPU arrays for
 * nr_cpu_ids CPUs). Returns 0, or -EINVAL when cpus= asks for more CPUs than
 * the machine has (the message names both).
 */
int smp_prepare(const struct boot_info *bi);
/** smp_boot_cpus() - start every other CPU; returns how many answered */
unsigned int smp_boot_cpus(void);
/**
 * smp_stack_guard_name() - "CPU n's kernel" when @addr is in a guard page of
 * CPU n's stacks, else NULL
 */
const char *smp_stack_guard_name(u64 addr, char *buf, size_t len);
/** smp_send_stop() - panic: stop every other CPU with an NMI, each reporting its registers */
void smp_send_stop(void);
/**
 * smp_stop_nmi() - the NMI handler's first question: stop here? (never
 * returns if so). Otherwise SMP_STOP_NOW when this NMI is not a stop, or how
 * the stop was put off (see enum smp_stop_when): then it is dealt with, and
 * no "unhandled NMI".
 */
enum smp_stop_when smp_stop_nmi(struct pt_regs *regs);

#endif
