// SPDX-License-Identifier: MIT
/* The in-kernel test runner: selects tests from the ktest table by suite or
 * pattern and prints one result line per test. */
#include <topaz/ktest.h>
#include <topaz/kernel.h>

extern const struct ktest __start_ktest_table[] __hidden __attribute__((weak));
extern const struct ktest __stop_ktest_table[] __hidden __attribute__((weak));

void ktest_fail(struct ktest_ctx *t, const char *file, int line, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printk(KERN_ERR "ktest:   %s: %s:%d: %s\n", t->name, file, line, msg);
	if (!t->failures++)
		ksnprintf(t->first_failure, sizeof(t->first_failure), "%s:%d: %s", file, line, msg);
}

/* Does one comma-separated item of @spec select @k? */
static bool item_selects(const char *item, size_t len, const struct ktest *k)
{
	char pat[64], full[96];

	if (len >= sizeof(pat))
		return false;
	memcpy(pat, item, len);
	pat[len] = '\0';
	if (!strcmp(pat, "all"))
		return true;
	if (!strcmp(pat, k->suite))
		return true;
	ksnprintf(full, sizeof(full), "%s.%s", k->suite, k->name);
	return glob_match(pat, full);
}

static bool selected(const char *spec, const struct ktest *k)
{
	const char *s = spec;

	while (*s) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len && item_selects(s, len, k))
			return true;
		if (!e)
			break;
		s = e + 1;
	}
	return false;
}

int ktest_run(const char *spec)
{
	unsigned int planned = 0, passed = 0, failed = 0;

	for (const struct ktest *k = __start_ktest_table; k < __stop_ktest_table; k++)
		if (selected(spec, k))
			planned++;
	if (!planned) {
		printk(KERN_ERR "ktest: test=%s selects no test; suites are:", spec);
		for (const struct ktest *k = __start_ktest_table; k < __stop_ktest_table; k++)
			if (k == __start_ktest_table || strcmp(k[-1].suite, k->suite))
				pr_cont(" %s", k->suite);
		pr_cont("\n");
		return -1;
	}
	printk("ktest: plan %u\n", planned);
	for (const struct ktest *k = __start_ktest_table; k < __stop_ktest_table; k++) {
		char name[96];
		struct ktest_ctx t = { .name = name };

		if (!selected(spec, k))
			continue;
		ksnprintf(name, sizeof(name), "%s.%s", k->suite, k->name);
		printk("ktest: start %s\n", name);
		k->fn(&t);
		if (t.failures) {
			failed++;
			printk("ktest: FAIL %s\n", name);
		} else {
			passed++;
			printk("ktest: PASS %s\n", name);
		}
	}
	printk("ktest: %u passed, %u failed\n", passed, failed);
	return (int)failed;
}
