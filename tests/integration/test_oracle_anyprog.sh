#!/bin/bash
# bpfpy oracle runs any Python program as it is (issue 26): an unmodified
# asyncio program that imports a module of its own directory, with no rules
# file, on a host interpreter and on a chroot one.
#
# What it proves:
#  - nothing on the target's PYTHONPATH shadows the standard library: the
#    program's "import asyncio" gets the standard module (its frames, never
#    those of snippets/asyncio.py, whose counter it used to wait 30 s for);
#  - no NAME.rules: the run succeeds, distribution only, and the case
#    heading and the JSON ("rules": false) say so; a rules file that exists
#    but cannot be read is still an error;
#  - a chroot interpreter gets the program's directory (its helper module
#    imports), bounded: a directory over the bound (2001 files) is refused
#    with a message naming the bound, and nothing is left in the chroot;
#  - the shipped "asyncio" snippet (named like the module) still runs.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
use_bpfpy
app=$TMP/app
mkdir -p "$app"
cat >"$app/helper.py" <<'PY'
def crunch(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
PY
cat >"$app/service.py" <<'PY'
import asyncio
from helper import crunch


async def worker(n):
    while True:
        crunch(n)
        await asyncio.sleep(0)


async def main():
    await asyncio.gather(*(worker(2000 + 100 * i) for i in range(4)))


asyncio.run(main())
PY
host=$(targets | awk -F'\t' '$3 == "/" { l = $2 } END { print l }')
chr=$(targets | awk -F'\t' '$3 != "/" { l = $2 } END { print l }')
for label in $host $chr; do
	out=$TMP/$label.txt
	timeout 120 "$BPFPY" oracle -q --python "$label" --snippet "$app/service.py" --mode ptrace \
		--duration 0.6 --rate 0.5 --json "$TMP/$label.json" >"$out" 2>"$TMP/$label.err"
	rc=$?
	check=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
d = c["modes"][0]["runs"][0]["distribution"] or {}
keys = " ".join(d)
print(c["rules"], "crunch:" in keys and "worker:" in keys, "parent_work" in keys or "child_work" in keys)' \
		"$TMP/$label.json" 2>/dev/null)
	if ((rc == 0)) && [[ $check == "False True False" ]] &&
		grep -q '^service (?) \[no rules: distribution only\]' "$out"; then
		ok "$label: unmodified asyncio program with a helper module, no rules: ran (stdlib asyncio, helper imported)"
	else
		bad "$label: rc $rc, check '$check'; $(grep -m1 '^service' "$out"); $(tail -n 3 "$TMP/$label.err" | tr '\n' ' ')"
	fi
done

# A rules file that is there but unreadable is an error, not "no rules".
mkdir "$app/service.rules"
timeout 60 "$BPFPY" oracle -q --python "$host" --snippet "$app/service.py" --mode ptrace \
	--duration 0.3 >"$TMP/r.txt" 2>"$TMP/r.err"
rc=$?
rmdir "$app/service.rules"
((rc == 2)) && grep -q 'service.rules' "$TMP/r.err" \
	&& ok "an unreadable rules file: exit 2, '$(head -n 1 "$TMP/r.err")'" \
	|| bad "an unreadable rules file: rc $rc, $(head -n 2 "$TMP/r.err" | tr '\n' ' ')"

if [[ -n $chr ]]; then
	root=$(targets | awk -F'\t' -v l="$chr" '$2 == l { print $3 }')
	big=$TMP/big
	mkdir -p "$big"
	cp "$app/service.py" "$app/helper.py" "$big/"
	for i in $(seq 1 2001); do : >"$big/f$i.txt"; done
	before=$(ls -d "$root"/tmp/bpfpy-oracle.* 2>/dev/null | wc -l)
	timeout 120 "$BPFPY" oracle -q --python "$chr" --snippet "$big/service.py" --mode ptrace \
		--duration 0.3 >"$TMP/big.txt" 2>"$TMP/big.err"
	rc=$?
	after=$(ls -d "$root"/tmp/bpfpy-oracle.* 2>/dev/null | wc -l)
	if ((rc != 0)) && grep -q 'bounded copy of it (at most 2000 files' "$TMP/big.txt" "$TMP/big.err" &&
		((after == before)); then
		ok "$chr: a program directory of 2003 files refused (rc $rc), nothing left in $root/tmp"
	else
		bad "$chr: big directory: rc $rc, left $before -> $after; $(tail -n 2 "$TMP/big.txt" "$TMP/big.err" | tr '\n' ' ')"
	fi
else
	ok "skipped the chroot checks: no chroot interpreter (scripts/targets.sh)"
fi

# The shipped case named like the standard module.
timeout 120 "$BPFPY" oracle -q --python "$host" --snippet asyncio --mode ptrace --duration 0.5 \
	--rate 0.5 >"$TMP/s.txt" 2>"$TMP/s.err"
rc=$?
samples=$(awk '$1 == "ptrace" { print $2 }' "$TMP/s.txt")
((rc == 0)) && [[ $samples =~ ^[0-9]+$ ]] && ((samples > 0)) \
	&& ok "$host: the asyncio snippet still runs ($samples samples)" \
	|| bad "$host: asyncio snippet: rc $rc, samples '$samples'; $(tail -n 2 "$TMP/s.err" | tr '\n' ' ')"
finish
