/* SPDX-License-Identifier: MIT */
/* The hosted build's fake machine: what tests can see and steer. */
#ifndef TOPAZ_TESTS_HOSTED_H
#define TOPAZ_TESTS_HOSTED_H

#include <setjmp.h>
#include <topaz/types.h>
#include <topaz/arch.h>

/* Fake MSRs: an MSR not listed here #GPs, as on a CPU without it. */
void hosted_msr_define(u32 msr, u64 value);
void hosted_msr_reset(void);
bool hosted_msr_get(u32 msr, u64 *value);
/* Fake CPUID answers (leaf, subleaf); unset leaves read as zero. */
void hosted_cpuid_set(u32 leaf, u32 subleaf, const struct cpuid_regs *r);
void hosted_cpuid_reset(void);

/* When set, panic() and a faulting plain MSR access longjmp here instead of
 * aborting, so a test can expect them. */
extern jmp_buf *hosted_panic_jmp;
extern char hosted_panic_msg[512];
extern unsigned int hosted_msr_faults;	/* #GPs delivered by the fake machine */

/* arch_read/write_u64_nofault: when set, these see every access instead of
 * memory (a test checks addresses); the first page always faults. */
extern int (*hosted_nofault_read)(u64 addr, u64 *val);
extern int (*hosted_nofault_write)(u64 addr, u64 val);
/* arch_text_poke: when set, memory refuses the byte (as ROM would). */
extern bool hosted_text_poke_refuse;

/* xorshift64: the tests' reproducible pseudo-random numbers (*@state != 0). */
u64 hosted_rand(u64 *state);

/* The fake machine's CPUs: @n online (nr_cpu_ids = @n); hosted_cpu_id says
 * which one a thread is (percpu.h). Set before kmem_cache_init() lays out
 * the slab's per-CPU arrays. */
void hosted_set_cpus(unsigned int n);

/* Quiet console for tests that expect many error messages. */
extern bool hosted_console_quiet;

/* An arena for the page allocator: @mib MiB, 4 MiB aligned. */
void *hosted_arena(size_t mib);
void hosted_arena_free(void *arena, size_t mib);
/** hosted_page_alloc_setup() - a fresh page allocator over a new @mib MiB arena */
void *hosted_page_alloc_setup(size_t mib);

/* Console output into @buf (and not onto stderr) until hosted_capture_end(). */
void hosted_capture_begin(char *buf, size_t size);
void hosted_capture_end(void);

#endif

/* The fake local APIC: LVTPC and the PMIs delivered through it. A test may
 * set hosted_pmi_handler to run "in interrupt context" at delivery. */
extern u32 hosted_lvtpc;
extern unsigned int hosted_pmi_count, hosted_nmi_count;
extern void (*hosted_pmi_handler)(bool nmi);

/* Scripted traps (hosted_machine.c): what the code under test registered,
 * for the test to call as the CPU would; DR6 as the #DB handler reads it. */
#include <topaz/traps.h>
extern trap_handler_t hosted_trap_handlers[32];
extern const struct trap_trace_hooks *hosted_trace_hooks;
extern bool (*hosted_bp_fast)(struct trap_frame *f);
extern bool hosted_in_nmi, hosted_no_iret;
/* a panic's stop NMI put off to smp_stop_pending(), which runs the hook */
extern bool hosted_stop_put_off;
extern void (*hosted_stop_hook)(void);
extern u64 hosted_dr6;
