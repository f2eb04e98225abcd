// SPDX-License-Identifier: MIT
/*
 * The trace container writer: header, trace, sideband and trailer records
 * (include/topaz/trace_format.h, docs/trace-format.md) handed to a sink, and
 * the serial framing that carries them among console text. Portable: no
 * allocation, no libc beyond include/topaz/kernel.h.
 */
#include <topaz/trace_writer.h>
#include <topaz/arch.h>
#include <topaz/cpu.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

#ifndef TOPAZ_VERSION
#define TOPAZ_VERSION "hosted"
#endif

/* ------------------------------------------------------------------ CRC-32 */

/*
 * The reflected IEEE polynomial, one table lookup per byte. The table is
 * filled on first use; two CPUs racing to fill it store the same values.
 */
static u32 crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	WRITE_ONCE(crc_ready, true);
}

u32 trace_crc32(u32 crc, const void *buf, size_t n)
{
	const u8 *p = buf;

	if (!READ_ONCE(crc_ready))
		crc_init();
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ------------------------------------------------------------------ records */

void trace_writer_init(struct trace_writer *w, const struct trace_sink *sink)
{
	memset(w, 0, sizeof(*w));
	w->sink = *sink;
	w->state = TRACE_W_NEW;
}

/* After the sink failed the container ends there: later bytes are counted, not sent. */
static void emit(struct trace_writer *w, const void *buf, size_t n)
{
	int err;

	if (!n)
		return;
	if (w->sink_error) {
		w->unwritten_bytes += n;
		return;
	}
	err = w->sink.write(w->sink.ctx, buf, n);
	if (err) {
		w->sink_error = err < 0 ? err : -EIO;
		w->unwritten_bytes += n;
		return;
	}
	w->file_bytes += n;
}

int trace_writer_sink_error(const struct trace_writer *w, u64 *stored, u64 *unwritten)
{
	if (stored)
		*stored = w->file_bytes;
	if (unwritten)
		*unwritten = w->unwritten_bytes;
	return w->sink_error;
}

/* One record: header, fixed body, payload. Both CRCs are computed before the
 * first byte goes out, so the sink sees each byte exactly once. */
static void write_record(struct trace_writer *w, u16 type, const void *body, u16 body_size,
			 const void *payload, size_t payload_size)
{
	struct tpz_rec r;
	u32 crc;

	crc = trace_crc32(0, body, body_size);
	crc = trace_crc32(crc, payload, payload_size);
	r.magic = TPZ_REC_MAGIC;
	r.type = type;
	r.body_size = body_size;
	r.size = (u32)(TPZ_REC_SIZE + body_size + payload_size);
	r.seq = w->seq++;
	r.body_crc = crc;
	r.hdr_crc = trace_crc32(0, &r, offsetof(struct tpz_rec, hdr_crc));
	emit(w, &r, sizeof(r));
	emit(w, body, body_size);
	emit(w, payload, payload_size);
}

void trace_header_init(struct tpz_header *h, u32 flags)
{
	struct cpuid_regs r;
	u32 max_leaf;

	memset(h, 0, sizeof(*h));
	h->version_major = TPZ_FORMAT_MAJOR;
	h->version_minor = TPZ_FORMAT_MINOR;
	strscpy(h->topaz_version, TOPAZ_VERSION, sizeof(h->topaz_version));
	h->ncpus = 1;
	h->flags = flags & TPZ_HDR_PT_MODEL;

	cpuid_regs(0, 0, &r);
	max_leaf = r.eax;
	memcpy(h->vendor + 0, &r.ebx, 4);
	memcpy(h->vendor + 4, &r.edx, 4);
	memcpy(h->vendor + 8, &r.ecx, 4);
	if (max_leaf >= 1) {
		cpuid_regs(1, 0, &r);
		h->cpuid1_eax = r.eax;
		h->family = (u8)min(x86_family(r.eax), 0xffu);
		h->model = (u8)x86_model(r.eax);
		h->stepping = (u8)x86_stepping(r.eax);
	}
	if (max_leaf >= 0x14) {
		for (u32 sub = 0; sub < 2; sub++) {
			cpuid_regs(0x14, sub, &r);
			h->leaf14[sub][0] = r.eax;
			h->leaf14[sub][1] = r.ebx;
			h->leaf14[sub][2] = r.ecx;
			h->leaf14[sub][3] = r.edx;
		}
	}
	if (max_leaf >= 0x15) {
		cpuid_regs(0x15, 0, &r);
		h->leaf15[0] = r.eax;
		h->leaf15[1] = r.ebx;
		h->leaf15[2] = r.ecx;
	}
}

void trace_header_set_image(struct tpz_header *h, u64 load_address, u64 image_size,
			    const void *build_id_note)
{
	h->load_address = load_address;
	h->image_size = image_size;
	h->flags |= TPZ_HDR_LOAD_ADDRESS;
	if (build_id_note) {
		/* An ELF note: namesz, descsz, type, name padded to 4, descriptor. */
		const u8 *n = build_id_note;
		u32 namesz, descsz;

		memcpy(&namesz, n, 4);
		memcpy(&descsz, n + 4, 4);
		descsz = min(descsz, (u32)sizeof(h->build_id));
		memcpy(h->build_id, n + 12 + ALIGN_UP(namesz, 4u), descsz);
		h->build_id_len = (u8)descsz;
		h->flags |= TPZ_HDR_BUILD_ID;
	}
}

int trace_write_header(struct trace_writer *w, const struct tpz_header *h)
{
	if (w->state != TRACE_W_NEW)
		return -EINVAL;
	write_record(w, TPZ_REC_HEADER, h, sizeof(*h), NULL, 0);
	w->state = TRACE_W_OPEN;
	return 0;
}

int trace_write_trace(struct trace_writer *w, const struct trace_chunk *c, const void *data,
		      size_t size)
{
	const u8 *p = data;
	u64 offset = c->offset;
	bool first = true;

	if (w->state != TRACE_W_OPEN || (c->flags & ~TPZ_TRACE_KNOWN_FLAGS) ||
	    (c->lost && !(c->flags & TPZ_TRACE_LOST)))
		return -EINVAL;
	if (!size && !(c->flags & (TPZ_TRACE_LOST | TPZ_TRACE_TRUNCATED)))
		return 0;
	do {
		size_t n = min(size, (size_t)TPZ_MAX_PAYLOAD);
		struct tpz_trace t = {
			.cpu = c->cpu,
			.flags = c->flags & TPZ_TRACE_WRAPPED,
			.offset = offset,
			.tsc = c->tsc,
			.data_size = (u32)n,
		};

		if (first && (c->flags & TPZ_TRACE_LOST)) {
			t.flags |= TPZ_TRACE_LOST;
			t.lost = c->lost;
		}
		if (n == size)
			t.flags |= c->flags & TPZ_TRACE_TRUNCATED;
		write_record(w, TPZ_REC_TRACE, &t, sizeof(t), p, n);
		w->trace_records++;
		w->trace_bytes += n;
		w->lost_bytes += t.lost;
		p += n;
		offset += n;
		size -= n;
		first = false;
	} while (size);
	return 0;
}

static void set_name(char *dst, size_t size, const char *name)
{
	memset(dst, 0, size);
	if (name)
		strscpy(dst, name, size);
}

int trace_write_image(struct trace_writer *w, const char *name, u64 vaddr, const void *data,
		      size_t size)
{
	const u8 *p = data;

	if (w->state != TRACE_W_OPEN || !size)
		return -EINVAL;
	while (size) {
		size_t n = min(size, (size_t)TPZ_MAX_PAYLOAD);
		struct tpz_sideband sb = { .kind = TPZ_SB_IMAGE, .vaddr = vaddr, .size = (u32)n };

		set_name(sb.name, sizeof(sb.name), name);
		write_record(w, TPZ_REC_SIDEBAND, &sb, sizeof(sb), p, n);
		w->sideband_records++;
		p += n;
		vaddr += n;
		size -= n;
	}
	return 0;
}

int trace_write_symbols(struct trace_writer *w, const char *name, u64 base,
			const struct tpz_sym *syms, u32 count, const char *names, u32 names_size)
{
	struct tpz_sideband sb = { .kind = TPZ_SB_SYMBOLS, .count = count, .vaddr = base };
	u64 table = (u64)count * sizeof(*syms);
	struct tpz_rec r;
	u32 crc;

	if (w->state != TRACE_W_OPEN)
		return -EINVAL;
	for (u32 i = 0; i < count; i++)
		if (syms[i].name >= names_size)
			return -EINVAL;
	if (table + names_size > TPZ_MAX_PAYLOAD)
		return -E2BIG;
	sb.size = (u32)(table + names_size);
	set_name(sb.name, sizeof(sb.name), name);

	/* The payload is two pieces (entries, names): written as one record by hand. */
	crc = trace_crc32(0, &sb, sizeof(sb));
	crc = trace_crc32(crc, syms, (size_t)table);
	crc = trace_crc32(crc, names, names_size);
	r.magic = TPZ_REC_MAGIC;
	r.type = TPZ_REC_SIDEBAND;
	r.body_size = sizeof(sb);
	r.size = (u32)(TPZ_REC_SIZE + sizeof(sb) + sb.size);
	r.seq = w->seq++;
	r.body_crc = crc;
	r.hdr_crc = trace_crc32(0, &r, offsetof(struct tpz_rec, hdr_crc));
	emit(w, &r, sizeof(r));
	emit(w, &sb, sizeof(sb));
	emit(w, syms, (size_t)table);
	emit(w, names, names_size);
	w->sideband_records++;
	return 0;
}

int trace_write_trailer(struct trace_writer *w, const struct trace_totals *t)
{
	struct tpz_trailer tr = {
		.records = w->seq,
		.trace_records = w->trace_records,
		.sideband_records = w->sideband_records,
		.trace_bytes = w->trace_bytes,
		.lost_bytes = w->lost_bytes + t->lost_at_end,
		.lost_at_end = t->lost_at_end,
		.file_bytes = w->file_bytes,
		.pmis = t->pmis,
		.end_tsc = t->end_tsc,
	};

	if (w->state != TRACE_W_OPEN)
		return -EINVAL;
	write_record(w, TPZ_REC_TRAILER, &tr, sizeof(tr), NULL, 0);
	w->state = TRACE_W_CLOSED;
	return 0;
}

/* ------------------------------------------------------------ serial framing */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *put_hex(char *s, u64 v, int digits)
{
	for (int i = digits - 1; i >= 0; i--)
		*s++ = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
	return s;
}

static char *put_b64(char *s, const u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i += 3) {
		u32 v = (u32)p[i] << 16;

		if (i + 1 < n)
			v |= (u32)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*s++ = b64[(v >> 18) & 63];
		*s++ = b64[(v >> 12) & 63];
		*s++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*s++ = i + 2 < n ? b64[v & 63] : '=';
	}
	return s;
}

static void framer_line(struct trace_framer *f, const char *s, size_t n)
{
	f->out(f->ctx, s, n);
}

void trace_framer_begin(struct trace_framer *f, void (*out)(void *ctx, const char *s, size_t n),
			void *ctx)
{
	char begin[] = "\n" TPZ_FRAME_BEGIN " ?\n";

	_Static_assert(TPZ_FRAME_VERSION < 10, "the version is one digit");
	begin[sizeof(begin) - 3] = (char)('0' + TPZ_FRAME_VERSION);

	memset(f, 0, sizeof(*f));
	f->out = out;
	f->ctx = ctx;
	framer_line(f, begin, sizeof(begin) - 1);
}

/* The frame's CRC covers its number (little-endian) and its bytes: a
 * damaged number fails the check like damaged bytes do. */
static u32 frame_crc(u32 frame, const u8 *p, size_t n)
{
	const u8 num[4] = { (u8)frame, (u8)(frame >> 8), (u8)(frame >> 16), (u8)(frame >> 24) };

	return trace_crc32(trace_crc32(0, num, sizeof(num)), p, n);
}

/* "@TPZ <frame> <base64> <crc>\n": at most 5 + 8 + 1 + 64 + 1 + 8 + 1 bytes. */
static void framer_flush(struct trace_framer *f)
{
	char line[96], *s = line;

	if (!f->len)
		return;
	if (f->frames == TPZ_FRAME_MAX) {
		/* numbers never wrap: past the last one the bytes are dropped,
		 * and the END line's totals tell the reader */
		f->len = 0;
		return;
	}
	memcpy(s, TPZ_FRAME_LINE, sizeof(TPZ_FRAME_LINE) - 1);
	s += sizeof(TPZ_FRAME_LINE) - 1;
	s = put_hex(s, f->frames, 8);
	*s++ = ' ';
	s = put_b64(s, f->buf, f->len);
	*s++ = ' ';
	s = put_hex(s, frame_crc(f->frames, f->buf, f->len), 8);
	*s++ = '\n';
	framer_line(f, line, (size_t)(s - line));
	f->frames++;
	f->len = 0;
}

int trace_framer_write(void *framer, const void *buf, size_t n)
{
	struct trace_framer *f = framer;
	const u8 *p = buf;

	f->crc = trace_crc32(f->crc, buf, n);
	f->bytes += n;
	while (n) {
		size_t k = min(n, (size_t)(TPZ_FRAME_DATA - f->len));

		memcpy(f->buf + f->len, p, k);
		f->len += (u32)k;
		p += k;
		n -= k;
		if (f->len == TPZ_FRAME_DATA)
			framer_flush(f);
	}
	return 0;
}

void trace_framer_end(struct trace_framer *f)
{
	char line[64], *s = line;

	framer_flush(f);
	memcpy(s, TPZ_FRAME_END " ", sizeof(TPZ_FRAME_END));
	s += sizeof(TPZ_FRAME_END);
	s = put_hex(s, f->frames, 8);
	*s++ = ' ';
	s = put_hex(s, f->bytes, 16);
	*s++ = ' ';
	s = put_hex(s, f->crc, 8);
	*s++ = '\n';
	framer_line(f, line, (size_t)(s - line));
}
