#!/usr/bin/env python3
"""Produce throughput and broker CPU with the log cleaner running beside the producer, and with it off (issue #20).

usage: bench/compaction_cost.py [--broker build-tests/broker/sluice] [--rounds 3] [--records 3000000] [--keys 10000]

Each round starts a fresh single node twice, log.cleaner.enable=true and =false (order alternating between rounds),
creates a compacted topic whose segments roll every 8 MiB (segment.bytes via internal.segment.bytes, so passes run
while the producer writes; min.cleanable.dirty.ratio 0.1, log.cleaner.backoff.ms 100) and produces --records
records of 100 B over --keys keys with sluice_bench (acks=1, one partition). Prints, per side, the producer's
records/s, the broker's user+system CPU seconds over the run and per million records, the cleaner passes
installed during the run and the bytes left in the partition directory, then the medians. Loopback only; every
broker it starts is stopped by PID.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def dir_bytes(path):
    """Bytes of the files in `path`; a file the cleaner removes meanwhile counts 0."""
    total = 0
    for name in os.listdir(path):
        try:
            total += os.path.getsize(os.path.join(path, name))
        except FileNotFoundError:
            pass
    return total


def scrape(http_port, family):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http_port, timeout=5).read().decode()
    m = re.search(r"^%s(?:\{\})? ([0-9.e+]+)$" % re.escape(family), text, re.M)
    return float(m.group(1)) if m else 0.0


def one(args, cleaner):
    d = tempfile.mkdtemp(prefix="sluice-compaction-bench-")
    port, http_port = free_port(), free_port()
    cmd = [args.broker, "--override", "log.dirs=" + d, "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
           "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % port,
           "--override", "http.listeners=http://127.0.0.1:%d" % http_port,
           "--override", "log.cleaner.enable=%s" % ("true" if cleaner else "false"),
           "--override", "log.cleaner.backoff.ms=100"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", http_port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        topic = "compacted-bench"
        c0 = cpu_seconds(p.pid)
        out = subprocess.run([args.bench, "--bootstrap", "127.0.0.1:%d" % port, "--mode", "produce", "--topic", topic,
                              "--records", str(args.records), "--keys", str(args.keys), "--size", "100", "--acks", "1",
                              "--topic-config", "cleanup.policy=compact",
                              "--topic-config", "internal.segment.bytes=8388608",
                              "--topic-config", "min.cleanable.dirty.ratio=0.1", "--timeout", "300"],
                             capture_output=True, text=True, timeout=400).stdout
        c1 = cpu_seconds(p.pid)
        m = re.search(r"records_per_s=(\d+)", out)
        if not m:
            raise RuntimeError("sluice_bench printed no rate:\n" + out)
        passes = scrape(http_port, "sluice_log_cleaner_passes_total")
        size = dir_bytes(os.path.join(d, topic + "-0"))
        return {"rate": float(m.group(1)), "cpu": c1 - c0, "cpu_per_m": (c1 - c0) / args.records * 1e6,
                "passes": passes, "bytes": size}
    finally:
        p.terminate()
        p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.path.join(ROOT, "build-tests", "broker", "sluice"))
    ap.add_argument("--bench", default=os.environ.get("SLUICE_BENCH_BIN",
                                                       os.path.join(ROOT, "build-tests", "bench", "sluice_bench")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=3000000)
    ap.add_argument("--keys", type=int, default=10000)
    args = ap.parse_args()
    results = {True: [], False: []}
    print("%-8s %-6s %12s %10s %12s %8s %14s" % ("round", "cleaner", "records/s", "cpu s", "cpu s/M rec", "passes",
                                                 "dir bytes"))
    for r in range(args.rounds):
        for cleaner in ((True, False) if r % 2 == 0 else (False, True)):
            res = one(args, cleaner)
            results[cleaner].append(res)
            print("%-8d %-6s %12.0f %10.2f %12.2f %8.0f %14d" % (r, "on" if cleaner else "off", res["rate"], res["cpu"],
                                                                 res["cpu_per_m"], res["passes"], res["bytes"]))
    for cleaner in (True, False):
        rs = results[cleaner]
        print("median cleaner %-3s: %.0f records/s, %.2f CPU s per million records, %d passes, %d bytes left" % (
            "on" if cleaner else "off", statistics.median(x["rate"] for x in rs),
            statistics.median(x["cpu_per_m"] for x in rs), statistics.median(x["passes"] for x in rs),
            statistics.median(x["bytes"] for x in rs)))
    on = statistics.median(x["rate"] for x in results[True])
    off = statistics.median(x["rate"] for x in results[False])
    print("produce rate on/off: %.2f" % (on / off))


if __name__ == "__main__":
    main()
