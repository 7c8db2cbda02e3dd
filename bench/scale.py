#!/usr/bin/python3
"""Scale figures of one broker (issue #23, acceptance item 2): many partitions and many connections.

  /usr/bin/python3 bench/scale.py                                   # Sluice: 100, 1,000, 10,000 partitions; 10,000 idle connections
  /usr/bin/python3 bench/scale.py --reference kafka                 # the same against one Kafka 4.4 KRaft node, side by side
  /usr/bin/python3 bench/scale.py --partitions 100,1000 --idle 1000 # smaller

Per partition count N (a fresh broker each):
  - `created`: CreateTopics of one topic of N partitions (RF 1) on an empty node (Kafka refuses more than 10,000
    records in one controller operation: there, 5,000 partitions, then CreatePartitions steps of 5,000): how long it took,
    then after 3 s idle the broker's RSS (VmRSS), open fds (/proc/PID/fd) and threads;
  - `restart`: SIGTERM, then a new process on the same log dir: time from spawn to the first accepted TCP
    connection (polled every 0.5 ms), time until Metadata lists all N partitions with a leader, and RSS / fds 3 s
    after that;
  - `produce`: sluice_load at max rate over all N partitions (acks=1, 100 B records, 100 per batch, --connections
    connections, --threads 2), records/s and broker CPU s per million records, RSS and fds at the end.
Connections (one node, a topic of --idle-partitions partitions): sluice_load with --idle connections that only
negotiate and hold, plus --connections busy producers at max rate; the broker's fds and RSS (highest seen while
the run lasts), how many idle connections were set up and still answered at the end, the busy throughput.

Every process started here is stopped here by PID; every loop is bounded. Output: a markdown table per section, and
JSON lines with --json-out (default bench/results/scale.json, gitignored).
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
from sluice_harness import Broker  # noqa: E402
import kafka_reference as kr  # noqa: E402
from capacity import first_existing  # noqa: E402


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# /proc figures and raw requests


def proc_figures(pid):
    """{"rss_mb", "fds", "threads"} of a live process, from /proc."""
    out = {"rss_mb": None, "fds": None, "threads": None}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    out["rss_mb"] = round(int(line.split()[1]) / 1024.0, 1)
                elif line.startswith("Threads:"):
                    out["threads"] = int(line.split()[1])
        out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        pass
    return out


class PeakSampler:
    """Samples proc_figures(pid) every 0.25 s in a thread until stop(); keeps the highest RSS and fd count."""

    def __init__(self, pid):
        self.pid = pid
        self.peak = {"rss_mb": 0.0, "fds": 0, "threads": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.25):
            f = proc_figures(self.pid)
            for k in self.peak:
                if f[k] is not None and f[k] > self.peak[k]:
                    self.peak[k] = f[k]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def create_topic(port, topic, partitions, timeout=120.0):
    """CreateTopics v2 (one topic, RF 1, no configs); returns the topic's error code."""
    name = topic.encode()
    body = (struct.pack(">ih", 1, len(name)) + name + struct.pack(">ihii", partitions, 1, 0, 0)
            + struct.pack(">ib", int(timeout * 1000), 0))
    resp = kr._request(port, 19, 2, body, timeout + 10)
    # throttle, [name, error, message]
    (n,) = struct.unpack(">i", resp[4:8])
    (nlen,) = struct.unpack(">h", resp[8:10])
    (code,) = struct.unpack(">h", resp[10 + nlen:12 + nlen])
    return code


def create_partitions(port, topic, count, timeout=120.0):
    """CreatePartitions v1: grows `topic` to `count` partitions; returns the error code."""
    name = topic.encode()
    body = (struct.pack(">ih", 1, len(name)) + name + struct.pack(">ii", count, -1)
            + struct.pack(">ib", int(timeout * 1000), 0))
    resp = kr._request(port, 37, 1, body, timeout + 10)
    (nlen,) = struct.unpack(">h", resp[8:10])
    (code,) = struct.unpack(">h", resp[10 + nlen:12 + nlen])
    return code


# Kafka's KRaft controller refuses an operation of more than 10,000 records (QuorumController's
# max.records.per.user.op): a topic of 10,000 partitions is 10,001 records, answered POLICY_VIOLATION (44).
KRAFT_RECORDS_PER_OP = 10000


def create_topic_in_steps(port, topic, partitions, timeout):
    """CreateTopics, and when that is refused with POLICY_VIOLATION, CreateTopics of half the count then
    CreatePartitions up to `partitions` in steps under the KRaft limit. Returns (error code, note)."""
    code = create_topic(port, topic, partitions, timeout=timeout)
    if code != 44:
        return code, None
    step = KRAFT_RECORDS_PER_OP // 2
    code = create_topic(port, topic, min(step, partitions), timeout=timeout)
    have = min(step, partitions)
    while code == 0 and have < partitions:
        have = min(have + step, partitions)
        code = create_partitions(port, topic, have, timeout=timeout)
    return code, "POLICY_VIOLATION for one request; created in steps of %d" % step


def partitions_with_leader(port, topic, timeout=30.0):
    """Metadata v1 for `topic`: how many of its partitions have a leader (-1 on error)."""
    name = topic.encode()
    resp = kr._request(port, 3, 1, struct.pack(">ih", 1, len(name)) + name, timeout)
    pos = 0
    (nb,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    for _ in range(nb):
        pos += 4
        (hl,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + hl + 4
        (rl,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + max(rl, 0)
    pos += 4  # controller id
    (nt,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    with_leader = 0
    for _ in range(nt):
        (err, tl) = struct.unpack_from(">hh", resp, pos)
        pos += 4 + tl + 1
        (np_,) = struct.unpack_from(">i", resp, pos)
        pos += 4
        for _ in range(np_):
            (perr, _pi, leader) = struct.unpack_from(">hii", resp, pos)
            pos += 10
            for _arr in range(2):  # replicas, isr
                (k,) = struct.unpack_from(">i", resp, pos)
                pos += 4 + 4 * max(k, 0)
            if perr == 0 and leader >= 0:
                with_leader += 1
        if err != 0:
            return -1
    return with_leader


def wait_metadata(port, timeout):
    """Until ApiVersions answers and Metadata lists a broker (kafka_reference.probe; a KRaft node once its quorum
    is up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if kr.probe(port):
                return True
        except (OSError, struct.error):
            pass
        time.sleep(0.1)
    return False


def wait_partitions(port, topic, want, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if partitions_with_leader(port, topic) >= want:
                return True
        except (OSError, struct.error):
            pass
        time.sleep(0.1)
    return False


def wait_accepting(port, proc, timeout):
    """Polls a TCP connect every 0.5 ms until it succeeds; seconds from now, or None (exited / timed out)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            return None
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return time.monotonic() - t0
        except OSError:
            time.sleep(0.0005)
    return None


# ---------------------------------------------------------------------------------------------
# The two sides: a node with .port, .pid, spawn() (not waited for), .proc, stop(), close()


class _Node:
    """What the cases use of a side; `inner` is a sluice_harness.Broker or a kafka_reference.KafkaReference."""

    inner = None

    @property
    def port(self):
        return self.inner.port

    @property
    def bootstrap(self):
        return self.inner.bootstrap

    @property
    def proc(self):
        return self.inner.proc

    @property
    def pid(self):
        return self.inner.proc.pid

    def close(self, failed=False):
        self.inner.close(failed)


class SluiceNode(_Node):
    label = "sluice"

    def __init__(self, binary, **_):
        # The harness writes broker.id, listeners and log.dirs; everything else is Sluice's default.
        self.inner = Broker(binary, {"group.initial.rebalance.delay.ms": "0"})

    def spawn(self):
        b = self.inner
        b._write_config()
        args = [b.binary, "--config", os.path.join(b.dir, "server.properties")]
        for k, v in b.overrides.items():
            args += ["--override", "%s=%s" % (k, v)]
        with open(b.log_path, "ab") as lf:
            b.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf)

    def stop(self):
        return self.inner.stop(timeout=120)


class KafkaNode(_Node):
    label = "kafka"

    def __init__(self, _binary, cache):
        # Kafka's own start script's heap (1 GiB).
        self.inner = kr.KafkaReference(cache, {"group.initial.rebalance.delay.ms": 0}, heap="1G")

    def spawn(self):
        self.inner.launch()

    def stop(self):
        return self.inner.stop(timeout=180)


# ---------------------------------------------------------------------------------------------


def run_load(args, node, extra, timeout):
    cmd = [args.load_bin, "-b", node.bootstrap, "--json", "--broker-pid", str(node.pid)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError("sluice_load failed (exit %d): %s" % (p.returncode, (p.stderr or p.stdout)[-800:]))


def run_case(args, cls, row, body):
    """Runs body(node, row) on a fresh node of `cls`; a failure goes to row["error"], and the node's files are kept
    then. The node is stopped by PID in every case."""
    node = cls(args.broker, cache=args.cache)
    row = dict(side=node.label, **row)
    failed = False
    try:
        body(node, row)
    except (RuntimeError, OSError, struct.error, subprocess.TimeoutExpired, kr.ReferenceFailed) as e:
        row["error"] = str(e)[:600]
        failed = True
    finally:
        node.close(failed)
    return row


def partitions_case(args, cls, n):
    return run_case(args, cls, {"partitions": n}, lambda node, row: partitions_body(args, node, row, n))


def partitions_body(args, node, row, n):
    node.spawn()
    if wait_accepting(node.port, node.proc, 120) is None:
        raise RuntimeError("the broker did not start")
    if not wait_metadata(node.port, 120):  # Metadata answers (a KRaft node: once its quorum is up)
        raise RuntimeError("no Metadata answer")
    t0 = time.monotonic()
    code, note = create_topic_in_steps(node.port, "scale", n, args.create_timeout)
    if note:
        row["create_note"] = note
    if code != 0:
        raise RuntimeError("CreateTopics answered error %d" % code)
    if not wait_partitions(node.port, "scale", n, args.create_timeout):
        raise RuntimeError("not every partition got a leader")
    row["create_s"] = round(time.monotonic() - t0, 3)
    time.sleep(3)
    row["created"] = proc_figures(node.pid)
    rc = node.stop()
    row["stop_exit"] = rc
    t0 = time.monotonic()
    node.spawn()
    accept = wait_accepting(node.port, node.proc, 300)
    if accept is None:
        raise RuntimeError("the broker did not start again")
    row["restart_accept_ms"] = round(accept * 1000, 2)
    if not wait_partitions(node.port, "scale", n, 300):
        raise RuntimeError("after the restart, not every partition has a leader")
    row["restart_all_leaders_s"] = round(time.monotonic() - t0, 3)
    time.sleep(3)
    row["restarted"] = proc_figures(node.pid)
    with PeakSampler(node.pid) as peak:
        r = run_load(args, node, ["--topic", "scale", "--partitions", "0", "--connections", str(args.connections),
                                  "--threads", "2", "--acks", "1", "--record-size", "100", "--batch-records",
                                  "100", "--duration", str(args.duration), "--warmup", "2"],
                     timeout=args.duration + 200)
    row["produce"] = {k: r.get(k) for k in ("records_per_s", "broker_cpu_per_million", "client_cpu_per_million",
                                            "errors", "failed_connections", "unanswered_requests",
                                            "connections")}
    row["produce"]["p99_ms"] = r["latency_us"]["p99"] / 1000.0
    row["during_produce_peak"] = peak.peak
    row["after_produce"] = proc_figures(node.pid)


def connections_case(args, cls, idle):
    return run_case(args, cls, {"idle_connections": idle, "busy_connections": args.connections},
                    lambda node, row: connections_body(args, node, row, idle))


def connections_body(args, node, row, idle):
    node.spawn()
    if wait_accepting(node.port, node.proc, 120) is None or not wait_metadata(node.port, 120):
        raise RuntimeError("the broker did not start")
    if create_topic(node.port, "conns", args.idle_partitions) != 0:
        raise RuntimeError("CreateTopics failed")
    wait_partitions(node.port, "conns", args.idle_partitions, 60)
    row["before"] = proc_figures(node.pid)
    with PeakSampler(node.pid) as peak:
        r = run_load(args, node, ["--topic", "conns", "--partitions", "0", "--connections", str(args.connections),
                                  "--idle-connections", str(idle), "--threads", "2", "--acks", "1",
                                  "--duration", str(args.duration), "--warmup", "2"],
                     timeout=args.duration + 300)
    row.update({k: r.get(k) for k in ("setup_s", "idle_ready", "idle_failed", "idle_alive", "records_per_s",
                                      "broker_cpu_per_million", "errors", "failed_connections",
                                      "connection_errors")})
    row["peak"] = peak.peak
    row["after"] = proc_figures(node.pid)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "{:,.2f}".format(v) if v < 100 else "{:,.0f}".format(v)
    return "{:,}".format(v) if isinstance(v, int) else str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=first_existing(os.path.join(REPO, "build", "broker", "sluice"),
                                                         os.path.join(REPO, "build-tests", "broker", "sluice")))
    ap.add_argument("--load-bin", default=first_existing(os.path.join(REPO, "build", "bench", "load", "sluice_load"),
                                                           os.path.join(REPO, "build-tests", "bench", "load",
                                                                        "sluice_load")))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    ap.add_argument("--reference", choices=["kafka"], help="also run each case against Kafka 4.4 (one KRaft node)")
    ap.add_argument("--partitions", default="100,1000,10000", help="partition counts (default 100,1000,10000)")
    ap.add_argument("--idle", default="10000", help="idle connection counts, 0 or empty = none (default 10000)")
    ap.add_argument("--idle-partitions", type=int, default=100, help="partitions of the connections case's topic")
    ap.add_argument("--connections", type=int, default=10, help="busy producer connections (default 10)")
    ap.add_argument("--duration", type=float, default=10, help="measured seconds of each load run (default 10)")
    ap.add_argument("--create-timeout", type=float, default=300)
    ap.add_argument("--json-out", default=os.path.join(REPO, "bench", "results", "scale.json"))
    ap.add_argument("--plots", action="store_true",
                    help="also plot RSS and start time against partitions into bench/results/scale_partitions.png")
    args = ap.parse_args()
    sides = [SluiceNode] + ([KafkaNode] if args.reference == "kafka" else [])
    rows = []
    for n in [int(x) for x in args.partitions.split(",") if x.strip()]:
        for cls in sides:
            log("partitions %d on %s ..." % (n, cls.label))
            row = partitions_case(args, cls, n)
            log("  " + json.dumps(row))
            rows.append(row)
    for idle in [int(x) for x in args.idle.split(",") if x.strip() and int(x) > 0]:
        for cls in sides:
            log("%d idle connections + %d busy on %s ..." % (idle, args.connections, cls.label))
            row = connections_case(args, cls, idle)
            log("  " + json.dumps(row))
            rows.append(row)
    os.makedirs(os.path.dirname(args.json_out), exist_ok=True)
    with open(args.json_out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    if args.plots:
        import capacity  # bench/capacity.py: the pinned-matplotlib runner
        capacity.plot("scale", args.json_out, os.path.join(REPO, "bench", "results", "scale_partitions.png"))

    print("\n| side | partitions | create s | RSS MB created | fds created | restart: accept ms | all leaders s "
          "| RSS MB restarted | fds restarted | produce records/s | broker CPU s/M | p99 ms | peak fds | peak RSS MB "
          "| errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "partitions" not in r:
            continue
        c, s, p, pk = r.get("created", {}), r.get("restarted", {}), r.get("produce", {}), r.get("during_produce_peak", {})
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["side"], fmt(r["partitions"]), fmt(r.get("create_s")), fmt(c.get("rss_mb")), fmt(c.get("fds")),
            fmt(r.get("restart_accept_ms")), fmt(r.get("restart_all_leaders_s")), fmt(s.get("rss_mb")),
            fmt(s.get("fds")), fmt(p.get("records_per_s")), fmt(p.get("broker_cpu_per_million")),
            fmt(p.get("p99_ms")), fmt(pk.get("fds")), fmt(pk.get("rss_mb")),
            r.get("error") or p.get("errors") or "none"))
    print("\n| side | idle + busy connections | set-up s | negotiated | still answering | busy records/s "
          "| broker CPU s/M | RSS before MB | peak RSS MB | peak fds | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "idle_connections" not in r:
            continue
        print("| %s | %s + %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["side"], fmt(r["idle_connections"]), r["busy_connections"], fmt(r.get("setup_s")),
            fmt(r.get("idle_ready")), fmt(r.get("idle_alive")), fmt(r.get("records_per_s")),
            fmt(r.get("broker_cpu_per_million")),
            fmt(r.get("before", {}).get("rss_mb")), fmt(r.get("peak", {}).get("rss_mb")),
            fmt(r.get("peak", {}).get("fds")), r.get("error") or r.get("errors") or "none"))
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
