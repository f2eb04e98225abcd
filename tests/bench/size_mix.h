/* SPDX-License-Identifier: MIT */
/*
 * The kmalloc benchmarks' sizes (tests/bench/slab_smp.c's kmalloc pattern,
 * bench.c --size mix): 16 to 512 bytes, small ones more often, the same
 * sequence for every allocator.
 */
#ifndef TOPAZ_BENCH_SIZE_MIX_H
#define TOPAZ_BENCH_SIZE_MIX_H

#include <stddef.h>
#include <stdint.h>

#define NSIZES 4096
static size_t size_mix[NSIZES];

static void size_mix_fill(void)
{
	static const size_t classes[] = { 16, 24, 32, 48, 64, 64, 96, 128, 128, 192, 256, 512 };
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < NSIZES; i++) {
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		size_mix[i] = classes[rnd % (sizeof(classes) / sizeof(classes[0]))];
	}
}

#endif
