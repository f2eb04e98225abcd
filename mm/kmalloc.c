// SPDX-License-Identifier: MIT
/*
 * kmalloc: size classes over slab caches, as Linux's. Classes are powers of
 * two from 8 B to 8 KiB plus 96 and 192 (kmalloc-8 ... kmalloc-8k); larger
 * requests are page-allocator blocks (their head page's slab_cache is
 * &kmalloc_large_tag and inuse the requested size).
 *
 * The fast paths, as mimalloc's: kmalloc() of up to 1 KiB finds this CPU's
 * array of its cache in one load from this CPU's row and pops; kfree() finds
 * the page of a pointer in the largest span, checks from it alone that the
 * pointer is an object's start, and pushes onto the array of the page's
 * cache. Everything else (large blocks, other spans, misuse, probes on) takes
 * the checked path.
 */
#define pr_fmt(fmt) "kmalloc: " fmt
#include "slab_internal.h"
#include <topaz/kernel.h>
#include <topaz/cmdline.h>
#include <topaz/shutdown.h>

static bool slabinfo_at_shutdown;
KPARAM_BOOL("slabinfo", slabinfo, &slabinfo_at_shutdown,
	    "print the slab caches' statistics (as /proc/slabinfo) at shutdown");
static struct shutdown_hook slabinfo_hook = { .name = "slabinfo", .fn = slabinfo_show };

char kmalloc_large_tag;

static void kmalloc_probe_changed(struct probe_point *pp);
static void kfree_probe_changed(struct probe_point *pp);
DEFINE_PROBE_NOTIFY(kmalloc, "vm.kmalloc", slab_alloc_values, kmalloc_probe_changed);
DEFINE_PROBE_NOTIFY(kfree, "vm.kfree", slab_free_values, kfree_probe_changed);

/* Index 1 is kmalloc-96, 2 is kmalloc-192, n >= 3 is kmalloc-2^n. */
static struct kmem_cache *kmalloc_caches[KMALLOC_SHIFT_HIGH + 1];

/* Sizes 1..192 in steps of 8, to their class index (Linux's size_index). */
static const u8 size_index[24] = {
	3, 4, 5, 5, 6, 6, 6, 6,		/* 8 16 24 32 40 48 56 64 */
	1, 1, 1, 1, 7, 7, 7, 7,		/* 72 80 88 96 104 112 120 128 */
	2, 2, 2, 2, 2, 2, 2, 2,		/* 136 ... 192 */
};

static __always_inline unsigned int kmalloc_index(size_t size)
{
	if (size <= 192)
		return size_index[(size - 1) / 8];
	return 64 - (unsigned int)__builtin_clzl(size - 1);
}

/*
 * kmalloc()'s fast path: sizes 1..KMALLOC_SMALL_MAX straight to this CPU's
 * array of their cache, by (size + 7) / 8, in one load from this CPU's row
 * (mimalloc's pages_free_direct, which its thread heap holds: here a row per
 * CPU, kmalloc_row_bytes apart). Larger sizes take kmalloc_index().
 */
#define KMALLOC_SMALL_MAX	1024
#define KMALLOC_ROW_LEN		(KMALLOC_SMALL_MAX / 8 + 1)	/* [0]: size 0, none */

/*
 * What a row holds where there is no cache yet (before kmem_cache_init(), or
 * beyond a cache's CPUs): an array with room for nothing (cap 0), so the fast
 * path misses without a test of its own and kmalloc_miss() says why. Every
 * CPU may write its state word; any value of it means "empty".
 */
static union {
	struct slab_cpu c;
	char bytes[64];
} kmalloc_none __aligned(64);
#define KMALLOC_NONE	(&kmalloc_none.c)

static struct slab_cpu *kmalloc_none_row[KMALLOC_ROW_LEN] = {
	[0 ... KMALLOC_ROW_LEN - 1] = KMALLOC_NONE
};
/* Every CPU's row (BSS: 1 KiB a CPU), filled by kmalloc_rows_fill(). */
static struct slab_cpu *kmalloc_rows_all[NR_CPUS][KMALLOC_ROW_LEN];

/*
 * The rows the fast path reads: kmalloc_none_row for every CPU (stride 0)
 * until the caches exist. Both change only in kmem_cache_init() and the
 * hosted reset, before any other CPU allocates.
 */
static struct slab_cpu **kmalloc_rows = kmalloc_none_row;
static unsigned long kmalloc_row_bytes;

/* This CPU's array for @size (0 .. KMALLOC_SMALL_MAX): entry (size + 7) / 8 of its row. */
static __always_inline struct slab_cpu *kmalloc_cpu_array(size_t size)
{
	const char *row = (const char *)kmalloc_rows + smp_processor_id() * kmalloc_row_bytes;

	/* the entry's byte offset, (size + 7) / 8 * 8, without the shift */
	return *(struct slab_cpu *const *)(row + ((size + 7) & ~(size_t)7));
}

/*
 * Fill every CPU's row: its arrays, or none while vm.kmalloc is on (the miss
 * path fires the probe, so the fast path needs no test of its own) or where
 * there is no cache. On a probe's attach or detach other CPUs may be reading:
 * each entry is one aligned store and either value is valid. The rows are
 * published (pointer, then stride) in kmem_cache_init(), before any other CPU
 * allocates, and withdrawn (stride, then pointer) only once every entry says
 * none (the hosted reset).
 */
static void kmalloc_rows_fill(void)
{
	bool any = false, checked = probe_enabled(kmalloc);

	for (unsigned int i = 0; i < KMALLOC_ROW_LEN; i++) {
		struct kmem_cache *s = i ? kmalloc_caches[kmalloc_index(i * 8)] : NULL;

		any |= s != NULL;
		for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
			WRITE_ONCE(kmalloc_rows_all[cpu][i],
				   !checked && s && cpu < s->ncpus ? slab_cpu(s, cpu) : KMALLOC_NONE);
	}
	barrier();
	if (any && kmalloc_rows != kmalloc_rows_all[0]) {
		WRITE_ONCE(kmalloc_rows, kmalloc_rows_all[0]);
		barrier();
		WRITE_ONCE(kmalloc_row_bytes, sizeof(kmalloc_rows_all[0]));
	} else if (!any && kmalloc_rows != kmalloc_none_row) {
		WRITE_ONCE(kmalloc_row_bytes, 0);
		barrier();
		WRITE_ONCE(kmalloc_rows, kmalloc_none_row);
	}
}

/* vm.kmalloc attached or detached: the rows send kmalloc() to the probed path or back. */
static void kmalloc_probe_changed(struct probe_point *pp)
{
	kmalloc_rows_fill();
}

/* vm.kfree attached or detached: kfree()'s fast path takes no pointer while it is on. */
static void kfree_probe_changed(struct probe_point *pp)
{
	bool on = READ_ONCE(pp->enabled);

	page_hot_span.kfree_checked = on;
	WRITE_ONCE(page_hot_span.kfree_bytes, on ? 0 : READ_ONCE(page_hot_span.bytes));
}

struct kmem_cache *kmalloc_cache_for(size_t size)
{
	if (!size || size > KMALLOC_MAX_CACHE_SIZE)
		return NULL;
	return kmalloc_caches[kmalloc_index(size)];
}

void kmem_cache_init(void)
{
	static const char *const names[KMALLOC_SHIFT_HIGH + 1] = {
		NULL, "kmalloc-96", "kmalloc-192", "kmalloc-8", "kmalloc-16", "kmalloc-32",
		"kmalloc-64", "kmalloc-128", "kmalloc-256", "kmalloc-512", "kmalloc-1k",
		"kmalloc-2k", "kmalloc-4k", "kmalloc-8k",
	};

	if (kmalloc_caches[3])
		return;
	if (slabinfo_at_shutdown)
		shutdown_hook_register(&slabinfo_hook);
	for (unsigned int i = 1; i <= KMALLOC_SHIFT_HIGH; i++) {
		unsigned int size = i == 1 ? 96 : i == 2 ? 192 : 1u << i;
		struct kmem_cache *s = kmem_cache_create(names[i], size, ARCH_KMALLOC_MINALIGN,
							 SLAB_PANIC, NULL);

		s->is_kmalloc = true;
		kmalloc_caches[i] = s;
	}
	kmalloc_rows_fill();
}

#if defined(TOPAZ_HOSTED) && !defined(TOPAZ_BENCH)
/* Hosted only: the fuzzers start each input from no kmalloc caches. */
int kmalloc_caches_reset(void)
{
	int kept = 0;

	for (unsigned int i = 1; i <= KMALLOC_SHIFT_HIGH; i++) {
		struct kmem_cache *s = kmalloc_caches[i];
		struct slabinfo si;

		if (!s)
			continue;
		kmem_cache_shrink(s);
		kmem_cache_get_slabinfo(s, &si);
		if (si.active_slabs) {
			kept++;
			continue;
		}
		kmem_cache_destroy(s);
		kmalloc_caches[i] = NULL;
	}
	kmalloc_rows_fill();
	return kept;
}
#endif

static void mark_large(struct page *head, size_t size)
{
	unsigned int n = 1u << head->order;

	head->slab_cache = &kmalloc_large_tag;
	head->inuse = (u32)size;
	head->freelist = NULL;
	for (unsigned int i = 1; i < n; i++) {
		head[i].slab_cache = &kmalloc_large_tag;
		head[i].freelist = head;
	}
}

static void clear_large(struct page *head)
{
	unsigned int n = 1u << head->order;

	for (unsigned int i = 0; i < n; i++) {
		head[i].slab_cache = NULL;
		head[i].freelist = NULL;
	}
	head->inuse = 0;
}

static __noinline void *kmalloc_large(size_t size, gfp_t gfp, uintptr_t caller)
{
	struct page *page = NULL;
	unsigned int order;
	void *p = NULL;

	if (!size) {
		p = ZERO_SIZE_PTR;
		goto out;
	}
	if (size > KMALLOC_MAX_SIZE) {
		if (!(gfp & __GFP_NOWARN))
			pr_warn("kmalloc(%zu) refused: larger than KMALLOC_MAX_SIZE (%lu); caller %pS\n",
				size, KMALLOC_MAX_SIZE, (void *)caller);
		goto out;
	}
	order = get_order(size);
	page = __alloc_pages_caller(NUMA_NO_NODE, gfp | __GFP_NOWARN, order, caller);
	if (!page && gfpflags_allow_blocking(gfp) && kmem_cache_shrink_all())
		page = __alloc_pages_caller(NUMA_NO_NODE, gfp | __GFP_NOWARN, order, caller);
	if (!page) {
		if (!(gfp & __GFP_NOWARN)) {
			char g[96];

			pr_warn("kmalloc(%zu): allocation failure, order %u, mode %s, caller %pS\n", size,
				order, gfp_flags_name(gfp, g, sizeof(g)), (void *)caller);
		}
		goto out;
	}
	mark_large(page, size);
	p = page_address(page);
out:
	if (probe_enabled(kmalloc))
		slab_fire_alloc(&probe_kmalloc, "(page allocator)", p, size,
				page ? PAGE_SIZE << page->order : 0, gfp, caller);
	return p;
}

static __noinline void *kmalloc_noinit(size_t size, uintptr_t caller)
{
	pr_err("kmalloc(%zu) before kmem_cache_init(); caller %pS\n", size, (void *)caller);
	return NULL;
}

/* Every size, every gfp: the slow end of the fast paths below. */
static void *kmalloc_caller(size_t size, gfp_t gfp, uintptr_t caller)
{
	struct kmem_cache *s;

	if (unlikely(!size || size > KMALLOC_MAX_CACHE_SIZE))
		return kmalloc_large(size, gfp, caller);
	s = kmalloc_caches[kmalloc_index(size)];
	if (unlikely(!s))
		return kmalloc_noinit(size, caller);
	return slab_alloc_done(s, slab_alloc_fast(s, gfp, caller, size), gfp, caller, size,
			       &probe_kmalloc);
}

/* The fast path found no object: the slow path, or no cache for this CPU yet. */
static __noinline void *kmalloc_miss(size_t size, gfp_t gfp, uintptr_t caller, struct slab_cpu *c)
{
	struct kmem_cache *s;

	if (!size)
		return kmalloc_caller(size, gfp, caller);	/* ZERO_SIZE_PTR */
	s = kmalloc_caches[kmalloc_index(size)];
	if (unlikely(c == KMALLOC_NONE)) {
		if (!s)
			return kmalloc_noinit(size, caller);
		/* vm.kmalloc on, or a CPU past the cache's arrays: the whole path */
		return kmalloc_caller(size, gfp, caller);
	}
	return slab_alloc_slow(s, gfp, caller, size, &probe_kmalloc);
}

/*
 * The fast path of __kmalloc() and __kmalloc_nz(): a small size's array on
 * this CPU in one load from its row, a pop; @may_zero: test @gfp for
 * __GFP_ZERO. Always inlined: _RET_IP_ is the API function's caller.
 */
static __always_inline void *kmalloc_fast(size_t size, gfp_t gfp, bool may_zero)
{
	struct slab_cpu *c;
	void *p;

	if (unlikely(size > KMALLOC_SMALL_MAX))	/* 0: the row's none entry */
		return kmalloc_caller(size, gfp, _RET_IP_);
	c = kmalloc_cpu_array(size);
	SLAB_ALLOC_FASTPATH_CPU(c, p, kmalloc_miss(size, gfp, _RET_IP_, c));
	/* vm.kmalloc on: the rows hold no array (kmalloc_rows_fill()), kmalloc_miss() fires it */
	if (may_zero && unlikely(gfp & __GFP_ZERO))
		return slab_alloc_done(kmalloc_caches[kmalloc_index(size)], p, gfp, _RET_IP_, size,
				       &probe_kmalloc);
	return p;
}

void *__kmalloc(size_t size, gfp_t gfp)
{
	return kmalloc_fast(size, gfp, true);
}

void *__kmalloc_nz(size_t size, gfp_t gfp)
{
	return kmalloc_fast(size, gfp, false);
}

void *kzalloc(size_t size, gfp_t gfp)
{
	return kmalloc_caller(size, gfp | __GFP_ZERO, _RET_IP_);
}

static void *kmalloc_array_caller(size_t n, size_t size, gfp_t gfp, uintptr_t caller)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		if (!(gfp & __GFP_NOWARN))
			pr_warn("array of %zu x %zu bytes overflows; caller %pS\n", n, size,
				(void *)caller);
		return NULL;
	}
	return kmalloc_caller(bytes, gfp, caller);
}

void *kmalloc_array(size_t n, size_t size, gfp_t gfp)
{
	return kmalloc_array_caller(n, size, gfp, _RET_IP_);
}

void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	return kmalloc_array_caller(n, size, gfp | __GFP_ZERO, _RET_IP_);
}

/*
 * What kind of kmalloc pointer @p is: 1 a slab object (*@sp, *@headp set),
 * 2 a large block, 0 not a kmalloc pointer (reported, naming @who).
 */
static int classify(const void *p, uintptr_t caller, const char *who, struct kmem_cache **sp,
		    struct page **headp)
{
	struct page *page = slab_head_page(p);

	*headp = page;
	if (likely(page && (page->flags & PG_slab))) {
		struct kmem_cache *s = page->slab_cache;
		bool start;

		*sp = s;
		slab_obj_index(s, page, p, &start);
		if (likely(start))
			return 1;
		slab_report(s, p, caller, "%s of a pointer that is not an object's start", who);
		slab_print_object(p);
		slab_fix(s, "Pointer ignored");
		slab_check_pending_panic();
		return 0;
	}
	if (page && page->slab_cache == &kmalloc_large_tag) {
		if ((page->flags & PG_head) && page_address(page) == p)
			return 2;
		slab_report_ptr(p, caller, "%s of a pointer inside a large kmalloc block", who);
	} else if (!page) {
		slab_report_ptr(p, caller, "%s of a pointer the allocator does not manage", who);
	} else if (page->flags & PG_buddy) {
		slab_report_ptr(p, caller, "%s of a free page (double free of a large kmalloc block?)",
				who);
	} else {
		slab_report_ptr(p, caller, "%s of a pointer kmalloc did not return", who);
	}
	slab_check_pending_panic();
	return 0;
}

void __kfree_caller(const void *p, uintptr_t caller)
{
	struct kmem_cache *s = NULL;
	struct page *page;
	int kind;

	if (unlikely(ZERO_OR_NULL_PTR(p))) {
		if (probe_enabled(kfree))
			slab_fire_free(&probe_kfree, "", p, caller);
		return;
	}
	kind = classify(p, caller, "kfree", &s, &page);
	if (probe_enabled(kfree))
		slab_fire_free(&probe_kfree, kind == 1 ? s->name : kind == 2 ? "(page allocator)" : "",
			       p, caller);
	if (likely(kind == 1)) {
		slab_free_fast(s, (void *)p, caller);
	} else if (kind == 2) {
		unsigned int order = page->order;

		clear_large(page);
		__free_pages_caller(page, order, caller);
	}
}

/*
 * The fast path: a pointer in the largest span (page_hot_span) whose page
 * says it is an object's start (slab_page_obj_start(): one multiply, exact
 * for every stride, without the head page or a divide) goes onto this CPU's
 * array of its cache. Anything else, and any
 * kfree() with the probe on, takes __kfree_caller(): the same checks from the
 * head page, and the reports.
 */
void kfree(const void *p)
{
	struct kmem_cache *s;
	struct page *page;
	uintptr_t off;

	off = (uintptr_t)p - page_hot_span.start;
	/* NULL and ZERO_SIZE_PTR too, and every pointer while vm.kfree is on */
	if (unlikely(off >= page_hot_span.kfree_bytes))
		goto slow;
	page = page_hot_span.map + (off >> PAGE_SHIFT);
	if (unlikely(!slab_page_obj_start(page, p)))
		goto slow;	/* not an object's start, or not a slab page */
	s = page->slab_cache;
	SLAB_FREE_FASTPATH(s, (void *)p, __slab_free(s, (void *)p, _RET_IP_));
	return;
slow:
	__kfree_caller(p, _RET_IP_);
}

/* Usable bytes of @p; 0 (reported) when @p is not a kmalloc object. */
static size_t usable(const void *p, uintptr_t caller, const char *who, struct kmem_cache **sp)
{
	struct page *page;

	*sp = NULL;
	switch (classify(p, caller, who, sp, &page)) {
	case 1:
		return (*sp)->object_size;
	case 2:
		return PAGE_SIZE << page->order;
	}
	return 0;
}

size_t ksize(const void *p)
{
	struct kmem_cache *s;
	size_t n;

	if (ZERO_OR_NULL_PTR(p))
		return 0;
	n = usable(p, _RET_IP_, "ksize", &s);
	/* the caller may now use all of it: stop checking the kmalloc red zone */
	if (n && s && s->debug)
		obj_meta(s, (void *)p)->orig_size = s->object_size;
	return n;
}

void *krealloc(const void *p, size_t new_size, gfp_t gfp)
{
	uintptr_t caller = _RET_IP_;
	struct kmem_cache *s;
	size_t have, copy;
	void *n;

	if (!new_size) {
		__kfree_caller(p, caller);
		return ZERO_SIZE_PTR;
	}
	if (ZERO_OR_NULL_PTR(p))
		return kmalloc_caller(new_size, gfp, caller);
	have = usable(p, caller, "krealloc", &s);
	if (!have)
		return NULL;
	copy = have;
	if (s && s->debug)
		copy = obj_meta(s, (void *)p)->orig_size;
	/* in place when the size class already holds it (and the kind stays) */
	if (new_size <= have && (s ? new_size <= KMALLOC_MAX_CACHE_SIZE :
				 new_size > KMALLOC_MAX_CACHE_SIZE)) {
		if ((gfp & __GFP_ZERO) && new_size > copy)
			memset((char *)p + copy, 0, new_size - copy);
		if (s && s->debug) {
			struct slab_meta *m = obj_meta(s, (void *)p);

			if ((s->flags & SLAB_RED_ZONE) && new_size < s->object_size)
				memset((char *)p + new_size, SLUB_RED_ACTIVE, s->object_size - new_size);
			m->orig_size = (u32)new_size;
		}
		return (void *)p;
	}
	n = kmalloc_caller(new_size, gfp, caller);
	if (!n)
		return NULL;
	memcpy(n, p, copy < new_size ? copy : new_size);
	__kfree_caller(p, caller);
	return n;
}
