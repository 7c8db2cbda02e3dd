#!/usr/bin/python3
"""Cooperative-sticky rebalances with librdkafka consumers (Debian's confluent-kafka 1.7 over librdkafka 2.0.2).

Three consumers (`partition.assignment.strategy=cooperative-sticky`, `session.timeout.ms=6000`,
`heartbeat.interval.ms=500`, manual commits of every record) join a 6-partition topic one after another; after
each join the group must settle (all 6 partitions owned, 6 / 3+3 / 2+2+2) within SETTLE_LIMIT_S. The broker runs
with Kafka's default `group.initial.rebalance.delay.ms` (3000). Modes:

- `async` (default): asynchronous commits, all consumers polled in turn by one thread.
- `threads`: synchronous commits, one thread per consumer (Kafka's rule: a consumer is not thread-safe, and a
  blocking call on one must not starve the others).
- `single-thread-sync` (not in the suite): synchronous commits with every consumer polled by ONE thread. This
  stalls against Apache Kafka 4.4 too (189.7 s measured with `--reference kafka`): a member's JoinGroup waits for
  the others to rejoin, the others wait for the application to serve their rebalance callback, and the one
  application thread is blocked in a synchronous OffsetCommit queued behind that JoinGroup on the same
  connection (Kafka, like Sluice, handles one request per connection at a time) until librdkafka's 60 s request
  timeout. `tests/integration/README.md` has the figures.

`--reference kafka` runs the same against Apache Kafka 4.4 (compat/kafka/kafka_reference.py).
Prints the time each join took to settle.
"""
import sys
import threading
import time

import sluice_harness as h

PARTITIONS = 6
RECORDS = 600
SETTLE_LIMIT_S = 30.0   # Kafka 4.4 in the same run: 3-8 s per join (async and threads modes)


def produce(bootstrap, topic, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    left = p.flush(30)
    if left:
        raise RuntimeError("%d records not delivered" % left)


class Member:
    """One consumer; `assigned` follows its rebalance callbacks."""

    def __init__(self, bootstrap, group, topic, name, log, sync_commits):
        from confluent_kafka import Consumer
        self.name = name
        self.log = log
        self.sync_commits = sync_commits
        self.lock = threading.Lock()
        self.assigned = set()
        self.consumed = 0
        self.errors = []
        self.stop = threading.Event()
        self.thread = None

        def on_assign(c, parts):
            with self.lock:
                self.assigned |= {p.partition for p in parts}
                now = sorted(self.assigned)
            self.log("%s assign +%s -> %s" % (name, sorted(p.partition for p in parts), now))

        def on_revoke(c, parts):
            with self.lock:
                self.assigned -= {p.partition for p in parts}
                now = sorted(self.assigned)
            self.log("%s revoke -%s -> %s" % (name, sorted(p.partition for p in parts), now))

        def on_lost(c, parts):
            with self.lock:
                self.assigned -= {p.partition for p in parts}
            self.log("%s lost %s" % (name, sorted(p.partition for p in parts)))

        self.c = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        })
        self.c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def owned(self):
        with self.lock:
            return set(self.assigned)

    def poll_once(self):
        m = self.c.poll(0.05)
        if m is None:
            return
        if m.error():
            self.errors.append(str(m.error()))
            return
        self.consumed += 1
        try:
            self.c.commit(message=m, asynchronous=not self.sync_commits)
        except Exception as e:  # noqa: BLE001 - a commit refused during a rebalance is normal; counted only
            self.errors.append("commit: %s" % e)

    def start_thread(self):
        def loop():
            while not self.stop.is_set():
                self.poll_once()
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=70)
        self.c.close()


def settled(members, expected_counts):
    owned = [m.owned() for m in members]
    union = set().union(*owned)
    return sorted(len(o) for o in owned) == expected_counts and union == set(range(PARTITIONS)) \
        and sum(len(o) for o in owned) == PARTITIONS


def one_round(bootstrap, check, r, mode):
    topic = "coop-%s-%d" % (mode, r)
    group = "coop-group-%s-%d" % (mode, r)
    t0 = time.monotonic()

    def log(s):
        print("  [round %d %6.2fs] %s" % (r, time.monotonic() - t0, s), flush=True)

    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    produce(bootstrap, topic, RECORDS)
    threaded = mode == "threads"
    sync = mode != "async"
    members = []
    times = []
    try:
        for k, expected in enumerate(([6], [3, 3], [2, 2, 2])):
            m = Member(bootstrap, group, topic, "m%d" % k, log, sync)
            members.append(m)
            if threaded:
                m.start_thread()
            start = time.monotonic()
            deadline = start + SETTLE_LIMIT_S
            while time.monotonic() < deadline and not settled(members, expected):
                if threaded:
                    time.sleep(0.05)
                else:
                    for mm in members:
                        mm.poll_once()
            took = time.monotonic() - start
            times.append(took)
            ok = settled(members, expected)
            owned = [sorted(mm.owned()) for mm in members]
            log("join of m%d %s in %.2f s: %s" % (k, "settled" if ok else "NOT settled", took, owned))
            if not check.true(ok, "round %d: after m%d joined the group did not settle to %s within %.0f s "
                                  "(owned %s)" % (r, k, expected, SETTLE_LIMIT_S, owned)):
                break
        check.true(sum(mm.consumed for mm in members) > 0, "round %d: records consumed" % r)
        fatal = [e for mm in members for e in mm.errors if "FATAL" in e]
        check.eq(fatal, [], "round %d: fatal consumer errors" % r)
    finally:
        for mm in members:
            mm.close()
    return times


def run_rounds(bootstrap, check, rounds, mode):
    all_times = []
    for r in range(rounds):
        times = one_round(bootstrap, check, r, mode)
        all_times += times
        print("round %d: settle times %s" % (r, ", ".join("%.2f s" % t for t in times)), flush=True)
        if not check.ok():
            break
    if all_times:
        print("%s: settle time max %.2f s over %d joins" % (mode, max(all_times), len(all_times)), flush=True)


def add_args(ap):
    ap.add_argument("--modes", default="async,threads", help="comma list of async, threads, single-thread-sync")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per mode (a fresh topic and group each)")


def main(broker, check, args):
    for mode in [m for m in args.modes.split(",") if m]:
        run_rounds(broker.bootstrap, check, args.rounds, mode)


if __name__ == "__main__":
    sys.exit(h.run_against(main, {"num.partitions": PARTITIONS}, __doc__, add_args))
