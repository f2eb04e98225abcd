/* SPDX-License-Identifier: MIT */
/*
 * Edge coverage from Intel PT packets (kernel/coverage/): the packets of a
 * trace, and the code they ran through, read from memory, give the blocks
 * reached and the edges between them, and an AFL-style edge bitmap. Only the
 * packets are used, so the same code works behind silicon and behind the
 * software trace unit; the kernel (pt.coverage=) and ptdecode --coverage run
 * it. docs/coverage.md says what a block and an edge are, and what each kind
 * of gap does.
 *
 * A block starts at an instruction that follows a change of flow, or where
 * the flow resumes (TIP.PGE, the FUP after OVF or at a PSB that
 * resynchronises, an interrupt's handler), and runs to the first change of
 * flow (a COFI in the SDM's sense) at or after its start. An edge is two
 * blocks run one after the other with nothing but the first's final branch
 * between them. An interrupt, an exception, a disable, an overflow or a gap
 * ends the chain: the next block is reached with no edge into it.
 */
#ifndef TOPAZ_PTCOV_H
#define TOPAZ_PTCOV_H

#include <topaz/types.h>

#define PTCOV_BITMAP_DEFAULT	(64 * 1024)	/* AFL's MAP_SIZE */

/**
 * typedef ptcov_read_fn - read traced code
 * @ctx: the config's @read_ctx
 * @addr: the address the code ran at
 * @buf: where to put the bytes
 * @len: how many are wanted (at most 16, the longest instruction and then some)
 *
 * Return: how many bytes from @addr on could be read (0 when @addr is not
 * readable code); fewer than @len at the end of a region.
 */
typedef size_t (*ptcov_read_fn)(void *ctx, u64 addr, u8 *buf, size_t len);

/**
 * struct ptcov_config - what a coverage decoder gets at ptcov_init()
 * @read: @read_ctx: where the code is
 * @bitmap_size: bytes of the edge bitmap, a power of two (0: 64 KiB)
 * @max_blocks: blocks the cache and the reached list can hold (0: 16384);
 *	beyond, blocks are decoded each time and not listed (stats.blocks_dropped)
 * @max_edges: distinct edges that can be listed (0: 4 * @max_blocks);
 *	beyond, the bitmap still counts them (stats.edges_dropped)
 */
struct ptcov_config {
	ptcov_read_fn read;
	void *read_ctx;
	u32 bitmap_size;
	u32 max_blocks;
	u32 max_edges;
};

/**
 * struct ptcov_block - a block reached
 * @start: its first instruction
 * @end: the address after its last instruction (its final branch)
 * @ninsn: instructions from @start to @end
 * @hits: times the flow entered it
 */
struct ptcov_block {
	u64 start;
	u64 end;
	u32 ninsn;
	u32 hits;
};

/**
 * struct ptcov_edge - an edge taken
 * @from: the start of the block the branch ended
 * @to: the start of the block it led to
 * @hits: times taken
 */
struct ptcov_edge {
	u64 from;
	u64 to;
	u64 hits;
};

/* Why the flow was cut (struct ptcov_stats.gaps[]). */
enum ptcov_gap {
	PTCOV_GAP_LOST,		/* bytes missing from the stream (the container's LOST) */
	PTCOV_GAP_OVF,		/* the trace unit's overflow packet */
	PTCOV_GAP_NOCODE,	/* a block at an address with no readable code */
	PTCOV_GAP_BADINSN,	/* bytes that do not decode as an instruction */
	PTCOV_GAP_DESYNC,	/* packets that do not fit the code (a TIP where a
				 * TNT bit is due, a TIP left over, a bad packet) */
	PTCOV_GAP_LOOP,		/* flow with no packet for too long (a direct loop) */
	PTCOV_NR_GAPS
};

/**
 * struct ptcov_stats - what the decoder did
 * @bytes: trace bytes fed; @packets: packets parsed; @psbs: PSBs seen
 * @tnt_bits: TNT results used; @tips: TIP-family IPs used
 * @transitions: blocks entered (a block's hit counts summed)
 * @insns: instructions those blocks hold (what an instruction-flow decoder
 *	would have reported, gaps aside)
 * @block_decodes: blocks decoded from code (cache misses)
 * @gaps: flow cuts, by kind; after one the decoder waits for a PSB or an
 *	enable, except for an overflow, which tells where it resumes
 * @gap_off: @gap_ip: @gap_kind: the first gap other than a LOST or an
 *	OVF: the stream offset of the packet, the IP the flow had reached
 *	(0: none), and its enum ptcov_gap (PTCOV_NR_GAPS: none yet)
 * @blocks: @edges: distinct blocks and edges listed
 * @blocks_dropped: blocks decoded again as the cache was full (not listed)
 * @edges_dropped: edge transitions not listed: the list was full, or an end
 *	was such a block
 */
struct ptcov_stats {
	u64 bytes, packets, psbs;
	u64 tnt_bits, tips;
	u64 transitions, insns;
	u64 block_decodes;
	u64 gaps[PTCOV_NR_GAPS];
	u64 gap_off, gap_ip;
	u32 gap_kind;
	u64 blocks, edges;
	u64 blocks_dropped, edges_dropped;
};

struct ptcov;

/**
 * ptcov_create() - a coverage decoder, its memory taken once
 * @cfg: see struct ptcov_config
 * @gfp: for the allocation (GFP_KERNEL; the decoder allocates nothing later,
 *	so ptcov_feed() may run in a PMI, NMI included)
 *
 * Return: the decoder, or NULL when @cfg is invalid or memory is short.
 */
struct ptcov *ptcov_create(const struct ptcov_config *cfg, unsigned int gfp);

/** ptcov_destroy() - free a decoder (NULL is fine) */
void ptcov_destroy(struct ptcov *c);

/**
 * ptcov_begin_stream() - the next bytes start a new trace stream (another
 * CPU, another file): the decoder waits for a PSB; what it reached stays
 */
void ptcov_begin_stream(struct ptcov *c);

/**
 * ptcov_feed() - decode the next @n bytes of the stream
 *
 * Bytes may come in pieces of any size: a packet cut between two calls is
 * completed by the next one.
 */
void ptcov_feed(struct ptcov *c, const u8 *buf, size_t n);

/**
 * ptcov_end_stream() - the stream ends here. After whole packets the flow is
 * known up to the last branch they decided: the block it entered is not
 * counted. After a packet cut short, the flow runs on through direct
 * branches to the first that needs a packet. Both as libipt's flow ends.
 * ptcov_gap() ends the stream before the gap the same way.
 */
void ptcov_end_stream(struct ptcov *c);

/**
 * ptcov_gap() - bytes of the stream were lost here (@kind PTCOV_GAP_LOST):
 * the flow is cut and the decoder waits for the next PSB
 */
void ptcov_gap(struct ptcov *c, enum ptcov_gap kind);

/**
 * ptcov_clear() - forget what was reached (the bitmap, the lists, the
 * counts) and keep the decoded code: the next input of a fuzzer
 */
void ptcov_clear(struct ptcov *c);

/**
 * ptcov_set_edge_list() - list the edges taken (@on, the default), or keep
 * only the bitmap, its touched list, the blocks reached and the counts: a
 * fuzzer's windows need no more, and the list (an edge's first step in each
 * window is a hash lookup) is most of a short window's decode. Off, the
 * bitmap is the same and ptcov_edges() is empty (stats.edges 0).
 */
void ptcov_set_edge_list(struct ptcov *c, bool on);

/** ptcov_flush_code() - forget the decoded code too (code was changed or unloaded) */
void ptcov_flush_code(struct ptcov *c);

/** ptcov_stats() - the counts so far */
const struct ptcov_stats *ptcov_get_stats(const struct ptcov *c);

/** ptcov_bitmap() - the edge bitmap (hit counts, saturating at 255) and its size */
const u8 *ptcov_bitmap(const struct ptcov *c, u32 *size);

/**
 * ptcov_bitmap_touched() - the bitmap's non-zero entries, each once, in the
 * order first hit: what a fuzzer's news test needs to look at, instead of
 * the whole bitmap (kernel/fuzz's fuzz_has_new_bits_at())
 * @n: their number
 */
const u32 *ptcov_bitmap_touched(const struct ptcov *c, u32 *n);

/**
 * ptcov_bitmap_digest() - a 32-bit digest of the bitmap's hit-count buckets
 * (AFL's classes: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+), so that a guest
 * and a host decoding the same trace can compare one number
 */
u32 ptcov_bitmap_digest(const struct ptcov *c);

/**
 * ptcov_block() - the @i-th block reached (0 <= @i < stats.blocks), in the
 * order first reached
 */
const struct ptcov_block *ptcov_block(const struct ptcov *c, size_t i);

/**
 * ptcov_edges() - the edges taken, in the order first taken
 * @n: their number
 */
const struct ptcov_edge *ptcov_edges(const struct ptcov *c, size_t *n);

/** ptcov_gap_name() - "lost", "overflow", ... for messages */
const char *ptcov_gap_name(enum ptcov_gap kind);

#endif
