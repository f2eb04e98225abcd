/* SPDX-License-Identifier: MIT */
/*
 * ptdecode's library: everything but the command line, so the host tests
 * (tests/host/test_trace_*.c) link the same code the tool runs.
 *
 *   container.c  read and check a trace container (records, CRCs, totals)
 *   serial.c     pull a framed container out of a serial log
 *   image.c      the traced memory: kernel ELF segments, sideband images, symbols
 *   segment.c    trace records joined into contiguous per-CPU streams
 *   flow.c       libipt instruction-flow decoding into ptd_event callbacks
 *   packets.c    the packet pass (--packets, packet counts)
 *   insn.c       --insn printer
 *   calls.c      the shadow call stack, --calls tree, and the stack profile
 *   folded.c     --folded and the --svg flame graph
 *   stats.c      --stats and the short summary
 *   coverage.c   --coverage (drcov, lcov, summary) and --coverage-diff
 *   diag.c       error messages that name the record and the offset
 *   covcheck.c   the coverage decoder (ptcov.h) against libipt's flow
 *   progress.c   a progress line on a terminal for long decodes
 */
#ifndef TOPAZ_PTDECODE_H
#define TOPAZ_PTDECODE_H

#include <stdio.h>
#include <intel-pt.h>
#include <topaz/types.h>
#include <topaz/trace_format.h>

/** ptd_grow() - @v with room for one more of @size bytes (@n used of *@cap;
 * doubles; aborts when memory is out, as the decoder's tables do) */
void *ptd_grow(void *v, size_t *cap, size_t n, size_t size);
/** ptd_crc32() - the container's CRC-32 (zlib's crc32(), which the kernel's
 * trace_crc32() matches; tests/host/test_trace_writer.c checks both agree) */
u32 ptd_crc32(u32 crc, const void *buf, size_t n);

/* ------------------------------------------------------------ diagnostics */

/**
 * struct ptd_diag - one problem found in the input
 * @record: the record it concerns, or -1 when it concerns the whole file
 * @offset: file offset of that record (or of the damaged bytes)
 * @msg: the reason
 */
struct ptd_diag {
	long record;
	u64 offset;
	char msg[512];
};

/* The first PTD_DIAGS_KEPT problems are kept with their text; the rest only
 * counted (@more), so a file of a million bad records costs no more memory or
 * output than a thousand. */
#define PTD_DIAGS_KEPT	1000

struct ptd_diags {
	struct ptd_diag *v;
	size_t n, cap;
	size_t more;		/* problems after the first PTD_DIAGS_KEPT, counted only */
};

/** ptd_diags_count() - every problem found, kept or only counted */
static inline size_t ptd_diags_count(const struct ptd_diags *d)
{
	return d->n + d->more;
}

__printf(4, 5) void ptd_diag_add(struct ptd_diags *d, long record, u64 offset, const char *fmt, ...);
/** ptd_diag_format() - "ptdecode: FILE: record N at offset 0xOFF: reason" */
void ptd_diag_format(const struct ptd_diag *g, const char *file, char *buf, size_t size);
void ptd_diags_print(const struct ptd_diags *d, size_t from, const char *file, FILE *out);
void ptd_diags_free(struct ptd_diags *d);

/*
 * Names from the input (symbols, modules, sideband images) go to terminals
 * and line-based files written as \xHH where they hold a byte outside
 * printable ASCII (a hostile symbol table's newline splits a line, its
 * escape sequences drive the terminal) or a '\' (so the escape is not
 * ambiguous). Problem lines get it in ptd_diag_add().
 */
/**
 * ptd_escape_into() - @s escaped into @buf (@size bytes; cut before an
 * escape that does not fit); its length
 * @extra: more characters to escape (the folded format's separators), or NULL
 * @backslash: escape '\' too (not in text whose names are escaped already)
 */
size_t ptd_escape_into(char *buf, size_t size, const char *s, const char *extra, bool backslash);
/** ptd_escape() - @s itself when it needs no escape, else escaped into @buf */
const char *ptd_escape(const char *s, char *buf, size_t size);
/** ptd_escape_write() - @s escaped (and @extra) to @out, however long */
void ptd_escape_write(FILE *out, const char *s, const char *extra);

/* -------------------------------------------------------------- container */

/**
 * struct ptd_record - an intact record (both CRCs good, body well formed)
 * @seq: its record number
 * @offset: file offset of its record header
 * @type: enum tpz_rec_type
 * @body: the fixed body, zero-extended to the reader's struct size
 * @payload: @payload_size: the payload inside the container's buffer
 */
struct ptd_record {
	u32 seq;
	u64 offset;
	u16 type;
	u32 size;
	union {
		struct tpz_trace trace;
		struct tpz_sideband sideband;
	} body;
	const u8 *payload;
	u32 payload_size;
};

/**
 * struct ptd_container - a parsed trace file
 * @name: the file name used in messages
 * @data: @size: the file's bytes
 * @recs: @nrecs: intact trace and sideband records, in file order
 * @have_header: @header: the header record, zero-extended
 * @have_trailer: @trailer: the trailer record
 * @diags: every problem found (container, then decoding)
 * @unusable: nothing can be decoded (empty, no record, unsupported version)
 * @trace_records: @sideband_records: @trace_bytes: @lost_bytes: what was read
 */
struct ptd_container {
	const char *name;
	u8 *data;
	size_t size;
	struct ptd_record *recs;
	size_t nrecs, cap_recs;
	bool have_header, have_trailer;
	struct tpz_header header;
	struct tpz_trailer trailer;
	struct ptd_diags diags;
	bool unusable;
	u32 trace_records, sideband_records;
	u64 trace_bytes, lost_bytes;
};

/**
 * ptd_container_parse() - check and index a container held in memory
 * @c: the result (free with ptd_container_free())
 * @name: file name for messages
 * @data: @size: the bytes (copied)
 *
 * Every bad record is named in @c->diags with the reason and skipped; the
 * reader resynchronises at the next valid record header.
 * Return: 0 when everything was intact, 1 when there were problems, 2 when
 * the input is unusable.
 */
int ptd_container_parse(struct ptd_container *c, const char *name, const void *data, size_t size);
/**
 * ptd_read_some() - one read() (EINTR retried) appended to a buffer grown as
 * needed: @buf, @len bytes in it, @cap allocated
 * Return: the bytes read, 0 at the end, -1 with errno.
 */
ssize_t ptd_read_some(int fd, u8 **buf, size_t *len, size_t *cap);
/** ptd_container_load() - ptd_container_parse() on a file's contents */
int ptd_container_load(struct ptd_container *c, const char *path);
void ptd_container_free(struct ptd_container *c);
/** ptd_record_type_name() - "header", "trace", ... or "type N" */
const char *ptd_record_type_name(u16 type, char *buf, size_t size);

/* Noise before the first record header (or between "@TPZ" marks in a serial
 * log) is tolerated up to a record's largest size: past that, endless input
 * (a device, /dev/zero) is refused, not read until memory runs out. */
#define PTD_INPUT_WINDOW	((size_t)TPZ_MAX_RECORD + TPZ_REC_SIZE)

/* ----------------------------------------------------------------- serial */

/**
 * ptd_extract_serial() - the container bytes of the first framed stream in a
 * serial log (console text around and between the frame lines is ignored)
 * @log: @log_size: the log
 * @name: the log's name for messages
 * @out: @out_size: the container bytes (malloc'd); frames that are missing
 *	or damaged are left out, so the reader sees damaged records there
 * @diags: problems, with the log line numbers
 * Return: 0 clean, 1 with problems, 2 when there is no framed stream.
 */
int ptd_extract_serial(const char *log, size_t log_size, u8 **out, size_t *out_size,
		       struct ptd_diags *diags);
/**
 * ptd_extract_serial_file() - ptd_extract_serial() on a file, read until the
 * first @TPZ-END line
 * @window: console text allowed between two "@TPZ" marks (PTD_INPUT_WINDOW,
 *	the container reader's window, so both paths stop endless input at the
 *	same point): a file or device with @window bytes and no "@TPZ" in them
 *	is refused, and reading stops where @window bytes after the last "@TPZ"
 *	hold none (reported)
 * Return: as ptd_extract_serial(); 2 also when the file cannot be read.
 */
int ptd_extract_serial_file(const char *path, size_t window, u8 **out, size_t *out_size,
			    struct ptd_diags *diags);

/* ------------------------------------------------------------------ image */

/**
 * struct ptd_symbol - a function (or a region's stand-in when no symbol covers it)
 * @start: @end: run-time addresses, [start, end)
 * @name: interned; compare pointers
 */
struct ptd_symbol {
	u64 start, end;
	const char *name;
};

/* Addresses [@lo, @last] whose bytes are region @region's (the first one
 * mapped there). */
struct ptd_span {
	u64 lo, last;
	size_t region;
};

/*
 * @size: the extent in memory; @held of it are bytes (an ELF segment's file
 * part: its zero fill is no code, not allocated, read as unmapped)
 */
struct ptd_region {
	u64 vaddr, size, held;
	u8 *bytes;
	char *name;
	struct ptd_symbol whole;	/* "[name]" for addresses without a symbol */
};

/**
 * struct ptd_image - the traced memory and its symbols
 * @regions: loaded bytes (ELF segments, sideband images)
 * @syms: sorted by start once ptd_image_finish() ran
 * @elf_build_id: @elf_build_id_len: the ELF's GNU build id, if any
 */
struct ptd_image {
	struct ptd_region *regions;
	size_t nregions, cap_regions;
	/* which region each address reads from, for lookups in log time (there
	 * may be 40,000 regions, one per sideband record): sorted, disjoint
	 * spans, and the regions by name; made by ptd_image_finish(), good
	 * while @nregions is @spans_of (the lookups search the regions in turn
	 * before) */
	struct ptd_span *spans;
	size_t nspans, spans_of;
	size_t *by_name;
	size_t *fills, nfills;	/* the regions with a zero fill (held < size) */
	struct ptd_symbol *syms;
	size_t nsyms, cap_syms;
	char **strings;		/* interned names: a hash table of @cap_strings slots */
	size_t nstrings, cap_strings;
	u8 elf_build_id[32];
	size_t elf_build_id_len;
	bool finished;
	/* the regions as libipt sections (ptd_image_sections()), or NULL */
	struct pt_image *ipt;
	struct pt_image_section_cache *iscache;
	int ipt_fd;
};

void ptd_image_init(struct ptd_image *img);
void ptd_image_free(struct ptd_image *img);
/** ptd_image_add_region() - map @size bytes (copied) at @vaddr */
int ptd_image_add_region(struct ptd_image *img, const char *name, u64 vaddr, const void *bytes,
			 u64 size);
/** ptd_image_add_symbol() - @size 0: up to the next symbol (or the region's end) */
void ptd_image_add_symbol(struct ptd_image *img, const char *name, u64 start, u64 size);
/**
 * ptd_image_add_elf() - map @path's PT_LOAD segments at @load + p_vaddr (the
 * file's bytes of each: the zero fill is not allocated, and the segments
 * hold twice the file at most) and add its .symtab functions; problems (a
 * damaged symbol table among them) go to @diags
 * Return: 0, or -1 when the file cannot be used
 */
int ptd_image_add_elf(struct ptd_image *img, const char *path, u64 load, struct ptd_diags *diags);
/** ptd_image_add_sideband() - the container's sideband images and symbols;
 * an image that overlaps one mapped already is a problem in @c's diags */
void ptd_image_add_sideband(struct ptd_image *img, struct ptd_container *c);
/** ptd_image_finish() - sort symbols and close zero-size ones; call before lookups */
void ptd_image_finish(struct ptd_image *img);
/** ptd_image_lookup() - the function containing @addr, else its region's stand-in, else NULL */
const struct ptd_symbol *ptd_image_lookup(const struct ptd_image *img, u64 addr);
/**
 * ptd_format_sym() - "name+0xoff" of @addr in @s ("0xaddr" when @s is NULL)
 * into @buf, cut as snprintf() cuts; its length. Built by hand, without
 * printf: --insn formats one per instruction.
 */
size_t ptd_format_sym(const struct ptd_symbol *s, u64 addr, char *buf, size_t size);
/**
 * ptd_image_add_module_symbols() - functions for sideband modules from a
 * folder of ELF files named after them (NAME.debug, NAME.so, NAME.elf);
 * how many modules got symbols. A module name that is not a file name, a
 * file that is not a regular one and a damaged symbol table are problems in
 * @diags.
 */
size_t ptd_image_add_module_symbols(struct ptd_image *img, const char *dir, struct ptd_diags *diags);
/**
 * ptd_open_regular() - open @path to read, refusing (without blocking on
 * it) anything but a regular file: a FIFO, a device, a directory
 * @size: its size, when not NULL
 * Return: the descriptor, or -1 with "@path: reason" in @why
 */
int ptd_open_regular(const char *path, u64 *size, char *why, size_t why_size);
/**
 * ptd_module_file() - open --symbols @dir's file for module @name (its
 * "#N" of a second image left out): NAME.debug, NAME.so or NAME.elf, the
 * first there; a name that is not a plain file name is not looked up
 * @path: @path_size: the file's path
 * @size: its size, when not NULL
 * Return: the descriptor; -1 with @why empty when there is none, with the
 * reason in @why when the name or the file is refused
 */
int ptd_module_file(const char *dir, const char *name, char *path, size_t path_size, u64 *size,
		    char *why, size_t why_size);
/** ptd_image_has_region() - a sideband image (module) called @name was loaded */
bool ptd_image_has_region(const struct ptd_image *img, const char *name);
/** ptd_image_is_symbol() - @sym is a function's, not a region's stand-in ("[name]") */
static inline bool ptd_image_is_symbol(const struct ptd_image *img, const struct ptd_symbol *sym)
{
	/* as integers: @sym may point into a region, not into @syms (which may be NULL) */
	uintptr_t p = (uintptr_t)sym, base = (uintptr_t)img->syms;

	return img->nsyms && p >= base && p < base + img->nsyms * sizeof(*img->syms);
}

/*
 * ptd_image_lookup() with a cache, for the per-instruction consumers: a
 * direct-mapped table of the address ranges over which the lookup answers
 * one function (the function up to the next symbol's start), so the calls
 * and returns between a few functions cost no binary search. Zeroed: empty
 * (the consumers' init functions zero it); good while the symbols stay as
 * ptd_image_finish() left them.
 */
#define PTD_SYM_CACHE	256

struct ptd_sym_cache {
	struct {
		u64 lo, hi;
		const struct ptd_symbol *sym;
	} e[PTD_SYM_CACHE];
};

/** ptd_image_lookup_cached() - what ptd_image_lookup() answers, through @c */
const struct ptd_symbol *ptd_image_lookup_cached(const struct ptd_image *img, struct ptd_sym_cache *c,
						 u64 addr);
/** ptd_image_read() - libipt's read_memory_callback_t over the regions */
int ptd_image_read(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip, void *img);
/**
 * ptd_image_sections() - the regions as a libipt image of file sections (the
 * bytes in an anonymous memory file), built on first use and dropped when a
 * region is added; the instruction decoder reads them from its cache of the
 * mapped section instead of calling ptd_image_read() for every instruction.
 * The same bytes at every address (the first region mapped wins, as in
 * ptd_image_read()). NULL when the system cannot, or when there are more
 * than PTD_MAX_SECTIONS regions: use the callback then.
 */
#define PTD_MAX_SECTIONS	1024
struct pt_image *ptd_image_sections(struct ptd_image *img);
/** ptd_format_addr() - "name+0xoff", or "0x<hex>" outside every region */
const char *ptd_format_addr(const struct ptd_image *img, u64 addr, char *buf, size_t size);
const char *ptd_intern(struct ptd_image *img, const char *s);

/* ---------------------------------------------------------------- segments */

/* Where a segment's bytes came from, for messages. */
struct ptd_piece {
	u32 seq;
	u64 file_off;		/* file offset of the record header */
	u64 payload_off;	/* file offset of the first data byte */
	u64 seg_off;		/* offset inside the segment */
	u32 size;
};

/**
 * struct ptd_segment - contiguous trace bytes of one CPU
 * @cpu: the CPU
 * @index: 0, 1, ... per CPU
 * @stream_off: stream offset of @data[0]
 * @gap: bytes missing between the previous segment (or stream start) and this one
 * @gap_why: why this segment starts a new stream ("lost", "records damaged or
 *	missing", "the trace unit stopped...", "overlap", "after an overlap"),
 *	NULL for the first
 *	segment without gap
 * @gap_known: the container counted the lost bytes (LOST, 0 included); a stop
 *	without it (silicon) dropped an unknown number
 * @overlaps: it starts after an overlap: its first chunk's stream offset went
 *	back over bytes delivered before (@overlap of them, decoded again; not
 *	lost, not in @gap), or it follows bytes delivered before such a chunk
 */
struct ptd_segment {
	u32 cpu, index;
	u64 stream_off;
	u8 *data;
	size_t size, data_cap;
	u64 gap;
	const char *gap_why;
	bool gap_known, overlaps;
	u64 overlap;
	struct ptd_piece *pieces;
	size_t npieces, pieces_cap;
};

/**
 * struct ptd_cpu_stream - one CPU's trace in the container: its own stream
 * offsets, segments, gaps and losses (docs/trace-format.md, "Several CPUs")
 * @cpu: the CPU
 * @records: @bytes: @lost: its intact TRACE records, their payload bytes and
 *	their LOST counts (the trailer's lost_at_end is no CPU's)
 * @first: @nsegs: its segments, v[@first .. @first + @nsegs)
 * @end_lost: with @end_why: bytes lost after its last chunk (an empty chunk
 *	with LOST ends its stream), @end_known as for a gap, at stream offset
 *	@end_off, said by record @end_seq at file offset @end_rec_off
 */
struct ptd_cpu_stream {
	u32 cpu, records;
	u64 bytes, lost;
	size_t first, nsegs;
	u64 end_lost, end_off, end_rec_off;
	const char *end_why;
	bool end_known;
	u32 end_seq;
};

/*
 * @v: @n: the segments, by CPU then stream offset
 * @cpus: @ncpus: the CPUs decoded (ascending), each with its segments
 * @partial: CPUs with records were left out (ptd_segments_build_cpus())
 */
struct ptd_segments {
	struct ptd_segment *v;
	size_t n, cap;
	struct ptd_cpu_stream *cpus;
	size_t ncpus, cap_cpus;
	bool partial;
};

/** ptd_segments_build() - join @c's trace records; discontinuities go to @c->diags */
void ptd_segments_build(struct ptd_container *c, struct ptd_segments *s);
/**
 * ptd_segments_build_cpus() - ptd_segments_build() for the CPUs in @only
 * (@nonly of them; NULL: every CPU); the records of other CPUs are left out,
 * their problems too
 */
void ptd_segments_build_cpus(struct ptd_container *c, struct ptd_segments *s, const u32 *only,
			     size_t nonly);
/** ptd_segments_cpu() - the stream of @cpu in @s, or NULL */
const struct ptd_cpu_stream *ptd_segments_cpu(const struct ptd_segments *s, u32 cpu);
/**
 * ptd_container_cpus() - the CPUs @c has intact TRACE records of, ascending,
 * into @cpus (malloc'd, free it; NULL when there are none)
 * Return: how many.
 */
size_t ptd_container_cpus(const struct ptd_container *c, u32 **cpus);
/**
 * ptd_container_multi_cpu() - the container is of several CPUs (its header
 * says more than one may have records, or a record is of a CPU other than
 * 0): the outputs name each CPU. A single-CPU trace's outputs name none, as
 * before there were several.
 */
bool ptd_container_multi_cpu(const struct ptd_container *c);
void ptd_segments_free(struct ptd_segments *s);
/**
 * ptd_segment_note() - what lies before segment @s, for the outputs' segment
 * lines: "gap: N bytes missing before this segment (why)", "overlap: N bytes
 * of this segment were delivered before it", both, or "" (into @buf)
 */
const char *ptd_segment_note(const struct ptd_segment *s, char *buf, size_t size);
/** ptd_segment_where() - the record and file offset of segment byte @off */
void ptd_segment_where(const struct ptd_segment *s, u64 off, u32 *seq, u64 *rec_off, u64 *file_off);

/* ------------------------------------------------------------------- decoding */

/*
 * Each CPU's stream is decoded on its own: every segment with a decoder of
 * its own (libipt's state starts afresh at the segment's first PSB), the
 * segments of one CPU in stream order, one CPU after the other. Nothing of
 * one CPU's stream reaches another's decoder.
 * @per_cpu: ptd_container_multi_cpu(): outputs name the CPUs
 */
/**
 * struct ptd_progress - a progress line on a terminal for a long decode
 * @f: where it goes; NULL when that is not a terminal (then nothing is done)
 * @what: what runs ("decoding")
 * @total: bytes of trace in all; @done: those decoded so far
 * @delay: seconds of work before the first line (a short decode shows none)
 * @start, @last: when the work began, when the line was last written
 * @calls: ptd_progress_at() calls, to look at the clock only now and then
 * @shown: a line is on the terminal (ptd_progress_end() erases it)
 */
struct ptd_progress {
	FILE *f;
	const char *what;
	u64 total, done;
	double delay, start, last;
	unsigned int calls;
	bool shown;
};

/** ptd_progress_init() - a progress line on @f after @delay seconds of work,
 * when @f is a terminal; otherwise none, ever */
void ptd_progress_init(struct ptd_progress *p, FILE *f, double delay);
/** ptd_progress_begin() - the work @what starts, @total bytes of it */
void ptd_progress_begin(struct ptd_progress *p, const char *what, u64 total);
/** ptd_progress_show() - write the line now if it is due (ptd_progress_at()'s slow path) */
void ptd_progress_show(struct ptd_progress *p);
/** ptd_progress_end() - the work is done: erase the line if one was written */
void ptd_progress_end(struct ptd_progress *p);

/* ptd_progress_at() looks at the clock once in this many calls */
#define PTD_PROGRESS_EVERY	256

/** ptd_progress_at() - @done bytes of the work are done (@p may be NULL) */
static inline void ptd_progress_at(struct ptd_progress *p, u64 done)
{
	if (!p || !p->f)
		return;
	p->done = done;
	if (++p->calls % PTD_PROGRESS_EVERY == 0)
		ptd_progress_show(p);
}

struct ptd_ctx {
	struct ptd_container *c;
	struct ptd_image *img;
	struct ptd_segments segs;
	struct pt_config cfg;	/* cpu, timing; begin/end per segment */
	unsigned long max_stuck;	/* instructions without a packet before a loop is cut */
	bool per_cpu;
	struct ptd_progress *progress;	/* the decode's progress line, or NULL */
};

/** ptd_ctx_init() - segments and the libipt configuration from @c's header */
void ptd_ctx_init(struct ptd_ctx *x, struct ptd_container *c, struct ptd_image *img);
/** ptd_ctx_init_cpus() - ptd_ctx_init() for the CPUs in @only (NULL: all) */
void ptd_ctx_init_cpus(struct ptd_ctx *x, struct ptd_container *c, struct ptd_image *img,
		       const u32 *only, size_t nonly);
void ptd_ctx_free(struct ptd_ctx *x);

enum ptd_ev_type {
	PTD_EV_SEGMENT,		/* a segment starts; @seg->gap tells what is missing before it */
	PTD_EV_INSN,		/* @insn executed */
	PTD_EV_ENABLED,		/* tracing on at @ip */
	PTD_EV_DISABLED,	/* tracing off (@ip valid: where it would continue) */
	PTD_EV_ASYNC_DISABLED,	/* tracing off asynchronously at @ip */
	PTD_EV_INTERRUPT,	/* asynchronous branch @ip -> @to (interrupt, exception) */
	PTD_EV_OVERFLOW,	/* packets lost inside the trace unit; resumes at @ip */
	PTD_EV_PAGING,		/* CR3 = @value */
	PTD_EV_EXEC_MODE,	/* execution mode @value (enum pt_exec_mode) at @ip */
	PTD_EV_PTWRITE,		/* PTWRITE @value */
	PTD_EV_STOP,		/* TraceStop */
	PTD_EV_OTHER,		/* TSX, VMCS, power, timing: @what names it */
	PTD_EV_ERROR,		/* decoding failed at @stream_off/@ip with @err; resync follows */
	PTD_EV_END,		/* the segment's trace ends */
};

/**
 * struct ptd_event - what the instruction-flow decoder reports
 * @ip_valid: false when the packet suppressed the IP
 * @status_update: libipt's status_update (PSB+ restatement, not an event in the code)
 * @seg_off: position in @seg->data when the event was produced
 */
struct ptd_event {
	enum ptd_ev_type type;
	const struct ptd_segment *seg;
	u64 ip, to, value;
	bool ip_valid, status_update;
	const struct pt_insn *insn;
	u64 seg_off;
	int err;
	const char *what;
};

/*
 * A consumer gets every event in order. The library's own ones (stats,
 * per-CPU stats, calls) have a batch form too, which ptd_decode_flow() uses for them: the
 * instructions (PTD_EV_INSN) @n at a time, between the events around them;
 * the call and dispatch per instruction are much of what a decoder adds to
 * libipt's cost.
 */
struct ptd_consumer {
	void (*event)(void *ctx, const struct ptd_event *ev);
	void *ctx;
};

/**
 * ptd_decode_flow() - decode every segment's instruction flow with libipt
 * and send the events to each consumer in turn; decode errors are also
 * added to the container's diags
 * Return: the number of decode errors.
 */
unsigned long ptd_decode_flow(struct ptd_ctx *x, const struct ptd_consumer *cons, size_t ncons);
/**
 * ptd_report_gaps() - one problem per hole in the trace (lost bytes, a
 * truncated or missing record), for passes that do not decode the flow
 * (ptd_decode_flow() reports them itself, with the instructions they cost)
 */
void ptd_report_gaps(struct ptd_container *c, const struct ptd_segments *segs);

/* ---------------------------------------------------------------- packets */

/**
 * struct ptd_packet - one packet of the packet pass
 * @pkt: libipt's packet
 * @seg_off: its offset in the segment
 * @ip: the reconstructed IP (IP packets with a payload)
 */
struct ptd_packet {
	const struct ptd_segment *seg;
	const struct pt_packet *pkt;
	u64 seg_off;
	u64 ip;
	bool has_ip;
};

typedef void (*ptd_packet_fn)(void *ctx, const struct ptd_packet *p, int err);

/**
 * ptd_scan_packets() - every packet of every segment (from its first PSB);
 * @fn gets err < 0 with @p->seg_off for a packet that could not be decoded,
 * after which the scan resumes at the next PSB
 * @report: also add such errors to the container's diags
 * Return: the number of packet errors.
 */
unsigned long ptd_scan_packets(struct ptd_ctx *x, ptd_packet_fn fn, void *ctx, bool report);
/** ptd_dump_packets() - --packets: ptdump-like lines */
unsigned long ptd_dump_packets(struct ptd_ctx *x, FILE *out, bool report);
/** ptd_packet_ip() - the address IP packet @p stands for after @last (the
 * SDM's IP compression); @last itself when its IP is suppressed */
u64 ptd_packet_ip(const struct pt_packet_ip *p, u64 last);
/** ptd_format_packet() - "tnt.8      !!." for one packet */
void ptd_format_packet(const struct ptd_packet *p, const struct ptd_image *img, char *buf, size_t size);

/* ------------------------------------------------------------------- insn */

/* A disassembly the printer made, kept for the next time the instruction runs. */
struct ptd_disasm {
	u64 ip;
	u8 raw[15], size, mode, len;	/* @len 0: empty slot */
	char text[160];
};

#define PTD_DISASM_CACHE	4096

struct ptd_insn_printer {
	FILE *out;
	const struct ptd_image *img;
	bool disasm;
	size_t cs[4];		/* capstone handles per pt_exec_mode, 0 = not open */
	struct ptd_sym_cache syms;
	struct ptd_disasm *cache;	/* PTD_DISASM_CACHE slots, by address */
};

void ptd_insn_printer_init(struct ptd_insn_printer *p, FILE *out, const struct ptd_image *img,
			   bool disasm);
void ptd_insn_printer_free(struct ptd_insn_printer *p);
void ptd_insn_event(void *printer, const struct ptd_event *ev);

/* ------------------------------------------------------------------- calls */

/* A node of the stack profile: one distinct call stack. */
struct ptd_fnode {
	const char *name;
	const char *region;	/* named by its call target in a region without symbols: "[region]" */
	struct ptd_fnode *parent, *child, *next;
	u64 self;	/* instructions executed with this stack */
	u64 total;	/* self plus the children's totals (ptd_calls_finish) */
	/* a CPU's node ("cpu1", a child of the root, with @per_cpu): not a frame */
	bool cpu_node;
	u32 cpu;
	size_t max_depth;	/* a CPU's node: its deepest stack (traced frames) */
	struct ptd_fnode *merged;	/* ptd_calls_merge_cpus()'s scratch */
};

/*
 * UNTRACED: a call that left the traced code (pt.filter), held until tracing
 * comes back on at its return address; it is not in the stack profile.
 * CALLBACK: traced code that untraced code called (its return address unknown).
 */
enum ptd_frame_kind { PTD_FRAME_ROOT, PTD_FRAME_CALL, PTD_FRAME_IRQ, PTD_FRAME_JUMP, PTD_FRAME_RETURNED,
		      PTD_FRAME_UNTRACED, PTD_FRAME_CALLBACK };

struct ptd_frame {
	const struct ptd_symbol *sym;
	const char *name;
	struct ptd_fnode *node;
	u64 ret;		/* where a return to the caller lands */
	u64 entry_ip;		/* first instruction seen in the frame */
	u64 from;		/* the call, interrupt or jump that entered it */
	u64 start_count;	/* instruction count at entry */
	enum ptd_frame_kind kind;
	bool printed;		/* its "name() {" line is out */
};

/**
 * struct ptd_calls - the shadow call stack built from the instruction flow
 * @tree: where the --calls tree goes, or NULL
 * @root: the stack profile (its children are the bottom frames)
 */
struct ptd_calls {
	FILE *tree;
	const struct ptd_image *img;
	struct ptd_frame *frames;
	size_t depth, cap;
	size_t nprinted;	/* frames[0..nprinted) have their "name() {" line out */
	struct ptd_fnode root;
	u64 count;
	int pending;		/* what the previous instruction does to the stack */
	u64 pending_ret, pending_from;
	const struct ptd_symbol *last_sym;
	u64 last_ip;
	u64 calls, returns, interrupts, unmatched_returns;
	bool async_pending;	/* tracing went off at @async_ip: an interrupt if it comes on again */
	u64 async_ip;
	size_t max_depth;	/* traced frames only */
	size_t untraced;	/* PTD_FRAME_UNTRACED frames on the stack */
	struct ptd_sym_cache syms;
	/* @per_cpu: each CPU's stacks below a node of its own ("cpu0", ...),
	 * @base: the current CPU's (the root without @per_cpu) */
	bool per_cpu;
	struct ptd_fnode *base;
	struct ptd_fnode **cpu_nodes;	/* the CPUs' nodes by CPU: a hash table of @cpu_cap slots */
	size_t cpu_cap, ncpu_nodes;
};

void ptd_calls_init(struct ptd_calls *k, const struct ptd_image *img, FILE *tree);
/** ptd_calls_set_per_cpu() - stacks below a node per CPU (before the first event) */
void ptd_calls_set_per_cpu(struct ptd_calls *k, bool per_cpu);
/** ptd_calls_cpu_node() - @cpu's node of a per-CPU profile, or NULL */
const struct ptd_fnode *ptd_calls_cpu_node(const struct ptd_calls *k, u32 cpu);
/**
 * ptd_calls_merge_cpus() - the stack profile of @k with the CPUs merged (the
 * same stack on several CPUs is one, its counts added) into @out, which has
 * only a profile (for ptd_write_folded() and ptd_write_svg(); free it with
 * ptd_calls_free()); a copy when @k is not per CPU. After ptd_calls_finish().
 */
void ptd_calls_merge_cpus(const struct ptd_calls *k, struct ptd_calls *out);
void ptd_calls_event(void *calls, const struct ptd_event *ev);
/** ptd_calls_insns() - ptd_calls_event() on a batch of instructions */
void ptd_calls_insns(void *calls, const struct pt_insn *v, size_t n);
/** ptd_calls_finish() - close open frames, compute totals */
void ptd_calls_finish(struct ptd_calls *k);
void ptd_calls_free(struct ptd_calls *k);

/* ------------------------------------------------------------------ folded */

/** ptd_write_folded() - "a;b;c count" lines (depth first, siblings by name);
 * a per-CPU profile's lines start with the CPU, "cpu1;a;b;c count" (not a
 * frame: a deep stack is elided as without it) */
void ptd_write_folded(const struct ptd_calls *k, FILE *out);
/** ptd_write_svg() - a flame graph of the stack profile */
void ptd_write_svg(const struct ptd_calls *k, FILE *out, const char *title);

/* ------------------------------------------------------------------- stats */

struct ptd_fn_count {
	const char *name;
	u64 count;
};

/**
 * struct ptd_stats - --stats numbers
 * @branches: conditional + jumps + calls + returns + far transfers
 */
struct ptd_stats {
	const struct ptd_image *img;
	u64 insns, branches;
	u64 cond, cond_taken, cond_not_taken;
	u64 jump_direct, jump_indirect, call_direct, call_indirect, ret, far;
	u64 interrupts, enables, disables, overflows_flow, decode_errors;
	u64 call_depth;		/* the deepest call stack (set from struct ptd_calls) */
	u64 interrupts_untraced;	/* tracing off at an instruction, on again at it: a handler not traced */
	bool async_pending;		/* an asynchronous disable at @async_ip waits for its enable */
	u64 async_ip;
	u64 packets, packet_errors, pkt[ppt_ptw + 1];
	u64 segments, gaps, gap_bytes;
	u64 overlaps, overlap_bytes;	/* segments after an overlap; the bytes delivered again */
	/* per function (self instructions); sorted by ptd_stats_finish */
	struct ptd_fn_count *fns;
	size_t nfns, cap_fns;
	size_t *hash;
	size_t hash_cap;
	/* a conditional branch waits for the next instruction to know its outcome */
	bool cond_pending;
	u64 cond_next;
	const struct ptd_symbol *last_sym;
	size_t last_fn;
	/* made on first use; the CPUs' statistics share their set's (one
	 * each was 6 KB a CPU, most of the time of 40,000) */
	struct ptd_sym_cache *syms;
	bool own_syms;
	/* what ptd_stats_finish() takes from the segments: the payload bytes and
	 * recorded losses of the CPUs decoded; @all_cpus: none was left out (the
	 * trailer's lost_at_end is theirs) */
	bool have_bytes, all_cpus;
	u64 bytes, lost;
};

void ptd_stats_init(struct ptd_stats *s, const struct ptd_image *img);
void ptd_stats_event(void *stats, const struct ptd_event *ev);
/** ptd_stats_insns() - ptd_stats_event() on a batch of instructions */
void ptd_stats_insns(void *stats, const struct pt_insn *v, size_t n);
void ptd_stats_packet(void *stats, const struct ptd_packet *p, int err);
void ptd_stats_finish(struct ptd_stats *s, const struct ptd_segments *segs);
/** ptd_stats_move() - @n of the instructions counted in function @from are @to's */
void ptd_stats_move(struct ptd_stats *s, const char *from, const char *to, u64 n);
/**
 * ptd_stats_call_targets() - give the instructions that --stats counted as a
 * symbol-less region ("[firmware]") to the functions the call tree found in
 * it, named by call target ("[firmware@0x7e9f1234]"); before ptd_stats_finish()
 */
void ptd_stats_call_targets(struct ptd_stats *s, const struct ptd_calls *k);
/** ptd_stats_call_targets_below() - the same for the nodes below @top only */
void ptd_stats_call_targets_below(struct ptd_stats *s, const struct ptd_fnode *top);
void ptd_stats_free(struct ptd_stats *s);
/** ptd_stats_print() - the full --stats report */
void ptd_stats_print(const struct ptd_stats *s, const struct ptd_container *c, FILE *out);
/** ptd_summary_print() - the few lines `make run` shows; @top functions */
void ptd_summary_print(const struct ptd_stats *s, const struct ptd_container *c, FILE *out,
		       size_t top);

/*
 * Statistics per CPU: one struct ptd_stats for each CPU decoded (@segs's
 * streams, same order), fed by one consumer that hands each segment's events
 * to its CPU's; the total is their sum.
 */
struct ptd_cpu_stats {
	struct ptd_stats *v;
	size_t n;
	struct ptd_sym_cache *syms;	/* shared by @v */
	struct ptd_stats *cur;		/* the CPU of the segment being decoded */
	const struct ptd_segments *segs;
};

void ptd_cpu_stats_init(struct ptd_cpu_stats *cs, const struct ptd_image *img,
			const struct ptd_segments *segs);
void ptd_cpu_stats_event(void *cs, const struct ptd_event *ev);
void ptd_cpu_stats_insns(void *cs, const struct pt_insn *v, size_t n);
/** ptd_cpu_stats_packet() - ptd_stats_packet() to the packet's CPU */
void ptd_cpu_stats_packet(void *cs, const struct ptd_packet *p, int err);
/** ptd_cpu_stats_get() - @cpu's statistics, or NULL */
const struct ptd_stats *ptd_cpu_stats_get(const struct ptd_cpu_stats *cs, u32 cpu);
/**
 * ptd_cpu_stats_finish() - each CPU's call targets (its part of @k, which
 * may be per CPU or not), depth and totals; then their sum into @total
 * (initialised here, finished: what one struct ptd_stats fed every event
 * would hold)
 */
void ptd_cpu_stats_finish(struct ptd_cpu_stats *cs, const struct ptd_calls *k,
			  struct ptd_stats *total);
void ptd_cpu_stats_free(struct ptd_cpu_stats *cs);
/**
 * ptd_stats_print_cpus() - ptd_stats_print() of @total with each CPU's part:
 * a "cpus:" line, lines per CPU after the top functions, and before the
 * total's "result: decode" line one "result: decode.cpu cpu=N ..." per CPU
 */
void ptd_stats_print_cpus(const struct ptd_stats *total, const struct ptd_cpu_stats *cs,
			  const struct ptd_container *c, FILE *out);
/** ptd_cpu_summary_print() - a line per CPU: instructions, bytes, @top functions */
void ptd_cpu_summary_print(const struct ptd_cpu_stats *cs, FILE *out, size_t top);

/* ------------------------------------------------------------- perf.data */

/**
 * ptd_write_perf_data() - the trace as a perf.data file for Linux perf's
 * Intel PT decoder (perfdata.c has what perf is told, and why)
 * @c: the container (its header gives the configuration; problems go to
 *	@c->diags, among them what perf cannot use)
 * @segs: its segments: one AUXTRACE queue each, so gaps stay gaps; each
 *	CPU's queues carry its number (perf decodes and names every CPU)
 * @img: the functions each sideband image's ELF file names for perf (the
 *	trace's symbols, --symbols'), or NULL for none
 * @elf: the kernel ELF (its PT_LOAD segments become perf's maps), or NULL
 * @load: where it was loaded
 * @path: the perf.data to write; sideband images go to "@path.images/",
 *	an ELF file each
 * Return: 0, or -1 when nothing usable was written
 */
int ptd_write_perf_data(struct ptd_container *c, const struct ptd_segments *segs,
			const struct ptd_image *img, const char *elf, u64 load, const char *path);

/* ---------------------------------------------------------- coverage check */

struct ptcov;

/*
 * The reference for the coverage decoder: blocks and edges as
 * include/topaz/ptcov.h defines them, from libipt's instruction flow (a
 * consumer of ptd_decode_flow(); covcheck.c says which events cut the flow).
 */
struct ptd_covref_block {
	u64 start;
	u64 end;		/* 0: never seen to its end (cut inside, "open") */
	u32 ninsn;
	u64 hits;
	const struct ptd_segment *seg;	/* where it was first entered */
	u64 seg_off;
};

struct ptd_covref_edge {
	u64 from, to, hits;
	const struct ptd_segment *seg;	/* where it was first taken */
	u64 seg_off;
};

/*
 * @blocks: @edges: in the order first reached, as ptcov lists them
 * @transitions: block entries; @insns: instructions libipt reported
 * @cuts: flow cuts by event type; @unclassified: instructions of class ptic_error
 * @inconsistent: a block seen to end at another place than before
 */
struct ptd_covref {
	const struct ptd_image *img;
	struct ptd_covref_block *blocks;
	size_t nblocks, cap_blocks;
	struct ptd_covref_edge *edges;
	size_t nedges, cap_edges;
	u32 *bslots, *eslots;	/* hash tables of index + 1 */
	size_t bmask, emask;
	bool at_start, cut;	/* the next instruction starts a block; with no edge */
	size_t cur;		/* the block running, SIZE_MAX for none */
	u32 cur_ninsn;
	u64 transitions, insns, unclassified, inconsistent;
	u64 cuts[PTD_EV_END + 1];
};

void ptd_covref_init(struct ptd_covref *r, const struct ptd_image *img);
/** ptd_covref_event() - a consumer's event function (struct ptd_consumer) */
void ptd_covref_event(void *ref, const struct ptd_event *ev);
void ptd_covref_free(struct ptd_covref *r);

/**
 * ptd_coverage_run() - the coverage decoder over @x's streams: each CPU's a
 * stream of its own (ptcov_begin_stream()), a PTCOV_GAP_LOST before each of
 * its segments after the first, the bytes record by record, ptcov_end_stream()
 * at its end
 * @max_blocks: the decoder's list sizes (struct ptcov_config; 0: its default)
 * @bitmap_only: as a fuzzer's windows decode, without the edge list
 * Return: the decoder (ptcov_destroy() it), NULL when it cannot be made.
 */
struct ptcov *ptd_coverage_run(struct ptd_ctx *x, u32 max_blocks, bool bitmap_only);

/**
 * struct ptd_covcheck - ptd_coverage_check()'s verdict
 * @blocks: @edges: what the decoder listed; @ref_blocks: @ref_edges: the reference
 * @open: reference blocks never seen to their end (only start and hits compared)
 * @block_diffs: @edge_diffs: differences found (a missing one, another end,
 *	other hits; block entries that differ in number count as one)
 * @digest: ptcov_bitmap_digest()
 */
struct ptd_covcheck {
	u64 blocks, edges, ref_blocks, ref_edges, open;
	u64 block_diffs, edge_diffs;
	u32 digest;
	bool match;
};

/**
 * ptd_coverage_check() - run the coverage decoder on @x and compare what it
 * found with @r (fed by ptd_decode_flow() on the same @x)
 * @out: where the differences (at most @max_diffs), the counts and the
 *	"result: coverage-check ... match=yes|no" line go; NULL: nowhere
 * Return: true when blocks, edges and their counts are the same.
 */
bool ptd_coverage_check(struct ptd_ctx *x, struct ptd_covref *r, FILE *out, size_t max_diffs,
			struct ptd_covcheck *res);

/* --------------------------------------------------------------- coverage */

/*
 * Coverage from traces (coverage.c): include/topaz/ptcov.h's decoder run
 * over each trace's streams, what it reached kept per module as (module,
 * offset in it), so traces that load a module at different bases add up.
 */
struct ptd_cov;


/**
 * ptd_cov_new() - an empty coverage report
 * @elf: the kernel ELF (--elf; its module is named after the file, its
 *	DWARF lines go to the lcov tracefile), or NULL
 * @symbols: --symbols DIR: debug files of the modules (NAME.debug, .so,
 *	.elf), for their lcov tracefiles; or NULL
 * Return: the report (free with ptd_cov_free()), NULL when the decoder
 * cannot be made.
 */
struct ptd_cov *ptd_cov_new(const char *elf, const char *symbols);
/** ptd_cov_set_progress() - ptd_cov_add() shows its progress on @p (NULL: none) */
void ptd_cov_set_progress(struct ptd_cov *cv, struct ptd_progress *p);
/**
 * ptd_cov_add() - decode @c's every CPU stream into @cv (a LOST gap or a
 * damaged record cuts the flow there; problems go to @c's diags)
 * @img: @c's code (kept by pointer until ptd_cov_free(): the outputs name
 *	functions with its symbols)
 * @load: where the kernel ELF was loaded (its module's base)
 * Return: 0, or -1 when @img holds no code (said on stderr).
 */
int ptd_cov_add(struct ptd_cov *cv, struct ptd_container *c, const struct ptd_image *img, u64 load);
/**
 * ptd_cov_write() - into @dir (which exists): NAME.drcov per module reached
 * and all.drcov with them all, NAME.info (lcov) for each module with DWARF
 * lines, summary.txt; a shorter summary and the "result: coverage" lines to @out
 * Return: 0, or -1 when a file could not be written (said on stderr).
 */
int ptd_cov_write(struct ptd_cov *cv, const char *dir, FILE *out);
/** ptd_cov_diff() - the blocks and edges @a reached and @b did not, and the
 * reverse, named by their traces' symbols; a "result: coverage.diff" line */
void ptd_cov_diff(struct ptd_cov *a, struct ptd_cov *b, FILE *out);
void ptd_cov_free(struct ptd_cov *cv);

#endif
