// SPDX-License-Identifier: MIT
/*
 * bpfpy record: sample Python stacks inside the kernel and write a profile.
 *
 * The kernel does the walk (bpf/sampler.bpf.c, or bpf/wallclock.bpf.c for
 * --clock wall); this file only drains the ring buffer at a steady pace,
 * names frames through each target's code cache, and aggregates.
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "monotime.h"
#include "native_symbols.h"
#include "native_tables.h"
#include "splice.h"
#include "async_stack.h"
#include "op_mark.h"

/* Frames of a composed --async stack: what every writer takes (the root
 * end of a longer chain is cut, counted as cut). */
#define ASYNC_FRAMES_CAP BPFPY_MAX_DEPTH
/* Marks a sample can start with: an off-CPU reason, [gc], [exception T],
 * the instruction's (--opcodes); or, in a sample without frames, a
 * thread's phase in the instruction's place. */
#define LEAD_MARKS_MAX 4
#include "bpf_sampler.h"
#include "cli_parse.h"
#include "commands.h"
#include "diag.h"
#include "profile.h"
#include "pystr.h"
#include "signals.h"
#include "record_targets.h"
#include "launch.h"
#include "stack_reader.h"
#include "text_escape.h"
#include "offcpu.h"
#include "proc.h"
#include "proc_root.h"
#include "rotate.h"
#include "tick_tally.h"

/* -o may be given this many times: one recording, written in each format. */
#define MAX_OUTPUTS 8
/* How often new processes are looked for (the ring buffer is drained
 * every bpf_sampler_idle_ms() at least). */
#define SCAN_EVERY_MS 250

struct record_opts {
	struct target_sel sel; /* -p, -a, --subprocesses */
	double rate_hz;
	int poisson;
	unsigned poisson_factor;
	int wall, idle;
	/* --clock offcpu (1) or wall (2): off-CPU intervals, user/record/offcpu.h;
	 * wall is then the cpu clock plus them, and the task iterator of old is
	 * --clock snapshot (o->wall), which --clock wall --idle still means. */
	int offcpu;
	int gil;			  /* --gil: GIL holders and GIL waits only */
	double min_block_us;		  /* --min-block-us */
	double duration;		  /* 0: until Ctrl-C */
	const char *outputs[MAX_OUTPUTS]; /* -o, repeatable */
	int noutputs;
	const struct profile_format *format; /* -f, from the format table */
	int threads, no_lines, force;
	unsigned max_depth;
	unsigned ringbuf_mb;
	int verbose, quiet;
	char **cmd;		 /* record -- CMD ARGS...: launch it */
	const char *source_root; /* pprof file names; NULL: the targets' root */
	int native, kernel;	 /* --native, --kernel */
	int phases;		 /* --phases */
	int cost_floor;		 /* --cost-floor */
	int async;		 /* --async */
	int async_all;		 /* --async-mode all */
	int exception;		 /* --exception */
	int no_gc;		 /* --no-gc */
	int opcodes;		 /* --opcodes */
	struct rotate_opts rot;	 /* --rotate, --keep, --keep-bytes (rotate.h) */
};

static const char doc[] =
    "Sample the Python stacks of one or more processes inside the kernel and write a "
    "profile.\v"
    "CLOCKS. --clock cpu (default): a BPF perf_event program on the software cpu-clock of "
    "every online CPU (exact period mode) walks the interrupted thread's frames while it is "
    "not running; a thread is sampled RATE times per second of CPU it uses. --clock offcpu: "
    "a sched_switch program reads a target thread's stack as it leaves the CPU and writes it "
    "when the thread is back, weighted by the exact nanoseconds it was away, under a leaf "
    "frame giving the reason: [off-cpu: gil] (futex on the GIL), [off-cpu: lock] (other "
    "futex), [off-cpu: io] (read, write, recv, send, poll, epoll, select on fds, ...), "
    "[off-cpu: sleep] (nanosleep, clock_nanosleep, select/poll on no fds), [off-cpu: page "
    "fault], [off-cpu: preempted] (runnable, waiting for a CPU), [off-cpu: other]. "
    "--min-block-us drops shorter blocks in the kernel. --clock wall: the cpu clock's samples "
    "(each weighing 1/RATE s) plus the off-CPU intervals, so that a thread's total is its "
    "elapsed time. With offcpu and wall every output counts nanoseconds: collapsed counts "
    "are ns, pprof has sample types cpu, off-cpu and wall (nanoseconds), speedscope weights "
    "are ns; raw keeps one line per sample or interval, without its weight. --clock "
    "snapshot: every thread of the targets, running or not, is snapshotted RATE times per "
    "second by a sleepable BPF task iterator; threads not running are flagged idle and "
    "dropped unless --idle (--clock wall --idle is the same, as before).\n"
    "GIL. --gil keeps only the on-CPU samples of threads holding the GIL and, with offcpu "
    "or wall, the [off-cpu: gil] intervals; refused (exit 2) for a target whose version "
    "does not expose the holder.\n"
    "THREADS. --threads keeps threads apart; each thread is named by its threading name, "
    "read from the target (3.8-3.15; when first seen and at the end), else by its OS name "
    "(comm): collapsed prefix pid:N;tid:N (NAME), pprof labels thread and thread_name, "
    "speedscope profile names, Chrome thread_name metadata. A tick of a thread being born "
    "(spawned by _thread and its state not bound yet, or no Python frame yet) or torn down "
    "(its state cleared by PyThreadState_Clear, no Python frame any more, or the task in "
    "exit or execve in the kernel) is a sample of one frame, [thread starting] or [thread "
    "exiting]: that state is never read once cleared. Hooks on the spawn function and "
    "PyThreadState_Clear of each target's interpreter, and on the kernel's clone and exit, "
    "keep the kernel's map of threads exact (docs/record.md).\n"
    "ASYNC. --async (CPython 3.11+; older versions are refused with exit 2, and with -a "
    "sampled without) turns each sample of a thread whose asyncio loop runs a task into its "
    "task chain, root to leaf: the loop's own frames, [task ROOT], the frames where ROOT is "
    "suspended, ..., [task NAME] of the task that awaits the running one, its frames, then "
    "[task RUNNING] and the running task's frames down to the leaf. A task awaited by several "
    "(gather, wait) is followed to the awaiter at the lowest address and marked [task NAME "
    "(N awaiters)]. The running task is read in the kernel with the frames (3.14+: the "
    "thread state's running task; 3.11-3.13: asyncio's current-tasks dict, matched to the "
    "thread by the task's coroutine frame), and so is its first awaiter with the frames "
    "where it is suspended (3.14+: the task's awaited_by; 3.11-3.13: the awaiting task's "
    "task_wakeup among the task's done callbacks); the awaiters above it come from the task "
    "graph bpfpy reads while the target runs, used only for a task it holds with the "
    "coroutine and name the kernel saw (docs/async.md). Summary line 'async:': samples in a "
    "task, samples whose loop ran none, running tasks whose coroutine frame was not in the "
    "stack; chains whose first awaiter is the kernel's (of which: its frames from the "
    "kernel, from the graph, unknown; the chain above it from the graph), chains whose "
    "awaiters are all the graph's, roots (a running task awaited by none), chains without "
    "awaiters (the kernel saw none and the graph lacks the task); chains cut (a cycle, 256 "
    "tasks, or the kernel's copy of the first awaiter's frames stopped at 4 coroutines), "
    "graph reads, and kernel scans cut at 8 running loops (3.11-3.13). Not with "
    "--native, --kernel or --cost-floor. --async-mode all (with --clock snapshot) adds, at each "
    "snapshot tick, a sample for every waiting task: the frames where it is suspended "
    "(following await through coroutines and generators, stopping at a Future or Task), "
    "its [task NAME], then its awaiters to the root, with no loop frames (pid, tid 0 with "
    "--threads), each weighing one tick as any snapshot sample does, so that a waiting "
    "task's total at a frame is the time it was suspended there; the summary adds the "
    "graphs read and the waiting-task samples.\n"
    "POISSON. --poisson on the cpu clock runs the clock at K x RATE (K = --poisson-factor, "
    "default 8) and keeps each tick with probability 1/K in the kernel: gaps between kept "
    "ticks are geometric on the base period 1/(K x RATE), mean 1/RATE, coefficient of "
    "variation sqrt(1-1/K) (0.94 for K=8), approaching the exponential law as K grows. On "
    "the wall clock the snapshot times are drawn in user space with exponential gaps on an "
    "absolute schedule (CV 1).\n"
    "OUTPUT (-o FILE, -f FORMAT; format from the extension by default): " PROFILE_FORMATS_MARK
    ". Without -o, collapsed goes to stdout. Several -o write one recording in several "
    "formats (each from its extension; -f only with one -o); each file written is named on "
    "stderr: 'bpfpy record: wrote FILE (N samples, FORMAT)', N the samples it holds. An "
    "existing path (file, symlink, "
    "FIFO, device) "
    "is refused without --force (exit 2); docs/formats.md \"Output files\" says what --force does "
    "with each.\n"
    "SUMMARY (stderr, at the end): samples per process (past 40 processes, the 40 with "
    "the most samples, then one line for the rest); ticks (clock ticks in a target "
    "thread), kept (after Poisson thinning), emitted (records that reached user space), lost "
    "(ring buffer full), no thread state, truncated (deeper than --max-depth, leaf part "
    "kept); 'N stacks taken from the caller's frame' (3.11/3.12, when not 0): threads caught "
    "entering an eval call, whose new C frame record was published before it was filled in, "
    "walked from the frame they were running just before (docs/record.md); "
    "'ticks N = W written + E errors + P without a Python thread state + D dropped': "
    "where every tick went, exactly, each part on a line of its own: 'written:' Python "
    "stacks, [thread starting] and [thread exiting] samples; 'errors: CAUSE N' (a failed "
    "walk, or a frame whose code was freed before it could be named, is counted, never "
    "drawn); 'dropped:' by cause, those that occurred: thinned (--poisson), lost (ring "
    "buffer full), without an exception (--exception), --cost-floor records, of processes "
    "gone or exec'd before their records were read, idle (--idle keeps them), not holding "
    "the GIL (--gil), exception type not named (--exception), without frames, out of "
    "memory; 'threads:' threads born and thread states cleared while sampled, seen by the "
    "thread hooks, and the hooks' runs and in-kernel us each; effective rate = written "
    "samples / elapsed seconds; bpfpy CPU while sampling = bpfpy's own CPU time (user and system, "
    "every "
    "thread) from the start of sampling to the summary: draining, naming, aggregating, "
    "/proc and exec events, not the loading of the BPF programs before it nor the "
    "writing of the outputs after it; per sample = that / emitted samples; in-kernel cost = mean "
    "BPF time per kept tick, and per frame walked; with --phases, 'in-kernel phases' splits "
    "it by step, per kept tick: start (from the program's start: the process's config, "
    "thinning, the task's ids), thread state (finding it), frames (the walk, the GIL and "
    "--opcodes' byte), "
    "names (code objects named or found named), native (--native, --kernel), output (the "
    "ring buffer); the clock reads that split it add to the cost; with --cost-floor the "
    "same figure for ticks that only find the process's entry, read 8 bytes of its thread "
    "state (or of _PyRuntime) and write an 80-byte record (emitted counts those records; "
    "no samples, an empty profile): what no in-kernel sampler can do with less; code "
    "cache = code objects whose names and lines are held, now and at most in one "
    "process (a process's cache is bounded and freed when it exits), and how many the "
    "kernel named on first sight (so that code freed before we read it keeps its name) "
    "and bpfpy itself when it registered the process (the code then on its stacks, and "
    "the code objects that code holds as constants: a module's functions, a class's "
    "methods); "
    "lines unknown = code locations (code object and instruction, each counted when it is "
    "named) drawn with line -1 because the line table is longer than the part held: the "
    "64 KiB read from a live code object, or the 16,640 bytes the kernel copies on a code "
    "object's first sample, used when the object was freed before bpfpy read it (a "
    "module's top-level code, once imported) (only printed when not 0); with "
    "--native, 'native unwinding': stacks unwound in the kernel, frames a stack (of them "
    "found by frame pointer, where a file has no CFI), in-kernel us a stack, truncated "
    "(deeper than 128 frames), stopped early, and when any stopped early, why: process "
    "not attached, address in no known mapping, stack unreadable, bad frame, CFI rule not "
    "followed, no user registers; with "
    "--native/--kernel, native symbols (files named, of those through debug files, kernel "
    "symbols) and the parts of samples not placed in the stack, by cause (docs/native-stacks.md). "
    "With --clock offcpu or wall two more lines: 'off-CPU: N context switches seen' (every "
    "switch of the host runs the program), 'N by targets' (their switch-outs), 'N stacks "
    "kept', 'N intervals emitted', 'N under --min-block-us dropped', 'N lost' (ring buffer "
    "full), 'N without storage' (no task storage could be made), 'in-kernel X us per target "
    "switch-out' (walk and store); and 'off-CPU time kept:' the seconds by reason. With "
    "--gil: how many samples of threads not holding the GIL were dropped. When any sample "
    "was collecting garbage: '[gc]: N samples of a thread collecting garbage'. With "
    "--exception: '--exception: N samples with an exception in flight, N being handled; N "
    "ticks of threads without one not sampled, N dropped (the type could not be named)'. "
    "With a heatmap output: 'sources: N files read as their target could, N not (the page "
    "says why), T ms reading'.\n"
    "HEATMAP. A heatmap output makes record read, at the first sample of each source file "
    "(once per --rotate window), the file the code names, as its target could read it: a "
    "child process with the target's fsuid, fsgid and groups opens it inside the target's "
    "root (a relative name from its cwd), a regular file only, at most 4 MiB, killed after "
    "500 ms; 10 s of reading in all. raw written beside it carries the sources for convert "
    "(docs/formats.md, \"Heatmap\").\n"
    "GC AND EXCEPTIONS. A sample of the thread that holds the GIL while the interpreter "
    "collects garbage (gc.collecting of the newest interpreter: the main one in a program "
    "without subinterpreters) gets a [gc] frame at its "
    "leaf, over the Python frame that triggered the collection, in every clock (--no-gc: "
    "none, and the flag is not read). --exception samples only threads with an exception "
    "in flight (raised, not yet caught: the thread state's current exception) or being "
    "handled (inside an except or finally block: the exc_info stack's top, the innermost "
    "generator's or the thread's; the chain below it is not followed); the others are "
    "skipped in the kernel before their stack is read. Each sample gets an "
    "[exception TYPE] frame at its leaf (under [gc] and an off-CPU reason, if any) and, "
    "in pprof, the label exception=TYPE; TYPE is the type's tp_name, read from the target "
    "and escaped, for types whose flags say they derive from BaseException (others are "
    "dropped and counted). Python 3.8-3.15. docs/record.md.\n"
    "OPCODES. --opcodes (every clock, Python 3.8-3.15): at each sample the kernel also "
    "reads the byte of the instruction the Python leaf frame is executing (3.11+: the "
    "code unit at its instruction pointer in co_code_adaptive, quickened and specialized "
    "as it runs; 3.8-3.10: co_code at f_lasti, past any EXTENDED_ARG prefix), and the "
    "sample gets an [op NAME] frame right on that frame (under native frames it called, "
    "over [exception TYPE], [gc] and an off-CPU reason), [op NAME (BASE)] for a "
    "specialized form of BASE; NAME comes from the target version's own opcode table: "
    "INSTRUMENTED_*, ENTER_EXECUTOR and EXTENDED_ARG as they are, <op N> for a byte it "
    "does not name, <not started> for a frame that started no instruction yet, <past "
    "end> and <unread> where the byte was not read. The frame carries the leaf's file "
    "and line (pprof: its location), pprof samples the labels opcode=NAME and "
    "opcode_base=BASE (NAME again when not specialized), raw the byte, its index and "
    "columns (#def). Summary line '--opcodes: N samples with their instruction's byte (N "
    "specialized forms, N bytes the version does not name), N without'. What the byte "
    "means in each version: docs/opcodes.md.\n"
    "AGENT. --rotate SECONDS -o DIR/ writes one pprof per window (and -f FORMAT's file, same "
    "stem), DIR/bpfpy-%Y%m%dT%H%M%SZ-HOST.pb.gz, named by the window's start (UTC), dated "
    "by it (time_nanos, duration_nanos); sampling goes on while a window is written. "
    "--keep N, --keep-bytes B remove the oldest windows' files (only regular files of that "
    "pattern and host). SIGHUP checks DIR and the host name again and goes on; INT and TERM "
    "write the last window and end. pprof samples carry the labels host, pid, comm, "
    "python_version, cgroup (the process's, at registration) and container (where the "
    "cgroup names one: docker, containerd, CRI-O, podman). Summary line 'rotate:': windows "
    "written, their samples and those without frames (never drawn), what the run counted "
    "(their sum), windows that failed and their samples, old files removed; and '... N "
    "processes exited in earlier windows' (freed at a window's end). docs/agent.md.\n"
    "LAUNCH. bpfpy record [OPTIONS] -- CMD ARGS... runs CMD (no shell, argv as given, "
    "bpfpy's own user: root under sudo) in a process group of its own that gets the "
    "terminal, and samples it from its first instruction of Python, through its execs "
    "(sh, chroot, env); --subprocesses also samples its descendants. Ctrl-C reaches CMD; "
    "INT, TERM and HUP sent to bpfpy are forwarded to its group. The recording ends when "
    "CMD exits (or at -d, leaving it running), and bpfpy exits with CMD's status (128+N "
    "if signal N killed it; 127/126 if it could not be run) once the profile is written; "
    "bpfpy's own failures keep their codes below.\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy record -p 1234 -d 10 -o profile.svg\n"
    "  sudo bpfpy record -p 1234,5678 -F 10khz --poisson -o out.pb.gz\n"
    "  sudo bpfpy record -a -d 30 --threads -o host.folded\n"
    "  sudo bpfpy record -p 1234 --clock wall --idle -o wall.json\n"
    "  sudo bpfpy record -p 1234 --clock offcpu --min-block-us 100 -d 10 -o off.folded\n"
    "  sudo bpfpy record -p 1234 --clock wall --gil --threads -o wall.pb.gz\n"
    "  sudo bpfpy record -o app.svg -- python3 app.py --port 8080\n"
    "  sudo bpfpy record -p 1234 --async -d 10 -o tasks.svg\n"
    "  sudo bpfpy record -p 1234 --exception -d 10 -o errors.pb.gz\n"
    "  sudo bpfpy record -p 1234 --opcodes -d 10 -o ops.folded\n\n" EXIT_CODES_DOC;

enum {
	OPT_POISSON = 256,
	OPT_POISSON_FACTOR,
	OPT_CLOCK,
	OPT_IDLE,
	OPT_THREADS,
	OPT_NO_LINES,
	OPT_FORCE,
	OPT_MAX_DEPTH,
	OPT_RINGBUF,
	OPT_SOURCE_ROOT,
	OPT_GIL,
	OPT_MIN_BLOCK,
	OPT_NATIVE,
	OPT_KERNEL,
	OPT_PHASES,
	OPT_COST_FLOOR,
	OPT_ASYNC,
	OPT_ASYNC_MODE,
	OPT_EXCEPTION,
	OPT_NO_GC,
	OPT_OPCODES,
};

static const struct argp_option options[] = {
    {"rate", 'F', "RATE", 0, "Samples per second: 997, 10k, 10khz (default 1khz)", 0},
    {"poisson", OPT_POISSON, NULL, 0, "Random (Poisson) sampling times, see below", 0},
    {"poisson-factor", OPT_POISSON_FACTOR, "K", 0, "Base clock factor for --poisson (2..64)", 0},
    {"clock", OPT_CLOCK, "CLOCK", 0,
     "cpu (default): on-CPU samples; offcpu: blocked time by reason; wall: both, in ns; "
     "snapshot: all threads by a task iterator",
     0},
    {"idle", OPT_IDLE, NULL, 0, "Snapshot clock: keep samples of threads not running", 0},
    {"gil", OPT_GIL, NULL, 0, "Only samples of GIL holders (and [off-cpu: gil] intervals)", 0},
    {"min-block-us", OPT_MIN_BLOCK, "US", 0,
     "offcpu/wall: drop blocks shorter than this, in the kernel (default 0)", 0},
    {"duration", 'd', "SECONDS", 0, "Stop after this long (default: at Ctrl-C)", 0},
    {"output", 'o', "FILE", 0,
     "Write the profile here (default: collapsed on stdout); repeatable, each in the format "
     "of its extension",
     0},
    {"format", 'f', "FORMAT", 0, PROFILE_FORMATS_MARK, 0},
    {"threads", OPT_THREADS, NULL, 0, "Keep threads apart (collapsed: pid:N;tid:N prefix)", 0},
    {"no-lines", OPT_NO_LINES, NULL, 0, "Aggregate by function, not line", 0},
    {"force", OPT_FORCE, NULL, 0, "Overwrite an existing output file", 0},
    {"source-root", OPT_SOURCE_ROOT, "DIR", 0,
     "pprof: prefix source paths with DIR (default: the targets' root when all share one "
     "that is not /, e.g. a chroot's; '/' for none)",
     0},
    {"max-depth", OPT_MAX_DEPTH, "N", 0, "Frames per stack at most (1..1024, default 1024)", 0},
    {"ringbuf-mb", OPT_RINGBUF, "MB", 0, "Ring buffer MiB (default: fits 0.5 s, 1-16)", 0},
    {"native", OPT_NATIVE, NULL, 0, CLI_NATIVE_HELP, 0},
    {"kernel", OPT_KERNEL, NULL, 0, CLI_KERNEL_HELP, 0},
    {"phases", OPT_PHASES, NULL, 0,
     "Time each step of the in-kernel sample apart (cpu and snapshot clocks); the summary "
     "gives the split (see below)",
     0},
    {"cost-floor", OPT_COST_FLOOR, NULL, 0,
     "Take no stacks: each kept tick only finds the process, reads 8 bytes of it and writes "
     "a record, so that 'in-kernel cost' is the floor any in-kernel sampler stands on "
     "(cpu clock; the profile is empty)",
     0},
    {"async", OPT_ASYNC, NULL, 0,
     "asyncio task chains: [task NAME] frames from the running task to its root "
     "(Python 3.11+, see below)",
     0},
    {"async-mode", OPT_ASYNC_MODE, "running|all", 0,
     "running (default): the running task's chain; all: every waiting task too, at each "
     "snapshot tick (implies --async, needs --clock snapshot)",
     0},
    {"exception", OPT_EXCEPTION, NULL, 0,
     "Only threads with an exception in flight or being handled, each sample under an "
     "[exception TYPE] frame (see below)",
     0},
    {"no-gc", OPT_NO_GC, NULL, 0,
     "No [gc] frames (by default a sample of the thread collecting garbage gets one)", 0},
    {"opcodes", OPT_OPCODES, NULL, 0,
     "The instruction each sample's Python leaf frame was executing, as an [op NAME] frame "
     "on it (see below)",
     0},
    {"quiet", 'q', NULL, 0, "No progress line, no summary", 0},
    {"verbose", 'v', NULL, 0,
     "libbpf log and per-process notes on stderr; each failed walk (pid, tid, cause, seconds after "
     "the process was registered, frames read), and in the summary each process's last written "
     "sample",
     0},
    {0},
};

/* --clock: cpu, offcpu (1), wall (2) or snapshot (o->wall). */
static void parse_clock(struct record_opts *o, const char *arg, struct argp_state *state)
{
	o->wall = o->offcpu = 0;
	if (!strcmp(arg, "wall"))
		o->offcpu = 2; /* or the snapshot clock, with --idle: see check_combinations */
	else if (!strcmp(arg, "offcpu"))
		o->offcpu = 1;
	else if (!strcmp(arg, "snapshot"))
		o->wall = 1;
	else if (strcmp(arg, "cpu"))
		argp_error(state, "--clock must be cpu, offcpu, wall or snapshot");
}

/* What the options mean together, once all are read: a target, and no
 * pair of options that cannot both hold. */
static void check_combinations(struct record_opts *o, struct argp_state *state)
{
	if (!o->sel.npids && !o->sel.all && !o->cmd)
		argp_error(state, "give -p PID or -a, or -- CMD ARGS...");
	if (o->cmd && (o->sel.npids || o->sel.all))
		argp_error(state, "-- CMD launches its own target: no -p or -a with it");
	if (o->idle && o->offcpu == 2) { /* --clock wall --idle: the snapshot clock */
		o->offcpu = 0;
		o->wall = 1;
	}
	if (o->idle && !o->wall)
		argp_error(state, "--idle goes with --clock wall");
	if (o->min_block_us > 0 && !o->offcpu)
		argp_error(state, "--min-block-us goes with --clock offcpu or wall");
	if (o->gil && o->wall)
		argp_error(state, "--gil goes with --clock cpu, offcpu or wall");
	if ((o->native || o->kernel) && (o->wall || o->offcpu))
		argp_error(state, "--native and --kernel go with --clock cpu (not offcpu, "
				  "wall, snapshot)");
	if (o->async_all && !o->wall)
		argp_error(state, "--async-mode all samples every task at the snapshot "
				  "clock's ticks: give --clock snapshot");
	if (o->async && (o->native || o->kernel || o->cost_floor))
		argp_error(state, "--async does not go with --native, --kernel or "
				  "--cost-floor");
	if ((o->exception || o->opcodes) && o->cost_floor)
		argp_error(state, "--exception and --opcodes take stacks: not with --cost-floor");
	if (o->cost_floor && (o->wall || o->offcpu || o->native || o->kernel || o->phases))
		argp_error(state, "--cost-floor goes with --clock cpu alone (no --native, "
				  "--kernel, --phases)");
}

/* The options that only set a flag: where that flag is, or NULL. */
static int *flag_of(struct record_opts *o, int key)
{
	switch (key) {
	case OPT_POISSON:
		return &o->poisson;
	case OPT_GIL:
		return &o->gil;
	case OPT_IDLE:
		return &o->idle;
	case OPT_THREADS:
		return &o->threads;
	case OPT_NO_LINES:
		return &o->no_lines;
	case OPT_FORCE:
		return &o->force;
	case OPT_NATIVE:
		return &o->native;
	case OPT_KERNEL:
		return &o->kernel;
	case OPT_PHASES:
		return &o->phases;
	case OPT_COST_FLOOR:
		return &o->cost_floor;
	case OPT_ASYNC:
		return &o->async;
	case OPT_EXCEPTION:
		return &o->exception;
	case OPT_NO_GC:
		return &o->no_gc;
	case OPT_OPCODES:
		return &o->opcodes;
	case 'q':
		return &o->quiet;
	case 'v':
		return &o->verbose;
	}
	return NULL;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;

	switch (key) {
	case 'F':
		o->rate_hz = parse_rate_hz(arg);
		if (o->rate_hz <= 0 || o->rate_hz > 1e6)
			argp_error(state, "invalid rate '%s' (e.g. 997, 10k, 10khz)", arg);
		break;
	case OPT_POISSON_FACTOR:
		o->poisson_factor = (unsigned)cli_long(state, arg, 2, 64, "--poisson-factor");
		break;
	case OPT_CLOCK:
		parse_clock(o, arg, state);
		break;
	case OPT_MIN_BLOCK: {
		char *end;

		errno = 0;
		o->min_block_us = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->min_block_us >= 0) ||
		    o->min_block_us > 3600e6)
			argp_error(state, "invalid --min-block-us '%s' (0 to 3600000000)", arg);
		break;
	}
	case 'd':
		o->duration = parse_seconds(arg);
		if (o->duration <= 0)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case 'o':
		if (o->noutputs == MAX_OUTPUTS)
			argp_error(state, "at most %d -o", MAX_OUTPUTS);
		o->outputs[o->noutputs++] = arg;
		break;
	case 'f':
		o->format = profile_format_find(arg, 0);
		if (!o->format)
			argp_error(state, "unknown format '%s'", arg);
		break;
	case OPT_SOURCE_ROOT:
		o->source_root = arg;
		break;
	case OPT_MAX_DEPTH:
		o->max_depth = (unsigned)cli_long(state, arg, 1, BPFPY_MAX_DEPTH, "--max-depth");
		break;
	case OPT_RINGBUF:
		o->ringbuf_mb = (unsigned)cli_long(state, arg, 1, 1024, "--ringbuf-mb");
		break;
	case OPT_ASYNC_MODE:
		if (!strcmp(arg, "all"))
			o->async_all = 1;
		else if (strcmp(arg, "running"))
			argp_error(state, "--async-mode must be running or all");
		o->async = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (a command to launch goes after --)",
			   arg);
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->sel;
		state->child_inputs[1] = &o->rot;
		break;
	case ARGP_KEY_END:
		check_combinations(o, state);
		break;
	default:
		if (!flag_of(o, key))
			return ARGP_ERR_UNKNOWN;
		*flag_of(o, key) = 1;
	}
	return 0;
}

/* Threads waiting for a threading name at once, and samples of each that
 * look it up again before it keeps its OS name. */
#define PEND_NAMES 64
#define PEND_TRIES 4

struct rec_ctx {
	struct record_opts *o;
	struct target_set *ts;
	struct profile *prof;
	struct raw_stream raw; /* streaming raw output: .f, or NULL */
	struct sym_frame *frames;
	struct rec_target *last; /* target of the previous record */
	struct launch *launch;	 /* record -- CMD, or NULL */
	uint64_t samples, dropped_idle, errors;
	uint32_t named; /* of the profile's threads, how many were named */
	/* Threads first seen before they entered threading._active (a sample
	 * in Thread._bootstrap): looked up again on their next samples. */
	struct pend_name {
		uint32_t pid, tid, tries;
	} pend[PEND_NAMES];
	uint32_t npend;
	uint64_t dropped_gil;		   /* --gil: samples of threads not holding it */
	uint64_t gc_samples;		   /* samples under a [gc] frame */
	uint64_t exc_samples[2];	   /* --exception: in flight, being handled */
	uint64_t exc_unnamed;		   /* --exception: type not readable as one, dropped */
	uint64_t offcpu_ns[OFFCPU__COUNT]; /* off-CPU time kept, by reason */
	struct tick_tally tally;	   /* what became of each tick (the summary's sum) */
	struct native_syms *ns;		   /* --native / --kernel */
	struct splice_scratch *sc;
	struct sym_frame *joined; /* marks + a spliced stack */
	uint64_t splice_causes[SPLICE__COUNT];
	struct async_stats async; /* --async */
	struct op_mark op;	  /* --opcodes: the sample's instruction mark */
	struct op_stats op_stats;
	struct rotator *rot; /* --rotate, or NULL */
	/* An output shows sources (the heatmap): of the profile's functions,
	 * how many had their file's source looked for; and what it cost. */
	int sources;
	uint32_t sourced;
	uint64_t src_read, src_missing, src_ns;
};

/* A sample of a thread still waiting for its threading name: look again
 * (at the cost of the threads _active gained since: py_tnames_update). */
static void name_pending(struct rec_ctx *c, struct rec_target *t, const struct sample_hdr *h)
{
	for (uint32_t i = 0; i < c->npend; i++) {
		struct pend_name *pn = &c->pend[i];
		const char *pyname;

		if (pn->tid != h->tid || pn->pid != h->pid)
			continue;
		pyname = t->proc ? py_tnames_lookup(t->proc, &t->tnames, pn->tid) : NULL;
		if (pyname)
			profile_set_thread_name(c->prof, pn->pid, pn->tid, pyname);
		if (pyname || !t->proc || ++pn->tries >= PEND_TRIES)
			c->pend[i] = c->pend[--c->npend];
		return;
	}
}

/* A sample not kept, counted by why: its process unknown, its walk failed,
 * nothing to draw (no frame, no thread phase), its thread idle (without
 * --idle), or not the GIL's (--gil). */
static int dropped(struct rec_ctx *c, struct rec_target *t, const struct sample_hdr *h)
{
	if (!t) { /* gone, or taken before an exec */
		tick_tally_add(&c->tally, h, FATE_UNKNOWN_PID);
		return 1;
	}
	if (!h->nframes && !(h->flags & SAMPLE_ERROR) && !thread_phase_frame(h->thread_phase)) {
		tick_tally_add(&c->tally, h, FATE_EMPTY);
		return 1;
	}
	if (h->flags & SAMPLE_ERROR) {
		c->errors++;
		t->errors++;
		tick_tally_add(&c->tally, h, FATE_ERROR);
		/* -v: when it happened in the process's life (from its
		 * registration, which --subprocesses makes at its start), so
		 * that errors at a process's birth or end can be told apart. */
		if (c->o->verbose)
			fprintf(stderr,
				"bpfpy: pid %d tid %u: walk failed (%s) %.3f s after registration, "
				"%u frames read, sample %llu of the process\n",
				t->pid, h->tid,
				walk_error_name(h->err < WALK_ERR__COUNT ? h->err : 0),
				h->ts_ns > t->since_ns ? (h->ts_ns - t->since_ns) / 1e9 : 0.0,
				h->nframes, (unsigned long long)(t->samples + t->errors));
		return 1;
	}
	if ((h->flags & SAMPLE_IDLE) && !c->o->idle) {
		c->dropped_idle++;
		t->idle++;
		tick_tally_add(&c->tally, h, FATE_IDLE);
		return 1;
	}
	if (c->o->gil &&
	    (h->offcpu_reason ? h->offcpu_reason != OFFCPU_GIL : !(h->flags & SAMPLE_GIL_HELD))) {
		c->dropped_gil++;
		tick_tally_add(&c->tally, h, FATE_GIL);
		return 1;
	}
	return 0;
}

/* Threads the profile met for the first time: their names while they
 * live. Counted by the profile's thread table, so the per-sample path pays
 * no lookup. */
static void name_new_threads(struct rec_ctx *c)
{
	for (; c->named < c->prof->nthreads; c->named++) {
		const struct prof_thread *th = &c->prof->threads[c->named];
		struct rec_target *nt = targets_find(c->ts, (pid_t)th->pid);
		const char *pyname =
		    nt && nt->proc ? py_tnames_lookup(nt->proc, &nt->tnames, th->tid) : NULL;
		char name[64];

		/* The threading name where it is read, else the OS name. */
		if (!pyname) {
			proc_thread_comm((pid_t)th->pid, (pid_t)th->tid, name, sizeof(name));
			if (nt && nt->proc && nt->proc->extra.obj.keys_model &&
			    c->npend < PEND_NAMES)
				c->pend[c->npend++] = (struct pend_name){th->pid, th->tid, 0};
		}
		profile_set_thread_name(c->prof, th->pid, th->tid, pyname ? pyname : name);
	}
}

/* Sources read after this much time spent reading them are not read: a
 * target naming thousands of files on a filesystem that answers slowly must
 * not hold the drain for long. Each read has its own deadline too. */
#define SOURCE_BUDGET_NS (10ull * 1000000000ull)
#define SOURCE_READ_MS	 500

/* Files of Python functions the profile met for the first time, in a
 * sample of pid: their source for the heatmap, read as the target could
 * read it (proc_root_read_as_target), once per file and window. Counted by
 * the profile's function table, so the per-sample path pays no lookup. */
static void read_new_sources(struct rec_ctx *c, uint32_t pid)
{
	for (; c->sources && c->sourced < c->prof->nfuncs; c->sourced++) {
		const struct prof_func *fn = &c->prof->funcs[c->sourced];
		const char *file = profile_str(c->prof, fn->file);
		struct diag d = {0};
		uint64_t t0 = mono_ns();
		char *text = NULL;
		size_t len = 0;

		if (fn->kind != FRAME_KIND_PYTHON || !*file || profile_source(c->prof, fn->file))
			continue;
		if (c->src_ns > SOURCE_BUDGET_NS)
			diag_set(&d, EXIT_FAIL,
				 "not read: record spent its %llu s for reading "
				 "sources already",
				 SOURCE_BUDGET_NS / 1000000000ull);
		/* "<string>", "<frozen os>": Python's names for code without
		 * a file of its own. */
		else if (file[0] == '<' && file[strlen(file) - 1] == '>')
			diag_set(&d, EXIT_FAIL, "not a file (Python's name for code without one)");
		/* Stored names are valid UTF-8: a name that was not is not the
		 * file's any more. */
		else if (strstr(file, "\xef\xbf\xbd"))
			diag_set(&d, EXIT_FAIL, "not read: its name is not valid UTF-8");
		else if (!proc_root_read_as_target((pid_t)pid, file, PROFILE_SOURCE_MAX_BYTES,
						   SOURCE_READ_MS, &text, &len, &d))
			c->src_read++;
		c->src_ns += mono_ns() - t0;
		if (text ? profile_set_source(c->prof, file, text, len, 0) < 0
			 : profile_set_source_missing(c->prof, file, d.msg))
			c->prof->oom = 1;
		c->src_missing += !text;
		free(text);
	}
}

/* The "[exception NAME]" frame of the exception type at type, read from
 * the target once per type (direct mapped); NULL when it is not readable
 * as an exception type. */
static const char *exc_frame(struct rec_target *t, uint64_t type)
{
	struct exc_name *e =
	    &t->exc_names[(type >> 4) % (sizeof(t->exc_names) / sizeof(*t->exc_names))];
	char name[96];

	if (e->type == type && type)
		return e->frame;
	if (!t->proc ||
	    pyobj_exc_type_name(&t->proc->mem, &t->proc->extra.obj, t->proc->extra.locals.type_name,
				type, name, sizeof(name)))
		return NULL;
	e->type = type;
	snprintf(e->frame, sizeof(e->frame), "[exception %s]", name);
	return e->frame;
}

/* The marks a sample starts with, leaf first, into f: the off-CPU
 * interval's reason, [gc] while its thread collects garbage, and under
 * --exception the exception's type. Their count, or -1 to drop the sample
 * (--exception, and its type cannot be named). */
static int lead_marks(struct rec_ctx *c, struct rec_target *t, const struct sample_hdr *h,
		      struct sym_frame *f)
{
	int n = 0;

	if (h->offcpu_reason)
		f[n++] =
		    (struct sym_frame){.name = offcpu_reason_frame(h->offcpu_reason), .file = ""};
	if (h->gc_flags & GC_COLLECTING) {
		f[n++] = (struct sym_frame){.name = "[gc]", .file = "", .kind = FRAME_KIND_MARK};
		c->gc_samples++;
	}
	if (c->o->exception) {
		const char *name = h->exc_flags ? exc_frame(t, h->exc_type) : NULL;

		if (!name) {
			c->exc_unnamed++;
			tick_tally_add(&c->tally, h, FATE_EXC_UNNAMED);
			return -1;
		}
		f[n++] = (struct sym_frame){.name = name, .file = "", .kind = FRAME_KIND_MARK};
		c->exc_samples[h->exc_flags & EXC_IN_FLIGHT ? 0 : 1]++;
	}
	/* A thread being born or torn down (issue 28): its phase is all its
	 * sample has, the root under the marks. */
	if (!h->nframes && thread_phase_frame(h->thread_phase))
		f[n++] = (struct sym_frame){.name = thread_phase_frame(h->thread_phase),
					    .file = "",
					    .kind = FRAME_KIND_MARK};
	return n;
}

/*
 * --native: the marks (c->frames[0..leaf)) ahead of the spliced stack s;
 * the instruction mark (op: the last of them) goes right leafward of the
 * stack's first Python frame instead, under the native frames that frame
 * called, where it sits in every other stack too.
 */
static void join_marks(struct rec_ctx *c, uint32_t leaf, int op, struct sym_sample *s)
{
	uint32_t lead = leaf - (uint32_t)op, k = op ? op_mark_at(s->frames, s->nframes) : 0;

	if (!leaf || !s->nframes || s->nframes > SPLICE_MAX_OUT)
		return;
	memcpy(c->joined, c->frames, lead * sizeof(*c->joined));
	memcpy(c->joined + lead, s->frames, k * sizeof(*c->joined));
	if (op)
		c->joined[lead + k] = c->frames[lead];
	memcpy(c->joined + leaf + k, s->frames + k, (s->nframes - k) * sizeof(*c->joined));
	s->frames = c->joined;
	s->nframes += leaf;
}

static int on_sample(void *arg, const struct sample_hdr *h, const struct frame_rec *frames)
{
	struct rec_ctx *c = arg;
	struct rec_target *t = targets_of_record(c->ts, &c->last, h);
	struct sym_sample s = {
	    .ts_ns = h->ts_ns,
	    .pid = h->pid,
	    .tid = h->tid,
	    .cpu = h->cpu,
	    .flags = h->flags,
	    .frames = c->frames,
	};
	/* Marks (an off-CPU interval's reason, [gc], [exception TYPE], and
	 * the instruction's, last) are leaf frames ahead of the stack:
	 * lead_marks(). */
	uint32_t leaf = 0;
	/* A thread's phase stands alone: no native frames under it. */
	int phase = !h->nframes && thread_phase_frame(h->thread_phase);
	int native = c->ns && (h->nnative || h->nkernel) && !phase;
	const struct task_rec *tr = c->o->async ? async_task_rec(h, frames) : NULL;
	uint32_t nasync = 0;
	int unnamed = 0, op = c->o->opcodes && h->nframes;

	if (dropped(c, t, h))
		return 0;
	if (phase)
		tr = NULL;
	{
		int m = lead_marks(c, t, h, c->frames);

		if (m < 0)
			return 0;
		leaf = (uint32_t)m + (uint32_t)op; /* the instruction's: made once named */
	}
	if (tr && (!t->async || !t->proc)) /* sampled without, or gone */
		tr = NULL;
	if (tr) {
		/* --async: the task chain, named frame by frame; the marks
		 * stay its leaf. */
		nasync = async_compose(t, h, frames, tr, c->frames + leaf, ASYNC_FRAMES_CAP - leaf,
				       &c->async, &unnamed);
		if (unnamed)
			code_cache_end_sample(t->cache);
	} else if (leaf || native) {
		/* Off-CPU intervals (one per context switch at most; the reason
		 * is a leaf frame ahead of the stack) and native stacks (spliced
		 * by their symbols) take the plain path: every frame named. */
		for (uint32_t i = 0; i < h->nframes && i < BPFPY_MAX_DEPTH; i++)
			if (code_cache_symbolize(t->cache, &frames[i], &c->frames[leaf + i]) !=
			    CODE_OK)
				unnamed = 1;
		if (unnamed)
			code_cache_end_sample(t->cache);
	} else {
		/* Stacks seen before are counted from their raw records; only
		 * new frames are named (profile_add_raw). */
		unnamed =
		    profile_add_raw(c->prof, t->since_ns, h, frames, code_cache_sym, t->cache);
		code_cache_end_sample(t->cache);
	}
	if (unnamed == 1) {
		/* A frame we cannot name (its code was freed before we, or the
		 * kernel, read it) makes no stack: an error of the sample. */
		c->errors++;
		t->errors++;
		tick_tally_add(&c->tally, h, FATE_ERROR);
		return 0;
	}
	if (op) {
		op_mark_make(t, h, frames, &c->op, &c->op_stats);
		c->frames[leaf - 1] = c->op.f;
	}
	s.nframes = h->nframes + (h->nframes || phase ? leaf : 0);
	if (tr)
		s.nframes = nasync + (nasync ? leaf : 0);
	if (native) {
		splice_record(c->ns, c->sc, h, frames, c->frames + leaf,
			      t->proc ? t->proc->bin.version_hex : 0, &s.frames, &s.nframes,
			      c->splice_causes);
		join_marks(c, leaf, op, &s);
	}
	if (!s.nframes || unnamed < 0) {
		/* Nothing left to draw (a task chain or a splice came out
		 * empty), or no room to draw it. */
		tick_tally_add(&c->tally, h, s.nframes ? FATE_OOM : FATE_EMPTY);
		return 0;
	}
	if (h->nframes && h->offcpu_reason < OFFCPU__COUNT)
		c->offcpu_ns[h->offcpu_reason] += h->weight_ns;
	if (leaf || native || tr) {
		if (c->raw.f) /* raw carries the weight, for convert */
			raw_stream_write(&c->raw, &s, h->weight_ns, h->offcpu_reason);
		if (profile_add_weighted(c->prof, &s, h->weight_ns, h->offcpu_reason)) {
			tick_tally_add(&c->tally, h, FATE_OOM);
			return 0;
		}
		code_cache_end_sample(t->cache);
	} else if (c->raw.f) {
		raw_stream_sample(&c->raw, c->prof, c->prof->last_stack, &s);
	}
	t->samples++;
	c->samples++;
	if (h->ts_ns > t->last_ns)
		t->last_ns = h->ts_ns;
	tick_tally_add(&c->tally, h, FATE_WRITTEN);
	/* Before the new ones join them: a thread is looked up again from
	 * its next sample on. */
	if (c->npend)
		name_pending(c, t, h);
	name_new_threads(c);
	read_new_sources(c, h->pid);
	return 0;
}

/*
 * Threads rename themselves (threading's Thread.name = ..., which 3.14+
 * also gives the OS thread, after the thread started): the name they have
 * at the end, if they live. The threading name first; the OS name only for
 * a thread that had no threading name when first seen either (one that
 * left threading._active before the end keeps the one it had).
 */
static void name_threads_at_end(struct rec_ctx *c)
{
	struct diag d = {0};

	for (int i = 0; i < c->ts->n; i++) {
		struct rec_target *t = c->ts->t[i];
		struct py_tnames now = py_tnames_cues(&t->tnames);

		if (!t->proc || py_tnames_read(t->proc, &now, &d) < 0) {
			py_tnames_free(&now);
			continue;
		}
		/* Both kept: the old ones tell which threads were named. */
		struct py_tnames old = t->tnames;

		t->tnames = now;
		for (uint32_t k = 0; k < c->prof->nthreads; k++) {
			const struct prof_thread *th = &c->prof->threads[k];
			const char *pyname;
			char name[64];

			if (th->pid != (uint32_t)t->pid)
				continue;
			pyname = py_tnames_find(&now, th->tid, 0);
			if (pyname)
				profile_set_thread_name(c->prof, th->pid, th->tid, pyname);
			else if (!py_tnames_find(&old, th->tid, 0) &&
				 !proc_thread_comm((pid_t)th->pid, (pid_t)th->tid, name,
						   sizeof(name)))
				profile_set_thread_name(c->prof, th->pid, th->tid, name);
		}
		py_tnames_free(&old);
	}
	/* Threads of targets gone or unreadable now: their OS name, as before. */
	for (uint32_t k = 0; k < c->prof->nthreads; k++) {
		const struct prof_thread *th = &c->prof->threads[k];
		struct rec_target *t = targets_find(c->ts, (pid_t)th->pid);
		char name[64];

		if ((!t || !t->proc) &&
		    !proc_thread_comm((pid_t)th->pid, (pid_t)th->tid, name, sizeof(name)))
			profile_set_thread_name(c->prof, th->pid, th->tid, name);
	}
}

/* Exponential gap with mean 1/rate, for wall-clock snapshots. */
static double exp_gap(double rate)
{
	double u = (random() + 1.0) / ((double)RAND_MAX + 2.0);

	return -log(u) / rate;
}

static void progress(const struct rec_ctx *c, struct bpf_sampler *s, double elapsed)
{
	uint64_t cnt[CNT__COUNT];

	if (bpf_sampler_counters(s, cnt))
		return;
	fprintf(stderr, "\r[%6.1fs] %llu samples, %.0f/s, %llu lost, %llu errors   ", elapsed,
		(unsigned long long)c->samples, elapsed > 0 ? c->samples / elapsed : 0.0,
		(unsigned long long)cnt[CNT_LOST], (unsigned long long)c->errors);
}

/* Rows of the summary beyond this are folded into one line: `record -a`
 * on a busy host meets thousands of processes (the soak: 1186 in ten
 * minutes), and the ones worth a row are those with the most samples. */
#define SUMMARY_ROWS 40

static int by_samples_desc(const void *a, const void *b)
{
	const struct rec_target *x = *(struct rec_target *const *)a;
	const struct rec_target *y = *(struct rec_target *const *)b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static void print_target_rows(const struct target_set *ts)
{
	struct rec_target **v = ts->t, **sorted = NULL;
	uint64_t more_samples = 0, more_errors = 0;
	int n = ts->n, shown = n;

	if (n > SUMMARY_ROWS) {
		sorted = malloc((size_t)n * sizeof(*sorted));
		if (sorted) {
			memcpy(sorted, ts->t, (size_t)n * sizeof(*sorted));
			qsort(sorted, (size_t)n, sizeof(*sorted), by_samples_desc);
			v = sorted;
			shown = SUMMARY_ROWS;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct rec_target *t = v[i];

		if (i >= shown) {
			more_samples += t->samples;
			more_errors += t->errors;
			continue;
		}
		char ec[64], ev[64];

		fprintf(stderr, "  pid %-7d %-16s CPython %-9s %8llu samples, %llu errors%s%s\n",
			t->pid, text_esc(t->comm, ec, sizeof(ec)),
			text_esc(t->version, ev, sizeof(ev)), (unsigned long long)t->samples,
			(unsigned long long)t->errors, t->idle ? ", idle dropped" : "",
			t->exited == TARGET_EXECED ? " (exec'd)"
			: t->exited		   ? " (exited)"
						   : "");
		if (ts->verbose && t->last_ns > t->since_ns)
			fprintf(stderr,
				"            last sample written %.3f s after registration\n",
				(t->last_ns - t->since_ns) / 1e9);
	}
	if (shown < n)
		fprintf(stderr,
			"  ... %d more processes, fewer samples each: %llu samples, %llu errors\n",
			n - shown, (unsigned long long)more_samples,
			(unsigned long long)more_errors);
	if (ts->gone) /* --rotate: freed at a window's end */
		fprintf(stderr,
			"  ... %d processes exited in earlier windows: %llu samples, %llu errors\n",
			ts->gone, (unsigned long long)ts->gone_samples,
			(unsigned long long)ts->gone_errors);
	free(sorted);
}

/* The summary's lines of the options in force: --async, where every tick
 * went (tick_tally.h: errors by cause among them), the off-CPU clocks,
 * --gil, idle, [gc] and --exception. */
static void summary_modes(const struct rec_ctx *c, struct bpf_sampler *s, const uint64_t *cnt)
{
	const struct record_opts *o = c->o;

	if (o->async)
		fprintf(
		    stderr,
		    "  async: %llu samples in a task, %llu with none running; %llu tasks not on "
		    "the stack; first awaiter from the kernel %llu (its frames from the kernel "
		    "%llu, from the graph %llu, unknown %llu; the chain above from the graph "
		    "%llu), from the graph %llu, %llu roots, %llu chains without awaiters; %llu "
		    "chains cut (a cycle, %u tasks, an awaiter's frames past %d), %llu graph "
		    "reads, %llu scans cut at %d "
		    "loops\n",
		    (unsigned long long)c->async.with_task, (unsigned long long)c->async.no_task,
		    (unsigned long long)c->async.not_on_stack,
		    (unsigned long long)c->async.aw_kernel,
		    (unsigned long long)c->async.aw_frames_kernel,
		    (unsigned long long)c->async.aw_frames_graph,
		    (unsigned long long)c->async.aw_unknown, (unsigned long long)c->async.aw_above,
		    (unsigned long long)c->async.aw_graph, (unsigned long long)c->async.aw_root,
		    (unsigned long long)c->async.unresolved, (unsigned long long)c->async.cut,
		    PY_TASK_CHAIN_MAX, TASK_AW_FRAMES, (unsigned long long)c->async.graph_reads,
		    (unsigned long long)c->async.scan_cut, TASK_SCAN_MAX);
	if (o->async_all)
		fprintf(
		    stderr, "  async-mode all: %llu task graphs read, %llu waiting-task samples\n",
		    (unsigned long long)c->async.snapshots, (unsigned long long)c->async.waiting);
	if (c->sources)
		fprintf(stderr,
			"  sources: %llu files read as their target could, %llu not (the page "
			"says why), %.1f ms reading\n",
			(unsigned long long)c->src_read, (unsigned long long)c->src_missing,
			c->src_ns / 1e6);
	if (o->offcpu != 1) /* a clock that ticks: where every tick went */
		tick_tally_summary(stderr, &c->tally, cnt, o->cost_floor);
	if (o->offcpu) {
		uint64_t oc[OFFC__COUNT];
		struct offcpu *off = bpf_sampler_offcpu(s);

		if (!off || offcpu_counters(off, oc))
			memset(oc, 0, sizeof(oc));
		fprintf(stderr,
			"  off-CPU: %llu context switches seen, %llu by targets, %llu stacks kept, "
			"%llu intervals emitted, %llu under --min-block-us dropped, %llu lost, "
			"%llu without storage; in-kernel %.2f us per target switch-out\n",
			(unsigned long long)oc[OFFC_SWITCHES], (unsigned long long)oc[OFFC_OUT],
			(unsigned long long)oc[OFFC_STORED], (unsigned long long)oc[OFFC_EMITTED],
			(unsigned long long)oc[OFFC_SHORT], (unsigned long long)oc[OFFC_LOST],
			(unsigned long long)oc[OFFC_NO_SLOT],
			oc[OFFC_OUT] ? oc[OFFC_OUT_COST_NS] / 1e3 / oc[OFFC_OUT] : 0.0);
		fprintf(stderr, "  off-CPU time kept:");
		for (int r = 1; r < OFFCPU__COUNT; r++)
			fprintf(stderr, " %s %.3f s%s", offcpu_reason_name(r),
				c->offcpu_ns[r] / 1e9, r + 1 < OFFCPU__COUNT ? "," : "\n");
	}
	if (o->gil && c->dropped_gil)
		fprintf(stderr, "  --gil: %llu samples of threads not holding the GIL dropped\n",
			(unsigned long long)c->dropped_gil);
	if (o->wall && c->dropped_idle)
		fprintf(stderr, "  idle samples dropped: %llu (keep them with --idle)\n",
			(unsigned long long)c->dropped_idle);
	if (c->gc_samples)
		fprintf(stderr, "  [gc]: %llu samples of a thread collecting garbage\n",
			(unsigned long long)c->gc_samples);
	if (o->opcodes)
		fprintf(stderr,
			"  --opcodes: %llu samples with their instruction's byte (%llu specialized "
			"forms, %llu bytes the version does not name), %llu without (not "
			"started, past the end, unreadable)\n",
			(unsigned long long)c->op_stats.read,
			(unsigned long long)c->op_stats.specialized,
			(unsigned long long)c->op_stats.unnamed,
			(unsigned long long)c->op_stats.not_read);
	if (o->exception)
		fprintf(
		    stderr,
		    "  --exception: %llu samples with an exception in flight, %llu being "
		    "handled; %llu ticks of threads without one not sampled, %llu dropped "
		    "(the type could not be named)\n",
		    (unsigned long long)c->exc_samples[0], (unsigned long long)c->exc_samples[1],
		    (unsigned long long)cnt[CNT_NO_EXCEPTION], (unsigned long long)c->exc_unnamed);
}

/* The summary's cost lines: bpfpy's CPU, the rate, the in-kernel cost
 * and, with --phases, its steps. */
static void summary_cost(const struct rec_ctx *c, const uint64_t *cnt, double elapsed, double cpu_s)
{
	const struct record_opts *o = c->o;

	fprintf(stderr, "  bpfpy CPU while sampling %.3f s (%.1f%% of a CPU)", cpu_s,
		elapsed > 0 ? 100 * cpu_s / elapsed : 0);
	if (c->samples)
		fprintf(stderr, ", %.2f us per sample", cpu_s * 1e6 / c->samples);
	fprintf(stderr, "\n");
	fprintf(stderr, "  effective rate %.1f samples/s", elapsed > 0 ? c->samples / elapsed : 0);
	if (cnt[CNT_KEPT] && o->cost_floor)
		fprintf(stderr, "; in-kernel cost %.2f us/sample (--cost-floor: no stacks)\n",
			cnt[CNT_COST_NS] / 1e3 / cnt[CNT_KEPT]);
	else if (cnt[CNT_KEPT])
		fprintf(stderr, "; in-kernel cost %.2f us/sample, %.3f us/frame\n",
			cnt[CNT_COST_NS] / 1e3 / cnt[CNT_KEPT],
			cnt[CNT_FRAMES] ? cnt[CNT_COST_NS] / 1e3 / cnt[CNT_FRAMES] : 0.0);
	else
		fprintf(stderr, "\n");
	if (o->phases && cnt[CNT_KEPT]) {
		static const char *const names[PHASE__COUNT] = {
		    [PHASE_START] = "start",   [PHASE_FIND] = "thread state",
		    [PHASE_WALK] = "frames",   [PHASE_NAME] = "names",
		    [PHASE_NATIVE] = "native", [PHASE_OUTPUT] = "output",
		};

		fprintf(stderr, "  in-kernel phases (us/sample):");
		for (int p = 0; p < PHASE__COUNT; p++)
			fprintf(stderr, "%s %s %.2f", p ? "," : "", names[p],
				cnt[CNT_PHASE_BASE + p] / 1e3 / cnt[CNT_KEPT]);
		fprintf(stderr, "\n");
	}
}

static void summary(const struct rec_ctx *c, struct bpf_sampler *s, double elapsed, double cpu_s)
{
	uint64_t cnt[CNT__COUNT];
	const struct record_opts *o = c->o;
	size_t now, peak;
	uint64_t lines_cut[2];
	int live;

	if (bpf_sampler_counters(s, cnt))
		memset(cnt, 0, sizeof(cnt));
	fprintf(stderr, "bpfpy record: %.2f s, clock %s, asked %.0f Hz%s\n", elapsed,
		o->wall		 ? "snapshot"
		: o->offcpu == 1 ? "offcpu"
		: o->offcpu == 2 ? "wall (cpu + offcpu)"
				 : "cpu",
		o->rate_hz,
		o->poisson ? (o->wall ? " (Poisson, exponential gaps)"
				      : " (Poisson: geometric gaps on a faster clock)")
			   : "");
	print_target_rows(c->ts);
	fprintf(stderr,
		"  ticks %llu, kept %llu, emitted %llu, lost %llu, no thread state %llu, "
		"truncated %llu\n",
		(unsigned long long)cnt[CNT_TICKS], (unsigned long long)cnt[CNT_KEPT],
		(unsigned long long)cnt[CNT_EMITTED], (unsigned long long)cnt[CNT_LOST],
		(unsigned long long)cnt[CNT_NO_PYTHON], (unsigned long long)cnt[CNT_TRUNCATED]);
	if (cnt[CNT_ENTRY_RETRY])
		fprintf(stderr,
			"  %llu stacks taken from the caller's frame: their thread was entering "
			"an eval call (3.11/3.12)\n",
			(unsigned long long)cnt[CNT_ENTRY_RETRY]);
	summary_modes(c, s, cnt);
	if (bpf_sampler_native(s))
		native_tables_summary(stderr, bpf_sampler_native(s));
	if (c->ns)
		splice_summary(stderr, c->ns, c->splice_causes);
	now = targets_cache_usage(c->ts, &live, &peak, lines_cut);
	fprintf(stderr,
		"  code cache: %zu objects in %d live processes; largest cache %zu (bound %d); "
		"%llu named by the kernel, %llu when registered\n",
		now, live, peak, CODE_CACHE_DEFAULT_CAP, (unsigned long long)cnt[CNT_NAMED],
		(unsigned long long)bpf_sampler_seeded_names(s));
	if (lines_cut[0] || lines_cut[1])
		fprintf(stderr,
			"  lines unknown: %llu code locations named with line -1 (line table "
			"longer than the part held: %llu past the %d bytes read from the object, "
			"%llu past the %d the kernel copied of code freed before it was read)\n",
			(unsigned long long)(lines_cut[0] + lines_cut[1]),
			(unsigned long long)lines_cut[0], PYBYTES_DEFAULT_CAP,
			(unsigned long long)lines_cut[1], CODE_TABLE_LIMIT);
	summary_cost(c, cnt, elapsed, cpu_s);
}

/* --async-mode all: a waiting task's sample (async_snapshot_all). */
static void emit_waiting(void *ctx, const struct sym_sample *s)
{
	struct rec_ctx *c = ctx;

	if (c->raw.f)
		raw_stream_write(&c->raw, s, 0, 0);
	profile_add_weighted(c->prof, s, 0, 0);
	c->samples++;
	read_new_sources(c, s->pid);
}

/* --rotate: the window ends between two records; the threads of the next
 * one are named afresh, and the processes gone are forgotten. */
static void cut_window(struct rec_ctx *c, int final)
{
	name_threads_at_end(c);
	if (rotate_cut(c->rot, &c->prof, c->ts, mono_ns(), final)) {
		fprintf(stderr, "bpfpy record: --rotate: out of memory, the window goes on\n");
		return;
	}
	c->named = c->npend = 0;
	c->sourced = 0;
	c->last = NULL;
	targets_compact(c->ts);
}

static int record_loop(struct rec_ctx *c, struct bpf_sampler *s)
{
	struct record_opts *o = c->o;
	int tty = isatty(2) && !o->quiet;
	double t0 = mono_s(), last_scan = t0, last_progress = t0;
	double next_snap = t0, deadline = o->duration > 0 ? t0 + o->duration : INFINITY;
	double grace = INFINITY;    /* launched: a signal was forwarded, until then */
	double cpu0 = self_cpu_s(); /* loading and verifying the programs is not counted */
	struct diag d = {0};

	if (c->rot)
		rotate_begin(c->rot, mono_ns());
	while (c->launch || !rotate_stop_requested(c->rot)) {
		double now = mono_s();
		int wait_ms = bpf_sampler_idle_ms(s);

		if (now >= deadline)
			break;
		if ((deadline - now) * 1000 < wait_ms) /* -d: end on time */
			wait_ms = (int)((deadline - now) * 1000) + 1;
		if (c->launch && launch_should_end(c->launch, now, &grace, "record", tty))
			break;
		if (o->wall && now >= next_snap) {
			if (bpf_sampler_snapshot(s, &d))
				return diag_report(&d);
			if (o->async_all)
				async_snapshot_all(c->ts, mono_ns(), c->frames, ASYNC_FRAMES_CAP,
						   &c->async, emit_waiting, c);
			/* Absolute schedule: our own work never pushes it back. */
			next_snap += o->poisson ? exp_gap(o->rate_hz) : 1.0 / o->rate_hz;
			if (next_snap < now - 1.0) /* fell far behind: do not burst */
				next_snap = now;
		}
		if (o->wall) {
			double until = (next_snap - mono_s()) * 1000;

			wait_ms = until < 0 ? 0 : until < wait_ms ? (int)until : wait_ms;
		}
		bpf_sampler_poll(s, wait_ms, on_sample, c);
		if (c->rot && rotate_due(c->rot, mono_ns()))
			cut_window(c, 0);
		now = mono_s();
		if (now - last_scan >= SCAN_EVERY_MS / 1000.0) {
			int alive;

			targets_scan(c->ts);
			alive = targets_reap(c->ts);
			if (o->async)
				async_targets_poll(c->ts);
			if (c->ns) /* a PID seen again is another image */
				for (int i = 0; i < c->ts->n; i++)
					if (c->ts->t[i]->exited)
						native_syms_forget(c->ns, c->ts->t[i]->pid);
			if (!alive && !o->sel.all && !c->launch) {
				if (!o->quiet)
					fprintf(stderr, "%sbpfpy record: every target exited\n",
						tty ? "\n" : "");
				break;
			}
			last_scan = now;
		}
		if (tty && now - last_progress >= 0.5) {
			progress(c, s, now - t0);
			last_progress = now;
		}
	}
	/* What the kernel wrote before we stopped still counts: stop the
	 * clocks first, or at high rates the drain would never catch up. */
	bpf_sampler_stop(s);
	while (bpf_sampler_poll(s, 0, on_sample, c) > 0)
		;
	if (tty)
		fprintf(stderr, "\n");
	if (!o->quiet)
		summary(c, s, mono_s() - t0, self_cpu_s() - cpu0);
	return EXIT_OK;
}

/* --help: the formats come from the one format table. */
static char *help_filter(int key, const char *text, void *input)
{
	(void)input;
	if (key == 'f' && text && !strcmp(text, PROFILE_FORMATS_MARK)) {
		char *names = profile_format_list(0, 0, 0);

		return names ? names : (char *)text;
	}
	return key == ARGP_KEY_HELP_POST_DOC ? profile_format_help(text, 0) : (char *)text;
}

/* A launched command is an initialised CPython, still stopped: register it
 * (a failure is a note: the recording goes on for --subprocesses). */
static void launch_ready(void *ctx, pid_t pid)
{
	struct diag d = {0};

	if (targets_add(ctx, pid, &d)) {
		fputs("bpfpy record: ", stderr);
		text_put(stderr, d.msg);
		fputc('\n', stderr);
	}
}

/* The root every target with samples shares, if it is not the host's:
 * frames name files as the target sees them, pprof -list opens them here. */
static const char *common_root(const struct target_set *ts)
{
	const char *root = NULL;

	for (int i = 0; i < ts->n; i++) {
		const char *r = ts->t[i]->root;

		if (!ts->t[i]->samples)
			continue;
		if (!*r || (root && strcmp(root, r)))
			return NULL;
		root = r;
	}
	return root && strcmp(root, "/") ? root : NULL;
}

/* The output formats, one per -o (or stdout's), refused before anything is
 * opened or sampled when they cannot go together. */
static int record_formats(const struct record_opts *o, const struct profile_format **formats)
{
	if (o->rot.every_s &&
	    (o->noutputs != 1 || (o->format && o->format->flags & PROFILE_FMT_STREAM))) {
		fprintf(stderr, "bpfpy record: --rotate writes windows into one directory: one -o "
				"DIR/, and -f FORMAT (not raw) for a file besides the pprof\n");
		return EXIT_USAGE;
	}
	if (o->format && o->noutputs > 1) {
		fprintf(stderr, "bpfpy record: -f goes with one -o; with several, each file's "
				"extension names its format\n");
		return EXIT_USAGE;
	}
	for (int i = 0, have_raw = 0; i < (o->noutputs ? o->noutputs : 1); i++) {
		const char *path = o->noutputs ? o->outputs[i] : NULL;
		const struct profile_format *format;

		format = formats[i] = o->format	       ? o->format
				      : o->rot.every_s ? profile_format_find("pprof", 0)
				      : path	       ? profile_format_for_path(path)
						       : profile_format_find("collapsed", 0);
		if (!format) {
			char *known = profile_format_list(0, 1, 0);

			fprintf(stderr,
				"bpfpy record: cannot tell the format of '%s': give -f (%s)\n",
				path, known ? known : "");
			free(known);
			return EXIT_USAGE;
		}
		/* One stream: a second would only repeat it. */
		if ((format->flags & PROFILE_FMT_STREAM) && have_raw++) {
			fprintf(stderr, "bpfpy record: one raw output at most\n");
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* The profile and the buffers the drain names frames into. */
static int record_prepare(struct rec_ctx *c, const struct profile_format **formats, struct diag *d)
{
	const struct record_opts *o = c->o;
	int ordered = 0;

	/* The stack after its marks; with --native, the marks ahead of the
	 * spliced stack. */
	c->frames = calloc(BPFPY_MAX_DEPTH + LEAD_MARKS_MAX, sizeof(*c->frames));
	c->joined = calloc(SPLICE_MAX_OUT + LEAD_MARKS_MAX, sizeof(*c->joined));
	c->prof = profile_new((uint64_t)(1e9 / o->rate_hz), o->offcpu == 1	   ? "offcpu"
							    : o->wall || o->offcpu ? "wall"
										   : "cpu");
	if (o->native || o->kernel) {
		c->ns = native_syms_new();
		c->sc = splice_scratch_new();
	}
	if (!c->frames || !c->joined || !c->prof ||
	    ((o->native || o->kernel) && (!c->ns || !c->sc)))
		return diag_errno(d, ENOMEM, "record");
	/* Only speedscope writes the profile's samples in time order (raw is
	 * streamed, not kept). For the others the order is memory spent for
	 * nothing: 24 bytes a sample, megabytes a minute for a long -a run. */
	for (int i = 0; i < (o->noutputs ? o->noutputs : 1); i++) {
		ordered |= !!(formats[i]->flags & PROFILE_FMT_ORDERED);
		c->sources |= !!(formats[i]->flags & PROFILE_FMT_SOURCES);
	}
	if (!ordered)
		profile_set_max_ordered(c->prof, 0);
	/* On-CPU samples weigh 1/RATE s each, off-CPU intervals their time. */
	profile_set_weighted(c->prof, o->offcpu != 0);
	/* The fleet's labels go with --rotate only: raw's trailer does not
	 * carry them yet, and convert must rebuild record's pprof exactly. */
	if (c->rot && record_label_host(c->prof, c->rot))
		return diag_errno(d, ENOMEM, "record");
	return 0;
}

static int record_open_sampler(struct bpf_sampler **s, const struct record_opts *o, struct diag *d)
{
	struct bpf_sampler_opts so = {
	    .rate_hz = o->rate_hz,
	    .poisson = o->poisson && !o->wall,
	    .poisson_factor = o->poisson_factor,
	    .ringbuf_mb = o->ringbuf_mb,
	    .verbose = o->verbose,
	    .wall = o->wall,
	    .targets_grow = o->sel.all || o->sel.children || o->cmd,
	    .offcpu = o->offcpu,
	    .min_block_ns = (uint64_t)(o->min_block_us * 1000),
	    .native = o->native,
	    .kernel = o->kernel,
	    .phases = o->phases,
	    .cost_floor = o->cost_floor,
	};

	return bpf_sampler_open(s, &so, d);
}

/* The targets: -p's, the launched command (registered while still stopped,
 * so sampled from its start), then the scan (-a, --subprocesses). Returns an
 * exit code. */
static int record_add_targets(struct rec_ctx *c, struct launch *l, struct diag *d)
{
	const struct record_opts *o = c->o;
	struct target_set *ts = c->ts;

	for (int i = 0; i < o->sel.npids; i++)
		if (targets_add(ts, o->sel.pids[i], d))
			return diag_report(d);
	if (o->cmd) {
		int r;

		if (launch_start(l, o->cmd, d))
			return diag_report(d);
		ts->launched = l->pid;
		c->launch = l;
		l->on_ready = launch_ready;
		l->ready_ctx = ts;
		r = launch_until_python(l, LAUNCH_READY_S, o->quiet, 0, d);
		if (r < 0)
			return diag_report(d);
		if (r == 0)
			launch_ready(ts, l->pid);
	}
	targets_scan(ts);
	for (int i = 0; o->gil && i < ts->n; i++) {
		const struct rec_target *t = ts->t[i];

		if (t->proc && !t->proc->cfg.gil_holder_addr) {
			fprintf(stderr,
				"bpfpy record: pid %d (CPython %s): --gil: this version does not "
				"expose which thread holds the GIL\n",
				t->pid, t->version);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* After the run: the names, now final, then every output written and
 * committed in order (after a failed commit the files not yet committed are
 * removed). Returns an exit code. */
static int record_write(struct rec_ctx *c, struct out_file *of,
			const struct profile_format **formats, struct profile_out_opts *po,
			struct diag *d)
{
	const struct record_opts *o = c->o;
	const struct target_set *ts = c->ts;

	for (int i = 0; i < ts->n; i++)
		profile_set_comm(c->prof, (uint32_t)ts->t[i]->pid, ts->t[i]->comm);
	po->source_root = o->source_root ? o->source_root : common_root(ts);
	name_threads_at_end(c);
	/* Raw's trailer: the names that the other formats print. */
	if (c->raw.f && raw_stream_end(&c->raw, c->prof, po->source_root)) {
		diag_errno(d, errno ? errno : EIO, "writing raw samples");
		return diag_report(d);
	}
	po->threads = o->threads;
	po->no_lines = o->no_lines;
	po->force = o->force;
	for (int i = 0; i < (o->noutputs ? o->noutputs : 1); i++) {
		FILE *f = o->noutputs ? of[i].f : stdout;

		if (!(formats[i]->flags & PROFILE_FMT_STREAM) &&
		    profile_format_write(formats[i], f, c->prof, po, d))
			return diag_report(d);
	}
	for (int i = 0; i < o->noutputs; i++) {
		if (out_file_commit(&of[i], d))
			return diag_report(d);
		if (!o->quiet)
			/* What the file holds: stacks without frames only in raw. */
			out_file_wrote("record", o->outputs[i],
				       formats[i]->flags & PROFILE_FMT_STREAM ? c->samples
									      : c->prof->total,
				       formats[i]->name);
	}
	if (!o->noutputs)
		fflush(stdout);
	return EXIT_OK;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {.rate_hz = 1000};
	struct argp_child children[] = {
	    {&target_sel_argp, 0, "Targets:", 0}, {&rotate_argp, 0, "Agent:", 0}, {0}};
	struct argp argp = {options, parse, NULL, doc, children, help_filter, NULL};
	struct target_set ts = {0};
	struct bpf_sampler *s = NULL;
	struct rec_ctx c = {.o = &o, .ts = &ts};
	struct profile_out_opts po = {0};
	struct out_file of[MAX_OUTPUTS] = {{0}};
	struct diag d = {0};
	const struct profile_format *formats[MAX_OUTPUTS];
	struct launch l = {.pid = -1, .tty = -1, .errpipe = -1};
	int ret;

	if (launch_split_argv(&argc, argv, &o.cmd, "record"))
		return EXIT_USAGE;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	/* Until sampling starts a signal ends us, removing the temp output. */
	if (signals_install(&d))
		return diag_report(&d);
	if ((ret = record_formats(&o, formats)) != EXIT_OK)
		return ret;
	/* Refuse an unwritable or existing output before sampling anything. */
	po.threads = o.threads;
	po.no_lines = o.no_lines;
	po.source_root = o.source_root;
	if (o.rot.every_s &&
	    rotate_open(&c.rot, &o.rot, o.outputs[0], o.format, &po, o.quiet, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	for (int i = 0; !c.rot && i < o.noutputs; i++)
		if (out_file_open(&of[i], o.outputs[i], o.force, &d)) {
			ret = diag_report(&d);
			goto out;
		}
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	ts.max_depth = o.max_depth;
	ts.all = o.sel.all;
	ts.children = o.sel.children;
	ts.verbose = o.verbose;
	ts.async = o.async;
	ts.exception = o.exception;
	ts.no_gc = o.no_gc;
	ts.opcodes = o.opcodes;
	if (record_prepare(&c, formats, &d) || record_open_sampler(&s, &o, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	ts.sampler = s;
	if ((ret = record_add_targets(&c, &l, &d)) != EXIT_OK)
		goto out;
	if (bpf_sampler_start(s, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	if (!l.watching) /* a watched one stays traced until it execs Python */
		launch_release(&l);
	/* From here on INT, TERM and HUP end the run and keep what it got. */
	signals_set_graceful(1);
	for (int i = 0; i < (o.noutputs ? o.noutputs : 1); i++)
		if (formats[i]->flags & PROFILE_FMT_STREAM)
			c.raw.f = o.noutputs ? of[i].f : stdout;
	/* Version 2: the header says how to weigh and date what follows. */
	if (c.raw.f && raw_stream_begin(&c.raw, c.prof)) {
		diag_errno(&d, errno ? errno : EIO, "writing raw samples");
		ret = diag_report(&d);
		goto out;
	}
	ret = record_loop(&c, s);
	if (c.rot) { /* the last window, then no other output */
		if (ret == EXIT_OK)
			cut_window(&c, 1);
		if (!o.quiet)
			rotate_summary(c.rot, stderr, c.samples);
		if (ret == EXIT_OK && rotate_failed(c.rot))
			ret = EXIT_FAIL;
		goto out;
	}
	if (ret == EXIT_OK)
		ret = record_write(&c, of, formats, &po, &d);
out:
	for (int i = 0; i < o.noutputs; i++)
		if (of[i].f)
			out_file_abort(&of[i]);
	/* Launched: once the profile is written, CMD's status is ours. */
	if (o.cmd && l.pid > 0) {
		if (ret == EXIT_OK && launch_reap(&l))
			ret = launch_exit_code(&l);
		launch_end(&l);
	}
	rotate_close(c.rot);
	bpf_sampler_close(s);
	targets_free(&ts);
	profile_free(c.prof);
	raw_stream_free(&c.raw);
	free(c.frames);
	free(c.joined);
	native_syms_free(c.ns);
	splice_scratch_free(c.sc);
	return ret;
}
