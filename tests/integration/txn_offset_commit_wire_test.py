#!/usr/bin/python3
"""TxnOffsetCommit (KIP-98, KIP-447) on the wire, with hand-built requests (the markers that end a transaction come
from the transaction coordinator: tests/broker/txn_offset_commit_test.cc covers them below the network):

1. TxnOffsetCommit v2 for group "g" of producer P (epoch 0): NONE per partition of topic t, UNKNOWN_TOPIC_OR_PARTITION
   (3) for a topic that does not exist.
2. The offsets are pending: OffsetFetch v7 answers offset -1 (no error), and with require_stable
   UNSTABLE_OFFSET_COMMIT (88) per partition.
3. The log checks the producer's epoch: epoch 1 is accepted, epoch 0 then answers INVALID_PRODUCER_EPOCH (47).
4. v3 (flexible) with a generation for a group that does not exist: ILLEGAL_GENERATION (22); an empty group id:
   INVALID_GROUP_ID (24).
5. After kill -9 and a restart the offsets are still pending (replayed from the transactional batches of
   __consumer_offsets) and epoch 0 is still fenced.
"""
import struct
import time

import sluice_harness as h
from kafka_wire import Conn, Reader, cstring, nstring, uvarint

PID = 424242


def find_coordinator(conn, group):
    resp = conn.request(10, 1, nstring(group) + struct.pack(">b", 0))
    r = Reader(resp)
    r.int32()
    return r.int16()


def txn_offset_commit(conn, group, epoch, topics, version=2, generation=-1, member=""):
    """topics: [(name, [(partition, offset, metadata)])]; returns [(name, [(partition, error)])]."""
    if version >= 3:
        body = cstring("tx") + cstring(group) + struct.pack(">qh", PID, epoch)
        body += struct.pack(">i", generation) + cstring(member) + cstring(None)
        body += uvarint(len(topics) + 1)
        for name, parts in topics:
            body += cstring(name) + uvarint(len(parts) + 1)
            for p, o, m in parts:
                body += struct.pack(">iqi", p, o, -1) + cstring(m) + b"\x00"
            body += b"\x00"
        body += b"\x00"
        r = Reader(conn.request(28, version, body, flexible=True), 1)  # past the response header's tags
        r.int32()
        out = []
        for _ in range(r.compact_array_len()):
            name = r.compact_string()
            parts = []
            for _ in range(r.compact_array_len()):
                parts.append((r.int32(), r.int16()))
                r.skip_tags()
            r.skip_tags()
            out.append((name, parts))
        return out
    body = nstring("tx") + nstring(group) + struct.pack(">qh", PID, epoch) + struct.pack(">i", len(topics))
    for name, parts in topics:
        body += nstring(name) + struct.pack(">i", len(parts))
        for p, o, m in parts:
            body += struct.pack(">iqi", p, o, -1) + nstring(m)
    r = Reader(conn.request(28, version, body))
    r.int32()
    out = []
    for _ in range(r.int32()):
        name = r.string()
        out.append((name, [(r.int32(), r.int16()) for _ in range(r.int32())]))
    return out


def offset_fetch(conn, group, topic, partitions, require_stable):
    """OffsetFetch v7; returns (group error, [(partition, offset, error)])."""
    body = cstring(group) + uvarint(2) + cstring(topic) + uvarint(len(partitions) + 1)
    body += b"".join(struct.pack(">i", p) for p in partitions) + b"\x00"
    body += struct.pack(">b", 1 if require_stable else 0) + b"\x00"
    r = Reader(conn.request(9, 7, body, flexible=True), 1)
    r.int32()
    out = []
    for _ in range(r.compact_array_len()):
        r.compact_string()
        for _ in range(r.compact_array_len()):
            p = r.int32()
            offset = struct.unpack_from(">q", r.buf, r.pos)[0]
            r.pos += 8
            r.int32()
            r.compact_string()
            out.append((p, offset, r.int16()))
            r.skip_tags()
        r.skip_tags()
    return r.int16(), out


def create_topic(port, topic, partitions):
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % port, api_version=(2, 5, 0), request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()


def retry(f, busy=(14, 15, 16)):
    """Calls f() until its first error is not a coordinator-not-ready one (at most 5 s)."""
    for _ in range(50):
        out = f()
        first = out[0][1][0][1] if isinstance(out, list) else out
        if first not in busy:
            return out
        time.sleep(0.1)
    return out


def main(broker, check):
    create_topic(broker.port, "t", 2)
    conn = Conn(broker.port, "txn-offset-commit-wire")
    check.eq(retry(lambda: find_coordinator(conn, "g")), 0, "FindCoordinator creates __consumer_offsets")

    # 1. the commit
    out = retry(lambda: txn_offset_commit(conn, "g", 0, [("t", [(0, 42, "a"), (1, 43, None)]), ("nope", [(0, 1, "")])]))
    check.eq(out, [("t", [(0, 0), (1, 0)]), ("nope", [(0, 3)])], "TxnOffsetCommit v2")

    # 2. pending
    check.eq(offset_fetch(conn, "g", "t", [0, 1], False), (0, [(0, -1, 0), (1, -1, 0)]), "not visible")
    check.eq(offset_fetch(conn, "g", "t", [0, 1], True), (0, [(0, -1, 88), (1, -1, 88)]),
             "require_stable: UNSTABLE_OFFSET_COMMIT")

    # 3. epochs
    check.eq(txn_offset_commit(conn, "g", 1, [("t", [(0, 44, "b")])]), [("t", [(0, 0)])], "epoch 1")
    check.eq(txn_offset_commit(conn, "g", 0, [("t", [(0, 45, "c")])]), [("t", [(0, 47)])],
             "epoch 0 after 1: INVALID_PRODUCER_EPOCH")

    # 4. group checks (v3)
    check.eq(txn_offset_commit(conn, "other", 1, [("t", [(0, 1, "")])], version=3, generation=5, member="m"),
             [("t", [(0, 22)])], "v3, unknown group with a generation: ILLEGAL_GENERATION")
    check.eq(txn_offset_commit(conn, "", 1, [("t", [(0, 1, "")])], version=3), [("t", [(0, 24)])],
             "empty group id: INVALID_GROUP_ID")
    check.eq(txn_offset_commit(conn, "g", 1, [("t", [(1, 46, "d")])], version=3), [("t", [(1, 0)])], "v3")
    conn.close()

    # 5. kill -9, restart: still pending, still fenced
    broker.kill9()
    broker.start()
    conn = Conn(broker.port, "txn-offset-commit-wire")
    retry(lambda: find_coordinator(conn, "g"))
    fetched = retry(lambda: offset_fetch(conn, "g", "t", [0, 1], True)[0])
    check.eq(fetched, 0, "OffsetFetch after the restart")
    check.eq(offset_fetch(conn, "g", "t", [0, 1], True), (0, [(0, -1, 88), (1, -1, 88)]),
             "after kill -9: still pending")
    check.eq(offset_fetch(conn, "g", "t", [0, 1], False), (0, [(0, -1, 0), (1, -1, 0)]), "after kill -9: not visible")
    check.eq(txn_offset_commit(conn, "g", 0, [("t", [(0, 47, "e")])]), [("t", [(0, 47)])],
             "after kill -9: epoch 0 still fenced")
    conn.close()


if __name__ == "__main__":
    import sys
    binary, _args = h.binary_from_args(__doc__)
    sys.exit(h.run(main, binary))
