/* SPDX-License-Identifier: MIT */
/*
 * The Intel PT packet encoder owned by the trace unit model: one struct per
 * packet, encoded byte-exactly as the SDM's "Trace Packets and Data Types"
 * section lays them out (and as libipt 2.0.5's pt_enc_next writes them, which
 * the host tests check byte for byte).
 */
#ifndef TOPAZ_PT_PACKET_H
#define TOPAZ_PT_PACKET_H

#include <topaz/types.h>

#define PTPK_MAX_SIZE	16	/* PSB; every other packet is shorter */
#define PTPK_TNT8_MAX	6	/* branch bits in a short TNT */
#define PTPK_TNT64_MAX	47	/* branch bits in a long TNT */

enum ptpk_type {
	PTPK_PAD, PTPK_PSB, PTPK_PSBEND,
	PTPK_TNT8, PTPK_TNT64,
	PTPK_TIP, PTPK_TIP_PGE, PTPK_TIP_PGD, PTPK_FUP,
	PTPK_MODE_EXEC, PTPK_MODE_TSX, PTPK_PIP,
	PTPK_TSC, PTPK_MTC, PTPK_TMA, PTPK_CYC, PTPK_CBR,
	PTPK_VMCS, PTPK_OVF, PTPK_STOP, PTPK_MNT, PTPK_PTW,
	PTPK_EXSTOP, PTPK_MWAIT, PTPK_PWRE, PTPK_PWRX,
	PTPK_NR_TYPES
};

/* IPBytes of TIP/TIP.PGE/TIP.PGD/FUP (SDM Table "Compressed IP Bytes"). */
enum ptpk_ipc {
	PTPK_IPC_SUPPRESSED = 0,
	PTPK_IPC_UPDATE_16 = 1,
	PTPK_IPC_UPDATE_32 = 2,
	PTPK_IPC_SEXT_48 = 3,
	PTPK_IPC_UPDATE_48 = 4,
	PTPK_IPC_FULL = 6,
};

/** ptpk_ip_bytes() - the IP bytes @ipc selects (-1: a reserved value) */
static inline int ptpk_ip_bytes(enum ptpk_ipc ipc)
{
	switch (ipc) {
	case PTPK_IPC_SUPPRESSED: return 0;
	case PTPK_IPC_UPDATE_16: return 2;
	case PTPK_IPC_UPDATE_32: return 4;
	case PTPK_IPC_SEXT_48: return 6;
	case PTPK_IPC_UPDATE_48: return 6;
	case PTPK_IPC_FULL: return 8;
	}
	return -1;
}

/**
 * struct ptpk - one trace packet
 * @type: which packet; selects the union member
 * @tnt: TNT-8/TNT-64: @nbits results, the oldest in bit @nbits-1 of @bits,
 *	the youngest in bit 0 (1 = taken or compressed RET)
 * @ip: TIP, TIP.PGE, TIP.PGD, FUP: compression and the full IP (only the
 *	bytes @ipc selects are written)
 * @exec: MODE.Exec CS.L and CS.D (64-bit = L, 32-bit = D, 16-bit = neither)
 * @tsx: MODE.TSX InTX and TXAbort
 * @pip: PIP CR3 (bits 4:0 are not encoded) and the non-root bit
 * @tsc: TSC[55:0]; @mtc: CTC[N+7:N]; @tma: CTC[15:0] and FastCounter[8:0]
 * @cyc: cycle count; @cbr: core:bus ratio; @vmcs: VMCS pointer (4 KiB aligned)
 * @mnt: maintenance payload; @ptw: PTWRITE operand, 4 or 8 bytes (@plc 0/1),
 *	@ip set when a FUP follows
 * @exstop_ip: EXSTOP binds to a following FUP
 * @mwait: MWAIT hints (EAX) and extensions (ECX)
 * @pwre: PWRE resolved C-state/sub-state and the hardware-initiated flag
 * @pwrx: PWRX last and deepest core C-state and the wake reasons
 */
struct ptpk {
	enum ptpk_type type;
	union {
		struct { u8 nbits; u64 bits; } tnt;
		struct { enum ptpk_ipc ipc; u64 ip; } ip;
		struct { bool csl, csd; } exec;
		struct { bool intx, abrt; } tsx;
		struct { u64 cr3; bool nr; } pip;
		u64 tsc;
		u8 mtc;
		struct { u16 ctc, fc; } tma;
		u64 cyc;
		u8 cbr;
		u64 vmcs;
		u64 mnt;
		struct { u8 plc; bool ip; u64 payload; } ptw;
		bool exstop_ip;
		struct { u32 hints, ext; } mwait;
		struct { u8 state, sub_state; bool hw; } pwre;
		struct { u8 last, deepest; bool interrupt, store, autonomous; } pwrx;
	};
};

/**
 * ptpk_encode() - write one packet
 * @p: the packet
 * @buf: at least PTPK_MAX_SIZE bytes
 *
 * Return: the packet's size in bytes, or -EINVAL when a field cannot be
 * encoded (TNT bit counts out of range, reserved IPBytes, PTW size codes 2/3,
 * TMA FastCounter above 9 bits, MODE.Exec with both CS.L and CS.D, a zero
 * CBR ratio, an unknown type).
 */
int ptpk_encode(const struct ptpk *p, u8 *buf);

/**
 * ptpk_encode_tnt64() - ptpk_encode() of a TNT-64 of @nbits (1..47) results
 * in @bits, without the packet switch: the trace unit's commonest packet
 * @buf: at least PTPK_MAX_SIZE bytes (8 are written, 2 more scribbled)
 */
static inline int ptpk_encode_tnt64(u8 *buf, unsigned int nbits, u64 bits)
{
	u64 v = (bits & ((1ULL << nbits) - 1)) | 1ULL << nbits;	/* the stop bit above */

	buf[0] = 0x02;
	buf[1] = 0xa3;
	__builtin_memcpy(buf + 2, &v, 8);	/* little-endian: the 6 payload bytes, then 0s */
	return 8;
}

/**
 * ptpk_tnt64_full_bits() - the 47 results of a full TNT-64 (ptpk_encode_tnt64()
 * of PTPK_TNT64_MAX results) read back from its 8 bytes at @buf
 */
static inline u64 ptpk_tnt64_full_bits(const u8 *buf)
{
	u64 v = 0;

	__builtin_memcpy(&v, buf + 2, 6);
	return v & ((1ULL << PTPK_TNT64_MAX) - 1);	/* the stop bit above them */
}

/**
 * ptpk_ip_compress() - the shortest IPBytes that reconstructs @ip from @last_ip
 * @ip: the IP to send
 * @last_ip: the decoder's last IP (0 after a PSB or OVF)
 */
enum ptpk_ipc ptpk_ip_compress(u64 ip, u64 last_ip);

/** ptpk_ip_reconstruct() - what a decoder rebuilds from @ipc/@ip and @last_ip */
u64 ptpk_ip_reconstruct(enum ptpk_ipc ipc, u64 ip, u64 last_ip);

/** ptpk_type_name() - "TNT-8", "TIP.PGE", ... for messages */
const char *ptpk_type_name(enum ptpk_type t);

#endif
