/* SPDX-License-Identifier: MIT */
/*
 * Files as a target process sees them. A process in a container or chroot
 * names files relative to its own root; we reach them through
 * /proc/PID/root without letting a symlink inside that tree (which the
 * target controls) lead us back out into the host's files.
 */
#ifndef PROC_ROOT_H
#define PROC_ROOT_H

#include <stddef.h>
#include <sys/types.h>

struct diag;

/* open(2) path resolved inside the target's root (openat2 RESOLVE_IN_ROOT).
 * O_CLOEXEC is always added. Returns an fd, or -1 with d set
 * (EXIT_NO_PROCESS when the process is gone, EXIT_PERMISSION naming
 * CAP_SYS_PTRACE, EXIT_FAIL otherwise). */
int proc_root_open(pid_t pid, const char *path, int flags, struct diag *d);

/* Set by the unit tests: behave as on a kernel without openat2 (before 5.6),
 * where the same confinement is done one path component at a time. */
extern int proc_root_no_openat2;

/* 1 if the target shares our mount namespace, 0 if not, -1 if unknown. */
int proc_same_mount_ns(pid_t pid);

/* 1 if the target's root directory is ours, 0 if not, -1 if unknown. */
int proc_same_root(pid_t pid);

/* A short note for messages when the target lives in another mount
 * namespace or root, e.g. "mnt ns 4026532123 (chroot /srv/jail)". Returns the
 * note's length, 0 (buf "") when the target shares both with us, -1 if the
 * process cannot be inspected. */
int proc_ns_note(pid_t pid, char *buf, size_t len);

#endif /* PROC_ROOT_H */
