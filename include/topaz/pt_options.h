/* SPDX-License-Identifier: MIT */
/* The PT driver's command-line options, named after perf's intel_pt terms. */
#ifndef TOPAZ_PT_OPTIONS_H
#define TOPAZ_PT_OPTIONS_H

#include <topaz/pt.h>

/* In the order of their pt.sink= and pt.pmi= names (pt_options.c). */
enum pt_sink_kind { PT_SINK_DEBUGCON, PT_SINK_SERIAL, PT_SINK_MEMORY, PT_SINK_FILE };
enum pt_pmi_kind { PT_PMI_VECTOR, PT_PMI_NMI };

struct pt_options {
	bool enabled;			/* pt=on */
	bool branch_set, branch;	/* pt.branch= */
	bool tsc, mtc, cyc, noretcomp, ptw, fup_on_ptw, pwr_evt;
	u64 mtc_period, cyc_thresh, psb_period;
	bool mtc_period_set, cyc_thresh_set, psb_period_set;
	u64 buf_size;			/* pt.buf= */
	u64 region_size;		/* pt.region=: the largest ToPA region */
	bool snapshot;			/* pt.snapshot=1 */
	const char *filter;		/* pt.filter= perf address-filter syntax */
	enum pt_sink_kind sink;		/* pt.sink= */
	enum pt_pmi_kind pmi;		/* pt.pmi= */
};
extern struct pt_options pt_opts;

/**
 * pt_parse_filters() - perf's address-filter syntax into @attr's ranges:
 * comma-separated "filter SYM", "filter SYM/SIZE", "filter START/SIZE",
 * "stop SYM" (also "tracestop"), symbols from the kernel's table.
 * Returns 0, or -EINVAL after a message naming the bad filter.
 */
int pt_parse_filters(const char *spec, struct pt_event_attr *attr);

/**
 * pt_options_to_attr() - the event @attr the options ask for; each option
 * the CPU cannot do is refused by name (pt_event_valid). Returns 0 or -EINVAL.
 */
int pt_options_to_attr(const struct pt_options *o, struct pt_event_attr *attr);

#endif
