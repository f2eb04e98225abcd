// SPDX-License-Identifier: MIT
/*
 * The serial extractor: finds the "@TPZ" frame lines of the first framed
 * stream in a console log, checks each line's number and CRC, and joins the
 * decoded bytes. A damaged or missing frame is named by its log line and left
 * out; the container reader then reports the record it belonged to.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
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

struct extract {
	u8 *out;
	size_t len, cap;
	u64 next_frame;		/* u64: after frame 0xffffffff, 0 is not next again */
	u32 crc;
	struct ptd_diags *diags;
};

static void append(struct extract *x, const u8 *p, size_t n)
{
	if (x->len + n > x->cap) {
		x->cap = (x->len + n) * 2 + 4096;
		x->out = realloc(x->out, x->cap);
		if (!x->out)
			abort();
	}
	memcpy(x->out + x->len, p, n);
	x->len += n;
	x->crc = ptd_crc32(x->crc, p, n);
}

static bool only_space(const char *s, const char *end)
{
	for (; s < end; s++)
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	return true;
}

/* "@TPZ <frame:8> <base64> <crc:8>"; @s points after "@TPZ ". */
static int frame_line(struct extract *x, const char *s, const char *end, unsigned long line)
{
	const char *b, *sp;
	u8 buf[TPZ_FRAME_DATA];
	u64 frame, crc;
	int n;

	if (!parse_hex(&s, end, 8, &frame) || s >= end || *s++ != ' ') {
		ptd_diag_add(x->diags, -1, 0, "line %lu: damaged frame line (bad frame number), dropped", line);
		return 1;
	}
	b = s;
	sp = memchr(b, ' ', (size_t)(end - b));
	if (!sp || end - sp < 9) {
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx: damaged frame line (cut short), dropped",
			     line, frame);
		return 1;
	}
	n = b64_decode(b, (size_t)(sp - b), buf, sizeof(buf));
	s = sp + 1;
	if (n <= 0 || !parse_hex(&s, end, 8, &crc) || !only_space(s, end)) {
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx: damaged frame line (bad base64 or CRC field), dropped",
			     line, frame);
		return 1;
	}
	if (ptd_crc32(0, buf, (size_t)n) != crc) {
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx: CRC mismatch (stored 0x%08llx, computed 0x%08x), dropped",
			     line, frame, crc,
			     ptd_crc32(0, buf, (size_t)n));
		return 1;
	}
	if (frame < x->next_frame) {
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame 0x%llx repeated, ignored", line,
			     frame);
		return 1;
	}
	if (frame > x->next_frame) {
		ptd_diag_add(x->diags, -1, 0, "line %lu: frame%s 0x%x%s missing before frame 0x%llx (about %llu bytes lost)",
			     line, frame - x->next_frame > 1 ? "s" : "", (unsigned)x->next_frame,
			     frame - x->next_frame > 1 ? " and following" : "", frame,
			     (unsigned long long)(frame - x->next_frame) * TPZ_FRAME_DATA);
	}
	append(x, buf, (size_t)n);
	x->next_frame = frame + 1;
	return 0;
}

int ptd_extract_serial(const char *log, size_t log_size, u8 **out, size_t *out_size,
		       struct ptd_diags *diags)
{
	struct extract x = { .diags = diags };
	const char *p = log, *end = log + log_size;
	bool begun = false, ended = false;
	unsigned long line = 0, frames = 0;
	size_t first_diag = ptd_diags_count(diags);

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
				begun = true;
			} else if (rest >= sizeof(TPZ_FRAME_END) - 1 &&
				   !memcmp(m, TPZ_FRAME_END, sizeof(TPZ_FRAME_END) - 1)) {
				char tail[64] = "";
				const char *s = tail;
				u64 nframes, bytes, crc;

				/* A NUL-terminated copy: the parse may stop anywhere. */
				memcpy(tail, m + sizeof(TPZ_FRAME_END) - 1,
				       min(rest - (sizeof(TPZ_FRAME_END) - 1), sizeof(tail) - 1));

				if (!begun && !frames)
					goto next;
				ended = true;
				const char *te = tail + strlen(tail);

				if (!(*s++ == ' ' && parse_hex(&s, te, 8, &nframes) && *s++ == ' ' &&
				      parse_hex(&s, te, 16, &bytes) && *s++ == ' ' &&
				      parse_hex(&s, te, 8, &crc))) {
					ptd_diag_add(diags, -1, 0, "line %lu: damaged @TPZ-END line: totals not checked", line);
					goto next;
				}
				if (nframes != x.next_frame)
					ptd_diag_add(diags, -1, 0, "line %lu: @TPZ-END announces %llu frames, the last one received is frame %llu",
						     line, nframes, x.next_frame);
				if (bytes != x.len || crc != x.crc)
					ptd_diag_add(diags, -1, 0, "line %lu: @TPZ-END announces %llu bytes (CRC 0x%08llx), extracted %zu (CRC 0x%08x)",
						     line, bytes, crc,
						     x.len, x.crc);
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
		free(x.out);
		*out = NULL;
		*out_size = 0;
		return 2;
	}
	if (!ended)
		ptd_diag_add(diags, -1, 0, "line %lu: the log ends inside the framed stream (no @TPZ-END)",
			     line);
	*out = x.out;
	*out_size = x.len;
	return ptd_diags_count(diags) > first_diag ? 1 : 0;
}
