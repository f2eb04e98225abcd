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

/*
 * A frame name in the folded format: ';' separates frames and the count
 * follows the last space, so those, and bytes that are not printable ASCII
 * (a hostile or damaged symbol table), are written as \xHH.
 */
static void folded_name(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c >= 0x7f || c == ';' || c == '\\')
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

static void folded(const struct ptd_fnode *n, const char **path, size_t depth, FILE *out)
{
	struct ptd_fnode **v;

	if (n->self) {
		for (size_t i = 0; i < depth; i++) {
			if (i)
				fputc(';', out);
			folded_name(out, path[i]);
		}
		fprintf(out, " %llu\n", (unsigned long long)n->self);
	}
	v = sorted_children(n);
	for (size_t i = 0; v[i]; i++) {
		path[depth] = v[i]->name;
		folded(v[i], path, depth + 1, out);
	}
	free(v);
}

static size_t tree_depth(const struct ptd_fnode *n)
{
	size_t d = 0;

	for (const struct ptd_fnode *c = n->child; c; c = c->next)
		d = max(d, tree_depth(c) + 1);
	return d;
}

void ptd_write_folded(const struct ptd_calls *k, FILE *out)
{
	const char **path = calloc(tree_depth(&k->root) + 1, sizeof(*path));

	if (!path)
		abort();
	folded(&k->root, path, 0, out);
	free(path);
}

/* ---------------------------------------------------------------- SVG */

#define SVG_WIDTH	1200.0
#define SVG_PAD		10.0
#define SVG_ROW		16
#define SVG_TOP		40
#define SVG_FONT	12
#define SVG_CHAR	7.0	/* average glyph width of the 12px font */

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

static void svg_node(struct svg *s, const struct ptd_fnode *n, u64 x, size_t depth)
{
	double px = SVG_PAD + (double)x * s->scale, w = (double)n->total * s->scale;
	double y = s->height - SVG_PAD - (double)(depth + 1) * SVG_ROW;
	struct ptd_fnode **v;
	int r, g, b;
	size_t fit;

	if (w < 0.1)
		return;
	colour(n->name, &r, &g, &b);
	fputs("<g><title>", s->out);
	xml_escape(s->out, n->name, SIZE_MAX);
	fprintf(s->out, " (%llu instruction%s, %.2f%%)</title>", (unsigned long long)n->total,
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

	v = sorted_children(n);
	for (size_t i = 0; v[i]; i++) {
		svg_node(s, v[i], x, depth + 1);
		x += v[i]->total;
	}
	free(v);
}

void ptd_write_svg(const struct ptd_calls *k, FILE *out, const char *title)
{
	size_t levels = tree_depth(&k->root) + 1;
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
		svg_node(&s, &k->root, 0, 0);
	fprintf(out, "</svg>\n");
}
