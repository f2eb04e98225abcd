/* SPDX-License-Identifier: MIT */
#ifndef TOPAZ_KERNEL_H
#define TOPAZ_KERNEL_H

#include <topaz/types.h>
#include <topaz/printk.h>

/**
 * panic() - report a fatal error with a backtrace and power off with failure
 * @fmt: printf-style reason
 */
__printf(1, 2) __noreturn void panic(const char *fmt, ...);

void warn_slowpath(const char *file, int line, uintptr_t caller, const char *cond);

#define BUG_ON(cond) do { if (unlikely(cond)) \
	panic("BUG_ON(%s) at %s:%d", #cond, __FILE__, __LINE__); } while (0)
#define BUG() panic("BUG at %s:%d", __FILE__, __LINE__)
#define WARN_ON(cond) ({ bool __c = !!(cond);				\
	if (unlikely(__c)) {						\
		warn_slowpath(__FILE__, __LINE__, _THIS_IP_, #cond);	\
	}								\
	__c; })

/* Kernel string helpers (kernel/string.c; libc's in the hosted build). */
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
size_t strscpy(char *d, const char *s, size_t size);
/* Parse an unsigned number in base 0 (0x.., 0.., decimal) or the given base;
 * returns 0, or -EINVAL if @s is not entirely a number, -ERANGE on overflow. */
int kstrtou64(const char *s, unsigned int base, u64 *res);
int kstrtos64(const char *s, unsigned int base, s64 *res);
/* Parse a size with an optional K/M/G suffix (binary units). */
int kstrtosize(const char *s, u64 *res);
/* Shell-style wildcard match with '*' and '?'. */
bool glob_match(const char *pat, const char *str);

#endif
