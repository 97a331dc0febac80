#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Regenerate tests/data/linetables/<ver>.txt: real line tables, compiled by
# each interpreter found here, with the line CPython itself gives for every
# instruction. tests/unit/test_linetable.c checks user/python/linetable.c against
# them, so the decoder is tested against the interpreters' own answers
# rather than against our reading of the format.
#
# Usage: scripts/gen_linetable_data.sh [OUTDIR]
#
# File format, one code object per line, fields separated by one space:
#   <qualname> <version_hex> <co_firstlineno> <table hex, "-" if empty>
#   <instruction count> <comma-separated line per instruction, -1 = none>
#   [3.11+: <comma-separated col:endcol per instruction, from co_positions;
#    -1 = none, and endcol -1 where the span ends on another line>]
# Lines starting with '#' are comments.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/tests/data/linetables}
pyenv=${PYENV_ROOT:-/root/.pyenv}
sid=${BPFPY_SID:-/var/cache/bpfpy/sid}
mkdir -p "$out"

# The generator runs inside each target interpreter, so it must stay valid
# Python from 3.8 on: no match statements, no walrus in the sample's own
# code paths we depend on, no f-string nesting tricks.
gen=$(cat <<'EOF'
import dis, sys, types

def sample_source():
    s = []
    s.append("import os")
    s.append("def loops(n):")
    s.append("    total = 0")
    s.append("    for i in range(n):")
    s.append("        if i % 3:")
    s.append("            total += i")
    s.append("        else:")
    s.append("            total -= 1")
    s.append("    while total > 10:")
    s.append("        total //= 2")
    s.append("    return total")
    s.append("")
    s.append("def multiline(a, b,")
    s.append("              c=3):")
    s.append("    x = (a +")
    s.append("         b *")
    s.append("         c)")
    s.append("    y = [x,")
    s.append("         a, b,")
    s.append("         c]")
    s.append("    return sum(")
    s.append("        y)")
    s.append("")
    s.append("def comps(xs):")
    s.append("    a = [x * 2 for x in xs if x]")
    s.append("    b = {x: y for x, y in zip(xs, xs)}")
    s.append("    c = list(x for x in xs)")
    s.append("    return a, b, c")
    s.append("")
    s.append("def excepts(f):")
    s.append("    try:")
    s.append("        f()")
    s.append("    except ValueError as e:")
    s.append("        return str(e)")
    s.append("    except (KeyError, IndexError):")
    s.append("        pass")
    s.append("    finally:")
    s.append("        os.getpid()")
    s.append("    with open(os.devnull) as fh:")
    s.append("        fh.read()")
    s.append("    return None")
    s.append("")
    s.append("class K:")
    s.append("    def method(self):")
    s.append("        def inner():")
    s.append("            return self")
    s.append("        return inner")
    s.append("    lam = lambda self: (self,")
    s.append("                        1)")
    s.append("")
    s.append("def gen(n):")
    s.append("    for i in range(n):")
    s.append("        yield i")
    s.append("")
    # A long function: many lines, a loop whose back edge jumps up ~300
    # lines (big negative deltas), a gap of 200 comment lines (line deltas
    # beyond one signed byte), and one line whose bytecode is longer than
    # 255 bytes (address deltas beyond one byte in lnotab / PEP 626).
    s.append("def long_function(n):")
    s.append("    acc = 0")
    s.append("    for i in range(n):")
    for k in range(150):
        s.append("        acc += i * %d" % k)
    for k in range(200):
        s.append("        # filler comment %d" % k)
    s.append("        acc -= 1")
    for k in range(100):
        s.append("        if acc > %d: acc = acc - %d" % (k, k))
    s.append("    big = [" + ", ".join("n + %d" % k for k in range(200)) + "]")
    s.append("    return acc, (big,")
    s.append("                 acc)")
    s.append("")
    return "\n".join(s) + "\n"

def expected_lines(co):
    ncode = len(co.co_code) // 2
    lines = [-1] * ncode
    if hasattr(co, "co_lines"):
        for start, end, line in co.co_lines():
            for b in range(start, end, 2):
                if 0 <= b // 2 < ncode:
                    lines[b // 2] = -1 if line is None else line
    else:
        starts = list(dis.findlinestarts(co))
        for idx, (off, line) in enumerate(starts):
            end = starts[idx + 1][0] if idx + 1 < len(starts) else 2 * ncode
            for b in range(off, end, 2):
                lines[b // 2] = line
    return lines

def expected_cols(co):
    """col:endcol per code unit (3.11+), as bpfpy keeps them: 0-based,
    -1 where CPython has none, endcol -1 where the span ends on a later
    line than it starts."""
    out = []
    for line, endline, col, endcol in co.co_positions():
        if col is None:
            col = -1
        if endcol is None or endline != line:
            endcol = -1
        out.append("%d:%d" % (col, endcol))
    return out

def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            for x in walk(c):
                yield x

def main():
    top = compile(sample_source(), "sample.py", "exec")
    w = sys.stdout.write
    w("# generated by scripts/gen_linetable_data.sh with %s\n" % sys.version.split()[0])
    for co in walk(top):
        tab = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
        name = getattr(co, "co_qualname", co.co_name).replace(" ", "_")
        lines = expected_lines(co)
        cols = ""
        if hasattr(co, "co_positions"):
            cols = " " + ",".join(expected_cols(co))
        w("%s 0x%08x %d %s %d %s%s\n" % (name, sys.hexversion, co.co_firstlineno,
                                         tab.hex() or "-", len(lines),
                                         ",".join(str(x) for x in lines), cols))

main()
EOF
)

n=0
for v in 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
	py=$(ls "$pyenv/versions/$v/bin/python3."* 2>/dev/null | grep -E 'python3\.[0-9]+$' | head -1 || true)
	[ -n "$py" ] || continue
	"$py" -c "$gen" > "$out/${v%.*}.txt"
	n=$((n + 1))
done
for m in 3.14 3.15; do
	if [ -x "$sid/usr/bin/python$m" ]; then
		chroot "$sid" "python$m" -c "$gen" > "$out/$m.txt"
		n=$((n + 1))
	fi
done
echo "wrote $n line-table files to $out"
