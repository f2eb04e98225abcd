// SPDX-License-Identifier: MIT
/*
 * The trace engine (see include/topaz/trace_engine.h, docs/trace-engine.md):
 * its state machine, and the ops it registers with the session. The stops
 * are in engine_step.c, the code cache's dispatch in engine_dispatch.c.
 *
 * It runs in the #DB handler on its IST stack (single-step) and in the #BP
 * handler (branch-step's INT3s); interrupt and exception handlers run with
 * TF clear (the CPU clears it on delivery) and their INT3 hits are emulated
 * untraced, so they are never traced: when one interrupts traced code the
 * engine tells the model of the interrupt with an unseen handler (FUP,
 * TIP.PGD) and of its return where tracing goes on (TIP.PGE), as PT shows a
 * handler outside the traced context. TraceEn stays set throughout.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/trace_engine.h>
#include <topaz/tracing.h>
#include <topaz/pt_model.h>
#include "engine.h"
#include <topaz/traps.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/smp.h>

#define MAX_SITES	16384	/* branch-step: INT3s on the branches of traced code (firmware has many) */

enum trace_step_mode engine_step_mode = TRACE_STEP_TRANSLATE;

DEFINE_PER_CPU(struct engine, engines);

static const char *const step_names[] = { "single", "branch", "translate", NULL };	/* enum trace_step_mode */
KPARAM_ENUM("pt.step", pt_step, &engine_step_mode, step_names,
	    "trace engine: translate (a code cache that records its branches, the default), branch (an INT3 per branch) or single (a #DB per instruction)");

/*
 * CPUs that follow traced code: the trap hooks stay installed and the INT3s
 * stay in while any does (every CPU's engine shares them; each hook call
 * asks its own CPU's engine).
 */
static unsigned int engines_following;

static void engine_join(struct engine *e)
{
	if (!e->joined) {
		e->joined = true;
		__atomic_fetch_add(&engines_following, 1, __ATOMIC_ACQ_REL);
	}
	trap_set_trace_hooks(&engine_hooks);
	if (engine_step_mode != TRACE_STEP_SINGLE && !e->holds_sites) {
		branch_sites_get();
		e->holds_sites = true;
	}
}

/* This CPU is done; the last one puts the code back as it was. */
static void engine_leave(struct engine *e)
{
	struct branch_sites_stats bst;

	if (e->holds_sites) {
		branch_sites_get_stats(&bst);
		e->st.sites = bst.patched - e->sites_base;
		e->holds_sites = false;
		branch_sites_put();
	}
	if (e->joined) {
		e->joined = false;
		if (__atomic_sub_fetch(&engines_following, 1, __ATOMIC_ACQ_REL) == 0)
			trap_set_trace_hooks(NULL);
	}
}

/* Out of the cache, the code goes on to the next INT3 as it did there. */
static inline void leave_cache(struct engine *e)
{
	if (e->how == HOW_CACHE)
		e->how = HOW_BLOCK;
}

/**
 * engine_stop() - tracing ends on this CPU: no more stops here
 * @e: this CPU's engine
 * @regs: the stopped code's registers (TF goes off)
 *
 * The last CPU to stop restores the code.
 */
__noinline void engine_stop(struct engine *e, struct pt_regs *regs)
{
	e->state = ENG_OFF;
	leave_cache(e);
	regs->rflags &= ~X86_EFLAGS_TF;
	engine_leave(e);
}

/**
 * engine_resume() - back from a handler: tracing goes on where it returned
 * @e: this CPU's engine, PAUSED
 */
__noinline void engine_resume(struct engine *e)
{
	e->state = ENG_FOLLOWING;
	pt_model_ev_return(e->resume_ip);
	if (e->how == HOW_STEP)
		e->prev = e->resume_ip;
}

/* ---------------------------------------------------------------- the ops */

static void engine_stats(unsigned int cpu, struct trace_engine_stats *st)
{
	const struct engine *e = per_cpu_ptr(engines, cpu);
	const struct xlat_cpu *x = e->xc;

	*st = e->st;
	st->mode = engine_step_mode;
	if (x) {
		st->xlat_blocks = x->st.blocks;
		st->xlat_code = x->st.code_bytes;
		st->xlat_flushes = x->st.flushes;
		st->xlat_misses = x->st.misses;
		st->xlat_resets = x->st.resets;
		st->xlat_inline_tnt = x->st.inline_tnt;
		st->xlat_inline_plain = x->st.inline_plain;
		st->xlat_inline_tip = x->st.inline_tip;
		st->xlat_fast_paths = x->st.fast_paths;
		st->xlat_cond_paths = x->st.cond_paths;
		st->xlat_fast_plain = x->st.fast_plain;
		st->xlat_plain_paths = x->st.plain_paths;
		st->xlat_fast_rets = x->st.fast_rets;
		st->xlat_ret_paths = x->st.ret_paths;
		st->xlat_tnt_direct = x->st.tnt_direct;
	}
}

static void engine_arm(void)
{
	struct engine *e = this_cpu_ptr(engines);
	struct branch_sites_stats bst;

	e->state = ENG_STARTING;
	e->how = HOW_STEP;
	if (engine_step_mode != TRACE_STEP_SINGLE && !e->holds_sites) {
		branch_sites_get_stats(&bst);
		if (!e->sites_base)
			e->sites_base = bst.patched;
	}
	engine_join(e);
}

static void engine_disarm(void)
{
	struct engine *e = this_cpu_ptr(engines);

	e->state = ENG_OFF;
	engine_leave(e);
}

/**
 * engine_follow() - TF on: the trap comes after the next instruction
 *
 * That instruction is still ours (engine_on_debug() steps on through this
 * function and pt_trace_begin()).
 */
__noinline void engine_follow(void)
{
#ifndef TOPAZ_HOSTED
	__asm__ volatile("pushfq; orq %0, (%%rsp); popfq" :: "i"(X86_EFLAGS_TF) : "memory", "cc");
#endif	/* the hosted tests script the #DB that follows */
}

/* The engine stopped at pt_trace_end's first instruction; TraceEn goes off next. */
static void engine_end(void)
{
	struct engine *e = this_cpu_ptr(engines);

	e->state = ENG_OFF;
	engine_leave(e);	/* done at the stop that got here, if it was one */
}

/* The panic path: the other CPUs are stopped, so the code goes back now. */
static void engine_abort(void)
{
	struct engine *e = this_cpu_ptr(engines);

	e->state = ENG_OFF;
	leave_cache(e);
	e->holds_sites = e->joined = false;
	__atomic_store_n(&engines_following, 0, __ATOMIC_RELEASE);
	branch_sites_restore();
	trap_set_trace_hooks(NULL);
}

static const struct trace_engine_ops engine_ops = {
	.arm = engine_arm,
	.follow = engine_follow,
	.disarm = engine_disarm,
	.end = engine_end,
	.abort = engine_abort,
	.stats = engine_stats,
	.write_sideband = engine_write_sideband,
	.see_through = branch_sites_see_through,
};

/* ------------------------------------------------------- setup and teardown */

/* pt.step=translate: every CPU's code cache, or branch-step when there is none. */
static void engine_translate_init(void)
{
	int err = engine_cache_init();

	if (err == -ENODEV) {
		/* the firmware phase: expected, not a warning */
		pr_info("pt.step=translate: no code cache here (error %d: the firmware's page tables): branch-step\n",
			err);
		engine_step_mode = TRACE_STEP_BRANCH;
	} else if (err) {
		pr_warn("pt.step=translate: no code cache here (error %d): branch-step\n", err);
		engine_step_mode = TRACE_STEP_BRANCH;
	} else {
		const struct xlat_cpu *x = this_cpu_ptr(engines)->xc;

		trap_set_handler(X86_TRAP_PF, engine_on_page_fault);
		/* the address: where QEMU's log (-d exec -dfilter) finds it */
		pr_info("translate: a %u KiB code cache for each of %u CPUs (this one's code at %#lx)\n",
			(unsigned int)((x->code_end - x->code) >> 10), nr_cpu_ids,
			(unsigned long)x->code);
	}
}

void trace_engine_init(void)
{
	int err;

	if (!pt_model_active())
		return;	/* real PT traces by itself: no engine, no INT3s, no self-check */
	trap_set_handler(X86_TRAP_DB, engine_on_debug);
	trap_set_handler(X86_TRAP_UD, engine_on_invalid_opcode);
	pt_session_set_engine(&engine_ops);
	if (engine_step_mode == TRACE_STEP_SINGLE)
		return;
	err = branch_sites_init(MAX_SITES);
	if (err) {
		pr_warn("pt.step=%s: no memory for the branch sites (error %d): single-step\n",
			step_names[engine_step_mode], err);
		engine_step_mode = TRACE_STEP_SINGLE;
		return;
	}
	trap_set_handler(X86_TRAP_BP, engine_on_breakpoint);
#ifndef TOPAZ_HOSTED
	err = branch_step_self_check();
#else
	err = 0;	/* the probe's INT3s would be SIGTRAPs: the hosted tests script the stops */
#endif
	if (err) {
		pr_warn("pt.step=%s: cannot branch-step here (error %d): single-step\n",
			step_names[engine_step_mode], err);
		trap_set_handler(X86_TRAP_BP, NULL);
		branch_sites_exit();
		engine_step_mode = TRACE_STEP_SINGLE;
		return;
	}
	trap_set_bp_fast(engine_bp_fast);
	if (engine_step_mode == TRACE_STEP_TRANSLATE)
		engine_translate_init();
}

int trace_engine_exit(void)
{
#ifndef TOPAZ_HOSTED
	int err;

	if (engine_step_mode != TRACE_STEP_TRANSLATE)
		return 0;
	trap_set_handler(X86_TRAP_PF, NULL);
	err = engine_cache_exit();
	engine_step_mode = TRACE_STEP_BRANCH;
	return err;
#else
	return 0;
#endif
}

void trace_engine_code_loaded(u64 start, u64 size)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct xlat_cpu *x = per_cpu_ptr(engines, cpu)->xc;

		if (x && xlat_invalidate(x, start, start + size))
			pr_info("translate: CPU %u had blocks from %#llx-%#llx, where new code was loaded: its code cache starts again\n",
				cpu, start, start + size - 1);
	}
}
