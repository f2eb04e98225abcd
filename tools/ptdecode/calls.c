// SPDX-License-Identifier: MIT
/*
 * The shadow call stack: calls push a frame when the callee's first
 * instruction shows up, interrupts push one for the handler, returns pop to
 * the frame whose return address they land on, and a jump into another
 * function replaces the top frame. From it: the --calls tree (in the style of
 * ftrace's function_graph) and the stack profile behind --folded and --svg.
 *
 * Decoding starts inside some function: the first instruction's function is
 * the root; returning from the root makes the caller the new root.
 *
 * With pt.filter, a call can leave the traced code ("disabled" at its
 * target): an untraced frame stands for it until tracing comes back on at its
 * return address; traced code that comes on anywhere else meanwhile was
 * called from the untraced code (a callback), not jumped to. Untraced frames
 * show in the --calls tree but not in the stack profile or the depth.
 */
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

enum { PEND_NONE, PEND_CALL, PEND_RET, PEND_IRQ };

void ptd_calls_init(struct ptd_calls *k, const struct ptd_image *img, FILE *tree)
{
	memset(k, 0, sizeof(*k));
	k->img = img;
	k->tree = tree;
	k->root.name = "all";
	k->base = &k->root;
}

void ptd_calls_set_per_cpu(struct ptd_calls *k, bool per_cpu)
{
	k->per_cpu = per_cpu;
	k->base = &k->root;
}

/* The slot of @cpu's node in the index of CPU nodes (open addressing), or
 * the empty one where it goes. */
static struct ptd_fnode **cpu_slot(struct ptd_fnode **v, size_t cap, u32 cpu)
{
	size_t i = (size_t)(((u64)cpu * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);

	while (v[i] && v[i]->cpu != cpu)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

const struct ptd_fnode *ptd_calls_cpu_node(const struct ptd_calls *k, u32 cpu)
{
	return k->cpu_cap ? *cpu_slot(k->cpu_nodes, k->cpu_cap, cpu) : NULL;
}

/*
 * The tree's walks go by its parent links, not by recursion: a trace can nest
 * hundreds of thousands of calls (a stack overflow, 600,000 deep). Post-order:
 * a node comes after all of its children.
 */
static struct ptd_fnode *first_leaf(struct ptd_fnode *n)
{
	while (n->child)
		n = n->child;
	return n;
}

static struct ptd_fnode *post_next(struct ptd_fnode *n)
{
	return n->next ? first_leaf(n->next) : n->parent;
}

void ptd_calls_free(struct ptd_calls *k)
{
	for (struct ptd_fnode *n = first_leaf(&k->root), *next; n != &k->root; n = next) {
		next = post_next(n);
		free(n);
	}
	free(k->frames);
	free(k->cpu_nodes);
	memset(k, 0, sizeof(*k));
}

static struct ptd_fnode *new_child(struct ptd_fnode *parent, const char *name, const char *region)
{
	struct ptd_fnode *n = calloc(1, sizeof(*n));


	if (!n)
		abort();
	n->name = name;
	n->region = region;
	n->parent = parent;
	n->next = parent->child;
	parent->child = n;
	return n;
}

static struct ptd_fnode *child_node(struct ptd_fnode *parent, const char *name, const char *region)
{
	for (struct ptd_fnode *n = parent->child; n; n = n->next)
		if (n->name == name)
			return n;
	return new_child(parent, name, region);
}

/*
 * The node @cpu's stacks hang below ("cpu1"), made on first use. Found
 * through an index, not among the root's children: a segment of each of
 * 40,000 CPUs cost a search of them each (27 s).
 */
static struct ptd_fnode *cpu_node(struct ptd_calls *k, u32 cpu)
{
	char name[24];
	struct ptd_fnode *n, **slot;

	if (2 * (k->ncpu_nodes + 1) > k->cpu_cap) {
		size_t cap = k->cpu_cap ? 2 * k->cpu_cap : 64;
		struct ptd_fnode **v = calloc(cap, sizeof(*v));

		if (!v)
			abort();
		for (size_t i = 0; i < k->cpu_cap; i++)
			if (k->cpu_nodes[i])
				*cpu_slot(v, cap, k->cpu_nodes[i]->cpu) = k->cpu_nodes[i];
		free(k->cpu_nodes);
		k->cpu_nodes = v;
		k->cpu_cap = cap;
	}
	slot = cpu_slot(k->cpu_nodes, k->cpu_cap, cpu);
	if (*slot)
		return *slot;
	snprintf(name, sizeof(name), "cpu%u", cpu);
	/* the image's string table (the only thing changed in it) */
	n = new_child(&k->root, ptd_intern((struct ptd_image *)k->img, name), NULL);
	n->cpu_node = true;
	n->cpu = cpu;
	*slot = n;
	k->ncpu_nodes++;
	return n;
}

/* Lines deeper than this say their depth instead of indenting further, so
 * calls.txt grows with the calls, not with the calls times their depth. */
#define CALLS_MAX_INDENT	32

static void indent(struct ptd_calls *k, size_t depth)
{
	if (depth > CALLS_MAX_INDENT) {
		fprintf(k->tree, "%*s[depth %zu] ", 2 * CALLS_MAX_INDENT, "", depth);
		return;
	}
	for (size_t i = 0; i < depth; i++)
		fputs("  ", k->tree);
}

static void frame_comment(struct ptd_calls *k, const struct ptd_frame *f, char *buf, size_t size)
{
	char a[200];

	switch (f->kind) {
	case PTD_FRAME_ROOT:
		snprintf(buf, size, "trace starts in %s", ptd_format_addr(k->img, f->entry_ip, a, sizeof(a)));
		break;
	case PTD_FRAME_IRQ:
		snprintf(buf, size, "interrupt at %s", ptd_format_addr(k->img, f->from, a, sizeof(a)));
		break;
	case PTD_FRAME_JUMP:
		snprintf(buf, size, "jump from %s", ptd_format_addr(k->img, f->from, a, sizeof(a)));
		break;
	case PTD_FRAME_RETURNED:
		snprintf(buf, size, "returned to %s", ptd_format_addr(k->img, f->entry_ip, a, sizeof(a)));
		break;
	case PTD_FRAME_UNTRACED:
		snprintf(buf, size, "not traced, called from %s", ptd_format_addr(k->img, f->from, a, sizeof(a)));
		break;
	case PTD_FRAME_CALLBACK:
		snprintf(buf, size, "called from code not traced");
		break;
	default:
		buf[0] = 0;
		break;
	}
}

/* Print the "name() {" lines of frames that have not been printed yet. */
static void open_frames(struct ptd_calls *k)
{
	char c[240], e[256];

	if (!k->tree)
		return;
	/* the printed frames are the bottom of the stack: start above them */
	for (size_t i = k->nprinted; i < k->depth; i++) {
		struct ptd_frame *f = &k->frames[i];

		frame_comment(k, f, c, sizeof(c));
		indent(k, i);
		if (c[0])
			fprintf(k->tree, "%s() {  /* %s */\n", ptd_escape(f->name, e, sizeof(e)), c);
		else
			fprintf(k->tree, "%s() {\n", ptd_escape(f->name, e, sizeof(e)));
		f->printed = true;
	}
	k->nprinted = k->depth;
}

static void pop_frame(struct ptd_calls *k, const char *note)
{
	struct ptd_frame *f = &k->frames[k->depth - 1];
	u64 n = k->count - f->start_count;
	char c[240], e[256];

	if (k->tree) {
		indent(k, k->depth - 1);
		if (f->printed) {
			fprintf(k->tree, "}  /* %s: %llu instruction%s%s%s */\n", ptd_escape(f->name, e, sizeof(e)),
				n, n == 1 ? "" : "s", note ? ", " : "", note ? note : "");
		} else {
			frame_comment(k, f, c, sizeof(c));
			fprintf(k->tree, "%s();  /* %s%s%llu instruction%s%s%s */\n", ptd_escape(f->name, e, sizeof(e)), c,
				c[0] ? "; " : "", (unsigned long long)n, n == 1 ? "" : "s",
				note ? ", " : "", note ? note : "");
		}
	}
	k->untraced -= f->kind == PTD_FRAME_UNTRACED;
	k->depth--;
	if (k->nprinted > k->depth)
		k->nprinted = k->depth;
}

static void close_all(struct ptd_calls *k, const char *note)
{
	while (k->depth)
		pop_frame(k, note);
	k->pending = PEND_NONE;
	k->last_sym = NULL;
}

static void push_frame(struct ptd_calls *k, enum ptd_frame_kind kind, u64 ip, u64 ret, u64 from)
{
	const struct ptd_symbol *sym = ptd_image_lookup_cached(k->img, &k->syms, ip);
	struct ptd_fnode *parent = k->depth ? k->frames[k->depth - 1].node : k->base;
	const char *region;
	struct ptd_frame *f;

	if (kind != PTD_FRAME_JUMP)
		open_frames(k);
	if (k->depth == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 64;
		k->frames = realloc(k->frames, k->cap * sizeof(*k->frames));
		if (!k->frames)
			abort();
	}
	f = &k->frames[k->depth++];
	memset(f, 0, sizeof(*f));
	f->sym = sym;
	f->name = sym ? sym->name : "[unknown]";
	region = sym && !ptd_image_is_symbol(k->img, sym) ? sym->name : NULL;
	if (region && (kind == PTD_FRAME_CALL || kind == PTD_FRAME_CALLBACK || kind == PTD_FRAME_IRQ ||
		       kind == PTD_FRAME_JUMP)) {
		/*
		 * Code without symbols (firmware): the function is its entry,
		 * so distinct functions do not merge into one "[firmware]"
		 * (module names come with the firmware sideband).
		 */
		char name[200];

		if (region[0] == '[')
			snprintf(name, sizeof(name), "%.*s@0x%llx]", (int)strlen(region) - 1, region,
				 ip);
		else	/* a named module: its entry as Module+offset */
			snprintf(name, sizeof(name), "%s+0x%llx", region,
				 ip - sym->start);
		/* the image's string table (the only thing changed in it) */
		f->name = ptd_intern((struct ptd_image *)k->img, name);
	}
	/* untraced code runs no counted instruction: its callees hang below its caller */
	f->node = kind == PTD_FRAME_UNTRACED ? parent : child_node(parent, f->name, region);
	f->ret = ret;
	f->entry_ip = ip;
	f->from = from;
	f->start_count = k->count;
	f->kind = kind;
	k->untraced += kind == PTD_FRAME_UNTRACED;
	k->max_depth = max(k->max_depth, k->depth - k->untraced);
	k->base->max_depth = max(k->base->max_depth, k->depth - k->untraced);
}

/*
 * A return landing on @ip pops the frame whose return address it is (and any
 * above it); landing elsewhere it pops the top frame. When the stack empties,
 * the function returned to is the new root, if it is traced (@traced).
 */
static void settle_return(struct ptd_calls *k, u64 ip, bool traced)
{
	size_t j = k->depth;

	k->returns++;
	while (j > 0 && k->frames[j - 1].ret != ip)
		j--;
	if (j > 0) {
		while (k->depth > j)
			pop_frame(k, "unwound");
		pop_frame(k, NULL);
	} else {
		/* a callback's return address is unknown: leaving the traced code is it */
		if (!(k->depth && !traced && k->frames[k->depth - 1].kind == PTD_FRAME_CALLBACK))
			k->unmatched_returns++;
		if (k->depth)
			pop_frame(k, NULL);
	}
	if (!k->depth && traced)
		push_frame(k, PTD_FRAME_RETURNED, ip, 0, k->pending_from);
}

/* The previous instruction's effect, now that the next IP is known. */
static void resolve_pending(struct ptd_calls *k, u64 ip)
{
	switch (k->pending) {
	case PEND_CALL:
		/* "call next" (a PC fetch) is not a function call. */
		if (ip != k->pending_ret) {
			push_frame(k, PTD_FRAME_CALL, ip, k->pending_ret, k->pending_from);
			k->calls++;
		}
		break;
	case PEND_IRQ:
		push_frame(k, PTD_FRAME_IRQ, ip, k->pending_ret, k->pending_from);
		k->interrupts++;
		break;
	case PEND_RET:
		settle_return(k, ip, true);
		break;
	default:
		break;
	}
	k->pending = PEND_NONE;
}

static void comment(struct ptd_calls *k, const char *fmt, const char *arg)
{
	if (!k->tree)
		return;
	open_frames(k);
	indent(k, k->depth);
	fputs("/* ", k->tree);
	fprintf(k->tree, fmt, arg);
	fputs(" */\n", k->tree);
}

/* A jump into another function replaces the top frame. Out of line: the
 * per-instruction path below stays small (no buffers on its stack). */
static __noinline struct ptd_frame *jump_frame(struct ptd_calls *k, u64 ip)
{
	u64 ret = k->frames[k->depth - 1].ret;
	char note[240], a[200];

	/* the note is only printed into the tree */
	if (k->tree)
		snprintf(note, sizeof(note), "jumps to %s", ptd_format_addr(k->img, ip, a, sizeof(a)));
	pop_frame(k, k->tree ? note : NULL);
	push_frame(k, PTD_FRAME_JUMP, ip, ret, k->last_ip);
	return &k->frames[k->depth - 1];
}

/* What @in does to the stack, settled at the next instruction. */
static inline void note_branch(struct ptd_calls *k, const struct pt_insn *in)
{
	switch (in->iclass) {
	case ptic_call:
	case ptic_far_call:
		k->pending = PEND_CALL;
		k->pending_ret = in->ip + in->size;
		k->pending_from = in->ip;
		break;
	case ptic_return:
	case ptic_far_return:
		k->pending = PEND_RET;
		k->pending_from = in->ip;
		break;
	default:
		break;
	}
}

static __noinline void on_insn(struct ptd_calls *k, const struct pt_insn *in)
{
	const struct ptd_symbol *sym;
	struct ptd_frame *top;

	resolve_pending(k, in->ip);
	if (!k->depth)
		push_frame(k, PTD_FRAME_ROOT, in->ip, 0, 0);
	top = &k->frames[k->depth - 1];
	/* Most instructions stay in the function of the one before. */
	sym = k->last_sym && in->ip >= k->last_sym->start && in->ip < k->last_sym->end ?
	      k->last_sym : ptd_image_lookup_cached(k->img, &k->syms, in->ip);
	if (sym != top->sym && top->kind == PTD_FRAME_UNTRACED) {
		/* tracing came on in traced code that the untraced code called */
		push_frame(k, PTD_FRAME_CALLBACK, in->ip, 0, 0);
		k->calls++;
		top = &k->frames[k->depth - 1];
	} else if (sym != top->sym) {
		top = jump_frame(k, in->ip);
	}
	k->last_sym = sym;
	k->last_ip = in->ip;
	k->count++;
	top->node->self++;
	note_branch(k, in);
}

/* Tracing went off at an instruction and did not come on again. */
static void async_end(struct ptd_calls *k)
{
	if (k->async_pending && k->depth)
		comment(k, "%s", "tracing disabled");
	k->async_pending = false;
}

/* Everything but instructions. */
static __noinline void calls_other_event(struct ptd_calls *k, const struct ptd_event *ev)
{
	const struct ptd_segment *s = ev->seg;
	char a[200];

	switch (ev->type) {
	case PTD_EV_SEGMENT:
		async_end(k);
		close_all(k, "gap");
		if (k->per_cpu)
			k->base = cpu_node(k, s->cpu);
		if (k->tree) {
			fprintf(k->tree, "# cpu %u, segment %u at stream offset 0x%llx\n", s->cpu, s->index,
				s->stream_off);
			if (*ptd_segment_note(s, a, sizeof(a)))
				fprintf(k->tree, "# %s\n", a);
		}
		break;
	case PTD_EV_INTERRUPT:
		/* The interrupted instruction did not run: @ip is where execution
		 * resumes, so it settles a pending call or return first. */
		if (k->depth || k->pending != PEND_NONE)
			resolve_pending(k, ev->ip);
		if (!k->depth)
			push_frame(k, PTD_FRAME_ROOT, ev->ip, 0, 0);
		k->pending = PEND_IRQ;
		k->pending_ret = ev->ip;
		k->pending_from = ev->ip;
		break;
	case PTD_EV_DISABLED:
		/* @ip: where the branch that left the traced code went */
		if (k->depth && ev->ip_valid && k->pending == PEND_CALL && ev->ip != k->pending_ret) {
			push_frame(k, PTD_FRAME_UNTRACED, ev->ip, k->pending_ret, k->pending_from);
			k->calls++;
			k->pending = PEND_NONE;
		} else if (k->depth && ev->ip_valid && k->pending == PEND_RET) {
			settle_return(k, ev->ip, false);
			k->pending = PEND_NONE;
		}
		if (k->depth)
			comment(k, "%s", "tracing disabled");
		break;
	case PTD_EV_ASYNC_DISABLED:
		/* an interrupt if tracing comes on again, else the end */
		k->async_pending = true;
		k->async_ip = ev->ip_valid ? ev->ip : 0;
		break;
	case PTD_EV_ENABLED:
		if (!k->async_pending && k->untraced) {
			/* back at the return address of a call that left the traced code */
			size_t j = k->depth;

			while (j > 0 && !(k->frames[j - 1].kind == PTD_FRAME_UNTRACED &&
					  k->frames[j - 1].ret == ev->ip))
				j--;
			if (j > 0) {
				while (k->depth > j)
					pop_frame(k, "unwound");
				pop_frame(k, NULL);
				k->last_sym = NULL;
			}
		}
		if (k->depth && k->async_pending && k->async_ip == ev->ip) {
			comment(k, "interrupt or exception at %s, handler not traced",
				ptd_format_addr(k->img, ev->ip, a, sizeof(a)));
		} else if (k->depth && k->async_pending &&
			   ptd_image_lookup(k->img, k->async_ip) != ptd_image_lookup(k->img, ev->ip)) {
			/*
			 * Off in one function, on in another: a new trace window
			 * (pt_trace_end, then the next pt_trace_begin's caller).
			 * What ran between is unknown, so is the stack: the window
			 * starts from its own root instead of inside the last one.
			 */
			char b[200], line[420];

			snprintf(line, sizeof(line), "tracing disabled at %s; enabled again at %s",
				 k->async_ip ? ptd_format_addr(k->img, k->async_ip, b, sizeof(b)) : "?",
				 ptd_format_addr(k->img, ev->ip, a, sizeof(a)));
			comment(k, "%s", line);
			close_all(k, "tracing disabled");
		} else if (k->depth && k->async_pending) {
			char b[200], line[420];

			snprintf(line, sizeof(line), "tracing disabled at %s, enabled at %s",
				 k->async_ip ? ptd_format_addr(k->img, k->async_ip, b, sizeof(b)) : "?",
				 ptd_format_addr(k->img, ev->ip, a, sizeof(a)));
			comment(k, "%s", line);
		} else if (k->depth) {
			comment(k, "tracing enabled at %s", ptd_format_addr(k->img, ev->ip, a, sizeof(a)));
		}
		k->async_pending = false;
		break;
	case PTD_EV_OVERFLOW:
		async_end(k);
		close_all(k, "overflow");
		if (k->tree)
			fprintf(k->tree, "# overflow: packets lost in the trace unit\n");
		break;
	case PTD_EV_ERROR:
		async_end(k);
		close_all(k, "decode error");
		if (k->tree)
			fprintf(k->tree, "# decode error: %s; resynchronising at the next PSB\n",
				pt_errstr(pt_errcode(ev->err)));
		break;
	case PTD_EV_END:
		async_end(k);
		close_all(k, "trace ends");
		break;
	default:
		break;
	}
}

/*
 * Every instruction. Most are in the function of the one before, which is
 * the top frame's, with no call or return to settle: on_insn()'s work comes
 * down to counters then, done here without a call. Anything else goes the
 * long way.
 */
static inline void calls_one(struct ptd_calls *k, const struct pt_insn *in)
{
	const struct ptd_symbol *sym = k->last_sym;
	struct ptd_frame *top;

	if (unlikely(k->pending != PEND_NONE || !k->depth || !sym || in->ip < sym->start ||
		     in->ip >= sym->end)) {
		on_insn(k, in);
		return;
	}
	top = &k->frames[k->depth - 1];
	if (unlikely(top->sym != sym)) {
		on_insn(k, in);
		return;
	}
	k->last_ip = in->ip;
	k->count++;
	top->node->self++;
	note_branch(k, in);
}

void ptd_calls_event(void *calls, const struct ptd_event *ev)
{
	if (ev->type == PTD_EV_INSN)
		calls_one(calls, ev->insn);
	else
		calls_other_event(calls, ev);
}

/* The classes note_branch() acts on. */
#define STACK_CLASSES	(1u << ptic_call | 1u << ptic_far_call | 1u << ptic_return | 1u << ptic_far_return)

/*
 * calls_one() on each, with a run of instructions in the top frame's
 * function counted as a run: it ends at a call or return (the next
 * instruction settles it the long way) or where the function is left.
 */
void ptd_calls_insns(void *calls, const struct pt_insn *v, size_t n)
{
	struct ptd_calls *k = calls;
	const struct pt_insn *in = v, *end = v + n;

	while (in < end) {
		const struct ptd_symbol *sym = k->last_sym;
		struct ptd_frame *top = k->depth ? &k->frames[k->depth - 1] : NULL;

		if (k->pending == PEND_NONE && top && sym && top->sym == sym) {
			u64 lo = sym->start, hi = sym->end, run = 0;

			for (; in < end && in->ip >= lo && in->ip < hi; in++) {
				run++;
				if (unlikely((1u << (in->iclass & 31)) & STACK_CLASSES)) {
					note_branch(k, in++);
					break;
				}
			}
			if (run) {
				k->last_ip = in[-1].ip;
				k->count += run;
				top->node->self += run;
			}
			if (k->pending != PEND_NONE)
				continue;
		}
		if (in < end)
			on_insn(k, in++);
	}
}

void ptd_calls_finish(struct ptd_calls *k)
{
	close_all(k, "trace ends");
	for (struct ptd_fnode *n = first_leaf(&k->root);; n = post_next(n)) {
		n->total = n->self;
		for (struct ptd_fnode *c = n->child; c; c = c->next)
			n->total += c->total;
		if (n == &k->root)
			break;
	}
}

void ptd_stats_call_targets_below(struct ptd_stats *s, const struct ptd_fnode *top)
{
	/* every node, by the parent links (no recursion: see first_leaf()) */
	for (const struct ptd_fnode *n = top->child; n;) {
		if (n->region && n->self && n->name != n->region)
			ptd_stats_move(s, n->region, n->name, n->self);
		if (n->child) {
			n = n->child;
			continue;
		}
		while (n && !n->next)
			n = n->parent == top ? NULL : n->parent;
		if (n)
			n = n->next;
	}
}

void ptd_stats_call_targets(struct ptd_stats *s, const struct ptd_calls *k)
{
	ptd_stats_call_targets_below(s, &k->root);
}

/*
 * The profile with the CPU level taken out: each node of a CPU's part goes
 * to the node of the same stack in @out (made on first use), its count
 * added. Pre-order by the parent links, so a node's parent has its merged
 * node when the node comes.
 */
void ptd_calls_merge_cpus(const struct ptd_calls *k, struct ptd_calls *out)
{
	struct ptd_fnode *root = (struct ptd_fnode *)&k->root;

	ptd_calls_init(out, k->img, NULL);
	out->max_depth = k->max_depth;
	root->merged = &out->root;
	for (struct ptd_fnode *n = root->child; n;) {
		if (n->cpu_node && n->parent == root) {
			n->merged = &out->root;
		} else {
			n->merged = child_node(n->parent->merged, n->name, n->region);
			n->merged->self += n->self;
		}
		if (n->child) {
			n = n->child;
			continue;
		}
		while (n && !n->next)
			n = n->parent == root ? NULL : n->parent;
		if (n)
			n = n->next;
	}
	for (struct ptd_fnode *n = first_leaf(&out->root);; n = post_next(n)) {
		n->total = n->self;
		for (struct ptd_fnode *c = n->child; c; c = c->next)
			n->total += c->total;
		if (n == &out->root)
			break;
	}
}
