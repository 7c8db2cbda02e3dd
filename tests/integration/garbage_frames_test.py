#!/usr/bin/python3
"""Malformed input must close that one connection, never the broker.

Against one running broker (socket.request.max.bytes=1048576) we open connections that send:
  a1. framed random payloads (size prefix = payload length, payload random; seeded)
  a2. 64 KiB of raw random bytes (the first 4 bytes are the size; seeded)
  b.  a size prefix of 2,000,000,000 followed by a few bytes
  c.  truncated request headers inside a complete frame (3 bytes; no client_id length; client_id
      length 100 with 5 bytes present)
  d.  an unknown API key (9999)
  e.  out-of-range versions of known APIs (Metadata v99, Fetch v3, Produce v0)
  f.  a size prefix of 0, of -1 and of INT32_MIN
Each connection must be closed by the broker (recv returns b"" or the connection is reset) within
5 s. Exceptions, per Kafka: ApiVersions of an unknown version (v99) is answered in v0 with
UNSUPPORTED_VERSION (35) and ApiVersions' own entry only (as Kafka 4.4); a random frame that happens to name a supported
API and version may get a response instead of a close.
Meanwhile and afterwards: kcat -L and a hand-made ApiVersions v3 round trip still work, the broker
process is alive, and its resident memory stayed small (no 2 GB allocation for case b).
The seed is printed; rerun with --seed N.
"""
import os
import random
import socket
import struct
import subprocess
import time

import sluice_harness as h
from kafka_wire import read_uvarint, uvarint

MAX_REQUEST = 1048576
CLOSE_TIMEOUT = 5.0

# The contract (API key: (name, min, max)) that ApiVersions must cover.
CONTRACT = {18: ("ApiVersions", 0, 4), 3: ("Metadata", 0, 12), 0: ("Produce", 3, 11), 1: ("Fetch", 4, 17),
            2: ("ListOffsets", 1, 10), 19: ("CreateTopics", 2, 7), 20: ("DeleteTopics", 1, 6)}  # Kafka 4.0 (KIP-896)


def header_v1(api_key, version, corr, client_id=b"itest-garbage"):
    return struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock, n, deadline):
    data = b""
    while len(data) < n:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def recv_response(sock, timeout=5.0):
    deadline = time.monotonic() + timeout
    (size,) = struct.unpack(">i", recv_exact(sock, 4, deadline))
    return recv_exact(sock, size, deadline)


def api_versions_v0(port):
    """Plain ApiVersions v0 round trip; returns {api_key: (min, max)}."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(frame(header_v1(18, 0, 4242)))
        resp = recv_response(s)
    corr, err, n = struct.unpack(">ihi", resp[:10])
    assert corr == 4242, "correlation id %d" % corr
    assert err == 0, "ApiVersions v0 error %d" % err
    apis = {}
    for i in range(n):
        k, lo, hi = struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i])
        apis[k] = (lo, hi)
    return apis


def api_versions_v3(port):
    """Flexible ApiVersions v3 (request header v2, compact body); returns (error, {key: (min, max)})."""
    body = uvarint(len(b"sluice-itest") + 1) + b"sluice-itest" + uvarint(len(b"1.0") + 1) + b"1.0" + b"\x00"
    req = header_v1(18, 3, 777) + b"\x00" + body  # header v2 = v1 + tagged fields
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(frame(req))
        resp = recv_response(s)
    # ApiVersions responses always use response header v0: correlation id only.
    corr, err = struct.unpack(">ih", resp[:6])
    assert corr == 777, "correlation id %d" % corr
    n, pos = read_uvarint(resp, 6)
    apis = {}
    for _ in range(n - 1):
        k, lo, hi = struct.unpack(">hhh", resp[pos:pos + 6])
        pos += 6
        tags, pos = read_uvarint(resp, pos)
        assert tags == 0, "unexpected tagged fields in api entry"
        apis[k] = (lo, hi)
    return err, apis


def wait_closed(sock, timeout=CLOSE_TIMEOUT):
    """'closed', 'reset', 'response:<n bytes>' or 'open' (nothing within timeout)."""
    deadline = time.monotonic() + timeout
    got = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            return "reset" if not got else "response:%d" % len(got)
        if not chunk:
            return "closed" if not got else "response:%d" % len(got)
        got += chunk
    return "open" if not got else "response:%d" % len(got)


def send_quietly(sock, data):
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the broker may close before we finish writing: that is what we want


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def kcat_ok(broker):
    p = subprocess.run(["/usr/bin/kcat", "-b", broker.bootstrap, "-L", "-m", "5"], capture_output=True, timeout=30)
    return p.returncode == 0 and ("at 127.0.0.1:%d" % broker.port) in p.stdout.decode(errors="replace")


def make_cases(rng, apis):
    """[(name, bytes, expectation)] where expectation is 'close' or 'close-or-response'."""
    cases = []
    for i in range(20):
        payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 512)))
        expect = "close"
        if len(payload) >= 4:
            k, v = struct.unpack(">hh", payload[:4])
            if k in apis and apis[k][0] <= v <= apis[k][1]:
                expect = "close-or-response"  # random body for a real API: decoding may succeed
        cases.append(("a1 framed random #%d (%d bytes)" % (i, len(payload)), frame(payload), expect))
    # Raw random bytes: redraw (deterministically) while the first 4 bytes would be a size the broker
    # must legitimately wait for (larger than what we send but within socket.request.max.bytes).
    raw_len = 65536
    for _ in range(1000):
        raw = bytes(rng.getrandbits(8) for _ in range(raw_len))
        (size,) = struct.unpack(">i", raw[:4])
        if not (raw_len - 4 < size <= MAX_REQUEST):
            break
    (size,) = struct.unpack(">i", raw[:4])
    expect = "close"
    if 4 <= size <= raw_len - 4:
        k, v = struct.unpack(">hh", raw[4:8])
        if k in apis and apis[k][0] <= v <= apis[k][1]:
            expect = "close-or-response"
    cases.append(("a2 raw random 64 KiB (size prefix %d)" % size, raw, expect))

    cases.append(("b size prefix 2,000,000,000", struct.pack(">i", 2000000000) + b"\x00\x03\x00\x0c\x00\x00", "close"))
    cases.append(("c1 3-byte header", frame(b"\x00\x12\x00"), "close"))
    cases.append(("c2 header without client_id length", frame(struct.pack(">hhi", 3, 1, 1)), "close"))
    cases.append(("c3 client_id length 100, 5 bytes", frame(struct.pack(">hhih", 3, 1, 1, 100) + b"abcde"), "close"))
    cases.append(("d unknown api key 9999", frame(header_v1(9999, 0, 1)), "close"))
    cases.append(("e1 Metadata v99", frame(header_v1(3, 99, 1) + b"\x00"), "close"))
    cases.append(("e2 Fetch v3 (below Kafka 4.0 baseline)", frame(header_v1(1, 3, 1) + b"\x00" * 32), "close"))
    cases.append(("e3 CreateTopics v0 (below Kafka 4.0 baseline)", frame(header_v1(19, 0, 1) + b"\x00" * 8), "close"))
    cases.append(("f1 size prefix 0", struct.pack(">i", 0), "close"))
    cases.append(("f2 size prefix -1", struct.pack(">i", -1) + b"\x00\x12", "close"))
    cases.append(("f3 size prefix INT32_MIN", struct.pack(">i", -2 ** 31), "close"))
    return cases


def main_with_seed(seed):
    def main(broker, check):
        apis = api_versions_v0(broker.port)
        print("broker APIs:", sorted(apis.items()))
        for key, (name, lo, hi) in CONTRACT.items():
            if check.true(key in apis, "ApiVersions lists %s (%d)" % (name, key)):
                check.true(apis[key][0] <= lo and apis[key][1] >= hi,
                           "%s versions %r cover the contract %d-%d" % (name, apis[key], lo, hi))
        err, apis3 = api_versions_v3(broker.port)
        check.eq(err, 0, "ApiVersions v3 error code")
        check.eq(apis3, apis, "ApiVersions v3 list equals v0 list")

        rng = random.Random(seed)
        cases = make_cases(rng, apis)
        socks = []
        for name, data, expect in cases:
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
            send_quietly(s, data)
            socks.append((name, s, expect))

        # Meanwhile: a normal client still works.
        check.true(kcat_ok(broker), "kcat -L while garbage connections are open")

        for name, s, expect in socks:
            outcome = wait_closed(s)
            s.close()
            print("%-55s -> %s" % (name, outcome))
            if expect == "close":
                check.true(outcome in ("closed", "reset"), "%s: broker must close the connection, got %s" % (name, outcome))
            else:
                check.true(outcome != "open", "%s: broker neither answered nor closed" % name)

        # ApiVersions v99: answered in v0 with UNSUPPORTED_VERSION and ApiVersions' entry only (Kafka 4.4's
        # ApiVersionsRequest.getErrorResponse; KIP-511: the client retries with a version in that range).
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
            s.sendall(frame(header_v1(18, 99, 99) + b"\x00\x00\x00\x00\x00"))
            try:
                resp = recv_response(s)
                corr, errc, n = struct.unpack(">ihi", resp[:10])
                check.eq(corr, 99, "ApiVersions v99 correlation id")
                check.eq(errc, 35, "ApiVersions v99 error code (UNSUPPORTED_VERSION)")
                check.eq(n, 1, "ApiVersions v99 lists one API")
                key, lo, hi = struct.unpack(">hhh", resp[10:16])
                check.eq((key, lo), (18, 0), "ApiVersions v99 lists ApiVersions from v0")
                check.true(hi >= 3, "ApiVersions v99 names ApiVersions' highest version (%d)" % hi)
            except (ConnectionError, OSError, struct.error) as e:
                check.true(False, "ApiVersions v99: no v0 answer (%r)" % (e,))

        # Produce v0-2: advertised from v0 as Kafka 4.0 does (librdkafka <= 2.11 compresses only when v0 is in
        # range), answered per partition with UNSUPPORTED_VERSION (35): old message formats are not stored.
        for version in (0, 2):
            with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
                topic = b"legacy"
                body = struct.pack(">hii", 1, 1000, 1) + struct.pack(">h", len(topic)) + topic
                body += struct.pack(">iii", 1, 0, 0)  # one partition, index 0, empty message set
                s.sendall(frame(header_v1(0, version, 77) + body))
                try:
                    resp = recv_response(s)
                    corr, ntopics = struct.unpack(">ii", resp[:8])
                    nlen = struct.unpack(">h", resp[8:10])[0]
                    name = resp[10:10 + nlen]
                    nparts, index, errc = struct.unpack(">iih", resp[10 + nlen:20 + nlen])
                    check.eq((corr, ntopics, name, nparts, index), (77, 1, topic, 1, 0), "Produce v%d response shape" % version)
                    check.eq(errc, 35, "Produce v%d answered UNSUPPORTED_VERSION" % version)
                except (ConnectionError, OSError, struct.error) as e:
                    check.true(False, "Produce v%d: no answer (%r)" % (version, e))

        # Half a frame then the client goes away.
        for _ in range(10):
            with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
                send_quietly(s, struct.pack(">i", 100) + b"\x00\x12")

        check.true(broker.alive(), "broker process alive after garbage")
        rss = rss_kib(broker.proc.pid) if broker.alive() else -1
        print("broker VmRSS: %d KiB" % rss)
        check.true(0 < rss < 512 * 1024, "broker resident memory %d KiB stays below 512 MiB" % rss)
        check.true(kcat_ok(broker), "kcat -L after the garbage")
        err, apis_after = api_versions_v3(broker.port)
        check.eq((err, apis_after), (0, apis), "ApiVersions v3 after the garbage")
    return main


if __name__ == "__main__":
    binary, args = h.binary_from_args(__doc__)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    print("seed: %d (rerun with --seed %d)" % (seed, seed))
    raise SystemExit(h.run(main_with_seed(seed), binary, {"socket.request.max.bytes": str(MAX_REQUEST)}))
