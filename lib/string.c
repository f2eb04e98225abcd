// SPDX-License-Identifier: MIT
/* The string functions gcc may call and kernel code uses (no libc here). */
#include <topaz/string.h>
#include <topaz/kernel.h>

/*
 * Word loops rather than rep stosb/movsb: QEMU's TCG runs string
 * instructions one iteration at a time (4 MiB of rep stosb took 183 ms,
 * the loop below 1.6 ms), and on hardware an 8-byte loop is fine too. The
 * attribute keeps gcc from turning the loops back into calls to ourselves.
 */
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

NO_LIBCALL void *memset(void *s, int c, size_t n)
{
	u8 *d = s;
	u64 v = 0x0101010101010101ull * (u8)c;

	while (n && ((uintptr_t)d & 7)) {
		*d++ = (u8)c;
		n--;
	}
	for (; n >= 32; n -= 32, d += 32) {
		((u64 *)d)[0] = v;
		((u64 *)d)[1] = v;
		((u64 *)d)[2] = v;
		((u64 *)d)[3] = v;
	}
	for (; n >= 8; n -= 8, d += 8)
		*(u64 *)d = v;
	while (n--)
		*d++ = (u8)c;
	return s;
}

/* Words at any alignment (x86 allows it; the trace's packets land at odd
 * offsets, which a byte loop made the model's costliest copy). Forward
 * only, word by word: memmove() relies on it for a destination below. */
NO_LIBCALL void *memcpy(void *dst, const void *src, size_t n)
{
	u8 *d = dst;
	const u8 *s = src;

	for (; n >= 8; n -= 8, d += 8, s += 8) {
		u64 v;

		__builtin_memcpy(&v, s, 8);
		__builtin_memcpy(d, &v, 8);
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

NO_LIBCALL void *memmove(void *dst, const void *src, size_t n)
{
	u8 *d = dst;
	const u8 *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const u8 *x = a, *y = b;

	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (u8)*a - (u8)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (u8)*a - (u8)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

char *strstr(const char *h, const char *n)
{
	size_t ln = strlen(n);

	for (; *h; h++)
		if (!strncmp(h, n, ln))
			return (char *)h;
	return ln ? NULL : (char *)h;
}
