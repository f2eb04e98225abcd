// SPDX-License-Identifier: MIT
/*
 * Host tests of the slab allocator with several CPUs: real threads, each a
 * CPU of the fake machine (hosted_cpu_id), allocating and freeing at once
 * with frees on other CPUs than the allocation ("remote frees"); remote frees
 * simulated on one thread by switching hosted_cpu_id; a double free
 * across CPUs on a debug cache; and the allocator's shared state under
 * several CPUs at once: validations of different caches, the statistics,
 * the error count and the pending slub_debug_panic message, walks of the
 * cache list while caches come and go.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include "hosted.h"
#include <topaz/slab.h>
#include <topaz/kernel.h>
#include <topaz/smp.h>
#include "../../mm/slab_internal.h"	/* white-box: the per-CPU arrays */
#include "slab_test_helpers.h"
#include <topaz/probe.h>
#include <topaz/symbols.h>

#define ARENA_MIB	64
#define NCPU		4	/* the fake machine's CPUs: one thread each */
#define JOIN_TIMEOUT_S	120	/* a deadlock fails the test instead of hanging it */

static void *arena;

static int setup(void **state)
{
	hosted_set_cpus(NCPU);		/* before kmem_cache_init() lays out the arrays */
	arena = hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
	return 0;
}

#define EXPECT(s) do { if (!strstr(out, (s))) fail_msg("missing \"%s\" in:\n%s", (s), out); } while (0)

static unsigned int count_substr(const char *hay, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The objects CPU @cpu's array of @s holds. */
static unsigned int cpu_count(struct kmem_cache *s, unsigned int cpu)
{
	return READ_ONCE(slab_cpu(s, cpu)->state) & SLAB_CPU_COUNT;
}

/* ---------------------------------------------------------------- threads as CPUs */

struct cpu_thread {
	void *ctx;
	unsigned int cpu;
	pthread_t tid;
};

/*
 * Threads as CPUs 0 .. @n - 1, each running @fn(its struct cpu_thread);
 * joined, or the test aborts. Returns the last non-NULL result of a thread
 * (in CPU order), NULL if none.
 */
static void *run_cpus(void *(*fn)(void *), void *ctx, unsigned int n)
{
	struct cpu_thread th[NCPU];
	struct timespec deadline;
	void *ret = NULL;

	assert_true(n <= NCPU);
	for (unsigned int i = 0; i < n; i++) {
		th[i].ctx = ctx;
		th[i].cpu = i;
		assert_int_equal(pthread_create(&th[i].tid, NULL, fn, &th[i]), 0);
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += JOIN_TIMEOUT_S;
	for (unsigned int i = 0; i < n; i++) {
		void *res = NULL;
		int r = pthread_timedjoin_np(th[i].tid, &res, &deadline);

		if (r == ETIMEDOUT) {
			/* threads stuck in the allocator cannot be joined: stop here */
			fprintf(stderr, "test_slab_smp: CPU %u did not finish in %d s (deadlock?)\n", i,
				JOIN_TIMEOUT_S);
			abort();
		}
		assert_int_equal(r, 0);
		if (res)
			ret = res;
	}
	hosted_cpu_id = 0;
	return ret;
}

/* A single-producer, single-consumer ring: CPU t hands objects to CPU t + 1. */
#define RING_SIZE 256
struct ring {
	_Alignas(64) unsigned long head;	/* consumer */
	_Alignas(64) unsigned long tail;	/* producer */
	_Alignas(64) void *slot[RING_SIZE];
};

static bool ring_try_push(struct ring *r, void *p)
{
	unsigned long t = r->tail;

	if (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == RING_SIZE)
		return false;
	r->slot[t % RING_SIZE] = p;
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
	return true;
}

static bool ring_try_pop(struct ring *r, void **p)
{
	unsigned long h = r->head;

	if (h == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE))
		return false;
	*p = r->slot[h % RING_SIZE];
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
	return true;
}

/*
 * Every object starts with who allocated it and when; the rest of it is a
 * pattern made from the same. An object handed out twice at once, or still
 * on a freelist while in use, has its stamp or its pattern overwritten by the
 * other user (or the free pointer), which the check at free time sees.
 */
struct stamp {
	u32 cpu;
	u32 size;
	u64 seq;
	u64 check;
};
#define STAMP_MAGIC 0x5eedf00dcafe1234ull

static u64 stamp_check(u32 cpu, u32 size, u64 seq)
{
	return (seq * 0x9e3779b97f4a7c15ull) ^ ((u64)cpu << 32 | size) ^ STAMP_MAGIC;
}

static u8 fill_byte(u32 cpu, u64 seq, size_t i)
{
	return (u8)(seq * 31 + cpu * 7 + i);
}

static void stamp(void *p, u32 cpu, u32 size, u64 seq)
{
	struct stamp *st = p;
	u8 *b = p;

	st->cpu = cpu;
	st->size = size;
	st->seq = seq;
	st->check = stamp_check(cpu, size, seq);
	for (size_t i = sizeof(*st); i < size; i++)
		b[i] = fill_byte(cpu, seq, i);
}

struct smp_ctx {
	struct kmem_cache *s;		/* NULL: kmalloc objects of random sizes */
	unsigned int rounds, max_live;
	bool validate;			/* CPU 0 validates the cache every round */
	struct ring rings[NCPU];	/* rings[t]: from CPU t to CPU t + 1 */
	pthread_barrier_t go;
	/* results, updated atomically */
	unsigned long allocs, frees, remote_frees, failures, validate_errors;
	char why[256];			/* the first failure */
};

__printf(2, 3) static void smp_fail(struct smp_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

/* Check @p's stamp (from CPU @cpu; @seq: exactly this one, or ~0 for any), then free it. */
static void check_and_free(struct smp_ctx *c, unsigned int me, void *p, u32 cpu, u64 seq)
{
	struct stamp *st = p;
	const u8 *b = p;

	if (st->cpu != cpu || (seq != ~0ull && st->seq != seq) ||
	    st->check != stamp_check(st->cpu, st->size, st->seq) ||
	    st->size < sizeof(*st) || (c->s && st->size != kmem_cache_size(c->s))) {
		smp_fail(c, "CPU %u: object %p stamped cpu %u seq %llu size %u, expected cpu %u seq %lld: "
			 "handed out twice?", me, p, st->cpu, st->seq, st->size, cpu,
			 (long long)seq);
		return;		/* leaked: the final page count fails too */
	}
	for (size_t i = sizeof(*st); i < st->size; i++) {
		if (b[i] != fill_byte(st->cpu, st->seq, i)) {
			smp_fail(c, "CPU %u: object %p (cpu %u seq %llu) byte %zu changed while in use",
				 me, p, st->cpu, st->seq, i);
			return;
		}
	}
	memset(p, 0xdd, st->size);	/* the next user must stamp it anew */
	if (c->s)
		kmem_cache_free(c->s, p);
	else
		kfree(p);
	__atomic_fetch_add(&c->frees, 1, __ATOMIC_RELAXED);
}

/* Free what the previous CPU sent; @last_seq: the last sequence seen from it. */
static bool drain_incoming(struct smp_ctx *c, unsigned int me, u64 *last_seq, bool *done)
{
	unsigned int from = (me + NCPU - 1) % NCPU;
	struct ring *in = &c->rings[from];
	bool any = false;
	void *p;

	while (!*done && ring_try_pop(in, &p)) {
		const struct stamp *st = p;

		any = true;
		if (!p) {
			*done = true;	/* the sender has finished */
			break;
		}
		if (st->cpu == from && *last_seq != ~0ull && st->seq <= *last_seq)
			smp_fail(c, "CPU %u: seq %llu from CPU %u after %llu: out of order or twice", me,
				 st->seq, from, *last_seq);
		*last_seq = st->seq;
		check_and_free(c, me, p, from, ~0ull);
		__atomic_fetch_add(&c->remote_frees, 1, __ATOMIC_RELAXED);
	}
	return any;
}

static void ring_send(struct smp_ctx *c, unsigned int me, void *p, u64 *last_seq, bool *done)
{
	unsigned int spins = 0;

	/* a full ring: free what comes in meanwhile (every CPU does, so the cycle moves) */
	while (!ring_try_push(&c->rings[me], p))
		if (!drain_incoming(c, me, last_seq, done) && ++spins % 64 == 0)
			sched_yield();
}

static void *smp_worker(void *arg)
{
	struct cpu_thread *th = arg;
	struct smp_ctx *c = th->ctx;
	unsigned int me = th->cpu;
	struct { void *p; u64 seq; u32 size; } *live = calloc(c->max_live, sizeof(*live));
	void **bulk = calloc(c->max_live, sizeof(void *));
	u64 rnd = 0x1234567ull * (me + 1), seq = 0, last_seq = ~0ull;
	bool done = false;

	hosted_cpu_id = me;		/* this thread is CPU @me */
	pthread_barrier_wait(&c->go);
	for (unsigned int round = 0; round < c->rounds && !__atomic_load_n(&c->failures, __ATOMIC_RELAXED); round++) {
		unsigned int n = 1 + (unsigned int)(hosted_rand(&rnd) % c->max_live);
		bool use_bulk = c->s && round % 4 == 3;

		/* allocate n objects (one bulk call in some rounds), stamp them */
		if (use_bulk && !kmem_cache_alloc_bulk(c->s, GFP_KERNEL, n, bulk)) {
			smp_fail(c, "CPU %u: kmem_cache_alloc_bulk(%u) failed", me, n);
			break;
		}
		for (unsigned int i = 0; i < n; i++) {
			u32 size = c->s ? kmem_cache_size(c->s) :
				   (u32)(sizeof(struct stamp) + hosted_rand(&rnd) % 2000);
			void *p = use_bulk ? bulk[i] : c->s ? kmem_cache_alloc(c->s, GFP_KERNEL) :
				  kmalloc(size, GFP_KERNEL);

			if (!p) {
				smp_fail(c, "CPU %u: allocation %u of round %u failed", me, i, round);
				n = i;
				break;
			}
			stamp(p, me, size, seq);
			live[i].p = p;
			live[i].seq = seq++;
			live[i].size = size;
			__atomic_fetch_add(&c->allocs, 1, __ATOMIC_RELAXED);
			if (i % 32 == 0)
				drain_incoming(c, me, &last_seq, &done);
		}
		/* about half to the next CPU (remote frees), the rest freed here */
		for (unsigned int i = 0; i < n; i++) {
			if (hosted_rand(&rnd) & 1)
				ring_send(c, me, live[i].p, &last_seq, &done);
			else
				check_and_free(c, me, live[i].p, me, live[i].seq);
			if (i % 32 == 0)
				drain_incoming(c, me, &last_seq, &done);
		}
		drain_incoming(c, me, &last_seq, &done);
		if (c->validate && me == 0) {
			int e = kmem_cache_validate(c->s);

			if (e)
				__atomic_fetch_add(&c->validate_errors, (unsigned long)e, __ATOMIC_RELAXED);
		}
	}
	ring_send(c, me, NULL, &last_seq, &done);	/* the end, for the next CPU */
	while (!done)
		if (!drain_incoming(c, me, &last_seq, &done))
			sched_yield();
	free(live);
	free(bulk);
	return NULL;
}

/* Run NCPU threads, CPU 0 to NCPU - 1, over @c; fails the test on any failure. */
static void run_smp(struct smp_ctx *c)
{
	pthread_barrier_init(&c->go, NULL, NCPU);
	run_cpus(smp_worker, c, NCPU);
	pthread_barrier_destroy(&c->go);
	if (c->failures)
		fail_msg("%lu failures; the first: %s", c->failures, c->why);
	assert_int_equal(c->allocs, c->frees);
	assert_true(c->remote_frees > c->frees / 4);	/* about half of them */
}

static void threads_on_cache(slab_flags_t flags, unsigned int rounds, unsigned int max_live)
{
	u64 before = free_pages_now(), errors_before = slab_debug_errors();
	struct smp_ctx *c = calloc(1, sizeof(*c));
	struct slabinfo si;

	/* 200 bytes: 20 objects a page, the live set grows past the arrays and
	 * the kept empty slabs, so slabs come and go during the run */
	c->s = kmem_cache_create("smp-threads", 200, 0, flags, NULL);
	assert_non_null(c->s);
	c->rounds = rounds;
	c->max_live = max_live;
	c->validate = flags & SLAB_DEBUG_FLAGS;
	run_smp(c);
	assert_int_equal(c->validate_errors, 0);
	kmem_cache_get_slabinfo(c->s, &si);
	assert_int_equal(si.active_objs, 0);
	assert_int_equal(si.errors, 0);
	assert_true(si.slabs_allocated > 0);
	if (flags & SLAB_DEBUG_FLAGS)
		assert_int_equal(kmem_cache_validate(c->s), 0);
	else
		assert_true(si.slabs_freed > 0);	/* slabs went back during the run */
	/* the threads are joined: shrink may flush every CPU's array from here */
	kmem_cache_shrink(c->s);
	kmem_cache_get_slabinfo(c->s, &si);
	assert_int_equal(si.cpu_cached, 0);
	for (unsigned int cpu = 0; cpu < NCPU; cpu++)
		assert_int_equal(cpu_count(c->s, cpu), 0);
	assert_int_equal(si.num_slabs, 0);
	assert_int_equal(si.num_objs, 0);
	kmem_cache_destroy(c->s);
	assert_int_equal(free_pages_now(), before);
	assert_int_equal(slab_debug_errors(), errors_before);
	free(c);
}

/* (a) four CPUs on one cache, half of the frees on the next CPU */
static void test_threads_cache_remote_frees(void **state)
{
	threads_on_cache(0, 60, 6000);
}

/* the same on a debug cache: every operation checked under the list lock,
 * and CPU 0 validates the whole cache while the others run */
static void test_threads_debug_cache_remote_frees(void **state)
{
	threads_on_cache(SLAB_DEBUG_FLAGS, 16, 1500);
}

/* the same with kmalloc: random sizes up to 2 KiB, kfree on another CPU */
static void test_threads_kmalloc_remote_frees(void **state)
{
	u64 before, errors_before = slab_debug_errors();
	struct smp_ctx *c = calloc(1, sizeof(*c));

	kmem_cache_shrink_all();
	before = free_pages_now();
	c->rounds = 40;
	c->max_live = 3000;
	run_smp(c);
	for (size_t i = 0; i < 10; i++) {
		size_t size = i < 2 ? 96 * (i + 1) : 8u << (i - 2);	/* 96, 192, 8 ... 2048 */
		struct slabinfo si;

		kmem_cache_get_slabinfo(kmalloc_cache_for(size), &si);
		assert_int_equal(si.active_objs, 0);
		assert_int_equal(si.errors, 0);
	}
	kmem_cache_shrink_all();
	assert_int_equal(free_pages_now(), before);
	assert_int_equal(slab_debug_errors(), errors_before);
	free(c);
}

/* ---------------------------------------------------------------- one thread, switching CPUs */

/* (b) allocated on CPU 0, freed on CPU 1: the objects wait in CPU 1's array */
static void test_remote_free_sits_in_freeing_cpu_array(void **state)
{
	u64 before = free_pages_now();
	struct kmem_cache *s = kmem_cache_create("smp-remote", 64, 0, 0, NULL);
	enum { N = 100 };
	void *p[N], *q;
	struct slabinfo si;
	unsigned int cpu0;

	assert_non_null(s);
	hosted_cpu_id = 0;
	for (int i = 0; i < N; i++)
		assert_non_null(p[i] = kmem_cache_alloc(s, GFP_KERNEL));
	cpu0 = cpu_count(s, 0);		/* what the refill left on CPU 0 */
	assert_int_equal(cpu_count(s, 1), 0);
	hosted_cpu_id = 1;
	for (int i = 0; i < N; i++)
		kmem_cache_free(s, p[i]);
	hosted_cpu_id = 0;
	kmem_cache_get_slabinfo(s, &si);
	assert_true(si.cpu_cached > 0);
	assert_int_equal(si.cpu_cached, cpu0 + N);
	assert_int_equal(cpu_count(s, 1), N);	/* CPU 1's array, not CPU 0's */
	assert_int_equal(cpu_count(s, 0), cpu0);
	assert_int_equal(si.active_objs, 0);
	/* CPU 1 allocates from its own array: the last object it freed */
	hosted_cpu_id = 1;
	q = kmem_cache_alloc(s, GFP_KERNEL);
	assert_ptr_equal(q, p[N - 1]);
	kmem_cache_free(s, q);
	/* shrink from CPU 0 empties every CPU's array, then gives every slab back */
	hosted_cpu_id = 0;
	assert_true(kmem_cache_shrink(s) > 0);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.cpu_cached, 0);
	assert_int_equal(cpu_count(s, 1), 0);
	assert_int_equal(si.num_slabs, 0);
	assert_int_equal(si.nr_free + si.nr_partial + si.nr_full, 0);
	assert_int_equal(si.errors, 0);
	assert_int_equal(free_pages_now(), before - (1u << s->desc_order));
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
}

/* More remote frees than the freeing CPU's array holds: it flushes them to their slabs. */
static void test_remote_frees_overflow_to_slabs(void **state)
{
	u64 before = free_pages_now();
	struct kmem_cache *s = kmem_cache_create("smp-overflow", 64, 0, 0, NULL);
	unsigned int cap = (unsigned int)slab_cpu(s, 0)->cap, n = 3 * cap;
	void **p = calloc(n, sizeof(*p));
	struct slabinfo a, b;

	hosted_cpu_id = 0;
	for (unsigned int i = 0; i < n; i++)
		assert_non_null(p[i] = kmem_cache_alloc(s, GFP_KERNEL));
	kmem_cache_get_slabinfo(s, &a);
	hosted_cpu_id = 1;
	for (unsigned int i = 0; i < n; i++)
		kmem_cache_free(s, p[i]);
	kmem_cache_get_slabinfo(s, &b);
	assert_true(b.flushes > a.flushes);
	assert_true(cpu_count(s, 1) <= cap);
	assert_int_equal(b.active_objs, 0);
	/* CPU 2 allocates what CPU 1 flushed: all of them, no object twice */
	hosted_cpu_id = 2;
	for (unsigned int i = 0; i < n; i++)
		assert_non_null(p[i] = kmem_cache_alloc(s, GFP_KERNEL));
	assert_distinct(p, n, 64);
	for (unsigned int i = 0; i < n; i++)
		kmem_cache_free(s, p[i]);
	hosted_cpu_id = 0;
	kmem_cache_shrink(s);
	kmem_cache_get_slabinfo(s, &b);
	assert_int_equal(b.cpu_cached, 0);
	assert_int_equal(b.num_slabs, 0);
	assert_int_equal(b.errors, 0);
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
	free(p);
}

/* ---------------------------------------------------------------- double free across CPUs */

/* The line of @out starting at @prefix, copied into @line. */
static bool find_line(const char *prefix, char *line, size_t n)
{
	const char *p = strstr(out, prefix), *e;

	if (!p)
		return false;
	e = strchr(p, '\n');
	snprintf(line, n, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
	return true;
}

/*
 * (c) allocated on CPU 0, freed on CPU 1, freed again on CPU 2: one report.
 * CPU 3 frees another object of the slab in between, so the object is not at
 * the head of the slab's freelist (which every cache checks): only the debug
 * metadata can tell.
 */
static void test_double_free_across_cpus_debug(void **state)
{
	u64 before = free_pages_now(), errors_before = slab_debug_errors();
	struct kmem_cache *s = kmem_cache_create("smp-df", 64, 0,
						 SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER, NULL);
	enum { N = 200 };
	void *p, *r, *keep, *q[N];
	struct slabinfo si;
	char line[256];

	assert_non_null(s);
	hosted_cpu_id = 0;
	p = kmem_cache_alloc(s, GFP_KERNEL);
	r = kmem_cache_alloc(s, GFP_KERNEL);
	keep = kmem_cache_alloc(s, GFP_KERNEL);
	assert_non_null(p);
	assert_non_null(r);
	assert_non_null(keep);
	assert_ptr_equal(slab_head_page(p), slab_head_page(r));
	hosted_cpu_id = 1;
	kmem_cache_free(s, p);
	hosted_cpu_id = 3;
	kmem_cache_free(s, r);
	assert_ptr_equal(slab_head_page(p)->freelist, r);
	hosted_cpu_id = 2;
	capture();
	kmem_cache_free(s, p);
	uncapture();
	hosted_cpu_id = 0;

	/* reported once, naming both CPUs' parts */
	assert_int_equal(count_substr(out, "BUG smp-df:"), 1);
	EXPECT("BUG smp-df: Double free: the object is already free");
	EXPECT("FIX smp-df: Object not freed again");
	if (!find_line("INFO: Allocated in ", line, sizeof(line)) || !strstr(line, " cpu=0"))
		fail_msg("no allocation by CPU 0 in:\n%s", out);
	if (!find_line("INFO: Freed in ", line, sizeof(line)) || !strstr(line, " cpu=1"))
		fail_msg("no free by CPU 1 in:\n%s", out);
	assert_int_equal(slab_debug_errors() - errors_before, 1);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.errors, 1);
	assert_int_equal(si.active_objs, 1);	/* keep */

	/* the cache is intact: p is free once, every object handed out once */
	capture();
	assert_int_equal(kmem_cache_validate(s), 0);
	for (int i = 0; i < N; i++) {
		hosted_cpu_id = (unsigned int)i % NCPU;
		q[i] = kmem_cache_alloc(s, GFP_KERNEL);
		assert_non_null(q[i]);
		assert_ptr_not_equal(q[i], keep);
	}
	uncapture();
	assert_int_equal(strlen(out), 0);
	assert_distinct(q, N, 64);
	for (int i = 0; i < N; i++) {
		hosted_cpu_id = (unsigned int)(i + 1) % NCPU;
		kmem_cache_free(s, q[i]);
	}
	hosted_cpu_id = 3;
	kmem_cache_free(s, keep);
	hosted_cpu_id = 0;
	assert_int_equal(kmem_cache_validate(s), 0);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.errors, 1);
	assert_int_equal(si.active_objs, 0);
	kmem_cache_shrink(s);
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
}

/*
 * Without debugging the second free lands in CPU 2's array unchecked; the
 * shrink flushes CPU 0, 1 and 2 in turn, CPU 1's flush puts the object at the
 * head of its slab's freelist, and CPU 2's flush finds it there.
 */
static void test_double_free_across_cpus_caught_at_flush(void **state)
{
	u64 before = free_pages_now(), errors_before = slab_debug_errors();
	struct kmem_cache *s = kmem_cache_create("smp-df-nodebug", 64, 0, 0, NULL);
	enum { N = 300 };
	void *p, *keep, *q[N];
	struct slabinfo si;

	hosted_cpu_id = 0;
	p = kmem_cache_alloc(s, GFP_KERNEL);
	keep = kmem_cache_alloc(s, GFP_KERNEL);
	hosted_cpu_id = 1;
	kmem_cache_free(s, p);
	hosted_cpu_id = 2;
	kmem_cache_free(s, p);		/* into CPU 2's array, unchecked */
	hosted_cpu_id = 0;
	capture();
	kmem_cache_shrink(s);
	uncapture();
	assert_int_equal(count_substr(out, "BUG smp-df-nodebug:"), 1);
	EXPECT("BUG smp-df-nodebug: Double free");
	assert_int_equal(slab_debug_errors() - errors_before, 1);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.errors, 1);
	assert_int_equal(si.cpu_cached, 0);
	assert_int_equal(si.active_objs, 1);	/* keep */
	/* every object once: p was not put on the freelist twice */
	for (int i = 0; i < N; i++) {
		q[i] = kmem_cache_alloc(s, GFP_KERNEL);
		assert_ptr_not_equal(q[i], keep);
	}
	assert_distinct(q, N, 64);
	for (int i = 0; i < N; i++)
		kmem_cache_free(s, q[i]);
	kmem_cache_free(s, keep);
	kmem_cache_shrink(s);
	kmem_cache_get_slabinfo(s, &si);
	assert_int_equal(si.num_slabs, 0);
	assert_int_equal(si.errors, 1);
	kmem_cache_destroy(s);
	assert_int_equal(free_pages_now(), before);
}

/* ---------------------------------------------------------------- shared state, several CPUs */

/*
 * Each CPU validates its own debug cache, over and over, all at once. Each
 * cache has its own pattern of free objects (every (cpu + 2)-th object stays
 * allocated), so a validation that saw another's freelist bitmap (it was one
 * static array) reports objects "free but not on the freelist".
 */
#define VAL_OBJECTS	600
#define VAL_ROUNDS	300

struct validate_ctx {
	struct kmem_cache *s[NCPU];
	pthread_barrier_t go;
	unsigned long errors, failures;
};

static void *validate_worker(void *arg)
{
	struct cpu_thread *th = arg;
	struct validate_ctx *c = th->ctx;
	struct kmem_cache *s = c->s[th->cpu];
	void **p = calloc(VAL_OBJECTS, sizeof(*p));

	hosted_cpu_id = th->cpu;
	for (unsigned int i = 0; i < VAL_OBJECTS; i++)
		if (!(p[i] = kmem_cache_alloc(s, GFP_KERNEL)))
			__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < VAL_OBJECTS; i++) {
		if (p[i] && i % (th->cpu + 2)) {
			kmem_cache_free(s, p[i]);
			p[i] = NULL;
		}
	}
	pthread_barrier_wait(&c->go);
	for (unsigned int r = 0; r < VAL_ROUNDS; r++) {
		int e = kmem_cache_validate(s);

		if (e)
			__atomic_fetch_add(&c->errors, (unsigned long)e, __ATOMIC_RELAXED);
	}
	for (unsigned int i = 0; i < VAL_OBJECTS; i++)
		kmem_cache_free(s, p[i]);
	free(p);
	return NULL;
}

static void test_threads_validate_own_debug_caches(void **state)
{
	u64 before = free_pages_now(), errors_before = slab_debug_errors();
	struct validate_ctx *c = calloc(1, sizeof(*c));
	char name[32];

	for (unsigned int i = 0; i < NCPU; i++) {
		snprintf(name, sizeof(name), "smp-validate-%u", i);
		c->s[i] = kmem_cache_create(name, 64, 0, SLAB_DEBUG_FLAGS, NULL);
		assert_non_null(c->s[i]);
	}
	pthread_barrier_init(&c->go, NULL, NCPU);
	capture();		/* a false report would flood the console */
	run_cpus(validate_worker, c, NCPU);
	uncapture();
	pthread_barrier_destroy(&c->go);
	assert_int_equal(c->failures, 0);
	if (c->errors)
		fail_msg("%lu errors from validations of caches no one corrupted:\n%.2000s", c->errors,
			 out);
	assert_int_equal(slab_debug_errors(), errors_before);
	for (unsigned int i = 0; i < NCPU; i++) {
		struct slabinfo si;

		kmem_cache_get_slabinfo(c->s[i], &si);
		assert_int_equal(si.errors, 0);
		assert_int_equal(si.active_objs, 0);
		kmem_cache_shrink(c->s[i]);
		kmem_cache_destroy(c->s[i]);
	}
	assert_int_equal(free_pages_now(), before);
	free(c);
}

/*
 * The statistics are exact with every CPU on one cache. A debug cache takes
 * the slow paths for every allocation and free; with enough slabs made
 * beforehand (and kept: fewer than the cache keeps empty), each slow path
 * makes one pass, so the counts are the operations. Plain increments of one
 * shared counter from several CPUs lose some.
 */
#define CNT_LIVE	1500
#define CNT_ROUNDS	120

struct count_ctx {
	struct kmem_cache *s;
	pthread_barrier_t go;
	unsigned long allocs, frees, failures;
};

static void *count_worker(void *arg)
{
	struct cpu_thread *th = arg;
	struct count_ctx *c = th->ctx;
	void **p = calloc(CNT_LIVE, sizeof(*p));
	unsigned long allocs = 0, frees = 0;

	hosted_cpu_id = th->cpu;
	pthread_barrier_wait(&c->go);
	for (unsigned int r = 0; r < CNT_ROUNDS; r++) {
		unsigned int n = CNT_LIVE / 2 + (r * 37 + th->cpu * 101) % (CNT_LIVE / 2);

		for (unsigned int i = 0; i < n; i++) {
			p[i] = kmem_cache_alloc(c->s, GFP_KERNEL);
			allocs++;
			if (!p[i])
				__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
		}
		for (unsigned int i = 0; i < n; i++) {
			void *q = p[r & 1 ? i : n - 1 - i];	/* in both orders */

			if (q) {
				kmem_cache_free(c->s, q);
				frees++;
			}
		}
	}
	__atomic_fetch_add(&c->allocs, allocs, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->frees, frees, __ATOMIC_RELAXED);
	free(p);
	return NULL;
}

static void test_threads_counters_exact(void **state)
{
	u64 before = free_pages_now(), errors_before = slab_debug_errors();
	struct count_ctx *c = calloc(1, sizeof(*c));
	unsigned int warm = NCPU * CNT_LIVE;
	void **p = calloc(warm, sizeof(*p));
	struct slabinfo a, b;

	c->s = kmem_cache_create("smp-count", 64, 0, SLAB_CONSISTENCY_CHECKS, NULL);
	assert_non_null(c->s);
	/* the slabs every CPU's live objects need at once, then all empty */
	for (unsigned int i = 0; i < warm; i++)
		assert_non_null(p[i] = kmem_cache_alloc(c->s, GFP_KERNEL));
	for (unsigned int i = 0; i < warm; i++)
		kmem_cache_free(c->s, p[i]);
	kmem_cache_get_slabinfo(c->s, &a);
	assert_int_equal(a.nr_free, a.num_slabs);	/* all kept */
	pthread_barrier_init(&c->go, NULL, NCPU);
	run_cpus(count_worker, c, NCPU);
	pthread_barrier_destroy(&c->go);
	assert_int_equal(c->failures, 0);
	assert_int_equal(c->allocs, c->frees);
	kmem_cache_get_slabinfo(c->s, &b);
	assert_int_equal(b.slabs_allocated, a.slabs_allocated);	/* one pass per slow path */
	assert_int_equal(b.alloc_slowpath - a.alloc_slowpath, c->allocs);
	assert_int_equal(b.free_slowpath - a.free_slowpath, c->frees);
	assert_int_equal(b.active_objs, 0);
	assert_int_equal(b.errors, 0);
	assert_int_equal(slab_debug_errors(), errors_before);
	kmem_cache_shrink(c->s);
	kmem_cache_destroy(c->s);
	assert_int_equal(free_pages_now(), before);
	free(p);
	free(c);
}

/*
 * Reports on every CPU at once, each about its own cache: the global error
 * count has every one of them, and under slub_debug_panic the pending
 * message is one report's, whole (all CPUs wrote into the one buffer).
 */
#define REPORT_ROUNDS	200
#define REPORT_LEN	150

struct report_ctx {
	struct kmem_cache *s[NCPU];
	pthread_barrier_t start, done;
};

static void *report_worker(void *arg)
{
	struct cpu_thread *th = arg;
	struct report_ctx *c = th->ctx;
	char what[REPORT_LEN + 1];

	hosted_cpu_id = th->cpu;
	memset(what, 'a' + (int)th->cpu, REPORT_LEN);
	what[REPORT_LEN] = '\0';
	for (unsigned int r = 0; r < REPORT_ROUNDS; r++) {
		pthread_barrier_wait(&c->start);
		slab_report(c->s[th->cpu], NULL, 0, "cpu %u %s", th->cpu, what);
		pthread_barrier_wait(&c->done);
	}
	return NULL;
}

/* The main thread's side of report_worker's rounds: one panic per round, with one whole message. */
static void *report_checker(void *arg)
{
	struct report_ctx *c = arg;
	jmp_buf jb;

	for (unsigned int r = 0; r < REPORT_ROUNDS; r++) {
		volatile bool panicked = false;

		pthread_barrier_wait(&c->start);
		pthread_barrier_wait(&c->done);
		hosted_panic_jmp = &jb;
		if (!setjmp(jb))
			slab_check_pending_panic();
		else
			panicked = true;
		hosted_panic_jmp = NULL;
		if (!panicked)
			return "no panic after the round's reports";
		{
			unsigned int cpu;
			char exp[REPORT_LEN + 1];
			char want[64 + REPORT_LEN];

			if (sscanf(hosted_panic_msg, "BUG smp-report-%u:", &cpu) != 1 || cpu >= NCPU - 1)
				return "a garbled pending panic message";
			memset(exp, 'a' + (int)cpu, REPORT_LEN);
			exp[REPORT_LEN] = '\0';
			/* 193 characters: the whole of it fits the pending message */
			snprintf(want, sizeof(want), "BUG smp-report-%u: cpu %u %s (slub_debug_panic)", cpu,
				 cpu, exp);
			if (strcmp(hosted_panic_msg, want))
				return "a garbled pending panic message";
		}
		slab_check_pending_panic();	/* taken: no second panic */
	}
	return NULL;
}

static void *report_thread(void *arg)
{
	struct cpu_thread *th = arg;

	hosted_cpu_id = th->cpu;
	if (th->cpu == NCPU - 1)
		return report_checker(th->ctx);	/* not a reporter */
	return report_worker(arg);
}

static void test_threads_reports_counted_and_one_pending_panic(void **state)
{
	u64 errors_before = slab_debug_errors();
	struct report_ctx *c = calloc(1, sizeof(*c));
	void *why;
	char name[32];

	for (unsigned int i = 0; i < NCPU - 1; i++) {
		snprintf(name, sizeof(name), "smp-report-%u", i);
		c->s[i] = kmem_cache_create(name, 64, 0, 0, NULL);
		assert_non_null(c->s[i]);
	}
	/* NCPU - 1 reporting CPUs, and the checker (a thread: hosted_panic_jmp is its) */
	pthread_barrier_init(&c->start, NULL, NCPU);
	pthread_barrier_init(&c->done, NULL, NCPU);
	slab_debug_set_panic(true);
	capture();
	why = run_cpus(report_thread, c, NCPU);
	uncapture();
	slab_debug_set_panic(false);
	pthread_barrier_destroy(&c->start);
	pthread_barrier_destroy(&c->done);
	if (why)
		fail_msg("%s: \"%s\"", (const char *)why, hosted_panic_msg);
	assert_int_equal(slab_debug_errors() - errors_before, (NCPU - 1) * REPORT_ROUNDS);
	for (unsigned int i = 0; i < NCPU - 1; i++) {
		struct slabinfo si;

		kmem_cache_get_slabinfo(c->s[i], &si);
		assert_int_equal(si.errors, REPORT_ROUNDS);
		kmem_cache_destroy(c->s[i]);
	}
	free(c);
}

/*
 * CPU 0 shrinks every cache and prints slabinfo over and over while the
 * other CPUs create and destroy caches: each walk of the cache list meets
 * caches being added and removed (a removed one had its links cleared and
 * its descriptor freed under the walk). Only CPU 0 is online meanwhile: a
 * hosted cross-CPU call runs on the calling thread as the other CPU, so a
 * shrink would take list locks as CPU 1 while CPU 1's own thread uses them
 * (it would find the lock "held by this CPU" and keep a cache it destroys).
 * The threads of CPUs 1 to 3 still run, with their own arrays.
 */
#define CHURN_ROUNDS	400
#define CHURN_LIVE	4
#define CHURN_OBJECTS	64

struct churn_ctx {
	pthread_barrier_t go;
	unsigned long creators_done, walks, failures;
};

static void *churn_worker(void *arg)
{
	struct cpu_thread *th = arg;
	struct churn_ctx *c = th->ctx;
	struct kmem_cache *live[CHURN_LIVE] = { NULL };
	void *obj[CHURN_OBJECTS];
	char name[32];

	hosted_cpu_id = th->cpu;
	pthread_barrier_wait(&c->go);
	if (th->cpu == 0) {
		do {
			kmem_cache_shrink_all();
			if (c->walks++ % 16 == 0)
				slabinfo_show();
		} while (__atomic_load_n(&c->creators_done, __ATOMIC_ACQUIRE) < NCPU - 1);
		return NULL;
	}
	/* up to CHURN_LIVE caches each, the oldest destroyed when a new one is made */
	for (unsigned int i = 0; i < CHURN_ROUNDS + CHURN_LIVE; i++) {
		struct kmem_cache **slot = &live[i % CHURN_LIVE], *s;
		struct slabinfo si;

		kmem_cache_destroy(*slot);
		*slot = NULL;
		if (i >= CHURN_ROUNDS)
			continue;
		snprintf(name, sizeof(name), "smp-churn-%u-%u", th->cpu, i);
		s = kmem_cache_create(name, 16 + 8 * (i % 64), 0, (i & 1) ? SLAB_RED_ZONE : 0, NULL);
		if (!s) {
			__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
			continue;
		}
		kmem_cache_get_slabinfo(s, &si);
		if (strcmp(si.name, name) || si.num_slabs)
			__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
		/* empty slabs for CPU 0's shrink to give back: longer walks over it */
		for (unsigned int k = 0; k < CHURN_OBJECTS; k++)
			obj[k] = kmem_cache_alloc(s, GFP_KERNEL);
		for (unsigned int k = 0; k < CHURN_OBJECTS; k++) {
			if (!obj[k])
				__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED);
			kmem_cache_free(s, obj[k]);
		}
		*slot = s;
	}
	__atomic_fetch_add(&c->creators_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_threads_walks_while_caches_come_and_go(void **state)
{
	u64 before, errors_before = slab_debug_errors();
	struct churn_ctx *c = calloc(1, sizeof(*c));
	struct kmem_cache *s;

	kmem_cache_shrink_all();
	before = free_pages_now();
	pthread_barrier_init(&c->go, NULL, NCPU);
	for (unsigned int cpu = 1; cpu < NCPU; cpu++)
		set_cpu_online(cpu, false);
	capture();
	run_cpus(churn_worker, c, NCPU);
	uncapture();
	hosted_set_cpus(NCPU);
	pthread_barrier_destroy(&c->go);
	assert_int_equal(c->failures, 0);
	assert_true(c->walks > 0);
	EXPECT("slabinfo - version: 2.1");
	/* every cache destroyed, and its descriptor freed (by destroy or the last walk on it) */
	for_each_slab_cache(s)
		if (!strncmp(s->name, "smp-churn-", 10))
			fail_msg("cache %s still listed", s->name);
	kmem_cache_shrink_all();
	assert_int_equal(free_pages_now(), before);
	assert_int_equal(slab_debug_errors(), errors_before);
	free(c);
}

/* ---------------------------------------------------------------- probes on every CPU */

#define PROBE_ROUNDS 5000

static __noinline void probe_site(void)
{
	kfree(kmalloc(100, GFP_KERNEL));
}

static pthread_barrier_t probe_go;

static void *probe_cpu(void *arg)
{
	struct cpu_thread *t = arg;

	hosted_cpu_id = t->cpu;
	pthread_barrier_wait(&probe_go);
	for (int i = 0; i < PROBE_ROUNDS; i++)
		probe_site();
	return NULL;
}

static void print_on_cpu(void *arg)
{
	kfree(kmalloc(8, GFP_KERNEL));
}

/*
 * The probes on several CPUs: each hit says its CPU (SystemTap's cpu()), and
 * the count action, hit from every CPU at once, loses no hit and reports one
 * line for the one call site.
 */
static void test_probes_on_every_cpu(void **state)
{
	struct probe_point *pp = probe_find("vm.kmalloc");
	uintptr_t lo = ksym_address("probe_site"), site = 0;
	const struct probe_count_entry *e;

	capture();
	probe_register("vm.kmalloc", probe_print_handler, NULL);
	smp_call_function_single(2, print_on_cpu, NULL, true);
	probe_unregister("vm.kmalloc", probe_print_handler, NULL);
	uncapture();
	EXPECT("vm.kmalloc: ");
	EXPECT(" cpu=2\n");

	probe_count_reset();
	assert_true(probe_register("vm.kmalloc", probe_count_handler, NULL) > 0);
	pthread_barrier_init(&probe_go, NULL, NCPU);
	run_cpus(probe_cpu, NULL, NCPU);
	pthread_barrier_destroy(&probe_go);
	probe_unregister("vm.kmalloc", probe_count_handler, NULL);
	capture();
	probe_count_report();	/* adds up slots two CPUs took for one site */
	uncapture();
	for (uintptr_t x = lo; !site && x < lo + 64; x++)
		if (probe_count_lookup(pp, x))
			site = x;
	assert_true(site);
	e = probe_count_lookup(pp, site);
	assert_int_equal(e->hits, (u64)NCPU * PROBE_ROUNDS);
	assert_int_equal(e->bytes_req, (u64)NCPU * PROBE_ROUNDS * 100);
	assert_int_equal(count_substr(out, "probe_site+0x"), 1);
	probe_count_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_free_sits_in_freeing_cpu_array),
		cmocka_unit_test(test_remote_frees_overflow_to_slabs),
		cmocka_unit_test(test_double_free_across_cpus_debug),
		cmocka_unit_test(test_double_free_across_cpus_caught_at_flush),
		cmocka_unit_test(test_threads_cache_remote_frees),
		cmocka_unit_test(test_threads_debug_cache_remote_frees),
		cmocka_unit_test(test_threads_kmalloc_remote_frees),
		cmocka_unit_test(test_threads_validate_own_debug_caches),
		cmocka_unit_test(test_threads_counters_exact),
		cmocka_unit_test(test_threads_reports_counted_and_one_pending_panic),
		cmocka_unit_test(test_threads_walks_while_caches_come_and_go),
		cmocka_unit_test(test_probes_on_every_cpu),
	};
	return cmocka_run_group_tests_name("slab_smp", tests, setup, NULL);
}
