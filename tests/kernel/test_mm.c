// SPDX-License-Identifier: MIT
/* The page allocator on the real memory map. */
#include <topaz/ktest.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>

KTEST(mm, every_order_aligned_and_usable)
{
	for (unsigned int o = 0; o <= MAX_ORDER; o++) {
		struct page *p = alloc_pages(GFP_KERNEL | __GFP_ZERO, o);
		u64 *v;

		KT_ASSERT(p);
		v = page_address(p);
		KT_EXPECT_EQ((uintptr_t)v & ((PAGE_SIZE << o) - 1), 0);
		KT_EXPECT_EQ(v[(PAGE_SIZE << o) / 8 - 1], 0);
		v[0] = 0x1234;
		v[(PAGE_SIZE << o) / 8 - 1] = 0x5678;
		KT_EXPECT_EQ(virt_to_page(v), p);
		__free_pages(p, o);
	}
}

KTEST(mm, stats_balance)
{
	struct page_alloc_stats a, b;
	uintptr_t x[32];

	page_alloc_get_stats(&a);
	for (int i = 0; i < 32; i++)
		x[i] = __get_free_pages(GFP_KERNEL, (unsigned int)(i % 4));
	for (int i = 0; i < 32; i++)
		free_pages(x[i], (unsigned int)(i % 4));
	page_alloc_get_stats(&b);
	KT_EXPECT_EQ(a.free_pages, b.free_pages);
	KT_EXPECT_EQ(b.frees - a.frees, 32);
	KT_EXPECT(a.total_pages > 1000);
}

KTEST(mm, double_free_reported_with_caller)
{
	static char out[2048];
	struct page_alloc_stats a, b;
	uintptr_t x = __get_free_page(GFP_KERNEL);

	free_page(x);
	page_alloc_get_stats(&a);
	printk_capture_start(out, sizeof(out));
	free_page(x);
	printk_capture_stop();
	page_alloc_get_stats(&b);
	KT_EXPECT_EQ(b.bad_frees, a.bad_frees + 1);
	KT_EXPECT_EQ(b.free_pages, a.free_pages);
	KT_EXPECT_STR(out, "double free");
	KT_EXPECT_STR(out, "ktest_mm_double_free_reported_with_caller+0x");
}

KTEST(mm, out_of_memory_returns_null)
{
	static uintptr_t blocks[1024];
	int n = 0;
	struct page_alloc_stats a;

	page_alloc_get_stats(&a);
	while (n < 1024 && (blocks[n] = __get_free_pages(GFP_KERNEL | __GFP_NOWARN, MAX_ORDER)))
		n++;
	KT_EXPECT(n < 1024);	/* 512 MiB of RAM runs out of 4 MiB blocks first */
	KT_EXPECT(n > 10);
	while (n--)
		free_pages(blocks[n], MAX_ORDER);
	struct page_alloc_stats b;
	page_alloc_get_stats(&b);
	KT_EXPECT_EQ(a.free_pages, b.free_pages);
	KT_EXPECT(b.failures > a.failures);
}
