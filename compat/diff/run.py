#!/usr/bin/python3
"""Runs compat/diff: starts Apache Kafka 4.4 (compat/kafka/kafka_reference.py) and a Sluice single node on
free loopback ports, runs sluice_diff with every scenario (and, with --random, the randomized mode), then
stops both by PID. Stdlib only; see README.md.

    /usr/bin/python3 compat/diff/run.py --broker build/broker/sluice --diff build/compat/diff/sluice_diff
        [--cache build/compat-cache] [--filter TEXT] [--verbose]
        [--random --seed S --seeds K --count N --time-limit SEC] [--no-scenarios]

Exit: sluice_diff's status (0: no unexplained difference, 1: some), 77 with "SKIP: why" when Kafka's jars or
Java cannot be obtained or a binary is missing, 2 when a broker does not start.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "kafka"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import kafka_reference  # noqa: E402
import sluice_harness  # noqa: E402

SKIP = 77
# Settings both brokers get, so that what they answer depends on the request only. The offsets expiration check
# (every 10 min by default) would run at a different moment on each broker (they start seconds apart), so that
# for those seconds one has removed expired offsets and Empty groups and the other not: it runs once a day here.
COMMON = {"group.initial.rebalance.delay.ms": 0, "num.partitions": 1, "auto.create.topics.enable": "true",
          "offsets.retention.check.interval.ms": 86400000}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", default=os.path.join(ROOT, "build", "broker", "sluice"))
    ap.add_argument("--diff", default=os.path.join(ROOT, "build", "compat", "diff", "sluice_diff"))
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE", os.path.join(ROOT, "build", "compat-cache")))
    ap.add_argument("--filter", default="")
    ap.add_argument("--files", default="", help="comma list of scenario files (stems, e.g. end_txn) instead of all; "
                    "no destructive scenarios then")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--no-scenarios", action="store_true", help="random mode only")
    ap.add_argument("--random", action="store_true")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--count", default="1000")
    ap.add_argument("--time-limit", default="120")
    ap.add_argument("--trace", action="store_true", help="print every request (random mode) or step (scenarios) with both raw answers")
    args = ap.parse_args()
    for what, path in (("sluice", args.broker), ("sluice_diff", args.diff)):
        if not os.access(path, os.X_OK):
            print("SKIP: %s binary not found: %s" % (what, path))
            return SKIP
    try:
        kafka_reference.prepare(args.cache, quiet=True)
    except kafka_reference.Unavailable as e:
        print("SKIP: %s" % e)
        return SKIP
    kafka = kafka_reference.KafkaReference(args.cache, overrides=dict(COMMON))
    # broker.id 1 and min.insync.replicas 1: what kafka_reference.py writes into Kafka's server.properties.
    sluice = sluice_harness.Broker(args.broker, overrides=dict(COMMON, **{"broker.id": 1, "min.insync.replicas": 1}))
    failed = True
    chosen = None
    try:
        t0 = time.monotonic()
        try:
            kafka.start()
        except kafka_reference.Unavailable as e:
            print("SKIP: %s" % e)
            return SKIP
        sluice.start()
        print("# kafka %s (pid %d), sluice %s (pid %d), started in %.1f s" % (
            kafka.bootstrap, kafka.pid, sluice.bootstrap, sluice.proc.pid, time.monotonic() - t0), flush=True)
        cmd = [args.diff, "--kafka", kafka.bootstrap, "--sluice", sluice.bootstrap,
               "--known", os.path.join(HERE, "known.txt")]
        if not args.no_scenarios and args.files:
            # The chosen files, as links in a folder of their own (sluice_diff reads a folder's *.json).
            chosen = tempfile.mkdtemp(prefix="sluice-diff-scenarios-")
            for stem in args.files.split(","):
                src = os.path.join(HERE, "scenarios", stem.strip() + ".json")
                if not os.path.exists(src):
                    print("error: no scenario file %s" % src)
                    return 2
                os.symlink(src, os.path.join(chosen, os.path.basename(src)))
            cmd += ["--scenarios", chosen]
        elif not args.no_scenarios:
            cmd += ["--scenarios", os.path.join(HERE, "scenarios")]
        if args.filter:
            cmd += ["--filter", args.filter]
        if args.verbose:
            cmd.append("--verbose")
        if args.trace:
            cmd.append("--trace")
        if args.random:
            cmd += ["--random", "--seed", args.seed, "--seeds", args.seeds, "--count", args.count,
                    "--time-limit", args.time_limit]
        # Bounded: the scenarios take a few minutes; the random mode its --time-limit plus setup.
        budget = 900 + float(args.time_limit if args.random else 0)
        rc = subprocess.run(cmd, timeout=budget).returncode
        if not args.no_scenarios and not args.filter and not args.files and rc in (0, 1):
            # Last, as they damage both brokers' state: scenarios/destructive (deleting __consumer_offsets).
            print("# destructive scenarios", flush=True)
            rc2 = subprocess.run([args.diff, "--kafka", kafka.bootstrap, "--sluice", sluice.bootstrap, "--known",
                                  os.path.join(HERE, "known.txt"), "--scenarios",
                                  os.path.join(HERE, "scenarios", "destructive")], timeout=300).returncode
            rc = max(rc, rc2)
        if not sluice.alive():
            print("sluice died during the run; last log lines:\n%s" % sluice.log_text()[-3000:])
            rc = 1
        failed = rc not in (0, 1)
        return rc
    except (kafka_reference.ReferenceFailed, RuntimeError) as e:
        print("error: %s" % e)
        return 2
    finally:
        if chosen:
            shutil.rmtree(chosen, ignore_errors=True)
        for b in (sluice, kafka):
            try:
                b.close(failed=failed)
            except Exception as e:  # keep stopping the other one
                print("error stopping: %s" % e)
        if failed:
            print("# logs kept: %s %s" % (kafka.dir, sluice.dir))


if __name__ == "__main__":
    sys.exit(main())
