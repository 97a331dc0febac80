// SPDX-License-Identifier: MIT
#include "privilege.h"
#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t priv_caps_effective(void)
{
	uint64_t eff;

	return proc_self_cap_eff(&eff) ? 0 : eff;
}

void priv_explain(char *buf, size_t len)
{
	static const struct {
		int cap;
		const char *name;
	} known[] = {
	    {PRIV_CAP_BPF, "CAP_BPF"},
	    {PRIV_CAP_PERFMON, "CAP_PERFMON"},
	    {PRIV_CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
	    {PRIV_CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH"},
	    {PRIV_CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE"},
	    {PRIV_CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	};
	uint64_t caps = priv_caps_effective();
	unsigned uid = (unsigned)geteuid();
	char held[160] = "";
	int yama = proc_yama_ptrace_scope();

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (!((caps >> known[i].cap) & 1))
			continue;
		size_t n = strlen(held);

		snprintf(held + n, sizeof(held) - n, "%s%s", n ? ", " : "", known[i].name);
	}
	if (!((caps >> PRIV_CAP_SYS_PTRACE) & 1)) {
		snprintf(buf, len,
			 "(needs CAP_SYS_PTRACE to read a process of another user or with more "
			 "capabilities; bpfpy runs as uid %u holding %s: grant CAP_SYS_PTRACE, "
			 "or run as root with every capability)",
			 uid, held[0] ? held : "no capability");
	} else if (uid != 0 && !((caps >> PRIV_CAP_DAC_READ_SEARCH) & 1) &&
		   !((caps >> PRIV_CAP_DAC_OVERRIDE) & 1)) {
		snprintf(buf, len,
			 "(CAP_SYS_PTRACE is held, but uid %u may not open the target's files: "
			 "needs CAP_DAC_READ_SEARCH too, or run as root)",
			 uid);
	} else if (yama == 3) {
		snprintf(buf, len,
			 "(CAP_SYS_PTRACE is held, but kernel.yama.ptrace_scope=3 forbids "
			 "reading and tracing other processes for everyone until reboot)");
	} else {
		/* Every capability check of the kernel passes for us, so the
		 * refusal comes from a policy above them: an LSM, or a sandbox
		 * such as Landlock, which forbids ptrace access from inside the
		 * sandbox to a process outside it (root meets this with the pid 1
		 * of a sandbox that runs it). */
		snprintf(buf, len,
			 "(bpfpy holds %s, so no capability is missing: a security policy "
			 "refuses it -- bpfpy runs in a sandbox (Landlock, a container, seccomp) "
			 "that the target is outside of, or an LSM (SELinux, AppArmor) forbids "
			 "it; run bpfpy where the target is, e.g. in its container)",
			 held);
	}
}
