/* SPDX-License-Identifier: MIT */
/* The kernel command line: words of key=value (or a bare key), values may be
 * "quoted". Every key is declared with KPARAM_*; unknown keys and malformed
 * values are reported by name and ignored. */
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
	unsigned int errors;	/* unknown keys, bad values, bad syntax */
};

/**
 * cmdline_parse() - apply every word of @line to the registered parameters
 * @line: the command line; copied, so string values outlive it
 * @res: counts of applied words and errors (may be NULL)
 *
 * Never fails as a whole: each bad word is reported and skipped.
 */
void cmdline_parse(const char *line, struct cmdline_result *res);
/** cmdline_find_param() - the parameter named @name, or NULL */
const struct kparam *cmdline_find_param(const char *name);
/** cmdline_parse_bool() - 1/0, on/off, y/n, yes/no, true/false into @out; -EINVAL otherwise */
int cmdline_parse_bool(const char *v, bool *out);
/** cmdline_enum_list() - "a, b or c" from a NULL-terminated @names, into @buf */
void cmdline_enum_list(const char *const *names, char *buf, size_t size);
/** cmdline_print_help() - list every parameter with its help text */
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
