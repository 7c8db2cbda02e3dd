#!/usr/bin/env python3
"""Log compaction (issue #20) with real clients: confluent-kafka 2.16 (librdkafka 2.x) from the compat cache's venv
and Debian's kcat (librdkafka 2.0.2).

  A  10,000 keys written 100 times each (1,000,000 records, --keys/--rounds to change) to a compacted topic, then
     tombstones for 100 of them; after a roll the cleaner leaves exactly one record per live key: read back by
     confluent-kafka and by kcat, each is the LAST value written, at the offset its delivery report gave; the
     tombstones are still there within delete.retention.ms and gone after it; no .cleaned/.swap file is left,
     the partition directory shrank, and cleaner-offset-checkpoint names the topic.
  B  kill -9 at random points while the (throttled) cleaner works, --crash-rounds rounds (20): after every restart
     each key reads back with its last value (nothing compaction should keep is lost), offsets only increase, the
     log reads whole; at the end the cleaner finishes and one record per key is left.
  C  a group committing offsets in a loop: __consumer_offsets (small segments) is compacted while the coordinator
     serves, and the committed offsets survive a restart.
  D  a transactional producer aborts, then commits, on a compacted topic with delete.retention.ms 1000: once the
     cleaner has removed the ABORT marker, a read_committed consumer still sees the committed values (the marker's
     aborted-transaction index entry goes with it; a break-it run found the later commit hidden behind it).

Usage: compaction_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache [--keys N --rounds N]
Exit 0 pass, 1 fail, 77 skipped (no binary, or no venv).
"""
import os
import random
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402

KCAT = "/usr/bin/kcat"
SEED = int(os.environ.get("SLUICE_TEST_SEED", str(int(time.time()))))


def producer(bootstrap, compression="lz4"):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                     "queue.buffering.max.messages": 1000000, "compression.type": compression, "acks": "all"})


def produce(bootstrap, topic, items, check, compression="lz4"):
    """items: iterable of (key, value or None). Returns {key: (offset, value)} of the last delivered write of each."""
    p = producer(bootstrap, compression)
    last = {}
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)
            return
        k = msg.key().decode()
        off = msg.offset()
        if k not in last or last[k][0] < off:
            last[k] = (off, None if msg.value() is None else msg.value().decode())

    for i, (k, v) in enumerate(items):
        while True:
            try:
                p.produce(topic, key=k.encode(), value=None if v is None else v.encode(), partition=0,
                          on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    check.eq(p.flush(60), 0, "records left unflushed")
    check.eq(errors[:3], [], "delivery errors")
    return last


def consume_all(bootstrap, topic, timeout=60):
    """Every record of partition 0 from the beginning to the high watermark: [(offset, key, value)]."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-reader-%d" % random.randrange(1 << 30),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, low)])
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msgs = c.consume(10000, 1.0)
            done = False
            for m in msgs:
                if m.error():
                    if m.error().code() == -191:  # _PARTITION_EOF
                        done = m.offset() >= high
                        continue
                    raise RuntimeError("consume error: %s" % m.error())
                out.append((m.offset(), m.key().decode() if m.key() is not None else None,
                            None if m.value() is None else m.value().decode()))
            if done or (out and out[-1][0] >= high - 1):
                break
        return out
    finally:
        c.close()


def kcat_all(broker, topic):
    p = subprocess.run([KCAT, "-b", broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
                        "-Z", "-f", "%o %k %S\n"], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("kcat: %s" % p.stderr.decode(errors="replace"))
    out = []
    for line in p.stdout.decode().splitlines():
        off, key, size = line.split(" ")
        out.append((int(off), key, int(size)))
    return out


def create_topic(bootstrap, topic, configs):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1, config=configs)]).values():
        f.result(timeout=15)


def _try_create(bootstrap, topic, configs):
    """Creates the topic; False while the old one of that name is still being dropped."""
    try:
        create_topic(bootstrap, topic, configs)
        return True
    except Exception:  # noqa: BLE001 - TOPIC_ALREADY_EXISTS "marked for deletion" until the drop ends
        return False


def dir_size(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def leftover_files(path):
    return [f for f in os.listdir(path) if f.endswith(".cleaned") or f.endswith(".swap")]


def roll(bootstrap, topic, segment_ms):
    """segment.ms passes, then one more record: the active segment rolls, so everything before it is cleanable."""
    time.sleep(segment_ms / 1000.0 + 0.2)
    p = producer(bootstrap)
    p.produce(topic, key=b"__roll", value=b"r", partition=0)
    p.flush(10)


def latest_by_key(records):
    m = {}
    for off, k, v in records:
        m[k] = (off, v)
    return m


def part_a(broker, check, keys, rounds):
    topic = "compacted-a"
    retention_ms = 8000
    segment_ms = 1500
    create_topic(broker.bootstrap, topic, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                                           "segment.ms": str(segment_ms), "min.cleanable.dirty.ratio": "0.01",
                                           "delete.retention.ms": str(retention_ms)})
    t0 = time.monotonic()
    items = (("key-%05d" % k, "value-%05d-round-%03d" % (k, r)) for r in range(rounds) for k in range(keys))
    last = produce(broker.bootstrap, topic, items, check)
    dead = ["key-%05d" % k for k in range(0, keys, max(1, keys // 100))]
    last.update(produce(broker.bootstrap, topic, ((k, None) for k in dead), check))
    print("A: produced %d records (+%d tombstones) in %.1f s" % (keys * rounds, len(dead), time.monotonic() - t0))
    pdir = os.path.join(broker.data_dir, topic + "-0")
    roll(broker.bootstrap, topic, segment_ms)
    last["__roll"] = None

    # Until the cleaner has been through: one record per key (tombstones included) in what can be read.
    want_live = {k: v for k, v in last.items() if v is not None and v[1] is not None}
    expected = len(want_live) + len(dead) + 1

    def settled():
        recs = consume_all(broker.bootstrap, topic)
        return recs if len(recs) == expected else None

    t1 = time.monotonic()
    recs = h.wait_until(settled, 120, step=1.0)
    check.true(recs is not None, "compacted to %d records within 120 s" % expected)
    if recs is None:
        return
    print("A: compacted to %d records %.1f s after the roll; the partition directory holds %d bytes" %
          (len(recs), time.monotonic() - t1, dir_size(pdir)))
    got = latest_by_key(recs)
    check.eq(len(got), len(recs), "one record per key")
    bad = [k for k, v in want_live.items() if got.get(k) != v]
    check.eq(bad[:5], [], "keys whose record is not the last write at its delivered offset (of %d)" % len(want_live))
    check.true(all(k in got and got[k][1] is None for k in dead), "tombstones kept within delete.retention.ms")
    # Uncompacted, 1,000,000 such records take about 10 MB even with lz4; one active segment may stay.
    check.true(dir_size(pdir) < 1048576 + 50 * len(want_live), "the partition directory holds %d bytes" % dir_size(pdir))
    check.eq(leftover_files(pdir), [], ".cleaned/.swap files left")
    with open(os.path.join(broker.data_dir, "cleaner-offset-checkpoint")) as f:
        check.true(("%s 0 " % topic) in f.read(), "cleaner-offset-checkpoint names the topic")

    # kcat reads the same offsets and keys (-Z: a tombstone prints size -1).
    k = kcat_all(broker, topic)
    check.eq([(o, key) for o, key, _ in k], [(o, key) for o, key, _ in recs], "kcat reads the same offsets and keys")

    # After delete.retention.ms the tombstones go (a later pass finds their delete horizon passed).
    def tombstones_gone():
        r = consume_all(broker.bootstrap, topic)
        return r if len(r) == len(want_live) + 1 else None

    recs = h.wait_until(tombstones_gone, retention_ms / 1000.0 + 60, step=1.0)
    check.true(recs is not None, "tombstones removed after delete.retention.ms")
    if recs:
        got = latest_by_key(recs)
        check.true(not any(k in got for k in dead), "no tombstoned key left")
        check.eq(sum(1 for k, v in want_live.items() if got.get(k) != v), 0, "live keys unchanged by the tombstone pass")

    # The topic deleted and made again under its name: its cleaner checkpoint (past 1,000,000) must not carry over,
    # or the new log's first records would count as cleaned already and never be compacted.
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_topics([topic]).values():
        f.result(timeout=15)
    h.wait_until(lambda: topic not in admin.list_topics(timeout=5).topics, 30)
    h.wait_until(lambda: not os.path.isdir(pdir), 30)
    created = h.wait_until(lambda: _try_create(broker.bootstrap, topic, {
        "cleanup.policy": "compact", "segment.bytes": "1048576", "segment.ms": str(segment_ms),
        "min.cleanable.dirty.ratio": "0.01"}), 30, step=0.5)
    check.true(created, "the topic made again")
    again = produce(broker.bootstrap, topic, (("again-%03d" % (i % 100), "v%05d" % i) for i in range(5000)), check)
    roll(broker.bootstrap, topic, segment_ms)
    recs = h.wait_until(lambda: (lambda r: r if len(r) == 101 else None)(consume_all(broker.bootstrap, topic)), 60,
                        step=1.0)
    check.true(recs is not None, "the topic made again compacts from its first offset (100 keys and the roll record)")
    if recs:
        got = latest_by_key(recs)
        check.eq(sum(1 for k, v in again.items() if got.get(k) != v), 0, "made again: keys without their last value")


def part_d(binary, check):
    """Transactions on a compacted topic with a short delete.retention.ms: once the cleaner has removed an ABORT
    marker (and its aborted-transaction index entry), a read_committed consumer still sees the same producer's
    later committed transaction (a break-it run found them hidden behind a stale index entry)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    broker = h.Broker(binary, {"log.cleaner.backoff.ms": "200"})
    topic = "compacted-d"
    try:
        broker.start()
        create_topic(broker.bootstrap, topic, {"cleanup.policy": "compact", "internal.segment.bytes": "3000",
                                               "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000",
                                               "segment.ms": "1000"})
        plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
        txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "compaction-d"})
        txn.init_transactions()
        for i in range(40):
            plain.produce(topic, key=b"k%d" % i, value=b"plain%d" % i, partition=0)
        plain.flush(10)
        txn.begin_transaction()
        for i in range(40):
            txn.produce(topic, key=b"k%d" % i, value=b"aborted%d" % i, partition=0)
        txn.flush(10)
        for i in range(40, 80):
            plain.produce(topic, key=b"k%d" % i, value=b"plain%d" % i, partition=0)
        plain.flush(10)
        txn.abort_transaction()
        txn.begin_transaction()
        for i in range(0, 80, 2):
            txn.produce(topic, key=b"k%d" % i, value=b"committed%d" % i, partition=0)
        txn.commit_transaction()
        want = {"k%d" % i: ("committed%d" % i if i % 2 == 0 else "plain%d" % i) for i in range(80)}
        for n in range(3):  # rolls, so the abort marker's segment is cleaned, then again after its horizon
            time.sleep(1.2)
            plain.produce(topic, key=b"roll", value=b"r%d" % n, partition=0)
            plain.flush(10)
        want["roll"] = "r2"

        def read_committed():
            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "d-%d" % random.randrange(1 << 30),
                          "isolation.level": "read_committed", "enable.partition.eof": True,
                          "auto.offset.reset": "earliest"})
            c.assign([TopicPartition(topic, 0, 0)])
            got, deadline = {}, time.monotonic() + 20
            while time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == -191:
                        break
                    continue
                got[m.key().decode()] = m.value().decode()
            c.close()
            return got

        def markers_removed():
            found = re.findall(r"cleaned %s-0 .* (\d+) marker\(s\) removed" % topic, broker.log_text())
            return sum(int(n) for n in found)

        check.true(h.wait_until(lambda: markers_removed() > 0, 30), "the cleaner removed the abort marker")
        got = h.wait_until(lambda: (lambda g: g if g == want else None)(read_committed()), 30, step=1.0)
        check.eq(read_committed() if got is None else got, want, "read_committed after the marker went")
        print("D: %d marker(s) removed; read_committed sees the %d keys" % (markers_removed(), len(want)))
    finally:
        if broker.alive():
            broker.stop()
        broker.close(failed=bool(check.failures))


def part_b(binary, check, rounds):
    """kill -9 while the cleaner works; the data must survive every crash."""
    keys, versions = 2000, 40
    # Written with the cleaner off: uncompressed, about 5.6 MB in 6 segments. Then each round restarts the broker and
    # kills it: even rounds throttle the cleaner to 250 KB/s and kill 1 to 2 s after the start, inside the pass (a
    # pass reads the dirty part to map it, then reads everything and writes the survivors: 2 s and more at that
    # rate); odd rounds let it run at 16 MB/s and kill 0.05 to 3 s after the start, before, during or after passes.
    # Each round then writes one more version of every key so that the next restart has dirty data again.
    broker = h.Broker(binary, {"log.cleaner.enable": "false"})
    rng = random.Random(SEED)
    topic = "compacted-b"
    try:
        broker.start()
        create_topic(broker.bootstrap, topic, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                                               "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
        items = (("key-%04d" % k, "v-%04d-%03d-%040x" % (k, r, rng.getrandbits(160)))
                 for r in range(versions) for k in range(keys))
        last = produce(broker.bootstrap, topic, items, check, compression="none")
        roll(broker.bootstrap, topic, 1000)
        last["__roll"] = (None, "r")
        want = {k: v[1] for k, v in last.items()}
        broker.stop()
        broker.overrides.update({"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "100"})
        pdir = os.path.join(broker.data_dir, topic + "-0")
        mid_pass = 0
        for i in range(rounds):
            slow = i % 2 == 0
            broker.overrides["log.cleaner.io.max.bytes.per.second"] = "250000" if slow else "16000000"
            broker.start(ready_timeout=30)
            time.sleep(rng.uniform(1.0, 2.0) if slow else rng.uniform(0.05, 3.0))
            broker.kill9()
            mid_pass += 1 if leftover_files(pdir) else 0
            broker.start(ready_timeout=30)
            recs = consume_all(broker.bootstrap, topic)
            offsets = [o for o, _, _ in recs]
            check.true(all(a < b for a, b in zip(offsets, offsets[1:])), "round %d: offsets increase" % i)
            got = {k: v for _, k, v in recs}
            lost = [k for k, v in want.items() if got.get(k) != v]
            if not check.eq(lost[:5], [], "round %d: keys whose last value is not read back" % i):
                break
            more = [("key-%04d" % k, "v-round-%02d-%040x" % (i, rng.getrandbits(160))) for k in range(keys)]
            for k, v in produce(broker.bootstrap, topic, more, check, compression="none").items():
                want[k] = v[1]
            broker.stop()
        installed = broker.log_text().count("info log cleaner: cleaned %s-0" % topic)
        check.true(mid_pass > 0, "some kill landed while a pass was writing (.cleaned/.swap files at the kill)")
        check.true(installed > 0, "some pass was installed between the kills")
        broker.overrides["log.cleaner.io.max.bytes.per.second"] = "1.7976931348623157E308"
        broker.start(ready_timeout=30)
        roll(broker.bootstrap, topic, 1000)  # a second "__roll" in the new active segment: never cleaned

        def done():
            r = consume_all(broker.bootstrap, topic)
            return r if len(r) == len(want) + 1 else None

        recs = h.wait_until(done, 120, step=1.0)
        check.true(recs is not None, "after %d kills the cleaner finishes: one record per key" % rounds)
        if recs:
            got = {k: v for _, k, v in recs}
            check.eq(sum(1 for k, v in want.items() if got.get(k) != v), 0, "keys without their last value at the end")
        check.eq(leftover_files(pdir), [], ".cleaned/.swap files left")
        print("B: %d kill -9 rounds (seed %d), %d of them while a pass was writing, %d passes installed between them; "
              "then %s records" % (rounds, SEED, mid_pass, installed, len(recs) if recs else None))
    finally:
        if broker.alive():
            broker.stop()
        broker.close(failed=bool(check.failures))


def part_c(binary, check):
    """Offsets committed in a loop: __consumer_offsets is compacted and the offsets survive a restart."""
    from confluent_kafka import Consumer, TopicPartition
    overrides = {"log.cleaner.backoff.ms": "100", "offsets.topic.num.partitions": "1",
                 "offsets.topic.segment.bytes": "65536"}
    broker = h.Broker(binary, overrides)
    try:
        broker.start()
        create_topic(broker.bootstrap, "c-data", {})
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer", "enable.auto.commit": False})
        commits = 3000
        for i in range(commits):
            c.commit(offsets=[TopicPartition("c-data", 0, i + 1)], asynchronous=False)
        c.close()
        odir = os.path.join(broker.data_dir, "__consumer_offsets-0")

        def compacted():
            segs = [f for f in os.listdir(odir) if f.endswith(".log")]
            return dir_size(odir) < 65536 * 3 and len(segs) >= 1 and not leftover_files(odir)

        ok = h.wait_until(compacted, 60, step=0.5)
        check.true(ok, "__consumer_offsets compacted below 3 segments' worth (%d bytes now)" % dir_size(odir))
        print("C: %d commits -> __consumer_offsets-0 is %d bytes" % (commits, dir_size(odir)))
        broker.stop()
        broker.start()
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer", "enable.auto.commit": False})
        got = c.committed([TopicPartition("c-data", 0)], timeout=15)
        c.close()
        check.eq(got[0].offset, commits, "committed offset after the restart")
    finally:
        if broker.alive():
            broker.stop()
        broker.close(failed=bool(check.failures))


def main():
    def more(ap):
        ap.add_argument("--keys", type=int, default=10000)
        ap.add_argument("--rounds", type=int, default=100)
        ap.add_argument("--crash-rounds", type=int, default=20)
        ap.add_argument("--parts", default="abcd")

    args, skip = h.client_test_args(__doc__, __file__, add_arguments=more)
    if skip is not None:
        return skip
    print("seed %d (SLUICE_TEST_SEED)" % SEED)
    rc = 0
    if "a" in args.parts:
        rc |= h.run(lambda broker, check: part_a(broker, check, args.keys, args.rounds), args.broker,
                    {"log.cleaner.backoff.ms": "200"})
    for part, fn in (("b", lambda check: part_b(args.broker, check, args.crash_rounds)),
                     ("c", lambda check: part_c(args.broker, check)),
                     ("d", lambda check: part_d(args.broker, check))):
        if part in args.parts:
            check = h.Checker()
            try:
                fn(check)
            except Exception as e:  # noqa: BLE001 - a failure to report
                import traceback
                traceback.print_exc()
                check.failures.append("exception: %r" % (e,))
            rc |= check.report()
    print("PASS" if rc == 0 else "FAILED")
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
