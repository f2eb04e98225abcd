/* SPDX-License-Identifier: MIT */
/*
 * The trace engine: real control flow for the software trace unit. On a CPU
 * without PT the traced code runs with RFLAGS.TF set (single-step mode) or
 * stops only at its branches (branch-step mode: an INT3 on the next branch
 * the classifier finds, and the branch run by the emulator, so one stop per
 * branch; see kernel/trace_engine/branch_sites.h). At every stop the engine tells
 * the model what a PT-capable CPU would have seen.
 */
#ifndef TOPAZ_TRACE_ENGINE_H
#define TOPAZ_TRACE_ENGINE_H

#include <topaz/types.h>

enum trace_step_mode { TRACE_STEP_SINGLE, TRACE_STEP_BRANCH };

struct trace_engine_stats {
	u64 insns;		/* instructions retired in traced code */
	u64 branches;		/* of those, changes of flow */
	u64 db_traps;		/* #DB exceptions taken */
	u64 bp_traps;		/* #BP (branch-step INT3s) taken in traced code */
	u64 nested;		/* INT3s hit by handlers (run, not traced) */
	u64 sites;		/* INT3s written (branch-step) */
	u64 fallbacks;		/* branch-step landings that single-step instead */
	u64 async;		/* interrupts and exceptions in traced code */
	u64 async_chained;	/* ... that came before the next stop after another one's return */
	u64 async_chained_ran;	/* ... of which after the traced code ran on from that return */
	u64 foreign_pages;	/* code pages outside the kernel image (sideband) */
};

/** trace_engine_init() - take #DB; @mode as pt.step= says */
void trace_engine_init(void);
/**
 * pt_trace_begin() - start tracing at the instruction after the call:
 * TraceEn=1, then every instruction of the caller is followed
 */
void pt_trace_begin(void);
/** pt_trace_end() - stop tracing here: the call to it is the last traced branch */
void pt_trace_end(void);
void trace_engine_get_stats(struct trace_engine_stats *st);
/** trace_engine_abort() - stop following (the panic path): no more stops */
void trace_engine_abort(void);
enum trace_step_mode trace_engine_mode(void);
/** trace_engine_write_sideband() - code pages outside the kernel into the container */
void trace_engine_write_sideband(void);

#endif
