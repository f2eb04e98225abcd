// SPDX-License-Identifier: MIT
/*
 * A sample fuzz harness for fw.fuzz=image (include/topaz/fuzz_harness.h):
 * an EFI application that hands topaz its TestOneInput. A planted bug waits
 * behind a magic, "TPZ", compared a byte at a time, as a parser checks a
 * signature: each byte matched is a new edge, so coverage feedback finds
 * the bug a byte at a time, where blind mutation needs all three at once
 * (about one chance in 2^24 for each mutant that has them in place). The bug is reported with the protocol's ReportBug().
 * Load options: none.
 */
#include <efi.h>
#include "topaz/fuzz_harness.h"

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

static TOPAZ_FUZZ_PROTOCOL *Fuzz;

/* noipa: the compiler may not merge the four compares into one */
static __attribute__((noipa)) int byte_is(const UINT8 *d, UINTN i, UINT8 v)
{
	return d[i] == v;
}

static __attribute__((noipa)) void planted_bug(void)
{
	Fuzz->ReportBug(Fuzz, (const CHAR8 *)"planted bug behind the magic TPZ");
}

static INTN EFIAPI TestOneInput(const UINT8 *Data, UINTN Size)
{
	if (Size < 3)
		return -1;	/* rejected: too short to hold the magic */
	if (byte_is(Data, 0, 'T')) {
		if (byte_is(Data, 1, 'P')) {
			if (byte_is(Data, 2, 'Z'))
				planted_bug();
		}
	}
	return 0;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_GUID guid = TOPAZ_FUZZ_PROTOCOL_GUID;

	if (st->BootServices->LocateProtocol(&guid, NULL, (void **)&Fuzz) != EFI_SUCCESS)
		return EFI_NOT_FOUND;	/* not under topaz's fw.fuzz=image */
	return Fuzz->Run(Fuzz, TestOneInput);
}
