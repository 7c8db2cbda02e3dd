#!/usr/bin/env python3
"""__consumer_offsets under a group that commits all the time (issue #20): its size, and the group coordinator's
load time after a restart, over time, with the log cleaner on, off, or both one after the other.

usage: bench/offsets_compaction.py [--broker build-tests/broker/sluice] [--minutes 10] [--phases 5]
                                   [--interval-ms 100] [--partitions 10] [--segment-bytes 1048576]
                                   [--cleaner on|off|both]

A single node (offsets.topic.num.partitions 1, offsets.topic.segment.bytes --segment-bytes so segments roll within
minutes; Kafka's default of 100 MiB would roll after hours at this rate) and one consumer (confluent-kafka from the
compat cache's venv) committing offsets of --partitions partitions every --interval-ms. The run is cut into
--phases phases; after each, the committer stops, the broker restarts (SIGTERM, then start) and the time from the
start until an OffsetFetch answers the last committed offsets is the coordinator's load time. Prints, per phase,
the commits so far, the bytes of __consumer_offsets-0 and the load time (the median of --restarts restarts). Loopback only; every broker it starts is
stopped by PID.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import sluice_harness as h  # noqa: E402


def dir_size(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)) if os.path.isdir(path) else 0


class Node:
    def __init__(self, binary, data, overrides):
        self.binary, self.data, self.overrides = binary, data, overrides
        self.port = h.pick_free_port()
        self.proc = None

    def start(self):
        cmd = [self.binary, "--override", "log.dirs=" + self.data,
               "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
               "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.port, "--override", "http.listeners="]
        for k, v in self.overrides.items():
            cmd += ["--override", "%s=%s" % (k, v)]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not h.port_accepts(self.port, 0.2):
            time.sleep(0.005)
        return t0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def run(args, cleaner):
    from confluent_kafka import Consumer, TopicPartition
    data = tempfile.mkdtemp(prefix="sluice-offsets-bench-")
    node = Node(args.broker, data, {"offsets.topic.num.partitions": "1",
                                    "offsets.topic.segment.bytes": str(args.segment_bytes),
                                    "log.cleaner.enable": "true" if cleaner else "false",
                                    "log.cleaner.backoff.ms": "1000", "num.partitions": str(args.partitions)})
    rows = []
    try:
        node.start()
        boot = "127.0.0.1:%d" % node.port
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": boot})  # must outlive the futures
        for f in admin.create_topics([NewTopic("bench-data", args.partitions, 1)]).values():
            f.result(timeout=30)
        tps = [TopicPartition("bench-data", p) for p in range(args.partitions)]
        commits = 0
        phase_s = args.minutes * 60.0 / args.phases
        for phase in range(args.phases):
            c = Consumer({"bootstrap.servers": boot, "group.id": "committer", "enable.auto.commit": False})
            end = time.monotonic() + phase_s
            while time.monotonic() < end:
                commits += 1
                c.commit(offsets=[TopicPartition(tp.topic, tp.partition, commits) for tp in tps], asynchronous=False)
                time.sleep(args.interval_ms / 1000.0)
            c.close()
            size = dir_size(os.path.join(data, "__consumer_offsets-0"))
            times = []
            for _ in range(args.restarts):
                node.stop()
                t0 = node.start()
                c = Consumer({"bootstrap.servers": boot, "group.id": "committer", "enable.auto.commit": False})
                while True:
                    try:
                        got = c.committed(tps, timeout=5)
                        if all(t.offset == commits for t in got):
                            break
                    except Exception:  # noqa: BLE001 - COORDINATOR_LOAD_IN_PROGRESS and the like: ask again
                        pass
                    time.sleep(0.005)
                times.append((time.monotonic() - t0) * 1000.0)
                c.close()
            load_ms = statistics.median(times)
            rows.append((phase + 1, commits, size, load_ms))
            print("cleaner %-3s phase %d: %7d commits (%d records), __consumer_offsets-0 %10d bytes, "
                  "start to offsets fetched %.0f ms (median of restarts)" % ("on" if cleaner else "off", phase + 1, commits,
                                                        commits * args.partitions, size, load_ms), flush=True)
    finally:
        if node.proc and node.proc.poll() is None:
            node.stop()
        shutil.rmtree(data, ignore_errors=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.path.join(ROOT, "build-tests", "broker", "sluice"))
    ap.add_argument("--cache", default=os.path.join(ROOT, "build-tests", "compat-cache"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--phases", type=int, default=5)
    ap.add_argument("--interval-ms", type=float, default=100)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--segment-bytes", type=int, default=1048576)
    ap.add_argument("--cleaner", choices=["on", "off", "both"], default="on")
    ap.add_argument("--restarts", type=int, default=3, help="restarts per phase; the load time is their median")
    args = ap.parse_args()
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        why = h.run_in_venv(args.cache, __file__)
        print("no venv: %s" % why)
        return 1
    if args.cleaner in ("on", "both"):
        run(args, True)
    if args.cleaner in ("off", "both"):
        run(args, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
