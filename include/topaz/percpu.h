/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU state: one instance per CPU of everything that a CPU owns (the PT
 * driver's context, the trace unit's registers, the engine, the session, the
 * slab arrays, trap and probe nesting), reached through one accessor.
 *
 * The kernel finds its CPU number through GS: each CPU's GS base points at
 * its struct percpu_hdr (set by gdt_init(), before anything else runs on that
 * CPU), so smp_processor_id() is one load. The hosted build keeps it in a
 * thread-local variable: a test or benchmark thread says which CPU it is.
 */
#ifndef TOPAZ_PERCPU_H
#define TOPAZ_PERCPU_H

#define NR_CPUS	64	/* the CPUs the per-CPU structures are laid out for */
#define PERCPU_OFF_CPU		8	/* offsets in struct percpu_hdr (entry.S uses them) */
#define PERCPU_OFF_NO_IRET	12

#ifndef __ASSEMBLY__
#include <topaz/types.h>

/*
 * What GS points at on each CPU. entry.S reads @no_iret at its fixed offset
 * (PERCPU_OFF_NO_IRET); arch/x86/gdt.c checks the offsets against the layout.
 */
struct percpu_hdr {
	struct percpu_hdr *self;
	u32 cpu;		/* this CPU's number, 0 = the boot CPU */
	u8 no_iret;		/* entry.S: return from this #BP without IRET */
	u8 pad[3];
};

/* CPUs the machine has and topaz uses (cpus=): per-CPU arrays beyond it are unused. */
extern unsigned int nr_cpu_ids;

#ifdef TOPAZ_HOSTED
/* local-exec: one %fs-relative load, as the kernel's one %gs-relative load
 * (the hosted builds are executables, never shared objects) */
extern __thread unsigned int hosted_cpu_id __attribute__((tls_model("local-exec")));
/** smp_processor_id() - the CPU this code runs on */
static inline unsigned int smp_processor_id(void)
{
	return hosted_cpu_id;
}
#else
/** smp_processor_id() - the CPU this code runs on (one GS-relative load) */
static inline unsigned int smp_processor_id(void)
{
	unsigned int cpu;

	/* not volatile: the value never changes under running code, so it may be reused */
	__asm__("movl %%gs:%c1, %0" : "=r"(cpu) : "i"(PERCPU_OFF_CPU));
	return cpu;
}
#endif

/* An array of NR_CPUS instances; initialise with PER_CPU_INIT(...). */
#define DEFINE_PER_CPU(type, name)	__typeof__(type) name[NR_CPUS]
#define DECLARE_PER_CPU(type, name)	extern __typeof__(type) name[NR_CPUS]
#define PER_CPU_INIT(...)		{ [0 ... NR_CPUS - 1] = __VA_ARGS__ }

/** per_cpu_ptr() - CPU @cpu's instance of @var */
#define per_cpu_ptr(var, cpu)	(&(var)[(cpu)])
/** this_cpu_ptr() - this CPU's instance of @var */
#define this_cpu_ptr(var)	per_cpu_ptr(var, smp_processor_id())

#define for_each_possible_cpu(cpu)	for ((cpu) = 0; (cpu) < nr_cpu_ids; (cpu)++)

DECLARE_PER_CPU(struct percpu_hdr, percpu_hdrs);

#endif /* __ASSEMBLY__ */
#endif
