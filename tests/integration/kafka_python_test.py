#!/usr/bin/python3
"""kafka-python 2.0.2 (Debian python3-kafka; run with /usr/bin/python3) against a real sluice broker.

1. api_version auto-detection: KafkaAdminClient/KafkaProducer/KafkaConsumer built WITHOUT api_version
   must connect (kafka-python probes with ApiVersions v0 and infers a broker version from the max
   versions it sees). The inferred version is printed. If auto-detection fails the test fails, and the
   rest runs with an explicit api_version=(2, 5, 0) so the data path is still checked.
2. KafkaAdminClient.create_topics: a 3-partition topic.
3. KafkaProducer(acks='all') sends 1,000 keyed records with headers; every future resolves to
   (partition, offset); per partition the offsets are exactly 0..n-1 in send order.
4. KafkaConsumer without group_id, assign() all 3 partitions, seek_to_beginning(): reads exactly the
   1,000 records, each at the offset its future gave, with the same key, value and headers.
5. beginning_offsets / end_offsets (ListOffsets) give 0 and the per-partition counts.
"""
import collections
import time

import sluice_harness as h

try:
    import kafka
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
except ImportError as e:  # pragma: no cover
    print("SKIPPED: kafka-python not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)

TOPIC = "kafka-python"
PARTITIONS = 3
N = 1000
EXPLICIT = (2, 5, 0)


def headers_for(i):
    hs = [("h-index", str(i).encode()), ("h-fixed", b"fixed")]
    if i % 10 == 0:
        hs.append(("h-empty", b""))  # kafka-python 2.0.2 asserts header values are bytes (no null)
    return hs


def detect(broker, check):
    """Returns the kwargs to use for clients: {} when auto-detection works, else explicit."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="itest-detect",
                                 request_timeout_ms=10000)
        version = admin.config["api_version"]
        admin.close()
        print("kafka-python %s auto-detected broker api_version %s" % (kafka.__version__, version,))
        check.true(version is not None and version >= (0, 11), "auto-detected api_version >= (0, 11): %r" % (version,))
        return {}
    except Exception as e:  # noqa: BLE001
        check.true(False, "kafka-python api_version auto-detection failed: %r "
                          "(continuing with api_version=%r)" % (e, EXPLICIT))
        return {"api_version": EXPLICIT}


def main(broker, check):
    extra = detect(broker, check)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="itest-admin",
                             request_timeout_ms=10000, **extra)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], timeout_ms=10000)
    admin.close()

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                             retries=0, request_timeout_ms=15000, **extra)
    print("producer api_version:", producer.config["api_version"])
    futures = []
    for i in range(N):
        futures.append(producer.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=headers_for(i)))
    producer.flush(timeout=60)
    sent = {}  # (partition, offset) -> i
    per_partition = collections.defaultdict(list)
    for i, f in enumerate(futures):
        try:
            md = f.get(timeout=30)
        except Exception as e:  # noqa: BLE001
            check.true(False, "send %d failed: %r" % (i, e))
            continue
        sent[(md.partition, md.offset)] = i
        per_partition[md.partition].append(md.offset)
    producer.close(timeout=10)
    check.eq(len(sent), N, "distinct (partition, offset) acknowledged")
    check.eq(sorted(per_partition), list(range(PARTITIONS)), "partitions used by 1,000 keyed records")
    for p, offs in per_partition.items():
        check.eq(offs, list(range(len(offs))), "acknowledged offsets of partition %d in send order" % p)

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", consumer_timeout_ms=1000,
                             request_timeout_ms=15000, fetch_max_wait_ms=100, **extra)
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    got = collections.defaultdict(list)
    deadline = time.monotonic() + 60
    total = 0
    while total < N and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=500, max_records=500)
        for tp, msgs in batch.items():
            for m in msgs:
                got[tp.partition].append(m)
                total += 1
    # Nothing more after the expected count (bounded extra poll).
    extra_batch = consumer.poll(timeout_ms=500)
    check.eq(sum(len(v) for v in extra_batch.values()), 0, "records beyond the 1,000 produced")

    check.eq(total, N, "records consumed")
    for p in range(PARTITIONS):
        msgs = got[p]
        check.eq([m.offset for m in msgs], per_partition[p], "consumed offsets of partition %d" % p)
        bad = 0
        for m in msgs:
            i = sent.get((p, m.offset))
            if i is None:
                check.true(False, "unexpected record p%d@%d" % (p, m.offset))
                bad += 1
            else:
                ok = (check.eq(m.key, b"k%d" % i, "key at p%d@%d" % (p, m.offset))
                      and check.eq(m.value, b"v%d" % i, "value at p%d@%d" % (p, m.offset))
                      and check.eq(list(m.headers), headers_for(i), "headers at p%d@%d" % (p, m.offset)))
                bad += 0 if ok else 1
            if bad >= 5:
                break

    begin = consumer.beginning_offsets(tps)
    end = consumer.end_offsets(tps)
    for tp in tps:
        check.eq(begin[tp], 0, "beginning offset of %s" % (tp,))
        check.eq(end[tp], len(per_partition[tp.partition]), "end offset of %s" % (tp,))
    consumer.close()

    # Clients may not write the broker's internal topics (Kafka: INVALID_TOPIC_EXCEPTION).
    from kafka.errors import InvalidTopicError
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000, **extra)
    admin.list_consumer_groups()  # FindCoordinator created __consumer_offsets during the group consume above
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, request_timeout_ms=10000, **extra)
    try:
        producer.send("__consumer_offsets", value=b"not a group record", partition=0).get(timeout=15)
        check.true(False, "a client's produce to __consumer_offsets was accepted")
    except InvalidTopicError:
        pass
    except Exception as e:  # noqa: BLE001
        check.true(False, "produce to __consumer_offsets: expected InvalidTopicError, got %r" % (e,))
    producer.close(timeout=10)

    # A second broker on the same log dir must refuse to start (Kafka's .lock file).
    import subprocess
    second = subprocess.run([broker.binary, "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % h.pick_free_port(),
                             "--override", "log.dirs=%s" % broker.data_dir], capture_output=True, timeout=30)
    out = (second.stdout + second.stderr).decode("utf-8", "replace")
    check.true(second.returncode != 0 and "another process is using this log directory" in out,
               "second broker on the same log dir: exit %s, output %r" % (second.returncode, out[-300:]))


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"num.partitions": "1"}))
