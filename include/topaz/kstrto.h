/* SPDX-License-Identifier: MIT */
/* Parsing and string helpers both builds share (lib/kstrto.c). */
#ifndef TOPAZ_KSTRTO_H
#define TOPAZ_KSTRTO_H

#include <topaz/types.h>

/* Parse an unsigned number in base 0 (0x.., 0.., decimal) or the given base;
 * returns 0, or -EINVAL if @s is not entirely a number, -ERANGE on overflow. */
int kstrtou64(const char *s, unsigned int base, u64 *res);
int kstrtos64(const char *s, unsigned int base, s64 *res);
/* Parse a size with an optional K/M/G suffix (binary units). */
int kstrtosize(const char *s, u64 *res);
size_t strscpy(char *d, const char *s, size_t size);
/* Shell-style wildcard match with '*' and '?'. */
bool glob_match(const char *pat, const char *str);

#endif
