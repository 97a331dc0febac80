#!/bin/bash
# Rebuilds the seed corpora in tests/fuzz/corpus/ from real inputs in the
# tree: line tables dumped from the real interpreters, the debug-offsets
# blobs, the shipped rules, a small system ELF, and the walker images built
# by fuzz_walker.c's own seed generator (make fuzz-seeds). Run from the
# repository root; the output is committed, so this is only for refreshes.
set -eu
cd "$(dirname "$0")/../.."
C=tests/fuzz/corpus
mkdir -p $C/linetable $C/debug_offsets $C/elf $C/rules $C/walker

# linetable: [minor-8][firstlineno le32][instr le32][table], from
# tests/data/linetables/3.X.txt lines "name version firstlineno hex ...".
python3 - <<'PY'
import glob, os, struct
for path in sorted(glob.glob("tests/data/linetables/3.*.txt")):
    minor = int(os.path.basename(path).split(".")[1])
    for i, line in enumerate(open(path)):
        if line.startswith("#") or not line.strip():
            continue
        # Names may hold spaces: anchor on the version field.
        f = line.split()
        v = next(k for k, t in enumerate(f) if t.startswith("0x03"))
        first, tab = int(f[v + 1]), bytes.fromhex(f[v + 2].strip("-"))
        blob = bytes([minor - 8]) + struct.pack("<ii", first, 3) + tab
        open(f"tests/fuzz/corpus/linetable/3.{minor}_{i}", "wb").write(blob)
PY

cp tests/data/debug_offsets_3.1[345].bin $C/debug_offsets/
cp snippets/*.rules $C/rules/
# A small real shared object: symbols, notes (build-id), PT_LOADs.
cp /usr/lib/x86_64-linux-gnu/libdl.so.2 $C/elf/libdl.so.2
make --no-print-directory fuzz-seeds >/dev/null
