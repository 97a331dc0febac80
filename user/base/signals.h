/* SPDX-License-Identifier: MIT */
/*
 * The one place that handles signals, for every command.
 *
 * A signal that stops or ends bpfpy must first give back what bpfpy holds:
 * a target's threads in ptrace stops (the release hook, set by ptrace_stop),
 * the children it started (the oracle's targets, SIGKILLed and reaped), and
 * the temporary files and directories it created (a hidden .tmp output, the
 * oracle's /tmp/bpfpy-oracle.* directories). Then it stops or dies with the
 * default action, as if no handler had been installed, so that the shell sees
 * the real cause.
 *
 * Handled: every signal whose default action ends the process (HUP, INT,
 * QUIT, PIPE, ALRM, TERM, USR1, USR2, XCPU, XFSZ, VTALRM) and the job-control
 * stops (TSTP, TTIN, TTOU). On a stop the target is resumed first, bpfpy then
 * stops; on SIGCONT it carries on, and whatever held a stopped target fails
 * cleanly (signals_released() says why). SIGSTOP and SIGKILL cannot be
 * caught: after SIGKILL the kernel detaches the tracees; during SIGSTOP the
 * target stays stopped until bpfpy is continued.
 *
 * bpfpy is single-threaded: the handler runs on the thread that owns the
 * stoppers. Everything the handler does is async-signal-safe (syscalls only).
 */
#ifndef SIGNALS_H
#define SIGNALS_H

#include <signal.h>
#include <sys/types.h>

#include "diag.h"

/* Install the handlers (idempotent). SIGCHLD goes back to SIG_DFL, so that a
 * parent's SIG_IGN cannot make the kernel reap our children behind us. */
int signals_install(struct diag *d);

/* With on, INT, TERM and HUP only set the flag read by signals_stop_requested
 * (record and trace then write what they have); the other signals still end
 * bpfpy. With off (the default), they end it like the rest. */
void signals_set_graceful(int on);
int signals_stop_requested(void); /* the signal (INT, TERM, HUP), or 0 */
/* The signal of a stop request, cleared: a launched command's bpfpy
 * forwards it and goes on until the command exits. */
int signals_take_stop(void);

/* Called first by every handler (except a graceful stop request). Must be
 * async-signal-safe. One hook: the stopper registry. */
void signals_set_release_hook(void (*fn)(void));

/* The signal that ran the release hook, 0 if none did yet. */
int signals_released(void);

/* Temporary paths removed by a handler before bpfpy dies (a directory with
 * everything in it, without following links). Untrack once the path is
 * renamed or removed. -1 if the table is full (the path is then merely not
 * cleaned up by a signal). */
int signals_track_path(const char *path, int is_dir);
void signals_untrack_path(const char *path);

/* Children SIGKILLed and reaped by a handler before the paths are removed
 * (they may be writing there). */
int signals_track_child(pid_t pid);
void signals_untrack_child(pid_t pid);

/* In a child after fork: default actions back, tables emptied, so that a
 * signal before its exec cannot make it clean up its parent's paths. */
void signals_child_reset(void);

/* Block every handled signal in this thread around code that changes what the
 * handler reads (a realloc of the stopper's thread table). */
void signals_block(sigset_t *old);
void signals_restore(const sigset_t *old);

/* Async-signal-safe: remove a directory tree (not following links, depth
 * bounded). 0, or -1 with errno. */
int signals_rmtree(const char *path);

#endif /* SIGNALS_H */
