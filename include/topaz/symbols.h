/* SPDX-License-Identifier: MIT */
/* The kernel's run-time symbol table (a two-pass link embeds it, as kallsyms). */
#ifndef TOPAZ_SYMBOLS_H
#define TOPAZ_SYMBOLS_H

#include <topaz/types.h>

/* One entry of the embedded table: offsets from the image base, so the table
 * needs no relocations. Sorted by @start. */
struct ksym_entry {
	u32 start;
	u32 size;
	u32 name;	/* offset into the string blob */
	u32 type;	/* nm's letter: 'T', 't', 'D', ... */
};

struct ksym_table {
	uintptr_t base;			/* run-time address of offset 0 */
	const struct ksym_entry *entries;
	u32 count;
	const char *names;
};

/**
 * ksym_table_lookup() - find the symbol containing @addr in @tab
 * Returns the entry or NULL; *@offset gets @addr minus the symbol's start.
 */
const struct ksym_entry *ksym_table_lookup(const struct ksym_table *tab, uintptr_t addr,
					   uintptr_t *offset);
/** ksym_table_find() - the entry named @name, or NULL */
const struct ksym_entry *ksym_table_find(const struct ksym_table *tab, const char *name);

/**
 * ksym_lookup() - the kernel's symbol holding @addr (the hosted build's
 * table comes from dladdr)
 * @addr: the address
 * @name: the symbol's name
 * @offset: @addr's offset in it
 * @size: its size (NULL: not wanted)
 * Return: 0, or -1 when no symbol holds @addr.
 */
int ksym_lookup(uintptr_t addr, const char **name, uintptr_t *offset, uintptr_t *size);
/** ksym_count() - number of symbols in the embedded table */
u32 ksym_count(void);
/** ksym_address() - run-time address of symbol @name, or 0 */
uintptr_t ksym_address(const char *name);
/**
 * ksym_format() - "func+0xoff" for @addr, or "0x<hex>" when unknown
 * Returns @buf.
 */
const char *ksym_format(uintptr_t addr, char *buf, size_t size);
#define KSYM_NAME_LEN 128

/**
 * typedef ksym_module_fn - where a named module's code is (the firmware
 * phase's loaded images)
 * @module: the module's name ("hello", "DxeCore")
 * @symbol: a function in it, or NULL for the module itself
 * @start: its run-time address
 * @size: its size in bytes (0 when the symbol file has none)
 * @why: what is wrong, when it returns an error
 * @n: room at @why
 * Return: 0, or -ENOENT having said why in @why.
 */
typedef int (*ksym_module_fn)(const char *module, const char *symbol, u64 *start, u64 *size,
			      char *why, size_t n);
/** ksym_set_module_resolver() - who knows the modules (NULL: nobody, as after the firmware phase) */
void ksym_set_module_resolver(ksym_module_fn fn);
/**
 * ksym_resolve() - the address and size of a name as pt.filter writes it
 * @spec: "symbol" (the kernel's), "Module!symbol" or "Module+OFFSET" (a
 *	module's, through the registered resolver; the offset's size is 0)
 * @start: its run-time address
 * @size: the symbol's size (0 when unknown)
 * @why: what is wrong, when it returns an error
 * @n: room at @why
 * Return: 0, or -ENOENT having said why in @why.
 */
int ksym_resolve(const char *spec, u64 *start, u64 *size, char *why, size_t n);

/*
 * A symbol file as the host writes it beside a user's EFI image
 * (scripts/esp-files.sh): "OFFSET SIZE NAME" a line, hex, offsets from the
 * image's base; a line starting with '#' is a comment.
 */
/**
 * ksym_text_check() - whether @text (@len bytes) is such a file
 * @count: its symbols
 * Return: the 1-based number of its first malformed line, or 0.
 */
unsigned int ksym_text_check(const char *text, size_t len, unsigned int *count);
/** ksym_text_find() - @name's offset and size in such a @text; false when it has none */
bool ksym_text_find(const char *text, size_t len, const char *name, u64 *off, u64 *size);
/**
 * ksym_text_lookup() - the symbol of such a @text holding offset @off
 * @nlen: its name's length (the name is not NUL-terminated)
 * @symoff: @off's offset in it
 * Return: its name, or NULL when no symbol holds @off.
 */
const char *ksym_text_lookup(const char *text, size_t len, u64 off, size_t *nlen, u64 *symoff);

#endif
