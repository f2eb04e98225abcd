// SPDX-License-Identifier: MIT
/*
 * Instruction-flow decoding with libipt's instruction decoder, segment by
 * segment, as ptxed does it: sync at the first PSB, drain events, step
 * instructions; after an error, report it and resynchronise at the next PSB.
 * The result goes to consumers as struct ptd_event; the instructions are
 * decoded a batch at a time, and the library's own consumers (stats, calls)
 * take a batch in one call: what ptdecode costs beyond libipt's own decoding
 * is mostly per instruction, so it is kept to a few dozen machine
 * instructions there (tests/bench/decode_bare.sh measures it).
 */
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

/*
 * Instructions decoded without reading a packet. Only direct jumps and calls
 * need none, and a conditional branch takes a bit of at most 47 in a packet:
 * this many (47 blocks of over 2,000 instructions each) means a loop of
 * direct jumps or calls (a JMP or CALL to itself), which the trace cannot
 * end. It used to decode forever (a self-CALL also grew the call stack
 * without bound; the fuzzer found both).
 */
#define MAX_INSNS_WITHOUT_PACKET	100000ul

void ptd_ctx_init(struct ptd_ctx *x, struct ptd_container *c, struct ptd_image *img)
{
	ptd_ctx_init_cpus(x, c, img, NULL, 0);
}

void ptd_ctx_init_cpus(struct ptd_ctx *x, struct ptd_container *c, struct ptd_image *img,
		       const u32 *only, size_t nonly)
{
	const struct tpz_header *h = &c->header;

	memset(x, 0, sizeof(*x));
	x->c = c;
	x->img = img;
	x->max_stuck = MAX_INSNS_WITHOUT_PACKET;
	x->per_cpu = ptd_container_multi_cpu(c);
	if (!img->finished)
		ptd_image_finish(img);
	ptd_segments_build_cpus(c, &x->segs, only, nonly);

	pt_config_init(&x->cfg);
	if (c->have_header) {
		/* Errata work-arounds only for a real CPU: a model's trace follows the
		 * SDM to the letter, and errata handling would misread it. */
		if (!(h->flags & TPZ_HDR_PT_MODEL) && !memcmp(h->vendor, "GenuineIntel", 12)) {
			x->cfg.cpu.vendor = pcv_intel;
			x->cfg.cpu.family = h->family;
			x->cfg.cpu.model = h->model;
			x->cfg.cpu.stepping = h->stepping;
			if (pt_cpu_errata(&x->cfg.errata, &x->cfg.cpu) < 0)
				memset(&x->cfg.errata, 0, sizeof(x->cfg.errata));
		}
		x->cfg.mtc_freq = (u8)((h->rtit_ctl >> 14) & 0xf);
		x->cfg.cpuid_0x15_eax = h->leaf15[0];
		x->cfg.cpuid_0x15_ebx = h->leaf15[1];
		x->cfg.nom_freq = (u8)min(h->nom_freq, 0xffu);
	}
}

void ptd_ctx_free(struct ptd_ctx *x)
{
	ptd_segments_free(&x->segs);
	memset(x, 0, sizeof(*x));
}

static void emit(const struct ptd_consumer *cons, size_t ncons, const struct ptd_event *ev)
{
	for (size_t i = 0; i < ncons; i++)
		cons[i].event(cons[i].ctx, ev);
}

static const char *event_name(enum pt_event_type t)
{
	switch (t) {
	case ptev_tsx: return "tsx";
	case ptev_vmcs: return "vmcs";
	case ptev_async_vmcs: return "vmcs";
	case ptev_exstop: return "exstop";
	case ptev_mwait: return "mwait";
	case ptev_pwre: return "pwre";
	case ptev_pwrx: return "pwrx";
	case ptev_tick: return "tick";
	case ptev_cbr: return "cbr";
	case ptev_mnt: return "mnt";
	default: return "event";
	}
}

static void translate(const struct pt_event *pev, struct ptd_event *ev)
{
	ev->ip_valid = !pev->ip_suppressed;
	ev->status_update = pev->status_update;
	switch (pev->type) {
	case ptev_enabled:
		ev->type = PTD_EV_ENABLED;
		ev->ip = pev->variant.enabled.ip;
		ev->value = pev->variant.enabled.resumed;
		break;
	case ptev_disabled:
		ev->type = PTD_EV_DISABLED;
		ev->ip = pev->variant.disabled.ip;
		break;
	case ptev_async_disabled:
		ev->type = PTD_EV_ASYNC_DISABLED;
		ev->ip = pev->variant.async_disabled.at;
		ev->to = pev->variant.async_disabled.ip;
		ev->ip_valid = true;
		break;
	case ptev_async_branch:
		ev->type = PTD_EV_INTERRUPT;
		ev->ip = pev->variant.async_branch.from;
		ev->to = pev->variant.async_branch.to;
		break;
	case ptev_paging:
		ev->type = PTD_EV_PAGING;
		ev->value = pev->variant.paging.cr3;
		ev->ip_valid = false;
		break;
	case ptev_async_paging:
		ev->type = PTD_EV_PAGING;
		ev->value = pev->variant.async_paging.cr3;
		ev->ip = pev->variant.async_paging.ip;
		break;
	case ptev_overflow:
		ev->type = PTD_EV_OVERFLOW;
		ev->ip = pev->variant.overflow.ip;
		break;
	case ptev_exec_mode:
		ev->type = PTD_EV_EXEC_MODE;
		ev->value = pev->variant.exec_mode.mode;
		ev->ip = pev->variant.exec_mode.ip;
		break;
	case ptev_ptwrite:
		ev->type = PTD_EV_PTWRITE;
		ev->ip = pev->variant.ptwrite.ip;
		ev->value = pev->variant.ptwrite.payload;
		break;
	case ptev_stop:
		ev->type = PTD_EV_STOP;
		ev->ip_valid = false;
		break;
	default:
		/* TSX, VMCS, power and timing events, and event types of newer
		 * libipt versions: named, not interpreted. */
		ev->type = PTD_EV_OTHER;
		ev->what = event_name(pev->type);
		ev->ip_valid = false;
		break;
	}
}

static void report_error(struct ptd_ctx *x, const struct ptd_segment *seg, u64 off, u64 ip, bool have_ip,
			 int err, const char *when)
{
	u32 seq;
	u64 rec_off, file_off;
	char sym[160];

	ptd_segment_where(seg, off, &seq, &rec_off, &file_off);
	ptd_diag_add(&x->c->diags, seq, rec_off,
		     "cpu %u: %s at stream offset 0x%llx (file offset 0x%llx)%s%s: %s; resynchronising at the next PSB",
		     seg->cpu, when, (unsigned long long)(seg->stream_off + off),
		     (unsigned long long)file_off, have_ip ? ", ip " : "",
		     have_ip ? ptd_format_addr(x->img, ip, sym, sizeof(sym)) : "", pt_errstr(pt_errcode(err)));
}

/* OVF: the trace unit dropped packets inside itself; the code run meanwhile
 * is not in the trace. A problem like a gap (30,000 of them exited 0). */
static void report_overflow(struct ptd_ctx *x, const struct ptd_segment *seg,
			    const struct ptd_event *ev)
{
	u32 seq;
	u64 rec_off, file_off;
	char sym[160];

	ptd_segment_where(seg, ev->seg_off, &seq, &rec_off, &file_off);
	ptd_diag_add(&x->c->diags, seq, rec_off,
		     "cpu %u: the trace unit's internal buffer overflowed at stream offset 0x%llx (OVF): packets were lost%s%s",
		     seg->cpu, seg->stream_off + ev->seg_off,
		     ev->ip_valid ? "; tracing resumes at " : "",
		     ev->ip_valid ? ptd_format_addr(x->img, ev->ip, sym, sizeof(sym)) : "");
}

/* How many bytes a segment's gap lost, in words. */
static const char *gap_size(const struct ptd_segment *seg, char *buf, size_t size)
{
	if (seg->gap)
		snprintf(buf, size, "%llu bytes lost", seg->gap);
	else if (seg->gap_known)
		snprintf(buf, size, "no bytes lost");
	else
		snprintf(buf, size, "an unknown number of bytes lost");
	return buf;
}

/*
 * A hole in the trace, with what it costs: the instructions between the last
 * one decoded before it (@before) and the first one after (@after, found at
 * the first PSB past the gap, @skipped bytes into the segment) are missing.
 */
static void report_gap(struct ptd_ctx *x, const struct ptd_segment *seg, const u64 *before,
		       const u64 *after, u64 skipped)
{
	char a[160], b[160], n[48], on[96] = "";
	u32 seq;
	u64 rec_off, file_off;

	if (after && skipped)
		snprintf(on, sizeof(on), " (decoding resumed at the first PSB, %llu bytes on)",
			 skipped);
	ptd_segment_where(seg, 0, &seq, &rec_off, &file_off);
	ptd_diag_add(&x->c->diags, seq, rec_off,
		     "cpu %u: a gap before stream offset 0x%llx, %s (%s): the instructions run between %s and %s are not in the trace%s",
		     seg->cpu, seg->stream_off, gap_size(seg, n, sizeof(n)),
		     seg->gap_why ? seg->gap_why : "lost",
		     before ? ptd_format_addr(x->img, *before, a, sizeof(a)) : "the start",
		     after ? ptd_format_addr(x->img, *after, b, sizeof(b)) : "the end of the trace", on);
}

/* The offset of the first PSB at or after @from in @seg, or its size. */
static u64 next_psb(const struct ptd_segment *seg, u64 from)
{
	static const u8 psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

	for (u64 i = from; i + sizeof(psb) <= seg->size; i++)
		if (seg->data[i] == 0x02 && !memcmp(seg->data + i, psb, sizeof(psb)))
			return i;
	return seg->size;
}

/* Whether @seg's first chunk says a ring wrapped (the flight recorder): its
 * start was overwritten by design, not lost. */
static bool starts_wrapped(const struct ptd_container *c, const struct ptd_segment *seg)
{
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].seq == seg->pieces[0].seq)
			return c->recs[i].type == TPZ_REC_TRACE &&
			       (c->recs[i].body.trace.flags & TPZ_TRACE_WRAPPED);
	return false;
}

/*
 * The @psb bytes before a segment's first PSB cannot be decoded: what they
 * held is lost, a problem like a gap. Not reported here when the segment
 * follows a gap (the gap's report counts them), nor leading PADs (padding,
 * not trace), nor a wrapped ring's start.
 */
static void report_before_psb(struct ptd_container *c, const struct ptd_segment *seg, u64 psb)
{
	u64 pads = 0, rec_off, file_off;
	u32 seq;

	if (seg->gap || seg->gap_why || psb >= seg->size || starts_wrapped(c, seg))
		return;
	while (pads < psb && !seg->data[pads])
		pads++;
	if (pads == psb)
		return;
	ptd_segment_where(seg, pads, &seq, &rec_off, &file_off);
	ptd_diag_add(&c->diags, seq, rec_off,
		     "cpu %u: %llu bytes before the first PSB skipped (stream offsets 0x%llx to 0x%llx): they cannot be decoded, the instructions run before the PSB are not in the trace",
		     seg->cpu, psb - pads, seg->stream_off + pads, seg->stream_off + psb);
}

void ptd_report_gaps(struct ptd_container *c, const struct ptd_segments *segs)
{
	char n[48];

	for (size_t i = 0; i < segs->n; i++) {
		const struct ptd_segment *seg = &segs->v[i];
		u32 seq;
		u64 rec_off, file_off;

		report_before_psb(c, seg, next_psb(seg, 0));
		if (!seg->gap && !seg->gap_why)
			continue;
		ptd_segment_where(seg, 0, &seq, &rec_off, &file_off);
		ptd_diag_add(&c->diags, seq, rec_off, "cpu %u: a gap before stream offset 0x%llx, %s (%s)",
			     seg->cpu, seg->stream_off, gap_size(seg, n, sizeof(n)),
			     seg->gap_why ? seg->gap_why : "lost");
	}
}



typedef void (*insns_fn)(void *ctx, const struct pt_insn *v, size_t n);

/* Instructions decoded before the consumers see them: a batch. */
#define INSN_BATCH	64

/* The instruction loop's state that outlives one run_insns(). */
struct insn_run {
	struct pt_insn insn[INSN_BATCH];
	u64 off[INSN_BATCH];		/* the decoder's offset after each */
	struct ptd_event ev;		/* PTD_EV_INSN, for consumers without a batch form */
	struct pt_insn last;		/* what the last pt_insn_next() gave */
	u64 last_ip, last_off;		/* of the last instruction emitted */
	u64 progress_off;		/* the offset when the last instruction was decoded */
	unsigned long stuck;		/* instructions since the offset moved */
	unsigned long max_stuck;
	unsigned long limit;		/* run_insns() stops after this many */
	u64 n;				/* instructions emitted */
	const insns_fn *batch;		/* per consumer: its batch form, or NULL */
	struct ptd_progress *progress;	/* told the offset a batch at a time */
	u64 base;			/* bytes of the segments before this one */
};

/* The batch form of a consumer's event function, if it has one. */
static insns_fn batch_form(const struct ptd_consumer *c)
{
	void (*event)(void *ctx, const struct ptd_event *ev) = c->event;

	if (event == ptd_cpu_stats_event)
		return ptd_cpu_stats_insns;
	if (event == ptd_stats_event)
		return ptd_stats_insns;
	if (event == ptd_calls_event)
		return ptd_calls_insns;
	return NULL;
}

/*
 * A batch to every consumer in turn (they are independent of each other):
 * one call for those with a batch form, one event per instruction for the
 * others. Either way each indirect call site has one target while it runs,
 * which the CPU predicts; one call site taking turns between consumers per
 * instruction is mispredicted about every time.
 */
static void flush_insns(struct insn_run *r, size_t n, const struct ptd_consumer *cons, size_t ncons)
{
	for (size_t c = 0; c < ncons; c++) {
		if (r->batch[c]) {
			r->batch[c](cons[c].ctx, r->insn, n);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			r->ev.ip = r->insn[i].ip;
			r->ev.insn = &r->insn[i];
			r->ev.seg_off = r->off[i];
			cons[c].event(cons[c].ctx, &r->ev);
		}
	}
	r->last_ip = r->insn[n - 1].ip;
	r->last_off = r->off[n - 1];
	r->n += n;
	ptd_progress_at(r->progress, r->base + r->last_off);
}

/*
 * The instructions up to the next event, the end of the trace, an error or a
 * loop that reads no packet (then -pte_bad_context): the hot loop, on its
 * own so its few variables stay in registers. What decode_segment()'s loop
 * does for an instruction when no event is pending, and no more, the
 * consumers served in batches; at most @r->limit instructions.
 * Return: pt_insn_next()'s status that stopped it (0 only at the limit).
 */
static __noinline int run_insns(struct pt_insn_decoder *dec, struct insn_run *r,
				const struct ptd_consumer *cons, size_t ncons)
{
	u64 progress_off = r->progress_off;
	uint64_t off;	/* libipt's type */
	unsigned long stuck = r->stuck, left = r->limit;
	struct pt_insn *in;
	size_t k = 0;
	int status;

	for (;;) {
		in = &r->insn[k];
		/* pt_insn_next() clears @in, except when it returns early
		 * (tracing off): these two are what is read then */
		in->iclass = ptic_error;
		in->ip = 0;
		status = pt_insn_next(dec, in, sizeof(*in));
		if (in->iclass == ptic_error)
			break;
		pt_insn_get_offset(dec, &off);
		r->off[k++] = off;
		/* a packet is read every few dozen instructions */
		if (off != progress_off) {
			progress_off = off;
			stuck = 0;
		} else if (unlikely(++stuck == r->max_stuck)) {
			status = -pte_bad_context;
			break;
		}
		if (status || !--left)
			break;
		if (k == INSN_BATCH) {
			flush_insns(r, k, cons, ncons);
			k = 0;
		}
	}
	r->last = *in;
	if (k)
		flush_insns(r, k, cons, ncons);
	r->progress_off = progress_off;
	r->stuck = stuck;
	return status;
}

/* libipt's offsets are uint64_t, u64 is unsigned long long: these convert.
 * @off is left alone when the decoder has none, as libipt's getters do. */
static void get_offset(const struct pt_insn_decoder *dec, u64 *off)
{
	uint64_t o = *off;

	pt_insn_get_offset(dec, &o);
	*off = o;
}

static int get_sync_offset(const struct pt_insn_decoder *dec, u64 *off)
{
	uint64_t o = *off;
	int ret = pt_insn_get_sync_offset(dec, &o);

	*off = o;
	return ret;
}

/* One segment's decoding: the state decode_segment()'s steps share. */
struct seg_decode {
	struct ptd_ctx *x;
	const struct ptd_segment *seg;
	const struct ptd_consumer *cons;
	size_t ncons;
	struct pt_insn_decoder *dec;
	u64 *prev;			/* the last instruction on this CPU */
	bool *have_prev;
	bool gap;			/* a gap before the segment, not reported yet */
	bool synced, have_ip;
	u64 skipped;			/* bytes before the first PSB */
	u64 last_sync, last_ip, resync_at;
	unsigned long errors;
	struct insn_run r;
};

/* An instruction decoder over @seg's bytes and the image. Return: NULL when
 * it cannot be allocated (reported). */
static struct pt_insn_decoder *open_decoder(struct ptd_ctx *x, const struct ptd_segment *seg,
					    struct pt_image *ipt)
{
	struct pt_insn_decoder *dec;

	x->cfg.begin = seg->data;
	x->cfg.end = seg->data + seg->size;
	dec = pt_insn_alloc_decoder(&x->cfg);
	if (!dec) {
		report_error(x, seg, 0, 0, false, -pte_nomem, "cannot allocate a decoder");
		return NULL;
	}
	if (ipt)
		pt_insn_set_image(dec, ipt);
	else
		pt_image_set_callback(pt_insn_get_image(dec), ptd_image_read, x->img);
	return dec;
}

/* The segment's end came before any PSB could be decoded from. */
static void report_no_sync(struct seg_decode *s)
{
	const struct ptd_segment *seg = s->seg;
	u32 seq;
	u64 rec_off, file_off;

	ptd_segment_where(seg, 0, &seq, &rec_off, &file_off);
	if (next_psb(seg, 0) < seg->size)
		ptd_diag_add(&s->x->c->diags, seq, rec_off,
			     "cpu %u: %zu bytes of trace from stream offset 0x%llx: a PSB at 0x%llx, but nothing to decode from after it",
			     seg->cpu, seg->size, seg->stream_off,
			     seg->stream_off + next_psb(seg, 0));
	else
		ptd_diag_add(&s->x->c->diags, seq, rec_off,
			     "cpu %u: no PSB in %zu bytes of trace from stream offset 0x%llx: they cannot be decoded",
			     seg->cpu, seg->size, seg->stream_off);
	s->errors++;
}

/*
 * Synchronise at the next PSB not decoded yet: after a PSB+ that could not be
 * read, the one after it. Return: true with libipt's status in @status, false
 * at the segment's end.
 */
static bool sync_next(struct seg_decode *s, int *status)
{
	const struct ptd_segment *seg = s->seg;
	struct pt_insn_decoder *dec = s->dec;

	for (;;) {
		u64 off = 0;

		memset(&s->r.last, 0, sizeof(s->r.last));
		if (s->resync_at != ~0ull) {
			off = next_psb(seg, s->resync_at);
			s->resync_at = ~0ull;
			if (off >= seg->size)
				return false;
			*status = pt_insn_sync_set(dec, off);
		} else {
			*status = pt_insn_sync_forward(dec);
		}
		if (*status == -pte_eos) {
			if (!s->synced)
				report_no_sync(s);
			return false;
		}
		if (*status < 0) {
			u64 psb = off;

			if (get_sync_offset(dec, &psb) < 0 || psb < off)
				psb = off;
			get_offset(dec, &off);
			report_error(s->x, seg, off, 0, false, *status, "cannot synchronise");
			s->errors++;
			/* a damaged PSB+ costs that PSB, not the segment */
			s->resync_at = max(psb, s->last_sync == ~0ull ? 0 : s->last_sync) + 1;
			continue;
		}
		get_sync_offset(dec, &off);
		if (off == s->last_sync)
			return false;
		if (!s->synced && off) {
			struct ptd_event ev = { .type = PTD_EV_OTHER, .seg = seg, .what = "skipped",
						.value = off, .seg_off = 0 };

			s->skipped = off;
			emit(s->cons, s->ncons, &ev);
			/* up to the first PSB: one after it that could not be
			 * read is reported as such */
			report_before_psb(s->x->c, seg, min(off, next_psb(seg, 0)));
		}
		s->last_sync = off;
		s->synced = true;
		return true;
	}
}

/* The events libipt has pending. Return: its status after them. */
static inline int drain_events(struct seg_decode *s, int status)
{
	while (status & pts_event_pending) {
		struct pt_event pev;
		struct ptd_event ev = { .seg = s->seg };

		status = pt_insn_event(s->dec, &pev, sizeof(pev));
		if (status < 0)
			break;
		translate(&pev, &ev);
		get_offset(s->dec, &ev.seg_off);
		emit(s->cons, s->ncons, &ev);
		if (ev.type == PTD_EV_OVERFLOW)
			report_overflow(s->x, s->seg, &ev);
	}
	return status;
}

/*
 * Events and instructions from a PSB on, until the end, an error or a loop
 * that reads no packet. Return: the negative status that stopped it
 * (-pte_eos at the end).
 */
static inline int decode_from_sync(struct seg_decode *s, int status)
{
	struct insn_run *r = &s->r;

	for (;;) {
		status = drain_events(s, status);
		if (status < 0)
			return status;
		if (status & pts_eos)
			return -pte_eos;
		/* the first instruction after a gap alone: it says what
		 * the gap cost */
		r->n = 0;
		r->limit = s->gap ? 1 : ~0ul;
		status = run_insns(s->dec, r, s->cons, s->ncons);
		if (s->gap && r->n) {
			u64 first = r->last.ip;

			report_gap(s->x, s->seg, *s->have_prev ? s->prev : NULL, &first, s->skipped);
			s->gap = false;
		}
		if (r->n) {
			s->last_ip = r->last_ip;
			s->have_ip = true;
			*s->prev = r->last_ip;
			*s->have_prev = true;
		}
		if (status < 0)
			return status;
	}
}

/* After a loop that reads no packet: report it, for a resync at the next
 * PSB. Return: false when that was not what stopped the decoder. */
static bool report_stuck(struct seg_decode *s, int status)
{
	const struct ptd_segment *seg = s->seg;
	struct ptd_event ev = { .type = PTD_EV_ERROR, .seg = seg, .err = status,
				.ip = s->last_ip, .ip_valid = true };
	u32 seq;
	u64 rec_off, file_off;
	char sym[160];

	if (!s->r.stuck || s->r.stuck < s->x->max_stuck)
		return false;
	ptd_segment_where(seg, s->r.last_off, &seq, &rec_off, &file_off);
	ptd_diag_add(&s->x->c->diags, seq, rec_off,
		     "cpu %u: %lu instructions decoded at stream offset 0x%llx without reading a packet, the last at %s: a loop of direct jumps or calls, which the trace cannot end; resynchronising at the next PSB",
		     seg->cpu, s->r.stuck, (unsigned long long)(seg->stream_off + s->r.last_off),
		     ptd_format_addr(s->x->img, s->last_ip, sym, sizeof(sym)));
	emit(s->cons, s->ncons, &ev);
	s->errors++;
	s->r.stuck = 0;
	s->r.progress_off = ~0ull;
	s->have_ip = false;
	return true;
}

/* A decode error: the IP is the instruction libipt could not go past, else
 * the last one it delivered. */
static void report_decode_error(struct seg_decode *s, int status)
{
	struct ptd_event ev = { .type = PTD_EV_ERROR, .seg = s->seg, .err = status };
	const struct pt_insn *insn = &s->r.last;

	get_offset(s->dec, &ev.seg_off);
	if (insn->iclass == ptic_error && insn->ip) {
		s->last_ip = insn->ip;
		s->have_ip = true;
	}
	ev.ip = s->last_ip;
	ev.ip_valid = s->have_ip;
	emit(s->cons, s->ncons, &ev);
	report_error(s->x, s->seg, ev.seg_off, s->last_ip, s->have_ip, status, "decode error");
	s->errors++;
	s->have_ip = false;
}

static unsigned long decode_segment(struct ptd_ctx *x, const struct ptd_segment *seg,
				    const struct ptd_consumer *cons, size_t ncons, u64 *prev,
				    bool *have_prev, struct pt_image *ipt, const insns_fn *batch, u64 base)
{
	struct seg_decode s = {
		.x = x, .seg = seg, .cons = cons, .ncons = ncons, .prev = prev,
		.have_prev = have_prev, .gap = seg->gap || seg->gap_why,
		.last_sync = ~0ull, .resync_at = ~0ull,
		.r = { .progress_off = ~0ull, .max_stuck = x->max_stuck, .batch = batch,
		       .progress = x->progress, .base = base },
	};
	struct ptd_event ev = { .type = PTD_EV_SEGMENT, .seg = seg };
	int status;

	s.r.ev = (struct ptd_event){ .type = PTD_EV_INSN, .seg = seg, .ip_valid = true };
	emit(cons, ncons, &ev);
	s.dec = open_decoder(x, seg, ipt);
	if (!s.dec)
		return 1;
	while (sync_next(&s, &status)) {
		status = decode_from_sync(&s, status);
		if (report_stuck(&s, status))
			continue;
		if (status == -pte_eos) {
			ev = (struct ptd_event){ .type = PTD_EV_END, .seg = seg };
			get_offset(s.dec, &ev.seg_off);
			emit(cons, ncons, &ev);
			break;
		}
		report_decode_error(&s, status);
	}
	pt_insn_free_decoder(s.dec);
	if (s.gap)
		report_gap(x, seg, *have_prev ? prev : NULL, NULL, 0);
	return s.errors;
}

unsigned long ptd_decode_flow(struct ptd_ctx *x, const struct ptd_consumer *cons, size_t ncons)
{
	struct pt_image *ipt = ptd_image_sections(x->img);
	insns_fn *batch = calloc(ncons + 1, sizeof(*batch));
	unsigned long errors = 0;
	u64 prev = 0, total = 0, base = 0;
	bool have_prev = false;

	if (!batch)
		abort();
	for (size_t i = 0; i < ncons; i++)
		batch[i] = batch_form(&cons[i]);
	if (x->progress) {
		for (size_t i = 0; i < x->segs.n; i++)
			total += x->segs.v[i].size;
		ptd_progress_begin(x->progress, "decoding", total);
	}
	/* @prev: the last instruction decoded on this CPU, for what a gap cost */
	for (size_t i = 0; i < x->segs.n; i++) {
		if (i && x->segs.v[i].cpu != x->segs.v[i - 1].cpu)
			have_prev = false;
		errors += decode_segment(x, &x->segs.v[i], cons, ncons, &prev, &have_prev, ipt, batch,
					 base);
		base += x->segs.v[i].size;
	}
	if (x->progress)
		ptd_progress_end(x->progress);
	free(batch);
	return errors;
}
