/*
 * Interrupt and exception entry: 256 stubs of 16 bytes each push the vector
 * (and a zero error code where the CPU pushes none) and join one common path
 * that saves the general registers as struct pt_regs and calls trap_dispatch.
 * #BP (vector 3) first moves the CPU's frame down, see isr_bp.
 */
#include <topaz/percpu.h>
	.text
	.balign 16
	.globl isr_stubs
	.hidden isr_stubs
isr_stubs:
	vector = 0
	.rept 256
	.balign 16
	.if vector == 3
	jmp	isr_bp
	.else
	.if (vector == 8) || (vector >= 10 && vector <= 14) || (vector == 17) || (vector == 21) || (vector == 29) || (vector == 30)
	.else
	pushq	$0
	.endif
	pushq	$vector
	jmp	isr_common
	.endif
	vector = vector + 1
	.endr

/*
 * #BP: the branch-step engine emulates the CALL under an INT3, pushing the
 * return address where the interrupted code's stack goes on. An exception
 * from ring 0 stays on that stack: the CPU's frame lies just below its RSP,
 * where the push would land. So the frame is copied five words lower (each
 * "pushq 32(%rsp)" reads the word five slots up) and the old one becomes a
 * gap the push may overwrite.
 *
 * Then the engine's common stop (trap_bp_fast: a Jcc it can finish from the
 * frame alone) runs with only the registers a C call clobbers saved; when it
 * declines, the INT3 takes the general path. isr_bp_done is where a handled
 * one leaves (the fidelity oracle looks for it).
 */
	.balign 16
isr_bp:
	pushq	32(%rsp)	/* SS */
	pushq	32(%rsp)	/* RSP */
	pushq	32(%rsp)	/* RFLAGS */
	pushq	32(%rsp)	/* CS */
	pushq	32(%rsp)	/* RIP */
	cmpq	$0, trap_bp_fast(%rip)
	je	2f
	cld
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	lea	72(%rsp), %rdi		/* the frame */
	sub	$8, %rsp		/* the call's 16-byte alignment */
	call	*trap_bp_fast(%rip)
	add	$8, %rsp
	test	%al, %al	/* POP leaves the flags alone */
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	jz	2f
	.globl isr_bp_done
	.hidden isr_bp_done
isr_bp_done:
	iretq
2:	pushq	$0
	pushq	$3
	jmp	isr_common

	.balign 16
isr_common:
	cld
	push	%rdi
	push	%rsi
	push	%rdx
	push	%rcx
	push	%rax
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%rbx
	push	%rbp
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	mov	%rsp, %rdi
	/* A frame link to the interrupted code, so backtraces run through traps. */
	mov	%rsp, %rbp
	call	trap_dispatch
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbp
	pop	%rbx
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rax
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
	add	$16, %rsp
	cmpb	$0, %gs:PERCPU_OFF_NO_IRET
	jne	isr_return_no_iret
	iretq

/*
 * A #BP handled inside an NMI handler returns without IRET, which would end
 * the NMI's blocking of NMIs early (another could then nest on its IST
 * stack). Only #BP frames come here (trap_return_without_iret()): they have
 * the gap under the interrupted RSP (isr_bp), where RFLAGS and RIP go for a
 * POPFQ; RET. IF is clear in NMI context, so nothing comes in between.
 */
isr_return_no_iret:
	movb	$0, %gs:PERCPU_OFF_NO_IRET
	/* RIP, CS, RFLAGS, RSP, SS here; two scratch registers pushed below */
	push	%rax
	push	%rbx
	mov	40(%rsp), %rbx		/* the RSP to return with */
	mov	16(%rsp), %rax		/* RIP */
	mov	%rax, -8(%rbx)
	mov	32(%rsp), %rax		/* RFLAGS */
	mov	%rax, -16(%rbx)
	pop	%rbx
	pop	%rax
	mov	24(%rsp), %rsp
	lea	-16(%rsp), %rsp
	popfq
	ret

	/* the end of the entry code: an NMI that lands in it did not interrupt traced code */
	.globl entry_text_end
	.hidden entry_text_end
entry_text_end:

/* void gdt_load(void *gdtr, u16 cs, u16 ds, u16 tss) */
	.globl gdt_load
	.hidden gdt_load
gdt_load:
	lgdt	(%rdi)
	mov	%edx, %ds
	mov	%edx, %es
	mov	%edx, %ss
	xor	%eax, %eax
	mov	%eax, %fs
	mov	%eax, %gs
	ltr	%cx
	pop	%rax		/* return address */
	push	%rsi		/* new CS */
	push	%rax
	lretq

/*
 * void fw_call_gate(u64 handler): the firmware phase hands an interrupt it
 * does not handle to the firmware's own handler, as the CPU would deliver it
 * here (RSP aligned, then SS, RSP, RFLAGS, CS, RIP): the handler's IRETQ
 * comes back to 1f with the stack as it was.
 */
	.globl fw_call_gate
	.hidden fw_call_gate
fw_call_gate:
	push	%rbp
	mov	%rsp, %rbp
	and	$-16, %rsp
	mov	%ss, %eax
	push	%rax
	push	%rbp		/* the RSP the IRETQ restores */
	pushfq
	mov	%cs, %eax
	push	%rax
	lea	1f(%rip), %rax
	push	%rax
	jmp	*%rdi
1:	pop	%rbp
	ret

	.section .note.GNU-stack, "", @progbits
