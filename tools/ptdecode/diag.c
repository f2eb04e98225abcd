// SPDX-License-Identifier: MIT
/* Problems found in a trace, each naming the record and the file offset. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

void ptd_diag_add(struct ptd_diags *d, long record, u64 offset, const char *fmt, ...)
{
	struct ptd_diag *g;
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
	vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
	va_end(ap);
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
