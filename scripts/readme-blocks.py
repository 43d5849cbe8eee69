#!/usr/bin/python3
"""scripts/readme-blocks.py - the README's example outputs, generated from
the commands they show, so the README never lies.

Every fenced block of a Markdown file whose first line is a command
("$ herd ...", continued by lines ending in a backslash) is a tour block:
the script runs its commands (each "$ " line; the block's commands share
a folder, so one may read what an earlier one wrote) with the herd
binary given (the "herd" on PATH is that binary) and puts under each
command its output (stdout, then stderr without a sanitizer build's
"==PID==" notes; trailing blanks of each line and trailing empty lines
removed). Blocks without a "$ herd" first line are
left alone.

A block may deliberately show part of the output. An HTML comment on the
line just above its fence (GitHub does not render it) says which part,
and the script applies it, so every line shown is a line of real output:

  <!-- readme-block: head N -->    the first N lines, then "..." if more
  <!-- readme-block: grep REGEX --> the lines matching REGEX (Python re);
                                    each run of lines left out is "..."
  <!-- readme-block: drop REGEX --> the lines not matching REGEX; each
                                    run of lines left out is "..."
  <!-- readme-block: skip REASON --> not run (e.g. it needs other
                                    machines, or measures real time); the
                                    block keeps only its commands

Several comment lines apply in order, to each command of the block (a
"skip" block keeps its commands and shows no output). Commands run in a scratch folder
that links the repository's top-level files and folders (so relative
paths work and outputs such as out/ land in the scratch folder), with
LC_ALL=C and a timeout of 600 s each.

usage: readme-blocks.py --herd PATH [--check] [FILE.md ...]
  (default FILE: the repository's README.md)
  --check: change nothing; print a diff of each block whose output differs
  from the binary's and exit 1 if any does. Without it, rewrite the files.
Exit: 0 ok, 1 a block differs (--check) or a command timed out, 2 usage.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!--\s*readme-block:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)")
ELIDED = "..."
SANITIZER = re.compile(r"^==\d+==")


class BlockError(Exception):
    pass


def parse_blocks(lines):
    """Tour blocks as (marker rules, first line, end line, commands): the
    block's text is lines[first:end] (its fences lines[first-1] and
    lines[end]); each command is the list of its lines."""
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m.group(1), i + 1
        end = start
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if end == len(lines):
            raise BlockError("line %d: fence never closed" % (i + 1))
        if start < end and lines[start].startswith("$ herd"):
            commands, k = [], start
            while k < end:
                if not lines[k].startswith("$ "):
                    k += 1
                    continue
                cmd = [lines[k]]
                while cmd[-1].rstrip().endswith("\\"):
                    k += 1
                    if k >= end:
                        raise BlockError("line %d: command continues past "
                                         "the block" % (start + 1))
                    cmd.append(lines[k])
                commands.append(cmd)
                k += 1
            rules, k = [], i - 1
            while k >= 0 and MARKER.match(lines[k]):
                m2 = MARKER.match(lines[k])
                rules.insert(0, (m2.group(1), m2.group(2), k + 1))
                k -= 1
            blocks.append((rules, start, end, commands))
        i = end + 1
    return blocks


def elide(lines, keep):
    """Lines where keep is true; each run of the others becomes ELIDED."""
    out, gap = [], False
    for line, k in zip(lines, keep):
        if k:
            out.append(line)
            gap = False
        elif not gap:
            out.append(ELIDED)
            gap = True
    return out


def apply_rules(rules, lines):
    for kind, arg, where in rules:
        if kind == "head":
            if not arg.isdigit():
                raise BlockError("line %d: head needs a number" % where)
            n = int(arg)
            lines = lines[:n] + ([ELIDED] if len(lines) > n else [])
        elif kind in ("grep", "drop"):
            try:
                rx = re.compile(arg)
            except re.error as e:
                raise BlockError("line %d: bad regex: %s" % (where, e))
            hit = [bool(rx.search(l)) for l in lines]
            lines = elide(lines, hit if kind == "grep" else
                          [not h for h in hit])
        elif kind != "skip":
            raise BlockError("line %d: unknown rule '%s' (head, grep, drop, "
                             "skip)" % (where, kind))
    return lines


def scratch_dir(herd):
    """A folder linking the repository's entries, with herd on PATH."""
    d = tempfile.mkdtemp(prefix="herd-readme-")
    for name in os.listdir(REPO):
        if name.startswith((".", "build", "out", "sweep-out")):
            continue
        os.symlink(os.path.join(REPO, name), os.path.join(d, name))
    bindir = os.path.join(d, ".bin")
    os.mkdir(bindir)
    os.symlink(os.path.abspath(herd), os.path.join(bindir, "herd"))
    return d, bindir


def run(command, cwd, bindir):
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["LC_ALL"] = "C"
    env.pop("HERD_PROGRESS", None)
    try:
        p = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=600)
    except subprocess.TimeoutExpired:
        raise BlockError("timed out after 600 s: %s" % command)
    # a sanitizer build's notes ("==123==WARNING: ASan ...") are not the
    # command's output
    err = [l for l in p.stderr.decode("utf-8", "replace").split("\n")
           if not SANITIZER.match(l)]
    text = p.stdout.decode("utf-8", "replace") + "\n".join(err)
    lines = [l.rstrip() for l in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def process(path, herd, check):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = parse_blocks(lines)
    d, bindir = scratch_dir(herd)
    differ, out = 0, list(lines)
    try:
        # from the last block up, so earlier line numbers stay valid
        for rules, start, end, commands in reversed(blocks):
            skip = any(kind == "skip" for kind, _, _ in rules)
            new = []
            for cmd_lines in commands:
                new += cmd_lines
                if not skip:
                    command = "\n".join(cmd_lines)[2:]
                    new += apply_rules(rules, run(command, d, bindir))
            old = lines[start:end]
            if old != new:
                differ += 1
                sys.stdout.writelines(difflib.unified_diff(
                    [l + "\n" for l in old], [l + "\n" for l in new],
                    "%s:%d (in the file)" % (path, start + 1),
                    "%s:%d (from the binary)" % (path, start + 1)))
            out[start:end] = new
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if not check and differ:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
    print("%s: %d tour blocks, %d %s" % (
        path, len(blocks), differ,
        ("differ from the binary" if check else "rewritten")))
    return differ


def main():
    ap = argparse.ArgumentParser(
        description="Run the README's tour commands and write (or check) "
                    "their output blocks.")
    ap.add_argument("--herd", required=True, help="the herd binary")
    ap.add_argument("--check", action="store_true",
                    help="only compare; exit 1 when a block differs")
    ap.add_argument("files", nargs="*",
                    default=[os.path.join(REPO, "README.md")])
    a = ap.parse_args()
    if not os.access(a.herd, os.X_OK):
        ap.error("--herd %s: not an executable" % a.herd)
    try:
        differ = sum(process(p, a.herd, a.check) for p in a.files)
    except (BlockError, OSError) as e:
        print("readme-blocks: %s" % e, file=sys.stderr)
        return 1
    return 1 if a.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
