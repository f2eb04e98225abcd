// SPDX-License-Identifier: MIT
/* Faults on purpose: the report names the vector and the test function in
 * its backtrace, and the exception-table fixup lets the test continue. */
#include <topaz/ktest.h>
#include <topaz/traps.h>
#include <topaz/extable.h>
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/symbols.h>

static char report[8192];

static void capture_on(void)
{
	trap_report_fixups = true;
	printk_capture_start(report, sizeof(report));
}

static void capture_off(void)
{
	printk_capture_stop();
	trap_report_fixups = false;
}

/* Returns 1 when the read faulted and the fixup ran. */
static __noinline int fault_helper_read(uintptr_t addr)
{
	int faulted = 0;
	u64 v;

	__asm__ volatile("1: movq (%[a]), %[v]\n"
			 "2:\n"
			 _ASM_FIXUP_SET("%[f]", "$1")
			 : [v] "=r"(v), [f] "+r"(faulted) : [a] "r"(addr) : "memory");
	return faulted;
}

KTEST(traps, page_fault_fixup)
{
	u64 before = last_fault.count;
	int f;

	capture_on();
	f = fault_helper_read(0x18);
	capture_off();
	KT_EXPECT_EQ(f, 1);
	KT_EXPECT_EQ(last_fault.count, before + 1);
	KT_EXPECT_EQ(last_fault.vector, X86_TRAP_PF);
	KT_EXPECT_EQ(last_fault.cr2, 0x18);
	KT_EXPECT_EQ(last_fault.error_code & 0x3, 0);	/* not present, read */
	KT_EXPECT_STR(report, "exception #PF (page fault, vector 14)");
	KT_EXPECT_STR(report, "CR2 (faulting address): 0x0000000000000018");
	KT_EXPECT_STR(report, "fault_helper_read+0x");
	KT_EXPECT_STR(report, "ktest_traps_page_fault_fixup+0x");
	KT_EXPECT_STR(report, "RAX:");
}

KTEST(traps, general_protection_fixup)
{
	int f;

	capture_on();
	f = fault_helper_read(0x8000000000000000ull);	/* non-canonical: #GP(0) */
	capture_off();
	KT_EXPECT_EQ(f, 1);
	KT_EXPECT_EQ(last_fault.vector, X86_TRAP_GP);
	KT_EXPECT_EQ(last_fault.error_code, 0);
	KT_EXPECT_STR(report, "exception #GP (general protection, vector 13)");
	KT_EXPECT_STR(report, "ktest_traps_general_protection_fixup+0x");
}

KTEST(traps, invalid_opcode_fixup)
{
	int faulted = 0;

	capture_on();
	__asm__ volatile("1: ud2\n"
			 "2:\n"
			 _ASM_FIXUP_SET("%[f]", "$1") : [f] "+r"(faulted));
	capture_off();
	KT_EXPECT_EQ(faulted, 1);
	KT_EXPECT_EQ(last_fault.vector, X86_TRAP_UD);
	KT_EXPECT_STR(report, "exception #UD (invalid opcode, vector 6)");
	/* the faulting instruction is in this function: [0] names it */
	KT_EXPECT_STR(report, "[0] ");
	KT_EXPECT_STR(report, "ktest_traps_invalid_opcode_fixup+0x");
}

KTEST(traps, divide_error_fixup)
{
	int faulted = 0;
	u32 zero = 0;

	__asm__ volatile("xor %%edx, %%edx\n"
			 "mov $1, %%eax\n"
			 "1: divl %[z]\n"
			 "2:\n"
			 _ASM_FIXUP_SET("%[f]", "$1") : [f] "+r"(faulted) : [z] "r"(zero) : "rax", "rdx");
	KT_EXPECT_EQ(faulted, 1);
	KT_EXPECT_EQ(last_fault.vector, X86_TRAP_DE);
}

/* The interception layer turns a refused MSR access into -EIO for _safe. */
static bool refuse_claims(u32 msr) { return msr == 0x570; }
static int refuse_rd(u32 msr, u64 *v) { return -EIO; }
static int refuse_wr(u32 msr, u64 v) { return -EIO; }
static const struct msr_interceptor refuser = {
	.name = "ktest refuser", .claims_msr = refuse_claims, .read = refuse_rd, .write = refuse_wr,
};

KTEST(traps, msr_safe_interceptor)
{
	const struct msr_interceptor *old = arch_get_interceptor();
	u64 v = 0;

	arch_set_interceptor(&refuser);
	KT_EXPECT_EQ(rdmsr_safe(0x570, &v), -EIO);
	KT_EXPECT_EQ(wrmsr_safe(0x570, 1), -EIO);
	KT_EXPECT_EQ(rdmsr_safe(0x1b, &v), 0);		/* APIC_BASE passes through */
	KT_EXPECT_EQ(v & 0xfffff000ull, 0xfee00000ull);
	arch_set_interceptor(old);
}

KTEST(traps, symbols_resolve)
{
	char buf[128];
	uintptr_t a = ksym_address("fault_helper_read");

	KT_EXPECT_EQ(a, (uintptr_t)fault_helper_read);
	ksym_format((uintptr_t)fault_helper_read + 5, buf, sizeof(buf));
	KT_EXPECT(!strcmp(buf, "fault_helper_read+0x5"));
	KT_EXPECT_EQ(ksym_address("kernel_main") != 0, 1);
	KT_EXPECT_EQ(ksym_address("no_such_symbol_anywhere"), 0);
}
