"""Client-matrix driver for aiokafka (asyncio, pure Python protocol code), from PyPI in the matrix's
venv (row aiokafka). aiokafka has no cooperative rebalancing (eager assignors only): that step SKIPs.

    python aiokafka_driver.py BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
"""
import asyncio
import sys
import time
import traceback

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete

from scenario import TXN_OFFSET, Args, Reads, Skip, TxnReader, headers, key, out, phase_done, txn_records, value


async def step(name, coro_fn):
    try:
        detail = await coro_fn()
        out("STEP %s PASS %s" % (name, detail or ""))
    except Skip as e:
        out("STEP %s SKIP %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - reported as the step's failure
        traceback.print_exc(file=sys.stderr)
        out("STEP %s FAIL %s: %s" % (name, type(e).__name__, str(e).replace("\n", " ")[:400]))


async def main():
    a = Args(sys.argv)
    out("INFO aiokafka %s" % aiokafka.__version__)
    admin = AIOKafkaAdminClient(bootstrap_servers=a.bootstrap, request_timeout_ms=30000)
    await admin.start()
    reads = Reads()

    async def create():
        await admin.create_topics([NewTopic(a.topic, a.partitions, 1)], timeout_ms=30000)
        return "CreateTopics %d partitions" % a.partitions
    await step("create", create)

    async def produce():
        p = AIOKafkaProducer(bootstrap_servers=a.bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
        await p.start()
        try:
            futs = [await p.send(a.topic, key=key(i).encode(), value=value(i, a.client).encode(),
                                 headers=headers(i, a.client), timestamp_ms=a.base + i) for i in range(a.records)]
            await asyncio.wait_for(asyncio.gather(*futs), 60)
        finally:
            await p.stop()
        return "%d records, acks=all, enable_idempotence=True" % a.records
    await step("produce", produce)

    def consumer(group):
        return AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False)

    async def phase(n, want):
        c = consumer(a.group)
        await c.start()
        got, commit = 0, {}
        try:
            c.subscribe([a.topic])
            deadline = time.monotonic() + 60
            while got < want and time.monotonic() < deadline:
                for tp, msgs in (await c.getmany(timeout_ms=500)).items():
                    for m in msgs:
                        if got == want:
                            break
                        got += 1
                        reads.rec(n, m.partition, m.offset, m.key.decode(), m.value.decode(), m.headers)
                        commit[tp] = m.offset + 1
            if commit:
                await c.commit(commit)
        finally:
            await c.stop()
        return phase_done(got, want)
    await step("consume", lambda: phase(1, a.first))
    await step("resume", lambda: phase(2, a.records - a.first))

    async def times():
        c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap)
        await c.start()
        try:
            tps = [TopicPartition(a.topic, p) for p in range(a.partitions)]
            got = await c.offsets_for_times({tp: a.base + a.first for tp in tps})
        finally:
            await c.stop()
        d = []
        for tp in tps:
            o = got.get(tp)
            d.append(reads.check_time_offset(tp.partition, a.first, None if o is None else o.offset))
        return " ".join(d)
    await step("offsets_for_times", times)

    async def rebalance():
        raise Skip("aiokafka has no cooperative rebalancing (eager assignors only)")
    await step("rebalance", rebalance)

    async def describe():
        ts = await admin.describe_topics([a.topic])
        t = [t for t in ts if (t.get("topic") or t.get("name")) == a.topic][0]
        parts = t["partitions"]
        if t.get("error_code", 0) or len(parts) != a.partitions or any(p.get("leader", -1) < 0 for p in parts):
            raise AssertionError("metadata %s" % t)
        return "%d partitions with leaders" % len(parts)
    await step("describe", describe)

    async def delete_records():
        tp = TopicPartition(a.topic, 0)
        r = await admin.delete_records({tp: RecordsToDelete(before_offset=10)}, timeout_ms=30000)
        if r.get(tp) != 10:
            raise AssertionError("low watermark %s after deleting before 10" % r.get(tp))
        c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap)
        await c.start()
        try:
            first = (await c.beginning_offsets([tp]))[tp]
        finally:
            await c.stop()
        if first != 10:
            raise AssertionError("earliest offset %d after DeleteRecords(10)" % first)
        return "partition 0 low watermark 10, earliest 10"
    await step("delete_records", delete_records)

    async def transactions():
        tx_topic, tx_group = a.topic + "-txn", a.group + "-txn"
        await admin.create_topics([NewTopic(tx_topic, a.partitions, 1)], timeout_ms=30000)
        p = AIOKafkaProducer(bootstrap_servers=a.bootstrap, transactional_id="%s-txn-%s" % (a.group, a.client),
                             acks="all", enable_idempotence=True)
        await p.start()  # InitProducerId for the transactional id
        try:
            for t in range(3):
                await p.begin_transaction()
                futs = [await p.send(tx_topic, key=k.encode(), value=v.encode(), partition=part)
                        for part, k, v in txn_records(t, a.client, a.partitions)]
                if t == 0:
                    await p.send_offsets_to_transaction({TopicPartition(a.topic, 0): TXN_OFFSET}, tx_group)
                await asyncio.wait_for(asyncio.gather(*futs), 60)  # every record sent before the commit or abort
                if t == 1:
                    await p.abort_transaction()
                else:
                    await p.commit_transaction()
        finally:
            await p.stop()
        counts = []
        for view, want in (("committed", 40), ("uncommitted", 60)):
            c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                                 isolation_level="read_" + view)
            await c.start()
            try:
                tps = [TopicPartition(tx_topic, part) for part in range(a.partitions)]
                c.assign(tps)
                await c.seek_to_beginning(*tps)
                r = TxnReader(view, want)
                while not r.done():
                    for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                        for m in msgs:
                            r.rec(m.partition, m.offset, m.key.decode(), m.value.decode())
            finally:
                await c.stop()
            counts.append(r.got)
        deadline = time.monotonic() + 15  # the offset shows once the COMMIT marker is in __consumer_offsets
        while True:
            o = (await admin.list_consumer_group_offsets(tx_group, partitions=[TopicPartition(a.topic, 0)])).get(
                TopicPartition(a.topic, 0))
            off = -1 if o is None else o.offset
            if off == TXN_OFFSET or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        out("TXNOFFSET %s" % off)
        return ("3 transactions (commit 30 + send_offsets_to_transaction, abort 20, commit 10); read_committed %d, "
                "read_uncommitted %d, group offset %s" % (counts[0], counts[1], off))
    await step("transactions", transactions)

    async def delete():
        await admin.delete_topics([a.topic], timeout_ms=30000)
        deadline = time.monotonic() + 30
        while a.topic in await admin.list_topics():
            if time.monotonic() > deadline:
                raise AssertionError("topic still listed 30 s after delete")
            await asyncio.sleep(0.2)
        return "DeleteTopics, no longer listed"
    await step("delete", delete)
    await admin.close()
    out("DONE")


if __name__ == "__main__":
    asyncio.run(main())
