#!/bin/bash
# bpfpy oracle --html: the page of one short run (flat_alternating, ptrace
# and bpf, 3.12), parsed and then rendered by headless Chromium.
#
# What it proves:
#  - the page is written, parses with python3's html.parser without errors
#    and with balanced tags, and refers to nothing outside itself (no src=,
#    no stylesheet link, no http(s) URL): it must open offline;
#  - it holds the case, both modes, the table with the text table's columns
#    and one row per mode, and bars with a share in %;
#  - Chromium renders it (--dump-dom) into a DOM that still has the mode
#    names and the bar elements, and can screenshot it;
#  - a second run onto the same FILE is refused before sampling, the page
#    left as it was (the oracle has no --force).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
label=$(targets | awk -F'\t' '$1 ~ /^3\.12\./ { print $2; exit }')
[ -n "$label" ] || { echo "skip: no Python 3.12 among the targets"; exit 77; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)

html=$TMP/o.html
if ! "$BPFPY" oracle --snippet flat_alternating --mode ptrace --mode bpf --duration 1 \
	--warmup 0.3 --rate 0.2 --python "$label" --html "$html" -q \
	> "$TMP/out.txt" 2> "$TMP/err.txt"; then
	bad "oracle failed: $(tail -3 "$TMP/err.txt")"
	finish
fi
[ -s "$html" ] && ok "page written" || { bad "no page at $html"; finish; }

"$CHECKPY" "$CHECK/oracle_html.py" "$html" "$TMP/out.txt" &&
	ok "page parses, self-contained, case/modes/table/bars" || bad "page content (above)"

if [ -z "$CHROMIUM" ]; then
	echo "skip: chromium not installed, page not rendered"
	finish
fi
# A profile of its own each time: a shared one could be locked by another
# Chromium; no network, no updates, so the render is offline and quick.
chrome() {
	local prof
	prof=$(mktemp -d "$TMP/chrome.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --no-first-run --disable-sync --user-data-dir="$prof" "$@"
}
if chrome --dump-dom "file://$html" > "$TMP/dom.html" 2> "$TMP/chrome.err" && [ -s "$TMP/dom.html" ]; then
	ok "chromium rendered the page"
	missing=""
	for w in ptrace bpf flat_alternating '<table' 'class="bar m0"' 'class="bar m1"'; do
		grep -qF -- "$w" "$TMP/dom.html" || missing="$missing $w"
	done
	[ -z "$missing" ] && ok "rendered DOM has both modes, the case, a table, bars" \
		|| bad "rendered DOM lacks:$missing"
else
	bad "chromium --dump-dom failed: $(grep -v dbus "$TMP/chrome.err" | tail -3)"
fi
if chrome --window-size=1400,900 --screenshot="$TMP/o.png" "file://$html" > /dev/null 2>&1 &&
	[ "$(stat -c %s "$TMP/o.png" 2> /dev/null || echo 0)" -gt 10000 ]; then
	ok "screenshot ($(stat -c %s "$TMP/o.png") bytes)"
else
	bad "no screenshot"
fi

before=$(md5sum < "$html")
"$BPFPY" oracle --snippet flat_alternating --mode ptrace --duration 1 --python "$label" \
	--html "$html" -q > /dev/null 2> "$TMP/err2.txt"
rc=$?
[ $rc -ne 0 ] && grep -q "already exists" "$TMP/err2.txt" && [ "$(md5sum < "$html")" = "$before" ] \
	&& ok "existing page refused (exit $rc), left as it was" \
	|| bad "existing page: exit $rc, $(cat "$TMP/err2.txt")"
finish
