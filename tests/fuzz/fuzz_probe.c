// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the probe= specification.
 *
 * Feeds: the input bytes as a NUL-terminated spec (an exact-size copy plus
 * the NUL), "pattern:action[,pattern:action...]" with wildcards in the
 * patterns, first to probe_apply_spec(), then to the "probe" parameter's
 * setter as the command line hands it over after probes_init(). Besides the
 * built-in print and count the harness registers three actions of its own
 * (five in all, one more than a point holds, so that a spec can fill a
 * point). While the spec's handlers are attached it fires every probe point
 * (kmalloc, krealloc, kfree, a cache's alloc and free, alloc_pages and
 * __free_pages) and prints the count tables.
 * Must hold: no crash, no ASan/UBSan report, no leak, and against a model of
 * the documented rules: the number of bad items (128 characters or more, not
 * point:action, an unknown action, no matching point, every matching point
 * full) and each point's handlers, in order (one attach per action and
 * point); the setter refuses, with a reason, only an empty value or one
 * without ':'; every attached action runs on each point it is on, and none
 * after detaching; no hit is dropped (no handler here fires a probe);
 * unregistering every action from "*" brings each point back to its handlers
 * before the first input, so inputs are independent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../host/hosted.h"
#include <topaz/probe.h>
#include <topaz/cmdline.h>
#include <topaz/slab.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/printk.h>
#include <topaz/symbols.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARENA_MIB	16
#define MAX_POINTS	16
#define MAX_ACTIONS	8

extern struct probe_action probe_builtin_actions;	/* kernel/probe_handlers.c */

/* What each of the harness's actions saw, per point. */
struct seen {
	u64 hits[MAX_POINTS];
};

static struct probe_point *points[MAX_POINTS];
static unsigned int npoints;
static struct probe_action *actions[MAX_ACTIONS];
static unsigned int nactions;
static struct seen seen[3];
static struct probe_action own[3] = {
	{ .name = "check1", .data = &seen[0] },
	{ .name = "check2", .data = &seen[1] },
	{ .name = "check3", .data = &seen[2] },
};
static const struct kparam *probe_param;
static struct kmem_cache *cache;
static char out[1 << 16];

/* The model: each point's handlers, as the rules say they should be. */
static struct probe_attach model[MAX_POINTS][PROBE_MAX_HANDLERS];
static unsigned int model_nr[MAX_POINTS];
static struct probe_attach baseline[MAX_POINTS][PROBE_MAX_HANDLERS];
static unsigned int baseline_nr[MAX_POINTS];
static u64 baseline_dropped[MAX_POINTS];

static unsigned int point_index(const struct probe_point *pp)
{
	for (unsigned int i = 0; i < npoints; i++)
		if (points[i] == pp)
			return i;
	abort();
}

/* Reads every value of the hit, each the way its type says it can be read. */
static void check_handler(struct probe_hit *hit, void *data)
{
	const struct probe_point *pp = hit->point;
	struct seen *s = data;
	char buf[160];

	s->hits[point_index(pp)]++;
	for (unsigned int i = 0; i < pp->nr_values; i++) {
		const char *name = pp->values[i].name;
		u64 v;

		probe_format_value(hit, i, buf, sizeof(buf));
		switch (pp->values[i].type) {
		case PROBE_U64:
		case PROBE_S64:
		case PROBE_HEX:
		case PROBE_PTR:
			if (!probe_get_u64(hit, name, &v) || probe_get_str(hit, name))
				abort();
			break;
		default:
			if (!probe_get_str(hit, name) || probe_get_u64(hit, name, &v))
				abort();
			break;
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct probe_point *pp;

	hosted_page_alloc_setup(ARENA_MIB);
	kmem_cache_init();
	cache = kmem_cache_create("fuzz-probe", 72, 0, 0, NULL);
	/* the symbol table, read once and not inside the first input */
	if (!cache || !ksym_address("check_handler"))
		abort();
	for (unsigned int i = 0; i < ARRAY_SIZE(own); i++) {
		own[i].fn = check_handler;
		probe_action_register(&own[i]);
	}
	for (struct probe_action *a = &probe_builtin_actions; a; a = a->next)
		actions[nactions++] = a;
	for (unsigned int i = 0; i < ARRAY_SIZE(own); i++)
		actions[nactions++] = &own[i];
	probe_for_each(pp) {
		if (npoints == MAX_POINTS)
			abort();
		points[npoints] = pp;
		baseline_nr[npoints] = pp->nr_handlers;
		baseline_dropped[npoints] = pp->dropped;
		memcpy(baseline[npoints], pp->handlers, sizeof(pp->handlers));
		npoints++;
	}
	if (npoints < 6)
		abort();	/* the vm.* points of mm/ are not linked in */
	probe_param = cmdline_find_param("probe");
	if (!probe_param || !probe_param->set)
		abort();
	/* from here on probe= applies at once, as after the boot's probes_init() */
	hosted_capture_begin(out, sizeof(out));
	probes_init();
	hosted_capture_end();
	return 0;
}

static const struct probe_action *model_action(const char *name)
{
	for (unsigned int i = 0; i < nactions; i++)
		if (!strcmp(actions[i]->name, name))
			return actions[i];
	return NULL;
}

/* One item as the rules say probe_apply_spec() takes it: 0 or 1 (bad). */
static int model_item(const char *item, size_t len)
{
	const struct probe_action *a;
	unsigned int matched = 0, attached = 0, full = 0;
	char buf[128], *colon;

	if (len >= sizeof(buf))
		return 1;
	memcpy(buf, item, len);
	buf[len] = '\0';
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1])
		return 1;
	*colon = '\0';
	a = model_action(colon + 1);
	if (!a)
		return 1;
	for (unsigned int i = 0; i < npoints; i++) {
		bool there = false;

		if (!glob_match(buf, points[i]->name))
			continue;
		matched++;
		for (unsigned int j = 0; j < model_nr[i]; j++)
			there |= model[i][j].fn == a->fn && model[i][j].data == a->data;
		if (there)
			continue;
		if (model_nr[i] == PROBE_MAX_HANDLERS) {
			full++;
			continue;
		}
		model[i][model_nr[i]++] = (struct probe_attach){ a->fn, a->data };
		attached++;
	}
	return !matched || (!attached && full);
}

static int model_spec(const char *spec)
{
	int bad = 0;

	for (const char *s = spec; *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len)
			bad += model_item(s, len);
		if (!e)
			break;
		s = e + 1;
	}
	return bad;
}

static void check_table(void)
{
	for (unsigned int i = 0; i < npoints; i++) {
		const struct probe_point *pp = points[i];

		if (pp->nr_handlers != model_nr[i] || pp->enabled != (model_nr[i] > 0))
			abort();
		/* no handler here fires a probe, so no hit is ever dropped */
		if (pp->dropped != baseline_dropped[i])
			abort();
		for (unsigned int j = 0; j < model_nr[i]; j++)
			if (pp->handlers[j].fn != model[i][j].fn ||
			    pp->handlers[j].data != model[i][j].data)
				abort();
	}
}

static bool model_has(unsigned int i, const struct probe_action *a)
{
	for (unsigned int j = 0; j < model_nr[i]; j++)
		if (model[i][j].fn == a->fn && model[i][j].data == a->data)
			return true;
	return false;
}

/* Hit every point at least once; the noinline frame is a call site to count. */
static __noinline void fire_all(void)
{
	struct page *pg;
	void *p, *q;

	p = kmalloc(40, GFP_KERNEL);
	p = krealloc(p, 3000, GFP_KERNEL);
	kfree(p);
	kfree(NULL);
	q = kmem_cache_alloc(cache, GFP_KERNEL | __GFP_ZERO);
	kmem_cache_free(cache, q);
	pg = alloc_pages(GFP_KERNEL, 1);
	if (!pg)
		abort();
	__free_pages(pg, 1);
}

static void fire_and_check(void)
{
	const struct probe_action *print = model_action("print");
	const struct probe_action *count = model_action("count");

	memset(seen, 0, sizeof(seen));
	probe_count_reset();
	hosted_capture_begin(out, sizeof(out));
	fire_all();
	probe_count_report();
	hosted_capture_end();
	for (unsigned int i = 0; i < npoints; i++) {
		char want[96];

		for (unsigned int k = 0; k < ARRAY_SIZE(own); k++)
			if (!seen[k].hits[i] != !model_has(i, &own[k]))
				abort();	/* ran where not attached, or not where it is */
		ksnprintf(want, sizeof(want), "] %s: name=", points[i]->name);
		if (!strstr(out, want) != !model_has(i, print))
			abort();
		ksnprintf(want, sizeof(want), "count %s: ", points[i]->name);
		if (!strstr(out, want) != !model_has(i, count))
			abort();
	}
	probe_count_reset();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec, why[160];
	int bad, want, ret;

	spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	for (unsigned int i = 0; i < npoints; i++) {
		model_nr[i] = baseline_nr[i];
		memcpy(model[i], baseline[i], sizeof(model[i]));
	}

	want = model_spec(spec);
	hosted_capture_begin(out, sizeof(out));
	bad = probe_apply_spec(spec);
	hosted_capture_end();
	if (bad != want)
		abort();
	check_table();
	fire_and_check();

	/* again through the command line's setter: attached items stay once */
	want = 0;
	if (!*spec || !strchr(spec, ':') || strlen(spec) + 2 > CMDLINE_MAX)
		want = -EINVAL;
	else
		model_spec(spec);	/* its bad items are reported, not returned */
	why[0] = '\0';
	hosted_capture_begin(out, sizeof(out));
	ret = probe_param->set(spec, why, sizeof(why));
	hosted_capture_end();
	if (ret != want || (ret && !why[0]))
		abort();
	check_table();
	fire_and_check();

	/* detach every action from every point: back to the baseline */
	for (unsigned int k = 0; k < nactions; k++) {
		const struct probe_action *a = actions[k];
		int on = 0;

		for (unsigned int i = 0; i < npoints; i++)
			on += model_has(i, a);
		if (probe_unregister("*", a->fn, a->data) != on)
			abort();
	}
	for (unsigned int i = 0; i < npoints; i++) {
		model_nr[i] = baseline_nr[i];
		memcpy(model[i], baseline[i], sizeof(model[i]));
		if (points[i]->nr_handlers != baseline_nr[i])
			abort();
	}
	check_table();
	fire_and_check();	/* nothing of the spec's runs any more */
	free(spec);
	return 0;
}
