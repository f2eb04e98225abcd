// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the coverage decoder (kernel/coverage/ptcov.c) on
 * arbitrary packet streams over fixed code (tests/host/ptcov_synth.h's
 * regions A and K), and over code that is part of the input.
 *
 * Each stream ends with ptcov_end_stream().
 *
 * Input: byte 0 chooses how the stream is cut into pieces (0: whole; else
 * pieces of 1 to byte0 % 32 + 1 bytes, from a generator it seeds); byte 1
 * is flags (ptcov_synth.h's SYN_FUZZ_F_*): CODE (the next 64 bytes are code
 * at SYN_FUZZ_CODE), SMALL (the decoder with 8 blocks and 8 edges at most,
 * and a 256-byte bitmap; else 2048 blocks, 8192 edges, 64 KiB), LOST (a
 * PTCOV_GAP_LOST half-way through), BITMAP_ONLY (the second decode below
 * without the edge list, as a fuzzer's windows are: its own walk, and the
 * byte cache of chunks). The rest is the packet stream.
 *
 * Must hold, besides no crash, leak or sanitizer report: the bytes counted
 * are the bytes fed; the lists stay within the limits and agree with the
 * counts (edges listed = stats.edges; each block's start < end and 1 <=
 * ninsn <= its bytes; the blocks' hits sum to the transitions and their
 * instructions to the insns when none was dropped); every edge joins two
 * listed blocks (when none was dropped) and has hits; no more distinct edges
 * than transitions. And the same stream decoded again after ptcov_clear()
 * and ptcov_begin_stream(), fed whole this time and with the code cached,
 * gives the same lists, bitmap and counts (the block decodes aside); with
 * BITMAP_ONLY the same but the edges, and the blocks in any order (chunks
 * list theirs when the call returns).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../host/hosted.h"
#include <topaz/gfp.h>
#include <topaz/ptcov.h>
#include "../host/ptcov_synth.h"

#define FUZZ_CODE	SYN_FUZZ_CODE
#define FUZZ_CODE_SIZE	SYN_FUZZ_CODE_SIZE
#define F_CODE		SYN_FUZZ_F_CODE
#define F_SMALL		SYN_FUZZ_F_SMALL
#define F_LOST		SYN_FUZZ_F_LOST
#define F_BITMAP_ONLY	SYN_FUZZ_F_BITMAP_ONLY
#define SMALL_LIMIT	8
#define LIMIT		2048	/* the other decoder's blocks: small, to clear fast */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static u8 code_a[SYN_A_SIZE], code_k[SYN_K_SIZE], code_in[FUZZ_CODE_SIZE];
static struct syn_code code;
static struct ptcov *dec_default, *dec_small;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_ptcov: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ptcov_config cfg = { .read = syn_read, .read_ctx = &code };

	hosted_console_quiet = true;
	syn_code_init(&code, code_a, code_k);
	/* made once: a fuzzer's decoder lives across inputs (ptcov_clear) */
	cfg.max_blocks = LIMIT;
	dec_default = ptcov_create(&cfg, GFP_KERNEL);
	cfg.max_blocks = cfg.max_edges = SMALL_LIMIT;
	cfg.bitmap_size = 256;
	dec_small = ptcov_create(&cfg, GFP_KERNEL);
	if (!dec_default || !dec_small)
		die("ptcov_create failed");
	return 0;
}

/* what one decode left, to compare with another */
struct result {
	struct ptcov_stats stats;
	struct ptcov_block blocks[512];	/* all: the code is 336 bytes */
	size_t nblocks;
	struct ptcov_edge edges[SMALL_LIMIT * 4];
	size_t nedges;
	u32 digest;
	u64 bitmap_sum;
};

static int by_start(const void *a, const void *b)
{
	const struct ptcov_block *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* @r as a bitmap-only decode has it: no edges, the blocks by address */
static void bitmap_only_view(struct result *r)
{
	r->stats.edges = r->stats.edges_dropped = 0;
	memset(r->edges, 0, sizeof(r->edges));
	r->nedges = 0;
	qsort(r->blocks, r->nblocks, sizeof(r->blocks[0]), by_start);
}

static bool is_block_start(const struct ptcov *c, u64 addr)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);

	for (size_t i = 0; i < s->blocks; i++)
		if (ptcov_block(c, i)->start == addr)
			return true;
	return false;
}

/* The invariants; the first blocks and edges into @r. */
static void check(const struct ptcov *c, u64 fed, u32 limit, struct result *r)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);
	u64 hits = 0, insns = 0;
	size_t ne;
	const struct ptcov_edge *e = ptcov_edges(c, &ne);
	u32 size;
	const u8 *map = ptcov_bitmap(c, &size);

	if (s->bytes != fed)
		die("stats.bytes is not what was fed");
	if (ne != s->edges)
		die("ptcov_edges() and stats.edges differ");
	if (s->blocks > limit || ne > (limit == SMALL_LIMIT ? limit : 4 * limit))
		die("more listed than the limits allow");
	if (!size || (size & (size - 1)) || !map)
		die("bitmap size is not a power of two");
	memset(r, 0, sizeof(*r));
	r->stats = *s;
	for (size_t i = 0; i < s->blocks; i++) {
		const struct ptcov_block *b = ptcov_block(c, i);

		if (!b || b->start >= b->end || !b->ninsn || b->ninsn > b->end - b->start || !b->hits)
			die("a listed block is malformed");
		hits += b->hits;
		insns += (u64)b->hits * b->ninsn;
		if (r->nblocks < ARRAY_SIZE(r->blocks))
			r->blocks[r->nblocks++] = *b;
	}
	if (!s->blocks_dropped && (hits != s->transitions || insns != s->insns))
		die("the blocks' hits or instructions do not sum to the counts");
	if (ne > s->transitions)
		die("more distinct edges than blocks entered");
	for (size_t i = 0; i < ne; i++) {
		if (!e[i].hits)
			die("an edge with no hit");
		if (!s->blocks_dropped && (!is_block_start(c, e[i].from) || !is_block_start(c, e[i].to)))
			die("an edge between blocks that are not listed");
		if (r->nedges < ARRAY_SIZE(r->edges))
			r->edges[r->nedges++] = e[i];
	}
	for (u32 i = 0; i < size; i++)
		r->bitmap_sum += map[i];
	r->digest = ptcov_bitmap_digest(c);
}

static void decode(struct ptcov *c, const u8 *p, size_t n, u8 cut, bool lost)
{
	u64 rng = 0x9e3779b97f4a7c15ULL ^ cut;
	size_t half = n / 2;

	for (size_t i = 0; i < n;) {
		size_t k = cut ? 1 + hosted_rand(&rng) % (cut % 32 + 1) : n - i;

		if (k > n - i)
			k = n - i;
		if (lost && i < half && i + k > half)
			k = half - i;	/* the loss falls between two pieces */
		if (lost && i == half && k) {
			ptcov_gap(c, PTCOV_GAP_LOST);
			lost = false;
		}
		ptcov_feed(c, p + i, k);
		i += k;
	}
	if (lost)
		ptcov_gap(c, PTCOV_GAP_LOST);
	ptcov_end_stream(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result first, again;
	struct ptcov *c;
	u8 cut, flags;

	if (size < 2)
		return 0;
	cut = data[0];
	flags = data[1];
	data += 2;
	size -= 2;
	code.r[2] = (struct syn_region){ 0 };
	if ((flags & F_CODE) && size >= FUZZ_CODE_SIZE) {
		memcpy(code_in, data, FUZZ_CODE_SIZE);
		code.r[2] = (struct syn_region){ FUZZ_CODE, code_in, FUZZ_CODE_SIZE };
		data += FUZZ_CODE_SIZE;
		size -= FUZZ_CODE_SIZE;
	}
	c = flags & F_SMALL ? dec_small : dec_default;
	/* the last input's code is not this one's */
	ptcov_set_edge_list(c, true);
	ptcov_flush_code(c);
	ptcov_clear(c);
	ptcov_begin_stream(c);
	decode(c, data, size, cut, flags & F_LOST);
	check(c, size, flags & F_SMALL ? SMALL_LIMIT : LIMIT, &first);

	ptcov_clear(c);
	ptcov_begin_stream(c);
	if (flags & F_BITMAP_ONLY)
		ptcov_set_edge_list(c, false);
	decode(c, data, size, 0, flags & F_LOST);
	check(c, size, flags & F_SMALL ? SMALL_LIMIT : LIMIT, &again);
	again.stats.block_decodes = first.stats.block_decodes;
	if (flags & F_BITMAP_ONLY) {
		if (again.nedges || again.stats.edges)
			die("the bitmap-only decode listed edges");
		bitmap_only_view(&first);
		bitmap_only_view(&again);
	}
	if (memcmp(&first, &again, sizeof(first)))
		die("decoded again (whole, code cached), the result differs");
	return 0;
}
