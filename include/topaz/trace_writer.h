/* SPDX-License-Identifier: MIT */
/*
 * The trace container writer (kernel/tracing/trace_writer.c): builds the records
 * of include/topaz/trace_format.h and hands their bytes to a sink. The same
 * code runs in the kernel and in the host tests.
 *
 * Order of calls:
 *   trace_writer_init(w, sink)
 *   trace_header_init(&h); trace_header_set_image(&h, ...); fill h.rtit_ctl...
 *   trace_write_header(w, &h)
 *   trace_write_trace(w, &chunk, data, n)     per drained buffer chunk
 *   trace_write_image / trace_write_symbols   any time after the header
 *   trace_write_trailer(w, &totals)           last; the writer is closed
 */
#ifndef TOPAZ_TRACE_WRITER_H
#define TOPAZ_TRACE_WRITER_H

#include <topaz/types.h>
#include <topaz/trace_format.h>

/**
 * struct trace_sink - where container bytes go
 * @write: called with consecutive pieces of the container, in order; returns
 *	0 when the whole piece is stored, or a negative errno when the sink
 *	failed (it is then called no more: the container ends before the piece)
 * @ctx: passed to @write
 */
struct trace_sink {
	int (*write)(void *ctx, const void *buf, size_t n);
	void *ctx;
};

enum trace_writer_state { TRACE_W_NEW, TRACE_W_OPEN, TRACE_W_CLOSED };

/* The writer's state: counts for the trailer. Treat as opaque. */
struct trace_writer {
	struct trace_sink sink;
	enum trace_writer_state state;
	u32 seq;
	u32 trace_records, sideband_records;
	u64 trace_bytes, lost_bytes, file_bytes;
	int sink_error;		/* the sink's error: nothing more goes to it */
	u64 unwritten_bytes;	/* container bytes from that piece on, not stored */
};

/**
 * trace_writer_sink_error() - 0 while the sink takes every byte; after it
 * failed, its error, with @stored and @unwritten (may be NULL) set to the
 * container bytes it took and the bytes the writer could not give it since
 */
int trace_writer_sink_error(const struct trace_writer *w, u64 *stored, u64 *unwritten);

/**
 * trace_crc32() - CRC-32 (IEEE 802.3, reflected, as zlib's crc32())
 * @crc: 0 to start, or the value returned for the preceding bytes
 * @buf: @n: the bytes
 */
u32 trace_crc32(u32 crc, const void *buf, size_t n);

/** trace_writer_init() - a writer that sends to @sink; nothing is written yet */
void trace_writer_init(struct trace_writer *w, const struct trace_sink *sink);

/**
 * trace_header_init() - a header with the format version, TOPAZ_VERSION, the
 * caller's @flags (TPZ_HDR_PT_MODEL: the software trace unit answers), and
 * the CPU's identification (CPUID 0, 1, 0x14 and 0x15, through arch.h, so a
 * PT model's leaf 0x14 is what gets recorded); the PT configuration and the
 * image fields are left zero for the caller
 */
void trace_header_init(struct tpz_header *h, u32 flags);

/**
 * trace_header_set_image() - record where the kernel runs
 * @h: the header
 * @load_address: run-time address of the ELF's virtual address 0 (ImageBase)
 * @image_size: bytes of the loaded image
 * @build_id_note: the .note.gnu.build-id note (namesz, descsz, type, "GNU",
 *	descriptor), or NULL
 */
void trace_header_set_image(struct tpz_header *h, u64 load_address, u64 image_size,
			    const void *build_id_note);

/**
 * trace_write_header() - write the header record (record 0)
 * Return: 0, or -EINVAL when a header was already written.
 */
int trace_write_header(struct trace_writer *w, const struct tpz_header *h);

/**
 * struct trace_chunk - where a chunk of trace data sits in a CPU's stream
 * @cpu: the CPU
 * @flags: TPZ_TRACE_*
 * @offset: stream offset of the chunk's first byte (lost bytes counted)
 * @lost: with TPZ_TRACE_LOST, bytes lost right before the chunk
 * @tsc: when the chunk was drained
 */
struct trace_chunk {
	u32 cpu;
	u32 flags;
	u64 offset;
	u64 lost;
	u64 tsc;
};

/**
 * trace_write_trace() - write @size bytes of PT packets as trace record(s)
 *
 * Data above TPZ_MAX_PAYLOAD is split into consecutive records (LOST on the
 * first, TRUNCATED on the last). An empty chunk is written too when it
 * carries LOST or TRUNCATED, so the loss is on record.
 *
 * Return: 0; -EINVAL before the header, after the trailer, or for unknown
 * flags or a lost count without TPZ_TRACE_LOST.
 */
int trace_write_trace(struct trace_writer *w, const struct trace_chunk *c, const void *data,
		      size_t size);

/**
 * trace_write_image() - a memory image of traced code that is not in the
 * kernel ELF (firmware, copied code), split above TPZ_MAX_PAYLOAD
 * @name: what it is (at most 31 characters are kept)
 * Return: 0, or -EINVAL out of order or for an empty image.
 */
int trace_write_image(struct trace_writer *w, const char *name, u64 vaddr, const void *data,
		      size_t size);

/**
 * trace_write_symbols() - names for code in sideband images
 * @syms: @count entries, addresses relative to @base
 * @names: the string blob the entries' name offsets point into
 * Return: 0; -EINVAL out of order or for a name offset outside @names;
 * -E2BIG when the table exceeds TPZ_MAX_PAYLOAD.
 */
int trace_write_symbols(struct trace_writer *w, const char *name, u64 base,
			const struct tpz_sym *syms, u32 count, const char *names, u32 names_size);

/**
 * struct trace_totals - what only the driver knows at the end
 * @pmis: trace PMIs taken
 * @lost_at_end: bytes lost after the last chunk
 * @end_tsc: TSC at the end
 */
struct trace_totals {
	u64 pmis;
	u64 lost_at_end;
	u64 end_tsc;
};

/**
 * trace_write_trailer() - write the trailer with the totals; closes @w
 * Return: 0, or -EINVAL before the header or when already closed.
 */
int trace_write_trailer(struct trace_writer *w, const struct trace_totals *t);

/*
 * Serial framing: a sink that turns container bytes into "@TPZ" text lines
 * (trace_format.h) and passes them to @out, e.g. uart_write.
 */
struct trace_framer {
	void (*out)(void *ctx, const char *s, size_t n);
	void *ctx;
	u8 buf[TPZ_FRAME_DATA];
	u32 len;
	u32 frames;
	u64 bytes;
	u32 crc;
};

/** trace_framer_begin() - start a framed stream: writes the BEGIN line */
void trace_framer_begin(struct trace_framer *f, void (*out)(void *ctx, const char *s, size_t n),
			void *ctx);
/** trace_framer_write() - a trace_sink write function; @framer is the framer (never fails) */
int trace_framer_write(void *framer, const void *buf, size_t n);
/** trace_framer_end() - flush the last frame and write the END line */
void trace_framer_end(struct trace_framer *f);

static inline struct trace_sink trace_framer_sink(struct trace_framer *f)
{
	return (struct trace_sink){ trace_framer_write, f };
}

#endif
