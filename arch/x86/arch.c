// SPDX-License-Identifier: MIT
/* The hardware interface of include/topaz/arch.h, with the instructions. */
#include <topaz/arch.h>
#include <topaz/extable.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

int arch_rdmsr_safe(u32 msr, u64 *val)
{
	u32 lo = 0, hi = 0;
	int err = 0;

	__asm__ volatile("1: rdmsr\n2:\n"
			 _ASM_FIXUP_SET("%[err]", "%[eio]")
			 : "=a"(lo), "=d"(hi), [err] "+r"(err)
			 : "c"(msr), [eio] "i"(-EIO));
	*val = ((u64)hi << 32) | lo;
	return err;
}

int arch_wrmsr_safe(u32 msr, u64 val)
{
	int err = 0;

	__asm__ volatile("1: wrmsr\n2:\n"
			 _ASM_FIXUP_SET("%[err]", "%[eio]")
			 : [err] "+r"(err)
			 : "c"(msr), "a"((u32)val), "d"((u32)(val >> 32)), [eio] "i"(-EIO)
			 : "memory");
	return err;
}

void arch_cpuid(u32 leaf, u32 subleaf, struct cpuid_regs *r)
{
	__asm__ volatile("cpuid"
			 : "=a"(r->eax), "=b"(r->ebx), "=c"(r->ecx), "=d"(r->edx)
			 : "a"(leaf), "c"(subleaf));
}

/*
 * A plain rdmsr/wrmsr that an interceptor refused: say which, then take a real
 * #GP (a load from a non-canonical address) so the report and backtrace are
 * those of the trap path.
 */
void arch_msr_fault(u32 msr, bool write, u64 val, uintptr_t caller)
{
	printk(KERN_EMERG "%s of MSR %#x%s refused (#GP) by %s, called from %pS\n",
	       write ? "wrmsr" : "rdmsr", msr, write ? "" : "", arch_get_interceptor() ?
	       arch_get_interceptor()->name : "the CPU", (void *)caller);
	if (write)
		printk(KERN_EMERG "  value written: %#llx\n", val);
	for (;;)
		(void)*(volatile u64 *)0x8000000000000000ull;
}

u8 inb(u16 port) { u8 v; __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
u16 inw(u16 port) { u16 v; __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
u32 inl(u16 port) { u32 v; __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }
void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" :: "a"(v), "Nd"(port)); }
void outw(u16 port, u16 v) { __asm__ volatile("outw %0, %1" :: "a"(v), "Nd"(port)); }
void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" :: "a"(v), "Nd"(port)); }

u64 rdtsc(void)
{
	u32 lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

void cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }

unsigned long local_irq_save(void)
{
	unsigned long f;

	__asm__ volatile("pushfq; pop %0; cli" : "=r"(f) :: "memory");
	return f & (1ul << 9);
}

void local_irq_restore(unsigned long flags)
{
	if (flags)
		__asm__ volatile("sti" ::: "memory");
}

void local_irq_enable(void) { __asm__ volatile("sti" ::: "memory"); }
void local_irq_disable(void) { __asm__ volatile("cli" ::: "memory"); }

bool irqs_disabled(void)
{
	unsigned long f;

	__asm__ volatile("pushfq; pop %0" : "=r"(f));
	return !(f & (1ul << 9));
}

int arch_read_u64_nofault(u64 addr, u64 *val)
{
	int err = 0;
	u64 v = 0;

	__asm__ volatile("1: movq (%[a]), %[v]\n2:\n"
			 _ASM_FIXUP_SET("%[err]", "%[ef]")
			 : [v] "+r"(v), [err] "+r"(err)
			 : [a] "r"(addr), [ef] "i"(-EFAULT)
			 : "memory");
	*val = v;
	return err;
}

int arch_write_u64_nofault(u64 addr, u64 val)
{
	int err = 0;

	__asm__ volatile("1: movq %[v], (%[a])\n2:\n"
			 _ASM_FIXUP_SET("%[err]", "%[ef]")
			 : [err] "+r"(err)
			 : [a] "r"(addr), [v] "r"(val), [ef] "i"(-EFAULT)
			 : "memory");
	return err;
}
