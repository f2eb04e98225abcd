/* SPDX-License-Identifier: MIT */
/*
 * A small ELF file with a symbol table, and the kinds of damage ptdecode's
 * symbol reader must say: shared by tests/host/test_trace_symbols.c and the
 * fuzz_symbols seeds (tests/fuzz/gen_seeds.c).
 *
 * The file: the header, one PT_LOAD segment (.text, 0x40 bytes at 0, all
 * ret), .symtab (the null symbol, main, foo, bar), .strtab, the section
 * headers. A caller damages one field of the spec, then lays it out.
 */
#ifndef TOPAZ_TESTS_SYM_ELF_H
#define TOPAZ_TESTS_SYM_ELF_H

#include <elf.h>
#include <string.h>

enum { SYM_ELF_TEXT = 1, SYM_ELF_SYMTAB, SYM_ELF_STRTAB, SYM_ELF_NSECT };

#define SYM_ELF_EXTENT		0x40	/* .text: the module's image */
#define SYM_ELF_OFF_PHDR	0x40
#define SYM_ELF_OFF_TEXT	0x80
#define SYM_ELF_OFF_SYMTAB	0xc0
#define SYM_ELF_OFF_STRTAB	0x120
#define SYM_ELF_OFF_SHDRS	0x130
#define SYM_ELF_SIZE		(SYM_ELF_OFF_SHDRS + SYM_ELF_NSECT * sizeof(Elf64_Shdr))

struct sym_elf {
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh[SYM_ELF_NSECT];
	Elf64_Sym sym[4];
	char strtab[14];
};

static inline void sym_elf_init(struct sym_elf *s)
{
	static const char names[14] = "\0main\0foo\0bar";

	memset(s, 0, sizeof(*s));
	memcpy(s->eh.e_ident, ELFMAG, SELFMAG);
	s->eh.e_ident[EI_CLASS] = ELFCLASS64;
	s->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	s->eh.e_ident[EI_VERSION] = EV_CURRENT;
	s->eh.e_type = ET_DYN;
	s->eh.e_machine = EM_X86_64;
	s->eh.e_version = EV_CURRENT;
	s->eh.e_ehsize = sizeof(s->eh);
	s->eh.e_phoff = SYM_ELF_OFF_PHDR;
	s->eh.e_phentsize = sizeof(Elf64_Phdr);
	s->eh.e_phnum = 1;
	s->eh.e_shoff = SYM_ELF_OFF_SHDRS;
	s->eh.e_shentsize = sizeof(Elf64_Shdr);
	s->eh.e_shnum = SYM_ELF_NSECT;
	s->ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = SYM_ELF_OFF_TEXT,
			      .p_filesz = SYM_ELF_EXTENT, .p_memsz = SYM_ELF_EXTENT };
	s->sh[SYM_ELF_TEXT] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
					    .sh_offset = SYM_ELF_OFF_TEXT, .sh_size = SYM_ELF_EXTENT };
	s->sh[SYM_ELF_SYMTAB] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = SYM_ELF_OFF_SYMTAB,
					      .sh_size = sizeof(s->sym), .sh_link = SYM_ELF_STRTAB,
					      .sh_entsize = sizeof(Elf64_Sym) };
	s->sh[SYM_ELF_STRTAB] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = SYM_ELF_OFF_STRTAB,
					      .sh_size = sizeof(names) };
	memcpy(s->strtab, names, sizeof(names));
	s->sym[1] = (Elf64_Sym){ 1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, SYM_ELF_TEXT, 0x00, 0x15 };
	s->sym[2] = (Elf64_Sym){ 6, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, SYM_ELF_TEXT, 0x20, 0x06 };
	s->sym[3] = (Elf64_Sym){ 10, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, SYM_ELF_TEXT, 0x30, 0x0a };
}

/* @s laid out as the file's SYM_ELF_SIZE bytes in @out. */
static inline void sym_elf_layout(const struct sym_elf *s, unsigned char *out)
{
	memset(out, 0, SYM_ELF_SIZE);
	memcpy(out, &s->eh, sizeof(s->eh));
	memcpy(out + SYM_ELF_OFF_PHDR, &s->ph, sizeof(s->ph));
	memset(out + SYM_ELF_OFF_TEXT, 0xc3, SYM_ELF_EXTENT);
	memcpy(out + SYM_ELF_OFF_SYMTAB, s->sym, sizeof(s->sym));
	memcpy(out + SYM_ELF_OFF_STRTAB, s->strtab, sizeof(s->strtab));
	memcpy(out + SYM_ELF_OFF_SHDRS, s->sh, sizeof(s->sh));
}

/* The kinds of damage to a symbol table (each said by ptdecode). */
enum sym_elf_damage {
	SYM_ELF_STRTAB_NO_NUL,		/* .strtab's last byte is not a NUL */
	SYM_ELF_BAD_ST_NAME,		/* foo's name past .strtab */
	SYM_ELF_ENTSIZE_0,		/* sh_entsize 0 */
	SYM_ELF_ENTSIZE_ODD,		/* sh_entsize 16 */
	SYM_ELF_LINK_PAST,		/* sh_link 99: no such section */
	SYM_ELF_LINK_NOT_STRTAB,	/* sh_link to .text */
	SYM_ELF_SYMTAB_PAST_EOF,	/* .symtab starts past the end */
	SYM_ELF_SYMTAB_HUGE,		/* .symtab of a terabyte */
	SYM_ELF_SIZE_NOT_WHOLE,		/* 3 entries and 5 bytes */
	SYM_ELF_STRTAB_PAST_EOF,	/* .strtab runs past the end */
	SYM_ELF_BAD_SHNDX,		/* foo in section 50 */
	SYM_ELF_OUTSIDE_MODULE,		/* foo at 0x1000, past the 0x40 bytes */
	SYM_ELF_WRAPS,			/* bar's size wraps past 2^64 */
	SYM_ELF_NDAMAGE
};

static const char *const sym_elf_damage_name[SYM_ELF_NDAMAGE] = {
	"strtab-no-nul", "bad-st-name", "entsize-0", "entsize-16", "link-past", "link-not-strtab",
	"symtab-past-eof", "symtab-huge", "size-not-whole", "strtab-past-eof", "bad-shndx",
	"outside-module", "wraps",
};

static inline void sym_elf_damage(struct sym_elf *s, enum sym_elf_damage k)
{
	switch (k) {
	case SYM_ELF_STRTAB_NO_NUL:
		s->sh[SYM_ELF_STRTAB].sh_size = 13;
		break;
	case SYM_ELF_BAD_ST_NAME: s->sym[2].st_name = 0x1000; break;
	case SYM_ELF_ENTSIZE_0: s->sh[SYM_ELF_SYMTAB].sh_entsize = 0; break;
	case SYM_ELF_ENTSIZE_ODD: s->sh[SYM_ELF_SYMTAB].sh_entsize = 16; break;
	case SYM_ELF_LINK_PAST: s->sh[SYM_ELF_SYMTAB].sh_link = 99; break;
	case SYM_ELF_LINK_NOT_STRTAB: s->sh[SYM_ELF_SYMTAB].sh_link = SYM_ELF_TEXT; break;
	case SYM_ELF_SYMTAB_PAST_EOF: s->sh[SYM_ELF_SYMTAB].sh_offset = 0x300; break;
	case SYM_ELF_SYMTAB_HUGE: s->sh[SYM_ELF_SYMTAB].sh_size = 1ULL << 40; break;
	case SYM_ELF_SIZE_NOT_WHOLE: s->sh[SYM_ELF_SYMTAB].sh_size = 3 * sizeof(Elf64_Sym) + 5; break;
	case SYM_ELF_STRTAB_PAST_EOF: s->sh[SYM_ELF_STRTAB].sh_offset = SYM_ELF_SIZE - 4; break;
	case SYM_ELF_BAD_SHNDX: s->sym[2].st_shndx = 50; break;
	case SYM_ELF_OUTSIDE_MODULE: s->sym[2].st_value = 0x1000; break;
	case SYM_ELF_WRAPS: s->sym[3].st_size = ~0ULL - 0x100; break;
	case SYM_ELF_NDAMAGE: break;
	}
}

/*
 * An ELF of @size bytes in @out (at least 0x1100, or room for the headers)
 * whose @nseg PT_LOAD segments, 1 GiB apart, each hold @filesz file bytes
 * from @off and @memsz in memory; nops and a ret at 0x1000..0x1100 when the
 * file reaches there. No sections.
 */
static inline void sym_elf_segments(unsigned char *out, size_t size, int nseg, Elf64_Off off,
				    Elf64_Xword filesz, Elf64_Xword memsz)
{
	Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_ehsize = sizeof(eh), .e_phoff = sizeof(eh),
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = (Elf64_Half)nseg };

	memset(out, 0, size);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(out, &eh, sizeof(eh));
	for (int i = 0; i < nseg; i++) {
		Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = off,
				  .p_vaddr = (Elf64_Addr)i << 30, .p_filesz = filesz, .p_memsz = memsz };

		memcpy(out + sizeof(eh) + i * sizeof(ph), &ph, sizeof(ph));
	}
	if (size >= 0x1100) {
		memset(out + 0x1000, 0x90, 0xff);
		out[0x10ff] = 0xc3;
	}
}

#endif
