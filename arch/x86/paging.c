// SPDX-License-Identifier: MIT
/*
 * The kernel's page tables. Physical memory is identity-mapped in 2 MiB pages
 * (so phys_to_virt is the identity, as under UEFI); pages that need finer
 * permissions are split to 4 KiB: the image (text R-X, rodata R--, data RW-),
 * UEFI runtime code (executable, the firmware runs there), page 0 and the
 * stack guard pages (not present).
 */
#define pr_fmt(fmt) "paging: " fmt
#include <topaz/paging.h>
#include <topaz/bootinfo.h>
#include <topaz/cpu.h>
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/percpu.h>


extern const char ImageBase[] __hidden, __text_start[] __hidden, __text_end[] __hidden;
extern const char __rodata_end[] __hidden, __data_start[] __hidden, __data_end[] __hidden;
extern const char __image_end[] __hidden;

static u64 *pml4;
static uintptr_t pool, pool_end;
static unsigned int pool_used, splits;

/* The text poke window: two pages of address space per CPU in the last PML4
 * slot (nothing else lives there), mapped writable onto the code page being
 * patched and its neighbour. Changing CR0.WP instead would flush the whole
 * TLB twice a poke. */
#define POKE_PAGES	2
#define POKE_VA		0xfffffffffff80000ull	/* CPU n's window: POKE_VA + 2n pages */
_Static_assert(POKE_VA + NR_CPUS * POKE_PAGES * PAGE_SIZE - 1 == ~0ull, "two poke pages per CPU");
/* Each CPU's own window: its PTE changes and its INVLPG stay on that CPU
 * (an INVLPG does not reach other CPUs' TLBs). */
struct poke_window {
	u64 *pte[POKE_PAGES];	/* the PTEs that map the window */
	u64 page;		/* the window's first page + 1 (0: none yet) */
};
static DEFINE_PER_CPU(struct poke_window, poke_windows);

static u64 *alloc_table(void)
{
	void *p;

	if (pool && pool + PAGE_SIZE <= pool_end) {
		p = (void *)pool;
		pool += PAGE_SIZE;
		pool_used++;
	} else {
		p = (void *)get_zeroed_page(GFP_ATOMIC);
		if (!p)
			panic("paging: out of memory for page tables");
	}
	memset(p, 0, PAGE_SIZE);
	return p;
}

static u64 *next_level(u64 *table, unsigned int idx)
{
	if (!(table[idx] & PTE_P))
		table[idx] = (u64)(uintptr_t)alloc_table() | PTE_P | PTE_W;
	return (u64 *)(uintptr_t)(table[idx] & PTE_ADDR_MASK);
}

static void map_2m(u64 addr, u64 flags)
{
	u64 *pdpt = next_level(pml4, (addr >> 39) & 511);
	u64 *pd = next_level(pdpt, (addr >> 30) & 511);

	pd[(addr >> 21) & 511] = addr | flags | PTE_PS | PTE_P;
}

/* The 4 KiB entry for @addr, splitting a 2 MiB page when needed. */
static u64 *pte_for(uintptr_t addr)
{
	u64 *pdpt, *pd, *pt, e;

	if (!(pml4[(addr >> 39) & 511] & PTE_P))
		return NULL;
	pdpt = (u64 *)(uintptr_t)(pml4[(addr >> 39) & 511] & PTE_ADDR_MASK);
	if (!(pdpt[(addr >> 30) & 511] & PTE_P))
		return NULL;
	pd = (u64 *)(uintptr_t)(pdpt[(addr >> 30) & 511] & PTE_ADDR_MASK);
	e = pd[(addr >> 21) & 511];
	if (!(e & PTE_P))
		return NULL;
	if (e & PTE_PS) {
		u64 base = e & PTE_ADDR_MASK & ~((2ull << 20) - 1);
		u64 flags = e & ~PTE_ADDR_MASK & ~PTE_PS;

		pt = alloc_table();
		for (int i = 0; i < 512; i++)
			pt[i] = (base + ((u64)i << 12)) | flags;
		pd[(addr >> 21) & 511] = (u64)(uintptr_t)pt | PTE_P | PTE_W;
		splits++;
	} else {
		pt = (u64 *)(uintptr_t)(e & PTE_ADDR_MASK);
	}
	return &pt[(addr >> 12) & 511];
}

/* A 4 KiB entry for @addr where nothing is mapped yet (not present). */
static u64 *pte_for_new(uintptr_t addr)
{
	u64 *pdpt = next_level(pml4, (addr >> 39) & 511);
	u64 *pd = next_level(pdpt, (addr >> 30) & 511);
	u64 *pt = next_level(pd, (addr >> 21) & 511);

	return &pt[(addr >> 12) & 511];
}

static paging_fw_set_fn fw_set;

void paging_set_firmware_ops(paging_fw_set_fn fn)
{
	fw_set = fn;
}

/* The leaf entry for @addr in the loaded tables, present or not (0: none). */
static u64 leaf_entry(uintptr_t addr)
{
	const u64 *t = (const u64 *)(uintptr_t)(read_cr3() & PTE_ADDR_MASK);

	for (unsigned int shift = 39;; shift -= 9) {
		u64 e = t[(addr >> shift) & 511];

		if (!(e & PTE_P))
			return shift == 12 ? e : 0;	/* a 4 KiB one keeps its other bits */
		if (shift == 12 || (shift < 39 && (e & PTE_PS)))
			return e;
		t = (const u64 *)(uintptr_t)(e & PTE_ADDR_MASK);
	}
}

#define FW_FLAGS	(PTE_P | PTE_W | PTE_NX)

/*
 * The firmware's tables are the firmware's to change (it splits its large
 * pages and keeps its own page-table pages read-only): asked through it, a
 * run of pages that want the same flags at a time, then checked. NX is only
 * checked cleared: without EFER.NXE the firmware has no XP to give.
 */
static int firmware_set_flags(uintptr_t start, uintptr_t end, u64 set, u64 clr)
{
	if (!fw_set)
		return -ENODEV;	/* the firmware's page tables: not ours to change */
	if ((set | clr) & ~FW_FLAGS)
		return -EINVAL;
	for (uintptr_t a = ALIGN_DOWN(start, PAGE_SIZE), b; a < end; a = b) {
		u64 want = ((leaf_entry(a) & ~clr) | set) & FW_FLAGS;
		bool same = (leaf_entry(a) & FW_FLAGS) == want;
		int err;

		for (b = a + PAGE_SIZE; b < end; b += PAGE_SIZE) {
			u64 f = leaf_entry(b);

			if ((((f & ~clr) | set) & FW_FLAGS) != want)
				break;
			same &= (f & FW_FLAGS) == want;
		}
		if (same)
			continue;	/* nothing to ask for (a failed setup's undo) */
		err = fw_set(a, b - a, want);
		if (err)
			return err;
		for (uintptr_t c = a; c < b; c += PAGE_SIZE) {
			u64 e = leaf_entry(c);

			__asm__ volatile("invlpg (%0)" :: "r"(c) : "memory");
			if ((e & (PTE_P | PTE_W)) != (want & (PTE_P | PTE_W)) ||
			    (!(want & PTE_NX) && (e & PTE_NX)))
				return -EOPNOTSUPP;
		}
	}
	return 0;
}

int set_memory_flags(uintptr_t start, uintptr_t end, u64 set, u64 clr)
{
	if (!pml4)
		return firmware_set_flags(start, end, set, clr);
	for (uintptr_t a = ALIGN_DOWN(start, PAGE_SIZE); a < end; a += PAGE_SIZE) {
		u64 *pte = pte_for(a);

		if (!pte)
			return -EFAULT;
		*pte = (*pte & ~clr) | set;
		__asm__ volatile("invlpg (%0)" :: "r"(a) : "memory");
	}
	return 0;
}

u64 paging_lookup(uintptr_t addr, u64 *page_size)
{
	const u64 *t = (const u64 *)(uintptr_t)(read_cr3() & PTE_ADDR_MASK);
	static const unsigned int shifts[4] = { 39, 30, 21, 12 };

	if ((s64)addr >> 47 != 0 && (s64)addr >> 47 != -1)
		return 0;
	for (int level = 0; level < 4; level++) {
		u64 e = t[(addr >> shifts[level]) & 511];

		if (!(e & PTE_P))
			return 0;
		if (level == 3 || (level > 0 && (e & PTE_PS))) {
			if (page_size)
				*page_size = 1ull << shifts[level];
			return e;
		}
		t = (const u64 *)(uintptr_t)(e & PTE_ADDR_MASK);
	}
	return 0;
}

bool addr_is_mapped(uintptr_t addr)
{
	return paging_lookup(addr, NULL) != 0;
}

/*
 * The byte goes in with a LOCK CMPXCHG on the two bytes it shares with a
 * neighbour, at an odd address. Any locked access works the same on a CPU;
 * a misaligned one is what QEMU's multi-threaded TCG runs with every other
 * vCPU stopped (it cannot make it atomic otherwise). That matters: QEMU
 * drops the code it translated from a page before the store lands, so a
 * vCPU running that code right then can translate the old byte again and
 * keep it, and a traced CPU would then run a branch without its INT3 (found
 * as ret instructions missing from traces of spin loops on 4 vCPUs).
 * Stopped vCPUs are not translating. With one vCPU it is a plain store.
 */
static void poke_locked(volatile u16 *w, unsigned int shift, u8 byte)
{
	u16 old = *w, want;

	do {
		want = (u16)((old & ~(0xffu << shift)) | ((u16)byte << shift));
	} while (!__atomic_compare_exchange_n(w, &old, want, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
}

/* The neighbour page can be written back as it is (RAM, not a device)? */
static bool plain_page(u64 page)
{
	u64 e = paging_lookup(page, NULL);

	return e && !(e & PTE_PCD);
}

/*
 * Before paging_init (the firmware phase) the tables are the firmware's: its
 * runtime drivers' code is read-only there, so the byte goes in with CR0.WP
 * clear for that one store. One CPU runs then (the others wait in the
 * firmware), so a plain store does.
 */
static int poke_firmware_map(u64 addr, u8 byte)
{
	unsigned long flags;
	u64 cr0;
	int err = 0;

	__asm__ volatile("pushfq; pop %0; cli" : "=r"(flags) :: "memory");
	cr0 = read_cr0();
	write_cr0(cr0 & ~X86_CR0_WP);
	*(volatile u8 *)(uintptr_t)addr = byte;
	write_cr0(cr0);
	if (*(volatile const u8 *)(uintptr_t)addr != byte)
		err = -EPERM;
	if (flags & X86_EFLAGS_IF)
		__asm__ volatile("sti" ::: "memory");
	return err;
}

int arch_text_poke(u64 addr, u8 byte)
{
	u64 e = paging_lookup(addr, NULL), page = addr & ~(u64)(PAGE_SIZE - 1), base;
	u64 off = addr & (PAGE_SIZE - 1), w;
	unsigned long flags;
	struct poke_window *win;
	unsigned int cpu;
	bool pair;
	u64 va;
	int err = 0;

	if (!e)
		return -EFAULT;
	if (!pml4)
		return (e & PTE_PCD) ? -EPERM : poke_firmware_map(addr, byte);
	cpu = smp_processor_id();
	win = per_cpu_ptr(poke_windows, cpu);
	if (!win->pte[0] || (e & PTE_PCD))
		return -EPERM;	/* MMIO (a flash part would take it as a command) */
	/* the word at an odd address holding the byte: [off, off+1] or [off-1, off] */
	base = off == 0 ? page - PAGE_SIZE : page;
	pair = off == 0 ? page >= PAGE_SIZE && plain_page(base) :
	       off == PAGE_SIZE - 1 ? plain_page(page + PAGE_SIZE) : true;
	va = POKE_VA + (u64)cpu * POKE_PAGES * PAGE_SIZE;
	/* inline: this must not call code it may be patching */
	__asm__ volatile("pushfq; pop %0; cli" : "=r"(flags) :: "memory");
	if (base + 1 != win->page) {
		/* the identity map: the virtual page is the physical one */
		for (unsigned int i = 0; i < POKE_PAGES; i++) {
			*win->pte[i] = (base + i * PAGE_SIZE) | PTE_P | PTE_W | PTE_NX;
			__asm__ volatile("invlpg (%0)" :: "r"(va + i * PAGE_SIZE) : "memory");
		}
		win->page = base + 1;
	}
	off += page - base;	/* from the window's start */
	if (pair) {
		w = off & 1 ? off : off - 1;
		poke_locked((volatile u16 *)(uintptr_t)(va + w), (unsigned int)(off - w) * 8, byte);
	} else {
		*(volatile u8 *)(uintptr_t)(va + off) = byte;	/* no neighbour to share with */
	}
	if (*(volatile const u8 *)(uintptr_t)addr != byte)
		err = -EPERM;
	if (flags & X86_EFLAGS_IF)
		__asm__ volatile("sti" ::: "memory");
	return err;
}

static bool is_ram_type(u32 type)
{
	return type != EFI_RESERVED && type != EFI_MMIO && type != EFI_MMIO_PORT &&
	       type != EFI_PAL_CODE && type < EFI_NR_TYPES;
}

#define for_each_desc(bi, d) \
	for (const u8 *__p = (bi)->mmap; __p < (const u8 *)(bi)->mmap + (bi)->mmap_size; __p += (bi)->desc_size) \
		for (const struct efi_mem_desc *d = (const void *)__p; d; d = NULL)

void paging_init(const struct boot_info *bi)
{
	u64 top = 4ull << 30;
	u64 ram_2m_flags = PTE_W | PTE_NX, mmio_flags = PTE_W | PTE_NX | PTE_PCD | PTE_PWT;

	pool = bi->pt_pool;
	pool_end = bi->pt_pool + bi->pt_pool_pages * PAGE_SIZE;
	pml4 = alloc_table();

	for_each_desc(bi, d) {
		u64 end = d->phys_start + (d->num_pages << PAGE_SHIFT);
		if (is_ram_type(d->type) && end > top)
			top = end;
	}
	top = ALIGN_UP(top, 1ull << 30);
	for (u64 a = 0; a < top; a += 2ull << 20) {
		bool ram = false;

		for_each_desc(bi, d) {
			u64 end = d->phys_start + (d->num_pages << PAGE_SHIFT);
			if (is_ram_type(d->type) && (d->attribute & EFI_MEMORY_WB) &&
			    d->phys_start < a + (2ull << 20) && end > a)
				ram = true;
		}
		map_2m(a, ram ? ram_2m_flags : mmio_flags);
	}

	/* The image: headers read-only, text executable, rodata read-only, data writable. */
	uintptr_t base = (uintptr_t)ImageBase;
	set_memory_flags(base, (uintptr_t)__text_start, PTE_NX, PTE_W);
	set_memory_flags((uintptr_t)__text_start, (uintptr_t)__text_end, 0, PTE_W | PTE_NX);
	set_memory_flags(ALIGN_UP((uintptr_t)__text_end, PAGE_SIZE), (uintptr_t)__data_start,
			 PTE_NX, PTE_W);
	set_memory_flags(ALIGN_UP((uintptr_t)__data_end, PAGE_SIZE), (uintptr_t)__image_end,
			 PTE_NX, PTE_W);

	for_each_desc(bi, d)
		if (d->type == EFI_RUNTIME_CODE)
			set_memory_flags(d->phys_start, d->phys_start + (d->num_pages << PAGE_SHIFT),
					 0, PTE_NX);
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		struct poke_window *win = per_cpu_ptr(poke_windows, cpu);

		for (unsigned int i = 0; i < POKE_PAGES; i++)
			win->pte[i] = pte_for_new(POKE_VA + ((u64)cpu * POKE_PAGES + i) * PAGE_SIZE);
	}
	/* A NULL dereference must fault, and so must running off a stack. */
	set_memory_flags(0, PAGE_SIZE, 0, PTE_P);
	for (int i = 0; i <= NR_IST_STACKS; i++)
		set_memory_flags(stack_guard(bi, i), stack_guard(bi, i) + PAGE_SIZE, 0, PTE_P);

	u64 efer;
	arch_rdmsr_safe(MSR_EFER, &efer);
	arch_wrmsr_safe(MSR_EFER, efer | EFER_NXE);
	write_cr0(read_cr0() | X86_CR0_WP);
	write_cr3((u64)(uintptr_t)pml4);
	pr_info("identity map 0-%#llx, %u table pages from the boot pool, %u 2M pages split\n",
		top, pool_used, splits);
}
