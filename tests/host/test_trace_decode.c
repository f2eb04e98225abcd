// SPDX-License-Identifier: MIT
/*
 * ptdecode end to end: a small x86-64 program (three functions with calls,
 * returns and a loop with a conditional branch), the PT packets its run
 * produces written with libipt's encoder, wrapped by the kernel's writer with
 * the code as a sideband image and its symbols, then decoded by the library
 * ptdecode runs: the exact instruction sequence, the call tree, the folded
 * stacks, the stats and the packet dump. Then the same with data lost in the
 * middle, with a damaged record, and the ELF loader on this test binary; and
 * the trace with a gap exported as perf.data, which Linux perf decodes to the
 * same instructions.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <elf.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"

#define BASE 0x401000ull

/* main, foo and bar (trace_test_enc.h) */
static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };

/* What the CPU executed (offsets from BASE). */
static const u8 expect_all[] = { DEMO_RUN_MAIN };

/* ------------------------------------------------------------ encoding */

/* The whole run: tracing enabled at main, disabled by the jmp rax. */
static size_t trace_all(u8 *out)
{
	static const char *const tnt[] = { DEMO_TNT_MAIN, NULL };

	return enc_window(out, BASE, tnt);
}

/* ------------------------------------------------------------ container */

/* The three functions' names (a test may give hostile ones: same lengths). */
static const char plain_names[] = "main\0foo\0bar";
static const char *sym_names = plain_names;

static void write_symbols(struct trace_writer *w)
{
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR };

	assert_int_equal(trace_write_symbols(w, "demo", BASE, syms, 3, sym_names, sizeof(plain_names)),
			 0);
}

struct piece {
	const u8 *data;
	size_t size;
	u64 offset, lost;
	u32 flags;
};

static void make_container(struct membuf *m, const struct piece *pieces, size_t n, u64 pmis)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct tpz_header h;
	struct trace_totals t = { .pmis = pmis };

	sample_header(&h);
	h.load_address = 0;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, code, sizeof(code)), 0);
	write_symbols(&w);
	for (size_t i = 0; i < n; i++) {
		struct trace_chunk c = { .flags = pieces[i].flags, .offset = pieces[i].offset,
					 .lost = pieces[i].lost };

		assert_int_equal(trace_write_trace(&w, &c, pieces[i].data, pieces[i].size), 0);
	}
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* ------------------------------------------------------------ decoding */

struct run {
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_stats st;
	struct ptd_calls calls;
	char *tree, *folded, *insn;
	size_t tree_len, folded_len, insn_len;
	u64 ips[128];
	u32 seg_of[128];
	size_t nips;
	unsigned int segments, ends, errors, disabled, enabled;
};

static void record_event(void *ctx, const struct ptd_event *ev)
{
	struct run *r = ctx;

	switch (ev->type) {
	case PTD_EV_INSN:
		assert_true(r->nips < ARRAY_SIZE(r->ips));
		r->seg_of[r->nips] = ev->seg->index;
		r->ips[r->nips++] = ev->ip;
		break;
	case PTD_EV_SEGMENT: r->segments++; break;
	case PTD_EV_END: r->ends++; break;
	case PTD_EV_ERROR: r->errors++; break;
	case PTD_EV_DISABLED: r->disabled++; break;
	case PTD_EV_ENABLED: r->enabled++; break;
	default: break;
	}
}

static int decode(struct run *r, const struct membuf *m)
{
	FILE *tree, *folded, *insn;
	struct ptd_insn_printer ip;
	struct ptd_consumer cons[4];
	int ret;

	memset(r, 0, sizeof(*r));
	ret = parse_with_image(&r->c, &r->img, "demo.tpz", m);
	ptd_ctx_init(&r->x, &r->c, &r->img);
	tree = open_memstream(&r->tree, &r->tree_len);
	folded = open_memstream(&r->folded, &r->folded_len);
	insn = open_memstream(&r->insn, &r->insn_len);
	ptd_stats_init(&r->st, &r->img);
	ptd_calls_init(&r->calls, &r->img, tree);
	ptd_insn_printer_init(&ip, insn, &r->img, false);
	cons[0] = (struct ptd_consumer){ record_event, r };
	cons[1] = (struct ptd_consumer){ ptd_stats_event, &r->st };
	cons[2] = (struct ptd_consumer){ ptd_calls_event, &r->calls };
	cons[3] = (struct ptd_consumer){ ptd_insn_event, &ip };
	ptd_scan_packets(&r->x, ptd_stats_packet, &r->st, false);
	ptd_decode_flow(&r->x, cons, 4);
	ptd_calls_finish(&r->calls);
	ptd_stats_finish(&r->st, &r->x.segs);
	ptd_write_folded(&r->calls, folded);
	ptd_insn_printer_free(&ip);
	fclose(tree);
	fclose(folded);
	fclose(insn);
	return ret;
}

/* The packets written to @e as the one trace chunk of a container in @m, decoded. */
static int decode_packets(struct run *r, struct membuf *m, struct enc *e)
{
	struct piece p = { e->buf, enc_done(e), 0, 0, 0 };

	make_container(m, &p, 1, 0);
	return decode(r, m);
}

static void run_free(struct run *r)
{
	ptd_calls_free(&r->calls);
	ptd_stats_free(&r->st);
	free_with_image(&r->x, &r->img, &r->c);
	free(r->tree);
	free(r->folded);
	free(r->insn);
}

static void check_ips(const struct run *r, size_t from, const u8 *want, size_t n, u32 seg)
{
	check_ips_at(r->ips, r->seg_of, "", from, BASE, want, n, seg);
}

static const char tree_all[] =
	"# cpu 0, segment 0 at stream offset 0x0\n"
	"main() {  /* trace starts in main+0x0 */\n"
	"  foo() {\n"
	"    bar();  /* 4 instructions */\n"
	"  }  /* foo: 6 instructions */\n"
	"  foo() {\n"
	"    bar();  /* 3 instructions */\n"
	"  }  /* foo: 5 instructions */\n"
	"  foo() {\n"
	"    bar();  /* 4 instructions */\n"
	"  }  /* foo: 6 instructions */\n"
	"  bar();  /* 3 instructions */\n"
	"  /* tracing disabled */\n"
	"}  /* main: 32 instructions, trace ends */\n";

static void test_decode_demo(void **state)
{
	u8 pt[128];
	size_t n = trace_all(pt);
	struct membuf m = { 0 };
	struct piece p = { pt, n, 0, 0, 0 };
	struct run r;

	make_container(&m, &p, 1, 2);
	assert_int_equal(decode(&r, &m), 0);
	if (r.c.diags.n)
		ptd_diags_print(&r.c.diags, 0, "demo", stderr);
	assert_int_equal(r.c.diags.n, 0);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.segments, 1);
	assert_int_equal(r.ends, 1);
	assert_int_equal(r.enabled, 1);
	assert_int_equal(r.disabled, 1);

	/* The exact instruction sequence. */
	assert_int_equal(r.nips, sizeof(expect_all));
	check_ips(&r, 0, expect_all, sizeof(expect_all), 0);

	/* The call tree. */
	if (strcmp(r.tree, tree_all))
		fprintf(stderr, "%s", r.tree);
	assert_string_equal(r.tree, tree_all);
	assert_int_equal(r.calls.calls, 7);
	assert_int_equal(r.calls.returns, 7);
	assert_int_equal(r.calls.unmatched_returns, 0);
	assert_int_equal(r.calls.max_depth, 3);

	/* The folded stacks: instructions executed with each stack. */
	assert_string_equal(r.folded, "main 12\nmain;bar 3\nmain;foo 6\nmain;foo;bar 11\n");
	assert_int_equal(r.calls.root.total, 32);

	/* The stats. */
	assert_int_equal(r.st.insns, 32);
	assert_int_equal(r.st.cond, 7);
	assert_int_equal(r.st.cond_taken, 4);
	assert_int_equal(r.st.cond_not_taken, 3);
	assert_int_equal(r.st.call_direct, 7);
	assert_int_equal(r.st.call_indirect, 0);
	assert_int_equal(r.st.ret, 7);
	assert_int_equal(r.st.jump_indirect, 1);
	assert_int_equal(r.st.jump_direct, 0);
	assert_int_equal(r.st.branches, 22);
	assert_int_equal(r.st.packets, 8);
	assert_int_equal(r.st.pkt[ppt_psb], 1);
	assert_int_equal(r.st.pkt[ppt_tnt_8], 3);
	assert_int_equal(r.st.pkt[ppt_tip_pge], 1);
	assert_int_equal(r.st.pkt[ppt_tip_pgd], 1);
	assert_int_equal(r.st.gaps, 0);
	assert_int_equal(r.st.nfns, 3);
	assert_string_equal(r.st.fns[0].name, "bar");
	assert_int_equal(r.st.fns[0].count, 14);
	assert_string_equal(r.st.fns[1].name, "main");
	assert_int_equal(r.st.fns[1].count, 12);
	assert_string_equal(r.st.fns[2].name, "foo");
	assert_int_equal(r.st.fns[2].count, 6);
	assert_int_equal(r.c.trailer.pmis, 2);

	/* --insn lines: address, symbol, raw bytes, class. */
	assert_non_null(strstr(r.insn, "[enabled at main+0x0]\n"));
	assert_non_null(strstr(r.insn, "0000000000401000  main+0x0"));
	assert_non_null(strstr(r.insn, "0000000000401005  main+0x5                     e8 16 00 00 00           call\n"));
	assert_non_null(strstr(r.insn, "0000000000401039  bar+0x9                      c3                       ret\n"));
	assert_non_null(strstr(r.insn, "[disabled, next ip 0x402000]\n[end of trace]\n"));
	run_free(&r);
	membuf_free(&m);
}

static void test_packet_dump(void **state)
{
	u8 pt[128];
	size_t n = trace_all(pt);
	struct membuf m = { 0 };
	struct piece p = { pt, n, 0x1000, 0x1000, TPZ_TRACE_LOST };
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	char *out;
	size_t len;
	FILE *f;

	make_container(&m, &p, 1, 0);
	assert_int_equal(ptd_container_parse(&c, "demo", m.p, m.len), 0);
	ptd_image_init(&img);
	ptd_image_add_sideband(&img, &c);
	ptd_ctx_init(&x, &c, &img);
	f = open_memstream(&out, &len);
	assert_int_equal(ptd_dump_packets(&x, f, true), 0);
	fclose(f);
	assert_string_equal(out,
		"# cpu 0, segment 0: stream offset 0x1000, 33 bytes\n"
		"# gap: 4096 bytes missing before this segment (lost)\n"
		"# record 3 at file offset 0x245\n"
		"0000000000001000  psb\n"
		"0000000000001010  psbend\n"
		"0000000000001012  mode.exec  64-bit\n"
		"0000000000001014  tip.pge    3: 000000401000  -> 0000000000401000 main+0x0\n"
		"000000000000101b  tnt.8      .!!!!!\n"
		"000000000000101c  tnt.8      !!.!!.\n"
		"000000000000101d  tnt.8      !!\n"
		"000000000000101e  tip.pgd    1: 2000  -> 0000000000402000 0x402000\n");
	free(out);
	ptd_ctx_free(&x);
	ptd_image_free(&img);
	ptd_container_free(&c);
	membuf_free(&m);
}

/*
 * Data lost in the middle: the first chunk ends after "jz, ret" of the
 * second iteration; the trace unit lost what followed and resumes with a
 * PSB+ (FUP: the call foo of the third iteration).
 */
static size_t trace_split(u8 *a, size_t *na, u8 *b)
{
	struct enc x;

	enc_init(&x);
	put_start(&x, BASE);
	put_tnt(&x, ".!!!!!");
	*na = enc_done(&x);
	memcpy(a, x.buf, *na);

	enc_init(&x);
	put_psb(&x);
	put_mode64(&x);
	put_ip(&x, ppt_fup, pt_ipc_sext_48, BASE + 0x05);
	put_psbend(&x);
	put_tnt(&x, ".!!.!!");		/* jz, ret, ret, jnz | jz, ret */
	put_ip(&x, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	{
		size_t nb = enc_done(&x);

		memcpy(b, x.buf, nb);
		return nb;
	}
}

static const u8 expect_seg0[] = {
	0x00,
	0x05, 0x20, 0x30, 0x36, 0x38, 0x39, 0x25, 0x0a, 0x0c,
	0x05, 0x20, 0x30, 0x36, 0x39,		/* the ret at 0x25 needs a bit that was lost */
};
static const u8 expect_seg1[] = {
	0x05, 0x20, 0x30, 0x36, 0x38, 0x39, 0x25, 0x0a, 0x0c,
	0x0e, 0x30, 0x36, 0x39, 0x13,
};

static void test_decode_with_gap(void **state)
{
	u8 a[64], b[64];
	size_t na, nb = trace_split(a, &na, b);
	struct piece p[2] = {
		{ a, na, 0, 0, 0 },
		{ b, nb, na + 300, 300, TPZ_TRACE_LOST },
	};
	struct membuf m = { 0 };
	struct run r;

	make_container(&m, p, 2, 1);
	assert_int_equal(decode(&r, &m), 0);
	/* one problem: the gap, with what it cost */
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "a gap before stream offset"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "300 bytes lost (lost): the instructions run between "));
	assert_non_null(strstr(r.c.diags.v[0].msg, "are not in the trace"));
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.segments, 2);
	assert_int_equal(r.ends, 2);

	/* Both segments decode, each from its PSB. */
	assert_int_equal(r.nips, sizeof(expect_seg0) + sizeof(expect_seg1));
	check_ips(&r, 0, expect_seg0, sizeof(expect_seg0), 0);
	check_ips(&r, sizeof(expect_seg0), expect_seg1, sizeof(expect_seg1), 1);

	/* The gap is reported where it is. */
	assert_int_equal(r.x.segs.n, 2);
	assert_int_equal(r.x.segs.v[1].gap, 300);
	assert_string_equal(r.x.segs.v[1].gap_why, "lost");
	assert_int_equal(r.x.segs.v[1].stream_off, na + 300);
	assert_int_equal(r.st.gaps, 1);
	assert_int_equal(r.st.gap_bytes, 300);
	assert_int_equal(r.c.lost_bytes, 300);
	assert_int_equal(r.c.trailer.lost_bytes, 300);
	assert_non_null(strstr(r.insn, "[end of trace]\n[cpu 0, segment 1 at stream offset 0x"));
	assert_non_null(strstr(r.insn, "[gap: 300 bytes missing before this segment (lost)]\n"));
	assert_string_equal(r.tree,
		"# cpu 0, segment 0 at stream offset 0x0\n"
		"main() {  /* trace starts in main+0x0 */\n"
		"  foo() {\n"
		"    bar();  /* 4 instructions */\n"
		"  }  /* foo: 6 instructions */\n"
		"  foo() {\n"
		"    bar();  /* 3 instructions, trace ends */\n"
		"  }  /* foo: 4 instructions, trace ends */\n"
		"}  /* main: 15 instructions, trace ends */\n"
		"# cpu 0, segment 1 at stream offset 0x148\n"
		"# gap: 300 bytes missing before this segment (lost)\n"
		"main() {  /* trace starts in main+0x5 */\n"
		"  foo() {\n"
		"    bar();  /* 4 instructions */\n"
		"  }  /* foo: 6 instructions */\n"
		"  bar();  /* 3 instructions */\n"
		"  /* tracing disabled */\n"
		"}  /* main: 14 instructions, trace ends */\n");
	assert_string_equal(r.folded, "main 10\nmain;bar 3\nmain;foo 5\nmain;foo;bar 11\n");
	assert_int_equal(r.st.insns, 29);
	run_free(&r);
	membuf_free(&m);
}

/* A damaged record between two intact ones: it is named and skipped, both
 * sides decode, and the hole is a gap. */
static void test_decode_with_damaged_record(void **state)
{
	u8 a[64], b[64], pad[32] = { 0 };
	size_t na, nb = trace_split(a, &na, b);
	struct piece p[3] = {
		{ a, na, 0, 0, 0 },
		{ pad, sizeof(pad), na, 0, 0 },
		{ b, nb, na + sizeof(pad), 0, 0 },
	};
	struct membuf m = { 0 };
	size_t start[8];
	struct run r;

	make_container(&m, p, 3, 0);
	assert_int_equal(record_starts(m.p, m.len, start, 7), 7);
	m.p[start[4] + TPZ_REC_SIZE + sizeof(struct tpz_trace) + 5] ^= 1;	/* record 4: the PADs */
	assert_int_equal(decode(&r, &m), 1);
	assert_int_equal(r.c.diags.v[0].record, 4);
	assert_int_equal(r.c.diags.v[0].offset, start[4]);
	assert_non_null(strstr(r.c.diags.v[0].msg, "payload CRC mismatch"));
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.nips, sizeof(expect_seg0) + sizeof(expect_seg1));
	check_ips(&r, 0, expect_seg0, sizeof(expect_seg0), 0);
	check_ips(&r, sizeof(expect_seg0), expect_seg1, sizeof(expect_seg1), 1);
	assert_int_equal(r.x.segs.v[1].gap, sizeof(pad));
	assert_string_equal(r.x.segs.v[1].gap_why, "records damaged or missing");
	run_free(&r);
	membuf_free(&m);
}

/* A decode error names the record and offset, and decoding resumes at the
 * next PSB. */
static void test_decode_error_resyncs(void **state)
{
	u8 a[64], b[64], buf[160];
	size_t na, nb = trace_split(a, &na, b);
	struct piece p = { buf, 0, 0, 0, 0 };
	struct membuf m = { 0 };
	struct run r;
	u8 *tip;

	/* Segment A with its TIP.PGE pointing outside the image, then B. */
	memcpy(buf, a, na);
	memcpy(buf + na, b, nb);
	p.size = na + nb;
	tip = memchr(buf, 0x71, na);	/* TIP.PGE, sext48 */
	assert_non_null(tip);
	tip[2] = 0x50;			/* 0x405000: no code there */
	make_container(&m, &p, 1, 0);
	assert_int_equal(decode(&r, &m), 0);	/* the container is intact */
	assert_int_equal(r.errors, 1);
	assert_int_equal(r.c.diags.n, 1);
	assert_int_equal(r.c.diags.v[0].record, 3);
	assert_non_null(strstr(r.c.diags.v[0].msg, "decode error at stream offset"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "no memory mapped at this address"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "resynchronising at the next PSB"));
	/* Everything after the second PSB decodes. */
	assert_int_equal(r.nips, sizeof(expect_seg1));
	check_ips(&r, 0, expect_seg1, sizeof(expect_seg1), 0);
	run_free(&r);
	membuf_free(&m);
}

/*
 * One damaged byte inside the first PSB+ (a reserved opcode where MODE.Exec
 * was): that PSB cannot be read, and the decode goes on at the next one. It
 * used to give up on the segment (0 of 383,114 instructions decoded with six
 * intact PSBs after the damage).
 */
static void test_damaged_first_psb(void **state)
{
	u8 a[64], b[64], buf[160];
	size_t na, nb = trace_split(a, &na, b);
	struct piece p = { buf, 0, 0, 0, 0 };
	struct membuf m = { 0 };
	struct run r;

	memcpy(buf, a, na);
	memcpy(buf + na, b, nb);
	p.size = na + nb;
	assert_int_equal(buf[18], 0x99);	/* MODE.Exec after PSB, PSBEND */
	buf[18] = 0xd9;				/* a reserved opcode */
	make_container(&m, &p, 1, 0);
	assert_int_equal(decode(&r, &m), 0);
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "cannot synchronise"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "resynchronising at the next PSB"));
	assert_int_equal(r.nips, sizeof(expect_seg1));	/* all after the second PSB */
	check_ips(&r, 0, expect_seg1, sizeof(expect_seg1), 0);
	run_free(&r);
	membuf_free(&m);
}

/*
 * Half of the first PSB gone: the bytes up to the next PSB cannot be decoded,
 * a problem with its size (it used to be said only by --packets, exit 0).
 * After a gap the gap's report counts them, once; leading PADs are no loss.
 */
static void test_bytes_before_first_psb(void **state)
{
	u8 a[64], b[64], buf[200];
	size_t na, nb = trace_split(a, &na, b);
	struct piece p[2] = { { buf, 0, 0, 0, 0 }, { b, nb, 0, 300, TPZ_TRACE_LOST } };
	struct membuf m = { 0 };
	struct run r;

	memcpy(buf, a + 8, na - 8);
	memcpy(buf + na - 8, b, nb);
	p[0].size = na - 8 + nb;
	make_container(&m, p, 1, 0);
	assert_int_equal(decode(&r, &m), 0);
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "bytes before the first PSB skipped (stream offsets 0x0 to 0x"));
	assert_int_equal(r.nips, sizeof(expect_seg1));
	run_free(&r);
	/* the same without a flow pass (--packets alone) */
	memset(&r, 0, sizeof(r));
	assert_int_equal(parse_with_image(&r.c, &r.img, "demo.tpz", &m), 0);
	ptd_ctx_init(&r.x, &r.c, &r.img);
	ptd_report_gaps(&r.c, &r.x.segs);
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "bytes before the first PSB skipped"));
	free_with_image(&r.x, &r.img, &r.c);
	membuf_free(&m);

	/* leading PADs, then the PSB: nothing lost */
	memset(buf, 0, 5);
	memcpy(buf + 5, a, na);
	p[0].size = 5 + na;
	make_container(&m, p, 1, 0);
	assert_int_equal(decode(&r, &m), 0);
	assert_int_equal(r.c.diags.n, 0);
	run_free(&r);
	membuf_free(&m);

	/* after a gap, mid-packet: the gap's report says it, alone */
	p[0] = (struct piece){ a, na, 0, 0, 0 };
	memcpy(buf, a + 8, na - 8);
	memcpy(buf + na - 8, b, nb);
	p[1] = (struct piece){ buf, na - 8 + nb, na + 300, 300, TPZ_TRACE_LOST };
	make_container(&m, p, 2, 1);
	assert_int_equal(decode(&r, &m), 0);
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "300 bytes lost (lost)"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "decoding resumed at the first PSB"));
	run_free(&r);
	membuf_free(&m);
}

/*
 * An OVF (the trace unit dropped packets inside itself) is a problem, like a
 * gap: 30,000 of them used to exit 0. And problems beyond the first thousand
 * are counted, not kept (a million bad records took 380 MB and printed 141 MB).
 */
static void test_overflow_and_many_problems(void **state)
{
	struct membuf m = { 0 };
	struct ptd_diags d = { 0 };
	struct run r;
	struct enc e;
	char *out;
	size_t len;
	FILE *f;

	enc_init(&e);
	put_start(&e, BASE);
	put(&e, (struct pt_packet){ .type = ppt_ovf });
	put_ip(&e, ppt_fup, pt_ipc_sext_48, BASE + 0x20);
	put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	decode_packets(&r, &m, &e);
	assert_int_equal(ptd_diags_count(&r.c.diags), 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "internal buffer overflowed at stream offset 0x"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "tracing resumes at foo+0x0"));
	run_free(&r);
	membuf_free(&m);

	for (int i = 0; i < 2500; i++)
		ptd_diag_add(&d, i, 0, "problem %d", i);
	assert_int_equal(d.n, PTD_DIAGS_KEPT);
	assert_int_equal(ptd_diags_count(&d), 2500);
	f = open_memstream(&out, &len);
	ptd_diags_print(&d, 0, "x", f);
	fclose(f);
	assert_non_null(strstr(out, "record 999 at offset 0x0: problem 999\n"));
	assert_null(strstr(out, "problem 1000\n"));
	assert_non_null(strstr(out, "... and 1500 more problems (counted, not kept: the first 1000 are)"));
	free(out);
	ptd_diags_free(&d);
}

/*
 * An interrupt whose handler is not traced (the software trace unit's, or a
 * handler a filter excludes): tracing off at an instruction (FUP, TIP.PGD)
 * and on again at it. stats.txt counts it as an interrupt and calls.txt says
 * so; they showed only "tracing disabled", "enabled" and 0 interrupts.
 */
static void test_untraced_handler(void **state)
{
	struct membuf m = { 0 };
	struct run r;
	struct enc e;

	enc_init(&e);
	put_start(&e, BASE);
	put_ip(&e, ppt_fup, pt_ipc_sext_48, BASE + 5);		/* before "call foo" */
	put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	put_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE + 5);	/* back there */
	put_ip(&e, ppt_fup, pt_ipc_sext_48, BASE + 0x20);	/* in foo: the end */
	put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	decode_packets(&r, &m, &e);
	assert_int_equal(ptd_diags_count(&r.c.diags), 0);
	assert_int_equal(r.st.interrupts_untraced, 1);
	assert_non_null(strstr(r.tree, "/* interrupt or exception at main+0x5, handler not traced */"));
	assert_non_null(strstr(r.tree, "/* tracing disabled */"));	/* the end */
	run_free(&r);
	membuf_free(&m);
}

/*
 * Two trace windows: the first ends (asynchronously, as pt_trace_end ends
 * one) at foo's first instruction, the second begins in bar. What ran
 * between is unknown, so the second window is a call tree of its own, not
 * bar inside main;foo (make run's flame graph stacked each window on the
 * last, pt_run_traced five deep): main's two instructions in one, bar's
 * three in the other, each at the root.
 */
static void test_windows_are_roots(void **state)
{
	struct membuf m = { 0 };
	struct run r;
	struct enc e;

	enc_init(&e);
	put_start(&e, BASE);		/* main */
	put_ip(&e, ppt_fup, pt_ipc_sext_48, BASE + 0x20);	/* off at foo's first */
	put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	put_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE + 0x30);	/* on again in bar */
	put_tnt(&e, "!");					/* jz .s taken */
	put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);		/* its ret leaves */
	decode_packets(&r, &m, &e);
	assert_int_equal(ptd_diags_count(&r.c.diags), 0);
	/* the instructions: main's mov and call; bar's test, jz, ret */
	assert_int_equal(r.nips, 5);
	assert_int_equal(r.ips[1], BASE + 0x05);
	assert_int_equal(r.ips[2], BASE + 0x30);
	assert_string_equal(r.folded, "bar 3\nmain 2\n");
	assert_non_null(strstr(r.tree, "tracing disabled at foo+0x0; enabled again at bar+0x0"));
	run_free(&r);
	membuf_free(&m);
}

/* Two sideband images over the same bytes: the first is the one decoded, and
 * that is said (it was settled silently, and the decode changed with it). */
static void test_overlapping_images(void **state)
{
	static const u8 other[16] = { 0x90 };
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	struct trace_totals t = { 0 };
	struct tpz_header h;
	struct ptd_container c;
	struct ptd_image img;

	sample_header(&h);
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_image(&w, "patch", BASE + 0x30, other, sizeof(other)), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
	ptd_container_parse(&c, "overlap.tpz", m.p, m.len);
	ptd_image_init(&img);
	ptd_image_add_sideband(&img, &c);
	assert_int_equal(ptd_diags_count(&c.diags), 1);
	assert_non_null(strstr(c.diags.v[0].msg,
			       "sideband image patch at 0x401030..0x401040 overlaps demo at 0x401000..0x401040: the bytes of demo are decoded there"));
	ptd_image_free(&img);
	ptd_container_free(&c);
	membuf_free(&m);
}

/* The flame graph: a well-formed document with one box per stack. */
static void test_svg(void **state)
{
	u8 pt[128];
	size_t n = trace_all(pt);
	struct membuf m = { 0 };
	struct piece p = { pt, n, 0, 0, 0 };
	struct run r;
	char *svg;
	size_t len, boxes = 0;
	FILE *f;

	make_container(&m, &p, 1, 0);
	decode(&r, &m);
	f = open_memstream(&svg, &len);
	ptd_write_svg(&r.calls, f, "demo <trace> & co");
	fclose(f);
	assert_non_null(strstr(svg, "<svg version=\"1.1\" width=\"1200\""));
	assert_non_null(strstr(svg, "demo &lt;trace&gt; &amp; co"));
	for (char *s = svg; (s = strstr(s, "<rect x=\"")); s++)
		boxes++;
	assert_int_equal(boxes, 1 + 5);	/* the background, all, main, main;bar, main;foo, main;foo;bar */
	assert_non_null(strstr(svg, "<title>all (32 instructions, 100.00%)</title>"));
	assert_non_null(strstr(svg, "<title>bar (11 instructions, 34.38%)</title>"));
	/* widths are proportional: main is the whole width, foo 17/32 of it */
	assert_non_null(strstr(svg, "width=\"1180.0\""));
	assert_non_null(strstr(svg, "width=\"626.9\""));
	assert_non_null(strstr(svg, ">main</text>"));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
	run_free(&r);
	membuf_free(&m);
}

/* The ELF loader on this very binary: segments at the load bias, .symtab
 * functions, the GNU build id. */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

__attribute__((noinline)) int decode_test_probe(int v);
__attribute__((noinline)) int decode_test_probe(int v)
{
	return v * 3 + 1;
}

/*
 * Symbol names from a hostile or damaged symbol table: ';' and spaces would
 * split frames in the folded format, control bytes and '<' would make the
 * SVG ill-formed. Folded writes them as \xHH, the SVG as entities (U+FFFD
 * for what XML 1.0 cannot hold).
 */
static void test_hostile_names(void **state)
{
	u8 pt[128];
	size_t n = trace_all(pt);
	struct membuf m = { 0 };
	struct piece p = { pt, n, 0, 0, 0 };
	struct run r;
	char *svg;
	size_t len;
	FILE *f;

	sym_names = "m;a\n\0f o\0<\x01&";
	make_container(&m, &p, 1, 0);
	sym_names = plain_names;
	decode(&r, &m);
	assert_string_equal(r.folded, "m\\x3ba\\x0a 12\nm\\x3ba\\x0a;<\\x01& 3\n"
				      "m\\x3ba\\x0a;f\\x20o 6\nm\\x3ba\\x0a;f\\x20o;<\\x01& 11\n");
	f = open_memstream(&svg, &len);
	ptd_write_svg(&r.calls, f, "t");
	fclose(f);
	assert_non_null(strstr(svg, "<title>&lt;&#xfffd;&amp; (11 instructions"));
	assert_non_null(strstr(svg, "<title>m;a&#xfffd; (32 instructions"));
	for (size_t i = 0; i < len; i++)	/* no control byte but the newlines */
		assert_true(svg[i] >= ' ' || svg[i] == '\n');
	free(svg);
	run_free(&r);
	membuf_free(&m);
}

/* A container of @bytes (code) at BASE, function "f" at its start, and the packets @pt. */
static void code_container(struct membuf *m, const u8 *bytes, size_t size, const u8 *pt, size_t len)
{
	static const char names[] = "f";
	struct tpz_sym sym = { 0, 2, 0 };
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct trace_chunk ch = { 0 };
	struct trace_totals t = { 0 };
	struct tpz_header h;

	sample_header(&h);
	h.load_address = 0;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, bytes, size), 0);
	assert_int_equal(trace_write_symbols(&w, "demo", BASE, &sym, 1, names, sizeof(names)), 0);
	assert_int_equal(trace_write_trace(&w, &ch, pt, len), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* A container decoded into its call stacks (calls.txt to @tree) and stats. */
struct flow {
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_calls calls;
	struct ptd_stats st;
};

static unsigned long flow_decode(struct flow *f, const struct membuf *m, FILE *tree,
				 struct ptd_progress *progress)
{
	struct ptd_consumer cons[2];
	unsigned long errors;

	parse_with_image(&f->c, &f->img, "flow.tpz", m);
	ptd_ctx_init(&f->x, &f->c, &f->img);
	f->x.progress = progress;
	ptd_stats_init(&f->st, &f->img);
	ptd_calls_init(&f->calls, &f->img, tree);
	cons[0] = (struct ptd_consumer){ ptd_stats_event, &f->st };
	cons[1] = (struct ptd_consumer){ ptd_calls_event, &f->calls };
	errors = ptd_decode_flow(&f->x, cons, 2);
	ptd_calls_finish(&f->calls);
	return errors;
}

static void flow_free(struct flow *f)
{
	ptd_calls_free(&f->calls);
	ptd_stats_free(&f->st);
	free_with_image(&f->x, &f->img, &f->c);
}

/*
 * A JMP to itself, then a CALL to itself, each followed by a TIP.PGD: libipt
 * walks on to the branch the TIP.PGD belongs to, and no packet ends either
 * loop, so the decoder used to run forever (the CALL grew the call stack
 * without bound).
 * Each is cut after 100,000 instructions without a packet and reported;
 * decoding would go on at the next PSB.
 */
static void test_self_loops(void **state)
{
	static const u8 loops[2][16] = {
		{ 0xeb, 0xfe },				/* jmp . */
		{ 0xe8, 0xfb, 0xff, 0xff, 0xff },	/* call . */
	};

	for (int k = 0; k < 2; k++) {
		struct membuf m = { 0 };
		struct flow f;
		struct enc e;
		size_t len;

		enc_init(&e);
		put_start(&e, BASE);
		put_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);	/* libipt walks to its branch */
		len = enc_done(&e);
		code_container(&m, loops[k], sizeof(loops[k]), e.buf, len);
		assert_int_equal(flow_decode(&f, &m, NULL, NULL), 1);
		assert_int_equal(f.c.diags.n, 1);
		assert_non_null(strstr(f.c.diags.v[0].msg,
				       "100000 instructions decoded at stream offset 0x"));
		assert_non_null(strstr(f.c.diags.v[0].msg, "without reading a packet, the last at f+0x0"));
		/* the first, then 100,000 more: cut there */
		assert_int_equal(f.calls.root.total, 100001);
		flow_free(&f);
		membuf_free(&m);
	}
}

/*
 * 600,000 nested calls (a function that calls itself through a register, a
 * TIP each): the call tree's walkers used to recurse once per level (a stack
 * overflow), and the folded stacks and calls.txt grew with the depth on every
 * line (gigabytes). Now the tree is as deep as the calls, the outputs stay
 * within a constant per node: folded lines elide the middle of deep stacks
 * (and say so), calls.txt stops indenting at 32 levels, the SVG draws 512.
 */
/* @n calls of f to itself through a register (a TIP each), in @m. */
static void deep_calls_container(struct membuf *m, int n)
{
	static const u8 fcode[16] = { 0xff, 0xd0 };	/* f: call *%rax */
	u8 *pt = malloc(3 * (size_t)n + 64);
	struct enc e;
	size_t len;

	enc_init(&e);
	put_start(&e, BASE);
	len = enc_done(&e);
	memcpy(pt, e.buf, len);
	for (int i = 0; i < n; i++) {	/* TIP, IP update 16: f again */
		pt[len++] = 0x2d;
		pt[len++] = (u8)BASE;
		pt[len++] = (u8)(BASE >> 8);
	}
	pt[len++] = 0x01;		/* TIP.PGD, no IP */
	code_container(m, fcode, sizeof(fcode), pt, len);
	free(pt);
}

static void test_deep_calls(void **state)
{
	enum { N = 600000 };
	size_t flen, slen, tlen;
	struct membuf m = { 0 };
	struct flow fl;
	char *folded, *svg, *tree;
	FILE *ff, *sf, *tf;

	deep_calls_container(&m, N);
	tf = open_memstream(&tree, &tlen);
	flow_decode(&fl, &m, tf, NULL);
	fclose(tf);
	assert_true(fl.calls.max_depth >= N);
	assert_int_equal(fl.calls.root.total, N + 1);

	ff = open_memstream(&folded, &flen);
	ptd_write_folded(&fl.calls, ff);
	fclose(ff);
	sf = open_memstream(&svg, &slen);
	ptd_write_svg(&fl.calls, sf, "deep");
	fclose(sf);
	/* a constant per node: (16 + 16) frames and the elision note a line */
	assert_true(flen < (size_t)(N + 1) * 100);
	assert_true(tlen < (size_t)(N + 1) * 2 * 120);
	assert_non_null(strstr(folded, ";[599969 frames elided];"));
	assert_non_null(strstr(tree, "[depth 599999] f() {"));
	assert_non_null(strstr(svg, "deeper levels not drawn"));
	assert_true(slen < 512 * 1024);
	free(folded);
	free(svg);
	free(tree);
	flow_free(&fl);
	membuf_free(&m);
}

/* What a progress line on @fd wrote (the pty's master side; nothing: ""). */
static char *drain(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	return buf;
}

/*
 * The progress line of a decode: on a terminal, rewritten in place (\r) and
 * erased at the end; nothing on a pipe (make run's output in a log, a test's
 * capture), nor on a terminal for a decode shorter than the delay.
 */
static void test_progress(void **state)
{
	struct membuf m = { 0 };
	struct ptd_progress p;
	struct flow fl;
	char buf[8192], *out;
	int master, fds[2];
	FILE *tty, *pipe_w;

	deep_calls_container(&m, 100000);
	master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(master >= 0 && !grantpt(master) && !unlockpt(master));
	assert_int_equal(fcntl(master, F_SETFL, O_NONBLOCK), 0);
	tty = fopen(ptsname(master), "w");
	assert_non_null(tty);

	/* a terminal, no delay: the line, then erased */
	ptd_progress_init(&p, tty, 0);
	assert_int_equal(flow_decode(&fl, &m, NULL, &p), 0);
	assert_int_equal(fl.calls.root.total, 100001);
	flow_free(&fl);
	out = drain(master, buf, sizeof(buf));
	assert_non_null(strstr(out, "\rptdecode: decoding: "));
	assert_non_null(strstr(out, " MB of trace, "));
	assert_true(strlen(out) >= 4 && !strcmp(out + strlen(out) - 4, "\r\033[K"));

	/* the same terminal, a decode shorter than the delay: nothing */
	ptd_progress_init(&p, tty, 3600);
	flow_decode(&fl, &m, NULL, &p);
	flow_free(&fl);
	assert_string_equal(drain(master, buf, sizeof(buf)), "");

	/* the coverage decoder's, told every 4 KiB of trace: 1.2 MB here */
	membuf_free(&m);
	deep_calls_container(&m, 400000);
	{
		struct ptd_cov *cv = ptd_cov_new(NULL, NULL);
		struct ptd_container c;
		struct ptd_image img;

		parse_with_image(&c, &img, "cov.tpz", &m);
		ptd_progress_init(&p, tty, 0);
		ptd_cov_set_progress(cv, &p);
		assert_int_equal(ptd_cov_add(cv, &c, &img, 0), 0);
		ptd_cov_free(cv);
		ptd_image_free(&img);
		ptd_container_free(&c);
	}
	out = drain(master, buf, sizeof(buf));
	assert_non_null(strstr(out, "\rptdecode: coverage: "));
	assert_true(strlen(out) >= 4 && !strcmp(out + strlen(out) - 4, "\r\033[K"));

	/* a pipe, no delay: nothing */
	assert_int_equal(pipe(fds), 0);
	pipe_w = fdopen(fds[1], "w");
	ptd_progress_init(&p, pipe_w, 0);
	flow_decode(&fl, &m, NULL, &p);
	flow_free(&fl);
	fclose(pipe_w);
	assert_string_equal(drain(fds[0], buf, sizeof(buf)), "");
	close(fds[0]);
	fclose(tty);
	close(master);
	membuf_free(&m);
}

/* A hundred thousand distinct names (a large SYMBOLS sideband): each interned
 * once, found again by pointer, none mixed up (the table grows under them). */
static void test_intern_many(void **state)
{
	enum { N = 100000 };
	static const char *first[N];
	struct ptd_image img;
	char name[32];

	ptd_image_init(&img);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		first[i] = ptd_intern(&img, name);
		assert_string_equal(first[i], name);
	}
	assert_int_equal(img.nstrings, N);
	for (int i = N; i-- > 0;) {
		snprintf(name, sizeof(name), "fn_%d", i);
		assert_ptr_equal(ptd_intern(&img, name), first[i]);
	}
	assert_int_equal(img.nstrings, N);
	ptd_image_free(&img);
}

static void test_elf_image(void **state)
{
	struct ptd_image img;
	struct ptd_diags d = { 0 };
	uintptr_t bias = 0;
	const struct ptd_symbol *s;
	u64 addr = (u64)(uintptr_t)decode_test_probe;
	u8 bytes[8];
	char buf[200];

	dl_iterate_phdr(first_object, &bias);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, "/proc/self/exe", bias, &d), 0);
	assert_int_equal(d.n, 0);
	ptd_image_finish(&img);
	s = ptd_image_lookup(&img, addr + 2);
	assert_non_null(s);
	assert_string_equal(s->name, "decode_test_probe");
	assert_string_equal(ptd_format_addr(&img, addr + 2, buf, sizeof(buf)), "decode_test_probe+0x2");
	/* the mapped bytes are the code that runs */
	assert_int_equal(ptd_image_read(bytes, sizeof(bytes), NULL, addr, &img), 8);
	assert_memory_equal(bytes, (const void *)(uintptr_t)addr, 8);
	assert_int_equal(img.elf_build_id_len, 20);
	ptd_image_free(&img);
	assert_int_equal(ptd_image_add_elf(&img, "/nonexistent", 0, &d), -1);
	assert_non_null(strstr(d.v[0].msg, "cannot open"));
	ptd_diags_free(&d);
	ptd_image_free(&img);
	assert_int_equal(decode_test_probe(1), 4);
}

/*
 * Hostile ELF files given with --elf: every field is checked against the file
 * before use. A segment whose file size exceeds its memory size (the copy
 * overflowed the region: a heap write), one claiming a terabyte, and a
 * build-id note that starts 12 bytes before the end of the file (its name
 * was read past the end). ASan fails the test on either overflow.
 */
static void write_elf(const char *path, const Elf64_Phdr *ph, u64 note_at_end)
{
	u8 file[512] = { 0 };
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[2] = { { 0 } };
	size_t size = sizeof(file);
	FILE *f;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(*ph);
	eh.e_phnum = 1;
	eh.e_shoff = 256;
	eh.e_shentsize = sizeof(sh[0]);
	eh.e_shnum = 2;
	sh[1].sh_type = SHT_NOTE;
	sh[1].sh_offset = size - 12;	/* a note header, nothing after it */
	sh[1].sh_size = note_at_end ? 12 : 0;
	memcpy(file, &eh, sizeof(eh));
	memcpy(file + sizeof(eh), ph, sizeof(*ph));
	memcpy(file + 256, sh, sizeof(sh));
	if (note_at_end) {
		u32 hdr[3] = { 4, 20, NT_GNU_BUILD_ID };

		memcpy(file + size - 12, hdr, sizeof(hdr));
	}
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(file, 1, size, f), size);
	fclose(f);
}

static void test_hostile_elf(void **state)
{
	char path[] = "/tmp/topaz-elf-XXXXXX";
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_offset = 0x100, .p_vaddr = 0x1000,
			  .p_filesz = 0x80, .p_memsz = 0x10 };
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	/* file bigger than memory: refused by name, nothing mapped */
	write_elf(path, &ph, 0);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, path, 0, &d), 0);
	assert_int_equal(img.nregions, 0);
	assert_non_null(strstr(d.v[0].msg, "more bytes in the file (128) than in memory (16)"));
	ptd_image_free(&img);
	ptd_diags_free(&d);

	/* a terabyte segment: refused, not allocated */
	ph.p_memsz = 1ULL << 40;
	write_elf(path, &ph, 0);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, path, 0, &d), 0);
	assert_int_equal(img.nregions, 0);
	assert_non_null(strstr(d.v[0].msg, "is 1099511627776 bytes at 0x1000: not mapped"));
	ptd_image_free(&img);
	ptd_diags_free(&d);

	/* a build-id note cut by the end of the file: no id, no read past it */
	ph.p_memsz = 0x80;
	write_elf(path, &ph, 1);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, path, 0, &d), 0);
	assert_int_equal(img.nregions, 1);
	assert_int_equal(img.elf_build_id_len, 0);
	ptd_image_free(&img);
	ptd_diags_free(&d);
	unlink(path);
}

/* ------------------------------------------------------------ perf.data */

struct perf_rec {
	u32 type;
	u16 misc;
	const u8 *body;		/* after the 8-byte header */
	size_t size;		/* header.size */
	u64 off;		/* file offset */
};

/* The data section's records (an AUXTRACE record's data follows it). */
static size_t perf_records(const u8 *f, size_t len, struct perf_rec *v, size_t max)
{
	u64 data_off, data_size, off;
	size_t n = 0;

	memcpy(&data_off, f + 40, 8);
	memcpy(&data_size, f + 48, 8);
	assert_true(data_off + data_size <= len);
	for (off = data_off; off < data_off + data_size && n < max;) {
		struct perf_event_header h;

		memcpy(&h, f + off, sizeof(h));
		assert_true(h.size >= 8);
		v[n] = (struct perf_rec){ h.type, h.misc, f + off + 8, h.size, off };
		off += h.size;
		if (h.type == 71) {	/* PERF_RECORD_AUXTRACE: its data */
			u64 sz;

			memcpy(&sz, f + v[n].off + 8, 8);
			off += sz;
		}
		n++;
	}
	assert_int_equal(off, data_off + data_size);
	return n;
}

/*
 * The trace with a gap as perf.data: the configuration, the traced code (the
 * sideband image, written beside it as an ELF file), one AUXTRACE queue per segment with the
 * segment's bytes, the loss as a truncated PERF_RECORD_AUX between them, the
 * AUXTRACE index. Then Linux perf (linux-perf, installed by setup.sh) decodes
 * it: the same instruction addresses as libipt, each segment from its PSB.
 */
static void test_perf_data(void **state)
{
	u8 a[64], b[64];
	size_t na, nb = trace_split(a, &na, b), len, n;
	struct piece p[2] = {
		{ a, na, 0, 0, 0 },
		{ b, nb, na + 300, 300, TPZ_TRACE_LOST },
	};
	char dir[] = "/tmp/topaz-perf-XXXXXX", path[128], cmd[512], line[256];

	struct membuf m = { 0 };
	struct perf_rec rec[16];
	struct run r;
	u8 *f;
	u64 v[4], feat;
	size_t auxtrace = 0, aux = 0, mmaps = 0;
	FILE *pf;

	make_container(&m, p, 2, 1);
	decode(&r, &m);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(ptd_write_perf_data(&r.c, &r.x.segs, &r.img, NULL, 0, path), 0);

	f = (u8 *)read_whole(path, &len);
	assert_non_null(f);
	assert_memory_equal(f, "PERFILE2", 8);
	n = perf_records(f, len, rec, ARRAY_SIZE(rec));
	assert_int_equal(rec[0].type, 70);	/* AUXTRACE_INFO first: Intel PT, PMU type 8 */
	memcpy(v, rec[0].body, 16);
	assert_int_equal(v[0] & 0xffffffff, 1);
	assert_int_equal(v[1], 8);
	for (size_t i = 1; i < n; i++) {
		if (rec[i].type == PERF_RECORD_MMAP) {
			memcpy(v, rec[i].body + 8, 24);
			assert_int_equal(v[0], BASE);	/* the image's ELF, its code a page in */
			assert_int_equal(v[1], sizeof(code));
			assert_int_equal(v[2], 0x1000);
			mmaps++;
		} else if (rec[i].type == PERF_RECORD_AUX) {
			memcpy(v, rec[i].body, 24);
			assert_int_equal(v[0], na);	/* the hole: where, how much, truncated */
			assert_int_equal(v[1], 300);
			assert_int_equal(v[2], PERF_AUX_FLAG_TRUNCATED);
			assert_int_equal(auxtrace, 1);	/* between the two queues */
			aux++;
		} else if (rec[i].type == 71) {
			const struct ptd_segment *s = &r.x.segs.v[auxtrace];
			u32 idx;

			memcpy(v, rec[i].body, 24);	/* size, offset, reference */
			memcpy(&idx, rec[i].body + 24, 4);
			assert_int_equal(v[0], (s->size + 7) & ~7ul);
			assert_int_equal(v[1], s->stream_off);
			assert_int_equal(idx, auxtrace);	/* a queue each */
			assert_memory_equal(rec[i].body + 40, s->data, s->size);
			auxtrace++;
		}
	}
	assert_int_equal(mmaps, 1);
	assert_int_equal(aux, 1);
	assert_int_equal(auxtrace, 2);
	memcpy(&feat, f + 72, 8);	/* arch, nrcpus, cpuid, the AUXTRACE index */
	assert_int_equal(feat, (1u << 6) | (1u << 7) | (1u << 9) | (1u << 18));
	free(f);

	/* perf decodes it: libipt's instructions, in order */
	snprintf(cmd, sizeof(cmd), "perf script -i %s --itrace=i1i -F ip 2>%s/stderr", path, dir);
	assert_int_equal(perf_ips_equal(cmd, r.ips, r.nips), 0);
	snprintf(path, sizeof(path), "%s/stderr", dir);
	f = (u8 *)read_whole(path, &len);
	assert_non_null(f);	/* NUL-terminated */
	assert_non_null(strstr((char *)f, "AUX data lost 1 times out of 1"));	/* the gap, said */
	free(f);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	snprintf(cmd, sizeof(cmd), "perf script -i %s --itrace=e 2>&1 | grep -c 'Lost trace data'", path);
	pf = popen(cmd, "r");
	assert_non_null(fgets(line, sizeof(line), pf));
	assert_int_equal(atoi(line), 1);	/* perf shows the gap */
	pclose(pf);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	run_free(&r);
	membuf_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_demo),
		cmocka_unit_test(test_packet_dump),
		cmocka_unit_test(test_decode_with_gap),
		cmocka_unit_test(test_decode_with_damaged_record),
		cmocka_unit_test(test_decode_error_resyncs),
		cmocka_unit_test(test_damaged_first_psb),
		cmocka_unit_test(test_bytes_before_first_psb),
		cmocka_unit_test(test_overflow_and_many_problems),
		cmocka_unit_test(test_overlapping_images),
		cmocka_unit_test(test_untraced_handler),
		cmocka_unit_test(test_windows_are_roots),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_intern_many),
		cmocka_unit_test(test_deep_calls),
		cmocka_unit_test(test_self_loops),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_elf_image),
		cmocka_unit_test(test_hostile_elf),
		cmocka_unit_test(test_perf_data),
	};
	return cmocka_run_group_tests_name("trace_decode", tests, NULL, NULL);
}
