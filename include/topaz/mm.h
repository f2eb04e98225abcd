/* SPDX-License-Identifier: MIT */
/* The page allocator: a buddy allocator over the usable regions of the UEFI
 * memory map, with Linux's interface and meaning. */
#ifndef TOPAZ_MM_H
#define TOPAZ_MM_H

#include <topaz/types.h>
#include <topaz/list.h>
#include <topaz/gfp.h>

#define PAGE_SHIFT	12
#define PAGE_SIZE	(1UL << PAGE_SHIFT)
#define PAGE_MASK	(~(PAGE_SIZE - 1))
#define MAX_ORDER	10	/* inclusive: blocks of 1 to 1024 pages (4 MiB) */
#define NR_PAGE_ORDERS	(MAX_ORDER + 1)
#define MAX_NUMNODES	1
#define NUMA_NO_NODE	(-1)

/* struct page flags */
#define PG_reserved	BIT(0)	/* never handed out (mem_map, holes) */
#define PG_buddy	BIT(1)	/* head of a free block; ->order is its order */
#define PG_head		BIT(2)	/* head of an allocated block; ->order is its order */
#define PG_slab		BIT(3)	/* owned by the slab allocator */

/**
 * struct page - one per 4 KiB page frame of managed memory
 * @flags: PG_* bits
 * @order: block order while PG_buddy or PG_head
 * @lru: free-list link (buddy) or slab-list link (slab)
 * @caller: who allocated the block (for misuse reports)
 * @slab_cache: the owning cache while PG_slab
 * @freelist: first free object of the slab while PG_slab
 * @inuse: objects in use in the slab
 * @objects: objects in the slab
 * @slab_off: every page of a slab: -(the slab's first object's address), mod
 *	2^32, so (u32)addr + @slab_off is addr's offset from that object
 * @slab_thresh: every page of a slab: objects x (stride x @slab_magic - 2^64);
 *	0 on any other page
 * @slab_magic: every page of a slab: 2^64 / stride + 1. An offset n < 2^32
 *	times it, mod 2^64, is below @slab_thresh exactly when n is an object's
 *	start (a multiple of the stride under objects x stride): kfree() checks
 *	a pointer from its page alone (mm/kmalloc.c)
 */
struct page {
	u32 flags;
	u16 order;
	u16 objects;	/* at most SLAB_MAX_OBJECTS */
	struct list_head lru;
	uintptr_t caller;
	void *slab_cache;
	void *freelist;
	u32 inuse;
	u32 slab_off;
	u64 slab_thresh;	/* 64 bits: kfree() compares with it in memory */
	u64 slab_magic;
};

struct page_alloc_stats {
	u64 total_pages;	/* managed, excluding the mem_map itself */
	u64 free_pages;
	u64 nr_free[NR_PAGE_ORDERS];	/* free blocks per order */
	u64 allocs[NR_PAGE_ORDERS];	/* successful allocations per order */
	u64 frees;
	u64 failures;		/* allocations that returned NULL */
	u64 bad_frees;		/* double frees, wrong orders, foreign pointers */
};

/* Initialisation: reset, then add each usable physical range (page-aligned
 * inside, mapped 1:1 by phys_to_virt). Part of each range holds its mem_map. */
/** page_alloc_init() - reset the page allocator to no memory (then page_alloc_add_range()) */
void page_alloc_init(void);
/**
 * page_alloc_add_range() - give the allocator a usable physical range; its
 * start holds the range's mem_map
 * @start: the first byte (rounded up to a page)
 * @end: the byte after the last (rounded down)
 * Return: 0; -EINVAL when no page is left, -ENOSPC when the range is too
 * small for its mem_map or there are too many ranges, -EEXIST when it
 * overlaps one already added.
 */
int page_alloc_add_range(phys_addr_t start, phys_addr_t end);

/**
 * alloc_pages() - allocate 2^@order contiguous pages
 * @gfp: GFP flags (__GFP_ZERO, __GFP_NOWARN, ...)
 * @order: the block's order
 * Return: the block's first page, or NULL when memory ran out.
 */
struct page *alloc_pages(gfp_t gfp, unsigned int order);
/** alloc_pages_node() - alloc_pages() on node @nid (one node: NUMA_NO_NODE or 0) */
struct page *alloc_pages_node(int nid, gfp_t gfp, unsigned int order);
/** __free_pages() - free the block of 2^@order pages starting at @page (NULL: nothing) */
void __free_pages(struct page *page, unsigned int order);
/**
 * __get_free_pages() - alloc_pages(), as an address
 * @gfp: GFP flags
 * @order: the block's order
 * Return: the block's address, or 0 when memory ran out.
 */
uintptr_t __get_free_pages(gfp_t gfp, unsigned int order);
/**
 * get_zeroed_page() - one page filled with zeroes
 * @gfp: GFP flags
 * Return: its address, or 0 when memory ran out.
 */
uintptr_t get_zeroed_page(gfp_t gfp);
/** free_pages() - free the 2^@order pages at @addr (0: nothing) */
void free_pages(uintptr_t addr, unsigned int order);
#define alloc_page(gfp)		alloc_pages(gfp, 0)
#define __get_free_page(gfp)	__get_free_pages(gfp, 0)
#define free_page(addr)		free_pages(addr, 0)

/**
 * __alloc_pages_caller() - the allocator's core, @caller named in reports
 * (leak lists, failures, probes)
 * @nid: the node (NUMA_NO_NODE or 0)
 * @gfp: GFP flags
 * @order: the block's order
 * @caller: the return address to blame
 * Return: the block's first page, or NULL when memory ran out.
 */
struct page *__alloc_pages_caller(int nid, gfp_t gfp, unsigned int order, uintptr_t caller);
/**
 * __free_pages_caller() - free a block, @caller named in reports
 * @page: the block's first page (NULL: nothing)
 * @order: the order it was allocated with
 * @caller: the return address to blame
 * Return: 0; -EINVAL for a bad free (reported, the block left alone),
 * -EBUSY when called inside the allocator on this CPU (an NMI; the block is kept).
 */
int __free_pages_caller(struct page *page, unsigned int order, uintptr_t caller);

/**
 * pfn_to_page() - the struct page of page frame @pfn
 * Return: it, or NULL when the allocator does not manage @pfn.
 */
struct page *pfn_to_page(u64 pfn);	/* NULL when not managed */
/**
 * page_to_pfn() - the page frame number of @page
 * Return: the PFN.
 */
u64 page_to_pfn(const struct page *page);
/**
 * page_address() - the address of @page's memory (physical memory is mapped 1:1)
 * Return: the address.
 */
void *page_address(const struct page *page);
/**
 * virt_to_page() - the struct page of the page holding @addr
 * Return: it, or NULL when the allocator does not manage that page.
 */
struct page *virt_to_page(const void *addr);	/* NULL when not managed */

/*
 * The largest span of managed memory (most blocks come from it): its struct
 * page in a few instructions, for kfree()'s fast path. Set as ranges are
 * added; bytes 0 while it changes (an interrupt's reader sees no span).
 */
struct page_hot_span {
	uintptr_t start;	/* address of its first page */
	uintptr_t bytes;	/* 0: no memory yet */
	struct page *map;
	uintptr_t kfree_bytes;	/* what kfree()'s fast path takes: @bytes, 0 while kfree_checked */
	bool kfree_checked;	/* vm.kfree on: every kfree() takes the checked path */
} __aligned(64);	/* a line of its own: read by every kfree() on every CPU, and
			 * the page allocator's lock beside it would be written */
extern struct page_hot_span page_hot_span;

/* topaz maps physical memory 1:1, in the kernel and (over the arena) hosted. */
static inline phys_addr_t virt_to_phys(const void *v) { return (phys_addr_t)(uintptr_t)v; }
static inline void *phys_to_virt(phys_addr_t p) { return (void *)(uintptr_t)p; }
static inline unsigned int get_order(size_t size)
{
	unsigned int order = 0;
	size = (size - 1) >> PAGE_SHIFT;
	while (size) {
		order++;
		size >>= 1;
	}
	return order;
}

/** page_alloc_get_stats() - copy the allocator's counters and free blocks per order into @st */
void page_alloc_get_stats(struct page_alloc_stats *st);
/**
 * page_alloc_fail_nth() - fault injection (as Linux's fail_page_alloc): the
 * @nth allocation from now on fails as if memory ran out; 0 turns it off
 */
void page_alloc_fail_nth(unsigned long nth);
/** page_alloc_show_stats() - print free blocks per order and the counters */
void page_alloc_show_stats(void);

#endif
