// SPDX-License-Identifier: MIT
/* UEFI runtime services stay callable after ExitBootServices: their code
 * and data are mapped (identity, code executable) in the kernel's tables. */
#include <efi.h>
#include <topaz/ktest.h>
#include <topaz/bootinfo.h>
#include <topaz/paging.h>
#include <topaz/kernel.h>

KTEST(efi, runtime_get_time)
{
	EFI_RUNTIME_SERVICES *rt = boot_info->runtime_services;
	EFI_TIME tm;
	EFI_STATUS s;

	KT_ASSERT(rt);
	KT_EXPECT(addr_is_mapped((uintptr_t)rt->GetTime));
	memset(&tm, 0, sizeof(tm));
	s = rt->GetTime(&tm, NULL);
	KT_EXPECT_EQ(s, EFI_SUCCESS);
	KT_EXPECT(tm.Year >= 2020 && tm.Year < 2200);
	KT_EXPECT(tm.Month >= 1 && tm.Month <= 12);
	printk("efi: GetTime says %04u-%02u-%02u %02u:%02u:%02u\n", tm.Year, tm.Month, tm.Day,
	       tm.Hour, tm.Minute, tm.Second);
}
