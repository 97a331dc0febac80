/* SPDX-License-Identifier: MIT */
/*
 * Why the kernel refused: naming the capability that is missing, or, when
 * every one is held, the other cause. A user who runs bpfpy with CAP_BPF and
 * CAP_PERFMON only, or as a service user, must learn from one message what
 * to grant; a root whose CAP_SYS_PTRACE is held must not be told to get it.
 */
#ifndef PRIVILEGE_H
#define PRIVILEGE_H

#include <stddef.h>
#include <stdint.h>

#define PRIV_CAP_DAC_OVERRIDE	 1
#define PRIV_CAP_DAC_READ_SEARCH 2
#define PRIV_CAP_SYS_PTRACE	 19
#define PRIV_CAP_SYS_ADMIN	 21
#define PRIV_CAP_PERFMON	 38
#define PRIV_CAP_BPF		 39

/* Our effective capability set (CapEff of /proc/self/status), 0 if it
 * cannot be read. */
uint64_t priv_caps_effective(void);

/* The explanation for EACCES/EPERM met while reading or stopping another
 * process, in parentheses, e.g. "(needs CAP_SYS_PTRACE, which bpfpy lacks:
 * it holds CAP_BPF, CAP_PERFMON; ...)". */
void priv_explain(char *buf, size_t len);

#endif /* PRIVILEGE_H */
