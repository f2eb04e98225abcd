/* SPDX-License-Identifier: MIT */
/*
 * The firmware phase (boot/firmware/): before ExitBootServices, with the
 * firmware still owning the machine, topaz traces firmware code (built-in
 * workloads that call firmware services, fw.run=) and names every loaded
 * image in the trace. boot/efi_main.c calls it; see docs/firmware-phase.md.
 */
#ifndef TOPAZ_FW_PHASE_H
#define TOPAZ_FW_PHASE_H

#include <topaz/types.h>

struct boot_info;

/** fw_phase_wanted() - the command line asks for a firmware phase */
bool fw_phase_wanted(void);

/**
 * fw_phase_run() - run the firmware phase: claim the trap and PMI vectors
 * from the firmware (EFI_CPU_ARCH_PROTOCOL), take memory from it, trace each
 * fw.run= workload in its own window, write the trace with every module it
 * ran named, and put everything back as it was
 * @bi: what efi_main gathered (system table, image, command line)
 * @image: topaz's EFI image handle
 *
 * With fw.then=exit (the default) it powers off and does not return.
 * Return: how many things failed (0: all went well); the boot goes on.
 */
int fw_phase_run(struct boot_info *bi, void *image);

#endif
