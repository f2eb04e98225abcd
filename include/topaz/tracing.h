/* SPDX-License-Identifier: MIT */
/*
 * Tracing (kernel/tracing/, docs/architecture.md): which trace unit answers,
 * the session with its sink and container, the traced window, and the seam
 * the trace engine plugs into. The one header other subsystems use.
 */
#ifndef TOPAZ_TRACING_H
#define TOPAZ_TRACING_H

#include <topaz/types.h>

struct boot_info;
struct workload;

/**
 * pt_unit_boot() - which trace unit answers: install the software trace unit
 * on this (the boot) CPU as pt.model=, pt.profile= and pt.skid= ask (auto:
 * when the CPU has no Intel PT), and say so. The kernel and the firmware
 * phase call it once, before the CPU report and before pt_boot_init().
 * Return: as pt_model_init(): 1 installed, 0 not needed or pt.model=off, -errno.
 */
int pt_unit_boot(void);
/**
 * pt_unit_caps_asked() - whether the line had pt.caps (pt_unit_boot()
 * printed CPUID leaf 0x14 decoded; alone, it is the boot's whole job)
 */
bool pt_unit_caps_asked(void);
/**
 * pt_unit_boot_cpus() - each online CPU its own trace unit, as the boot
 * CPU's (profile, configuration, clock); once the other CPUs are up, before
 * pt_boot_init(). Nothing on silicon, where each CPU has its own.
 */
void pt_unit_boot_cpus(void);
/**
 * pt_ptwrite_register() - offer the probes' :trace action (PTWRITE packets
 * from probe hits, kernel/tracing/pt_ptwrite.c); before probes_init()
 */
void pt_ptwrite_register(void);
/**
 * pt_boot_container() - the container kept in memory (pt.sink=memory or
 * file), its length, and where the sink failed (0: it did not)
 */
const void *pt_boot_container(u64 *len, u64 *failed_at);
/**
 * struct pt_window_info - what pt_window_trace() kept
 * @trace_bytes: bytes of trace in the container
 * @before_window: of which before the window opened (from the last PSB
 *	before it: the end of what ran before)
 * @cut: the window's start is not in it (the window was longer than the
 *	bound or the ring, or lost bytes): its last bytes only, which a
 *	decoder reads from their first PSB, as a flight recorder's
 */
struct pt_window_info {
	u64 trace_bytes, before_window;
	bool cut;
};
/**
 * pt_window_trace() - this CPU's last traced window (a fuzzer's crashing
 * execution) as a trace container of its own, in memory, whatever pt.sink:
 * the session's header, the window's trace from the last PSB before it (at
 * most its last @max bytes), the sideband of the code that ran (the
 * engine's pages, the modules), the trailer. A window a crash aborted is
 * stopped first. Not with pt.snapshot=1 (the session's flight recorder).
 * @max: the most trace bytes kept (the ring, pt.buf, bounds them too)
 * @len: the container's bytes
 * @info: what it kept
 * Return: the container, valid until pt_window_trace_free() or the next
 * call, or NULL having said why.
 */
const void *pt_window_trace(u64 max, u64 *len, struct pt_window_info *info);
/** pt_window_trace_free() - give back pt_window_trace()'s container */
void pt_window_trace_free(void);
/**
 * pt_boot_init() - with pt=on: open the session on pt.sink=; 0, or -errno
 * (reported; a pt.* word refused is named in @bi's command-line result)
 */
int pt_boot_init(struct boot_info *bi);
/** pt_boot_active() - pt=on and the session is open */
bool pt_boot_active(void);
/** pt_run_traced() - run @w between pt_trace_begin() and pt_trace_end() */
u64 pt_run_traced(const struct workload *w);
/** pt_ptwrite_register() - offer the :trace probe action (before probes_init()) */
void pt_ptwrite_register(void);
/** pt_boot_finish() - sideband, trailer, and a summary of what was traced */
void pt_boot_finish(void);
/**
 * pt_boot_pmi_nmi() - the PMI is to come as an NMI (pt.pmi=nmi), not as a
 * vector: the vector the firmware phase claims for it
 * Return: true for an NMI.
 */
bool pt_boot_pmi_nmi(void);
/**
 * pt_boot_writes_file() - the container goes to a file on the boot volume
 * (pt.sink=file, or pt.sink=debugcon's fallback in the firmware phase on a
 * machine without port 0xe9): kept in memory, for the firmware phase to
 * write at its end (pt_boot_container())
 * Return: true when the open (or last) session's sink is the file.
 */
bool pt_boot_writes_file(void);
/** pt_boot_sink_is_memory() - the open (or last) session's container stays in RAM (pt.sink=memory) */
bool pt_boot_sink_is_memory(void);
/**
 * pt_session_keep_trace() - whether drained trace goes into the session's
 * container (@keep, the default) or only to the coverage decoder: a fuzz
 * campaign's windows, millions of them, that a memory sink would keep
 * until memory ran out and nobody reads (a crash's window is written from
 * the ring, pt_window_trace()). The bytes not kept are counted, not lost:
 * the next kept piece says the flow was cut there.
 */
void pt_session_keep_trace(bool keep);
/**
 * pt_session_buffer_size() - each CPU's ring in the open session (pt.buf=)
 * Return: bytes, 0 with no session open.
 */
u64 pt_session_buffer_size(void);

/**
 * pt_trace_begin() - start tracing at the instruction after the call:
 * TraceEn=1, and on the software trace unit the engine follows every
 * instruction of the caller from there
 */
void pt_trace_begin(void);
/** pt_trace_end() - stop tracing here: the call to it is the last traced branch */
void pt_trace_end(void);

/**
 * pt_coverage_window_begin() - pt.coverage=on: forget what this CPU's
 * coverage decoder reached (its decoded code stays), before a fuzzer's
 * window (pt_trace_begin())
 * Return: 0, or -ENODEV when this CPU has no decoder (pt.coverage off, or
 * no session)
 */
int pt_coverage_window_begin(void);
/**
 * pt_coverage_window_end() - after pt_trace_end(): drain this CPU's trace
 * into its decoder and give the edge bitmap of what it reached since
 * pt_coverage_window_begin() (AFL's: hit counts, include/topaz/ptcov.h)
 * @size: the bitmap's bytes
 * Return: the bitmap (the decoder's, valid until the next window), or NULL
 * when this CPU has no decoder
 */
const u8 *pt_coverage_window_end(u32 *size);
/**
 * pt_coverage_window_touched() - after pt_coverage_window_end(): the
 * bitmap's non-zero entries, each once (ptcov_bitmap_touched()), so that the
 * fuzzer looks at those only
 * @n: their number
 * Return: their indices (the decoder's, valid until the next window), or
 * NULL when this CPU has no decoder
 */
const u32 *pt_coverage_window_touched(u32 *n);
/**
 * pt_coverage_ticks() - TSC ticks this CPU has spent in its coverage
 * decoder (the drains' decode, in a PMI or at a window's end), for a
 * benchmark's split of an execution's time
 */
u64 pt_coverage_ticks(void);

/* ---------------------------------------------------------------- the engine's seam */

enum trace_step_mode { TRACE_STEP_SINGLE, TRACE_STEP_BRANCH, TRACE_STEP_TRANSLATE };

struct trace_engine_stats {
	enum trace_step_mode mode;
	u64 insns;		/* instructions retired in traced code */
	u64 branches;		/* of those, changes of flow */
	u64 db_traps;		/* #DB exceptions taken */
	u64 bp_traps;		/* #BP (branch-step INT3s) taken in traced code */
	u64 nested;		/* INT3s hit by handlers (run, not traced) */
	u64 sites;		/* INT3s written (branch-step) */
	u64 fallbacks;		/* branch-step landings that single-step instead */
	u64 async;		/* interrupts and exceptions in traced code */
	u64 async_chained;	/* ... that came before the next stop after another one's return */
	u64 async_chained_ran;	/* ... of which after the traced code ran on from that return */
	u64 foreign_pages;	/* code pages outside the kernel image (sideband) */
	u64 missed;		/* INT3s the CPU ran past (it ran stale code): lost branches */
	u64 missed_ip;		/* ... the first of them */
	/* pt.step=translate */
	u64 xlat_blocks;	/* blocks translated */
	u64 xlat_code;		/* bytes of code cache they took */
	u64 xlat_exits;		/* exits from the cache to branch-step (fallbacks) */
	u64 xlat_flushes;	/* record batches handed to the trace unit */
	u64 xlat_misses;	/* indirect targets not found inline */
	u64 xlat_resets;	/* times the cache filled up and started again */
	u64 xlat_inline_tnt;	/* Jcc and RET results the code put in the pending TNT itself */
	u64 xlat_inline_plain;	/* direct JMPs and CALLs it took with no record */
	u64 xlat_inline_tip;	/* TIPs of indirect branches it stored itself */
	u64 xlat_fast_paths;	/* Jcc outcomes translated with a stub that writes flags */
	u64 xlat_cond_paths;	/* ... of all translated with the inline TNT */
	u64 xlat_fast_plain;	/* direct JMPs and CALLs translated with a stub that writes flags */
	u64 xlat_plain_paths;	/* ... of all translated inline */
	u64 xlat_fast_rets;	/* RETs translated with a compression path that pushes flags */
	u64 xlat_ret_paths;	/* ... of all translated to compress inline */
	u64 xlat_tnt_direct;	/* ... full TNT packets it stored in the output itself */
};

/* How the session hands a memory image of traced code to the container. */
typedef void (*trace_image_fn)(const char *name, u64 vaddr, const void *data, u64 size);

/**
 * struct trace_engine_ops - the trace engine, as the session drives it
 * @arm: a window is about to open: be ready to follow
 * @follow: tracing is on: follow the caller of pt_trace_begin() from the
 *	instruction after its call (the engine may single-step out of here)
 * @disarm: the window did not open (the session could not start)
 * @end: the window closed at pt_trace_end(): no more stops, code as it was
 * @abort: the panic path: stop following at once
 * @stats: what CPU @cpu's engine followed
 * @write_sideband: code any CPU ran outside the kernel image, page runs to @add
 * @see_through: @n bytes read at @addr: put back what the engine patched
 *	there (branch-step's INT3s), so a reader sees the traced code's bytes
 */
struct trace_engine_ops {
	void (*arm)(void);
	void (*follow)(void);
	void (*disarm)(void);
	void (*end)(void);
	void (*abort)(void);
	void (*stats)(unsigned int cpu, struct trace_engine_stats *st);
	void (*write_sideband)(trace_image_fn add);
	void (*see_through)(u64 addr, u8 *buf, size_t n);
};

/**
 * struct trace_modules - named code outside the kernel image (the firmware
 * phase's loaded images), for the sideband
 * @find: the module holding @ip, marked as run; false when none does
 * @write_sideband: every module marked as run (all of them when
 *	@all, as on silicon, where nothing marks them) to @add, whole and named
 */
struct trace_modules {
	bool (*find)(u64 ip);
	void (*write_sideband)(trace_image_fn add, bool all);
};
/** trace_set_modules() - who names code outside the image (NULL: nobody) */
void trace_set_modules(const struct trace_modules *m);
/** trace_module_find() - @ip is in a known module (now marked as run) */
bool trace_module_find(u64 ip);
/** trace_modules_write() - the modules' sideband, if there are modules */
void trace_modules_write(trace_image_fn add, bool all);

/**
 * pt_session_set_engine() - the engine that feeds the software trace unit
 * (registered when the model is installed; none on silicon, which traces by
 * itself)
 */
void pt_session_set_engine(const struct trace_engine_ops *ops);
/** pt_session_engine() - the registered engine, or NULL */
const struct trace_engine_ops *pt_session_engine(void);
/** pt_trace_abort() - the panic path: the engine stops following at once */
void pt_trace_abort(void);

#endif
