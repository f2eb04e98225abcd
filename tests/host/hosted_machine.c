// SPDX-License-Identifier: MIT
/* The hosted build's machine: console to stderr, fake MSRs and CPUID, and
 * symbols from the dynamic linker. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include "hosted.h"
#include <topaz/console.h>
#include <topaz/time.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/symbols.h>
#include <topaz/mm.h>
#include <topaz/paging.h>
#include <topaz/smp.h>

bool hosted_console_quiet;
jmp_buf *hosted_panic_jmp;
char hosted_panic_msg[512];
unsigned int hosted_msr_faults;

void console_write(const char *s, size_t n)
{
	if (!hosted_console_quiet && !getenv("TOPAZ_QUIET"))
		fwrite(s, 1, n, stderr);
}

u64 ktime_get_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* Fake MSRs: architectural MSRs below 0x1000 index a table directly (the
 * benchmarks then measure the driver, not the fake machine); others hash. */
#define NMSR 512
#define NLOW 0x1000
static struct { u32 msr; u64 val; bool used; } msrs[NLOW + NMSR];

static unsigned int msr_slot(u32 msr)
{
	unsigned int i;

	if (msr < NLOW)
		return msr;
	i = NLOW + ((msr * 2654435761u) >> 23);	/* 9 bits */
	while (msrs[i].used && msrs[i].msr != msr)
		i = NLOW + ((i - NLOW + 1) & (NMSR - 1));
	return i;
}

void hosted_msr_reset(void)
{
	memset(msrs, 0, sizeof(msrs));
}

void hosted_msr_define(u32 msr, u64 value)
{
	unsigned int i = msr_slot(msr);

	msrs[i].used = true;
	msrs[i].msr = msr;
	msrs[i].val = value;
}

bool hosted_msr_get(u32 msr, u64 *value)
{
	unsigned int i = msr_slot(msr);

	if (!msrs[i].used)
		return false;
	*value = msrs[i].val;
	return true;
}

int arch_rdmsr_safe(u32 msr, u64 *val)
{
	unsigned int i = msr_slot(msr);

	if (!msrs[i].used)
		return -EIO;
	*val = msrs[i].val;
	return 0;
}

int arch_wrmsr_safe(u32 msr, u64 val)
{
	unsigned int i = msr_slot(msr);

	if (!msrs[i].used)
		return -EIO;
	msrs[i].val = val;
	return 0;
}

#define NCPUID 64
static struct { u32 leaf, sub; struct cpuid_regs r; bool used; } leaves[NCPUID];

void hosted_cpuid_reset(void)
{
	memset(leaves, 0, sizeof(leaves));
}

void hosted_cpuid_set(u32 leaf, u32 subleaf, const struct cpuid_regs *r)
{
	for (int i = 0; i < NCPUID; i++)
		if (!leaves[i].used || (leaves[i].leaf == leaf && leaves[i].sub == subleaf)) {
			leaves[i].used = true;
			leaves[i].leaf = leaf;
			leaves[i].sub = subleaf;
			leaves[i].r = *r;
			return;
		}
	abort();
}

void arch_cpuid(u32 leaf, u32 subleaf, struct cpuid_regs *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NCPUID; i++)
		if (leaves[i].used && leaves[i].leaf == leaf && leaves[i].sub == subleaf)
			*r = leaves[i].r;
}

void arch_msr_fault(u32 msr, bool write, u64 val, uintptr_t caller)
{
	hosted_msr_faults++;
	snprintf(hosted_panic_msg, sizeof(hosted_panic_msg), "#GP on %s of MSR %#x", write ? "wrmsr" : "rdmsr", msr);
	if (hosted_panic_jmp)
		longjmp(*hosted_panic_jmp, 1);
	fprintf(stderr, "%s (value %#llx) from %p\n", hosted_panic_msg, val, (void *)caller);
	abort();
}

void panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hosted_panic_msg, sizeof(hosted_panic_msg), fmt, ap);
	va_end(ap);
	if (hosted_panic_jmp)
		longjmp(*hosted_panic_jmp, 1);
	fprintf(stderr, "PANIC: %s\n", hosted_panic_msg);
	abort();
}

void warn_slowpath(const char *file, int line, uintptr_t caller, const char *cond)
{
	printk(KERN_WARNING "WARNING: %s at %s:%d\n", cond, file, line);
}

static u8 ports[65536];
u8 inb(u16 port) { return ports[port]; }
u16 inw(u16 port) { return ports[port]; }
u32 inl(u16 port) { return ports[port]; }
void outb(u16 port, u8 v) { ports[port] = v; }
void outw(u16 port, u16 v) { ports[port] = (u8)v; }
void outl(u16 port, u32 v) { ports[port] = (u8)v; }

u64 rdtsc(void) { return __rdtsc(); }

/* User space cannot take a fault back: the first page stands for memory
 * that is not mapped (tests put operands there to see -EFAULT). */
int (*hosted_nofault_read)(u64 addr, u64 *val);
int (*hosted_nofault_write)(u64 addr, u64 val);

int arch_read_u64_nofault(u64 addr, u64 *val)
{
	if (addr < 4096)
		return -EFAULT;
	if (hosted_nofault_read)
		return hosted_nofault_read(addr, val);
	memcpy(val, (const void *)(uintptr_t)addr, 8);
	return 0;
}

int arch_write_u64_nofault(u64 addr, u64 val)
{
	if (addr < 4096)
		return -EFAULT;
	if (hosted_nofault_write)
		return hosted_nofault_write(addr, val);
	memcpy((void *)(uintptr_t)addr, &val, 8);
	return 0;
}

u64 hosted_rand(u64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Code the tests patch lives in their own RWX mappings. */
bool hosted_text_poke_refuse;

int arch_text_poke(u64 addr, u8 byte)
{
	if (addr < 4096)
		return -EFAULT;
	if (hosted_text_poke_refuse)
		return -EPERM;
	*(volatile u8 *)(uintptr_t)addr = byte;
	return 0;
}

/* Every page but the first is "mapped" (see arch_read_u64_nofault). */
bool addr_is_mapped(uintptr_t addr)
{
	return addr >= 4096;
}

void cpu_relax(void) { __builtin_ia32_pause(); }

/* Each thread is a fake CPU: its interrupt flag is a thread-local variable. */
static __thread bool irq_on = true;
unsigned long local_irq_save(void) { bool was = irq_on; irq_on = false; return was; }
void local_irq_restore(unsigned long flags) { irq_on = flags != 0; }
void local_irq_enable(void) { irq_on = true; }
void local_irq_disable(void) { irq_on = false; }
bool irqs_disabled(void) { return !irq_on; }

/*
 * Symbols: the test binary's own ELF .symtab (static functions included), read
 * once with libelf into the same table format the kernel embeds, so lookups
 * go through the shared ksym_table code.
 */
static struct ksym_table host_syms;
static struct ksym_entry *host_entries;
static char *host_names;

static int cmp_entry(const void *a, const void *b)
{
	const struct ksym_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

static void load_host_symbols_once(void)
{
	size_t cap = 0, n = 0, names_len = 0, names_cap = 0;
	uintptr_t bias = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	dl_iterate_phdr(first_object, &bias);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;
			size_t len;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !(nm = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*nm)
				continue;
			if (n == cap)
				host_entries = realloc(host_entries, (cap = cap * 2 + 1024) * sizeof(*host_entries));
			len = strlen(nm) + 1;
			if (names_len + len > names_cap)
				host_names = realloc(host_names, names_cap = (names_cap + len) * 2);
			memcpy(host_names + names_len, nm, len);
			host_entries[n++] = (struct ksym_entry){ (u32)sym.st_value, (u32)sym.st_size,
								  (u32)names_len, 'T' };
			names_len += len;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	qsort(host_entries, n, sizeof(*host_entries), cmp_entry);
	host_syms = (struct ksym_table){ bias, host_entries, (u32)n, host_names };
}

/*
 * The table is read on the first lookup, which may come from several test
 * threads (CPUs) at once, each printing a %pS: pthread_once() lets one read
 * it and makes the others wait for the finished table.
 */
static void load_host_symbols(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, load_host_symbols_once);
}

int ksym_lookup(uintptr_t addr, const char **name, uintptr_t *offset, uintptr_t *size)
{
	const struct ksym_entry *e;

	load_host_symbols();
	e = ksym_table_lookup(&host_syms, addr, offset);
	if (!e)
		return -1;
	*name = host_syms.names + e->name;
	if (size)
		*size = e->size;
	return 0;
}

uintptr_t ksym_address(const char *name)
{
	const struct ksym_entry *e;

	load_host_symbols();
	e = ksym_table_find(&host_syms, name);
	return e ? host_syms.base + e->start : 0;
}

void *hosted_arena(size_t mib)
{
	void *p = aligned_alloc(4u << 20, mib << 20);

	if (!p)
		abort();
	return p;
}

void hosted_arena_free(void *arena, size_t mib)
{
	free(arena);
}

#include <topaz/apic.h>

u32 hosted_lvtpc = APIC_LVT_MASKED;
unsigned int hosted_pmi_count, hosted_nmi_count;
void (*hosted_pmi_handler)(bool nmi);

u32 apic_read_lvtpc(void) { return hosted_lvtpc; }
void apic_write_lvtpc(u32 v) { hosted_lvtpc = v; }
void apic_self_ipi(u8 vector) { }
void apic_self_nmi(void) { }
void apic_eoi(void) { }
u32 apic_id(void) { return 0; }
bool apic_is_x2apic(void) { return false; }

bool apic_pmi_deliver(void)
{
	u32 lvt = hosted_lvtpc;
	bool nmi = (lvt & APIC_DM_MASK) == APIC_DM_NMI;

	if (lvt & APIC_LVT_MASKED)
		return false;
	hosted_lvtpc |= APIC_LVT_MASKED;
	if (nmi)
		hosted_nmi_count++;
	else
		hosted_pmi_count++;
	if (hosted_pmi_handler)
		hosted_pmi_handler(nmi);
	return true;
}

void *hosted_page_alloc_setup(size_t mib)
{
	void *arena = hosted_arena(mib);

	page_alloc_init();
	if (page_alloc_add_range((uintptr_t)arena, (uintptr_t)arena + (mib << 20)))
		abort();
	return arena;
}

void hosted_capture_begin(char *buf, size_t size)
{
	hosted_console_quiet = true;
	printk_capture_start(buf, size);
}

void hosted_capture_end(void)
{
	printk_capture_stop();
	hosted_console_quiet = false;
}

/* ---------------------------------------------------------------- traps */
/* The hosted tests script traps: handlers are recorded here and the test
 * calls them with the registers a CPU would have pushed. */
trap_handler_t hosted_trap_handlers[32];
const struct trap_trace_hooks *hosted_trace_hooks;
bool (*hosted_bp_fast)(struct trap_frame *f);
bool hosted_in_nmi, hosted_no_iret;
u64 hosted_dr6;
u64 irq_counts[256];
DEFINE_PER_CPU(struct trap_cpu, trap_cpu);
/* The kernel image's bounds: code outside them is "firmware" (the sideband). */
const char ImageBase[1] __hidden, __image_end[1] __hidden;

void trap_set_handler(unsigned int vector, trap_handler_t fn)
{
	if (vector < ARRAY_SIZE(hosted_trap_handlers))
		hosted_trap_handlers[vector] = fn;
}

void trap_set_trace_hooks(const struct trap_trace_hooks *h)
{
	hosted_trace_hooks = h;
}

void trap_set_bp_fast(bool (*fn)(struct trap_frame *f))
{
	hosted_bp_fast = fn;
}

bool trap_in_entry_code(u64 ip)
{
	return false;	/* the hosted tests script their traps: no entry code */
}

bool trap_in_nmi(void)
{
	return hosted_in_nmi;
}

void trap_return_without_iret(void)
{
	hosted_no_iret = true;
}

/*
 * The fake machine's CPUs: a thread says which CPU it is (hosted_cpu_id); a
 * call "on another CPU" runs on the calling thread as that CPU, which is what
 * the code under test can observe of an IPI (its per-CPU state is that CPU's).
 */
__thread unsigned int hosted_cpu_id;

int smp_call_function_single(unsigned int cpu, smp_call_func_t fn, void *info, bool wait)
{
	unsigned int saved = hosted_cpu_id;
	unsigned long flags;

	if (!cpu_online(cpu))
		return -EINVAL;
	hosted_cpu_id = cpu;
	flags = local_irq_save();
	fn(info);
	local_irq_restore(flags);
	hosted_cpu_id = saved;
	return 0;
}

void on_each_cpu(smp_call_func_t fn, void *info, bool wait)
{
	unsigned int cpu;

	for_each_online_cpu(cpu)
		smp_call_function_single(cpu, fn, info, wait);
}

int run_on_cpu(unsigned int cpu, smp_call_func_t fn, void *info)
{
	unsigned int saved = hosted_cpu_id;

	if (!cpu_online(cpu))
		return -EINVAL;
	hosted_cpu_id = cpu;
	fn(info);
	hosted_cpu_id = saved;
	return 0;
}

void run_on_cpu_wait(unsigned int cpu)
{
}

unsigned int run_on_each_cpu(smp_call_func_t fn, void *info)
{
	unsigned int cpu, ran = 0;

	for_each_online_cpu(cpu)
		ran += run_on_cpu(cpu, fn, info) == 0;
	return ran;
}

u32 cpu_apic_id(unsigned int cpu)
{
	return cpu;
}

void smp_set_job_wrapper(void (*wrap)(smp_call_func_t fn, void *info))
{
}

void smp_set_stop_hook(void (*fn)(void), enum smp_stop_when (*defer)(void))
{
}

/* A panic's stop put off (what the kernel's smp_stop_nmi() does when its
 * NMI came inside the trace unit): a test sets it, and the hook runs here. */
bool hosted_stop_put_off;
void (*hosted_stop_hook)(void);

void smp_stop_pending(void)
{
	if (!hosted_stop_put_off)
		return;
	hosted_stop_put_off = false;
	if (hosted_stop_hook)
		hosted_stop_hook();
}

void hosted_set_cpus(unsigned int n)
{
	nr_cpu_ids = n;
	cpu_online_bits = n >= 64 ? ~0ull : (1ull << n) - 1;
}
