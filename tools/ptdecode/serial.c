// SPDX-License-Identifier: MIT
/*
 * The serial extractor: finds the "@TPZ" frame lines of the first framed
 * stream in a console log, checks each line's CRC (which covers its number)
 * and joins the decoded bytes in frame-number order. A damaged, repeated or
 * missing frame is named by its log line and left out; the container reader
 * then reports the record it belonged to.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ptdecode.h"

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Decodes @n base64 characters into @out; returns the byte count or -1. */
static int b64_decode(const char *s, size_t n, u8 *out, size_t cap)
{
	size_t len = 0;

	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;

		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64_value(s[i + k])) < 0) {
				return -1;
			}
		}
		u32 w = (u32)v[0] << 18 | (u32)v[1] << 12 | (u32)v[2] << 6 | (u32)v[3];

		if (len + 3 - pad > cap)
			return -1;
		out[len++] = (u8)(w >> 16);
		if (pad < 2)
			out[len++] = (u8)(w >> 8);
		if (pad < 1)
			out[len++] = (u8)w;
	}
	return (int)len;
}

static bool parse_hex(const char **s, const char *end, int digits, u64 *v)
{
	*v = 0;
	if (end - *s < digits)
		return false;
	for (int i = 0; i < digits; i++) {
		char ch = (*s)[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;

		if (d < 0)
			return false;
		*v = *v << 4 | (u64)d;
	}
	*s += digits;
	return true;
}

/* One frame line that passed its check. */
struct frame {
	u32 num;
	u32 len;
	u64 after;		/* the highest number accepted before it, +1 (0: none) */
	unsigned long line;
	size_t seen;		/* order of appearance */
	u8 data[TPZ_FRAME_DATA];
};

struct extract {
	struct frame *v;
	size_t n, cap;
	u64 next;		/* the number the next line should have */
	u64 high;		/* the highest number accepted so far, +1 */
	struct ptd_diags *diags;
};

static u32 frame_crc(u32 frame, const u8 *p, size_t n)
{
	const u8 num[4] = { (u8)frame, (u8)(frame >> 8), (u8)(frame >> 16), (u8)(frame >> 24) };

	return ptd_crc32(ptd_crc32(0, num, sizeof(num)), p, n);
}

static bool only_space(const char *s, const char *end)
{
	for (; s < end; s++)
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	return true;
}

static void keep(struct extract *x, u32 num, const u8 *buf, int n, unsigned long line)
{
	struct frame *f;

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 256;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
		if (!x->v)
			abort();
	}
	f = &x->v[x->n];
	*f = (struct frame){ .num = num, .len = (u32)n, .after = x->high, .line = line, .seen = x->n };
	memcpy(f->data, buf, (size_t)n);
	x->n++;
	x->next = (u64)num + 1;
	if (num >= x->high)
		x->high = (u64)num + 1;
}

/* A frame line that cannot be used, @why; its number when it was readable. */
static void dropped(struct extract *x, unsigned long line, bool num_ok, u64 frame, const char *why)
{
	if (num_ok)
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx: damaged frame line (%s), dropped",
			     line, frame, why);
	else
		ptd_diag_add(x->diags, -1, 0, "line %lu: damaged frame line (bad frame number, %s), dropped",
			     line, why);
}

/*
 * "@TPZ <frame:8> <base64> <crc:8>"; @s points after "@TPZ ". A line whose
 * number is unreadable or fails the CRC is tried as the frame the order
 * says comes next (or the one after, when a line was lost just before): a
 * damaged number alone costs nothing.
 */
static void frame_line(struct extract *x, const char *s, const char *end, unsigned long line)
{
	const char *b, *sp;
	u8 buf[TPZ_FRAME_DATA];
	u64 frame, crc;
	bool num_ok;
	int n;

	num_ok = parse_hex(&s, end, 8, &frame) && s < end && *s == ' ';
	b = memchr(s, ' ', (size_t)(end - s));
	b = b ? b + 1 : NULL;
	sp = b ? memchr(b, ' ', (size_t)(end - b)) : NULL;
	if (!sp || end - sp < 9) {
		dropped(x, line, num_ok, frame, "cut short");
		return;
	}
	n = b64_decode(b, (size_t)(sp - b), buf, sizeof(buf));
	s = sp + 1;
	if (n <= 0 || !parse_hex(&s, end, 8, &crc) || !only_space(s, end)) {
		dropped(x, line, num_ok, frame, "bad base64 or CRC field");
		return;
	}
	if (num_ok && frame_crc((u32)frame, buf, (size_t)n) == crc) {
		keep(x, (u32)frame, buf, n, line);
		return;
	}
	for (u64 guess = x->next; guess < x->next + 2 && guess < TPZ_FRAME_MAX; guess++) {
		if (frame_crc((u32)guess, buf, (size_t)n) != crc)
			continue;
		if (num_ok)
			ptd_diag_add(x->diags, -1, 0, "line %lu: frame number 0x%llx damaged: the CRC says frame 0x%llx, taken as that",
				     line, frame, guess);
		else
			ptd_diag_add(x->diags, -1, 0, "line %lu: frame number unreadable: the CRC says frame 0x%llx, taken as that",
				     line, guess);
		keep(x, (u32)guess, buf, n, line);
		return;
	}
	if (num_ok)
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx: CRC mismatch (stored 0x%08llx, computed 0x%08x), dropped",
			     line, frame, crc, frame_crc((u32)frame, buf, (size_t)n));
	else
		dropped(x, line, false, 0, "CRC mismatch");
}

static int by_number(const void *a, const void *b)
{
	const struct frame *p = a, *q = b;

	if (p->num != q->num)
		return p->num < q->num ? -1 : 1;
	return p->seen < q->seen ? -1 : p->seen > q->seen;
}

/*
 * The kept frames joined by number: a number taken twice keeps its first
 * line, a hole is reported with the bytes it cost, a line out of order is
 * put back in its place. Return: the number after the last frame.
 */
static u64 join(struct extract *x, u8 **out, size_t *out_size, u32 *crc)
{
	u8 *p = malloc(x->n * TPZ_FRAME_DATA + 1);
	size_t len = 0;
	u64 expect = 0;

	if (!p)
		abort();
	*crc = 0;
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), by_number);
	for (size_t i = 0; i < x->n; i++) {
		const struct frame *f = &x->v[i];

		if (i && f->num == f[-1].num) {
			const struct frame *first = f - 1;

			while (first > x->v && first[-1].num == f->num)
				first--;
			if (f->len == first->len && !memcmp(f->data, first->data, f->len))
				ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%x repeated, ignored",
					     f->line, f->num);
			else
				ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%x again, with other bytes than on line %lu: ignored",
					     f->line, f->num, first->line);
			continue;
		}
		if (f->num > expect)
			ptd_diag_add(x->diags, -1, 0, "line %lu: frame%s 0x%x%s missing before frame 0x%x (about %llu bytes lost)",
				     f->line, f->num - expect > 1 ? "s" : "", (unsigned)expect,
				     f->num - expect > 1 ? " and following" : "", f->num,
				     (unsigned long long)(f->num - expect) * TPZ_FRAME_DATA);
		if (f->after > (u64)f->num + 1)
			ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%x comes after frame 0x%llx: put back in its place",
				     f->line, f->num, f->after - 1);
		memcpy(p + len, f->data, f->len);
		len += f->len;
		*crc = ptd_crc32(*crc, f->data, f->len);
		expect = (u64)f->num + 1;
	}
	*out = p;
	*out_size = len;
	return expect;
}

/* "@TPZ-BEGIN <version>"; @s points after "@TPZ-BEGIN". Return: false
 * (reported) for a version this reader does not know. */
static bool begin_line(const char *s, const char *end, unsigned long line, struct ptd_diags *diags)
{
	const char *v;
	unsigned long version = 0;
	size_t digits = 0;

	while (s < end && *s == ' ')
		s++;
	for (v = s; s < end && *s >= '0' && *s <= '9' && digits < 9; s++, digits++)
		version = version * 10 + (unsigned long)(*s - '0');
	if (!digits || !only_space(s, end)) {
		ptd_diag_add(diags, -1, 0, "line %lu: damaged @TPZ-BEGIN line (no framing version): not read",
			     line);
		return false;
	}
	if (version == TPZ_FRAME_VERSION)
		return true;
	if (version == 1)
		ptd_diag_add(diags, -1, 0, "line %lu: framing version 1 is not read any more (its CRC does not cover the frame number); this ptdecode reads version %d",
			     line, TPZ_FRAME_VERSION);
	else
		ptd_diag_add(diags, -1, 0, "line %lu: unknown framing version %.*s (this ptdecode reads version %d)",
			     line, (int)(s - v), v, TPZ_FRAME_VERSION);
	return false;
}

static int no_stream(struct extract *x, u8 **out, size_t *out_size)
{
	free(x->v);
	*out = NULL;
	*out_size = 0;
	return 2;
}

int ptd_extract_serial(const char *log, size_t log_size, u8 **out, size_t *out_size,
		       struct ptd_diags *diags)
{
	struct extract x = { .diags = diags };
	const char *p = log, *end = log + log_size;
	bool begun = false, ended = false, totals = false;
	unsigned long line = 0, frames = 0, end_line = 0;
	size_t first_diag = ptd_diags_count(diags);
	u64 nframes = 0, bytes = 0, crc = 0, next;
	u32 got_crc;

	while (p < end && !ended) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *m;

		line++;
		m = memmem(p, (size_t)(eol - p), "@TPZ", 4);
		if (m) {
			size_t rest = (size_t)(eol - m);

			if (rest >= sizeof(TPZ_FRAME_BEGIN) - 1 &&
			    !memcmp(m, TPZ_FRAME_BEGIN, sizeof(TPZ_FRAME_BEGIN) - 1)) {
				if (begun) {
					ptd_diag_add(diags, -1, 0, "line %lu: a new framed stream begins before the first one ended; the first is incomplete",
						     line);
					break;
				}
				if (!begin_line(m + sizeof(TPZ_FRAME_BEGIN) - 1, eol, line, diags))
					return no_stream(&x, out, out_size);
				begun = true;
			} else if (rest >= sizeof(TPZ_FRAME_END) - 1 &&
				   !memcmp(m, TPZ_FRAME_END, sizeof(TPZ_FRAME_END) - 1)) {
				char tail[64] = "";
				const char *s = tail;

				/* A NUL-terminated copy: the parse may stop anywhere. */
				memcpy(tail, m + sizeof(TPZ_FRAME_END) - 1,
				       min(rest - (sizeof(TPZ_FRAME_END) - 1), sizeof(tail) - 1));

				if (!begun && !frames)
					goto next;
				ended = true;
				end_line = line;
				const char *te = tail + strlen(tail);

				totals = *s++ == ' ' && parse_hex(&s, te, 8, &nframes) && *s++ == ' ' &&
					 parse_hex(&s, te, 16, &bytes) && *s++ == ' ' &&
					 parse_hex(&s, te, 8, &crc);
			} else if (rest >= sizeof(TPZ_FRAME_LINE) - 1 &&
				   !memcmp(m, TPZ_FRAME_LINE, sizeof(TPZ_FRAME_LINE) - 1)) {
				if (!begun && !frames)
					ptd_diag_add(diags, -1, 0, "line %lu: frame line without @TPZ-BEGIN before it",
						     line);
				frames++;
				frame_line(&x, m + sizeof(TPZ_FRAME_LINE) - 1, eol, line);
			}
		}
next:
		p = nl ? nl + 1 : end;
	}
	if (!begun && !frames) {
		ptd_diag_add(diags, -1, 0, "no framed trace (\"@TPZ\" lines) in the log");
		return no_stream(&x, out, out_size);
	}
	next = join(&x, out, out_size, &got_crc);
	free(x.v);
	if (!ended)
		ptd_diag_add(diags, -1, 0, "line %lu: the log ends inside the framed stream (no @TPZ-END)",
			     line);
	else if (!totals)
		ptd_diag_add(diags, -1, 0, "line %lu: damaged @TPZ-END line: totals not checked", end_line);
	if (ended && totals && nframes != next)
		ptd_diag_add(diags, -1, 0, "line %lu: @TPZ-END announces %llu frames, the last one received is frame %llu",
			     end_line, nframes, next);
	if (ended && totals && (bytes != *out_size || crc != got_crc))
		ptd_diag_add(diags, -1, 0, "line %lu: @TPZ-END announces %llu bytes (CRC 0x%08llx), extracted %zu (CRC 0x%08x)",
			     end_line, bytes, crc, *out_size, got_crc);
	return ptd_diags_count(diags) > first_diag ? 1 : 0;
}

/* Where the next "@TPZ" search starts, and what was seen: the last mark's
 * end, the first "@TPZ-END" (reading stops after its line; @end_at: where
 * the search for that line's end goes on). */
struct scan {
	size_t from, mark, end_at;
	bool marked, ended;
};

static void scan_marks(struct scan *sc, const char *buf, size_t len, bool eof)
{
	const char *m;

	while (sc->from < len && (m = memmem(buf + sc->from, len - sc->from, "@TPZ", 4))) {
		size_t at = (size_t)(m - buf);

		if (!eof && len - at < sizeof(TPZ_FRAME_END) - 1)
			return;	/* maybe an END: look again with more bytes */
		sc->mark = at + 4;
		sc->marked = true;
		sc->from = at + 4;
		if (!sc->ended && len - at >= sizeof(TPZ_FRAME_END) - 1 &&
		    !memcmp(m, TPZ_FRAME_END, sizeof(TPZ_FRAME_END) - 1)) {
			sc->ended = true;
			sc->end_at = at;
		}
	}
	if (len > 3 && sc->from < len - 3)
		sc->from = len - 3;
}

int ptd_extract_serial_file(const char *path, size_t window, u8 **out, size_t *out_size,
			    struct ptd_diags *diags)
{
	int fd = open(path, O_RDONLY);
	struct scan sc = { 0 };
	size_t len = 0, cap = 0;
	u8 *buf = NULL;
	bool stopped = false;
	ssize_t n = 1;
	int ret;

	*out = NULL;
	*out_size = 0;
	if (fd < 0) {
		ptd_diag_add(diags, -1, 0, "cannot open: %s", strerror(errno));
		return 2;
	}
	while (n) {
		n = ptd_read_some(fd, &buf, &len, &cap);
		if (n < 0) {
			ptd_diag_add(diags, -1, 0, "read error: %s", strerror(errno));
			free(buf);
			close(fd);
			return 2;
		}
		scan_marks(&sc, (const char *)buf, len, !n);
		if (sc.ended) {
			/* each byte looked at once: an END line may be endless too */
			const u8 *nl = memchr(buf + sc.end_at, '\n', len - sc.end_at);

			if (nl) {
				len = (size_t)(nl - buf) + 1;	/* the rest is not read */
				break;
			}
			sc.end_at = len;
		}
		if (len - (sc.marked ? sc.mark : 0) >= window) {
			if (!sc.marked) {
				ptd_diag_add(diags, -1, 0, "no \"@TPZ\" in its first %zu bytes: not a log with a framed trace",
					     window);
				free(buf);
				close(fd);
				return 2;
			}
			ptd_diag_add(diags, -1, 0, "no \"@TPZ\" in the %zu bytes after offset 0x%zx: reading stopped there",
				     window, sc.mark);
			stopped = true;
			break;
		}
	}
	close(fd);
	ret = ptd_extract_serial((const char *)buf, len, out, out_size, diags);
	free(buf);
	return ret == 2 ? 2 : ret || stopped;
}
