// SPDX-License-Identifier: MIT
/*
 * The built-in firmware fuzz targets (fw.fuzz=NAME, issue 30): the firmware's
 * own code, called through its protocols with the input as hostile data.
 * Each undoes what a run did in its reset (memory freed, images unloaded,
 * packages removed), so that a loop of millions of runs leaks nothing.
 *
 * fw.run=fuzzseeds drives them without the fuzz loop: every seed through
 * run and reset, with the firmware's pool and page use compared before and
 * after (fw_mem_usage()).
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include <topaz/errno.h>
#include <topaz/fuzz.h>
#include <topaz/kernel.h>
#include <topaz/slab.h>

/* ---- decompress: EFI_DECOMPRESS_PROTOCOL (DxeCore, UEFI spec 19) ---- */

struct efi_decompress_protocol {
	EFI_STATUS (EFIAPI *GetInfo)(struct efi_decompress_protocol *self, VOID *src,
				     UINT32 src_size, UINT32 *dst_size, UINT32 *scratch_size);
	EFI_STATUS (EFIAPI *Decompress)(struct efi_decompress_protocol *self, VOID *src,
					UINT32 src_size, VOID *dst, UINT32 dst_size,
					VOID *scratch, UINT32 scratch_size);
};

/*
 * A stream whose header announces more output than this is rejected, not
 * decoded: the decoder's time is its output's size (a block of 0-bit codes
 * writes any length from a few bytes), and a 1 MiB output cost a second of
 * traced time per execution. 16 KiB is twice the UEFI format's 8 KiB window
 * (EfiCompress's WNDBIT 13), so every match distance stays reachable. The
 * scratch GetInfo asks for is a fixed size (13376 bytes in OVMF).
 */
#define DECOMPRESS_MAX_OUT	(16u << 10)
#define DECOMPRESS_MAX_SCRATCH	(16u << 10)

static struct efi_decompress_protocol *decompress;

static int locate(EFI_GUID guid, void **iface, const char *what)
{
	EFI_STATUS s = fw.bs->LocateProtocol(&guid, NULL, iface);

	if (s != EFI_SUCCESS) {
		pr_err("fuzz target: no %s here (LocateProtocol: EFI status 0x%llx)\n", what,
		       (unsigned long long)s);
		return -ENODEV;
	}
	return 0;
}

static int decompress_init(void)
{
	EFI_GUID g = { 0xd8117cfe, 0x94a6, 0x11d4, { 0x9a, 0x3a, 0x00, 0x90, 0x27, 0x3f, 0xc1, 0x4d } };

	return locate(g, (void **)&decompress, "EFI_DECOMPRESS_PROTOCOL");
}

static int decompress_run(const u8 *data, size_t size)
{
	UINT32 dst_size, scratch_size;
	void *dst, *scratch;
	EFI_STATUS s;

	if (size > 0xffffffffu)
		return 1;
	/* the firmware only reads the source: the prototype lacks its const */
	s = decompress->GetInfo(decompress, (void *)data, (UINT32)size, &dst_size, &scratch_size);
	if (s != EFI_SUCCESS || dst_size > DECOMPRESS_MAX_OUT || scratch_size > DECOMPRESS_MAX_SCRATCH)
		return 1;
	dst = kmalloc(dst_size ? dst_size : 1, GFP_KERNEL);
	scratch = kmalloc(scratch_size ? scratch_size : 1, GFP_KERNEL);
	if (!dst || !scratch) {
		kfree(dst);
		kfree(scratch);
		return 1;
	}
	s = decompress->Decompress(decompress, (void *)data, (UINT32)size, dst, dst_size,
				   scratch, scratch_size);
	kfree(dst);
	kfree(scratch);
	return s != EFI_SUCCESS;
}

/* nothing outlives a run: its buffers are freed in it */
static int nothing_to_reset(void)
{
	return 0;
}

/*
 * Hand-made UEFI-compressed streams (no EDK2 compressor in Debian): blocks
 * whose three code sets each hold one symbol (a length-array size of 0, then
 * the symbol), so every code is 0 bits long and each block is literals only.
 * Header: compressed size, original size (LE32); then the bit stream, MSB first.
 */
static const u8 dc_one_block[] = {	/* 16 x 'A' in one block of 17 codes */
	0x07, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
	0x00, 0x11, 0x00, 0x00, 0x04, 0x10, 0x00,
};
static const u8 dc_two_blocks[] = {	/* 8 x 'x', then 'y' to 16 bytes: a second block header */
	0x0d, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00,
	0x00, 0x07, 0x80, 0x00, 0x00, 0x90, 0x00, 0x00, 0x79, 0x00,
};
/*
 * "abcabcabcabc": one block of real Huffman codes: the extra set's two 1-bit
 * codes (a run of zero lengths, length 2), 'a', 'b', 'c' and a 9-byte match
 * in 2-bit codes, the position set a single symbol (distance 3).
 */
static const u8 dc_match[] = {
	0x0b, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x04,
	0x28, 0x05, 0x30, 0x71, 0x37, 0x91, 0xd0, 0x21, 0xb0,
};
static const u8 dc_empty[] = {		/* original size 0: nothing to decode */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const u8 *const dc_seeds[] = { dc_one_block, dc_two_blocks, dc_match, dc_empty };
static const u32 dc_sizes[] = {
	sizeof(dc_one_block), sizeof(dc_two_blocks), sizeof(dc_match), sizeof(dc_empty),
};

static const struct fuzz_target fuzz_decompress = {
	.name = "decompress",
	.help = "EFI_DECOMPRESS_PROTOCOL GetInfo then Decompress (DxeCore's UEFI decompressor); an output over 16 KiB or a scratch over 16 KiB is rejected",
	.init = decompress_init, .run = decompress_run, .reset = nothing_to_reset,
	.seeds = dc_seeds, .seed_sizes = dc_sizes, .nseeds = ARRAY_SIZE(dc_seeds),
};
FUZZ_TARGET(fuzz_decompress);

/* ---- devpath: EFI_DEVICE_PATH_FROM_TEXT_PROTOCOL (DevicePathDxe) ---- */

#define DEVPATH_MAX_TEXT	(64u << 10)

static EFI_DEVICE_PATH_FROM_TEXT_PROTOCOL *from_text;

static int devpath_init(void)
{
	return locate((EFI_GUID)EFI_DEVICE_PATH_FROM_TEXT_PROTOCOL_GUID, (void **)&from_text,
		      "EFI_DEVICE_PATH_FROM_TEXT_PROTOCOL");
}

/* The input as UTF-16 text (an odd last byte dropped), NUL-terminated, as a path and as a node. */
static int devpath_run(const u8 *data, size_t size)
{
	size_t n = size / 2;
	EFI_DEVICE_PATH *path, *node;
	CHAR16 *text;

	if (size > DEVPATH_MAX_TEXT)
		return 1;
	text = kmalloc((n + 1) * sizeof(CHAR16), GFP_KERNEL);
	if (!text)
		return 1;
	memcpy(text, data, n * sizeof(CHAR16));
	text[n] = 0;
	path = from_text->ConvertTextToDevicePath(text);
	node = from_text->ConvertTextToDeviceNode(text);
	kfree(text);
	if (path)
		fw.bs->FreePool(path);
	if (node)
		fw.bs->FreePool(node);
	return !path && !node;
}

static const CHAR16 dp_pci[] = L"PciRoot(0x0)/Pci(0x1,0x1)";
static const CHAR16 dp_sata[] = L"PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x0,0xFFFF,0x0)/HD(1,MBR,0xBE1AFDFA,0x3F,0xFBFC1)";
static const CHAR16 dp_net[] = L"MAC(525400123456,0x1)/IPv4(192.168.0.2,TCP,Static,192.168.0.1)";
static const u8 *const dp_seeds[] = { (const u8 *)dp_pci, (const u8 *)dp_sata, (const u8 *)dp_net };
/* the text without its NUL: the target adds one */
static const u32 dp_sizes[] = { sizeof(dp_pci) - 2, sizeof(dp_sata) - 2, sizeof(dp_net) - 2 };

static const struct fuzz_target fuzz_devpath = {
	.name = "devpath",
	.help = "EFI_DEVICE_PATH_FROM_TEXT_PROTOCOL ConvertTextToDevicePath and ConvertTextToDeviceNode (DevicePathDxe)",
	.init = devpath_init, .run = devpath_run, .reset = nothing_to_reset,
	.seeds = dp_seeds, .seed_sizes = dp_sizes, .nseeds = ARRAY_SIZE(dp_seeds),
};
FUZZ_TARGET(fuzz_devpath);

/* ---- peimage: LoadImage from a memory buffer (DxeCore's PE/COFF loader) ---- */

static EFI_HANDLE pe_loaded;

static int peimage_init(void)
{
	return 0;	/* boot services are all it needs */
}

static int peimage_run(const u8 *data, size_t size)
{
	EFI_HANDLE h = NULL;
	EFI_STATUS s;

	/* the loader copies the source, it never writes it */
	s = fw_load_image_unhooked(FALSE, fw.image, NULL, (void *)data, size, &h);
	/* a security violation still loads the image (UEFI spec, LoadImage) */
	if ((s == EFI_SUCCESS || s == EFI_SECURITY_VIOLATION) && h)
		pe_loaded = h;
	return s != EFI_SUCCESS;
}

static int peimage_reset(void)
{
	EFI_STATUS s;

	if (!pe_loaded)
		return 0;
	s = fw.bs->UnloadImage(pe_loaded);
	pe_loaded = NULL;
	if (s != EFI_SUCCESS) {
		pr_err("fuzz target peimage: UnloadImage: EFI status 0x%llx\n", (unsigned long long)s);
		return -EIO;
	}
	return 0;
}

/* A minimal PE32+ image: headers, one 512-byte .text section, no relocations. */
struct min_pe {
	u16 dos_magic;			/* "MZ" */
	u8 dos_pad[58];
	u32 pe_offset;			/* e_lfanew */
	u32 pe_sig;			/* "PE\0\0" */
	/* COFF file header */
	u16 machine, nsections;
	u32 timestamp, symtab, nsyms;
	u16 opt_size, characteristics;
	/* optional header, PE32+ */
	u16 opt_magic;
	u8 linker_major, linker_minor;
	u32 code_size, init_size, uninit_size, entry, code_base;
	u64 image_base;
	u32 section_align, file_align;
	u16 os_major, os_minor, image_major, image_minor, sub_major, sub_minor;
	u32 win32_version, image_size, headers_size, checksum;
	u16 subsystem, dll_characteristics;
	u64 stack_reserve, stack_commit, heap_reserve, heap_commit;
	u32 loader_flags, ndirs;
	u32 dirs[16][2];
	/* the section table */
	char sec_name[8];
	u32 sec_vsize, sec_va, sec_raw_size, sec_raw_ptr, sec_relocs, sec_lines;
	u16 sec_nrelocs, sec_nlines;
	u32 sec_flags;
	u8 pad[0x90];
	u8 text[0x200];			/* at 0x200, the file alignment */
} __packed;
_Static_assert(sizeof(struct min_pe) == 0x400, "the minimal PE's layout");

#define MIN_PE(subsystem_) {							\
	.dos_magic = 0x5a4d, .pe_offset = 0x40, .pe_sig = 0x4550,		\
	.machine = 0x8664, .nsections = 1,					\
	.opt_size = 240, .characteristics = 0x0022, /* executable, large address aware */ \
	.opt_magic = 0x20b, .code_size = 0x200, .entry = 0x1000, .code_base = 0x1000, \
	.section_align = 0x1000, .file_align = 0x200, .image_size = 0x2000,	\
	.headers_size = 0x200, .subsystem = (subsystem_), .ndirs = 16,		\
	.sec_name = ".text", .sec_vsize = 0x10, .sec_va = 0x1000,		\
	.sec_raw_size = 0x200, .sec_raw_ptr = 0x200,				\
	.sec_flags = 0x60000020, /* code, execute, read */			\
	.text = { 0x31, 0xc0, 0xc3 },	/* xor eax, eax; ret */			\
}

static const struct min_pe pe_app = MIN_PE(10);		/* an EFI application */
static const struct min_pe pe_driver = MIN_PE(11);	/* a boot services driver */
static const u8 *const pe_seeds[] = { (const u8 *)&pe_app, (const u8 *)&pe_driver };
static const u32 pe_sizes[] = { sizeof(pe_app), sizeof(pe_driver) };

static const struct fuzz_target fuzz_peimage = {
	.name = "peimage",
	.help = "LoadImage from a memory buffer (DxeCore's PE/COFF loader), UnloadImage after",
	.init = peimage_init, .run = peimage_run, .reset = peimage_reset,
	.seeds = pe_seeds, .seed_sizes = pe_sizes, .nseeds = ARRAY_SIZE(pe_seeds),
};
FUZZ_TARGET(fuzz_peimage);

/* ---- hii: EFI_HII_DATABASE_PROTOCOL (HiiDatabaseDxe, UEFI spec 34.8) ---- */

struct efi_hii_database_protocol {
	EFI_STATUS (EFIAPI *NewPackageList)(struct efi_hii_database_protocol *self,
					    const void *list, EFI_HANDLE driver, void **handle);
	EFI_STATUS (EFIAPI *RemovePackageList)(struct efi_hii_database_protocol *self, void *handle);
	/* the rest of the protocol is not called */
};

struct hii_list_header {		/* EFI_HII_PACKAGE_LIST_HEADER */
	EFI_GUID guid;
	u32 length;			/* the whole list, this header included */
} __packed;

#define HII_MAX_LIST		(1u << 20)

static struct efi_hii_database_protocol *hii;
static void *hii_added;

static int hii_init(void)
{
	EFI_GUID g = { 0xef9fc172, 0xa1b2, 0x4693, { 0xb3, 0x27, 0x6d, 0x32, 0xfc, 0x41, 0x60, 0x42 } };

	return locate(g, (void **)&hii, "EFI_HII_DATABASE_PROTOCOL");
}

/*
 * Whether the packages of @data tile it and end with the end package.
 * HiiDatabaseDxe trusts this framing (its AddPackages walks each header's
 * length with no bound): a package running past the list made it read past
 * the buffer and hang, at the campaign's second mutant. The target checks it
 * as a careful caller must, and fuzzes what is inside the packages.
 */
static bool hii_framed(const u8 *data, size_t size)
{
	size_t off = sizeof(struct hii_list_header);

	while (off + 4 <= size) {
		u32 head, len;

		memcpy(&head, data + off, 4);	/* EFI_HII_PACKAGE_HEADER: length 24 bits, type 8 */
		len = head & 0xffffff;

		if (len < 4 || len > size - off)
			return false;
		if (head >> 24 == 0xdf)		/* EFI_HII_PACKAGE_END */
			return off + len == size;
		off += len;
	}
	return false;
}

/* The input as a package list, its length field made the input's size. */
static int hii_run(const u8 *data, size_t size)
{
	struct hii_list_header *list;
	void *handle = NULL;
	EFI_STATUS s;

	if (size < sizeof(*list) || size > HII_MAX_LIST || !hii_framed(data, size))
		return 1;
	list = kmalloc(size, GFP_KERNEL);
	if (!list)
		return 1;
	memcpy(list, data, size);
	list->length = (u32)size;
	s = hii->NewPackageList(hii, list, NULL, &handle);
	kfree(list);		/* the database keeps its own copy */
	if (s != EFI_SUCCESS)
		return 1;
	hii_added = handle;
	return 0;
}

static int hii_reset(void)
{
	EFI_STATUS s;

	if (!hii_added)
		return 0;
	s = hii->RemovePackageList(hii, hii_added);
	hii_added = NULL;
	if (s != EFI_SUCCESS) {
		pr_err("fuzz target hii: RemovePackageList: EFI status 0x%llx\n", (unsigned long long)s);
		return -EIO;
	}
	return 0;
}

#define TOPAZ_HII_GUID { 0x746f7061, 0x7a00, 0x4869, { 0x69, 0x66, 0x75, 0x7a, 0x7a, 0x00, 0x00, 0x01 } }
#define HII_PKG(len_, type_)	((u32)(len_) | (u32)(type_) << 24)	/* EFI_HII_PACKAGE_HEADER */
#define HII_END			HII_PKG(4, 0xdf)

/* A string package: "en-US", string 1 its language's name, string 2 "topaz". */
struct hii_strings_list {
	struct hii_list_header head;
	u32 pkg;			/* length and type (0x04, strings) */
	u32 hdr_size, string_info_offset;
	u16 language_window[16];
	u16 language_name;		/* string id of the language's name */
	char language[6];		/* "en-US" */
	u8 sibt1;			/* EFI_HII_SIBT_STRING_UCS2 */
	u16 s1[8];
	u8 sibt2;
	u16 s2[6];
	u8 sibt_end;			/* EFI_HII_SIBT_END */
	u32 end;			/* the end package */
} __packed;

#define HII_STRINGS_HDR	(4 + 4 + 4 + 32 + 2 + 6)
static const struct hii_strings_list hii_strings = {
	.head = { .guid = TOPAZ_HII_GUID, .length = sizeof(struct hii_strings_list) },
	.pkg = HII_PKG(sizeof(struct hii_strings_list) - sizeof(struct hii_list_header) - 4, 0x04),
	.hdr_size = HII_STRINGS_HDR, .string_info_offset = HII_STRINGS_HDR,
	.language_name = 1, .language = "en-US",
	.sibt1 = 0x14, .s1 = u"English", .sibt2 = 0x14, .s2 = u"topaz", .sibt_end = 0x00,
	.end = HII_END,
};

/* A GUID package (type 0x01): a vendor's GUID and 4 bytes of its data. */
struct hii_guid_list {
	struct hii_list_header head;
	u32 pkg;
	EFI_GUID guid;
	u8 data[4];
	u32 end;
} __packed;

static const struct hii_guid_list hii_guid = {
	.head = { .guid = TOPAZ_HII_GUID, .length = sizeof(struct hii_guid_list) },
	.pkg = HII_PKG(4 + sizeof(EFI_GUID) + 4, 0x01),
	.guid = TOPAZ_HII_GUID, .data = { 't', 'p', 'z', 0 },
	.end = HII_END,
};

static const struct { struct hii_list_header head; u32 end; } __packed hii_empty = {
	.head = { .guid = TOPAZ_HII_GUID, .length = sizeof(hii_empty) }, .end = HII_END,
};

static const u8 *const hii_seeds[] = {
	(const u8 *)&hii_strings, (const u8 *)&hii_guid, (const u8 *)&hii_empty,
};
static const u32 hii_sizes[] = { sizeof(hii_strings), sizeof(hii_guid), sizeof(hii_empty) };

static const struct fuzz_target fuzz_hii = {
	.name = "hii",
	.help = "EFI_HII_DATABASE_PROTOCOL NewPackageList then RemovePackageList (HiiDatabaseDxe); a list whose packages do not tile it up to the end package is rejected",
	.init = hii_init, .run = hii_run, .reset = hii_reset,
	.seeds = hii_seeds, .seed_sizes = hii_sizes, .nseeds = ARRAY_SIZE(hii_seeds),
};
FUZZ_TARGET(fuzz_hii);

/* ---- the firmware's memory use, for the leak check ---- */

/*
 * Pool the firmware's drivers take through the boot services table while
 * tracking is on (DevicePathDxe, HiiDatabaseDxe: their MemoryAllocationLib
 * calls gBS), each pointer kept until FreePool: what a run left allocated.
 */
#define POOL_TRACK_MAX	1024

static struct {
	EFI_ALLOCATE_POOL alloc;
	EFI_FREE_POOL free;
	void *live[POOL_TRACK_MAX];
	u32 nlive, overflow;
} pool_track;

static EFI_STATUS EFIAPI track_allocate_pool(EFI_MEMORY_TYPE type, UINTN size, void **p)
{
	EFI_STATUS s = pool_track.alloc(type, size, p);

	if (s == EFI_SUCCESS) {
		if (pool_track.nlive < POOL_TRACK_MAX)
			pool_track.live[pool_track.nlive++] = *p;
		else
			pool_track.overflow++;
	}
	return s;
}

static EFI_STATUS EFIAPI track_free_pool(void *p)
{
	for (u32 i = 0; i < pool_track.nlive; i++)
		if (pool_track.live[i] == p) {
			pool_track.live[i] = pool_track.live[--pool_track.nlive];
			break;
		}
	return pool_track.free(p);
}

void fw_pool_track(bool on)
{
	if (on && !pool_track.alloc) {
		pool_track.alloc = fw.bs->AllocatePool;
		pool_track.free = fw.bs->FreePool;
		pool_track.nlive = pool_track.overflow = 0;
		fw.bs->AllocatePool = track_allocate_pool;
		fw.bs->FreePool = track_free_pool;
	} else if (!on && pool_track.alloc) {
		fw.bs->AllocatePool = pool_track.alloc;
		fw.bs->FreePool = pool_track.free;
		pool_track.alloc = NULL;
	}
	fw_bs_crc();
}

int fw_mem_usage(struct fw_mem_usage *u)
{
	UINTN size = 64 << 10, key, desc_size;
	UINT32 version;
	u8 *map = kmalloc(size, GFP_KERNEL);
	EFI_STATUS s;

	if (!map)
		return -ENOMEM;
	s = fw.bs->GetMemoryMap(&size, (EFI_MEMORY_DESCRIPTOR *)map, &key, &desc_size, &version);
	if (s != EFI_SUCCESS) {
		kfree(map);
		pr_err("fuzz: GetMemoryMap: EFI status 0x%llx\n", (unsigned long long)s);
		return -EIO;
	}
	u->free_pages = 0;
	for (UINTN off = 0; off + desc_size <= size; off += desc_size) {
		const EFI_MEMORY_DESCRIPTOR *d = (const EFI_MEMORY_DESCRIPTOR *)(map + off);

		if (d->Type == EfiConventionalMemory)
			u->free_pages += d->NumberOfPages;
	}
	kfree(map);
	u->pool_live = pool_track.nlive + pool_track.overflow;
	return 0;
}

/* What the fuzzer's own firmware calls (its files) took since the last fw_mem_own_take(). */
static struct {
	long long pool, pages;
} own;

int fw_mem_own_begin(struct fw_mem_usage *u)
{
	return fw_mem_usage(u);
}

void fw_mem_own_end(const struct fw_mem_usage *before, int began)
{
	struct fw_mem_usage after;

	if (began || fw_mem_usage(&after))
		return;
	own.pool += (long long)after.pool_live - (long long)before->pool_live;
	own.pages += (long long)before->free_pages - (long long)after.free_pages;
}

void fw_mem_own_take(long long *pool, long long *pages)
{
	*pool = own.pool;
	*pages = own.pages;
	own.pool = own.pages = 0;
}

/* ---- fw.run=fuzzseeds: every target's seeds, run and reset, leak-checked ---- */

static const struct fuzz_target *const builtin_targets[] = {
	&fuzz_decompress, &fuzz_devpath, &fuzz_peimage, &fuzz_hii,
};

#define SEED_ROUNDS	16

/* Every seed once (round 0 warms the firmware's caches up), then SEED_ROUNDS more, compared. */
static int seeds_rounds(const struct fuzz_target *t, unsigned int rounds, u32 *ran, u32 *rejected)
{
	for (unsigned int r = 0; r < rounds; r++)
		for (u32 i = 0; i < t->nseeds; i++) {
			int ret = t->run(t->seeds[i], t->seed_sizes[i]);
			int err = t->reset();

			if (err) {
				pr_err("fuzz target %s: reset after seed %u failed (error %d)\n",
				       t->name, i, err);
				return err;
			}
			if (ret)
				++*rejected;
			else
				++*ran;
		}
	return 0;
}

/* What @after holds more than @before: pool allocations, and pages taken. */
static void mem_delta(const struct fw_mem_usage *before, const struct fw_mem_usage *after,
		      long long *dpool, long long *dpages)
{
	*dpool = (long long)after->pool_live - (long long)before->pool_live;
	*dpages = (long long)before->free_pages - (long long)after->free_pages;
}

/* One target: init, its seeds, the memory compared; 0 when it all held. */
static int seeds_check(const struct fuzz_target *t)
{
	struct fw_mem_usage before, after;
	u32 ran = 0, rejected = 0;
	int err = t->init();

	if (!err) {
		fw_pool_track(true);
		err = seeds_rounds(t, 1, &ran, &rejected);
		if (!err)
			err = fw_mem_usage(&before);
		ran = rejected = 0;
		if (!err)
			err = seeds_rounds(t, SEED_ROUNDS, &ran, &rejected);
		if (!err)
			err = fw_mem_usage(&after);
		fw_pool_track(false);
	}
	if (err) {
		printk("result: fw.fuzzseeds %s: error %d\n", t->name, err);
		return 1;
	}
	long long dpool, dpages;
	bool ok;

	mem_delta(&before, &after, &dpool, &dpages);
	ok = !rejected && !dpool && !dpages;

	printk("result: fw.fuzzseeds %s: %u seeds x %u, ran %u, rejected %u, pool %+lld, pages %+lld: %s\n",
	       t->name, t->nseeds, SEED_ROUNDS, ran, rejected, dpool, dpages,
	       ok ? "ok" : rejected ? "FAILED (a seed was rejected)" : "FAILED (leak)");
	return !ok;
}

unsigned int fw_fuzz_seeds_failed;

u64 fw_fuzz_seeds(void)
{
	unsigned int failed = 0;

	for (unsigned int i = 0; i < ARRAY_SIZE(builtin_targets); i++)
		failed += seeds_check(builtin_targets[i]);
	printk("result: fw.fuzzseeds targets=%u failed=%u\n", (unsigned int)ARRAY_SIZE(builtin_targets),
	       failed);
	fw_fuzz_seeds_failed += failed;	/* the boot fails with them */
	return failed;
}

/* ---- fw.fuzz=NAME,NAME... or builtin: campaigns in a row, leak-checked ---- */

/* The firmware's memory @before and @after a campaign: 0 when nothing leaked, said either way. */
static int campaign_check(const struct fuzz_target *t, const struct fw_fuzz_outcome *o,
			  const struct fw_mem_usage *before, const struct fw_mem_usage *after)
{
	long long dpool, dpages;
	bool leak;

	long long opool, opages;

	mem_delta(before, after, &dpool, &dpages);
	/* the corpus files the campaign wrote to the volume: the FAT driver's, not the target's */
	fw_mem_own_take(&opool, &opages);
	dpool -= opool;
	dpages -= opages;
	/* a crash cut the last execution off inside the firmware: what it held is not undone */
	leak = (dpool || dpages) && !o->crashes;

	printk("result: fuzz check target=%s edges=%s pool=%+lld pages=%+lld leak=%s "
	       "(edges %u after the seeds, %u after %llu executions; the fuzzer's own files took "
	       "pool %+lld, pages %+lld, left out%s)\n", t->name,
	       o->edges > o->seed_edges ? "more" : "same", dpool, dpages,
	       o->crashes ? "unknown" : leak ? "yes" : "no",
	       o->seed_edges, o->edges, o->execs, opool, opages,
	       o->crashes ? "; the crash stopped an execution halfway, its memory not given back" : "");
	if (leak)
		pr_err("fw.fuzz=%s: the campaign leaked firmware memory: %lld pool allocations, %lld pages\n",
		       t->name, dpool, dpages);
	return leak;
}

/* One target by name: init, warm-up, the campaign between two memory readings. */
static int each_one(const char *name, size_t len, bool *stop,
		    int (*campaign)(const struct fuzz_target *t, struct fw_fuzz_outcome *o))
{
	struct fw_mem_usage before, after;
	struct fw_fuzz_outcome o = { 0 };
	const struct fuzz_target *t = NULL;
	u32 ran = 0, rejected = 0;
	char want[32];
	int err, failed;

	if (len < sizeof(want)) {
		memcpy(want, name, len);
		want[len] = 0;
		t = fuzz_target_find(want);
	}
	if (!t) {
		pr_err("fw.fuzz=%.*s: no such target (fw.fuzz=list names them; builtin: all of them; image: the harness fw.image= runs)\n",
		       (int)len, name);
		fuzz_target_list();
		return 1;
	}
	err = t->init ? t->init() : 0;
	if (err) {
		pr_err("fw.fuzz=%s: the target is not available here (%d)\n", t->name, err);
		return 1;
	}
	/* the seeds once: what the firmware allocates for good on a first call is not a leak */
	fw_pool_track(true);
	err = seeds_rounds(t, 1, &ran, &rejected);
	if (!err)
		err = fw_mem_usage(&before);
	fw_mem_own_take(&(long long){ 0 }, &(long long){ 0 });
	failed = err ? 1 : campaign(t, &o);
	if (!err)
		err = fw_mem_usage(&after);
	fw_pool_track(false);
	if (err) {
		pr_err("fw.fuzz=%s: the memory check failed (error %d)\n", t->name, err);
		return 1;
	}
	failed += campaign_check(t, &o, &before, &after);
	if (o.crashes) {
		*stop = true;	/* the firmware's state is unknown after a crash */
		failed++;
	}
	return failed;
}

int fw_fuzz_each(const char *spec,
		 int (*campaign)(const struct fuzz_target *t, struct fw_fuzz_outcome *o))
{
	bool stop = false;
	int failed = 0;

	if (!strcmp(spec, "builtin")) {
		for (unsigned int i = 0; i < ARRAY_SIZE(builtin_targets) && !stop; i++)
			failed += each_one(builtin_targets[i]->name, strlen(builtin_targets[i]->name),
					   &stop, campaign);
		return failed;
	}
	while (*spec && !stop) {
		const char *comma = strchr(spec, ',');
		size_t len = comma ? (size_t)(comma - spec) : strlen(spec);

		failed += each_one(spec, len, &stop, campaign);
		spec += len + (comma ? 1 : 0);
	}
	if (stop && *spec)
		pr_err("fw.fuzz=: a crash stopped the list: '%s' not run\n", spec);
	return failed;
}
