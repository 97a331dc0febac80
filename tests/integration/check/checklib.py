"""What the checkers of tests/integration/check/ share: key=value arguments,
ok:/FAIL: lines in lib.sh's format (the exit status counts the failures),
and what a target program's source says of itself: its "# TAG:key" markers
and its functions (tests/integration/py/*.py mark the lines where the tests
expect frames with "# L:key")."""
import ast
import re
import sys


def kv(argv):
    """key=value arguments as a dict."""
    return dict(a.split("=", 1) for a in argv)


class Report:
    """ok:/FAIL: lines about WHAT; done() exits with the failure count."""

    def __init__(self, what):
        self.what = what
        self.fails = 0

    def ok(self, m):
        print("ok: %s: %s" % (self.what, m))

    def bad(self, m):
        self.fails += 1
        print("FAIL: %s: %s" % (self.what, m))

    def done(self):
        sys.exit(min(self.fails, 100))


class Source:
    """A Python program's text, its AST, its markers and its functions."""

    def __init__(self, path):
        self.text = open(path, encoding="utf-8").read()
        self.lines = self.text.split("\n")
        self.tree = ast.parse(self.text)

    def markers(self, tag):
        """{key: line} of every "# TAG:key" comment."""
        return markers(self.lines, tag)

    def funcs(self):
        """{name: (first line, last line)} of every def (not async def)."""
        return {n.name: (n.lineno, n.end_lineno) for n in ast.walk(self.tree)
                if isinstance(n, ast.FunctionDef)}


def markers(lines, tag):
    m = {}
    for i, l in enumerate(lines, 1):
        for k in re.findall(r"# %s:(\w+)" % tag, l):
            m[k] = i
    return m


def func_at(tree, line):
    """qualname and name of the innermost function around line."""
    best = ("<module>", "<module>")

    def walk(node, quals):
        nonlocal best
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if ch.lineno <= line <= ch.end_lineno:
                    best = (".".join(quals + [ch.name]), ch.name)
                    walk(ch, quals + [ch.name, "<locals>"])
            elif isinstance(ch, ast.ClassDef):
                if ch.lineno <= line <= ch.end_lineno:
                    walk(ch, quals + [ch.name])
            else:
                walk(ch, quals)
    walk(tree, [])
    return best


def raw_stack_counts(path):
    """{root-first stack as the folded file writes it (markers without their
    empty " (:0)" file): samples} of a raw file (user/profile/out_raw.c),
    with the profile's [truncated] root for SAMPLE_TRUNCATED stacks: the
    sample counts a weighted profile's folded file (ns) does not show."""
    n = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split(" ", 5)
        frames = [x[:-len(" (:0)")] if x.endswith(" (:0)") else x for x in f[5].split(";")]
        if int(f[4]) & 1:  # SAMPLE_TRUNCATED
            frames.append("[truncated]")
        s = ";".join(reversed(frames))
        n[s] = n.get(s, 0) + 1
    return n
