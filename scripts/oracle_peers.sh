#!/bin/bash
# The peer profilers `bpfpy oracle --peers` can run against one interpreter:
#
#   scripts/oracle_peers.sh VERSION LABEL ROOT PYTHON [stacks|async]
#
# (a line of targets.sh, and what the run keys: thread stacks, the default,
# or task chains, an async run: then only the async peers, cpython-async and
# tachyon-async, are offered, and the others are skipped with that reason)
#
# prints one line per peer, for the oracle to add as a mode:
#   NAME                a mode the oracle knows (cpython-live, cpython-blocking,
#                       cpython-live-cache)
#   NAME<TAB>CMD        an external:CMD mode shown as NAME
#   # skip NAME: WHY    a peer that is missing or does not support VERSION
#
# What each peer supports was found by running it here (README, "Peers"):
#   cpython-*, tachyon-*  CPython's _remote_debugging and profiling.sampling
#                         (3.15's CLI); same minor only, so they run with the
#                         target's own interpreter in the target's root
#   austin                bookworm's 1.0.1 on the host: 3.8-3.10 (3.11+: "Python
#                         binary not found")
#   austin-sid            sid's 3.7.0, unpacked into the chroot by targets.sh:
#                         3.11, 3.12 (3.8: 905 samples in one run, 0 in the
#                         next, so left to the host's 1.0.1; 3.13.0: attaches,
#                         never samples; 3.14, 3.15: "Cannot find Python")
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SID=${BPFPY_SID:-/var/cache/bpfpy/sid}
ver=$1 label=$2 root=$3 py=$4 keys=${5:-stacks}
[[ $ver =~ ^3\.([0-9]+) ]] || { echo "# skip all: version '$ver' is not 3.x"; exit 0; }
minor=${BASH_REMATCH[1]}

# The same-version peers: ask the target's interpreter what it has.
probe='import importlib.util as u
print(*[m for m in ("_remote_debugging", "profiling.sampling") if u.find_spec(m.split(".")[0]) and u.find_spec(m)])'
if [[ $root == / ]]; then
	have=$(timeout 30 "$py" -c "$probe" 2>/dev/null)
	run="'$py'"
else
	have=$(timeout 30 chroot "$root" "$py" -c "$probe" 2>/dev/null)
	run="'$here/pyrun.sh' --proc '$label'"
fi
if [[ $keys == async ]]; then
	# Task chains: 3.15's get_async_stack_trace and the CLI's --async-aware
	# (3.14's module has no get_async_stack_trace)
	if [[ " $have " == *" _remote_debugging "* && $minor -ge 15 ]]; then
		echo cpython-async
	else
		echo "# skip cpython-async: needs 3.15's _remote_debugging (this is $ver)"
	fi
	if [[ " $have " == *" profiling.sampling "* ]]; then
		printf 'tachyon-async\t%s\n' "$run '$here/oracle_tachyon.py' --async"
	else
		echo "# skip tachyon-async: $ver has no profiling.sampling (3.15+)"
	fi
	echo "# skip cpython-live, cpython-blocking, tachyon-live, tachyon-blocking, austin, austin-sid: thread stacks, not task chains (an async run)"
	exit 0
fi
if [[ " $have " == *" _remote_debugging "* && $minor -ge 15 ]]; then
	echo cpython-live
	echo cpython-blocking
	# tachyon-live's configuration (the CLI caches frames), for the
	# oracle's consistency check
	echo cpython-live-cache
else
	echo "# skip cpython-live, cpython-blocking, cpython-live-cache: need 3.15's _remote_debugging (this is $ver)"
fi
if [[ " $have " == *" profiling.sampling "* ]]; then
	printf 'tachyon-live\t%s\n' "$run '$here/oracle_tachyon.py'"
	printf 'tachyon-blocking\t%s\n' "$run '$here/oracle_tachyon.py' --blocking"
else
	echo "# skip tachyon-live, tachyon-blocking: $ver has no profiling.sampling (3.15+)"
fi

if ! command -v austin >/dev/null; then
	echo "# skip austin: not installed (scripts/deps.sh installs bookworm's)"
elif ((minor < 8 || minor > 10)); then
	echo "# skip austin: $(austin -V 2>&1 | head -n 1) supports 3.8-3.10, not $ver"
else
	printf 'austin\t%s\n' "python3 '$here/oracle_austin.py'"
fi

sidpy=$(ls "$SID"/usr/bin/python3.1[0-9] 2>/dev/null | head -n 1)
if [[ ! -x $SID/usr/local/bin/austin || -z $sidpy ]]; then
	echo "# skip austin-sid: no $SID/usr/local/bin/austin (scripts/targets.sh unpacks it)"
elif [[ $root != / ]]; then
	echo "# skip austin-sid: sid's austin 3.7.0 (October 2024) predates $ver's frame layout"
elif ((minor < 11 || minor > 13)); then
	echo "# skip austin-sid: sid's austin 3.7.0 is offered for 3.11-3.13 (bookworm's 1.0.1 covers 3.8-3.10), not $ver"
else
	# Run on the host through the chroot's loader and libc: inside the
	# chroot it cannot open a host target's binary and never sampled 3.13
	# (scripts/oracle_austin.py --root).
	printf 'austin-sid\t%s\n' "python3 '$here/oracle_austin.py' --root '$SID' --austin /usr/local/bin/austin"
fi
