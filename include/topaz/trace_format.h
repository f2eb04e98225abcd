/* SPDX-License-Identifier: MIT */
/*
 * The trace container: what leaves the machine after a PT run, shared by the
 * kernel's writer (kernel/tracing/trace_writer.c) and the host decoder
 * (tools/ptdecode). docs/trace-format.md describes every byte.
 *
 * A container is a sequence of records, each a 24-byte record header, a fixed
 * body (its size in the record header, so later minor versions can append
 * fields) and a variable payload:
 *
 *   HEADER (seq 0)  TRACE / SIDEBAND ...  TRAILER
 *
 * Everything is little-endian and packed. Two CRC-32s (IEEE 802.3, as zlib's
 * crc32()) per record: one over the record header, so a damaged size never
 * sends a reader astray, and one over body and payload.
 */
#ifndef TOPAZ_TRACE_FORMAT_H
#define TOPAZ_TRACE_FORMAT_H

#include <topaz/types.h>

#define TPZ_FORMAT_MAJOR	1	/* readers refuse other majors */
#define TPZ_FORMAT_MINOR	0	/* readers accept any minor: fields only get appended */

#define TPZ_REC_MAGIC		0x525a5054u	/* "TPZR" in the file */

enum tpz_rec_type {
	TPZ_REC_HEADER = 1,	/* struct tpz_header, no payload; first record */
	TPZ_REC_TRACE = 2,	/* struct tpz_trace, payload: raw Intel PT packets */
	TPZ_REC_SIDEBAND = 3,	/* struct tpz_sideband, payload: an image or symbols */
	TPZ_REC_TRAILER = 4,	/* struct tpz_trailer, no payload; last record */
};

/**
 * struct tpz_rec - the header of every record (24 bytes)
 * @magic: TPZ_REC_MAGIC
 * @type: enum tpz_rec_type
 * @body_size: bytes of the fixed body after this header (sizeof the type's
 *	struct in the writer's minor version); the payload follows the body
 * @size: the whole record: 24 + @body_size + payload bytes
 * @seq: record number, 0 for the header record, one more per record
 * @body_crc: CRC-32 of the @size - 24 bytes after this header
 * @hdr_crc: CRC-32 of the 20 bytes before this field
 */
struct tpz_rec {
	u32 magic;
	u16 type;
	u16 body_size;
	u32 size;
	u32 seq;
	u32 body_crc;
	u32 hdr_crc;
} __packed;

#define TPZ_REC_SIZE		24u
#define TPZ_MAX_RECORD		(64u << 20)	/* readers refuse larger records */
#define TPZ_MAX_PAYLOAD		(16u << 20)	/* the writer splits larger data */

/* --------------------------------------------------------------- header */

#define TPZ_HDR_PT_MODEL	(1u << 0)	/* the software trace unit produced the trace */
#define TPZ_HDR_LOAD_ADDRESS	(1u << 1)	/* @load_address is valid */
#define TPZ_HDR_BUILD_ID	(1u << 2)	/* @build_id is valid */

enum tpz_output {
	TPZ_OUT_UNKNOWN = 0,
	TPZ_OUT_TOPA = 1,	/* table of physical addresses */
	TPZ_OUT_SINGLE = 2,	/* single-range output */
	TPZ_OUT_MEMORY = 3,	/* a software buffer (no output MSRs) */
};

/**
 * struct tpz_header - the first record: the machine and the configuration
 * @version_major: @version_minor: TPZ_FORMAT_*
 * @flags: TPZ_HDR_*
 * @topaz_version: the kernel's TOPAZ_VERSION, NUL-padded
 * @vendor: CPUID.0 EBX, EDX, ECX ("GenuineIntel"), not NUL-terminated
 * @cpuid1_eax: CPUID.1 EAX, the processor signature
 * @family: @model: @stepping: decoded from @cpuid1_eax (extended fields folded in)
 * @ncpus: CPUs that may have trace records: those numbered 0 to @ncpus - 1
 * @leaf14: CPUID.(EAX=14H,ECX=0) and (ECX=1): EAX, EBX, ECX, EDX
 * @leaf15: CPUID.15H: EAX (TSC/crystal denominator), EBX (numerator), ECX (crystal Hz)
 * @nom_freq: the maximum non-turbo ratio (CBR packets' unit), 0 if unknown
 * @reserved0: @reserved: zero
 * @tsc_hz: measured TSC frequency, 0 if unknown
 * @rtit_ctl: IA32_RTIT_CTL as programmed, TraceEn included
 * @addr: IA32_RTIT_ADDRn_A and _B
 * @cr3_match: IA32_RTIT_CR3_MATCH
 * @output: enum tpz_output
 * @buffer_size: bytes of trace output buffer per CPU
 * @load_address: the run-time address of the kernel ELF's virtual address 0
 * @image_size: bytes of the loaded kernel image
 * @build_id_len: bytes used in @build_id (GNU build id, sha1: 20)
 * @build_id: the kernel's .note.gnu.build-id descriptor
 * @start_tsc: TSC when tracing was first enabled
 */
struct tpz_header {
	u16 version_major;
	u16 version_minor;
	u32 flags;
	char topaz_version[32];
	char vendor[12];
	u32 cpuid1_eax;
	u8 family, model, stepping, ncpus;
	u32 leaf14[2][4];
	u32 leaf15[3];
	u32 nom_freq;
	u32 reserved0;
	u64 tsc_hz;
	u64 rtit_ctl;
	u64 addr[4][2];
	u64 cr3_match;
	u32 output;
	u32 buffer_size;
	u64 load_address;
	u64 image_size;
	u8 build_id_len;
	u8 reserved[7];
	u8 build_id[32];
	u64 start_tsc;
} __packed;

/* ---------------------------------------------------------------- trace */

#define TPZ_TRACE_LOST		(1u << 0)	/* @lost bytes are missing right before data[0] */
#define TPZ_TRACE_TRUNCATED	(1u << 1)	/* output stopped inside this chunk: the last
					 * packet may be cut and the stream does not
					 * continue seamlessly into the next chunk */
#define TPZ_TRACE_WRAPPED	(1u << 2)	/* a ring buffer wrapped: older data was overwritten */
#define TPZ_TRACE_KNOWN_FLAGS	(TPZ_TRACE_LOST | TPZ_TRACE_TRUNCATED | TPZ_TRACE_WRAPPED)

/**
 * struct tpz_trace - a chunk of raw PT packets from one CPU
 * @cpu: the CPU (APIC id order, 0 first)
 * @flags: TPZ_TRACE_*
 * @offset: stream offset of data[0]: bytes this CPU's trace unit produced
 *	before it, lost bytes included; contiguous chunks have
 *	offset == previous offset + previous data_size
 * @lost: with TPZ_TRACE_LOST, bytes lost between the previous chunk and this one
 * @tsc: TSC when the chunk was drained
 * @data_size: payload bytes
 * @reserved: zero
 */
struct tpz_trace {
	u32 cpu;
	u32 flags;
	u64 offset;
	u64 lost;
	u64 tsc;
	u32 data_size;
	u32 reserved;
} __packed;

/* ------------------------------------------------------------- sideband */

enum tpz_sb_kind {
	TPZ_SB_IMAGE = 1,	/* payload: memory bytes at @vaddr (code not in the kernel ELF) */
	TPZ_SB_SYMBOLS = 2,	/* payload: @count struct tpz_sym, then their names */
};

/**
 * struct tpz_sideband - memory image or symbols of traced code
 * @kind: enum tpz_sb_kind
 * @count: TPZ_SB_SYMBOLS: entries; 0 otherwise
 * @vaddr: TPZ_SB_IMAGE: address of payload[0]; TPZ_SB_SYMBOLS: base added to
 *	every struct tpz_sym.addr
 * @size: payload bytes
 * @reserved: zero
 * @name: what the bytes are ("firmware", "bootservices"), NUL-padded
 */
struct tpz_sideband {
	u32 kind;
	u32 count;
	u64 vaddr;
	u32 size;
	u32 reserved;
	char name[32];
} __packed;

/**
 * struct tpz_sym - one symbol of a TPZ_SB_SYMBOLS payload
 * @addr: offset from the sideband's vaddr
 * @size: bytes, 0 if unknown (then it extends to the next symbol)
 * @name: offset of the NUL-terminated name in the string blob that follows
 *	the @count entries
 */
struct tpz_sym {
	u64 addr;
	u32 size;
	u32 name;
} __packed;

/* -------------------------------------------------------------- trailer */

/**
 * struct tpz_trailer - the last record: totals a reader checks
 * @records: records before this one (header included)
 * @trace_records: @sideband_records: of those, by type
 * @flags: zero
 * @trace_bytes: the sum of every trace record's data_size
 * @lost_bytes: the sum of every trace record's lost, plus @lost_at_end
 * @lost_at_end: bytes lost after the last chunk (the trace unit stopped)
 * @file_bytes: container bytes before this record
 * @pmis: trace PMIs the driver took
 * @end_tsc: TSC when the container was closed
 */
struct tpz_trailer {
	u32 records;
	u32 trace_records;
	u32 sideband_records;
	u32 flags;
	u64 trace_bytes;
	u64 lost_bytes;
	u64 lost_at_end;
	u64 file_bytes;
	u64 pmis;
	u64 end_tsc;
} __packed;

_Static_assert(sizeof(struct tpz_rec) == TPZ_REC_SIZE, "record header is 24 bytes");
_Static_assert(sizeof(struct tpz_header) == 272, "header body layout");
_Static_assert(sizeof(struct tpz_trace) == 40, "trace body layout");
_Static_assert(sizeof(struct tpz_sideband) == 56, "sideband body layout");
_Static_assert(sizeof(struct tpz_sym) == 16, "symbol entry layout");
_Static_assert(sizeof(struct tpz_trailer) == 64, "trailer body layout");

/* --------------------------------------------------------------- serial */

/*
 * On a serial console the container travels as text lines among the console
 * output (docs/trace-format.md, "Serial framing"):
 *
 *   @TPZ-BEGIN 2
 *   @TPZ 00000000 <base64 of up to 48 bytes> 1a2b3c4d
 *   ...
 *   @TPZ-END <frames, 8 hex> <bytes, 16 hex> <CRC-32 of all bytes, 8 hex>
 *
 * Each frame line carries its number and a CRC-32 of that number (4 bytes,
 * little-endian) followed by its decoded bytes. Version 1's CRC left the
 * number out; it is not read any more.
 */
#define TPZ_FRAME_VERSION	2
#define TPZ_FRAME_MAX		0xffffffffu	/* frames 0..0xfffffffe: the count fits 8 hex digits */
#define TPZ_FRAME_DATA		48	/* bytes per frame line: 64 base64 characters */
#define TPZ_FRAME_BEGIN		"@TPZ-BEGIN"
#define TPZ_FRAME_LINE		"@TPZ "
#define TPZ_FRAME_END		"@TPZ-END"

#endif
