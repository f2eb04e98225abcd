// SPDX-License-Identifier: MIT
/*
 * The built-in probe actions:
 *   print - one line per hit with every value, "name=value" in the point's order;
 *   count - hits, bytes_req and bytes_alloc aggregated per probe point and
 *           caller_function, as a SystemTap script with @count and @sum would,
 *           printed sorted by hits at shutdown (or by probe_count_report()).
 *
 * The count handler runs on every hit of the hottest points (vm.kmalloc), so
 * it does no allocation, no symbol lookup and no string work: it aggregates
 * by call_site in a fixed open-addressing table, and symbolizes when printing
 * (a caller_function is "func+0xoff", so it names exactly one call site).
 * All CPUs share the table: with several CPUs a slot is claimed with a
 * compare-and-swap and counted with atomic adds (NMI-safe, as hits are); two
 * CPUs that meet a new call site at once may claim a slot each, and the
 * report adds such slots up.
 */
#define pr_fmt(fmt) "probe: " fmt
#include <topaz/probe.h>
#include <topaz/kernel.h>
#include <topaz/shutdown.h>
#include <topaz/symbols.h>

void probe_print_handler(struct probe_hit *hit, void *data)
{
	const struct probe_point *pp = hit->point;
	char line[480], val[160];
	size_t len;

	len = (size_t)ksnprintf(line, sizeof(line), "%s:", pp->name);
	for (unsigned int i = 0; i < pp->nr_values && len < sizeof(line); i++)
		len += (size_t)ksnprintf(line + len, sizeof(line) - len, " %s=%s", pp->values[i].name,
					 probe_format_value(hit, i, val, sizeof(val)));
	printk("%s cpu=%u\n", line, hit->cpu);
}

/* ---------------------------------------------------------------- count */

#define COUNT_BITS	9
#define COUNT_SLOTS	(1u << COUNT_BITS)

static struct probe_count_entry counts[COUNT_SLOTS];
static u64 count_dropped;	/* hits lost because the table was full */

/*
 * Value indices per point, resolved on a point's first hit (direct-mapped by
 * the point's address). A missing value reads index 0 under a zero mask, so
 * the hit path has no branches for it.
 */
struct count_idx {
	const struct probe_point *pp;
	u8 call_site, bytes_req, bytes_alloc;
	u64 m_site, m_req, m_alloc;
} __aligned(64);
static struct count_idx idx_cache[16];

static __noinline void count_resolve(struct count_idx *c, const struct probe_point *pp)
{
	int site = probe_value_index(pp, "call_site");
	int req = probe_value_index(pp, "bytes_req");
	int alloc = probe_value_index(pp, "bytes_alloc");

	c->pp = pp;
	c->call_site = (u8)(site < 0 ? 0 : site);
	c->m_site = site < 0 ? 0 : ~0ull;
	c->bytes_req = (u8)(req < 0 ? 0 : req);
	c->m_req = req < 0 ? 0 : ~0ull;
	c->bytes_alloc = (u8)(alloc < 0 ? 0 : alloc);
	c->m_alloc = alloc < 0 ? 0 : ~0ull;
}

static inline unsigned int count_hash(const struct probe_point *pp, uintptr_t site)
{
	/* return addresses differ in their low bits; collisions probe on */
	return ((u32)site ^ (u32)((uintptr_t)pp >> 4)) & (COUNT_SLOTS - 1);
}

static struct probe_count_entry *count_slot(const struct probe_point *pp, uintptr_t site,
					    bool create)
{
	unsigned int h = count_hash(pp, site);

	for (unsigned int n = 0; n < COUNT_SLOTS; n++, h = (h + 1) & (COUNT_SLOTS - 1)) {
		struct probe_count_entry *e = &counts[h];

		if (__atomic_load_n(&e->point, __ATOMIC_ACQUIRE) == pp && e->call_site == site)
			return e;
		if (!__atomic_load_n(&e->claim, __ATOMIC_ACQUIRE)) {	/* never taken */
			const struct probe_point *none = NULL;

			if (!create)
				return NULL;
			/* the site first: a reader matches the point last */
			if (!__atomic_compare_exchange_n(&e->claim, &none, pp, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue;	/* another CPU's: look at the next */
			e->call_site = site;
			__atomic_store_n(&e->point, pp, __ATOMIC_RELEASE);
			return e;
		}
	}
	return NULL;
}

/* One CPU: plain adds (no other writer); several: atomic ones. */
static inline void count_add(struct probe_count_entry *e, u64 req, u64 alloc)
{
	if (likely(nr_cpu_ids == 1)) {
		e->hits++;
		e->bytes_req += req;
		e->bytes_alloc += alloc;
		return;
	}
	__atomic_fetch_add(&e->hits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->bytes_req, req, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->bytes_alloc, alloc, __ATOMIC_RELAXED);
}

/* Everything the hit path does not: resolving indices, probing past the home slot. */
static __noinline void count_slow(struct probe_hit *hit)
{
	const struct probe_point *pp = hit->point;
	struct count_idx *ix = &idx_cache[((uintptr_t)pp >> 3) & 15];
	struct probe_count_entry *e;
	uintptr_t site;

	if (ix->pp != pp)
		count_resolve(ix, pp);
	site = (uintptr_t)(hit->v[ix->call_site].u & ix->m_site);
	e = count_slot(pp, site, true);
	if (!e) {
		__atomic_fetch_add(&count_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	count_add(e, hit->v[ix->bytes_req].u & ix->m_req, hit->v[ix->bytes_alloc].u & ix->m_alloc);
}

/* The hit path: no calls (so no saved registers), misses tail-call count_slow(). */
void probe_count_handler(struct probe_hit *hit, void *data)
{
	const struct probe_point *pp = hit->point;
	const union probe_val *v = hit->v;
	const struct count_idx *ix = &idx_cache[((uintptr_t)pp >> 3) & 15];
	struct probe_count_entry *e;
	uintptr_t site;

	if (unlikely(ix->pp != pp))
		return count_slow(hit);
	site = (uintptr_t)(v[ix->call_site].u & ix->m_site);
	e = &counts[count_hash(pp, site)];
	if (unlikely(__atomic_load_n(&e->point, __ATOMIC_ACQUIRE) != pp || e->call_site != site))
		return count_slow(hit);
	count_add(e, v[ix->bytes_req].u & ix->m_req, v[ix->bytes_alloc].u & ix->m_alloc);
}

const struct probe_count_entry *probe_count_lookup(const struct probe_point *point,
						   uintptr_t call_site)
{
	return count_slot(point, call_site, false);
}

void probe_count_reset(void)
{
	memset(counts, 0, sizeof(counts));
	count_dropped = 0;
}

static bool count_before(const struct probe_count_entry *a, const struct probe_count_entry *b)
{
	if (a->hits != b->hits)
		return a->hits > b->hits;
	if (a->bytes_req != b->bytes_req)
		return a->bytes_req > b->bytes_req;
	return a->call_site < b->call_site;
}

void probe_count_report(void)
{
	static u16 order[COUNT_SLOTS];
	struct probe_point *pp;
	bool any = false;

	/* two CPUs that met a call site at once took a slot each: one line */
	for (unsigned int i = 0; i < COUNT_SLOTS; i++)
		for (unsigned int k = i + 1; counts[i].point && k < COUNT_SLOTS; k++)
			if (counts[k].point == counts[i].point &&
			    counts[k].call_site == counts[i].call_site) {
				counts[i].hits += counts[k].hits;
				counts[i].bytes_req += counts[k].bytes_req;
				counts[i].bytes_alloc += counts[k].bytes_alloc;
				counts[k].hits = counts[k].bytes_req = counts[k].bytes_alloc = 0;
				counts[k].call_site = 0;
				counts[k].point = NULL;	/* its claim stays: nobody takes it */
			}
	probe_for_each(pp) {
		unsigned int n = 0;
		u64 hits = 0, req = 0, alloc = 0;

		/* insertion sort of this point's entries, by hits descending */
		for (unsigned int i = 0; i < COUNT_SLOTS; i++) {
			unsigned int j;

			if (counts[i].point != pp)
				continue;
			for (j = n; j > 0 && count_before(&counts[i], &counts[order[j - 1]]); j--)
				order[j] = order[j - 1];
			order[j] = (u16)i;
			n++;
			hits += counts[i].hits;
			req += counts[i].bytes_req;
			alloc += counts[i].bytes_alloc;
		}
		if (!n)
			continue;
		any = true;
		printk("count %s: %llu hits from %u call sites, bytes_req %llu, bytes_alloc %llu\n",
		       pp->name, hits, n, req,
		       alloc);
		printk("  %-44s %10s %12s %12s\n", "caller_function", "hits", "bytes_req",
		       "bytes_alloc");
		for (unsigned int k = 0; k < n; k++) {
			const struct probe_count_entry *e = &counts[order[k]];
			char sym[KSYM_NAME_LEN + 24];

			printk("  %-44s %10llu %12llu %12llu\n",
			       ksym_format(e->call_site, sym, sizeof(sym)),
			       e->hits, e->bytes_req,
			       e->bytes_alloc);
		}
	}
	if (count_dropped)
		pr_warn("count: %llu hits not counted: more than %u (point, call site) pairs\n",
			count_dropped, COUNT_SLOTS);
	if (!any && !count_dropped)
		printk("count: no hits\n");
}

static struct shutdown_hook count_hook = { .name = "probe count", .fn = probe_count_report };
static bool count_hook_registered;

static void count_setup(void)
{
	if (count_hook_registered)
		return;
	count_hook_registered = true;
	shutdown_hook_register(&count_hook);
}

static struct probe_action count_action = {
	.name = "count",
	.fn = probe_count_handler,
	.help = "aggregate hits, bytes_req, bytes_alloc by caller_function; printed at shutdown",
	.setup = count_setup,
};

/* The head of the built-in list (kernel/probe.c walks it). */
struct probe_action probe_builtin_actions = {
	.name = "print",
	.fn = probe_print_handler,
	.help = "print one line per hit with every value",
	.next = &count_action,
};
