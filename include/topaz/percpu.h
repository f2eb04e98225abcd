/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU state: one instance per CPU of everything that a CPU owns (the PT
 * driver's context, the trace unit's registers, the engine, the session, the
 * slab arrays, trap and probe nesting), reached through one accessor.
 *
 * One CPU runs today: smp_processor_id() is the constant 0, so this_cpu_ptr()
 * compiles to the address of instance 0 (no cost on the hot paths). With SMP
 * it becomes a read of the per-CPU area through GS.
 */
#ifndef TOPAZ_PERCPU_H
#define TOPAZ_PERCPU_H

#include <topaz/types.h>

#define NR_CPUS	4	/* the CPUs the per-CPU structures are laid out for */

/** smp_processor_id() - the CPU this code runs on */
static inline unsigned int smp_processor_id(void)
{
	return 0;
}

/* An array of NR_CPUS instances; initialise with PER_CPU_INIT(...). */
#define DEFINE_PER_CPU(type, name)	__typeof__(type) name[NR_CPUS]
#define DECLARE_PER_CPU(type, name)	extern __typeof__(type) name[NR_CPUS]
#define PER_CPU_INIT(...)		{ [0 ... NR_CPUS - 1] = __VA_ARGS__ }

/** per_cpu_ptr() - CPU @cpu's instance of @var */
#define per_cpu_ptr(var, cpu)	(&(var)[(cpu)])
/** this_cpu_ptr() - this CPU's instance of @var */
#define this_cpu_ptr(var)	per_cpu_ptr(var, smp_processor_id())

#define for_each_possible_cpu(cpu)	for ((cpu) = 0; (cpu) < NR_CPUS; (cpu)++)

#endif
