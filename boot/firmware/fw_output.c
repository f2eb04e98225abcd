// SPDX-License-Identifier: MIT
/*
 * pt.sink=file: the container, kept in memory while tracing (a PMI cannot do
 * file I/O), written at the end of the firmware phase to the boot volume
 * through the Simple File System protocol as \EFI\topaz\trace-NNNN.tpz, the
 * first number not taken: a user with a USB stick and no serial port gets
 * every run's trace.
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include <topaz/tracing.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define MAX_TRACE_FILES	10000

static void name_for(CHAR16 *out, char *ascii, unsigned int n)
{
	ksnprintf(ascii, 40, "\\EFI\\topaz\\trace-%04u.tpz", n);
	for (unsigned int i = 0; ; i++) {
		out[i] = (CHAR16)ascii[i];
		if (!ascii[i])
			break;
	}
}

EFI_STATUS fw_volume_root(EFI_FILE_HANDLE *root)
{
	EFI_GUID fs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_FILE_IO_INTERFACE *fs;

	if (fw.bs->HandleProtocol(fw.li->DeviceHandle, &fs_guid, (void **)&fs) != EFI_SUCCESS ||
	    fs->OpenVolume(fs, root) != EFI_SUCCESS)
		return EFI_NO_MEDIA;
	return EFI_SUCCESS;
}

EFI_STATUS fw_write_new_file(EFI_FILE_HANDLE dir, const CHAR16 *name, const void *data,
			     UINTN *size)
{
	EFI_FILE_HANDLE file;
	EFI_STATUS s;

	s = dir->Open(dir, &file, (CHAR16 *)name, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE |
		      EFI_FILE_MODE_CREATE, 0);
	if (s != EFI_SUCCESS) {
		*size = 0;
		return s;
	}
	s = file->Write(file, size, (void *)data);
	if (s == EFI_SUCCESS)
		s = file->Flush(file);
	file->Close(file);
	return s;
}

/* A folder under @root, made when it is missing. */
EFI_STATUS fw_open_dir(EFI_FILE_HANDLE root, CHAR16 *path, EFI_FILE_HANDLE *dir)
{
	EFI_STATUS s = root->Open(root, dir, path, EFI_FILE_MODE_READ, 0);

	if (s == EFI_NOT_FOUND)
		s = root->Open(root, dir, path, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE |
			       EFI_FILE_MODE_CREATE, EFI_FILE_DIRECTORY);
	return s;
}

/**
 * fw_write_trace_file() - the in-memory container to a new file on the boot
 * volume; 0, or -errno having said why (the trace is then only in memory)
 */
int fw_write_trace_file(void)
{
	EFI_FILE_HANDLE root, dir, file;
	u64 len, failed_at;
	const void *buf = pt_boot_container(&len, &failed_at);
	static CHAR16 wname[48];
	char name[40];
	unsigned int n;
	UINTN size;
	EFI_STATUS s;

	if (!buf || !len) {
		pr_err("pt.sink=file: no trace in memory to write\n");
		return -ENODATA;
	}
	if (fw_volume_root(&root) != EFI_SUCCESS) {
		pr_err("pt.sink=file: topaz's boot volume has no file system: the trace (%llu bytes) stays in memory at %p\n",
		       len, buf);
		return -ENODEV;
	}
	/* \EFI exists on a boot volume; \EFI\topaz may not */
	s = fw_open_dir(root, L"\\EFI", &dir);
	if (s == EFI_SUCCESS) {
		dir->Close(dir);
		s = fw_open_dir(root, L"\\EFI\\topaz", &dir);
	}
	if (s != EFI_SUCCESS) {
		pr_err("pt.sink=file: cannot make \\EFI\\topaz on the boot volume (EFI status %#lx): a read-only volume?\n",
		       (unsigned long)s);
		root->Close(root);
		return -EIO;
	}
	dir->Close(dir);
	for (n = 1; n < MAX_TRACE_FILES; n++) {
		name_for(wname, name, n);
		if (root->Open(root, &file, wname, EFI_FILE_MODE_READ, 0) != EFI_SUCCESS)
			break;
		file->Close(file);
	}
	if (n == MAX_TRACE_FILES) {
		pr_err("pt.sink=file: \\EFI\\topaz holds %u traces already: delete some\n", MAX_TRACE_FILES - 1);
		root->Close(root);
		return -ENOSPC;
	}
	size = len;
	s = fw_write_new_file(root, wname, buf, &size);
	root->Close(root);
	if (s != EFI_SUCCESS && !size) {
		pr_err("pt.sink=file: cannot create %s (EFI status %#lx)\n", name, (unsigned long)s);
		return -EIO;
	}
	if (s != EFI_SUCCESS || size != len) {
		pr_err("pt.sink=file: writing %s stopped after %llu of %llu bytes (EFI status %#lx): a full volume?\n",
		       name, (unsigned long long)size, len, (unsigned long)s);
		return -EIO;
	}
	pr_info("the trace (%llu bytes) is in %s on the boot volume%s\n", len, name,
		failed_at ? ", cut short where memory ran out" : "");
	printk("result: fw.file name=%s bytes=%llu\n", name, len);
	return 0;
}
