/* SPDX-License-Identifier: MIT */
/*
 * The translating engine's runtime (kernel/trace_engine/xlat.h): what
 * translated code calls when it cannot go on by itself. Each saves every
 * register and RFLAGS, runs its C half with interrupts off (an interrupt
 * comes after the POPFQ, at xlat_rt_ret, where the engine knows the place:
 * the address about to be returned to), and returns into the cache.
 *
 *   xlat_rt_link    jumped to with [edge id]: a direct edge's first run
 *   xlat_rt_lookup  jumped to with [target]: an indirect target not in the table
 *   xlat_rt_flush   called by a Jcc's stub whose inline TNT bit filled the packet
 *
 * Both replace the word on top with the cache address to go to and RET
 * there. (A full record buffer is not a call: its guard page faults.)
 */
	.text

/* After SAVE, from %rbx: r15 0 ... r8 56, rbp 64, rdi 72, rsi 80, rbx 88,
 * rdx 96, rcx 104, rax 112, rflags 120, then the word pushed for us (128). */
.macro SAVE
	pushfq
	cli
	push	%rax
	push	%rcx
	push	%rdx
	push	%rbx
	push	%rsi
	push	%rdi
	push	%rbp
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	mov	%rsp, %rbx
	and	$-16, %rsp
.endm

/* Jumped to with a word on the stack: @fn(word) says where to go; RET there. */
.macro RT_ENTRY name, fn
	.globl	\name
	.hidden	\name
\name:
	SAVE
	mov	128(%rbx), %rdi
	call	\fn
	mov	%rax, 128(%rbx)
	jmp	xlat_rt_tail
.endm

	RT_ENTRY xlat_rt_link, xlat_rt_link_c
	RT_ENTRY xlat_rt_lookup, xlat_rt_lookup_c
	RT_ENTRY xlat_rt_flush, xlat_rt_flush_c

xlat_rt_tail:
	mov	%rbx, %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rbp
	pop	%rdi
	pop	%rsi
	pop	%rbx
	pop	%rdx
	pop	%rcx
	pop	%rax
	popfq
	.globl	xlat_rt_ret
	.hidden	xlat_rt_ret
xlat_rt_ret:
	ret
	.section .note.GNU-stack,"",@progbits
