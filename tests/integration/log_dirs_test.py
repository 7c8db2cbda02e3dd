#!/usr/bin/env python3
"""Moving replicas between log dirs (AlterReplicaLogDirs, KIP-113) with Kafka 4.4's kafka-reassign-partitions.sh
on a single Sluice node with two log dirs (issue #21).

 - topic `shifting`, 2 partitions, one in each log dir; 1000 numbered records per partition (confluent-kafka,
   acks=all);
 - a plan with "log_dirs" swaps them: `--execute` starts the log dir moves, `--verify` reports them done;
   DescribeLogDirs (confluent-kafka's describe_log_dirs is not used: the tool's --verify reads it) and the file
   system show each partition in its new dir only;
 - every record is read back once, in order; 200 more are appended to the moved logs and read; after a restart the
   logs are found in their new dirs with all records;
 - a plan naming a dir that is not in log.dirs fails (LOG_DIR_NOT_FOUND) and moves nothing.
Only loopback addresses; bounded. Exit 0 pass, 1 fail, 77 skipped (no Java, Kafka jars or venv).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402

TOPIC = "shifting"


def produce(bootstrap, start, count):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    acked = []
    for n in range(start, start + count):
        p.produce(TOPIC, value=str(n).encode(), partition=n % 2,
                  on_delivery=lambda err, msg: acked.append(1) if err is None else None)
        if n % 200 == 0:
            p.poll(0)
    p.flush(60)
    return len(acked)


def read_all(bootstrap, total):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "log-dirs-check", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
    got = {0: [], 1: []}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(got[0]) + len(got[1]) < total:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got[m.partition()].append(int(m.value()))
    c.close()
    return got


def main():
    args, skip = h.client_test_args(__doc__, __file__)
    if skip is not None:
        return skip
    home = h.kafka_tools_home(args.cache)
    if home is None:
        return h.SKIP
    root = tempfile.mkdtemp(prefix="sluice-logdirs-")
    dirs = [os.path.join(root, "d1"), os.path.join(root, "d2")]
    try:
        code = h.run(lambda broker, check: body(broker, check, home, dirs), args.broker,
                     overrides={"log.dirs": ",".join(dirs), "num.partitions": "2"})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return code


def tool(home, *words):
    p = subprocess.run([os.path.join(home, "bin", "kafka-reassign-partitions.sh")] + list(words), capture_output=True,
                       text=True, timeout=120)
    out = (p.stdout + p.stderr).strip()
    print("$ kafka-reassign-partitions.sh %s -> %d\n%s" % (" ".join(words[2:]), p.returncode, out[-1500:]))
    return p.returncode, out


def where(dirs, partition):
    return [d for d in dirs if os.path.isdir(os.path.join(d, "%s-%d" % (TOPIC, partition)))]


def plan_file(entries):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"version": 1, "partitions": entries}, f)
    f.close()
    return f.name


def body(broker, check, home, dirs):
    boot = broker.bootstrap
    made = subprocess.run([os.path.join(home, "bin", "kafka-topics.sh"), "--bootstrap-server", boot, "--create",
                           "--topic", TOPIC, "--partitions", "2"], capture_output=True, text=True, timeout=120)
    check.eq(made.returncode, 0, "kafka-topics.sh --create (%s)" % made.stderr.strip()[-300:])
    check.eq(produce(boot, 0, 2000), 2000, "2000 records acknowledged")
    before = {p: where(dirs, p) for p in (0, 1)}
    print("before: %s" % before)
    check.true(all(len(v) == 1 for v in before.values()) and before[0] != before[1],
               "the two partitions are in different log dirs: %s" % before)
    target = {p: [d for d in dirs if d not in before[p]][0] for p in (0, 1)}
    plan = plan_file([{"topic": TOPIC, "partition": p, "replicas": [0], "log_dirs": [target[p]]} for p in (0, 1)])

    rc, out = tool(home, "--bootstrap-server", boot, "--reassignment-json-file", plan, "--execute")
    check.eq(rc, 0, "--execute with log_dirs")
    check.true("successfully started moving log directory" in out.lower(), "the tool started the log directory moves")
    rc, out = tool(home, "--bootstrap-server", boot, "--reassignment-json-file", plan, "--verify")
    check.eq(rc, 0, "--verify")
    for p in (0, 1):
        check.true(("%s-%d" % (TOPIC, p)) in out and "completed" in out.lower(),
                   "--verify reports %s-%d's move completed" % (TOPIC, p))
    h.wait_until(lambda: all(where(dirs, p) == [target[p]] for p in (0, 1)), 10)
    after = {p: where(dirs, p) for p in (0, 1)}
    check.eq(after, {p: [target[p]] for p in (0, 1)}, "each partition is in its new log dir only")

    got = read_all(boot, 2000)
    for p in (0, 1):
        check.eq(got[p], [n for n in range(2000) if n % 2 == p], "partition %d: every record once, in order" % p)
    check.eq(produce(boot, 2000, 200), 200, "200 more records acknowledged by the moved logs")
    check.eq(sum(len(v) for v in read_all(boot, 2200).values()), 2200, "2200 records read after the append")

    bad = plan_file([{"topic": TOPIC, "partition": 0, "replicas": [0], "log_dirs": [os.path.join(dirs[0], "nope")]}])
    rc, out = tool(home, "--bootstrap-server", boot, "--reassignment-json-file", bad, "--execute")
    check.true(rc != 0, "a plan naming a dir outside log.dirs fails")
    check.true("LogDirNotFound" in out or "log dir" in out.lower(), "the tool names the missing log dir")
    check.eq(where(dirs, 0), [target[0]], "partition 0 did not move")

    check.eq(broker.stop(), 0, "broker stops")
    broker.start()
    check.eq({p: where(dirs, p) for p in (0, 1)}, {p: [target[p]] for p in (0, 1)}, "after a restart: same dirs")
    got = read_all(boot, 2200)
    for p in (0, 1):
        check.eq(got[p], [n for n in range(2200) if n % 2 == p], "after a restart, partition %d: every record" % p)


if __name__ == "__main__":
    sys.exit(main())
