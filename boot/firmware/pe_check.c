// SPDX-License-Identifier: MIT
/*
 * The PE/COFF header check of fw.image= (Microsoft's PE format: the MZ stub's
 * e_lfanew at 0x3c, then "PE\0\0", the COFF header's machine, the optional
 * header's magic and subsystem). No firmware call here: the hosted build
 * fuzzes it (tests/fuzz/fuzz_fwimage.c).
 */
#include "pe_check.h"
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define PE_COFF_BYTES	24	/* "PE\0\0" and the COFF file header */
#define PE_SUBSYS_END	70	/* the optional header up to its Subsystem's end */

static const char *machine_name(u16 m)
{
	switch (m) {
	case 0x14c: return "i386";
	case 0x1c2: return "ARM Thumb";
	case 0x1c4: return "ARMv7";
	case 0xaa64: return "AArch64";
	case 0x5064: return "RISC-V 64";
	case 0xebc: return "EFI byte code";
	default: return "unknown";
	}
}

int pe_check_header(const u8 *hdr, size_t n, char *why, size_t whylen)
{
	u32 pe;
	u16 machine, magic, subsystem;

	if (n < 0x40 || hdr[0] != 'M' || hdr[1] != 'Z') {
		ksnprintf(why, whylen, "not a PE/COFF EFI image (%zu bytes, no MZ header)", n);
		return -ENOEXEC;
	}
	memcpy(&pe, hdr + 0x3c, 4);
	/* n - 94 would wrap for 64..93 bytes, and e_lfanew then reach anywhere */
	if (n < PE_COFF_BYTES + PE_SUBSYS_END || pe > n - PE_COFF_BYTES - PE_SUBSYS_END) {
		ksnprintf(why, whylen,
			  "not a PE/COFF EFI image (its PE header at %#x is past the %zu bytes read)",
			  pe, n);
		return -ENOEXEC;
	}
	if (memcmp(hdr + pe, "PE\0\0", 4)) {
		ksnprintf(why, whylen, "not a PE/COFF EFI image (an MZ header without a PE header)");
		return -ENOEXEC;
	}
	memcpy(&machine, hdr + pe + 4, 2);
	memcpy(&magic, hdr + pe + PE_COFF_BYTES, 2);
	memcpy(&subsystem, hdr + pe + PE_COFF_BYTES + 68, 2);
	if (machine != 0x8664) {
		ksnprintf(why, whylen, "an image for %s (machine %#x), not x86-64 (0x8664)",
			  machine_name(machine), machine);
		return -ENOEXEC;
	}
	if (magic != 0x20b || subsystem < 10 || subsystem > 13) {
		ksnprintf(why, whylen,
			  "not an EFI image (optional header %#x, subsystem %u; EFI is 10-13)", magic,
			  subsystem);
		return -ENOEXEC;
	}
	return 0;
}
