// SPDX-License-Identifier: MIT
/* Host tests of the buddy page allocator over an arena. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include "hosted.h"
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define ARENA_MIB 64
static void *arena;

static int setup(void **state)
{
	arena = hosted_page_alloc_setup(ARENA_MIB);
	hosted_console_quiet = true;
	return 0;
}

static int teardown(void **state)
{
	hosted_console_quiet = false;
	hosted_arena_free(arena, ARENA_MIB);
	return 0;
}

static u64 free_pages_now(void)
{
	struct page_alloc_stats st;

	page_alloc_get_stats(&st);
	return st.free_pages;
}

static void test_orders_are_naturally_aligned(void **state)
{
	for (unsigned o = 0; o <= MAX_ORDER; o++) {
		uintptr_t a = __get_free_pages(GFP_KERNEL, o);

		assert_true(a != 0);
		assert_true((a & ((PAGE_SIZE << o) - 1)) == 0);
		memset((void *)a, 0xab, PAGE_SIZE << o);	/* ASan: the block is ours */
		free_pages(a, o);
	}
}

static void test_free_coalesces_back(void **state)
{
	u64 before = free_pages_now();
	struct page_alloc_stats st0, st1;
	uintptr_t p[64];

	page_alloc_get_stats(&st0);
	for (int i = 0; i < 64; i++)
		assert_true((p[i] = __get_free_page(GFP_KERNEL)) != 0);
	assert_int_equal(free_pages_now(), before - 64);
	/* free in a scrambled order: every buddy pair must merge again */
	for (int i = 0; i < 64; i++)
		free_page(p[(i * 37) % 64]);
	page_alloc_get_stats(&st1);
	assert_int_equal(free_pages_now(), before);
	for (int o = 0; o <= MAX_ORDER; o++)
		assert_int_equal(st1.nr_free[o], st0.nr_free[o]);
}

static void test_zeroing(void **state)
{
	struct page *pg = alloc_pages(GFP_KERNEL, 2);
	u8 *v = page_address(pg);

	memset(v, 0x5a, 4 * PAGE_SIZE);
	__free_pages(pg, 2);
	pg = alloc_pages(GFP_KERNEL | __GFP_ZERO, 2);
	v = page_address(pg);
	for (size_t i = 0; i < 4 * PAGE_SIZE; i++)
		assert_int_equal(v[i], 0);
	assert_ptr_equal(virt_to_page(v), pg);
	assert_int_equal(page_to_pfn(pg), virt_to_phys(v) >> PAGE_SHIFT);
	__free_pages(pg, 2);
}

static void test_exhaustion_returns_null_and_counts(void **state)
{
	struct page_alloc_stats st;
	uintptr_t blocks[64];
	int n = 0;

	while (n < 64 && (blocks[n] = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, MAX_ORDER)))
		n++;
	assert_true(n > 0 && n < 64);
	page_alloc_get_stats(&st);
	assert_true(st.failures >= 1);
	/* smaller orders still succeed from the remainder */
	uintptr_t small = __get_free_page(GFP_ATOMIC);
	assert_true(small != 0);
	free_page(small);
	while (n--)
		free_pages(blocks[n], MAX_ORDER);
}

static void test_order_too_large_refused(void **state)
{
	assert_null(alloc_pages(GFP_KERNEL | __GFP_NOWARN, MAX_ORDER + 1));
	assert_null(alloc_pages_node(1, GFP_KERNEL | __GFP_NOWARN, 0));
	struct page *p = alloc_pages_node(0, GFP_KERNEL, 0);
	assert_non_null(p);
	__free_pages(p, 0);
}

static void test_double_free_detected(void **state)
{
	struct page_alloc_stats a, b;
	char out[2048];
	uintptr_t x = __get_free_pages(GFP_KERNEL, 1);
	u64 before;

	free_pages(x, 1);
	before = free_pages_now();
	page_alloc_get_stats(&a);
	printk_capture_start(out, sizeof(out));
	free_pages(x, 1);			/* double free */
	printk_capture_stop();
	page_alloc_get_stats(&b);
	assert_int_equal(b.bad_frees, a.bad_frees + 1);
	assert_int_equal(free_pages_now(), before);	/* nothing corrupted */
	assert_non_null(strstr(out, "double free"));
	assert_non_null(strstr(out, "test_double_free_detected"));	/* the caller, symbolized */
}

static void test_wrong_order_detected(void **state)
{
	char out[2048];
	uintptr_t x = __get_free_pages(GFP_KERNEL, 2);
	u64 before = free_pages_now();

	printk_capture_start(out, sizeof(out));
	free_pages(x, 1);
	free_pages(x, 3);
	free_pages(x + PAGE_SIZE, 0);		/* middle of a block */
	free_pages(x + 1, 0);			/* not a page address */
	printk_capture_stop();
	assert_int_equal(free_pages_now(), before);
	assert_non_null(strstr(out, "smaller order than allocated"));
	assert_non_null(strstr(out, "larger order than allocated"));
	assert_non_null(strstr(out, "does not start an allocated block"));
	assert_non_null(strstr(out, "not a managed page"));
	free_pages(x, 2);
	assert_int_equal(free_pages_now(), before + 4);
}

static void test_random_churn_keeps_accounting(void **state)
{
	struct { uintptr_t a; unsigned o; } live[512];
	int n = 0;
	u64 before = free_pages_now();

	srand(7);
	for (int i = 0; i < 20000; i++) {
		if (n < 512 && (n == 0 || rand() % 3)) {
			unsigned o = (unsigned)(rand() % 6);
			uintptr_t a = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, o);
			if (a) {
				*(volatile u8 *)a = 1;
				live[n].a = a;
				live[n++].o = o;
			}
		} else {
			int k = rand() % n;
			free_pages(live[k].a, live[k].o);
			live[k] = live[--n];
		}
	}
	while (n--)
		free_pages(live[n].a, live[n].o);
	assert_int_equal(free_pages_now(), before);
}

static void test_ranges_overlap_and_tiny(void **state)
{
	assert_int_equal(page_alloc_add_range((uintptr_t)arena, (uintptr_t)arena + PAGE_SIZE * 100), -EEXIST);
	assert_int_equal(page_alloc_add_range(0x1000, 0x1000), -EINVAL);
	assert_null(pfn_to_page(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orders_are_naturally_aligned),
		cmocka_unit_test(test_free_coalesces_back),
		cmocka_unit_test(test_zeroing),
		cmocka_unit_test(test_exhaustion_returns_null_and_counts),
		cmocka_unit_test(test_order_too_large_refused),
		cmocka_unit_test(test_double_free_detected),
		cmocka_unit_test(test_wrong_order_detected),
		cmocka_unit_test(test_random_churn_keeps_accounting),
		cmocka_unit_test(test_ranges_overlap_and_tiny),
	};
	return cmocka_run_group_tests_name("page_alloc", tests, setup, teardown);
}
