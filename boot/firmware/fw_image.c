// SPDX-License-Identifier: MIT
/*
 * fw.image="\path\app.efi args": a user's EFI image from the boot volume,
 * checked (a PE/COFF image for x86-64), loaded with LoadImage, given its
 * load options, and run with StartImage in a traced window until StartImage
 * returns. Its code is copied at load time for the sideband (an application
 * is unloaded when it exits). If it calls ExitBootServices, the trace ends
 * there and is written before the call goes on; fw.timeout= ends one that
 * never returns.
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include "pe_check.h"
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define HEADER_BYTES	4096

void fw_ascii_to_ucs2(CHAR16 *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = (CHAR16)(unsigned char)src[i];
	dst[i] = 0;
}

/*
 * @wpath opened for reading on topaz's boot volume; EFI_NO_MEDIA when the
 * volume has no file system.
 */
EFI_STATUS fw_open_on_volume(const CHAR16 *wpath, EFI_FILE_HANDLE *file)
{
	EFI_FILE_HANDLE root;
	EFI_STATUS s;

	if (fw_volume_root(&root) != EFI_SUCCESS)
		return EFI_NO_MEDIA;
	s = root->Open(root, file, (CHAR16 *)wpath, EFI_FILE_MODE_READ, 0);
	root->Close(root);
	return s;
}

/*
 * The header of @path, read through the boot volume's file system; says what
 * is wrong (pe_check_header() judges the bytes).
 */
static int check_file(const char *path, const CHAR16 *wpath)
{
	EFI_GUID info_guid = EFI_FILE_INFO_ID;
	EFI_FILE_HANDLE file;
	static u8 hdr[HEADER_BYTES];
	/* EFI_FILE_INFO with room for a name as long as a path may be */
	static union { EFI_FILE_INFO info; u8 bytes[sizeof(EFI_FILE_INFO) + 2 * 256]; } fi;
	UINTN n = sizeof(hdr), fi_size = sizeof(fi);
	char why[160];
	EFI_STATUS s;

	s = fw_open_on_volume(wpath, &file);
	if (s == EFI_NO_MEDIA) {
		pr_err("fw.image=%s: topaz's boot volume has no file system to load it from\n", path);
		return -ENODEV;
	}
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: %s on the boot volume (EFI status %#lx)%s\n", path,
		       s == EFI_NOT_FOUND ? "no such file" : "cannot open it", (unsigned long)s,
		       s == EFI_NOT_FOUND ?
		       "; make run EFI=path/app.efi[,more] (or make image EFI=...) puts images in \\EFI\\tools" : "");
		return -ENOENT;
	}
	/* a directory reads as its entries: say what it is, not "no MZ header" */
	if (file->GetInfo(file, &info_guid, &fi_size, &fi) == EFI_SUCCESS &&
	    (fi.info.Attribute & EFI_FILE_DIRECTORY)) {
		file->Close(file);
		pr_err("fw.image=%s: a directory on the boot volume, not a file: give the image's path in it\n",
		       path);
		return -EINVAL;
	}
	s = file->Read(file, &n, hdr);
	file->Close(file);
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: cannot read it (EFI status %#lx)\n", path, (unsigned long)s);
		return -EIO;
	}
	if (pe_check_header(hdr, n, why, sizeof(why))) {
		pr_err("fw.image=%s: %s\n", path, why);
		return -ENOEXEC;
	}
	return 0;
}

/*
 * The symbol file beside the image (\EFI\tools\app.sym for app.efi, written
 * by the host from its ELF: scripts/esp-files.sh), for pt.filter's
 * Module!symbol. None is not an error; its text stays for the phase.
 */
static void load_symbols(const char *path, u64 base)
{
	EFI_GUID info_guid = EFI_FILE_INFO_ID;
	static union { EFI_FILE_INFO info; u8 bytes[sizeof(EFI_FILE_INFO) + 2 * 256]; } fi;
	static char spath[256];
	static CHAR16 wspath[256];
	UINTN fi_size = sizeof(fi), n;
	EFI_FILE_HANDLE file;
	size_t len = strlen(path), dot = len;
	char *text;
	EFI_STATUS s;

	for (size_t i = len; i-- > 0 && path[i] != '\\';)
		if (path[i] == '.') {
			dot = i;
			break;
		}
	if (dot + sizeof(".sym") > sizeof(spath))
		return;
	memcpy(spath, path, dot);
	memcpy(spath + dot, ".sym", sizeof(".sym"));
	fw_ascii_to_ucs2(wspath, spath, ARRAY_SIZE(wspath));
	if (fw_open_on_volume(wspath, &file) != EFI_SUCCESS)
		return;	/* no symbols: Module+offset still works */
	if (file->GetInfo(file, &info_guid, &fi_size, &fi) != EFI_SUCCESS ||
	    (fi.info.Attribute & EFI_FILE_DIRECTORY) || fi.info.FileSize > (16u << 20) ||
	    fw.bs->AllocatePool(EfiLoaderData, fi.info.FileSize + 1, (void **)&text) != EFI_SUCCESS) {
		pr_err("%s: not a file topaz can read (16 MiB at most): its symbols are not used\n", spath);
		file->Close(file);
		return;
	}
	n = fi.info.FileSize;
	s = file->Read(file, &n, text);
	file->Close(file);
	if (s != EFI_SUCCESS || n != fi.info.FileSize) {
		pr_err("%s: cannot read it (EFI status %#lx): its symbols are not used\n", spath,
		       (unsigned long)s);
		fw.bs->FreePool(text);
		return;
	}
	if (fw_modules_set_symbols(base, text, n, spath))
		fw.bs->FreePool(text);
}

/* The boot volume's device path with a file path node for @wpath appended. */
static EFI_DEVICE_PATH *file_device_path(const CHAR16 *wpath)
{
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL;
	EFI_DEVICE_PATH *dev, *p, *out;
	UINTN dev_len = 0, name_len = 0;
	u8 *q;

	if (fw.bs->HandleProtocol(fw.li->DeviceHandle, &dp_guid, (void **)&dev) != EFI_SUCCESS)
		return NULL;
	for (p = dev; p->Type != 0x7f; p = (EFI_DEVICE_PATH *)((u8 *)p + (p->Length[0] | p->Length[1] << 8)))
		dev_len += p->Length[0] | p->Length[1] << 8;
	while (wpath[name_len])
		name_len++;
	if (fw.bs->AllocatePool(EfiBootServicesData, dev_len + 4 + (name_len + 1) * 2 + 4,
				(void **)&out) != EFI_SUCCESS)
		return NULL;
	q = (u8 *)out;
	memcpy(q, dev, dev_len);
	q += dev_len;
	q[0] = 4;	/* media */
	q[1] = 4;	/* file path */
	q[2] = (u8)(4 + (name_len + 1) * 2);
	q[3] = (u8)((4 + (name_len + 1) * 2) >> 8);
	memcpy(q + 4, wpath, (name_len + 1) * 2);
	q += 4 + (name_len + 1) * 2;
	q[0] = 0x7f;	/* end of the whole path */
	q[1] = 0xff;
	q[2] = 4;
	q[3] = 0;
	return out;
}

/* EFI_FIRMWARE_VOLUME2_PROTOCOL (PI specification, volume 3): GetNextFile and ReadSection. */
struct efi_fv2 {
	void *get_volume_attributes, *set_volume_attributes, *read_file;
	EFI_STATUS (EFIAPI *read_section)(struct efi_fv2 *self, const EFI_GUID *name,
					  UINT8 section_type, UINTN instance, void **buffer,
					  UINTN *size, UINT32 *auth);
	void *write_file;
	EFI_STATUS (EFIAPI *get_next_file)(struct efi_fv2 *self, void *key, UINT8 *type,
					   EFI_GUID *name, UINT32 *attributes, UINTN *size);
	UINTN key_size;
};
static EFI_GUID fv2_guid = { 0x220e73b6, 0x6bdb, 0x4413,
			     { 0x84, 0x05, 0xb9, 0x74, 0xb1, 0x08, 0x61, 0x9a } };
#define FV_FILETYPE_APPLICATION	0x09
#define SECTION_USER_INTERFACE	0x15

/* Does the FFS file @guid of @fv have the user-interface name @want? */
static bool ui_name_is(struct efi_fv2 *fv, const EFI_GUID *guid, const char *want)
{
	CHAR16 *ui = NULL;
	UINTN size = 0, i;
	UINT32 auth;
	bool same;

	if (fv->read_section(fv, guid, SECTION_USER_INTERFACE, 0, (void **)&ui, &size, &auth) != EFI_SUCCESS || !ui)
		return false;
	for (i = 0; i < size / 2 && ui[i] && want[i] && ui[i] == (CHAR16)want[i]; i++)
		;
	same = !want[i] && (i == size / 2 || !ui[i]);
	fw.bs->FreePool(ui);
	return same;
}

/*
 * fw.image=fv:NAME: the application of that name in the firmware's volumes
 * (the UEFI Shell is "Shell" in OVMF): its device path, the volume's path
 * with the file's GUID appended.
 */
static EFI_DEVICE_PATH *fv_app_path(const char *want)
{
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL;
	EFI_HANDLE *handles = NULL;
	EFI_DEVICE_PATH *out = NULL;
	UINTN n = 0;

	if (fw.bs->LocateHandleBuffer(ByProtocol, &fv2_guid, NULL, &n, &handles) != EFI_SUCCESS)
		return NULL;
	for (UINTN h = 0; h < n && !out; h++) {
		struct efi_fv2 *fv;
		EFI_DEVICE_PATH *dev, *p;
		u8 key[64] = { 0 }, type = 0;
		EFI_GUID name;
		UINT32 attr;
		UINTN size, dev_len = 0;

		if (fw.bs->HandleProtocol(handles[h], &fv2_guid, (void **)&fv) != EFI_SUCCESS ||
		    fv->key_size > sizeof(key) ||
		    fw.bs->HandleProtocol(handles[h], &dp_guid, (void **)&dev) != EFI_SUCCESS)
			continue;
		for (;;) {
			type = FV_FILETYPE_APPLICATION;
			if (fv->get_next_file(fv, key, &type, &name, &attr, &size) != EFI_SUCCESS)
				break;
			if (ui_name_is(fv, &name, want))
				break;
		}
		if (type != FV_FILETYPE_APPLICATION || !ui_name_is(fv, &name, want))
			continue;
		for (p = dev; p->Type != 0x7f; p = (EFI_DEVICE_PATH *)((u8 *)p + (p->Length[0] | p->Length[1] << 8)))
			dev_len += p->Length[0] | p->Length[1] << 8;
		if (fw.bs->AllocatePool(EfiBootServicesData, dev_len + 20 + 4, (void **)&out) != EFI_SUCCESS)
			break;
		u8 *q = (u8 *)out;

		memcpy(q, dev, dev_len);
		q += dev_len;
		q[0] = 4;	/* media */
		q[1] = 6;	/* firmware file */
		q[2] = 20;
		q[3] = 0;
		memcpy(q + 4, &name, sizeof(name));
		q += 20;
		q[0] = 0x7f;
		q[1] = 0xff;
		q[2] = 4;
		q[3] = 0;
	}
	fw.bs->FreePool(handles);
	return out;
}

/*
 * fw_image_load() - check, load and prepare @spec ("path args"); the handle
 * goes to *@h. Returns 0, or -errno having said what is wrong.
 */
int fw_image_load(const char *spec, EFI_HANDLE *h)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	static char path[256];
	static CHAR16 wpath[256];
	EFI_LOADED_IMAGE *li;
	EFI_DEVICE_PATH *dp;
	CHAR16 *options;
	size_t plen = 0, olen = strlen(spec);
	const char *name = path;
	EFI_STATUS s;
	int err;

	while (spec[plen] && spec[plen] != ' ')
		plen++;
	if (!plen) {
		pr_err("fw.image=\"%s\": give a path on the boot volume, as \\EFI\\tools\\app.efi\n", spec);
		return -EINVAL;
	}
	if (plen >= sizeof(path)) {
		pr_err("fw.image=%.40s...: a path of %zu characters: the limit is %zu\n", spec, plen,
		       sizeof(path) - 1);
		return -EINVAL;
	}
	memcpy(path, spec, plen);
	path[plen] = '\0';
	for (size_t i = 0; i < plen; i++)	/* UEFI paths use backslashes */
		if (path[i] == '/' && strncmp(path, "fv:", 3))
			path[i] = '\\';
	if (!strncmp(path, "fv:", 3)) {
		dp = fv_app_path(path + 3);
		if (!dp) {
			pr_err("fw.image=%s: no application called '%s' in the firmware's volumes\n", path,
			       path + 3);
			return -ENOENT;
		}
	} else {
		fw_ascii_to_ucs2(wpath, path, ARRAY_SIZE(wpath));
		err = check_file(path, wpath);
		if (err)
			return err;
		dp = file_device_path(wpath);
		if (!dp) {
			pr_err("fw.image=%s: no device path for the boot volume\n", path);
			return -ENODEV;
		}
	}
	s = fw.bs->LoadImage(FALSE, fw.image, dp, NULL, 0, h);
	fw.bs->FreePool(dp);
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: LoadImage refused it: %s (EFI status %#lx)\n", path,
		       s == EFI_SECURITY_VIOLATION ? "a security policy (Secure Boot?)" :
		       s == EFI_UNSUPPORTED ? "an image type the firmware does not run" :
		       s == EFI_LOAD_ERROR ? "a malformed image" : "an error", (unsigned long)s);
		return -ENOEXEC;
	}
	if (fw.bs->HandleProtocol(*h, &li_guid, (void **)&li) != EFI_SUCCESS) {
		fw.bs->UnloadImage(*h);
		return -ENODEV;
	}
	/* the load options a shell would give: the program's name, then its arguments */
	if (fw.bs->AllocatePool(EfiLoaderData, (olen + 1) * 2, (void **)&options) == EFI_SUCCESS) {
		fw_ascii_to_ucs2(options, spec, olen + 1);
		li->LoadOptions = options;
		li->LoadOptionsSize = (UINT32)((olen + 1) * 2);
	}
	for (const char *p = path; *p; p++)
		if (*p == '\\')
			name = p + 1;
	fw_modules_add_copy(li, name);
	if (strncmp(path, "fv:", 3))
		load_symbols(path, (uintptr_t)li->ImageBase);
	pr_info("fw.image=%s: loaded at %#llx, %llu KiB, options \"%s\"\n", path,
		(unsigned long long)(uintptr_t)li->ImageBase, (unsigned long long)(li->ImageSize >> 10),
		spec);
	return 0;
}
