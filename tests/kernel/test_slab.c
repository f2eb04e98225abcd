// SPDX-License-Identifier: MIT
/* In-kernel tests of the slab allocator and the memory probe points (test=slab). */
#include <topaz/ktest.h>
#include <topaz/kernel.h>
#include <topaz/slab.h>
#include <topaz/probe.h>
#include <topaz/mm.h>

static char out[8192];

static void quiet_capture(void)
{
	printk_capture_start(out, sizeof(out));
}

/* kmem_cache_init() is idempotent: the suite runs whether or not boot made the caches. */
#define SLAB_UP() kmem_cache_init()

KTEST(slab, cache_alloc_free)
{
	SLAB_UP();
	struct kmem_cache *s = kmem_cache_create("kt-basic", 72, 0, 0, NULL);
	static void *p[600];
	struct slabinfo si;

	KT_ASSERT(s);
	for (int i = 0; i < 600; i++) {
		p[i] = kmem_cache_alloc(s, GFP_KERNEL);
		KT_ASSERT(p[i]);
		memset(p[i], i & 0xff, 72);
	}
	for (int i = 0; i < 600; i++) {
		const u8 *b = p[i];

		for (int k = 0; k < 72; k++)
			if (b[k] != (i & 0xff)) {
				KT_EXPECT(b[k] == (i & 0xff));	/* an object handed out twice */
				break;
			}
	}
	kmem_cache_get_slabinfo(s, &si);
	KT_EXPECT_EQ(si.active_objs, 600);
	for (int i = 0; i < 600; i++)
		kmem_cache_free(s, p[i]);
	kmem_cache_get_slabinfo(s, &si);
	KT_EXPECT_EQ(si.active_objs, 0);
	KT_EXPECT(kmem_cache_shrink(s) > 0);
	kmem_cache_destroy(s);
}

KTEST(slab, kmalloc_classes)
{
	SLAB_UP();
	static const size_t sizes[] = { 1, 8, 9, 64, 65, 96, 100, 129, 192, 200, 1000, 4096, 8192 };
	static const size_t classes[] = { 8, 8, 16, 64, 96, 96, 128, 192, 192, 256, 1024, 4096, 8192 };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		void *p = kmalloc(sizes[i], GFP_KERNEL);

		KT_ASSERT(p);
		KT_EXPECT_EQ(ksize(p), classes[i]);
		memset(p, 0x5c, classes[i]);
		kfree(p);
	}
	KT_EXPECT(kmalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);
	kfree(ZERO_SIZE_PTR);
	kfree(NULL);
}

KTEST(slab, kmalloc_large_and_krealloc)
{
	SLAB_UP();
	struct page_alloc_stats a, b;
	char *p, *q;

	page_alloc_get_stats(&a);
	p = kzalloc(100000, GFP_KERNEL);
	KT_ASSERT(p);
	KT_EXPECT_EQ(ksize(p), 131072);
	KT_EXPECT_EQ(p[99999], 0);
	strscpy(p, "kept", 8);
	q = krealloc(p, 10, GFP_KERNEL);
	KT_ASSERT(q);
	KT_EXPECT(!strcmp(q, "kept"));
	KT_EXPECT_EQ(ksize(q), 16);
	kfree(q);
	page_alloc_get_stats(&b);
	KT_EXPECT(b.free_pages + 16 >= a.free_pages);	/* the large block went back */
}

KTEST(slab, bulk)
{
	SLAB_UP();
	struct kmem_cache *s = kmem_cache_create("kt-bulk", 256, 0, SLAB_HWCACHE_ALIGN, NULL);
	static void *p[300];

	KT_ASSERT(s);
	KT_EXPECT_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL | __GFP_ZERO, 300, p), 300);
	for (int i = 0; i < 300; i++) {
		KT_EXPECT(IS_ALIGNED((uintptr_t)p[i], 64));
		KT_EXPECT_EQ(((u8 *)p[i])[255], 0);
	}
	kmem_cache_free_bulk(s, 300, p);
	kmem_cache_destroy(s);
}

/* slub_kunit's shape: one byte past the object, then validate */
KTEST(slab, redzone_overwrite_reported)
{
	SLAB_UP();
	struct kmem_cache *s = kmem_cache_create("kt-rz", 64, 0, SLAB_RED_ZONE, NULL);
	u8 *p;

	KT_ASSERT(s);
	p = kmem_cache_alloc(s, GFP_KERNEL);
	p[64] = 0x41;
	quiet_capture();
	KT_EXPECT_EQ(kmem_cache_validate(s), 1);
	printk_capture_stop();
	KT_EXPECT_STR(out, "BUG kt-rz: Right Redzone overwritten");
	KT_EXPECT_STR(out, "First byte 0x41 instead of 0xcc");
	KT_EXPECT_EQ(kmem_cache_validate(s), 0);
	kmem_cache_free(s, p);
	kmem_cache_destroy(s);
}

KTEST(slab, double_free_and_use_after_free_reported)
{
	SLAB_UP();
	struct kmem_cache *s = kmem_cache_create("kt-df", 48, 0, SLAB_POISON | SLAB_STORE_USER, NULL);
	u8 *p, *q;

	KT_ASSERT(s);
	p = kmem_cache_alloc(s, GFP_KERNEL);
	kmem_cache_free(s, p);
	quiet_capture();
	kmem_cache_free(s, p);
	printk_capture_stop();
	KT_EXPECT_STR(out, "BUG kt-df: Double free");
	KT_EXPECT_STR(out, "INFO: Freed in ktest_slab_double_free_and_use_after_free_reported+0x");
	p[3] = 1;			/* write after free */
	quiet_capture();
	q = kmem_cache_alloc(s, GFP_KERNEL);
	printk_capture_stop();
	KT_EXPECT(q && q != p);
	KT_EXPECT_STR(out, "BUG kt-df: Poison overwritten: use after free");
	kmem_cache_free(s, q);
}

KTEST(slab, bad_create_refused)
{
	SLAB_UP();
	quiet_capture();
	KT_EXPECT(!kmem_cache_create("kt-bad", 0, 0, 0, NULL));
	KT_EXPECT(!kmem_cache_create("kt-bad", 16, 24, 0, NULL));
	KT_EXPECT(!kmem_cache_create("kt-bad", 64u << 20, 0, 0, NULL));
	printk_capture_stop();
	KT_EXPECT_STR(out, "object size 0");
	KT_EXPECT_STR(out, "alignment 24 is not 0 or a power of two");
	KT_EXPECT_STR(out, "larger than the largest slab");
}

struct kt_seen {
	int hits;
	u64 bytes_req, bytes_alloc, ptr;
	char caller[96], gfp[64], cache[32], name[32];
};

static void kt_record(struct probe_hit *hit, void *data)
{
	struct kt_seen *s = data;
	const char *str;

	s->hits++;
	probe_get_u64(hit, "bytes_req", &s->bytes_req);
	probe_get_u64(hit, "bytes_alloc", &s->bytes_alloc);
	probe_get_u64(hit, "ptr", &s->ptr);
	str = probe_get_str(hit, "caller_function");
	strscpy(s->caller, str ? str : "", sizeof(s->caller));
	str = probe_get_str(hit, "gfp_flag_name");
	strscpy(s->gfp, str ? str : "", sizeof(s->gfp));
	str = probe_get_str(hit, "cache_name");
	strscpy(s->cache, str ? str : "", sizeof(s->cache));
	str = probe_get_str(hit, "name");
	strscpy(s->name, str ? str : "", sizeof(s->name));
}

KTEST(slab, probe_values)
{
	SLAB_UP();
	static struct kt_seen seen;
	struct kmem_cache *s = kmem_cache_create("kt-probe", 40, 0, 0, NULL);
	gfp_t gfp = GFP_KERNEL | __GFP_ZERO;
	void *p;

	KT_ASSERT(s);
	memset(&seen, 0, sizeof(seen));
	KT_EXPECT_EQ(probe_register("vm.kmem_cache_alloc", kt_record, &seen), 1);
	p = kmem_cache_alloc(s, gfp);
	probe_unregister("vm.kmem_cache_alloc", kt_record, &seen);
	KT_EXPECT_EQ(seen.hits, 1);
	KT_EXPECT_EQ(seen.bytes_req, 40);
	KT_EXPECT_EQ(seen.bytes_alloc, 40);
	KT_EXPECT_EQ(seen.ptr, (uintptr_t)p);
	KT_EXPECT(!strcmp(seen.name, "kmem_cache_alloc"));
	KT_EXPECT(!strcmp(seen.gfp, "GFP_KERNEL|__GFP_ZERO"));
	KT_EXPECT(!strcmp(seen.cache, "kt-probe"));
	KT_EXPECT_STR(seen.caller, "ktest_slab_probe_values+0x");
	kmem_cache_free(s, p);

	memset(&seen, 0, sizeof(seen));
	probe_register("vm.kmalloc", kt_record, &seen);
	p = kmalloc(100, GFP_ATOMIC);
	probe_unregister("vm.kmalloc", kt_record, &seen);
	KT_EXPECT_EQ(seen.bytes_req, 100);
	KT_EXPECT_EQ(seen.bytes_alloc, 128);
	KT_EXPECT(!strcmp(seen.gfp, "GFP_ATOMIC"));
	KT_EXPECT(!strcmp(seen.cache, "kmalloc-128"));
	KT_EXPECT_STR(seen.caller, "ktest_slab_probe_values+0x");
	kfree(p);
	kmem_cache_destroy(s);
}
