# The checker of tests/integration/test_docs.sh, the parts that read text:
#   docs_check.py options BPFPY DOCS MANDIR   every option of every command's
#       --help named on its docs page (docs/COMMAND.md; diff: convert.md) and
#       in its rendered man page (MANDIR/bpfpy-COMMAND.1, via man -l)
#   docs_check.py links ROOT                 every relative link of README.md
#       and docs/*.md names a file that exists
#   docs_check.py quickstart README          the quick start's commands (its
#       ```sh blocks), one a line, as the README shows them
# Prints ok:/FAIL: lines (options) or the commands (quickstart); exit status
# = failures.
import os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../scripts"))
import gen_man  # noqa: E402

from checklib import Report

DOC_PAGE = gen_man.DOC_PAGE


def options(bpfpy, docs, mandir):
    report = Report("docs")
    cmds, _ = gen_man.parse_top_help(gen_man.run_help(bpfpy))
    if len(cmds) < 8:
        report.bad("only %d commands in bpfpy --help" % len(cmds))
    for c, _ in cmds:
        h = gen_man.parse_command_help(gen_man.run_help(bpfpy, c))
        longs = [o for o in gen_man.long_options(h) if o not in ("--help", "--usage")]
        page = os.path.join(docs, DOC_PAGE.get(c, c) + ".md")
        text = open(page, encoding="utf-8").read()
        env = dict(os.environ, MANWIDTH="200", LC_ALL="C.UTF-8")
        man = subprocess.run(["man", "-l", os.path.join(mandir, "bpfpy-%s.1" % c)],
                             capture_output=True, text=True, env=env).stdout
        man = man.replace("\u2010", "-").replace("\u2212", "-")
        miss_doc = [o for o in longs if not re.search(re.escape(o) + r"(?![\w-])", text)]
        miss_man = [o for o in longs if not re.search(re.escape(o) + r"(?![\w-])", man)]
        if miss_doc:
            report.bad("%s: options of --help not on %s: %s" % (c, page, " ".join(miss_doc)))
        if miss_man:
            report.bad("%s: options of --help not in man bpfpy-%s: %s" % (c, c, " ".join(miss_man)))
        if not miss_doc and not miss_man:
            report.ok("%s: all %d options on its page and in its man page" % (c, len(longs)))
    report.done()


def quickstart(readme):
    lines = open(readme, encoding="utf-8").read().split("\n")
    try:
        start = lines.index("## Quick start")
    except ValueError:
        print("FAIL: no '## Quick start' section in %s" % readme)
        sys.exit(1)
    # Commands are the lines of its ```sh blocks; a bare ``` block is
    # output shown, not run.
    in_code = in_sh = False
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("```"):
            in_code = not in_code
            in_sh = in_code and line.strip() == "```sh"
            continue
        if in_sh and line.strip():
            print(line)


def links(root):
    """Every relative link of README.md and docs/*.md names a file that exists."""
    import glob
    report = Report("links")
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    n = 0
    for p in pages:
        d = os.path.dirname(p)
        for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", open(p, encoding="utf-8").read()):
            t = m.group(1)
            if re.match(r"^[a-z]+:", t):
                continue
            n += 1
            if not os.path.exists(os.path.join(d, t)):
                report.bad("%s: link to %s: no such file" % (os.path.relpath(p, root), t))
    report.ok("%d relative links in %d pages" % (n, len(pages)))
    report.done()


if sys.argv[1] == "options":
    options(*sys.argv[2:5])
elif sys.argv[1] == "links":
    links(sys.argv[2])
else:
    quickstart(sys.argv[2])
