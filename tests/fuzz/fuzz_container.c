// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the container reader.
 *
 * Feeds: the input bytes as a trace container file to ptd_container_parse(),
 * then the parsed records to ptd_segments_build().
 * Must hold: whatever the bytes (bad magic, bad CRCs, sizes that lie, records
 * out of order, truncation), neither step reads out of bounds, trips UBSan,
 * crashes or leaks; the return value is 0, 1 or 2.
 */
#include <stdint.h>
#include <stdlib.h>
#include "ptdecode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptd_container c;
	struct ptd_segments s;
	int ret;

	ret = ptd_container_parse(&c, "fuzz.tpz", data, size);
	if (ret < 0 || ret > 2)
		abort();
	ptd_segments_build(&c, &s);
	for (size_t i = 0; i < s.n; i++) {
		u32 seq;
		u64 rec_off, file_off;

		if (s.v[i].size)
			ptd_segment_where(&s.v[i], s.v[i].size - 1, &seq, &rec_off, &file_off);
	}
	ptd_segments_free(&s);
	ptd_container_free(&c);
	return 0;
}
