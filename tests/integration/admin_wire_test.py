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
4. Topic config validation as Kafka's LogConfig, with confluent-kafka-python's AdminClient (CreateTopics,
   AlterConfigs, DescribeConfigs) and a hand-built IncrementalAlterConfigs v0: CreateTopics with
   segment.bytes=13 (also validate_only) and retention.ms=-2 is INVALID_CONFIG (40) naming the key; AlterConfigs
   min.insync.replicas=0 (and max.message.bytes=-1, segment.bytes=0, retention.ms=-7) is INVALID_CONFIG and the
   topic keeps its old values (DescribeConfigs); IncrementalAlterConfigs index.interval.bytes=-5 and
   segment.ms=-1 are INVALID_CONFIG, a SET with a null value INVALID_REQUEST (42), max.message.bytes=0 is
   accepted; a topic created with max.message.bytes=0 exists and refuses every batch with MESSAGE_TOO_LARGE.
5. Colliding names: `a.b_c` exists, so CreateTopics `a_b.c` is INVALID_TOPIC_EXCEPTION (17) "Topic 'a_b.c'
   collides with existing topic: a.b_c" (also validate_only), and Metadata does not auto-create it (17 too).
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
try:
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, ConfigResource
    from confluent_kafka.admin import NewTopic as CkNewTopic
except ImportError as e:  # pragma: no cover
    print("SKIPPED: confluent-kafka not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)

BROKER_ID = 7
INT32_MIN = -2147483648
# CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
CLUSTER_OPS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
CREATE_PARTITIONS, DESCRIBE_CLUSTER, METADATA, INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS = 37, 60, 3, 44, 33
TOPIC_RESOURCE, OP_SET, OP_DELETE = 2, 0, 1


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


def ck_error(future):
    """(error code, message) of a confluent-kafka admin future; (0, None) when it succeeded."""
    try:
        future.result(timeout=15)
        return 0, None
    except KafkaException as e:
        err = e.args[0]
        return err.code(), err.str()


def ck_create(admin, name, configs, validate_only=False):
    fs = admin.create_topics([CkNewTopic(name, 1, 1, config=configs)], validate_only=validate_only,
                             operation_timeout=10, request_timeout=15)
    return ck_error(fs[name])


def ck_describe(admin, name):
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    entries = admin.describe_configs([res], request_timeout=15)[res].result(timeout=15)
    return {k: v.value for k, v in entries.items()}


def incremental_alter_v0(conn, topic, ops, validate_only=False):
    """ops: [(name, operation, value or None)] on one topic -> (error, message)."""
    body = struct.pack(">i", 1) + struct.pack(">b", TOPIC_RESOURCE) + nstring(topic) + struct.pack(">i", len(ops))
    for name, op, value in ops:
        body += nstring(name) + struct.pack(">b", op) + nstring(value)
    body += struct.pack(">?", validate_only)
    r = Reader(conn.request(INCREMENTAL_ALTER_CONFIGS, 0, body))
    r.int32()  # throttle
    n = r.int32()
    assert n == 1, "one resource result expected, got %d" % n
    out = (r.int16(), r.string())
    r.int8(), r.string()
    assert r.at_end(), "trailing bytes in IncrementalAlterConfigs v0 response"
    return out


def alter_v0(conn, topic, configs):
    """AlterConfigs v0 of [(name, value or None)] on one topic -> (error, message)."""
    body = struct.pack(">i", 1) + struct.pack(">b", TOPIC_RESOURCE) + nstring(topic) + struct.pack(">i", len(configs))
    for name, value in configs:
        body += nstring(name) + nstring(value)
    body += struct.pack(">?", False)
    r = Reader(conn.request(ALTER_CONFIGS, 0, body))
    r.int32()  # throttle
    n = r.int32()
    assert n == 1, "one resource result expected, got %d" % n
    out = (r.int16(), r.string())
    r.int8(), r.string()
    assert r.at_end(), "trailing bytes in AlterConfigs v0 response"
    return out


def config_validation_part(broker, check):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # CreateTopics: Kafka's LogConfig bounds, INVALID_CONFIG naming key and value; nothing is created.
    for validate_only in (True, False):
        err, msg = ck_create(admin, "cfg-seg13", {"segment.bytes": "13"}, validate_only)
        check.eq(err, KafkaError.INVALID_CONFIG, "CreateTopics segment.bytes=13 (validate_only=%s)" % validate_only)
        check.true(msg and "segment.bytes" in msg and "13" in msg, "message names key and value: %s" % msg)
    err, msg = ck_create(admin, "cfg-ret", {"retention.ms": "-2"})
    check.eq(err, KafkaError.INVALID_CONFIG, "CreateTopics retention.ms=-2")
    md = admin.list_topics(timeout=10).topics
    check.true("cfg-seg13" not in md and "cfg-ret" not in md, "refused topics were not created")

    # AlterConfigs: the same validator; the topic keeps what it had.
    check.eq(ck_create(admin, "cfg-alter", {"retention.ms": "3600000", "min.insync.replicas": "1"}), (0, None),
             "CreateTopics cfg-alter")
    for key, value in (("min.insync.replicas", "0"), ("max.message.bytes", "-1"), ("segment.bytes", "0"),
                       ("retention.ms", "-7")):
        res = ConfigResource(ConfigResource.Type.TOPIC, "cfg-alter", set_config={key: value})
        err, msg = ck_error(admin.alter_configs([res], request_timeout=15)[res])
        check.eq(err, KafkaError.INVALID_CONFIG, "AlterConfigs %s=%s" % (key, value))
        check.true(msg and key in msg, "AlterConfigs message names the key: %s" % msg)
    described = ck_describe(admin, "cfg-alter")
    check.eq((described["min.insync.replicas"], described["retention.ms"]), ("1", "3600000"),
             "old values kept after refused AlterConfigs")

    # IncrementalAlterConfigs (confluent-kafka 1.7 has no API for it: hand-built v0).
    conn = Conn(broker.port, "itest-iac")
    for key, value in (("index.interval.bytes", "-5"), ("segment.ms", "-1")):
        for validate_only in (True, False):
            err, msg = incremental_alter_v0(conn, "cfg-alter", [(key, OP_SET, value)], validate_only)
            check.eq(err, 40, "IncrementalAlterConfigs %s=%s (validate_only=%s)" % (key, value, validate_only))
            check.true(msg and key in msg, "IncrementalAlterConfigs message names the key: %s" % msg)
    check.eq(incremental_alter_v0(conn, "cfg-alter", [("retention.ms", OP_SET, None)]),
             (42, "Null value not supported for : retention.ms"), "IncrementalAlterConfigs SET null")
    # A null value under an empty config name (the differential tester's crash, B1): refused, broker alive.
    check.eq(alter_v0(conn, "cfg-alter", [("", None), ("retention.ms", "86400000")]),
             (42, "Null value not supported for : "), "AlterConfigs null value of an empty name")
    check.eq(incremental_alter_v0(conn, "cfg-alter", [("", OP_SET, None)]),
             (42, "Null value not supported for : "), "IncrementalAlterConfigs SET null of an empty name")
    check.eq(incremental_alter_v0(conn, "cfg-alter", [("max.message.bytes", OP_SET, "0")]), (0, None),
             "IncrementalAlterConfigs max.message.bytes=0")
    conn.close()
    described = ck_describe(admin, "cfg-alter")
    check.eq((described["max.message.bytes"], described["index.interval.bytes"], described["retention.ms"]),
             ("0", "4096", "3600000"), "after IncrementalAlterConfigs")

    # max.message.bytes=0 at creation: accepted (as Kafka); every batch is then MESSAGE_TOO_LARGE.
    check.eq(ck_create(admin, "cfg-max0", {"max.message.bytes": "0"}), (0, None), "CreateTopics max.message.bytes=0")
    results = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0,
                         "delivery.timeout.ms": 10000})
    producer.produce("cfg-max0", b"v", callback=lambda err, _msg: results.append(err))
    producer.flush(15)
    check.eq([e.code() if e else 0 for e in results], [KafkaError.MSG_SIZE_TOO_LARGE],
             "produce into max.message.bytes=0")
    check.eq(ck_describe(admin, "cfg-max0")["max.message.bytes"], "0", "DescribeConfigs max.message.bytes=0")

    # Colliding names ('.' and '_' are the same in metric names).
    check.eq(ck_create(admin, "a.b_c", {}), (0, None), "CreateTopics a.b_c")
    for validate_only in (True, False):
        check.eq(ck_create(admin, "a_b.c", {}, validate_only),
                 (KafkaError.TOPIC_EXCEPTION, "Topic 'a_b.c' collides with existing topic: a.b_c"),
                 "CreateTopics a_b.c (validate_only=%s)" % validate_only)
    conn = Conn(broker.port, "itest-collide")
    check.eq(metadata_v1_counts(conn, ["a_b.c"])[0], {"a_b.c": -17}, "Metadata does not auto-create a_b.c")
    conn.close()
    md = admin.list_topics(timeout=10).topics
    check.true("a.b_c" in md and "a_b.c" not in md, "only a.b_c exists")


def main(broker, check):
    kafka_python_part(broker, check)
    wire_create_partitions_part(broker, check)
    describe_cluster_part(broker, check)
    config_validation_part(broker, check)


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"broker.id": str(BROKER_ID), "num.partitions": "1"}))
