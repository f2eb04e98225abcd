// SPDX-License-Identifier: MIT
/*
 * The IDT and the trap dispatcher: registered handlers first, then
 * exception-table fixups, then a panic report that names the vector and
 * error code, CR2 for #PF, every register and a symbolized backtrace.
 */
#include <topaz/traps.h>
#include <topaz/extable.h>
#include <topaz/kernel.h>
#include <topaz/cpu.h>
#include <topaz/gdt.h>
#include <topaz/apic.h>
#include <topaz/paging.h>
#include <topaz/smp.h>
#include <topaz/power.h>
#include <topaz/symbols.h>
#include <topaz/bootinfo.h>

struct idt_gate {
	u16 off_lo;
	u16 sel;
	u8 ist;
	u8 type;
	u16 off_mid;
	u32 off_hi;
	u32 reserved;
} __packed;

static struct idt_gate idt[256] __aligned(16);
static trap_handler_t handlers[256];
struct fault_record last_fault;
bool trap_report_fixups;
u64 irq_counts[256];

extern const u8 isr_stubs[] __hidden;
extern const u8 entry_text_end[] __hidden;

bool trap_in_entry_code(u64 ip)
{
	return ip >= (uintptr_t)isr_stubs && ip < (uintptr_t)entry_text_end;
}

static const struct {
	const char *mnemonic, *desc;
} trap_names[32] = {
	{ "#DE", "divide error" }, { "#DB", "debug" }, { "NMI", "non-maskable interrupt" },
	{ "#BP", "breakpoint" }, { "#OF", "overflow" }, { "#BR", "bound range exceeded" },
	{ "#UD", "invalid opcode" }, { "#NM", "device not available" },
	{ "#DF", "double fault" }, { "#MF9", "coprocessor segment overrun" },
	{ "#TS", "invalid TSS" }, { "#NP", "segment not present" },
	{ "#SS", "stack-segment fault" }, { "#GP", "general protection" },
	{ "#PF", "page fault" }, { "#15", "reserved" }, { "#MF", "x87 floating-point error" },
	{ "#AC", "alignment check" }, { "#MC", "machine check" },
	{ "#XM", "SIMD floating-point error" }, { "#VE", "virtualization exception" },
	{ "#CP", "control protection" },
};

const char *trap_name(unsigned int vector, const char **desc)
{
	const char *m = vector < 32 ? trap_names[vector].mnemonic : NULL;

	if (!m) {
		if (desc)
			*desc = vector < 32 ? "reserved exception" : "interrupt";
		return vector < 32 ? "#??" : "IRQ";
	}
	if (desc)
		*desc = trap_names[vector].desc;
	return m;
}

static void set_gate(unsigned int v, unsigned int ist, u16 sel)
{
	uintptr_t a = (uintptr_t)isr_stubs + 16 * v;

	idt[v] = (struct idt_gate){
		.off_lo = (u16)a, .sel = sel, .ist = (u8)ist, .type = 0x8e,
		.off_mid = (u16)(a >> 16), .off_hi = (u32)(a >> 32),
	};
}

/* One IDT for every CPU: each loads it. */
void idt_load(void)
{
	struct {
		u16 limit;
		u64 base;
	} __packed idtr = { sizeof(idt) - 1, (u64)(uintptr_t)idt };

	__asm__ volatile("lidt %0" :: "m"(idtr));
}

void idt_init(void)
{
	for (unsigned int v = 0; v < 256; v++)
		set_gate(v, 0, KERNEL_CS);
	set_gate(X86_TRAP_DF, 1, KERNEL_CS);
	set_gate(X86_TRAP_NMI, 2, KERNEL_CS);
	set_gate(X86_TRAP_MC, 3, KERNEL_CS);
	set_gate(X86_TRAP_DB, 4, KERNEL_CS);
	idt_load();
}

/*
 * The firmware phase (boot/firmware/): topaz's IDT stands in for the
 * firmware's while boot services are live, with the firmware's code
 * selector and no IST stacks (the firmware's TSS has none). A vector topaz
 * has no handler for goes on to the firmware's own gate (its timer, its
 * devices): fw_call_gate() delivers it there again and the firmware's IRETQ
 * comes back, so the trace hooks see it arrive and return like any other.
 */
struct desc_ptr {
	u16 limit;
	u64 base;
} __packed;
static struct desc_ptr fw_idtr;
static u64 fw_gates[256];	/* the firmware's handler for each vector, 0: none */
static bool fw_mode;

void idt_firmware_enter(void)
{
	const struct idt_gate *g;
	u16 cs;

	__asm__ volatile("sidt %0" : "=m"(fw_idtr));
	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	g = (const struct idt_gate *)(uintptr_t)fw_idtr.base;
	for (unsigned int v = 0; v < 256; v++) {
		fw_gates[v] = 0;
		if (v * 16 + 15 <= fw_idtr.limit && (g[v].type & 0x80))
			fw_gates[v] = g[v].off_lo | (u64)g[v].off_mid << 16 | (u64)g[v].off_hi << 32;
		set_gate(v, 0, cs);
	}
	fw_mode = true;
	idt_load();
}

void idt_firmware_leave(void)
{
	__asm__ volatile("lidt %0" :: "m"(fw_idtr));
	fw_mode = false;
}

void trap_set_handler(unsigned int vector, trap_handler_t fn)
{
	handlers[vector & 0xff] = fn;
}

trap_handler_t trap_get_handler(unsigned int vector)
{
	return handlers[vector & 0xff];
}

void irq_set_handler(unsigned int vector, trap_handler_t fn)
{
	handlers[vector & 0xff] = fn;
}

static irq_return_hook_t irq_return_hook;

void irq_set_return_hook(irq_return_hook_t fn)
{
	WRITE_ONCE(irq_return_hook, fn);
}

static void pf_error_desc(u64 e, char *buf, size_t n)
{
	ksnprintf(buf, n, " [%s %s %s%s%s]", e & 1 ? "protection-violation" : "not-present",
		  e & 2 ? "write" : "read", e & 4 ? "user" : "kernel",
		  e & 8 ? " reserved-bit" : "", e & 16 ? " instruction-fetch" : "");
}

extern const u8 __text_start[] __hidden, __text_end[] __hidden;

/* Is @ret a return address: inside our text, right after a call instruction? */
static bool is_return_address(uintptr_t ret)
{
	const u8 *p = (const u8 *)ret;

	if (ret < (uintptr_t)__text_start + 6 || ret >= (uintptr_t)__text_end)
		return false;
	return p[-5] == 0xe8 ||					/* call rel32 */
	       (p[-2] == 0xff && (p[-1] & 0x38) == 0x10) ||	/* call *%reg */
	       (p[-3] == 0xff && (p[-2] & 0x38) == 0x10) ||	/* call *disp8(%reg) */
	       (p[-6] == 0xff && (p[-5] & 0x38) == 0x10);	/* call *disp32(%reg) */
}

static void walk_frames(uintptr_t rbp, int depth)
{
	char sym[KSYM_NAME_LEN + 24];

	for (; depth < 32 && rbp; depth++) {
		const uintptr_t *frame = (const uintptr_t *)rbp;
		uintptr_t ret;

		if ((rbp & 7) || !addr_is_mapped(rbp) || !addr_is_mapped(rbp + 15))
			break;
		ret = frame[1];
		if (!ret)
			break;
		printk(KERN_EMERG "  [%d] %#018lx %s\n", depth, (unsigned long)ret,
		       ksym_format(ret - 1, sym, sizeof(sym)));
		if (frame[0] <= rbp)	/* frames go up the stack */
			break;
		rbp = frame[0];
	}
}

void dump_backtrace(uintptr_t rip, uintptr_t rbp)
{
	char sym[KSYM_NAME_LEN + 24];

	printk(KERN_EMERG "Backtrace:\n");
	printk(KERN_EMERG "  [0] %#018lx %s\n", (unsigned long)rip, ksym_format(rip, sym, sizeof(sym)));
	walk_frames(rbp, 1);
}

/*
 * From a trap frame: a leaf function that faulted may have no frame of its
 * own, so its return address is the word at RSP. Show it, marked '?' as
 * Linux marks entries found by scanning, when it is not the frame chain's.
 */
static void dump_backtrace_regs(const struct pt_regs *r)
{
	char sym[KSYM_NAME_LEN + 24];
	int depth = 1;

	printk(KERN_EMERG "Backtrace:\n");
	printk(KERN_EMERG "  [0] %#018lx %s\n", (unsigned long)r->rip,
	       ksym_format(r->rip, sym, sizeof(sym)));
	if (addr_is_mapped(r->rsp) && !(r->rsp & 7)) {
		uintptr_t top = *(const uintptr_t *)r->rsp;
		bool chained = addr_is_mapped(r->rbp) && !(r->rbp & 7) &&
			       ((const uintptr_t *)r->rbp)[1] == top;

		if (!chained && is_return_address(top)) {
			printk(KERN_EMERG "  [1] %#018lx ? %s\n", (unsigned long)top,
			       ksym_format(top - 1, sym, sizeof(sym)));
			depth = 2;
		}
	}
	walk_frames(r->rbp, depth);
}

void show_regs(const struct pt_regs *r)
{
	char sym[KSYM_NAME_LEN + 24];

	printk(KERN_EMERG "RIP: %04llx:%#018llx %s\n", r->cs,
	       r->rip, ksym_format(r->rip, sym, sizeof(sym)));
	printk(KERN_EMERG "RSP: %04llx:%#018llx RFLAGS: %#010llx\n", r->ss,
	       r->rsp, r->rflags);
	printk(KERN_EMERG "RAX: %#018llx RBX: %#018llx RCX: %#018llx\n", r->rax,
	       r->rbx, r->rcx);
	printk(KERN_EMERG "RDX: %#018llx RSI: %#018llx RDI: %#018llx\n", r->rdx,
	       r->rsi, r->rdi);
	printk(KERN_EMERG "RBP: %#018llx R08: %#018llx R09: %#018llx\n", r->rbp,
	       r->r8, r->r9);
	printk(KERN_EMERG "R10: %#018llx R11: %#018llx R12: %#018llx\n", r->r10,
	       r->r11, r->r12);
	printk(KERN_EMERG "R13: %#018llx R14: %#018llx R15: %#018llx\n", r->r13,
	       r->r14, r->r15);
	printk(KERN_EMERG "CR0: %#018llx CR2: %#018llx CR3: %#018llx CR4: %#018llx\n",
	       read_cr0(), read_cr2(),
	       read_cr3(), read_cr4());
	dump_backtrace_regs(r);
}

static void report_exception(const struct pt_regs *r, const char *what)
{
	const char *desc, *m = trap_name((unsigned int)r->vector, &desc);
	char extra[96] = "";

	if (r->vector == X86_TRAP_PF)
		pf_error_desc(r->error_code, extra, sizeof(extra));
	printk(KERN_EMERG "%s: exception %s (%s, vector %llu), error code %#llx%s\n", what, m, desc,
	       r->vector, r->error_code, extra);
	if (r->vector == X86_TRAP_PF || r->vector == X86_TRAP_DF)
		printk(KERN_EMERG "CR2 (faulting address): %#018llx\n", read_cr2());
	if (r->vector == X86_TRAP_DF && boot_info) {
		/* A #DF whose last page fault hit a stack guard page is a stack overflow. */
		u64 cr2 = read_cr2();
		const char *which = NULL;
		char buf[48];

		for (int i = 0; i <= NR_IST_STACKS; i++)
			if (cr2 >= stack_guard(boot_info, i) && cr2 < stack_guard(boot_info, i) + 4096)
				which = i ? "the boot CPU's IST" : "the boot";
		if (!which)
			which = smp_stack_guard_name(cr2, buf, sizeof(buf));
		if (which)
			printk(KERN_EMERG "stack overflow: CR2 is in the guard page below %s stack\n", which);
	}
	show_regs(r);
}

static const struct trap_trace_hooks *trace_hooks;
DEFINE_PER_CPU(struct trap_cpu, trap_cpu);
bool (*trap_bp_fast)(struct trap_frame *f);	/* entry.S: isr_bp */

void trap_set_bp_fast(bool (*fn)(struct trap_frame *f))
{
	WRITE_ONCE(trap_bp_fast, fn);
}

bool trap_in_nmi(void)
{
	return this_cpu_ptr(trap_cpu)->nmi_depth != 0;
}

void trap_return_without_iret(void)
{
	this_cpu_ptr(percpu_hdrs)->no_iret = 1;	/* entry.S reads it through GS */
}

void trap_set_trace_hooks(const struct trap_trace_hooks *h)
{
	trace_hooks = h;
}


static void dispatch(struct pt_regs *regs);

static __noinline void trap_dispatch_full(struct pt_regs *regs);

void trap_dispatch(struct pt_regs *regs)
{
	/* The branch-step engine's INT3s come by the thousand: its #BP handler
	 * first, no tracing hooks (the vector is the engine's own); what it does
	 * not claim takes the full path. */
	struct trap_cpu *tc = this_cpu_ptr(trap_cpu);

	if (regs->vector == X86_TRAP_BP && handlers[X86_TRAP_BP] && tc->nesting < 8) {
		bool done;

		tc->nesting++;
		done = handlers[X86_TRAP_BP](regs);
		tc->nesting--;
		if (likely(done)) {
			irq_counts[X86_TRAP_BP]++;
			return;
		}
	}
	trap_dispatch_full(regs);
}

static __noinline void trap_dispatch_full(struct pt_regs *regs)
{
	const struct trap_trace_hooks *h = READ_ONCE(trace_hooks);
	struct trap_cpu *tc = this_cpu_ptr(trap_cpu);
	bool traced = h && tc->nesting == 0 && regs->vector != X86_TRAP_DB &&
		      regs->vector != X86_TRAP_BP;

	/* the hooks count as handler code too: what they call is not traced */
	tc->nesting++;
	if (traced)
		h->enter(regs);	/* in a code cache: RIP becomes the original's */
	if (tc->nesting == 1) {
		tc->outer_rip = regs->rip;
		tc->outer_regs = regs;
	}
	if (tc->nesting > 8) {
		/* a handler that faults in itself: say so before the stack runs out */
		tc->nesting = 0;
		report_exception(regs, "PANIC (traps nested 9 deep)");
		panic_finish("trap recursion");
	}
	if (regs->vector == X86_TRAP_NMI) {
		/* another CPU's panic stops this one here, or at the end of the
		 * container write or trace unit call it interrupted (then the
		 * NMI is dealt with: not the "unhandled NMI" panic, which left
		 * the write unfinished and the panicking CPU waiting for its
		 * lock: a hang) */
		enum smp_stop_when put_off = smp_stop_nmi(regs);

		tc->nmi_depth++;
		if (put_off == SMP_STOP_NOW)
			dispatch(regs);
		else if (put_off == SMP_STOP_PUT_OFF && handlers[X86_TRAP_NMI])
			handlers[X86_TRAP_NMI](regs);	/* a PMI NMI with it */
		tc->nmi_depth--;
	} else {
		irq_return_hook_t ret_hook;

		dispatch(regs);
		ret_hook = READ_ONCE(irq_return_hook);
		if (ret_hook && regs->vector >= 32 && tc->nesting == 1)
			ret_hook(regs);	/* before the engine's exit: it may move the return */
	}
	if (traced)
		h->exit(regs);
	tc->nesting--;
}

static void dispatch(struct pt_regs *regs)
{
	unsigned int v = (unsigned int)regs->vector;
	trap_handler_t h = handlers[v];

	irq_counts[v]++;
	if (v >= 32) {
		if (!h && fw_mode && fw_gates[v]) {
			fw_call_gate(fw_gates[v]);	/* it sends its own EOI */
			return;
		}
		if (v == SPURIOUS_VECTOR)
			return;
		if (!h || !h(regs))
			printk(KERN_WARNING "traps: unexpected interrupt, vector %u\n", v);
		apic_eoi();
		return;
	}
	if (h && h(regs))
		return;

	uintptr_t fixup = search_exception_table(regs->rip);
	if (fixup && v != X86_TRAP_DF && v != X86_TRAP_MC) {
		last_fault = (struct fault_record){
			.vector = v, .error_code = regs->error_code, .rip = regs->rip,
			.cr2 = v == X86_TRAP_PF ? read_cr2() : 0, .fixup = fixup,
			.count = last_fault.count + 1,
		};
		if (trap_report_fixups)
			report_exception(regs, "fixup");
		regs->rip = fixup;
		return;
	}
	report_exception(regs, "PANIC");
	panic_finish("unhandled exception");
}
