// SPDX-License-Identifier: MIT
/* The kernel command line: tokenising, and applying words to KPARAMs. */
#define pr_fmt(fmt) "cmdline: " fmt
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>


static char saved[CMDLINE_MAX];	/* the line as given */
static char words[CMDLINE_MAX];	/* NUL-separated words; string values point here */

const struct kparam *cmdline_find_param(const char *name)
{
	for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

int cmdline_parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "on", "y", "yes", "true" };
	static const char *const no[] = { "0", "off", "n", "no", "false" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

void cmdline_enum_list(const char *const *names, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; names[i] && len < size; i++)
		len += ksnprintf(buf + len, size - len, "%s%s", i ? (names[i + 1] ? ", " : " or ") : "",
				 names[i]);
}

static int apply(const struct kparam *p, const char *val, char *why, size_t whylen)
{
	char list[96];
	u64 n;

	switch (p->type) {
	case KP_BOOL:
		if (!val) {
			*(bool *)p->var = true;
			return 0;
		}
		if (cmdline_parse_bool(val, (bool *)p->var)) {
			ksnprintf(why, whylen, "expected on/off, 1/0, yes/no or true/false");
			return -EINVAL;
		}
		return 0;
	case KP_UINT:
		if (!val || kstrtou64(val, 0, &n) || n < p->min || n > p->max) {
			ksnprintf(why, whylen, "expected a number from %llu to %llu",
				  p->min, p->max);
			return -EINVAL;
		}
		*(u64 *)p->var = n;
		return 0;
	case KP_STR:
		if (!val || !*val) {
			ksnprintf(why, whylen, "expected a value");
			return -EINVAL;
		}
		*(const char **)p->var = val;
		return 0;
	case KP_ENUM:
		for (int i = 0; val && p->names[i]; i++) {
			if (!strcmp(val, p->names[i])) {
				*(int *)p->var = i;
				return 0;
			}
		}
		cmdline_enum_list(p->names, list, sizeof(list));
		ksnprintf(why, whylen, "expected %s", list);
		return -EINVAL;
	case KP_CUSTOM:
		return p->set(val, why, whylen);
	}
	return -EINVAL;
}

/*
 * Name a word that was not applied in @r->failed: @len bytes of @name, and
 * why in brackets when given. A list that is full ends in "...".
 */
static void note_failed(struct cmdline_result *r, const char *name, size_t len, const char *why)
{
	size_t have = strlen(r->failed), room = sizeof(r->failed);

	r->errors++;
	if (have && !strcmp(r->failed + have - 3, "..."))
		return;
	if (len > 40)	/* a name, not a copy of the word */
		len = 40;
	if (have + len + (why ? strlen(why) + 3 : 0) + 2 + 4 >= room) {
		strscpy(r->failed + have, have ? ", ..." : "...", room - have);
		return;
	}
	ksnprintf(r->failed + have, room - have, "%s%.*s%s%s%s", have ? ", " : "", (int)len, name,
		  why ? " (" : "", why ? why : "", why ? ")" : "");
}

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Split @line into words: key=value or a bare key. Double quotes group, as in
 * a shell or Linux's command line: whitespace inside them is part of the word
 * and the quotes themselves are dropped, wherever they stand ("pt=on",
 * key="a b", key=a" "b). The first '=' of a word, quoted or not, ends its key.
 */
void cmdline_parse(const char *line, struct cmdline_result *res)
{
	struct cmdline_result r = { 0 };
	size_t n = 0;
	char *w = words;
	const char *s;

	if (!line)
		line = "";
	if (strlen(line) >= CMDLINE_MAX) {
		pr_err("command line longer than %d bytes: the rest is ignored\n", CMDLINE_MAX - 1);
		note_failed(&r, "the end of the line", 19, "too long");
	}
	strscpy(saved, line, sizeof(saved));
	s = saved;

	for (;;) {
		char *key, *val = NULL;
		bool quoted = false;
		const char *start, *quote = NULL;

		while (is_space(*s))
			s++;
		if (!*s)
			break;
		start = s;
		key = w + n;
		for (; *s; s++) {
			if (*s == '"') {
				quoted = !quoted;
				quote = s;
				continue;
			}
			if (!quoted && is_space(*s))
				break;
			if (*s == '=' && !val) {
				words[n++] = '\0';
				val = words + n;
				continue;
			}
			words[n++] = *s;
		}
		words[n++] = '\0';
		if (quoted) {
			pr_err("unterminated quote at column %d in '%s': ignored\n",
			       (int)(quote - saved) + 1, start);
			note_failed(&r, *key ? key : start, strlen(*key ? key : start),
				    "unterminated quote");
			break;
		}
		if (!*key) {
			pr_err("word at column %d has no key: ignored\n", (int)(start - saved) + 1);
			note_failed(&r, start, (size_t)(s - start), "no key");
			continue;
		}

		const struct kparam *p = cmdline_find_param(key);
		char why[128] = "";

		if (!p) {
			pr_err("unknown key '%s': ignored (try 'help')\n", key);
			r.unknown++;
			continue;
		}
		if (apply(p, val, why, sizeof(why))) {
			pr_err("bad value '%s' for '%s': %s; ignored\n", val ? val : "", key, why);
			note_failed(&r, key, strlen(key), "bad value");
			continue;
		}
		r.applied++;
	}
	if (res)
		*res = r;
}

/* The text cmdline_load() reads: bytes, or 16-bit little-endian characters. */
struct text {
	const u8 *p;
	size_t n;	/* characters */
	bool wide;
};

static unsigned int text_at(const struct text *t, size_t i)
{
	return t->wide ? (unsigned int)(t->p[2 * i] | t->p[2 * i + 1] << 8) : t->p[i];
}

/*
 * Name each word of characters [@from, @to) of @t in @r as not applied, @why;
 * NULs count as spaces. Returns how many there were.
 */
static unsigned int name_words(const struct text *t, size_t from, size_t to, const char *why,
			       struct cmdline_result *r)
{
	unsigned int count = 0;
	size_t i = from;

	while (i < to) {
		char key[41];
		size_t klen = 0;
		bool quoted = false, in_key = true;

		while (i < to && (is_space((int)text_at(t, i)) || !text_at(t, i)))
			i++;
		if (i >= to)
			break;
		for (; i < to; i++) {
			unsigned int c = text_at(t, i);

			if (c == '"') {
				quoted = !quoted;
				continue;
			}
			if (!quoted && (is_space((int)c) || !c))
				break;
			if (c == '=')
				in_key = false;
			if (in_key && klen < sizeof(key) - 1)
				key[klen++] = c < 0x80 && c >= 0x20 ? (char)c : '?';
		}
		count++;
		note_failed(r, klen ? key : "=", klen ? klen : 1, why);
	}
	return count;
}

/* Where a line of @t cut to @max characters ends: after its last whole word (quotes kept whole). */
static size_t whole_words(const struct text *t, size_t max)
{
	size_t keep = 0;
	bool quoted = false;

	for (size_t i = 0; i <= max && i < t->n; i++) {
		unsigned int c = text_at(t, i);

		if (!quoted && is_space((int)c))
			keep = i;
		else if (c == '"')
			quoted = !quoted;
	}
	return keep;
}

void cmdline_load(const void *data, size_t size, enum cmdline_form form, const char *src,
		  char *line, struct cmdline_result *res)
{
	struct cmdline_result r = { 0 };
	struct text t = { data, data ? size : 0, form == CMDLINE_UCS2 };
	size_t end, keep, skip = 0, bad_char = 0;

	if (!t.wide && t.n >= 3 && t.p[0] == 0xef && t.p[1] == 0xbb && t.p[2] == 0xbf) {
		skip = 3;	/* UTF-8's byte-order mark: no text */
	} else if (!t.wide && t.n >= 2 && t.p[0] == 0xfe && t.p[1] == 0xff) {
		pr_err("%s is UTF-16 big-endian text: not read; save it as ASCII, UTF-8 or UTF-16LE\n",
		       src);
		note_failed(&r, src, strlen(src), "UTF-16BE");
		t.n = 0;
	} else if (!t.wide && t.n >= 2 && t.p[0] == 0xff && t.p[1] == 0xfe) {
		skip = 2;	/* UTF-16LE, as Windows' editors write it: read as such */
		t.wide = true;
		if (t.n & 1) {
			pr_err("%s: UTF-16 text of an odd number of bytes: its last byte is not read\n",
			       src);
			note_failed(&r, "the last byte", 13, "odd UTF-16");
		}
	} else if (!t.wide && t.n >= 4 && t.p[0] && !t.p[1] && t.p[2] && !t.p[3]) {
		pr_err("%s looks like UTF-16 text without a byte-order mark: not read; save it as ASCII, UTF-8, or UTF-16 with its mark\n",
		       src);
		note_failed(&r, src, strlen(src), "UTF-16 without a mark");
		t.n = 0;
	}
	t.p += skip;
	t.n -= skip;
	if (t.wide)
		t.n /= 2;
	/* load options end at their NUL; a file has none: it is not text there */
	for (end = 0; end < t.n && text_at(&t, end); end++)
		if (text_at(&t, end) >= 0x80 && t.wide && !bad_char)
			bad_char = end + 1;
	keep = end > CMDLINE_MAX - 1 ? whole_words(&t, CMDLINE_MAX - 1) : end;
	for (size_t i = 0; i < keep; i++) {
		unsigned int c = text_at(&t, i);

		line[i] = c == '\n' || c == '\r' || c == '\t' ? ' ' : c >= 0x80 && t.wide ? '?' : (char)c;
	}
	line[keep] = '\0';
	if (keep < end) {
		size_t have = strlen(r.failed);
		unsigned int lost = name_words(&t, keep, end, "left out", &r);

		pr_err("%s: longer than %d bytes (%zu): %u word%s left out, not applied: %s\n", src,
		       CMDLINE_MAX - 1, end, lost, lost == 1 ? "" : "s", r.failed + have + (have ? 2 : 0));
	}
	if (end < t.n && form == CMDLINE_BYTES) {
		size_t have = strlen(r.failed);
		unsigned int lost = name_words(&t, end + 1, t.n, "after a NUL", &r);

		pr_err("%s: a NUL byte at offset %zu (not a text file?): the line ends there; %u word%s after it not read%s%s\n",
		       src, skip + (t.wide ? 2 : 1) * end, lost, lost == 1 ? "" : "s", lost ? ": " : "",
		       r.failed + have + (have ? 2 : 0));
		if (!lost)
			note_failed(&r, "a NUL byte", 10, NULL);
	}
	if (bad_char && bad_char <= keep) {
		pr_err("%s: the character U+%04X at column %zu is not ASCII: read as '?'\n", src,
		       text_at(&t, bad_char - 1), bad_char);
		note_failed(&r, "a character", 11, "not ASCII");
	}
	cmdline_parse(line, res);
	res->errors += r.errors;
	if (r.errors) {
		size_t have = strlen(res->failed);

		ksnprintf(res->failed + have, sizeof(res->failed) - have, "%s%s", have ? ", " : "",
			  r.failed);
	}
}

void cmdline_note_refused(struct cmdline_result *res, const char *key, const char *why)
{
	note_failed(res, key, strlen(key), why);
}

bool cmdline_fails_boot(const struct cmdline_result *res)
{
	if (!res->errors)
		return false;
	pr_err("%u word%s of the command line not applied: %s: the boot fails\n", res->errors,
	       res->errors == 1 ? "" : "s", res->failed);
	return true;
}

const char *cmdline_get(void)
{
	return saved;
}

static const char *const group_names[KPARAM_NR_GROUPS] = {
	[KPARAM_CORE] = "core", [KPARAM_MEMORY] = "memory", [KPARAM_TRACING] = "tracing",
	[KPARAM_FIRMWARE] = "firmware phase", [KPARAM_FAULT] = "fault injection",
};

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

enum kparam_group cmdline_param_group(const struct kparam *p)
{
	/* the help text says it first: crash=, pt.fail_pmi=, smp.silent=, fw.no_* */
	if (has_prefix(p->help, "fault injection:"))
		return KPARAM_FAULT;
	if (has_prefix(p->name, "fw."))
		return KPARAM_FIRMWARE;
	if (!strcmp(p->name, "pt") || has_prefix(p->name, "pt.") || !strcmp(p->name, "probe"))
		return KPARAM_TRACING;
	if (has_prefix(p->name, "mm.") || has_prefix(p->name, "slub_") || has_prefix(p->name, "slab"))
		return KPARAM_MEMORY;
	return KPARAM_CORE;
}

const char *cmdline_group_name(enum kparam_group g)
{
	return g < KPARAM_NR_GROUPS ? group_names[g] : "?";
}

/* The key of group @g that sorts first after @after (NULL: the first). */
static const struct kparam *next_in_group(enum kparam_group g, const struct kparam *after)
{
	const struct kparam *next = NULL;

	for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++)
		if (cmdline_param_group(p) == g && (!after || strcmp(p->name, after->name) > 0) &&
		    (!next || strcmp(p->name, next->name) < 0))
			next = p;
	return next;
}

void cmdline_print_help(void)
{
	printk("command line parameters: key=value words; an on/off key alone means on\n");
	for (int g = 0; g < KPARAM_NR_GROUPS; g++) {
		const struct kparam *p = next_in_group(g, NULL);

		if (p)
			printk("%s:\n", group_names[g]);
		for (; p; p = next_in_group(g, p))	/* the heading says "fault injection" */
			printk("  %-20s %s\n", p->name,
			       p->help + (has_prefix(p->help, "fault injection: ") ? 17 : 0));
	}
}

static bool help_asked;

bool cmdline_help_asked(void)
{
	return help_asked;
}

static int set_help(const char *val, char *why, size_t whylen)
{
	cmdline_print_help();
	help_asked = true;
	return 0;
}
KPARAM_CUSTOM("help", help, set_help,
	      "list the command line parameters (and stop, unless run= or test= is given)");
