// SPDX-License-Identifier: MIT
/*
 * ptdecode's container reader on bad input: a file cut at every offset, every
 * byte damaged in turn, unknown record types, wrong totals, an unsupported
 * version, noise around the container, damaged serial framing and endless
 * serial input. Each time
 * the reader must name the right record and reason and keep every intact
 * record.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <unistd.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"

/* The sample container's records: 0 header, 1 trace, 2 image, 3 trace,
 * 4 symbols, 5 trailer. */
#define NREC 6

static bool has_diag(const struct ptd_container *c, long record, const char *text)
{
	for (size_t i = 0; i < c->diags.n; i++)
		if (c->diags.v[i].record == record && strstr(c->diags.v[i].msg, text))
			return true;
	return false;
}

static void print_diags(const struct ptd_container *c)
{
	ptd_diags_print(&c->diags, 0, c->name, stderr);
}

/* The intact records kept, as a bit mask of record numbers. */
static unsigned int kept(const struct ptd_container *c)
{
	unsigned int mask = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		mask |= 1u << c->recs[i].seq;
	if (c->have_header)
		mask |= 1u;
	if (c->have_trailer)
		mask |= 1u << (NREC - 1);
	return mask;
}

static void test_truncated_at_every_offset(void **state)
{
	struct membuf m = { 0 };
	size_t start[NREC + 1];

	sample_container(&m);
	assert_int_equal(record_starts(m.p, m.len, start, NREC), NREC);
	for (size_t len = 0; len < m.len; len++) {
		struct ptd_container c;
		unsigned int want = 0;
		size_t k = 0;
		int ret = ptd_container_parse(&c, "cut", m.p, len);

		while (start[k + 1] <= len)
			want |= 1u << k++;
		/* record k is the one the cut falls in (or the first one missing) */
		if (kept(&c) != want || (len == 0) != (ret == 2 && has_diag(&c, -1, "empty file")))
			print_diags(&c);
		assert_int_equal(kept(&c), want);
		if (!len) {
			assert_int_equal(ret, 2);
		} else if (len < start[1]) {
			/* Not even the header: nothing usable. */
			assert_int_equal(ret, 2);
			assert_true(has_diag(&c, 0, len < TPZ_REC_SIZE ? "truncated record header" : "truncated"));
			assert_true(has_diag(&c, -1, "no intact record"));
		} else {
			assert_int_equal(ret, 1);
			assert_int_equal(c.diags.v[0].record, (long)k);
			assert_int_equal(c.diags.v[0].offset, len == start[k] ? len : start[k]);
			if (len == start[k])
				assert_non_null(strstr(c.diags.v[0].msg, "no trailer record"));
			else if (len - start[k] < TPZ_REC_SIZE)
				assert_non_null(strstr(c.diags.v[0].msg, "truncated record header"));
			else
				assert_non_null(strstr(c.diags.v[0].msg, "truncated: the record has"));
		}
		ptd_container_free(&c);
	}
	membuf_free(&m);
}

static void test_every_byte_damaged(void **state)
{
	struct membuf m = { 0 };
	size_t start[NREC + 1];
	u8 *copy;

	sample_container(&m);
	record_starts(m.p, m.len, start, NREC);
	copy = malloc(m.len);
	for (size_t i = 0; i < m.len; i++) {
		struct ptd_container c;
		size_t k = 0, in;
		const char *why;

		while (start[k + 1] <= i)
			k++;
		in = i - start[k];
		why = in < 4 ? "bad magic" : in < TPZ_REC_SIZE ? "record header CRC mismatch" :
		      "payload CRC mismatch";
		memcpy(copy, m.p, m.len);
		copy[i] ^= 0x5a;
		ptd_container_parse(&c, "flip", copy, m.len);
		if (!c.diags.n || c.diags.v[0].record != (long)k || !strstr(c.diags.v[0].msg, why)) {
			fprintf(stderr, "byte %zu (record %zu +%zu):\n", i, k, in);
			print_diags(&c);
		}
		assert_true(c.diags.n > 0);
		assert_int_equal(c.diags.v[0].record, (long)k);
		assert_int_equal(c.diags.v[0].offset, start[k]);
		assert_non_null(strstr(c.diags.v[0].msg, why));
		/* every other record survives */
		assert_int_equal(kept(&c), ((1u << NREC) - 1) & ~(1u << k));
		ptd_container_free(&c);
	}
	free(copy);
	membuf_free(&m);
}

static void test_unknown_record_type(void **state)
{
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	struct tpz_header h;
	struct trace_totals t = { 0 };
	struct ptd_container c;
	struct tpz_rec r = { TPZ_REC_MAGIC, 9, 0, TPZ_REC_SIZE + 4, 0, 0, 0 };
	u8 data[8] = { 0x02, 0x82 };
	size_t at;

	sample_header(&h);
	trace_writer_init(&w, &sink);
	trace_write_header(&w, &h);
	/* A well-formed record of a type this reader does not know. */
	at = m.len;
	r.seq = w.seq++;
	membuf_write(&m, &r, sizeof(r));
	membuf_write(&m, "abcd", 4);
	reseal(m.p, at);
	w.file_bytes += TPZ_REC_SIZE + 4;
	trace_write_trace(&w, &(struct trace_chunk){ 0 }, data, sizeof(data));
	trace_write_trailer(&w, &t);

	assert_int_equal(ptd_container_parse(&c, "unknown", m.p, m.len), 1);
	assert_int_equal(c.diags.n, 1);
	assert_int_equal(c.diags.v[0].record, 1);
	assert_int_equal(c.diags.v[0].offset, at);
	assert_non_null(strstr(c.diags.v[0].msg, "unknown record type 9"));
	assert_int_equal(c.nrecs, 1);
	assert_int_equal(c.recs[0].seq, 2);
	assert_true(c.have_trailer);
	ptd_container_free(&c);
	membuf_free(&m);
}

static void test_trailer_totals_checked(void **state)
{
	struct membuf m = { 0 };
	size_t start[NREC + 1];
	struct ptd_container c;
	struct tpz_trailer t;
	size_t body;

	sample_container(&m);
	record_starts(m.p, m.len, start, NREC);
	body = start[5] + TPZ_REC_SIZE;
	memcpy(&t, m.p + body, sizeof(t));
	t.trace_records = 3;
	t.lost_bytes = 1;
	memcpy(m.p + body, &t, sizeof(t));
	reseal(m.p, start[5]);

	assert_int_equal(ptd_container_parse(&c, "totals", m.p, m.len), 1);
	assert_int_equal(c.diags.n, 3);
	assert_true(has_diag(&c, 5, "trailer total mismatch: 3 trace records announced, 2 intact"));
	assert_true(has_diag(&c, 5, "5 bytes lost after the last trace record"));
	assert_true(has_diag(&c, 5, "trailer total mismatch: 1 lost bytes announced, the records account for 13"));
	assert_int_equal(c.diags.v[0].offset, start[5]);
	assert_int_equal(kept(&c), (1u << NREC) - 1);
	ptd_container_free(&c);

	/* A record that is simply missing (cut out whole) shows in the numbering
	 * and in the totals. */
	memmove(m.p + start[2], m.p + start[3], m.len - start[3]);
	assert_int_equal(ptd_container_parse(&c, "missing", m.p, m.len - (start[3] - start[2])), 1);
	assert_true(has_diag(&c, 2, "record 2 is missing"));
	assert_true(has_diag(&c, 5, "trailer total mismatch: 2 sideband records announced, 1 intact"));
	assert_int_equal(kept(&c), ((1u << NREC) - 1) & ~(1u << 2));
	ptd_container_free(&c);
	membuf_free(&m);
}

static void test_unsupported_version(void **state)
{
	struct membuf m = { 0 };
	struct ptd_container c;
	u16 major = 2;

	sample_container(&m);
	memcpy(m.p + TPZ_REC_SIZE, &major, sizeof(major));
	reseal(m.p, 0);
	assert_int_equal(ptd_container_parse(&c, "v2", m.p, m.len), 2);
	assert_true(c.unusable);
	assert_true(has_diag(&c, 0, "unsupported format version 2.0"));
	ptd_container_free(&c);
	membuf_free(&m);
}

static void test_noise_around_the_container(void **state)
{
	static const char noise[] = "console text\r\n";
	struct membuf m = { 0 }, f = { 0 };
	struct ptd_container c;

	sample_container(&m);
	membuf_write(&f, noise, sizeof(noise) - 1);
	membuf_write(&f, m.p, m.len);
	membuf_write(&f, "xyz", 3);
	assert_int_equal(ptd_container_parse(&c, "noisy", f.p, f.len), 1);
	assert_int_equal(kept(&c), (1u << NREC) - 1);
	assert_int_equal(c.diags.v[0].record, 0);
	assert_int_equal(c.diags.v[0].offset, 0);
	assert_non_null(strstr(c.diags.v[0].msg, "bad magic"));
	assert_non_null(strstr(c.diags.v[0].msg, "skipped to the next record at offset 0xe"));
	/* no "record missing" for noise that was not a record */
	assert_false(has_diag(&c, 0, "missing"));
	assert_true(has_diag(&c, 5, "container bytes announced before the trailer"));
	assert_true(has_diag(&c, 6, "truncated record header: 3 of 24 bytes"));
	ptd_container_free(&c);
	membuf_free(&m);
	membuf_free(&f);
}

static void test_empty_and_garbage(void **state)
{
	struct ptd_container c;
	char junk[100];

	memset(junk, 'x', sizeof(junk));
	assert_int_equal(ptd_container_parse(&c, "empty", "", 0), 2);
	assert_true(has_diag(&c, -1, "empty file"));
	ptd_container_free(&c);
	assert_int_equal(ptd_container_parse(&c, "junk", junk, sizeof(junk)), 2);
	assert_true(has_diag(&c, 0, "bad magic"));
	assert_true(has_diag(&c, -1, "no intact record"));
	ptd_container_free(&c);
	assert_int_equal(ptd_container_load(&c, "/nonexistent/trace.tpz"), 2);
	assert_true(has_diag(&c, -1, "cannot open"));
	ptd_container_free(&c);
}

/* ------------------------------------------------------------ serial */

static void text_out(void *ctx, const char *s, size_t n)
{
	membuf_write(ctx, s, n);
}

static void framed(struct membuf *log, const struct membuf *m)
{
	struct trace_framer f;

	membuf_write(log, "boot: hello\n", 12);
	trace_framer_begin(&f, text_out, log);
	trace_framer_write(&f, m->p, m->len);
	trace_framer_end(&f);
	membuf_write(log, "topaz: done\n", 12);
}

/* The start of line @n (1-based) of @log. */
static char *line_at(struct membuf *log, unsigned int n)
{
	char *p = (char *)log->p;

	while (--n)
		p = strchr(p, '\n') + 1;
	return p;
}

static bool has_sdiag(const struct ptd_diags *d, const char *text)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->v[i].msg, text))
			return true;
	return false;
}

static void test_serial_damaged_frame(void **state)
{
	struct membuf m = { 0 }, log = { 0 };
	struct ptd_diags d = { 0 };
	struct ptd_container c;
	size_t start[NREC + 1], out_len;
	char *l;
	u8 *out;

	sample_container(&m);
	record_starts(m.p, m.len, start, NREC);
	framed(&log, &m);
	/* Line 1 "boot: hello", 2 empty, 3 BEGIN, 4 frame 0 ... Damage frame 1
	 * (container bytes 48..95: the header record). */
	l = line_at(&log, 5);
	assert_memory_equal(l, "@TPZ 00000001 ", 14);
	l[20] = l[20] == 'A' ? 'B' : 'A';
	assert_int_equal(ptd_extract_serial((char *)log.p, log.len, &out, &out_len, &d), 1);
	assert_true(has_sdiag(&d, "line 5: frame 0x1: CRC mismatch"));
	assert_true(has_sdiag(&d, "@TPZ-END announces"));
	assert_int_equal(out_len, m.len - TPZ_FRAME_DATA);
	/* The record the frame belonged to is damaged; the rest decodes. */
	assert_int_equal(ptd_container_parse(&c, "serial", out, out_len), 1);
	assert_int_equal(c.diags.v[0].record, 0);
	assert_non_null(strstr(c.diags.v[0].msg, "payload CRC mismatch"));
	assert_non_null(strstr(c.diags.v[0].msg, "bytes are missing"));
	assert_int_equal(kept(&c), ((1u << NREC) - 1) & ~1u);
	ptd_container_free(&c);
	free(out);
	ptd_diags_free(&d);

	/* A frame line dropped altogether (frame 7: bytes 336..383, inside the
	 * first trace record, 296..399). */
	membuf_free(&log);
	framed(&log, &m);
	l = line_at(&log, 11);
	assert_memory_equal(l, "@TPZ 00000007 ", 14);
	{
		char *e = strchr(l, '\n') + 1;
		size_t tail = log.len - (size_t)(e - (char *)log.p);

		memmove(l, e, tail);
		log.len -= (size_t)(e - l);
	}
	assert_int_equal(ptd_extract_serial((char *)log.p, log.len, &out, &out_len, &d), 1);
	assert_true(has_sdiag(&d, "line 11: frame 0x7 missing before frame 0x8"));
	assert_int_equal(ptd_container_parse(&c, "serial", out, out_len), 1);
	assert_int_equal(c.diags.v[0].record, 1);
	assert_int_equal(c.diags.v[0].offset, start[1]);
	assert_non_null(strstr(c.diags.v[0].msg, "payload CRC mismatch"));
	assert_non_null(strstr(c.diags.v[0].msg, "bytes are missing"));
	assert_int_equal(kept(&c), ((1u << NREC) - 1) & ~2u);
	ptd_container_free(&c);
	free(out);
	ptd_diags_free(&d);

	/* The log ends in the middle of the stream. */
	membuf_free(&log);
	framed(&log, &m);
	l = line_at(&log, 9);
	log.len = (size_t)(l - (char *)log.p);
	assert_int_equal(ptd_extract_serial((char *)log.p, log.len, &out, &out_len, &d), 1);
	assert_true(has_sdiag(&d, "the log ends inside the framed stream"));
	assert_int_equal(out_len, 5 * TPZ_FRAME_DATA);
	free(out);
	ptd_diags_free(&d);

	/* No framing at all. */
	assert_int_equal(ptd_extract_serial("just text\n", 10, &out, &out_len, &d), 2);
	assert_true(has_sdiag(&d, "no framed trace"));
	ptd_diags_free(&d);
	membuf_free(&log);
	membuf_free(&m);
}

/*
 * A hostile file: a megabyte of record headers back to back, each intact
 * (magic, header CRC), each claiming the rest of the file, none with a good
 * payload CRC. Each is reported (the next record starts inside it), in one
 * pass: the reader used to compute a CRC over the rest of the file for each
 * (43,690 times, about 20 GB).
 */
static void test_headers_claiming_the_rest(void **state)
{
	enum { SIZE = 1 << 20, N = SIZE / TPZ_REC_SIZE };
	u8 *f = calloc(1, SIZE);
	struct ptd_container c;

	for (u32 i = 0; i < N; i++) {
		struct tpz_rec h = {
			.magic = TPZ_REC_MAGIC, .type = TPZ_REC_TRACE, .body_size = 0,
			.size = (N - i) * TPZ_REC_SIZE, .seq = i, .body_crc = 0,
		};

		h.hdr_crc = ptd_crc32(0, &h, offsetof(struct tpz_rec, hdr_crc));
		memcpy(f + i * TPZ_REC_SIZE, &h, sizeof(h));
	}
	/* problems, and the last header (24 bytes, an empty body) is intact */
	assert_int_equal(ptd_container_parse(&c, "hostile", f, N * TPZ_REC_SIZE), 1);
	assert_true(ptd_diags_count(&c.diags) >= N - 1);	/* the first thousand kept */
	assert_non_null(strstr(c.diags.v[0].msg, "the next record starts inside this one, at offset 0x18"));
	ptd_container_free(&c);
	free(f);
}

/*
 * Files that cannot be containers are refused from their start, before the
 * rest is read: /dev/zero (never ends) and a 3 GiB sparse file (it used to
 * be read whole into a doubling buffer first).
 */
static void test_refused_from_the_start(void **state)
{
	char path[] = "/tmp/topaz-sparse-XXXXXX";
	struct ptd_container c;
	int fd;

	assert_int_equal(ptd_container_load(&c, "/dev/zero"), 2);
	assert_non_null(strstr(c.diags.v[0].msg, "no record header in its first 67108888 bytes"));
	ptd_container_free(&c);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3ll << 30), 0);
	close(fd);
	assert_int_equal(ptd_container_load(&c, path), 2);
	assert_non_null(strstr(c.diags.v[0].msg, "not a topaz trace container"));
	ptd_container_free(&c);
	unlink(path);
}

/*
 * Frame numbers are 8 hex digits and never wrap: a writer at the last number
 * drops the rest (its END line tells), and no frame is taken twice (frame 0
 * after 0xffffffff once was).
 */
static void test_serial_frame_number_wraps(void **state)
{
	struct membuf log = { 0 };
	struct ptd_diags d = { 0 };
	struct trace_framer f;
	u8 data[3 * TPZ_FRAME_DATA], *out;
	size_t out_len;

	memset(data, 0xab, sizeof(data));
	trace_framer_begin(&f, text_out, &log);
	f.frames = 0xfffffffe;
	trace_framer_write(&f, data, sizeof(data));	/* frame fffffffe only */
	trace_framer_end(&f);
	assert_int_equal(ptd_extract_serial((char *)log.p, log.len, &out, &out_len, &d), 1);
	assert_int_equal(out_len, TPZ_FRAME_DATA);
	assert_true(has_sdiag(&d, "@TPZ-END announces 144 bytes"));
	assert_false(has_sdiag(&d, "repeated"));
	free(out);
	ptd_diags_free(&d);
	membuf_free(&log);
}

/* @log's frame line for frame @n: its number field. */
static char *frame_number(struct membuf *log, unsigned int n)
{
	char *l = line_at(log, 4 + n);

	assert_memory_equal(l, "@TPZ ", 5);
	return l + 5;
}

/* The extractor on @log gives @m whole, with @ret and a diag saying @text. */
static void extracts_whole(struct membuf *log, const struct membuf *m, int ret, const char *text)
{
	struct ptd_diags d = { 0 };
	size_t out_len;
	u8 *out;

	assert_int_equal(ptd_extract_serial((char *)log->p, log->len, &out, &out_len, &d), ret);
	if (text && !has_sdiag(&d, text)) {
		ptd_diags_print(&d, 0, "log", stderr);
		fail();
	}
	assert_int_equal(out_len, m->len);
	assert_memory_equal(out, m->p, m->len);
	free(out);
	ptd_diags_free(&d);
}

/*
 * The frame number is covered by the CRC, and a frame is placed by number
 * and order, not by its number field alone: a frame renumbered ffffffff used
 * to make every later frame "repeated, ignored" (about 206 GB "lost"), and
 * two swapped frames lost the header record.
 */
static void test_serial_frame_numbers_checked(void **state)
{
	struct membuf m = { 0 }, log = { 0 };
	struct ptd_diags d = { 0 };
	size_t out_len;
	char *l, *l2, tmp[96];
	u8 *out;

	sample_container(&m);
	framed(&log, &m);
	extracts_whole(&log, &m, 0, NULL);

	/* frame 3 renumbered: recovered from the CRC and its place */
	memcpy(frame_number(&log, 3), "ffffffff", 8);
	extracts_whole(&log, &m, 1, "line 7: frame number 0xffffffff damaged: the CRC says frame 0x3");
	memcpy(frame_number(&log, 3), "0000zz03", 8);
	extracts_whole(&log, &m, 1, "line 7: frame number unreadable: the CRC says frame 0x3");

	/* frames 0 and 1 swapped (same length lines): put back in place */
	membuf_free(&log);
	framed(&log, &m);
	l = line_at(&log, 4);
	l2 = line_at(&log, 5);
	assert_int_equal(l2 - l, 5 + 8 + 1 + 64 + 1 + 8 + 1);
	memcpy(tmp, l, (size_t)(l2 - l));
	memmove(l, l2, (size_t)(l2 - l));
	memcpy(l2, tmp, (size_t)(l2 - l));
	extracts_whole(&log, &m, 1, "line 5: frame 0x0 comes after frame 0x1: put back in its place");

	/* a number and its bytes both damaged: that frame is dropped, alone */
	membuf_free(&log);
	framed(&log, &m);
	l = frame_number(&log, 2);
	memcpy(l, "ffffffff", 8);
	l[20] = l[20] == 'A' ? 'B' : 'A';
	assert_int_equal(ptd_extract_serial((char *)log.p, log.len, &out, &out_len, &d), 1);
	assert_true(has_sdiag(&d, "line 6: frame 0xffffffff: CRC mismatch"));
	assert_true(has_sdiag(&d, "line 7: frame 0x2 missing before frame 0x3 (about 48 bytes lost)"));
	assert_int_equal(out_len, m.len - TPZ_FRAME_DATA);
	free(out);
	ptd_diags_free(&d);
	membuf_free(&log);
	membuf_free(&m);
}

/* A framing version the extractor does not read is refused by name (99
 * used to be read as 1), and so is version 1 (its CRC leaves the number out). */
static void test_serial_framing_version(void **state)
{
	static const char *const logs[][2] = {
		{ "x\n@TPZ-BEGIN 99\n@TPZ-END 00000000 0000000000000000 00000000\n",
		  "line 2: unknown framing version 99 (this ptdecode reads version 2)" },
		{ "@TPZ-BEGIN 1\n@TPZ 00000000 AAAA 41d912ff\n",
		  "line 1: framing version 1 is not read any more" },
		{ "@TPZ-BEGIN\n", "line 1: damaged @TPZ-BEGIN line (no framing version)" },
		{ "@TPZ-BEGIN 2x\n", "line 1: damaged @TPZ-BEGIN line" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(logs); i++) {
		struct ptd_diags d = { 0 };
		size_t out_len;
		u8 *out;

		assert_int_equal(ptd_extract_serial(logs[i][0], strlen(logs[i][0]), &out, &out_len, &d), 2);
		assert_null(out);
		assert_true(has_sdiag(&d, logs[i][1]));
		ptd_diags_free(&d);
	}
}

static void write_file(const char *path, const void *p, size_t n, off_t size)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(ftruncate(fileno(f), size), 0);
	assert_int_equal(fclose(f), 0);
}

/*
 * Endless input on the serial path stops where the container reader's does
 * (it used to be read whole: SIGABRT at 4.2 GB for /dev/zero): no "@TPZ" in
 * the first 64 MiB refuses it, reading ends after the @TPZ-END line, and a
 * window with no "@TPZ" inside a stream stops it (reported).
 */
static void test_serial_endless_input(void **state)
{
	char path[] = "/tmp/topaz-serial-XXXXXX";
	struct membuf m = { 0 }, log = { 0 };
	struct ptd_diags d = { 0 };
	size_t out_len;
	u8 *out;
	int fd;

	assert_int_equal(ptd_extract_serial_file("/dev/zero", PTD_INPUT_WINDOW, &out, &out_len, &d), 2);
	assert_true(has_sdiag(&d, "no \"@TPZ\" in its first 67108888 bytes"));
	assert_null(out);
	ptd_diags_free(&d);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sample_container(&m);
	framed(&log, &m);
	write_file(path, log.p, log.len, 3ll << 30);	/* then 3 GiB of zeros */
	assert_int_equal(ptd_extract_serial_file(path, PTD_INPUT_WINDOW, &out, &out_len, &d), 0);
	assert_int_equal(out_len, m.len);
	free(out);
	ptd_diags_free(&d);

	write_file(path, log.p, (size_t)(line_at(&log, 9) - (char *)log.p), 3ll << 30);
	/* a smaller window than the tool's, for time */
	assert_int_equal(ptd_extract_serial_file(path, 1 << 20, &out, &out_len, &d), 1);
	assert_true(has_sdiag(&d, "no \"@TPZ\" in the 1048576 bytes after offset 0x"));
	assert_true(has_sdiag(&d, "reading stopped there"));
	assert_true(has_sdiag(&d, "the log ends inside the framed stream"));
	assert_int_equal(out_len, 5 * TPZ_FRAME_DATA);
	free(out);
	ptd_diags_free(&d);
	unlink(path);
	membuf_free(&log);
	membuf_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_at_every_offset),
		cmocka_unit_test(test_every_byte_damaged),
		cmocka_unit_test(test_unknown_record_type),
		cmocka_unit_test(test_trailer_totals_checked),
		cmocka_unit_test(test_unsupported_version),
		cmocka_unit_test(test_noise_around_the_container),
		cmocka_unit_test(test_empty_and_garbage),
		cmocka_unit_test(test_serial_damaged_frame),
		cmocka_unit_test(test_headers_claiming_the_rest),
		cmocka_unit_test(test_refused_from_the_start),
		cmocka_unit_test(test_serial_frame_number_wraps),
		cmocka_unit_test(test_serial_frame_numbers_checked),
		cmocka_unit_test(test_serial_framing_version),
		cmocka_unit_test(test_serial_endless_input),
	};
	return cmocka_run_group_tests_name("trace_reader", tests, NULL, NULL);
}
