#!/bin/bash
# The front door: README, docs pages, man pages, completion.
#
# - README.md is at most 250 lines, and no relative link of it or of
#   docs/*.md is broken.
# - Every long option of every command's --help is named on its docs page
#   (docs/COMMAND.md) and in its man page (check/docs_check.py), and each
#   page's options table is what scripts/gen_man.py --docs makes of today's
#   --help.
# - The man pages are generated (scripts/gen_man.py) and render with
#   `man --warnings -l` without a warning; `make install DESTDIR=...` puts
#   them where `man bpfpy-record` finds them, with the completion and the
#   docs.
# - contrib/bpfpy.bash is what scripts/gen_completion.py makes of today's
#   --help, and completing with it (bash's own COMP_WORDS/_bpfpy) offers the
#   commands, options, formats, clocks, modes and snippet names.
# - Every command of the README's quick start runs and exits 0, on a real
#   target: Debian's python3.11 (static, USDT) running
#   py/quickstart_app.py as "app.py" (PID: the same program, started
#   first and running all along; "python3": that interpreter). The only
#   changes to the commands: `sudo ` dropped (we are root), `-d 5`/`-d 3`
#   run as `-d 1` and the oracle's windows as `--duration 0.5`, so that the
#   test takes a minute, not five. Each `-o FILE` must exist, not empty.
. "$(dirname "$0")/lib.sh"

use_bpfpy

# -- README and docs pages, man pages
lines=$(wc -l <"$ROOT_DIR/README.md")
if ((lines <= 250)); then ok "README.md: $lines lines"; else bad "README.md: $lines lines, more than 250"; fi

"$CHECKPY" "$CHECK/docs_check.py" links "$ROOT_DIR"
fails=$((fails + $?))

MAN=$TMP/man
if python3 "$ROOT_DIR/scripts/gen_man.py" "$BPFPY" "$MAN" "$ROOT_DIR/docs" 2>"$TMP/gen_man.err"; then
	n=0
	for f in "$MAN"/*.1; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		if [[ -n $w ]]; then bad "$(basename "$f"): man warns: $(head -c 300 <<<"$w")"; else n=$((n + 1)); fi
	done
	ok "$n man pages render without a warning"
	"$CHECKPY" "$CHECK/docs_check.py" options "$BPFPY" "$ROOT_DIR/docs" "$MAN"
	fails=$((fails + $?))
	cp -r "$ROOT_DIR/docs" "$TMP/docs"
	python3 "$ROOT_DIR/scripts/gen_man.py" --docs "$BPFPY" "$TMP/docs"
	if diff -r "$ROOT_DIR/docs" "$TMP/docs" >"$TMP/docs.diff"; then
		ok "the docs pages' options tables are up to date with --help"
	else
		bad "docs pages' options tables differ from --help (scripts/gen_man.py --docs build/bpfpy): $(head -c 400 "$TMP/docs.diff")"
	fi
else
	bad "gen_man.py failed: $(head -c 300 "$TMP/gen_man.err")"
fi

DEST=$TMP/inst
if make -C "$ROOT_DIR" -s install DESTDIR="$DEST" PREFIX=/usr/local >"$TMP/install.log" 2>&1; then
	page=$(MANPATH=$DEST/usr/local/share/man MANWIDTH=80 man bpfpy-record 2>&1 | head -n 5)
	if grep -qE "bpfpy-record +- " <<<"$page"; then ok "man bpfpy-record after make install"; else bad "man bpfpy-record after make install: $page"; fi
	for f in bin/bpfpy share/bash-completion/completions/bpfpy share/doc/bpfpy/README.md \
		share/doc/bpfpy/docs/record.md share/man/man1/bpfpy.1; do
		[[ -s $DEST/usr/local/$f ]] || bad "make install: no $f"
	done
else
	bad "make install DESTDIR=$DEST failed: $(tail -n 5 "$TMP/install.log")"
fi

# -- completion
if python3 "$ROOT_DIR/scripts/gen_completion.py" "$BPFPY" "$TMP/bpfpy.bash" &&
	cmp -s "$TMP/bpfpy.bash" "$ROOT_DIR/contrib/bpfpy.bash"; then
	ok "contrib/bpfpy.bash is up to date with --help"
else
	bad "contrib/bpfpy.bash differs from scripts/gen_completion.py's output: regenerate it"
fi
# complete WORDS...: what _bpfpy offers for the last word, one line, sorted
complete_words() {
	(cd "$ROOT_DIR" && bash -c '. contrib/bpfpy.bash; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bpfpy; printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" "' _ "$@")
}
want_completion() {
	local want=$1 got
	shift
	got=$(complete_words "$@")
	if [[ " $got " == *" $want "* ]]; then ok "complete '$*': offers $want"; else bad "complete '$*': '$got', want $want among them"; fi
}
want_completion record bpfpy rec
want_completion oracle bpfpy ""
want_completion --clock bpfpy record --clo
want_completion offcpu bpfpy record --clock ""
want_completion offcpu bpfpy record --clock=off
want_completion pprof bpfpy record -f ""
want_completion gecko bpfpy convert --format ""
want_completion bpf-wall bpfpy oracle --mode bpf-
want_completion flat_alternating bpfpy oracle --snippet flat_
want_completion --locals bpfpy dump --lo
want_completion --usdt bpfpy trace --us

# -- the quick start, run
py=$(targets | awk -F'\t' '$2 == "debian-3.11" { print $4; exit }')
if [[ -z $py ]]; then
	bad "no debian-3.11 target for the quick start"
	finish
fi
cp "$PYDIR/quickstart_app.py" "$TMP/app.py"
export APP_SECONDS=3
APP_SECONDS=3600 py_launch debian-3.11 "$TMP/app.py"
if ! py_ready "$PY_PID" "$PY_OUT" debian-3.11; then
	bad "the quick start's target did not start"
	finish
fi
mapfile -t cmds < <("$CHECKPY" "$CHECK/docs_check.py" quickstart "$ROOT_DIR/README.md")
((${#cmds[@]} >= 10)) || bad "only ${#cmds[@]} commands in the README's quick start"
export PATH=$(dirname "$BPFPY"):$PATH
for c in "${cmds[@]}"; do
	run=${c#sudo }
	run=${run//PID/$PY_PID}
	run=${run//python3 app.py/$py app.py}
	run=$(sed -E 's/ -d [0-9]+/ -d 1/; s/^(bpfpy oracle .*)$/\1 --duration 0.5 --python debian-3.11/; s/ --duration 1 / /' <<<"$run")
	(cd "$TMP" && timeout 300 bash -c "$run") >"$TMP/qs.out" 2>"$TMP/qs.err"
	rc=$?
	if [[ $rc != 0 ]]; then
		bad "quick start '$c' exited $rc: $(tail -c 400 "$TMP/qs.err")"
		continue
	fi
	missing=
	for f in $(grep -oE -- '-o [^ ]+' <<<"$run" | cut -c4-); do
		[[ -s $TMP/$f ]] || missing+=" $f"
	done
	if [[ -n $missing ]]; then bad "quick start '$c': no$missing"; else ok "quick start '$c'"; fi
done
kill -9 "$PY_PID" 2>/dev/null
finish
