// SPDX-License-Identifier: MIT
/*
 * The session's command-line options: whether to trace, the flight
 * recorder, where the container goes, how the PMI comes. The driver's (what
 * the event traces, the ring's sizes) are drivers/pt/pt_options.c's. Both
 * are read-only once the line is parsed: a sink the machine lacks falls back
 * in the session's own state (pt_boot.c), not here.
 */
#include "session.h"
#include <topaz/cmdline.h>

struct pt_session_options pt_session_opts = {
	.sink = PT_SINK_DEBUGCON,
};

KPARAM_BOOL("pt", pt, &pt_session_opts.enabled, "trace the workload with Intel PT (pt=on)");
KPARAM_BOOL("pt.snapshot", pt_snapshot, &pt_session_opts.snapshot,
	    "flight recorder: the ring overwrites, the last bytes go out on request and on panic");

static const char *const sink_names[] = { "debugcon", "serial", "memory", "file", NULL };
KPARAM_ENUM("pt.sink", pt_sink, &pt_session_opts.sink, sink_names,
	    "where the trace goes: debugcon, serial, memory, or file (the firmware phase: \\EFI\\topaz\\trace-NNNN.tpz on the boot volume)");
static const char *const pmi_names[] = { "vector", "nmi", NULL };
KPARAM_ENUM("pt.pmi", pt_pmi, &pt_session_opts.pmi, pmi_names,
	    "PMI delivery through LVTPC: vector or nmi");
