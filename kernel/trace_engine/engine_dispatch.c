// SPDX-License-Identifier: MIT
/*
 * The translate hub (pt.step=translate), after DynamoRIO's dispatch: where
 * the engine enters this CPU's code cache, where it leaves it (an exit's
 * INT3, an interrupt or exception), how the cache's runtime links a block
 * to the next and looks up an indirect target, and how the records the
 * cache's code wrote go to the trace unit. The cache itself (translation,
 * lookup, the map back to original code) is xlat.c.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/tracing.h>
#include <topaz/pt_model.h>
#include "engine.h"
#include "branch_sites.h"
#include <topaz/traps.h>
#include <topaz/cpu.h>
#include <topaz/kernel.h>
#include <topaz/cmdline.h>

#ifdef TOPAZ_HOSTED
const char xlat_rt_link[1], xlat_rt_lookup[1], xlat_rt_flush[1], xlat_rt_ret[1];
#endif

/* What the cache's translator needs of the kernel: set by engine_cache_init(). */
struct xlat_env engine_xenv;

/* A PTWRITE's record (@q: its word and payload): not a branch. */
static void consume_ptwrite(struct engine *e, const struct xlat_cpu *x, const u64 *q)
{
	const struct xlat_site *s = &x->sites[xlat_word_site(q[0])];
	struct ptm_insn m = {
		.cls = PTM_PTWRITE, .ip = s->ip, .next = s->next, .target = s->next,
		.mode = PTM_MODE_64, .size = s->size,
		.payload = s->size == 4 ? (u32)q[1] : q[1],
	};

	e->st.insns += s->insns;
	pt_model_ev_insn(&m);
}

/* Has the cache's code written anything the trace unit has not had? */
static bool xlat_pending(const struct xlat_cpu *x)
{
	u64 bits;

	/* (packets the code stored itself count: a full TNT's or a TIP's) */
	return x->rec_read != (u64 *)(uintptr_t)READ_ONCE(x->rec_ptr) || xlat_tnt_taken(x, &bits) ||
	       x->tnt_jc || x->tnt_out != x->tnt_out0;
}

/*
 * pt.inline_tnt (on by default): stubs that make the common case's trace
 * themselves (xlat.h): Jccs' and compressed RETs' TNT bits straight into
 * the trace unit's pending TNT, direct JMPs and CALLs with no record, the
 * full packets stored by the code itself. pt.inline_tnt=off: records only
 * (slower by a third or more, but on code where indirect branches come
 * every few branches: docs/trace-engine.md).
 */
static bool xlat_inline_tnt = true;
KPARAM_BOOL("pt.inline_tnt", pt_inline_tnt, &xlat_inline_tnt,
	    "pt.step=translate: the stubs put Jccs' and compressed RETs' TNT bits straight into the pending TNT, direct JMPs and CALLs write nothing (off: records only)");

/* The inline TNT's room now: 0 when its stubs are not made */
static unsigned int xlat_room(const struct xlat_cpu *x)
{
	return x->inline_tnt ? pt_model_tnt_room() : 0;
}

/* Records [@p, @end) to the trace unit. */
static void xlat_records(struct engine *e, const u64 *p, const u64 *end)
{
	while (p < end) {
		const u64 *q = pt_model_ev_edges(p, end, e->xc->sites, &e->st.insns);

		e->st.branches += (u64)(q - p) / 2;
		if (q == end)
			break;
		consume_ptwrite(e, e->xc, q);
		p = q + 2;
	}
}

/*
 * Hand what the code wrote to the trace unit, in the order it was made: the
 * inline results first (any record came after them: its stub turned the
 * inline TNT off, or it was off), @to where the last went
 * (0: unknown, only when they do not fill the packet), then the records.
 * The inline TNT is armed again for what the model can take now. @reset
 * starts the buffer again: only
 * where no stub is half way through one (the runtime, an exit), never from
 * an interrupt (which may have come between a stub's load of rec_ptr and
 * its store).
 */
static void xlat_consume(struct engine *e, bool reset, u64 to)
{
	struct xlat_cpu *x = e->xc;
	u64 *end = (u64 *)(uintptr_t)READ_ONCE(x->rec_ptr);
	const u64 *p = x->rec_read;

	if (e->state == ENG_PAUSED && xlat_pending(x))
		engine_resume(e);	/* the handler's return comes before these */
	e->st.branches += xlat_tnt_hand_over(x, to, &e->st.insns);
	xlat_records(e, p, end);
	x->rec_read = end;
	x->st.flushes++;
	if (reset) {
		x->rec_read = x->rec_base;
		x->rec_ptr = (uintptr_t)x->rec_base;
	}
	xlat_tnt_arm_out(x, xlat_room(x));
}

/* The block at @ip, translated if new (its code pages noted for the sideband). */
static struct xlat_site *xlat_get(struct engine *e, u64 ip)
{
	u64 before = e->xc->st.blocks;
	struct xlat_site *s;

	s = xlat_translate(e->xc, &engine_xenv, ip);
	if (s && e->xc->st.blocks != before && s->ip > s->start)
		engine_note_range(e, s->start, s->ip - 1);
	if (s && e->xc->st.blocks != before && s->kind != XK_EXIT)
		engine_note_range(e, s->ip, s->next - 1);
	return s;
}

/* Say once what the configuration lets the stubs do. */
static void xlat_say_tnt(const struct xlat_cpu *x)
{
	static const char *said;
	static unsigned int said_stubs;
	const char *why = pt_model_tnt_inline_off();
	unsigned int stubs = 1u | (unsigned int)x->ret_inline << 1 | (unsigned int)x->plain_inline << 2;

	if (!x->inline_tnt)
		return;
	if (!why)
		why = "";
	if (said == why && said_stubs == stubs)
		return;
	said = why;
	said_stubs = stubs;
	if (*why)
		pr_info("translate: conditional branches write records: %s\n", why);
	else
		pr_info("translate: conditional branches%s put their TNT bits straight into the trace unit's pending TNT; %s; "
			"full TNT packets%s go into the output from the code where the trace unit allows it "
			"(TNT-64 packets, no CYC); their stubs write flags where the flags are dead, "
			"else push them\n",
			x->ret_inline ? " and compressed RETs" : "",
			x->plain_inline ? "direct JMPs and CALLs write no record" :
			"timing packets on: a direct JMP or CALL writes a record, and results after it wait for the next batch",
			x->tip_put ? " and the TIPs of indirect branches" : "");
}

/**
 * xlat_enter() - go on in the cache at @regs->rip
 * @e: this CPU's engine
 * @regs: the traced code's registers (RIP becomes the cache's)
 *
 * Return: false when there is nothing to run there (branch-step it).
 */
bool xlat_enter(struct engine *e, struct pt_regs *regs)
{
	struct xlat_site *s;

	if (!e->xc)
		return false;
	if (!xlat_pending(e->xc))
		xlat_set_stubs(e->xc, xlat_inline_tnt, pt_model_tnt_timed(), pt_model_ret_compressed());
	s = xlat_get(e, regs->rip);
	if (!s || (s->kind == XK_EXIT && s->stub == s->entry && s->ip != engine_xenv.end_ip))
		return false;	/* it cannot be translated right here: branch-step it */
	if (!xlat_pending(e->xc))
		xlat_tnt_arm_out(e->xc, xlat_room(e->xc));	/* the model moved on outside */
	xlat_say_tnt(e->xc);
	e->how = HOW_CACHE;
	e->next_site = NULL;
	regs->rflags &= ~X86_EFLAGS_TF;
	regs->rip = xlat_entry(e->xc, s);
	return true;
}

/**
 * xlat_exit() - the INT3 of an exit
 * @e: this CPU's engine
 * @regs: the cache code's registers
 * @at: the INT3's address, in the cache
 *
 * The block's body ran, the instruction at the site's IP is the CPU's
 * (branch-step from there), or the window ends there.
 *
 * Return: false when @at is no exit.
 */
bool xlat_exit(struct engine *e, struct pt_regs *regs, u64 at)
{
	struct xlat_pos pos;
	const struct xlat_site *s;

	if (!xlat_where(e->xc, at, &pos) || pos.body || pos.site->kind != XK_EXIT)
		return false;
	s = pos.site;
	e->st.bp_traps++;
	if (e->state == ENG_PAUSED)
		engine_resume(e);
	xlat_consume(e, true, 0);
	e->st.insns += s->insns;
	e->how = HOW_BLOCK;	/* out of the cache */
	regs->rip = s->ip;
	if (s->ip == engine_xenv.end_ip) {
		pt_model_ev_at(s->ip);
		engine_stop(e, regs);
		return true;
	}
	e->st.xlat_exits++;
	engine_arm_branch(e, regs);
	return true;
}

/* A store into the guard page after the records: the buffer is full. */
static bool xlat_is_full(const struct engine *e, const struct pt_regs *regs)
{
	struct xlat_cpu *x = e->xc;

	return regs->vector == X86_TRAP_PF && e->how == HOW_CACHE && xlat_owns(x, regs->rip) &&
	       read_cr2() == (uintptr_t)x->rec_guard;
}

/**
 * engine_on_page_fault() - the #PF handler: a full record buffer
 * @regs: the faulting stub's registers
 *
 * The records go to the trace unit, the faulting stub's pointer (RCX) goes
 * back to the start, its store is retried.
 *
 * Return: true when it was the guard page of a full buffer.
 */
bool engine_on_page_fault(struct pt_regs *regs)
{
	struct engine *e = this_cpu_ptr(engines);

	if (!xlat_is_full(e, regs))
		return false;	/* a fault of the traced code or ours: the usual path */
	xlat_consume(e, true, 0);
	xlat_tnt_wait(e->xc);	/* the faulting stub's record comes next */
	regs->rcx = e->xc->rec_ptr;
	return true;
}

/* The runtime's C halves (xlat_rt.S): interrupts off, every register saved. */
u64 xlat_rt_link_c(u64 id)
{
	struct engine *e = this_cpu_ptr(engines);
	u64 to;

	/* a reset on the way would take the sites; a Jcc's edge may follow its inline result */
	xlat_consume(e, true, xlat_edge_to(&e->xc->sites[id >> 1], id & 1));
	to = xlat_link(e->xc, &engine_xenv, id);
	if (!to)
		panic("trace: the code cache cannot hold one block");
	return to;
}

u64 xlat_rt_lookup_c(u64 target)
{
	struct engine *e = this_cpu_ptr(engines);
	struct xlat_site *s;

	xlat_consume(e, true, target);
	e->xc->st.misses++;
	s = xlat_get(e, target);
	if (!s)
		panic("trace: the code cache cannot hold one block");
	return xlat_entry(e->xc, s);
}

/* A Jcc's inline TNT bit filled the packet: the model takes the results now. */
u64 xlat_rt_flush_c(u64 ret)
{
	struct engine *e = this_cpu_ptr(engines);
	struct xlat_pos pos;

	/* after a bit that filled the packet: where the branch went; at a
	 * stub's RETRY, whose count of records asks to be armed again: 0 */
	xlat_consume(e, true, xlat_where(e->xc, ret, &pos) && pos.retired ? pos.ip : 0);
	return ret;
}

/* The instructions of the interrupted block that ran, by where it stopped. */
static u32 ran_of(const struct xlat_pos *pos)
{
	return pos->body ? branch_block_count(pos->site->start, pos->ip, pos->site->insns) :
	       !pos->retired ? pos->site->insns - 1u : 0;
}

/**
 * xlat_async_enter() - an interrupt or exception in the cache
 * @e: this CPU's engine
 * @regs: the interrupted code's registers (RIP becomes the original's)
 *
 * The place it stands for (an original instruction, or the target of a
 * branch whose record is out), so the model hears of it there and the
 * handler sees original addresses.
 *
 * Return: false when not in the cache (the other modes' path).
 */
bool xlat_async_enter(struct engine *e, struct pt_regs *regs)
{
	u64 at = regs->rip;
	struct xlat_pos pos;

	if (e->how != HOW_CACHE)
		return false;
	if (xlat_is_full(e, regs)) {
		e->event = EV_EMULATED;	/* engine_on_page_fault() deals with it: not an event */
		return true;
	}
	if (at == (uintptr_t)xlat_rt_ret || xlat_put_tail(e->xc, at))
		at = *(const u64 *)(uintptr_t)regs->rsp;	/* where the runtime returns */
	if (!xlat_where(e->xc, at, &pos)) {
		/* the runtime's own code, or an entry: it reports what ran */
		e->event = EV_EMULATED;
		return true;
	}
	e->st.async++;
	e->event = EV_CACHE;
	e->x_at = regs->rip;
	if (pos.rewind && at == regs->rip) {
		/* in an inline path before its result: it goes again from its
		 * check when the handler comes back (the arming changes); in
		 * one after it that the hand-over below finishes (a Jcc's full
		 * packet, a turning off), on past it. (At the runtime's RET,
		 * its return address is still on the stack: it goes there.) */
		if (pos.undo_ins)
			e->xc->tnt_ins -= pos.site->insns;
		if (pos.undo_jc)
			e->xc->tnt_jc--;
		if (pos.undo_bit)
			e->xc->tnt_w >>= 1;
		/* a Jcc's stub while off, back before it wrote the mark again
		 * (its doubling took the mark along): a second doubling must
		 * not find the word armed (a chained event below skips the wait) */
		if (xlat_tnt_off(e->xc))
			xlat_tnt_remark(e->xc);
		e->x_at = (uintptr_t)e->xc->region + pos.rewind;
	}
	if (pos.rs_poison) {
		/* a RET's inline pop: the index moved, the slot it took is poisoned now */
		struct ptm_retstack *rs = &e->xc->rs;

		rs->slot[(u8)(rs->top4 + 4) / 4] = PTM_RS_POISON;
	}
	e->x_pos = pos;
	regs->rip = pos.ip;
	/* what of the block ran counts now (a handler may never come back:
	 * a panic); taken back if it resumes in the block, whose record counts all */
	e->x_counted = ran_of(&pos);
	e->st.insns += e->x_counted;
	if (e->state == ENG_PAUSED) {
		/* a second event before any record: as in async_enter() */
		e->st.async_chained++;
		if (pos.ip == e->resume_ip && !xlat_pending(e->xc))
			return true;
		e->st.async_chained_ran++;
		engine_resume(e);
	}
	/* not retired: the flow came into this block last (inline results chain Jcc blocks only) */
	xlat_consume(e, false, pos.retired ? pos.ip : pos.site->start);
	pt_model_ev_interrupt(regs->vector < 32 && regs->vector != X86_TRAP_NMI ?
			      PTM_INTR_EXCEPTION : PTM_INTR_HW,
			      pos.ip, PTM_UNSEEN, (u8)regs->vector, 0, PTM_MODE_64);
	xlat_tnt_wait(e->xc);	/* the model is in the handler now */
	return true;
}

/**
 * xlat_async_exit() - the handler of an event in the cache returns
 * @e: this CPU's engine
 * @regs: the registers it returns with
 *
 * Return: false when the event was not in the cache.
 */
bool xlat_async_exit(struct engine *e, struct pt_regs *regs)
{
	if (e->event != EV_CACHE)
		return false;
	e->event = EV_NONE;
	e->state = ENG_PAUSED;
	e->resume_ip = regs->rip;
	if (regs->rip == e->x_pos.ip) {
		regs->rip = e->x_at;	/* back where it was, in the cache */
		e->st.insns -= e->x_counted;
		return true;
	}
	/* the handler goes on elsewhere (an exception-table fixup): what of
	 * the block ran before the faulting instruction stays counted */
	e->how = HOW_BLOCK;	/* out of the cache; engine_arm_at() says how it goes on */
	engine_arm_at(e, regs);
	return true;
}
