#!/usr/bin/python3
"""kcat (librdkafka 2.0.2 underneath) against a real sluice broker.

- kcat -L and -L -J list exactly one broker at 127.0.0.1:<port> with the configured broker.id.
- kcat -P -K: -H h1=v1 -H h2=v2 produces keyed lines with headers to a topic that does not exist yet
  (auto-created with num.partitions=1); kcat -C -e -f '%k|%s|%h|%p|%o' reads them back exactly.
- kcat -C -o -2 reads the last two records only (ListOffsets latest, then fetch from the middle).
- kcat -P -p 0 -Z with an empty key stores a NULL key (key length -1 on the way back).
- After a clean restart (SIGTERM, exit 0) the same records are read back.
"""
import json
import subprocess

import sluice_harness as h

BROKER_ID = 5
KCAT = "/usr/bin/kcat"


def kcat(broker, args, stdin=None, timeout=30):
    cmd = [KCAT, "-b", broker.bootstrap, "-X", "reconnect.backoff.max.ms=500"] + args
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        print("kcat %s exited %d, stderr:\n%s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p


def main(broker, check):
    # --- metadata --------------------------------------------------------------------------------
    p = kcat(broker, ["-L"])
    check.eq(p.returncode, 0, "kcat -L exit code")
    out = p.stdout.decode()
    print(out)
    check.true(" 1 brokers:" in out, "kcat -L lists 1 broker")
    check.true("broker %d at 127.0.0.1:%d" % (BROKER_ID, broker.port) in out,
               "kcat -L lists 'broker %d at 127.0.0.1:%d'" % (BROKER_ID, broker.port))

    p = kcat(broker, ["-L", "-J"])
    check.eq(p.returncode, 0, "kcat -L -J exit code")
    md = json.loads(p.stdout.decode())
    check.eq([(b["id"], b["name"]) for b in md["brokers"]],
             [(BROKER_ID, "127.0.0.1:%d" % broker.port)], "brokers in kcat -L -J")

    # --- produce with keys and headers, consume back -----------------------------------------------
    topic = "kcat-roundtrip"
    n = 500
    lines = "".join("key%d:value %d with spaces\n" % (i, i) for i in range(n))
    p = kcat(broker, ["-P", "-t", topic, "-K:", "-H", "h1=v1", "-H", "h2=v2",
                      "-X", "acks=all", "-X", "topic.request.required.acks=-1"], stdin=lines.encode())
    check.eq(p.returncode, 0, "kcat -P exit code")

    p = kcat(broker, ["-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k|%s|%h|%p|%o\n"])
    check.eq(p.returncode, 0, "kcat -C exit code")
    got = p.stdout.decode().splitlines()
    want = ["key%d|value %d with spaces|h1=v1,h2=v2|0|%d" % (i, i, i) for i in range(n)]
    check.eq(len(got), n, "number of records consumed by kcat")
    for i, (g, w) in enumerate(zip(got, want)):
        if not check.eq(g, w, "record %d" % i):
            break

    # Metadata now has the auto-created topic with num.partitions=1.
    p = kcat(broker, ["-L", "-J", "-t", topic])
    md = json.loads(p.stdout.decode())
    topics = {t["topic"]: t for t in md["topics"]}
    check.true(topic in topics, "auto-created topic listed")
    if topic in topics:
        check.eq(len(topics[topic]["partitions"]), 1, "partitions of auto-created topic")

    # Last two records only (offset -2 relative to the end).
    p = kcat(broker, ["-C", "-t", topic, "-o", "-2", "-e", "-f", "%k|%s|%o\n"])
    check.eq(p.stdout.decode().splitlines(),
             ["key%d|value %d with spaces|%d" % (i, i, i) for i in (n - 2, n - 1)], "kcat -C -o -2")

    # --- explicit partition, null key (-Z: an empty key is sent as NULL) ---------------------------
    p = kcat(broker, ["-P", "-t", topic, "-p", "0", "-Z", "-K:"], stdin=b":null-key value\n")
    check.eq(p.returncode, 0, "kcat -P -Z exit code")
    p = kcat(broker, ["-C", "-t", topic, "-o", str(n), "-e", "-f", "%K|%k|%s|%o\n"])
    check.eq(p.stdout.decode().splitlines(), ["-1||null-key value|%d" % n], "null key record")

    # Restart: kcat reads the same bytes back.
    rc = broker.stop()
    check.eq(rc, 0, "exit status of SIGTERM stop")
    broker.start()
    p = kcat(broker, ["-C", "-t", topic, "-o", "beginning", "-c", str(n), "-e", "-f", "%k|%s|%h|%p|%o\n"])
    check.eq(p.stdout.decode().splitlines(), want, "records after restart")


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"broker.id": str(BROKER_ID), "num.partitions": "1"}))
