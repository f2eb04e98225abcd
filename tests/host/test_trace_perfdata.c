// SPDX-License-Identifier: MIT
/*
 * The perf.data export (tools/ptdecode/perfdata.c) against hostile input, each
 * case decoded by Linux perf (linux-perf, installed by setup.sh): a header
 * perf cannot take as it is (TSC packets enabled and none in the trace, a
 * TSC rate below 50 MHz with no non-turbo ratio), names perf's address
 * filter cannot carry (a comma or a space in a module's name or in the
 * folder), two images of one name and address, links and devices where the
 * files go; and what perf shows of it: trace windows side by side in its
 * call graph, not each inside the one before, with the image's function
 * names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace_test_enc.h"

#define BASE 0x401000ull

/* main, foo and bar (trace_test_enc.h) */
static const u8 code[0x40] = { DEMO_CODE_MAIN_FOO_BAR };
static const u8 expect_all[] = { DEMO_RUN_MAIN };

/*
 * Trace windows, as pt_run_traced() makes them: tracing comes on in the
 * runner, which calls the work (work calls leaf) and then the function that
 * turns tracing off, which it does at its first instruction (FUP, TIP.PGD);
 * then the next window. The call to end never returns in the trace.
 */
static const u8 windows_code[0x40] = {
	[0x00] = 0xe8, 0x1b, 0x00, 0x00, 0x00,	/* runner: call work */
	[0x05] = 0xe8, 0x26, 0x00, 0x00, 0x00,	/* call end */
	[0x0a ... 0x1f] = 0xcc,
	[0x20] = 0xe8, 0x03, 0x00, 0x00, 0x00,	/* work: call leaf */
	[0x25] = 0xc3,				/* ret */
	[0x26 ... 0x27] = 0xcc,
	[0x28] = 0x90,				/* leaf: nop */
	[0x29] = 0xc3,				/* ret */
	[0x2a ... 0x2f] = 0xcc,
	[0x30] = 0x90,				/* end: nop */
	[0x31] = 0xc3,
	[0x32 ... 0x3f] = 0xcc,
};
#define WINDOWS	4

/* How a test's container differs from the plain one. */
struct shape {
	u64 rtit_ctl;		/* 0: 0x2001 (BranchEn, TraceEn) */
	u64 tsc_hz;
	bool tsc_packet;	/* a TSC packet in the PSB+ */
	const char *name;	/* the image's name ("demo") */
	const u8 *second;	/* a second image of the same name and address */
	bool windows;		/* @WINDOWS windows of windows_code, with its symbols */
};

/* @WINDOWS windows: on in runner, off at end's first instruction; with
 * @tsc a TSC packet as each comes on (its PSB+ in the export takes it). */
static void put_windows(struct enc *x, bool tsc)
{
	for (int i = 0; i < WINDOWS; i++) {
		if (tsc && i)
			put(x, (struct pt_packet){ .type = ppt_tsc,
						   .payload.tsc.tsc = 0x123456789aull + 1000 * (u64)i });
		put_mode64(x);
		/* the first whole, then compressed: the window's own PSB+ in
		 * the export resets the last IP they build on */
		put_ip(x, ppt_tip_pge, i ? pt_ipc_update_16 : pt_ipc_sext_48, BASE);
		put_tnt(x, "!!");	/* leaf's and work's compressed returns */
		put_ip(x, ppt_fup, pt_ipc_update_16, BASE + 0x30);
		put_ip(x, ppt_tip_pgd, pt_ipc_suppressed, 0);
	}
}

/* The whole run (main to jmp rax) in one chunk, the code as an image; or
 * the windows (@s->windows), their code as an image, its functions as
 * symbols. */
static void make(struct membuf *m, const struct shape *s)
{
	static const char *const tnt[] = { DEMO_TNT_MAIN, NULL };
	static const struct tpz_sym syms[] = { { 0x00, 0x0a, 0 }, { 0x20, 0x06, 7 },
					       { 0x28, 0x02, 12 }, { 0x30, 0x02, 17 } };
	static const char names[] = "runner\0work\0leaf\0end";
	const u8 *image = s->windows ? windows_code : code;
	struct trace_sink sink = { membuf_write, m };
	struct trace_totals t = { 0 };
	struct trace_writer w;
	struct tpz_header h;
	struct enc x;
	size_t n;

	enc_init(&x);
	put_psb(&x);
	if (s->tsc_packet)
		put(&x, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = 0x123456789aull });
	put_psbend(&x);
	if (s->windows) {
		put_windows(&x, s->tsc_packet);
	} else {
		put_mode64(&x);
		put_ip(&x, ppt_tip_pge, pt_ipc_sext_48, BASE);
		for (const char *const *b = tnt; *b; b++)
			put_tnt(&x, *b);
		put_ip(&x, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	}
	n = enc_done(&x);

	sample_header(&h);
	h.load_address = 0;
	h.rtit_ctl = s->rtit_ctl ? s->rtit_ctl : 0x2001;
	h.tsc_hz = s->tsc_hz;
	h.addr[0][0] = BASE;
	h.addr[0][1] = BASE + sizeof(code) - 1;
	trace_writer_init(&w, &sink);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_image(&w, s->name ? s->name : "demo", BASE, image, sizeof(code)), 0);
	if (s->windows)
		assert_int_equal(trace_write_symbols(&w, "demo", BASE, syms, ARRAY_SIZE(syms), names,
						     sizeof(names)), 0);
	if (s->second)
		assert_int_equal(trace_write_image(&w, s->name ? s->name : "demo", BASE, s->second,
						   sizeof(code)), 0);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .offset = 0 }, x.buf, n), 0);
	assert_int_equal(trace_write_trailer(&w, &t), 0);
}

/* An export of @m to @path: ptd_write_perf_data()'s result; @said gets
 * the messages (NUL-separated into one line each, '\n'). */
static int export(const struct membuf *m, const char *path, char *said, size_t size)
{
	struct ptd_container c;
	struct ptd_segments s;
	struct ptd_image img;
	size_t n = 0;
	int ret;

	parse_with_image(&c, &img, "perf.tpz", m);
	ptd_segments_build(&c, &s);
	ret = ptd_write_perf_data(&c, &s, &img, NULL, 0, path);
	said[0] = 0;
	for (size_t i = 0; i < c.diags.n && n < size; i++)
		n += (size_t)snprintf(said + n, size - n, "%s\n", c.diags.v[i].msg);
	ptd_segments_free(&s);
	ptd_image_free(&img);
	ptd_container_free(&c);
	return ret;
}

/*
 * perf script on @path: the instruction addresses it lists are the run's
 * (main to jmp rax), it exits 0, no signal, and its stderr holds nothing
 * that says it refused the file.
 */
static void perf_decodes_run(const char *path)
{
	char cmd[PATH_MAX + 128], err[PATH_MAX + 16], *e;
	u64 want[sizeof(expect_all)];
	size_t len;
	int st;

	for (size_t i = 0; i < sizeof(expect_all); i++)
		want[i] = BASE + expect_all[i];
	snprintf(err, sizeof(err), "%s.stderr", path);
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' --itrace=i1i -F ip 2>'%s'", path, err);
	st = perf_ips_equal(cmd, want, sizeof(expect_all));
	e = read_whole(err, &len);
	assert_non_null(e);
	if (st || strstr(e, "failed to process"))
		fprintf(stderr, "perf script: status %#x: %s\n", st, e);
	assert_int_equal(st, 0);
	assert_null(strstr(e, "failed to process"));
	free(e);
	unlink(err);
}

/* A scratch folder (its path with @tail, which may hold a space or a comma). */
static void scratch(char *dir, size_t size, const char *tail)
{
	char tmpl[] = "/tmp/topaz-perfdata-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, size, "%s%s", tmpl, tail);
	if (tail[0])
		assert_int_equal(mkdir(dir, 0700), 0);
}

/* The scratch folder @dir is in (or is), with all in it. */
static void remove_tree(const char *dir)
{
	char cmd[PATH_MAX + 32];

	/* "/tmp/topaz-perfdata-XXXXXX": 26 characters */
	snprintf(cmd, sizeof(cmd), "rm -rf '%.26s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * The container @s describes, exported to a scratch folder and decoded by
 * perf (perf_decodes_run()); then the export said @msg (unless NULL) and
 * wrote the image file @image (unless NULL) into perf.data.images/.
 */
static void exported_and_decoded(const struct shape *s, const char *msg, const char *image)
{
	struct membuf m = { 0 };
	char dir[128], path[256], said[4096];
	struct stat st;

	make(&m, s);
	scratch(dir, sizeof(dir), "");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(export(&m, path, said, sizeof(said)), 0);
	perf_decodes_run(path);
	if (msg)
		assert_non_null(strstr(said, msg));
	snprintf(path, sizeof(path), "%s/perf.data.images/%s", dir, image ? image : "");
	assert_int_equal(stat(path, &st), 0);
	remove_tree(dir);
	membuf_free(&m);
}

/*
 * The header enables TSC packets and the trace has none: perf 6.1 segfaults
 * decoding it timed. The export is untimed, and says why.
 */
static void test_tsc_without_packets(void **state)
{
	exported_and_decoded(&(struct shape){ .rtit_ctl = 0x2401 },
			     "has a PSB and no TSC packet before its flow: perf cannot time it", NULL);
}

/*
 * A TSC rate of 1 MHz and no non-turbo ratio in the header: perf 6.1 derives
 * the ratio as (rate + 50 MHz) / 100 MHz = 0 and divides by it (SIGFPE).
 * The export gives a ratio, never 0.
 */
static void test_slow_tsc(void **state)
{
	exported_and_decoded(&(struct shape){ .rtit_ctl = 0x2401, .tsc_hz = 1000000,
					      .tsc_packet = true }, NULL, NULL);
}

/*
 * A filtered trace (ADDR0 a filter range over the code): perf's filter
 * string names each range's file, and a space or a comma ends a name
 * there (perf: "failed to process type: 70"). A module named "a,b c" gets a
 * file name without them; a folder whose path has one is refused, and
 * nothing is written.
 */
static void test_filter_names(void **state)
{
	static const char *const folders[] = { "/a b", "/a,b" };
	const struct shape s = { .rtit_ctl = 0x100002001ull, .name = "a,b c" };
	struct membuf m = { 0 };
	char dir[128], path[256], said[4096];
	struct stat st;

	exported_and_decoded(&s, NULL, "a_b_c-401000.elf");
	make(&m, &s);
	for (size_t i = 0; i < ARRAY_SIZE(folders); i++) {
		scratch(dir, sizeof(dir), folders[i]);
		snprintf(path, sizeof(path), "%s/perf.data", dir);
		assert_int_equal(export(&m, path, said, sizeof(said)), -1);
		assert_non_null(strstr(said, "holds a space or a comma, which perf's address filter cannot carry"));
		assert_int_equal(stat(path, &st), -1);
		snprintf(path, sizeof(path), "%s/perf.data.images", dir);
		assert_int_equal(stat(path, &st), -1);
		remove_tree(dir);
	}
	membuf_free(&m);
}

/*
 * Two images of the same name and address: ptdecode reads the first (and
 * says so); perf must read the same bytes, not a file the second one
 * overwrote, nor a map the second one covered.
 */
static void test_same_image_twice(void **state)
{
	static const u8 other[sizeof(code)] = { [0 ... sizeof(code) - 1] = 0x90 };

	exported_and_decoded(&(struct shape){ .second = other }, NULL, "demo-401000-2.elf");
}

/*
 * Where the images go: a link there is replaced, never written through (a
 * file elsewhere stays as it was); a folder that is a link is refused; so
 * is a perf.data that is not a regular file (no /dev/full.images).
 */
static void test_image_links(void **state)
{
	struct membuf m = { 0 };
	char dir[128], path[256], victim[256], said[4096], *v;
	struct stat st;
	size_t len;
	FILE *f;

	make(&m, &(struct shape){ 0 });
	scratch(dir, sizeof(dir), "");
	snprintf(victim, sizeof(victim), "%s/victim.txt", dir);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/perf.data.images", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/perf.data.images/demo-401000.elf", dir);
	assert_int_equal(symlink(victim, path), 0);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(export(&m, path, said, sizeof(said)), 0);
	v = read_whole(victim, &len);
	assert_string_equal(v, "precious\n");
	free(v);
	snprintf(path, sizeof(path), "%s/perf.data.images/demo-401000.elf", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	perf_decodes_run(path);

	/* the folder itself a link to another folder */
	snprintf(path, sizeof(path), "%s/other.data.images", dir);
	assert_int_equal(symlink(dir, path), 0);
	snprintf(path, sizeof(path), "%s/other.data", dir);
	assert_int_equal(export(&m, path, said, sizeof(said)), -1);
	assert_non_null(strstr(said, "a link, not a folder"));
	snprintf(path, sizeof(path), "%s/demo-401000.elf", dir);
	assert_int_equal(stat(path, &st), -1);
	remove_tree(dir);

	/* a device */
	assert_int_equal(export(&m, "/dev/full", said, sizeof(said)), -1);
	assert_non_null(strstr(said, "/dev/full: not a regular file"));
	membuf_free(&m);
	if (!stat("/dev/full.images", &st))
		rmdir("/dev/full.images");
	assert_int_equal(stat("/dev/full.images", &st), -1);
}

/*
 * perf's call graph of the windows: every instruction sample's call chain
 * (perf script --itrace=i1ig), a block of "address symbol+offset" lines
 * each. perf's thread stack keeps the calls that never returned in the
 * trace: without a window boundary it says for each window that the runner
 * called it from inside the window before (runner nested @WINDOWS deep).
 * Each chain must be at most runner, work, leaf deep, with those names (the
 * image's symbols, not raw addresses), and leaf's exactly that, for its two
 * instructions in each window.
 */
static void windows_not_nested(const struct shape *s)
{
	char dir[128], path[256], cmd[512], line[512], said[4096], chain[4][64];
	struct membuf m = { 0 };
	int depth = 0, leaves = 0, max_depth = 0;
	FILE *pf;

	make(&m, s);
	scratch(dir, sizeof(dir), "");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	assert_int_equal(export(&m, path, said, sizeof(said)), 0);
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' --itrace=i1ig -F ip,sym,symoff 2>/dev/null", path);
	pf = popen(cmd, "r");
	assert_non_null(pf);
	for (;;) {
		bool end = !fgets(line, sizeof(line), pf);
		unsigned long long ip;
		char sym[64];

		if (end || line[strspn(line, " \t")] == '\n') {
			if (depth && !strcmp(chain[0], "leaf")) {
				leaves++;
				assert_int_equal(depth, 3);
				assert_string_equal(chain[1], "work");
				assert_string_equal(chain[2], "runner");
			}
			depth = 0;
			if (end)
				break;
			continue;
		}
		if (sscanf(line, " %llx %63[^+ \n]", &ip, sym) != 2)
			perf_unexpected(pf, line, sizeof(line));
		if (depth < 4)
			snprintf(chain[depth], sizeof(chain[depth]), "%s", sym);
		if (++depth > max_depth)
			max_depth = depth;
		if (depth > 3)
			fprintf(stderr, "perf: a call chain %d deep at %s (window nested in window?)\n",
				depth, line);
	}
	assert_int_equal(pclose(pf), 0);
	assert_int_equal(max_depth, 3);
	assert_int_equal(leaves, 2 * WINDOWS);
	remove_tree(dir);
	membuf_free(&m);
}

/* Untimed, and timed (TSCEn, a TSC packet as each window comes on: perf
 * orders the windows' queues by it) */
static void test_windows_not_nested(void **state)
{
	windows_not_nested(&(struct shape){ .windows = true });
	windows_not_nested(&(struct shape){ .windows = true, .rtit_ctl = 0x2401, .tsc_hz = 1000000000,
					    .tsc_packet = true });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tsc_without_packets),
		cmocka_unit_test(test_slow_tsc),
		cmocka_unit_test(test_filter_names),
		cmocka_unit_test(test_same_image_twice),
		cmocka_unit_test(test_image_links),
		cmocka_unit_test(test_windows_not_nested),
	};
	return cmocka_run_group_tests_name("trace_perfdata", tests, NULL, NULL);
}
