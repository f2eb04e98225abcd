/* SPDX-License-Identifier: MIT */
/* Parsing and string helpers both builds share (lib/kstrto.c). */
#ifndef TOPAZ_KSTRTO_H
#define TOPAZ_KSTRTO_H

#include <topaz/types.h>

/**
 * kstrtou64() - parse an unsigned number
 * @s: the string, entirely a number
 * @base: 0 (0x.. hex, 0.. octal, else decimal) or the base
 * @res: the number
 * Return: 0, -EINVAL if @s is not entirely a number, -ERANGE on overflow.
 */
int kstrtou64(const char *s, unsigned int base, u64 *res);
/**
 * kstrtos64() - kstrtou64() for a signed number (an optional leading '-')
 * @s: the string
 * @base: as kstrtou64()'s
 * @res: the number
 * Return: 0, -EINVAL if @s is not entirely a number, -ERANGE on overflow.
 */
int kstrtos64(const char *s, unsigned int base, s64 *res);
/**
 * kstrtosize() - parse a size with an optional K/M/G suffix (binary units)
 * @s: the string
 * @res: the size in bytes
 * Return: 0, -EINVAL if @s is not a size, -ERANGE on overflow.
 */
int kstrtosize(const char *s, u64 *res);
/**
 * strscpy() - copy @s into @d, truncated to @size - 1 characters, always
 * NUL-terminated (when @size is not 0)
 * @d: the destination
 * @s: the source string
 * @size: @d's size
 * Return: the characters copied, the NUL excluded.
 */
size_t strscpy(char *d, const char *s, size_t size);
/**
 * glob_match() - shell-style wildcard match ('*' and '?')
 * @pat: the pattern
 * @str: the string
 * Return: true when @str matches @pat.
 */
bool glob_match(const char *pat, const char *str);

#endif
