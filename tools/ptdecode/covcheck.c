// SPDX-License-Identifier: MIT
/*
 * The coverage decoder (kernel/coverage/, include/topaz/ptcov.h) checked
 * against a reference that shares none of its code: the reference takes its
 * blocks and edges from libipt's instruction flow (flow.c's events), the
 * decoder from the packets and insn.c's walk of the code. The two must find
 * the same blocks (start, end, instructions), the same edges, and the same
 * counts (ptdecode --coverage-check, tests/run-all.sh's check_trace()).
 *
 * The reference applies ptcov.h's definitions to each instruction libipt
 * reports:
 *
 * - the instruction after a change of flow starts a block; a change of flow
 *   is any instruction libipt classifies other than ptic_other and
 *   ptic_ptwrite (PTWRITE emits a packet but goes on to the next
 *   instruction). A not-taken conditional branch ends its block too: the
 *   SDM calls every Jcc a COFI, taken or not.
 * - so does the first instruction after a cut of the flow, with no edge
 *   into it. Cuts: a segment's start (libipt decodes each segment afresh
 *   from its first PSB: another CPU's stream, or bytes lost before it),
 *   tracing enabled (TIP.PGE), disabled (TIP.PGD, synchronous or not), an
 *   asynchronous branch (an interrupt or exception: its handler is reached
 *   with no edge, and the interrupted block ends without its branch), an
 *   overflow, TraceStop, a decode error (libipt resynchronises at the next
 *   PSB), the segment's end.
 * - not cuts: paging (PIP: CR3 changes with a MOV or a far branch, which
 *   is already a change of flow), the execution mode (MODE.Exec restates or
 *   accompanies a far branch), PTWRITE, VMCS, TSX (MODE.TSX's begin and
 *   commit change no flow; an abort's jump to the fallback comes as its own
 *   branch event), and the timing and power events (TSC, MTC, CYC, CBR, MNT,
 *   EXSTOP, MWAIT, PWRE, PWRX): none of them moves the IP. Events libipt
 *   marks as status updates (a PSB+ restating the state) are not cuts either.
 *
 * A block's end and instruction count are what the flow showed when it ran
 * from its start to its change of flow; a block only ever entered and cut
 * before its end (an interrupt, a disable) is "open": its start and entries
 * are compared, its end cannot be.
 */
#include <stdlib.h>
#include <string.h>
#include <topaz/gfp.h>
#include <topaz/ptcov.h>
#include "ptdecode.h"

#define NONE	SIZE_MAX

/* ------------------------------------------------------------ hash tables */

static u64 mix(u64 a, u64 b)
{
	u64 h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 29);
}

/* A table of indices+1 into an array, open addressing, @mask + 1 slots. */
static void rehash(u32 **slots, size_t *mask, size_t n, u64 (*key)(const void *v, size_t i),
		   const void *v)
{
	size_t cap = (*mask + 1) * 2;

	if (cap < 1024)
		cap = 1024;
	free(*slots);
	*slots = calloc(cap, sizeof(**slots));
	if (!*slots)
		abort();
	*mask = cap - 1;
	for (size_t i = 0; i < n; i++) {
		size_t s = key(v, i) & *mask;

		while ((*slots)[s])
			s = (s + 1) & *mask;
		(*slots)[s] = (u32)(i + 1);
	}
}

static u64 block_key(const void *v, size_t i)
{
	const struct ptd_covref_block *b = v;

	return mix(b[i].start, 0);
}

static u64 edge_key(const void *v, size_t i)
{
	const struct ptd_covref_edge *e = v;

	return mix(e[i].from, e[i].to);
}

static size_t find_block(const struct ptd_covref *r, u64 start)
{
	if (!r->bslots)
		return NONE;
	for (size_t s = mix(start, 0) & r->bmask; r->bslots[s]; s = (s + 1) & r->bmask)
		if (r->blocks[r->bslots[s] - 1].start == start)
			return r->bslots[s] - 1;
	return NONE;
}

static size_t find_edge(const struct ptd_covref *r, u64 from, u64 to)
{
	if (!r->eslots)
		return NONE;
	for (size_t s = mix(from, to) & r->emask; r->eslots[s]; s = (s + 1) & r->emask) {
		const struct ptd_covref_edge *e = &r->edges[r->eslots[s] - 1];

		if (e->from == from && e->to == to)
			return r->eslots[s] - 1;
	}
	return NONE;
}


/* Index @i (hashed @h) into a table; at most half full afterwards, so a
 * probe always ends at an empty slot. */
static void insert(u32 **slots, size_t *mask, u64 h, size_t i, u64 (*key)(const void *v, size_t i),
		   const void *v)
{
	size_t s;

	if (2 * (i + 1) > *mask) {
		rehash(slots, mask, i + 1, key, v);
		return;
	}
	for (s = h & *mask; (*slots)[s]; s = (s + 1) & *mask)
		;
	(*slots)[s] = (u32)(i + 1);
}

/* The block starting at @start, added when new (first entered at @ev). */
static size_t get_block(struct ptd_covref *r, u64 start, const struct ptd_event *ev)
{
	size_t i = find_block(r, start);

	if (i != NONE)
		return i;
	r->blocks = ptd_grow(r->blocks, &r->cap_blocks, r->nblocks, sizeof(*r->blocks));
	i = r->nblocks++;
	r->blocks[i] = (struct ptd_covref_block){ .start = start, .seg = ev->seg,
						  .seg_off = ev->seg_off };
	insert(&r->bslots, &r->bmask, mix(start, 0), i, block_key, r->blocks);
	return i;
}

static void add_edge(struct ptd_covref *r, u64 from, u64 to, const struct ptd_event *ev)
{
	size_t i = find_edge(r, from, to);

	if (i != NONE) {
		r->edges[i].hits++;
		return;
	}
	r->edges = ptd_grow(r->edges, &r->cap_edges, r->nedges, sizeof(*r->edges));
	i = r->nedges++;
	r->edges[i] = (struct ptd_covref_edge){ .from = from, .to = to, .hits = 1, .seg = ev->seg,
						.seg_off = ev->seg_off };
	insert(&r->eslots, &r->emask, mix(from, to), i, edge_key, r->edges);
}

/* -------------------------------------------------------------- reference */

void ptd_covref_init(struct ptd_covref *r, const struct ptd_image *img)
{
	memset(r, 0, sizeof(*r));
	r->img = img;
	r->at_start = true;
	r->cut = true;
	r->cur = NONE;
}

void ptd_covref_free(struct ptd_covref *r)
{
	free(r->blocks);
	free(r->edges);
	free(r->bslots);
	free(r->eslots);
	memset(r, 0, sizeof(*r));
}

/* Whether libipt's class is a change of flow, as ptcov.h counts them. */
static bool changes_flow(enum pt_insn_class c)
{
	return c != ptic_other && c != ptic_ptwrite;
}

static void insn(struct ptd_covref *r, const struct ptd_event *ev)
{
	const struct pt_insn *in = ev->insn;
	struct ptd_covref_block *b;

	if (r->at_start) {
		size_t i = get_block(r, in->ip, ev);

		if (!r->cut && r->cur != NONE)
			add_edge(r, r->blocks[r->cur].start, in->ip, ev);
		r->blocks[i].hits++;
		r->transitions++;
		r->cur = i;
		r->cur_ninsn = 0;
		r->at_start = r->cut = false;
	}
	r->insns++;
	r->cur_ninsn++;
	if (in->iclass == ptic_error)
		r->unclassified++;
	if (!changes_flow(in->iclass))
		return;
	/* the block ran to its end: it ends after this instruction */
	b = &r->blocks[r->cur];
	if (!b->end) {
		b->end = in->ip + in->size;
		b->ninsn = r->cur_ninsn;
	} else if (b->end != in->ip + in->size || b->ninsn != r->cur_ninsn) {
		/* the same start ended elsewhere: the code changed under the
		 * trace, or the flow went past a change of flow unseen */
		r->inconsistent++;
	}
	r->at_start = true;
}

void ptd_covref_event(void *ref, const struct ptd_event *ev)
{
	struct ptd_covref *r = ref;

	switch (ev->type) {
	case PTD_EV_INSN:
		insn(r, ev);
		return;
	case PTD_EV_PAGING:
	case PTD_EV_EXEC_MODE:
	case PTD_EV_PTWRITE:
	case PTD_EV_OTHER:
		return;
	case PTD_EV_ENABLED:
	case PTD_EV_DISABLED:
	case PTD_EV_ASYNC_DISABLED:
	case PTD_EV_INTERRUPT:
	case PTD_EV_OVERFLOW:
		if (ev->status_update)
			return;
		break;
	case PTD_EV_SEGMENT:
	case PTD_EV_STOP:
	case PTD_EV_ERROR:
	case PTD_EV_END:
		break;
	}
	r->cuts[ev->type]++;
	r->at_start = r->cut = true;
}

/* ------------------------------------------------------------ the decoder */

/* ptcov's code reader: the regions of the image, as libipt reads them. */
static size_t read_code(void *ctx, u64 addr, u8 *buf, size_t len)
{
	int n = ptd_image_read(buf, len, NULL, addr, ctx);

	return n > 0 ? (size_t)n : 0;
}

struct ptcov *ptd_coverage_run(struct ptd_ctx *x, u32 max_blocks, bool bitmap_only)
{
	struct ptcov_config cfg = {
		.read = read_code, .read_ctx = x->img,
		.max_blocks = max_blocks, .max_edges = 4 * max_blocks,
	};
	struct ptcov *c = ptcov_create(&cfg, GFP_KERNEL);

	if (!c)
		return NULL;
	ptcov_set_edge_list(c, !bitmap_only);
	for (size_t k = 0; k < x->segs.ncpus; k++) {
		const struct ptd_cpu_stream *st = &x->segs.cpus[k];

		ptcov_begin_stream(c);
		for (size_t i = st->first; i < st->first + st->nsegs; i++) {
			const struct ptd_segment *seg = &x->segs.v[i];

			/* libipt starts each segment afresh: so must ptcov */
			if (i != st->first)
				ptcov_gap(c, PTCOV_GAP_LOST);
			/* record by record, as a drain hands them over: a
			 * packet cut between two records is put together */
			for (size_t p = 0; p < seg->npieces; p++)
				ptcov_feed(c, seg->data + seg->pieces[p].seg_off, seg->pieces[p].size);
		}
		/* the flow runs on to the branch that needed more, as libipt's does */
		ptcov_end_stream(c);
	}
	return c;
}

/* ------------------------------------------------------------ comparison */

/*
 * A fuzzer's decoder keeps the bitmap only (its own loop in walk_cached()):
 * over the same streams it must reach the same blocks, bitmap and counts as
 * @c, which listed the edges. A difference counts as a block difference.
 */
static void bitmap_only_check(struct ptd_ctx *x, struct ptcov *c, u32 max_blocks,
			      struct ptd_covcheck *res, FILE *out)
{
	const struct ptcov_stats *a = ptcov_get_stats(c), *b;
	struct ptcov *bo = ptd_coverage_run(x, max_blocks, true);

	if (!bo)
		return;
	b = ptcov_get_stats(bo);
	if (a->blocks != b->blocks || a->transitions != b->transitions || a->insns != b->insns ||
	    ptcov_bitmap_digest(c) != ptcov_bitmap_digest(bo)) {
		res->block_diffs++;
		if (out)
			fprintf(out, "coverage-check: the bitmap-only decode differs: blocks %llu against %llu, "
				"transitions %llu against %llu, instructions %llu against %llu, digest 0x%08x against 0x%08x\n",
				b->blocks, a->blocks, b->transitions, a->transitions, b->insns, a->insns,
				ptcov_bitmap_digest(bo), ptcov_bitmap_digest(c));
	}
	ptcov_destroy(bo);
}

/* "cpu 1 stream offset 0x1234 (record 7, file offset 0x5678)" */
static const char *where(const struct ptd_segment *seg, u64 off, char *buf, size_t size)
{
	u32 seq;
	u64 rec_off, file_off;

	if (!seg) {
		snprintf(buf, size, "nowhere");
		return buf;
	}
	ptd_segment_where(seg, off, &seq, &rec_off, &file_off);
	snprintf(buf, size, "cpu %u stream offset 0x%llx (record %u, file offset 0x%llx)", seg->cpu,
		 seg->stream_off + off, seq, file_off);
	return buf;
}

struct diff_out {
	FILE *out;
	const struct ptd_image *img;
	size_t shown, max;
};

static bool show(struct diff_out *d)
{
	return d->out && d->shown++ < d->max;
}

static void diff_block(struct diff_out *d, const char *what, const struct ptd_covref_block *rb,
		       const struct ptcov_block *cb)
{
	char s[160], e[160], w[160];
	u64 start = rb ? rb->start : cb->start;

	if (!show(d))
		return;
	fprintf(d->out, "coverage-check: block %s: %s\n", ptd_format_addr(d->img, start, s, sizeof(s)),
		what);
	if (rb)
		fprintf(d->out, "  libipt: end %s, %u insns, %llu hits, first entered at %s\n",
			rb->end ? ptd_format_addr(d->img, rb->end, e, sizeof(e)) : "(never reached)",
			rb->ninsn, rb->hits, where(rb->seg, rb->seg_off, w, sizeof(w)));
	if (cb)
		fprintf(d->out, "  ptcov:  end %s, %u insns, %u hits\n",
			ptd_format_addr(d->img, cb->end, e, sizeof(e)), cb->ninsn, cb->hits);
}

static void diff_edge(struct diff_out *d, const char *what, u64 from, u64 to,
		      const struct ptd_covref_edge *re, const struct ptcov_edge *ce)
{
	char f[160], t[160], w[160];

	if (!show(d))
		return;
	fprintf(d->out, "coverage-check: edge %s -> %s: %s\n", ptd_format_addr(d->img, from, f, sizeof(f)),
		ptd_format_addr(d->img, to, t, sizeof(t)), what);
	if (re)
		fprintf(d->out, "  libipt: %llu hits, first taken at %s\n", re->hits,
			where(re->seg, re->seg_off, w, sizeof(w)));
	if (ce)
		fprintf(d->out, "  ptcov:  %llu hits\n", ce->hits);
}

/* Each of ptcov's blocks against the reference's; marks those it found. */
static void compare_blocks(const struct ptcov *c, struct ptd_covref *r, struct ptd_covcheck *res,
			   bool *seen, struct diff_out *d)
{
	for (size_t i = 0; i < res->blocks; i++) {
		const struct ptcov_block *cb = ptcov_block(c, i);
		size_t k = find_block(r, cb->start);
		const struct ptd_covref_block *rb;

		if (k == NONE) {
			res->block_diffs++;
			diff_block(d, "ptcov only", NULL, cb);
			continue;
		}
		rb = &r->blocks[k];
		seen[k] = true;
		if (rb->end && (rb->end != cb->end || rb->ninsn != cb->ninsn)) {
			res->block_diffs++;
			diff_block(d, "ends differ", rb, cb);
		} else if (rb->hits != cb->hits) {
			res->block_diffs++;
			diff_block(d, "hit counts differ", rb, cb);
		}
	}
	for (size_t k = 0; k < r->nblocks; k++) {
		if (!r->blocks[k].end)
			res->open++;
		if (!seen[k]) {
			res->block_diffs++;
			diff_block(d, "libipt only", &r->blocks[k], NULL);
		}
	}
}

static void compare_edges(const struct ptcov *c, struct ptd_covref *r, struct ptd_covcheck *res,
			  bool *seen, struct diff_out *d)
{
	size_t n;
	const struct ptcov_edge *ce = ptcov_edges(c, &n);

	for (size_t i = 0; i < n; i++) {
		size_t k = find_edge(r, ce[i].from, ce[i].to);

		if (k == NONE) {
			res->edge_diffs++;
			diff_edge(d, "ptcov only", ce[i].from, ce[i].to, NULL, &ce[i]);
			continue;
		}
		seen[k] = true;
		if (r->edges[k].hits != ce[i].hits) {
			res->edge_diffs++;
			diff_edge(d, "hit counts differ", ce[i].from, ce[i].to, &r->edges[k], &ce[i]);
		}
	}
	for (size_t k = 0; k < r->nedges; k++) {
		if (seen[k])
			continue;
		res->edge_diffs++;
		diff_edge(d, "libipt only", r->edges[k].from, r->edges[k].to, &r->edges[k], NULL);
	}
}

/*
 * Where the two first part: the first block, in the order each first reached
 * them, that is not the same block. A decoder that went wrong somewhere
 * reaches a block the other does not there; the reference says where in the
 * trace that was.
 */
static void first_divergence(const struct ptcov *c, const struct ptd_covref *r,
			     const struct ptd_covcheck *res, struct diff_out *d)
{
	size_t n = min((size_t)res->blocks, r->nblocks), i = 0;
	char a[160], b[160], w[160];

	while (i < n && ptcov_block(c, i)->start == r->blocks[i].start)
		i++;
	if (!d->out || (i == n && res->blocks == r->nblocks))
		return;
	fprintf(d->out, "coverage-check: the first blocks reached agree up to #%zu; then libipt reaches %s (at %s), ptcov %s\n",
		i, i < r->nblocks ? ptd_format_addr(d->img, r->blocks[i].start, a, sizeof(a)) : "nothing more",
		i < r->nblocks ? where(r->blocks[i].seg, r->blocks[i].seg_off, w, sizeof(w)) : "the end",
		i < res->blocks ? ptd_format_addr(d->img, ptcov_block(c, i)->start, b, sizeof(b)) :
				  "nothing more");
}

static const char *const cut_names[PTD_EV_END + 1] = {
	[PTD_EV_SEGMENT] = "segment", [PTD_EV_ENABLED] = "enabled", [PTD_EV_DISABLED] = "disabled",
	[PTD_EV_ASYNC_DISABLED] = "async-disabled", [PTD_EV_INTERRUPT] = "interrupt",
	[PTD_EV_OVERFLOW] = "overflow", [PTD_EV_STOP] = "stop", [PTD_EV_ERROR] = "error",
	[PTD_EV_END] = "end",
};

static void print_counts(FILE *out, const struct ptcov *c, const struct ptd_covref *r)
{
	const struct ptcov_stats *st = ptcov_get_stats(c);

	fprintf(out, "coverage-check: libipt: %llu instructions, %llu block entries; cuts:", r->insns,
		r->transitions);
	for (int t = 0; t <= PTD_EV_END; t++)
		if (r->cuts[t])
			fprintf(out, " %s %llu", cut_names[t], r->cuts[t]);
	fprintf(out, "\ncoverage-check: ptcov: %llu instructions, %llu block entries, %llu blocks decoded; gaps:",
		st->insns, st->transitions, st->block_decodes);
	for (int g = 0; g < PTCOV_NR_GAPS; g++)
		if (st->gaps[g])
			fprintf(out, " %s %llu", ptcov_gap_name(g), st->gaps[g]);
	fprintf(out, "\n");
	/* where the decoder first gave up the flow, to set beside libipt's errors */
	if (st->gap_kind < PTCOV_NR_GAPS) {
		char sym[160];

		fprintf(out, "coverage-check: ptcov: the first %s gap at stream offset 0x%llx (of the CPU it was in), in the block at %s\n",
			ptcov_gap_name(st->gap_kind), st->gap_off,
			st->gap_ip ? ptd_format_addr(r->img, st->gap_ip, sym, sizeof(sym)) : "none");
	}
}

bool ptd_coverage_check(struct ptd_ctx *x, struct ptd_covref *r, FILE *out, size_t max_diffs,
			struct ptd_covcheck *res)
{
	struct diff_out d = { .out = out, .img = x->img, .max = max_diffs };
	struct ptcov *c;
	const struct ptcov_stats *st;
	bool *bseen, *eseen;
	u32 max_blocks;

	memset(res, 0, sizeof(*res));
	res->ref_blocks = r->nblocks;
	res->ref_edges = r->nedges;
	/* room for every block the reference found, and then some */
	max_blocks = (u32)max(2 * r->nblocks + 1024, (size_t)16384);
	c = ptd_coverage_run(x, max_blocks, false);
	if (!c) {
		if (out)
			fprintf(out, "coverage-check: cannot create the coverage decoder\n");
		return false;
	}
	st = ptcov_get_stats(c);
	res->blocks = st->blocks;
	res->edges = st->edges;
	res->digest = ptcov_bitmap_digest(c);
	bseen = calloc(r->nblocks + 1, sizeof(*bseen));
	eseen = calloc(r->nedges + 1, sizeof(*eseen));
	if (!bseen || !eseen)
		abort();
	compare_blocks(c, r, res, bseen, &d);
	compare_edges(c, r, res, eseen, &d);
	if (st->blocks_dropped || st->edges_dropped) {
		res->block_diffs += st->blocks_dropped;
		res->edge_diffs += st->edges_dropped;
		if (out)
			fprintf(out, "coverage-check: ptcov dropped %llu blocks and %llu edges (lists full)\n",
				st->blocks_dropped, st->edges_dropped);
	}
	if (r->transitions != st->transitions)
		res->block_diffs++;
	bitmap_only_check(x, c, max_blocks, res, out);
	res->match = !res->block_diffs && !res->edge_diffs;
	if (out) {
		if (d.shown > d.max)
			fprintf(out, "coverage-check: ... and %zu more differences\n", d.shown - d.max);
		if (!res->match)
			first_divergence(c, r, res, &d);
		print_counts(out, c, r);
		if (r->inconsistent)
			fprintf(out, "coverage-check: libipt: %llu times a block ended elsewhere than before\n",
				r->inconsistent);
		fprintf(out, "result: coverage-check blocks=%llu edges=%llu ref_blocks=%llu ref_edges=%llu open=%llu transitions=%llu ref_transitions=%llu block_diffs=%llu edge_diffs=%llu digest=0x%08x match=%s\n",
			res->blocks, res->edges, res->ref_blocks, res->ref_edges, res->open,
			st->transitions, r->transitions, res->block_diffs, res->edge_diffs, res->digest,
			res->match ? "yes" : "no");
	}
	free(bseen);
	free(eseen);
	ptcov_destroy(c);
	return res->match;
}
