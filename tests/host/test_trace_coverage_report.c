// SPDX-License-Identifier: MIT
/*
 * ptdecode --coverage's library (tools/ptdecode/coverage.c): the small
 * program of trace_test_enc.h traced, its blocks written as drcov and read
 * back as Lighthouse reads the file; a function of this very binary traced,
 * its source lines written as lcov from the binary's DWARF and passed
 * through genhtml; two different runs compared with ptd_cov_diff().
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "trace_test_enc.h"

#define BASE 0x401000ull

static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };

/* The demo program at BASE with its symbols, and the packets @pt. */
static void demo_container(struct membuf *m, const u8 *pt, size_t len)
{
	static const char names[] = "main\0foo\0bar";
	struct tpz_sym syms[] = { DEMO_SYMS_MAIN_FOO_BAR };
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct trace_chunk ch = { 0 };
	struct trace_totals t = { 0 };
	struct tpz_header h;

	sample_header(&h);
	h.load_address = 0;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, "demo", BASE, code, sizeof(code)), 0);
	assert_int_equal(trace_write_symbols(&w, "demo", BASE, syms, 3, names, sizeof(names)), 0);
	assert_int_equal(trace_write_trace(&w, &ch, pt, len), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* A parsed container and its image, kept until the report is freed. */
struct input {
	struct ptd_container c;
	struct ptd_image img;
	struct membuf m;
};

static void demo_input(struct input *in, const char *const *tnt)
{
	u8 pt[256];
	size_t n = enc_window(pt, BASE, tnt);

	memset(in, 0, sizeof(*in));
	demo_container(&in->m, pt, n);
	assert_int_equal(parse_with_image(&in->c, &in->img, "demo.tpz", &in->m), 0);
}

static void input_free(struct input *in)
{
	ptd_image_free(&in->img);
	ptd_container_free(&in->c);
	membuf_free(&in->m);
}

static char *temp_dir(void)
{
	char *dir = strdup("/tmp/test_trace_coverage.XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

/* What ptd_cov_write() printed (NUL-terminated, malloc'd). */
static char *write_report(struct ptd_cov *cv, const char *dir, int *ret)
{
	char *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	*ret = ptd_cov_write(cv, dir, f);
	fclose(f);
	return text;
}

/* A drcov file's blocks, checked as Lighthouse parses it: the header lines,
 * the module table's columns, "BB Table: N bbs" and N 8-byte entries. */
static size_t read_drcov(const char *path, u32 *off, u16 *size, size_t max, char *module, size_t msize)
{
	size_t len, nbbs = 0;
	char *p = read_whole(path, &len), *line, *end = NULL;
	const char *want[] = { "DRCOV VERSION: 2", "DRCOV FLAVOR: drcov", "Module Table: version 5, count 1",
			       "Columns: id, containing_id, start, end, entry, offset, preferred_base, checksum, timestamp, path" };
	const u8 *bb;

	assert_non_null(p);
	line = p;
	for (size_t i = 0; i < 4; i++) {
		end = strchr(line, '\n');
		assert_non_null(end);
		*end = '\0';
		assert_string_equal(line, want[i]);
		line = end + 1;
	}
	/* "  0,   0, 0x..start, 0x..end, entry, offset, preferred_base, checksum, timestamp, path" */
	end = strchr(line, '\n');
	*end = '\0';
	assert_non_null(strstr(line, "  0,   0, 0x0000000000401000, 0x0000000000401040, "));
	snprintf(module, msize, "%s", strrchr(line, ' ') + 1);
	line = end + 1;
	assert_int_equal(sscanf(line, "BB Table: %zu bbs\n", &nbbs), 1);
	bb = (const u8 *)strchr(line, '\n') + 1;
	assert_int_equal((size_t)(p + len - (const char *)bb), 8 * nbbs);
	assert_true(nbbs <= max);
	for (size_t i = 0; i < nbbs; i++, bb += 8) {
		off[i] = bb[0] | bb[1] << 8 | bb[2] << 16 | (u32)bb[3] << 24;
		size[i] = (u16)(bb[4] | bb[5] << 8);
		assert_int_equal(bb[6] | bb[7] << 8, 0);	/* module id 0 */
		assert_true(size[i] > 0 && off[i] + size[i] <= sizeof(code));
	}
	free(p);
	return nbbs;
}

/*
 * The demo's blocks (docs/coverage.md): main's start (mov, call foo), the
 * loop's call foo, dec/jnz, call bar, jmp rax; foo's call bar and its ret;
 * bar's test/jz, its nop (jz not taken) and its ret (taken).
 */
static void test_drcov(void **state)
{
	static const char *const tnt[] = { DEMO_TNT_MAIN, NULL };
	static const u32 want[] = { 0x00, 0x05, 0x0a, 0x0e, 0x13, 0x20, 0x25, 0x30, 0x38, 0x39 };
	struct ptd_cov *cv = ptd_cov_new(NULL, NULL);
	struct input in;
	char *dir = temp_dir(), path[600], module[64], *text, *summary;
	u32 off[32];
	u16 size[32];
	size_t n, len;
	int ret;

	demo_input(&in, tnt);
	assert_int_equal(ptd_cov_add(cv, &in.c, &in.img, 0), 0);
	text = write_report(cv, dir, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(text, "result: coverage.module name=demo blocks=10 edges="));
	assert_non_null(strstr(text, "result: coverage.cpu cpu=0 blocks=10 "));
	snprintf(path, sizeof(path), "%s/demo.drcov", dir);
	n = read_drcov(path, off, size, 32, module, sizeof(module));
	assert_string_equal(module, "demo.efi");	/* what a disassembler loaded */
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(off[i], want[i]);
		/* to the end of the block's final branch: main's first ends after call foo */
		if (off[i] == 0x00)
			assert_int_equal(size[i], 0x0a);
	}
	/* all.drcov: the one module, the same blocks */
	snprintf(path, sizeof(path), "%s/all.drcov", dir);
	assert_int_equal(read_drcov(path, off, size, 32, module, sizeof(module)), n);
	/* the summary: functions reached, none never entered, no lcov (no DWARF) */
	snprintf(path, sizeof(path), "%s/summary.txt", dir);
	summary = read_whole(path, &len);
	assert_non_null(summary);
	assert_non_null(strstr(summary, "module demo at 0x401000: 10 blocks, "));
	assert_non_null(strstr(summary, "3 of 3 functions entered"));
	assert_non_null(strstr(summary, "lcov: none: no debug file for demo (give --symbols DIR)"));
	assert_null(strstr(summary, "never entered"));
	snprintf(path, sizeof(path), "%s/demo.info", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	free(summary);
	free(text);
	ptd_cov_free(cv);
	input_free(&in);

	/* an output that cannot be written is an error */
	cv = ptd_cov_new(NULL, NULL);
	demo_input(&in, tnt);
	assert_int_equal(ptd_cov_add(cv, &in.c, &in.img, 0), 0);
	text = write_report(cv, "/nonexistent/dir", &ret);
	assert_int_equal(ret, -1);
	free(text);
	ptd_cov_free(cv);
	input_free(&in);
	remove_dir(dir);
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* One block: unsigned, so no sanitizer check branches in it. */
__attribute__((noinline)) unsigned int coverage_test_probe(unsigned int v);
__attribute__((noinline)) unsigned int coverage_test_probe(unsigned int v)
{
	return v * 3 + 1;
}
enum { PROBE_LINE = __LINE__ - 2 };	/* the return's line */

/* Lines from DWARF: coverage_test_probe() of this binary, run once from its
 * start to its RET (whose TIP leaves the traced code). */
static void test_lcov(void **state)
{
	struct ptd_cov *cv = ptd_cov_new("/proc/self/exe", NULL);
	u64 addr = (u64)(uintptr_t)coverage_test_probe;
	struct ptd_diags d = { 0 };
	struct trace_sink sink;
	struct trace_writer w;
	struct trace_chunk ch = { 0 };
	struct trace_totals t = { 0 };
	struct tpz_header h;
	struct input in;
	uintptr_t bias = 0;
	struct enc x;
	char *dir = temp_dir(), path[600], want[80], *text, *info, cmd[1400];
	size_t n, len;
	int ret;

	memset(&in, 0, sizeof(in));
	enc_init(&x);
	put_start(&x, addr);
	put_ip(&x, ppt_tip_pgd, pt_ipc_sext_48, 0x402000);
	n = enc_done(&x);
	sink = (struct trace_sink){ membuf_write, &in.m };
	sample_header(&h);
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_trace(&w, &ch, x.buf, n), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
	assert_int_equal(ptd_container_parse(&in.c, "probe.tpz", in.m.p, in.m.len), 0);

	dl_iterate_phdr(first_object, &bias);
	ptd_image_init(&in.img);
	assert_int_equal(ptd_image_add_elf(&in.img, "/proc/self/exe", bias, &d), 0);
	ptd_image_finish(&in.img);
	assert_int_equal(ptd_cov_add(cv, &in.c, &in.img, bias), 0);
	text = write_report(cv, dir, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(text, "result: coverage.module name=exe blocks=1 "));

	/* this file's record: the function entered once, its return line run */
	snprintf(path, sizeof(path), "%s/exe.info", dir);
	info = read_whole(path, &len);
	assert_non_null(info);
	assert_non_null(strstr(info, "/tests/host/test_trace_coverage_report.c\n"));
	snprintf(want, sizeof(want), "DA:%d,1\n", PROBE_LINE);
	assert_non_null(strstr(info, want));
	assert_non_null(strstr(info, ",coverage_test_probe\n"));
	assert_non_null(strstr(info, "FNDA:1,coverage_test_probe\n"));
	/* the functions of this file never entered are there, at 0 */
	assert_non_null(strstr(info, "FNDA:0,test_lcov\n"));
	free(info);

	/* genhtml reads it without a word */
	snprintf(cmd, sizeof(cmd), "genhtml --quiet -o '%s/html' '%s' >'%s/genhtml.out' 2>&1", dir, path, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/genhtml.out", dir);
	info = read_whole(path, &len);
	assert_non_null(info);
	if (len)
		fprintf(stderr, "genhtml: %s\n", info);
	assert_int_equal(len, 0);
	free(info);
	free(text);
	ptd_cov_free(cv);
	ptd_image_free(&in.img);
	ptd_container_free(&in.c);
	membuf_free(&in.m);
	ptd_diags_free(&d);
	remove_dir(dir);
	assert_int_equal(coverage_test_probe(1), 4);
}

/* Two runs: the whole demo, and one cut after its first TNT packet. */
static void test_diff(void **state)
{
	static const char *const all[] = { DEMO_TNT_MAIN, NULL };
	static const char *const first[] = { ".!!!!!", NULL };
	struct ptd_cov *a = ptd_cov_new(NULL, NULL), *b = ptd_cov_new(NULL, NULL);
	struct input ia, ib;
	char *text;
	size_t len;
	FILE *f;

	demo_input(&ia, all);
	demo_input(&ib, first);
	assert_int_equal(ptd_cov_add(a, &ia.c, &ia.img, 0), 0);
	assert_int_equal(ptd_cov_add(b, &ib.c, &ib.img, 0), 0);
	f = open_memstream(&text, &len);
	ptd_cov_diff(a, b, f);
	fclose(f);
	/* the second run never reached call bar and jmp rax at the end */
	assert_non_null(strstr(text, "blocks A reached and B did not:\n  main+0xe "));
	assert_non_null(strstr(text, "\n  main+0x13 "));
	assert_non_null(strstr(text, "b_only_blocks=0 "));
	assert_null(strstr(text, "a_only_blocks=0 "));
	free(text);

	/* a run against itself: nothing either side */
	f = open_memstream(&text, &len);
	ptd_cov_diff(a, a, f);
	fclose(f);
	assert_non_null(strstr(text, "a_only_blocks=0 b_only_blocks=0 a_only_edges=0 b_only_edges=0\n"));
	free(text);
	ptd_cov_free(a);
	ptd_cov_free(b);
	input_free(&ia);
	input_free(&ib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drcov),
		cmocka_unit_test(test_lcov),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests_name("trace_coverage", tests, NULL, NULL);
}
