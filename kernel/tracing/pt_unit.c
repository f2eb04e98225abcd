// SPDX-License-Identifier: MIT
/*
 * Which trace unit answers: pt.model=, pt.profile= and pt.skid= choose whether
 * and how the software trace unit is installed (the model itself reads no
 * command line; the driver cannot tell it from silicon). The one bring-up
 * path of the kernel and the firmware phase, and the one file of the session
 * that calls the model (docs/architecture.md names each call and why).
 */
#define pr_fmt(fmt) "pt: " fmt
#include <topaz/tracing.h>
#include "session.h"
#include <topaz/pt_model.h>
#include <topaz/pt.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/arch.h>
#include <topaz/smp.h>

/* pt.model=, pt.profile=, pt.skid=: how the software trace unit is installed. */
enum { MODEL_AUTO, MODEL_ON, MODEL_OFF };
static int model_param = MODEL_AUTO;
static const char *profile_param;
static u64 skid_param = PT_MODEL_DEFAULT_SKID;

static const char *const model_names[] = { "auto", "on", "off", NULL };
KPARAM_ENUM("pt.model", pt_model, &model_param, model_names,
	    "Intel PT trace unit model: auto (when the CPU lacks PT), on, off");

static int set_profile(const char *val, char *why, size_t whylen)
{
	char names[96];

	if (!val || !*val || !pt_profile_find(val)) {
		pt_profile_list(names, sizeof(names));
		ksnprintf(why, whylen, "expected one of: %s", names);
		return -EINVAL;
	}
	profile_param = val;
	return 0;
}
KPARAM_CUSTOM("pt.profile", pt_profile, set_profile,
	      "CPU profile the PT model presents: broadwell, skylake (default), tigerlake, arrowlake");
KPARAM_UINT("pt.skid", pt_skid, &skid_param, 0, 1u << 20,
	    "PT model: bytes written after a ToPA INT region fills before the PMI is taken");

/* pt.caps: CPUID leaf 0x14 decoded, once, from whichever trace unit answers */
static bool caps_param;
KPARAM_BOOL("pt.caps", pt_caps, &caps_param,
	    "print CPUID leaf 0x14 decoded, perf's caps names (and stop, unless run= or test= is given)");

bool pt_unit_caps_asked(void)
{
	return caps_param;
}

static void print_caps_once(void)
{
	static bool printed;

	if (caps_param && !printed) {
		printed = true;
		pt_caps_print();
	}
}

int pt_unit_boot(void)
{
	struct pt_model_config cfg;
	int ret;

	if (model_param == MODEL_OFF) {
		pr_info("the software trace unit is off (pt.model=off)\n");
		print_caps_once();
		return 0;
	}
	ret = pt_model_init(profile_param, model_param == MODEL_ON);
	if (ret > 0) {
		pt_model_get_config(&cfg);
		cfg.pmi_skid = (u32)skid_param;
		pt_model_set_config(&cfg);
		/* Its clock starts at the CPU's TSC, as a PT CPU's TSC packets
		 * carry it: never 0 (perf's decoder takes a zero TSC for "no
		 * timestamp yet", and perf 6.1 then crashes walking code). */
		pt_model_set_tsc(rdtsc());
		pr_info("no Intel PT in this CPU: the software trace unit answers (profile %s: %s)\n",
			pt_model_profile()->name, pt_model_profile()->cpu);
	}
	print_caps_once();
	return ret;
}

static void unit_on_this_cpu(void *unused)
{
	pt_model_init_this_cpu();
}

void pt_unit_boot_cpus(void)
{
	if (pt_model_active())
		on_each_cpu(unit_on_this_cpu, NULL, true);
}

void pt_unit_describe(struct pt_session_unit *unit)
{
	unit->model = pt_model_active();
	unit->bytes_lost = unit->model ? pt_model_bytes_lost : NULL;	/* the model counts */
}

bool pt_unit_busy(void)
{
	return pt_model_busy();
}

bool pt_unit_counts(unsigned int cpu, struct pt_unit_counts *c)
{
	struct pt_model_stats ms;

	if (!pt_model_active())
		return false;
	pt_model_get_stats_cpu(cpu, &ms);
	c->produced = ms.bytes;
	c->stored = ms.bytes_written;
	c->lost = ms.bytes_lost;
	c->pmis = ms.pmis;
	return true;
}
