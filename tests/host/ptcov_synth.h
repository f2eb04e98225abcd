/* SPDX-License-Identifier: MIT */
/*
 * Synthetic code and PT packet streams for the coverage decoder's tests
 * (tests/host/test_ptcov.c), its fuzz harness and seeds (tests/fuzz/
 * fuzz_ptcov.c, gen_seeds.c): two code regions of hand-assembled x86-64 at
 * fixed fake addresses, a read callback that serves them, and a packet
 * builder over ptpk_encode() that tracks the last IP, so that each IP packet
 * can be written with the compression a test asks for.
 *
 * Region A (SYN_A, 0x400000) and region K (SYN_K, a kernel address, reached
 * with sign-extended IPs). Unused bytes of A are INT3 (CC), so a decoder that
 * walks off the intended path meets a change of flow at once.
 *
 *   A+00 31 c0            xor  eax, eax       main
 *   A+02 b9 03 00 00 00   mov  ecx, 3
 *   A+07 ff c0            inc  eax            loop:
 *   A+09 ff c9            dec  ecx
 *   A+0b 75 fa            jnz  A+07
 *   A+0d e8 2e 00 00 00   call A+40           (returns to A+12)
 *   A+12 ff d3            call rbx            TIP
 *   A+14 ff e2            jmp  rdx            TIP
 *   A+40 f3 48 0f ae e0   ptwrite rax         func: PTW (and FUP with FUPonPTW)
 *   A+45 01 c0            add  eax, eax
 *   A+47 c3               ret
 *   A+50 90               nop                 ind: call rbx's target
 *   A+51 c3               ret
 *   A+60 85 c0            test eax, eax       tail: jmp rdx's target
 *   A+62 74 01            jz   A+65
 *   A+64 90               nop
 *   A+65 0f 0b            ud2                 #UD: FUP A+65, TIP handler
 *   A+67 cc               int3                FUP A+67, TIP handler
 *   A+68 ff e0            jmp  rax            TIP
 *   A+70 eb fe            jmp  A+70           a loop with no packet
 *   A+80 48 83 04 24 02   add  qword [rsp], 2 #UD handler: skip the UD2
 *   A+85 48 cf            iretq
 *   A+88 48 cf            iretq               #BP handler
 *   A+90 90               nop
 *   A+91 06               (invalid in 64-bit mode)
 *   A+a0 e8 03 00 00 00   call A+a8           nested calls
 *   A+a5 ff e6            jmp  rsi
 *   A+a8 e8 93 ff ff ff   call A+40
 *   A+ad c3               ret
 *   K+00 90               nop
 *   K+01 90               nop
 *   K+02 ff e1            jmp  rcx
 */
#ifndef TOPAZ_TESTS_PTCOV_SYNTH_H
#define TOPAZ_TESTS_PTCOV_SYNTH_H

#include <string.h>
#include <topaz/pt_packet.h>
#include <topaz/types.h>

#define SYN_A		0x400000ULL
#define SYN_K		0xffffffff81000000ULL
#define SYN_A_SIZE	0x100
#define SYN_K_SIZE	0x10
#define SYN_NOCODE	0x900000ULL	/* nothing is mapped there */

/* tests/fuzz/fuzz_ptcov.c's input: byte 0 the cut, byte 1 these flags */
#define SYN_FUZZ_CODE		0x500000ULL	/* F_CODE: the input's code is here */
#define SYN_FUZZ_CODE_SIZE	64
#define SYN_FUZZ_F_CODE		0x01	/* SYN_FUZZ_CODE_SIZE bytes of code follow */
#define SYN_FUZZ_F_SMALL	0x02	/* the decoder with small limits */
#define SYN_FUZZ_F_LOST		0x04	/* a LOST gap half-way */
#define SYN_FUZZ_F_BITMAP_ONLY	0x08	/* decoded again with the bitmap only (a fuzzer's) */

/* a region of readable code; @bytes NULL means none */
struct syn_region {
	u64 base;
	u8 *bytes;
	size_t size;
};

/* the code the read callback serves (the tests may change the bytes) */
struct syn_code {
	struct syn_region r[3];
	unsigned int reads;	/* calls of the callback: the tests count them */
};

static inline void syn_code_init(struct syn_code *c, u8 *a, u8 *k)
{
	static const struct { u8 off; u8 len; u8 b[8]; } a_parts[] = {
		{ 0x00, 7, { 0x31, 0xc0, 0xb9, 0x03, 0x00, 0x00, 0x00 } },
		{ 0x07, 6, { 0xff, 0xc0, 0xff, 0xc9, 0x75, 0xfa } },
		{ 0x0d, 5, { 0xe8, 0x2e, 0x00, 0x00, 0x00 } },
		{ 0x12, 4, { 0xff, 0xd3, 0xff, 0xe2 } },
		{ 0x40, 8, { 0xf3, 0x48, 0x0f, 0xae, 0xe0, 0x01, 0xc0, 0xc3 } },
		{ 0x50, 2, { 0x90, 0xc3 } },
		{ 0x60, 8, { 0x85, 0xc0, 0x74, 0x01, 0x90, 0x0f, 0x0b, 0xcc } },
		{ 0x68, 2, { 0xff, 0xe0 } },
		{ 0x70, 2, { 0xeb, 0xfe } },
		{ 0x80, 7, { 0x48, 0x83, 0x04, 0x24, 0x02, 0x48, 0xcf } },
		{ 0x88, 2, { 0x48, 0xcf } },
		{ 0x90, 2, { 0x90, 0x06 } },
		{ 0xa0, 7, { 0xe8, 0x03, 0x00, 0x00, 0x00, 0xff, 0xe6 } },
		{ 0xa8, 6, { 0xe8, 0x93, 0xff, 0xff, 0xff, 0xc3 } },
	};
	static const u8 k_code[] = { 0x90, 0x90, 0xff, 0xe1 };

	memset(a, 0xcc, SYN_A_SIZE);
	for (size_t i = 0; i < ARRAY_SIZE(a_parts); i++)
		memcpy(a + a_parts[i].off, a_parts[i].b, a_parts[i].len);
	memset(k, 0xcc, SYN_K_SIZE);
	memcpy(k, k_code, sizeof(k_code));
	memset(c, 0, sizeof(*c));
	c->r[0] = (struct syn_region){ SYN_A, a, SYN_A_SIZE };
	c->r[1] = (struct syn_region){ SYN_K, k, SYN_K_SIZE };
}

/* ptcov_read_fn over the regions: what lies inside one, cut at its end */
static inline size_t syn_read(void *ctx, u64 addr, u8 *buf, size_t len)
{
	struct syn_code *c = ctx;

	c->reads++;
	for (size_t i = 0; i < ARRAY_SIZE(c->r); i++) {
		const struct syn_region *r = &c->r[i];
		size_t n;

		if (!r->bytes || addr < r->base || addr - r->base >= r->size)
			continue;
		n = r->size - (size_t)(addr - r->base);
		n = n < len ? n : len;
		memcpy(buf, r->bytes + (addr - r->base), n);
		return n;
	}
	return 0;
}

/* ------------------------------------------------------------ the packets */

/*
 * A packet stream being written. @ipc: the compression each IP packet asks
 * for (PTPK_IPC_FULL by default); when it cannot rebuild the IP from the
 * last IP, the shortest that can is used. @timing: write timing packets
 * (CBR, TSC, MTC, CYC, TMA) and PADs where syn_timing() is called.
 * @tnt64: write TNT bits as TNT-64 packets. @npackets counts what was written.
 */
struct syn_trace {
	u8 buf[4096];
	size_t len;
	u64 last_ip;
	unsigned int npackets, npsb;
	enum ptpk_ipc ipc;
	bool timing, tnt64;
	unsigned int tick;	/* which timing packet comes next */
	bool overflowed;	/* more than buf holds was written */
};

static inline void syn_init(struct syn_trace *t)
{
	memset(t, 0, sizeof(*t));
	t->ipc = PTPK_IPC_FULL;
}

static inline void syn_put(struct syn_trace *t, const struct ptpk *p)
{
	u8 tmp[PTPK_MAX_SIZE];
	int n = ptpk_encode(p, tmp);

	if (n <= 0 || t->len + (size_t)n > sizeof(t->buf)) {
		t->overflowed = true;
		return;
	}
	memcpy(t->buf + t->len, tmp, (size_t)n);
	t->len += (size_t)n;
	t->npackets++;
	if (p->type == PTPK_PSB) {
		t->npsb++;
		t->last_ip = 0;	/* a PSB resets the decoder's last IP */
	}
}

static inline void syn_type(struct syn_trace *t, enum ptpk_type type)
{
	struct ptpk p = { .type = type };

	syn_put(t, &p);
}

/* an IP packet (TIP, TIP.PGE, TIP.PGD, FUP) to @ip, compressed as t->ipc asks */
static inline void syn_ip(struct syn_trace *t, enum ptpk_type type, u64 ip)
{
	struct ptpk p = { .type = type };

	p.ip.ip = ip;
	p.ip.ipc = t->ipc;
	if (ptpk_ip_reconstruct(p.ip.ipc, ip, t->last_ip) != ip)
		p.ip.ipc = ptpk_ip_compress(ip, t->last_ip);
	syn_put(t, &p);
	t->last_ip = ip;
}

/* an IP packet with its IP left out (a TIP.PGD that does not say where) */
static inline void syn_ip_suppressed(struct syn_trace *t, enum ptpk_type type)
{
	struct ptpk p = { .type = type };

	p.ip.ipc = PTPK_IPC_SUPPRESSED;
	syn_put(t, &p);
}

/* an IP packet to @ip with exactly the compression @ipc (no fallback) */
static inline void syn_ip_as(struct syn_trace *t, enum ptpk_type type, enum ptpk_ipc ipc, u64 ip)
{
	struct ptpk p = { .type = type };

	p.ip.ip = ip;
	p.ip.ipc = ipc;
	syn_put(t, &p);
	t->last_ip = ptpk_ip_reconstruct(ipc, ip, t->last_ip);
}

/* TNT bits, oldest first: "TTN" is taken, taken, not taken */
static inline void syn_tnt(struct syn_trace *t, const char *bits)
{
	struct ptpk p = { .type = t->tnt64 ? PTPK_TNT64 : PTPK_TNT8 };
	size_t n = strlen(bits);

	p.tnt.nbits = (u8)n;
	for (size_t i = 0; i < n; i++)
		p.tnt.bits = p.tnt.bits << 1 | (bits[i] == 'T');
	syn_put(t, &p);
}

static inline void syn_mode64(struct syn_trace *t)
{
	struct ptpk p = { .type = PTPK_MODE_EXEC, .exec = { .csl = true } };

	syn_put(t, &p);
}

/* a timing packet or a PAD, a different one each call, when t->timing */
static inline void syn_timing(struct syn_trace *t)
{
	struct ptpk p;

	if (!t->timing)
		return;
	switch (t->tick++ % 6) {
	case 0: p = (struct ptpk){ .type = PTPK_CBR, .cbr = 24 }; break;
	case 1: p = (struct ptpk){ .type = PTPK_TSC, .tsc = 0x123456789aULL + t->tick }; break;
	case 2: p = (struct ptpk){ .type = PTPK_MTC, .mtc = (u8)t->tick }; break;
	case 3: p = (struct ptpk){ .type = PTPK_CYC, .cyc = 3ULL * t->tick }; break;
	case 4: p = (struct ptpk){ .type = PTPK_TMA, .tma = { 0x1234, 0x56 } }; break;
	default: p = (struct ptpk){ .type = PTPK_PAD }; break;
	}
	syn_put(t, &p);
}

/* PSB+: PSB, a FUP to @ip unless 0 (tracing on), MODE.Exec, PSBEND */
static inline void syn_psb(struct syn_trace *t, u64 ip)
{
	syn_type(t, PTPK_PSB);
	syn_timing(t);
	if (ip)
		syn_ip(t, PTPK_FUP, ip);
	syn_mode64(t);
	syn_timing(t);
	syn_type(t, PTPK_PSBEND);
}

/* a new stream: PSB+ with tracing off, then TIP.PGE at @ip */
static inline void syn_start(struct syn_trace *t, u64 ip)
{
	syn_init(t);
	syn_psb(t, 0);
	syn_ip(t, PTPK_TIP_PGE, ip);
}

/* a PTWRITE's packet; with @fup the FUP of FUPonPTW after it, at @ip */
static inline void syn_ptw(struct syn_trace *t, u64 payload, bool fup, u64 ip)
{
	struct ptpk p = { .type = PTPK_PTW, .ptw = { .plc = 1, .ip = fup, .payload = payload } };

	syn_put(t, &p);
	if (fup)
		syn_ip(t, PTPK_FUP, ip);
}

/*
 * The walk through every kind of flow of region A and into K (the tests
 * work out its blocks and edges by hand):
 *   enable at main; the loop's jnz taken twice, not taken; the direct call,
 *   func's PTWRITE, its RET compressed (a taken bit); call rbx by TIP, its
 *   RET by TIP; jmp rdx by TIP; jz taken (@jz_taken; else not taken: the
 *   mutation); the UD2's #UD (FUP, TIP) and its handler's IRETQ; the INT3
 *   (FUP, TIP) and its handler's IRETQ; jmp rax into region K by TIP; jmp
 *   rcx leaving the filter (TIP.PGD to its target, where no code is).
 * @mid_psb: a PSB+ (FUP at the loop's start) between the loop's first and
 * second bits; @fup_on_ptw: the PTWRITE's PTW carries a FUP.
 */
static inline void syn_walk(struct syn_trace *t, bool jz_taken, bool mid_psb, bool fup_on_ptw)
{
	syn_psb(t, 0);
	syn_mode64(t);
	syn_ip(t, PTPK_TIP_PGE, SYN_A);
	syn_timing(t);
	syn_tnt(t, "T");
	if (mid_psb)
		syn_psb(t, SYN_A + 0x07);
	syn_tnt(t, "TN");
	syn_timing(t);
	syn_ptw(t, 0x1122334455667788ULL, fup_on_ptw, SYN_A + 0x40);
	syn_tnt(t, "T");			/* func's RET, compressed */
	syn_ip(t, PTPK_TIP, SYN_A + 0x50);	/* call rbx */
	syn_timing(t);
	syn_ip(t, PTPK_TIP, SYN_A + 0x14);	/* its RET */
	syn_ip(t, PTPK_TIP, SYN_A + 0x60);	/* jmp rdx */
	syn_tnt(t, jz_taken ? "T" : "N");
	syn_ip(t, PTPK_FUP, SYN_A + 0x65);	/* #UD at the UD2 */
	syn_timing(t);
	syn_ip(t, PTPK_TIP, SYN_A + 0x80);
	syn_ip(t, PTPK_TIP, SYN_A + 0x67);	/* IRETQ past it */
	syn_ip(t, PTPK_FUP, SYN_A + 0x67);	/* #BP at the INT3 */
	syn_ip(t, PTPK_TIP, SYN_A + 0x88);
	syn_ip(t, PTPK_TIP, SYN_A + 0x68);	/* IRETQ */
	syn_timing(t);
	syn_ip(t, PTPK_TIP, SYN_K);		/* jmp rax */
	syn_ip(t, PTPK_TIP_PGD, SYN_K + 0x1000);	/* jmp rcx out of the filter */
	syn_timing(t);
}

#endif
