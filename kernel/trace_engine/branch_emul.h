/* SPDX-License-Identifier: MIT */
/*
 * Branch emulation: what a near branch does to the registers, computed from
 * its decoded form and the register file at the moment it would execute. The
 * branch-step trace engine puts INT3 on the branches of traced code and runs
 * them here instead (one stop per branch, no single step), the way kprobes
 * and uprobes emulate the instruction under a breakpoint.
 */
#ifndef TOPAZ_BRANCH_EMUL_H
#define TOPAZ_BRANCH_EMUL_H

#include <topaz/types.h>
#include <topaz/traps.h>
#include <topaz/cpu.h>
#include <topaz/x86_insn.h>

struct x86_insn;

enum branch_emul_kind {
	BEMUL_NONE,		/* not emulated: execute the instruction itself */
	BEMUL_JCC,		/* Jcc: condition @cc on RFLAGS */
	BEMUL_JRCXZ,		/* JRCXZ, JECXZ (@asize32) */
	BEMUL_LOOP,		/* LOOP, LOOPE, LOOPNE (@cc: 2, 1, 0 as E2, E1, E0) */
	BEMUL_JMP,		/* JMP rel */
	BEMUL_CALL,		/* CALL rel32 */
	BEMUL_JMP_IND,		/* JMP r/m64 */
	BEMUL_CALL_IND,		/* CALL r/m64 */
	BEMUL_RET,		/* RET, RET imm16 (@imm) */
	BEMUL_PTWRITE,		/* PTWRITE r32/r64: a CPU without it raises #UD */
	BEMUL_NR_KINDS
};

#define BEMUL_NOREG	0xff

/* How to run one instruction; made once per patched site. */
struct branch_emul {
	u8 kind, len, cc;
	u8 asize32;		/* JECXZ: ECX, not RCX */
	u8 reg;			/* register operand, or BEMUL_NOREG for memory */
	u8 base, index, scale;	/* memory operand; BEMUL_NOREG when absent */
	u8 size;		/* PTWRITE: 4 or 8 bytes */
	u16 imm;		/* RET imm16: bytes released after the pop */
	s64 disp;		/* displacement (RIP-relative: the absolute address) */
	u64 target;		/* direct branches */
};

/* What it did. */
struct branch_result {
	u64 next;		/* the instruction after it */
	u64 target;		/* where execution goes */
	bool taken;		/* conditional: taken (else target == next) */
	u64 payload;		/* PTWRITE */
};

/**
 * branch_emul_prepare() - describe how to emulate the instruction at @ip
 * Return: 0, or -EOPNOTSUPP when it must run on the CPU instead: not a near
 * branch, or a form whose meaning differs between vendors or needs state the
 * emulator does not model (operand-size prefix, segment bases, 32-bit LOOP).
 */
int branch_emul_prepare(const struct x86_insn *in, u64 ip, struct branch_emul *e);

/**
 * branch_emul_run() - execute @e at @ip on @regs: RIP, RSP, RCX and the stack
 * as the CPU would leave them
 * Return: 0, or -EFAULT when a memory operand or the stack cannot be accessed;
 * then @regs is unchanged and the instruction should run on the CPU, which
 * raises the real fault.
 */
int branch_emul_run(const struct branch_emul *e, u64 ip, struct pt_regs *regs,
		    struct branch_result *res);

/** branch_emul_cond() - does Jcc condition @cc (0-15) hold for @rflags? */
static inline bool branch_emul_cond(unsigned int cc, u64 f)
{
	/* the even conditions O B E BE S P L LE; odd ones negate. The first six
	 * test flag bits (OF, CF, ZF, CF|ZF, SF, PF); L is SF != OF, LE adds ZF */
	static const u16 mask[6] = {
		X86_EFLAGS_OF, X86_EFLAGS_CF, X86_EFLAGS_ZF, X86_EFLAGS_CF | X86_EFLAGS_ZF,
		X86_EFLAGS_SF, X86_EFLAGS_PF,
	};
	unsigned int c = cc >> 1;
	bool t;

	if (c < 6) {
		t = f & mask[c];
	} else {
		t = !!(f & X86_EFLAGS_SF) != !!(f & X86_EFLAGS_OF);
		if (c == 7)
			t |= !!(f & X86_EFLAGS_ZF);
	}
	return t ^ (cc & 1);
}

/**
 * branch_emul_run_fast() - branch_emul_run() with the Jcc inline (the trace
 * engine's hot path: most branches are conditional)
 */
static inline int branch_emul_run_fast(const struct branch_emul *e, u64 ip, struct pt_regs *regs,
				       struct branch_result *res)
{
	if (likely(e->kind == BEMUL_JCC)) {
		res->taken = branch_emul_cond(e->cc, regs->rflags);
		res->next = ip + e->len;
		res->target = regs->rip = res->taken ? e->target : res->next;
		return 0;
	}
	return branch_emul_run(e, ip, regs, res);
}

/** branch_emul_reg() - general register @n (0 RAX ... 15 R15) in @regs */
u64 *branch_emul_reg(struct pt_regs *regs, unsigned int n);

/**
 * branch_ptwrite_operand() - the register operand of a register-form PTWRITE
 * @in: a decoded X86_INSN_PTWRITE
 * @reg: its register (0 RAX ... 15 R15)
 * @size: its size in bytes (8 with REX.W, else 4)
 * Return: false for the memory form (the emulator leaves it to the CPU)
 */
static inline bool branch_ptwrite_operand(const struct x86_insn *in, unsigned int *reg,
					  unsigned int *size)
{
	if ((in->modrm >> 6) != 3)
		return false;
	*reg = (in->modrm & 7) | ((in->rex & 1) << 3);
	*size = (in->rex & 8) ? 8 : 4;
	return true;
}

#endif
