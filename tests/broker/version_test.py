#!/usr/bin/python3
"""`sluice --version` and the build step that stamps the revision (broker/build_version.cmake).

1. `sluice --version` exits 0 and prints one line "sluice <version> (revision <rev>)": <version> is the
   project(... VERSION x.y.z) of the top-level CMakeLists.txt; inside a git checkout <rev> is
   `git rev-parse --short HEAD`, optionally followed by "-dirty" (the tree had changes when it was built).
   `--help` lists --version; an unknown option still exits 2.
2. The script itself, run with `cmake -P` as the build runs it: a directory that is not a git checkout gives
   "unknown"; a fresh git repository gives its short HEAD, "-dirty" once a tracked file changes, the new HEAD
   after a commit; running it again with nothing changed leaves the generated file untouched (same mtime), so
   nothing recompiles.

Usage: version_test.py --broker build/broker/sluice --source-dir . [--cmake cmake]. Exit 0 pass, 1 fail, 77 skip.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def git(cwd, *args):
    out = subprocess.run(["git", "-C", cwd, "-c", "user.name=itest", "-c", "user.email=itest@localhost",
                          "-c", "commit.gpgsign=false"] + list(args), capture_output=True, timeout=60)
    return out.returncode, out.stdout.decode().strip()


def project_version(source_dir):
    with open(os.path.join(source_dir, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*sluice\s+VERSION\s+([0-9][0-9.]*)", f.read())
    return m.group(1) if m else None


def binary_part(binary, source_dir):
    out = subprocess.run([binary, "--version"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    text = out.stdout.decode("utf-8", "replace")
    check(out.returncode == 0, "--version exit code %d (stderr %r)" % (out.returncode, out.stderr[:300]))
    m = re.fullmatch(r"sluice (\S+) \(revision (\S+)\)\n", text)
    if not check(m is not None, "--version output %r" % text):
        return
    version, revision = m.group(1), m.group(2)
    expected_version = project_version(source_dir)
    check(expected_version is not None, "no project(sluice VERSION ...) in CMakeLists.txt")
    check(version == expected_version, "version %r, CMakeLists.txt says %r" % (version, expected_version))
    rc, top = git(source_dir, "rev-parse", "--show-toplevel")
    if rc == 0 and os.path.realpath(top) == os.path.realpath(source_dir):
        _, head = git(source_dir, "rev-parse", "--short", "HEAD")
        check(revision in (head, head + "-dirty"),
              "revision %r, git rev-parse --short HEAD is %r (rebuild after committing?)" % (revision, head))
    else:
        check(revision == "unknown", "revision %r outside a git checkout" % revision)

    helped = subprocess.run([binary, "--help"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    check(helped.returncode == 0 and b"--version" in helped.stdout, "--help does not list --version")
    bad = subprocess.run([binary, "--no-such-option"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    check(bad.returncode == 2, "unknown option: exit %d, expected 2" % bad.returncode)


def stamp(cmake, script, source, output):
    out = subprocess.run([cmake, "-DSOURCE_DIR=" + source, "-DOUTPUT=" + output, "-DVERSION=9.8.7", "-P", script],
                         capture_output=True, timeout=60)
    check(out.returncode == 0, "cmake -P %s: exit %d %r" % (script, out.returncode, out.stderr[:500]))
    with open(output) as f:
        text = f.read()
    m = re.search(r'build_revision\(\) \{ return "([^"]*)"; \}', text)
    check('build_version() { return "9.8.7"; }' in text, "generated file lacks the version: %r" % text)
    return m.group(1) if m else None


def script_part(cmake, source_dir):
    script = os.path.join(source_dir, "broker", "build_version.cmake")
    work = tempfile.mkdtemp(prefix="sluice-version-test-")
    try:
        output = os.path.join(work, "build_version.cc")
        plain = os.path.join(work, "tarball")
        os.makedirs(plain)
        check(stamp(cmake, script, plain, output) == "unknown", "not a git checkout: revision not 'unknown'")

        repo = os.path.join(work, "repo")
        os.makedirs(repo)
        if git(repo, "init", "-q")[0] != 0:
            check(False, "git init failed")
            return
        with open(os.path.join(repo, "f.txt"), "w") as f:
            f.write("one\n")
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "-m", "one")
        head = git(repo, "rev-parse", "--short", "HEAD")[1]
        check(stamp(cmake, script, repo, output) == head, "clean repository: revision is not %r" % head)
        # Unchanged: the file is not rewritten (ninja then rebuilds nothing).
        before = os.stat(output).st_mtime_ns
        time.sleep(0.05)
        check(stamp(cmake, script, repo, output) == head, "second run: revision changed")
        check(os.stat(output).st_mtime_ns == before, "second run rewrote an unchanged file")
        # An untracked file is not a change; a changed tracked file is.
        with open(os.path.join(repo, "untracked.txt"), "w") as f:
            f.write("x\n")
        check(stamp(cmake, script, repo, output) == head, "untracked file made the revision dirty")
        with open(os.path.join(repo, "f.txt"), "w") as f:
            f.write("two\n")
        check(stamp(cmake, script, repo, output) == head + "-dirty", "changed tracked file: not '-dirty'")
        git(repo, "commit", "-q", "-am", "two")
        head2 = git(repo, "rev-parse", "--short", "HEAD")[1]
        check(head2 != head and stamp(cmake, script, repo, output) == head2, "new commit: revision not %r" % head2)
        # A directory inside a repository that is not its top (a tarball unpacked in a checkout): unknown.
        inner = os.path.join(repo, "unpacked")
        os.makedirs(inner)
        check(stamp(cmake, script, inner, output) == "unknown", "subdirectory of another repository: not 'unknown'")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--broker", default="")
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--cmake", default=shutil.which("cmake") or "cmake")
    args = ap.parse_args()
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary (pass --broker or set SLUICE_BINARY)")
        return SKIP
    binary_part(binary, args.source_dir)
    if shutil.which("git"):
        script_part(args.cmake, args.source_dir)
    else:
        print("note: git not installed, the script part is skipped")
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else "FAILED")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
