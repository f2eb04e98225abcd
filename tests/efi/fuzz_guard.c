// SPDX-License-Identifier: MIT
/*
 * A fuzz harness with memory bugs that hit on every input, for fw.fuzz='s
 * guards (docs/fuzzing.md): the test is about the guard, not the search.
 * Its load options (after the program's name) choose the bugs, in this
 * order, each on every execution:
 *
 *   overread   read one byte past the input (Data[Size])
 *   overflow   write one byte past a 16-byte AllocatePool buffer
 *   uaf        read a 32-byte pool buffer after FreePool
 *   dfree      FreePool a buffer twice
 *   hang=N     on execution N, spin forever at TPL_NOTIFY (fw.fuzz.timeout=:
 *              the TPL holds timer events back, not the timer's interrupt)
 *   after=N    the bugs only from execution N on; before, a clean
 *              AllocatePool and FreePool (the guarded heap's round trip)
 *
 * With fw.fuzz.guard=pool each is caught and named; with fw.fuzz.guard=none
 * all three run silently (the firmware's pool has room after a 16-byte
 * buffer, and freed pool stays mapped).
 */
#include <efi.h>
#include "topaz/fuzz_harness.h"

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

static EFI_BOOT_SERVICES *BS;
static int do_overread, do_overflow, do_uaf, do_dfree;
static UINTN hang_at, after, execs;
static volatile UINT8 sink;

/* noipa: each bug is a function of its own, named in the crash's site */
static __attribute__((noipa)) void overread(const UINT8 *Data, UINTN Size)
{
	sink = Data[Size];
}

static __attribute__((noipa)) void overflow(const UINT8 *Data, UINTN Size)
{
	UINT8 *p;

	if (BS->AllocatePool(EfiBootServicesData, 16, (void **)&p) != EFI_SUCCESS)
		return;
	for (UINTN i = 0; i < 16; i++)
		p[i] = i < Size ? Data[i] : 0;
	((volatile UINT8 *)p)[16] = 0x41;	/* one byte past its size */
	BS->FreePool(p);
}

static __attribute__((noipa)) void use_after_free(const UINT8 *Data, UINTN Size)
{
	UINT8 *p;

	if (BS->AllocatePool(EfiBootServicesData, 32, (void **)&p) != EFI_SUCCESS)
		return;
	p[0] = Size ? Data[0] : 0;
	BS->FreePool(p);
	sink = ((volatile UINT8 *)p)[0];
}

static __attribute__((noipa)) void double_free(void)
{
	void *p;

	if (BS->AllocatePool(EfiBootServicesData, 8, &p) != EFI_SUCCESS)
		return;
	BS->FreePool(p);
	BS->FreePool(p);
}

static __attribute__((noipa)) void hang(void)
{
	BS->RaiseTPL(TPL_NOTIFY);	/* as a driver holding its lock (HiiDatabaseDxe's) */
	for (;;)
		__asm__ volatile("pause");
}

static INTN EFIAPI TestOneInput(const UINT8 *Data, UINTN Size)
{
	execs++;
	if (execs < after) {
		UINT8 *p;

		if (BS->AllocatePool(EfiBootServicesData, 16 + Size, (void **)&p) == EFI_SUCCESS) {
			for (UINTN i = 0; i < Size; i++)
				p[16 + i] = Data[i];
			BS->FreePool(p);
		}
		return 0;
	}
	if (do_overread)
		overread(Data, Size);
	if (do_overflow)
		overflow(Data, Size);
	if (do_uaf)
		use_after_free(Data, Size);
	if (do_dfree)
		double_free();
	if (hang_at && execs == hang_at)
		hang();
	return 0;
}

/* Does the word at @w say @s (up to a space, '=' or the end)? */
static int word_is(const CHAR16 *w, const char *s)
{
	while (*s && *w == (CHAR16)*s) {
		w++;
		s++;
	}
	return !*s && (*w == 0 || *w == ' ' || *w == '=');
}

static UINTN number(const CHAR16 *d)
{
	UINTN n = 0;

	for (; *d >= '0' && *d <= '9'; d++)
		n = n * 10 + (UINTN)(*d - '0');
	return n;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_GUID guid = TOPAZ_FUZZ_PROTOCOL_GUID, li_guid = LOADED_IMAGE_PROTOCOL;
	TOPAZ_FUZZ_PROTOCOL *fuzz;
	EFI_LOADED_IMAGE *li;
	const CHAR16 *o;

	BS = st->BootServices;
	if (BS->HandleProtocol(image, &li_guid, (void **)&li) != EFI_SUCCESS || !li->LoadOptions)
		return EFI_INVALID_PARAMETER;
	o = li->LoadOptions;
	while (*o && *o != ' ')
		o++;	/* the program's name */
	while (*o) {
		while (*o == ' ')
			o++;
		if (word_is(o, "overread"))
			do_overread = 1;
		else if (word_is(o, "overflow"))
			do_overflow = 1;
		else if (word_is(o, "uaf"))
			do_uaf = 1;
		else if (word_is(o, "dfree"))
			do_dfree = 1;
		else if (word_is(o, "hang"))
			hang_at = number(o + 5);
		else if (word_is(o, "after"))
			after = number(o + 6);
		else if (*o)
			return EFI_INVALID_PARAMETER;	/* a word it does not know */
		while (*o && *o != ' ')
			o++;
	}
	if (BS->LocateProtocol(&guid, NULL, (void **)&fuzz) != EFI_SUCCESS)
		return EFI_NOT_FOUND;	/* not under topaz's fw.fuzz=image */
	return fuzz->Run(fuzz, TestOneInput);
}
