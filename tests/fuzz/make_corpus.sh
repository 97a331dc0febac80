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
# Structure-aware seeds for the ELF target: libdl with the sparse mark
# (e_ident[15] = 'S': fuzz_elf.c extends the file by a hole to 3 GiB) and one
# table at a time claiming 2 GiB, and one with the build-id note's n_descsz
# at 0x80000000 (issue 11 rows 1 and 2).
python3 - <<'PY'
import struct
src = open("tests/fuzz/corpus/elf/libdl.so.2", "rb").read()
shoff, = struct.unpack_from("<Q", src, 0x28)
shnum, shstrndx = struct.unpack_from("<HH", src, 0x3C)
hdr = lambda i: shoff + 64 * i
stroff = struct.unpack_from("<Q", src, hdr(shstrndx) + 24)[0]
def name(i):
    n = struct.unpack_from("<I", src, hdr(i))[0]
    return src[stroff + n:src.index(b"\0", stroff + n)].decode()
for want, descsz in ((".dynsym", 0), (".dynstr", 0), (".note.gnu.build-id", 0),
                     (".note.gnu.build-id", 0x80000000)):
    b = bytearray(src)
    b[15] = ord("S")
    for i in range(shnum):
        if name(i) == want:
            struct.pack_into("<Q", b, hdr(i) + 32, 2 << 30)
            if descsz:
                off = struct.unpack_from("<Q", src, hdr(i) + 24)[0]
                struct.pack_into("<I", b, off + 4, descsz)
    tag = want.strip(".").replace(".", "_") + ("_overflow" if descsz else "")
    open("tests/fuzz/corpus/elf/sparse_" + tag, "wb").write(b)
PY
