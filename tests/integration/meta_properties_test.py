#!/usr/bin/env python3
"""A log dir remembers whose it is (meta.properties, Kafka's InconsistentBrokerId/ClusterId checks).

The real broker, real clients (confluent-kafka), a real ZooKeeper (Debian's package) for the mode switches:
 - single node, broker.id=1: a record produced, broker stopped; meta.properties holds broker.id=1 and the
   embedded store's cluster id. Restart with broker.id=2: exit non-zero, the message names 1, 2 and the dir,
   and every file under the log dir is byte for byte (and mtime) as before. Restart with broker.id=1: the
   record is read back at offset 0. meta.properties removed (a dir of an older Sluice): adopted, rewritten
   with the same ids, the record still there.
 - two log dirs of two different single-node brokers given to one broker: refused (both dirs listed),
   nothing changed.
 - a dir made in cluster mode (ZooKeeper) started in single-node mode: refused naming the ZooKeeper cluster
   id, no __cluster_metadata.json created; back in cluster mode the record is still there.
 - a single-node dir started in cluster mode: refused naming ZooKeeper's /cluster/id and the embedded id.
 - a meta.properties with version=5: refused with the reason.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped (no broker binary).
The ZooKeeper part is skipped (with a note) when ZooKeeper or java is missing.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_harness as h  # noqa: E402

TOPIC = "owned"


def snapshot(*dirs):
    """{path: (kind, size, sha256, mtime_ns)} of every file and directory under `dirs`."""
    out = {}
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            for s in subdirs:
                p = os.path.join(root, s)
                out[p] = ("dir",)
            for f in files:
                p = os.path.join(root, f)
                st = os.stat(p)
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                out[p] = ("file", st.st_size, digest, st.st_mtime_ns)
    return out


def diff(before, after):
    lines = []
    for p in sorted(set(before) | set(after)):
        if before.get(p) != after.get(p):
            lines.append("%s: %r -> %r" % (p, before.get(p), after.get(p)))
    return lines


def read_props(path):
    props = {}
    if not os.path.exists(path):
        return props
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                props[k] = v
    return props


def embedded_cluster_id(data_dir):
    with open(os.path.join(data_dir, "__cluster_metadata.json")) as f:
        return json.load(f)["cluster_id"]


def produce_one(bootstrap, value):
    from confluent_kafka import Producer
    delivered = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000})
    p.produce(TOPIC, key=b"k", value=value, partition=0,
              on_delivery=lambda err, msg: delivered.append((err, msg.offset() if msg else None)))
    p.flush(25)
    return delivered


def consume_first(bootstrap, timeout=20.0):
    """The record at offset 0 of TOPIC/0 (key, value, offset), or None."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "meta-properties-test",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            return (m.key(), m.value(), m.offset())
        return None
    finally:
        c.close()


def start_expecting_refusal(broker, check, what, timeout=40.0):
    """Starts the broker as Broker.start would; expects it to exit non-zero before accepting.

    Returns its output. A broker that starts serving instead is stopped (SIGTERM, by PID) and is a failure.
    """
    broker._write_config()
    args = [broker.binary, "--config", os.path.join(broker.dir, "server.properties")]
    for k, v in broker.overrides.items():
        args += ["--override", "%s=%s" % (k, v)]
    out_path = os.path.join(broker.dir, "refusal-%d.log" % int(time.monotonic() * 1000))
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = time.monotonic() + timeout
    started = False
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if h.port_accepts(broker.port, timeout=0.2):
            started = True
            break
        time.sleep(0.05)
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        check.true(False, "%s: the broker %s instead of refusing" %
                   (what, "started serving" if started else "neither exited nor served within %.0f s" % timeout))
    else:
        check.true(proc.returncode != 0, "%s: exit status %d, expected non-zero" % (what, proc.returncode))
    with open(out_path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    print("---- %s: broker output ----\n%s---- end ----" % (what, text[-3000:]))
    return text


def contains(check, text, needle, what):
    check.true(needle in text, "%s: output lacks %r" % (what, needle))


def broker_id_switch(binary, check, keep):
    b = h.Broker(binary, {"broker.id": "1", "num.partitions": "1"})
    keep.append(b)
    b.start()
    delivered = produce_one(b.bootstrap, b"first record")
    check.eq([(str(e) if e else None, o) for e, o in delivered], [(None, 0)], "delivery of the record")
    check.eq(b.stop(), 0, "exit status of the first broker")
    meta = os.path.join(b.data_dir, "meta.properties")
    if check.true(os.path.exists(meta), "meta.properties written at first start"):
        with open(meta) as f:
            check.true(f.readline().startswith("#"), "meta.properties starts with a # comment line")
    props = read_props(meta)
    check.eq(props.get("version"), "0", "meta.properties version")
    check.eq(props.get("broker.id"), "1", "meta.properties broker.id")
    check.eq(props.get("cluster.id"), embedded_cluster_id(b.data_dir), "meta.properties cluster.id = embedded store's")
    check.eq(len(props.get("directory.id", "")), 22, "directory.id is a 22-character Uuid")
    check.true(os.path.isdir(os.path.join(b.data_dir, TOPIC + "-0")), "partition dir of the record exists")

    before = snapshot(b.data_dir)
    b.overrides["broker.id"] = "2"
    text = start_expecting_refusal(b, check, "broker.id 1 -> 2")
    contains(check, text, "Configured broker.id 2 doesn't match stored broker.id 1 in %s" % meta, "broker.id 1 -> 2")
    check.eq(diff(before, snapshot(b.data_dir)), [], "files changed by the refused start (broker.id 2)")

    b.overrides["broker.id"] = "1"
    b.start()
    check.eq(consume_first(b.bootstrap), (b"k", b"first record", 0), "record read back with broker.id=1")
    check.eq(b.stop(), 0, "exit status after reading back")

    # A dir of an older Sluice (no meta.properties) is adopted: the file is written again, same cluster.
    cluster_id = embedded_cluster_id(b.data_dir)
    if os.path.exists(meta):
        os.remove(meta)
    b.start()
    check.eq(read_props(meta).get("cluster.id"), cluster_id, "adopted dir: meta.properties cluster.id")
    check.eq(read_props(meta).get("broker.id"), "1", "adopted dir: meta.properties broker.id")
    check.eq(consume_first(b.bootstrap), (b"k", b"first record", 0), "record read back in the adopted dir")
    check.eq(b.stop(), 0, "exit status after adoption")


def two_brokers_dirs(binary, check, keep):
    b1 = h.Broker(binary, {"broker.id": "1"})
    b2 = h.Broker(binary, {"broker.id": "2"})
    keep += [b1, b2]
    for b in (b1, b2):
        b.start()
        produce_one(b.bootstrap, b"of broker %s" % b.overrides["broker.id"].encode())
        check.eq(b.stop(), 0, "exit status of broker %s" % b.overrides["broker.id"])
    before = snapshot(b1.data_dir, b2.data_dir)
    b1.overrides["log.dirs"] = "%s,%s" % (b1.data_dir, b2.data_dir)
    text = start_expecting_refusal(b1, check, "two dirs of brokers 1 and 2")
    contains(check, text, "BrokerMetadata is not consistent across log.dirs", "two dirs")
    contains(check, text, "- %s -> version=0, broker.id=1" % b1.data_dir, "two dirs")
    contains(check, text, "- %s -> version=0, broker.id=2" % b2.data_dir, "two dirs")
    check.eq(diff(before, snapshot(b1.data_dir, b2.data_dir)), [], "files changed by the refused start (two dirs)")


def bad_version(binary, check, keep):
    b = h.Broker(binary, {"broker.id": "1"})
    keep.append(b)
    b.start()
    check.eq(b.stop(), 0, "exit status")
    meta = os.path.join(b.data_dir, "meta.properties")
    with open(meta, "w") as f:
        f.write("#\nversion=5\nbroker.id=1\n")
    before = snapshot(b.data_dir)
    text = start_expecting_refusal(b, check, "version=5")
    contains(check, text, "cannot use %s: Unknown meta.properties version number '5'" % meta, "version=5")
    check.eq(diff(before, snapshot(b.data_dir)), [], "files changed by the refused start (version=5)")


def zk_cluster_id(zk, chroot):
    text = zk.cli("get", chroot + "/cluster/id")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"id"' in line:
            return json.loads(line)["id"]
    return None


def mode_switches(binary, check, keep, zk):
    cluster_overrides = {"broker.id": "1", "zookeeper.connect": zk.connect + "/meta-a",
                         "zookeeper.session.timeout.ms": "6000", "default.replication.factor": "1",
                         "offsets.topic.replication.factor": "1", "num.partitions": "1"}
    # Cluster mode -> single node.
    c = h.Broker(binary, dict(cluster_overrides))
    keep.append(c)
    c.start(ready_timeout=30)
    delivered = []
    deadline = time.monotonic() + 30  # leadership of the auto-created topic comes from the controller
    while time.monotonic() < deadline:
        delivered = produce_one(c.bootstrap, b"cluster record")
        if delivered and delivered[0][0] is None:
            break
        time.sleep(0.5)
    check.eq([(str(e) if e else None, o) for e, o in delivered], [(None, 0)], "delivery in cluster mode")
    check.eq(c.stop(), 0, "exit status in cluster mode")
    zk_id = zk_cluster_id(zk, "/meta-a")
    check.true(zk_id is not None, "/meta-a/cluster/id readable")
    props = read_props(os.path.join(c.data_dir, "meta.properties"))
    check.eq(props.get("cluster.id"), zk_id, "cluster-mode meta.properties holds ZooKeeper's /cluster/id")
    check.eq(props.get("broker.id"), "1", "cluster-mode meta.properties broker.id")
    before = snapshot(c.data_dir)
    del c.overrides["zookeeper.connect"]
    text = start_expecting_refusal(c, check, "cluster dir in single-node mode")
    contains(check, text, "belongs to cluster %s" % zk_id, "cluster dir in single-node mode")
    contains(check, text, "would start a new cluster", "cluster dir in single-node mode")
    check.true(not os.path.exists(os.path.join(c.data_dir, "__cluster_metadata.json")),
               "no single-node cluster metadata created in the cluster dir")
    check.eq(diff(before, snapshot(c.data_dir)), [], "files changed by the refused start (cluster -> single node)")
    c.overrides["zookeeper.connect"] = cluster_overrides["zookeeper.connect"]
    c.start(ready_timeout=30)
    got = None
    deadline = time.monotonic() + 30
    while got is None and time.monotonic() < deadline:
        got = consume_first(c.bootstrap, timeout=5)
    check.eq(got, (b"k", b"cluster record", 0), "record read back in cluster mode")
    check.eq(c.stop(), 0, "exit status after reading back in cluster mode")

    # Single node -> cluster mode (a new chroot: its /cluster/id is created at the refused start).
    s = h.Broker(binary, {"broker.id": "1", "num.partitions": "1"})
    keep.append(s)
    s.start()
    produce_one(s.bootstrap, b"single record")
    check.eq(s.stop(), 0, "exit status in single-node mode")
    embedded = embedded_cluster_id(s.data_dir)
    before = snapshot(s.data_dir)
    s.overrides.update({"zookeeper.connect": zk.connect + "/meta-b", "zookeeper.session.timeout.ms": "6000"})
    text = start_expecting_refusal(s, check, "single-node dir in cluster mode")
    zk_b = zk_cluster_id(zk, "/meta-b")
    check.true(zk_b is not None and zk_b != embedded, "/meta-b/cluster/id exists and differs from the embedded id")
    contains(check, text, "The Cluster ID %s (/cluster/id of ZooKeeper at %s/meta-b) doesn't match stored clusterId %s in %s"
             % (zk_b, zk.connect, embedded, os.path.join(s.data_dir, "meta.properties")), "single-node dir in cluster mode")
    check.eq(diff(before, snapshot(s.data_dir)), [], "files changed by the refused start (single node -> cluster)")


def main():
    binary, _ = h.binary_from_args(__doc__)
    check = h.Checker()
    keep = []
    zk = None
    try:
        broker_id_switch(binary, check, keep)
        two_brokers_dirs(binary, check, keep)
        bad_version(binary, check, keep)
        if h.ZooKeeper.available():
            zk = h.ZooKeeper()
            zk.start()
            mode_switches(binary, check, keep, zk)
        else:
            print("NOTE: ZooKeeper (Debian package zookeeper) or java not installed: mode switches not tested")
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    failed = not check.ok()
    for b in keep:
        if failed:
            print("---- broker log (%s) ----" % b.log_path)
            print(b.log_text()[-6000:])
        b.close(failed=failed)
    if zk:
        zk.close(failed)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


if __name__ == "__main__":
    sys.exit(main())
