/* SPDX-License-Identifier: MIT */
/*
 * What the trace engine's files share (docs/trace-engine.md): one CPU's
 * engine, its state, and the calls between the state machine and its ops
 * (trace_engine.c), the single- and branch-step stops (engine_step.c), the
 * translate hub (engine_dispatch.c), the boot self-check
 * (engine_selfcheck.c), the code cache's memory (engine_cache_mem.c) and
 * what goes to the sideband (engine_sideband.c).
 *
 * Every function works on its own CPU's engine, through a pointer it takes
 * once (this_cpu_ptr(engines)) or is handed by its caller on that CPU; only
 * the setup, teardown and statistics walk the other CPUs' (per_cpu_ptr()).
 */
#ifndef TOPAZ_TRACE_ENGINE_ENGINE_H
#define TOPAZ_TRACE_ENGINE_ENGINE_H

#include <topaz/tracing.h>
#include <topaz/traps.h>
#include <topaz/percpu.h>
#include "branch_sites.h"
#include "xlat.h"

#define MAX_FOREIGN	64	/* code pages outside the image kept for the sideband */

/*
 * What one CPU's engine is doing, and how it moves:
 *
 *   OFF --arm (pt_trace_begin)--> STARTING --first stop past pt_trace_begin--> FOLLOWING
 *   FOLLOWING --a handler returns into traced code (async_exit)--> PAUSED
 *   PAUSED --the next stop, or a second event after the code ran on--> FOLLOWING
 *   STARTING, FOLLOWING, PAUSED --end, abort, disarm--> OFF
 *   OFF --boot self-check--> CHECKING --the probe returns to its caller--> CHECK_DONE
 *   CHECKING --a branch it cannot emulate or place--> OFF (the self-check fails)
 *   CHECK_DONE, OFF --the self-check's second run--> CHECK_UNTRACED --its end--> OFF
 *
 * Between an event's async_enter and async_exit the engine stays FOLLOWING
 * with the model in the unseen handler; PAUSED is "the handler returned:
 * tell the model so (pt_model_ev_return) at the next stop, at resume_ip".
 */
enum engine_state {
	ENG_OFF,
	ENG_STARTING,		/* stepping out of pt_trace_begin: no model events yet */
	ENG_FOLLOWING,		/* every stop goes to the model */
	ENG_PAUSED,		/* back from a handler: the trace resumes at the next stop */
	ENG_CHECKING,		/* the boot self-check runs: stops without model events */
	ENG_CHECK_DONE,		/* ... and followed its probe back to the caller */
	ENG_CHECK_UNTRACED,	/* ... then runs it again, its INT3s in place, as a
				 * handler would (untraced), returning as inside an
				 * NMI (no IRET) */
};

/* How the traced code runs until the next stop (one byte: the stops test it first). */
enum __attribute__((packed)) engine_how {
	HOW_STEP,		/* TF set: every instruction stops (single-step) */
	HOW_BLOCK,		/* freely, to the INT3 of its block's branch (branch-step) */
	HOW_CACHE,		/* in the code cache (pt.step=translate) */
};

/*
 * What the trap now open on this CPU is to the engine, from async_enter to
 * async_exit (the trap hooks are called for the outermost trap only, so two
 * are never open at once).
 */
enum engine_event {
	EV_NONE,		/* none, or an event of stepped code (no state of its own) */
	EV_EMULATED,		/* not an event: a PTWRITE's #UD emulated, a full record
				 * buffer, a stop's own entry; async_exit does nothing */
	EV_CACHE,		/* an event interrupted the cache: x_at, x_pos, x_counted */
};

/*
 * One CPU's engine: what it follows now and what it has seen. @state, @how
 * and @event are three sides of one moment, each changing on its own:
 * whether and what it follows, how the code runs meanwhile, and what the
 * open trap is. @joined and @holds_sites are kept apart from them: they
 * count this CPU in shared totals (the hooks, the INT3s), and a CPU stays
 * counted from arm to its leave whatever its state did in between.
 */
struct engine {
	enum engine_state state;
	enum engine_how how;
	enum engine_event event;
	u64 check_lo, check_hi;	/* the self-check's probe function */
	u64 check_stops, sites_base;
	u64 prev;		/* HOW_STEP: the instruction the next #DB reports on */
	u64 landing;		/* HOW_BLOCK: where the running block began */
	struct branch_site *next_site;	/* ... and the INT3 it runs to */
	u32 pending;		/* its instructions before the site that ends it */
	u64 resume_ip;
	bool joined;		/* counted in engines_following */
	bool holds_sites;	/* counted among the CPUs that keep the INT3s in */
	/* pt.step=translate: this CPU's code cache */
	struct xlat_cpu *xc;
	u64 x_at;		/* EV_CACHE: the cache address it interrupted (or the runtime's RET) */
	struct xlat_pos x_pos;	/* ... which stands for this */
	u32 x_counted;		/* ... and the instructions of its block counted then */
	struct trace_engine_stats st;
	u64 foreign[MAX_FOREIGN];
};
DECLARE_PER_CPU(struct engine, engines);

/* pt.step=: how every CPU's engine follows (trace_engine.c) */
extern enum trace_step_mode engine_step_mode __hidden;

/* Following traced code (FOLLOWING, PAUSED) or the self-check's probe. */
static inline bool following(const struct engine *e)
{
	return e->state == ENG_FOLLOWING || e->state == ENG_PAUSED || e->state == ENG_CHECKING;
}

/* Execution goes on at @at, the start of block @b: it runs to b's INT3. */
static inline void run_block(struct engine *e, u64 at, const struct branch_block *b)
{
	e->landing = at;
	e->next_site = b->site;
	e->pending = b->insns;
}

/* trace_engine.c: the state machine */
void engine_stop(struct engine *e, struct pt_regs *regs);
void engine_resume(struct engine *e);
void engine_follow(void);

/* engine_step.c: the stops */
void engine_arm_branch(struct engine *e, struct pt_regs *regs);
bool engine_on_debug(struct pt_regs *regs);
bool engine_on_breakpoint(struct pt_regs *regs);
bool engine_bp_fast(struct trap_frame *f);
bool engine_on_invalid_opcode(struct pt_regs *regs);
extern const struct trap_trace_hooks engine_hooks;

/* engine_dispatch.c: the translate hub */
extern struct xlat_env engine_xenv;
bool xlat_enter(struct engine *e, struct pt_regs *regs);
bool xlat_exit(struct engine *e, struct pt_regs *regs, u64 at);
bool xlat_async_enter(struct engine *e, struct pt_regs *regs);
bool xlat_async_exit(struct engine *e, struct pt_regs *regs);
bool engine_on_page_fault(struct pt_regs *regs);
/* the runtime's entry points (xlat_rt.S), which the cache's stubs call */
#ifndef TOPAZ_HOSTED
extern const char xlat_rt_link[] __hidden, xlat_rt_lookup[] __hidden, xlat_rt_flush[] __hidden,
	xlat_rt_ret[] __hidden;
#else
/* the hosted build has no runtime: pt.step=translate is the kernel's */
extern const char xlat_rt_link[1], xlat_rt_lookup[1], xlat_rt_flush[1], xlat_rt_ret[1];
#endif
/* and their C halves (engine_dispatch.c): interrupts off, every register saved */
u64 xlat_rt_link_c(u64 id);
u64 xlat_rt_lookup_c(u64 target);
u64 xlat_rt_flush_c(u64 ret);

/* engine_selfcheck.c: the boot self-check of branch-step */
int branch_step_self_check(void);
bool engine_check_step(struct engine *e, struct pt_regs *regs, struct branch_site *s, u64 ip);

/**
 * engine_arm_at() - follow on from @regs->rip: in the cache where it translates, else by stops
 * @e: this CPU's engine
 * @regs: the traced code's registers
 */
static inline void engine_arm_at(struct engine *e, struct pt_regs *regs)
{
	if (engine_step_mode == TRACE_STEP_TRANSLATE && xlat_enter(e, regs))
		return;
	engine_arm_branch(e, regs);
}

/* engine_cache_mem.c: every CPU's code cache, made and given back */
int engine_cache_init(void);
int engine_cache_exit(void);

/* engine_sideband.c: code outside the image that traced code ran, the cache's map */
void engine_note_foreign(struct engine *e, u64 ip);
void engine_note_range(struct engine *e, u64 start, u64 end);
void engine_write_sideband(trace_image_fn add);

#endif
