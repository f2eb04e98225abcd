// SPDX-License-Identifier: MIT
/*
 * The coverage decoder's speed (make bench, decode_bare.sh): ptcov
 * (kernel/coverage/ptcov.c, built -O2 without sanitizers as the other
 * benchmarks' sources) over a container's trace, against ipt-bare
 * (tests/bench/ipt_bare.c: libipt's pt_insn_next() counting instructions)
 * on the same trace.
 *
 * The container, its segments and the code come from ptdecode's library, as
 * for ipt-bare: the kernel ELF and the sideband images, read through
 * ptd_image_read() (the decoder reads code only when it decodes a block it
 * has not cached). One decoder for the whole trace: each CPU's stream starts
 * with ptcov_begin_stream(), a segment after a gap with ptcov_gap(LOST).
 *
 *   cov-bare [--runs N] [--bitmap-only] --elf ELF TRACE
 *
 * --bitmap-only: no edge list, as a fuzzer's windows decode
 * (ptcov_set_edge_list(false)).
 *
 * Prints "insns=N decode_s=S blocks=B edges=E transitions=T gaps=G
 * decodes=D", S the decoding only, the fastest of N runs in this process,
 * each from a cold cache (ptcov_flush_code()); N the instructions of the
 * blocks entered, which the scripts compare with ipt-bare's count.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <getopt.h>
#include "ptdecode.h"
#include "../host/hosted.h"
#include <topaz/gfp.h>
#include <topaz/ptcov.h>
#include <topaz/slab.h>

#define ARENA_MIB	64

/* ptcov_read_fn over ptdecode's image */
static size_t image_read(void *img, u64 addr, u8 *buf, size_t len)
{
	int n = ptd_image_read(buf, len, NULL, addr, img);

	return n < 0 ? 0 : (size_t)n;
}

/* Every segment, CPU by CPU, in stream order. Not inlined nor cloned: the
 * callgrind run of decode_bare.sh counts the instructions inside it only. */
static __attribute__((noinline, noclone)) void cov_decode_segments(struct ptcov *c,
								  const struct ptd_segments *segs)
{
	u32 cpu = ~0u;

	for (size_t i = 0; i < segs->n; i++) {
		const struct ptd_segment *s = &segs->v[i];

		if (s->cpu != cpu || !i) {
			ptcov_begin_stream(c);
			cpu = s->cpu;
		} else {
			ptcov_gap(c, PTCOV_GAP_LOST);
		}
		ptcov_feed(c, s->data, s->size);
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "elf", required_argument, NULL, 'e' },
		{ "runs", required_argument, NULL, 'r' },
		{ "bitmap-only", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	const char *elf = NULL, *trace;
	struct ptd_container cont;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptcov_config cfg = { .read = image_read, .read_ctx = &img };
	const struct ptcov_stats *st;
	struct ptcov *c;
	double best = 0;
	int runs = 1, opt;
	bool bitmap_only = false;
	u64 load = 0, gaps = 0;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'e': elf = optarg; break;
		case 'r': runs = atoi(optarg); break;
		case 'b': bitmap_only = true; break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || !elf || runs < 1)
		goto usage;
	trace = argv[optind];

	ptd_container_load(&cont, trace);
	if (cont.unusable) {
		fprintf(stderr, "cov-bare: %s: unusable\n", trace);
		return 2;
	}
	if (cont.have_header && (cont.header.flags & TPZ_HDR_LOAD_ADDRESS))
		load = cont.header.load_address;
	ptd_image_init(&img);
	if (ptd_image_add_elf(&img, elf, load, &cont.diags)) {
		fprintf(stderr, "cov-bare: %s: cannot load\n", elf);
		return 2;
	}
	ptd_image_add_sideband(&img, &cont);
	ptd_ctx_init(&x, &cont, &img);	/* the segments, as ipt-bare has them */

	hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
	c = ptcov_create(&cfg, GFP_KERNEL);
	if (!c) {
		fprintf(stderr, "cov-bare: ptcov_create failed\n");
		return 2;
	}
	if (bitmap_only)
		ptcov_set_edge_list(c, false);
	for (int r = 0; r < runs; r++) {
		double t0, t;

		ptcov_flush_code(c);
		ptcov_clear(c);
		t0 = now();
		cov_decode_segments(c, &x.segs);
		t = now() - t0;
		if (!r || t < best)
			best = t;
	}
	st = ptcov_get_stats(c);
	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		gaps += st->gaps[g];
	printf("insns=%llu decode_s=%.6f blocks=%llu edges=%llu transitions=%llu gaps=%llu decodes=%llu "
	       "digest=%08x\n", st->insns, best, st->blocks, st->edges, st->transitions, gaps,
	       st->block_decodes, ptcov_bitmap_digest(c));
	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		if (st->gaps[g])
			printf("gap %s=%llu\n", ptcov_gap_name(g), st->gaps[g]);

	ptcov_destroy(c);
	ptd_ctx_free(&x);
	ptd_image_free(&img);
	ptd_container_free(&cont);
	return 0;

usage:
	fprintf(stderr, "usage: cov-bare [--runs N] [--bitmap-only] --elf ELF TRACE\n");
	return 2;
}
