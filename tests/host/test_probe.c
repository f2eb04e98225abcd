// SPDX-License-Identifier: MIT
/* Host tests of the probe framework and of the memory probe points' values,
 * each checked against what the test asked the allocator for. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include "hosted.h"
#include <topaz/slab.h>
#include <topaz/probe.h>
#include <topaz/kernel.h>
#include <topaz/cmdline.h>
#include <topaz/shutdown.h>
#include <topaz/errno.h>
#include <topaz/symbols.h>

#define ARENA_MIB 32
static void *arena;
static char out[32768];

static int setup(void **state)
{
	arena = hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
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

#define EXPECT(s) do { if (!strstr(out, (s))) fail_msg("missing \"%s\" in:\n%.2000s", (s), out); } while (0)

/* What a handler saw at its last hit, by value name. */
struct seen {
	int hits;
	const char *point;
	u64 call_site, bytes_req, bytes_alloc, gfp_flags, ptr, page, pfn, order;
	bool has_bytes;
	char name[64], caller_function[160], gfp_flag_name[160], cache_name[64];
};

static void record(struct probe_hit *hit, void *data)
{
	struct seen *s = data;
	const char *str;

	s->hits++;
	s->point = hit->point->name;
	assert_true(probe_get_u64(hit, "call_site", &s->call_site));
	s->has_bytes = probe_get_u64(hit, "bytes_req", &s->bytes_req);
	probe_get_u64(hit, "bytes_alloc", &s->bytes_alloc);
	probe_get_u64(hit, "gfp_flags", &s->gfp_flags);
	probe_get_u64(hit, "ptr", &s->ptr);
	probe_get_u64(hit, "page", &s->page);
	probe_get_u64(hit, "pfn", &s->pfn);
	probe_get_u64(hit, "order", &s->order);
	strscpy(s->name, probe_get_str(hit, "name"), sizeof(s->name));
	strscpy(s->caller_function, probe_get_str(hit, "caller_function"), sizeof(s->caller_function));
	str = probe_get_str(hit, "gfp_flag_name");
	strscpy(s->gfp_flag_name, str ? str : "-", sizeof(s->gfp_flag_name));
	str = probe_get_str(hit, "cache_name");
	strscpy(s->cache_name, str ? str : "-", sizeof(s->cache_name));
	/* a numeric name is not a string and the other way round */
	assert_null(probe_get_str(hit, "call_site"));
	assert_false(probe_get_u64(hit, "caller_function", &(u64){ 0 }));
	assert_false(probe_get_u64(hit, "no_such_value", &(u64){ 0 }));
}

static bool starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static void test_points_and_values_exist(void **state)
{
	static const char *const alloc_vals[] = { "name", "call_site", "caller_function",
		"bytes_req", "bytes_alloc", "gfp_flags", "gfp_flag_name", "ptr", "cache_name" };
	static const char *const free_vals[] = { "name", "call_site", "caller_function", "ptr",
		"cache_name" };
	const char *allocs[] = { "vm.kmem_cache_alloc", "vm.kmalloc" };
	const char *frees[] = { "vm.kmem_cache_free", "vm.kfree" };

	for (int i = 0; i < 2; i++) {
		struct probe_point *pp = probe_find(allocs[i]);

		assert_non_null(pp);
		assert_false(pp->enabled);
		for (size_t v = 0; v < ARRAY_SIZE(alloc_vals); v++)
			assert_int_equal(probe_value_index(pp, alloc_vals[v]), (int)v);
		pp = probe_find(frees[i]);
		assert_non_null(pp);
		for (size_t v = 0; v < ARRAY_SIZE(free_vals); v++)
			assert_int_equal(probe_value_index(pp, free_vals[v]), (int)v);
	}
	assert_non_null(probe_find("vm.mm_page_alloc"));
	assert_non_null(probe_find("vm.mm_page_free"));
	assert_null(probe_find("vm.nothing"));
	assert_int_equal(probe_value_index(probe_find("vm.kfree"), "bytes_req"), -ENOENT);
}

static __noinline void *alloc_here(struct kmem_cache *s, gfp_t gfp)
{
	return kmem_cache_alloc(s, gfp);
}

static void test_kmem_cache_alloc_values(void **state)
{
	struct kmem_cache *s = kmem_cache_create("p-cache", 100, 0, 0, NULL);
	struct seen seen = { 0 };
	gfp_t gfp = GFP_KERNEL | __GFP_ZERO;
	char *p;

	assert_int_equal(probe_register("vm.kmem_cache_alloc", record, &seen), 1);
	assert_true(probe_find("vm.kmem_cache_alloc")->enabled);
	p = kmem_cache_alloc(s, gfp);
	assert_int_equal(seen.hits, 1);
	assert_string_equal(seen.point, "vm.kmem_cache_alloc");
	assert_string_equal(seen.name, "kmem_cache_alloc");	/* SystemTap's name */
	assert_int_equal(seen.bytes_req, 100);
	assert_int_equal(seen.bytes_alloc, 104);		/* the stride, as Linux's s->size */
	assert_int_equal(seen.gfp_flags, 0xdc0);
	assert_string_equal(seen.gfp_flag_name, "GFP_KERNEL|__GFP_ZERO");
	assert_int_equal(seen.ptr, (uintptr_t)p);
	assert_string_equal(seen.cache_name, "p-cache");
	/* call_site is the real caller: this function, not an allocator frame */
	assert_true(starts_with(seen.caller_function, "test_kmem_cache_alloc_values+0x"));
	assert_true(seen.call_site > ksym_address("test_kmem_cache_alloc_values"));
	kmem_cache_free(s, p);

	/* through the constant-gfp entry, from another function */
	p = alloc_here(s, GFP_ATOMIC);
	assert_int_equal(seen.hits, 2);
	assert_string_equal(seen.gfp_flag_name, "GFP_ATOMIC");
	assert_int_equal(seen.gfp_flags, 0x820);
	assert_true(starts_with(seen.caller_function, "alloc_here+0x"));
	kmem_cache_free(s, p);
	p = kmem_cache_alloc(s, 0);
	assert_string_equal(seen.gfp_flag_name, "none");
	kmem_cache_free(s, p);
	p = kmem_cache_zalloc(s, GFP_NOWAIT);
	assert_string_equal(seen.gfp_flag_name, "GFP_NOWAIT|__GFP_ZERO");
	kmem_cache_free(s, p);

	/* bulk: one hit per object */
	{
		void *v[5];

		seen.hits = 0;
		assert_int_equal(kmem_cache_alloc_bulk(s, GFP_KERNEL, 5, v), 5);
		assert_int_equal(seen.hits, 5);
		assert_int_equal(seen.ptr, (uintptr_t)v[4]);
		assert_true(starts_with(seen.caller_function, "test_kmem_cache_alloc_values+0x"));
		kmem_cache_free_bulk(s, 5, v);
	}
	assert_int_equal(probe_unregister("vm.kmem_cache_alloc", record, &seen), 1);
	assert_false(probe_find("vm.kmem_cache_alloc")->enabled);
	seen.hits = 0;
	kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
	assert_int_equal(seen.hits, 0);
	kmem_cache_destroy(s);
}

static void test_kmalloc_and_kfree_values(void **state)
{
	struct seen a = { 0 }, f = { 0 };
	void *p, *big;

	assert_int_equal(probe_register("vm.kmalloc", record, &a), 1);
	assert_int_equal(probe_register("vm.kfree", record, &f), 1);
	p = kmalloc(100, GFP_KERNEL);
	assert_string_equal(a.name, "kmalloc");
	assert_int_equal(a.bytes_req, 100);
	assert_int_equal(a.bytes_alloc, 128);
	assert_string_equal(a.cache_name, "kmalloc-128");
	assert_string_equal(a.gfp_flag_name, "GFP_KERNEL");
	assert_int_equal(a.ptr, (uintptr_t)p);
	assert_true(starts_with(a.caller_function, "test_kmalloc_and_kfree_values+0x"));
	kfree(p);
	assert_string_equal(f.name, "kfree");
	assert_int_equal(f.ptr, (uintptr_t)p);
	assert_string_equal(f.cache_name, "kmalloc-128");
	assert_false(f.has_bytes);
	assert_true(starts_with(f.caller_function, "test_kmalloc_and_kfree_values+0x"));

	p = kzalloc(3000, GFP_KERNEL);
	assert_int_equal(a.bytes_req, 3000);
	assert_int_equal(a.bytes_alloc, 4096);
	assert_string_equal(a.gfp_flag_name, "GFP_KERNEL|__GFP_ZERO");
	kfree(p);
	big = kmalloc(100000, GFP_KERNEL);
	assert_int_equal(a.bytes_req, 100000);
	assert_int_equal(a.bytes_alloc, 131072);
	assert_string_equal(a.cache_name, "(page allocator)");
	kfree(big);
	assert_int_equal(f.ptr, (uintptr_t)big);
	/* a failure is a hit with ptr 0, as Linux's tracepoint */
	assert_null(kmalloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN));
	assert_int_equal(a.ptr, 0);
	assert_string_equal(a.gfp_flag_name, "GFP_KERNEL|__GFP_NOWARN");
	/* krealloc: the caller of krealloc on both hits */
	p = kmalloc(10, GFP_KERNEL);
	p = krealloc(p, 500, GFP_KERNEL);
	assert_int_equal(a.bytes_req, 500);
	assert_true(starts_with(a.caller_function, "test_kmalloc_and_kfree_values+0x"));
	assert_true(starts_with(f.caller_function, "test_kmalloc_and_kfree_values+0x"));
	kfree(p);
	kfree(NULL);
	assert_int_equal(f.ptr, 0);
	probe_unregister("vm.kmalloc", record, &a);
	probe_unregister("vm.kfree", record, &f);
}

static void test_kmem_cache_free_values(void **state)
{
	struct kmem_cache *s = kmem_cache_create("p-free", 64, 0, 0, NULL);
	struct seen f = { 0 };
	void *p = kmem_cache_alloc(s, GFP_KERNEL);

	probe_register("vm.kmem_cache_free", record, &f);
	kmem_cache_free(s, p);
	assert_int_equal(f.hits, 1);
	assert_string_equal(f.name, "kmem_cache_free");
	assert_string_equal(f.cache_name, "p-free");
	assert_int_equal(f.ptr, (uintptr_t)p);
	assert_true(starts_with(f.caller_function, "test_kmem_cache_free_values+0x"));
	probe_unregister("vm.kmem_cache_free", record, &f);
	kmem_cache_destroy(s);
}

static void test_page_probe_values(void **state)
{
	struct seen a = { 0 }, f = { 0 };
	struct page *pg;

	probe_register("vm.mm_page_alloc", record, &a);
	probe_register("vm.mm_page_free", record, &f);
	pg = alloc_pages(GFP_KERNEL | __GFP_ZERO, 2);
	assert_int_equal(a.hits, 1);
	assert_string_equal(a.name, "mm_page_alloc");
	assert_int_equal(a.page, (uintptr_t)pg);
	assert_int_equal(a.pfn, page_to_pfn(pg));
	assert_int_equal(a.order, 2);
	assert_string_equal(a.gfp_flag_name, "GFP_KERNEL|__GFP_ZERO");
	assert_true(starts_with(a.caller_function, "test_page_probe_values+0x"));
	__free_pages(pg, 2);
	assert_int_equal(f.hits, 1);
	assert_string_equal(f.name, "mm_page_free");
	assert_int_equal(f.pfn, a.pfn);
	assert_int_equal(f.order, 2);
	assert_true(starts_with(f.caller_function, "test_page_probe_values+0x"));
	assert_null(alloc_pages(GFP_ATOMIC | __GFP_NOWARN, MAX_ORDER + 1));
	assert_int_equal(a.page, 0);
	assert_int_equal(a.pfn, ~0ull);
	probe_unregister("vm.mm_page_*", record, &a);
	probe_unregister("vm.mm_page_*", record, &f);
}

static int calls;
static void counter(struct probe_hit *hit, void *data)
{
	calls++;
}

static void test_wildcards_and_limits(void **state)
{
	int n;

	kfree(kmalloc(8, GFP_KERNEL));		/* warm: no new slab below */
	n = probe_register("vm.*", counter, NULL);
	assert_int_equal(n, 6);
	assert_int_equal(probe_register("vm.*", counter, NULL), 0);	/* already there */
	calls = 0;
	kfree(kmalloc(8, GFP_KERNEL));
	assert_int_equal(calls, 2);
	assert_int_equal(probe_unregister("vm.k*", counter, NULL), 4);
	calls = 0;
	kfree(kmalloc(8, GFP_KERNEL));
	assert_int_equal(calls, 0);
	assert_int_equal(probe_unregister("vm.*", counter, NULL), 2);
	assert_int_equal(probe_register("nosuch.*", counter, NULL), -ENOENT);
	assert_int_equal(probe_register(NULL, counter, NULL), -EINVAL);
	/* handlers per point are bounded */
	for (intptr_t i = 0; i < PROBE_MAX_HANDLERS; i++)
		assert_int_equal(probe_register("vm.kfree", counter, (void *)i), 1);
	assert_int_equal(probe_register("vm.kfree", counter, (void *)99), -ENOSPC);
	calls = 0;
	kfree(NULL);
	assert_int_equal(calls, PROBE_MAX_HANDLERS);
	for (intptr_t i = 0; i < PROBE_MAX_HANDLERS; i++)
		assert_int_equal(probe_unregister("vm.kfree", counter, (void *)i), 1);
	assert_false(probe_find("vm.kfree")->enabled);
}

static void *nested;
static void allocating_handler(struct probe_hit *hit, void *data)
{
	calls++;
	nested = kmalloc(16, GFP_ATOMIC);	/* would recurse forever */
}

static void test_handler_may_allocate(void **state)
{
	struct probe_point *pp = probe_find("vm.kmalloc");
	u64 dropped = pp->dropped;
	void *p;

	probe_register("vm.kmalloc", allocating_handler, NULL);
	calls = 0;
	p = kmalloc(32, GFP_KERNEL);
	assert_int_equal(calls, 1);
	assert_non_null(nested);
	assert_int_equal(pp->dropped, dropped + 1);
	probe_unregister("vm.kmalloc", allocating_handler, NULL);
	kfree(nested);
	kfree(p);
}

static void test_print_handler_line(void **state)
{
	struct kmem_cache *s = kmem_cache_create("p-print", 64, 0, 0, NULL);
	char ptr[32];
	void *p;

	probe_register("vm.kmem_cache_alloc", probe_print_handler, NULL);
	capture();
	p = kmem_cache_alloc(s, GFP_KERNEL);
	uncapture();
	probe_unregister("vm.kmem_cache_alloc", probe_print_handler, NULL);
	snprintf(ptr, sizeof(ptr), "ptr=0x%lx", (unsigned long)(uintptr_t)p);
	EXPECT("vm.kmem_cache_alloc: name=kmem_cache_alloc call_site=0x");
	EXPECT(" caller_function=test_print_handler_line+0x");
	EXPECT(" bytes_req=64 bytes_alloc=64 gfp_flags=0xcc0 gfp_flag_name=GFP_KERNEL ");
	EXPECT(ptr);
	EXPECT(" cache_name=p-print cpu=0\n");
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

static __noinline void kmalloc_site_a(int n)
{
	for (int i = 0; i < n; i++)
		kfree(kmalloc(100, GFP_KERNEL));
}

static __noinline void kmalloc_site_b(int n)
{
	for (int i = 0; i < n; i++)
		kfree(kmalloc(1000, GFP_KERNEL));
}

static void test_count_handler_aggregates(void **state)
{
	const struct probe_count_entry *e;
	struct probe_point *pp = probe_find("vm.kmalloc");
	char *a, *b;

	probe_count_reset();
	capture();
	assert_int_equal(probe_apply_spec("vm.kmalloc:count,vm.kfree:count"), 0);
	uncapture();
	EXPECT("count attached to 1 point matching 'vm.kmalloc'");
	kmalloc_site_a(7);
	kmalloc_site_b(3);
	/* find the entries through their call sites' functions */
	capture();
	probe_count_report();
	uncapture();
	EXPECT("count vm.kmalloc: 10 hits from 2 call sites, bytes_req 3700, bytes_alloc 3968");
	EXPECT("count vm.kfree: 10 hits from 2 call sites");
	a = strstr(out, "kmalloc_site_a+0x");
	b = strstr(out, "kmalloc_site_b+0x");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);		/* sorted by hits: 7 before 3 */
	EXPECT("caller_function");
	assert_non_null(strstr(a, "7          700          896"));
	assert_non_null(strstr(b, "3         3000         3072"));
	{
		uintptr_t site = 0;

		for (uintptr_t x = ksym_address("kmalloc_site_a"); !site && x < ksym_address("kmalloc_site_a") + 200; x++)
			if (probe_count_lookup(pp, x))
				site = x;
		assert_true(site);
		e = probe_count_lookup(pp, site);
		assert_int_equal(e->hits, 7);
		assert_int_equal(e->bytes_req, 700);
		assert_int_equal(e->bytes_alloc, 7 * 128);
	}
	probe_unregister("vm.k*", probe_count_handler, NULL);
	/* the shutdown hook prints the same table */
	capture();
	run_shutdown_hooks();
	uncapture();
	EXPECT("count vm.kmalloc: 10 hits");
	probe_count_reset();
}

static void test_command_line(void **state)
{
	struct cmdline_result r;

	capture();
	cmdline_parse("probe=vm.kmem_cache_alloc:print,vm.kmalloc:count probe=vm.kfree:count", &r);
	uncapture();
	assert_int_equal(r.errors, 0);
	assert_false(probe_find("vm.kmem_cache_alloc")->enabled);	/* not before probes_init */
	capture();
	probes_init();
	uncapture();
	assert_true(probe_find("vm.kmem_cache_alloc")->enabled);
	assert_true(probe_find("vm.kmalloc")->enabled);
	assert_true(probe_find("vm.kfree")->enabled);
	probe_unregister("vm.*", probe_print_handler, NULL);
	probe_unregister("vm.*", probe_count_handler, NULL);
	/* after probes_init a probe= applies at once; every bad item is named */
	capture();
	cmdline_parse("probe=vm.kmalloc:frobnicate,vm.nothing:print,nocolon,vm.kfree:print probe=", &r);
	uncapture();
	EXPECT("unknown action 'frobnicate' in 'vm.kmalloc:frobnicate'; actions are: print count");
	EXPECT("'vm.nothing' matches no probe point; points are:");
	EXPECT("vm.kmem_cache_alloc");
	EXPECT("'nocolon' is not point:action");
	EXPECT("bad value '' for 'probe'");
	assert_int_equal(r.errors, 1);
	assert_true(probe_find("vm.kfree")->enabled);	/* the good item applied */
	probe_unregister("vm.kfree", probe_print_handler, NULL);
	capture();
	cmdline_parse("probe=justtext", &r);
	uncapture();
	assert_int_equal(r.errors, 1);
	EXPECT("expected point:action");
}

static void extra_handler(struct probe_hit *hit, void *data)
{
	(*(int *)data)++;
}

static void test_extra_actions(void **state)
{
	static int n;
	static struct probe_action act = { .name = "trace", .fn = extra_handler, .data = &n };

	probe_action_register(&act);
	assert_ptr_equal(probe_action_find("trace"), &act);
	capture();
	assert_int_equal(probe_apply_spec("vm.kmalloc:trace"), 0);
	uncapture();
	kfree(kmalloc(1, GFP_KERNEL));
	assert_int_equal(n, 1);
	probe_unregister("vm.kmalloc", extra_handler, &n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_points_and_values_exist),
		cmocka_unit_test(test_kmem_cache_alloc_values),
		cmocka_unit_test(test_kmalloc_and_kfree_values),
		cmocka_unit_test(test_kmem_cache_free_values),
		cmocka_unit_test(test_page_probe_values),
		cmocka_unit_test(test_wildcards_and_limits),
		cmocka_unit_test(test_handler_may_allocate),
		cmocka_unit_test(test_print_handler_line),
		cmocka_unit_test(test_count_handler_aggregates),
		cmocka_unit_test(test_command_line),
		cmocka_unit_test(test_extra_actions),
	};
	return cmocka_run_group_tests_name("probe", tests, setup, NULL);
}
