#!/usr/bin/python3
"""Test controls: POST /v1/reset between test cases against a fresh broker per case (issue #18, acceptance 4).

    /usr/bin/python3 bench/reset_bench.py --broker build-tests/broker/sluice [--cases 100] [--records 20]
        [--modes A,B] [--override key=value ...] [--cache build-tests/compat-cache]

A program that prints figures, no assertions (DESIGN.md §6). One small test case, as a suite of integration tests
has hundreds of: the AdminClient creates a topic (1 partition), a producer sends 20 records and flushes, a consumer
of a new group subscribes, reads them, commits synchronously and closes; the case checks that it read 20. The
clients are confluent-kafka 2.16 (librdkafka 2.x) from the compat cache's venv (this program re-executes itself
there, as tests/integration/http_test.py does). Every case makes new clients, and uses the same topic and group
names, as a test suite would after a reset.

  A  one broker (sluice.test.faults.enable=true) for all cases; after each case POST /v1/reset (every topic,
     __consumer_offsets and __transaction_state included, is deleted). A case's time: the case plus the reset.
  B  a fresh broker for each case: spawn with an empty log dir, wait until its Kafka port accepts a TCP connection
     (polled every 1 ms), run the case, SIGTERM and wait for the exit. A case's time: start, case, stop.

Both modes use the same broker settings: group.initial.rebalance.delay.ms=0 (as test setups set it; Kafka's
3000 ms would add 3 s to every case of both modes) and whatever --override adds (e.g.
offsets.topic.num.partitions=1). Prints per mode the total seconds, per-case median and p90 in ms and their parts
(reset; start-to-ready and stop), the ratio B/A, and the failed cases (a case that read the wrong count).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import installers  # noqa: E402

TIMEOUT = 20  # seconds for one client step; a case over it counts as failed


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Broker:
    """A sluice process on free loopback ports with a fresh log dir; start() returns seconds to ready."""

    def __init__(self, binary, overrides):
        self.binary = binary
        self.overrides = overrides
        self.dir = tempfile.mkdtemp(prefix="sluice-reset-bench-")
        self.port = free_port()
        self.http_port = free_port()
        self.proc = None

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=15.0):
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        cfg = os.path.join(self.dir, "server.properties")
        with open(cfg, "w") as f:
            f.write("broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:%d\nadvertised.listeners=PLAINTEXT://127.0.0.1:%d\n"
                    "log.dirs=%s\nhttp.listeners=http://127.0.0.1:%d\n" % (self.port, self.port, data, self.http_port))
        args = [self.binary, "--config", cfg]
        for k, v in self.overrides.items():
            args += ["--override", "%s=%s" % (k, v)]
        log = open(os.path.join(self.dir, "broker.log"), "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("broker exited with %s; log in %s" % (self.proc.returncode, self.dir))
            if accepts(self.port):
                return time.monotonic() - t0
            time.sleep(0.001)
        raise RuntimeError("broker did not accept within %.0f s" % timeout)

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns (seconds, exit code)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return time.monotonic() - t0, rc

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


def post_reset(http_port):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/reset" % http_port, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        body = json.loads(r.read().decode())
        return r.status, body


def run_case(bootstrap, records):
    """One test case; returns the number of records the consumer read (== records when it passes)."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    topic, group = "bench-topic", "bench-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT)[topic].result(timeout=TIMEOUT)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(records):
        p.produce(topic, key=b"k%d" % i, value=b"value-%d" % i)
    if p.flush(TIMEOUT):
        return -1
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    n = 0
    deadline = time.monotonic() + TIMEOUT
    while n < records and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            n += 1
    if n:
        c.commit(asynchronous=False)
    c.close()
    del p, admin
    return n


def pct(values, q):
    """Nearest-rank percentile (q in 0..100)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def mode_a(binary, overrides, cases, records):
    overrides = dict(overrides, **{"sluice.test.faults.enable": "true"})
    b = Broker(binary, overrides)
    t_total = time.monotonic()
    try:
        ready = b.start()
        per_case, bodies, resets, reset_broker_us, failed = [], [], [], [], 0
        for i in range(cases):
            t0 = time.monotonic()
            n = run_case(b.bootstrap, records)
            t1 = time.monotonic()
            status, body = post_reset(b.http_port)
            t2 = time.monotonic()
            if n != records or status != 200:
                failed += 1
            per_case.append(t2 - t0)
            bodies.append(t1 - t0)
            resets.append(t2 - t1)
            reset_broker_us.append(body.get("took_us", 0))
        stop_s, rc = b.stop()
    finally:
        b.close()
    return {"total": time.monotonic() - t_total, "per_case": per_case, "case_body": bodies, "reset": resets,
            "reset_broker": [u / 1e6 for u in reset_broker_us], "ready": [ready], "stop": [stop_s], "failed": failed,
            "exit": [rc]}


def mode_b(binary, overrides, cases, records):
    per_case, readies, stops, bodies, exits, failed = [], [], [], [], [], 0
    t_total = time.monotonic()
    for i in range(cases):
        b = Broker(binary, overrides)
        try:
            t0 = time.monotonic()
            readies.append(b.start())
            t1 = time.monotonic()
            n = run_case(b.bootstrap, records)
            t2 = time.monotonic()
            stop_s, rc = b.stop()
            t3 = time.monotonic()
        finally:
            b.close()
        if n != records or rc != 0:
            failed += 1
        per_case.append(t3 - t0)
        bodies.append(t2 - t1)
        stops.append(stop_s)
        exits.append(rc)
    return {"total": time.monotonic() - t_total, "per_case": per_case, "ready": readies, "stop": stops,
            "case_body": bodies, "failed": failed, "exit": exits}


def ms(values):
    return "median %.1f ms, p90 %.1f ms" % (statistics.median(values) * 1000, pct(values, 90) * 1000)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY") or os.path.join(REPO, "build-tests", "broker", "sluice"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--records", type=int, default=20)
    ap.add_argument("--modes", default="A,B")
    ap.add_argument("--override", action="append", default=[], help="key=value for the broker, both modes")
    args = ap.parse_args()
    if not os.access(args.broker, os.X_OK):
        print("no sluice binary at %s (--broker or SLUICE_BINARY)" % args.broker)
        return 2
    # Always the venv's confluent-kafka 2.16 (Debian's python3-confluent-kafka 1.7 may be importable here too).
    if not os.environ.get("SLUICE_RESET_BENCH_REEXEC"):
        py = installers.venv(os.path.abspath(args.cache))
        os.environ["SLUICE_RESET_BENCH_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])
    import confluent_kafka
    overrides = {"group.initial.rebalance.delay.ms": "0"}
    for kv in args.override:
        k, v = kv.split("=", 1)
        overrides[k] = v
    print("# reset_bench: %d cases of %d records; broker %s; overrides %s; confluent-kafka %s (librdkafka %s); "
          "nproc %d, load %.2f" % (args.cases, args.records, args.broker, overrides, (lambda v: v[0] if isinstance(v, tuple) else v)(confluent_kafka.version()),
                                   confluent_kafka.libversion()[0], os.cpu_count(), os.getloadavg()[0]), flush=True)
    results = {}
    for m in args.modes.split(","):
        fn = mode_a if m == "A" else mode_b
        results[m] = r = fn(args.broker, overrides, args.cases, args.records)
        print("mode %s: total %.2f s; per case %s; failed cases %d; broker exit codes %s" % (
            m, r["total"], ms(r["per_case"]), r["failed"], sorted(set(r["exit"]))), flush=True)
        if m == "A":
            print("  case itself %s; reset (HTTP round trip) %s, the broker's took_us %s; the one start-to-ready "
                  "%.1f ms, stop %.1f ms" % (ms(r["case_body"]), ms(r["reset"]), ms(r["reset_broker"]),
                                             r["ready"][0] * 1000, r["stop"][0] * 1000), flush=True)
        else:
            print("  start-to-ready (spawn to Kafka port accepting) %s, min %.1f ms, max %.1f ms; case itself %s; "
                  "stop (SIGTERM to exit) %s" % (ms(r["ready"]), min(r["ready"]) * 1000, max(r["ready"]) * 1000,
                                                  ms(r["case_body"]), ms(r["stop"])), flush=True)
    if "A" in results and "B" in results:
        a, b = results["A"], results["B"]
        print("B/A: total %.2f, per-case median %.2f, p90 %.2f" % (
            b["total"] / a["total"], statistics.median(b["per_case"]) / statistics.median(a["per_case"]),
            pct(b["per_case"], 90) / pct(a["per_case"], 90)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
