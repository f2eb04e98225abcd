// SPDX-License-Identifier: MIT
/*
 * ptdecode's ELF readers on hostile input: --symbols DIR (a module's
 * functions from DIR/NAME.debug) and --elf. A module name from the trace
 * that is a path (../x) is not looked up; a FIFO, a directory or a device
 * where a symbol file is expected is refused at once, not waited on; each
 * kind of damaged symbol table is said (not dropped silently); and a
 * segment whose memory size is far beyond its file bytes costs the file's
 * bytes, not the header's claim.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <elf.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "hosted.h"
#include "ptdecode.h"
#include "sym_elf.h"

#define BASE	0x401000ull

/* ASan's count of the bytes the program holds allocated now. */
size_t __sanitizer_get_current_allocated_bytes(void);

/* ------------------------------------------------------------ files */

static void write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, size, f), size);
	assert_int_equal(fclose(f), 0);
}

static void spec_write(const struct sym_elf *s, const char *path)
{
	unsigned char file[SYM_ELF_SIZE];

	sym_elf_layout(s, file);
	write_file(path, file, sizeof(file));
}

/* A scratch folder: DIR (given as --symbols) and beside it outside/. */
struct scratch {
	char root[64], dir[96], outside[96], path[160];
};

static void scratch_make(struct scratch *t)
{
	strcpy(t->root, "/tmp/topaz-sym-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->dir, sizeof(t->dir), "%s/dir", t->root);
	snprintf(t->outside, sizeof(t->outside), "%s/outside", t->root);
	assert_int_equal(mkdir(t->dir, 0755), 0);
	assert_int_equal(mkdir(t->outside, 0755), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void scratch_remove(struct scratch *t)
{
	assert_int_equal(nftw(t->root, remove_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* An image with one module called @name at BASE. */
static void module_image(struct ptd_image *img, const char *name)
{
	static const u8 code[SYM_ELF_EXTENT];

	ptd_image_init(img);
	assert_int_equal(ptd_image_add_region(img, name, BASE, code, sizeof(code)), 0);
}

/* The name of the function at BASE + @off, or "" when none. */
static const char *fn_at(struct ptd_image *img, u64 off)
{
	const struct ptd_symbol *s;

	ptd_image_finish(img);
	s = ptd_image_lookup(img, BASE + off);
	return s && ptd_image_is_symbol(img, s) ? s->name : "";
}

/* Some problem of @d says @what. */
static bool said(const struct ptd_diags *d, const char *what)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->v[i].msg, what))
			return true;
	return false;
}

/* ------------------------------------------------------------ names */

/*
 * The module names of a trace are data: "../outside/secret" read
 * DIR/../outside/secret.debug and named the functions after it. Now no name
 * that is not a plain file name is looked up, and it is said; a valid name
 * (with "#2", the second image of a module) still finds its file.
 */
static void test_module_name_is_not_a_path(void **state)
{
	static const char *const bad[] = { "../outside/secret", "x/../../outside/secret", "..", "." };
	struct sym_elf s;
	struct scratch t;
	struct ptd_diags d = { 0 };
	struct ptd_image img;

	scratch_make(&t);
	sym_elf_init(&s);
	snprintf(t.path, sizeof(t.path), "%s/secret.debug", t.outside);
	spec_write(&s, t.path);
	snprintf(t.path, sizeof(t.path), "%s/..debug", t.dir);	/* what "." would find */
	spec_write(&s, t.path);
	snprintf(t.path, sizeof(t.path), "%s/x", t.dir);
	assert_int_equal(mkdir(t.path, 0755), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		module_image(&img, bad[i]);
		assert_int_equal(ptd_image_add_module_symbols(&img, t.dir, &d), 0);
		assert_string_equal(fn_at(&img, 0x20), "");
		assert_int_equal(d.n, 1);
		assert_non_null(strstr(d.v[0].msg, "is not a file name: not looked up in --symbols"));
		ptd_diags_free(&d);
		ptd_image_free(&img);
	}

	snprintf(t.path, sizeof(t.path), "%s/secret.debug", t.dir);
	spec_write(&s, t.path);
	module_image(&img, "secret#2");
	assert_int_equal(ptd_image_add_module_symbols(&img, t.dir, &d), 1);
	assert_int_equal(d.n, 0);
	assert_string_equal(fn_at(&img, 0x20), "secret#2!foo");
	ptd_image_free(&img);
	scratch_remove(&t);
}

/* ------------------------------------------------------------ files that are not */

/*
 * Run in a child that SIGALRM ends after two seconds: a FIFO as DIR/NAME.debug
 * or as --elf blocked open() for good (no writer ever comes).
 */
static int child_not_waited_for(const struct scratch *t, const char *fifo)
{
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	int bad = 0;

	alarm(2);
	module_image(&img, "demo");
	bad |= ptd_image_add_module_symbols(&img, t->dir, &d) != 0;
	bad |= !said(&d, "demo.debug: not a regular file (a FIFO): not read");
	ptd_image_free(&img);
	ptd_diags_free(&d);
	ptd_image_init(&img);
	bad |= ptd_image_add_elf(&img, fifo, 0, &d) != -1;
	bad |= !said(&d, "not a regular file (a FIFO)");
	ptd_image_free(&img);
	ptd_diags_free(&d);
	return bad;
}

static void test_fifo_is_refused_at_once(void **state)
{
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	struct scratch t;
	int status;
	pid_t pid;

	scratch_make(&t);
	snprintf(t.path, sizeof(t.path), "%s/demo.debug", t.dir);
	assert_int_equal(mkfifo(t.path, 0644), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(child_not_waited_for(&t, t.path));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFSIGNALED(status));	/* SIGALRM: it waited */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* a directory of that name: refused (it opened, and read as not ELF) */
	assert_int_equal(unlink(t.path), 0);
	assert_int_equal(mkdir(t.path, 0755), 0);
	module_image(&img, "demo");
	assert_int_equal(ptd_image_add_module_symbols(&img, t.dir, &d), 0);
	assert_true(said(&d, "demo.debug: not a regular file (a directory): not read"));
	ptd_image_free(&img);
	ptd_diags_free(&d);
	scratch_remove(&t);
}

/* ------------------------------------------------------------ damaged tables */

static const struct {
	const char *said;
	const char *foo;	/* foo's name once read ("" when it is lost) */
} damaged[SYM_ELF_NDAMAGE] = {
	[SYM_ELF_STRTAB_NO_NUL] = { "string table (section 3, 13 bytes) does not end with a NUL", "demo!foo" },
	[SYM_ELF_BAD_ST_NAME] = { "1 symbols of the symbol table (section 2) have a name (st_name) that is no string of the string table, the first symbol 2: not read", "" },
	[SYM_ELF_ENTSIZE_0] = { "gives 0-byte entries: read as the 24-byte entries", "demo!foo" },
	[SYM_ELF_ENTSIZE_ODD] = { "gives 16-byte entries: read as the 24-byte entries", "demo!foo" },
	[SYM_ELF_LINK_PAST] = { "links section 99, which is not a string table (the file has 4 sections): no functions read", "" },
	[SYM_ELF_LINK_NOT_STRTAB] = { "links section 1, which is not a string table", "" },
	[SYM_ELF_SYMTAB_PAST_EOF] = { "the symbol table (section 2) lies outside the file: 96 bytes at offset 0x300, the file has 560: no functions read", "" },
	[SYM_ELF_SYMTAB_HUGE] = { "the symbol table (section 2) lies outside the file: 1099511627776 bytes at offset 0xc0", "" },
	[SYM_ELF_SIZE_NOT_WHOLE] = { "is 77 bytes, not a whole number of 24-byte entries: its last 5 bytes are not read", "demo!foo" },
	[SYM_ELF_STRTAB_PAST_EOF] = { "the string table (section 3) lies outside the file", "" },
	[SYM_ELF_BAD_SHNDX] = { "1 symbols of the symbol table (section 2) are in a section (st_shndx) the file does not have, the first symbol 2", "" },
	[SYM_ELF_OUTSIDE_MODULE] = { "1 symbols of the symbol table (section 2) lie outside the module's image (st_value + st_size), the first symbol 2", "" },
	[SYM_ELF_WRAPS] = { "1 symbols of the symbol table (section 2) lie outside the module's image (st_value + st_size), the first symbol 3", "demo!foo" },
};

/*
 * Each kind of damage was read as "no functions" (or one fewer, or one
 * named at the wrong address) without a word and with exit status 0. Now
 * each is a problem naming the file, the section and the symbol (a table
 * whose size is not whole keeps its whole entries: main and foo).
 */
static void test_damaged_symbol_table_is_said(void **state)
{
	struct ptd_diags d = { 0 };
	int wrong = 0;
	struct ptd_image img;
	struct sym_elf s;
	struct scratch t;

	scratch_make(&t);
	snprintf(t.path, sizeof(t.path), "%s/demo.debug", t.dir);
	/* undamaged: no problem, the three functions */
	sym_elf_init(&s);
	spec_write(&s, t.path);
	module_image(&img, "demo");
	assert_int_equal(ptd_image_add_module_symbols(&img, t.dir, &d), 1);
	assert_int_equal(d.n, 0);
	assert_string_equal(fn_at(&img, 0x00), "demo!main");
	assert_string_equal(fn_at(&img, 0x20), "demo!foo");
	assert_string_equal(fn_at(&img, 0x30), "demo!bar");
	ptd_image_free(&img);

	/* each kind on its own: every one that is not said is listed */
	for (int k = 0; k < SYM_ELF_NDAMAGE; k++) {
		const char *foo;

		sym_elf_init(&s);
		sym_elf_damage(&s, (enum sym_elf_damage)k);
		spec_write(&s, t.path);
		module_image(&img, "demo");
		ptd_image_add_module_symbols(&img, t.dir, &d);
		foo = fn_at(&img, 0x20);
		if (!said(&d, damaged[k].said) || strcmp(foo, damaged[k].foo) ||
		    /* a function past the module is not named in another's place */
		    strcmp(fn_at(&img, 0x1000), "")) {
			print_message("%s: not said \"%s\" (%zu problems), or foo is \"%s\"\n",
				      sym_elf_damage_name[k], damaged[k].said, d.n, foo);
			wrong++;
		}
		ptd_image_free(&img);
		ptd_diags_free(&d);
	}
	assert_int_equal(wrong, 0);
	scratch_remove(&t);
}

/*
 * The --elf kernel ELF goes through the same reader: a bad st_name there is
 * said too, and a symbol whose end wraps past 2^64 at the load address is
 * said and not added (it never matched a lookup).
 */
static void test_damaged_kernel_symbols_are_said(void **state)
{
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	struct sym_elf s;
	struct scratch t;

	scratch_make(&t);
	snprintf(t.path, sizeof(t.path), "%s/kernel.elf", t.dir);
	sym_elf_init(&s);
	sym_elf_damage(&s, SYM_ELF_BAD_ST_NAME);
	sym_elf_damage(&s, SYM_ELF_WRAPS);	/* bar at BASE + 0x30 */
	spec_write(&s, t.path);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, t.path, BASE, &d), 0);
	assert_true(said(&d, "kernel.elf: 1 symbols of the symbol table (section 2) have a name (st_name) that is no string"));
	assert_true(said(&d, "kernel.elf: 1 symbols of the symbol table (section 2) run past the end of the address space (st_value + st_size), the first symbol 3: not read"));
	assert_string_equal(fn_at(&img, 0x00), "main");
	assert_string_equal(fn_at(&img, 0x30), "");
	ptd_image_free(&img);
	ptd_diags_free(&d);
	scratch_remove(&t);
}

/* ------------------------------------------------------------ segments */

/* sym_elf_segments() as the file @path. */
static void write_segments(const char *path, int nseg, u64 off, u64 filesz, u64 memsz, size_t size)
{
	unsigned char *file = malloc(size);

	assert_non_null(file);
	sym_elf_segments(file, size, nseg, off, filesz, memsz);
	write_file(path, file, size);
	free(file);
}

/*
 * A 5 KB ELF whose segment claims 0x230002f8 bytes in memory was allocated
 * whole (and written into the memory file libipt reads: 4.5 s), and six
 * 1 GiB segments in 118 KB aborted under a 4 GB limit. Only the file's
 * bytes are held now: the zero fill past them reads as no code, in the
 * callback and in libipt's sections alike, and its addresses still name
 * the ELF.
 */
static void test_segment_zero_fill_is_not_allocated(void **state)
{
	static const struct { int nseg; u64 memsz; size_t size; } files[] = {
		{ 1, 0x230002f8, 5000 }, { 6, 1ULL << 30, 118000 },
	};
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	struct scratch t;
	u8 b[4];
	char buf[64];

	scratch_make(&t);
	snprintf(t.path, sizeof(t.path), "%s/big.elf", t.dir);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		size_t before = __sanitizer_get_current_allocated_bytes();
		struct timespec t0, t1;
		int held = 0, past = 0;
		struct pt_image *ipt;
		u64 fill;

		write_segments(t.path, files[i].nseg, 0x1000, 0x100, files[i].memsz, files[i].size);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ptd_image_init(&img);
		assert_int_equal(ptd_image_add_elf(&img, t.path, 0, &d), 0);
		assert_int_equal(img.nregions, files[i].nseg);
		ipt = ptd_image_sections(&img);
		assert_non_null(ipt);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		/* what the file holds, not what the headers claim */
		assert_true(__sanitizer_get_current_allocated_bytes() - before < (8u << 20));
		assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 500000000L);

		/* the file's bytes read; the zero fill is no code in both readers */
		fill = (u64)(files[i].nseg - 1) << 30;
		assert_int_equal(ptd_image_read(b, sizeof(b), NULL, fill + 0xfe, &img), 2);
		assert_int_equal(b[1], 0xc3);
		assert_int_equal(ptd_image_read(b, sizeof(b), NULL, fill + 0x100, &img), -pte_nomap);
		for (int isid = 1; isid <= files[i].nseg; isid++) {
			held += pt_iscache_read(img.iscache, b, 1, isid, fill + 0xff) == 1 && b[0] == 0xc3;
			past += pt_iscache_read(img.iscache, b, 1, isid, fill + 0x100) > 0;
		}
		assert_int_equal(held, 1);
		assert_int_equal(past, 0);
		ptd_image_finish(&img);
		assert_string_equal(ptd_format_addr(&img, fill + 0x2000, buf, sizeof(buf)), "big.elf+0x2000");
		ptd_image_free(&img);
		ptd_diags_free(&d);
	}
	scratch_remove(&t);
}

/*
 * A thousand segments that each name the whole 64 KiB file held it a
 * thousand times (64 MB); the segments hold twice the file at most now, the
 * rest said and not mapped.
 */
static void test_segments_hold_the_file_twice_at_most(void **state)
{
	size_t before = __sanitizer_get_current_allocated_bytes();
	struct ptd_diags d = { 0 };
	struct ptd_image img;
	struct scratch t;

	scratch_make(&t);
	snprintf(t.path, sizeof(t.path), "%s/many.elf", t.dir);
	write_segments(t.path, 1000, 0, 0x10000, 0x10000, 0x10000);
	ptd_image_init(&img);
	assert_int_equal(ptd_image_add_elf(&img, t.path, 0, &d), 0);
	assert_true(__sanitizer_get_current_allocated_bytes() - before < (8u << 20));
	assert_int_equal(img.nregions, 2);
	assert_true(said(&d, "many.elf: segment 2 would hold 65536 file bytes more, past twice the file's 65536 bytes in all: not mapped"));
	ptd_image_free(&img);
	ptd_diags_free(&d);
	scratch_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_name_is_not_a_path),
		cmocka_unit_test(test_fifo_is_refused_at_once),
		cmocka_unit_test(test_damaged_symbol_table_is_said),
		cmocka_unit_test(test_damaged_kernel_symbols_are_said),
		cmocka_unit_test(test_segment_zero_fill_is_not_allocated),
		cmocka_unit_test(test_segments_hold_the_file_twice_at_most),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
