// SPDX-License-Identifier: MIT
/*
 * The trace engine's stops, outside the code cache: single-step (a #DB
 * after each instruction, TF set), branch-step (an INT3 on the branch that
 * ends each block of straight-line code; the branch emulator runs it), the
 * #UD of an emulated PTWRITE, and the trap hooks that tell the model of an
 * interrupt or exception in traced code. Stops in the code cache go to
 * engine_dispatch.c.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/tracing.h>
#include <topaz/pt_model.h>
#include <topaz/x86_insn.h>
#include "engine.h"
#include "branch_emul.h"
#include <topaz/traps.h>
#include <topaz/cpu.h>
#include <topaz/symbols.h>
#include <topaz/kernel.h>

#define DR6_BS		BIT(14)

#ifndef TOPAZ_HOSTED
static inline u64 read_dr6(void) { u64 v; __asm__ volatile("mov %%db6, %0" : "=r"(v)); return v; }
static inline void write_dr6(u64 v) { __asm__ volatile("mov %0, %%db6" :: "r"(v)); }
#else
/* the hosted tests script the traps: DR6 is theirs (tests/host/hosted.h) */
extern u64 hosted_dr6;
static inline u64 read_dr6(void) { return hosted_dr6; }
static inline void write_dr6(u64 v) { hosted_dr6 = v; }
#endif

/*
 * PAUSE (F3 90): QEMU 7.2 ends its translation block at a PAUSE and leaves
 * the CPU loop without taking the single-step #DB (fixed in later QEMUs), so
 * the next #DB reports on the PAUSE and the instruction after it. On a CPU
 * the #DB after a PAUSE lands right after it, so this never applies there.
 */
static bool is_pause(const struct x86_insn *in, u64 ip)
{
	return in->opcode == 0x90 && !(in->rex & 1) && in->length >= 2 &&
	       *(const u8 *)(uintptr_t)(ip + in->length - 2) == 0xf3;
}

/*
 * STI and MOV SS hold off interrupts for one instruction, and QEMU holds off
 * the single-step #DB with them: the instruction after one retires without a
 * #DB of its own, so the next #DB reports on both.
 */
static bool shadows_next(const struct x86_insn *in, u64 ip)
{
	if (in->map != X86_MAP_LEGACY)
		return false;
	return in->opcode == 0xfb ||					/* STI */
	       (in->opcode == 0x8e && ((in->modrm >> 3) & 7) == 2) ||	/* MOV SS, r/m */
	       is_pause(in, ip);
}

/* The instruction at @ip retired and execution went to @to: tell the model. */
static void retire(struct engine *e, u64 ip, u64 to, struct pt_regs *regs)
{
	struct x86_insn in;
	struct ptm_insn m = { .ip = ip, .target = to, .cpl = 0, .mode = PTM_MODE_64 };

	e->st.insns++;
	engine_note_foreign(e, ip);
	if (branch_insn_decode(ip, &in)) {
		/* Unknown bytes: report a jump so the flow stays right. */
		m.cls = PTM_JUMP_IND;
		m.next = ip + 1;
		pt_model_ev_insn(&m);
		return;
	}
	m.next = ip + in.length;
	if (in.cls == X86_INSN_PTWRITE) {
		/* the payload is still in the register operand (register form) */
		unsigned int reg, size;

		if (branch_ptwrite_operand(&in, &reg, &size)) {
			m.cls = PTM_PTWRITE;
			m.payload = *branch_emul_reg(regs, reg);
			m.size = (u8)size;
			pt_model_ev_insn(&m);
		}
		return;
	}
	m.cls = branch_ptm_class(&in);
	if (m.cls == PTM_OTHER) {
		if (to == m.next)
			return;	/* straight-line: nothing for PT */
		if (shadows_next(&in, ip)) {
			/* the one after it went to @to (a RET after STI) */
			retire(e, m.next, to, regs);
			return;
		}
		/* an instruction that jumped without being a branch (an exception
		 * path that came back elsewhere): report it as a far transfer */
		m.cls = PTM_FAR;
	}
	if (m.cls == PTM_COND)
		m.taken = to != m.next;
	e->st.branches++;
	pt_model_ev_insn(&m);
}

/* A new block runs from its start to the end of its branch. */
static void note_block(struct engine *e, const struct branch_block *b)
{
	engine_note_range(e, b->start, b->site->ip + b->site->emul.len - 1);
}

/* Single-step from @ip: a #DB after it, which retires it (engine_on_debug()). */
static inline void step_from(struct engine *e, struct pt_regs *regs, u64 ip)
{
	e->how = HOW_STEP;
	e->prev = ip;
	regs->rflags |= X86_EFLAGS_TF;
}

/*
 * Let the code at @regs->rip run until the next stop. Branch-step: its block
 * (straight-line code up to an INT3 on the next branch) runs freely; code
 * that cannot have one (a far transfer, a table full, bytes that do not
 * decode) and single-step mode run with TF, a #DB after each instruction.
 */
static inline void arm_block(struct engine *e, struct pt_regs *regs, const struct branch_block *b,
			     bool created)
{
	if (likely(b)) {
		if (created)
			note_block(e, b);
		e->how = HOW_BLOCK;
		run_block(e, regs->rip, b);
		regs->rflags &= ~X86_EFLAGS_TF;
		return;
	}
	if (engine_step_mode != TRACE_STEP_SINGLE)
		e->st.fallbacks++;
	step_from(e, regs, regs->rip);
}

/**
 * engine_arm_branch() - branch-step (or single-step) from @regs->rip, not the cache
 * @e: this CPU's engine
 * @regs: the traced code's registers
 */
void engine_arm_branch(struct engine *e, struct pt_regs *regs)
{
	const struct branch_block *b = NULL;
	bool created = false;
	int err;

	if (engine_step_mode != TRACE_STEP_SINGLE)
		b = branch_block_get(regs->rip, &created, &err);
	arm_block(e, regs, b, created);
}

/*
 * @ip lies inside the function that starts at @fn. @end caches where it
 * ends (0: not looked up yet): a fuzzer's every window starts here, and a
 * symbol table search each #DB was a few hundred instructions of it.
 */
static bool in_function(u64 ip, uintptr_t fn, uintptr_t *end)
{
	uintptr_t e = READ_ONCE(*end);

	if (!e) {
		const char *n;
		uintptr_t off, size;

		if (ksym_lookup(fn, &n, &off, &size) || off || !size)
			return false;	/* no symbols: as before, not known */
		e = fn + size;
		WRITE_ONCE(*end, e);	/* every CPU finds the same */
	}
	return ip >= fn && ip < e;
}

/* STARTING: the first #DB past our epilogue and pt_trace_begin's starts the trace. */
static bool debug_start(struct engine *e, struct pt_regs *regs)
{
	static uintptr_t follow_end, begin_end;
	u64 rip = regs->rip;

	if (in_function(rip, (uintptr_t)engine_follow, &follow_end) ||
	    in_function(rip, (uintptr_t)pt_trace_begin, &begin_end)) {
		regs->rflags |= X86_EFLAGS_TF;
		return true;
	}
	e->state = ENG_FOLLOWING;
	pt_model_ev_at(rip);
	if (rip == (uintptr_t)pt_trace_end) {
		engine_stop(e, regs);
		return true;
	}
	engine_arm_at(e, regs);
	return true;
}

/**
 * engine_on_debug() - the #DB handler: a single-step stop
 * @regs: the stopped code's registers
 *
 * Return: true when the #DB was the engine's (a single-step).
 */
bool engine_on_debug(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);
	u64 dr6 = read_dr6();
	u64 rip = regs->rip;

	write_dr6(0);
	e->st.db_traps++;
	if (!(dr6 & DR6_BS))
		return false;
	if (e->state == ENG_OFF || e->state == ENG_CHECK_DONE || e->state == ENG_CHECK_UNTRACED) {
		/* a step armed before tracing ended: nothing more to follow */
		regs->rflags &= ~X86_EFLAGS_TF;
		return true;
	}
	if (e->state == ENG_STARTING)
		return debug_start(e, regs);
	if (e->state == ENG_PAUSED)
		engine_resume(e);
	if (rip == e->prev) {
		/* a REP string instruction finished one iteration */
		regs->rflags |= X86_EFLAGS_TF;
		return true;
	}
	retire(e, e->prev, rip, regs);
	if (rip == (uintptr_t)pt_trace_end) {
		pt_model_ev_at(rip);
		engine_stop(e, regs);
		return true;
	}
	engine_arm_at(e, regs);
	return true;
}

/**
 * engine_bp_fast() - the common stop, from isr_bp before the general entry
 * @f: the trap frame (the general entry has not saved the other registers)
 *
 * Called before the general entry saves all the registers
 * (trap_set_bp_fast()): a Jcc in traced code whose target block is known
 * and that the model takes on its fast path. The same outcome as
 * engine_on_breakpoint(); anything else goes there.
 *
 * Return: true when done; false, having changed nothing, for the full path.
 */
bool engine_bp_fast(struct trap_frame *f)
{
	struct engine *e = this_cpu_ptr(engines);
	struct branch_site *s = e->next_site;
	const struct branch_block *b;
	u64 ip = f->rip - 1, next, to;
	bool taken;

	if (unlikely(!s || s->ip != ip || s->emul.kind != BEMUL_JCC ||
		     engine_step_mode != TRACE_STEP_BRANCH || e->state != ENG_FOLLOWING ||
		     e->how == HOW_STEP || trap_depth()))
		return false;
	taken = branch_emul_cond(s->emul.cc, f->rflags);
	next = ip + s->emul.len;
	to = taken ? s->emul.target : next;
	b = s->next[taken];
	if (unlikely(!b || b->start != to || b->site->disabled))
		return false;
	if (!pt_model_ev_branch_fast(PTM_COND, next, to, taken))
		return false;
	/* this CPU's engine again: one GS-relative load, where keeping the
	 * pointer across the call cost a register (the stop's hottest path) */
	e = this_cpu_ptr(engines);
	e->st.bp_traps++;
	e->st.branches++;
	e->st.insns += e->pending + 1;
	run_block(e, to, b);
	f->rip = to;
	return true;
}

/* An INT3 outside a traced stop (a handler runs traced code's callee): just run its branch. */
static bool bp_untraced(struct engine *e, struct pt_regs *regs, struct branch_site *s, u64 ip)
{
	struct branch_result res;

	e->st.nested++;
	regs->rip = ip;
	if (branch_emul_run(&s->emul, ip, regs, &res))
		branch_site_disable(s);	/* the CPU runs it and faults */
	if (trap_in_nmi() || e->state == ENG_CHECK_UNTRACED)
		trap_return_without_iret();
	return true;
}

/* A traced stop at the branch at @ip: the block before it ran; RIP back on the branch. */
static inline void bp_block_ran(struct engine *e, struct pt_regs *regs, u64 ip)
{
	if (e->state == ENG_PAUSED)
		engine_resume(e);
	if (e->how == HOW_STEP)
		e->pending = 0;	/* each instruction before it had its #DB */
	regs->rip = ip;
	e->st.insns += e->pending;
}

/*
 * No live site at @ip, yet this CPU trapped on an INT3 there: another CPU
 * put the byte back between this CPU's trap and its lookup. Either it gave
 * that one site up (branch_site_disable(): its emulation faulted) or the
 * last tracer's end restored them all (branch_sites_put()); the byte is
 * restored before the site leaves the table, so the instruction is the
 * original again (as Linux's kprobes tell a removed INT3). Run it:
 * single-stepped when this CPU traces it (as bp_emulate() does with a
 * branch that faults), else as it is. False when an INT3 is still there:
 * not ours.
 */
static bool bp_gone(struct engine *e, struct pt_regs *regs, u64 ip)
{
	struct branch_site *s = branch_sites.sites ? branch_site_slot(ip) : NULL;
	bool disabled = s && s->ip == ip && READ_ONCE(s->disabled);

	if (!disabled && *(const volatile u8 *)(uintptr_t)ip == BRANCH_SITE_INT3)
		return false;
	if (disabled && (e->state == ENG_FOLLOWING || e->state == ENG_PAUSED) &&
	    trap_depth() <= 1) {
		bp_block_ran(e, regs, ip);
		step_from(e, regs, ip);
		return true;
	}
	regs->rip = ip;
	if (trap_in_nmi() || e->state == ENG_CHECK_UNTRACED) {
		trap_return_without_iret();
	}
	return true;
}

/* The branch at @ip, emulated: the model hears of it. False when it faults. */
static bool bp_emulate(struct engine *e, struct pt_regs *regs, struct branch_site *s, u64 ip,
		       struct branch_result *res)
{
	if (branch_emul_run_fast(&s->emul, ip, regs, res)) {
		/* It faults (a bad pointer, the stack): the CPU must raise that
		 * itself, so the instruction goes back and is single-stepped. */
		branch_site_disable(s);
		step_from(e, regs, ip);
		return false;
	}
	e->st.insns++;
	if (likely(s->cls != PTM_PTWRITE)) {
		e->st.branches++;
		pt_model_ev_branch(s->cls, ip, res->next, res->target, res->taken);
	} else {
		struct ptm_insn m = {
			.cls = PTM_PTWRITE, .ip = ip, .next = res->next, .target = res->next,
			.mode = PTM_MODE_64, .payload = res->payload, .size = s->emul.size,
		};

		pt_model_ev_insn(&m);
	}
	return true;
}

/**
 * engine_on_breakpoint() - the #BP handler: branch-step's INT3 on a branch
 * @regs: the stopped code's registers
 *
 * The emulator runs the branch (the registers and stack as the CPU would
 * leave them); the model hears of the block before it and of the branch;
 * the next block gets its INT3. An exit of the code cache goes to
 * xlat_exit().
 *
 * Return: true when the INT3 was the engine's.
 */
bool engine_on_breakpoint(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);
	u64 ip = regs->rip - 1;
	struct branch_site *s = e->next_site;	/* most often, the one armed */
	const struct branch_block *b;
	struct branch_result res;
	bool created;
	int err;

	if (e->how == HOW_CACHE && xlat_owns(e->xc, ip))
		return following(e) && trap_depth() == 1 && xlat_exit(e, regs, ip);
	if (unlikely(!s || s->ip != ip || s->disabled))
		s = branch_site_find(ip);
	if (!s)
		return bp_gone(e, regs, ip);	/* else not ours: the panic path reports it */
	if (!following(e) || trap_depth() > 1)
		return bp_untraced(e, regs, s, ip);
	if (unlikely(e->state == ENG_CHECKING))
		return engine_check_step(e, regs, s, ip);
	/*
	 * A block runs straight to its site: stopping at another one means
	 * the CPU ran that site's branch without its INT3 (code it translated
	 * or fetched before the INT3 was written) and the trace lacks it.
	 * Counted and reported, never silent.
	 */
	if (unlikely(e->state == ENG_FOLLOWING && e->how != HOW_STEP && e->next_site &&
		     e->next_site->ip != ip)) {
		if (!e->st.missed++)
			e->st.missed_ip = e->next_site->ip;
	}
	e->st.bp_traps++;
	bp_block_ran(e, regs, ip);
	if (!bp_emulate(e, regs, s, ip, &res))
		return true;
	if (regs->rip == (uintptr_t)pt_trace_end) {
		pt_model_ev_at(regs->rip);
		engine_stop(e, regs);
		return true;
	}
	if (engine_step_mode == TRACE_STEP_TRANSLATE && xlat_enter(e, regs))
		return true;	/* back into the cache */
	/* the block first: an argument's order of evaluation is unspecified */
	b = branch_site_next(s, regs->rip, res.taken, &created, &err);
	arm_block(e, regs, b, created);
	return true;
}

/* A register-form PTWRITE at @regs->rip (a CPU without PTWRITE raises #UD). */
static bool ptwrite_at(const struct pt_regs *regs, struct x86_insn *in, unsigned int *reg,
		       unsigned int *size)
{
	return !branch_insn_decode(regs->rip, in) && in->cls == X86_INSN_PTWRITE &&
	       branch_ptwrite_operand(in, reg, size);
}

/**
 * engine_on_invalid_opcode() - the #UD handler: an emulated PTWRITE
 * @regs: the faulting code's registers
 *
 * As perf's "emulated ptwrite" idea: the #UD of a PTWRITE in traced code
 * becomes the PTW packet it would have made, and execution goes on after
 * it. Not an interruption of the trace.
 *
 * Return: true when it was a PTWRITE in traced code.
 */
bool engine_on_invalid_opcode(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);
	struct x86_insn in;
	struct ptm_insn m = { .cls = PTM_PTWRITE, .cpl = 0, .mode = PTM_MODE_64 };
	unsigned int reg, size;

	if (!following(e) || !ptwrite_at(regs, &in, &reg, &size))
		return false;
	/* back from a handler (a PMI taken right before it): resume first, at
	 * this instruction, so the PTW comes after the TIP.PGE */
	if (e->state == ENG_PAUSED)
		engine_resume(e);
	m.ip = regs->rip;
	m.next = m.target = regs->rip + in.length;
	m.payload = *branch_emul_reg(regs, reg);
	m.size = (u8)size;
	pt_model_ev_insn(&m);
	e->st.insns++;
	regs->rip = m.next;
	if (e->how == HOW_STEP)
		e->prev = m.next;	/* the next #DB reports on it */
	return true;
}

/* An interrupt or exception in traced code: the handler is not traced. */
static void async_enter(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);
	struct x86_insn in;
	unsigned int reg, size;

	if (!following(e))
		return;
	if (xlat_async_enter(e, regs))
		return;
	/*
	 * An NMI in the entry of a stop (or of another interrupt), or in the
	 * stop's own code: the traced code was already left, and the stop
	 * being taken reports what it ran. Traced code between stops is the
	 * running block, straight-line from where it began to its INT3.
	 */
	if (unlikely(trap_in_entry_code(regs->rip) ||
		     (e->state == ENG_FOLLOWING && e->how != HOW_STEP && e->next_site &&
		      (regs->rip < e->landing || regs->rip > e->next_site->ip)))) {
		e->event = EV_EMULATED;	/* async_exit() then changes nothing either */
		return;
	}
	if (regs->vector == X86_TRAP_UD && ptwrite_at(regs, &in, &reg, &size)) {
		e->event = EV_EMULATED;
		return;
	}
	e->st.async++;
	if (e->state == ENG_PAUSED) {
		/*
		 * A second event before the next stop. Still at the return
		 * point: the traced code did not run (an interrupt pending at
		 * the IRET), the trace stays paused. Elsewhere, it ran from the
		 * return point to here without a branch (no stop between):
		 * that stretch belongs in the trace, so resume first.
		 */
		e->st.async_chained++;
		if (regs->rip == e->resume_ip)
			return;
		e->st.async_chained_ran++;
		engine_resume(e);
	}
	if (e->how != HOW_STEP)	/* the block ran up to here */
		e->st.insns += branch_block_count(e->landing, regs->rip, e->pending);
	else if (e->prev && regs->rip != e->prev && e->state == ENG_FOLLOWING)
		/* the stepped instruction retired, and the interrupt came before
		 * its #DB (QEMU delivers a pending interrupt first): it ran */
		retire(e, e->prev, regs->rip, regs);
	/* the FUP is where it stopped: the next instruction of an interrupt,
	 * the faulting one of an exception (regs->rip both) */
	pt_model_ev_interrupt(regs->vector < 32 && regs->vector != X86_TRAP_NMI ?
			      PTM_INTR_EXCEPTION : PTM_INTR_HW,
			      regs->rip, PTM_UNSEEN, (u8)regs->vector, 0, PTM_MODE_64);
}

static void async_exit(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);

	if (e->event == EV_EMULATED) {
		e->event = EV_NONE;
		return;
	}
	if (!following(e))
		return;
	if (xlat_async_exit(e, regs))
		return;
	e->state = ENG_PAUSED;
	e->resume_ip = regs->rip;	/* where the handler returns: maybe a fixup */
	if (engine_step_mode != TRACE_STEP_SINGLE)
		engine_arm_at(e, regs);	/* the cache, an INT3 ahead of it, or TF from there */
}

const struct trap_trace_hooks engine_hooks = { async_enter, async_exit };
