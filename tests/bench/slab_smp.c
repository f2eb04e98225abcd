// SPDX-License-Identifier: MIT
/*
 * Threaded allocator churn: N threads, each a CPU of its own (topaz: each
 * sets hosted_cpu_id), allocating and freeing at once. One binary per
 * allocator (glibc, mimalloc, jemalloc, topaz), chosen at compile time, as
 * tests/bench/bench.c.
 *
 *   slab_smp [--pattern local|kmalloc|pc|all] [--threads 1,2,4] [--runs N] [--ms N]
 *            [--batch N] [--size N] [--no-pin]
 *
 * Patterns (an "op" is one object allocated and freed):
 *   local    each thread allocates a batch of --size byte objects (kmem_cache
 *            for topaz, malloc for the others), touches each, frees them in order;
 *   kmalloc  the same with a mix of sizes (16-512 B; kmalloc/kfree for topaz);
 *   pc       producer/consumer: threads pair up, the producer allocates and
 *            hands each object through a lock-free single-producer/single-
 *            consumer ring to its consumer, which reads it and frees it (remote
 *            frees). With one thread, that thread fills the ring with a batch
 *            and drains it itself (the same work, no remote frees).
 *
 * Each run lasts --ms milliseconds (all threads stop together); a run is
 * discarded as warm-up first. Prints one line per pattern and thread count:
 *   "slab_smp alloc=<a> pattern=<p> threads=<n> runs=<r> mops=<median> min=<> max=<>"
 * in millions of ops per second over all threads. Threads are pinned
 * round-robin to the CPUs the process may run on (unless --no-pin).
 *
 * topaz: the page allocator gets an arena, nr_cpu_ids is the largest thread
 * count (before the caches lay out their per-CPU arrays); each pattern and
 * thread count gets a fresh cache, which is shrunk and destroyed afterwards
 * (the kmalloc caches are shrunk), and then every page must be back in the
 * page allocator and no slab error reported: otherwise "FAIL" and exit 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS	64
#define RING_SIZE	1024	/* objects in flight per producer/consumer pair */

enum pattern { P_LOCAL, P_KMALLOC, P_PC, NR_PATTERNS };
static const char *const pattern_names[NR_PATTERNS] = { "local", "kmalloc", "pc" };

#if defined(ALLOC_MIMALLOC)
#include <mimalloc.h>
#define NAME "mimalloc"
static inline void *a_alloc(size_t n) { return mi_malloc(n); }
static inline void a_free(void *p) { mi_free(p); }
static inline void *a_alloc_sized(size_t n) { return mi_malloc(n); }
static inline void a_free_sized(void *p) { mi_free(p); }
static void a_init(unsigned int max_threads) { }
static void a_thread(unsigned int cpu) { }
static void a_begin(enum pattern p, size_t size) { }
static int a_end(enum pattern p, unsigned int threads) { return 0; }
#elif defined(ALLOC_GLIBC) || defined(ALLOC_JEMALLOC)
/* jemalloc (Debian's libjemalloc) replaces malloc itself when linked. */
#ifdef ALLOC_JEMALLOC
#define NAME "jemalloc"
#else
#define NAME "glibc"
#endif
static inline void *a_alloc(size_t n) { return malloc(n); }
static inline void a_free(void *p) { free(p); }
static inline void *a_alloc_sized(size_t n) { return malloc(n); }
static inline void a_free_sized(void *p) { free(p); }
static void a_init(unsigned int max_threads) { }
static void a_thread(unsigned int cpu) { }
static void a_begin(enum pattern p, size_t size) { }
static int a_end(enum pattern p, unsigned int threads) { return 0; }
#elif defined(ALLOC_TOPAZ)
#include "../host/hosted.h"
#include <topaz/slab.h>
#include <topaz/mm.h>
#include <topaz/percpu.h>
#define NAME "topaz"
#define ARENA_MIB 256
static struct kmem_cache *cache;
static uint64_t base_free_pages, base_errors;

static uint64_t free_pages_now(void)
{
	struct page_alloc_stats st;

	page_alloc_get_stats(&st);
	return st.free_pages;
}

/* GFP_KERNEL is a constant without __GFP_ZERO: the shortest entry (slab.h). */
static inline void *a_alloc(size_t n) { return kmem_cache_alloc(cache, GFP_KERNEL); }
static inline void a_free(void *p) { kmem_cache_free(cache, p); }
static inline void *a_alloc_sized(size_t n) { return kmalloc(n, GFP_KERNEL); }
static inline void a_free_sized(void *p) { kfree(p); }

static void a_init(unsigned int max_threads)
{
	hosted_set_cpus(max_threads);	/* before any cache lays out its per-CPU arrays */
	hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
	base_free_pages = free_pages_now();
}

static void a_thread(unsigned int cpu)
{
	hosted_cpu_id = cpu;
}

static void a_begin(enum pattern p, size_t size)
{
	if (p == P_KMALLOC)
		return;
	cache = kmem_cache_create("slab_smp", (unsigned int)size, 0, 0, NULL);
	if (!cache) {
		fprintf(stderr, "slab_smp: cannot create the cache\n");
		exit(1);
	}
}

/* The threads are joined: shrink and destroy, then every page must be back. */
static int a_end(enum pattern p, unsigned int threads)
{
	uint64_t now, errors;
	struct slabinfo si;
	int bad = 0;

	if (cache) {
		kmem_cache_get_slabinfo(cache, &si);
		if (si.active_objs) {
			printf("slab_smp: FAIL: topaz pattern=%s threads=%u: %lu objects still allocated\n",
			       pattern_names[p], threads, si.active_objs);
			bad = 1;
		}
		kmem_cache_shrink(cache);
		kmem_cache_get_slabinfo(cache, &si);
		if (si.cpu_cached || si.num_slabs) {
			printf("slab_smp: FAIL: topaz pattern=%s threads=%u: after kmem_cache_shrink %lu objects cached, %lu slabs\n",
			       pattern_names[p], threads, si.cpu_cached, si.num_slabs);
			bad = 1;
		}
		kmem_cache_destroy(cache);
		cache = NULL;
	}
	kmem_cache_shrink_all();	/* the kmalloc caches keep their slabs otherwise */
	now = free_pages_now();
	if (now != base_free_pages) {
		printf("slab_smp: FAIL: topaz pattern=%s threads=%u: %lld pages not back in the page allocator (free %llu, at start %llu)\n",
		       pattern_names[p], threads, (long long)(base_free_pages - now),
		       (unsigned long long)now, (unsigned long long)base_free_pages);
		bad = 1;
	}
	errors = slab_debug_errors();
	if (errors != base_errors) {
		printf("slab_smp: FAIL: topaz pattern=%s threads=%u: %llu slab error reports (on stderr)\n",
		       pattern_names[p], threads, (unsigned long long)(errors - base_errors));
		bad = 1;
	}
	/* the next pattern is judged on its own */
	base_free_pages = now;
	base_errors = errors;
	return bad;
}
#else
#error "define ALLOC_GLIBC, ALLOC_MIMALLOC, ALLOC_JEMALLOC or ALLOC_TOPAZ"
#endif

/* ---------------------------------------------------------------- the ring */

/*
 * Single producer, single consumer. Each side writes its own index on its own
 * cache line and keeps a copy of the other side's, re-read only when the ring
 * looks full (producer) or empty (consumer).
 */
struct ring {
	_Alignas(64) unsigned long head;	/* consumer: next slot to read */
	unsigned long tail_seen;		/* consumer's copy of @tail */
	_Alignas(64) unsigned long tail;	/* producer: next slot to write */
	unsigned long head_seen;		/* producer's copy of @head */
	_Alignas(64) void *slot[RING_SIZE];
};

/* Waiting for the other side: spin a little, then let it run (4 threads share 2 cores). */
static inline void backoff(unsigned int *spins)
{
	if (++*spins < 64)
		__builtin_ia32_pause();
	else
		sched_yield();
}

static inline void ring_push(struct ring *r, void *p)
{
	unsigned long t = r->tail;

	if (t - r->head_seen == RING_SIZE) {
		unsigned int spins = 0;

		while (t - (r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE)) == RING_SIZE)
			backoff(&spins);
	}
	r->slot[t % RING_SIZE] = p;
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
}

static inline void *ring_pop(struct ring *r)
{
	unsigned long h = r->head;
	void *p;

	if (h == r->tail_seen) {
		unsigned int spins = 0;

		while (h == (r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE)))
			backoff(&spins);
	}
	p = r->slot[h % RING_SIZE];
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
	return p;
}

/* ---------------------------------------------------------------- workers */

#include "size_mix.h"	/* kmalloc pattern: the same sizes for every allocator */

static struct {
	_Alignas(64) int stop;
} ctl;

struct worker {
	_Alignas(64) pthread_t tid;
	unsigned int id, nthreads;
	enum pattern pattern;
	size_t size, batch;
	struct ring *ring;		/* pc: the pair's ring (own ring with one thread) */
	bool producer;
	int pin_cpu;			/* -1: not pinned */
	unsigned long ops;
	void **slots;
};

static pthread_barrier_t start_barrier;
static unsigned long sink;	/* what the consumers read: keeps the reads */

static inline bool stopped(void)
{
	return __atomic_load_n(&ctl.stop, __ATOMIC_RELAXED);
}

static __attribute__((noinline)) unsigned long run_local(struct worker *w)
{
	size_t size = w->size, batch = w->batch;
	void **slots = w->slots;
	unsigned long ops = 0;

	while (!stopped()) {
		for (size_t i = 0; i < batch; i++) {
			void *p = a_alloc(size);

			*(volatile size_t *)p = i;	/* touch it, as a user would */
			slots[i] = p;
		}
		for (size_t i = 0; i < batch; i++)
			a_free(slots[i]);
		ops += batch;
	}
	return ops;
}

static __attribute__((noinline)) unsigned long run_kmalloc(struct worker *w)
{
	size_t batch = w->batch, j = (size_t)w->id * 997;
	void **slots = w->slots;
	unsigned long ops = 0;

	while (!stopped()) {
		for (size_t i = 0; i < batch; i++) {
			void *p = a_alloc_sized(size_mix[j++ % NSIZES]);

			*(volatile size_t *)p = i;
			slots[i] = p;
		}
		for (size_t i = 0; i < batch; i++)
			a_free_sized(slots[i]);
		ops += batch;
	}
	return ops;
}

/* Producer: objects into the ring until told to stop, then NULL (the end). */
static __attribute__((noinline)) unsigned long run_producer(struct worker *w)
{
	struct ring *r = w->ring;
	size_t size = w->size, batch = w->batch;
	unsigned long seq = 0;

	while (!stopped()) {
		for (size_t i = 0; i < batch; i++) {
			void *p = a_alloc(size);

			*(volatile unsigned long *)p = seq++;
			ring_push(r, p);
		}
	}
	ring_push(r, NULL);
	return 0;
}

/* Consumer: frees what its producer sends (remote frees); counts them. */
static __attribute__((noinline)) unsigned long run_consumer(struct worker *w)
{
	struct ring *r = w->ring;
	unsigned long ops = 0, sum = 0;
	void *p;

	while ((p = ring_pop(r))) {
		sum += *(volatile unsigned long *)p;
		a_free(p);
		ops++;
	}
	__atomic_fetch_add(&sink, sum, __ATOMIC_RELAXED);
	return ops;
}

/* One thread: the same ring, filled with a batch and drained by itself. */
static __attribute__((noinline)) unsigned long run_pc_self(struct worker *w)
{
	struct ring *r = w->ring;
	size_t size = w->size, batch = w->batch < RING_SIZE ? w->batch : RING_SIZE;
	unsigned long ops = 0, seq = 0, sum = 0;

	while (!stopped()) {
		for (size_t i = 0; i < batch; i++) {
			void *p = a_alloc(size);

			*(volatile unsigned long *)p = seq++;
			ring_push(r, p);
		}
		for (size_t i = 0; i < batch; i++) {
			void *p = ring_pop(r);

			sum += *(volatile unsigned long *)p;
			a_free(p);
		}
		ops += batch;
	}
	__atomic_fetch_add(&sink, sum, __ATOMIC_RELAXED);
	return ops;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	a_thread(w->id);	/* topaz: this thread is CPU w->id */
	if (w->pin_cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->pin_cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(&start_barrier);
	switch (w->pattern) {
	case P_LOCAL:
		w->ops = run_local(w);
		break;
	case P_KMALLOC:
		w->ops = run_kmalloc(w);
		break;
	default:
		if (w->nthreads == 1 || (w->nthreads % 2 && w->id == w->nthreads - 1))
			w->ops = run_pc_self(w);	/* no partner */
		else
			w->ops = w->producer ? run_producer(w) : run_consumer(w);
		break;
	}
	return NULL;
}

/* ---------------------------------------------------------------- runs */

static int host_cpus[MAX_THREADS], nr_host_cpus;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timed run; returns millions of ops per second over all threads. */
static double run_once(enum pattern pat, unsigned int n, unsigned int ms, size_t size,
		       size_t batch, bool pin)
{
	static struct worker w[MAX_THREADS];
	static struct ring *rings[MAX_THREADS];
	struct timespec d = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	unsigned long ops = 0;
	double t0, t1;

	__atomic_store_n(&ctl.stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&start_barrier, NULL, n + 1);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int pair = i / 2;

		if (!rings[pair] && posix_memalign((void **)&rings[pair], 64, sizeof(struct ring))) {
			fprintf(stderr, "slab_smp: no memory for a ring\n");
			exit(1);
		}
		if (i % 2 == 0)
			memset(rings[pair], 0, sizeof(struct ring));
		if (!w[i].slots)
			w[i].slots = calloc(batch, sizeof(void *));
		w[i].id = i;
		w[i].nthreads = n;
		w[i].pattern = pat;
		w[i].size = size;
		w[i].batch = batch;
		w[i].ring = rings[pair];
		w[i].producer = i % 2 == 0;
		w[i].pin_cpu = pin ? host_cpus[i % (unsigned int)nr_host_cpus] : -1;
		w[i].ops = 0;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
			fprintf(stderr, "slab_smp: cannot create a thread\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&start_barrier);
	t0 = now();
	nanosleep(&d, NULL);
	__atomic_store_n(&ctl.stop, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
	}
	t1 = now();
	pthread_barrier_destroy(&start_barrier);
	return (double)ops / (t1 - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned int threads[MAX_THREADS] = { 1, 2, 4 }, nthr = 3, max_threads = 0;
	unsigned int runs = 5, ms = 100;
	size_t size = 64, batch = 128;
	int first = 0, last = NR_PATTERNS - 1, status = 0;
	bool pin = true;
	cpu_set_t set;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pattern") && i + 1 < argc) {
			const char *p = argv[++i];

			if (!strcmp(p, "all"))
				continue;
			for (first = 0; first < NR_PATTERNS && strcmp(p, pattern_names[first]); first++)
				;
			if (first == NR_PATTERNS)
				goto usage;
			last = first;
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			char *s = argv[++i], *end;

			for (nthr = 0; *s && nthr < MAX_THREADS; s = *end ? end + 1 : end) {
				threads[nthr] = (unsigned int)strtoul(s, &end, 0);
				if (end == s || !threads[nthr] || threads[nthr] > MAX_THREADS)
					goto usage;
				nthr++;
			}
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			ms = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
			batch = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			size = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--no-pin")) {
			pin = false;
		} else {
			goto usage;
		}
	}
	if (!runs || !ms || !batch || !nthr || size < sizeof(size_t) || size > 4096)
		goto usage;
	for (unsigned int i = 0; i < nthr; i++)
		max_threads = threads[i] > max_threads ? threads[i] : max_threads;

	/* the CPUs this process may run on, for pinning */
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < CPU_SETSIZE && nr_host_cpus < MAX_THREADS; c++)
			if (CPU_ISSET(c, &set))
				host_cpus[nr_host_cpus++] = c;
	if (!nr_host_cpus)
		pin = false;
	size_mix_fill();
	a_init(max_threads);
	for (int p = first; p <= last; p++) {
		for (unsigned int t = 0; t < nthr; t++) {
			double r[64];
			unsigned int n = runs < 64 ? runs : 64;

			a_begin((enum pattern)p, size);
			run_once((enum pattern)p, threads[t], ms / 2 ? ms / 2 : 1, size, batch, pin);
			for (unsigned int k = 0; k < n; k++)
				r[k] = run_once((enum pattern)p, threads[t], ms, size, batch, pin);
			qsort(r, n, sizeof(r[0]), cmp_double);
			status |= a_end((enum pattern)p, threads[t]);
			printf("slab_smp alloc=%s pattern=%s threads=%u runs=%u ms=%u cpus=%d mops=%.2f min=%.2f max=%.2f\n",
			       NAME, pattern_names[p], threads[t], n, ms, nr_host_cpus,
			       n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2, r[0], r[n - 1]);
			fflush(stdout);
		}
	}
	return status;

usage:
	fprintf(stderr, "usage: %s [--pattern local|kmalloc|pc|all] [--threads 1,2,4] [--runs N] [--ms N] "
		"[--batch N] [--size 8..4096] [--no-pin]\n", argv[0]);
	return 2;
}
