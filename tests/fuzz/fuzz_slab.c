// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the slab allocator and kmalloc against a reference model.
 *
 * Feeds: the input bytes as a program for the allocator over a small (2 MiB)
 * hosted page pool. Byte 0 picks the mode: bit 0 slub_debug on, bits 1-4 its
 * letters F, Z, P, U for every cache (none: all four). Then each op is an
 * opcode byte (low 4 bits) and its argument bytes (missing bytes read as 0):
 * kmem_cache_create (size, align, SLAB_HWCACHE_ALIGN, a ctor, extra debug
 * flags), kmem_cache_alloc/zalloc, kmem_cache_free, kfree, kmalloc,
 * krealloc, ksize, kmem_cache_alloc_bulk/free_bulk, kmem_cache_shrink(_all),
 * kmem_cache_destroy, kmem_cache_validate, allocation until the pool runs out,
 * free-then-reuse, and, with slub_debug only, misuse: a double free, a free to
 * the wrong cache, a free of an interior pointer, a byte written into a red
 * zone. Without slub_debug only valid operations are issued. At the end every
 * object is freed, every cache destroyed, the kmalloc caches too, so the next
 * input starts from an empty allocator.
 * Must hold: live objects are distinct, do not overlap each other or a cache
 * descriptor, sit in a slab of their cache (or a large kmalloc block) and are
 * aligned as asked, at least the requested size; __GFP_ZERO zeroes; ctor
 * caches hand out constructed objects; debug caches hand out poisoned objects
 * with intact red zones; the pattern the harness writes survives until the
 * free; without slub_debug a freed object is the next one allocated; an
 * allocation fails only when the page allocator has no block of the order
 * needed (after reclaiming every empty slab, for callers that may block);
 * each misuse is reported exactly once and changes nothing, valid operations
 * are never reported; at the end every page is back in the page allocator.
 * A violation prints the op index and aborts.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../host/hosted.h"
#include <topaz/slab.h>
#include <topaz/kernel.h>
#include "../../mm/slab_internal.h"	/* white-box: layout, min_order, descriptors */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARENA_MIB	2	/* small, so that inputs reach exhaustion */
#define MAX_CACHES	8
#define MAX_OBJS	1024
#define MAX_FREED	64
#define FILL_MAX	256	/* allocations per fill op: enough to empty the pool of big objects */
#define MAX_RANGES	(MAX_OBJS + MAX_CACHES + 16)
#define KMALLOC_FUZZ_MAX (64u << 10)	/* largest kmalloc: order 4 */
#define CACHE_FUZZ_MAX	(256u << 10)	/* largest cache object: slabs up to 1 MiB */
#define CTOR_BYTE	0xc7

#define RZ_LEFT		1
#define RZ_RIGHT	2
#define RZ_KMALLOC	4

struct fcache {
	struct kmem_cache *s;	/* NULL: slot unused */
	unsigned int size, align;
	bool ctor;
};

struct obj {
	u8 *p;
	size_t size;		/* bytes the harness owns: requested, or ksize() */
	int cache;		/* fcaches[] index; -1: kmalloc */
	struct kmem_cache *s;	/* the slab cache holding it; NULL: a large kmalloc block */
	u8 seed;		/* byte i holds pat(seed, i) */
	u8 dirty;		/* red zones written on purpose (RZ_*), not yet reported */
};

/* A freed pointer kept for a deliberate double free. */
struct freed {
	u8 *p;
	int cache;
};

/* Every live object and cache descriptor, sorted by address: overlap checks. */
struct range {
	uintptr_t lo, hi;
};

static void *arena;
static u64 total_pages, bad_frees0;
static bool debug_mode;
static unsigned int op_index;
static const char *op_name = "setup";
static struct fcache fcaches[MAX_CACHES];
static struct obj objs[MAX_OBJS];
static unsigned int nobjs;
static struct freed freed[MAX_FREED];
static unsigned int nfreed, freed_next;
static struct range ranges[MAX_RANGES];
static unsigned int nranges;
static u64 expected_errors;	/* reports the misuse so far must have made */
static u64 errors0;		/* slab_debug_errors() when the input started */
static unsigned int ncreated;

static const unsigned int kmalloc_sizes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_slab: op %u (%s): ", op_index, op_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---------------------------------------------------------------- input */

struct input {
	const u8 *d;
	size_t n, i;
};

static u8 get8(struct input *in)
{
	return in->i < in->n ? in->d[in->i++] : 0;
}

static unsigned int get16(struct input *in)
{
	unsigned int lo = get8(in);

	return lo | (unsigned int)get8(in) << 8;
}

static gfp_t pick_gfp(u8 b)
{
	gfp_t gfp = (b & 1) ? GFP_ATOMIC : GFP_KERNEL;

	if (b & 2)
		gfp |= __GFP_ZERO;
	return gfp | __GFP_NOWARN;
}

/* ---------------------------------------------------------------- ranges */

/* Index of the first range with lo >= @lo. */
static unsigned int range_pos(uintptr_t lo)
{
	unsigned int a = 0, b = nranges;

	while (a < b) {
		unsigned int m = (a + b) / 2;

		if (ranges[m].lo < lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static void range_add(uintptr_t lo, uintptr_t hi, const char *what)
{
	unsigned int i = range_pos(lo);

	if (nranges == MAX_RANGES)
		fail("model full");
	if (i > 0 && ranges[i - 1].hi > lo)
		fail("%s 0x%lx-0x%lx overlaps 0x%lx-0x%lx", what, (unsigned long)lo,
		     (unsigned long)hi, (unsigned long)ranges[i - 1].lo,
		     (unsigned long)ranges[i - 1].hi);
	if (i < nranges && ranges[i].lo < hi)
		fail("%s 0x%lx-0x%lx overlaps 0x%lx-0x%lx", what, (unsigned long)lo,
		     (unsigned long)hi, (unsigned long)ranges[i].lo, (unsigned long)ranges[i].hi);
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(ranges[0]));
	ranges[i].lo = lo;
	ranges[i].hi = hi;
	nranges++;
}

static void range_del(uintptr_t lo)
{
	unsigned int i = range_pos(lo);

	if (i == nranges || ranges[i].lo != lo)
		fail("model lost the range at 0x%lx", (unsigned long)lo);
	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(ranges[0]));
	nranges--;
}

/* Is @p inside a live object or a descriptor? */
static bool range_hit(uintptr_t p)
{
	unsigned int i = range_pos(p + 1);

	return i > 0 && ranges[i - 1].hi > p;
}

/* ---------------------------------------------------------------- checks */

/*
 * Byte i of an object holds patterns[seed + i]: a window into one random
 * buffer, so that filling and checking are memcpy and memcmp (the fuzzer
 * spends its time in the allocator, not in byte loops).
 */
static u8 patterns[CACHE_FUZZ_MAX + 256];
static u8 scratch[CACHE_FUZZ_MAX];

static void fill(struct obj *o, size_t from)
{
	if (from < o->size)
		memcpy(o->p + from, patterns + o->seed + from, o->size - from);
}

static void verify(const struct obj *o, size_t n, const char *when)
{
	const u8 *want = patterns + o->seed;

	if (!memcmp(o->p, want, n))
		return;
	for (size_t i = 0; i < n; i++)
		if (o->p[i] != want[i])
			fail("%s: object %p (%zu bytes) byte %zu is 0x%02x, written 0x%02x", when,
			     (void *)o->p, o->size, i, o->p[i], want[i]);
}

static void check_bytes(const u8 *p, size_t n, u8 v, const char *what, const void *obj)
{
	memset(scratch, v, n);
	if (!memcmp(p, scratch, n))
		return;
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			fail("%s of object %p: byte %zu is 0x%02x, not 0x%02x", what, obj, i, p[i], v);
}

static void check_errors(const char *when)
{
	u64 got = slab_debug_errors() - errors0;

	if (got != expected_errors)
		fail("%s: %llu slab reports, expected %llu", when, got,
		     expected_errors);
}

static struct kmem_cache *obj_cache(const struct obj *o)
{
	return o->s;
}

/* The cache a new kmalloc(@size) object comes from; NULL: the page allocator. */
static struct kmem_cache *kmalloc_slab(size_t size)
{
	return size <= KMALLOC_MAX_CACHE_SIZE ? kmalloc_cache_for(size) : NULL;
}

static u64 free_blocks_from(unsigned int order)
{
	struct page_alloc_stats st;
	u64 n = 0;

	page_alloc_get_stats(&st);
	for (unsigned int o = order; o <= MAX_ORDER; o++)
		n += st.nr_free[o];
	return n;
}

/* An allocation needing a block of @order failed: the pool must really be out. */
static void check_exhausted(const char *what, unsigned int order, gfp_t gfp)
{
	u64 n;

	if (gfpflags_allow_blocking(gfp)) {
		/* it may block, so it must have reclaimed every empty slab first */
		unsigned long pages = kmem_cache_shrink_all();

		if (pages)
			fail("%s failed while %lu pages were reclaimable", what, pages);
	}
	n = free_blocks_from(order);
	if (n)
		fail("%s failed with %llu free blocks of order >= %u", what,
		     n, order);
}

/* Is @p where an object of @s (@size bytes) may be? */
static void check_placement(const u8 *p, size_t size, struct kmem_cache *s, const char *what)
{
	struct page *head = slab_head_page(p);

	if ((uintptr_t)p < (uintptr_t)arena ||
	    (uintptr_t)p + size > (uintptr_t)arena + ((size_t)ARENA_MIB << 20))
		fail("%s %p outside the page pool", what, (void *)p);
	if (!head)
		fail("%s %p: no struct page", what, (void *)p);
	if (s) {
		uintptr_t base = (uintptr_t)slab_base(head);

		if (!(head->flags & PG_slab) || head->slab_cache != s)
			fail("%s %p is not in a slab of %s", what, (void *)p, s->name);
		if ((uintptr_t)p < base || (uintptr_t)p + size > base + slab_bytes(head))
			fail("%s %p (%zu bytes) crosses its slab", what, (void *)p, size);
	} else {
		if (!(head->flags & PG_head) || head->slab_cache != &kmalloc_large_tag ||
		    page_address(head) != p)
			fail("%s %p is not a large kmalloc block", what, (void *)p);
		if (size > PAGE_SIZE << head->order)
			fail("%s %p: %zu bytes in an order-%u block", what, (void *)p, size,
			     head->order);
	}
}

/* The red zones of a live object are SLUB_RED_ACTIVE (except what the harness dirtied). */
static void check_redzones(const struct obj *o, struct kmem_cache *s)
{
	if (!s || !(s->flags & SLAB_RED_ZONE) || o->dirty)
		return;
	check_bytes(o->p - s->red_left_pad, s->red_left_pad, SLUB_RED_ACTIVE, "left red zone",
		    o->p);
	check_bytes(o->p + s->object_size, s->inuse - s->object_size, SLUB_RED_ACTIVE,
		    "right red zone", o->p);
	if (o->cache < 0 && o->size < s->object_size)
		check_bytes(o->p + o->size, s->object_size - o->size, SLUB_RED_ACTIVE,
			    "kmalloc red zone", o->p);
}

/* ---------------------------------------------------------------- the model */

/* Take a new object into the model: every check an allocation gets. */
static struct obj *add_obj(u8 *p, size_t size, int cache, struct kmem_cache *s, gfp_t gfp,
			   size_t align)
{
	struct obj *o;

	if (nobjs == MAX_OBJS)
		fail("model full");
	if (p == ZERO_SIZE_PTR || !p)
		fail("no object");
	if (align && !IS_ALIGNED((uintptr_t)p, align))
		fail("object %p not %zu-aligned", (void *)p, align);
	check_placement(p, size, s, "object");
	range_add((uintptr_t)p, (uintptr_t)p + size, "new object");
	o = &objs[nobjs++];
	o->p = p;
	o->size = size;
	o->cache = cache;
	o->s = s;
	o->seed = (u8)(op_index * 13 + nobjs);
	o->dirty = 0;
	if (gfp & __GFP_ZERO) {
		check_bytes(p, size, 0, "__GFP_ZERO", p);
	} else if (cache >= 0 && fcaches[cache].ctor) {
		check_bytes(p, size, CTOR_BYTE, "constructed object", p);
	} else if (cache >= 0 && s->poison_object) {
		check_bytes(p, size - 1, POISON_FREE, "poison", p);
		check_bytes(p + size - 1, 1, POISON_END, "poison end", p);
	}
	check_redzones(o, s);
	fill(o, 0);
	return o;
}

/* Drop objs[@i] from the model (the caller frees it); returns its pointer. */
static u8 *drop_obj(unsigned int i)
{
	u8 *p = objs[i].p;

	range_del((uintptr_t)p);
	objs[i] = objs[--nobjs];
	return p;
}

static void remember_freed(u8 *p, int cache)
{
	freed[freed_next].p = p;
	freed[freed_next].cache = cache;
	freed_next = (freed_next + 1) % MAX_FREED;
	if (nfreed < MAX_FREED)
		nfreed++;
}

/* Free objs[@i] the valid way (@use_kfree: kfree even for a cache object). */
static void free_obj(unsigned int i, bool use_kfree)
{
	struct obj *o = &objs[i];
	int cache = o->cache;
	struct kmem_cache *s = obj_cache(o);
	u8 *p;

	verify(o, o->size, "before free");
	/* each dirtied red zone is reported once, by the free */
	expected_errors += (u64)__builtin_popcount(o->dirty);
	if (cache >= 0 && fcaches[cache].ctor)
		memset(o->p, CTOR_BYTE, o->size);	/* as a ctor cache's user must */
	p = drop_obj(i);
	if (cache < 0 || use_kfree)
		kfree(p);
	else
		kmem_cache_free(s, p);
	check_errors("free");
	remember_freed(p, cache);
}

static int pick_obj(u8 b, int cache_filter)
{
	if (!nobjs)
		return -1;
	for (unsigned int k = 0; k < nobjs; k++) {
		unsigned int i = (b + k) % nobjs;

		if (cache_filter == -2 || objs[i].cache == cache_filter)
			return (int)i;
	}
	return -1;
}

static int pick_cache(u8 b)
{
	for (unsigned int k = 0; k < MAX_CACHES; k++) {
		unsigned int i = (b + k) % MAX_CACHES;

		if (fcaches[i].s)
			return (int)i;
	}
	return -1;
}

static size_t cache_align(const struct fcache *fc)
{
	size_t a = fc->align > ARCH_KMALLOC_MINALIGN ? fc->align : ARCH_KMALLOC_MINALIGN;

	if (fc->s->flags & SLAB_HWCACHE_ALIGN) {
		/* cache lines, or half of one and less for small objects (as Linux) */
		size_t ralign = 64;

		while (fc->size <= ralign / 2 && ralign > ARCH_KMALLOC_MINALIGN)
			ralign /= 2;
		a = a > ralign ? a : ralign;
	}
	return a;
}

/* kmalloc's promise: 8-aligned; without debugging, powers of two naturally. */
static size_t kmalloc_align(size_t size)
{
	struct kmem_cache *s;

	if (size > KMALLOC_MAX_CACHE_SIZE)
		return PAGE_SIZE;
	s = kmalloc_cache_for(size);
	if (!s->debug && !(size & (size - 1)))
		return size;
	return ARCH_KMALLOC_MINALIGN;
}

static unsigned int kmalloc_order(size_t size)
{
	if (size <= KMALLOC_MAX_CACHE_SIZE)
		return kmalloc_cache_for(size)->min_order;
	return get_order(size);
}

static size_t pick_kmalloc_size(struct input *in)
{
	u8 cls = get8(in);
	unsigned int v = get16(in);

	switch (cls & 3) {
	case 0: return v % 65;
	case 1: return 1 + v % 1024;
	case 2: return 1 + v % KMALLOC_MAX_CACHE_SIZE;
	default: return KMALLOC_MAX_CACHE_SIZE + 1 + v % (KMALLOC_FUZZ_MAX - KMALLOC_MAX_CACHE_SIZE);
	}
}

/* The descriptor's pages: it starts at a colour offset inside the first (mm/slab.c). */
static uintptr_t desc_block(const struct kmem_cache *s)
{
	return (uintptr_t)s & PAGE_MASK;
}

static void add_desc(struct kmem_cache *s)
{
	range_add(desc_block(s), desc_block(s) + (PAGE_SIZE << s->desc_order), "cache descriptor");
}

static void ctor(void *p)
{
	struct page *head = slab_head_page(p);
	struct kmem_cache *s = head->slab_cache;

	memset(p, CTOR_BYTE, s->object_size);
}

/* ---------------------------------------------------------------- ops */

static void op_create(struct input *in)
{
	unsigned int v = get16(in);
	u8 a = get8(in), f = get8(in);
	/* mostly up to 16 KiB; bit 6 of the flags byte: big objects in big slabs */
	unsigned int size = 1 + ((f & 64) ? v * 4 % CACHE_FUZZ_MAX : v % 16384);
	unsigned int align = (a & 0x80) ? 0 : 1u << (a % 13);
	slab_flags_t flags = (f & 1) ? SLAB_HWCACHE_ALIGN : 0;
	struct kmem_cache *s;
	struct fcache *fc;
	char name[32];
	int slot = -1;

	for (int i = 0; i < MAX_CACHES; i++)
		if (!fcaches[i].s) {
			slot = i;
			break;
		}
	if (slot < 0)
		return;
	if (debug_mode)
		flags |= ((f & 4) ? SLAB_CONSISTENCY_CHECKS : 0) | ((f & 8) ? SLAB_RED_ZONE : 0) |
			 ((f & 16) ? SLAB_POISON : 0) | ((f & 32) ? SLAB_STORE_USER : 0);
	snprintf(name, sizeof(name), "fz-%u", ncreated++);
	s = kmem_cache_create(name, size, align, flags, (f & 2) ? ctor : NULL);
	check_errors("create");
	if (!s) {
		/* valid arguments: only memory can be missing, for the descriptor */
		check_exhausted("kmem_cache_create",
				get_order(sizeof(struct kmem_cache) +
					  NR_CPUS * ALIGN_UP(sizeof(struct slab_cpu) + 1024 * 8, 64UL)),
				GFP_KERNEL);
		return;
	}
	if (kmem_cache_size(s) != size || strcmp(kmem_cache_name(s), name))
		fail("cache %s: size %u, name %s", name, kmem_cache_size(s), kmem_cache_name(s));
	if (debug_mode != s->debug)
		fail("cache %s: debug %d in slub_debug mode %d", name, s->debug, debug_mode);
	if (s->size < size)
		fail("cache %s: stride %u below the object size %u", name, s->size, size);
	add_desc(s);
	fc = &fcaches[slot];
	fc->s = s;
	fc->size = size;
	fc->align = align;
	fc->ctor = f & 2;
}

/* One allocation from cache @c; false when it failed (checked) or the model is full. */
static bool alloc_one(int c, gfp_t gfp, bool zalloc)
{
	struct fcache *fc = &fcaches[c];
	u8 *p;

	if (nobjs == MAX_OBJS)
		return false;
	p = zalloc ? kmem_cache_zalloc(fc->s, gfp) : kmem_cache_alloc(fc->s, gfp);
	check_errors("alloc");
	if (!p) {
		check_exhausted("kmem_cache_alloc", fc->s->min_order, gfp);
		return false;
	}
	add_obj(p, fc->size, c, fc->s, zalloc ? gfp | __GFP_ZERO : gfp, cache_align(fc));
	return true;
}

static void op_alloc(struct input *in)
{
	int c = pick_cache(get8(in));
	u8 g = get8(in);
	unsigned int n = 1 + (g >> 4) % 4;

	if (c < 0)
		return;
	while (n-- && alloc_one(c, pick_gfp(g), g & 4))
		;
}

static void op_free(struct input *in)
{
	int i = pick_obj(get8(in), -2);
	u8 how = get8(in);

	if (i >= 0)
		free_obj((unsigned int)i, how & 1);
}

/*
 * kmalloc(@size), or kzalloc() when @zero; with @use_ksize the harness then
 * takes the whole size class. False when it failed (checked) or the model is full.
 */
static bool kmalloc_one(size_t size, gfp_t gfp, bool zero, bool use_ksize)
{
	struct obj *o;
	size_t n;
	u8 *p;

	if (nobjs == MAX_OBJS)
		return false;
	p = zero ? kzalloc(size, gfp) : kmalloc(size, gfp);
	check_errors("kmalloc");
	if (!size) {
		if (p != ZERO_SIZE_PTR)
			fail("kmalloc(0) returned %p", (void *)p);
		kfree(p);
		return true;
	}
	if (!p) {
		check_exhausted("kmalloc", kmalloc_order(size), gfp);
		return false;
	}
	o = add_obj(p, size, -1, kmalloc_slab(size), zero ? gfp | __GFP_ZERO : gfp,
		    kmalloc_align(size));
	if (use_ksize) {
		/* not always: ksize() ends the checking of the kmalloc red zone */
		n = ksize(p);
		check_errors("ksize");
		if (n < size)
			fail("ksize %zu below the %zu bytes asked", n, size);
		/* the caller may use all of it (and red zones stop there) */
		range_del((uintptr_t)p);
		range_add((uintptr_t)p, (uintptr_t)p + n, "ksize object");
		o->size = n;
		fill(o, size);
	}
	return true;
}

static void op_kmalloc(struct input *in)
{
	size_t size = pick_kmalloc_size(in);
	u8 g = get8(in);

	kmalloc_one(size, pick_gfp(g), g & 4, g & 8);
}

/* Report what a misused object's dirtied red zones owe, then forget them. */
/* kmem_cache_validate() reports exactly the @owed bytes the harness dirtied. */
static void expect_validate(struct kmem_cache *s, u64 owed)
{
	int got = kmem_cache_validate(s);

	expected_errors += owed;
	if (got < 0 || (u64)got != owed)
		fail("kmem_cache_validate(%s) found %d, expected %llu", s->name, got,
		     owed);
	check_errors("validate");
}

static void settle_dirty(struct obj *o)
{
	struct kmem_cache *s = obj_cache(o);
	u64 owed = 0;

	if (!o->dirty)
		return;
	for (unsigned int k = 0; k < nobjs; k++)
		if (obj_cache(&objs[k]) == s) {
			owed += (u64)__builtin_popcount(objs[k].dirty);
			objs[k].dirty = 0;
		}
	expect_validate(s, owed);
}

static void op_krealloc(struct input *in)
{
	int i = pick_obj(get8(in), -1);
	size_t size = pick_kmalloc_size(in);
	u8 g = get8(in);
	gfp_t gfp = pick_gfp(g) & ~__GFP_ZERO;	/* zeroing the growth is not promised */
	bool in_place;
	struct obj o;
	u8 *p;

	if (i < 0 || (g & 8)) {
		/* krealloc(NULL) is kmalloc */
		if (nobjs == MAX_OBJS)
			return;
		p = krealloc(NULL, size, gfp);
		check_errors("krealloc(NULL)");
		if (!size) {
			if (p != ZERO_SIZE_PTR)
				fail("krealloc(NULL, 0) returned %p", (void *)p);
			return;
		}
		if (!p) {
			check_exhausted("krealloc(NULL)", kmalloc_order(size), gfp);
			return;
		}
		add_obj(p, size, -1, kmalloc_slab(size), gfp, kmalloc_align(size));
		return;
	}
	settle_dirty(&objs[i]);
	o = objs[i];
	verify(&o, o.size, "before krealloc");
	if (!size) {
		drop_obj((unsigned int)i);
		p = krealloc(o.p, 0, gfp);
		check_errors("krealloc(p, 0)");
		if (p != ZERO_SIZE_PTR)
			fail("krealloc(p, 0) returned %p", (void *)p);
		remember_freed(o.p, -1);
		return;
	}
	p = krealloc(o.p, size, gfp);
	check_errors("krealloc");
	if (!p) {
		check_exhausted("krealloc", kmalloc_order(size), gfp);
		verify(&o, o.size, "after a failed krealloc");
		return;
	}
	drop_obj((unsigned int)i);
	in_place = p == o.p;
	if (!in_place)
		remember_freed(o.p, -1);
	/* the contents up to the smaller size moved with it */
	o.p = p;
	o.size = o.size < size ? o.size : size;
	verify(&o, o.size, "after krealloc");
	/* in place when its class (or large block) holds the new size */
	add_obj(p, size, -1, in_place ? o.s : kmalloc_slab(size), gfp, ARCH_KMALLOC_MINALIGN);
	objs[nobjs - 1].seed = o.seed;
	fill(&objs[nobjs - 1], 0);
}

static void op_shrink(struct input *in)
{
	u8 b = get8(in);
	int c = pick_cache(b);

	if (b & 0x80)
		kmem_cache_shrink_all();
	else if (b & 0x40)
		kmem_cache_shrink(kmalloc_cache_for(kmalloc_sizes[b % ARRAY_SIZE(kmalloc_sizes)]));
	else if (c >= 0 && kmem_cache_shrink(fcaches[c].s) < 0)
		fail("kmem_cache_shrink < 0");
	check_errors("shrink");
}

static void forget_freed(int cache)
{
	for (unsigned int k = 0; k < nfreed; k++)
		if (freed[k].cache == cache)
			freed[k].p = NULL;
}

static void destroy_cache(int c)
{
	struct kmem_cache *s = fcaches[c].s;
	struct page_alloc_stats a, b;

	for (unsigned int k = nobjs; k-- > 0;)
		if (objs[k].cache == c)
			free_obj(k, false);
	page_alloc_get_stats(&a);
	range_del(desc_block(s));
	kmem_cache_destroy(s);
	check_errors("destroy");
	page_alloc_get_stats(&b);
	if (b.free_pages < a.free_pages + (1u << s->desc_order))
		fail("kmem_cache_destroy gave back %llu pages, less than its descriptor",
		     b.free_pages - a.free_pages);
	fcaches[c].s = NULL;
	forget_freed(c);
}

static void op_destroy(struct input *in)
{
	int c = pick_cache(get8(in));

	if (c >= 0)
		destroy_cache(c);
}

static void op_bulk_alloc(struct input *in)
{
	int c = pick_cache(get8(in));
	u8 g = get8(in);
	size_t n = 1 + get8(in) % 32;
	void *p[32];
	struct slabinfo si;
	unsigned int live = 0;

	if (c < 0 || nobjs + n > MAX_OBJS)
		return;
	if (kmem_cache_alloc_bulk(fcaches[c].s, pick_gfp(g), n, p) != (int)n) {
		check_errors("alloc_bulk");
		/* all or nothing: what it took went back */
		for (unsigned int k = 0; k < nobjs; k++)
			live += objs[k].cache == c;
		kmem_cache_get_slabinfo(fcaches[c].s, &si);
		if (si.active_objs != live)
			fail("failed alloc_bulk left %lu objects active, the model has %u",
			     si.active_objs, live);
		return;
	}
	check_errors("alloc_bulk");
	for (size_t k = 0; k < n; k++)
		add_obj(p[k], fcaches[c].size, c, fcaches[c].s, pick_gfp(g),
			cache_align(&fcaches[c]));
}

static void op_bulk_free(struct input *in)
{
	u8 b = get8(in);
	int c = (b & 0x80) ? -1 : pick_cache(b);
	size_t n = 1 + get8(in) % 32, k = 0;
	void *p[32];

	/* a NULL cache frees kmalloc objects */
	while (k < n) {
		int i = pick_obj((u8)(b + k), c);

		if (i < 0)
			break;
		verify(&objs[i], objs[i].size, "before free_bulk");
		expected_errors += (u64)__builtin_popcount(objs[i].dirty);
		if (c >= 0 && fcaches[c].ctor)
			memset(objs[i].p, CTOR_BYTE, objs[i].size);
		remember_freed(objs[i].p, c);
		p[k++] = drop_obj((unsigned int)i);
	}
	if (k)
		kmem_cache_free_bulk(c >= 0 ? fcaches[c].s : NULL, k, p);
	check_errors("free_bulk");
}

static void op_ksize(struct input *in)
{
	int i = pick_obj(get8(in), -1);
	struct obj *o;
	size_t n, old;

	if (i < 0)
		return;
	settle_dirty(&objs[i]);
	o = &objs[i];
	n = ksize(o->p);
	check_errors("ksize");
	if (n < o->size)
		fail("ksize %zu below the %zu bytes owned", n, o->size);
	if (o->size <= KMALLOC_MAX_CACHE_SIZE && n > KMALLOC_MAX_CACHE_SIZE)
		fail("ksize %zu of a slab object", n);
	/* the caller may use all of it now */
	verify(o, o->size, "before ksize growth");
	range_del((uintptr_t)o->p);
	range_add((uintptr_t)o->p, (uintptr_t)o->p + n, "ksize object");
	old = o->size;
	o->size = n;
	fill(o, old);
}

static void op_validate(struct input *in)
{
	u8 b = get8(in);
	int c = pick_cache(b);
	struct kmem_cache *s;
	struct slabinfo si;
	unsigned int live = 0;
	u64 owed = 0;

	if (b & 0x80)
		s = kmalloc_cache_for(kmalloc_sizes[b % ARRAY_SIZE(kmalloc_sizes)]);
	else if (c >= 0)
		s = fcaches[c].s;
	else
		return;
	for (unsigned int k = 0; k < nobjs; k++) {
		if (obj_cache(&objs[k]) != s)
			continue;
		live++;
		owed += (u64)__builtin_popcount(objs[k].dirty);
		objs[k].dirty = 0;
		verify(&objs[k], objs[k].size, "validate");
	}
	expect_validate(s, owed);
	kmem_cache_get_slabinfo(s, &si);
	if (si.active_objs != live)
		fail("%s: slabinfo has %lu active objects, the model %u", s->name, si.active_objs,
		     live);
	if (si.num_objs < si.active_objs + si.cpu_cached)
		fail("%s: %lu objects in slabs, %lu active and %lu cached", s->name, si.num_objs,
		     si.active_objs, si.cpu_cached);
}

/* Allocate until the pool (or the model) runs out. */
static void op_fill(struct input *in)
{
	u8 b = get8(in);
	u8 g = get8(in);
	int c = pick_cache(b);

	if (b & 0x80) {
		size_t size = pick_kmalloc_size(in);

		if (!size)
			size = 1;
		for (unsigned int k = 0; k < FILL_MAX; k++)
			if (!kmalloc_one(size, pick_gfp(g), false, false))
				break;
	} else if (c >= 0) {
		for (unsigned int k = 0; k < FILL_MAX && alloc_one(c, pick_gfp(g), false); k++)
			;
	}
}

/* Free an object and allocate one of the same kind: without debugging, the same one. */
static void op_reuse(struct input *in)
{
	int i = pick_obj(get8(in), -2);
	u8 g = get8(in);
	struct obj o;
	size_t size;
	u8 *p;

	if (i < 0)
		return;
	o = objs[i];
	if (!o.s)
		return;		/* large blocks are the page allocator's */
	free_obj((unsigned int)i, false);
	/* a kmalloc object is asked for by its class size: krealloc may have shrunk it */
	size = o.cache >= 0 ? o.size : o.s->object_size;
	if (o.cache >= 0)
		p = kmem_cache_alloc(o.s, pick_gfp(g));
	else
		p = kmalloc(size, pick_gfp(g));
	check_errors("reuse");
	if (!p)
		fail("allocation right after a free of %p failed", (void *)o.p);
	if (!debug_mode && p != o.p)
		fail("freed %p, the next allocation returned %p", (void *)o.p, (void *)p);
	if (o.cache >= 0)
		add_obj(p, size, o.cache, o.s, pick_gfp(g), cache_align(&fcaches[o.cache]));
	else
		add_obj(p, size, -1, o.s, pick_gfp(g), kmalloc_align(size));
}

static void op_rewrite(struct input *in)
{
	int i = pick_obj(get8(in), -2);

	if (i < 0)
		return;
	verify(&objs[i], objs[i].size, "rewrite");
	objs[i].seed ^= get8(in) | 1;
	fill(&objs[i], 0);
}

/* ---------------------------------------------------------------- misuse */

/* kmalloc caches and harness caches, by a byte. */
static struct kmem_cache *any_cache(u8 b)
{
	int c;

	if (b & 0x80)
		return kmalloc_cache_for(kmalloc_sizes[b % ARRAY_SIZE(kmalloc_sizes)]);
	c = pick_cache(b);
	return c >= 0 ? fcaches[c].s : kmalloc_cache_for(8);
}

/* One deliberate misuse: exactly one report now, or one owed by the object. */
static void op_misuse(struct input *in)
{
	u8 what = get8(in), b = get8(in), x = get8(in);
	unsigned int off = get16(in);
	struct kmem_cache *s;
	struct obj *o;
	int i;

	if (!debug_mode)
		return;		/* without slub_debug, misuse is undefined */
	switch (what % 4) {
	case 0: {	/* double free */
		struct freed *f = nfreed ? &freed[b % nfreed] : NULL;

		if (!f || !f->p || range_hit((uintptr_t)f->p))
			return;		/* gone with its cache, or handed out again */
		if (f->cache >= 0)
			kmem_cache_free(fcaches[f->cache].s, f->p);
		else
			kfree(f->p);
		expected_errors++;
		check_errors("double free");
		return;
	}
	case 1:		/* free to the wrong cache */
		i = pick_obj(b, -2);
		if (i < 0)
			return;
		o = &objs[i];
		s = any_cache(x);
		if (s == obj_cache(o))
			return;
		kmem_cache_free(s, o->p);
		expected_errors++;
		check_errors("free to the wrong cache");
		verify(o, o->size, "after a free to the wrong cache");
		return;
	case 2:		/* free of a pointer inside the object */
		i = pick_obj(b, -2);
		if (i < 0 || objs[i].size < 2)
			return;
		o = &objs[i];
		/* anywhere inside, or among the last bytes */
		off = (x & 2) ? 1 + off % (o->size - 1) :
		      (unsigned int)o->size - 1 - off % (o->size - 1 < 64 ? o->size - 1 : 64);
		if (o->cache >= 0 && !(x & 1))
			kmem_cache_free(obj_cache(o), o->p + off);
		else
			kfree(o->p + off);
		expected_errors++;
		check_errors("free of an interior pointer");
		verify(o, o->size, "after a free of an interior pointer");
		return;
	default: {	/* a byte into a red zone */
		unsigned int n;
		u8 *at;

		i = pick_obj(b, -2);
		if (i < 0)
			return;
		o = &objs[i];
		s = obj_cache(o);
		if (!s || !(s->flags & SLAB_RED_ZONE))
			return;
		if (o->cache < 0 && o->size < s->object_size && (x & 3) == 2) {
			n = s->object_size - (unsigned int)o->size;
			at = o->p + o->size + x % n;
			o->dirty |= RZ_KMALLOC;
		} else if ((x & 1) && s->red_left_pad) {
			at = o->p - 1 - x % s->red_left_pad;
			o->dirty |= RZ_LEFT;
		} else {
			n = s->inuse - s->object_size;
			at = o->p + s->object_size + x % n;
			o->dirty |= RZ_RIGHT;
		}
		*at = (u8)(SLUB_RED_ACTIVE ^ (x | 1));
		return;
	}
	}
}

/* ---------------------------------------------------------------- an input */

static void setup_once(void)
{
	struct page_alloc_stats st;
	u64 seed = 0x5eed;

	if (arena)
		return;
	for (size_t i = 0; i < sizeof(patterns); i++)
		patterns[i] = (u8)(hosted_rand(&seed) >> 29);
	/* reports are expected: keep them off stderr unless asked for */
	hosted_console_quiet = !getenv("FUZZ_SLAB_VERBOSE");
	/* hosted_page_alloc_setup() wants a multiple of 4 MiB; this pool is smaller */
	arena = aligned_alloc((size_t)ARENA_MIB << 20, (size_t)ARENA_MIB << 20);
	if (!arena)
		fail("no arena");
	page_alloc_init();
	if (page_alloc_add_range((uintptr_t)arena, (uintptr_t)arena + ((size_t)ARENA_MIB << 20)))
		fail("page_alloc_add_range");
	page_alloc_get_stats(&st);
	total_pages = st.total_pages;
	if (st.free_pages != total_pages)
		fail("a fresh page allocator has %llu of %llu pages free",
		     st.free_pages, total_pages);
}

static void begin(u8 mode)
{
	static const char *const letters[16] = {
		"FZPU", "F", "Z", "FZ", "P", "FP", "ZP", "FZP",
		"U", "FU", "ZU", "FZU", "PU", "FPU", "ZPU", "FZPU",
	};
	struct page_alloc_stats st;

	debug_mode = mode & 1;
	if (slab_debug_parse(debug_mode ? letters[(mode >> 1) & 15] : "-"))
		fail("slab_debug_parse");
	kmem_cache_init();
	memset(fcaches, 0, sizeof(fcaches));
	nobjs = nranges = nfreed = freed_next = 0;
	expected_errors = 0;
	errors0 = slab_debug_errors();
	page_alloc_get_stats(&st);
	bad_frees0 = st.bad_frees;
	for (unsigned int k = 0; k < ARRAY_SIZE(kmalloc_sizes); k++) {
		struct kmem_cache *s = kmalloc_cache_for(kmalloc_sizes[k]);

		if (s->debug != debug_mode)
			fail("%s: debug %d in slub_debug mode %d", s->name, s->debug, debug_mode);
		add_desc(s);
	}
}

/* Free and destroy everything; every page must come back. */
static void end(void)
{
	struct page_alloc_stats st;
	struct kmem_cache *s;
	int kept;

	op_name = "end";
	while (nobjs)
		free_obj(nobjs - 1, false);
	for (int c = 0; c < MAX_CACHES; c++)
		if (fcaches[c].s)
			destroy_cache(c);
	kept = kmalloc_caches_reset();
	check_errors("end");
	if (kept)
		fail("%d kmalloc caches still hold objects", kept);
	for_each_slab_cache(s)
		fail("cache %s left over", s->name);
	page_alloc_get_stats(&st);
	if (st.free_pages != total_pages)
		fail("%llu of %llu pages free at the end", st.free_pages,
		     total_pages);
	if (st.bad_frees != bad_frees0)
		fail("%llu bad page frees", st.bad_frees - bad_frees0);
	slab_debug_parse("-");
}

static const struct {
	const char *name;
	void (*fn)(struct input *in);
} ops[16] = {
	{ "create", op_create }, { "alloc", op_alloc }, { "free", op_free },
	{ "kmalloc", op_kmalloc }, { "krealloc", op_krealloc }, { "shrink", op_shrink },
	{ "destroy", op_destroy }, { "alloc_bulk", op_bulk_alloc },
	{ "free_bulk", op_bulk_free }, { "ksize", op_ksize }, { "validate", op_validate },
	{ "fill", op_fill }, { "reuse", op_reuse }, { "misuse", op_misuse },
	{ "rewrite", op_rewrite }, { "alloc", op_alloc },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size, 0 };

	if (!size)
		return 0;
	setup_once();
	op_index = 0;
	op_name = "begin";
	begin(get8(&in));
	while (in.i < in.n) {
		u8 op = get8(&in);

		op_index++;
		op_name = ops[op & 15].name;
		ops[op & 15].fn(&in);
	}
	end();
	return 0;
}
