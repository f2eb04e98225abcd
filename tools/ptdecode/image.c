// SPDX-License-Identifier: MIT
/*
 * The traced memory: the kernel ELF's PT_LOAD segments mapped at the load
 * address the trace header reports (the ELF is linked at 0 and relocated at
 * run time; its code is position-independent, so the file's bytes are what
 * ran), sideband images, and the symbols of both.
 */
#define _GNU_SOURCE		/* memfd_create() */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ptdecode.h"

void ptd_image_init(struct ptd_image *img)
{
	memset(img, 0, sizeof(*img));
}

static void drop_sections(struct ptd_image *img)
{
	if (!img->ipt)
		return;
	pt_image_free(img->ipt);
	pt_iscache_free(img->iscache);
	close(img->ipt_fd);
	img->ipt = NULL;
	img->iscache = NULL;
}

void ptd_image_free(struct ptd_image *img)
{
	drop_sections(img);
	for (size_t i = 0; i < img->nregions; i++) {
		free(img->regions[i].bytes);
		free(img->regions[i].name);
	}
	for (size_t i = 0; i < img->cap_strings; i++)
		free(img->strings[i]);
	free(img->regions);
	free(img->spans);
	free(img->by_name);
	free(img->fills);
	free(img->syms);
	free(img->strings);
	memset(img, 0, sizeof(*img));
}

static size_t name_hash(const char *s)
{
	size_t h = 14695981039346656037ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The slot holding @s, or the empty one where it goes (open addressing). */
static char **name_slot(char **table, size_t cap, const char *s)
{
	size_t i = name_hash(s) & (cap - 1);

	while (table[i] && strcmp(table[i], s))
		i = (i + 1) & (cap - 1);
	return &table[i];
}

/*
 * Names are interned so frames and counters compare them by pointer: a hash
 * table, so a sideband with a hundred thousand names loads in linear time.
 */
const char *ptd_intern(struct ptd_image *img, const char *s)
{
	char **slot;

	if (2 * (img->nstrings + 1) > img->cap_strings) {
		size_t cap = img->cap_strings ? 2 * img->cap_strings : 1024;
		char **table = calloc(cap, sizeof(*table));

		if (!table)
			abort();
		for (size_t i = 0; i < img->cap_strings; i++)
			if (img->strings[i])
				*name_slot(table, cap, img->strings[i]) = img->strings[i];
		free(img->strings);
		img->strings = table;
		img->cap_strings = cap;
	}
	slot = name_slot(img->strings, img->cap_strings, s);
	if (!*slot) {
		*slot = strdup(s);
		if (!*slot)
			abort();
		img->nstrings++;
	}
	return *slot;
}

/* A region of @size bytes at @vaddr of which the first @held are @bytes
 * (copied; NULL: zeros) and the rest is no code, not allocated. */
static int add_region(struct ptd_image *img, const char *name, u64 vaddr, const void *bytes,
		      u64 held, u64 size)
{
	struct ptd_region *r;
	char whole[160];

	if (!size)
		return -1;
	img->regions = ptd_grow(img->regions, &img->cap_regions, img->nregions, sizeof(*img->regions));
	r = &img->regions[img->nregions++];
	r->vaddr = vaddr;
	r->size = size;
	r->held = held;
	r->bytes = held ? calloc(1, held) : NULL;
	r->name = strdup(name);
	if ((held && !r->bytes) || !r->name)
		abort();
	if (bytes && held)
		memcpy(r->bytes, bytes, held);
	/* a module's name stands for it ("Fat+0x1a2d"); generic sideband
	 * ("firmware" pages) is bracketed as no function's */
	if (!strcmp(name, "firmware") || !strcmp(name, "sideband"))
		snprintf(whole, sizeof(whole), "[%s]", name);
	else
		snprintf(whole, sizeof(whole), "%s", name);
	r->whole = (struct ptd_symbol){ vaddr, vaddr + size, ptd_intern(img, whole) };
	img->finished = false;
	/* the sections are of the old regions (and the caller may still
	 * write this one's bytes) */
	drop_sections(img);
	return 0;
}

int ptd_image_add_region(struct ptd_image *img, const char *name, u64 vaddr, const void *bytes,
			 u64 size)
{
	return add_region(img, name, vaddr, bytes, size, size);
}

void ptd_image_add_symbol(struct ptd_image *img, const char *name, u64 start, u64 size)
{
	if (img->nsyms == img->cap_syms) {
		img->cap_syms = img->cap_syms ? img->cap_syms * 2 : 256;
		img->syms = realloc(img->syms, img->cap_syms * sizeof(*img->syms));
		if (!img->syms)
			abort();
	}
	/* end == start marks "size unknown" until ptd_image_finish(). */
	img->syms[img->nsyms++] = (struct ptd_symbol){ start, start + size, ptd_intern(img, name) };
	img->finished = false;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ptd_symbol *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* At one address, a sized symbol (a function) before a label. */
	if ((x->end > x->start) != (y->end > y->start))
		return x->end > x->start ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* ---------------------------------------------------------------- spans */

/*
 * Where each address's bytes come from, for lookups in log time: a region
 * per sideband record made the lookups (and ptd_image_read()) a search of
 * them all, quadratic in the records. The spans are what the first region
 * mapped at each address covers (the one a search in mapping order finds):
 * a sweep over the regions' starts and ends, the lowest region index among
 * those open winning (a heap of them, stale entries dropped when on top).
 */
struct edge {
	u64 at;		/* a region's first address, or the one after its last */
	size_t region;
	bool start;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	for (; i && h[(i - 1) / 2] > v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--*n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/* [@lo, @last] is @region's: a span, or the previous one extended. */
static void add_span(struct ptd_image *img, size_t *cap, u64 lo, u64 last, size_t region)
{
	struct ptd_span *p = img->nspans ? &img->spans[img->nspans - 1] : NULL;

	if (p && p->region == region && p->last + 1 == lo) {
		p->last = last;
		return;
	}
	img->spans = ptd_grow(img->spans, cap, img->nspans, sizeof(*img->spans));
	img->spans[img->nspans++] = (struct ptd_span){ lo, last, region };
}

/* The edges of a region's bytes (its zero fill is no code: not in the
 * spans); bytes that wrap past the top of the address space are two
 * stretches, [vaddr, top] and [0, their last]. */
static size_t region_edges(const struct ptd_region *r, size_t i, struct edge *e)
{
	u64 last = r->vaddr + (r->held - 1);
	size_t n = 0;

	if (!r->held)
		return 0;

	e[n++] = (struct edge){ r->vaddr, i, true };
	if (last < r->vaddr)
		e[n++] = (struct edge){ 0, i, true };
	if (last != ~0ull)
		e[n++] = (struct edge){ last + 1, i, false };
	return n;
}

static int cmp_region_name(const void *a, const void *b, void *ctx)
{
	const struct ptd_image *img = ctx;

	return strcmp(img->regions[*(const size_t *)a].name, img->regions[*(const size_t *)b].name);
}

/* The spans and @by_name of the regions mapped so far, unless they are made. */
static void make_spans(struct ptd_image *img)
{
	size_t n = img->nregions, ne = 0, nh = 0, cap = 0, fcap = 0;
	struct edge *e;
	size_t *heap;
	bool *open;

	if (img->spans_of == n && (img->spans || !n))
		return;
	e = malloc((3 * n + 1) * sizeof(*e));
	heap = malloc((2 * n + 1) * sizeof(*heap));
	open = calloc(n + 1, sizeof(*open));
	free(img->by_name);
	img->by_name = malloc((n + 1) * sizeof(*img->by_name));
	if (!e || !heap || !open || !img->by_name)
		abort();
	free(img->spans);
	img->spans = NULL;
	img->nspans = 0;
	free(img->fills);
	img->fills = NULL;
	img->nfills = 0;
	for (size_t i = 0; i < n; i++) {
		ne += region_edges(&img->regions[i], i, e + ne);
		if (img->regions[i].held < img->regions[i].size) {
			img->fills = ptd_grow(img->fills, &fcap, img->nfills, sizeof(*img->fills));
			img->fills[img->nfills++] = i;
		}
	}
	qsort(e, ne, sizeof(*e), cmp_edge);
	for (size_t i = 0; i < ne;) {
		u64 at = e[i].at;

		for (; i < ne && e[i].at == at; i++) {
			open[e[i].region] = e[i].start;
			if (e[i].start)
				heap_push(heap, &nh, e[i].region);
		}
		while (nh && !open[heap[0]])
			heap_pop(heap, &nh);
		if (nh)
			add_span(img, &cap, at, i < ne ? e[i].at - 1 : ~0ull, heap[0]);
	}
	for (size_t i = 0; i < n; i++)
		img->by_name[i] = i;
	qsort_r(img->by_name, n, sizeof(*img->by_name), cmp_region_name, img);
	img->spans_of = n;
	free(e);
	free(heap);
	free(open);
}

_Static_assert(offsetof(struct ptd_span, lo) == 0 && offsetof(struct ptd_symbol, start) == 0,
	       "upto() reads the start at offset 0");

/* How many of the @n elements of @v (@size bytes each, sorted by the u64
 * they start with: a span's or a symbol's start) start at or below @addr. */
static size_t upto(const void *v, size_t n, size_t size, u64 addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		u64 start;

		memcpy(&start, (const u8 *)v + mid * size, sizeof(start));
		if (start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The span holding @addr, or NULL. */
static const struct ptd_span *span_of(const struct ptd_image *img, u64 addr)
{
	size_t lo = upto(img->spans, img->nspans, sizeof(*img->spans), addr);

	return lo && addr <= img->spans[lo - 1].last ? &img->spans[lo - 1] : NULL;
}

/* The region whose bytes are read at @addr (the first mapped there; as
 * ptd_image_read()), else the first whose zero fill spans it: through the
 * spans and the few regions with a fill when they are made, else a search in
 * mapping order. */
static const struct ptd_region *region_of(const struct ptd_image *img, u64 addr)
{
	const struct ptd_region *fill = NULL;

	if (img->spans_of == img->nregions) {
		const struct ptd_span *s = span_of(img, addr);

		if (s)
			return &img->regions[s->region];
		for (size_t i = 0; i < img->nfills; i++) {
			const struct ptd_region *r = &img->regions[img->fills[i]];

			if (addr - r->vaddr < r->size)
				return r;
		}
		return NULL;
	}
	for (size_t i = 0; i < img->nregions; i++) {
		const struct ptd_region *r = &img->regions[i];

		if (addr - r->vaddr < r->held)
			return r;
		if (!fill && addr - r->vaddr < r->size)
			fill = r;
	}
	return fill;
}

bool ptd_image_has_region(const struct ptd_image *img, const char *name)
{
	size_t lo = 0, hi;

	if (!img)
		return false;
	if (img->spans_of != img->nregions) {
		for (size_t i = 0; i < img->nregions; i++)
			if (!strcmp(img->regions[i].name, name))
				return true;
		return false;
	}
	for (hi = img->nregions; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(img->regions[img->by_name[mid]].name, name);

		if (!d)
			return true;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void ptd_image_finish(struct ptd_image *img)
{
	size_t n = 0;

	make_spans(img);
	if (img->nsyms)
		qsort(img->syms, img->nsyms, sizeof(*img->syms), cmp_sym);
	for (size_t i = 0; i < img->nsyms; i++)
		if (!n || img->syms[i].start != img->syms[n - 1].start)
			img->syms[n++] = img->syms[i];
	img->nsyms = n;
	for (size_t i = 0; i < n; i++) {
		struct ptd_symbol *s = &img->syms[i];
		const struct ptd_region *r;

		if (s->end > s->start)
			continue;
		if (i + 1 < n)
			s->end = img->syms[i + 1].start;
		r = region_of(img, s->start);
		if (r && (s->end <= s->start || s->end > r->vaddr + r->size))
			s->end = r->vaddr + r->size;
		if (s->end <= s->start)
			s->end = s->start + 1;
	}
	img->finished = true;
}

/* How many symbols start at or below @addr (the last of them may cover it). */
static size_t syms_upto(const struct ptd_image *img, u64 addr)
{
	return upto(img->syms, img->nsyms, sizeof(*img->syms), addr);
}

const struct ptd_symbol *ptd_image_lookup(const struct ptd_image *img, u64 addr)
{
	size_t lo = syms_upto(img, addr);
	const struct ptd_region *r;

	if (lo && addr < img->syms[lo - 1].end)
		return &img->syms[lo - 1];
	r = region_of(img, addr);
	return r ? &r->whole : NULL;
}

const struct ptd_symbol *ptd_image_lookup_cached(const struct ptd_image *img, struct ptd_sym_cache *c,
						 u64 addr)
{
	size_t slot = (size_t)(addr >> 4) & (PTD_SYM_CACHE - 1), lo;
	const struct ptd_symbol *s;

	if (addr - c->e[slot].lo < c->e[slot].hi - c->e[slot].lo)
		return c->e[slot].sym;
	lo = syms_upto(img, addr);
	if (!lo || addr >= img->syms[lo - 1].end)
		return ptd_image_lookup(img, addr);	/* no function: not cached */
	s = &img->syms[lo - 1];
	/* past the next symbol's start the lookup answers that one */
	c->e[slot].lo = s->start;
	c->e[slot].hi = lo < img->nsyms ? min(s->end, img->syms[lo].start) : s->end;
	c->e[slot].sym = s;
	return s;
}

int ptd_image_read(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	const struct ptd_region *r = region_of(ctx, ip);
	u64 n;

	/* a segment's zero fill is no code: what ptd_image_sections() gives libipt */
	if (!r || ip - r->vaddr >= r->held)
		return -pte_nomap;
	n = min((u64)size, r->held - (ip - r->vaddr));
	memcpy(buf, r->bytes + (ip - r->vaddr), n);
	return (int)n;
}

/* Write all of @buf at @off, through short writes. */
static bool write_all(int fd, const u8 *buf, u64 size, u64 off)
{
	while (size) {
		ssize_t n = pwrite(fd, buf, min(size, (u64)(1 << 30)), (off_t)off);

		if (n <= 0)
			return false;
		buf += n;
		size -= (u64)n;
		off += (u64)n;
	}
	return true;
}

/* A region's bytes at @off of a file that reads zeros: the chunks that are
 * all zeros stay holes, not memory. */
static bool write_region(int fd, const struct ptd_region *r, u64 off)
{
	static const u8 zeros[65536];

	for (u64 at = 0; at < r->held; at += sizeof(zeros)) {
		u64 n = min(r->held - at, (u64)sizeof(zeros));

		if (memcmp(r->bytes + at, zeros, n) && !write_all(fd, r->bytes + at, n, off + at))
			return false;
	}
	return true;
}

/*
 * libipt reads file sections from a mapping it caches per decoder: a lookup
 * and a copy per instruction. Through the callback each instruction costs a
 * failed section lookup, a second one inside pt_image_read() and then the
 * callback: about 30% more decode time. libipt takes sections from
 * files only, so the regions go into a memory file it opens by its /proc
 * name. The section cache keeps them mapped while the decoder moves between
 * them (the kernel and a firmware image), and across segments.
 */
struct pt_image *ptd_image_sections(struct ptd_image *img)
{
	char path[64];
	u64 *offs, off = 0;
	int fd;

	/*
	 * libipt keeps its sections in a list: adding one compares it with
	 * each (40,000 sideband records took 41 s), and a read outside the
	 * section the decoder has cached walks the list. Past a thousand
	 * regions, ptd_image_read() serves the decoder: its lookup is a
	 * binary search of the spans.
	 */
	if (img->ipt || !img->nregions || img->nregions > PTD_MAX_SECTIONS)
		return img->ipt;
	fd = memfd_create("ptdecode-image", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	offs = calloc(img->nregions, sizeof(*offs));
	if (!offs)
		abort();
	img->ipt_fd = fd;
	img->iscache = pt_iscache_alloc(NULL);
	img->ipt = pt_image_alloc(NULL);
	if (!img->iscache || !img->ipt || pt_iscache_set_limit(img->iscache, ~0ull) < 0)
		goto fail;
	for (size_t i = 0; i < img->nregions; i++) {
		offs[i] = off;
		off += img->regions[i].held;
	}
	if (ftruncate(fd, (off_t)off))
		goto fail;
	for (size_t i = 0; i < img->nregions; i++)
		if (!write_region(fd, &img->regions[i], offs[i]))
			goto fail;
	/* A section added later hides the ones below it; in ptd_image_read()
	 * the first region wins: add them last to first. */
	for (size_t i = img->nregions; i-- > 0;) {
		const struct ptd_region *r = &img->regions[i];
		int isid;

		if (!r->held)
			continue;	/* all zero fill: no section */
		isid = pt_iscache_add_file(img->iscache, path, offs[i], r->held, r->vaddr);
		if (isid < 0 || pt_image_add_cached(img->ipt, img->iscache, isid, NULL) < 0)
			goto fail;
	}
	free(offs);
	return img->ipt;

fail:
	free(offs);
	pt_image_free(img->ipt);
	pt_iscache_free(img->iscache);
	close(fd);
	img->ipt = NULL;
	img->iscache = NULL;
	return NULL;
}

size_t ptd_format_sym(const struct ptd_symbol *s, u64 addr, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[256], digits[16];
	size_t n = 0, d = 0;

	if (!size)
		return 0;
	if (s) {
		/* escaped: names come from the input (ptd_escape()) */
		n = ptd_escape_into(tmp, sizeof(tmp) - 20, s->name, NULL, true);
		tmp[n++] = '+';
		addr -= s->start;
	}
	do {
		digits[d++] = hex[addr & 0xf];
		addr >>= 4;
	} while (addr);
	tmp[n++] = '0';
	tmp[n++] = 'x';
	while (d)
		tmp[n++] = digits[--d];
	n = min(n, size - 1);	/* cut as snprintf() cuts */
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return n;
}

const char *ptd_format_addr(const struct ptd_image *img, u64 addr, char *buf, size_t size)
{
	ptd_format_sym(ptd_image_lookup(img, addr), addr, buf, size);
	return buf;
}

/*
 * The first region that holds a byte of region @i, other than @i, in the
 * stretch [@lo, @last] (@i covers it): the spans there are @i's, or another
 * region's, which is mapped before @i and wins. Adjacent spans of one region
 * are one: at most two looked at.
 */
static const struct ptd_region *overlapped(const struct ptd_image *img, size_t i, u64 lo, u64 last)
{
	for (const struct ptd_span *s = span_of(img, lo); s && s < img->spans + img->nspans && s->lo <= last; s++) {
		if (s->region != i)
			return &img->regions[s->region];
		if (s->last == ~0ull)
			break;
	}
	return NULL;
}

/*
 * The first image mapped at an address is the one read there: an overlap is
 * said, not settled silently; once per image, naming the region whose bytes
 * are decoded in the first stretch it loses (each image compared with each
 * made 40,000 records quadratic).
 */
static void check_overlaps(struct ptd_image *img, struct ptd_container *c, size_t first,
			   const struct ptd_record *const *rec)
{
	make_spans(img);
	for (size_t i = first; i < img->nregions; i++) {
		const struct ptd_region *r = &img->regions[i], *o;
		u64 last = r->vaddr + (r->size - 1);

		o = overlapped(img, i, r->vaddr, last < r->vaddr ? ~0ull : last);
		if (!o && last < r->vaddr)
			o = overlapped(img, i, 0, last);
		if (o)
			ptd_diag_add(&c->diags, rec[i - first]->seq, rec[i - first]->offset,
				     "sideband image %.32s at 0x%llx..0x%llx overlaps %s at 0x%llx..0x%llx: the bytes of %s are decoded there",
				     r->name, r->vaddr, r->vaddr + r->size, o->name, o->vaddr,
				     o->vaddr + o->held, o->name);
	}
}

void ptd_image_add_sideband(struct ptd_image *img, struct ptd_container *c)
{
	size_t first = img->nregions, cap = 0;
	const struct ptd_record **rec = NULL;	/* the record of each region added */

	for (size_t i = 0; i < c->nrecs; i++) {
		const struct ptd_record *r = &c->recs[i];
		const struct tpz_sideband *sb = &r->body.sideband;

		if (r->type != TPZ_REC_SIDEBAND)
			continue;
		if (sb->kind == TPZ_SB_IMAGE) {
			if (ptd_image_add_region(img, sb->name[0] ? sb->name : "sideband", sb->vaddr,
						 r->payload, r->payload_size))
				continue;
			rec = ptd_grow(rec, &cap, img->nregions - 1 - first, sizeof(*rec));
			rec[img->nregions - 1 - first] = r;
		} else if (sb->kind == TPZ_SB_SYMBOLS) {
			const char *names = (const char *)r->payload + (size_t)sb->count * sizeof(struct tpz_sym);

			for (u32 k = 0; k < sb->count; k++) {
				struct tpz_sym s;

				memcpy(&s, r->payload + k * sizeof(s), sizeof(s));
				ptd_image_add_symbol(img, names + s.name, sb->vaddr + s.addr, s.size);
			}
		}
	}
	if (img->nregions > first)
		check_overlaps(img, c, first, rec);
	free(rec);
}

/* ---------------------------------------------------------------- ELF */

/* The largest segment mapped: a kernel or firmware image, not a size field
 * a damaged file makes up (only its file part is allocated, but an extent
 * of a terabyte is no image). */
#define PTD_MAX_SEGMENT	(1ULL << 30)

static bool read_build_id_note(const u8 *note, size_t avail, struct ptd_image *img)
{
	u32 namesz, descsz, type;
	size_t desc_off;

	if (avail < 12)
		return false;
	memcpy(&namesz, note, 4);
	memcpy(&descsz, note + 4, 4);
	memcpy(&type, note + 8, 4);
	desc_off = 12 + ALIGN_UP((size_t)namesz, 4);
	/* every size against what the file holds before any byte is read */
	if (type != NT_GNU_BUILD_ID || namesz != 4 || desc_off > avail ||
	    descsz > avail - desc_off || descsz > sizeof(img->elf_build_id) ||
	    memcmp(note + 12, "GNU", 4))
		return false;
	memcpy(img->elf_build_id, note + desc_off, descsz);
	img->elf_build_id_len = descsz;
	return true;
}

static void elf_build_id(Elf *e, const u8 *file, size_t file_size, struct ptd_image *img,
			 u64 note_sym)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || sh.sh_offset > file_size)
			continue;
		if (read_build_id_note(file + sh.sh_offset, min(sh.sh_size, file_size - sh.sh_offset), img))
			return;
	}
	/* topaz's linker script folds the note into .rodata and marks it with
	 * __build_id_note: read it through the section that holds the symbol. */
	if (!note_sym)
		return;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    note_sym - sh.sh_addr >= sh.sh_size)
			continue;
		u64 off = sh.sh_offset + (note_sym - sh.sh_addr);

		if (off < file_size)
			read_build_id_note(file + off, file_size - off, img);
		return;
	}
}

/* The ELF file being read: its checks and its messages. */
struct elf_in {
	Elf *e;
	const char *path;
	u64 size;
	struct ptd_diags *diags;
	const char *base;	/* the regions' name: the file's */
};

static bool wanted_symbol(Elf *e, const GElf_Sym *sym, const char *name)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!name || !*name || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return false;
	if (GELF_ST_TYPE(sym->st_info) == STT_FUNC)
		return true;
	/* Assembly entry points are NOTYPE labels in code; linker markers
	 * (__text_start) and local labels are not functions. */
	if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE || name[0] == '.' || name[0] == '$' ||
	    !strncmp(name, "__", 2))
		return false;
	scn = elf_getscn(e, sym->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* @scn's header (@what: "symbol table", "string table"), its bytes within the
 * file; false (said why) when not. */
static bool section_in_file(const struct elf_in *in, Elf_Scn *scn, const char *what, GElf_Shdr *sh)
{
	if (!gelf_getshdr(scn, sh)) {
		ptd_diag_add(in->diags, -1, 0, "%s: the %s (section %zu) has no readable header (libelf: %s): no functions read",
			     in->path, what, elf_ndxscn(scn), elf_errmsg(-1));
		return false;
	}
	if (sh->sh_offset > in->size || sh->sh_size > in->size - sh->sh_offset) {
		ptd_diag_add(in->diags, -1, 0,
			     "%s: the %s (section %zu) lies outside the file: %llu bytes at offset 0x%llx, the file has %llu: no functions read",
			     in->path, what, elf_ndxscn(scn), (unsigned long long)sh->sh_size,
			     (unsigned long long)sh->sh_offset, in->size);
		return false;
	}
	return true;
}

/* The name at @off of the string table @strs; NULL when @off is past it or
 * the name is not ended by a NUL inside it. */
static const char *strtab_name(const Elf_Data *strs, u64 off)
{
	const char *s = strs->d_buf;

	if (off >= strs->d_size || !memchr(s + off, '\0', strs->d_size - off))
		return NULL;
	return s + off;
}

/* The damaged symbols of a table, counted by kind and said once each. */
enum { SYM_BAD_NAME, SYM_BAD_SECTION, SYM_WRAPS, SYM_OUTSIDE, SYM_NKINDS };

static const char *const sym_damage[SYM_NKINDS] = {
	[SYM_BAD_NAME] = "have a name (st_name) that is no string of the string table",
	[SYM_BAD_SECTION] = "are in a section (st_shndx) the file does not have",
	[SYM_WRAPS] = "run past the end of the address space (st_value + st_size)",
	[SYM_OUTSIDE] = "lie outside the module's image (st_value + st_size)",
};

/*
 * @symtab and the string table it links, every offset, size and link checked
 * against the file before use: the symbols and the names, or false (said
 * why) when no name can be read.
 */
static bool open_symtab(const struct elf_in *in, Elf_Scn *symtab, Elf_Data **syms, Elf_Data **strs)
{
	size_t ndx = elf_ndxscn(symtab), shnum = 0, ent = gelf_fsize(in->e, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *strscn = NULL;
	GElf_Shdr sh, ss;

	if (!section_in_file(in, symtab, "symbol table", &sh))
		return false;
	/* libelf reads entries of the ELF class's size whatever sh_entsize says */
	if (sh.sh_entsize != ent)
		ptd_diag_add(in->diags, -1, 0,
			     "%s: the symbol table (section %zu) gives %llu-byte entries: read as the %zu-byte entries of its ELF class",
			     in->path, ndx, (unsigned long long)sh.sh_entsize, ent);
	if (sh.sh_size % ent)
		ptd_diag_add(in->diags, -1, 0,
			     "%s: the symbol table (section %zu) is %llu bytes, not a whole number of %zu-byte entries: its last %llu bytes are not read",
			     in->path, ndx, (unsigned long long)sh.sh_size, ent,
			     (unsigned long long)(sh.sh_size % ent));
	if (sh.sh_size < ent)
		return false;	/* not one entry: nothing to read */
	if (!elf_getshdrnum(in->e, &shnum) && sh.sh_link && sh.sh_link < shnum)
		strscn = elf_getscn(in->e, sh.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &ss) || ss.sh_type != SHT_STRTAB) {
		ptd_diag_add(in->diags, -1, 0,
			     "%s: the symbol table (section %zu) links section %u, which is not a string table (the file has %zu sections): no functions read",
			     in->path, ndx, (unsigned)sh.sh_link, shnum);
		return false;
	}
	if (!section_in_file(in, strscn, "string table", &ss))
		return false;
	/* the whole entries only (libelf refuses a section with a part one) */
	*syms = elf_getdata_rawchunk(in->e, (int64_t)sh.sh_offset, sh.sh_size - sh.sh_size % ent, ELF_T_SYM);
	*strs = elf_getdata(strscn, NULL);
	if (!*syms || !*strs) {
		ptd_diag_add(in->diags, -1, 0, "%s: the symbol table (section %zu) cannot be read (libelf: %s): no functions read",
			     in->path, ndx, elf_errmsg(-1));
		return false;
	}
	if (!(*strs)->d_size || ((const char *)(*strs)->d_buf)[(*strs)->d_size - 1])
		ptd_diag_add(in->diags, -1, 0,
			     "%s: the string table (section %u, %zu bytes) does not end with a NUL: a name that runs to its end is not read",
			     in->path, (unsigned)sh.sh_link, (*strs)->d_size);
	return true;
}

/*
 * The functions of @symtab at @load + their address, named "@prefix!name"
 * when @prefix (a module's symbols, each within the module's @extent bytes);
 * returns __build_id_note's address. A damaged table or symbol is said.
 */
static u64 add_elf_symbols(struct ptd_image *img, const struct elf_in *in, Elf_Scn *symtab, u64 load,
			   const char *prefix, u64 extent)
{
	size_t ent = gelf_fsize(in->e, ELF_T_SYM, 1, EV_CURRENT), shnum = 0;
	size_t count[SYM_NKINDS] = { 0 }, first[SYM_NKINDS] = { 0 };
	Elf_Data *syms, *strs;
	u64 note_sym = 0;
	char full[256];

	if (!open_symtab(in, symtab, &syms, &strs))
		return 0;
	elf_getshdrnum(in->e, &shnum);
	for (size_t i = 0; i < syms->d_size / ent; i++) {
		GElf_Sym sym;
		const char *name;
		int bad = -1;

		if (!gelf_getsym(syms, (int)i, &sym))
			continue;	/* not past d_size: libelf has it */
		name = strtab_name(strs, sym.st_name);
		if (!name)
			bad = SYM_BAD_NAME;
		else if (sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE && sym.st_shndx >= shnum)
			bad = SYM_BAD_SECTION;
		else if (!strcmp(name, "__build_id_note"))
			note_sym = sym.st_value;
		if (bad < 0 && !wanted_symbol(in->e, &sym, name))
			continue;
		if (bad < 0 && prefix && (sym.st_value >= extent || sym.st_size > extent - sym.st_value))
			bad = SYM_OUTSIDE;
		else if (bad < 0 && (sym.st_value > ~0ULL - load || sym.st_size > ~0ULL - load - sym.st_value))
			bad = SYM_WRAPS;
		if (bad >= 0) {
			if (!count[bad]++)
				first[bad] = i;
			continue;
		}
		if (prefix) {
			snprintf(full, sizeof(full), "%s!%s", prefix, name);
			name = full;
		}
		ptd_image_add_symbol(img, name, load + sym.st_value, sym.st_size);
	}
	for (int k = 0; k < SYM_NKINDS; k++)
		if (count[k])
			ptd_diag_add(in->diags, -1, 0,
				     "%s: %zu symbols of the symbol table (section %zu) %s, the first symbol %zu: not read",
				     in->path, count[k], elf_ndxscn(symtab), sym_damage[k], first[k]);
	return note_sym;
}

/* @e's symbol table (.symtab), else its dynamic one when @dynsym; NULL when
 * it has neither. */
static Elf_Scn *find_symtab(Elf *e, bool dynsym)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dyn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dyn = scn;
	}
	return symtab ? symtab : dynsym ? dyn : NULL;
}

int ptd_open_regular(const char *path, u64 *size, char *why, size_t why_size)
{
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO opens at once (no writer waited for), then is refused */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;	/* the caller tells "none" (ENOENT) from a problem */

		snprintf(why, why_size, "%s: cannot open: %s", path, strerror(err));
		errno = err;
		return -1;
	}
	if (fstat(fd, &st)) {
		snprintf(why, why_size, "%s: cannot stat: %s", path, strerror(errno));
		st.st_mode = 0;
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "%s: not a regular file (%s): not read", path,
			 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" :
			 S_ISSOCK(st.st_mode) ? "a socket" : "a device");
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if (size)
		*size = (u64)st.st_size;
	return fd;
}

int ptd_module_file(const char *dir, const char *name, char *path, size_t path_size, u64 *size,
		    char *why, size_t why_size)
{
	static const char *const exts[] = { ".debug", ".so", ".elf" };
	/* NAME#2: a second image of NAME (loaded twice), NAME's symbols */
	int len = (int)strcspn(name, "#");

	why[0] = '\0';
	/* a name is the trace's data, never a path: "../x" or "a/b" would
	 * read outside DIR (a link in DIR is followed: DIR is the user's) */
	if (!len || memchr(name, '/', (size_t)len) || (len == 1 && name[0] == '.') ||
	    (len == 2 && !strncmp(name, "..", 2))) {
		snprintf(why, why_size, "module name \"%s\" is not a file name: not looked up in --symbols %s",
			 name, dir);
		return -1;
	}
	for (size_t k = 0; k < sizeof(exts) / sizeof(exts[0]); k++) {
		int fd;

		if ((size_t)snprintf(path, path_size, "%s/%.*s%s", dir, len, name, exts[k]) >= path_size) {
			snprintf(why, why_size, "--symbols %s: the path for module %s is too long: not looked up",
				 dir, name);
			return -1;
		}
		fd = ptd_open_regular(path, size, why, why_size);
		if (fd >= 0 || errno != ENOENT)
			return fd;
		why[0] = '\0';	/* none of that name: the next */
	}
	return -1;
}

/*
 * Map @what @i (a segment or a section): its @held file bytes at @vaddr of
 * its @size in memory. Headers that name the same file bytes for each of
 * thousands of segments would hold the file thousands of times: past twice
 * the file's size in all (@total so far), said and not mapped.
 */
static bool map_file_part(struct ptd_image *img, const struct elf_in *in, const char *what, size_t i,
			  u64 vaddr, const u8 *bytes, u64 held, u64 size, u64 *total)
{
	if (held > 2 * in->size - *total) {
		ptd_diag_add(in->diags, -1, 0,
			     "%s: %s %zu would hold %llu file bytes more, past twice the file's %llu bytes in all: not mapped",
			     in->path, what, i, (unsigned long long)held, in->size);
		return false;
	}
	*total += held;
	add_region(img, in->base, vaddr, bytes, held, size);
	return true;
}

int ptd_image_add_elf(struct ptd_image *img, const char *path, u64 load, struct ptd_diags *diags)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t phnum = 0, file_size = 0, mapped = 0;
	struct elf_in in = { .path = path, .diags = diags, .base = base };
	u64 held = 0;
	Elf_Scn *scn = NULL, *symtab;
	u64 note_sym = 0;
	const u8 *file;
	char why[600];
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		ptd_diag_add(diags, -1, 0, "%s: libelf: %s", path, elf_errmsg(-1));
		return -1;
	}
	fd = ptd_open_regular(path, NULL, why, sizeof(why));
	if (fd < 0) {
		ptd_diag_add(diags, -1, 0, "%s", why);
		return -1;
	}
	in.e = elf_begin(fd, ELF_C_READ, NULL);
	file = in.e ? (const u8 *)elf_rawfile(in.e, &file_size) : NULL;
	if (!in.e || elf_kind(in.e) != ELF_K_ELF || !file) {
		ptd_diag_add(diags, -1, 0, "%s: not an ELF file", path);
		if (in.e)
			elf_end(in.e);
		close(fd);
		return -1;
	}
	in.size = file_size;

	/* The loaded image: PT_LOAD segments, or allocated sections of an object
	 * without program headers. */
	if (elf_getphdrnum(in.e, &phnum))
		phnum = 0;
	/* a count past what the file holds (PN_XNUM's comes from a section
	 * header) would be billions of failed lookups */
	if (phnum > file_size / gelf_fsize(in.e, ELF_T_PHDR, 1, EV_CURRENT)) {
		ptd_diag_add(diags, -1, 0, "%s: %zu program headers declared, more than the file's %zu bytes hold: no segment mapped",
			     path, phnum, file_size);
		phnum = 0;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(in.e, (int)i, &ph)) {
			/* libelf reads the table whole: none of it can be read */
			ptd_diag_add(diags, -1, 0, "%s: the program headers cannot be read (libelf: %s): no segment mapped",
				     path, elf_errmsg(-1));
			break;
		}
		if (ph.p_type != PT_LOAD || !ph.p_memsz)
			continue;
		if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset) {
			ptd_diag_add(diags, -1, 0, "%s: segment %zu lies outside the file", path, i);
			continue;
		}
		if (ph.p_filesz > ph.p_memsz) {
			ptd_diag_add(diags, -1, 0,
				     "%s: segment %zu has more bytes in the file (%llu) than in memory (%llu): not mapped",
				     path, i, (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_memsz);
			continue;
		}
		if (ph.p_memsz > PTD_MAX_SEGMENT || load + ph.p_vaddr + ph.p_memsz < load + ph.p_vaddr) {
			ptd_diag_add(diags, -1, 0, "%s: segment %zu is %llu bytes at 0x%llx: not mapped",
				     path, i, (unsigned long long)ph.p_memsz,
				     load + ph.p_vaddr);
			continue;
		}
		/* the file's bytes only: the rest (.bss) is what the header
		 * claims, not allocated */
		mapped += map_file_part(img, &in, "segment", i, load + ph.p_vaddr, file + ph.p_offset,
					ph.p_filesz, ph.p_memsz, &held);
	}
	while ((scn = elf_nextscn(in.e, scn))) {
		GElf_Shdr sh;

		if (!phnum && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) &&
		    sh.sh_type == SHT_PROGBITS && sh.sh_size && sh.sh_offset <= file_size &&
		    sh.sh_size <= file_size - sh.sh_offset) {
			mapped += map_file_part(img, &in, "section", elf_ndxscn(scn), load + sh.sh_addr,
						file + sh.sh_offset, sh.sh_size, sh.sh_size, &held);
		}
	}
	if (!mapped)
		ptd_diag_add(diags, -1, 0, "%s: no loadable code", path);

	symtab = find_symtab(in.e, true);
	if (!symtab)
		ptd_diag_add(diags, -1, 0, "%s: no symbol table: functions will show as [%s]", path, base);
	else
		note_sym = add_elf_symbols(img, &in, symtab, load, NULL, 0);
	elf_build_id(in.e, file, file_size, img, note_sym);
	elf_end(in.e);
	close(fd);
	return 0;
}

/* The bytes module @i of @img spans: its image may be split into records
 * that follow each other. */
static u64 module_extent(const struct ptd_image *img, size_t i)
{
	u64 end = img->regions[i].vaddr + img->regions[i].size;

	for (bool grew = true; grew;) {
		grew = false;
		for (size_t k = 0; k < img->nregions; k++) {
			if (k != i && img->regions[k].vaddr == end && img->regions[k].size &&
			    !strcmp(img->regions[k].name, img->regions[i].name)) {
				end += img->regions[k].size;
				grew = true;
			}
		}
	}
	return end - img->regions[i].vaddr;
}

/* Module @i's functions from the ELF file @fd (@path, @size bytes); false
 * (said why) when it has no symbol table to read. */
static bool add_module_elf(struct ptd_image *img, size_t i, int fd, const char *path, u64 size,
			   struct ptd_diags *diags)
{
	struct elf_in in = { elf_begin(fd, ELF_C_READ, NULL), path, size, diags, NULL };
	const char *name = img->regions[i].name;
	Elf_Scn *symtab = NULL;
	size_t shnum;

	if (!in.e || elf_kind(in.e) != ELF_K_ELF)
		ptd_diag_add(diags, -1, 0, "%s: not an ELF file: %s keeps its offsets", path, name);
	else if (elf_getshdrnum(in.e, &shnum))
		ptd_diag_add(diags, -1, 0, "%s: its section headers cannot be read (libelf: %s): %s keeps its offsets",
			     path, elf_errmsg(-1), name);
	else if (!(symtab = find_symtab(in.e, false)))
		ptd_diag_add(diags, -1, 0, "%s: no symbol table (.symtab): %s keeps its offsets", path, name);
	else	/* each image of that name at its own base (an image loaded twice is two) */
		add_elf_symbols(img, &in, symtab, img->regions[i].vaddr, name, module_extent(img, i));
	if (in.e)
		elf_end(in.e);
	return symtab;
}

/*
 * --symbols DIR: for each sideband module NAME (each image of it: one loaded
 * twice is two), DIR/NAME.debug (as EDK2's
 * GCC builds leave them), NAME.so or NAME.elf, if there is one; its
 * addresses are offsets in the module (linked at 0, as EDK2's and GNU-EFI's
 * images are), its functions "NAME!function".
 */
size_t ptd_image_add_module_symbols(struct ptd_image *img, const char *dir, struct ptd_diags *diags)
{
	size_t found = 0, n = img->nregions;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		ptd_diag_add(diags, -1, 0, "--symbols %s: libelf: %s", dir, elf_errmsg(-1));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ptd_region *r = &img->regions[i];
		char path[4096], why[600];
		bool dup = false;
		u64 size = 0;
		int fd;

		if (r->whole.name[0] == '[')
			continue;	/* not a module */
		for (size_t k = 0; k < n; k++)	/* the rest of an image split into records */
			dup |= k != i && !strcmp(img->regions[k].name, r->name) &&
			       img->regions[k].vaddr + img->regions[k].size == r->vaddr;
		if (dup)
			continue;
		fd = ptd_module_file(dir, r->name, path, sizeof(path), &size, why, sizeof(why));
		if (fd < 0) {
			if (why[0])
				ptd_diag_add(diags, -1, 0, "%s", why);
			continue;
		}
		found += add_module_elf(img, i, fd, path, size, diags);
		close(fd);
	}
	return found;
}
