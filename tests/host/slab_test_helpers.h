/* SPDX-License-Identifier: MIT */
/*
 * Shared by the slab host tests (test_slab.c, test_slab_smp.c): the free page
 * count, the console captured into out[], and a check that objects are
 * distinct.
 */
#ifndef TOPAZ_TESTS_SLAB_TEST_HELPERS_H
#define TOPAZ_TESTS_SLAB_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "hosted.h"
#include <topaz/mm.h>

/* The console output between capture() and uncapture(). */
static char out[32768];

static inline u64 free_pages_now(void)
{
	struct page_alloc_stats st;

	page_alloc_get_stats(&st);
	return st.free_pages;
}

static inline void capture(void)
{
	hosted_capture_begin(out, sizeof(out));
}

static inline void uncapture(void)
{
	hosted_capture_end();
}

static inline int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* No object twice among @p[0..n): sorted, neighbours at least @size apart. */
static inline void assert_distinct(void **p, size_t n, size_t size)
{
	void **c = malloc(n * sizeof(*c));

	memcpy(c, p, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_ptr);
	for (size_t i = 1; i < n; i++)
		if ((uintptr_t)c[i - 1] + size > (uintptr_t)c[i])
			fail_msg("objects %p and %p overlap (size %zu)", c[i - 1], c[i], size);
	free(c);
}

#endif
