// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the serial-log extractor.
 *
 * Feeds: the input bytes as a console log (text with "@TPZ-BEGIN", "@TPZ"
 * frame lines and "@TPZ-END" among other output, as the kernel writes them
 * on COM1) to ptd_extract_serial(); a container it returns goes on to
 * ptd_container_parse().
 * Must hold: no out-of-bounds read (the log is not NUL-terminated: the
 * harness hands over an exact-size copy), no UBSan report, no crash, no
 * leak; the result is 0, 1 or 2, and 2 (no framed stream) comes with no bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptd_diags d = { 0 };
	struct ptd_container c;
	u8 *bytes = NULL;
	size_t nbytes = 0;
	int ret;

	ret = ptd_extract_serial((const char *)data, size, &bytes, &nbytes, &d);
	if (ret < 0 || ret > 2 || (ret == 2 && (bytes || nbytes)) || (!bytes && nbytes))
		abort();
	if (ret != 2) {
		ptd_container_parse(&c, "fuzz.log", bytes, nbytes);
		ptd_container_free(&c);
	}
	free(bytes);
	ptd_diags_free(&d);
	return 0;
}
