/* Switch to the kernel's own stack and enter kernel_main; never returns. */
	.text
	.globl handoff_to_kernel
	.hidden handoff_to_kernel
	.type handoff_to_kernel, @function
/* void handoff_to_kernel(void *arg, uintptr_t stack_top, void (*fn)(void *)) */
handoff_to_kernel:
	mov	%rsi, %rsp
	xor	%ebp, %ebp		/* ends the backtrace here */
	call	*%rdx
1:	cli
	hlt
	jmp	1b
	.size handoff_to_kernel, . - handoff_to_kernel

	.section .note.GNU-stack, "", @progbits
