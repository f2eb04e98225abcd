// SPDX-License-Identifier: MIT
/*
 * The firmware's loaded images as modules: base, size and a name, from the
 * PE debug directory's CodeView path (".../OUTPUT/Fat.dll" is "Fat"), else
 * the image's file path, else its address. The trace engine marks the
 * modules traced code ran in (trace_module_find()); at the end each of those
 * goes to the sideband whole, under its name, for ptdecode to decode and to
 * name addresses Module+offset.
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include <topaz/tracing.h>
#include <topaz/kernel.h>
#include <topaz/cmdline.h>
#include <topaz/mm.h>
#include <topaz/arch.h>
#include <topaz/cpu.h>
#include <topaz/symbols.h>
#include <topaz/errno.h>

#define MAX_MODULES	512

/* Invariant: mods[0..nr_mods) sorted by base, not overlapping. */
struct fw_module {
	u64 base, size;
	bool used;		/* traced code ran in it */
	const void *copy;	/* its bytes when loaded (an image unloaded at its exit) */
	const char *syms;	/* its symbol file's text (fw_modules_set_symbols()), or NULL */
	size_t syms_len;
	char name[32];		/* the sideband's name field holds 32 */
};
static struct fw_module mods[MAX_MODULES];
static unsigned int nr_mods;

static bool list_modules;
KPARAM_BOOL("fw.modules", fw_modules, &list_modules,
	    "firmware phase: print every loaded image (module) with its address range");

static u16 rd16(const u8 *p) { return (u16)(p[0] | p[1] << 8); }
static u32 rd32(const u8 *p) { return rd16(p) | (u32)rd16(p + 2) << 16; }

/* The file name of @path without folders and extension, into @out. */
static void base_name(char *out, size_t cap, const char *path, size_t len)
{
	size_t start = 0, end = len, n;

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/' || path[i] == '\\')
			start = i + 1;
	for (size_t i = len; i > start; i--)
		if (path[i - 1] == '.') {
			end = i - 1;
			break;
		}
	n = min(end - start, cap - 1);
	memcpy(out, path + start, n);
	out[n] = '\0';
}

/*
 * The CodeView path of a PE32+ image in memory (RSDS or NB10 record), into
 * @out; false when there is none. Every offset is checked against @size.
 */
static bool codeview_name(const u8 *img, u64 size, char *out, size_t cap)
{
	u32 pe, dir_rva, dir_size, n_dirs, opt;

	if (size < 0x40 || rd16(img) != 0x5a4d)	/* "MZ" */
		return false;
	pe = rd32(img + 0x3c);
	if (pe > size - 24 - 112 || rd32(img + pe) != 0x00004550)	/* "PE\0\0" */
		return false;
	opt = pe + 24;
	if (rd16(img + opt) != 0x20b)	/* PE32+ */
		return false;
	n_dirs = rd32(img + opt + 108);
	if (n_dirs <= 6 || opt + 112 + 7 * 8 > size)
		return false;
	dir_rva = rd32(img + opt + 112 + 6 * 8);	/* the debug directory */
	dir_size = rd32(img + opt + 112 + 6 * 8 + 4);
	for (u32 off = 0; off + 28 <= dir_size; off += 28) {
		const u8 *d = img + dir_rva + off;
		u32 type, data_size, data_rva, skip;
		const char *path;
		size_t len = 0;

		if ((u64)dir_rva + off + 28 > size)
			return false;
		type = rd32(d + 12);
		data_size = rd32(d + 16);
		data_rva = rd32(d + 20);
		if (type != 2 || data_size < 8 || (u64)data_rva + data_size > size)
			continue;	/* not CodeView */
		if (rd32(img + data_rva) == 0x53445352)		/* "RSDS" */
			skip = 24;
		else if (rd32(img + data_rva) == 0x3031424e)	/* "NB10" */
			skip = 16;
		else
			continue;
		if (data_size <= skip)
			continue;
		path = (const char *)img + data_rva + skip;
		while (len < data_size - skip && path[len])
			len++;
		if (!len)
			continue;
		base_name(out, cap, path, len);
		return out[0] != '\0';
	}
	return false;
}

/* The last file-path node of a device path, as ASCII, into @out. */
static bool file_path_name(const EFI_DEVICE_PATH *dp, char *out, size_t cap)
{
	char path[128];
	size_t n = 0;
	bool found = false;

	for (unsigned int guard = 0; dp && guard < 64; guard++) {
		u16 len = rd16(dp->Length);

		if (dp->Type == 0x7f || len < 4)
			break;
		if (dp->Type == 4 && dp->SubType == 4) {	/* media: file path */
			const CHAR16 *s = (const CHAR16 *)((const u8 *)dp + 4);

			n = 0;
			for (size_t i = 0; i < (len - 4u) / 2 && s[i] && n + 1 < sizeof(path); i++)
				path[n++] = s[i] < 0x80 ? (char)s[i] : '?';
			found = n != 0;
		}
		dp = (const EFI_DEVICE_PATH *)((const u8 *)dp + len);
	}
	if (!found)
		return false;
	base_name(out, cap, path, n);
	return out[0] != '\0';
}

/* EFI_FIRMWARE_VOLUME2_PROTOCOL (PI specification, volume 3): ReadSection is used. */
struct efi_fv2 {
	void *get_volume_attributes, *set_volume_attributes, *read_file;
	EFI_STATUS (EFIAPI *read_section)(struct efi_fv2 *self, const EFI_GUID *name,
					  UINT8 section_type, UINTN instance, void **buffer,
					  UINTN *size, UINT32 *auth);
};
static EFI_GUID fv2_guid = { 0x220e73b6, 0x6bdb, 0x4413,
			     { 0x84, 0x05, 0xb9, 0x74, 0xb1, 0x08, 0x61, 0x9a } };
#define SECTION_USER_INTERFACE	0x15

/*
 * An image loaded from a firmware volume has a file path of one node, the
 * FFS file's GUID (media type 4, subtype 6); the file's user-interface
 * section holds the module's name as the build gave it ("Fat", "DxeCore").
 */
static bool fv_ui_name(EFI_LOADED_IMAGE *li, char *out, size_t cap)
{
	const EFI_DEVICE_PATH *dp = li->FilePath;
	struct efi_fv2 *fv;
	CHAR16 *ui = NULL;
	UINTN size = 0, n = 0;
	UINT32 auth;

	if (!dp || dp->Type != 4 || dp->SubType != 6 || rd16(dp->Length) < 4 + sizeof(EFI_GUID) ||
	    fw.bs->HandleProtocol(li->DeviceHandle, &fv2_guid, (void **)&fv) != EFI_SUCCESS)
		return false;
	if (fv->read_section(fv, (const EFI_GUID *)((const u8 *)dp + 4), SECTION_USER_INTERFACE, 0,
			     (void **)&ui, &size, &auth) != EFI_SUCCESS || !ui)
		return false;
	for (UINTN i = 0; i < size / 2 && ui[i] && n + 1 < cap; i++)
		out[n++] = ui[i] < 0x80 ? (char)ui[i] : '?';
	out[n] = '\0';
	fw.bs->FreePool(ui);
	return n != 0;
}

/* The FFS file GUID of an image from a firmware volume, as text. */
static bool fv_guid_name(const EFI_DEVICE_PATH *dp, char *out, size_t cap)
{
	const u8 *g;

	if (!dp || dp->Type != 4 || dp->SubType != 6 || rd16(dp->Length) < 4 + sizeof(EFI_GUID))
		return false;
	g = (const u8 *)dp + 4;
	ksnprintf(out, cap, "%08x-%04x-%04x-%02x%02x", rd32(g), rd16(g + 4), rd16(g + 6), g[8], g[9]);
	return true;
}

static struct fw_module *insert(u64 base, u64 size, const char *name)
{
	unsigned int i = 0;

	if (nr_mods == MAX_MODULES) {
		pr_warn("more than %u loaded images: %s at %#llx is left unnamed\n", MAX_MODULES,
			name, base);
		return NULL;
	}
	while (i < nr_mods && mods[i].base < base)
		i++;
	if ((i < nr_mods && mods[i].base < base + size) ||
	    (i && mods[i - 1].base + mods[i - 1].size > base))
		return NULL;	/* listed already (or overlapping: the first one keeps it) */
	memmove(&mods[i + 1], &mods[i], (nr_mods - i) * sizeof(mods[0]));
	mods[i] = (struct fw_module){ .base = base, .size = size };
	strscpy(mods[i].name, name, sizeof(mods[i].name));
	nr_mods++;
	/* a second image of one name (loaded twice) is NAME#2: a name is one module */
	for (unsigned int k = 2, j = 0; j < nr_mods; j++) {
		if (j == i || strcmp(mods[j].name, mods[i].name))
			continue;
		ksnprintf(mods[i].name, sizeof(mods[i].name), "%.26s#%u", name, k++);
		j = (unsigned int)-1;	/* and check the new name too */
	}
	return &mods[i];
}

static struct fw_module *add_module(EFI_LOADED_IMAGE *li, const char *fallback_name)
{
	u64 base = (uintptr_t)li->ImageBase, size = li->ImageSize;
	char name[32];

	if (!base || !size || (base < fw.self_base + fw.self_size && fw.self_base < base + size))
		return NULL;	/* topaz itself is the container's kernel image */
	if (!codeview_name(li->ImageBase, size, name, sizeof(name)) &&
	    !fv_ui_name(li, name, sizeof(name)) &&
	    !file_path_name(li->FilePath, name, sizeof(name)) &&
	    !fv_guid_name(li->FilePath, name, sizeof(name))) {
		if (fallback_name)
			strscpy(name, fallback_name, sizeof(name));
		else
			ksnprintf(name, sizeof(name), "image@%llx", base);
	}
	return insert(base, size, name);
}

void fw_modules_add(EFI_LOADED_IMAGE *li, const char *fallback_name)
{
	add_module(li, fallback_name);
}

static struct fw_module *module_of(u64 ip);

void fw_modules_add_copy(EFI_LOADED_IMAGE *li, const char *fallback_name)
{
	struct fw_module *m = add_module(li, fallback_name);
	u64 base = (uintptr_t)li->ImageBase;
	void *copy;

	if (!m) {
		const struct fw_module *old = module_of(base) ?: module_of(base + li->ImageSize - 1);

		/*
		 * Listed already (fw.image='s own, added by the hook then by
		 * fw_image_load()), or an image unloaded since whose place
		 * another took: the container has one image an address, so
		 * say so when the bytes there are no longer the ones it keeps.
		 */
		if (old && old->copy && (old->base != base || old->size != li->ImageSize ||
					 memcmp(old->copy, li->ImageBase, old->size)))
			pr_warn("an image loaded at %#llx, %llu KiB, where %s was: the container keeps %s there, so trace of the new code there does not decode\n",
				base, (unsigned long long)(li->ImageSize >> 10),
				old->name, old->name);
		return;
	}
	copy = (void *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, get_order(m->size));
	if (!copy) {
		pr_warn("no memory to keep a copy of %s (%llu KiB): the sideband reads it at the end, if it is still there\n",
			m->name, m->size >> 10);
		return;
	}
	memcpy(copy, (const void *)(uintptr_t)m->base, m->size);
	m->copy = copy;
	pr_info("module %s loaded at %#llx, %llu KiB: named and copied for the sideband\n", m->name,
		m->base, m->size >> 10);
}

unsigned int fw_modules_scan(void)
{
	static unsigned int listed;
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_HANDLE *handles = NULL;
	UINTN n = 0;

	if (fw.bs->LocateHandleBuffer(ByProtocol, &li_guid, NULL, &n, &handles) != EFI_SUCCESS) {
		pr_err("LocateHandleBuffer(LoadedImage) failed: no module names in the trace\n");
		return 0;
	}
	for (UINTN i = 0; i < n; i++) {
		EFI_LOADED_IMAGE *li;

		if (fw.bs->HandleProtocol(handles[i], &li_guid, (void **)&li) == EFI_SUCCESS)
			fw_modules_add(li, NULL);
	}
	fw.bs->FreePool(handles);
	if (list_modules && !listed++)
		for (unsigned int i = 0; i < nr_mods; i++)
			printk("fw: module %-24s %#llx-%#llx\n", mods[i].name,
			       mods[i].base,
			       mods[i].base + mods[i].size);
	return nr_mods;
}

static struct fw_module *module_of(u64 ip)
{
	unsigned int lo = 0, hi = nr_mods;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (ip < mods[mid].base)
			hi = mid;
		else if (ip - mods[mid].base >= mods[mid].size)
			lo = mid + 1;
		else
			return &mods[mid];
	}
	return NULL;
}

const char *fw_module_format(u64 ip, char *buf, size_t n)
{
	const struct fw_module *m = module_of(ip);
	const char *sym = NULL;
	size_t nlen = 0;
	u64 symoff = 0;

	if (!m) {
		ksnprintf(buf, n, "%#llx", ip);
		return buf;
	}
	if (m->syms)
		sym = ksym_text_lookup(m->syms, m->syms_len, ip - m->base, &nlen, &symoff);
	if (sym)
		ksnprintf(buf, n, "%#llx, %s!%.*s+%#llx", ip, m->name, (int)nlen, sym, symoff);
	else
		ksnprintf(buf, n, "%#llx, %s+%#llx", ip, m->name, ip - m->base);
	return buf;
}

static bool find(u64 ip)
{
	struct fw_module *m = module_of(ip);

	if (!m)
		return false;
	WRITE_ONCE(m->used, true);
	return true;
}

static void write_sideband(trace_image_fn add, bool all)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nr_mods; i++) {
		if (!all && !READ_ONCE(mods[i].used))
			continue;
		add(mods[i].name, mods[i].base,
		    mods[i].copy ? mods[i].copy : (const void *)(uintptr_t)mods[i].base, mods[i].size);
		pr_info("sideband: %s at %#llx, %llu KiB\n", mods[i].name,
			mods[i].base, mods[i].size >> 10);
		n++;
	}
	pr_info("%u of %u firmware modules in the trace's sideband\n", n, nr_mods);
}

int fw_modules_set_symbols(u64 base, const char *text, size_t len, const char *src)
{
	struct fw_module *m = module_of(base);
	unsigned int n = 0, bad = ksym_text_check(text, len, &n);

	if (!m)
		return -ENOENT;
	if (bad) {
		pr_err("%s: line %u is not \"OFFSET SIZE NAME\" (hex): its symbols are not used\n",
		       src, bad);
		return -EINVAL;
	}
	m->syms = text;
	m->syms_len = len;
	pr_info("module %s: %u symbols from %s\n", m->name, n, src);
	return 0;
}

/* Module!symbol and Module+offset in pt.filter (ksym_resolve()). */
static int resolve(const char *module, const char *symbol, u64 *start, u64 *size, char *why,
		   size_t n)
{
	struct fw_module *m = NULL;
	u64 off = 0, sz = 0;
	bool found;

	for (unsigned int i = 0; i < nr_mods && !m; i++)
		if (!strcmp(mods[i].name, module))
			m = &mods[i];
	if (!m) {
		ksnprintf(why, n, "no loaded image is called '%s' (fw.modules lists them)", module);
		return -ENOENT;
	}
	if (!symbol) {
		*start = m->base;
		*size = m->size;
		return 0;
	}
	if (!m->syms) {
		ksnprintf(why, n, "module %s has no symbol file (%s.sym beside its image: make run EFI=%s.efi writes one from %s.so or %s.debug)",
			  m->name, m->name, m->name, m->name, m->name);
		return -ENOENT;
	}
	found = ksym_text_find(m->syms, m->syms_len, symbol, &off, &sz);
	if (!found || off >= m->size) {
		ksnprintf(why, n, found ? "%s!%s lies past the image's end" :
			  "module %s has no symbol '%s' in its symbol file", m->name, symbol);
		return -ENOENT;
	}
	*start = m->base + off;
	*size = sz;
	return 0;
}

void fw_modules_resolver(bool on)
{
	ksym_set_module_resolver(on ? resolve : NULL);
}

const struct trace_modules fw_trace_modules = { .find = find, .write_sideband = write_sideband };

/*
 * fw.oracle: every byte of every module, and of topaz itself, written back
 * as it is. QEMU drops a translated block when a store overlaps its bytes (not
 * its whole page), so every word is stored. Interrupts are off (a handler
 * changing a module's data between the load and the store would lose it) and
 * so is CR0.WP (runtime drivers' code is read-only). Returns the bytes.
 */
static void write_back(u64 start, u64 size)
{
	u64 p = start, end = start + size;

	for (; p < end && (p & 7); p++)
		*(volatile u8 *)(uintptr_t)p = *(volatile const u8 *)(uintptr_t)p;
	for (; p + 8 <= end; p += 8)
		*(volatile u64 *)(uintptr_t)p = *(volatile const u64 *)(uintptr_t)p;
	for (; p < end; p++)
		*(volatile u8 *)(uintptr_t)p = *(volatile const u8 *)(uintptr_t)p;
}

u64 fw_modules_touch(void)
{
	unsigned long flags = local_irq_save();
	u64 cr0 = read_cr0(), n = fw.self_size;

	write_cr0(cr0 & ~X86_CR0_WP);
	write_back(fw.self_base, fw.self_size);
	for (unsigned int i = 0; i < nr_mods; i++) {
		write_back(mods[i].base, mods[i].size);
		n += mods[i].size;
	}
	write_cr0(cr0);
	local_irq_restore(flags);
	return n;
}
