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
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define HEADER_BYTES	4096

static void ascii_to_ucs2(CHAR16 *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = (CHAR16)(unsigned char)src[i];
	dst[i] = 0;
}

static const char *machine_name(u16 m)
{
	switch (m) {
	case 0x14c: return "i386";
	case 0x1c2: return "ARM Thumb";
	case 0x1c4: return "ARMv7";
	case 0xaa64: return "AArch64";
	case 0x5064: return "RISC-V 64";
	case 0xebc: return "EFI byte code";
	default: return "unknown";
	}
}

/* The header of @path, read through the boot volume's file system; says what is wrong. */
static int check_file(const char *path, const CHAR16 *wpath)
{
	EFI_GUID fs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_FILE_IO_INTERFACE *fs;
	EFI_FILE_HANDLE root, file;
	static u8 hdr[HEADER_BYTES];
	UINTN n = sizeof(hdr);
	u32 pe;
	u16 machine, magic, subsystem;
	EFI_STATUS s;

	if (fw.bs->HandleProtocol(fw.li->DeviceHandle, &fs_guid, (void **)&fs) != EFI_SUCCESS ||
	    fs->OpenVolume(fs, &root) != EFI_SUCCESS) {
		pr_err("fw.image=%s: topaz's boot volume has no file system to load it from\n", path);
		return -ENODEV;
	}
	s = root->Open(root, &file, (CHAR16 *)wpath, EFI_FILE_MODE_READ, 0);
	root->Close(root);
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: %s on the boot volume (EFI status %#lx)\n", path,
		       s == EFI_NOT_FOUND ? "no such file" : "cannot open it", (unsigned long)s);
		return -ENOENT;
	}
	s = file->Read(file, &n, hdr);
	file->Close(file);
	if (s != EFI_SUCCESS) {
		pr_err("fw.image=%s: cannot read it (EFI status %#lx)\n", path, (unsigned long)s);
		return -EIO;
	}
	if (n < 0x40 || hdr[0] != 'M' || hdr[1] != 'Z') {
		pr_err("fw.image=%s: not a PE/COFF EFI image (%llu bytes, no MZ header)\n", path,
		       (unsigned long long)n);
		return -ENOEXEC;
	}
	memcpy(&pe, hdr + 0x3c, 4);
	if (pe > n - 24 - 70 || memcmp(hdr + pe, "PE\0\0", 4)) {
		pr_err("fw.image=%s: not a PE/COFF EFI image (an MZ header without a PE header)\n", path);
		return -ENOEXEC;
	}
	memcpy(&machine, hdr + pe + 4, 2);
	memcpy(&magic, hdr + pe + 24, 2);
	memcpy(&subsystem, hdr + pe + 24 + 68, 2);
	if (machine != 0x8664) {
		pr_err("fw.image=%s: an image for %s (machine %#x), not x86-64 (0x8664)\n", path,
		       machine_name(machine), machine);
		return -ENOEXEC;
	}
	if (magic != 0x20b || subsystem < 10 || subsystem > 13) {
		pr_err("fw.image=%s: not an EFI image (optional header %#x, subsystem %u; EFI is 10-13)\n",
		       path, magic, subsystem);
		return -ENOEXEC;
	}
	return 0;
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
	if (!plen || plen >= sizeof(path)) {
		pr_err("fw.image=\"%s\": give a path on the boot volume, as \\EFI\\tools\\app.efi\n", spec);
		return -EINVAL;
	}
	memcpy(path, spec, plen);
	path[plen] = '\0';
	for (size_t i = 0; i < plen; i++)	/* UEFI paths use backslashes */
		if (path[i] == '/')
			path[i] = '\\';
	ascii_to_ucs2(wpath, path, ARRAY_SIZE(wpath));
	err = check_file(path, wpath);
	if (err)
		return err;
	dp = file_device_path(wpath);
	if (!dp) {
		pr_err("fw.image=%s: no device path for the boot volume\n", path);
		return -ENODEV;
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
		ascii_to_ucs2(options, spec, olen + 1);
		li->LoadOptions = options;
		li->LoadOptionsSize = (UINT32)((olen + 1) * 2);
	}
	for (const char *p = path; *p; p++)
		if (*p == '\\')
			name = p + 1;
	fw_modules_add_copy(li, name);
	pr_info("fw.image=%s: loaded at %#llx, %llu KiB, options \"%s\"\n", path,
		(unsigned long long)(uintptr_t)li->ImageBase, (unsigned long long)(li->ImageSize >> 10),
		spec);
	return 0;
}
