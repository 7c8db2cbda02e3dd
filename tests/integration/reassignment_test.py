#!/usr/bin/env python3
"""Partition reassignment and leader election on a real 4-broker ZooKeeper cluster (issue #21, acceptance 4),
driven by Kafka 4.4's own tools (kafka-reassign-partitions.sh, kafka-leader-election.sh: the Java admin client)
while confluent-kafka (librdkafka) produces with acks=all and idempotence.

 - topic `moving`, 2 partitions on [1,2,3] and [2,3,1]; numbered records produced to both, acks=all, all along;
 - kafka-reassign-partitions.sh --execute --throttle moves them to [2,3,4] and [3,4,2]: the tool's own output
   names the throttle it set; DescribeConfigs shows the broker-level rates and topic-level replica lists it wrote;
   --list (ListPartitionReassignments) while under way shows adding [4] / removing [1] when caught in flight;
   --verify until every partition is completed, which clears the throttles (DescribeConfigs shows them gone);
 - Metadata then shows replicas [2,3,4] / [3,4,2], ISR within them, a leader within them; broker 1 deleted its
   local replicas (moving-0 and moving-1 directories gone) and broker 4 holds both;
 - every record the producer saw acknowledged is read back exactly once, no duplicate, no gap per partition;
 - errors through the tool's admin client: a reassignment naming an unregistered broker (9) fails with
   INVALID_REPLICA_ASSIGNMENT; --cancel with nothing under way finds nothing to cancel;
 - ElectLeaders: broker 2 stopped (controlled shutdown moves its lead away) and restarted; once back in the ISR,
   kafka-leader-election.sh --election-type PREFERRED --all-topic-partitions makes 2 and 3 the leaders again;
   confluent-kafka's elect_leaders (librdkafka) then answers ELECTION_NOT_NEEDED for moving-0.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped (no ZooKeeper, Java, venv, or
Kafka jars).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402
import cluster_test  # noqa: E402
from cluster_test import wait_until, partition_info  # noqa: E402

TOPIC = "moving"
THROTTLE = 20_000_000  # bytes/s: high enough not to slow the test down, low enough to be a real limit


class Cluster(cluster_test.Cluster):
    def __init__(self, binary, zk):
        super().__init__(binary, zk, size=4, extra={"auto.leader.rebalance.enable": "false",
                                                    "default.replication.factor": "3"})


class Producer:
    """Numbered records to both partitions with acks=all and idempotence, in a thread, until stopped."""

    def __init__(self, bootstrap):
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                    "message.timeout.ms": 120000})
        self.acked = {0: set(), 1: set()}
        self.failed = []
        self.stop_flag = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def on_delivery(self, err, msg):
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked[msg.partition()].add(int(msg.value()))

    def run(self):
        deadline = time.monotonic() + 300
        while not self.stop_flag.is_set() and time.monotonic() < deadline:
            for _ in range(20):
                self.p.produce(TOPIC, value=str(self.sent).encode(), partition=self.sent % 2, on_delivery=self.on_delivery)
                self.sent += 1
            self.p.poll(0.02)
        self.p.flush(120)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join(180)


def read_all(bootstrap):
    """{partition: [values in offset order]} of the whole topic."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reassign-check", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    out = {0: [], 1: []}
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in (0, 1)}
        c.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(len(out[p]) < ends[p] for p in (0, 1)):
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out[m.partition()].append(int(m.value()))
    finally:
        c.close()
    return out


def tool(home, name, *args, timeout=120):
    p = subprocess.run([os.path.join(home, "bin", name)] + list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def describe_configs(cluster, resources):
    """{(type, name): {key: value}} of the dynamic (non-default) entries."""
    from confluent_kafka.admin import ConfigResource
    out = {}
    client = cluster_test.admin(cluster)
    # librdkafka takes at most one BROKER resource per DescribeConfigs call, so one call per resource.
    for t, n in resources:
        futures = client.describe_configs([ConfigResource(t, n)], request_timeout=15)
        for res, f in futures.items():
            entries = f.result(timeout=30)
            out[(str(res.restype).split(".")[-1], res.name)] = {
                k: e.value for k, e in entries.items() if not e.is_default and e.value is not None}
    return out


def main():
    # The pinned confluent-kafka (the venv's, not Debian's older one) and Kafka 4.4's tools.
    return h.cluster_tool_test(__doc__, __file__, Cluster, run)


def run(cluster, home, check):
    boot = cluster.bootstrap()
    rc, out = tool(home, "kafka-topics.sh", "--bootstrap-server", boot, "--create", "--topic", TOPIC,
                   "--replica-assignment", "1:2:3,2:3:1")
    check.eq(rc, 0, "kafka-topics.sh --create with a replica assignment (%s)" % out.strip()[-300:])
    wait_until("both partitions led with 3 in-sync replicas",
               lambda: (lambda i: i if i and len(i) == 2 and all(len(v[2]) == 3 for v in i.values()) else None)(
                   partition_info(cluster, TOPIC)), 60)

    producer = Producer(boot)
    producer.start()
    wait_until("records acknowledged before the move", lambda: all(len(a) >= 200 for a in producer.acked.values()), 60)

    plan = {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [2, 3, 4]},
                                          {"topic": TOPIC, "partition": 1, "replicas": [3, 4, 2]}]}
    plan_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(plan, plan_file)
    plan_file.close()
    started = time.monotonic()
    rc, out = tool(home, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--reassignment-json-file",
                   plan_file.name, "--execute", "--throttle", str(THROTTLE))
    print(out.strip())
    check.eq(rc, 0, "kafka-reassign-partitions.sh --execute --throttle")
    check.true("Successfully started partition reassignments" in out, "the tool started the reassignments")
    check.true("throttle" in out.lower() and str(THROTTLE) in out, "the tool reports the throttle it set")

    rc, listed = tool(home, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--list")
    print(listed.strip())
    check.eq(rc, 0, "kafka-reassign-partitions.sh --list")
    if "moving-0" in listed:
        check.true(re.search(r"moving-0: replicas: 2,3,4,1\. adding: 4\. removing: 1\.", listed) is not None,
                   "--list shows moving-0 in flight: replicas 2,3,4,1 adding 4 removing 1")

    # The throttles the tool wrote, as the brokers describe them.
    configs = describe_configs(cluster, [("BROKER", "1"), ("BROKER", "4"), ("TOPIC", TOPIC)])
    print("configs while moving: %s" % configs)
    check.eq(configs.get(("BROKER", "4"), {}).get("follower.replication.throttled.rate"), str(THROTTLE),
             "broker 4's follower.replication.throttled.rate")
    check.eq(configs.get(("BROKER", "1"), {}).get("leader.replication.throttled.rate"), str(THROTTLE),
             "broker 1's leader.replication.throttled.rate")
    follower_list = configs.get(("TOPIC", TOPIC), {}).get("follower.replication.throttled.replicas", "")
    check.true("0:4" in follower_list, "topic follower.replication.throttled.replicas names 0:4 (%r)" % follower_list)

    verified = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rc, out = tool(home, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--reassignment-json-file",
                       plan_file.name, "--verify")
        if rc == 0 and "moving-0 is completed" in out and "moving-1 is completed" in out:
            verified = out
            break
        time.sleep(1)
    took = time.monotonic() - started
    print((verified or out).strip())
    check.true(verified is not None, "--verify reports both partitions completed within 120 s")
    print("reassignment completed in %.1f s" % took)
    if verified:
        check.true("Clearing broker-level throttles" in verified and "Clearing topic-level throttles" in verified,
                   "--verify cleared the throttles")
        configs = describe_configs(cluster, [("BROKER", "1"), ("BROKER", "4"), ("TOPIC", TOPIC)])
        check.true(not any("throttled" in k for v in configs.values() for k in v),
                   "no throttle left after --verify (%s)" % configs)

    info = wait_until("the new replica sets with their ISR", lambda: (lambda i: i if i and sorted(i[0][1]) == [2, 3, 4]
                      and sorted(i[1][1]) == [2, 3, 4] and len(i[0][2]) == 3 and len(i[1][2]) == 3 else None)(
                          partition_info(cluster, TOPIC)), 60)
    print("after the move: %s" % info)
    check.eq(info[0][1], [2, 3, 4], "moving-0 replicas")
    check.eq(info[1][1], [3, 4, 2], "moving-1 replicas")
    for p in (0, 1):
        check.true(info[p][0] in (2, 3, 4), "moving-%d leader %d is a target replica" % (p, info[p][0]))
        check.true(set(info[p][2]) <= {2, 3, 4}, "moving-%d ISR %s within the target" % (p, info[p][2]))
    gone = wait_until("broker 1 deleting its replicas", lambda: not any(
        os.path.exists(os.path.join(cluster.brokers[1].data_dir, "%s-%d" % (TOPIC, p))) for p in (0, 1)), 30)
    check.true(gone, "broker 1's moving-0 and moving-1 directories are gone")
    check.true(all(os.path.isdir(os.path.join(cluster.brokers[4].data_dir, "%s-%d" % (TOPIC, p))) for p in (0, 1)),
               "broker 4 holds both partitions")

    # Keep producing a little on the new replicas, then check every acknowledged record.
    before = {p: len(a) for p, a in producer.acked.items()}
    wait_until("records acknowledged after the move", lambda: all(len(producer.acked[p]) > before[p] + 100 for p in (0, 1)), 60)
    producer.stop()
    check.eq(producer.failed, [], "no delivery failed")
    got = read_all(boot)
    for p in (0, 1):
        acked = producer.acked[p]
        values = got[p]
        missing = acked - set(values)
        check.eq(len(missing), 0, "moving-%d: acknowledged records missing (%d acknowledged)" % (p, len(acked)))
        check.eq(len(values), len(set(values)), "moving-%d: no duplicate" % p)
        check.eq(values, sorted(values), "moving-%d: records in production order" % p)
        print("moving-%d: %d acknowledged, %d read back" % (p, len(acked), len(values)))

    # Errors through the Java admin client.
    bad = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [2, 9]}]}, bad)
    bad.close()
    rc, out = tool(home, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--reassignment-json-file",
                   bad.name, "--execute")
    print(out.strip()[-600:])
    check.true(rc != 0, "a reassignment to an unregistered broker fails")
    check.true("InvalidReplicaAssignmentException" in out or "Unknown broker id" in out or "9" in out,
               "the tool names the problem")
    rc, out = tool(home, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--reassignment-json-file",
                   plan_file.name, "--cancel")
    print(out.strip()[-600:])
    check.eq(rc, 0, "--cancel with nothing under way")

    elections(cluster, home, check)


def elections(cluster, home, check):
    b2 = cluster.brokers[2]
    check.eq(b2.stop(), 0, "broker 2 stops (controlled shutdown)")
    info = wait_until("moving-0 led by another broker", lambda: (lambda i: i if i and i[0][0] not in (2, -1) else None)(
        partition_info(cluster, TOPIC)), 60)
    print("broker 2 stopped: %s" % info)
    b2.start(ready_timeout=30)
    wait_until("broker 2 back in both ISRs", lambda: (lambda i: i if i and all(2 in i[p][2] for p in (0, 1)) else None)(
        partition_info(cluster, TOPIC)), 60)
    info = partition_info(cluster, TOPIC)
    check.true(info[0][0] != 2, "moving-0 not yet led by its preferred replica (auto rebalance is off): %s" % (info,))
    rc, out = tool(home, "kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap(), "--election-type",
                   "PREFERRED", "--all-topic-partitions")
    print(out.strip())
    check.eq(rc, 0, "kafka-leader-election.sh --election-type PREFERRED --all-topic-partitions")
    check.true("Successfully completed leader election (PREFERRED)" in out and "moving-0" in out,
               "the tool reports moving-0 elected")
    info = wait_until("preferred leaders back", lambda: (lambda i: i if i and i[0][0] == 2 and i[1][0] == 3 else None)(
        partition_info(cluster, TOPIC)), 30)
    check.eq((info[0][0], info[1][0]), (2, 3), "leaders are the preferred replicas again")

    from confluent_kafka import ElectionType, TopicPartition
    client = cluster_test.admin(cluster)
    try:
        f = client.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)])  # 2.16.1 rejects timeout keywords here
        result = f.result(timeout=30)
        err = result.get(TopicPartition(TOPIC, 0))
        print("confluent-kafka elect_leaders: %r" % (result,))
        check.true(err is not None and "ELECTION_NOT_NEEDED" in str(err), "librdkafka: ELECTION_NOT_NEEDED for moving-0")
    except Exception as e:  # noqa: BLE001 - reported as a failure
        check.true(False, "confluent-kafka elect_leaders: %r" % (e,))


if __name__ == "__main__":
    sys.exit(main())
