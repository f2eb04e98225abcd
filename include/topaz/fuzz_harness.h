/* SPDX-License-Identifier: MIT */
/*
 * The topaz fuzz protocol: what a user's EFI image includes to be fuzzed by
 * topaz in the firmware phase, as libFuzzer drives LLVMFuzzerTestOneInput.
 * Only <efi.h> types: build the image with GNU-EFI or EDK2, nothing of
 * topaz's. docs/fuzzing.md shows a whole harness (tests/efi/fuzz_magic.c).
 *
 *	static INTN EFIAPI TestOneInput(CONST UINT8 *Data, UINTN Size) { ...; return 0; }
 *
 *	EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
 *	{
 *		EFI_GUID guid = TOPAZ_FUZZ_PROTOCOL_GUID;
 *		TOPAZ_FUZZ_PROTOCOL *fuzz;
 *
 *		if (st->BootServices->LocateProtocol(&guid, NULL, (void **)&fuzz))
 *			return EFI_NOT_FOUND;		// not under fw.fuzz=image
 *		return fuzz->Run(fuzz, TestOneInput);
 *	}
 *
 * and boot topaz with fw.image=\path\harness.efi fw.fuzz=image pt=on
 * pt.coverage=on (and fw.fuzz.runs=, fw.fuzz.seed=, ...).
 */
#ifndef TOPAZ_FUZZ_HARNESS_H
#define TOPAZ_FUZZ_HARNESS_H

#include <efi.h>

/* {5c0f2d6e-8a71-4b3e-9d1c-70707a667a7a} */
#define TOPAZ_FUZZ_PROTOCOL_GUID \
	{ 0x5c0f2d6e, 0x8a71, 0x4b3e, { 0x9d, 0x1c, 0x70, 0x70, 0x7a, 0x66, 0x7a, 0x7a } }

#define TOPAZ_FUZZ_PROTOCOL_REVISION	0x00010000

typedef struct _TOPAZ_FUZZ_PROTOCOL TOPAZ_FUZZ_PROTOCOL;

/*
 * One execution on Data[0..Size): return 0, or -1 to reject the input (it is
 * not kept, as libFuzzer's -1). Data is topaz's: do not keep it or write it.
 */
typedef INTN (EFIAPI *TOPAZ_TEST_ONE_INPUT)(CONST UINT8 *Data, UINTN Size);

/*
 * Run the campaign fw.fuzz.* asks for on TestOneInput, from the image's
 * entry point (an application is unloaded when it returns): each call of
 * TestOneInput in a traced window. Returns when the campaign ends:
 * EFI_SUCCESS, EFI_ABORTED when a bug was reported, or an error that topaz
 * has printed.
 */
typedef EFI_STATUS (EFIAPI *TOPAZ_FUZZ_RUN)(TOPAZ_FUZZ_PROTOCOL *This,
					    TOPAZ_TEST_ONE_INPUT TestOneInput);

/*
 * The harness found a bug in the input TestOneInput is running (its own
 * check failed, as a sanitizer's report or abort() would): topaz records the
 * input as a crash named by What and ends the campaign after this execution.
 * It returns: TestOneInput should return at once.
 */
typedef VOID (EFIAPI *TOPAZ_FUZZ_REPORT_BUG)(TOPAZ_FUZZ_PROTOCOL *This, CONST CHAR8 *What);

struct _TOPAZ_FUZZ_PROTOCOL {
	UINT64 Revision;
	TOPAZ_FUZZ_RUN Run;
	TOPAZ_FUZZ_REPORT_BUG ReportBug;
};

#endif
