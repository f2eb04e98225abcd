// SPDX-License-Identifier: MIT
/*
 * The seed corpora of the fuzz harnesses (make fuzz-seeds), written by the
 * kernel's own container writer and serial framer (kernel/tracing/
 * trace_writer.c, from the hosted libtopaz.a) around PT packets from
 * libipt's encoder:
 *
 *   DIR/fuzz_container/  DIR/fuzz_decode/   small containers (.tpz)
 *   DIR/fuzz_serial/                        console logs framing some (.log)
 *
 *   gen_seeds DIR
 *
 * The code is the demo program of tests/host/test_trace_decode.c (main, foo,
 * bar at 0x401000, with symbols); the containers cover one and two CPUs,
 * contiguous and lost chunks, a stop, most packet types, a real CPU's errata
 * path, and damage (a bad CRC, a cut file). Every seed stays below 4 KiB.
 *
 *   DIR/fuzz_ptcov/                         raw packet streams over
 *                                           ptcov_synth.h's code
 *   DIR/fuzz_symbols/                       small ELF files (sym_elf.h):
 *                                           whole, each kind of damaged
 *                                           symbol table, segments that
 *                                           claim more than the file
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <intel-pt.h>
#include <topaz/trace_writer.h>
#include "../host/pt_packets.h"
#include "../host/ptcov_synth.h"
#include "../host/sym_elf.h"

#define BASE	0x401000ull
#define MAX_SEED 4096

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen_seeds: %s\n", what);
	exit(1);
}

/* ------------------------------------------------------------ buffers */

struct buf {
	u8 p[8192];
	size_t len;
};

static int buf_write(void *ctx, const void *data, size_t n)
{
	struct buf *b = ctx;

	if (b->len + n > sizeof(b->p))
		die("seed too large");
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

static void buf_text(void *ctx, const char *s, size_t n)
{
	buf_write(ctx, s, n);
}

static void buf_puts(struct buf *b, const char *s)
{
	buf_write(b, s, strlen(s));
}

static void save(const char *harness, const char *name, const void *data, size_t n)
{
	char path[512];
	FILE *f;

	if (n > MAX_SEED)
		die("a seed is above 4 KiB");
	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("cannot create a corpus directory");
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f))
		die("cannot write a seed");
	printf("  %s/%s: %zu bytes\n", harness, name, n);
}

/* A container seed goes to both container corpora. */
static void save_tpz(const char *name, const struct buf *b)
{
	save("fuzz_container", name, b->p, b->len);
	save("fuzz_decode", name, b->p, b->len);
}

/* ------------------------------------------------------------ code */

/*
 * main:  mov ecx, 3            foo:  call bar          bar:  test ecx, 1
 *  .l:   call foo                    ret                     jz .s
 *        dec ecx                                             nop
 *        jnz .l                                        .s:   ret
 *        call bar
 *        jmp rax
 */
static const u8 code[0x40] = {
	[0x00] = 0xb9, 0x03, 0x00, 0x00, 0x00,
	[0x05] = 0xe8, 0x16, 0x00, 0x00, 0x00,
	[0x0a] = 0xff, 0xc9,
	[0x0c] = 0x75, 0xf7,
	[0x0e] = 0xe8, 0x1d, 0x00, 0x00, 0x00,
	[0x13] = 0xff, 0xe0,
	[0x15 ... 0x1f] = 0xcc,
	[0x20] = 0xe8, 0x0b, 0x00, 0x00, 0x00,
	[0x25] = 0xc3,
	[0x26 ... 0x2f] = 0xcc,
	[0x30] = 0xf7, 0xc1, 0x01, 0x00, 0x00, 0x00,
	[0x36] = 0x74, 0x01,
	[0x38] = 0x90,
	[0x39] = 0xc3,
	[0x3a ... 0x3f] = 0xcc,
};

/* ------------------------------------------------------------ packets */

struct enc {
	u8 buf[1024];
	struct pt_encoder *e;
};

static void enc_init(struct enc *x)
{
	struct pt_config cfg;

	pt_config_init(&cfg);
	cfg.begin = x->buf;
	cfg.end = x->buf + sizeof(x->buf);
	x->e = pt_alloc_encoder(&cfg);
	if (!x->e)
		die("pt_alloc_encoder");
}

static void put(struct enc *x, struct pt_packet p)
{
	if (pt_enc_next(x->e, &p) <= 0)
		die("pt_enc_next");
}

static void put_type(struct enc *x, enum pt_packet_type t)
{
	put(x, (struct pt_packet){ .type = t });
}

static void put_mode64(struct enc *x)
{
	put(x, pkt_mode64());
}

static void put_ip(struct enc *x, enum pt_packet_type t, enum pt_ip_compression ipc, u64 ip)
{
	put(x, pkt_ip(t, ipc, ip));
}

static void put_tnt(struct enc *x, enum pt_packet_type t, const char *bits)
{
	put(x, pkt_tnt(t, bits));
}

static size_t enc_done(struct enc *x, u8 *out)
{
	uint64_t off;	/* libipt's type: u64 is unsigned long long */

	pt_enc_get_offset(x->e, &off);
	pt_free_encoder(x->e);
	memcpy(out, x->buf, (size_t)off);
	return (size_t)off;
}

/* The demo run: enabled at main, disabled by the jmp rax. */
static size_t trace_demo(u8 *out)
{
	struct enc x;

	enc_init(&x);
	put_type(&x, ppt_psb);
	put_type(&x, ppt_psbend);
	put_mode64(&x);
	put_ip(&x, ppt_tip_pge, pt_ipc_sext_48, BASE);
	put_tnt(&x, ppt_tnt_8, ".!!!!!");
	put_tnt(&x, ppt_tnt_8, "!!.!!.");
	put_tnt(&x, ppt_tnt_8, "!!");
	put_ip(&x, ppt_tip_pgd, pt_ipc_update_16, 0x402000);
	return enc_done(&x, out);
}

/* Most packet types, timing included: not a consistent run, for coverage. */
static size_t trace_zoo(u8 *out)
{
	struct enc x;
	struct pt_packet p;

	enc_init(&x);
	put_type(&x, ppt_psb);
	p = (struct pt_packet){ .type = ppt_tsc };
	p.payload.tsc.tsc = 0x123456789aull;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_tma };
	p.payload.tma.ctc = 0x12;
	p.payload.tma.fc = 0x3;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_cbr };
	p.payload.cbr.ratio = 0x20;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_pip };
	p.payload.pip.cr3 = 0x1000;
	put(&x, p);
	put_mode64(&x);
	p = (struct pt_packet){ .type = ppt_vmcs };
	p.payload.vmcs.base = 0x5000;
	put(&x, p);
	put_type(&x, ppt_psbend);
	put_ip(&x, ppt_tip_pge, pt_ipc_sext_48, BASE);
	p = (struct pt_packet){ .type = ppt_mtc };
	p.payload.mtc.ctc = 0x13;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_cyc };
	p.payload.cyc.value = 0x21;
	put(&x, p);
	put_tnt(&x, ppt_tnt_64, ".!!!!!!!.!!.");
	p = (struct pt_packet){ .type = ppt_ptw };
	p.payload.ptw.plc = 1;
	p.payload.ptw.payload = 0xdeadbeefcafeull;
	p.payload.ptw.ip = 1;
	put(&x, p);
	put_ip(&x, ppt_fup, pt_ipc_update_16, BASE + 0x30);
	put_ip(&x, ppt_tip, pt_ipc_update_16, BASE + 0x20);
	p = (struct pt_packet){ .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = 1;
	put(&x, p);
	put_ip(&x, ppt_fup, pt_ipc_update_16, BASE + 0x25);
	p = (struct pt_packet){ .type = ppt_exstop };
	p.payload.exstop.ip = 1;
	put(&x, p);
	put_ip(&x, ppt_fup, pt_ipc_update_16, BASE + 0x25);
	p = (struct pt_packet){ .type = ppt_mwait };
	p.payload.mwait.hints = 0x10;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_pwre };
	p.payload.pwre.state = 1;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_pwrx };
	p.payload.pwrx.last = 1;
	p.payload.pwrx.deepest = 2;
	p.payload.pwrx.interrupt = 1;
	put(&x, p);
	p = (struct pt_packet){ .type = ppt_mnt };
	p.payload.mnt.payload = 0x42;
	put(&x, p);
	put_type(&x, ppt_ovf);
	put_ip(&x, ppt_fup, pt_ipc_sext_48, BASE + 0x0a);
	put_tnt(&x, ppt_tnt_8, "!.");
	put_type(&x, ppt_pad);
	put_ip(&x, ppt_tip_pgd, pt_ipc_suppressed, 0);
	put_type(&x, ppt_stop);
	return enc_done(&x, out);
}

/* ------------------------------------------------------------ containers */

static void sample_header(struct tpz_header *h, bool model)
{
	memset(h, 0, sizeof(*h));
	h->version_major = TPZ_FORMAT_MAJOR;
	h->version_minor = TPZ_FORMAT_MINOR;
	memcpy(h->vendor, "GenuineIntel", 12);
	strcpy(h->topaz_version, "fuzz-seed");
	h->flags = model ? TPZ_HDR_PT_MODEL : 0;
	h->family = 6;
	h->model = model ? 0 : 0x55;	/* a real CPU: libipt's errata path */
	h->stepping = 4;
	h->ncpus = 2;
	h->rtit_ctl = 0x2001 | (3ull << 14);	/* TraceEn, BranchEn, MTCFreq 3 */
	h->leaf15[0] = 2;
	h->leaf15[1] = 168;
	h->nom_freq = 0x20;
	h->output = TPZ_OUT_TOPA;
	h->buffer_size = 4096;
}

static void demo_sideband(struct trace_writer *w)
{
	static const char names[] = "main\0foo\0bar";
	struct tpz_sym syms[] = { { 0x00, 0x15, 0 }, { 0x20, 0x06, 5 }, { 0x30, 0x0a, 9 } };

	if (trace_write_image(w, "demo", BASE, code, sizeof(code)) ||
	    trace_write_symbols(w, "demo", BASE, syms, 3, names, sizeof(names)))
		die("sideband");
}

struct piece {
	u32 cpu, flags;
	u64 offset, lost;
	const u8 *data;
	size_t size;
};

static void container(struct buf *b, bool model, bool sideband, const struct piece *pieces,
		      size_t n, u64 lost_at_end)
{
	struct trace_sink sink = { buf_write, b };
	struct trace_writer w;
	struct tpz_header h;
	struct trace_totals t = { .pmis = 1, .lost_at_end = lost_at_end, .end_tsc = 1000 };

	b->len = 0;
	sample_header(&h, model);
	trace_writer_init(&w, &sink);
	if (trace_write_header(&w, &h))
		die("header");
	if (sideband)
		demo_sideband(&w);
	for (size_t i = 0; i < n; i++) {
		struct trace_chunk c = { .cpu = pieces[i].cpu, .flags = pieces[i].flags,
					 .offset = pieces[i].offset, .lost = pieces[i].lost,
					 .tsc = 100 + i };

		if (trace_write_trace(&w, &c, pieces[i].data, pieces[i].size))
			die("trace");
	}
	if (trace_write_trailer(&w, &t))
		die("trailer");
}

/* The container @b framed as the kernel writes it on COM1, among console text. */
static void frame(struct buf *log, const struct buf *b, const char *before, const char *after)
{
	struct trace_framer f;

	log->len = 0;
	buf_puts(log, before);
	trace_framer_begin(&f, buf_text, log);
	trace_framer_write(&f, b->p, b->len);
	trace_framer_end(&f);
	buf_puts(log, after);
}

/* Drop line @drop (1-based) and damage one character of line @damage. */
static void damage_lines(struct buf *log, unsigned int drop, unsigned int damage)
{
	struct buf out = { .len = 0 };
	unsigned int line = 1;
	size_t start = 0;

	for (size_t i = 0; i < log->len; i++) {
		if (log->p[i] != '\n')
			continue;
		if (line != drop) {
			size_t at = out.len;

			buf_write(&out, log->p + start, i + 1 - start);
			if (line == damage && i - start > 20)
				out.p[at + 20] ^= 0x01;
		}
		line++;
		start = i + 1;
	}
	buf_write(&out, log->p + start, log->len - start);
	*log = out;
}

static void to_crlf(struct buf *log)
{
	struct buf out = { .len = 0 };

	for (size_t i = 0; i < log->len; i++) {
		if (log->p[i] == '\n')
			buf_write(&out, "\r", 1);
		buf_write(&out, log->p + i, 1);
	}
	*log = out;
}

/* ------------------------------------------------------------ fuzz_ptcov */

/* One fuzz_ptcov input: the cut, the flags, @code if F_CODE, the stream. */
static void save_ptcov(const char *name, u8 cut, u8 flags, const u8 *code64,
		       const struct syn_trace *t)
{
	static u8 in[MAX_SEED];
	size_t n = 0;

	if (t->overflowed)
		die("a ptcov seed overflowed its buffer");
	in[n++] = cut;
	in[n++] = flags;
	if (flags & SYN_FUZZ_F_CODE) {
		memcpy(in + n, code64, SYN_FUZZ_CODE_SIZE);
		n += SYN_FUZZ_CODE_SIZE;
	}
	if (n + t->len > sizeof(in))
		die("a ptcov seed is above 4 KiB");
	memcpy(in + n, t->buf, t->len);
	save("fuzz_ptcov", name, in, n + t->len);
}

/*
 * The walk of ptcov_synth.h whole, in pieces with every packet kind and a
 * loss, with the small decoder, and decoded again with the bitmap only; the
 * nested calls; the loop without packets; and code from the input: dec ecx;
 * jnz back; jmp rax, at SYN_FUZZ_CODE (also 100 times round, bitmap only).
 */
static void ptcov_seeds(void)
{
	static const u8 own[SYN_FUZZ_CODE_SIZE] = { 0xff, 0xc9, 0x75, 0xfc, 0xff, 0xe0 };
	static struct syn_trace t;

	syn_init(&t);
	syn_walk(&t, true, false, false);
	save_ptcov("walk.bin", 0, 0, NULL, &t);

	syn_init(&t);
	syn_walk(&t, true, false, false);
	save_ptcov("walk-bitmap-only.bin", 5, SYN_FUZZ_F_BITMAP_ONLY, NULL, &t);

	/* the input's loop, 100 times round, through the bitmap-only walk's chunks */
	syn_start(&t, SYN_FUZZ_CODE);
	t.tnt64 = true;
	syn_tnt(&t, "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT");
	syn_tnt(&t, "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT");
	syn_tnt(&t, "TTTTTN");
	syn_ip(&t, PTPK_TIP_PGD, SYN_NOCODE);
	save_ptcov("loop-bitmap-only.bin", 0, SYN_FUZZ_F_CODE | SYN_FUZZ_F_BITMAP_ONLY, own, &t);

	syn_init(&t);
	t.timing = true;
	t.ipc = PTPK_IPC_UPDATE_16;
	syn_walk(&t, false, true, true);
	save_ptcov("walk-pieces-lost.bin", 7, SYN_FUZZ_F_LOST, NULL, &t);

	syn_init(&t);
	t.tnt64 = true;
	t.ipc = PTPK_IPC_SEXT_48;
	syn_walk(&t, true, false, true);
	save_ptcov("walk-small.bin", 3, SYN_FUZZ_F_SMALL, NULL, &t);

	syn_init(&t);
	syn_psb(&t, 0);
	syn_ip(&t, PTPK_TIP_PGE, SYN_A + 0xa0);
	syn_tnt(&t, "TT");
	syn_type(&t, PTPK_OVF);
	syn_ip_as(&t, PTPK_FUP, PTPK_IPC_FULL, SYN_A + 0x12);
	syn_ip(&t, PTPK_TIP, SYN_A + 0x90);	/* bad bytes there */
	syn_psb(&t, SYN_A + 0x70);		/* the loop without packets */
	syn_tnt(&t, "T");
	save_ptcov("nested-ovf-bad-loop.bin", 0, 0, NULL, &t);

	syn_init(&t);
	syn_psb(&t, 0);
	syn_ip(&t, PTPK_TIP_PGE, SYN_FUZZ_CODE);
	syn_tnt(&t, "TTTN");
	syn_ip(&t, PTPK_TIP, SYN_A + 0x60);
	syn_tnt(&t, "N");
	syn_ip(&t, PTPK_FUP, SYN_A + 0x65);
	syn_ip(&t, PTPK_TIP, SYN_A + 0x80);
	syn_ip(&t, PTPK_TIP, SYN_A + 0x67);
	syn_ip_suppressed(&t, PTPK_TIP_PGD);
	save_ptcov("own-code.bin", 0, SYN_FUZZ_F_CODE, own, &t);
}

/* ------------------------------------------------------------ fuzz_symbols */

/*
 * The ELF of sym_elf.h whole and with each damage; segments whose memory
 * size is a header's claim (0x230002f8 bytes; six of 1 GiB), and 70 that
 * each name the whole 4 KiB file.
 */
static void symbols_seeds(void)
{
	static unsigned char file[MAX_SEED];
	struct sym_elf s;
	char name[64];

	sym_elf_init(&s);
	sym_elf_layout(&s, file);
	save("fuzz_symbols", "small.debug", file, SYM_ELF_SIZE);
	for (int k = 0; k < SYM_ELF_NDAMAGE; k++) {
		sym_elf_init(&s);
		sym_elf_damage(&s, (enum sym_elf_damage)k);
		sym_elf_layout(&s, file);
		snprintf(name, sizeof(name), "damaged-%s.debug", sym_elf_damage_name[k]);
		save("fuzz_symbols", name, file, SYM_ELF_SIZE);
	}
	sym_elf_segments(file, 1024, 1, 0x100, 0x100, 0x230002f8);
	save("fuzz_symbols", "segment-fill.elf", file, 1024);
	sym_elf_segments(file, 1024, 6, 0x200, 0x100, 1u << 30);
	save("fuzz_symbols", "segments-6x1g.elf", file, 1024);
	sym_elf_segments(file, MAX_SEED, 70, 0, MAX_SEED, MAX_SEED);
	save("fuzz_symbols", "segments-whole-file.elf", file, MAX_SEED);
}

int main(int argc, char **argv)
{
	static struct buf b, log, demo;
	u8 run[256], zoo[512], psb[32];
	size_t nrun, nzoo, npsb;
	struct enc x;

	if (argc != 2)
		die("usage: gen_seeds DIR");
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST)
		die("cannot create DIR");
	nrun = trace_demo(run);
	nzoo = trace_zoo(zoo);
	enc_init(&x);
	for (int i = 0; i < 3; i++)
		put_type(&x, ppt_pad);
	put_type(&x, ppt_psb);
	put_type(&x, ppt_psbend);
	npsb = enc_done(&x, psb);

	/* 1: header, a PSB+PSBEND chunk, trailer; no code */
	container(&b, true, false, (struct piece[]){ { .data = psb, .size = npsb } }, 1, 0);
	save_tpz("minimal.tpz", &b);

	/* 2: the demo run, one chunk, image and symbols */
	container(&demo, true, true, (struct piece[]){ { .data = run, .size = nrun } }, 1, 0);
	save_tpz("demo.tpz", &demo);

	/* 3: the demo run in three contiguous chunks, then on CPU 1: a chunk that
	 * stopped (TRUNCATED), then one after 8 lost bytes, and bytes lost at the
	 * end; a real CPU (errata) */
	container(&b, false, true, (struct piece[]){
			{ .data = run, .size = 10 },
			{ .offset = 10, .data = run + 10, .size = 7 },
			{ .offset = 17, .data = run + 17, .size = nrun - 17 },
			{ .cpu = 1, .flags = TPZ_TRACE_TRUNCATED, .data = run, .size = nrun - 3 },
			{ .cpu = 1, .flags = TPZ_TRACE_LOST, .offset = nrun + 8, .lost = 8,
			  .data = run, .size = nrun },
		}, 5, 16);
	save_tpz("gaps.tpz", &b);

	/* 4: most packet types */
	container(&b, true, true, (struct piece[]){ { .data = zoo, .size = nzoo } }, 1, 0);
	save_tpz("packets.tpz", &b);

	/* 5: damaged: the demo with a flipped byte in the trace payload (payload
	 * CRC mismatch) and the last 30 bytes cut off (no trailer) */
	b = demo;
	b.p[b.len - 64 - 24 - 10] ^= 0x40;
	b.len -= 30;
	save_tpz("damaged.tpz", &b);

	/* serial logs */
	frame(&log, &demo, "topaz: booting\nprintk: tracing on\n", "topaz: shutdown\n");
	save("fuzz_serial", "demo.log", log.p, log.len);

	container(&b, true, false, (struct piece[]){ { .data = psb, .size = npsb } }, 1, 0);
	frame(&log, &b, "[    0.001] console prefix ", "");
	to_crlf(&log);
	save("fuzz_serial", "minimal-crlf.log", log.p, log.len);

	frame(&log, &demo, "boot\n", "after the end\n@TPZ-BEGIN 2\n");
	damage_lines(&log, 5, 8);
	save("fuzz_serial", "damaged.log", log.p, log.len);

	ptcov_seeds();
	symbols_seeds();
	return 0;
}
