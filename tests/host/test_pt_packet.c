// SPDX-License-Identifier: MIT
/*
 * The model's packet encoder against libipt 2.0.5: every packet type, with
 * boundary and random payloads, must be byte-identical to pt_enc_next's
 * output and decode with pt_pkt_next to the same fields.
 */
#include "test_pt_common.h"

static u64 rng = 0x9e3779b97f4a7c15ULL;
static u64 rnd(void) { return hosted_rand(&rng); }

static u64 ipc_mask(enum ptpk_ipc ipc)
{
	switch (ipc) {
	case PTPK_IPC_UPDATE_16: return 0xffffULL;
	case PTPK_IPC_UPDATE_32: return 0xffffffffULL;
	case PTPK_IPC_SEXT_48:
	case PTPK_IPC_UPDATE_48: return 0xffffffffffffULL;
	case PTPK_IPC_FULL: return ~0ULL;
	default: return 0;
	}
}

/* The decoded packet carries the fields of @p, as far as the packet holds them. */
static void check_decoded(const struct ptpk *p, const struct pt_packet *d)
{
	struct pt_packet q;

	to_ipt(p, &q);
	assert_int_equal(d->type, q.type);
	switch (p->type) {
	case PTPK_TNT8:
	case PTPK_TNT64:
		assert_int_equal(d->payload.tnt.bit_size, p->tnt.nbits);
		assert_int_equal(d->payload.tnt.payload, p->tnt.bits & (BIT_ULL(p->tnt.nbits) - 1));
		break;
	case PTPK_TIP: case PTPK_TIP_PGE: case PTPK_TIP_PGD: case PTPK_FUP:
		assert_int_equal(d->payload.ip.ipc, (int)p->ip.ipc);
		assert_int_equal(d->payload.ip.ip, p->ip.ip & ipc_mask(p->ip.ipc));
		break;
	case PTPK_MODE_EXEC:
		assert_int_equal(d->payload.mode.leaf, pt_mol_exec);
		assert_int_equal(d->payload.mode.bits.exec.csl, p->exec.csl);
		assert_int_equal(d->payload.mode.bits.exec.csd, p->exec.csd);
		break;
	case PTPK_MODE_TSX:
		assert_int_equal(d->payload.mode.leaf, pt_mol_tsx);
		assert_int_equal(d->payload.mode.bits.tsx.intx, p->tsx.intx);
		assert_int_equal(d->payload.mode.bits.tsx.abrt, p->tsx.abrt);
		break;
	case PTPK_PIP:
		assert_int_equal(d->payload.pip.cr3, p->pip.cr3 & GENMASK_ULL(51, 5));
		assert_int_equal(d->payload.pip.nr, p->pip.nr);
		break;
	case PTPK_TSC: assert_int_equal(d->payload.tsc.tsc, p->tsc & GENMASK_ULL(55, 0)); break;
	case PTPK_MTC: assert_int_equal(d->payload.mtc.ctc, p->mtc); break;
	case PTPK_TMA:
		assert_int_equal(d->payload.tma.ctc, p->tma.ctc);
		assert_int_equal(d->payload.tma.fc, p->tma.fc);
		break;
	case PTPK_CYC: assert_int_equal(d->payload.cyc.value, p->cyc); break;
	case PTPK_CBR: assert_int_equal(d->payload.cbr.ratio, p->cbr); break;
	case PTPK_VMCS: assert_int_equal(d->payload.vmcs.base, p->vmcs & GENMASK_ULL(51, 12)); break;
	case PTPK_MNT: assert_int_equal(d->payload.mnt.payload, p->mnt); break;
	case PTPK_PTW:
		assert_int_equal(d->payload.ptw.plc, p->ptw.plc);
		assert_int_equal(d->payload.ptw.ip, p->ptw.ip);
		assert_int_equal(d->payload.ptw.payload,
				 p->ptw.plc ? p->ptw.payload : (p->ptw.payload & 0xffffffffULL));
		break;
	case PTPK_EXSTOP: assert_int_equal(d->payload.exstop.ip, p->exstop_ip); break;
	case PTPK_MWAIT:
		assert_int_equal(d->payload.mwait.hints, p->mwait.hints);
		assert_int_equal(d->payload.mwait.ext, p->mwait.ext);
		break;
	case PTPK_PWRE:
		assert_int_equal(d->payload.pwre.state, p->pwre.state & 0xf);
		assert_int_equal(d->payload.pwre.sub_state, p->pwre.sub_state & 0xf);
		assert_int_equal(d->payload.pwre.hw, p->pwre.hw);
		break;
	case PTPK_PWRX:
		assert_int_equal(d->payload.pwrx.last, p->pwrx.last & 0xf);
		assert_int_equal(d->payload.pwrx.deepest, p->pwrx.deepest & 0xf);
		assert_int_equal(d->payload.pwrx.interrupt, p->pwrx.interrupt);
		assert_int_equal(d->payload.pwrx.store, p->pwrx.store);
		assert_int_equal(d->payload.pwrx.autonomous, p->pwrx.autonomous);
		break;
	default:
		break;
	}
}

static unsigned int checked[PTPK_NR_TYPES];

/* ours == libipt's, byte for byte; and libipt decodes ours back */
static void check(const struct ptpk *p)
{
	u8 a[PTPK_MAX_SIZE + 8], b[64];
	int na = ptpk_encode(p, a);
	size_t nb;
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	struct pt_packet q;

	if (na < 0)
		fail_msg("ptpk_encode(%s) failed", ptpk_type_name(p->type));
	nb = ipt_encode(p, 1, b, sizeof(b));
	if ((size_t)na != nb || nb > sizeof(a) || memcmp(a, b, nb & 31)) {
		char msg[256];
		int k = snprintf(msg, sizeof(msg), "%s: ours", ptpk_type_name(p->type));

		for (int i = 0; i < na; i++)
			k += snprintf(msg + k, sizeof(msg) - (size_t)k, " %02x", a[i]);
		k += snprintf(msg + k, sizeof(msg) - (size_t)k, ", libipt");
		for (size_t i = 0; i < nb; i++)
			k += snprintf(msg + k, sizeof(msg) - (size_t)k, " %02x", b[i]);
		fail_msg("%s", msg);
	}
	pt_config_init(&cfg);
	cfg.begin = a;
	cfg.end = a + na;
	d = pt_pkt_alloc_decoder(&cfg);
	assert_int_equal(pt_pkt_sync_set(d, 0), 0);
	assert_int_equal(pt_pkt_next(d, &q, sizeof(q)), na);
	assert_int_equal(q.size, na);
	check_decoded(p, &q);
	pt_pkt_free_decoder(d);
	checked[p->type]++;
}

static void test_fixed_packets(void **state)
{
	static const enum ptpk_type t[] = { PTPK_PAD, PTPK_PSB, PTPK_PSBEND, PTPK_OVF, PTPK_STOP };
	static const u8 psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	struct ptpk p = { .type = PTPK_PSB };
	u8 buf[PTPK_MAX_SIZE];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		p.type = t[i];
		check(&p);
	}
	p.type = PTPK_PSB;
	assert_int_equal(ptpk_encode(&p, buf), 16);
	assert_memory_equal(buf, psb, 16);
}

static void test_tnt(void **state)
{
	struct ptpk p;

	for (u8 n = 1; n <= PTPK_TNT8_MAX; n++)
		for (u64 bits = 0; bits < BIT_ULL(n); bits++) {
			p = (struct ptpk){ .type = PTPK_TNT8, .tnt = { n, bits } };
			check(&p);
		}
	for (u8 n = 1; n <= PTPK_TNT64_MAX; n++)
		for (int k = 0; k < 40; k++) {
			p = (struct ptpk){ .type = PTPK_TNT64,
					   .tnt = { n, k == 0 ? 0 : k == 1 ? ~0ULL : rnd() } };
			p.tnt.bits &= BIT_ULL(n) - 1;
			check(&p);
		}
	/* the SDM examples: t,t,n short = 0x1c; 6 taken = 0xfe */
	{
		u8 b[PTPK_MAX_SIZE];

		p = (struct ptpk){ .type = PTPK_TNT8, .tnt = { 3, 0x6 } };
		assert_int_equal(ptpk_encode(&p, b), 1);
		assert_int_equal(b[0], 0x1c);
		p = (struct ptpk){ .type = PTPK_TNT8, .tnt = { 6, 0x3f } };
		ptpk_encode(&p, b);
		assert_int_equal(b[0], 0xfe);
	}
}

static void test_ip_packets(void **state)
{
	static const enum ptpk_type t[] = { PTPK_TIP, PTPK_TIP_PGE, PTPK_TIP_PGD, PTPK_FUP };
	static const enum ptpk_ipc ipcs[] = { PTPK_IPC_SUPPRESSED, PTPK_IPC_UPDATE_16, PTPK_IPC_UPDATE_32,
					      PTPK_IPC_SEXT_48, PTPK_IPC_UPDATE_48, PTPK_IPC_FULL };
	static const u64 ips[] = { 0, 1, 0x401000, 0xffff, 0x10000, 0x7fffffffffffULL,
				   0xffff800000000000ULL, 0xffffffff81000000ULL, ~0ULL };

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		for (size_t j = 0; j < ARRAY_SIZE(ipcs); j++) {
			for (size_t k = 0; k < ARRAY_SIZE(ips); k++) {
				struct ptpk p = { .type = t[i], .ip = { ipcs[j], ips[k] } };

				if (ipcs[j] == PTPK_IPC_SUPPRESSED)
					p.ip.ip = 0;
				check(&p);
			}
			for (int k = 0; k < 200; k++) {
				struct ptpk p = { .type = t[i], .ip = { ipcs[j], rnd() } };

				if (ipcs[j] == PTPK_IPC_SUPPRESSED)
					p.ip.ip = 0;
				else if (ipcs[j] != PTPK_IPC_FULL)
					p.ip.ip &= ipc_mask(ipcs[j]);
				check(&p);
			}
		}
}

static void test_ip_compression(void **state)
{
	for (int k = 0; k < 100000; k++) {
		u64 last = rnd(), ip;
		enum ptpk_ipc c;

		switch (k % 5) {
		case 0: ip = last ^ (rnd() & 0xffff); break;
		case 1: ip = last ^ (rnd() & 0xffffffffULL); break;
		case 2: ip = last ^ (rnd() & 0xffffffffffffULL); break;
		case 3: ip = (u64)((s64)(rnd() << 16) >> 16); break;
		default: ip = rnd(); break;
		}
		c = ptpk_ip_compress(ip, last);
		assert_int_equal(ptpk_ip_reconstruct(c, ip & ipc_mask(c), last), ip);
		/* no shorter form would do */
		if (c == PTPK_IPC_UPDATE_32)
			assert_true((ip ^ last) >> 16);
		if (c == PTPK_IPC_UPDATE_48 || c == PTPK_IPC_SEXT_48)
			assert_true((ip ^ last) >> 32);
		if (c == PTPK_IPC_FULL)
			assert_true((ip ^ last) >> 48 && (u64)((s64)(ip << 16) >> 16) != ip);
	}
}

static void test_mode_pip_vmcs(void **state)
{
	struct ptpk p;

	for (int l = 0; l < 2; l++)
		for (int d = 0; d < 2; d++) {
			if (l && d)
				continue;
			p = (struct ptpk){ .type = PTPK_MODE_EXEC, .exec = { l, d } };
			check(&p);
		}
	for (int i = 0; i < 2; i++)
		for (int a = 0; a < 2; a++) {
			p = (struct ptpk){ .type = PTPK_MODE_TSX, .tsx = { i, a } };
			check(&p);
		}
	for (int k = 0; k < 500; k++) {
		p = (struct ptpk){ .type = PTPK_PIP, .pip = { rnd() & GENMASK_ULL(51, 5), k & 1 } };
		check(&p);
		p = (struct ptpk){ .type = PTPK_VMCS, .vmcs = rnd() & GENMASK_ULL(51, 12) };
		check(&p);
	}
	p = (struct ptpk){ .type = PTPK_PIP, .pip = { 0x12345000, false } };
	check(&p);
}

static void test_timing(void **state)
{
	struct ptpk p;
	/* libipt's decoder takes CYC payloads up to 61 bits (62+ is -pte_bad_packet) */
	static const u64 cyc[] = { 0, 1, 0x1f, 0x20, 0xfff, 0x1000, 0x7ffff, 1ULL << 40, BIT_ULL(61) - 1 };

	for (int k = 0; k < 500; k++) {
		p = (struct ptpk){ .type = PTPK_TSC, .tsc = rnd() & GENMASK_ULL(55, 0) };
		check(&p);
		p = (struct ptpk){ .type = PTPK_MTC, .mtc = (u8)rnd() };
		check(&p);
		p = (struct ptpk){ .type = PTPK_TMA, .tma = { (u16)rnd(), (u16)(rnd() & 0x1ff) } };
		check(&p);
		p = (struct ptpk){ .type = PTPK_CYC, .cyc = (rnd() >> 3) >> (rnd() & 63) };
		check(&p);
		p = (struct ptpk){ .type = PTPK_CBR, .cbr = (u8)(rnd() | 1) };
		check(&p);
	}
	for (size_t i = 0; i < ARRAY_SIZE(cyc); i++) {
		p = (struct ptpk){ .type = PTPK_CYC, .cyc = cyc[i] };
		check(&p);
	}
	/* a full 64-bit count still encodes as libipt writes it (10 bytes) */
	{
		u8 a[PTPK_MAX_SIZE], b[32];

		p = (struct ptpk){ .type = PTPK_CYC, .cyc = ~0ULL };
		assert_int_equal(ptpk_encode(&p, a), 10);
		assert_int_equal(ipt_encode(&p, 1, b, sizeof(b)), 10);
		assert_memory_equal(a, b, 10);
	}
}

static void test_ptw_power_mnt(void **state)
{
	struct ptpk p;

	for (int k = 0; k < 400; k++) {
		p = (struct ptpk){ .type = PTPK_PTW, .ptw = { (u8)(k & 1), (k >> 1) & 1, rnd() } };
		if (!p.ptw.plc)
			p.ptw.payload &= 0xffffffffULL;
		check(&p);
		p = (struct ptpk){ .type = PTPK_MNT, .mnt = rnd() };
		check(&p);
		p = (struct ptpk){ .type = PTPK_MWAIT, .mwait = { (u32)rnd(), (u32)rnd() } };
		check(&p);
		p = (struct ptpk){ .type = PTPK_EXSTOP, .exstop_ip = k & 1 };
		check(&p);
		p = (struct ptpk){ .type = PTPK_PWRE,
				   .pwre = { (u8)(rnd() & 0xf), (u8)(rnd() & 0xf), k & 1 } };
		check(&p);
		p = (struct ptpk){ .type = PTPK_PWRX,
				   .pwrx = { (u8)(rnd() & 0xf), (u8)(rnd() & 0xf), k & 1, (k >> 1) & 1,
					     (k >> 2) & 1 } };
		check(&p);
	}
}

/* Fields a packet cannot carry are refused, as libipt's encoder refuses them. */
static void test_invalid(void **state)
{
	u8 b[64];
	struct ptpk bad[] = {
		{ .type = PTPK_TNT8, .tnt = { 7, 0 } },
		{ .type = PTPK_TNT64, .tnt = { 48, 0 } },
		{ .type = PTPK_PTW, .ptw = { 2, false, 0 } },
		{ .type = PTPK_PTW, .ptw = { 3, false, 0 } },
		{ .type = PTPK_TMA, .tma = { 0, 0x200 } },
		{ .type = PTPK_TIP, .ip = { (enum ptpk_ipc)5, 0 } },
		{ .type = PTPK_TIP, .ip = { (enum ptpk_ipc)7, 0 } },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct pt_config cfg;
		struct pt_encoder *e;
		struct pt_packet q;

		assert_int_equal(ptpk_encode(&bad[i], b), -EINVAL);
		pt_config_init(&cfg);
		cfg.begin = b;
		cfg.end = b + sizeof(b);
		e = pt_alloc_encoder(&cfg);
		to_ipt(&bad[i], &q);
		assert_true(pt_enc_next(e, &q) < 0);
		pt_free_encoder(e);
	}
	/* refused here though libipt's encoder writes them: an empty TNT-8 (it
	 * would be the byte 02, the extended opcode), reserved CS.L=CS.D=1, and
	 * CBR 0 (libipt's decoder rejects it) */
	assert_int_equal(ptpk_encode(&(struct ptpk){ .type = PTPK_TNT8, .tnt = { 0, 0 } }, b), -EINVAL);
	assert_int_equal(ptpk_encode(&(struct ptpk){ .type = PTPK_MODE_EXEC, .exec = { 1, 1 } }, b), -EINVAL);
	assert_int_equal(ptpk_encode(&(struct ptpk){ .type = PTPK_CBR, .cbr = 0 }, b), -EINVAL);
	assert_int_equal(ptpk_encode(&(struct ptpk){ .type = PTPK_NR_TYPES }, b), -EINVAL);
}

/* Runs last: every packet type went through check(). */
static void test_every_type_checked(void **state)
{
	for (int t = 0; t < PTPK_NR_TYPES; t++)
		if (!checked[t])
			fail_msg("packet type %s not compared with libipt", ptpk_type_name((enum ptpk_type)t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_packets),
		cmocka_unit_test(test_tnt),
		cmocka_unit_test(test_ip_packets),
		cmocka_unit_test(test_ip_compression),
		cmocka_unit_test(test_mode_pip_vmcs),
		cmocka_unit_test(test_timing),
		cmocka_unit_test(test_ptw_power_mnt),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_every_type_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
