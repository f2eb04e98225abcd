/* SPDX-License-Identifier: MIT */
/* Inside the firmware phase: the firmware's tables and the pieces' entry points. */
#ifndef TOPAZ_FW_INTERNAL_H
#define TOPAZ_FW_INTERNAL_H

#include <efi.h>
#include <topaz/types.h>
#include <topaz/workload.h>

/* What the firmware phase works with (set by fw_phase_run()). */
struct fw_ctx {
	EFI_HANDLE image;		/* topaz's image handle */
	EFI_SYSTEM_TABLE *st;
	EFI_BOOT_SERVICES *bs;
	EFI_RUNTIME_SERVICES *rt;
	EFI_LOADED_IMAGE *li;		/* topaz's loaded image (its boot volume) */
	u64 self_base, self_size;	/* topaz itself: not a firmware module */
};
extern struct fw_ctx fw;

/* fw_workloads.c: the built-in firmware workloads (fw.run=). */
const struct workload *fw_workload_find(const char *name);
void fw_workload_list(void);
extern const struct workload fw_workloads[];
extern const unsigned int fw_nr_workloads;

/* fw_modules.c: the loaded images, named, for the sideband. */
/** fw_modules_scan() - list every loaded image (base, size, name) */
unsigned int fw_modules_scan(void);
/** fw_modules_add() - an image loaded by topaz during the phase */
void fw_modules_add(EFI_LOADED_IMAGE *li, const char *fallback_name);
/** fw_modules_add_copy() - the same, its bytes copied now (it may be unloaded before the end) */
void fw_modules_add_copy(EFI_LOADED_IMAGE *li, const char *fallback_name);
/**
 * fw_modules_set_symbols() - the symbol file of the module at @base (text the
 * host wrote: "OFFSET SIZE NAME" lines, hex), kept for pt.filter's
 * Module!symbol; @src names it in messages. 0, or -errno having said why.
 */
int fw_modules_set_symbols(u64 base, const char *text, size_t len, const char *src);
/** fw_modules_resolver() - pt.filter's Module!symbol and Module+off from the modules (or not) */
void fw_modules_resolver(bool on);
/**
 * fw_module_format() - "0x1de52030, hello!fib+0x10" with the module's
 * symbol file, else "0x..., Fat+0x1a2d", or the bare address outside every
 * module, into @buf; returns @buf
 */
const char *fw_module_format(u64 ip, char *buf, size_t n);
/** fw_modules_touch() - fw.oracle: write every module and topaz back as it is; the bytes */
u64 fw_modules_touch(void);

/* fw_fuzz_targets.c: the built-in fuzz targets (include/topaz/fuzz.h) */
/** fw_fuzz_seeds() - fw.run=fuzzseeds: each target's seeds run, reset and leak-checked; failures */
u64 fw_fuzz_seeds(void);
/* how many targets failed fw.run=fuzzseeds: the phase's failures */
extern unsigned int fw_fuzz_seeds_failed;
/* The firmware's memory use, to compare around runs. */
struct fw_mem_usage {
	u64 free_pages;		/* EfiConventionalMemory pages in the memory map */
	u64 pool_live;		/* pool allocated through the table while tracked, not yet freed */
};
/** fw_mem_usage() - the firmware's memory use now; 0 or -errno (said) */
int fw_mem_usage(struct fw_mem_usage *u);
/**
 * fw_mem_own_begin() - fw_mem_usage() into @u before one of the fuzzer's own
 * firmware calls (its files on the volume); its return goes to fw_mem_own_end()
 */
int fw_mem_own_begin(struct fw_mem_usage *u);
/** fw_mem_own_end() - what that call took, added to the fuzzer's own use */
void fw_mem_own_end(const struct fw_mem_usage *before, int began);
/** fw_mem_own_take() - the fuzzer's own use since the last take (a campaign's leak check leaves it out) */
void fw_mem_own_take(long long *pool, long long *pages);
/** fw_pool_track() - hook AllocatePool/FreePool in the boot services table (or unhook) */
void fw_pool_track(bool on);

/*
 * fw_fuzz_targets.c: fw.fuzz=NAME,NAME... or builtin: the campaigns one
 * after another, the firmware's memory compared around each
 */
struct fuzz_target;
/* What a campaign reached, for the check after it. */
struct fw_fuzz_outcome {
	u32 seed_edges, edges;	/* the edges after the seeds, and at the end */
	u64 execs, crashes;
};
/**
 * fw_fuzz_each() - each target @spec names (a comma-separated list, or
 * builtin for every built-in target): init, its seeds once to warm the
 * firmware up, @campaign, and the firmware's pool and pages compared before
 * and after it ("result: fuzz check" lines). A crash stops the list.
 * Return: the failed campaigns, leaks and unknown names (each said)
 */
int fw_fuzz_each(const char *spec,
		 int (*campaign)(const struct fuzz_target *t, struct fw_fuzz_outcome *o));

/* fw_fuzz_bench.c: fw.fuzz.bench=N, the loop timed untraced and traced */
enum {
	FW_FUZZ_T_START,	/* before the trace window opens */
	FW_FUZZ_T_RAN,		/* the target returned (before pt_trace_end) */
	FW_FUZZ_T_STOPPED,	/* pt_trace_end returned */
	FW_FUZZ_T_DECODED,	/* pt_coverage_window_end returned */
	FW_FUZZ_T_COV0,		/* the decoder's ticks (pt_coverage_ticks()) at the start */
	FW_FUZZ_T_COV1,		/* and at the end */
	FW_FUZZ_T_NR
};
/** fw_fuzz_bench_runs() - fw.fuzz.bench=: the mutants each pass runs, 0 for a campaign */
u64 fw_fuzz_bench_runs(void);
/** fw_fuzz_stamp() - the time of point @i of this execution (while a pass is timed) */
void fw_fuzz_stamp(unsigned int i);
/** fw_fuzz_bench_sample() - this execution's stamps into the pass's samples */
void fw_fuzz_bench_sample(void);
/** fw_fuzz_bench_begin() - time a pass (@traced or not) from @execs executions on; 0 or -ENOMEM (said) */
int fw_fuzz_bench_begin(bool traced, u64 execs);
/** fw_fuzz_bench_end() - the pass ends at @execs executions */
void fw_fuzz_bench_end(u64 execs);
/** fw_fuzz_bench_report() - the two passes' rates and medians as result: lines, samples freed */
void fw_fuzz_bench_report(const char *name);

/* fw_phase.c */
/** fw_bs_crc() - the boot services table's CRC, after topaz changed an entry */
void fw_bs_crc(void);
/**
 * fw_load_image_unhooked() - LoadImage past the phase's hook: for images
 * that never run (the peimage fuzz target), which the sideband need not keep
 */
EFI_STATUS fw_load_image_unhooked(BOOLEAN boot_policy, EFI_HANDLE parent, EFI_DEVICE_PATH *path,
				  VOID *src, UINTN size, EFI_HANDLE *handle);

/* fw_image.c: fw.image= */
int fw_image_load(const char *spec, EFI_HANDLE *h);
/** fw_ascii_to_ucs2() - @src as a UEFI string in @dst (@n characters, the NUL included) */
void fw_ascii_to_ucs2(CHAR16 *dst, const char *src, size_t n);
/** fw_open_on_volume() - @wpath opened for reading on topaz's boot volume; EFI_NO_MEDIA: no file system */
EFI_STATUS fw_open_on_volume(const CHAR16 *wpath, EFI_FILE_HANDLE *file);
/* fw_output.c: pt.sink=file */
int fw_write_trace_file(void);
/** fw_volume_root() - the root folder of topaz's boot volume; EFI_NO_MEDIA: no file system */
EFI_STATUS fw_volume_root(EFI_FILE_HANDLE *root);
/**
 * fw_write_new_file() - @name under @dir created (or opened) and *@size bytes
 * of @data written and flushed; *@size: the bytes written (0 when the file
 * could not be created)
 */
EFI_STATUS fw_write_new_file(EFI_FILE_HANDLE dir, const CHAR16 *name, const void *data,
			     UINTN *size);
/** fw_open_dir() - the folder @path under @root opened, made when it is missing */
EFI_STATUS fw_open_dir(EFI_FILE_HANDLE root, CHAR16 *path, EFI_FILE_HANDLE *dir);

/* fw_fuzz.c: fw.fuzz= */
/** fw_fuzz_wanted() - fw.fuzz= was given */
bool fw_fuzz_wanted(void);
/** fw_fuzz_image() - fw.fuzz=image: the harness fw.image= runs is the target */
bool fw_fuzz_image(void);
/** fw_fuzz_run_builtin() - fw.fuzz=NAME (or list): the campaign; 0, or 1 having said why */
int fw_fuzz_run_builtin(void);
/**
 * fw_fuzz_protocol() - fw.fuzz=image: offer the fuzz protocol (@on) before the
 * image runs, take it back after; 0, or 1 when it failed or the image never
 * ran a campaign that finished (said)
 */
int fw_fuzz_protocol(bool on);

/* fw_fuzz_io.c: fw.fuzz's files: corpus and crash output, fw.fuzz.corpus=, .dict=, .time=, .replay= */
struct fuzz_dict;
enum fw_fuzz_kind { FW_FUZZ_CORPUS, FW_FUZZ_CRASH };
/* a crash's trace file (crash-SHA1.tpz): at most the execution's last so many bytes of trace */
#define FW_FUZZ_TRACE_MAX	(1u << 20)
/**
 * fw_fuzz_io_begin() - a campaign on @target starts: read fw.fuzz.dict=;
 * 0, or -errno having said what is wrong (file:line for a bad dictionary line)
 */
int fw_fuzz_io_begin(const char *target);
/** fw_fuzz_io_end() - the campaign's files counted (a result: line), the dictionary freed */
void fw_fuzz_io_end(void);
/**
 * fw_fuzz_save() - an input the campaign keeps (@kind FW_FUZZ_CORPUS) or one
 * that crashed (FW_FUZZ_CRASH): to the debug console first when it is free
 * (the host's build/fuzz/NAME/), then to the boot volume's
 * \EFI\topaz\fuzz\NAME\corpus\SHA1 or crashes\crash-SHA1. A failure is
 * said and the volume is not tried again; inputs being loaded from files
 * (fw_fuzz_import(), replays) are not written again.
 */
void fw_fuzz_save(enum fw_fuzz_kind kind, const u8 *data, size_t size);
/**
 * fw_fuzz_save_crash() - fw_fuzz_save(FW_FUZZ_CRASH, ...); @risky (the
 * firmware may be broken: an exception, a timeout): the boot volume is
 * written only when the debug console could not carry the file
 */
void fw_fuzz_save_crash(const u8 *data, size_t size, bool risky);
/** fw_fuzz_dict() - fw.fuzz.dict='s tokens, or NULL */
const struct fuzz_dict *fw_fuzz_dict(void);
/** fw_fuzz_time_up() - fw.fuzz.time= seconds have passed since @t0 (a TSC value) */
bool fw_fuzz_time_up(u64 t0);
/** fw_fuzz_replaying() - fw.fuzz.replay= was given: no campaign, the replay */
bool fw_fuzz_replaying(void);
/**
 * fw_fuzz_import() - fw.fuzz.corpus=: each file of the folder (up to @max
 * bytes, read into @buf of @max + 1) to @fn; 0 without the option, or
 * @fn's first non-zero return, or -errno having said what is wrong
 */
int fw_fuzz_import(u8 *buf, size_t max, int (*fn)(const u8 *data, size_t size, void *ctx),
		   void *ctx);
/** fw_fuzz_replay_each() - fw.fuzz.replay=: the file, or each file of the folder, to @fn (as fw_fuzz_import()) */
int fw_fuzz_replay_each(u8 *buf, size_t max, int (*fn)(const u8 *data, size_t size, void *ctx),
			void *ctx);

/* fw_fuzz_guard.c: fw.fuzz='s guards, timeouts and crashes */
/**
 * struct fw_fuzz_fault - how an execution crashed
 * @kind: "timeout", "double-free", "bug"...; NULL: from @vector and @addr
 * @vector: the exception's vector, or ~0 (none)
 * @rip: where (the faulting instruction; 0: unknown)
 * @addr: the faulting address (#PF), the address freed (a bad free)
 * @error_code: the exception's; a bad FreePages': its page count
 * @what: kind=bug: the harness's words
 */
struct fw_fuzz_fault {
	const char *kind;
	unsigned int vector;
	u64 rip, addr, error_code;
	const char *what;
};
/** fw_fuzz_guard_start() - the guards fw.fuzz.guard= asks for, the timer, the exception handlers; 0 or -errno said */
int fw_fuzz_guard_start(size_t max_len);
/** fw_fuzz_guard_stop() - all of it back as the firmware had it */
void fw_fuzz_guard_stop(void);
/** fw_fuzz_guard_place() - @data copied to end at the input's guard page (or @data, unguarded) */
const u8 *fw_fuzz_guard_place(const u8 *data, size_t size);
/**
 * fw_fuzz_guarded() - *@ret = @fn(@data, @size) with the guards armed
 * Return: 0; 1 it crashed (an exception, a guard page, a bad free, the
 * timeout: its trace stopped there), *@f says how
 */
int fw_fuzz_guarded(int (*fn)(const u8 *data, size_t size), const u8 *data, size_t size,
		    int *ret, struct fw_fuzz_fault *f);
/** fw_fuzz_fault_kind() - "overread", "pool-overflow", "use-after-free", "gp", "timeout"... */
const char *fw_fuzz_fault_kind(const struct fw_fuzz_fault *f);
/** fw_fuzz_fault_site() - "module!function+0x12" (or "Module+0x..." or the address) into @buf */
const char *fw_fuzz_fault_site(const struct fw_fuzz_fault *f, char *buf, size_t n);
/** fw_fuzz_fault_print() - the fault's lines: the instruction, the address and what it hit */
void fw_fuzz_fault_print(const struct fw_fuzz_fault *f);

#endif
