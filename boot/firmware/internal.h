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
/* fw_output.c: pt.sink=file */
int fw_write_trace_file(void);

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

#endif
