// SPDX-License-Identifier: MIT
/* The power-off hook list. */
#include <topaz/shutdown.h>

static LIST_HEAD(hooks);
static bool ran;

void shutdown_hook_register(struct shutdown_hook *h)
{
	list_add_tail(&h->link, &hooks);
}

void run_shutdown_hooks(void)
{
	struct shutdown_hook *h;

	if (ran)
		return;
	ran = true;
	list_for_each_entry(h, &hooks, link)
		h->fn();
}
