// SPDX-License-Identifier: MIT
/*
 * The slab allocator's core: caches, slabs, the per-CPU object arrays, and
 * the kmem_cache_* API.
 *
 * Three layers, as SLUB with sheaves:
 *   1. a per-CPU array of free objects (mm/slab_internal.h: the fast path,
 *      a pop or a push of a few instructions, interrupt- and NMI-safe);
 *   2. the cache's slabs, on partial, full and free lists, each slab with a
 *      freelist threaded through its free objects (pointers hardened with a
 *      per-cache secret and their own address);
 *   3. the page allocator, which slabs come from and go back to.
 * An empty array refills from the slabs (partial ones first), a full one
 * flushes half of itself back. Empty slabs stay on the free list up to
 * SLAB_KEEP_FREE_BYTES per cache, and go back to the page allocator on
 * kmem_cache_shrink() and when a page allocation fails (memory pressure).
 *
 * Slab metadata lives in struct page: the head page of a slab has PG_slab,
 * slab_cache, freelist (the first free object), inuse and objects; the
 * other pages of the slab have PG_slab, slab_cache, and freelist pointing
 * at the head page; every page has slab_off, slab_magic and slab_thresh, from
 * which kfree() tells an object's start without the head page
 * (slab_page_obj_start()).
 *
 * Locking: one CPU. The slab lists are changed with interrupts disabled and
 * the cache's list lock held; the lock is a trylock, because only an NMI can
 * find it taken, and an NMI must not wait: its allocation fails, its free is
 * deferred to a lock-free list drained by the next lock holder. The
 * statistics are per CPU, under the list lock, or atomic (struct kmem_cache);
 * the list of caches has its own lock, never held across a call out
 * (slab_caches_lock).
 */
#define pr_fmt(fmt) "slab: " fmt
#include "slab_internal.h"
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/errno.h>

#define SLAB_MAX_ORDER		3	/* preferred slab orders: up to 32 KiB, as PAGE_ALLOC_COSTLY_ORDER */
#define SLAB_MIN_OBJECTS	8
/* strides are at least a free pointer; a larger-order slab holds one object */
_Static_assert((PAGE_SIZE << SLAB_MAX_ORDER) / sizeof(void *) <= SLAB_MAX_OBJECTS &&
	       SLAB_MAX_OBJECTS <= 0xffff, "struct page's objects is 16 bits");
#define SLAB_KEEP_FREE_BYTES	(1UL << 20)	/* empty slabs kept per cache */
#define SLAB_DESC_COLOURS	16	/* descriptor offsets in their page (desc_colour()) */
#define SLAB_DESC_COLOUR_BYTES	128
/*
 * A per-CPU array holds up to 1 MiB of free objects and at most 1024 of
 * them, as tcmalloc's per-CPU caches hold about that much: a batch of 1024
 * allocations and frees then stays on the fast path (see tests/bench). The
 * array takes 8 KiB per CPU in every cache (SLAB_CPU_STRIDE, slab_internal.h);
 * kmem_cache_shrink() and memory pressure empty it.
 */
#define SLAB_CPU_ARRAY_BYTES	(1UL << 20)
#define SLAB_CPU_CAP_MIN	16

LIST_HEAD(slab_caches);

#if defined(TOPAZ_HOSTED) && !defined(TOPAZ_BENCH)
void (*slab_test_irq_hook)(int where);
#endif

/* ---------------------------------------------------------------- probes */

/* SystemTap's vm.kmem_cache_alloc and vm.kmalloc values, plus cache_name. */
const struct probe_value_desc slab_alloc_values[9] = {
	PROBE_VALUE("name", PROBE_NAME),
	PROBE_VALUE("call_site", PROBE_HEX),
	PROBE_DERIVED("caller_function", PROBE_SYM, 1),
	PROBE_VALUE("bytes_req", PROBE_U64),
	PROBE_VALUE("bytes_alloc", PROBE_U64),
	PROBE_VALUE("gfp_flags", PROBE_HEX),
	PROBE_FORMATTED("gfp_flag_name", 5, gfp_probe_show),
	PROBE_VALUE("ptr", PROBE_PTR),
	PROBE_VALUE("cache_name", PROBE_STR),
};

/* SystemTap's vm.kmem_cache_free and vm.kfree values, plus cache_name. */
const struct probe_value_desc slab_free_values[5] = {
	PROBE_VALUE("name", PROBE_NAME),
	PROBE_VALUE("call_site", PROBE_HEX),
	PROBE_DERIVED("caller_function", PROBE_SYM, 1),
	PROBE_VALUE("ptr", PROBE_PTR),
	PROBE_VALUE("cache_name", PROBE_STR),
};

DEFINE_PROBE(kmem_cache_alloc, "vm.kmem_cache_alloc", slab_alloc_values);
DEFINE_PROBE(kmem_cache_free, "vm.kmem_cache_free", slab_free_values);

__noinline void slab_fire_alloc(struct probe_point *pp, const char *cache_name, const void *ptr,
				size_t bytes_req, size_t bytes_alloc, gfp_t gfp, uintptr_t caller)
{
	union probe_val v[9];

	/* v[0], v[2], v[6] are derived (name, caller_function, gfp_flag_name): made on demand */
	v[1].u = caller;
	v[3].u = bytes_req;
	v[4].u = bytes_alloc;
	v[5].u = gfp;
	v[7].p = ptr;
	v[8].str = cache_name;
	probe_fire(pp, v);
}

/* The enabled-probe tail of the allocation fast path: fire, return @obj. */
static __noinline void *slab_alloc_probe(struct kmem_cache *s, void *obj, gfp_t gfp,
					 uintptr_t caller)
{
	union probe_val v[9];

	v[1].u = caller;
	v[3].u = s->object_size;
	v[4].u = s->size;
	v[5].u = gfp;
	v[7].p = obj;
	v[8].str = s->name;
	probe_fire(&probe_kmem_cache_alloc, v);
	return obj;
}

__noinline void slab_fire_free(struct probe_point *pp, const char *cache_name, const void *ptr,
			       uintptr_t caller)
{
	union probe_val v[5];

	v[1].u = caller;
	v[3].p = ptr;
	v[4].str = cache_name;
	probe_fire(pp, v);
}

/* ---------------------------------------------------------------- locks, lists */

/*
 * The list lock: waits while another CPU holds it; false when this CPU holds
 * it already (an NMI that interrupted a slab operation), which never waits.
 */
bool slab_lock(struct kmem_cache *s)
{
	return spin_lock_or_owned(&s->list_lock);
}

void slab_unlock(struct kmem_cache *s)
{
	spin_unlock(&s->list_lock);
}

/*
 * slab_caches_lock guards the list of caches (the links, each cache's
 * @walkers and @dead). It is held for a few instructions at a time with
 * interrupts disabled, never across a call out: a walk of the list
 * (slab_caches_walk(): kmem_cache_shrink_all(), slabinfo_show()) pins the
 * cache it is at, drops the lock for the work on it, which may call every CPU
 * (shrink()'s on_each_cpu()) and takes list locks, then takes the lock again
 * for the next link. So no CPU spins on it with interrupts disabled while its
 * holder waits for that CPU in a cross-CPU call, and it is never held
 * together with a list lock (no lock order between them).
 * kmem_cache_destroy() of a pinned cache marks it dead and leaves it linked;
 * the last walker on it unlinks and frees it.
 */
static DEFINE_SPINLOCK(slab_caches_lock);

/*
 * Take slab_caches_lock (interrupts disabled by the caller). False when this
 * CPU holds it already (an NMI inside a list operation), and in a panic when
 * a stopped CPU never gives it back (as printk's lock).
 */
static bool slab_caches_lock_take(void)
{
	return spin_lock_unless_stuck(&slab_caches_lock, &oops_in_progress);
}

enum { SLAB_EMPTY, SLAB_PARTIAL, SLAB_FULL };

static int slab_state(const struct page *p)
{
	return p->inuse == 0 ? SLAB_EMPTY : p->inuse >= p->objects ? SLAB_FULL : SLAB_PARTIAL;
}

static struct list_head *slab_list(struct kmem_cache *s, int st)
{
	return st == SLAB_EMPTY ? &s->free : st == SLAB_FULL ? &s->full : &s->partial;
}

static unsigned long *slab_nr(struct kmem_cache *s, int st)
{
	return st == SLAB_EMPTY ? &s->nr_free : st == SLAB_FULL ? &s->nr_full : &s->nr_partial;
}

/* Move @page to the list of its state, which was @old. */
static void slab_relist(struct kmem_cache *s, struct page *page, int old)
{
	int now = slab_state(page);

	if (now == old)
		return;
	list_del(&page->lru);
	(*slab_nr(s, old))--;
	list_add(&page->lru, slab_list(s, now));
	(*slab_nr(s, now))++;
}

struct page *slab_head_page(const void *p)
{
	struct page *page = virt_to_page(p);

	if (page && !(page->flags & PG_head) && page->slab_cache && page->freelist)
		page = page->freelist;
	return page;
}

/* ---------------------------------------------------------------- slabs */

static unsigned long slab_keep_free(const struct kmem_cache *s)
{
	unsigned long n = SLAB_KEEP_FREE_BYTES >> (PAGE_SHIFT + s->order);

	return n < 2 ? 2 : n;
}

static struct page *alloc_slab_page(struct kmem_cache *s, gfp_t gfp, uintptr_t caller)
{
	gfp_t pg = (gfp & ~__GFP_ZERO) | __GFP_NOWARN;
	struct page *page;

	page = __alloc_pages_caller(NUMA_NO_NODE, pg, s->order, caller);
	/* Memory pressure: give back every cache's empty slabs, then retry. */
	if (!page && gfpflags_allow_blocking(gfp) && kmem_cache_shrink_all())
		page = __alloc_pages_caller(NUMA_NO_NODE, pg, s->order, caller);
	if (!page && s->min_order < s->order) {
		page = __alloc_pages_caller(NUMA_NO_NODE, pg, s->min_order, caller);
		if (page)
			slab_stat_inc(s, order_fallback);
	}
	return page;
}

static void mark_slab_pages(struct page *head, struct kmem_cache *s)
{
	unsigned int n = 1u << head->order;

	/* floor(2^64 / stride) + 1; ~0 / stride is one short of that floor for a power of two */
	u64 magic = ~0ull / s->size + 1 + !(s->size & (s->size - 1));
	/* stride x magic - 2^64 (mod 2^64): a multiple k x stride times magic is k x this */
	u32 step = (u32)(s->size * magic);
	u32 off = -(u32)((uintptr_t)slab_base(head) + s->red_left_pad);

	head->flags |= PG_slab;
	head->slab_cache = s;
	for (unsigned int i = 0; i < n; i++) {
		if (i) {
			head[i].flags |= PG_slab;
			head[i].slab_cache = s;
			head[i].freelist = head;
		}
		head[i].slab_off = off;
		head[i].slab_thresh = (u32)(head->objects * step);
		head[i].slab_magic = magic;
	}
}

static void clear_slab_pages(struct page *head)
{
	unsigned int n = 1u << head->order;

	for (unsigned int i = 0; i < n; i++) {
		head[i].flags &= ~PG_slab;
		head[i].slab_cache = NULL;
		head[i].freelist = NULL;
		head[i].slab_off = 0;
		head[i].slab_thresh = 0;
		head[i].slab_magic = 0;
	}
	head->inuse = 0;
	head->objects = 0;
}

/* A new slab with every object free and linked, not yet on a list. */
static struct page *new_slab(struct kmem_cache *s, gfp_t gfp, uintptr_t caller)
{
	struct page *page = alloc_slab_page(s, gfp, caller);
	void *prev = NULL;

	if (!page)
		return NULL;
	page->objects = (u16)(slab_bytes(page) / s->size);
	page->inuse = 0;
	mark_slab_pages(page, s);
	if (s->debug)
		slab_debug_init_slab(s, page);
	/* Link from the last object down, so the freelist runs in address order. */
	for (unsigned int i = page->objects; i-- > 0;) {
		void *obj = slab_obj_at(s, page, i);

		if (s->debug)
			slab_debug_init_object(s, obj);
		if (s->ctor)
			s->ctor(obj);
		fp_encode(s, obj, prev);
		prev = obj;
	}
	page->freelist = prev;
	return page;
}

static void discard_slab(struct kmem_cache *s, struct page *page, uintptr_t caller)
{
	unsigned int order = page->order;

	clear_slab_pages(page);
	__free_pages_caller(page, order, caller);
}

static void discard_slabs(struct kmem_cache *s, struct list_head *list, uintptr_t caller)
{
	struct page *page, *n;

	list_for_each_entry_safe(page, n, list, lru) {
		list_del(&page->lru);
		discard_slab(s, page, caller);
	}
}

/* Unlink an empty slab for discarding once the lock is dropped. Locked. */
static void slab_retire(struct kmem_cache *s, struct page *page, struct list_head *discard)
{
	list_del(&page->lru);
	s->nr_free--;
	s->total_objects -= page->objects;
	s->total_slabs--;
	s->slabs_freed++;
	list_add(&page->lru, discard);
}

/* Is @next a valid freelist successor inside @page? */
bool slab_freelist_ok(struct kmem_cache *s, struct page *page, const void *next)
{
	bool start;

	if (!next)
		return true;
	if ((uintptr_t)next < (uintptr_t)slab_base(page) ||
	    (uintptr_t)next >= (uintptr_t)slab_base(page) + slab_bytes(page))
		return false;
	slab_obj_index(s, page, next, &start);
	return start;
}

/* The freelist of @page is corrupt past @obj: report, and stop using it. Locked. */
static void freelist_corrupt(struct kmem_cache *s, struct page *page, void *obj,
			     const void *next, uintptr_t caller)
{
	int old = slab_state(page);

	slab_report(s, obj, caller, "Freelist pointer corrupted");
	printk(KERN_ERR "INFO: free pointer of object 0x%lx decodes to 0x%lx, outside slab 0x%lx-0x%lx or not an object\n",
	       (unsigned long)(uintptr_t)obj, (unsigned long)(uintptr_t)next,
	       (unsigned long)(uintptr_t)slab_base(page),
	       (unsigned long)((uintptr_t)slab_base(page) + slab_bytes(page)));
	page->freelist = NULL;
	page->inuse = page->objects;	/* the slab's free objects are lost, never reused */
	slab_relist(s, page, old);
	slab_fix(s, "Isolating slab 0x%lx: its remaining free objects are leaked",
		 (unsigned long)(uintptr_t)slab_base(page));
}

static struct page *get_partial(struct kmem_cache *s)
{
	if (!list_empty(&s->partial))
		return list_first_entry(&s->partial, struct page, lru);
	if (!list_empty(&s->free))
		return list_first_entry(&s->free, struct page, lru);
	return NULL;
}

/* Fill this CPU's array (owned, empty) with up to @want objects. Locked. */
static unsigned int refill(struct kmem_cache *s, struct slab_cpu *c, unsigned int want,
			   uintptr_t caller)
{
	unsigned int n = 0;
	struct page *page;

	while (n < want && (page = get_partial(s))) {
		void *obj = page->freelist;
		uintptr_t lo = slab_base_of(page, obj), hi = lo + slab_bytes(page);
		int old = slab_state(page);
		unsigned int took = 0;
		bool bad = false;

		while (obj && n < want) {
			void *next = fp_decode(s, obj);

			if (next && ((uintptr_t)next < lo || (uintptr_t)next >= hi)) {
				bad = true;
				c->objs[n++] = obj;
				took++;
				page->freelist = obj;	/* for the report */
				obj = next;
				break;
			}
			c->objs[n++] = obj;
			took++;
			obj = next;
		}
		page->inuse += took;
		if (bad) {
			freelist_corrupt(s, page, page->freelist, obj, caller);
			continue;
		}
		page->freelist = obj;
		slab_relist(s, page, old);
	}
	return n;
}

/* Put @obj (checked) back on its slab. Locked. */
static inline void free_to_slab(struct kmem_cache *s, struct page *page, void *obj,
				struct list_head *discard)
{
	u32 inuse = page->inuse;

	fp_encode(s, obj, page->freelist);
	page->freelist = obj;
	page->inuse = inuse - 1;
	if (likely(inuse != page->objects && inuse != 1))
		return;		/* partial before and after: no list changes */
	slab_relist(s, page, inuse == page->objects ? SLAB_FULL : SLAB_PARTIAL);
	if (!page->inuse && s->nr_free > s->min_free)
		slab_retire(s, page, discard);
}

/*
 * The checks every free gets on the slow path, debugging or not: a slab
 * object, of this cache, at an object's start, not freed twice in a row.
 * Reports and returns false when the object must not be freed. Locked.
 */
static bool free_sanity(struct kmem_cache *s, struct page *page, void *obj, uintptr_t caller)
{
	bool start;
	unsigned int idx;

	if (!page || !(page->flags & PG_slab)) {
		slab_report(s, obj, caller, "Free of a pointer that is not a slab object");
		slab_print_object(obj);
		slab_fix(s, "Object not freed");
		return false;
	}
	if (page->slab_cache != s) {
		struct kmem_cache *owner = page->slab_cache;

		slab_report(s, obj, caller, "Free to the wrong cache: the object belongs to %s",
			    owner->name);
		slab_print_object(obj);
		slab_fix(s, "Object not freed (left to %s)", owner->name);
		return false;
	}
	idx = slab_obj_index(s, page, obj, &start);
	if (!start) {
		void *o = slab_obj_at(s, page, idx);

		if (idx >= page->objects || (uintptr_t)obj < slab_base_of(page, obj) + s->red_left_pad)
			slab_report(s, obj, caller, "Free of a pointer that is not an object's start (slab padding)");
		else
			slab_report(s, obj, caller,
				    "Free of a pointer that is not an object's start: object 0x%lx + %lu",
				    (unsigned long)(uintptr_t)o,
				    (unsigned long)((uintptr_t)obj - (uintptr_t)o));
		slab_print_object(obj);
		slab_fix(s, "Object not freed");
		return false;
	}
	if (page->freelist == obj || !page->inuse) {
		slab_report(s, obj, caller, "Double free: the object is already free");
		slab_print_object(obj);
		slab_fix(s, "Object not freed again");
		return false;
	}
	return true;
}

/* Free one object to its slab with every check the cache has. Locked. */
static void free_one(struct kmem_cache *s, void *obj, uintptr_t caller, struct list_head *discard)
{
	struct page *page = slab_head_page(obj);

	if (!free_sanity(s, page, obj, caller))
		return;
	if (s->debug) {
		if (!slab_debug_free_check(s, page, obj, caller))
			return;
		slab_debug_mark_free(s, obj, caller);
	}
	free_to_slab(s, page, obj, discard);
}

/* Frees made while the lock was taken (only an NMI sees that): a lock-free stack. */
static void defer_free(struct kmem_cache *s, void *obj)
{
	void **link = (void **)((char *)obj + s->fp_offset);
	void *old = __atomic_load_n(&s->deferred, __ATOMIC_RELAXED);

	do {
		if (old == obj) {	/* pushing it twice would make a cycle */
			__atomic_fetch_add(&slab_error_count, 1, __ATOMIC_RELAXED);
			slab_stat_inc(s, errors);
			return;
		}
		*link = old;
	} while (!__atomic_compare_exchange_n(&s->deferred, &old, obj, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	slab_stat_inc(s, nmi_contended);
}

static void drain_deferred(struct kmem_cache *s, uintptr_t caller, struct list_head *discard)
{
	void *p = __atomic_exchange_n(&s->deferred, NULL, __ATOMIC_ACQUIRE);
	unsigned long limit = s->total_objects + 1;

	while (p && limit--) {
		void *next = *(void **)((char *)p + s->fp_offset);

		free_one(s, p, caller, discard);
		p = next;
	}
}

/* Move the @n oldest objects of this CPU's array (owned, @count objects) to their slabs. Locked. */
static void flush(struct kmem_cache *s, struct slab_cpu *c, unsigned int count, unsigned int n,
		  uintptr_t caller, struct list_head *discard)
{
	struct page *page = NULL;
	uintptr_t lo = 1, hi = 0;

	for (unsigned int i = 0; i < n; i++) {
		void *obj = c->objs[i];
		bool start;

		if ((uintptr_t)obj < lo || (uintptr_t)obj >= hi) {
			page = slab_head_page(obj);
			if (!page || !(page->flags & PG_slab) || page->slab_cache != s) {
				lo = 1;
				hi = 0;
				free_sanity(s, page, obj, caller);	/* reports */
				continue;
			}
			lo = slab_base_of(page, obj);
			hi = lo + slab_bytes(page);
		}
		/* in a slab of this cache: the rest of free_sanity's checks */
		slab_obj_index(s, page, obj, &start);
		if (unlikely(!start || page->freelist == obj || !page->inuse)) {
			free_sanity(s, page, obj, caller);
			continue;
		}
		free_to_slab(s, page, obj, discard);
	}
	memmove(&c->objs[0], &c->objs[n], (count - n) * sizeof(void *));
	s->flushes++;
}

/* One object straight from the slabs (debug caches, interrupted operations). Locked. */
static void *take_one(struct kmem_cache *s, uintptr_t caller, size_t orig)
{
	struct page *page;

	while ((page = get_partial(s))) {
		int old = slab_state(page);
		void *obj = page->freelist;
		void *next = fp_decode(s, obj);

		if (!slab_freelist_ok(s, page, next)) {
			freelist_corrupt(s, page, obj, next, caller);
			continue;
		}
		page->freelist = next;
		page->inuse++;
		slab_relist(s, page, old);
		if (s->debug && !slab_debug_alloc_check(s, page, obj, caller, orig))
			continue;	/* quarantined; counted in use forever */
		return obj;
	}
	return NULL;
}

/* Add a new slab to the free list; false if the lock is taken (NMI). */
static bool add_slab(struct kmem_cache *s, struct page *page)
{
	unsigned long flags = local_irq_save();

	if (!slab_lock(s)) {
		local_irq_restore(flags);
		return false;
	}
	list_add(&page->lru, &s->free);
	s->nr_free++;
	s->total_objects += page->objects;
	s->total_slabs++;
	s->slabs_allocated++;
	slab_unlock(s);
	local_irq_restore(flags);
	return true;
}

static void alloc_failed(struct kmem_cache *s, gfp_t gfp, uintptr_t caller, const char *why)
{
	char g[96];

	slab_stat_inc(s, alloc_failures);
	if (gfp & __GFP_NOWARN)
		return;
	pr_warn("%s: allocation failure: %s; mode %s, caller %pS\n", s->name, why,
		gfp_flags_name(gfp, g, sizeof(g)), (void *)caller);
}

void *__slab_alloc(struct kmem_cache *s, gfp_t gfp, uintptr_t caller, size_t orig)
{
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());

	for (;;) {
		LIST_HEAD(discard);
		unsigned long flags = local_irq_save();
		void *obj = NULL;
		struct page *page;
		bool nested;
		u32 st;

		slab_cpu_acquire(c);
		st = READ_ONCE(c->state);
		nested = (st >> 16) != 1;
		slab_cpu_stat_inc(&c->alloc_slowpath);
		if (!nested && (st & SLAB_CPU_COUNT)) {
			/* an interrupt freed into the array since the fast path looked */
			u32 idx = (st & SLAB_CPU_COUNT) - 1;

			obj = c->objs[idx];
			barrier();
			WRITE_ONCE(c->state, idx);
			local_irq_restore(flags);
			return obj;
		}
		if (!slab_lock(s)) {
			WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
			slab_stat_inc(s, nmi_contended);
			slab_stat_inc(s, alloc_failures);
			local_irq_restore(flags);
			return NULL;	/* an NMI inside a slab operation: never wait */
		}
		SLAB_TEST_HOOK(SLAB_HOOK_LOCKED);
		drain_deferred(s, caller, &discard);
		if (!nested && c->cap) {
			unsigned int n = refill(s, c, (unsigned int)c->cap, caller);

			if (n) {
				obj = c->objs[n - 1];
				s->refills++;
				barrier();
				WRITE_ONCE(c->state, n - 1);
			} else {
				WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
			}
		} else {
			obj = take_one(s, caller, orig);
			WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
		}
		slab_unlock(s);
		local_irq_restore(flags);
		discard_slabs(s, &discard, caller);
		slab_check_pending_panic();
		if (obj)
			return obj;
		/*
		 * No free object: a new slab, allocated holding nothing. Not when
		 * this interrupted a slab operation (it may be an NMI inside the
		 * page allocator, which only masks interrupts).
		 */
		if (nested) {
			alloc_failed(s, gfp | __GFP_NOWARN, caller, "");
			return NULL;
		}
		page = new_slab(s, gfp, caller);
		if (!page) {
			char why[96];

			ksnprintf(why, sizeof(why), "no memory for a slab of order %u (object size %u)",
				  s->min_order, s->object_size);
			alloc_failed(s, gfp, caller, why);
			return NULL;
		}
		if (!add_slab(s, page)) {
			discard_slab(s, page, caller);
			alloc_failed(s, gfp | __GFP_NOWARN, caller, "");
			return NULL;
		}
	}
}

void __slab_free(struct kmem_cache *s, void *obj, uintptr_t caller)
{
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());
	LIST_HEAD(discard);
	unsigned long flags = local_irq_save();
	bool nested;
	u32 st;

	slab_cpu_acquire(c);
	st = READ_ONCE(c->state);
	nested = (st >> 16) != 1;
	slab_cpu_stat_inc(&c->free_slowpath);
	if (!nested && c->cap) {
		u32 count = st & SLAB_CPU_COUNT;

		if (count < c->cap) {
			/* an interrupt made room since the fast path looked */
			c->objs[count] = obj;
			barrier();
			WRITE_ONCE(c->state, count + 1);
			local_irq_restore(flags);
			return;
		}
		if (!slab_lock(s)) {
			WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
			defer_free(s, obj);
			local_irq_restore(flags);
			return;
		}
		SLAB_TEST_HOOK(SLAB_HOOK_LOCKED);
		drain_deferred(s, caller, &discard);
		flush(s, c, count, s->batch, caller, &discard);
		count -= s->batch;
		c->objs[count] = obj;
		barrier();
		WRITE_ONCE(c->state, count + 1);
	} else {
		if (!slab_lock(s)) {
			WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
			defer_free(s, obj);
			local_irq_restore(flags);
			return;
		}
		SLAB_TEST_HOOK(SLAB_HOOK_LOCKED);
		drain_deferred(s, caller, &discard);
		free_one(s, obj, caller, &discard);
		WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
	}
	slab_unlock(s);
	local_irq_restore(flags);
	discard_slabs(s, &discard, caller);
	slab_check_pending_panic();
}

/* ---------------------------------------------------------------- the API */

__noinline void *slab_alloc_done(struct kmem_cache *s, void *obj, gfp_t gfp, uintptr_t caller,
				 size_t orig, struct probe_point *pp)
{
	if (unlikely(gfp & __GFP_ZERO) && obj)
		memset(obj, 0, orig && (s->flags & SLAB_RED_ZONE) ? orig : s->object_size);
	if (pp && probe_enabled_pp(pp))
		slab_fire_alloc(pp, s->name, obj, orig ? orig : s->object_size, s->size, gfp, caller);
	return obj;
}

__noinline void *slab_alloc_slow(struct kmem_cache *s, gfp_t gfp, uintptr_t caller, size_t orig,
				 struct probe_point *pp)
{
	return slab_alloc_done(s, __slab_alloc(s, gfp, caller, orig), gfp, caller, orig, pp);
}

/* A constant gfp without __GFP_ZERO (slab.h): the shortest path there is. */
void *__kmem_cache_alloc_nz(struct kmem_cache *s, gfp_t gfp)
{
	void *obj;

	SLAB_ALLOC_FASTPATH(s, obj, slab_alloc_slow(s, gfp, _RET_IP_, 0, &probe_kmem_cache_alloc));
	if (probe_enabled(kmem_cache_alloc))
		return slab_alloc_probe(s, obj, gfp, _RET_IP_);
	return obj;
}

void *__kmem_cache_alloc(struct kmem_cache *s, gfp_t gfp)
{
	void *obj;

	SLAB_ALLOC_FASTPATH(s, obj, slab_alloc_slow(s, gfp, _RET_IP_, 0, &probe_kmem_cache_alloc));
	if (unlikely(gfp & __GFP_ZERO) || probe_enabled(kmem_cache_alloc))
		return slab_alloc_done(s, obj, gfp, _RET_IP_, 0, &probe_kmem_cache_alloc);
	return obj;
}

void *kmem_cache_zalloc(struct kmem_cache *s, gfp_t gfp)
{
	void *obj;

	gfp |= __GFP_ZERO;
	SLAB_ALLOC_FASTPATH(s, obj, slab_alloc_slow(s, gfp, _RET_IP_, 0, &probe_kmem_cache_alloc));
	return slab_alloc_done(s, obj, gfp, _RET_IP_, 0, &probe_kmem_cache_alloc);
}

static __noinline void kmem_cache_free_probed(struct kmem_cache *s, void *obj, uintptr_t caller)
{
	union probe_val v[5];

	v[1].u = caller;
	v[3].p = obj;
	v[4].str = s->name;
	probe_fire(&probe_kmem_cache_free, v);
	if (obj)
		slab_free_fast(s, obj, caller);
}

void kmem_cache_free(struct kmem_cache *s, void *obj)
{
	if (probe_enabled(kmem_cache_free)) {
		kmem_cache_free_probed(s, obj, _RET_IP_);
		return;
	}
	if (unlikely(!obj))
		return;
	SLAB_FREE_FASTPATH(s, obj, __slab_free(s, obj, _RET_IP_));
}

int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t nr, void **p)
{
	uintptr_t caller = _RET_IP_;
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());
	size_t i = 0;
	u32 st;

	/* Take what the array has in one go, then one by one. */
	slab_cpu_acquire(c);
	st = READ_ONCE(c->state);
	if ((st >> 16) == 1) {
		u32 count = st & SLAB_CPU_COUNT;
		u32 k = nr < count ? (u32)nr : count;

		memcpy(p, &c->objs[count - k], k * sizeof(void *));
		barrier();
		WRITE_ONCE(c->state, count - k);
		i = k;
	} else {
		WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
	}
	for (; i < nr; i++) {
		p[i] = slab_alloc_fast(s, gfp, caller, 0);
		if (!p[i]) {
			while (i--)
				slab_free_fast(s, p[i], caller);
			return 0;
		}
	}
	for (i = 0; i < nr; i++) {
		if (gfp & __GFP_ZERO)
			memset(p[i], 0, s->object_size);
		if (probe_enabled(kmem_cache_alloc))
			slab_fire_alloc(&probe_kmem_cache_alloc, s->name, p[i], s->object_size,
					s->size, gfp, caller);
	}
	return (int)nr;
}

void kmem_cache_free_bulk(struct kmem_cache *s, size_t nr, void **p)
{
	uintptr_t caller = _RET_IP_;

	for (size_t i = 0; i < nr; i++) {
		if (!s) {
			__kfree_caller(p[i], caller);
			continue;
		}
		if (probe_enabled(kmem_cache_free))
			slab_fire_free(&probe_kmem_cache_free, s->name, p[i], caller);
		if (p[i])
			slab_free_fast(s, p[i], caller);
	}
}

struct flush_req {
	struct kmem_cache *s;
	uintptr_t caller;
};

/*
 * Move this CPU's array into the slabs. Each CPU empties its own (an IPI
 * brings the request): the arrays are taken without atomic instructions, so
 * only their CPU may touch them.
 */
static void flush_this_cpu(void *arg)
{
	const struct flush_req *r = arg;
	struct kmem_cache *s = r->s;
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());
	LIST_HEAD(discard);
	unsigned long flags = local_irq_save();
	u32 st;

	if (!slab_lock(s)) {
		local_irq_restore(flags);
		return;
	}
	slab_cpu_acquire(c);
	st = READ_ONCE(c->state);
	if ((st >> 16) == 1 && (st & SLAB_CPU_COUNT)) {
		flush(s, c, st & SLAB_CPU_COUNT, st & SLAB_CPU_COUNT, r->caller, &discard);
		WRITE_ONCE(c->state, 0);
	} else {
		WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
	}
	slab_unlock(s);
	local_irq_restore(flags);
	discard_slabs(s, &discard, r->caller);
}

static int shrink(struct kmem_cache *s, uintptr_t caller)
{
	struct flush_req req = { s, caller };
	LIST_HEAD(discard);
	unsigned long flags;
	struct page *page, *n;
	int pages = 0;

	/* Every CPU's array; with interrupts disabled no other CPU can be asked. */
	if (irqs_disabled() || num_online_cpus() == 1)
		flush_this_cpu(&req);
	else
		on_each_cpu(flush_this_cpu, &req, true);
	flags = local_irq_save();
	if (!slab_lock(s)) {
		local_irq_restore(flags);
		return 0;
	}
	drain_deferred(s, caller, &discard);
	list_for_each_entry_safe(page, n, &s->free, lru)
		slab_retire(s, page, &discard);
	slab_unlock(s);
	local_irq_restore(flags);
	list_for_each_entry(page, &discard, lru)
		pages += 1 << page->order;
	discard_slabs(s, &discard, caller);
	slab_check_pending_panic();
	return pages;
}

int kmem_cache_shrink(struct kmem_cache *s)
{
	return s ? shrink(s, _RET_IP_) : 0;
}

static void free_cache_desc(struct kmem_cache *s, uintptr_t caller)
{
	__free_pages_caller(virt_to_page(s), s->desc_order, caller);
}

/*
 * @fn(@s, @arg) for every cache, slab_caches_lock dropped around each call
 * (see slab_caches_lock): @s stays valid during the call even if another
 * CPU destroys it, and caches created meanwhile may or may not be visited.
 * Nothing is visited when this CPU holds the lock already (an NMI inside a
 * list operation).
 */
static void slab_caches_walk(void (*fn)(struct kmem_cache *s, void *arg), void *arg,
			     uintptr_t caller)
{
	LIST_HEAD(unlinked);
	unsigned long flags = local_irq_save();
	struct list_head *l;

	if (!slab_caches_lock_take()) {
		local_irq_restore(flags);
		return;
	}
	l = slab_caches.next;
	while (l != &slab_caches) {
		struct kmem_cache *s = list_entry(l, struct kmem_cache, list);

		if (s->dead) {		/* destroyed, pinned by another walk */
			l = l->next;
			continue;
		}
		s->walkers++;
		spin_unlock_irqrestore(&slab_caches_lock, flags);
		fn(s, arg);
		flags = local_irq_save();
		if (!slab_caches_lock_take()) {
			/* a panic with the holder stopped: leave @s pinned, stop here */
			local_irq_restore(flags);
			goto out;
		}
		l = s->list.next;	/* still linked: pinned caches are */
		if (!--s->walkers && s->dead) {
			list_del(&s->list);
			list_add_tail(&s->list, &unlinked);
		}
	}
	spin_unlock_irqrestore(&slab_caches_lock, flags);
out:
	while (!list_empty(&unlinked)) {
		struct list_head *d = unlinked.next;

		list_del(d);
		free_cache_desc(list_entry(d, struct kmem_cache, list), caller);
	}
}

struct shrink_all_req {
	unsigned long pages;
	uintptr_t caller;
};

static void shrink_one(struct kmem_cache *s, void *arg)
{
	struct shrink_all_req *r = arg;

	r->pages += (unsigned long)shrink(s, r->caller);
}

unsigned long kmem_cache_shrink_all(void)
{
	struct shrink_all_req r = { 0, _RET_IP_ };

	slab_caches_walk(shrink_one, &r, _RET_IP_);
	return r.pages;
}

const char *kmem_cache_name(const struct kmem_cache *s)
{
	return s->name;
}

unsigned int kmem_cache_size(const struct kmem_cache *s)
{
	return s->object_size;
}

/* ---------------------------------------------------------------- create, destroy */

static unsigned int calc_order(unsigned long stride, unsigned int *min_order)
{
	unsigned int order;

	for (order = 0; order <= MAX_ORDER && (PAGE_SIZE << order) < stride; order++)
		;
	*min_order = order;
	for (unsigned int min_obj = SLAB_MIN_OBJECTS; min_obj >= 1; min_obj /= 2)
		for (unsigned int frac = 16; frac >= 4; frac /= 2)
			for (unsigned int o = *min_order; o <= SLAB_MAX_ORDER; o++) {
				unsigned long bytes = PAGE_SIZE << o;

				if (bytes / stride < min_obj)
					continue;
				if ((bytes % stride) * frac <= bytes)
					return o;
			}
	return *min_order;
}

static unsigned int cpu_array_cap(unsigned long stride)
{
	unsigned long cap = SLAB_CPU_ARRAY_BYTES / stride;

	return (unsigned int)(cap < SLAB_CPU_CAP_MIN ? SLAB_CPU_CAP_MIN :
			      cap > SLAB_CPU_CAP_MAX ? SLAB_CPU_CAP_MAX : cap);
}

static u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

__printf(4, 5) static struct kmem_cache *create_failed(slab_flags_t flags, uintptr_t caller,
						       const char *name, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (flags & SLAB_PANIC)
		panic("kmem_cache_create(%s) failed: %s (caller %pS)", name ? name : "(null)", msg,
		      (void *)caller);
	pr_err("kmem_cache_create(%s) failed: %s; caller %pS\n", name ? name : "(null)", msg,
	       (void *)caller);
	return NULL;
}

/* The arguments' checks. Return: true, or false (create_failed()'s NULL)
 * once it said why. */
static bool create_args_ok(const char *name, unsigned int size, unsigned int align,
			   slab_flags_t flags, uintptr_t caller)
{
	const slab_flags_t known = SLAB_DEBUG_FLAGS | SLAB_HWCACHE_ALIGN | SLAB_PANIC;

	if (!name || !*name)
		return create_failed(flags, caller, name, "a cache needs a name");
	if (strlen(name) >= KMEM_CACHE_NAME_LEN)
		return create_failed(flags, caller, name, "name longer than %d characters",
				     KMEM_CACHE_NAME_LEN - 1);
	if (!size)
		return create_failed(flags, caller, name, "object size 0");
	if (align & (align - 1) || align > PAGE_SIZE)
		return create_failed(flags, caller, name,
				     "alignment %u is not 0 or a power of two up to %lu", align,
				     PAGE_SIZE);
	if (flags & ~known)
		return create_failed(flags, caller, name, "unknown flags %#x (known: %#x)",
				     flags & ~known, known);
	if (size > KMALLOC_MAX_SIZE)
		return create_failed(flags, caller, name,
				     "object size %u is larger than the largest slab (%lu bytes)",
				     size, KMALLOC_MAX_SIZE);
	return true;
}

/* Where an object's parts lie, and the slab and descriptor sizes. */
struct cache_layout {
	unsigned int align;
	unsigned long rl, inuse, fp, meta, track, stride;
	unsigned int order, min_order, cap, desc_order;
	unsigned long desc_bytes;
};

/* The object layout for @size, @align, @flags (debug flags already applied).
 * Return: false when an object with its metadata is larger than a slab. */
static bool cache_layout(struct cache_layout *l, unsigned int size, unsigned int align,
			 slab_flags_t flags, bool has_ctor)
{
	bool debug = flags & SLAB_DEBUG_FLAGS;
	unsigned long off;
	unsigned int a;

	a = align < ARCH_KMALLOC_MINALIGN ? ARCH_KMALLOC_MINALIGN : align;
	if (flags & SLAB_HWCACHE_ALIGN) {
		unsigned int ralign = 64;

		while (size <= ralign / 2 && ralign > ARCH_KMALLOC_MINALIGN)
			ralign /= 2;
		a = a > ralign ? a : ralign;
	}
	l->align = a;

	/* [left red zone][object][right red zone][free ptr][meta][tracks][pad] */
	l->rl = (flags & SLAB_RED_ZONE) ? a : 0;
	l->inuse = ALIGN_UP((unsigned long)size, 8UL);
	if ((flags & SLAB_RED_ZONE) && l->inuse == size)
		l->inuse += 8;
	if (debug || has_ctor) {
		l->fp = l->inuse;
		off = l->inuse + sizeof(void *);
	} else {
		/* in the middle of the free object: away from small overflows */
		l->fp = ALIGN_DOWN((unsigned long)size / 2, 8UL);
		off = l->inuse < 8 ? 8 : l->inuse;
	}
	l->meta = 0;
	if (debug) {
		l->meta = off;
		off += sizeof(struct slab_meta);
	}
	l->track = 0;
	if (flags & SLAB_STORE_USER) {
		l->track = off;
		off += 2 * sizeof(struct slab_track);
	}
	l->stride = ALIGN_UP(l->rl + off, (unsigned long)a);
	if (l->stride > KMALLOC_MAX_SIZE)
		return false;
	l->order = calc_order(l->stride, &l->min_order);
	l->cap = debug ? 0 : cpu_array_cap(l->stride);
	/* the arrays of the CPUs there are (nr_cpu_ids is set before the first cache) */
	l->desc_bytes = sizeof(struct kmem_cache) + (unsigned long)nr_cpu_ids * SLAB_CPU_STRIDE +
			(SLAB_DESC_COLOURS - 1) * SLAB_DESC_COLOUR_BYTES;
	l->desc_order = get_order(l->desc_bytes);
	return true;
}

/*
 * Descriptors start at one of SLAB_DESC_COLOURS offsets in their first page
 * (slab colouring, applied to the descriptor): page-aligned, every cache's
 * fast-path lines (each CPU array's state and top objects) had
 * the same address bits below 4 KiB, so kmalloc's mixed sizes fought over a
 * few L1 sets and stalled on 4K aliasing between their loads and stores.
 */
static unsigned int desc_colour(void)
{
	static unsigned int next;	/* __atomic: creations on several CPUs */

	return __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % SLAB_DESC_COLOURS;
}

static struct page *alloc_cache_desc(unsigned int desc_order, uintptr_t caller)
{
	struct page *page;

	page = __alloc_pages_caller(NUMA_NO_NODE, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN,
				    desc_order, caller);
	/*
	 * Memory pressure: creation may block, so empty slabs and the CPU arrays
	 * go back first, as for a slab; without this it failed while pages were
	 * reclaimable (found by tests/fuzz/fuzz_slab).
	 */
	if (!page && kmem_cache_shrink_all())
		page = __alloc_pages_caller(NUMA_NO_NODE, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN,
					    desc_order, caller);
	return page;
}

/* A zeroed descriptor @s filled in from @l. */
static void init_cache_desc(struct kmem_cache *s, const char *name, unsigned int size,
			    const struct cache_layout *l, slab_flags_t flags, void (*ctor)(void *))
{
	static u64 nr_created;	/* __atomic_add_fetch: creations on several CPUs */

	strscpy(s->name, name, sizeof(s->name));
	s->object_size = size;
	s->size = (unsigned int)l->stride;
	s->align = l->align;
	s->red_left_pad = (unsigned int)l->rl;
	s->inuse = (unsigned int)l->inuse;
	s->fp_offset = (unsigned int)l->fp;
	s->meta_offset = (unsigned int)l->meta;
	s->track_offset = (unsigned int)l->track;
	s->order = l->order;
	s->min_order = l->min_order;
	s->objects = (unsigned int)((PAGE_SIZE << l->order) / l->stride);
	s->reciprocal = ((1ull << 32) / l->stride) + 1;
	s->flags = flags;
	s->debug = flags & SLAB_DEBUG_FLAGS;
	s->poison_object = (flags & SLAB_POISON) && !ctor;
	s->ctor = ctor;
	s->random = mix64(rdtsc() ^ ((u64)(uintptr_t)s << 7) ^
			  __atomic_add_fetch(&nr_created, 1, __ATOMIC_RELAXED) ^
			  (u64)(uintptr_t)&nr_created) | 1;
	INIT_LIST_HEAD(&s->partial);
	INIT_LIST_HEAD(&s->full);
	INIT_LIST_HEAD(&s->free);
	s->min_free = slab_keep_free(s);
	s->batch = l->cap / 2 ? l->cap / 2 : 1;
	s->desc_order = l->desc_order;
	s->ncpus = nr_cpu_ids;
	for (unsigned int cpu = 0; cpu < s->ncpus; cpu++) {
		slab_cpu(s, cpu)->cap = l->cap;
		slab_cpu(s, cpu)->push_limit = SLAB_CPU_BUSY + l->cap;
	}
}

static struct kmem_cache *__kmem_cache_create_caller(const char *name, unsigned int size,
					      unsigned int align, slab_flags_t flags,
					      void (*ctor)(void *), uintptr_t caller)
{
	struct cache_layout l;
	unsigned long irqf;
	struct kmem_cache *s;
	struct page *page;

	if (!create_args_ok(name, size, align, flags, caller))
		return NULL;
	flags = slab_debug_flags_for(name, flags);
	if (!cache_layout(&l, size, align, flags, ctor))
		return create_failed(flags, caller, name,
				     "object size %u is %lu with debug metadata, larger than the largest slab (%lu bytes)",
				     size, l.stride, KMALLOC_MAX_SIZE);
	page = alloc_cache_desc(l.desc_order, caller);
	if (!page)
		return create_failed(flags, caller, name,
				     "no memory for the cache descriptor (%lu bytes)", l.desc_bytes);
	s = (struct kmem_cache *)((char *)page_address(page) + desc_colour() * SLAB_DESC_COLOUR_BYTES);
	init_cache_desc(s, name, size, &l, flags, ctor);
	irqf = local_irq_save();
	if (!slab_caches_lock_take()) {
		local_irq_restore(irqf);
		free_cache_desc(s, caller);
		return create_failed(flags, caller, name,
				     "the cache list is busy on this CPU (called from an interrupt inside a cache-list operation)");
	}
	list_add_tail(&s->list, &slab_caches);
	spin_unlock_irqrestore(&slab_caches_lock, irqf);
	return s;
}

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
				     slab_flags_t flags, void (*ctor)(void *))
{
	return __kmem_cache_create_caller(name, size, align, flags, ctor, _RET_IP_);
}

void kmem_cache_destroy(struct kmem_cache *s)
{
	unsigned long flags, remaining = 0, slabs;
	struct page *page;
	bool pinned;

	if (!s)
		return;
	shrink(s, _RET_IP_);
	flags = local_irq_save();
	if (slab_lock(s)) {
		slabs = s->nr_partial + s->nr_full;
		if (slabs) {
			list_for_each_entry(page, &s->partial, lru)
				remaining += page->inuse;
			list_for_each_entry(page, &s->full, lru)
				remaining += page->inuse;
			slab_report(s, NULL, _RET_IP_,
				    "kmem_cache_destroy: %lu objects remain in %lu slabs", remaining,
				    slabs);
			list_for_each_entry(page, &s->partial, lru)
				slab_debug_report_leaks(s, page);
			list_for_each_entry(page, &s->full, lru)
				slab_debug_report_leaks(s, page);
			slab_fix(s, "Cache kept: its objects are still in use");
		}
		slab_unlock(s);
	} else {
		slabs = 1;
	}
	local_irq_restore(flags);
	slab_check_pending_panic();
	if (slabs)
		return;
	flags = local_irq_save();
	if (!slab_caches_lock_take()) {
		local_irq_restore(flags);
		pr_err("kmem_cache_destroy(%s): the cache list is busy on this CPU (called from an interrupt inside a cache-list operation): cache kept\n",
		       s->name);
		return;
	}
	pinned = s->walkers;
	if (pinned)
		s->dead = true;		/* the last walk on it frees it */
	else
		list_del(&s->list);
	spin_unlock_irqrestore(&slab_caches_lock, flags);
	if (!pinned)
		free_cache_desc(s, _RET_IP_);
}

/* ---------------------------------------------------------------- slabinfo */

void kmem_cache_get_slabinfo(struct kmem_cache *s, struct slabinfo *info)
{
	unsigned long flags = local_irq_save();
	unsigned long inuse = 0, cached = 0;
	u64 alloc_slow = 0, free_slow = 0;
	struct page *page;
	bool locked = slab_lock(s);

	for (unsigned int cpu = 0; cpu < s->ncpus; cpu++) {
		struct slab_cpu *c = slab_cpu(s, cpu);

		cached += READ_ONCE(c->state) & SLAB_CPU_COUNT;
		alloc_slow += __atomic_load_n(&c->alloc_slowpath, __ATOMIC_RELAXED);
		free_slow += __atomic_load_n(&c->free_slowpath, __ATOMIC_RELAXED);
	}
	if (locked) {
		list_for_each_entry(page, &s->partial, lru)
			inuse += page->inuse;
		list_for_each_entry(page, &s->full, lru)
			inuse += page->inuse;
	}
	memset(info, 0, sizeof(*info));
	info->name = s->name;
	info->num_objs = s->total_objects;
	info->cpu_cached = cached;
	info->active_objs = inuse - (cached < inuse ? cached : inuse);
	info->objsize = s->size;
	info->object_size = s->object_size;
	info->objperslab = s->objects;
	info->pagesperslab = 1u << s->order;
	info->num_slabs = s->total_slabs;
	info->active_slabs = s->nr_partial + s->nr_full;
	info->nr_partial = s->nr_partial;
	info->nr_full = s->nr_full;
	info->nr_free = s->nr_free;
	info->flags = s->flags;
	info->alloc_slowpath = alloc_slow;
	info->free_slowpath = free_slow;
	/* under the list lock (or this CPU holds it: nothing else changes them) */
	info->refills = s->refills;
	info->flushes = s->flushes;
	info->slabs_allocated = s->slabs_allocated;
	info->slabs_freed = s->slabs_freed;
	info->alloc_failures = slab_stat_read(s, alloc_failures);
	info->nmi_contended = slab_stat_read(s, nmi_contended);
	info->errors = slab_stat_read(s, errors);
	if (locked)
		slab_unlock(s);
	local_irq_restore(flags);
}

static void slabinfo_show_one(struct kmem_cache *s, void *arg)
{
	struct slabinfo si;

	kmem_cache_get_slabinfo(s, &si);
	printk("%-19s %13lu %10lu %9u %12u %14u : slabdata %14lu %11lu %12lu : cpu %8lu : errors %llu\n",
	       si.name, si.active_objs, si.num_objs, si.objsize, si.objperslab, si.pagesperslab,
	       si.active_slabs, si.num_slabs, si.nr_free, si.cpu_cached,
	       si.errors);
}

void slabinfo_show(void)
{
	printk("slabinfo - version: 2.1 (topaz)\n");
	printk("# name              <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>"
	       " : slabdata <active_slabs> <num_slabs> <free_slabs> : cpu <cached> : errors <n>\n");
	slab_caches_walk(slabinfo_show_one, NULL, _RET_IP_);
}
