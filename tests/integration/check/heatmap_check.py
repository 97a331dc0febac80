"""test_heatmap.sh: what a heatmap page (-f heatmap) holds, read back.

  heatmap_check.py shares PAGE COLLAPSED [opcodes=1] [source=1]
      the page parses with balanced tags and loads nothing (no src=, no
      external href, a CSP); every line row's data-self/data-total and every
      file's equal what the collapsed output of the same recording gives
      (self: a stack's innermost Python frame's line; total: each line on
      the stack once), the shares printed are those over the stacks' sum,
      the body names the hottest line, with source=1 its text is shown,
      and with opcodes=1 it has opcodes and a specialized share;
  heatmap_check.py dom DOM
      Chromium's DOM after the page's script ran: the file shown is the one
      with the hottest line, that row is marked hot and was scrolled into
      view (data-hot-in-view=1), it has the largest self of all rows, and
      the other files are hidden;
  heatmap_check.py hostile PAGE [absent=TEXT ...] [present=TEXT ...]
      nothing in the page but what the writer made is markup: well-formed
      UTF-8, no control byte, one script, no tag from a target; every
      absent= text is not in it, every present= text is (as the browser
      shows it: unescaped), and no source line is longer than 1024 bytes.
"""
import re
import sys
from html import unescape
from html.parser import HTMLParser

from checklib import Report

VOID = {"meta", "br", "wbr", "img", "hr", "link", "input"}
FRAME = re.compile(r"^(.*) \((.*):(-?\d+)\)$")


class Page(HTMLParser):
    """Rows (file section id, attributes, cells' text), files, the body."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.external = [], [], []
        self.body, self.sections, self.rows, self.files = {}, {}, [], {}
        self.tags, self.scripts = {}, 0
        self.sec = None
        self.cell = None
        self.in_h2 = False
        self.codes = {}  # (section, line) -> source text

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k in ("src", "href"):
            v = a.get(k)
            if v is not None and (k == "src" or not v.startswith("#")):
                self.external.append((tag, k, v))
        if tag == "script":
            self.scripts += 1
        if tag == "body":
            self.body = a
        if tag == "section" and "file" in (a.get("class") or ""):
            self.sec = a["id"]
            self.sections[self.sec] = {"attrs": a, "name": ""}
        if tag == "h2" and self.sec:
            self.in_h2 = True
        if tag == "tr" and self.sec and a.get("id", "").startswith(self.sec + "-"):
            self.rows.append({"sec": self.sec, "a": a, "cells": {}})
        if tag == "tr" and "data-file" in a and not self.sec:
            self.files[a["data-file"]] = a
        if tag == "td" and self.rows and self.sec:
            self.cell = (a.get("class") or "")
            self.rows[-1]["cells"][self.cell] = ""
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        if tag == "h2":
            self.in_h2 = False
        if tag == "section":
            self.sec = None
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes %s" % (tag, self.stack[-1:] or "nothing"))
            return
        self.stack.pop()

    def handle_data(self, data):
        if self.in_h2 and self.sec:
            self.sections[self.sec]["name"] += data
        if self.cell is not None and self.rows:
            self.rows[-1]["cells"][self.cell] += data


def parse(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    return p


def from_collapsed(path):
    """{(file, line): [self, total]}, {file: [self, total]}, sum."""
    lines, files, total = {}, {}, 0
    for raw in open(path, encoding="utf-8"):
        stack, _, count = raw.rstrip("\n").rpartition(" ")
        n = int(count)
        total += n
        seen_l, seen_f, leaf = set(), set(), None
        for fr in stack.split(";"):
            m = FRAME.match(fr)
            if not m:
                continue  # a mark ([op ...], [gc], ...) or a native frame
            key = (m.group(2), int(m.group(3)))
            leaf = key
            if key not in seen_l:
                seen_l.add(key)
                lines.setdefault(key, [0, 0])[1] += n
            if key[0] not in seen_f:
                seen_f.add(key[0])
                files.setdefault(key[0], [0, 0])[1] += n
        if leaf:
            lines[leaf][0] += n
            files[leaf[0]][0] += n
    return lines, files, total


def share(v, of):
    return "%.2f%%" % (100.0 * v / of) if v and of else ""


def check_shares(r, page, collapsed, opcodes, source):
    p = parse(page)
    want_l, want_f, total = from_collapsed(collapsed)
    r.ok("parses") if not p.errors else r.bad("unbalanced tags: %s" % p.errors[:5])
    r.ok("loads nothing") if not p.external else r.bad("external refs: %s" % p.external[:5])
    text = open(page, encoding="utf-8").read()
    r.ok("CSP default-src 'none'") if "default-src 'none'" in text else r.bad("no CSP")
    names = {s: v["name"] for s, v in p.sections.items()}
    got_l, bad = {}, []
    for row in p.rows:
        a = row["a"]
        key = (names[row["sec"]], int(a["data-line"]))
        got = [int(a["data-self"]), int(a["data-total"])]
        if got != [0, 0]:
            got_l[key] = got
        want = want_l.get(key, [0, 0])
        if got != want:
            bad.append("%s:%d page %s collapsed %s" % (key + (got, want)))
        elif row["cells"].get("self", "") != share(got[0], total) or \
                row["cells"].get("total", "") != share(got[1], total):
            bad.append("%s:%d shares %r %r" % (key + (row["cells"].get("self"),
                                                      row["cells"].get("total"))))
    missing = [k for k in want_l if k not in got_l]
    if bad or missing:
        r.bad("rows differ from collapsed: %s; missing %s" % (bad[:5], missing[:5]))
    else:
        r.ok("%d sampled lines in %d files: self and total as collapsed says (%d samples)"
             % (len(got_l), len(names), total))
    by_name = {names[s]: p.files[s] for s in names if s in p.files}
    fbad = [f for f, v in want_f.items()
            if f not in by_name or [int(by_name[f]["data-self"]), int(by_name[f]["data-total"])] != v]
    r.ok("file list: self and total as collapsed says") if not fbad else r.bad("files differ: %s" % fbad[:5])
    order = [int(p.files["f%d" % i]["data-self"]) for i in range(len(p.files))]
    r.ok("file list sorted by samples") if order == sorted(order, reverse=True) else r.bad("file order %s" % order)
    hot = max(want_l.items(), key=lambda kv: kv[1][0])
    hf, hl = p.body.get("data-hot-file"), p.body.get("data-hot-line")
    if hf in names and (names[hf], int(hl)) in want_l and want_l[(names[hf], int(hl))][0] == hot[1][0]:
        r.ok("the page opens on %s:%s, %d samples self, the most" % (names[hf], hl, hot[1][0]))
    else:
        r.bad("opens on %s:%s, the hottest is %s" % (hf, hl, hot))
    row = next((x for x in p.rows if x["a"]["id"] == "%s-%s" % (hf, hl)), None)
    if source:
        code = row and row["cells"].get("code", "").strip()
        r.ok("hottest line's source: %r" % code[:60]) if code else r.bad("hottest line without source")
    if opcodes:
        if row and row["cells"].get("ops") and row["cells"].get("spec") and "data-ops" in row["a"]:
            r.ok("hottest line's opcodes: %s; specialized %s, columns %s"
                 % (row["cells"]["ops"][:80], row["cells"]["spec"], row["cells"].get("col") or "-"))
        else:
            r.bad("hottest line without opcodes: %s" % (row and row["cells"]))
        r.ok("opcodes said") if "Opcodes: none" not in text else r.bad("page says no opcodes")


def check_dom(r, dom):
    p = parse(dom)
    b = p.body
    hf, hl = b.get("data-hot-file"), b.get("data-hot-line")
    if b.get("data-shown") == hf and hf:
        r.ok("the hottest line's file %s is shown" % hf)
    else:
        r.bad("shown %s, hottest file %s" % (b.get("data-shown"), hf))
    hidden = [s for s, v in p.sections.items() if "hidden" not in v["attrs"] and s != hf]
    r.ok("the other files are hidden") if not hidden else r.bad("also shown: %s" % hidden[:5])
    hot = [x for x in p.rows if "hot" in (x["a"].get("class") or "").split()]
    if len(hot) == 1 and hot[0]["a"]["id"] == "%s-%s" % (hf, hl):
        r.ok("row %s is marked hot" % hot[0]["a"]["id"])
    else:
        r.bad("hot rows: %s" % [x["a"]["id"] for x in hot])
    r.ok("and scrolled into view") if b.get("data-hot-in-view") == "1" else \
        r.bad("hot row not in view: %s" % b.get("data-hot-in-view"))
    most = max(int(x["a"]["data-self"]) for x in p.rows)
    if hot and int(hot[0]["a"]["data-self"]) == most:
        r.ok("its self (%d) is the largest of the %d rows" % (most, len(p.rows)))
    else:
        r.bad("hot row self %s, largest %d" % (hot and hot[0]["a"]["data-self"], most))


def check_hostile(r, page, args):
    raw = open(page, "rb").read()
    try:
        text = raw.decode("utf-8")
        r.ok("well-formed UTF-8")
    except UnicodeDecodeError as e:
        r.bad("not UTF-8: %s" % e)
        text = raw.decode("utf-8", "replace")
    ctl = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]
    r.ok("no control character") if not ctl else r.bad("controls: %r" % ctl[:10])
    p = parse(page)
    r.ok("parses") if not p.errors else r.bad("unbalanced tags: %s" % p.errors[:5])
    extra = {t: n for t, n in p.tags.items() if t in ("img", "iframe", "object", "embed", "b")}
    if p.scripts == 1 and not extra and not p.external:
        r.ok("one script (the page's), no target-made tag, nothing loaded")
    else:
        r.bad("scripts %d, tags %s, external %s" % (p.scripts, extra, p.external[:3]))
    plain = unescape(re.sub(r"<[^>]*>", "", text))
    for a in args:
        kind, _, t = a.partition("=")
        if kind == "absent":
            r.ok("absent: %r" % t[:40]) if t not in text and t not in plain else r.bad("present: %r" % t[:60])
        elif kind == "present":
            r.ok("shown: %r" % t[:60]) if t in plain else r.bad("not shown: %r" % t[:60])
    longest = max((len(row["cells"].get("code", "").encode()) for row in p.rows), default=0)
    r.ok("longest source line shown: %d bytes" % longest) if longest <= 1024 else \
        r.bad("a source line of %d bytes" % longest)


def main():
    what, path = sys.argv[1], sys.argv[2]
    r = Report("heatmap " + what)
    if what == "shares":
        check_shares(r, path, sys.argv[3], "opcodes=1" in sys.argv[4:], "source=1" in sys.argv[4:])
    elif what == "dom":
        check_dom(r, path)
    else:
        check_hostile(r, path, sys.argv[3:])
    r.done()


main()
