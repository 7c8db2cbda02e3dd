#!/usr/bin/python3
"""Broker capacity, Sluice against Apache Kafka 4.4 side by side (issue #23, "Side by side").

Called by `bench/run_bench.py --reference kafka` (or `--only capacity`); bench/README.md, section "Side by side
against Kafka 4.4", describes the sets, the output and the JSON names. The same generator (bench/load's
sluice_load) loads both brokers on the same machine, Sluice and Kafka runs alternating, median of --repeat runs.

Topologies: `single` (one Sluice node; one Kafka KRaft node, broker+controller) and `rf3` (ZooKeeper + 3 Sluice
brokers; a 3-node Kafka KRaft quorum of combined nodes, compat/kafka/kafka_reference.py's KafkaCluster; topics of
RF 3 with min.insync.replicas=2 on both). Both sides of a topology run at the same time (the idle one waits) so that
the runs can alternate without restarting JVMs; every process started here is stopped here by its PID.

Sets per topology: `produce` (max rate, 100 B and 1 KB records, acks=1 and acks=all), `latency` (fixed rate at
half of Kafka's median saturation throughput of the same set in this run: p50/p99/p99.9), `consume` (sluice_load's
raw Fetch readers over a topic produced for it), `perftest` (Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test against both).
"""
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
from sluice_harness import Broker, ZooKeeper  # noqa: E402
import kafka_reference as kr  # noqa: E402

SETS = ("produce", "latency", "consume", "perftest")
TOPOLOGIES = ("single", "rf3")
# Partitions and connections (sluice_load --connections for produce, --consumers for fetch) per topology.
LAYOUT = {"single": {"partitions": 4, "connections": 4, "rf": 1},
          "rf3": {"partitions": 6, "connections": 3, "rf": 3}}
SIZE_NAME = {100: "100B", 1024: "1KB"}
ACKS_NAME = {"1": "acks1", "-1": "acksall"}
# The targets, as ratios sluice / kafka.
TARGETS = {"throughput": (">=", 3.0), "cpu_per_million": ("<=", 0.2), "p999_ms_at_half_kafka_saturation": ("<=", 0.2)}
TARGET_ROW = re.compile(r"^produce_[0-9A-Z]+_acks(?:1|all)_(?:single|rf3)_(%s)$" % "|".join(TARGETS))


def log(msg):
    print(msg, flush=True)


def load_avg():
    return open("/proc/loadavg").read().split()[0]


def first_existing(*paths):
    for p in paths:
        if os.access(p, os.X_OK):
            return p
    return paths[0]


# ---------------------------------------------------------------------------------------------
# Deleting a run's topic (DeleteTopics v1 on a raw socket), so that a long run does not fill the disk


def delete_topic(bootstrap, topic, timeout=30.0):
    """DeleteTopics v1 for `topic`, tried on each broker of `bootstrap` until one answers without
    NOT_CONTROLLER (a Sluice broker on ZooKeeper that is not the controller answers 41). Returns the
    error code (0 = deleted), or None when no broker answered."""
    name = topic.encode()
    client = b"sluice-capacity"
    body = struct.pack(">ih", 1, len(name)) + name + struct.pack(">i", int(timeout * 1000))
    msg = struct.pack(">hhih", 20, 1, 11, len(client)) + client + body
    code = None
    for hp in bootstrap.split(","):
        host, port = hp.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=timeout + 5) as s:
                s.sendall(struct.pack(">i", len(msg)) + msg)
                data = b""
                deadline = time.monotonic() + timeout + 5
                while time.monotonic() < deadline:  # bounded by the socket timeout and the deadline
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                        break
            # size, correlation id, throttle, [name, error]: one topic
            (n,) = struct.unpack(">i", data[12:16])
            if n < 1:
                continue
            (nlen,) = struct.unpack(">h", data[16:18])
            (code,) = struct.unpack(">h", data[18 + nlen:20 + nlen])
            if code != 41:
                return code
        except (OSError, struct.error):
            continue
    return code


# ---------------------------------------------------------------------------------------------
# The two sides: each has bootstrap, pids, start(), close(failed)


class SluiceSide:
    """One Sluice node, or a ZooKeeper + 3 Sluice brokers (as bench/run_bench.py's `cluster` set)."""

    label = "sluice"

    def __init__(self, binary, topology):
        self.zk = None
        self.brokers = []
        if topology == "single":
            self.brokers.append(Broker(binary, {"group.initial.rebalance.delay.ms": "0"}))
        else:
            self.zk = ZooKeeper()
            for i in range(1, 4):
                self.brokers.append(Broker(binary, {
                    "broker.id": str(i),
                    "zookeeper.connect": self.zk.connect + "/sluice",
                    "zookeeper.session.timeout.ms": "10000",
                    "default.replication.factor": "3",
                    "offsets.topic.replication.factor": "3",
                    "min.insync.replicas": "2",
                    "group.initial.rebalance.delay.ms": "0",
                }))

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers)

    @property
    def pids(self):
        return [b.proc.pid for b in self.brokers if b.proc is not None]

    def start(self):
        if self.zk is not None:
            if not ZooKeeper.available():
                raise RuntimeError("no ZooKeeper (apt-get install zookeeper) for the rf3 topology")
            self.zk.start()
        for b in self.brokers:
            b.start(ready_timeout=30)
        if len(self.brokers) > 1:  # bounded: every broker registered, as Metadata says on each
            want = {1, 2, 3}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if all(want <= set(kr.probe(b.port)) for b in self.brokers):
                        return
                except (OSError, struct.error):
                    pass
                time.sleep(0.5)
            raise RuntimeError("the Sluice cluster did not form within 60 s")

    def alive(self):
        return all(b.alive() for b in self.brokers)

    def close(self, failed=False):
        failed = failed or not self.alive()
        for b in self.brokers:
            if b.alive():
                try:
                    b.stop()
                except RuntimeError:
                    pass
            b.close(failed)
        if self.zk is not None:
            self.zk.close(failed)


class KafkaSide:
    """Apache Kafka 4.4: one KRaft node, or a quorum of 3 combined nodes (kafka_reference.py)."""

    label = "kafka"
    # Kafka's own default heap (kafka-server-start.sh: -Xmx1G -Xms1G); deleted topics' files go after 1 s.
    HEAP = "1G"

    def __init__(self, cache, topology):
        overrides = {"log.segment.delete.delay.ms": 1000, "group.initial.rebalance.delay.ms": 0}
        if topology == "single":
            self.ref = kr.KafkaReference(cache, overrides, heap=self.HEAP)
        else:
            overrides["min.insync.replicas"] = 2
            self.ref = kr.KafkaCluster(cache, 3, overrides, heap=self.HEAP)

    @property
    def bootstrap(self):
        return self.ref.bootstrap

    @property
    def pids(self):
        return self.ref.pids if hasattr(self.ref, "pids") else [self.ref.pid]

    @property
    def home(self):
        return (self.ref.nodes[0] if hasattr(self.ref, "nodes") else self.ref).home

    def start(self):
        self.ref.start()

    def alive(self):
        return self.ref.alive()

    def close(self, failed=False):
        self.ref.close(failed or not self.ref.alive())


# ---------------------------------------------------------------------------------------------
# Runs


class Capacity:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.duration = args.duration or (1 if args.quick else 5)
        self.warmup = 0.5 if args.quick else 2
        self.repeat = max(1, args.repeat)
        self.sizes = [int(x) for x in args.sizes.split(",") if x]
        self.acks = ["-1" if a in ("all", "-1") else a for a in args.acks.split(",") if a]
        self.rows = []  # (name, unit, {side: [values]}, {side: [errors]})
        self.notes = []
        self.seq = 0

    def topic(self, what):
        self.seq += 1
        return "cap-%s-%d" % (what, self.seq)

    # sluice_load -------------------------------------------------------------------------------

    def load(self, side, extra, timeout):
        """One sluice_load --json run against `side`; returns (json or None, error text or None)."""
        cmd = [self.args.load_bin, "-b", side.bootstrap, "--json",
               "--broker-pid", ",".join(str(p) for p in side.pids)] + extra
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, "sluice_load timed out after %.0f s" % timeout
        res = None
        try:
            res = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else None
        except ValueError:
            res = None
        err = None
        if p.returncode != 0 or res is None:
            err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        elif res.get("errors") or res.get("failed_connections") or res.get("unanswered_requests"):
            err = "errors %s, failed connections %s, unanswered %s" % (
                res.get("errors"), res.get("failed_connections"), res.get("unanswered_requests"))
        return res, err

    def produce_args(self, topology, topic, size, acks, rate=0, records=0):
        lay = LAYOUT[topology]
        a = ["--topic", topic, "--partitions", str(lay["partitions"]), "--replication-factor", str(lay["rf"]),
             "--connections", str(lay["connections"]), "--record-size", str(size), "--acks", acks,
             "--batch-records", str(self.args.batch_records)]
        if records:
            a += ["--records", str(records), "--warmup", "0", "--duration", "600"]
        else:
            a += ["--warmup", str(self.warmup), "--duration", str(self.duration)]
        if rate:
            a += ["--rate", str(int(rate))]
        return a

    def run_timeout(self):
        return self.warmup + self.duration + 90

    def alternate(self, sides, run_one, what):
        """Runs run_one(side, rep) for rep in range(repeat), Sluice then Kafka each round (Kafka first on odd
        rounds, so neither side always follows the other); returns {label: [result json]} and errors."""
        out = {s.label: [] for s in sides}
        errs = {s.label: [] for s in sides}
        for rep in range(self.repeat):
            order = sides if rep % 2 == 0 else list(reversed(sides))
            for side in order:
                res, err = run_one(side, rep)
                line = "   %-6s %-40s" % (side.label, what)
                if res is not None:
                    line += " %12.0f rec/s  broker %s  client %s CPU s/M  p50/p99/p99.9 %s/%s/%s ms  load %s" % (
                        res.get("records_per_s") or 0, fmt(res.get("broker_cpu_per_million")),
                        fmt(res.get("client_cpu_per_million")), fmt(lat_ms(res, "p50")), fmt(lat_ms(res, "p99")),
                        fmt(lat_ms(res, "p999")), load_avg())
                if err:
                    line += "  ! " + err
                    errs[side.label].append(err)
                log(line)
                if res is not None and not err:
                    out[side.label].append(res)
        return out, errs

    def add(self, name, unit, results, errs, key):
        vals = {label: [v for v in (key(r) for r in rs) if v is not None] for label, rs in results.items()}
        self.rows.append((name, unit, vals, errs))

    def add_rate_and_cpu(self, base, results, errs):
        """The rows every set has: `<base>_throughput` (records/s) and `<base>_cpu_per_million` (broker CPU)."""
        self.add(base + "_throughput", "records/s", results, errs, lambda r: r.get("records_per_s"))
        self.add(base + "_cpu_per_million", "broker CPU s per 10^6 records", results, errs,
                 lambda r: r.get("broker_cpu_per_million"))

    def add_values(self, name, unit, vals):
        self.rows.append((name, unit, vals, {}))

    def delete(self, side, topic):
        code = delete_topic(side.bootstrap, topic)
        if code not in (0, None):
            log("   (DeleteTopics %s on %s: error %d)" % (topic, side.label, code))

    # sets --------------------------------------------------------------------------------------

    def warm(self, sides, topology):
        """One uncounted max-rate run per side (the JVM's JIT, the page cache, Sluice's first segments)."""
        secs = 1 if self.quick else 5
        for side in sides:
            topic = self.topic("warm")
            a = self.produce_args(topology, topic, 100, "1")
            a[a.index("--duration") + 1] = str(secs)
            res, err = self.load(side, a, self.run_timeout() + secs)
            log("   %-6s warm-up run: %s" % (side.label, err or "%.0f rec/s" % (res or {}).get("records_per_s", 0)))
            self.delete(side, topic)

    def produce(self, sides, topology, sets):
        for size in self.sizes:
            for acks in self.acks:
                base = "produce_%s_%s_%s" % (SIZE_NAME.get(size, "%dB" % size), ACKS_NAME[acks], topology)

                def max_rate(side, rep):
                    topic = self.topic("p")
                    r = self.load(side, self.produce_args(topology, topic, size, acks), self.run_timeout())
                    self.delete(side, topic)
                    return r
                res, errs = self.alternate(sides, max_rate, base + " max rate")
                self.add_rate_and_cpu(base, res, errs)
                self.add(base + "_client_cpu_per_million", "sluice_load CPU s per 10^6 records", res, errs,
                         lambda r: r.get("client_cpu_per_million"))
                self.add(base + "_p99_ms_at_max_rate", "ms", res, errs, lambda r: lat_ms(r, "p99"))
                if "latency" not in sets:
                    continue
                kafka = res.get("kafka") or []
                if not kafka:
                    self.notes.append("%s: no latency runs (no Kafka saturation figure)" % base)
                    continue
                rate = 0.5 * statistics.median(r["records_per_s"] for r in kafka)

                def fixed(side, rep, rate=rate):
                    topic = self.topic("l")
                    r = self.load(side, self.produce_args(topology, topic, size, acks, rate=rate), self.run_timeout())
                    self.delete(side, topic)
                    return r
                res, errs = self.alternate(sides, fixed, base + " at %.0f rec/s" % rate)
                suffix = "_at_half_kafka_saturation"
                self.add_values(base + "_offered_rate" + suffix, "records/s", {"sluice": [rate], "kafka": [rate]})
                self.add(base + "_achieved_rate" + suffix, "records/s", res, errs, lambda r: r.get("records_per_s"))
                for p in ("p50", "p99", "p999"):
                    self.add(base + "_%s_ms%s" % (p, suffix), "ms", res, errs, lambda r, p=p: lat_ms(r, p))
                self.add(base + "_cpu_per_million" + suffix, "broker CPU s per 10^6 records", res, errs,
                         lambda r: r.get("broker_cpu_per_million"))

    def consume_records(self, size):
        n = 200000 if self.quick else 3000000
        return n if size <= 100 else n // 5

    def consume(self, sides, topology):
        lay = LAYOUT[topology]
        for size in self.sizes:
            base = "consume_%s_%s" % (SIZE_NAME.get(size, "%dB" % size), topology)
            n = self.consume_records(size)

            def read(side, rep):
                topic = self.topic("c")
                _, err = self.load(side, self.produce_args(topology, topic, size, "1", records=n), 700)
                if err:
                    self.delete(side, topic)
                    return None, "producing the topic to read: " + err
                r = self.load(side, ["--mode", "fetch", "--topic", topic, "--consumers", str(lay["connections"]),
                                     "--duration", "600"], 700)
                self.delete(side, topic)
                return r
            res, errs = self.alternate(sides, read, "%s (%d records)" % (base, n))
            self.add_rate_and_cpu(base, res, errs)
            self.add(base + "_client_cpu_per_million", "sluice_load CPU s per 10^6 records", res, errs,
                     lambda r: r.get("client_cpu_per_million"))

    def perftest(self, sides, topology, kafka_home):
        """Kafka's own tools against both: kafka-producer-perf-test (max rate, --throughput -1) then
        kafka-consumer-perf-test over what it wrote. One JVM client each: the client may be the limit."""
        lay = LAYOUT[topology]
        env = dict(os.environ)
        env["KAFKA_PATH"] = kafka_home
        bindir = os.path.join(kafka_home, "bin")
        for size in self.sizes:
            n = self.consume_records(size) // (2 if self.quick else 1)
            for acks in self.acks:
                base = "perftest_produce_%s_%s_%s" % (SIZE_NAME.get(size, "%dB" % size), ACKS_NAME[acks], topology)

                def produce(side, rep):
                    topic = self.topic("pt")
                    cr = self.load(side, ["--topic", topic, "--partitions", str(lay["partitions"]),
                                          "--replication-factor", str(lay["rf"]), "--records", "1",
                                          "--batch-records", "1", "--warmup", "0", "--duration", "30"], 120)
                    if cr[1]:
                        return None, "creating the topic: " + cr[1]
                    cmd = [os.path.join(bindir, "kafka-producer-perf-test.sh"), "--topic", topic,
                           "--num-records", str(n), "--record-size", str(size), "--throughput", "-1",
                           "--producer-props", "bootstrap.servers=" + side.bootstrap, "acks=" + acks]
                    r = perf_tool(cmd, env, side.pids, parse_producer_perf)
                    if r[0] is not None and acks == self.acks[0]:
                        r[0]["topic"] = topic  # read back by the consumer test below
                    else:
                        self.delete(side, topic)
                    return r
                res, errs = self.alternate(sides, produce, base)
                self.add_rate_and_cpu(base, res, errs)
                self.add(base + "_p999_ms", "ms", res, errs, lambda r: r.get("p999_ms"))
                if acks != self.acks[0]:  # the consumer test reads what the first acks value's runs wrote
                    continue
                topics = {label: [r["topic"] for r in rs] for label, rs in res.items()}
                cbase = "perftest_consume_%s_%s" % (SIZE_NAME.get(size, "%dB" % size), topology)

                def consume(side, rep):
                    if rep >= len(topics[side.label]):
                        return None, "no topic written by the producer test"
                    topic = topics[side.label][rep]
                    cmd = [os.path.join(bindir, "kafka-consumer-perf-test.sh"), "--bootstrap-server", side.bootstrap,
                           "--topic", topic, "--messages", str(n), "--timeout", "30000"]
                    r = perf_tool(cmd, env, side.pids, parse_consumer_perf)
                    self.delete(side, topic)
                    return r
                res, errs = self.alternate(sides, consume, cbase)
                self.add_rate_and_cpu(cbase, res, errs)

    # the whole ----------------------------------------------------------------------------------

    def run(self):
        sets = [s for s in self.args.capacity_sets.split(",") if s]
        topologies = [t for t in self.args.topologies.split(",") if t]
        for name in sets:
            if name not in SETS:
                raise SystemExit("unknown capacity set %r (known: %s)" % (name, ",".join(SETS)))
        for name in topologies:
            if name not in TOPOLOGIES:
                raise SystemExit("unknown topology %r (known: %s)" % (name, ",".join(TOPOLOGIES)))
        log("# capacity: Sluice %s vs Apache Kafka %s; sets %s; topologies %s; %d runs per side, %s s + %s s "
            "warm-up each; load average %s" % (self.args.broker, kr.KAFKA_VERSION, ",".join(sets),
                                               ",".join(topologies), self.repeat, self.duration, self.warmup,
                                               load_avg()))
        for topology in topologies:
            log("# topology %s" % topology)
            sides = []
            failed = True
            try:
                sluice = SluiceSide(self.args.broker, topology)
                sides.append(sluice)
                kafka = KafkaSide(self.args.cache, topology)
                sides.append(kafka)
                t0 = time.monotonic()
                sluice.start()
                log("   sluice up: %s (pids %s), %.1f s" % (sluice.bootstrap, sluice.pids, time.monotonic() - t0))
                t0 = time.monotonic()
                kafka.start()
                log("   kafka up: %s (pids %s), %.1f s" % (kafka.bootstrap, kafka.pids, time.monotonic() - t0))
                self.warm(sides, topology)
                if "produce" in sets or "latency" in sets:
                    self.produce(sides, topology, sets)
                if "consume" in sets:
                    self.consume(sides, topology)
                if "perftest" in sets:
                    self.perftest(sides, topology, kafka.home)
                failed = False
            except kr.Unavailable as e:
                self.notes.append("%s: Kafka unavailable: %s" % (topology, e))
                log("   SKIP: " + self.notes[-1])
                failed = False
            except (RuntimeError, kr.ReferenceFailed) as e:
                self.notes.append("%s: %s" % (topology, e))
                log("   ERROR: " + self.notes[-1])
            finally:
                for side in sides:
                    if not side.alive():
                        self.notes.append("%s: %s was not running at the end" % (topology, side.label))
                    side.close(failed)
        return self.report()

    def report(self):
        out = []
        for name, unit, vals, errs in self.rows:
            s = statistics.median(vals["sluice"]) if vals.get("sluice") else None
            k = statistics.median(vals["kafka"]) if vals.get("kafka") else None
            row = {"name": name, "unit": unit, "sluice": s, "kafka": k,
                   "ratio": (s / k) if s is not None and k else None,
                   "sluice_runs": vals.get("sluice", []), "kafka_runs": vals.get("kafka", [])}
            m = TARGET_ROW.match(name)
            if m:
                op, target = TARGETS[m.group(1)]
                row["target_ratio"] = "%s %g" % (op, target)
                if row["ratio"] is not None:
                    row["met"] = row["ratio"] >= target if op == ">=" else row["ratio"] <= target
            e = {label: v for label, v in errs.items() if v}
            if e:
                row["errors"] = e
            out.append(row)
        path = self.args.json_out
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        md = ["### Sluice vs Apache Kafka %s (sluice_load, median of %d, %s s runs)" % (
            kr.KAFKA_VERSION, self.repeat, self.duration), "",
            "ratio = sluice / kafka; load average at the end %s." % load_avg(), "",
            "| name | unit | sluice | kafka | ratio | target |", "|---|---|---|---|---|---|"]
        for r in out:
            tgt = r.get("target_ratio", "")
            if "met" in r:
                tgt += " met" if r["met"] else " NOT met"
            if r.get("errors"):
                tgt += " errors: %s" % "; ".join("%s %d" % (k, len(v)) for k, v in r["errors"].items())
            md.append("| %s | %s | %s | %s | %s | %s |" % (r["name"], r["unit"], fmt(r["sluice"]), fmt(r["kafka"]),
                                                          fmt(r["ratio"]), tgt))
        md.append("")
        for n in self.notes:
            md.append("- " + n)
        text = "\n".join(md) + "\n"
        print()
        print(text)
        log("JSON: %s (%d rows)" % (path, len(out)))
        if self.args.out:
            with open(self.args.out, "w") as f:
                f.write(text)
        missing = [r["name"] for r in out if r["sluice"] is None or r["kafka"] is None]
        if missing:
            log("rows without a figure on one side: %s" % ", ".join(missing))
        return 0 if out and not missing and not self.notes else 1


def lat_ms(r, p):
    """A percentile in ms: sluice_load's latency_us, or a perf tool's parsed `<p>_ms`."""
    v = (r.get("latency_us") or {}).get(p)
    return v / 1000.0 if v is not None else r.get(p + "_ms")


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if v >= 100:
            return "{:,.0f}".format(v)
        return "%.3f" % v if v < 10 else "%.1f" % v
    return str(v)


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return None
    return total


def perf_tool(cmd, env, pids, parse):
    """Runs one of Kafka's perf tools (bounded), with the brokers' CPU over the whole run (tool start
    included: a few idle ticks); returns (dict with records_per_s, broker_cpu_per_million, ...) or an error."""
    t0 = cpu_ticks(pids)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "%s timed out" % os.path.basename(cmd[0])
    t1 = cpu_ticks(pids)
    r = parse(p.stdout)
    if p.returncode != 0 or r is None:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return None, "%s exit %d: %s" % (os.path.basename(cmd[0]), p.returncode, tail[-1] if tail else "")
    if t0 is not None and t1 is not None and r.get("records"):
        r["broker_cpu_per_million"] = (t1 - t0) / os.sysconf("SC_CLK_TCK") / (r["records"] / 1e6)
    return r, None


def parse_producer_perf(out):
    """kafka-producer-perf-test's summary line: `N records sent, X records/sec (Y MB/sec), A ms avg latency,
    M ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.`"""
    m = None
    for m in re.finditer(r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms 50th, ([\d.]+) ms 95th, "
                         r"([\d.]+) ms 99th, ([\d.]+) ms 99.9th", out):
        pass
    if m is None:
        return None
    return {"records": int(m.group(1)), "records_per_s": float(m.group(2)), "p50_ms": float(m.group(3)),
            "p99_ms": float(m.group(5)), "p999_ms": float(m.group(6))}


def parse_consumer_perf(out):
    """kafka-consumer-perf-test's CSV: a header naming `data.consumed.in.nMsg`, `nMsg.sec` and
    `fetch.nMsg.sec`, then one line."""
    lines = [x for x in out.splitlines() if x.strip()]
    for i, line in enumerate(lines):
        if "nMsg.sec" in line and i + 1 < len(lines):
            head = [h.strip() for h in line.split(",")]
            vals = [v.strip() for v in lines[i + 1].split(",")]
            d = dict(zip(head, vals))
            try:  # fetch.nMsg.sec leaves out the group join (rebalance.time.ms); nMsg.sec includes it
                n = int(d["data.consumed.in.nMsg"])
                rate = float(d.get("fetch.nMsg.sec") or d["nMsg.sec"])
            except (KeyError, ValueError):
                return None
            return {"records": n, "records_per_s": rate} if n > 0 else None
    return None


def plot(kind, *files):
    """Runs bench/plots.py KIND FILES... under the pinned matplotlib of bench/requirements.txt, installed into
    build-tests/bench-venv on first use (PyPI). Raises CalledProcessError when plotting fails."""
    venv = os.path.join(REPO, "build-tests", "bench-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--require-hashes", "--only-binary", ":all:", "-r",
                        os.path.join(HERE, "requirements.txt")], check=True)
    subprocess.run([py, os.path.join(HERE, "plots.py"), kind] + list(files), check=True)


def add_binary_arguments(ap):
    """--broker, --load-bin and --cache with their defaults (build/ or build-tests/), for the scripts that run sides
    of their own (latency_curve.py, curves.py)."""
    ap.add_argument("--broker", default=first_existing(os.path.join(REPO, "build", "broker", "sluice"),
                                                       os.path.join(REPO, "build-tests", "broker", "sluice")))
    ap.add_argument("--load-bin", default=first_existing(
        os.path.join(REPO, "build", "bench", "load", "sluice_load"),
        os.path.join(REPO, "build-tests", "bench", "load", "sluice_load")))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))


def add_arguments(ap):
    """The capacity options of bench/run_bench.py's command line."""
    ap.add_argument("--reference", choices=["kafka"],
                    help="run the capacity sets against Sluice and Apache Kafka 4.4 side by side (issue #23)")
    ap.add_argument("--load-bin", default="", help="sluice_load (default build/ or build-tests/bench/load/sluice_load)")
    ap.add_argument("--cache", default="", help="compat cache with the Kafka 4.4 jars (default build/ or build-tests/"
                                               "compat-cache)")
    ap.add_argument("--capacity-sets", default=",".join(SETS), help="comma list of %s (default all)" % ",".join(SETS))
    ap.add_argument("--topologies", default=",".join(TOPOLOGIES), help="comma list of single,rf3 (default both)")
    ap.add_argument("--sizes", default="100,1024", help="capacity: record sizes in bytes (default 100,1024)")
    ap.add_argument("--acks", default="1,all", help="capacity: acks values (default 1,all)")
    ap.add_argument("--batch-records", type=int, default=100, help="capacity: records per batch (default 100)")
    ap.add_argument("--json-out", default=os.path.join(HERE, "results", "latest.json"),
                    help="capacity: JSON rows (default bench/results/latest.json)")


def main(args):
    """Entry from bench/run_bench.py (its parsed arguments)."""
    args.broker = args.broker or first_existing(os.path.join(REPO, "build", "broker", "sluice"),
                                                os.path.join(REPO, "build-tests", "broker", "sluice"))
    args.load_bin = args.load_bin or first_existing(os.path.join(REPO, "build", "bench", "load", "sluice_load"),
                                                    os.path.join(REPO, "build-tests", "bench", "load", "sluice_load"))
    if not args.cache:
        args.cache = next((c for c in (os.path.join(REPO, "build", "compat-cache"),
                                       os.path.join(REPO, "build-tests", "compat-cache"))
                           if os.path.isdir(os.path.join(c, "kafka-" + kr.KAFKA_VERSION))), kr.DEFAULT_CACHE)
    for path, what in ((args.broker, "broker"), (args.load_bin, "sluice_load")):
        if not os.access(path, os.X_OK):
            print("missing %s: %s (cmake --build build -j2 --target sluice sluice_load)" % (what, path))
            return 2
    return Capacity(args).run()
