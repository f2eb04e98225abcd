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

	s->v = ptd_grow(s->v, &s->cap, s->n, sizeof(*s->v));
	g = &s->v[s->n++];
	memset(g, 0, sizeof(*g));
	g->cpu = r->body.trace.cpu;
	g->index = index;
	g->stream_off = r->body.trace.offset;
	return g;
}

static void append(struct ptd_segment *g, const struct ptd_record *r)
{
	/* the arrays doubled: a segment may be of a thousand records */
	if (g->size + r->payload_size + 1 > g->data_cap) {
		g->data_cap = max(2 * g->data_cap, g->size + r->payload_size + 1);
		g->data = realloc(g->data, g->data_cap);
		if (!g->data)
			abort();
	}
	if (g->npieces == g->pieces_cap) {
		/* small at first: most segments are of a few records, and
		 * there may be 40,000 CPUs with one each */
		g->pieces_cap = g->pieces_cap ? 2 * g->pieces_cap : 4;
		g->pieces = realloc(g->pieces, g->pieces_cap * sizeof(*g->pieces));
		if (!g->pieces)
			abort();
	}
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

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/* @cpu is in @sorted (NULL: every CPU is), by a binary search: --cpu may
 * name thousands. */
static bool selected(const u32 *sorted, size_t n, u32 cpu)
{
	return !sorted || bsearch(&cpu, sorted, n, sizeof(cpu), cmp_u32);
}

static struct ptd_cpu_stream *new_stream(struct ptd_segments *s, u32 cpu)
{
	struct ptd_cpu_stream *st;

	s->cpus = ptd_grow(s->cpus, &s->cap_cpus, s->ncpus, sizeof(*s->cpus));
	st = &s->cpus[s->ncpus++];
	memset(st, 0, sizeof(*st));
	st->cpu = cpu;
	st->first = s->n;
	return st;
}

/* The CPU's stream ends with a loss its last (empty) chunk announced: said,
 * as a gap is, and kept for the outputs. */
static void end_loss(struct ptd_container *c, struct ptd_cpu_stream *st, const struct ptd_record *r,
		     u64 gap, const char *why, bool known, u64 end)
{
	char n[48];

	st->end_lost = gap;
	st->end_why = why ? why : "lost";
	st->end_known = known;
	st->end_off = end;
	st->end_seq = r->seq;
	st->end_rec_off = r->offset;
	if (gap)
		snprintf(n, sizeof(n), "%llu bytes lost", gap);
	else if (known)
		snprintf(n, sizeof(n), "no bytes lost");
	else
		snprintf(n, sizeof(n), "an unknown number of bytes lost");
	ptd_diag_add(&c->diags, r->seq, r->offset,
		     "cpu %u: %s after the last chunk of its stream, at stream offset 0x%llx (%s): its last packets are not in the trace",
		     st->cpu, n, end - gap, st->end_why);
}

void ptd_segments_build_cpus(struct ptd_container *c, struct ptd_segments *s, const u32 *only,
			     size_t nonly)
{
	const struct ptd_record **v = malloc((c->nrecs + 1) * sizeof(*v));
	size_t n = 0;
	struct ptd_segment *cur = NULL;
	struct ptd_cpu_stream *st = NULL;
	const struct ptd_record *last = NULL;
	/* @delivered: the furthest stream offset the CPU's chunks reached;
	 * @seg_end: where the current segment's bytes end (below @delivered
	 * when it began with an overlap). 128 bits: a chunk may end at 2^64
	 * (its end wrapped to 0 made the next chunk's offset a gap of almost
	 * 2^64 bytes, "18446744073709551564 bytes lost"). */
	unsigned __int128 delivered = 0, seg_end = 0;
	bool truncated = false;
	u32 cpu = 0, index = 0;
	u64 pend_gap = 0, pend_overlap = 0;
	const char *pend_why = NULL;
	bool pend_known = false, pend_overlaps = false;

	u32 *sorted = NULL;

	memset(s, 0, sizeof(*s));
	if (!v)
		abort();
	if (only) {
		sorted = malloc((nonly + 1) * sizeof(*sorted));
		if (!sorted)
			abort();
		memcpy(sorted, only, nonly * sizeof(*sorted));
		qsort(sorted, nonly, sizeof(*sorted), cmp_u32);
	}
	for (size_t i = 0; i < c->nrecs; i++) {
		if (c->recs[i].type != TPZ_REC_TRACE)
			continue;
		if (selected(sorted, nonly, c->recs[i].body.trace.cpu))
			v[n++] = &c->recs[i];
		else
			s->partial = true;
	}
	free(sorted);
	qsort(v, n, sizeof(*v), cmp_rec);

	for (size_t i = 0; i <= n; i++) {
		const struct ptd_record *r = i < n ? v[i] : NULL;
		const struct tpz_trace *t = r ? &r->body.trace : NULL;
		bool lost = t && (t->flags & TPZ_TRACE_LOST);
		const char *why = NULL;
		u64 gap = 0;

		if (!r || !i || t->cpu != cpu) {
			/* a loss announced after the CPU's last data: its stream's end */
			if (st && (pend_gap || pend_why))
				end_loss(c, st, last, pend_gap, pend_why, pend_known,
					 (u64)min(delivered, (unsigned __int128)~0ull));
			if (st)
				st->nsegs = s->n - st->first;
			if (!r)
				break;
			cpu = t->cpu;
			st = new_stream(s, cpu);
			if (c->have_header && cpu >= c->header.ncpus)
				ptd_diag_add(&c->diags, r->seq, r->offset,
					     "cpu %u: the header says %u CPU%s may have trace records (numbered from 0): its records are decoded all the same",
					     cpu, c->header.ncpus, c->header.ncpus == 1 ? "" : "s");
			delivered = seg_end = 0;
			truncated = false;
			index = 0;
			cur = NULL;
			pend_gap = pend_overlap = 0;
			pend_why = NULL;
			pend_known = pend_overlaps = false;
		}
		st->records++;
		st->bytes += r->payload_size;
		st->lost += t->lost;
		last = r;
		if ((unsigned __int128)t->offset + t->data_size > (unsigned __int128)1 << 64) {
			/* no stream offset is 2^64 or more */
			ptd_diag_add(&c->diags, r->seq, r->offset,
				     "cpu %u: stream offset 0x%llx with %u bytes passes the end of a 64-bit stream: the record is left out",
				     t->cpu, t->offset, t->data_size);
			continue;
		}
		if (t->offset < delivered) {
			/* bytes delivered already, again: not lost, not a gap */
			u64 back = (u64)min(delivered - t->offset, (unsigned __int128)~0ull);
			u64 over = min(back, (u64)t->data_size);

			ptd_diag_add(&c->diags, r->seq, r->offset,
				     "cpu %u: stream offset 0x%llx is %llu bytes back inside the bytes delivered before: %llu bytes overlap (decoded again from the chunk's first PSB, not counted as lost)",
				     t->cpu, t->offset, back, over);
			why = "overlap";
			pend_overlap += over;
			pend_overlaps = true;
		} else {
			gap = t->offset - (u64)delivered;
			if (lost)
				why = gap > t->lost ? "lost, and records damaged or missing" : "lost";
			else if (gap)
				why = "records damaged or missing";
			if (lost && gap < t->lost)
				ptd_diag_add(&c->diags, r->seq, r->offset,
					     "%llu bytes lost announced, but the stream offsets leave a gap of %llu",
					     t->lost, gap);
		}
		/* the trace unit stopped (ToPA full): what it dropped, if it
		 * said (LOST), is the rest of the packet it was writing */
		if (truncated && (!why || (lost && gap <= t->lost)))
			why = "the trace unit stopped: its output was full";
		/* after a segment that began with an overlap, inside bytes
		 * delivered before: what follows is another segment's */
		if (!why && cur && (unsigned __int128)t->offset != seg_end) {
			why = "after an overlap";
			pend_overlaps = true;
		}

		if (cur && !why) {
			append(cur, r);
		} else {
			/* An empty chunk only reports a loss: it goes to the
			 * segment where data starts again (or ends the stream). */
			pend_gap += gap;
			/* an overlap loses no byte: "no bytes lost", not "unknown" */
			pend_known |= lost || (pend_overlaps && !pend_gap);
			if (why)
				pend_why = why;
			cur = NULL;
			if (t->data_size) {
				cur = new_segment(s, r, index++);
				cur->gap = pend_gap;
				cur->gap_why = pend_why;
				cur->gap_known = pend_known;
				cur->overlap = pend_overlap;
				cur->overlaps = pend_overlaps;
				append(cur, r);
				pend_gap = pend_overlap = 0;
				pend_why = NULL;
				pend_known = pend_overlaps = false;
			}
		}
		seg_end = (unsigned __int128)t->offset + t->data_size;
		delivered = max(delivered, seg_end);
		truncated = t->flags & TPZ_TRACE_TRUNCATED;
	}
	free(v);
}

void ptd_segments_build(struct ptd_container *c, struct ptd_segments *s)
{
	ptd_segments_build_cpus(c, s, NULL, 0);
}

/* The streams are by CPU, ascending: a binary search (there may be 40,000). */
const struct ptd_cpu_stream *ptd_segments_cpu(const struct ptd_segments *s, u32 cpu)
{
	size_t lo = 0, hi = s->ncpus;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->cpus[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->ncpus && s->cpus[lo].cpu == cpu ? &s->cpus[lo] : NULL;
}

size_t ptd_container_cpus(const struct ptd_container *c, u32 **cpus)
{
	u32 *v = malloc((c->nrecs + 1) * sizeof(*v));
	size_t n = 0, k = 0;

	if (!v)
		abort();
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == TPZ_REC_TRACE)
			v[n++] = c->recs[i].body.trace.cpu;
	qsort(v, n, sizeof(*v), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	if (!k) {
		free(v);
		v = NULL;
	}
	*cpus = v;
	return k;
}

bool ptd_container_multi_cpu(const struct ptd_container *c)
{
	if (c->have_header && c->header.ncpus > 1)
		return true;
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == TPZ_REC_TRACE && c->recs[i].body.trace.cpu)
			return true;
	return false;
}

void ptd_segments_free(struct ptd_segments *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].data);
		free(s->v[i].pieces);
	}
	free(s->v);
	free(s->cpus);
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

const char *ptd_segment_note(const struct ptd_segment *s, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = 0;
	if (s->overlaps)
		n = (size_t)snprintf(buf, size, "overlap: %llu bytes of this segment were delivered before it",
				     s->overlap);
	if (n < size && (s->gap || (s->gap_why && !s->overlaps)))
		snprintf(buf + n, size - n, "%sgap: %llu bytes missing before this segment (%s)",
			 n ? "; " : "", s->gap, s->gap_why ? s->gap_why : "lost");
	return buf;
}
