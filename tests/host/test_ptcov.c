// SPDX-License-Identifier: MIT
/*
 * The coverage decoder (kernel/coverage/ptcov.c) on synthetic code and
 * packets (ptcov_synth.h): the blocks, edges and counts of each trace are
 * worked out by hand from ptcov.h's definitions (a block runs from where the
 * flow enters to its first change of flow; an edge joins two blocks run one
 * after the other with only the first's final branch between them; an
 * interrupt, a disable, an overflow or a gap ends the chain) and compared
 * with what the decoder lists.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hosted.h"
#include <topaz/gfp.h>
#include <topaz/ptcov.h>
#include "ptcov_synth.h"

#define A(off)		(SYN_A + (off))

static u8 code_a[SYN_A_SIZE], code_k[SYN_K_SIZE];
static struct syn_code code;
static u64 rng = 0x2545f4914f6cdd1dULL;

/* fresh code for every test: some change it */
static int setup(void **state)
{
	syn_code_init(&code, code_a, code_k);
	return 0;
}

static struct ptcov *make_cfg(u32 bitmap_size, u32 max_blocks, u32 max_edges)
{
	struct ptcov_config cfg = {
		.read = syn_read, .read_ctx = &code, .bitmap_size = bitmap_size,
		.max_blocks = max_blocks, .max_edges = max_edges,
	};
	struct ptcov *c = ptcov_create(&cfg, GFP_KERNEL);

	assert_non_null(c);
	return c;
}

static struct ptcov *make(void)
{
	return make_cfg(0, 0, 0);
}

static void feed(struct ptcov *c, const struct syn_trace *t)
{
	assert_false(t->overflowed);
	ptcov_feed(c, t->buf, t->len);
}

/* ------------------------------------------------------------ checks */

static void print_lists(const struct ptcov *c)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);
	const struct ptcov_edge *e;
	size_t ne;

	for (size_t i = 0; i < s->blocks; i++) {
		const struct ptcov_block *b = ptcov_block(c, i);

		fprintf(stderr, "  block %zu: %#llx-%#llx ninsn %u hits %u\n", i, b->start, b->end,
			b->ninsn, b->hits);
	}
	e = ptcov_edges(c, &ne);
	for (size_t i = 0; i < ne; i++)
		fprintf(stderr, "  edge %zu: %#llx -> %#llx hits %llu\n", i, e[i].from, e[i].to,
			e[i].hits);
	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		if (s->gaps[g])
			fprintf(stderr, "  gap %s: %llu\n", ptcov_gap_name(g), s->gaps[g]);
}

/* the blocks listed are @want, in that order */
static void check_blocks(const struct ptcov *c, const struct ptcov_block *want, size_t n)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);
	bool ok = s->blocks == n;

	for (size_t i = 0; ok && i < n; i++) {
		const struct ptcov_block *b = ptcov_block(c, i);

		ok = b && b->start == want[i].start && b->end == want[i].end &&
		     b->ninsn == want[i].ninsn && b->hits == want[i].hits;
	}
	if (!ok) {
		fprintf(stderr, "blocks differ; wanted:\n");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  block %zu: %#llx-%#llx ninsn %u hits %u\n", i, want[i].start,
				want[i].end, want[i].ninsn, want[i].hits);
		fprintf(stderr, "got:\n");
		print_lists(c);
		fail();
	}
}

/* the edges listed are @want, in that order */
static void check_edges(const struct ptcov *c, const struct ptcov_edge *want, size_t n)
{
	size_t ne;
	const struct ptcov_edge *e = ptcov_edges(c, &ne);
	bool ok = ne == n && ptcov_get_stats(c)->edges == n;

	for (size_t i = 0; ok && i < n; i++)
		ok = e[i].from == want[i].from && e[i].to == want[i].to && e[i].hits == want[i].hits;
	if (!ok) {
		fprintf(stderr, "edges differ; wanted:\n");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  edge %zu: %#llx -> %#llx hits %llu\n", i, want[i].from,
				want[i].to, want[i].hits);
		fprintf(stderr, "got:\n");
		print_lists(c);
		fail();
	}
}

static u64 total_gaps(const struct ptcov *c)
{
	u64 n = 0;

	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		n += ptcov_get_stats(c)->gaps[g];
	return n;
}

static void check_gaps(const struct ptcov *c, enum ptcov_gap kind, u64 n)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);

	if (s->gaps[kind] != n || total_gaps(c) != n) {
		fprintf(stderr, "wanted %llu gap(s) %s, got:\n", n, ptcov_gap_name(kind));
		print_lists(c);
		fail();
	}
}

static bool has_edge(const struct ptcov *c, u64 from, u64 to)
{
	size_t ne;
	const struct ptcov_edge *e = ptcov_edges(c, &ne);

	for (size_t i = 0; i < ne; i++)
		if (e[i].from == from && e[i].to == to)
			return true;
	return false;
}

/* Two decoders reached the same: lists, bitmap, and the counts that do not
 * depend on how the packets were written. */
static void check_same(const struct ptcov *a, const struct ptcov *b)
{
	const struct ptcov_stats *sa = ptcov_get_stats(a), *sb = ptcov_get_stats(b);
	const struct ptcov_edge *ea, *eb;
	size_t na, nb;
	u32 za, zb;
	const u8 *ma = ptcov_bitmap(a, &za), *mb = ptcov_bitmap(b, &zb);

	assert_int_equal(sa->blocks, sb->blocks);
	for (size_t i = 0; i < sa->blocks; i++)
		assert_memory_equal(ptcov_block(a, i), ptcov_block(b, i), sizeof(struct ptcov_block));
	ea = ptcov_edges(a, &na);
	eb = ptcov_edges(b, &nb);
	assert_int_equal(na, nb);
	if (na)
		assert_memory_equal(ea, eb, na * sizeof(*ea));
	assert_int_equal(za, zb);
	assert_memory_equal(ma, mb, za);
	assert_int_equal(ptcov_bitmap_digest(a), ptcov_bitmap_digest(b));
	assert_int_equal(sa->tnt_bits, sb->tnt_bits);
	assert_int_equal(sa->transitions, sb->transitions);
	assert_int_equal(sa->insns, sb->insns);
	assert_memory_equal(sa->gaps, sb->gaps, sizeof(sa->gaps));
	assert_int_equal(sa->edges, sb->edges);
	assert_int_equal(sa->blocks_dropped, sb->blocks_dropped);
	assert_int_equal(sa->edges_dropped, sb->edges_dropped);
}

/* every count, as after the same bytes */
static void check_same_stats(const struct ptcov *a, const struct ptcov *b)
{
	check_same(a, b);
	assert_memory_equal(ptcov_get_stats(a), ptcov_get_stats(b), sizeof(struct ptcov_stats));
}

/* ------------------------------------------------------------ the walk */

/*
 * syn_walk()'s blocks, in the order first reached (ptcov_synth.h's listing).
 * The UD2 at A+65 and the INT3 at A+67 start blocks that the flow reaches
 * (the jz, the first IRETQ) but whose first instruction does not complete:
 * the event's FUP is their start, so, as libipt reports no instruction there,
 * they are not reached and no edge leads into them. They are decoded all the
 * same (WALK_DECODED).
 */
static const struct ptcov_block walk_blocks[] = {
	{ A(0x00), A(0x0d), 5, 1 },	/* main to the jnz */
	{ A(0x07), A(0x0d), 3, 2 },	/* the loop, taken twice */
	{ A(0x0d), A(0x12), 1, 1 },	/* call func */
	{ A(0x40), A(0x48), 3, 1 },	/* func: ptwrite, add, ret */
	{ A(0x12), A(0x14), 1, 1 },	/* call rbx */
	{ A(0x50), A(0x52), 2, 1 },	/* nop, ret */
	{ A(0x14), A(0x16), 1, 1 },	/* jmp rdx */
	{ A(0x60), A(0x64), 2, 1 },	/* test, jz */
	{ A(0x80), A(0x87), 2, 1 },	/* #UD handler */
	{ A(0x88), A(0x8a), 1, 1 },	/* #BP handler */
	{ A(0x68), A(0x6a), 1, 1 },	/* jmp rax */
	{ SYN_K, SYN_K + 4, 3, 1 },	/* nop, nop, jmp rcx */
};
#define WALK_DECODED	(ARRAY_SIZE(walk_blocks) + 2)	/* and the UD2's, the INT3's */
#define WALK_TRANSITIONS 13
#define WALK_INSNS	28

/* no edge into a handler (an exception ends the chain); an IRETQ's is one */
static const struct ptcov_edge walk_edges[] = {
	{ A(0x00), A(0x07), 1 }, { A(0x07), A(0x07), 1 }, { A(0x07), A(0x0d), 1 },
	{ A(0x0d), A(0x40), 1 }, { A(0x40), A(0x12), 1 }, { A(0x12), A(0x50), 1 },
	{ A(0x50), A(0x14), 1 }, { A(0x14), A(0x60), 1 }, { A(0x88), A(0x68), 1 },
	{ A(0x68), SYN_K, 1 },
};

static void test_walk(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();
	const struct ptcov_stats *s;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(c, &t);
	check_blocks(c, walk_blocks, ARRAY_SIZE(walk_blocks));
	check_edges(c, walk_edges, ARRAY_SIZE(walk_edges));
	s = ptcov_get_stats(c);
	assert_int_equal(s->bytes, t.len);
	assert_int_equal(s->packets, t.npackets);
	assert_int_equal(s->psbs, 1);
	assert_int_equal(s->tnt_bits, 5);	/* T T N, the RET's T, the jz's T */
	assert_int_equal(s->tips, 10);		/* TIP.PGE, 8 TIPs, TIP.PGD */
	assert_int_equal(s->transitions, WALK_TRANSITIONS);
	assert_int_equal(s->insns, WALK_INSNS);
	assert_int_equal(s->block_decodes, WALK_DECODED);
	assert_int_equal(total_gaps(c), 0);
	assert_int_equal(s->blocks_dropped, 0);
	assert_int_equal(s->edges_dropped, 0);
	ptcov_destroy(c);
}

/*
 * The same flow, written every way the trace unit may write it: each IP
 * compression, timing packets and PADs between the others, TNT-64 for
 * TNT-8, a PSB+ in the middle of the loop, FUPonPTW. None of it is flow:
 * the same blocks, edges and bitmap.
 */
static void test_walk_encodings(void **state)
{
	static const enum ptpk_ipc ipcs[] = { PTPK_IPC_FULL, PTPK_IPC_UPDATE_16, PTPK_IPC_UPDATE_32,
					      PTPK_IPC_SEXT_48, PTPK_IPC_UPDATE_48 };
	struct syn_trace t;
	struct ptcov *base = make(), *c;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(base, &t);
	for (size_t i = 0; i < ARRAY_SIZE(ipcs); i++)
		for (unsigned int v = 0; v < 16; v++) {
			syn_init(&t);
			t.ipc = ipcs[i];
			t.timing = v & 1;
			t.tnt64 = v & 2;
			syn_walk(&t, true, v & 4, v & 8);
			c = make();
			feed(c, &t);
			if (total_gaps(c) || ptcov_get_stats(c)->blocks != ARRAY_SIZE(walk_blocks)) {
				fprintf(stderr, "ipc %d timing %d tnt64 %d mid-psb %d fup-on-ptw %d:\n",
					ipcs[i], v & 1, !!(v & 2), !!(v & 4), !!(v & 8));
				print_lists(c);
			}
			check_same(base, c);
			assert_int_equal(ptcov_get_stats(c)->psbs, t.npsb);
			assert_int_equal(ptcov_get_stats(c)->packets, t.npackets);
			ptcov_destroy(c);
		}
	ptcov_destroy(base);
}

/* Each IP compression on its own TIP, checked against the blocks it must
 * reach: UPDATE_16/32/48 keep the upper bytes of the last IP, SEXT_48
 * sign-extends bit 47 (into region K). */
static void test_ip_compression(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();
	static const struct ptcov_block want[] = {
		{ A(0x12), A(0x14), 1, 1 }, { A(0x50), A(0x52), 2, 1 }, { A(0x14), A(0x16), 1, 1 },
		{ A(0x60), A(0x64), 2, 1 }, { A(0x80), A(0x87), 2, 1 }, { A(0x88), A(0x8a), 1, 1 },
		{ A(0x68), A(0x6a), 1, 1 }, { SYN_K, SYN_K + 4, 3, 1 },
	};

	syn_init(&t);
	syn_psb(&t, 0);
	syn_mode64(&t);
	syn_ip_as(&t, PTPK_TIP_PGE, PTPK_IPC_FULL, A(0x12));
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_16, A(0x50) & 0xffff);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_32, A(0x14) & 0xffffffff);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_48, A(0x60) & 0xffffffffffffULL);
	syn_tnt(&t, "T");
	syn_ip_as(&t, PTPK_FUP, PTPK_IPC_SEXT_48, A(0x65) & 0xffffffffffffULL);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_16, A(0x80) & 0xffff);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_16, A(0x67) & 0xffff);
	syn_ip_as(&t, PTPK_FUP, PTPK_IPC_UPDATE_32, A(0x67) & 0xffffffff);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_UPDATE_16, A(0x88) & 0xffff);
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_FULL, A(0x68));
	syn_ip_as(&t, PTPK_TIP, PTPK_IPC_SEXT_48, SYN_K & 0xffffffffffffULL);
	syn_ip_as(&t, PTPK_TIP_PGD, PTPK_IPC_UPDATE_16, 0x1234);	/* out of the filter */
	feed(c, &t);
	check_blocks(c, want, ARRAY_SIZE(want));
	assert_true(has_edge(c, A(0x68), SYN_K));
	assert_int_equal(total_gaps(c), 0);
	ptcov_destroy(c);
}

/* Fed one byte at a time, or in random pieces: the same as fed whole. */
static void test_pieces(void **state)
{
	struct syn_trace t;
	struct ptcov *whole = make(), *c;

	syn_init(&t);
	t.timing = true;
	syn_walk(&t, true, true, true);
	feed(whole, &t);
	c = make();
	for (size_t i = 0; i < t.len; i++)
		ptcov_feed(c, t.buf + i, 1);
	check_same_stats(whole, c);
	ptcov_destroy(c);
	for (int round = 0; round < 50; round++) {
		c = make();
		for (size_t i = 0; i < t.len;) {
			size_t n = hosted_rand(&rng) % 20;

			n = n > t.len - i ? t.len - i : n;
			ptcov_feed(c, t.buf + i, n);	/* 0 bytes too */
			i += n;
		}
		check_same_stats(whole, c);
		ptcov_destroy(c);
	}
	ptcov_destroy(whole);
}

/* ------------------------------------------------------------ the bitmap */

/*
 * ptcov_bitmap_touched() lists exactly the bitmap's non-zero entries, each
 * once (the fuzzer's news test and ptcov_clear() look at those only).
 * Return: their number.
 */
static u32 check_touched(const struct ptcov *c)
{
	u32 size, n;
	const u8 *m = ptcov_bitmap(c, &size);
	const u32 *at = ptcov_bitmap_touched(c, &n);
	u8 *seen = calloc(size, 1);
	u32 nz = 0;

	assert_non_null(seen);
	for (u32 k = 0; k < n; k++) {
		assert_true(at[k] < size);
		assert_int_not_equal(m[at[k]], 0);
		assert_int_equal(seen[at[k]], 0);
		seen[at[k]] = 1;
	}
	for (u32 i = 0; i < size; i++)
		nz += m[i] != 0;
	assert_int_equal(nz, n);
	free(seen);
	return n;
}

static u32 nonzero(const struct ptcov *c, u64 *sum)
{
	u32 size, n = 0;
	const u8 *m = ptcov_bitmap(c, &size);

	*sum = 0;
	for (u32 i = 0; i < size; i++) {
		n += m[i] != 0;
		*sum += m[i];
	}
	return n;
}

/*
 * The bitmap has an entry per edge taken (an index per distinct edge, so as
 * many nonzero entries as edges but for collisions, and never fewer than the
 * hits of the listed edges in all); a flipped TNT bit (the jz not taken: the
 * same packets but one bit) changes the digest, the same trace twice does not.
 */
static void test_bitmap_mutation(void **state)
{
	struct syn_trace t, m;
	struct ptcov *c = make(), *c2 = make(), *cm = make();
	u64 sum, edge_hits = 0;
	u32 size, n;
	size_t ne;
	const struct ptcov_edge *e;
	static const struct ptcov_block mut_blocks[] = {
		{ A(0x60), A(0x64), 2, 1 }, { A(0x64), A(0x67), 2, 1 },
	};

	syn_init(&t);
	syn_walk(&t, true, false, false);
	syn_init(&m);
	syn_walk(&m, false, false, false);
	assert_int_equal(t.len, m.len);
	assert_int_not_equal(memcmp(t.buf, m.buf, t.len), 0);
	feed(c, &t);
	feed(c2, &t);
	feed(cm, &m);

	ptcov_bitmap(c, &size);
	assert_int_equal(size, PTCOV_BITMAP_DEFAULT);
	n = nonzero(c, &sum);
	e = ptcov_edges(c, &ne);
	for (size_t i = 0; i < ne; i++)
		edge_hits += e[i].hits;
	assert_true(n > 0);
	assert_true(n <= ne + ptcov_get_stats(c)->blocks);	/* edges, and maybe entries */
	assert_true(sum >= edge_hits);
	assert_true(n >= ne / 2);	/* collisions in 64 KiB are rare */

	assert_int_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(c2));
	assert_int_not_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(cm));
	/* the mutant: the jz falls through to the nop before the UD2 */
	assert_true(has_edge(cm, A(0x60), A(0x64)));
	assert_false(has_edge(cm, A(0x60), A(0x65)));
	assert_int_equal(ptcov_block(cm, 7)->start, mut_blocks[0].start);
	assert_memory_equal(ptcov_block(cm, 8), &mut_blocks[1], sizeof(mut_blocks[1]));
	assert_int_equal(total_gaps(cm), 0);
	ptcov_destroy(c);
	ptcov_destroy(c2);
	ptcov_destroy(cm);
}

/* A loop's hit counts: the bucket of its back edge moves with them. */
static void test_loop_counts(void **state)
{
	u32 digests[6];

	for (unsigned int k = 0; k < ARRAY_SIZE(digests); k++) {
		/* 2^k + 1 taken back edges: 2, 3, 5, 9, 17, 33 */
		unsigned int taken = (1u << k) + 1;
		struct syn_trace t;
		struct ptcov *c = make();
		const struct ptcov_block want[] = {
			{ A(0x00), A(0x0d), 5, 1 }, { A(0x07), A(0x0d), 3, taken },
			{ A(0x0d), A(0x12), 1, 1 }, { A(0x40), A(0x48), 3, 1 },
			{ A(0x12), A(0x14), 1, 1 },
		};
		const struct ptcov_edge want_e[] = {
			{ A(0x00), A(0x07), 1 }, { A(0x07), A(0x07), taken - 1 },
			{ A(0x07), A(0x0d), 1 }, { A(0x0d), A(0x40), 1 }, { A(0x40), A(0x12), 1 },
		};

		syn_start(&t, A(0));
		for (unsigned int i = 0; i < taken; i++)
			syn_tnt(&t, "T");
		syn_tnt(&t, "NT");		/* out of the loop; func's RET */
		syn_ip(&t, PTPK_TIP_PGD, SYN_NOCODE);	/* call rbx out of the filter */
		feed(c, &t);
		check_blocks(c, want, ARRAY_SIZE(want));
		check_edges(c, want_e, ARRAY_SIZE(want_e));
		assert_int_equal(ptcov_get_stats(c)->tnt_bits, taken + 2);
		digests[k] = ptcov_bitmap_digest(c);
		for (unsigned int j = 0; j < k; j++)
			assert_int_not_equal(digests[j], digests[k]);
		ptcov_destroy(c);
	}
}

/* ------------------------------------------------------------ returns */

/* Two calls deep: both RETs compressed, each to its own call site. */
static void test_ret_compression_nested(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();
	static const struct ptcov_block want[] = {
		{ A(0xa0), A(0xa5), 1, 1 }, { A(0xa8), A(0xad), 1, 1 }, { A(0x40), A(0x48), 3, 1 },
		{ A(0xad), A(0xae), 1, 1 }, { A(0xa5), A(0xa7), 1, 1 },
	};
	static const struct ptcov_edge want_e[] = {
		{ A(0xa0), A(0xa8), 1 }, { A(0xa8), A(0x40), 1 }, { A(0x40), A(0xad), 1 },
		{ A(0xad), A(0xa5), 1 },
	};

	syn_start(&t, A(0xa0));
	syn_tnt(&t, "TT");
	syn_ip(&t, PTPK_TIP_PGD, SYN_NOCODE);	/* jmp rsi out of the filter */
	feed(c, &t);
	check_blocks(c, want, ARRAY_SIZE(want));
	check_edges(c, want_e, ARRAY_SIZE(want_e));
	assert_int_equal(total_gaps(c), 0);
	ptcov_destroy(c);
}

/* A RET whose call the decoder did not see cannot be compressed: its bit
 * does not fit the code. Nor does a not-taken bit for a RET. */
static void test_ret_bit_without_call(void **state)
{
	for (int nt = 0; nt < 2; nt++) {
		struct syn_trace t;
		struct ptcov *c = make();

		/* with a call, the bit is N; without, T */
		syn_start(&t, nt ? A(0x0d) : A(0x40));
		syn_tnt(&t, nt ? "N" : "T");
		feed(c, &t);
		check_gaps(c, PTCOV_GAP_DESYNC, 1);
		assert_false(has_edge(c, A(0x40), A(0x12)));
		ptcov_destroy(c);
	}
}

/* ------------------------------------------------------------ gaps */

/* From call rbx on: its TIP, the RET's, jmp rdx's, the jz not taken, a #UD
 * at the UD2 into a handler that is not traced (FUP, TIP.PGD). */
static void tail_from_call_rbx(struct syn_trace *t)
{
	syn_ip(t, PTPK_TIP, A(0x50));
	syn_ip(t, PTPK_TIP, A(0x14));
	syn_ip(t, PTPK_TIP, A(0x60));
	syn_tnt(t, "N");
	syn_ip(t, PTPK_FUP, A(0x65));
	syn_ip_suppressed(t, PTPK_TIP_PGD);
}

/* After a gap, a PSB+ at call rbx resumes */
static void resume_at_call_rbx(struct syn_trace *t)
{
	syn_psb(t, A(0x12));
	tail_from_call_rbx(t);
}

/* the blocks from call rbx on were reached, with no edge into the first */
static void check_resumed(const struct ptcov *c, u64 cut_from)
{
	assert_true(has_edge(c, A(0x12), A(0x50)));
	assert_true(has_edge(c, A(0x50), A(0x14)));
	assert_true(has_edge(c, A(0x14), A(0x60)));
	assert_true(has_edge(c, A(0x60), A(0x64)));
	assert_false(has_edge(c, cut_from, A(0x12)));
}

/* LOST from the container: the loop's second bit is lost; what follows
 * before the next PSB is not used. The stream before the loss ended with
 * whole packets: the block the first bit entered (the loop's) is not
 * counted, as nothing says it ran (libipt's flow ends at the jnz too). */
static void test_gap_lost(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_start(&t, A(0));
	syn_tnt(&t, "T");
	feed(c, &t);
	ptcov_gap(c, PTCOV_GAP_LOST);
	syn_init(&t);
	syn_tnt(&t, "NT");		/* after the loss, before a PSB: not used */
	syn_ip(&t, PTPK_TIP, A(0x50));
	resume_at_call_rbx(&t);
	feed(c, &t);
	check_gaps(c, PTCOV_GAP_LOST, 1);
	check_resumed(c, A(0x07));
	assert_false(has_edge(c, A(0x07), A(0x0d)));
	assert_false(has_edge(c, A(0x07), A(0x07)));
	assert_int_equal(ptcov_block(c, 0)->start, A(0));
	assert_int_equal(ptcov_block(c, 1)->start, A(0x12));
	assert_false(has_edge(c, A(0), A(0x07)));
	ptcov_destroy(c);
}

/* OVF: it says where the flow resumes (a FUP), or that tracing was off
 * (a TIP.PGE follows); no edge across it either way. */
static void test_gap_ovf(void **state)
{
	for (int pge = 0; pge < 2; pge++) {
		struct syn_trace t;
		struct ptcov *c = make();

		syn_start(&t, A(0));
		syn_tnt(&t, "T");
		syn_type(&t, PTPK_OVF);
		t.last_ip = 0;
		syn_ip_as(&t, pge ? PTPK_TIP_PGE : PTPK_FUP, PTPK_IPC_FULL, A(0x12));
		tail_from_call_rbx(&t);
		feed(c, &t);
		check_gaps(c, PTCOV_GAP_OVF, 1);
		check_resumed(c, A(0x07));
		ptcov_destroy(c);
	}
}

/* call rbx to an address with no code: NOCODE, then a PSB resumes */
static void test_gap_nocode(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_start(&t, A(0x0d));
	syn_tnt(&t, "T");			/* func's RET */
	syn_ip(&t, PTPK_TIP, SYN_NOCODE);	/* call rbx */
	syn_ip(&t, PTPK_TIP, A(0x50));		/* not used: no code to walk to it */
	resume_at_call_rbx(&t);
	feed(c, &t);
	check_gaps(c, PTCOV_GAP_NOCODE, 1);
	check_resumed(c, A(0x12));
	for (size_t i = 0; i < ptcov_get_stats(c)->blocks; i++)
		assert_int_not_equal(ptcov_block(c, i)->start, SYN_NOCODE);
	assert_true(has_edge(c, A(0x0d), A(0x40)));
	assert_true(has_edge(c, A(0x40), A(0x12)));
	ptcov_destroy(c);
}

/* call rbx to A+90: a NOP, then bytes that are no instruction */
static void test_gap_badinsn(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_start(&t, A(0x12));
	syn_ip(&t, PTPK_TIP, A(0x90));
	syn_tnt(&t, "T");			/* not used */
	resume_at_call_rbx(&t);
	feed(c, &t);
	check_gaps(c, PTCOV_GAP_BADINSN, 1);
	check_resumed(c, A(0x90));
	for (size_t i = 0; i < ptcov_get_stats(c)->blocks; i++) {
		const struct ptcov_block *b = ptcov_block(c, i);

		assert_false(b->start <= A(0x91) && A(0x91) < b->end);
	}
	ptcov_destroy(c);
}

/* Packets that do not fit the code: a TNT bit at call rbx (a TIP's branch),
 * and a TIP where the loop's jnz wants a bit. */
static void test_gap_desync(void **state)
{
	for (int k = 0; k < 2; k++) {
		struct syn_trace t;
		struct ptcov *c = make();

		syn_start(&t, k ? A(0) : A(0x12));
		if (k) {
			syn_ip(&t, PTPK_TIP, A(0x50));
		} else {
			/* a bit at the call that takes a TIP may wait for a
			 * deferred TIP; a second TNT before the TIP cannot */
			syn_tnt(&t, "T");
			syn_tnt(&t, "T");
		}
		resume_at_call_rbx(&t);
		feed(c, &t);
		check_gaps(c, PTCOV_GAP_DESYNC, 1);
		check_resumed(c, k ? A(0) : A(0x12));
		ptcov_destroy(c);
	}
}

/* jmp A+70 to itself: a flow with no packet ever; then a PSB resumes */
static void test_gap_loop(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_start(&t, A(0x70));
	syn_tnt(&t, "T");
	resume_at_call_rbx(&t);
	feed(c, &t);
	check_gaps(c, PTCOV_GAP_LOOP, 1);
	check_resumed(c, A(0x70));
	ptcov_destroy(c);

	/*
	 * Reached by jmp rdx, twice (the second time from cached blocks and
	 * edges): each time cut after about 2^16 turns, the block listed once.
	 */
	c = make();
	syn_start(&t, A(0x14));
	syn_ip(&t, PTPK_TIP, A(0x70));
	syn_tnt(&t, "T");
	for (int round = 0; round < 2; round++) {
		const struct ptcov_stats *s = ptcov_get_stats(c);

		feed(c, &t);
		check_gaps(c, PTCOV_GAP_LOOP, round + 1);
		assert_int_equal(s->blocks, 2);
		assert_int_equal(ptcov_block(c, 1)->start, A(0x70));
		assert_true(ptcov_block(c, 1)->hits <= (round + 1) * ((1u << 16) + 2));
		assert_true(s->transitions <= (round + 1) * ((1u << 16) + 3));
	}
	ptcov_destroy(c);
}

/* ------------------------------------------------------------ events */

/*
 * An interrupt in the loop (FUP mid-block, TIP to a handler) and its IRETQ
 * back: the handler is entered with no edge, the rest of the loop is a block
 * of its own (entered by the IRETQ's edge). Then an asynchronous disable
 * (FUP, TIP.PGD) and TIP.PGE where it resumes: no edge across.
 */
static void test_interrupt_and_disable(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_start(&t, A(0));
	syn_tnt(&t, "T");
	syn_ip(&t, PTPK_FUP, A(0x09));		/* after the INC */
	syn_ip(&t, PTPK_TIP, A(0x88));
	syn_ip(&t, PTPK_TIP, A(0x09));		/* IRETQ */
	syn_tnt(&t, "T");
	syn_ip(&t, PTPK_FUP, A(0x0b));		/* before the jnz: off */
	syn_ip_suppressed(&t, PTPK_TIP_PGD);
	syn_ip(&t, PTPK_TIP_PGE, A(0x0b));
	syn_tnt(&t, "N");
	syn_ip(&t, PTPK_TIP_PGD, A(0x40));	/* the call, to func: filtered out */
	feed(c, &t);
	assert_int_equal(total_gaps(c), 0);
	assert_true(has_edge(c, A(0), A(0x07)));
	assert_true(has_edge(c, A(0x88), A(0x09)));
	assert_true(has_edge(c, A(0x09), A(0x07)));
	assert_true(has_edge(c, A(0x0b), A(0x0d)));
	assert_false(has_edge(c, A(0x07), A(0x88)));
	assert_false(has_edge(c, A(0x07), A(0x0b)));
	assert_false(has_edge(c, A(0x07), A(0x09)));
	{
		static const struct ptcov_block want[] = {
			{ A(0x00), A(0x0d), 5, 1 }, { A(0x07), A(0x0d), 3, 2 },
			{ A(0x88), A(0x8a), 1, 1 }, { A(0x09), A(0x0d), 2, 1 },
			{ A(0x0b), A(0x0d), 1, 1 }, { A(0x0d), A(0x12), 1, 1 },
		};

		check_blocks(c, want, ARRAY_SIZE(want));
	}
	ptcov_destroy(c);
}

/*
 * The stream ends after the enable at the nested calls. With whole packets
 * only, nothing says the first block ran, and ptcov_end_stream() counts
 * nothing (libipt's flow ends at the enable). When the stream ends inside a
 * packet (a TIP's first byte), the flow ran on through the direct CALLs to
 * the first branch that needs a packet (func's RET), as libipt's does.
 */
static void test_end_stream(void **state)
{
	static const struct ptcov_block want[] = {
		{ A(0xa0), A(0xa5), 1, 1 }, { A(0xa8), A(0xad), 1, 1 }, { A(0x40), A(0x48), 3, 1 },
	};
	static const struct ptcov_edge want_e[] = {
		{ A(0xa0), A(0xa8), 1 }, { A(0xa8), A(0x40), 1 },
	};

	for (int cut = 0; cut < 2; cut++) {
		struct syn_trace t;
		struct ptcov *c = make();

		syn_start(&t, A(0xa0));
		if (cut)
			t.buf[t.len++] = 0x4d;	/* TIP, 2 IP bytes to come */
		feed(c, &t);
		assert_int_equal(ptcov_get_stats(c)->blocks, 0);
		ptcov_end_stream(c);
		if (cut) {
			check_blocks(c, want, ARRAY_SIZE(want));
			check_edges(c, want_e, ARRAY_SIZE(want_e));
		} else {
			assert_int_equal(ptcov_get_stats(c)->blocks, 0);
			assert_int_equal(ptcov_get_stats(c)->transitions, 0);
		}
		assert_int_equal(total_gaps(c), 0);
		ptcov_destroy(c);
	}
}

/* A new stream: packets before its PSB are not used, what was reached stays */
static void test_begin_stream(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(c, &t);
	ptcov_begin_stream(c);
	syn_init(&t);
	syn_tnt(&t, "TTTT");
	syn_ip(&t, PTPK_TIP, A(0x50));
	syn_walk(&t, true, false, false);
	feed(c, &t);
	assert_int_equal(total_gaps(c), 0);
	assert_int_equal(ptcov_get_stats(c)->blocks, ARRAY_SIZE(walk_blocks));
	assert_int_equal(ptcov_get_stats(c)->transitions, 2 * WALK_TRANSITIONS);
	assert_int_equal(ptcov_block(c, 1)->hits, 4);
	ptcov_destroy(c);
}

/* ------------------------------------------------------------ the code cache */

/* ptcov_clear(): the counts start again, the code is not decoded again */
static void test_clear_keeps_code(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make(), *fresh = make();
	u64 decodes;
	unsigned int reads;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(c, &t);
	feed(fresh, &t);
	assert_true(check_touched(c) > 0);
	ptcov_clear(c);
	assert_int_equal(ptcov_get_stats(c)->blocks, 0);
	assert_int_equal(ptcov_get_stats(c)->transitions, 0);
	{
		u64 sum;

		assert_int_equal(nonzero(c, &sum), 0);
		assert_int_equal(check_touched(c), 0);
	}
	decodes = ptcov_get_stats(c)->block_decodes;
	reads = code.reads;
	feed(c, &t);
	assert_int_equal(ptcov_get_stats(c)->block_decodes, decodes);
	assert_int_equal(code.reads, reads);
	assert_int_equal(check_touched(c), check_touched(fresh));
	check_blocks(c, walk_blocks, ARRAY_SIZE(walk_blocks));
	check_edges(c, walk_edges, ARRAY_SIZE(walk_edges));
	assert_int_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(fresh));
	ptcov_destroy(c);
	ptcov_destroy(fresh);
}

/* The counts a decoder without its edge list must share with one that has it. */
static void check_same_but_edges(const struct ptcov *c, const struct ptcov *ref)
{
	const struct ptcov_stats *a = ptcov_get_stats(c), *b = ptcov_get_stats(ref);
	size_t ne;

	assert_int_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(ref));
	assert_int_equal(check_touched(c), check_touched(ref));
	assert_int_equal(a->blocks, b->blocks);
	assert_int_equal(a->transitions, b->transitions);
	assert_int_equal(a->insns, b->insns);
	assert_int_equal(a->tnt_bits, b->tnt_bits);
	assert_int_equal(a->edges, 0);
	assert_true(b->edges > 0);
	(void)ptcov_edges(c, &ne);
	assert_int_equal(ne, 0);
}

/*
 * A fuzzer's decoder keeps the bitmap only (ptcov_set_edge_list(c, false)):
 * window after window (ptcov_clear()), the same bitmap, touched list and
 * counts as a decoder that lists the edges, on the first window (nothing
 * cached) and the later ones (every successor cached: walk_cached() goes
 * on without the edges' slots). And back on, the list is whole again.
 */
static void test_bitmap_only(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make(), *ref = make();

	syn_init(&t);
	syn_walk(&t, true, false, false);
	ptcov_set_edge_list(c, false);
	for (int w = 0; w < 3; w++) {
		ptcov_clear(c);
		ptcov_clear(ref);
		feed(c, &t);
		feed(ref, &t);
		check_same_but_edges(c, ref);
	}
	ptcov_set_edge_list(c, true);
	ptcov_clear(c);
	feed(c, &t);
	check_blocks(c, walk_blocks, ARRAY_SIZE(walk_blocks));
	check_edges(c, walk_edges, ARRAY_SIZE(walk_edges));
	ptcov_destroy(c);
	ptcov_destroy(ref);
}

/* ------------------------------------------------------------ the byte cache */

#define RND_BASE	0x600000ULL
#define RND_SLOTS	32
#define RND_SLOT	32
static u8 code_r[RND_SLOTS * RND_SLOT];

static u32 rnd(u32 n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (u32)(rng % n);
}

static u8 *put_rel32(u8 *p, u8 op0, int op1, u32 slot)
{
	u64 at = RND_BASE + (u64)(p - code_r);
	unsigned int len = op1 < 0 ? 5 : 6;
	s32 rel = (s32)(RND_BASE + (u64)slot * RND_SLOT - (at + len));

	*p++ = op0;
	if (op1 >= 0)
		*p++ = (u8)op1;
	memcpy(p, &rel, 4);
	return p + 4;
}

/*
 * Random code: RND_SLOTS slots of conditional branches, calls, returns and
 * jumps between slot starts, @calls in 8 the chance of a slot that calls
 * (deep call chains when high).
 */
static void random_code(unsigned int calls)
{
	memset(code_r, 0xcc, sizeof(code_r));
	for (u32 i = 0; i < RND_SLOTS; i++) {
		u8 *p = code_r + i * RND_SLOT;

		for (u32 k = rnd(3); k; k--)
			*p++ = 0x90;
		if (rnd(8) < calls) {
			p = put_rel32(p, 0xe8, -1, rnd(RND_SLOTS));	/* call */
			p = put_rel32(p, 0x0f, 0x85, rnd(RND_SLOTS));	/* jnz */
			p = put_rel32(p, 0xe9, -1, rnd(RND_SLOTS));	/* jmp */
			continue;
		}
		switch (rnd(4)) {
		case 0:
			*p = 0xc3;
			break;
		case 1:
			p = put_rel32(p, 0x0f, 0x84, rnd(RND_SLOTS));
			*p = 0xc3;
			break;
		case 2:
			p = put_rel32(p, 0x0f, 0x84, rnd(RND_SLOTS));
			/* fall through */
		default:
			p = put_rel32(p, 0x0f, 0x85, rnd(RND_SLOTS));
			put_rel32(p, 0xe9, -1, rnd(RND_SLOTS));
			break;
		}
	}
	code.r[2] = (struct syn_region){ RND_BASE, code_r, sizeof(code_r) };
}

/*
 * Run the random code from slot 0 for about @steps branches, as a trace unit
 * with RET compression writes it: a TNT bit per conditional branch and per
 * RET its 64-deep return stack predicts, a TIP for any other RET (after the
 * bits before it). A RET with nothing to return to goes to a random slot.
 */
/* random_run() writes a FUP (an event's, with no TIP after it) or a TNT of
 * random bits between TNT packets now and then: streams the trace unit would
 * not write, whose flow goes astray */
static bool rnd_fups;

static void random_run(struct syn_trace *t, u32 steps, bool tnt64)
{
	u64 ip = RND_BASE, stack[256], hw[64];
	u32 sp = 0, hw_len = 0, hw_top = 0;
	char bits[48];
	u32 nb = 0, max = tnt64 ? 47 : 6;

	syn_start(t, ip);
	t->tnt64 = tnt64;
	for (u32 s = 0; s < steps && t->len < sizeof(t->buf) - 64; ) {
		const u8 *p = code_r + (ip - RND_BASE);
		s32 rel;

		if (p[0] == 0x90) {
			ip++;
			continue;
		}
		s++;
		if (p[0] == 0xc3) {
			/* nothing to return to: somewhere else, as a longjmp would */
			ip = sp ? stack[--sp] : RND_BASE + (u64)rnd(RND_SLOTS) * RND_SLOT;
			if (hw_len) {
				hw_top = (hw_top + 63) % 64;
				hw_len--;
				bits[nb++] = 'T';
			} else {
				bits[nb] = 0;
				if (nb)
					syn_tnt(t, bits);
				nb = 0;
				syn_ip(t, PTPK_TIP, ip);
			}
		} else if (p[0] == 0x0f) {
			bool taken = rnd(3) != 0;

			memcpy(&rel, p + 2, 4);
			ip += 6 + (taken ? (u64)(s64)rel : 0);
			bits[nb++] = taken ? 'T' : 'N';
		} else {
			memcpy(&rel, p + 1, 4);
			if (p[0] == 0xe8) {
				if (sp == ARRAY_SIZE(stack))
					break;
				stack[sp++] = ip + 5;
				hw_top = (hw_top + 1) % 64;
				hw[hw_top] = ip + 5;
				hw_len += hw_len < 64;
			}
			ip += 5 + (u64)(s64)rel;
		}
		if (nb == max) {
			bits[nb] = 0;
			syn_tnt(t, bits);
			nb = 0;
			if (rnd_fups && !rnd(8))
				syn_ip(t, PTPK_FUP, RND_BASE + (u64)rnd(RND_SLOTS) * RND_SLOT);
			if (rnd_fups && !rnd(8)) {
				for (u32 i = 0; i < max; i++)
					bits[i] = rnd(2) ? 'T' : 'N';
				syn_tnt(t, bits);
			}
		}
	}
	bits[nb] = 0;
	if (nb)
		syn_tnt(t, bits);
	(void)hw;
}

/*
 * The bitmap-only walk takes 16 TNT bits at a time from a cache of chunks
 * (struct tchunk in ptcov.c): through conditional branches, direct jumps,
 * calls, and returns to what the chunk itself pushed or the stack held. On random code and
 * flows (deep call chains among them, past the 64-deep return stack), window
 * after window (the chunks built in the first and used in the later ones),
 * it must reach exactly what the edge-listing walk, which has no chunks,
 * reaches: every bitmap byte, block and hit count, touched entry, count.
 */
static void test_byte_cache(void **state)
{
	static struct syn_trace t;
	u64 bits = 0;

	for (int round = 0; round < 300; round++) {
		struct ptcov *c = make_cfg(0, 256, 1024), *ref = make_cfg(0, 256, 1024);
		const u8 *mc, *mr;
		u32 zc, zr, nc, nr;

		random_code(round % 3 == 0 ? 6 : 2);
		random_run(&t, 200 + rnd(3000), round % 4 != 0);
		ptcov_set_edge_list(c, false);
		for (int w = 0; w < 3; w++) {
			ptcov_clear(c);
			ptcov_clear(ref);
			if (w == 2) {
				/* in two pieces, cut at a random byte */
				size_t cut = rnd((u32)t.len);

				ptcov_feed(c, t.buf, cut);
				ptcov_feed(c, t.buf + cut, t.len - cut);
			} else {
				feed(c, &t);
			}
			feed(ref, &t);
			ptcov_end_stream(c);
			ptcov_end_stream(ref);
			mc = ptcov_bitmap(c, &zc);
			mr = ptcov_bitmap(ref, &zr);
			assert_memory_equal(mc, mr, zc);
			/* the same entries and blocks; the chunks' come later in the lists */
			(void)ptcov_bitmap_touched(c, &nc);
			(void)ptcov_bitmap_touched(ref, &nr);
			assert_int_equal(nc, nr);
			assert_int_equal(check_touched(c), nc);
			assert_int_equal(ptcov_get_stats(c)->blocks, ptcov_get_stats(ref)->blocks);
			for (size_t i = 0; i < ptcov_get_stats(c)->blocks; i++) {
				const struct ptcov_block *bc = ptcov_block(c, i), *br = NULL;

				for (size_t j = 0; !br && j < ptcov_get_stats(ref)->blocks; j++)
					if (ptcov_block(ref, j)->start == bc->start)
						br = ptcov_block(ref, j);
				assert_non_null(br);
				assert_memory_equal(bc, br, sizeof(*bc));
			}
			assert_memory_equal(ptcov_get_stats(c)->gaps, ptcov_get_stats(ref)->gaps,
					    sizeof(ptcov_get_stats(c)->gaps));
			assert_int_equal(ptcov_get_stats(c)->transitions,
					 ptcov_get_stats(ref)->transitions);
			assert_int_equal(ptcov_get_stats(c)->insns, ptcov_get_stats(ref)->insns);
			assert_int_equal(ptcov_get_stats(c)->tnt_bits, ptcov_get_stats(ref)->tnt_bits);
			assert_int_equal(ptcov_get_stats(c)->edges, 0);
		}
		bits += ptcov_get_stats(c)->tnt_bits;
		ptcov_destroy(c);
		ptcov_destroy(ref);
	}
	/* the flows are long enough to take many bytes */
	assert_true(bits > 300 * 500);
}

/*
 * A chunk goes on through direct branches after its last bit only where the
 * walk would: with more bits pending. A loop's eighth bit leaves it for a
 * JMP, and the stream ends there: the JMP's block is not counted (nothing
 * says it ran), whether the chunk was built with the JMP's successor cached
 * or not.
 */
/*
 * Window @warm (it caches the successors a chunk needs), then window @t,
 * each decoded by @c (the bitmap only, its chunks) and by @ref (the edge
 * list, no chunks), each stream ended: the same reached, and the same gaps.
 */
static void warm_then_check(struct ptcov *c, struct ptcov *ref, const struct syn_trace *warm,
			    const struct syn_trace *t)
{
	ptcov_set_edge_list(c, false);
	for (int w = 0; w < 2; w++) {
		const struct syn_trace *tr = w ? t : warm;

		ptcov_clear(c);
		ptcov_clear(ref);
		feed(c, tr);
		feed(ref, tr);
		ptcov_end_stream(c);
		ptcov_end_stream(ref);
		check_same_but_edges(c, ref);
		assert_memory_equal(ptcov_get_stats(c)->gaps, ptcov_get_stats(ref)->gaps,
				    sizeof(ptcov_get_stats(c)->gaps));
	}
}

/*
 * A chunk that calls and returns inside itself leaves the return stack as it
 * was, but the walk's push on a full 64-deep stack drops its oldest entry,
 * which the pop does not bring back: such a chunk is used only where the
 * stack has room. 64 calls deep, a call and return inside one chunk, then 64
 * RETs: the walk predicts 63 of them and loses its way at the last.
 */
static void test_byte_cache_full_return_stack(void **state)
{
	struct syn_trace warm, t;
	struct ptcov *c = make(), *ref = make();
	char bits[48];
	u8 *p;

	memset(code_r, 0xcc, sizeof(code_r));
	p = put_rel32(code_r, 0x0f, 0x85, 1);	/* A: jnz B */
	p = put_rel32(p, 0xe8, -1, 0);		/* call A */
	*p = 0xc3;				/* ret */
	p = put_rel32(code_r + RND_SLOT, 0xe8, -1, 2);	/* B: call C */
	p = put_rel32(p, 0x0f, 0x85, 1);	/* jnz B */
	*p = 0xc3;				/* ret */
	code_r[2 * RND_SLOT] = 0xc3;		/* C: ret */
	code.r[2] = (struct syn_region){ RND_BASE, code_r, sizeof(code_r) };
	syn_start(&warm, RND_BASE);
	warm.tnt64 = true;
	syn_tnt(&warm, "TTN");			/* B's call, C's ret, B's jnz cached */
	syn_start(&t, RND_BASE);
	t.tnt64 = true;
	/*
	 * 64 calls deep: 34 results, then 30 and the rest in one packet, so
	 * that a chunk (three of A's bits, two calls) starts at A's taken
	 * branch: B, C's RET, B's JNZ not taken, B's RET. Then 63 RETs.
	 */
	memset(bits, 'N', 34);
	bits[34] = 0;
	syn_tnt(&t, bits);
	memset(bits, 'N', 30);
	memcpy(bits + 30, "TTNT", 4);
	memset(bits + 34, 'T', 13);
	bits[47] = 0;
	syn_tnt(&t, bits);
	memset(bits, 'T', 47);
	syn_tnt(&t, bits);
	bits[3] = 0;
	syn_tnt(&t, bits);
	warm_then_check(c, ref, &warm, &t);
	assert_int_equal(ptcov_get_stats(c)->gaps[PTCOV_GAP_DESYNC], 1);
	ptcov_destroy(c);
	ptcov_destroy(ref);
}

static void test_byte_cache_stops_at_last_bit(void **state)
{
	struct syn_trace warm, t;
	struct ptcov *c = make(), *ref = make();
	u8 *p = code_r;

	memset(code_r, 0xcc, sizeof(code_r));
	p = put_rel32(p, 0x0f, 0x85, 0);	/* slot 0: jnz slot 0 */
	put_rel32(p, 0xe9, -1, 1);		/* jmp slot 1 */
	p = code_r + RND_SLOT;
	p = put_rel32(p, 0x0f, 0x85, 1);	/* slot 1: jnz slot 1 */
	put_rel32(p, 0xe9, -1, 0);
	code.r[2] = (struct syn_region){ RND_BASE, code_r, sizeof(code_r) };
	syn_start(&warm, RND_BASE);
	warm.tnt64 = true;
	syn_tnt(&warm, "TTTTTTTNT");	/* the JMP to slot 1 cached */
	syn_start(&t, RND_BASE);
	t.tnt64 = true;
	syn_tnt(&t, "TTTTTTTN");
	warm_then_check(c, ref, &warm, &t);
	/* slot 0 entered 8 times; the JMP block after it not counted */
	assert_int_equal(ptcov_get_stats(c)->blocks, 1);
	assert_int_equal(ptcov_block(c, 0)->hits, 8);
	ptcov_destroy(c);
	ptcov_destroy(ref);
}

/*
 * A chunk may pop return addresses the stack held before it, checked when it
 * is taken, and the walk's stack is left as a block-by-block walk leaves it.
 * A calls B; B loops, then returns to A, whose own RET then takes a bit with
 * the stack empty: a desync, where a stack left one entry too deep would pop
 * a stale address.
 */
static void test_byte_cache_pops_older_calls(void **state)
{
	struct syn_trace warm, t;
	struct ptcov *c = make(), *ref = make();
	u8 *p;

	memset(code_r, 0xcc, sizeof(code_r));
	p = put_rel32(code_r, 0xe8, -1, 1);	/* A: call B */
	*p = 0xc3;				/* ret */
	p = put_rel32(code_r + RND_SLOT, 0x0f, 0x85, 1);	/* B: jnz B */
	*p = 0xc3;				/* ret */
	code.r[2] = (struct syn_region){ RND_BASE, code_r, sizeof(code_r) };
	/* every successor cached, with other bits than the window after */
	syn_start(&warm, RND_BASE);
	warm.tnt64 = true;
	syn_tnt(&warm, "TTTTNT");
	syn_start(&t, RND_BASE);
	t.tnt64 = true;
	syn_tnt(&t, "TTTNTT");	/* B's loop, B's RET (a chunk), A's RET */
	warm_then_check(c, ref, &warm, &t);
	assert_int_equal(ptcov_get_stats(c)->gaps[PTCOV_GAP_DESYNC], 1);
	ptcov_destroy(c);
	ptcov_destroy(ref);
}

/*
 * The same bitmap, blocks, counts and gaps, in any order: the bitmap-only mode
 * lists a chunk's blocks when the call that fed its bytes returns.
 */
static void check_same_any_order(const struct ptcov *a, const struct ptcov *b)
{
	const struct ptcov_stats *sa = ptcov_get_stats(a), *sb = ptcov_get_stats(b);
	u32 za, zb, na, nb;
	const u8 *ma = ptcov_bitmap(a, &za), *mb = ptcov_bitmap(b, &zb);

	assert_int_equal(za, zb);
	assert_memory_equal(ma, mb, za);
	(void)ptcov_bitmap_touched(a, &na);
	(void)ptcov_bitmap_touched(b, &nb);
	assert_int_equal(na, nb);
	assert_int_equal(sa->blocks, sb->blocks);
	for (size_t i = 0; i < sa->blocks; i++) {
		const struct ptcov_block *x = ptcov_block(a, i), *y = NULL;

		for (size_t j = 0; !y && j < sb->blocks; j++)
			if (ptcov_block(b, j)->start == x->start)
				y = ptcov_block(b, j);
		assert_non_null(y);
		assert_memory_equal(x, y, sizeof(*x));
	}
	assert_int_equal(sa->tnt_bits, sb->tnt_bits);
	assert_int_equal(sa->transitions, sb->transitions);
	assert_int_equal(sa->insns, sb->insns);
	assert_memory_equal(sa->gaps, sb->gaps, sizeof(sa->gaps));
}

/*
 * Fed whole, the walk takes the TNT-64s that follow the one it walks from the
 * buffer itself (tnt_pull() in ptcov.c); fed a byte at a time, each packet
 * comes through packet() on its own. On random code and flows (call chains
 * past the 64-deep return stack; in half of them, events' FUPs between TNTs
 * with no TIP after them), both modes, window after window: the same blocks,
 * edges, bitmap, counts, gaps and packets.
 */
static void test_tnt_pull(void **state)
{
	static struct syn_trace t;
	u64 packets = 0;

	for (int round = 0; round < 120; round++) {
		bool edges = round & 1;
		struct ptcov *whole = make_cfg(0, 256, 1024), *bytes = make_cfg(0, 256, 1024);

		random_code(round % 3 == 0 ? 6 : 2);
		rnd_fups = round & 2;
		random_run(&t, 200 + rnd(3000), true);
		rnd_fups = false;
		ptcov_set_edge_list(whole, edges);
		ptcov_set_edge_list(bytes, edges);
		for (int w = 0; w < 2; w++) {
			ptcov_clear(whole);
			ptcov_clear(bytes);
			feed(whole, &t);
			for (size_t i = 0; i < t.len; i++)
				ptcov_feed(bytes, t.buf + i, 1);
			ptcov_end_stream(whole);
			ptcov_end_stream(bytes);
			if (edges)
				check_same(whole, bytes);
			else
				check_same_any_order(whole, bytes);
			assert_int_equal(ptcov_get_stats(whole)->packets, ptcov_get_stats(bytes)->packets);
			/* a gap in a TNT-64 the walk took says where that packet is */
			assert_int_equal(ptcov_get_stats(whole)->gap_off, ptcov_get_stats(bytes)->gap_off);
			if (!(round & 2))	/* a desync skips to the next PSB */
				assert_int_equal(ptcov_get_stats(whole)->packets, t.npackets);
		}
		packets += t.npackets;
		ptcov_destroy(whole);
		ptcov_destroy(bytes);
	}
	assert_true(packets > 120 * 20);
}

/* The code changes (XOR EAX,EAX becomes two NOPs): the cache keeps the old
 * block until ptcov_flush_code() */
static void test_flush_code(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make();
	u64 decodes;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(c, &t);
	code_a[0] = code_a[1] = 0x90;
	ptcov_clear(c);
	feed(c, &t);
	assert_int_equal(ptcov_block(c, 0)->ninsn, 5);
	ptcov_flush_code(c);
	ptcov_clear(c);
	decodes = ptcov_get_stats(c)->block_decodes;
	feed(c, &t);
	assert_int_equal(ptcov_block(c, 0)->ninsn, 6);
	assert_int_equal(ptcov_get_stats(c)->block_decodes - decodes, WALK_DECODED);
	ptcov_destroy(c);
}

/* ------------------------------------------------------------ limits */

static void test_limits(void **state)
{
	struct syn_trace t;
	struct ptcov *c, *full = make();
	const struct ptcov_stats *s;
	u32 size;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	feed(full, &t);

	/* 4 blocks listed; the rest are decoded each time they are entered */
	c = make_cfg(0, 4, 0);
	feed(c, &t);
	s = ptcov_get_stats(c);
	assert_int_equal(s->blocks, 4);
	/* each decode that did not fit the cache: the blocks after the 4th */
	assert_int_equal(s->blocks_dropped, WALK_DECODED - 4);
	check_blocks(c, walk_blocks, 4);
	assert_int_equal(s->transitions, WALK_TRANSITIONS);
	assert_int_equal(s->insns, WALK_INSNS);
	assert_int_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(full));
	ptcov_destroy(c);

	/* 3 edges listed; the bitmap has them all */
	c = make_cfg(0, 0, 3);
	feed(c, &t);
	s = ptcov_get_stats(c);
	assert_int_equal(s->edges, 3);
	assert_int_equal(s->edges_dropped, ARRAY_SIZE(walk_edges) - 3);
	check_edges(c, walk_edges, 3);
	check_blocks(c, walk_blocks, ARRAY_SIZE(walk_blocks));
	assert_int_equal(ptcov_bitmap_digest(c), ptcov_bitmap_digest(full));
	ptcov_destroy(c);

	/* a small bitmap: its size, every hit still counted somewhere */
	c = make_cfg(256, 0, 0);
	feed(c, &t);
	ptcov_bitmap(c, &size);
	assert_int_equal(size, 256);
	{
		u64 sum;

		assert_true(nonzero(c, &sum) > 0);
		assert_true(sum >= ARRAY_SIZE(walk_edges));
	}
	ptcov_destroy(c);
	ptcov_destroy(full);
}

static void test_invalid_config(void **state)
{
	static const u32 bad_sizes[] = { 3, 1000, 65535, 65537, 0x80000001u };
	struct ptcov_config cfg = { .read = syn_read, .read_ctx = &code };

	for (size_t i = 0; i < ARRAY_SIZE(bad_sizes); i++) {
		cfg.bitmap_size = bad_sizes[i];
		assert_null(ptcov_create(&cfg, GFP_KERNEL));
	}
	cfg.bitmap_size = 0;
	cfg.read = NULL;
	assert_null(ptcov_create(&cfg, GFP_KERNEL));
	ptcov_destroy(NULL);
	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		assert_non_null(ptcov_gap_name(g));
}

/* ------------------------------------------------------------ bad input */

/* the counts hold together whatever came in */
static void check_consistent(const struct ptcov *c, u64 fed)
{
	const struct ptcov_stats *s = ptcov_get_stats(c);
	u64 hits = 0, insns = 0;
	size_t ne;
	const struct ptcov_edge *e = ptcov_edges(c, &ne);

	assert_int_equal(s->bytes, fed);
	assert_int_equal(ne, s->edges);
	check_touched(c);
	for (size_t i = 0; i < s->blocks; i++) {
		const struct ptcov_block *b = ptcov_block(c, i);

		assert_true(b->start < b->end);
		assert_true(b->ninsn >= 1 && b->ninsn <= b->end - b->start);
		assert_true(b->hits >= 1);
		hits += b->hits;
		insns += (u64)b->hits * b->ninsn;
	}
	if (!s->blocks_dropped) {
		assert_int_equal(hits, s->transitions);
		assert_int_equal(insns, s->insns);
	}
	for (size_t i = 0; i < ne; i++)
		assert_true(e[i].hits >= 1);
}

/* Every prefix of the walk, every one-bit flip of it, and random bytes:
 * nothing breaks (ASan, UBSan) and the counts stay consistent; random bytes
 * fed in pieces give what they give fed whole. */
static void test_bad_input(void **state)
{
	struct syn_trace t;
	struct ptcov *c = make(), *c2 = make();
	u8 buf[sizeof(t.buf)];

	syn_init(&t);
	t.timing = true;
	syn_walk(&t, true, true, true);
	for (size_t n = 0; n <= t.len; n++) {
		ptcov_clear(c);
		ptcov_begin_stream(c);
		ptcov_feed(c, t.buf, n);
		check_consistent(c, n);
	}
	for (size_t bit = 0; bit < t.len * 8; bit++) {
		memcpy(buf, t.buf, t.len);
		buf[bit / 8] ^= (u8)(1u << (bit % 8));
		ptcov_clear(c);
		ptcov_begin_stream(c);
		ptcov_feed(c, buf, t.len);
		check_consistent(c, t.len);
	}
	for (int round = 0; round < 200; round++) {
		size_t n = hosted_rand(&rng) % sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = (u8)hosted_rand(&rng);
		/* some PSBs, so the decoder syncs and walks, some after the start
		 * of one that is not (02 82, then other bytes) */
		for (size_t i = 0; i + 24 < n; i += 1 + hosted_rand(&rng) % 512) {
			size_t at = i;

			if (hosted_rand(&rng) & 1) {
				buf[at] = 0x02;
				buf[at + 1] = 0x82;
				at += 2 + hosted_rand(&rng) % 7;
			}
			for (int k = 0; k < 16; k++)
				buf[at + k] = k & 1 ? 0x82 : 0x02;
		}
		ptcov_clear(c);
		ptcov_begin_stream(c);
		ptcov_feed(c, buf, n);
		check_consistent(c, n);
		/* in pieces: the same, bad packets cut between two feeds too */
		ptcov_clear(c2);
		ptcov_begin_stream(c2);
		for (size_t i = 0; i < n;) {
			size_t k = 1 + hosted_rand(&rng) % 24;

			k = k > n - i ? n - i : k;
			ptcov_feed(c2, buf + i, k);
			i += k;
		}
		check_same_stats(c, c2);
	}
	ptcov_destroy(c);
	ptcov_destroy(c2);
}

/*
 * A CYC whose Exp bit says "more" in every byte: not a packet once past
 * PTPK_MAX_SIZE bytes (libipt's CYC payload limit is 15). Fed whole or cut
 * anywhere, the decoder neither writes past its carry buffer (ASan) nor
 * loses its count of bytes; a PSB afterwards syncs again.
 */
static void test_long_cyc(void **state)
{
	struct syn_trace t;
	u8 buf[512];
	size_t n;

	syn_init(&t);
	syn_psb(&t, 0);
	memcpy(buf, t.buf, t.len);
	n = t.len;
	buf[n++] = 0x07;		/* CYC, Exp set */
	memset(buf + n, 0xff, 100);	/* every byte Exp set */
	n += 100;
	syn_init(&t);
	syn_walk(&t, true, false, false);
	memcpy(buf + n, t.buf, t.len);
	n += t.len;
	for (size_t cutat = 0; cutat <= n; cutat += 7) {
		struct ptcov *c = make();

		ptcov_feed(c, buf, cutat);
		ptcov_feed(c, buf + cutat, n - cutat);
		check_consistent(c, n);
		assert_int_equal(ptcov_get_stats(c)->gaps[PTCOV_GAP_DESYNC], 1);
		check_edges(c, walk_edges, ARRAY_SIZE(walk_edges));
		ptcov_destroy(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_walk, setup),
		cmocka_unit_test_setup(test_walk_encodings, setup),
		cmocka_unit_test_setup(test_ip_compression, setup),
		cmocka_unit_test_setup(test_pieces, setup),
		cmocka_unit_test_setup(test_bitmap_mutation, setup),
		cmocka_unit_test_setup(test_loop_counts, setup),
		cmocka_unit_test_setup(test_ret_compression_nested, setup),
		cmocka_unit_test_setup(test_ret_bit_without_call, setup),
		cmocka_unit_test_setup(test_gap_lost, setup),
		cmocka_unit_test_setup(test_gap_ovf, setup),
		cmocka_unit_test_setup(test_gap_nocode, setup),
		cmocka_unit_test_setup(test_gap_badinsn, setup),
		cmocka_unit_test_setup(test_gap_desync, setup),
		cmocka_unit_test_setup(test_gap_loop, setup),
		cmocka_unit_test_setup(test_interrupt_and_disable, setup),
		cmocka_unit_test_setup(test_end_stream, setup),
		cmocka_unit_test_setup(test_begin_stream, setup),
		cmocka_unit_test_setup(test_clear_keeps_code, setup),
		cmocka_unit_test_setup(test_bitmap_only, setup),
		cmocka_unit_test_setup(test_byte_cache, setup),
		cmocka_unit_test_setup(test_byte_cache_stops_at_last_bit, setup),
		cmocka_unit_test_setup(test_byte_cache_pops_older_calls, setup),
		cmocka_unit_test_setup(test_tnt_pull, setup),
		cmocka_unit_test_setup(test_byte_cache_full_return_stack, setup),
		cmocka_unit_test_setup(test_flush_code, setup),
		cmocka_unit_test_setup(test_limits, setup),
		cmocka_unit_test_setup(test_invalid_config, setup),
		cmocka_unit_test_setup(test_bad_input, setup),
		cmocka_unit_test_setup(test_long_cyc, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
