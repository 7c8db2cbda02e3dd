#!/usr/bin/python3
"""Fetch long poll (min_bytes / max_wait_ms purgatory) timed with raw Fetch v4 requests, and ListOffsets
v7 with timestamp -3 (max timestamp, KIP-734) and LogAppendTime, against the real broker.

Fetch v4 is built with struct (no client library between us and the timing). Timings are printed:
  - empty partition, max_wait_ms=400, min_bytes=1: the response comes after ~400 ms (>= 300, <= 2000),
    with no records and no error;
  - same, while another client (kafka-python, connected beforehand) produces 100 ms later: the response
    comes well before 400 ms (< 350) and carries that record; also across two partitions;
  - data already there: immediate (< 200 ms);
  - min_bytes larger than what is there: waits max_wait_ms, then returns what there is;
  - an incremental fetch session (Fetch v7, KIP-227) whose partitions are all at their end answers nothing after
    max_wait_ms, and is woken by a produce (< 2 s with max_wait_ms 4000) with that partition alone.
Exit 0 pass, 1 fail, 77 skipped.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_wire  # noqa: E402
import sluice_harness as h  # noqa: E402
from kafka_wire import nstring, uvarint  # noqa: E402


class Reader:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take(">h")
        s = self.b[self.p:self.p + n].decode()
        self.p += n
        return s

    def bytes_(self):
        n = self.take(">i")
        if n < 0:
            return None
        v = self.b[self.p:self.p + n]
        self.p += n
        return v


def fetch_v4(conn, topic, partitions, max_wait_ms, min_bytes, max_bytes=1 << 20):
    """partitions: [(partition, offset)]. Returns (elapsed_s, {partition: (error, hw, records_bytes)})."""
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0)
    body += struct.pack(">i", 1) + nstring(topic) + struct.pack(">i", len(partitions))
    for p, off in partitions:
        body += struct.pack(">iqi", p, off, 1 << 20)
    t = time.monotonic()
    resp = conn.request(1, 4, body)
    elapsed = time.monotonic() - t
    r = Reader(resp)
    r.take(">i")  # throttle
    out = {}
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            p, err, hw, lso = r.take(">ihqq")
            n_aborted = r.take(">i")
            for _ in range(max(n_aborted, 0)):
                r.take(">qq")
            out[p] = (err, hw, r.bytes_() or b"")
    return elapsed, out


def fetch_v7(conn, topic, partitions, max_wait_ms, min_bytes, session_id, session_epoch):
    """Fetch v7 with fetch session fields (KIP-227). partitions: [(partition, offset)] to add or update.
    Returns (elapsed_s, error, session_id, {partition: (error, hw, records_bytes)})."""
    body = struct.pack(">iiiibii", -1, max_wait_ms, min_bytes, 1 << 20, 0, session_id, session_epoch)
    if partitions:
        body += struct.pack(">i", 1) + nstring(topic) + struct.pack(">i", len(partitions))
        for p, off in partitions:
            body += struct.pack(">iqqi", p, off, -1, 1 << 20)
    else:
        body += struct.pack(">i", 0)
    body += struct.pack(">i", 0)  # forgotten topics
    t = time.monotonic()
    resp = conn.request(1, 7, body)
    elapsed = time.monotonic() - t
    r = Reader(resp)
    _, err, sid = r.take(">ihi")
    out = {}
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            p, perr, hw, lso, start = r.take(">ihqqq")
            for _ in range(max(r.take(">i"), 0)):
                r.take(">qq")
            out[p] = (perr, hw, r.bytes_() or b"")
    return elapsed, err, sid, out


def _read_uvarint(r):
    shift, n = 0, 0
    while True:
        b = r.take(">B")
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n


def list_offsets_v7(conn, topic, partition, timestamp):
    """ListOffsets v7 (flexible: request header v2, compact arrays/strings, tagged fields)."""
    t = topic.encode()
    body = struct.pack(">ib", -1, 0) + uvarint(2) + uvarint(len(t) + 1) + t
    body += uvarint(2) + struct.pack(">iiq", partition, -1, timestamp) + b"\x00"  # partition tags
    body += b"\x00" + b"\x00"  # topic tags, request tags
    r = Reader(conn.request(2, 7, body, flexible=True))
    _read_uvarint(r)  # response header tags
    r.take(">i")  # throttle
    _read_uvarint(r)  # topics (N+1)
    n = _read_uvarint(r) - 1
    r.p += n  # topic name
    _read_uvarint(r)  # partitions (N+1)
    p, err, ts, off, epoch = r.take(">ihqqi")
    return err, ts, off


def main(broker, check):
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap = broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=(2, 5, 0), request_timeout_ms=10000)
    admin.create_topics([NewTopic("lp", 2, 1), NewTopic("warm", 1, 1), NewTopic("maxts", 1, 1),
                         NewTopic("lat", 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime"})])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=(2, 5, 0), acks=1, linger_ms=0)
    producer.send("warm", b"warm-up", partition=0).get(timeout=10)  # connection and metadata ready

    conn = kafka_wire.Conn(broker.port, "longpoll-test")
    # 1. Empty partition: the response waits for max_wait_ms.
    for i in range(3):
        el, parts = fetch_v4(conn, "lp", [(0, 0)], 400, 1)
        err, hw, rec = parts[0]
        print("empty partition, max_wait_ms=400, min_bytes=1: response after %.0f ms (records %d bytes, error %d, hw %d)"
              % (el * 1000, len(rec), err, hw))
        check.true(0.3 <= el <= 2.0, "empty fetch answered after %.3f s, expected ~0.4 s" % el)
        check.eq((err, hw, len(rec)), (0, 0, 0), "empty fetch error/hw/records")

    # 2. A record produced 100 ms after the fetch was sent wakes it.
    def produce_later(topic, partition, value, delay, box):
        time.sleep(delay)
        t = time.monotonic()
        md = producer.send(topic, value, partition=partition).get(timeout=10)
        box.append((md.offset, time.monotonic() - t))

    for i, (p, off) in enumerate([(0, 0), (0, 1)]):
        box = []
        th = threading.Thread(target=produce_later, args=("lp", p, b"wake-up-%d" % i, 0.1, box))
        th.start()
        el, parts = fetch_v4(conn, "lp", [(p, off)], 400, 1)
        th.join()
        err, hw, rec = parts[p]
        print("produce 100 ms after the fetch: response after %.0f ms with %d bytes (record offset %s, produce took %.0f ms)"
              % (el * 1000, len(rec), box[0][0] if box else "?", box[0][1] * 1000 if box else -1))
        check.true(el < 0.35, "fetch woken by a produce answered after %.3f s (expected well before 0.4 s)" % el)
        check.true(el >= 0.09, "fetch answered after %.3f s, before the produce happened" % el)
        check.true(b"wake-up-%d" % i in rec, "the woken fetch carries the produced record")
        check.eq(box[0][0] if box else None, off, "offset of the produced record")

    # 3. Two partitions parked; a produce to the second one wakes the fetch.
    box = []
    th = threading.Thread(target=produce_later, args=("lp", 1, b"wake-p1", 0.1, box))
    th.start()
    el, parts = fetch_v4(conn, "lp", [(0, 2), (1, 0)], 400, 1)
    th.join()
    print("two partitions, produce to p1 after 100 ms: response after %.0f ms, p0 %d bytes, p1 %d bytes"
          % (el * 1000, len(parts[0][2]), len(parts[1][2])))
    check.true(0.09 <= el < 0.35, "two-partition fetch answered after %.3f s" % el)
    check.true(b"wake-p1" in parts[1][2], "p1 record in the woken fetch")

    # 4. Data already there: immediate.
    el, parts = fetch_v4(conn, "lp", [(0, 0)], 400, 1)
    print("data available: response after %.0f ms, %d bytes" % (el * 1000, len(parts[0][2])))
    check.true(el < 0.2, "fetch with data available answered after %.3f s" % el)
    check.true(b"wake-up-0" in parts[0][2] and b"wake-up-1" in parts[0][2], "both records read from offset 0")

    # 5. min_bytes above what is there: waits max_wait_ms, then returns what there is.
    el, parts = fetch_v4(conn, "lp", [(0, 0)], 400, 1000000)
    print("min_bytes=1000000 with %d bytes available: response after %.0f ms" % (len(parts[0][2]), el * 1000))
    check.true(0.3 <= el <= 2.0, "min_bytes fetch answered after %.3f s" % el)
    check.true(b"wake-up-0" in parts[0][2], "min_bytes fetch returns the available records")

    # 5b. An incremental fetch session (KIP-227) whose partitions are all at their end: the broker leaves them out
    # of the fetch and only parks on them; a produce to one wakes the fetch, which answers that partition alone.
    el, err, sid, parts = fetch_v7(conn, "lp", [(0, 2), (1, 1)], 0, 0, 0, 0)
    check.eq(err, 0, "full fetch that makes a session: error")
    check.true(sid != 0, "a session was made (id %d)" % sid)
    el, err, sid2, parts = fetch_v7(conn, "lp", [], 400, 1, sid, 1)
    print("incremental fetch, nothing new, max_wait_ms=400: response after %.0f ms, partitions %s" %
          (el * 1000, sorted(parts)))
    check.eq((err, sid2, parts), (0, sid, {}), "idle incremental fetch: no partition answered")
    check.true(0.3 <= el <= 2.0, "idle incremental fetch answered after %.3f s, expected ~0.4 s" % el)
    box = []
    th = threading.Thread(target=produce_later, args=("lp", 1, b"wake-session", 0.1, box))
    th.start()
    el, err, sid3, parts = fetch_v7(conn, "lp", [], 4000, 1, sid, 2)
    th.join()
    print("incremental fetch, produce to p1 after 100 ms, max_wait_ms=4000: response after %.0f ms, partitions %s"
          % (el * 1000, sorted(parts)))
    check.eq((err, sid3, sorted(parts)), (0, sid, [1]), "woken incremental fetch answers p1 alone")
    check.true(b"wake-session" in parts.get(1, (0, 0, b""))[2], "the woken incremental fetch carries the record")
    check.true(0.09 <= el < 2.0, "incremental fetch woken by a produce answered after %.3f s (max_wait 4 s)" % el)

    # 6. ListOffsets v7 timestamp -3 (KIP-734): offset and timestamp of the record with the max timestamp.
    for ts in (1000, 5000, 3000, 2000):
        producer.send("maxts", b"v%d" % ts, partition=0, timestamp_ms=ts).get(timeout=10)
    err, ts, off = list_offsets_v7(conn, "maxts", 0, -3)
    print("ListOffsets v7 -3 (max timestamp): error %d, timestamp %d, offset %d" % (err, ts, off))
    check.eq((err, ts, off), (0, 5000, 1), "ListOffsets max timestamp (error, timestamp, offset)")
    check.eq(list_offsets_v7(conn, "maxts", 0, -2), (0, -1, 0), "ListOffsets earliest")
    check.eq(list_offsets_v7(conn, "maxts", 0, -1), (0, -1, 4), "ListOffsets latest")
    # By timestamp: the first offset whose timestamp >= 2500 is 1, and Kafka answers that record's timestamp
    # (5000) beside it (Java's OffsetAndTimestamp rejects a negative one).
    got = list_offsets_v7(conn, "maxts", 0, 2500)
    print("ListOffsets v7 by timestamp 2500: error %d, timestamp %d, offset %d" % got)
    check.eq(got, (0, 5000, 1), "ListOffsets by timestamp 2500 (error, timestamp, offset)")
    err, ts, off = list_offsets_v7(conn, "lp", 1, -3)  # wake-p1, then wake-session (the later timestamp)
    check.eq((err, off), (0, 1), "max timestamp of a two-record partition")
    err, ts, off = list_offsets_v7(conn, "warm", 0, -3)
    check.eq((err, off), (0, 0), "max timestamp, warm-up topic")
    conn.close()

    # 7. LogAppendTime: the broker's clock replaces the producer's timestamp.
    before = int(time.time() * 1000)
    md = producer.send("lat", b"lat", partition=0, timestamp_ms=12345).get(timeout=10)
    after = int(time.time() * 1000)
    print("LogAppendTime: produce response timestamp %d (sent 12345; wall clock %d..%d)" % (md.timestamp, before, after))
    check.true(before - 1000 <= md.timestamp <= after + 1000, "produce response log_append_time %d" % md.timestamp)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=(2, 5, 0), enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("lat", 0)])
    consumer.seek_to_beginning()
    recs = [r for r in consumer]
    consumer.close()
    check.eq(len(recs), 1, "LogAppendTime topic record count")
    if recs:
        check.eq(recs[0].timestamp_type, 1, "timestamp type of a LogAppendTime record")
        check.eq(recs[0].timestamp, md.timestamp, "consumed timestamp equals the produce response's")
    producer.close()


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    try:
        import kafka  # noqa: F401
    except ImportError:
        print("SKIPPED: kafka-python not installed (python3-kafka)")
        sys.exit(h.SKIP)
    sys.exit(h.run(main, binary, {"broker.id": "1", "num.partitions": "1"}))
