#!/bin/bash
# bpfpy check: on this host (root, BPF, perf events, uprobes, ptrace) it exits
# 0 and every line of its table is a check mark; run without any privilege
# (uid/gid 65534, no capabilities) it exits 6 (missing privilege), marks the
# capability lines with a cross and names CAP_BPF.
. "$(dirname "$0")/lib.sh"
use_bpfpy

timeout -s KILL 120 "$BPFPY" check >"$TMP/check.out" 2>"$TMP/check.err"
rc=$?
sed 's/^/    /' "$TMP/check.out"
[[ $rc == 0 ]] && ok "check exits 0 as root" || bad "check exits $rc as root: $(head -c 300 "$TMP/check.err")"
# the table: lines after the header that start with a mark
marks=$(grep -cE '^  (✓|✗|·) ' "$TMP/check.out")
crosses=$(grep -E '^  (✗|·) ' "$TMP/check.out")
if ((marks >= 8)) && [[ -z $crosses ]]; then
	ok "all $marks table lines are ✓"
else
	bad "$marks table lines, not all ✓: $crosses"
fi
for what in 'CAP_BPF' 'BTF' 'BPF sampler loads' 'perf_event' 'uprobe' 'ptrace'; do
	grep -q "✓ .*$what" "$TMP/check.out" && ok "✓ $what" || bad "no ✓ line for $what"
done

if ! command -v setpriv >/dev/null; then
	bad "setpriv (util-linux) missing: cannot test the unprivileged case"
	finish
fi
timeout -s KILL 120 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
	"$BPFPY" check >"$TMP/np.out" 2>"$TMP/np.err"
rc=$?
sed 's/^/    /' "$TMP/np.out"
[[ $rc == 6 ]] && ok "unprivileged check exits 6" || bad "unprivileged check exits $rc, expected 6"
grep -qE '^  ✗ CAP_BPF ' "$TMP/np.out" && ok "unprivileged: ✗ CAP_BPF" || bad "unprivileged: no ✗ CAP_BPF line"
grep -q 'CAP_BPF' <(tail -n 3 "$TMP/np.out" "$TMP/np.err") && ok "unprivileged: the advice names CAP_BPF" ||
	bad "unprivileged: the closing advice does not name CAP_BPF"
finish
