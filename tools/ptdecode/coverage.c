// SPDX-License-Identifier: MIT
/*
 * --coverage and --coverage-diff: the blocks and edges the coverage decoder
 * (include/topaz/ptcov.h, kernel/coverage/) finds in one or more traces, per
 * module, written as drcov files (Lighthouse, Cartographer, Dragondance), lcov
 * tracefiles (genhtml) and a summary; or two traces' differences.
 *
 * A block is kept as (module, offset in the module), not as an address: two
 * traces may load a firmware module at different bases, and the drcov and
 * lcov outputs want offsets anyway. Each trace is decoded with its own image
 * (its sideband), so the decoder's code cache is flushed between traces and
 * what it reached is taken out after each.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <topaz/gfp.h>
#include <topaz/ptcov.h>
#include "ptdecode.h"

/* Enough for a firmware phase's or a kernel's traced code many times over;
 * beyond, ptcov says how many it dropped (the summary shows it). */
#define COV_MAX_BLOCKS	(1u << 18)
#define COV_MAX_EDGES	(1u << 20)

/* A named image the blocks are counted in: the kernel ELF, a sideband module,
 * or "[firmware]" for code pages that belong to no module (not written as
 * drcov or lcov, as no tool could place them). */
struct cov_mod {
	const char *name;
	char *path;			/* drcov's path column */
	u64 base, size;			/* in the first trace it was seen in */
	const struct ptd_image *img;	/* that trace's: its symbols */
	bool anon;
	char *debug;			/* an ELF with DWARF lines, or NULL */
	u64 blocks, edges, insns, insns_run;
};

struct cov_block {
	u32 mod, size, ninsn;
	u64 off, hits;
};

struct cov_edge {
	u32 from_mod, to_mod;
	u64 from_off, to_off, hits;
};

/* Open addressing over indices into a vector (index + 1; 0 is empty). */
struct cov_index {
	u32 *slot;
	size_t cap;
};

struct ptd_cov {
	const char *elf, *symbols;
	char *elf_name;
	struct ptd_image names;		/* only its string table: interned names */
	struct cov_mod *mods;
	size_t nmods;
	struct cov_block *blocks;
	size_t nblocks, cap_blocks;
	struct cov_index block_ix;
	struct cov_edge *edges;
	size_t nedges, cap_edges;
	struct cov_index edge_ix;
	struct ptcov *dec;
	const struct ptd_image *cur_img;	/* what the decoder reads now */
	struct ptcov_stats total;
	const char **traces;
	size_t ntraces;
	struct {
		u32 mod;
		u64 base;
	} *place;			/* per region of the image decoded now */
	char **cpu_lines;		/* a result line per CPU stream decoded */
	size_t ncpu_lines;
	struct ptd_progress *progress;	/* a long decode's progress line, or NULL */
};

static u64 mix(u64 h, u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static u64 block_hash(u32 mod, u64 off)
{
	return mix(mix(0, mod), off);
}

static u64 edge_hash(const struct cov_edge *e)
{
	return mix(mix(mix(mix(0, e->from_mod), e->from_off), e->to_mod), e->to_off);
}

/* Rebuild @ix for @n entries when it is half full; @hash_of gives entry i's hash. */
static void index_grow(struct cov_index *ix, size_t n, u64 (*hash_of)(const struct ptd_cov *, size_t),
		       const struct ptd_cov *cv)
{
	if (2 * (n + 1) <= ix->cap)
		return;
	free(ix->slot);
	ix->cap = ix->cap ? ix->cap * 2 : 4096;
	ix->slot = calloc(ix->cap, sizeof(*ix->slot));
	if (!ix->slot)
		abort();
	for (size_t i = 0; i < n; i++) {
		size_t s = hash_of(cv, i) & (ix->cap - 1);

		while (ix->slot[s])
			s = (s + 1) & (ix->cap - 1);
		ix->slot[s] = (u32)(i + 1);
	}
}

static u64 block_hash_at(const struct ptd_cov *cv, size_t i)
{
	return block_hash(cv->blocks[i].mod, cv->blocks[i].off);
}

static u64 edge_hash_at(const struct ptd_cov *cv, size_t i)
{
	return edge_hash(&cv->edges[i]);
}

/* The block at (@mod, @off), made when @make; its index, or -1. */
static long find_block(struct ptd_cov *cv, u32 mod, u64 off, bool make)
{
	size_t s;

	index_grow(&cv->block_ix, cv->nblocks, block_hash_at, cv);
	s = block_hash(mod, off) & (cv->block_ix.cap - 1);
	for (; cv->block_ix.slot[s]; s = (s + 1) & (cv->block_ix.cap - 1)) {
		const struct cov_block *b = &cv->blocks[cv->block_ix.slot[s] - 1];

		if (b->mod == mod && b->off == off)
			return cv->block_ix.slot[s] - 1;
	}
	if (!make)
		return -1;
	cv->blocks = ptd_grow(cv->blocks, &cv->cap_blocks, cv->nblocks, sizeof(*cv->blocks));
	cv->blocks[cv->nblocks] = (struct cov_block){ .mod = mod, .off = off };
	cv->block_ix.slot[s] = (u32)(cv->nblocks + 1);
	return (long)cv->nblocks++;
}

static struct cov_edge *find_edge(struct ptd_cov *cv, const struct cov_edge *key)
{
	size_t s;

	index_grow(&cv->edge_ix, cv->nedges, edge_hash_at, cv);
	s = edge_hash(key) & (cv->edge_ix.cap - 1);
	for (; cv->edge_ix.slot[s]; s = (s + 1) & (cv->edge_ix.cap - 1)) {
		struct cov_edge *e = &cv->edges[cv->edge_ix.slot[s] - 1];

		if (e->from_mod == key->from_mod && e->from_off == key->from_off &&
		    e->to_mod == key->to_mod && e->to_off == key->to_off)
			return e;
	}
	cv->edges = ptd_grow(cv->edges, &cv->cap_edges, cv->nedges, sizeof(*cv->edges));
	cv->edges[cv->nedges] = *key;
	cv->edges[cv->nedges].hits = 0;
	cv->edge_ix.slot[s] = (u32)(cv->nedges + 1);
	return &cv->edges[cv->nedges++];
}

static size_t cov_read(void *ctx, u64 addr, u8 *buf, size_t len)
{
	const struct ptd_cov *cv = ctx;
	int n = ptd_image_read(buf, len, NULL, addr, (void *)cv->cur_img);

	return n < 0 ? 0 : (size_t)n;
}

struct ptd_cov *ptd_cov_new(const char *elf, const char *symbols)
{
	struct ptd_cov *cv = calloc(1, sizeof(*cv));
	struct ptcov_config cfg = {
		.read = cov_read,
		.max_blocks = COV_MAX_BLOCKS,
		.max_edges = COV_MAX_EDGES,
	};

	if (!cv)
		abort();
	cfg.read_ctx = cv;
	cv->dec = ptcov_create(&cfg, GFP_KERNEL);
	if (!cv->dec) {
		free(cv);
		return NULL;
	}
	cv->elf = elf;
	cv->symbols = symbols;
	if (elf)
		cv->elf_name = strdup(strrchr(elf, '/') ? strrchr(elf, '/') + 1 : elf);
	ptd_image_init(&cv->names);
	return cv;
}

/* A file holding @name's DWARF: the kernel ELF, or --symbols DIR/NAME.debug,
 * .so, .elf (ptd_module_file(), as ptd_image_add_module_symbols(), which
 * said already why a name or a file was refused). */
static char *debug_file(const struct ptd_cov *cv, const char *name)
{
	char path[PATH_MAX], why[600];
	int fd;

	if (cv->elf_name && !strcmp(name, cv->elf_name))
		return strdup(cv->elf);
	if (!cv->symbols)
		return NULL;
	fd = ptd_module_file(cv->symbols, name, path, sizeof(path), NULL, why, sizeof(why));
	if (fd < 0)
		return NULL;
	close(fd);
	return strdup(path);
}

/* Where @r's module starts in @img and how far it reaches: an image split
 * into several records (or an ELF's segments) is one module; the ELF is
 * linked at 0, so its offsets are its addresses. */
static void module_extent(const struct ptd_cov *cv, const struct ptd_image *img,
			  const struct ptd_region *r, u64 load, u64 *base, u64 *size)
{
	u64 lo = r->vaddr, hi = r->vaddr + r->size;

	if (r->whole.name[0] == '[') {
		/* pages of no module: offsets are addresses */
		*base = 0;
		*size = ~0ULL;
		return;
	}
	for (size_t i = 0; i < img->nregions; i++) {
		if (strcmp(img->regions[i].name, r->name))
			continue;
		lo = min(lo, img->regions[i].vaddr);
		hi = max(hi, img->regions[i].vaddr + img->regions[i].size);
	}
	if (cv->elf_name && !strcmp(r->name, cv->elf_name) && load <= lo)
		lo = load;
	*base = lo;
	*size = hi - lo;
}

/* The module called @r's name, made on first sight with @img's extent. */
static u32 module_of(struct ptd_cov *cv, const struct ptd_image *img, const struct ptd_region *r,
		     u64 base, u64 size)
{
	bool anon = r->whole.name[0] == '[';
	const char *name = ptd_intern(&cv->names, anon ? r->whole.name : r->name);
	char path[PATH_MAX];
	struct cov_mod *m;

	for (u32 i = 0; i < cv->nmods; i++)
		if (cv->mods[i].name == name)
			return i;
	cv->mods = realloc(cv->mods, (cv->nmods + 1) * sizeof(*cv->mods));
	if (!cv->mods)
		abort();
	m = &cv->mods[cv->nmods];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->img = img;
	m->anon = anon;
	m->base = base;
	m->size = size;
	if (cv->elf_name && !strcmp(name, cv->elf_name)) {
		m->path = realpath(cv->elf, NULL);
	} else if (!anon) {
		/* what a disassembler has loaded: EDK2's NAME.efi */
		snprintf(path, sizeof(path), "%.*s.efi", (int)strcspn(name, "#"), name);
		m->path = strdup(path);
	}
	if (!m->path)
		m->path = strdup(name);
	if (!anon)
		m->debug = debug_file(cv, name);
	return (u32)cv->nmods++;
}

/* Each region of @img: its module and that module's base in @img. */
static void map_regions(struct ptd_cov *cv, const struct ptd_image *img, u64 load)
{
	free(cv->place);
	cv->place = calloc(img->nregions + 1, sizeof(*cv->place));
	if (!cv->place)
		abort();
	for (size_t i = 0; i < img->nregions; i++) {
		u64 base, size;

		module_extent(cv, img, &img->regions[i], load, &base, &size);
		cv->place[i].mod = module_of(cv, img, &img->regions[i], base, size);
		cv->place[i].base = base;
	}
}

/* (module, offset) of @addr in @img, as map_regions() placed its regions;
 * false outside every region. */
static bool place(const struct ptd_cov *cv, const struct ptd_image *img, u64 addr, u32 *mod, u64 *off)
{
	for (size_t i = 0; i < img->nregions; i++) {
		if (addr - img->regions[i].vaddr < img->regions[i].size) {
			*mod = cv->place[i].mod;
			*off = addr - cv->place[i].base;
			return true;
		}
	}
	return false;
}

static void add_stats(struct ptcov_stats *t, const struct ptcov_stats *s)
{
	t->bytes += s->bytes;
	t->packets += s->packets;
	t->psbs += s->psbs;
	t->tnt_bits += s->tnt_bits;
	t->tips += s->tips;
	t->transitions += s->transitions;
	t->insns += s->insns;
	t->block_decodes += s->block_decodes;
	for (int k = 0; k < PTCOV_NR_GAPS; k++)
		t->gaps[k] += s->gaps[k];
	t->blocks_dropped += s->blocks_dropped;
	t->edges_dropped += s->edges_dropped;
}

/* "result: coverage.cpu cpu=N ..." of the stream just decoded, for the summary. */
static void cpu_line(struct ptd_cov *cv, const struct ptd_container *c, u32 cpu)
{
	const struct ptcov_stats *st = ptcov_get_stats(cv->dec);
	char line[512];
	u64 gaps = 0;

	for (int k = 0; k < PTCOV_NR_GAPS; k++)
		gaps += st->gaps[k];
	snprintf(line, sizeof(line),
		 "result: coverage.cpu cpu=%u blocks=%llu edges=%llu transitions=%llu insns=%llu digest=%#x gaps=%llu trace=%s\n",
		 cpu, st->blocks, st->edges, st->transitions, st->insns, ptcov_bitmap_digest(cv->dec), gaps,
		 c->name);
	cv->cpu_lines = realloc(cv->cpu_lines, (cv->ncpu_lines + 1) * sizeof(*cv->cpu_lines));
	if (!cv->cpu_lines || !(cv->cpu_lines[cv->ncpu_lines++] = strdup(line)))
		abort();
}

/* What the decoder reached in this stream, into the (module, offset) lists. */
static void harvest(struct ptd_cov *cv, struct ptd_container *c, const struct ptd_image *img)
{
	const struct ptcov_stats *st = ptcov_get_stats(cv->dec);
	const struct ptcov_edge *ev;
	size_t n;
	u64 outside = 0;

	for (size_t i = 0; i < st->blocks; i++) {
		const struct ptcov_block *b = ptcov_block(cv->dec, i);
		struct cov_block *k;
		long idx;
		u64 off;
		u32 mod;

		if (!place(cv, img, b->start, &mod, &off)) {
			outside++;
			continue;
		}
		/* find_block() may move the vector: index it after the call */
		idx = find_block(cv, mod, off, true);
		k = &cv->blocks[idx];
		k->size = (u32)min(b->end - b->start, (u64)UINT32_MAX);
		k->ninsn = b->ninsn;
		k->hits += b->hits;
	}
	ev = ptcov_edges(cv->dec, &n);
	for (size_t i = 0; i < n; i++) {
		struct cov_edge key = { 0 };

		if (!place(cv, img, ev[i].from, &key.from_mod, &key.from_off) ||
		    !place(cv, img, ev[i].to, &key.to_mod, &key.to_off))
			continue;
		find_edge(cv, &key)->hits += ev[i].hits;
	}
	if (outside)
		ptd_diag_add(&c->diags, -1, 0, "coverage: %llu blocks reached outside every code image", outside);
	if (st->gaps[PTCOV_GAP_NOCODE])
		ptd_diag_add(&c->diags, -1, 0,
			     "coverage: %llu times the flow went to an address with no code in the image%s: what ran there is not counted",
			     st->gaps[PTCOV_GAP_NOCODE], cv->elf ? "" : " (no --elf: the kernel's code is not mapped)");
	if (st->blocks_dropped || st->edges_dropped)
		ptd_diag_add(&c->diags, -1, 0,
			     "coverage: the decoder's lists were full: %llu blocks and %llu edges not listed",
			     st->blocks_dropped, st->edges_dropped);
	add_stats(&cv->total, st);
}

void ptd_cov_set_progress(struct ptd_cov *cv, struct ptd_progress *p)
{
	cv->progress = p;
}

/* A progress line is told where the decoder is every this many bytes. */
#define FEED_STEP	4096

int ptd_cov_add(struct ptd_cov *cv, struct ptd_container *c, const struct ptd_image *img, u64 load)
{
	struct ptd_segments segs;
	u64 total = 0, done = 0;

	if (!img->nregions) {
		fprintf(stderr, "ptdecode: %s: no code to decode with: give --elf (the trace has no sideband image)\n",
			c->name);
		return -1;
	}
	cv->traces = realloc(cv->traces, (cv->ntraces + 1) * sizeof(*cv->traces));
	if (!cv->traces)
		abort();
	cv->traces[cv->ntraces++] = c->name;
	ptd_segments_build(c, &segs);
	ptd_report_gaps(c, &segs);
	/* another trace's code may sit where this one's does */
	ptcov_flush_code(cv->dec);
	cv->cur_img = img;
	map_regions(cv, img, load);
	if (cv->progress) {
		for (size_t i = 0; i < segs.n; i++)
			total += segs.v[i].size;
		ptd_progress_begin(cv->progress, "coverage", total);
	}
	for (size_t k = 0; k < segs.ncpus; k++) {
		const struct ptd_cpu_stream *cs = &segs.cpus[k];

		ptcov_begin_stream(cv->dec);
		for (size_t i = cs->first; i < cs->first + cs->nsegs; i++) {
			const struct ptd_segment *g = &segs.v[i];

			/* what is missing before the segment cuts the flow */
			if (g->gap || g->gap_why)
				ptcov_gap(cv->dec, PTCOV_GAP_LOST);
			/* in steps, for the progress line: the decoder takes any cut */
			for (size_t at = 0; at < g->size; at += FEED_STEP) {
				ptcov_feed(cv->dec, g->data + at, min(g->size - at, (size_t)FEED_STEP));
				ptd_progress_at(cv->progress, done + at);
			}
			done += g->size;
		}
		ptcov_end_stream(cv->dec);
		/* each CPU's counts, as the kernel's pt.coverage=on gives them;
		 * the decoded code stays for the next CPU */
		cpu_line(cv, c, cs->cpu);
		harvest(cv, c, img);
		ptcov_clear(cv->dec);
	}
	if (cv->progress)
		ptd_progress_end(cv->progress);
	ptd_segments_free(&segs);
	return 0;
}

void ptd_cov_free(struct ptd_cov *cv)
{
	if (!cv)
		return;
	ptcov_destroy(cv->dec);
	for (size_t i = 0; i < cv->nmods; i++) {
		free(cv->mods[i].path);
		free(cv->mods[i].debug);
	}
	free(cv->mods);
	free(cv->blocks);
	free(cv->block_ix.slot);
	free(cv->edges);
	free(cv->edge_ix.slot);
	for (size_t i = 0; i < cv->ncpu_lines; i++)
		free(cv->cpu_lines[i]);
	free(cv->cpu_lines);
	free(cv->traces);
	free(cv->place);
	free(cv->elf_name);
	ptd_image_free(&cv->names);
	free(cv);
}

/* -------------------------------------------------------------- DWARF lines */

/* An address range of one source line, module offsets [lo, hi). */
struct cov_line {
	u64 lo, hi;
	const char *file;	/* interned, canonical */
	u32 line;
};

/* A function's range (one of them, for a function split in parts). */
struct cov_fn {
	u64 lo, hi;
	const char *name, *file;
	u32 line;
	bool entry;		/* the range the function is entered at */
};

struct cov_dwarf {
	struct cov_line *lines;
	size_t nlines, cap_lines;
	struct cov_fn *fns;
	size_t nfns, cap_fns;
	u64 *code;		/* executable sections: pairs [lo, hi) */
	size_t ncode;
	const char *last_raw, *last_file;	/* the previous row's file */
};

/* One spelling per source file: realpath() when it exists (so "a/../b.h"
 * and "b.h" are one file), else as DWARF says it. */
static const char *canonical(struct ptd_cov *cv, struct cov_dwarf *d, const char *raw,
			     const char *comp_dir)
{
	char joined[PATH_MAX], *real;
	const char *name;

	if (raw == d->last_raw)
		return d->last_file;
	if (raw[0] != '/' && comp_dir)
		snprintf(joined, sizeof(joined), "%s/%s", comp_dir, raw);
	else
		snprintf(joined, sizeof(joined), "%s", raw);
	real = realpath(joined, NULL);
	name = ptd_intern(&cv->names, real ? real : joined);
	free(real);
	d->last_raw = raw;
	d->last_file = name;
	return name;
}

static bool in_code(const struct cov_dwarf *d, u64 lo, u64 hi)
{
	for (size_t i = 0; i < d->ncode; i++)
		if (lo >= d->code[2 * i] && hi <= d->code[2 * i + 1])
			return true;
	return false;
}

/* Executable sections: line rows and functions outside them (discarded
 * sections, left at 0) are not code that ran. */
static void code_sections(Dwarf *dw, struct cov_dwarf *d)
{
	Elf *e = dwarf_getelf(dw);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		d->code = realloc(d->code, (d->ncode + 1) * 2 * sizeof(*d->code));
		if (!d->code)
			abort();
		d->code[2 * d->ncode] = sh.sh_addr;
		d->code[2 * d->ncode + 1] = sh.sh_addr + sh.sh_size;
		d->ncode++;
	}
}

static void unit_lines(struct ptd_cov *cv, struct cov_dwarf *d, Dwarf_Die *cu, const char *comp_dir)
{
	Dwarf_Lines *lines;
	size_t n;

	if (dwarf_getsrclines(cu, &lines, &n))
		return;
	for (size_t i = 0; i + 1 < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i), *next = dwarf_onesrcline(lines, i + 1);
		Dwarf_Addr lo, hi;
		bool end;
		int line;
		const char *src;

		/* a row runs to the next one of its sequence */
		if (dwarf_lineendsequence(l, &end) || end || dwarf_lineaddr(l, &lo) ||
		    dwarf_lineaddr(next, &hi) || hi <= lo || dwarf_lineno(l, &line) || line <= 0 ||
		    !(src = dwarf_linesrc(l, NULL, NULL)) || !in_code(d, lo, hi))
			continue;
		d->lines = ptd_grow(d->lines, &d->cap_lines, d->nlines, sizeof(*d->lines));
		d->lines[d->nlines++] = (struct cov_line){ lo, hi, canonical(cv, d, src, comp_dir), (u32)line };
	}
}

struct fn_walk {
	struct ptd_cov *cv;
	struct cov_dwarf *d;
	const char *comp_dir;
};

/* Each range of the subprogram @die (its low/high pc, or DW_AT_ranges); the
 * first is where it is entered. */
static void fn_ranges(struct fn_walk *w, Dwarf_Die *die)
{
	struct cov_dwarf *d = w->d;
	Dwarf_Attribute a;
	Dwarf_Addr base, lo, hi;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	const char *file = dwarf_decl_file(die);
	bool first = true;
	ptrdiff_t off = 0;
	int line = 0;

	if (!name)
		return;
	dwarf_decl_line(die, &line);
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo || !in_code(d, lo, hi))
			continue;
		d->fns = ptd_grow(d->fns, &d->cap_fns, d->nfns, sizeof(*d->fns));
		d->fns[d->nfns++] = (struct cov_fn){
			.lo = lo, .hi = hi, .name = ptd_intern(&w->cv->names, name),
			.file = file ? canonical(w->cv, d, file, w->comp_dir) : NULL,
			.line = line > 0 ? (u32)line : 0, .entry = first,
		};
		first = false;
	}
}

static void unit_functions(struct fn_walk *w, Dwarf_Die *cu)
{
	Dwarf_Die child;

	if (dwarf_child(cu, &child))
		return;
	do {
		if (dwarf_tag(&child) == DW_TAG_subprogram)
			fn_ranges(w, &child);
	} while (!dwarf_siblingof(&child, &child));
}

static int cmp_line_lo(const void *a, const void *b)
{
	const struct cov_line *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* @path's lines and functions; false (with the reason in @why) when it has none. */
static bool read_dwarf(struct ptd_cov *cv, const char *path, struct cov_dwarf *d, char *why, size_t size)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf *dw;
	int fd;

	memset(d, 0, sizeof(*d));
	fd = ptd_open_regular(path, NULL, why, size);
	if (fd < 0)
		return false;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		snprintf(why, size, "%s: no DWARF debug information (%s)", path, dwarf_errmsg(-1));
		close(fd);
		return false;
	}
	code_sections(dw, d);
	while (!dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie)) {
		Dwarf_Attribute a;
		struct fn_walk w = { cv, d, dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &a)) };

		d->last_raw = NULL;	/* a new unit's file table */
		unit_lines(cv, d, &cudie, w.comp_dir);
		d->last_raw = NULL;
		unit_functions(&w, &cudie);
	}
	dwarf_end(dw);
	close(fd);
	if (!d->nlines) {
		snprintf(why, size, "%s: no DWARF line table", path);
		return false;
	}
	qsort(d->lines, d->nlines, sizeof(*d->lines), cmp_line_lo);
	return true;
}

static void free_dwarf(struct cov_dwarf *d)
{
	free(d->lines);
	free(d->fns);
	free(d->code);
}

/* The first line range that ends after @off (ranges sorted by start). */
static size_t first_line(const struct cov_dwarf *d, u64 off)
{
	size_t lo = 0, hi = d->nlines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->lines[mid].lo <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the range that starts at or before @off may still cover it */
	if (lo && d->lines[lo - 1].hi > off)
		lo--;
	return lo;
}

/* ------------------------------------------------------------------- lcov */

/* A line and how often it ran (0: in a function entered, not reached). */
struct cov_hit {
	const char *file;
	u32 line;
	u64 hits;
};

/* A function of the lcov record (its copies from several units are one). */
struct cov_fnhit {
	const char *file, *name;
	u32 line;
	u64 hits;
	bool entered;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct cov_hit *x = a, *y = b;
	int c = x->file == y->file ? 0 : strcmp(x->file, y->file);

	return c ? c : x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_fnhit(const void *a, const void *b)
{
	const struct cov_fnhit *x = a, *y = b;
	int c = x->file == y->file ? 0 : strcmp(x->file, y->file);

	if (c)
		return c;
	return x->name == y->name ? 0 : strcmp(x->name, y->name);
}

static const struct ptd_cov *sort_cv;	/* qsort()'s context */

static int cmp_block_off(const void *a, const void *b)
{
	const struct cov_block *x = &sort_cv->blocks[*(const size_t *)a];
	const struct cov_block *y = &sort_cv->blocks[*(const size_t *)b];

	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The blocks of module @mod, by offset (malloc'd; @n of them). */
static size_t *module_blocks(const struct ptd_cov *cv, u32 mod, size_t *n)
{
	size_t *v = malloc((cv->nblocks + 1) * sizeof(*v));

	if (!v)
		abort();
	*n = 0;
	for (size_t i = 0; i < cv->nblocks; i++)
		if (cv->blocks[i].mod == mod)
			v[(*n)++] = i;
	sort_cv = cv;
	qsort(v, *n, sizeof(*v), cmp_block_off);
	return v;
}

/* The first of @v's @n blocks (sorted by offset) at or after @off. */
static size_t block_at(const struct ptd_cov *cv, const size_t *v, size_t n, u64 off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cv->blocks[v[mid]].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct hits {
	struct cov_hit *v;
	size_t n, cap;
};

static void add_hit(struct hits *h, const char *file, u32 line, u64 hits)
{
	h->v = ptd_grow(h->v, &h->cap, h->n, sizeof(*h->v));
	h->v[h->n++] = (struct cov_hit){ file, line, hits };
}

/* Each line of an instruction in a reached block ran as often as its most
 * run block: a line split over blocks (a condition) is still one pass. */
static void block_lines(const struct ptd_cov *cv, const struct cov_dwarf *d, const size_t *v, size_t n,
			struct hits *h)
{
	for (size_t i = 0; i < n; i++) {
		const struct cov_block *b = &cv->blocks[v[i]];
		u64 end = b->off + max(b->size, 1u);

		for (size_t k = first_line(d, b->off); k < d->nlines && d->lines[k].lo < end; k++)
			if (d->lines[k].hi > b->off)
				add_hit(h, d->lines[k].file, d->lines[k].line, b->hits);
	}
}

/* The functions, entered or not; the lines of those entered, 0 where not reached. */
static struct cov_fnhit *function_hits(const struct ptd_cov *cv, const struct cov_dwarf *d,
				       const size_t *v, size_t n, struct hits *h, size_t *nf)
{
	struct cov_fnhit *f = calloc(d->nfns + 1, sizeof(*f));
	size_t k = 0;

	if (!f)
		abort();
	for (size_t i = 0; i < d->nfns; i++) {
		const struct cov_fn *fn = &d->fns[i];
		size_t b = block_at(cv, v, n, fn->lo);
		u64 most = 0, at_entry = 0;
		bool entered = false;

		for (size_t j = b; j < n && cv->blocks[v[j]].off < fn->hi; j++) {
			entered = true;
			most = max(most, cv->blocks[v[j]].hits);
			if (cv->blocks[v[j]].off == fn->lo)
				at_entry = cv->blocks[v[j]].hits;
		}
		if (entered)
			for (size_t j = first_line(d, fn->lo); j < d->nlines && d->lines[j].lo < fn->hi; j++)
				add_hit(h, d->lines[j].file, d->lines[j].line, 0);
		if (!fn->file)
			continue;
		/* entered at its start, as often as that block ran; else it was
		 * running when the trace began (or a part of it): its most run block */
		f[k++] = (struct cov_fnhit){
			.file = fn->file, .name = fn->name,
			.line = fn->line ? fn->line : 1,
			.hits = fn->entry && at_entry ? at_entry : most,
			.entered = entered,
		};
	}
	*nf = k;
	return f;
}

/* Sort and fold duplicates: the most hits of a line, the sum over a function's copies. */
static size_t fold_hits(struct hits *h)
{
	size_t k = 0;

	if (!h->n)
		return 0;
	qsort(h->v, h->n, sizeof(*h->v), cmp_hit);
	for (size_t i = 1; i < h->n; i++) {
		if (!cmp_hit(&h->v[k], &h->v[i]))
			h->v[k].hits = max(h->v[k].hits, h->v[i].hits);
		else
			h->v[++k] = h->v[i];
	}
	return h->n = k + 1;
}

static size_t fold_fns(struct cov_fnhit *f, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(f, n, sizeof(*f), cmp_fnhit);
	for (size_t i = 1; i < n; i++) {
		if (!cmp_fnhit(&f[k], &f[i])) {
			/* a static inline's copies: one function, their entries added */
			f[k].hits += f[i].hits;
			f[k].entered |= f[i].entered;
			f[k].line = min(f[k].line, f[i].line);
		} else {
			f[++k] = f[i];
		}
	}
	return k + 1;
}

struct lcov_totals {
	size_t files, missing, lines, lines_hit, fns, fns_hit;
	const char *first_missing;
};

/* One record per source file that has lines and is here (genhtml reads it). */
static void write_records(FILE *out, const struct hits *h, const struct cov_fnhit *f, size_t nf,
			  struct lcov_totals *t)
{
	size_t fi = 0;

	for (size_t i = 0; i < h->n;) {
		const char *file = h->v[i].file;
		size_t end = i, lf = 0, lh = 0, fnf = 0, fnh = 0;

		while (end < h->n && h->v[end].file == file)
			end++;
		while (fi < nf && strcmp(f[fi].file, file) < 0)
			fi++;
		if (access(file, R_OK)) {
			if (!t->missing++)
				t->first_missing = file;
			i = end;
			continue;
		}
		fprintf(out, "TN:\nSF:%s\n", file);
		for (size_t k = fi; k < nf && f[k].file == file; k++)
			fprintf(out, "FN:%u,%s\n", f[k].line, f[k].name);
		for (size_t k = fi; k < nf && f[k].file == file; k++) {
			fprintf(out, "FNDA:%llu,%s\n", f[k].hits, f[k].name);
			fnf++;
			fnh += f[k].hits > 0;
		}
		fprintf(out, "FNF:%zu\nFNH:%zu\n", fnf, fnh);
		for (; i < end; i++) {
			fprintf(out, "DA:%u,%llu\n", h->v[i].line, h->v[i].hits);
			lf++;
			lh += h->v[i].hits > 0;
		}
		fprintf(out, "LF:%zu\nLH:%zu\nend_of_record\n", lf, lh);
		t->files++;
		t->lines += lf;
		t->lines_hit += lh;
		t->fns += fnf;
		t->fns_hit += fnh;
	}
}

/* Open @dir/@name for writing; NULL with the reason on stderr. */
static FILE *create(const char *dir, const char *name, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, strerror(errno));
	return f;
}

static bool close_ok(FILE *f, const char *path)
{
	bool bad = ferror(f);

	bad |= fclose(f) != 0;
	if (bad)
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, errno ? strerror(errno) : "I/O error");
	return !bad;
}

/* A name safe as a file name: a module's name with '/' (none in EDK2's) made '_'. */
static void file_name(const char *name, const char *ext, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", name, ext);
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '_';
}

/* @mod's lcov tracefile DIR/NAME.info; 0 written, 1 nothing to write (no
 * DWARF: @why says so), -1 cannot write. */
static int write_lcov(const struct ptd_cov *cv, u32 mod, const char *dir, struct lcov_totals *t,
		      char *why, size_t size)
{
	const struct cov_mod *m = &cv->mods[mod];
	struct cov_dwarf d;
	struct hits h = { 0 };
	struct cov_fnhit *f;
	size_t n, nf, *v;
	char name[256], path[PATH_MAX];
	FILE *out;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	if (!m->debug) {
		snprintf(why, size, "no debug file for %s (%s)", m->name,
			 cv->symbols ? "--symbols has none" : "give --symbols DIR");
		return 1;
	}
	/* @cv's names are interned: the image's table takes new ones */
	if (!read_dwarf((struct ptd_cov *)cv, m->debug, &d, why, size)) {
		free_dwarf(&d);
		return 1;
	}
	v = module_blocks(cv, mod, &n);
	block_lines(cv, &d, v, n, &h);
	f = function_hits(cv, &d, v, n, &h, &nf);
	fold_hits(&h);
	nf = fold_fns(f, nf);
	file_name(m->name, ".info", name, sizeof(name));
	out = create(dir, name, path, sizeof(path));
	if (out) {
		write_records(out, &h, f, nf, t);
		if (!close_ok(out, path))
			ret = -1;
	} else {
		ret = -1;
	}
	free(f);
	free(h.v);
	free(v);
	free_dwarf(&d);
	return ret;
}

/* ------------------------------------------------------------------ drcov */

/*
 * drcov, as DynamoRIO's drcov writes it and Lighthouse (IDA, Binary Ninja),
 * Cartographer (Ghidra) and Dragondance read it: text lines, then the blocks
 * as binary entries { u32 offset from the module's base; u16 size; u16
 * module id }, little-endian. The module table is version 5 (DynamoRIO 8 and
 * later): Lighthouse reads versions 2 to 5, Dragondance reads columns by
 * name, and Cartographer reads only version 5's (its containing_id column).
 */
static void drcov_module_line(FILE *out, u32 id, const struct cov_mod *m)
{
	/* id, containing_id, start, end, entry, offset, preferred_base,
	 * checksum, timestamp, path; the offset without 0x as drcov writes it */
	fprintf(out, "%3u, %3u, 0x%016llx, 0x%016llx, 0x%016llx, %016llx, 0x%016llx, 0x%08x, 0x%08x, %s\n",
		id, id, m->base, m->base + m->size, 0ULL, 0ULL, m->base, 0u, 0u, m->path);
}

static void put_le(u8 *p, u64 v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* The blocks of the modules in @ids (@nids; drcov's ids are their positions). */
static bool write_drcov(const struct ptd_cov *cv, const u32 *ids, size_t nids, const char *path)
{
	FILE *out = fopen(path, "wb");
	size_t count = 0;

	if (!out) {
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, strerror(errno));
		return false;
	}
	fprintf(out, "DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\n");
	fprintf(out, "Module Table: version 5, count %zu\n", nids);
	fprintf(out, "Columns: id, containing_id, start, end, entry, offset, preferred_base, checksum, timestamp, path\n");
	for (size_t i = 0; i < nids; i++)
		drcov_module_line(out, (u32)i, &cv->mods[ids[i]]);
	for (size_t i = 0; i < nids; i++)
		count += cv->mods[ids[i]].blocks;
	fprintf(out, "BB Table: %zu bbs\n", count);
	for (size_t i = 0; i < nids; i++) {
		size_t n, *v = module_blocks(cv, ids[i], &n);

		for (size_t k = 0; k < n; k++) {
			const struct cov_block *b = &cv->blocks[v[k]];
			u8 e[8];

			put_le(e, b->off, 4);
			put_le(e + 4, min(b->size, 0xffffu), 2);
			put_le(e + 6, i, 2);
			fwrite(e, 1, sizeof(e), out);
		}
		free(v);
	}
	return close_ok(out, path);
}

/* ---------------------------------------------------------------- summary */

/* A function's share: the blocks reached in one symbol. */
struct cov_func {
	const struct ptd_symbol *sym;	/* NULL: code of no symbol in the module */
	u64 blocks, edges, covered, insns_run;
};

/* The functions reached in @mod, in address order (malloc'd; @n of them). */
static struct cov_func *module_functions(const struct ptd_cov *cv, u32 mod, size_t *n)
{
	const struct cov_mod *m = &cv->mods[mod];
	size_t nb, *v = module_blocks(cv, mod, &nb);
	struct cov_func *f = calloc(nb + 1, sizeof(*f));
	u64 covered_to = 0;
	size_t k = 0;

	if (!f)
		abort();
	for (size_t i = 0; i < nb; i++) {
		const struct cov_block *b = &cv->blocks[v[i]];
		const struct ptd_symbol *s = ptd_image_lookup(m->img, m->base + b->off);
		u64 lo = b->off, hi = b->off + b->size;

		if (s && !ptd_image_is_symbol(m->img, s))
			s = NULL;
		if (!k || f[k - 1].sym != s) {
			f[k++].sym = s;
			covered_to = 0;
		}
		/* bytes covered: the union of the blocks (one may start inside another) */
		lo = max(lo, covered_to);
		if (hi > lo)
			f[k - 1].covered += hi - lo;
		covered_to = max(covered_to, hi);
		f[k - 1].blocks++;
		f[k - 1].insns_run += (u64)b->ninsn * b->hits;
	}
	for (size_t i = 0; i < cv->nedges; i++) {
		const struct cov_edge *e = &cv->edges[i];
		const struct ptd_symbol *s;

		if (e->from_mod != mod)
			continue;
		s = ptd_image_lookup(m->img, m->base + e->from_off);
		if (s && !ptd_image_is_symbol(m->img, s))
			s = NULL;
		for (size_t j = 0; j < k; j++)
			if (f[j].sym == s) {
				f[j].edges++;
				break;
			}
	}
	free(v);
	*n = k;
	return f;
}

static void module_counts(struct ptd_cov *cv)
{
	for (size_t i = 0; i < cv->nmods; i++)
		cv->mods[i].blocks = cv->mods[i].edges = cv->mods[i].insns = cv->mods[i].insns_run = 0;
	for (size_t i = 0; i < cv->nblocks; i++) {
		struct cov_mod *m = &cv->mods[cv->blocks[i].mod];

		m->blocks++;
		m->insns += cv->blocks[i].ninsn;
		m->insns_run += (u64)cv->blocks[i].ninsn * cv->blocks[i].hits;
	}
	for (size_t i = 0; i < cv->nedges; i++)
		cv->mods[cv->edges[i].from_mod].edges++;
}

/* Whether @s (a function of @m's image) lies in module @m. */
static bool symbol_in(const struct cov_mod *m, const struct ptd_symbol *s)
{
	const struct ptd_symbol *at = ptd_image_lookup(m->img, s->start);

	if (s->start - m->base >= m->size || at != s)
		return false;
	for (size_t i = 0; i < m->img->nregions; i++) {
		const struct ptd_region *r = &m->img->regions[i];

		if (s->start - r->vaddr < r->size)
			return !strcmp(r->name, m->name);
	}
	return false;
}

/* @m's functions and those never entered: everything into @full, the counts to @out. */
static void print_module(const struct ptd_cov *cv, u32 mod, const struct lcov_totals *lt,
			 const char *lcov_why, FILE *full, FILE *out)
{
	const struct cov_mod *m = &cv->mods[mod];
	size_t nf, never = 0, total = 0, entered = 0;
	struct cov_func *f = module_functions(cv, mod, &nf);
	char line[512], lines[160] = "", e[256], fe[256];
	const char *name;

	for (size_t i = 0; i < nf; i++)
		entered += f[i].sym != NULL;
	for (size_t i = 0; i < m->img->nsyms; i++)
		total += symbol_in(m, &m->img->syms[i]);
	if (lt && lt->files)
		snprintf(lines, sizeof(lines), "; %zu of %zu lines, %zu of %zu functions in %zu source files",
			 lt->lines_hit, lt->lines, lt->fns_hit, lt->fns, lt->files);
	/* names from the input, escaped (ptd_escape()) */
	name = ptd_escape(m->name, e, sizeof(e));
	snprintf(line, sizeof(line),
		 "module %s at 0x%llx: %llu blocks, %llu edges, %llu instructions (%llu run); %zu of %zu functions entered%s\n",
		 name, m->base, m->blocks, m->edges, m->insns, m->insns_run, entered, total, lines);
	fputs(line, out);
	if (full != out)
		fputs(line, full);
	if (lt && lt->missing)
		fprintf(full, "  lcov: %zu source files not found, left out (the first: %s)\n", lt->missing,
			lt->first_missing);
	if (lcov_why && !m->anon)
		fprintf(full, "  lcov: none: %s\n", lcov_why);
	fprintf(full, "  functions reached (blocks, edges, bytes covered of the function's, instructions run):\n");
	for (size_t i = 0; i < nf; i++) {
		const struct ptd_symbol *s = f[i].sym;
		u64 size = s ? s->end - s->start : 0;

		if (s)
			fprintf(full, "    %-40s %6llu %6llu %7llu of %7llu (%3llu%%) %llu\n",
				ptd_escape(s->name, fe, sizeof(fe)), f[i].blocks,
				f[i].edges, f[i].covered, size, size ? 100 * f[i].covered / size : 0,
				f[i].insns_run);
		else
			fprintf(full, "    %-40s %6llu %6llu %7llu %18s %llu\n", "(code of no symbol)", f[i].blocks,
				f[i].edges, f[i].covered, "", f[i].insns_run);
	}
	for (size_t i = 0, k = 0; i < m->img->nsyms; i++) {
		const struct ptd_symbol *s = &m->img->syms[i];

		if (!symbol_in(m, s))
			continue;
		while (k < nf && (!f[k].sym || f[k].sym->start < s->start))
			k++;
		if (k < nf && f[k].sym == s)
			continue;
		if (!never++)
			fprintf(full, "  functions never entered (bytes):\n");
		fprintf(full, "    %-40s %7llu\n", ptd_escape(s->name, fe, sizeof(fe)), s->end - s->start);
	}
	fprintf(out, "result: coverage.module name=%s blocks=%llu edges=%llu insns=%llu insns_run=%llu functions=%zu functions_entered=%zu lines=%zu lines_hit=%zu\n",
		name, m->blocks, m->edges, m->insns, m->insns_run, total, entered, lt ? lt->lines : 0,
		lt ? lt->lines_hit : 0);
	if (full != out)
		fprintf(full, "result: coverage.module name=%s blocks=%llu edges=%llu insns=%llu insns_run=%llu functions=%zu functions_entered=%zu lines=%zu lines_hit=%zu\n",
			name, m->blocks, m->edges, m->insns, m->insns_run, total, entered,
			lt ? lt->lines : 0, lt ? lt->lines_hit : 0);
	free(f);
}

static void print_totals(const struct ptd_cov *cv, FILE *out)
{
	const struct ptcov_stats *t = &cv->total;
	u64 gaps = 0, insns = 0, run = 0;

	for (int k = 0; k < PTCOV_NR_GAPS; k++)
		gaps += t->gaps[k];
	for (size_t i = 0; i < cv->nmods; i++) {
		insns += cv->mods[i].insns;
		run += cv->mods[i].insns_run;
	}
	fprintf(out, "coverage: %zu trace%s, %zu blocks, %zu edges, %llu instructions reached (%llu run)\n",
		cv->ntraces, cv->ntraces == 1 ? "" : "s", cv->nblocks, cv->nedges, insns, run);
	fprintf(out, "decoder: %llu bytes, %llu packets, %llu PSBs, %llu blocks decoded; flow cut %llu times",
		t->bytes, t->packets, t->psbs, t->block_decodes, gaps);
	for (int k = 0; k < PTCOV_NR_GAPS; k++)
		if (t->gaps[k])
			fprintf(out, ", %s %llu", ptcov_gap_name(k), t->gaps[k]);
	fputc('\n', out);
	for (size_t i = 0; i < cv->ncpu_lines; i++)
		fputs(cv->cpu_lines[i], out);
	fprintf(out, "result: coverage traces=%zu blocks=%zu edges=%zu insns=%llu insns_run=%llu modules=%zu gaps=%llu blocks_dropped=%llu edges_dropped=%llu\n",
		cv->ntraces, cv->nblocks, cv->nedges, insns, run, cv->nmods, gaps, t->blocks_dropped,
		t->edges_dropped);
}

int ptd_cov_write(struct ptd_cov *cv, const char *dir, FILE *out)
{
	char path[PATH_MAX], name[256], why[PATH_MAX + 128];
	struct lcov_totals *lt = calloc(cv->nmods + 1, sizeof(*lt));
	u32 *ids = calloc(cv->nmods + 1, sizeof(*ids));
	char **whys = calloc(cv->nmods + 1, sizeof(*whys));
	size_t nids = 0;
	FILE *full;
	int ret = 0;

	if (!lt || !ids || !whys)
		abort();
	module_counts(cv);
	for (u32 i = 0; i < cv->nmods; i++) {
		if (cv->mods[i].anon || !cv->mods[i].blocks)
			continue;
		ids[nids++] = i;
		file_name(cv->mods[i].name, ".drcov", name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (!write_drcov(cv, &i, 1, path))
			ret = -1;
		switch (write_lcov(cv, i, dir, &lt[i], why, sizeof(why))) {
		case 1: whys[i] = strdup(why); break;
		case -1: ret = -1; break;
		}
	}
	/* one file of every module, for a tool that loads several at once */
	snprintf(path, sizeof(path), "%s/all.drcov", dir);
	if (!write_drcov(cv, ids, nids, path))
		ret = -1;
	full = create(dir, "summary.txt", path, sizeof(path));
	if (!full) {
		ret = -1;
		goto out;
	}
	print_totals(cv, full);
	print_totals(cv, out);
	for (u32 i = 0; i < cv->nmods; i++)
		if (cv->mods[i].blocks)
			print_module(cv, i, &lt[i], whys[i], full, out);
	if (!close_ok(full, path))
		ret = -1;
	fprintf(out, "coverage: %s/summary.txt (every function), %s/*.drcov (Lighthouse, Cartographer), %s/*.info (genhtml)\n",
		dir, dir, dir);
out:
	for (size_t i = 0; i < cv->nmods; i++)
		free(whys[i]);
	free(whys);
	free(ids);
	free(lt);
	return ret;
}

/* ------------------------------------------------------------------- diff */

/* @b's module of the same name as @a's @mod, or -1. */
static long same_module(const struct ptd_cov *a, u32 mod, const struct ptd_cov *b)
{
	for (size_t i = 0; i < b->nmods; i++)
		if (!strcmp(b->mods[i].name, a->mods[mod].name))
			return (long)i;
	return -1;
}

static bool has_block(const struct ptd_cov *cv, long mod, u64 off)
{
	size_t s;

	if (mod < 0 || !cv->block_ix.cap)
		return false;
	for (s = block_hash((u32)mod, off) & (cv->block_ix.cap - 1); cv->block_ix.slot[s];
	     s = (s + 1) & (cv->block_ix.cap - 1)) {
		const struct cov_block *k = &cv->blocks[cv->block_ix.slot[s] - 1];

		if (k->mod == (u32)mod && k->off == off)
			return true;
	}
	return false;
}

static bool has_edge(const struct ptd_cov *cv, const struct cov_edge *key)
{
	size_t s;

	if (!cv->edge_ix.cap)
		return false;
	for (s = edge_hash(key) & (cv->edge_ix.cap - 1); cv->edge_ix.slot[s]; s = (s + 1) & (cv->edge_ix.cap - 1)) {
		const struct cov_edge *e = &cv->edges[cv->edge_ix.slot[s] - 1];

		if (e->from_mod == key->from_mod && e->from_off == key->from_off &&
		    e->to_mod == key->to_mod && e->to_off == key->to_off)
			return true;
	}
	return false;
}

static const char *where(const struct ptd_cov *cv, u32 mod, u64 off, char *buf, size_t size)
{
	const struct cov_mod *m = &cv->mods[mod];

	return ptd_format_addr(m->img, m->base + off, buf, size);
}

/* What @a reached that @b did not: blocks by module and offset, then edges. */
static void one_side(const struct ptd_cov *a, const struct ptd_cov *b, const char *na, const char *nb,
		     FILE *out, size_t *nblocks, size_t *nedges)
{
	long *to_b = calloc(a->nmods + 1, sizeof(*to_b));
	char x[320], y[320];

	if (!to_b)
		abort();
	for (u32 i = 0; i < a->nmods; i++)
		to_b[i] = same_module(a, i, b);
	*nblocks = *nedges = 0;
	fprintf(out, "blocks %s reached and %s did not:\n", na, nb);
	for (u32 i = 0; i < a->nmods; i++) {
		size_t n, *v = module_blocks(a, i, &n);

		for (size_t k = 0; k < n; k++) {
			const struct cov_block *bl = &a->blocks[v[k]];

			if (has_block(b, to_b[i], bl->off))
				continue;
			(*nblocks)++;
			fprintf(out, "  %-48s %llu hits, %u instructions\n", where(a, i, bl->off, x, sizeof(x)),
				bl->hits, bl->ninsn);
		}
		free(v);
	}
	fprintf(out, "edges %s took and %s did not:\n", na, nb);
	for (size_t i = 0; i < a->nedges; i++) {
		const struct cov_edge *e = &a->edges[i];
		struct cov_edge key = *e;

		if (to_b[e->from_mod] >= 0 && to_b[e->to_mod] >= 0) {
			key.from_mod = (u32)to_b[e->from_mod];
			key.to_mod = (u32)to_b[e->to_mod];
			if (has_edge(b, &key))
				continue;
		}
		(*nedges)++;
		fprintf(out, "  %s -> %s, %llu times\n", where(a, e->from_mod, e->from_off, x, sizeof(x)),
			where(a, e->to_mod, e->to_off, y, sizeof(y)), e->hits);
	}
	free(to_b);
}

void ptd_cov_diff(struct ptd_cov *a, struct ptd_cov *b, FILE *out)
{
	const char *na = a->ntraces ? a->traces[0] : "A", *nb = b->ntraces ? b->traces[0] : "B";
	size_t ab, ae, bb, be;

	module_counts(a);
	module_counts(b);
	fprintf(out, "coverage diff: A = %s (%zu blocks, %zu edges), B = %s (%zu blocks, %zu edges)\n", na,
		a->nblocks, a->nedges, nb, b->nblocks, b->nedges);
	one_side(a, b, "A", "B", out, &ab, &ae);
	one_side(b, a, "B", "A", out, &bb, &be);
	fprintf(out, "result: coverage.diff a_blocks=%zu b_blocks=%zu a_edges=%zu b_edges=%zu a_only_blocks=%zu b_only_blocks=%zu a_only_edges=%zu b_only_edges=%zu\n",
		a->nblocks, b->nblocks, a->nedges, b->nedges, ab, bb, ae, be);
}
