/* SPDX-License-Identifier: MIT */
/* boot/'s own entry points, which no other subsystem calls. */
#ifndef TOPAZ_BOOT_INTERNAL_H
#define TOPAZ_BOOT_INTERNAL_H

#include <efi.h>
#include <topaz/types.h>

/* efi_main.c: the image's entry point, which GNU-EFI's crt0 calls. */
EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

/* handoff.S: switch to @stack_top and call @fn(@arg); does not return. */
void handoff_to_kernel(void *arg, uintptr_t stack_top, void (*fn)(void *)) __noreturn;

#endif
