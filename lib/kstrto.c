// SPDX-License-Identifier: MIT
/* Number, size and pattern parsing for the command line and tools. */
#include <topaz/kstrto.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

int kstrtou64(const char *s, unsigned int base, u64 *res)
{
	u64 v = 0;
	bool any = false;

	if (!s || !*s)
		return -EINVAL;
	if (base == 0) {
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			base = 16;
			s += 2;
		} else if (s[0] == '0' && s[1]) {
			base = 8;
			s++;
		} else {
			base = 10;
		}
	} else if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
	}
	for (; *s; s++) {
		unsigned d;
		char c = *s;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
		if (d >= base)
			return -EINVAL;
		if (v > (~0ULL - d) / base)
			return -ERANGE;
		v = v * base + d;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*res = v;
	return 0;
}

int kstrtos64(const char *s, unsigned int base, s64 *res)
{
	u64 v;
	int r;

	if (s && *s == '-') {
		r = kstrtou64(s + 1, base, &v);
		if (r)
			return r;
		if (v > (u64)1 << 63)
			return -ERANGE;
		*res = (s64)(0 - v);
		return 0;
	}
	r = kstrtou64(s, base, &v);
	if (r)
		return r;
	if (v > (u64)INT64_MAX)
		return -ERANGE;
	*res = (s64)v;
	return 0;
}

int kstrtosize(const char *s, u64 *res)
{
	char num[32];
	size_t n;
	unsigned shift = 0;
	u64 v;
	int r;

	if (!s || !*s)
		return -EINVAL;
	n = strlen(s);
	if (n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	}
	if (shift)
		num[--n] = '\0';
	r = kstrtou64(num, 0, &v);
	if (r)
		return r;
	if (shift && v > (~0ULL >> shift))
		return -ERANGE;
	*res = v << shift;
	return 0;
}

size_t strscpy(char *d, const char *s, size_t size)
{
	size_t i = 0;

	if (!size)
		return 0;
	for (; i + 1 < size && s[i]; i++)
		d[i] = s[i];
	d[i] = '\0';
	return i;
}

bool glob_match(const char *pat, const char *str)
{
	const char *star = NULL, *back = NULL;

	while (*str) {
		if (*pat == '*') {
			star = ++pat;
			back = str;
		} else if (*pat == '?' || *pat == *str) {
			pat++;
			str++;
		} else if (star) {
			pat = star;
			str = ++back;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}
