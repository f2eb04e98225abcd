// SPDX-License-Identifier: MIT
/*
 * --perf-data: the trace as a perf.data file that Linux perf decodes with its
 * own Intel PT decoder (docs/trace-format.md, "perf.data"). What perf is
 * told, and why:
 *
 * - one intel_pt event (attr.config in RTIT_CTL bit positions, as perf's
 *   intel_pt PMU format has them) with a sample id, which perf needs to find
 *   "events with Intel Processor Trace data";
 * - PERF_RECORD_AUXTRACE_INFO from the container's header: the RTIT_CTL bits
 *   perf reads the packets with, the CPUID 0x15 ratio, the maximum non-turbo
 *   ratio, the MTC frequency, the address filters as a perf filter string;
 * - the traced code: perf treats addresses below 1 << 63 as user space, so
 *   the kernel is a process ("topaz", pid TOPAZ_PID) whose maps are the
 *   ELF's PT_LOAD segments at the load address (file offset p_offset) and
 *   each sideband image, written as an ELF file beside the perf.data with
 *   the functions ptdecode knows there (image_elf());
 * - the trace: one AUXTRACE queue per contiguous segment. perf joins the
 *   chunks of a queue into one stream, so a gap (lost bytes, damaged
 *   records) must start a new queue: perf then resynchronises at the next
 *   PSB there, as libipt does, instead of decoding across the hole. A
 *   PERF_RECORD_AUX with the truncated flag before each such queue makes
 *   `perf script --itrace=e` report the loss (and after a CPU's last queue
 *   when its stream ends with a loss). Bytes that are no packets are never
 *   given (add_queues()): perf crashes on some. Each trace window is a
 *   queue too (window_start()): perf's thread stack starts afresh at a new
 *   queue, else it nests each window in the one before.
 * - several CPUs: each CPU's segments are queues of their own that carry its
 *   number (AUXTRACE's cpu, the samples' CPU), so perf decodes each CPU's
 *   stream apart and `perf script -F cpu` names it; one CPU's bytes never
 *   share a queue with another's.
 *
 * With TSC packets the file is timed (TSC to ns by the TSC rate, each
 * queue's reference a TSC, one wrap of the TSC packet's counter for a CPU
 * whose clock starts at 0: queue_refs()) when every queue has one
 * (timeable()); without, perf decodes timeless, the queues one after the
 * other in stream order.
 *
 * Never written: what perf cannot take. Where the header says what perf
 * would crash on, the file says what perf can use instead, and ptdecode
 * says so; where a path cannot be said to perf, the export is refused.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "ptdecode.h"

#define PERF_MAGIC		0x32454c4946524550ULL	/* "PERFILE2" */
#define PERF_RECORD_FINISHED_ROUND	68
#define PERF_RECORD_AUXTRACE_INFO	70
#define PERF_RECORD_AUXTRACE		71
#define PERF_AUXTRACE_INTEL_PT	1
#define PERF_RECORD_MISC_BUILD_ID_SIZE	(1 << 15)

/* perf's header feature bits (tools/perf/util/header.h) */
enum { FEAT_BUILD_ID = 2, FEAT_ARCH = 6, FEAT_NRCPUS = 7, FEAT_CPUID = 9, FEAT_AUXTRACE = 18 };

/* priv[] of the Intel PT AUXTRACE_INFO record (tools/perf/util/intel-pt.h) */
enum {
	IPT_PMU_TYPE, IPT_TIME_SHIFT, IPT_TIME_MULT, IPT_TIME_ZERO, IPT_CAP_USER_TIME_ZERO,
	IPT_TSC_BIT, IPT_NORETCOMP_BIT, IPT_HAVE_SCHED_SWITCH, IPT_SNAPSHOT_MODE,
	IPT_PER_CPU_MMAPS, IPT_MTC_BIT, IPT_MTC_FREQ_BITS, IPT_TSC_CTC_N, IPT_TSC_CTC_D,
	IPT_CYC_BIT, IPT_MAX_NONTURBO_RATIO, IPT_FILTER_STR_LEN, IPT_NR,
};

/* The PMU type perf record would read from sysfs: any value, as long as
 * the attr and AUXTRACE_INFO agree (the decoder checks only that). */
#define TOPAZ_PMU_TYPE		8
#define TOPAZ_PID		1
#define EVENT_ID		1
#define SAMPLE_TYPE		(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
				 PERF_SAMPLE_CPU)

/* attr.config bits perf's intel_pt format defines, at their RTIT_CTL places
 * (bit 0, TraceEn there, is perf's "pt") */
#define PT_CONFIG_BITS		(BIT_ULL(0) | BIT_ULL(1) | BIT_ULL(4) | BIT_ULL(5) | BIT_ULL(9) | \
				 BIT_ULL(10) | BIT_ULL(11) | BIT_ULL(12) | BIT_ULL(13) | \
				 (0xfULL << 14) | (0xfULL << 19) | (0xfULL << 24))
#define RTIT_BRANCH_EN		BIT_ULL(13)

struct perf_file_section {
	u64 offset, size;
};

struct perf_file_header {
	u64 magic, size, attr_size;
	struct perf_file_section attrs, data, event_types;
	u64 features[4];
};

/* The output, with the offsets the header needs later. */
struct out {
	FILE *f;
	const char *path;
	bool failed;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->f) != n)
		o->failed = true;
}

static void put_zeros(struct out *o, size_t n)
{
	static const u8 z[64];

	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		put(o, z, k);
		n -= k;
	}
}

static u64 where(struct out *o)
{
	long p = ftell(o->f);

	if (p < 0)
		o->failed = true;
	return p < 0 ? 0 : (u64)p;
}

/* The sample_id_all trailer of a non-sample record (SAMPLE_TYPE's order). */
static void put_sample_id(struct out *o, u32 tid, u32 cpu)
{
	u32 pid_tid[2] = { TOPAZ_PID, tid }, cpu_res[2] = { cpu, 0 };
	u64 time = 0, id = EVENT_ID;	/* before every decoded event */

	put(o, pid_tid, sizeof(pid_tid));
	put(o, &time, sizeof(time));
	put(o, cpu_res, sizeof(cpu_res));
	put(o, &id, sizeof(id));
}

#define SAMPLE_ID_SIZE	32

static void put_header(struct out *o, u32 type, u16 misc, size_t size)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = (u16)size };

	put(o, &h, sizeof(h));
}

/* A string field padded with NULs to a multiple of 8 (perf's records). */
static size_t padded8(const char *s)
{
	return (strlen(s) + 1 + 7) & ~(size_t)7;
}

static void put_padded(struct out *o, const char *s, size_t len)
{
	size_t n = strlen(s);

	put(o, s, n);
	put_zeros(o, len - n);
}

static void put_comm(struct out *o, u32 tid, u32 cpu)
{
	const char *comm = "topaz";
	u32 ids[2] = { TOPAZ_PID, tid };
	size_t len = padded8(comm);

	put_header(o, PERF_RECORD_COMM, PERF_RECORD_MISC_USER,
		   sizeof(struct perf_event_header) + 8 + len + SAMPLE_ID_SIZE);
	put(o, ids, sizeof(ids));
	put_padded(o, comm, len);
	put_sample_id(o, tid, cpu);
}

static void put_mmap(struct out *o, u64 start, u64 len, u64 pgoff, const char *file)
{
	u32 ids[2] = { TOPAZ_PID, TOPAZ_PID };
	u64 v[3] = { start, len, pgoff };
	size_t flen = padded8(file);

	put_header(o, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER,
		   sizeof(struct perf_event_header) + 8 + sizeof(v) + flen + SAMPLE_ID_SIZE);
	put(o, ids, sizeof(ids));
	put(o, v, sizeof(v));
	put_padded(o, file, flen);
	put_sample_id(o, TOPAZ_PID, 0);
}

/* ------------------------------------------------------------ the code */

/* A map perf is given: where, from which file and offset. */
struct pmap {
	u64 start, len, pgoff;
	char *file;
};

struct maps {
	struct pmap *v;
	size_t n;
};

static void add_map(struct maps *m, u64 start, u64 len, u64 pgoff, const char *file)
{
	m->v = realloc(m->v, (m->n + 1) * sizeof(*m->v));
	if (!m->v)
		abort();
	m->v[m->n++] = (struct pmap){ start, len, pgoff, strdup(file) };
}

/*
 * "PATH.images": the folder the image files go to, made on first use and
 * opened once. perf.data often goes to a shared folder such as /tmp, so the
 * folder must be a real one of ours (not a link, not another user's) and
 * each file is created there afresh (create_image()), never through a link.
 * perf's address filter cannot carry a space or a comma in a file name
 * (it ends the name there): when the trace is filtered, a folder whose
 * absolute path holds one is refused.
 */
struct images {
	const char *path;	/* the perf.data */
	bool filtered;		/* the filter string names the files */
	bool tried;
	int fd;			/* the folder, or -1 */
	char abs[PATH_MAX];	/* its absolute path */
};

static bool filter_safe(const char *s)
{
	return !strpbrk(s, " ,");
}

static int images_open(struct images *im, struct ptd_diags *d)
{
	char dir[PATH_MAX];
	struct stat st;
	bool made;

	if (im->tried)
		return im->fd;
	im->tried = true;
	im->fd = -1;
	if ((size_t)snprintf(dir, sizeof(dir), "%s.images", im->path) >= sizeof(dir)) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s.images: the path is too long", im->path);
		return -1;
	}
	made = !mkdir(dir, 0777);
	if (!made && errno != EEXIST) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	im->fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (im->fd < 0) {
		int err = errno;

		ptd_diag_add(d, -1, 0, "--perf-data: %s: %s", dir,
			     !lstat(dir, &st) && S_ISLNK(st.st_mode) ?
			     "a link, not a folder: not written through" : strerror(err));
		goto fail;
	}
	if (fstat(im->fd, &st) || !realpath(dir, im->abs)) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: another user's folder: not written into", dir);
		goto fail;
	}
	if (im->filtered && !filter_safe(im->abs)) {
		ptd_diag_add(d, -1, 0,
			     "--perf-data: %s: the path holds a space or a comma, which perf's address filter cannot carry (it ends a file name there): write the perf.data where the path has neither",
			     im->abs);
		goto fail;
	}
	return im->fd;
fail:
	if (im->fd >= 0)
		close(im->fd);
	if (made)
		rmdir(dir);
	im->fd = -1;
	return -1;
}

static void images_close(struct images *im)
{
	if (im->tried && im->fd >= 0)
		close(im->fd);
}

/* A file name made of @s perf can take in a filter string and that names
 * nothing else (no '/', no space, no comma): other bytes become '_'. */
static void safe_name(char *s)
{
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && !strchr("._+-", *s))
			*s = '_';
}

/* Was "@dir/@name" given to perf already (in @m)? */
static bool name_taken(const struct maps *m, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	for (size_t i = 0; i < m->n; i++)
		if (!strncmp(m->v[i].file, dir, n) && m->v[i].file[n] == '/' &&
		    !strcmp(m->v[i].file + n + 1, name))
			return true;
	return false;
}

/*
 * Create "@stem@ext" in the images folder (a name no earlier map has: two
 * images of the same name and address get two files, "-2" the second), its
 * absolute path in @file. What is there already (an earlier export's file,
 * a link someone left) is removed, never followed: O_EXCL|O_NOFOLLOW.
 * Returns a descriptor open for writing, or -1 (said in @d).
 */
static int create_image(struct images *im, const struct maps *m, const char *stem,
			const char *ext, char *file, size_t size, struct ptd_diags *d)
{
	char name[NAME_MAX + 1];
	int fd;

	if (images_open(im, d) < 0)
		return -1;
	snprintf(name, sizeof(name), "%s%s", stem, ext);
	for (unsigned int k = 2; name_taken(m, im->abs, name); k++)
		snprintf(name, sizeof(name), "%s-%u%s", stem, k, ext);
	snprintf(file, size, "%s/%s", im->abs, name);
	if (unlinkat(im->fd, name, 0) && errno != ENOENT) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: cannot replace: %s", file, strerror(errno));
		return -1;
	}
	fd = openat(im->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		ptd_diag_add(d, -1, 0, "--perf-data: %s: cannot create: %s", file, strerror(errno));
	return fd;
}

/* Write @n bytes to @fd: false on a failure (errno says which). */
static bool write_all(int fd, const void *p, size_t n)
{
	const u8 *b = p;

	while (n) {
		ssize_t k = write(fd, b, n);

		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

/*
 * The copy of the ELF perf is given, "PATH.images/NAME" (NAME as
 * safe_name() makes it). perf reads code at file offsets (address - map
 * start + pgoff) and, for an ET_DYN object, takes symbol values for file
 * offsets too; topaz.so's segments lie at file offset = address + 0x1000,
 * so every symbol would be off by a page. For ET_EXEC perf converts symbol
 * values to file offsets through the section headers: the copy is the same
 * file with e_type ET_EXEC. Returns its absolute path (malloc'd) or NULL.
 */
static char *elf_copy(const char *elf, struct images *im, const struct maps *m,
		      struct ptd_diags *d)
{
	char stem[NAME_MAX + 1], file[PATH_MAX + NAME_MAX + 2], buf[65536];
	const char *base = strrchr(elf, '/');
	u16 type = ET_EXEC;
	bool ok = true, first = true;
	size_t n;
	FILE *in;
	int fd;

	in = fopen(elf, "rb");
	if (!in) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: %s", elf, strerror(errno));
		return NULL;
	}
	snprintf(stem, sizeof(stem), "%s", base ? base + 1 : elf);
	safe_name(stem);
	fd = create_image(im, m, stem, "", file, sizeof(file), d);
	if (fd < 0) {
		fclose(in);
		return NULL;
	}
	while (ok && (n = fread(buf, 1, sizeof(buf), in))) {
		if (first && n >= offsetof(Elf64_Ehdr, e_type) + sizeof(type))
			memcpy(buf + offsetof(Elf64_Ehdr, e_type), &type, sizeof(type));
		first = false;
		ok = write_all(fd, buf, n);
	}
	ok = ok && !ferror(in);
	fclose(in);
	if (close(fd))
		ok = false;
	if (!ok) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: cannot write: %s", file, strerror(errno));
		return NULL;
	}
	return strdup(file);
}

/* The ELF's PT_LOAD segments at @load: a map each, read at p_offset. */
static int elf_maps(const char *elf, u64 load, struct images *im, struct maps *m,
		    struct ptd_diags *d)
{
	size_t n;
	Elf *e;
	int fd;
	char *copy;

	elf_version(EV_CURRENT);
	fd = open(elf, O_RDONLY);
	e = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getphdrnum(e, &n) || elf_kind(e) != ELF_K_ELF) {
		ptd_diag_add(d, -1, 0, "--perf-data: %s: not an ELF file perf can map", elf);
		if (e)
			elf_end(e);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	copy = elf_copy(elf, im, m, d);
	for (size_t i = 0; copy && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_filesz)
			add_map(m, load + ph.p_vaddr, ph.p_filesz, ph.p_offset, copy);
	}
	free(copy);
	elf_end(e);
	close(fd);
	return copy ? 0 : -1;
}

/* A growing buffer: an image's ELF file as it is built. */
struct buf {
	u8 *p;
	size_t n, cap;
};

static size_t buf_put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->n;

	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (p)
		memcpy(b->p + b->n, p, n);
	else
		memset(b->p + b->n, 0, n);
	b->n += n;
	return at;
}

static void buf_align(struct buf *b, size_t a)
{
	buf_put(b, NULL, (a - b->n % a) % a);
}

/* A function symbol of the ELF's section 1 into @sym, its name into @str. */
static void put_sym(struct buf *sym, struct buf *str, const char *name, u64 start, u64 size)
{
	Elf64_Sym e = { .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1,
			.st_value = start, .st_size = size };

	e.st_name = (u32)buf_put(str, name, strlen(name) + 1);
	buf_put(sym, &e, sizeof(e));
}

/*
 * @img's functions in [@lo, @lo + @size) into the .symtab @sym (names in
 * @str). @module's "MODULE!" in a name is left out: the file perf shows
 * beside it names the module. An image without any is one function named
 * after the module: perf then says "DxeCore+0x52f" as ptdecode does, not
 * an offset in a file it made up.
 */
static void image_syms(const struct ptd_image *img, u64 lo, u64 size, const char *module,
		       struct buf *sym, struct buf *str)
{
	size_t plen = strlen(module), had = sym->n;

	for (size_t i = 0; img && i < img->nsyms; i++) {
		const struct ptd_symbol *f = &img->syms[i];
		const char *name = f->name;

		if (f->start < lo || f->start - lo >= size || !name[0])
			continue;
		if (plen && !strncmp(name, module, plen) && name[plen] == '!' && name[plen + 1])
			name += plen + 1;
		put_sym(sym, str, name, f->start,
			f->end > f->start ? min(f->end, lo + size) - f->start : 0);
	}
	if (sym->n == had)
		put_sym(sym, str, module[0] ? module : "image", lo, size);
}

/*
 * Sideband image @module's @size bytes at @vaddr as an ELF file perf reads
 * (into @out): ET_EXEC, one PT_LOAD segment of the bytes at file offset
 * *@pgoff (page-aligned with the address, as a linker would place it),
 * a .text section over them and a .symtab of @img's functions there. perf
 * takes an ET_EXEC's symbol values through the section to file offsets,
 * which its map (@vaddr at *@pgoff) reads code at too.
 */
static void image_elf(struct buf *out, const struct ptd_image *img, const char *module, u64 vaddr,
		      const void *bytes, size_t size, u64 *pgoff)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	struct buf sym = { 0 }, str = { 0 };
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_entry = vaddr,
		.e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1, .e_shentsize = sizeof(Elf64_Shdr),
		.e_shnum = 5, .e_shstrndx = 4,
	};
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = vaddr,
			  .p_paddr = vaddr, .p_filesz = size, .p_memsz = size, .p_align = 0x1000 };
	Elf64_Shdr sh[5] = { { 0 } };

	buf_put(&sym, NULL, sizeof(Elf64_Sym));	/* symbol 0 */
	buf_put(&str, "", 1);
	image_syms(img, vaddr, size, module, &sym, &str);
	buf_put(out, NULL, sizeof(eh) + sizeof(ph));
	buf_put(out, NULL, 0x1000 + (vaddr & 0xfff) - out->n);
	ph.p_offset = *pgoff = buf_put(out, bytes, size);
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = vaddr, .sh_offset = ph.p_offset, .sh_size = size, .sh_addralign = 1 };
	buf_align(out, 8);
	sh[2] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = buf_put(out, sym.p, sym.n),
			      .sh_size = sym.n, .sh_link = 3, .sh_info = 1, .sh_addralign = 8,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[3] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = buf_put(out, str.p, str.n),
			      .sh_size = str.n, .sh_addralign = 1 };
	sh[4] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_STRTAB,
			      .sh_offset = buf_put(out, shstr, sizeof(shstr)), .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	buf_align(out, 8);
	eh.e_shoff = buf_put(out, sh, sizeof(sh));
	memcpy(out->p, &eh, sizeof(eh));
	memcpy(out->p + sizeof(eh), &ph, sizeof(ph));
	free(sym.p);
	free(str.p);
}

/*
 * Each sideband image as an ELF file perf reads code and symbols from
 * (image_elf(): the functions @img has there, from the trace's symbols
 * sideband or --symbols), "NAME-ADDR.elf" in the images folder (NAME as
 * safe_name() makes it).
 */
static void image_maps(const struct ptd_container *c, const struct ptd_image *img,
		       struct images *im, struct maps *m, struct ptd_diags *d)
{
	char file[PATH_MAX + NAME_MAX + 2];

	for (size_t i = 0; i < c->nrecs; i++) {
		const struct ptd_record *r = &c->recs[i];
		const struct tpz_sideband *sb = &r->body.sideband;
		char stem[sizeof(sb->name) + 24], module[sizeof(sb->name) + 1];
		struct buf elf = { 0 };
		u64 pgoff;
		bool ok;
		int fd;

		if (r->type != TPZ_REC_SIDEBAND || sb->kind == TPZ_SB_SYMBOLS)
			continue;	/* symbols: in @img, into each image's ELF */
		if (sb->kind != TPZ_SB_IMAGE) {
			ptd_diag_add(d, r->seq, r->offset,
				     "--perf-data: sideband kind %u is not known: not given to perf", sb->kind);
			continue;
		}
		if (!r->payload_size)
			continue;
		snprintf(module, sizeof(module), "%.*s", (int)strnlen(sb->name, sizeof(sb->name)),
			 sb->name);
		snprintf(stem, sizeof(stem), "%s-%llx", module[0] ? module : "image", sb->vaddr);
		safe_name(stem);
		fd = create_image(im, m, stem, ".elf", file, sizeof(file), d);
		if (fd < 0) {
			if (im->fd < 0)
				return;	/* no folder: said once */
			continue;
		}
		image_elf(&elf, img, module, sb->vaddr, r->payload, r->payload_size, &pgoff);
		ok = write_all(fd, elf.p, elf.n);
		free(elf.p);
		if (close(fd))
			ok = false;
		if (!ok) {
			ptd_diag_add(d, r->seq, r->offset, "--perf-data: %s: cannot write: %s", file,
				     strerror(errno));
			continue;
		}
		add_map(m, sb->vaddr, r->payload_size, pgoff, file);
	}
}

/* ------------------------------------------------------------ records */

/* With TSC packets perf orders events by time; without, it decodes timeless. */
static bool timed(const struct tpz_header *h)
{
	return h->rtit_ctl & BIT_ULL(10);
}

/* The TSC rate: measured, else from CPUID 0x15 (crystal x EBX/EAX), else the
 * maximum non-turbo ratio x 100 MHz; 0 when none is known. */
static u64 tsc_rate(const struct tpz_header *h)
{
	if (h->tsc_hz)
		return h->tsc_hz;
	if (h->leaf15[0] && h->leaf15[1] && h->leaf15[2])
		return (u64)h->leaf15[2] * h->leaf15[1] / h->leaf15[0];
	return (u64)h->nom_freq * 100000000ULL;
}

/* ADDRn_CFG of range @i when perf's filter string names it (1 filter, 2
 * stop, over a range that is one), else 0 */
static unsigned int range_cfg(const struct tpz_header *h, unsigned int i)
{
	unsigned int cfg = (unsigned int)(h->rtit_ctl >> (32 + 4 * i)) & 0xf;

	return (cfg == 1 || cfg == 2) && h->addr[i][1] >= h->addr[i][0] ? cfg : 0;
}

static bool filtered(const struct tpz_header *h)
{
	return range_cfg(h, 0) || range_cfg(h, 1) || range_cfg(h, 2) || range_cfg(h, 3);
}

/*
 * The address filters as perf's filter string: "filter 0xOFF/0xSIZE@FILE,stop ...".
 * perf matches a TIP.PGD's address in user space (all of topaz, for perf) by
 * file and file offset, through the map that holds it: a range without the
 * file matches nothing there, and perf would take every direct branch for
 * one leaving the filter. So each range is named by the map it lies in.
 */
static void filter_string(const struct tpz_header *h, const struct maps *m, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < 4 && n < size; i++) {
		unsigned int cfg = range_cfg(h, i);
		u64 a = h->addr[i][0], b = h->addr[i][1], off = a;
		const char *file = NULL;

		if (!cfg)
			continue;
		/* the first map holding it: the one read there (see the MMAPs) */
		for (size_t k = 0; !file && k < m->n; k++)
			if (a >= m->v[k].start && a - m->v[k].start < m->v[k].len) {
				file = m->v[k].file;
				off = a - m->v[k].start + m->v[k].pgoff;
			}
		n += (size_t)snprintf(buf + n, size - n, "%s%s 0x%llx/0x%llx%s%s", n ? "," : "",
				      cfg == 1 ? "filter" : "stop", off,
				      b - a + 1, file ? "@" : "", file ? file : "");
	}
}

/*
 * TSC to perf time: ns = TSC * mult >> shift (perf_event_mmap_page's
 * time_mult and time_shift), counted from the TSC's zero. mult is a u32 and
 * perf divides by it: a rate so high that it would be 0 is taken as unknown,
 * and an unknown rate makes one TSC tick a "ns".
 */
static void time_conv(u64 hz, u64 *mult, u64 *shift)
{
	*mult = 1;
	*shift = 0;
	if (!hz || (((unsigned __int128)1000000000 << 31) / hz) == 0)
		return;
	*shift = 31;
	*mult = (u64)(((unsigned __int128)1000000000 << 31) / hz);
	while (*mult > 0xffffffffULL) {
		*mult >>= 1;
		(*shift)--;
	}
}

/*
 * The maximum non-turbo ratio perf is given: the header's, else what perf
 * itself would derive, never 0. perf 6.1 takes a ratio of 0 as unknown and
 * derives it as (TSC Hz + 50 MHz) / 100 MHz from time_mult, then divides
 * the TSC rate by it (cbr2khz): below 50 MHz that is a division by zero
 * (SIGFPE). perf keeps it in 32 bits, and a CPU's is 8 bits
 * (MSR_PLATFORM_INFO, CBR packets): a larger one in the header is said and
 * replaced. @mult and @shift: what perf converts TSC ticks with.
 */
static u64 nonturbo_ratio(const struct tpz_header *h, u64 mult, u64 shift, struct ptd_diags *d)
{
	u64 hz = (u64)(((unsigned __int128)1000000000 << shift) / mult);

	if (h->nom_freq && h->nom_freq <= 0xff)
		return h->nom_freq;
	if (h->nom_freq)
		ptd_diag_add(d, 0, 0,
			     "--perf-data: the header's maximum non-turbo ratio %u is not one a CPU has (8 bits): perf is given one from the TSC rate",
			     h->nom_freq);
	hz = (hz + 50000000) / 100000000;
	return hz < 1 ? 1 : hz > 0xff ? 0xff : hz;
}

static void put_auxtrace_info(struct out *o, const struct tpz_header *h, const struct maps *m,
			      struct ptd_diags *d)
{
	u64 priv[IPT_NR] = { 0 };
	char filter[4 * (PATH_MAX + 64)];
	size_t flen;
	u32 type[2] = { PERF_AUXTRACE_INTEL_PT, 0 };
	u64 mult = 1, shift = 0;

	filter_string(h, m, filter, sizeof(filter));
	flen = filter[0] ? padded8(filter) : 0;
	priv[IPT_PMU_TYPE] = TOPAZ_PMU_TYPE;
	if (timed(h)) {
		u64 hz = tsc_rate(h);

		time_conv(hz, &mult, &shift);
		if (hz && mult == 1 && !shift)
			ptd_diag_add(d, 0, 0,
				     "--perf-data: a TSC rate of %llu Hz is not one perf can convert: its times are in TSC ticks",
				     hz);
		priv[IPT_CAP_USER_TIME_ZERO] = 1;
	}
	priv[IPT_TIME_SHIFT] = shift;
	priv[IPT_TIME_MULT] = mult;
	priv[IPT_TSC_BIT] = BIT_ULL(10);
	priv[IPT_NORETCOMP_BIT] = BIT_ULL(11);
	priv[IPT_MTC_BIT] = BIT_ULL(9);
	priv[IPT_MTC_FREQ_BITS] = 0xfULL << 14;
	priv[IPT_CYC_BIT] = BIT_ULL(1);
	priv[IPT_TSC_CTC_N] = h->leaf15[1];
	priv[IPT_TSC_CTC_D] = h->leaf15[0];
	priv[IPT_MAX_NONTURBO_RATIO] = nonturbo_ratio(h, mult, shift, d);
	priv[IPT_FILTER_STR_LEN] = filter[0] ? strlen(filter) : 0;
	put_header(o, PERF_RECORD_AUXTRACE_INFO, 0,
		   sizeof(struct perf_event_header) + sizeof(type) + sizeof(priv) + flen);
	put(o, type, sizeof(type));
	put(o, priv, sizeof(priv));
	if (flen)
		put_padded(o, filter, flen);
}

/* PERF_RECORD_AUX: "bytes were lost before @offset" (perf: "Lost trace data"). */
static void put_aux_lost(struct out *o, u64 offset, u64 size, u32 tid, u32 cpu)
{
	u64 v[3] = { offset, size, PERF_AUX_FLAG_TRUNCATED };

	put_header(o, PERF_RECORD_AUX, PERF_RECORD_MISC_USER,
		   sizeof(struct perf_event_header) + sizeof(v) + SAMPLE_ID_SIZE);
	put(o, v, sizeof(v));
	put_sample_id(o, tid, cpu);
}

/*
 * What perf is given as one AUXTRACE queue: @len bytes of segment @s from
 * @off, after @head (@nhead bytes, owned: a trace window's own PSB+ and
 * its first packets, see window_head()); @ref its reference (queue_refs()),
 * @first whether it is the segment's first (the loss before the segment
 * goes before it), @head_tsc the TSC packet's value in @head (@head_timed).
 */
struct queue {
	const struct ptd_segment *s;
	size_t off, len;
	u64 ref;
	bool first;
	u8 *head;
	size_t nhead;
	u64 head_tsc;
	bool head_timed;
};

struct queues {
	struct queue *v;
	size_t n;
};

/* @x, with its bytes up to @end, as the next queue (none when it has no bytes);
 * @x is emptied for the next one. */
static void add_queue(struct queues *q, struct queue *x, size_t end)
{
	x->len = end - x->off;
	if (x->len || x->nhead) {
		q->v = realloc(q->v, (q->n + 1) * sizeof(*q->v));
		if (!q->v)
			abort();
		x->first = !q->n || q->v[q->n - 1].s != x->s;
		q->v[q->n++] = *x;
	} else {
		free(x->head);
	}
	*x = (struct queue){ .s = x->s };
}

static void free_queues(struct queues *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].head);
	free(q->v);
}

/*
 * Where the trace follows its IPs: the last IP (for compressed ones), and
 * whether tracing went off asynchronously (a FUP, then TIP.PGD: an
 * interrupt whose handler is not traced, or the end of a trace window,
 * pt_trace_end()) and at which IP.
 */
struct ip_walk {
	u64 last_ip, fup_ip, off_ip;
	bool in_psb, fup, off_async;
};

/*
 * @p: is it the TIP.PGE that opens a new trace
 * window? Tracing went off asynchronously and comes on at another IP (an
 * interrupt's comes on where it went off): the code between ran untraced,
 * its calls and returns unseen. perf's thread stack would keep the call
 * that ended the last window (pt_trace_end's caller) and nest each window
 * in the one before; a new queue flushes it (window_head()). The walk's
 * state @w is updated.
 */
static bool window_start(struct ip_walk *w, const struct pt_packet *p)
{
	bool start = false;
	u64 ip;

	switch (p->type) {
	case ppt_psb:
		w->in_psb = true;
		w->last_ip = 0;
		break;
	case ppt_psbend:
	case ppt_ovf:
		w->in_psb = false;
		w->fup = w->off_async = false;
		break;
	case ppt_fup:
		w->last_ip = ptd_packet_ip(&p->payload.ip, w->last_ip);
		w->fup_ip = w->last_ip;
		w->fup = !w->in_psb && p->payload.ip.ipc != pt_ipc_suppressed;
		break;
	case ppt_tip_pgd:
		w->last_ip = ptd_packet_ip(&p->payload.ip, w->last_ip);
		w->off_async = w->fup;
		w->off_ip = w->fup_ip;
		w->fup = false;
		break;
	case ppt_tip_pge:
		ip = ptd_packet_ip(&p->payload.ip, w->last_ip);
		start = w->off_async && p->payload.ip.ipc != pt_ipc_suppressed && ip != w->off_ip;
		w->last_ip = ip;
		w->off_async = w->fup = false;
		break;
	case ppt_tip:
		w->last_ip = ptd_packet_ip(&p->payload.ip, w->last_ip);
		w->fup = w->off_async = false;
		break;
	case ppt_tnt_8:
	case ppt_tnt_64:
		w->fup = w->off_async = false;
		break;
	default:
		break;
	}
	return start;
}

static size_t put_le(u8 *b, u64 v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		b[i] = (u8)(v >> (8 * i));
	return n;
}

/* A trace window's start: its bytes after the TIP.PGD that ended the last
 * one from @from, its TIP.PGE at [@pge, @end) with the IP @ip. */
struct window {
	size_t from, pge, end;
	u64 ip;
};

/*
 * The head of window @win's queue: perf's decoder starts a queue at a PSB,
 * so the window gets one of its own (PSB, a TSC packet of @tsc when @timed,
 * PSBEND; no FUP: tracing is off there), then the window's bytes from the
 * TIP.PGD on, then its TIP.PGE with the whole IP (a PSB resets the last IP
 * its compressed one built on). The rest of the window is the segment's
 * bytes, unchanged. Returns the head's size, the head in @out (malloc'd).
 */
static size_t window_head(const struct ptd_segment *s, const struct window *win, bool timed,
			  u64 tsc, u8 **out)
{
	u8 *b = malloc(16 + 8 + 2 + (win->pge - win->from) + 9);
	size_t n = 0;
	bool sext = (u64)((s64)(win->ip << 16) >> 16) == win->ip;

	if (!b)
		abort();
	for (int i = 0; i < 8; i++) {
		b[n++] = 0x02;
		b[n++] = 0x82;
	}
	if (timed) {
		b[n++] = 0x19;
		n += put_le(b + n, tsc, 7);
	}
	b[n++] = 0x02;
	b[n++] = 0x23;
	memcpy(b + n, s->data + win->from, win->pge - win->from);
	n += win->pge - win->from;
	b[n++] = (u8)(0x11 | ((sext ? pt_ipc_sext_48 : pt_ipc_full) << 5));
	n += put_le(b + n, win->ip, sext ? 6 : 8);
	*out = b;
	return n;
}

/*
 * @s as perf's queues: cut where a packet cannot be decoded, resumed at the
 * next PSB, as libipt resynchronises (the bytes between are no packets, for
 * either decoder). perf 6.1 segfaults on some of them (an unknown opcode,
 * later part of a PSB's pattern: found by fuzz_perfdata), so it is never
 * given them. Bytes before the first PSB stay (both decoders skip them).
 * The last queue ends after the last whole packet: a packet cut by the end
 * of the segment (the trace unit stopped, ToPA full: the rest of the packet
 * is lost, as on hardware) would be read by perf 6.1 as flow (a TNT bit it
 * never had, code that did not run) or, with the PAD bytes after it, as
 * a bad packet; libipt reads up to it.
 * Each trace window (window_start()) is a queue of its own too, so that
 * perf's call graph starts afresh there (a new queue is a new trace number
 * for perf's thread stack, which it flushes). In a timed trace only a
 * window with a TSC packet before its TIP.PGE (as TraceEn set gives one,
 * SDM "Packet Generation"): its PSB+ gets that time. perf orders a CPU's
 * queues by time and keeps a queue's times from going back: with the last
 * TSC before the window, what perf estimated from MTC and CYC for the last
 * window's end was later, and perf decoded the window inside the last one;
 * with the window's first TSC, later than its start, the window's own
 * estimates ran ahead into the next one (make run with pt.tsc pt.mtc
 * pt.cyc, the software trace unit's windows have no such TSC packet).
 */
static void add_queues(struct queues *q, const struct ptd_segment *s, bool timed)
{
	size_t size = s->size;
	struct pt_packet_decoder *d;
	struct ip_walk w = { 0 };
	struct queue x = { .s = s };
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t at, after_pgd = 0, sync;
	bool off = false, on_tsc = false;
	u64 tsc = 0;
	int r;

	pt_config_init(&cfg);
	cfg.begin = s->data;
	cfg.end = s->data + size;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d || pt_pkt_sync_forward(d) < 0) {
		add_queue(q, &x, size);
		goto out;
	}
	for (;;) {
		if (pt_pkt_get_offset(d, &at) < 0)
			at = size;
		r = pt_pkt_next(d, &p, sizeof(p));
		if (r >= 0 && p.type == ppt_tip_pgd)
			off = true, on_tsc = false;
		else if (r >= 0 && p.type == ppt_tsc && off)
			on_tsc = true, tsc = p.payload.tsc.tsc;
		if (r >= 0 && window_start(&w, &p) && (!timed || on_tsc)) {
			struct window win = { after_pgd, at, at + (size_t)r, w.last_ip };
			u8 *head;
			size_t n = window_head(s, &win, timed, tsc, &head);

			add_queue(q, &x, win.from);
			x = (struct queue){ .s = s, .off = win.end, .head = head, .nhead = n,
					    .head_tsc = tsc, .head_timed = timed };
		}
		if (r >= 0 && p.type == ppt_tip_pgd)
			after_pgd = at + (size_t)r;
		else if (r >= 0 && p.type == ppt_tip_pge)
			off = false;
		if (r >= 0)
			continue;
		/* the failed packet is where the decoder stands */
		if (pt_pkt_get_offset(d, &at) < 0)
			at = size;
		add_queue(q, &x, at);
		if (r == -pte_eos || pt_pkt_sync_forward(d) < 0 || pt_pkt_get_sync_offset(d, &sync) < 0)
			break;
		x.off = sync;
		w = (struct ip_walk){ 0 };
		off = on_tsc = false;
	}
out:
	if (d)
		pt_pkt_free_decoder(d);
}

/* One queue's chunk: the record, then the data padded to 8 bytes (PAD packets). */
static void put_auxtrace(struct out *o, const struct queue *q, u32 idx, u32 tid,
			 u64 *index_off, u64 *index_size)
{
	struct {
		struct perf_event_header h;
		u64 size, offset, reference;
		u32 idx, tid, cpu, reserved;
	} __packed a = {
		.h = { .type = PERF_RECORD_AUXTRACE, .size = 48 },
		.size = (q->nhead + q->len + 7) & ~(u64)7,
		.offset = q->s->stream_off + q->off,
		.reference = q->ref,
		.idx = idx,
		.tid = tid,
		.cpu = q->s->cpu,
	};

	*index_off = where(o);
	*index_size = sizeof(a);	/* the record; its data follows (perf checks this size) */
	put(o, &a, sizeof(a));
	put(o, q->head, q->nhead);
	put(o, q->s->data + q->off, q->len);
	put_zeros(o, a.size - q->nhead - q->len);
}

/*
 * A queue's reference: a TSC, as perf record stores the TSC it read the AUX
 * data at. perf's decoder takes it as the time before the first TSC packet
 * (perf 6.1 segfaults in timed decoding without it) and for the TSC's top byte:
 * the TSC its first chunk was drained at, else the session's start.
 */
static u64 segment_tsc(const struct ptd_container *c, const struct ptd_segment *s)
{
	for (size_t i = 0; s->npieces && i < c->nrecs; i++)
		if (c->recs[i].type == TPZ_REC_TRACE && c->recs[i].seq == s->pieces[0].seq &&
		    c->recs[i].body.trace.tsc)
			return c->recs[i].body.trace.tsc;
	return c->header.start_tsc;
}

/* Packets a PSB+ may hold before its TSC: none moves the flow. */
static bool in_psb_plus(enum pt_packet_type t)
{
	return t == ppt_psb || t == ppt_pad || t == ppt_tma || t == ppt_cbr || t == ppt_pip ||
	       t == ppt_mode || t == ppt_vmcs || t == ppt_mnt || t == ppt_fup;
}

/*
 * The value of @q's first TSC packet, when it comes in the PSB+ of its
 * first PSB (where perf starts): 1 then, 0 when the flow starts before a
 * TSC (perf 6.1 would walk it with no time: SIGSEGV), -1 when there is no
 * PSB (perf decodes nothing there).
 */
static int first_tsc(const struct queue *q, u64 *tsc)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	int found = -1;

	if (q->nhead) {	/* a window's own PSB+ (window_head()) */
		*tsc = q->head_tsc;
		return q->head_timed;
	}
	pt_config_init(&cfg);
	cfg.begin = q->s->data + q->off;
	cfg.end = cfg.begin + q->len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return -1;
	if (pt_pkt_sync_forward(d) >= 0)
		for (found = 0; !found && pt_pkt_next(d, &p, sizeof(p)) >= 0;) {
			if (p.type == ppt_tsc) {
				*tsc = p.payload.tsc.tsc;
				found = 1;
			} else if (!in_psb_plus(p.type)) {
				break;
			}
		}
	pt_pkt_free_decoder(d);
	return found;
}

/* The time perf 6.1 gives a queue's first TSC packet @tsc (56 bits): the top
 * byte comes from the reference, taking the value nearest to it; with no
 * reference, none (0). */
static u64 perf_first_time(u64 tsc, u64 reference)
{
	u64 t = tsc | (reference & (0xffULL << 56));

	if (!reference)
		return 0;
	if (t < reference && reference - t > BIT_ULL(55))
		t += BIT_ULL(56);
	else if (t > reference && t - reference > BIT_ULL(55))
		t -= BIT_ULL(56);
	return t;
}

/*
 * The queues' references (each queue's ref). perf 6.1 times a queue from
 * its first TSC packet, the top byte taken from the reference; when that
 * time is 0 it ignores every later TSC packet of the queue too (it counts
 * only from a time it has), the queue never gets a time, and timed decoding
 * segfaults on it (a CPU's trace clock that starts at 0: the software trace
 * unit's on the CPUs brought up after the first). Such a CPU's queues all
 * get 1 in their reference's top byte: perf reads its TSCs as 2^56 + the
 * packet's 56 bits (one wrap of the packet's counter), in their order,
 * after every other CPU's.
 */
static void queue_refs(const struct ptd_container *c, const struct tpz_header *h,
		       const struct ptd_segments *segs, struct queues *q)
{
	for (size_t i = 0; i < q->n; i++)
		q->v[i].ref = segment_tsc(c, q->v[i].s);
	if (!timed(h))
		return;
	for (size_t k = 0; k < segs->ncpus; k++) {
		u32 cpu = segs->cpus[k].cpu;
		bool zero = false;
		u64 tsc;

		for (size_t i = 0; i < q->n; i++)
			if (q->v[i].s->cpu == cpu && first_tsc(&q->v[i], &tsc) == 1 &&
			    !perf_first_time(tsc, q->v[i].ref))
				zero = true;
		for (size_t i = 0; zero && i < q->n; i++)
			if (q->v[i].s->cpu == cpu)
				q->v[i].ref = BIT_ULL(56) | (q->v[i].ref & (BIT_ULL(56) - 1));
	}
}

/*
 * The header enables TSC packets (RTIT_CTL.TSCEn), but can perf time the
 * trace? perf 6.1 segfaults on a timed queue whose flow starts before a
 * TSC packet (it walks code with no time and no decoder state). So every
 * queue with a PSB must have a TSC packet in that PSB's PSB+ (first_tsc()),
 * else the export is untimed (TSCEn clear for perf), said with the first
 * queue without. Returns whether it stays timed.
 */
static bool timeable(struct ptd_container *c, const struct queues *q)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct ptd_segment *s = q->v[i].s;
		u64 tsc, rec_off, file_off;
		u32 seq;

		if (first_tsc(&q->v[i], &tsc))
			continue;
		ptd_segment_where(s, q->v[i].off, &seq, &rec_off, &file_off);
		ptd_diag_add(&c->diags, seq, rec_off,
			     "--perf-data: the header enables TSC packets (RTIT_CTL bit 10), but cpu %u's trace at stream offset 0x%llx has a PSB and no TSC packet before its flow: perf cannot time it (it would crash), so the perf.data is untimed",
			     s->cpu, s->stream_off + q->v[i].off);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ features */

/* perf's header string: u32 length (a multiple of 64, NUL included), the bytes */
static void put_feat_string(struct out *o, const char *s)
{
	u32 len = (u32)((strlen(s) + 1 + 63) & ~(size_t)63);

	put(o, &len, sizeof(len));
	put_padded(o, s, len);
}

static void put_feat_build_id(struct out *o, const struct tpz_header *h, const char *elf)
{
	struct {
		struct perf_event_header h;
		s32 pid;
		u8 data[20];
		u8 size, r1;
		u16 r2;
	} __packed b = { 0 };
	char *abs = realpath(elf, NULL);
	const char *name = abs ? abs : elf;
	size_t len = (strlen(name) + 1 + 63) & ~(size_t)63;

	b.h.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_BUILD_ID_SIZE;
	b.h.size = (u16)(sizeof(b) + len);
	b.pid = -1;	/* perf's HOST_KERNEL_ID: the machine, not a process */
	b.size = h->build_id_len > 20 ? 20 : h->build_id_len;
	memcpy(b.data, h->build_id, b.size);
	put(o, &b, sizeof(b));
	put_padded(o, name, len);
	free(abs);
}

/* The AUXTRACE index: where each queue's record is, so perf queues them at once. */
struct aux_index {
	u64 *off, *size;
	u32 n;
	u32 max_cpu;	/* the highest CPU with a queue */
};

/* The features after the data: the section table, then each, in bit order. */
static void put_features(struct out *o, struct perf_file_header *fh, const struct tpz_header *h,
			 const char *elf, const struct aux_index *ix)
{
	struct perf_file_section feat[5];
	u32 ncpus[2] = { h->ncpus ? h->ncpus : 1, h->ncpus ? h->ncpus : 1 };	/* online, available */

	/* every CPU with a queue is one perf counts */
	ncpus[0] = ncpus[1] = max(ncpus[0], ix->max_cpu + 1);
	u64 table = where(o), n = ix->n;
	unsigned int k = 0;
	char cpuid[64];

	fh->features[0] = BIT_ULL(FEAT_ARCH) | BIT_ULL(FEAT_NRCPUS) | BIT_ULL(FEAT_CPUID) |
			  BIT_ULL(FEAT_AUXTRACE);
	if ((h->flags & TPZ_HDR_BUILD_ID) && h->build_id_len && elf)
		fh->features[0] |= BIT_ULL(FEAT_BUILD_ID);
	put_zeros(o, (size_t)__builtin_popcountll(fh->features[0]) * sizeof(feat[0]));
#define FEATURE(...) do {						\
		feat[k].offset = where(o);				\
		__VA_ARGS__;						\
		feat[k].size = where(o) - feat[k].offset;		\
		k++;							\
	} while (0)
	if (fh->features[0] & BIT_ULL(FEAT_BUILD_ID))
		FEATURE(put_feat_build_id(o, h, elf));
	FEATURE(put_feat_string(o, "x86_64"));
	FEATURE(put(o, ncpus, sizeof(ncpus)));
	snprintf(cpuid, sizeof(cpuid), "%.12s,%u,%u,%u", h->vendor[0] ? h->vendor : "GenuineIntel",
		 h->family, h->model, h->stepping);
	FEATURE(put_feat_string(o, cpuid));
	FEATURE({
		put(o, &n, sizeof(n));
		for (u32 q = 0; q < ix->n; q++) {
			u64 e[2] = { ix->off[q], ix->size[q] };

			put(o, e, sizeof(e));
		}
	});
#undef FEATURE
	if (fseek(o->f, (long)table, SEEK_SET))
		o->failed = true;
	put(o, feat, k * sizeof(feat[0]));
}

/* ------------------------------------------------------------ the file */

int ptd_write_perf_data(struct ptd_container *c, const struct ptd_segments *segs,
			const struct ptd_image *img, const char *elf, u64 load, const char *path)
{
	struct perf_file_header fh = { .magic = PERF_MAGIC, .size = sizeof(fh) };
	struct perf_event_attr attr;
	struct perf_file_section attr_ids;
	struct aux_index ix = { 0 };
	struct maps maps = { 0 };
	struct out o = { .path = path };
	struct tpz_header h = c->header;
	struct images im = { .path = path, .fd = -1 };
	struct queues q = { 0 };
	u64 id = EVENT_ID, data_start;
	struct stat sb;
	int ret = 0;

	if (!c->have_header) {
		ptd_diag_add(&c->diags, -1, 0,
			     "--perf-data: the container has no header: perf would not know the PT configuration");
		return -1;
	}
	/* perf.data is rewritten in place (its header last) and the images go
	 * beside it: a device or a pipe cannot take that (/dev/full.images) */
	if (!stat(path, &sb) && !S_ISREG(sb.st_mode)) {
		ptd_diag_add(&c->diags, -1, 0,
			     "--perf-data: %s: not a regular file: perf.data is written in place, its images beside it",
			     path);
		return -1;
	}
	if (!(h.rtit_ctl & RTIT_BRANCH_EN))
		ptd_diag_add(&c->diags, -1, 0,
			     "--perf-data: the trace has BranchEn clear: perf decodes no control flow from it");
	im.filtered = filtered(&h);
	if (elf)
		elf_maps(elf, load, &im, &maps, &c->diags);
	image_maps(c, img, &im, &maps, &c->diags);
	if (im.tried && im.fd < 0) {
		ret = -1;	/* said: no folder for the code perf walks */
		goto out;
	}
	if (!maps.n)
		ptd_diag_add(&c->diags, -1, 0,
			     "--perf-data: no code for perf to walk (give --elf): it will decode no instruction");

	o.f = fopen(path, "wb");
	if (!o.f) {
		ptd_diag_add(&c->diags, -1, 0, "--perf-data: %s: cannot write: %s", path, strerror(errno));
		ret = -1;
		goto out;
	}
	for (size_t i = 0; i < segs->n; i++)
		if (segs->v[i].size)
			add_queues(&q, &segs->v[i], timed(&h));
	ix.off = calloc(q.n + 1, sizeof(u64));
	ix.size = calloc(q.n + 1, sizeof(u64));
	if (!ix.off || !ix.size)
		abort();
	if (timed(&h) && !timeable(c, &q))
		h.rtit_ctl &= ~BIT_ULL(10);
	queue_refs(c, &h, segs, &q);

	/* header (rewritten at the end), the event's id, the attr */
	put(&o, &fh, sizeof(fh));
	attr_ids.offset = where(&o);
	attr_ids.size = sizeof(id);
	put(&o, &id, sizeof(id));
	memset(&attr, 0, sizeof(attr));
	attr.type = TOPAZ_PMU_TYPE;
	attr.size = sizeof(attr);
	attr.config = (h.rtit_ctl & PT_CONFIG_BITS) | 1;
	attr.sample_type = SAMPLE_TYPE;
	attr.sample_period = 1;
	attr.sample_id_all = 1;
	attr.comm = 1;
	attr.mmap = 1;
	attr.exclude_guest = 1;
	attr.exclude_kernel = 1;	/* perf's "kernel" is at and above 1 << 63: none traced */
	attr.exclude_hv = 1;
	fh.attr_size = sizeof(attr) + sizeof(attr_ids);
	fh.attrs.offset = where(&o);
	fh.attrs.size = fh.attr_size;
	put(&o, &attr, sizeof(attr));
	put(&o, &attr_ids, sizeof(attr_ids));

	/* data: what the trace is, the process and its maps, the trace */
	data_start = where(&o);
	put_auxtrace_info(&o, &h, &maps, &c->diags);
	put_comm(&o, TOPAZ_PID, 0);
	/* last first: where maps overlap, perf reads the one mapped last and
	 * ptdecode the first (the ELF, then the images in their order) */
	for (size_t i = maps.n; i-- > 0;)
		put_mmap(&o, maps.v[i].start, maps.v[i].len, maps.v[i].pgoff, maps.v[i].file);
	for (size_t i = 0; i < q.n; i++) {
		const struct ptd_segment *s = q.v[i].s;

		if (q.v[i].first && (s->gap || s->gap_why))
			put_aux_lost(&o, s->stream_off - s->gap, s->gap, TOPAZ_PID, s->cpu);
		put_auxtrace(&o, &q.v[i], ix.n, TOPAZ_PID, &ix.off[ix.n], &ix.size[ix.n]);
		ix.n++;
		ix.max_cpu = max(ix.max_cpu, s->cpu);
	}
	/* the CPUs whose stream ends with a loss (an empty LOST chunk) */
	for (size_t i = 0; i < segs->ncpus; i++) {
		const struct ptd_cpu_stream *st = &segs->cpus[i];

		if (st->end_why)
			put_aux_lost(&o, st->end_off - st->end_lost, st->end_lost, TOPAZ_PID, st->cpu);
	}
	fh.data.offset = data_start;
	fh.data.size = where(&o) - data_start;

	put_features(&o, &fh, &h, elf, &ix);
	if (fseek(o.f, 0, SEEK_SET))
		o.failed = true;
	put(&o, &fh, sizeof(fh));
	if (fclose(o.f))
		o.failed = true;
	free(ix.off);
	free(ix.size);
	if (o.failed) {
		ptd_diag_add(&c->diags, -1, 0, "--perf-data: %s: cannot write: %s", path, strerror(errno));
		ret = -1;
	}
out:
	free_queues(&q);
	images_close(&im);
	for (size_t i = 0; i < maps.n; i++)
		free(maps.v[i].file);
	free(maps.v);
	return ret;
}
