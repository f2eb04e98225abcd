// SPDX-License-Identifier: MIT
/* Host tests of the kernel's formatting, parsing and symbol helpers,
 * checked against glibc where both exist. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include "hosted.h"
#include <topaz/kernel.h>
#include <topaz/gfp.h>
#include <topaz/symbols.h>
#include <topaz/errno.h>

#define CHECK_FMT(fmt, ...) do {						\
	char a[128], b[128];							\
	int ra = ksnprintf(a, sizeof(a), fmt, __VA_ARGS__);			\
	int rb = snprintf(b, sizeof(b), fmt, __VA_ARGS__);			\
	assert_string_equal(a, b);						\
	assert_int_equal(ra, rb);						\
} while (0)

static void test_format_matches_libc(void **state)
{
	CHECK_FMT("%d %i %u", -42, 7, 4000000000u);
	CHECK_FMT("%5d|%-5d|%05d|%+d|% d", 42, 42, 42, 42, 42);
	CHECK_FMT("%x %X %#x %#o %o", 0xbeefu, 0xbeefu, 0x1fu, 8u, 0u);
	CHECK_FMT("%lld %llu %llx", (long long)INT64_MIN, (unsigned long long)UINT64_MAX, 0x123456789abcull);
	CHECK_FMT("%ld %lu %zu %zx", -1L, 1UL << 63, (size_t)12345, (size_t)0xfff);
	CHECK_FMT("%hhu %hd %hhx", (unsigned char)300, (short)70000, (unsigned char)0x1ff);
	CHECK_FMT("%s|%10s|%-10s|%.3s", "abc", "right", "left", "truncate");
	CHECK_FMT("%c%c %%", 'o', 'k');
	CHECK_FMT("%.5d %8.3x %-8.3d|", 42, 0xau, 7);
	CHECK_FMT("%*d %-*d|", 6, 1, 4, 2);
	CHECK_FMT("%016llx", 0xdeadbeefull);
}

static void test_format_truncates_safely(void **state)
{
	char small[8];

	assert_int_equal(ksnprintf(small, sizeof(small), "%s", "0123456789"), 10);
	assert_string_equal(small, "0123456");
	assert_int_equal(ksnprintf(NULL, 0, "%d", 12345), 5);
}

volatile int lib_sink;
static __noinline void lib_test_symbol_target(void)
{
	for (int i = 0; i < 4; i++)
		lib_sink += i;
}

static void test_symbol_format(void **state)
{
	char buf[128], out[128];

	ksym_format((uintptr_t)lib_test_symbol_target + 3, buf, sizeof(buf));
	assert_string_equal(buf, "lib_test_symbol_target+0x3");
	ksnprintf(out, sizeof(out), "at %pS", (void *)lib_test_symbol_target);
	assert_string_equal(out, "at lib_test_symbol_target+0x0");
	ksym_format(0x10, buf, sizeof(buf));
	assert_string_equal(buf, "0x10");
}

static void test_symbol_table_search(void **state)
{
	static const struct ksym_entry e[] = {
		{ 0x100, 0x20, 0, 'T' }, { 0x120, 0x10, 2, 't' }, { 0x200, 0x40, 4, 'T' },
	};
	static const char names[] = "a\0b\0c";
	struct ksym_table t = { .base = 0x10000, .entries = e, .count = 3, .names = names };
	uintptr_t off;

	assert_null(ksym_table_lookup(&t, 0x100ff, &off));
	assert_ptr_equal(ksym_table_lookup(&t, 0x10100, &off), &e[0]);
	assert_int_equal(off, 0);
	assert_ptr_equal(ksym_table_lookup(&t, 0x1012f, &off), &e[1]);
	assert_int_equal(off, 0xf);
	assert_null(ksym_table_lookup(&t, 0x10130, &off));	/* a gap between symbols */
	assert_ptr_equal(ksym_table_lookup(&t, 0x1023f, &off), &e[2]);
	assert_null(ksym_table_lookup(&t, 0x10240, &off));
	assert_ptr_equal(ksym_table_find(&t, "c"), &e[2]);
	assert_null(ksym_table_find(&t, "d"));
}

/*
 * The symbol file the host puts beside a user's EFI image (NAME.sym): found by
 * name with its size; a malformed line is named by number, comments and blank
 * lines are not symbols; a name is matched whole, not as a prefix.
 */
static void test_symbol_text(void **state)
{
	static const char good[] = "# topaz symbol file\n"
				   "0000000000002030 0000000000000042 fib\n"
				   "\n"
				   "00000000000027b0 9b fib_helper\r\n"
				   "2390 418 efi_main";
	static const char *const bad[] = {
		"2030 42 fib\n2040 zz sort\n",	/* a size that is no number */
		"2030 42 fib\n\n2040 10\n",		/* no name */
		"2030 42 fib extra\n",			/* a fourth word */
		"12345678901234567890 1 big\n",	/* past 64 bits */
	};
	static const unsigned int bad_line[] = { 2, 3, 1, 1 };
	unsigned int n;
	u64 off, size;

	assert_int_equal(ksym_text_check(good, sizeof(good) - 1, &n), 0);
	assert_int_equal(n, 3);
	assert_true(ksym_text_find(good, sizeof(good) - 1, "fib", &off, &size));
	assert_int_equal(off, 0x2030);
	assert_int_equal(size, 0x42);
	assert_true(ksym_text_find(good, sizeof(good) - 1, "fib_helper", &off, &size));
	assert_int_equal(off, 0x27b0);
	assert_int_equal(size, 0x9b);
	assert_true(ksym_text_find(good, sizeof(good) - 1, "efi_main", &off, &size));	/* no newline at the end */
	assert_int_equal(off, 0x2390);
	assert_false(ksym_text_find(good, sizeof(good) - 1, "fi", &off, &size));
	assert_false(ksym_text_find(good, sizeof(good) - 1, "topaz", &off, &size));	/* a comment's word */
	/* what holds an offset: "Module!function+off" in the kernel's messages */
	{
		size_t nlen;
		u64 symoff;
		const char *name = ksym_text_lookup(good, sizeof(good) - 1, 0x2071, &nlen, &symoff);

		assert_non_null(name);
		assert_int_equal(nlen, 3);
		assert_memory_equal(name, "fib", 3);
		assert_int_equal(symoff, 0x41);
		assert_null(ksym_text_lookup(good, sizeof(good) - 1, 0x2072, &nlen, &symoff));	/* past its size */
		name = ksym_text_lookup(good, sizeof(good) - 1, 0x2390, &nlen, &symoff);
		assert_non_null(name);
		assert_int_equal(nlen, 8);
		assert_int_equal(symoff, 0);
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(ksym_text_check(bad[i], strlen(bad[i]), &n), bad_line[i]);
	assert_int_equal(ksym_text_check("", 0, &n), 0);
	assert_int_equal(n, 0);
}

static void test_number_parsing(void **state)
{
	u64 v;
	s64 s;

	assert_int_equal(kstrtou64("123", 0, &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(kstrtou64("0x1F", 0, &v), 0);
	assert_int_equal(v, 31);
	assert_int_equal(kstrtou64("017", 0, &v), 0);
	assert_int_equal(v, 15);
	assert_int_equal(kstrtou64("18446744073709551615", 10, &v), 0);
	assert_int_equal(kstrtou64("18446744073709551616", 10, &v), -ERANGE);
	assert_int_equal(kstrtou64("12a", 10, &v), -EINVAL);
	assert_int_equal(kstrtou64("", 10, &v), -EINVAL);
	assert_int_equal(kstrtou64("0x", 0, &v), -EINVAL);
	assert_int_equal(kstrtos64("-9223372036854775808", 10, &s), 0);
	assert_true(s == INT64_MIN);
	assert_int_equal(kstrtosize("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(kstrtosize("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(kstrtosize("4x", &v), -EINVAL);
}

static void test_glob(void **state)
{
	assert_true(glob_match("vm.*", "vm.kmalloc"));
	assert_true(glob_match("*", ""));
	assert_true(glob_match("a?c", "abc"));
	assert_false(glob_match("vm.*", "mm.x"));
	assert_true(glob_match("*.kmem_*", "vm.kmem_cache_alloc"));
	assert_false(glob_match("a*b", "acbx"));
}

static void test_gfp_names_like_linux(void **state)
{
	char b[128];

	assert_string_equal(gfp_flags_name(0, b, sizeof(b)), "none");
	assert_string_equal(gfp_flags_name(GFP_KERNEL, b, sizeof(b)), "GFP_KERNEL");
	assert_int_equal(GFP_KERNEL, 0xcc0);
	assert_int_equal(GFP_ATOMIC, 0x820);
	assert_int_equal(GFP_NOWAIT, 0x2800);
	assert_string_equal(gfp_flags_name(0xdc0, b, sizeof(b)), "GFP_KERNEL|__GFP_ZERO");
	assert_string_equal(gfp_flags_name(0x2820, b, sizeof(b)), "GFP_ATOMIC|__GFP_NOWARN");
	assert_string_equal(gfp_flags_name(0x2800, b, sizeof(b)), "GFP_NOWAIT");
	assert_string_equal(gfp_flags_name(0x1000200, b, sizeof(b)), "0x1000200");
	assert_string_equal(gfp_flags_name(__GFP_ZERO | 0x200, b, sizeof(b)), "__GFP_ZERO|0x200");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_matches_libc),
		cmocka_unit_test(test_format_truncates_safely),
		cmocka_unit_test(test_symbol_format),
		cmocka_unit_test(test_symbol_table_search),
		cmocka_unit_test(test_symbol_text),
		cmocka_unit_test(test_number_parsing),
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_gfp_names_like_linux),
	};
	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
