/* SPDX-License-Identifier: MIT */
/*
 * Shared by the harnesses that take a trace container (fuzz_decode,
 * fuzz_perfdata): both CRCs of every record resealed, so that mutations
 * reach what the records say instead of stopping at a CRC mismatch
 * (fuzz_container covers the damaged-record paths).
 */
#ifndef TOPAZ_FUZZ_RESEAL_H
#define TOPAZ_FUZZ_RESEAL_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

/* Recompute both CRCs of each record found by walking record sizes from 0. */
static inline void reseal(u8 *p, size_t size)
{
	size_t off = 0;

	while (off + TPZ_REC_SIZE <= size) {
		struct tpz_rec r;

		memcpy(&r, p + off, sizeof(r));
		if (r.magic != TPZ_REC_MAGIC || r.size < TPZ_REC_SIZE + r.body_size ||
		    r.size > size - off) {
			off++;
			continue;
		}
		r.body_crc = ptd_crc32(0, p + off + TPZ_REC_SIZE, r.size - TPZ_REC_SIZE);
		r.hdr_crc = ptd_crc32(0, &r, offsetof(struct tpz_rec, hdr_crc));
		memcpy(p + off, &r, sizeof(r));
		off += r.size;
	}
}

/* @data parsed into @c as ptd_container_parse() does, resealed first (a copy). */
static inline void parse_resealed(struct ptd_container *c, const u8 *data, size_t size)
{
	u8 *buf = malloc(size ? size : 1);

	if (!buf)
		abort();
	memcpy(buf, data, size);
	reseal(buf, size);
	ptd_container_parse(c, "fuzz.tpz", buf, size);
	free(buf);
}

#endif
