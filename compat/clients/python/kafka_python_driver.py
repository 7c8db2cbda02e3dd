"""Client-matrix driver for kafka-python (pure Python, its own protocol code): 3.x from PyPI in the
matrix's venv (row kafkapython3) and Debian's 2.0.2 (row kafkapython). Steps the installed version
has no API for SKIP: 2.0.2 has no idempotent producer, no cooperative assignor, no DeleteRecords, no
transactional producer.

    python kafka_python_driver.py BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
"""
import sys
import time

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from scenario import (TXN_OFFSET, Args, Reads, Skip, TxnReader, check_split, headers, key, out, phase_done, step,
                      txn_records, txn_wait_offset, value)

V3 = not kafka.__version__.startswith(("1.", "2."))


def main():
    a = Args(sys.argv)
    out("INFO kafka-python %s" % kafka.__version__)
    admin = KafkaAdminClient(bootstrap_servers=a.bootstrap, request_timeout_ms=30000)
    reads = Reads()

    def create():
        admin.create_topics([NewTopic(a.topic, a.partitions, 1)], timeout_ms=30000)
        return "CreateTopics %d partitions" % a.partitions
    step("create", create)

    def produce():
        conf = dict(bootstrap_servers=a.bootstrap, acks="all", linger_ms=5)
        if V3:
            conf["enable_idempotence"] = True
        p = KafkaProducer(**conf)
        futs = [p.send(a.topic, key=key(i).encode(), value=value(i, a.client).encode(),
                       headers=headers(i, a.client), timestamp_ms=a.base + i) for i in range(a.records)]
        p.flush(60)
        for f in futs:
            f.get(timeout=60)
        p.close()
        return "%d records, acks=all%s" % (a.records, ", idempotent" if V3 else " (2.0.2: no idempotent producer)")
    step("produce", produce)

    def consumer(group, **extra):
        return KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **extra)

    def phase(n, want):
        c = consumer(a.group)
        c.subscribe([a.topic])
        got, commit = 0, {}
        deadline = time.monotonic() + 60
        while got < want and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500).items():
                for m in msgs:
                    if got == want:
                        break
                    got += 1
                    reads.rec(n, m.partition, m.offset, m.key.decode(), m.value.decode(), m.headers)
                    commit[tp] = OffsetAndMetadata(m.offset + 1, "", -1) if V3 else OffsetAndMetadata(m.offset + 1, "")
        c.commit(offsets=commit)
        c.close(autocommit=False)
        return phase_done(got, want)
    step("consume", lambda: phase(1, a.first))
    step("resume", lambda: phase(2, a.records - a.first))

    def times():
        c = consumer(None)
        tps = [TopicPartition(a.topic, p) for p in range(a.partitions)]
        got = c.offsets_for_times({tp: a.base + a.first for tp in tps})
        c.close()
        d = []
        for tp in tps:
            o = got.get(tp)
            d.append(reads.check_time_offset(tp.partition, a.first, None if o is None else o.offset))
        return " ".join(d)
    step("offsets_for_times", times)

    def rebalance():
        if not V3:
            raise Skip("kafka-python 2.0.2 has no cooperative-sticky assignor")
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka import ConsumerRebalanceListener
        revoked = []

        class L(ConsumerRebalanceListener):
            def on_partitions_revoked(self, ps):
                revoked.extend(tp.partition for tp in ps)

            def on_partitions_assigned(self, ps):
                pass
        g = a.group + "-coop"
        ca = consumer(g, partition_assignment_strategy=[CooperativeStickyAssignor])
        ca.subscribe([a.topic], listener=L())
        deadline = time.monotonic() + 60
        while len(ca.assignment()) < a.partitions:
            if time.monotonic() > deadline:
                raise AssertionError("member A alone got %s in 60 s" % ca.assignment())
            ca.poll(timeout_ms=200)
        cb = consumer(g, partition_assignment_strategy=[CooperativeStickyAssignor])
        cb.subscribe([a.topic])
        deadline, stable = time.monotonic() + 90, 0
        while stable < 5:
            if time.monotonic() > deadline:
                raise AssertionError("no stable split in 90 s: A %s B %s" % (ca.assignment(), cb.assignment()))
            ca.poll(timeout_ms=100)
            cb.poll(timeout_ms=100)
            sa = {tp.partition for tp in ca.assignment()}
            sb = {tp.partition for tp in cb.assignment()}
            stable = stable + 1 if sa and sb and not (sa & sb) and len(sa | sb) == a.partitions else 0
        try:
            return check_split(sa, sb, revoked, a.partitions)
        finally:
            ca.close(autocommit=False)
            cb.close(autocommit=False)
    step("rebalance", rebalance)

    def describe():
        ts = admin.describe_topics([a.topic])
        t = [t for t in ts if (t.get("topic") or t.get("name")) == a.topic][0]
        if t.get("error_code", 0):
            raise AssertionError("error %s" % t["error_code"])
        parts = t["partitions"]
        if len(parts) != a.partitions or any(p.get("leader", p.get("leader_id", -1)) < 0 for p in parts):
            raise AssertionError("partitions %s" % parts)
        return "%d partitions with leaders" % len(parts)
    step("describe", describe)

    def delete_records():
        if not hasattr(admin, "delete_records"):
            raise Skip("kafka-python %s has no delete_records" % kafka.__version__)
        tp = TopicPartition(a.topic, 0)
        r = admin.delete_records({tp: 10}, timeout_ms=30000)
        low = r[tp]["low_watermark"] if isinstance(r[tp], dict) else getattr(r[tp], "low_watermark", r[tp])
        if low != 10:
            raise AssertionError("low watermark %s after deleting before 10" % (r[tp],))
        c = consumer(None)
        first = c.beginning_offsets([tp])[tp]
        c.close()
        if first != 10:
            raise AssertionError("earliest offset %d after DeleteRecords(10)" % first)
        return "partition 0 low watermark 10, earliest 10"
    step("delete_records", delete_records)

    def transactions():
        if not V3:
            raise Skip("kafka-python %s has no transactional producer (transactional_id: 3.x)" % kafka.__version__)
        tx_topic, tx_group = a.topic + "-txn", a.group + "-txn"
        admin.create_topics([NewTopic(tx_topic, a.partitions, 1)], timeout_ms=30000)
        p = KafkaProducer(bootstrap_servers=a.bootstrap, transactional_id="%s-txn-%s" % (a.group, a.client), acks="all")
        try:
            p.init_transactions()
            for t in range(3):
                p.begin_transaction()
                futs = [p.send(tx_topic, key=k.encode(), value=v.encode(), partition=part)
                        for part, k, v in txn_records(t, a.client, a.partitions)]
                if t == 0:
                    p.send_offsets_to_transaction({TopicPartition(a.topic, 0): OffsetAndMetadata(TXN_OFFSET, "", -1)},
                                                  tx_group)
                p.flush(60)
                for f in futs:
                    f.get(timeout=60)
                if t == 1:
                    p.abort_transaction()
                else:
                    p.commit_transaction()
        finally:
            p.close(timeout=30)
        counts = []
        for view, want in (("committed", 40), ("uncommitted", 60)):
            c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=None, enable_auto_commit=False,
                              auto_offset_reset="earliest", isolation_level="read_" + view)
            tps = [TopicPartition(tx_topic, part) for part in range(a.partitions)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            r = TxnReader(view, want)
            while not r.done():
                for tp, msgs in c.poll(timeout_ms=200).items():
                    for m in msgs:
                        r.rec(m.partition, m.offset, m.key.decode(), m.value.decode())
            c.close()
            counts.append(r.got)

        def fetch():
            tp = TopicPartition(a.topic, 0)
            o = admin.list_group_offsets({tx_group: [tp]}).get(tx_group, {}).get(tp)
            return None if o is None else o.offset
        off = txn_wait_offset(fetch)
        return ("3 transactions (commit 30 + send_offsets_to_transaction, abort 20, commit 10); read_committed %d, "
                "read_uncommitted %d, group offset %s" % (counts[0], counts[1], off))
    step("transactions", transactions)

    def delete():
        admin.delete_topics([a.topic], timeout_ms=30000)
        deadline = time.monotonic() + 30
        while a.topic in admin.list_topics():
            if time.monotonic() > deadline:
                raise AssertionError("topic still listed 30 s after delete")
            time.sleep(0.2)
        return "DeleteTopics, no longer listed"
    step("delete", delete)
    admin.close()
    out("DONE")


if __name__ == "__main__":
    main()
