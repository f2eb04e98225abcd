// SPDX-License-Identifier: MIT
/* crash=KIND: fail on purpose after boot, so the QEMU tests can check the
 * panic path end to end (report, backtrace, failure exit status). */
#include <topaz/ktest.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

static const char *const kinds[] = { "pf", "gp", "ud", "panic", "stack" };
static const char *crash_kind;

static int set_crash(const char *v, char *why, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (v && !strcmp(v, kinds[i])) {
			crash_kind = kinds[i];
			return 0;
		}
	ksnprintf(why, n, "expected pf, gp, ud, panic or stack");
	return -EINVAL;
}
KPARAM_CUSTOM("crash", crash, set_crash, "crash on purpose after boot: pf, gp, ud, panic, stack");

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
	else if (!strcmp(crash_kind, "stack")) {
		recurse = crash_stack_overflow;
		crash_stack_overflow(0);
	}
	else
		panic("crash=panic requested");
}
