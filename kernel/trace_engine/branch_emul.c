// SPDX-License-Identifier: MIT
/*
 * Branch emulation (see kernel/trace_engine/branch_emul.h). Only forms whose
 * effect is the same on every x86-64 CPU are taken: an operand-size prefix
 * (16-bit targets on Intel, other rules on AMD), FS/GS segment bases, 32-bit
 * address size on indirect operands and LOOP stay on the CPU.
 */
#include "branch_emul.h"
#include <topaz/x86_insn.h>
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

/* struct pt_regs slot of each general register, in encoding order. */
static const u8 reg_slot[16] = {
	offsetof(struct pt_regs, rax) / 8, offsetof(struct pt_regs, rcx) / 8,
	offsetof(struct pt_regs, rdx) / 8, offsetof(struct pt_regs, rbx) / 8,
	offsetof(struct pt_regs, rsp) / 8, offsetof(struct pt_regs, rbp) / 8,
	offsetof(struct pt_regs, rsi) / 8, offsetof(struct pt_regs, rdi) / 8,
	offsetof(struct pt_regs, r8) / 8, offsetof(struct pt_regs, r9) / 8,
	offsetof(struct pt_regs, r10) / 8, offsetof(struct pt_regs, r11) / 8,
	offsetof(struct pt_regs, r12) / 8, offsetof(struct pt_regs, r13) / 8,
	offsetof(struct pt_regs, r14) / 8, offsetof(struct pt_regs, r15) / 8,
};

u64 *branch_emul_reg(struct pt_regs *regs, unsigned int n)
{
	return (u64 *)regs + reg_slot[n & 15];
}

/* Prefixes a form may carry without changing what it does in 64-bit mode:
 * branch hints and CET NOTRACK (2E, 3E), BND (F2), REP on RET (AMD's
 * "rep ret"), ignored ES/SS overrides and REX. */
#define HARMLESS (X86_PFX_CS | X86_PFX_DS | X86_PFX_ES | X86_PFX_SS | X86_PFX_REPNE | \
		  X86_PFX_REX)

static int prepare_modrm(const struct x86_insn *in, u64 ip, struct branch_emul *e)
{
	unsigned int mod = in->modrm >> 6, rm = in->modrm & 7;
	unsigned int rex_b = (in->rex & 1) << 3, rex_x = (in->rex & 2) << 2;

	e->base = e->index = e->reg = BEMUL_NOREG;
	e->scale = 0;
	e->disp = in->disp;
	if (mod == 3) {
		e->reg = (u8)(rm | rex_b);
		return 0;
	}
	if (in->prefixes & (X86_PFX_ASIZE | X86_PFX_FS | X86_PFX_GS))
		return -EOPNOTSUPP;
	if (in->flags & X86_INSN_F_RIPREL) {
		e->disp = (s64)(ip + in->length) + in->disp;
		return 0;
	}
	if (in->flags & X86_INSN_F_SIB) {
		unsigned int base = in->sib & 7, index = ((in->sib >> 3) & 7) | rex_x;

		if (!(base == 5 && mod == 0))
			e->base = (u8)(base | rex_b);
		if (index != 4)
			e->index = (u8)index;
		e->scale = in->sib >> 6;
		return 0;
	}
	e->base = (u8)(rm | rex_b);
	return 0;
}

int branch_emul_prepare(const struct x86_insn *in, u64 ip, struct branch_emul *e)
{
	u16 extra = in->prefixes & ~HARMLESS;

	*e = (struct branch_emul){ .len = in->length, .reg = BEMUL_NOREG };
	switch (in->cls) {
	case X86_INSN_JCC:
		if (extra)
			return -EOPNOTSUPP;
		e->kind = BEMUL_JCC;
		e->cc = in->opcode & 15;
		e->target = x86_insn_branch_target(in, ip);
		return 0;
	case X86_INSN_JCXZ:
		if (extra & ~X86_PFX_ASIZE)
			return -EOPNOTSUPP;
		e->kind = BEMUL_JRCXZ;
		e->asize32 = !!(extra & X86_PFX_ASIZE);
		e->target = x86_insn_branch_target(in, ip);
		return 0;
	case X86_INSN_LOOP:
		if (extra)
			return -EOPNOTSUPP;
		e->kind = BEMUL_LOOP;
		e->cc = in->opcode & 3;
		e->target = x86_insn_branch_target(in, ip);
		return 0;
	case X86_INSN_JMP_DIRECT:
	case X86_INSN_CALL_DIRECT:
		if (extra)
			return -EOPNOTSUPP;
		e->kind = in->cls == X86_INSN_JMP_DIRECT ? BEMUL_JMP : BEMUL_CALL;
		e->target = x86_insn_branch_target(in, ip);
		return 0;
	case X86_INSN_JMP_INDIRECT:
	case X86_INSN_CALL_INDIRECT:
		if (extra & ~(X86_PFX_ASIZE | X86_PFX_FS | X86_PFX_GS))
			return -EOPNOTSUPP;
		if (prepare_modrm(in, ip, e))
			return -EOPNOTSUPP;
		e->kind = in->cls == X86_INSN_JMP_INDIRECT ? BEMUL_JMP_IND : BEMUL_CALL_IND;
		return 0;
	case X86_INSN_RET_NEAR:
		if (extra & ~X86_PFX_REP)
			return -EOPNOTSUPP;
		e->kind = BEMUL_RET;
		e->imm = in->opcode == 0xc2 ? (u16)in->imm : 0;
		return 0;
	case X86_INSN_PTWRITE: {
		unsigned int reg, size;

		if (!branch_ptwrite_operand(in, &reg, &size))
			return -EOPNOTSUPP;	/* the memory form reads its payload itself */
		e->kind = BEMUL_PTWRITE;
		e->reg = (u8)reg;
		e->size = (u8)size;
		return 0;
	}
	default:
		return -EOPNOTSUPP;
	}
}

static u64 effective_address(const struct branch_emul *e, struct pt_regs *r)
{
	u64 a = (u64)e->disp;

	if (e->base != BEMUL_NOREG)
		a += *branch_emul_reg(r, e->base);
	if (e->index != BEMUL_NOREG)
		a += *branch_emul_reg(r, e->index) << e->scale;
	return a;
}

int branch_emul_run(const struct branch_emul *e, u64 ip, struct pt_regs *r,
		    struct branch_result *res)
{
	u64 next = ip + e->len, to = next, rcx, v;
	u64 rsp0 = r->rsp, rcx0 = r->rcx;

	if (e->kind == BEMUL_JCC) {
		/* the common case, without the switch's indirect jump */
		res->taken = branch_emul_cond(e->cc, r->rflags);
		res->next = next;
		res->target = r->rip = res->taken ? e->target : next;
		return 0;
	}
	res->taken = false;
	switch (e->kind) {
	case BEMUL_JRCXZ:
		res->taken = (e->asize32 ? (u32)r->rcx : r->rcx) == 0;
		break;
	case BEMUL_LOOP:
		rcx = r->rcx - 1;
		res->taken = rcx != 0 && (e->cc == 2 || (e->cc == 1) == !!(r->rflags & X86_EFLAGS_ZF));
		r->rcx = rcx;
		break;
	case BEMUL_JMP:
		to = e->target;
		break;
	case BEMUL_CALL:
		if (arch_write_u64_nofault(r->rsp - 8, next))
			return -EFAULT;
		r->rsp -= 8;
		to = e->target;
		break;
	case BEMUL_JMP_IND:
	case BEMUL_CALL_IND:
		if (e->reg != BEMUL_NOREG)
			v = *branch_emul_reg(r, e->reg);
		else if (arch_read_u64_nofault(effective_address(e, r), &v))
			return -EFAULT;
		if (e->kind == BEMUL_CALL_IND) {
			if (arch_write_u64_nofault(r->rsp - 8, next))
				return -EFAULT;
			r->rsp -= 8;
		}
		to = v;
		break;
	case BEMUL_RET:
		if (arch_read_u64_nofault(r->rsp, &to))
			return -EFAULT;
		r->rsp += 8 + e->imm;
		break;
	case BEMUL_PTWRITE:
		v = *branch_emul_reg(r, e->reg);
		res->payload = e->size == 8 ? v : (u32)v;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (res->taken)
		to = e->target;
	if ((u64)((s64)(to << 16) >> 16) != to) {
		/* non-canonical: the CPU raises #GP at the branch itself */
		r->rsp = rsp0;
		r->rcx = rcx0;
		return -EFAULT;
	}
	res->next = next;
	res->target = to;
	r->rip = to;
	return 0;
}
