#!/usr/bin/env python3
"""Fetch from follower (KIP-392) on a real 3-broker ZooKeeper cluster, with real clients (issue #21).

Brokers 1, 2, 3 in racks r1, r2, r3 with replica.selector.class = Kafka's RackAwareReplicaSelector; topic
`racked`, partition 0 on [1,2,3] (leader 1) and partition 1 on [2,3,1] (leader 2), RF 3.
 - records produced with acks=all (confluent-kafka) before and while the consumers read;
 - librdkafka with client.rack=r3 (broker 3 leads nothing): every record read once, in order; its statistics name
   broker 3 as the broker it fetches both partitions from; broker 3's bytes-out counter (/metrics, bytes sent to
   consumers) grew by what was read while the leaders' did not move;
 - librdkafka with client.rack=r1: partition 0 from its leader (1, in the consumer's rack), partition 1 from the
   follower in r1 (broker 1); broker 2's counter stays put;
 - librdkafka with no client.rack: both from the leaders;
 - Kafka 4.4's Java consumer (kafka-console-consumer.sh, client.rack=r3) reads everything; only broker 3's counter
   moves;
 - DeleteRecords of racked-0 up to 1000 is answered once every replica's log start is 1000 (/metrics right after);
 - broker 3 stopped while the r3 consumer reads: it goes back to the leaders and reads the records produced after.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped (no ZooKeeper, Java or venv).
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402
import cluster_test  # noqa: E402
from cluster_test import wait_until, partition_info  # noqa: E402

TOPIC = "racked"
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


class Cluster(cluster_test.Cluster):
    def __init__(self, binary, zk):
        super().__init__(binary, zk, size=3, extra={"auto.leader.rebalance.enable": "false",
                                                    "replica.selector.class": SELECTOR})
        for i, b in self.brokers.items():
            b.overrides["broker.rack"] = "r%d" % i
            b.overrides["http.listeners"] = "http://127.0.0.1:%d" % h.pick_free_port()

    def metrics(self, i):
        port = self.brokers[i].http_ports()[0]
        return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()

    def log_starts(self, partition):
        """{broker id: log start offset of TOPIC-partition} from each live broker's /metrics."""
        out = {}
        for i, b in self.brokers.items():
            if not b.alive():
                continue
            for line in self.metrics(i).splitlines():
                if (line.startswith("kafka_log_log_logstartoffset{") and 'topic="%s"' % TOPIC in line and
                        'partition="%d"' % partition in line):
                    out[i] = float(line.rsplit(" ", 1)[1])
        return out

    def bytes_out(self):
        """{broker id: bytes sent to consumers for TOPIC} from each live broker's /metrics."""
        out = {}
        for i, b in self.brokers.items():
            if not b.alive():
                continue
            port = b.http_ports()[0]
            text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
            m = re.search(r'^kafka_server_brokertopicmetrics_bytesout_total\{topic="%s"\} (\S+)$' % TOPIC, text, re.M)
            out[i] = float(m.group(1)) if m else 0.0
        return out


def produce(bootstrap, start, count):
    """Numbered records start..start+count-1, alternately to partitions 0 and 1, acks=all; returns the count acked."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    acked = []
    for n in range(start, start + count):
        p.produce(TOPIC, value=str(n).encode(), partition=n % 2,
                  on_delivery=lambda err, msg: acked.append(msg) if err is None else None)
        if n % 200 == 0:
            p.poll(0)
    p.flush(60)
    return len(acked)


class RackConsumer:
    """A librdkafka consumer of both partitions from offset 0, with `rack` as client.rack (None: not set); records
    the broker its statistics say each partition is fetched from."""

    def __init__(self, bootstrap, rack):
        from confluent_kafka import Consumer, TopicPartition
        conf = {"bootstrap.servers": bootstrap, "group.id": "rack-%s" % rack, "enable.auto.commit": False,
                "statistics.interval.ms": 200, "stats_cb": self.on_stats, "topic.metadata.refresh.interval.ms": 2000}
        if rack is not None:
            conf["client.rack"] = rack
        if os.environ.get("FF_DEBUG"):
            conf["debug"] = "fetch,topic,broker,metadata"
        self.c = Consumer(conf)
        self.c.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        self.values = {0: [], 1: []}
        self.fetched_from = {}

    def on_stats(self, text):
        parts = json.loads(text).get("topics", {}).get(TOPIC, {}).get("partitions", {})
        for p in ("0", "1"):
            if p in parts and parts[p].get("broker", -1) >= 0:
                self.fetched_from[int(p)] = parts[p]["broker"]

    def read_until(self, total, timeout):
        deadline = time.monotonic() + timeout
        settle = None  # one more statistics round after the last record
        while time.monotonic() < deadline and (settle is None or time.monotonic() < settle):
            m = self.c.poll(0.1)
            if m is not None and not m.error():
                self.values[m.partition()].append(int(m.value()))
            if settle is None and len(self.values[0]) + len(self.values[1]) >= total:
                settle = time.monotonic() + 0.5
        return len(self.values[0]) + len(self.values[1])

    def close(self):
        self.c.close()


def check_values(check, values, upto, what):
    want = {p: [n for n in range(upto) if n % 2 == p] for p in (0, 1)}
    for p in (0, 1):
        check.eq(values[p], want[p], "%s: partition %d read once each, in order" % (what, p))


def main():
    # The pinned confluent-kafka (the venv's, not Debian's older one) and Kafka 4.4's tools.
    return h.cluster_tool_test(__doc__, __file__, Cluster, run)


def delta(before, after):
    return {i: after.get(i, 0.0) - before.get(i, 0.0) for i in after}


def run(cluster, home, check):
    boot = cluster.bootstrap()
    made = subprocess.run([os.path.join(home, "bin", "kafka-topics.sh"), "--bootstrap-server", boot, "--create",
                           "--topic", TOPIC, "--replica-assignment", "1:2:3,2:3:1"], capture_output=True, text=True,
                          timeout=120)
    check.eq(made.returncode, 0, "kafka-topics.sh --create with a replica assignment (%s)" % made.stderr.strip()[-300:])
    wait_until("both partitions led with 3 in-sync replicas",
               lambda: (lambda i: i if i and len(i) == 2 and all(len(v[2]) == 3 for v in i.values()) else None)(
                   partition_info(cluster, TOPIC)), 60)
    check.eq(produce(boot, 0, 2000), 2000, "first 2000 records acknowledged (acks=all)")

    # client.rack=r3: both partitions from follower 3.
    before = cluster.bytes_out()
    c3 = RackConsumer(boot, "r3")
    got = c3.read_until(1000, 60)  # half, then more records while it reads
    check.eq(produce(boot, 2000, 2000), 2000, "2000 more records acknowledged while the r3 consumer reads")
    got = c3.read_until(4000, 90)
    check.eq(got, 4000, "r3 consumer read every record")
    check_values(check, c3.values, 4000, "client.rack=r3")
    check.eq(c3.fetched_from, {0: 3, 1: 3}, "librdkafka statistics: both partitions fetched from broker 3")
    d = delta(before, cluster.bytes_out())
    print("client.rack=r3 bytes out by broker: %s" % d)
    check.true(d[3] > 4000 * 4, "broker 3 (follower in r3) sent the records: %s" % d)
    check.eq((d[1], d[2]), (0.0, 0.0), "the leaders sent no records to the r3 consumer")

    # client.rack=r1: partition 0 from leader 1 (in r1), partition 1 from follower 1.
    before = cluster.bytes_out()
    c1 = RackConsumer(boot, "r1")
    check.eq(c1.read_until(4000, 90), 4000, "r1 consumer read every record")
    check_values(check, c1.values, 4000, "client.rack=r1")
    check.eq(c1.fetched_from, {0: 1, 1: 1}, "librdkafka statistics: both partitions fetched from broker 1")
    d = delta(before, cluster.bytes_out())
    print("client.rack=r1 bytes out by broker: %s" % d)
    check.true(d[1] > 4000 * 4 and d[2] == 0.0 and d[3] == 0.0, "only broker 1 sent records: %s" % d)
    c1.close()

    # No client.rack: from the leaders.
    before = cluster.bytes_out()
    c0 = RackConsumer(boot, None)
    check.eq(c0.read_until(4000, 90), 4000, "consumer without a rack read every record")
    check.eq(c0.fetched_from, {0: 1, 1: 2}, "librdkafka statistics: each partition fetched from its leader")
    d = delta(before, cluster.bytes_out())
    print("no client.rack bytes out by broker: %s" % d)
    check.true(d[1] > 0 and d[2] > 0 and d[3] == 0.0, "the leaders sent the records: %s" % d)
    c0.close()

    # Kafka 4.4's Java consumer with client.rack=r3.
    before = cluster.bytes_out()
    p = subprocess.run([os.path.join(home, "bin", "kafka-console-consumer.sh"), "--bootstrap-server", boot,
                        "--topic", TOPIC, "--from-beginning", "--max-messages", "4000", "--timeout-ms", "60000",
                        "--command-property", "client.rack=r3", "--command-property", "group.id=java-r3"],
                       capture_output=True, text=True, timeout=120)
    lines = [line for line in p.stdout.splitlines() if line.strip().isdigit()]
    check.eq(len(lines), 4000, "Java consumer (client.rack=r3) read 4000 records (%s)" % p.stderr.strip()[-300:])
    check.eq(sorted(int(v) for v in lines), list(range(4000)), "Java consumer: every record once")
    d = delta(before, cluster.bytes_out())
    print("Java client.rack=r3 bytes out by broker: %s" % d)
    check.true(d[3] > 4000 * 4 and d[1] == 0.0 and d[2] == 0.0, "only broker 3 sent records to the Java consumer: %s" % d)

    # DeleteRecords is answered once every in-sync replica's log start reached the new one (Kafka's
    # DelayedDeleteRecords): right after the answer, no replica serves the deleted records any more.
    from confluent_kafka import TopicPartition
    admin = cluster_test.admin(cluster)
    fs = admin.delete_records([TopicPartition(TOPIC, 0, 1000)], operation_timeout=30, request_timeout=40)
    deleted = list(fs.values())[0].result(timeout=60)
    starts = cluster.log_starts(0)
    print("DeleteRecords to 1000: low watermark %s; log starts right after: %s" % (deleted.low_watermark, starts))
    check.eq(deleted.low_watermark, 1000, "DeleteRecords low watermark")
    check.eq(sorted(starts), [1, 2, 3], "every broker reports racked-0's log start")
    check.true(all(v >= 1000 for v in starts.values()), "every replica's log start reached 1000 before the answer")

    # The follower goes away: the r3 consumer goes back to the leaders for what follows.
    check.eq(cluster.brokers[3].stop(), 0, "broker 3 stops")
    check.eq(produce(cluster.bootstrap(), 4000, 1000), 1000, "1000 more records acknowledged with broker 3 down")
    got = c3.read_until(5000, 120)
    check.eq(got, 5000, "r3 consumer read the records produced after broker 3 stopped")
    check_values(check, c3.values, 5000, "client.rack=r3 after broker 3 stopped")
    print("r3 consumer after broker 3 stopped fetches from: %s" % c3.fetched_from)
    c3.close()


if __name__ == "__main__":
    sys.exit(main())
