#!/usr/bin/env python3
"""Transactions in cluster mode (issue #16): three sluice brokers on a real ZooKeeper.

 - An exactly-once consume-transform-produce loop (tests/integration/eos_processor, librdkafka's transactional
   producer with send_offsets_to_transaction, read_committed input) processes 100,000 records while the broker
   coordinating its transactional id (the leader of its __transaction_state partition) is SIGKILLed and later
   restarted: the new coordinator replays __transaction_state, completes prepared transactions, aborts the ongoing
   one once it times out; markers reach partitions whose leaders moved. A processor that ends fatally (fenced by
   that abort) is started again, as an application would. Read_committed, the output holds every input record
   exactly once: 0 duplicates, 0 missing.
Only loopback addresses; every wait is bounded. Exit 0 pass, 1 fail, 77 skipped.
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_harness as h  # noqa: E402
from cluster_test import Cluster, coordinator_partition, create_topic, partition_info, wait_until  # noqa: E402

RECORDS = 100_000
PARTITIONS = 3
TXN_ID = "eos-cluster-1"
TXN_PARTITIONS = 6


TXN_KEYS = {
    "min.insync.replicas": "2",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
    "transaction.state.log.min.isr": "2",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
}


def last_committed(path):
    n = 0
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == "committed":
                    n = int(parts[1])
    except FileNotFoundError:
        pass
    return n


def run(processor, cluster, check, workdir):
    from confluent_kafka import Consumer, Producer, TopicPartition
    create_topic(cluster, "eos-in", PARTITIONS, 3)
    create_topic(cluster, "eos-out", PARTITIONS, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "enable.idempotence": True, "linger.ms": 5})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce("eos-in", value=str(i).encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    check.eq(producer.flush(120), 0, "input records still queued after flush")

    bootstrap = cluster.bootstrap()
    runs = []

    def spawn(n):
        out = os.path.join(workdir, "processor-%d.out" % n)
        err = open(os.path.join(workdir, "processor-%d.err" % n), "w")
        p = subprocess.Popen([processor, bootstrap, "eos-in", "eos-out", "eos-group", TXN_ID, "8000", "500"],
                             stdout=open(out, "w"), stderr=err)
        runs.append((p, out))
        return p, out

    proc, out = spawn(0)
    wait_until("30,000 records committed by the processor", lambda: last_committed(out) >= 30_000, 180)
    states = wait_until("__transaction_state leaders", lambda: partition_info(cluster, "__transaction_state"), 30)
    index = coordinator_partition(TXN_ID, len(states))
    coordinator = states[index][0]
    print("transactional id %s: coordinator is broker %d (__transaction_state-%d); %d committed so far" %
          (TXN_ID, coordinator, index, last_committed(out)))
    cluster.brokers[coordinator].kill9()
    killed_at = time.monotonic()
    restarted = False
    deadline = time.monotonic() + 420
    attempts = 1
    code = None
    while time.monotonic() < deadline:
        if not restarted and time.monotonic() - killed_at > 15:
            cluster.brokers[coordinator].start(ready_timeout=30)
            restarted = True
            print("broker %d restarted %.1f s after the kill" % (coordinator, time.monotonic() - killed_at))
        code = proc.poll()
        if code is None:
            time.sleep(0.2)
            continue
        if code == 0 and restarted:
            break
        if attempts >= 4:
            break
        print("processor run %d ended with %d after %d committed; starting it again" % (attempts - 1, code,
                                                                                    last_committed(out)))
        proc, out = spawn(attempts)
        attempts += 1
        code = None
    if code is None:
        proc.kill()
        proc.wait()
    check.eq(code, 0, "last processor run's exit status")
    print("processor runs: %d; coordinator killed %.1f s before the end" % (attempts, time.monotonic() - killed_at))

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "eos-check", "isolation.level":
                         "read_committed", "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("eos-out", p, 0) for p in range(PARTITIONS)])
    counts = {}
    total = 0
    eof = set()
    order_ok = True
    last = {}
    end = time.monotonic() + 120
    while time.monotonic() < end and not (len(eof) == PARTITIONS and total >= RECORDS):
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
            continue
        eof.discard(m.partition())
        n = int(m.value().decode()[4:])
        if n <= last.get(m.partition(), -1):
            order_ok = False
        last[m.partition()] = n
        counts[n] = counts.get(n, 0) + 1
        total += 1
    consumer.close()
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    missing = sum(1 for i in range(RECORDS) if i not in counts)
    print("exactly-once loop, cluster: %d in, %d out, %d duplicates, %d missing (coordinator broker %d killed)" %
          (RECORDS, total, duplicates, missing, coordinator))
    check.eq(duplicates, 0, "duplicates in the output")
    check.eq(missing, 0, "input records missing from the output")
    check.eq(total, RECORDS, "output records")
    check.true(order_ok, "output in input order per partition")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""))
    ap.add_argument("--processor", default="")
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK) or not os.access(args.processor, os.X_OK):
        print("SKIPPED: pass --broker and --processor executables")
        return h.SKIP
    if not h.ZooKeeper.available():
        print("SKIPPED: ZooKeeper (Debian package zookeeper) or java not installed")
        return h.SKIP
    zk = h.ZooKeeper()
    cluster = None
    check = h.Checker()
    workdir = None
    try:
        zk.start()
        cluster = Cluster(args.broker, zk, extra=TXN_KEYS)
        cluster.start()
        workdir = cluster.brokers[1].dir
        run(args.processor, cluster, check, workdir)
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    failed = not check.ok()
    if failed and workdir:
        for name in sorted(os.listdir(workdir)):
            if name.startswith("processor-") and name.endswith(".err"):
                with open(os.path.join(workdir, name)) as f:
                    print("---- %s ----\n%s" % (name, f.read()[-3000:]))
    if failed and cluster:
        for i, b in cluster.brokers.items():
            print("---- broker %d log (%s) ----" % (i, b.log_path))
            print(b.log_text()[-6000:])
    if cluster:
        cluster.close(failed)
    zk.close(failed)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


if __name__ == "__main__":
    sys.exit(main())
