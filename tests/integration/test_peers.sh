#!/bin/bash
# bpfpy oracle --peers: each peer adapter (scripts/oracle_austin.py for
# bookworm's Austin 1.0.1 and sid's 3.7.0 -- also on 3.13 --, scripts/oracle_tachyon.py live and
# --blocking) on an interpreter it supports, next to the ptrace reference, on
# flat_alternating at 1 kHz for 1 s.
#
# What it proves, per peer:
#  - scripts/oracle_peers.sh offers it on some interpreter here, or the tool
#    really is absent (then "ok: skipped", with the reason);
#  - the oracle's table has the peer's row with samples > 0 and numeric
#    errors% (a present tool whose adapter yields nothing fails);
#  - a peer that does not support an interpreter is skipped with a note on
#    stderr, not run.
# Bounded: each oracle run under `timeout 150` (about 15 s each here).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
PEERS="$ROOT_DIR/scripts/oracle_peers.sh"
SID=${BPFPY_SID:-/var/cache/bpfpy/sid}

# peer -> the first interpreter oracle_peers.sh offers it on
declare -A on=()
while IFS=$'\t' read -r ver label root py; do
	while IFS=$'\t' read -r name cmd; do
		[[ $name == \#* || -z $cmd ]] && continue
		[[ -z ${on[$name]:-} ]] && on[$name]=$label
	done < <("$PEERS" "$ver" "$label" "$root" "$py")
done < <(targets)

absent() { # why a peer cannot run here at all, or nothing when it could
	case $1 in
	austin) command -v austin >/dev/null || echo "austin not installed (scripts/deps.sh)" ;;
	austin-sid) [ -x "$SID/usr/local/bin/austin" ] || echo "no $SID/usr/local/bin/austin" ;;
	tachyon-*) targets | grep -q $'^3\.1[5-9]' || echo "no CPython 3.15+ target" ;;
	esac
}

declare -A ran=()
for peer in austin austin-sid tachyon-live tachyon-blocking; do
	label=${on[$peer]:-}
	if [ -z "$label" ]; then
		why=$(absent "$peer")
		if [ -n "$why" ]; then ok "skipped $peer: $why"; else bad "$peer: the tool is here but no interpreter is offered it"; fi
		continue
	fi
	out=$TMP/$label.txt
	if [ -z "${ran[$label]:-}" ]; then
		ran[$label]=1
		timeout 150 "$BPFPY" oracle -q --python "$label" --snippet flat_alternating \
			--mode ptrace --peers --duration 1 --rate 1 >"$out" 2>"$TMP/$label.err"
		echo "$label rc=$?" >>"$TMP/rcs"
	fi
	row=$(awk -v m="$peer" '$1 == m' "$out")
	read -r _ samples _ errors _ <<<"$row"
	if [[ $samples =~ ^[0-9]+$ ]] && ((samples > 0)) && [[ $errors =~ ^[0-9.]+$ ]]; then
		ok "$peer on $label: $samples samples, errors% $errors ($(echo "$row" | awk '{print "impossible% " $6}'))"
	else
		bad "$peer on $label: no samples: '${row:-no row}'; $(grep "$label" "$TMP/rcs"); $(tail -n 3 "$TMP/$label.err" | tr '\n' ' ')"
	fi
done

# Sid's Austin 3.7.0 on 3.13: run in the chroot it never sampled a host
# 3.13.0 ("not a Python process"); run on the host through the chroot's
# loader (oracle_austin.py --root) it must.
l13=$(targets | awk -F'\t' '$1 ~ /^3\.13\./ && $3 == "/" { print $2; exit }')
if [ -n "$l13" ] && [ -x "$SID/usr/local/bin/austin" ]; then
	timeout 150 "$BPFPY" oracle -q --python "$l13" --snippet flat_alternating \
		--mode ptrace --mode "external:python3 '$ROOT_DIR/scripts/oracle_austin.py' --root '$SID' --austin /usr/local/bin/austin" \
		--duration 1 --rate 1 --json "$TMP/a13.json" >"$TMP/a13.txt" 2>"$TMP/a13.err"
	samples=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print([m for m in d["cases"][0]["modes"] if m["mode"].startswith("ext:")][0]["runs"][0]["samples"])' \
		"$TMP/a13.json" 2>/dev/null)
	[[ $samples =~ ^[0-9]+$ ]] && ((samples > 0)) \
		&& ok "austin 3.7.0 on $l13 (host run): $samples samples" \
		|| bad "austin 3.7.0 on $l13: samples '${samples}' $(tail -n 2 "$TMP/a13.err" | tr '\n' ' ')"
fi

# A peer that does not support the interpreter: a note, not a row.
if [ -n "${on[tachyon-live]:-}" ]; then
	label=${on[tachyon-live]}
	if grep -q "skip austin: .*not 3\." "$TMP/$label.err" && ! awk '$1 == "austin"' "$TMP/$label.txt" | grep -q .; then
		ok "$label: austin skipped with a note: $(grep -m1 'skip austin:' "$TMP/$label.err")"
	else
		bad "$label: no skip note for austin: $(tail -n 3 "$TMP/$label.err" | tr '\n' ' ')"
	fi
fi
finish
