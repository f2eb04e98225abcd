// SPDX-License-Identifier: MIT
/* Symbol table search and formatting, shared by both builds. */
#include <topaz/symbols.h>
#include <topaz/kernel.h>

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
