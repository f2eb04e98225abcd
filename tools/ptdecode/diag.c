// SPDX-License-Identifier: MIT
/* Problems found in a trace, each naming the record and the file offset. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

void ptd_diag_add(struct ptd_diags *d, long record, u64 offset, const char *fmt, ...)
{
	struct ptd_diag *g;
	char line[sizeof(g->msg)];
	va_list ap;

	if (d->n >= PTD_DIAGS_KEPT) {
		d->more++;
		return;
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->v = realloc(d->v, d->cap * sizeof(*d->v));
		if (!d->v)
			abort();
	}
	g = &d->v[d->n++];
	g->record = record;
	g->offset = offset;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* the names in it came from the input: a newline would split the
	 * problem line, an escape sequence drive the terminal ('\\' is kept:
	 * names escaped already stay as they are) */
	ptd_escape_into(g->msg, sizeof(g->msg), line, NULL, false);
}

/* Written as \xHH: bytes outside printable ASCII, '\\' when @backslash,
 * and the characters in @extra. */
static bool needs_escape(unsigned char c, const char *extra, bool backslash)
{
	return c < ' ' || c >= 0x7f || (c == '\\' && backslash) || (extra && c && strchr(extra, c));
}

size_t ptd_escape_into(char *buf, size_t size, const char *s, const char *extra, bool backslash)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!size)
		return 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!needs_escape(c, extra, backslash)) {
			if (n + 1 >= size)
				break;
			buf[n++] = (char)c;
			continue;
		}
		if (n + 4 >= size)	/* an escape is not cut in two */
			break;
		buf[n++] = '\\';
		buf[n++] = 'x';
		buf[n++] = hex[c >> 4];
		buf[n++] = hex[c & 0xf];
	}
	buf[n] = 0;
	return n;
}

const char *ptd_escape(const char *s, char *buf, size_t size)
{
	for (const char *p = s; *p; p++)
		if (needs_escape((unsigned char)*p, NULL, true)) {
			ptd_escape_into(buf, size, s, NULL, true);
			return buf;
		}
	return s;
}

void ptd_escape_write(FILE *out, const char *s, const char *extra)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (needs_escape(c, extra, true))
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

void ptd_diag_format(const struct ptd_diag *g, const char *file, char *buf, size_t size)
{
	if (g->record >= 0)
		snprintf(buf, size, "ptdecode: %s: record %ld at offset 0x%llx: %s", file, g->record,
			 g->offset, g->msg);
	else
		snprintf(buf, size, "ptdecode: %s: %s", file, g->msg);
}

void ptd_diags_print(const struct ptd_diags *d, size_t from, const char *file, FILE *out)
{
	char line[1024];

	for (size_t i = from; i < d->n; i++) {
		ptd_diag_format(&d->v[i], file, line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
	if (d->more)
		fprintf(out, "ptdecode: %s: ... and %zu more problems (counted, not kept: the first %d are)\n",
			file, d->more, PTD_DIAGS_KEPT);
}

void ptd_diags_free(struct ptd_diags *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}
