/* SPDX-License-Identifier: MIT */
/* The kernel command line: words of key=value (or a bare key), values may be
 * "quoted". Every key is declared with KPARAM_*; unknown keys are reported by
 * name and ignored (a warning); a word that cannot be applied (a malformed
 * value, bad syntax, text left out) is reported by name and fails the boot
 * (cmdline_fails_boot()). */
#ifndef TOPAZ_CMDLINE_H
#define TOPAZ_CMDLINE_H

#include <topaz/types.h>

enum kparam_type { KP_BOOL, KP_UINT, KP_STR, KP_ENUM, KP_CUSTOM };

struct kparam {
	const char *name;
	const char *help;
	enum kparam_type type;
	void *var;		/* bool *, u64 *, const char **, int * (KP_ENUM: the index) */
	u64 min, max;		/* KP_UINT bounds, inclusive */
	const char *const *names;	/* KP_ENUM: the values, NULL-terminated */
	/* KP_CUSTOM: return 0, or -EINVAL after explaining what was expected in @why. */
	int (*set)(const char *val, char *why, size_t whylen);
};

#define __KPARAM(id, ...) \
	static const struct kparam __kparam_##id __used __section("kparam_table") \
		__aligned(8) = { __VA_ARGS__ }

#define KPARAM_BOOL(key, id, v, h) \
	__KPARAM(id, .name = key, .help = h, .type = KP_BOOL, .var = (v))
#define KPARAM_UINT(key, id, v, lo, hi, h) \
	__KPARAM(id, .name = key, .help = h, .type = KP_UINT, .var = (v), .min = (lo), .max = (hi))
#define KPARAM_STR(key, id, v, h) \
	__KPARAM(id, .name = key, .help = h, .type = KP_STR, .var = (v))
/* One of @names (a NULL-terminated array); *@v (an int or an enum) becomes its index. */
#define KPARAM_ENUM(key, id, v, nm, h) \
	__KPARAM(id, .name = key, .help = h, .type = KP_ENUM, .var = (v), .names = (nm))
#define KPARAM_CUSTOM(key, id, fn, h) \
	__KPARAM(id, .name = key, .help = h, .type = KP_CUSTOM, .set = (fn))

/* The longest command line, NUL included (load options hold far more than 1 KiB). */
#define CMDLINE_MAX 8192

struct cmdline_result {
	unsigned int applied;
	unsigned int errors;	/* words not applied: bad values, bad syntax, text left out */
	unsigned int unknown;	/* unknown keys: warnings only */
	char failed[200];	/* the words @errors counts, named: "run (left out), loglevel" */
};

/**
 * cmdline_parse() - apply every word of @line to the registered parameters
 * @line: the command line; copied, so string values outlive it
 * @res: counts of applied words and errors (may be NULL)
 *
 * Never fails as a whole: each bad word is reported and skipped (and named in
 * @res->failed, unless it is only an unknown key).
 */
void cmdline_parse(const char *line, struct cmdline_result *res);

/* What cmdline_load() is given: a file's bytes, or EFI load options (CHAR16). */
enum cmdline_form { CMDLINE_BYTES, CMDLINE_UCS2 };

/**
 * cmdline_load() - the command line from raw text, then parsed
 * @data: the text; CMDLINE_BYTES: ASCII or UTF-8 (a UTF-8 byte-order mark is
 *        skipped), or UTF-16LE after its byte-order mark FF FE (Windows'
 *        editors); CMDLINE_UCS2: little-endian CHAR16s, up to the first NUL
 * @size: bytes at @data
 * @form: which of the two
 * @src: where the text came from, for the messages ("cmdline.txt")
 * @line: the line, CMDLINE_MAX bytes: ASCII, line breaks as spaces
 * @res: as cmdline_parse()'s, with the text's own problems added
 *
 * What cannot become the line is an error that names what it loses, never a
 * silent cut: a NUL byte in a file (the words after it are named, not read),
 * UTF-16 without a byte-order mark or big-endian, a character outside ASCII
 * in UTF-16 text, and a line longer than CMDLINE_MAX - 1 (whole words are
 * kept, a quoted one as a whole; the ones left out are named).
 */
void cmdline_load(const void *data, size_t size, enum cmdline_form form, const char *src,
		  char *line, struct cmdline_result *res);
/**
 * cmdline_fails_boot() - whether @res makes the boot fail
 *
 * A word the user wrote that could not be applied fails the boot (the job it
 * asked for may not have run); unknown keys alone do not. Says which words.
 */
bool cmdline_fails_boot(const struct cmdline_result *res);
/**
 * cmdline_note_refused() - a word parsed well but refused by its owner later
 * (pt.filter naming a symbol that is not there): named in @res as not applied
 * @res: the boot's result
 * @key: the word's key
 * @why: in brackets after it
 */
void cmdline_note_refused(struct cmdline_result *res, const char *key, const char *why);
/** cmdline_find_param() - the parameter named @name, or NULL */
const struct kparam *cmdline_find_param(const char *name);
/** cmdline_parse_bool() - 1/0, on/off, y/n, yes/no, true/false into @out; -EINVAL otherwise */
int cmdline_parse_bool(const char *v, bool *out);
/** cmdline_enum_list() - "a, b or c" from a NULL-terminated @names, into @buf */
void cmdline_enum_list(const char *const *names, char *buf, size_t size);
/* help's groups of keys, in the order it lists them */
enum kparam_group {
	KPARAM_CORE,		/* the job, the console, CPUs, the APIC */
	KPARAM_MEMORY,		/* mm.*, slub_debug, slabinfo */
	KPARAM_TRACING,		/* pt, pt.*, probe */
	KPARAM_FIRMWARE,	/* fw.*: before ExitBootServices */
	KPARAM_FAULT,		/* a help text starting "fault injection:" */
	KPARAM_NR_GROUPS
};
/**
 * cmdline_param_group() - the group help lists @p under
 * @p: a parameter of the table
 *
 * A help text that starts "fault injection:" wins over the key's prefix
 * (fw.no_cpu_arch is listed with crash=, not with the firmware phase).
 * Return: one of enum kparam_group; a key no rule claims is core.
 */
enum kparam_group cmdline_param_group(const struct kparam *p);
/** cmdline_group_name() - "core", "memory", ... for @g ("?" out of range) */
const char *cmdline_group_name(enum kparam_group g);
/**
 * cmdline_print_help() - list every parameter with its help text: a heading
 * per group (enum kparam_group's order), the keys sorted by name in each
 */
void cmdline_print_help(void);
/**
 * cmdline_help_asked() - whether the line had 'help' (the boot stops after it
 * unless given a job)
 */
bool cmdline_help_asked(void);
/** cmdline_get() - the command line as given (after the last cmdline_parse) */
const char *cmdline_get(void);

/* Parameter tables for the hosted build and tests: iterate start..stop. */
extern const struct kparam __start_kparam_table[] __hidden;
extern const struct kparam __stop_kparam_table[] __hidden;

#endif
