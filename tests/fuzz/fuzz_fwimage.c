// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: fw.image='s check of a file's first bytes
 * (boot/firmware/pe_check.c), as fw_image.c calls it with what it read of
 * the file (at most 4 KiB).
 *
 * Must hold: no crash, no UB, no read past the bytes given (they are copied
 * to a buffer of exactly their size, so ASan sees one); the answer is 0 or
 * -ENOEXEC, an error says why, and an image accepted has, found here again
 * independently, "MZ", "PE\0\0" at e_lfanew, machine 0x8664, the PE32+
 * magic and an EFI subsystem.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../boot/firmware/pe_check.h"
#include <topaz/errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 4096	/* what fw_image.c reads */

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_fwimage: %s\n", what);
	abort();
}

static unsigned int le(const uint8_t *p, int bytes)
{
	unsigned int v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[160] = "";
	uint8_t *hdr;
	size_t n = size < HEADER_BYTES ? size : HEADER_BYTES;
	unsigned int pe;
	int r;

	hdr = malloc(n ? n : 1);
	memcpy(hdr, data, n);
	r = pe_check_header(hdr, n, why, sizeof(why));
	if (r != 0 && r != -ENOEXEC)
		fail("neither 0 nor -ENOEXEC");
	if (r && !why[0])
		fail("an error without its reason");
	if (!r) {
		pe = n >= 0x40 ? le(hdr + 0x3c, 4) : 0;
		if (n < 0x40 || hdr[0] != 'M' || hdr[1] != 'Z' || pe > n || n - pe < 94 ||
		    memcmp(hdr + pe, "PE\0\0", 4) || le(hdr + pe + 4, 2) != 0x8664 ||
		    le(hdr + pe + 24, 2) != 0x20b || le(hdr + pe + 92, 2) < 10 ||
		    le(hdr + pe + 92, 2) > 13)
			fail("accepted what is not an x86-64 EFI image");
	}
	free(hdr);
	return 0;
}
