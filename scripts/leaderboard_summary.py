#!/usr/bin/python3
"""The README's leaderboard table, from a `make leaderboard` run.

Usage: scripts/leaderboard_summary.py LEADERBOARD.json [--cases all|snippets|realistic]
                                      [--rate KHZ] [--by-case]

Reads build/leaderboard.json (scripts/leaderboard.sh) and prints, per mode
(the reference rows apart: `ptrace (ref)` at 1 kHz, `ptrace-low (ref)` at
10 kHz), a markdown row:

  cells        case x interpreter x rate cells the mode ran in (a peer: only
               on the interpreters it supports; bpf-timer, the control
               that takes no sample, is left out)
  samples      the stacks it gave, summed over the cells
  errors%, impossible%, tvd_excess
               the median over the cells, the worst cell in brackets (the
               columns of `bpfpy oracle --help`; tvd_excess is against the
               reference of the same cell)
  µs_target    median over the cells of what each sample cost the target
               (bpfpy's own modes; a peer's is not measured: -)

--cases realistic keeps the programs of snippets/realistic/ (named
realistic/NAME), snippets the oracle's own cases, all both (default).
--rate keeps one rate. --by-case prints one row per case and mode instead
(median over its interpreters and rates), for the note on a suite.
The async runs (bpf-async and the async peers, scripts/leaderboard.sh) are
rows of their own, against their ptrace-async reference.
"""
import json
import statistics
import sys


def args():
    a = sys.argv[1:]
    if not a or a[0].startswith("-"):
        sys.exit(__doc__)
    opts = {"cases": "all", "rate": None, "by_case": False}
    i = 1
    while i < len(a):
        if a[i] == "--cases" and i + 1 < len(a) and a[i + 1] in ("all", "snippets", "realistic"):
            opts["cases"], i = a[i + 1], i + 2
        elif a[i] == "--rate" and i + 1 < len(a):
            opts["rate"], i = float(a[i + 1]), i + 2
        elif a[i] == "--by-case":
            opts["by_case"], i = True, i + 1
        else:
            sys.exit("leaderboard_summary.py: unknown argument %r\n%s" % (a[i], __doc__))
    return a[0], opts


def case_name(c):
    return ("realistic/" if "/realistic/" in (c.get("snippet") or "") else "") + c["name"]


def cells(doc, opts):
    """(case, mode label, run figures) for every cell kept."""
    for r in doc["runs"]:
        o = r.get("oracle")
        if not o:
            continue
        h = o["header"]
        if opts["rate"] is not None and float(h["rate_khz"]) != opts["rate"]:
            continue
        for c in o["cases"]:
            name = case_name(c)
            real = name.startswith("realistic/")
            if (opts["cases"] == "realistic" and not real) or (opts["cases"] == "snippets" and real):
                continue
            for m in c["modes"]:
                if m["mode"] == "bpf-timer":
                    continue
                label = m["mode"] + (" (ref)" if m.get("reference") else "")
                for x in m["runs"]:
                    yield name, label, x


def fmt(vals, spec, worst=max):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return (spec + " (" + spec + ")") % (statistics.median(vals), worst(vals))


def row(label, xs):
    ref = label.endswith("(ref)")
    us = [x.get("us_target") for x in xs if x.get("us_target")]
    return "| `%s` | %d | %d | %s | %s | %s | %s |" % (
        label, len(xs), sum(x["samples"] or 0 for x in xs),
        fmt([x["errors_pct"] for x in xs], "%.2f"),
        fmt([x["impossible_pct"] for x in xs], "%.2f"),
        "ref" if ref else fmt([x["tvd_excess"] for x in xs], "%.3f"),
        "%.1f" % statistics.median(us) if us else "-")


def main():
    path, opts = args()
    doc = json.load(open(path))
    groups = {}
    for name, label, x in cells(doc, opts):
        key = (name, label) if opts["by_case"] else (label,)
        groups.setdefault(key, []).append(x)
    head = ("| case " if opts["by_case"] else "") + \
        "| mode | cells | samples | errors% | impossible% | tvd_excess | µs_target |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    order = ["bpf", "bpf-wall", "live", "ptrace", "ptrace-low", "bpf-async", "ptrace-async"]

    def rank(k):
        mode = k[-1].split(" ")[0]
        return (k[0] if opts["by_case"] else "", 0 if k[-1].endswith("(ref)") else 1,
                order.index(mode) if mode in order else len(order), k[-1])
    for key in sorted(groups, key=rank):
        r = row(key[-1], groups[key])
        print(("| %s " % key[0] if opts["by_case"] else "") + r)


if __name__ == "__main__":
    main()
