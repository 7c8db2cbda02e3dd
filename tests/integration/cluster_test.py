#!/usr/bin/env python3
"""Cluster mode on a real ZooKeeper: three sluice brokers, separate processes and data dirs.

Checks (issue "Cluster mode on ZooKeeper", acceptance 1-4, and the idempotence issue's failover item):
 - a 12-partition RF-3 topic gets its leaders spread 4/4/4;
 - zkCli.sh shows Kafka's znodes with Kafka's JSON fields;
 - librdkafka (confluent-kafka), acks=all + idempotence, numbered records, while the leader is SIGKILLed
   and restarted, --rounds times: 0 acknowledged records lost, 0 duplicates, no gap; failover time printed;
 - acks=all Produce to 4 partitions in ONE request (hand-built, led by one broker): all answered NONE; with a
   follower frozen (SIGSTOP, still in the ISR) all 4 time out together after the request's one timeout, not
   one timeout per partition (Kafka's DelayedProduce covers the whole request);
 - CreateTopics with a manual replica assignment naming other brokers (valid: created as given; an unregistered
   broker: INVALID_REPLICA_ASSIGNMENT); OffsetCommit for a topic with no replica on the group's coordinator;
   DeleteTopics of that topic removes those offsets on every coordinator (Kafka 4.x);
 - OffsetCommit waits for the ISR (offsets.commit.required.acks=-1): with both followers of the group's
   __consumer_offsets partition frozen, the commit is answered only after the leader drops them from the ISR;
 - with min.insync.replicas=2: one follower stopped, acks=all still works; two stopped: NOT_ENOUGH_REPLICAS
   (kafka-python, retries=0); both restarted: they catch up and rejoin the ISR.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_harness as h  # noqa: E402

SESSION_TIMEOUT_MS = 6000


def wait_until(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.1)
    raise RuntimeError("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


class Cluster:
    """`size` brokers on `zk`; `extra`: more broker keys (or other values) for every broker."""

    def __init__(self, binary, zk, size=3, extra=None):
        self.zk = zk
        self.brokers = {}
        for i in range(1, size + 1):
            self.brokers[i] = h.Broker(binary, dict({
                "broker.id": str(i),
                "zookeeper.connect": zk.connect + "/sluice",
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                "replica.lag.time.max.ms": "3000",
                "default.replication.factor": "3",
                "offsets.topic.replication.factor": "3",
                "offsets.topic.num.partitions": "6",
                "num.io.threads": "2",
                "sluice.log.level": "info",
            }, **(extra or {})))

    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers.values() if b.alive())

    def start(self):
        for b in self.brokers.values():
            b.start(ready_timeout=30)

    def close(self, failed):
        for b in self.brokers.values():
            b.close(failed=failed)


def admin(cluster):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": cluster.bootstrap()})


def partition_info(cluster, topic):
    """{partition: (leader, replicas, isr)} from a fresh Metadata request, or None."""
    try:
        client = admin(cluster)
        md = client.list_topics(topic=topic, timeout=5)
    except Exception:  # noqa: BLE001 - a broker may be down right now
        return None
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in t.partitions.values()}


def create_topic(cluster, name, partitions, rf, configs=None):
    from confluent_kafka.admin import NewTopic
    client = admin(cluster)  # must outlive the future
    fs = client.create_topics([NewTopic(name, partitions, rf, config=configs or {})], operation_timeout=10)
    fs[name].result(timeout=30)
    wait_until("leaders for every partition of " + name,
               lambda: (lambda i: i if i and len(i) == partitions and all(v[0] >= 0 for v in i.values()) else None)(
                   partition_info(cluster, name)), 60)


def check_spread_and_znodes(cluster, check):
    create_topic(cluster, "spread", 12, 3)
    info = partition_info(cluster, "spread")
    counts = {}
    for leader, replicas, isr in info.values():
        counts[leader] = counts.get(leader, 0) + 1
        check.eq(len(set(replicas)), 3, "spread: distinct replicas")
    print("leaders per broker for 12 partitions RF 3:", dict(sorted(counts.items())))
    check.eq(sorted(counts.values()), [4, 4, 4], "leaders spread 4/4/4")

    # A manual assignment over several brokers (CreateTopics assignments): the first replica leads.
    from confluent_kafka.admin import NewTopic
    client = admin(cluster)
    client.create_topics([NewTopic("manual", 2, replica_assignment=[[3, 1, 2], [2, 3, 1]])])["manual"].result(timeout=30)
    manual = wait_until("leaders of the manually assigned topic",
                        lambda: (lambda i: i if i and len(i) == 2 and all(v[0] >= 0 for v in i.values()) else None)(
                            partition_info(cluster, "manual")), 60)
    check.eq([manual[0][1], manual[1][1]], [[3, 1, 2], [2, 3, 1]], "replicas of a manually assigned topic")
    check.eq([manual[0][0], manual[1][0]], [3, 2], "leaders of a manually assigned topic")

    zk = cluster.zk
    outputs = {}
    for path in ["/sluice/brokers/ids/1", "/sluice/controller", "/sluice/controller_epoch", "/sluice/cluster/id",
                 "/sluice/brokers/topics/spread", "/sluice/brokers/topics/spread/partitions/0/state"]:
        text = zk.cli("get", path)
        line = next((l for l in text.splitlines() if l.startswith("{") or l.strip().isdigit()), None)
        print("zkCli get %s -> %s" % (path, line))
        outputs[path] = line
        check.true(line is not None, "zkCli get %s printed a value" % path)
    try:
        reg = json.loads(outputs["/sluice/brokers/ids/1"])
        for k in ("host", "port", "endpoints", "version", "timestamp", "jmx_port"):
            check.true(k in reg, "/brokers/ids/1 has %s" % k)
        ctl = json.loads(outputs["/sluice/controller"])
        check.true("brokerid" in ctl, "/controller has brokerid")
        topic = json.loads(outputs["/sluice/brokers/topics/spread"])
        check.eq(len(topic.get("partitions", {})), 12, "/brokers/topics/spread partitions")
        state = json.loads(outputs["/sluice/brokers/topics/spread/partitions/0/state"])
        for k in ("controller_epoch", "leader", "version", "leader_epoch", "isr"):
            check.true(k in state, "partition state has %s" % k)
        cid = json.loads(outputs["/sluice/cluster/id"])
        check.true("id" in cid, "/cluster/id has id")
    except (TypeError, ValueError) as e:
        check.true(False, "znode JSON did not parse: %r" % (e,))
    children = zk.cli("ls", "/sluice/brokers/ids")
    print("zkCli ls /sluice/brokers/ids ->", [l for l in children.splitlines() if l.startswith("[")])


def failover_rounds(cluster, check, rounds):
    from confluent_kafka import Consumer, Producer
    topic = "failover"
    create_topic(cluster, topic, 1, 3, {"min.insync.replicas": "2"})
    acked = set()
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked.add(int(msg.value()))

    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 2, "message.timeout.ms": 120000, "topic.metadata.refresh.interval.ms": 1000,
                         "retry.backoff.ms": 100})
    sent = 0
    failover_ms = []

    def produce_for(seconds):
        nonlocal sent
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                producer.produce(topic, value=str(sent).encode(), on_delivery=on_delivery)
                sent += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0.001)
            if sent % 50 == 0:
                time.sleep(0.005)

    for rnd in range(rounds):
        produce_for(1.0)
        info = wait_until("a leader", lambda: partition_info(cluster, topic), 30)
        leader = info[0][0]
        acked_before = len(acked)
        killed_at = time.monotonic()
        cluster.brokers[leader].kill9()
        # Keep producing while the cluster elects a new leader; time until Metadata shows one.
        new_leader = None
        while time.monotonic() - killed_at < 4 * SESSION_TIMEOUT_MS / 1000:
            produce_for(0.2)
            i = partition_info(cluster, topic)
            if i and i[0][0] not in (-1, leader):
                new_leader = i[0][0]
                break
        took = (time.monotonic() - killed_at) * 1000
        failover_ms.append(took)
        check.true(new_leader is not None, "round %d: a new leader after killing %d" % (rnd, leader))
        produce_for(1.0)
        producer.flush(60)
        print("round %d: killed leader %d, new leader %s after %.0f ms; acked %d -> %d" %
              (rnd, leader, new_leader, took, acked_before, len(acked)))
        cluster.brokers[leader].start(ready_timeout=30)
        wait_until("broker %d back in the ISR" % leader,
                   lambda: (lambda i: i and leader in i[0][2])(partition_info(cluster, topic)), 60)
    remaining = producer.flush(120)
    check.eq(remaining, 0, "messages still in flight at the end")
    check.eq(errors[:5], [], "delivery errors")

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "failover-check",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([__import__("confluent_kafka").TopicPartition(topic, 0, 0)])
    seen = []
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 5 and len(seen) < sent + 10:
        m = consumer.poll(0.5)
        if m is None or m.error():
            continue
        seen.append(int(m.value()))
        idle_since = time.monotonic()
    consumer.close()
    lost = sorted(acked - set(seen))
    dups = len(seen) - len(set(seen))
    gaps = sum(1 for a, b in zip(seen, seen[1:]) if b != a + 1)
    print("failover: %d rounds, %d produced, %d acknowledged, %d consumed, %d lost, %d duplicates, %d gaps; "
          "failover ms: %s (session timeout %d ms)" %
          (rounds, sent, len(acked), len(seen), len(lost), dups, gaps,
           ", ".join("%.0f" % x for x in failover_ms), SESSION_TIMEOUT_MS))
    check.eq(lost[:10], [], "acknowledged records lost")
    check.eq(dups, 0, "duplicates (idempotent producer)")
    check.eq(gaps, 0, "gaps in the consumed sequence")
    for x in failover_ms:
        check.true(x <= 2 * SESSION_TIMEOUT_MS, "failover %.0f ms within 2 x session timeout" % x)


def min_isr(cluster, check):
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError
    topic = "isr"
    create_topic(cluster, topic, 1, 3, {"min.insync.replicas": "2"})
    # The leader is read from the partition's state znode, the controller's decision: a Metadata answer may come
    # from a broker whose snapshot lags (no leader yet, or, after the frozen-follower step above, an older view),
    # and stopping the leader by mistake as a "follower" breaks the step (seen once in a full ctest run).
    state_path = "/sluice/brokers/topics/%s/partitions/0/state" % topic

    def zk_state():
        text = cluster.zk.cli("get", state_path)
        line = next((l for l in text.splitlines() if l.startswith("{")), None)
        return json.loads(line) if line else None

    state = wait_until("a leader and 3 in-sync replicas of %s in %s" % (topic, state_path),
                       lambda: (lambda st: st if st and st.get("leader", -1) >= 0 and len(st.get("isr", [])) == 3
                                else None)(zk_state()), 30)
    leader = state["leader"]
    wait_until("Metadata showing leader %d and 3 in-sync replicas of %s" % (leader, topic),
               lambda: (lambda i: i and i[0][0] == leader and len(i[0][2]) == 3)(partition_info(cluster, topic)), 30)
    replicas = partition_info(cluster, topic)[0][1]
    followers = [r for r in replicas if r != leader]

    def produce_once(value):
        p = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all", retries=0, request_timeout_ms=10000,
                          max_block_ms=10000)
        try:
            p.send(topic, value=value).get(timeout=15)
            return None
        except Exception as e:  # noqa: BLE001
            return e
        finally:
            p.close(timeout=5)

    check.eq(produce_once(b"all-up"), None, "acks=all with the full ISR")
    cluster.brokers[followers[0]].stop()
    wait_until("ISR without %d" % followers[0],
               lambda: (lambda i: i and followers[0] not in i[0][2])(partition_info(cluster, topic)), 30)
    check.eq(produce_once(b"one-down"), None, "acks=all with ISR 2 = min.insync.replicas")
    cluster.brokers[followers[1]].stop()
    wait_until("ISR of the leader alone",
               lambda: (lambda i: i and i[0][2] == [leader])(partition_info(cluster, topic)), 30)
    # The leader applies the ISR change a moment after Metadata shows it: until then an append may be
    # accepted and answered NOT_ENOUGH_REPLICAS_AFTER_APPEND (also Kafka's answer in that window).
    for _ in range(10):
        err = produce_once(b"two-down")
        print("produce with ISR [%d] and min.insync.replicas=2 ->" % leader, repr(err))
        if isinstance(err, NotEnoughReplicasError):
            break
        time.sleep(0.5)
    check.true(isinstance(err, NotEnoughReplicasError), "NOT_ENOUGH_REPLICAS with one replica in sync")
    for f in followers:
        cluster.brokers[f].start(ready_timeout=30)
    wait_until("both followers back in the ISR",
               lambda: (lambda i: i and sorted(i[0][2]) == sorted(replicas))(partition_info(cluster, topic)), 60)
    check.eq(produce_once(b"back"), None, "acks=all after the followers rejoined")


def timed_request(port, client_id, api_key, version, body, timeout_s):
    """One request on a fresh connection; returns (response body, seconds until the answer)."""
    from kafka_wire import Conn
    conn = Conn(port, client_id)
    conn.sock.settimeout(timeout_s)
    t0 = time.monotonic()
    try:
        resp = conn.request(api_key, version, body)
    finally:
        conn.close()
    return resp, time.monotonic() - t0


def produce_wire(port, topic, partitions, acks, timeout_ms):
    """One Produce v3 request with one record batch per partition; returns ({partition: error}, seconds)."""
    import struct
    from kafka_wire import nstring
    from idempotence_wire_test import record_batch
    body = nstring(None) + struct.pack(">hi", acks, timeout_ms) + struct.pack(">i", 1) + nstring(topic)
    body += struct.pack(">i", len(partitions))
    for p in partitions:
        batch = record_batch([b"v%d" % p], -1, -1, -1)
        body += struct.pack(">i", p) + struct.pack(">i", len(batch)) + batch
    resp, secs = timed_request(port, "cluster-test-wire", 0, 3, body, timeout_ms / 1000.0 * len(partitions) + 30)
    pos = 4  # topics array count
    nlen = struct.unpack(">h", resp[pos:pos + 2])[0]
    pos += 2 + nlen
    count = struct.unpack(">i", resp[pos:pos + 4])[0]
    pos += 4
    errors = {}
    for _ in range(count):
        index, err, _base, _ts = struct.unpack(">ihqq", resp[pos:pos + 22])
        pos += 22
        errors[index] = err
    return errors, secs


def acks_all_one_deadline(cluster, check):
    import signal
    from confluent_kafka.admin import NewTopic
    topic = "acks-all-multi"
    client = admin(cluster)
    fs = client.create_topics([NewTopic(topic, 4, replica_assignment=[[1, 2, 3]] * 4)], operation_timeout=10)
    fs[topic].result(timeout=30)
    wait_until("broker 1 leads every partition of " + topic, lambda: (lambda i: i and len(i) == 4 and all(
        v[0] == 1 and len(v[2]) == 3 for v in i.values()))(partition_info(cluster, topic)), 60)
    port = cluster.brokers[1].port
    errors, secs = produce_wire(port, topic, [0, 1, 2, 3], -1, 10000)
    print("acks=all, 4 partitions in one request, all replicas up: %s in %.3f s" % (errors, secs))
    check.eq(errors, {0: 0, 1: 0, 2: 0, 3: 0}, "acks=all 4-partition produce: every partition NONE")
    frozen = cluster.brokers[3]
    os.kill(frozen.proc.pid, signal.SIGSTOP)  # a follower still in the ISR that does not fetch
    try:
        errors, secs = produce_wire(port, topic, [0, 1, 2, 3], -1, 1000)
    finally:
        os.kill(frozen.proc.pid, signal.SIGCONT)
    print("acks=all, 4 partitions in one request, follower 3 frozen: %s in %.3f s" % (errors, secs))
    check.eq(errors, {0: 7, 1: 7, 2: 7, 3: 7}, "frozen follower: every partition REQUEST_TIMED_OUT")
    check.true(0.9 <= secs < 2.5, "one timeout for the whole request (1 s), took %.3f s" % secs)
    wait_until("follower 3 back in every ISR of " + topic, lambda: (lambda i: i and all(
        len(v[2]) == 3 for v in i.values()))(partition_info(cluster, topic)), 60)


def commit_wire(port, group, topic, offset):
    """One OffsetCommit v2 as a simple consumer (generation -1); returns (error code, seconds)."""
    import struct
    from kafka_wire import nstring
    body = nstring(group) + struct.pack(">i", -1) + nstring("") + struct.pack(">q", -1)
    body += struct.pack(">i", 1) + nstring(topic) + struct.pack(">i", 1) + struct.pack(">iq", 0, offset) + nstring("")
    resp, secs = timed_request(port, "cluster-test-commit", 8, 2, body, 30)
    pos = 4
    nlen = struct.unpack(">h", resp[pos:pos + 2])[0]
    pos += 2 + nlen + 4
    _index, err = struct.unpack(">ih", resp[pos:pos + 6])
    return err, secs


def commit_waits_for_isr(cluster, check):
    """Kafka appends offsets with offsets.commit.required.acks=-1: a commit is answered once every ISR member
    has it. With both followers of the group's __consumer_offsets partition frozen (SIGSTOP, still in the
    ISR), the answer comes only after the leader drops them from the ISR (replica.lag.time.max.ms=3000)."""
    import signal
    offsets = wait_until("__consumer_offsets led by broker 1 with a full ISR", lambda: (lambda i: i and any(
        v[0] == 1 and len(v[2]) == 3 for v in i.values()) and i)(partition_info(cluster, "__consumer_offsets")), 60)
    group = next(g for g in ("isr-commit-%d" % n for n in range(1000))
                 if (lambda v: v[0] == 1 and len(v[2]) == 3)(offsets[coordinator_partition(g, len(offsets))]))
    port = cluster.brokers[1].port
    err, secs = commit_wire(port, group, "spread", 1)
    print("OffsetCommit of group %s to broker 1, full ISR: error %d in %.3f s" % (group, err, secs))
    check.eq(err, 0, "commit with the full ISR: NONE")
    frozen = [cluster.brokers[2], cluster.brokers[3]]
    for b in frozen:
        os.kill(b.proc.pid, signal.SIGSTOP)
    try:
        err, secs = commit_wire(port, group, "spread", 2)
    finally:
        for b in frozen:
            os.kill(b.proc.pid, signal.SIGCONT)
    print("OffsetCommit with both followers frozen: error %d in %.3f s" % (err, secs))
    check.eq(err, 0, "commit with the followers frozen: NONE once the ISR shrank")
    check.true(secs >= 2.0, "the commit waited for the ISR shrink (replica.lag.time.max.ms 3000), took %.3f s" % secs)
    wait_until("brokers 2 and 3 back in every ISR of __consumer_offsets", lambda: (lambda i: i and all(
        len(v[2]) == 3 for v in i.values()))(partition_info(cluster, "__consumer_offsets")), 60)


def topics_not_hosted_here(cluster, check):
    """A topic with one replica, on broker 1: commits for it reach coordinators that hold no replica of it
    (Kafka answers from its metadata cache, which knows every topic)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import NewTopic
    client = admin(cluster)
    bad = client.create_topics([NewTopic("bad-assign", 1, replica_assignment=[[1, 99]])], operation_timeout=10)
    try:
        bad["bad-assign"].result(timeout=30)
        check.true(False, "CreateTopics naming unregistered broker 99 succeeded")
    except KafkaException as e:
        check.eq(e.args[0].name(), "INVALID_REPLICA_ASSIGNMENT", "CreateTopics naming broker 99")
    topic = "rf1-on-broker-1"
    fs = client.create_topics([NewTopic(topic, 1, replica_assignment=[[1]])], operation_timeout=10)
    fs[topic].result(timeout=30)
    info = wait_until("a leader for " + topic, lambda: (lambda i: i if i and i[0][0] == 1 else None)(
        partition_info(cluster, topic)), 60)
    check.eq(info[0][1], [1], "manual assignment [[1]] kept")
    groups = ["not-hosted-%d" % i for i in range(12)]
    for g in groups:
        c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": g, "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
            got = c.committed([TopicPartition(topic, 0)], timeout=10)[0]
            check.eq((got.error, got.offset), (None, 7), "group %s: committed offset of %s" % (g, topic))
        except KafkaException as e:
            check.true(False, "group %s: commit for %s failed: %s" % (g, topic, e))
        finally:
            c.close()
    offsets = partition_info(cluster, "__consumer_offsets") or {}
    coordinators = {g: offsets.get(coordinator_partition(g, max(1, len(offsets))), (-1,))[0] for g in groups}
    print("coordinators of the commit groups:", coordinators)
    check.true(any(c not in (1, -1) for c in coordinators.values()),
               "some group is coordinated by a broker without a replica of " + topic)


def deleted_topic_offsets(cluster, check):
    """DeleteTopics of the topic topics_not_hosted_here committed to: every broker drops it from its view, and each
    coordinator, whichever broker it is on, tombstones the groups' offsets for it (Kafka 4.x onPartitionsDeleted)."""
    from confluent_kafka import Consumer, TopicPartition
    topic = "rf1-on-broker-1"
    groups = ["not-hosted-%d" % i for i in range(12)]
    client = admin(cluster)  # kept alive until the result is in
    fs = client.delete_topics([topic], operation_timeout=10)
    fs[topic].result(timeout=30)

    def committed_offsets():
        out = {}
        for g in groups:
            c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": g, "enable.auto.commit": False})
            try:
                out[g] = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
            except Exception as e:  # noqa: BLE001
                out[g] = repr(e)
            finally:
                c.close()
        return out

    last = {}

    def all_gone():
        last.update(committed_offsets())
        return all(isinstance(o, int) and o < 0 for o in last.values())

    try:
        wait_until("the deleted topic's offsets gone from every group", all_gone, 60)
    except RuntimeError:
        check.true(False, "offsets of deleted %s still committed: %s" % (topic, last))
    print("committed offsets of deleted %s: %s" % (topic, last))


def java_string_hash(text):
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def coordinator_partition(key, partitions):
    """Kafka's partitionFor: Utils.abs(key.hashCode()) % partitions (Integer.MIN_VALUE -> 0)."""
    h = java_string_hash(key)
    if h >= 0x80000000:
        h -= 0x100000000
    return (0 if h == -0x80000000 else abs(h)) % partitions


def group_coordinator_failover(cluster, check):
    """A consumer group keeps consuming while the broker coordinating it is SIGKILLed: a new coordinator
    (the new leader of the group's __consumer_offsets partition) replays the group and its offsets."""
    from confluent_kafka import Consumer, Producer
    topic, group = "grp", "cluster-group"
    create_topic(cluster, topic, 3, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "linger.ms": 5})
    total = 3000
    for i in range(total // 2):
        producer.produce(topic, value=str(i).encode(), partition=i % 3)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": True, "auto.commit.interval.ms": 200, "session.timeout.ms": 10000})
    consumer.subscribe([topic])
    seen = set()

    def consume_for(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                seen.add(int(m.value()))

    consume_for(8)
    check.true(len(seen) > 0, "the group consumed before the failover")
    offsets = wait_until("__consumer_offsets leaders", lambda: partition_info(cluster, "__consumer_offsets"), 30)
    index = coordinator_partition(group, len(offsets))
    coordinator = offsets[index][0]
    print("group %s: coordinator is broker %d (__consumer_offsets-%d); consumed %d so far" %
          (group, coordinator, index, len(seen)))
    cluster.brokers[coordinator].kill9()
    killed_at = time.monotonic()
    for i in range(total // 2, total):
        producer.produce(topic, value=str(i).encode(), partition=i % 3)
    producer.flush(60)
    deadline = time.monotonic() + 60
    while len(seen) < total and time.monotonic() < deadline:
        consume_for(1)
    print("group failover: %d of %d records consumed %.1f s after killing coordinator %d" %
          (len(seen), total, time.monotonic() - killed_at, coordinator))
    check.eq(len(seen), total, "records consumed by the group across the coordinator failover")
    consumer.close()
    cluster.brokers[coordinator].start(ready_timeout=30)


def main():
    binary, _ = h.binary_from_args(__doc__)
    rounds = int(os.environ.get("SLUICE_CLUSTER_ROUNDS", "10"))
    if not h.ZooKeeper.available():
        print("SKIPPED: ZooKeeper (Debian package zookeeper) or java not installed")
        return h.SKIP
    zk = h.ZooKeeper()
    cluster = None
    check = h.Checker()
    try:
        zk.start()
        cluster = Cluster(binary, zk)
        cluster.start()
        check_spread_and_znodes(cluster, check)
        acks_all_one_deadline(cluster, check)
        topics_not_hosted_here(cluster, check)
        deleted_topic_offsets(cluster, check)
        commit_waits_for_isr(cluster, check)
        min_isr(cluster, check)
        failover_rounds(cluster, check, rounds)
        group_coordinator_failover(cluster, check)
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    return h.finish_cluster_run(check, cluster, zk)


if __name__ == "__main__":
    sys.exit(main())
