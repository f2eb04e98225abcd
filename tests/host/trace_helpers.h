/* SPDX-License-Identifier: MIT */
/* Shared by the tests/host/test_trace_*.c tests: a memory sink, record
 * walking and re-sealing, and a small container. */
#ifndef TOPAZ_TESTS_TRACE_HELPERS_H
#define TOPAZ_TESTS_TRACE_HELPERS_H

#include <stdlib.h>
#include <string.h>
#include <topaz/trace_writer.h>

struct membuf {
	u8 *p;
	size_t len, cap;
	unsigned int writes;
};

static inline int membuf_write(void *ctx, const void *buf, size_t n)
{
	struct membuf *m = ctx;

	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2 + 256;
		m->p = realloc(m->p, m->cap);
		if (!m->p)
			abort();
	}
	memcpy(m->p + m->len, buf, n);
	m->len += n;
	m->writes++;
	return 0;
}

static inline void membuf_free(struct membuf *m)
{
	free(m->p);
	memset(m, 0, sizeof(*m));
}

/* The start offsets of the records of an intact container; returns the count
 * and stores start[count] = the file size. */
static inline size_t record_starts(const u8 *p, size_t len, size_t *start, size_t max)
{
	size_t n = 0, off = 0;

	while (off + TPZ_REC_SIZE <= len && n < max) {
		struct tpz_rec r;

		memcpy(&r, p + off, sizeof(r));
		start[n++] = off;
		off += r.size;
	}
	start[n] = off;
	return n;
}

/* Recompute both CRCs of the record at @off after a test edited it. */
static inline void reseal(u8 *p, size_t off)
{
	struct tpz_rec r;

	memcpy(&r, p + off, sizeof(r));
	r.body_crc = trace_crc32(0, p + off + TPZ_REC_SIZE, r.size - TPZ_REC_SIZE);
	memcpy(p + off, &r, sizeof(r));
	r.hdr_crc = trace_crc32(0, p + off, offsetof(struct tpz_rec, hdr_crc));
	memcpy(p + off, &r, sizeof(r));
}

static inline void sample_header(struct tpz_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version_major = TPZ_FORMAT_MAJOR;
	h->version_minor = TPZ_FORMAT_MINOR;
	memcpy(h->vendor, "GenuineIntel", 12);
	strcpy(h->topaz_version, "test");
	h->flags = TPZ_HDR_PT_MODEL | TPZ_HDR_LOAD_ADDRESS;
	h->load_address = 0x400000;
	h->rtit_ctl = 0x2001;
	h->ncpus = 1;
}

/*
 * A small container: header, trace (40 bytes), sideband image (16 bytes),
 * trace (24 bytes, 8 lost before it), sideband symbols, trailer.
 */
static inline void sample_container(struct membuf *m)
{
	struct trace_sink sink = { membuf_write, m };
	struct trace_writer w;
	struct tpz_header h;
	u8 data[64], code[16];
	struct tpz_sym syms[2] = { { 0, 8, 0 }, { 8, 8, 4 } };
	static const char names[] = "one\0two";
	struct trace_totals t = { .pmis = 3, .lost_at_end = 5, .end_tsc = 99 };

	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (u8)(i * 7 + 1);
	for (unsigned int i = 0; i < sizeof(code); i++)
		code[i] = 0x90;
	sample_header(&h);
	trace_writer_init(&w, &sink);
	trace_write_header(&w, &h);
	trace_write_trace(&w, &(struct trace_chunk){ .offset = 0 }, data, 40);
	trace_write_image(&w, "firmware", 0x1000, code, sizeof(code));
	trace_write_trace(&w, &(struct trace_chunk){ .flags = TPZ_TRACE_LOST, .offset = 48, .lost = 8 },
			  data + 40, 24);
	trace_write_symbols(&w, "firmware", 0x1000, syms, 2, names, sizeof(names));
	trace_write_trailer(&w, &t);
}

#endif
