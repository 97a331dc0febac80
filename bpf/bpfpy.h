/* SPDX-License-Identifier: MIT */
/*
 * The layouts shared by the BPF programs and user space: the offsets the
 * frame walker needs, the per-process configuration, and every event that
 * crosses the ring buffer. Both sides compile this one header, so a field
 * added here is added everywhere at once.
 *
 * Rules for this file: fixed-width types only, no pointers (user addresses
 * are __u64), explicit padding, no bitfields. It must compile in BPF C (with
 * vmlinux.h) and in C11 user space (with <linux/types.h>).
 */
#ifndef BPFPY_H
#define BPFPY_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Deepest stack a walk follows; deeper stacks are emitted truncated (leaf
 * part kept) with SAMPLE_TRUNCATED set. Configurable down from this. */
#define BPFPY_MAX_DEPTH	    1024
#define BPFPY_DEFAULT_DEPTH 1024

/* Bytes of a frame and of a code object the walker looks at. Frames are
 * read by the page (bpf/frame_walker.h, walk_fill), code objects one read
 * each, once per walk. */
#define BPFPY_FRAME_BUF 128
#define BPFPY_CODE_BUF	160

/* How a version links frames. */
enum frame_model {
	FRAME_MODEL_OBJECT = 1, /* <=3.10: tstate->frame is a PyFrameObject chain */
	FRAME_MODEL_CFRAME = 2, /* 3.11/3.12: tstate->cframe->current_frame */
	FRAME_MODEL_DIRECT = 3, /* 3.13+: tstate->current_frame */
};

/*
 * Everything version-specific the walk needs. Filled in user space from a
 * per-version table (<=3.12) or from the target's _Py_DebugOffsets (3.13+),
 * see user/python/py_offsets.c. A zero offset means "this version has no such
 * field" wherever zero cannot be a real offset.
 */
struct py_offsets {
	__u32 version_hex;	/* PY_VERSION_HEX of the target */
	__u8 frame_model;	/* enum frame_model */
	__u8 lasti_is_bytes;	/* <=3.9: f_lasti counts bytes, not code units */
	__u8 tagged_code;	/* 3.14+: f_executable is a _PyStackRef (low 2 bits tag) */
	__u8 code_may_be_other; /* 3.13+: f_executable may be a non-code object */
	__u8 skip_owner_mask;	/* bit n set: skip frames whose owner == n */
	__u8 has_base_frame;	/* 3.15+: the chain must end at tstate->base_frame */
	__u8 ascii_data_off;	/* compact ASCII str data, from the object */
	__u8 compact_data_off;	/* compact non-ASCII str data */

	/* runtime / interpreter / thread state */
	__u16 runtime_interpreters_head;
	__u16 interp_next;
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_frame; /* frame / cframe / current_frame, by model */
	__u16 cframe_current_frame;
	__u16 cframe_previous; /* the caller's _PyCFrame (3.11/3.12), see walk_entry_expect() */
	__u16 tstate_base_frame;
	__u16 tstate_native_thread_id; /* 0: version has none (<=3.10) */
	__u16 tstate_thread_id;	       /* pthread_t */

	/* frames */
	__u16 frame_code;
	__u16 frame_previous;
	__u16 frame_instr; /* <=3.10: f_lasti (int); 3.11+: instruction pointer */
	__u16 frame_owner; /* 3.11+ */
	__u16 frame_read_size;

	/* code objects */
	__u16 code_argcount;
	__u16 code_flags;
	__u16 code_firstlineno;
	__u16 code_filename;
	__u16 code_name;
	__u16 code_qualname;  /* 0 before 3.11: use co_name */
	__u16 code_linetable; /* co_linetable (3.10+) or co_lnotab (<=3.9) */
	__u16 code_adaptive;  /* start of bytecode inside the code object, 3.11+ */
	__u16 code_read_size;
	__u16 ob_type;

	/* str and bytes objects */
	__u16 unicode_state;
	__u16 unicode_length;
	__u16 bytes_size;
	__u16 bytes_data;
	/* 3.11-3.14: a real chain ends at an entry frame, the one the C code
	 * that started the interpreter pushed: the byte at this frame offset
	 * (is_entry in 3.11, owner after) has bit (value & 7) set in
	 * frame_bottom_mask. 0: no such rule (<= 3.10; 3.15 has base_frame). */
	__u16 frame_bottom_off;
	__u8 frame_bottom_mask;
	/* A str whose state & str_ascii_mask == str_ascii_value is compact
	 * ASCII: its bytes sit at ascii_data_off, one per character. The only
	 * strings the kernel copies (code_names below). */
	__u8 str_ascii_mask;
	__u8 str_ascii_value;
	/* record --exception (issue 30). The thread's exception in flight is
	 * the word at tstate_cur_exc: curexc_type, a type (cur_exc_is_type,
	 * <= 3.11), or current_exception, an exception (3.12+). The one being
	 * handled is the exc_value word at stackitem_exc_value of the
	 * _PyErr_StackItem that tstate_exc_info points to (the innermost
	 * generator's or the thread's own; the chain is not followed). */
	__u8 cur_exc_is_type;
	__u8 stackitem_exc_value;
	/* record --opcodes (walk_leaf_op()): EXTENDED_ARG's opcode where the
	 * frame's instruction index rests on that prefix while the
	 * instruction it prefixes runs (<= 3.10, f_lasti), so that the walk
	 * steps over it; 0 where it does not (3.11+). */
	__u8 op_prefix;
	__u16 tstate_cur_exc;
	__u16 tstate_exc_info;
	/* record --opcodes: where the bytecode is. <= 3.10: co_code, a bytes
	 * object (bytes_size, bytes_data above); 3.11+: code_adaptive above,
	 * and code_units, the code object's var-header ob_size, its length
	 * in code units. 0: the version has no such field. */
	__u16 code_code;
	__u16 code_units;
	/* Threads being born (issue 28, bpf/thread_watch.bpf.h): the thread
	 * state of a new thread is in the argument its creator hands to the
	 * spawn function (py_thread_spawn_symbol), a struct of _thread's, at
	 * boot_tstate; where boot_runtime is not 0 and the word there is
	 * &_PyRuntime, an older layout of the minor's (3.11 changed it within
	 * its micro releases) keeps it at boot_runtime - 8 instead. A state
	 * its creator made holds the creator's thread id (boot_tid_parent,
	 * <= 3.11) or 0 (3.12+) until the new thread binds it. thread_hooks:
	 * 0 when the version's facts are not known. */
	__u8 boot_tstate;
	__u8 boot_runtime;
	__u8 boot_tid_parent;
	__u8 thread_hooks;
};

#define PROC_NAMED_SLOTS  16 /* 8 sets of 2: code_named_set() takes a tag's top 3 bits */
#define PROC_TSTATE_SLOTS 8  /* a power of two */

/* proc_config.flags, set by user space at registration */
/* The process is in the initial PID namespace (proc_ns_pid_is_initial):
 * the tid its threads see is task->pid, so the BPF side does not read the
 * task's PID links for it (a cold cache line every sample under
 * record -a, docs/bench.md). Unset: they are read. */
#define PROC_INITIAL_PID_NS (1u << 0)
/* record --async: after the frames, capture the thread's running asyncio
 * task (bpf/task_walker.h) into a struct task_rec. */
#define PROC_ASYNC (1u << 1)
/* record --exception: only threads with an exception in flight or being
 * handled are sampled, and its type goes into the sample (walk_exc()). */
#define PROC_EXCEPTION (1u << 2)
/* record --opcodes: the byte at the leaf frame's instruction goes into the
 * sample (sample_hdr.leaf_op and op_flags, walk_leaf_op()). */
#define PROC_OPCODES (1u << 3)

/*
 * What the kernel needs to find a thread's running asyncio task
 * (bpf/task_walker.h), from user/python/py_asyncio.c. All zero unless
 * PROC_ASYNC. 3.14+: the thread state names it (tstate_running_task).
 * 3.11-3.13: the asyncio module's current-tasks dict {loop: task} at
 * current_tasks; its entries are scanned and the task whose coroutine's
 * frame is one of the thread's generator frames is the running one.
 */
/*
 * Coroutines and generators, for coro_step() in bpf/task_walker.h: where their frame and
 * frame state sit, which states mean "suspended in an await", and how to
 * find the awaited object on the suspended frame's value stack.
 */
struct coro_layout {
	__u16 gen_iframe;      /* PyGenObject.gi_iframe */
	__u16 gen_frame_state; /* PyGenObject.gi_frame_state (int8) */
	__u16 frame_code;      /* _PyInterpreterFrame f_executable (f_code) */
	__u16 frame_instr;     /* instr_ptr / prev_instr */
	/* The value stack's top: 3.11-3.13 an int count of slots from
	 * localsplus (stacktop); 3.14+ a pointer (stackpointer). */
	__u16 frame_stack;
	__u16 frame_localsplus;
	__u8 stack_is_pointer;
	__u8 await_slot;      /* the awaited object is this many slots below the top */
	__s8 state_awaiting;  /* gi_frame_state of a frame suspended in an await */
	__s8 state_awaiting2; /* another such state (3.15: ..._LOCKED), else = the first */
	__u64 ref_mask;	      /* ~3 where stack slots and f_executable are tagged, else ~0 */
};

#define TASK_SCAN_MAX 8	 /* current-tasks entries looked at (3.11-3.13) */
#define TASK_NAME_RAW 64 /* bytes of the task's name object copied */
/* The running task's first awaiter (task_awaiter() in bpf/task_walker.h):
 * 3.14+ slots of an awaited_by set looked at (a table of 8 holds up to 4
 * entries); 3.11-3.13 entries of fut_callbacks looked at after
 * fut_callback0; the bytes of the callback's method name compared. */
#define TASK_AW_SLOTS	  8
#define TASK_AW_CALLBACKS 3
#define TASK_WAKEUP_NAME  12
#define TASK_AW_FRAMES	  4 /* links of the awaiter's coroutine chain recorded */
struct async_config {
	__u64 current_tasks;	   /* 3.11-3.13: the dict; 0 on 3.14+ */
	__u16 tstate_running_task; /* 3.14+: _PyThreadStateImpl.asyncio_running_task */
	__u16 task_coro;
	__u16 task_name;
	__u16 gen_iframe;	     /* PyGenObject.gi_iframe: the coroutine's frame */
	__u16 dict_keys;	     /* PyDictObject.ma_keys */
	__u16 keys_log2_index_bytes; /* PyDictKeysObject.dk_log2_index_bytes (a byte) */
	__u16 keys_nentries;	     /* dk_nentries */
	__u16 keys_indices;	     /* dk_indices */
	__u8 gen_owner;		     /* _PyInterpreterFrame.owner of a generator's frame */
	__u8 pad[1];
	/* Who awaits the running task. 3.14+ (task_awaited_by != 0): the
	 * task's awaited_by, one task or (its is-set byte) a set of them;
	 * a task's is_task byte is 1. */
	__u16 task_awaited_by;
	__u16 task_awaited_by_is_set;
	__u16 task_is_task;
	__u16 set_used, set_mask, set_table; /* PySetObject; entries (key, hash) */
	/* 3.11-3.13 (task_callbacks != 0): an awaiting task registered its
	 * task_wakeup, a built-in method whose self is the awaiter, as a done
	 * callback of the task it awaits: fut_callback0, or a (callback,
	 * context) tuple in the list fut_callbacks. */
	__u16 task_callback0, task_callbacks;
	__u16 list_size, list_items, tuple_items;
	__u16 cfunc_ml, cfunc_self; /* PyCFunctionObject m_ml, m_self */
	__u16 pad2;
	/* PyMethodDef.ml_name (its first field) of task_wakeup, NUL padded. */
	__u8 wakeup_name[TASK_WAKEUP_NAME];
	__u16 ob_type; /* PyObject.ob_type */
	__u8 pad3[2];
	/* The awaiter's coroutine chain (coro_step()). */
	struct coro_layout coro;
};

/* Per traced process. Keyed by host tgid in the BPF map proc_configs. */
struct proc_config {
	struct py_offsets off;
	__u64 runtime_addr;    /* &_PyRuntime in the target */
	__u64 code_type_addr;  /* &PyCode_Type, 0 if unknown */
	__u64 none_addr;       /* &_Py_NoneStruct, 0 if unknown */
	__u64 gil_locked_addr; /* int: GIL locked; 0 if unknown */
	__u64 gil_holder_addr; /* PyThreadState *: last holder; 0 if unknown */
	__u32 max_depth;
	__u32 flags; /* PROC_* */
	/* Off-CPU (bpf/offcpu.bpf.c): a futex word in [gil_wait_lo, gil_wait_hi)
	 * is the GIL's mutex or condition variable, so a thread asleep on it
	 * waits for the GIL. From py_gil_wait_range(); 0, 0 if unknown. */
	__u64 gil_wait_lo;
	__u64 gil_wait_hi;
	/* Written by the kernel, zeroed by user space at registration: tags of
	 * code objects this process's samples found in code_names (or put
	 * there), see code_named_tag() in bpf/code_name.h. A sample that finds
	 * its code here skips the map lookup, a cold one under record -a
	 * (docs/bench.md). A hint only: two-way sets, so a third code
	 * whose tag chooses a full set takes one of its ways (code_named_put),
	 * and a tag that survives the map's eviction
	 * of its entry only means the kernel does not name that code again
	 * (user space reads live objects itself). */
	__u64 named[PROC_NAMED_SLOTS];
	/* Written by the kernel and by bpf_sampler_seed(): the thread state
	 * last found for a tid, in slot tid % PROC_TSTATE_SLOTS. Checked
	 * against the thread's id before use like every tid_tstates hint, so
	 * a slot two threads share only costs a lookup there. In front of that
	 * map because this value is read by every sample anyway, and a lookup
	 * in a 65536-entry map is a cold one (docs/bench.md). Only a thread
	 * that showed frames gets its slot (THREAD_FRAMES), and the clear hook
	 * empties a slot before the state in it is freed. */
	__u64 tstates[PROC_TSTATE_SLOTS];
	struct async_config async;
	/* The main interpreter's gc.collecting (an int; _PyRuntime's in 3.8):
	 * a sample of the GIL holder while it is set is marked GC_COLLECTING.
	 * 0: not read (record --no-gc, or unknown). */
	__u64 gc_collecting_addr;
};

/*
 * What the kernel knows of a thread of a target (map tid_tstates, key host
 * tid; bpf/thread_watch.bpf.h keeps it, bpf_sampler_seed fills it at
 * registration). phase 0: tstate is the thread's (a hint, checked before
 * use); THREAD_PHASE_STARTING: the thread was spawned by _thread and has
 * not bound tstate yet; THREAD_PHASE_EXITING: PyThreadState_Clear ran on
 * tstate, which is never read again.
 */
#define THREAD_PHASE_STARTING 1
#define THREAD_PHASE_EXITING  2
#define THREAD_SPAWNED	      (1u << 0) /* born by _thread while sampled: never rebinds */
#define THREAD_FRAMES	      (1u << 1) /* a sample of it had Python frames */

struct thread_entry {
	__u64 tstate;
	__u32 pid; /* host tgid: a tid reused by another process is not this one */
	__u8 phase;
	__u8 flags; /* THREAD_SPAWNED, THREAD_FRAMES */
	__u16 pad;
};

/* Map tstate_owners: (process, thread state) -> host tid of its thread. */
struct tstate_owner_key {
	__u32 pid;
	__u32 pad;
	__u64 tstate;
};

/* Why a walk failed. A failed walk is counted, never emitted as a stack. */
enum walk_error {
	WALK_OK = 0,
	WALK_ERR_READ_TSTATE,  /* thread state not readable */
	WALK_ERR_READ_FRAME,   /* a frame not readable (page not resident, torn) */
	WALK_ERR_READ_CODE,    /* a code object not readable */
	WALK_ERR_BAD_CODE,     /* a frame's code is not a code object */
	WALK_ERR_NO_BASE,      /* 3.15: chain did not end at tstate->base_frame */
	WALK_ERR_NO_TSTATE,    /* thread has no Python thread state */
	WALK_ERR_NO_CONFIG,    /* process not configured */
	WALK_ERR_CYCLE,	       /* a frame links to itself */
	WALK_ERR_THREAD_CYCLE, /* the thread list loops (tstate->next revisits one) */
	WALK_ERR_NO_ENTRY,     /* 3.11-3.14: chain did not end at an entry frame */
	WALK_ERR_UNNAMED,      /* user space: a frame's code object could not be named */
	WALK_ERR__COUNT,
};

/* One frame as it crosses from the walker to the symbolizer. */
struct frame_rec {
	__u64 code;	   /* code object address in the target */
	__s32 instr;	   /* raw: f_lasti (<=3.10), or the instruction pointer's byte
			    * offset from the code object (3.11+); walk_instr_index()
			    * turns it into an index in code units */
	__u32 fingerprint; /* identity of the code object, see walk_fingerprint() */
};

/* frame_rec.instr bit 31: the frame is the last Python frame (towards the
 * root) that one C-level call of the eval loop owns, so that native frames
 * can be spliced (docs/native-stacks.md). walk_instr_index() masks it off. */
#define FRAME_INSTR_ENTRY (1u << 31)

/*
 * Names of code objects, copied by the kernel the first time a sample shows
 * a (process, code address, fingerprint): BPF LRU hash code_names. Short-
 * lived code (exec/compile loops, and every module's top-level code, freed
 * once the import ran it) is often freed before user space gets to the
 * sample; user space falls back on this copy when its own read of the
 * object fails or finds another object (code_cache_set_names). Only what
 * fits is copied: compact ASCII strings shorter than the buffers (others
 * are left to user space, as before) and the first CODE_TABLE_LIMIT bytes
 * of the line table (lines past them are then unknown, never guessed).
 *
 * The table's first CODE_TABLE_MAX bytes sit in code_name.table; the rest
 * in chunks of CODE_TABLE_CHUNK bytes, in the LRU hash code_tables under
 * (the same key, chunk index), written before the code_names entry. Most
 * functions' tables fit in table[] (3.11: 84%; 3.12: 91%), most modules'
 * do not (3.11: 30%), and chunks keep the maps' memory to what the tables
 * need: 8192 names of 660 bytes and 2048 chunks of 4 KiB, 14 MB in all,
 * where 8192 whole copies would take 140 MB. CODE_TABLE_LIMIT holds all
 * but 0.1% of the standard library's module tables (3.11: longest 39 KB,
 * 99th percentile 7.3 KB) and all of its functions' (longest 10 KB).
 * Four chunks, so that the kernel's loop over them can be written out.
 */
#define CODE_NAME_MAX	  128 /* powers of two: the kernel masks lengths */
#define CODE_FILE_MAX	  256
#define CODE_TABLE_MAX	  256
#define CODE_TABLE_CHUNK  4096
#define CODE_TABLE_CHUNKS 4
#define CODE_TABLE_LIMIT  (CODE_TABLE_MAX + CODE_TABLE_CHUNKS * CODE_TABLE_CHUNK)
#define CODE_NAMES_MAX	  8192 /* entries, all processes together */
#define CODE_TABLES_MAX	  2048 /* chunks, all processes together */

#define CODE_NAME_FILE	(1u << 0) /* file[] holds the file name */
#define CODE_NAME_TABLE (1u << 1) /* table_len bytes of the line table were copied */
#define CODE_NAME_CUT	(1u << 2) /* the line table is longer than table_len */

struct code_name_key {
	__u32 pid; /* host tgid */
	__u32 fingerprint;
	__u64 code;
};

struct code_name {
	__s32 firstlineno;
	__u16 name_len; /* bytes in name[], no NUL */
	__u16 file_len;
	__u16 table_len; /* bytes copied: table[], then the chunks */
	__u16 flags;	 /* CODE_NAME_* */
	__u32 pad;
	char name[CODE_NAME_MAX];
	char file[CODE_FILE_MAX];
	__u8 table[CODE_TABLE_MAX];
};

/* code_tables: chunk i holds table bytes CODE_TABLE_MAX + i * CODE_TABLE_CHUNK
 * on, CODE_TABLE_CHUNK of them but in the last one. */
struct code_table_key {
	struct code_name_key name;
	__u32 chunk;
	__u32 pad;
};

struct code_table_chunk {
	__u8 bytes[CODE_TABLE_CHUNK];
};

/* sample_hdr.flags */
#define SAMPLE_TRUNCATED (1u << 0) /* deeper than max_depth: leaf part only */
#define SAMPLE_GIL_KNOWN (1u << 1) /* the GIL bit below means something */
#define SAMPLE_GIL_HELD	 (1u << 2) /* this thread held the GIL */
#define SAMPLE_IDLE	 (1u << 3) /* wall clock: thread was not running */
#define SAMPLE_WALL	 (1u << 4) /* taken by the wall-clock iterator */
#define SAMPLE_ERROR	 (1u << 5) /* walk failed: err holds the cause, no frames */
#define SAMPLE_TRACE	 (1u << 6) /* taken at a trace probe, see trace_hdr */
/* record --cost-floor (bpf/sampler.bpf.c floor_sample): no frames, args[0]
 * the 8 bytes read at tstate (at _PyRuntime where tstate is 0); user space
 * counts it and draws nothing. */
#define SAMPLE_FLOOR (1u << 7)

/* Header of every ring-buffer record; nframes frame_rec follow, leaf first. */
struct sample_hdr {
	__u64 ts_ns; /* bpf_ktime_get_ns() at the sample */
	__u64 tstate;
	__u32 pid; /* host tgid */
	__u32 tid; /* host tid */
	__u32 cpu;
	__u32 cost_ns; /* in-kernel time this sample took */
	__u16 nframes;
	__u8 flags;
	__u8 err;	/* enum walk_error when SAMPLE_ERROR */
	__u32 probe_id; /* trace: which probe fired; 0 for samples */
	__u64 args[2];	/* trace: probe arguments */
	/* Off-CPU records (bpf/offcpu.bpf.c) only, 0 in every other: the stack
	 * was taken as the thread left the CPU at ts_ns and the record written
	 * when it came back, weight_ns later, for the reason offcpu_reason. */
	__u64 weight_ns;
	/* --native / --kernel (docs/native-stacks.md): after the nframes
	 * frame_rec come nnative user return addresses, then nkernel kernel
	 * ones, each __u64, leaf first. 0 unless the sampler was loaded so. */
	__u16 nnative;
	__u16 nkernel;
	__u32 native_flags; /* NATIVE_* below */
	__u8 offcpu_reason; /* enum offcpu_reason, see weight_ns */
	/* record --async: TASK_REC_PRESENT when a struct task_rec follows the
	 * native and kernel addresses (the record's very end). */
	__u8 task_flags;
	/* Reserved so that the open work on the sample does not collide: each
	 * is 0 unless its feature was loaded. leaf_op/op_flags: record
	 * --opcodes, the opcode byte of the code unit at the leaf frame's
	 * instruction, as the interpreter holds it (quickened, specialized or
	 * instrumented), and OP_* below; the instruction's place is the leaf
	 * frame_rec's instr (plus the prefixes OP_PREFIXES says were stepped
	 * over). gc_flags: the interpreter was collecting (issue 30).
	 * exc_flags and exc_type: record --exception, the in-flight or handled
	 * exception's type object (issue 30). thread_phase: THREAD_PHASE_STARTING
	 * or _EXITING, a tick of a thread being born or torn down, without
	 * frames (issue 28). */
	__u8 leaf_op;
	__u8 op_flags;
	__u8 gc_flags;
	__u8 exc_flags;
	__u8 thread_phase;
	__u8 pad2;
	__u64 exc_type;
};

#define TASK_REC_PRESENT (1u << 0)

/* sample_hdr.op_flags (record --opcodes). None of the first three: the
 * byte could not be read (the read faulted). */
#define OP_READ	       (1u << 0) /* leaf_op is the instruction's opcode byte */
#define OP_NOT_STARTED (1u << 1) /* the frame has started no instruction yet */
#define OP_OUTSIDE     (1u << 2) /* the index lies past the bytecode's end: not read */
/* Bits 3-4: EXTENDED_ARG prefixes stepped over (<= 3.10, op_prefix): the
 * byte named is that many code units after the leaf frame's instruction. */
#define OP_PREFIX_SHIFT 3
#define OP_PREFIXES(f)	(((f) >> OP_PREFIX_SHIFT) & 3)

/* sample_hdr.gc_flags */
#define GC_COLLECTING (1u << 0) /* the GIL holder, while the interpreter collects */
/* sample_hdr.exc_flags; exc_type is then the exception's type object */
#define EXC_IN_FLIGHT (1u << 0) /* raised, not caught yet */
#define EXC_HANDLED   (1u << 1) /* being handled: an except or finally block */

/* task_rec.flags */
#define TASK_AT_FRAME  (1u << 0) /* frame_idx is the task coroutine's frame */
#define TASK_NAME_READ (1u << 1) /* name_raw holds the name object's first bytes */
#define TASK_SCAN_CUT  (1u << 2) /* 3.11-3.13: more current tasks than TASK_SCAN_MAX */
#define TASK_NOT_FOUND (1u << 3) /* 3.11-3.13: a loop runs a task, none of this thread's */
/* task_rec.aw_flags: the first awaiter, read with the running task. */
#define TASK_AW_READ	   (1u << 0) /* where awaiters are kept was read: awaiter 0 means none seen */
#define TASK_AW_NAME_READ  (1u << 1) /* awaiter_name_raw holds its name object's first bytes */
#define TASK_AW_CUT	   (1u << 2) /* more slots or callbacks than looked at: another may be lower */
#define TASK_AW_NOT_TASK   (1u << 3) /* the lowest seen is no task (3.14+ is_task): dropped */
#define TASK_AW_FRAMES_CUT (1u << 4) /* its chain went on past TASK_AW_FRAMES links */

/*
 * The running task of the sampled thread, as the kernel read it at the
 * sample (bpf/task_walker.h): which task, its coroutine, the first bytes
 * of its name object, header included (a str, or an int on 3.12+ where
 * unnamed tasks keep their number; user space decodes it), and where in frames[] its
 * coroutine's frame is: frames[0..frame_idx] ran in the task, the rest is
 * the event loop. task 0 with the record present: the thread's loop runs
 * no task now (between callbacks, or a plain callback).
 */
struct task_rec {
	__u64 task;
	__u64 coro;
	__u16 frame_idx;
	__u8 flags;    /* TASK_* above */
	__u8 aw_flags; /* TASK_AW_* above */
	__u8 pad[4];
	__u8 name_raw[TASK_NAME_RAW];
	/* The task awaiting this one, read at the same sample: the lowest
	 * address among those looked at (0: none seen), its coroutine, its
	 * name object's first bytes; nawaiters the awaiters seen (3.14+: the
	 * set's size when a set). Where it is suspended: aw_frames[0..
	 * naw_frames), its own coroutine's frame first, then the coroutines
	 * it awaits in turn (code, and instr as the instruction pointer's
	 * byte offset from the code object; fingerprint 0). */
	__u64 awaiter;
	__u64 awaiter_coro;
	__u32 nawaiters;
	__u8 naw_frames;
	__u8 pad2[3];
	__u8 awaiter_name_raw[TASK_NAME_RAW];
	struct frame_rec aw_frames[TASK_AW_FRAMES];
};

/* sample_hdr.native_flags */
#define NATIVE_TRUNCATED   (1u << 0) /* native stack deeper than NATIVE_MAX_DEPTH */
#define NATIVE_FP_FALLBACK (1u << 1) /* a frame was found by frame pointer (no CFI) */
#define NATIVE_LOST	   (1u << 2) /* unwinding stopped early; cause in bits 8-15 */
#define KERNEL_TRUNCATED   (1u << 3) /* kernel stack deeper than KERNEL_MAX_DEPTH */
#define NATIVE_CAUSE_SHIFT 8	     /* (native_flags >> 8) & 0xff: enum native_cause */
#define NATIVE_CAUSE(f)	   (((f) >> NATIVE_CAUSE_SHIFT) & 0xff)

#define NATIVE_MAX_DEPTH 128 /* native frames per sample */
#define KERNEL_MAX_DEPTH 64  /* kernel frames per sample */
#define NATIVE_MAX_MAPS	 256 /* executable mappings per process with a table */

/* Why native unwinding stopped before the stack's end (NATIVE_LOST), and
 * the other native counters: BPF per-CPU array native_counters. */
enum native_cause {
	NATIVE_OK = 0,
	NATIVE_NO_PROC,	    /* the process has no native maps (not attached) */
	NATIVE_NO_MAP,	    /* an address in no mapping with a table: dlopen, JIT */
	NATIVE_READ,	    /* the stack (return address, saved rbp) unreadable */
	NATIVE_BAD_FRAME,   /* CFA not above the stack pointer, or RA 0 mid-stack */
	NATIVE_UNSUPPORTED, /* a CFI rule the unwinder does not follow (expression) */
	NATIVE_NO_REGS,	    /* no user registers (kernel thread, exiting task) */
	NATIVE_CAUSE__COUNT,
};

enum native_counter {
	NCNT_SAMPLES = 0,   /* samples unwound */
	NCNT_FRAMES,	    /* native frames emitted */
	NCNT_FP_FRAMES,	    /* of which by frame pointer */
	NCNT_TRUNCATED,	    /* deeper than NATIVE_MAX_DEPTH */
	NCNT_NS,	    /* ns spent in native unwinding */
	NCNT_KERNEL_FRAMES, /* kernel frames emitted */
	NCNT_LOST_BASE,	    /* + enum native_cause */
	NCNT__COUNT = NCNT_LOST_BASE + NATIVE_CAUSE__COUNT,
};

/*
 * Unwind tables (user/native/unwind_tables.c builds them from .eh_frame /
 * .debug_frame with libdw). One row says how to find the caller from any pc
 * in [pc, next row's pc), pc being the file's virtual address (ip - bias).
 * All tables live in one BPF array native_rows, each file's rows sorted
 * and contiguous: processes mapping the same file share them.
 */
enum unwind_cfa {
	UNW_CFA_NONE = 0,	 /* no CFI here: frame-pointer fallback (kind & 7) */
	UNW_CFA_RSP = 1,	 /* CFA = rsp + cfa_off */
	UNW_CFA_RBP = 2,	 /* CFA = rbp + cfa_off */
	UNW_CFA_PLT = 3,	 /* .plt: CFA = rsp + 8 + ((ip & 15) >= cfa_off ? 8 : 0) */
	UNW_CFA_END = 4,	 /* outermost frame (return address undefined): stop */
	UNW_CFA_UNSUPPORTED = 5, /* DWARF expression, RA not at CFA-8, ...: stop */
};

enum unwind_rbp {
	UNW_RBP_SAME = 0,  /* caller's rbp is ours */
	UNW_RBP_CFA = 1,   /* caller's rbp saved at CFA + rbp_off * 8 */
	UNW_RBP_UNDEF = 2, /* caller's rbp not recoverable: keep ours (unused later) */
};

/* unwind_row.kind: bit 3 set, cfa_off counts 8-byte words (big frames) */
#define UNW_CFA_SCALED 8

struct unwind_row {
	__u32 pc;      /* file vaddr where the row starts */
	__u8 kind;     /* enum unwind_cfa | UNW_CFA_SCALED | enum unwind_rbp << 4 */
	__s8 rbp_off;  /* in 8-byte words from the CFA */
	__u16 cfa_off; /* bytes (words if UNW_CFA_SCALED); PLT: the ip & 15 threshold */
};

#define NATIVE_ROWS_MAX (1u << 22) /* rows of every table together (32 MiB) */

/* One executable mapping of a process: ip in [start, end) has file vaddr
 * ip - bias, looked up in rows [first, first + count) of native_rows. */
struct native_map {
	__u64 start, end;
	__u64 bias;
	__u32 first, count; /* count 0: no table (frame pointers only) */
};

/* Per process (BPF hash native_procs, key host tgid): its executable
 * mappings, sorted by start, non-overlapping. */
struct native_proc {
	__u32 nmaps;
	__u32 pad;
	struct native_map maps[NATIVE_MAX_MAPS];
};

/* A whole ring-buffer record, as built in per-CPU scratch before output. */
struct sample_buf {
	struct sample_hdr hdr;
	struct frame_rec frames[BPFPY_MAX_DEPTH];
	/* Room for the native and kernel addresses, which follow frames[nframes]
	 * directly (so they start inside frames[] when the stack is short). */
	__u64 native_room[NATIVE_MAX_DEPTH + KERNEL_MAX_DEPTH];
	/* record --async: the struct task_rec after all of them. */
	__u8 task_room[sizeof(struct task_rec)];
};

/* The steps of an in-kernel sample that record --phases times apart. */
enum cost_phase {
	PHASE_START = 0, /* program start to the sample: config lookup, thinning, task ids */
	PHASE_FIND,	 /* the thread state: the process's slots, tid_tstates, search */
	PHASE_WALK,	 /* the frames, the GIL's two words, --opcodes' byte */
	PHASE_NAME,	 /* code names: the filter, code_names, copies */
	PHASE_NATIVE,	 /* native and kernel frames (--native, --kernel) */
	PHASE_OUTPUT,	 /* the ring buffer */
	PHASE__COUNT,
};

/* Per-CPU counters, index = enum counter. */
enum counter {
	CNT_TICKS = 0, /* perf events that fired in a target */
	CNT_KEPT,      /* ticks kept after Poisson thinning */
	CNT_EMITTED,   /* records written to the ring buffer */
	CNT_LOST,      /* records lost to a full ring buffer */
	CNT_NO_PYTHON, /* thread of a target without a Python thread state */
	CNT_TRUNCATED, /* stacks deeper than max_depth */
	CNT_FRAMES,    /* frames walked, for per-frame cost */
	CNT_COST_NS,   /* total in-kernel ns spent on kept ticks */
	CNT_NAMED,     /* code objects named into code_names */
	/* record --async (bpf/task_walker.h), per sample with PROC_ASYNC: */
	CNT_TASK_FOUND,	  /* a running task captured */
	CNT_TASK_NONE,	  /* no running task (the loop between tasks, no loop) */
	CNT_TASK_CUT,	  /* 3.11-3.13: current tasks past TASK_SCAN_MAX not looked at */
	CNT_NO_EXCEPTION, /* record --exception: ticks of a thread with no exception, not sampled */
	/* Issue 28, bpf/thread_watch.bpf.h: threads entered as spawned at
	 * their clone, thread states marked cleared, and the hooks' runs
	 * (spawn, clone, clear, exit) and their ns. */
	CNT_THREADS_BORN,
	CNT_THREADS_CLEARED,
	CNT_HOOK_RUNS,
	CNT_HOOK_NS,
	/* 3.11/3.12: walks taken again from the caller's frame because the
	 * innermost eval call was being entered (walk_entry_expect()). */
	CNT_ENTRY_RETRY,
	CNT_ERR_BASE, /* + enum walk_error: failed walks by cause */
	/* + enum cost_phase: ns per step, only with record --phases */
	CNT_PHASE_BASE = CNT_ERR_BASE + WALK_ERR__COUNT,
	CNT__COUNT = CNT_PHASE_BASE + PHASE__COUNT,
};

/*
 * bpfpy trace (bpf/tracer.bpf.c): per-probe configuration and the counters
 * of each location (a probe site and the code object it fired in).
 */
#define TRACE_MAX_PROBES 64
#define TRACE_MAX_LOCS	 65536

enum trace_role {
	TRACE_ROLE_SINGLE = 0, /* an instant event */
	TRACE_ROLE_ENTRY = 1,  /* opens a pair (function__entry, uprobe with --uretprobe) */
	TRACE_ROLE_RETURN = 2, /* closes it */
};

struct trace_probe_cfg {
	__u32 role; /* enum trace_role */
	__u32 pad;
};

/* A location: the probe, and the code object it fired in (0: no Python
 * frame, e.g. a native thread). */
struct trace_loc_key {
	__u32 probe_id;
	__u32 pad;
	__u64 code;
};

struct trace_loc_stats {
	__u64 hits;	    /* every hit while attached, exact */
	__u64 emitted;	    /* of which emitted in full */
	__u64 first_ns;	    /* first hit, bpf_ktime_get_ns() */
	__u64 saturated_ns; /* first hit only counted, 0 if none yet */
};

/*
 * Off-CPU time (bpf/offcpu.bpf.c, record --clock offcpu|wall): why a thread
 * left the CPU, decided at the switch from its state and its syscall.
 */
enum offcpu_reason {
	OFFCPU_NONE = 0,   /* not an off-CPU record */
	OFFCPU_GIL,	   /* futex on the GIL's mutex or condition variable */
	OFFCPU_LOCK,	   /* any other futex: locks, conditions, queues */
	OFFCPU_IO,	   /* read/write/recv/send/poll/epoll/select on fds, ... */
	OFFCPU_SLEEP,	   /* nanosleep, clock_nanosleep, select/poll on no fds */
	OFFCPU_PAGE_FAULT, /* asleep outside a syscall: a page fault */
	OFFCPU_PREEMPTED,  /* still runnable: preempted, waiting for a CPU */
	OFFCPU_OTHER,	   /* any other syscall, or stopped */
	OFFCPU__COUNT,
};

/* Per-CPU counters of the off-CPU program, index = enum offcpu_counter. */
enum offcpu_counter {
	OFFC_SWITCHES = 0, /* every context switch seen (the program's runs) */
	OFFC_OUT,	   /* a target thread left the CPU */
	OFFC_STORED,	   /* ... and its stack was kept for its return */
	OFFC_NO_SLOT,	   /* no task storage for it (allocation failed) */
	OFFC_EMITTED,	   /* intervals written to the ring buffer */
	OFFC_SHORT,	   /* intervals under --min-block-us, dropped */
	OFFC_LOST,	   /* intervals lost to a full ring buffer */
	OFFC_OUT_COST_NS,  /* in-kernel ns spent at target switch-outs */
	OFFC__COUNT,
};

#endif /* BPFPY_H */
