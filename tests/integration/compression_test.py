#!/usr/bin/python3
"""Compressed record batches with real clients (storage/compression.h, storage/log_validator.h).

1. kcat (librdkafka 2.0.2) -z gzip|snappy|lz4|zstd produces keyed records with headers into a topic with
   compression.type=producer (the default); kcat, confluent-kafka-python and kafka-python (the codecs
   its interpreter has: gzip always) read back exactly the records produced, at offsets 0..n-1; the
   stored batches (read from the segment file) carry the producer's codec.
2. A topic with compression.type=zstd receives gzip batches from kcat: kcat and confluent-kafka read them
   back identical; every stored batch is zstd (attribute bits 0-2 in the segment file) with a valid CRC.
3. compression.type=gzip receiving snappy, compression.type=uncompressed receiving lz4: kafka-python reads
   both back (gzip / uncompressed are what it can decode without extra modules); stored codecs checked.
4. kafka-python's own gzip producer into a producer topic: kcat reads it back.
5. After a clean restart (recovery of the recompressed segment) kcat reads the zstd topic again, and the
   topics' own configs still apply to the logs reopened at start: new gzip batches into the zstd topic are
   stored zstd, and a 5000-byte record into a topic with max.message.bytes=2000 is refused
   (MSG_SIZE_TOO_LARGE). A breaker found both silently back at the broker defaults after a restart.
"""
import os
import subprocess
import time

import sluice_harness as h

KCAT = "/usr/bin/kcat"
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
N = 300

try:
    from confluent_kafka import Consumer, TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic as CNewTopic
except ImportError as e:  # pragma: no cover
    print("SKIPPED: confluent-kafka not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)
try:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka import codec as kcodec
except ImportError as e:  # pragma: no cover
    print("SKIPPED: kafka-python not importable with this interpreter: %s" % e)
    raise SystemExit(h.SKIP)

KAFKA_PYTHON_CODECS = {"none": True, "gzip": kcodec.has_gzip(), "snappy": kcodec.has_snappy(),
                       "lz4": kcodec.has_lz4(), "zstd": kcodec.has_zstd()}


def kcat(broker, args, stdin=None, timeout=60):
    cmd = [KCAT, "-b", broker.bootstrap, "-X", "reconnect.backoff.max.ms=500"] + args
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        print("kcat %s exited %d, stderr:\n%s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p


def create_topic(broker, name, configs):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fs = admin.create_topics([CNewTopic(name, 1, 1, config=configs)], operation_timeout=10)
    for _, f in fs.items():
        f.result(timeout=15)


def records(tag):
    return [("%s-key-%d" % (tag, i), "%s value %d %s" % (tag, i, "abcdefgh" * (i % 17))) for i in range(N)]


def produce_kcat(broker, check, topic, codec, recs):
    lines = "".join("%s\t%s\n" % kv for kv in recs)
    # linger so that librdkafka builds batches of many records (what compression is for).
    p = kcat(broker, ["-P", "-t", topic, "-p", "0", "-K\t", "-z", codec, "-H", "codec=" + codec,
                      "-X", "linger.ms=50", "-X", "batch.num.messages=64", "-X", "acks=all"],
             stdin=lines.encode())
    check.eq(p.returncode, 0, "kcat -P -z %s into %s" % (codec, topic))


def consume_kcat(broker, topic):
    p = kcat(broker, ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%k\t%s\t%o\n"])
    out = []
    for line in p.stdout.decode().splitlines():
        k, v, o = line.split("\t")
        out.append((k, v, int(o)))
    return out


def consume_confluent(topic, bootstrap, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cmp-" + topic, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([CTopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + 30
    while len(out) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            out.append(("ERROR", str(m.error()), -1))
            break
        out.append((m.key().decode(), m.value().decode(), m.offset()))
    c.close()
    return out


def consume_kafka_python(topic, bootstrap, n):
    c = KafkaConsumer(bootstrap_servers=bootstrap, api_version=(2, 5, 0), enable_auto_commit=False,
                      consumer_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out = []
    for m in c:
        out.append((m.key.decode(), m.value.decode(), m.offset))
        if len(out) >= n:
            break
    c.close()
    return out


def stored_codecs(broker, topic):
    """Codec of every batch in the partition's segment files."""
    return [CODECS.get(attrs & 7, "?%d" % (attrs & 7))
            for _, attrs, _ in h.segment_batches(os.path.join(broker.data_dir, topic + "-0"))]


def expect(recs):
    return [(k, v, i) for i, (k, v) in enumerate(recs)]


def main(broker, check):
    # 1. each codec into a producer topic: stored as sent.
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        topic = "cmp-producer-" + codec
        create_topic(broker, topic, {})
        recs = records(codec)
        produce_kcat(broker, check, topic, codec, recs)
        check.eq(consume_kcat(broker, topic), expect(recs), "kcat reads %s" % topic)
        check.eq(consume_confluent(topic, broker.bootstrap, N), expect(recs), "confluent-kafka reads %s" % topic)
        if KAFKA_PYTHON_CODECS[codec]:
            check.eq(consume_kafka_python(topic, broker.bootstrap, N), expect(recs), "kafka-python reads %s" % topic)
        else:
            print("kafka-python has no %s codec in this interpreter: not read with it" % codec)
        codecs = stored_codecs(broker, topic)
        print("%s: %d batches stored, codecs %s" % (topic, len(codecs), sorted(set(codecs))))
        check.true(len(codecs) > 1, "%s: several batches" % topic)
        check.eq(set(codecs), {codec}, "codecs stored in %s" % topic)

    # 2. compression.type=zstd receiving gzip: recompressed.
    topic = "cmp-topic-zstd"
    create_topic(broker, topic, {"compression.type": "zstd", "compression.zstd.level": "10"})
    recs = records("to-zstd")
    produce_kcat(broker, check, topic, "gzip", recs)
    check.eq(consume_kcat(broker, topic), expect(recs), "kcat reads %s" % topic)
    check.eq(consume_confluent(topic, broker.bootstrap, N), expect(recs), "confluent-kafka reads %s" % topic)
    codecs = stored_codecs(broker, topic)
    print("%s: %d batches stored, codecs %s" % (topic, len(codecs), sorted(set(codecs))))
    check.true(len(codecs) > 0, "%s has batches" % topic)
    check.eq(set(codecs), {"zstd"}, "codecs stored in %s (sent gzip)" % topic)

    # 3. gzip topic receiving snappy, uncompressed topic receiving lz4: kafka-python reads both.
    for topic_codec, sent in (("gzip", "snappy"), ("uncompressed", "lz4")):
        topic = "cmp-topic-" + topic_codec
        create_topic(broker, topic, {"compression.type": topic_codec})
        recs = records("%s-to-%s" % (sent, topic_codec))
        produce_kcat(broker, check, topic, sent, recs)
        check.eq(consume_kafka_python(topic, broker.bootstrap, N), expect(recs), "kafka-python reads %s" % topic)
        check.eq(consume_kcat(broker, topic), expect(recs), "kcat reads %s" % topic)
        codecs = stored_codecs(broker, topic)
        check.eq(set(codecs), {"none" if topic_codec == "uncompressed" else topic_codec},
                 "codecs stored in %s (sent %s)" % (topic, sent))

    # 4. kafka-python's gzip producer.
    topic = "cmp-kafka-python-gzip"
    create_topic(broker, topic, {})
    recs = records("kp")
    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=(2, 5, 0), compression_type="gzip",
                         linger_ms=20, acks="all")
    futs = [prod.send(topic, key=k.encode(), value=v.encode(), partition=0) for k, v in recs]
    prod.flush()
    offsets = [f.get(timeout=30).offset for f in futs]
    prod.close()
    check.eq(offsets, list(range(N)), "kafka-python gzip producer offsets")
    check.eq(consume_kcat(broker, topic), expect(recs), "kcat reads kafka-python's gzip batches")
    check.eq(set(stored_codecs(broker, topic)), {"gzip"}, "codecs stored from kafka-python")

    # 5. restart: the recompressed segment is recovered and served again; topic configs still apply.
    create_topic(broker, "cmp-max-bytes", {"max.message.bytes": "2000"})
    check.eq(produce_big(broker, "cmp-max-bytes", 5000), "MSG_SIZE_TOO_LARGE", "5000 B into max.message.bytes=2000")
    check.eq(broker.stop(), 0, "exit status of SIGTERM stop")
    broker.start()
    check.eq(consume_kcat(broker, "cmp-topic-zstd"), expect(records("to-zstd")), "kcat reads zstd topic after restart")
    produce_kcat(broker, check, "cmp-topic-zstd", "gzip", records("after-restart"))
    codecs = stored_codecs(broker, "cmp-topic-zstd")
    check.eq(set(codecs), {"zstd"}, "codecs stored in cmp-topic-zstd after a restart (sent gzip)")
    check.eq(produce_big(broker, "cmp-max-bytes", 5000), "MSG_SIZE_TOO_LARGE",
             "5000 B into max.message.bytes=2000 after a restart")
    check.eq(produce_big(broker, "cmp-max-bytes", 500), "NO_ERROR", "500 B into max.message.bytes=2000 after a restart")


def produce_big(broker, topic, size):
    """One record of `size` bytes with confluent-kafka; returns the delivery error's name or NO_ERROR."""
    from confluent_kafka import Producer
    result = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 1000000, "retries": 0,
                  "message.timeout.ms": 15000})
    p.produce(topic, value=b"x" * size, partition=0,
              on_delivery=lambda err, msg: result.append(err.name() if err else "NO_ERROR"))
    p.flush(20)
    return result[0] if result else "NO_REPORT"


if __name__ == "__main__":
    binary, _ = h.binary_from_args(__doc__)
    raise SystemExit(h.run(main, binary, {"num.partitions": "1"}))
