"""The client-matrix scenario on confluent-kafka-python (Debian python3-confluent-kafka).

Run with /usr/bin/python3:  confluent_client.py BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
Same steps and output lines as rdkafka_client.c (see README.md): REC / PRODUCED / CONSUMED / ERROR.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition, version, libversion
from confluent_kafka.admin import AdminClient, NewTopic


def fail(msg):
    print("ERROR %s" % msg, flush=True)
    sys.exit(1)


def main():
    if len(sys.argv) != 7:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    bootstrap, topic, group = sys.argv[1:4]
    records, partitions, first = (int(x) for x in sys.argv[4:7])
    print("INFO confluent-kafka-python %s librdkafka %s" % (version()[0], libversion()[0]), flush=True)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=20)[topic]
    try:
        fut.result(timeout=20)
    except Exception as e:  # KafkaException wraps the broker's error
        fail("CreateTopics %s: %s" % (topic, e))

    errors = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered[0] += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        while True:
            try:
                p.produce(topic, key="k%04d" % i, value="v%04d-confluent" % i,
                          headers=[("h-index", str(i).encode()), ("h-client", b"confluent")],
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(30)
    if left:
        fail("flush: %d records not delivered within 30 s" % left)
    if errors:
        fail("%d delivery reports failed, first: %s" % (len(errors), errors[0]))
    if delivered[0] != records:
        fail("%d of %d records delivered" % (delivered[0], records))
    print("PRODUCED %d" % records, flush=True)

    def phase(n, want):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        got = 0
        nxt = {}
        last = time.monotonic()
        while got < want and time.monotonic() - last < 30:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                fail("phase %d consume: %s" % (n, m.error()))
            hdrs = ",".join("%s=%s" % (k, (v or b"").decode()) for k, v in (m.headers() or []))
            print("REC\t%d\t%d\t%d\t%s\t%s\t%s" % (n, m.partition(), m.offset(), m.key().decode(),
                                                   m.value().decode(), hdrs), flush=True)
            nxt[m.partition()] = m.offset() + 1
            got += 1
            last = time.monotonic()
        if nxt:
            res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in sorted(nxt.items())],
                           asynchronous=False)
            for tp in res or []:
                if tp.error:
                    fail("phase %d commit partition %d: %s" % (n, tp.partition, tp.error))
        c.close()
        return got

    try:
        a = phase(1, first)
        b = phase(2, records - a)
    except Exception as e:
        fail("%s: %s" % (type(e).__name__, e))
    print("CONSUMED %d %d" % (a, b), flush=True)


if __name__ == "__main__":
    main()
