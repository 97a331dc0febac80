#!/bin/bash
# Building needs neither root nor the test stack (scripts/deps.sh groups).
# A copy of the tree owned by `nobody` is built as nobody (setpriv, a plain
# user's PATH without /usr/sbin) on a machine that, as far as dpkg-query
# tells, has the build packages but none of the test-only ones (a wrapper
# around the real dpkg-query hides chromium, golang-go, valgrind, mmdebstrap,
# python3.11-dbg). apt-get is replaced by a wrapper that records any call.
# Checked:
#   - `make` as nobody: exit 0, build/bpfpy runs (--help), no apt-get call;
#   - `scripts/deps.sh test` and `make test` as nobody: fail before building
#     anything, naming the hidden packages and the apt-get line;
#   - with a build package hidden too (libbpf-dev), `make` as nobody fails
#     at once with that name, nothing compiled.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || { echo "skip: setpriv (util-linux) missing"; exit 77; }
HIDE="chromium golang-go valgrind mmdebstrap python3.11-dbg"

# the tree as git sees it (tracked and new files, as in the worktree)
src=$TMP/tree
mkdir -p "$src"
(cd "$ROOT_DIR" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$src" 2>/dev/null)
[[ -f $src/Makefile && -x $src/scripts/deps.sh ]] || { bad "could not copy the tree"; finish; }

# shim DIR HIDDEN...: dpkg-query that hides HIDDEN; apt-get that only records
shim() {
	local d=$1
	shift
	mkdir -p "$d"
	cat >"$d/dpkg-query" <<EOF
#!/bin/sh
/usr/bin/dpkg-query "\$@" | awk -v hide=" $* " 'index(hide, " " \$2 " ") == 0'
EOF
	cat >"$d/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$d/apt-called"
exit 1
EOF
	chmod 755 "$d" "$d/dpkg-query" "$d/apt-get"
}
shim "$TMP/shim" $HIDE
shim "$TMP/shim-build" $HIDE libbpf-dev
chown -R nobody:nogroup "$src"
chmod 755 "$TMP"

# as_nobody SHIM CMD...: in the copy, as nobody, with a plain user's PATH
as_nobody() {
	local s=$1
	shift
	(cd "$src" && timeout -s KILL 600 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -i PATH="$s:/usr/local/bin:/usr/bin:/bin" HOME=/nonexistent LANG=C.UTF-8 "$@")
}

as_nobody "$TMP/shim" make -j2 >"$TMP/make.out" 2>&1
rc=$?
if [[ $rc == 0 && -x $src/build/bpfpy ]] && as_nobody "$TMP/shim" build/bpfpy --help >/dev/null 2>&1; then
	ok "make as nobody, test packages absent: exit 0, build/bpfpy runs"
else
	bad "make as nobody: exit $rc: $(tail -n 5 "$TMP/make.out")"
fi
grep -q '^deps.sh' "$TMP/make.out" && bad "make as nobody: deps.sh spoke: $(grep '^deps.sh' "$TMP/make.out")"
[[ -e $TMP/shim/apt-called ]] && bad "make as nobody called apt-get: $(cat "$TMP/shim/apt-called")"

as_nobody "$TMP/shim" scripts/deps.sh test >"$TMP/deps.out" 2>&1
rc=$?
# names_all FILE: the missing-packages line and the apt-get line name each hidden one
names_all() {
	local p
	for p in $HIDE; do
		grep -q "missing Debian packages: .*\b$p\b" "$1" && grep -q "sudo apt-get install .*\b$p\b" "$1" || return 1
	done
}
if [[ $rc == 1 ]] && names_all "$TMP/deps.out"; then
	ok "deps.sh test as nobody: exit 1, names $HIDE and the apt-get line"
else
	bad "deps.sh test as nobody: exit $rc: $(cat "$TMP/deps.out")"
fi
as_nobody "$TMP/shim" make test >"$TMP/mtest.out" 2>&1
rc=$?
if [[ $rc != 0 ]] && names_all "$TMP/mtest.out" && ! grep -q '^== ' "$TMP/mtest.out"; then
	ok "make test as nobody: stops at the missing test packages (exit $rc), runs nothing"
else
	bad "make test as nobody: exit $rc: $(tail -n 5 "$TMP/mtest.out")"
fi

rm -rf "$src/build"
as_nobody "$TMP/shim-build" make -j2 >"$TMP/make2.out" 2>&1
rc=$?
if [[ $rc != 0 ]] && grep -qF "missing Debian packages: libbpf-dev" "$TMP/make2.out" && [[ -z $(find "$src/build" -name '*.o' 2>/dev/null) ]]; then
	ok "make as nobody without libbpf-dev: exit $rc, names it, compiles nothing"
else
	bad "make as nobody without libbpf-dev: exit $rc: $(tail -n 5 "$TMP/make2.out")"
fi
for s in shim shim-build; do
	[[ -e $TMP/$s/apt-called ]] && bad "apt-get was called as nobody: $(cat "$TMP/$s/apt-called")"
done
finish
