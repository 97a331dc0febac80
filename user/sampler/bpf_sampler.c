// SPDX-License-Identifier: MIT
#include "bpf_sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_loader.h"
#include "offcpu.h"
#include "native_tables.h"
#include "proc.h"
#include "proc_ns.h"
#include "stack_reader.h"
#include "thread_hooks.h"
#include "walker_user.h"
#include "sampler.skel.h"
#include "wallclock.skel.h"

#define MAX_CPUS 1024
/* Records handled per bpf_sampler_poll() at most. */
#define POLL_BATCH 4096

struct bpf_sampler {
	struct sampler_bpf *skel;    /* --clock cpu */
	struct wallclock_bpf *wskel; /* --clock wall */
	struct bpf_link *iter_link;
	struct bpf_link *exec_link; /* bpf/exec_watch.bpf.h */
	struct bpf_link *fork_link; /* same, targets_grow only */
	int configs_fd, counters_fd, execed_fd;
	struct code_name_maps names; /* code_names, code_tables */
	int tstates_fd, owners_fd;   /* tid_tstates, tstate_owners (bpfpy.h thread_entry) */
	struct thread_hooks *th;     /* bpf/thread_watch.bpf.h, or NULL */
	int new_fd, new_lost_fd;     /* targets_grow: bpf/exec_watch.bpf.h new_pids */
	pid_t only_pid;		     /* wall clock: iterate this process's threads only */
	struct ring_buffer *rb;
	int ncpus;
	int cpus[MAX_CPUS];
	int pfd[MAX_CPUS];
	struct bpf_link *links[MAX_CPUS];
	uint64_t period_ns;
	double keep;
	bpf_sample_fn fn;
	void *fn_ctx;
	int handled;
	int stop;
	int wall;
	int targets_grow;
	int nprocs;
	uint64_t seeded_names; /* code objects bpf_sampler_seed() named */
	struct offcpu *off;    /* --clock offcpu|wall */
	int offcpu;
	struct native_tables *native; /* --native, --kernel */
	int idle_ms;		      /* bpf_sampler_idle_ms() */
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *s = ctx;
	const struct sample_hdr *h = data;

	if (size < sizeof(*h) ||
	    size < sizeof(*h) + (size_t)h->nframes * sizeof(struct frame_rec) +
		       ((size_t)h->nnative + h->nkernel) * sizeof(__u64) +
		       ((h->task_flags & TASK_REC_PRESENT) ? sizeof(struct task_rec) : 0))
		return 0;
	s->handled++;
	/* A --cost-floor record is counted by the kernel and has nothing to
	 * draw; it only counts towards the batch. */
	if (h->flags & SAMPLE_FLOOR)
		goto batch;
	if (s->native)
		native_tables_on_record(s->native, h);
	if (s->fn && s->fn(s->fn_ctx, h, (const struct frame_rec *)(h + 1))) {
		s->stop = 1;
		return -ECANCELED;
	}
batch:
	/* ring_buffer__consume() drains until the buffer is empty, which never
	 * happens while the kernel writes faster than we symbolize: stop after
	 * a bounded batch so the caller's clock, deadline and signals are seen.
	 * libbpf stops only on a negative return; what is left stays queued. */
	if (s->handled >= POLL_BATCH)
		return -EAGAIN;
	return 0;
}

/*
 * The default ring buffer: room for half a second of the largest records
 * every CPU can write at the rate, in MiB, a power of two from 1 to 16. The
 * whole buffer is resident (mapped twice, for records that wrap): 16 MiB
 * cost `record -a -F 100` 32 MiB of RSS for the 2 MiB its rate can use.
 * The wall clock writes a record per thread per snapshot, so it keeps 16.
 */
static unsigned default_ringbuf_mb(const struct bpf_sampler_opts *o)
{
	int cpus[MAX_CPUS], n = online_cpus(cpus, MAX_CPUS);
	double bytes = o->rate_hz * (n > 0 ? n : MAX_CPUS) * sizeof(struct sample_buf) * 0.5;
	unsigned mb = 1;

	if (o->wall)
		return 16;
	while (mb < 16 && mb * 1048576.0 < bytes)
		mb *= 2;
	return mb;
}

/*
 * How long a poll that found the ring buffer empty may sleep: the time in
 * which every CPU, each writing its largest record at every tick of the
 * clock, fills half the ring, from IDLE_MIN_MS to IDLE_MAX_MS. At
 * `record -a -F 100` a sleep of 20 ms, one wake-up per 4 records, was a
 * fifth of bpfpy's steady CPU; in 100 ms even 2 CPUs of records of 1024
 * frames (18 kB) would fill 17% of its 2 MiB ring. At 10 kHz the bound is
 * the minimum, as before. Off-CPU and wall-clock records come at no
 * clock's rate: the minimum.
 */
#define IDLE_MIN_MS 20
#define IDLE_MAX_MS 100

static int idle_ms(const struct bpf_sampler *s, double ring_bytes)
{
	double per_ms = 1e6 / (double)s->period_ns * s->ncpus * sizeof(struct sample_buf);
	double ms = ring_bytes / 2 / per_ms;

	if (s->wall || s->offcpu)
		return IDLE_MIN_MS;
	return ms < IDLE_MIN_MS ? IDLE_MIN_MS : ms > IDLE_MAX_MS ? IDLE_MAX_MS : (int)ms;
}

int bpf_sampler_idle_ms(const struct bpf_sampler *s)
{
	return s->idle_ms;
}

int bpf_sampler_open(struct bpf_sampler **out, const struct bpf_sampler_opts *o, struct diag *d)
{
	struct bpf_sampler *s;
	unsigned factor = o->poisson_factor ? o->poisson_factor : 8;
	unsigned mb = o->ringbuf_mb ? o->ringbuf_mb : default_ringbuf_mb(o);
	double base_hz = o->rate_hz;
	int err, events_fd, native = 0;

	bpf_loader_log(o->verbose);
	if (o->rate_hz <= 0)
		return diag_set(d, EXIT_USAGE, "sampling rate must be positive");
	s = calloc(1, sizeof(*s));
	if (!s)
		return diag_errno(d, ENOMEM, "bpf sampler");
	for (int i = 0; i < MAX_CPUS; i++)
		s->pfd[i] = -1;
	if (o->poisson)
		base_hz *= factor;
	s->period_ns = (uint64_t)(1e9 / base_hz + 0.5);
	if (s->period_ns < 1000)
		s->period_ns = 1000;
	s->keep = o->poisson ? 1.0 / factor : 1.0;

	s->wall = o->wall;
	s->targets_grow = o->targets_grow;
	if (o->wall) {
		s->wskel = wallclock_bpf__open();
		if (!s->wskel) {
			bpf_loader_open_failed("wall-clock iterator", d);
			free(s);
			return -1;
		}
		bpf_map__set_max_entries(s->wskel->maps.events, mb << 20);
		s->wskel->rodata->watch_new = !!o->targets_grow;
		s->wskel->rodata->cost_phases = !!o->phases;
		err = bpf_loader_load(s->wskel->skeleton, "wall-clock iterator", d);
	} else {
		s->skel = sampler_bpf__open();
		if (!s->skel) {
			bpf_loader_open_failed("sampler", d);
			free(s);
			return -1;
		}
		if (o->poisson)
			s->skel->rodata->keep_below = (__u32)(4294967296.0 * s->keep);
		bpf_map__set_max_entries(s->skel->maps.events, mb << 20);
		s->skel->rodata->watch_new = !!o->targets_grow;
		s->skel->rodata->cost_phases = !!o->phases;
		s->skel->rodata->cost_floor = !!o->cost_floor;
		native = o->native || o->kernel || getenv(NATIVE_RAW_ENV);
		s->skel->rodata->want_native = o->native || getenv(NATIVE_RAW_ENV);
		s->skel->rodata->want_kernel = o->kernel || getenv(NATIVE_RAW_ENV);
		if (!s->skel->rodata->want_native) /* 32 MiB of rows otherwise */
			bpf_map__set_max_entries(s->skel->maps.native_rows, 1);
		err = bpf_loader_load(s->skel->skeleton, "sampler", d);
		if (!err && o->offcpu) {
			struct offcpu_opts oo = {.min_block_ns = o->min_block_ns};

			s->offcpu = o->offcpu;
			err = offcpu_open(&s->off, s->skel->obj, &oo, d);
		}
	}
	if (err) {
		bpf_sampler_close(s);
		return -1;
	}
	if (o->wall) {
		s->configs_fd = bpf_map__fd(s->wskel->maps.proc_configs);
		s->counters_fd = bpf_map__fd(s->wskel->maps.counters);
		s->execed_fd = bpf_map__fd(s->wskel->maps.execed);
		s->names.names_fd = bpf_map__fd(s->wskel->maps.code_names);
		s->names.tables_fd = bpf_map__fd(s->wskel->maps.code_tables);
		s->tstates_fd = bpf_map__fd(s->wskel->maps.tid_tstates);
		s->owners_fd = bpf_map__fd(s->wskel->maps.tstate_owners);
		s->th = thread_hooks_new(s->wskel->obj);
		s->new_fd = bpf_map__fd(s->wskel->maps.new_pids);
		s->new_lost_fd = bpf_map__fd(s->wskel->maps.new_pids_lost);
		events_fd = bpf_map__fd(s->wskel->maps.events);
	} else {
		s->configs_fd = bpf_map__fd(s->skel->maps.proc_configs);
		s->counters_fd = bpf_map__fd(s->skel->maps.counters);
		s->execed_fd = bpf_map__fd(s->skel->maps.execed);
		s->names.names_fd = bpf_map__fd(s->skel->maps.code_names);
		s->names.tables_fd = bpf_map__fd(s->skel->maps.code_tables);
		s->tstates_fd = bpf_map__fd(s->skel->maps.tid_tstates);
		s->owners_fd = bpf_map__fd(s->skel->maps.tstate_owners);
		s->th = thread_hooks_new(s->skel->obj);
		s->new_fd = bpf_map__fd(s->skel->maps.new_pids);
		s->new_lost_fd = bpf_map__fd(s->skel->maps.new_pids_lost);
		events_fd = bpf_map__fd(s->skel->maps.events);
	}
	if (native) {
		s->native = native_tables_new(bpf_map__fd(s->skel->maps.native_rows),
					      bpf_map__max_entries(s->skel->maps.native_rows),
					      bpf_map__fd(s->skel->maps.native_procs),
					      bpf_map__fd(s->skel->maps.native_counters), d);
		if (!s->native) {
			bpf_sampler_close(s);
			return -1;
		}
	}
	s->rb = ring_buffer__new(events_fd, on_record, s, NULL);
	if (!s->rb) {
		err = errno;
		bpf_sampler_close(s);
		return diag_errno(d, err, "cannot set up the BPF ring buffer");
	}
	s->ncpus = online_cpus(s->cpus, MAX_CPUS);
	if (s->ncpus <= 0) {
		bpf_sampler_close(s);
		return diag_set(d, EXIT_HOST, "cannot read /sys/devices/system/cpu/online");
	}
	s->idle_ms = idle_ms(s, (double)mb * 1048576.0);
	*out = s;
	return 0;
}

int bpf_sampler_start(struct bpf_sampler *s, struct diag *d)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .sample_period = s->period_ns, /* exact period, not adaptive frequency */
	};
	/* Without the exec hook a target that execs is still noticed, but only
	 * by its samples failing: worth a word, not worth refusing to record. */
	s->exec_link =
	    bpf_program__attach(s->wall ? s->wskel->progs.on_exec : s->skel->progs.on_exec);
	if (!s->exec_link)
		fprintf(stderr,
			"bpfpy: warning: cannot watch targets' execve (%s): a target that "
			"execs is not re-resolved\n",
			strerror(errno));
	/* Without either hook a growing target set is found by rescanning
	 * /proc (bpf_sampler_take_new says so). */
	if (s->exec_link && s->targets_grow) {
		s->fork_link =
		    bpf_program__attach(s->wall ? s->wskel->progs.on_fork : s->skel->progs.on_fork);
		if (!s->fork_link)
			fprintf(stderr,
				"bpfpy: warning: cannot watch targets' forks (%s): new processes "
				"are found by rescanning /proc\n",
				strerror(errno));
	}
	if (s->wall) {
		/* One process: let the kernel iterate only its threads. */
		DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
		union bpf_iter_link_info linfo;

		memset(&linfo, 0, sizeof(linfo));
		if (s->only_pid) {
			linfo.task.pid = s->only_pid;
			opts.link_info = &linfo;
			opts.link_info_len = sizeof(linfo);
		}
		s->iter_link = bpf_program__attach_iter(s->wskel->progs.wall_snapshot, &opts);
		if (!s->iter_link)
			return diag_errno(d, errno, "cannot attach the wall-clock task iterator");
		return 0;
	}
	if (s->off && offcpu_start(s->off, d))
		return -1;
	if (s->offcpu == 1) /* --clock offcpu: no on-CPU clock */
		return 0;
	if (bpf_loader_attach_cpus(s->skel->progs.on_cpu_tick, &attr, s->cpus, s->ncpus, s->pfd,
				   s->links, d) < 0)
		return -1;
	return 0;
}

int bpf_sampler_add(struct bpf_sampler *s, pid_t pid, const struct proc_config *cfg, struct diag *d)
{
	__u32 key = pid;
	struct proc_config c = *cfg;

	/* The kernel's to fill (bpfpy.h), and bpf_sampler_seed()'s. */
	memset(c.named, 0, sizeof(c.named));
	memset(c.tstates, 0, sizeof(c.tstates));
	c.flags &= ~PROC_INITIAL_PID_NS;
	if (proc_ns_pid_is_initial(pid))
		c.flags |= PROC_INITIAL_PID_NS;
	if (bpf_map_update_elem(s->configs_fd, &key, &c, BPF_ANY))
		return diag_errno(d, errno, "pid %d: cannot register with the BPF sampler", pid);
	s->nprocs++;
	s->only_pid = s->nprocs == 1 && !s->targets_grow ? pid : 0;
	/* Without its tables the process is still sampled: its native
	 * stacks then end at once, flagged NATIVE_LOST. */
	if (s->native && native_tables_attach(s->native, pid, d)) {
		diag_prefix(d, "warning: native stacks lost: ");
		diag_report(d);
	}
	return 0;
}

int bpf_sampler_set_async(struct bpf_sampler *s, pid_t pid, const struct async_config *a,
			  struct diag *d)
{
	__u32 key = pid;
	struct proc_config c;

	/* The kernel's hints in the value (named, tstates) may change between
	 * the lookup and the update: they are hints, a lost one costs a
	 * lookup. */
	if (bpf_map_lookup_elem(s->configs_fd, &key, &c))
		return diag_errno(d, errno, "pid %d: not registered with the BPF sampler", pid);
	c.async = *a;
	c.flags |= PROC_ASYNC;
	if (bpf_map_update_elem(s->configs_fd, &key, &c, BPF_EXIST))
		return diag_errno(d, errno, "pid %d: cannot update the BPF sampler's config", pid);
	return 0;
}

/* Bounds on what is seeded per process: on the reads, not on what is
 * sampled (a thread without a hint is searched for once, a code object
 * without a name is named by the kernel on its first sample). */
#define SEED_THREADS_MAX 1024
#define SEED_NAMES_MAX	 256

/* A code object's header, read by the seed (code_name_fill's buffer). */
static _Thread_local __u8 seed_cbuf[WALK_CBUF_SIZE + 8];

/* Put the name of code object k in code_names unless it is there; its
 * filter tag, or 0 when it could not be named. */
static __u64 seed_name(struct bpf_sampler *s, struct mem_reader *r, const struct proc_config *cfg,
		       const struct code_name_key *k)
{
	struct code_name n;

	if (bpf_map_lookup_elem(s->names.names_fd, k, &n)) { /* not named yet */
		struct code_table_key tk = {.name = *k};
		struct code_table_chunk chunk;

		/* Whole: the bytes past each length go into the maps too. */
		memset(&n, 0, sizeof(n));
		if (code_name_fill(r, &cfg->off, k->code, k->fingerprint, seed_cbuf, &n))
			return 0;
		/* The chunks first, as the kernel writes them (py_sample.bpf.h). */
		for (uint32_t i = 0; i < CODE_TABLE_CHUNKS; i++) {
			memset(&chunk, 0, sizeof(chunk));
			if (code_name_chunk(r, &cfg->off, seed_cbuf, &n, i, chunk.bytes) <= 0)
				break;
			tk.chunk = i;
			if (bpf_map_update_elem(s->names.tables_fd, &tk, &chunk, BPF_ANY)) {
				code_name_cut(&n, i);
				break;
			}
		}
		if (bpf_map_update_elem(s->names.names_fd, k, &n, BPF_NOEXIST))
			return 0;
		s->seeded_names++;
	}
	return code_named_tag(k->code, k->fingerprint);
}

/*
 * Name the code objects on the stack of the thread state tstate, as the
 * kernel would on their first samples (bpf/code_name.h, the same code),
 * each at most once: *budget counts down the objects looked at. Those
 * named go into kc's filter too, as the kernel would put them.
 */
static void seed_names(struct bpf_sampler *s, pid_t pid, struct mem_reader *r,
		       const struct proc_config *cfg, struct thread_stack *ts, int *budget,
		       struct proc_config *kc)
{
	__u64 tag;

	for (uint32_t i = 0; i < ts->nframes; i++) {
		const struct frame_rec *f = &ts->frames[i];
		struct code_name_key k = {
		    .pid = (__u32)pid, .fingerprint = f->fingerprint, .code = f->code};

		if (i > 0 && f->code == ts->frames[i - 1].code &&
		    f->fingerprint == ts->frames[i - 1].fingerprint)
			continue; /* recursion */
		if ((*budget)-- <= 0)
			break;
		tag = seed_name(s, r, cfg, &k);
		if (tag)
			code_named_put(kc->named, tag, 0);
	}
}

/* Levels of constants followed from a stack's code: a module's functions
 * and classes (1), a class's methods (2). */
#define SEED_CONST_LEVELS 2
/* Items of one co_consts tuple looked at: a hostile size costs no more.
 * Constants looked at per process, code or not (a type read each): a
 * module's strings and numbers, or a hostile target's, cost no more. */
#define SEED_CONST_ITEMS 256
#define SEED_CONST_LOOKS 1024

/*
 * Name the code objects that the code on a stack holds as constants. At
 * registration a light process is mostly asleep (<module> -> main ->
 * time.sleep), and the functions it runs when it wakes are on no stack:
 * under record -a their first samples named them in the kernel, about
 * 3 us each, much of such a process's cost. Their code objects are
 * constants of the module's code (a class's methods, of the class body's):
 * named here, from user space, SEED_CONST_LEVELS deep, within the same
 * budget. The filter's slots stay the stack's: a constant's tag only takes
 * an empty one (code_named_put's only_empty).
 *
 * Everything is read from a live, possibly hostile target: a tuple's size
 * is clamped, an item is named only if its type is the code type, and its
 * fingerprint is the one read with it, as the kernel would compute it.
 */
static void seed_consts(struct bpf_sampler *s, pid_t pid, struct mem_reader *r,
			const struct proc_config *cfg, const struct py_objlayout *ob,
			const struct thread_stack *ts, int *budget, struct proc_config *kc)
{
	__u64 queue[SEED_NAMES_MAX], items[SEED_CONST_ITEMS];
	uint64_t type_at[SEED_CONST_ITEMS], types[SEED_CONST_ITEMS];
	uint8_t ok[SEED_CONST_ITEMS];
	uint32_t nq = 0, level_end, head = 0;
	__u32 csize = cfg->off.code_read_size;
	int looks = SEED_CONST_LOOKS;

	if (!ob || !ob->code_consts || !ob->tuple_items || !cfg->code_type_addr ||
	    csize > BPFPY_CODE_BUF)
		return;
	for (uint32_t i = 0; i < ts->nframes && nq < SEED_NAMES_MAX; i++)
		if (!i || ts->frames[i].code != ts->frames[i - 1].code)
			queue[nq++] = ts->frames[i].code;
	for (int level = 0; level < SEED_CONST_LEVELS; level++) {
		for (level_end = nq; head < level_end; head++) {
			__u64 tuple = 0;
			__s64 n = 0;

			if (*budget <= 0 || looks <= 0)
				return;
			if (mem_read(r, &tuple, 8, queue[head] + ob->code_consts) || !tuple ||
			    mem_read(r, &n, 8, tuple + ob->tuple_size) || n <= 0)
				continue;
			if (n > SEED_CONST_ITEMS)
				n = SEED_CONST_ITEMS;
			if (n > looks)
				n = looks;
			if (mem_read(r, items, (size_t)n * 8, tuple + ob->tuple_items))
				continue;
			/* Every item's type in one batch: most constants are no
			 * code (names, numbers), and a read each was most of
			 * the seed's reads. */
			for (__s64 j = 0; j < n; j++)
				type_at[j] = items[j] + cfg->off.ob_type;
			mem_read_each(r, types, 8, type_at, (size_t)n, ok);
			for (__s64 j = 0; j < n; j++) {
				struct code_name_key k = {.pid = (__u32)pid, .code = items[j]};
				__u64 tag;

				if (*budget <= 0 || looks-- <= 0)
					return;
				if (!items[j] || !ok[j] || types[j] != cfg->code_type_addr)
					continue; /* not a code object */
				(*budget)--;
				if (mem_read(r, seed_cbuf, csize, items[j]))
					continue;
				k.fingerprint = walk_fingerprint(seed_cbuf, &cfg->off);
				tag = seed_name(s, r, cfg, &k);
				if (!tag)
					continue;
				code_named_put(kc->named, tag, 1);
				if (nq < SEED_NAMES_MAX)
					queue[nq++] = k.code;
			}
		}
	}
}

/* A thread the seed found, for the slot it may take at the end. */
struct seed_slot {
	__u32 tid;
	__u64 tstate;
};

/*
 * Thread tid of pid has state tstate (and showed frames, or not): its
 * entry in tid_tstates, unless the kernel's hooks already made one (a
 * thread spawned or cleared since they were attached knows better), and
 * the slot it may take (the main thread wins a shared one).
 */
static void seed_thread(struct bpf_sampler *s, pid_t pid, __u32 tid, __u64 tstate, int frames,
			struct seed_slot *slots)
{
	struct thread_entry e = {.tstate = tstate, .pid = (__u32)pid};
	struct tstate_owner_key k = {.pid = (__u32)pid, .tstate = tstate};
	struct seed_slot *sl = &slots[tid & (PROC_TSTATE_SLOTS - 1)];

	e.flags = frames ? THREAD_FRAMES : 0;
	if (bpf_map_update_elem(s->tstates_fd, &tid, &e, BPF_NOEXIST))
		return;
	bpf_map_update_elem(s->owners_fd, &k, &tid, BPF_NOEXIST);
	if (frames && (!sl->tstate || tid == (__u32)pid))
		*sl = (struct seed_slot){tid, tstate};
}

/*
 * What the seed learnt goes into the kernel's copy of the config as it is
 * now, in one update: the named filter, and a slot for each thread whose
 * entry is still the one seeded (a slot the clear hook emptied meanwhile
 * stays empty: its state is being freed).
 */
static void seed_commit(struct bpf_sampler *s, pid_t pid, const struct proc_config *kc,
			const struct seed_slot *slots)
{
	struct proc_config now;
	struct thread_entry e = {0};
	__u32 key = (__u32)pid;

	if (bpf_map_lookup_elem(s->configs_fd, &key, &now))
		return;
	memcpy(now.named, kc->named, sizeof(now.named));
	for (int i = 0; i < PROC_TSTATE_SLOTS; i++) {
		__u32 tid = slots[i].tid;

		if (slots[i].tstate && !now.tstates[i] &&
		    !bpf_map_lookup_elem(s->tstates_fd, &tid, &e) && !e.phase &&
		    e.tstate == slots[i].tstate)
			now.tstates[i] = slots[i].tstate;
	}
	bpf_map_update_elem(s->configs_fd, &key, &now, BPF_EXIST);
}

/*
 * Under `record -a` at 100 Hz most threads are sampled a few times a run,
 * so what a thread's first sample does once was much of the average: the
 * search of the thread list (about 4 times a hinted sample's find, and then
 * an LRU insert), and the naming of each code object on its stack. Both
 * are done here instead, from user space, at registration.
 *
 * Thread states: the kernel validates every hint against the thread's own
 * id before use (find_tstate), so a stale or wrong entry here costs only
 * that search. Python <= 3.10 keeps no OS tid in a thread state: nothing to
 * key by. 3.11+ keeps the tid of the target's PID namespace; the key is
 * the host's, so the status files are read only for a target in a PID
 * namespace of its own (elsewhere the two are one, and 200 targets read
 * them for nothing).
 *
 * Names: a live read, so a stack may be torn, but a name is put under the
 * (code, fingerprint) it was read with, checked as the kernel checks it; a
 * sample that later shows that pair finds its name already there.
 */
void bpf_sampler_seed(struct bpf_sampler *s, pid_t pid, struct mem_reader *r,
		      const struct proc_config *cfg, const struct py_objlayout *ob)
{
	struct diag d = {0};
	struct tstate_iter it;
	struct ns_tids nt = {0};
	struct thread_stack *ts = malloc(sizeof(*ts));
	struct seed_slot slots[PROC_TSTATE_SLOTS] = {{0}};
	int hints = cfg->off.tstate_native_thread_id != 0, budget = SEED_NAMES_MAX;
	struct proc_config kc;
	__u32 key = (__u32)pid;

	/* The registered copy: what is learnt here goes into it, then back in
	 * one update (seed_commit). */
	if (!ts || bpf_map_lookup_elem(s->configs_fd, &key, &kc)) {
		free(ts);
		return;
	}
	if (hints && proc_ns_pid_nested(pid) && proc_ns_tids_read(pid, &nt, &d))
		hints = 0;
	memset(&it, 0, sizeof(it));
	for (uint32_t i = 0; i < SEED_THREADS_MAX && tstate_iter_next(r, cfg, &it, i); i++) {
		__u64 tstate = it.tstate;
		__u32 tid = hints ? stack_thread_tid(r, cfg, tstate) : 0;
		int read = -1;

		if (tid && nt.nested)
			tid = proc_ns_host_tid(&nt, tid);
		/* A live read of a running thread can be torn (its leaf frame
		 * popped meanwhile): the walk then fails. Read again. */
		for (int tries = 0; (tid || budget > 0) && read && tries < 3; tries++)
			read = stack_read_thread(r, cfg, tstate, ts);
		if (tid)
			seed_thread(s, pid, tid, tstate, !read && ts->nframes, slots);
		if (!read && budget > 0 && s->names.names_fd >= 0) {
			seed_names(s, pid, r, cfg, ts, &budget, &kc);
			seed_consts(s, pid, r, cfg, ob, ts, &budget, &kc);
		}
	}
	free(ts);
	proc_ns_tids_free(&nt);
	seed_commit(s, pid, &kc, slots);
}

void bpf_sampler_remove(struct bpf_sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(s->configs_fd, &key);
	bpf_map_delete_elem(s->execed_fd, &key);
	thread_hooks_remove(s->th, pid);
	if (s->native)
		native_tables_detach(s->native, pid);
}

int bpf_sampler_watch_threads(struct bpf_sampler *s, pid_t pid, const struct py_binary *b,
			      uint32_t hex, struct diag *d)
{
	return thread_hooks_add(s->th, pid, b, hex, d);
}

void bpf_sampler_thread_hooks(const struct bpf_sampler *s, int *watched, int *failed)
{
	thread_hooks_stats(s->th, watched, failed);
}

int bpf_sampler_exec_pending(struct bpf_sampler *s)
{
	__u32 key;

	return !bpf_map_get_next_key(s->execed_fd, NULL, &key);
}

int bpf_sampler_take_exec(struct bpf_sampler *s, pid_t pid)
{
	__u32 key = pid;

	/* The kernel already dropped the config; deleting the flag is what
	 * makes this a one-shot report. */
	return bpf_map_delete_elem(s->execed_fd, &key) == 0;
}

int bpf_sampler_watches_new(const struct bpf_sampler *s)
{
	return s->targets_grow && s->exec_link && s->fork_link;
}

int bpf_sampler_take_new(struct bpf_sampler *s, pid_t *out, int max, int *lost)
{
	__u32 pid, zero = 0, nlost = 0;
	int n = 0;

	*lost = 0;
	if (!bpf_sampler_watches_new(s))
		return -1;
	/* pid zeroed before each pop: valgrind cannot see the bpf syscall
	 * write it (test_memcheck). */
	while (n < max && ((pid = 0), !bpf_map_lookup_and_delete_elem(s->new_fd, NULL, &pid)))
		out[n++] = (pid_t)pid;
	if (!bpf_map_lookup_elem(s->new_lost_fd, &zero, &nlost) && nlost) {
		*lost = 1;
		nlost = 0;
		bpf_map_update_elem(s->new_lost_fd, &zero, &nlost, BPF_ANY);
	}
	return n;
}

int bpf_sampler_snapshot(struct bpf_sampler *s, struct diag *d)
{
	char buf[64];
	int fd;

	if (!s->iter_link)
		return diag_set(d, EXIT_FAIL, "wall-clock iterator not started");
	/* Each read of a fresh iterator fd runs the program over every task;
	 * the program writes nothing to the seq file, so one read ends it. */
	fd = bpf_iter_create(bpf_link__fd(s->iter_link));
	if (fd < 0)
		return diag_errno(d, errno, "cannot run the wall-clock iterator");
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

int bpf_sampler_poll(struct bpf_sampler *s, int timeout_ms, bpf_sample_fn fn, void *ctx)
{
	int err;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->handled = 0;
	/* Records are written with BPF_RB_NO_WAKEUP, so epoll would sleep the
	 * whole timeout: consume what is there, sleep, consume again. */
	err = ring_buffer__consume(s->rb);
	if (err >= 0 && !s->handled && !s->stop && timeout_ms > 0) {
		usleep((useconds_t)timeout_ms * 1000);
		err = ring_buffer__consume(s->rb);
	}
	if (err < 0 && err != -EINTR && err != -EAGAIN && err != -ECANCELED)
		return -1;
	return s->handled;
}

int bpf_sampler_counters(struct bpf_sampler *s, uint64_t out[CNT__COUNT])
{
	return bpf_loader_percpu_sum(s->counters_fd, CNT__COUNT, out);
}

int bpf_sampler_code_name(void *sampler, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			  struct code_copy *out)
{
	struct bpf_sampler *s = sampler;

	return bpf_loader_code_name(&s->names, pid, addr, fingerprint, out);
}

uint64_t bpf_sampler_seeded_names(const struct bpf_sampler *s)
{
	return s->seeded_names;
}

uint64_t bpf_sampler_period_ns(const struct bpf_sampler *s)
{
	return s->period_ns;
}

double bpf_sampler_keep_prob(const struct bpf_sampler *s)
{
	return s->keep;
}

int bpf_sampler_ncpus(const struct bpf_sampler *s)
{
	return s->ncpus;
}

int bpf_sampler_set_enabled(struct bpf_sampler *s, bool on)
{
	int ret = 0;

	for (int i = 0; i < MAX_CPUS; i++)
		if (s->pfd[i] >= 0 &&
		    ioctl(s->pfd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
			ret = -1;
	return ret;
}

void bpf_sampler_stop(struct bpf_sampler *s)
{
	offcpu_stop(s->off);
	for (int i = 0; i < MAX_CPUS; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
		if (s->pfd[i] >= 0)
			close(s->pfd[i]);
		s->pfd[i] = -1;
	}
}

struct native_tables *bpf_sampler_native(struct bpf_sampler *s)
{
	return s->native;
}

void bpf_sampler_close(struct bpf_sampler *s)
{
	if (!s)
		return;
	native_tables_free(s->native);
	thread_hooks_free(s->th);
	bpf_sampler_stop(s);
	ring_buffer__free(s->rb);
	offcpu_close(s->off);
	bpf_link__destroy(s->iter_link);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->fork_link);
	sampler_bpf__destroy(s->skel);
	wallclock_bpf__destroy(s->wskel);
	free(s);
}

struct offcpu *bpf_sampler_offcpu(struct bpf_sampler *s)
{
	return s->off;
}
