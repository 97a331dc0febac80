#!/bin/bash
# Runs a script with one target interpreter from scripts/targets.sh:
#
#   scripts/pyrun.sh [--proc] LABEL SCRIPT [ARGS...]
#   scripts/pyrun.sh [--proc] LABEL -m MODULE [ARGS...]
#   scripts/pyrun.sh [--proc] LABEL -c CODE [ARGS...]
#
# LABEL is anything `targets.sh --only` takes (pyenv-3.12, debian-3.11,
# sid-3.15, 3.13, 3.11.7) but must pick exactly one target.
#
# The last step is an exec, so in `scripts/pyrun.sh sid-3.15 x.py & pid=$!`
# $! is the Python process itself (for chroot targets, chroot execs python).
#
# Chroot targets: SCRIPT is copied to ROOT/tmp/bpfpy/BASENAME (atomically; the
# same basename is reused, so frames show /tmp/bpfpy/BASENAME) and run as
# `chroot ROOT PYTHON /tmp/bpfpy/BASENAME ARGS`; file ARGS must be paths inside
# ROOT. The chroot has /dev but no /proc: plain Python (threads, asyncio,
# subprocess, multiprocessing) does not need it.
#
# --proc: for chroot targets, mount a fresh /proc inside ROOT in a private
# mount namespace of this process only (unshare -m; nothing is left mounted).
# Needed by tools that read /proc, e.g. the 3.15 peer sampler:
#   scripts/pyrun.sh --proc sid-3.15 -m profiling.sampling attach -d 2 PID
# Ignored for host targets.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
proc=0
if [[ ${1:-} == --proc ]]; then proc=1; shift; fi
if [[ $# -lt 2 || $1 == -h || $1 == --help ]]; then
	sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
fi
want=$1
shift

mapfile -t lines < <("$here/targets.sh" --only "$want")
if ((${#lines[@]} != 1)); then
	if ((${#lines[@]} == 0)); then
		echo "pyrun.sh: no target matches '$want' (see scripts/targets.sh)" >&2
	else
		echo "pyrun.sh: '$want' matches ${#lines[@]} targets, use a label:" >&2
		printf '  %s\n' "${lines[@]}" >&2
	fi
	exit 2
fi
IFS=$'\t' read -r _ver _label root py <<<"${lines[0]}"

if [[ $root == / ]]; then
	exec "$py" "$@"
fi

# Chroot target: the script must live inside ROOT.
if [[ $1 != -m && $1 != -c && $1 != - ]]; then
	src=$1
	shift
	[[ -f $src ]] || { echo "pyrun.sh: no such script: $src" >&2; exit 2; }
	name=$(basename "$src")
	mkdir -p "$root/tmp/bpfpy"
	chmod 1777 "$root/tmp" 2>/dev/null || true
	tmp=$(mktemp "$root/tmp/bpfpy/.$name.XXXXXX")
	cat "$src" >"$tmp"
	chmod 0644 "$tmp"
	mv -f "$tmp" "$root/tmp/bpfpy/$name"
	set -- "/tmp/bpfpy/$name" "$@"
fi

if ((proc)); then
	# sh, then chroot, then python: each execs the next, so the PID holds.
	exec unshare -m --propagation private -- sh -c \
		'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$root" "$py" "$@"
fi
exec chroot "$root" "$py" "$@"
