#!/usr/bin/python3
"""How fast the broker serves records, with a client that does not parse them.

    /usr/bin/python3 bench/fetch_capacity.py --bootstrap 127.0.0.1:9092 --topic T [--partitions 4]

librdkafka's consumer spends CPU on every record (header parsing, one op and one message object
per record, copying into the application queue); on 2 cores its own cost decides the consume rate
long before the broker does. This program measures the other side: it sends Fetch requests (v4,
read_uncommitted, one connection to the partitions' leader, which must be the bootstrap broker) from
offset 0 of every partition until the high watermark, and counts records from each record batch's
header (`records_count`, bytes 57-60 of a v2 batch) without decoding records. It prints records/s,
MB/s (of the whole response bytes) and the number of Fetch round trips.

Output: one line `fetch_capacity records=N bytes=B seconds=S records_per_s=R mb_per_s=M requests=Q`.
Exits 1 on a Kafka error code in a response or when the log is shorter than expected.
"""
import argparse
import socket
import struct
import sys
import time

API_FETCH = 1
API_METADATA = 3


def encode_string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Connection:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.buf = bytearray(64 << 20)

    def request(self, api_key, api_version, body):
        """Sends one request (header v1) and returns the response body after the correlation id."""
        self.correlation_id += 1
        header = struct.pack(">hhi", api_key, api_version, self.correlation_id) + encode_string("fetch_capacity")
        frame = header + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self.recv_exactly(4))[0]
        if size > len(self.buf):
            self.buf = bytearray(size)
        view = memoryview(self.buf)[:size]
        got = 0
        while got < size:
            n = self.sock.recv_into(view[got:], size - got)
            if n == 0:
                raise ConnectionError("broker closed the connection")
            got += n
        cid = struct.unpack_from(">i", view, 0)[0]
        if cid != self.correlation_id:
            raise ValueError("correlation id %d, expected %d" % (cid, self.correlation_id))
        return view[4:], size

    def recv_exactly(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return out


def high_watermarks(conn, topic, partitions):
    """Fetch v4 with max_bytes 0 per partition: returns {partition: high_watermark}."""
    body, _ = conn.request(API_FETCH, 4, fetch_body(topic, {p: 0 for p in range(partitions)}, 0, 0))
    out = {}
    for partition, error, hw, _records in parse_fetch(body):
        if error:
            raise RuntimeError("partition %d: error code %d" % (partition, error))
        out[partition] = hw
    return out


def fetch_body(topic, offsets, partition_max_bytes, max_bytes, max_wait_ms=0):
    b = struct.pack(">iiiib", -1, max_wait_ms, 1 if max_bytes else 0, max_bytes, 0)
    b += struct.pack(">i", 1) + encode_string(topic) + struct.pack(">i", len(offsets))
    for p, off in offsets.items():
        b += struct.pack(">iqi", p, off, partition_max_bytes)
    return b


def parse_fetch(body):
    """Yields (partition, error_code, high_watermark, records memoryview) of a Fetch v4 response body."""
    pos = 4  # throttle_time_ms
    (topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(topics):
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + n
        (parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(parts):
            partition, error, hw, _lso = struct.unpack_from(">ihqq", body, pos)
            pos += 22
            (aborted,) = struct.unpack_from(">i", body, pos)
            pos += 4 + max(aborted, 0) * 16
            (size,) = struct.unpack_from(">i", body, pos)
            pos += 4
            records = body[pos:pos + max(size, 0)]
            pos += max(size, 0)
            yield partition, error, hw, records


def count_batches(records):
    """Returns (records, next_offset) over the complete v2 batches in `records` (a partial last one is
    ignored, as Kafka's fetch may end mid-batch)."""
    count, next_offset, pos = 0, None, 0
    while pos + 61 <= len(records):
        base_offset, batch_length = struct.unpack_from(">qi", records, pos)
        end = pos + 12 + batch_length
        if end > len(records):
            break
        last_offset_delta = struct.unpack_from(">i", records, pos + 23)[0]
        count += struct.unpack_from(">i", records, pos + 57)[0]
        next_offset = base_offset + last_offset_delta + 1
        pos = end
    return count, next_offset


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="HOST:PORT of the partitions' leader")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--partition-max-bytes", type=int, default=1048576,
                    help="per partition per request (librdkafka's max.partition.fetch.bytes default: 1 MiB)")
    ap.add_argument("--max-bytes", type=int, default=52428800, help="per request (fetch.max.bytes default: 50 MiB)")
    args = ap.parse_args()
    host, port = args.bootstrap.rsplit(":", 1)
    conn = Connection(host, int(port))
    hws = high_watermarks(conn, args.topic, args.partitions)
    expected = sum(hws.values())
    offsets = {p: 0 for p in range(args.partitions)}
    total_records = total_bytes = requests = 0
    start = time.monotonic()
    deadline = start + 120
    while any(offsets[p] < hws[p] for p in offsets) and time.monotonic() < deadline:
        pending = {p: o for p, o in offsets.items() if o < hws[p]}
        body, size = conn.request(API_FETCH, 4, fetch_body(args.topic, pending, args.partition_max_bytes,
                                                          args.max_bytes))
        requests += 1
        total_bytes += size
        for partition, error, _hw, records in parse_fetch(body):
            if error:
                print("fetch_capacity: partition %d: error code %d" % (partition, error), file=sys.stderr)
                return 1
            count, next_offset = count_batches(records)
            total_records += count
            if next_offset is not None:
                offsets[partition] = next_offset
    seconds = time.monotonic() - start
    print("fetch_capacity records=%d bytes=%d seconds=%.3f records_per_s=%.0f mb_per_s=%.2f requests=%d"
          % (total_records, total_bytes, seconds, total_records / seconds, total_bytes / seconds / 1e6, requests))
    if total_records < expected:
        print("fetch_capacity: read %d of %d records before the deadline" % (total_records, expected),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
