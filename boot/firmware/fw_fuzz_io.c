// SPDX-License-Identifier: MIT
/*
 * fw.fuzz='s files (docs/fuzzing.md): the inputs a campaign keeps and those
 * that crash, in libFuzzer's layout (one file per input named by its SHA-1,
 * crash-SHA1), to the boot volume (\EFI\topaz\fuzz\NAME\corpus, crashes)
 * and, under QEMU, to the host through the debug console (scripts/fuzz-
 * files.py extracts them); the folder a session starts from
 * (fw.fuzz.corpus=), the dictionary (fw.fuzz.dict=), the time limit
 * (fw.fuzz.time=) and the replay of saved inputs (fw.fuzz.replay=).
 *
 * The debug console goes first: a crash may leave the firmware's file
 * system in any state, and port 0xe9 needs nothing from the firmware.
 */
#define pr_fmt(fmt) "fw.fuzz: " fmt
#include "internal.h"
#include <topaz/fuzz.h>
#include <topaz/tracing.h>
#include <topaz/cmdline.h>
#include <topaz/serial.h>
#include <topaz/kernel.h>
#include <topaz/slab.h>
#include <topaz/time.h>
#include <topaz/arch.h>
#include <topaz/errno.h>

static const char *corpus_dir;
KPARAM_STR("fw.fuzz.corpus", fw_fuzz_corpus, &corpus_dir,
	   "fw.fuzz: a folder on the boot volume whose files start the campaign (a resumed session: \\EFI\\topaz\\fuzz\\NAME\\corpus)");
static const char *dict_file;
KPARAM_STR("fw.fuzz.dict", fw_fuzz_dict, &dict_file,
	   "fw.fuzz: a dictionary on the boot volume, AFL's format (name=\"value\", \\xNN escapes, # comments)");
static u64 fuzz_time;
KPARAM_UINT("fw.fuzz.time", fw_fuzz_time, &fuzz_time, 0, 1ull << 32,
	    "fw.fuzz: stop after so many seconds (0: no limit; with fw.fuzz.runs=0 the time alone ends it)");
static const char *replay_path;
KPARAM_STR("fw.fuzz.replay", fw_fuzz_replay, &replay_path,
	   "fw.fuzz: run this input file once, traced, instead of a campaign (a folder: each file in it)");

#define DICT_FILE_MAX	(1u << 20)	/* a dictionary's bytes */
#define PATH_MAX_CHARS	256

static struct {
	const char *target;
	struct fuzz_dict dict;
	bool mute;		/* loading inputs that are files already */
	bool volume_failed;	/* said once */
	u64 files[2], saved[2], sent[2];	/* per kind: saves asked, on the volume, on the console */
	u64 traces;		/* crash-SHA1.tpz files made (counted in saved, sent) */
} io;

/* ------------------------------------------------------------ the volume */

/* Each folder of @path (ASCII, "\a\b\c") made when missing, the last one opened in *@dir. */
static EFI_STATUS make_dirs(EFI_FILE_HANDLE root, const char *path, EFI_FILE_HANDLE *dir)
{
	static CHAR16 wpath[PATH_MAX_CHARS];
	char part[PATH_MAX_CHARS];
	EFI_STATUS s = EFI_INVALID_PARAMETER;
	size_t i = 1;

	for (;;) {
		while (path[i] && path[i] != '\\')
			i++;
		if (i >= sizeof(part))
			return EFI_INVALID_PARAMETER;
		memcpy(part, path, i);
		part[i] = 0;
		fw_ascii_to_ucs2(wpath, part, ARRAY_SIZE(wpath));
		s = fw_open_dir(root, wpath, dir);
		if (s != EFI_SUCCESS || !path[i])
			return s;
		(*dir)->Close(*dir);
		i++;
	}
}

/* @data as FOLDER\NAME on the boot volume, unless it is there already. */
static int volume_write(const char *folder, const char *name, const u8 *data, size_t size)
{
	static CHAR16 wname[FUZZ_SHA1_HEX + 16];	/* crash-SHA1.tpz */
	EFI_FILE_HANDLE root, dir, file;
	UINTN n = size;
	EFI_STATUS s;

	if (fw_volume_root(&root) != EFI_SUCCESS) {
		pr_err("topaz's boot volume has no file system: %s\\%s is not written\n", folder, name);
		return -ENODEV;
	}
	s = make_dirs(root, folder, &dir);
	root->Close(root);
	if (s != EFI_SUCCESS) {
		pr_err("cannot make %s on the boot volume (EFI status %#lx): a read-only volume?\n",
		       folder, (unsigned long)s);
		return -EIO;
	}
	fw_ascii_to_ucs2(wname, name, ARRAY_SIZE(wname));
	if (dir->Open(dir, &file, wname, EFI_FILE_MODE_READ, 0) == EFI_SUCCESS) {
		/* named by its SHA-1: the same bytes */
		file->Close(file);
		dir->Close(dir);
		return 0;
	}
	s = fw_write_new_file(dir, wname, data, &n);
	dir->Close(dir);
	if (s != EFI_SUCCESS && !n) {
		pr_err("cannot create %s\\%s (EFI status %#lx)\n", folder, name, (unsigned long)s);
		return -EIO;
	}
	if (s != EFI_SUCCESS || n != size) {
		pr_err("writing %s\\%s stopped after %llu of %zu bytes (EFI status %#lx): a full volume?\n",
		       folder, name, (unsigned long long)n, size, (unsigned long)s);
		return -EIO;
	}
	return 0;
}

/*
 * Up to @max bytes of the file open in @file into @buf (room for @max + 1):
 * the length read, *@cut set when the file had more; -EIO said.
 */
static s64 read_open_file(EFI_FILE_HANDLE file, const char *path, u8 *buf, size_t max,
			      bool *cut)
{
	UINTN n = max + 1;
	EFI_STATUS s = file->Read(file, &n, buf);

	if (s != EFI_SUCCESS) {
		pr_err("%s: cannot read it (EFI status %#lx)\n", path, (unsigned long)s);
		return -EIO;
	}
	*cut = n > max;
	return (s64)(n > max ? max : n);
}

/* @path opened on the boot volume, *@is_dir set; -ENOENT and the like said with @what. */
static int open_path(const char *path, const char *what, EFI_FILE_HANDLE *file, bool *is_dir)
{
	static CHAR16 wpath[PATH_MAX_CHARS];
	static union { EFI_FILE_INFO info; u8 bytes[sizeof(EFI_FILE_INFO) + 2 * PATH_MAX_CHARS]; } fi;
	EFI_GUID info_guid = EFI_FILE_INFO_ID;
	UINTN n = sizeof(fi);
	EFI_STATUS s;

	if (path[0] != '\\' || strlen(path) >= PATH_MAX_CHARS) {
		pr_err("%s=%s: not a path on the boot volume (\\EFI\\...: from its root, backslashes, under %u characters)\n",
		       what, path, PATH_MAX_CHARS);
		return -EINVAL;
	}
	fw_ascii_to_ucs2(wpath, path, ARRAY_SIZE(wpath));
	s = fw_open_on_volume(wpath, file);
	if (s != EFI_SUCCESS) {
		pr_err("%s=%s: %s on the boot volume (EFI status %#lx)\n", what, path,
		       s == EFI_NOT_FOUND ? "no such file or folder" : "cannot open it", (unsigned long)s);
		return s == EFI_NOT_FOUND ? -ENOENT : -EIO;
	}
	s = (*file)->GetInfo(*file, &info_guid, &n, &fi);
	if (s != EFI_SUCCESS) {
		pr_err("%s=%s: no file information (EFI status %#lx)\n", what, path, (unsigned long)s);
		(*file)->Close(*file);
		return -EIO;
	}
	*is_dir = fi.info.Attribute & EFI_FILE_DIRECTORY;
	return 0;
}

/* ------------------------------------------------------------ the options */

int fw_fuzz_io_begin(const char *target)
{
	EFI_FILE_HANDLE file;
	char err[160];
	bool is_dir, cut;
	s64 n;
	char *text;
	int r;

	io.target = target;
	io.mute = io.volume_failed = false;
	memset(io.files, 0, sizeof(io.files));
	memset(io.saved, 0, sizeof(io.saved));
	memset(io.sent, 0, sizeof(io.sent));
	io.traces = 0;
	if (!dict_file || !*dict_file)
		return 0;
	r = open_path(dict_file, "fw.fuzz.dict", &file, &is_dir);
	if (r)
		return r;
	if (is_dir) {
		pr_err("fw.fuzz.dict=%s: a folder, not a dictionary file\n", dict_file);
		file->Close(file);
		return -EINVAL;
	}
	text = kmalloc(DICT_FILE_MAX + 1, GFP_KERNEL);
	if (!text) {
		file->Close(file);
		pr_err("fw.fuzz.dict=%s: no memory to read it\n", dict_file);
		return -ENOMEM;
	}
	n = read_open_file(file, dict_file, (u8 *)text, DICT_FILE_MAX, &cut);
	file->Close(file);
	if (n >= 0 && cut) {
		pr_err("fw.fuzz.dict=%s: longer than %u bytes\n", dict_file, DICT_FILE_MAX);
		n = -E2BIG;
	}
	r = n < 0 ? (int)n : fuzz_dict_parse(&io.dict, text, (size_t)n, dict_file, err, sizeof(err));
	kfree(text);
	if (r) {
		if (n >= 0)
			pr_err("fw.fuzz.dict=%s\n", err);
		return r;
	}
	printk("fuzz: dictionary %s: %u tokens\n", dict_file, io.dict.n);
	return 0;
}

void fw_fuzz_io_end(void)
{
	if (io.files[FW_FUZZ_CORPUS] + io.files[FW_FUZZ_CRASH])
		printk("result: fuzz files corpus=%llu crashes=%llu on_volume=%llu to_host=%llu traces=%llu folder=\\EFI\\topaz\\fuzz\\%s\n",
		       io.files[FW_FUZZ_CORPUS], io.files[FW_FUZZ_CRASH],
		       io.saved[FW_FUZZ_CORPUS] + io.saved[FW_FUZZ_CRASH],
		       io.sent[FW_FUZZ_CORPUS] + io.sent[FW_FUZZ_CRASH], io.traces, io.target);
	fuzz_dict_free(&io.dict);
}

const struct fuzz_dict *fw_fuzz_dict(void)
{
	return io.dict.n ? &io.dict : NULL;
}

bool fw_fuzz_time_up(u64 t0)
{
	static bool said;

	if (!fuzz_time || tsc_to_ns(rdtsc() - t0) < fuzz_time * 1000000000ull)
		return false;
	if (!said)
		printk("fuzz: fw.fuzz.time=%llu: the time is up, the campaign stops\n", fuzz_time);
	said = true;
	return true;
}

bool fw_fuzz_replaying(void)
{
	return replay_path && *replay_path;
}

/* ------------------------------------------------------------ saving */

/*
 * The debug console carries the file when the trace does not: with the
 * trace kept in memory (pt.sink=memory or file) or no trace at all.
 */
static bool debugcon_free(void)
{
	u64 len, failed_at;

	if (!debugcon_present())
		return false;
	return !pt_boot_active() || pt_boot_container(&len, &failed_at);
}

/*
 * A record among whatever else the console carries (scripts/fuzz-files.py):
 *   "\n@TPZ-FUZZ-FILE 1 TARGET DIR NAME SIZE\n" SIZE bytes "\n@TPZ-FUZZ-END NAME\n"
 * NAME is the bytes' SHA-1 (crash- before it): the host checks it.
 */
static void debugcon_record(const char *dir, const char *name, const u8 *data, size_t size)
{
	char line[160];
	int n;

	n = ksnprintf(line, sizeof(line), "\n@TPZ-FUZZ-FILE 1 %s %s %s %zu\n", io.target, dir, name,
		      size);
	debugcon_write(line, (size_t)n);
	debugcon_write(data, size);
	n = ksnprintf(line, sizeof(line), "\n@TPZ-FUZZ-END %s\n", name);
	debugcon_write(line, (size_t)n);
}

/*
 * FOLDER\NAME's bytes to the debug console (when free) and the volume.
 * Return: whether the console carried it; *@saved when the volume took it.
 */
static bool put_file(const char *dir, const char *name, const u8 *data, size_t size, bool risky,
		     bool *saved)
{
	struct fw_mem_usage mem;
	char folder[96];
	int began, failed;
	bool console = debugcon_free();

	*saved = false;
	if (console)
		debugcon_record(dir, name, data, size);
	ksnprintf(folder, sizeof(folder), "\\EFI\\topaz\\fuzz\\%s\\%s", io.target, dir);
	if (io.volume_failed)
		return console;
	/* the file system's drivers may be what crashed: the console's copy is enough */
	if (risky && console)
		return console;
	began = fw_mem_own_begin(&mem);
	failed = volume_write(folder, name, data, size);
	fw_mem_own_end(&mem, began);
	if (failed) {
		pr_err("the boot volume takes no more fuzz files this boot%s\n",
		       debugcon_free() ? "; the debug console still carries them" : "");
		io.volume_failed = true;
		return console;
	}
	*saved = true;
	return console;
}

/*
 * The crash's trace beside its input, crash-SHA1.tpz: the crashing
 * execution's window as a container of its own (pt_window_trace()), whatever
 * pt.sink is, so that ptdecode shows the way to the faulting instruction.
 */
static void save_crash_trace(const char *name, bool risky)
{
	struct pt_window_info info;
	char tname[FUZZ_SHA1_HEX + 16];
	const void *tpz;
	bool console, saved;
	u64 len;

	if (!pt_boot_active())
		return;
	tpz = pt_window_trace(FW_FUZZ_TRACE_MAX, &len, &info);
	if (!tpz) {
		pr_err("no trace file for this crash (said above)\n");
		return;
	}
	ksnprintf(tname, sizeof(tname), "%s.tpz", name);
	console = put_file("crashes", tname, tpz, (size_t)len, risky, &saved);
	pt_window_trace_free();
	io.traces++;
	io.sent[FW_FUZZ_CRASH] += console;
	io.saved[FW_FUZZ_CRASH] += saved;
	printk("fuzz: the crash's trace: \\EFI\\topaz\\fuzz\\%s\\crashes\\%s (%s%s), %llu bytes of trace, %s\n",
	       io.target, tname, saved ? "on the volume" : "not on the volume",
	       console ? ", on the debug console" : "", info.trace_bytes,
	       info.cut ? "the execution's last bytes (a decoder starts at their first PSB)" :
			  "from the last PSB before the execution");
}

/* fw_fuzz_save(); @risky: the firmware may be broken (an exception, a timeout) */
static void save(enum fw_fuzz_kind kind, const u8 *data, size_t size, bool risky)
{
	const char *dir = kind == FW_FUZZ_CRASH ? "crashes" : "corpus";
	char name[FUZZ_SHA1_HEX + 8];
	bool console, saved, failed_before = io.volume_failed;

	if (io.mute && kind == FW_FUZZ_CORPUS)
		return;
	io.files[kind]++;
	fuzz_sha1_hex(data, size, name + (kind == FW_FUZZ_CRASH ? 6 : 0));
	if (kind == FW_FUZZ_CRASH)
		memcpy(name, "crash-", 6);
	console = put_file(dir, name, data, size, risky, &saved);
	io.sent[kind] += console;
	io.saved[kind] += saved;
	if (kind != FW_FUZZ_CRASH)
		return;
	printk("fuzz: the crash input: \\EFI\\topaz\\fuzz\\%s\\crashes\\%s%s\n", io.target, name,
	       console ? " (and on the debug console: make fuzz-fw's build/fuzz/NAME/crashes)" : "");
	if (risky && console && !failed_before)
		printk("fuzz: the boot volume is not written after this crash (its copy went to the debug console)\n");
	save_crash_trace(name, risky);
}

void fw_fuzz_save(enum fw_fuzz_kind kind, const u8 *data, size_t size)
{
	save(kind, data, size, false);
}

void fw_fuzz_save_crash(const u8 *data, size_t size, bool risky)
{
	save(FW_FUZZ_CRASH, data, size, risky);
}

/* ------------------------------------------------------------ loading */

/* @fn on each file of the folder open in @dir; files longer than @max are cut to it (said). */
static int each_in_dir(EFI_FILE_HANDLE dir, const char *path, u8 *buf, size_t max,
		       int (*fn)(const u8 *data, size_t size, void *ctx), void *ctx,
		       u32 *files, u32 *cut_n)
{
	static union { EFI_FILE_INFO info; u8 bytes[sizeof(EFI_FILE_INFO) + 2 * PATH_MAX_CHARS]; } fi;
	char name[PATH_MAX_CHARS];
	EFI_FILE_HANDLE file;
	int r = 0;

	for (;;) {
		UINTN n = sizeof(fi);
		EFI_STATUS s = dir->Read(dir, &n, &fi);
		s64 len;
		bool cut;
		size_t i;

		if (s != EFI_SUCCESS) {
			pr_err("%s: cannot list the folder (EFI status %#lx)\n", path, (unsigned long)s);
			return -EIO;
		}
		if (!n)
			return 0;	/* the end of the folder */
		if (fi.info.Attribute & EFI_FILE_DIRECTORY)
			continue;
		for (i = 0; i + 1 < sizeof(name) && fi.info.FileName[i]; i++)
			name[i] = fi.info.FileName[i] < 0x80 ? (char)fi.info.FileName[i] : '?';
		name[i] = 0;
		s = dir->Open(dir, &file, fi.info.FileName, EFI_FILE_MODE_READ, 0);
		if (s != EFI_SUCCESS) {
			pr_err("%s\\%s: cannot open it (EFI status %#lx)\n", path, name, (unsigned long)s);
			return -EIO;
		}
		len = read_open_file(file, name, buf, max, &cut);
		file->Close(file);
		if (len < 0)
			return (int)len;
		if (!len)
			continue;	/* an empty file: no input (libFuzzer skips them too) */
		(*files)++;
		*cut_n += cut;
		r = fn(buf, (size_t)len, ctx);
		if (r)
			return r;
	}
}

/* Each input file at @path (a file, or each file of a folder) to @fn; @what names the option. */
static int each_input(const char *path, const char *what, u8 *buf, size_t max,
		      int (*fn)(const u8 *data, size_t size, void *ctx), void *ctx)
{
	EFI_FILE_HANDLE file;
	u32 files = 0, cut = 0;
	bool is_dir, c = false;
	s64 len;
	int r;

	r = open_path(path, what, &file, &is_dir);
	if (r)
		return r;
	if (is_dir) {
		r = each_in_dir(file, path, buf, max, fn, ctx, &files, &cut);
	} else {
		len = read_open_file(file, path, buf, max, &c);
		r = len < 0 ? (int)len : 0;
		if (len > 0) {
			files = 1;
			cut = c;
			r = fn(buf, (size_t)len, ctx);
		} else if (!len) {
			pr_err("%s=%s: an empty file: no input\n", what, path);
			r = -ENODATA;
		}
	}
	file->Close(file);
	if (r < 0)
		return r;
	printk("fuzz: %s=%s: %u input%s%s\n", what, path, files, files == 1 ? "" : "s",
	       cut ? " (some longer than fw.fuzz.max_len: cut to it)" : "");
	if (!files && !r && is_dir)
		pr_warn("%s=%s: an empty folder\n", what, path);
	if (cut)
		pr_warn("%s=%s: %u input%s cut to fw.fuzz.max_len=%zu bytes\n", what, path, cut,
			cut == 1 ? "" : "s", max);
	return r;
}

int fw_fuzz_import(u8 *buf, size_t max, int (*fn)(const u8 *data, size_t size, void *ctx),
		   void *ctx)
{
	int r;

	if (!corpus_dir || !*corpus_dir)
		return 0;
	io.mute = true;	/* they are files already */
	r = each_input(corpus_dir, "fw.fuzz.corpus", buf, max, fn, ctx);
	io.mute = false;
	return r;
}

int fw_fuzz_replay_each(u8 *buf, size_t max, int (*fn)(const u8 *data, size_t size, void *ctx),
			void *ctx)
{
	int r;

	io.mute = true;
	r = each_input(replay_path, "fw.fuzz.replay", buf, max, fn, ctx);
	io.mute = false;
	return r;
}
