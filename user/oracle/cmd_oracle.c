// SPDX-License-Identifier: MIT
/*
 * bpfpy oracle: how truthful is each sampling mode? CPython's accuracy
 * harness (Tools/inspection/oracle_external_inspection.py), natively, for
 * any sampler, with an empirical noise floor, ground truth and the cost to
 * the target. The method: shared/reference/oracle-method.md; the files:
 * user/oracle/oracle_run.h.
 */
#include <argp.h>
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bpf_sampler.h"
#include "cli_parse.h"
#include "commands.h"
#include "oracle_compare.h"
#include "oracle_html.h"
#include "oracle_run.h"
#include "proc.h"
#include "ptrace_stop.h"
#include "signals.h"

static const char doc[] =
    "Run small Python programs whose possible stacks are known (snippets, with rules "
    "beside them) under each sampling mode, and measure how truthful each mode is against "
    "a ptrace-stopped reference, against the snippet's own measured time split, and what "
    "it costs the target.\v"
    "RUN SHAPE. Per case, per run, per mode: a fresh target runs the snippet, pinned to "
    "the target CPU; after --warmup the mode samples it for --duration at --rate kHz, in "
    "--slowdown-pairs pairs of equal sub-windows, sampling on in one half of each pair and "
    "off in the other (order drawn per pair; see SLOWDOWN); then it gets SIGTERM (a ground-truth "
    "snippet "
    "writes its totals), SIGKILL if it lingers. Sampling times are absolute (start + i/rate, "
    "or exponential gaps with --poisson); a sample is never taken at or past the deadline, "
    "and a slow sample does not push the schedule back.\n"
    "MODES. ptrace (the reference: every thread seized once, then interrupted, read, "
    "continued per sample), live (the same reader, nothing stopped), bpf (the in-kernel "
    "sampler on the cpu clock; --rate 0 or a rate above kernel.perf_event_max_sample_rate "
    "runs at that maximum, said in the header; --poisson thins a 8x faster clock), bpf-native "
    "(the same with --native unwinding on: the in-kernel cost includes it; the rules see "
    "the Python frames), bpf-timer "
    "(the control: the same cpu clocks with a BPF program that returns at its first map "
    "lookup, as the target is not registered -- the timer interrupt's cost alone; no "
    "sample, no accuracy figure), bpf-wall "
    "(task-iterator snapshots of every thread on the schedule), external:CMD (see below), "
    "cpython-live and cpython-blocking (CPython 3.15's own _remote_debugging unwinder, "
    "through scripts/oracle_cpython_unwinder.py, run by the target's interpreter; "
    "cpython-live-cache and cpython-blocking-cache: the same with cache_frames=True, as "
    "Tachyon's CLI always runs it).\n"
    "ASYNC. bpf-async (the in-kernel sampler with record --async's task chains: the "
    "running task read at the sample), ptrace-async (every thread stopped and the task "
    "graph read in the same stop, chains composed as record --async composes them), "
    "cpython-async (3.15's get_async_stack_trace, with the CLI's cache_frames=True) and, "
    "with --peers, tachyon-async (the CLI's --async-aware) key task chains: frames, "
    "'[task NAME]', the awaiter's frames, ... up to the root task, whose loop frames are "
    "cut (a stack with no task is kept whole). A run with an async mode is an async run: "
    "its auto reference is ptrace-async (ptrace-async-low above 1 kHz), --peers adds only "
    "the async peers, and a thread-stack mode in it is refused (exit 2). Rules judge "
    "chains with task:GLOB items (snippets/README.md).\n"
    "INSTRUCTIONS. A case whose rules say 'opcodes' (snippets/opcode_phases) is judged on "
    "the instruction each sample's leaf frame runs: ptrace and live read the leaf's "
    "instruction byte with the same walker as the kernel (walk_leaf_op), ptrace in the stop; "
    "bpf, bpf-native and bpf-wall read it in the kernel as record --opcodes does; each "
    "stack then ends in record --opcodes' mark, '[op NAME]' (keyed without its base), "
    "which rules judge with op:GLOB items. External tools send the mark as a frame "
    "'[op NAME]' or '[op NAME (BASE)]'; a stack sent without one is judged with an "
    "instruction not reported, which allow rules' op items take and deny rules' do not "
    "(as a frame without a file), and keyed as sent. Task chains (async modes) get no "
    "mark.\n"
    "EXTERNAL PROTOCOL. CMD runs under /bin/sh with BPFPY_PID, BPFPY_RATE_HZ, "
    "BPFPY_DURATION, BPFPY_POISSON in its environment ({pid}, {rate_hz}, {duration}, "
    "{poisson} in CMD are replaced too). It samples the PID for that long and writes on "
    "stdout, one line each: 'S' (optional) when sampling begins -- the window starts there; "
    "'S grouped' also says attempts end with '.' lines; 'S late SECS': the tool sampled the "
    "SECS before this line and its stacks follow (they are counted until it exits); a stack "
    "'f1;f2;...;fn', ROOT FIRST "
    "as in collapsed stacks, each frame 'qualname:lineno@file' or 'qualname:lineno' "
    "(lineno digits or '?'; '@file' only after ':lineno', split at the first ':lineno@'; "
    "in name and file %XX stands for byte XX, for ';' '@' '%' and line breaks), "
    "optionally prefixed 'tid=N '; 'E text' for a failed attempt; '. [US]' to end an "
    "attempt (with grouped) and say what it cost, in microseconds; '#' comments. Without "
    "'grouped', each stack line is one attempt. A frame without a file satisfies every "
    "file condition of an allow rule and is taken for the snippet's own file by deny "
    "rules. Lines over 1 MiB are failed attempts; a tool silent 30 s before 'S', or 5 s "
    "past its window, is killed (its process group). A non-zero exit is noted under the "
    "table.\n"
    "PER SAMPLE. A failed attempt is an error. Each thread's stack is one stack; its key is "
    "the whole stack, leaf first, 'qualname:lineno' joined by ';' (no file, no thread), as "
    "in the original. A stack the case's rules call impossible is counted and left out of "
    "the distribution.\n"
    "TABLE. The original's columns: mode samples [stacks, when they differ] µs errors% "
    "impossible impossible% tvd_excess tvd_floor (mean±sample stdev over runs; floor: "
    "median; counts summed; 'ref'/'-' on the reference row). Then ours: raw_tvd; tvd_noise "
    "(empirical floor: TVD between the reference's two interleaved time-block halves, "
    "scaled to the sizes compared -- the IID floor is too small when consecutive samples "
    "are correlated); tvd_fn (function-only keys); tvd_truth (against the snippet's "
    "measured time split); slowdown% (mean±95% half-width, see SLOWDOWN); walk% (bpf rows: "
    "bpf's slowdown less bpf-timer's, i.e. what the walk itself costs, ± the two halves "
    "combined in quadrature; needs --mode bpf-timer); lost "
    "(BPF ring-buffer drops); µs_target (what the target pays per attempt: stopped time, "
    "in-kernel time, 0 for live) and µs_sampler (the sampler's own time per attempt).\n"
    "HEADER. Interpreter, cases/runs/duration/rate_khz/warmup/poisson_sampling, CPU count, "
    "pinning, and the CPUs other processes used during the run (warning above 0.25).\n"
    "SNIPPETS from $BPFPY_SNIPPETS, else <binary>/../snippets, else "
    "/usr/local/share/bpfpy/snippets. --snippet PATH runs any Python file as it is: its "
    "rules are PATH.rules beside it, if there (without one nothing is impossible, the case "
    "is judged by its distribution only and its heading says '[no rules: distribution "
    "only]'); PYTHONPATH holds only a directory with _oracle.py, so nothing shadows the "
    "standard library; a chroot interpreter gets a copy of the program's directory (no "
    "hidden entries nor __pycache__; at most 2000 files, 64 MiB, 4 levels, else the run "
    "is refused). A target is ready when the _oracle progress counter moves, or, for a "
    "program that does not import _oracle, when it runs a frame of its own file outside "
    "an import (30 s deadline); without a counter slowdown% is '-'.\n"
    "CONSISTENCY. Modes that run one unwinder alike (cpython-blocking and "
    "tachyon-blocking; cpython-live-cache and tachyon-live, the CLI caching frames; "
    "cpython-async and tachyon-async) must "
    "agree: under each case, per pair present, the TVD between the two (runs summed) and "
    "its bound, 2 x the larger of the IID floor (pooled frequencies) and the first mode's "
    "empirical floor, + 0.05, and the share of stacks under keys only one shows (each key "
    ">= 1% and 10 stacks, the other >= 200 stacks), at most 5% or half the TVD's bound "
    "if more; 'DISAGREE' past either; 'not judged' when a mode took under 80% of the "
    "attempts its schedule asked (it fell behind, and distorts the target its own way) "
    "(JSON: the case's \"consistency\").\n"
    "SLOWDOWN. Per pair of sub-windows on the same target, 100 x (1 - progress rate with "
    "sampling on / rate with it off), from the snippet's _oracle progress counter read at "
    "every boundary; the column is the mean over pairs with a Student t 95% interval on "
    "those paired figures (with --runs N: the mean over runs, ± the runs' half-widths "
    "combined as for a mean). Off means: bpf and bpf-timer disable their perf events "
    "(PERF_EVENT_IOC_DISABLE), ptrace/live/bpf-wall take no attempt. An external tool is "
    "not paused (a stopped tool catches up the samples it missed, a blocking one may be "
    "stopped holding the target): the target's rate over the window the tool says it "
    "sampled (from 'S', or 'S late'), so its start-up is not counted, is compared with "
    "the same target's rate over as long just before the tool starts, both cut into 50 ms "
    "sub-windows, with Welch's interval (unpaired: wider). When pinned, the target and the "
    "sampler run at nice -20, so that a shared machine's other load takes less of their "
    "CPUs. JSON: slowdown_pct, slowdown_ci95 (half-width, points), slowdown_pairs (0: "
    "unpaired), slowdown_pair_rates, walk_pct, walk_ci95.\n"
    "NO SAMPLE. A mode window that took no sample is printed with its reason and the "
    "oracle exits 1 (before --check).\n"
    "CHECK. --check exits 8 when any mode's mean errors% exceeds --max-errors (default 5), "
    "its impossible% exceeds --max-impossible (default 0), or a non-reference mode's "
    "tvd_excess exceeds --max-tvd-excess (default 0.05).\n"
    "GATE. --compare BASE.json NEW.json compares two --json files without running; "
    "--baseline BASE.json runs what BASE ran (cases, modes, interpreter, rate, duration, "
    "runs: each unless given) and compares. Per case x mode x metric: baseline, new, Δ "
    "(new - baseline), min_Δ (the smallest rise the two runs detect with probability "
    "--power at alpha/tests), p_holm (Holm-adjusted two-sided p) and the verdict worse / "
    "better / same at --alpha, or n/a when a side has no figure. Tests: impossible% and "
    "errors% Fisher's exact test on the counts; tvd_excess, tvd_fn a block bootstrap "
    "over 40 time blocks a side; µs Welch on 40 blocks' mean costs; slowdown% Welch on "
    "the on/off pairs; with --runs >= 2 on both sides Welch on the per-run figures. A "
    "baseline of another interpreter build, rate, clock, reference, CPU model or count, "
    "or other cases or modes, is refused (exit 2, naming what differs) unless --force. "
    "Exit 9 when a row is worse. See docs/oracle-gate.md.\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy oracle --default\n"
    "  sudo bpfpy oracle --snippet flat_alternating --rate 10 --runs 3 --python 3.12\n"
    "  sudo bpfpy oracle --snippet ground_truth --mode ptrace --mode bpf --json out.json\n"
    "  sudo bpfpy oracle --python sid-3.15 --mode ptrace --mode bpf --mode cpython-live\n"
    "  sudo bpfpy oracle --mode bpf --check --max-tvd-excess 0.02\n"
    "  sudo bpfpy oracle --baseline base.json --json new.json --junit gate.xml --force\n"
    "  bpfpy oracle --compare base.json new.json\n\n" EXIT_CODES_DOC;

enum {
	OPT_SNIPPET = 256,
	OPT_MODE,
	OPT_REF,
	OPT_DURATION,
	OPT_RUNS,
	OPT_RATE,
	OPT_WARMUP,
	OPT_POISSON,
	OPT_PYTHON,
	OPT_JSON,
	OPT_HTML,
	OPT_CHECK,
	OPT_MAX_IMP,
	OPT_MAX_TVD,
	OPT_MAX_ERR,
	OPT_CPUS,
	OPT_NO_PIN,
	OPT_DEFAULT,
	OPT_PEERS,
	OPT_PAIRS,
	OPT_BASELINE,
	OPT_COMPARE,
	OPT_JUNIT,
	OPT_FORCE,
	OPT_ALPHA,
	OPT_POWER,
	OPT_DETECT,
};

static const struct argp_option options[] = {
    {"snippet", OPT_SNIPPET, "NAME|PATH", 0, "A case (repeatable; default: all)", 0},
    {"mode", OPT_MODE, "MODE", 0,
     "ptrace, live, bpf, bpf-native, bpf-wall, bpf-timer, external:CMD, cpython-live, "
     "cpython-blocking, cpython-live-cache, cpython-blocking-cache, bpf-async, ptrace-async, "
     "cpython-async (repeatable; the last three key task chains, see ASYNC; "
     "default ptrace, live, bpf)",
     0},
    {"reference-mode", OPT_REF, "MODE", 0,
     "The reference: auto (default: ptrace, or ptrace-low when the rate would make ptrace "
     "stop the target over 10% of the time; ptrace-async or ptrace-async-low when a mode is "
     "an async one), ptrace-low, ptrace-async-low, bpf-poisson, or any mode",
     0},
    {"duration", OPT_DURATION, "SECONDS", 0, "Sampling window per mode (default 3.0)", 0},
    {"runs", OPT_RUNS, "N", 0, "Repeat everything N times (default 1)", 0},
    {"slowdown-pairs", OPT_PAIRS, "N", 0,
     "On/off pairs of sub-windows per mode window, for slowdown% (default: 50 ms sub-windows, "
     "at most 256 pairs)",
     0},
    {"rate", OPT_RATE, "KHZ", 0, "Sampling rate in kHz (default 100; 0 = as fast as possible)", 0},
    {"rate-khz", OPT_RATE, "KHZ", OPTION_ALIAS, NULL, 0},
    {"warmup", OPT_WARMUP, "SECONDS", 0, "Before sampling (default 0.7)", 0},
    {"poisson", OPT_POISSON, NULL, 0, "Poisson (exponential-gap) sampling times", 0},
    {"python", OPT_PYTHON, "PATH|VERSION|LABEL", 0,
     "Interpreter for the snippets (default: the newest found)", 0},
    {"json", OPT_JSON, "FILE", 0, "Write every per-run figure as JSON", 0},
    {"html", OPT_HTML, "FILE", 0,
     "Write a self-contained page: per case the table, each mode's distribution as bars, "
     "the impossible stacks (FILE must not exist)",
     0},
    {"check", OPT_CHECK, NULL, 0, "Exit 8 when a mode breaks a threshold", 0},
    {"max-impossible", OPT_MAX_IMP, "PCT", 0, "--check: impossible% at most (default 0)", 0},
    {"max-tvd-excess", OPT_MAX_TVD, "X", 0, "--check: tvd_excess at most (default 0.05)", 0},
    {"max-errors", OPT_MAX_ERR, "PCT", 0, "--check: errors% at most (default 5)", 0},
    {"cpus", OPT_CPUS, "TARGET,SAMPLER", 0, "CPUs to pin to (default 0,1 with 2+ CPUs)", 0},
    {"no-pin", OPT_NO_PIN, NULL, 0, "Do not pin the target and the sampler", 0},
    {"default", OPT_DEFAULT, NULL, 0,
     "The `make run` job: flat_alternating, nested_alternating, ground_truth; ptrace, live, "
     "bpf; at 1 kHz unless --rate; about a minute",
     0},
    {"peers", OPT_PEERS, NULL, 0,
     "Add every peer profiler available for the interpreter (scripts/oracle_peers.sh: "
     "cpython-live/-blocking, tachyon-live/-blocking, austin, austin-sid; in an async run "
     "cpython-async, tachyon-async); a missing or "
     "unsupported one is skipped with a note",
     0},
    {"baseline", OPT_BASELINE, "BASE.json", 0,
     "Run what BASE ran (unless given) and compare with it: exit 9 when a row is worse", 0},
    {"compare", OPT_COMPARE, "BASE.json", 0,
     "With one argument NEW.json: compare two --json files, no run; exit 9 when worse", 0},
    {"junit", OPT_JUNIT, "FILE", 0,
     "--compare/--baseline: a JUnit XML report, one testcase per case x mode x metric", 0},
    {"force", OPT_FORCE, NULL, 0,
     "Replace an existing --json, --html or --junit path (as record -o --force does); "
     "compare a baseline that differs",
     0},
    {"alpha", OPT_ALPHA, "A", 0, "The gate's family-wise level (default 0.05)", 0},
    {"power", OPT_POWER, "P", 0, "The power min_Δ is computed for (default 0.8)", 0},
    {"detect", OPT_DETECT, "METRIC=DELTA", 0,
     "Say how long a run would see DELTA on every row (impossible, errors, tvd_excess, "
     "tvd_fn, us, slowdown; repeatable)",
     0},
    {"quiet", 'q', NULL, 0, "No progress line", 0},
    {"verbose", 'v', NULL, 0, "Say why each failed window failed, as it happens", 0},
    {0},
};

/* A mode named NAME-async keys task chains (docs/oracle.md, "Async"). */
static int name_async(const char *name)
{
	size_t l = strlen(name);

	return l > 6 && !strcmp(name + l - 6, "-async");
}

/* What a --mode value names; m->cmd is allocated for external:CMD. */
static int mode_resolve(const char *arg, struct oracle_mode *m)
{
	static const struct {
		const char *name;
		enum oracle_mode_kind kind;
	} known[] = {{"ptrace", MODE_PTRACE},	  {"live", MODE_LIVE},
		     {"bpf", MODE_BPF},		  {"bpf-native", MODE_BPF},
		     {"bpf-wall", MODE_BPF_WALL}, {"bpf-timer", MODE_BPF_TIMER},
		     {"bpf-async", MODE_BPF},	  {"ptrace-async", MODE_PTRACE}};

	if (!oracle_reference_mode(arg, m))
		return 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(arg, known[i].name)) {
			m->kind = known[i].kind;
			snprintf(m->name, sizeof(m->name), "%s", arg);
		}
	if (!strncmp(arg, "external:", 9) && arg[9]) {
		m->kind = MODE_EXTERNAL;
		m->cmd = strdup(arg + 9);
		snprintf(m->name, sizeof(m->name), "ext:%.40s", arg + 9);
	} else if (!strcmp(arg, "cpython-live") || !strcmp(arg, "cpython-blocking") ||
		   !strcmp(arg, "cpython-live-cache") || !strcmp(arg, "cpython-blocking-cache") ||
		   !strcmp(arg, "cpython-async")) {
		/* The command is built once the interpreter is known. */
		m->kind = MODE_EXTERNAL;
		snprintf(m->name, sizeof(m->name), "%s", arg);
	}
	m->async = name_async(m->name);
	return m->kind == MODE_NONE ? -1 : 0;
}

static int add_mode(struct oracle_plan *p, const char *arg)
{
	struct oracle_mode *m;

	if (p->nmodes >= ORACLE_MAX_MODES)
		return -1;
	m = &p->modes[p->nmodes];
	if (mode_resolve(arg, m))
		return -1;
	for (int i = 0; i < p->nmodes; i++) {
		/* An external mode is its command: two whose names (the
		 * command's first 40 bytes) match may still differ. */
		if (m->kind == MODE_EXTERNAL && m->cmd && p->modes[i].cmd
			? !strcmp(p->modes[i].cmd, m->cmd)
			: !strcmp(p->modes[i].name, m->name)) {
			free(m->cmd); /* given twice: once is enough */
			m->cmd = NULL;
			return 0;
		}
	}
	p->nmodes++;
	return 0;
}

static double parse_num(struct argp_state *state, const char *flag, const char *arg, double min)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || isnan(v) || v < min)
		argp_error(state, "%s: invalid value '%s'", flag, arg);
	return v;
}

/* What to run: cases, modes, the schedule, the interpreter, the CPUs. */
static error_t parse_run_opt(int key, char *arg, struct argp_state *state)
{
	struct oracle_opts *o = state->input;

	switch (key) {
	case OPT_SNIPPET:
		if (o->nsnippets >= ORACLE_MAX_CASES)
			argp_error(state, "at most %d snippets", ORACLE_MAX_CASES);
		o->snippets[o->nsnippets++] = arg;
		break;
	case OPT_MODE: {
		struct oracle_mode m;

		if (mode_resolve(arg, &m))
			argp_error(state, "unknown mode '%s'", arg);
		free(m.cmd);
		if (o->nmode_args >= ORACLE_MAX_MODES)
			argp_error(state, "at most %d modes", ORACLE_MAX_MODES);
		o->mode_args[o->nmode_args++] = arg;
		break;
	}
	case OPT_REF:
		o->ref_name = arg;
		break;
	case OPT_POISSON:
		o->poisson = 1;
		break;
	case OPT_PEERS:
		o->peers = 1;
		break;
	case OPT_PYTHON:
		o->python = arg;
		break;
	case OPT_CPUS:
		if (sscanf(arg, "%d,%d", &o->cpu_target, &o->cpu_sampler) != 2 ||
		    o->cpu_target < 0 || o->cpu_sampler < 0 || o->cpu_target > 1023 ||
		    o->cpu_sampler > 1023)
			argp_error(state, "--cpus wants TARGET,SAMPLER, e.g. 0,1");
		o->cpus_set = 1;
		break;
	case OPT_NO_PIN:
		o->no_pin = 1;
		break;
	case OPT_DEFAULT:
		o->dflt = 1;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* How long and how often: the numbers of a run's schedule. The _set flags
 * tell --default and --baseline what the user gave. */
static error_t parse_schedule_opt(int key, char *arg, struct argp_state *state)
{
	struct oracle_opts *o = state->input;

	switch (key) {
	case OPT_DURATION:
		o->duration = parse_num(state, "--duration", arg, 0.01);
		o->duration_set = 1;
		break;
	case OPT_RUNS:
		o->runs = (int)parse_num(state, "--runs", arg, 1);
		o->runs_set = 1;
		if (o->runs > 256)
			argp_error(state, "--runs: at most 256");
		break;
	case OPT_RATE:
		o->rate_khz = parse_num(state, "--rate", arg, 0);
		o->rate_set = 1;
		if (o->rate_khz > 1000)
			argp_error(state, "--rate is in kHz: at most 1000");
		break;
	case OPT_WARMUP:
		o->warmup = parse_num(state, "--warmup", arg, 0);
		o->warmup_set = 1;
		break;
	case OPT_PAIRS:
		o->slowdown_pairs = (int)parse_num(state, "--slowdown-pairs", arg, 1);
		if (o->slowdown_pairs > ORACLE_GATE_MAX_PAIRS)
			argp_error(state, "--slowdown-pairs: at most %d", ORACLE_GATE_MAX_PAIRS);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* What is written and what is judged: files, --check's thresholds, chatter. */
static error_t parse_output_opt(int key, char *arg, struct argp_state *state)
{
	struct oracle_opts *o = state->input;

	switch (key) {
	case OPT_JSON:
		o->json = arg;
		break;
	case OPT_HTML:
		o->html = arg;
		break;
	case OPT_CHECK:
		o->check = 1;
		break;
	case OPT_MAX_IMP:
		o->max_impossible = parse_num(state, "--max-impossible", arg, 0);
		break;
	case OPT_MAX_TVD:
		o->max_tvd_excess = parse_num(state, "--max-tvd-excess", arg, -1);
		break;
	case OPT_MAX_ERR:
		o->max_errors = parse_num(state, "--max-errors", arg, 0);
		break;
	case OPT_FORCE:
		o->force = 1;
		break;
	case 'q':
		o->quiet = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The gate: --baseline, --compare BASE NEW and the tests' parameters. */
static error_t parse_gate_opt(int key, char *arg, struct argp_state *state)
{
	struct oracle_opts *o = state->input;

	switch (key) {
	case OPT_BASELINE:
		o->baseline = arg;
		break;
	case OPT_COMPARE:
		o->baseline = arg;
		o->compare_new = ""; /* filled by the next argument */
		break;
	case OPT_JUNIT:
		o->junit = arg;
		break;
	case OPT_ALPHA:
		o->alpha = parse_num(state, "--alpha", arg, 1e-9);
		if (o->alpha >= 0.5)
			argp_error(state, "--alpha: below 0.5");
		break;
	case OPT_POWER:
		o->power = parse_num(state, "--power", arg, 0.5);
		if (o->power >= 1)
			argp_error(state, "--power: from 0.5 to below 1");
		break;
	case OPT_DETECT:
		if (o->ndetect >= 8)
			argp_error(state, "--detect: at most 8");
		o->detect[o->ndetect++] = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->compare_new && !o->compare_new[0]) {
			o->compare_new = arg;
			break;
		}
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Options that only make sense together, and outputs that would clobber a
 * file: refused before the run rather than after minutes of it; with
 * --force the one opener decides when it writes. */
static void parse_end(struct oracle_opts *o, struct argp_state *state)
{
	if (o->compare_new && !o->compare_new[0])
		argp_error(state, "--compare BASE.json NEW.json: NEW.json missing");
	if (o->junit && !o->baseline)
		argp_error(state, "--junit needs --compare or --baseline");
	if (o->ndetect && !o->baseline)
		argp_error(state, "--detect needs --compare or --baseline");
	for (int i = 0; i < 3 && !o->force; i++) {
		const char *path = i == 0 ? o->html : i == 1 ? o->json : o->junit;

		if (path && !faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW))
			argp_error(state, "%s: %s already exists (use --force to replace it)",
				   i == 0   ? "--html"
				   : i == 1 ? "--json"
					    : "--junit",
				   path);
	}
	if (o->no_pin && o->cpus_set)
		argp_error(state, "--cpus and --no-pin contradict each other");
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	static error_t (*const groups[])(int, char *, struct argp_state *) = {
	    parse_run_opt, parse_schedule_opt, parse_output_opt, parse_gate_opt};

	if (key == ARGP_KEY_END) {
		parse_end(state->input, state);
		return 0;
	}
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		error_t r = groups[i](key, arg, state);

		if (r != ARGP_ERR_UNKNOWN)
			return r;
	}
	return ARGP_ERR_UNKNOWN;
}

/* --peers: the modes scripts/oracle_peers.sh names for this interpreter,
 * which knows what each peer supports (it was measured, not declared): a
 * line "NAME" is a mode we know, "NAME<TAB>CMD" an external:CMD shown as
 * NAME, "# ..." a peer skipped and why, passed on to the user. */
static void add_peers(struct oracle_plan *p, const struct oracle_python *py)
{
	char cmd[4 * PATH_MAX + 128], line[2 * PATH_MAX + 256], ext[sizeof(line) + 16];
	FILE *f;
	int n;

	if (strchr(py->label, '\'') || strchr(py->root, '\'') || strchr(py->python, '\'')) {
		fprintf(stderr,
			"bpfpy oracle: --peers: skipped, a quote in the interpreter's path\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "'%s/scripts/oracle_peers.sh' '%s' '%s' '%s' '%s' %s",
		 p->data_dir, py->version, py->label, py->root, py->python,
		 p->async ? "async" : "stacks");
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');

		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#') {
			fprintf(stderr, "bpfpy oracle: --peers: %s\n", line + 1 + (line[1] == ' '));
			continue;
		}
		if (!tab) {
			if (line[0] && add_mode(p, line))
				fprintf(stderr, "bpfpy oracle: --peers: cannot add mode '%s'\n",
					line);
			continue;
		}
		*tab = 0;
		snprintf(ext, sizeof(ext), "external:%s", tab + 1);
		n = p->nmodes;
		if (add_mode(p, ext))
			fprintf(stderr, "bpfpy oracle: --peers: cannot add mode '%s'\n", line);
		else if (p->nmodes > n) { /* not when given already: that one keeps its name */
			snprintf(p->modes[p->nmodes - 1].name, sizeof(p->modes[0].name), "%.63s",
				 line);
			p->modes[p->nmodes - 1].async = name_async(line);
		}
	}
	if (!f || pclose(f))
		fprintf(stderr, "bpfpy oracle: --peers: %s/scripts/oracle_peers.sh failed\n",
			p->data_dir);
}

/* An async run keys task chains, any other thread stacks: one reference
 * cannot judge both (a chain's key is never a stack's), so a plain mode in
 * an async run, or the reverse, is refused. external:CMD is the user's
 * tool: it may send either. */
static int async_plan(struct oracle_plan *p, struct diag *d)
{
	const struct oracle_opts *o = p->o;
	struct oracle_mode m;

	for (int i = 0; i < o->nmode_args; i++)
		if (!mode_resolve(o->mode_args[i], &m)) {
			free(m.cmd);
			p->async |= m.async;
		}
	if (o->ref_name && !mode_resolve(o->ref_name, &m)) {
		free(m.cmd);
		p->async |= m.async;
	}
	for (int i = 0; p->async && i < o->nmode_args; i++) {
		if (mode_resolve(o->mode_args[i], &m))
			continue;
		free(m.cmd);
		if (!m.async && m.kind != MODE_BPF_TIMER && strncmp(m.name, "ext:", 4))
			return diag_set(d, EXIT_USAGE,
					"--mode %s: a thread-stack mode in a run of task-chain "
					"(async) modes; one reference cannot judge both: run them "
					"apart",
					o->mode_args[i]);
	}
	return 0;
}

/* Modes, reference and pinning, once the flags are all in. */
static int settle(struct oracle_plan *p, const struct oracle_python *py, int ncpus, struct diag *d)
{
	const struct oracle_opts *o = p->o;
	const char *ref;

	if (async_plan(p, d))
		return -1;
	ref = oracle_reference_pick(p, o->ref_name);

	for (int i = 0; i < o->nmode_args; i++)
		add_mode(p, o->mode_args[i]); /* checked by the parser */
	if (!p->nmodes && p->async)	      /* --reference-mode ptrace-async alone */
		add_mode(p, "bpf-async");
	else if (!p->nmodes)
		add_mode(p, "ptrace"), add_mode(p, "live"), add_mode(p, "bpf");
	if (o->peers)
		add_peers(p, py);
	p->ref = -1;
	for (int i = 0; i < p->nmodes; i++)
		if (!strcmp(p->modes[i].name, ref) ||
		    (p->modes[i].cmd && !strcmp(ref, p->modes[i].cmd)))
			p->ref = i;
	if (p->ref < 0) {
		/* The reference runs first, even when not asked for as a mode. */
		if (add_mode(p, ref))
			return diag_set(d, EXIT_USAGE, "--reference-mode: unknown mode '%s'", ref);
		struct oracle_mode r = p->modes[p->nmodes - 1];

		memmove(&p->modes[1], &p->modes[0], (size_t)(p->nmodes - 1) * sizeof(r));
		p->modes[0] = r;
		p->ref = 0;
	}
	for (int i = 0; i < p->nmodes; i++) {
		struct oracle_mode *m = &p->modes[i];
		char cmd[3 * PATH_MAX + 128];

		if (m->kind != MODE_EXTERNAL || m->cmd)
			continue;
		/* cpython-async: the CLI's --async-aware configuration (it
		 * caches frames), so that it pairs with tachyon-async. */
		const char *flags =
		    m->async ? " --async --cache"
		    : strstr(m->name, "blocking")
			? (strstr(m->name, "-cache") ? " --blocking --cache" : " --blocking")
			: (strstr(m->name, "-cache") ? " --cache" : "");

		if (!strcmp(py->root, "/"))
			snprintf(cmd, sizeof(cmd), "'%s' '%s/scripts/oracle_cpython_unwinder.py'%s",
				 py->python, p->data_dir, flags);
		else
			/* Same-version only: the adapter runs in the target's root,
			 * with a /proc of its own (what scripts/pyrun.sh --proc does). */
			snprintf(cmd, sizeof(cmd),
				 "'%s/scripts/pyrun.sh' --proc '%s' "
				 "'%s/scripts/oracle_cpython_unwinder.py'%s",
				 p->data_dir, py->label, p->data_dir, flags);
		m->cmd = strdup(cmd);
	}
	if (o->cpus_set) {
		p->pinned = 1;
		p->cpu_target = o->cpu_target;
		p->cpu_sampler = o->cpu_sampler;
	} else if (!o->no_pin && ncpus >= 2) {
		p->pinned = 1;
		p->cpu_target = 0;
		p->cpu_sampler = 1;
	}
	if (p->pinned && oracle_pin_self(p->cpu_sampler))
		return diag_errno(d, errno, "cannot pin the sampler to CPU %d", p->cpu_sampler);
	/* The sampler too (and the peers it starts): a ptrace stop lasts as
	 * long as the sampler waits for its CPU. */
	if (p->pinned)
		(void)setpriority(PRIO_PROCESS, 0, ORACLE_NICE);
	return 0;
}

/* The BPF clock's rate: --rate, or the kernel's maximum when it asks more. */
static void bpf_rate(struct oracle_plan *p)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	double max = 100000, want = p->rate_khz * 1000, k = p->o->poisson ? 8 : 1;
	int has_bpf = 0;

	for (int i = 0; i < p->nmodes; i++)
		has_bpf |= p->modes[i].kind == MODE_BPF || p->modes[i].kind == MODE_BPF_TIMER;
	if (!has_bpf)
		return;
	if (f) {
		if (fscanf(f, "%lf", &max) != 1 || max <= 0)
			max = 100000;
		fclose(f);
	}
	if (want <= 0 || want * k > max) {
		p->bpf_clamped = want > 0;
		want = max / k;
		fprintf(
		    stderr,
		    "bpfpy oracle: bpf mode runs at %.0f Hz%s: kernel.perf_event_max_sample_rate "
		    "is %.0f\n",
		    want, p->o->poisson ? " (Poisson: 8x base clock)" : "", max);
	}
	p->bpf_rate_hz = want;
}

struct loop {
	const struct oracle_plan *p;
	const struct oracle_python *py;
	int tty, windows, done;
	double t0;
};

static void progress_line(struct loop *l, const struct oracle_case *c, const char *mode, int run)
{
	double per, left;

	if (!l->tty)
		return;
	per = l->done ? (mono_s() - l->t0) / l->done : l->p->o->warmup + l->p->o->duration + 0.3;
	left = per * (l->windows - l->done);
	fprintf(stderr, "\r\033[K[%d/%d] %s %s run %d/%d, %.0f s left", l->done + 1, l->windows,
		c->name, mode, run + 1, l->p->o->runs, left);
}

/* One window: fresh target, warmup, the mode (or nothing), the end. */
static void window(struct loop *l, struct oracle_case *c, const struct oracle_mode *m, int run,
		   uint64_t seed, struct oracle_result *r)
{
	struct oracle_target t;
	struct oracle_window w = {.p = l->p, .c = c, .py = l->py, .mode = m, .t = &t, .seed = seed};
	struct diag d = {0};

	progress_line(l, c, m->name, run);
	if (oracle_target_start(&t, c, l->py, l->p, &d) ||
	    oracle_target_wait_ready(&t, rules_own_file(c->rules), 30.0, &d)) {
		snprintf(r->note, sizeof(r->note), "%.250s", d.msg);
	} else {
		oracle_sleep_until(mono_s() + l->p->o->warmup);
		if (oracle_mode_run(&w, r, &d))
			snprintf(r->note, sizeof(r->note), "%.250s", d.msg);
	}
	oracle_target_stop(&t, &r->truth);
	if (r->note[0] && l->p->o->verbose)
		fprintf(stderr, "%sbpfpy oracle: %s %s run %d: %s\n", l->tty ? "\r\033[K" : "",
			c->name, m->name, run, r->note);
	l->done++;
}

/* --compare BASE NEW: no target, no privilege. */
static int oracle_compare_files(const struct oracle_opts *o)
{
	struct diag d = {0};
	json_object *b = oracle_json_load(o->baseline, &d), *n = NULL;
	int w = -1;

	if (b && (n = oracle_json_load(o->compare_new, &d)) && !oracle_gate_match(b, n, o, &d))
		w = oracle_gate(stdout, o->baseline, b, o->compare_new, n, o, &d);
	json_object_put(b);
	json_object_put(n);
	return w < 0 ? diag_report(&d) : w > 0 ? EXIT_REGRESSION : EXIT_OK;
}

/* The cases to run: --snippet's, --default's three, else every snippet in
 * the snippets directory; names[] holds the listed names plan->snippets
 * points to. */
static int load_cases(struct oracle_plan *p, struct oracle_case *cases, char (*names)[64],
		      int *ncases, struct diag *d)
{
	const struct oracle_opts *o = p->o;
	char dir[PATH_MAX + 16];

	for (int i = 0; i < o->nsnippets; i++)
		p->snippets[p->nsnippets++] = o->snippets[i];
	if (o->dflt && !p->nsnippets) {
		p->snippets[p->nsnippets++] = "flat_alternating";
		p->snippets[p->nsnippets++] = "nested_alternating";
		p->snippets[p->nsnippets++] = "ground_truth";
	}
	snprintf(dir, sizeof(dir), "%s/snippets", p->data_dir);
	if (!p->nsnippets) {
		int k = oracle_list_cases(dir, names, ORACLE_MAX_CASES);

		if (!k)
			return diag_set(d, EXIT_USAGE, "no snippets found: set BPFPY_SNIPPETS");
		for (int i = 0; i < k; i++)
			p->snippets[p->nsnippets++] = names[i];
	}
	for (int i = 0; i < p->nsnippets; i++, (*ncases)++)
		if (oracle_load_case(p->snippets[i], dir, &cases[i], d))
			return -1;
	return 0;
}

/* Every window of every case, run and mode, in that order; returns the CPUs
 * other processes used meanwhile (for the header's warning), or -1 when out
 * of memory. */
static double run_cases(struct loop *l, struct oracle_case *cases, struct oracle_case_result *crs,
			int ncases)
{
	const struct oracle_plan *p = l->p;
	int runs = p->o->runs, nmodes = p->nmodes;
	double busy0, self0, wall0, other;

	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	l->tty = isatty(2) && !p->o->quiet;
	l->windows = ncases * runs * nmodes;
	l->t0 = wall0 = mono_s();
	busy0 = oracle_host_busy();
	self0 = oracle_self_busy();
	for (int ci = 0; ci < ncases; ci++) {
		struct oracle_case_result *cr = &crs[ci];

		cr->c = &cases[ci];
		cr->res = calloc((size_t)runs * (size_t)nmodes, sizeof(*cr->res));
		if (!cr->res)
			return -1;
		for (int run = 0; run < runs; run++) {
			uint64_t seed = ((uint64_t)random() << 32) ^ (uint64_t)random();

			for (int m = 0; m < nmodes; m++) {
				struct oracle_result *r = &cr->res[run * nmodes + m];

				if (oracle_result_init(r))
					return -1;
				window(l, cr->c, &p->modes[m], run, seed + (uint64_t)m + 1, r);
			}
		}
		oracle_compute(p, cr);
	}
	if (l->tty)
		fprintf(stderr, "\r\033[K");
	other = (oracle_host_busy() - busy0 - (oracle_self_busy() - self0)) / (mono_s() - wall0);
	return other < 0 ? 0 : other;
}

/* The tables, the files, and the verdicts in the order they outrank each
 * other (no sample, then --check, then the gate); returns the exit code. */
static int report(const struct oracle_plan *p, const struct oracle_python *py,
		  struct oracle_case_result *crs, int ncases, int ncpus, double other,
		  json_object *base)
{
	const struct oracle_opts *o = p->o;
	struct diag d = {0};
	json_object *run_json;
	int ret = EXIT_OK;

	oracle_print_header(stdout, p, py, ncases, ncpus, other);
	for (int ci = 0; ci < ncases; ci++) {
		oracle_print_case(stdout, p, &crs[ci]);
		oracle_print_consistency(stdout, p, &crs[ci]);
	}
	fflush(stdout);
	run_json = oracle_json(p, py, crs, ncases, ncpus, other);
	if (o->json && oracle_write_json(o->json, run_json, o->force, &d))
		ret = diag_report(&d);
	if (o->html) {
		struct diag hd = {0};

		if (oracle_write_html(o->html, p, py, crs, ncases, ncpus, other, &hd) &&
		    ret == EXIT_OK)
			ret = diag_report(&hd);
	}
	/* Before --check: a mode without samples has no figure to check. */
	if (oracle_empty(stderr, p, crs, ncases) && ret == EXIT_OK)
		ret = EXIT_FAIL;
	if (ret == EXIT_OK && o->check && oracle_check(stderr, p, crs, ncases))
		ret = EXIT_CHECK_FAILED;
	/* The regression outranks a threshold: it is what --baseline asks. */
	if (base && (ret == EXIT_OK || ret == EXIT_CHECK_FAILED)) {
		int w = oracle_gate(stdout, o->baseline, base, "this run", run_json, o, &d);

		ret = w < 0 ? diag_report(&d) : w > 0 ? EXIT_REGRESSION : ret;
	}
	json_object_put(run_json);
	return ret;
}

static void free_cases(struct oracle_plan *p, struct oracle_case *cases,
		       struct oracle_case_result *crs, int ncases)
{
	for (int ci = 0; ci < ncases; ci++) {
		for (int k = 0; k < p->o->runs * p->nmodes; k++)
			oracle_result_free(&crs[ci].res[k]);
		free(crs[ci].res);
		rules_free(cases[ci].rules);
	}
	for (int i = 0; i < p->nmodes; i++)
		free(p->modes[i].cmd);
}

int cmd_oracle(int argc, char **argv)
{
	struct oracle_opts o = {.duration = 3.0,
				.warmup = 0.7,
				.rate_khz = 100,
				.runs = 1,
				.max_errors = 5,
				.max_tvd_excess = 0.05,
				.alpha = 0.05,
				.power = 0.8};
	const char *base_snippets[ORACLE_MAX_CASES], *base_modes[ORACLE_MAX_MODES];
	json_object *base = NULL;
	struct argp argp = {options, parse, NULL, doc, NULL, NULL, NULL};
	static struct oracle_case cases[ORACLE_MAX_CASES];
	struct oracle_case_result crs[ORACLE_MAX_CASES];
	char exe[PATH_MAX], datadir[PATH_MAX], names[ORACLE_MAX_CASES][64];
	struct oracle_python py;
	struct diag d = {0};
	struct oracle_plan plan = {.o = &o};
	struct loop l = {.p = &plan, .py = &py};
	int ncases = 0, ncpus, cpus[1024], ret;
	double other;
	ssize_t n;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (o.compare_new)
		return oracle_compare_files(&o);
	if (o.baseline && (!(base = oracle_json_load(o.baseline, &d)) ||
			   oracle_baseline_opts(base, &o, base_snippets, base_modes, &d)))
		return json_object_put(base), diag_report(&d);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	plan.data_dir = oracle_data_dir(n > 0 ? dirname(exe) : ".", datadir, sizeof(datadir));
	/* The make run job samples at 1 kHz unless told: at the original's
	 * 100 kHz, a timer tick every 10 us costs a VM's target most of its
	 * CPU by itself (make bench's control), which hides what the job is
	 * meant to show. */
	plan.rate_khz = o.dflt && !o.rate_set ? 1 : o.rate_khz;
	if (load_cases(&plan, cases, names, &ncases, &d))
		return diag_report(&d);
	if (oracle_find_python(o.python, plan.data_dir, &py, &d))
		return diag_report(&d);
	ncpus = online_cpus(cpus, 1024);
	if (settle(&plan, &py, ncpus, &d) || signals_install(&d))
		return diag_report(&d);
	bpf_rate(&plan);
	/* A baseline of another experiment is refused before the run. */
	if (base) {
		json_object *h = oracle_json(&plan, &py, crs, 0, ncpus, 0);

		if (oracle_gate_match(base, h, &o, &d))
			return json_object_put(h), json_object_put(base), diag_report(&d);
		json_object_put(h);
	}
	other = run_cases(&l, cases, crs, ncases);
	if (other < 0)
		return diag_report(&(struct diag){.code = EXIT_FAIL, .msg = "out of memory"});
	ret = report(&plan, &py, crs, ncases, ncpus, other, base);
	json_object_put(base);
	free_cases(&plan, cases, crs, ncases);
	return ret;
}
