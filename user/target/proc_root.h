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
#include <stdint.h>
#include <sys/types.h>

struct diag;

/* open(2) path resolved inside the target's root (openat2 RESOLVE_IN_ROOT).
 * O_CLOEXEC is always added. Returns an fd, or -1 with d set
 * (EXIT_NO_PROCESS when the process is gone, EXIT_PERMISSION naming
 * CAP_SYS_PTRACE, EXIT_FAIL otherwise). */
int proc_root_open(pid_t pid, const char *path, int flags, struct diag *d);

/*
 * The one way bpfpy opens a file that a target names, for reading. The name
 * is resolved inside the target's root (as proc_root_open) to an O_PATH
 * handle, which opens nothing and so cannot block; fstat must find a
 * regular file (not a FIFO, device, socket or directory the target planted
 * under the name); only then is the same inode opened for real, through
 * /proc/self/fd/N, with O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY.
 * Returns an fd, or -1 with d set as proc_root_open (EXIT_FAIL naming the
 * file type when it is not a regular file).
 */
int proc_root_open_file(pid_t pid, const char *path, struct diag *d);

/*
 * A file a target names (a source file, say), read whole as the target
 * itself could read it, for a root bpfpy must not copy into its outputs
 * what the target could not see: /etc/shadow named by an unprivileged
 * target, or a symlink to it. A child process takes the target's fsuid,
 * fsgid and supplementary groups (proc_creds; none of our capabilities
 * survive it unless the target's fsuid is 0) and opens the name with
 * proc_root_open_file (inside the target's root, a regular file only, never
 * blocking on a FIFO or device); a relative name is taken from the target's
 * current directory. The child is killed when it has not answered within
 * timeout_ms (a file on a hung or target-served filesystem), so the call is
 * bounded. A file over max bytes is not read.
 * 0 with *out (malloc'd, NUL-terminated, *len bytes besides the NUL), or -1
 * with d set: EXIT_NO_PROCESS for a process gone, EXIT_PERMISSION for a
 * file the target could not read itself, EXIT_FAIL otherwise (what it is,
 * its size, the deadline), each message naming pid and path.
 */
int proc_root_read_as_target(pid_t pid, const char *path, size_t max, int timeout_ms, char **out,
			     size_t *len, struct diag *d);

/* The same through the kernel's own handle on a mapping of pid,
 * /proc/PID/map_files/START-END (reaches deleted and replaced files; needs
 * CAP_SYS_ADMIN). */
int proc_map_file_open(pid_t pid, uint64_t start, uint64_t end, struct diag *d);

/* A file of pid by any of the names bpfpy keeps for one:
 * /proc/PID/map_files/START-END, /proc/PID/root/PATH, or a path as
 * /proc/PID/maps prints it (host-relative for a chroot in our mount
 * namespace: translated into the target's root first, never opened on the
 * host). */
int proc_target_file_open(pid_t pid, const char *path, struct diag *d);

/* A path as /proc/PID/maps prints it, made relative to the target's root:
 * the same path for a target in our root or another mount namespace; for a
 * chroot in our namespace, the path with the chroot's directory cut off.
 * 0, or -1 if the path lies outside the target's root. */
int proc_root_path(pid_t pid, const char *maps_path, char *out, size_t len);

/* For files bpfpy itself is told to read (its command line, tests), opened
 * by the same rules except confinement: O_PATH, S_ISREG, reopen. dirfd as in
 * openat(2). */
int open_regular_nonblock(int dirfd, const char *path, struct diag *d);

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
