/* SPDX-License-Identifier: MIT */
/* Exceptions and interrupts. */
#ifndef TOPAZ_TRAPS_H
#define TOPAZ_TRAPS_H

#include <topaz/types.h>
#include <topaz/percpu.h>

/* The frame entry.S builds: general registers, then vector and error code,
 * then what the CPU pushed. Handlers may change it (rip, rflags) to resume
 * elsewhere. */
struct pt_regs {
	u64 r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	u64 rax, rcx, rdx, rsi, rdi;
	u64 vector, error_code;
	u64 rip, cs, rflags, rsp, ss;
};

enum {
	X86_TRAP_DE = 0, X86_TRAP_DB, X86_TRAP_NMI, X86_TRAP_BP, X86_TRAP_OF, X86_TRAP_BR,
	X86_TRAP_UD, X86_TRAP_NM, X86_TRAP_DF, X86_TRAP_OLD_MF, X86_TRAP_TS, X86_TRAP_NP,
	X86_TRAP_SS, X86_TRAP_GP, X86_TRAP_PF, X86_TRAP_SPURIOUS, X86_TRAP_MF, X86_TRAP_AC,
	X86_TRAP_MC, X86_TRAP_XF, X86_TRAP_VE, X86_TRAP_CP,
};

/* A handler returns true when it dealt with the event. */
typedef bool (*trap_handler_t)(struct pt_regs *regs);

/**
 * idt_init() - fill the IDT (every vector to entry.S's stubs, IST stacks for
 * #DF, NMI, #MC, #DB) and load it
 */
void idt_init(void);
/** idt_load() - load the one IDT on this CPU (each CPU does, as it starts) */
void idt_load(void);
/**
 * trap_dispatch() - entry.S's common path calls it with the frame (@regs) of
 * every exception and interrupt
 */
void trap_dispatch(struct pt_regs *regs);
/**
 * fw_call_gate() - entry.S: deliver the interrupt on the firmware's gate
 * @handler; its IRETQ comes back
 */
void fw_call_gate(u64 handler);
/**
 * idt_firmware_enter() - while boot services are live: topaz's IDT in place
 * of the firmware's (its code selector, no IST); vectors topaz has no
 * handler for are passed on to the firmware's gates
 */
void idt_firmware_enter(void);
/** idt_firmware_leave() - the firmware's IDT back, as it was */
void idt_firmware_leave(void);
/** trap_set_handler() - handle exception (or NMI) @vector before the fixup/panic path */
void trap_set_handler(unsigned int vector, trap_handler_t fn);
/** trap_get_handler() - the handler of @vector now (to chain to it), or NULL */
trap_handler_t trap_get_handler(unsigned int vector);
/** irq_set_handler() - handle interrupt @vector (32-255); EOI is sent after it */
void irq_set_handler(unsigned int vector, trap_handler_t fn);

/* Called as an interrupt returns; may change @regs (rip, rsp, rflags) to resume elsewhere. */
typedef void (*irq_return_hook_t)(struct pt_regs *regs);
/**
 * irq_set_return_hook() - call @fn as each interrupt (vector 32-255, not
 * NMI) that came from code outside any trap handler is about to return there
 * @fn: the hook (NULL: none); one at a time, a second replaces the first
 *
 * @fn runs after the vector's handler (and the firmware's gate, in the
 * firmware phase) with the frame the interrupt returns to: the interrupted
 * RIP as the trace engine reports it (the original code's, not a code
 * cache's), before the engine's exit hook sees where execution goes on.
 * It runs with interrupts off, at trap_depth() 1, on every tick: keep it
 * short. fw.fuzz.timeout= uses it to end an execution that hangs at any TPL
 * (the firmware's TPL holds events back, not interrupts).
 */
void irq_set_return_hook(irq_return_hook_t fn);

/* The last fault that an exception-table fixup recovered from. */
struct fault_record {
	u64 vector, error_code, rip, cr2, fixup;
	u64 count;
};
extern struct fault_record last_fault;
/* When true, a fault recovered by a fixup is reported in full (tests read it). */
extern bool trap_report_fixups;

/** trap_name() - "#PF" style mnemonic and a description for exception @vector */
const char *trap_name(unsigned int vector, const char **desc);
/** show_regs() - print the registers and a symbolized backtrace of @regs */
void show_regs(const struct pt_regs *regs);
/** dump_backtrace() - print a frame-pointer backtrace starting at @rbp */
void dump_backtrace(uintptr_t rip, uintptr_t rbp);

extern u64 irq_counts[256];

/*
 * The trace engine's view of asynchronous events: @enter runs first for any
 * interrupt or exception that interrupts code outside a trap handler (depth
 * 0), @exit last, with the frame the handler leaves (where execution goes on).
 * The #DB and #BP vectors are the engine's own and are not reported.
 */
struct trap_trace_hooks {
	void (*enter)(struct pt_regs *regs);
	void (*exit)(struct pt_regs *regs);
};
/**
 * trap_set_trace_hooks() - install @h, the trace engine's view of interrupts
 * and exceptions (NULL: none)
 */
void trap_set_trace_hooks(const struct trap_trace_hooks *h);
/** trap_depth() - how many trap handlers are running (0 in normal code) */
/* Per CPU: how many trap handlers run (trap_depth()), of which NMIs. */
struct trap_cpu {
	unsigned int nesting, nmi_depth;
	u64 outer_rip;		/* where the outermost trap handler running interrupted */
	struct pt_regs *outer_regs;	/* its frame (its IRETQ's target can be changed) */
};
DECLARE_PER_CPU(struct trap_cpu, trap_cpu);

/**
 * trap_in_entry_code() - is @ip in the interrupt entry code (the stubs and
 * the common path)? An NMI can land there, before the interrupted
 * exception's handler runs: that is not traced code.
 */
bool trap_in_entry_code(u64 ip);

/** trap_outer_rip() - inside a handler: the RIP the outermost trap interrupted */
static inline u64 trap_outer_rip(void)
{
	return READ_ONCE(this_cpu_ptr(trap_cpu)->outer_rip);
}

/**
 * trap_outer_regs() - inside a handler: the outermost trap's frame, where
 * its return goes (a handler deeper down may send it elsewhere)
 */
static inline struct pt_regs *trap_outer_regs(void)
{
	return READ_ONCE(this_cpu_ptr(trap_cpu)->outer_regs);
}

static inline unsigned int trap_depth(void)
{
	return READ_ONCE(this_cpu_ptr(trap_cpu)->nesting);
}

/* What the CPU pushes on an exception or interrupt (64-bit mode). */
struct trap_frame {
	u64 rip, cs, rflags, rsp, ss;
};

/**
 * trap_set_bp_fast() - a #BP handler that runs before the general entry
 * saves all the registers (arch/x86/entry.S, isr_bp): it sees only the CPU's
 * frame, may change its RIP, and returns true when it dealt with the INT3,
 * false (having changed nothing) to let the INT3 take the general path.
 * The branch-step engine's common stop. NULL removes it.
 */
void trap_set_bp_fast(bool (*fn)(struct trap_frame *f));
/** trap_in_nmi() - is an NMI handler running (this handler is inside one)? */
bool trap_in_nmi(void);
/**
 * trap_return_without_iret() - the #BP being handled returns by POPFQ; RET,
 * not IRET (which would unblock NMIs inside an NMI handler). #BP only: its
 * entry (isr_bp) leaves room under the interrupted stack pointer.
 */
void trap_return_without_iret(void);

#endif
