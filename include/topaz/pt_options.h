/* SPDX-License-Identifier: MIT */
/*
 * The PT driver's command-line options, named after perf's intel_pt terms:
 * what the event traces, and the ring's sizes. The session's own (pt=,
 * pt.snapshot=, pt.sink=, pt.pmi=) are kernel/tracing's.
 */
#ifndef TOPAZ_PT_OPTIONS_H
#define TOPAZ_PT_OPTIONS_H

#include <topaz/pt.h>

struct pt_options {
	bool branch_set, branch;	/* pt.branch= */
	bool tsc, mtc, cyc, noretcomp, ptw, fup_on_ptw, pwr_evt;
	u64 mtc_period, cyc_thresh, psb_period;
	bool mtc_period_set, cyc_thresh_set, psb_period_set;
	u64 buf_size;			/* pt.buf= */
	u64 region_size;		/* pt.region=: the largest ToPA region */
	const char *filter;		/* pt.filter= perf address-filter syntax */
};
/*
 * The options as the command line set them: read-only once it is parsed
 * (what is decided at run time lives with whoever decides it).
 */
extern struct pt_options pt_opts;

/**
 * pt_parse_filters() - perf's address-filter syntax into @attr's ranges:
 * comma-separated "filter SYM", "filter SYM/SIZE", "filter START/SIZE",
 * "stop SYM" (also "tracestop"), symbols from the kernel's table
 * @spec: the pt.filter= text, or NULL
 * @attr: its @filters and @nr_filters are set
 * Return: 0, or -EINVAL after a message naming the bad filter.
 */
int pt_parse_filters(const char *spec, struct pt_event_attr *attr);

/**
 * pt_options_to_attr() - the event @attr the options ask for; each option
 * the CPU cannot do is refused by name (pt_event_valid())
 * @o: the options (pt_opts, or a test's)
 * @attr: filled in
 * Return: 0, or -EINVAL after the messages.
 */
int pt_options_to_attr(const struct pt_options *o, struct pt_event_attr *attr);

/**
 * pt_options_refused() - the key whose value pt_options_to_attr() last
 * refused ("pt.filter"), or NULL; the CPU's refusals name their own keys
 */
const char *pt_options_refused(void);

#endif
