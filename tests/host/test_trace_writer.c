// SPDX-License-Identifier: MIT
/*
 * The trace container writer: its CRC against zlib's, the records it writes
 * read back by ptdecode's reader field by field, the order it enforces,
 * splitting of large data, the header from CPUID, and the serial framing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <zlib.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include <topaz/errno.h>

static void test_crc_matches_zlib(void **state)
{
	static u8 buf[8192];
	u32 seed = 12345;

	/* The check value of the CRC-32 catalogue. */
	assert_int_equal(trace_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(trace_crc32(0, NULL, 0), 0);
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (u8)(seed >> 16);
	}
	for (size_t n = 0; n <= sizeof(buf); n += n < 64 ? 1 : 509) {
		u32 ours = trace_crc32(0, buf, n);
		u32 theirs = (u32)crc32(0, buf, (uInt)n);

		assert_int_equal(ours, theirs);
		/* incremental over two pieces, as the writer does with body and payload */
		assert_int_equal(trace_crc32(trace_crc32(0, buf, n / 3), buf + n / 3, n - n / 3), theirs);
		assert_int_equal(ptd_crc32(0, buf, n), theirs);
	}
}

static void test_roundtrip(void **state)
{
	struct membuf m = { 0 };
	struct ptd_container c;
	size_t start[8];

	sample_container(&m);
	assert_int_equal(record_starts(m.p, m.len, start, 7), 6);
	assert_int_equal(start[6], m.len);
	/* the sample's trailer says 5 bytes were lost at the end: the one problem */
	assert_int_equal(ptd_container_parse(&c, "sample", m.p, m.len), 1);
	assert_int_equal(c.diags.n, 1);
	assert_non_null(strstr(c.diags.v[0].msg, "5 bytes lost after the last trace record"));
	assert_true(c.have_header);
	assert_true(c.have_trailer);
	assert_string_equal(c.header.topaz_version, "test");
	assert_memory_equal(c.header.vendor, "GenuineIntel", 12);
	assert_int_equal(c.header.load_address, 0x400000);
	assert_int_equal(c.header.rtit_ctl, 0x2001);

	assert_int_equal(c.nrecs, 4);
	assert_int_equal(c.recs[0].type, TPZ_REC_TRACE);
	assert_int_equal(c.recs[0].seq, 1);
	assert_int_equal(c.recs[0].offset, start[1]);
	assert_int_equal(c.recs[0].body.trace.offset, 0);
	assert_int_equal(c.recs[0].payload_size, 40);
	for (int i = 0; i < 40; i++)
		assert_int_equal(c.recs[0].payload[i], (u8)(i * 7 + 1));
	assert_int_equal(c.recs[1].type, TPZ_REC_SIDEBAND);
	assert_int_equal(c.recs[1].body.sideband.kind, TPZ_SB_IMAGE);
	assert_int_equal(c.recs[1].body.sideband.vaddr, 0x1000);
	assert_string_equal(c.recs[1].body.sideband.name, "firmware");
	assert_int_equal(c.recs[1].payload_size, 16);
	assert_int_equal(c.recs[2].body.trace.flags, TPZ_TRACE_LOST);
	assert_int_equal(c.recs[2].body.trace.lost, 8);
	assert_int_equal(c.recs[2].body.trace.offset, 48);
	assert_int_equal(c.recs[2].payload[0], (u8)(40 * 7 + 1));
	assert_int_equal(c.recs[3].body.sideband.kind, TPZ_SB_SYMBOLS);
	assert_int_equal(c.recs[3].body.sideband.count, 2);

	assert_int_equal(c.trailer.records, 5);
	assert_int_equal(c.trailer.trace_records, 2);
	assert_int_equal(c.trailer.sideband_records, 2);
	assert_int_equal(c.trailer.trace_bytes, 64);
	assert_int_equal(c.trailer.lost_bytes, 8 + 5);
	assert_int_equal(c.trailer.lost_at_end, 5);
	assert_int_equal(c.trailer.file_bytes, start[5]);
	assert_int_equal(c.trailer.pmis, 3);

	/* The sideband becomes memory and names. */
	{
		struct ptd_image img;
		const struct ptd_symbol *s;
		u8 b[4];

		ptd_image_init(&img);
		ptd_image_add_sideband(&img, &c);
		ptd_image_finish(&img);
		s = ptd_image_lookup(&img, 0x100a);
		assert_non_null(s);
		assert_string_equal(s->name, "two");
		assert_int_equal(ptd_image_read(b, sizeof(b), NULL, 0x100e, &img), 2);
		assert_int_equal(b[0], 0x90);
		assert_int_equal(ptd_image_read(b, sizeof(b), NULL, 0x1010, &img), -pte_nomap);
		ptd_image_free(&img);
	}
	ptd_container_free(&c);
	membuf_free(&m);
}

static void test_order_and_arguments(void **state)
{
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	struct tpz_header h;
	struct tpz_sym bad = { 0, 1, 99 };
	struct trace_totals t = { 0 };
	u8 d[4] = { 0 };

	sample_header(&h);
	trace_writer_init(&w, &sink);
	assert_int_equal(m.len, 0);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ 0 }, d, 4), -EINVAL);
	assert_int_equal(trace_write_image(&w, "x", 0, d, 4), -EINVAL);
	assert_int_equal(trace_write_trailer(&w, &t), -EINVAL);
	assert_int_equal(m.len, 0);
	assert_int_equal(trace_write_header(&w, &h), 0);
	assert_int_equal(trace_write_header(&w, &h), -EINVAL);
	assert_int_equal(m.len, TPZ_REC_SIZE + sizeof(h));
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .flags = 0x80 }, d, 4), -EINVAL);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .lost = 3 }, d, 4), -EINVAL);
	assert_int_equal(trace_write_image(&w, "x", 0, d, 0), -EINVAL);
	assert_int_equal(trace_write_symbols(&w, "x", 0, &bad, 1, "a", 2), -EINVAL);
	/* An empty chunk is written only when it reports something. */
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ 0 }, d, 0), 0);
	assert_int_equal(m.len, TPZ_REC_SIZE + sizeof(h));
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ .flags = TPZ_TRACE_LOST, .lost = 7 },
					   d, 0), 0);
	assert_int_equal(m.len, 2 * TPZ_REC_SIZE + sizeof(h) + sizeof(struct tpz_trace));
	assert_int_equal(trace_write_trailer(&w, &t), 0);
	assert_int_equal(trace_write_trailer(&w, &t), -EINVAL);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){ 0 }, d, 4), -EINVAL);
	assert_int_equal(trace_write_image(&w, "x", 0, d, 4), -EINVAL);
	membuf_free(&m);
}

static void test_large_data_is_split(void **state)
{
	size_t n = TPZ_MAX_PAYLOAD + 1000;
	u8 *data = malloc(n);
	struct membuf m = { 0 };
	struct trace_sink sink = { membuf_write, &m };
	struct trace_writer w;
	struct tpz_header h;
	struct trace_totals t = { 0 };
	struct ptd_container c;
	struct ptd_segments segs;

	for (size_t i = 0; i < n; i++)
		data[i] = (u8)(i ^ (i >> 8));
	sample_header(&h);
	trace_writer_init(&w, &sink);
	trace_write_header(&w, &h);
	assert_int_equal(trace_write_trace(&w, &(struct trace_chunk){
		.flags = TPZ_TRACE_LOST | TPZ_TRACE_TRUNCATED, .offset = 100, .lost = 100 }, data, n), 0);
	assert_int_equal(trace_write_image(&w, "big", 0x10000, data, n), 0);
	trace_write_trailer(&w, &t);

	assert_int_equal(ptd_container_parse(&c, "big", m.p, m.len), 0);
	assert_int_equal(c.nrecs, 4);
	assert_int_equal(c.recs[0].body.trace.flags, TPZ_TRACE_LOST);
	assert_int_equal(c.recs[0].body.trace.lost, 100);
	assert_int_equal(c.recs[0].payload_size, TPZ_MAX_PAYLOAD);
	assert_int_equal(c.recs[1].body.trace.flags, TPZ_TRACE_TRUNCATED);
	assert_int_equal(c.recs[1].body.trace.lost, 0);
	assert_int_equal(c.recs[1].body.trace.offset, 100 + TPZ_MAX_PAYLOAD);
	assert_int_equal(c.recs[1].payload_size, 1000);
	assert_int_equal(c.recs[2].body.sideband.vaddr, 0x10000);
	assert_int_equal(c.recs[3].body.sideband.vaddr, 0x10000 + TPZ_MAX_PAYLOAD);
	assert_int_equal(c.trailer.lost_bytes, 100);

	/* The reader joins the pieces back into one stream. */
	ptd_segments_build(&c, &segs);
	assert_int_equal(segs.n, 1);
	assert_int_equal(segs.v[0].size, n);
	assert_int_equal(segs.v[0].gap, 100);
	assert_string_equal(segs.v[0].gap_why, "lost");
	assert_memory_equal(segs.v[0].data, data, n);
	ptd_segments_free(&segs);
	ptd_container_free(&c);
	membuf_free(&m);
	free(data);
}

static void test_header_from_cpuid(void **state)
{
	struct cpuid_regs r0 = { 0x16, 0x756e6547, 0x6c65746e, 0x49656e69 };	/* GenuineIntel */
	struct cpuid_regs r1 = { 0x000506e3, 0, 0, 0 };		/* family 6, model 0x5e, stepping 3 */
	struct cpuid_regs r14 = { 1, 0xf, 0x7, 0 }, r14_1 = { 0x2490002, 0x3f00ff, 0, 0 };
	struct cpuid_regs r15 = { 2, 0xb0, 0, 0 };
	/* A GNU build-id note: namesz 4, descsz 20, type 3, "GNU\0", descriptor. */
	u8 note[36] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	struct tpz_header h;

	for (int i = 0; i < 20; i++)
		note[16 + i] = (u8)(0xa0 + i);
	hosted_cpuid_reset();
	hosted_cpuid_set(0, 0, &r0);
	hosted_cpuid_set(1, 0, &r1);
	hosted_cpuid_set(0x14, 0, &r14);
	hosted_cpuid_set(0x14, 1, &r14_1);
	hosted_cpuid_set(0x15, 0, &r15);
	trace_header_init(&h, 0);
	assert_int_equal(h.version_major, TPZ_FORMAT_MAJOR);
	assert_int_equal(h.version_minor, TPZ_FORMAT_MINOR);
	assert_memory_equal(h.vendor, "GenuineIntel", 12);
	assert_int_equal(h.family, 6);
	assert_int_equal(h.model, 0x5e);
	assert_int_equal(h.stepping, 3);
	assert_int_equal(h.cpuid1_eax, 0x000506e3);
	assert_int_equal(h.leaf14[0][1], 0xf);
	assert_int_equal(h.leaf14[0][2], 0x7);
	assert_int_equal(h.leaf14[1][0], 0x2490002);
	assert_int_equal(h.leaf15[0], 2);
	assert_int_equal(h.leaf15[1], 0xb0);
	assert_string_equal(h.topaz_version, "hosted");
	assert_false(h.flags & TPZ_HDR_LOAD_ADDRESS);

	trace_header_set_image(&h, 0x7e000000, 0x40000, note);
	assert_int_equal(h.load_address, 0x7e000000);
	assert_int_equal(h.image_size, 0x40000);
	assert_int_equal(h.build_id_len, 20);
	assert_memory_equal(h.build_id, note + 16, 20);
	assert_int_equal(h.flags & (TPZ_HDR_LOAD_ADDRESS | TPZ_HDR_BUILD_ID),
			 TPZ_HDR_LOAD_ADDRESS | TPZ_HDR_BUILD_ID);

	/* A CPU without leaf 0x14 leaves it zero. */
	r0.eax = 0xd;
	hosted_cpuid_set(0, 0, &r0);
	trace_header_init(&h, 0);
	assert_int_equal(h.leaf14[0][1], 0);
	assert_int_equal(h.leaf15[1], 0);
	hosted_cpuid_reset();
}

/* The framer's output, with console text between (and before) its lines. */
struct console {
	struct membuf m;
	unsigned int lines;
};

static void console_out(void *ctx, const char *s, size_t n)
{
	struct console *k = ctx;
	char noise[64];

	if (k->lines % 3 == 1) {
		int len = snprintf(noise, sizeof(noise), "[    1.%04u] pt: console text\r\n", k->lines);

		membuf_write(&k->m, noise, (size_t)len);
	}
	if (k->lines % 5 == 2)
		membuf_write(&k->m, "partial line then ", 18);
	membuf_write(&k->m, s, n);
	k->lines++;
}

static void test_framer_roundtrip(void **state)
{
	struct membuf m = { 0 };
	struct console k = { { 0 }, 0 };
	struct trace_framer f;
	struct trace_sink sink;
	struct ptd_diags d = { 0 };
	u8 *out;
	size_t out_len;

	sample_container(&m);
	trace_framer_begin(&f, console_out, &k);
	sink = trace_framer_sink(&f);
	/* Odd-sized pieces, as the writer hands them over. */
	for (size_t off = 0; off < m.len; off += 13)
		sink.write(sink.ctx, m.p + off, min((size_t)13, m.len - off));
	trace_framer_end(&f);
	assert_int_equal(f.frames, DIV_ROUND_UP(m.len, TPZ_FRAME_DATA));
	assert_int_equal(f.bytes, m.len);
	membuf_write(&k.m, "[    2.0000] after the trace\n", 29);

	/* Every line is plain text. */
	for (size_t i = 0; i < k.m.len; i++)
		assert_true(k.m.p[i] == '\n' || k.m.p[i] == '\r' || (k.m.p[i] >= 0x20 && k.m.p[i] < 0x7f));
	assert_int_equal(ptd_extract_serial((const char *)k.m.p, k.m.len, &out, &out_len, &d), 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(out_len, m.len);
	assert_memory_equal(out, m.p, m.len);
	free(out);
	ptd_diags_free(&d);
	membuf_free(&k.m);
	membuf_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_matches_zlib),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_order_and_arguments),
		cmocka_unit_test(test_large_data_is_split),
		cmocka_unit_test(test_header_from_cpuid),
		cmocka_unit_test(test_framer_roundtrip),
	};
	return cmocka_run_group_tests_name("trace_writer", tests, NULL, NULL);
}
