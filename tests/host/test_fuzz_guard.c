// SPDX-License-Identifier: MIT
/* Host tests of the guarded heap's bookkeeping (kernel/fuzz/guard_heap.c,
 * fw.fuzz.guard=pool): the layout (the last byte less the alignment's
 * padding ends a page, a guard page after it), which pages are present, the
 * lookup of a faulting address, bad and double frees, the quarantine of the
 * last frees, and the arena running out. A page table is modelled by a
 * present flag per page, set through the heap's protect callback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hosted.h"
#include <topaz/fuzz.h>
#include <topaz/slab.h>
#include <topaz/errno.h>

#define BASE	0x100000ull	/* the arena's address (nothing is accessed there) */
#define NPAGES	256u
#define PG	FUZZ_GUARD_PAGE

static bool present[NPAGES];
static unsigned int protect_calls;
static bool protect_fails;

static int protect(void *ctx, u64 addr, u64 len, bool on)
{
	assert_ptr_equal(ctx, present);
	assert_int_equal(addr % PG, 0);
	assert_int_equal(len % PG, 0);
	assert_true(addr >= BASE && addr + len <= BASE + NPAGES * PG);
	protect_calls++;
	if (protect_fails)
		return -EIO;
	for (u64 a = addr; a < addr + len; a += PG)
		present[(a - BASE) / PG] = on;
	return 0;
}

static bool is_present(u64 addr)
{
	return present[(addr - BASE) / PG];
}

static void *arena;

static int group_setup(void **state)
{
	arena = hosted_page_alloc_setup(16);
	kmem_cache_init();
	return 0;
}

static int group_teardown(void **state)
{
	free(arena);
	return 0;
}

static int setup(void **state)
{
	static struct fuzz_guard_heap h;

	for (unsigned int i = 0; i < NPAGES; i++)
		present[i] = true;	/* the arena as the firmware gave it */
	protect_calls = 0;
	protect_fails = false;
	assert_int_equal(fuzz_guard_init(&h, BASE, NPAGES, protect, present), 0);
	*state = &h;
	return 0;
}

static int teardown(void **state)
{
	fuzz_guard_destroy(*state);
	return 0;
}

static void test_init_bad(void **state)
{
	struct fuzz_guard_heap h;

	assert_int_equal(fuzz_guard_init(&h, BASE + 8, NPAGES, protect, present), -EINVAL);
	assert_int_equal(fuzz_guard_init(&h, BASE, 1, protect, present), -EINVAL);
	assert_int_equal(fuzz_guard_init(&h, BASE, NPAGES, NULL, present), -EINVAL);
}

/* pool: the end of the size rounded up to 8 is a page end; pages after are guards */
static void test_layout(void **state)
{
	struct fuzz_guard_heap *h = *state;
	static const u64 sizes[] = { 1, 8, 13, 4096, 4097, 0 };
	const struct fuzz_guard_alloc *a;

	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		u64 size = sizes[i], p = fuzz_guard_alloc(h, size, 8, false);
		u64 rounded = (size + 7) & ~7ull, end = p + rounded;

		assert_int_not_equal(p, 0);
		assert_int_equal(p % 8, 0);
		assert_int_equal(end % PG, 0);
		assert_false(is_present(end));	/* the guard page */
		if (size)
			assert_true(is_present(p) && is_present(end - 1));
		assert_int_equal(fuzz_guard_lookup(h, end, &a), FUZZ_GUARD_OVERFLOW);
		assert_int_equal(a->addr, p);
		assert_int_equal(a->size, size);
		if (size) {
			assert_int_equal(fuzz_guard_lookup(h, p + size - 1, &a), FUZZ_GUARD_INSIDE);
			/* the padding to 8: past the end, but present (no fault there) */
			assert_int_equal(fuzz_guard_lookup(h, p + size, &a), FUZZ_GUARD_OVERFLOW);
			if (p % PG)
				assert_int_equal(fuzz_guard_lookup(h, p - 1, &a), FUZZ_GUARD_UNDERFLOW);
		}
	}
	assert_int_equal(h->live, 6);
	assert_int_equal(fuzz_guard_lookup(h, BASE - 1, &a), FUZZ_GUARD_OUTSIDE);
	assert_int_equal(fuzz_guard_lookup(h, BASE + NPAGES * PG, &a), FUZZ_GUARD_OUTSIDE);
	assert_int_equal(fuzz_guard_lookup(h, BASE + (NPAGES - 1) * PG, &a), FUZZ_GUARD_WILD);
	assert_null(a);
}

static void test_pages_api(void **state)
{
	struct fuzz_guard_heap *h = *state;
	const struct fuzz_guard_alloc *a;
	u64 p = fuzz_guard_alloc(h, 3 * PG, PG, true);

	assert_int_not_equal(p, 0);
	assert_int_equal(p % PG, 0);
	assert_true(is_present(p) && is_present(p + 2 * PG));
	assert_false(is_present(p + 3 * PG));
	assert_int_equal(fuzz_guard_alloc(h, 100, PG, true), 0);	/* not whole pages */
	/* FreePool on AllocatePages memory: refused, named */
	assert_int_equal(fuzz_guard_free(h, p, false, &a), -EINVAL);
	assert_int_equal(a->addr, p);
	assert_int_equal(fuzz_guard_free(h, p, true, &a), 0);
	assert_false(is_present(p));
}

static void test_free_uaf_double(void **state)
{
	struct fuzz_guard_heap *h = *state;
	const struct fuzz_guard_alloc *a;
	u64 p = fuzz_guard_alloc(h, 100, 8, false);

	assert_int_equal(fuzz_guard_free(h, p + 8, false, &a), -EINVAL);	/* not its start */
	assert_int_equal(a->addr, p);
	assert_int_equal(fuzz_guard_free(h, BASE - PG, false, &a), -ENOENT);	/* not ours */
	assert_int_equal(fuzz_guard_free(h, BASE + 200 * PG, false, &a), -EINVAL);	/* no allocation */
	assert_null(a);
	assert_int_equal(fuzz_guard_free(h, p, false, &a), 0);
	assert_int_equal(h->live, 0);
	assert_false(is_present(p));
	assert_int_equal(fuzz_guard_lookup(h, p + 50, &a), FUZZ_GUARD_UAF);
	assert_int_equal(a->addr, p);
	assert_int_equal(a->freed_at, 1);
	assert_int_equal(fuzz_guard_free(h, p, false, &a), -EALREADY);
	assert_int_equal(a->addr, p);
}

/* a free stays not present and named for FUZZ_GUARD_QUARANTINE frees, then its pages are free */
static void test_quarantine(void **state)
{
	struct fuzz_guard_heap *h = *state;
	const struct fuzz_guard_alloc *a;
	u64 first = fuzz_guard_alloc(h, 64, 8, false);

	assert_int_equal(fuzz_guard_free(h, first, false, &a), 0);
	for (unsigned int i = 0; i < FUZZ_GUARD_QUARANTINE - 1; i++) {
		u64 p = fuzz_guard_alloc(h, 64, 8, false);

		assert_int_not_equal(p, 0);
		assert_int_not_equal(p, first);	/* not reused while quarantined */
		assert_int_equal(fuzz_guard_free(h, p, false, &a), 0);
	}
	assert_int_equal(fuzz_guard_lookup(h, first, &a), FUZZ_GUARD_UAF);
	/* one more free pushes the first out */
	assert_int_equal(fuzz_guard_free(h, fuzz_guard_alloc(h, 64, 8, false), false, &a), 0);
	assert_int_equal(fuzz_guard_lookup(h, first, &a), FUZZ_GUARD_WILD);
	assert_false(is_present(first));
	/* nothing live: every page used so far (65 allocations of 2 pages) is unmapped */
	for (unsigned int i = 0; i < 2 * (FUZZ_GUARD_QUARANTINE + 1); i++)
		assert_false(present[i]);
	assert_true(present[2 * (FUZZ_GUARD_QUARANTINE + 1)]);
}

/* the arena full: 0, and room again once frees leave the quarantine */
static void test_full(void **state)
{
	struct fuzz_guard_heap *h = *state;
	const struct fuzz_guard_alloc *a;
	u64 p[NPAGES];
	unsigned int n = 0;

	while ((p[n] = fuzz_guard_alloc(h, 1, 8, false)))
		n++;
	assert_int_equal(n, NPAGES / 2);
	assert_int_equal(fuzz_guard_alloc(h, 8 * PG, 8, false), 0);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(fuzz_guard_free(h, p[i], false, &a), 0);
	/* FUZZ_GUARD_QUARANTINE still held: 2 * 64 pages; the rest is free again */
	assert_int_not_equal(fuzz_guard_alloc(h, (NPAGES - 2 * FUZZ_GUARD_QUARANTINE - 1) * PG, 8,
					      false), 0);
	protect_fails = true;
	assert_int_equal(fuzz_guard_alloc(h, 1, 8, false), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_bad),
		cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pages_api, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_uaf_double, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quarantine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
