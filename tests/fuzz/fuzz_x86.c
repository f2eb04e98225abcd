// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the x86-64 instruction decoder (arch/x86/lib/insn.c).
 *
 * Feeds: the input bytes (up to one page) copied so that the last byte is the
 * last readable byte of a page followed by a PROT_NONE guard page; then
 * x86_insn_decode() and x86_insn_decode_flags(X86_DECODE_AMD_BRANCH) at every
 * offset of the input, with avail = the bytes left to the guard. An
 * instruction that decodes is decoded again cut one byte short (also placed
 * against the guard) and with all its bytes plus what follows.
 * Must hold: no read past avail (the guard page turns any over-read into a
 * SEGV), no UBSan report, no crash, no leak; the result is 0, -EINVAL,
 * -E2BIG or -ENODATA, and -ENODATA never when 15 or more bytes were there;
 * a decoded instruction has 1 <= length <= min(avail, 15), its class and
 * COFI type in range, its parts (prefixes, ModRM, displacement, immediate or
 * rel) inside its length; x86_insn_next_ip() and, for a direct branch,
 * x86_insn_branch_target() do not trap; the same bytes cut one byte short
 * give -ENODATA, and with more bytes available give the same instruction.
 * Capstone cross-check, conservative: for an instruction we decode with no
 * legacy prefix (one REX at most), in the one-byte, 0F, 0F 38 or 0F 3A map,
 * that Capstone decodes too, the lengths must agree, and the classes too when
 * Capstone's is one we map. tests/host/test_x86_insn.c lists the verified
 * Capstone disagreements; none of them falls inside that subset except UD0
 * and UD1 (0F FF, 0F B9: Capstone takes no ModRM), which are skipped.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* Capstone's x86.h names an enum "x86_insn", the tag of our struct. */
#define x86_insn capstone_x86_insn_id
#include <capstone/capstone.h>
#undef x86_insn
#include "../host/hosted.h"
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/x86_insn.h>
#include "../host/x86_capstone.h"

#define PAGE		4096u
#define XCHECK_OFFSETS	64	/* Capstone is slow: the first offsets only */
#define IP		0x401000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each: one readable page, then a PROT_NONE one. The input goes against
 * @page's guard, the cut copies of one instruction against @scratch's. */
static u8 *page, *scratch;
static csh cs;
static cs_insn *cs_in;

static void die(const char *what, const u8 *b, size_t n, int ret, const struct x86_insn *in)
{
	fprintf(stderr, "fuzz_x86: %s: ret %d len %u cls %s; bytes", what, ret,
		in ? in->length : 0, in ? x86_insn_class_name(in->cls) : "-");
	for (size_t i = 0; i < n && i < 16; i++)
		fprintf(stderr, " %02x", b[i]);
	fprintf(stderr, "\n");
	abort();
}

static u8 *guarded_page(void)
{
	u8 *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + PAGE, PAGE, PROT_NONE))
		abort();
	return p;
}

static void setup(void)
{
	page = guarded_page();
	scratch = guarded_page();
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK ||
	    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || !(cs_in = cs_malloc(cs)))
		abort();
	hosted_console_quiet = true;
}

/* @n bytes placed to end at @pg's guard page; returns where they start. */
static const u8 *at_guard(u8 *pg, const u8 *b, size_t n)
{
	u8 *p = pg + PAGE - n;

	memmove(p, b, n);
	return p;
}

/* Whether @in lies in the subset where Capstone 4 follows the SDM. */
static bool cs_comparable(const struct x86_insn *in)
{
	if ((in->prefixes & ~X86_PFX_REX) || (in->flags & X86_INSN_F_REX_IGNORED))
		return false;
	if (in->map != X86_MAP_LEGACY && in->map != X86_MAP_0F && in->map != X86_MAP_0F38 &&
	    in->map != X86_MAP_0F3A)
		return false;
	/* UD0, UD1: Capstone ends them before the ModRM (EX_UD_MODRM) */
	return !(in->map == X86_MAP_0F && (in->opcode == 0xb9 || in->opcode == 0xff));
}

static void cross_check(const u8 *b, size_t avail, const struct x86_insn *in)
{
	const uint8_t *p = b;
	size_t sz = avail;
	uint64_t addr = IP;
	enum x86_insn_class c;

	if (!cs_comparable(in) || !cs_disasm_iter(cs, &p, &sz, &addr, cs_in))
		return;
	if (cs_in->size != in->length)
		die("length differs from Capstone's", b, avail, 0, in);
	c = cs_class(cs_in);
	if (c != X86_INSN_NR_CLASSES && c != in->cls) {
		fprintf(stderr, "fuzz_x86: Capstone: %s %s\n", cs_in->mnemonic, cs_in->op_str);
		die("class differs from Capstone's", b, avail, 0, in);
	}
}

/* The decoded instruction is well formed. */
static void check_insn(const u8 *b, size_t avail, const struct x86_insn *in)
{
	unsigned int parts;

	if (!in->length || in->length > X86_INSN_MAX_LEN || in->length > avail)
		die("length out of range", b, avail, 0, in);
	if ((unsigned int)in->cls >= X86_INSN_NR_CLASSES || (unsigned int)in->cofi > X86_COFI_FAULT ||
	    in->map > X86_MAP_EVEX6)
		die("class, COFI or map out of range", b, avail, 0, in);
	if ((in->cofi == X86_COFI_NONE) != !x86_insn_is_branch(in))
		die("is_branch disagrees with the COFI type", b, avail, 0, in);
	if (in->nprefix >= in->length)
		die("prefixes fill the instruction", b, avail, 0, in);
	parts = in->disp_size + in->imm_size + in->rel_size;
	if (in->flags & X86_INSN_F_MODRM) {
		if (in->modrm_off < in->nprefix || in->modrm_off >= in->length ||
		    b[in->modrm_off] != in->modrm)
			die("ModRM outside the instruction", b, avail, 0, in);
		parts += 1 + !!(in->flags & X86_INSN_F_SIB);
		if (in->modrm_off + parts > in->length)
			die("ModRM operand and immediates do not fit", b, avail, 0, in);
	} else if (in->flags & (X86_INSN_F_SIB | X86_INSN_F_MEM | X86_INSN_F_RIPREL) ||
		   in->disp_size) {
		die("memory operand without ModRM", b, avail, 0, in);
	}
	if (in->nprefix + 1 + parts > in->length)
		die("parts longer than the instruction", b, avail, 0, in);
	if (in->disp_size != 0 && in->disp_size != 1 && in->disp_size != 4)
		die("displacement size", b, avail, 0, in);
	if (in->imm_size > 8)
		die("immediate size", b, avail, 0, in);
	if (!!(in->flags & X86_INSN_F_REL) != !!in->rel_size ||
	    (in->rel_size != 0 && in->rel_size != 1 && in->rel_size != 2 && in->rel_size != 4))
		die("rel flag and size", b, avail, 0, in);
	if (in->opsize != 2 && in->opsize != 4 && in->opsize != 8)
		die("operand size", b, avail, 0, in);
	if (in->addrsize != 4 && in->addrsize != 8)
		die("address size", b, avail, 0, in);
	if (x86_insn_next_ip(in, IP) != IP + in->length)
		die("next IP", b, avail, 0, in);
	if (x86_insn_has_target(in)) {
		u64 t = x86_insn_branch_target(in, ~0ull - 7);	/* wraps: unsigned, no trap */

		(void)t;
		t = x86_insn_branch_target(in, IP);
		if (in->opsize != 2 && t != IP + in->length + (u64)(s64)in->rel)
			die("branch target", b, avail, 0, in);
	}
	if (!x86_insn_class_name(in->cls)[0] || !strcmp(x86_insn_class_name(in->cls), "?"))
		die("class without a name", b, avail, 0, in);
}

static void decode_at(const u8 *b, size_t avail, unsigned int flags, bool xcheck)
{
	struct x86_insn in, again;
	u8 copy[X86_INSN_MAX_LEN];
	int ret = flags ? x86_insn_decode_flags(b, avail, flags, &in) : x86_insn_decode(b, avail, &in);

	if (ret != 0 && ret != -EINVAL && ret != -E2BIG && ret != -ENODATA)
		die("unexpected return", b, avail, ret, NULL);
	if (ret == -ENODATA && avail >= X86_INSN_MAX_LEN)
		die("-ENODATA with 15 bytes available", b, avail, ret, NULL);
	if (ret) {
		static const struct x86_insn zero;

		if (memcmp(&in, &zero, sizeof(in)))
			die("output not zeroed on error", b, avail, ret, NULL);
		return;
	}
	check_insn(b, avail, &in);
	if (xcheck && !flags)
		cross_check(b, avail, &in);

	/* one byte short, against the guard: an instruction cut short */
	memcpy(copy, b, in.length);
	ret = x86_insn_decode_flags(at_guard(scratch, copy, in.length - 1u), in.length - 1u, flags, &again);
	if (ret != -ENODATA)
		die("cut one byte short, not -ENODATA", copy, in.length, ret, &in);
	/* exactly its bytes, against the guard: the same instruction */
	ret = x86_insn_decode_flags(at_guard(scratch, copy, in.length), in.length, flags, &again);
	if (ret || memcmp(&in, &again, sizeof(in)))
		die("its own bytes decode differently", copy, in.length, ret, &in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const u8 *b;

	if (!page)
		setup();
	if (!size)
		return 0;
	if (size > PAGE)
		size = PAGE;
	b = at_guard(page, data, size);
	for (size_t off = 0; off < size; off++) {
		decode_at(b + off, size - off, 0, off < XCHECK_OFFSETS);
		decode_at(b + off, size - off, X86_DECODE_AMD_BRANCH, false);
	}
	return 0;
}
