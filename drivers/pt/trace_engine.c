// SPDX-License-Identifier: MIT
/*
 * The trace engine (see include/topaz/trace_engine.h). It runs in the #DB
 * handler on its IST stack; interrupt and exception handlers run with TF
 * clear (the CPU clears it on delivery), so they are never traced: when one
 * interrupts traced code the engine pauses the trace (FUP, TIP.PGD) and
 * resumes it where the handler returns (TIP.PGE), as PT shows a handler
 * outside the traced range.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/trace_engine.h>
#include <topaz/pt_session.h>
#include <topaz/pt_model.h>
#include <topaz/x86_insn.h>
#include <topaz/traps.h>
#include <topaz/cpu.h>
#include <topaz/cmdline.h>
#include <topaz/symbols.h>
#include <topaz/paging.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define DR6_B0		BIT(0)
#define DR6_BS		BIT(14)
#define DR7_L0		BIT(0)
#define MAX_BLOCK	64	/* instructions decoded ahead for the next branch */
#define MAX_FOREIGN	64	/* code pages outside the image kept for the sideband */

extern const char ImageBase[] __hidden, __image_end[] __hidden;

static struct {
	bool active, starting, resume_pending, emulating;
	enum trace_step_mode mode;
	u64 prev;		/* the instruction the next stop reports on */
	u64 resume_ip;
	u64 bp;			/* DR0 while branch-stepping, 0 when single-stepping */
	struct trace_engine_stats st;
	u64 foreign[MAX_FOREIGN];
} eng;

static int set_step(const char *v, char *why, size_t n)
{
	if (v && !strcmp(v, "single"))
		eng.mode = TRACE_STEP_SINGLE;
	else if (v && !strcmp(v, "branch"))
		eng.mode = TRACE_STEP_BRANCH;
	else {
		ksnprintf(why, n, "expected single or branch");
		return -EINVAL;
	}
	return 0;
}
KPARAM_CUSTOM("pt.step", pt_step, set_step,
	      "trace engine: single (a #DB per instruction) or branch (stop at branches only)");

static inline void write_dr0(u64 v) { __asm__ volatile("mov %0, %%db0" :: "r"(v)); }
static inline void write_dr7(u64 v) { __asm__ volatile("mov %0, %%db7" :: "r"(v)); }
static inline u64 read_dr6(void) { u64 v; __asm__ volatile("mov %%db6, %0" : "=r"(v)); return v; }
static inline void write_dr6(u64 v) { __asm__ volatile("mov %0, %%db6" :: "r"(v)); }

static bool in_image(u64 ip)
{
	return ip >= (uintptr_t)ImageBase && ip < (uintptr_t)__image_end;
}

/* Code outside the kernel (firmware) goes to the sideband, page by page. */
static void note_foreign(u64 ip)
{
	u64 page = ip & ~0xfffull;

	if (in_image(ip))
		return;
	for (unsigned int i = 0; i < eng.st.foreign_pages; i++)
		if (eng.foreign[i] == page)
			return;
	if (eng.st.foreign_pages < MAX_FOREIGN)
		eng.foreign[eng.st.foreign_pages++] = page;
}

static int decode_at(u64 ip, struct x86_insn *in)
{
	/* Read no further than the mapped bytes: the page may end the code. */
	size_t avail = X86_INSN_MAX_LEN;
	u64 room = 0x1000 - (ip & 0xfff);

	if (room < avail && !addr_is_mapped(ip + room))
		avail = room;
	return x86_insn_decode((const u8 *)ip, avail, in);
}

/* The instruction at @ip retired and execution went to @to: tell the model. */
static u64 reg_value(const struct pt_regs *r, unsigned int n)
{
	const u64 v[16] = { r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
			    r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15 };

	return v[n & 15];
}

static void retire(u64 ip, u64 to, const struct pt_regs *regs)
{
	struct x86_insn in;
	struct ptm_insn m = { .ip = ip, .target = to, .cpl = 0, .mode = PTM_MODE_64 };

	eng.st.insns++;
	note_foreign(ip);
	if (decode_at(ip, &in)) {
		/* Unknown bytes: report a jump so the flow stays right. */
		m.cls = PTM_JUMP_IND;
		m.next = ip + 1;
		pt_model_ev_insn(&m);
		return;
	}
	m.next = ip + in.length;
	if (in.cls == X86_INSN_PTWRITE) {
		/* the payload is still in the register operand (register form) */
		if ((in.modrm >> 6) == 3) {
			m.cls = PTM_PTWRITE;
			m.payload = reg_value(regs, (in.modrm & 7) | ((in.rex & 1) << 3));
			m.size = (in.rex & 8) ? 8 : 4;
			pt_model_ev_insn(&m);
		}
		return;
	}
	switch (in.cofi) {
	case X86_COFI_NONE:
		if (to == m.next)
			return;	/* straight-line: nothing for PT */
		/* an instruction that jumped without being a branch (an exception
		 * path that came back elsewhere): report it as a far transfer */
		m.cls = PTM_FAR;
		break;
	case X86_COFI_COND:
		m.cls = PTM_COND;
		m.taken = to != m.next;
		break;
	case X86_COFI_DIRECT:
		m.cls = in.cls == X86_INSN_CALL_DIRECT ? PTM_CALL : PTM_JUMP;
		break;
	case X86_COFI_INDIRECT:
		m.cls = in.cls == X86_INSN_CALL_INDIRECT ? PTM_CALL_IND : PTM_JUMP_IND;
		break;
	case X86_COFI_RET:
		m.cls = PTM_RET;
		break;
	default:
		m.cls = PTM_FAR;
		break;
	}
	eng.st.branches++;
	pt_model_ev_insn(&m);
}

/* Branch-step: the next change of flow at or after @ip, or 0 (single-step). */
static u64 next_branch(u64 ip)
{
	struct x86_insn in;

	for (int i = 0; i < MAX_BLOCK; i++) {
		if (decode_at(ip, &in))
			return 0;
		if (in.cofi != X86_COFI_NONE || in.cls == X86_INSN_PTWRITE)
			return ip;	/* PTWRITE: its operand is read as it retires */
		/* REP string instructions repeat in place; let single-step count them */
		if ((in.prefixes & (X86_PFX_REP | X86_PFX_REPNE)) && in.map == X86_MAP_LEGACY &&
		    ((in.opcode >= 0xa4 && in.opcode <= 0xa7) || (in.opcode >= 0xaa && in.opcode <= 0xaf) ||
		     (in.opcode >= 0x6c && in.opcode <= 0x6f)))
			return 0;
		ip += in.length;
	}
	return 0;
}

/* Arm the next stop: DR0 on the next branch, or TF for one instruction. */
static void arm(struct pt_regs *regs)
{
	u64 bp = eng.mode == TRACE_STEP_BRANCH ? next_branch(regs->rip) : 0;

	if (bp && bp != regs->rip) {
		/* straight-line instructions up to the branch retire without a stop */
		struct x86_insn in;
		for (u64 ip = regs->rip; ip < bp && !decode_at(ip, &in); ip += in.length) {
			eng.st.insns++;
			note_foreign(ip);
		}
		eng.bp = bp;
		eng.prev = bp;
		write_dr0(bp);
		write_dr7(DR7_L0);
		regs->rflags &= ~X86_EFLAGS_TF;
	} else {
		if (eng.mode == TRACE_STEP_BRANCH && !bp)
			eng.st.fallbacks++;
		eng.bp = 0;
		eng.prev = regs->rip;
		write_dr7(0);
		regs->rflags |= X86_EFLAGS_TF;
	}
}

static void stop_tracing(struct pt_regs *regs)
{
	eng.active = false;
	eng.bp = 0;
	write_dr7(0);
	regs->rflags &= ~X86_EFLAGS_TF;
}

static bool on_debug(struct pt_regs *regs)
{
	u64 dr6 = read_dr6();
	u64 rip = regs->rip;

	write_dr6(0);
	eng.st.db_traps++;
	if (!eng.active) {
		/* a stop armed before tracing ended: nothing more to follow */
		regs->rflags &= ~X86_EFLAGS_TF;
		write_dr7(0);
		return (dr6 & (DR6_BS | DR6_B0)) != 0;
	}
	if ((dr6 & DR6_B0) && trap_depth() > 1) {
		/* a handler ran over the breakpointed address: not traced code */
		regs->rflags |= X86_EFLAGS_RF;
		return true;
	}
	if (eng.starting) {
		/* pt_trace_begin's own epilogue: start at the first caller instruction */
		const char *n;
		uintptr_t off, size;

		if (rip >= (uintptr_t)pt_trace_begin && !ksym_lookup(rip, &n, &off, &size) &&
		    rip - off == (uintptr_t)pt_trace_begin) {
			regs->rflags |= X86_EFLAGS_TF;
			return true;
		}
		eng.starting = false;
		pt_model_ev_at(rip);
		if (rip == (uintptr_t)pt_trace_end) {
			stop_tracing(regs);
			return true;
		}
		arm(regs);
		return true;
	}
	if (eng.resume_pending) {
		/* back from a handler: tracing goes on where it returned */
		eng.resume_pending = false;
		pt_event_resume(&pt_session.event);
		pt_model_ev_at(eng.resume_ip);
		if (eng.bp == 0)
			eng.prev = eng.resume_ip;
	}
	if (dr6 & DR6_B0) {
		/* at the branch, not yet executed: single-step it */
		write_dr7(0);
		eng.bp = 0;
		eng.prev = rip;
		regs->rflags |= X86_EFLAGS_TF | X86_EFLAGS_RF;
		return true;
	}
	if (!(dr6 & DR6_BS))
		return false;
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
	/*
	 * A PMI delivered as an NMI runs inside this handler and turns tracing
	 * off and on (FUP, TIP.PGD); the TIP.PGE belongs where execution goes
	 * on, so say where that is before returning.
	 */
	pt_model_ev_at(regs->rip);
	return true;
}

/* A register-form PTWRITE at @regs->rip (a CPU without PTWRITE raises #UD). */
static bool ptwrite_at(const struct pt_regs *regs, struct x86_insn *in)
{
	return !decode_at(regs->rip, in) && in->cls == X86_INSN_PTWRITE && (in->modrm >> 6) == 3;
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

	if (!eng.active || eng.starting || !ptwrite_at(regs, &in))
		return false;
	m.ip = regs->rip;
	m.next = m.target = regs->rip + in.length;
	m.payload = reg_value(regs, (in.modrm & 7) | ((in.rex & 1) << 3));
	m.size = (in.rex & 8) ? 8 : 4;
	pt_model_ev_insn(&m);
	eng.st.insns++;
	regs->rip = m.next;
	if (!eng.bp)
		eng.prev = m.next;	/* single-stepping: the next stop reports on it */
	return true;
}

/* An interrupt or exception in traced code: the handler is not traced. */
static void async_enter(struct pt_regs *regs)
{
	struct x86_insn in;

	if (!eng.active || eng.starting)
		return;
	if (regs->vector == X86_TRAP_UD && ptwrite_at(regs, &in)) {
		eng.emulating = true;
		return;
	}
	eng.st.async++;
	if (eng.resume_pending) {
		/* a second event before the traced code ran again */
		return;
	}
	pt_model_ev_at(regs->rip);
	pt_event_pause(&pt_session.event);
}

static void async_exit(struct pt_regs *regs)
{
	if (eng.emulating) {
		eng.emulating = false;
		return;
	}
	if (!eng.active || eng.starting)
		return;
	eng.resume_pending = true;
	eng.resume_ip = regs->rip;	/* where the handler returns: maybe a fixup */
}

static const struct trap_trace_hooks hooks = { async_enter, async_exit };

void trace_engine_init(void)
{
	trap_set_handler(X86_TRAP_DB, on_debug);
	trap_set_handler(X86_TRAP_UD, on_invalid_opcode);
}

enum trace_step_mode trace_engine_mode(void)
{
	return eng.mode;
}

void trace_engine_get_stats(struct trace_engine_stats *st)
{
	*st = eng.st;
}

__noinline void pt_trace_begin(void)
{
	eng.resume_pending = false;
	eng.starting = true;
	eng.active = true;
	trap_set_trace_hooks(&hooks);
	if (pt_session_start()) {
		eng.active = false;
		return;
	}
	if (!pt_model_active()) {
		/* real PT traces by itself from here on */
		eng.active = false;
		return;
	}
	/* TF on: the trap comes after the next instruction, still ours. */
	__asm__ volatile("pushfq; orq %0, (%%rsp); popfq" :: "i"(X86_EFLAGS_TF) : "memory", "cc");
}

__noinline void pt_trace_end(void)
{
	/* The engine stopped at our first instruction; now TraceEn=0. */
	eng.active = false;
	write_dr7(0);
	pt_session_stop();
	trap_set_trace_hooks(NULL);
}

void trace_engine_abort(void)
{
	eng.active = false;
	eng.resume_pending = false;
	write_dr7(0);
	trap_set_trace_hooks(NULL);
}

void trace_engine_write_sideband(void)
{
	/* consecutive pages become one image */
	for (unsigned int i = 0; i < eng.st.foreign_pages; i++) {
		u64 start = eng.foreign[i], end = start + 0x1000;
		bool more;

		do {
			more = false;
			for (unsigned int j = 0; j < eng.st.foreign_pages; j++)
				if (eng.foreign[j] == end) {
					end += 0x1000;
					more = true;
				}
		} while (more);
		bool covered = false;
		for (unsigned int j = 0; j < eng.st.foreign_pages; j++)
			if (eng.foreign[j] == start - 0x1000)
				covered = true;
		if (!covered)
			pt_session_add_image("firmware", start, (const void *)start, end - start);
	}
}
