/* SPDX-License-Identifier: MIT */
/* Shared by the ptdecode host tests that run the tool itself: where it is
 * built, and a run of it with its output. */
#ifndef TOPAZ_TESTS_TRACE_TOOL_H
#define TOPAZ_TESTS_TRACE_TOOL_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "trace_helpers.h"

/* The ptdecode built beside the tests ($BUILD/tools/ptdecode), or NULL. */
static inline const char *tool(void)
{
	static char path[PATH_MAX + 32];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/../tools/ptdecode", dirname(self));
	return access(path, X_OK) ? NULL : path;
}

/* @m's bytes into a new file named after @path's template ("...XXXXXX"). */
static inline void write_temp(const struct membuf *m, char *path)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, m->p, m->len), (ssize_t)m->len);
	close(fd);
}

/* Runs ptdecode @args on @trace; its stdout and stderr in @out. */
static inline int run_tool(const char *bin, const char *args, const char *trace, char **out)
{
	char cmd[2 * PATH_MAX];
	size_t len;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1", bin, args, trace);
	p = popen(cmd, "r");
	assert_non_null(p);
	*out = NULL;
	len = 0;
	{
		FILE *m = open_memstream(out, &len);
		char buf[4096];
		size_t k;

		while ((k = fread(buf, 1, sizeof(buf), p)))
			fwrite(buf, 1, k, m);
		fclose(m);
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
