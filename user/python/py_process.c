// SPDX-License-Identifier: MIT
#include "py_process.h"

#include "proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* 3.13+ describe themselves; read as much of _Py_DebugOffsets as is mapped. */
static int offsets_from_target(struct py_process *p, struct diag *d)
{
	static unsigned char buf[PY_DEBUG_OFFSETS_READ_SIZE];
	size_t len = sizeof(buf);

	while (len >= 256 && mem_read(&p->mem, buf, len, p->bin.runtime_addr))
		len /= 2;
	if (len < 256)
		return diag_errno(d, p->mem.last_errno,
				  "pid %d: cannot read _Py_DebugOffsets at 0x%llx", p->pid,
				  (unsigned long long)p->bin.runtime_addr);
	if (py_offsets_from_debug(buf, len, &p->cfg.off, &p->extra, d)) {
		diag_prefix(d, "pid %d: ", p->pid);
		return -1;
	}
	return 0;
}

/* interp: the interpreter at the head of the list, as open_image read it. */
static void find_gil(struct py_process *p, uint64_t interp)
{
	uint64_t gil_state = 0;
	uint64_t locked = 0, holder = 0;

	if (p->extra.gil_per_interp) {
		if (mem_read(&p->mem, &gil_state, sizeof(gil_state),
			     interp + p->extra.interp_ceval_gil))
			return;
	}
	py_gil_addrs(&p->extra, p->bin.runtime_addr, gil_state, &locked, &holder);
	p->cfg.gil_locked_addr = locked;
	p->cfg.gil_holder_addr = holder;
	py_gil_wait_range(holder, &locked, &holder);
	p->cfg.gil_wait_lo = locked;
	p->cfg.gil_wait_hi = holder;
}

/* [gc] frames: the address of gc.collecting, in _PyRuntime (3.8) or in
 * the interpreter at the head of the list (the main one unless
 * subinterpreters were made after it: theirs are not followed). */
static void find_gc(struct py_process *p, uint64_t interp)
{
	uint64_t base = p->extra.gc_in_runtime ? p->bin.runtime_addr : interp;

	p->cfg.gc_collecting_addr =
	    p->extra.gc_collecting && base ? base + p->extra.gc_collecting : 0;
}

int py_process_execd(const struct py_process *p, struct diag *d)
{
	unsigned long long dev, ino;
	char comm[32];

	if (!p->exe_ino || proc_exe_id(p->pid, &dev, &ino) ||
	    (dev == p->exe_dev && ino == p->exe_ino))
		return 0;
	proc_comm(p->pid, comm, sizeof(comm));
	diag_set(d, EXIT_NOT_PYTHON,
		 "pid %d exec'd another program (%s) while bpfpy read it: not the CPython "
		 "process it was",
		 p->pid, comm);
	return 1;
}

static int open_image(struct py_process *p, pid_t pid, unsigned max_depth, struct diag *d)
{
	uint32_t hex = 0;
	uint64_t interp = 0;

	if (py_binary_find(pid, &p->bin, d))
		return -1;
	proc_comm(pid, p->comm, sizeof(p->comm));
	/* Users know the file by the target's name for it, not by our route
	 * to it through /proc/PID/root. */
	p->binary = p->bin.path;
	{
		char pre[64];
		int n = snprintf(pre, sizeof(pre), "/proc/%d/root/", (int)pid);

		if (!strncmp(p->bin.path, pre, (size_t)n))
			p->binary = p->bin.path + n - 1;
	}
	mem_reader_init_pid(&p->mem, pid);

	/* Py_Version (3.11+) is exact; before that only the file name tells the
	 * minor, which is all the tables need. */
	if (p->bin.py_version_addr && !mem_read(&p->mem, &hex, sizeof(hex), p->bin.py_version_addr))
		p->bin.version_hex = hex;
	else if (p->bin.py_version_addr)
		return diag_errno(d, p->mem.last_errno, "pid %d: cannot read Py_Version at 0x%llx",
				  pid, (unsigned long long)p->bin.py_version_addr);
	hex = p->bin.version_hex;
	if (p->bin.version_approximate) {
		hex = py_version_final_of(hex);
		py_version_minor_str(hex, p->version, sizeof(p->version));
	} else {
		py_version_str(hex, p->version, sizeof(p->version));
	}

	if (py_has_debug_offsets(hex)) {
		if (offsets_from_target(p, d))
			return -1;
	} else if (py_offsets_for_version(hex, &p->cfg.off, &p->extra, d)) {
		diag_prefix(d, "pid %d (%s): ", pid, p->comm);
		return -1;
	}
	p->cfg.runtime_addr = p->bin.runtime_addr;
	p->cfg.code_type_addr = p->bin.code_type_addr;
	p->cfg.none_addr = p->bin.none_addr;
	p->cfg.max_depth = max_depth ? max_depth : BPFPY_DEFAULT_DEPTH;
	if (p->cfg.max_depth > BPFPY_MAX_DEPTH)
		p->cfg.max_depth = BPFPY_MAX_DEPTH;
	if (!p->cfg.code_type_addr)
		return diag_set(d, EXIT_NOT_PYTHON, "pid %d: %s exports no PyCode_Type", pid,
				p->bin.path);

	if (mem_read(&p->mem, &interp, sizeof(interp),
		     p->cfg.runtime_addr + p->cfg.off.runtime_interpreters_head))
		return diag_errno(d, p->mem.last_errno, "pid %d: cannot read _PyRuntime at 0x%llx",
				  pid, (unsigned long long)p->cfg.runtime_addr);
	if (!interp) {
		p->not_initialised = 1;
		return diag_set(d, EXIT_NOT_PYTHON,
				"pid %d: the interpreter is not initialised (or already finalised)",
				pid);
	}
	find_gil(p, interp);
	find_gc(p, interp);
	return 0;
}

int py_process_open(struct py_process *p, pid_t pid, unsigned max_depth, struct diag *d)
{
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (pid <= 0)
		return diag_set(d, EXIT_USAGE, "invalid pid %d", (int)pid);
	/* Before the binary is looked at: an exec in between then shows. */
	proc_exe_id(pid, &p->exe_dev, &p->exe_ino);
	if (!open_image(p, pid, max_depth, d))
		return 0;
	/* An exec while the image was being read fails somewhere in the
	 * middle (an address of the old image, EFAULT): say what happened. */
	if (d && py_process_execd(p, d))
		p->not_initialised = 0;
	return -1;
}
