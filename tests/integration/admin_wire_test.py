#!/usr/bin/python3
"""CreatePartitions (KIP-195) and DescribeCluster (KIP-700/919) with kafka-python 2.0.2 and hand-built requests.

1. kafka-python's KafkaAdminClient.create_partitions (CreatePartitions v1): a 2-partition topic grows to 4,
   then to 5 with a manual assignment naming this broker; growing to 5 again raises InvalidPartitionsError.
   A KafkaProducer (metadata_max_age_ms=500) created before the growth then sends to partition 4, and a
   KafkaConsumer assigned to partitions 2-4 reads the records back.
2. Hand-built CreatePartitions v0 and v3 (flexible): a topic named twice gets ONE result, INVALID_REQUEST
   "Duplicate topic name.", and is not changed; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; validate_only
   answers NONE and changes nothing; an empty (non-null) assignment list for 2 new partitions is
   INVALID_REPLICA_ASSIGNMENT (Kafka: a non-null list must hold one entry per new partition); a manual
   assignment naming this broker grows the topic.
3. DescribeCluster v0 and v1: no error, the cluster id and controller that Metadata gives, one broker (this
   one, with its advertised port, rack null), ClusterAuthorizedOperations INT32_MIN unless asked for (then
   Kafka's CLUSTER operations bit field with no authorizer), v1 EndpointType 1. Endpoint type 2 (controllers)
   answers MISMATCHED_ENDPOINT_TYPE (114), an unknown type UNSUPPORTED_ENDPOINT_TYPE (115).
"""
import struct
import time

import sluice_harness as h
from kafka_wire import Conn, Reader, cstring, nstring, uvarint

try:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import InvalidPartitionsError
except ImportError as e:  # pragma: no cover
    print("SKIPPED: kafka-python not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)

BROKER_ID = 7
INT32_MIN = -2147483648
# CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
CLUSTER_OPS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
CREATE_PARTITIONS, DESCRIBE_CLUSTER, METADATA = 37, 60, 3


def kafka_python_part(broker, check):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="itest-admin", request_timeout_ms=10000)
    admin.create_topics([NewTopic("kp-grow", 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", metadata_max_age_ms=500)
    check.eq(sorted(producer.partitions_for("kp-grow")), [0, 1], "partitions before growth")

    admin.create_partitions({"kp-grow": NewPartitions(4)})
    admin.create_partitions({"kp-grow": NewPartitions(5, [[BROKER_ID]])})
    try:
        admin.create_partitions({"kp-grow": NewPartitions(5)})
        check.true(False, "growing to the current count did not raise")
    except InvalidPartitionsError as e:
        check.true("Topic already has 5 partition(s)." in str(e), "InvalidPartitionsError message: %s" % e)

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(producer.partitions_for("kp-grow")) != 5:
        time.sleep(0.2)
    check.eq(sorted(producer.partitions_for("kp-grow")), [0, 1, 2, 3, 4], "producer's partitions after growth")
    sent = {}
    for p in (2, 3, 4):
        md = producer.send("kp-grow", key=b"k%d" % p, value=b"v%d" % p, partition=p).get(timeout=15)
        sent[p] = md.offset
    producer.close()
    check.eq(sent, {2: 0, 3: 0, 4: 0}, "offsets of the first record of each new partition")

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=10000)
    tps = [TopicPartition("kp-grow", p) for p in (2, 3, 4)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = {}
    for m in consumer:
        got[m.partition] = (m.offset, m.key, m.value)
        if len(got) == 3:
            break
    consumer.close()
    check.eq(got, {p: (0, b"k%d" % p, b"v%d" % p) for p in (2, 3, 4)}, "records read from the new partitions")
    admin.create_topics([NewTopic("wire-grow", 1, 1)])
    admin.close()


def metadata_v1_counts(conn, topics):
    """Metadata v1 for `topics`: {name: partition count}, and (brokers, controller id)."""
    body = struct.pack(">i", len(topics)) + b"".join(nstring(t) for t in topics)
    r = Reader(conn.request(METADATA, 1, body))
    brokers = []
    for _ in range(r.int32()):
        brokers.append((r.int32(), r.string(), r.int32(), r.string()))
    controller = r.int32()
    counts = {}
    for _ in range(r.int32()):
        err, name, _internal = r.int16(), r.string(), r.int8()
        n = r.int32()
        for _ in range(n):
            r.int16(), r.int32(), r.int32()
            for _ in range(r.int32()):
                r.int32()
            for _ in range(r.int32()):
                r.int32()
        counts[name] = n if err == 0 else -err
    return counts, brokers, controller


def create_partitions_v0(conn, topics, validate_only=False):
    """topics: [(name, count, assignments or None)] -> [(name, error, message)]."""
    body = struct.pack(">i", len(topics))
    for name, count, assignments in topics:
        body += nstring(name) + struct.pack(">i", count)
        if assignments is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(assignments))
            for ids in assignments:
                body += struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    body += struct.pack(">i?", 10000, validate_only)
    r = Reader(conn.request(CREATE_PARTITIONS, 0, body))
    r.int32()  # throttle
    out = [(r.string(), r.int16(), r.string()) for _ in range(r.int32())]
    assert r.at_end(), "trailing bytes in CreatePartitions v0 response"
    return out


def create_partitions_v3(conn, topics, validate_only=False):
    body = uvarint(len(topics) + 1)
    for name, count, assignments in topics:
        body += cstring(name) + struct.pack(">i", count)
        if assignments is None:
            body += b"\x00"
        else:
            body += uvarint(len(assignments) + 1)
            for ids in assignments:
                body += uvarint(len(ids) + 1) + b"".join(struct.pack(">i", i) for i in ids) + b"\x00"
        body += b"\x00"
    body += struct.pack(">i?", 10000, validate_only) + b"\x00"
    r = Reader(conn.request(CREATE_PARTITIONS, 3, body, flexible=True))
    r.skip_tags()  # response header
    r.int32()
    out = []
    for _ in range(r.compact_array_len()):
        out.append((r.compact_string(), r.int16(), r.compact_string()))
        r.skip_tags()
    r.skip_tags()
    assert r.at_end(), "trailing bytes in CreatePartitions v3 response"
    return out


def wire_create_partitions_part(broker, check):
    conn = Conn(broker.port, "itest-wire")
    res = create_partitions_v0(conn, [("wire-grow", 3, None), ("wire-grow", 4, None), ("no-such", 2, None)])
    check.eq(sorted(res), sorted([("wire-grow", 42, "Duplicate topic name."),
                                  ("no-such", 3, "The topic 'no-such' does not exist.")]),
             "v0: duplicate topic and unknown topic")
    counts, _, _ = metadata_v1_counts(conn, ["wire-grow"])
    check.eq(counts, {"wire-grow": 1}, "a duplicated topic is not changed")

    check.eq(create_partitions_v3(conn, [("wire-grow", 3, None)], validate_only=True), [("wire-grow", 0, None)],
             "v3 validate_only")
    check.eq(metadata_v1_counts(conn, ["wire-grow"])[0], {"wire-grow": 1}, "validate_only changes nothing")
    res = create_partitions_v3(conn, [("wire-grow", 3, [])])
    check.eq([(n, e) for n, e, _ in res], [("wire-grow", 39)], "v3: empty assignment list for 2 new partitions")
    check.eq(create_partitions_v3(conn, [("wire-grow", 3, [[BROKER_ID], [BROKER_ID]])]), [("wire-grow", 0, None)],
             "v3 with a manual assignment")
    check.eq(metadata_v1_counts(conn, ["wire-grow"])[0], {"wire-grow": 3}, "count after the v3 growth")
    conn.close()


def describe_cluster(conn, version, include_ops=False, endpoint_type=1):
    body = struct.pack(">?", include_ops)
    if version >= 1:
        body += struct.pack(">b", endpoint_type)
    body += b"\x00"
    r = Reader(conn.request(DESCRIBE_CLUSTER, version, body, flexible=True))
    r.skip_tags()
    out = {"throttle": r.int32(), "error": r.int16(), "message": r.compact_string()}
    if version >= 1:
        out["endpoint_type"] = r.int8()
    out["cluster_id"] = r.compact_string()
    out["controller"] = r.int32()
    brokers = []
    for _ in range(r.compact_array_len()):
        brokers.append((r.int32(), r.compact_string(), r.int32(), r.compact_string()))
        r.skip_tags()
    out["brokers"] = brokers
    out["ops"] = r.int32()
    r.skip_tags()
    assert r.at_end(), "trailing bytes in DescribeCluster v%d response" % version
    return out


def describe_cluster_part(broker, check):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="itest-dc", request_timeout_ms=10000)
    cluster = admin.describe_cluster()  # kafka-python reads this from Metadata
    admin.close()
    conn = Conn(broker.port, "itest-dc")
    _, md_brokers, md_controller = metadata_v1_counts(conn, [])
    want_brokers = [(b[0], b[1], b[2], b[3]) for b in md_brokers]
    check.eq(want_brokers, [(BROKER_ID, "127.0.0.1", broker.port, None)], "Metadata brokers")
    for version in (0, 1):
        for include_ops in (False, True):
            d = describe_cluster(conn, version, include_ops)
            what = "DescribeCluster v%d ops=%s" % (version, include_ops)
            check.eq((d["error"], d["message"]), (0, None), what + " error")
            check.eq(d["cluster_id"], cluster["cluster_id"], what + " cluster id (as Metadata)")
            check.true(d["cluster_id"] and len(d["cluster_id"]) == 22, what + " cluster id is a 22-char Uuid")
            check.eq(d["controller"], md_controller, what + " controller (as Metadata)")
            check.eq(d["controller"], BROKER_ID, what + " controller")
            check.eq(d["brokers"], want_brokers, what + " brokers (as Metadata)")
            check.eq(d["ops"], CLUSTER_OPS if include_ops else INT32_MIN, what + " cluster authorized operations")
            if version >= 1:
                check.eq(d["endpoint_type"], 1, what + " endpoint type")
    d = describe_cluster(conn, 1, endpoint_type=2)
    check.eq((d["error"], d["brokers"]), (114, []), "DescribeCluster v1 for controllers: MISMATCHED_ENDPOINT_TYPE")
    d = describe_cluster(conn, 1, endpoint_type=9)
    check.eq((d["error"], d["message"]), (115, "Unsupported endpoint type 9"), "unknown endpoint type")
    conn.close()


def main(broker, check):
    kafka_python_part(broker, check)
    wire_create_partitions_part(broker, check)
    describe_cluster_part(broker, check)


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"broker.id": str(BROKER_ID), "num.partitions": "1"}))
