"""Client-matrix driver for confluent-kafka-python (on librdkafka): 2.16 from PyPI in the matrix's
venv (row confluent2, its wheel bundles librdkafka 2.16) and Debian's 1.7.0 on librdkafka 2.0.2
(row confluent). Steps the installed version has no API for SKIP (1.7: no delete_records).

    python confluent_driver.py BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
"""
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scenario import (TXN_OFFSET, Args, Reads, Skip, TxnReader, check_split, headers, key, out, phase_done, step,
                      txn_records, txn_wait_offset, value)


def wait(futs, timeout=30):
    for f in futs.values():
        f.result(timeout)


def main():
    a = Args(sys.argv)
    out("INFO confluent-kafka %s librdkafka %s" % (getattr(confluent_kafka, "__version__", None) or confluent_kafka.version()[0], confluent_kafka.libversion()[0]))
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    reads = Reads()

    def create():
        wait(admin.create_topics([NewTopic(a.topic, a.partitions, 1)], request_timeout=30))
        return "CreateTopics %d partitions" % a.partitions
    step("create", create)

    def produce():
        p = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5})
        errors = []

        def dr(err, msg):
            if err is not None:
                errors.append(err)
        for i in range(a.records):
            while True:
                try:
                    p.produce(a.topic, key=key(i), value=value(i, a.client), headers=headers(i, a.client),
                              timestamp=a.base + i, on_delivery=dr)
                    break
                except BufferError:
                    p.poll(0.1)
        left = p.flush(60)
        if left or errors:
            raise AssertionError("%d undelivered, errors %s" % (left, errors[:3]))
        return "%d records, acks=all, enable.idempotence=true" % a.records
    step("produce", produce)

    def consumer(group, **extra):
        conf = {"bootstrap.servers": a.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": False}
        conf.update(extra)
        return Consumer(conf)

    def phase(n, want):
        c = consumer(a.group)
        c.subscribe([a.topic])
        got, commit = 0, {}
        deadline = time.monotonic() + 60
        while got < want and time.monotonic() < deadline:
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error():
                    if m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(m.error())
                if got == want:
                    break
                got += 1
                reads.rec(n, m.partition(), m.offset(), m.key().decode(), m.value().decode(), m.headers())
                commit[m.partition()] = m.offset() + 1
        if commit:
            c.commit(offsets=[TopicPartition(a.topic, p, o) for p, o in commit.items()], asynchronous=False)
        c.close()
        return phase_done(got, want)
    step("consume", lambda: phase(1, a.first))
    step("resume", lambda: phase(2, a.records - a.first))

    def times():
        c = consumer(a.group + "-times")
        got = c.offsets_for_times([TopicPartition(a.topic, p, a.base + a.first) for p in range(a.partitions)],
                                  timeout=30)
        c.close()
        d = []
        for tp in got:
            if tp.error:
                raise KafkaException(tp.error)
            d.append(reads.check_time_offset(tp.partition, a.first, tp.offset, no_record=(-1,), end_offset_ok=True))
        return " ".join(d)
    step("offsets_for_times", times)

    def rebalance():
        g = a.group + "-coop"
        revoked = []
        ca = consumer(g, **{"partition.assignment.strategy": "cooperative-sticky"})
        cb = consumer(g, **{"partition.assignment.strategy": "cooperative-sticky"})
        ca.subscribe([a.topic], on_revoke=lambda c, ps: revoked.extend(tp.partition for tp in ps))
        try:
            deadline = time.monotonic() + 60
            while len(ca.assignment()) < a.partitions:
                if time.monotonic() > deadline:
                    raise AssertionError("member A alone got %s in 60 s" % ca.assignment())
                ca.poll(0.2)
            cb.subscribe([a.topic])
            deadline, stable = time.monotonic() + 90, 0
            while stable < 5:
                if time.monotonic() > deadline:
                    raise AssertionError("no stable split in 90 s: A %s B %s" % (ca.assignment(), cb.assignment()))
                ca.poll(0.1)
                cb.poll(0.1)
                sa = {tp.partition for tp in ca.assignment()}
                sb = {tp.partition for tp in cb.assignment()}
                stable = stable + 1 if sa and sb and not (sa & sb) and len(sa | sb) == a.partitions else 0
            return check_split(sa, sb, revoked, a.partitions)
        finally:
            ca.close()
            cb.close()
    step("rebalance", rebalance)

    def describe():
        if hasattr(admin, "describe_topics"):
            from confluent_kafka import TopicCollection
            d = admin.describe_topics(TopicCollection([a.topic]), request_timeout=30)[a.topic].result(30)
            parts = d.partitions
            if len(parts) != a.partitions or any(p.leader is None for p in parts):
                raise AssertionError("partitions %s" % parts)
            return "DescribeTopics: %d partitions with leaders" % len(parts)
        md = admin.list_topics(a.topic, timeout=30).topics[a.topic]
        if md.error is not None or len(md.partitions) != a.partitions:
            raise AssertionError("metadata %s, %d partitions" % (md.error, len(md.partitions)))
        return "Metadata: %d partitions (1.7 has no describe_topics)" % len(md.partitions)
    step("describe", describe)

    def delete_records():
        if not hasattr(admin, "delete_records"):
            raise Skip("confluent-kafka %s has no delete_records" % confluent_kafka.version()[0])
        r = admin.delete_records([TopicPartition(a.topic, 0, 10)], request_timeout=30)
        res = list(r.values())[0].result(30)
        low = getattr(res, "low_watermark", None)
        if low != 10:
            raise AssertionError("low watermark %s after deleting before 10" % low)
        c = consumer(a.group + "-wm")
        lo, hi = c.get_watermark_offsets(TopicPartition(a.topic, 0), timeout=30)
        c.close()
        if lo != 10:
            raise AssertionError("earliest offset %d after DeleteRecords(10)" % lo)
        return "partition 0 low watermark 10, earliest 10"
    step("delete_records", delete_records)

    def transactions():
        tx_topic, tx_group = a.topic + "-txn", a.group + "-txn"
        wait(admin.create_topics([NewTopic(tx_topic, a.partitions, 1)], request_timeout=30))
        p = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": "%s-txn-%s" % (a.group, a.client),
                      "acks": "all", "linger.ms": 5})
        # send_offsets_to_transaction takes a consumer's group metadata: this consumer of the group
        # never joins it (generation -1), as a consume-transform-produce loop would pass its own.
        gc = consumer(tx_group)
        errors = []

        def dr(err, msg):
            if err is not None:
                errors.append(err)
        p.init_transactions(30)
        for t in range(3):
            p.begin_transaction()
            for part, k, v in txn_records(t, a.client, a.partitions):
                p.produce(tx_topic, key=k, value=v, partition=part, on_delivery=dr)
            left = p.flush(60)  # every record delivered before the commit or abort
            if left or errors:
                raise AssertionError("transaction %d: %d undelivered, errors %s" % (t + 1, left, errors[:3]))
            if t == 0:
                p.send_offsets_to_transaction([TopicPartition(a.topic, 0, TXN_OFFSET)], gc.consumer_group_metadata(), 30)
            if t == 1:
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)
        counts = []
        for view, want in (("committed", 40), ("uncommitted", 60)):
            c = consumer(tx_group + "-" + view, **{"isolation.level": "read_" + view})
            c.assign([TopicPartition(tx_topic, part, confluent_kafka.OFFSET_BEGINNING) for part in range(a.partitions)])
            r = TxnReader(view, want)
            while not r.done():
                for m in c.consume(num_messages=100, timeout=0.2):
                    if m.error():
                        if m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                            continue
                        raise KafkaException(m.error())
                    r.rec(m.partition(), m.offset(), m.key().decode(), m.value().decode())
            c.close()
            counts.append(r.got)

        def fetch():
            tp = gc.committed([TopicPartition(a.topic, 0)], timeout=10)[0]
            if tp.error:
                raise KafkaException(tp.error)
            return tp.offset
        off = txn_wait_offset(fetch)
        gc.close()
        return ("3 transactions (commit 30 + send_offsets_to_transaction, abort 20, commit 10); read_committed %d, "
                "read_uncommitted %d, group offset %s" % (counts[0], counts[1], off))
    step("transactions", transactions)

    def delete():
        wait(admin.delete_topics([a.topic], request_timeout=30))
        deadline = time.monotonic() + 30
        while a.topic in admin.list_topics(timeout=10).topics:
            if time.monotonic() > deadline:
                raise AssertionError("topic still listed 30 s after delete")
            time.sleep(0.2)
        return "DeleteTopics, no longer listed"
    step("delete", delete)
    out("DONE")


if __name__ == "__main__":
    main()
