/* SPDX-License-Identifier: MIT */
/*
 * Workloads: the code topaz runs (and traces) as its job, chosen with run=.
 * To add one, write a function in kernel/workloads/ and register it:
 *
 *	static u64 my_work(void) { ...; return checksum; }
 *	WORKLOAD(mywork, my_work, "what it exercises");
 *
 * then boot with run=mywork (and pt=on to trace it). The returned value is
 * printed, so a run can be checked and the compiler cannot drop the work.
 */
#ifndef TOPAZ_WORKLOAD_H
#define TOPAZ_WORKLOAD_H

#include <topaz/types.h>

struct workload {
	const char *name;
	u64 (*fn)(void);
	const char *help;
	bool all_cpus;		/* runs code on every online CPU */
};

#define WORKLOAD(name_, fn_, help_)						\
	static const struct workload __workload_##name_ __used			\
		__section("workload_table") __aligned(8) = {			\
		.name = #name_, .fn = fn_, .help = help_ }
/* A workload that runs on every online CPU (run_on_each_cpu()). */
#define WORKLOAD_ALL_CPUS(name_, fn_, help_)					\
	static const struct workload __workload_##name_ __used			\
		__section("workload_table") __aligned(8) = {			\
		.name = #name_, .fn = fn_, .help = help_, .all_cpus = true }

/** workload_find() - the workload called @name, or NULL */
const struct workload *workload_find(const char *name);
/** workload_list() - print the registered workloads */
void workload_list(void);
/**
 * workload_run_list() - run each workload of @spec ("a,b,c", as @key= gave
 * it), found by @find, traced when tracing is on (NAME:untraced: never),
 * printing what each returned; a name @find does not know is said (as a @label) with @list
 * Return: how many names were unknown
 */
int workload_run_list(const char *key, const char *spec,
		      const struct workload *(*find)(const char *name), void (*list)(void),
		      const char *label);

#endif
