// SPDX-License-Identifier: MIT
/*
 * Fixed-size churn: allocate a batch of objects, touch each, free them in
 * allocation order; repeat. One binary per allocator (glibc, mimalloc,
 * jemalloc, topaz), chosen at compile time, so each links exactly one.
 *
 *   bench [--size N|mix] [--batch N] [--pairs N] [--api cache|kmalloc] [--probe none|count]
 *         [--callgrind]
 *
 * --size mix: each allocation's size from the kmalloc mix (size_mix.h, 16 to
 * 512 bytes; with --api kmalloc for topaz, the cache path takes one size).
 *
 * Prints one line: "ops_per_s=<alloc+free pairs per second> pairs=<n>".
 * With --callgrind the measured loop is bracketed by callgrind's collection
 * toggles (run under valgrind --tool=callgrind --collect-atstart=no), so the
 * instructions counted are exactly those of the loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>
#include "size_mix.h"

#if defined(ALLOC_MIMALLOC)
#include <mimalloc.h>
#define NAME "mimalloc"
static void *a_alloc(size_t n) { return mi_malloc(n); }
static void a_free(void *p) { mi_free(p); }
static void a_init(size_t size, const char *api, const char *probe) { }
#elif defined(ALLOC_GLIBC) || defined(ALLOC_JEMALLOC)
/* jemalloc (Debian's libjemalloc) replaces malloc itself when linked. */
#define NAME "malloc"
static void *a_alloc(size_t n) { return malloc(n); }
static void a_free(void *p) { free(p); }
static void a_init(size_t size, const char *api, const char *probe) { }
#elif defined(ALLOC_TOPAZ)
#include "../host/hosted.h"
#include <topaz/slab.h>
#include <topaz/probe.h>
#include <topaz/mm.h>
#define NAME "topaz"
static struct kmem_cache *cache;
static int use_kmalloc;
static void *a_alloc(size_t n)
{
	return use_kmalloc ? kmalloc(n, GFP_KERNEL) : kmem_cache_alloc(cache, GFP_KERNEL);
}
static void a_free(void *p)
{
	if (use_kmalloc)
		kfree(p);
	else
		kmem_cache_free(cache, p);
}
static void a_init(size_t size, const char *api, const char *probe)
{
	const size_t mib = 512;
	void *arena = hosted_arena(mib);

	page_alloc_init();
	if (page_alloc_add_range((uintptr_t)arena, (uintptr_t)arena + (mib << 20))) {
		fprintf(stderr, "bench: cannot add the arena\n");
		exit(1);
	}
	kmem_cache_init();
	cache = kmem_cache_create("bench", (unsigned int)size, 0, 0, NULL);
	use_kmalloc = !strcmp(api, "kmalloc");
	if (!strcmp(probe, "count")) {
		probe_register("vm.kmem_cache_*", probe_count_handler, NULL);
		probe_register("vm.kmalloc", probe_count_handler, NULL);
		probe_register("vm.kfree", probe_count_handler, NULL);
	}
}
#else
#error "define ALLOC_GLIBC, ALLOC_MIMALLOC, ALLOC_JEMALLOC or ALLOC_TOPAZ"
#endif

static void **slots;

static __attribute__((noinline)) void churn(size_t size, size_t batch, size_t rounds)
{
	size_t k = 0;

	for (size_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < batch; i++) {
			void *p = a_alloc(size ? size : size_mix[k++ % NSIZES]);

			*(volatile size_t *)p = i;	/* touch it, as a user would */
			slots[i] = p;
		}
		for (size_t i = 0; i < batch; i++)
			a_free(slots[i]);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t size = 64, batch = 1, pairs = 20000000;
	const char *api = "cache", *probe = "none";
	int callgrind = 0, mix = 0;
	size_t rounds, warm;
	double t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc && !strcmp(argv[i + 1], "mix"))
			size = 0, mix = 1, i++;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--api") && i + 1 < argc)
			api = argv[++i];
		else if (!strcmp(argv[i], "--probe") && i + 1 < argc)
			probe = argv[++i];
		else if (!strcmp(argv[i], "--callgrind"))
			callgrind = 1;
		else {
			fprintf(stderr, "usage: %s [--size N|mix] [--batch N] [--pairs N] [--api cache|kmalloc] "
				"[--probe none|count] [--callgrind]\n", argv[0]);
			return 2;
		}
	}
	if ((!mix && size < sizeof(size_t)) || !batch) {
		fprintf(stderr, "bench: size must be at least %zu and batch at least 1\n", sizeof(size_t));
		return 2;
	}
	slots = calloc(batch, sizeof(*slots));
	size_mix_fill();
	a_init(mix ? 64 : size, api, probe);
	rounds = pairs / batch ? pairs / batch : 1;
	/* warm up: the allocator reaches its steady state (slabs, caches) */
	warm = rounds / 10 ? rounds / 10 : 1;
	churn(size, batch, warm);
	if (callgrind)
		CALLGRIND_TOGGLE_COLLECT;
	t0 = now();
	churn(size, batch, rounds);
	t1 = now();
	if (callgrind)
		CALLGRIND_TOGGLE_COLLECT;
	printf("%s size=%zu batch=%zu pairs=%zu warm_pairs=%zu ops_per_s=%.0f\n", NAME, size, batch,
	       rounds * batch, warm * batch, (double)(rounds * batch) / (t1 - t0));
	return 0;
}
