"""Print the C table of this interpreter's opcodes, for
user/python/gen/opcodes.c (scripts/gen_opcode_data.sh runs it under every
interpreter and assembles the file; it must stay valid Python from 3.8 on).

Everything comes from the interpreter's own modules, nothing is typed:
  names      dis._all_opname where dis has it (3.11+: opcode.opname with the
             specialized forms put in their slots, from
             opcode._specialized_instructions on 3.11/3.12 and
             _opcode_metadata._specialized_opmap on 3.13+), else
             opcode.opname; the first 256 (the rest are pseudo-ops, never
             in bytecode); "<N>" names are unassigned bytes.
  base       dis.deoptmap (3.11+, from opcode._specializations): the base
             instruction of each specialized form.
  EXTENDED_ARG  opcode.EXTENDED_ARG.
The script cross-checks what dis derived against the sources it derived it
from, and fails rather than print a table they disagree on.

Output: one C definition, "static const struct py_opcode_table ops_3_N",
starting with a comment line "/* opcodes of 3.N ..." and ending "}};".
"""
import dis
import opcode
import sys


def fail(msg):
    sys.stderr.write("gen_opcodes.py (%s): %s\n" % (sys.version.split()[0], msg))
    sys.exit(1)


def sources():
    """(what the names came from, names[256], deoptmap)"""
    names = list(getattr(dis, "_all_opname", opcode.opname))[:256]
    deopt = dict(getattr(dis, "deoptmap", {}))
    if len(names) != 256:
        fail("%d opcode names, not 256" % len(names))
    allmap = getattr(dis, "_all_opmap", opcode.opmap)
    spec = getattr(opcode, "_specialized_opmap", None)
    if spec is not None:  # 3.13+: the metadata's own numbers
        for name, op in spec.items():
            if op < 256 and names[op] != name:
                fail("dis names byte %d %r, _specialized_opmap %r" % (op, names[op], name))
        what = "dis._all_opname (opcode.opname, _opcode_metadata._specialized_opmap)"
    elif hasattr(opcode, "_specialized_instructions"):  # 3.11, 3.12
        for name in opcode._specialized_instructions:
            if name not in allmap or names[allmap[name]] != name:
                fail("specialized %r has no byte in dis._all_opname" % name)
        what = "dis._all_opname (opcode.opname, opcode._specialized_instructions)"
    else:
        what = "opcode.opname"
    for base, family in getattr(opcode, "_specializations", {}).items():
        for name in family:
            if deopt.get(name) != base:
                fail("dis.deoptmap[%r] is %r, opcode._specializations says %r"
                     % (name, deopt.get(name), base))
    if deopt:
        what += ", dis.deoptmap (opcode._specializations)"
    return what, names, deopt


def c_str(s):
    if not all(c.isalnum() or c == "_" for c in s):
        fail("opcode name %r is not an identifier" % s)
    return '"%s"' % s


def main():
    what, names, deopt = sources()
    ext = opcode.EXTENDED_ARG
    minor = sys.version_info[1]
    if names[ext] != "EXTENDED_ARG":
        fail("opcode.EXTENDED_ARG %d is named %r" % (ext, names[ext]))
    w = sys.stdout.write
    w("/* opcodes of 3.%d, from its own %s, opcode.EXTENDED_ARG */\n" % (minor, what))
    w("static const struct py_opcode_table ops_3_%d = {0x03%02x, %d, {\n" % (minor, minor, ext))
    for byte, name in enumerate(names):
        if name.startswith("<"):
            continue
        base = deopt.get(name)
        w("    [%d] = {%s, %s},\n" % (byte, c_str(name), c_str(base) if base else "NULL"))
    w("}};\n")


main()
