#!/usr/bin/env python3
"""The long fuzz run (tests/fuzz/README.md): every target of a SLUICE_FUZZ build for a fixed time or number of runs,
a bounded number at a time, on a corpus kept in the build tree between runs (seeded from the generated seeds), then
a table of executions, corpus size and crashes per target.

  tests/fuzz/long_run.py --build build-fuzz --seconds 300 [--parallel 2] [--targets request_fuzz,index_fuzz]
  tests/fuzz/long_run.py --build build-fuzz --runs 1000000

request_fuzz runs once over every API (no SLUICE_FUZZ_API: the first byte picks the API; seeds request_fuzz_all).
Crash inputs are left in <build>/tests/fuzz/long/<target>/ (crash-*, timeout-*, oom-*); the log of each run is
<target>.log there. Exit status 1 when any target failed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

TARGETS = ["request_fuzz", "frame_fuzz", "record_batch_fuzz", "index_fuzz", "znode_fuzz", "offsets_record_fuzz",
           "config_fuzz"]


def start(build, target, a):
    fuzz_dir = os.path.join(build, "tests", "fuzz")
    work = os.path.join(fuzz_dir, "long", target)
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus, exist_ok=True)
    seeds = os.path.join(fuzz_dir, "seeds", "request_fuzz_all" if target == "request_fuzz" else target)
    if not os.listdir(corpus) and os.path.isdir(seeds):
        for f in os.listdir(seeds):
            shutil.copyfile(os.path.join(seeds, f), os.path.join(corpus, f))
    for old in os.listdir(work):  # artifacts of an earlier run would be counted again
        if re.match(r"(crash|timeout|oom|leak|slow-unit)-", old):
            os.makedirs(os.path.join(work, "previous"), exist_ok=True)
            os.replace(os.path.join(work, old), os.path.join(work, "previous", old))
    cmd = ["nice", os.path.join(fuzz_dir, target), "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
           "-artifact_prefix=%s/" % work]
    if a.seconds:
        cmd.append("-max_total_time=%d" % a.seconds)
    if a.runs:
        cmd.append("-runs=%d" % a.runs)
    if a.keep_going:
        # Keep fuzzing after a crash (libFuzzer's fork mode, one worker): every distinct crash is kept.
        cmd += ["-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    cmd.append(corpus)
    env = dict(os.environ)
    env.pop("SLUICE_FUZZ_API", None)
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    log = open(os.path.join(work, target + ".log"), "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), work, log


def summarize(target, work, rc, seconds):
    text = open(os.path.join(work, target + ".log"), errors="replace").read()
    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    if not execs:  # fork mode prints totals in its status lines
        execs = re.findall(r"#(\d+):?\s+(?:DONE|pulse|NEW|REDUCE|INITED)", text)[-1:]
    execs = sum(int(e) for e in execs) if execs else 0
    crashes = [f for f in os.listdir(work) if re.match(r"(crash|timeout|oom|leak)-", f)]
    corpus = len(os.listdir(os.path.join(work, "corpus")))
    cov = re.findall(r"cov: (\d+)", text)
    return [target, str(execs), "%.0f" % (execs / seconds if seconds else 0), cov[-1] if cov else "-", str(corpus),
            str(len(crashes)), "ok" if rc == 0 and not crashes else "FAILED (exit %d)" % rc]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build-fuzz")
    p.add_argument("--seconds", type=int, default=0, help="per target (libFuzzer -max_total_time)")
    p.add_argument("--runs", type=int, default=0, help="per target (libFuzzer -runs)")
    p.add_argument("--parallel", type=int, default=1, help="targets run at a time (each one process)")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--keep-going", action="store_true", help="fork mode: continue after crashes")
    a = p.parse_args()
    if not a.seconds and not a.runs:
        p.error("give --seconds or --runs")
    pending = [t for t in a.targets.split(",") if t]
    running, rows = [], []
    while pending or running:
        while pending and len(running) < max(1, a.parallel):
            t = pending.pop(0)
            proc, work, log = start(a.build, t, a)
            running.append((t, proc, work, log, time.time()))
            print("started %s" % t, flush=True)
        time.sleep(1)
        for entry in list(running):
            t, proc, work, log, began = entry
            if proc.poll() is not None:
                log.close()
                running.remove(entry)
                rows.append(summarize(t, work, proc.returncode, time.time() - began))
                print("finished %s: %s" % (t, rows[-1][-1]), flush=True)
    head = ["target", "executions", "exec/s", "coverage", "corpus", "crashes", "result"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 1 if any(r[-1] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
