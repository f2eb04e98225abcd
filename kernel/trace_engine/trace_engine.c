// SPDX-License-Identifier: MIT
/*
 * The trace engine (see include/topaz/trace_engine.h, docs/trace-engine.md).
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
#include <topaz/x86_insn.h>
#include "branch_sites.h"
#include "branch_emul.h"
#include "xlat.h"
#include <topaz/traps.h>
#include <topaz/cpu.h>
#include <topaz/cmdline.h>
#include <topaz/symbols.h>
#include <topaz/paging.h>
#include <topaz/kernel.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include <topaz/arch.h>
#include <topaz/smp.h>

#define DR6_BS		BIT(14)
#define MAX_FOREIGN	64	/* code pages outside the image kept for the sideband */
#define MAX_SITES	16384	/* branch-step: INT3s on the branches of traced code (firmware has many) */

extern const char ImageBase[] __hidden, __image_end[] __hidden;

/* pt.step=: how every CPU's engine follows */
static enum trace_step_mode step_mode = TRACE_STEP_TRANSLATE;

/*
 * What one CPU's engine is doing, and how it moves:
 *
 *   OFF --arm (pt_trace_begin)--> STARTING --first stop past pt_trace_begin--> FOLLOWING
 *   FOLLOWING --a handler returns into traced code (async_exit)--> PAUSED
 *   PAUSED --the next stop, or a second event after the code ran on--> FOLLOWING
 *   STARTING, FOLLOWING, PAUSED --end, abort, disarm--> OFF
 *   OFF --boot self-check--> CHECKING --the probe returns to its caller--> CHECK_DONE
 *   CHECKING --a branch it cannot emulate or place--> OFF (the self-check fails)
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
};

/* One CPU's engine: what it follows now and what it has seen. */
struct engine {
	enum engine_state state;
	bool stepping;		/* how: TF set, every instruction stops (single-step) */
	bool emulating;		/* a PTWRITE's #UD is being emulated (not an event) */
	bool check_no_iret;	/* the self-check's INT3s return as inside an NMI */
	u64 check_lo, check_hi;	/* its probe function */
	u64 check_stops, sites_base;
	u64 prev;		/* stepping: the instruction the next #DB reports on */
	u64 landing;		/* not stepping: where the running block began */
	struct branch_site *next_site;	/* ... and the INT3 it runs to */
	u32 pending;		/* its instructions before the site that ends it */
	u64 resume_ip;
	bool joined;		/* counted in engines_following */
	bool holds_sites;	/* counted among the CPUs that keep the INT3s in */
	/* pt.step=translate: this CPU's code cache, and whether it runs there */
	struct xlat_cpu *xc;
	bool in_cache;
	bool x_active;		/* an event interrupted the cache (async_enter) */
	u64 x_at;		/* ... at this cache address (or the runtime's RET) */
	struct xlat_pos x_pos;	/* ... which stands for this */
	u32 x_counted;		/* ... and the instructions of its block counted then */
	struct trace_engine_stats st;
	u64 foreign[MAX_FOREIGN];
};
static DEFINE_PER_CPU(struct engine, engines);
/* This CPU's engine: the state every function below works on. */
#define eng (*this_cpu_ptr(engines))

/* Following traced code (FOLLOWING, PAUSED) or the self-check's probe. */
static inline bool following(void)
{
	return eng.state == ENG_FOLLOWING || eng.state == ENG_PAUSED || eng.state == ENG_CHECKING;
}

static const char *const step_names[] = { "single", "branch", "translate", NULL };	/* enum trace_step_mode */
KPARAM_ENUM("pt.step", pt_step, &step_mode, step_names,
	    "trace engine: translate (a code cache that records its branches, the default), branch (an INT3 per branch) or single (a #DB per instruction)");

#ifndef TOPAZ_HOSTED
static inline u64 read_dr6(void) { u64 v; __asm__ volatile("mov %%db6, %0" : "=r"(v)); return v; }
static inline void write_dr6(u64 v) { __asm__ volatile("mov %0, %%db6" :: "r"(v)); }
#else
/* the hosted tests script the traps: DR6 is theirs (tests/host/hosted.h) */
extern u64 hosted_dr6;
static inline u64 read_dr6(void) { return hosted_dr6; }
static inline void write_dr6(u64 v) { hosted_dr6 = v; }
#endif

static bool in_image(u64 ip)
{
	return ip >= (uintptr_t)ImageBase && ip < (uintptr_t)__image_end;
}

/* Code outside the kernel (firmware) goes to the sideband, page by page. */
static void note_foreign(u64 ip)
{
	u64 page = ip & PAGE_MASK;

	if (in_image(ip) || trace_module_find(ip))
		return;	/* a known module goes to the sideband whole, named */
	for (unsigned int i = 0; i < eng.st.foreign_pages; i++)
		if (eng.foreign[i] == page)
			return;
	if (eng.st.foreign_pages < MAX_FOREIGN)
		eng.foreign[eng.st.foreign_pages++] = page;
}

/* Code from @start to @end (inclusive) is run by traced code. */
static __noinline void note_range(u64 start, u64 end)
{
	for (u64 p = start & PAGE_MASK; p <= end; p += PAGE_SIZE)
		note_foreign(p < start ? start : p);
}

/* A new block runs from its start to the end of its branch. */
static void note_block(const struct branch_block *b)
{
	note_range(b->start, b->site->ip + b->site->emul.len - 1);
}

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
static void retire(u64 ip, u64 to, struct pt_regs *regs)
{
	struct x86_insn in;
	struct ptm_insn m = { .ip = ip, .target = to, .cpl = 0, .mode = PTM_MODE_64 };

	eng.st.insns++;
	note_foreign(ip);
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
			retire(m.next, to, regs);
			return;
		}
		/* an instruction that jumped without being a branch (an exception
		 * path that came back elsewhere): report it as a far transfer */
		m.cls = PTM_FAR;
	}
	if (m.cls == PTM_COND)
		m.taken = to != m.next;
	eng.st.branches++;
	pt_model_ev_insn(&m);
}

/*
 * Let the code at @regs->rip run until the next stop. Branch-step: its block
 * (straight-line code up to an INT3 on the next branch) runs freely; code
 * that cannot have one (a far transfer, a table full, bytes that do not
 * decode) and single-step mode run with TF, a #DB after each instruction.
 */
/* Execution goes on at @at, the start of block @b: it runs to b's INT3. */
static inline void run_block(u64 at, const struct branch_block *b)
{
	eng.landing = at;
	eng.next_site = b->site;
	eng.pending = b->insns;
}

static inline void arm_block(struct pt_regs *regs, const struct branch_block *b, bool created)
{
	if (likely(b)) {
		if (created)
			note_block(b);
		eng.stepping = false;
		run_block(regs->rip, b);
		regs->rflags &= ~X86_EFLAGS_TF;
		return;
	}
	if (step_mode != TRACE_STEP_SINGLE)
		eng.st.fallbacks++;
	eng.stepping = true;
	eng.prev = regs->rip;
	regs->rflags |= X86_EFLAGS_TF;
}

static bool xlat_enter(struct pt_regs *regs);

/* Branch-step (or single-step) from @regs->rip, not the cache. */
static void arm_branch(struct pt_regs *regs)
{
	const struct branch_block *b = NULL;
	bool created = false;
	int err;

	if (step_mode != TRACE_STEP_SINGLE)
		b = branch_block_get(regs->rip, &created, &err);
	arm_block(regs, b, created);
}

/* Follow on from @regs->rip: in the cache where it translates, else by stops. */
static void arm(struct pt_regs *regs)
{
	if (step_mode == TRACE_STEP_TRANSLATE && xlat_enter(regs))
		return;
	arm_branch(regs);
}

/*
 * CPUs that follow traced code: the trap hooks stay installed and the INT3s
 * stay in while any does (every CPU's engine shares them; each hook call
 * asks its own CPU's engine).
 */
static unsigned int engines_following;
static const struct trap_trace_hooks hooks;

static void engine_join(void)
{
	if (!eng.joined) {
		eng.joined = true;
		__atomic_fetch_add(&engines_following, 1, __ATOMIC_ACQ_REL);
	}
	trap_set_trace_hooks(&hooks);
	if (step_mode != TRACE_STEP_SINGLE && !eng.holds_sites) {
		branch_sites_get();
		eng.holds_sites = true;
	}
}

/* This CPU is done; the last one puts the code back as it was. */
static void engine_leave(void)
{
	struct branch_sites_stats bst;

	if (eng.holds_sites) {
		branch_sites_get_stats(&bst);
		eng.st.sites = bst.patched - eng.sites_base;
		eng.holds_sites = false;
		branch_sites_put();
	}
	if (eng.joined) {
		eng.joined = false;
		if (__atomic_sub_fetch(&engines_following, 1, __ATOMIC_ACQ_REL) == 0)
			trap_set_trace_hooks(NULL);
	}
}

/* Tracing ends on this CPU: no more stops here; the last CPU restores the code. */
static __noinline void stop_tracing(struct pt_regs *regs)
{
	eng.state = ENG_OFF;
	eng.in_cache = false;
	regs->rflags &= ~X86_EFLAGS_TF;
	engine_leave();
}

/* Back from a handler: tracing goes on where it returned. */
static __noinline void resume(void)
{
	eng.state = ENG_FOLLOWING;
	pt_model_ev_return(eng.resume_ip);
	if (eng.stepping)
		eng.prev = eng.resume_ip;
}

/* ---------------------------------------------------------------- translate */

#ifndef TOPAZ_HOSTED
extern const char xlat_rt_link[] __hidden, xlat_rt_lookup[] __hidden, xlat_rt_ret[] __hidden;
#else
/* the hosted build has no runtime: pt.step=translate is the kernel's */
static const char xlat_rt_link[1] __attribute__((unused)), xlat_rt_lookup[1] __attribute__((unused)),
	xlat_rt_ret[1];
#endif
static struct xlat_env xenv;

/* pt.translate_map: print every CPU's blocks at the end (the fidelity oracle
 * reads QEMU's log of the cache back to the original instructions) */
static bool xlat_map;
KPARAM_BOOL("pt.translate_map", pt_translate_map, &xlat_map,
	    "pt.step=translate: print each CPU's translated blocks at the end (for tests/qemu/oracle.py)");

/*
 * Hand the records to the trace unit, in the order they were made. @reset
 * starts the buffer again: only where no stub is half way through one (the
 * runtime, an exit), never from an interrupt (which may have come between a
 * stub's load of rec_ptr and its store).
 */
static void xlat_consume(bool reset)
{
	struct xlat_cpu *x = eng.xc;
	u64 *end = (u64 *)(uintptr_t)READ_ONCE(x->rec_ptr);
	const u64 *p = x->rec_read;

	if (p != end && eng.state == ENG_PAUSED)
		resume();	/* the handler's return comes before these */
	while (p < end) {
		const u64 *q = pt_model_ev_edges(p, end, x->sites, &eng.st.insns);
		const struct xlat_site *s;

		eng.st.branches += (u64)(q - p) / 2;
		if (q == end)
			break;
		/* a PTWRITE: not a branch */
		s = &x->sites[xlat_word_site(q[0])];
		struct ptm_insn m = {
			.cls = PTM_PTWRITE, .ip = s->ip, .next = s->next, .target = s->next,
			.mode = PTM_MODE_64, .size = s->size,
			.payload = s->size == 4 ? (u32)q[1] : q[1],
		};

		eng.st.insns += s->insns;
		pt_model_ev_insn(&m);
		p = q + 2;
	}
	x->rec_read = end;
	x->st.flushes++;
	if (reset) {
		x->rec_read = x->rec_base;
		x->rec_ptr = (uintptr_t)x->rec_base;
	}
}

/* The block at @ip, translated if new (its code pages noted for the sideband). */
static struct xlat_site *xlat_get(u64 ip)
{
	u64 before = eng.xc->st.blocks;
	struct xlat_site *s;

	s = xlat_translate(eng.xc, &xenv, ip);
	if (s && eng.xc->st.blocks != before && s->ip > s->start)
		note_range(s->start, s->ip - 1);
	if (s && eng.xc->st.blocks != before && s->kind != XK_EXIT)
		note_range(s->ip, s->next - 1);
	return s;
}

/* Go on in the cache at @regs->rip; false when there is nothing to run there. */
static bool xlat_enter(struct pt_regs *regs)
{
	struct xlat_site *s;

	if (!eng.xc)
		return false;
	s = xlat_get(regs->rip);
	if (!s || (s->kind == XK_EXIT && s->stub == s->entry && s->ip != xenv.end_ip))
		return false;	/* it cannot be translated right here: branch-step it */
	eng.in_cache = true;
	eng.stepping = false;
	eng.next_site = NULL;
	regs->rflags &= ~X86_EFLAGS_TF;
	regs->rip = xlat_entry(eng.xc, s);
	return true;
}

/*
 * The INT3 of an exit: the block's body ran, the instruction at the site's
 * IP is the CPU's (branch-step from there), or the window ends there.
 */
static bool xlat_exit(struct pt_regs *regs, u64 at)
{
	struct xlat_pos pos;
	const struct xlat_site *s;

	if (!xlat_where(eng.xc, at, &pos) || pos.body || pos.site->kind != XK_EXIT)
		return false;
	s = pos.site;
	eng.st.bp_traps++;
	if (eng.state == ENG_PAUSED)
		resume();
	xlat_consume(true);
	eng.st.insns += s->insns;
	eng.in_cache = false;
	regs->rip = s->ip;
	if (s->ip == xenv.end_ip) {
		pt_model_ev_at(s->ip);
		stop_tracing(regs);
		return true;
	}
	eng.st.xlat_exits++;
	arm_branch(regs);
	return true;
}

/* A store into the guard page after the records: the buffer is full. */
static bool xlat_is_full(const struct pt_regs *regs)
{
	struct xlat_cpu *x = eng.xc;

	return regs->vector == X86_TRAP_PF && eng.in_cache && xlat_owns(x, regs->rip) &&
	       read_cr2() == (uintptr_t)x->rec_guard;
}

/*
 * The #PF of a full record buffer: the records go to the trace unit, the
 * faulting stub's pointer (RCX) goes back to the start, its store is retried.
 */
static bool on_page_fault(struct pt_regs *regs)
{
	if (!xlat_is_full(regs))
		return false;	/* a fault of the traced code or ours: the usual path */
	xlat_consume(true);
	regs->rcx = eng.xc->rec_ptr;
	return true;
}

/* The runtime's C halves (xlat_rt.S): interrupts off, every register saved. */
u64 xlat_rt_link_c(u64 id);
u64 xlat_rt_lookup_c(u64 target);

u64 xlat_rt_link_c(u64 id)
{
	u64 to;

	xlat_consume(true);	/* a reset on the way would take the sites */
	to = xlat_link(eng.xc, &xenv, id);
	if (!to)
		panic("trace: the code cache cannot hold one block");
	return to;
}

u64 xlat_rt_lookup_c(u64 target)
{
	struct xlat_site *s;

	xlat_consume(true);
	eng.xc->st.misses++;
	s = xlat_get(target);
	if (!s)
		panic("trace: the code cache cannot hold one block");
	return xlat_entry(eng.xc, s);
}

/*
 * An interrupt or exception in the cache: the place it stands for (an
 * original instruction, or the target of a branch whose record is out), so
 * the model hears of it there and the handler sees original addresses.
 * Returns false when not in the cache (the other modes' path).
 */
static bool xlat_async_enter(struct pt_regs *regs)
{
	u64 at = regs->rip;
	struct xlat_pos pos;

	if (!eng.in_cache)
		return false;
	if (xlat_is_full(regs)) {
		eng.emulating = true;	/* on_page_fault() deals with it: not an event */
		return true;
	}
	if (at == (uintptr_t)xlat_rt_ret)
		at = *(const u64 *)(uintptr_t)regs->rsp;	/* where the runtime returns */
	if (!xlat_where(eng.xc, at, &pos)) {
		/* the runtime's own code, or an entry: it reports what ran */
		eng.emulating = true;
		return true;
	}
	eng.st.async++;
	eng.x_active = true;
	eng.x_at = regs->rip;
	eng.x_pos = pos;
	regs->rip = pos.ip;
	/* what of the block ran counts now (a handler may never come back:
	 * a panic); taken back if it resumes in the block, whose record counts all */
	eng.x_counted = pos.body ? branch_block_count(pos.site->start, pos.ip, pos.site->insns) :
			!pos.retired ? pos.site->insns - 1u : 0;
	eng.st.insns += eng.x_counted;
	if (eng.state == ENG_PAUSED) {
		/* a second event before any record: as in async_enter() */
		eng.st.async_chained++;
		if (pos.ip == eng.resume_ip &&
		    eng.xc->rec_read == (u64 *)(uintptr_t)eng.xc->rec_ptr)
			return true;
		eng.st.async_chained_ran++;
		resume();
	}
	xlat_consume(false);
	pt_model_ev_interrupt(regs->vector < 32 && regs->vector != X86_TRAP_NMI ?
			      PTM_INTR_EXCEPTION : PTM_INTR_HW,
			      pos.ip, PTM_UNSEEN, (u8)regs->vector, 0, PTM_MODE_64);
	return true;
}

static bool xlat_async_exit(struct pt_regs *regs)
{
	if (!eng.x_active)
		return false;
	eng.x_active = false;
	eng.state = ENG_PAUSED;
	eng.resume_ip = regs->rip;
	if (regs->rip == eng.x_pos.ip) {
		regs->rip = eng.x_at;	/* back where it was, in the cache */
		eng.st.insns -= eng.x_counted;
		return true;
	}
	/* the handler goes on elsewhere (an exception-table fixup): what of
	 * the block ran before the faulting instruction stays counted */
	eng.in_cache = false;
	arm(regs);
	return true;
}

static void engine_follow(void);

/* @ip lies inside the function that starts at @fn */
static bool in_function(u64 ip, uintptr_t fn)
{
	const char *n;
	uintptr_t off, size;

	return ip >= fn && !ksym_lookup(ip, &n, &off, &size) && ip - off == fn;
}

static bool on_debug(struct pt_regs *regs)
{
	u64 dr6 = read_dr6();
	u64 rip = regs->rip;

	write_dr6(0);
	eng.st.db_traps++;
	if (!(dr6 & DR6_BS))
		return false;
	if (eng.state == ENG_OFF || eng.state == ENG_CHECK_DONE) {
		/* a step armed before tracing ended: nothing more to follow */
		regs->rflags &= ~X86_EFLAGS_TF;
		return true;
	}
	if (eng.state == ENG_STARTING) {
		/* our epilogue and pt_trace_begin's: start at the first caller instruction */
		if (in_function(rip, (uintptr_t)engine_follow) ||
		    in_function(rip, (uintptr_t)pt_trace_begin)) {
			regs->rflags |= X86_EFLAGS_TF;
			return true;
		}
		eng.state = ENG_FOLLOWING;
		pt_model_ev_at(rip);
		if (rip == (uintptr_t)pt_trace_end) {
			stop_tracing(regs);
			return true;
		}
		arm(regs);
		return true;
	}
	if (eng.state == ENG_PAUSED)
		resume();
	if (rip == eng.prev) {
		/* a REP string instruction finished one iteration */
		regs->rflags |= X86_EFLAGS_TF;
		return true;
	}
	retire(eng.prev, rip, regs);
	if (rip == (uintptr_t)pt_trace_end) {
		pt_model_ev_at(rip);
		stop_tracing(regs);
		return true;
	}
	arm(regs);
	return true;
}

/*
 * The boot self-check (branch_step_self_check()): the same stop, without the
 * model; it ends where the probe function returns to its caller.
 */
static __noinline bool check_step(struct pt_regs *regs, struct branch_site *s, u64 ip)
{
	struct branch_result res;
	const struct branch_block *b;
	bool created;
	int err;

	regs->rip = ip;
	if (branch_emul_run(&s->emul, ip, regs, &res)) {
		branch_site_disable(s);
		eng.state = ENG_OFF;	/* the CPU takes it from here */
		return true;
	}
	eng.check_stops++;
	if (s->cls == PTM_RET && (res.target < eng.check_lo || res.target >= eng.check_hi)) {
		eng.state = ENG_CHECK_DONE;	/* back in the caller: done */
		return true;
	}
	b = branch_block_get(regs->rip, &created, &err);
	if (!b)
		eng.state = ENG_OFF;	/* the INT3s in place still run, untraced */
	return true;
}

/*
 * The common stop, from isr_bp before the general entry saves all the
 * registers (trap_set_bp_fast()): a Jcc in traced code whose target block is
 * known and that the model takes on its fast path. The same outcome as
 * on_breakpoint() below; anything else returns false, having changed
 * nothing, and goes there.
 */
static bool bp_fast(struct trap_frame *f)
{
	struct branch_site *s = eng.next_site;
	const struct branch_block *b;
	u64 ip = f->rip - 1, next, to;
	bool taken;

	if (unlikely(!s || s->ip != ip || s->emul.kind != BEMUL_JCC || step_mode != TRACE_STEP_BRANCH ||
		     eng.state != ENG_FOLLOWING || eng.stepping || trap_depth()))
		return false;
	taken = branch_emul_cond(s->emul.cc, f->rflags);
	next = ip + s->emul.len;
	to = taken ? s->emul.target : next;
	b = s->next[taken];
	if (unlikely(!b || b->start != to || b->site->disabled))
		return false;
	if (!pt_model_ev_branch_fast(PTM_COND, next, to, taken))
		return false;
	eng.st.bp_traps++;
	eng.st.branches++;
	eng.st.insns += eng.pending + 1;
	run_block(to, b);
	f->rip = to;
	return true;
}

/*
 * Branch-step: the INT3 on a branch. The emulator runs the branch (the
 * registers and stack as the CPU would leave them); the model hears of the
 * block before it and of the branch; the next block gets its INT3.
 */
static bool on_breakpoint(struct pt_regs *regs)
{
	u64 ip = regs->rip - 1;
	struct branch_site *s = eng.next_site;	/* most often, the one armed */
	const struct branch_block *b;
	struct branch_result res;
	bool created;
	int err;

	if (eng.in_cache && xlat_owns(eng.xc, ip))
		return following() && trap_depth() == 1 && xlat_exit(regs, ip);
	if (unlikely(!s || s->ip != ip || s->disabled))
		s = branch_site_find(ip);
	if (!s)
		return false;	/* not ours: the panic path reports it */
	if (!following() || trap_depth() > 1) {
		/* a handler runs traced code's callee: not traced, just run it */
		eng.st.nested++;
		regs->rip = ip;
		if (branch_emul_run(&s->emul, ip, regs, &res))
			branch_site_disable(s);	/* the CPU runs it and faults */
		if (trap_in_nmi() || eng.check_no_iret)
			trap_return_without_iret();
		return true;
	}
	if (unlikely(eng.state == ENG_CHECKING))
		return check_step(regs, s, ip);
	/*
	 * A block runs straight to its site: stopping at another one means
	 * the CPU ran that site's branch without its INT3 (code it translated
	 * or fetched before the INT3 was written) and the trace lacks it.
	 * Counted and reported, never silent.
	 */
	if (unlikely(eng.state == ENG_FOLLOWING && !eng.stepping && eng.next_site &&
		     eng.next_site->ip != ip)) {
		if (!eng.st.missed++)
			eng.st.missed_ip = eng.next_site->ip;
	}
	eng.st.bp_traps++;
	if (eng.state == ENG_PAUSED)
		resume();
	if (eng.stepping)
		eng.pending = 0;	/* each instruction before it had its #DB */
	regs->rip = ip;
	eng.st.insns += eng.pending;
	if (branch_emul_run_fast(&s->emul, ip, regs, &res)) {
		/* It faults (a bad pointer, the stack): the CPU must raise that
		 * itself, so the instruction goes back and is single-stepped. */
		branch_site_disable(s);
		eng.stepping = true;
		eng.prev = ip;
		regs->rflags |= X86_EFLAGS_TF;
		return true;
	}
	eng.st.insns++;
	if (likely(s->cls != PTM_PTWRITE)) {
		eng.st.branches++;
		pt_model_ev_branch(s->cls, ip, res.next, res.target, res.taken);
	} else {
		struct ptm_insn m = {
			.cls = PTM_PTWRITE, .ip = ip, .next = res.next, .target = res.next,
			.mode = PTM_MODE_64, .payload = res.payload, .size = s->emul.size,
		};

		pt_model_ev_insn(&m);
	}
	if (regs->rip == (uintptr_t)pt_trace_end) {
		pt_model_ev_at(regs->rip);
		stop_tracing(regs);
		return true;
	}
	if (step_mode == TRACE_STEP_TRANSLATE && xlat_enter(regs))
		return true;	/* back into the cache */
	/* the block first: an argument's order of evaluation is unspecified */
	b = branch_site_next(s, regs->rip, res.taken, &created, &err);
	arm_block(regs, b, created);
	return true;
}

/* A register-form PTWRITE at @regs->rip (a CPU without PTWRITE raises #UD). */
static bool ptwrite_at(const struct pt_regs *regs, struct x86_insn *in, unsigned int *reg,
		       unsigned int *size)
{
	return !branch_insn_decode(regs->rip, in) && in->cls == X86_INSN_PTWRITE &&
	       branch_ptwrite_operand(in, reg, size);
}

/*
 * Emulated PTWRITE (as perf's "emulated ptwrite" idea): the #UD of a PTWRITE
 * in traced code becomes the PTW packet it would have made, and execution
 * goes on after it. Not an interruption of the trace.
 */
static bool on_invalid_opcode(struct pt_regs *regs)
{
	struct x86_insn in;
	struct ptm_insn m = { .cls = PTM_PTWRITE, .cpl = 0, .mode = PTM_MODE_64 };
	unsigned int reg, size;

	if (!following() || !ptwrite_at(regs, &in, &reg, &size))
		return false;
	/* back from a handler (a PMI taken right before it): resume first, at
	 * this instruction, so the PTW comes after the TIP.PGE */
	if (eng.state == ENG_PAUSED)
		resume();
	m.ip = regs->rip;
	m.next = m.target = regs->rip + in.length;
	m.payload = *branch_emul_reg(regs, reg);
	m.size = (u8)size;
	pt_model_ev_insn(&m);
	eng.st.insns++;
	regs->rip = m.next;
	if (eng.stepping)
		eng.prev = m.next;	/* the next #DB reports on it */
	return true;
}

/* An interrupt or exception in traced code: the handler is not traced. */
static void async_enter(struct pt_regs *regs)
{
	struct x86_insn in;
	unsigned int reg, size;

	if (!following())
		return;
	if (xlat_async_enter(regs))
		return;
	/*
	 * An NMI in the entry of a stop (or of another interrupt), or in the
	 * stop's own code: the traced code was already left, and the stop
	 * being taken reports what it ran. Traced code between stops is the
	 * running block, straight-line from where it began to its INT3.
	 */
	if (unlikely(trap_in_entry_code(regs->rip) ||
		     (eng.state == ENG_FOLLOWING && !eng.stepping && eng.next_site &&
		      (regs->rip < eng.landing || regs->rip > eng.next_site->ip)))) {
		eng.emulating = true;	/* async_exit() then changes nothing either */
		return;
	}
	if (regs->vector == X86_TRAP_UD && ptwrite_at(regs, &in, &reg, &size)) {
		eng.emulating = true;
		return;
	}
	eng.st.async++;
	if (eng.state == ENG_PAUSED) {
		/*
		 * A second event before the next stop. Still at the return
		 * point: the traced code did not run (an interrupt pending at
		 * the IRET), the trace stays paused. Elsewhere, it ran from the
		 * return point to here without a branch (no stop between):
		 * that stretch belongs in the trace, so resume first.
		 */
		eng.st.async_chained++;
		if (regs->rip == eng.resume_ip)
			return;
		eng.st.async_chained_ran++;
		resume();
	}
	if (!eng.stepping)	/* the block ran up to here */
		eng.st.insns += branch_block_count(eng.landing, regs->rip, eng.pending);
	else if (eng.prev && regs->rip != eng.prev && eng.state == ENG_FOLLOWING)
		/* the stepped instruction retired, and the interrupt came before
		 * its #DB (QEMU delivers a pending interrupt first): it ran */
		retire(eng.prev, regs->rip, regs);
	/* the FUP is where it stopped: the next instruction of an interrupt,
	 * the faulting one of an exception (regs->rip both) */
	pt_model_ev_interrupt(regs->vector < 32 && regs->vector != X86_TRAP_NMI ?
			      PTM_INTR_EXCEPTION : PTM_INTR_HW,
			      regs->rip, PTM_UNSEEN, (u8)regs->vector, 0, PTM_MODE_64);
}

static void async_exit(struct pt_regs *regs)
{
	if (eng.emulating) {
		eng.emulating = false;
		return;
	}
	if (!following())
		return;
	if (xlat_async_exit(regs))
		return;
	eng.state = ENG_PAUSED;
	eng.resume_ip = regs->rip;	/* where the handler returns: maybe a fixup */
	if (step_mode != TRACE_STEP_SINGLE)
		arm(regs);	/* the cache, an INT3 ahead of it, or TF from there */
}

static const struct trap_trace_hooks hooks = { async_enter, async_exit };

#ifndef TOPAZ_HOSTED	/* it runs INT3s natively: the hosted tests script the stops instead */
/*
 * The branch-step self-check at boot: a probe function with each kind of
 * near branch the emulator runs (Jcc both ways, direct and indirect CALL,
 * RET, JMP) gives the same result under the INT3s as run by the CPU, stops
 * at them, and its code is the same byte for byte afterwards. It proves the
 * code can be patched here (W^X mappings, firmware, a CPU's quirks) before a
 * trace depends on it, and warms the stop path.
 */
static __noinline u64 check_leaf_a(u64 x)
{
	return x * 3 + 1;
}

static __noinline u64 check_leaf_b(u64 x)
{
	return (x >> 1) ^ 0x5a;
}

static u64 (*volatile check_ops[2])(u64) = { check_leaf_a, check_leaf_b };

static __noinline u64 check_probe(u64 n)
{
	u64 acc = 1;

	for (u64 i = 0; i < n; i++) {
		if (i % 3 == 0)
			acc += check_leaf_a(acc);
		else
			acc ^= check_ops[i & 1](acc + i);
		if (acc > 100000)
			acc %= 977;
	}
	return acc;
}

static int branch_step_self_check(void)
{
	const u8 *code = (const u8 *)check_probe;
	u8 before[64];
	const struct branch_block *b;
	struct branch_sites_stats bst;
	uintptr_t off, size;
	const char *name;
	u64 want = check_probe(100), got = 0, got_no_iret = 0, nested = 0;
	unsigned long flags;
	unsigned int restored;
	bool created, done;
	int err;

	if (ksym_lookup((uintptr_t)check_probe, &name, &off, &size) || off)
		return -ENOENT;
	eng.check_lo = (uintptr_t)check_probe;
	eng.check_hi = eng.check_lo + size;
	memcpy(before, code, min(sizeof(before), (size_t)size));
	flags = local_irq_save();	/* no interrupt while the INT3s are in */
	eng.check_stops = 0;
	b = branch_block_get((uintptr_t)check_probe, &created, &err);
	if (b) {
		eng.state = ENG_CHECKING;
		got = check_probe(100);
		done = eng.state == ENG_CHECK_DONE;
		eng.state = ENG_OFF;
		/* again, the INT3s in place, run untraced as in a handler and
		 * returned from as in an NMI handler (POPFQ; RET) */
		nested = eng.st.nested;
		eng.check_no_iret = true;
		got_no_iret = check_probe(100);
		eng.check_no_iret = false;
		nested = eng.st.nested - nested;
		eng.st.nested -= nested;
	}
	restored = branch_sites_restore();
	local_irq_restore(flags);
	if (!b)
		return err;
	branch_sites_get_stats(&bst);
	eng.sites_base = bst.patched;
	if (got != want || got_no_iret != want || !done || nested < eng.check_stops ||
	    memcmp(before, code, min(sizeof(before), (size_t)size))) {
		pr_err("pt.step=branch: self-check failed: results %#llx and %#llx (the CPU's %#llx), "
		       "%s, %llu and %llu stops, %u INT3s restored\n",
		       (unsigned long long)got, (unsigned long long)got_no_iret,
		       (unsigned long long)want, done ? "returned" : "lost the flow",
		       (unsigned long long)eng.check_stops, (unsigned long long)nested, restored);
		return -EIO;
	}
	pr_info("branch-step self-check: %llu stops at %u INT3s, result as the CPU's, code restored; "
		"%llu more returning as from an NMI\n", (unsigned long long)eng.check_stops,
		restored, (unsigned long long)nested);
	return 0;
}
#endif

static const struct trace_engine_ops engine_ops;

#ifndef TOPAZ_HOSTED
static void flush_tlb_here(void *unused)
{
	write_cr3(read_cr3());
}

static u64 code_nx;	/* the code part's NX before xlat_init() (the firmware's tables may have none) */

/*
 * Every CPU's region and sites freed, their pages' flags as they were
 * before, checked: a region whose flags did not go back is kept, not handed
 * to the allocator with its guard page missing. Returns the regions kept.
 */
static unsigned int xlat_free(void)
{
	unsigned int cpu, kept = 0, sorder = get_order(sizeof(struct xlat_site) * XLAT_MAX_SITES);

	for_each_possible_cpu(cpu) {
		struct engine *e = per_cpu_ptr(engines, cpu);
		struct xlat_cpu *x = e->xc;

		if (!x)
			continue;
		e->xc = NULL;
		if (code_nx)
			set_memory_flags((uintptr_t)x->code, (uintptr_t)x->code_end, PTE_NX, 0);
		set_memory_flags((uintptr_t)x->rec_guard, (uintptr_t)x->rec_guard + PAGE_SIZE, PTE_P, 0);
		if ((paging_lookup((uintptr_t)x->code, NULL) & PTE_NX) != code_nx ||
		    (paging_lookup((uintptr_t)x->code_end - 1, NULL) & PTE_NX) != code_nx ||
		    !paging_lookup((uintptr_t)x->rec_guard, NULL)) {
			pr_err("translate: CPU %u's code cache at %#lx: its pages' flags did not go back (executable, or the guard page missing): kept, not freed\n",
			       cpu, (unsigned long)(uintptr_t)x);
			kept++;
			continue;
		}
		free_pages((uintptr_t)x->sites, sorder);
		free_pages((uintptr_t)x, XLAT_REGION_ORDER);
	}
	return kept;
}

/*
 * pt.step=translate: a region (data, records, lookup table, code) and a site
 * table for every CPU, the code part made executable. Each CPU translates
 * into its own: nothing is shared or locked.
 */
static int xlat_init(void)
{
	unsigned int cpu, sorder = get_order(sizeof(struct xlat_site) * XLAT_MAX_SITES);
	int err = 0;

	xenv = (struct xlat_env){
		.read = branch_insn_read, .end_ip = (uintptr_t)pt_trace_end,
		.rt_link = (uintptr_t)xlat_rt_link, .rt_lookup = (uintptr_t)xlat_rt_lookup,
	};
	for_each_possible_cpu(cpu) {
		struct engine *e = per_cpu_ptr(engines, cpu);
		uintptr_t region = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, XLAT_REGION_ORDER);
		uintptr_t sites = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, sorder);
		struct xlat_cpu *x = (struct xlat_cpu *)region;

		if (!region || !sites) {
			if (region)
				free_pages(region, XLAT_REGION_ORDER);
			if (sites)
				free_pages(sites, sorder);
			err = -ENOMEM;
			break;
		}
		xlat_cpu_init(x, (u8 *)region, (struct xlat_site *)sites);
		e->xc = x;	/* xlat_free() puts its flags back, should this fail */
		code_nx = paging_lookup((uintptr_t)x->code, NULL) & PTE_NX;
		err = set_memory_flags((uintptr_t)x->code, (uintptr_t)x->code_end, 0, PTE_NX);
		if (!err)
			err = set_memory_flags((uintptr_t)x->rec_guard,
					       (uintptr_t)x->rec_guard + PAGE_SIZE, 0, PTE_P);
		if (err)
			break;
		/*
		 * A batch's packets go out with interrupts off (in the #PF of a
		 * full buffer): a vector PMI waits for its end. At most a 128th
		 * of the ring a batch (about a byte a branch, and far below a
		 * ring's worth even at 64 bytes a record), so the PMI comes
		 * before the ring fills: that is the skid. And at most 2048
		 * records: the last batch goes at the window's stop.
		 */
		xlat_set_batch(x, (unsigned int)min(pt_session_buffer_size() / 128, (u64)XLAT_BATCH_MAX));
	}
	if (err) {
		xlat_free();
		return err;
	}
	on_each_cpu(flush_tlb_here, NULL, true);	/* no CPU keeps the NX */
	return 0;
}
#else
static int xlat_init(void)
{
	return -EOPNOTSUPP;	/* the hosted tests script stops, not code */
}
#endif

void trace_engine_init(void)
{
	int err;

	if (!pt_model_active())
		return;	/* real PT traces by itself: no engine, no INT3s, no self-check */
	trap_set_handler(X86_TRAP_DB, on_debug);
	trap_set_handler(X86_TRAP_UD, on_invalid_opcode);
	pt_session_set_engine(&engine_ops);
	if (step_mode == TRACE_STEP_SINGLE)
		return;
	err = branch_sites_init(MAX_SITES);
	if (err) {
		pr_warn("pt.step=%s: no memory for the branch sites (error %d): single-step\n",
			step_names[step_mode], err);
		step_mode = TRACE_STEP_SINGLE;
		return;
	}
	trap_set_handler(X86_TRAP_BP, on_breakpoint);
#ifndef TOPAZ_HOSTED
	err = branch_step_self_check();
#else
	err = 0;	/* the probe's INT3s would be SIGTRAPs: the hosted tests script the stops */
#endif
	if (err) {
		pr_warn("pt.step=%s: cannot branch-step here (error %d): single-step\n",
			step_names[step_mode], err);
		trap_set_handler(X86_TRAP_BP, NULL);
		branch_sites_exit();
		step_mode = TRACE_STEP_SINGLE;
		return;
	}
	trap_set_bp_fast(bp_fast);
	if (step_mode == TRACE_STEP_TRANSLATE) {
		err = xlat_init();
		if (err == -ENODEV) {
			/* the firmware phase: expected, not a warning */
			pr_info("pt.step=translate: no code cache here (error %d: the firmware's page tables): branch-step\n",
				err);
			step_mode = TRACE_STEP_BRANCH;
		} else if (err) {
			pr_warn("pt.step=translate: no code cache here (error %d): branch-step\n", err);
			step_mode = TRACE_STEP_BRANCH;
		} else {
			trap_set_handler(X86_TRAP_PF, on_page_fault);
			pr_info("translate: a %u KiB code cache for each of %u CPUs\n",
				(unsigned int)((eng.xc->code_end - eng.xc->code) >> 10), nr_cpu_ids);
		}
	}
}

int trace_engine_exit(void)
{
#ifndef TOPAZ_HOSTED
	unsigned int kept;

	if (step_mode != TRACE_STEP_TRANSLATE)
		return 0;
	trap_set_handler(X86_TRAP_PF, NULL);
	kept = xlat_free();
	step_mode = TRACE_STEP_BRANCH;
	if (kept)
		return -EIO;
	pr_info("translate: the code caches given back, their pages' flags as before (%s, the guard pages present)\n",
		code_nx ? "not executable" : "executable: they had no NX");
#endif
	return 0;
}

void trace_engine_code_loaded(u64 start, u64 size)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct xlat_cpu *x = per_cpu_ptr(engines, cpu)->xc;

		if (x && xlat_invalidate(x, start, start + size))
			pr_info("translate: CPU %u had blocks from %#llx-%#llx, where new code was loaded: its code cache starts again\n",
				cpu, (unsigned long long)start, (unsigned long long)(start + size - 1));
	}
}

static void engine_stats(unsigned int cpu, struct trace_engine_stats *st)
{
	const struct xlat_cpu *x = per_cpu_ptr(engines, cpu)->xc;

	*st = per_cpu_ptr(engines, cpu)->st;
	st->mode = step_mode;
	if (x) {
		st->xlat_blocks = x->st.blocks;
		st->xlat_code = x->st.code_bytes;
		st->xlat_flushes = x->st.flushes;
		st->xlat_misses = x->st.misses;
		st->xlat_resets = x->st.resets;
	}
}

static void engine_arm(void)
{
	struct branch_sites_stats bst;

	eng.state = ENG_STARTING;
	eng.stepping = true;
	if (step_mode != TRACE_STEP_SINGLE && !eng.holds_sites) {
		branch_sites_get_stats(&bst);
		if (!eng.sites_base)
			eng.sites_base = bst.patched;
	}
	engine_join();
}

static void engine_disarm(void)
{
	eng.state = ENG_OFF;
	engine_leave();
}

/* TF on: the trap comes after the next instruction, still ours (in_function()). */
static __noinline void engine_follow(void)
{
#ifndef TOPAZ_HOSTED
	__asm__ volatile("pushfq; orq %0, (%%rsp); popfq" :: "i"(X86_EFLAGS_TF) : "memory", "cc");
#endif	/* the hosted tests script the #DB that follows */
}

/* The engine stopped at pt_trace_end's first instruction; TraceEn goes off next. */
static void engine_end(void)
{
	eng.state = ENG_OFF;
	engine_leave();	/* done at the stop that got here, if it was one */
}

/* The panic path: the other CPUs are stopped, so the code goes back now. */
static void engine_abort(void)
{
	eng.state = ENG_OFF;
	eng.in_cache = false;
	eng.holds_sites = eng.joined = false;
	__atomic_store_n(&engines_following, 0, __ATOMIC_RELEASE);
	branch_sites_restore();
	trap_set_trace_hooks(NULL);
}

/* Code pages outside the image that any CPU ran: each once, runs of pages as one image. */
/*
 * The map from cache code to original code, one line a block: its body
 * (entry..stub) is the original code from start, byte for byte; the stub's
 * first instruction (at stub) stands for the branch at ip (an exit's INT3
 * for nothing: the instruction at ip then ran on the CPU).
 */
static void xlat_print_map(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct xlat_cpu *x = per_cpu_ptr(engines, cpu)->xc;

		if (!x)
			continue;
		pr_info("xlat-map: cpu=%u code=%#lx-%#lx blocks=%u resets=%llu\n", cpu,
			(unsigned long)(uintptr_t)x->code, (unsigned long)(uintptr_t)x->code_end,
			x->nr_sites, (unsigned long long)x->st.resets);
		for (u32 i = 0; i < x->nr_sites; i++) {
			const struct xlat_site *s = &x->sites[i];
			u64 base = (uintptr_t)x->region;

			pr_info("xlat-map: cpu=%u entry=%#llx stub=%#llx end=%#llx start=%#llx ip=%#llx kind=%s\n",
				cpu, (unsigned long long)(base + s->entry),
				(unsigned long long)(base + s->stub), (unsigned long long)(base + s->end),
				(unsigned long long)s->start, (unsigned long long)s->ip,
				s->kind == XK_EXIT ? "exit" : "branch");
		}
	}
}

static void engine_write_sideband(trace_image_fn add)
{
	if (xlat_map && step_mode == TRACE_STEP_TRANSLATE)
		xlat_print_map();

	unsigned int order = get_order(sizeof(u64) * MAX_FOREIGN * nr_cpu_ids), n = 0, cpu;
	u64 *pages = (u64 *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);

	if (!pages) {
		pr_err("no memory to list the firmware pages: the sideband has none\n");
		return;
	}
	for_each_possible_cpu(cpu) {
		const struct engine *e = per_cpu_ptr(engines, cpu);

		for (unsigned int i = 0; i < e->st.foreign_pages; i++) {
			unsigned int j = 0;

			/* a module listed since (an image the traced code loaded) */
			if (trace_module_find(e->foreign[i]))
				continue;

			while (j < n && pages[j] != e->foreign[i])
				j++;
			if (j == n)
				pages[n++] = e->foreign[i];
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		u64 start = pages[i], end = start + PAGE_SIZE;
		bool more, covered = false;

		do {
			more = false;
			for (unsigned int j = 0; j < n; j++)
				if (pages[j] == end) {
					end += PAGE_SIZE;
					more = true;
				}
		} while (more);
		for (unsigned int j = 0; j < n; j++)
			if (pages[j] == start - PAGE_SIZE)
				covered = true;
		if (!covered)
			add("firmware", start, (const void *)start, end - start);
	}
	free_pages((uintptr_t)pages, order);
}

static const struct trace_engine_ops engine_ops = {
	.arm = engine_arm,
	.follow = engine_follow,
	.disarm = engine_disarm,
	.end = engine_end,
	.abort = engine_abort,
	.stats = engine_stats,
	.write_sideband = engine_write_sideband,
};
