// SPDX-License-Identifier: MIT
/*
 * Segments: the intact trace records of one CPU, ordered by stream offset and
 * joined while they are contiguous. Lost data, a damaged or missing record, a
 * truncated chunk or an overlap ends a segment; the decoders start each
 * segment afresh at its first PSB.
 */
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

static int cmp_rec(const void *a, const void *b)
{
	const struct ptd_record *x = *(const struct ptd_record *const *)a;
	const struct ptd_record *y = *(const struct ptd_record *const *)b;

	if (x->body.trace.cpu != y->body.trace.cpu)
		return x->body.trace.cpu < y->body.trace.cpu ? -1 : 1;
	if (x->body.trace.offset != y->body.trace.offset)
		return x->body.trace.offset < y->body.trace.offset ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static struct ptd_segment *new_segment(struct ptd_segments *s, const struct ptd_record *r, u32 index)
{
	struct ptd_segment *g;

	s->v = realloc(s->v, (s->n + 1) * sizeof(*s->v));
	if (!s->v)
		abort();
	g = &s->v[s->n++];
	memset(g, 0, sizeof(*g));
	g->cpu = r->body.trace.cpu;
	g->index = index;
	g->stream_off = r->body.trace.offset;
	return g;
}

static void append(struct ptd_segment *g, const struct ptd_record *r)
{
	g->data = realloc(g->data, g->size + r->payload_size + 1);
	g->pieces = realloc(g->pieces, (g->npieces + 1) * sizeof(*g->pieces));
	if (!g->data || !g->pieces)
		abort();
	memcpy(g->data + g->size, r->payload, r->payload_size);
	g->pieces[g->npieces++] = (struct ptd_piece){
		.seq = r->seq,
		.file_off = r->offset,
		.payload_off = r->offset + TPZ_REC_SIZE + (u64)(r->size - TPZ_REC_SIZE - r->payload_size),
		.seg_off = g->size,
		.size = r->payload_size,
	};
	g->size += r->payload_size;
}

void ptd_segments_build(struct ptd_container *c, struct ptd_segments *s)
{
	const struct ptd_record **v = malloc((c->nrecs + 1) * sizeof(*v));
	size_t n = 0;
	struct ptd_segment *cur = NULL;
	u64 expected = 0;
	bool truncated = false;
	u32 cpu = 0, index = 0;
	u64 pend_gap = 0;
	const char *pend_why = NULL;
	bool pend_known = false;

	memset(s, 0, sizeof(*s));
	if (!v)
		abort();
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == TPZ_REC_TRACE)
			v[n++] = &c->recs[i];
	qsort(v, n, sizeof(*v), cmp_rec);

	for (size_t i = 0; i < n; i++) {
		const struct ptd_record *r = v[i];
		const struct tpz_trace *t = &r->body.trace;
		bool lost = t->flags & TPZ_TRACE_LOST;
		const char *why = NULL;
		u64 gap = 0;

		if (!i || t->cpu != cpu) {
			cpu = t->cpu;
			expected = 0;
			truncated = false;
			index = 0;
			cur = NULL;
			pend_gap = 0;
			pend_why = NULL;
			pend_known = false;
		}
		if (t->offset < expected) {
			ptd_diag_add(&c->diags, r->seq, r->offset,
				     "cpu %u stream offset 0x%llx overlaps the previous chunk, which ends at 0x%llx",
				     t->cpu, (unsigned long long)t->offset, (unsigned long long)expected);
			why = "overlap";
		} else {
			gap = t->offset - expected;
			if (lost)
				why = gap > t->lost ? "lost, and records damaged or missing" : "lost";
			else if (gap)
				why = "records damaged or missing";
			if (lost && gap < t->lost)
				ptd_diag_add(&c->diags, r->seq, r->offset,
					     "%llu bytes lost announced, but the stream offsets leave a gap of %llu",
					     (unsigned long long)t->lost, (unsigned long long)gap);
		}
		/* the trace unit stopped (ToPA full): what it dropped, if it
		 * said (LOST), is the rest of the packet it was writing */
		if (truncated && (!why || (lost && gap <= t->lost)))
			why = "the trace unit stopped: its output was full";

		if (cur && !why) {
			append(cur, r);
		} else {
			/* An empty chunk only reports a loss: it goes to the
			 * segment where data starts again. */
			pend_gap += gap;
			pend_known |= lost;
			if (why)
				pend_why = why;
			cur = NULL;
			if (t->data_size) {
				cur = new_segment(s, r, index++);
				cur->gap = pend_gap;
				cur->gap_why = pend_why;
				cur->gap_known = pend_known;
				append(cur, r);
				pend_gap = 0;
				pend_why = NULL;
				pend_known = false;
			}
		}
		expected = t->offset + t->data_size;
		truncated = t->flags & TPZ_TRACE_TRUNCATED;
	}
	free(v);
}

void ptd_segments_free(struct ptd_segments *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].data);
		free(s->v[i].pieces);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void ptd_segment_where(const struct ptd_segment *s, u64 off, u32 *seq, u64 *rec_off, u64 *file_off)
{
	size_t lo = 0, hi = s->npieces;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->pieces[mid].seg_off <= off)
			lo = mid;
		else
			hi = mid;
	}
	*seq = s->pieces[lo].seq;
	*rec_off = s->pieces[lo].file_off;
	*file_off = s->pieces[lo].payload_off + (off - s->pieces[lo].seg_off);
}
