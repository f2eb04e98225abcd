// SPDX-License-Identifier: MIT
/*
 * Intel PT packet encoder. Layouts from the SDM section "Trace Packets and
 * Data Types" (36.4.2 in the 2016 edition); every packet is checked byte for
 * byte against libipt's pt_enc_next in tests/host/test_pt_packet.c.
 */
#include <topaz/pt_packet.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

static const char *const type_names[PTPK_NR_TYPES] = {
	[PTPK_PAD] = "PAD", [PTPK_PSB] = "PSB", [PTPK_PSBEND] = "PSBEND",
	[PTPK_TNT8] = "TNT-8", [PTPK_TNT64] = "TNT-64", [PTPK_TIP] = "TIP",
	[PTPK_TIP_PGE] = "TIP.PGE", [PTPK_TIP_PGD] = "TIP.PGD", [PTPK_FUP] = "FUP",
	[PTPK_MODE_EXEC] = "MODE.Exec", [PTPK_MODE_TSX] = "MODE.TSX", [PTPK_PIP] = "PIP",
	[PTPK_TSC] = "TSC", [PTPK_MTC] = "MTC", [PTPK_TMA] = "TMA", [PTPK_CYC] = "CYC",
	[PTPK_CBR] = "CBR", [PTPK_VMCS] = "VMCS", [PTPK_OVF] = "OVF", [PTPK_STOP] = "TraceStop",
	[PTPK_MNT] = "MNT", [PTPK_PTW] = "PTW", [PTPK_EXSTOP] = "EXSTOP",
	[PTPK_MWAIT] = "MWAIT", [PTPK_PWRE] = "PWRE", [PTPK_PWRX] = "PWRX",
};

const char *ptpk_type_name(enum ptpk_type t)
{
	return (unsigned int)t < PTPK_NR_TYPES ? type_names[t] : "?";
}

/* Little-endian payload of @n bytes. */
static void put_le(u8 *buf, u64 v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		buf[i] = (u8)v;
}

enum ptpk_ipc ptpk_ip_compress(u64 ip, u64 last_ip)
{
	u64 diff = ip ^ last_ip;
	s64 sext = (s64)(ip << 16) >> 16;

	if (!(diff >> 16))
		return PTPK_IPC_UPDATE_16;
	if (!(diff >> 32))
		return PTPK_IPC_UPDATE_32;
	if (!(diff >> 48))
		return PTPK_IPC_UPDATE_48;
	if ((u64)sext == ip)
		return PTPK_IPC_SEXT_48;
	return PTPK_IPC_FULL;
}

u64 ptpk_ip_reconstruct(enum ptpk_ipc ipc, u64 ip, u64 last_ip)
{
	switch (ipc) {
	case PTPK_IPC_UPDATE_16: return (last_ip & ~0xffffULL) | (ip & 0xffffULL);
	case PTPK_IPC_UPDATE_32: return (last_ip & ~0xffffffffULL) | (ip & 0xffffffffULL);
	case PTPK_IPC_UPDATE_48: return (last_ip & ~0xffffffffffffULL) | (ip & 0xffffffffffffULL);
	case PTPK_IPC_SEXT_48: return (u64)((s64)(ip << 16) >> 16);
	case PTPK_IPC_FULL: return ip;
	case PTPK_IPC_SUPPRESSED: break;
	}
	return last_ip;
}

static int enc_ip(u8 opc, const struct ptpk *p, u8 *buf)
{
	int n = ptpk_ip_bytes(p->ip.ipc);

	if (n < 0)
		return -EINVAL;	/* a reserved IPBytes value */
	buf[0] = (u8)(((unsigned)p->ip.ipc << 5) | opc);
	put_le(buf + 1, p->ip.ip, n);
	return 1 + n;
}

/* CYC: byte 0 = count[4:0] << 3 | more << 2 | 0b11; then 7 bits a byte with
 * bit 0 = more. */
static int enc_cyc(u64 v, u8 *buf)
{
	int n = 0;

	buf[0] = (u8)(((v & 0x1f) << 3) | 0x3);
	v >>= 5;
	while (v) {
		buf[n] |= n == 0 ? 0x4 : 0x1;
		n++;
		buf[n] = (u8)((v & 0x7f) << 1);
		v >>= 7;
	}
	return n + 1;
}

/*
 * One helper per packet with a payload or a check, static inline: the switch
 * below compiles to the same jump table as when the bodies were in it.
 */

/* The packets of two bytes, 0x02 then @opc: PSBEND, OVF, TraceStop, EXSTOP. */
static inline int enc_ext2(u8 opc, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = opc;
	return 2;
}

static inline int enc_psb(u8 *buf)
{
	for (int i = 0; i < 16; i += 2) {
		buf[i] = 0x02;
		buf[i + 1] = 0x82;
	}
	return 16;
}

/* TNT-8: results in bits N:1, stop bit above them, bit 0 clear. */
static inline int enc_tnt8(const struct ptpk *p, u8 *buf)
{
	if (p->tnt.nbits < 1 || p->tnt.nbits > PTPK_TNT8_MAX)
		return -EINVAL;
	buf[0] = (u8)(((p->tnt.bits & (BIT(p->tnt.nbits) - 1)) << 1) |
		      BIT(p->tnt.nbits + 1));
	return 1;
}

static inline int enc_tnt64(const struct ptpk *p, u8 *buf)
{
	if (p->tnt.nbits < 1 || p->tnt.nbits > PTPK_TNT64_MAX)
		return -EINVAL;
	return ptpk_encode_tnt64(buf, p->tnt.nbits, p->tnt.bits);
}

static inline int enc_mode_exec(const struct ptpk *p, u8 *buf)
{
	if (p->exec.csl && p->exec.csd)
		return -EINVAL;
	buf[0] = 0x99;
	buf[1] = (u8)((p->exec.csl ? 1 : 0) | (p->exec.csd ? 2 : 0));
	return 2;
}

static inline int enc_mode_tsx(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x99;
	buf[1] = (u8)(0x20 | (p->tsx.intx ? 1 : 0) | (p->tsx.abrt ? 2 : 0));
	return 2;
}

static inline int enc_pip(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0x43;
	put_le(buf + 2, ((p->pip.cr3 >> 5) << 1) | (p->pip.nr ? 1 : 0), 6);
	return 8;
}

static inline int enc_vmcs(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0xc8;
	put_le(buf + 2, p->vmcs >> 12, 5);
	return 7;
}

static inline int enc_tsc(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x19;
	put_le(buf + 1, p->tsc, 7);
	return 8;
}

static inline int enc_mtc(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x59;
	buf[1] = p->mtc;
	return 2;
}

static inline int enc_tma(const struct ptpk *p, u8 *buf)
{
	if (p->tma.fc > 0x1ff)
		return -EINVAL;
	buf[0] = 0x02;
	buf[1] = 0x73;
	put_le(buf + 2, p->tma.ctc, 2);
	buf[4] = 0;
	buf[5] = (u8)p->tma.fc;
	buf[6] = (u8)(p->tma.fc >> 8);
	return 7;
}

static inline int enc_cbr(const struct ptpk *p, u8 *buf)
{
	if (!p->cbr)
		return -EINVAL;
	buf[0] = 0x02;
	buf[1] = 0x03;
	buf[2] = p->cbr;
	buf[3] = 0;
	return 4;
}

static inline int enc_mnt(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0xc3;
	buf[2] = 0x88;
	put_le(buf + 3, p->mnt, 8);
	return 11;
}

static inline int enc_ptw(const struct ptpk *p, u8 *buf)
{
	int n = p->ptw.plc == 0 ? 4 : p->ptw.plc == 1 ? 8 : -1;

	if (n < 0)
		return -EINVAL;
	buf[0] = 0x02;
	buf[1] = (u8)((p->ptw.ip ? 0x80 : 0) | (p->ptw.plc << 5) | 0x12);
	put_le(buf + 2, p->ptw.payload, n);
	return 2 + n;
}

static inline int enc_mwait(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0xc2;
	put_le(buf + 2, p->mwait.hints, 4);
	put_le(buf + 6, p->mwait.ext, 4);
	return 10;
}

/* libipt 2.0.5's layout: HW flag at bit 3 of the first payload byte,
 * C-state/sub-state in the high/low nibble of the second (the SDM figure
 * draws HW at bit 7; see docs/pt-model.md). */
static inline int enc_pwre(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0x22;
	buf[2] = p->pwre.hw ? 0x08 : 0;
	buf[3] = (u8)(((p->pwre.state & 0xf) << 4) | (p->pwre.sub_state & 0xf));
	return 4;
}

static inline int enc_pwrx(const struct ptpk *p, u8 *buf)
{
	buf[0] = 0x02;
	buf[1] = 0xa2;
	buf[2] = (u8)(((p->pwrx.last & 0xf) << 4) | (p->pwrx.deepest & 0xf));
	buf[3] = (u8)((p->pwrx.interrupt ? 0x1 : 0) | (p->pwrx.store ? 0x4 : 0) |
		      (p->pwrx.autonomous ? 0x8 : 0));
	buf[4] = buf[5] = buf[6] = 0;
	return 7;
}

int ptpk_encode(const struct ptpk *p, u8 *buf)
{
	switch (p->type) {
	case PTPK_PAD:
		buf[0] = 0x00;
		return 1;
	case PTPK_PSB:
		return enc_psb(buf);
	case PTPK_PSBEND:
		return enc_ext2(0x23, buf);
	case PTPK_TNT8:
		return enc_tnt8(p, buf);
	case PTPK_TNT64:
		return enc_tnt64(p, buf);
	case PTPK_TIP:
		return enc_ip(0x0d, p, buf);
	case PTPK_TIP_PGE:
		return enc_ip(0x11, p, buf);
	case PTPK_TIP_PGD:
		return enc_ip(0x01, p, buf);
	case PTPK_FUP:
		return enc_ip(0x1d, p, buf);
	case PTPK_MODE_EXEC:
		return enc_mode_exec(p, buf);
	case PTPK_MODE_TSX:
		return enc_mode_tsx(p, buf);
	case PTPK_PIP:
		return enc_pip(p, buf);
	case PTPK_TSC:
		return enc_tsc(p, buf);
	case PTPK_MTC:
		return enc_mtc(p, buf);
	case PTPK_TMA:
		return enc_tma(p, buf);
	case PTPK_CYC:
		return enc_cyc(p->cyc, buf);
	case PTPK_CBR:
		return enc_cbr(p, buf);
	case PTPK_VMCS:
		return enc_vmcs(p, buf);
	case PTPK_OVF:
		return enc_ext2(0xf3, buf);
	case PTPK_STOP:
		return enc_ext2(0x83, buf);
	case PTPK_MNT:
		return enc_mnt(p, buf);
	case PTPK_PTW:
		return enc_ptw(p, buf);
	case PTPK_EXSTOP:
		return enc_ext2(p->exstop_ip ? 0xe2 : 0x62, buf);
	case PTPK_MWAIT:
		return enc_mwait(p, buf);
	case PTPK_PWRE:
		return enc_pwre(p, buf);
	case PTPK_PWRX:
		return enc_pwrx(p, buf);
	case PTPK_NR_TYPES:
		break;
	}
	return -EINVAL;
}
