#!/usr/bin/env python3
"""Generate bpfpy(1) and bpfpy-COMMAND(1) from the same source as --help.

  scripts/gen_man.py BPFPY OUTDIR [DOCSDIR]
  scripts/gen_man.py --docs BPFPY [DOCSDIR]   the docs pages' options tables

The options, their arguments and help text, the notes after them and the
examples come from `BPFPY COMMAND --help` (argp, run unwrapped with
ARGP_HELP_FMT=rmargin=...), so a man page cannot say what --help does not;
the DESCRIPTION adds the opening paragraph of docs/COMMAND.md, the page the
man page points to for the rest. `make man` runs it; the pages are written
to OUTDIR/bpfpy.1 and OUTDIR/bpfpy-COMMAND.1.

The argp parser below is also what tests/integration/test_docs.sh and
contrib/bpfpy.bash's generator rely on having a fixed shape: an option line
starts with spaces and `-X, --long[=ARG]` or `--long[=ARG]`, its text after
two or more spaces; a group heading is ` Name:`.
"""
import os
import re
import subprocess
import sys

# Wide enough that argp never wraps: one option, one note, one line.
HELP_ENV = {"ARGP_HELP_FMT": "rmargin=4000", "LC_ALL": "C.UTF-8"}

OPT_RE = re.compile(r"^ {2,}(-[^ ,=]|--[A-Za-z0-9])")


def run_help(bpfpy, *args):
    env = dict(os.environ)
    env.update(HELP_ENV)
    env.pop("COLUMNS", None)
    out = subprocess.run(
        [bpfpy, *args, "--help"], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout


def split_spec(spec):
    """'-d, --duration=SECONDS' -> (['-d', '--duration'], 'SECONDS')."""
    names, arg = [], None
    for part in [p.strip() for p in re.split(r",\s+(?=-)", spec)]:
        if not part:
            continue
        name, _, a = part.partition("=")
        if " " in name:  # '-o FILE' style (not argp's, but be lenient)
            name, a = name.split(" ", 1)
        names.append(name)
        if a:
            arg = a
    return names, arg


def parse_command_help(text):
    """Parse one command's argp --help into its parts."""
    lines = text.rstrip("\n").split("\n")
    h = {"usage": "", "doc": [], "groups": [], "notes": [], "examples": [], "exit": ""}
    i = 0
    if lines and lines[0].startswith("Usage: "):
        h["usage"] = lines[0][len("Usage: "):]
        i = 1
    while i < len(lines) and lines[i].strip():
        h["doc"].append(lines[i].strip())
        i += 1
    group = {"title": None, "options": []}
    h["groups"].append(group)
    pending = None
    for i in range(i, len(lines)):
        line = lines[i]
        if line.startswith("Mandatory or optional arguments"):
            i += 1
            break
        if not line.strip():
            continue
        if OPT_RE.match(line):
            spec, _, desc = line.strip().partition("  ")
            names, arg = split_spec(spec)
            pending = {"names": names, "arg": arg, "desc": desc.strip()}
            group["options"].append(pending)
        elif re.match(r"^ \S.*:$", line):
            group = {"title": line.strip().rstrip(":"), "options": []}
            h["groups"].append(group)
            pending = None
        elif pending is not None and line.startswith("   "):
            # A long option spec pushes its text onto the next line.
            pending["desc"] = (pending["desc"] + " " + line.strip()).strip()
        else:
            break
    else:
        i = len(lines)
    section = "notes"
    for line in lines[i:]:
        if line.startswith("EXAMPLES:"):
            section = "examples"
            continue
        if line.startswith("Exit codes:"):
            h["exit"] = line[len("Exit codes:"):].strip()
            continue
        if not line.strip():
            continue
        h[section].append(line.strip() if section == "notes" else line.strip())
    h["groups"] = [g for g in h["groups"] if g["options"]]
    return h


def long_options(h):
    """Every long option the help lists, '--name' without its argument."""
    return [n for g in h["groups"] for o in g["options"] for n in o["names"] if n.startswith("--")]


def parse_top_help(text):
    cmds, exit_line, in_cmds = [], "", False
    for line in text.split("\n"):
        if line.startswith("Commands:"):
            in_cmds = True
            continue
        if in_cmds:
            m = re.match(r"^  (\S+)\s+(.*)$", line)
            if m:
                cmds.append((m.group(1), m.group(2)))
                continue
            in_cmds = False
        if line.startswith("Exit codes:"):
            exit_line = line[len("Exit codes:"):].strip()
    return cmds, exit_line


# --- roff -----------------------------------------------------------------


def esc(s):
    """Plain text to roff: backslashes, dashes of options, non-ASCII as \\[uXXXX]."""
    s = s.replace("\\", "\\e")
    out = []
    for ch in s:
        if ch == "-":
            out.append("\\-")
        elif ord(ch) > 127:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    s = "".join(out)
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def md_inline(s):
    """The opening paragraph of a docs page: code bold, links as their text."""
    s = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", s)
    parts = re.split(r"(`[^`]+`|\*\*[^*]+\*\*)", s)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) > 1:
            out.append("\\fB" + esc(p[1:-1]) + "\\fR")
        elif p.startswith("**") and p.endswith("**") and len(p) > 3:
            out.append("\\fB" + esc(p[2:-2]) + "\\fR")
        else:
            out.append(esc(p))
    s = "".join(out)
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


# Commands documented on another command's page.
DOC_PAGE = {"diff": "convert"}


def docs_intro(docsdir, cmd):
    """First prose paragraph of docs/CMD.md (after the title and the
    navigation line; code skipped)."""
    path = os.path.join(docsdir, DOC_PAGE.get(cmd, cmd) + ".md")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    paras, cur, in_code = [], [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.startswith("#") or line.startswith("|"):
            if cur:
                paras.append(" ".join(cur))
                cur = []
            continue
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    paras = [p for p in paras if not p.startswith("[\u2190 README]")]
    return paras[0] if paras else None


def exit_items(exit_line):
    """'0 ok, 1 failure, 2 bad usage, ...' -> [('0', 'ok'), ...]."""
    items = re.split(r",\s+(?=\d+ )", exit_line.rstrip("."))
    out = []
    for it in items:
        code, _, what = it.partition(" ")
        out.append((code, what))
    return out


# What a terminal without UTF-8 (man -Tascii) shows for the characters the
# help uses; .fchar only applies where the device has no glyph.
ASCII = {"µ": "u", "×": "x", "÷": "/", "±": "+-", "·": ".", "²": "2", "Δ": "D", "α": "a",
         "–": "-", "—": "--", "…": "...", "₁": "1", "₋": "-", "←": "<-", "→": "->",
         "↔": "<->", "−": "-", "√": "sqrt", "≈": "~", "≤": "<=", "≥": ">=", "✓": "+",
         "✗": "x"}


def fallbacks(text):
    import unicodedata

    out = []
    for cp in sorted(set(int(m, 16) for m in re.findall(r"\\\[u([0-9A-F]{4})\]", text))):
        ch = chr(cp)
        asc = ASCII.get(ch)
        if asc is None:
            asc = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?"
        out.append(".fchar \\[u%04X] %s" % (cp, asc))
    return out


def th(name, date, version):
    return [
        '.\\" Generated by scripts/gen_man.py from `bpfpy --help`; do not edit.',
        '.TH %s 1 "%s" "%s" "bpfpy manual"' % (name.upper(), date, version),
    ]


def finish(L):
    """Join a page, with ASCII fallbacks for its non-ASCII glyphs after .TH."""
    text = "\n".join(L) + "\n"
    fb = fallbacks(text)
    return "\n".join(L[:2] + fb + L[2:]) + "\n"


def opt_lines(o):
    names = ", ".join("\\fB%s\\fR" % esc(n) for n in o["names"])
    if o["arg"]:
        long_ = any(n.startswith("--") for n in o["names"])
        names += ("=" if long_ else " ") + "\\fI%s\\fR" % esc(o["arg"])
    return [".TP", names, esc(o["desc"]) if o["desc"] else "\\&"]


def command_page(cmd, summary, h, intro, date, version, others):
    name = "bpfpy-" + cmd
    L = th(name, date, version)
    L += [".SH NAME", "%s \\- %s" % (esc(name), esc(summary))]
    usage = h["usage"] or "bpfpy %s [OPTION...]" % cmd
    L += [".SH SYNOPSIS", ".B " + esc(usage.split(" ")[0]), esc(" ".join(usage.split(" ")[1:]))]
    L += [".SH DESCRIPTION"]
    L += [esc(" ".join(h["doc"]))]
    if intro:
        L += [".PP", md_inline(intro)]
    L += [".PP", "The full manual of this command is \\fBdocs/%s.md\\fR (installed in" % DOC_PAGE.get(cmd, cmd),
          "\\fI/usr/local/share/doc/bpfpy/\\fR under the default prefix)."]
    L += [".SH OPTIONS"]
    for g in h["groups"]:
        if g["title"]:
            L += [".SS " + esc(g["title"])]
        for o in g["options"]:
            L += opt_lines(o)
    if h["notes"]:
        L += [".SH NOTES"]
        for n in h["notes"]:
            m = re.match(r"^([A-Z][A-Z ]+[A-Z])\. (.*)$", n)
            if m:
                L += [".PP", "\\fB%s.\\fR %s" % (esc(m.group(1)), esc(m.group(2)))]
            else:
                L += [".PP", esc(n)]
    if h["examples"]:
        L += [".SH EXAMPLES", ".nf", ".RS 4"]
        L += [esc(e) for e in h["examples"]]
        L += [".RE", ".fi"]
    if h["exit"]:
        L += [".SH EXIT STATUS"]
        for code, what in exit_items(h["exit"]):
            L += [".TP", ".B " + code, esc(what)]
    L += [".SH SEE ALSO"]
    refs = ["\\fBbpfpy\\fR(1)"] + ["\\fBbpfpy\\-%s\\fR(1)" % o for o in others if o != cmd]
    L += [",\n".join(refs)]
    return finish(L)


def main_page(cmds, exit_line, intro, date, version):
    L = th("bpfpy", date, version)
    L += [".SH NAME", "bpfpy \\- an eBPF sampler of CPython stacks, and an oracle of samplers' truth"]
    L += [".SH SYNOPSIS", ".B bpfpy", "\\fICOMMAND\\fR [\\fIOPTION\\fR...]", ".br",
          ".B bpfpy", "\\fICOMMAND\\fR \\fB\\-\\-help\\fR", ".br", ".B bpfpy \\-\\-version"]
    L += [".SH DESCRIPTION"]
    if intro:
        L += [md_inline(intro), ".PP"]
    L += ["Each command has its own page, \\fBbpfpy\\-\\fR\\fICOMMAND\\fR(1), and its",
          "manual in \\fBdocs/\\fR\\fICOMMAND\\fR\\fB.md\\fR."]
    L += [".SH COMMANDS"]
    for c, s in cmds:
        L += [".TP", "\\fB%s\\fR" % esc(c), "%s; see \\fBbpfpy\\-%s\\fR(1)." % (esc(s), esc(c))]
    L += [".SH OPTIONS", ".TP", "\\fB\\-\\-help\\fR", "The commands; \\fBbpfpy\\fR \\fICOMMAND\\fR "
          "\\fB\\-\\-help\\fR describes each.", ".TP", "\\fB\\-V\\fR, \\fB\\-\\-version\\fR",
          "Print the version."]
    if exit_line:
        L += [".SH EXIT STATUS"]
        for code, what in exit_items(exit_line):
            L += [".TP", ".B " + code, esc(what)]
    L += [".SH SEE ALSO", ",\n".join("\\fBbpfpy\\-%s\\fR(1)" % c for c, _ in cmds)]
    return finish(L)


def page_date():
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        try:
            epoch = subprocess.run(["git", "log", "-1", "--format=%ct"], capture_output=True,
                                   text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            epoch = ""
    import time

    t = int(epoch) if epoch.isdigit() else int(time.time())
    return time.strftime("%Y-%m-%d", time.gmtime(t))


# --- the options tables of the docs pages --------------------------------

OPT_BEGIN = "<!-- bpfpy-options %s: generated from `bpfpy %s --help` by scripts/gen_man.py --docs; do not edit -->"
OPT_END = "<!-- /bpfpy-options -->"


def md_cell(s):
    return s.replace("|", "\\|")


def options_md(cmd, h):
    """The options of one command as a markdown table, between markers."""
    L = [OPT_BEGIN % (cmd, cmd), ""]
    for g in h["groups"]:
        if g["title"]:
            L += ["**%s**" % g["title"], ""]
        L += ["| option | what it does |", "|---|---|"]
        for o in g["options"]:
            spec = ", ".join("`%s%s`" % (n, ("=" + o["arg"]) if o["arg"] and n.startswith("--")
                                         else (" " + o["arg"]) if o["arg"] else "")
                             for n in o["names"])
            L.append("| %s | %s |" % (md_cell(spec), md_cell(o["desc"])))
        L.append("")
    L.append(OPT_END)
    return "\n".join(L)


def update_docs(bpfpy, docsdir):
    """Write each command's options table into its docs page: in place of
    the old table, or at the end under an Options heading."""
    cmds, _ = parse_top_help(run_help(bpfpy))
    for c, _ in cmds:
        h = parse_command_help(run_help(bpfpy, c))
        path = os.path.join(docsdir, DOC_PAGE.get(c, c) + ".md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        block = options_md(c, h)
        begin = OPT_BEGIN % (c, c)
        if begin in text:
            a = text.index(begin)
            b = text.index(OPT_END, a) + len(OPT_END)
            text = text[:a] + block + text[b:]
        else:
            title = "Options" if c not in DOC_PAGE else "Options of bpfpy %s" % c
            text = text.rstrip("\n") + "\n\n## %s\n\n%s\n" % (title, block)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def main(argv):
    if len(argv) in (3, 4) and argv[1] == "--docs":
        return update_docs(argv[2], argv[3] if len(argv) == 4 else
                           os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs"))
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    bpfpy, outdir = argv[1], argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    docsdir = argv[3] if len(argv) == 4 else os.path.join(root, "docs")
    version = subprocess.run([bpfpy, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    cmds, exit_line = parse_top_help(run_help(bpfpy))
    if not cmds:
        sys.stderr.write("gen_man: no commands in `%s --help`\n" % bpfpy)
        return 1
    date = page_date()
    os.makedirs(outdir, exist_ok=True)
    names = [c for c, _ in cmds]
    readme_intro = docs_intro(root, "README")
    pages = {"bpfpy.1": main_page(cmds, exit_line, readme_intro, date, version)}
    for c, summary in cmds:
        h = parse_command_help(run_help(bpfpy, c))
        pages["bpfpy-%s.1" % c] = command_page(c, summary, h, docs_intro(docsdir, c), date,
                                               version, names)
    for name, text in pages.items():
        with open(os.path.join(outdir, name), "w", encoding="ascii") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
