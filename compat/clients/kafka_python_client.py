"""The client-matrix scenario on kafka-python (Debian python3-kafka, 2.0.2).

Run with /usr/bin/python3:  kafka_python_client.py BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
Same steps and output lines as rdkafka_client.c (see README.md): REC / PRODUCED / CONSUMED / ERROR.
"""
import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata


def fail(msg):
    print("ERROR %s" % msg, flush=True)
    sys.exit(1)


def main():
    if len(sys.argv) != 7:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    bootstrap, topic, group = sys.argv[1:4]
    records, partitions, first = (int(x) for x in sys.argv[4:7])
    print("INFO kafka-python %s" % kafka.__version__, flush=True)
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
        resp = admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=20000)
        for t in getattr(resp, "topic_errors", []):
            if t[1] != 0:
                fail("CreateTopics %s: error %d %s" % (t[0], t[1], t[2] if len(t) > 2 else ""))
        admin.close()

        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        futs = [p.send(topic, key=b"k%04d" % i, value=b"v%04d-kafkapython" % i,
                       headers=[("h-index", str(i).encode()), ("h-client", b"kafkapython")])
                for i in range(records)]
        p.flush(timeout=30)
        for f in futs:
            f.get(timeout=1)  # raises the delivery error, if any
        p.close()
        print("PRODUCED %d" % records, flush=True)

        def phase(n, want):
            c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                              auto_offset_reset="earliest", enable_auto_commit=False)
            c.subscribe([topic])
            got = 0
            nxt = {}
            last = time.monotonic()
            while got < want and time.monotonic() - last < 30:
                # max_records=1: stop at exactly `want` without reading past it.
                for tp, msgs in c.poll(timeout_ms=200, max_records=1).items():
                    for m in msgs:
                        hdrs = ",".join("%s=%s" % (k, (v or b"").decode()) for k, v in m.headers)
                        print("REC\t%d\t%d\t%d\t%s\t%s\t%s" % (n, m.partition, m.offset, m.key.decode(),
                                                               m.value.decode(), hdrs), flush=True)
                        nxt[m.partition] = m.offset + 1
                        got += 1
                        last = time.monotonic()
            if nxt:
                c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, None) for p, o in nxt.items()})
            c.close()
            return got

        a = phase(1, first)
        b = phase(2, records - a)
    except SystemExit:
        raise
    except Exception as e:
        fail("%s: %s" % (type(e).__name__, e))
    print("CONSUMED %d %d" % (a, b), flush=True)


if __name__ == "__main__":
    main()
