// SPDX-License-Identifier: MIT
/*
 * The fuzzer's PRNG and mutator: AFL's havoc stage (a random stack of bit
 * and byte flips, arithmetic, interesting values, block insert, delete,
 * copy) and its splice. Deterministic given the seed, so a campaign and a
 * test can be replayed.
 */
#include <topaz/fuzz.h>
#include <topaz/string.h>
#include <topaz/kernel.h>

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void fuzz_rng_seed(struct fuzz_rng *r, u64 seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline u64 rotl(u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

u64 fuzz_rng_next(struct fuzz_rng *r)
{
	u64 *s = r->s;
	u64 out = rotl(s[1] * 5, 7) * 9;
	u64 t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

u32 fuzz_rng_below(struct fuzz_rng *r, u32 n)
{
	/* Lemire's multiply-shift: no division, bias below 2^-32 */
	return (u32)(((fuzz_rng_next(r) >> 32) * (u64)n) >> 32);
}

/* AFL's interesting values (config.h's INTERESTING_8/16/32) */
static const s8 interesting8[] = { -128, -1, 0, 1, 16, 32, 64, 100, 127 };
static const s16 interesting16[] = { -32768, -129, 128, 255, 256, 512, 1000, 1024, 4096, 32767 };
static const s32 interesting32[] = { (s32)0x80000000, -100663046, -32769, 32768, 65535, 65536,
				     100663045, 0x7fffffff };
#define ARITH_MAX	35	/* AFL's ARITH_MAX */
#define HAVOC_BLK_MAX	1024	/* longest block inserted or copied */

static const char *const mut_names[FUZZ_NR_MUTS] = {
	"bitflip", "byteflip", "randbyte", "arith8", "arith16", "arith32",
	"interest8", "interest16", "interest32", "insert", "delete", "copy", "splice",
	"dict-overwrite", "dict-insert",
};

const char *fuzz_mut_name(enum fuzz_mut m)
{
	return (unsigned int)m < FUZZ_NR_MUTS ? mut_names[m] : "?";
}

static u16 swap16(u16 v)
{
	return (u16)((v << 8) | (v >> 8));
}

static u32 swap32(u32 v)
{
	return (v << 24) | ((v & 0xff00) << 8) | ((v >> 8) & 0xff00) | (v >> 24);
}

/* A block length for a buffer of @limit bytes (> 0): short ones more often, as AFL's choose_block_len. */
static size_t block_len(struct fuzz_rng *r, size_t limit)
{
	size_t cap = limit < HAVOC_BLK_MAX ? limit : HAVOC_BLK_MAX;
	size_t lim = fuzz_rng_below(r, 8) == 0 ? cap : (cap < 32 ? cap : 32);

	return 1 + fuzz_rng_below(r, (u32)lim);
}

/* @v's low @w bytes (2 or 4) in the other order */
static u32 swap_w(u32 v, int w)
{
	return w == 2 ? swap16((u16)v) : swap32(v);
}

/* One word at @p of @w bytes (2 or 4): + or - 1..ARITH_MAX, or an interesting value, either endianness. */
static void word_op(struct fuzz_rng *r, u8 *p, int w, bool interest)
{
	bool be = fuzz_rng_below(r, 2);
	u32 v = 0;

	memcpy(&v, p, w);	/* little-endian: the low bytes */
	if (interest) {
		v = w == 2 ? (u32)(u16)interesting16[fuzz_rng_below(r, ARRAY_SIZE(interesting16))] :
			     (u32)interesting32[fuzz_rng_below(r, ARRAY_SIZE(interesting32))];
	} else {
		u32 d = 1 + fuzz_rng_below(r, ARITH_MAX);

		if (be)
			v = swap_w(v, w);
		v = fuzz_rng_below(r, 2) ? v + d : v - d;
	}
	if (be)
		v = swap_w(v, w);
	memcpy(p, &v, w);
}

/* One mutation of @buf (@len bytes, room for @max); returns the new length, or 0 when it did not apply. */
static size_t mutate_one(struct fuzz_rng *r, enum fuzz_mut m, u8 *buf, size_t len, size_t max,
			 const u8 *other, size_t other_len, const struct fuzz_dict *dict)
{
	const struct fuzz_dict_entry *tok;
	size_t at, n, from;

	switch (m) {
	case FUZZ_MUT_BITFLIP:
		at = fuzz_rng_below(r, (u32)len * 8);
		buf[at / 8] ^= (u8)(1u << (at % 8));
		return len;
	case FUZZ_MUT_BYTEFLIP:
		buf[fuzz_rng_below(r, (u32)len)] ^= 0xff;
		return len;
	case FUZZ_MUT_RANDBYTE:
		buf[fuzz_rng_below(r, (u32)len)] ^= (u8)(1 + fuzz_rng_below(r, 255));
		return len;
	case FUZZ_MUT_ARITH8: {
		u8 d = (u8)(1 + fuzz_rng_below(r, ARITH_MAX));

		at = fuzz_rng_below(r, (u32)len);
		buf[at] = fuzz_rng_below(r, 2) ? (u8)(buf[at] + d) : (u8)(buf[at] - d);
		return len;
	}
	case FUZZ_MUT_INTEREST8:
		buf[fuzz_rng_below(r, (u32)len)] =
			(u8)interesting8[fuzz_rng_below(r, ARRAY_SIZE(interesting8))];
		return len;
	case FUZZ_MUT_ARITH16:
	case FUZZ_MUT_INTEREST16:
	case FUZZ_MUT_ARITH32:
	case FUZZ_MUT_INTEREST32: {
		int w = m == FUZZ_MUT_ARITH16 || m == FUZZ_MUT_INTEREST16 ? 2 : 4;

		if (len < (size_t)w)
			return 0;
		word_op(r, buf + fuzz_rng_below(r, (u32)(len - w + 1)), w,
			m == FUZZ_MUT_INTEREST16 || m == FUZZ_MUT_INTEREST32);
		return len;
	}
	case FUZZ_MUT_INSERT:
		if (len >= max)
			return 0;
		/* at most as long as the input (8 for a tiny one): inputs grow
		 * step by step, and short ones keep every byte's odds high */
		n = block_len(r, min(max - len, len > 8 ? len : 8));
		at = fuzz_rng_below(r, (u32)len + 1);
		memmove(buf + at + n, buf + at, len - at);
		if (fuzz_rng_below(r, 4)) {
			/* a copy of bytes already there (as they were before the move) */
			size_t src_len = n < len ? n : len;

			from = fuzz_rng_below(r, (u32)(len - src_len + 1));
			for (size_t i = 0; i < n; i++) {
				size_t k = from + i % src_len;

				buf[at + i] = k < at ? buf[k] : buf[k + n];
			}
		} else {
			/* a run of one byte: random, or one of the input's */
			size_t k = fuzz_rng_below(r, (u32)len);
			u8 v = fuzz_rng_below(r, 2) ? (u8)fuzz_rng_below(r, 256) :
				k < at ? buf[k] : buf[k + n];

			memset(buf + at, v, n);
		}
		return len + n;
	case FUZZ_MUT_DELETE:
		if (len < 2)
			return 0;
		n = block_len(r, len - 1);
		at = fuzz_rng_below(r, (u32)(len - n + 1));
		memmove(buf + at, buf + at + n, len - at - n);
		return len - n;
	case FUZZ_MUT_COPY:
		if (len < 2)
			return 0;
		n = block_len(r, len - 1);
		from = fuzz_rng_below(r, (u32)(len - n + 1));
		at = fuzz_rng_below(r, (u32)(len - n + 1));
		if (from == at)
			return 0;
		memmove(buf + at, buf + from, n);
		return len;
	case FUZZ_MUT_SPLICE:
		/* our head, then @other's tail from a point where they differ */
		if (!other || other_len < 2 || len < 2)
			return 0;
		at = 1 + fuzz_rng_below(r, (u32)(len < other_len ? len : other_len) - 1);
		n = other_len - at;
		if (at + n > max)
			n = max - at;
		memcpy(buf + at, other + at, n);
		return at + n;
	case FUZZ_MUT_DICT_OVERWRITE:
		tok = &dict->e[fuzz_rng_below(r, dict->n)];
		if (tok->len > len)
			return 0;
		memcpy(buf + fuzz_rng_below(r, (u32)(len - tok->len + 1)), tok->data, tok->len);
		return len;
	case FUZZ_MUT_DICT_INSERT:
		tok = &dict->e[fuzz_rng_below(r, dict->n)];
		if (len + tok->len > max)
			return 0;
		at = fuzz_rng_below(r, (u32)len + 1);
		memmove(buf + at + tok->len, buf + at, len - at);
		memcpy(buf + at, tok->data, tok->len);
		return len + tok->len;
	default:
		return 0;
	}
}

size_t fuzz_mutate(struct fuzz_rng *r, u8 *buf, size_t len, size_t max_len,
		   const u8 *other, size_t other_len, u64 *counts)
{
	return fuzz_mutate_dict(r, buf, len, max_len, other, other_len, NULL, counts);
}

size_t fuzz_mutate_dict(struct fuzz_rng *r, u8 *buf, size_t len, size_t max_len,
			const u8 *other, size_t other_len, const struct fuzz_dict *dict,
			u64 *counts)
{
	/* without tokens the draws are those of a campaign before dictionaries */
	u32 kinds = dict && dict->n ? FUZZ_NR_MUTS : FUZZ_NR_MUTS_PLAIN;
	/* 1..16 (AFL's havoc stacks 2..16): one small change alone is what
	 * gets past a compare a byte at a time, so it comes a fifth of the time */
	u32 stack = 1u << fuzz_rng_below(r, 3);

	if (len > max_len)
		len = max_len;
	if (!len) {
		buf[0] = (u8)fuzz_rng_next(r);
		len = 1;
	}
	for (u32 i = 0; i < stack; i++) {
		enum fuzz_mut m = fuzz_rng_below(r, kinds);
		size_t nl = mutate_one(r, m, buf, len, max_len, other, other_len, dict);

		if (!nl)
			continue;
		len = nl;
		if (counts)
			counts[m]++;
	}
	return len;
}
