// SPDX-License-Identifier: MIT
/*
 * Slab debugging, as SLUB's: poisoning, red zones, the last alloc and free
 * call sites per object, consistency checks, and the reports.
 *
 * Object layout with debugging (offsets from the object pointer):
 *   [-red_left_pad, 0)      left red zone      0xbb free, 0xcc allocated
 *   [0, object_size)        the object         0x6b...0xa5 while free (SLAB_POISON)
 *   [object_size, inuse)    right red zone     as the left one
 *   [fp_offset, +8)         hardened free pointer
 *   [meta_offset, +8)       state (free, allocated, quarantined) and kmalloc's requested size
 *   [track_offset, +48)     alloc and free call sites (SLAB_STORE_USER)
 *   ... up to the stride    padding            0x5a (SLAB_POISON)
 * kmalloc objects with red zones also check the bytes between the requested
 * size and the size class (0xcc), as Linux does since 6.2.
 *
 * Every report names the cache, the object, the call sites and dumps the
 * bytes; then it repairs (restores the red zone or poison, quarantines an
 * object or slab, refuses a bad free) or, with slub_debug_panic, panics.
 */
#define pr_fmt(fmt) "slab: " fmt
#include "slab_internal.h"
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/cmdline.h>
#include <topaz/time.h>
#include <topaz/errno.h>

u64 slab_error_count;	/* reports on every CPU: __atomic_fetch_add */
static bool panic_on_error;
KPARAM_BOOL("slub_debug_panic", slub_debug_panic, &panic_on_error,
	    "panic on a slab corruption or misuse report instead of repairing and going on");

/*
 * Under slub_debug_panic, the first report's message, for the panic once the
 * reporting path has dropped its locks. CPUs report at once: @pending_state
 * gives the buffer to one writer (EMPTY -> BUSY, then READY once written)
 * and to one reader (READY -> BUSY, then EMPTY once copied); whoever loses a
 * race leaves the buffer alone (a report already pending will panic).
 */
enum { PANIC_EMPTY, PANIC_BUSY, PANIC_READY };
static u32 pending_state;
static char pending_panic[200];

void slab_debug_set_panic(bool panic)
{
	WRITE_ONCE(panic_on_error, panic);
}

u64 slab_debug_errors(void)
{
	return __atomic_load_n(&slab_error_count, __ATOMIC_RELAXED);
}

/* Under slub_debug_panic: "BUG @name: @what" is pending, unless a report is already. */
static void set_pending_panic(const char *name, const char *what)
{
	u32 empty = PANIC_EMPTY;

	if (!READ_ONCE(panic_on_error) ||
	    !__atomic_compare_exchange_n(&pending_state, &empty, PANIC_BUSY, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	ksnprintf(pending_panic, sizeof(pending_panic), "BUG %s: %s (slub_debug_panic)", name,
		  what);
	__atomic_store_n(&pending_state, PANIC_READY, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- slub_debug= */

#define DEBUG_RULES 8
struct debug_rule {
	slab_flags_t flags;
	const char *caches;	/* comma-separated patterns in rules_buf */
};
static struct debug_rule rules[DEBUG_RULES];
static unsigned int nr_rules;
static slab_flags_t global_flags;
static bool global_set;
static char rules_buf[256];

static bool list_matches(const char *list, const char *name)
{
	char pat[KMEM_CACHE_NAME_LEN];

	while (*list) {
		const char *e = strchr(list, ',');
		size_t len = e ? (size_t)(e - list) : strlen(list);

		if (len && len < sizeof(pat)) {
			memcpy(pat, list, len);
			pat[len] = '\0';
			if (glob_match(pat, name))
				return true;
		}
		if (!e)
			break;
		list = e + 1;
	}
	return false;
}

slab_flags_t slab_debug_flags_for(const char *name, slab_flags_t flags)
{
	/* the last rule naming the cache wins; otherwise the global letters */
	for (unsigned int i = nr_rules; i-- > 0;)
		if (list_matches(rules[i].caches, name))
			return flags | rules[i].flags;
	return flags | (global_set ? global_flags : 0);
}

static int parse_letters(const char *s, size_t n, slab_flags_t *out, char *why, size_t whylen)
{
	slab_flags_t f = 0;

	if (!n) {
		*out = SLAB_DEBUG_FLAGS;	/* no letters: everything, as Linux */
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case 'F': case 'f': f |= SLAB_CONSISTENCY_CHECKS; break;
		case 'Z': case 'z': f |= SLAB_RED_ZONE; break;
		case 'P': case 'p': f |= SLAB_POISON; break;
		case 'U': case 'u': f |= SLAB_STORE_USER; break;
		case '-': f = 0; break;
		default:
			ksnprintf(why, whylen,
				  "unknown option '%c': use F (checks), Z (red zones), P (poison), U (call sites) or - (off)",
				  s[i]);
			return -EINVAL;
		}
	}
	*out = f;
	return 0;
}

static int parse_spec(const char *spec, char *why, size_t whylen)
{
	struct debug_rule nrules[DEBUG_RULES];
	unsigned int nr = 0;
	slab_flags_t gflags = 0;
	bool gset = false;
	char buf[sizeof(rules_buf)];
	char *blk;

	if (!spec) {
		/* bare "slub_debug": everything on every cache */
		nr_rules = 0;
		global_flags = SLAB_DEBUG_FLAGS;
		global_set = true;
		return 0;
	}
	if (strlen(spec) >= sizeof(buf)) {
		ksnprintf(why, whylen, "longer than %zu characters", sizeof(buf) - 1);
		return -EINVAL;
	}
	strscpy(buf, spec, sizeof(buf));
	blk = buf;
	while (blk) {
		char *next = strchr(blk, ';');
		char *comma;
		slab_flags_t f;
		size_t nletters;

		if (next)
			*next++ = '\0';
		comma = strchr(blk, ',');
		nletters = comma ? (size_t)(comma - blk) : strlen(blk);
		if (!nletters && !comma) {	/* empty block */
			blk = next;
			continue;
		}
		if (parse_letters(blk, nletters, &f, why, whylen))
			return -EINVAL;
		if (!comma || !comma[1]) {
			gflags = f;
			gset = true;
		} else {
			if (nr == DEBUG_RULES) {
				ksnprintf(why, whylen, "more than %d blocks with cache lists", DEBUG_RULES);
				return -EINVAL;
			}
			nrules[nr].flags = f;
			nrules[nr].caches = comma + 1;	/* fixed up below */
			nr++;
		}
		blk = next;
	}
	/* Commit: the lists move into rules_buf at the same offsets. */
	memcpy(rules_buf, buf, sizeof(buf));
	for (unsigned int i = 0; i < nr; i++) {
		rules[i].flags = nrules[i].flags;
		rules[i].caches = rules_buf + (nrules[i].caches - buf);
	}
	nr_rules = nr;
	global_flags = gflags;
	global_set = gset;
	return 0;
}

static int set_slub_debug(const char *val, char *why, size_t whylen)
{
	int r = parse_spec(val, why, whylen);

	if (!r && !list_empty(&slab_caches))
		pr_warn("slub_debug=%s given after caches were created: it applies to caches created from now on\n",
			val ? val : "");
	return r;
}
KPARAM_CUSTOM("slub_debug", slub_debug, set_slub_debug,
	      "slab debugging, as Linux: slub_debug[=FZPU-][,cache,...][;...]");
KPARAM_CUSTOM("slab_debug", slab_debug, set_slub_debug, "the same as slub_debug");

int slab_debug_parse(const char *spec)
{
	char why[160];
	int r = parse_spec(spec, why, sizeof(why));

	if (r)
		pr_err("slub_debug=%s: %s\n", spec ? spec : "", why);
	return r;
}

/* ---------------------------------------------------------------- reports */

void slab_report(struct kmem_cache *s, const void *obj, uintptr_t caller, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&slab_error_count, 1, __ATOMIC_RELAXED);
	slab_stat_inc(s, errors);
	printk(KERN_ERR "=============================================================================\n");
	printk(KERN_ERR "BUG %s: %s\n", s->name, what);
	printk(KERN_ERR "-----------------------------------------------------------------------------\n");
	if (obj)
		printk(KERN_ERR "INFO: Pointer 0x%lx, in a call from %pS\n",
		       (unsigned long)(uintptr_t)obj, (void *)caller);
	else
		printk(KERN_ERR "INFO: In a call from %pS\n", (void *)caller);
	set_pending_panic(s->name, what);
}

void slab_report_ptr(const void *p, uintptr_t caller, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&slab_error_count, 1, __ATOMIC_RELAXED);
	printk(KERN_ERR "=============================================================================\n");
	printk(KERN_ERR "BUG kmalloc: %s\n", what);
	printk(KERN_ERR "-----------------------------------------------------------------------------\n");
	printk(KERN_ERR "INFO: Pointer 0x%lx, in a call from %pS\n", (unsigned long)(uintptr_t)p,
	       (void *)caller);
	slab_print_object(p);
	printk(KERN_ERR "FIX kmalloc: pointer ignored\n");
	set_pending_panic("kmalloc", what);
}

void slab_fix(struct kmem_cache *s, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	printk(KERN_ERR "FIX %s: %s\n", s->name, what);
}

void slab_check_pending_panic(void)
{
	char msg[sizeof(pending_panic)];
	u32 ready = PANIC_READY;

	if (likely(__atomic_load_n(&pending_state, __ATOMIC_RELAXED) != PANIC_READY))
		return;
	if (!__atomic_compare_exchange_n(&pending_state, &ready, PANIC_BUSY, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;		/* another CPU took it: that one panics */
	strscpy(msg, pending_panic, sizeof(msg));
	__atomic_store_n(&pending_state, PANIC_EMPTY, __ATOMIC_RELEASE);
	panic("%s", msg);
}

void slab_hexdump(const char *label, const void *start, size_t len)
{
	const u8 *p = start;

	for (size_t off = 0; off < len; off += 16) {
		char line[128];
		size_t n = len - off < 16 ? len - off : 16, k;
		int pos;

		pos = ksnprintf(line, sizeof(line), "%-8s 0x%lx: ", label,
				(unsigned long)(uintptr_t)(p + off));
		for (k = 0; k < 16; k++)
			pos += ksnprintf(line + pos, sizeof(line) - (size_t)pos, k < n ? "%02x " : "   ",
					 k < n ? p[off + k] : 0);
		pos += ksnprintf(line + pos, sizeof(line) - (size_t)pos, " ");
		for (k = 0; k < n; k++)
			line[pos++] = p[off + k] >= 0x20 && p[off + k] < 0x7f ? (char)p[off + k] : '.';
		line[pos] = '\0';
		printk(KERN_ERR "%s\n", line);
	}
}

#define DUMP_MAX 128

static void print_track(const char *what, const struct slab_track *t)
{
	if (!t->addr)
		return;
	printk(KERN_ERR "INFO: %s in %pS age=%llu ns cpu=%u\n", what, (void *)t->addr,
	       ktime_get_ns() - t->when, t->cpu);
}

void slab_print_object(const void *p)
{
	struct page *page = p ? slab_head_page(p) : NULL;
	struct kmem_cache *s;
	unsigned int idx;
	bool start;
	u8 *obj, *slot;
	size_t pad_from, pad_len;

	if (!page || !(page->flags & PG_slab)) {
		if (page && page->slab_cache == &kmalloc_large_tag)
			printk(KERN_ERR "INFO: 0x%lx is in a large kmalloc block at 0x%lx (%lu bytes)\n",
			       (unsigned long)(uintptr_t)p, (unsigned long)(uintptr_t)page_address(page),
			       PAGE_SIZE << page->order);
		else
			printk(KERN_ERR "INFO: 0x%lx is not in any slab\n", (unsigned long)(uintptr_t)p);
		return;
	}
	s = page->slab_cache;
	printk(KERN_ERR "INFO: Slab 0x%lx of %s: order %u, objects=%u used=%u\n",
	       (unsigned long)(uintptr_t)slab_base(page), s->name, page->order, page->objects,
	       page->inuse);
	idx = slab_obj_index(s, page, p, &start);
	if (idx >= page->objects)
		return;
	obj = slab_obj_at(s, page, idx);
	slot = obj - s->red_left_pad;
	printk(KERN_ERR "INFO: Object 0x%lx @offset=%lu, size %u (stride %u)%s\n",
	       (unsigned long)(uintptr_t)obj, (unsigned long)(obj - (u8 *)slab_base(page)),
	       s->object_size, s->size,
	       s->debug ? (obj_meta(s, obj)->state == OBJ_ALLOC ? ", allocated" :
			   obj_meta(s, obj)->state == OBJ_FREE ? ", free" :
			   obj_meta(s, obj)->state == OBJ_BAD ? ", quarantined" : ", state corrupt") : "");
	if (s->flags & SLAB_STORE_USER) {
		print_track("Allocated", obj_track(s, obj, TRACK_ALLOC));
		print_track("Freed", obj_track(s, obj, TRACK_FREE));
	}
	if (s->red_left_pad)
		slab_hexdump("Redzone", slot, s->red_left_pad);
	if (s->object_size <= DUMP_MAX) {
		slab_hexdump("Object", obj, s->object_size);
	} else {
		/*
		 * @p may sit before the object: in the first slot's left red zone
		 * slab_obj_index() answers object 0. Dump from the start then;
		 * the difference went negative here (found by tests/fuzz/fuzz_slab).
		 */
		size_t at = start || (const u8 *)p < obj ? 0 : (size_t)((const u8 *)p - obj);

		at = ALIGN_DOWN(at, 16UL);
		if (at + DUMP_MAX > s->object_size)
			at = ALIGN_DOWN(s->object_size - DUMP_MAX, 16UL);
		printk(KERN_ERR "INFO: %u-byte object: bytes %zu-%zu shown\n", s->object_size, at,
		       at + DUMP_MAX - 1);
		slab_hexdump("Object", obj + at, DUMP_MAX);
	}
	if (s->flags & SLAB_RED_ZONE)
		slab_hexdump("Redzone", obj + s->object_size, s->inuse - s->object_size);
	pad_from = s->debug ? s->meta_offset + sizeof(struct slab_meta) : s->inuse;
	if (s->flags & SLAB_STORE_USER)
		pad_from = s->track_offset + 2 * sizeof(struct slab_track);
	pad_len = s->size - s->red_left_pad > pad_from ? s->size - s->red_left_pad - pad_from : 0;
	if (pad_len && (s->flags & SLAB_POISON))
		slab_hexdump("Padding", obj + pad_from, pad_len < 64 ? pad_len : 64);
}

/* ---------------------------------------------------------------- checks */

static u8 *first_mismatch(u8 *p, u8 v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return p + i;
	return NULL;
}

static u8 *last_mismatch(u8 *p, u8 v, size_t n)
{
	while (n--)
		if (p[n] != v)
			return p + n;
	return NULL;
}

/* Check [start, start+len) == @v; report and restore when not. */
static bool check_bytes(struct kmem_cache *s, u8 *obj, uintptr_t caller, const char *what,
			u8 *start, size_t len, u8 v)
{
	u8 *bad = len ? first_mismatch(start, v, len) : NULL;
	u8 *end;

	if (!bad)
		return true;
	end = last_mismatch(start, v, len);
	slab_report(s, obj, caller, "%s overwritten", what);
	printk(KERN_ERR "INFO: 0x%lx-0x%lx @offset=%ld. First byte 0x%02x instead of 0x%02x\n",
	       (unsigned long)(uintptr_t)bad, (unsigned long)(uintptr_t)end,
	       (long)(bad - obj), *bad, v);
	slab_print_object(obj);
	memset(start, v, len);
	slab_fix(s, "Restoring %s 0x%lx-0x%lx=0x%02x", what, (unsigned long)(uintptr_t)bad,
		 (unsigned long)(uintptr_t)end, v);
	return false;
}

static size_t pad_offset(const struct kmem_cache *s)
{
	if (s->flags & SLAB_STORE_USER)
		return s->track_offset + 2 * sizeof(struct slab_track);
	return s->meta_offset + sizeof(struct slab_meta);
}

static bool check_padding(struct kmem_cache *s, u8 *obj, uintptr_t caller)
{
	size_t from = pad_offset(s), end = s->size - s->red_left_pad;

	if (!(s->flags & SLAB_POISON) || from >= end)
		return true;
	return check_bytes(s, obj, caller, "Object padding", obj + from, end - from, POISON_INUSE);
}

static bool check_redzones(struct kmem_cache *s, u8 *obj, uintptr_t caller, u8 v, size_t orig)
{
	bool ok = true;

	if (!(s->flags & SLAB_RED_ZONE))
		return true;
	ok &= check_bytes(s, obj, caller, "Left Redzone", obj - s->red_left_pad, s->red_left_pad, v);
	ok &= check_bytes(s, obj, caller, "Right Redzone", obj + s->object_size,
			  s->inuse - s->object_size, v);
	if (orig && orig < s->object_size)
		ok &= check_bytes(s, obj, caller, "kmalloc Redzone", obj + orig,
				  s->object_size - orig, v);
	return ok;
}

static void set_track(struct kmem_cache *s, void *obj, enum track_item t, uintptr_t caller)
{
	struct slab_track *tr;

	if (!(s->flags & SLAB_STORE_USER))
		return;
	tr = obj_track(s, obj, t);
	tr->addr = caller;
	tr->when = ktime_get_ns();
	tr->cpu = smp_processor_id();
}

static void poison_object(struct kmem_cache *s, u8 *obj)
{
	if (!s->poison_object)
		return;
	memset(obj, POISON_FREE, s->object_size - 1);
	obj[s->object_size - 1] = POISON_END;
}

void slab_debug_init_slab(struct kmem_cache *s, struct page *head)
{
	if (s->flags & SLAB_POISON)
		memset(slab_base(head), POISON_INUSE, slab_bytes(head));
}

void slab_debug_init_object(struct kmem_cache *s, void *p)
{
	u8 *obj = p;

	if (s->flags & SLAB_RED_ZONE) {
		memset(obj - s->red_left_pad, SLUB_RED_INACTIVE, s->red_left_pad);
		memset(obj + s->object_size, SLUB_RED_INACTIVE, s->inuse - s->object_size);
	}
	poison_object(s, obj);
	obj_meta(s, obj)->state = OBJ_FREE;
	obj_meta(s, obj)->orig_size = 0;
	if (s->flags & SLAB_STORE_USER)
		memset(obj_track(s, obj, TRACK_ALLOC), 0, 2 * sizeof(struct slab_track));
}

bool slab_debug_alloc_check(struct kmem_cache *s, struct page *head, void *p, uintptr_t caller,
			    size_t orig)
{
	struct slab_meta *m = obj_meta(s, p);
	u8 *obj = p;

	if (m->state != OBJ_FREE) {
		slab_report(s, obj, caller, "Object on the freelist is not free (state %#x)",
			    m->state);
		slab_print_object(obj);
		m->state = OBJ_BAD;
		slab_fix(s, "Object quarantined: never handed out");
		return false;
	}
	if (s->poison_object) {
		u8 *bad = first_mismatch(obj, POISON_FREE, s->object_size - 1);

		if (!bad && obj[s->object_size - 1] != POISON_END)
			bad = obj + s->object_size - 1;
		if (bad) {
			u8 *end = obj[s->object_size - 1] != POISON_END ? obj + s->object_size - 1 :
				  last_mismatch(obj, POISON_FREE, s->object_size - 1);

			slab_report(s, obj, caller, "Poison overwritten: use after free");
			printk(KERN_ERR "INFO: 0x%lx-0x%lx @offset=%ld. First byte 0x%02x instead of 0x%02x\n",
			       (unsigned long)(uintptr_t)bad, (unsigned long)(uintptr_t)end,
			       (long)(bad - obj), *bad,
			       bad == obj + s->object_size - 1 ? POISON_END : POISON_FREE);
			slab_print_object(obj);
			m->state = OBJ_BAD;
			slab_fix(s, "Object quarantined: never handed out");
			return false;
		}
	}
	check_redzones(s, obj, caller, SLUB_RED_INACTIVE, 0);
	check_padding(s, obj, caller);

	/* now allocated */
	if (s->flags & SLAB_RED_ZONE) {
		memset(obj - s->red_left_pad, SLUB_RED_ACTIVE, s->red_left_pad);
		memset(obj + s->object_size, SLUB_RED_ACTIVE, s->inuse - s->object_size);
		if (orig && orig < s->object_size)
			memset(obj + orig, SLUB_RED_ACTIVE, s->object_size - orig);
	}
	m->state = OBJ_ALLOC;
	m->orig_size = (u32)(orig ? orig : s->object_size);
	set_track(s, obj, TRACK_ALLOC, caller);
	return true;
}

bool slab_debug_free_check(struct kmem_cache *s, struct page *head, void *p, uintptr_t caller)
{
	struct slab_meta *m = obj_meta(s, p);
	u8 *obj = p;

	if (m->state == OBJ_FREE) {
		slab_report(s, obj, caller, "Double free: the object is already free");
		slab_print_object(obj);
		slab_fix(s, "Object not freed again");
		return false;
	}
	if (m->state == OBJ_BAD) {
		slab_report(s, obj, caller, "Free of an object quarantined after corruption");
		slab_print_object(obj);
		slab_fix(s, "Object stays quarantined");
		return false;
	}
	if (m->state != OBJ_ALLOC) {
		slab_report(s, obj, caller, "Object metadata corrupted (state %#x)", m->state);
		slab_print_object(obj);
		m->state = OBJ_BAD;
		slab_fix(s, "Object quarantined");
		return false;
	}
	check_redzones(s, obj, caller, SLUB_RED_ACTIVE, m->orig_size);
	check_padding(s, obj, caller);
	return true;
}

void slab_debug_mark_free(struct kmem_cache *s, void *p, uintptr_t caller)
{
	u8 *obj = p;

	set_track(s, obj, TRACK_FREE, caller);
	poison_object(s, obj);
	if (s->flags & SLAB_RED_ZONE) {
		memset(obj - s->red_left_pad, SLUB_RED_INACTIVE, s->red_left_pad);
		memset(obj + s->object_size, SLUB_RED_INACTIVE, s->inuse - s->object_size);
	}
	obj_meta(s, obj)->state = OBJ_FREE;
}

/* ---------------------------------------------------------------- validation */

/*
 * One bit per object of the slab being looked at, on the caller's stack: each
 * validation has its own. A static one was shared by every cache and CPU, and
 * the list lock each caller holds is its cache's only, so two CPUs validating
 * two caches at once overwrote each other's bits (false "Object state"
 * reports). 512 bytes is little on every stack the slab runs on (16 KiB IST
 * stacks at least), needs no lock, so it is also safe in an NMI that
 * interrupted a validation on its CPU, and costs no per-cache memory for a
 * check that is rarely run.
 */
#define ONFREE_WORDS	(SLAB_MAX_OBJECTS / 64)

static bool onfree_test(const u64 *onfree, unsigned int i)
{
	return (onfree[i / 64] >> (i % 64)) & 1;	/* i < ONFREE_WORDS * 64 */
}

/* Mark the objects on @page's freelist in @onfree; returns how many, or -1 if corrupt. */
static long mark_free_objects(struct kmem_cache *s, struct page *page, u64 onfree[ONFREE_WORDS],
			      uintptr_t caller, bool report)
{
	long n = 0;
	void *p = page->freelist;

	memset(onfree, 0, ONFREE_WORDS * sizeof(u64));
	while (p) {
		bool start;
		unsigned int idx;
		void *next;

		if (!slab_freelist_ok(s, page, p) || n > (long)page->objects) {
			if (report) {
				slab_report(s, NULL, caller, "Freelist corrupted in slab 0x%lx",
					    (unsigned long)(uintptr_t)slab_base(page));
				printk(KERN_ERR "INFO: entry %ld is 0x%lx: outside the slab, not an object, or a cycle\n",
				       n, (unsigned long)(uintptr_t)p);
			}
			return -1;
		}
		idx = slab_obj_index(s, page, p, &start);
		if (idx < ONFREE_WORDS * 64)
			onfree[idx / 64] |= 1ull << (idx % 64);
		next = fp_decode(s, p);
		p = next;
		n++;
	}
	return n;
}

int slab_debug_validate_slab(struct kmem_cache *s, struct page *page)
{
	u64 before = slab_stat_read(s, errors);
	uintptr_t caller = _RET_IP_;
	u64 onfree[ONFREE_WORDS];
	long nfree = mark_free_objects(s, page, onfree, caller, true);

	if (nfree >= 0 && (unsigned long)nfree != page->objects - page->inuse) {
		slab_report(s, NULL, caller,
			    "Wrong object count in slab 0x%lx: %ld on the freelist, %u objects, %u in use",
			    (unsigned long)(uintptr_t)slab_base(page), nfree, page->objects,
			    page->inuse);
	}
	if (s->debug) {
		for (unsigned int i = 0; i < page->objects; i++) {
			u8 *obj = slab_obj_at(s, page, i);
			struct slab_meta *m = obj_meta(s, obj);

			if (m->state == OBJ_BAD)
				continue;
			if (nfree >= 0 && i < ONFREE_WORDS * 64 &&
			    onfree_test(onfree, i) != (m->state == OBJ_FREE)) {
				slab_report(s, obj, caller, "Object state %s but %s the freelist",
					    m->state == OBJ_FREE ? "free" :
					    m->state == OBJ_ALLOC ? "allocated" : "corrupt",
					    m->state == OBJ_FREE ? "not on" : "on");
				slab_print_object(obj);
				continue;
			}
			if (m->state == OBJ_FREE) {
				if (s->poison_object) {
					check_bytes(s, obj, caller, "Poison", obj, s->object_size - 1,
						    POISON_FREE);
					check_bytes(s, obj, caller, "Poison end", obj + s->object_size - 1,
						    1, POISON_END);
				}
				check_redzones(s, obj, caller, SLUB_RED_INACTIVE, 0);
			} else {
				check_redzones(s, obj, caller, SLUB_RED_ACTIVE, m->orig_size);
			}
			check_padding(s, obj, caller);
		}
		if (s->flags & SLAB_POISON) {
			u8 *tail = (u8 *)slab_base(page) + (size_t)page->objects * s->size;
			size_t len = slab_bytes(page) - (size_t)page->objects * s->size;
			u8 *bad = first_mismatch(tail, POISON_INUSE, len);

			if (bad) {
				slab_report(s, NULL, caller, "Slab padding overwritten");
				printk(KERN_ERR "INFO: 0x%lx @offset=%ld. First byte 0x%02x instead of 0x%02x\n",
				       (unsigned long)(uintptr_t)bad, (long)(bad - (u8 *)slab_base(page)),
				       *bad, POISON_INUSE);
				slab_hexdump("Padding", tail, len < 64 ? len : 64);
				memset(tail, POISON_INUSE, len);
				slab_fix(s, "Restoring slab padding");
			}
		}
	}
	return (int)(slab_stat_read(s, errors) - before);
}

int kmem_cache_validate(struct kmem_cache *s)
{
	unsigned long flags = local_irq_save();
	u64 before = slab_stat_read(s, errors);
	struct page *page;
	struct list_head *lists[] = { &s->partial, &s->full, &s->free };

	if (!slab_lock(s)) {
		local_irq_restore(flags);
		return -EBUSY;
	}
	for (unsigned int l = 0; l < ARRAY_SIZE(lists); l++)
		list_for_each_entry(page, lists[l], lru)
			slab_debug_validate_slab(s, page);
	slab_unlock(s);
	local_irq_restore(flags);
	slab_check_pending_panic();
	return (int)(slab_stat_read(s, errors) - before);
}

void slab_debug_report_leaks(struct kmem_cache *s, struct page *page)
{
	u64 onfree[ONFREE_WORDS];
	long nfree = s->debug ? 0 : mark_free_objects(s, page, onfree, 0, false);
	unsigned int shown = 0;

	printk(KERN_ERR "INFO: Slab 0x%lx: %u of %u objects in use\n",
	       (unsigned long)(uintptr_t)slab_base(page), page->inuse, page->objects);
	if (nfree < 0)
		return;
	for (unsigned int i = 0; i < page->objects && shown < 16; i++) {
		u8 *obj = slab_obj_at(s, page, i);
		bool used;

		if (s->debug)
			used = obj_meta(s, obj)->state == OBJ_ALLOC;
		else
			used = i >= ONFREE_WORDS * 64 || !onfree_test(onfree, i);
		if (!used)
			continue;
		shown++;
		if ((s->flags & SLAB_STORE_USER) && obj_track(s, obj, TRACK_ALLOC)->addr)
			printk(KERN_ERR "INFO: Object 0x%lx in use, allocated by %pS\n",
			       (unsigned long)(uintptr_t)obj,
			       (void *)obj_track(s, obj, TRACK_ALLOC)->addr);
		else
			printk(KERN_ERR "INFO: Object 0x%lx in use\n", (unsigned long)(uintptr_t)obj);
	}
}
