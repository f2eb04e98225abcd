// SPDX-License-Identifier: MIT
/*
 * Edge coverage from Intel PT packets (include/topaz/ptcov.h).
 *
 * The packets say only what the code could not: a TNT bit per conditional
 * branch (and per RET the decoder's return stack predicts), a TIP per
 * indirect branch, FUP/TIP.PGE/TIP.PGD where an event cut the flow. The rest
 * comes from the code, decoded once per block: a block is cached with its
 * final branch, and each of its successors, once known, is a pointer, so a
 * hot loop costs a lookup per TNT bit. A fuzzer's windows (the bitmap only)
 * go 16 TNT bits at a time through a cache of what they do from a block, as
 * libxdc does with 8 (struct tchunk).
 *
 * The decoder is driven by the packets as they arrive: a TNT appends bits
 * and walks as far as they go; a TIP first walks the direct flow to the
 * branch that needs it. Nothing is allocated after ptcov_create(), so a PMI
 * (an NMI, even) may feed it.
 */
#include <topaz/ptcov.h>
#include <topaz/pt_packet.h>
#include <topaz/x86_insn.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#ifdef TOPAZ_HOSTED
#include <stdlib.h>
#else
#include <topaz/mm.h>
#endif

#define RETSTACK	64	/* the SDM's compressed-RET depth (libipt's too) */
#define LOOP_LIMIT	(1u << 16)	/* direct branches without a packet: a loop */
#define BLOCK_MAX_INSNS	(1u << 16)	/* straight code without a branch: not code */
#define NONE		0u	/* no block: indices start at 1 */
#define CHUNK_BITS	16	/* TNT bits a chunk takes (libxdc's cache takes 8) */
#define CHUNK_MAX	32	/* block entries a chunk counts */
#define CHUNK_PUSH	2	/* return addresses a chunk may hold pushed */
#define CHUNK_POP	2	/* return addresses pushed before it a chunk may pop */
#define CHUNK_ORDER	12	/* 2^12 chunks of 256 bytes: 1 MiB */
#define CHUNK_KEY_SHIFT	24	/* a chunk's key: its block above its clip and bits */
#define CHUNK_PARTIAL	(1ull << 63)	/* in a chunk's key: made again once (chunk_build()) */

/* How a block ends, and so what its successor needs. */
enum kind {
	K_COND,		/* a TNT bit: succ[0] not taken, succ[1] taken */
	K_JMP,		/* nothing: succ[1] */
	K_CALL,		/* nothing: succ[1], the return address pushed */
	K_IND,		/* a TIP (indirect JMP) */
	K_IND_CALL,	/* a TIP, the return address pushed */
	K_RET,		/* a TNT bit (the stack's top) or a TIP */
	K_FAR,		/* a TIP (far transfer, INT n, #UD...) */
};

/*
 * A decoded block. @succ[]/@edge[] cache the successors (indices, NONE
 * unknown) and the edge to each; @ind/@ind_edge the last indirect one.
 * Invariant: a cached successor is a block whose start is the successor's
 * address; an edge index is valid only while @edge_gen matches the decoder's
 * (ptcov_clear() empties the edge list by moving the generation on).
 */
struct cblock {
	struct ptcov_block pub;
	u64 target;		/* direct target (K_COND, K_JMP, K_CALL) */
	u32 loc;		/* AFL's location id of the block */
	u32 succ[2], edge[2];
	u32 ind, ind_edge;
	u32 hnext;		/* hash chain */
	u32 edge_gen;
	u8 kind;
};

/*
 * What CHUNK_BITS TNT bits do from a block, as libxdc caches 8: the blocks
 * they enter and the bitmap entries those entries hit, so that a hot loop in
 * a fuzzer's window (the bitmap only) costs a lookup per CHUNK_BITS bits
 * (chunk_build(), walk_cached_as()). The walk only counts how often it took
 * each chunk; the counts become block hits, bitmap hits and the statistics
 * when the call that fed the bytes returns (chunks_settle()). The chunk
 * starts at a conditional branch of block @from whose entry is counted, goes
 * through conditional branches, direct JMPs and CALLs, and RETs (to the
 * return addresses it pushed itself, or to those on the return stack when it
 * was made, which the walk checks before it takes the chunk: @pop[]), and
 * ends at block @to with its entry pending, after @nbits bits. It goes on
 * through direct branches after its last bit only where the walk would: with
 * more bits pending than it has (chunk_key()'s @clip CHUNK_BITS + 1).
 * Invariant: it holds only what the cached successors say, which stay until
 * ptcov_flush_code() (which empties the chunks too), and no count (@count is
 * 0 whenever a public call returns): it is good for every window. @key 0: an
 * empty slot.
 */
struct tchunk {
	u64 key;		/* chunk_key(): @from, the bits there were, the bits */
	u32 to;
	u32 last;		/* the block whose branch entered @to */
	u32 prev;		/* AFL's prev_location after it: @last's id >> 1 */
	u32 insns;		/* instructions of @from and the entries it counts */
	u32 count;		/* times taken since the last chunks_settle(): not what it holds */
	u8 nbits;		/* bits taken (1 to CHUNK_BITS) */
	u8 nent;		/* entries counted: @ent[], @map[] */
	u8 npush;		/* return addresses left pushed: the ends of @push[] */
	u8 depth;		/* pushes held at once when one was popped again (0: none popped) */
	u8 last_slot;		/* @last's edge slot to @to: 0, 1, 2 for the indirect one */
	u8 direct;		/* direct branches after the last bit (walk()'s loop count) */
	u8 npop;		/* return addresses it pops from before it: @pop[] */
	u32 push[CHUNK_PUSH];	/* CALL blocks, oldest first */
	u32 pop[CHUNK_POP];	/* the blocks those RETs enter, the stack's top first */
	u32 ent[CHUNK_MAX];	/* the blocks entered, in order */
	u16 map[CHUNK_MAX];	/* the bitmap entry each entry hits */
} __aligned(64);	/* a chunk in four lines, not five */

enum state {
	S_NOSYNC,	/* looking for a PSB */
	S_PSB,		/* inside PSB+, synchronising */
	S_OFF,		/* synchronised, PacketEn 0 */
	S_ON,		/* synchronised, in block @cur */
	S_OVF,		/* after OVF: waiting for the FUP or TIP.PGE that resumes */
};

struct ptcov {
	struct ptcov_config cfg;
	struct ptcov_stats st;

	/* the code: blocks 1..nblocks, hashed by start */
	struct cblock *blk;
	u32 nblocks, *bhash, bmask;
	struct cblock scratch;	/* a block decoded when the cache is full */

	/* what was reached */
	u8 *bitmap;
	u32 mapmask;
	u32 *touched;		/* the bitmap's non-zero entries, in the order first hit */
	u32 ntouched;
	u32 *reached;		/* block indices, in the order first reached */
	struct ptcov_edge *edges;
	u32 nedges, *ehash, emask, edge_gen;
	bool no_edges;		/* ptcov_set_edge_list(c, false): the bitmap only */
	struct tchunk *chunks;	/* the bitmap only's TNT cache; NULL: a bitmap over 64 KiB */
	/*
	 * @cused: the chunks whose @count went from 0 since the last
	 * chunks_settle() (an index may repeat: chunk_build() settles a chunk
	 * it replaces). Invariant: empty, and every count 0, whenever a public
	 * call returns.
	 */
	u32 *cused, ncused;

	/* the stream */
	enum state state;
	u32 psb_match;		/* PSB pattern bytes matched while S_NOSYNC */
	bool psb_fup;		/* a FUP inside this PSB+: PacketEn is 1 */
	bool fup_pending;	/* an event's FUP, waiting for its TIP or TIP.PGD */
	bool fup_bound;		/* the next FUP belongs to a PTW or EXSTOP */
	u64 fup_ip, psb_ip;
	u64 last_ip;
	/*
	 * The block the flow is in (S_ON). Its entry is counted once its first
	 * instruction is known to have run (@pend until then): an event whose
	 * FUP is the block's start came before it, as libipt sees it too.
	 * @pend_from is the block whose branch led here (NULL: a cut), and
	 * @pend_slot that block's cached edge to here.
	 */
	struct cblock *cur;
	bool pend;
	struct cblock *pend_from;
	u32 *pend_slot;
	u32 prev_loc;		/* AFL's prev_location */
	bool pgd_stop;		/* a TIP.PGD to @pgd_ip: a direct branch there leaves */
	u64 pgd_ip;
	u64 tnt;		/* pending TNT bits, the oldest at bit @ntnt-1 */
	u32 ntnt;
	u64 rs[RETSTACK];
	u32 rs_top, rs_len;
	u8 carry[PTPK_MAX_SIZE];	/* a packet cut between two feeds */
	u32 ncarry;
	/*
	 * While a TNT-64 is walked (on_tnt()), the bytes after it in the
	 * buffer: the walk takes the TNT-64s that follow from there itself
	 * (tnt_pull()), @pulled bytes of them, instead of returning for each.
	 * NULL otherwise.
	 */
	const u8 *next_p;
	size_t next_n, pulled;
	u64 off;		/* the stream offset of the packet being decoded */
};

static const char *const gap_names[PTCOV_NR_GAPS] = {
	[PTCOV_GAP_LOST] = "lost", [PTCOV_GAP_OVF] = "overflow",
	[PTCOV_GAP_NOCODE] = "no-code", [PTCOV_GAP_BADINSN] = "bad-insn",
	[PTCOV_GAP_DESYNC] = "desync", [PTCOV_GAP_LOOP] = "loop",
};

const char *ptcov_gap_name(enum ptcov_gap kind)
{
	return (unsigned)kind < PTCOV_NR_GAPS ? gap_names[kind] : "?";
}

/* ------------------------------------------------------------ memory */

static void *mem_alloc(size_t size, unsigned int gfp)
{
#ifdef TOPAZ_HOSTED
	(void)gfp;
	return calloc(1, size);
#else
	uintptr_t p = __get_free_pages((gfp_t)gfp | __GFP_ZERO, get_order(size));

	return (void *)p;
#endif
}

static void mem_free(void *p, size_t size)
{
#ifdef TOPAZ_HOSTED
	(void)size;
	free(p);
#else
	free_pages((uintptr_t)p, get_order(size));
#endif
}

static u32 pow2_at_least(u32 n)
{
	u32 p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

#define BLK_BYTES(c)	((size_t)((c)->cfg.max_blocks + 1) * sizeof(struct cblock))
#define BHASH_BYTES(c)	((size_t)((c)->bmask + 1) * sizeof(u32))
#define REACH_BYTES(c)	((size_t)(c)->cfg.max_blocks * sizeof(u32))
#define EDGE_BYTES(c)	((size_t)(c)->cfg.max_edges * sizeof(struct ptcov_edge))
#define EHASH_BYTES(c)	((size_t)((c)->emask + 1) * sizeof(u32))
#define TOUCH_BYTES(c)	((size_t)(c)->cfg.bitmap_size * sizeof(u32))
#define CHUNK_BYTES	(sizeof(struct tchunk) << CHUNK_ORDER)
#define CUSED_BYTES	(sizeof(u32) << CHUNK_ORDER)

struct ptcov *ptcov_create(const struct ptcov_config *cfg, unsigned int gfp)
{
	struct ptcov *c;

	if (!cfg->read || (cfg->bitmap_size & (cfg->bitmap_size - 1)) ||
	    cfg->max_blocks > (1u << 26) || cfg->max_edges > (1u << 28))
		return NULL;
	c = mem_alloc(sizeof(*c), gfp);
	if (!c)
		return NULL;
	c->cfg = *cfg;
	if (!c->cfg.bitmap_size)
		c->cfg.bitmap_size = PTCOV_BITMAP_DEFAULT;
	if (!c->cfg.max_blocks)
		c->cfg.max_blocks = 16384;
	if (!c->cfg.max_edges)
		c->cfg.max_edges = 4 * c->cfg.max_blocks;
	c->mapmask = c->cfg.bitmap_size - 1;
	c->bmask = pow2_at_least(2 * c->cfg.max_blocks) - 1;
	c->emask = pow2_at_least(2 * c->cfg.max_edges) - 1;
	c->blk = mem_alloc(BLK_BYTES(c), gfp);
	c->bhash = mem_alloc(BHASH_BYTES(c), gfp);
	c->reached = mem_alloc(REACH_BYTES(c), gfp);
	c->edges = mem_alloc(EDGE_BYTES(c), gfp);
	c->ehash = mem_alloc(EHASH_BYTES(c), gfp);
	c->bitmap = mem_alloc(c->cfg.bitmap_size, gfp);
	c->touched = mem_alloc(TOUCH_BYTES(c), gfp);
	/*
	 * The chunks only speed up the bitmap-only walk: without the memory
	 * (or with a bitmap over 64 KiB: a chunk's entries are 16 bits) it
	 * goes block by block.
	 */
	if (c->cfg.bitmap_size <= 0x10000) {
		c->chunks = mem_alloc(CHUNK_BYTES, gfp);
		c->cused = mem_alloc(CUSED_BYTES, gfp);
		if (!c->chunks || !c->cused) {
			if (c->chunks)
				mem_free(c->chunks, CHUNK_BYTES);
			if (c->cused)
				mem_free(c->cused, CUSED_BYTES);
			c->chunks = NULL;
			c->cused = NULL;
		}
	}
	if (!c->blk || !c->bhash || !c->reached || !c->edges || !c->ehash || !c->bitmap ||
	    !c->touched) {
		ptcov_destroy(c);
		return NULL;
	}
	c->edge_gen = 1;
	c->st.gap_kind = PTCOV_NR_GAPS;
	ptcov_begin_stream(c);
	return c;
}

void ptcov_destroy(struct ptcov *c)
{
	if (!c)
		return;
	if (c->blk)
		mem_free(c->blk, BLK_BYTES(c));
	if (c->bhash)
		mem_free(c->bhash, BHASH_BYTES(c));
	if (c->reached)
		mem_free(c->reached, REACH_BYTES(c));
	if (c->edges)
		mem_free(c->edges, EDGE_BYTES(c));
	if (c->ehash)
		mem_free(c->ehash, EHASH_BYTES(c));
	if (c->bitmap)
		mem_free(c->bitmap, c->cfg.bitmap_size);
	if (c->touched)
		mem_free(c->touched, TOUCH_BYTES(c));
	if (c->chunks)
		mem_free(c->chunks, CHUNK_BYTES);
	if (c->cused)
		mem_free(c->cused, CUSED_BYTES);
	mem_free(c, sizeof(*c));
}

/* ------------------------------------------------------------ the stream */

static void commit(struct ptcov *c);
static void run_out(struct ptcov *c);
static void chunks_settle(struct ptcov *c);

static void cut(struct ptcov *c)
{
	c->pend_from = NULL;
	c->pend_slot = NULL;
	c->prev_loc = 0;
}

/* Back to looking for a PSB: the flow is lost until then. The block the
 * flow was in ran up to the branch it could not follow. */
static void lose_sync(struct ptcov *c)
{
	commit(c);
	c->state = S_NOSYNC;
	c->psb_match = 0;
	c->cur = NULL;
	c->ntnt = 0;
	c->tnt = 0;
	c->fup_pending = c->fup_bound = false;
	c->rs_len = 0;
	cut(c);
}

static void gap(struct ptcov *c, enum ptcov_gap kind)
{
	if (c->st.gap_kind == PTCOV_NR_GAPS && kind != PTCOV_GAP_LOST && kind != PTCOV_GAP_OVF) {
		c->st.gap_kind = kind;
		c->st.gap_off = c->off;
		c->st.gap_ip = c->cur ? c->cur->pub.start : 0;
	}
	c->st.gaps[kind]++;
	lose_sync(c);
}

void ptcov_begin_stream(struct ptcov *c)
{
	lose_sync(c);
	c->off = 0;
	c->pgd_stop = false;
	c->ncarry = 0;
	c->last_ip = 0;
}

void ptcov_gap(struct ptcov *c, enum ptcov_gap kind)
{
	if ((unsigned)kind >= PTCOV_NR_GAPS)
		kind = PTCOV_GAP_LOST;
	run_out(c);
	c->ncarry = 0;
	gap(c, kind);
	chunks_settle(c);
}

/* ------------------------------------------------------------ blocks */

static u32 addr_hash(u64 a)
{
	return (u32)((a * 0x9e3779b97f4a7c15ULL) >> 32);
}

static u32 blk_index(struct ptcov *c, const struct cblock *b)
{
	return b == &c->scratch ? NONE : (u32)(b - c->blk);
}

static enum kind kind_of(const struct x86_insn *in)
{
	switch (in->cofi) {
	case X86_COFI_COND:
		return K_COND;
	case X86_COFI_DIRECT:
		return in->cls == X86_INSN_CALL_DIRECT ? K_CALL : K_JMP;
	case X86_COFI_INDIRECT:
		return in->cls == X86_INSN_CALL_INDIRECT ? K_IND_CALL : K_IND;
	case X86_COFI_RET:
		return K_RET;
	default:
		return K_FAR;
	}
}

/*
 * Decode the block at @start into @b: instructions up to and including the
 * first change of flow. Return: 0, or the gap that stops the flow here.
 */
static int decode_block(struct ptcov *c, u64 start, struct cblock *b)
{
	u64 ip = start;
	u32 n = 0;

	c->st.block_decodes++;
	for (;;) {
		u8 buf[X86_INSN_MAX_LEN + 1];
		struct x86_insn in;
		size_t got = c->cfg.read(c->cfg.read_ctx, ip, buf, sizeof(buf));
		int err;

		if (!got)
			return PTCOV_GAP_NOCODE;
		err = x86_insn_decode(buf, got, &in);
		if (err == -ENODATA)
			return PTCOV_GAP_NOCODE;
		if (err)
			return PTCOV_GAP_BADINSN;
		n++;
		if (in.cofi != X86_COFI_NONE) {
			memset(b, 0, sizeof(*b));
			b->pub.start = start;
			b->pub.end = ip + in.length;
			b->pub.ninsn = n;
			b->kind = (u8)kind_of(&in);
			if (x86_insn_has_target(&in))
				b->target = x86_insn_branch_target(&in, ip);
			b->loc = addr_hash(start) & c->mapmask;
			return 0;
		}
		if (n >= BLOCK_MAX_INSNS)
			return PTCOV_GAP_BADINSN;
		ip += in.length;
	}
}

/* The cached block that starts at @start: its index, NONE if there is none. */
static u32 block_cached(const struct ptcov *c, u64 start)
{
	u32 i;

	for (i = c->bhash[addr_hash(start) & c->bmask]; i; i = c->blk[i].hnext)
		if (c->blk[i].pub.start == start)
			return i;
	return NONE;
}

/* The cached block at @start, decoding it on a miss; NULL after a gap. */
static struct cblock *block(struct ptcov *c, u64 start)
{
	u32 h = addr_hash(start) & c->bmask, i;
	struct cblock *b;
	int g;

	i = block_cached(c, start);
	if (i)
		return &c->blk[i];
	if (c->nblocks < c->cfg.max_blocks)
		b = &c->blk[c->nblocks + 1];
	else
		b = &c->scratch;
	g = decode_block(c, start, b);
	if (g) {
		gap(c, (enum ptcov_gap)g);
		return NULL;
	}
	if (b == &c->scratch) {
		c->st.blocks_dropped++;
		return b;
	}
	i = ++c->nblocks;
	b->hnext = c->bhash[h];
	c->bhash[h] = i;
	return b;
}

/* ------------------------------------------------------------ what was reached */

static u32 edge_slot(struct ptcov *c, u64 from, u64 to)
{
	return addr_hash(from ^ (to * 31) ^ (to >> 7)) & c->emask;
}

/* The edge @from -> @to in the list, added if new; NONE when the list is full. */
static u32 edge_find(struct ptcov *c, u64 from, u64 to)
{
	u32 h = edge_slot(c, from, to), i;

	while ((i = c->ehash[h])) {
		if (c->edges[i - 1].from == from && c->edges[i - 1].to == to)
			return i;
		h = (h + 1) & c->emask;
	}
	if (c->nedges >= c->cfg.max_edges) {
		c->st.edges_dropped++;
		return NONE;
	}
	c->edges[c->nedges] = (struct ptcov_edge){ .from = from, .to = to };
	i = ++c->nedges;
	c->ehash[h] = i;
	c->st.edges = c->nedges;
	return i;
}

/* The edge @p -> @b taken once more; @slot: @p's cache of it. */
static void count_edge(struct ptcov *c, struct cblock *p, struct cblock *b, u32 *slot)
{
	u32 e;

	if (c->no_edges)
		return;
	if (slot && p->edge_gen == c->edge_gen && *slot) {
		c->edges[*slot - 1].hits++;
		return;
	}
	if (p == &c->scratch || b == &c->scratch) {
		c->st.edges_dropped++;
		return;
	}
	if (p->edge_gen != c->edge_gen) {
		p->edge[0] = p->edge[1] = p->ind_edge = NONE;
		p->edge_gen = c->edge_gen;
	}
	e = edge_find(c, p->pub.start, b->pub.start);
	if (!e)
		return;
	c->edges[e - 1].hits++;
	if (slot)
		*slot = e;
}

/*
 * One more hit of bitmap entry @i (saturating); its first is listed, so that
 * a fuzzer's news test and ptcov_clear() visit the window's entries only
 * (an entry is zero only until its first hit: each is listed once).
 */
static __always_inline void bitmap_hit(u8 *map, u32 *touched, u32 *ntouched, u32 i)
{
	u8 v = map[i];

	if (!v)
		touched[(*ntouched)++] = i;
	map[i] = v + (v != 0xff);
}

/* @k more entries into block @b, a cached one: listed at its first. */
static __always_inline void block_hits(struct ptcov *c, struct cblock *b, u32 k)
{
	if (unlikely(!b->pub.hits) && c->st.blocks < c->cfg.max_blocks)
		c->reached[c->st.blocks++] = (u32)(b - c->blk);
	b->pub.hits += k;
}

/* The current block's first instruction ran: count its entry. */
static __always_inline void commit_fast(struct ptcov *c)
{
	struct cblock *b = c->cur;

	c->pend = false;
	bitmap_hit(c->bitmap, c->touched, &c->ntouched, (b->loc ^ c->prev_loc) & c->mapmask);
	c->prev_loc = b->loc >> 1;
	if (b == &c->scratch)
		b->pub.hits++;	/* counted, never listed */
	else
		block_hits(c, b, 1);
	c->st.transitions++;
	c->st.insns += b->pub.ninsn;
	if (c->pend_from)
		count_edge(c, c->pend_from, b, c->pend_slot);
}

static void commit(struct ptcov *c)
{
	if (c->pend && c->cur)
		commit_fast(c);
	c->pend = false;
}

/* The flow goes from the current block to @b (@slot: the edge's cache). */
static __always_inline void enter(struct ptcov *c, struct cblock *b, u32 *slot)
{
	c->pend_from = c->cur;
	c->pend_slot = slot;
	c->cur = b;
	c->pend = true;
}

/* The flow resumes at @ip after a cut (an enable, an event, a resync). */
static void resume(struct ptcov *c, u64 ip)
{
	struct cblock *b;

	commit(c);
	c->cur = NULL;
	cut(c);
	c->state = S_ON;
	b = block(c, ip);
	if (!b)
		return;
	c->cur = b;
	c->pend = true;
}

/* Follow @from's (the current block's) successor @which, at @to. */
static __always_inline bool go(struct ptcov *c, struct cblock *from, unsigned int which, u64 to)
{
	struct cblock *b;

	if (c->pend)
		commit_fast(c);
	if (from != &c->scratch && from->succ[which]) {
		b = &c->blk[from->succ[which]];
	} else {
		b = block(c, to);
		if (!b)
			return false;
		if (from != &c->scratch && b != &c->scratch)
			from->succ[which] = blk_index(c, b);
	}
	enter(c, b, from == &c->scratch ? NULL : &from->edge[which]);
	return true;
}

/* An indirect successor at @to: one remembered target per block. */
static bool go_ind(struct ptcov *c, struct cblock *from, u64 to)
{
	struct cblock *b;

	commit(c);
	if (from != &c->scratch && from->ind && c->blk[from->ind].pub.start == to) {
		enter(c, &c->blk[from->ind], &from->ind_edge);
		return true;
	}
	b = block(c, to);
	if (!b)
		return false;
	if (from != &c->scratch && b != &c->scratch) {
		from->ind = blk_index(c, b);
		from->ind_edge = NONE;
		enter(c, b, &from->ind_edge);
	} else {
		enter(c, b, NULL);
	}
	return true;
}

static void rs_push(struct ptcov *c, u64 ret)
{
	c->rs_top = (c->rs_top + 1) % RETSTACK;
	c->rs[c->rs_top] = ret;
	if (c->rs_len < RETSTACK)
		c->rs_len++;
}

static bool rs_pop(struct ptcov *c, u64 *ret)
{
	if (!c->rs_len)
		return false;
	*ret = c->rs[c->rs_top];
	c->rs_top = (c->rs_top + RETSTACK - 1) % RETSTACK;
	c->rs_len--;
	return true;
}

/* The pending FUP's IP is in @b, at or after its start. */
static bool fup_in(const struct ptcov *c, const struct cblock *b)
{
	return c->fup_pending && c->fup_ip >= b->pub.start && c->fup_ip < b->pub.end;
}

/* What walk() stopped at. */
enum stop {
	W_NEED,		/* the current block's branch needs a packet not yet here */
	W_FUP,		/* the flow reached the pending FUP's IP */
	W_LOST,		/* a gap: the stream is unsynchronised */
};

/*
 * Run the flow as far as the pending TNT bits and the code take it: every
 * conditional branch and compressed RET takes a bit, direct branches none.
 * A pending FUP binds once the bits before it are used up (the trace unit
 * sent them first), at the first block that holds its IP; a pending TIP.PGD
 * stops the flow at a direct branch to its IP. With the bits used up, direct
 * branches are followed only when @eager (the packet that came needs the
 * flow further on): an event's FUP may yet come for a point before them.
 */
/*
 * walk()'s common case, in locals (the bitmap's byte stores would otherwise
 * make the compiler reload every field): TNT bits through blocks whose
 * successor and edge are cached. Conditional branches, direct JMP/CALL and
 * RETs whose popped address is the cached target; anything else returns to
 * walk(). Ends with @c as walk() would leave it. @direct: walk()'s count of
 * direct branches since the last bit, carried on here and back, so that a
 * loop of direct branches is cut after LOOP_LIMIT in all (counted afresh on
 * each call, walk() let 2^32 by, and the block's hit count wrapped).
 */
/* walk_cached(): block @b's first instruction ran; its entry counted in the loop's locals */
static __always_inline void walk_entry(struct ptcov *c, struct cblock *b, u8 *map, u32 *touched,
				       u32 *ntouched, u32 mask, u32 *prev_loc, u64 *insns)
{
	bitmap_hit(map, touched, ntouched, (b->loc ^ *prev_loc) & mask);
	*prev_loc = b->loc >> 1;
	block_hits(c, b, 1);
	*insns += b->pub.ninsn;
}

_Static_assert(sizeof(struct tchunk) == 256, "a chunk in four 64-byte lines");

/*
 * A chunk's key: block @bi, @clip the TNT bits pending but CHUNK_BITS + 1 for
 * more (a chunk that ends with bits to spare goes on through direct branches;
 * one that takes the last bits stops there, as the walk does), and @bits the
 * next CHUNK_BITS of them, the oldest at the top, those past the last 0.
 * Never 0: block indices start at 1.
 */
static __always_inline u64 chunk_key(u32 bi, u32 clip, u32 bits)
{
	return (u64)bi << CHUNK_KEY_SHIFT | clip << CHUNK_BITS | bits;
}

static __always_inline struct tchunk *chunk_slot(struct ptcov *c, u64 key)
{
	return &c->chunks[(key * 0x9e3779b97f4a7c15ull) >> (64 - CHUNK_ORDER)];
}

/* Whether the return stack holds the addresses chunk @ch's RETs go to (@ch->pop[]). */
static __always_inline bool chunk_pops_match(const struct ptcov *c, const struct tchunk *ch)
{
	if (c->rs_len < ch->npop)
		return false;
	for (u32 i = 0; i < ch->npop; i++)
		if (c->rs[(c->rs_top + RETSTACK - i) % RETSTACK] != c->blk[ch->pop[i]].pub.start)
			return false;
	return true;
}

/* Chunk @ch's count taken into the bitmap, the blocks' hits and the
 * statistics (struct tchunk). */
static void chunk_settle_one(struct ptcov *c, struct tchunk *ch)
{
	struct cblock *blk = c->blk;
	u8 *map = c->bitmap;
	u32 k = ch->count;

	ch->count = 0;
	/* the start's entry: its bitmap hit was counted at once (the entry
	 * before it decides which), its hits are here */
	block_hits(c, &blk[(ch->key & ~CHUNK_PARTIAL) >> CHUNK_KEY_SHIFT], k);
	for (u32 i = 0; i < ch->nent; i++) {
		u32 m = ch->map[i], v = map[m];

		if (!v)
			c->touched[c->ntouched++] = m;
		/* k saturating increments: the order of hits does not matter */
		map[m] = (u8)(k >= 0xff - v ? 0xff : v + k);
		block_hits(c, &blk[ch->ent[i]], k);
	}
	c->st.transitions += (u64)k * (1 + ch->nent);
	c->st.insns += (u64)k * ch->insns;
	c->st.tnt_bits += (u64)k * ch->nbits;
}

/* Every chunk count taken in: what a public call leaves. */
static void chunks_settle(struct ptcov *c)
{
	for (u32 j = 0; j < c->ncused; j++) {
		struct tchunk *ch = &c->chunks[c->cused[j]];

		if (ch->count)
			chunk_settle_one(c, ch);
	}
	c->ncused = 0;
}

/*
 * Make @ch the chunk @key (chunk_key()) from block @b, a conditional branch
 * whose entry is counted (struct tchunk). It stops at the block its last bit
 * entered (or after the direct branches that follow, with bits to spare), or
 * before a branch it cannot take from what is cached: a successor not seen
 * yet, a RET to a return address it did not push (nor the stack holds, at
 * most CHUNK_POP, and only with @pops), an indirect or far branch, CHUNK_MAX
 * entries, CHUNK_PUSH calls deep. A chunk made while the walk's first pass
 * through the code had not cached the successor it stopped at yet is marked
 * (with @mark, CHUNK_PARTIAL in its key), and made again the next time it is
 * looked up: once. Return: whether it took a bit (else @ch is left empty).
 */
static __noinline bool chunk_build(struct ptcov *c, struct cblock *b, u64 key, struct tchunk *ch,
				   bool pops, bool mark)
{
	struct cblock *blk = c->blk, *x = b, *prev = b;
	u32 clip = (u32)(key >> CHUNK_BITS) & 0xff, bits = (u32)key & ((1u << CHUNK_BITS) - 1);
	u32 avail = clip < CHUNK_BITS ? clip : CHUNK_BITS;
	u32 nbits = 0, nent = 0, direct = 0, sp = 0, depth = 0, npop = 0, insns = b->pub.ninsn;
	unsigned int slot = 1;
	bool popped = false, first = true, partial = false;

	if (ch->count)
		chunk_settle_one(c, ch);	/* the chunk it replaces */

	for (;;) {
		unsigned int bit = CHUNK_BITS - 1 - nbits, s;
		u32 n;

		if (x->kind == K_COND) {
			if (nbits == avail)
				break;
			s = (bits >> bit) & 1;
			n = x->succ[s];
		} else if (x->kind == K_JMP || x->kind == K_CALL) {
			/* with the bits used up, the walk stops here */
			if (nbits == clip)
				break;
			s = 1;
			n = x->succ[1];
			if (x->kind == K_CALL && x->target != x->pub.end && sp == CHUNK_PUSH)
				break;
		} else if (x->kind == K_RET) {
			if (nbits == avail || !((bits >> bit) & 1))
				break;
			s = 2;
			n = x->ind;
			if (sp) {	/* its own push */
				if (n && blk[n].pub.start != blk[ch->push[sp - 1]].pub.end)
					n = NONE;
			} else {	/* what the stack holds now, the next one down */
				if (!pops || npop == CHUNK_POP || c->rs_len <= npop ||
				    (n && blk[n].pub.start != c->rs[(c->rs_top + RETSTACK - npop) % RETSTACK]))
					n = NONE;
			}
		} else {
			break;
		}
		if (!n) {
			partial = mark;
			break;
		}
		if (!first && nent == CHUNK_MAX)
			break;
		if (!first) {	/* @b's entry is counted before the chunk */
			ch->ent[nent] = (u32)(x - blk);
			ch->map[nent] = (u16)((x->loc ^ (prev->loc >> 1)) & c->mapmask);
			insns += x->pub.ninsn;
			nent++;
		}
		if (x->kind == K_COND || x->kind == K_RET) {
			nbits++;
			direct = 0;
			if (x->kind == K_RET && sp) {
				sp--;
				popped = true;
			} else if (x->kind == K_RET) {
				ch->pop[npop++] = n;
			}
		} else {
			direct++;
			if (x->kind == K_CALL && x->target != x->pub.end) {
				ch->push[sp++] = (u32)(x - blk);
				depth = sp > depth ? sp : depth;
			}
		}
		prev = x;
		slot = s;
		x = &blk[n];
		first = false;
	}
	if (!nbits) {
		ch->key = 0;
		return false;
	}
	ch->key = key | (partial ? CHUNK_PARTIAL : 0);
	ch->to = (u32)(x - blk);
	ch->last = (u32)(prev - blk);
	ch->prev = prev->loc >> 1;
	ch->insns = insns;
	ch->nbits = (u8)nbits;
	ch->nent = (u8)nent;
	ch->npush = (u8)sp;
	ch->depth = (u8)(popped ? depth : 0);
	ch->last_slot = (u8)slot;
	ch->direct = (u8)direct;
	ch->npop = (u8)npop;
	return true;
}

/*
 * A TNT-64 at @p (8 bytes there): its bits in @bits, the oldest highest.
 * Return: how many (0 to 47), -1 without a stop bit. x86: little-endian.
 */
static __always_inline int tnt64_bits(const u8 *p, u64 *bits)
{
	u64 v;
	int nb;

	__builtin_memcpy(&v, p, sizeof(v));
	v >>= 16;
	if (!v)
		return -1;
	nb = 63 - __builtin_clzll(v);
	*bits = v & ((1ULL << nb) - 1);
	return nb;
}

/*
 * The pending bits used up: the next packet's, if it is a TNT-64 right after
 * the one being walked, taken here as on_tnt() would take it with no bits
 * pending (walk(), between, would only find the flow needs more). Return:
 * how many (0: none).
 */
static __always_inline u32 tnt_pull(struct ptcov *c, u64 *tnt)
{
	const u8 *p = c->next_p;
	u64 bits;
	int nb;

	if (!p || c->next_n < 8 || p[0] != 0x02 || p[1] != 0xa3)
		return 0;
	nb = tnt64_bits(p, &bits);
	if (nb <= 0)	/* no bits, or no stop bit: packet() says which */
		return 0;
	c->next_p += 8;
	c->next_n -= 8;
	c->pulled += 8;
	c->off += 8;	/* the packet decoded now: where a gap says it was */
	c->st.packets++;
	*tnt = bits;
	return (u32)nb;
}

static __always_inline void walk_cached_as(struct ptcov *c, u32 *directp, const bool edges_on)
{
	struct cblock *blk = c->blk, *b = c->cur, *from = c->pend_from;
	u8 *map = c->bitmap;
	u32 *touched = c->touched, ntouched = c->ntouched;
	struct ptcov_edge *edges = c->edges;
	u32 *slot = c->pend_slot, mask = c->mapmask, gen = c->edge_gen;
	u32 prev_loc = c->prev_loc, ntnt = c->ntnt;
	u64 tnt = c->tnt, trans = 0, insns = 0, bits = 0;
	bool pend = c->pend;
	/* the cached edge from @from is known good after the first step */
	bool slot_ok = from && slot && from->edge_gen == gen && *slot;
	u32 direct = *directp;

	while ((ntnt || (ntnt = tnt_pull(c, &tnt))) && direct < LOOP_LIMIT) {
		unsigned int bit = 1;
		u32 n;
		u32 *nslot;

		if (!edges_on && pend) {
			/*
			 * The bitmap only (a fuzzer's windows): runs of conditional
			 * branches and direct JMPs and CALLs with nothing else to
			 * do, the next bit at the top of @t. The loop below takes
			 * the block this stops at (a RET, a successor not cached).
			 */
			u64 t = tnt << (64 - ntnt);	/* ntnt is 1 to 64, the bits after 0 */
			struct tchunk *chunks = c->chunks;
			/* @b's index (NONE for the scratch block: no chunk), and the
			 * chunk that took the flow to it (NULL: a block's step) */
			u32 bi = b == &c->scratch ? NONE : (u32)(b - blk);
			const struct tchunk *lastch = NULL;

			for (;;) {
				if (b->kind == K_COND && chunks && bi) {
					/* CHUNK_BITS TNT bits at once (struct tchunk) */
					u64 key = chunk_key(bi, ntnt <= CHUNK_BITS ? ntnt : CHUNK_BITS + 1,
							    (u32)(t >> (64 - CHUNK_BITS)));
					struct tchunk *ch = chunk_slot(c, key);
					bool ok = ch->key == key;

					if (unlikely(!ok)) {
						/* made before its successors were cached? */
						bool mark = ch->key != (key | CHUNK_PARTIAL);

						/* it may settle the chunk it replaces */
						c->ntouched = ntouched;
						ok = chunk_build(c, b, key, ch, true, mark);
						ntouched = c->ntouched;
					}
					if (likely(ok) && unlikely(ch->npop) && !chunk_pops_match(c, ch)) {
						/*
						 * A RET of it goes elsewhere now: a function
						 * called from more than one place. Made again
						 * to stop before it; the stack gives its target
						 * below.
						 */
						c->ntouched = ntouched;
						ok = chunk_build(c, b, key, ch, false, false);
						ntouched = c->ntouched;
					}
					if (likely(ok) &&
					    (likely(!ch->depth) || c->rs_len + ch->depth <= RETSTACK)) {
						/* @b's entry: its bitmap hit now (it depends on the
						 * block before); its hits, the chunk's entries and
						 * the statistics when the chunk is settled */
						bitmap_hit(map, touched, &ntouched, (b->loc ^ prev_loc) & mask);
						if (!ch->count) {
							if (unlikely(c->ncused == 1u << CHUNK_ORDER)) {
								c->ntouched = ntouched;
								chunks_settle(c);
								ntouched = c->ntouched;
							}
							c->cused[c->ncused++] = (u32)(ch - chunks);
						}
						ch->count++;
						if (unlikely(ch->npop)) {	/* chunk_pops_match() */
							c->rs_top = (c->rs_top + RETSTACK - ch->npop) % RETSTACK;
							c->rs_len -= ch->npop;
						}
						for (u32 i = 0; unlikely(i < ch->npush); i++)
							rs_push(c, blk[ch->push[i]].pub.end);
						ntnt -= ch->nbits;
						t <<= ch->nbits;
						direct = ch->direct;
						prev_loc = ch->prev;
						bi = ch->to;
						b = &blk[bi];
						lastch = ch;
						if (!ntnt)
							break;
						continue;
					}
				}
				if (b->kind == K_COND) {
					bit = (unsigned int)(t >> 63);
					n = b->succ[bit];
					if (!n)
						break;
					t <<= 1;
					ntnt--;
					bits++;
					direct = 0;
				} else if (b->kind == K_JMP || b->kind == K_CALL) {
					bit = 1;
					n = b->succ[1];
					if (!n)
						break;
					direct++;
					if (b->kind == K_CALL && b->target != b->pub.end)
						rs_push(c, b->pub.end);
				} else {
					break;
				}
				walk_entry(c, b, map, touched, &ntouched, mask, &prev_loc, &insns);
				trans++;
				from = b;
				slot = &b->edge[bit];
				bi = n;
				b = &blk[n];
				lastch = NULL;
				if (!ntnt || direct >= LOOP_LIMIT)
					break;
			}
			if (lastch) {	/* where the last chunk left the flow */
				from = &blk[lastch->last];
				slot = lastch->last_slot == 2 ? &from->ind_edge
							      : &from->edge[lastch->last_slot];
			}
			if (!ntnt || direct >= LOOP_LIMIT)
				continue;	/* the loop's test: the next TNT-64, or the end */
		}
		if (b->kind == K_COND) {
			bit = (tnt >> (ntnt - 1)) & 1;
			n = b->succ[bit];
			nslot = &b->edge[bit];
		} else if (b->kind == K_JMP || b->kind == K_CALL) {
			n = b->succ[1];
			nslot = &b->edge[1];
		} else if (b->kind == K_RET) {
			if (!((tnt >> (ntnt - 1)) & 1) || !c->rs_len)
				break;
			if (!b->ind || blk[b->ind].pub.start != c->rs[c->rs_top]) {
				/*
				 * Another return address than last time (a
				 * function called from more than one place): its
				 * block, if cached, as go_ind() would take it. With
				 * the edge list, go_ind() lists the edge.
				 */
				u32 r;

				if (edges_on || b == &c->scratch ||
				    !(r = block_cached(c, c->rs[c->rs_top])))
					break;
				b->ind = r;
				b->ind_edge = NONE;
			}
			n = b->ind;
			nslot = &b->ind_edge;
		} else {
			break;
		}
		if (!n || (edges_on && (b->edge_gen != gen || !*nslot)))
			break;
		if (pend) {
			/* b's first instruction ran: count its entry */
			walk_entry(c, b, map, touched, &ntouched, mask, &prev_loc, &insns);
			trans++;
			if (edges_on && slot_ok)
				edges[*slot - 1].hits++;
			else if (edges_on && from)
				count_edge(c, from, b, slot);
		}
		if (b->kind == K_COND || b->kind == K_RET) {
			ntnt--;
			bits++;
			direct = 0;
			if (b->kind == K_RET) {
				c->rs_top = (c->rs_top + RETSTACK - 1) % RETSTACK;
				c->rs_len--;
			}
		} else {
			direct++;
			if (b->kind == K_CALL && b->target != b->pub.end)
				rs_push(c, b->pub.end);
		}
		pend = true;
		from = b;
		slot = nslot;
		slot_ok = true;
		b = &blk[n];
	}
	c->cur = b;
	c->ntouched = ntouched;
	c->pend = pend;
	c->pend_from = from;
	c->pend_slot = slot;
	c->prev_loc = prev_loc;
	c->ntnt = ntnt;
	c->tnt = tnt;	/* tnt_pull() may have changed it */
	c->st.transitions += trans;
	c->st.insns += insns;
	c->st.tnt_bits += bits;
	*directp = direct;
}

/* walk_cached_as() made twice: with the edge list, and for the bitmap only
 * (a fuzzer's windows), where the compiler drops the edges' work */
static __noinline void walk_cached(struct ptcov *c, u32 *directp)
{
	if (c->no_edges)
		walk_cached_as(c, directp, false);
	else
		walk_cached_as(c, directp, true);
}

static enum stop walk(struct ptcov *c, bool eager)
{
	u32 direct = 0;

	while (c->state == S_ON) {
		struct cblock *b;
		unsigned int bit;
		u64 to;

		if (c->ntnt)
			walk_cached(c, &direct);
		b = c->cur;
		if (!c->ntnt && fup_in(c, b))
			return W_FUP;
		switch (b->kind) {
		case K_COND:
			if (!c->ntnt)
				return W_NEED;
			bit = (c->tnt >> --c->ntnt) & 1;
			c->st.tnt_bits++;
			if (!go(c, b, bit, bit ? b->target : b->pub.end))
				return W_LOST;
			direct = 0;
			break;
		case K_CALL:
		case K_JMP:
			if (!c->ntnt && (!eager || (c->pgd_stop && b->target == c->pgd_ip)))
				return W_NEED;
			if (++direct > LOOP_LIMIT) {
				gap(c, PTCOV_GAP_LOOP);
				return W_LOST;
			}
			if (b->kind == K_CALL && b->target != b->pub.end)
				rs_push(c, b->pub.end);	/* CALL +0 reads the IP: not a call */
			if (!go(c, b, 1, b->target))
				return W_LOST;
			break;
		case K_RET:
			if (!c->ntnt)
				return W_NEED;
			bit = (c->tnt >> --c->ntnt) & 1;
			c->st.tnt_bits++;
			if (!bit || !rs_pop(c, &to)) {
				gap(c, PTCOV_GAP_DESYNC);
				return W_LOST;
			}
			if (!go_ind(c, b, to))
				return W_LOST;
			direct = 0;
			break;
		default:
			/*
			 * The branch takes a TIP. TNT bits still pending are
			 * not a desync: the trace unit may defer a TIP and
			 * send it after the TNT that holds the results of the
			 * branches that follow it (the SDM's "Deferred TIPs");
			 * they wait for those branches, as libipt keeps them
			 * (on_tnt(): the TIP must come next).
			 */
			return W_NEED;
		}
	}
	return W_LOST;
}

/*
 * The stream ends inside a packet whose kind its bytes tell: an extended
 * opcode (02) needs its second byte for that, and 02 C3 its third. Fewer
 * bytes are as good as none: libipt sees the end of the trace there.
 */
static bool cut_short(const struct ptcov *c)
{
	if (!c->ncarry)
		return false;
	if (c->carry[0] != 0x02)
		return true;
	return c->ncarry >= 3 || (c->ncarry == 2 && c->carry[1] != 0xc3);
}

/*
 * The trace stops here. After whole packets (no more trace, or an event
 * whose other packets were lost), the flow is known up to the last branch
 * they decided, and the block that branch entered is not counted: nothing
 * says how far it ran. After a packet cut short (cut_short()), the flow ran on through
 * direct branches to the first that needed a packet. Both as libipt's
 * instruction flow ends (its pts_eos, or the error at the cut packet).
 */
static void run_out(struct ptcov *c)
{
	if (c->state != S_ON)
		return;
	if (cut_short(c) && !c->fup_pending)
		walk(c, true);
	else
		c->pend = false;
}

/* ------------------------------------------------------------ packets */

/*
 * The flow reached the pending FUP: the event there came before the
 * instruction at its IP, so a block that starts there did not run.
 */
static void bind_fup(struct ptcov *c)
{
	if (c->pend && c->fup_ip == c->cur->pub.start)
		c->pend = false;
	commit(c);
	c->fup_pending = false;
}

/* A TIP: the branch the flow stopped at goes to @ip (an event's, after a FUP). */
static void on_tip(struct ptcov *c, u64 ip)
{
	enum stop s;
	struct cblock *b;

	c->st.tips++;
	if (c->state != S_ON)
		return;	/* a TIP with PacketEn 0 cannot be placed: wait for the next enable */
	s = walk(c, true);
	if (s == W_LOST)
		return;
	if (s == W_FUP) {
		/* an interrupt or exception at the FUP's IP: a cut, not an edge */
		bind_fup(c);
		resume(c, ip);
		return;
	}
	b = c->cur;
	if (c->fup_pending || b->kind == K_COND) {
		/* the FUP's IP was not on the way, or a TNT bit was due */
		gap(c, PTCOV_GAP_DESYNC);
		return;
	}
	if (b->kind == K_IND_CALL)
		rs_push(c, b->pub.end);
	go_ind(c, b, ip);
}

/* TIP.PGD: PacketEn 0 at the pending FUP's IP (an event), or at the branch
 * that leaves: the first with the pending TNT bits used up whose target is
 * @ip (any that needs a packet when @ip is suppressed). */
static void on_pgd(struct ptcov *c, u64 ip, bool suppressed)
{
	enum stop s;

	c->st.tips++;
	if (c->state == S_ON) {
		c->pgd_stop = !suppressed && !c->fup_pending;
		c->pgd_ip = ip;
		s = walk(c, true);
		c->pgd_stop = false;
		if (s == W_LOST)
			return;
		if (c->fup_pending) {
			if (s != W_FUP) {
				gap(c, PTCOV_GAP_DESYNC);
				return;
			}
			bind_fup(c);
		}
		commit(c);
		c->state = S_OFF;
	}
	c->fup_pending = false;
	c->cur = NULL;
	c->ntnt = 0;
	cut(c);
}

static void on_fup(struct ptcov *c, u64 ip)
{
	if (c->fup_bound) {	/* a PTWRITE's or an EXSTOP's IP: no change of flow */
		c->fup_bound = false;
		return;
	}
	switch (c->state) {
	case S_PSB:
		c->psb_fup = true;
		c->psb_ip = ip;
		return;
	case S_OVF:
		resume(c, ip);	/* tracing resumes here */
		return;
	case S_ON:
		c->fup_pending = true;
		c->fup_ip = ip;
		return;
	default:
		return;
	}
}

/* PSB+ ends: with a FUP, PacketEn is 1 there. Inside a flow that is only a
 * status; after a cut, the flow starts at its IP. */
static void on_psbend(struct ptcov *c)
{
	if (c->state != S_PSB)
		return;
	if (c->cur && c->psb_fup) {
		c->state = S_ON;
	} else if (c->psb_fup) {
		resume(c, c->psb_ip);
	} else {
		commit(c);
		c->state = S_OFF;
		c->cur = NULL;
		cut(c);
	}
}

static void on_psb(struct ptcov *c)
{
	c->st.psbs++;
	c->last_ip = 0;
	c->psb_fup = false;
	c->fup_bound = false;
	if (c->state != S_ON) {
		commit(c);
		c->cur = NULL;
		cut(c);
	}
	c->state = S_PSB;
}

/* OVF: packets were lost; the flow resumes at the next FUP or TIP.PGE. */
static void on_ovf(struct ptcov *c)
{
	c->st.gaps[PTCOV_GAP_OVF]++;
	commit(c);
	c->cur = NULL;
	c->ntnt = 0;
	c->fup_pending = c->fup_bound = false;
	c->rs_len = 0;
	c->last_ip = 0;
	cut(c);
	if (c->state != S_NOSYNC)
		c->state = S_OVF;
}

/* @b's branch takes a TIP (no TNT bit, not direct). */
static bool needs_tip(const struct cblock *b)
{
	return b && b->kind != K_COND && b->kind != K_RET && b->kind != K_JMP && b->kind != K_CALL;
}

static void on_tnt(struct ptcov *c, u64 bits, u32 n)
{
	/* the packets after these bits: taken only once these are appended */
	const u8 *next = c->next_p;

	c->next_p = NULL;
	if (c->state != S_ON)
		return;
	/* bits a deferred TIP left for the branches after it: used first */
	if (c->ntnt && walk(c, false) == W_LOST)
		return;
	/*
	 * Bits left over at a branch that takes a TIP belong to branches after
	 * it only when its TIP was deferred, and a deferred TIP comes right
	 * after the TNT: another TNT first does not fit (libipt: "trace stream
	 * does not match query").
	 */
	if (c->ntnt + n > 64 || (c->ntnt && needs_tip(c->cur))) {
		gap(c, PTCOV_GAP_DESYNC);
		return;
	}
	c->tnt = (c->tnt << n) | bits;
	c->ntnt += n;
	c->next_p = next;
	walk(c, false);
	c->next_p = NULL;
}

static u64 le(const u8 *p, unsigned int n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* The IP of a TIP-family packet, Last IP updated; false if suppressed. */
static bool ip_of(struct ptcov *c, u8 ipc, const u8 *p, u64 *ip)
{
	static const u8 bytes[8] = { 0, 2, 4, 6, 6, 0, 8, 0 };

	if (!ipc)
		return false;
	*ip = ptpk_ip_reconstruct((enum ptpk_ipc)ipc, le(p, bytes[ipc]), c->last_ip);
	c->last_ip = *ip;
	return true;
}

/*
 * The length of the packet at @p (@n bytes there), 0 if more bytes are
 * needed, -1 if it is not a packet.
 */
static int pkt_len(const u8 *p, size_t n)
{
	static const u8 ipbytes[8] = { 0, 2, 4, 6, 6, 0xff, 8, 0xff };
	u8 b = p[0];

	if (!(b & 1))	/* TNT-8 (any even byte but 0x00 PAD and 0x02 ext) */
		return b == 0x02 ? 0 : 1;
	switch (b & 0x1f) {
	case 0x0d: case 0x11: case 0x01: case 0x1d: {	/* TIP, TIP.PGE, TIP.PGD, FUP */
		u8 k = ipbytes[b >> 5];

		return k == 0xff ? -1 : 1 + k;
	}
	}
	switch (b) {
	case 0x19: return 8;	/* TSC */
	case 0x59: return 2;	/* MTC */
	case 0x99: return 2;	/* MODE */
	}
	if ((b & 3) == 3)	/* CYC: more bytes while bit 0 of each is set */
		return -2;
	return -1;
}

/* Extended (0x02 xx) packets' lengths; 0: need more; -1: not a packet. */
static int ext_len(const u8 *p, size_t n)
{
	if (n < 2)
		return 0;
	switch (p[1]) {
	case 0x23: return 2;	/* PSBEND */
	case 0x82: return 16;	/* PSB */
	case 0xa3: return 8;	/* TNT-64 */
	case 0x43: return 8;	/* PIP */
	case 0x03: return 4;	/* CBR */
	case 0x73: return 7;	/* TMA */
	case 0xc8: return 7;	/* VMCS */
	case 0xf3: return 2;	/* OVF */
	case 0x83: return 2;	/* TraceStop */
	case 0xc3: return 11;	/* MNT (02 c3 88 + 8) */
	case 0x62: case 0xe2: return 2;	/* EXSTOP, EXSTOP.IP */
	case 0xc2: return 10;	/* MWAIT */
	case 0x22: return 4;	/* PWRE */
	case 0xa2: return 7;	/* PWRX */
	}
	if ((p[1] & 0x1f) == 0x12) {	/* PTW: 4 or 8 bytes of payload */
		u8 plc = (p[1] >> 5) & 3;

		return plc == 0 ? 6 : plc == 1 ? 10 : -1;
	}
	return -1;
}

/*
 * Parse and act on one packet at @p (@n bytes available). Return its length,
 * 0 when it is cut short, or -1 when @p is not a packet.
 */
static int packet(struct ptcov *c, const u8 *p, size_t n)
{
	u8 b = p[0];
	int len;
	u64 ip;

	if (b == 0x00) {	/* PAD */
		c->st.packets++;
		return 1;
	}
	if (!(b & 1) && b != 0x02) {	/* TNT-8: the stop bit is the highest set */
		u32 nb = 31 - (u32)__builtin_clz(b) - 1;

		c->st.packets++;
		if (nb)
			on_tnt(c, (b >> 1) & ((1u << nb) - 1), nb);
		return 1;
	}
	if (b == 0x02) {
		len = ext_len(p, n);
		if (len <= 0 || (size_t)len > n)
			return len < 0 ? -1 : 0;
		c->st.packets++;
		switch (p[1]) {
		case 0xa3: {	/* TNT-64 */
			u64 bits;
			int nb = tnt64_bits(p, &bits);

			if (nb < 0)
				return -1;
			if (nb) {
				/* the walk may take the TNT-64s after it (tnt_pull()),
				 * not from a packet completed from two feeds */
				c->next_p = p == c->carry ? NULL : p + 8;
				c->next_n = n - 8;
				c->pulled = 0;
				on_tnt(c, bits, (u32)nb);
				/* feed_bytes() moves @off past all of them */
				c->off -= c->pulled;
				len += (int)c->pulled;
				c->pulled = 0;
			}
			break;
		}
		case 0x82: {	/* PSB: its 16 bytes in two loads */
			u64 w[2];

			__builtin_memcpy(w, p, sizeof(w));
			if (w[0] != 0x8202820282028202ULL || w[1] != 0x8202820282028202ULL)
				return -1;
			on_psb(c);
			break;
		}
		case 0x23:
			on_psbend(c);
			break;
		case 0xf3:
			on_ovf(c);
			break;
		case 0xe2:	/* EXSTOP with IP: a FUP follows for it */
			c->fup_bound = true;
			break;
		case 0xc3:
			if (p[2] != 0x88)
				return -1;
			break;
		default:
			if ((p[1] & 0x1f) == 0x12 && (p[1] & 0x80))	/* PTW with IP */
				c->fup_bound = true;
			break;
		}
		return len;
	}
	len = pkt_len(p, n);
	if (len == -2) {	/* CYC */
		size_t i = 0;

		if (!(b & 4)) {
			c->st.packets++;
			return 1;
		}
		/*
		 * At most PTPK_MAX_SIZE bytes in all (libipt's limit: 15 after
		 * the first): a longer run of bytes with the Exp bit set is not
		 * a packet, and a cut one must fit the carry buffer.
		 */
		for (i = 1; i < n && i < PTPK_MAX_SIZE; i++)
			if (!(p[i] & 1)) {
				c->st.packets++;
				return (int)i + 1;
			}
		return i < PTPK_MAX_SIZE ? 0 : -1;
	}
	if (len < 0)
		return -1;
	if ((size_t)len > n)
		return 0;
	c->st.packets++;
	switch (b & 0x1f) {
	case 0x0d:
		if (ip_of(c, b >> 5, p + 1, &ip))
			on_tip(c, ip);
		else if (c->state == S_ON)
			gap(c, PTCOV_GAP_DESYNC);	/* a branch to nowhere */
		return len;
	case 0x11:	/* TIP.PGE */
		if (ip_of(c, b >> 5, p + 1, &ip) && c->state != S_NOSYNC && c->state != S_PSB) {
			c->st.tips++;
			c->fup_pending = false;
			c->ntnt = 0;
			resume(c, ip);
		}
		return len;
	case 0x01:	/* TIP.PGD */
		ip = 0;
		{
			bool have = ip_of(c, b >> 5, p + 1, &ip);

			on_pgd(c, ip, !have);
		}
		return len;
	case 0x1d:	/* FUP */
		if (ip_of(c, b >> 5, p + 1, &ip))
			on_fup(c, ip);
		return len;
	}
	return len;	/* TSC, MTC, MODE */
}

/* Look for the PSB's 16 bytes (02 82 x 8) from @p; return bytes used. */
static size_t find_psb(struct ptcov *c, const u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		u8 want = c->psb_match & 1 ? 0x82 : 0x02;

		if (p[i] == want)
			c->psb_match++;
		else
			c->psb_match = p[i] == 0x02;
		if (c->psb_match == 16) {
			c->psb_match = 0;
			c->st.packets++;
			on_psb(c);
			return i + 1;
		}
	}
	return n;
}

static void feed_bytes(struct ptcov *c, const u8 *buf, size_t n)
{
	c->st.bytes += n;
	while (n) {
		size_t used;
		int len;

		if (c->state == S_NOSYNC) {
			c->ncarry = 0;
			used = find_psb(c, buf, n);
			buf += used;
			n -= used;
			c->off += used;
			continue;
		}
		if (c->ncarry) {
			/* complete the cut packet from the new bytes */
			size_t take = min(n, sizeof(c->carry) - c->ncarry);
			u32 had = c->ncarry;

			memcpy(c->carry + had, buf, take);
			len = packet(c, c->carry, had + take);
			if (len == 0 && had + take < sizeof(c->carry)) {
				c->ncarry = had + (u32)take;
				return;
			}
			c->ncarry = 0;
			if (len <= 0) {
				gap(c, PTCOV_GAP_DESYNC);
				/*
				 * Fed whole, the PSB search would start at the
				 * bad packet's first byte: search the carried
				 * bytes too (fewer than a PSB's 16, so the
				 * search goes on into the new ones).
				 */
				find_psb(c, c->carry, had);
				c->off += had;
				continue;
			}
			used = (size_t)len - had;
			buf += used;
			n -= used;
			c->off += (u64)len;
			continue;
		}
		len = packet(c, buf, n);
		if (len > 0) {
			buf += len;
			n -= (size_t)len;
			c->off += (u64)len;
		} else if (len == 0) {
			memcpy(c->carry, buf, n);
			c->ncarry = (u32)n;
			return;
		} else {
			gap(c, PTCOV_GAP_DESYNC);
		}
	}
}

void ptcov_feed(struct ptcov *c, const u8 *buf, size_t n)
{
	feed_bytes(c, buf, n);
	chunks_settle(c);
}

void ptcov_end_stream(struct ptcov *c)
{
	run_out(c);
	lose_sync(c);
	c->ncarry = 0;
	chunks_settle(c);
}

/*
 * Empty the edge hash. A fuzzer's window lists a few hundred edges in a
 * table of 2 * max_edges slots (512 KiB by default): zeroing each listed
 * edge's slot, found from its home slot on (slots already zeroed are
 * passed, not an end: every one is cleared), costs that many probes instead
 * of the whole table, which was most of a small target's execution.
 */
static void clear_edge_hash(struct ptcov *c)
{
	if (c->nedges > (c->emask + 1) / 16) {
		memset(c->ehash, 0, EHASH_BYTES(c));
		return;
	}
	for (u32 i = 0; i < c->nedges; i++) {
		u32 h = edge_slot(c, c->edges[i].from, c->edges[i].to);

		while (c->ehash[h] != i + 1)
			h = (h + 1) & c->emask;
		c->ehash[h] = 0;
	}
}

void ptcov_clear(struct ptcov *c)
{
	u32 i;

	chunks_settle(c);	/* nothing to do: each call settles before it returns */
	for (i = 0; i < c->st.blocks; i++)
		c->blk[c->reached[i]].pub.hits = 0;
	c->scratch.pub.hits = 0;
	/* a fuzzer's window hits a few hundred entries of 64 KiB */
	if (c->ntouched > c->cfg.bitmap_size / 64)
		memset(c->bitmap, 0, c->cfg.bitmap_size);
	else
		for (i = 0; i < c->ntouched; i++)
			c->bitmap[c->touched[i]] = 0;
	c->ntouched = 0;
	clear_edge_hash(c);
	c->nedges = 0;
	c->edge_gen++;
	memset(&c->st, 0, sizeof(c->st));
	c->st.gap_kind = PTCOV_NR_GAPS;
}

void ptcov_set_edge_list(struct ptcov *c, bool on)
{
	if (c->no_edges == !on)
		return;	/* the fuzzer says it at every window */
	clear_edge_hash(c);
	c->nedges = 0;
	c->st.edges = 0;
	c->edge_gen++;	/* no cached edge index survives a change */
	c->no_edges = !on;
}

void ptcov_flush_code(struct ptcov *c)
{
	if (c->state == S_ON)
		lose_sync(c);
	c->cur = c->pend_from = NULL;
	c->pend = false;
	ptcov_clear(c);
	memset(c->bhash, 0, BHASH_BYTES(c));
	c->nblocks = 0;
	if (c->chunks)
		memset(c->chunks, 0, CHUNK_BYTES);
}

const struct ptcov_stats *ptcov_get_stats(const struct ptcov *c)
{
	return &c->st;
}

const u8 *ptcov_bitmap(const struct ptcov *c, u32 *size)
{
	*size = c->cfg.bitmap_size;
	return c->bitmap;
}

/* AFL's hit-count classes */
static u8 bucket(u8 v)
{
	if (v <= 3)
		return v;
	if (v < 8)
		return 4;
	if (v < 16)
		return 5;
	if (v < 32)
		return 6;
	if (v < 128)
		return 7;
	return 8;
}

u32 ptcov_bitmap_digest(const struct ptcov *c)
{
	u32 h = 0x811c9dc5, i;	/* FNV-1a over (index, class) of the non-zero entries */

	for (i = 0; i <= c->mapmask; i++) {
		if (!c->bitmap[i])
			continue;
		h = (h ^ (i & 0xff)) * 0x01000193;
		h = (h ^ (i >> 8)) * 0x01000193;
		h = (h ^ bucket(c->bitmap[i])) * 0x01000193;
	}
	return h;
}

const u32 *ptcov_bitmap_touched(const struct ptcov *c, u32 *n)
{
	*n = c->ntouched;
	return c->touched;
}

const struct ptcov_block *ptcov_block(const struct ptcov *c, size_t i)
{
	return i < c->st.blocks ? &c->blk[c->reached[i]].pub : NULL;
}

const struct ptcov_edge *ptcov_edges(const struct ptcov *c, size_t *n)
{
	*n = c->nedges;
	return c->edges;
}
