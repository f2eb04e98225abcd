// SPDX-License-Identifier: MIT
/* MSR and CPUID access through one interface, so the PT trace unit model can
 * answer for the registers a CPU without PT lacks. */
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

const struct msr_interceptor *msr_interceptor;
#define interceptor msr_interceptor

void arch_set_interceptor(const struct msr_interceptor *ic)
{
	interceptor = ic;
}

const struct msr_interceptor *arch_get_interceptor(void)
{
	return interceptor;
}

int rdmsr_safe(u32 msr, u64 *val)
{
	const struct msr_interceptor *ic = READ_ONCE(interceptor);

	if (ic && ic->claims_msr(msr))
		return ic->read(msr, val);
	return arch_rdmsr_safe(msr, val);
}

int wrmsr_safe(u32 msr, u64 val)
{
	const struct msr_interceptor *ic = READ_ONCE(interceptor);

	if (ic && ic->claims_msr(msr))
		return ic->write(msr, val);
	return arch_wrmsr_safe(msr, val);
}

u64 __rdmsr_slow(u32 msr, uintptr_t caller)
{
	u64 v = 0;

	if (rdmsr_safe(msr, &v))
		arch_msr_fault(msr, false, 0, caller);
	return v;
}

void __wrmsr_slow(u32 msr, u64 val, uintptr_t caller)
{
	if (wrmsr_safe(msr, val))
		arch_msr_fault(msr, true, val, caller);
}

void cpuid_count(u32 leaf, u32 subleaf, u32 *eax, u32 *ebx, u32 *ecx, u32 *edx)
{
	const struct msr_interceptor *ic = READ_ONCE(interceptor);
	struct cpuid_regs r;

	if (!(ic && ic->cpuid && ic->cpuid(leaf, subleaf, &r)))
		arch_cpuid(leaf, subleaf, &r);
	*eax = r.eax;
	*ebx = r.ebx;
	*ecx = r.ecx;
	*edx = r.edx;
}
