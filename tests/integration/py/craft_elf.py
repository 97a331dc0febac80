"""Write a hostile copy of a real ELF file (a libpython) for bpfpy's tests.

    craft_elf.py MODE SRC DST

MODE (each file is a copy of SRC with one lie, made sparse to >= 2 GiB so
that a reader that trusts a size reads gigabytes):
  note-overflow  .note.gnu.build-id's n_descsz = 0x80000000 and the section
                 claiming 2 GiB + 64 bytes (a 32-bit n_descsz * 2 + 1 wraps
                 to 1 and passes a size check)
  huge-note      .note.gnu.build-id valid, but its sh_size claims 2 GiB
  huge-dynsym    .dynsym's sh_size claims 2 GiB
  huge-strtab    .dynstr's sh_size claims 2 GiB
Every claimed range lies inside the (sparse) file, so a size check against
the file alone does not refuse it: only a cap does.
"""
import os
import shutil
import struct
import sys

GIB2 = 2 << 30


def sections(f):
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or eh[4] != 2 or eh[5] != 1:
        sys.exit("craft_elf: %s is not a little-endian ELF64 file" % f.name)
    shoff, = struct.unpack_from("<Q", eh, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", eh, 0x3A)
    hdrs = []
    for i in range(shnum):
        f.seek(shoff + i * shentsize)
        hdrs.append((shoff + i * shentsize, struct.unpack("<IIQQQQIIQQ", f.read(64))))
    stroff, strsize = hdrs[shstrndx][1][4], hdrs[shstrndx][1][5]
    f.seek(stroff)
    names = f.read(strsize)
    out = {}
    for at, h in hdrs:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        out[name] = (at, h)
    return out


def set_size(f, at, size):
    f.seek(at + 32)  # sh_size
    f.write(struct.pack("<Q", size))


def main():
    mode, src, dst = sys.argv[1:4]
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        sec = sections(f)
        if mode in ("note-overflow", "huge-note"):
            at, h = sec[".note.gnu.build-id"]
            if mode == "note-overflow":
                f.seek(h[4] + 4)  # n_descsz of the first note
                f.write(struct.pack("<I", 0x80000000))
                set_size(f, at, 0x80000000 + 64)
            else:
                set_size(f, at, GIB2)
            end = h[4] + GIB2 + 4096
        elif mode in ("huge-dynsym", "huge-strtab"):
            at, h = sec[".dynsym" if mode == "huge-dynsym" else ".dynstr"]
            set_size(f, at, GIB2 - (GIB2 % 24))
            end = h[4] + GIB2 + 4096
        else:
            sys.exit("craft_elf: unknown mode " + mode)
        f.truncate(max(end, os.path.getsize(dst)))
    os.chmod(dst, 0o644)


main()
