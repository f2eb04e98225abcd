/* SPDX-License-Identifier: MIT */
/* The hardware interface every other file goes through: MSRs, CPUID, I/O
 * ports, TSC, interrupt flag. The kernel implements it with the instructions
 * (arch/x86/arch.c); the hosted build with a fake machine (tests/host). */
#ifndef TOPAZ_ARCH_H
#define TOPAZ_ARCH_H

#include <topaz/types.h>

/* MSR access. The _safe forms return 0, or -EIO when the access faults
 * (#GP), as Linux's do. The plain forms take the #GP panic path on a fault. */
/**
 * rdmsr_safe() - read an MSR, through the interceptor when it claims @msr
 * @msr: the MSR's index
 * @val: the value read
 * Return: 0, or -EIO when the read faults (#GP).
 */
int rdmsr_safe(u32 msr, u64 *val);
/**
 * wrmsr_safe() - write an MSR, through the interceptor when it claims @msr
 * @msr: the MSR's index
 * @val: the value to write
 * Return: 0, or -EIO when the write faults (#GP).
 */
int wrmsr_safe(u32 msr, u64 val);
/**
 * __rdmsr_slow() - rdmsr()'s out-of-line path: rdmsr_safe(), and the #GP
 * report naming @caller when it fails
 * @msr: the MSR's index
 * @caller: the return address to blame
 * Return: the MSR's value.
 */
u64 __rdmsr_slow(u32 msr, uintptr_t caller);
/**
 * __wrmsr_slow() - wrmsr()'s out-of-line path: wrmsr_safe(), and the #GP
 * report naming @caller when it fails
 * @msr: the MSR's index
 * @val: the value to write
 * @caller: the return address to blame
 */
void __wrmsr_slow(u32 msr, u64 val, uintptr_t caller);
/**
 * arch_rdmsr_safe() - RDMSR on the CPU itself, the interceptor bypassed
 * @msr: the MSR's index
 * @val: the value read
 * Return: 0, or -EIO when RDMSR faults.
 */
int arch_rdmsr_safe(u32 msr, u64 *val);
/**
 * arch_wrmsr_safe() - WRMSR on the CPU itself, the interceptor bypassed
 * @msr: the MSR's index
 * @val: the value to write
 * Return: 0, or -EIO when WRMSR faults.
 */
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
/**
 * cpuid_count() - CPUID leaf @leaf, sub-leaf @subleaf, from the interceptor
 * when it answers, else from the CPU
 * @leaf: EAX in
 * @subleaf: ECX in
 * @eax: @ebx: @ecx: @edx: the registers out
 */
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
/** arch_set_interceptor() - route MSR and CPUID accesses through @ic (NULL: the CPU's own) */
void arch_set_interceptor(const struct msr_interceptor *ic);
/**
 * arch_get_interceptor() - the MSR and CPUID interceptor in place
 * Return: it, or NULL when accesses go to the CPU.
 */
const struct msr_interceptor *arch_get_interceptor(void);

/** arch_cpuid() - CPUID @leaf/@subleaf on the CPU itself into @r, the interceptor bypassed */
void arch_cpuid(u32 leaf, u32 subleaf, struct cpuid_regs *r);
/**
 * arch_msr_fault() - a plain MSR access the interceptor refused: report it,
 * then take a real #GP so that the trap path prints the backtrace
 * @msr: the MSR's index
 * @write: a WRMSR (else RDMSR)
 * @val: the value written
 * @caller: the return address to blame
 */
__noreturn void arch_msr_fault(u32 msr, bool write, u64 val, uintptr_t caller);

/**
 * inb() - read a byte from I/O port @port
 * Return: the byte.
 */
u8 inb(u16 port);
/**
 * inw() - read 16 bits from I/O port @port
 * Return: the value.
 */
u16 inw(u16 port);
/**
 * inl() - read 32 bits from I/O port @port
 * Return: the value.
 */
u32 inl(u16 port);
/** outb() - write byte @v to I/O port @port */
void outb(u16 port, u8 v);
/** outw() - write 16-bit @v to I/O port @port */
void outw(u16 port, u16 v);
/** outl() - write 32-bit @v to I/O port @port */
void outl(u16 port, u32 v);

/**
 * rdtsc() - read the time-stamp counter (RDTSC)
 * Return: the TSC.
 */
u64 rdtsc(void);
/**
 * arch_read_u64_nofault() - load 8 bytes, reporting a fault instead of taking it
 * @addr: the address
 * @val: the value loaded (0 on a fault)
 * Return: 0, or -EFAULT when the load faults.
 */
int arch_read_u64_nofault(u64 addr, u64 *val);
/**
 * arch_write_u64_nofault() - store 8 bytes, reporting a fault instead of taking it
 * @addr: the address
 * @val: the value to store
 * Return: 0, or -EFAULT when the store faults.
 */
int arch_write_u64_nofault(u64 addr, u64 val);
/** cpu_relax() - PAUSE, in a spin-wait loop */
void cpu_relax(void);

/**
 * local_irq_save() - disable interrupts on this CPU
 * Return: non-zero when they were enabled, for local_irq_restore().
 */
unsigned long local_irq_save(void);
/** local_irq_restore() - re-enable interrupts if @flags (local_irq_save()'s) says they were */
void local_irq_restore(unsigned long flags);
/** local_irq_enable() - enable interrupts on this CPU (STI) */
void local_irq_enable(void);
/** local_irq_disable() - disable interrupts on this CPU (CLI) */
void local_irq_disable(void);
/**
 * irqs_disabled() - whether interrupts are disabled on this CPU (RFLAGS.IF clear)
 * Return: true when they are.
 */
bool irqs_disabled(void);

#endif
