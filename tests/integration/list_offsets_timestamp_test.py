#!/usr/bin/python3
"""ListOffsets by timestamp (KIP-79) and MAX_TIMESTAMP (KIP-734) inside compressed batches.

Kafka answers a timestamp lookup with the first record, in offset order, whose timestamp >= the target:
it reads (decompresses) the records of the batch (LogSegment.findOffsetByTimestamp /
FileRecords.searchForTimestamp), and MAX_TIMESTAMP with the first record carrying the largest timestamp
(RecordBatch.offsetOfMaxTimestamp, Kafka 3.7.1+). A broker that answers a compressed batch's base offset
sends a consumer that seeks by time back to the start of the batch.

1. For none, gzip, snappy, lz4 and zstd: confluent-kafka-python (librdkafka) produces N records with
   explicit timestamps T0, T0+10, ..., T0+10*(N-1) with compression.type=<codec> and a long linger, so that
   they share one or a few batches; the segment file is read to check the stored codec and that one batch
   holds at least N/2 records (else the lookups below would not test anything inside a batch).
   Consumer.offsets_for_times answers: the first record's timestamp -> 0; a middle record's -> its offset;
   between two records -> the later; the last record's -> N-1; above every timestamp -> -1 (none).
2. The same lookups with hand-built ListOffsets v7 requests (kafka_wire.py), checking the exact response
   fields: error 0, timestamp = the found record's timestamp, offset, leader epoch 0 (the batch's); above
   every timestamp: timestamp -1 and offset -1. MAX_TIMESTAMP (-3): timestamp T0+10*(N-1), offset N-1.
3. Per codec, one batch whose timestamps go backwards: T0 + [100, 300, 200, 400, 400, 350] at offsets 0..5.
   Lookups 150 -> offset 1 (timestamp 300), 250 -> 1 (300 is first in offset order), 350 -> 3 (400),
   401 -> none; MAX_TIMESTAMP -> (400, 3): the first of the two records carrying 400.
"""
import os
import struct
import time

import sluice_harness as h
from kafka_wire import Conn, Reader, cstring

try:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError as e:  # pragma: no cover
    print("SKIPPED: confluent-kafka not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)

LIST_OFFSETS = 2
MAX_TIMESTAMP = -3
N = 200
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# An hour ago, whole seconds: inside any timestamp window a broker could apply.
T0 = (int(time.time()) - 3600) * 1000


def create_topic(broker, name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for _, f in admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=10).items():
        f.result(timeout=15)


def produce(broker, check, topic, codec, timestamps):
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 1000,
                  "batch.num.messages": 10000, "acks": "all"})
    # Learn the partition first: records produced before the metadata arrives wait in librdkafka's
    # unassigned queue and may leave in a batch of their own, splitting the batch this test needs.
    p.list_topics(topic, timeout=10)
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))

    for i, ts in enumerate(timestamps):
        value = ("%s record %d " % (codec, i) + "payload " * 12).encode()
        p.produce(topic, value=value, key=b"k%d" % i, partition=0, timestamp=ts, on_delivery=on_delivery)
    left = p.flush(30)
    check.eq((left, errors), (0, []), "%s: every record delivered" % topic)


def stored_batches(broker, topic):
    """(codec, records count) of every batch in the partition's segment files."""
    return [(CODECS.get(attrs & 7, "?"), count)
            for _, attrs, count in h.segment_batches(os.path.join(broker.data_dir, topic + "-0"))]


def offsets_for_times(broker, topic, targets):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lot-" + topic, "enable.auto.commit": False})
    try:
        out = []
        for ts in targets:  # one request per target: a partition named twice is INVALID_REQUEST
            r = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
            out.append(r[0].offset if r[0].error is None else str(r[0].error))
        return out
    finally:
        c.close()


def list_offsets_v7(conn, topic, timestamp):
    """One partition, one timestamp, ListOffsets v7 (flexible). Returns (error, timestamp, offset, epoch)."""
    body = struct.pack(">ib", -1, 0)  # replica id, isolation level READ_UNCOMMITTED
    body += bytes([2]) + cstring(topic)  # one topic
    body += bytes([2]) + struct.pack(">iiq", 0, -1, timestamp) + b"\x00"  # one partition, no tags
    body += b"\x00" + b"\x00"  # topic tags, request tags
    r = Reader(conn.request(LIST_OFFSETS, 7, body, flexible=True))
    r.skip_tags()  # response header v1
    r.int32()  # throttle time
    assert r.compact_array_len() == 1
    assert r.compact_string() == topic
    assert r.compact_array_len() == 1
    partition = r.int32()
    error = r.int16()
    ts = r._unpack(">q")
    offset = r._unpack(">q")
    epoch = r.int32()
    r.skip_tags()
    r.skip_tags()
    r.skip_tags()
    assert partition == 0 and r.at_end(), "ListOffsets v7 response layout"
    return error, ts, offset, epoch


def answer(fields, expected_offset):
    """The response fields to compare; the leader epoch only when a record is expected (when none is found,
    the epoch answered is not what this test is about)."""
    return fields if expected_offset >= 0 else fields[:3]


def increasing_part(broker, check, conn, codec):
    topic = "lot-inc-" + codec
    create_topic(broker, topic)
    timestamps = [T0 + 10 * i for i in range(N)]
    produce(broker, check, topic, codec, timestamps)
    batches = stored_batches(broker, topic)
    check.eq({c for c, _ in batches}, {codec}, "%s: stored codec" % topic)
    check.true(max(n for _, n in batches) >= N // 2,
               "%s: one batch holds >= %d records (batches: %s)" % (topic, N // 2, batches))

    # (target, expected offset, expected found timestamp)
    cases = [(T0, 0, T0), (T0 + 10 * 73, 73, T0 + 10 * 73), (T0 + 10 * 120 + 5, 121, T0 + 10 * 121),
             (T0 + 10 * (N - 1), N - 1, T0 + 10 * (N - 1)), (T0 - 5000, 0, T0), (T0 + 10 * N, -1, -1)]
    check.eq(offsets_for_times(broker, topic, [c[0] for c in cases]), [c[1] for c in cases],
             "%s: offsets_for_times" % topic)
    for target, offset, ts in cases:
        check.eq(answer(list_offsets_v7(conn, topic, target), offset), (0, ts, offset, 0)[:4 if offset >= 0 else 3],
                 "%s: ListOffsets v7 timestamp %d (T0%+d): (error, timestamp, offset, leader epoch)"
                 % (topic, target, target - T0))
    check.eq(list_offsets_v7(conn, topic, MAX_TIMESTAMP), (0, T0 + 10 * (N - 1), N - 1, 0),
             "%s: ListOffsets v7 MAX_TIMESTAMP" % topic)
    # Kafka: no record found has no leader epoch either; -4 (earliest local) needs v8: UNSUPPORTED_VERSION (35).
    check.eq(list_offsets_v7(conn, topic, T0 + 10 * N), (0, -1, -1, -1),
             "%s: ListOffsets v7 past the last timestamp: (error, timestamp, offset, leader epoch)" % topic)
    check.eq(list_offsets_v7(conn, topic, -4)[0], 35, "%s: ListOffsets v7 with timestamp -4" % topic)


def backwards_part(broker, check, conn, codec):
    topic = "lot-back-" + codec
    create_topic(broker, topic)
    rel = [100, 300, 200, 400, 400, 350]
    produce(broker, check, topic, codec, [T0 + t for t in rel])
    check.eq(stored_batches(broker, topic), [(codec, len(rel))], "%s: one batch of %d records" % (topic, len(rel)))
    cases = [(100, 0, 100), (150, 1, 300), (250, 1, 300), (350, 3, 400), (400, 3, 400), (401, -1, None)]
    check.eq(offsets_for_times(broker, topic, [T0 + c[0] for c in cases]), [c[1] for c in cases],
             "%s: offsets_for_times" % topic)
    for target, offset, ts in cases:
        expect = (0, T0 + ts, offset, 0) if offset >= 0 else (0, -1, -1)
        check.eq(answer(list_offsets_v7(conn, topic, T0 + target), offset), expect,
                 "%s: ListOffsets v7 timestamp T0+%d" % (topic, target))
    check.eq(list_offsets_v7(conn, topic, MAX_TIMESTAMP), (0, T0 + 400, 3, 0),
             "%s: ListOffsets v7 MAX_TIMESTAMP (first record carrying the max)" % topic)


def main(broker, check):
    conn = Conn(broker.port, "list-offsets-ts-test")
    try:
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            increasing_part(broker, check, conn, codec)
            backwards_part(broker, check, conn, codec)
    finally:
        conn.close()


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"num.partitions": "1"}))
