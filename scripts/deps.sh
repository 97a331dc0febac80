#!/bin/bash
# Installs the Debian packages that bpfpy's build, tests and test targets need,
# and only those that are missing. Every make target calls this, so when all is
# present it is one dpkg-query and nothing else (no apt, no network).
#
# Prints one line naming what it installed, or nothing when nothing was missing.
# Needs root only when something is missing.
set -euo pipefail

PKGS=(
	# build
	clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libjson-c-dev
	libcmocka-dev pkg-config make gcc
	# pprof output: encoding, and `go tool pprof` to read it back in tests
	protobuf-c-compiler libprotobuf-c-dev golang-go
	# HTML report rendered headless; a font so text actually renders
	chromium fonts-dejavu-core
	# SVG checks
	libxml2-utils
	# targets: Debian's 3.11 (USDT probes) and its debug build (python3.11d);
	# a sid chroot for 3.14/3.15
	python3 python3.11-dbg mmdebstrap debian-archive-keyring
	# test helpers; valgrind for tests/integration/test_memcheck.sh
	strace pahole valgrind austin # austin: an oracle peer (make leaderboard)
)

# One query; packages dpkg has never heard of are simply not listed (the
# "not found" complaint goes to /dev/null), so compute missing = wanted - ok.
declare -A ok=()
while IFS=' ' read -r st name; do
	[[ ${st:1:1} == i ]] && ok[${name%%:*}]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PKGS[@]}" 2>/dev/null || true)

missing=()
for p in "${PKGS[@]}"; do
	[[ -n ${ok[$p]:-} ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) != 0 ]]; then
	echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
	echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2
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
