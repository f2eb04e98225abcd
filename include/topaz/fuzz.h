/* SPDX-License-Identifier: MIT */
/*
 * The fuzzer (kernel/fuzz/, docs/fuzzing.md): targets, the mutator, the
 * corpus and AFL's coverage bookkeeping. The firmware phase's loop
 * (fw.fuzz=, boot/firmware/fw_fuzz.c) drives them; the same code builds
 * hosted for tests/host/test_fuzz.c.
 *
 * A built-in target registers itself:
 *
 *	static const struct fuzz_target my_target = {
 *		.name = "mytarget", .help = "what it calls", .init = ..., .run = ...,
 *		.reset = ..., .seeds = seeds, .seed_sizes = sizes, .nseeds = 2 };
 *	FUZZ_TARGET(my_target);
 */
#ifndef TOPAZ_FUZZ_H
#define TOPAZ_FUZZ_H

#include <topaz/types.h>

/**
 * struct fuzz_target - what fw.fuzz=NAME runs
 * @name: fw.fuzz=NAME
 * @help: one line, for fw.fuzz=list
 * @init: once, in the firmware phase before the loop (locate protocols...):
 *	0, or a negative errno having printed why (the target is unavailable);
 *	NULL: nothing to do
 * @run: one execution on @data[0..@size): 0 ran; a positive value: the
 *	target rejected the input (not a crash; counted); never keeps @data
 * @reset: after each run, undo its effects (unload images, remove
 *	packages...): 0, or a negative errno when it could not (the loop stops,
 *	named); NULL: nothing to undo
 * @seeds: @seed_sizes: @nseeds: the built-in seeds
 */
struct fuzz_target {
	const char *name;
	const char *help;
	int (*init)(void);
	int (*run)(const u8 *data, size_t size);
	int (*reset)(void);
	const u8 *const *seeds;
	const u32 *seed_sizes;
	u32 nseeds;
};

/* Places &var_ in the linker section fuzz_targets (as WORKLOAD() does). */
#define FUZZ_TARGET(var_)							\
	static const struct fuzz_target *const __fuzz_target_##var_ __used	\
		__section("fuzz_targets") __aligned(8) = &var_

/** fuzz_target_find() - the registered target called @name, or NULL */
const struct fuzz_target *fuzz_target_find(const char *name);
/** fuzz_target_list() - print the registered targets (fw.fuzz=list) */
void fuzz_target_list(void);

/* ------------------------------------------------------------ the PRNG */

/* xoshiro256**, seeded by splitmix64: the same seed, the same campaign. */
struct fuzz_rng {
	u64 s[4];
};

/** fuzz_rng_seed() - start @r from @seed (any value, 0 included) */
void fuzz_rng_seed(struct fuzz_rng *r, u64 seed);
/** fuzz_rng_next() - the next 64 random bits */
u64 fuzz_rng_next(struct fuzz_rng *r);
/** fuzz_rng_below() - a number in [0, @n) (@n > 0) */
u32 fuzz_rng_below(struct fuzz_rng *r, u32 n);

/* ------------------------------------------------------------ the mutator */

/* The mutations, as AFL's havoc stage names them (stats by kind). */
enum fuzz_mut {
	FUZZ_MUT_BITFLIP,	/* one bit */
	FUZZ_MUT_BYTEFLIP,	/* one byte xor 0xff */
	FUZZ_MUT_RANDBYTE,	/* one byte xor 1..255 */
	FUZZ_MUT_ARITH8,	/* a byte +- 1..35 */
	FUZZ_MUT_ARITH16,	/* a 16-bit word, either endianness */
	FUZZ_MUT_ARITH32,	/* a 32-bit word, either endianness */
	FUZZ_MUT_INTEREST8,	/* an interesting byte (0, 1, 0x7f, 0x80, 0xff...) */
	FUZZ_MUT_INTEREST16,	/* an interesting 16-bit value */
	FUZZ_MUT_INTEREST32,	/* an interesting 32-bit value */
	FUZZ_MUT_INSERT,	/* a block inserted: a copy from the input or a repeated byte */
	FUZZ_MUT_DELETE,	/* a block deleted */
	FUZZ_MUT_COPY,		/* a block copied over another place */
	FUZZ_MUT_SPLICE,	/* the tail replaced by another input's */
	FUZZ_MUT_DICT_OVERWRITE,	/* a dictionary token over the input's bytes (with a dict) */
	FUZZ_MUT_DICT_INSERT,	/* a dictionary token inserted (with a dict) */
	FUZZ_NR_MUTS
};
/* the mutations that need no dictionary: a campaign without one draws from these only */
#define FUZZ_NR_MUTS_PLAIN	FUZZ_MUT_DICT_OVERWRITE

/* ------------------------------------------------------------ the dictionary */

#define FUZZ_DICT_TOKEN_MAX	128	/* AFL's MAX_DICT_FILE */
#define FUZZ_DICT_MAX		4096	/* lines of a dictionary file */

/** struct fuzz_dict_entry - one token: @data[0..@len) */
struct fuzz_dict_entry {
	u32 len;
	u8 data[FUZZ_DICT_TOKEN_MAX];
};

/** struct fuzz_dict - a dictionary's @n tokens (fw.fuzz.dict=) */
struct fuzz_dict {
	struct fuzz_dict_entry *e;
	u32 n;
};

/**
 * fuzz_dict_parse() - read a dictionary in AFL's format
 * @d: filled (fuzz_dict_free() it)
 * @text: @size: the file's bytes
 * @file: its name, for messages
 * @err: @err_size: on failure, "FILE:LINE: what is wrong"
 *
 * A line is blank, a # comment, or [name[@level]=]"value" with printable
 * characters and the escapes \\, \" and \xNN.
 * Return: 0 (at least one token); -EINVAL a bad line, -ENODATA no token,
 * -E2BIG too many lines, -ENOMEM.
 */
int fuzz_dict_parse(struct fuzz_dict *d, const char *text, size_t size, const char *file,
		    char *err, size_t err_size);
/** fuzz_dict_free() - free @d's tokens */
void fuzz_dict_free(struct fuzz_dict *d);

/**
 * fuzz_mutate() - change @buf in place with a stack of 1, 2, 4, 8 or 16 mutations
 * @r: the PRNG
 * @buf: the input, room for @max_len bytes
 * @len: its length now (at most @max_len)
 * @max_len: the longest input (> 0)
 * @other: another input for a splice, or NULL
 * @other_len: its length
 * @counts: if not NULL, FUZZ_NR_MUTS counters, one added per mutation done
 *
 * Return: the new length, 1 to @max_len.
 */
size_t fuzz_mutate(struct fuzz_rng *r, u8 *buf, size_t len, size_t max_len,
		   const u8 *other, size_t other_len, u64 *counts);

/**
 * fuzz_mutate_dict() - fuzz_mutate() with @dict's tokens inserted and written
 * over the input's bytes too (@dict NULL or empty: the same draws as
 * fuzz_mutate(), the same campaign)
 */
size_t fuzz_mutate_dict(struct fuzz_rng *r, u8 *buf, size_t len, size_t max_len,
			const u8 *other, size_t other_len, const struct fuzz_dict *dict,
			u64 *counts);

/** fuzz_mut_name() - "bitflip", "arith16", ... */
const char *fuzz_mut_name(enum fuzz_mut m);

/* ------------------------------------------------------------ file names */

#define FUZZ_SHA1_BYTES	20
#define FUZZ_SHA1_HEX	41	/* 40 hex digits and the NUL */

/** fuzz_sha1() - the SHA-1 of @data[0..@n) (FIPS 180-4): libFuzzer's file names */
void fuzz_sha1(const void *data, size_t n, u8 out[FUZZ_SHA1_BYTES]);
/** fuzz_sha1_hex() - the same in lower-case hex, NUL-ended */
void fuzz_sha1_hex(const void *data, size_t n, char out[FUZZ_SHA1_HEX]);

/* ------------------------------------------------------------ coverage */

/** fuzz_bucket() - AFL's hit-count class of @hits: 0, 1, 2, 4, 8, ... 128 */
u8 fuzz_bucket(u8 hits);
/** fuzz_classify() - replace each hit count of @map by its class */
void fuzz_classify(u8 *map, u32 size);

/* What fuzz_has_new_bits() found. */
enum fuzz_news {
	FUZZ_NEW_NONE,		/* nothing */
	FUZZ_NEW_COUNT,		/* a known edge in a new hit-count class */
	FUZZ_NEW_EDGE,		/* an edge never seen */
};

/**
 * fuzz_has_new_bits() - does an execution's map hold what @virgin has not seen?
 * @virgin: the classes not yet seen, per map entry (all 0xff at the start);
 *	the new ones are cleared in it
 * @map: the execution's bitmap of hit counts (classified here, as
 *	fuzz_classify() would: @map is not changed)
 * @size: both maps' size
 *
 * Return: enum fuzz_news, the most news found.
 */
enum fuzz_news fuzz_has_new_bits(u8 *virgin, const u8 *map, u32 size);
/**
 * fuzz_has_new_bits_at() - fuzz_has_new_bits() looking at @map's entries
 * @idx[0..@n) only (the coverage decoder's ptcov_bitmap_touched()): the
 * same answer and the same @virgin when they hold every non-zero entry of
 * @map (an entry listed twice, or a zero one, changes nothing)
 */
enum fuzz_news fuzz_has_new_bits_at(u8 *virgin, const u8 *map, const u32 *idx, u32 n);
/**
 * fuzz_news_at() - what fuzz_has_new_bits_at() would return, @virgin left
 * as it is (a first look, before calibration)
 */
enum fuzz_news fuzz_news_at(const u8 *virgin, const u8 *map, const u32 *idx, u32 n);
/** fuzz_count_edges() - the entries of @virgin seen at least once */
u32 fuzz_count_edges(const u8 *virgin, u32 size);

/* ------------------------------------------------------------ the corpus */

/** struct fuzz_input - one kept input: @data[0..@size) */
struct fuzz_input {
	u8 *data;
	u32 size;
};

/** struct fuzz_corpus - the kept inputs (kmalloc'd copies), at most @cap */
struct fuzz_corpus {
	struct fuzz_input *in;
	u32 n, cap;
	u64 bytes;
};

/** fuzz_corpus_init() - an empty corpus of up to @cap inputs: 0 or -ENOMEM */
int fuzz_corpus_init(struct fuzz_corpus *c, u32 cap);
/**
 * fuzz_corpus_add() - keep a copy of @data[0..@size)
 * Return: 0; -ENOSPC when the corpus is full; -ENOMEM
 */
int fuzz_corpus_add(struct fuzz_corpus *c, const u8 *data, u32 size);
/** fuzz_corpus_pick() - an input to mutate next (the newest more often); NULL when empty */
const struct fuzz_input *fuzz_corpus_pick(const struct fuzz_corpus *c, struct fuzz_rng *r);
/** fuzz_corpus_free() - free every input and the table */
void fuzz_corpus_free(struct fuzz_corpus *c);

/* ------------------------------------------------------- the guarded heap */

/*
 * fw.fuzz.guard=pool's allocator, as EDK2's HeapGuard: every allocation ends
 * at a page end with a not-present guard page after it, and freed memory
 * stays not present while it is among the last FUZZ_GUARD_QUARANTINE frees
 * (and until reused). This is the bookkeeping; the page tables are changed
 * through @protect.
 */
#define FUZZ_GUARD_QUARANTINE	64	/* frees kept not present */
#define FUZZ_GUARD_PAGE		4096u

enum fuzz_guard_state { FUZZ_GA_UNUSED, FUZZ_GA_LIVE, FUZZ_GA_FREED };

/**
 * struct fuzz_guard_alloc - one allocation
 * @addr: what the caller got; @size: the bytes asked for
 * @page: its first page; @pages: its data pages (the guard page follows)
 * @state: enum fuzz_guard_state; @pages_api: AllocatePages (not pool)
 * @freed_at: the heap's free count when it was freed
 */
struct fuzz_guard_alloc {
	u64 addr, size, page;
	u32 pages;
	u8 state;
	bool pages_api;
	u64 freed_at;
};

/**
 * struct fuzz_guard_heap - the arena [@base, @base + @npages pages)
 * @owner: per page, the slot holding it (data or guard page), or ~0
 * @slot: @nslots allocation records
 * @protect: make [addr, addr + len) present (@present) or not; 0 or -errno
 */
struct fuzz_guard_heap {
	u64 base;
	u32 npages, nslots, cursor, live;
	u32 *owner;
	struct fuzz_guard_alloc *slot;
	u32 quarantine[FUZZ_GUARD_QUARANTINE], q_head, q_n;
	u64 frees;
	int (*protect)(void *ctx, u64 addr, u64 len, bool present);
	void *ctx;
};

/**
 * fuzz_guard_init() - an empty heap on @npages pages at @base (page-aligned),
 * its records kmalloc'd
 * Return: 0, -EINVAL (unaligned, fewer than 2 pages), -ENOMEM
 */
int fuzz_guard_init(struct fuzz_guard_heap *h, u64 base, u32 npages,
		    int (*protect)(void *ctx, u64 addr, u64 len, bool present), void *ctx);
/** fuzz_guard_destroy() - free the records (the arena's pages are the caller's) */
void fuzz_guard_destroy(struct fuzz_guard_heap *h);
/**
 * fuzz_guard_alloc() - @size bytes ending at a page end, less the padding
 * to @align (a power of two; pool: 8), or whole pages (@pages_api: the
 * address is the page, @size a multiple of a page)
 * Return: the address, or 0 when the arena has no room or @protect failed
 */
u64 fuzz_guard_alloc(struct fuzz_guard_heap *h, u64 size, u32 align, bool pages_api);
/**
 * fuzz_guard_free() - free the allocation at @addr: not present from now,
 * quarantined; the oldest quarantined one's pages become free again
 * @pages_api: FreePages (else FreePool); @what: the record concerned
 * Return: 0; -ENOENT @addr is outside the arena (not ours); -EALREADY a
 * double free (*@what the freed allocation); -EINVAL no allocation starts
 * at @addr or the wrong API frees it (*@what the one there, or NULL);
 * -EIO @protect failed
 */
int fuzz_guard_free(struct fuzz_guard_heap *h, u64 addr, bool pages_api,
		    const struct fuzz_guard_alloc **what);

enum fuzz_guard_hit {
	FUZZ_GUARD_OUTSIDE,	/* not in the arena */
	FUZZ_GUARD_OVERFLOW,	/* in an allocation's guard page or end padding: past its end */
	FUZZ_GUARD_UAF,		/* in a freed (quarantined) allocation */
	FUZZ_GUARD_INSIDE,	/* in a live allocation's bytes */
	FUZZ_GUARD_UNDERFLOW,	/* before a live allocation's first byte, in its first page */
	FUZZ_GUARD_WILD,	/* in the arena, no allocation there */
};

/**
 * fuzz_guard_lookup() - what @addr is in the heap; *@what the allocation
 * (NULL for OUTSIDE and WILD)
 */
enum fuzz_guard_hit fuzz_guard_lookup(const struct fuzz_guard_heap *h, u64 addr,
				      const struct fuzz_guard_alloc **what);

#endif
