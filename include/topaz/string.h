/* SPDX-License-Identifier: MIT */
/* The string functions (lib/string.c; libc's in the hosted build). */
#ifndef TOPAZ_STRING_H
#define TOPAZ_STRING_H

#include <topaz/types.h>

#ifdef TOPAZ_HOSTED
#include <string.h>
#else
void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t n);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strstr(const char *h, const char *n);
#endif

#endif
