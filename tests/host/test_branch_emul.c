// SPDX-License-Identifier: MIT
/*
 * Host tests of the branch emulator that branch-step tracing runs under its
 * INT3s. The conditional forms (Jcc rel8/rel32, JRCXZ/JECXZ, LOOP/LOOPE/
 * LOOPNE) are checked against this CPU executing the same bytes, for every
 * condition and every combination of the flags they read; the indirect forms
 * against the effective address Capstone computes from its own decoding of a
 * generated corpus of ModRM/SIB/displacement/prefix encodings. Then RET,
 * CALL's push, faults (-EFAULT with the registers untouched) and the forms
 * the emulator must leave to the CPU.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#define x86_insn capstone_x86_insn_id
#include <capstone/capstone.h>
#undef x86_insn
#include "hosted.h"
#include "../../kernel/trace_engine/branch_emul.h"
#include <topaz/x86_insn.h>
#include <topaz/errno.h>

#define F_CF	X86_EFLAGS_CF
#define F_PF	X86_EFLAGS_PF
#define F_ZF	X86_EFLAGS_ZF
#define F_SF	X86_EFLAGS_SF
#define F_OF	X86_EFLAGS_OF

static u8 *page;	/* RWX: the code the CPU runs */

static int setup(void **state)
{
	(void)state;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	return page == MAP_FAILED ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(page, 4096);
	return 0;
}

/* The flags value of combination @i (0-31) of CF, PF, ZF, SF, OF. */
static u64 flags_of(unsigned int i)
{
	static const u64 bit[5] = { F_CF, F_PF, F_ZF, F_SF, F_OF };
	u64 f = 0x2;

	for (unsigned int b = 0; b < 5; b++)
		if (i & (1u << b))
			f |= bit[b];
	return f;
}

/*
 * Run @insn (a conditional branch whose displacement the builder fills in,
 * @rel_size bytes at its end) on the CPU with @flags and RCX = @rcx: returns
 * taken, and RCX afterwards in *@rcx_out. Also emulates the same bytes at the
 * same address and requires the same outcome.
 */
static bool run_both(const u8 *insn, size_t len, unsigned int rel_size, u64 flags, u64 rcx)
{
	/* push rdi; popfq; mov rcx, rsi; <insn>; xor eax,eax; jmp +5;
	 * mov eax,1; mov [rdx], rcx; ret */
	static const u8 pro[] = { 0x57, 0x9d, 0x48, 0x89, 0xf1 };
	static const u8 nt[] = { 0x31, 0xc0, 0xeb, 0x05 };
	static const u8 tk[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0x48, 0x89, 0x0a, 0xc3 };
	size_t at = sizeof(pro), n = 0;
	u64 rcx_cpu = 0, ip;
	struct x86_insn in;
	struct branch_emul e;
	struct branch_result res;
	struct pt_regs r = { 0 };
	u64 (*fn)(u64, u64, u64 *);
	bool taken;

	memcpy(page, pro, sizeof(pro));
	memcpy(page + at, insn, len);
	memset(page + at + len - rel_size, 0, rel_size);
	page[at + len - rel_size] = sizeof(nt);
	n = at + len;
	memcpy(page + n, nt, sizeof(nt));
	memcpy(page + n + sizeof(nt), tk, sizeof(tk));
	fn = (u64 (*)(u64, u64, u64 *))(void *)page;
	taken = fn(flags, rcx, &rcx_cpu) == 1;

	ip = (u64)(uintptr_t)(page + at);
	assert_int_equal(x86_insn_decode(page + at, len, &in), 0);
	assert_int_equal(in.length, len);
	assert_int_equal(branch_emul_prepare(&in, ip, &e), 0);
	r.rflags = flags;
	r.rcx = rcx;
	r.rip = ip;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	if (res.taken != taken || r.rcx != rcx_cpu) {
		fprintf(stderr, "bytes %02x %02x, flags %#llx, rcx %#llx: CPU %s rcx %#llx, emulator %s rcx %#llx\n",
			insn[0], insn[1], flags, rcx,
			taken ? "taken" : "not taken", rcx_cpu,
			res.taken ? "taken" : "not taken", r.rcx);
		fail();
	}
	assert_int_equal(res.next, ip + len);
	assert_int_equal(r.rip, taken ? ip + len + sizeof(nt) : ip + len);
	assert_int_equal(res.target, r.rip);
	return taken;
}

static void test_jcc_against_cpu(void **state)
{
	unsigned int taken = 0, runs = 0;

	(void)state;
	for (unsigned int cc = 0; cc < 16; cc++)
		for (unsigned int f = 0; f < 32; f++) {
			const u8 short_form[] = { (u8)(0x70 | cc), 0 };
			const u8 near_form[] = { 0x0f, (u8)(0x80 | cc), 0, 0, 0, 0 };
			const u8 hinted[] = { 0x3e, (u8)(0x70 | cc), 0 };
			bool t = run_both(short_form, sizeof(short_form), 1, flags_of(f), 0);

			assert_int_equal(run_both(near_form, sizeof(near_form), 4, flags_of(f), 0), t);
			assert_int_equal(run_both(hinted, sizeof(hinted), 1, flags_of(f), 0), t);
			assert_int_equal(branch_emul_cond(cc, flags_of(f)), t);
			taken += t;
			runs++;
		}
	/* each condition holds for some flags and not others: half overall */
	assert_int_equal(runs, 512);
	assert_int_equal(taken, 256);
}

static void test_loop_jrcxz_against_cpu(void **state)
{
	static const u64 counts[] = { 0, 1, 2, 0x100000000ull, 0x100000001ull, ~0ull };

	(void)state;
	for (unsigned int c = 0; c < ARRAY_SIZE(counts); c++)
		for (unsigned int f = 0; f < 32; f += 4) {	/* ZF is bit 2 of f */
			const u8 loop[] = { 0xe2, 0 }, loope[] = { 0xe1, 0 }, loopne[] = { 0xe0, 0 };
			const u8 jrcxz[] = { 0xe3, 0 }, jecxz[] = { 0x67, 0xe3, 0 };

			run_both(loop, 2, 1, flags_of(f), counts[c]);
			run_both(loope, 2, 1, flags_of(f), counts[c]);
			run_both(loopne, 2, 1, flags_of(f), counts[c]);
			run_both(jrcxz, 2, 1, flags_of(f), counts[c]);
			run_both(jecxz, 3, 1, flags_of(f), counts[c]);
		}
}

/* ------------------------------------------------------------ indirect */

static u64 last_read, last_write, write_val, read_val;
static unsigned int reads, writes;

static int fake_read(u64 addr, u64 *val)
{
	last_read = addr;
	reads++;
	*val = read_val;
	return 0;
}

static int fake_write(u64 addr, u64 val)
{
	last_write = addr;
	write_val = val;
	writes++;
	return 0;
}

/* Capstone's register id as our 0-15 number, or -1. */
static int gpr_number(unsigned int reg)
{
	static const unsigned int q[16] = {
		X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
		X86_REG_RSI, X86_REG_RDI, X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11,
		X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15,
	};

	for (int i = 0; i < 16; i++)
		if (q[i] == reg)
			return i;
	return -1;
}

static u64 rnd_state = 0x9e3779b97f4a7c15ull;
static u64 rnd(void) { return hosted_rand(&rnd_state); }

static void test_indirect_against_capstone(void **state)
{
	static const u8 prefixes[][2] = { { 0 }, { 0x3e }, { 0xf2 }, { 0x2e }, { 0x26 } };
	csh cs;
	cs_insn *ci;
	unsigned int checked = 0, regs_forms = 0;
	const u64 ip = 0x7f0000001000ull;

	(void)state;
	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	hosted_nofault_read = fake_read;
	hosted_nofault_write = fake_write;
	for (unsigned int p = 0; p < ARRAY_SIZE(prefixes); p++)
		for (unsigned int rex = 0x3f; rex < 0x50; rex++)
			for (unsigned int ext = 2; ext <= 4; ext += 2)
				for (unsigned int modrm = 0; modrm < 256; modrm++)
					for (unsigned int sib = 0; sib < 256; sib += ((modrm & 7) == 4 && modrm < 0xc0) ? 1 : 256) {
		u8 b[16];
		size_t n = 0;
		struct x86_insn in;
		struct branch_emul e;
		struct branch_result res;
		struct pt_regs r;
		u64 ref, *gp;
		int base, index;

		if (((modrm >> 3) & 7) != ext)
			continue;
		if (prefixes[p][0])
			b[n++] = prefixes[p][0];
		if (rex >= 0x40)
			b[n++] = (u8)rex;
		b[n++] = 0xff;
		b[n++] = (u8)modrm;
		if ((modrm & 7) == 4 && modrm < 0xc0)
			b[n++] = (u8)sib;
		for (unsigned int i = 0; i < 4; i++)
			b[n + i] = (u8)rnd();
		n += 4;	/* displacement bytes: the decoder takes what it needs */
		if (x86_insn_decode(b, n, &in))
			continue;
		if (cs_disasm(cs, b, in.length, ip, 1, &ci) != 1)
			continue;
		assert_int_equal(branch_emul_prepare(&in, ip, &e), 0);
		memset(&r, 0, sizeof(r));
		for (unsigned int i = 0; i < 16; i++)
			*branch_emul_reg(&r, i) = rnd() >> (rnd() & 63);
		r.rsp = 0x7ffff000ull + (rnd() & 0xff0);
		read_val = 0x00007fffdead0000ull | (rnd() & 0xfff0);
		reads = writes = 0;
		{
			const cs_x86_op *op = &ci->detail->x86.operands[0];

			if (op->type == X86_OP_REG) {
				ref = *branch_emul_reg(&r, (unsigned int)gpr_number(op->reg));
				read_val = ref = ref & 0x00007fffffffffffull;
				*branch_emul_reg(&r, (unsigned int)gpr_number(op->reg)) = ref;
				regs_forms++;
			} else {
				assert_int_equal(op->type, X86_OP_MEM);
				base = op->mem.base == X86_REG_RIP ? -2 : gpr_number(op->mem.base);
				index = gpr_number(op->mem.index);
				ref = (u64)op->mem.disp;
				if (base == -2)
					ref += ip + in.length;
				else if (base >= 0)
					ref += *branch_emul_reg(&r, (unsigned int)base);
				if (index >= 0)
					ref += *branch_emul_reg(&r, (unsigned int)index) * (u64)op->mem.scale;
				if (ref < 4096)
					ref = 0;	/* lands in the faulting page: skip */
			}
		}
		u64 rsp0 = r.rsp;

		if (!ref) {
			cs_free(ci, 1);
			continue;
		}
		assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
		assert_int_equal(r.rip, read_val);
		if (((modrm >> 6) != 3)) {
			assert_int_equal(reads, 1);
			if (last_read != ref) {
				fprintf(stderr, "%s %s: Capstone's address %#llx, ours %#llx\n", ci->mnemonic,
					ci->op_str, ref, last_read);
				fail();
			}
		}
		gp = &r.rsp;
		if (ext == 2) {
			assert_int_equal(writes, 1);
			assert_int_equal(last_write, rsp0 - 8);
			assert_int_equal(write_val, ip + in.length);
			assert_int_equal(*gp, rsp0 - 8);
		} else {
			assert_int_equal(writes, 0);
			assert_int_equal(*gp, rsp0);
		}
		checked++;
		cs_free(ci, 1);
	}
	hosted_nofault_read = NULL;
	hosted_nofault_write = NULL;
	cs_close(&cs);
	printf("# indirect JMP/CALL forms checked against Capstone: %u (%u register forms)\n",
	       checked, regs_forms);
	assert_true(checked > 20000);
}

/* ------------------------------------------------------------ the rest */

static int decode_prepare(const char *hex, u64 ip, struct x86_insn *in, struct branch_emul *e)
{
	u8 b[16];
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned int v;

		if (*hex == ' ') {
			hex--;
			continue;
		}
		sscanf(hex, "%2x", &v);
		b[n++] = (u8)v;
	}
	assert_int_equal(x86_insn_decode(b, n, in), 0);
	return branch_emul_prepare(in, ip, e);
}

static void test_ret_call_push(void **state)
{
	u64 stack[4] = { 0x00007fff12345678ull, 0, 0, 0 };
	struct x86_insn in;
	struct branch_emul e;
	struct branch_result res;
	struct pt_regs r = { 0 };
	const u64 ip = 0x401000;

	(void)state;
	assert_int_equal(decode_prepare("c3", ip, &in, &e), 0);
	r.rsp = (u64)(uintptr_t)stack;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(r.rip, stack[0]);
	assert_int_equal(r.rsp, (u64)(uintptr_t)&stack[1]);

	assert_int_equal(decode_prepare("c21000", ip, &in, &e), 0);	/* ret $16 */
	r.rsp = (u64)(uintptr_t)stack;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(r.rsp, (u64)(uintptr_t)stack + 24);

	assert_int_equal(decode_prepare("f3c3", ip, &in, &e), 0);	/* rep ret */
	assert_int_equal(decode_prepare("e8 00010000", ip, &in, &e), 0);	/* call +0x100 */
	r.rsp = (u64)(uintptr_t)&stack[2];
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(r.rip, ip + 5 + 0x100);
	assert_int_equal(r.rsp, (u64)(uintptr_t)&stack[1]);
	assert_int_equal(stack[1], ip + 5);

	assert_int_equal(decode_prepare("eb fe", ip, &in, &e), 0);	/* jmp . */
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(r.rip, ip);

	/* PTWRITE rax and PTWRITE ecx: the payload from the register */
	assert_int_equal(decode_prepare("f3 48 0f ae e0", ip, &in, &e), 0);
	r.rax = 0x1122334455667788ull;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(res.payload, 0x1122334455667788ull);
	assert_int_equal(e.size, 8);
	assert_int_equal(r.rip, ip + 5);
	assert_int_equal(decode_prepare("f3 0f ae e1", ip, &in, &e), 0);
	r.rcx = 0x1122334455667788ull;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), 0);
	assert_int_equal(res.payload, 0x55667788ull);
}

static void test_faults_leave_registers(void **state)
{
	struct x86_insn in;
	struct branch_emul e;
	struct branch_result res;
	struct pt_regs r = { 0 }, before;
	u64 slot = 0x0000800000000000ull;	/* non-canonical */
	const u64 ip = 0x401000;

	(void)state;
	/* call *(%rax) with RAX in the faulting page */
	assert_int_equal(decode_prepare("ff10", ip, &in, &e), 0);
	r.rax = 0x10;
	r.rsp = 0x7fff0000;
	r.rip = ip + 1;
	before = r;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), -EFAULT);
	assert_memory_equal(&r, &before, sizeof(r));
	/* push onto a stack in the faulting page */
	assert_int_equal(decode_prepare("ffd0", ip, &in, &e), 0);	/* call *%rax */
	r.rax = 0x401000;
	r.rsp = 0x800;
	before = r;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), -EFAULT);
	assert_memory_equal(&r, &before, sizeof(r));
	/* ret to a non-canonical address: the CPU's #GP, nothing changed */
	assert_int_equal(decode_prepare("c3", ip, &in, &e), 0);
	r.rsp = (u64)(uintptr_t)&slot;
	before = r;
	assert_int_equal(branch_emul_run(&e, ip, &r, &res), -EFAULT);
	assert_memory_equal(&r, &before, sizeof(r));
	/* LOOP to a non-canonical address keeps RCX too */
	assert_int_equal(decode_prepare("e2 10", 0x00007ffffffffff0ull, &in, &e), 0);
	r.rcx = 5;
	before = r;
	assert_int_equal(branch_emul_run(&e, 0x00007ffffffffff0ull, &r, &res), -EFAULT);
	assert_memory_equal(&r, &before, sizeof(r));
}

static void test_left_to_the_cpu(void **state)
{
	static const char *const forms[] = {
		"66 e9 00000000",		/* jmp rel16: Intel and AMD differ */
		"66 74 10",		/* jz with 66 */
		"66 ff e0",		/* jmp *%ax */
		"64 ff 20",		/* jmp *%fs:(%rax): segment base */
		"65 ff 10",		/* call *%gs:(%rax) */
		"67 ff 20",		/* jmp *(%eax) */
		"67 e2 10",		/* loop with ECX */
		"66 c3",		/* retw */
		"cb",			/* lret */
		"ff 28",		/* ljmp *(%rax) */
		"cd 80",		/* int $0x80 */
		"0f 05",		/* syscall */
		"48 cf",		/* iretq */
		"0f 0b",		/* ud2 */
		"90",			/* nop */
		"f3 0f ae 20",		/* ptwrite (%rax): reads memory itself */
	};
	struct x86_insn in;
	struct branch_emul e;

	(void)state;
	for (unsigned int i = 0; i < ARRAY_SIZE(forms); i++) {
		int rc = decode_prepare(forms[i], 0x401000, &in, &e);

		if (rc != -EOPNOTSUPP)
			fprintf(stderr, "%s: prepared (%d), should be left to the CPU\n", forms[i], rc);
		assert_int_equal(rc, -EOPNOTSUPP);
		assert_int_equal(e.kind, BEMUL_NONE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jcc_against_cpu),
		cmocka_unit_test(test_loop_jrcxz_against_cpu),
		cmocka_unit_test(test_indirect_against_capstone),
		cmocka_unit_test(test_ret_call_push),
		cmocka_unit_test(test_faults_leave_registers),
		cmocka_unit_test(test_left_to_the_cpu),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
