// SPDX-License-Identifier: MIT
/*
 * SHA-1 (FIPS 180-4, section 6.1), for the names of corpus and crash files:
 * libFuzzer names each input by the SHA-1 of its bytes, so a file's name is
 * the same whichever instance or tool wrote it. Not for security.
 */
#include <topaz/fuzz.h>
#include <topaz/string.h>

static inline u32 rol32(u32 x, int k)
{
	return (x << k) | (x >> (32 - k));
}

static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/* One 64-byte block into @h. */
static void sha1_block(u32 h[5], const u8 *p)
{
	u32 w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int t = 0; t < 16; t++)
		w[t] = be32(p + 4 * t);
	for (int t = 16; t < 80; t++)
		w[t] = rol32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
	for (int t = 0; t < 80; t++) {
		u32 f, k, tmp;

		if (t < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (t < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (t < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		tmp = rol32(a, 5) + f + e + k + w[t];
		e = d;
		d = c;
		c = rol32(b, 30);
		b = a;
		a = tmp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void fuzz_sha1(const void *data, size_t n, u8 out[FUZZ_SHA1_BYTES])
{
	u32 h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	const u8 *p = data;
	u8 last[128];
	size_t tail = n % 64, pad;
	u64 bits = (u64)n * 8;

	for (size_t i = 0; i + 64 <= n; i += 64)
		sha1_block(h, p + i);
	/* the tail, 0x80, zeros, the length in bits (big-endian): one or two blocks */
	memset(last, 0, sizeof(last));
	memcpy(last, p + n - tail, tail);
	last[tail] = 0x80;
	pad = tail < 56 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		last[pad - 1 - i] = (u8)(bits >> (8 * i));
	sha1_block(h, last);
	if (pad == 128)
		sha1_block(h, last + 64);
	for (int i = 0; i < 5; i++) {
		out[4 * i] = (u8)(h[i] >> 24);
		out[4 * i + 1] = (u8)(h[i] >> 16);
		out[4 * i + 2] = (u8)(h[i] >> 8);
		out[4 * i + 3] = (u8)h[i];
	}
}

void fuzz_sha1_hex(const void *data, size_t n, char out[FUZZ_SHA1_HEX])
{
	u8 d[FUZZ_SHA1_BYTES];

	fuzz_sha1(data, n, d);
	for (int i = 0; i < FUZZ_SHA1_BYTES; i++) {
		out[2 * i] = "0123456789abcdef"[d[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	out[2 * FUZZ_SHA1_BYTES] = 0;
}
