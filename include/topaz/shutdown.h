/* SPDX-License-Identifier: MIT */
/* Work to do before power-off: reports (probe counts, statistics), flushing trace. */
#ifndef TOPAZ_SHUTDOWN_H
#define TOPAZ_SHUTDOWN_H

#include <topaz/list.h>

struct shutdown_hook {
	const char *name;
	void (*fn)(void);
	struct list_head link;
};

/** shutdown_hook_register() - run @h->fn at power-off, in registration order */
void shutdown_hook_register(struct shutdown_hook *h);
/** run_shutdown_hooks() - run every registered hook once */
void run_shutdown_hooks(void);

#endif
