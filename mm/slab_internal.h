/* SPDX-License-Identifier: MIT */
/* The slab allocator's internals, shared by mm/slab.c, mm/slab_debug.c, mm/kmalloc.c. */
#ifndef TOPAZ_MM_SLAB_INTERNAL_H
#define TOPAZ_MM_SLAB_INTERNAL_H

#include <topaz/slab.h>
#include <topaz/percpu.h>
#include <topaz/spinlock.h>
#include <topaz/smp.h>
#include <topaz/list.h>
#include <topaz/probe.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Per-CPU arrays are laid out for nr_cpu_ids CPUs (include/topaz/percpu.h). */

/*
 * The per-CPU object array ("sheaf"). @state packs the number of objects in
 * @objs (bits 0-15) and a nesting count (bits 16-31): an operation first adds
 * SLAB_CPU_BUSY with one instruction, which an interrupt cannot split, then
 * reads @state. Seeing a nesting count of 1 it owns the array until it writes
 * @state back; seeing more, it interrupted another operation on this CPU and
 * leaves the array alone (the slow path serves it from the slabs). Interrupts
 * nest, so whatever interrupts the owner has undone its own increment before
 * the owner runs again: the owner's plain store is never lost. No interrupt
 * masking and no atomic instruction, so NMIs (a PMI handler) are safe too.
 */
#define SLAB_MAX_OBJECTS	4096	/* per slab: 32 KiB of 8-byte objects */

#define SLAB_CPU_BUSY	0x10000u
#define SLAB_CPU_COUNT	0xffffu

struct slab_cpu {
	u32 state;
	/*
	 * SLAB_CPU_BUSY + @cap: a push owns the array and has room exactly when
	 * the state it read is below this (nesting 1, count < cap), so the free
	 * fast path compares the state itself, without first taking the count
	 * out of it. 0 (no array): every push takes the slow path.
	 */
	u32 push_limit;
	u64 cap;	/* objects @objs holds; 0 for debug caches (no array). 64 bits,
			 * so the index compares without a zero-extension */
	/* slow-path entries on this CPU (slab_cpu_stat_inc()), summed by slabinfo */
	u64 alloc_slowpath, free_slowpath;
	void *objs[];
};

static __always_inline void slab_cpu_acquire(struct slab_cpu *c)
{
	__asm__ __volatile__("addl %1, %0" : "+m"(c->state) : "i"(SLAB_CPU_BUSY) : "memory");
}

/*
 * Count in this CPU's struct slab_cpu. Only this CPU writes its counters, so
 * there is no other CPU to lose an update to, and one instruction, which an
 * interrupt (an NMI) cannot split, makes nested counts safe without a lock
 * prefix: no shared cache line on the slow paths. Readers sum every CPU's
 * (aligned 64-bit loads).
 */
static __always_inline void slab_cpu_stat_inc(u64 *ctr)
{
	__asm__ __volatile__("incq %0" : "+m"(*ctr));
}

/* Per-object debug metadata (caches with any debug flag). */
struct slab_meta {
	u32 state;
	u32 orig_size;	/* kmalloc: the size asked for; the rest is red zone */
};
#define OBJ_FREE	0x65657266u	/* "free" */
#define OBJ_ALLOC	0x636f6c61u	/* "aloc" */
#define OBJ_BAD		0x21646162u	/* "bad!": quarantined after corruption */

/* SLAB_STORE_USER: who allocated and freed the object last. */
struct slab_track {
	uintptr_t addr;
	u64 when;	/* ns since boot */
	u32 cpu;
	u32 pad;
};
enum track_item { TRACK_ALLOC, TRACK_FREE };

struct kmem_cache {
	/* layout; offsets are from the object pointer */
	unsigned int object_size;	/* as created (kmalloc: the class size) */
	unsigned int size;		/* stride of one slot in the slab */
	unsigned int align;
	unsigned int red_left_pad;	/* slot start to object */
	unsigned int inuse;		/* object plus right red zone */
	unsigned int fp_offset;		/* encoded free pointer while free */
	unsigned int meta_offset;	/* struct slab_meta (debug) */
	unsigned int track_offset;	/* two struct slab_track (SLAB_STORE_USER) */
	unsigned int order;		/* slab order; fallback slabs may be smaller */
	unsigned int min_order;		/* smallest order holding one object */
	unsigned int objects;		/* per slab of @order */
	u64 reciprocal;			/* 2^32 / size, rounded up: index without a divide */
	slab_flags_t flags;
	bool debug;			/* any SLAB_DEBUG_FLAGS: the checked slow path */
	bool poison_object;		/* SLAB_POISON and no ctor */
	bool is_kmalloc;
	u64 random;			/* free-pointer secret */
	void (*ctor)(void *);
	char name[KMEM_CACHE_NAME_LEN];
	/* on slab_caches; these three under slab_caches_lock (mm/slab.c) */
	struct list_head list;		/* all caches */
	unsigned int walkers;		/* walks of slab_caches at this cache (pins it) */
	bool dead;			/* destroyed while pinned: the last walker frees it */

	/* slabs; under the list lock with interrupts disabled */
	spinlock_t list_lock;		/* slab_lock(): NMI-safe on its own CPU */
	struct list_head partial, full, free;
	unsigned long nr_partial, nr_full, nr_free, min_free;
	unsigned long total_objects, total_slabs;
	void *deferred;			/* frees made while the lock was held (NMI) */
	unsigned int batch;		/* objects moved per flush */

	/*
	 * Counters. alloc_slowpath and free_slowpath are per CPU (struct
	 * slab_cpu). These four only change under the list lock:
	 */
	u64 refills, flushes, slabs_allocated, slabs_freed;
	/* and these also outside it, on any CPU: __atomic_fetch_add (rare events) */
	u64 alloc_failures, nmi_contended, order_fallback, errors;

	unsigned int ncpus;		/* arrays in @cpu_area: nr_cpu_ids when created */
	unsigned int desc_order;	/* page-allocator order of this descriptor */
	char cpu_area[] __aligned(64);	/* @ncpus struct slab_cpu, SLAB_CPU_STRIDE apart */
};

/*
 * Every cache's per-CPU arrays are SLAB_CPU_STRIDE apart, room for the
 * largest array whatever the cache's own cap: the fast paths multiply the CPU
 * number by a constant, so the array's address waits for no load of the
 * cache's (kfree(): page, then cache, then array, not page, cache, stride,
 * array). Debug caches (cap 0) and caches of large objects pay with larger
 * descriptors.
 */
#define SLAB_CPU_CAP_MAX	1024
#define SLAB_CPU_STRIDE		((sizeof(struct slab_cpu) + SLAB_CPU_CAP_MAX * sizeof(void *) + 63) & ~63UL)

static __always_inline struct slab_cpu *slab_cpu(struct kmem_cache *s, unsigned int cpu)
{
	size_t off = cpu;

	/* one multiply: GCC would spell it as four shifts and adds */
	__asm__("imulq %[k], %[o], %[o]" : [o] "+r"(off) : [k] "i"(SLAB_CPU_STRIDE));
	return (struct slab_cpu *)(s->cpu_area + off);
}

/* Test seam: the hosted tests run "an interrupt" at points inside critical
 * sections (never compiled into the kernel or the benchmark). */
#if defined(TOPAZ_HOSTED) && !defined(TOPAZ_BENCH)
extern void (*slab_test_irq_hook)(int where);
/* Destroy the kmalloc caches, so that kmem_cache_init() makes them anew (under
 * another slub_debug=); returns how many still held objects and were kept. */
int kmalloc_caches_reset(void);
#define SLAB_TEST_HOOK(where) do { if (slab_test_irq_hook) slab_test_irq_hook(where); } while (0)
#else
#define SLAB_TEST_HOOK(where) do { } while (0)
#endif
enum { SLAB_HOOK_ALLOC_FAST = 1, SLAB_HOOK_FREE_FAST, SLAB_HOOK_LOCKED };

/* The slow paths (mm/slab.c). @orig is kmalloc's requested size (0: object_size). */
void *__slab_alloc(struct kmem_cache *s, gfp_t gfp, uintptr_t caller, size_t orig);
void __slab_free(struct kmem_cache *s, void *obj, uintptr_t caller);

/*
 * The fast paths: pop from or push to this CPU's array. Everything else
 * (empty or full array, debugging, an interrupted operation) is the slow path.
 */
static __always_inline void *slab_alloc_fast(struct kmem_cache *s, gfp_t gfp, uintptr_t caller,
					     size_t orig)
{
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());
	u32 st, idx;

	slab_cpu_acquire(c);
	st = READ_ONCE(c->state);
	SLAB_TEST_HOOK(SLAB_HOOK_ALLOC_FAST);
	idx = st - (SLAB_CPU_BUSY + 1);	/* count - 1 when we own the array */
	if (likely(idx < c->cap)) {
		void *obj = c->objs[idx];

		barrier();
		WRITE_ONCE(c->state, idx);
		return obj;
	}
	WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
	return __slab_alloc(s, gfp, caller, orig);
}

static __always_inline void slab_free_fast(struct kmem_cache *s, void *obj, uintptr_t caller)
{
	struct slab_cpu *c = slab_cpu(s, smp_processor_id());
	u32 st, idx;

	slab_cpu_acquire(c);
	st = READ_ONCE(c->state);
	SLAB_TEST_HOOK(SLAB_HOOK_FREE_FAST);
	idx = st - SLAB_CPU_BUSY;	/* count when we own the array */
	if (likely(st < c->push_limit)) {
		c->objs[idx] = obj;
		/* release and count + 1 in one instruction: state is BUSY + idx */
		__asm__ __volatile__("subl %1, %0" : "+m"(c->state) : "i"(SLAB_CPU_BUSY - 1) : "memory");
		return;
	}
	WRITE_ONCE(c->state, st - SLAB_CPU_BUSY);
	__slab_free(s, obj, caller);
}

/*
 * The same fast paths shaped for the API functions, so that the fast path
 * needs no stack frame: the hit returns from the API function directly, a
 * miss releases the array and returns @slow (written as a tail call).
 */
static __always_inline u64 slab_cpu_acquire_read(struct slab_cpu *c)
{
	u64 st;

	/* one instruction takes the array, then the state is read (zero-extended) */
	__asm__ __volatile__("addl %[busy], %[state]\n\tmovl %[state], %k[st]"
			     : [st] "=r"(st), [state] "+m"(c->state)
			     : [busy] "i"(SLAB_CPU_BUSY) : "memory");
	return st;
}

#define SLAB_ALLOC_FASTPATH(s, obj, slow)					\
	SLAB_ALLOC_FASTPATH_CPU(slab_cpu((s), smp_processor_id()), obj, slow)

/* The same from this CPU's array @c of the cache (kmalloc's per-CPU rows). */
#define SLAB_ALLOC_FASTPATH_CPU(c, obj, slow) do {				\
	struct slab_cpu *__c = (c);						\
	u64 __idx = slab_cpu_acquire_read(__c);					\
										\
	SLAB_TEST_HOOK(SLAB_HOOK_ALLOC_FAST);					\
	__idx -= SLAB_CPU_BUSY + 1;	/* count - 1 when we own the array */	\
	if (unlikely(__idx >= __c->cap)) {					\
		__asm__ __volatile__("subl %1, %0" : "+m"(__c->state)		\
				     : "i"(SLAB_CPU_BUSY) : "memory");		\
		return slow;							\
	}									\
	/* straight into the return register: no copy on the way out */	\
	__asm__ ("movq %c[off](%[base],%[i],8), %[o]" : [o] "=a"(obj)		\
		 : [base] "r"(__c), [i] "r"(__idx),				\
		   [off] "i"(offsetof(struct slab_cpu, objs)), "m"(*__c));	\
	barrier();								\
	WRITE_ONCE(__c->state, (u32)__idx);					\
} while (0)

#define SLAB_FREE_FASTPATH(s, obj, slow) do {					\
	struct slab_cpu *__c = slab_cpu((s), smp_processor_id());			\
	u64 __idx = slab_cpu_acquire_read(__c);					\
										\
	SLAB_TEST_HOOK(SLAB_HOOK_FREE_FAST);					\
	/* owned with room (push_limit); 32 bits: compared in memory as read */	\
	if (unlikely((u32)__idx >= __c->push_limit)) {				\
		__asm__ __volatile__("subl %1, %0" : "+m"(__c->state)		\
				     : "i"(SLAB_CPU_BUSY) : "memory");		\
		slow;								\
		return;								\
	}									\
	__c->objs[__idx - SLAB_CPU_BUSY] = (obj);	/* at the count */	\
	__asm__ __volatile__("subl %1, %0" : "+m"(__c->state)			\
			     : "i"(SLAB_CPU_BUSY - 1) : "memory");		\
} while (0)

/*
 * The API's slow ends: allocate on the slow path, zero under __GFP_ZERO,
 * fire @pp when enabled (@pp NULL: no probe). @orig is kmalloc's size, 0 for
 * kmem_cache_alloc. slab_alloc_done() is the same for an object the fast
 * path already has.
 */
void *slab_alloc_slow(struct kmem_cache *s, gfp_t gfp, uintptr_t caller, size_t orig,
		      struct probe_point *pp);
void *slab_alloc_done(struct kmem_cache *s, void *obj, gfp_t gfp, uintptr_t caller, size_t orig,
		      struct probe_point *pp);

/* Slab geometry. Slabs are naturally aligned page-allocator blocks. */
static inline void *slab_base(const struct page *head)
{
	return page_address(head);
}

static inline size_t slab_bytes(const struct page *head)
{
	return PAGE_SIZE << head->order;
}

/* The head page of the slab (or large kmalloc block) holding @p, or NULL. */
struct page *slab_head_page(const void *p);

/* The base of the slab @head holding @p, from @p alone: slabs are naturally aligned. */
static inline uintptr_t slab_base_of(const struct page *head, const void *p)
{
	return (uintptr_t)p & ~(slab_bytes(head) - 1);
}

/* Index of the slot holding @p (which may point inside it), and whether @p is its object start. */
static inline unsigned int slab_obj_index(const struct kmem_cache *s, const struct page *head,
					  const void *p, bool *is_start)
{
	uintptr_t base = slab_base_of(head, p);
	uintptr_t off = (uintptr_t)p - base - s->red_left_pad;
	unsigned int idx;

	if ((uintptr_t)p < base + s->red_left_pad) {
		*is_start = false;
		return 0;
	}
	idx = (unsigned int)((off * s->reciprocal) >> 32);
	*is_start = (uintptr_t)idx * s->size == off && idx < head->objects;
	return idx;
}

/*
 * Whether @p is an object's start, from the page holding it alone (any page of
 * a slab, head or not; a page of no slab has slab_thresh 0: false). One
 * multiply, exact for every stride (mark_slab_pages() sets the fields).
 */
static __always_inline bool slab_page_obj_start(const struct page *page, const void *p)
{
	u32 n = (u32)(uintptr_t)p + page->slab_off;	/* offset from the first object */

	return (u64)n * page->slab_magic < page->slab_thresh;
}

static inline void *slab_obj_at(const struct kmem_cache *s, const struct page *head,
				unsigned int idx)
{
	return (char *)slab_base(head) + s->red_left_pad + (size_t)idx * s->size;
}

/* Hardened free pointers: stored as ptr ^ secret ^ byte-swapped storage address. */
static inline void *fp_decode(const struct kmem_cache *s, const void *obj)
{
	uintptr_t where = (uintptr_t)obj + s->fp_offset;

	return (void *)(*(const uintptr_t *)where ^ s->random ^ __builtin_bswap64(where));
}

static inline void fp_encode(const struct kmem_cache *s, void *obj, const void *next)
{
	uintptr_t where = (uintptr_t)obj + s->fp_offset;

	*(uintptr_t *)where = (uintptr_t)next ^ s->random ^ __builtin_bswap64(where);
}

static inline struct slab_meta *obj_meta(const struct kmem_cache *s, void *obj)
{
	return (struct slab_meta *)((char *)obj + s->meta_offset);
}

static inline struct slab_track *obj_track(const struct kmem_cache *s, void *obj,
					   enum track_item t)
{
	return (struct slab_track *)((char *)obj + s->track_offset) + t;
}

/* Debugging (mm/slab_debug.c); callers hold the list lock with interrupts off. */
slab_flags_t slab_debug_flags_for(const char *name, slab_flags_t flags);
void slab_debug_init_object(struct kmem_cache *s, void *obj);
void slab_debug_init_slab(struct kmem_cache *s, struct page *head);
/* Check a free object about to be handed out; false: quarantined, try another. */
bool slab_debug_alloc_check(struct kmem_cache *s, struct page *head, void *obj,
			    uintptr_t caller, size_t orig);
/* Check an object being freed; false: the free must not happen (reported). */
bool slab_debug_free_check(struct kmem_cache *s, struct page *head, void *obj,
			   uintptr_t caller);
/* Prepare a checked object for its freelist: poison, red zones, tracking. */
void slab_debug_mark_free(struct kmem_cache *s, void *obj, uintptr_t caller);
int slab_debug_validate_slab(struct kmem_cache *s, struct page *head);
void slab_debug_report_leaks(struct kmem_cache *s, struct page *head);

/*
 * Reports, as SLUB prints them: a BUG line naming the cache and the problem,
 * INFO lines, hex dumps, then FIX with what was done. A report under
 * slub_debug_panic panics once the reporting path has dropped its locks.
 */
__printf(4, 5) void slab_report(struct kmem_cache *s, const void *obj, uintptr_t caller,
				const char *fmt, ...);
/* A report about a pointer with no cache to blame (kfree, ksize, krealloc). */
__printf(3, 4) void slab_report_ptr(const void *p, uintptr_t caller, const char *fmt, ...);
void __kfree_caller(const void *p, uintptr_t caller);
bool slab_freelist_ok(struct kmem_cache *s, struct page *page, const void *next);
extern char kmalloc_large_tag;	/* slab_cache of the pages of a large kmalloc block */
__printf(2, 3) void slab_fix(struct kmem_cache *s, const char *fmt, ...);
void slab_hexdump(const char *label, const void *start, size_t len);
/* INFO lines for @p (slab, object, call sites) and a hex dump of its object. */
void slab_print_object(const void *p);
void slab_check_pending_panic(void);
extern u64 slab_error_count;	/* every report; __atomic_fetch_add */
/* Count a rare event in @s (a field outside the list lock's): atomic, relaxed. */
#define slab_stat_inc(s, field)	((void)__atomic_fetch_add(&(s)->field, 1, __ATOMIC_RELAXED))
#define slab_stat_read(s, field)	__atomic_load_n(&(s)->field, __ATOMIC_RELAXED)

bool slab_lock(struct kmem_cache *s);
void slab_unlock(struct kmem_cache *s);


DECLARE_PROBE(kmem_cache_alloc);
DECLARE_PROBE(kmem_cache_free);
DECLARE_PROBE(kmalloc);
DECLARE_PROBE(kfree);
extern const struct probe_value_desc slab_alloc_values[9];
extern const struct probe_value_desc slab_free_values[5];
/* Fire an allocation or free probe; "name" is the point's name without "vm.". */
void slab_fire_alloc(struct probe_point *pp, const char *cache_name, const void *ptr,
		     size_t bytes_req, size_t bytes_alloc, gfp_t gfp, uintptr_t caller);
void slab_fire_free(struct probe_point *pp, const char *cache_name, const void *ptr,
		    uintptr_t caller);

extern struct list_head slab_caches;
/*
 * Every cache, without slab_caches_lock: for single-threaded tests only (the
 * kernel's walks pin each cache in turn, mm/slab.c slab_caches_walk()). Not
 * list_for_each_entry(): that forms a struct kmem_cache pointer from the list
 * head itself at the end, misaligned for the type's 64-byte alignment (UBSan
 * says so).
 */
#define for_each_slab_cache(s)							\
	for (struct list_head *__l = slab_caches.next;				\
	     __l != &slab_caches && ((s) = list_entry(__l, struct kmem_cache, list)); \
	     __l = __l->next)

#endif
