// SPDX-License-Identifier: MIT
/*
 * The packet pass: libipt's packet decoder over each segment, from its first
 * PSB, with the Last IP rules applied so IP packets show the address they
 * stand for. --packets prints it as ptdump does (offset, packet, payload).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

u64 ptd_packet_ip(const struct pt_packet_ip *p, u64 last)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffffull);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffffull);
	case pt_ipc_sext_48:
		return (u64)((s64)(p->ip << 16) >> 16);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (p->ip & 0xffffffffffffull);
	case pt_ipc_full:
		return p->ip;
	default:
		return last;
	}
}

static void packet_error(struct ptd_ctx *x, const struct ptd_segment *seg, u64 off, int err)
{
	u32 seq;
	u64 rec_off, file_off;

	ptd_segment_where(seg, off, &seq, &rec_off, &file_off);
	ptd_diag_add(&x->c->diags, seq, rec_off,
		     "cpu %u: bad packet at stream offset 0x%llx (file offset 0x%llx): %s; resynchronising at the next PSB",
		     seg->cpu, (unsigned long long)(seg->stream_off + off),
		     (unsigned long long)file_off, pt_errstr(pt_errcode(err)));
}

unsigned long ptd_scan_packets(struct ptd_ctx *x, ptd_packet_fn fn, void *ctx, bool report)
{
	unsigned long errors = 0;

	for (size_t i = 0; i < x->segs.n; i++) {
		const struct ptd_segment *seg = &x->segs.v[i];
		struct pt_packet_decoder *dec;
		struct ptd_packet p = { .seg = seg };
		u64 last_ip = 0;
		uint64_t off = 0;	/* libipt's type */
		int status;

		x->cfg.begin = seg->data;
		x->cfg.end = seg->data + seg->size;
		dec = pt_pkt_alloc_decoder(&x->cfg);
		if (!dec)
			abort();
		status = pt_pkt_sync_forward(dec);
		pt_pkt_get_sync_offset(dec, &off);
		/* Segment start: pkt NULL, err 0, seg_off = first PSB (or the size). */
		p.seg_off = status < 0 ? seg->size : off;
		fn(ctx, &p, 0);
		if (status < 0) {
			if (report && status != -pte_eos) {
				packet_error(x, seg, 0, status);
			} else if (report) {
				u32 seq;
				u64 rec_off, file_off;

				ptd_segment_where(seg, 0, &seq, &rec_off, &file_off);
				ptd_diag_add(&x->c->diags, seq, rec_off,
					     "cpu %u: no PSB in %zu bytes of trace from stream offset 0x%llx: they cannot be decoded",
					     seg->cpu, seg->size, seg->stream_off);
			}
			pt_pkt_free_decoder(dec);
			continue;
		}
		for (;;) {
			struct pt_packet pkt;

			pt_pkt_get_offset(dec, &off);
			status = pt_pkt_next(dec, &pkt, sizeof(pkt));
			if (status == -pte_eos)
				break;
			p = (struct ptd_packet){ .seg = seg, .seg_off = off };
			if (status < 0) {
				fn(ctx, &p, status);
				errors++;
				if (report)
					packet_error(x, seg, off, status);
				if (pt_pkt_sync_forward(dec) < 0)
					break;
				last_ip = 0;
				continue;
			}
			p.pkt = &pkt;
			switch (pkt.type) {
			case ppt_fup:
			case ppt_tip:
			case ppt_tip_pge:
			case ppt_tip_pgd:
				if (pkt.payload.ip.ipc != pt_ipc_suppressed) {
					last_ip = ptd_packet_ip(&pkt.payload.ip, last_ip);
					p.ip = last_ip;
					p.has_ip = true;
				}
				break;
			case ppt_psb:
			case ppt_ovf:
				last_ip = 0;
				break;
			default:
				break;
			}
			fn(ctx, &p, 0);
		}
		pt_pkt_free_decoder(dec);
	}
	return errors;
}

static const char *packet_name(enum pt_packet_type t)
{
	switch (t) {
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode: return "mode";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	case ppt_mnt: return "mnt";
	case ppt_exstop: return "exstop";
	case ppt_mwait: return "mwait";
	case ppt_pwre: return "pwre";
	case ppt_pwrx: return "pwrx";
	case ppt_ptw: return "ptw";
	default: return "unknown";
	}
}

void ptd_format_packet(const struct ptd_packet *p, const struct ptd_image *img, char *buf, size_t size)
{
	const struct pt_packet *k = p->pkt;
	char pay[200] = "", sym[160];
	const char *name = packet_name(k->type);

	switch (k->type) {
	case ppt_tnt_8:
	case ppt_tnt_64: {
		size_t n = 0;

		/* Oldest result first, as ptdump prints it. */
		for (int b = k->payload.tnt.bit_size - 1; b >= 0 && n + 1 < sizeof(pay); b--)
			pay[n++] = (k->payload.tnt.payload >> b) & 1 ? '!' : '.';
		pay[n] = 0;
		break;
	}
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd: {
		static const int width[8] = { 0, 4, 8, 12, 12, 0, 16, 0 };
		int w = width[k->payload.ip.ipc & 7];

		if (k->payload.ip.ipc == pt_ipc_suppressed)
			snprintf(pay, sizeof(pay), "0: suppressed");
		else
			snprintf(pay, sizeof(pay), "%d: %0*" PRIx64 "  -> %016llx %s",
				 k->payload.ip.ipc, w, k->payload.ip.ip, p->ip,
				 ptd_format_addr(img, p->ip, sym, sizeof(sym)));
		break;
	}
	case ppt_mode:
		if (k->payload.mode.leaf == pt_mol_exec) {
			enum pt_exec_mode m = pt_get_exec_mode(&k->payload.mode.bits.exec);

			name = "mode.exec";
			snprintf(pay, sizeof(pay), "%s", m == ptem_64bit ? "64-bit" : m == ptem_32bit ?
				 "32-bit" : m == ptem_16bit ? "16-bit" : "cs.l cs.d (unknown)");
		} else {
			name = "mode.tsx";
			snprintf(pay, sizeof(pay), "%s%s", k->payload.mode.bits.tsx.intx ? "intx " : "",
				 k->payload.mode.bits.tsx.abrt ? "abrt" : "");
		}
		break;
	case ppt_pip:
		snprintf(pay, sizeof(pay), "cr3 %016" PRIx64 "%s", k->payload.pip.cr3,
			 k->payload.pip.nr ? ", nr" : "");
		break;
	case ppt_tsc:
		snprintf(pay, sizeof(pay), "%" PRIx64, k->payload.tsc.tsc);
		break;
	case ppt_cbr:
		snprintf(pay, sizeof(pay), "%u", k->payload.cbr.ratio);
		break;
	case ppt_tma:
		snprintf(pay, sizeof(pay), "ctc %x, fc %x", k->payload.tma.ctc, k->payload.tma.fc);
		break;
	case ppt_mtc:
		snprintf(pay, sizeof(pay), "%x", k->payload.mtc.ctc);
		break;
	case ppt_cyc:
		snprintf(pay, sizeof(pay), "%" PRIx64, k->payload.cyc.value);
		break;
	case ppt_vmcs:
		snprintf(pay, sizeof(pay), "%" PRIx64, k->payload.vmcs.base);
		break;
	case ppt_mnt:
		snprintf(pay, sizeof(pay), "%" PRIx64, k->payload.mnt.payload);
		break;
	case ppt_exstop:
		snprintf(pay, sizeof(pay), "%s", k->payload.exstop.ip ? "ip" : "");
		break;
	case ppt_mwait:
		snprintf(pay, sizeof(pay), "%08x, %08x", k->payload.mwait.hints, k->payload.mwait.ext);
		break;
	case ppt_pwre:
		snprintf(pay, sizeof(pay), "c%u.%u%s", k->payload.pwre.state, k->payload.pwre.sub_state,
			 k->payload.pwre.hw ? ", hw" : "");
		break;
	case ppt_pwrx:
		snprintf(pay, sizeof(pay), "last c%u, deepest c%u%s%s%s", k->payload.pwrx.last,
			 k->payload.pwrx.deepest, k->payload.pwrx.interrupt ? ", int" : "",
			 k->payload.pwrx.store ? ", st" : "", k->payload.pwrx.autonomous ? ", hw" : "");
		break;
	case ppt_ptw:
		snprintf(pay, sizeof(pay), "%d: %" PRIx64 "%s", pt_ptw_size(k->payload.ptw.plc),
			 k->payload.ptw.payload, k->payload.ptw.ip ? ", ip" : "");
		break;
	default:
		break;
	}
	if (pay[0])
		snprintf(buf, size, "%-10s %s", name, pay);
	else
		snprintf(buf, size, "%s", name);
}

struct dump {
	FILE *out;
	const struct ptd_image *img;
	size_t piece;
};

static void dump_packet(void *ctx, const struct ptd_packet *p, int err)
{
	struct dump *d = ctx;
	const struct ptd_segment *s = p->seg;
	char line[400];

	if (!p->pkt && !err) {
		fprintf(d->out, "# cpu %u, segment %u: stream offset 0x%llx, %zu bytes\n", s->cpu, s->index,
			s->stream_off, s->size);
		if (s->gap || s->gap_why)
			fprintf(d->out, "# gap: %llu bytes missing before this segment (%s)\n",
				s->gap, s->gap_why ? s->gap_why : "lost");
		d->piece = 0;
		fprintf(d->out, "# record %u at file offset 0x%llx\n", s->pieces[0].seq,
			s->pieces[0].file_off);
		if (p->seg_off == s->size)
			fprintf(d->out, "# no PSB: %zu bytes cannot be decoded\n", s->size);
		else if (p->seg_off)
			fprintf(d->out, "# %llu bytes before the first PSB skipped\n",
				p->seg_off);
		return;
	}
	while (d->piece + 1 < s->npieces && s->pieces[d->piece + 1].seg_off <= p->seg_off) {
		d->piece++;
		fprintf(d->out, "# record %u at file offset 0x%llx\n", s->pieces[d->piece].seq,
			s->pieces[d->piece].file_off);
	}
	if (err) {
		fprintf(d->out, "%016llx  [error: %s; skipping to the next PSB]\n",
			(unsigned long long)(s->stream_off + p->seg_off), pt_errstr(pt_errcode(err)));
		return;
	}
	ptd_format_packet(p, d->img, line, sizeof(line));
	fprintf(d->out, "%016llx  %s\n", s->stream_off + p->seg_off, line);
}

unsigned long ptd_dump_packets(struct ptd_ctx *x, FILE *out, bool report)
{
	struct dump d = { .out = out, .img = x->img };

	return ptd_scan_packets(x, dump_packet, &d, report);
}
