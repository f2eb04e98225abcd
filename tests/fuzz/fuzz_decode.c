// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the whole decode of a container, as `ptdecode --stats
 * --calls` runs it, without an ELF (the code comes from sideband images).
 *
 * Feeds: the input bytes as a trace container. Before parsing, the harness
 * re-seals both CRCs of every record it can walk (magic, a size that fits),
 * so that mutations reach the record bodies, the segments, libipt and the
 * consumers instead of stopping at a CRC mismatch (fuzz_container covers
 * the damaged-record paths). Then: ptd_container_parse(), an image of the
 * container's sideband images and symbols, ptd_ctx_init(), the packet pass
 * (ptd_scan_packets() into the stats), the flow pass (ptd_decode_flow() into
 * the stats and the call stack), the reports (to /dev/null), and every free.
 * Must hold: no crash, no ASan/UBSan report, no leak, whatever the packets,
 * symbols and image addresses say. Inputs above 64 KiB are skipped, to keep
 * the decode of one input short.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"
#include "fuzz_reseal.h"

#define MAX_INPUT	(64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void count_packet(void *ctx, const struct ptd_packet *p, int err)
{
	ptd_stats_packet(ctx, p, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_stats st;
	struct ptd_calls calls;
	struct ptd_consumer cons[2];

	if (size > MAX_INPUT)
		return 0;
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		if (!devnull)
			abort();
	}
	parse_resealed(&c, data, size);
	ptd_image_init(&img);
	ptd_image_add_sideband(&img, &c);
	ptd_image_finish(&img);
	ptd_ctx_init(&x, &c, &img);
	/* loops the trace cannot end are cut sooner: throughput, same paths */
	x.max_stuck = 10000;

	ptd_stats_init(&st, &img);
	ptd_scan_packets(&x, count_packet, &st, true);

	ptd_calls_init(&calls, &img, devnull);
	cons[0] = (struct ptd_consumer){ ptd_stats_event, &st };
	cons[1] = (struct ptd_consumer){ ptd_calls_event, &calls };
	ptd_decode_flow(&x, cons, 2);
	ptd_calls_finish(&calls);
	ptd_stats_finish(&st, &x.segs);

	ptd_stats_print(&st, &c, devnull);
	ptd_write_folded(&calls, devnull);
	ptd_diags_print(&c.diags, 0, c.name, devnull);

	ptd_calls_free(&calls);
	ptd_stats_free(&st);
	ptd_ctx_free(&x);
	ptd_image_free(&img);
	ptd_container_free(&c);
	return 0;
}
