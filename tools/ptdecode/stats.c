// SPDX-License-Identifier: MIT
/*
 * --stats: instructions, branches by kind, packets by type, bytes, records,
 * losses, and the functions that executed the most instructions themselves.
 */
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

void ptd_stats_init(struct ptd_stats *s, const struct ptd_image *img)
{
	memset(s, 0, sizeof(*s));
	s->img = img;
	s->last_fn = SIZE_MAX;
}

void ptd_stats_free(struct ptd_stats *s)
{
	if (s->own_syms)
		free(s->syms);
	free(s->fns);
	free(s->hash);
	memset(s, 0, sizeof(*s));
}

static size_t hash_ptr(const void *p, size_t cap)
{
	u64 v = (u64)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(v >> 32) & (cap - 1);
}

/* The counter of function @name (an interned pointer). */
static size_t fn_index(struct ptd_stats *s, const char *name)
{
	size_t h;

	if (2 * (s->nfns + 1) > s->hash_cap) {
		/* small at first: there is one per CPU, and there may be 40,000 */
		size_t cap = s->hash_cap ? s->hash_cap * 2 : 32;

		free(s->hash);
		s->hash = malloc(cap * sizeof(*s->hash));
		if (!s->hash)
			abort();
		for (size_t i = 0; i < cap; i++)
			s->hash[i] = SIZE_MAX;
		s->hash_cap = cap;
		for (size_t i = 0; i < s->nfns; i++) {
			for (h = hash_ptr(s->fns[i].name, cap); s->hash[h] != SIZE_MAX; h = (h + 1) & (cap - 1))
				;
			s->hash[h] = i;
		}
	}
	for (h = hash_ptr(name, s->hash_cap); s->hash[h] != SIZE_MAX; h = (h + 1) & (s->hash_cap - 1))
		if (s->fns[s->hash[h]].name == name)
			return s->hash[h];
	if (s->nfns == s->cap_fns) {
		s->cap_fns = s->cap_fns ? s->cap_fns * 2 : 16;
		s->fns = realloc(s->fns, s->cap_fns * sizeof(*s->fns));
		if (!s->fns)
			abort();
	}
	s->fns[s->nfns] = (struct ptd_fn_count){ name, 0 };
	s->hash[h] = s->nfns;
	return s->nfns++;
}

/* Direct or indirect, from the opcode after the prefixes. */
static inline bool is_indirect(const struct pt_insn *in)
{
	u8 i = 0;

	while (i < in->size) {
		u8 b = in->raw[i];

		if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 ||
		    b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 || b == 0xf0 || (b & 0xf0) == 0x40)
			i++;
		else
			break;
	}
	return i < in->size && in->raw[i] == 0xff;
}

static inline void resolve_cond(struct ptd_stats *s, u64 next)
{
	if (!s->cond_pending)
		return;
	if (next == s->cond_next)
		s->cond_not_taken++;
	else
		s->cond_taken++;
	s->cond_pending = false;
}

/* The instruction's function changed: its counter. */
static __noinline void enter_fn(struct ptd_stats *s, const struct ptd_symbol *sym)
{
	s->last_fn = fn_index(s, sym ? sym->name : "[unknown]");
	s->last_sym = sym;
}

/* Branches by kind. Most instructions are none: tested first, alone, as a
 * conditional branch the CPU predicts better than the switch's jump table. */
static inline void count_branch(struct ptd_stats *s, const struct pt_insn *in)
{
	if (likely(in->iclass == ptic_other))
		return;
	switch (in->iclass) {
	case ptic_cond_jump:
		s->cond++;
		s->cond_pending = true;
		s->cond_next = in->ip + in->size;
		break;
	case ptic_jump:
		if (is_indirect(in))
			s->jump_indirect++;
		else
			s->jump_direct++;
		break;
	case ptic_call:
		if (is_indirect(in))
			s->call_indirect++;
		else
			s->call_direct++;
		break;
	case ptic_return:
		s->ret++;
		break;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		s->far++;
		break;
	default:
		return;
	}
	s->branches++;
}

static __noinline void stats_insn(struct ptd_stats *s, const struct pt_insn *in)
{
	const struct ptd_symbol *sym;

	resolve_cond(s, in->ip);
	s->insns++;
	if (unlikely(!s->syms)) {
		s->syms = calloc(1, sizeof(*s->syms));
		if (!s->syms)
			abort();
		s->own_syms = true;
	}
	sym = s->last_sym && in->ip >= s->last_sym->start && in->ip < s->last_sym->end ?
	      s->last_sym : ptd_image_lookup_cached(s->img, s->syms, in->ip);
	if (sym != s->last_sym || s->last_fn == SIZE_MAX)
		enter_fn(s, sym);
	s->fns[s->last_fn].count++;
	count_branch(s, in);
}

/* Everything but instructions. */
static __noinline void stats_other_event(struct ptd_stats *s, const struct ptd_event *ev)
{
	switch (ev->type) {
	case PTD_EV_SEGMENT:
		s->segments++;
		/* an overlap is no gap: its bytes came twice, none went missing */
		if (ev->seg->overlaps) {
			s->overlaps++;
			s->overlap_bytes += ev->seg->overlap;
		}
		if (ev->seg->gap || (ev->seg->gap_why && !ev->seg->overlaps)) {
			s->gaps++;
			s->gap_bytes += ev->seg->gap;
		}
		s->cond_pending = false;
		s->async_pending = false;
		break;
	case PTD_EV_INTERRUPT:
		resolve_cond(s, ev->ip);
		s->interrupts++;
		break;
	case PTD_EV_ENABLED:
		s->enables++;
		/* off at an instruction and on again there: an interrupt or
		 * exception whose handler was not traced (PT shows no more of
		 * it); on elsewhere may be a new trace window, not counted */
		s->interrupts_untraced += s->async_pending && ev->ip_valid && ev->ip == s->async_ip;
		s->async_pending = false;
		break;
	case PTD_EV_DISABLED:
		s->disables++;
		break;
	case PTD_EV_ASYNC_DISABLED:
		s->disables++;
		s->async_pending = ev->ip_valid;
		s->async_ip = ev->ip;
		break;
	case PTD_EV_OVERFLOW:
		s->overflows_flow++;
		s->cond_pending = false;
		s->async_pending = false;
		break;
	case PTD_EV_ERROR:
		s->decode_errors++;
		s->cond_pending = false;
		s->async_pending = false;
		break;
	case PTD_EV_END:
		s->cond_pending = false;
		s->async_pending = false;
		break;
	default:
		break;
	}
}

/*
 * Every instruction. Most are in the function of the one before: counters
 * only, here, without a call; a new function (its counter to find) goes the
 * long way.
 */
static inline void stats_one(struct ptd_stats *s, const struct pt_insn *in)
{
	const struct ptd_symbol *sym = s->last_sym;

	if (unlikely(!sym || in->ip < sym->start || in->ip >= sym->end || s->last_fn == SIZE_MAX)) {
		stats_insn(s, in);
		return;
	}
	resolve_cond(s, in->ip);
	s->insns++;
	s->fns[s->last_fn].count++;
	count_branch(s, in);
}

void ptd_stats_event(void *stats, const struct ptd_event *ev)
{
	if (ev->type == PTD_EV_INSN)
		stats_one(stats, ev->insn);
	else
		stats_other_event(stats, ev);
}

/*
 * stats_one() on each, with the run of instructions that stay in one
 * function counted as a run: the function's bounds and the counts in
 * registers, the function's counter added to once.
 */
void ptd_stats_insns(void *stats, const struct pt_insn *v, size_t n)
{
	struct ptd_stats *s = stats;
	const struct pt_insn *in = v, *end = v + n;

	while (in < end) {
		const struct ptd_symbol *sym = s->last_sym;

		if (sym && s->last_fn != SIZE_MAX) {
			u64 lo = sym->start, hi = sym->end, run = 0;

			for (; in < end && in->ip >= lo && in->ip < hi; in++, run++) {
				resolve_cond(s, in->ip);
				count_branch(s, in);
			}
			s->insns += run;
			s->fns[s->last_fn].count += run;
		}
		/* one that leaves the function (or the first): the long way */
		if (in < end)
			stats_insn(s, in++);
	}
}

void ptd_stats_packet(void *stats, const struct ptd_packet *p, int err)
{
	struct ptd_stats *s = stats;

	if (err) {
		s->packet_errors++;
	} else if (p->pkt) {
		s->packets++;
		if ((unsigned int)p->pkt->type <= ppt_ptw)
			s->pkt[p->pkt->type]++;
	}
}

static int cmp_fn(const void *a, const void *b)
{
	const struct ptd_fn_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

void ptd_stats_move(struct ptd_stats *s, const char *from, const char *to, u64 n)
{
	size_t i = fn_index(s, from), j;

	n = min(n, s->fns[i].count);
	s->fns[i].count -= n;
	j = fn_index(s, to);	/* may move s->fns */
	s->fns[j].count += n;
	s->last_sym = NULL;
	s->last_fn = SIZE_MAX;
}

/* Sorted by count, the index dropped. */
static void stats_sort(struct ptd_stats *s)
{
	if (s->nfns)
		qsort(s->fns, s->nfns, sizeof(*s->fns), cmp_fn);
	/* The index no longer matches the sorted array. */
	free(s->hash);
	s->hash = NULL;
	s->hash_cap = 0;
	s->last_sym = NULL;
	s->last_fn = SIZE_MAX;
}

void ptd_stats_finish(struct ptd_stats *s, const struct ptd_segments *segs)
{
	if (segs) {
		s->have_bytes = true;
		s->all_cpus = !segs->partial;
		s->bytes = s->lost = 0;
		for (size_t i = 0; i < segs->ncpus; i++) {
			s->bytes += segs->cpus[i].bytes;
			s->lost += segs->cpus[i].lost;
		}
	}
	stats_sort(s);
}

/* ---------------------------------------------------------------- per CPU */

void ptd_cpu_stats_init(struct ptd_cpu_stats *cs, const struct ptd_image *img,
			const struct ptd_segments *segs)
{
	memset(cs, 0, sizeof(*cs));
	cs->segs = segs;
	cs->n = segs->ncpus;
	cs->v = calloc(cs->n + 1, sizeof(*cs->v));
	cs->syms = calloc(1, sizeof(*cs->syms));
	if (!cs->v || !cs->syms)
		abort();
	for (size_t i = 0; i < cs->n; i++) {
		ptd_stats_init(&cs->v[i], img);
		cs->v[i].syms = cs->syms;
	}
}

void ptd_cpu_stats_free(struct ptd_cpu_stats *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		ptd_stats_free(&cs->v[i]);
	free(cs->v);
	free(cs->syms);
	memset(cs, 0, sizeof(*cs));
}

/*
 * The statistics of @seg's CPU (a segment of @cs->segs), by a binary search
 * of the CPUs' first segments: each event's search of every CPU made 40,000
 * CPUs cost 27 s. The CPUs' segments follow each other in @cs->segs->v (a
 * CPU without any has none to find), so the last CPU whose first segment is
 * at or below @seg's index is the one that can hold it.
 */
static struct ptd_stats *stats_of(const struct ptd_cpu_stats *cs, const struct ptd_segment *seg)
{
	size_t i = (size_t)(seg - cs->segs->v), lo = 0, hi = cs->n;
	const struct ptd_stats *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cs->segs->cpus[mid].first <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && i - cs->segs->cpus[lo - 1].first < cs->segs->cpus[lo - 1].nsegs)
		return &cs->v[lo - 1];
	s = ptd_cpu_stats_get(cs, seg->cpu);	/* a segment of another list: by its CPU */
	if (!s)
		abort();
	return (struct ptd_stats *)s;
}

void ptd_cpu_stats_event(void *stats, const struct ptd_event *ev)
{
	struct ptd_cpu_stats *cs = stats;

	if (ev->type != PTD_EV_INSN || !cs->cur)
		cs->cur = stats_of(cs, ev->seg);
	ptd_stats_event(cs->cur, ev);
}

void ptd_cpu_stats_insns(void *stats, const struct pt_insn *v, size_t n)
{
	struct ptd_cpu_stats *cs = stats;

	/* a batch comes after its segment's PTD_EV_SEGMENT */
	ptd_stats_insns(cs->cur, v, n);
}

void ptd_cpu_stats_packet(void *stats, const struct ptd_packet *p, int err)
{
	ptd_stats_packet(stats_of(stats, p->seg), p, err);
}

const struct ptd_stats *ptd_cpu_stats_get(const struct ptd_cpu_stats *cs, u32 cpu)
{
	const struct ptd_cpu_stream *st = ptd_segments_cpu(cs->segs, cpu);

	return st ? &cs->v[st - cs->segs->cpus] : NULL;
}

/*
 * @total: the sum of the CPUs' statistics, what one struct ptd_stats fed
 * every CPU's events would count (each counter is a sum; a CPU's state
 * starts afresh at each of its segments, as one struct's does at every
 * segment). A counter added to struct ptd_stats is added here too.
 */
static void stats_sum(const struct ptd_cpu_stats *cs, struct ptd_stats *t)
{
	for (size_t i = 0; i < cs->n; i++) {
		const struct ptd_stats *s = &cs->v[i];

		t->insns += s->insns;
		t->branches += s->branches;
		t->cond += s->cond;
		t->cond_taken += s->cond_taken;
		t->cond_not_taken += s->cond_not_taken;
		t->jump_direct += s->jump_direct;
		t->jump_indirect += s->jump_indirect;
		t->call_direct += s->call_direct;
		t->call_indirect += s->call_indirect;
		t->ret += s->ret;
		t->far += s->far;
		t->interrupts += s->interrupts;
		t->enables += s->enables;
		t->disables += s->disables;
		t->overflows_flow += s->overflows_flow;
		t->decode_errors += s->decode_errors;
		t->call_depth = max(t->call_depth, s->call_depth);
		t->interrupts_untraced += s->interrupts_untraced;
		t->packets += s->packets;
		t->packet_errors += s->packet_errors;
		for (size_t k = 0; k < ARRAY_SIZE(t->pkt); k++)
			t->pkt[k] += s->pkt[k];
		t->segments += s->segments;
		t->gaps += s->gaps;
		t->gap_bytes += s->gap_bytes;
		t->overlaps += s->overlaps;
		t->overlap_bytes += s->overlap_bytes;
		for (size_t k = 0; k < s->nfns; k++) {
			size_t j = fn_index(t, s->fns[k].name);

			t->fns[j].count += s->fns[k].count;
		}
	}
}

void ptd_cpu_stats_finish(struct ptd_cpu_stats *cs, const struct ptd_calls *k,
			  struct ptd_stats *total)
{
	const struct ptd_image *img = cs->n ? cs->v[0].img : k ? k->img : NULL;

	for (size_t i = 0; i < cs->n; i++) {
		struct ptd_stats *s = &cs->v[i];
		const struct ptd_cpu_stream *st = &cs->segs->cpus[i];

		/* the call targets of this CPU's part of the profile */
		if (k && k->per_cpu) {
			const struct ptd_fnode *node = ptd_calls_cpu_node(k, st->cpu);

			if (node) {
				ptd_stats_call_targets_below(s, node);
				s->call_depth = node->max_depth;
			}
		} else if (k && cs->n == 1) {
			ptd_stats_call_targets(s, k);
			s->call_depth = k->max_depth;
		}
		s->have_bytes = true;
		s->all_cpus = false;
		s->bytes = st->bytes;
		s->lost = st->lost;
	}
	ptd_stats_init(total, img);
	stats_sum(cs, total);
	if (k)
		total->call_depth = k->max_depth;
	ptd_stats_finish(total, cs->segs);
	for (size_t i = 0; i < cs->n; i++)
		stats_sort(&cs->v[i]);
}

static double pct(u64 a, u64 b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void modules_print(const struct ptd_stats *s, FILE *out, size_t top, bool one_line);

/* The bytes lost as the container records them: the records' LOST counts,
 * and the trailer's lost_at_end when no CPU was left out. */
static u64 lost_bytes(const struct ptd_stats *s, const struct ptd_container *c)
{
	u64 end = c->have_trailer ? c->trailer.lost_at_end : 0;

	if (!s->have_bytes)
		return c->lost_bytes + end;
	return s->lost + (s->all_cpus ? end : 0);
}

static u64 trace_bytes(const struct ptd_stats *s, const struct ptd_container *c)
{
	return s->have_bytes ? s->bytes : c->trace_bytes;
}

/* " name 12.5%, ..." for @s's first @top functions (those with a count
 * when @counted), the names escaped (ptd_escape()). */
static void print_top(FILE *out, const struct ptd_stats *s, size_t top, bool counted)
{
	char e[256];

	for (size_t k = 0; k < s->nfns && k < top && (!counted || s->fns[k].count); k++)
		fprintf(out, "%s %s %.1f%%", k ? "," : "", ptd_escape(s->fns[k].name, e, sizeof(e)),
			pct(s->fns[k].count, s->insns));
}

/* ", N overlaps (M bytes delivered twice)", or "" when there is none. */
static const char *overlaps(const struct ptd_stats *s, char *buf, size_t size)
{
	buf[0] = 0;
	if (s->overlaps)
		snprintf(buf, size, ", %llu overlap%s (%llu bytes delivered twice)", s->overlaps,
			 s->overlaps == 1 ? "" : "s", s->overlap_bytes);
	return buf;
}

/* "cpu 1: ..." lines: each CPU's numbers and top functions. */
static void cpu_lines(const struct ptd_cpu_stats *cs, FILE *out)
{
	fprintf(out, "per CPU (each its own stream, decoded on its own):\n");
	for (size_t i = 0; i < cs->n; i++) {
		const struct ptd_stats *s = &cs->v[i];
		const struct ptd_cpu_stream *st = &cs->segs->cpus[i];
		char ov[64];

		fprintf(out, "  cpu %u: %llu instructions, %llu branches, call depth %llu; %llu bytes in %llu segment%s, "
			"%llu gap%s (%llu bytes missing)%s, %llu bytes lost as recorded; %llu packets, %llu bad; "
			"%llu decode error%s\n",
			st->cpu, s->insns, s->branches,
			s->call_depth, s->bytes,
			s->segments, s->segments == 1 ? "" : "s",
			s->gaps, s->gaps == 1 ? "" : "s", s->gap_bytes,
			overlaps(s, ov, sizeof(ov)),
			s->lost, s->packets,
			s->packet_errors, s->decode_errors,
			s->decode_errors == 1 ? "" : "s");
		if (st->end_why)
			fprintf(out, "         its stream ends with %llu bytes lost%s%s%s\n",
				st->end_lost, strcmp(st->end_why, "lost") ? " (" : "",
				strcmp(st->end_why, "lost") ? st->end_why : "",
				strcmp(st->end_why, "lost") ? ")" : "");
		fprintf(out, "         top functions:");
		print_top(out, s, 5, true);
		fprintf(out, "%s\n", s->nfns && s->fns[0].count ? "" : " none");
	}
}

static void stats_print(const struct ptd_stats *s, const struct ptd_cpu_stats *cs,
			const struct ptd_container *c, FILE *out)
{
	const struct tpz_header *h = &c->header;
	u64 lost = lost_bytes(s, c);
	char ov[256];
	u64 timing = s->pkt[ppt_tsc] + s->pkt[ppt_tma] + s->pkt[ppt_mtc] + s->pkt[ppt_cyc] + s->pkt[ppt_cbr];
	u64 known = timing + s->pkt[ppt_psb] + s->pkt[ppt_psbend] + s->pkt[ppt_ovf] + s->pkt[ppt_tnt_8] +
		    s->pkt[ppt_tnt_64] + s->pkt[ppt_tip] + s->pkt[ppt_tip_pge] + s->pkt[ppt_tip_pgd] +
		    s->pkt[ppt_fup] + s->pkt[ppt_mode] + s->pkt[ppt_pad] + s->pkt[ppt_pip];

	if (c->have_header)
		fprintf(out, "machine: %.12s family %u model %u stepping %u%s, topaz %.32s\n", h->vendor,
			h->family, h->model, h->stepping, h->flags & TPZ_HDR_PT_MODEL ? " (PT model)" : "",
			h->topaz_version);
	fprintf(out, "container: %u trace and %u sideband records intact, %zu problem%s\n",
		c->trace_records, c->sideband_records, ptd_diags_count(&c->diags),
		ptd_diags_count(&c->diags) == 1 ? "" : "s");
	if (cs) {
		fprintf(out, "cpus: %zu decoded (", cs->n);
		for (size_t i = 0; i < cs->n; i++)
			fprintf(out, "%s%u", i ? ", " : "", cs->segs->cpus[i].cpu);
		fprintf(out, ")%s; the header says %u may have trace records\n",
			cs->segs->partial ? ", others left out (--cpu)" : "", h->ncpus);
	}
	fprintf(out, "trace: %llu bytes in %llu segment%s, %llu gap%s (%llu bytes missing)%s; %llu bytes lost as recorded\n",
		trace_bytes(s, c), s->segments,
		s->segments == 1 ? "" : "s", s->gaps, s->gaps == 1 ? "" : "s",
		s->gap_bytes, overlaps(s, ov, sizeof(ov)), lost);
	if (c->have_trailer && s->have_bytes && !s->all_cpus)
		fprintf(out, "PMIs: %llu, of all CPUs (the container counts them together)\n",
			c->trailer.pmis);
	else if (c->have_trailer)
		fprintf(out, "PMIs: %llu\n", c->trailer.pmis);
	else
		fprintf(out, "PMIs: unknown (no trailer)\n");
	fprintf(out, "packets: %llu (psb %llu, psbend %llu, ovf %llu, tnt %llu, tip %llu, tip.pge %llu, "
		"tip.pgd %llu, fup %llu, mode %llu, pip %llu, pad %llu, timing %llu, other %llu), %llu bad\n",
		s->packets, s->pkt[ppt_psb],
		s->pkt[ppt_psbend], s->pkt[ppt_ovf],
		s->pkt[ppt_tnt_8] + s->pkt[ppt_tnt_64],
		s->pkt[ppt_tip], s->pkt[ppt_tip_pge],
		s->pkt[ppt_tip_pgd], s->pkt[ppt_fup],
		s->pkt[ppt_mode], s->pkt[ppt_pip],
		s->pkt[ppt_pad], timing,
		s->packets - known, s->packet_errors);
	fprintf(out, "instructions: %llu\n", s->insns);
	fprintf(out, "branches: %llu\n", s->branches);
	fprintf(out, "  conditional     %10llu  (%llu taken, %llu not taken)\n", s->cond,
		s->cond_taken, s->cond_not_taken);
	fprintf(out, "  direct jump     %10llu\n", s->jump_direct);
	fprintf(out, "  indirect jump   %10llu\n", s->jump_indirect);
	fprintf(out, "  direct call     %10llu\n", s->call_direct);
	fprintf(out, "  indirect call   %10llu\n", s->call_indirect);
	fprintf(out, "  return          %10llu\n", s->ret);
	fprintf(out, "  far transfer    %10llu\n", s->far);
	fprintf(out, "call depth: %llu at the deepest\n", s->call_depth);
	fprintf(out, "interrupts: %llu traced, %llu with a handler not traced (tracing off at an instruction, on again at it)\n",
		s->interrupts, s->interrupts_untraced);
	fprintf(out, "tracing: %llu enabled, %llu disabled, %llu overflow%s, %llu decode error%s\n",
		s->enables, s->disables,
		s->overflows_flow, s->overflows_flow == 1 ? "" : "s",
		s->decode_errors, s->decode_errors == 1 ? "" : "s");
	modules_print(s, out, 30, false);
	fprintf(out, "top functions (instructions executed in the function itself):\n");
	/* sorted by count: a function whose instructions all went to call targets ends it */
	for (size_t i = 0; i < s->nfns && i < 20 && s->fns[i].count; i++)
		fprintf(out, "  %12llu  %5.1f%%  %s\n", s->fns[i].count,
			pct(s->fns[i].count, s->insns), ptd_escape(s->fns[i].name, ov, sizeof(ov)));
	if (cs)
		cpu_lines(cs, out);
	/* the same, for scripts: each CPU's, then the total */
	for (size_t i = 0; cs && i < cs->n; i++) {
		const struct ptd_stats *p = &cs->v[i];

		fprintf(out, "result: decode.cpu cpu=%u insns=%llu branches=%llu bytes=%llu lost=%llu gaps=%llu "
			"bad_packets=%llu decode_errors=%llu depth=%llu\n", cs->segs->cpus[i].cpu,
			p->insns, p->branches,
			p->bytes, p->lost, p->gaps,
			p->packet_errors, p->decode_errors,
			p->call_depth);
	}
	fprintf(out, "result: decode insns=%llu branches=%llu bytes=%llu lost=%llu gaps=%llu "
		"problems=%zu bad_packets=%llu decode_errors=%llu pmis=%llu depth=%llu\n",
		s->insns, s->branches,
		trace_bytes(s, c), lost, s->gaps,
		ptd_diags_count(&c->diags), s->packet_errors,
		s->decode_errors,
		c->have_trailer ? c->trailer.pmis : 0,
		s->call_depth);
}

/*
 * The module a counted function belongs to, from its name: "Fat+0x1a20" and
 * "Fat" are Fat's, "[firmware@0x...]" is "[firmware]"'s, a symbol from the
 * kernel's ELF is the kernel's ("topaz").
 */
static size_t module_of_fn(const struct ptd_image *img, const char *fn, char *out, size_t cap)
{
	const char *plus = strchr(fn, '+'), *at = strchr(fn, '@');
	size_t n;

	if (fn[0] == '[') {
		n = at ? (size_t)(at - fn) : strcspn(fn, "]");
		snprintf(out, cap, "%.*s]", (int)n, fn);
	} else if (plus) {
		snprintf(out, cap, "%.*s", (int)(plus - fn), fn);
	} else if (!strchr(fn, '!') && fn[0] && !ptd_image_has_region(img, fn)) {
		snprintf(out, cap, "topaz");
	} else {
		snprintf(out, cap, "%.*s", (int)strcspn(fn, "!"), fn);
	}
	return strlen(out);
}

struct mod_count {
	char name[48];
	u64 count;
};

static int cmp_mod(const void *a, const void *b)
{
	const struct mod_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_mod_name(const void *a, const void *b)
{
	return strcmp(((const struct mod_count *)a)->name, ((const struct mod_count *)b)->name);
}

/*
 * Instructions per module, largest first, into a malloc'd array (*n of
 * them): each function's module, sorted by name to add up those of one (a
 * search of the modules for each function was quadratic in the images).
 */
static struct mod_count *module_counts(const struct ptd_stats *s, size_t *n)
{
	struct mod_count *v = malloc((s->nfns + 1) * sizeof(*v));
	size_t nv = 0, k = 0;

	if (!v)
		abort();
	for (size_t i = 0; i < s->nfns; i++) {
		if (!s->fns[i].count)
			continue;
		module_of_fn(s->img, s->fns[i].name, v[nv].name, sizeof(v[nv].name));
		v[nv++].count = s->fns[i].count;
	}
	qsort(v, nv, sizeof(*v), cmp_mod_name);
	for (size_t i = 0; i < nv; i++) {
		if (k && !strcmp(v[k - 1].name, v[i].name))
			v[k - 1].count += v[i].count;
		else
			v[k++] = v[i];
	}
	qsort(v, k, sizeof(*v), cmp_mod);
	*n = k;
	return v;
}

/* "modules:" when code outside the kernel ran: the firmware phase's view. */
static void modules_print(const struct ptd_stats *s, FILE *out, size_t top, bool one_line)
{
	size_t n;
	struct mod_count *v = module_counts(s, &n);
	char e[256];

	if (n > 1 || (n == 1 && strcmp(v[0].name, "topaz"))) {
		if (one_line) {
			fprintf(out, "modules (instructions):");
			for (size_t i = 0; i < n && i < top; i++)
				fprintf(out, "%s %s %llu (%.1f%%)", i ? "," : "", ptd_escape(v[i].name, e, sizeof(e)),
					v[i].count, pct(v[i].count, s->insns));
			fprintf(out, "%s\n", n > top ? ", ..." : "");
		} else {
			fprintf(out, "modules (instructions executed in each):\n");
			for (size_t i = 0; i < n && i < top; i++)
				fprintf(out, "  %12llu  %5.1f%%  %s\n", v[i].count,
					pct(v[i].count, s->insns), ptd_escape(v[i].name, e, sizeof(e)));
		}
	}
	free(v);
}

void ptd_stats_print(const struct ptd_stats *s, const struct ptd_container *c, FILE *out)
{
	stats_print(s, NULL, c, out);
}

void ptd_stats_print_cpus(const struct ptd_stats *total, const struct ptd_cpu_stats *cs,
			  const struct ptd_container *c, FILE *out)
{
	stats_print(total, cs, c, out);
}

void ptd_cpu_summary_print(const struct ptd_cpu_stats *cs, FILE *out, size_t top)
{
	for (size_t i = 0; i < cs->n; i++) {
		const struct ptd_stats *s = &cs->v[i];

		fprintf(out, "cpu %u: %llu instructions, %llu branches, %llu bytes, %llu lost bytes",
			cs->segs->cpus[i].cpu, s->insns,
			s->branches, s->bytes,
			s->lost);
		if (s->gaps)
			fprintf(out, ", %llu gap%s", s->gaps, s->gaps == 1 ? "" : "s");
		if (s->decode_errors)
			fprintf(out, ", %llu decode error%s", s->decode_errors,
				s->decode_errors == 1 ? "" : "s");
		fprintf(out, "; top:");
		print_top(out, s, top, true);
		fprintf(out, "%s\n", s->nfns && s->fns[0].count ? "" : " none");
	}
}

void ptd_summary_print(const struct ptd_stats *s, const struct ptd_container *c, FILE *out,
		       size_t top)
{
	u64 lost = lost_bytes(s, c);
	char pmis[32];

	if (c->have_trailer && s->have_bytes && !s->all_cpus)
		snprintf(pmis, sizeof(pmis), "%llu (all CPUs')", c->trailer.pmis);
	else if (c->have_trailer)
		snprintf(pmis, sizeof(pmis), "%llu", c->trailer.pmis);
	else
		snprintf(pmis, sizeof(pmis), "unknown");
	fprintf(out, "trace: %llu instructions, %llu branches, %s PMIs, %llu bytes, %llu lost bytes",
		s->insns, s->branches, pmis,
		trace_bytes(s, c), lost);
	if (s->gaps)
		fprintf(out, ", %llu gap%s", s->gaps, s->gaps == 1 ? "" : "s");
	if (s->overlaps)
		fprintf(out, ", %llu overlap%s", s->overlaps, s->overlaps == 1 ? "" : "s");
	if (ptd_diags_count(&c->diags))
		fprintf(out, ", %zu problem%s", ptd_diags_count(&c->diags),
			ptd_diags_count(&c->diags) == 1 ? "" : "s");
	fprintf(out, "\n");
	modules_print(s, out, top + 3, true);
	if (s->nfns) {
		fprintf(out, "top functions:");
		print_top(out, s, top, false);
		fprintf(out, "\n");
	}
}
