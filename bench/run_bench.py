#!/usr/bin/python3
"""The standard benchmark set: Sluice single node and librdkafka's mock cluster, side by side.

    cmake --build build -j2 --target sluice sluice_bench
    /usr/bin/python3 bench/run_bench.py                       # everything, ~2-3 minutes
    /usr/bin/python3 bench/run_bench.py --quick               # smaller counts, ~1 minute
    /usr/bin/python3 bench/run_bench.py --only target         # just the sluice-vs-mock figures

Sets (bench/README.md explains each):
  startup   broker start to first accepted TCP connection (median of 5 starts, fresh log dir)
  idle_rss  RSS of an idle node with one 100-partition topic (and of an empty node)
  matrix    produce + consume: 100 B and 1 KB records x acks 1 and -1 x 1 and 6 partitions
  latency   end-to-end latency at a fixed rate (100 B, 1 partition, acks 1 and -1)
  consume   the consume target: librdkafka's consumer vs a raw Fetch client (fetch_capacity.py) on the
            same log, with the CPU seconds of client and broker, to tell the broker's limit from the client's
  target    the project target: Sluice >= 1.5x the mock cluster's produce rate, 100 B records,
            4 partitions, acks=1 and acks=all; sluice and mock runs alternate, median of 3
  cluster   a ZooKeeper + 3 Sluice brokers, topics RF 3 with min.insync.replicas=2: produce-to-ack and
            end-to-end latency with acks=all at moderate rates, produce/consume throughput
            (--only cluster; not in the default run, it needs Debian's zookeeper package)
  capacity  Sluice against Apache Kafka 4.4 with the load generator sluice_load (bench/capacity.py, issue #23):
            `--reference kafka` or `--only capacity`, run alone; table and bench/results/latest.json

    /usr/bin/python3 bench/run_bench.py --reference kafka                 # ~30-40 minutes
    /usr/bin/python3 bench/run_bench.py --reference kafka --quick --repeat 1 --topologies single

Prints a markdown report (also written to --out). Loopback only; every process started here is
stopped here by its PID. The machine (nproc, lscpu) and the load average around each set are
recorded, since the 2 cores are shared.
"""
import argparse
import json
import os
import platform
import re
import resource
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from sluice_harness import Broker, ZooKeeper  # noqa: E402
import capacity  # noqa: E402  (bench/capacity.py: --reference kafka)


def load():
    return open("/proc/loadavg").read().split()[0]


def machine():
    out = {"nproc": subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()}
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for key in ("Model name", "CPU(s)", "Thread(s) per core", "CPU max MHz", "L3 cache", "Hypervisor vendor"):
        m = re.search(r"^%s:\s*(.+)$" % re.escape(key), lscpu, re.M)
        if m:
            out[key] = m.group(1).strip()
    mem = open("/proc/meminfo").read()
    m = re.search(r"MemTotal:\s*(\d+) kB", mem)
    out["memory"] = "%.1f GiB" % (int(m.group(1)) / 1048576) if m else "?"
    out["kernel"] = platform.release()
    return out


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


class Runner:
    def __init__(self, args):
        self.args = args
        self.rows = []  # JSON objects from sluice_bench

    def bench(self, target_args, extra, timeout=180):
        cmd = [self.args.bench_bin, "--json", "--timeout", "60"] + target_args + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        res = []
        for line in p.stdout.splitlines():
            if line.startswith("JSON "):
                res.append(json.loads(line[5:]))
            elif line.strip():
                print("   " + line, flush=True)
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            print("   ! sluice_bench exit %d: %s" % (p.returncode, err), flush=True)
            if not res:
                res.append({"error": err})
        for r in res:
            r["load"] = load()
        return res


def stop_broker(b):
    """Stops (if still running) and cleans up a single node; returns whether it was still alive."""
    alive = b.alive()
    if alive:
        b.stop()
    b.close()
    return alive


def cpu_seconds(pid):
    """utime + stime of a process, seconds (/proc/PID/stat fields 14 and 15)."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def fmt(v, unit=""):
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return ("%.0f" % v if v >= 100 else "%.2f" % v) + unit
    return str(v) + unit


def latency_table(md, rows):
    md.append("| target | RF | acks | rate/s | received | ack p50 ms | ack p99 ms | ack max ms "
              "| e2e p50 ms | e2e p99 ms | e2e p99.9 ms | e2e max ms | load |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in rows:
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s" % (
            x.get("label"), x.get("replication_factor", "-"), x.get("acks"), fmt(x.get("achieved_rate")),
            fmt(x.get("received")), fmt(x.get("ack_p50_ms")), fmt(x.get("ack_p99_ms")), fmt(x.get("ack_max_ms")),
            fmt(x.get("p50_ms")), fmt(x.get("p99_ms")), fmt(x.get("p99_9_ms")), fmt(x.get("max_ms")),
            x.get("load"), (" error: " + x["error"]) if x.get("error") else ""))
    md.append("")


def throughput_table(md, rows):
    """Produce/consume rows (size, acks, partitions, sluice_bench JSON objects) as a markdown table."""
    md.append("| record | acks | partitions | records | produce rec/s | produce MB/s | consume rec/s | consume MB/s | load |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for size, acks, parts, res in rows:
        p = next((x for x in res if x.get("mode") == "produce"), {})
        c = next((x for x in res if x.get("mode") == "consume"), {})
        err = p.get("error") or c.get("error")
        md.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s |%s" % (
            "100 B" if size == 100 else "1 KB", acks, parts, fmt(p.get("records")),
            fmt(p.get("records_per_s")), fmt(p.get("mb_per_s")), fmt(c.get("records_per_s")),
            fmt(c.get("mb_per_s")), p.get("load", "-"), (" error: " + err) if err else ""))
    md.append("")


class Cluster:
    """A ZooKeeper and `size` Sluice brokers on loopback ports, each its own data dir (stopped by PID)."""

    def __init__(self, binary, size=3):
        self.zk = ZooKeeper()
        self.brokers = []
        for i in range(1, size + 1):
            self.brokers.append(Broker(binary, {
                "broker.id": str(i),
                "zookeeper.connect": self.zk.connect + "/sluice",
                "zookeeper.session.timeout.ms": "10000",
                "default.replication.factor": str(min(3, size)),
                "offsets.topic.replication.factor": str(min(3, size)),
            }))

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self):
        self.zk.start()
        for b in self.brokers:
            b.start(ready_timeout=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # bounded: every broker registered
            out = subprocess.run([os.environ.get("KCAT", "kcat"), "-b", self.bootstrap, "-L", "-m", "5"],
                                 capture_output=True, text=True, timeout=30).stdout
            m = re.search(r"(\d+) brokers:", out)
            if m and int(m.group(1)) >= len(self.brokers):
                return
            time.sleep(0.5)
        raise RuntimeError("the cluster did not form within 60 s")

    def rss_mib(self):
        return [rss_kib(b.proc.pid) / 1024 for b in self.brokers if b.alive()]

    def stop(self):
        dead = [b.bootstrap for b in self.brokers if not b.alive()]
        for b in self.brokers:
            if b.alive():
                b.stop()
        for b in self.brokers:
            b.close(failed=bool(dead))
        self.zk.close(failed=bool(dead))
        return dead


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--broker", default="", help="sluice (default build/broker/sluice; capacity: or build-tests/)")
    ap.add_argument("--bench-bin", default=os.path.join(REPO, "build", "bench", "sluice_bench"))
    ap.add_argument("--quick", action="store_true", help="smaller record counts")
    ap.add_argument("--only", default="",
                    help="comma list of sets: startup,idle_rss,matrix,consume,latency,target,cluster; "
                         "or capacity (alone)")
    ap.add_argument("--rates", default="1000,5000",
                    help="cluster set: comma list of latency rates, records/s (default 1000,5000)")
    ap.add_argument("--duration", type=float, default=0,
                    help="latency runs: seconds of sending (default 5, 3 quick); capacity: measured seconds per "
                         "run (default 5, 1 quick)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side of the target and capacity comparisons")
    ap.add_argument("--out", default="", help="also write the markdown report here")
    capacity.add_arguments(ap)
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    if args.reference == "kafka" or "capacity" in only:
        if [s for s in only if s != "capacity"]:
            ap.error("the capacity set (--reference kafka) runs alone; drop the other --only sets")
        return capacity.main(args)
    args.broker = args.broker or os.path.join(REPO, "build", "broker", "sluice")
    for path, what in ((args.broker, "broker"), (args.bench_bin, "sluice_bench")):
        if not os.access(path, os.X_OK):
            print("missing %s: %s (cmake --build build -j2 --target sluice sluice_bench)" % (what, path))
            return 2
    sets = [s for s in args.only.split(",") if s] or ["startup", "idle_rss", "matrix", "consume", "latency", "target"]
    dur = str(args.duration or (3 if args.quick else 5))
    r = Runner(args)
    n100 = 100000 if args.quick else 300000
    n1k = 30000 if args.quick else 100000
    md = []
    mach = machine()
    md.append("Machine: %s; nproc %s; %s; kernel %s; load average at start %s."
              % (mach.get("Model name", "?"), mach["nproc"], mach["memory"], mach["kernel"], load()))
    md.append("")
    print("# " + md[0], flush=True)

    if "startup" in sets:
        print("# startup", flush=True)
        times = []
        for _ in range(5):
            b = Broker(args.broker)
            b._write_config()
            argv = [b.binary, "--config", os.path.join(b.dir, "server.properties")]
            with open(b.log_path, "ab") as logf:
                t0 = time.monotonic()
                b.proc = subprocess.Popen(argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL)
                deadline = t0 + 10
                ok = False
                while time.monotonic() < deadline and b.proc.poll() is None:
                    try:
                        with socket.create_connection(("127.0.0.1", b.port), timeout=0.2):
                            ok = True
                            break
                    except OSError:
                        time.sleep(0.0005)
                t = time.monotonic() - t0
            if ok:
                times.append(t * 1000)
            b.stop()
            b.close()
        md.append("### Startup to first accepted connection")
        md.append("")
        if times:
            md.append("%d starts, fresh log dir each: median %.1f ms, min %.1f ms, max %.1f ms "
                      "(process spawn included; load %s)." % (len(times), statistics.median(times),
                                                             min(times), max(times), load()))
        else:
            md.append("no start accepted a connection within 10 s")
        md.append("")
        print("   " + md[-2], flush=True)

    if "idle_rss" in sets:
        print("# idle RSS", flush=True)
        b = Broker(args.broker)
        b.start()
        time.sleep(1)
        empty = rss_kib(b.proc.pid)
        r.bench(["--bootstrap", b.bootstrap], ["--mode", "create", "--topic", "idle100", "--partitions", "100"])
        time.sleep(3)
        with100 = rss_kib(b.proc.pid)
        files = sum(len(fs) for _, _, fs in os.walk(b.data_dir))
        b.stop()
        b.close()
        md.append("### Idle RSS")
        md.append("")
        md.append("Empty node: %.1f MiB. After creating one topic of 100 partitions and 3 s idle: %.1f MiB "
                  "(%d files under log.dirs)." % (empty / 1024, with100 / 1024, files))
        md.append("")
        print("   " + md[-2], flush=True)

    if "matrix" in sets:
        print("# produce/consume matrix (single node)", flush=True)
        b = Broker(args.broker)
        b.start()
        rows = []
        for size, n in ((100, n100), (1024, n1k)):
            for acks in ("1", "-1"):
                for parts in (1, 6):
                    res = r.bench(["--bootstrap", b.bootstrap, "--label", "sluice"],
                                  ["--mode", "produce,consume", "--records", str(n), "--size", str(size),
                                   "--acks", acks, "--partitions", str(parts)])
                    rows.append((size, acks, parts, res))
        rss = rss_kib(b.proc.pid)
        alive = stop_broker(b)
        md.append("### Produce and consume, single node (records/s, MB/s of values)")
        md.append("")
        throughput_table(md, rows)
        md.append("Broker RSS after the matrix: %.1f MiB%s." % (rss / 1024, "" if alive else " (THE BROKER DIED)"))
        md.append("")

    if "consume" in sets:
        print("# consume: librdkafka's consumer vs a raw Fetch client, same log", flush=True)
        b = Broker(args.broker)
        b.start()
        n = 1000000 if args.quick else 3000000
        rows = []
        for parts in (1, 4):
            topic = "consume-%d" % parts
            r.bench(["--bootstrap", b.bootstrap], ["--mode", "produce", "--topic", topic, "--records", str(n),
                                                   "--size", "100", "--partitions", str(parts)])
            for _ in range(2):
                c0, b0 = children_cpu_seconds(), cpu_seconds(b.proc.pid)
                res = r.bench(["--bootstrap", b.bootstrap], ["--mode", "consume", "--topic", topic,
                                                             "--records", str(n), "--partitions", str(parts)])
                c1, b1 = children_cpu_seconds(), cpu_seconds(b.proc.pid)
                c = next((x for x in res if x.get("mode") == "consume"), {})
                rows.append(("librdkafka consumer (sluice_bench)", parts, c.get("records"), c.get("records_per_s"),
                             c.get("seconds"), c1 - c0, b1 - b0, c.get("error"), load()))
                cmd = ["/usr/bin/python3", os.path.join(HERE, "fetch_capacity.py"), "--bootstrap", b.bootstrap,
                       "--topic", topic, "--partitions", str(parts)]
                c0, b0 = children_cpu_seconds(), cpu_seconds(b.proc.pid)
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                c1, b1 = children_cpu_seconds(), cpu_seconds(b.proc.pid)
                m = dict(kv.split("=", 1) for kv in p.stdout.split()[1:]) if p.returncode == 0 else {}
                print("   " + (p.stdout.strip() or p.stderr.strip()), flush=True)
                rows.append(("raw Fetch v4, 1 MiB per partition (fetch_capacity.py)", parts, m.get("records"),
                             float(m["records_per_s"]) if m else None, m.get("seconds"), c1 - c0, b1 - b0,
                             None if m else (p.stderr.strip() or "exit %d" % p.returncode), load()))
        alive = stop_broker(b)
        md.append("### Consume: client limit vs broker limit (100 B records, single node)")
        md.append("")
        md.append("| reader | partitions | records | rec/s | seconds | reader CPU s | broker CPU s | load |")
        md.append("|---|---|---|---|---|---|---|---|")
        for who, parts, recs, rate, secs, ccpu, bcpu, err, ld in rows:
            md.append("| %s | %d | %s | %s | %s | %.2f | %.2f | %s |%s" % (
                who, parts, fmt(recs), fmt(rate), secs or "-", ccpu, bcpu, ld, (" error: " + err) if err else ""))
        md.append("")
        if not alive:
            md.append("THE BROKER DIED during the consume set.")
            md.append("")

    if "latency" in sets:
        print("# end-to-end latency", flush=True)
        b = Broker(args.broker)
        b.start()
        lat = []
        for acks in ("1", "-1"):
            lat += r.bench(["--bootstrap", b.bootstrap, "--label", "sluice"],
                           ["--mode", "latency", "--rate", "1000", "--duration", dur,
                            "--size", "100", "--acks", acks, "--partitions", "1", "-X", "linger.ms=0"])
        b.stop()
        b.close()
        for acks in ("1", "-1"):
            lat += r.bench(["--mock", "--label", "mock"],
                           ["--mode", "latency", "--rate", "1000", "--duration", dur,
                            "--size", "100", "--acks", acks, "--partitions", "1", "-X", "linger.ms=0"])
        md.append("### End-to-end latency (producer send to consumer receipt, same process)")
        md.append("")
        md.append("100 B records, 1 partition, linger.ms=0, consumer fetch.wait.max.ms=100.")
        md.append("")
        latency_table(md, lat)

    if "target" in sets:
        print("# target: sluice vs mock, 100 B, 4 partitions", flush=True)
        b = Broker(args.broker)
        b.start()
        side = {}
        for acks in ("1", "-1"):
            for i in range(args.repeat):
                for label, targ in (("sluice", ["--bootstrap", b.bootstrap]), ("mock", ["--mock"])):
                    res = r.bench(targ + ["--label", label],
                                  ["--mode", "produce", "--records", str(n100), "--size", "100",
                                   "--acks", acks, "--partitions", "4"])
                    side.setdefault((label, acks), []).extend(res)
        b.stop()
        b.close()
        md.append("### Target: Sluice >= 1.5x the mock cluster's produce rate (100 B, 4 partitions)")
        md.append("")
        md.append("Same program, same client settings (librdkafka defaults: linger.ms 5, batch.num.messages"
                  " 10000), %d records per run, sluice and mock runs alternating, median of %d."
                  % (n100, args.repeat))
        md.append("")
        md.append("| acks | sluice rec/s (runs) | mock rec/s (runs) | sluice / mock | target 1.5x |")
        md.append("|---|---|---|---|---|")
        for acks in ("1", "-1"):
            s = [x.get("records_per_s", 0) for x in side.get(("sluice", acks), []) if not x.get("error")]
            m = [x.get("records_per_s", 0) for x in side.get(("mock", acks), []) if not x.get("error")]
            if s and m:
                ratio = statistics.median(s) / statistics.median(m)
                md.append("| %s | %.0f (%s) | %.0f (%s) | %.2fx | %s |" % (
                    "1" if acks == "1" else "all", statistics.median(s), ", ".join("%.0f" % v for v in s),
                    statistics.median(m), ", ".join("%.0f" % v for v in m), ratio,
                    "met" if ratio >= 1.5 else "NOT met"))
            else:
                md.append("| %s | %s | %s | - | runs failed |" % (acks, s, m))
        md.append("")
    if "cluster" in sets:
        print("# 3-broker cluster (ZooKeeper), RF 3, min.insync.replicas=2", flush=True)
        if not ZooKeeper.available():
            md.append("3-broker cluster: skipped (no ZooKeeper: apt-get install zookeeper)")
        else:
            c = Cluster(args.broker)
            try:
                c.start()
                rf3 = ["--replication-factor", "3", "--topic-config", "min.insync.replicas=2"]
                lat = []
                for rate in [x for x in args.rates.split(",") if x]:
                    for acks in ("-1", "1"):
                        lat += r.bench(["--bootstrap", c.bootstrap, "--label", "cluster"],
                                       ["--mode", "latency", "--rate", rate, "--duration", dur, "--size", "100",
                                        "--acks", acks, "--partitions", "1", "-X", "linger.ms=0"] + rf3)
                thr = []
                for size, n in ((100, n100), (1024, n1k)):
                    for acks in ("-1", "1"):
                        for parts in (4,) if size == 1024 else (1, 4):
                            res = r.bench(["--bootstrap", c.bootstrap, "--label", "cluster"],
                                          ["--mode", "produce,consume", "--records", str(n), "--size", str(size),
                                           "--acks", acks, "--partitions", str(parts)] + rf3)
                            thr.append((size, acks, parts, res))
                rss = c.rss_mib()
            finally:
                dead = c.stop()
            md.append("### 3-broker cluster: latency (RF 3, min.insync.replicas=2)")
            md.append("")
            md.append("ZooKeeper + 3 Sluice brokers on loopback (same 2 cores), bootstrap list of all three; 100 B "
                      "records, 1 partition, linger.ms=0, consumer fetch.wait.max.ms=100. ack = send to delivery "
                      "report (Produce response); e2e = send to consumer receipt (HW passed the record).")
            md.append("")
            latency_table(md, lat)
            md.append("### 3-broker cluster: produce and consume (RF 3, min.insync.replicas=2)")
            md.append("")
            throughput_table(md, thr)
            md.append("Broker RSS after the cluster set: %s MiB%s." % (
                ", ".join("%.1f" % x for x in rss), (" (DIED: %s)" % ", ".join(dead)) if dead else ""))
            md.append("")
    md.append("Load average at the end: %s." % load())
    text = "\n".join(md) + "\n"
    print()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
