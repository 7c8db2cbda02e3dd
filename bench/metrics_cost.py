#!/usr/bin/env python3
"""What the metrics cost: produce and consume throughput and broker CPU with metrics on vs off, in one run.

usage: bench/metrics_cost.py [--broker build-tests/broker/sluice] [--bench-bin build-tests/bench/sluice_bench] [--rounds 3]

"on": the defaults (sluice.metrics.enable=true) with the HTTP side on a free port, scraped every second during
the run (more often than Prometheus' default 15 s) (each scrape renders every series and computes the group lag). "off":
sluice.metrics.enable=false and http.listeners empty (no HTTP side, and the request-path writers skip their
updates). Each round starts a fresh single node for each side (order alternating between rounds), produces N
records with sluice_bench to 6 partitions, then consumes them back, reading the broker's user+system CPU ticks
from /proc around each phase. Prints the median over the rounds per side and the ratio off/on. Loopback only;
every broker it starts is stopped by its PID. A benchmark: it prints figures and asserts nothing.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])


class Scraper(threading.Thread):
    """GET /metrics every `period` s until stopped; counts scrapes and their bytes."""

    def __init__(self, port, period=1.0):
        super().__init__(daemon=True)
        self.port, self.period, self.stop_flag = port, period, threading.Event()
        self.scrapes, self.bytes = 0, 0

    def run(self):
        while not self.stop_flag.wait(self.period):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
                    self.bytes += len(r.read())
                    self.scrapes += 1
            except OSError:
                pass


def run_side(args, side, size, acks, records):
    d = tempfile.mkdtemp(prefix="sluice-metrics-cost-")
    port = free_port()
    http_port = free_port()
    cmd = [args.broker, "--override", "log.dirs=" + d, "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port]
    if side == "on":
        cmd += ["--override", "http.listeners=http://127.0.0.1:%d" % http_port]
    else:
        cmd += ["--override", "http.listeners=", "--override", "sluice.metrics.enable=false"]
    broker = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scraper = None
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.02)
        if side == "on":
            scraper = Scraper(http_port)
            scraper.start()
        topic = "metrics-cost-%d" % port
        hz = os.sysconf("SC_CLK_TCK")
        t0 = cpu_ticks(broker.pid)
        out = subprocess.run([args.bench_bin, "--bootstrap", "127.0.0.1:%d" % port, "--mode", "produce", "--topic", topic,
                              "--records", str(records), "--size", str(size), "--acks", str(acks), "--partitions", "6"],
                             capture_output=True, text=True, timeout=600).stdout
        t1 = cpu_ticks(broker.pid)
        produce_rate = float(re.search(r"records_per_s=(\d+)", out).group(1))
        out = subprocess.run([args.bench_bin, "--bootstrap", "127.0.0.1:%d" % port, "--mode", "consume", "--topic", topic,
                              "--records", str(records), "--size", str(size), "--partitions", "6"],
                             capture_output=True, text=True, timeout=600).stdout
        t2 = cpu_ticks(broker.pid)
        consume_rate = float(re.search(r"records_per_s=(\d+)", out).group(1))
        return {"produce_rate": produce_rate, "produce_cpu": (t1 - t0) / hz / records * 1e6,
                "consume_rate": consume_rate, "consume_cpu": (t2 - t1) / hz / records * 1e6,
                "scrapes": scraper.scrapes if scraper else 0}
    finally:
        if scraper:
            scraper.stop_flag.set()
        broker.terminate()
        try:
            broker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.path.join(REPO, "build-tests", "broker", "sluice"))
    ap.add_argument("--bench-bin", default=os.environ.get("SLUICE_BENCH_BIN",
                                                          os.path.join(REPO, "build-tests", "bench", "sluice_bench")))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("| set | side | produce rec/s | produce CPU s/M | consume rec/s | consume CPU s/M | scrapes |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for size, acks, records in [(100, 1, 5000000), (100, -1, 5000000), (1024, 1, 1500000)]:
        res = {"on": [], "off": []}
        for r in range(args.rounds):
            for side in (["on", "off"] if r % 2 == 0 else ["off", "on"]):
                res[side].append(run_side(args, side, size, acks, records))
        name = "%d B acks=%d" % (size, acks)
        med = {}
        for side in ("on", "off"):
            med[side] = {k: statistics.median(x[k] for x in res[side]) for k in res[side][0]}
            m = med[side]
            print("| %s | %s | %.0f | %.3f | %.0f | %.3f | %d |" % (name, side, m["produce_rate"], m["produce_cpu"],
                                                                   m["consume_rate"], m["consume_cpu"], m["scrapes"]),
                  flush=True)
        summary.append((name, med))
    print()
    print("| set | produce rate on/off | produce CPU on/off | consume rate on/off | consume CPU on/off |")
    print("|---|---|---|---|---|")
    for name, med in summary:
        on, off = med["on"], med["off"]
        print("| %s | %.3f | %.3f | %.3f | %.3f |" % (name, on["produce_rate"] / off["produce_rate"],
                                                    on["produce_cpu"] / off["produce_cpu"],
                                                    on["consume_rate"] / off["consume_rate"],
                                                    on["consume_cpu"] / off["consume_cpu"]))
    print("\nmedian of %d rounds per side; load average %s" % (args.rounds, " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    main()
