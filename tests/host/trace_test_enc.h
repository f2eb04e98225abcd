/* SPDX-License-Identifier: MIT */
/*
 * Shared by the ptdecode host tests (test_trace_decode.c, test_trace_cpus.c):
 * PT packets written with libipt's encoder (checked with cmocka, unlike
 * pt_packets.h, which the fuzzer's seed generator shares too), a container
 * parsed with its sideband image as ptdecode's main() does, a file read
 * whole, and the checks of a decoded instruction sequence and of perf's
 * output.
 */
#ifndef TOPAZ_TESTS_TRACE_TEST_ENC_H
#define TOPAZ_TESTS_TRACE_TEST_ENC_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hosted.h"
#include "trace_helpers.h"
#include "ptdecode.h"
#include "pt_packets.h"

/* ------------------------------------------------------------ the program */

/*
 * The program both tests trace, at offset 0 of its image (an initializer of
 * a u8 array of at least 0x40 bytes; the image is at 0x401000):
 *
 * main:  mov ecx, 3            foo:  call bar          bar:  test ecx, 1
 *  .l:   call foo                    ret                     jz .s
 *        dec ecx                                             nop
 *        jnz .l                                        .s:   ret
 *        call bar
 *        jmp rax                (rax: outside the traced code: TIP.PGD)
 */
#define DEMO_CODE_MAIN_FOO_BAR							\
	[0x00] = 0xb9, 0x03, 0x00, 0x00, 0x00,	/* main: mov ecx, 3 */		\
	[0x05] = 0xe8, 0x16, 0x00, 0x00, 0x00,	/* call foo */			\
	[0x0a] = 0xff, 0xc9,			/* dec ecx */			\
	[0x0c] = 0x75, 0xf7,			/* jnz 0x401005 */		\
	[0x0e] = 0xe8, 0x1d, 0x00, 0x00, 0x00,	/* call bar */			\
	[0x13] = 0xff, 0xe0,			/* jmp rax */			\
	[0x15 ... 0x1f] = 0xcc,							\
	[0x20] = 0xe8, 0x0b, 0x00, 0x00, 0x00,	/* foo: call bar */		\
	[0x25] = 0xc3,				/* ret */			\
	[0x26 ... 0x2f] = 0xcc,							\
	[0x30] = 0xf7, 0xc1, 0x01, 0x00, 0x00, 0x00,	/* bar: test ecx, 1 */	\
	[0x36] = 0x74, 0x01,			/* jz 0x401039 */		\
	[0x38] = 0x90,				/* nop */			\
	[0x39] = 0xc3,				/* ret */			\
	[0x3a ... 0x3f] = 0xcc

/* Their symbols, with the names "main\0foo\0bar" at the start of the names. */
#define DEMO_SYMS_MAIN_FOO_BAR { 0x00, 0x15, 0 }, { 0x20, 0x06, 5 }, { 0x30, 0x0a, 9 }

/* What main executed from start to jmp rax (offsets from the image), and
 * the TNT packets of that run (for enc_window()). */
#define DEMO_RUN_MAIN							\
	0x00,								\
	0x05, 0x20, 0x30, 0x36, 0x38, 0x39, 0x25, 0x0a, 0x0c,	/* ecx 3: jz not taken */ \
	0x05, 0x20, 0x30, 0x36, 0x39, 0x25, 0x0a, 0x0c,		/* ecx 2: jz taken */ \
	0x05, 0x20, 0x30, 0x36, 0x38, 0x39, 0x25, 0x0a, 0x0c,	/* ecx 1: jnz not taken */ \
	0x0e, 0x30, 0x36, 0x39, 0x13				/* ecx 0 */
#define DEMO_TNT_MAIN							\
	".!!!!!",	/* jz, ret, ret, jnz | jz, ret */		\
	"!!.!!.",	/* ret, jnz | jz, ret, ret, jnz */		\
	"!!"		/* jz, ret */

/* ------------------------------------------------------------ encoding */

struct enc {
	u8 buf[512];
	struct pt_encoder *e;
	struct pt_config cfg;
};

static inline void enc_init(struct enc *x)
{
	memset(x, 0, sizeof(*x));
	pt_config_init(&x->cfg);
	x->cfg.begin = x->buf;
	x->cfg.end = x->buf + sizeof(x->buf);
	x->e = pt_alloc_encoder(&x->cfg);
	assert_non_null(x->e);
}

static inline void put(struct enc *x, struct pt_packet p)
{
	assert_true(pt_enc_next(x->e, &p) > 0);
}

static inline void put_psb(struct enc *x) { put(x, (struct pt_packet){ .type = ppt_psb }); }
static inline void put_psbend(struct enc *x) { put(x, (struct pt_packet){ .type = ppt_psbend }); }

static inline void put_mode64(struct enc *x)
{
	put(x, pkt_mode64());
}

static inline void put_ip(struct enc *x, enum pt_packet_type t, enum pt_ip_compression ipc, u64 ip)
{
	put(x, pkt_ip(t, ipc, ip));
}

/* @bits: results oldest first, as '!' (taken) and '.' (not taken). */
static inline void put_tnt(struct enc *x, const char *bits)
{
	put(x, pkt_tnt(ppt_tnt_8, bits));
}

/* A trace's start: PSB+, 64-bit mode, tracing enabled at @ip. */
static inline void put_start(struct enc *x, u64 ip)
{
	put_psb(x);
	put_psbend(x);
	put_mode64(x);
	put_ip(x, ppt_tip_pge, pt_ipc_sext_48, ip);
}

/* The bytes written (in x->buf); the encoder freed. */
static inline size_t enc_done(struct enc *x)
{
	uint64_t off;

	pt_enc_get_offset(x->e, &off);
	pt_free_encoder(x->e);
	return (size_t)off;
}

/* A trace window: PSB+, 64-bit, enabled at @start; @tnt (NULL-terminated,
 * groups of at most 6 results, '!' taken); disabled by a jmp rax to
 * 0x402000 (outside the traced code). Written to @out; returns its size. */
static inline size_t enc_window(u8 *out, u64 start, const char *const *tnt)
{
	struct enc x;
	size_t n;

	enc_init(&x);
	put_start(&x, start);
	for (; *tnt; tnt++)
		put_tnt(&x, *tnt);
	put_ip(&x, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	n = enc_done(&x);
	memcpy(out, x.buf, n);
	return n;
}

/* ------------------------------------------------------------ decoding */

/* The container in @m parsed as @name, its sideband image built: what
 * ptd_container_parse() returned. */
static inline int parse_with_image(struct ptd_container *c, struct ptd_image *img,
				   const char *name, const struct membuf *m)
{
	int ret = ptd_container_parse(c, name, m->p, m->len);

	ptd_image_init(img);
	ptd_image_add_sideband(img, c);
	ptd_image_finish(img);
	return ret;
}

/* What parse_with_image() and ptd_ctx_init() on them allocated, freed. */
static inline void free_with_image(struct ptd_ctx *x, struct ptd_image *img, struct ptd_container *c)
{
	ptd_ctx_free(x);
	ptd_image_free(img);
	ptd_container_free(c);
}

/* The instructions @ips[@from...] are @base + @want[0..@n), each in segment
 * @seg (@segs: the segment index of each). @what names the stream in the
 * message of a mismatch. */
static inline void check_ips_at(const u64 *ips, const u32 *segs, const char *what, size_t from,
				u64 base, const u8 *want, size_t n, u32 seg)
{
	for (size_t i = 0; i < n; i++) {
		if (ips[from + i] != base + want[i])
			fprintf(stderr, "%sinstruction %zu: %#llx, expected %#llx\n", what, from + i,
				ips[from + i], base + want[i]);
		assert_int_equal(ips[from + i], base + want[i]);
		assert_int_equal(segs[from + i], seg);
	}
}

/* ------------------------------------------------------------ files, perf */

/* The file at @path, NUL-terminated (not counted in *@len); NULL if unread. */
static inline char *read_whole(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	*len = (size_t)ftell(fp);
	rewind(fp);
	buf = malloc(*len + 1);
	if (buf && fread(buf, 1, *len, fp) != *len) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[*len] = 0;
	fclose(fp);
	return buf;
}

/* perf script printed @line, which is not what the test asked for: it and
 * the rest of @pf to stderr, and the test fails. */
static inline void perf_unexpected(FILE *pf, char *line, int size)
{
	do
		fprintf(stderr, "perf: %s", line);
	while (fgets(line, size, pf));
	fail_msg("perf script printed something else: is linux-perf installed (scripts/setup.sh)?");
}

/*
 * Run @cmd (perf script printing one instruction address a line) and check
 * its addresses are @want[0..@n), in order: a mismatch is printed and fails
 * the test. Returns pclose()'s status.
 */
static inline int perf_ips_equal(const char *cmd, const u64 *want, size_t n)
{
	char line[512];
	size_t k = 0;
	FILE *pf = popen(cmd, "r");

	assert_non_null(pf);
	while (fgets(line, sizeof(line), pf)) {
		unsigned long long ip;

		if (sscanf(line, " %llx", &ip) != 1)
			perf_unexpected(pf, line, sizeof(line));
		if (k >= n || ip != want[k])
			fprintf(stderr, "perf: instruction %zu at %#llx, expected %#llx\n", k, ip,
				k < n ? want[k] : 0);
		assert_true(k < n);
		assert_int_equal(ip, want[k]);
		k++;
	}
	assert_int_equal(k, n);
	return pclose(pf);
}

#endif
