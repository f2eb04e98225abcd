// SPDX-License-Identifier: MIT
/*
 * The page allocator: a binary buddy system over the usable physical ranges.
 * Blocks of order n are 2^n pages, naturally aligned on their physical
 * address, so a block of order 10 is a 4 MiB region usable as one ToPA entry.
 * Each added range is a "span" with its own struct page array (mem_map),
 * carved from the range's first pages.
 */
#define pr_fmt(fmt) "page_alloc: " fmt
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/errno.h>
#include <topaz/probe.h>
#include <topaz/spinlock.h>
#include <topaz/printk.h>

/*
 * Probe points in the spirit of Linux's mm_page_alloc / mm_page_free
 * tracepoints: vm.mm_page_alloc fires on every allocation (page NULL and
 * pfn -1 when it failed), vm.mm_page_free on every accepted free.
 */
static const struct probe_value_desc page_alloc_values[] = {
	PROBE_VALUE("name", PROBE_NAME),
	PROBE_VALUE("page", PROBE_PTR),
	PROBE_VALUE("pfn", PROBE_HEX),
	PROBE_VALUE("order", PROBE_U64),
	PROBE_VALUE("gfp_flags", PROBE_HEX),
	PROBE_FORMATTED("gfp_flag_name", 4, gfp_probe_show),
	PROBE_VALUE("call_site", PROBE_HEX),
	PROBE_DERIVED("caller_function", PROBE_SYM, 6),
};
static const struct probe_value_desc page_free_values[] = {
	PROBE_VALUE("name", PROBE_NAME),
	PROBE_VALUE("page", PROBE_PTR),
	PROBE_VALUE("pfn", PROBE_HEX),
	PROBE_VALUE("order", PROBE_U64),
	PROBE_VALUE("call_site", PROBE_HEX),
	PROBE_DERIVED("caller_function", PROBE_SYM, 4),
};
DEFINE_PROBE(mm_page_alloc, "vm.mm_page_alloc", page_alloc_values);
DEFINE_PROBE(mm_page_free, "vm.mm_page_free", page_free_values);

static __noinline void fire_page_alloc(struct page *page, u64 pfn, unsigned int order, gfp_t gfp,
				       uintptr_t caller)
{
	union probe_val v[8] = {
		{ .u = 0 }, { .p = page }, { .u = pfn }, { .u = order },
		{ .u = gfp }, { .u = 0 }, { .u = caller }, { .u = 0 },
	};

	probe_fire(&probe_mm_page_alloc, v);
}

static __noinline void fire_page_free(struct page *page, u64 pfn, unsigned int order,
				      uintptr_t caller)
{
	union probe_val v[6] = {
		{ .u = 0 }, { .p = page }, { .u = pfn }, { .u = order },
		{ .u = caller }, { .u = 0 },
	};

	probe_fire(&probe_mm_page_free, v);
}


#define MAX_SPANS 128

struct span {
	u64 base_pfn;
	u64 npages;
	struct page *map;
};

static struct span spans[MAX_SPANS];
static unsigned int nr_spans;
struct page_hot_span page_hot_span;
static struct list_head free_area[NR_PAGE_ORDERS];
static struct page_alloc_stats stats;
static unsigned long fail_nth;	/* fault injection: fail the nth allocation from now */

void page_alloc_fail_nth(unsigned long nth)
{
	fail_nth = nth;
}

void page_alloc_init(void)
{
	bool kfree_checked = page_hot_span.kfree_checked;	/* the probe's, not the memory's */

	nr_spans = 0;
	memset(&page_hot_span, 0, sizeof(page_hot_span));
	page_hot_span.kfree_checked = kfree_checked;
	memset(&stats, 0, sizeof(stats));
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		INIT_LIST_HEAD(&free_area[o]);
}

static struct span *span_of_pfn(u64 pfn)
{
	unsigned int lo = 0, hi = nr_spans;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		struct span *s = &spans[mid];

		if (pfn < s->base_pfn)
			hi = mid;
		else if (pfn >= s->base_pfn + s->npages)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

struct page *pfn_to_page(u64 pfn)
{
	struct span *s = span_of_pfn(pfn);

	return s ? &s->map[pfn - s->base_pfn] : NULL;
}

/* Each span's mem_map sits at the start of the span, so the maps are in the
 * same (ascending) order as the spans: a binary search by address. */
static struct span *span_of_page(const struct page *page)
{
	unsigned int lo = 0, hi = nr_spans;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		struct span *s = &spans[mid];

		if (page < s->map)
			hi = mid;
		else if (page >= s->map + s->npages)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

u64 page_to_pfn(const struct page *page)
{
	struct span *s = span_of_page(page);

	return s ? s->base_pfn + (u64)(page - s->map) : 0;
}

void *page_address(const struct page *page)
{
	return phys_to_virt(page_to_pfn(page) << PAGE_SHIFT);
}

struct page *virt_to_page(const void *addr)
{
	return pfn_to_page(virt_to_phys(addr) >> PAGE_SHIFT);
}

/*
 * The free lists and the counters are under zone_lock with interrupts off.
 * Taking it on a CPU that holds it already (an NMI inside the allocator)
 * fails instead of waiting for ever.
 */
static DEFINE_SPINLOCK(zone_lock);

static bool zone_lock_irqsave(unsigned long *flags)
{
	*flags = local_irq_save();
	if (unlikely(READ_ONCE(oops_in_progress))) {
		/* a panic: the holder may be a CPU it stopped, which never
		 * lets go; fail (the panic path copes) rather than hang */
		for (unsigned long i = 0; i < 10000000 && !spin_is_locked_by_me(&zone_lock); i++)
			if (spin_trylock(&zone_lock))
				return true;
		local_irq_restore(*flags);
		return false;
	}
	if (spin_lock_or_owned(&zone_lock))
		return true;
	local_irq_restore(*flags);
	return false;
}

static void zone_unlock_irqrestore(unsigned long flags)
{
	spin_unlock(&zone_lock);
	local_irq_restore(flags);
}

static void add_free_block(struct page *page, unsigned int order)
{
	page->flags |= PG_buddy;
	page->order = order;
	list_add(&page->lru, &free_area[order]);
	stats.nr_free[order]++;
	stats.free_pages += 1ull << order;
}

static void del_free_block(struct page *page, unsigned int order)
{
	list_del(&page->lru);
	page->flags &= ~PG_buddy;
	stats.nr_free[order]--;
	stats.free_pages -= 1ull << order;
}

int page_alloc_add_range(phys_addr_t start, phys_addr_t end)
{
	u64 first = ALIGN_UP(start, PAGE_SIZE) >> PAGE_SHIFT;
	u64 last = ALIGN_DOWN(end, PAGE_SIZE) >> PAGE_SHIFT;
	u64 npages, map_pages, pfn;
	struct span *s;
	unsigned int i;

	if (last <= first)
		return -EINVAL;
	npages = last - first;
	map_pages = DIV_ROUND_UP(npages * sizeof(struct page), PAGE_SIZE);
	if (npages <= map_pages)
		return -ENOSPC;
	if (nr_spans == MAX_SPANS) {
		pr_warn("too many memory ranges: %#llx-%#llx left unused\n",
			start, end);
		return -ENOSPC;
	}
	for (i = 0; i < nr_spans; i++) {
		if (first < spans[i].base_pfn + spans[i].npages && spans[i].base_pfn < last)
			return -EEXIST;
		if (spans[i].base_pfn > first)
			break;
	}
	memmove(&spans[i + 1], &spans[i], (nr_spans - i) * sizeof(spans[0]));
	nr_spans++;
	s = &spans[i];
	s->base_pfn = first;
	s->npages = npages;
	s->map = phys_to_virt(first << PAGE_SHIFT);
	memset(s->map, 0, map_pages * PAGE_SIZE);
	for (u64 k = 0; k < map_pages; k++)
		s->map[k].flags = PG_reserved;

	/* Free the rest in the largest naturally aligned blocks that fit. */
	for (pfn = first + map_pages; pfn < last;) {
		unsigned int order = MAX_ORDER;

		while (order && ((pfn & ((1ull << order) - 1)) || pfn + (1ull << order) > last))
			order--;
		add_free_block(&s->map[pfn - first], order);
		pfn += 1ull << order;
	}
	stats.total_pages += npages - map_pages;
	if ((npages << PAGE_SHIFT) > page_hot_span.bytes) {
		/* an interrupt's kfree() in between sees no hot span (bytes 0), never half of one */
		WRITE_ONCE(page_hot_span.kfree_bytes, 0);
		WRITE_ONCE(page_hot_span.bytes, 0);
		barrier();
		WRITE_ONCE(page_hot_span.start, (uintptr_t)phys_to_virt(first << PAGE_SHIFT));
		WRITE_ONCE(page_hot_span.map, s->map);
		barrier();
		WRITE_ONCE(page_hot_span.bytes, (uintptr_t)(npages << PAGE_SHIFT));
		if (!page_hot_span.kfree_checked)
			WRITE_ONCE(page_hot_span.kfree_bytes, page_hot_span.bytes);
	}
	return 0;
}

static const char *gfp_str(gfp_t gfp, char *buf, size_t n)
{
	return gfp_flags_name(gfp, buf, n);
}

struct page *__alloc_pages_caller(int nid, gfp_t gfp, unsigned int order, uintptr_t caller)
{
	struct page *page = NULL;
	unsigned long flags;
	unsigned int o;

	if (unlikely(order > MAX_ORDER || nid < NUMA_NO_NODE || nid >= MAX_NUMNODES)) {
		if (!(gfp & __GFP_NOWARN)) {
			char g[96];
			pr_warn("refused: order %u (max %u), node %d (nodes 0..%d), mode %s, caller %pS\n",
				order, MAX_ORDER, nid, MAX_NUMNODES - 1, gfp_str(gfp, g, sizeof(g)),
				(void *)caller);
		}
		stats.failures++;
		if (probe_enabled(mm_page_alloc))
			fire_page_alloc(NULL, ~0ull, order, gfp, caller);
		return NULL;
	}

	if (!zone_lock_irqsave(&flags)) {
		stats.failures++;	/* an NMI inside the allocator on this CPU */
		return NULL;
	}
	if (unlikely(fail_nth) && --fail_nth == 0) {
		stats.failures++;
		zone_unlock_irqrestore(flags);
		return NULL;
	}
	for (o = order; o <= MAX_ORDER; o++) {
		if (!list_empty(&free_area[o])) {
			page = list_first_entry(&free_area[o], struct page, lru);
			break;
		}
	}
	if (page) {
		del_free_block(page, o);
		while (o > order) {
			o--;
			add_free_block(page + (1ull << o), o);
		}
		page->flags |= PG_head;
		page->order = order;
		page->caller = caller;
		stats.allocs[order]++;
	} else {
		stats.failures++;
	}
	zone_unlock_irqrestore(flags);

	if (!page) {
		if (!(gfp & __GFP_NOWARN)) {
			char g[96];
			pr_warn("allocation failure: order %u, mode %s, caller %pS\n", order,
				gfp_str(gfp, g, sizeof(g)), (void *)caller);
		}
		if (probe_enabled(mm_page_alloc))
			fire_page_alloc(NULL, ~0ull, order, gfp, caller);
		return NULL;
	}
	if (gfp & __GFP_ZERO)
		memset(page_address(page), 0, PAGE_SIZE << order);
	if (probe_enabled(mm_page_alloc))
		fire_page_alloc(page, page_to_pfn(page), order, gfp, caller);
	return page;
}

/* Is @pfn inside a free block (of any order)? Error path only. */
static bool pfn_is_free(u64 pfn)
{
	for (unsigned int o = 0; o <= MAX_ORDER; o++) {
		struct page *head = pfn_to_page(pfn & ~((1ull << o) - 1));

		if (head && (head->flags & PG_buddy) && head->order >= o)
			return true;
	}
	return false;
}

static void report_bad_free(const char *what, u64 pfn, unsigned int order, uintptr_t caller,
			    const struct page *page)
{
	stats.bad_frees++;
	pr_err("BUG: %s: pfn %#llx (address %#llx), order %u, freed by %pS", what,
	       pfn, pfn << PAGE_SHIFT, order,
	       (void *)caller);
	if (page && page->caller)
		pr_cont(", last allocated by %pS", (void *)page->caller);
	pr_cont("; the block is left alone\n");
}

int __free_pages_caller(struct page *page, unsigned int order, uintptr_t caller)
{
	unsigned int freed_order;
	u64 freed_pfn;
	unsigned long flags;
	struct span *s;
	u64 pfn;

	if (!page)
		return 0;
	s = span_of_page(page);
	if (!s) {
		report_bad_free("free of memory the page allocator does not manage", 0, order,
				caller, NULL);
		return -EINVAL;
	}
	pfn = s->base_pfn + (u64)(page - s->map);

	if (!zone_lock_irqsave(&flags)) {
		pr_err("BUG: free of pfn %#llx, order %u, by %pS inside the page allocator on this CPU (an NMI): the block is kept\n",
		       pfn, order, (void *)caller);
		return -EBUSY;
	}
	if (!(page->flags & PG_head)) {
		bool dbl = pfn_is_free(pfn);

		zone_unlock_irqrestore(flags);
		report_bad_free(dbl ? "double free" :
				(page->flags & PG_reserved) ? "free of a reserved page" :
				"free of a page that does not start an allocated block",
				pfn, order, caller, page);
		return -EINVAL;
	}
	if (page->order != order) {
		unsigned int had = page->order;

		zone_unlock_irqrestore(flags);
		report_bad_free(had < order ? "free with a larger order than allocated" :
				"free with a smaller order than allocated", pfn, order, caller, page);
		pr_err("  (allocated with order %u)\n", had);
		return -EINVAL;
	}
	page->flags &= ~PG_head;
	stats.frees++;
	freed_pfn = pfn;
	freed_order = order;
	while (order < MAX_ORDER) {
		u64 buddy_pfn = pfn ^ (1ull << order);
		struct page *buddy;

		if (buddy_pfn < s->base_pfn || buddy_pfn >= s->base_pfn + s->npages)
			break;
		buddy = &s->map[buddy_pfn - s->base_pfn];
		if (!(buddy->flags & PG_buddy) || buddy->order != order)
			break;
		del_free_block(buddy, order);
		pfn &= ~(1ull << order);
		order++;
	}
	add_free_block(&s->map[pfn - s->base_pfn], order);
	zone_unlock_irqrestore(flags);
	if (probe_enabled(mm_page_free))
		fire_page_free(page, freed_pfn, freed_order, caller);
	return 0;
}

struct page *alloc_pages_node(int nid, gfp_t gfp, unsigned int order)
{
	return __alloc_pages_caller(nid, gfp, order, _RET_IP_);
}

struct page *alloc_pages(gfp_t gfp, unsigned int order)
{
	return __alloc_pages_caller(NUMA_NO_NODE, gfp, order, _RET_IP_);
}

void __free_pages(struct page *page, unsigned int order)
{
	__free_pages_caller(page, order, _RET_IP_);
}

uintptr_t __get_free_pages(gfp_t gfp, unsigned int order)
{
	struct page *p = __alloc_pages_caller(NUMA_NO_NODE, gfp, order, _RET_IP_);

	return p ? (uintptr_t)page_address(p) : 0;
}

uintptr_t get_zeroed_page(gfp_t gfp)
{
	struct page *p = __alloc_pages_caller(NUMA_NO_NODE, gfp | __GFP_ZERO, 0, _RET_IP_);

	return p ? (uintptr_t)page_address(p) : 0;
}

void free_pages(uintptr_t addr, unsigned int order)
{
	struct page *page;

	if (!addr)
		return;
	page = virt_to_page((void *)addr);
	if (!page || (addr & (PAGE_SIZE - 1))) {
		stats.bad_frees++;
		pr_err("BUG: free_pages(%#lx, %u) of an address that is not a managed page, by %pS; ignored\n",
		       (unsigned long)addr, order, (void *)_RET_IP_);
		return;
	}
	__free_pages_caller(page, order, _RET_IP_);
}

void page_alloc_get_stats(struct page_alloc_stats *st)
{
	unsigned long f;

	if (!zone_lock_irqsave(&f)) {
		*st = stats;	/* a torn copy beats none in an NMI */
		return;
	}
	*st = stats;
	zone_unlock_irqrestore(f);
}

void page_alloc_show_stats(void)
{
	struct page_alloc_stats st;
	u64 allocs = 0;

	page_alloc_get_stats(&st);
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		allocs += st.allocs[o];
	printk("page_alloc: %llu pages managed (%llu MiB), %llu free (%llu MiB), %u ranges\n",
	       st.total_pages, st.total_pages >> 8,
	       st.free_pages, st.free_pages >> 8, nr_spans);
	printk("page_alloc: free blocks per order:");
	for (int o = 0; o < NR_PAGE_ORDERS; o++)
		pr_cont(" %d:%llu", o, st.nr_free[o]);
	pr_cont("\n");
	printk("page_alloc: %llu allocations, %llu frees, %llu failures, %llu bad frees\n",
	       allocs, st.frees,
	       st.failures, st.bad_frees);
}
