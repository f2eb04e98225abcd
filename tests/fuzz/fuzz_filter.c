// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: pt.filter=, perf's address-filter syntax.
 *
 * Feeds: the input bytes as a NUL-terminated spec (an exact-size copy plus
 * the NUL, so a read past the end is an ASan report) to pt_parse_filters():
 * comma-separated "filter SYM", "filter SYM/SIZE", "filter START/SIZE",
 * "stop ...", "tracestop ...", "start ...", perf's "SYM @ FILE" and anything
 * else. Symbols resolve against the fuzzer binary's own .symtab, the table
 * the hosted tests use (tests/host/hosted_machine.c).
 * Must hold: the result is 0 or -EINVAL; nr_filters is at most
 * PT_FILTERS_NUM and every counted range is a filter or a stop range with
 * start <= end (a wrap around the address space would end before it starts)
 * and canonical ends (the ADDRn MSRs #GP on others); the parser writes
 * nothing but nr_filters and the slots it fills (the one after the last
 * counted slot may hold a half-parsed item); 0 prints nothing and counts one
 * range per item, each agreeing with its item (action, start address or
 * symbol, size or the symbol's size, less the non-canonical hole); -EINVAL
 * prints a "pt.filter: " message (captured with printk's capture buffer, as
 * the host tests do) and counts fewer ranges than items (the good items
 * before the refusal stay counted: the caller refuses the whole event).
 * No crash, no UBSan report, no leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../host/hosted.h"
#include <topaz/pt_options.h>
#include <topaz/msr-index.h>
#include <topaz/symbols.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/printk.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct pt_event_attr attr = { .nr_filters = 3 };

	/* read the symbol table once, not inside the first input */
	if (!ksym_address("pt_parse_filters"))
		abort();
	if (pt_parse_filters(NULL, &attr) || attr.nr_filters)
		abort();
	return 0;
}

/* The lowest and highest non-canonical addresses with 48-bit linear addresses. */
#define HOLE_START	0x0000800000000000ull
#define HOLE_END	0xffff7fffffffffffull

static bool canonical(u64 a)
{
	return a < HOLE_START || a > HOLE_END;
}

/* Does range @f say what item @s (@len bytes, parsed fine) asked for? */
static void check_item(const char *s, size_t len, const struct pt_filter *f)
{
	char item[160], *spec, *slash;
	u64 start, end, size = 0;

	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(item))
		abort();
	memcpy(item, s, len);
	item[len] = '\0';
	spec = strchr(item, ' ');
	if (!spec)
		abort();
	*spec++ = '\0';
	while (*spec == ' ')
		spec++;
	if (!strcmp(item, "filter")) {
		if (f->config != RTIT_ADDR_CFG_FILTER)
			abort();
	} else if (!strcmp(item, "stop") || !strcmp(item, "tracestop")) {
		if (f->config != RTIT_ADDR_CFG_STOP)
			abort();
	} else {
		abort();
	}
	slash = strchr(spec, '/');
	if (slash) {
		*slash++ = '\0';
		if (kstrtosize(slash, &size) || !size)
			abort();
	}
	if (kstrtou64(spec, 0, &start)) {
		const char *name;
		uintptr_t off, sz;

		start = ksym_address(spec);
		if (!start)
			abort();
		if (!size)
			size = ksym_lookup(start, &name, &off, &sz) || !sz ? 1 : sz;
	}
	end = start + size - 1;
	/* the range less the non-canonical hole, which no code runs in */
	if (f->msr_a != (canonical(start) ? start : HOLE_END + 1) ||
	    f->msr_b != (canonical(end) ? end : HOLE_START - 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_event_attr attr, expect;
	unsigned int items = 1;
	char *spec;
	int ret;

	spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	for (const char *c = spec; *c; c++)
		items += *c == ',';

	/* a pattern in every byte, to see what the parser wrote */
	memset(&attr, 0xa5, sizeof(attr));
	hosted_capture_begin(out, sizeof(out));
	ret = pt_parse_filters(spec, &attr);
	hosted_capture_end();

	if (ret != 0 && ret != -EINVAL)
		abort();
	if (attr.nr_filters > PT_FILTERS_NUM)
		abort();
	for (unsigned int i = 0; i < attr.nr_filters; i++) {
		const struct pt_filter *f = &attr.filters[i];

		if (f->config != RTIT_ADDR_CFG_FILTER && f->config != RTIT_ADDR_CFG_STOP)
			abort();
		if (f->msr_b < f->msr_a)
			abort();
		/* what the ADDRn MSRs take without a #GP (4-level paging) */
		if (!canonical(f->msr_a) || !canonical(f->msr_b))
			abort();
	}
	/* the rest still holds the pattern (compared as bytes: bools of 0xa5) */
	memset(&expect, 0xa5, sizeof(expect));
	memcpy(expect.filters, attr.filters,
	       sizeof(attr.filters[0]) * min(attr.nr_filters + 1, (unsigned int)PT_FILTERS_NUM));
	expect.nr_filters = attr.nr_filters;
	if (memcmp(&expect, &attr, sizeof(attr)))
		abort();

	if (ret == 0) {
		const char *s = spec;

		if (out[0])
			abort();	/* a good spec is accepted quietly */
		if (attr.nr_filters != (*spec ? items : 0))
			abort();	/* one range per item, none dropped */
		for (unsigned int i = 0; i < attr.nr_filters; i++) {
			const char *e = strchr(s, ',');
			size_t len = e ? (size_t)(e - s) : strlen(s);

			check_item(s, len, &attr.filters[i]);
			s = e ? e + 1 : s + len;
		}
	} else if (!strstr(out, "pt.filter: ") || attr.nr_filters >= items) {
		abort();	/* refused without saying why, or with every item counted */
	}
	free(spec);
	return 0;
}
