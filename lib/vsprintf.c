// SPDX-License-Identifier: MIT
/* A small vsnprintf for a kernel without libc, shared with the hosted build. */
#include <topaz/printk.h>
#include <topaz/symbols.h>
#include <topaz/kernel.h>

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_str(struct out *o, const char *s, int width, int prec, bool left)
{
	int n = 0;

	if (!s)
		s = "(null)";
	while (s[n] && (prec < 0 || n < prec))
		n++;
	if (!left)
		for (int i = n; i < width; i++)
			put(o, ' ');
	for (int i = 0; i < n; i++)
		put(o, s[i]);
	if (left)
		for (int i = n; i < width; i++)
			put(o, ' ');
}

enum { F_LEFT = 1, F_ZERO = 2, F_PLUS = 4, F_SPACE = 8, F_ALT = 16, F_UPPER = 32 };

static void put_num(struct out *o, u64 v, bool neg, unsigned base, int width, int prec,
		    unsigned flags)
{
	const char *digits = (flags & F_UPPER) ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0, pad;
	char sign = 0;
	const char *pfx = "";

	if (neg)
		sign = '-';
	else if (flags & F_PLUS)
		sign = '+';
	else if (flags & F_SPACE)
		sign = ' ';
	if ((flags & F_ALT) && v) {
		if (base == 16)
			pfx = (flags & F_UPPER) ? "0X" : "0x";
		else if (base == 8)
			pfx = "0";
	}
	if (v == 0 && prec != 0)
		tmp[n++] = '0';
	while (v) {
		tmp[n++] = digits[v % base];
		v /= base;
	}
	int zeros = prec > n ? prec - n : 0;
	int total = n + zeros + (sign ? 1 : 0) + (int)strlen(pfx);

	pad = width > total ? width - total : 0;
	if ((flags & F_ZERO) && !(flags & F_LEFT) && prec < 0) {
		zeros += pad;
		pad = 0;
	}
	if (!(flags & F_LEFT))
		while (pad-- > 0)
			put(o, ' ');
	if (sign)
		put(o, sign);
	while (*pfx)
		put(o, *pfx++);
	while (zeros-- > 0)
		put(o, '0');
	while (n)
		put(o, tmp[--n]);
	if (flags & F_LEFT)
		while (pad-- > 0)
			put(o, ' ');
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		unsigned flags = 0;
		int width = -1, prec = -1, lng = 0;
		unsigned base = 10;
		bool sgn = false;
		u64 v;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		for (;;) {
			char c = *++fmt;
			if (c == '-') flags |= F_LEFT;
			else if (c == '0') flags |= F_ZERO;
			else if (c == '+') flags |= F_PLUS;
			else if (c == ' ') flags |= F_SPACE;
			else if (c == '#') flags |= F_ALT;
			else break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				flags |= F_LEFT;
				width = -width;
			}
			fmt++;
		} else {
			for (width = 0; *fmt >= '0' && *fmt <= '9'; fmt++)
				width = width * 10 + (*fmt - '0');
		}
		if (*fmt == '.') {
			fmt++;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				for (prec = 0; *fmt >= '0' && *fmt <= '9'; fmt++)
					prec = prec * 10 + (*fmt - '0');
			}
		}
		/* length: 0 int, 1 long, 2 long long, -1 short, -2 char, 3 size_t */
		for (;;) {
			if (*fmt == 'l') lng = lng == 1 ? 2 : 1;
			else if (*fmt == 'h') lng = lng == -1 ? -2 : -1;
			else if (*fmt == 'z' || *fmt == 't' || *fmt == 'j') lng = 3;
			else break;
			fmt++;
		}
		switch (*fmt) {
		case '\0':
			fmt--;
			continue;
		case '%':
			put(&o, '%');
			continue;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			continue;
		case 's':
			put_str(&o, va_arg(ap, const char *), width, prec, flags & F_LEFT);
			continue;
		case 'p': {
			uintptr_t p = (uintptr_t)va_arg(ap, void *);
			if (fmt[1] == 'S' || fmt[1] == 's') {
				char sym[KSYM_NAME_LEN + 24];
				fmt++;
				put_str(&o, ksym_format(p, sym, sizeof(sym)), width, prec,
					flags & F_LEFT);
			} else {
				put_num(&o, p, false, 16, width, -1, flags | F_ALT);
			}
			continue;
		}
		case 'd':
		case 'i':
			sgn = true;
			break;
		case 'u':
			break;
		case 'X':
			flags |= F_UPPER;
			/* fall through */
		case 'x':
			base = 16;
			break;
		case 'o':
			base = 8;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			continue;
		}
		if (sgn) {
			s64 s;
			switch (lng) {
			case 2: s = va_arg(ap, long long); break;
			case 1: case 3: s = va_arg(ap, long); break;
			case -1: s = (short)va_arg(ap, int); break;
			case -2: s = (signed char)va_arg(ap, int); break;
			default: s = va_arg(ap, int); break;
			}
			v = s < 0 ? (u64)0 - (u64)s : (u64)s;
			put_num(&o, v, s < 0, base, width, prec, flags);
		} else {
			switch (lng) {
			case 2: v = va_arg(ap, unsigned long long); break;
			case 1: case 3: v = va_arg(ap, unsigned long); break;
			case -1: v = (unsigned short)va_arg(ap, unsigned int); break;
			case -2: v = (unsigned char)va_arg(ap, unsigned int); break;
			default: v = va_arg(ap, unsigned int); break;
			}
			put_num(&o, v, false, base, width, prec, flags & ~(F_PLUS | F_SPACE));
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return r;
}
