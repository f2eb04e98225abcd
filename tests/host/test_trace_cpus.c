// SPDX-License-Identifier: MIT
/*
 * ptdecode on a container of several CPUs: each CPU's stream decoded on its
 * own. Four CPUs run different, known control flow over one shared code image
 * (the PT packets written with libipt's encoder); each stream is cut into
 * chunks and the kernel's writer interleaves the records of all CPUs, each
 * CPU's stream offsets from 0, as a kernel tracing every CPU drains them. CPU 1
 * loses bytes between two trace windows (a LOST gap on that CPU only).
 *
 * Checked: every CPU's exact instruction sequence (a byte of one CPU's stream
 * decoded with another's changes them), the instruction counts per CPU and
 * their total, the gap on CPU 1 alone (the others decode whole, without a
 * problem), the folded stacks per CPU and merged, restricting the decode to
 * some CPUs (--cpu), a loss that ends one CPU's stream, the perf.data export
 * (a queue per CPU segment carrying its CPU, decoded by Linux perf to the
 * same instructions per CPU), and the tool's command line (--cpu errors,
 * --stats per-CPU lines, --merge-cpus) when it is built beside the tests.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <linux/perf_event.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"
#include "trace_tool.h"

#define BASE	0x401000ull
#define NCPUS	4

/*
 * One image, every CPU's code: main, foo and bar (trace_test_enc.h), then
 *
 * spin:  mov ecx, 5       walk: call foo
 *  .l:   dec ecx                call bar
 *        jnz .l                 jmp rax
 *        call bar
 *        jmp rax
 */
static const u8 code[0x70] = {
	DEMO_CODE_MAIN_FOO_BAR,
	[0x40] = 0xb9, 0x05, 0x00, 0x00, 0x00,	/* spin: mov ecx, 5 */
	[0x45] = 0xff, 0xc9,			/* dec ecx */
	[0x47] = 0x75, 0xfc,			/* jnz 0x401045 */
	[0x49] = 0xe8, 0xe2, 0xff, 0xff, 0xff,	/* call bar */
	[0x4e] = 0xff, 0xe0,			/* jmp rax */
	[0x50 ... 0x5f] = 0xcc,
	[0x60] = 0xe8, 0xbb, 0xff, 0xff, 0xff,	/* walk: call foo */
	[0x65] = 0xe8, 0xc6, 0xff, 0xff, 0xff,	/* call bar */
	[0x6a] = 0xff, 0xe0,			/* jmp rax */
	[0x6c ... 0x6f] = 0xcc,
};

static const char names[] = "main\0foo\0bar\0spin\0walk";

/* What each CPU executed (offsets from BASE), window after window. */
static const u8 run0[] = { DEMO_RUN_MAIN };	/* main, three rounds */
static const u8 run1a[] = {	/* spin, three rounds, before the gap */
	0x40, 0x45, 0x47, 0x45, 0x47, 0x45, 0x47, 0x49, 0x30, 0x36, 0x38, 0x39, 0x4e,
};
static const u8 run1b[] = {	/* spin, five rounds, after it */
	0x40, 0x45, 0x47, 0x45, 0x47, 0x45, 0x47, 0x45, 0x47, 0x45, 0x47,
	0x49, 0x30, 0x36, 0x39, 0x4e,
};
static const u8 run2[] = {	/* walk */
	0x60, 0x20, 0x30, 0x36, 0x39, 0x25, 0x65, 0x30, 0x36, 0x38, 0x39, 0x6a,
};
static const u8 run3[] = {	/* main, two rounds */
	0x00,
	0x05, 0x20, 0x30, 0x36, 0x38, 0x39, 0x25, 0x0a, 0x0c,
	0x05, 0x20, 0x30, 0x36, 0x39, 0x25, 0x0a, 0x0c,
	0x0e, 0x30, 0x36, 0x38, 0x39, 0x13,
};

#define CPU1_LOST	300	/* bytes CPU 1 lost between its two windows */
#define CPU2_END_LOST	5	/* with @end_loss: bytes CPU 2 lost after its last chunk */

static const char folded_per_cpu[] =
	"cpu0;main 12\n"
	"cpu0;main;bar 3\n"
	"cpu0;main;foo 6\n"
	"cpu0;main;foo;bar 11\n"
	"cpu1;spin 22\n"
	"cpu1;spin;bar 7\n"
	"cpu2;walk 3\n"
	"cpu2;walk;bar 4\n"
	"cpu2;walk;foo 2\n"
	"cpu2;walk;foo;bar 3\n"
	"cpu3;main 9\n"
	"cpu3;main;bar 4\n"
	"cpu3;main;foo 4\n"
	"cpu3;main;foo;bar 7\n";

static const char folded_merged[] =
	"main 21\n"
	"main;bar 7\n"
	"main;foo 10\n"
	"main;foo;bar 18\n"
	"spin 22\n"
	"spin;bar 7\n"
	"walk 3\n"
	"walk;bar 4\n"
	"walk;foo 2\n"
	"walk;foo;bar 3\n";

/* ------------------------------------------------------------ encoding */

/* Each CPU's stream: its bytes, and for CPU 1 where its second window starts. */
struct streams {
	u8 data[NCPUS][256];
	size_t size[NCPUS];
	size_t cpu1_a;		/* CPU 1: the first window's bytes; the gap follows */
};

static void make_streams(struct streams *s)
{
	/* jz, ret, ret, jnz per round; the last call's jz and ret */
	static const char *const t0[] = { DEMO_TNT_MAIN, NULL };
	static const char *const t1a[] = { "!!.", ".!", NULL };	/* jnz x3 | jz, ret */
	static const char *const t1b[] = { "!!!!.", "!!", NULL };	/* jnz x5 | jz, ret */
	static const char *const t2[] = { "!!!.!", NULL };		/* jz, ret, ret | jz, ret */
	static const char *const t3[] = { ".!!!!!", "!.", ".!", NULL };

	memset(s, 0, sizeof(*s));
	/* each a window (enc_window): enabled at the CPU's function, disabled by its jmp rax */
	s->size[0] = enc_window(s->data[0], BASE, t0);
	s->cpu1_a = enc_window(s->data[1], BASE + 0x40, t1a);
	s->size[1] = s->cpu1_a + enc_window(s->data[1] + s->cpu1_a, BASE + 0x40, t1b);
	s->size[2] = enc_window(s->data[2], BASE + 0x60, t2);
	s->size[3] = enc_window(s->data[3], BASE, t3);
}

/* ------------------------------------------------------------ container */

struct chunk {
	u32 cpu, flags;
	u64 offset, lost;
	const u8 *data;
	size_t size;
};

/*
 * Each stream cut into chunks (CPU 1 at its gap, and inside each window),
 * the records of the CPUs interleaved round robin: no CPU's records are
 * together in the file. @only: the CPUs whose records are written (a bit
 * each). @end_loss: CPU 2's stream ends with an empty LOST chunk.
 */
static void make_container(struct membuf *m, const struct streams *s, unsigned int only,
			   bool end_loss)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct tpz_header h;
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR,
				  { 0x40, 0x10, 13 }, { 0x60, 0x0c, 18 } };
	struct trace_totals t = { .pmis = 7 };
	struct chunk per[NCPUS][8];
	size_t n[NCPUS] = { 0 }, left = 0;

	for (u32 cpu = 0; cpu < NCPUS; cpu++) {
		const u8 *d = s->data[cpu];
		size_t a = cpu == 1 ? s->cpu1_a : s->size[cpu], cut = a / 3 + cpu;

		if (!(only & (1u << cpu)))
			continue;
		/* the (first) window in two or three pieces */
		per[cpu][n[cpu]++] = (struct chunk){ cpu, 0, 0, 0, d, cut };
		per[cpu][n[cpu]++] = (struct chunk){ cpu, 0, cut, 0, d + cut, a - cut - 3 };
		per[cpu][n[cpu]++] = (struct chunk){ cpu, 0, a - 3, 0, d + a - 3, 3 };
		if (cpu == 1) {
			size_t b = s->size[1] - a;

			/* lost before the second window: its offsets are after the loss */
			per[1][n[1]++] = (struct chunk){ 1, TPZ_TRACE_LOST, a + CPU1_LOST, CPU1_LOST, d + a, b / 2 };
			per[1][n[1]++] = (struct chunk){ 1, 0, a + CPU1_LOST + b / 2, 0, d + a + b / 2, b - b / 2 };
		}
		if (cpu == 2 && end_loss)
			per[2][n[2]++] = (struct chunk){ 2, TPZ_TRACE_LOST, a + CPU2_END_LOST, CPU2_END_LOST,
							 NULL, 0 };
		left += n[cpu];
	}

	sample_header(&h);
	h.load_address = 0;
	h.ncpus = NCPUS;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_symbols(&w, "demo", BASE, syms, ARRAY_SIZE(syms), names,
					     sizeof(names)), 0);
	/* round robin, starting with the highest CPU: file order is not CPU order */
	for (size_t i = 0; left; i++) {
		for (int cpu = NCPUS - 1; cpu >= 0; cpu--) {
			const struct chunk *k = &per[cpu][i];
			struct trace_chunk c;

			if (i >= n[cpu])
				continue;
			c = (struct trace_chunk){ .cpu = k->cpu, .flags = k->flags, .offset = k->offset,
						  .lost = k->lost, .tsc = 1000 * (i + 1) + (u64)cpu };
			assert_int_equal(trace_write_trace(&w, &c, k->data, k->size), 0);
			left--;
		}
	}
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* ------------------------------------------------------------ decoding */

/* What the decode delivered, per CPU. */
struct seen {
	u64 ips[NCPUS][64];
	size_t nips[NCPUS];
	u32 seg[NCPUS][64];		/* the segment index of each instruction */
	unsigned int segments[NCPUS], errors, ends;
};

static void record_event(void *ctx, const struct ptd_event *ev)
{
	struct seen *v = ctx;
	u32 cpu = ev->seg->cpu;

	assert_true(cpu < NCPUS);
	switch (ev->type) {
	case PTD_EV_INSN:
		assert_true(v->nips[cpu] < ARRAY_SIZE(v->ips[cpu]));
		v->seg[cpu][v->nips[cpu]] = ev->seg->index;
		v->ips[cpu][v->nips[cpu]++] = ev->ip;
		break;
	case PTD_EV_SEGMENT: v->segments[cpu]++; break;
	case PTD_EV_ERROR: v->errors++; break;
	case PTD_EV_END: v->ends++; break;
	default: break;
	}
}

/* The library as ptdecode's main() composes it. */
struct run {
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_cpu_stats cst;
	struct ptd_stats total;
	struct ptd_calls calls, merged;
	struct seen seen;
	char *folded, *merged_folded, *stats;
	size_t folded_len, merged_len, stats_len;
};

static int decode_cpus(struct run *r, const struct membuf *m, const u32 *only, size_t nonly)
{
	struct ptd_consumer cons[3];
	FILE *f;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = parse_with_image(&r->c, &r->img, "cpus.tpz", m);
	ptd_ctx_init_cpus(&r->x, &r->c, &r->img, only, nonly);
	ptd_cpu_stats_init(&r->cst, &r->img, &r->x.segs);
	ptd_calls_init(&r->calls, &r->img, NULL);
	ptd_calls_set_per_cpu(&r->calls, r->x.per_cpu);
	ptd_scan_packets(&r->x, ptd_cpu_stats_packet, &r->cst, false);
	cons[0] = (struct ptd_consumer){ record_event, &r->seen };
	cons[1] = (struct ptd_consumer){ ptd_cpu_stats_event, &r->cst };
	cons[2] = (struct ptd_consumer){ ptd_calls_event, &r->calls };
	ptd_decode_flow(&r->x, cons, 3);
	ptd_calls_finish(&r->calls);
	ptd_cpu_stats_finish(&r->cst, &r->calls, &r->total);
	ptd_calls_merge_cpus(&r->calls, &r->merged);
	f = open_memstream(&r->folded, &r->folded_len);
	ptd_write_folded(&r->calls, f);
	fclose(f);
	f = open_memstream(&r->merged_folded, &r->merged_len);
	ptd_write_folded(&r->merged, f);
	fclose(f);
	f = open_memstream(&r->stats, &r->stats_len);
	if (r->x.per_cpu)	/* as main() prints it */
		ptd_stats_print_cpus(&r->total, &r->cst, &r->c, f);
	else
		ptd_stats_print(&r->total, &r->c, f);
	fclose(f);
	return ret;
}

static void run_free(struct run *r)
{
	ptd_calls_free(&r->merged);
	ptd_calls_free(&r->calls);
	ptd_cpu_stats_free(&r->cst);
	ptd_stats_free(&r->total);
	free_with_image(&r->x, &r->img, &r->c);
	free(r->folded);
	free(r->merged_folded);
	free(r->stats);
}

/* CPU @cpu's instructions from @from on are @want (offsets), in segment @seg. */
static void check_run(const struct run *r, u32 cpu, size_t from, const u8 *want, size_t n, u32 seg)
{
	char what[16];

	assert_true(from + n <= r->seen.nips[cpu]);
	snprintf(what, sizeof(what), "cpu %u ", cpu);
	check_ips_at(r->seen.ips[cpu], r->seen.seg[cpu], what, from, BASE, want, n, seg);
}

static void print_diags(const struct run *r)
{
	ptd_diags_print(&r->c.diags, 0, "cpus.tpz", stderr);
}

/* The fn counter named @name in @s (its instructions), 0 without one. */
static u64 fn_count(const struct ptd_stats *s, const char *name)
{
	for (size_t i = 0; i < s->nfns; i++)
		if (!strcmp(s->fns[i].name, name))
			return s->fns[i].count;
	return 0;
}

/* ------------------------------------------------------------ tests */

/*
 * All four CPUs: each stream decoded on its own, to the instructions it ran;
 * the one problem is CPU 1's gap, which costs nothing on the others.
 */
static void test_streams_apart(void **state)
{
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	static const u64 insns[NCPUS] = { sizeof(run0), sizeof(run1a) + sizeof(run1b), sizeof(run2),
					  sizeof(run3) };

	make_streams(&s);
	make_container(&m, &s, 0xf, false);
	assert_int_equal(decode_cpus(&r, &m, NULL, 0), 0);
	assert_true(r.x.per_cpu);
	if (r.c.diags.n != 1)
		print_diags(&r);
	/* one problem: CPU 1's gap, named with its CPU and what it cost */
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "cpu 1: a gap before stream offset"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "300 bytes lost"));
	assert_non_null(strstr(r.c.diags.v[0].msg, "between spin+0xe and spin+0x0"));
	assert_int_equal(r.seen.errors, 0);

	/* the streams, by CPU: the segments and the bytes of each */
	assert_int_equal(r.x.segs.ncpus, NCPUS);
	assert_int_equal(r.x.segs.n, NCPUS + 1);
	for (u32 cpu = 0; cpu < NCPUS; cpu++) {
		const struct ptd_cpu_stream *st = ptd_segments_cpu(&r.x.segs, cpu);

		assert_non_null(st);
		assert_int_equal(st->cpu, cpu);
		assert_int_equal(st->bytes, s.size[cpu]);
		assert_int_equal(st->lost, cpu == 1 ? CPU1_LOST : 0);
		assert_int_equal(st->nsegs, cpu == 1 ? 2 : 1);
		assert_null(st->end_why);
		assert_int_equal(r.seen.segments[cpu], st->nsegs);
		/* a segment's bytes are its CPU's stream, whole */
		assert_memory_equal(r.x.segs.v[st->first].data, s.data[cpu],
				    cpu == 1 ? s.cpu1_a : s.size[cpu]);
	}

	/* every CPU's exact instruction sequence */
	assert_int_equal(r.seen.nips[0], sizeof(run0));
	check_run(&r, 0, 0, run0, sizeof(run0), 0);
	assert_int_equal(r.seen.nips[1], sizeof(run1a) + sizeof(run1b));
	check_run(&r, 1, 0, run1a, sizeof(run1a), 0);
	check_run(&r, 1, sizeof(run1a), run1b, sizeof(run1b), 1);
	assert_int_equal(r.seen.nips[2], sizeof(run2));
	check_run(&r, 2, 0, run2, sizeof(run2), 0);
	assert_int_equal(r.seen.nips[3], sizeof(run3));
	check_run(&r, 3, 0, run3, sizeof(run3), 0);

	/* the counts per CPU and their total */
	assert_int_equal(r.cst.n, NCPUS);
	for (u32 cpu = 0; cpu < NCPUS; cpu++) {
		const struct ptd_stats *st = ptd_cpu_stats_get(&r.cst, cpu);

		assert_non_null(st);
		assert_int_equal(st->insns, insns[cpu]);
		assert_int_equal(st->gaps, cpu == 1);
		assert_int_equal(st->gap_bytes, cpu == 1 ? CPU1_LOST : 0);
		assert_int_equal(st->decode_errors, 0);
		assert_int_equal(st->segments, cpu == 1 ? 2 : 1);
		assert_int_equal(st->bytes, s.size[cpu]);
		assert_int_equal(st->pkt[ppt_psb], cpu == 1 ? 2 : 1);
	}
	assert_int_equal(r.total.insns, insns[0] + insns[1] + insns[2] + insns[3]);
	assert_int_equal(r.total.gaps, 1);
	assert_int_equal(r.total.segments, NCPUS + 1);
	assert_int_equal(r.total.bytes, s.size[0] + s.size[1] + s.size[2] + s.size[3]);
	assert_int_equal(r.total.bytes, r.c.trace_bytes);
	assert_int_equal(r.total.lost, CPU1_LOST);
	/* the functions each CPU ran, and theirs only */
	assert_int_equal(fn_count(ptd_cpu_stats_get(&r.cst, 1), "spin"), 22);
	assert_int_equal(fn_count(ptd_cpu_stats_get(&r.cst, 1), "bar"), 7);
	assert_int_equal(fn_count(ptd_cpu_stats_get(&r.cst, 1), "main"), 0);
	assert_int_equal(fn_count(ptd_cpu_stats_get(&r.cst, 0), "spin"), 0);
	assert_int_equal(fn_count(ptd_cpu_stats_get(&r.cst, 2), "walk"), 3);
	assert_int_equal(fn_count(&r.total, "main"), 12 + 9);
	assert_int_equal(fn_count(&r.total, "bar"), 14 + 7 + 7 + 11);
	/* the deepest stacks: main;foo;bar, spin;bar, walk;foo;bar */
	assert_int_equal(ptd_cpu_stats_get(&r.cst, 0)->call_depth, 3);
	assert_int_equal(ptd_cpu_stats_get(&r.cst, 1)->call_depth, 2);
	assert_int_equal(ptd_cpu_stats_get(&r.cst, 2)->call_depth, 3);
	assert_int_equal(r.total.call_depth, 3);

	/* the stats text: per CPU lines, the scripts' lines per CPU then the total */
	assert_non_null(strstr(r.stats, "cpus: 4 decoded (0, 1, 2, 3); the header says 4"));
	assert_non_null(strstr(r.stats,
		"result: decode.cpu cpu=1 insns=29 branches=16 bytes="));
	assert_non_null(strstr(r.stats, "lost=300 gaps=1 bad_packets=0 decode_errors=0 depth=2\n"
					"result: decode.cpu cpu=2 insns=12 "));
	assert_non_null(strstr(r.stats, "\nresult: decode insns=97 "));
	assert_non_null(strstr(r.stats, "  cpu 1: 29 instructions"));
	run_free(&r);
	membuf_free(&m);
}

/* The stack profile: each CPU's stacks start with it; merged, the same stack
 * of two CPUs (main;foo;bar on CPUs 0 and 3) is one line, the counts added. */
static void test_folded(void **state)
{
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	const struct ptd_fnode *n;

	make_streams(&s);
	make_container(&m, &s, 0xf, false);
	decode_cpus(&r, &m, NULL, 0);
	if (strcmp(r.folded, folded_per_cpu))
		fprintf(stderr, "%s", r.folded);
	assert_string_equal(r.folded, folded_per_cpu);
	if (strcmp(r.merged_folded, folded_merged))
		fprintf(stderr, "%s", r.merged_folded);
	assert_string_equal(r.merged_folded, folded_merged);
	assert_int_equal(r.calls.root.total, 97);
	assert_int_equal(r.merged.root.total, 97);
	n = ptd_calls_cpu_node(&r.calls, 2);
	assert_non_null(n);
	assert_string_equal(n->name, "cpu2");
	assert_int_equal(n->total, 12);
	assert_int_equal(n->self, 0);
	assert_null(ptd_calls_cpu_node(&r.calls, 4));
	run_free(&r);
	membuf_free(&m);
}

/* --cpu: only the CPUs asked for, in everything; CPU 1's gap is not theirs. */
static void test_select_cpus(void **state)
{
	static const u32 even[] = { 2, 0 }, odd[] = { 3, 1 };
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	u32 *cpus;

	make_streams(&s);
	make_container(&m, &s, 0xf, false);
	assert_int_equal(decode_cpus(&r, &m, even, ARRAY_SIZE(even)), 0);
	if (r.c.diags.n)
		print_diags(&r);
	assert_int_equal(r.c.diags.n, 0);	/* the gap is CPU 1's */
	assert_true(r.x.segs.partial);
	assert_int_equal(r.x.segs.ncpus, 2);
	assert_int_equal(r.x.segs.cpus[0].cpu, 0);	/* ascending */
	assert_int_equal(r.x.segs.cpus[1].cpu, 2);
	assert_int_equal(r.seen.nips[1] + r.seen.nips[3], 0);
	check_run(&r, 0, 0, run0, sizeof(run0), 0);
	check_run(&r, 2, 0, run2, sizeof(run2), 0);
	assert_int_equal(r.total.insns, sizeof(run0) + sizeof(run2));
	assert_int_equal(r.total.bytes, s.size[0] + s.size[2]);
	assert_int_equal(r.total.lost, 0);
	assert_false(r.total.all_cpus);
	assert_string_equal(r.folded,
		"cpu0;main 12\ncpu0;main;bar 3\ncpu0;main;foo 6\ncpu0;main;foo;bar 11\n"
		"cpu2;walk 3\ncpu2;walk;bar 4\ncpu2;walk;foo 2\ncpu2;walk;foo;bar 3\n");
	assert_non_null(strstr(r.stats, "cpus: 2 decoded (0, 2), others left out (--cpu)"));
	assert_null(strstr(r.stats, "cpu=1 "));
	assert_non_null(strstr(r.stats, "\nresult: decode insns=44 "));
	run_free(&r);

	assert_int_equal(decode_cpus(&r, &m, odd, ARRAY_SIZE(odd)), 0);
	assert_int_equal(r.c.diags.n, 1);
	assert_non_null(strstr(r.c.diags.v[0].msg, "cpu 1: a gap"));
	check_run(&r, 1, sizeof(run1a), run1b, sizeof(run1b), 1);
	check_run(&r, 3, 0, run3, sizeof(run3), 0);
	assert_int_equal(r.seen.nips[0] + r.seen.nips[2], 0);
	assert_int_equal(r.total.lost, CPU1_LOST);
	run_free(&r);

	/* the CPUs there are, for --cpu's error */
	ptd_container_parse(&r.c, "cpus.tpz", m.p, m.len);
	assert_int_equal(ptd_container_cpus(&r.c, &cpus), NCPUS);
	for (u32 i = 0; i < NCPUS; i++)
		assert_int_equal(cpus[i], i);
	free(cpus);
	assert_true(ptd_container_multi_cpu(&r.c));
	ptd_container_free(&r.c);
	membuf_free(&m);
}

/*
 * Without CPUs 0 and 3 in the file, and a loss after CPU 2's last chunk (an
 * empty LOST chunk ends its stream, as the kernel writes it): said with the
 * CPU, counted as CPU 2's, and CPU 2 still decodes whole.
 */
static void test_end_loss(void **state)
{
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	const struct ptd_cpu_stream *st;

	make_streams(&s);
	make_container(&m, &s, 0x6, true);
	assert_int_equal(decode_cpus(&r, &m, NULL, 0), 0);
	if (r.c.diags.n != 2)
		print_diags(&r);
	assert_int_equal(r.c.diags.n, 2);
	assert_non_null(strstr(r.c.diags.v[0].msg, "cpu 2: 5 bytes lost after the last chunk of its stream"));
	st = ptd_segments_cpu(&r.x.segs, 2);
	assert_int_equal(st->end_lost, CPU2_END_LOST);
	assert_int_equal(st->end_off, s.size[2] + CPU2_END_LOST);
	assert_int_equal(st->lost, CPU2_END_LOST);
	assert_int_equal(st->records, 4);
	check_run(&r, 2, 0, run2, sizeof(run2), 0);
	assert_int_equal(r.seen.nips[2], sizeof(run2));
	assert_int_equal(ptd_cpu_stats_get(&r.cst, 2)->lost, CPU2_END_LOST);
	assert_int_equal(ptd_cpu_stats_get(&r.cst, 1)->lost, CPU1_LOST);
	assert_int_equal(r.total.lost, CPU1_LOST + CPU2_END_LOST);
	assert_int_equal(r.c.lost_bytes, CPU1_LOST + CPU2_END_LOST);
	assert_string_equal(r.folded, "cpu1;spin 22\ncpu1;spin;bar 7\n"
			    "cpu2;walk 3\ncpu2;walk;bar 4\ncpu2;walk;foo 2\ncpu2;walk;foo;bar 3\n");
	run_free(&r);
	membuf_free(&m);
}

/* One CPU, as every container was before: no CPU level anywhere. */
static void test_one_cpu_as_before(void **state)
{
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	u8 *p;

	make_streams(&s);
	make_container(&m, &s, 0x1, false);
	/* a header of one CPU (the writer's own header says 1) */
	p = m.p + TPZ_REC_SIZE + offsetof(struct tpz_header, ncpus);
	*p = 1;
	reseal(m.p, 0);
	assert_int_equal(decode_cpus(&r, &m, NULL, 0), 0);
	assert_false(r.x.per_cpu);
	assert_string_equal(r.folded, "main 12\nmain;bar 3\nmain;foo 6\nmain;foo;bar 11\n");
	assert_string_equal(r.merged_folded, r.folded);
	assert_null(strstr(r.stats, "cpus:"));
	assert_null(strstr(r.stats, "decode.cpu"));
	assert_int_equal(r.total.insns, sizeof(run0));
	assert_int_equal(r.total.call_depth, 3);
	run_free(&r);
	membuf_free(&m);
}

/* ------------------------------------------------------------ perf */

/*
 * perf.data: a queue (AUXTRACE) per CPU segment, each with its CPU and its
 * own idx; perf decodes every CPU to the instructions libipt found, names
 * the CPU of each, and reports CPU 1's loss on CPU 1.
 */
static void test_perf_data(void **state)
{
	struct streams s;
	struct membuf m = { 0 };
	struct run r;
	char dir[] = "/tmp/topaz-cpus-XXXXXX", path[128], cmd[512], line[256];
	size_t len, nips[NCPUS] = { 0 }, queues = 0;
	u64 data_off, data_size, off;
	u8 *f;
	FILE *pf;

	make_streams(&s);
	make_container(&m, &s, 0xf, false);
	decode_cpus(&r, &m, NULL, 0);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(ptd_write_perf_data(&r.c, &r.x.segs, NULL, NULL, 0, path), 0);

	/* the AUXTRACE records: segment i's bytes, its CPU, queue i */
	f = (u8 *)read_whole(path, &len);
	assert_non_null(f);
	memcpy(&data_off, f + 40, 8);
	memcpy(&data_size, f + 48, 8);
	for (off = data_off; off < data_off + data_size;) {
		struct perf_event_header h;

		memcpy(&h, f + off, sizeof(h));
		assert_true(h.size >= 8);
		if (h.type == 71) {
			const struct ptd_segment *g = &r.x.segs.v[queues];
			u64 size;
			u32 idx, cpu;

			memcpy(&size, f + off + 8, 8);
			memcpy(&idx, f + off + 32, 4);
			memcpy(&cpu, f + off + 40, 4);
			assert_int_equal(idx, queues);
			assert_int_equal(cpu, g->cpu);
			assert_memory_equal(f + off + 48, g->data, g->size);
			off += size;
			queues++;
		}
		off += h.size;
	}
	assert_int_equal(queues, NCPUS + 1);
	free(f);

	/* perf's own decoder: every CPU, each one's instructions in order */
	snprintf(cmd, sizeof(cmd), "perf script -i %s --itrace=i1i -F cpu,ip 2>%s/stderr", path, dir);
	pf = popen(cmd, "r");
	assert_non_null(pf);
	while (fgets(line, sizeof(line), pf)) {
		unsigned int cpu;
		unsigned long long ip;

		if (sscanf(line, " [%u] %llx", &cpu, &ip) != 2 || cpu >= NCPUS)
			perf_unexpected(pf, line, sizeof(line));
		assert_true(nips[cpu] < r.seen.nips[cpu]);
		assert_int_equal(ip, r.seen.ips[cpu][nips[cpu]]);
		nips[cpu]++;
	}
	assert_int_equal(pclose(pf), 0);
	for (u32 cpu = 0; cpu < NCPUS; cpu++)
		assert_int_equal(nips[cpu], r.seen.nips[cpu]);
	/* the loss: once, on CPU 1 */
	snprintf(cmd, sizeof(cmd), "perf script -i %s --itrace=e 2>&1 | grep 'Lost trace data'", path);
	pf = popen(cmd, "r");
	assert_non_null(fgets(line, sizeof(line), pf));
	assert_non_null(strstr(line, " cpu 1 "));
	assert_null(fgets(line, sizeof(line), pf));
	pclose(pf);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	run_free(&r);
	membuf_free(&m);
}

/*
 * Timed (TSC packets): CPU 0 runs main, CPU 1 spin, and CPU 1's trace clock
 * starts at 0 (the software trace unit's did on the CPUs brought up after
 * the first). perf 6.1 takes a queue whose first TSC reads as 0 for one with
 * no time at all and segfaulted on it; the export gives CPU 1's queue 1 in
 * its reference's top byte (perf reads its TSCs as 2^56 + the packet's), CPU
 * 0's the TSC its chunk was drained at. perf then decodes both CPUs, and
 * CPU 1 alone, to libipt's instructions, every one with a time.
 */
#define TIMED_DRAIN	0x200000ull	/* the chunks' drain TSC (CPU 1's + 1) */

static size_t enc_timed(u8 *out, u64 start, const char *const *tnt, u64 tsc0, u64 tsc1)
{
	struct enc x;
	size_t n;

	enc_init(&x);
	put_psb(&x);
	put(&x, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc0 });
	put_psbend(&x);
	put_mode64(&x);
	put_ip(&x, ppt_tip_pge, pt_ipc_sext_48, start);
	put_tnt(&x, *tnt++);
	put(&x, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc1 });
	for (; *tnt; tnt++)
		put_tnt(&x, *tnt);
	put_ip(&x, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	n = enc_done(&x);
	memcpy(out, x.buf, n);
	return n;
}

static void make_timed_container(struct membuf *m)
{
	static const char *const t0[] = { DEMO_TNT_MAIN, NULL };
	static const char *const t1[] = { "!!.", ".!", NULL };
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct tpz_header h;
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR, { 0x40, 0x10, 13 }, { 0x60, 0x0c, 18 } };
	struct trace_totals t = { 0 };
	u8 d0[256], d1[256];
	size_t n0 = enc_timed(d0, BASE, t0, 0x100000, 0x100100);
	size_t n1 = enc_timed(d1, BASE + 0x40, t1, 0, 0x80);

	sample_header(&h);
	h.load_address = 0;
	h.ncpus = 2;
	h.rtit_ctl |= BIT_ULL(10);	/* TSCEn */
	h.tsc_hz = 1000000000;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_symbols(&w, "demo", BASE, syms, ARRAY_SIZE(syms), names,
					     sizeof(names)), 0);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .cpu = 1, .tsc = TIMED_DRAIN - 1 },
					   d1, n1), 0);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .cpu = 0, .tsc = TIMED_DRAIN },
					   d0, n0), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* Export @r, check its queues' references, let perf decode it: each CPU's
 * instructions as libipt's, each with a time. */
static void perf_timed(struct run *r, u32 ncpus)
{
	char dir[] = "/tmp/topaz-cpus-XXXXXX", path[128], cmd[512], line[256];
	size_t len, nips[2] = { 0 }, queues = 0;
	u64 data_off, data_size, off;
	u8 *f;
	FILE *pf;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(ptd_write_perf_data(&r->c, &r->x.segs, NULL, NULL, 0, path), 0);
	f = (u8 *)read_whole(path, &len);
	assert_non_null(f);
	memcpy(&data_off, f + 40, 8);
	memcpy(&data_size, f + 48, 8);
	for (off = data_off; off < data_off + data_size;) {
		struct perf_event_header h;

		memcpy(&h, f + off, sizeof(h));
		assert_true(h.size >= 8);
		if (h.type == 71) {
			u64 size, ref;
			u32 cpu;

			memcpy(&size, f + off + 8, 8);
			memcpy(&ref, f + off + 24, 8);
			memcpy(&cpu, f + off + 40, 4);
			if (cpu == 1)	/* its clock from 0: one wrap of the packet's TSC */
				assert_int_equal(ref, BIT_ULL(56) | (TIMED_DRAIN - 1));
			else
				assert_int_equal(ref, TIMED_DRAIN);
			off += size;
			queues++;
		}
		off += h.size;
	}
	assert_int_equal(queues, ncpus);
	free(f);

	snprintf(cmd, sizeof(cmd), "perf script -i %s --itrace=i1i -F cpu,time,ip 2>%s/stderr", path, dir);
	pf = popen(cmd, "r");
	assert_non_null(pf);
	while (fgets(line, sizeof(line), pf)) {
		unsigned int cpu;
		unsigned long long ip;
		double t;

		if (sscanf(line, " [%u] %lf: %llx", &cpu, &t, &ip) != 3 || cpu >= 2)
			perf_unexpected(pf, line, sizeof(line));
		assert_true(t > 0);
		assert_true(nips[cpu] < r->seen.nips[cpu]);
		assert_int_equal(ip, r->seen.ips[cpu][nips[cpu]]);
		nips[cpu]++;
	}
	assert_int_equal(pclose(pf), 0);	/* it segfaulted */
	for (u32 cpu = 0; cpu < 2; cpu++)
		assert_int_equal(nips[cpu], r->seen.nips[cpu]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_perf_data_timed(void **state)
{
	struct membuf m = { 0 };
	struct run r;
	const u32 one = 1;

	make_timed_container(&m);
	assert_int_equal(decode_cpus(&r, &m, NULL, 0), 0);
	assert_int_equal(r.seen.nips[0], sizeof(run0));
	assert_int_equal(r.seen.nips[1], sizeof(run1a));
	perf_timed(&r, 2);
	run_free(&r);
	/* CPU 1 alone */
	assert_int_equal(decode_cpus(&r, &m, &one, 1), 0);
	assert_int_equal(r.seen.nips[0], 0);
	assert_int_equal(r.seen.nips[1], sizeof(run1a));
	perf_timed(&r, 1);
	run_free(&r);
	membuf_free(&m);
}

/* ------------------------------------------------------------ the tool */

/* The command line: --cpu's errors name what exists; --cpu restricts every
 * output; --merge-cpus; --stats' per-CPU lines. */
static void test_tool(void **state)
{
	const char *bin = tool();
	char trace[] = "/tmp/topaz-cpus-XXXXXX", *out;
	struct streams s;
	struct membuf m = { 0 };

	if (!bin)
		skip();	/* make tools builds it (make all) */
	make_streams(&s);
	make_container(&m, &s, 0xf, false);
	write_temp(&m, trace);

	assert_int_equal(run_tool(bin, "--cpu 7", trace, &out), 2);
	assert_non_null(strstr(out, "--cpu 7: the container has no trace records of CPU 7; it has CPUs 0, 1, 2, 3\n"));
	free(out);
	assert_int_equal(run_tool(bin, "--cpu one", trace, &out), 2);
	assert_non_null(strstr(out, "ptdecode: --cpu: 'one' is not a CPU number or list"));
	free(out);
	assert_int_equal(run_tool(bin, "--cpu 1,", trace, &out), 2);
	free(out);

	assert_int_equal(run_tool(bin, "--folded", trace, &out), 1);	/* CPU 1's gap */
	assert_non_null(strstr(out, folded_per_cpu));
	free(out);
	assert_int_equal(run_tool(bin, "--folded --merge-cpus", trace, &out), 1);
	assert_non_null(strstr(out, folded_merged));
	free(out);
	assert_int_equal(run_tool(bin, "--folded --cpu 3 --cpu 0", trace, &out), 0);
	assert_string_equal(out, "cpu0;main 12\ncpu0;main;bar 3\ncpu0;main;foo 6\ncpu0;main;foo;bar 11\n"
				 "cpu3;main 9\ncpu3;main;bar 4\ncpu3;main;foo 4\ncpu3;main;foo;bar 7\n");
	free(out);
	assert_int_equal(run_tool(bin, "--folded --merge-cpus --cpu 0,3", trace, &out), 0);
	assert_string_equal(out, "main 21\nmain;bar 7\nmain;foo 10\nmain;foo;bar 18\n");
	free(out);

	assert_int_equal(run_tool(bin, "--stats --cpu 1-2", trace, &out), 1);
	assert_non_null(strstr(out, "result: decode.cpu cpu=1 insns=29 "));
	assert_non_null(strstr(out, "result: decode.cpu cpu=2 insns=12 "));
	assert_null(strstr(out, "cpu=0"));
	assert_non_null(strstr(out, "result: decode insns=41 "));
	free(out);
	assert_int_equal(run_tool(bin, "--insn --no-disasm --cpu 2", trace, &out), 0);
	assert_true(!strncmp(out, "[cpu 2, segment 0 at stream offset 0x0]\n", 40));
	assert_null(strstr(out, "[cpu 0"));
	free(out);
	assert_int_equal(run_tool(bin, "--summary", trace, &out), 1);
	assert_non_null(strstr(out, "trace: 97 instructions"));
	assert_non_null(strstr(out, "\ncpu 1: 29 instructions, 16 branches, "));
	assert_non_null(strstr(out, "; top: spin 75.9%, bar 24.1%\n"));
	free(out);

	unlink(trace);
	membuf_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streams_apart),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_select_cpus),
		cmocka_unit_test(test_end_loss),
		cmocka_unit_test(test_one_cpu_as_before),
		cmocka_unit_test(test_perf_data),
		cmocka_unit_test(test_perf_data_timed),
		cmocka_unit_test(test_tool),
	};
	return cmocka_run_group_tests_name("trace_cpus", tests, NULL, NULL);
}
