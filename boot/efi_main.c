// SPDX-License-Identifier: MIT
/*
 * The EFI entry: gather what the kernel needs from the firmware (command line,
 * memory map, ACPI RSDP, memory for stacks and page tables), leave boot
 * services, and hand off to kernel_main on the kernel's own stack.
 */
#include <efi.h>
#include "internal.h"
#include <topaz/bootinfo.h>
#include <topaz/kernel.h>
#include <topaz/arch.h>
#include <topaz/cpu.h>
#include <topaz/gdt.h>
#include <topaz/serial.h>
#include <topaz/cmdline.h>
#include <topaz/fw_phase.h>

extern const char ImageBase[] __hidden;

static struct boot_info bootinfo;

/*
 * kgdbwait (Linux's name): wait in efi_main for a debugger (make debug). gdb
 * reads the load address from the line printed, loads topaz.so there and
 * sets kgdb_connected (scripts/topaz-gdb.py). Not static: gdb finds it.
 */
static bool kgdbwait;
KPARAM_BOOL("kgdbwait", kgdbwait, &kgdbwait,
	    "wait for gdb at EFI entry (make debug; gdb -x scripts/topaz-gdb.py sets kgdb_connected)");
int kgdb_connected;

static void kgdb_wait(uintptr_t base)
{
	printk("topaz: loaded at %#lx: waiting for gdb (kgdbwait: gdb -x scripts/topaz-gdb.py)\n",
	       (unsigned long)base);
	while (!READ_ONCE(kgdb_connected))
		cpu_relax();
	printk("topaz: gdb is attached, going on\n");
}
static EFI_BOOT_SERVICES *BS;
struct boot_info *boot_info = &bootinfo;

/*
 * Load options from the shell or a boot entry hold the command line. The
 * shell passes the program's own name first: a first word ending in .efi is
 * dropped. The rest is cmdline_load()'s, whole (not cut to a buffer first:
 * what does not fit is named there).
 */
static bool cmdline_from_load_options(EFI_LOADED_IMAGE *li, struct boot_info *bi)
{
	const CHAR16 *s = li->LoadOptions;
	size_t n, i = 0, first;

	if (!s || li->LoadOptionsSize < 2)
		return false;
	n = li->LoadOptionsSize / sizeof(CHAR16);
	while (i < n && s[i] == ' ')
		i++;
	for (first = i; first < n && s[first] && s[first] != ' '; first++)
		;
	if (first - i >= 4 && s[first - 4] == '.' && (s[first - 3] | 0x20) == 'e' &&
	    (s[first - 2] | 0x20) == 'f' && (s[first - 1] | 0x20) == 'i')
		i = first;
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n || !s[i])
		return false;
	bi->cmdline_source = "load options";
	cmdline_load(s + i, (n - i) * sizeof(CHAR16), CMDLINE_UCS2, "load options", bi->cmdline,
		     &bi->cmdline_result);
	return true;
}

/*
 * Otherwise \EFI\topaz\cmdline.txt on the boot volume (a USB stick's user
 * edits it), read whole into pool memory: bytes past the line's limit are
 * named as left out, not dropped unseen.
 */
static bool cmdline_from_file(EFI_LOADED_IMAGE *li, struct boot_info *bi)
{
	EFI_GUID fs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_FILE_IO_INTERFACE *fs;
	EFI_FILE_HANDLE root, file;
	u8 *buf = NULL, *bigger;
	UINTN cap = 0, size = 0, n;

	if (BS->HandleProtocol(li->DeviceHandle, &fs_guid, (void **)&fs) != EFI_SUCCESS ||
	    fs->OpenVolume(fs, &root) != EFI_SUCCESS)
		return false;
	if (root->Open(root, &file, L"\\EFI\\topaz\\cmdline.txt", EFI_FILE_MODE_READ, 0) != EFI_SUCCESS) {
		root->Close(root);
		return false;
	}
	for (;;) {
		if (size == cap) {	/* double the buffer: the file's size is not asked */
			cap = cap ? 2 * cap : 2 * CMDLINE_MAX;
			if (BS->AllocatePool(EfiLoaderData, cap, (void **)&bigger) != EFI_SUCCESS) {
				printk(KERN_ERR "cmdline: \\EFI\\topaz\\cmdline.txt: no memory for its %llu+ bytes: only those read are used\n",
				       (unsigned long long)size);
				break;
			}
			if (buf) {
				memcpy(bigger, buf, size);
				BS->FreePool(buf);
			}
			buf = bigger;
		}
		n = cap - size;
		if (file->Read(file, &n, buf + size) != EFI_SUCCESS || !n)
			break;
		size += n;
	}
	file->Close(file);
	root->Close(root);
	bi->cmdline_source = "file \\EFI\\topaz\\cmdline.txt";
	cmdline_load(buf, size, CMDLINE_BYTES, "\\EFI\\topaz\\cmdline.txt", bi->cmdline,
		     &bi->cmdline_result);
	if (buf)
		BS->FreePool(buf);
	return true;
}

static u64 find_rsdp(EFI_SYSTEM_TABLE *st)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID, acpi10 = ACPI_TABLE_GUID;
	u64 v1 = 0;

	for (UINTN i = 0; i < st->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &st->ConfigurationTable[i];

		if (!memcmp(&t->VendorGuid, &acpi20, sizeof(EFI_GUID)))
			return (u64)(uintptr_t)t->VendorTable;
		if (!memcmp(&t->VendorGuid, &acpi10, sizeof(EFI_GUID)))
			v1 = (u64)(uintptr_t)t->VendorTable;
	}
	return v1;
}

/* Page-table pages: an identity map of [0, top) in 2 MiB pages, plus room to
 * split the pages that need 4 KiB granularity (image, stacks, runtime code). */
static u64 pt_pool_pages_for(EFI_MEMORY_DESCRIPTOR *map, UINTN size, UINTN dsize)
{
	u64 top = 4ull << 30, rt_code = 0;

	for (UINTN off = 0; off < size; off += dsize) {
		EFI_MEMORY_DESCRIPTOR *d = (void *)((u8 *)map + off);
		u64 end = d->PhysicalStart + (d->NumberOfPages << 12);

		if (d->Type != EfiMemoryMappedIO && d->Type != EfiMemoryMappedIOPortSpace && end > top)
			top = end;
		if (d->Type == EfiRuntimeServicesCode)
			rt_code += 2 + (d->NumberOfPages >> 9);
	}
	return DIV_ROUND_UP(top, 1ull << 30) + DIV_ROUND_UP(top, 1ull << 39) + 1 + rt_code + 64;
}

static void fail(const char *what, EFI_STATUS st)
{
	printk(KERN_EMERG "topaz: boot failed: %s (EFI status %#lx)\n", what, (unsigned long)st);
	for (;;)
		__asm__ volatile("cli; hlt");
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	struct boot_info *bi = &bootinfo;
	EFI_LOADED_IMAGE *li = NULL;
	EFI_MEMORY_DESCRIPTOR *map = NULL;
	UINTN map_size = 0, map_cap, key, dsize;
	UINT32 dver;
	EFI_PHYSICAL_ADDRESS mem;
	EFI_STATUS s;

	bi->tsc_at_entry = rdtsc();
	percpu_set_gs(0);	/* smp_processor_id() reads it (printk's lock) */
	BS = st->BootServices;
	uart_early_init();
	BS->SetWatchdogTimer(0, 0, 0, NULL);	/* long test runs must not reset us */
	printk("topaz: EFI entry, firmware %s rev %#x\n", "UEFI", st->Hdr.Revision);

	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;

	s = BS->HandleProtocol(image, &li_guid, (void **)&li);
	if (s != EFI_SUCCESS)
		fail("no loaded-image protocol", s);
	bi->image_base = (uintptr_t)li->ImageBase;
	bi->image_size = li->ImageSize;
	bi->cmdline_source = "none";
	/* now, not in kernel_main: the firmware phase is on the command line */
	if (!cmdline_from_load_options(li, bi) && !cmdline_from_file(li, bi))
		cmdline_parse("", &bi->cmdline_result);
	if (kgdbwait)
		kgdb_wait(bi->image_base);
	bi->rsdp = find_rsdp(st);
	bi->runtime_services = st->RuntimeServices;
	bi->system_table = st;
	bi->fw_failed = fw_phase_run(bi, image);

	s = BS->GetMemoryMap(&map_size, NULL, &key, &dsize, &dver);
	if (s != EFI_BUFFER_TOO_SMALL)
		fail("GetMemoryMap size query", s);
	/* Room for the descriptors our own allocations add, and then some. */
	map_cap = map_size + 32 * dsize;
	s = BS->AllocatePages(AllocateAnyPages, EfiLoaderData, EFI_SIZE_TO_PAGES(map_cap), &mem);
	if (s != EFI_SUCCESS)
		fail("allocating the memory map buffer", s);
	map = (void *)(uintptr_t)mem;
	map_size = map_cap;
	s = BS->GetMemoryMap(&map_size, map, &key, &dsize, &dver);
	if (s != EFI_SUCCESS)
		fail("GetMemoryMap", s);

	bi->pt_pool_pages = pt_pool_pages_for(map, map_size, dsize);
	/* Below 4 GiB: the other CPUs load CR3 in 32-bit code (arch/x86/smp.c). */
	mem = 0xffffffffull;
	s = BS->AllocatePages(AllocateMaxAddress, EfiLoaderData, bi->pt_pool_pages, &mem);
	if (s != EFI_SUCCESS)
		s = BS->AllocatePages(AllocateAnyPages, EfiLoaderData, bi->pt_pool_pages, &mem);
	if (s != EFI_SUCCESS)
		fail("allocating page-table pages", s);
	bi->pt_pool = (uintptr_t)mem;
	s = BS->AllocatePages(AllocateAnyPages, EfiLoaderData, EFI_SIZE_TO_PAGES(STACKS_TOTAL), &mem);
	if (s != EFI_SUCCESS)
		fail("allocating stacks", s);
	bi->stacks = (uintptr_t)mem;
	bi->stacks_size = STACKS_TOTAL;
	/* The SIPI's start page: below 1 MiB, kept from the firmware and the page
	 * allocator (loader data). Without one, only the boot CPU runs. */
	mem = 0x9ffffull;
	if (BS->AllocatePages(AllocateMaxAddress, EfiLoaderData, 1, &mem) == EFI_SUCCESS && mem >= 0x1000)
		bi->smp_trampoline = (uintptr_t)mem;

	/*
	 * The map key must be current: nothing may allocate between the last
	 * GetMemoryMap and ExitBootServices. A stale key gives
	 * EFI_INVALID_PARAMETER; then only GetMemoryMap and ExitBootServices may
	 * be called, into the same buffer.
	 */
	for (bi->ebs_tries = 1;; bi->ebs_tries++) {
		map_size = map_cap;
		s = BS->GetMemoryMap(&map_size, map, &key, &dsize, &dver);
		if (s != EFI_SUCCESS)
			fail("GetMemoryMap before ExitBootServices", s);
		s = BS->ExitBootServices(image, key);
		if (s == EFI_SUCCESS)
			break;
		if (s != EFI_INVALID_PARAMETER || bi->ebs_tries >= 8)
			fail("ExitBootServices", s);
	}
	/* From here on the machine is ours; boot services are gone. */
	bi->mmap = map;
	bi->mmap_size = map_size;
	bi->desc_size = dsize;
	bi->desc_version = dver;
	handoff_to_kernel(bi, boot_stack_top(bi), (void (*)(void *))kernel_main);
}
