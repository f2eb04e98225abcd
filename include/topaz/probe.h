/* SPDX-License-Identifier: MIT */
/*
 * Static probe points: named instrumentation hooks compiled into the code.
 *
 * A probe point is a descriptor in the probe_table section: a name
 * ("vm.kmem_cache_alloc"), the names and types of the values it hands out,
 * and the handlers attached to it. The site tests one byte, the point's
 * enabled flag, and only when it is set calls an out-of-line function that
 * fills the values and runs the handlers:
 *
 *	if (probe_enabled(kmem_cache_alloc))
 *		fire_kmem_cache_alloc(...);
 *
 * Handlers are attached and detached at run time by name or wildcard
 * (probe_register("vm.*", fn, data)); they read values by name and type
 * (probe_get_u64(hit, "bytes_req", &v), probe_get_str(hit, "caller_function")).
 * Derived strings (a symbol for an address, a value shown by the formatter
 * its point gives, as gfp flags by mm's) are only formatted when a handler
 * asks for them.
 *
 * Handlers run in the context of the probed code: with interrupts in any
 * state, possibly inside an interrupt. A handler that allocates must use
 * GFP_ATOMIC; probe hits from inside a handler are dropped (counted), so a
 * handler on vm.kmalloc may itself call kmalloc.
 */
#ifndef TOPAZ_PROBE_H
#define TOPAZ_PROBE_H

#include <topaz/types.h>
#include <topaz/percpu.h>

/* How a value is stored and printed. */
enum probe_vtype {
	PROBE_U64,	/* unsigned, printed in decimal */
	PROBE_S64,	/* signed, printed in decimal */
	PROBE_HEX,	/* unsigned, printed as 0x... (flags, addresses as numbers) */
	PROBE_PTR,	/* a pointer, printed as 0x... */
	PROBE_STR,	/* a NUL-terminated string */
	PROBE_SYM,	/* derived string: value .from (an address) as "func+0xoff" */
	PROBE_FMT,	/* derived string: value .from as the desc's .fmt shows it (the
			 * point's owner knows the type, as show_gfp_flags for gfp_t) */
	PROBE_NAME,	/* derived string: the point's name after its first '.', as
			 * SystemTap's "name" ("kmem_cache_alloc"); sites store nothing */
};

/*
 * probe_fmt_fn - how a PROBE_FMT value shows its source @v in @buf (@size
 * bytes, NUL-terminated); returns @buf
 */
typedef const char *(*probe_fmt_fn)(u64 v, char *buf, size_t size);

struct probe_value_desc {
	const char *name;
	u8 type;	/* enum probe_vtype */
	u8 from;	/* PROBE_SYM/PROBE_FMT: index of the source value */
	probe_fmt_fn fmt;	/* PROBE_FMT: the formatter */
};

union probe_val {
	u64 u;
	s64 s;
	const void *p;
	const char *str;
};

#define PROBE_MAX_HANDLERS	4
#define PROBE_MAX_VALUES	16
#define PROBE_MAX_DERIVED	2	/* SYM/FMT values per point (NAME needs no buffer) */

struct probe_point;
struct probe_hit;

typedef void (*probe_handler_t)(struct probe_hit *hit, void *data);

struct probe_attach {
	probe_handler_t fn;
	void *data;
};

/**
 * struct probe_point - one probe point (lives in the probe_table section)
 * @enabled: set while at least one handler is attached; the only thing a
 *	site reads when nothing is attached
 * @nr_values: entries in @values
 * @nr_handlers: entries used in @handlers
 * @name: full name, "vm.kmem_cache_alloc"
 * @values: names and types of the values, in the order of the site's array
 * @handlers: attached handlers, run in attachment order
 * @dropped: hits not delivered because a handler was already running
 * @changed: called after @enabled changes, interrupts off (NULL: nothing to
 *	do): a site whose fast path does not test @enabled reroutes itself
 */
struct probe_point {
	bool enabled;
	u8 nr_values;
	u8 nr_handlers;
	const char *name;
	const struct probe_value_desc *values;
	struct probe_attach handlers[PROBE_MAX_HANDLERS];
	u64 dropped;
	void (*changed)(struct probe_point *pp);
};

/**
 * struct probe_hit - what a handler receives
 * @point: the probe point that fired
 * @v: its values, indexed like @point->values
 * @derived: bit i set once derived value i is formatted; the k-th derived
 *	value of a point (at most PROBE_MAX_DERIVED) is kept in @buf[k]
 */
struct probe_hit {
	struct probe_point *point;
	const union probe_val *v;
	unsigned int cpu;	/* the CPU it fired on: SystemTap's cpu() */
	u32 derived;
	char buf[PROBE_MAX_DERIVED][160];
};

#define PROBE_VALUE(n, t)		{ .name = (n), .type = (t) }
#define PROBE_DERIVED(n, t, src)	{ .name = (n), .type = (t), .from = (src) }
/* value @n: value @src shown by @fn (a probe_fmt_fn) */
#define PROBE_FORMATTED(n, src, fn)	{ .name = (n), .type = PROBE_FMT, .from = (src), .fmt = (fn) }

/*
 * DEFINE_PROBE(id, "vm.name", values) - define probe point @id once, in the
 * file that fires it; @values is a static array of struct probe_value_desc.
 * DECLARE_PROBE(id) makes it visible to other files.
 */
#define DEFINE_PROBE(id, pname, vals)	DEFINE_PROBE_NOTIFY(id, pname, vals, NULL)
/* The same with @fn as the point's @changed. */
#define DEFINE_PROBE_NOTIFY(id, pname, vals, fn)				\
	struct probe_point probe_##id __used __section("probe_table") __aligned(8) = { \
		.name = (pname), .values = (vals),				\
		.nr_values = (u8)ARRAY_SIZE(vals), .changed = (fn) }
#define DECLARE_PROBE(id) extern struct probe_point probe_##id

#ifdef TOPAZ_NO_PROBES
/* Probe points compiled out: the baseline the benchmark measures against. */
#define probe_enabled(id) (false)
#define probe_enabled_pp(pp) (false)
#else
/*
 * probe_enabled() - the one predictable branch a site pays with nothing
 * attached: a compare of the flag in memory and a jump. A plain read on
 * purpose (volatile would cost a load into a register first); every call
 * reads it afresh, so an attach takes effect at the next hit.
 */
#define probe_enabled(id) unlikely(probe_##id.enabled)
#define probe_enabled_pp(pp) unlikely((pp)->enabled)
#endif

/*
 * Handlers running, per CPU. A hit while a handler
 * runs on the same CPU (a handler that allocates, an interrupt during a
 * handler) is dropped rather than recursing.
 */
DECLARE_PER_CPU(unsigned int, probe_nesting);
/**
 * __probe_fire_more() - probe_fire()'s out-of-line part: run @pp's handlers
 * after the first on @hit
 */
void __probe_fire_more(struct probe_point *pp, struct probe_hit *hit);

/**
 * probe_fire() - run the handlers of @pp with @v (called by sites when enabled)
 *
 * Inline, so that a site pays one call (the handler's) per hit. A hit from
 * inside a handler on this CPU is dropped and counted in @pp->dropped.
 * handlers[0] is always callable once a point was enabled (a no-op after the
 * last detach), so a hit racing with a detach is harmless.
 */
static inline __attribute__((always_inline)) void probe_fire(struct probe_point *pp,
							     const union probe_val *v)
{
	unsigned int *nest = this_cpu_ptr(probe_nesting);
	struct probe_hit hit;

	if (unlikely(*nest)) {
		__atomic_fetch_add(&pp->dropped, 1, __ATOMIC_RELAXED);	/* any CPU's */
		return;
	}
	/* interrupts nest, so whatever interrupts this has undone its own mark */
	*nest = 1;
	__asm__ __volatile__("" ::: "memory");
	hit.point = pp;
	hit.v = v;
	hit.cpu = smp_processor_id();
	hit.derived = 0;
	pp->handlers[0].fn(&hit, pp->handlers[0].data);
	if (unlikely(pp->nr_handlers > 1))
		__probe_fire_more(pp, &hit);
	__asm__ __volatile__("" ::: "memory");
	*nest = 0;
}

/**
 * probe_register() - attach @fn(@data) to every probe point matching @pattern
 * @pattern: a name or a wildcard ("vm.*", "vm.kmem_cache_*")
 *
 * Returns the number of points attached (points where (@fn, @data) is already
 * attached are skipped), -ENOENT when nothing matches, -ENOSPC when every
 * matching point already has PROBE_MAX_HANDLERS handlers.
 */
int probe_register(const char *pattern, probe_handler_t fn, void *data);
/** probe_unregister() - detach @fn(@data) from the matching points; returns how many */
int probe_unregister(const char *pattern, probe_handler_t fn, void *data);

/** probe_find() - the probe point named @name, or NULL */
struct probe_point *probe_find(const char *name);
/** probe_for_each() - iterate over every probe point in the image */
struct probe_point *probe_first(void);
/**
 * probe_next() - the probe point after @pp in the image
 * Return: it, or NULL after the last.
 */
struct probe_point *probe_next(struct probe_point *pp);
#define probe_for_each(pp) for (pp = probe_first(); pp; pp = probe_next(pp))

/** probe_value_index() - index of value @name in @pp, or -ENOENT */
int probe_value_index(const struct probe_point *pp, const char *name);
/**
 * probe_get_u64() - the numeric value @name of @hit (U64, S64, HEX or PTR)
 * Returns false, leaving *@out alone, when there is no such numeric value.
 */
bool probe_get_u64(struct probe_hit *hit, const char *name, u64 *out);
/** probe_get_str() - the string value @name (STR, SYM or GFP), or NULL */
const char *probe_get_str(struct probe_hit *hit, const char *name);
/** probe_hit_str_at() - string value at index @i (formats derived values once) */
const char *probe_hit_str_at(struct probe_hit *hit, unsigned int i);
/**
 * probe_format_value() - value @i of @hit as text ("64", "0xcc0", "GFP_KERNEL")
 * Returns @buf.
 */
const char *probe_format_value(struct probe_hit *hit, unsigned int i, char *buf, size_t size);

/*
 * Built-in actions for probe=point:action on the command line. "print" and
 * "count" are built in; other subsystems (the PT driver) add their own with
 * probe_action_register() before probes_init() runs.
 */
struct probe_action {
	const char *name;
	probe_handler_t fn;
	void *data;
	const char *help;
	void (*setup)(void);	/* optional: run each time the action is applied */
	struct probe_action *next;
};
/** probe_action_register() - add action @a to those probe= names find */
void probe_action_register(struct probe_action *a);
/**
 * probe_action_find() - the action called @name, registered ones first, then
 * the built-in ones
 * Return: it, or NULL.
 */
struct probe_action *probe_action_find(const char *name);

/**
 * probe_apply_spec() - attach actions given as "pattern:action[,pattern:action...]"
 * Reports every bad item by name (unknown action, pattern matching nothing);
 * returns the number of items that failed.
 */
int probe_apply_spec(const char *spec);

/**
 * probes_init() - apply the probe= command line (call once, after the
 * command line is parsed and the page and slab allocators are up)
 */
void probes_init(void);

/* The built-in handlers, also usable directly. */
/** probe_print_handler() - print @hit's point and values on one line (the "print" action) */
void probe_print_handler(struct probe_hit *hit, void *data);
/**
 * probe_count_handler() - count @hit per point and call site, with the bytes
 * it asked for and got (the "count" action)
 */
void probe_count_handler(struct probe_hit *hit, void *data);
/** probe_count_report() - print the count tables, sorted by hits (also at shutdown) */
void probe_count_report(void);
/** probe_count_reset() - forget every count */
void probe_count_reset(void);

struct probe_count_entry {
	const struct probe_point *point;	/* set last: the entry is complete */
	const struct probe_point *claim;	/* the CPU that took the slot set it */
	uintptr_t call_site;
	u64 hits, bytes_req, bytes_alloc;
} __aligned(64);
/** probe_count_lookup() - the count entry for (@point, @call_site), or NULL */
const struct probe_count_entry *probe_count_lookup(const struct probe_point *point,
						   uintptr_t call_site);

#endif
