// SPDX-License-Identifier: MIT
/*
 * Host tests of the branch-step sites (kernel/trace_engine/branch_sites.c) on real
 * code bytes in an RWX mapping: where a block ends and how many instructions
 * it retires, the INT3 written over the branch and the decoder seeing through
 * it, the inline cache of where a branch went, every refusal (a branch the
 * CPU must run, an INT3 not ours, bytes that do not decode, no branch in
 * reach, a poke the memory refuses, full tables), and the restore that
 * leaves the code byte for byte as it was.
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
#include "hosted.h"
#include "../../kernel/trace_engine/branch_sites.h"
#include <topaz/x86_insn.h>
#include <topaz/pt_model.h>
#include <topaz/errno.h>

#define CODE_SIZE	8192

static u8 *code;	/* RWX: the code under test */
static void *arena;
static u8 pristine[CODE_SIZE];
static size_t len;

static u64 at(size_t off) { return (u64)(uintptr_t)(code + off); }

static size_t put(const char *hex)
{
	size_t start = len;

	for (; *hex; hex++) {
		unsigned int v;

		if (*hex == ' ')
			continue;
		assert_int_equal(sscanf(hex, "%2x", &v), 1);
		code[len++] = (u8)v;
		hex++;
	}
	return start;
}

static int setup(void **state)
{
	(void)state;
	arena = hosted_page_alloc_setup(4);
	code = mmap(NULL, CODE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return -1;
	memset(code, 0x90, CODE_SIZE);	/* nops */
	len = 0;
	return branch_sites_init(16);
}

static int teardown(void **state)
{
	(void)state;
	branch_sites_exit();
	hosted_text_poke_refuse = false;
	munmap(code, CODE_SIZE);
	hosted_arena_free(arena, 4);
	return 0;
}

static void snapshot(void)
{
	memcpy(pristine, code, CODE_SIZE);
}

static void test_block_and_site(void **state)
{
	size_t t, jz, tail, ret;
	const struct branch_block *b, *b2;
	struct branch_sites_stats st;
	struct x86_insn in;
	bool created;
	int err;

	(void)state;
	t = put("b8 01 00 00 00");	/* mov $1, %eax */
	put("83 c0 02");		/* add $2, %eax */
	jz = put("74 02");		/* jz +2 */
	tail = put("90 90");
	ret = put("c3");
	snapshot();

	b = branch_block_get(at(t), &created, &err);
	assert_non_null(b);
	assert_true(created);
	assert_int_equal(b->start, at(t));
	assert_int_equal(b->insns, 2);
	assert_int_equal(b->site->ip, at(jz));
	assert_int_equal(b->site->cls, PTM_COND);
	assert_int_equal(b->site->orig, 0x74);
	assert_int_equal(b->site->emul.kind, BEMUL_JCC);
	assert_int_equal(code[jz], 0xcc);
	assert_ptr_equal(branch_site_find(at(jz)), b->site);
	assert_null(branch_site_find(at(t)));

	/* the decoder reads the branch, not the INT3 over it */
	assert_int_equal(branch_insn_decode(at(jz), &in), 0);
	assert_int_equal(in.cls, X86_INSN_JCC);
	assert_int_equal(in.length, 2);

	/* known blocks come back as they are; one starting on the site counts 0 */
	assert_ptr_equal(branch_block_get(at(t), &created, &err), b);
	assert_false(created);
	b2 = branch_block_get(at(jz), &created, &err);
	assert_non_null(b2);
	assert_int_equal(b2->insns, 0);
	assert_ptr_equal(b2->site, b->site);

	/* both ways out of the Jcc end at the RET */
	b2 = branch_block_get(at(tail), &created, &err);
	assert_non_null(b2);
	assert_int_equal(b2->insns, 2);
	assert_int_equal(b2->site->ip, at(ret));
	assert_int_equal(b2->site->cls, PTM_RET);
	assert_int_equal(branch_block_get(at(ret), &created, &err)->insns, 0);

	assert_int_equal(branch_block_count(at(t), at(jz), 100), 2);
	assert_int_equal(branch_block_count(at(t), at(t), 100), 0);
	assert_int_equal(branch_block_count(at(t), at(t) + 1, 100), 100);	/* not on the path */

	branch_sites_get_stats(&st);
	assert_int_equal(st.sites, 2);
	assert_int_equal(st.blocks, 4);
	assert_int_equal(st.patched, 2);
	assert_int_equal(branch_sites_restore(), 2);
	assert_memory_equal(code, pristine, CODE_SIZE);
	assert_null(branch_site_find(at(jz)));
	branch_sites_get_stats(&st);
	assert_int_equal(st.sites + st.blocks, 0);

	/* and it all comes back after a restore */
	b = branch_block_get(at(t), &created, &err);
	assert_non_null(b);
	assert_true(created);
	assert_int_equal(code[jz], 0xcc);
}

static void test_next_block_cache(void **state)
{
	size_t t, jmp, l1, l2;
	const struct branch_block *b, *n1, *n2;
	struct branch_site *s;
	bool created;
	int err;

	(void)state;
	t = put("90");
	jmp = put("ff e0");		/* jmp *%rax */
	l1 = put("90 c3");
	l2 = put("90 90 c3");
	b = branch_block_get(at(t), &created, &err);
	assert_non_null(b);
	s = b->site;
	assert_int_equal(s->ip, at(jmp));
	assert_int_equal(s->cls, PTM_JUMP_IND);

	n1 = branch_site_next(s, at(l1), false, &created, &err);
	assert_non_null(n1);
	assert_true(created);
	assert_int_equal(n1->insns, 1);
	assert_ptr_equal(s->next[0], n1);
	assert_ptr_equal(branch_site_next(s, at(l1), false, &created, &err), n1);
	assert_false(created);
	/* another target: looked up, and remembered instead */
	n2 = branch_site_next(s, at(l2), false, &created, &err);
	assert_non_null(n2);
	assert_int_equal(n2->insns, 2);
	assert_ptr_equal(s->next[0], n2);
	/* a site given back to the CPU is not followed through the cache */
	branch_site_disable(n2->site);
	assert_null(branch_site_next(s, at(l2), false, &created, &err));
	assert_int_equal(err, -EOPNOTSUPP);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *hex;
		int err;
		const char *what;
	} cases[] = {
		{ "90 0f 05", -EOPNOTSUPP, "syscall: the CPU runs it" },
		{ "90 90 cc", -EOPNOTSUPP, "an INT3 that is not ours" },
		{ "90 66 e9 00 00", -EOPNOTSUPP, "jmp rel16 (vendors differ)" },
		{ "90 64 ff 20", -EOPNOTSUPP, "jmp *%fs:(%rax)" },
		{ "90 cb", -EOPNOTSUPP, "lret" },
		{ "90 06", -EINVAL, "push %es: invalid in 64-bit mode" },
	};
	const struct branch_block *b;
	bool created;
	int err;

	(void)state;
	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t start;

		len = 0;
		memset(code, 0x90, CODE_SIZE);
		start = put(cases[i].hex);
		snapshot();
		err = 0;
		b = branch_block_get(at(start), &created, &err);
		if (b || err != cases[i].err)
			fail_msg("%s: block %p, error %d (want %d)", cases[i].what, (void *)b, err,
				 cases[i].err);
		assert_memory_equal(code, pristine, CODE_SIZE);
	}
	/* no branch within reach: a long run of NOPs */
	memset(code, 0x90, CODE_SIZE);
	assert_null(branch_block_get(at(0), &created, &err));
	assert_int_equal(err, -ENOENT);
}

static void test_poke_refused(void **state)
{
	size_t t;
	struct branch_sites_stats st;
	bool created;
	int err;

	(void)state;
	t = put("90 90 c3");
	snapshot();
	hosted_text_poke_refuse = true;
	assert_null(branch_block_get(at(t), &created, &err));
	assert_int_equal(err, -EPERM);
	assert_memory_equal(code, pristine, CODE_SIZE);
	assert_null(branch_site_find(at(t + 2)));
	branch_sites_get_stats(&st);
	assert_int_equal(st.sites, 0);
	/* the slot it had is free again: the same site works once memory takes it */
	hosted_text_poke_refuse = false;
	assert_non_null(branch_block_get(at(t), &created, &err));
	assert_int_equal(code[t + 2], 0xcc);
}

static void test_tables_full(void **state)
{
	struct branch_sites_stats st;
	bool created;
	int err;
	unsigned int made = 0;

	(void)state;
	/* 20 one-instruction blocks, each ending in a RET of its own */
	for (unsigned int i = 0; i < 20; i++)
		put("90 c3");
	snapshot();
	for (unsigned int i = 0; i < 20; i++) {
		if (branch_block_get(at(2 * i), &created, &err))
			made++;
		else
			assert_int_equal(err, -ENOSPC);
	}
	assert_int_equal(made, 16);	/* branch_sites_init(16) */
	branch_sites_get_stats(&st);
	assert_int_equal(st.sites, 16);
	assert_int_equal(st.full, 4);
	assert_int_equal(branch_sites_restore(), 16);
	assert_memory_equal(code, pristine, CODE_SIZE);
	assert_int_equal(branch_sites_init(24), -EINVAL);	/* not a power of two */
}

static void test_disable_gives_the_byte_back(void **state)
{
	size_t t;
	const struct branch_block *b;
	bool created;
	int err;

	(void)state;
	t = put("90 ff 10");	/* call *(%rax) */
	b = branch_block_get(at(t), &created, &err);
	assert_non_null(b);
	assert_int_equal(b->site->cls, PTM_CALL_IND);
	branch_site_disable(b->site);
	assert_int_equal(code[t + 1], 0xff);
	assert_null(branch_site_find(at(t + 1)));
	assert_null(branch_block_get(at(t), &created, &err));
	assert_int_equal(err, -EOPNOTSUPP);
	/* the restore leaves a disabled site alone (its byte is back already) */
	assert_int_equal(branch_sites_restore(), 0);
	assert_int_equal(code[t + 1], 0xff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_block_and_site, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_block_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poke_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tables_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disable_gives_the_byte_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
