#!/usr/bin/python3
"""Loopback Kafka capture proxy: records the request frames real clients send (golden bytes).

    capture_proxy.py --out DIR [--client NAME] --target 127.0.0.1:9092 [--listen-port 0] [--responses]
    capture_proxy.py --out DIR [--client NAME] --fake         # no broker: record each connection's
                                                              # first frame, then close it

Every request frame seen is written to DIR/<client>-<ApiName>-v<version>-<n>.bin: the request bytes
WITHOUT the 4-byte size prefix (request header + body), n counting from 0 per (client, API, version).
With --responses the matching response is written to ...-<n>.response.bin (also without the size
prefix). Responses are matched to requests in order (Kafka answers in request order on a connection);
Produce with acks=0 has no response.

The proxy prints "listening on 127.0.0.1:<port>" on stdout once ready. It stops by itself after
--max-seconds (default 120) or --max-connections accepted connections, or on SIGINT/SIGTERM.
Only loopback addresses are accepted as listen address and target.

Note: clients learn broker addresses from Metadata. To keep them talking through the proxy, the
broker must advertise the proxy's port (start it with advertised.listeners=PLAINTEXT://127.0.0.1:<proxy
port>), otherwise only the bootstrap connection is captured. tools/capture_golden.sh does that.
"""
import argparse
import collections
import os
import signal
import socket
import struct
import sys
import threading
import time

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
    6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9: "OffsetFetch",
    10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
    15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
    20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
    28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls", 32: "DescribeConfigs",
    33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35: "DescribeLogDirs", 36: "SaslAuthenticate",
    37: "CreatePartitions", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders",
    44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials", 60: "DescribeCluster",
    61: "DescribeProducers", 65: "DescribeTransactions", 66: "ListTransactions",
    68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 71: "GetTelemetrySubscriptions",
    72: "PushTelemetry", 75: "DescribeTopicPartitions",
}
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
MAX_FRAME = 64 * 1024 * 1024


def api_name(key):
    return API_NAMES.get(key, "Api%d" % key)


def read_uvarint(buf, pos):
    shift = value = 0
    while pos < len(buf):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def client_from_header(req):
    """'librdkafka' / 'kafka-python' / sanitized client_id, from the request header's client_id."""
    try:
        (n,) = struct.unpack(">h", req[8:10])
        cid = req[10:10 + n].decode("ascii", "replace") if n > 0 else ""
    except struct.error:
        return "unknown"
    if cid.startswith("rdkafka"):
        return "librdkafka"
    if cid.startswith("kafka-python"):
        return "kafka-python"
    cleaned = "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in cid)
    return cleaned or "unknown"


def produce_expects_response(req):
    """False only for Produce with acks=0. req = header + body (no size prefix)."""
    key, ver = struct.unpack(">hh", req[:4])
    if key != 0:
        return True
    try:
        (cid_len,) = struct.unpack(">h", req[8:10])
        pos = 10 + max(cid_len, 0)
        flexible = ver >= 9
        if flexible:
            _, pos = read_uvarint(req, pos)  # header tagged fields (count; assume none)
            n, pos = read_uvarint(req, pos)  # transactional_id: compact nullable string
            pos += max(n - 1, 0)
        elif ver >= 3:
            (n,) = struct.unpack(">h", req[pos:pos + 2])
            pos += 2 + max(n, 0)
        (acks,) = struct.unpack(">h", req[pos:pos + 2])
        return acks != 0
    except (struct.error, ValueError, IndexError):
        return True


class Recorder:
    def __init__(self, out, client, responses):
        self.out = out
        self.client = client
        self.responses = responses
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        os.makedirs(out, exist_ok=True)

    def request(self, req):
        """Writes a request frame; returns its file stem (for the response)."""
        client = self.client if self.client != "auto" else client_from_header(req)
        if len(req) < 4:
            stem = "%s-Truncated" % client
        else:
            key, ver = struct.unpack(">hh", req[:4])
            stem = "%s-%s-v%d" % (client, api_name(key), ver)
        with self.lock:
            n = self.counts[stem]
            self.counts[stem] += 1
        path = os.path.join(self.out, "%s-%d.bin" % (stem, n))
        with open(path, "wb") as f:
            f.write(req)
        print("request  %s (%d bytes)" % (os.path.basename(path), len(req)), flush=True)
        return "%s-%d" % (stem, n)

    def response(self, stem, resp):
        if not self.responses:
            return
        path = os.path.join(self.out, "%s.response.bin" % stem)
        with open(path, "wb") as f:
            f.write(resp)
        print("response %s (%d bytes)" % (os.path.basename(path), len(resp)), flush=True)


def recv_exact(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(min(n - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_frame(sock):
    head = recv_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if size < 0 or size > MAX_FRAME:
        raise ValueError("frame size %d" % size)
    return recv_exact(sock, size)


def handle_proxy(client_sock, target, rec):
    try:
        upstream = socket.create_connection(target, timeout=10)
        upstream.settimeout(None)
    except OSError as e:
        print("cannot connect to %s:%d: %s" % (target[0], target[1], e), flush=True)
        client_sock.close()
        return
    pending = collections.deque()
    cond = threading.Condition()

    def up():
        try:
            while True:
                req = read_frame(client_sock)
                if req is None:
                    break
                stem = rec.request(req)
                if produce_expects_response(req):
                    with cond:
                        pending.append(stem)
                upstream.sendall(struct.pack(">i", len(req)) + req)
        except (OSError, ValueError) as e:
            print("client->broker: %s" % e, flush=True)
        finally:
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def down():
        try:
            while True:
                resp = read_frame(upstream)
                if resp is None:
                    break
                with cond:
                    stem = pending.popleft() if pending else None
                if stem is not None:
                    rec.response(stem, resp)
                client_sock.sendall(struct.pack(">i", len(resp)) + resp)
        except (OSError, ValueError) as e:
            print("broker->client: %s" % e, flush=True)
        finally:
            try:
                client_sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    t1 = threading.Thread(target=up, daemon=True)
    t2 = threading.Thread(target=down, daemon=True)
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    client_sock.close()
    upstream.close()


def handle_fake(client_sock, rec):
    try:
        client_sock.settimeout(10)
        req = read_frame(client_sock)
        if req is not None:
            rec.request(req)
    except (OSError, ValueError) as e:
        print("fake: %s" % e, flush=True)
    finally:
        client_sock.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--client", default="auto",
                    help="file name prefix, e.g. librdkafka; 'auto' (default) derives it from each "
                         "request's client_id (rdkafka* -> librdkafka, kafka-python* -> kafka-python)")
    ap.add_argument("--target", help="broker host:port (loopback only)")
    ap.add_argument("--fake", action="store_true", help="no broker: record the first frame of each connection")
    ap.add_argument("--listen-host", default="127.0.0.1")
    ap.add_argument("--listen-port", type=int, default=0)
    ap.add_argument("--responses", action="store_true", help="also write responses")
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("--max-connections", type=int, default=1000)
    args = ap.parse_args()

    if args.listen_host not in LOOPBACK:
        ap.error("listen host must be a loopback address")
    target = None
    if not args.fake:
        if not args.target:
            ap.error("--target or --fake is required")
        host, _, port = args.target.rpartition(":")
        host = host.strip("[]")
        if host not in LOOPBACK:
            ap.error("target must be a loopback address")
        target = (host, int(port))

    rec = Recorder(args.out, args.client, args.responses)
    family = socket.AF_INET6 if ":" in args.listen_host else socket.AF_INET
    ls = socket.socket(family, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.listen_host, args.listen_port))
    ls.listen(64)
    ls.settimeout(0.2)
    print("listening on %s:%d" % (args.listen_host, ls.getsockname()[1]), flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    deadline = time.monotonic() + args.max_seconds
    accepted = 0
    while not stop.is_set() and time.monotonic() < deadline and accepted < args.max_connections:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        accepted += 1
        fn = (lambda c=c: handle_fake(c, rec)) if args.fake else (lambda c=c: handle_proxy(c, target, rec))
        threading.Thread(target=fn, daemon=True).start()
    ls.close()
    time.sleep(0.2)
    print("stopped after %d connections" % accepted, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
