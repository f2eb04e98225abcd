// SPDX-License-Identifier: MIT
/*
 * The stack profile as Brendan Gregg's folded format ("a;b;c count": the
 * instructions executed with exactly that call stack, root first) and as a
 * flame graph SVG: one box per stack, its width proportional to the
 * instructions executed in it and below it, the root at the bottom.
 */
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

static int cmp_node(const void *a, const void *b)
{
	const struct ptd_fnode *x = *(const struct ptd_fnode *const *)a;
	const struct ptd_fnode *y = *(const struct ptd_fnode *const *)b;

	return strcmp(x->name, y->name);
}

/* The children of @n sorted by name (a malloc'd array, NULL-terminated). */
static struct ptd_fnode **sorted_children(const struct ptd_fnode *n)
{
	size_t count = 0, i = 0;
	struct ptd_fnode **v;

	for (struct ptd_fnode *c = n->child; c; c = c->next)
		count++;
	v = malloc((count + 1) * sizeof(*v));
	if (!v)
		abort();
	for (struct ptd_fnode *c = n->child; c; c = c->next)
		v[i++] = c;
	v[i] = NULL;
	qsort(v, count, sizeof(*v), cmp_node);
	return v;
}

/* A frame name in the folded format: ';' separates frames and the count
 * follows the last space, so those are escaped too. */
static void folded_name(FILE *out, const char *s)
{
	ptd_escape_write(out, s, " ;");
}

/*
 * A depth-first walk of the call tree in name order, without recursion (a
 * trace can nest hundreds of thousands of calls): the path from the root is
 * an explicit stack, each level with its children sorted when it is entered.
 */
struct level {
	const struct ptd_fnode *node;
	struct ptd_fnode **kids;	/* sorted, NULL-terminated */
	size_t next;			/* the next child to enter */
	u64 x;				/* instructions left of it (the flame graph) */
	u64 kid_x;			/* ... and of its next child */
};

struct walk {
	struct level *v;
	size_t depth, cap;	/* levels on the stack: the node visited last is v[depth - 1] */
	bool started;
};

static void walk_push(struct walk *w, const struct ptd_fnode *n, u64 x)
{
	if (w->depth == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->v = realloc(w->v, w->cap * sizeof(*w->v));
		if (!w->v)
			abort();
	}
	w->v[w->depth++] = (struct level){ n, sorted_children(n), 0, x, x };
}

/* The next node in pre-order (the root first), or NULL at the end. */
static const struct ptd_fnode *walk_next(struct walk *w, const struct ptd_fnode *root)
{
	if (!w->started) {
		w->started = true;
		walk_push(w, root, 0);
		return root;
	}
	while (w->depth) {
		struct level *l = &w->v[w->depth - 1];
		struct ptd_fnode *c = l->kids[l->next];

		if (c) {
			u64 x = l->kid_x;

			l->next++;
			l->kid_x += c->total;
			walk_push(w, c, x);
			return c;
		}
		free(l->kids);
		w->depth--;
	}
	free(w->v);
	return NULL;
}

/* Do not enter the children of the node visited last. */
static void walk_skip(struct walk *w)
{
	struct level *l = &w->v[w->depth - 1];

	while (l->kids[l->next])
		l->next++;
}

/* Stacks deeper than this are written with their middle elided (said in the
 * line): each line stays bounded, so the output grows with the tree, not with
 * the tree times its depth. */
#define FOLDED_MAX_FRAMES	32

static void folded_line(FILE *out, const struct walk *w, u64 count)
{
	size_t first = 1, last = w->depth - 1, frames, keep = FOLDED_MAX_FRAMES / 2;

	/* a per-CPU profile: the CPU first, not a frame */
	if (last >= 1 && w->v[1].node->cpu_node) {
		folded_name(out, w->v[1].node->name);
		if (last > 1)
			fputc(';', out);
		first = 2;
	}
	frames = last + 1 - first;
	for (size_t i = first; i <= last; i++) {
		if (frames > FOLDED_MAX_FRAMES && i == first + keep) {
			fprintf(out, ";[%zu frames elided]", frames - 2 * keep);
			i = last - keep;
			continue;
		}
		if (i > first)
			fputc(';', out);
		folded_name(out, w->v[i].node->name);
	}
	fprintf(out, " %llu\n", count);
}

static size_t tree_depth(const struct ptd_fnode *root)
{
	struct walk w = { 0 };
	size_t d = 0;

	while (walk_next(&w, root))
		d = max(d, w.depth - 1);
	return d;
}

void ptd_write_folded(const struct ptd_calls *k, FILE *out)
{
	struct walk w = { 0 };
	const struct ptd_fnode *n;

	while ((n = walk_next(&w, &k->root)))
		if (n->self)
			folded_line(out, &w, n->self);
}

/* ---------------------------------------------------------------- SVG */

#define SVG_WIDTH	1200.0
#define SVG_PAD		10.0
#define SVG_ROW		16
#define SVG_TOP		40
#define SVG_FONT	12
#define SVG_CHAR	7.0	/* average glyph width of the 12px font */
#define SVG_MAX_LEVELS	512	/* deeper frames are not drawn (said in the image) */

struct svg {
	FILE *out;
	double scale;		/* pixels per instruction */
	double height;
	u64 total;
};

static void xml_escape(FILE *out, const char *s, size_t max_chars)
{
	for (size_t i = 0; s[i] && i < max_chars; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			/* XML 1.0 has no control characters (not even as references)
			 * and wants UTF-8: anything else becomes U+FFFD */
			if ((unsigned char)s[i] < ' ' || (unsigned char)s[i] >= 0x7f)
				fputs("&#xfffd;", out);
			else
				fputc(s[i], out);
			break;
		}
	}
}

/* flamegraph.pl's "hot" palette, seeded by the name so colours are stable. */
static void colour(const char *name, int *r, int *g, int *b)
{
	u32 h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (u8)*p) * 16777619u;
	*r = 205 + (int)(h % 50);
	*g = (int)((h >> 8) % 230);
	*b = (int)((h >> 16) % 55);
}

/* One box; false when it is too narrow to draw (nor are its children). */
static bool svg_node(struct svg *s, const struct ptd_fnode *n, u64 x, size_t depth)
{
	double px = SVG_PAD + (double)x * s->scale, w = (double)n->total * s->scale;
	double y = s->height - SVG_PAD - (double)(depth + 1) * SVG_ROW;
	int r, g, b;
	size_t fit;

	if (w < 0.1 || depth >= SVG_MAX_LEVELS)
		return false;
	colour(n->name, &r, &g, &b);
	fputs("<g><title>", s->out);
	xml_escape(s->out, n->name, SIZE_MAX);
	fprintf(s->out, " (%llu instruction%s, %.2f%%)</title>", n->total,
		n->total == 1 ? "" : "s", 100.0 * (double)n->total / (double)s->total);
	fprintf(s->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>",
		px, y, w, SVG_ROW - 1, r, g, b);
	fit = w > 6 ? (size_t)((w - 6) / SVG_CHAR) : 0;
	if (fit >= 3) {
		size_t len = strlen(n->name);

		fprintf(s->out, "<text x=\"%.1f\" y=\"%.1f\">", px + 3, y + SVG_ROW - 4.5);
		if (len <= fit) {
			xml_escape(s->out, n->name, len);
		} else {
			xml_escape(s->out, n->name, fit - 2);
			fputs("..", s->out);
		}
		fputs("</text>", s->out);
	}
	fputs("</g>\n", s->out);
	return true;
}

void ptd_write_svg(const struct ptd_calls *k, FILE *out, const char *title)
{
	size_t depth = tree_depth(&k->root), levels = min(depth + 1, (size_t)SVG_MAX_LEVELS);
	const struct ptd_fnode *n;
	struct walk w = { 0 };
	struct svg s = {
		.out = out,
		.total = k->root.total,
		.height = SVG_TOP + (double)levels * SVG_ROW + 2 * SVG_PAD,
	};

	s.scale = s.total ? (SVG_WIDTH - 2 * SVG_PAD) / (double)s.total : 0;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", SVG_WIDTH, s.height, SVG_WIDTH, s.height);
	fprintf(out, "<style>text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; } "
		"g:hover rect { stroke: #000; stroke-width: 0.5; }</style>\n", SVG_FONT);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f4ee\"/>\n");
	fprintf(out, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">",
		SVG_WIDTH / 2);
	xml_escape(out, title ? title : "ptdecode flame graph", SIZE_MAX);
	fprintf(out, "</text>\n");
	if (!s.total)
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">no instructions decoded</text>\n",
			SVG_WIDTH / 2, SVG_TOP + SVG_ROW);
	else
		while ((n = walk_next(&w, &k->root)))
			if (!svg_node(&s, n, w.v[w.depth - 1].x, w.depth - 1))
				walk_skip(&w);
	if (depth + 1 > SVG_MAX_LEVELS)
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu deeper levels not drawn</text>\n",
			SVG_WIDTH / 2, SVG_TOP - 4, depth + 1 - SVG_MAX_LEVELS);
	fprintf(out, "</svg>\n");
}
