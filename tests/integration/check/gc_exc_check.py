# The checker of tests/integration/test_gc_exception.sh: the collapsed
# recordings of py/gc_exc.py against what the program measured.
#   gc_exc_check.py label=L mode=gc|nogc|exception folded=F
#       measured="gc_share G handled_share H deep_share D"
#       [summary="IN_FLIGHT HANDLED NONE"]   (exception: the summary's counts)
# gc: the share of samples under [gc] within the tolerance below of the
#     measured share of collection time; every [gc] frame the leaf, on a
#     stack of the program's own frames;
# nogc: no [gc] frame, where the measured share says there would be some;
# exception: every sample's leaf an [exception TYPE] mark (or [gc] right
#     over one); KeyError ones inside handled(), ValueError ones inside
#     deep() or main(); no sample inside churn() (no exception there); both
#     types seen; samples in flight > 0 and no more than the deep phase
#     allows; the KeyError samples' share of all ticks (sampled or not)
#     within the tolerance of the measured share of handled()'s except block.
# Prints ok:/FAIL: lines; exit status = failures.
import math
import sys

from checklib import Report, kv

# Tolerance of a share measured both ways, in points: the sampled share of
# n samples has a binomial standard deviation sqrt(p(1-p)/n) (about 1.3
# points at p = 0.3, n = 1200, what the test's 1.2 s of CPU at 1 kHz get);
# SIGMAS of it, plus SYSTEMATIC for what the program's clock cannot see:
# the gc.callbacks run inside the collection (a [gc] sample, but partly
# outside the measured time), the work around the measured blocks. Both
# shares are of CPU time, so a machine that takes the CPU away from the
# program does not bias them.
SIGMAS = 3.0
SYSTEMATIC = 0.03
MIN_SAMPLES = 50


def tolerance(p, n):
    return SYSTEMATIC + SIGMAS * math.sqrt(max(p * (1 - p), 0.01) / max(n, 1))


args = kv(sys.argv[1:])
report = Report("%s %s" % (args["label"], args["mode"]))
ok, bad = report.ok, report.bad
words = args["measured"].split()
measured = dict(zip(words[0::2], map(float, words[1::2])))

stacks = []
for line in open(args["folded"], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line:
        continue
    stack, _, n = line.rpartition(" ")
    stacks.append((stack.split(";"), int(n)))  # root first
total = sum(n for _, n in stacks)
mode = args["mode"]
if total < MIN_SAMPLES and mode != "nogc":
    bad("only %d samples (want %d at least)" % (total, MIN_SAMPLES))


def names(frames):
    return [f.split(" (")[0] for f in frames]


def share_check(what, got, n, want):
    tol = tolerance(want, n)
    if abs(got - want) <= tol:
        ok("%s %.3f of %d, measured %.3f (within %.3f)" % (what, got, n, want, tol))
    else:
        bad("%s %.3f of %d, measured %.3f: off by more than %.3f" % (what, got, n, want, tol))


if mode == "gc":
    g = sum(n for fr, n in stacks if "[gc]" in fr)
    not_leaf = [fr for fr, n in stacks if "[gc]" in fr and fr[-1] != "[gc]"]
    # A collection while a thread or the interpreter ends (the final ones
    # of Py_Finalize, after the program's last frame) is over the thread's
    # phase, [thread exiting] (docs/record.md), never over nothing.
    orphan = [fr for fr, n in stacks if fr and fr[-1] == "[gc]" and
              not any("gc_exc.py" in f or f.startswith("[thread ") for f in fr)]
    share_check("[gc] share", g / total if total else 0, total, measured["gc_share"])
    if not_leaf:
        bad("[gc] not the leaf: %s" % ";".join(not_leaf[0]))
    if orphan:
        bad("[gc] over no frame of the program: %s" % ";".join(orphan[0]))
    if g == 0:
        bad("no [gc] frame at all")
elif mode == "nogc":
    g = sum(n for fr, n in stacks if "[gc]" in fr)
    expected = total * measured["gc_share"]
    if expected < 10:
        bad("--no-gc: %d samples at a measured collection share of %.3f: too few to tell" % (total, measured["gc_share"]))
    (ok if g == 0 else bad)("--no-gc: %d samples under [gc] of %d (%.0f without it)" % (g, total, expected))
else:
    kinds = {}
    for fr, n in stacks:
        marks = fr[-2:] if fr and fr[-1] == "[gc]" else fr[-1:]
        leaf = marks[0] if marks else ""
        if not leaf.startswith("[exception ") or not leaf.endswith("]"):
            bad("a sample whose leaf is no exception mark: %s" % ";".join(fr))
            continue
        typ = leaf[len("[exception "):-1]
        kinds[typ] = kinds.get(typ, 0) + n
        fn = names(fr[: -len(marks)])
        if "churn" in fn:
            bad("a sample inside churn(), where no exception is: %s" % ";".join(fr))
        if typ == "KeyError" and "handled" not in fn:
            bad("KeyError outside handled(): %s" % ";".join(fr))
        if typ == "ValueError" and "deep" not in fn and "main" not in fn:
            bad("ValueError outside deep() and main(): %s" % ";".join(fr))
        if typ not in ("KeyError", "ValueError"):
            bad("an exception the program never raises: %s" % typ)
    if kinds.get("KeyError", 0) and kinds.get("ValueError", 0):
        ok("samples by exception: %s" % ", ".join("%s %d" % kv_ for kv_ in sorted(kinds.items())))
    else:
        bad("samples by exception: %s (want KeyError and ValueError)" % kinds)
    flight, handled, none = map(int, args["summary"].split())
    ticks = flight + handled + none
    if flight + handled != total:
        bad("the summary's %d in flight + %d handled are not the %d samples" % (flight, handled, total))
    # In flight: only while deep(60)'s ValueError unwinds, a part of the
    # deep phase; more than the whole phase would be a misread.
    most = ticks * measured["deep_share"]
    most += tolerance(measured["deep_share"], ticks) * ticks
    if 0 < flight <= most:
        ok("%d samples in flight, at most the deep phase's %.0f of %d ticks" % (flight, most, ticks))
    else:
        bad("%d samples in flight: want more than 0 and at most %.0f (the deep phase) of %d ticks" % (flight, most, ticks))
    share_check("KeyError (handled) share of the ticks", kinds.get("KeyError", 0) / ticks if ticks else 0, ticks, measured["handled_share"])
report.done()
