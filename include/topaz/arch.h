/* SPDX-License-Identifier: MIT */
/* The hardware interface every other file goes through: MSRs, CPUID, I/O
 * ports, TSC, interrupt flag. The kernel implements it with the instructions
 * (arch/x86/arch.c); the hosted build with a fake machine (tests/host). */
#ifndef TOPAZ_ARCH_H
#define TOPAZ_ARCH_H

#include <topaz/types.h>

/* MSR access. The _safe forms return 0, or -EIO when the access faults
 * (#GP), as Linux's do. The plain forms take the #GP panic path on a fault. */
int rdmsr_safe(u32 msr, u64 *val);
int wrmsr_safe(u32 msr, u64 val);
u64 __rdmsr_slow(u32 msr, uintptr_t caller);
void __wrmsr_slow(u32 msr, u64 val, uintptr_t caller);
int arch_rdmsr_safe(u32 msr, u64 *val);
int arch_wrmsr_safe(u32 msr, u64 val);
struct msr_interceptor;
extern const struct msr_interceptor *msr_interceptor;

/* The plain forms inline the common case: no interceptor, no fault. */
static inline u64 rdmsr(u32 msr)
{
	u64 v;

	if (likely(!msr_interceptor) && likely(!arch_rdmsr_safe(msr, &v)))
		return v;
	return __rdmsr_slow(msr, _THIS_IP_);
}

static inline void wrmsr(u32 msr, u64 val)
{
	if (likely(!msr_interceptor) && likely(!arch_wrmsr_safe(msr, val)))
		return;
	__wrmsr_slow(msr, val, _THIS_IP_);
}

struct cpuid_regs {
	u32 eax, ebx, ecx, edx;
};
void cpuid_count(u32 leaf, u32 subleaf, u32 *eax, u32 *ebx, u32 *ecx, u32 *edx);
static inline void cpuid_regs(u32 leaf, u32 subleaf, struct cpuid_regs *r)
{
	cpuid_count(leaf, subleaf, &r->eax, &r->ebx, &r->ecx, &r->edx);
}

/*
 * Interception, for the PT trace unit model: an interceptor that claims an
 * MSR (or a CPUID leaf) answers instead of the CPU. Its handlers return 0, or
 * -EIO to make the access fault as a #GP would.
 */
struct msr_interceptor {
	const char *name;
	bool (*claims_msr)(u32 msr);
	int (*read)(u32 msr, u64 *val);
	int (*write)(u32 msr, u64 val);
	/* Returns true when it answered the leaf (registers filled in). */
	bool (*cpuid)(u32 leaf, u32 subleaf, struct cpuid_regs *r);
};
void arch_set_interceptor(const struct msr_interceptor *ic);
const struct msr_interceptor *arch_get_interceptor(void);

/* The raw accessors under the interception layer (declared above). */
void arch_cpuid(u32 leaf, u32 subleaf, struct cpuid_regs *r);
/* Deliver a #GP for a refused plain MSR access (the kernel faults for real). */
__noreturn void arch_msr_fault(u32 msr, bool write, u64 val, uintptr_t caller);

u8 inb(u16 port);
u16 inw(u16 port);
u32 inl(u16 port);
void outb(u16 port, u8 v);
void outw(u16 port, u16 v);
void outl(u16 port, u32 v);

u64 rdtsc(void);
/* Loads and stores that report a fault (-EFAULT) instead of taking it. */
int arch_read_u64_nofault(u64 addr, u64 *val);
int arch_write_u64_nofault(u64 addr, u64 val);
void cpu_relax(void);

unsigned long local_irq_save(void);
void local_irq_restore(unsigned long flags);
void local_irq_enable(void);
void local_irq_disable(void);
bool irqs_disabled(void);

#endif
