#!/usr/bin/env python3
"""POST /v1/topics/{t}/partitions/{p}/leader (issue #18 test control) on a real 3-broker ZooKeeper cluster.

The move is Kafka's ZooKeeper-era one: the assignment is reordered with the target first, then
/admin/preferred_replica_election names the partition and the controller elects it (coordination/README.md).
 - a topic with RF 3; 500 keyed records to partition 0 with kcat (acks=all);
 - the leader of partition 0 moved to each of the two other replicas in turn, through the HTTP side of a broker
   that is NOT the controller: 200 with the new leader and a higher leader epoch; Metadata v7 (hand-built, it
   carries the leader epoch) of that broker names the same leader and epoch at once; kcat -L -J on every broker
   names it as leader and first replica; 500 more records after each move; in the end every one of the 1,500
   records is read back at offsets 0..1499 with its key and value (no loss, no duplicate);
 - the leader itself asked for: 200 "changed": false, same epoch; ZooKeeper: the election znode is gone, the
   assignment starts with the last target;
 - errors: a broker that is no replica (unregistered id 4, and the live non-replica of an RF-2 topic) 400
   INVALID_REPLICA_ASSIGNMENT; unknown partition / topic 404 UNKNOWN_TOPIC_OR_PARTITION; bad bodies 400; GET 405;
   a stopped replica 503 PREFERRED_LEADER_NOT_AVAILABLE, and once restarted and back in the ISR it can lead;
 - single node: 400 INVALID_REQUEST (leader moves need cluster mode); without sluice.test.faults.enable 403
   TEST_CONTROLS_DISABLED.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped (no broker binary, no ZooKeeper
or java, no kcat).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_harness as h  # noqa: E402
import cluster_test  # noqa: E402
from cluster_test import wait_until  # noqa: E402
from kafka_wire import Conn, Reader, nstring  # noqa: E402

KCAT = "/usr/bin/kcat"
TOPIC = "moves"
BATCH = 500
METADATA = 3


def http(port, method, path, body=None):
    """(status, parsed JSON body or the raw text)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def kcat(args, stdin=None, timeout=60):
    p = subprocess.run([KCAT] + args, input=stdin, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        print("kcat %s exited %d, stderr:\n%s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p


def metadata_v7(port, topic):
    """Metadata v7 naming `topic` (not flexible; partitions carry their leader epoch):
    {partition: (error, leader, leader_epoch, replicas, isr)}."""
    conn = Conn(port, "leader-move-test")
    try:
        body = struct.pack(">i", 1) + nstring(topic) + b"\x00"  # allow_auto_topic_creation false
        r = Reader(conn.request(METADATA, 7, body))
    finally:
        conn.close()
    r.int32()  # throttle
    for _ in range(r.int32()):
        r.int32(), r.string(), r.int32(), r.string()  # node, host, port, rack
    r.string()  # cluster id
    r.int32()  # controller
    out = {}
    for _ in range(r.int32()):
        r.int16(), r.string(), r.int8()  # error, name, internal
        for _ in range(r.int32()):
            err, index, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
            replicas = [r.int32() for _ in range(r.int32())]
            isr = [r.int32() for _ in range(r.int32())]
            [r.int32() for _ in range(r.int32())]  # offline
            out[index] = (err, leader, epoch, replicas, isr)
    assert r.at_end(), "Metadata v7: %d bytes left over" % (len(r.buf) - r.pos)
    return out


def kcat_partition(broker, topic, partition):
    """(leader, [replica ids], [isr ids]) of one partition from kcat -L -J against `broker`, or None."""
    p = kcat(["-b", broker.bootstrap, "-L", "-J", "-t", topic], timeout=30)
    if p.returncode != 0:
        return None
    for t in json.loads(p.stdout.decode()).get("topics", []):
        if t.get("topic") != topic:
            continue
        for part in t.get("partitions", []):
            if part.get("partition") == partition:
                return (part.get("leader"), [x["id"] for x in part.get("replicas", [])],
                        [x["id"] for x in part.get("isrs", [])])
    return None


def produce(bootstrap, first, count):
    lines = "".join("k%d:v%d\n" % (i, i) for i in range(first, first + count)).encode()
    return kcat(["-b", bootstrap, "-P", "-t", TOPIC, "-p", "0", "-K:", "-X", "acks=all",
                 "-X", "message.timeout.ms=30000"], stdin=lines)


def read_all(bootstrap):
    p = kcat(["-b", bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-f", "%o|%k|%s\n"],
             timeout=60)
    return p.returncode, p.stdout.decode().splitlines()


class Cluster(cluster_test.Cluster):
    """cluster_test's three brokers, each with its HTTP side on a free port and the test controls on."""

    def __init__(self, binary, zk):
        super().__init__(binary, zk, extra={"sluice.test.faults.enable": "true"})
        self.http = {}
        for i, b in self.brokers.items():
            self.http[i] = h.pick_free_port()
            b.overrides["http.listeners"] = "http://127.0.0.1:%d" % self.http[i]


def move(port, topic, partition, broker):
    started = time.monotonic()
    status, body = http(port, "POST", "/v1/topics/%s/partitions/%s/leader" % (topic, partition), {"broker": broker})
    return status, body, time.monotonic() - started


def cluster_checks(cluster, zk, check):
    status, info = http(cluster.http[1], "GET", "/v1/cluster")
    check.eq(status, 200, "GET /v1/cluster")
    wait_until("a controller", lambda: http(cluster.http[1], "GET", "/v1/cluster")[1].get("controller_id", -1) >= 0, 30)
    controller = http(cluster.http[1], "GET", "/v1/cluster")[1]["controller_id"]
    asker = min(i for i in cluster.brokers if i != controller)
    port = cluster.http[asker]
    print("controller: broker %d; moves asked through broker %d's HTTP side" % (controller, asker))

    status, body = http(port, "POST", "/v1/topics", {"name": TOPIC, "partitions": 2, "replication_factor": 3})
    check.eq(status, 201, "POST /v1/topics %s (%r)" % (TOPIC, body))
    md = wait_until("partition 0 led with 3 in-sync replicas",
                    lambda: (lambda m: m if m.get(0) and m[0][1] >= 0 and len(m[0][4]) == 3 else None)(
                        metadata_v7(cluster.brokers[asker].port, TOPIC)), 30)
    _, leader, epoch, replicas, _ = md[0]
    print("partition 0: leader %d, leader epoch %d, replicas %s" % (leader, epoch, replicas))

    p = produce(cluster.bootstrap(), 0, BATCH)
    check.eq(p.returncode, 0, "kcat -P of records 0..%d (acks=all)" % (BATCH - 1))
    produced = BATCH

    # Each of the two other replicas in turn, in assignment order.
    for target in [r for r in replicas if r != leader]:
        status, body, took = move(port, TOPIC, 0, target)
        print("move to %d: %d %s (%.0f ms)" % (target, status, body, took * 1000))
        if not check.eq(status, 200, "POST leader %d: status" % target):
            continue
        check.eq(body.get("leader"), target, "answer names leader %d" % target)
        check.eq(body.get("changed"), True, "answer says changed")
        check.eq(body.get("topic"), TOPIC, "answer topic")
        check.eq(body.get("partition"), 0, "answer partition")
        check.true(body.get("leader_epoch", -1) > epoch,
                   "leader epoch grows: %r after %d" % (body.get("leader_epoch"), epoch))
        check.eq((body.get("replicas") or [None])[0], target, "the target is the first (preferred) replica")
        check.eq(sorted(body.get("replicas") or []), sorted(replicas), "same replica set")
        # The asking broker's own Metadata shows it at once (the answer waited for its snapshot).
        m = metadata_v7(cluster.brokers[asker].port, TOPIC)[0]
        check.eq((m[0], m[1], m[2]), (0, target, body.get("leader_epoch")),
                 "Metadata v7 of broker %d right after the answer: (error, leader, leader epoch)" % asker)
        epoch = body.get("leader_epoch", epoch)
        # kcat -L -J on every broker (the two others follow within a few ms).
        for i, b in cluster.brokers.items():
            seen = wait_until("kcat -L -J on broker %d naming leader %d" % (i, target),
                              lambda b=b: (lambda k: k if k and k[0] == target else None)(kcat_partition(b, TOPIC, 0)), 10)
            check.eq(seen[1][0], target, "kcat -L -J on broker %d: first replica" % i)
            check.eq(sorted(seen[2]), sorted(replicas), "kcat -L -J on broker %d: ISR" % i)
        p = produce(cluster.bootstrap(), produced, BATCH)
        check.eq(p.returncode, 0, "kcat -P of records %d..%d after the move to %d" % (produced, produced + BATCH - 1, target))
        produced += BATCH
        leader = target

    rc, lines = read_all(cluster.bootstrap())
    check.eq(rc, 0, "kcat -C exit code")
    check.eq(len(lines), produced, "records read back from partition 0")
    expected = ["%d|k%d|v%d" % (i, i, i) for i in range(produced)]
    check.eq(lines, expected, "every record at its offset with its key and value")

    # The leader itself: nothing to do (Kafka's ELECTION_NOT_NEEDED), answered 200 unchanged.
    status, body, _ = move(port, TOPIC, 0, leader)
    check.eq(status, 200, "POST leader of the current leader")
    if isinstance(body, dict):
        check.eq((body.get("leader"), body.get("leader_epoch"), body.get("changed")), (leader, epoch, False),
                 "current leader: (leader, epoch, changed)")

    # ZooKeeper: the request is gone, the assignment starts with the last target.
    admin = next((l for l in zk.cli("ls", "/sluice/admin").splitlines() if l.startswith("[")), None)
    print("zkCli ls /sluice/admin -> %s" % admin)
    check.true(admin is not None and "delete_topics" in admin and "preferred_replica_election" not in admin,
               "/admin/preferred_replica_election deleted by the controller (zkCli ls /sluice/admin: %r)" % admin)
    line = next((l for l in zk.cli("get", "/sluice/brokers/topics/" + TOPIC).splitlines() if l.startswith("{")), "{}")
    print("zkCli get /sluice/brokers/topics/%s -> %s" % (TOPIC, line))
    assignment = json.loads(line).get("partitions", {})
    check.eq((assignment.get("0") or [None])[0], leader, "/brokers/topics/%s: partition 0's first replica" % TOPIC)
    check.eq(sorted(assignment.get("0") or []), sorted(replicas), "/brokers/topics/%s: partition 0's replicas" % TOPIC)
    check.eq(assignment.get("1"), md[1][3], "partition 1's assignment untouched")

    # Errors.
    status, body, _ = move(port, TOPIC, 0, 4)
    check.eq((status, body.get("error") if isinstance(body, dict) else body), (400, "INVALID_REPLICA_ASSIGNMENT"),
             "an unregistered broker id")
    status, body = http(port, "POST", "/v1/topics", {"name": "pair", "partitions": 1, "replication_factor": 2})
    check.eq(status, 201, "POST /v1/topics pair (RF 2)")
    pair = wait_until("pair-0 led", lambda: (lambda m: m if m.get(0) and m[0][1] >= 0 else None)(
        metadata_v7(cluster.brokers[asker].port, "pair")), 30)
    outsider = next(i for i in cluster.brokers if i not in pair[0][3])
    status, body, _ = move(port, "pair", 0, outsider)
    check.eq((status, body.get("error") if isinstance(body, dict) else body), (400, "INVALID_REPLICA_ASSIGNMENT"),
             "live broker %d, not a replica of pair-0 %s" % (outsider, pair[0][3]))
    check.true(isinstance(body, dict) and "not a replica" in body.get("message", ""), "message says why: %r" % (body,))
    for path, what in [("/v1/topics/%s/partitions/7/leader" % TOPIC, "partition 7 of 2"),
                       ("/v1/topics/%s/partitions/-1/leader" % TOPIC, "partition -1"),
                       ("/v1/topics/%s/partitions/x/leader" % TOPIC, "partition x"),
                       ("/v1/topics/nope/partitions/0/leader", "unknown topic")]:
        status, body = http(port, "POST", path, {"broker": leader})
        check.eq((status, body.get("error") if isinstance(body, dict) else body), (404, "UNKNOWN_TOPIC_OR_PARTITION"),
                 what)
    for bad in [b"", b"[]", {"broker": "1"}, {"broker": -1}, {}, {"broker": 1, "force": True}]:
        status, body = http(port, "POST", "/v1/topics/%s/partitions/0/leader" % TOPIC, bad)
        check.eq((status, body.get("error") if isinstance(body, dict) else body), (400, "INVALID_REQUEST"),
                 "body %r" % (bad,))
    status, body = http(port, "GET", "/v1/topics/%s/partitions/0/leader" % TOPIC)
    check.eq(status, 405, "GET .../leader")

    # A replica that is not alive: 503; back and in the ISR again, it can lead.
    stopped = next(i for i in replicas if i != leader and i != asker)
    check.eq(cluster.brokers[stopped].stop(), 0, "broker %d exit status on SIGTERM" % stopped)
    wait_until("broker %d gone from the asking broker's view" % stopped,
               lambda: all(b["id"] != stopped for b in http(port, "GET", "/v1/brokers")[1]["brokers"]), 30)
    status, body, _ = move(port, TOPIC, 0, stopped)
    check.eq((status, body.get("error") if isinstance(body, dict) else body), (503, "PREFERRED_LEADER_NOT_AVAILABLE"),
             "a stopped replica")
    print("stopped broker %d: %d %s" % (stopped, status, body))
    cluster.brokers[stopped].start(ready_timeout=30)
    wait_until("broker %d back in the ISR of %s-0" % (stopped, TOPIC),
               lambda: stopped in metadata_v7(cluster.brokers[asker].port, TOPIC)[0][4], 60)
    before = metadata_v7(cluster.brokers[asker].port, TOPIC)[0][2]
    status, body, took = move(port, TOPIC, 0, stopped)
    print("move to the restarted broker %d: %d %s (%.0f ms)" % (stopped, status, body, took * 1000))
    check.eq(status, 200, "move to the restarted broker %d" % stopped)
    if isinstance(body, dict):
        check.eq(body.get("leader"), stopped, "restarted broker leads")
        check.true(body.get("leader_epoch", -1) > before, "its leader epoch grows")
    p = produce(cluster.bootstrap(), produced, BATCH)
    check.eq(p.returncode, 0, "kcat -P after the move to the restarted broker")
    produced += BATCH
    rc, lines = read_all(cluster.bootstrap())
    check.eq(len(lines), produced, "records read back at the end")
    check.eq(lines, ["%d|k%d|v%d" % (i, i, i) for i in range(produced)], "every record once, in order, at the end")


def single_node_checks(binary, check):
    for faults, want in [("true", (400, "INVALID_REQUEST")), ("false", (403, "TEST_CONTROLS_DISABLED"))]:
        port = h.pick_free_port()
        b = h.Broker(binary, {"http.listeners": "http://127.0.0.1:%d" % port, "sluice.test.faults.enable": faults})
        try:
            b.start()
            wait_until("HTTP side", lambda: h.port_accepts(port), 10)
            status, body = http(port, "POST", "/v1/topics", {"name": TOPIC, "partitions": 1})
            check.eq(status, 201, "single node: POST /v1/topics")
            status, body, _ = move(port, TOPIC, 0, 0)
            check.eq((status, body.get("error") if isinstance(body, dict) else body), want,
                     "single node, sluice.test.faults.enable=%s" % faults)
            if faults == "true":
                check.true(isinstance(body, dict) and "cluster mode" in body.get("message", ""),
                           "single node: the message names cluster mode (%r)" % (body,))
            check.eq(b.stop(), 0, "single node exit status")
        finally:
            b.close(failed=not check.ok())


def main():
    binary, _ = h.binary_from_args(__doc__)
    if not h.ZooKeeper.available():
        print("SKIPPED: ZooKeeper (Debian package zookeeper) or java not installed")
        return h.SKIP
    if not os.access(KCAT, os.X_OK) and not shutil.which("kcat"):
        print("SKIPPED: kcat not installed")
        return h.SKIP
    return h.run_cluster_test(lambda zk: Cluster(binary, zk), cluster_checks,
                              before=lambda check: single_node_checks(binary, check))


if __name__ == "__main__":
    sys.exit(main())
