"""Copy a CPython 3.13+ executable, setting the free_threaded field of the
_Py_DebugOffsets that opens its .PyRuntime section, so that a real, running
process declares itself a free-threaded build (Py_GIL_DISABLED).

No free-threaded CPython can be installed on this machine (not in Debian,
and no PyPI): this is how tests/integration/test_bad_input.sh shows that
bpfpy refuses one by what the target says of itself, as a debugger must,
and not by its file name. The interpreter never reads the field, so the copy
runs exactly like the original.

usage: claim_free_threaded.py SRC DST   (run by any Python 3)
"""
import shutil
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
if data[:4] != b"\x7fELF" or data[4] != 2:
    sys.exit(f"{src}: not a 64-bit ELF file")
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)


def section(i):
    name, _type, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    return name, off, size


_, stroff, _ = section(shstrndx)
for i in range(shnum):
    name, off, size = section(i)
    end = data.index(b"\0", stroff + name)
    if data[stroff + name:end] == b".PyRuntime":
        break
else:
    sys.exit(f"{src}: no .PyRuntime section")
cookie, version, free_threaded = struct.unpack_from("<8sQQ", data, off)
if cookie != b"xdebugpy" or version < 0x030D0000:
    sys.exit(f"{src}: no _Py_DebugOffsets of 3.13+ at .PyRuntime")
struct.pack_into("<Q", data, off + 16, 1)
open(dst, "wb").write(data)
shutil.copymode(src, dst)
print(f"{dst}: version {version:#x}, free_threaded {free_threaded} -> 1")
