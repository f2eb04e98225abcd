// SPDX-License-Identifier: MIT
/* Host tests of command-line parsing and its error reports. */
#include <stdarg.h>
#include <stddef.h>
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

	assert_int_equal(r.errors, 1);
	assert_int_equal(r.applied, 1);
	assert_non_null(strstr(out, "unknown key 'bogus'"));
	assert_int_equal(t_num, 9);
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
}

static void test_syntax_errors(void **state)
{
	struct cmdline_result r = run("=5 t.num=3 t.str=\"unterminated");

	assert_int_equal(r.errors, 2);
	assert_int_equal(t_num, 3);
	assert_non_null(strstr(out, "has no key"));
	assert_non_null(strstr(out, "unterminated quote"));
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
	};
	return cmocka_run_group_tests_name("cmdline", tests, NULL, NULL);
}
