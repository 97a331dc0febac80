#!/bin/bash
# record -f heatmap (docs/formats.md, "Heatmap"), issue 29 item 3:
#  - a real program not written for it (snippets/realistic/raytrace.py) on
#    3.12 and 3.9 (host) and 3.15 (the sid chroot: its source read inside
#    the target's root), recorded with --opcodes into a heatmap, collapsed
#    and raw at once: the page parses, loads nothing, and every line's and
#    file's self and total equal what the collapsed output gives; it names
#    the hottest line, with opcodes; `convert` of the raw writes the same
#    page byte for byte; headless Chromium renders it opened on the hottest
#    line's file, that row marked and in view (DOM), and screenshots it;
#  - a hostile target running as nobody (debian-3.11): functions whose files
#    are a name and lines full of markup, quotes, control bytes, a 200 KB
#    line and bad UTF-8, symlinks to /etc/shadow and to a root-only secret
#    (directly and through ../), a FIFO and a plain file: the page is clean
#    UTF-8 with no control byte and no tag but its own (also in Chromium's
#    DOM), the secret and shadow's first line are nowhere, each refusal says
#    why, the plain file is shown, record finished on time, and the page,
#    whose hot line is line 303, opens scrolled to it;
#  - the same program as root in the sid chroot, with symlinks to a
#    world-readable host file (absolute and through ../): never followed
#    out of the target's root.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (BPF)"; exit 77; }
use_bpfpy
rows_file heatmap
row() { printf 'heatmap\t%s\t%s\n' "$1" "$2" >>"$ROWS"; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
HM="$CHECKPY $CHECK/heatmap_check.py"
export PYTHONPATH=$CHECK

chrome() {
	local prof
	prof=$(mktemp -d "$TMP/chrome.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --no-first-run --disable-sync --user-data-dir="$prof" \
		--window-size=1400,900 "$@" 2>/dev/null
}

# rendered NAME PAGE [COLLAPSED]: Chromium's DOM after the script ran,
# checked; with COLLAPSED its rows' shares too.
rendered() {
	[ -n "$CHROMIUM" ] || { echo "skip: $1: chromium not installed, page not rendered"; return; }
	if chrome --dump-dom "file://$2" >"$TMP/$1.dom" && [ -s "$TMP/$1.dom" ]; then
		$HM dom "$TMP/$1.dom" || fails=$((fails + 1))
		if [ -n "${3:-}" ]; then
			$HM shares "$TMP/$1.dom" "$3" >"$TMP/$1.dom.check" || fails=$((fails + 1))
			grep -E '^FAIL|self and total as collapsed' "$TMP/$1.dom.check" | sed 's/^\(ok\|FAIL\): /&DOM: /'
		fi
		[ "$(grep -o '<script' "$TMP/$1.dom" | wc -l)" = 1 ] && ok "$1: one script in the DOM" ||
			bad "$1: scripts in the DOM: $(grep -o '<script[^>]*>' "$TMP/$1.dom" | head -3)"
	else
		bad "$1: chromium --dump-dom failed"
	fi
}

# record_pid NAME PID [ARGS...]: record PID 2 s into NAME.{html,folded,raw}.
record_pid() {
	local name=$1 pid=$2 t0 rc
	shift 2
	t0=$(date +%s)
	timeout 60 "$BPFPY" record -p "$pid" -d 2 "$@" -o "$TMP/$name.html" -o "$TMP/$name.folded" \
		-o "$TMP/$name.raw" >"$TMP/$name.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && [ -s "$TMP/$name.html" ]; then
		ok "$name: recorded in $(($(date +%s) - t0)) s ($(grep -o 'sources: .*reading' "$TMP/$name.out"))"
	else
		bad "$name: record exit $rc: $(tail -3 "$TMP/$name.out")"
		return 1
	fi
}

# converted NAME: convert's page from the raw is record's, byte for byte.
converted() {
	"$BPFPY" convert -q "$TMP/$1.raw" -o "$TMP/$1.conv.html" &&
		cmp -s "$TMP/$1.html" "$TMP/$1.conv.html" &&
		ok "$1: convert raw -> heatmap = record's page ($(stat -c %s "$TMP/$1.html") bytes)" ||
		bad "$1: convert's page differs from record's"
}

real_program() {
	local label=$2 exe i
	[[ " pyenv-3.12 pyenv-3.9 sid-3.15 " == *" $label "* ]] || return 0
	exe=$(targets | awk -F'\t' -v l="$label" '$2 == l { print ($3 == "/" ? "" : $3) $4 }')
	# raytrace prints nothing: it runs once pyrun.sh has exec'd the
	# interpreter (a chroot's copies the script first), and renders at once
	py_launch "$label" "$ROOT_DIR/snippets/realistic/raytrace.py"
	for ((i = 0; i < 300; i++)); do
		[ /proc/"$PY_PID"/exe -ef "$exe" ] && break
		sleep 0.1
	done
	sleep 0.5
	[ /proc/"$PY_PID"/exe -ef "$exe" ] || { bad "$label: raytrace did not start: $(head -c 300 "$PY_OUT")"; return; }
	record_pid "rt-$label" "$PY_PID" --opcodes || return
	kill "$PY_PID"
	$HM shares "$TMP/rt-$label.html" "$TMP/rt-$label.folded" opcodes=1 source=1 || fails=$((fails + 1))
	converted "rt-$label"
	rendered "rt-$label" "$TMP/rt-$label.html" "$TMP/rt-$label.folded"
}

# The three at once (each_target: a log and a count each; the others
# return at once).
each_target real_program
if [ -n "$CHROMIUM" ] && [ -s "$TMP/rt-pyenv-3.12.html" ]; then
	chrome --screenshot="$TMP/rt.png" "file://$TMP/rt-pyenv-3.12.html" >/dev/null
	[ "$(stat -c %s "$TMP/rt.png" 2>/dev/null || echo 0)" -gt 20000 ] &&
		ok "screenshot of the 3.12 page ($(stat -c %s "$TMP/rt.png") bytes)" || bad "no screenshot"
fi

# make_hostile DIR SECRET: the files heatmap_hostile.py compiles its
# functions under.
make_hostile() {
	$CHECKPY - "$1" "$2" <<'EOF'
import os, sys
d, secret = sys.argv[1], sys.argv[2]
lines = [b"# \x1b]0;owned\x07 line %d" % i for i in range(1, 311)]
lines[302] = b"        x = \"</code></td><script>alert(2)</script>\" # '\x1b[2J\x07 <img src=x>"
lines[303] = b"A<" * 100000
lines[304] = b"bad \xff\xfe\xc3( utf-8"
name = "a<img src=x onerror=alert(1)>\"'&\x1b[31m.py"
open(os.path.join(d, name), "wb").write(b"\n".join(lines))
open(os.path.join(d, "ok.py"), "w").write("\n" * 302 + "OK_SOURCE_LINE = 303\n")
os.symlink("/etc/shadow", os.path.join(d, "shadow.py"))
os.symlink(secret, os.path.join(d, "secret.py"))
os.symlink("../" * 12 + secret.lstrip("/"), os.path.join(d, "dotdot.py"))
os.mkfifo(os.path.join(d, "fifo.py"))
EOF
}
NAME_SHOWN=$'a<img src=x onerror=alert(1)>"\'&'
LINE_SHOWN='x = "</code></td><script>alert(2)</script>"'

# As nobody, on the host: what bpfpy may read and the target may not.
if targets | awk -F'\t' '$2 == "debian-3.11" { f = 1 } END { exit !f }'; then
	mkdir -m 755 "$TMP/hh"
	secret="BPFPY-SECRET-$RANDOM$RANDOM"
	printf '%s\n' "$secret" >"$TMP/secret"
	chmod 600 "$TMP/secret"
	make_hostile "$TMP/hh" "$TMP/secret"
	cp "$PYDIR/heatmap_hostile.py" "$TMP/heatmap_hostile.py"
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3.11 \
		"$TMP/heatmap_hostile.py" "$TMP/hh" >"$TMP/nobody.out" 2>&1 &
	npid=$!
	PIDS+=("$npid")
	wait_file "$TMP/nobody.out" 30 "$npid" && grep -q ready "$TMP/nobody.out" || bad "nobody target: $(cat "$TMP/nobody.out")"
	if record_pid nobody "$npid"; then
		if $HM hostile "$TMP/nobody.html" "absent=$secret" "absent=$(head -n 1 /etc/shadow)" \
			"present=$NAME_SHOWN" "present=$LINE_SHOWN" "present=OK_SOURCE_LINE = 303" \
			"present=not readable with the target's own rights" \
			"present=is a FIFO, not a regular file: not opened"; then
			row "source file names and lines with markup, quotes, controls, a 200 KB line, bad UTF-8" \
				"escaped: well-formed UTF-8, no control byte, one script (the page's), lines cut at 1 KiB"
		else
			fails=$((fails + 1))
		fi
		if [ "$(grep -o "not readable with the target&apos;s own rights" "$TMP/nobody.html" | wc -l)" = 3 ]; then
			ok "nobody: shadow, secret and ../ secret each refused"
			row "a target running as nobody names symlinks to /etc/shadow and a root-only file (also via ../) as sources" \
				"not read: 'not readable with the target's own rights'; neither in the page"
		else
			bad "nobody: refusals: $(grep -o 'Source: not shown: [^<]*' "$TMP/nobody.html")"
		fi
		grep -q 'is a FIFO, not a regular file: not opened' "$TMP/nobody.html" &&
			row "a FIFO named as a source" "refused by its type, never opened; record ended on time"
		converted nobody
		grep -q '<body[^>]* data-hot-line="303"' "$TMP/nobody.html" &&
			ok "nobody: the hot line is 303, below the first screen" ||
			bad "nobody: $(grep -o '<body[^>]*>' "$TMP/nobody.html")"
		rendered nobody "$TMP/nobody.html"
	fi
	kill "$npid"
else
	echo "skip: no debian-3.11 for the nobody target"
fi

# As root in the sid chroot: links out of its root lead nowhere.
sid=$(targets | awk -F'\t' '$2 == "sid-3.15" { print $3 }')
if [ -n "$sid" ]; then
	cdir=$(mktemp -d "$sid/tmp/bpfpy-heatmap.XXXXXX")
	trap 'rm -rf "$cdir"; cleanup' EXIT
	hostsecret="BPFPY-HOST-$RANDOM$RANDOM"
	printf '%s\n' "$hostsecret" >"$TMP/hostsecret"
	chmod 644 "$TMP/hostsecret"
	[ ! -e "$sid$TMP/hostsecret" ] || bad "the chroot has $TMP/hostsecret too"
	make_hostile "$cdir" "$TMP/hostsecret"
	py_launch sid-3.15 "$PYDIR/heatmap_hostile.py" "${cdir#"$sid"}"
	wait_file "$PY_OUT" 30 "$PY_PID" && grep -q ready "$PY_OUT" || bad "chroot target: $(cat "$PY_OUT")"
	if record_pid chroot "$PY_PID"; then
		$HM hostile "$TMP/chroot.html" "absent=$hostsecret" "present=$NAME_SHOWN" \
			"present=$LINE_SHOWN" "present=OK_SOURCE_LINE = 303" || fails=$((fails + 1))
		if [ "$(grep -c 'No such file or directory' "$TMP/chroot.html")" -ge 2 ]; then
			ok "chroot: the links to $TMP/hostsecret found nothing in the target's root"
			row "a chroot target names absolute and ../ symlinks to a world-readable host file as sources" \
				"resolved inside its root: 'No such file or directory'; the host file not in the page"
		else
			bad "chroot: $(grep -o 'Source: not shown: [^<]*' "$TMP/chroot.html")"
		fi
	fi
	kill "$PY_PID"
fi
finish
