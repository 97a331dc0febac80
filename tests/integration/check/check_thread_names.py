"""Threading names in bpfpy's outputs, for test_thread_names.sh.

usage: check_thread_names.py MODE READY FILE [label=L] [ns=DUMP.json]
  MODE  dump (text), json (dump --json), folded (record --threads), pprof
        (go tool pprof -raw of record's profile), chrome (record -f chrome)
  READY the target's "ready {name: native_id}" line (py/thread_names.py)
  ns    the target runs in its own PID namespace: its native ids are ns
        tids, turned into host tids by the ns_tid/tid pairs of that dump
        --json (for json itself, threads are matched by ns_tid)

Every long name must be shown for its own thread (by tid), in full; the
hostile one (it starts with "evil") escaped where the format is text, cut
to bpfpy's 128-byte cap with an ellipsis, and never forging a line.
"""
import json
import re
import sys

from checklib import Report, kv

CAP = 128  # PY_TNAME_CAP, NUL included
ELL = "\u2026"
# text_escape of the hostile name's head (pystr_read makes the lone
# surrogate U+FFFD), and its folded form (';' -> ':').
HEAD = ("evil\\x0aThread 1 (GIL held):\\x0a    forged (x.py:1)\\x0a;pid:1;tid:2 (x);"
        "\"quo'te\\\\xff\ufffd\\x1b[2JAAAA")
HEAD_FOLDED = HEAD.replace(";", ":")
RAW_HEAD = "evil\nThread 1 (GIL held):\n    forged (x.py:1)\n;pid:1;tid:2 (x);\"quo'te\\xff\ufffd\x1b[2JAAAA"


def main():
    mode, ready, path = sys.argv[1:4]
    args = kv(sys.argv[4:])
    r = Report("%s %s" % (args.get("label", "?"), mode))
    line = open(ready, encoding="utf-8", errors="surrogateescape").readline()
    names = json.loads(line.split(" ", 1)[1])  # name -> native id
    if "ns" in args:
        threads = json.load(open(args["ns"]))["threads"]
        host = {t["ns_tid"]: t["tid"] for t in threads if t.get("ns_tid")}
        if len(host) < len(names):
            r.bad("dump --json gives %d ns tids for %d threads: %r" % (len(host), len(names), host))
        if mode != "json":  # json matches by the id the target knows, ns_tid
            names = {n: host.get(t, -1) for n, t in names.items()}
    by_tid = {tid: n for n, tid in names.items()}
    hostile = next(n for n in names if n.startswith("evil"))
    workers = [n for n in names if "worker" in n or "gamma" in n or n == hostile]
    data = open(path, "rb").read()
    text = data.decode("utf-8", errors="replace")
    if mode in ("dump", "folded"):
        ctl = re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]", data)
        if ctl:
            r.bad("raw control bytes in the output: %r" % ctl[:5])
        else:
            r.ok("no raw control byte")
    if mode == "dump":
        check_dump(r, text, names, hostile)
    elif mode == "json":
        check_json(r, json.loads(text), names, hostile, "ns_tid" if "ns" in args else "tid")
    elif mode == "folded":
        check_folded(r, text, names, hostile, workers)
    elif mode == "pprof":
        check_pprof(r, text, names, hostile, workers)
    elif mode == "chrome":
        check_chrome(r, json.loads(text), names, hostile, workers)
    r.done()


def bounded(r, what, shown, head, limit):
    if not shown.startswith(head):
        r.bad("%s: hostile name shown as %r" % (what, shown[:200]))
    elif not shown.endswith(ELL):
        r.bad("%s: hostile name not cut with an ellipsis: ...%r" % (what, shown[-40:]))
    elif len(shown.encode()) > limit:
        r.bad("%s: hostile name %d bytes long, more than %d" % (what, len(shown.encode()), limit))
    else:
        r.ok("%s: hostile name escaped and cut (%d bytes shown)" % (what, len(shown.encode())))


def check_dump(r, text, names, hostile):
    threads = {}  # tid -> {"name": .., "comm": ..}
    cur = None
    for ln in text.split("\n"):
        m = re.match(r"^Thread (\d+)", ln)
        if m:
            cur = threads.setdefault(int(m.group(1)), {})
        elif ln.startswith("Thread ") or ln.startswith("Thread\t"):
            cur = None
        m = re.match(r"^  (name|comm): (.*)$", ln)
        if m and cur is not None:
            cur[m.group(1)] = m.group(2)
        if ln.startswith("Thread 1 (GIL") or ln.startswith("    forged"):
            r.bad("a forged line: %r" % ln)
    for n, tid in names.items():
        t = threads.get(tid)
        if t is None:
            r.bad("no thread %d (%s) in the dump" % (tid, n[:30]))
            continue
        if n == hostile:
            bounded(r, "dump name", t.get("name", ""), HEAD, CAP * 4 + 8)
        elif t.get("name") == n:
            r.ok("thread %d named %s" % (tid, n))
        else:
            r.bad("thread %d: name %r, want %r" % (tid, t.get("name"), n))
        comm = t.get("comm")
        if comm and comm != t.get("name") and len(comm.encode()) <= 15 * 4:
            r.ok("thread %d keeps its OS name as comm: %s" % (tid, comm))
        else:
            r.bad("thread %d: comm line %r (want the OS name, not the Python one)" % (tid, comm))


def check_json(r, d, names, hostile, key):
    threads = {t[key]: t for t in d["threads"] if t.get(key)}
    for n, tid in names.items():
        t = threads.get(tid)
        if t is None:
            r.bad("no thread %d in the JSON" % tid)
            continue
        got = t.get("name") or ""
        if n == hostile:
            bounded(r, "json name", got, RAW_HEAD, CAP - 1)
        elif got == n:
            r.ok("thread %d named %s" % (tid, n))
        else:
            r.bad("thread %d: name %r, want %r" % (tid, got, n))
        if t.get("comm") and t["comm"] != got:
            r.ok("thread %d: comm %s" % (tid, t["comm"]))
        else:
            r.bad("thread %d: comm %r" % (tid, t.get("comm")))


def check_folded(r, text, names, hostile, workers):
    seen = {}
    for ln in text.split("\n"):
        if not ln:
            continue
        if not ln.startswith("pid:"):
            r.bad("a line that is no thread's stack: %r" % ln[:200])
            continue
        m = re.match(r"^pid:\d+;tid:(\d+) \((.*?)\);", ln)
        if not m:
            # The hostile name has ")" and ";" inside: match its tid alone.
            m = re.match(r"^pid:\d+;tid:(\d+) \((.*)\);", ln)
        if m:
            seen.setdefault(int(m.group(1)), m.group(2))
    churn_tids = {}
    for ln in text.split("\n"):
        m = re.match(r"^pid:\d+;tid:(\d+) \((.*?)\);.*;churn \(", ln)
        if m:
            churn_tids[int(m.group(1))] = m.group(2)
    # "?": a thread gone before its first sample was read (under load the
    # ring buffer lags): nothing of it, not even its OS name, was left to
    # read. Its OS name ("os-churn", or on 3.14+ the 15-byte cut): a thread
    # whose samples were read after it had left threading._active but
    # before the kernel dropped it, so only its OS name was left; at most a
    # fifth of them, or the reader is the fault. Any other name fails.
    good = [t for t, n in churn_tids.items() if n.startswith("churn-python-name-")]
    gone = [t for t, n in churn_tids.items()
            if n == "?" or n == "os-churn" or (len(n.encode()) <= 15 and "churn-python-name-".startswith(n))]
    if good and len(good) + len(gone) == len(churn_tids) and len(gone) * 5 <= len(churn_tids):
        r.ok("%d threads born while recording carry their threading names (%d gone before read)" % (
            len(good), len(gone)))
    else:
        r.bad("threads born while recording: %d of %d named churn-python-name-N; the others: %r" % (
            len(good), len(churn_tids),
            sorted((t, n) for t, n in churn_tids.items() if t not in good and t not in gone)[:5]))
    for n in workers:
        tid = names[n]
        if tid not in seen:
            r.bad("no --threads line for thread %d (%s)" % (tid, n[:30]))
        elif n == hostile:
            line = next(ln for ln in text.split("\n") if ln.startswith("pid:") and (";tid:%d " % tid) in ln)
            pre = line.split(" (", 1)[1]
            if not pre.startswith(HEAD_FOLDED):
                r.bad("hostile prefix %r" % pre[:200])
            elif ELL + ");" not in pre or len(pre.split(ELL + ");")[0].encode()) > CAP * 4:
                r.bad("hostile prefix not cut: %d bytes" % len(pre))
            else:
                r.ok("hostile name escaped, ';' folded, cut (%d bytes)" % len(pre.split(ELL + ");")[0].encode()))
        elif seen[tid] == n:
            r.ok("tid %d prefixed (%s)" % (tid, n))
        else:
            r.bad("tid %d prefixed (%s), want (%s)" % (tid, seen[tid], n))


def check_pprof(r, text, names, hostile, workers):
    got = {}
    for m in re.finditer(r"thread_name:\[(.*?)\]\n\s+pid:\[\d+\] tid:\[(\d+)\]", text, re.S):
        got.setdefault(int(m.group(2)), m.group(1))
    for n in workers:
        tid = names[n]
        if tid not in got:
            r.bad("no sample labelled tid %d (%s)" % (tid, n[:30]))
        elif n == hostile:
            bounded(r, "pprof thread_name", got[tid], RAW_HEAD, CAP - 1)
        elif got[tid] == n:
            r.ok("tid %d: thread_name %s" % (tid, n))
        else:
            r.bad("tid %d: thread_name %r, want %r" % (tid, got[tid], n))


def check_chrome(r, d, names, hostile, workers):
    meta = {e["tid"]: e["args"]["name"] for e in d["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for n in workers:
        tid = names[n]
        want = "%s (tid %d)" % (n, tid)
        got = meta.get(tid)
        if got is None:
            r.bad("no thread_name metadata for tid %d" % tid)
        elif n == hostile:
            if got.startswith(RAW_HEAD) and got.endswith(ELL + " (tid %d)" % tid):
                r.ok("hostile thread_name cut (%d bytes), JSON-escaped" % len(got.encode()))
            else:
                r.bad("hostile thread_name %r" % got[:200])
        elif got == want:
            r.ok("thread_name %s" % want)
        else:
            r.bad("thread_name %r, want %r" % (got, want))


main()
