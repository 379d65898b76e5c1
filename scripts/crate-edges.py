"""Checks that ARCHITECTURE.md's table of crate edges is the workspace's: for every crate, the
workspace crates it depends on and the ones its tests also use, as the Cargo.toml files say.

    /usr/bin/python3 -m scripts.crate-edges

The table sits between `<!-- crate-edges -->` and `<!-- /crate-edges -->`, one row per crate:
`| crate | depends on | its tests also use |`, names comma-separated, `—` for none. Exits 1
naming every difference (a crate missing from the table or the workspace, an edge on one side
only); reads `cargo metadata --no-deps`, which builds nothing.
"""

import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "ARCHITECTURE.md")
BEGIN, END = "<!-- crate-edges -->", "<!-- /crate-edges -->"
NONE = "—"


def documented(text):
    """{crate: (normal deps, dev deps)} from the table."""
    if BEGIN not in text or END not in text:
        raise SystemExit("ARCHITECTURE.md has no %s ... %s table" % (BEGIN, END))
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    edges = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("crate", "") or set(cells[0]) <= set("-"):
            continue
        names = lambda cell: set() if cell == NONE else {n.strip() for n in cell.split(",")}
        crate = cells[0].strip("`")
        edges[crate] = (names(cells[1].replace("`", "")), names(cells[2].replace("`", "")))
    return edges


def actual():
    """{crate: (normal deps, dev deps)} among the workspace's crates, from cargo metadata."""
    out = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=REPO,
                         check=True, capture_output=True, text=True).stdout
    packages = json.loads(out)["packages"]
    ours = {p["name"] for p in packages}
    edges = {}
    for p in packages:
        deps = [d for d in p["dependencies"] if d["name"] in ours]
        normal = {d["name"] for d in deps if d["kind"] is None}
        dev = {d["name"] for d in deps if d["kind"] == "dev"}
        edges[p["name"]] = (normal, dev)
    return edges


def differences(doc, cargo):
    """Each way the table and the manifests differ, in words."""
    out = []
    for crate in sorted(set(doc) | set(cargo)):
        if crate not in cargo:
            out.append("%s is in the table but not in the workspace" % crate)
            continue
        if crate not in doc:
            out.append("%s is in the workspace but not in the table" % crate)
            continue
        for i, what in ((0, "depends on"), (1, "has tests that use")):
            extra, missing = doc[crate][i] - cargo[crate][i], cargo[crate][i] - doc[crate][i]
            if extra:
                out.append("the table says %s %s %s; Cargo.toml does not"
                           % (crate, what, ", ".join(sorted(extra))))
            if missing:
                out.append("%s %s %s; the table does not say so"
                           % (crate, what, ", ".join(sorted(missing))))
    return out


def main():
    with open(DOC) as f:
        doc = documented(f.read())
    problems = differences(doc, actual())
    for p in problems:
        print("crate edges: " + p, file=sys.stderr)
    if problems:
        print("update ARCHITECTURE.md's crate-edges table (or the manifests)", file=sys.stderr)
        return 1
    print("crate edges: ARCHITECTURE.md matches the Cargo.toml files (%d crates)" % len(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
