// SPDX-License-Identifier: MIT
/*
 * The static probe framework: the table of probe points collected by the
 * linker, attaching handlers by name or wildcard, delivering hits, values by
 * name, and the probe= command line.
 */
#define pr_fmt(fmt) "probe: " fmt
#include <topaz/probe.h>
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/cmdline.h>
#include <topaz/errno.h>
#include <topaz/symbols.h>

/* Weak so that an image without probe points still links. */
extern struct probe_point __start_probe_table[] __hidden __attribute__((weak));
extern struct probe_point __stop_probe_table[] __hidden __attribute__((weak));

DEFINE_PER_CPU(unsigned int, probe_nesting);

struct probe_point *probe_first(void)
{
	struct probe_point *first = __start_probe_table, *end = __stop_probe_table;

	return first < end ? first : NULL;
}

struct probe_point *probe_next(struct probe_point *pp)
{
	struct probe_point *end = __stop_probe_table;

	return pp + 1 < end ? pp + 1 : NULL;
}

struct probe_point *probe_find(const char *name)
{
	struct probe_point *pp;

	probe_for_each(pp)
		if (!strcmp(pp->name, name))
			return pp;
	return NULL;
}

void __probe_fire_more(struct probe_point *pp, struct probe_hit *hit)
{
	for (unsigned int i = 1; i < READ_ONCE(pp->nr_handlers); i++)
		pp->handlers[i].fn(hit, pp->handlers[i].data);
}

static int attach(struct probe_point *pp, probe_handler_t fn, void *data)
{
	unsigned long flags;
	int ret = 0;

	flags = local_irq_save();
	for (unsigned int i = 0; i < pp->nr_handlers; i++)
		if (pp->handlers[i].fn == fn && pp->handlers[i].data == data)
			ret = -EEXIST;
	if (!ret && pp->nr_handlers == PROBE_MAX_HANDLERS)
		ret = -ENOSPC;
	if (!ret) {
		pp->handlers[pp->nr_handlers].fn = fn;
		pp->handlers[pp->nr_handlers].data = data;
		barrier();
		WRITE_ONCE(pp->nr_handlers, pp->nr_handlers + 1);
		if (!pp->enabled) {
			WRITE_ONCE(pp->enabled, true);
			if (pp->changed)
				pp->changed(pp);
		}
	}
	local_irq_restore(flags);
	return ret;
}

static void probe_nop(struct probe_hit *hit, void *data)
{
}

static bool detach(struct probe_point *pp, probe_handler_t fn, void *data)
{
	unsigned long flags;
	bool found = false;

	flags = local_irq_save();
	for (unsigned int i = 0; i < pp->nr_handlers; i++) {
		if (pp->handlers[i].fn != fn || pp->handlers[i].data != data)
			continue;
		for (unsigned int j = i + 1; j < pp->nr_handlers; j++)
			pp->handlers[j - 1] = pp->handlers[j];
		WRITE_ONCE(pp->nr_handlers, pp->nr_handlers - 1);
		/* the vacated slot stays callable for a hit already past its check */
		pp->handlers[pp->nr_handlers].fn = probe_nop;
		pp->handlers[pp->nr_handlers].data = NULL;
		if (!pp->nr_handlers) {
			WRITE_ONCE(pp->enabled, false);
			if (pp->changed)
				pp->changed(pp);
		}
		found = true;
		break;
	}
	local_irq_restore(flags);
	return found;
}

int probe_register(const char *pattern, probe_handler_t fn, void *data)
{
	struct probe_point *pp;
	int attached = 0, matched = 0, full = 0;

	if (!pattern || !fn)
		return -EINVAL;
	probe_for_each(pp) {
		int r;

		if (!glob_match(pattern, pp->name))
			continue;
		matched++;
		r = attach(pp, fn, data);
		if (!r)
			attached++;
		else if (r == -ENOSPC)
			full++;
	}
	if (!matched)
		return -ENOENT;
	if (!attached && full)
		return -ENOSPC;
	if (full)
		pr_warn("'%s': %d matching points already have %d handlers; not attached there\n",
			pattern, full, PROBE_MAX_HANDLERS);
	return attached;
}

int probe_unregister(const char *pattern, probe_handler_t fn, void *data)
{
	struct probe_point *pp;
	int n = 0;

	if (!pattern)
		return -EINVAL;
	probe_for_each(pp)
		if (glob_match(pattern, pp->name) && detach(pp, fn, data))
			n++;
	return n;
}

int probe_value_index(const struct probe_point *pp, const char *name)
{
	for (unsigned int i = 0; i < pp->nr_values; i++)
		if (!strcmp(pp->values[i].name, name))
			return (int)i;
	return -ENOENT;
}

bool probe_get_u64(struct probe_hit *hit, const char *name, u64 *out)
{
	int i = probe_value_index(hit->point, name);

	if (i < 0)
		return false;
	switch (hit->point->values[i].type) {
	case PROBE_U64:
	case PROBE_S64:
	case PROBE_HEX:
	case PROBE_PTR:
		*out = hit->v[i].u;
		return true;
	}
	return false;
}

const char *probe_hit_str_at(struct probe_hit *hit, unsigned int i)
{
	const struct probe_value_desc *d;
	unsigned int k = 0;

	if (i >= hit->point->nr_values)
		return NULL;
	d = &hit->point->values[i];
	if (d->type == PROBE_STR)
		return hit->v[i].str ? hit->v[i].str : "";
	if (d->type == PROBE_NAME) {
		const char *dot = strchr(hit->point->name, '.');

		return dot ? dot + 1 : hit->point->name;
	}
	if (d->type != PROBE_SYM && d->type != PROBE_FMT)
		return NULL;
	for (unsigned int j = 0; j < i; j++)
		if (hit->point->values[j].type == PROBE_SYM || hit->point->values[j].type == PROBE_FMT)
			k++;
	if (k >= PROBE_MAX_DERIVED || d->from >= hit->point->nr_values)
		return "?";
	if (!(hit->derived & BIT(i))) {
		u64 src = hit->v[d->from].u;

		if (d->type == PROBE_SYM)
			ksym_format((uintptr_t)src, hit->buf[k], sizeof(hit->buf[k]));
		else if (d->fmt)
			d->fmt(src, hit->buf[k], sizeof(hit->buf[k]));
		else
			strscpy(hit->buf[k], "?", sizeof(hit->buf[k]));
		hit->derived |= (u32)BIT(i);
	}
	return hit->buf[k];
}

const char *probe_get_str(struct probe_hit *hit, const char *name)
{
	int i = probe_value_index(hit->point, name);

	return i < 0 ? NULL : probe_hit_str_at(hit, (unsigned int)i);
}

const char *probe_format_value(struct probe_hit *hit, unsigned int i, char *buf, size_t size)
{
	const union probe_val *v = &hit->v[i];

	switch (hit->point->values[i].type) {
	case PROBE_U64:
		ksnprintf(buf, size, "%llu", v->u);
		break;
	case PROBE_S64:
		ksnprintf(buf, size, "%lld", (long long)v->s);
		break;
	case PROBE_HEX:
	case PROBE_PTR:
		ksnprintf(buf, size, "0x%llx", v->u);
		break;
	default:
		strscpy(buf, probe_hit_str_at(hit, i), size);
		break;
	}
	return buf;
}

/* ---------------------------------------------------------------- actions */

extern struct probe_action probe_builtin_actions;	/* kernel/probe_handlers.c */
static struct probe_action *extra_actions;

void probe_action_register(struct probe_action *a)
{
	a->next = extra_actions;
	extra_actions = a;
}

struct probe_action *probe_action_find(const char *name)
{
	for (struct probe_action *a = extra_actions; a; a = a->next)
		if (!strcmp(a->name, name))
			return a;
	for (struct probe_action *a = &probe_builtin_actions; a; a = a->next)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

static void list_actions(void)
{
	for (struct probe_action *a = &probe_builtin_actions; a; a = a->next)
		pr_cont(" %s", a->name);
	for (struct probe_action *a = extra_actions; a; a = a->next)
		pr_cont(" %s", a->name);
}

static void list_points(void)
{
	struct probe_point *pp;

	probe_for_each(pp)
		pr_cont(" %s", pp->name);
}

/* Apply one "pattern:action" item; returns 0 or -errno after reporting. */
static int apply_item(const char *item, size_t len)
{
	char buf[128], *colon;
	struct probe_action *a;
	int r;

	if (len >= sizeof(buf)) {
		pr_err("probe=: item '%.*s...' is longer than %zu characters: ignored\n", 32, item,
		       sizeof(buf) - 1);
		return -EINVAL;
	}
	memcpy(buf, item, len);
	buf[len] = '\0';
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1]) {
		pr_err("probe=: '%s' is not point:action (e.g. vm.kmalloc:count): ignored\n", buf);
		return -EINVAL;
	}
	*colon = '\0';
	a = probe_action_find(colon + 1);
	if (!a) {
		printk(KERN_ERR pr_fmt("probe=: unknown action '%s' in '%s:%s'; actions are:"),
		       colon + 1, buf, colon + 1);
		list_actions();
		pr_cont("\n");
		return -EINVAL;
	}
	if (a->setup)
		a->setup();
	r = probe_register(buf, a->fn, a->data);
	if (r == -ENOENT) {
		printk(KERN_ERR pr_fmt("probe=: '%s' matches no probe point; points are:"), buf);
		list_points();
		pr_cont("\n");
		return r;
	}
	if (r < 0) {
		pr_err("probe=: cannot attach %s to '%s': every matching point has %d handlers\n",
		       a->name, buf, PROBE_MAX_HANDLERS);
		return r;
	}
	pr_info("%s attached to %d point%s matching '%s'\n", a->name, r, r == 1 ? "" : "s", buf);
	return 0;
}

int probe_apply_spec(const char *spec)
{
	const char *s = spec;
	int bad = 0;

	while (s && *s) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len && apply_item(s, len))
			bad++;
		if (!e)
			break;
		s = e + 1;
	}
	return bad;
}

/* probe= may be given more than once; the items accumulate until probes_init(). */
static char probe_spec[CMDLINE_MAX];
static bool probes_ready;

static int set_probe_param(const char *val, char *why, size_t whylen)
{
	size_t have = strlen(probe_spec), len;

	if (!val || !*val) {
		ksnprintf(why, whylen, "expected point:action[,point:action...], e.g. vm.kmalloc:count");
		return -EINVAL;
	}
	if (!strchr(val, ':')) {
		ksnprintf(why, whylen, "expected point:action (actions: print, count)");
		return -EINVAL;
	}
	len = strlen(val);
	if (have + len + 2 > sizeof(probe_spec)) {
		ksnprintf(why, whylen, "probe= items longer than %zu bytes in all", sizeof(probe_spec) - 1);
		return -EINVAL;
	}
	if (probes_ready) {
		probe_apply_spec(val);
		return 0;
	}
	if (have)
		probe_spec[have++] = ',';
	memcpy(probe_spec + have, val, len + 1);
	return 0;
}
KPARAM_CUSTOM("probe", probe, set_probe_param,
	      "attach probe actions: probe=vm.kmem_cache_alloc:print,vm.kmalloc:count (wildcards allowed)");

void probes_init(void)
{
	probes_ready = true;
	if (probe_spec[0])
		probe_apply_spec(probe_spec);
	probe_spec[0] = '\0';
}
