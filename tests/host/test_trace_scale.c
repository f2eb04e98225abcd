// SPDX-License-Identifier: MIT
/*
 * ptdecode on containers with many records of one kind: tens of thousands of
 * sideband IMAGE records, or of CPUs, each with a stream of its own. The
 * decode must stay linear in them (it was quadratic: 40,000 images took 41 s,
 * 40,000 CPUs 27 s), checked as the CPU time of 10,000 against 2,500.
 *
 * The containers are written with the kernel's writer. Run with arguments,
 * the test writes one to a file instead, for measuring the tool:
 *   test_trace_scale images|cpus N FILE
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <time.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"

#define BASE	0x401000ull
#define SMALL	2500
#define LARGE	(4 * SMALL)

static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };
static const char names[] = "main\0foo\0bar";
static const u8 run_main[] = { DEMO_RUN_MAIN };

/* Header, the demo program's image and symbols (trace_test_enc.h). */
static void begin(struct trace_writer *w, struct trace_sink *sink, u8 ncpus)
{
	struct tpz_header h;
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR };

	sample_header(&h);
	h.load_address = 0;
	h.ncpus = ncpus;
	trace_writer_init(w, sink);
	assert_int_equal(trace_write_header(w, &h), 0);
	assert_int_equal(trace_write_image(w, "demo", BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_symbols(w, "demo", BASE, syms, ARRAY_SIZE(syms), names,
					     sizeof(names)), 0);
}

/* The demo program's run as a trace window of @cpu. */
static void window(struct trace_writer *w, u32 cpu)
{
	static const char *const tnt[] = { DEMO_TNT_MAIN, NULL };
	u8 buf[512];
	size_t n = enc_window(buf, BASE, tnt);

	assert_int_equal(trace_write_trace(w, &(struct trace_chunk){ .cpu = cpu }, buf, n), 0);
}

/*
 * @n IMAGE records: the demo program and @n - 1 images of 16 bytes (96-byte
 * records), each with a name of its own, 16 bytes apart (no two adjacent);
 * one CPU runs the demo.
 */
static void make_images(struct membuf *m, size_t n)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	u8 bytes[16];
	char name[32];

	begin(&w, &sink, 1);
	memset(bytes, 0x90, sizeof(bytes));
	for (size_t i = 1; i < n; i++) {
		snprintf(name, sizeof(name), "img%zu", i);
		assert_int_equal(trace_write_image(&w, name, 0x10000000ull + 32 * i, bytes, sizeof(bytes)), 0);
	}
	window(&w, 0);
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
}

/* @n CPUs, each a stream of one record: the demo's run. The header says 255
 * (the most its field holds): the CPUs above are each a problem. */
static void make_cpus(struct membuf *m, size_t n)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;

	begin(&w, &sink, (u8)min(n, (size_t)255));
	for (size_t i = 0; i < n; i++)
		window(&w, (u32)i);
	assert_int_equal(trace_write_trailer(&w, &(struct trace_totals){ 0 }), 0);
}

/* ------------------------------------------------------------ decoding */

/* What ptdecode --summary does with @m, as main() composes it; the
 * instructions decoded. */
static u64 summary(const struct membuf *m)
{
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_cpu_stats cst;
	struct ptd_stats total;
	struct ptd_calls calls;
	struct ptd_consumer cons[2];
	FILE *out = fopen("/dev/null", "w");
	u64 insns;

	assert_non_null(out);
	parse_with_image(&c, &img, "scale.tpz", m);
	ptd_ctx_init(&x, &c, &img);
	ptd_cpu_stats_init(&cst, &img, &x.segs);
	ptd_calls_init(&calls, &img, NULL);
	ptd_calls_set_per_cpu(&calls, x.per_cpu);
	ptd_scan_packets(&x, ptd_cpu_stats_packet, &cst, false);
	cons[0] = (struct ptd_consumer){ ptd_cpu_stats_event, &cst };
	cons[1] = (struct ptd_consumer){ ptd_calls_event, &calls };
	ptd_decode_flow(&x, cons, 2);
	ptd_calls_finish(&calls);
	ptd_cpu_stats_finish(&cst, &calls, &total);
	ptd_summary_print(&total, &c, out, 5);
	if (x.per_cpu)
		ptd_cpu_summary_print(&cst, out, 3);
	ptd_diags_print(&c.diags, 0, c.name, out);
	insns = total.insns;
	fclose(out);
	ptd_calls_free(&calls);
	ptd_cpu_stats_free(&cst);
	ptd_stats_free(&total);
	free_with_image(&x, &img, &c);
	return insns;
}

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * The CPU time summary() takes on a container of @n, made by @make; the
 * fastest of two runs (the other programs on the machine cost us little CPU
 * time, but caches and page faults vary).
 */
static double timed(void (*make)(struct membuf *, size_t), size_t n, u64 want_insns)
{
	struct membuf m = { 0 };
	double best = 1e9;

	make(&m, n);
	for (int i = 0; i < 2; i++) {
		double t0 = cpu_seconds();

		assert_int_equal(summary(&m), want_insns);
		best = min(best, cpu_seconds() - t0);
	}
	membuf_free(&m);
	return best;
}

/*
 * Four times the records cost about four times the time (linear); it was
 * sixteen (quadratic: 10,000 images took 22 s here, 2,500 1.4 s). Eight leaves room for noise on a loaded machine
 * without letting a quadratic cost through.
 */
static void check_linear(const char *what, double small, double large)
{
	fprintf(stderr, "%s: %d in %.3f s, %d in %.3f s CPU time (x%.1f)\n", what, SMALL, small, LARGE,
		large, large / small);
	assert_true(large < 8 * small + 0.05);
}

static void test_many_images(void **state)
{
	double a = timed(make_images, SMALL, ARRAY_SIZE(run_main));
	double b = timed(make_images, LARGE, ARRAY_SIZE(run_main));

	check_linear("images", a, b);
}

static void test_many_cpus(void **state)
{
	double a = timed(make_cpus, SMALL, SMALL * ARRAY_SIZE(run_main));
	double b = timed(make_cpus, LARGE, LARGE * ARRAY_SIZE(run_main));

	check_linear("cpus", a, b);
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
	begin(&w, &sink, 1);
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
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_many_images),
		cmocka_unit_test(test_many_cpus),
	};

	if (argc == 4)
		return write_container(argv);
	return cmocka_run_group_tests_name("trace_scale", tests, NULL, NULL);
}
