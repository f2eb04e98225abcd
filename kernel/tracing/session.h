/* SPDX-License-Identifier: MIT */
/*
 * The tracing session, internal to kernel/tracing (the public part is
 * include/topaz/tracing.h): the PT event, its AUX ring, and the consumer that
 * drains published data into a trace container (include/topaz/trace_writer.h)
 * on a sink. Normal mode drains at every wake-up; snapshot mode keeps the ring as
 * a flight recorder and writes its last bytes on request, at close and from
 * the panic path.
 */
#ifndef TOPAZ_TRACING_SESSION_H
#define TOPAZ_TRACING_SESSION_H

#include <topaz/pt.h>
#include <topaz/pt_options.h>
#include <topaz/trace_writer.h>
#include <topaz/tracing.h>
#include <topaz/spinlock.h>

/*
 * The session's options (pt_session_options.c), read-only once the command
 * line is parsed; in the order of their pt.sink= and pt.pmi= names.
 */
enum pt_sink_kind { PT_SINK_DEBUGCON, PT_SINK_SERIAL, PT_SINK_MEMORY, PT_SINK_FILE };
enum pt_pmi_kind { PT_PMI_AS_VECTOR, PT_PMI_AS_NMI };

/**
 * struct pt_session_options - what the command line asks of the session
 * @enabled: pt=on
 * @snapshot: pt.snapshot=1: the rings are flight recorders
 * @sink: pt.sink=: where the container goes (pt_boot_init() may fall back)
 * @pmi: pt.pmi=: the PMI as a vector or as an NMI
 * @coverage: pt.coverage=on: each CPU's trace decoded into coverage (pt_coverage.c)
 */
struct pt_session_options {
	bool enabled;
	bool snapshot;
	enum pt_sink_kind sink;
	enum pt_pmi_kind pmi;
	bool coverage;
};
extern struct pt_session_options pt_session_opts;

/**
 * struct pt_session_unit - what the session knows of the trace unit beyond
 * the driver (which cannot tell silicon from the model)
 * @model: the software trace unit answers: the container header says so, and
 *	decoders apply no CPU errata to its SDM-exact packets
 * @bytes_lost: its running count of bytes it dropped, or NULL (silicon keeps
 *	none): with it every dropped byte becomes a LOST gap at its stream
 *	offset; without it a truncated chunk is all the container can say
 */
struct pt_session_unit {
	bool model;
	u64 (*bytes_lost)(void);
};

/*
 * The trace unit that answers, as the session asks it (pt_unit.c, the only
 * file of the session that calls the model).
 */
/**
 * struct pt_unit_counts - a trace unit's own counts on one CPU
 * @produced: bytes of packets it generated
 * @stored: of which written to memory
 * @lost: of which dropped (output stopped)
 * @pmis: PMIs it signalled
 */
struct pt_unit_counts {
	u64 produced, stored, lost, pmis;
};
/**
 * pt_unit_describe() - what the session is told of the unit (pt_session_open())
 * @unit: filled in: the model or silicon, and the model's loss counter
 */
void pt_unit_describe(struct pt_session_unit *unit);
/**
 * pt_unit_busy() - this CPU's trace unit is inside a call: its packet state
 * is half-way (a panic's stop NMI waits for the call's end)
 * Return: true inside a model call; never on silicon.
 */
bool pt_unit_busy(void);
/**
 * pt_unit_counts() - CPU @cpu's trace unit's own counts (the summary)
 * @cpu: the CPU
 * @c: filled in when it keeps counts
 * Return: true for the model, false on silicon (which keeps none).
 */
bool pt_unit_counts(unsigned int cpu, struct pt_unit_counts *c);

/*
 * The session: one container for every CPU's stream. Each CPU drains its
 * own stream (at its PMIs and when it stops); @lock keeps one CPU's records
 * whole in the container. A CPU that interrupted its own drain (an NMI PMI)
 * leaves the data in its ring for the drain it interrupted.
 */
struct pt_session {
	struct trace_writer writer;
	struct trace_sink sink;
	struct tpz_header header;
	struct pt_session_unit unit;
	spinlock_t lock;
	u64 cpus;		/* CPUs with a stream (the online ones at open) */
	u64 buffer_size;	/* each stream's ring, bytes */
	bool open;
	bool drop_trace;	/* pt_session_keep_trace(false): drains feed the decoder only */
};
extern struct pt_session pt_session;

/*
 * One CPU's stream: its PT event and AUX ring, and where its bytes stand in
 * the container (offsets count lost bytes too: docs/trace-format.md).
 */
struct pt_stream {
	struct perf_event event;
	struct pt_aux *aux;
	u64 stream_off;		/* stream bytes: written to the container, and lost */
	u64 lost_bytes;		/* of which lost (the trace unit dropped them) */
	u64 lost_pending;	/* lost, not yet in the container (goes before the next chunk) */
	bool gap_pending;	/* the next chunk says LOST (@lost_pending bytes, maybe 0) */
	u64 drains, truncations_seen;
	u64 unit_lost_seen;	/* the trace unit's loss counter at the last look */
	bool running;
	bool parked;		/* stopped by a panic's NMI, its trace published, not written yet */
	u64 parked_lost;	/* ... what its trace unit dropped since the last drain */
	u64 parked_pos;		/* ... a flight recorder's write position then */
	u64 window_head;	/* the ring's head when this CPU's last window opened */
	u64 gap_head;		/* the ring's head at the last loss or truncation */
	u64 not_kept;		/* drained to the coverage decoder only (pt_session_keep_trace()) */
	bool cut_pending;	/* ... so the next piece in the container follows a cut */
	u64 cut_lost;		/* ... and the loss the bytes not kept carried */
};
DECLARE_PER_CPU(struct pt_stream, pt_streams);

/**
 * pt_session_park_this_cpu() - in the panic's stop NMI: stop this CPU's trace
 * unit and publish its trace, for the panicking CPU to write at close
 */
void pt_session_park_this_cpu(void);
/** pt_session_writing_here() - is this CPU writing the container (holding its lock)? */
bool pt_session_writing_here(void);

/**
 * pt_session_open() - set up the event as @o asks, write the container header
 * @o: the driver's options (the event, the ring's sizes)
 * @snapshot: the rings are flight recorders (pt.snapshot=1)
 * @sink: where the container goes
 * @unit: the trace unit (NULL: silicon)
 * @load_address: @image_size: @build_id_note: the kernel image (for the decoder)
 * Returns 0, -EINVAL for options the CPU cannot do (each named), -ENOMEM.
 */
int pt_session_open(const struct pt_options *o, bool snapshot, const struct trace_sink *sink,
		    const struct pt_session_unit *unit, u64 load_address, u64 image_size,
		    const void *build_id_note);
/** pt_session_has_cpu() - does CPU @cpu have a stream in the open session? */
static inline bool pt_session_has_cpu(unsigned int cpu)
{
	/* @cpus has a bit for each of the nr_cpu_ids (at most NR_CPUS, 64) CPUs */
	return pt_session.open && cpu < nr_cpu_ids && ((pt_session.cpus >> cpu) & 1);
}
/** pt_session_start() - enable tracing on this CPU (TraceEn=1); 0, -ENODEV (no stream here) or -ENOSPC */
int pt_session_start(void);
/** pt_session_stop() - disable tracing on this CPU and publish what its trace unit wrote */
void pt_session_stop(void);
/** pt_session_ptwrite_on() - tracing runs with PTWRITE packets enabled (PTWEn) */
bool pt_session_ptwrite_on(void);
/** pt_session_drain() - move published data into the container (the consumer) */
void pt_session_drain(void);
/** pt_session_snapshot() - write the last @len bytes of a snapshot ring */
void pt_session_snapshot(u64 len);
/**
 * trace_write_live_image() - trace_write_image() of memory that changes as
 * it is written: a module's data (DxeCore's, at every timer tick) changed
 * between the CRC's pass over it and the copy's, and the record failed its
 * CRC. The bytes are copied once, then written from the copy; without the
 * memory for one, from where they are (as before).
 */
int trace_write_live_image(struct trace_writer *w, const char *name, u64 vaddr, const void *data,
			   size_t size);

/** pt_session_add_image() - a sideband memory image of traced code outside the kernel */
void pt_session_add_image(const char *name, u64 vaddr, const void *data, u64 size);
/**
 * pt_session_close() - stop, drain (or snapshot), write the trailer; a sink
 * that failed is reported (how much of the container it holds)
 */
void pt_session_close(void);

/**
 * struct trace_mem_sink - pt.sink=memory (kernel/tracing/mem_sink.c)
 * @buf: @len: the container so far, in a block of @cap bytes of pages
 * @failed_at: 0, or the size the container needed when a bigger block could
 *	not be allocated (the sink failed there)
 */
/* pt_coverage.c: a coverage decoder per CPU, fed what the drains write */
void pt_coverage_open(void);
void pt_coverage_feed(unsigned int cpu, u32 flags, const u8 *p, size_t n);
void pt_coverage_close(void);

struct trace_mem_sink {
	u8 *buf;
	u64 len, cap, failed_at;
};
/** trace_mem_sink_write() - a trace_sink write function; @ctx is a trace_mem_sink */
int trace_mem_sink_write(void *ctx, const void *buf, size_t n);
/** trace_mem_sink_free() - give back its pages */
void trace_mem_sink_free(struct trace_mem_sink *m);

#endif
