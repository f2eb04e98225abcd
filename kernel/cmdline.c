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
 * Split @line into words: key=value or a bare key. Double quotes group, as in
 * a shell or Linux's command line: whitespace inside them is part of the word
 * and the quotes themselves are dropped, wherever they stand ("pt=on",
 * key="a b", key=a" "b). The first '=' of a word, quoted or not, ends its key.
 */
void cmdline_parse(const char *line, struct cmdline_result *res)
{
	struct cmdline_result r = { 0, 0 };
	size_t n = 0;
	char *w = words;
	const char *s;

	if (!line)
		line = "";
	if (strlen(line) >= CMDLINE_MAX) {
		pr_err("command line longer than %d bytes: the rest is ignored\n", CMDLINE_MAX - 1);
		r.errors++;
	}
	strscpy(saved, line, sizeof(saved));
	s = saved;

	for (;;) {
		char *key, *val = NULL;
		bool bad = false, quoted = false;
		const char *start, *quote = NULL;

		while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
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
			if (!quoted && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
				break;
			if (*s == '=' && !val) {
				words[n++] = '\0';
				val = words + n;
				continue;
			}
			words[n++] = *s;
		}
		if (quoted) {
			pr_err("unterminated quote at column %d in '%s': ignored\n",
			       (int)(quote - saved) + 1, start);
			bad = true;
		}
		words[n++] = '\0';
		if (bad) {
			r.errors++;
			break;
		}
		if (!*key) {
			pr_err("word at column %d has no key: ignored\n", (int)(start - saved) + 1);
			r.errors++;
			continue;
		}

		const struct kparam *p = cmdline_find_param(key);
		char why[128] = "";

		if (!p) {
			pr_err("unknown key '%s': ignored (try 'help')\n", key);
			r.errors++;
			continue;
		}
		if (apply(p, val, why, sizeof(why))) {
			pr_err("bad value '%s' for '%s': %s; ignored\n", val ? val : "", key, why);
			r.errors++;
			continue;
		}
		r.applied++;
	}
	if (res)
		*res = r;
}

const char *cmdline_get(void)
{
	return saved;
}

void cmdline_print_help(void)
{
	printk("command line parameters:\n");
	for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++)
		printk("  %-20s %s\n", p->name, p->help);
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
