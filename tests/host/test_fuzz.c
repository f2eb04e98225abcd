// SPDX-License-Identifier: MIT
/* Host tests of the fuzzer's core (kernel/fuzz): the PRNG, the mutator, AFL's
 * hit-count classes and new-bits test, the corpus, the target registry, and a
 * small loop on a synthetic target whose coverage is the length of a magic
 * prefix matched: with feedback it finds the magic, without it does not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hosted.h"
#include <topaz/fuzz.h>
#include <topaz/slab.h>
#include <topaz/errno.h>

static void *arena;

/* one allocator for the group: the corpus keeps kmalloc'd copies */
static int setup(void **state)
{
	arena = hosted_page_alloc_setup(16);
	kmem_cache_init();
	return 0;
}

static void test_rng_deterministic(void **state)
{
	struct fuzz_rng a, b, c;
	int differ = 0;

	fuzz_rng_seed(&a, 42);
	fuzz_rng_seed(&b, 42);
	fuzz_rng_seed(&c, 43);
	for (int i = 0; i < 1000; i++) {
		u64 x = fuzz_rng_next(&a);

		assert_int_equal(x, fuzz_rng_next(&b));
		differ += x != fuzz_rng_next(&c);
	}
	assert_true(differ > 990);
	/* below(): in range and every value reached */
	{
		int seen[10] = { 0 };

		for (int i = 0; i < 10000; i++) {
			u32 v = fuzz_rng_below(&a, 10);

			assert_true(v < 10);
			seen[v]++;
		}
		for (int i = 0; i < 10; i++)
			assert_true(seen[i] > 800 && seen[i] < 1200);
	}
	/* seed 0 is a seed like any other */
	fuzz_rng_seed(&a, 0);
	assert_true(fuzz_rng_next(&a) != 0 || fuzz_rng_next(&a) != 0);
}

/* The same seed and input give the same mutants; another seed others. */
static void test_mutate_deterministic(void **state)
{
	static const u8 seed_in[] = "the quick brown fox jumps over the lazy dog";
	u8 a[256], b[256], other[64];
	struct fuzz_rng ra, rb;
	size_t la, lb;
	int same = 0;

	memset(other, 0x5a, sizeof(other));
	fuzz_rng_seed(&ra, 7);
	fuzz_rng_seed(&rb, 7);
	for (int i = 0; i < 500; i++) {
		memcpy(a, seed_in, sizeof(seed_in));
		memcpy(b, seed_in, sizeof(seed_in));
		la = fuzz_mutate(&ra, a, sizeof(seed_in), sizeof(a), other, sizeof(other), NULL);
		lb = fuzz_mutate(&rb, b, sizeof(seed_in), sizeof(b), other, sizeof(other), NULL);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, la);
		same += la == sizeof(seed_in) && !memcmp(a, seed_in, la);
	}
	/* a stack of mutations rarely gives the input back */
	assert_true(same < 25);
}

/* Every kind runs, lengths stay in 1..max_len, and the bytes past the
 * length are never written (a canary after max_len). */
static void test_mutate_bounds(void **state)
{
	enum { MAX = 48, CANARY = 64 };
	u8 buf[MAX + CANARY];
	u64 counts[FUZZ_NR_MUTS] = { 0 };
	struct fuzz_rng r;
	u8 other[200];
	size_t len = 5;
	int grew = 0, shrank = 0;

	for (size_t i = 0; i < sizeof(other); i++)
		other[i] = (u8)i;
	fuzz_rng_seed(&r, 1);
	memset(buf, 0xcc, sizeof(buf));
	memcpy(buf, "hello", 5);
	for (int i = 0; i < 20000; i++) {
		size_t nl = fuzz_mutate(&r, buf, len, MAX, other, sizeof(other), counts);

		assert_true(nl >= 1 && nl <= MAX);
		grew += nl > len;
		shrank += nl < len;
		len = nl;
		for (int k = 0; k < CANARY; k++)
			assert_int_equal(buf[MAX + k], 0xcc);
		if (i % 1000 == 999)
			len = 1 + fuzz_rng_below(&r, 4);	/* short inputs too */
	}
	for (int m = 0; m < FUZZ_NR_MUTS; m++) {
		/* without a dictionary its mutations never run */
		if (!counts[m] != (m >= FUZZ_NR_MUTS_PLAIN))
			fail_msg("mutation %s ran %llu times", fuzz_mut_name(m),
				 (unsigned long long)counts[m]);
	}
	assert_true(grew > 100 && shrank > 100);
	/* an empty input becomes one byte; an over-long one is cut to max_len */
	len = fuzz_mutate(&r, buf, 0, MAX, NULL, 0, NULL);
	assert_true(len >= 1 && len <= MAX);
	assert_string_equal(fuzz_mut_name(FUZZ_MUT_SPLICE), "splice");
	assert_string_equal(fuzz_mut_name(FUZZ_NR_MUTS), "?");
}

static void test_buckets(void **state)
{
	static const struct { u8 hits, cls; } t[] = {
		{ 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 4 }, { 4, 8 }, { 7, 8 }, { 8, 16 }, { 15, 16 },
		{ 16, 32 }, { 31, 32 }, { 32, 64 }, { 127, 64 }, { 128, 128 }, { 255, 128 },
	};
	u8 map[256];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		assert_int_equal(fuzz_bucket(t[i].hits), t[i].cls);
	for (int i = 0; i < 256; i++)
		map[i] = (u8)i;
	fuzz_classify(map, sizeof(map));
	for (int i = 0; i < 256; i++)
		assert_int_equal(map[i], fuzz_bucket((u8)i));
}

static void test_new_bits(void **state)
{
	u8 virgin[64], map[64];

	memset(virgin, 0xff, sizeof(virgin));
	assert_int_equal(fuzz_count_edges(virgin, sizeof(virgin)), 0);
	memset(map, 0, sizeof(map));
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_NONE);

	map[3] = 1;
	map[9] = 5;
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_EDGE);
	assert_int_equal(fuzz_count_edges(virgin, sizeof(virgin)), 2);
	/* the same again: nothing new */
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_NONE);
	/* edge 9 taken 6 times: the same class as 5 (4-7) */
	map[9] = 6;
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_NONE);
	/* edge 3 taken twice: a new class of a known edge */
	map[3] = 2;
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_COUNT);
	assert_int_equal(fuzz_count_edges(virgin, sizeof(virgin)), 2);
	/* a new count and a new edge at once: the edge wins */
	map[3] = 3;
	map[60] = 1;
	assert_int_equal(fuzz_has_new_bits(virgin, map, sizeof(map)), FUZZ_NEW_EDGE);
	assert_int_equal(fuzz_count_edges(virgin, sizeof(virgin)), 3);
	/* a size not a multiple of the words skipped: the tail is seen */
	memset(virgin, 0xff, sizeof(virgin));
	memset(map, 0, sizeof(map));
	map[60] = 200;
	assert_int_equal(fuzz_has_new_bits(virgin, map, 61), FUZZ_NEW_EDGE);
	assert_int_equal(virgin[60], (u8)~128);
	assert_int_equal(map[60], 200);	/* the map is not changed */
}

/*
 * The sparse news test against the full scan on random bitmaps: with the
 * list of every non-zero entry (shuffled, a zero entry and a duplicate
 * added), the same answer and the same virgin map, on a virgin map that
 * has seen random classes; fuzz_news_at() answers the same and changes
 * nothing. A list missing one entry that brings news differs: the check
 * would see a sparse test that skipped a slot.
 */
#define SPARSE_MAP	4096
static void test_new_bits_sparse(void **state)
{
	static u8 map[SPARSE_MAP], v_full[SPARSE_MAP], v_at[SPARSE_MAP], v_miss[SPARSE_MAP];
	static u8 before[SPARSE_MAP], v_dup[SPARSE_MAP];
	static u32 at[SPARSE_MAP + 2];
	u64 rng = 30;
	int missed_differs = 0, with_news = 0;

	memset(v_full, 0xff, sizeof(v_full));
	for (int round = 0; round < 400; round++) {
		u32 n = 0, dense = 1 + hosted_rand(&rng) % 64, news_k = ~0u;
		enum fuzz_news full, sparse, look;

		memset(map, 0, sizeof(map));
		for (u32 i = 0; i < SPARSE_MAP; i++) {
			if (hosted_rand(&rng) % 1024 >= dense)
				continue;
			/* counts of every class, saturated ones too */
			map[i] = (u8)(1 + hosted_rand(&rng) % (hosted_rand(&rng) & 1 ? 8 : 255));
			at[n++] = i;
		}
		for (u32 i = n; i > 1; i--) {	/* the decoder's order is not the index order */
			u32 j = (u32)(hosted_rand(&rng) % i), t = at[i - 1];

			at[i - 1] = at[j];
			at[j] = t;
		}
		memcpy(v_at, v_full, sizeof(v_at));
		memcpy(before, v_full, sizeof(before));
		memcpy(v_miss, v_full, sizeof(v_miss));
		for (u32 k = 0; k < n && news_k == ~0u; k++)
			if (fuzz_bucket(map[at[k]]) & v_full[at[k]])
				news_k = k;
		memcpy(v_dup, v_full, sizeof(v_dup));
		look = fuzz_news_at(v_at, map, at, n);
		assert_memory_equal(v_at, before, sizeof(before));
		full = fuzz_has_new_bits(v_full, map, SPARSE_MAP);
		sparse = fuzz_has_new_bits_at(v_at, map, at, n);
		assert_int_equal(sparse, full);
		assert_int_equal(look, full);
		assert_memory_equal(v_at, v_full, sizeof(v_full));
		/* a listed zero entry and an entry listed twice change nothing */
		at[n] = n ? at[0] : 0;
		at[n + 1] = (u32)(hosted_rand(&rng) % SPARSE_MAP);
		if (map[at[n + 1]])
			at[n + 1] = at[n];
		assert_int_equal(fuzz_has_new_bits_at(v_dup, map, at, n + 2), full);
		assert_memory_equal(v_dup, v_full, sizeof(v_full));
		if (news_k != ~0u) {
			/* the list without the first entry that brings news */
			with_news++;
			at[news_k] = at[n - 1];
			fuzz_has_new_bits_at(v_miss, map, at, n - 1);
			missed_differs += memcmp(v_miss, v_full, sizeof(v_full)) != 0;
		}
	}
	assert_true(with_news > 100);
	assert_int_equal(missed_differs, with_news);
	assert_true(fuzz_count_edges(v_full, SPARSE_MAP) > SPARSE_MAP / 4);
}

static void test_corpus(void **state)
{
	struct fuzz_corpus c;
	struct fuzz_rng r;
	int picked[3] = { 0 };

	assert_int_equal(fuzz_corpus_init(&c, 3), 0);
	fuzz_rng_seed(&r, 5);
	assert_null(fuzz_corpus_pick(&c, &r));
	assert_int_equal(fuzz_corpus_add(&c, (const u8 *)"a", 1), 0);
	assert_int_equal(fuzz_corpus_add(&c, (const u8 *)"bb", 2), 0);
	assert_int_equal(fuzz_corpus_add(&c, (const u8 *)"", 0), 0);
	assert_int_equal(fuzz_corpus_add(&c, (const u8 *)"d", 1), -ENOSPC);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.bytes, 3);
	assert_memory_equal(c.in[1].data, "bb", 2);
	for (int i = 0; i < 3000; i++) {
		const struct fuzz_input *in = fuzz_corpus_pick(&c, &r);

		picked[in - c.in]++;
	}
	/* every input is picked; the newest more often */
	assert_true(picked[0] > 500 && picked[1] > 500);
	assert_true(picked[2] > picked[0]);
	fuzz_corpus_free(&c);
	assert_int_equal(c.n, 0);
}

/* A target for the registry and the loop below: its "edges" are how many
 * bytes of a magic it has matched, compared one by one, as a parser does. */
static const u8 magic[] = "TPZ!";
static u8 target_map[64];
static int target_runs, target_found;

static int magic_run(const u8 *data, size_t size)
{
	size_t i;

	target_runs++;
	for (i = 0; i < sizeof(magic) - 1 && i < size; i++) {
		target_map[i] = 1;
		if (data[i] != magic[i])
			return 0;
	}
	if (i == sizeof(magic) - 1)
		target_found++;
	return 0;
}

static const u8 magic_seed[] = "AAAA";
static const u8 *const magic_seeds[] = { magic_seed };
static const u32 magic_seed_sizes[] = { sizeof(magic_seed) - 1 };
static const struct fuzz_target magic_target = {
	.name = "hostmagic", .help = "the host test's magic", .run = magic_run,
	.seeds = magic_seeds, .seed_sizes = magic_seed_sizes, .nseeds = 1,
};
FUZZ_TARGET(magic_target);

static void test_registry(void **state)
{
	assert_ptr_equal(fuzz_target_find("hostmagic"), &magic_target);
	assert_null(fuzz_target_find("nosuch"));
}

/* The loop as the firmware phase runs it, with the target's map for coverage. */
static int mini_loop(bool feedback, u64 seed, int runs)
{
	const struct fuzz_target *t = fuzz_target_find("hostmagic");
	u8 virgin[sizeof(target_map)], buf[32];
	struct fuzz_corpus c;
	struct fuzz_rng r;

	memset(virgin, 0xff, sizeof(virgin));
	assert_int_equal(fuzz_corpus_init(&c, 256), 0);
	fuzz_rng_seed(&r, seed);
	target_found = 0;
	for (u32 i = 0; i < t->nseeds; i++)
		fuzz_corpus_add(&c, t->seeds[i], t->seed_sizes[i]);
	for (int i = 0; i < runs && !target_found; i++) {
		const struct fuzz_input *in = fuzz_corpus_pick(&c, &r);
		const struct fuzz_input *o = fuzz_corpus_pick(&c, &r);
		size_t len;

		memcpy(buf, in->data, in->size);
		len = fuzz_mutate(&r, buf, in->size, sizeof(buf), o->data, o->size, NULL);
		memset(target_map, 0, sizeof(target_map));
		t->run(buf, len);
		if (fuzz_has_new_bits(virgin, target_map, sizeof(target_map)) && feedback)
			fuzz_corpus_add(&c, buf, (u32)len);
	}
	fuzz_corpus_free(&c);
	return target_found;
}

static void test_loop_feedback(void **state)
{
	/* 4 bytes at 1/256 each: blind mutation has no chance in 200000 runs */
	assert_true(mini_loop(true, 1, 200000));
	assert_false(mini_loop(false, 1, 200000));
}

/* FIPS 180's examples, a million 'a', and every padding case: the SHA-1 of
 * the hex digests of 200 inputs of 0..199 bytes, as OpenSSL (Python's
 * hashlib) computes it. */
static void test_sha1(void **state)
{
	static const struct { const char *in; const char *hex; } v[] = {
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	char hex[FUZZ_SHA1_HEX], *all = malloc(200 * 40 + 1);
	static u8 buf[1000000];

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		fuzz_sha1_hex(v[i].in, strlen(v[i].in), hex);
		assert_string_equal(hex, v[i].hex);
	}
	memset(buf, 'a', sizeof(buf));
	fuzz_sha1_hex(buf, sizeof(buf), hex);
	assert_string_equal(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	for (int i = 0; i < 200; i++) {
		for (int j = 0; j < i; j++)
			buf[j] = (u8)(i * 7 + j);
		fuzz_sha1_hex(buf, i, all + 40 * i);
	}
	fuzz_sha1_hex(all, 200 * 40, hex);
	assert_string_equal(hex, "c3d68123daa389c19344c40b263240e6eddb7630");
	/* the sample harness's crash, as `printf 'TPZ\0' | openssl sha1` names it */
	fuzz_sha1_hex("TPZ", 4, hex);
	assert_string_equal(hex, "15fc1ecae6b20b10043d524f921c5ee9fd347e4b");
	free(all);
}

/* AFL's format: names, levels, bare values, escapes, comments, blank lines, CRLF. */
static void test_dict_parse(void **state)
{
	static const char text[] =
		"# a comment\n"
		"\n"
		"magic=\"TPZ\"\n"
		"  header_png@2 = \"\\x89PNG\\x0d\\x0a\"  \r\n"
		"\"bare \\\"quoted\\\" \\\\\"\n"
		"\t# indented comment\n"
		"last=\"\\xff\\x00\"";	/* no newline at the end */
	struct fuzz_dict d;
	char err[128];

	assert_int_equal(fuzz_dict_parse(&d, text, sizeof(text) - 1, "t.dict", err, sizeof(err)), 0);
	assert_int_equal(d.n, 4);
	assert_int_equal(d.e[0].len, 3);
	assert_memory_equal(d.e[0].data, "TPZ", 3);
	assert_int_equal(d.e[1].len, 6);
	assert_memory_equal(d.e[1].data, "\x89PNG\r\n", 6);
	assert_int_equal(d.e[2].len, 15);
	assert_memory_equal(d.e[2].data, "bare \"quoted\" \\", 15);
	assert_int_equal(d.e[3].len, 2);
	assert_memory_equal(d.e[3].data, "\xff\x00", 2);
	fuzz_dict_free(&d);
}

/* Each bad line is named by file and line, with what is wrong. */
static void test_dict_errors(void **state)
{
	static const struct { const char *text; const char *err; } v[] = {
		{ "ok=\"a\"\nno quotes\n", "x.dict:2: not name=\"value\"" },
		{ "a=b\n", "x.dict:1: the value does not start with a double quote" },
		{ "a=\"open\n", "x.dict:1: the value does not end with a double quote" },
		{ "\"\n", "x.dict:1: the value does not end with a double quote" },
		{ "#\n\n\"bad \\q\"\n", "x.dict:3: a backslash not followed by" },
		{ "\"\\x4\"\n", "x.dict:1: a backslash not followed by" },
		{ "\"\\xzz\"\n", "x.dict:1: a backslash not followed by" },
		{ "\"a\"b\"\n", "x.dict:1: a double quote inside the value" },
		{ "\"tab\there\"\n", "x.dict:1: a byte that is not printable" },
		{ "e=\"\"\n", "x.dict:1: an empty value" },
		{ "# only comments\n\n", "x.dict: no token in it" },
		{ "", "x.dict: no token in it" },
	};
	char long_line[300], err[128];
	struct fuzz_dict d;

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		err[0] = 0;
		assert_true(fuzz_dict_parse(&d, v[i].text, strlen(v[i].text), "x.dict", err,
					    sizeof(err)) < 0);
		if (strncmp(err, v[i].err, strlen(v[i].err)))
			fail_msg("case %zu: \"%s\", wanted \"%s...\"", i, err, v[i].err);
		assert_null(d.e);
	}
	/* 129 bytes: one past AFL's limit */
	long_line[0] = '"';
	memset(long_line + 1, 'x', 129);
	strcpy(long_line + 130, "\"\n");
	assert_int_equal(fuzz_dict_parse(&d, long_line, strlen(long_line), "x.dict", err,
					 sizeof(err)), -EINVAL);
	assert_string_equal(err, "x.dict:1: the value is longer than 128 bytes");
	long_line[129] = '"';
	long_line[130] = 0;
	assert_int_equal(fuzz_dict_parse(&d, long_line, strlen(long_line), "x.dict", err,
					 sizeof(err)), 0);
	assert_int_equal(d.e[0].len, 128);
	fuzz_dict_free(&d);
}

static bool has_token(const u8 *p, size_t n)
{
	for (size_t i = 0; i + 5 <= n; i++)
		if (!memcmp(p + i, "TOKEN", 5))
			return true;
	return false;
}

/* With a dictionary its tokens are inserted and written over the input,
 * within max_len; without one (or an empty one) the draws are fuzz_mutate()'s. */
static void test_mutate_dict(void **state)
{
	enum { MAX = 32, CANARY = 16 };
	static const char text[] = "t=\"TOKEN\"\n";
	u64 counts[FUZZ_NR_MUTS] = { 0 };
	u8 a[MAX + CANARY], b[MAX + CANARY];
	struct fuzz_rng ra, rb;
	struct fuzz_dict d, empty = { 0 };
	size_t la = 4, lb = 4;
	int found = 0;
	char err[64];

	assert_int_equal(fuzz_dict_parse(&d, text, sizeof(text) - 1, "t", err, sizeof(err)), 0);
	fuzz_rng_seed(&ra, 3);
	memset(a, 0xcc, sizeof(a));
	memcpy(a, "abcd", 4);
	for (int i = 0; i < 5000; i++) {
		la = fuzz_mutate_dict(&ra, a, la, MAX, NULL, 0, &d, counts);
		assert_true(la >= 1 && la <= MAX);
		for (int k = 0; k < CANARY; k++)
			assert_int_equal(a[MAX + k], 0xcc);
		found += has_token(a, la);
		if (i % 50 == 49)
			la = 1 + fuzz_rng_below(&ra, 8);
	}
	assert_true(counts[FUZZ_MUT_DICT_OVERWRITE] > 50 && counts[FUZZ_MUT_DICT_INSERT] > 50);
	assert_true(found > 200);
	fuzz_dict_free(&d);
	/* an empty dictionary: the same inputs as fuzz_mutate() from the same seed */
	fuzz_rng_seed(&ra, 9);
	fuzz_rng_seed(&rb, 9);
	la = lb = 4;
	memcpy(a, "abcd", 4);
	memcpy(b, "abcd", 4);
	for (int i = 0; i < 1000; i++) {
		la = fuzz_mutate_dict(&ra, a, la, MAX, NULL, 0, &empty, NULL);
		lb = fuzz_mutate(&rb, b, lb, MAX, NULL, 0, NULL);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, la);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_deterministic),
		cmocka_unit_test(test_mutate_deterministic),
		cmocka_unit_test(test_mutate_bounds),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_new_bits),
		cmocka_unit_test(test_new_bits_sparse),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_loop_feedback),
		cmocka_unit_test(test_sha1),
		cmocka_unit_test(test_dict_parse),
		cmocka_unit_test(test_dict_errors),
		cmocka_unit_test(test_mutate_dict),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
