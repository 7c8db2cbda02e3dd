#!/usr/bin/python3
"""Broker cost of a Fetch request with and without incremental fetch sessions (KIP-227), a figure for issue #21.

    /usr/bin/python3 bench/fetch_sessions.py --broker build/broker/sluice --cache build/compat-cache \
        [--partitions 1000] [--records 20000] [--idle-ms 15000]

For each of max.incremental.fetch.session.cache.slots = 1000 (sessions) and 0 (every fetch full), on a fresh
broker: the Java client 4.4 consumer of tests/integration/IncrementalFetch.java reads `records` records from
`partitions` partitions, then polls for `idle-ms` with nothing new (fetch.max.wait.ms 100, so a Fetch about every
100 ms). Over that idle phase the program reads the broker's Fetch request count and request/response bytes from
/metrics and its CPU time from /proc/<pid>/stat, and prints per Fetch request: request bytes, response bytes and
broker CPU microseconds. Prints figures only; nothing is asserted.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import fetch_sessions_test as fst  # noqa: E402  (scrape, fetch_totals)
import installers  # noqa: E402
import sluice_harness as h  # noqa: E402


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def response_bytes(metrics):
    return metrics.get(("sluice_network_response_bytes_total", '{request="Fetch"}'), 0.0)


def one(binary, java_bin, classpath, slots, args):
    port = h.pick_free_port()
    broker = h.Broker(binary, {"http.listeners": "http://127.0.0.1:%d" % port,
                               "max.incremental.fetch.session.cache.slots": str(slots)})
    broker.start()
    try:
        p = subprocess.Popen([java_bin, "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
                              "IncrementalFetch", broker.bootstrap, "wide", str(args.partitions), str(args.records),
                              str(args.idle_ms)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        start = None
        for line in p.stdout:
            if line.startswith("READ_DONE"):
                m = fst.scrape(port)
                start = (fst.fetch_totals(m), response_bytes(m), cpu_seconds(broker.proc.pid))
        p.wait(timeout=60)
        m = fst.scrape(port)
        end = (fst.fetch_totals(m), response_bytes(m), cpu_seconds(broker.proc.pid))
    finally:
        broker.stop()
        broker.close()
    if start is None or p.returncode != 0:
        print("slots=%d: the driver failed (exit %s)" % (slots, p.returncode))
        return
    n = end[0][0] - start[0][0]
    print("fetch_sessions slots=%d partitions=%d idle_fetches=%d request_bytes=%.0f response_bytes=%.0f "
          "broker_cpu_us=%.0f" % (slots, args.partitions, n, (end[0][1] - start[0][1]) / n, (end[1] - start[1]) / n,
                                  (end[2] - start[2]) * 1e6 / n))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.path.join(REPO, "build", "broker", "sluice"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build", "compat-cache"))
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--idle-ms", type=int, default=15000)
    args = ap.parse_args()
    java_bin, classpath = installers.java_program(args.cache, os.path.join(REPO, "tests", "integration",
                                                                           "IncrementalFetch.java"),
                                                  "incremental-fetch-classes")
    for slots in (1000, 0):
        one(args.broker, java_bin, classpath, slots, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
