// SPDX-License-Identifier: MIT
/* Which CPUs there are and which run: shared by the kernel and the hosted build. */
#include <topaz/smp.h>

unsigned int nr_cpu_ids = 1;	/* smp_prepare(): the MADT's CPUs, or cpus= */
u64 cpu_online_bits = 1;	/* the boot CPU runs from the start */
DEFINE_PER_CPU(u8, cpu_node);	/* all on node 0: no SRAT parsing yet */

void set_cpu_online(unsigned int cpu, bool online)
{
	if (cpu >= NR_CPUS)
		return;
	if (online)
		__atomic_or_fetch(&cpu_online_bits, 1ull << cpu, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&cpu_online_bits, ~(1ull << cpu), __ATOMIC_RELEASE);
}
