// SPDX-License-Identifier: MIT
/* Host tests of command-line parsing and its error reports. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "hosted.h"
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

static bool t_flag;
static u64 t_num = 5;
static const char *t_str;
static char t_custom[32];
KPARAM_BOOL("t.flag", t_flag, &t_flag, "test flag");
KPARAM_UINT("t.num", t_num, &t_num, 1, 100, "test number");
KPARAM_STR("t.str", t_str, &t_str, "test string");
static int set_custom(const char *v, char *why, size_t n)
{
	if (!v || strcmp(v, "good")) {
		ksnprintf(why, n, "expected 'good'");
		return -EINVAL;
	}
	strcpy(t_custom, v);
	return 0;
}
KPARAM_CUSTOM("t.custom", t_custom, set_custom, "test custom");

static char out[4096];
static struct cmdline_result run(const char *line)
{
	struct cmdline_result r;

	hosted_console_quiet = true;
	printk_capture_start(out, sizeof(out));
	cmdline_parse(line, &r);
	printk_capture_stop();
	hosted_console_quiet = false;
	return r;
}

static void test_values_applied(void **state)
{
	struct cmdline_result r = run("t.flag t.num=0x20 t.str=\"two words\" t.custom=good");

	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 4);
	assert_true(t_flag);
	assert_int_equal(t_num, 32);
	assert_string_equal(t_str, "two words");
	assert_string_equal(t_custom, "good");
	r = run("  t.flag=off\tt.num=7  ");
	assert_int_equal(r.errors, 0);
	assert_false(t_flag);
	assert_int_equal(t_num, 7);
}

static void test_unknown_key_named(void **state)
{
	struct cmdline_result r = run("bogus=1 t.num=9");

	/* a warning: the boot does not fail for it */
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.unknown, 1);
	assert_int_equal(r.applied, 1);
	assert_non_null(strstr(out, "unknown key 'bogus'"));
	assert_int_equal(t_num, 9);
	assert_false(cmdline_fails_boot(&r));
}

static void test_bad_values_named_and_ignored(void **state)
{
	struct cmdline_result r;

	t_num = 9;
	r = run("t.num=abc t.num=101 t.num= t.flag=maybe t.custom=bad t.str=");
	assert_int_equal(r.errors, 6);
	assert_int_equal(t_num, 9);
	assert_non_null(strstr(out, "bad value 'abc' for 't.num': expected a number from 1 to 100"));
	assert_non_null(strstr(out, "bad value '101' for 't.num'"));
	assert_non_null(strstr(out, "bad value 'maybe' for 't.flag'"));
	assert_non_null(strstr(out, "bad value 'bad' for 't.custom': expected 'good'"));
	assert_string_equal(r.failed, "t.num (bad value), t.num (bad value), t.num (bad value), "
			    "t.flag (bad value), t.custom (bad value), t.str (bad value)");
}

static void test_syntax_errors(void **state)
{
	struct cmdline_result r = run("=5 t.num=3 t.str=\"unterminated");

	assert_int_equal(r.errors, 2);
	assert_int_equal(t_num, 3);
	assert_non_null(strstr(out, "has no key"));
	assert_non_null(strstr(out, "unterminated quote"));
	assert_string_equal(r.failed, "=5 (no key), t.str (unterminated quote)");
}

/* Quotes group wherever they stand, as in Linux: "pt=on" run=sort is two words. */
static void test_quotes_anywhere(void **state)
{
	struct cmdline_result r;

	t_flag = false;
	r = run("\"t.num=12\" t.str=a\" \"b \"t.flag\"");
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 3);
	assert_int_equal(t_num, 12);
	assert_string_equal(t_str, "a b");
	assert_true(t_flag);
	r = run("t.str=\"x=y z\" \"t.custom\"=good t.num=\"\"13");
	assert_int_equal(r.errors, 0);
	assert_string_equal(t_str, "x=y z");
	assert_string_equal(t_custom, "good");
	assert_int_equal(t_num, 13);
	/* an unterminated quote names its column and takes the rest of the line */
	r = run("t.num=14 \"t.num=15 t.num=16");
	assert_int_equal(r.errors, 1);
	assert_int_equal(t_num, 14);
	assert_non_null(strstr(out, "unterminated quote at column 10"));
}

/*
 * The kernel's own keys, quoted as a user may quote them (what the QEMU case
 * quoted-words booted): each word applied, none refused.
 */
static void test_real_keys_quoted(void **state)
{
	struct cmdline_result r = run("\"pt=on\" \"pt.buf=8K\" pt.region=\"4K\"");

	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 3);
	assert_null(strstr(out, "unterminated quote"));
}

/* A long line (what a boot entry may carry): every word of it applied. */
static void test_long_line(void **state)
{
	static char line[CMDLINE_MAX];
	struct cmdline_result r;
	size_t n = 0;
	int i;

	for (i = 0; i < 300; i++)
		n += ksnprintf(line + n, sizeof(line) - n, "t.num=%d ", 1 + i % 100);
	ksnprintf(line + n, sizeof(line) - n, "t.flag=on");
	assert_true(strlen(line) > 2000);
	t_flag = false;
	r = run(line);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 301);
	assert_int_equal(t_num, 100);
	assert_true(t_flag);
}

static void test_overlong_line(void **state)
{
	char big[CMDLINE_MAX + 200];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct cmdline_result r = run(big);
	assert_true(r.errors >= 1);
	assert_non_null(strstr(out, "longer than"));
}

static void test_empty_and_null(void **state)
{
	struct cmdline_result r = run("");

	assert_int_equal(r.errors + r.applied, 0);
	r = run(NULL);
	assert_int_equal(r.errors + r.applied, 0);
	assert_non_null(cmdline_find_param("loglevel"));
	assert_null(cmdline_find_param("nope"));
}

/* A word not applied fails the boot, named in the verdict; unknown keys alone do not. */
static void test_fails_boot_names_words(void **state)
{
	struct cmdline_result r = run("bogus t.num=abc t.flag");
	bool fails;

	assert_int_equal(r.errors, 1);
	assert_int_equal(r.unknown, 1);
	hosted_console_quiet = true;
	printk_capture_start(out, sizeof(out));
	fails = cmdline_fails_boot(&r);
	printk_capture_stop();
	hosted_console_quiet = false;
	assert_true(fails);
	assert_non_null(strstr(out, "1 word of the command line not applied: t.num (bad value): the boot fails"));
	/* a long list ends in "...", never past its buffer */
	r = run("t.num=a t.num=b t.num=c t.num=d t.num=e t.num=f t.num=g t.num=h t.num=i t.num=j "
		"t.num=k t.num=l t.num=m t.num=n t.num=o");
	assert_int_equal(r.errors, 15);
	assert_true(strlen(r.failed) < sizeof(r.failed));
	assert_non_null(strstr(r.failed, ", ..."));
}

static struct cmdline_result load(const void *data, size_t size, enum cmdline_form form)
{
	static char line[CMDLINE_MAX];
	struct cmdline_result r;

	hosted_console_quiet = true;
	printk_capture_start(out, sizeof(out));
	cmdline_load(data, size, form, "cmdline.txt", line, &r);
	printk_capture_stop();
	hosted_console_quiet = false;
	return r;
}

/* @n bytes of "t.num=5 " words (the last one shortened to fit), then @tail */
static size_t long_text(char *buf, size_t n, const char *tail)
{
	size_t len = 0;

	while (len + 8 <= n)
		len += (size_t)sprintf(buf + len, "t.num=5 ");
	while (len < n)
		buf[len++] = ' ';
	return len + (size_t)sprintf(buf + len, "%s", tail);
}

/* A line over CMDLINE_MAX - 1: whole words kept, each one left out named, the boot failing. */
static void test_load_cut_names_words(void **state)
{
	static char buf[3 * CMDLINE_MAX];
	struct cmdline_result r;
	size_t n;

	/* the last word would be cut in two: it is left out whole, and named */
	t_flag = false;
	n = long_text(buf, CMDLINE_MAX - 5, "t.flag=on");
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(r.errors, 1);
	assert_false(t_flag);
	assert_string_equal(r.failed, "t.flag (left out)");
	assert_non_null(strstr(out, "longer than 8191 bytes (8196): 1 word left out, not applied: t.flag"));
	assert_null(strstr(out, "unterminated"));
	/* a quoted word across the cut: left out as a whole, no unterminated quote */
	n = long_text(buf, CMDLINE_MAX - 30, "t.str=\"a b c d e f g h i j k l m n o p q r s t\" t.flag");
	r = load(buf, n, CMDLINE_BYTES);
	assert_string_equal(r.failed, "t.str (left out), t.flag (left out)");
	assert_null(strstr(out, "unterminated"));
	/* a 17 KB word (a long pt.filter): named, not a different setting */
	n = long_text(buf, 100, "t.str=\"");
	memset(buf + n, 'x', 17000);
	n += 17000;
	n += (size_t)sprintf(buf + n, "\" t.num=9");
	t_num = 1;
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(t_num, 5);
	assert_int_equal(r.errors, 2);
	assert_string_equal(r.failed, "t.str (left out), t.num (left out)");
	/* exactly CMDLINE_MAX - 1 bytes fit whole */
	n = long_text(buf, CMDLINE_MAX - 1 - 9, "t.flag=on");
	assert_int_equal(n, CMDLINE_MAX - 1);
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(r.errors, 0);
	assert_true(t_flag);
}

/* A NUL in a file ends the line there, as an error naming the words after it. */
static void test_load_nul(void **state)
{
	static const char text[] = "t.num=7\0t.flag=on t.num=8\n";
	struct cmdline_result r;

	t_flag = false;
	r = load(text, sizeof(text) - 1, CMDLINE_BYTES);
	assert_int_equal(r.applied, 1);
	assert_int_equal(t_num, 7);
	assert_false(t_flag);
	assert_int_equal(r.errors, 2);
	assert_string_equal(r.failed, "t.flag (after a NUL), t.num (after a NUL)");
	assert_non_null(strstr(out, "cmdline.txt: a NUL byte at offset 7"));
	assert_non_null(strstr(out, "2 words after it not read: t.flag"));
	/* a NUL with nothing after it is still an error */
	r = load("t.num=6\0", 8, CMDLINE_BYTES);
	assert_int_equal(r.errors, 1);
	assert_int_equal(t_num, 6);
	/* load options end at their NUL: no error */
	r = load("t\0.\0n\0u\0m\0=\0" "4\0\0\0x\0", 20, CMDLINE_UCS2);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 1);
	assert_int_equal(t_num, 4);
}

/* "t.num=12 t.flag\r\n" in UTF-16LE, after @bom (2 bytes, or 0) */
static size_t utf16(char *buf, const char *bom, const char *text)
{
	size_t n = 0;

	if (bom) {
		memcpy(buf, bom, 2);
		n = 2;
	}
	for (; *text; text++) {
		buf[n++] = *text;
		buf[n++] = 0;
	}
	return n;
}

/* UTF-16LE with its mark is read; without a mark or big-endian, refused by name. */
static void test_load_encodings(void **state)
{
	char buf[128];
	struct cmdline_result r;
	size_t n;

	t_flag = false;
	n = utf16(buf, "\xff\xfe", "t.num=12 t.flag\r\n");
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.applied, 2);
	assert_int_equal(t_num, 12);
	assert_true(t_flag);
	assert_string_equal(cmdline_get(), "t.num=12 t.flag  ");
	/* without the mark: one error naming it, nothing applied */
	n = utf16(buf, NULL, "t.num=13");
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(r.applied, 0);
	assert_int_equal(r.errors, 1);
	assert_int_equal(r.unknown, 0);
	assert_non_null(strstr(out, "looks like UTF-16 text without a byte-order mark"));
	assert_int_equal(t_num, 12);
	r = load("\xfe\xff\0t", 4, CMDLINE_BYTES);
	assert_int_equal(r.errors, 1);
	assert_non_null(strstr(out, "UTF-16 big-endian"));
	/* a character outside ASCII: said, and the boot fails */
	n = utf16(buf, "\xff\xfe", "t.str=caf\xe9");
	r = load(buf, n, CMDLINE_BYTES);
	assert_int_equal(r.errors, 1);
	assert_non_null(strstr(out, "U+00E9 at column 10 is not ASCII"));
	/* UTF-8's mark is skipped */
	r = load("\xef\xbb\xbft.num=14", 11, CMDLINE_BYTES);
	assert_int_equal(r.errors, 0);
	assert_int_equal(t_num, 14);
	r = load(NULL, 0, CMDLINE_BYTES);
	assert_int_equal(r.errors + r.applied, 0);
}

/*
 * help: a heading per group in enum kparam_group's order, each key once, under
 * its group's heading, sorted by name within it; real keys where a user looks.
 */
static void test_help_grouped_sorted(void **state)
{
	static char help[65536];
	const char *line, *heading = NULL;
	char prev[64] = "";
	int group = -1;
	unsigned int keys = 0, table = (unsigned int)(__stop_kparam_table - __start_kparam_table);

	hosted_console_quiet = true;
	printk_capture_start(help, sizeof(help));
	cmdline_print_help();
	printk_capture_stop();
	hosted_console_quiet = false;
	assert_non_null(strstr(help, "command line parameters:"));
	for (const char *next = strchr(help, '\n') + 1; *next; next = strchr(next, '\n') + 1) {
		char name[64];

		line = next[0] == '[' ? strstr(next, "] ") + 2 : next;	/* printk's timestamp */

		if (line[0] != ' ') {	/* a heading "NAME:": a later group than the last */
			int g = group + 1, hlen = (int)strcspn(line, ":\n");

			while (g < KPARAM_NR_GROUPS && ((int)strlen(cmdline_group_name(g)) != hlen ||
						       strncmp(line, cmdline_group_name(g), (size_t)hlen)))
				g++;
			if (g >= KPARAM_NR_GROUPS)
				fail_msg("heading '%.*s' is no group after %d", hlen, line, group);
			group = g;
			heading = line;
			prev[0] = '\0';
			continue;
		}
		assert_non_null(heading);
		sscanf(line, " %63s", name);
		const struct kparam *p = cmdline_find_param(name);

		assert_non_null(p);
		assert_int_equal(cmdline_param_group(p), group);
		if (prev[0] && strcmp(prev, name) >= 0)
			fail_msg("'%s' listed after '%s' in group %s", name, prev, cmdline_group_name(group));
		strcpy(prev, name);
		keys++;
	}
	assert_int_equal(keys, table);	/* each once: sorted, so no repeats */
	assert_int_equal(cmdline_param_group(cmdline_find_param("pt.buf")), KPARAM_TRACING);
	assert_int_equal(cmdline_param_group(cmdline_find_param("probe")), KPARAM_TRACING);
	assert_int_equal(cmdline_param_group(cmdline_find_param("slub_debug")), KPARAM_MEMORY);
	assert_int_equal(cmdline_param_group(cmdline_find_param("loglevel")), KPARAM_CORE);
	assert_int_equal(cmdline_param_group(cmdline_find_param("t.flag")), KPARAM_CORE);
	/* its help says "fault injection:": that wins over the pt. prefix */
	assert_int_equal(cmdline_param_group(cmdline_find_param("pt.fail_pmi")), KPARAM_FAULT);
	assert_string_equal(cmdline_group_name(KPARAM_FIRMWARE), "firmware phase");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_applied),
		cmocka_unit_test(test_unknown_key_named),
		cmocka_unit_test(test_bad_values_named_and_ignored),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_quotes_anywhere),
		cmocka_unit_test(test_real_keys_quoted),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_empty_and_null),
		cmocka_unit_test(test_fails_boot_names_words),
		cmocka_unit_test(test_load_cut_names_words),
		cmocka_unit_test(test_load_nul),
		cmocka_unit_test(test_load_encodings),
		cmocka_unit_test(test_help_grouped_sorted),
	};
	return cmocka_run_group_tests_name("cmdline", tests, NULL, NULL);
}
