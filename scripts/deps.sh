#!/bin/bash
# Installs the Debian packages one job of bpfpy needs, and only those that are
# missing:
#
#   scripts/deps.sh build   make, make install: compiler, clang/llvm (BPF),
#                           libbpf, bpftool, libelf, libdw, zlib, json-c,
#                           protobuf-c
#   scripts/deps.sh run     make run: build, plus python3 (Debian's CPython,
#                           the interpreter the oracle's default job runs
#                           when scripts/targets.sh finds no newer one)
#   scripts/deps.sh unit    make unit: build, plus cmocka
#   scripts/deps.sh test    make test: run and unit, plus every tool the
#                           integration tests call and the packages their
#                           targets need (python3.11-dbg, mmdebstrap for the
#                           sid chroot, chromium, go, valgrind, ...)
#
# Several groups may be given; no group means test (everything). The Makefile
# calls it before every target, so when all is present it is one dpkg-query
# and nothing else (no apt, no network, no root needed): a plain `make` runs
# as any user once the build packages are there.
#
# Prints one line naming what it installed, or nothing when nothing was
# missing. Needs root only when something is missing; without root it names
# the missing packages and the apt-get line that installs them, and fails.
set -euo pipefail

BUILD=(
	gcc libc6-dev make pkg-config
	# BPF objects and their skeletons
	clang llvm libbpf-dev bpftool
	# link: -lbpf -ldw -lelf -lz -ljson-c -lprotobuf-c (libdw: the CFI reader
	# of --native's unwind tables)
	libdw-dev libelf-dev zlib1g-dev libjson-c-dev libprotobuf-c-dev
)
RUN=(python3)
UNIT=(libcmocka-dev)
TEST=(
	# `make protobuf` and the pprof check: protoc-c, `go tool pprof`
	protobuf-c-compiler golang-go
	# HTML report rendered headless; a font so text actually renders
	chromium fonts-dejavu-core
	# SVG checks (xmllint)
	libxml2-utils
	# the oracle gate's JUnit read back by a JUnit tool (test_oracle_gate)
	python3-junitparser
	# targets: Debian's 3.11 (USDT probes) and its debug build (python3.11d);
	# a sid chroot for 3.14/3.15 (scripts/targets.sh)
	python3.11 python3.11-dbg mmdebstrap debian-archive-keyring
	# tools the tests call: strace (test_unruly), valgrind (test_memcheck),
	# /usr/bin/time -v (test_hostile), bc (run times), readelf (test_trace),
	# pgrep (test_signals, targets.sh), setpriv/taskset/setsid/unshare/flock
	# (util-linux); pahole for scripts/measure_offsets.sh
	strace valgrind time bc binutils procps util-linux pahole
	# libFuzzer's runtime for test_fuzz_smoke (skipped without it)
	libclang-rt-14-dev
	# austin (bookworm's 1.0.1): an oracle peer (test_peers, make leaderboard)
	austin
)

usage() {
	sed -n '2,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

(($#)) || set -- test
PKGS=()
for g in "$@"; do
	case $g in
	build) PKGS+=("${BUILD[@]}") ;;
	run) PKGS+=("${BUILD[@]}" "${RUN[@]}") ;;
	unit) PKGS+=("${BUILD[@]}" "${UNIT[@]}") ;;
	test) PKGS+=("${BUILD[@]}" "${RUN[@]}" "${UNIT[@]}" "${TEST[@]}") ;;
	-h | --help) usage ;;
	*) echo "deps.sh: unknown group '$g' (build, run, unit, test)" >&2; exit 2 ;;
	esac
done

# One query; packages dpkg has never heard of are simply not listed (the
# "not found" complaint goes to /dev/null), so compute missing = wanted - ok.
declare -A ok=() seen=()
while IFS=' ' read -r st name; do
	[[ ${st:1:1} == i ]] && ok[${name%%:*}]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PKGS[@]}" 2>/dev/null || true)

missing=()
for p in "${PKGS[@]}"; do
	[[ -n ${ok[$p]:-} || -n ${seen[$p]:-} ]] || missing+=("$p")
	seen[$p]=1
done
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) != 0 ]]; then
	echo "deps.sh ($*): missing Debian packages: ${missing[*]}" >&2
	echo "deps.sh: install them as root: sudo apt-get install ${missing[*]}" >&2
	echo "deps.sh: (or run this make target with sudo: it installs what is missing)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/bpfpy-deps.XXXXXX.log)
# Wait for a concurrent apt/dpkg (another make, another engineer) rather than fail.
lock=(-o DPkg::Lock::Timeout=900)
if ! { apt-get "${lock[@]}" update -q &&
	apt-get "${lock[@]}" install -y -q --no-install-recommends \
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	"${missing[@]}"; } </dev/null >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "deps.sh: apt-get failed installing: ${missing[*]} (full log: $log)" >&2
	exit 1
fi
rm -f "$log"
echo "deps.sh: installed ${missing[*]}"
