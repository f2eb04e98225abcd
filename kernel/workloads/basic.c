// SPDX-License-Identifier: MIT
/*
 * Workloads that exercise the control flow a trace must get right: a sort
 * (conditional branches, loops), a deep recursion (call/ret, RET compression
 * beyond the 64-entry stack), a function-pointer dispatch (indirect calls),
 * a busy loop long enough to take timer interrupts, and a UEFI runtime call
 * (firmware code).
 */
#include <efi.h>
#include <topaz/workload.h>
#include <topaz/bootinfo.h>
#include <topaz/time.h>
#include <topaz/kernel.h>
#include <topaz/extable.h>

static u32 lcg(u32 *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static __noinline void insertion_sort(u32 *a, int n)
{
	for (int i = 1; i < n; i++) {
		u32 v = a[i];
		int j = i - 1;

		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}

static u64 work_sort(void)
{
	static u32 a[96];
	u32 seed = 42;
	u64 sum = 0;

	for (unsigned int i = 0; i < ARRAY_SIZE(a); i++)
		a[i] = lcg(&seed) % 1000;
	insertion_sort(a, ARRAY_SIZE(a));
	for (unsigned int i = 1; i < ARRAY_SIZE(a); i++)
		if (a[i - 1] > a[i])
			return ~0ull;	/* not sorted: a wrong result shows */
	for (unsigned int i = 0; i < ARRAY_SIZE(a); i++)
		sum = sum * 31 + a[i];
	return sum;
}
WORKLOAD(sort, work_sort, "insertion sort of 96 numbers (conditional branches, loops)");

static __noinline u64 fib(u32 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* Every level a real call and return: the result goes through an empty asm,
 * so the compiler cannot fold the recursion into a loop or a constant (it
 * did: deep.constprop.0 was "mov $0x13bb, %eax; ret"). */
static __noinline u64 deep(u32 depth)
{
	u64 r;

	if (!depth)
		return 1;
	r = deep(depth - 1);
	__asm__ volatile("" : "+r"(r));
	return r + depth;
}

/* the depth, where the compiler cannot see it */
static volatile u32 deep_depth = 100;

static u64 work_recursion(void)
{
	return fib(12) * 1000 + deep(deep_depth);	/* 100 deep: past RET compression's 64 */
}
WORKLOAD(recursion, work_recursion, "fib(12) and a 100-deep recursion (call/ret)");

static __noinline u64 op_add(u64 a, u64 b) { return a + b; }
static __noinline u64 op_xor(u64 a, u64 b) { return a ^ b; }
static __noinline u64 op_mul(u64 a, u64 b) { return a * (b | 1); }
static __noinline u64 op_rot(u64 a, u64 b) { return (a << (b & 7)) | (a >> (64 - (b & 7) - 1)); }

static u64 (*const ops[])(u64, u64) = { op_add, op_xor, op_mul, op_rot };

static u64 work_dispatch(void)
{
	u32 seed = 7;
	u64 acc = 1;

	for (int i = 0; i < 200; i++)
		acc = ops[lcg(&seed) & 3](acc, (u64)i);
	return acc;
}
WORKLOAD(dispatch, work_dispatch, "200 calls through a function-pointer table (indirect calls)");

static u64 work_timer(void)
{
	u64 j0 = jiffies, spins = 0;

	/* keep computing until three timer interrupts have arrived */
	while (jiffies - j0 < 3)
		spins++;
	return jiffies - j0 >= 3 ? 3 : 0;
}
WORKLOAD(timer, work_timer, "spin until three timer interrupts arrive (asynchronous events)");

static u64 work_firmware(void)
{
	EFI_RUNTIME_SERVICES *rt = boot_info->runtime_services;
	EFI_TIME tm;

	if (rt->GetTime(&tm, NULL) != EFI_SUCCESS)
		return 0;
	return tm.Year;
}
WORKLOAD(firmware, work_firmware, "call UEFI GetTime (firmware code, traced through the sideband)");

static __noinline u64 fault_walk(const u64 *p, int n)
{
	u64 sum = 0;

	for (int i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

/* Some work, then a NULL dereference: the trace ends at the faulting load. */
static u64 work_fault(void)
{
	static u64 table[16] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	const u64 *volatile nowhere = NULL;
	u64 sum = fault_walk(table, 16);

	return sum + fault_walk(nowhere, 1);
}
WORKLOAD(fault, work_fault, "some work, then a page fault (for the snapshot flight recorder)");

/*
 * Two loads that fault in one straight line, each fixed up to the instruction
 * after it (exception table entries, as Linux's get_kernel_nofault()): the
 * second exception comes after the first one's handler has returned and the
 * traced code ran on, with no branch (no stop of the engine) in between. The
 * trace must hold every instruction of that stretch.
 */
static __noinline u64 fixup_pair(const u64 *bad, u64 x)
{
	u64 a = x, b = x;

	__asm__ volatile("1: mov (%[p]), %[a]\n"
			 "2: imul $3, %[b], %[b]\n"
			 "   add $7, %[b]\n"
			 "3: mov 8(%[p]), %[a]\n"
			 "4: xor %[a], %[b]\n"
			 _ASM_EXTABLE(1b, 2b)
			 _ASM_EXTABLE(3b, 4b)
			 : [a] "+r"(a), [b] "+r"(b) : [p] "r"(bad) : "memory");
	return a + b;
}

static u64 work_fixups(void)
{
	const u64 *volatile nowhere = NULL;
	u64 sum = 0;

	for (u64 i = 0; i < 16; i++)
		sum += fixup_pair(nowhere, sum + i);
	return sum;
}
WORKLOAD(fixups, work_fixups, "two page faults fixed up in one straight line, 16 times (back-to-back exceptions)");
