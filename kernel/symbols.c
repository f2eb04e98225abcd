// SPDX-License-Identifier: MIT
/* Symbol table search and formatting, shared by both builds. */
#include <topaz/symbols.h>
#include <topaz/kernel.h>
#include <topaz/kstrto.h>
#include <topaz/errno.h>

const struct ksym_entry *ksym_table_lookup(const struct ksym_table *tab, uintptr_t addr,
					   uintptr_t *offset)
{
	u32 lo = 0, hi = tab->count;
	uintptr_t off;

	if (addr < tab->base || addr - tab->base > 0xffffffffu)
		return NULL;
	off = addr - tab->base;
	/* The last entry starting at or below off. */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		if (tab->entries[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* Prefer a sized symbol that contains off (aliases share a start). */
	for (u32 i = lo; i-- > 0 && tab->entries[i].start == tab->entries[lo - 1].start;) {
		const struct ksym_entry *e = &tab->entries[i];
		if (off < (uintptr_t)e->start + (e->size ? e->size : 1)) {
			if (offset)
				*offset = off - e->start;
			return e;
		}
	}
	return NULL;
}

const struct ksym_entry *ksym_table_find(const struct ksym_table *tab, const char *name)
{
	for (u32 i = 0; i < tab->count; i++)
		if (!strcmp(tab->names + tab->entries[i].name, name))
			return &tab->entries[i];
	return NULL;
}

const char *ksym_format(uintptr_t addr, char *buf, size_t size)
{
	const char *name;
	uintptr_t off, sz;

	if (ksym_lookup(addr, &name, &off, &sz) == 0)
		ksnprintf(buf, size, "%s+0x%lx", name, (unsigned long)off);
	else
		ksnprintf(buf, size, "0x%lx", (unsigned long)addr);
	return buf;
}

static ksym_module_fn module_resolver;

void ksym_set_module_resolver(ksym_module_fn fn)
{
	module_resolver = fn;
}

int ksym_resolve(const char *spec, u64 *start, u64 *size, char *why, size_t n)
{
	const char *bang = strchr(spec, '!'), *plus = strchr(spec, '+');
	const char *sep = bang ? bang : plus;
	char module[64];
	uintptr_t off, sz = 0;
	const char *name;
	u64 delta = 0;
	int err;

	if (!sep) {
		*start = ksym_address(spec);
		if (!*start) {
			ksnprintf(why, n, "unknown symbol (not the kernel's; a module's is MODULE!SYMBOL or MODULE+OFFSET/SIZE)");
			return -ENOENT;
		}
		if (ksym_lookup(*start, &name, &off, &sz))
			sz = 0;
		*size = sz;
		return 0;
	}
	if (sep == spec || (size_t)(sep - spec) >= sizeof(module) || !sep[1]) {
		ksnprintf(why, n, "expected MODULE!SYMBOL or MODULE+OFFSET");
		return -ENOENT;
	}
	memcpy(module, spec, sep - spec);
	module[sep - spec] = '\0';
	if (!bang && kstrtou64(sep + 1, 0, &delta)) {
		ksnprintf(why, n, "bad offset '%s' after '+'", sep + 1);
		return -ENOENT;
	}
	if (!module_resolver) {
		ksnprintf(why, n, "module '%s': modules are the firmware phase's loaded images (fw.image=, fw.run=); none now",
			  module);
		return -ENOENT;
	}
	err = module_resolver(module, bang ? bang + 1 : NULL, start, size, why, n);
	if (err || bang)
		return err;
	if (delta >= *size) {
		ksnprintf(why, n, "offset %#llx is past module %s's end (%#llx bytes)", delta, module,
			  *size);
		return -ENOENT;
	}
	*start += delta;
	*size = 0;
	return 0;
}

/*
 * The lines of a symbol file's text: "OFFSET SIZE NAME" (hex), '#' a comment
 * line. Calls @fn on each entry until it returns true; the 1-based number of
 * a malformed line, or 0.
 */
static unsigned int text_walk(const char *t, size_t len,
			      bool (*fn)(u64 off, u64 size, const char *name, size_t nlen, void *ctx),
			      void *ctx)
{
	unsigned int line = 0;

	for (size_t i = 0; i < len;) {
		size_t e = i, f[3], fl[3], k = 0, p;
		char num[20];
		u64 v[2];

		while (e < len && t[e] != '\n')
			e++;
		line++;
		for (p = i; p < e && k < 3; k++) {
			while (p < e && (t[p] == ' ' || t[p] == '\t' || t[p] == '\r'))
				p++;
			f[k] = p;
			while (p < e && t[p] != ' ' && t[p] != '\t' && t[p] != '\r')
				p++;
			fl[k] = p - f[k];
		}
		if (k == 0 || !fl[0] || t[f[0]] == '#') {
			i = e + 1;
			continue;
		}
		if (k < 3 || !fl[2])
			return line;
		for (p = f[2] + fl[2]; p < e; p++)	/* a fourth word */
			if (t[p] != ' ' && t[p] != '\t' && t[p] != '\r')
				return line;
		for (unsigned int j = 0; j < 2; j++) {
			if (fl[j] >= sizeof(num))
				return line;
			memcpy(num, t + f[j], fl[j]);
			num[fl[j]] = '\0';
			if (kstrtou64(num, 16, &v[j]))
				return line;
		}
		if (fn(v[0], v[1], t + f[2], fl[2], ctx))
			return 0;
		i = e + 1;
	}
	return 0;
}

static bool count_one(u64 off, u64 size, const char *name, size_t nlen, void *ctx)
{
	(*(unsigned int *)ctx)++;
	return false;
}

unsigned int ksym_text_check(const char *text, size_t len, unsigned int *count)
{
	*count = 0;
	return text_walk(text, len, count_one, count);
}

struct text_query {
	const char *name;
	u64 off, size;
	bool found;
};

static bool match_one(u64 off, u64 size, const char *name, size_t nlen, void *ctx)
{
	struct text_query *q = ctx;

	if (strlen(q->name) != nlen || memcmp(q->name, name, nlen))
		return false;
	q->off = off;
	q->size = size;
	q->found = true;
	return true;
}

bool ksym_text_find(const char *text, size_t len, const char *name, u64 *off, u64 *size)
{
	struct text_query q = { .name = name };

	text_walk(text, len, match_one, &q);
	*off = q.off;
	*size = q.size;
	return q.found;
}

struct text_at {
	u64 off;
	const char *name;
	size_t nlen;
	u64 start;
};

static bool holds_one(u64 off, u64 size, const char *name, size_t nlen, void *ctx)
{
	struct text_at *q = ctx;

	if (q->off < off || q->off - off >= (size ? size : 1))
		return false;
	q->name = name;
	q->nlen = nlen;
	q->start = off;
	return true;
}

const char *ksym_text_lookup(const char *text, size_t len, u64 off, size_t *nlen, u64 *symoff)
{
	struct text_at q = { .off = off };

	text_walk(text, len, holds_one, &q);
	*nlen = q.nlen;
	*symoff = off - q.start;
	return q.name;
}
