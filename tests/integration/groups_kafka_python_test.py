#!/usr/bin/python3
"""Consumer groups with kafka-python 2.0.2's KafkaConsumer(group_id=...) against a real sluice broker.

Always run with /usr/bin/python3 (Debian's python3-kafka).

- Three KafkaConsumers (one thread each: kafka-python blocks in poll() while its JoinGroup waits for
  the others) subscribe to a 6-partition topic and get 2 partitions each. Every record is committed
  synchronously right after it is taken, so a record may be seen twice only if its commit failed.
- One consumer close()s (LeaveGroup); the other two take over all 6 partitions; nothing is lost, nothing
  is read twice beyond the last commit.
- The broker restarts (SIGTERM); a new consumer resumes at the committed offsets.
- A consumer in a child process is SIGKILLed (no LeaveGroup): after session_timeout_ms=6000 the group
  rebalances and the surviving consumer gets its partitions.
- Committed offsets survive a broker kill -9.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import sluice_harness as h

TOPIC = "kp-group-topic"
GROUP = "kp-group"
PARTITIONS = 6

COMMON = dict(group_id=GROUP, enable_auto_commit=False, auto_offset_reset="earliest",
              session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=20000,
              request_timeout_ms=25000, fetch_max_wait_ms=100, metadata_max_age_ms=2000,
              api_version_auto_timeout_ms=10000, reconnect_backoff_max_ms=500)


class Member(threading.Thread):
    """One KafkaConsumer in its own thread: poll, keep, commit each record synchronously."""

    def __init__(self, bootstrap, name):
        super().__init__(daemon=True)
        from kafka import KafkaConsumer
        self.name_ = name
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=name, **COMMON)
        self.consumer.subscribe([TOPIC])
        self.lock = threading.Lock()
        self.records = []        # (partition, offset, value)
        self.failed_commits = set()
        self.errors = []
        self.assigned = set()
        self.stop_flag = threading.Event()
        self.closed = threading.Event()

    def run(self):
        from kafka.structs import OffsetAndMetadata
        try:
            while not self.stop_flag.is_set():
                batch = self.consumer.poll(timeout_ms=100)
                with self.lock:
                    self.assigned = {tp.partition for tp in self.consumer.assignment()}
                for tp, msgs in batch.items():
                    for m in msgs:
                        with self.lock:
                            self.records.append((m.partition, m.offset, m.value.decode()))
                        try:
                            self.consumer.commit({tp: OffsetAndMetadata(m.offset + 1, None)})
                        except Exception as e:  # noqa: BLE001 - a failed commit allows a duplicate
                            with self.lock:
                                self.failed_commits.add((m.partition, m.offset))
                                self.errors.append("commit p%d@%d: %r" % (m.partition, m.offset, e))
            self.consumer.close()  # LeaveGroup (autocommit is off: commits nothing more)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            self.errors.append("thread: %r" % (e,))
        finally:
            self.closed.set()

    def assignment(self):
        with self.lock:
            return set(self.assigned)

    def close(self, timeout=30):
        self.stop_flag.set()
        self.closed.wait(timeout)
        self.join(1)
        return self.closed.is_set()


def produce(bootstrap, counts, per_partition):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    futures = []
    for part in range(PARTITIONS):
        for i in range(per_partition):
            futures.append(p.send(TOPIC, value=("p%d-%d" % (part, counts[part] + i)).encode(), partition=part))
        counts[part] += per_partition
    for f in futures:
        f.get(timeout=30)
    p.close()


def wait_balanced(members, each, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        a = [m.assignment() for m in members]
        if all(len(x) == each for x in a) and set().union(*a) == set(range(PARTITIONS)):
            return True, a
        time.sleep(0.1)
    return False, [m.assignment() for m in members]


def wait_all(members, counts, timeout):
    want = {(p, o) for p in counts for o in range(counts[p])}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = set()
        for m in members:
            with m.lock:
                got |= {(p, o) for p, o, _ in m.records}
        if got >= want:
            return True
        time.sleep(0.1)
    return False


def check_exactly_once(check, members, counts, extra_records=()):
    seen = {}
    failed = set()
    for m in members:
        failed |= m.failed_commits
        for p, o, v in m.records:
            seen[(p, o)] = seen.get((p, o), 0) + 1
            check.eq(v, "p%d-%d" % (p, o), "%s value at p%d@%d" % (m.name_, p, o))
    for p, o in extra_records:
        seen[(p, o)] = seen.get((p, o), 0) + 1
    lost = [(p, o) for p in counts for o in range(counts[p]) if (p, o) not in seen]
    check.eq(lost[:10], [], "lost records")
    dups = [k for k, n in seen.items() if n > 1 and k not in failed]
    check.eq(sorted(dups)[:10], [], "records read twice though committed")
    print("delivered %d, distinct %d, failed commits %d" % (sum(seen.values()), len(seen), len(failed)))
    for m in members:
        if m.errors:
            print("%s errors: %s" % (m.name_, m.errors[:5]))


def committed(bootstrap):
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        offs = admin.list_consumer_group_offsets(GROUP)
        return {tp.partition: om.offset for tp, om in offs.items() if tp.topic == TOPIC}
    finally:
        admin.close()


CHILD = r"""
import sys
from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata
c = KafkaConsumer(bootstrap_servers=sys.argv[1], client_id="child", **eval(sys.argv[2]))
c.subscribe([sys.argv[3]])
last = None
while True:
    batch = c.poll(timeout_ms=100)
    a = sorted(tp.partition for tp in c.assignment())
    if a != last:
        print("ASSIGNED", " ".join(map(str, a)), flush=True)
        last = a
    for tp, msgs in batch.items():
        for m in msgs:
            c.commit({tp: OffsetAndMetadata(m.offset + 1, None)})
            print("REC", m.partition, m.offset, flush=True)
"""


T0 = time.monotonic()


def step(what):
    print("[%6.1f s] %s" % (time.monotonic() - T0, what), flush=True)


def main(broker, check):
    from kafka.admin import KafkaAdminClient, NewTopic
    bs = broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=10000)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    counts = {p: 0 for p in range(PARTITIONS)}

    step("three members")
    # --- three members, one leaves -------------------------------------------------------------------
    members = [Member(bs, "kp-%d" % i) for i in range(3)]
    for m in members:
        m.start()
    ok, a = wait_balanced(members, 2, 40)
    step("balanced 3 x 2")
    if not check.true(ok, "three consumers own 2 partitions each (got %r)" % (a,)):
        return
    produce(bs, counts, 40)
    check.true(wait_all(members, counts, 30), "three consumers read everything")
    for m in members:
        with m.lock:
            read = {p for p, _, _ in m.records}
        check.eq(read, m.assignment(), "%s read exactly its partitions" % m.name_)
    check.true(members[2].close(), "kp-2 closed")
    produce(bs, counts, 40)
    ok, a = wait_balanced(members[:2], 3, 40)
    step("balanced 2 x 3")
    check.true(ok, "two consumers took over all 6 partitions (got %r)" % (a,))
    check.true(wait_all(members, counts, 30), "two consumers read everything")
    for m in members[:2]:
        check.true(m.close(), "%s closed" % m.name_)
    check_exactly_once(check, members, counts)
    check.eq(committed(bs), dict(counts), "committed offsets after the consumers closed")

    step("restart, resume")
    # --- restart, resume -----------------------------------------------------------------------------
    check.eq(broker.stop(), 0, "broker exit status on SIGTERM")
    broker.start()
    check.eq(committed(bs), dict(counts), "committed offsets after restart")
    before = dict(counts)
    produce(bs, counts, 10)
    r = Member(bs, "kp-resume")
    r.start()
    check.true(wait_all(members + [r], counts, 40), "resumed consumer reads the new records")
    time.sleep(0.5)
    check.eq(sorted((p, o) for p, o, _ in r.records),
             sorted((p, o) for p in counts for o in range(before[p], counts[p])),
             "resumed consumer starts at the committed offsets")

    step("SIGKILL")
    # --- SIGKILL of a member in a child process ------------------------------------------------------
    conf = dict(COMMON)
    child = subprocess.Popen([sys.executable, "-c", CHILD, bs, repr(conf), TOPIC],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 40
        while len(r.assignment()) != 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        check.eq(len(r.assignment()), 3, "partitions of the parent consumer next to the child (%r)" % (r.assignment(),))
        before = dict(counts)
        produce(bs, counts, 5)
        time.sleep(2.0)  # let the child commit its part
        child_parts = set(range(PARTITIONS)) - r.assignment()
        killed_at = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        ok, a = wait_balanced([r], PARTITIONS, 40)
        took = time.monotonic() - killed_at
        print("rebalance after SIGKILL of the child took %.1f s" % took)
        check.true(ok, "survivor owns all partitions after the child was killed (got %r)" % (a,))
        check.true(took >= 4.0, "rebalance waited for the session timeout (%.1f s)" % took)
        out = child.stdout.read()
        child_recs = [tuple(map(int, line.split()[1:3])) for line in out.splitlines() if line.startswith("REC")]
        check.true(any(p in child_parts for p, _ in child_recs), "child consumed its partitions %r" % (child_parts,))
        produce(bs, counts, 5)
        want = {(p, o) for p in counts for o in range(counts[p] - 5, counts[p])}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with r.lock:
                if {(p, o) for p, o, _ in r.records} >= want:
                    break
            time.sleep(0.1)
        with r.lock:
            check.true({(p, o) for p, o, _ in r.records} >= want,
                       "survivor reads new records of every partition, the killed member's %r too" % (child_parts,))
        check_exactly_once(check, members + [r], counts, extra_records=child_recs)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    check.true(r.close(), "kp-resume closed")

    step("broker kill")
    # --- broker kill -9 -------------------------------------------------------------------------------
    before = committed(bs)
    check.eq(before, dict(counts), "committed offsets before broker kill -9")
    broker.kill9()
    broker.start()
    check.eq(committed(bs), before, "committed offsets after broker kill -9")


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"group.initial.rebalance.delay.ms": "0",
                                          }))  # offsets.topic.num.partitions: the default 50
