/* SPDX-License-Identifier: MIT */
/*
 * The slab allocator: object caches over page-allocator blocks, and kmalloc,
 * with Linux's interface and meaning (mm/slab*.c, mm/kmalloc.c).
 *
 * Allocation goes through a per-CPU object array (a "sheaf"): a pop or push
 * of a few instructions, safe against interrupts and NMIs without disabling
 * them. Slabs with free objects refill it, and a full array flushes half of
 * itself back to its slabs. Caches with debugging get no array: every object
 * goes through the checked slow path.
 *
 * Probe points (SystemTap memory-tapset names): vm.kmem_cache_alloc,
 * vm.kmem_cache_free, vm.kmalloc, vm.kfree.
 */
#ifndef TOPAZ_SLAB_H
#define TOPAZ_SLAB_H

#include <topaz/types.h>
#include <topaz/gfp.h>
#include <topaz/mm.h>

typedef unsigned int slab_flags_t;

/* Cache flags at Linux's historic values (include/linux/slab.h, <= 6.8). */
#define SLAB_CONSISTENCY_CHECKS	0x00000100u	/* slub_debug=F: check every alloc/free */
#define SLAB_RED_ZONE		0x00000400u	/* slub_debug=Z: red zones around objects */
#define SLAB_POISON		0x00000800u	/* slub_debug=P: poison free objects */
#define SLAB_HWCACHE_ALIGN	0x00002000u	/* align objects to cache lines */
#define SLAB_STORE_USER		0x00010000u	/* slub_debug=U: keep last alloc/free call site */
#define SLAB_PANIC		0x00040000u	/* panic if kmem_cache_create fails */
#define SLAB_DEBUG_FLAGS	(SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | \
				 SLAB_STORE_USER)

/* Byte patterns, as include/linux/poison.h. */
#define SLUB_RED_INACTIVE	0xbb	/* red zone of a free object */
#define SLUB_RED_ACTIVE		0xcc	/* red zone of an allocated object */
#define POISON_INUSE		0x5a	/* padding; never-initialised memory */
#define POISON_FREE		0x6b	/* a freed object */
#define POISON_END		0xa5	/* the last byte of a poisoned object */

/* kmalloc(0) returns this: not NULL, never dereferenceable, fine to kfree. */
#define ZERO_SIZE_PTR		((void *)16)
#define ZERO_OR_NULL_PTR(x)	((uintptr_t)(x) <= (uintptr_t)ZERO_SIZE_PTR)

#define KMALLOC_MIN_SIZE	8
#define KMALLOC_SHIFT_HIGH	(PAGE_SHIFT + 1)
#define KMALLOC_MAX_CACHE_SIZE	(1UL << KMALLOC_SHIFT_HIGH)	/* 8 KiB: larger go to pages */
#define KMALLOC_MAX_SIZE	(PAGE_SIZE << MAX_ORDER)
#define ARCH_KMALLOC_MINALIGN	8
#define KMEM_CACHE_NAME_LEN	48

struct kmem_cache;

/**
 * kmem_cache_create() - create a cache of objects of @size bytes
 * @name: for reports and slabinfo; copied (at most KMEM_CACHE_NAME_LEN - 1 chars)
 * @size: object size, 1 byte up to what one page-allocator block holds
 * @align: 0 or a power of two up to PAGE_SIZE; objects are at least 8-aligned
 * @flags: SLAB_* flags; slub_debug= may add debug flags by cache name
 * @ctor: called on each object when its slab is created, or NULL
 *
 * Returns the cache, or NULL after a message naming what is wrong (a panic
 * instead under SLAB_PANIC).
 */
struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
				     slab_flags_t flags, void (*ctor)(void *));
/**
 * kmem_cache_destroy() - free an empty cache and all its slabs
 *
 * A cache with objects still allocated is reported (each object, with its
 * allocation call site when tracked) and left alone, as Linux does.
 */
void kmem_cache_destroy(struct kmem_cache *s);
/**
 * kmem_cache_alloc() - an object from @s, or NULL
 * @gfp: __GFP_ZERO zeroes it; callers that may not block (GFP_ATOMIC) never
 *	wait and never reclaim; __GFP_NOWARN silences the failure message
 */
static inline __attribute__((always_inline)) void *kmem_cache_alloc(struct kmem_cache *s,
								   gfp_t gfp);
/**
 * __kmem_cache_alloc() - kmem_cache_alloc()'s out-of-line entry; the call
 * site is its return address, so probes and reports name the real caller
 * @s: the cache
 * @gfp: as kmem_cache_alloc()'s
 * Return: the object, or NULL when memory ran out.
 */
void *__kmem_cache_alloc(struct kmem_cache *s, gfp_t gfp);
/**
 * __kmem_cache_alloc_nz() - __kmem_cache_alloc() for a constant @gfp without
 * __GFP_ZERO (the common case: no test for zeroing)
 * @s: the cache
 * @gfp: as kmem_cache_alloc()'s
 * Return: the object, or NULL when memory ran out.
 */
void *__kmem_cache_alloc_nz(struct kmem_cache *s, gfp_t gfp);
static inline __attribute__((always_inline)) void *kmem_cache_alloc(struct kmem_cache *s,
								   gfp_t gfp)
{
	if (__builtin_constant_p(gfp) && !(gfp & __GFP_ZERO))
		return __kmem_cache_alloc_nz(s, gfp);
	return __kmem_cache_alloc(s, gfp);
}
/** kmem_cache_zalloc() - kmem_cache_alloc() with __GFP_ZERO */
void *kmem_cache_zalloc(struct kmem_cache *s, gfp_t gfp);
/** kmem_cache_free() - return @obj to @s (NULL is ignored) */
void kmem_cache_free(struct kmem_cache *s, void *obj);
/**
 * kmem_cache_alloc_bulk() - allocate @nr objects into @p
 * Returns @nr, or 0 with nothing allocated, as Linux's.
 */
int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t nr, void **p);
/** kmem_cache_free_bulk() - free @nr objects of @p; @s NULL means kmalloc objects */
void kmem_cache_free_bulk(struct kmem_cache *s, size_t nr, void **p);
/**
 * kmem_cache_shrink() - flush the per-CPU arrays and give empty slabs back
 * Returns the number of pages given back to the page allocator.
 */
int kmem_cache_shrink(struct kmem_cache *s);
/** kmem_cache_shrink_all() - shrink every cache (what memory pressure does) */
unsigned long kmem_cache_shrink_all(void);
/**
 * kmem_cache_name() - the name @s was created with
 * Return: the name.
 */
const char *kmem_cache_name(const struct kmem_cache *s);
/** kmem_cache_size() - the object size the cache was created with */
unsigned int kmem_cache_size(const struct kmem_cache *s);

/*
 * kmalloc() objects are 8-byte aligned; without debugging, power-of-two
 * sizes are naturally aligned (kmalloc(256) is 256-aligned), as Linux's.
 */
/**
 * __kmalloc() - kmalloc()'s out-of-line entry; the call site is its return
 * address, so probes and reports name the real caller
 * @size: the size
 * @gfp: as kmalloc()'s
 * Return: the memory, or NULL when memory ran out.
 */
void *__kmalloc(size_t size, gfp_t gfp);
/**
 * __kmalloc_nz() - __kmalloc() for a constant @gfp without __GFP_ZERO (no
 * test for zeroing)
 * @size: the size
 * @gfp: as kmalloc()'s
 * Return: the memory, or NULL when memory ran out.
 */
void *__kmalloc_nz(size_t size, gfp_t gfp);
/**
 * kmalloc() - allocate @size bytes
 * @size: the size
 * @gfp: GFP flags (__GFP_ZERO zeroes it)
 * Return: the memory, or NULL when memory ran out.
 */
static inline __attribute__((always_inline)) void *kmalloc(size_t size, gfp_t gfp)
{
	if (__builtin_constant_p(gfp) && !(gfp & __GFP_ZERO))
		return __kmalloc_nz(size, gfp);
	return __kmalloc(size, gfp);
}
/**
 * kzalloc() - kmalloc() of zeroed memory
 * @size: the size
 * @gfp: GFP flags
 * Return: the memory, or NULL when memory ran out.
 */
void *kzalloc(size_t size, gfp_t gfp);
/**
 * kmalloc_array() - kmalloc() of @n elements of @size bytes
 * @n: the number of elements
 * @size: each one's size
 * @gfp: GFP flags
 * Return: the memory, or NULL when memory ran out or @n * @size overflows.
 */
void *kmalloc_array(size_t n, size_t size, gfp_t gfp);
/**
 * kcalloc() - kmalloc_array() of zeroed memory
 * @n: the number of elements
 * @size: each one's size
 * @gfp: GFP flags
 * Return: the memory, or NULL when memory ran out or @n * @size overflows.
 */
void *kcalloc(size_t n, size_t size, gfp_t gfp);
/**
 * krealloc() - resize @p to @new_size, keeping its contents
 * In place when the object's size class already holds @new_size. @new_size 0
 * frees @p and returns ZERO_SIZE_PTR. On failure returns NULL and @p is intact.
 */
void *krealloc(const void *p, size_t new_size, gfp_t gfp);
/** kfree() - free a kmalloc object (NULL and ZERO_SIZE_PTR are ignored) */
void kfree(const void *p);
/**
 * ksize() - usable size of the kmalloc object @p (its size class)
 * The caller may use all of it: with red zones, the gap past the requested
 * size stops being checked.
 */
size_t ksize(const void *p);
/** kmalloc_cache_for() - the cache that serves kmalloc(@size), NULL above 8 KiB */
struct kmem_cache *kmalloc_cache_for(size_t size);

/**
 * kmem_cache_init() - create the kmalloc caches; call once, right after the
 * page allocator is up and the command line (slub_debug=, slabinfo) is
 * parsed. Calling it again does nothing.
 */
void kmem_cache_init(void);

/**
 * struct slabinfo - a cache's /proc/slabinfo line and counters
 * @active_objs: objects handed out and not freed
 * @num_objs: objects in all slabs
 * @cpu_cached: free objects held in the per-CPU arrays
 * @objsize: object size with metadata (the stride in the slab)
 * @object_size: the size asked for at creation
 */
struct slabinfo {
	const char *name;
	unsigned long active_objs, num_objs, cpu_cached;
	unsigned int objsize, object_size, objperslab, pagesperslab;
	unsigned long active_slabs, num_slabs;
	unsigned long nr_partial, nr_full, nr_free;
	slab_flags_t flags;
	/* counters (slow path events; the array fast path is not counted) */
	u64 alloc_slowpath, free_slowpath, refills, flushes;
	u64 slabs_allocated, slabs_freed, alloc_failures, nmi_contended;
	u64 errors;	/* misuse and corruption reports */
};
/** kmem_cache_get_slabinfo() - @s's object, slab and per-CPU counts into @info */
void kmem_cache_get_slabinfo(struct kmem_cache *s, struct slabinfo *info);
/** slabinfo_show() - print /proc/slabinfo for every cache */
void slabinfo_show(void);

/*
 * Debugging (mm/slab_debug.c). slub_debug= on the command line, as Linux's:
 *   slub_debug            all of F, Z, P, U on every cache
 *   slub_debug=FZ         those letters on every cache
 *   slub_debug=PU,foo,kmalloc-*   on the listed caches (wildcards allowed)
 *   slub_debug=-          off;  blocks separated by ';'
 * slub_debug_panic=on makes a report panic instead of repairing and going on.
 */
/** kmem_cache_validate() - check every free object of @s; returns errors found */
int kmem_cache_validate(struct kmem_cache *s);
/** slab_debug_set_panic() - panic on reports (true) or repair and go on */
void slab_debug_set_panic(bool panic);
/** slab_debug_parse() - apply a slub_debug= value to caches created from now on */
int slab_debug_parse(const char *spec);
/** slab_debug_errors() - reports made so far, over all caches */
u64 slab_debug_errors(void);

#endif
