/* SPDX-License-Identifier: MIT */
/*
 * record --rotate: the host agent's output. The recording is cut into
 * windows of --rotate seconds, and each window becomes a complete profile
 * of its own, DIR/bpfpy-%Y%m%dT%H%M%SZ-HOST.pb.gz (and one file per other
 * format asked, same stem), dated by its window (pprof time_nanos and
 * duration_nanos) so that `go tool pprof` merges them and a backend can
 * ingest them one by one.
 *
 * Sampling never stops at a boundary: the loop swaps the window's profile
 * for an empty one between two ring-buffer records (so each sample is in
 * exactly one window) and a writer thread writes and frees the old one
 * while the loop goes on draining. Files are written through the one safe
 * opener (a hidden temporary name in DIR, then link(2)), and DIR is bounded
 * by --keep windows and --keep-bytes, deleting only regular files whose
 * name is bpfpy's pattern for this host. SIGHUP checks DIR and the host
 * name again (after a logrotate-style move or a rename of the host); it
 * does not end the run.
 */
#ifndef ROTATE_H
#define ROTATE_H

#include <argp.h>
#include <stdint.h>
#include <stdio.h>

#include "diag.h"
#include "profile.h"
#include "record_targets.h"

struct rotate_opts {
	double every_s;	     /* --rotate SECONDS; 0: one profile at the end */
	unsigned keep;	     /* --keep N windows; 0: no bound */
	uint64_t keep_bytes; /* --keep-bytes B; 0: no bound */
	int stats;	     /* --window-stats */
};

/* The options, as an argp child (input: struct rotate_opts). */
extern const struct argp rotate_argp;

struct rotator;

/* Check DIR (the one -o; it must be an existing directory) and set up the
 * formats: pprof, plus extra if given and not pprof (NULL: none). */
int rotate_open(struct rotator **r, const struct rotate_opts *o, const char *dir,
		const struct profile_format *extra, const struct profile_out_opts *po, int quiet,
		struct diag *d);
/* The label host (escaped) on every sample of p: r's host name, or this
 * host's when r is NULL. 0, or -1 on ENOMEM. */
int record_label_host(struct profile *p, const struct rotator *r);
/* The first window starts now (CLOCK_MONOTONIC ns). */
void rotate_begin(struct rotator *r, uint64_t now_ns);
/* The stop request to honour (signals_stop_requested), a SIGHUP taken
 * out of it and noted, to be handled by rotate_due. */
int rotate_stop_requested(struct rotator *r);
/* 1 when the window is over at now_ns; handles a pending SIGHUP. */
int rotate_due(struct rotator *r, uint64_t now_ns);
/*
 * End the window at now_ns: *prof (labelled from ts first) goes to the
 * writer thread, and *prof becomes an empty profile like it. With final,
 * wait until every window is written. 0, or -1 (ENOMEM: *prof is left as
 * it was, the window goes on).
 */
int rotate_cut(struct rotator *r, struct profile **prof, struct target_set *ts, uint64_t now_ns,
	       int final);
/* "rotate: ..." on f: windows written and their samples, failures. samples:
 * the run's total, as record counted them. */
void rotate_summary(const struct rotator *r, FILE *f, uint64_t samples);
/* Windows that could not be written (the exit status is 1 if any). */
unsigned rotate_failed(const struct rotator *r);
void rotate_close(struct rotator *r);

#endif /* ROTATE_H */
