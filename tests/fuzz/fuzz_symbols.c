// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: ptdecode's ELF readers on hostile files: the --symbols
 * loader (a module's functions from DIR/NAME.debug) and the --elf loader
 * (segments or sections, the symbol table, the build-id note), which share
 * the symbol table reader.
 *
 * Feeds: the input bytes as the file DIR/mod.debug, read for a module "mod"
 * whose image is split into two records (ptd_image_add_module_symbols()),
 * then as the kernel ELF at a load address (ptd_image_add_elf()), its
 * regions made into libipt sections (ptd_image_sections()).
 * Must hold, besides no crash, leak, sanitizer report or hang: every "mod!"
 * function lies within the module's image; every region holds at most its
 * extent, and all of them at most twice the file; the memory the loaders
 * keep grows with the file, not with the sizes its headers claim (run.sh's
 * -rss_limit_mb=2048 also stops any single allocation over 2 GB); every
 * problem has a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ptdecode.h"

#define MOD_BASE	0x10000ull
#define MOD_HALF	0x800ull
#define KERNEL_LOAD	0x200000ull
/* allowed growth: the file a few times over (regions, names, symbols) */
#define MEM_SLACK	(4u << 20)
#define MEM_PER_BYTE	16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* ASan's count of the bytes the program holds allocated now */
size_t __sanitizer_get_current_allocated_bytes(void);

static char dir[64], path[96];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_symbols: %s\n", what);
	abort();
}

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

/* The input as DIR/mod.debug (DIR made on the first call). */
static void write_input(const uint8_t *data, size_t size)
{
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/topaz-fuzz-sym-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			die("cannot make a scratch folder");
		snprintf(path, sizeof(path), "%s/mod.debug", dir);
		atexit(cleanup);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd))
		die("cannot write the input file");
}

static void check_diags(const struct ptd_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (!d->v[i].msg[0])
			die("a problem without a message");
}

static u64 held(const struct ptd_image *img)
{
	u64 n = 0;

	for (size_t i = 0; i < img->nregions; i++) {
		if (img->regions[i].held > img->regions[i].size)
			die("a region holds more bytes than its extent");
		n += img->regions[i].held;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const u8 code[MOD_HALF];
	size_t before = __sanitizer_get_current_allocated_bytes(), after, limit;
	struct ptd_diags d = { 0 };
	struct ptd_image mod, kern;

	write_input(data, size);
	limit = MEM_SLACK + MEM_PER_BYTE * size;

	/* --symbols DIR for a module split into two records */
	ptd_image_init(&mod);
	ptd_image_add_region(&mod, "mod", MOD_BASE, code, MOD_HALF);
	ptd_image_add_region(&mod, "mod", MOD_BASE + MOD_HALF, code, MOD_HALF);
	ptd_image_add_module_symbols(&mod, dir, &d);
	ptd_image_finish(&mod);
	for (size_t i = 0; i < mod.nsyms; i++) {
		const struct ptd_symbol *s = &mod.syms[i];

		if (strncmp(s->name, "mod!", 4))
			die("a module function not named mod!...");
		if (s->start < MOD_BASE || s->end > MOD_BASE + 2 * MOD_HALF || s->end <= s->start)
			die("a module function outside the module's image");
	}

	/* --elf: the same file as the kernel */
	ptd_image_init(&kern);
	ptd_image_add_elf(&kern, path, KERNEL_LOAD, &d);
	ptd_image_finish(&kern);
	ptd_image_sections(&kern);
	if (held(&kern) > 2 * (u64)size)
		die("the segments hold more than twice the file");
	after = __sanitizer_get_current_allocated_bytes();
	if (after > before && after - before > limit)
		die("the loaders keep memory out of proportion to the file");
	check_diags(&d);

	ptd_image_free(&kern);
	ptd_image_free(&mod);
	ptd_diags_free(&d);
	return 0;
}
