#!/usr/bin/env python3
"""Layering check (DESIGN.md §1): every project #include of a library's sources must name a header of that
library or of a library it links to (directly or through others), as declared in CMake.

Input: the file CMake generates at configure time (`<build>/layers.txt`), one line per library:
`name|source dir|linked libraries (;-separated)`; the source may also be one file (an executable's main.cc, which
then belongs to it rather than to the library of its folder). A header belongs to the library whose source dir is the longest
prefix of its path (broker/groups/ -> sluice_groups, broker/ -> sluice_broker); headers generated into the build
tree (`<build>/protocol/gen`) belong to sluice_protocol. System headers (<...>) and includes outside the project are
not checked.

    check_layers.py --layers build/layers.txt --root . [--generated protocol/gen=sluice_protocol]
                    [--extra-source LIBRARY=FILE]...

Exit 0 when every include is allowed; 1 with one line per wrong-way include
(`storage/log.cc:12: sluice_storage includes broker/partition.h of sluice_broker, which it does not link`).
`--extra-source` adds a file to a library's sources (the test that proves a planted include is caught).
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".cc", ".cpp", ".h", ".hpp")


def read_layers(path):
    libs = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, src, links = line.split("|", 2)
            libs[name] = (os.path.normpath(src), [l for l in links.split(";") if l])
    return libs


def closure(libs, name):
    """The libraries `name` may use: itself and what it links to, transitively (project libraries only)."""
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in libs:
            continue
        seen.add(n)
        todo.extend(libs[n][1])
    return seen


def owner_of(path, dirs):
    """The library whose source dir is the longest prefix of `path`, or None."""
    best, best_len = None, -1
    for name, d in dirs:
        if (path == d or path.startswith(d + os.sep)) and len(d) > best_len:
            best, best_len = name, len(d)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", required=True, help="layers.txt written by CMake")
    ap.add_argument("--root", required=True, help="source root (include paths are relative to it)")
    ap.add_argument("--generated", action="append", default=[],
                    help="DIR=LIBRARY: includes found under this build dir belong to LIBRARY")
    ap.add_argument("--extra-source", action="append", default=[], help="LIBRARY=FILE: check FILE as LIBRARY's")
    args = ap.parse_args(argv)

    root = os.path.abspath(args.root)
    libs = read_layers(args.layers)
    dirs = sorted(((n, os.path.abspath(d)) for n, (d, _) in libs.items()), key=lambda x: -len(x[1]))
    generated = []
    for g in args.generated:
        d, lib = g.split("=", 1)
        generated.append((os.path.abspath(d), lib))

    # Sources of each library: files under its dir not under a deeper library's dir.
    sources = []
    for name, d in dirs:
        if os.path.isfile(d):
            sources.append((name, d))
            continue
        for base, subdirs, files in os.walk(d):
            for fn in files:
                if fn.endswith(SOURCE_EXT):
                    p = os.path.join(base, fn)
                    if owner_of(p, dirs) == name:
                        sources.append((name, p))
    for extra in args.extra_source:
        lib, path = extra.split("=", 1)
        if lib not in libs:
            print("check_layers: unknown library %s" % lib)
            return 2
        sources.append((lib, os.path.abspath(path)))

    violations = []
    checked = 0
    for lib, path in sources:
        allowed = closure(libs, lib)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            target = None
            if os.path.exists(os.path.join(root, inc)):
                target = owner_of(os.path.abspath(os.path.join(root, inc)), dirs)
            else:
                for gdir, glib in generated:
                    if os.path.exists(os.path.join(gdir, inc)):
                        target = glib
                        break
            if target is None:
                continue  # relative to the file, or outside the project
            checked += 1
            if target not in allowed:
                rel = os.path.relpath(path, root)
                violations.append("%s:%d: %s includes %s of %s, which it does not link" % (rel, line, lib, inc, target))
    for v in violations:
        print(v)
    print("layers: %d libraries, %d files, %d project includes checked, %d wrong-way" %
          (len(libs), len(sources), checked, len(violations)))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
