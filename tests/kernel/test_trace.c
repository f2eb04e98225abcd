// SPDX-License-Identifier: MIT
/* The trace container writer, freestanding: CRCs, record layout and the
 * serial framing as the kernel builds them (the host tests decode them). */
#include <topaz/ktest.h>
#include <topaz/kernel.h>
#include <topaz/trace_writer.h>

static u8 kt_buf[4096];
static size_t kt_len;

static int kt_sink(void *ctx, const void *buf, size_t n)
{
	if (kt_len + n <= sizeof(kt_buf))
		memcpy(kt_buf + kt_len, buf, n);
	kt_len += n;
	return 0;
}

static char kt_text[4096];
static size_t kt_text_len;

static void kt_text_out(void *ctx, const char *s, size_t n)
{
	if (kt_text_len + n < sizeof(kt_text))
		memcpy(kt_text + kt_text_len, s, n);
	kt_text_len += n;
	kt_text[min(kt_text_len, sizeof(kt_text) - 1)] = 0;
}

KTEST(trace, crc32_check_value)
{
	KT_EXPECT_EQ(trace_crc32(0, "123456789", 9), 0xcbf43926u);
	KT_EXPECT_EQ(trace_crc32(trace_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}

KTEST(trace, container_layout)
{
	static const u8 pt[8] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x23, 0x99, 0x01 };
	static const char names[] = "fw_entry";
	struct tpz_sym sym = { 0x10, 4, 0 };
	struct trace_sink sink = { kt_sink, NULL };
	struct trace_totals tot = { .pmis = 2 };
	struct trace_writer w;
	struct tpz_header h;
	size_t off = 0;
	u32 seq = 0;

	kt_len = 0;
	trace_writer_init(&w, &sink);
	trace_header_init(&h, 0);
	trace_header_set_image(&h, 0x1000000, 0x40000, NULL);
	KT_EXPECT_EQ(h.version_major, TPZ_FORMAT_MAJOR);
	KT_EXPECT(h.vendor[0] != 0);
	KT_ASSERT(trace_write_header(&w, &h) == 0);
	KT_ASSERT(trace_write_trace(&w, &(struct trace_chunk){ .offset = 0 }, pt, sizeof(pt)) == 0);
	KT_ASSERT(trace_write_image(&w, "firmware", 0xffe00000, pt, sizeof(pt)) == 0);
	KT_ASSERT(trace_write_symbols(&w, "firmware", 0xffe00000, &sym, 1, names, sizeof(names)) == 0);
	KT_ASSERT(trace_write_trailer(&w, &tot) == 0);
	KT_EXPECT(trace_write_trace(&w, &(struct trace_chunk){ 0 }, pt, 1) < 0);
	KT_ASSERT(kt_len <= sizeof(kt_buf));

	while (off + TPZ_REC_SIZE <= kt_len) {
		struct tpz_rec r;

		memcpy(&r, kt_buf + off, sizeof(r));
		KT_EXPECT_EQ(r.magic, TPZ_REC_MAGIC);
		KT_EXPECT_EQ(r.seq, seq);
		KT_EXPECT_EQ(r.hdr_crc, trace_crc32(0, kt_buf + off, 20));
		KT_ASSERT(off + r.size <= kt_len);
		KT_EXPECT_EQ(r.body_crc, trace_crc32(0, kt_buf + off + TPZ_REC_SIZE, r.size - TPZ_REC_SIZE));
		if (r.type == TPZ_REC_TRAILER) {
			struct tpz_trailer tr;

			memcpy(&tr, kt_buf + off + TPZ_REC_SIZE, sizeof(tr));
			KT_EXPECT_EQ(tr.records, 4);
			KT_EXPECT_EQ(tr.trace_records, 1);
			KT_EXPECT_EQ(tr.sideband_records, 2);
			KT_EXPECT_EQ(tr.trace_bytes, sizeof(pt));
			KT_EXPECT_EQ(tr.file_bytes, off);
			KT_EXPECT_EQ(tr.pmis, 2);
		}
		off += r.size;
		seq++;
	}
	KT_EXPECT_EQ(off, kt_len);
	KT_EXPECT_EQ(seq, 5);
}

KTEST(trace, serial_framing)
{
	struct trace_framer f;
	u8 bytes[100];

	for (unsigned int i = 0; i < sizeof(bytes); i++)
		bytes[i] = (u8)i;
	kt_text_len = 0;
	trace_framer_begin(&f, kt_text_out, NULL);
	trace_framer_write(&f, bytes, sizeof(bytes));
	trace_framer_end(&f);
	KT_EXPECT_EQ(f.frames, 3);
	KT_EXPECT_STR(kt_text, "\n@TPZ-BEGIN 2\n@TPZ 00000000 AAECAwQFBgcI");
	/* version 2: the CRC covers the frame number (2, LE) and the bytes */
	KT_EXPECT_STR(kt_text, "\n@TPZ 00000002 YGFiYw== d644b7c7\n");
	KT_EXPECT_STR(kt_text, "\n@TPZ-END 00000003 0000000000000064 ");
}
