#!/usr/bin/python3
"""Request frames however they arrive: the broker reads what the socket holds, so one read may bring several
pipelined frames, part of one, or a size prefix cut in two. Each case must give every response, in order:

  1. five ApiVersions v0 requests in one send: five responses, correlation ids 1..5 in order;
  2. one ApiVersions request sent a byte at a time (5 ms apart): its response;
  3. a whole request plus the first 2 bytes of the next one's size, then (100 ms later) the rest: two responses;
  4. a Metadata v4 request of about 400 KB (2,000 unknown topics, no auto-creation) and an ApiVersions request in
     one send: the Metadata response lists the 2,000 topics, then the ApiVersions response;
  5. three such Metadata requests back to back in one send, then an ApiVersions request: four responses in order.

`--reference kafka` runs the same against Apache Kafka 4.4 (both must pass).
"""
import socket
import struct
import time

import sluice_harness as h

TOPICS = 2000


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def header_v1(api_key, version, corr, client_id=b"itest-framing"):
    return struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id


def api_versions(corr):
    return frame(header_v1(18, 0, corr))


def metadata_v4(corr, prefix):
    names = [("%s-%05d-" % (prefix, i) + "x" * 180).encode() for i in range(TOPICS)]
    body = struct.pack(">i", len(names)) + b"".join(struct.pack(">h", len(n)) + n for n in names)
    body += b"\x00"  # allow_auto_topic_creation = false
    return frame(header_v1(3, 4, corr) + body)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def recv_response(s):
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    body = recv_exact(s, size)
    (corr,) = struct.unpack(">i", body[:4])
    return corr, body[4:]


def api_versions_ok(body):
    (err,) = struct.unpack(">h", body[:2])
    (n,) = struct.unpack(">i", body[2:6])
    return err == 0 and n > 0


def metadata_topic_count(body):
    """Metadata v4 response after the correlation id: throttle, brokers, cluster id, controller, topics."""
    pos = 4  # throttle_time_ms
    (nb,) = struct.unpack(">i", body[pos:pos + 4])
    pos += 4
    for _ in range(nb):
        pos += 4  # node id
        (hl,) = struct.unpack(">h", body[pos:pos + 2])
        pos += 2 + hl + 4  # host, port
        (rl,) = struct.unpack(">h", body[pos:pos + 2])
        pos += 2 + max(rl, 0)  # rack (nullable)
    (cl,) = struct.unpack(">h", body[pos:pos + 2])
    pos += 2 + max(cl, 0) + 4  # cluster id (nullable), controller id
    (nt,) = struct.unpack(">i", body[pos:pos + 4])
    return nt


def main(broker, check):
    def connect():
        s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    # 1. pipelined
    with connect() as s:
        s.sendall(b"".join(api_versions(c) for c in range(1, 6)))
        got = [recv_response(s) for _ in range(5)]
        check.eq([c for c, _ in got], [1, 2, 3, 4, 5], "pipelined: correlation ids in order")
        check.true(all(api_versions_ok(b) for _, b in got), "pipelined: every ApiVersions answered without error")

    # 2. a byte at a time
    with connect() as s:
        for b in api_versions(7):
            s.sendall(bytes([b]))
            time.sleep(0.005)
        corr, body = recv_response(s)
        check.eq(corr, 7, "byte by byte: correlation id")
        check.true(api_versions_ok(body), "byte by byte: ApiVersions answered")

    # 3. a size prefix cut in two
    with connect() as s:
        first, second = api_versions(11), api_versions(12)
        s.sendall(first + second[:2])
        time.sleep(0.1)
        s.sendall(second[2:])
        got = [recv_response(s)[0] for _ in range(2)]
        check.eq(got, [11, 12], "split size prefix: both answered in order")

    # 4. a large frame and a small one in one send
    with connect() as s:
        s.sendall(metadata_v4(21, "framing-a") + api_versions(22))
        corr, body = recv_response(s)
        check.eq(corr, 21, "large then small: Metadata first")
        check.eq(metadata_topic_count(body), TOPICS, "large then small: Metadata lists every topic asked")
        corr, body = recv_response(s)
        check.eq(corr, 22, "large then small: ApiVersions second")
        check.true(api_versions_ok(body), "large then small: ApiVersions answered")

    # 5. three large frames back to back, then a small one
    with connect() as s:
        s.sendall(b"".join(metadata_v4(30 + i, "framing-b%d" % i) for i in range(3)) + api_versions(33))
        got = []
        for _ in range(4):
            corr, body = recv_response(s)
            got.append(corr)
            if corr < 33:
                check.eq(metadata_topic_count(body), TOPICS, "back to back: Metadata %d lists every topic" % corr)
        check.eq(got, [30, 31, 32, 33], "back to back: four responses in order")


if __name__ == "__main__":
    raise SystemExit(h.run_against(main, description=__doc__))
