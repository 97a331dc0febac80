# test_oracle_html.sh: the oracle's --html page parses (balanced tags),
# refers to nothing outside itself, and holds the case, both modes, the table
# with the text table's columns (from the text output) and bars with a share.
# Prints what is wrong.
#   oracle_html.py PAGE.html TEXT_OUTPUT
import sys
from html.parser import HTMLParser

VOID = {"meta", "br", "wbr", "img", "hr", "link", "input"}
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags, self.classes = [], [], {}, set()
        self.ths, self.rows, self.in_th, self.external = [], 0, False, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.classes.update((a.get("class") or "").split())
        for k in ("src", "href"):
            v = a.get(k)
            if v is not None and (k == "src" or not v.startswith("#")):
                self.external.append((tag, k, v))
        if tag == "link":
            self.external.append((tag, "link", a))
        if tag == "th":
            self.in_th = True
            self.ths.append("")
        if tag not in VOID:
            self.stack.append(tag)
    def handle_endtag(self, tag):
        if tag == "th":
            self.in_th = False
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes %s" % (tag, self.stack[-1:] or "nothing"))
            return
        self.stack.pop()
    def handle_data(self, data):
        if self.in_th:
            self.ths[-1] += data

text = open(sys.argv[1], encoding="utf-8").read()
p = P()
p.feed(text)
p.close()
fail = 0
def check(cond, what):
    global fail
    if not cond:
        print("  " + what); fail = 1
check(not p.errors, "unbalanced tags: %s" % p.errors[:5])
check(not p.stack, "left open: %s" % p.stack)
check(not p.external, "external references: %s" % p.external[:5])
check("http://" not in text and "https://" not in text, "a URL in the page")
check(text.lstrip().lower().startswith("<!doctype html>"), "no doctype")
check("flat_alternating" in text, "no case name")
for m in ("ptrace", "bpf"):
    check(">%s" % m in text, "no mode %s" % m)
check(p.tags.get("table", 0) >= 2, "tables: %s" % p.tags.get("table", 0))
check({"bar", "track"} <= p.classes, "no bar elements: classes %s" % sorted(p.classes))
check("%</span>" in text, "no share in %")
# The figures table has the text table's columns, in order.
hdr = next(l for l in open(sys.argv[2], encoding="utf-8") if l.startswith("mode "))
cols = hdr.split()
check(p.ths[:len(cols)] == cols, "table columns %s != text %s" % (p.ths[:len(cols)], cols))
check("Impossible stacks" in text, "no impossible-stacks section")
sys.exit(fail)
