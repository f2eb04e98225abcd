/* SPDX-License-Identifier: MIT */
/* What boot/ hands to the kernel after ExitBootServices. */
#ifndef TOPAZ_BOOTINFO_H
#define TOPAZ_BOOTINFO_H

#include <topaz/types.h>
#include <topaz/cmdline.h>

/* The UEFI memory descriptor, as the firmware lays it out (walk by desc_size). */
struct efi_mem_desc {
	u32 type;
	u32 pad;
	u64 phys_start;
	u64 virt_start;
	u64 num_pages;
	u64 attribute;
};

/* UEFI memory types (UEFI spec, EFI_MEMORY_TYPE). */
enum {
	EFI_RESERVED = 0, EFI_LOADER_CODE, EFI_LOADER_DATA, EFI_BOOT_CODE, EFI_BOOT_DATA,
	EFI_RUNTIME_CODE, EFI_RUNTIME_DATA, EFI_CONVENTIONAL, EFI_UNUSABLE, EFI_ACPI_RECLAIM,
	EFI_ACPI_NVS, EFI_MMIO, EFI_MMIO_PORT, EFI_PAL_CODE, EFI_PERSISTENT, EFI_UNACCEPTED,
	EFI_NR_TYPES
};
#ifndef EFI_MEMORY_WB
#define EFI_MEMORY_WB	0x8ull
#endif

#define BOOT_STACK_SIZE	(64 * 1024)
#define IST_STACK_SIZE	(16 * 1024)
#define NR_IST_STACKS	4	/* #DF, NMI, #MC, #DB */

struct boot_info {
	u64 tsc_at_entry;		/* rdtsc at efi_main */
	uintptr_t image_base;		/* where OVMF loaded topaz */
	u64 image_size;
	const void *mmap;		/* the final memory map */
	u64 mmap_size, desc_size;
	u32 desc_version;
	u64 rsdp;			/* ACPI RSDP physical address, 0 if none */
	void *runtime_services;		/* EFI_RUNTIME_SERVICES * */
	void *system_table;		/* EFI_SYSTEM_TABLE * */
	char cmdline[CMDLINE_MAX];
	const char *cmdline_source;	/* "load options", "file \\EFI\\topaz\\cmdline.txt", "none" */
	/* One allocation: [guard][boot stack][guard][IST 1]...[guard][IST 4] */
	uintptr_t stacks;
	u64 stacks_size;
	/* Pages for the kernel's page tables, allocated before ExitBootServices. */
	uintptr_t pt_pool;
	u64 pt_pool_pages;
	unsigned int ebs_tries;
	/* A page below 1 MiB for the other CPUs' start-up code (0: none). */
	uintptr_t smp_trampoline;
	/* The command line, parsed by efi_main (the firmware phase reads it). */
	struct cmdline_result cmdline_result;
	/* The firmware phase's memory (0: none ran): the page allocator's first
	 * range, kept by the kernel (loader data) with what it holds. */
	uintptr_t fw_pool;
	int fw_failed;			/* what failed in the firmware phase */
	bool fw_traced;			/* ... and it wrote a trace (the boot's one container) */
	bool fw_phase_active;		/* in it now: boot services live (files can be written) */
};

static inline uintptr_t boot_stack_top(const struct boot_info *bi)
{
	return bi->stacks + 4096 + BOOT_STACK_SIZE;
}
static inline uintptr_t ist_stack_top(const struct boot_info *bi, int i)
{
	return bi->stacks + 4096 + BOOT_STACK_SIZE + (u64)(i + 1) * (4096 + IST_STACK_SIZE);
}
static inline uintptr_t stack_guard(const struct boot_info *bi, int i)	/* i=0 boot, 1.. IST */
{
	return i == 0 ? bi->stacks : ist_stack_top(bi, i - 1) - IST_STACK_SIZE - 4096;
}
#define STACKS_TOTAL (4096 + BOOT_STACK_SIZE + NR_IST_STACKS * (4096 + IST_STACK_SIZE))

/**
 * kernel_main() - the kernel proper, after efi_main() left boot services: @bi
 * says what it found
 */
__noreturn void kernel_main(struct boot_info *bi);
extern struct boot_info *boot_info;

#endif
