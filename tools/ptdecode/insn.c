// SPDX-License-Identifier: MIT
/*
 * --insn: one line per executed instruction, as ptxed prints them, with the
 * symbol and offset, the raw bytes and (with capstone) the disassembly;
 * events in brackets.
 */
#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ptdecode.h"

void ptd_insn_printer_init(struct ptd_insn_printer *p, FILE *out, const struct ptd_image *img,
			   bool disasm)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->img = img;
	p->disasm = disasm;
}

void ptd_insn_printer_free(struct ptd_insn_printer *p)
{
	free(p->cache);
	p->cache = NULL;
	for (int i = 0; i < 4; i++)
		if (p->cs[i]) {
			csh h = p->cs[i];

			cs_close(&h);
		}
}

static const char *class_name(enum pt_insn_class c)
{
	switch (c) {
	case ptic_call: return "call";
	case ptic_return: return "ret";
	case ptic_jump: return "jmp";
	case ptic_cond_jump: return "jcc";
	case ptic_far_call: return "far call";
	case ptic_far_return: return "far ret";
	case ptic_far_jump: return "far jmp";
	case ptic_ptwrite: return "ptwrite";
	default: return "";
	}
}

static csh capstone(struct ptd_insn_printer *p, enum pt_exec_mode mode)
{
	int m = mode == ptem_16bit ? CS_MODE_16 : mode == ptem_32bit ? CS_MODE_32 : CS_MODE_64;
	int i = mode >= 0 && mode < 4 ? mode : ptem_64bit;
	csh h;

	if (!p->cs[i]) {
		if (cs_open(CS_ARCH_X86, m, &h) != CS_ERR_OK) {
			p->disasm = false;
			return 0;
		}
		p->cs[i] = h;
	}
	return p->cs[i];
}

/*
 * The line is built by hand: with printf's formatting (a call per raw byte,
 * the symbol, the padding) it cost three times capstone's disassembly, and
 * insn.txt is the largest output. The text is what these formats made:
 * "%s%016" PRIx64 "  %-28s %-24s %s\n", raw bytes "%02x" apart by spaces,
 * the symbol as ptd_format_addr() writes it.
 */
static const char hex[] = "0123456789abcdef";

/* Append @s to @buf (@size bytes, @n used), cut as snprintf() cuts. */
static size_t append(char *buf, size_t size, size_t n, const char *s, size_t len)
{
	if (n + 1 >= size)
		return n;
	len = min(len, size - 1 - n);
	memcpy(buf + n, s, len);
	n += len;
	buf[n] = 0;
	return n;
}

/* ptd_format_addr(), through the printer's lookup cache: its length. */
static size_t format_addr(struct ptd_insn_printer *p, u64 addr, char *buf, size_t size)
{
	return ptd_format_sym(ptd_image_lookup_cached(p->img, &p->syms, addr), addr, buf, size);
}

/* capstone's text for @in, into @text: empty when it cannot say. */
static size_t disasm_text(struct ptd_insn_printer *p, const struct pt_insn *in, char *text, size_t size)
{
	csh h = capstone(p, in->mode);
	cs_insn *ci;
	size_t n = 0;

	text[0] = 0;
	if (h && cs_disasm(h, in->raw, in->size, in->ip, 1, &ci) == 1) {
		n = append(text, size, 0, ci->mnemonic, strlen(ci->mnemonic));
		if (ci->op_str[0]) {
			n = append(text, size, n, " ", 1);
			n = append(text, size, n, ci->op_str, strlen(ci->op_str));
		}
		cs_free(ci, 1);
	}
	return n;
}

/*
 * disasm_text() through a cache: a trace runs the same few thousand
 * instructions over and over, and capstone was most of the printer's cost.
 * A slot is used only for the same address, mode and bytes, so the text is
 * what capstone says for them; a text too long for a slot is not kept.
 */
static size_t disassemble(struct ptd_insn_printer *p, const struct pt_insn *in, char *text, size_t size)
{
	struct ptd_disasm *d;
	size_t n;

	if (!p->cache) {
		p->cache = calloc(PTD_DISASM_CACHE, sizeof(*p->cache));
		if (!p->cache)
			abort();
	}
	d = &p->cache[(in->ip ^ (in->ip >> 12)) & (PTD_DISASM_CACHE - 1)];
	if (d->len && d->ip == in->ip && d->mode == (u8)in->mode && d->size == in->size &&
	    !memcmp(d->raw, in->raw, in->size))
		return append(text, size, 0, d->text, d->len);
	n = disasm_text(p, in, text, size);
	if (n && n < sizeof(d->text) && in->size <= sizeof(d->raw)) {
		d->ip = in->ip;
		d->mode = (u8)in->mode;
		d->size = in->size;
		memcpy(d->raw, in->raw, in->size);
		memcpy(d->text, text, n);
		d->len = (u8)n;
	}
	return n;
}

static void print_insn(struct ptd_insn_printer *p, const struct pt_insn *in)
{
	char sym[200], raw[64] = "", text[256] = "", line[600];
	size_t n = 0, ns, nt = 0, l = 0;

	for (u8 i = 0; i < in->size && n + 4 < sizeof(raw); i++) {
		if (i)
			raw[n++] = ' ';
		raw[n++] = hex[in->raw[i] >> 4];
		raw[n++] = hex[in->raw[i] & 0xf];
	}
	raw[n] = 0;
	if (p->disasm)
		nt = disassemble(p, in, text, sizeof(text));
	if (!text[0])
		nt = append(text, sizeof(text), 0, class_name(in->iclass), strlen(class_name(in->iclass)));
	ns = format_addr(p, in->ip, sym, sizeof(sym));

	if (in->speculative) {
		memcpy(line, "? ", 2);
		l = 2;
	}
	for (int i = 15; i >= 0; i--)
		line[l++] = hex[(in->ip >> (4 * i)) & 0xf];
	line[l++] = ' ';
	line[l++] = ' ';
	memcpy(line + l, sym, ns);
	l += ns;
	for (; ns < 28; ns++)
		line[l++] = ' ';
	line[l++] = ' ';
	memcpy(line + l, raw, n);
	l += n;
	for (; n < 24; n++)
		line[l++] = ' ';
	line[l++] = ' ';
	memcpy(line + l, text, nt);
	l += nt;
	line[l++] = '\n';
	fwrite(line, 1, l, p->out);
}

void ptd_insn_event(void *printer, const struct ptd_event *ev)
{
	struct ptd_insn_printer *p = printer;
	const struct ptd_segment *s = ev->seg;
	char a[200], b[200];
	u32 seq;
	u64 rec_off, file_off;

	switch (ev->type) {
	case PTD_EV_SEGMENT:
		fprintf(p->out, "[cpu %u, segment %u at stream offset 0x%llx]\n", s->cpu, s->index,
			s->stream_off);
		if (*ptd_segment_note(s, a, sizeof(a)))
			fprintf(p->out, "[%s]\n", a);
		break;
	case PTD_EV_INSN:
		print_insn(p, ev->insn);
		break;
	case PTD_EV_ENABLED:
		fprintf(p->out, "[%s at %s]\n", ev->value ? "resumed" : "enabled",
			ptd_format_addr(p->img, ev->ip, a, sizeof(a)));
		break;
	case PTD_EV_DISABLED:
		if (ev->ip_valid)
			fprintf(p->out, "[disabled, next ip %s]\n", ptd_format_addr(p->img, ev->ip, a, sizeof(a)));
		else
			fprintf(p->out, "[disabled]\n");
		break;
	case PTD_EV_ASYNC_DISABLED:
		fprintf(p->out, "[disabled at %s]\n", ptd_format_addr(p->img, ev->ip, a, sizeof(a)));
		break;
	case PTD_EV_INTERRUPT:
		fprintf(p->out, "[interrupt: from %s to %s]\n", ptd_format_addr(p->img, ev->ip, a, sizeof(a)),
			ev->ip_valid ? ptd_format_addr(p->img, ev->to, b, sizeof(b)) : "(suppressed)");
		break;
	case PTD_EV_OVERFLOW:
		if (ev->ip_valid)
			fprintf(p->out, "[overflow, resume at %s]\n", ptd_format_addr(p->img, ev->ip, a, sizeof(a)));
		else
			fprintf(p->out, "[overflow]\n");
		break;
	case PTD_EV_PAGING:
		if (!ev->status_update)
			fprintf(p->out, "[paging, cr3: %016llx]\n", ev->value);
		break;
	case PTD_EV_EXEC_MODE:
		if (!ev->status_update)
			fprintf(p->out, "[exec mode: %s]\n", ev->value == ptem_64bit ? "64-bit" :
				ev->value == ptem_32bit ? "32-bit" : ev->value == ptem_16bit ? "16-bit" : "unknown");
		break;
	case PTD_EV_PTWRITE:
		fprintf(p->out, "[ptwrite: %llx]\n", ev->value);
		break;
	case PTD_EV_STOP:
		fprintf(p->out, "[stopped]\n");
		break;
	case PTD_EV_OTHER:
		if (!strcmp(ev->what, "skipped"))
			fprintf(p->out, "[%llu bytes before the first PSB skipped]\n", ev->value);
		else if (!ev->status_update && strcmp(ev->what, "tick") && strcmp(ev->what, "cbr"))
			fprintf(p->out, "[%s]\n", ev->what);
		break;
	case PTD_EV_ERROR:
		ptd_segment_where(s, ev->seg_off, &seq, &rec_off, &file_off);
		fprintf(p->out, "[%llx (record %u, file offset 0x%llx), %s: error: %s]\n",
			s->stream_off + ev->seg_off, seq, file_off,
			ev->ip_valid ? ptd_format_addr(p->img, ev->ip, a, sizeof(a)) : "no ip",
			pt_errstr(pt_errcode(ev->err)));
		break;
	case PTD_EV_END:
		fprintf(p->out, "[end of trace]\n");
		break;
	}
}
