"""Two Kafka requests sent to one chosen broker (not to whichever broker a client library picks):
Metadata v1 (leader, replicas, ISR as that broker sees them) and ListOffsets v1 latest (the high watermark for a
read_uncommitted reader, answered by the leader only). Blocking sockets with a deadline; errors raise OSError.
Also the v2 record batch walk over segment files used by the divergence check.
"""
import os
import socket
import struct


def _string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s


def _request(host, port, api_key, version, body, timeout):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        header = struct.pack(">hhi", api_key, version, 7) + _string("sluice-chaos")
        payload = header + body
        s.sendall(struct.pack(">i", len(payload)) + payload)

        def recv(n):
            out = b""
            while len(out) < n:
                chunk = s.recv(n - len(out))
                if not chunk:
                    raise OSError("connection closed by %s:%d" % (host, port))
                out += chunk
            return out
        size = struct.unpack(">i", recv(4))[0]
        data = recv(size)
    if struct.unpack(">i", data[:4])[0] != 7:
        raise OSError("correlation id mismatch")
    return _Reader(data[4:])


def metadata(host, port, topic, timeout=2.0):
    """Metadata v1 for one topic from broker host:port: {partition: (error, leader, replicas, isr)} and the
    controller id and the registered brokers' ids, as (partitions, controller, brokers); partitions is None when the topic has an error."""
    r = _request(host, port, 3, 1, struct.pack(">i", 1) + _string(topic), timeout)
    brokers = []
    for _ in range(r.take(">i")):
        brokers.append(r.take(">i"))
        r.string()
        r.take(">i")
        r.string()                          # rack
    controller = r.take(">i")
    parts = None
    for _ in range(r.take(">i")):
        err = r.take(">h")
        r.string()
        r.take(">b")
        parts = {}
        for _ in range(r.take(">i")):
            perr, pid, leader = r.take(">hii")
            replicas = [r.take(">i") for _ in range(r.take(">i"))]
            isr = [r.take(">i") for _ in range(r.take(">i"))]
            parts[pid] = (perr, leader, replicas, isr)
        if err != 0:
            parts = None
    return parts, controller, brokers


def list_offsets_latest(host, port, topic, partitions, timeout=2.0):
    """ListOffsets v1 (timestamp -1) to broker host:port: {partition: (error, offset)}. For a read_uncommitted
    consumer (replica id -1) the latest offset is the high watermark; only the leader answers without error."""
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(partitions))
    for p in partitions:
        body += struct.pack(">iq", p, -1)
    r = _request(host, port, 2, 1, body, timeout)
    out = {}
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            p, err, _ts, off = r.take(">ihqq")
            out[p] = (err, off)
    return out


def partition_log_bytes(partition_dir):
    """The bytes of a partition's `.log` segments in base-offset order, concatenated ('' when absent)."""
    if not os.path.isdir(partition_dir):
        return b""
    names = sorted(n for n in os.listdir(partition_dir) if n.endswith(".log"))
    out = []
    for n in names:
        with open(os.path.join(partition_dir, n), "rb") as f:
            out.append(f.read())
    return b"".join(out)


def prefix_below(data, hw):
    """(byte length, last offset + 1) of the leading batches of `data` whose base offset is below `hw`: walks the
    v2 batch headers (baseOffset int64, batchLength int32 at 8-11, lastOffsetDelta int32 at 23-26). Stops at a
    torn batch."""
    pos = 0
    end_offset = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if base >= hw or length < 49 or pos + 12 + length > len(data):
            break
        last_delta = struct.unpack_from(">i", data, pos + 23)[0]
        pos += 12 + length
        end_offset = base + last_delta + 1
    return pos, end_offset


def batch_producers(data):
    """{offset: (producer id, producer epoch, base sequence)} for every offset of the v2 batches of `data` (producer
    fields at byte 43: producerId int64, producerEpoch int16, baseSequence int32). Stops at a torn batch."""
    out = {}
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length < 49 or pos + 12 + length > len(data):
            break
        last_delta = struct.unpack_from(">i", data, pos + 23)[0]
        producer = struct.unpack_from(">qhi", data, pos + 43)
        for offset in range(base, base + last_delta + 1):
            out[offset] = producer
        pos += 12 + length
    return out
