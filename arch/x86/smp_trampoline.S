/*
 * The application processors' way from the SIPI to the kernel. This is data
 * to the kernel: arch/x86/smp.c copies it to a page below 1 MiB (reserved from
 * the firmware before ExitBootServices), fills in the fields at its end and
 * points the SIPI at that page. Only offsets from the start are used, so the
 * copy runs wherever it lands: real mode finds its base in CS, and keeps it
 * in EBX through protected mode into long mode.
 */
	.section .rodata
	.balign 16
	.globl smp_trampoline_start, smp_trampoline_end
	.hidden smp_trampoline_start, smp_trampoline_end
	.code16
smp_trampoline_start:
	cli
	cld
	mov	%cs, %ax
	mov	%ax, %ds
	xor	%ebx, %ebx
	mov	%ax, %bx
	shl	$4, %ebx			/* the page's physical address */
	lgdtl	tr_gdtr - smp_trampoline_start
	mov	%cr0, %eax
	or	$1, %eax			/* PE */
	mov	%eax, %cr0
	ljmpl	*(tr_far32 - smp_trampoline_start)

	.code32
tr_prot32:
	mov	$0x10, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	mov	tr_cr4 - smp_trampoline_start(%ebx), %eax	/* PAE and the rest of the boot CPU's */
	mov	%eax, %cr4
	mov	tr_cr3 - smp_trampoline_start(%ebx), %eax	/* the kernel's page tables (below 4 GiB) */
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx				/* EFER: LME, NXE as the boot CPU */
	mov	tr_efer - smp_trampoline_start(%ebx), %eax
	xor	%edx, %edx
	wrmsr
	mov	tr_cr0 - smp_trampoline_start(%ebx), %eax	/* PG: long mode, compatibility */
	mov	%eax, %cr0
	ljmpl	*(tr_far64 - smp_trampoline_start)(%ebx)

	.code64
tr_long64:
	mov	tr_stack - smp_trampoline_start(%rbx), %rsp
	mov	tr_arg - smp_trampoline_start(%rbx), %rdi
	mov	tr_entry - smp_trampoline_start(%rbx), %rax
	xor	%ebp, %ebp			/* ends the backtrace here */
	call	*%rax
1:	cli
	hlt
	jmp	1b

	.balign 16
tr_gdt:
	.quad	0
	.quad	0x00cf9b000000ffff		/* 0x08: 32-bit code */
	.quad	0x00cf93000000ffff		/* 0x10: data */
	.quad	0x00af9b000000ffff		/* 0x18: 64-bit code */
tr_gdtr:
	.word	tr_gdtr - tr_gdt - 1
	.long	0				/* base: filled in */
	.balign 8
	.globl smp_tr_fields
	.hidden smp_tr_fields
/* struct smp_tr_fields in arch/x86/smp.c: keep in step */
smp_tr_fields:
tr_far32:	.long 0, 0x08			/* filled in: base + tr_prot32 */
tr_far64:	.long 0, 0x18			/* filled in: base + tr_long64 */
tr_cr0:		.long 0
tr_cr3:		.long 0
tr_cr4:		.long 0
tr_efer:	.long 0
tr_stack:	.quad 0
tr_entry:	.quad 0
tr_arg:		.quad 0
smp_trampoline_end:

	.globl smp_tr_off_prot32, smp_tr_off_long64, smp_tr_off_gdtr, smp_tr_off_gdt
	.hidden smp_tr_off_prot32, smp_tr_off_long64, smp_tr_off_gdtr, smp_tr_off_gdt
	.balign 4
smp_tr_off_prot32:	.long tr_prot32 - smp_trampoline_start
smp_tr_off_long64:	.long tr_long64 - smp_trampoline_start
smp_tr_off_gdtr:	.long tr_gdtr - smp_trampoline_start
smp_tr_off_gdt:		.long tr_gdt - smp_trampoline_start

	.section .note.GNU-stack, "", @progbits
