# The checker of tests/integration/test_dump_locals.sh: one `dump --locals`
# of py/locals.py, text or --json, against the values that program holds.
#   check_locals.py label=L version=V fmt=text|json out=DUMP
# The expected strings are repr() of each value, except that control bytes
# are written \xNN by bpfpy's escaper (so "\t" is "\x09"), ints past 390
# bits are shown by their size, and anything not an exact built-in type of
# the shown kinds by its type name and address.
# Prints ok:/FAIL: lines; exit status = failures.
import json, re, sys

from checklib import Report, kv

args = kv(sys.argv[1:])
report = Report("%s locals %s" % (args["label"], args["fmt"]))
ok, bad = report.ok, report.bad
minor = int(args["version"].split(".")[1])

CUT = "\u2026"
HOLDER = {
    "arg_int": ("int", "42"),
    "neg_big": ("int", "-1267650600228229401496703217721"),
    "huge": ("int", "<int of 1661 bits>"),
    "real": ("float", "2.5"),
    "tenth": ("float", "0.1"),
    "text": ("str", "'tab\\x09here \\x1b[2J caf\u00e9 \u20ac \U0001f600'"),
    "data": ("bytes", "b'\\x00\\xffab\\\\'"),
    "nothing": ("none", "None"),
    "yes": ("bool", "True"),
    "no": ("bool", "False"),
    "items": ("other", re.compile(r"<list at 0x[0-9a-f]+>$")),
    "captured": ("str", "'in a cell'"),
    # 120 code points: the quote, 118 x, the ellipsis (no closing quote)
    "long_text": ("str", "'" + "x" * 118 + CUT),
    "impostor": ("other", re.compile(r"<int at 0x[0-9a-f]+>$")),
    "sub": ("other", re.compile(r"<Sub at 0x[0-9a-f]+>$")),
    "inner": ("other", re.compile(r"<function at 0x[0-9a-f]+>$")),
}
WIDE = {"v%d" % i: ("int", str(i * 7)) for i in range(64)}


def match(want, got):
    return want.match(got) if hasattr(want, "match") else want == got


def check_frame(fname, locs, want, not_read, want_not_read):
    names, good = [n for n, _, _ in locs], 0
    if sorted(names) != sorted(want):
        bad("%s: locals %s, want %s" % (fname, names, sorted(want)))
    for n, kind, value in locs:
        if n not in want:
            continue
        wk, wv = want[n]
        if not match(wv, value):
            bad("%s: %s = %r, want %r" % (fname, n, value, getattr(wv, "pattern", wv)))
        elif kind is not None and kind != wk:
            bad("%s: %s is of kind %s, want %s" % (fname, n, kind, wk))
        else:
            good += 1
    if not_read != want_not_read:
        bad("%s: %s locals not read, want %s" % (fname, not_read, want_not_read))
    ok("%s: %d of %d locals as expected, %d not read" % (fname, good, len(want), not_read))


def frames_json(text):
    d = json.loads(text)
    out = {}
    for t in d["threads"]:
        for f in t["frames"]:
            if "locals" not in f:
                bad("frame %s has no \"locals\" key" % f.get("name"))
                continue
            if f["locals_error"] is not None:
                bad("%s: locals not read: %s" % (f["name"], f["locals_error"]))
            locs = [(l["name"], l["kind"], l["value"]) for l in (f["locals"] or [])]
            out.setdefault(f["name"], (locs, f["locals_not_read"]))
    return out


def frames_text(text):
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"    (\S+) \(", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, ([], 0))
            continue
        m = re.match(r"        <(\d+) more locals not read", line)
        if m and cur:
            out[cur] = (out[cur][0], int(m.group(1)))
            continue
        m = re.match(r"        <locals not read: (.*)>$", line)
        if m:
            bad("%s: locals not read: %s" % (cur, m.group(1)))
            continue
        m = re.match(r"        (\S+) = (.*)$", line)
        if m and cur:
            out[cur][0].append((m.group(1), None, m.group(2)))
    return out


text = open(args["out"], encoding="utf-8").read()
frames = frames_json(text) if args["fmt"] == "json" else frames_text(text)
for fname, want, want_not_read in (("holder", HOLDER, 0), ("wide", WIDE, 6)):
    if fname not in frames:
        bad("no frame %s in the dump (frames: %s)" % (fname, sorted(frames)))
        continue
    locs, not_read = frames[fname]
    check_frame(fname, locs, want, not_read, want_not_read)
if "<module>" in frames and frames["<module>"][0]:
    bad("<module>: locals %s, want none (a module's names are globals)" % frames["<module>"][0])
report.done()
