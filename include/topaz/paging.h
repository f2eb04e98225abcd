/* SPDX-License-Identifier: MIT */
/* The kernel's page tables: an identity map of physical memory. */
#ifndef TOPAZ_PAGING_H
#define TOPAZ_PAGING_H

#include <topaz/types.h>

struct boot_info;

#define PTE_P	BIT_ULL(0)
#define PTE_W	BIT_ULL(1)
#define PTE_PWT	BIT_ULL(3)
#define PTE_PCD	BIT_ULL(4)
#define PTE_PS	BIT_ULL(7)
#define PTE_G	BIT_ULL(8)
#define PTE_NX	BIT_ULL(63)
#define PTE_ADDR_MASK 0x000ffffffffff000ull

/**
 * paging_init() - build and load the kernel's page tables
 *
 * RAM and MMIO identity-mapped (MMIO uncached), text R-X, rodata R--,
 * everything else RW- and no-execute, UEFI runtime code executable, page 0
 * and a guard page under every stack not present.
 */
void paging_init(const struct boot_info *bi);
/**
 * arch_text_poke() - write one byte of code, read-only pages included,
 * through a writable alias of its page (as Linux's text_poke)
 * @addr: where
 * @byte: what
 *
 * The next serializing instruction (IRET) makes it visible to instruction
 * fetch. The hosted build's memory takes it in tests/host.
 *
 * Return: 0, -EFAULT when @addr is not mapped, -EPERM for memory that is not
 * RAM or did not take the byte.
 */
int arch_text_poke(u64 addr, u8 byte);
/** addr_is_mapped() - is @addr present in the current page tables? */
bool addr_is_mapped(uintptr_t addr);
/** paging_lookup() - the leaf entry mapping @addr (0 when none) and its size */
u64 paging_lookup(uintptr_t addr, u64 *page_size);
/**
 * set_memory_flags() - change 4 KiB pages of [start, end): clear @clr, set @set
 *
 * Only PTE_P, PTE_W and PTE_NX before paging_init(), when the page tables are
 * the firmware's: the change goes through the firmware (see
 * paging_set_firmware_ops()), -ENODEV without it, -EOPNOTSUPP when the
 * firmware did not make it.
 */
int set_memory_flags(uintptr_t start, uintptr_t end, u64 set, u64 clr);

/**
 * typedef paging_fw_set_fn - the firmware's way to give [@start, @start+@len)
 * exactly the PTE_P, PTE_W and PTE_NX of @flags (EFI_CPU_ARCH_PROTOCOL's
 * SetMemoryAttributes: RP, RO, XP); 0 or an error
 */
typedef int (*paging_fw_set_fn)(u64 start, u64 len, u64 flags);
/**
 * paging_set_firmware_ops() - while the firmware's page tables are loaded (the
 * firmware phase), set_memory_flags() changes them through @fn (NULL: not at all)
 */
void paging_set_firmware_ops(paging_fw_set_fn fn);

#endif
