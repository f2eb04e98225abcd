// SPDX-License-Identifier: MIT
/*
 * The floor for decode speed (make bench, decode_bare.sh): libipt's
 * instruction decoder over a container's trace, counting instructions and
 * nothing else. No symbols, no call stack, no statistics, no packet pass:
 * what any decoder built on pt_insn_next() must pay. `ptdecode --stats` is
 * measured against it.
 *
 * The container, its segments and libipt's configuration come from
 * ptdecode's library (the same reader, so both decode the same bytes with
 * the same settings). The image, by --image:
 *   file      libipt's own sections: the ELF's PT_LOAD segments and the
 *             sideband images mapped from the files (the ELF, the container)
 *             with pt_image_add_file(); the decoder reads them from its
 *             mapped-section cache. The default: libipt's fastest path, and
 *             no code of ptdecode's in the way.
 *   sections  ptdecode's image as ptdecode gives it to libipt
 *             (ptd_image_sections(): the same sections, from a memory file)
 *   callback  ptdecode's image behind ptd_image_read(), a call per
 *             instruction (what ptdecode did before; about 30% slower)
 *
 *   ipt-bare [--image file|sections|callback] [--runs N] --elf ELF TRACE
 *
 * Prints "insns=N decode_s=S" (S: the decoding only, the fastest of N runs
 * in this process), so the scripts can check the count against ptdecode's.
 */
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ptdecode.h"

struct bare {
	struct ptd_ctx x;
	struct ptd_image img;
	struct pt_image *ipt;		/* --image file or sections: libipt's sections */
	bool file_image;		/* libipt's sections, not the callback */
	bool own_ipt;			/* --image file: ours to free */
};

/* The ELF's loaded segments as libipt file sections, at @load. Only the
 * bytes in the file: code never lies in the zero-filled tail. */
static int add_elf_sections(struct pt_image *ipt, const char *path, u64 load)
{
	size_t phnum = 0;
	int fd, added = 0;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && !elf_getphdrnum(e, &phnum)) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
				continue;
			if (pt_image_add_file(ipt, path, ph.p_offset, ph.p_filesz, NULL,
					      load + ph.p_vaddr) < 0) {
				fprintf(stderr, "ipt-bare: %s: segment %zu: cannot map\n", path, i);
				continue;
			}
			added++;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return added ? 0 : -1;
}

/* Sideband images: their bytes are in the container file, at the payload's
 * offset (the reader keeps the whole file, so the offset is the pointer's). */
static void add_sideband_sections(struct pt_image *ipt, const struct ptd_container *c,
				  const char *path)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct ptd_record *r = &c->recs[i];

		if (r->type != TPZ_REC_SIDEBAND || r->body.sideband.kind != TPZ_SB_IMAGE ||
		    !r->payload_size)
			continue;
		if (pt_image_add_file(ipt, path, (u64)(r->payload - c->data), r->payload_size, NULL,
				      r->body.sideband.vaddr) < 0)
			fprintf(stderr, "ipt-bare: %s: sideband image at 0x%llx: cannot map\n", path,
				r->body.sideband.vaddr);
	}
}

/* One segment: sync at each PSB in turn, events drained, instructions counted.
 * Not inlined nor cloned, and a name of its own (ptdecode's library has a
 * decode_segment): decode_bare.sh's callgrind counts inside it alone. */
static __attribute__((noinline, noclone)) u64 bare_decode_segment(struct bare *b,
								   const struct ptd_segment *seg)
{
	struct pt_config cfg = b->x.cfg;
	struct pt_insn_decoder *dec;
	u64 n = 0;

	cfg.begin = seg->data;
	cfg.end = seg->data + seg->size;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		abort();
	if (b->file_image)
		pt_insn_set_image(dec, b->ipt);
	else
		pt_image_set_callback(pt_insn_get_image(dec), ptd_image_read, &b->img);

	/* after an error, the next PSB (pt_insn_sync_forward) */
	for (;;) {
		int status = pt_insn_sync_forward(dec);

		if (status < 0)
			break;
		for (;;) {
			struct pt_insn insn;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0 || (status & pts_eos))
				break;
			/* iclass stays ptic_error (0) when no instruction came out */
			insn.iclass = ptic_error;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			n += insn.iclass != ptic_error;
			if (status < 0)
				break;
		}
	}
	pt_insn_free_decoder(dec);
	return n;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "elf", required_argument, NULL, 'e' },
		{ "image", required_argument, NULL, 'i' },
		{ "runs", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *elf = NULL, *trace;
	struct ptd_container c;
	struct bare b = { .file_image = true, .own_ipt = true };
	double best = 0;
	int runs = 1, opt;
	u64 load = 0, insns = 0;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'e': elf = optarg; break;
		case 'i':
			if (strcmp(optarg, "file") && strcmp(optarg, "callback") && strcmp(optarg, "sections"))
				goto usage;
			b.file_image = strcmp(optarg, "callback");
			b.own_ipt = !strcmp(optarg, "file");
			break;
		case 'r': runs = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || !elf || runs < 1)
		goto usage;
	trace = argv[optind];

	ptd_container_load(&c, trace);
	if (c.unusable) {
		fprintf(stderr, "ipt-bare: %s: unusable\n", trace);
		return 2;
	}
	if (c.have_header && (c.header.flags & TPZ_HDR_LOAD_ADDRESS))
		load = c.header.load_address;

	/* ptdecode's image: the callback reads it, and ptd_ctx_init() wants it */
	ptd_image_init(&b.img);
	if (ptd_image_add_elf(&b.img, elf, load, &c.diags)) {
		fprintf(stderr, "ipt-bare: %s: cannot load\n", elf);
		return 2;
	}
	ptd_image_add_sideband(&b.img, &c);
	ptd_ctx_init(&b.x, &c, &b.img);
	if (b.file_image && !b.own_ipt) {
		b.ipt = ptd_image_sections(&b.img);
		if (!b.ipt) {
			fprintf(stderr, "ipt-bare: no memory file for the sections\n");
			return 2;
		}
	} else if (b.file_image) {
		b.ipt = pt_image_alloc("ipt-bare");
		if (!b.ipt || add_elf_sections(b.ipt, elf, load)) {
			fprintf(stderr, "ipt-bare: %s: no sections\n", elf);
			return 2;
		}
		add_sideband_sections(b.ipt, &c, trace);
	}

	for (int r = 0; r < runs; r++) {
		double t0 = now(), t;
		u64 n = 0;

		for (size_t i = 0; i < b.x.segs.n; i++)
			n += bare_decode_segment(&b, &b.x.segs.v[i]);
		t = now() - t0;
		if (!r || t < best)
			best = t;
		if (r && n != insns) {
			fprintf(stderr, "ipt-bare: run %d decoded %llu instructions, run 1 %llu\n", r + 1,
				n, insns);
			return 1;
		}
		insns = n;
	}
	printf("insns=%llu decode_s=%.6f\n", insns, best);

	if (b.own_ipt)
		pt_image_free(b.ipt);
	ptd_ctx_free(&b.x);
	ptd_image_free(&b.img);
	ptd_container_free(&c);
	return 0;

usage:
	fprintf(stderr, "usage: ipt-bare [--image file|sections|callback] [--runs N] --elf ELF TRACE\n");
	return 2;
}
