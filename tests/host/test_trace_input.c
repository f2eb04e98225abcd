// SPDX-License-Identifier: MIT
/*
 * ptdecode on hostile containers (issue 33, third round): stream offsets
 * that go back over bytes delivered before (reported as overlaps, not as
 * lost bytes, also where the end of a chunk is 2^64), names from the input
 * with control characters (escaped in every text output and in the problem
 * lines), CPUs beyond the header's count, --cpu numbers as large as the
 * container's field; and containers with tens of thousands of sideband
 * IMAGE records, or of CPUs, each with a stream of its own, decoded whole
 * (how the time grows with them is make bench's: tests/bench/decode_scale.sh).
 *
 * Run with arguments, the test writes such a container to a file instead,
 * for measuring the tool:
 *   test_trace_input images|cpus N FILE
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"
#include "trace_tool.h"

#define BASE	0x401000ull

#define LARGE	10000	/* records in the decodes at scale */

static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };
static const u8 run_main[] = { DEMO_RUN_MAIN };

/* The demo's run as a trace window (main to its jmp rax); its size. */
static size_t demo_window(u8 *buf)
{
	static const char *const tnt[] = { DEMO_TNT_MAIN, NULL };

	return enc_window(buf, BASE, tnt);
}

/* Header (@ncpus), the demo image named @image, its symbols named by @names
 * (main, foo, bar: "main\0foo\0bar" in the demo's layout, or others). */
static void begin(struct trace_writer *w, struct trace_sink *sink, u8 ncpus, const char *image,
		  const char *names, u32 names_size, const struct tpz_sym *syms)
{
	struct tpz_header h;

	sample_header(&h);
	h.load_address = 0;
	h.ncpus = ncpus;
	trace_writer_init(w, sink);
	assert_int_equal(trace_write_header(w, &h), 0);
	assert_int_equal(trace_write_image(w, image, BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_symbols(w, image, BASE, syms, 3, names, names_size), 0);
}

static void begin_demo(struct trace_writer *w, struct trace_sink *sink, u8 ncpus)
{
	static const char names[] = "main\0foo\0bar";
	static const struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR };

	begin(w, sink, ncpus, "demo", names, sizeof(names), syms);
}

static void chunk(struct trace_writer *w, u32 cpu, u64 offset, const u8 *data, size_t n)
{
	assert_int_equal(trace_write_trace(w, &(struct trace_chunk){ .cpu = cpu, .offset = offset }, data, n),
			 0);
}

/* A chunk of the demo's window: @size bytes of it from @from (0: to its end). */
struct piece {
	u32 cpu;
	u64 offset;
	size_t from, size;
};

/* The demo (its header says @ncpus) with @n pieces, in that order. */
static void demo_container(struct membuf *m, u8 ncpus, const struct piece *p, size_t n)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	u8 win[512];
	size_t len = demo_window(win);

	begin_demo(&w, &sink, ncpus);
	for (size_t i = 0; i < n; i++)
		chunk(&w, p[i].cpu, p[i].offset, win + p[i].from, p[i].size ? p[i].size : len - p[i].from);
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
}

/* ------------------------------------------------------------ decoding */

/* What ptdecode prints of a container: --calls, --insn, --stats, --summary
 * and the problem lines, each into a string. */
struct out {
	char *calls, *insn, *stats, *summary, *problems;
	size_t calls_len, insn_len, stats_len, summary_len, problems_len;
	u64 insns;
	size_t problems_n;
};

/* @text: the call tree and the instructions too (not for the timed runs). */
static void decode(struct out *o, const struct membuf *m, bool text)
{
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_cpu_stats cst;
	struct ptd_stats total;
	struct ptd_calls calls;
	struct ptd_insn_printer ip;
	struct ptd_consumer cons[3];
	FILE *fc, *fi, *fs, *fm, *fp;

	memset(o, 0, sizeof(*o));
	fc = open_memstream(&o->calls, &o->calls_len);
	fi = open_memstream(&o->insn, &o->insn_len);
	fs = open_memstream(&o->stats, &o->stats_len);
	fm = open_memstream(&o->summary, &o->summary_len);
	fp = open_memstream(&o->problems, &o->problems_len);
	parse_with_image(&c, &img, "input.tpz", m);
	ptd_ctx_init(&x, &c, &img);
	ptd_cpu_stats_init(&cst, &img, &x.segs);
	ptd_calls_init(&calls, &img, text ? fc : NULL);
	ptd_calls_set_per_cpu(&calls, x.per_cpu);
	ptd_insn_printer_init(&ip, fi, &img, false);
	ptd_scan_packets(&x, ptd_cpu_stats_packet, &cst, false);
	cons[0] = (struct ptd_consumer){ ptd_cpu_stats_event, &cst };
	cons[1] = (struct ptd_consumer){ ptd_calls_event, &calls };
	cons[2] = (struct ptd_consumer){ ptd_insn_event, &ip };
	ptd_decode_flow(&x, cons, text ? 3 : 2);
	ptd_calls_finish(&calls);
	ptd_cpu_stats_finish(&cst, &calls, &total);
	ptd_insn_printer_free(&ip);
	if (x.per_cpu) {
		ptd_stats_print_cpus(&total, &cst, &c, fs);
		ptd_summary_print(&total, &c, fm, 5);
		ptd_cpu_summary_print(&cst, fm, 3);
	} else {
		ptd_stats_print(&total, &c, fs);
		ptd_summary_print(&total, &c, fm, 5);
	}
	ptd_diags_print(&c.diags, 0, c.name, fp);
	o->problems_n = ptd_diags_count(&c.diags);
	o->insns = total.insns;
	fclose(fc);
	fclose(fi);
	fclose(fs);
	fclose(fm);
	fclose(fp);
	ptd_calls_free(&calls);
	ptd_cpu_stats_free(&cst);
	ptd_stats_free(&total);
	free_with_image(&x, &img, &c);
}

static void out_free(struct out *o)
{
	free(o->calls);
	free(o->insn);
	free(o->stats);
	free(o->summary);
	free(o->problems);
}

/* @s, to see what a test failed on. */
static void show(const char *what, const char *s)
{
	fprintf(stderr, "--- %s:\n%s", what, s);
}

/* ------------------------------------------------------------ overlaps */

/*
 * A chunk that ends at 2^64, and a chunk that goes back 10 bytes into it:
 * its end wrapped to 0 made the second a gap of 2^64 - 10 bytes ("bytes
 * lost" near 2^64, the gaps' sum wrapped). Now: 10 bytes overlap; the only
 * gap is the one before the stream's first chunk (its offset says so many
 * bytes came before).
 */
static void test_overlap_at_the_top(void **state)
{
	u8 win[512];
	size_t n = demo_window(win);
	const struct piece p[] = { { 0, 0ull - n, 0, 0 }, { 0, 0ull - 10, n - 10, 10 } };
	struct membuf m = { 0 };
	char want[160];
	struct out o;

	demo_container(&m, 1, p, ARRAY_SIZE(p));
	decode(&o, &m, true);
	assert_int_equal(o.insns, ARRAY_SIZE(run_main));
	snprintf(want, sizeof(want), "1 gap (%llu bytes missing), 1 overlap (10 bytes delivered twice);",
		 0ull - n);
	assert_non_null(strstr(o.stats, want));
	assert_non_null(strstr(o.problems, "10 bytes overlap"));
	assert_null(strstr(o.problems, "18446744073709551606"));	/* 2^64 - 10 */
	out_free(&o);
	membuf_free(&m);
}

/*
 * A chunk inside the bytes before it, then one that continues those: no
 * byte is missing (the third chunk was counted a gap of what the second
 * did not reach), two segments start after the overlap.
 */
static void test_overlap_inside(void **state)
{
	u8 win[512];
	size_t n = demo_window(win);
	const struct piece p[] = { { 0, 0, 0, 0 }, { 0, 4, 4, 10 }, { 0, n, 0, 0 } };
	struct membuf m = { 0 };
	struct out o;

	demo_container(&m, 1, p, ARRAY_SIZE(p));
	decode(&o, &m, true);
	assert_non_null(strstr(o.stats, " 0 gaps (0 bytes missing), 2 overlaps (10 bytes delivered twice);"));
	assert_non_null(strstr(o.problems, "stream offset 0x4 is "));
	assert_non_null(strstr(o.problems, ": 10 bytes overlap"));
	assert_null(strstr(o.problems, "damaged or missing"));
	assert_int_equal(o.insns, 2 * ARRAY_SIZE(run_main));
	out_free(&o);
	membuf_free(&m);
}

/* ------------------------------------------------------------ names */

/* No byte of @s is a control character but the line ends, none above 0x7e. */
static void no_control(const char *what, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < ' ' && c != '\n') || c >= 0x7f) {
			show(what, s);
			fail_msg("%s: byte 0x%02x at %zu", what, c, i);
		}
	}
}

/*
 * Symbol and image names with a newline, a terminal escape sequence, a bell
 * and a byte above 0x7f: written as \xHH in --calls, --insn, --stats,
 * --summary and the problem lines (an image overlapping another names both);
 * a problem stays one line.
 */
static void test_names_escaped(void **state)
{
	static const char names[] = "ma\nin\0f\x1b[2Joo\0b\\ar\xff";
	static const struct tpz_sym syms[] = { { 0x00, 0x15, 0 }, { 0x20, 0x06, 6 }, { 0x30, 0x0a, 14 } };
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	u8 win[512], nop[16];
	size_t n = demo_window(win), lines = 0;
	struct out o;

	memset(nop, 0x90, sizeof(nop));
	begin(&w, &sink, 1, "de\x07mo\r", names, sizeof(names), syms);
	assert_int_equal(trace_write_image(&w, "pa\ntch", BASE + 0x30, nop, sizeof(nop)), 0);
	chunk(&w, 0, 0, win, n);
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
	decode(&o, &m, true);
	no_control("calls", o.calls, o.calls_len);
	no_control("insn", o.insn, o.insn_len);
	no_control("stats", o.stats, o.stats_len);
	no_control("summary", o.summary, o.summary_len);
	no_control("problems", o.problems, o.problems_len);
	assert_non_null(strstr(o.calls, "ma\\x0ain() {"));
	assert_non_null(strstr(o.calls, "f\\x1b[2Joo() {"));
	assert_non_null(strstr(o.calls, "b\\x5car\\xff();"));
	assert_non_null(strstr(o.insn, "ma\\x0ain+0x0"));
	assert_non_null(strstr(o.stats, "%  ma\\x0ain\n"));
	assert_non_null(strstr(o.summary, "top functions: b\\x5car\\xff "));
	assert_non_null(strstr(o.problems, "sideband image pa\\x0atch at 0x401030..0x401040 overlaps de\\x07mo\\x0d at"));
	for (size_t i = 0; i < o.problems_len; i++)
		lines += o.problems[i] == '\n';
	assert_int_equal(lines, o.problems_n);
	out_free(&o);
	membuf_free(&m);
}

/* The helper: names without a byte to escape as they are, escapes never cut in two. */
static void test_escape(void **state)
{
	char buf[16];

	assert_string_equal(ptd_escape("plain name", buf, sizeof(buf)), "plain name");
	assert_string_equal(ptd_escape("a\nb", buf, sizeof(buf)), "a\\x0ab");
	/* cut before an escape that does not fit */
	assert_int_equal(ptd_escape_into(buf, 7, "abc\x1b", NULL, true), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(ptd_escape_into(buf, sizeof(buf), "a b;c", " ;", true), 11);
	assert_string_equal(buf, "a\\x20b\\x3bc");
	assert_int_equal(ptd_escape_into(buf, sizeof(buf), "a\\b", NULL, false), 3);
}

/* ------------------------------------------------------------ CPUs */

/* The header says 2 CPUs: records of CPU 5 are a problem (decoded all the same). */
static void test_cpu_beyond_header(void **state)
{
	const struct piece p[] = { { 0, 0, 0, 0 }, { 5, 0, 0, 0 } };
	struct membuf m = { 0 };
	struct out o;

	demo_container(&m, 2, p, ARRAY_SIZE(p));
	decode(&o, &m, true);
	assert_int_equal(o.problems_n, 1);
	assert_non_null(strstr(o.problems, "cpu 5: the header says 2 CPUs may have trace records"));
	assert_int_equal(o.insns, 2 * ARRAY_SIZE(run_main));
	out_free(&o);
	membuf_free(&m);
}

/*
 * --cpu takes any number the container's cpu field holds (it stopped at
 * 65535), and a range as large as that field without making a CPU of each:
 * the first CPU of it without records is the error.
 */
static void test_cpu_option(void **state)
{
	const struct piece p[] = { { 0, 0, 0, 0 }, { 70000, 0, 0, 0 }, { 4294967295u, 0, 0, 0 } };
	const char *bin = tool();
	char trace[] = "/tmp/topaz-input-XXXXXX", *out;
	struct membuf m = { 0 };

	if (!bin)
		skip();	/* make tools builds it (make all) */
	demo_container(&m, 255, p, ARRAY_SIZE(p));
	write_temp(&m, trace);

	assert_int_equal(run_tool(bin, "--stats --cpu 70000,4294967295", trace, &out), 1);
	assert_non_null(strstr(out, "result: decode.cpu cpu=70000 insns=32 "));
	assert_non_null(strstr(out, "result: decode.cpu cpu=4294967295 insns=32 "));
	assert_null(strstr(out, "cpu=0 "));
	free(out);
	assert_int_equal(run_tool(bin, "--stats --cpu 0-4294967295", trace, &out), 2);
	assert_non_null(strstr(out, "--cpu 1: the container has no trace records of CPU 1; it has CPUs 0, 70000, 4294967295\n"));
	free(out);
	assert_int_equal(run_tool(bin, "--stats --cpu 4294967296", trace, &out), 2);
	assert_non_null(strstr(out, "'4294967296' is not a CPU number"));
	free(out);
	unlink(trace);
	membuf_free(&m);
}

/* @dir/@name exists. */
static bool exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

/*
 * --out-dir writes the outputs asked for, all when none is (make run asks
 * for all but the listings: insn.txt was 6.7 GB for fw.run=all); it lists
 * each file with its size, and the listings it left out with theirs.
 */
static void test_out_dir(void **state)
{
	const struct piece p[] = { { 0, 0, 0, 0 } };
	const char *bin = tool();
	char trace[] = "/tmp/topaz-input-XXXXXX", dir[] = "/tmp/topaz-outdir-XXXXXX";
	char args[256], *out;
	struct membuf m = { 0 };

	if (!bin)
		skip();	/* make tools builds it (make all) */
	demo_container(&m, 1, p, ARRAY_SIZE(p));
	write_temp(&m, trace);
	assert_non_null(mkdtemp(dir));

	snprintf(args, sizeof(args), "--out-dir %s --calls --stats --folded", dir);
	assert_int_equal(run_tool(bin, args, trace, &out), 0);
	assert_true(exists_in(dir, "calls.txt") && exists_in(dir, "stats.txt") &&
		    exists_in(dir, "folded.txt") && exists_in(dir, "flame.svg"));
	assert_false(exists_in(dir, "insn.txt") || exists_in(dir, "packets.txt"));
	assert_non_null(strstr(out, ": calls.txt "));
	assert_non_null(strstr(out, "not written: insn.txt, every instruction (about 2.9 KB here): --insn\n"));
	assert_non_null(strstr(out, "not written: packets.txt, every packet (about "));
	assert_null(strstr(out, " insn.txt 1"));
	free(out);

	/* none asked for: every one, and nothing said missing */
	snprintf(args, sizeof(args), "--out-dir %s", dir);
	assert_int_equal(run_tool(bin, args, trace, &out), 0);
	assert_true(exists_in(dir, "insn.txt") && exists_in(dir, "packets.txt"));
	assert_non_null(strstr(out, ", insn.txt "));
	assert_null(strstr(out, "not written"));
	free(out);

	for (const char *const *n = (const char *const[]){ "packets.txt", "insn.txt", "calls.txt",
			"stats.txt", "folded.txt", "flame.svg", "problems.txt", NULL }; *n; n++) {
		snprintf(args, sizeof(args), "%s/%s", dir, *n);
		unlink(args);
	}
	rmdir(dir);
	unlink(trace);
	membuf_free(&m);
}

/* ------------------------------------------------------------ scale */

/*
 * @n IMAGE records: the demo program and @n - 1 images of 16 bytes (96-byte
 * records), each with a name of its own, 16 bytes apart (no two adjacent);
 * one CPU runs the demo.
 */
static void make_images(struct membuf *m, size_t n)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	u8 bytes[16], win[512];
	char name[32];

	begin_demo(&w, &sink, 1);
	memset(bytes, 0x90, sizeof(bytes));
	for (size_t i = 1; i < n; i++) {
		snprintf(name, sizeof(name), "img%zu", i);
		assert_int_equal(trace_write_image(&w, name, 0x10000000ull + 32 * i, bytes, sizeof(bytes)), 0);
	}
	chunk(&w, 0, 0, win, demo_window(win));
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
}

/* @n CPUs, each a stream of one record: the demo's run. The header says 255
 * (the most its field holds): the CPUs above are each a problem. */
static void make_cpus(struct membuf *m, size_t n)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	u8 win[512];
	size_t len = demo_window(win);

	begin_demo(&w, &sink, (u8)min(n, (size_t)255));
	for (size_t i = 0; i < n; i++)
		chunk(&w, (u32)i, 0, win, len);
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
}

/*
 * A container of @n records made by @make decodes whole: every window's
 * instructions. How its time grows with @n (it was quadratic: 40,000 images
 * took 41 s, 40,000 CPUs 27 s) is measured by make bench
 * (tests/bench/decode_scale.sh), not timed here.
 */
static void decode_many(void (*make)(struct membuf *, size_t), size_t n, u64 want_insns)
{
	struct membuf m = { 0 };
	struct out o;

	make(&m, n);
	decode(&o, &m, false);
	assert_int_equal(o.insns, want_insns);
	out_free(&o);
	membuf_free(&m);
}

static void test_many_images(void **state)
{
	decode_many(make_images, LARGE, ARRAY_SIZE(run_main));
}

static void test_many_cpus(void **state)
{
	decode_many(make_cpus, LARGE, LARGE * ARRAY_SIZE(run_main));
}

/*
 * The lookups in log time answer what a search of the regions in mapping
 * order does: random regions, many overlapping, some wrapping past the top
 * of the address space; each filled with its number, read back at their
 * edges and at random addresses. The overlap problems: one per image that
 * overlaps one mapped before it.
 */
static void test_spans(void **state)
{
	enum { N = 300 };
	struct { u64 vaddr; u32 size; } reg[N];
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	struct ptd_container c;
	struct ptd_image img;
	size_t overlapping = 0;
	u64 seed = 12345;
	u8 *bytes = malloc(1 << 16);

	assert_non_null(bytes);
	begin_demo(&w, &sink, 1);
	for (size_t i = 0; i < N; i++) {
		char name[16];

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		reg[i].vaddr = i % 50 == 7 ? ~0ull - (seed >> 60) : 0x10000 + ((seed >> 40) & 0xfffff);
		reg[i].size = 1 + (u32)((seed >> 20) % (i % 3 ? 0x100 : 0x8000));
		snprintf(name, sizeof(name), "r%zu", i);
		memset(bytes, (int)i, reg[i].size);
		assert_int_equal(trace_write_image(&w, name, reg[i].vaddr, bytes, reg[i].size), 0);
		for (size_t k = 0; k < i; k++) {
			if (reg[i].vaddr - reg[k].vaddr < reg[k].size ||
			    reg[k].vaddr - reg[i].vaddr < reg[i].size) {
				overlapping++;
				break;
			}
		}
	}
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
	parse_with_image(&c, &img, "spans.tpz", &m);
	assert_int_equal(ptd_diags_count(&c.diags), overlapping);
	for (size_t t = 0; t < 4 * N + 20000; t++) {
		u64 addr;
		long want = -1;
		u8 got;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (t < 4 * N)	/* each region's first and last byte, and the ones around */
			addr = reg[t / 4].vaddr + (t % 4 == 0 ? 0 : t % 4 == 1 ? reg[t / 4].size - 1 :
						   t % 4 == 2 ? (u64)-1 : reg[t / 4].size);
		else
			addr = (seed >> 63) ? 0x10000 + ((seed >> 40) & 0x10ffff) : ~0ull - (seed >> 54);
		/* the demo image is region 0, mapped first */
		if (addr - BASE < sizeof(code))
			continue;
		for (size_t k = 0; k < N && want < 0; k++)
			if (addr - reg[k].vaddr < reg[k].size)
				want = (long)k;
		if (want < 0) {
			assert_int_equal(ptd_image_read(&got, 1, NULL, addr, &img), -pte_nomap);
		} else {
			assert_int_equal(ptd_image_read(&got, 1, NULL, addr, &img), 1);
			assert_int_equal(got, (u8)want);
		}
	}
	ptd_image_free(&img);
	ptd_container_free(&c);
	membuf_free(&m);
	free(bytes);
}

/* "images N FILE" or "cpus N FILE": write that container (for measuring). */
static int write_container(char **argv)
{
	struct membuf m = { 0 };
	size_t n = strtoul(argv[2], NULL, 0);
	FILE *f;

	if (!strcmp(argv[1], "images"))
		make_images(&m, n);
	else if (!strcmp(argv[1], "cpus"))
		make_cpus(&m, n);
	else
		return 2;
	f = fopen(argv[3], "wb");
	if (!f || fwrite(m.p, 1, m.len, f) != m.len || fclose(f))
		return 1;
	membuf_free(&m);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlap_at_the_top),
		cmocka_unit_test(test_overlap_inside),
		cmocka_unit_test(test_names_escaped),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_cpu_beyond_header),
		cmocka_unit_test(test_cpu_option),
		cmocka_unit_test(test_out_dir),
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_many_images),
		cmocka_unit_test(test_many_cpus),
	};

	if (argc == 4)
		return write_container(argv);
	return cmocka_run_group_tests_name("trace_input", tests, NULL, NULL);
}
