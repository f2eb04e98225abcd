/* SPDX-License-Identifier: MIT */
/* x86 control registers, descriptor tables and CPU facts. */
#ifndef TOPAZ_CPU_H
#define TOPAZ_CPU_H

#include <topaz/types.h>

#define MSR_EFER		0xc0000080
#define EFER_NXE		BIT(11)
#define MSR_IA32_APICBASE	0x1b
#define X86_CR0_WP		BIT(16)
#define X86_EFLAGS_CF		BIT(0)
#define X86_EFLAGS_PF		BIT(2)
#define X86_EFLAGS_ZF		BIT(6)
#define X86_EFLAGS_SF		BIT(7)
#define X86_EFLAGS_TF		BIT(8)
#define X86_EFLAGS_IF		BIT(9)
#define X86_EFLAGS_OF		BIT(11)
#define X86_EFLAGS_RF		BIT(16)

/* The CPUID.1:EAX signature, as Linux's x86_family(), x86_model(), x86_stepping(). */
static inline unsigned int x86_family(u32 sig)
{
	unsigned int family = (sig >> 8) & 0xf;

	return family == 0xf ? family + ((sig >> 20) & 0xff) : family;
}

static inline unsigned int x86_model(u32 sig)
{
	unsigned int model = (sig >> 4) & 0xf;

	return x86_family(sig) >= 6 ? model | ((sig >> 16) & 0xf) << 4 : model;
}

static inline unsigned int x86_stepping(u32 sig)
{
	return sig & 0xf;
}

static inline u64 read_cr0(void) { u64 v; __asm__ volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline u64 read_cr2(void) { u64 v; __asm__ volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline u64 read_cr3(void) { u64 v; __asm__ volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; __asm__ volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr0(u64 v) { __asm__ volatile("mov %0, %%cr0" :: "r"(v) : "memory"); }
static inline void write_cr3(u64 v) { __asm__ volatile("mov %0, %%cr3" :: "r"(v) : "memory"); }
static inline void write_cr4(u64 v) { __asm__ volatile("mov %0, %%cr4" :: "r"(v) : "memory"); }
static inline void halt(void) { __asm__ volatile("hlt"); }

struct cpu_info {
	char vendor[13];
	char brand[49];
	u32 family, model, stepping;
	u32 max_leaf, max_ext_leaf;
	bool has_pt;		/* CPUID.7.0:EBX[25] */
	bool has_x2apic;
	bool hypervisor;
};
extern struct cpu_info boot_cpu;

/** cpu_identify() - fill in boot_cpu from CPUID (vendor, signature, features, brand) */
void cpu_identify(void);
/** cpu_report() - print boot_cpu: vendor, family, model, stepping, brand and features */
void cpu_report(void);

#endif
