/* SPDX-License-Identifier: MIT */
/*
 * Branch sites: the breakpoints of branch-step tracing. Execution that lands
 * somewhere in traced code runs straight on to the first branch after that
 * point; the engine puts an INT3 on that branch (a site) and, when it traps,
 * runs the branch in the emulator (kernel/trace_engine/branch_emul.h): one stop per
 * branch, no single step, and the code is written once per site. A block is
 * the straight-line run from a landing point to its site, with the number of
 * instructions it retires, so the engine counts them without stopping.
 */
#ifndef TOPAZ_BRANCH_SITES_H
#define TOPAZ_BRANCH_SITES_H

#include <topaz/types.h>
#include "branch_emul.h"

#define BRANCH_SITE_INT3	0xcc	/* the byte a site puts on its branch */
#define BRANCH_BLOCK_MAX	256	/* instructions scanned for the next branch */

struct branch_block;

/* One INT3 on a branch. */
struct branch_site {
	u64 ip;			/* 0: a free slot */
	struct branch_emul emul;
	u8 orig;		/* the byte the INT3 replaced */
	u8 cls;			/* enum ptm_class of the branch */
	bool disabled;		/* its byte is back: the CPU runs it (to take a fault) */
	/* where it went last, not taken and taken: most branches go to the
	 * same place again (an inline cache, checked against the target) */
	const struct branch_block *next[2];
};

/* Straight-line code from a landing point to the site that ends it. */
struct branch_block {
	u64 start;		/* 0: a free slot */
	struct branch_site *site;
	u32 insns;		/* instructions before the site */
};

struct branch_sites_stats {
	u64 sites, blocks;	/* in the tables now */
	u64 patched;		/* INT3s written since branch_sites_init() */
	u64 full;		/* blocks not made: a table was full */
};

/**
 * branch_sites_init() - allocate tables for up to @max_sites sites (a power
 * of two; blocks get twice as many slots)
 * Return: 0, -EINVAL for a bad size, -ENOMEM.
 */
int branch_sites_init(unsigned int max_sites);

/** branch_sites_get() - a CPU starts tracing: the INT3s stay until it is done */
void branch_sites_get(void);
/**
 * branch_sites_put() - a CPU stops tracing; the last one restores every site
 * Return: how many sites were restored (0 while other CPUs still trace).
 */
unsigned int branch_sites_put(void);

/** branch_sites_exit() - restore every site and free the tables */
void branch_sites_exit(void);

/**
 * branch_sites_restore() - write back the byte under every INT3 and forget
 * all sites and blocks (tracing ends); the code is as it was before
 * Return: how many sites were restored.
 */
unsigned int branch_sites_restore(void);

/* The tables (branch_sites.c); here for the inline lookups below. */
struct branch_sites_table {
	struct branch_site *sites;
	struct branch_block *blocks;
	unsigned int site_bits, block_bits;	/* table sizes, log2 */
	unsigned int max_sites, max_blocks;	/* half the slots: short probes */
	unsigned int site_order, block_order;
	u32 *site_used, *block_used;		/* slots taken, to empty them */
	u32 nr_site_used, nr_block_used;
	struct branch_sites_stats st;
};
extern struct branch_sites_table branch_sites;

static inline u32 branch_sites_hash(u64 ip, unsigned int bits)
{
	return (u32)((ip * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/** branch_site_slot() - the slot of @ip: its site, or the free slot to take */
static inline struct branch_site *branch_site_slot(u64 ip)
{
	u32 mask = (1u << branch_sites.site_bits) - 1;

	for (u32 i = branch_sites_hash(ip, branch_sites.site_bits);; i = (i + 1) & mask)
		if (branch_sites.sites[i].ip == ip || !branch_sites.sites[i].ip)
			return &branch_sites.sites[i];
}

/** branch_site_find() - the live site at @ip, or NULL */
static inline struct branch_site *branch_site_find(u64 ip)
{
	struct branch_site *s;

	if (!branch_sites.sites)
		return NULL;
	s = branch_site_slot(ip);
	return s->ip == ip && !s->disabled ? s : NULL;
}

/**
 * branch_block_get() - the block that starts at @ip: known already, or
 * scanned now, its branch found, prepared for emulation and patched
 * @ip: where execution landed (an instruction boundary)
 * @created: set when the block is new (the caller notes its code pages)
 *
 * Return: the block, or NULL with *@err set: -ENOENT
 * when no branch comes within BRANCH_BLOCK_MAX instructions, -EINVAL when
 * bytes there do not decode, -EOPNOTSUPP when the branch must run on the CPU
 * (far transfers, INT n, forms the emulator leaves alone, an INT3 that is
 * not ours), -EPERM when the code cannot be written, -ENOSPC when a table
 * is full. The caller single-steps such code instead.
 */
const struct branch_block *branch_block_get(u64 ip, bool *created, int *err);

/**
 * branch_site_next() - the block at @target, where the branch at @s went
 * (@taken: a Jcc's outcome; 0 for the others): the one it went to last
 * time when that is it, else branch_block_get() (@created, @err as there)
 */
static inline const struct branch_block *branch_site_next(struct branch_site *s, u64 target,
							  bool taken, bool *created, int *err)
{
	const struct branch_block *b = s->next[taken];

	if (likely(b && b->start == target && !b->site->disabled)) {
		*created = false;
		return b;
	}
	b = branch_block_get(target, created, err);
	if (b)
		s->next[taken] = b;
	return b;
}

/**
 * branch_block_count() - instructions retired from @start up to (not
 * including) @upto on the straight-line path; @max when @upto is not on it
 */
unsigned int branch_block_count(u64 start, u64 upto, unsigned int max);

/** branch_site_disable() - give the site's byte back to the CPU, for good */
void branch_site_disable(struct branch_site *s);

void branch_sites_get_stats(struct branch_sites_stats *st);

/**
 * branch_sites_see_through() - @n bytes read at @addr: the byte under each
 * of our INT3s put back (the session's trace_engine_ops.see_through)
 */
void branch_sites_see_through(u64 addr, u8 *buf, size_t n);

/**
 * branch_insn_decode() - decode the instruction at @ip, reading no further
 * than mapped memory and seeing through our INT3s (the original byte)
 */
struct x86_insn;
int branch_insn_decode(u64 ip, struct x86_insn *in);
/**
 * branch_insn_read() - branch_insn_decode(), and the instruction's bytes
 * (X86_INSN_MAX_LEN of room at @bytes) as the CPU would run them
 */
int branch_insn_read(u64 ip, u8 *bytes, struct x86_insn *in);
/** branch_ptm_class() - what the trace unit sees of @in (enum ptm_class): PTM_OTHER when nothing */
enum ptm_class branch_ptm_class(const struct x86_insn *in);

#endif
