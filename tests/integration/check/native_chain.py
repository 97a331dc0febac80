"""Native chains of BPFPY_NATIVE_RAW records, symbolized independently of
bpfpy: each address through a copy of the target's /proc/PID/maps, the
file's program headers (readelf -lW) and `addr2line -f` (binutils).

  native_chain.py raw=FILE maps=FILE what=LABEL [leaf_lib=SUBSTR]
                  [chain=SYM,SYM|SYM,...] [min_samples=N] [min_share=F]

A chain is complete when the record has neither NATIVE_LOST nor
NATIVE_TRUNCATED. Checked: at least min_samples records; at least min_share
of them complete, each with every address inside a mapped file and named
(no '??'), with the symbols of chain= in that order from leaf to root
(alternatives split by '|'), and the leaf in a file whose path contains
one of leaf_lib's comma-separated parts (where the target is busy); no frame-pointer fallback
(NATIVE_FP_FALLBACK) in complete chains, or with fp=expect, the flag on
them (a file built without CFI). Prints stat: lines with the counts."""
import collections
import subprocess
import sys

from checklib import Report, kv

NATIVE_TRUNCATED, NATIVE_FP_FALLBACK, NATIVE_LOST = 1, 2, 4


def read_maps(path):
    maps = []
    for line in open(path):
        f = line.split(None, 5)
        if len(f) < 6 or "x" not in f[1] or not f[5].startswith("/"):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, int(f[2], 16), f[5].strip().replace(" (deleted)", "")))
    return maps


def loads(path, cache={}):
    """PT_LOADs (offset, vaddr, filesz) of the file, from readelf."""
    if path not in cache:
        segs = []
        out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
        cache[path] = segs
    return cache[path]


def file_vaddr(maps, ip):
    for lo, hi, off, path in maps:
        if lo <= ip < hi:
            foff = ip - lo + off
            for soff, svaddr, sz in loads(path):
                if soff <= foff < soff + sz:
                    return path, svaddr + foff - soff
            return path, None
    return None, None


def symbolize(wanted):
    """{(path, vaddr): names} through one addr2line per file: the function
    and, with debug info, the functions inlined at that address (-i), so
    that a call site inside an inlined helper still names its caller."""
    names = {}
    byfile = collections.defaultdict(set)
    for path, va in wanted:
        byfile[path].add(va)
    for path, vas in byfile.items():
        out = subprocess.run(["addr2line", "-f", "-i", "-a", "-e", path] +
                             ["%x" % v for v in sorted(vas)],
                             capture_output=True, text=True).stdout.splitlines()
        cur = None
        for i, line in enumerate(out):
            if line.startswith("0x"):
                cur = (path, int(line, 16))
                names[cur] = []
            elif cur and (i - out.index("0x%016x" % cur[1])) % 2 == 1:
                names[cur].append(line)
    return names


def main():
    a = kv(sys.argv[1:])
    r = Report(a.get("what", "native"))
    maps = read_maps(a["maps"])
    chain = [set(x.split("|")) for x in a.get("chain", "").split(",") if x]
    leaf_lib = a.get("leaf_lib", "")
    min_samples = int(a.get("min_samples", "20"))
    min_share = float(a.get("min_share", "0.8"))

    recs = []
    for line in open(a["raw"]):
        if not line.startswith("S "):
            continue
        head, nat, _ = line.split("|")
        h = head.split()
        recs.append((int(h[6], 16), [int(x, 16) for x in nat.split()]))
    # a return address names its call: look up ip - 1 for all but the leaf
    wanted, where = set(), {}
    for _, ips in recs:
        for i, ip in enumerate(ips):
            key = ip - (1 if i else 0)
            if key not in where:
                where[key] = file_vaddr(maps, key)
            if where[key][1] is not None:
                wanted.add(where[key])
    names = symbolize(wanted)

    def name(i, ip):
        path, va = where[ip - (1 if i else 0)]
        return names.get((path, va)) or ["??"] if va is not None else ["?nomap"]

    complete, good, fp, leaf_ok, causes = 0, 0, 0, 0, collections.Counter()
    first_bad = None
    for flags, ips in recs:
        if flags & (NATIVE_LOST | NATIVE_TRUNCATED):
            causes["lost cause %d" % (flags >> 8 & 0xff) if flags & NATIVE_LOST
                   else "truncated"] += 1
            continue
        complete += 1
        if flags & NATIVE_FP_FALLBACK:
            fp += 1
        syms = [name(i, ip) for i, ip in enumerate(ips)]
        k = 0
        for s in syms:
            while k < len(chain) and chain[k] & set(s):
                k += 1
        leaf_path = where[ips[0]][0] if ips else None
        in_lib = bool(leaf_path and any(x in leaf_path for x in leaf_lib.split(",")))
        leaf_ok += in_lib
        flat = [n for s in syms for n in s]
        if k == len(chain) and "??" not in flat and "?nomap" not in flat:
            good += 1
        elif first_bad is None:
            first_bad = ["/".join(s) for s in syms]
    n = len(recs)
    print("stat: %s: %d records, %d complete, %d with the whole chain, %d with the leaf in %s, "
          "%d frame-pointer fallback; incomplete: %s"
          % (r.what, n, complete, good, leaf_ok, leaf_lib or "-", fp, dict(causes) or "none"))
    if first_bad:
        print("stat: first chain that missed: %s" % " <- ".join(first_bad))
    if n < min_samples:
        r.bad("%d records, want >= %d" % (n, min_samples))
        return r.done()
    if good >= min_share * n:
        r.ok("%d of %d native chains complete from the leaf to %s" % (good, n, "/".join(sorted(chain[-1])) if chain else "the end"))
    else:
        r.bad("%d of %d native chains complete with %s (want >= %.0f%%)"
              % (good, n, " -> ".join("|".join(sorted(c)) for c in chain), 100 * min_share))
    if leaf_lib:
        if leaf_ok >= min_share * complete:
            r.ok("%d of %d complete chains start in %s" % (leaf_ok, complete, leaf_lib))
        else:
            r.bad("only %d of %d complete chains start in %s" % (leaf_ok, complete, leaf_lib))
    if a.get("fp") == "expect":
        if complete and fp >= min_share * complete:
            r.ok("%d of %d complete chains flagged NATIVE_FP_FALLBACK (a file without CFI)"
                 % (fp, complete))
        else:
            r.bad("only %d of %d complete chains flagged NATIVE_FP_FALLBACK" % (fp, complete))
    elif fp:
        r.bad("%d complete chains used the frame-pointer fallback (every file here has CFI)" % fp)
    else:
        r.ok("no frame-pointer fallback: every frame from CFI")
    return r.done()


if __name__ == "__main__":
    main()
