/* SPDX-License-Identifier: MIT */
/*
 * What bpfpy reads about a process from /proc (and the host's CPUs from
 * /sys), in one place: its stat line (state, parent, start time), comm,
 * the identity of its executable, a status field, our own capabilities and
 * the Yama ptrace scope. PID-namespace translation is in proc_ns.h. Every
 * reader here is bounded (one line, a fixed buffer) and tells "gone" apart
 * from a value.
 */
#ifndef PROC_H
#define PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The fields of /proc/PID/stat bpfpy uses. */
struct proc_stat {
	char state; /* R, S, D, Z, X, t, T, ... */
	pid_t ppid;
	unsigned long long starttime; /* clock ticks since boot: a PID's identity */
};

/* Parse a stat line. comm, between the first '(' and the LAST ')', may hold
 * spaces, parentheses and ") " itself, so fields are counted after the last
 * ')'. 0, or -1 if the line is not one. */
int proc_stat_parse(const char *line, struct proc_stat *st);

/* /proc/PID/stat, or /proc/PID/task/TID/stat when tid > 0. 0, or -1 if the
 * process (thread) is gone or unreadable. */
int proc_stat_read(pid_t pid, pid_t tid, struct proc_stat *st);

/* Shorthands: 0 when the process is gone. */
unsigned long long proc_starttime(pid_t pid);
pid_t proc_ppid(pid_t pid);

/*
 * A pidfd (close-on-exec) for pid, if pid is still the process that
 * started at starttime: the fd is opened first and the start time read
 * after, so a PID reused in between is refused. -1 when there is none to
 * have (no pidfd_open before Linux 5.3, no fd left, gone, reused).
 *
 * Why: a pidfd names one process, not a number, and polls readable once
 * it has exited (a zombie too). One poll() over them all tells which
 * targets ended, where kill(pid, 0) per target plus a /proc/PID/stat read
 * to tell a reused PID apart cost `record -a` about a seventh of its
 * steady CPU.
 */
int proc_pidfd_open(pid_t pid, unsigned long long starttime);
/* The state letter, 0 if gone. */
char proc_state(pid_t pid, pid_t tid);

/* /proc/PID/comm into buf without its newline ("?" if gone). */
void proc_comm(pid_t pid, char *buf, size_t len);
/* A thread's OS name, /proc/PID/task/TID/comm, into buf without its
 * newline: 0, or -1 (buf "?") if the thread is gone. Raw bytes as the
 * thread set them (prctl PR_SET_NAME, Python 3.14+ threading): escape them
 * before printing. */
int proc_thread_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* Identity (device, inode) of the file /proc/PID/exe names: it changes when
 * the process execs another program. 0, or -1 if the process is gone. */
int proc_exe_id(pid_t pid, unsigned long long *dev, unsigned long long *ino);

/* "Field:\t<int>" from /proc/PID/task/TID/status (e.g. "TracerPid"); -1 if
 * absent or gone. */
long proc_status_field(pid_t pid, pid_t tid, const char *field);

/* The credentials a process opens files with: its fsuid and fsgid and its
 * supplementary groups, from /proc/PID/status (host ids, as our namespace
 * sees them). Groups past PROC_MAX_GROUPS, or past the status text read,
 * are left out: fewer rights, never more. */
#define PROC_MAX_GROUPS 64
struct proc_creds {
	uint32_t fsuid, fsgid;
	uint32_t groups[PROC_MAX_GROUPS];
	uint32_t ngroups;
};
/* From status text (the whole file): 0, or -1 when Uid or Gid is absent. */
int proc_parse_creds(const char *status, struct proc_creds *c);
/* Of pid: 0, or -1 (gone). */
int proc_creds(pid_t pid, struct proc_creds *c);

/* The CapEff mask from status text (the whole file). 0, or -1 if absent. */
int proc_parse_cap_eff(const char *status, uint64_t *eff);
/* Our own effective set (CapEff of /proc/self/status): 0, or -1. */
int proc_self_cap_eff(uint64_t *eff);
/* 1 if we hold capability cap (CAP_* number) in our effective set. */
int proc_self_has_cap(int cap);

/*
 * The cgroup a process is in, as the host sees it: the cgroup v2 line
 * ("0::/system.slice/docker-ID.scope") of /proc/PID/cgroup, else (a v1
 * host) the first controller line whose path is not "/", else "/". Into
 * buf (at most len - 1 bytes of it; /proc/PID/cgroup is read at most 4 KiB).
 * The path holds what its creators named it: any byte but '/' and NUL,
 * newlines too (escape it). 0, or -1 if the process is gone or the file
 * holds no cgroup line.
 */
int proc_cgroup(pid_t pid, char *buf, size_t len);
/* The same from the file's text (for tests). */
int proc_cgroup_parse(const char *text, char *buf, size_t len);
/*
 * The container a cgroup path names, by the shapes the runtimes give it
 * (the path component nearest the leaf that has one wins, so a systemd
 * inside the container, ".../docker-ID.scope/init.scope", still names
 * ID): docker-ID.scope (docker with systemd), /docker/ID (cgroupfs),
 * cri-containerd-ID.scope and crio-ID.scope (Kubernetes under systemd),
 * libpod-ID.scope (podman; libpod-conmon-ID.scope is its monitor, not the
 * container), and a bare ID component below kubepods, docker or libpod
 * (cgroupfs drivers). ID is 64 lowercase hex digits, nothing else. Into
 * id (at least 65 bytes): 1 when found, 0 when not.
 */
int cgroup_container_id(const char *path, char *id, size_t len);

/* kernel.yama.ptrace_scope (0-3), or -1 without Yama. */
int proc_yama_ptrace_scope(void);

/* Online CPUs as a list, from /sys/devices/system/cpu/online. Returns count,
 * or -1 if unreadable. */
int online_cpus(int *cpus, int max);

#endif /* PROC_H */
