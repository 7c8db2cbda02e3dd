#!/usr/bin/python3
"""max.connections and max.connections.per.ip, as Kafka's acceptor applies them.

One broker with max.connections=3 and max.connections.per.ip=2, listening on 127.0.0.1; clients bind
their source address to pick their "IP" on loopback:
  1. two connections from 127.0.0.1 get ApiVersions answers; a third from 127.0.0.1 is closed by the
     broker at once (per-IP limit), and the log says why;
  2. one from 127.0.0.2 is answered (3 open in all);
  3. one from 127.0.0.3 connects (the kernel's backlog) but gets no answer within 1 s: the broker stops
     accepting while max.connections are open; closing one of the first connections lets it in and its
     request is answered;
  4. afterwards kcat -L works (every closed connection released its counts).
"""
import socket
import struct
import subprocess
import time

import sluice_harness as h


def api_versions_frame(correlation_id):
    client = b"limits"
    body = struct.pack(">hhi", 18, 0, correlation_id) + struct.pack(">h", len(client)) + client
    return struct.pack(">i", len(body)) + body


def connect(broker, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", broker.port))
    return s


def ask(s, correlation_id, timeout):
    """Sends ApiVersions v0; returns 'answered', 'closed' or 'silent' (nothing within `timeout`)."""
    s.settimeout(timeout)
    try:
        s.sendall(api_versions_frame(correlation_id))
        head = s.recv(8)
    except socket.timeout:
        return "silent"
    except OSError:
        return "closed"
    if len(head) == 0:
        return "closed"
    return "answered" if len(head) >= 8 and struct.unpack(">i", head[4:8])[0] == correlation_id else "garbled"


def wait_answer(s, timeout):
    """After a 'silent' ask: the answer that arrives later."""
    s.settimeout(timeout)
    try:
        head = s.recv(8)
    except socket.timeout:
        return "silent"
    except OSError:
        return "closed"
    return "answered" if len(head) >= 8 else "closed"


def two_from_localhost(broker):
    """Two answered connections from 127.0.0.1. The harness's readiness probe is a connection from 127.0.0.1 too,
    and the broker counts it until it has seen its close: under load that can be after our first connects, so
    retry (bounded: 50 x 0.1 s) until the probe is gone. Returns (a1, a2, answers of the last try)."""
    for attempt in range(50):
        a1, a2 = connect(broker, "127.0.0.1"), connect(broker, "127.0.0.1")
        answers = (ask(a1, 1, 5), ask(a2, 2, 5))
        if answers == ("answered", "answered") or attempt == 49:
            return a1, a2, answers
        a1.close()
        a2.close()
        time.sleep(0.1)


def main(broker, check):
    a1, a2, answers = two_from_localhost(broker)
    check.eq(answers[0], "answered", "first connection from 127.0.0.1")
    check.eq(answers[1], "answered", "second connection from 127.0.0.1")
    a3 = connect(broker, "127.0.0.1")
    check.eq(ask(a3, 3, 5), "closed", "third connection from 127.0.0.1 (max.connections.per.ip=2)")
    a3.close()
    check.true("max.connections.per.ip=2 reached" in broker.log_text(), "the broker logged the per-IP refusal")
    b1 = connect(broker, "127.0.0.2")
    check.eq(ask(b1, 4, 5), "answered", "a connection from 127.0.0.2 (3 open in all)")
    c1 = connect(broker, "127.0.0.3")
    check.eq(ask(c1, 5, 1), "silent", "a fourth connection waits while max.connections=3 are open")
    a1.close()
    check.eq(wait_answer(c1, 5), "answered", "it is accepted and answered once one connection closed")
    for s in (a2, b1, c1):
        s.close()
    time.sleep(0.3)
    p = subprocess.run(["kcat", "-b", broker.bootstrap, "-L", "-m", "5"], capture_output=True, text=True, timeout=30)
    check.eq(p.returncode, 0, "kcat -L after the limits were reached and released")


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"max.connections": "3", "max.connections.per.ip": "2"}))
