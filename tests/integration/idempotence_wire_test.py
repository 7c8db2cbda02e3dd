#!/usr/bin/python3
"""Idempotent producer (KIP-98) on the wire, with hand-built requests (no client library logic):

1. InitProducerId v0 and v4 with a null transactional id: distinct producer ids, epoch 0. An empty
   transactional id: INVALID_REQUEST (42); a non-empty one before any FindCoordinator(key type 1) created
   __transaction_state: NOT_COORDINATOR (16), as Kafka answers for an id whose partition it does not own.
2. Producer ids are unique across restarts: after a clean restart the next id comes from a new block.
3. Produce v3 of v2 batches carrying a producer id: a retry answers NONE with the ORIGINAL base offset and
   is not written again; a sequence gap answers OUT_OF_ORDER_SEQUENCE_NUMBER (45); a new epoch must
   start at 0 (45 otherwise); an older epoch answers INVALID_PRODUCER_EPOCH (47); acks=1 is accepted.
4. After kill -9 and restart, a retry of the last batch is still answered with its original offset.
"""
import socket
import struct
import time

import sluice_harness as h
from kafka_wire import Conn, nstring

# ---- CRC32C (Castagnoli), table-driven ------------------------------------------------------------------
_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def zigzag_varint(n):
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def record_batch(values, producer_id, epoch, base_seq):
    now = int(time.time() * 1000)
    records = b""
    for i, v in enumerate(values):
        body = (b"\x00" + zigzag_varint(0) + zigzag_varint(i) + zigzag_varint(-1) + zigzag_varint(len(v)) + v +
                zigzag_varint(0))
        records += zigzag_varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, now, now, producer_id, epoch, base_seq, len(values)) + records
    batch_length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, rest
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc32c(after_crc)) + after_crc


# ---- requests -----------------------------------------------------------------------------------------------
def init_producer_id(conn, transactional_id=None, version=0):
    if version >= 2:
        # compact nullable string, timeout, producer id/epoch (v3+), tagged fields
        if transactional_id is None:
            tid = b"\x00"
        else:
            b = transactional_id.encode()
            tid = bytes([len(b) + 1]) + b
        body = tid + struct.pack(">i", 60000)
        if version >= 3:
            body += struct.pack(">qh", -1, -1)
        body += b"\x00"
        resp = conn.request(22, version, body, flexible=True)[1:]  # past the response header's tags
    else:
        resp = conn.request(22, version, nstring(transactional_id) + struct.pack(">i", 60000))
    _throttle, err, pid, epoch = struct.unpack(">ihqh", resp[:16])
    return err, pid, epoch


def produce(conn, topic, batch, acks=-1):
    body = nstring(None) + struct.pack(">hi", acks, 10000) + struct.pack(">i", 1) + nstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(batch)) + batch
    resp = conn.request(0, 3, body)
    pos = 4  # responses array count
    nlen = struct.unpack(">h", resp[pos:pos + 2])[0]
    pos += 2 + nlen + 4
    index, err, base_offset, _append_time = struct.unpack(">ihqq", resp[pos:pos + 22])
    return err, base_offset


def create_topic(port, topic):
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % port, api_version=(2, 5, 0), request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()


def main(broker, check):
    conn = Conn(broker.port, "idem-wire")
    # 1. InitProducerId
    e1, p1, ep1 = init_producer_id(conn)
    e2, p2, ep2 = init_producer_id(conn, version=4)
    check.eq((e1, ep1, e2, ep2), (0, 0, 0, 0), "InitProducerId errors and epochs (v0, v4)")
    check.true(p1 >= 0 and p2 >= 0 and p1 != p2, "distinct producer ids %d, %d" % (p1, p2))
    check.eq(init_producer_id(conn, "")[0], 42, "empty transactional id: INVALID_REQUEST")
    check.eq(init_producer_id(conn, "tx-1", version=4)[0], 16, "transactional id, no __transaction_state: NOT_COORDINATOR")
    conn.close()

    # 2. unique across restarts
    check.eq(broker.stop(), 0, "clean stop")
    broker.start()
    conn = Conn(broker.port, "idem-wire")
    e3, p3, _ = init_producer_id(conn)
    check.eq(e3, 0, "InitProducerId after restart")
    check.true(p3 > max(p1, p2) and p3 >= 1000, "id after restart %d comes from a new block" % p3)

    # 3. Produce
    topic = "idem-wire"
    create_topic(broker.port, topic)
    pid = p3
    err, off0 = produce(conn, topic, record_batch([b"a", b"b"], pid, 0, 0))
    check.eq((err, off0), (0, 0), "first batch")
    err, off1 = produce(conn, topic, record_batch([b"c"], pid, 0, 2), acks=1)
    check.eq((err, off1), (0, 2), "second batch (acks=1 accepted with idempotence, as Kafka)")
    check.eq(produce(conn, topic, record_batch([b"a", b"b"], pid, 0, 0)), (0, 0), "retry of batch 1: original offset")
    check.eq(produce(conn, topic, record_batch([b"c"], pid, 0, 2)), (0, 2), "retry of batch 2: original offset")
    check.eq(produce(conn, topic, record_batch([b"x"], pid, 0, 9))[0], 45, "sequence gap: OUT_OF_ORDER_SEQUENCE_NUMBER")
    check.eq(produce(conn, topic, record_batch([b"x"], pid, 1, 3))[0], 45, "new epoch not at 0: OUT_OF_ORDER")
    check.eq(produce(conn, topic, record_batch([b"d"], pid, 1, 0)), (0, 3), "new epoch at sequence 0")
    check.eq(produce(conn, topic, record_batch([b"e"], pid, 0, 3))[0], 47, "older epoch: INVALID_PRODUCER_EPOCH")
    other = p3 + 1
    check.eq(produce(conn, topic, record_batch([b"f"], other, 0, 42)), (0, 4),
             "unknown producer at a non-zero sequence is accepted (KIP-360)")
    conn.close()

    # 4. kill -9: the retry of the last batch is still recognised (state rebuilt from the log)
    broker.kill9()
    broker.start()
    conn = Conn(broker.port, "idem-wire")
    check.eq(produce(conn, topic, record_batch([b"d"], pid, 1, 0)), (0, 3), "retry after kill -9: original offset")
    check.eq(produce(conn, topic, record_batch([b"f"], other, 0, 42)), (0, 4), "retry of the other producer after kill -9")
    check.eq(produce(conn, topic, record_batch([b"g"], pid, 1, 1)), (0, 5), "next batch after kill -9")
    conn.close()


if __name__ == "__main__":
    import sys
    binary, _args = h.binary_from_args(__doc__)
    sys.exit(h.run(main, binary))
