#!/usr/bin/python3
"""Consumer groups with kcat -G (librdkafka's balanced consumer) against a real sluice broker.

- kcat -G mygroup consumes a 4-partition topic from the beginning; stopped with SIGTERM it commits
  (rd_kafka_consumer_close) and a restarted kcat -G resumes at the committed offsets: it prints exactly
  the records produced since, nothing twice.
- Two kcat -G in one group own 2 partitions each; one is SIGKILLed (no LeaveGroup): after
  session.timeout.ms (6000, the broker minimum) the group rebalances and the survivor owns all 4 and
  consumes records produced to every partition.
- The group and its committed offsets survive a broker kill -9.
Group state is read with kafka-python's KafkaAdminClient (DescribeGroups, ListConsumerGroupOffsets).
"""
import queue
import signal
import subprocess
import threading
import time

import sluice_harness as h

KCAT = "/usr/bin/kcat"
TOPIC = "kcat-group-topic"
GROUP = "mygroup"
PARTITIONS = 4


class KcatConsumer:
    """kcat -G in the background; every output line '<partition> <offset> <value>' goes to a queue."""

    def __init__(self, broker, name):
        self.name = name
        cmd = [KCAT, "-b", broker.bootstrap, "-G", GROUP, "-u", "-q", "-f", "%p %o %s\\n",
               "-X", "client.id=" + name,
               "-X", "auto.offset.reset=earliest",
               "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
               "-X", "auto.commit.interval.ms=200", "-X", "fetch.wait.max.ms=100",
               "-X", "reconnect.backoff.max.ms=500", "-X", "topic.metadata.refresh.interval.ms=2000",
               TOPIC]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.records = []  # (partition, offset, value)
        self.stderr = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, None), daemon=True).start()

    def _read(self, stream, q):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            if q is None:
                self.stderr.append(line)
            else:
                q.put(line)

    def drain(self, timeout=0.0):
        """Moves output lines into self.records (waiting up to `timeout` for the first)."""
        try:
            line = self.lines.get(timeout=timeout) if timeout > 0 else self.lines.get_nowait()
        except queue.Empty:
            return
        while True:
            p, o, v = line.split(" ", 2)
            self.records.append((int(p), int(o), v))
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends `sig` to this child (by PID) and waits; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        time.sleep(0.2)  # let the reader threads take the last lines
        self.drain()
        return rc


def produce(broker, counts, per_partition):
    """kcat -P of `per_partition` lines to every partition, value 'p<p>-<offset>'."""
    for p in range(PARTITIONS):
        lines = "".join("p%d-%d\n" % (p, counts[p] + i) for i in range(per_partition))
        r = subprocess.run([KCAT, "-b", broker.bootstrap, "-P", "-t", TOPIC, "-p", str(p),
                            "-X", "acks=all"], input=lines.encode(), capture_output=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("kcat -P: " + r.stderr.decode(errors="replace"))
        counts[p] += per_partition


def wait_records(consumers, want, timeout):
    """Drains `consumers` until together they hold `want` distinct (partition, offset) pairs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.drain(0.05)
        got = {(p, o) for c in consumers for (p, o, _) in c.records}
        if got >= want:
            return True
    return False


def everything(counts, start=None):
    start = start or {p: 0 for p in counts}
    return {(p, o) for p in counts for o in range(start[p], counts[p])}


def check_values(check, consumers):
    for c in consumers:
        for p, o, v in c.records:
            if not check.eq(v, "p%d-%d" % (p, o), "%s: value at p%d@%d" % (c.name, p, o)):
                return


def describe(admin):
    """(state, {member client_id: sorted partitions}) of GROUP."""
    from kafka.coordinator.protocol import ConsumerProtocolMemberAssignment
    d = admin.describe_consumer_groups([GROUP])[0]
    members = {}
    for m in d.members:
        parts = []
        if m.member_assignment:
            a = m.member_assignment
            if isinstance(a, (bytes, bytearray)):
                a = ConsumerProtocolMemberAssignment.decode(a)
            for t, ps in a.assignment:
                parts += ps
        members[m.client_id] = sorted(parts)
    return d.state, members


def committed(admin):
    offs = admin.list_consumer_group_offsets(GROUP)
    return {tp.partition: om.offset for tp, om in offs.items() if tp.topic == TOPIC}


def wait_group(admin, pred, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = describe(admin)
            if pred(*last):
                return True, last
        except Exception as e:  # noqa: BLE001 - coordinator moving during a restart
            last = repr(e)
        time.sleep(0.2)
    return False, last


def main(broker, check):
    from kafka import KafkaAdminClient

    counts = {p: 0 for p in range(PARTITIONS)}
    produce(broker, counts, 25)  # auto-creates the topic with num.partitions=4
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)

    # --- acceptance 2: consume, stop, resume at the committed offsets ---------------------------------
    c1 = KcatConsumer(broker, "kcat-1")
    ok = wait_records([c1], everything(counts), 40)
    check.true(ok, "kcat -G consumed all %d records (got %d)" % (sum(counts.values()), len(c1.records)))
    rc = c1.stop()
    check.eq(rc, 0, "kcat -G exit code on SIGTERM")
    check.eq(len(c1.records), sum(counts.values()), "records read by the first kcat -G (no duplicates)")
    check.eq(committed(admin), dict(counts), "committed offsets after kcat -G stopped")

    first = dict(counts)
    produce(broker, counts, 10)
    c2 = KcatConsumer(broker, "kcat-2")
    ok = wait_records([c2], everything(counts, first), 40)
    time.sleep(1.0)
    c2.drain()
    rc = c2.stop()
    check.true(ok, "restarted kcat -G consumed the new records")
    check.eq(sorted((p, o) for p, o, _ in c2.records), sorted(everything(counts, first)),
             "restarted kcat -G reads exactly the records after the committed offsets")
    check.eq(committed(admin), dict(counts), "committed offsets after the second kcat -G")
    check_values(check, [c1, c2])

    # --- acceptance 3: SIGKILL of one of two members; the survivor takes over after session timeout ---
    a = KcatConsumer(broker, "kcat-a")
    b = KcatConsumer(broker, "kcat-b")
    ok, last = wait_group(admin, lambda st, m: st == "Stable" and len(m) == 2 and
                          all(len(v) == 2 for v in m.values()), 40)
    check.true(ok, "two kcat -G members own 2 partitions each (last: %r)" % (last,))
    b_parts = last[1].get("kcat-b", []) if ok else []
    start = dict(counts)
    produce(broker, counts, 5)
    check.true(wait_records([a, b], everything(counts, start), 30), "both members consume")
    time.sleep(0.5)  # auto commit interval

    killed_at = time.monotonic()
    b.stop(signal.SIGKILL)
    ok, last = wait_group(admin, lambda st, m: st == "Stable" and list(m) == ["kcat-a"] and
                          m["kcat-a"] == list(range(PARTITIONS)), 40)
    took = time.monotonic() - killed_at
    check.true(ok, "after SIGKILL the survivor owns all partitions (last: %r)" % (last,))
    print("rebalance after SIGKILL took %.1f s (session.timeout.ms=6000)" % took)
    check.true(took >= 4.0, "rebalance did not wait for the session timeout (%.1f s)" % took)
    start = dict(counts)
    produce(broker, counts, 5)
    ok = wait_records([a], everything(counts, start), 30)
    check.true(ok, "survivor consumes new records of every partition, including the killed one's %r" % b_parts)

    # --- acceptance 4: kill -9 of the broker keeps the group and its offsets --------------------------
    time.sleep(0.5)
    a.stop()
    before = committed(admin)
    check.eq(before, dict(counts), "committed offsets before broker kill -9")
    admin.close()
    broker.kill9()
    broker.start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    deadline = time.monotonic() + 20
    after = None
    while time.monotonic() < deadline:
        try:
            after = committed(admin)
            break
        except Exception as e:  # noqa: BLE001
            after = repr(e)
            time.sleep(0.3)
    check.eq(after, before, "committed offsets after broker kill -9")
    state, members = describe(admin)
    check.eq((state, members), ("Empty", {}), "group after broker kill -9")
    start = dict(counts)
    produce(broker, counts, 3)
    c3 = KcatConsumer(broker, "kcat-3")
    ok = wait_records([c3], everything(counts, start), 40)
    time.sleep(1.0)
    c3.stop()
    check.true(ok, "kcat -G after broker kill -9 consumed the new records")
    check.eq(sorted((p, o) for p, o, _ in c3.records), sorted(everything(counts, start)),
             "kcat -G after broker kill -9 resumes at the committed offsets")
    check_values(check, [a, b, c3])
    for c in (c1, c2, a, b, c3):
        bad = [line for line in c.stderr if "ERROR" in line or "FAIL" in line]
        if bad:
            print("%s stderr: %s" % (c.name, bad[:5]))
    admin.close()


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"num.partitions": str(PARTITIONS),
                                          "group.initial.rebalance.delay.ms": "0",
                                          "offsets.topic.num.partitions": "5"}))
