/* SPDX-License-Identifier: MIT */
/*
 * Firmware fuzz targets (fw.fuzz=NAME, issue 30): what the fuzz loop calls
 * with each input. A target registers itself with FUZZ_TARGET(var).
 */
#ifndef TOPAZ_FUZZ_H
#define TOPAZ_FUZZ_H

#include <topaz/types.h>

struct fuzz_target {
	const char *name;		/* fw.fuzz=NAME */
	const char *help;		/* one line, for fw.fuzz=list */
	/* once, in the firmware phase before the loop: locate protocols etc.;
	 * 0, or a negative errno with the reason printed (target unavailable) */
	int (*init)(void);
	/* one execution on @data[0..size): 0 ran; a positive value: the input was
	 * rejected by the target (not a crash; counted); never keeps @data */
	int (*run)(const u8 *data, size_t size);
	/* after each run: undo its effects (unload images, remove packages...);
	 * returns 0, or a negative errno when it could not (the loop stops, named) */
	int (*reset)(void);
	/* the built-in seeds */
	const u8 *const *seeds;
	const u32 *seed_sizes;
	u32 nseeds;
};

/* registration in a linker section, as WORKLOAD() does (include/topaz/workload.h) */
#define FUZZ_TARGET(var_)							\
	static const struct fuzz_target *const __fuzz_target_##var_ __used	\
		__section(".fuzz_targets") __aligned(8) = &var_

/** fuzz_target_find() - the registered target called @name, or NULL */
const struct fuzz_target *fuzz_target_find(const char *name);

#endif
