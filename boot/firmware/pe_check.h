/* SPDX-License-Identifier: MIT */
/* fw.image='s check of a file's first bytes: portable, so the hosted build fuzzes it. */
#ifndef TOPAZ_FW_PE_CHECK_H
#define TOPAZ_FW_PE_CHECK_H

#include <topaz/types.h>

/**
 * pe_check_header() - whether @hdr is the start of a PE/COFF EFI image for x86-64
 * @hdr: the file's first bytes
 * @n: how many (fw.image= reads at most 4 KiB)
 * @why: what is wrong, on an error, as "not a PE/COFF EFI image (...)"
 * @whylen: its size
 *
 * Reads nothing past @hdr + @n, whatever the header's offsets say.
 * Return: 0, or -ENOEXEC having said why.
 */
int pe_check_header(const u8 *hdr, size_t n, char *why, size_t whylen);

#endif
