// SPDX-License-Identifier: MIT
/*
 * The built-in firmware workloads (fw.run=): each calls firmware services
 * through their protocols, so that the firmware's own drivers run (and are
 * traced). Each returns a checksum of what it saw, printed after it ran, so
 * a run can be compared with an untraced one.
 */
#define pr_fmt(fmt) "fw: " fmt
#include "internal.h"
#include <topaz/kernel.h>

static u64 mix(u64 h, u64 v)
{
	return (h ^ v) * 0x100000001b3ull;
}

/*
 * Every variable's name (GetNextVariableName) and its data (GetVariable),
 * then a volatile variable of topaz's own written, read back and deleted.
 */
static u64 fw_vars(void)
{
	static EFI_GUID topaz_guid = { 0x746f7061, 0x7a00, 0x4677, { 0x8f, 0x1e, 0x70, 0x68, 0x61, 0x73, 0x65, 0x31 } };
	static CHAR16 name[512];
	static u8 data[2048];
	EFI_GUID guid;
	UINTN size, dsize;
	UINT32 attr;
	u64 h = 0xcbf29ce484222325ull, count = 0, mine = 0x746f70617a;
	EFI_STATUS s;

	name[0] = 0;
	for (;;) {
		size = sizeof(name);
		s = fw.rt->GetNextVariableName(&size, name, &guid);
		if (s != EFI_SUCCESS)
			break;	/* EFI_NOT_FOUND: the last one */
		dsize = sizeof(data);
		s = fw.rt->GetVariable(name, &guid, &attr, &dsize, data);
		if (s == EFI_SUCCESS)
			for (UINTN i = 0; i < dsize; i++)
				h = mix(h, data[i]);
		h = mix(h, dsize);
		count++;
	}
	s = fw.rt->SetVariable(L"TopazFwPhase", &topaz_guid, EFI_VARIABLE_BOOTSERVICE_ACCESS,
			       sizeof(mine), &mine);
	if (s == EFI_SUCCESS) {
		u64 back = 0;

		dsize = sizeof(back);
		if (fw.rt->GetVariable(L"TopazFwPhase", &topaz_guid, &attr, &dsize, &back) == EFI_SUCCESS &&
		    back == mine)
			h = mix(h, back);
		fw.rt->SetVariable(L"TopazFwPhase", &topaz_guid, 0, 0, NULL);	/* delete */
	}
	return count << 32 | (h & 0xffffffffu);
}

/* A file's path from the last file-path node of @dp (topaz's own image). */
static bool own_path(const EFI_DEVICE_PATH *dp, CHAR16 *out, size_t cap)
{
	bool found = false;

	for (unsigned int guard = 0; dp && guard < 64; guard++) {
		u16 len = (u16)(dp->Length[0] | dp->Length[1] << 8);

		if (dp->Type == 0x7f || len < 4)
			break;
		if (dp->Type == 4 && dp->SubType == 4 && (len - 4u) / 2 < cap) {
			memcpy(out, (const u8 *)dp + 4, len - 4u);
			out[(len - 4u) / 2] = 0;
			found = true;
		}
		dp = (const EFI_DEVICE_PATH *)((const u8 *)dp + len);
	}
	return found;
}

/*
 * The boot volume through the Simple File System protocol (the FAT driver,
 * disk I/O, block I/O and the disk controller's driver below it): the root
 * folder listed, and the first 128 KiB of topaz's own image read.
 */
static u64 fw_file(void)
{
	EFI_GUID fs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_FILE_IO_INTERFACE *fs;
	EFI_FILE_HANDLE root, file;
	static u8 buf[16384];
	static CHAR16 path[256];
	u64 h = 0xcbf29ce484222325ull, total = 0, entries = 0;
	UINTN n;

	if (fw.bs->HandleProtocol(fw.li->DeviceHandle, &fs_guid, (void **)&fs) != EFI_SUCCESS ||
	    fs->OpenVolume(fs, &root) != EFI_SUCCESS)
		return 0;
	for (;;) {	/* the root folder: one EFI_FILE_INFO per Read */
		n = sizeof(buf);
		if (root->Read(root, &n, buf) != EFI_SUCCESS || !n)
			break;
		entries++;
		h = mix(h, n);
	}
	if (own_path(fw.li->FilePath, path, ARRAY_SIZE(path)) &&
	    root->Open(root, &file, path, EFI_FILE_MODE_READ, 0) == EFI_SUCCESS) {
		while (total < 128 * 1024) {
			n = sizeof(buf);
			if (file->Read(file, &n, buf) != EFI_SUCCESS || !n)
				break;
			for (UINTN i = 0; i < n; i += 64)
				h = mix(h, buf[i]);
			total += n;
		}
		file->Close(file);
	}
	root->Close(root);
	return entries << 48 | total << 16 | (h & 0xffff);
}

/*
 * Every handle's protocols (ProtocolsPerHandle) and a HandleProtocol on each,
 * then LocateProtocol for protocols most firmware has (the protocol
 * database's other way in).
 */
static u64 fw_handles(void)
{
	static EFI_GUID wanted[] = {
		LOADED_IMAGE_PROTOCOL, DEVICE_PATH_PROTOCOL, SIMPLE_TEXT_OUTPUT_PROTOCOL,
		SIMPLE_FILE_SYSTEM_PROTOCOL, BLOCK_IO_PROTOCOL,
	};
	EFI_HANDLE *handles = NULL;
	UINTN n = 0;
	u64 protocols = 0, found = 0, located = 0;
	void *iface;

	for (unsigned int round = 0; round < 4; round++)
		for (unsigned int i = 0; i < ARRAY_SIZE(wanted); i++)
			located += fw.bs->LocateProtocol(&wanted[i], NULL, &iface) == EFI_SUCCESS;

	if (fw.bs->LocateHandleBuffer(AllHandles, NULL, NULL, &n, &handles) != EFI_SUCCESS)
		return 0;
	for (UINTN i = 0; i < n; i++) {
		EFI_GUID **guids = NULL;
		UINTN count = 0;

		if (fw.bs->ProtocolsPerHandle(handles[i], &guids, &count) != EFI_SUCCESS)
			continue;
		protocols += count;
		for (UINTN k = 0; k < count; k++)
			if (fw.bs->HandleProtocol(handles[i], guids[k], &iface) == EFI_SUCCESS)
				found++;
		fw.bs->FreePool(guids);
	}
	fw.bs->FreePool(handles);
	return (u64)n << 40 | protocols << 20 | found << 8 | located;
}

/* Pool and pages from the firmware's allocator, and back. */
static u64 fw_pool(void)
{
	void *p[64];
	u64 h = 0, pages = 0;

	for (unsigned int round = 0; round < 4; round++) {
		for (unsigned int i = 0; i < ARRAY_SIZE(p); i++) {
			UINTN size = 16u << (i % 9);

			if (fw.bs->AllocatePool(EfiBootServicesData, size, &p[i]) != EFI_SUCCESS)
				p[i] = NULL;
			else
				h += size;
		}
		for (unsigned int i = 0; i < ARRAY_SIZE(p); i++)
			if (p[i])
				fw.bs->FreePool(p[i]);
		for (unsigned int k = 1; k <= 8; k *= 2) {
			EFI_PHYSICAL_ADDRESS a;

			if (fw.bs->AllocatePages(AllocateAnyPages, EfiBootServicesData, k, &a) == EFI_SUCCESS) {
				pages += k;
				fw.bs->FreePages(a, k);
			}
		}
	}
	return h << 16 | pages;
}

/* ConnectController on every handle (not recursive): the drivers' Supported() checks. */
static u64 fw_connect(void)
{
	EFI_HANDLE *handles = NULL;
	UINTN n = 0;
	u64 ok = 0;

	if (fw.bs->LocateHandleBuffer(AllHandles, NULL, NULL, &n, &handles) != EFI_SUCCESS)
		return 0;
	for (UINTN i = 0; i < n; i++)
		if (fw.bs->ConnectController(handles[i], NULL, NULL, FALSE) == EFI_SUCCESS)
			ok++;
	fw.bs->FreePool(handles);
	return (u64)n << 32 | ok;
}

const struct workload fw_workloads[] = {
	{ "vars", fw_vars, "every UEFI variable (GetNextVariableName, GetVariable), one set and deleted", false },
	{ "file", fw_file, "the boot volume's root folder and 128K of a file (FAT, disk and block I/O, AHCI)", false },
	{ "handles", fw_handles, "every handle's protocols (ProtocolsPerHandle, HandleProtocol), LocateProtocol", false },
	{ "pool", fw_pool, "AllocatePool/FreePool and AllocatePages/FreePages", false },
	{ "connect", fw_connect, "ConnectController on every handle (the drivers' Supported checks)", false },
};
const unsigned int fw_nr_workloads = ARRAY_SIZE(fw_workloads);

/* Checks rather than workloads: named, never part of all. */
static const struct workload fw_checks[] = {
	{ "fuzzseeds", fw_fuzz_seeds, "the fuzz targets' seeds run and reset, the firmware's memory use compared (not in all)", false },
};

const struct workload *fw_workload_find(const char *name)
{
	for (unsigned int i = 0; i < fw_nr_workloads; i++)
		if (!strcmp(fw_workloads[i].name, name))
			return &fw_workloads[i];
	for (unsigned int i = 0; i < ARRAY_SIZE(fw_checks); i++)
		if (!strcmp(fw_checks[i].name, name))
			return &fw_checks[i];
	return NULL;
}

void fw_workload_list(void)
{
	printk("firmware workloads (fw.run=NAME[,NAME...], or all):\n");
	for (unsigned int i = 0; i < fw_nr_workloads; i++)
		printk("  %-10s %s\n", fw_workloads[i].name, fw_workloads[i].help);
	for (unsigned int i = 0; i < ARRAY_SIZE(fw_checks); i++)
		printk("  %-10s %s\n", fw_checks[i].name, fw_checks[i].help);
}
