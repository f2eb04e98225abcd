/* SPDX-License-Identifier: MIT */
/*
 * PT packets for libipt's encoder, built once for the host tests and the
 * fuzzer's seed generator (tests/fuzz/gen_seeds.c): each returns the packet,
 * the caller writes it with pt_enc_next() and checks the result its way.
 */
#ifndef TOPAZ_TESTS_PT_PACKETS_H
#define TOPAZ_TESTS_PT_PACKETS_H

#include <string.h>
#include <intel-pt.h>

static inline struct pt_packet pkt_mode64(void)
{
	struct pt_packet p = { .type = ppt_mode };

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return p;
}

static inline struct pt_packet pkt_ip(enum pt_packet_type t, enum pt_ip_compression ipc,
				      uint64_t ip)
{
	struct pt_packet p = { .type = t };

	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	return p;
}

/* @bits: branch results oldest first, '!' taken and '.' not taken */
static inline struct pt_packet pkt_tnt(enum pt_packet_type t, const char *bits)
{
	struct pt_packet p = { .type = t };

	for (const char *b = bits; *b; b++)
		p.payload.tnt.payload = p.payload.tnt.payload << 1 | (*b == '!');
	p.payload.tnt.bit_size = (uint8_t)strlen(bits);
	return p;
}

#endif
