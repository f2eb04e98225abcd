/* SPDX-License-Identifier: MIT */
/* In-kernel tests: suites registered from tests/kernel/, chosen with test=,
 * one result line each over the console. */
#ifndef TOPAZ_KTEST_H
#define TOPAZ_KTEST_H

#include <topaz/types.h>
#include <topaz/printk.h>

struct ktest_ctx {
	const char *name;
	unsigned int failures;
	char first_failure[192];
};

struct ktest {
	const char *suite;
	const char *name;
	void (*fn)(struct ktest_ctx *t);
};

#define KTEST(suite_, name_)							\
	static void ktest_##suite_##_##name_(struct ktest_ctx *t);		\
	static const struct ktest __ktest_##suite_##_##name_ __used		\
		__section("ktest_table") __aligned(8) = {			\
		.suite = #suite_, .name = #name_, .fn = ktest_##suite_##_##name_ }; \
	static void ktest_##suite_##_##name_(struct ktest_ctx *t)

/**
 * ktest_fail() - record a failure of test @t and print it
 * @t: the test
 * @file: @line: where the check failed
 * @fmt: printf-style message
 */
void ktest_fail(struct ktest_ctx *t, const char *file, int line, const char *fmt, ...)
	__printf(4, 5);

#define KT_EXPECT(cond) do { if (!(cond)) \
	ktest_fail(t, __FILE__, __LINE__, "expected %s", #cond); } while (0)
#define KT_ASSERT(cond) do { if (!(cond)) { \
	ktest_fail(t, __FILE__, __LINE__, "assertion %s", #cond); return; } } while (0)
#define KT_EXPECT_EQ(a, b) do { u64 __a = (u64)(a), __b = (u64)(b); if (__a != __b) \
	ktest_fail(t, __FILE__, __LINE__, "%s == %s: 0x%llx != 0x%llx", #a, #b, \
		   (unsigned long long)__a, (unsigned long long)__b); } while (0)
#define KT_EXPECT_STR(hay, needle) do { if (!strstr((hay), (needle))) \
	ktest_fail(t, __FILE__, __LINE__, "\"%s\" not found in output", (needle)); } while (0)

/**
 * ktest_run() - run the tests selected by @spec ("all", or suites "mm,traps",
 * or "suite.name" patterns with wildcards); returns the number of failures,
 * or -1 when @spec selects nothing.
 */
int ktest_run(const char *spec);

#endif
