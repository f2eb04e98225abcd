// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the perf.data export (ptdecode --perf-data).
 *
 * Feeds: the input bytes as a trace container, both CRCs of every record
 * resealed (fuzz_reseal.h), then ptd_container_parse(), ptd_segments_build()
 * and ptd_write_perf_data() into a scratch folder, without an ELF (the code
 * is the sideband images, written beside the perf.data as ELF files with
 * the sideband's symbols).
 * Must hold: no crash, no ASan/UBSan report, no leak; and when the export
 * succeeds, a file perf can read (check()): the header's sections and every
 * record inside the file, AUXTRACE_INFO first, with the fields perf divides
 * by (time_mult, the maximum non-turbo ratio) not 0 and a filter string that
 * is NUL-terminated and names only files perf was given, with no space or
 * comma in them; MMAP file names that exist; the AUXTRACE queues numbered in
 * order and each in the index, each decoding without an error from its
 * first PSB on and, when the attr enables TSC packets, with a TSC packet
 * before its flow (perf crashes on bytes that are no packets, and on a
 * timed queue whose flow starts without a time). Real perf runs on the exports afterwards
 * (tests/fuzz/perf_corpus.sh). Inputs above 64 KiB are skipped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <intel-pt.h>
#include "ptdecode.h"
#include "fuzz_reseal.h"

#define MAX_INPUT	(64u << 10)
#define MAX_MMAPS	64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], path[96];

#define need(cond) do { if (!(cond)) { fprintf(stderr, "perf.data: %s\n", #cond); abort(); } } while (0)

static u64 rd64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Can perf take @q (@n bytes of a queue)? From its first PSB on, every packet
 * decodes (perf 6.1 crashes on some bytes that are no packets), and when
 * @timed a TSC packet comes before the flow does (perf crashes walking
 * code with no time).
 */
static bool queue_ok(const u8 *q, size_t n, bool timed)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	bool tsc = false;
	int r = -pte_eos;

	pt_config_init(&cfg);
	cfg.begin = (u8 *)q;
	cfg.end = (u8 *)q + n;
	d = pt_pkt_alloc_decoder(&cfg);
	need(d);
	if (pt_pkt_sync_forward(d) < 0) {
		pt_pkt_free_decoder(d);
		return true;
	}
	/* the flow must not start before the TSC (only PSB+ packets before it) */
	while ((r = pt_pkt_next(d, &p, sizeof(p))) >= 0) {
		tsc |= p.type == ppt_tsc;
		if (!tsc && timed && p.type != ppt_psb && p.type != ppt_pad && p.type != ppt_tma &&
		    p.type != ppt_cbr && p.type != ppt_pip && p.type != ppt_mode &&
		    p.type != ppt_vmcs && p.type != ppt_mnt && p.type != ppt_fup)
			break;
	}
	pt_pkt_free_decoder(d);
	return r == -pte_eos && (tsc || !timed);
}

/* Every "@FILE" of the filter string @s is one of the @n MMAP names. */
static void check_filter(const char *s, char *const *mmaps, size_t n)
{
	for (const char *at = strchr(s, '@'); at; at = strchr(at + 1, '@')) {
		size_t len = strcspn(at + 1, " ,");
		bool known = false;

		for (size_t i = 0; i < n; i++)
			known |= strlen(mmaps[i]) == len && !memcmp(mmaps[i], at + 1, len);
		need(known);
		need(at[1 + len] == 0 || at[1 + len] == ',');
	}
}

static void check(const u8 *f, size_t len)
{
	u64 data_off, data_size, attrs_off, attrs_size, feat, nq = 0, off, idx_n;
	struct perf_event_attr attr;
	char *mmaps[MAX_MMAPS];
	const char *filter = NULL;
	size_t nmmaps = 0, k = 0;
	u64 aux_off[256];
	bool timed;

	need(len >= 104 && !memcmp(f, "PERFILE2", 8) && rd64(f + 8) == 104);
	need(rd64(f + 16) == sizeof(attr) + 16);
	attrs_off = rd64(f + 24);
	attrs_size = rd64(f + 32);
	data_off = rd64(f + 40);
	data_size = rd64(f + 48);
	need(attrs_size == rd64(f + 16) && attrs_off <= len && attrs_size <= len - attrs_off);
	need(data_off <= len && data_size <= len - data_off);
	memcpy(&attr, f + attrs_off, sizeof(attr));
	need(attr.type == 8 && attr.size == sizeof(attr));
	timed = attr.config & (1ULL << 10);

	for (off = data_off; off < data_off + data_size;) {
		struct perf_event_header h;

		need(data_off + data_size - off >= sizeof(h));
		memcpy(&h, f + off, sizeof(h));
		need(h.size >= sizeof(h) && h.size % 8 == 0 && h.size <= data_off + data_size - off);
		if (off == data_off) {
			/* AUXTRACE_INFO: type, then priv[] (tools/perf/util/intel-pt.h) */
			const u8 *priv = f + off + 16;
			u64 flen;

			need(h.type == 70 && h.size >= 16 + 17 * 8 && rd64(f + off + 8) == 1);
			need(rd64(priv + 2 * 8) != 0);		/* time_mult */
			need(!timed || rd64(priv + 4 * 8) == 1);	/* cap_user_time_zero */
			need((u32)rd64(priv + 15 * 8) != 0);	/* max non-turbo ratio */
			flen = rd64(priv + 16 * 8);
			if (flen) {
				need(flen < h.size && ((flen + 1 + 7) & ~7ULL) <= h.size - 16 - 17 * 8u);
				filter = (const char *)priv + 17 * 8;
				need(strlen(filter) == flen);
			}
		} else if (h.type == PERF_RECORD_MMAP) {
			const char *name = (const char *)f + off + 8 + 32;

			need(h.size > 8 + 32 + 32);
			need(memchr(name, 0, h.size - 8 - 32 - 32));
			need(name[0] == '/' && !access(name, R_OK));
			need(nmmaps < MAX_MMAPS);
			mmaps[nmmaps++] = strdup(name);
		} else if (h.type == 71) {
			u64 qsize = rd64(f + off + 8);
			u32 idx;

			memcpy(&idx, f + off + 32, 4);
			need(h.size == 48 && qsize % 8 == 0 && idx == nq);
			need(qsize <= data_off + data_size - off - 48);
			need(queue_ok(f + off + 48, qsize, timed));
			need(nq < 256);
			aux_off[nq++] = off;
			off += qsize;
		}
		off += h.size;
	}
	need(off == data_off + data_size);
	if (filter)
		check_filter(filter, mmaps, nmmaps);

	/* features: the section table after the data, the AUXTRACE index last */
	feat = rd64(f + 72);
	need(feat & (1ULL << 18));
	off = data_off + data_size + (u64)__builtin_popcountll(feat) * 16 - 16;
	need(off + 16 <= len);
	need(rd64(f + off) + rd64(f + off + 8) <= len && rd64(f + off + 8) >= 8);
	off = rd64(f + off);
	idx_n = rd64(f + off);
	need(idx_n == nq && off + 8 + 16 * idx_n <= len);
	for (k = 0; k < idx_n; k++)
		need(rd64(f + off + 8 + 16 * k) == aux_off[k] && rd64(f + off + 16 + 16 * k) == 48);
	for (k = 0; k < nmmaps; k++) {
		unlink(mmaps[k]);	/* the images: each input's own */
		free(mmaps[k]);
	}
}

/* The file at @path, whole (malloc'd); aborts when it cannot be read. */
static u8 *read_all(const char *file, size_t *len)
{
	FILE *fp = fopen(file, "rb");
	u8 *b = NULL;
	long n;

	need(fp && !fseek(fp, 0, SEEK_END) && (n = ftell(fp)) >= 0 && !fseek(fp, 0, SEEK_SET));
	b = malloc((size_t)n + 1);
	need(b && fread(b, 1, (size_t)n, fp) == (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return b;
}

static void cleanup(void)
{
	char images[128];

	snprintf(images, sizeof(images), "%s.images", path);
	unlink(path);
	rmdir(images);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptd_container c;
	struct ptd_segments s;
	struct ptd_image img;
	size_t len;

	if (size > MAX_INPUT)
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_perfdata-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/perf.data", dir);
		atexit(cleanup);
	}
	parse_resealed(&c, data, size);
	ptd_segments_build(&c, &s);
	ptd_image_init(&img);	/* the sideband's symbols go into the images' ELF files */
	ptd_image_add_sideband(&img, &c);
	ptd_image_finish(&img);
	unlink(path);
	if (!ptd_write_perf_data(&c, &s, &img, NULL, 0, path)) {
		u8 *f = read_all(path, &len);

		check(f, len);
		free(f);
	}
	ptd_segments_free(&s);
	ptd_image_free(&img);
	ptd_container_free(&c);
	return 0;
}
