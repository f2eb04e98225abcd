/* SPDX-License-Identifier: MIT */
/*
 * Capstone's answer in the x86 decoder's terms: the class of a capstone
 * instruction (detail on), shared by the decoder's host test and fuzzer.
 * X86_INSN_NR_CLASSES: capstone calls it a control transfer (by its groups)
 * that no class maps.
 */
#ifndef TOPAZ_TESTS_X86_CAPSTONE_H
#define TOPAZ_TESTS_X86_CAPSTONE_H

#include <capstone/capstone.h>
#include <topaz/x86_insn.h>

static inline bool cs_group(const cs_insn *c, uint8_t g)
{
	for (unsigned int i = 0; i < c->detail->groups_count; i++)
		if (c->detail->groups[i] == g)
			return true;
	return false;
}

static inline enum x86_insn_class cs_class(const cs_insn *c)
{
	const cs_x86 *x = &c->detail->x86;

	switch (c->id) {
	case X86_INS_JA: case X86_INS_JAE: case X86_INS_JB: case X86_INS_JBE:
	case X86_INS_JE: case X86_INS_JNE: case X86_INS_JG: case X86_INS_JGE:
	case X86_INS_JL: case X86_INS_JLE: case X86_INS_JO: case X86_INS_JNO:
	case X86_INS_JP: case X86_INS_JNP: case X86_INS_JS: case X86_INS_JNS:
		return X86_INSN_JCC;
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
		return X86_INSN_JCXZ;
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return X86_INSN_LOOP;
	case X86_INS_JMP:
		return cs_group(c, CS_GRP_BRANCH_RELATIVE) ? X86_INSN_JMP_DIRECT : X86_INSN_JMP_INDIRECT;
	case X86_INS_CALL:
		return cs_group(c, CS_GRP_BRANCH_RELATIVE) ? X86_INSN_CALL_DIRECT : X86_INSN_CALL_INDIRECT;
	case X86_INS_LJMP:
		return X86_INSN_JMP_FAR;
	case X86_INS_LCALL:
		return X86_INSN_CALL_FAR;
	case X86_INS_RET:
		return X86_INSN_RET_NEAR;
	case X86_INS_RETF: case X86_INS_RETFQ:
		return X86_INSN_RET_FAR;
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
		return X86_INSN_IRET;
	case X86_INS_SYSCALL:
		return X86_INSN_SYSCALL;
	case X86_INS_SYSRET:
		return X86_INSN_SYSRET;
	case X86_INS_SYSENTER:
		return X86_INSN_SYSENTER;
	case X86_INS_SYSEXIT:
		return X86_INSN_SYSEXIT;
	case X86_INS_INT:
		return X86_INSN_INT;
	case X86_INS_INT3:
		return X86_INSN_INT3;
	case X86_INS_INT1:
		return X86_INSN_INT1;
	case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
		return X86_INSN_UD;
	case X86_INS_HLT:
		return X86_INSN_HLT;
	case X86_INS_XBEGIN:
		return X86_INSN_XBEGIN;
	case X86_INS_XABORT:
		return X86_INSN_XABORT;
	case X86_INS_MOV:
		if (x->op_count && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_CR3)
			return X86_INSN_MOV_CR3;
		return X86_INSN_OTHER;
	}
	if (cs_group(c, CS_GRP_JUMP) || cs_group(c, CS_GRP_CALL) || cs_group(c, CS_GRP_RET) ||
	    cs_group(c, CS_GRP_IRET) || cs_group(c, CS_GRP_INT) ||
	    cs_group(c, CS_GRP_BRANCH_RELATIVE))
		return X86_INSN_NR_CLASSES;
	return X86_INSN_OTHER;
}

#endif
