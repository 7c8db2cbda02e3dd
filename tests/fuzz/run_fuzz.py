#!/usr/bin/env python3
"""Runs one libFuzzer target for ctest (tests/fuzz/README.md).

  run_fuzz.py --list-apis DEFS_DIR
      prints the name of every API with a request definition (one line each), for CMake's per-API tests.
  run_fuzz.py --binary B --target T [--api NAME] --seeds DIR --regressions DIR --work DIR --seconds S --runs N
      a short bounded run on a fresh corpus: the seeds of T (of T/NAME for request_fuzz) plus its regression
      inputs, copied into WORK/T[-NAME]/corpus (which libFuzzer then grows).
  run_fuzz.py --binary B --target T --regressions DIR --regress
      runs every file under DIR/T once (request_fuzz: DIR/request_fuzz/<API>/*, with SLUICE_FUZZ_API=<API>).
Exit status: the fuzzer's (0 when nothing was found).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

# Bounds of every run: an input may take 10 s, the process 2 GB.
COMMON = ["-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1"]


def list_apis(defs):
    names = {}
    with open(os.path.join(defs, "api_keys.def")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) >= 2:
                names[int(line[0])] = line[1]
    keys = set()
    for fn in sorted(os.listdir(defs)):
        if fn.endswith(".def"):
            with open(os.path.join(defs, fn)) as f:
                for line in f:
                    m = re.match(r"request\s+\S+\s+key=(\d+)", line)
                    if m:
                        keys.add(int(m.group(1)))
    for k in sorted(keys):
        print(names[k])


def files_under(d):
    out = []
    if os.path.isdir(d):
        for root, _, files in os.walk(d):
            out += [os.path.join(root, f) for f in files if not f.startswith(".") and f != "README.md"]
    return sorted(out)


def env_for(api):
    env = dict(os.environ)
    if api:
        env["SLUICE_FUZZ_API"] = api
    # UBSan findings abort (the targets are built with -fno-sanitize-recover=undefined); show their stacks.
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


def regress(a):
    base = os.path.join(a.regressions, a.target)
    groups = []  # (api or None, files)
    if a.target == "request_fuzz":
        if os.path.isdir(base):
            for api in sorted(os.listdir(base)):
                if os.path.isdir(os.path.join(base, api)):
                    groups.append((api, files_under(os.path.join(base, api))))
    else:
        groups.append((None, files_under(base)))
    total = sum(len(f) for _, f in groups)
    if total == 0:
        print("%s: no regression inputs under %s" % (a.target, base))
        return 0
    rc = 0
    for api, files in groups:
        if not files:
            continue
        print("%s%s: %d regression input(s)" % (a.target, " " + api if api else "", len(files)), flush=True)
        r = subprocess.run([a.binary] + COMMON + files, env=env_for(api))
        rc = rc or r.returncode
    return rc


def fuzz(a):
    name = a.target + ("-" + a.api if a.api else "")
    work = os.path.join(a.work, name)
    corpus = os.path.join(work, "corpus")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(corpus)
    sub = os.path.join(a.target, a.api) if a.api else a.target
    sources = files_under(os.path.join(a.seeds, sub)) + files_under(os.path.join(a.regressions, sub))
    for i, src in enumerate(sources):
        shutil.copyfile(src, os.path.join(corpus, "%04d-%s" % (i, os.path.basename(src))))
    cmd = [a.binary] + COMMON + ["-max_total_time=%d" % a.seconds, "-runs=%d" % a.runs,
                                 "-artifact_prefix=%s/" % work, corpus]
    print("%s: %d seed(s); %s" % (name, len(sources), " ".join(cmd)), flush=True)
    r = subprocess.run(cmd, env=env_for(a.api))
    if r.returncode != 0:
        print("%s: FAILED (exit %d); the input is in %s (crash-*, timeout-*, oom-*, leak-*)" % (name, r.returncode, work))
    return r.returncode


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--list-apis")
    p.add_argument("--binary")
    p.add_argument("--target")
    p.add_argument("--api")
    p.add_argument("--seeds")
    p.add_argument("--regressions")
    p.add_argument("--work")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--runs", type=int, default=1000000)
    p.add_argument("--regress", action="store_true")
    a = p.parse_args()
    if a.list_apis:
        list_apis(a.list_apis)
        return 0
    return regress(a) if a.regress else fuzz(a)


if __name__ == "__main__":
    sys.exit(main())
