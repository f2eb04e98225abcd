// SPDX-License-Identifier: MIT
/* The kernel's page tables: permissions and guard pages. */
#include <topaz/ktest.h>
#include <topaz/paging.h>
#include <topaz/traps.h>
#include <topaz/extable.h>
#include <topaz/bootinfo.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>

static u8 data_code[16] __aligned(16) = { 0xc3 };	/* "ret", in a no-execute page */
static volatile u64 nx_error;

/* An instruction fetch from data_code faults at data_code: return to the caller. */
static bool nx_fault(struct pt_regs *r)
{
	if (r->rip != (uintptr_t)data_code)
		return false;
	nx_error = r->error_code | 0x100;
	r->rip = *(u64 *)r->rsp;
	r->rsp += 8;
	return true;
}

KTEST(paging, data_is_not_executable)
{
	nx_error = 0;
	trap_set_handler(X86_TRAP_PF, nx_fault);
	((void (*)(void))(uintptr_t)data_code)();
	trap_set_handler(X86_TRAP_PF, NULL);
	KT_EXPECT_EQ(nx_error & 0x100, 0x100);
	KT_EXPECT_EQ(nx_error & 0x11, 0x11);	/* present, instruction fetch */
}

KTEST(paging, text_is_read_only)
{
	int faulted = 0;
	u8 *p = (u8 *)(uintptr_t)ktest_run;

	__asm__ volatile("1: movb %%al, (%[p])\n"
			 "2:\n"
			 _ASM_FIXUP_SET("%[f]", "$1") : [f] "+r"(faulted) : [p] "r"(p), "a"(*p) : "memory");
	KT_EXPECT_EQ(faulted, 1);
	KT_EXPECT_EQ(last_fault.vector, X86_TRAP_PF);
	KT_EXPECT_EQ(last_fault.error_code & 3, 3);	/* protection violation, write */
	KT_EXPECT_EQ(last_fault.cr2, (uintptr_t)p);
}

KTEST(paging, layout)
{
	u64 size, e;

	KT_EXPECT(!addr_is_mapped(0));
	KT_EXPECT(!addr_is_mapped(0xfff));
	KT_EXPECT(addr_is_mapped(0x1000));
	for (int i = 0; i <= NR_IST_STACKS; i++) {
		uintptr_t g = stack_guard(boot_info, i);

		KT_EXPECT(!addr_is_mapped(g));
		KT_EXPECT(addr_is_mapped(g + PAGE_SIZE));
	}
	e = paging_lookup(0xfee00000, &size);		/* local APIC: uncached */
	KT_EXPECT(e & PTE_PCD);
	e = paging_lookup((uintptr_t)&size, &size);	/* our stack: writable, no-execute */
	KT_EXPECT((e & PTE_W) && (e & PTE_NX));
	e = paging_lookup((uintptr_t)ktest_run, &size);	/* text: executable, read-only */
	KT_EXPECT(!(e & PTE_W) && !(e & PTE_NX));
	KT_EXPECT_EQ(size, 4096);
}
