// SPDX-License-Identifier: MIT
/*
 * A progress line for long decodes: on a terminal only (a pipe or a file
 * gets nothing, so logs and tests read the same as before), and only once
 * the work has run for a while, so a short decode prints nothing at all.
 * The line is rewritten in place (\r) and erased at the end.
 */
#include <time.h>
#include <unistd.h>
#include "ptdecode.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ptd_progress_init(struct ptd_progress *p, FILE *f, double delay)
{
	*p = (struct ptd_progress){ .delay = delay };
	/* a pipe, a file, /dev/null: no progress line */
	if (f && isatty(fileno(f)))
		p->f = f;
}

void ptd_progress_begin(struct ptd_progress *p, const char *what, u64 total)
{
	if (!p->f)
		return;
	p->what = what;
	p->total = total;
	p->done = 0;
	p->calls = 0;
	p->start = now();
	p->last = 0;
}

/* Called every PTD_PROGRESS_EVERY updates: at most a few lines a second. */
void ptd_progress_show(struct ptd_progress *p)
{
	double t = now(), pct;

	if (t - p->start < p->delay || t - p->last < 0.25)
		return;
	p->last = t;
	pct = p->total ? 100.0 * (double)p->done / (double)p->total : 0;
	if (pct > 100)
		pct = 100;
	fprintf(p->f, "\rptdecode: %s: %3.0f%% of %.1f MB of trace, %.0f s\033[K", p->what, pct,
		(double)p->total / 1e6, t - p->start);
	fflush(p->f);
	p->shown = true;
}

void ptd_progress_end(struct ptd_progress *p)
{
	if (!p->f || !p->shown)
		return;
	/* the line goes: what follows prints where it was */
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->shown = false;
}
