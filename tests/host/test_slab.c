// SPDX-License-Identifier: MIT
/* Host tests of the slab allocator's API: caches, kmalloc, bulk, shrink,
 * memory pressure, bad arguments, and interrupts inside critical sections. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include "hosted.h"
#include <topaz/slab.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/cmdline.h>
#include "../../mm/slab_internal.h"	/* white-box: layout and counters */
#include "slab_test_helpers.h"

#define ARENA_MIB 64
static void *arena;

static int setup(void **state)
{
	arena = hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
	return 0;
}

static void test_cache_alloc_free_distinct(void **state)
{
	u64 before = free_pages_now();
	struct kmem_cache *s = kmem_cache_create("t-basic", 40, 0, 0, NULL);
	void *p[2000];
	struct slabinfo si;

	assert_non_null(s);
	assert_string_equal(kmem_cache_name(s), "t-basic");
	assert_int_equal(kmem_cache_size(s), 40);
	for (int i = 0; i < 2000; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		assert_non_null(p[i]);
		assert_true(IS_ALIGNED((uintptr_t)p[i], 8));
		memset(p[i], i & 0xff, 40);
	}
	assert_distinct(p, 2000, 40);
	for (int i = 0; i < 2000; i++)
		for (int k = 0; k < 40; k++)
			assert_int_equal(((u8 *)p[i])[k], i & 0xff);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.active_objs, 2000);
	assert_true(si.num_objs >= 2000);
	for (int i = 0; i < 2000; i++)
		kmem_cache_free(s, p[(i * 7919) % 2000]);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.active_objs, 0);
	assert_int_equal(si.errors, 0);
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
}

static void test_fast_path_reuses_array(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-fast", 64, 0, 0, NULL);
	struct slabinfo a, b;
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	kmem_cache_free(s, p);
	kmem_cache_get_slabinfo(s, &a);
	for (int i = 0; i < 10000; i++) {
		void *q = kmem_cache_alloc(s, GFP_KERNEL);

		assert_ptr_equal(q, p);		/* LIFO: the hot object again */
		kmem_cache_free(s, q);
	}
	kmem_cache_get_slabinfo(s, &b);
	assert_int_equal(b.alloc_slowpath, a.alloc_slowpath);	/* all on the fast path */
	assert_int_equal(b.free_slowpath, a.free_slowpath);
	assert_int_equal(a.cpu_cached, b.cpu_cached);
	assert_true(b.cpu_cached > 0);
	kmem_cache_destroy(s);
}

static void test_alignment_and_hwcache(void **state)
{
	struct kmem_cache *a = kmem_cache_create("t-align64", 24, 64, 0, NULL);
	struct kmem_cache *h = kmem_cache_create("t-hw24", 24, 0, SLAB_HWCACHE_ALIGN, NULL);
	struct kmem_cache *h2 = kmem_cache_create("t-hw100", 100, 0, SLAB_HWCACHE_ALIGN, NULL);

	for (int i = 0; i < 300; i++) {
		assert_true(IS_ALIGNED((uintptr_t)kmem_cache_alloc(a, GFP_KERNEL), 64));
		assert_true(IS_ALIGNED((uintptr_t)kmem_cache_alloc(h, GFP_KERNEL), 32));
		assert_true(IS_ALIGNED((uintptr_t)kmem_cache_alloc(h2, GFP_KERNEL), 64));
	}
	assert_int_equal(a->size, 64);
	assert_int_equal(h->size, 32);
	assert_int_equal(h2->size, 128);
	kmem_cache_shrink(a);
}

static int ctor_calls;
static void ctor_fn(void *p)
{
	ctor_calls++;
	memcpy(p, "constructed", 12);
}

static void test_ctor_runs_per_object_once(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-ctor", 48, 0, 0, ctor_fn);
	struct slabinfo si;
	void *p[100];

	ctor_calls = 0;
	for (int i = 0; i < 100; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		assert_string_equal(p[i], "constructed");
	}
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(ctor_calls, si.num_objs);	/* at slab creation, not per alloc */
	for (int i = 0; i < 100; i++)
		kmem_cache_free(s, p[i]);
	kmem_cache_shrink(s);
	for (int i = 0; i < 100; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		assert_string_equal(p[i], "constructed");	/* free pointer kept outside */
		kmem_cache_free(s, p[i]);
	}
	kmem_cache_destroy(s);
}

static void test_zeroing(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-zero", 200, 0, 0, NULL);
	gfp_t gfp = GFP_KERNEL;
	u8 *p = kmem_cache_alloc(s, GFP_KERNEL);

	memset(p, 0xee, 200);
	kmem_cache_free(s, p);
	p = kmem_cache_zalloc(s, GFP_KERNEL);
	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xee, 200);
	kmem_cache_free(s, p);
	gfp |= __GFP_ZERO;		/* a variable gfp: the general entry */
	p = kmem_cache_alloc(s, gfp);
	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xee, 200);
	kfree(p);			/* kfree works on any slab object */
	p = kzalloc(200, GFP_KERNEL);
	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0);
	kfree(p);
	kmem_cache_destroy(s);
}

static void test_kmalloc_size_classes(void **state)
{
	static const struct { size_t size; size_t class; const char *name; } cases[] = {
		{ 1, 8, "kmalloc-8" }, { 8, 8, "kmalloc-8" }, { 9, 16, "kmalloc-16" },
		{ 24, 32, "kmalloc-32" }, { 33, 64, "kmalloc-64" }, { 64, 64, "kmalloc-64" },
		{ 65, 96, "kmalloc-96" }, { 96, 96, "kmalloc-96" }, { 97, 128, "kmalloc-128" },
		{ 129, 192, "kmalloc-192" }, { 192, 192, "kmalloc-192" }, { 193, 256, "kmalloc-256" },
		{ 500, 512, "kmalloc-512" }, { 1000, 1024, "kmalloc-1k" }, { 2048, 2048, "kmalloc-2k" },
		{ 4000, 4096, "kmalloc-4k" }, { 8192, 8192, "kmalloc-8k" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		void *p = kmalloc(cases[i].size, GFP_KERNEL);

		assert_non_null(p);
		assert_int_equal(ksize(p), cases[i].class);
		assert_string_equal(kmem_cache_name(kmalloc_cache_for(cases[i].size)), cases[i].name);
		/* power-of-two classes are naturally aligned (no debugging here) */
		if (!(cases[i].class & (cases[i].class - 1)))
			assert_true(IS_ALIGNED((uintptr_t)p, cases[i].class));
		memset(p, 0x11, cases[i].class);
		kfree(p);
	}
	/* every size up to 8 KiB lands in a class that holds it */
	for (size_t n = 1; n <= 8192; n += 7) {
		void *p = kmalloc(n, GFP_KERNEL);

		assert_true(ksize(p) >= n);
		kfree(p);
	}
	assert_null(kmalloc_cache_for(8193));
	assert_ptr_equal(kmalloc(0, GFP_KERNEL), ZERO_SIZE_PTR);
	kfree(ZERO_SIZE_PTR);
	kfree(NULL);
	assert_int_equal(ksize(NULL), 0);
}

/*
 * kfree()'s fast path decides "an object's start" from the page alone
 * (slab_page_obj_start()): it must agree with the head page's division at
 * every byte of a slab, for every stride (powers of two and not, left red
 * zones, slabs of several pages with tail padding), and say no on pages of no
 * slab (a large kmalloc block, a free page).
 */
static void test_kfree_object_start_from_page(void **state)
{
	static const struct { unsigned int size; slab_flags_t flags; } cases[] = {
		{ 8, 0 }, { 16, 0 }, { 24, 0 }, { 96, 0 }, { 192, 0 }, { 512, 0 }, { 3000, 0 },
		{ 4096, 0 }, { 12000, 0 }, { 200, SLAB_RED_ZONE }, { 40, SLAB_RED_ZONE | SLAB_STORE_USER },
	};
	u8 *big = kmalloc(3 * PAGE_SIZE, GFP_KERNEL);
	struct page *free_page;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct kmem_cache *s = kmem_cache_create("t-start", cases[i].size, 0, cases[i].flags,
							 NULL);
		void *p = kmem_cache_alloc(s, GFP_KERNEL);
		struct page *head = slab_head_page(p);
		u8 *base = slab_base(head);
		unsigned int starts = 0;

		assert_true(s->red_left_pad > 0 || !(cases[i].flags & SLAB_RED_ZONE));
		for (u8 *a = base; a < base + slab_bytes(head); a++) {
			bool start, fast = slab_page_obj_start(virt_to_page(a), a);
			unsigned int idx = slab_obj_index(s, head, a, &start);

			if (fast != start)
				fail_msg("cache of %u bytes (flags %#x): byte %td of the slab: page says %d, division %d (object %u of %u)",
					 cases[i].size, cases[i].flags, a - base, fast, start, idx,
					 head->objects);
			starts += fast;
		}
		assert_int_equal(starts, head->objects);
		kmem_cache_free(s, p);
		kmem_cache_destroy(s);
	}
	for (u8 *a = big; a < big + 3 * PAGE_SIZE; a += 8)
		assert_false(slab_page_obj_start(virt_to_page(a), a));
	kfree(big);
	free_page = alloc_pages(GFP_KERNEL, 0);
	__free_pages(free_page, 0);
	assert_false(slab_page_obj_start(free_page, page_address(free_page)));
}

/* Without the kmalloc caches (destroyed here, made again after), every size is refused with a message. */
static void test_kmalloc_before_init(void **state)
{
	static const size_t sizes[] = { 1, 16, 96, 512, 1024, 1025, 8192 };

	if (kmalloc_caches_reset())
		skip();		/* a cache still holds objects: nothing to test without them */
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		capture();
		assert_null(kmalloc(sizes[i], GFP_KERNEL));
		assert_null(kzalloc(sizes[i], GFP_KERNEL));
		uncapture();
		assert_non_null(strstr(out, "before kmem_cache_init(); caller test_kmalloc_before_init+0x"));
	}
	kmem_cache_init();
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		void *p = kmalloc(sizes[i], GFP_KERNEL);

		assert_non_null(p);
		assert_true(ksize(p) >= sizes[i]);
		kfree(p);
	}
}

static void test_kmalloc_caches_waste_little(void **state)
{
	struct kmem_cache *s;

	for_each_slab_cache(s) {
		struct slabinfo si;
		unsigned long bytes;

		if (strncmp(s->name, "kmalloc-", 8))
			continue;
		kmem_cache_get_slabinfo(s, &si);
		bytes = (unsigned long)si.pagesperslab * PAGE_SIZE;
		assert_true(si.objperslab >= 4);
		assert_true((bytes - (unsigned long)si.objperslab * si.objsize) * 16 <= bytes);
	}
}

static void test_kmalloc_large(void **state)
{
	u64 before = free_pages_now();
	u8 *p = kmalloc(8193, GFP_KERNEL);
	u8 *q = kzalloc(1 << 20, GFP_KERNEL);

	assert_non_null(p);
	assert_true(IS_ALIGNED((uintptr_t)p, PAGE_SIZE));
	assert_int_equal(ksize(p), 16384);
	memset(p, 1, 8193);
	assert_int_equal(ksize(q), 1 << 20);
	for (size_t i = 0; i < (1 << 20); i += 4093)
		assert_int_equal(q[i], 0);
	kfree(p);
	kfree(q);
	assert_int_equal(free_pages_now(), before);
}

static void test_kmalloc_refuses_impossible_sizes(void **state)
{
	capture();
	assert_null(kmalloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL));
	assert_null(kcalloc(SIZE_MAX / 8, 16, GFP_KERNEL));
	assert_null(kmalloc_array(1ul << 40, 1ul << 40, GFP_KERNEL));
	uncapture();
	assert_non_null(strstr(out, "larger than KMALLOC_MAX_SIZE"));
	assert_non_null(strstr(out, "overflows"));
	assert_non_null(strstr(out, "test_kmalloc_refuses_impossible_sizes"));
	capture();
	assert_null(kmalloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN));
	uncapture();
	assert_int_equal(strlen(out), 0);
}

static void test_kcalloc_and_array(void **state)
{
	u32 *a = kcalloc(100, sizeof(u32), GFP_KERNEL);
	u32 *b = kmalloc_array(100, sizeof(u32), GFP_KERNEL);

	for (int i = 0; i < 100; i++)
		assert_int_equal(a[i], 0);
	assert_int_equal(ksize(b), 512);
	kfree(a);
	kfree(b);
}

static void test_krealloc(void **state)
{
	char *p = krealloc(NULL, 10, GFP_KERNEL), *q;

	assert_non_null(p);
	strcpy(p, "123456789");
	q = krealloc(p, 16, GFP_KERNEL);	/* same class: in place */
	assert_ptr_equal(q, p);
	q = krealloc(p, 5000, GFP_KERNEL);
	assert_ptr_not_equal(q, p);
	assert_string_equal(q, "123456789");
	assert_int_equal(ksize(q), 8192);
	p = krealloc(q, 100000, GFP_KERNEL);	/* to the page allocator */
	assert_string_equal(p, "123456789");
	q = krealloc(p, 20, GFP_KERNEL);	/* and back to a slab */
	assert_int_equal(ksize(q), 32);
	assert_string_equal(q, "123456789");
	assert_ptr_equal(krealloc(q, 0, GFP_KERNEL), ZERO_SIZE_PTR);
}

static void test_bulk(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-bulk", 128, 0, 0, NULL);
	void *p[700];
	struct slabinfo si;

	for (int round = 0; round < 3; round++) {
		assert_int_equal(kmem_cache_alloc_bulk(s, GFP_KERNEL, 700, p), 700);
		assert_distinct(p, 700, 128);
		for (int i = 0; i < 700; i++)
			memset(p[i], round, 128);
		kmem_cache_free_bulk(s, 700, p);
	}
	assert_int_equal(kmem_cache_alloc_bulk(s, GFP_KERNEL | __GFP_ZERO, 10, p), 10);
	for (int i = 0; i < 10; i++)
		for (int k = 0; k < 128; k++)
			assert_int_equal(((u8 *)p[i])[k], 0);
	kmem_cache_free_bulk(s, 10, p);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.active_objs, 0);
	/* NULL cache: kmalloc objects */
	for (int i = 0; i < 50; i++)
		p[i] = kmalloc(1 + i * 40, GFP_KERNEL);
	kmem_cache_free_bulk(NULL, 50, p);
	kmem_cache_destroy(s);
}

static void test_shrink_returns_empty_slabs(void **state)
{
	u64 before = free_pages_now();
	struct kmem_cache *s = kmem_cache_create("t-shrink", 512, 0, 0, NULL);
	static void *p[4000];
	struct slabinfo si;
	int pages;

	for (int i = 0; i < 4000; i++)
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
	for (int i = 0; i < 4000; i++)
		kmem_cache_free(s, p[i]);
	kmem_cache_get_slabinfo(s, &si);
	assert_true(si.nr_free > 0);			/* kept for reuse */
	assert_true(si.nr_free * si.pagesperslab * PAGE_SIZE <= (1 << 20) + 2 * si.pagesperslab * PAGE_SIZE);
	assert_true(si.slabs_freed > 0);		/* the rest went back already */
	pages = kmem_cache_shrink(s);
	assert_true(pages > 0);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.nr_free, 0);
	assert_int_equal(si.num_objs, 0);
	assert_int_equal(si.cpu_cached, 0);
	/* the descriptor is the only page left */
	assert_int_equal(free_pages_now(), before - (1u << s->desc_order));
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
}

static void test_memory_pressure_reclaims_empty_slabs(void **state)
{
	struct kmem_cache *a = kmem_cache_create("t-press-a", 256, 0, 0, NULL);
	struct kmem_cache *b = kmem_cache_create("t-press-b", 256, 0, 0, NULL);
	static uintptr_t pages[20000];
	static void *p[2000];
	struct slabinfo si;
	int n = 0;
	void *x;

	for (int i = 0; i < 2000; i++)
		p[i] = kmem_cache_alloc(a, GFP_KERNEL);
	for (int i = 0; i < 2000; i++)
		kmem_cache_free(a, p[i]);
	kmem_cache_get_slabinfo(a, &si);
	assert_true(si.nr_free > 0);
	/* take every free page */
	for (unsigned int o = MAX_ORDER + 1; o-- > 0;)
		while (n < 20000 && (pages[n] = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, o)))
			pages[n++] |= o;	/* order in the low bits */
	/* an atomic caller never reclaims: no memory */
	capture();
	x = kmem_cache_alloc(b, GFP_ATOMIC);
	uncapture();
	assert_null(x);
	assert_non_null(strstr(out, "t-press-b: allocation failure"));
	assert_non_null(strstr(out, "GFP_ATOMIC"));
	/* a blocking one shrinks the other caches and succeeds */
	x = kmem_cache_alloc(b, GFP_KERNEL);
	assert_non_null(x);
	kmem_cache_get_slabinfo(a, &si);
	assert_int_equal(si.nr_free, 0);
	assert_int_equal(si.cpu_cached, 0);
	kmem_cache_free(b, x);
	while (n--)
		free_pages(pages[n] & PAGE_MASK, (unsigned int)(pages[n] & ~PAGE_MASK));
	kmem_cache_destroy(a);
	kmem_cache_destroy(b);
}

/* Creating a cache may block: it reclaims empty slabs before it fails. */
static void test_create_under_memory_pressure_reclaims(void **state)
{
	struct kmem_cache *a = kmem_cache_create("t-cpress-a", 256, 0, 0, NULL);
	struct kmem_cache *b;
	static uintptr_t pages[20000];
	static void *p[2000];
	struct slabinfo si;
	int n = 0;

	for (int i = 0; i < 2000; i++)
		p[i] = kmem_cache_alloc(a, GFP_KERNEL);
	for (int i = 0; i < 2000; i++)
		kmem_cache_free(a, p[i]);
	kmem_cache_get_slabinfo(a, &si);
	assert_true(si.nr_free > 0 || si.cpu_cached > 0);
	/* take every free page */
	for (unsigned int o = MAX_ORDER + 1; o-- > 0;)
		while (n < 20000 && (pages[n] = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, o)))
			pages[n++] |= o;	/* order in the low bits */
	/* the descriptor (one page: no CPU array) comes out of a's empty slabs */
	b = kmem_cache_create("t-cpress-b", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	assert_non_null(b);
	kmem_cache_get_slabinfo(a, &si);
	assert_int_equal(si.nr_free, 0);
	assert_int_equal(si.cpu_cached, 0);
	kmem_cache_destroy(b);
	while (n--)
		free_pages(pages[n] & PAGE_MASK, (unsigned int)(pages[n] & ~PAGE_MASK));
	kmem_cache_destroy(a);
}

static void test_destroy_with_objects_reports_and_keeps(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-leak", 32, 0, SLAB_STORE_USER, NULL);
	void *p = kmem_cache_alloc(s, GFP_KERNEL);
	void *q = kmem_cache_alloc(s, GFP_KERNEL);

	capture();
	kmem_cache_destroy(s);
	uncapture();
	assert_non_null(strstr(out, "BUG t-leak: kmem_cache_destroy: 2 objects remain in 1 slabs"));
	assert_non_null(strstr(out, "allocated by test_destroy_with_objects_reports_and_keeps+0x"));
	assert_non_null(strstr(out, "FIX t-leak: Cache kept"));
	kmem_cache_free(s, p);		/* still a working cache */
	kmem_cache_free(s, q);
	kmem_cache_destroy(s);
}

static void test_create_rejects_bad_arguments(void **state)
{
	char longname[80];
	jmp_buf jb;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	capture();
	assert_null(kmem_cache_create("t-bad", 0, 0, 0, NULL));
	assert_null(kmem_cache_create("t-bad", 32, 3, 0, NULL));
	assert_null(kmem_cache_create("t-bad", 32, 8192, 0, NULL));
	assert_null(kmem_cache_create("t-bad", 64u << 20, 0, 0, NULL));
	assert_null(kmem_cache_create("t-bad", (4u << 20) - 8, 0, SLAB_RED_ZONE | SLAB_STORE_USER, NULL));
	assert_null(kmem_cache_create(NULL, 32, 0, 0, NULL));
	assert_null(kmem_cache_create(longname, 32, 0, 0, NULL));
	assert_null(kmem_cache_create("t-bad", 32, 0, 0x80000000u, NULL));
	uncapture();
	assert_non_null(strstr(out, "kmem_cache_create(t-bad) failed: object size 0"));
	assert_non_null(strstr(out, "alignment 3 is not 0 or a power of two"));
	assert_non_null(strstr(out, "alignment 8192"));
	assert_non_null(strstr(out, "larger than the largest slab"));
	assert_non_null(strstr(out, "with debug metadata"));
	assert_non_null(strstr(out, "a cache needs a name"));
	assert_non_null(strstr(out, "name longer than 47"));
	assert_non_null(strstr(out, "unknown flags 0x80000000"));
	assert_non_null(strstr(out, "caller test_create_rejects_bad_arguments+0x"));

	/* the largest object that fits works: one per 4 MiB slab */
	struct kmem_cache *big = kmem_cache_create("t-4m", 4u << 20, 0, 0, NULL);
	assert_non_null(big);
	void *b = kmem_cache_alloc(big, GFP_KERNEL);
	assert_non_null(b);
	memset(b, 0, 4u << 20);
	kmem_cache_free(big, b);
	kmem_cache_destroy(big);

	/* SLAB_PANIC turns the refusal into a panic */
	hosted_panic_jmp = &jb;
	if (!setjmp(jb)) {
		kmem_cache_create("t-panic", 32, 5, SLAB_PANIC, NULL);
		fail_msg("no panic");
	}
	hosted_panic_jmp = NULL;
	assert_non_null(strstr(hosted_panic_msg, "kmem_cache_create(t-panic) failed: alignment 5"));
}

/* ---- interrupts inside the critical sections ---- */

static struct kmem_cache *irq_cache;
static int irq_where, irq_fired;
static void *irq_got, *irq_free_me;

static void irq_hook(int where)
{
	if (where != irq_where || irq_fired)
		return;
	irq_fired++;
	/* "an interrupt handler" on this CPU, in the middle of the operation */
	irq_got = kmem_cache_alloc(irq_cache, GFP_ATOMIC | __GFP_NOWARN);
	if (irq_got)
		memset(irq_got, 0x77, 64);
	if (irq_free_me) {
		kmem_cache_free(irq_cache, irq_free_me);
		irq_free_me = NULL;
	}
}

static void test_interrupt_during_fast_path(void **state)
{
	static void *p[3000], *inner[3000];
	struct slabinfo si;
	int ninner = 0;

	irq_cache = kmem_cache_create("t-irq", 64, 0, 0, NULL);
	slab_test_irq_hook = irq_hook;
	for (int i = 0; i < 3000; i++) {
		irq_where = i % 2 ? SLAB_HOOK_ALLOC_FAST : SLAB_HOOK_FREE_FAST;
		irq_fired = 0;
		irq_got = NULL;
		irq_free_me = i % 3 == 0 && ninner > 0 ? inner[--ninner] : NULL;
		p[i] = kmem_cache_alloc(irq_cache, GFP_KERNEL);
		assert_non_null(p[i]);
		memset(p[i], 0x11, 64);
		if (irq_got)
			inner[ninner++] = irq_got;
		if (i % 5 == 0) {
			irq_where = SLAB_HOOK_FREE_FAST;
			irq_fired = 0;
			irq_got = NULL;
			kmem_cache_free(irq_cache, p[i]);
			p[i] = NULL;
			if (irq_got)
				inner[ninner++] = irq_got;
		}
		if (ninner > 2900)
			break;
	}
	slab_test_irq_hook = NULL;
	/* no object was handed out twice: outer contents intact */
	for (int i = 0; i < 3000; i++)
		if (p[i])
			for (int k = 0; k < 64; k++)
				assert_int_equal(((u8 *)p[i])[k], 0x11);
	for (int i = 0; i < ninner; i++)
		for (int k = 0; k < 64; k++)
			assert_int_equal(((u8 *)inner[i])[k], 0x77);
	for (int i = 0; i < 3000; i++)
		if (p[i])
			kmem_cache_free(irq_cache, p[i]);
	for (int i = 0; i < ninner; i++)
		kmem_cache_free(irq_cache, inner[i]);
	assert_int_equal(kmem_cache_validate(irq_cache), 0);
	kmem_cache_get_slabinfo(irq_cache, &si);
	assert_int_equal(si.active_objs, 0);
	assert_int_equal(si.errors, 0);
	kmem_cache_destroy(irq_cache);
}

static void nmi_hook(int where)
{
	if (where != SLAB_HOOK_LOCKED || irq_fired)
		return;
	irq_fired++;
	/* "an NMI" while the list lock is held: never waits */
	irq_got = kmem_cache_alloc(irq_cache, GFP_ATOMIC);
	if (irq_free_me) {
		kmem_cache_free(irq_cache, irq_free_me);
		irq_free_me = NULL;
	}
}

static void test_nmi_while_list_locked(void **state)
{
	struct slabinfo si;
	static void *p[2000];
	void *victim;

	irq_cache = kmem_cache_create("t-nmi", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);	/* no array */
	victim = kmem_cache_alloc(irq_cache, GFP_KERNEL);
	slab_test_irq_hook = nmi_hook;
	irq_fired = 0;
	irq_free_me = victim;
	p[0] = kmem_cache_alloc(irq_cache, GFP_KERNEL);
	slab_test_irq_hook = NULL;
	assert_int_equal(irq_fired, 1);
	assert_null(irq_got);			/* the NMI's allocation failed, did not wait */
	assert_null(irq_free_me);
	kmem_cache_get_slabinfo(irq_cache, &si);
	assert_int_equal(si.nmi_contended, 2);	/* one failed alloc, one deferred free */
	/* the interrupted lock holder drained the deferred free before unlocking */
	assert_null(irq_cache->deferred);
	assert_int_equal(si.active_objs, 1);
	kmem_cache_free(irq_cache, p[0]);
	kmem_cache_get_slabinfo(irq_cache, &si);
	assert_int_equal(si.active_objs, 0);
	assert_int_equal(si.errors, 0);
	kmem_cache_destroy(irq_cache);

	/* the same with the per-CPU array: a flush holding the lock */
	irq_cache = kmem_cache_create("t-nmi2", 64, 0, 0, NULL);
	for (int i = 0; i < 2000; i++)
		p[i] = kmem_cache_alloc(irq_cache, GFP_KERNEL);
	slab_test_irq_hook = nmi_hook;
	irq_fired = 0;
	irq_free_me = p[1999];
	for (int i = 0; i < 1999; i++)
		kmem_cache_free(irq_cache, p[i]);
	slab_test_irq_hook = NULL;
	assert_int_equal(irq_fired, 1);
	kmem_cache_shrink(irq_cache);
	kmem_cache_get_slabinfo(irq_cache, &si);
	assert_int_equal(si.active_objs, irq_got ? 1 : 0);
	if (irq_got)
		kmem_cache_free(irq_cache, irq_got);
	assert_int_equal(kmem_cache_validate(irq_cache), 0);
	kmem_cache_destroy(irq_cache);
}

static void test_random_kmalloc_churn_keeps_contents(void **state)
{
	enum { LIVE = 3000 };
	static struct { u8 *p; size_t n; u8 tag; } live[LIVE];
	u64 before = free_pages_now();
	int n = 0;

	srand(11);
	for (int i = 0; i < 60000; i++) {
		if (n < LIVE && (n == 0 || rand() % 2)) {
			size_t sz = (size_t)(rand() % 5 ? rand() % 600 + 1 : rand() % 20000 + 1);
			u8 *p = kmalloc(sz, GFP_KERNEL);

			assert_non_null(p);
			live[n].p = p;
			live[n].n = sz;
			live[n].tag = (u8)i;
			memset(p, live[n].tag, sz);
			n++;
		} else {
			int k = rand() % n;

			for (size_t j = 0; j < live[k].n; j++)
				assert_int_equal(live[k].p[j], live[k].tag);
			kfree(live[k].p);
			live[k] = live[--n];
		}
	}
	while (n--)
		kfree(live[n].p);
	kmem_cache_shrink_all();
	/* all pages back except the kmalloc descriptors */
	{
		u64 desc = 0;
		struct kmem_cache *s;

		for_each_slab_cache(s)
			desc += 1u << s->desc_order;
		assert_true(free_pages_now() + desc >= before);
	}
}

static void test_slabinfo_show(void **state)
{
	void *p = kmalloc(64, GFP_KERNEL);

	capture();
	slabinfo_show();
	uncapture();
	kfree(p);
	assert_non_null(strstr(out, "slabinfo - version: 2.1"));
	assert_non_null(strstr(out, "<active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>"));
	assert_non_null(strstr(out, "] kmalloc-64 "));
	assert_non_null(strstr(out, "kmalloc-8k"));
	assert_non_null(cmdline_find_param("slabinfo"));	/* slabinfo: the same at shutdown */
}

static void test_freelist_hardening(void **state)
{
	struct kmem_cache *s = kmem_cache_create("t-harden", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	u8 *a = kmem_cache_alloc(s, GFP_KERNEL);
	u8 *b = a + s->size;	/* the next free object on the slab's freelist */
	struct slabinfo si;
	void *c;

	/* the stored pointer is not the plain address of the next object */
	assert_true(*(uintptr_t *)(b + s->fp_offset) != (uintptr_t)(b + s->size));
	assert_ptr_equal(fp_decode(s, b), b + s->size);
	/* an attacker's plain pointer decodes to garbage and is caught */
	*(uintptr_t *)(b + s->fp_offset) = (uintptr_t)(b + 2 * s->size);
	capture();
	c = kmem_cache_alloc(s, GFP_KERNEL);	/* pops b, whose successor is bad */
	uncapture();
	assert_non_null(strstr(out, "BUG t-harden: Freelist pointer corrupted"));
	assert_non_null(strstr(out, "FIX t-harden: Isolating slab"));
	assert_non_null(c);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.errors, 1);
	kmem_cache_free(s, a);
	kmem_cache_free(s, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_alloc_free_distinct),
		cmocka_unit_test(test_fast_path_reuses_array),
		cmocka_unit_test(test_alignment_and_hwcache),
		cmocka_unit_test(test_ctor_runs_per_object_once),
		cmocka_unit_test(test_zeroing),
		cmocka_unit_test(test_kmalloc_size_classes),
		cmocka_unit_test(test_kfree_object_start_from_page),
		cmocka_unit_test(test_kmalloc_before_init),
		cmocka_unit_test(test_kmalloc_caches_waste_little),
		cmocka_unit_test(test_kmalloc_large),
		cmocka_unit_test(test_kmalloc_refuses_impossible_sizes),
		cmocka_unit_test(test_kcalloc_and_array),
		cmocka_unit_test(test_krealloc),
		cmocka_unit_test(test_bulk),
		cmocka_unit_test(test_shrink_returns_empty_slabs),
		cmocka_unit_test(test_memory_pressure_reclaims_empty_slabs),
		cmocka_unit_test(test_create_under_memory_pressure_reclaims),
		cmocka_unit_test(test_destroy_with_objects_reports_and_keeps),
		cmocka_unit_test(test_create_rejects_bad_arguments),
		cmocka_unit_test(test_interrupt_during_fast_path),
		cmocka_unit_test(test_nmi_while_list_locked),
		cmocka_unit_test(test_random_kmalloc_churn_keeps_contents),
		cmocka_unit_test(test_slabinfo_show),
		cmocka_unit_test(test_freelist_hardening),
	};
	return cmocka_run_group_tests_name("slab", tests, setup, NULL);
}
