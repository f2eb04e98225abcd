/* SPDX-License-Identifier: MIT */
/* The string functions (lib/string.c; libc's in the hosted build). */
#ifndef TOPAZ_STRING_H
#define TOPAZ_STRING_H

#include <topaz/types.h>

#ifdef TOPAZ_HOSTED
#include <string.h>
#else
/**
 * memset() - fill @n bytes at @s with @c
 * Return: @s.
 */
void *memset(void *s, int c, size_t n);
/**
 * memcpy() - copy @n bytes from @s to @d (not overlapping)
 * Return: @d.
 */
void *memcpy(void *d, const void *s, size_t n);
/**
 * memmove() - copy @n bytes from @s to @d, which may overlap
 * Return: @d.
 */
void *memmove(void *d, const void *s, size_t n);
/**
 * memcmp() - compare @n bytes
 * Return: <0, 0 or >0 as @a is below, equal to or above @b.
 */
int memcmp(const void *a, const void *b, size_t n);
/**
 * strlen() - the length of string @s
 * Return: its characters, the NUL excluded.
 */
size_t strlen(const char *s);
/**
 * strnlen() - strlen() that reads at most @n characters of @s
 * Return: the length, at most @n.
 */
size_t strnlen(const char *s, size_t n);
/**
 * strcmp() - compare two strings
 * Return: <0, 0 or >0 as @a sorts before, equal to or after @b.
 */
int strcmp(const char *a, const char *b);
/**
 * strncmp() - strcmp() of at most @n characters
 * Return: as strcmp()'s.
 */
int strncmp(const char *a, const char *b, size_t n);
/**
 * strchr() - find character @c in string @s (the NUL too)
 * Return: the first one, or NULL.
 */
char *strchr(const char *s, int c);
/**
 * strstr() - find string @n in string @h
 * Return: its first occurrence, or NULL.
 */
char *strstr(const char *h, const char *n);
#endif

#endif
