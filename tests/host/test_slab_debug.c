// SPDX-License-Identifier: MIT
/*
 * Host tests of slab debugging, in the shape of Linux's lib/slub_kunit.c:
 * make a cache with a debug flag, do one wrong thing (scribble a byte past
 * the object, write after free, free twice...), and expect exactly the
 * report: the cache's name, the problem, the call sites and a hex dump.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include "hosted.h"
#include <topaz/slab.h>
#include <topaz/kernel.h>
#include <topaz/cmdline.h>
#include <topaz/errno.h>
#include "../../mm/slab_internal.h"

#define ARENA_MIB 32
static void *arena;
static char out[32768];

static int setup(void **state)
{
	arena = hosted_page_alloc_setup(ARENA_MIB);
	/* as slub_debug=FZPU,kmalloc-16 on the command line, before the caches exist */
	assert_int_equal(slab_debug_parse("FZPU,kmalloc-16"), 0);
	kmem_cache_init();
	assert_int_equal(slab_debug_parse("-"), 0);
	return 0;
}

static void capture(void)
{
	hosted_capture_begin(out, sizeof(out));
}

static void uncapture(void)
{
	hosted_capture_end();
}

#define EXPECT(s) do { if (!strstr(out, (s))) fail_msg("missing \"%s\" in:\n%s", (s), out); } while (0)
#define EXPECT_NOT(s) do { if (strstr(out, (s))) fail_msg("unexpected \"%s\" in:\n%s", (s), out); } while (0)

static u64 errors(struct kmem_cache *s)
{
	struct slabinfo si;

	kmem_cache_get_slabinfo(s, &si);
	return si.errors;
}

static void test_clean_use_reports_nothing(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-clean", 100, 0, SLAB_DEBUG_FLAGS, NULL);
	void *p[300];

	capture();
	for (int i = 0; i < 300; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		memset(p[i], 0x42, 100);
	}
	assert_int_equal(kmem_cache_validate(s), 0);
	for (int i = 0; i < 300; i++)
		kmem_cache_free(s, p[i]);
	assert_int_equal(kmem_cache_validate(s), 0);
	uncapture();
	assert_int_equal(errors(s), 0);
	assert_int_equal(strlen(out), 0);
	kmem_cache_destroy(s);
}

/* slub_kunit's test_next_pointer / test_first_word shape, for the red zone */
static void test_right_redzone_one_byte_past(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-rz", 64, 0, SLAB_RED_ZONE, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	p[64] = 0x41;			/* one byte past the object */
	capture();
	assert_int_equal(kmem_cache_validate(s), 1);
	uncapture();
	EXPECT("BUG d-rz: Right Redzone overwritten");
	EXPECT("First byte 0x41 instead of 0xcc");
	EXPECT("@offset=64");
	EXPECT("Redzone ");		/* the hex dump */
	EXPECT("41 cc cc");
	EXPECT("FIX d-rz: Restoring Right Redzone");
	capture();
	assert_int_equal(kmem_cache_validate(s), 0);	/* repaired */
	uncapture();
	/* the same found by the free */
	p[65] = 0x42;
	capture();
	kmem_cache_free(s, p);
	uncapture();
	EXPECT("BUG d-rz: Right Redzone overwritten");
	EXPECT("First byte 0x42 instead of 0xcc");
	EXPECT("in a call from test_right_redzone_one_byte_past+0x");
	assert_int_equal(errors(s), 2);
	kmem_cache_destroy(s);
}

static void test_left_redzone(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-lrz", 32, 0, SLAB_RED_ZONE | SLAB_STORE_USER, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	p[-1] = 0;
	capture();
	kmem_cache_free(s, p);
	uncapture();
	EXPECT("BUG d-lrz: Left Redzone overwritten");
	EXPECT("First byte 0x00 instead of 0xcc");
	EXPECT("INFO: Allocated in test_left_redzone+0x");
	assert_int_equal(errors(s), 1);
	kmem_cache_destroy(s);
}

/* A free of a pointer in the first object's left red zone: the dump starts at the object. */
static void test_free_into_first_left_redzone(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-lrz-big", 300, 0, SLAB_RED_ZONE, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	assert_ptr_equal(p - s->red_left_pad, slab_base(slab_head_page(p)));	/* slot 0 */
	capture();
	kmem_cache_free(s, p - 4);
	uncapture();
	EXPECT("BUG d-lrz-big: Free of a pointer that is not an object's start (slab padding)");
	EXPECT("INFO: 300-byte object: bytes 0-127 shown");
	assert_int_equal(errors(s), 1);
	kmem_cache_free(s, p);		/* not freed by the bad call */
	assert_int_equal(errors(s), 1);
	kmem_cache_destroy(s);
}

static void test_use_after_free_caught_on_alloc(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-uaf", 80, 0, SLAB_POISON | SLAB_STORE_USER, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);
	u8 *q;

	kmem_cache_free(s, p);
	p[10] = 0x99;			/* use after free */
	capture();
	q = kmem_cache_alloc(s, GFP_KERNEL);	/* would pop p first */
	uncapture();
	assert_non_null(q);
	assert_ptr_not_equal(q, p);		/* p is quarantined */
	EXPECT("BUG d-uaf: Poison overwritten: use after free");
	EXPECT("@offset=10. First byte 0x99 instead of 0x6b");
	EXPECT("INFO: Freed in test_use_after_free_caught_on_alloc+0x");
	EXPECT("INFO: Allocated in test_use_after_free_caught_on_alloc+0x");
	EXPECT("6b 6b 99 6b");
	EXPECT("FIX d-uaf: Object quarantined");
	assert_int_equal(errors(s), 1);
	/* the poison of the other free objects is intact */
	capture();
	assert_int_equal(kmem_cache_validate(s), 0);
	uncapture();
	kmem_cache_free(s, q);
}

static void test_use_after_free_caught_by_validate(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-uaf2", 200, 0, SLAB_POISON, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	kmem_cache_free(s, p);
	p[199] = 0;			/* the last byte: POISON_END */
	capture();
	assert_int_equal(kmem_cache_validate(s), 1);
	uncapture();
	EXPECT("BUG d-uaf2: Poison end overwritten");
	EXPECT("First byte 0x00 instead of 0xa5");
	capture();
	assert_int_equal(kmem_cache_validate(s), 0);
	uncapture();
	kmem_cache_destroy(s);
}

static void test_double_free(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-df", 48, 0, SLAB_CONSISTENCY_CHECKS | SLAB_STORE_USER, NULL);
	void *p = kmem_cache_alloc(s, GFP_KERNEL);
	void *a, *b;

	kmem_cache_free(s, p);
	capture();
	kmem_cache_free(s, p);
	uncapture();
	EXPECT("BUG d-df: Double free");
	EXPECT("INFO: Freed in test_double_free+0x");
	EXPECT("in a call from test_double_free+0x");
	EXPECT("FIX d-df: Object not freed again");
	assert_int_equal(errors(s), 1);
	/* and the freelist is intact: two allocations, two objects */
	a = kmem_cache_alloc(s, GFP_KERNEL);
	b = kmem_cache_alloc(s, GFP_KERNEL);
	assert_ptr_not_equal(a, b);
	kmem_cache_free(s, a);
	kmem_cache_free(s, b);
	assert_int_equal(kmem_cache_validate(s), 0);
	kmem_cache_destroy(s);
}

static void test_double_free_without_debugging_is_caught_at_flush(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-df-nodebug", 48, 0, 0, NULL);
	void *keep = kmem_cache_alloc(s, GFP_KERNEL);	/* keeps the slab alive */
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	kmem_cache_free(s, p);
	kmem_cache_shrink(s);		/* p goes back to its slab */
	capture();
	kmem_cache_free(s, p);		/* into the array, unchecked */
	kmem_cache_shrink(s);		/* the flush checks it */
	uncapture();
	EXPECT("BUG d-df-nodebug: Double free");
	assert_int_equal(errors(s), 1);
	kmem_cache_free(s, keep);
	kmem_cache_destroy(s);
}

static void test_free_to_wrong_cache(void **state)
{
	struct kmem_cache *a = kmem_cache_create("d-wrong-a", 64, 0, 0, NULL);
	struct kmem_cache *b = kmem_cache_create("d-wrong-b", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	struct kmem_cache *c = kmem_cache_create("d-wrong-c", 64, 0, 0, NULL);
	void *p = kmem_cache_alloc(a, GFP_KERNEL);

	capture();
	kmem_cache_free(b, p);		/* checked cache: at once */
	uncapture();
	EXPECT("BUG d-wrong-b: Free to the wrong cache: the object belongs to d-wrong-a");
	EXPECT("INFO: Slab 0x");
	EXPECT("of d-wrong-a");
	EXPECT("FIX d-wrong-b: Object not freed (left to d-wrong-a)");
	capture();
	kmem_cache_free(c, p);		/* unchecked: when the array flushes */
	kmem_cache_shrink(c);
	uncapture();
	EXPECT("BUG d-wrong-c: Free to the wrong cache: the object belongs to d-wrong-a");
	kmem_cache_free(a, p);		/* the right one still works */
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
	kmem_cache_destroy(c);
}

static void test_free_not_object_start(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-mid", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);
	u8 *k = kmalloc(100, GFP_KERNEL);

	capture();
	kmem_cache_free(s, p + 8);
	uncapture();
	EXPECT("BUG d-mid: Free of a pointer that is not an object's start: object 0x");
	EXPECT(" + 8");
	/* kfree checks this always, debugging or not */
	capture();
	kfree(k + 1);
	uncapture();
	EXPECT("BUG kmalloc-128: kfree of a pointer that is not an object's start");
	EXPECT("in a call from test_free_not_object_start+0x");
	capture();
	assert_int_equal(ksize(k + 5), 0);
	uncapture();
	EXPECT("ksize of a pointer that is not an object's start");
	kmem_cache_free(s, p);
	kfree(k);
	assert_int_equal(kmem_cache_validate(s), 0);
	kmem_cache_destroy(s);
}

static void test_kfree_of_foreign_pointers(void **state)
{
	int on_stack;
	void *heap = malloc(64);
	struct page *pg = alloc_pages(GFP_KERNEL, 1);
	u8 *big = kmalloc(20000, GFP_KERNEL);
	u64 before = slab_debug_errors();

	capture();
	kfree(&on_stack);
	kfree(heap);
	kfree(page_address(pg));
	kfree(big + PAGE_SIZE);
	uncapture();
	EXPECT("kfree of a pointer the allocator does not manage");
	EXPECT("kfree of a pointer kmalloc did not return");
	EXPECT("kfree of a pointer inside a large kmalloc block");
	EXPECT("is in a large kmalloc block at 0x");
	assert_int_equal(slab_debug_errors(), before + 4);
	kfree(big);
	capture();
	kfree(big);			/* double free of a large block */
	uncapture();
	EXPECT("kfree of a free page (double free of a large kmalloc block?)");
	__free_pages(pg, 1);
	free(heap);
}

static void test_kmalloc_redzone_past_requested_size(void **state)
{
	/* kmalloc-16 has FZPU from slub_debug= (see setup) */
	u8 *p = kmalloc(10, GFP_KERNEL);
	struct kmem_cache *s = kmalloc_cache_for(10);

	assert_true(s->flags & SLAB_RED_ZONE);
	memset(p, 1, 10);
	p[10] = 0x55;			/* inside the class, past the request */
	capture();
	kfree(p);
	uncapture();
	EXPECT("BUG kmalloc-16: kmalloc Redzone overwritten");
	EXPECT("@offset=10. First byte 0x55 instead of 0xcc");
	EXPECT("INFO: Allocated in test_kmalloc_redzone_past_requested_size+0x");
	/* after ksize() the whole class is the caller's */
	p = kmalloc(10, GFP_KERNEL);
	assert_int_equal(ksize(p), 16);
	memset(p, 2, 16);
	capture();
	kfree(p);
	uncapture();
	EXPECT_NOT("BUG");
	/* kzalloc zeroes the request and keeps the red zone */
	p = kzalloc(12, GFP_KERNEL);
	for (int i = 0; i < 12; i++)
		assert_int_equal(p[i], 0);
	assert_int_equal(p[12], SLUB_RED_ACTIVE);
	/* krealloc within the class moves the red zone */
	p = krealloc(p, 14, GFP_KERNEL | __GFP_ZERO);
	assert_int_equal(p[12], 0);
	assert_int_equal(p[14], SLUB_RED_ACTIVE);
	capture();
	kfree(p);
	uncapture();
	EXPECT_NOT("BUG");
}

static void test_hexdump_and_tracks_symbolized(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-dump", 24, 0, SLAB_DEBUG_FLAGS, NULL);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	memcpy(p, "hello, slab world", 18);
	p[24] = 'X';
	capture();
	kmem_cache_free(s, p);
	uncapture();
	EXPECT("Object   0x");
	EXPECT("68 65 6c 6c 6f 2c 20 73");		/* "hello, s" */
	EXPECT("hello, slab worl");
	EXPECT("INFO: Allocated in test_hexdump_and_tracks_symbolized+0x");
	EXPECT("INFO: Object 0x");
	EXPECT("size 24");
	EXPECT("Redzone  0x");
	EXPECT(": 58 cc cc cc cc cc cc cc");	/* the right red zone with the scribble */
	kmem_cache_destroy(s);
}

static void test_slub_debug_parsing(void **state)
{
	const struct kparam *kp = cmdline_find_param("slub_debug");
	struct kmem_cache *a, *b, *c, *all;
	char why[200];

	assert_non_null(kp);
	assert_int_equal(slab_debug_parse("FZ,d-parse-a;P,d-parse-b*"), 0);
	a = kmem_cache_create("d-parse-a", 32, 0, 0, NULL);
	b = kmem_cache_create("d-parse-b2", 32, 0, 0, NULL);
	c = kmem_cache_create("d-parse-c", 32, 0, 0, NULL);
	assert_int_equal(a->flags & SLAB_DEBUG_FLAGS, SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE);
	assert_int_equal(b->flags & SLAB_DEBUG_FLAGS, SLAB_POISON);
	assert_int_equal(c->flags & SLAB_DEBUG_FLAGS, 0);
	assert_int_equal(slab_cpu(c, 0)->cap > 0, 1);
	assert_int_equal(slab_cpu(a, 0)->cap, 0);	/* debug caches take the checked path */
	assert_int_equal(kp->set(NULL, why, sizeof(why)), 0);	/* bare slub_debug: everything */
	all = kmem_cache_create("d-parse-all", 32, 0, 0, NULL);
	assert_int_equal(all->flags & SLAB_DEBUG_FLAGS, SLAB_DEBUG_FLAGS);
	assert_int_equal(slab_debug_parse("U;-,d-parse-off"), 0);
	kmem_cache_destroy(all);
	all = kmem_cache_create("d-parse-u", 32, 0, 0, NULL);
	assert_int_equal(all->flags & SLAB_DEBUG_FLAGS, SLAB_STORE_USER);
	kmem_cache_destroy(all);
	all = kmem_cache_create("d-parse-off", 32, 0, 0, NULL);
	assert_int_equal(all->flags & SLAB_DEBUG_FLAGS, 0);
	kmem_cache_destroy(all);
	/* bad letters are refused, naming the letter; the old rules stay */
	capture();
	assert_int_equal(slab_debug_parse("FQ"), -EINVAL);
	uncapture();
	EXPECT("unknown option 'Q'");
	capture();
	{
		struct cmdline_result r;

		cmdline_parse("slub_debug=T", &r);
		assert_int_equal(r.errors, 1);
	}
	uncapture();
	EXPECT("bad value 'T' for 'slub_debug'");
	assert_int_equal(slab_debug_parse("-"), 0);
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
	kmem_cache_destroy(c);
}

static void test_panic_when_configured(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-panic", 40, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	void *p = kmem_cache_alloc(s, GFP_KERNEL);
	volatile bool panicked = false;
	jmp_buf jb;
	void *q;

	kmem_cache_free(s, p);
	slab_debug_set_panic(true);
	hosted_panic_jmp = &jb;
	capture();
	if (!setjmp(jb))
		kmem_cache_free(s, p);
	else
		panicked = true;
	uncapture();
	hosted_panic_jmp = NULL;
	slab_debug_set_panic(false);
	assert_true(panicked);
	assert_non_null(strstr(hosted_panic_msg, "BUG d-panic: Double free"));
	EXPECT("BUG d-panic: Double free");	/* reported in full first */
	/* the report dropped its locks before panicking: the cache still works */
	q = kmem_cache_alloc(s, GFP_KERNEL);
	assert_non_null(q);
	kmem_cache_free(s, q);
	kmem_cache_destroy(s);
}

static void test_freelist_corruption_in_debug_cache(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-fl", 64, 0, SLAB_POISON, NULL);
	u8 *a = kmem_cache_alloc(s, GFP_KERNEL);
	u8 *b = a + s->size;

	*(uintptr_t *)(b + s->fp_offset) ^= 0x1234;
	capture();
	assert_int_equal(kmem_cache_validate(s), 1);
	uncapture();
	EXPECT("BUG d-fl: Freelist corrupted in slab 0x");
	kmem_cache_free(s, a);
}

static void fill_ctor(void *p)
{
	memset(p, 0x3c, 32);
}

static void test_debug_with_ctor(void **state)
{
	struct kmem_cache *s = kmem_cache_create("d-ctor", 32, 0, SLAB_DEBUG_FLAGS, fill_ctor);
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	assert_int_equal(p[0], 0x3c);
	assert_false(s->poison_object);		/* poison would destroy the constructed state */
	p[32] = 1;
	capture();
	kmem_cache_free(s, p);
	uncapture();
	EXPECT("BUG d-ctor: Right Redzone overwritten");
	kmem_cache_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_use_reports_nothing),
		cmocka_unit_test(test_right_redzone_one_byte_past),
		cmocka_unit_test(test_left_redzone),
		cmocka_unit_test(test_free_into_first_left_redzone),
		cmocka_unit_test(test_use_after_free_caught_on_alloc),
		cmocka_unit_test(test_use_after_free_caught_by_validate),
		cmocka_unit_test(test_double_free),
		cmocka_unit_test(test_double_free_without_debugging_is_caught_at_flush),
		cmocka_unit_test(test_free_to_wrong_cache),
		cmocka_unit_test(test_free_not_object_start),
		cmocka_unit_test(test_kfree_of_foreign_pointers),
		cmocka_unit_test(test_kmalloc_redzone_past_requested_size),
		cmocka_unit_test(test_hexdump_and_tracks_symbolized),
		cmocka_unit_test(test_slub_debug_parsing),
		cmocka_unit_test(test_panic_when_configured),
		cmocka_unit_test(test_freelist_corruption_in_debug_cache),
		cmocka_unit_test(test_debug_with_ctor),
	};
	return cmocka_run_group_tests_name("slab_debug", tests, setup, NULL);
}
