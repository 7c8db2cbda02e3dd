#!/usr/bin/env python3
"""Network partitions and process faults against a 3-broker Sluice cluster on a real ZooKeeper, checked as Jepsen
checks Kafka: acknowledged-but-lost records, duplicates, reordering, uncommitted reads, divergent replicas.

    python3 tests/chaos/partitions.py --broker BUILD/broker/sluice --schedules N [--seed S] [--duration 60]

Each schedule: a fresh ZooKeeper and 3 brokers, each in its own network namespace (netns.py), a topic with RF 3
and min.insync.replicas=2, idempotent acks=all producers and a live consumer in a client namespace, random faults
for --duration seconds, then heal, settle, read everything back and compare the replicas' log bytes. Ends with
`partitions: N schedules, N acked, N lost, N divergent, N uncommitted reads`. Exit 0 pass, 1 fail, 77 skipped.
Details: tests/chaos/README.md.
"""
import argparse
import atexit
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import netns  # noqa: E402
import wire  # noqa: E402

SKIP = 77
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
TOPIC = "chaos"
BROKERS = (1, 2, 3)
HOSTS = {"zk": 10, "b1": 11, "b2": 12, "b3": 13, "cl": 20}
KAFKA_PORT = 9092
ZK_PORT = 2181
SESSION_TIMEOUT_MS = 6000
FAULT_KINDS = ("leader-isolated", "leader-link-down", "leader-zk", "leader-followers", "split", "flapping",
               "slow-link", "lossy-link", "kill-broker", "pause-broker", "kill-zk", "pause-zk")
NETWORK_KINDS = FAULT_KINDS[:8]
PROCESS_KINDS = FAULT_KINDS[8:]


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


# ------------------------------------------------------------------------------------------------ seeds, plan

def schedule_seed(seed, index):
    """The seed of schedule `index` of a run: the run's seed itself for index 0, so that `--seed <printed seed>
    --schedules 1` replays any schedule; a hash of (seed, index) for the others."""
    if index == 0:
        return seed
    return int.from_bytes(hashlib.sha256(("%d:%d" % (seed, index)).encode()).digest()[:6], "big")


def make_plan(rng, duration, netem):
    """Fault episodes for one schedule, from its RNG only: two tracks (network, process), each a sequence of
    (start s, kind, duration s, params) that ends before `duration` - 3 s. The tracks may overlap."""
    plan = []
    horizon = duration - 3.0
    # network track
    t = rng.uniform(2.0, 6.0)
    while True:
        kind = rng.choice(NETWORK_KINDS)
        length = rng.uniform(3.0, 16.0)
        if t + length > horizon:
            break
        params = {"partition": rng.randrange(3)}
        if kind == "split":
            # a random side holding the chosen leader: with 0-2 of the other nodes (zk and the other brokers)
            others = rng.sample(["zk", "other1", "other2"], rng.randrange(0, 3))
            params["with_leader"] = sorted(others)
        elif kind == "flapping":
            params["target"] = rng.choice(["leader-all", "leader-zk", "leader-followers", "random-pair"])
            params["pair"] = rng.sample(["zk", "b1", "b2", "b3"], 2)
            params["periods"] = [round(rng.uniform(0.2, 2.5), 2) for _ in range(40)]
        elif kind == "slow-link":
            params["node"] = rng.choice(["leader", "b1", "b2", "b3", "zk"])
            params["rate_kbit"] = rng.choice([256, 512, 1024, 2048])
            params["delay_ms"] = rng.choice([50, 200, 800])
        elif kind == "lossy-link":
            params["node"] = rng.choice(["leader", "b1", "b2", "b3", "zk"])
            params["percent"] = rng.choice([5, 15, 30, 60])
        plan.append((round(t, 2), kind, round(length, 2), params))
        t += length + rng.uniform(1.0, 6.0)
    # process track
    t = rng.uniform(4.0, 15.0)
    while True:
        kind = rng.choice(PROCESS_KINDS)
        length = rng.uniform(1.0, 14.0)
        if t + length > horizon:
            break
        params = {"who": rng.choice(["leader", "b1", "b2", "b3"]), "partition": rng.randrange(3)}
        plan.append((round(t, 2), kind, round(length, 2), params))
        t += length + rng.uniform(3.0, 15.0)
    plan.sort(key=lambda e: e[0])
    return plan


# ------------------------------------------------------------------------------------------------ processes

class Proc:
    """One server process started in a namespace (`ip netns exec` execs it, so the PID is the server's)."""

    def __init__(self, name, args, log_path):
        self.name = name
        self.args = args
        self.log_path = log_path
        self.proc = None
        self.paused = False

    def start(self):
        with open(self.log_path, "ab") as f:
            f.write(b"==== chaos: start %s ====\n" % self.name.encode())
            f.flush()
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                         start_new_session=True)
        self.paused = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None
        self.paused = False

    def pause(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.alive() and self.paused:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def terminate(self, timeout=25.0, signal_it=True):
        """SIGTERM (after SIGCONT) and a bounded wait, then SIGKILL; returns the exit code or None if killed."""
        if self.proc is None:
            return None
        self.resume()
        if signal_it and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            rc = None
        self.proc = None
        return rc


def tcp_ready(host, port, timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(what, fn, timeout, step=0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(step)
    raise TimeoutError("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


LIVE_CLUSTERS = []


class Cluster:
    """ZooKeeper and brokers 1-3 of one schedule, each in its namespace, data under `root`."""

    def __init__(self, net, binary, root):
        LIVE_CLUSTERS.append(self)
        self.net = net
        self.root = root
        os.makedirs(root, exist_ok=True)
        zdir = os.path.join(root, "zk")
        os.makedirs(os.path.join(zdir, "data"), exist_ok=True)
        cfg = os.path.join(zdir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=%s\nadmin.enableServer=false\n"
                    "minSessionTimeout=1000\nmaxSessionTimeout=60000\n4lw.commands.whitelist=\n"
                    % (os.path.join(zdir, "data"), ZK_PORT, net.addr("zk")))
        self.zk = Proc("zk", net.exec_prefix("zk") + ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", ZOOKEEPER_JAR,
                                                      "org.apache.zookeeper.server.ZooKeeperServerMain", cfg],
                       os.path.join(zdir, "zookeeper.log"))
        self.brokers = {}
        for i in BROKERS:
            bdir = os.path.join(root, "b%d" % i)
            os.makedirs(os.path.join(bdir, "data"), exist_ok=True)
            addr = net.addr("b%d" % i)
            overrides = {
                "broker.id": i,
                "listeners": "PLAINTEXT://%s:%d" % (addr, KAFKA_PORT),
                "advertised.listeners": "PLAINTEXT://%s:%d" % (addr, KAFKA_PORT),
                "log.dirs": os.path.join(bdir, "data"),
                "zookeeper.connect": "%s:%d/sluice" % (net.addr("zk"), ZK_PORT),
                "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
                "replica.lag.time.max.ms": 3000,
                "default.replication.factor": 3,
                "min.insync.replicas": 2,
                "unclean.leader.election.enable": "false",
                "offsets.topic.replication.factor": 3,
                "offsets.topic.num.partitions": 3,
                "auto.create.topics.enable": "false",
                "num.io.threads": 2,
                "http.listeners": "",
                "sluice.zookeeper.registration.retry.ms": 30000,
                "sluice.log.level": "info",
            }
            args = net.exec_prefix("b%d" % i) + [binary]
            for k, v in overrides.items():
                args += ["--override", "%s=%s" % (k, v)]
            self.brokers[i] = Proc("broker %d" % i, args, os.path.join(bdir, "broker.log"))

    def addr(self, i):
        return self.net.addr("b%d" % i)

    def bootstrap(self):
        return ",".join("%s:%d" % (self.addr(i), KAFKA_PORT) for i in BROKERS)

    def start(self):
        self.zk.start()
        wait_for("ZooKeeper on %s:%d" % (self.net.addr("zk"), ZK_PORT),
                 lambda: self.zk.alive() and tcp_ready(self.net.addr("zk"), ZK_PORT), 60)
        for i in BROKERS:
            self.brokers[i].start()
        for i in BROKERS:
            wait_for("broker %d listening" % i, lambda: self._check_alive(i) and tcp_ready(self.addr(i), KAFKA_PORT),
                     60)

    def _check_alive(self, i):
        if not self.brokers[i].alive():
            raise RuntimeError("broker %d exited at start (log %s)" % (i, self.brokers[i].log_path))
        return True

    def restart_broker(self, i):
        self.brokers[i].start()

    def metadata_from(self, i, timeout=1.5):
        try:
            return wire.metadata(self.addr(i), KAFKA_PORT, TOPIC, timeout=timeout)[0]
        except (OSError, ValueError, IndexError, Exception):  # noqa: BLE001 - unreachable or paused broker
            return None

    def registered_seen_by(self, i):
        try:
            return len(wire.metadata(self.addr(i), KAFKA_PORT, TOPIC, timeout=1.5)[2])
        except Exception:  # noqa: BLE001
            return 0

    def leader_of(self, partition):
        """The leader of `partition` as the brokers that answer say; a leader that names itself wins."""
        views = {i: self.metadata_from(i) for i in BROKERS if self.brokers[i].alive() and not self.brokers[i].paused}
        for i, parts in views.items():
            if parts and partition in parts and parts[partition][1] == i:
                return i
        for parts in views.values():
            if parts and partition in parts and parts[partition][1] in BROKERS:
                return parts[partition][1]
        return None

    def settled(self, partitions):
        """True when every broker answers Metadata with, for every partition, the same leader (>= 0) and a full
        ISR, and that leader answers ListOffsets (it knows it leads)."""
        views = [self.metadata_from(i) for i in BROKERS]
        if any(v is None or len(v) != partitions for v in views):
            return False
        for p in range(partitions):
            states = {(v[p][1], tuple(sorted(v[p][3]))) for v in views}
            if len(states) != 1:
                return False
            leader, isr = next(iter(states))
            if leader not in BROKERS or len(isr) != len(BROKERS):
                return False
            try:
                err, _ = wire.list_offsets_latest(self.addr(leader), KAFKA_PORT, TOPIC, [p])[p]
            except Exception:  # noqa: BLE001
                return False
            if err != 0:
                return False
        return True

    def all_procs(self):
        return [self.zk] + list(self.brokers.values())

    def stop_all(self):
        """SIGTERM to every broker at once, then ZooKeeper; returns {broker: exit code or None}."""
        codes = {}
        for b in self.brokers.values():
            if b.alive():
                b.resume()
                os.kill(b.proc.pid, signal.SIGTERM)
        for i, b in self.brokers.items():
            codes[i] = b.terminate(timeout=30, signal_it=False) if b.proc is not None else None
        self.zk.terminate(timeout=15)
        return codes

    def kill_all(self):
        for p in self.all_procs():
            try:
                p.kill9()
            except Exception:  # noqa: BLE001
                pass


# ------------------------------------------------------------------------------------------------ nemesis

class Nemesis:
    """Applies a schedule's plan to the network and the processes; every episode is undone at its end."""

    def __init__(self, net, cluster, rng, counts, events):
        self.net = net
        self.cluster = cluster
        self.rng = rng
        self.counts = counts
        self.events = events
        self.flaps = []          # (next toggle monotonic time, state dict) of active flapping episodes

    def note(self, text):
        self.events.append("%7.2f %s" % (time.monotonic() - self.t0, text))
        log("  fault:", text)

    def resolve_leader(self, partition):
        leader = self.cluster.leader_of(partition)
        if leader is None:
            leader = self.rng.choice(BROKERS)
        return leader

    def resolve_broker(self, who, partition):
        if who == "leader":
            return self.resolve_leader(partition)
        return int(who[1:])

    def apply(self, kind, params):
        """Starts one episode; returns an undo function."""
        net = self.net
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind in ("leader-isolated", "leader-link-down", "leader-zk", "leader-followers", "split", "flapping",
                    "slow-link", "lossy-link"):
            leader = self.resolve_leader(params["partition"])
            lb = "b%d" % leader
            others = ["b%d" % i for i in BROKERS if i != leader]
            if kind == "leader-isolated":
                for n in others + ["zk"]:
                    net.cut(lb, n)
                self.note("%s: broker %d cut from zk and brokers (clients still reach it)" % (kind, leader))
                return net.heal_cuts
            if kind == "leader-link-down":
                net.link_down(lb)
                self.note("%s: broker %d link down (total isolation)" % (kind, leader))
                return lambda: net.link_up(lb)
            if kind == "leader-zk":
                net.cut(lb, "zk")
                self.note("%s: broker %d cut from zk only" % (kind, leader))
                return net.heal_cuts
            if kind == "leader-followers":
                for n in others:
                    net.cut(lb, n)
                self.note("%s: broker %d cut from the other brokers only" % (kind, leader))
                return net.heal_cuts
            if kind == "split":
                names = {"zk": "zk", "other1": others[0], "other2": others[1]}
                side_a = [lb] + [names[x] for x in params["with_leader"]]
                side_b = [n for n in ["zk"] + ["b%d" % i for i in BROKERS] if n not in side_a]
                for a in side_a:
                    for b in side_b:
                        net.cut(a, b)
                self.note("%s: %s | %s" % (kind, side_a, side_b))
                return net.heal_cuts
            if kind == "flapping":
                target = params["target"]
                if target == "leader-all":
                    pairs = [(lb, n) for n in others + ["zk"]]
                elif target == "leader-zk":
                    pairs = [(lb, "zk")]
                elif target == "leader-followers":
                    pairs = [(lb, n) for n in others]
                else:
                    pairs = [tuple(params["pair"])]
                state = {"pairs": pairs, "cut": False, "periods": list(params["periods"]), "n": 0}
                self.flaps.append([time.monotonic(), state])
                self.note("%s: %s toggled every %s s" % (kind, pairs, params["periods"][:4]))

                def undo():
                    self.flaps = [f for f in self.flaps if f[1] is not state]
                    net.heal_cuts()
                    self.note("flapping: %d toggles" % state["n"])
                return undo
            if kind in ("slow-link", "lossy-link"):
                node = lb if params["node"] == "leader" else params["node"]
                if kind == "slow-link":
                    net.slow(node, params["rate_kbit"], delay_ms=params["delay_ms"])
                    how = ("netem delay %d ms" % params["delay_ms"]) if net.netem else \
                        ("tbf %d kbit/s (no netem)" % params["rate_kbit"])
                    self.note("%s: %s %s" % (kind, node, how))
                    return lambda: net.unslow(node)
                net.lose(node, params["percent"])
                self.note("%s: %s drops %d%% of packets (nftables numgen)" % (kind, node, params["percent"]))
                return net.heal_cuts
        if kind in ("kill-broker", "pause-broker"):
            b = self.resolve_broker(params["who"], params["partition"])
            proc = self.cluster.brokers[b]
            if not proc.alive():
                self.note("%s: broker %d not running, skipped" % (kind, b))
                return lambda: None
            if kind == "kill-broker":
                proc.kill9()
                self.note("%s: kill -9 broker %d" % (kind, b))

                def restart():
                    self.cluster.restart_broker(b)
                    self.note("restart broker %d" % b)
                return restart
            proc.pause()
            self.note("%s: SIGSTOP broker %d" % (kind, b))

            def cont():
                proc.resume()
                self.note("SIGCONT broker %d" % b)
            return cont
        if kind == "kill-zk":
            self.cluster.zk.kill9()
            self.note("kill-zk: kill -9 ZooKeeper")

            def restart_zk():
                self.cluster.zk.start()
                self.note("restart ZooKeeper")
            return restart_zk
        if kind == "pause-zk":
            self.cluster.zk.pause()
            self.note("pause-zk: SIGSTOP ZooKeeper")

            def cont_zk():
                self.cluster.zk.resume()
                self.note("SIGCONT ZooKeeper")
            return cont_zk
        raise ValueError(kind)

    def tick(self):
        now = time.monotonic()
        for f in self.flaps:
            if now >= f[0]:
                st = f[1]
                if st["cut"]:
                    self.net.heal_cuts()
                else:
                    for a, b in st["pairs"]:
                        self.net.cut(a, b)
                st["cut"] = not st["cut"]
                st["n"] += 1
                f[0] = now + st["periods"][st["n"] % len(st["periods"])]

    def run(self, plan, duration, t0, should_stop):
        """Runs the plan between t0 and t0 + duration; returns with everything healed."""
        self.t0 = t0
        pending = list(plan)
        active = []  # (end time, undo)
        try:
            while time.monotonic() < t0 + duration and not should_stop():
                now = time.monotonic() - t0
                while pending and pending[0][0] <= now:
                    start, kind, length, params = pending.pop(0)
                    try:
                        undo = self.apply(kind, params)
                    except Exception as e:  # noqa: BLE001 - a fault that cannot be applied is noted, not fatal
                        self.note("%s: could not apply: %r" % (kind, e))
                        undo = lambda: None  # noqa: E731
                    active.append((t0 + start + length, undo, kind))
                for item in [a for a in active if a[0] <= time.monotonic()]:
                    active.remove(item)
                    item[1]()
                    self.note("end of %s" % item[2])
                self.tick()
                time.sleep(0.05)
        finally:
            for _, undo, _ in active:
                try:
                    undo()
                except Exception as e:  # noqa: BLE001
                    log("undo failed:", repr(e))
            self.flaps = []
            self.net.heal_all()
            for p in self.cluster.all_procs():
                p.resume()
            if not self.cluster.zk.alive():
                self.cluster.zk.start()
            for i, b in self.cluster.brokers.items():
                if not b.alive():
                    b.start()
                    self.note("restart broker %d (heal)" % i)


# ------------------------------------------------------------------------------------------------ workers

def worker_producer(a):
    """Produces `prefix-<seq>` to partition seq % partitions at `rate`/s for `duration` s with an idempotent
    acks=all producer; writes `A partition offset value` per acknowledgement and `E value error` per failure."""
    from confluent_kafka import KafkaException, Producer
    out = open(a.out, "w", buffering=1)  # line-buffered: a crash loses no line written
    conf = {"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": a.message_timeout_ms, "request.timeout.ms": 10000, "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000, "socket.connection.setup.timeout.ms": 5000,
            "socket.keepalive.enable": True, "log_level": 4}
    fatal = []

    def on_error(err):
        if err.fatal():
            fatal.append(str(err))
            out.write("X fatal %s\n" % str(err).replace("\n", " "))

    def on_delivery(err, msg):
        try:
            value = msg.value().decode() if msg.value() is not None else "?"
            if err is not None:
                out.write("E %s %s\n" % (value, err.name()))
            else:
                out.write("A %d %d %s\n" % (msg.partition(), msg.offset(), value))
        except Exception as e:  # noqa: BLE001 - an exception here would surface in poll()
            out.write("X delivery callback %r\n" % (e,))

    producer = Producer(dict(conf, error_cb=on_error))
    seq = 0
    start = time.monotonic()
    end = start + a.duration
    while time.monotonic() < end:
        due = int((time.monotonic() - start) * a.rate)
        while seq < due and time.monotonic() < end:
            value = "%s-%d" % (a.prefix, seq)
            try:
                producer.produce(TOPIC, value=value.encode(), partition=seq % a.partitions, on_delivery=on_delivery)
                out.write("S %d %s\n" % (seq % a.partitions, value))
                seq += 1
            except BufferError:
                producer.poll(0.1)
            except KafkaException as e:
                out.write("X produce %s\n" % str(e).replace("\n", " "))
                break
            if fatal:
                break
        if fatal:
            # A fatal idempotence error ends this producer instance; a new one (new producer id) carries on.
            producer.flush(5)
            producer.purge()
            producer.poll(1)
            out.write("R new producer after fatal error\n")
            fatal.clear()
            producer = Producer(dict(conf, error_cb=on_error))
        producer.poll(0.01)
    remaining = producer.flush(a.flush_timeout)
    out.write("D sent %d unfinished %d\n" % (seq, remaining))
    out.close()
    os._exit(0)  # do not wait for librdkafka's threads of a producer with messages still in flight


def worker_consumer(a):
    """Reads every partition from the beginning, as it is visible (up to the HW) during the run; writes
    `partition offset value` once per distinct observation until the stop file appears (or the deadline), and
    after each batch of new ones a `# t <unix time>` line (the broker logs' clock, for failure analysis)."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    out = open(a.out, "w", buffering=1)
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "chaos-observer", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000, "socket.connection.setup.timeout.ms": 5000,
                  "enable.partition.eof": False, "log_level": 3})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(a.partitions)])
    seen = set()
    deadline = time.monotonic() + a.duration
    n = 0
    while time.monotonic() < deadline and not os.path.exists(a.stop):
        new = 0
        for m in c.consume(1000, 0.2):
            if m.error():
                continue
            key = (m.partition(), m.offset(), m.value())
            if key not in seen:
                seen.add(key)
                out.write("%d %d %s\n" % (m.partition(), m.offset(), m.value().decode()))
                n += 1
                new += 1
        if new:
            out.write("# t %.3f\n" % time.time())  # wall clock after these observations (for failure analysis)
    out.write("# %d observations\n" % n)
    out.close()
    os._exit(0)


# ------------------------------------------------------------------------------------------------ checks

def read_everything(cluster, partitions, hws, timeout=90):
    """{partition: {offset: value}} read from offset 0 up to each partition's HW with a fresh consumer."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "chaos-final", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_uncommitted",
                  "enable.partition.eof": False, "log_level": 3})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    got = {p: {} for p in range(partitions)}
    next_off = {p: 0 for p in range(partitions)}
    deadline = time.monotonic() + timeout
    dup_offsets = 0
    while time.monotonic() < deadline and any(next_off[p] < hws[p] for p in range(partitions)):
        for m in c.consume(5000, 0.5):
            if m.error():
                continue
            p, o = m.partition(), m.offset()
            if o in got[p]:
                dup_offsets += 1
            got[p][o] = m.value().decode()
            next_off[p] = max(next_off[p], o + 1)
    c.close()
    complete = all(next_off[p] >= hws[p] for p in range(partitions))
    return got, complete


def parse_producer(path):
    acked, failed, sent, unfinished, fatal = [], [], 0, 0, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "A":
                acked.append((int(parts[1]), int(parts[2]), parts[3]))
            elif parts[0] == "E":
                failed.append((parts[1], parts[2]))
            elif parts[0] == "D":
                sent, unfinished = int(parts[2]), int(parts[4])
            elif parts[0] in ("X", "R"):
                fatal.append(line.strip())
    return acked, failed, sent, unfinished, fatal


def parse_observations(path):
    obs = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) == 3:
                obs.append((int(parts[0]), int(parts[1]), parts[2]))
    return obs


def check_schedule(final, acked, observed, partitions, producers=None):
    """The Jepsen-style checks of one schedule; returns a dict of counts and examples. `producers`: {partition:
    {offset: (producer id, producer epoch, base sequence)}} from the leader's log (wire.batch_producers), to tell a
    record the client re-sent under a bumped producer epoch (`resent`) from a duplicate the broker let through."""
    r = {"acked": len(acked), "lost": 0, "moved": 0, "duplicates": 0, "resent": 0, "reordered": 0, "uncommitted": 0,
         "examples": []}
    producers = producers or {}
    where = {}
    for p in range(partitions):
        for o, v in final[p].items():
            where.setdefault(v, []).append((p, o))
    # lost: an acknowledged (partition, offset) that does not hold the acknowledged value in the final log.
    for p, o, v in acked:
        if final.get(p, {}).get(o) != v:
            r["lost"] += 1
            if v in where:
                r["moved"] += 1
            if len(r["examples"]) < 20:
                r["examples"].append("lost: %s acked at %d/%d, final log has %r there, value found at %s" %
                                     (v, p, o, final.get(p, {}).get(o), where.get(v)))
    # duplicates: a value stored more than once. Within one producer epoch the broker must refuse the second copy
    # (KIP-98). A copy under a higher epoch of the same producer id is the client's own re-send: librdkafka bumps
    # the epoch after an in-flight request timed out (KIP-360) and sends the possibly persisted batches again with
    # new sequence numbers, which no broker can match with the first copy (Kafka neither). Counted as `resent`.
    resent_at = set()
    for v, locs in where.items():
        if len(locs) > 1:
            locs = sorted(locs)
            first = producers.get(locs[0][0], {}).get(locs[0][1])
            later = [producers.get(p, {}).get(o) for p, o in locs[1:]]
            if first is not None and all(x is not None and x[0] == first[0] and x[1] > first[1] for x in later):
                r["resent"] += len(locs) - 1
                resent_at.update(locs[1:])
                kind = "re-sent under a new producer epoch"
            else:
                r["duplicates"] += len(locs) - 1
                kind = "duplicate"
            if len(r["examples"]) < 20:
                r["examples"].append("%s: %s at %s (producer id, epoch, sequence: %s)" %
                                     (kind, v, locs, [producers.get(p, {}).get(o) for p, o in locs]))
    # reordering: per producer and partition, the sequence numbers must grow with the offset.
    for p in range(partitions):
        last = {}
        for o in sorted(final[p]):
            v = final[p][o]
            if (p, o) in resent_at:
                continue  # the client's re-send: out of its place by nature
            prefix, _, seq = v.rpartition("-")
            if not seq.isdigit():
                continue
            seq = int(seq)
            if prefix in last and seq <= last[prefix][0]:
                r["reordered"] += 1
                if len(r["examples"]) < 20:
                    r["examples"].append("reordered: %s at %d/%d after %s-%d at %d" %
                                         (v, p, o, prefix, last[prefix][0], last[prefix][1]))
            last[prefix] = (seq, o)
    # uncommitted reads: a record a consumer saw during the run that the final log does not hold there.
    bad = set()
    for p, o, v in observed:
        if final.get(p, {}).get(o) != v:
            bad.add((p, o, v))
    r["uncommitted"] = len(bad)
    for p, o, v in sorted(bad)[:10]:
        r["examples"].append("uncommitted read: %s seen at %d/%d, final log has %r there" %
                             (v, p, o, final.get(p, {}).get(o)))
    return r


def check_divergence(cluster, partitions, layout, hws):
    """Compares, per partition, each in-sync replica's log bytes up to the leader's HW with the leader's; returns
    (divergent replica count, examples). `layout`: {partition: (leader, replicas, isr)}. A replica out of the ISR
    (the cluster did not settle) may still hold a tail it has not truncated yet: it is not compared (noted)."""
    divergent = 0
    examples = []
    for p in range(partitions):
        leader, replicas, isr = layout[p]
        for b in replicas:
            if b not in isr:
                examples.append("partition %d: replica %d out of the ISR %s, not compared" % (p, b, isr))
        replicas = [b for b in replicas if b in isr or b == leader]
        hw = hws[p]
        data = {}
        for b in replicas:
            d = os.path.join(cluster.root, "b%d" % b, "data", "%s-%d" % (TOPIC, p))
            data[b] = wire.partition_log_bytes(d)
        ref_len, ref_end = wire.prefix_below(data[leader], hw)
        if ref_end < hw:
            examples.append("partition %d: leader %d's log covers offsets below %d only, HW %d" %
                            (p, leader, ref_end, hw))
        ref = data[leader][:ref_len]
        for b in replicas:
            if b == leader:
                continue
            n, end = wire.prefix_below(data[b], hw)
            if data[b][:n] != ref:
                divergent += 1
                first = next((k for k in range(min(n, len(ref))) if data[b][k] != ref[k]), min(n, len(ref)))
                examples.append("partition %d: replica %d differs from leader %d below HW %d (its prefix %d bytes to "
                                "offset %d, leader's %d bytes to offset %d; first difference at byte %d)" %
                                (p, b, leader, hw, n, end, ref_len, ref_end, first))
    return divergent, examples


# ------------------------------------------------------------------------------------------------ one schedule

def run_schedule(args, net, index, sseed, counts, python):
    rng = random.Random(sseed)
    plan = make_plan(rng, args.duration, net.netem)
    root = os.path.join(args.workdir, "schedule-%d-seed-%d" % (index, sseed))
    shutil.rmtree(root, ignore_errors=True)
    log("schedule %d: seed %d (reproduce: %s)" % (index, sseed, reproduce_command(args, sseed)))
    for e in plan:
        log("  plan: t=%5.1f s %-16s for %4.1f s %s" % (e[0], e[1], e[2], json.dumps(e[3])[:120]))
    cluster = Cluster(net, args.broker, root)
    workers = []
    result = {"seed": sseed, "acked": 0, "lost": 0, "divergent": 0, "uncommitted": 0, "duplicates": 0,
              "resent": 0, "reordered": 0, "problems": [], "examples": []}
    events = []
    try:
        cluster.start()
        wait_for("3 brokers registered, as every broker sees it",
                 lambda: all(cluster.registered_seen_by(i) == len(BROKERS) for i in BROKERS), 60)
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap(), "log_level": 0})
        topic_config = {"min.insync.replicas": "2"}
        if args.segment_bytes:
            topic_config["internal.segment.bytes"] = str(args.segment_bytes)  # Kafka 4's testing key, below 1 MiB
        fs = admin.create_topics([NewTopic(TOPIC, args.partitions, 3, config=topic_config)],
                                 operation_timeout=20)
        fs[TOPIC].result(timeout=40)
        wait_for("leaders and full ISR of %s" % TOPIC, lambda: cluster.settled(args.partitions), 60)
        del admin, fs
        # workers
        stop_file = os.path.join(root, "consumer.stop")
        common = ["--bootstrap", cluster.bootstrap(), "--partitions", str(args.partitions)]
        cons_out = os.path.join(root, "observed.txt")
        workers.append(("consumer", subprocess.Popen(
            ["nice", "-n", "5", python, os.path.abspath(__file__), "--worker", "consumer", "--out", cons_out,
             "--stop", stop_file, "--duration", str(args.duration + args.flush_timeout + 60)] + common,
            stdin=subprocess.DEVNULL, stderr=open(os.path.join(root, "consumer.err"), "w"))))
        prod_outs = []
        for k in range(args.producers):
            out = os.path.join(root, "producer-%d.txt" % k)
            prod_outs.append(out)
            workers.append(("producer %d" % k, subprocess.Popen(
                ["nice", "-n", "5", python, os.path.abspath(__file__), "--worker", "producer", "--out", out,
                 "--prefix", "s%dp%d" % (index, k), "--rate", str(args.rate), "--duration", str(args.duration),
                 "--flush-timeout", str(args.flush_timeout),
                 "--message-timeout-ms", str(int(args.flush_timeout * 1000))] + common,
                stdin=subprocess.DEVNULL, stderr=open(os.path.join(root, "producer-%d.err" % k), "w"))))
        t0 = time.monotonic()
        nemesis = Nemesis(net, cluster, rng, counts, events)
        nemesis.run(plan, args.duration, t0, lambda: False)
        log("  healed at %.1f s; waiting for the producers to flush" % (time.monotonic() - t0))
        for name, w in workers:
            if name.startswith("producer"):
                try:
                    w.wait(timeout=args.flush_timeout + 30)
                except subprocess.TimeoutExpired:
                    result["problems"].append("%s did not finish; killed" % name)
                    w.kill()
                    w.wait()
        settle_start = time.monotonic()
        try:
            # twice, 1 s apart: a broker restarted a moment ago may still be listed from before its kill
            wait_for("every partition with one leader and a full ISR on every broker",
                     lambda: cluster.settled(args.partitions) and (time.sleep(1.0) or True) and
                     cluster.settled(args.partitions), args.settle_timeout, step=0.5)
            log("  settled after %.1f s" % (time.monotonic() - settle_start))
        except TimeoutError as e:
            result["problems"].append("not settled: %s" % e)
            log("  NOT settled:", e)
        time.sleep(2)  # let the consumer see the last records
        open(stop_file, "w").close()
        for name, w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                result["problems"].append("%s did not stop; killed" % name)
                w.kill()
                w.wait()
            if w.returncode != 0:
                result["problems"].append("%s exit status %s (see its .err file)" % (name, w.returncode))
        # HW and layout from the leaders, then every record up to the HW
        layout, hws = {}, {}
        views = {i: cluster.metadata_from(i) for i in BROKERS}
        for p in range(args.partitions):
            leader = cluster.leader_of(p)
            view = views.get(leader) or next((v for v in views.values() if v and p in v), None)
            replicas = view[p][2] if view and p in view else list(BROKERS)
            isr = view[p][3] if view and p in view else list(BROKERS)
            layout[p] = (leader, replicas, isr)
            try:
                err, hw = wire.list_offsets_latest(cluster.addr(leader), KAFKA_PORT, TOPIC, [p])[p]
            except Exception as e:  # noqa: BLE001
                err, hw = repr(e), -1
            if err != 0 or leader is None:
                result["problems"].append("partition %d: no HW from leader %s (%s)" % (p, leader, err))
                hw = 0
            hws[p] = hw
        final, complete = read_everything(cluster, args.partitions, hws)
        if not complete:
            result["problems"].append("final read incomplete: %s of HWs %s" %
                                      ({p: len(final[p]) for p in final}, hws))
        codes = cluster.stop_all()
        for i, rc in codes.items():
            if rc != 0:
                result["problems"].append("broker %d exit status on SIGTERM: %s" % (i, rc))
        acked, failed, sent, unfinished = [], [], 0, 0
        fatal = []
        for out in prod_outs:
            a_, f_, s_, u_, x_ = parse_producer(out)
            if s_ == 0:
                result["problems"].append("%s has no end line (the producer did not finish)" % out)
            acked += a_
            failed += f_
            sent += s_
            unfinished += u_
            fatal += x_
        observed = parse_observations(cons_out)
        producers = {}
        for p in range(args.partitions):
            if layout.get(p) and layout[p][0] is not None:
                d = os.path.join(cluster.root, "b%d" % layout[p][0], "data", "%s-%d" % (TOPIC, p))
                producers[p] = wire.batch_producers(wire.partition_log_bytes(d))
        r = check_schedule(final, acked, observed, args.partitions, producers)
        if all(layout[p][0] is not None for p in layout):
            div, div_examples = check_divergence(cluster, args.partitions, layout, hws)
        else:
            div, div_examples = 0, ["divergence not checked: a partition without leader"]
            result["problems"].append(div_examples[0])
        result.update({k: r[k] for k in ("acked", "lost", "duplicates", "resent", "reordered", "uncommitted")})
        result["divergent"] = div
        result["examples"] = r["examples"] + div_examples
        log("  schedule %d: sent %d, acked %d, failed %d (%s), unfinished %d, producer restarts %d, observed %d, "
            "final %d records (HW %s)" % (index, sent, len(acked), len(failed),
                                          summarize_errors(failed), unfinished,
                                          sum(1 for x in fatal if x.startswith("R")), len(observed),
                                          sum(len(v) for v in final.values()), hws))
    except Exception as e:  # noqa: BLE001 - a harness error fails the schedule, with its traceback
        import traceback
        traceback.print_exc()
        result["problems"].append("harness error: %r" % (e,))
    finally:
        for _, w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        cluster.kill_all()
    result["events"] = events
    bad = result["lost"] or result["divergent"] or result["uncommitted"] or result["duplicates"] or \
        result["reordered"]
    log("  schedule %d (seed %d): acked %d, lost %d, divergent %d, uncommitted reads %d, duplicates %d, "
        "reordered %d, re-sent by the client under a new producer epoch %d%s" %
        (index, sseed, result["acked"], result["lost"], result["divergent"], result["uncommitted"],
         result["duplicates"], result["reordered"], result["resent"],
         "; problems: " + "; ".join(result["problems"]) if result["problems"] else ""))
    for ex in result["examples"][:25]:
        log("    " + ex)
    if bad or result["problems"]:
        save_failure(args, result, root, plan, index)
    if not args.keep and not bad and not result["problems"]:
        shutil.rmtree(root, ignore_errors=True)
    return result


def summarize_errors(failed):
    c = {}
    for _, e in failed:
        c[e] = c.get(e, 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(c.items())) or "-"


def save_failure(args, result, root, plan, index):
    dest = os.path.join(args.failures_dir, str(result["seed"]))
    os.makedirs(dest, exist_ok=True)
    for sub, name in (("zk", "zookeeper.log"), ("b1", "broker.log"), ("b2", "broker.log"), ("b3", "broker.log")):
        src = os.path.join(root, sub, name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(dest, "%s-%s" % (sub, name)))
    for name in os.listdir(root) if os.path.isdir(root) else []:
        if name.endswith((".txt", ".err")):
            shutil.copy(os.path.join(root, name), os.path.join(dest, name))
    with open(os.path.join(dest, "report.json"), "w") as f:
        json.dump({"schedule": index, "seed": result["seed"], "reproduce": reproduce_command(args, result["seed"]),
                   "plan": plan, "events": result["events"], "result": {k: v for k, v in result.items()
                                                                        if k != "events"}}, f, indent=1)
    log("  failure data in %s (data dirs kept in %s)" % (dest, root))


def reproduce_command(args, sseed):
    return "python3 tests/chaos/partitions.py --broker %s --seed %d --schedules 1 --duration %g" % (
        args.broker, sseed, args.duration) + ("" if args.rate == 150 else " --rate %g" % args.rate) + \
        ("" if args.partitions == 3 else " --partitions %d" % args.partitions)


# ------------------------------------------------------------------------------------------------ main

def client_python(args):
    """The interpreter for the clients: --python, else the compat cache's venv (newer librdkafka), else this one."""
    if args.python:
        return args.python
    venv = os.path.join(REPO, "build-tests", "compat-cache", "pyvenv", "bin", "python3")
    if os.access(venv, os.X_OK) and subprocess.run([venv, "-c", "import confluent_kafka"],
                                                   capture_output=True).returncode == 0:
        return venv
    return sys.executable


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"), help="the sluice executable")
    ap.add_argument("--schedules", type=int, default=1)
    ap.add_argument("--seed", type=int, default=None, help="run seed (default: random, printed)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of production and faults per schedule")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--rate", type=float, default=150.0, help="records/s per producer")
    ap.add_argument("--segment-bytes", type=int, default=0,
                    help="the topic's internal.segment.bytes: small segments make the leaders roll (and hand the "
                         "rolled segments' fsyncs to the background flusher) all through the faults; 0 = default")
    ap.add_argument("--flush-timeout", type=float, default=60.0, help="bound of the producers' final flush, s")
    ap.add_argument("--settle-timeout", type=float, default=120.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--failures-dir", default="/tmp/chaos/failures")
    ap.add_argument("--keep", action="store_true", help="keep every schedule's data dirs")
    ap.add_argument("--python", default=None, help="python with confluent_kafka for the clients")
    # worker mode (internal)
    ap.add_argument("--worker", choices=["producer", "consumer"])
    ap.add_argument("--bootstrap")
    ap.add_argument("--out")
    ap.add_argument("--stop")
    ap.add_argument("--prefix")
    ap.add_argument("--message-timeout-ms", type=int, default=60000)
    args = ap.parse_args()
    if args.worker == "producer":
        return worker_producer(args)
    if args.worker == "consumer":
        return worker_consumer(args)

    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP: no sluice binary (--broker or SLUICE_BINARY)")
        return SKIP
    args.broker = os.path.abspath(args.broker)
    if not os.path.exists(ZOOKEEPER_JAR) or shutil.which("java") is None:
        print("SKIP: ZooKeeper (Debian package zookeeper) or java not installed")
        return SKIP
    python = client_python(args)
    if subprocess.run([python, "-c", "import confluent_kafka"], capture_output=True).returncode != 0:
        print("SKIP: no confluent_kafka for %s (Debian: python3-confluent-kafka)" % python)
        return SKIP
    if python != sys.executable and not os.environ.get("SLUICE_CHAOS_REEXEC"):
        # the orchestrator's own clients (admin, final reads) use the same library as the workers
        os.environ["SLUICE_CHAOS_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    for d in ("/usr/sbin", "/sbin"):  # ip, tc and nft live there; a user's PATH may lack them
        if d not in os.environ.get("PATH", "").split(":"):
            os.environ["PATH"] = os.environ.get("PATH", "") + ":" + d
    try:
        netns.check_requirements()
    except netns.Unavailable as e:
        print("SKIP: %s" % e)
        return SKIP

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(6), "big")
    pid = os.getpid()
    args.workdir = args.workdir or "/tmp/sluice-chaos-%d" % pid
    os.makedirs(args.workdir, exist_ok=True)
    net = netns.Network("sl-%d-" % pid, pid % 250 + 1, HOSTS)
    cleaned = []

    def cleanup():
        if not cleaned:
            cleaned.append(1)
            for c in LIVE_CLUSTERS:
                c.kill_all()
            net.close()
            if not args.keep and os.path.isdir(args.workdir) and not os.listdir(args.workdir):
                os.rmdir(args.workdir)
    atexit.register(cleanup)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    totals = {"acked": 0, "lost": 0, "divergent": 0, "uncommitted": 0, "duplicates": 0, "reordered": 0, "resent": 0}
    counts = {}
    failing = []
    problems = 0
    done = 0
    try:
        net.setup()
        net.enter("cl")
        if not net.probe_netem():
            log("note: the kernel has no netem qdisc (sch_netem): slow links use a tbf token bucket (rate limit, "
                "queueing delay) and lossy links nftables' random drop instead of netem delay/loss")
        log("run seed %d, %d schedules of %g s, clients: %s, namespaces %s*, workdir %s" %
            (seed, args.schedules, args.duration, python, net.prefix, args.workdir))
        for index in range(args.schedules):
            sseed = schedule_seed(seed, index)
            r = run_schedule(args, net, index, sseed, counts, python)
            done += 1
            for k in totals:
                totals[k] += r[k]
            if r["lost"] or r["divergent"] or r["uncommitted"] or r["duplicates"] or r["reordered"]:
                failing.append(sseed)
            if r["problems"]:
                problems += 1
    finally:
        cleanup()
    log("faults applied: " + ", ".join("%s %d" % (k, counts.get(k, 0)) for k in FAULT_KINDS))
    print("duplicates: %d, reordered: %d, re-sent by the client under a new producer epoch: %d, schedules with "
          "harness problems: %d" % (totals["duplicates"], totals["reordered"], totals["resent"], problems))
    for s in failing:
        print("FAILED seed %d: %s" % (s, reproduce_command(args, s)))
    print("partitions: %d schedules, %d acked, %d lost, %d divergent, %d uncommitted reads" %
          (done, totals["acked"], totals["lost"], totals["divergent"], totals["uncommitted"]))
    return 1 if failing or problems else 0


if __name__ == "__main__":
    sys.exit(main())
