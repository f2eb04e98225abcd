// SPDX-License-Identifier: MIT
/*
 * The coverage decoder (include/topaz/ptcov.h) against libipt on containers
 * the hosted build writes: trace_test_enc.h's program (main, foo, bar; a
 * loop, calls, returns, a conditional both ways), its packets written with
 * libipt's encoder, framed by the kernel's writer with the code as a
 * sideband image. ptdecode's checker (covcheck.c) runs the decoder and the
 * libipt reference on it: the same blocks and edges, counted by hand below.
 * Then the same trace twice with bytes lost between (the second run reached
 * with no edge into it), cut in the middle of a packet between two records,
 * and with one TNT bit flipped in the container, its CRCs re-sealed: the
 * decoder must see another flow (its edge counts and bitmap digest change)
 * and still agree with libipt on it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <topaz/ptcov.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"

#define BASE 0x401000ull

static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };

/* One trace record: @size bytes of @data at stream offset @offset. */
struct chunk {
	const u8 *data;
	size_t size;
	u64 offset, lost;
};

static void make_container_of(struct membuf *m, const u8 *bytes, size_t size, const struct chunk *ch,
			      size_t n)
{
	static const char names[] = "main\0foo\0bar";
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR };
	struct trace_sink sink = { membuf_write, m };
	struct trace_totals t = { 0 };
	struct trace_writer w;
	struct tpz_header h;

	sample_header(&h);
	h.load_address = 0;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, bytes, size), 0);
	assert_int_equal(trace_write_symbols(&w, "demo", BASE, syms, 3, names, sizeof(names)), 0);
	for (size_t i = 0; i < n; i++) {
		struct trace_chunk c = { .flags = ch[i].lost ? TPZ_TRACE_LOST : 0,
					 .offset = ch[i].offset, .lost = ch[i].lost };

		assert_int_equal(trace_write_trace(&w, &c, ch[i].data, ch[i].size), 0);
	}
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* A container of the demo program with the trace @ch[0..@n). */
static void make_container(struct membuf *m, const struct chunk *ch, size_t n)
{
	make_container_of(m, code, sizeof(code), ch, n);
}

/* The demo's run: enabled at main, disabled by its jmp rax (@tnt: its TNT groups). */
static size_t demo_window(u8 *out, const char *const *tnt)
{
	return enc_window(out, BASE, tnt);
}

static const char *const demo_tnt[] = { DEMO_TNT_MAIN, NULL };

/* What the checker found in the container @m; the decoder's edges into
 * @edges (at most @max), ordered as it lists them. */
struct checked {
	struct ptd_covcheck res;
	struct ptd_covref ref;
	struct ptcov_edge edges[32];
	size_t nedges;
	u32 digest;
	unsigned long errors;
};

static void check(const struct membuf *m, struct checked *k)
{
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_consumer cons;
	const struct ptcov_edge *e;
	struct ptcov *cov;
	char *report;
	size_t n, len;
	FILE *out;

	memset(k, 0, sizeof(*k));
	parse_with_image(&c, &img, "cov.tpz", m);
	ptd_ctx_init(&x, &c, &img);
	ptd_covref_init(&k->ref, &img);
	cons = (struct ptd_consumer){ ptd_covref_event, &k->ref };
	k->errors = ptd_decode_flow(&x, &cons, 1);
	/* the checker's report only when it finds a difference */
	out = open_memstream(&report, &len);
	assert_non_null(out);
	ptd_coverage_check(&x, &k->ref, out, 20, &k->res);
	fclose(out);
	if (!k->res.match)
		fprintf(stderr, "%s", report);
	free(report);
	assert_true(k->res.match);
	cov = ptd_coverage_run(&x, 0, false);
	assert_non_null(cov);
	k->digest = ptcov_bitmap_digest(cov);
	assert_int_equal(k->digest, k->res.digest);
	e = ptcov_edges(cov, &n);
	assert_true(n <= ARRAY_SIZE(k->edges));
	memcpy(k->edges, e, n * sizeof(*e));
	k->nedges = n;
	ptcov_destroy(cov);
	free_with_image(&x, &img, &c);
}

static void checked_free(struct checked *k)
{
	ptd_covref_free(&k->ref);
}

/* The reference's block at BASE + @off: entries, instructions, end. */
static void block_is(const struct ptd_covref *r, unsigned int off, u64 hits, u32 ninsn,
		     unsigned int end)
{
	for (size_t i = 0; i < r->nblocks; i++) {
		if (r->blocks[i].start != BASE + off)
			continue;
		assert_int_equal(r->blocks[i].hits, hits);
		assert_int_equal(r->blocks[i].ninsn, ninsn);
		assert_int_equal(r->blocks[i].end, BASE + end);
		return;
	}
	fail_msg("no block at +%#x", off);
}

/* Times the decoder took the edge BASE + @from -> BASE + @to (0: never). */
static u64 edge_hits(const struct checked *k, unsigned int from, unsigned int to)
{
	for (size_t i = 0; i < k->nedges; i++)
		if (k->edges[i].from == BASE + from && k->edges[i].to == BASE + to)
			return k->edges[i].hits;
	return 0;
}

/*
 * The demo's blocks: main's start (mov, call foo), foo's call bar, bar's test
 * and jz, the nop and ret after a jz not taken, the ret alone after one
 * taken, foo's ret, main's dec and jnz, the call foo the jnz goes back to,
 * the call bar after the loop, the jmp rax: ten, entered 22 times; twelve
 * edges, taken 21 times (every entry but the first).
 */
static void test_demo(void **state)
{
	struct membuf m = { 0 };
	struct chunk ch = { 0 };
	struct checked k;
	u8 pt[256];

	ch.data = pt;
	ch.size = demo_window(pt, demo_tnt);
	make_container(&m, &ch, 1);
	check(&m, &k);
	assert_int_equal(k.errors, 0);
	assert_true(k.res.match);
	assert_int_equal(k.res.ref_blocks, 10);
	assert_int_equal(k.res.ref_edges, 12);
	assert_int_equal(k.res.open, 0);
	assert_int_equal(k.ref.transitions, 22);
	block_is(&k.ref, 0x00, 1, 2, 0x0a);
	block_is(&k.ref, 0x30, 4, 2, 0x38);
	block_is(&k.ref, 0x38, 2, 2, 0x3a);
	block_is(&k.ref, 0x39, 2, 1, 0x3a);
	block_is(&k.ref, 0x13, 1, 1, 0x15);
	assert_int_equal(edge_hits(&k, 0x30, 0x38), 2);	/* jz not taken */
	assert_int_equal(edge_hits(&k, 0x30, 0x39), 2);	/* jz taken */
	assert_int_equal(edge_hits(&k, 0x39, 0x13), 1);	/* bar's ret to the jmp rax */
	assert_int_equal(edge_hits(&k, 0x13, 0x00), 0);
	checked_free(&k);
	membuf_free(&m);
}

/*
 * The run twice, 8 bytes lost between: two segments, each decoded from its
 * PSB. Every block entered twice as often; no edge from the first run's jmp
 * rax into the second's start (the flow was cut).
 */
static void test_gap_cuts_the_flow(void **state)
{
	struct membuf m = { 0 };
	struct chunk ch[2];
	struct checked k;
	u8 pt[256];
	size_t n = demo_window(pt, demo_tnt);

	ch[0] = (struct chunk){ pt, n, 0, 0 };
	ch[1] = (struct chunk){ pt, n, n + 8, 8 };
	make_container(&m, ch, 2);
	check(&m, &k);
	assert_true(k.res.match);
	assert_int_equal(k.res.ref_blocks, 10);
	assert_int_equal(k.res.ref_edges, 12);
	assert_int_equal(k.ref.transitions, 44);
	assert_int_equal(k.ref.cuts[PTD_EV_SEGMENT], 2);
	assert_int_equal(edge_hits(&k, 0x30, 0x38), 4);
	assert_int_equal(edge_hits(&k, 0x13, 0x00), 0);
	checked_free(&k);
	membuf_free(&m);
}

/* The run in two records, cut inside a packet (the TIP.PGE's IP): one
 * segment, which the decoder is fed record by record. */
static void test_packet_across_records(void **state)
{
	struct membuf m = { 0 };
	struct chunk ch[2];
	struct checked k;
	u8 pt[256];
	size_t n = demo_window(pt, demo_tnt), cut = 16 + 2 + 2 + 3;

	ch[0] = (struct chunk){ pt, cut, 0, 0 };
	ch[1] = (struct chunk){ pt + cut, n - cut, cut, 0 };
	make_container(&m, ch, 2);
	check(&m, &k);
	assert_true(k.res.match);
	assert_int_equal(k.ref.cuts[PTD_EV_SEGMENT], 1);
	assert_int_equal(k.ref.transitions, 22);
	checked_free(&k);
	membuf_free(&m);
}

/* Where the first TNT-8 packet with a not-taken bit is (ptd_scan_packets()). */
struct tnt_find {
	bool found;
	const struct ptd_segment *seg;
	u64 seg_off;
	u8 bit;		/* in the packet's byte */
};

static void find_tnt(void *ctx, const struct ptd_packet *p, int err)
{
	struct tnt_find *f = ctx;
	const struct pt_packet_tnt *t;

	/* (a segment's start comes with no packet) */
	if (err < 0 || f->found || !p->pkt || p->pkt->type != ppt_tnt_8)
		return;
	t = &p->pkt->payload.tnt;
	/* the payload's bit k is the packet byte's bit k + 1 (bit 0 is the
	 * header's, the highest set bit the stop bit) */
	for (u8 k = 0; k < t->bit_size; k++) {
		if (t->payload & (1ull << k))
			continue;
		*f = (struct tnt_find){ true, p->seg, p->seg_off, (u8)(k + 1) };
		return;
	}
}

/*
 * Flip a not-taken TNT bit of @m's trace to taken, in the container's bytes,
 * and re-seal the record's CRCs: the container reads as intact.
 */
static void flip_tnt_bit(struct membuf *m)
{
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct tnt_find f = { 0 };
	u64 rec_off, file_off;
	u32 seq;

	parse_with_image(&c, &img, "cov.tpz", m);
	ptd_ctx_init(&x, &c, &img);
	ptd_scan_packets(&x, find_tnt, &f, false);
	assert_true(f.found);
	ptd_segment_where(f.seg, f.seg_off, &seq, &rec_off, &file_off);
	assert_true(!(m->p[file_off] & (1u << f.bit)));
	m->p[file_off] |= (u8)(1u << f.bit);
	reseal(m->p, rec_off);
	free_with_image(&x, &img, &c);
}

/*
 * One TNT bit flipped: bar's first jz (not taken: the nop ran) now taken.
 * libipt and the decoder both follow the other path, and agree on it; the
 * decoder's edges and bitmap are not what they were.
 */
static void test_flipped_tnt_bit(void **state)
{
	struct membuf m = { 0 };
	struct chunk ch = { 0 };
	struct checked before, after;
	struct ptd_container c;
	u8 pt[256];

	ch.data = pt;
	ch.size = demo_window(pt, demo_tnt);
	make_container(&m, &ch, 1);
	check(&m, &before);
	flip_tnt_bit(&m);
	/* still intact: both CRCs of the record match again */
	assert_int_equal(ptd_container_parse(&c, "cov.tpz", m.p, m.len), 0);
	ptd_container_free(&c);
	check(&m, &after);
	assert_int_equal(after.errors, 0);
	assert_true(after.res.match);
	assert_int_equal(edge_hits(&before, 0x30, 0x38), 2);
	assert_int_equal(edge_hits(&after, 0x30, 0x38), 1);
	assert_int_equal(edge_hits(&after, 0x30, 0x39), 3);
	assert_int_not_equal(before.digest, after.digest);
	checked_free(&before);
	checked_free(&after);
	membuf_free(&m);
}

/*
 * A TIP the trace unit deferred (the SDM's "Deferred TIPs"): one TNT holds
 * the results of a JNZ before a JMP RDX and of a JNZ after it, then comes
 * the JMP's TIP. Valid trace: libipt keeps the second bit for the second
 * JNZ, and so must the decoder (it used to call the bit left at the JMP a
 * desync and lose the flow until the next PSB).
 */
static void test_deferred_tip(void **state)
{
	static const u8 prog[0x20] = {
		[0x00] = 0x75, 0x02,		/* jnz +2: not taken */
		[0x02] = 0xff, 0xe2,		/* jmp rdx: to +0x10 */
		[0x04 ... 0x0f] = 0xcc,
		[0x10] = 0x75, 0x02,		/* jnz +2: taken */
		[0x12] = 0xcc, 0xcc,
		[0x14] = 0xff, 0xe0,		/* jmp rax: out (TIP.PGD) */
		[0x16 ... 0x1f] = 0xcc,
	};
	struct membuf m = { 0 };
	struct chunk ch = { 0 };
	struct checked k;
	struct enc e;

	enc_init(&e);
	put_start(&e, BASE);
	put_tnt(&e, ".!");
	put_ip(&e, ppt_tip, pt_ipc_update_16, BASE + 0x10);
	put_ip(&e, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	ch.size = enc_done(&e);
	ch.data = e.buf;
	make_container_of(&m, prog, sizeof(prog), &ch, 1);
	check(&m, &k);
	assert_int_equal(k.errors, 0);
	assert_true(k.res.match);
	assert_int_equal(k.res.ref_blocks, 4);
	assert_int_equal(edge_hits(&k, 0x02, 0x10), 1);
	assert_int_equal(edge_hits(&k, 0x10, 0x14), 1);
	checked_free(&k);
	membuf_free(&m);
}

/*
 * A segment that ends where the trace unit stopped with its output full (as
 * in trace-stop-loss), after the jz's bit (not taken: into the nop's block),
 * then bytes lost, then the whole run again. What the segment ends with:
 */
enum seg_end {
	END_CLEAN,	/* the jz's TNT: the flow is known up to the jz */
	END_FUP_START,	/* an interrupt's FUP at the nop, its TIP lost */
	END_FUP_INSIDE,	/* the same FUP after the nop */
	END_CUT,	/* the first 2 bytes of a TIP: the flow runs on */
	END_CUT_EXT,	/* a TNT-64's first byte: no kind yet, as if clean */
	END_CUT_EXT2,	/* its first 2 bytes: the flow runs on */
	END_ENABLED,	/* TIP.PGE at main, no more: main's block not counted */
};

/*
 * libipt's flow ends at the last branch a packet decided when nothing but
 * whole packets follow (no more trace, or an event whose other packets were
 * lost); after a packet cut short, it runs on to the branch that needs one.
 * The decoder does the same: the nop's block is entered twice, or three
 * times when the trace ends inside a packet. Without the rule, the decoder
 * counted the nop's block once more than libipt (trace-stop-loss failed
 * 5 boots in 12).
 */
static void seg_end_is(enum seg_end end, u64 hits_38)
{
	static const u8 cut_tip[] = { 0x4d, 0x39 }, cut_tnt64[] = { 0x02, 0xa3 };
	struct membuf m = { 0 };
	struct chunk ch[2];
	struct checked k;
	struct enc e;
	u8 pt[256], first[64];
	size_t n = demo_window(pt, demo_tnt), n1;
	bool seen = false;

	enc_init(&e);
	put_start(&e, BASE);
	if (end != END_ENABLED)
		put_tnt(&e, ".");
	if (end == END_FUP_START || end == END_FUP_INSIDE)
		put_ip(&e, ppt_fup, pt_ipc_update_16, BASE + (end == END_FUP_START ? 0x38 : 0x39));
	n1 = enc_done(&e);
	memcpy(first, e.buf, n1);
	if (end == END_CUT) {
		memcpy(first + n1, cut_tip, sizeof(cut_tip));
		n1 += sizeof(cut_tip);
	} else if (end == END_CUT_EXT || end == END_CUT_EXT2) {
		memcpy(first + n1, cut_tnt64, end == END_CUT_EXT ? 1 : 2);
		n1 += end == END_CUT_EXT ? 1 : 2;
	}
	ch[0] = (struct chunk){ first, n1, 0, 0 };
	ch[1] = (struct chunk){ pt, n, n1 + 8, 8 };
	make_container(&m, ch, 2);
	check(&m, &k);
	assert_true(k.res.match);
	for (size_t i = 0; i < k.ref.nblocks; i++) {
		if (k.ref.blocks[i].start != BASE + 0x38)
			continue;
		assert_int_equal(k.ref.blocks[i].hits, hits_38);
		seen = true;
	}
	assert_true(seen);
	checked_free(&k);
	membuf_free(&m);
}

static void test_segment_end(void **state)
{
	seg_end_is(END_CLEAN, 2);
	seg_end_is(END_FUP_START, 2);
	seg_end_is(END_FUP_INSIDE, 2);
	seg_end_is(END_CUT, 3);
	seg_end_is(END_CUT_EXT, 2);
	seg_end_is(END_CUT_EXT2, 3);
	seg_end_is(END_ENABLED, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demo),
		cmocka_unit_test(test_gap_cuts_the_flow),
		cmocka_unit_test(test_packet_across_records),
		cmocka_unit_test(test_flipped_tnt_bit),
		cmocka_unit_test(test_deferred_tip),
		cmocka_unit_test(test_segment_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
