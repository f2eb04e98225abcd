// SPDX-License-Identifier: MIT
/*
 * The container reader: walks the records of a trace file, checks both CRCs
 * of each, the body of each type and the trailer's totals, and keeps every
 * intact record. A damaged record is named with the reason and skipped: the
 * reader looks for the next valid record header (magic and header CRC), so a
 * damaged size or missing bytes cost only the damaged record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "ptdecode.h"

void *ptd_grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 1024;
	v = realloc(v, *cap * size);
	if (!v)
		abort();
	return v;
}

u32 ptd_crc32(u32 crc, const void *buf, size_t n)
{
	const u8 *p = buf;

	while (n) {
		uInt k = (uInt)min(n, (size_t)1 << 30);

		crc = (u32)crc32(crc, p, k);
		p += k;
		n -= k;
	}
	return crc;
}

const char *ptd_record_type_name(u16 type, char *buf, size_t size)
{
	switch (type) {
	case TPZ_REC_HEADER: return "header";
	case TPZ_REC_TRACE: return "trace";
	case TPZ_REC_SIDEBAND: return "sideband";
	case TPZ_REC_TRAILER: return "trailer";
	}
	snprintf(buf, size, "type %u", type);
	return buf;
}

/* The first offset >= @from of @data[0..@size) holding an intact record
 * header (magic and header CRC), or @size. */
static size_t find_header(const u8 *data, size_t size, size_t from)
{
	while (from + TPZ_REC_SIZE <= size) {
		const u8 *p = memchr(data + from, 'T', size - TPZ_REC_SIZE + 1 - from);
		struct tpz_rec r;

		if (!p)
			break;
		from = (size_t)(p - data);
		memcpy(&r, p, sizeof(r));
		if (r.magic == TPZ_REC_MAGIC &&
		    r.hdr_crc == ptd_crc32(0, p, offsetof(struct tpz_rec, hdr_crc)))
			return from;
		from++;
	}
	return size;
}

/* The next offset >= @from holding a valid record header, or the file size. */
static size_t resync(const struct ptd_container *c, size_t from)
{
	return find_header(c->data, c->size, from);
}

static const char *skip_note(const struct ptd_container *c, size_t next, char *buf, size_t size)
{
	if (next < c->size)
		snprintf(buf, size, "skipped to the next record at offset 0x%zx", next);
	else
		snprintf(buf, size, "no further record");
	return buf;
}

static void add_record(struct ptd_container *c, const struct ptd_record *r)
{
	/* doubled: one more each time copied them all, for each record, where
	 * realloc() moves (always, under ASan) */
	c->recs = ptd_grow(c->recs, &c->cap_recs, c->nrecs, sizeof(*c->recs));
	c->recs[c->nrecs++] = *r;
}

static void check_trailer(struct ptd_container *c, const struct tpz_rec *h, size_t off)
{
	const struct tpz_trailer *t = &c->trailer;
	u64 lost = c->lost_bytes + t->lost_at_end;

	if (t->records != h->seq)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: it counts %u records before it, but it is record %u",
			     t->records, h->seq);
	if (t->trace_records != c->trace_records)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: %u trace records announced, %u intact",
			     t->trace_records, c->trace_records);
	if (t->sideband_records != c->sideband_records)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: %u sideband records announced, %u intact",
			     t->sideband_records, c->sideband_records);
	if (t->trace_bytes != c->trace_bytes)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: %llu bytes of trace data announced, %llu intact",
			     t->trace_bytes, c->trace_bytes);
	if (t->lost_bytes != lost)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: %llu lost bytes announced, the records account for %llu",
			     t->lost_bytes, lost);
	if (t->lost_at_end)
		ptd_diag_add(&c->diags, h->seq, off,
			     "%llu bytes lost after the last trace record: the trace unit stopped, its last packets are missing",
			     t->lost_at_end);
	if (t->file_bytes != off)
		ptd_diag_add(&c->diags, h->seq, off,
			     "trailer total mismatch: %llu container bytes announced before the trailer, found %zu",
			     t->file_bytes, off);
}

/* The header record: the format's version, the first header only. */
static void take_header(struct ptd_container *c, const struct tpz_rec *h, size_t off,
			const u8 *body)
{
	struct ptd_diags *d = &c->diags;

	if (h->body_size < sizeof(struct tpz_header)) {
		ptd_diag_add(d, h->seq, off, "header body is %u bytes, at least %zu expected",
			     h->body_size, sizeof(struct tpz_header));
		return;
	}
	if (c->have_header) {
		ptd_diag_add(d, h->seq, off, "a second header record (only the first is used)");
		return;
	}
	memcpy(&c->header, body, sizeof(c->header));
	c->have_header = true;
	if (c->header.version_major != TPZ_FORMAT_MAJOR) {
		ptd_diag_add(d, h->seq, off,
			     "unsupported format version %u.%u (this ptdecode reads %u.x)",
			     c->header.version_major, c->header.version_minor, TPZ_FORMAT_MAJOR);
		c->unusable = true;
	}
	if (h->seq != 0)
		ptd_diag_add(d, h->seq, off, "the header record should be record 0");
}

/* A trace record (@r: its payload set): kept when its sizes agree. */
static void take_trace(struct ptd_container *c, const struct tpz_rec *h, size_t off,
		       const u8 *body, struct ptd_record *r)
{
	struct ptd_diags *d = &c->diags;
	struct tpz_trace *t = &r->body.trace;

	if (h->body_size < sizeof(struct tpz_trace)) {
		ptd_diag_add(d, h->seq, off, "trace body is %u bytes, at least %zu expected",
			     h->body_size, sizeof(struct tpz_trace));
		return;
	}
	memcpy(t, body, sizeof(*t));
	if (t->data_size != r->payload_size) {
		ptd_diag_add(d, h->seq, off,
			     "trace data size %u disagrees with the record's %u payload bytes",
			     t->data_size, r->payload_size);
		return;
	}
	if (t->flags & ~TPZ_TRACE_KNOWN_FLAGS)
		ptd_diag_add(d, h->seq, off, "unknown trace flags %#x (ignored)",
			     (unsigned int)(t->flags & ~TPZ_TRACE_KNOWN_FLAGS));
	if (t->lost && !(t->flags & TPZ_TRACE_LOST))
		ptd_diag_add(d, h->seq, off, "%llu lost bytes without the LOST flag",
			     t->lost);
	c->trace_records++;
	c->trace_bytes += r->payload_size;
	c->lost_bytes += t->lost;
	add_record(c, r);
}

/* A symbols sideband's table and names fit its payload; false (said why) when not. */
static bool symbols_fit(struct ptd_container *c, const struct tpz_rec *h, size_t off,
			const struct tpz_sideband *sb, const u8 *payload, u32 payload_size)
{
	struct ptd_diags *d = &c->diags;
	u64 table = (u64)sb->count * sizeof(struct tpz_sym);
	u32 blob;

	if (table > payload_size) {
		ptd_diag_add(d, h->seq, off, "%u symbols do not fit in %u payload bytes",
			     sb->count, payload_size);
		return false;
	}
	blob = payload_size - (u32)table;
	if (sb->count && (!blob || payload[payload_size - 1])) {
		ptd_diag_add(d, h->seq, off, "symbol names are not NUL-terminated");
		return false;
	}
	for (u32 i = 0; i < sb->count; i++) {
		struct tpz_sym s;

		memcpy(&s, payload + i * sizeof(s), sizeof(s));
		if (s.name >= blob) {
			ptd_diag_add(d, h->seq, off,
				     "symbol %u: name offset %u outside the %u-byte string table",
				     i, s.name, blob);
			return false;
		}
	}
	return true;
}

/* A sideband record (@r: its payload set): kept when well formed and of a known kind. */
static void take_sideband(struct ptd_container *c, const struct tpz_rec *h, size_t off,
			  const u8 *body, struct ptd_record *r)
{
	struct ptd_diags *d = &c->diags;
	struct tpz_sideband *sb = &r->body.sideband;

	if (h->body_size < sizeof(*sb)) {
		ptd_diag_add(d, h->seq, off, "sideband body is %u bytes, at least %zu expected",
			     h->body_size, sizeof(*sb));
		return;
	}
	memcpy(sb, body, sizeof(*sb));
	sb->name[sizeof(sb->name) - 1] = 0;
	if (sb->size != r->payload_size) {
		ptd_diag_add(d, h->seq, off,
			     "sideband size %u disagrees with the record's %u payload bytes",
			     sb->size, r->payload_size);
		return;
	}
	if (sb->kind == TPZ_SB_SYMBOLS) {
		if (!symbols_fit(c, h, off, sb, r->payload, r->payload_size))
			return;
	} else if (sb->kind != TPZ_SB_IMAGE) {
		ptd_diag_add(d, h->seq, off, "unknown sideband kind %u (skipped)", sb->kind);
		return;
	}
	c->sideband_records++;
	add_record(c, r);
}

/* The trailer record: the first only, checked against what came before. */
static void take_trailer(struct ptd_container *c, const struct tpz_rec *h, size_t off,
			 const u8 *body)
{
	struct ptd_diags *d = &c->diags;

	if (h->body_size < sizeof(struct tpz_trailer)) {
		ptd_diag_add(d, h->seq, off, "trailer body is %u bytes, at least %zu expected",
			     h->body_size, sizeof(struct tpz_trailer));
		return;
	}
	if (c->have_trailer) {
		ptd_diag_add(d, h->seq, off, "a second trailer record");
		return;
	}
	memcpy(&c->trailer, body, sizeof(c->trailer));
	c->have_trailer = true;
	check_trailer(c, h, off);
}

/* Checks one intact record's body by type; keeps it when it is well formed. */
static void take_record(struct ptd_container *c, const struct tpz_rec *h, size_t off,
			bool after_trailer)
{
	const u8 *body = c->data + off + TPZ_REC_SIZE;
	const u8 *payload = body + h->body_size;
	u32 payload_size = h->size - TPZ_REC_SIZE - h->body_size;
	struct ptd_record r = { .seq = h->seq, .offset = off, .type = h->type, .size = h->size,
				.payload = payload, .payload_size = payload_size };
	char tb[16];

	if (after_trailer && h->type != TPZ_REC_HEADER)
		ptd_diag_add(&c->diags, h->seq, off, "%s record after the trailer",
			     ptd_record_type_name(h->type, tb, sizeof(tb)));
	switch (h->type) {
	case TPZ_REC_HEADER:
		take_header(c, h, off, body);
		return;
	case TPZ_REC_TRACE:
		take_trace(c, h, off, body, &r);
		return;
	case TPZ_REC_SIDEBAND:
		take_sideband(c, h, off, body, &r);
		return;
	case TPZ_REC_TRAILER:
		take_trailer(c, h, off, body);
		return;
	default:
		ptd_diag_add(&c->diags, h->seq, off, "unknown record type %u (%u bytes skipped)",
			     h->type, h->size);
		return;
	}
}

/* @c holds its own copy of the file. Return: false for an empty file. */
static bool load_data(struct ptd_container *c, const char *name, const void *data, size_t size)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->data = malloc(size ? size : 1);
	if (!c->data)
		abort();
	if (size)
		memcpy(c->data, data, size);
	c->size = size;
	if (!size) {
		ptd_diag_add(&c->diags, -1, 0, "empty file");
		c->unusable = true;
		return false;
	}
	return true;
}

/* Where ptd_container_parse() is in the file. */
struct parse_pos {
	size_t off;		/* the record being read */
	u32 expect;		/* the record number expected there */
	bool damaged;		/* the bytes before were not a record */
};

/* The record header at @p->off into @h. Return: false when it has no magic
 * or a bad CRC (diagnosed, @p->off moved to the next candidate). */
static bool read_rec_header(struct ptd_container *c, struct parse_pos *p, struct tpz_rec *h)
{
	char note[80];
	size_t next;
	u32 crc;

	memcpy(h, c->data + p->off, sizeof(*h));
	if (h->magic != TPZ_REC_MAGIC) {
		next = resync(c, p->off + 1);
		ptd_diag_add(&c->diags, p->expect, p->off,
			     "bad magic 0x%08x (expected 0x%08x, \"TPZR\"); %s", h->magic,
			     TPZ_REC_MAGIC, skip_note(c, next, note, sizeof(note)));
		p->off = next;
		p->expect++;
		p->damaged = true;
		return false;
	}
	crc = ptd_crc32(0, c->data + p->off, offsetof(struct tpz_rec, hdr_crc));
	if (crc != h->hdr_crc) {
		next = resync(c, p->off + 1);
		ptd_diag_add(&c->diags, p->expect, p->off,
			     "record header CRC mismatch (stored 0x%08x, computed 0x%08x); %s",
			     h->hdr_crc, crc, skip_note(c, next, note, sizeof(note)));
		p->off = next;
		p->expect++;
		p->damaged = true;
		return false;
	}
	return true;
}

/*
 * A record header that checks out: its fields are what the writer wrote.
 * Damaged bytes counted as one record in read_rec_header(); when they were
 * not a record at all (noise before record 0), the number is taken back
 * silently.
 */
static void check_seq(struct ptd_container *c, struct parse_pos *p, const struct tpz_rec *h)
{
	if (h->seq > p->expect)
		ptd_diag_add(&c->diags, p->expect, p->off, h->seq == p->expect + 1 ?
			     "record %u is missing" : "records %u to %u are missing",
			     p->expect, h->seq - 1);
	else if (h->seq < p->expect && !(p->damaged && h->seq == p->expect - 1))
		ptd_diag_add(&c->diags, h->seq, p->off, "record number %u after record %u",
			     h->seq, p->expect - 1);
	p->expect = h->seq + 1;
	p->damaged = false;
}

/* The record's size, its bytes in the file and its payload CRC. Return:
 * false when it cannot be taken (diagnosed, @p->off moved past it). */
static bool check_extent(struct ptd_container *c, struct parse_pos *p, const struct tpz_rec *h)
{
	size_t off = p->off, avail = c->size - off, next;
	char note[80];
	u32 crc;

	if (h->size < TPZ_REC_SIZE + h->body_size || h->size > TPZ_MAX_RECORD) {
		next = resync(c, off + TPZ_REC_SIZE);
		ptd_diag_add(&c->diags, h->seq, off, "bad record size %u (body %u); %s", h->size,
			     h->body_size, skip_note(c, next, note, sizeof(note)));
		p->off = next;
		return false;
	}
	if (h->size > avail) {
		next = resync(c, off + TPZ_REC_SIZE);
		ptd_diag_add(&c->diags, h->seq, off,
			     "truncated: the record has %u bytes, %zu are in the file%s%s",
			     h->size, min(avail, next - off),
			     next < c->size ? "; " : "",
			     next < c->size ? skip_note(c, next, note, sizeof(note)) : "");
		p->off = next;
		return false;
	}
	/*
	 * Bytes missing inside (a lost serial frame) put the next record
	 * header inside this one's extent: look there first, and then the
	 * CRC is not worth computing. Each byte is scanned once this way:
	 * headers that each claim the rest of the file cost one scan to
	 * the next, not a CRC over the rest each (that was quadratic).
	 */
	next = resync(c, off + TPZ_REC_SIZE);
	if (next < off + h->size) {
		ptd_diag_add(&c->diags, h->seq, off,
			     "payload CRC mismatch: bytes are missing: the next record starts inside this one, at offset 0x%zx",
			     next);
		p->off = next;
		return false;
	}
	crc = ptd_crc32(0, c->data + off + TPZ_REC_SIZE, h->size - TPZ_REC_SIZE);
	if (crc != h->body_crc) {
		ptd_diag_add(&c->diags, h->seq, off,
			     "payload CRC mismatch (stored 0x%08x, computed 0x%08x)", h->body_crc, crc);
		p->off += h->size;
		return false;
	}
	return true;
}

/* What the whole file lacks. Return: ptd_container_parse()'s. */
static int parse_result(struct ptd_container *c, bool any, u32 expect)
{
	if (!any) {
		ptd_diag_add(&c->diags, -1, 0, "no intact record: not a topaz trace container");
		c->unusable = true;
		return 2;
	}
	if (!c->have_header)
		ptd_diag_add(&c->diags, -1, 0,
			     "no intact header record: CPU, configuration and load address unknown");
	if (!c->have_trailer)
		ptd_diag_add(&c->diags, expect, c->size,
			     "no trailer record: the container is incomplete (the file ends here)");
	if (c->unusable)
		return 2;
	return ptd_diags_count(&c->diags) ? 1 : 0;
}

int ptd_container_parse(struct ptd_container *c, const char *name, const void *data, size_t size)
{
	struct parse_pos p = { 0 };
	bool any = false;
	struct tpz_rec h;

	if (!load_data(c, name, data, size))
		return 2;
	while (p.off < size) {
		size_t avail = size - p.off;

		if (avail < TPZ_REC_SIZE) {
			ptd_diag_add(&c->diags, p.expect, p.off,
				     "truncated record header: %zu of %u bytes", avail, TPZ_REC_SIZE);
			break;
		}
		if (!read_rec_header(c, &p, &h))
			continue;
		check_seq(c, &p, &h);
		if (!check_extent(c, &p, &h))
			continue;
		any = true;
		take_record(c, &h, p.off, c->have_trailer);
		p.off += h.size;
	}
	return parse_result(c, any, p.expect);
}

/* Noise before record 0 is tolerated, but only so much: a container has a
 * record header within its first record's largest size. */
#define LOOK_FOR_HEADER		PTD_INPUT_WINDOW

static int load_failed(struct ptd_container *c, const char *path, const char *why)
{
	memset(c, 0, sizeof(*c));
	c->name = path;
	ptd_diag_add(&c->diags, -1, 0, "%s", why);
	c->unusable = true;
	return 2;
}

ssize_t ptd_read_some(int fd, u8 **buf, size_t *len, size_t *cap)
{
	ssize_t n;

	if (*len == *cap) {
		*cap = *cap ? *cap * 2 : 1 << 16;
		*buf = realloc(*buf, *cap);
		if (!*buf)
			abort();
	}
	do
		n = read(fd, *buf + *len, *cap - *len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		*len += (size_t)n;
	return n;
}

/*
 * The file is mapped, not read whole, and its start is checked before the
 * rest is touched: /dev/zero, a large sparse file or any file with no record
 * header in its first 64 MiB is refused with that reason (it used to be read
 * into memory first, 4 GiB for a 2 GB sparse file). Pipes and devices are
 * read up to the same point before the check.
 */
int ptd_container_load(struct ptd_container *c, const char *path)
{
	int fd = open(path, O_RDONLY);
	char why[160];
	struct stat st;
	u8 *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int ret;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return load_failed(c, path, why);
	}
	if (S_ISREG(st.st_mode)) {
		void *map = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;

		close(fd);
		if (st.st_size && map == MAP_FAILED) {
			snprintf(why, sizeof(why), "cannot map: %s", strerror(errno));
			return load_failed(c, path, why);
		}
		size_t window = min((size_t)st.st_size, LOOK_FOR_HEADER);

		if (st.st_size && find_header(map, window, 0) == window) {
			munmap(map, (size_t)st.st_size);
			snprintf(why, sizeof(why), "no record header in its first %zu bytes: not a topaz trace container",
				 window);
			return load_failed(c, path, why);
		}
		ret = ptd_container_parse(c, path, map, (size_t)st.st_size);
		if (st.st_size)
			munmap(map, (size_t)st.st_size);
		return ret;
	}
	for (;;) {
		n = ptd_read_some(fd, &buf, &len, &cap);
		if (n < 0) {
			snprintf(why, sizeof(why), "read error: %s", strerror(errno));
			free(buf);
			close(fd);
			return load_failed(c, path, why);
		}
		/* the check once the window is full (a device never ends) */
		if (!n || (len >= LOOK_FOR_HEADER && len - (size_t)n < LOOK_FOR_HEADER)) {
			size_t window = min(len, LOOK_FOR_HEADER);

			if (find_header(buf, window, 0) == window) {
				snprintf(why, sizeof(why), "no record header in its first %zu bytes: not a topaz trace container",
					 window);
				free(buf);
				close(fd);
				return load_failed(c, path, why);
			}
			if (!n)
				break;
		}
	}
	close(fd);
	ret = ptd_container_parse(c, path, buf, len);
	free(buf);
	return ret;
}

void ptd_container_free(struct ptd_container *c)
{
	free(c->data);
	free(c->recs);
	ptd_diags_free(&c->diags);
	memset(c, 0, sizeof(*c));
}
