// SPDX-License-Identifier: MIT
/*
 * x86-64 instruction length decoder and control-flow classifier.
 *
 * Decoding follows the Intel SDM (Vol. 2, chapter 2 and appendix A) and, where
 * the SDM leaves a cell blank or "reserved", what Intel's reference decoder
 * (XED) does. The opcode tables know every map: one-byte, 0F, 0F 38, 0F 3A,
 * 3DNow!, VEX maps 1-3 and EVEX maps 1-3, 5, 6. Validity is decided at the
 * level that matters for the length: opcode, mandatory prefix, ModRM form and
 * ModRM.reg/rm for groups. VEX.L/W and EVEX.W/L'L/b requirements of single
 * instructions are not checked: they never change the length (see
 * docs/x86-insn.md).
 */
#include <topaz/x86_insn.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

/* ------------------------------------------------------------ descriptors */

/* Legacy-map descriptor bits. */
#define V	0x0001		/* defined */
#define MODRM	0x0002		/* has a ModRM byte */
#define M	(V | MODRM)
#define MEM	0x0004		/* memory form only (mod != 3) */
#define REG	0x0008		/* register form only (mod == 3) */
#define LK	0x0010		/* LOCK allowed, with a memory operand */
#define G	0x0020		/* ModRM.reg/rm refine it: group_check() */
#define NOEA	0x0040		/* MOV CR/DR: ModRM.mod is ignored, no SIB/disp */
#define X87	0x0080		/* x87 escape: x87_valid() */
#define D64	0x0100		/* 64-bit default operand size */
#define SP	0x0200		/* the slot's 66/F2/F3 (or its absence) is mandatory */
#define I(k)	((k) << 12)
#define IMM(d)	((d) >> 12)

/* Immediate kinds. */
enum {
	IMM_NONE,
	IMM_B,		/* imm8 */
	IMM_W,		/* imm16 */
	IMM_Z,		/* imm16 with a 16-bit operand size, else imm32 */
	IMM_V,		/* imm16/32/64 by operand size (MOV r, imm: B8+r) */
	IMM_WB,		/* imm16, imm8 (ENTER) */
	IMM_MOFFS,	/* an address-size offset (MOV A0-A3) */
	IMM_REL8,	/* rel8 */
	IMM_RELZ,	/* rel32 (rel16 with 66 under X86_DECODE_AMD_BRANCH) */
	IMM_BB,		/* imm8, imm8 (EXTRQ, INSERTQ) */
	IMM_XBEGIN,	/* rel16 with a 16-bit operand size, else rel32 */
};

#define ALU(b)	[b] = M | LK, [b + 1] = M | LK, [b + 2] = M, [b + 3] = M, \
		[b + 4] = V | I(IMM_B), [b + 5] = V | I(IMM_Z)

/* One-byte opcodes in 64-bit mode; prefixes and escapes never reach it. */
static const u16 op1[256] = {
	ALU(0x00), ALU(0x08), ALU(0x10), ALU(0x18), ALU(0x20), ALU(0x28), ALU(0x30),
	[0x38] = M, [0x39] = M, [0x3a] = M, [0x3b] = M,
	[0x3c] = V | I(IMM_B), [0x3d] = V | I(IMM_Z),
	[0x50 ... 0x5f] = V | D64,
	[0x63] = M,
	[0x68] = V | D64 | I(IMM_Z), [0x69] = M | I(IMM_Z),
	[0x6a] = V | D64 | I(IMM_B), [0x6b] = M | I(IMM_B),
	[0x6c ... 0x6f] = V,
	[0x70 ... 0x7f] = V | I(IMM_REL8),
	[0x80] = M | G | I(IMM_B), [0x81] = M | G | I(IMM_Z), [0x83] = M | G | I(IMM_B),
	[0x84] = M, [0x85] = M, [0x86] = M | LK, [0x87] = M | LK,
	[0x88 ... 0x8b] = M, [0x8c] = M | G, [0x8d] = M | MEM, [0x8e] = M | G,
	[0x8f] = M | G | D64,
	[0x90 ... 0x99] = V, [0x9b] = V, [0x9c] = V | D64, [0x9d] = V | D64,
	[0x9e] = V, [0x9f] = V,
	[0xa0 ... 0xa3] = V | I(IMM_MOFFS), [0xa4 ... 0xa7] = V,
	[0xa8] = V | I(IMM_B), [0xa9] = V | I(IMM_Z), [0xaa ... 0xaf] = V,
	[0xb0 ... 0xb7] = V | I(IMM_B), [0xb8 ... 0xbf] = V | I(IMM_V),
	[0xc0] = M | I(IMM_B), [0xc1] = M | I(IMM_B),
	[0xc2] = V | I(IMM_W), [0xc3] = V,
	[0xc6] = M | G | I(IMM_B), [0xc7] = M | G | I(IMM_Z),
	[0xc8] = V | D64 | I(IMM_WB), [0xc9] = V | D64,
	[0xca] = V | I(IMM_W), [0xcb] = V, [0xcc] = V, [0xcd] = V | I(IMM_B), [0xcf] = V,
	[0xd0 ... 0xd3] = M, [0xd7] = V, [0xd8 ... 0xdf] = M | X87,
	[0xe0 ... 0xe3] = V | I(IMM_REL8), [0xe4 ... 0xe7] = V | I(IMM_B),
	[0xe8] = V | I(IMM_RELZ), [0xe9] = V | I(IMM_RELZ), [0xeb] = V | I(IMM_REL8),
	[0xec ... 0xef] = V,
	[0xf1] = V, [0xf4] = V, [0xf5] = V, [0xf6] = M | G, [0xf7] = M | G,
	[0xf8 ... 0xfd] = V, [0xfe] = M | G, [0xff] = M | G,
};

/*
 * Escape maps: one descriptor per mandatory-prefix slot, in the order
 * none, 66, F3, F2. The slot is the last F2/F3 if there is one, else 66.
 * General-purpose opcodes have the same descriptor in every slot (the 66 is
 * an operand-size prefix, F2/F3 are ignored); SIMD opcodes have SP in the
 * slots they define and nothing (#UD) in the others, as the SDM's "NP" and
 * XED's refining-prefix rules say.
 */
enum { SLOT_NP, SLOT_66, SLOT_F3, SLOT_F2 };
#define ALL(x)	{ (x), (x), (x), (x) }
#define NP(x)	{ (x) | SP, 0, 0, 0 }
#define P66(x)	{ 0, (x) | SP, 0, 0 }
#define PF3(x)	{ 0, 0, (x) | SP, 0 }
#define PF2(x)	{ 0, 0, 0, (x) | SP }
#define SL2(x)	{ (x) | SP, (x) | SP, 0, 0 }
#define SL4(x)	{ (x) | SP, (x) | SP, (x) | SP, (x) | SP }
#define SLT(a, b, c, d)	{ a, b, c, d }

static const u16 op0f[256][4] = {
	[0x00] = ALL(M | G), [0x01] = ALL(M | G), [0x02] = ALL(M), [0x03] = ALL(M),
	[0x05 ... 0x08] = ALL(V),
	[0x09] = SLT(V | SP, 0, V | SP, 0),		/* WBINVD, WBNOINVD */
	[0x0b] = ALL(V),
	[0x0d] = ALL(M),				/* PREFETCH group, reserved NOPs */
	[0x0e] = ALL(V),				/* FEMMS */
	[0x0f] = ALL(M),				/* 3DNow!, suffix checked later */
	[0x10] = SL4(M), [0x11] = SL4(M),
	[0x12] = SLT(M | SP, M | MEM | SP, M | SP, M | SP),
	[0x13] = SL2(M | MEM),
	[0x14] = SL2(M), [0x15] = SL2(M),
	[0x16] = SLT(M | SP, M | MEM | SP, M | SP, 0),
	[0x17] = SL2(M | MEM),
	[0x18 ... 0x1f] = ALL(M),			/* PREFETCHh, MPX, CET, hint NOPs */
	[0x20 ... 0x23] = ALL(M | NOEA),
	[0x28] = SL2(M), [0x29] = SL2(M),
	[0x2a] = SL4(M), [0x2b] = SL4(M | MEM), [0x2c] = SL4(M), [0x2d] = SL4(M),
	[0x2e] = SL2(M), [0x2f] = SL2(M),
	[0x30 ... 0x35] = ALL(V),
	[0x37] = NP(V),					/* GETSEC */
	[0x40 ... 0x4f] = ALL(M),
	[0x50] = SL2(M | REG),
	[0x51] = SL4(M),
	[0x52] = SLT(M | SP, 0, M | SP, 0), [0x53] = SLT(M | SP, 0, M | SP, 0),
	[0x54 ... 0x57] = SL2(M),
	[0x58 ... 0x5a] = SL4(M),
	[0x5b] = SLT(M | SP, M | SP, M | SP, 0),
	[0x5c ... 0x5f] = SL4(M),
	[0x60 ... 0x6b] = SL2(M),
	[0x6c] = P66(M), [0x6d] = P66(M),
	[0x6e] = SL2(M),
	[0x6f] = SLT(M | SP, M | SP, M | SP, 0),
	[0x70] = SL4(M | I(IMM_B)),
	[0x71 ... 0x73] = SL2(M | REG | G | I(IMM_B)),
	[0x74 ... 0x76] = SL2(M),
	[0x77] = NP(V),
	/* VMREAD/VMWRITE; AMD SSE4a EXTRQ (66) and INSERTQ (F2) */
	[0x78] = SLT(M | SP, M | REG | SP | I(IMM_BB), 0, M | REG | SP | I(IMM_BB)),
	[0x79] = SLT(M | SP, M | REG | SP, 0, M | REG | SP),
	[0x7c] = SLT(0, M | SP, 0, M | SP), [0x7d] = SLT(0, M | SP, 0, M | SP),
	[0x7e] = SLT(M | SP, M | SP, M | SP, 0),
	[0x7f] = SLT(M | SP, M | SP, M | SP, 0),
	[0x80 ... 0x8f] = ALL(V | I(IMM_RELZ)),
	[0x90 ... 0x9f] = ALL(M),
	[0xa0] = ALL(V | D64), [0xa1] = ALL(V | D64), [0xa2] = ALL(V), [0xa3] = ALL(M),
	[0xa4] = ALL(M | I(IMM_B)), [0xa5] = ALL(M),
	[0xa8] = ALL(V | D64), [0xa9] = ALL(V | D64), [0xaa] = ALL(V), [0xab] = ALL(M | LK),
	[0xac] = ALL(M | I(IMM_B)), [0xad] = ALL(M), [0xae] = ALL(M | G), [0xaf] = ALL(M),
	[0xb0] = ALL(M | LK), [0xb1] = ALL(M | LK), [0xb2] = ALL(M | MEM), [0xb3] = ALL(M | LK),
	[0xb4] = ALL(M | MEM), [0xb5] = ALL(M | MEM), [0xb6] = ALL(M), [0xb7] = ALL(M),
	[0xb8] = PF3(M),				/* POPCNT (none: JMPE, IA-64 only) */
	[0xb9] = ALL(M),				/* UD1 */
	[0xba] = ALL(M | G | I(IMM_B)),
	[0xbb] = ALL(M | LK),
	[0xbc] = SLT(M, M, M | SP, M), [0xbd] = SLT(M, M, M | SP, M),	/* TZCNT, LZCNT */
	[0xbe] = ALL(M), [0xbf] = ALL(M),
	[0xc0] = ALL(M | LK), [0xc1] = ALL(M | LK),
	[0xc2] = SL4(M | I(IMM_B)),
	[0xc3] = NP(M | MEM),
	[0xc4] = SL2(M | I(IMM_B)),
	[0xc5] = SL2(M | REG | I(IMM_B)),
	[0xc6] = SL2(M | I(IMM_B)),
	[0xc7] = ALL(M | G),
	[0xc8 ... 0xcf] = ALL(V),
	[0xd0] = SLT(0, M | SP, 0, M | SP),
	[0xd1 ... 0xd5] = SL2(M),
	[0xd6] = SLT(0, M | SP, M | REG | SP, M | REG | SP),
	[0xd7] = SL2(M | REG),
	[0xd8 ... 0xdf] = SL2(M),
	[0xe0 ... 0xe5] = SL2(M),
	[0xe6] = SLT(0, M | SP, M | SP, M | SP),
	[0xe7] = SL2(M | MEM),
	[0xe8 ... 0xef] = SL2(M),
	[0xf0] = PF2(M | MEM),
	[0xf1 ... 0xf6] = SL2(M),
	[0xf7] = SL2(M | REG),
	[0xf8 ... 0xfe] = SL2(M),
	[0xff] = ALL(M),				/* UD0 */
};

static const u16 op0f38[256][4] = {
	[0x00 ... 0x0b] = SL2(M),
	[0x10] = P66(M), [0x14] = P66(M), [0x15] = P66(M), [0x17] = P66(M),
	[0x1c ... 0x1e] = SL2(M),
	[0x20 ... 0x25] = P66(M),
	[0x28] = P66(M), [0x29] = P66(M), [0x2a] = P66(M | MEM), [0x2b] = P66(M),
	[0x30 ... 0x35] = P66(M),
	[0x37 ... 0x41] = P66(M),
	[0x80 ... 0x82] = P66(M | MEM),			/* INVEPT, INVVPID, INVPCID */
	[0xc8 ... 0xcd] = NP(M),			/* SHA */
	[0xcf] = P66(M),				/* GF2P8MULB */
	[0xd8] = PF3(M | MEM | G),			/* AES*WIDE*KL */
	[0xdb] = P66(M),
	[0xdc] = SLT(0, M | SP, M | SP, 0),		/* AESENC, AESENC128KL, LOADIWKEY */
	[0xdd ... 0xdf] = SLT(0, M | SP, M | MEM | SP, 0),	/* AES*, AES*KL */
	[0xf0] = SLT(M | MEM, M | MEM, 0, M | SP),	/* MOVBE, CRC32 */
	[0xf1] = SLT(M | MEM, M | MEM, 0, M | SP),
	[0xf5] = P66(M | MEM),				/* WRUSS */
	[0xf6] = SLT(M | MEM | SP, M | SP, M | SP, 0),	/* WRSS, ADCX, ADOX */
	[0xf8] = SLT(0, M | MEM | SP, M | MEM | SP, M | MEM | SP),	/* MOVDIR64B, ENQCMD(S) */
	[0xf9] = NP(M | MEM),				/* MOVDIRI */
	[0xfa] = PF3(M | REG), [0xfb] = PF3(M | REG),	/* ENCODEKEY128/256 */
};

#define M3	(M | I(IMM_B))
static const u16 op0f3a[256][4] = {
	[0x08 ... 0x0e] = P66(M3), [0x0f] = SL2(M3),
	[0x14 ... 0x17] = P66(M3),
	[0x20 ... 0x22] = P66(M3),
	[0x40 ... 0x42] = P66(M3), [0x44] = P66(M3),
	[0x60 ... 0x63] = P66(M3),
	[0xcc] = NP(M3),				/* SHA1RNDS4 */
	[0xce] = P66(M3), [0xcf] = P66(M3),		/* GF2P8AFFINE(INV)QB */
	[0xdf] = P66(M3),
	[0xf0] = PF3(M3 | REG | G),			/* HRESET */
};

/* 3DNow! suffix opcodes (0F 0F modrm [sib] [disp] suffix). */
static const u8 amd3dnow[] = {
	0x0c, 0x0d, 0x1c, 0x1d, 0x8a, 0x8e, 0x90, 0x94, 0x96, 0x97, 0x9a, 0x9e,
	0xa0, 0xa4, 0xa6, 0xa7, 0xaa, 0xae, 0xb0, 0xb4, 0xb6, 0xb7, 0xbb, 0xbf,
};

/*
 * x87 escapes D8-DF: which memory forms (bit per ModRM.reg) and which
 * register forms (bit per ModRM C0..FF) are defined, including the aliases
 * Intel processors execute (FSTP1 D9 D8+i, FCOM2 DC D0+i, FFREEP DF C0+i,
 * FENI/FDISI/FSETPM as NOPs, ...).
 */
static const u8 x87_mem[8] = { 0xff, 0xfd, 0xff, 0xaf, 0xff, 0xdf, 0xff, 0xff };
static const u64 x87_reg[8] = {
	~0ull,						/* D8 */
	0xffff7f33ff01ffffull,				/* D9 */
	0x00000200ffffffffull,				/* DA: FCMOVcc, FUCOMPP */
	0x00ffff1fffffffffull,				/* DB */
	~0ull,						/* DC */
	0x0000ffffffffffffull,				/* DD */
	0xffffffff02ffffffull,				/* DE */
	0x00ffff01ffffffffull,				/* DF */
};

/* VEX/EVEX descriptor bits. */
#define XV	0x01		/* defined */
#define XMEM	0x02		/* memory form only */
#define XREG	0x04		/* register form only */
#define XI8	0x08		/* imm8 */
#define XG	0x10		/* ModRM.reg/rm refine it: vex_group_check() */
#define XNOM	0x20		/* no ModRM (VZEROUPPER/VZEROALL) */
#define XSIB	0x40		/* needs a SIB byte: VSIB, AMX sibmem */

#define XM	(XV | XMEM)
#define XR	(XV | XREG)
#define XS	(XV | XMEM | XSIB)

/* VEX maps 1-3, by pp (none, 66, F3, F2). */
static const u8 vex_op[3][4][256] = {
	[0] = {
		[0] = {
			[0x10] = XV, [0x11] = XV, [0x12] = XV, [0x13] = XM, [0x14] = XV, [0x15] = XV,
			[0x16] = XV, [0x17] = XM, [0x28] = XV, [0x29] = XV, [0x2b] = XM, [0x2e] = XV,
			[0x2f] = XV, [0x41] = XR, [0x42] = XR, [0x44 ... 0x47] = XR, [0x4a] = XR,
			[0x4b] = XR, [0x50] = XR, [0x51 ... 0x5f] = XV, [0x77] = XV | XNOM,
			[0x90] = XV, [0x91] = XM, [0x92] = XR, [0x93] = XR, [0x98] = XR, [0x99] = XR,
			[0xae] = XM | XG, [0xc2] = XV | XI8, [0xc6] = XV | XI8,
		},
		[1] = {
			[0x10] = XV, [0x11] = XV, [0x12] = XM, [0x13] = XM, [0x14] = XV, [0x15] = XV,
			[0x16] = XM, [0x17] = XM, [0x28] = XV, [0x29] = XV, [0x2b] = XM, [0x2e] = XV,
			[0x2f] = XV, [0x41] = XR, [0x42] = XR, [0x44 ... 0x47] = XR, [0x4a] = XR,
			[0x4b] = XR, [0x50] = XR, [0x51] = XV, [0x54 ... 0x5f] = XV,
			[0x60 ... 0x6f] = XV, [0x70] = XV | XI8, [0x71 ... 0x73] = XR | XG | XI8,
			[0x74 ... 0x76] = XV, [0x7c ... 0x7f] = XV, [0x90] = XV, [0x91] = XM,
			[0x92] = XR, [0x93] = XR, [0x98] = XR, [0x99] = XR, [0xc2] = XV | XI8,
			[0xc4] = XV | XI8, [0xc5] = XR | XI8, [0xc6] = XV | XI8, [0xd0 ... 0xd6] = XV,
			[0xd7] = XR, [0xd8 ... 0xe6] = XV, [0xe7] = XM, [0xe8 ... 0xef] = XV,
			[0xf1 ... 0xf6] = XV, [0xf7] = XR, [0xf8 ... 0xfe] = XV,
		},
		[2] = {
			[0x10] = XV, [0x11] = XV, [0x12] = XV, [0x16] = XV, [0x2a] = XV, [0x2c] = XV,
			[0x2d] = XV, [0x51 ... 0x53] = XV, [0x58 ... 0x5f] = XV, [0x6f] = XV,
			[0x70] = XV | XI8, [0x7e] = XV, [0x7f] = XV, [0xc2] = XV | XI8, [0xe6] = XV,
		},
		[3] = {
			[0x10] = XV, [0x11] = XV, [0x12] = XV, [0x2a] = XV, [0x2c] = XV, [0x2d] = XV,
			[0x51] = XV, [0x58 ... 0x5a] = XV, [0x5c ... 0x5f] = XV, [0x70] = XV | XI8,
			[0x7c] = XV, [0x7d] = XV, [0x92] = XR, [0x93] = XR, [0xc2] = XV | XI8,
			[0xd0] = XV, [0xe6] = XV, [0xf0] = XM,
		},
	},
	[1] = {
		[0] = {
			[0x49] = XV | XG,			/* LDTILECFG, TILERELEASE */
			[0x5e] = XR,				/* TDPBUUD */
			[0xf2] = XV, [0xf3] = XV | XG, [0xf5] = XV, [0xf7] = XV,
		},
		[1] = {
			[0x00 ... 0x0f] = XV, [0x13] = XV, [0x16 ... 0x19] = XV, [0x1a] = XM,
			[0x1c ... 0x1e] = XV, [0x20 ... 0x25] = XV, [0x28 ... 0x29] = XV,
			[0x2a] = XM, [0x2b] = XV, [0x2c ... 0x2f] = XM, [0x30 ... 0x41] = XV,
			[0x45 ... 0x47] = XV, [0x49] = XM | XG,	/* STTILECFG */
			[0x4b] = XS,				/* TILELOADDT1 */
			[0x50 ... 0x53] = XV, [0x58] = XV, [0x59] = XV, [0x5a] = XM,
			[0x5e] = XR,				/* TDPBUSD */
			[0x78] = XV, [0x79] = XV, [0x8c] = XM, [0x8e] = XM, [0x90 ... 0x93] = XS,
			[0x96 ... 0x9f] = XV, [0xa6 ... 0xaf] = XV, [0xb6 ... 0xbf] = XV,
			[0xcf] = XV, [0xdb ... 0xdf] = XV, [0xf7] = XV,
		},
		[2] = {
			[0x4b] = XS,				/* TILESTORED */
			[0x5c] = XR, [0x5e] = XR,		/* TDPBF16PS, TDPBSUD */
			[0xf5] = XV, [0xf7] = XV,
		},
		[3] = {
			[0x49] = XR | XG,			/* TILEZERO */
			[0x4b] = XS,				/* TILELOADD */
			[0x5e] = XR,				/* TDPBSSD */
			[0xf5 ... 0xf7] = XV,
		},
	},
	[2] = {
		[1] = {
			[0x00 ... 0x02] = XV | XI8, [0x04 ... 0x06] = XV | XI8,
			[0x08 ... 0x0f] = XV | XI8, [0x14 ... 0x19] = XV | XI8, [0x1d] = XV | XI8,
			[0x20 ... 0x22] = XV | XI8, [0x30 ... 0x33] = XR | XI8,
			[0x38] = XV | XI8, [0x39] = XV | XI8, [0x40 ... 0x42] = XV | XI8,
			[0x44] = XV | XI8, [0x46] = XV | XI8, [0x48 ... 0x4c] = XV | XI8,
			[0x5c ... 0x5f] = XV | XI8, [0x60 ... 0x63] = XV | XI8,
			[0x68 ... 0x6f] = XV | XI8, [0x78 ... 0x7f] = XV | XI8,
			[0xce] = XV | XI8, [0xcf] = XV | XI8, [0xdf] = XV | XI8,
		},
		[3] = { [0xf0] = XV | XI8 },		/* RORX */
	},
};

/* EVEX maps 1, 2, 3, 5, 6, by pp. */
enum { EV1, EV2, EV3, EV5, EV6, EV_NR };
static const u8 evex_op[EV_NR][4][256] = {
	[EV1] = {
		[0] = {
			[0x10 ... 0x12] = XV, [0x13] = XM, [0x14 ... 0x16] = XV, [0x17] = XM,
			[0x28] = XV, [0x29] = XV, [0x2b] = XM, [0x2e] = XV, [0x2f] = XV, [0x51] = XV,
			[0x54 ... 0x5f] = XV, [0x78] = XV, [0x79] = XV,
			[0xc2] = XV | XI8, [0xc6] = XV | XI8,
		},
		[1] = {
			[0x10] = XV, [0x11] = XV, [0x12] = XM, [0x13] = XM, [0x14] = XV, [0x15] = XV,
			[0x16] = XM, [0x17] = XM, [0x28] = XV, [0x29] = XV, [0x2b] = XM, [0x2e] = XV,
			[0x2f] = XV, [0x51] = XV, [0x54 ... 0x5f] = XV, [0x60 ... 0x6f] = XV,
			[0x70] = XV | XI8, [0x71 ... 0x73] = XV | XG | XI8, [0x74 ... 0x76] = XV,
			[0x78 ... 0x7b] = XV, [0x7e] = XV, [0x7f] = XV, [0xc2] = XV | XI8,
			[0xc4] = XV | XI8, [0xc5] = XR | XI8, [0xc6] = XV | XI8, [0xd1 ... 0xd6] = XV,
			[0xd8 ... 0xe6] = XV, [0xe7] = XM, [0xe8 ... 0xef] = XV, [0xf1 ... 0xf6] = XV,
			[0xf8 ... 0xfe] = XV,
		},
		[2] = {
			[0x10 ... 0x12] = XV, [0x16] = XV, [0x2a] = XV, [0x2c] = XV, [0x2d] = XV,
			[0x51] = XV, [0x58 ... 0x5f] = XV, [0x6f] = XV, [0x70] = XV | XI8,
			[0x78 ... 0x7b] = XV, [0x7e] = XV, [0x7f] = XV, [0xc2] = XV | XI8, [0xe6] = XV,
		},
		[3] = {
			[0x10 ... 0x12] = XV, [0x2a] = XV, [0x2c] = XV, [0x2d] = XV, [0x51] = XV,
			[0x58 ... 0x5a] = XV, [0x5c ... 0x5f] = XV, [0x6f] = XV, [0x70] = XV | XI8,
			[0x78 ... 0x7b] = XV, [0x7f] = XV, [0xc2] = XV | XI8, [0xe6] = XV,
		},
	},
	[EV2] = {
		[1] = {
			[0x00] = XV, [0x04] = XV, [0x0b ... 0x0d] = XV, [0x10 ... 0x16] = XV,
			[0x18] = XV, [0x19] = XV, [0x1a] = XM, [0x1b] = XM, [0x1c ... 0x29] = XV,
			[0x2a] = XM, [0x2b ... 0x2d] = XV, [0x30 ... 0x40] = XV, [0x42 ... 0x47] = XV,
			[0x4c ... 0x55] = XV, [0x58] = XV, [0x59] = XV, [0x5a] = XM, [0x5b] = XM,
			[0x62 ... 0x66] = XV, [0x70 ... 0x73] = XV, [0x75 ... 0x79] = XV,
			[0x7a ... 0x7c] = XR, [0x7d ... 0x7f] = XV, [0x83] = XV, [0x88 ... 0x8b] = XV,
			[0x8d] = XV, [0x8f] = XV, [0x90 ... 0x93] = XS, [0x96 ... 0x9f] = XV,
			[0xa0 ... 0xa3] = XS, [0xa6 ... 0xaf] = XV, [0xb4 ... 0xbf] = XV, [0xc4] = XV,
			[0xc6] = XS | XG, [0xc7] = XS | XG,	/* AVX512PF gather/scatter prefetch */
			[0xc8] = XV, [0xca ... 0xcd] = XV, [0xcf] = XV, [0xdc ... 0xdf] = XV,
		},
		[2] = {
			[0x10 ... 0x15] = XV, [0x20 ... 0x27] = XV, [0x28 ... 0x2a] = XR,
			[0x30 ... 0x35] = XV, [0x38 ... 0x3a] = XR, [0x52] = XV, [0x72] = XV,
		},
		[3] = {
			[0x52] = XM, [0x53] = XM, [0x68] = XV, [0x72] = XV,
			[0x9a] = XM, [0x9b] = XM, [0xaa] = XM, [0xab] = XM,
		},
	},
	[EV3] = {
		[0] = {
			[0x08] = XV | XI8, [0x0a] = XV | XI8, [0x26] = XV | XI8, [0x27] = XV | XI8,
			[0x56] = XV | XI8, [0x57] = XV | XI8, [0x66] = XV | XI8, [0x67] = XV | XI8,
			[0xc2] = XV | XI8,
		},
		[1] = {
			[0x00] = XV | XI8, [0x01] = XV | XI8, [0x03 ... 0x05] = XV | XI8,
			[0x08 ... 0x0b] = XV | XI8, [0x0f] = XV | XI8, [0x14 ... 0x1b] = XV | XI8,
			[0x1d ... 0x23] = XV | XI8, [0x25 ... 0x27] = XV | XI8,
			[0x38 ... 0x3b] = XV | XI8, [0x3e] = XV | XI8, [0x3f] = XV | XI8,
			[0x42 ... 0x44] = XV | XI8, [0x50] = XV | XI8, [0x51] = XV | XI8,
			[0x54 ... 0x57] = XV | XI8, [0x66] = XV | XI8, [0x67] = XV | XI8,
			[0x70 ... 0x73] = XV | XI8, [0xce] = XV | XI8, [0xcf] = XV | XI8,
		},
		[2] = { [0xc2] = XV | XI8 },
	},
	[EV5] = {
		[0] = {
			[0x1d] = XV, [0x2e] = XV, [0x2f] = XV, [0x51] = XV, [0x58 ... 0x5f] = XV,
			[0x78] = XV, [0x79] = XV, [0x7c] = XV, [0x7d] = XV,
		},
		[1] = {
			[0x1d] = XV, [0x5a] = XV, [0x5b] = XV, [0x6e] = XV, [0x78 ... 0x7e] = XV,
		},
		[2] = {
			[0x10] = XV, [0x11] = XV, [0x2a] = XV, [0x2c] = XV, [0x2d] = XV, [0x51] = XV,
			[0x58 ... 0x5f] = XV, [0x78] = XV, [0x79] = XV, [0x7b] = XV, [0x7d] = XV,
		},
		[3] = { [0x5a] = XV, [0x7a] = XV, [0x7d] = XV },
	},
	[EV6] = {
		[0] = { [0x13] = XV },
		[1] = {
			[0x13] = XV, [0x2c] = XV, [0x2d] = XV, [0x42] = XV, [0x43] = XV,
			[0x4c ... 0x4f] = XV, [0x96 ... 0x9f] = XV, [0xa6 ... 0xaf] = XV,
			[0xb6 ... 0xbf] = XV,
		},
		[2] = { [0x56] = XV, [0x57] = XV, [0xd6] = XV, [0xd7] = XV },
		[3] = { [0x56] = XV, [0x57] = XV, [0xd6] = XV, [0xd7] = XV },
	},
};

/* ------------------------------------------------------------ decoder state */

struct dec {
	const u8 *b;
	size_t avail;
	unsigned int flags;
	unsigned int pos;	/* next byte to read */
	u8 rep;			/* the last F2/F3, 0 if none */
	bool p66, p67, lock;
	u8 rex;
	u8 mod, reg, rm;
};

/* Make sure bytes [0, end) exist: an instruction longer than 15 bytes is
 * -E2BIG whatever the buffer holds. */
static int need(const struct dec *d, unsigned int end)
{
	if (end > X86_INSN_MAX_LEN)
		return -E2BIG;
	if (end > d->avail)
		return -ENODATA;
	return 0;
}

static int fetch(struct dec *d, u8 *v)
{
	int ret = need(d, d->pos + 1);

	if (ret)
		return ret;
	*v = d->b[d->pos++];
	return 0;
}

static u64 le(const u8 *p, unsigned int n)
{
	u64 v = 0;

	for (unsigned int i = n; i--; )
		v = (v << 8) | p[i];
	return v;
}

static s64 sext(u64 v, unsigned int bytes)
{
	unsigned int shift = 64 - 8 * bytes;

	return (s64)(v << shift) >> shift;
}

static unsigned int slot_of(const struct dec *d)
{
	if (d->rep == 0xf3)
		return SLOT_F3;
	if (d->rep == 0xf2)
		return SLOT_F2;
	return d->p66 ? SLOT_66 : SLOT_NP;
}

static const u8 slot_prefix[4] = { 0, 0x66, 0xf3, 0xf2 };

/* ------------------------------------------------------------ groups */

/* Register forms of 0F 01, ModRM C0..FF: the slots that define them. */
#define S_NP	BIT(SLOT_NP)
#define S_66	BIT(SLOT_66)
#define S_F3	BIT(SLOT_F3)
#define S_F2	BIT(SLOT_F2)
#define S_ALL	(S_NP | S_66 | S_F3 | S_F2)
static const u8 grp7_reg[64] = {
	[0x00] = S_NP,				/* ENCLV */
	[0x01 ... 0x04] = S_ALL,		/* VMCALL, VMLAUNCH, VMRESUME, VMXOFF */
	[0x05] = S_NP,				/* PCONFIG */
	[0x08] = S_ALL, [0x09] = S_ALL,		/* MONITOR, MWAIT */
	[0x0a] = S_NP, [0x0b] = S_NP,		/* CLAC, STAC */
	[0x0c ... 0x0e] = S_66,			/* TDCALL, SEAMRET, SEAMOPS */
	[0x0f] = S_NP | S_66,			/* ENCLS, SEAMCALL */
	[0x10] = S_NP, [0x11] = S_NP,		/* XGETBV, XSETBV */
	[0x14 ... 0x17] = S_NP,			/* VMFUNC, XEND, XTEST, ENCLU */
	[0x18 ... 0x1f] = S_ALL,		/* SVM */
	[0x20 ... 0x27] = S_ALL,		/* SMSW */
	[0x28] = S_NP | S_F3 | S_F2,		/* SERIALIZE, SETSSBSY, XSUSLDTRK */
	[0x29] = S_F2,				/* XRESLDTRK */
	[0x2a] = S_F3,				/* SAVEPREVSSP */
	[0x2c] = S_F3, [0x2d] = S_F3,		/* UIRET, TESTUI */
	[0x2e] = S_NP | S_F3, [0x2f] = S_NP | S_F3,	/* RDPKRU/CLUI, WRPKRU/STUI */
	[0x30 ... 0x37] = S_ALL,		/* LMSW */
	[0x38] = S_ALL, [0x39] = S_ALL,		/* SWAPGS, RDTSCP */
	[0x3a ... 0x3c] = S_ALL,		/* MONITORX, MWAITX, CLZERO */
	[0x3e] = S_NP | S_F3 | S_F2,		/* INVLPGB, RMPADJUST, RMPUPDATE */
	[0x3f] = S_NP | S_F3 | S_F2,		/* TLBSYNC, PSMASH, PVALIDATE */
};

/* 0F AE and 0F C7, by slot: ModRM.reg bits defined for memory and register forms. */
static const u8 grp15_mem[4] = { 0xff, 0xc0, 0x50, 0x00 };
static const u8 grp15_reg[4] = { 0xe0, 0x40, 0x7f, 0x40 };
static const u8 grp9_mem[4] = { 0xfa, 0x42, 0x42, 0x02 };
static const u8 grp9_reg[4] = { 0xc0, 0xc0, 0xc0, 0x00 };

/* Register forms of 0F 01 where the slot's prefix selects another instruction. */
static const u8 grp7_mand[64] = {
	[0x0c ... 0x0f] = S_66, [0x28] = S_F3 | S_F2, [0x29] = S_F2, [0x2a] = S_F3,
	[0x2c ... 0x2f] = S_F3, [0x3e] = S_F3 | S_F2, [0x3f] = S_F3 | S_F2,
};

/*
 * Legacy ModRM groups: whether this ModRM is defined, whether LOCK may apply
 * (*lockable), the immediate kind when it depends on ModRM.reg (*imm), and
 * whether the 66/F2/F3 slot picked a different instruction (*mand).
 */
static bool group_check(const struct dec *d, unsigned int map, u8 op, u8 modrm,
			bool *lockable, unsigned int *imm, bool *mand)
{
	bool mem = d->mod != 3;
	unsigned int reg = d->reg, slot = slot_of(d);

	if (map == X86_MAP_LEGACY) {
		switch (op) {
		case 0x80: case 0x81: case 0x83:
			*lockable = reg != 7;
			return true;
		case 0x8c: case 0x8e:
			return reg <= 5;
		case 0x8f:
			return reg == 0;	/* 8F /1-/7 is AMD XOP, #UD on Intel */
		case 0xc6: case 0xc7:
			if (modrm == 0xf8) {	/* XABORT ib, XBEGIN rel */
				if (op == 0xc7)
					*imm = IMM_XBEGIN;
				return true;
			}
			return reg == 0;
		case 0xf6: case 0xf7:
			if (reg <= 1)		/* TEST (and its /1 alias) */
				*imm = op == 0xf6 ? IMM_B : IMM_Z;
			*lockable = reg == 2 || reg == 3;
			return true;
		case 0xfe:
			*lockable = true;
			return reg <= 1;
		case 0xff:
			*lockable = reg <= 1;
			if (reg == 3 || reg == 5)
				return mem;	/* far CALL/JMP need m16:xx */
			return reg != 7;
		}
		return false;
	}
	if (map == X86_MAP_0F) {
		switch (op) {
		case 0x00:
			return reg <= 5;
		case 0x01:
			if (mem) {
				*mand = reg == 5;		/* F3: RSTORSSP */
				return reg != 5 || slot == SLOT_F3;
			}
			*mand = grp7_mand[modrm & 0x3f] & BIT(slot);
			return grp7_reg[modrm & 0x3f] & BIT(slot);
		case 0x71: case 0x72:
			return reg == 2 || reg == 4 || reg == 6;
		case 0x73:
			return reg == 2 || reg == 6 || (slot == SLOT_66 && (reg == 3 || reg == 7));
		case 0xae:
			*mand = slot != SLOT_NP;	/* every prefixed form is its own */
			if (slot == SLOT_F3 && reg == 4 && d->p66)
				return false;		/* PTWRITE: #UD with 66 */
			return (mem ? grp15_mem : grp15_reg)[slot] & BIT(reg);
		case 0xba:
			*lockable = reg >= 5;
			return reg >= 4;
		case 0xc7:
			*lockable = mem && reg == 1;
			/* VMCLEAR, VMXON, SENDUIPI, RDPID; CMPXCHG8B ignores F2/F3 and
			 * 66 is RDRAND/RDSEED's operand size */
			*mand = (mem && reg == 6 && slot != SLOT_NP) ||
				(!mem && reg >= 6 && slot == SLOT_F3);
			return (mem ? grp9_mem : grp9_reg)[slot] & BIT(reg);
		}
		return false;
	}
	if (map == X86_MAP_0F38)
		return op == 0xd8 && reg <= 3;
	return map == X86_MAP_0F3A && op == 0xf0 && modrm == 0xc0;
}

static bool is_3dnow(u8 suffix)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(amd3dnow); i++)
		if (amd3dnow[i] == suffix)
			return true;
	return false;
}

static bool x87_valid(u8 op, u8 modrm)
{
	unsigned int esc = op - 0xd8;

	if (modrm < 0xc0)
		return x87_mem[esc] & BIT((modrm >> 3) & 7);
	return x87_reg[esc] & BIT_ULL(modrm - 0xc0);
}

static bool vex_group_check(bool evex, unsigned int map, unsigned int pp, u8 op, u8 modrm)
{
	unsigned int reg = (modrm >> 3) & 7;

	if (map == 1) {
		switch (op) {
		case 0x71:
			return reg == 2 || reg == 4 || reg == 6;
		case 0x72:
			return reg == 2 || reg == 4 || reg == 6 || (evex && reg <= 1);
		case 0x73:
			return reg == 2 || reg == 3 || reg == 6 || reg == 7;
		case 0xae:
			return reg == 2 || reg == 3;	/* VLDMXCSR, VSTMXCSR */
		}
		return false;
	}
	if (map == 2 && evex)		/* C6/C7: VGATHERPF0/1, VSCATTERPF0/1 */
		return reg == 1 || reg == 2 || reg == 5 || reg == 6;
	if (map == 2 && op == 0xf3)	/* BLSR, BLSMSK, BLSI */
		return reg >= 1 && reg <= 3;
	if (map == 2 && op == 0x49) {
		if (pp == 3)		/* TILEZERO tmm */
			return (modrm & 7) == 0;
		if (modrm >= 0xc0)	/* TILERELEASE */
			return pp == 0 && modrm == 0xc0;
		return reg == 0;	/* LDTILECFG, STTILECFG */
	}
	return false;
}

/* ------------------------------------------------------------ operands */

/* ModRM, SIB and displacement at d->pos. @noea: MOV CR/DR (mod ignored);
 * @need_sib: VSIB/sibmem forms must have a SIB byte. */
static int decode_modrm(struct dec *d, struct x86_insn *out, bool noea, bool need_sib)
{
	unsigned int disp = 0;
	u8 modrm, sib;
	int ret;

	out->modrm_off = d->pos;
	ret = fetch(d, &modrm);
	if (ret)
		return ret;
	out->modrm = modrm;
	out->flags |= X86_INSN_F_MODRM;
	d->mod = modrm >> 6;
	d->reg = (modrm >> 3) & 7;
	d->rm = modrm & 7;
	if (noea || d->mod == 3)
		return need_sib ? -EINVAL : 0;
	out->flags |= X86_INSN_F_MEM;
	if (d->rm == 4) {
		ret = fetch(d, &sib);
		if (ret)
			return ret;
		out->sib = sib;
		out->flags |= X86_INSN_F_SIB;
		if (d->mod == 0 && (sib & 7) == 5)
			disp = 4;
	} else if (need_sib) {
		return -EINVAL;
	} else if (d->mod == 0 && d->rm == 5) {
		out->flags |= X86_INSN_F_RIPREL;
		disp = 4;
	}
	if (d->mod == 1)
		disp = 1;
	else if (d->mod == 2)
		disp = 4;
	if (disp) {
		ret = need(d, d->pos + disp);
		if (ret)
			return ret;
		out->disp = (s32)sext(le(d->b + d->pos, disp), disp);
		out->disp_size = disp;
		d->pos += disp;
	}
	return 0;
}

/* Immediate of @kind at d->pos: a value in out->imm, or a branch displacement. */
static int decode_imm(struct dec *d, struct x86_insn *out, unsigned int kind)
{
	bool o16 = d->p66 && !(d->rex & 8) && out->mandatory != 0x66;
	unsigned int n = 0;
	bool rel = false;
	int ret;

	switch (kind) {
	case IMM_NONE:
		return 0;
	case IMM_B:
		n = 1;
		break;
	case IMM_W:
		n = 2;
		break;
	case IMM_Z:
		n = o16 ? 2 : 4;
		break;
	case IMM_V:
		n = (d->rex & 8) ? 8 : o16 ? 2 : 4;
		break;
	case IMM_WB:
		n = 3;
		break;
	case IMM_MOFFS:
		n = d->p67 ? 4 : 8;
		break;
	case IMM_BB:
		n = 2;
		break;
	case IMM_REL8:
		n = 1;
		rel = true;
		break;
	case IMM_RELZ:
		n = (o16 && (d->flags & X86_DECODE_AMD_BRANCH)) ? 2 : 4;
		rel = true;
		break;
	case IMM_XBEGIN:
		n = o16 ? 2 : 4;
		rel = true;
		break;
	}
	ret = need(d, d->pos + n);
	if (ret)
		return ret;
	if (rel) {
		out->rel = (s32)sext(le(d->b + d->pos, n), n);
		out->rel_size = n;
		out->flags |= X86_INSN_F_REL;
	} else {
		out->imm = le(d->b + d->pos, n);
		out->imm_size = n;
	}
	d->pos += n;
	return 0;
}

/* ------------------------------------------------------------ classes */

static void set_class(struct x86_insn *out, enum x86_insn_class cls, enum x86_insn_cofi cofi)
{
	out->cls = cls;
	out->cofi = cofi;
}

/* Class, COFI type and operand size of a legacy-map instruction. */
static void classify(const struct dec *d, struct x86_insn *out, u16 desc)
{
	bool w = d->rex & 8, o16 = d->p66 && !w && out->mandatory != 0x66;
	/* Intel ignores 66 on near branches in 64-bit mode; AMD honours it. */
	u8 near = (o16 && (d->flags & X86_DECODE_AMD_BRANCH)) ? 2 : 8;
	u8 op = out->opcode;

	out->opsize = w ? 8 : o16 ? 2 : (desc & D64) ? 8 : 4;
	if (out->map == X86_MAP_LEGACY) {
		switch (op) {
		case 0x70 ... 0x7f:
			set_class(out, X86_INSN_JCC, X86_COFI_COND);
			out->opsize = near;
			return;
		case 0xe0 ... 0xe2:
			set_class(out, X86_INSN_LOOP, X86_COFI_COND);
			out->opsize = near;
			return;
		case 0xe3:
			set_class(out, X86_INSN_JCXZ, X86_COFI_COND);
			out->opsize = near;
			return;
		case 0xe8:
			set_class(out, X86_INSN_CALL_DIRECT, X86_COFI_DIRECT);
			out->opsize = near;
			return;
		case 0xe9: case 0xeb:
			set_class(out, X86_INSN_JMP_DIRECT, X86_COFI_DIRECT);
			out->opsize = near;
			return;
		case 0xc2: case 0xc3:
			set_class(out, X86_INSN_RET_NEAR, X86_COFI_RET);
			out->opsize = near;
			return;
		case 0xca: case 0xcb:
			set_class(out, X86_INSN_RET_FAR, X86_COFI_FAR);
			return;
		case 0xcf:
			set_class(out, X86_INSN_IRET, X86_COFI_FAR);
			return;
		case 0xcc:
			set_class(out, X86_INSN_INT3, X86_COFI_SWINT);
			return;
		case 0xcd:
			set_class(out, X86_INSN_INT, X86_COFI_SWINT);
			return;
		case 0xf1:
			set_class(out, X86_INSN_INT1, X86_COFI_SWINT);
			return;
		case 0xf4:
			set_class(out, X86_INSN_HLT, X86_COFI_NONE);
			return;
		case 0xc6:
			if (out->modrm == 0xf8)
				set_class(out, X86_INSN_XABORT, X86_COFI_NONE);
			return;
		case 0xc7:
			if (out->modrm == 0xf8)
				set_class(out, X86_INSN_XBEGIN, X86_COFI_NONE);
			return;
		case 0xff:
			switch (d->reg) {
			case 2:
				set_class(out, X86_INSN_CALL_INDIRECT, X86_COFI_INDIRECT);
				out->opsize = near;
				return;
			case 3:
				set_class(out, X86_INSN_CALL_FAR, X86_COFI_FAR);
				return;
			case 4:
				set_class(out, X86_INSN_JMP_INDIRECT, X86_COFI_INDIRECT);
				out->opsize = near;
				return;
			case 5:
				set_class(out, X86_INSN_JMP_FAR, X86_COFI_FAR);
				return;
			case 6:
				out->opsize = o16 ? 2 : 8;	/* PUSH r/m is d64 */
				return;
			}
			return;
		case 0x8f:
			out->opsize = o16 ? 2 : 8;
			return;
		}
		return;
	}
	if (out->map != X86_MAP_0F)
		return;
	switch (op) {
	case 0x05:
		set_class(out, X86_INSN_SYSCALL, X86_COFI_FAR);
		return;
	case 0x07:
		set_class(out, X86_INSN_SYSRET, X86_COFI_FAR);
		return;
	case 0x34:
		set_class(out, X86_INSN_SYSENTER, X86_COFI_FAR);
		return;
	case 0x35:
		set_class(out, X86_INSN_SYSEXIT, X86_COFI_FAR);
		return;
	case 0x0b: case 0xb9: case 0xff:
		set_class(out, X86_INSN_UD, X86_COFI_FAULT);
		return;
	case 0x80 ... 0x8f:
		set_class(out, X86_INSN_JCC, X86_COFI_COND);
		out->opsize = near;
		return;
	case 0x20 ... 0x23:
		out->opsize = 8;	/* control and debug registers are 64-bit */
		if (op == 0x22 && d->reg == 3 && !(d->rex & 4))
			set_class(out, X86_INSN_MOV_CR3, X86_COFI_NONE);
		return;
	case 0x01:
		if (out->modrm == 0xec && out->mandatory == 0xf3)
			set_class(out, X86_INSN_UIRET, X86_COFI_FAR);
		return;
	case 0xae:
		if (d->reg == 4 && out->mandatory == 0xf3)
			set_class(out, X86_INSN_PTWRITE, X86_COFI_NONE);
		return;
	}
}

/* ------------------------------------------------------------ VEX / EVEX */

static int decode_vex(struct dec *d, struct x86_insn *out, u8 esc)
{
	unsigned int map, pp, start = d->pos - 1;
	u8 p0, p1, p2 = 0, op, desc;
	bool evex = esc == 0x62;
	int ret;

	/* #UD: REX, 66, F2, F3 or LOCK before a VEX/EVEX prefix. */
	if (d->rex || d->p66 || d->rep || d->lock)
		return -EINVAL;
	ret = fetch(d, &p0);
	if (ret)
		return ret;
	if (esc == 0xc5) {
		map = 1;
		pp = p0 & 3;
		out->vex_l = (p0 >> 2) & 1;
		out->prefixes |= X86_PFX_VEX2;
	} else {
		ret = fetch(d, &p1);
		if (ret)
			return ret;
		if (evex) {
			/* P0 bit 3 is reserved (APX's B4), P1 bit 2 must be 1. */
			map = p0 & 7;
			if ((p0 & 8) || !(p1 & 4))
				return -EINVAL;
			ret = fetch(d, &p2);
			if (ret)
				return ret;
			out->vex_l = (p2 >> 5) & 3;
			out->prefixes |= X86_PFX_EVEX;
		} else {
			map = p0 & 0x1f;
			out->vex_l = (p1 >> 2) & 1;
			out->prefixes |= X86_PFX_VEX3;
		}
		pp = p1 & 3;
		out->vex_w = p1 >> 7;
	}
	ret = fetch(d, &op);
	if (ret)
		return ret;
	if (evex) {
		static const s8 ev_index[8] = { -1, EV1, EV2, EV3, -1, EV5, EV6, -1 };

		if (ev_index[map] < 0)
			return -EINVAL;
		desc = evex_op[ev_index[map]][pp][op];
	} else {
		if (map < 1 || map > 3)
			return -EINVAL;
		desc = vex_op[map - 1][pp][op];
	}
	if (!desc)
		return -EINVAL;
	out->map = (map == 5) ? X86_MAP_EVEX5 : (map == 6) ? X86_MAP_EVEX6 :
		   X86_MAP_VEX1 + map - 1;
	out->opcode = op;
	out->mandatory = slot_prefix[pp == 1 ? SLOT_66 : pp == 2 ? SLOT_F3 : pp == 3 ? SLOT_F2 : SLOT_NP];
	out->nprefix = start;
	if (!(desc & XNOM)) {
		ret = decode_modrm(d, out, false, desc & XSIB);
		if (ret)
			return ret;
		if ((desc & XMEM) && d->mod == 3)
			return -EINVAL;
		if ((desc & XREG) && d->mod != 3)
			return -EINVAL;
		if ((desc & XG) && !vex_group_check(evex, map, pp, op, out->modrm))
			return -EINVAL;
		if (evex) {
			/* XED's universal EVEX checks: L'L = 3 only as a rounding
			 * control (register form with b), no zeroing without a mask. */
			if (((p2 >> 5) & 3) == 3 && (d->mod != 3 || !(p2 & 0x10)))
				return -EINVAL;
			if ((p2 & 0x80) && !(p2 & 7))
				return -EINVAL;
		}
	}
	if (desc & XI8) {
		ret = decode_imm(d, out, IMM_B);
		if (ret)
			return ret;
	}
	out->opsize = out->vex_w ? 8 : 4;
	return 0;
}

/* ------------------------------------------------------------ main */

/*
 * decode()'s steps, static inline: one call site each, on the decoder's hot
 * path (the trace engine decodes every block it translates).
 */

/* Legacy prefixes in any order; a REX counts only right before the opcode
 * (or escape), a later legacy prefix cancels it. @b: the first other byte. */
static inline int decode_prefixes(struct dec *d, struct x86_insn *out, u8 *b)
{
	int ret;

	for (;;) {
		ret = fetch(d, b);
		if (ret)
			return ret;
		switch (*b) {
		case 0xf0:
			d->lock = true;
			out->prefixes |= X86_PFX_LOCK;
			break;
		case 0xf2:
			d->rep = *b;
			out->prefixes |= X86_PFX_REPNE;
			break;
		case 0xf3:
			d->rep = *b;
			out->prefixes |= X86_PFX_REP;
			break;
		case 0x66:
			d->p66 = true;
			out->prefixes |= X86_PFX_OSIZE;
			break;
		case 0x67:
			d->p67 = true;
			out->prefixes |= X86_PFX_ASIZE;
			break;
		case 0x2e: out->prefixes |= X86_PFX_CS; out->seg = *b; break;
		case 0x36: out->prefixes |= X86_PFX_SS; out->seg = *b; break;
		case 0x3e: out->prefixes |= X86_PFX_DS; out->seg = *b; break;
		case 0x26: out->prefixes |= X86_PFX_ES; out->seg = *b; break;
		case 0x64: out->prefixes |= X86_PFX_FS; out->seg = *b; break;
		case 0x65: out->prefixes |= X86_PFX_GS; out->seg = *b; break;
		case 0x40 ... 0x4f:
			if (d->rex)	/* only the REX next to the opcode counts */
				out->flags |= X86_INSN_F_REX_IGNORED;
			d->rex = *b;
			continue;
		default:
			return 0;
		}
		if (d->rex)
			out->flags |= X86_INSN_F_REX_IGNORED;
		d->rex = 0;
	}
}

/* The escape bytes (0F, 0F 38, 0F 3A) after @b and the opcode: @b and @map
 * become the opcode byte and its map. */
static inline int decode_opcode(struct dec *d, struct x86_insn *out, u8 *b, unsigned int *map)
{
	int ret;

	out->nprefix = d->pos - 1;
	if (d->rex) {
		out->rex = d->rex;
		out->prefixes |= X86_PFX_REX;
	}
	*map = X86_MAP_LEGACY;
	if (*b == 0x0f) {
		ret = fetch(d, b);
		if (ret)
			return ret;
		*map = X86_MAP_0F;
		if (*b == 0x38 || *b == 0x3a) {
			*map = *b == 0x38 ? X86_MAP_0F38 : X86_MAP_0F3A;
			ret = fetch(d, b);
			if (ret)
				return ret;
		}
	}
	out->map = *map;
	out->opcode = *b;
	return 0;
}

/* The opcode's table entry; @slot: the mandatory-prefix column it came from.
 * Return: 0 for an undefined opcode. */
static inline u16 opcode_desc(const struct dec *d, struct x86_insn *out, unsigned int map, u8 b,
			      unsigned int *slot)
{
	const u16 (*tbl)[4];
	u16 desc;

	if (map == X86_MAP_LEGACY)
		return op1[b];
	tbl = map == X86_MAP_0F ? op0f : map == X86_MAP_0F38 ? op0f38 : op0f3a;
	*slot = slot_of(d);
	desc = tbl[b][*slot];
	if (desc & SP)
		out->mandatory = slot_prefix[*slot];
	return desc;
}

/* The ModRM operand and what it allows: register or memory only, the opcode
 * group's member (which may change @lockable and @imm), x87 forms. */
static inline int decode_operand(struct dec *d, struct x86_insn *out, u16 desc, unsigned int map,
				 u8 b, unsigned int slot, bool *lockable, unsigned int *imm)
{
	bool mand = false;
	int ret;

	ret = decode_modrm(d, out, desc & NOEA, false);
	if (ret)
		return ret;
	if ((desc & MEM) && d->mod == 3)
		return -EINVAL;
	if ((desc & REG) && d->mod != 3)
		return -EINVAL;
	if ((desc & G) && !group_check(d, map, b, out->modrm, lockable, imm, &mand))
		return -EINVAL;
	if (mand)
		out->mandatory = slot_prefix[slot];
	if ((desc & X87) && !x87_valid(b, out->modrm))
		return -EINVAL;
	return 0;
}

/* 3DNow!: the opcode is a suffix after the ModRM operand. */
static inline int decode_3dnow(struct dec *d, struct x86_insn *out)
{
	u8 suffix;
	int ret;

	ret = fetch(d, &suffix);
	if (ret)
		return ret;
	if (!is_3dnow(suffix))
		return -EINVAL;
	out->map = X86_MAP_3DNOW;
	out->opcode = suffix;
	return 0;
}

static int decode(struct dec *d, struct x86_insn *out)
{
	unsigned int slot = SLOT_NP, map, imm;
	bool lockable;
	u16 desc;
	u8 b;
	int ret;

	ret = decode_prefixes(d, out, &b);
	if (ret)
		return ret;
	out->addrsize = d->p67 ? 4 : 8;
	if (b == 0xc4 || b == 0xc5 || b == 0x62) {
		ret = decode_vex(d, out, b);
		if (ret)
			return ret;
		goto done;
	}
	ret = decode_opcode(d, out, &b, &map);
	if (ret)
		return ret;
	desc = opcode_desc(d, out, map, b, &slot);
	if (!desc)
		return -EINVAL;
	lockable = desc & LK;
	imm = IMM(desc);
	if (desc & MODRM) {
		ret = decode_operand(d, out, desc, map, b, slot, &lockable, &imm);
		if (ret)
			return ret;
	}
	/* LOCK only on a read-modify-write of memory. */
	if (d->lock && (!lockable || !(desc & MODRM) || d->mod == 3))
		return -EINVAL;
	if (map == X86_MAP_0F && b == 0x0f) {
		ret = decode_3dnow(d, out);
		if (ret)
			return ret;
	}
	ret = decode_imm(d, out, imm);
	if (ret)
		return ret;
	classify(d, out, desc);
done:
	out->length = d->pos;
	return 0;
}

int x86_insn_decode_flags(const u8 *bytes, size_t avail, unsigned int flags,
			  struct x86_insn *out)
{
	struct dec d = { .b = bytes, .avail = avail, .flags = flags };
	int ret;

	*out = (struct x86_insn){ 0 };
	ret = decode(&d, out);
	if (ret)
		*out = (struct x86_insn){ 0 };
	return ret;
}

int x86_insn_decode(const u8 *bytes, size_t avail, struct x86_insn *out)
{
	return x86_insn_decode_flags(bytes, avail, 0, out);
}

u64 x86_insn_branch_target(const struct x86_insn *insn, u64 ip)
{
	u64 next = ip + insn->length;

	if (WARN_ON(!(insn->flags & X86_INSN_F_REL)))
		return next;
	next += (u64)(s64)insn->rel;
	if (insn->opsize == 2)
		next &= 0xffff;
	return next;
}

static const char *const class_names[X86_INSN_NR_CLASSES] = {
	[X86_INSN_OTHER] = "other",
	[X86_INSN_JCC] = "jcc",
	[X86_INSN_JCXZ] = "jcxz",
	[X86_INSN_LOOP] = "loop",
	[X86_INSN_JMP_DIRECT] = "jmp",
	[X86_INSN_CALL_DIRECT] = "call",
	[X86_INSN_JMP_INDIRECT] = "jmp-indirect",
	[X86_INSN_CALL_INDIRECT] = "call-indirect",
	[X86_INSN_RET_NEAR] = "ret",
	[X86_INSN_RET_FAR] = "ret-far",
	[X86_INSN_JMP_FAR] = "jmp-far",
	[X86_INSN_CALL_FAR] = "call-far",
	[X86_INSN_IRET] = "iret",
	[X86_INSN_SYSCALL] = "syscall",
	[X86_INSN_SYSRET] = "sysret",
	[X86_INSN_SYSENTER] = "sysenter",
	[X86_INSN_SYSEXIT] = "sysexit",
	[X86_INSN_INT] = "int",
	[X86_INSN_INT3] = "int3",
	[X86_INSN_INT1] = "int1",
	[X86_INSN_UD] = "ud",
	[X86_INSN_HLT] = "hlt",
	[X86_INSN_XBEGIN] = "xbegin",
	[X86_INSN_XABORT] = "xabort",
	[X86_INSN_UIRET] = "uiret",
	[X86_INSN_PTWRITE] = "ptwrite",
	[X86_INSN_MOV_CR3] = "mov-cr3",
};

const char *x86_insn_class_name(enum x86_insn_class cls)
{
	if ((unsigned int)cls >= X86_INSN_NR_CLASSES)
		return "?";
	return class_names[cls];
}

/* The legacy map's opcodes that leave the arithmetic flags alone. */
static bool legacy_no_flags(u8 op)
{
	return (op >= 0x50 && op <= 0x5f) || op == 0x63 || op == 0x68 || op == 0x6a ||
	       (op >= 0x86 && op <= 0x8b) || op == 0x8d || (op >= 0x90 && op <= 0x99) ||
	       (op >= 0xa0 && op <= 0xa5) || (op >= 0xaa && op <= 0xad) ||
	       (op >= 0xb0 && op <= 0xbf) || op == 0xc8 || op == 0xc9 || op == 0xfa ||
	       op == 0xfb || op == 0xfc || op == 0xfd;
}

/* The 0F map's opcodes that leave them alone: SSE/MMX moves and arithmetic,
 * CMOVcc and SETcc aside, NOP, MOVZX/MOVSX, BSWAP, CPUID, RDTSC */
static bool map0f_no_flags(u8 op)
{
	return (op >= 0x10 && op <= 0x17) || (op >= 0x18 && op <= 0x1f) || op == 0x28 ||
	       op == 0x29 || op == 0x2b || op == 0x31 || (op >= 0x50 && op <= 0x7f) ||
	       op == 0xa2 || (op >= 0xb6 && op <= 0xb7) || (op >= 0xbe && op <= 0xbf) ||
	       (op >= 0xc2 && op <= 0xc6) || (op >= 0xc8 && op <= 0xcf) || op >= 0xd0;
}

bool x86_insn_arith_flags(const struct x86_insn *in, u32 *reads, u32 *writes)
{
	const u8 op = in->opcode, r = (in->modrm >> 3) & 7;
	const bool modrm = in->flags & X86_INSN_F_MODRM;
	u32 rd = 0, wr = 0;

	if (in->map == X86_MAP_LEGACY) {
		if (op < 0x40 && (op & 7) < 6) {
			/* ADD OR ADC SBB AND SUB XOR CMP */
			wr = X86_ARITH_ALL;
			rd = (op >> 3 == 2 || op >> 3 == 3) ? X86_ARITH_CF : 0;
		} else if (op == 0x80 || op == 0x81 || op == 0x83) {
			wr = X86_ARITH_ALL;
			rd = (r == 2 || r == 3) ? X86_ARITH_CF : 0;
		} else if (op == 0x84 || op == 0x85 || op == 0xa8 || op == 0xa9 || op == 0x69 ||
			   op == 0x6b) {
			wr = X86_ARITH_ALL;	/* TEST, IMUL */
		} else if ((op >= 0x70 && op <= 0x7f) || op == 0x9c) {
			rd = X86_ARITH_ALL;	/* Jcc, PUSHF */
		} else if (op == 0x9e) {
			wr = X86_ARITH_ALL & ~X86_ARITH_OF;	/* SAHF */
		} else if (op == 0x9f) {
			rd = X86_ARITH_ALL & ~X86_ARITH_OF;	/* LAHF */
		} else if (op == 0xa6 || op == 0xa7 || op == 0xae || op == 0xaf) {
			/* CMPS, SCAS: none written when a REP's count is 0 */
			wr = (in->prefixes & (X86_PFX_REP | X86_PFX_REPNE)) ? 0 : X86_ARITH_ALL;
		} else if (op == 0xc0 || op == 0xc1 || op == 0xd0 || op == 0xd1 ||
			   op == 0xd2 || op == 0xd3) {
			/* the shift group: by 0 (CL, or an imm8 masked to 0) writes none */
			bool cnt = op == 0xd0 || op == 0xd1 ||
				   ((op == 0xc0 || op == 0xc1) && (in->imm & 0x1f));

			rd = (r == 2 || r == 3) ? X86_ARITH_CF : 0;
			if (cnt)
				wr = r < 4 ? (X86_ARITH_CF | X86_ARITH_OF) : X86_ARITH_ALL;
		} else if (op == 0xf6 || op == 0xf7) {
			wr = r == 2 ? 0 : X86_ARITH_ALL;	/* NOT; TEST NEG MUL IMUL DIV IDIV */
		} else if ((op == 0xfe || op == 0xff) && r < 2) {
			wr = X86_ARITH_ALL & ~X86_ARITH_CF;	/* INC, DEC */
		} else if (op == 0xf8 || op == 0xf9) {
			wr = X86_ARITH_CF;	/* CLC, STC */
		} else if (op == 0xf5) {
			rd = wr = X86_ARITH_CF;	/* CMC */
		} else if ((op == 0xc6 || op == 0xc7 || op == 0x8f) && modrm && r == 0) {
			/* MOV imm, POP r/m */
		} else if ((op == 0xff && r == 6) || legacy_no_flags(op)) {
			/* PUSH r/m, and the table's */
		} else {
			return false;
		}
	} else if (in->map == X86_MAP_0F) {
		if ((op >= 0x40 && op <= 0x4f) || (op >= 0x80 && op <= 0x9f)) {
			rd = X86_ARITH_ALL;	/* CMOVcc, Jcc, SETcc */
		} else if (op == 0xa3 || op == 0xab || op == 0xb3 || op == 0xbb ||
			   (op == 0xba && r >= 4)) {
			wr = X86_ARITH_ALL & ~X86_ARITH_ZF;	/* BT BTS BTR BTC */
		} else if (op == 0xaf || op == 0xb0 || op == 0xb1 || op == 0xb8 || op == 0xbc ||
			   op == 0xbd || op == 0xc0 || op == 0xc1 || op == 0x2e || op == 0x2f) {
			/* IMUL CMPXCHG POPCNT BSF/TZCNT BSR/LZCNT XADD (U)COMIS */
			wr = X86_ARITH_ALL;
		} else if (!map0f_no_flags(op)) {
			return false;
		}
	} else {
		return false;
	}
	*reads = rd;
	*writes = wr;
	return true;
}
