// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the kernel command line.
 *
 * Feeds: the input bytes (up to the first NUL) as a command line to
 * cmdline_parse(), which applies each word to every key=value handler linked
 * in (the PT options, pt.filter, pt.profile, probe=, slub_debug=, loglevel,
 * help...), then the PT options to pt_options_to_attr() on the software trace
 * unit (skylake), as pt=on would.
 * Must hold: no crash, no UB, no leak; every word is either applied or
 * reported (applied + errors + unknown = the words a reference tokenizer here
 * finds, plus one for a line over CMDLINE_MAX); numbers stay in their bounds, enums
 * name one of their values, strings are no longer than the line; the PT
 * options the parser accepted are ones the driver can take (sizes powers of
 * two in range, periods 0-15); the line reads back as given. Every parameter
 * is put back as it was after each input, so inputs do not depend on each
 * other.
 * Then the same bytes as a file and as load options through cmdline_load():
 * the line it makes fits CMDLINE_MAX, and every word it drops (a NUL, a cut,
 * a foreign encoding) is an error, so the boot fails: dropping is never silent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../host/hosted.h"
#include <topaz/cmdline.h>
#include <topaz/pt_options.h>
#include <topaz/pt_model.h>
#include <topaz/kernel.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARAMS 256

/* the value of each parameter before any input: restored after each */
static union { bool b; u64 u; const char *s; int e; } initial[MAX_PARAMS];
static struct pt_options initial_opts;
static size_t nparams;

static void fail(const char *line, const char *what)
{
	fprintf(stderr, "fuzz_cmdline: %s\n  line: '%.300s'\n", what, line);
	abort();
}

static void snapshot(bool restore)
{
	size_t i = 0;

	for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++, i++) {
		switch (p->type) {
		case KP_BOOL:
			if (restore) *(bool *)p->var = initial[i].b; else initial[i].b = *(bool *)p->var;
			break;
		case KP_UINT:
			if (restore) *(u64 *)p->var = initial[i].u; else initial[i].u = *(u64 *)p->var;
			break;
		case KP_STR:
			if (restore) *(const char **)p->var = initial[i].s;
			else initial[i].s = *(const char **)p->var;
			break;
		case KP_ENUM:
			if (restore) *(int *)p->var = initial[i].e; else initial[i].e = *(int *)p->var;
			break;
		case KP_CUSTOM:
			break;
		}
	}
	if (restore)
		pt_opts = initial_opts;
	else
		initial_opts = pt_opts;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The documented word syntax, independently: quotes group and are dropped,
 * whitespace outside them ends a word; an unterminated quote takes the rest. */
static unsigned int count_words(const char *s)
{
	unsigned int n = 0;

	for (;;) {
		bool quoted = false;

		while (space(*s))
			s++;
		if (!*s)
			return n;
		n++;
		for (; *s && (quoted || !space(*s)); s++)
			if (*s == '"')
				quoted = !quoted;
	}
}

static bool pow2_in(u64 v, u64 lo, u64 hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

static void check_params(const char *line, size_t len)
{
	for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++) {
		switch (p->type) {
		case KP_UINT: {
			u64 v = *(u64 *)p->var;

			if (v < p->min || v > p->max)
				fail(line, p->name);
			break;
		}
		case KP_ENUM: {
			int v = *(int *)p->var, n = 0;

			while (p->names[n])
				n++;
			if (v < 0 || v >= n)
				fail(line, p->name);
			break;
		}
		case KP_STR: {
			const char *v = *(const char **)p->var;

			if (v && strlen(v) > len)
				fail(line, p->name);
			break;
		}
		default:
			break;
		}
	}
	if (!pow2_in(pt_opts.buf_size, 4096, 1ull << 30))
		fail(line, "pt.buf accepted a size the driver cannot take");
	if (!pow2_in(pt_opts.region_size, 4096, 4ull << 20))
		fail(line, "pt.region accepted a size the driver cannot take");
	if (pt_opts.mtc_period > 15 || pt_opts.cyc_thresh > 15 || pt_opts.psb_period > 15)
		fail(line, "a period encoding above 15");
}

/* cmdline_load() of @data: a line that fits, and nothing dropped without an error. */
static void load_check(const uint8_t *data, size_t size, enum cmdline_form form, const char *line)
{
	static char out[CMDLINE_MAX];
	struct cmdline_result r;
	size_t chars = form == CMDLINE_BYTES ? size : 0, len;

	memset(out, 0x55, sizeof(out));
	cmdline_load(data, size, form, "fuzz", out, &r);
	len = strnlen(out, sizeof(out));
	if (len >= sizeof(out))
		fail(line, "cmdline_load: a line without its NUL");
	/* a file's bytes (after a UTF-8 mark) are read whole, or the boot fails */
	if (form == CMDLINE_BYTES && size >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		chars -= 3;
	else if (form == CMDLINE_BYTES && size >= 2 && !memcmp(data, "\xff\xfe", 2))
		chars = 0;	/* UTF-16: half as many characters */
	if (len < chars && !r.errors)
		fail(line, "cmdline_load: bytes dropped without an error");
	snapshot(true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct cmdline_result r;
	struct pt_event_attr attr;
	unsigned int words;
	char *line;
	size_t len;

	if (!ready) {
		hosted_console_quiet = true;
		hosted_cpuid_reset();
		hosted_msr_reset();
		if (pt_model_init("skylake", false) != 1)
			fail("", "the trace unit did not install");
		for (const struct kparam *p = __start_kparam_table; p < __stop_kparam_table; p++)
			nparams++;
		if (nparams > MAX_PARAMS)
			fail("", "more parameters than MAX_PARAMS");
		snapshot(false);
		ready = true;
	}
	/* exactly the bytes given, so ASan sees any read past the line's end */
	line = malloc(size + 1);
	memcpy(line, data, size);
	line[size] = '\0';
	len = strlen(line);

	cmdline_parse(line, &r);
	words = len < CMDLINE_MAX ? count_words(line) : r.applied + r.errors + r.unknown;
	if (len < CMDLINE_MAX && r.applied + r.errors + r.unknown != words) {
		char why[96];

		snprintf(why, sizeof(why), "%u applied + %u errors + %u unknown, but %u words",
			 r.applied, r.errors, r.unknown, words);
		fail(line, why);
	}
	if (len >= CMDLINE_MAX && !r.errors)
		fail(line, "an overlong line without an error");
	if (strncmp(cmdline_get(), line, CMDLINE_MAX - 1))
		fail(line, "cmdline_get() is not the line as given");
	check_params(line, len);
	/* what pt=on would do with the options: refuse or accept, never crash */
	pt_options_to_attr(&pt_opts, &attr);
	snapshot(true);

	load_check(data, size, CMDLINE_BYTES, line);
	load_check(data, size, CMDLINE_UCS2, line);
	free(line);
	return 0;
}
