#!/usr/bin/python3
"""Before/after pair of two sluice binaries under sluice_load, in one run (issue #23: "every optimisation lands
with a same-run before/after pair").

  /usr/bin/python3 bench/ab_load.py BEFORE_BINARY AFTER_BINARY [--rounds 5] [--sizes 100,1024] [--acks 1,all]
                                    [--partitions 4] [--connections 4] [--duration 5] [--rate N]
                                    [--broker-config KEY=VALUE ...]

Each round starts a fresh single node of each binary (the order alternates between rounds) and runs the same
sluice_load max-rate produce against it (100 records per batch, --inflight 5): records/s, the broker's CPU seconds
per million records (/proc utime + stime over the measured window), p99 latency, and the broker's open fds and RSS
at the end. `--rate` makes the runs open loop at that many records/s (latency from each batch's intended send time)
instead of max rate; `--broker-config` sets broker keys on both sides (e.g. log.segment.bytes=104857600 to roll a
segment every few hundred MB). Prints the median per binary and the after/before ratio. CPU per record is the figure to compare: it
moves little with the machine's load, where records/s on 2 shared cores move more. Loopback only; each broker it
starts is stopped by PID.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from sluice_harness import Broker  # noqa: E402
from capacity import first_existing  # noqa: E402
from scale import proc_figures  # noqa: E402


def one(args, binary, size, acks):
    config = {"num.partitions": str(args.partitions)}
    config.update(kv.split("=", 1) for kv in args.broker_config)
    b = Broker(binary, config)
    failed = False
    try:
        b.start(ready_timeout=30)
        cmd = [args.load_bin, "-b", b.bootstrap, "--json", "--broker-pid", str(b.proc.pid), "--topic", "ab",
               "--partitions", str(args.partitions), "--connections", str(args.connections), "--acks", acks,
               "--record-size", str(size), "--duration", str(args.duration), "--warmup", "1", "--rate", str(args.rate)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.duration + 120)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        f = proc_figures(b.proc.pid)
        if r.get("errors") or r.get("failed_connections"):
            raise RuntimeError("errors: %s %s" % (r.get("errors"), r.get("connection_errors")))
        return {"records_per_s": r["records_per_s"], "cpu_per_million": r["broker_cpu_per_million"],
                "p99_ms": r["latency_us"]["p99"] / 1000.0, "p999_ms": r["latency_us"]["p999"] / 1000.0,
                "max_ms": r["latency_us"]["max"] / 1000.0, "fds": f["fds"], "rss_mb": f["rss_mb"]}
    except (RuntimeError, ValueError, IndexError, subprocess.TimeoutExpired) as e:
        failed = True
        print("  run failed on %s: %s" % (binary, e), flush=True)
        return None
    finally:
        b.close(failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--load-bin", default=first_existing(os.path.join(REPO, "build", "bench", "load", "sluice_load"),
                                                           os.path.join(REPO, "build-tests", "bench", "load",
                                                                        "sluice_load")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--acks", default="1,all")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--rate", type=int, default=0, help="records/s over all connections; 0 = max rate")
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    keys = ("records_per_s", "cpu_per_million", "p99_ms", "p999_ms", "max_ms", "fds", "rss_mb")
    rows = []
    failures = 0
    for size in [int(x) for x in args.sizes.split(",")]:
        for acks in args.acks.split(","):
            runs = {"before": [], "after": []}
            for k in range(args.rounds):
                order = ("before", "after") if k % 2 == 0 else ("after", "before")
                for side in order:
                    r = one(args, getattr(args, side), size, acks)
                    if not r:
                        failures += 1
                    if r:
                        runs[side].append(r)
                        print("  %dB acks=%s round %d %s: %s" % (size, acks, k + 1, side, json.dumps(r)), flush=True)
            for key in keys:
                vals = {s: [r[key] for r in runs[s] if r[key] is not None] for s in runs}
                if not vals["before"] or not vals["after"]:
                    continue
                mb, ma = statistics.median(vals["before"]), statistics.median(vals["after"])
                rows.append("| %d B | %s | %s | %.3f | %.3f | %s |" % (size, acks, key, mb, ma,
                                                                       "%.2f" % (ma / mb) if mb else "-"))
    print("| records | acks | figure | before | after | after/before |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        print(r)
    if failures:
        print("%d run(s) failed (above); their figures are left out" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
