/* SPDX-License-Identifier: MIT */
/*
 * x86-64 instruction length decoder and control-flow classifier for the
 * single-step trace engine: given the bytes at an IP it says how long the
 * instruction is and what an Intel PT trace unit would make of it. 64-bit
 * mode only. See docs/x86-insn.md for what is classified how and why.
 */
#ifndef TOPAZ_X86_INSN_H
#define TOPAZ_X86_INSN_H

#include <topaz/types.h>

#define X86_INSN_MAX_LEN	15	/* longer instructions #GP */

/* What kind of instruction, as far as control flow is concerned. */
enum x86_insn_class {
	X86_INSN_OTHER,		/* no change of control flow */
	X86_INSN_JCC,		/* Jcc rel8/rel32 (70-7F, 0F 80-8F) */
	X86_INSN_JCXZ,		/* JRCXZ/JECXZ rel8 (E3) */
	X86_INSN_LOOP,		/* LOOP/LOOPE/LOOPNE rel8 (E0-E2) */
	X86_INSN_JMP_DIRECT,	/* JMP rel8/rel32 (EB, E9) */
	X86_INSN_CALL_DIRECT,	/* CALL rel32 (E8) */
	X86_INSN_JMP_INDIRECT,	/* JMP r/m64 (FF /4) */
	X86_INSN_CALL_INDIRECT,	/* CALL r/m64 (FF /2) */
	X86_INSN_RET_NEAR,	/* RET, RET imm16 (C3, C2) */
	X86_INSN_RET_FAR,	/* RETF, RETF imm16 (CB, CA) */
	X86_INSN_JMP_FAR,	/* JMP m16:16/32/64 (FF /5) */
	X86_INSN_CALL_FAR,	/* CALL m16:16/32/64 (FF /3) */
	X86_INSN_IRET,		/* IRET/IRETD/IRETQ (CF) */
	X86_INSN_SYSCALL,	/* 0F 05 */
	X86_INSN_SYSRET,	/* 0F 07 (REX.W: to 64-bit mode) */
	X86_INSN_SYSENTER,	/* 0F 34 */
	X86_INSN_SYSEXIT,	/* 0F 35 (REX.W: to 64-bit mode) */
	X86_INSN_INT,		/* INT imm8 (CD) */
	X86_INSN_INT3,		/* CC */
	X86_INSN_INT1,		/* INT1/ICEBP (F1) */
	X86_INSN_UD,		/* UD0, UD1, UD2 (0F FF, 0F B9, 0F 0B): always #UD */
	X86_INSN_HLT,		/* F4 */
	X86_INSN_XBEGIN,	/* C7 F8 rel16/32: the target is the abort fallback */
	X86_INSN_XABORT,	/* C6 F8 ib */
	X86_INSN_UIRET,		/* F3 0F 01 EC: return from a user interrupt */
	X86_INSN_PTWRITE,	/* F3 0F AE /4: PTW packet */
	X86_INSN_MOV_CR3,	/* MOV CR3, r64 (0F 22 /3): PIP packet */
	X86_INSN_NR_CLASSES
};

/*
 * The change-of-flow-instruction (COFI) type of the Intel SDM's PT chapter,
 * and so the packets a trace unit emits when the instruction retires.
 */
enum x86_insn_cofi {
	X86_COFI_NONE,		/* not a COFI: no packet */
	X86_COFI_COND,		/* conditional direct branch: one TNT bit */
	X86_COFI_DIRECT,	/* unconditional direct JMP/CALL: no packet */
	X86_COFI_INDIRECT,	/* indirect JMP/CALL: TIP */
	X86_COFI_RET,		/* near RET: TIP, or a TNT bit under RET compression */
	X86_COFI_FAR,		/* far transfer (far JMP/CALL/RET, IRET, SYSCALL,
				 * SYSRET, SYSENTER, SYSEXIT, UIRET): TIP, with PIP and
				 * MODE.Exec when CR3 or the mode change */
	X86_COFI_SWINT,		/* INT n, INT3, INT1: delivered like an exception,
				 * FUP (this IP) then TIP (the handler) */
	X86_COFI_FAULT,		/* UD0/UD1/UD2: always #UD, FUP (this IP) + TIP */
};

/* Maps the opcode byte lives in. */
enum x86_insn_map {
	X86_MAP_LEGACY,		/* one-byte opcodes */
	X86_MAP_0F,
	X86_MAP_0F38,
	X86_MAP_0F3A,
	X86_MAP_3DNOW,		/* 0F 0F: the opcode is the byte after ModRM/disp */
	X86_MAP_VEX1,		/* VEX/EVEX map 1 (0F) */
	X86_MAP_VEX2,		/* map 2 (0F 38) */
	X86_MAP_VEX3,		/* map 3 (0F 3A) */
	X86_MAP_EVEX5,		/* EVEX map 5 (AVX512-FP16) */
	X86_MAP_EVEX6,		/* EVEX map 6 (AVX512-FP16) */
};

/* Prefixes seen (x86_insn.prefixes). */
#define X86_PFX_LOCK	BIT(0)	/* F0 */
#define X86_PFX_REPNE	BIT(1)	/* F2 */
#define X86_PFX_REP	BIT(2)	/* F3 */
#define X86_PFX_OSIZE	BIT(3)	/* 66 */
#define X86_PFX_ASIZE	BIT(4)	/* 67 */
#define X86_PFX_CS	BIT(5)	/* 2E (also the "not taken" hint) */
#define X86_PFX_SS	BIT(6)	/* 36 */
#define X86_PFX_DS	BIT(7)	/* 3E ("taken" hint; CET NOTRACK on FF /2, /4) */
#define X86_PFX_ES	BIT(8)	/* 26 */
#define X86_PFX_FS	BIT(9)	/* 64 */
#define X86_PFX_GS	BIT(10)	/* 65 */
#define X86_PFX_REX	BIT(11)	/* a REX prefix that is in effect (x86_insn.rex) */
#define X86_PFX_VEX2	BIT(12)	/* C5 */
#define X86_PFX_VEX3	BIT(13)	/* C4 */
#define X86_PFX_EVEX	BIT(14)	/* 62 */

/* Properties (x86_insn.flags). */
#define X86_INSN_F_MODRM	BIT(0)	/* has a ModRM byte */
#define X86_INSN_F_SIB		BIT(1)	/* has a SIB byte */
#define X86_INSN_F_MEM		BIT(2)	/* ModRM addresses memory (mod != 3) */
#define X86_INSN_F_RIPREL	BIT(3)	/* RIP-relative (EIP-relative with 67) */
#define X86_INSN_F_REL		BIT(4)	/* direct relative branch: rel, rel_size */
#define X86_INSN_F_REX_IGNORED	BIT(5)	/* a REX byte not next to the opcode (ignored) */

/*
 * Decode flags. The default follows Intel processors, the ones with PT: in
 * 64-bit mode 66 does not shrink a near branch (E8, E9, 0F 8x keep rel32,
 * the target is not truncated).
 */
#define X86_DECODE_AMD_BRANCH	BIT(0)	/* AMD: 66 + no REX.W on E8/E9/0F 8x means
					 * rel16 and a target truncated to 16 bits */

/**
 * struct x86_insn - one decoded instruction
 * @length: bytes, 1..15
 * @cls: what it does to control flow
 * @cofi: its PT COFI type (X86_COFI_NONE for anything PT does not trace)
 * @map: where @opcode lives; @opcode: the opcode byte (3DNow!: the suffix)
 * @prefixes: X86_PFX_* seen; @rex: the REX byte in effect, 0 if none
 * @mandatory: the 66/F2/F3 that selected an SSE-style form, 0 if none
 * @seg: the last segment-override byte, 0 if none
 * @nprefix: bytes of legacy prefixes and REX before the opcode (or VEX/EVEX)
 * @opsize: effective operand size in bytes (2, 4, 8): near branches are 8
 * @addrsize: effective address size in bytes (4 with 67, else 8)
 * @flags: X86_INSN_F_*
 * @modrm: @sib: the ModRM and SIB bytes (valid per @flags)
 * @modrm_off: offset of the ModRM byte
 * @disp_size: @disp: ModRM displacement (0, 1, 4 bytes), sign-extended
 * @imm_size: @imm: bytes of immediate data (ENTER, EXTRQ: both, little
 *	endian in @imm) and their value; the moffs of A0-A3 counts as immediate
 * @rel_size: @rel: the displacement of a direct branch (1, 2, 4 bytes)
 * @vex_l: VEX.L / EVEX.L'L; @vex_w: VEX/EVEX.W
 */
struct x86_insn {
	u8 length;
	u8 map;
	u8 opcode;
	u8 rex;
	u8 mandatory;
	u8 seg;
	u8 nprefix;
	u8 opsize;
	u8 addrsize;
	u8 modrm, sib, modrm_off;
	u8 disp_size, imm_size, rel_size;
	u8 vex_l, vex_w;
	u16 prefixes;
	u16 flags;
	enum x86_insn_class cls;
	enum x86_insn_cofi cofi;
	s32 disp;
	s32 rel;
	u64 imm;
};

/**
 * x86_insn_decode() - decode the instruction at @bytes (64-bit mode)
 * @bytes: the instruction's bytes
 * @avail: how many bytes may be read (reads stop at the instruction's end)
 * @out: the decoded instruction (zeroed on error)
 *
 * Return: 0; -EINVAL for an encoding that is undefined or invalid in 64-bit
 * mode; -E2BIG when the instruction would be longer than 15 bytes; -ENODATA
 * when @avail ends inside an instruction that could still be valid.
 */
int x86_insn_decode(const u8 *bytes, size_t avail, struct x86_insn *out);

/** x86_insn_decode_flags() - x86_insn_decode() with X86_DECODE_* @flags */
int x86_insn_decode_flags(const u8 *bytes, size_t avail, unsigned int flags,
			  struct x86_insn *out);

/** x86_insn_next_ip() - the fall-through IP (and a CALL's return address) */
static inline u64 x86_insn_next_ip(const struct x86_insn *insn, u64 ip)
{
	return ip + insn->length;
}

/** x86_insn_is_branch() - whether PT counts it as a change of flow */
static inline bool x86_insn_is_branch(const struct x86_insn *insn)
{
	return insn->cofi != X86_COFI_NONE;
}

/** x86_insn_has_target() - whether the target is in the instruction bytes */
static inline bool x86_insn_has_target(const struct x86_insn *insn)
{
	return insn->flags & X86_INSN_F_REL;
}

/**
 * x86_insn_branch_target() - the target of a direct branch at @ip: the next
 * IP plus the sign-extended displacement (truncated to 16 bits for a 16-bit
 * operand size: XBEGIN with 66, or X86_DECODE_AMD_BRANCH)
 *
 * Only for an instruction with x86_insn_has_target(); for any other one it
 * warns and returns the next IP.
 */
u64 x86_insn_branch_target(const struct x86_insn *insn, u64 ip);

/* The six arithmetic flags, as their EFLAGS bits (x86_insn_arith_flags()). */
#define X86_ARITH_CF	0x001u
#define X86_ARITH_PF	0x004u
#define X86_ARITH_AF	0x010u
#define X86_ARITH_ZF	0x040u
#define X86_ARITH_SF	0x080u
#define X86_ARITH_OF	0x800u
#define X86_ARITH_ALL	0x8d5u

/**
 * x86_insn_arith_flags() - what @insn does with OF, SF, ZF, AF, PF and CF
 * @reads: the flags it may read
 * @writes: the flags it always leaves written or undefined (a shift by CL,
 *	which may be by 0, writes none)
 *
 * Return: false for an instruction its table does not know (the caller
 * must then assume it reads them all).
 */
bool x86_insn_arith_flags(const struct x86_insn *insn, u32 *reads, u32 *writes);

/** x86_insn_class_name() - "jcc", "call-indirect", ...; "?" if out of range */
const char *x86_insn_class_name(enum x86_insn_class cls);

#endif
