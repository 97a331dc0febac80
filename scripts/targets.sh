#!/bin/bash
# Lists every CPython target interpreter available to bpfpy's tests, one line
# each, tab-separated, sorted by version:
#
#   VERSION<TAB>LABEL<TAB>ROOT<TAB>PYTHON
#
# VERSION is what the interpreter itself reports (sys.version, first word).
# ROOT is "/" for a host interpreter, else a chroot directory: such a target
# runs as `chroot ROOT PYTHON script`, with the script inside ROOT
# (scripts/pyrun.sh does that). PYTHON is an absolute path inside ROOT.
#
# Sources:
#   pyenv-X.Y     $PYENV_ROOT/versions/X.Y.Z (default /root/.pyenv), 3.8+ only,
#                 free-threaded ("t") builds skipped
#   debian-X.Y    python3.X on PATH outside pyenv (/usr/bin: Debian's, with
#                 USDT probes); local-X.Y for anything else on PATH
#   sid-X.Y       Debian sid chroot at $BPFPY_SID (default /var/cache/bpfpy/sid)
#                 with Debian's python3.14 and python3.15; built with
#                 mmdebstrap when missing (about 30 s), unless --no-provision
#
# Not cached: every call probes the interpreters again (well under 2 s).
# Diagnostics go to stderr. Exit status is non-zero only when nothing is found.
set -uo pipefail

PYENV_ROOT=${PYENV_ROOT:-/root/.pyenv}
SID=${BPFPY_SID:-/var/cache/bpfpy/sid}
SID_PKGS=python3.14,python3.15,libpython3.14-dev,libpython3.15-dev
SID_MINORS=(3.14 3.15)
MIN_MINOR=8

usage() {
	cat <<EOF
usage: scripts/targets.sh [--no-provision] [--only LABEL-or-VERSION[,...]]

Prints one line per available CPython target:
  VERSION<TAB>LABEL<TAB>ROOT<TAB>PYTHON
e.g.
  3.12.1	pyenv-3.12	/	$PYENV_ROOT/versions/3.12.1/bin/python3.12
  3.15.2	sid-3.15	$SID	/usr/bin/python3.15
Chroot targets (ROOT != /) run as: chroot ROOT PYTHON SCRIPT (SCRIPT inside ROOT).

  --no-provision  list only what exists; never build the sid chroot
  --only F[,F..]  keep targets whose label is F or starts with "F-"
                  (sid, pyenv, debian-3.11), or whose version is F or starts
                  with "F." (3.15, 3.11.7); several filters separated by commas
  --help          this text

Environment: PYENV_ROOT (default /root/.pyenv), BPFPY_SID (default
/var/cache/bpfpy/sid).
EOF
}

provision=1
filters=()
while (($#)); do
	case $1 in
	--no-provision) provision=0 ;;
	--only)
		[[ $# -ge 2 ]] || { echo "targets.sh: --only needs an argument" >&2; exit 2; }
		IFS=, read -ra f <<<"$2"; filters+=("${f[@]}"); shift ;;
	--only=*) IFS=, read -ra f <<<"${1#--only=}"; filters+=("${f[@]}") ;;
	-h | --help) usage; exit 0 ;;
	*) echo "targets.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

diag() { echo "targets.sh: $*" >&2; }

# matches LABEL VERSION: does any filter keep this target? VERSION may be a
# bare minor ("3.12") before the interpreter is run; then a longer filter
# ("3.12.1") is kept as a maybe, and settled after the run.
matches() {
	local label=$1 ver=$2 f
	((${#filters[@]})) || return 0
	for f in "${filters[@]}"; do
		[[ -n $f ]] || continue
		[[ $label == "$f" || $label == "$f"-* ]] && return 0
		[[ $ver == "$f" || $ver == "$f".* || $f == "$ver".* ]] && return 0
	done
	return 1
}

# ---------------------------------------------------------------- candidates
# Each: LABEL ROOT PYTHON MINOR (MINOR known from the name, before any run).
cands=()
add() { cands+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"); }

declare -A seen_label=()
seen_files=() # dedup by inode (test -ef): no readlink forks, this runs often

# pyenv: highest patch of a minor gets pyenv-X.Y, any other pyenv-X.Y.Z.
if [[ -d $PYENV_ROOT/versions ]]; then
	for v in "$PYENV_ROOT"/versions/*; do echo "${v##*/}"; done | sort -V -r >"${TMPDIR:-/tmp}/.targets.$$"
	while read -r v; do
		[[ $v =~ ^3\.([0-9]+)\.[0-9]+$ ]] || continue # skips 3.13.0t, dev builds, envs
		((BASH_REMATCH[1] >= MIN_MINOR)) || continue
		minor=3.${BASH_REMATCH[1]}
		py=$PYENV_ROOT/versions/$v/bin/python$minor
		[[ -x $py ]] || continue
		label=pyenv-$minor
		[[ -n ${seen_label[$label]:-} ]] && label=pyenv-$v
		seen_label[$label]=1
		seen_files+=("$py")
		add "$label" / "$py" "$minor"
	done <"${TMPDIR:-/tmp}/.targets.$$"
	rm -f "${TMPDIR:-/tmp}/.targets.$$"
fi

# python3.X on PATH, not a pyenv shim nor inside PYENV_ROOT. /usr/bin before
# /bin so the usrmerge duplicate shows its usual name.
IFS=: read -ra pathdirs <<<"${PATH:-/usr/bin:/bin}"
for d in /usr/bin "${pathdirs[@]}"; do
	[[ -d $d && $d == /* ]] || continue
	[[ $d == "$PYENV_ROOT" || $d == "$PYENV_ROOT"/* || $d == */shims ]] && continue
	for py in "$d"/python3.[0-9]*; do
		[[ ${py##*/} =~ ^python(3\.([0-9]+))$ && -x $py && -f $py ]] || continue
		minor=${BASH_REMATCH[1]}
		((BASH_REMATCH[2] >= MIN_MINOR)) || continue
		dup=0
		for f in "${seen_files[@]}"; do [[ $py -ef $f ]] && { dup=1; break; }; done
		((dup)) && continue
		seen_files+=("$py")
		if [[ $d -ef /usr/bin || $d -ef /bin ]]; then label=debian-$minor; else label=local-$minor; fi
		[[ -n ${seen_label[$label]:-} ]] && label=$label-$(printf '%s' "$d" | tr -c 'a-zA-Z0-9\n' _)
		seen_label[$label]=1
		add "$label" / "$py" "$minor"
	done
done

# ---------------------------------------------------------------- sid chroot
sid_ok() { # a usable chroot: every wanted interpreter is there
	local m
	for m in "${SID_MINORS[@]}"; do [[ -x $1/usr/bin/python$m ]] || return 1; done
}
mounted_under() { # any mount point at or below $1?
	awk -v p="$1" '$2 == p || index($2, p "/") == 1 { f = 1 } END { exit !f }' /proc/mounts
}
building() { # an mmdebstrap (ours or a colleague's) writing into $SID.tmp?
	pgrep -f -- "mmdebstrap.* ${SID//./\\.}\\.tmp( |\$)" >/dev/null
}
log_ok() { # a build log ending with rc=0, written after $SID.tmp last changed
	[[ -f $1 ]] && ! [[ $SID.tmp -nt $1 ]] && [[ $(tail -n 1 "$1" 2>/dev/null) == rc=0 ]]
}

provision_sid() {
	local tmp=$SID.tmp lock=${SID%/*}/.sid.lock log=${SID%/*}/sid-build.log
	mkdir -p "${SID%/*}" || return 1
	exec 9>"$lock" || return 1
	if ! flock -n 9; then
		diag "another targets.sh is building $SID; waiting for it"
		flock 9 || return 1
	fi
	sid_ok "$SID" && return 0 # built while we waited
	while building; do
		diag "an mmdebstrap build into $tmp is running; waiting for it"
		sleep 2
	done
	if [[ -d $tmp ]] && sid_ok "$tmp" && { log_ok "$log" || log_ok /tmp/mmdebstrap.log; }; then
		mv -T "$tmp" "$SID" && { diag "adopted the finished build $tmp as $SID"; return 0; }
	fi
	for d in "$tmp" "$SID"; do
		[[ -e $d ]] || continue
		if mounted_under "$d"; then
			diag "$d is unusable and has mounts inside; not touching it"
			return 1
		fi
		diag "removing incomplete $d"
		rm -rf --one-file-system "$d" || return 1
	done
	command -v mmdebstrap >/dev/null || { diag "mmdebstrap missing (run scripts/deps.sh)"; return 1; }
	diag "building Debian sid chroot $SID (python3.14, python3.15; ~30 s; log $log)"
	{
		mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
			--include="$SID_PKGS" sid "$tmp"
		echo "rc=$?"
	} </dev/null >"$log" 2>&1
	if log_ok "$log" && sid_ok "$tmp" && mv -T "$tmp" "$SID"; then
		diag "built $SID"
		return 0
	fi
	tail -n 15 "$log" >&2
	diag "building $SID failed (log $log); sid targets skipped"
	return 1
}

# Sid's austin (the oracle's peer, scripts/oracle_austin.sh) cannot be
# installed with apt: its package Depends on python3 (<< 3.14), and sid's
# python3 is newer. Its /usr/bin/austin needs only libc, so the binary alone
# is unpacked to $SID/usr/local/bin (dpkg never learns of it: apt's state in
# the shared chroot stays as built). Once, under the build lock; a failure is
# remembered in $stamp (remove it to retry) so listings stay offline and fast.
sid_austin() {
	local lock=${SID%/*}/.sid.lock log=${SID%/*}/sid-austin.log stamp=${SID%/*}/sid-austin.failed d
	[[ -x $SID/usr/local/bin/austin || -e $stamp ]] && return 0
	exec 8>"$lock" && flock 8 || return 1
	if ! [[ -x $SID/usr/local/bin/austin || -e $stamp ]]; then
		diag "unpacking sid's austin into $SID/usr/local/bin (log $log)"
		d=$(mktemp -d "$SID/tmp/.austin.XXXXXX") || return 1
		if { chroot "$SID" apt-get -q update &&
			chroot "$SID" sh -c 'cd "$1" && apt-get -q download austin' sh "/tmp/${d##*/}" &&
			dpkg-deb --fsys-tarfile "$d"/austin_*.deb | tar -xO ./usr/bin/austin >"$d/austin" &&
			chmod 0755 "$d/austin" && mkdir -p "$SID/usr/local/bin" &&
			mv -f "$d/austin" "$SID/usr/local/bin/austin"; } </dev/null >"$log" 2>&1; then
			:
		else
			tail -n 5 "$log" >&2
			date >"$stamp"
			diag "no austin in $SID (log $log; remove $stamp to retry)"
		fi
		rm -rf "$d"
	fi
	exec 8>&-
	return 0
}

want_sid=0
for m in "${SID_MINORS[@]}"; do matches "sid-$m" "$m" && want_sid=1; done
if ((want_sid)); then
	if [[ $(id -u) != 0 ]]; then
		diag "not root: chroot targets in $SID skipped"
	else
		if ! sid_ok "$SID"; then
			if ((provision)); then
				provision_sid
				exec 9>&- # the build lock: not for the probes below
			else
				diag "no sid chroot at $SID (--no-provision): 3.14/3.15 skipped"
			fi
		fi
		sid_ok "$SID" && ((provision)) && sid_austin
		if sid_ok "$SID"; then
			# /proc/PID/maps of a chroot target, read from another mount
			# namespace (a peer run by `pyrun.sh --proc`), names host paths
			# ($SID/usr/bin/...): make those resolve inside the chroot too.
			[[ -L $SID$SID ]] || { mkdir -p "$SID${SID%/*}" && ln -sfn / "$SID$SID"; }
			for py in "$SID"/usr/bin/python3.[0-9]*; do
				[[ ${py##*/} =~ ^python(3\.([0-9]+))$ && -x $py ]] || continue
				add "sid-${BASH_REMATCH[1]}" "$SID" "/usr/bin/${py##*/}" "${BASH_REMATCH[1]}"
			done
		fi
	fi
fi

# ---------------------------------------------------------------- probe
# Each candidate reports its exact version and ABI flags; run them in parallel.
PROBE='import sys; print(sys.version.split()[0], getattr(sys, "abiflags", ""))'
tmpd=$(mktemp -d) || exit 1
trap 'rm -rf "$tmpd"' EXIT
i=0
for c in "${cands[@]}"; do
	IFS=$'\t' read -r label root py minor <<<"$c"
	matches "$label" "$minor" || continue
	if [[ $root == / ]]; then
		timeout 20 "$py" -E -S -c "$PROBE" >"$tmpd/$i" 2>"$tmpd/$i.err" </dev/null &
	else
		timeout 20 /usr/sbin/chroot "$root" "$py" -E -S -c "$PROBE" >"$tmpd/$i" 2>"$tmpd/$i.err" </dev/null &
	fi
	printf '%s\n' "$c" >"$tmpd/$i.cand"
	i=$((i + 1))
done
wait

out=()
for ((j = 0; j < i; j++)); do
	IFS=$'\t' read -r label root py minor <"$tmpd/$j.cand"
	ver= abi=
	read -r ver abi <"$tmpd/$j" 2>/dev/null
	if [[ -z ${ver:-} ]]; then
		diag "$label ($py in $root) does not run: $(head -c 300 "$tmpd/$j.err" | tr '\n' ' ')"
		continue
	fi
	if [[ ${abi:-} == *t* ]]; then
		diag "$label ($py) is a free-threaded build: unsupported, skipped"
		continue
	fi
	[[ $ver == "$minor".* || $ver == "$minor" ]] || diag "$label: $py reports $ver"
	matches "$label" "$ver" || continue
	out+=("$ver"$'\t'"$label"$'\t'"$root"$'\t'"$py")
done

if ((${#out[@]} == 0)); then
	diag "no target interpreter found${filters[*]:+ matching ${filters[*]}}"
	exit 1
fi
printf '%s\n' "${out[@]}" | sort -t $'\t' -k1,1V -k2,2
