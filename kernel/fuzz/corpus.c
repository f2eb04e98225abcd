// SPDX-License-Identifier: MIT
/*
 * The fuzzer's bookkeeping: AFL's hit-count classes and "new bits" test on
 * the edge bitmap (include/topaz/ptcov.h's), the corpus of kept inputs, and
 * the registry of targets (FUZZ_TARGET()).
 */
#include <topaz/fuzz.h>
#include <topaz/errno.h>
#include <topaz/printk.h>
#include <topaz/slab.h>
#include <topaz/string.h>

/* Classes as AFL's count_class_lookup8: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ */
u8 fuzz_bucket(u8 hits)
{
	if (hits <= 2)
		return hits;
	if (hits == 3)
		return 4;
	if (hits <= 7)
		return 8;
	if (hits <= 15)
		return 16;
	if (hits <= 31)
		return 32;
	if (hits <= 127)
		return 64;
	return 128;
}

static u8 class_lut[256];

static void lut_init(void)
{
	if (!class_lut[1])
		for (int i = 0; i < 256; i++)
			class_lut[i] = fuzz_bucket((u8)i);
}

void fuzz_classify(u8 *map, u32 size)
{
	lut_init();
	for (u32 i = 0; i < size; i++)
		map[i] = class_lut[map[i]];
}

/* A map is mostly zeros: words of eight entries are skipped at once (the
 * bitmap is 64 KiB and this runs after every execution). */
enum fuzz_news fuzz_has_new_bits(u8 *virgin, const u8 *map, u32 size)
{
	enum fuzz_news ret = FUZZ_NEW_NONE;
	u32 i = 0;

	lut_init();
	for (; i < size; i++) {
		u8 cls;

		if (!(i & 7) && i + 8 <= size) {
			u64 w;

			memcpy(&w, map + i, 8);
			if (!w) {
				i += 7;
				continue;
			}
		}
		cls = class_lut[map[i]];
		if (!(cls & virgin[i]))
			continue;
		if (virgin[i] == 0xff)
			ret = FUZZ_NEW_EDGE;
		else if (ret == FUZZ_NEW_NONE)
			ret = FUZZ_NEW_COUNT;
		virgin[i] &= (u8)~cls;
	}
	return ret;
}

/* What one entry brings: @cls against @virgin's classes not yet seen. */
static enum fuzz_news entry_news(u8 virgin, u8 cls)
{
	if (!(cls & virgin))
		return FUZZ_NEW_NONE;
	return virgin == 0xff ? FUZZ_NEW_EDGE : FUZZ_NEW_COUNT;
}

enum fuzz_news fuzz_has_new_bits_at(u8 *virgin, const u8 *map, const u32 *idx, u32 n)
{
	enum fuzz_news ret = FUZZ_NEW_NONE;

	lut_init();
	for (u32 k = 0; k < n; k++) {
		u32 i = idx[k];
		u8 cls = class_lut[map[i]];
		enum fuzz_news e = entry_news(virgin[i], cls);

		if (e == FUZZ_NEW_NONE)
			continue;
		if (e > ret)
			ret = e;
		virgin[i] &= (u8)~cls;
	}
	return ret;
}

enum fuzz_news fuzz_news_at(const u8 *virgin, const u8 *map, const u32 *idx, u32 n)
{
	enum fuzz_news ret = FUZZ_NEW_NONE;

	lut_init();
	for (u32 k = 0; k < n && ret != FUZZ_NEW_EDGE; k++) {
		enum fuzz_news e = entry_news(virgin[idx[k]], class_lut[map[idx[k]]]);

		if (e > ret)
			ret = e;
	}
	return ret;
}

u32 fuzz_count_edges(const u8 *virgin, u32 size)
{
	u32 n = 0;

	for (u32 i = 0; i < size; i++)
		n += virgin[i] != 0xff;
	return n;
}

int fuzz_corpus_init(struct fuzz_corpus *c, u32 cap)
{
	memset(c, 0, sizeof(*c));
	c->in = kcalloc(cap, sizeof(*c->in), GFP_KERNEL);
	if (!c->in)
		return -ENOMEM;
	c->cap = cap;
	return 0;
}

int fuzz_corpus_add(struct fuzz_corpus *c, const u8 *data, u32 size)
{
	u8 *copy;

	if (c->n >= c->cap)
		return -ENOSPC;
	copy = kmalloc(size ? size : 1, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, size);
	c->in[c->n].data = copy;
	c->in[c->n].size = size;
	c->n++;
	c->bytes += size;
	return 0;
}

const struct fuzz_input *fuzz_corpus_pick(const struct fuzz_corpus *c, struct fuzz_rng *r)
{
	if (!c->n)
		return NULL;
	/* half the time one of the newest eighth: what found new code last is
	 * the likeliest to lead on, as AFL favours fresh queue entries */
	if (fuzz_rng_below(r, 2)) {
		u32 fresh = c->n / 8 ? c->n / 8 : 1;

		return &c->in[c->n - 1 - fuzz_rng_below(r, fresh)];
	}
	return &c->in[fuzz_rng_below(r, c->n)];
}

void fuzz_corpus_free(struct fuzz_corpus *c)
{
	for (u32 i = 0; i < c->n; i++)
		kfree(c->in[i].data);
	kfree(c->in);
	memset(c, 0, sizeof(*c));
}

extern const struct fuzz_target *const __start_fuzz_targets[] __hidden __attribute__((weak));
extern const struct fuzz_target *const __stop_fuzz_targets[] __hidden __attribute__((weak));

const struct fuzz_target *fuzz_target_find(const char *name)
{
	for (const struct fuzz_target *const *t = __start_fuzz_targets; t < __stop_fuzz_targets; t++)
		if (!strcmp((*t)->name, name))
			return *t;
	return NULL;
}

void fuzz_target_list(void)
{
	printk("fuzz targets (fw.fuzz=NAME):\n");
	for (const struct fuzz_target *const *t = __start_fuzz_targets; t < __stop_fuzz_targets; t++)
		printk("  %-12s %s\n", (*t)->name, (*t)->help);
}
