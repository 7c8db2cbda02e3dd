"""Security driver for confluent-kafka-python (librdkafka), used by tests/integration/security/security_test.py.

    python confluent_security.py SPEC.json

SPEC.json: {"cases": [case, ...]}; every case is run in order and answered by one JSON line on stdout:

  {"kind": "scram_users", "name": N, "conf": {...}, "users": [[user, mechanism, password, iterations], ...]}
      AlterUserScramCredentials (upsertions) through an AdminClient; answers {"ok", "results": {user: error|null}}
  {"kind": "describe_scram", "name": N, "conf": {...}, "users": [user, ...]}
      DescribeUserScramCredentials; answers {"results": {user: [[mechanism, iterations], ...] | {"error": [...]}}}
  {"kind": "create_topics", "name": N, "conf": {...}, "topics": [name, ...]}
      CreateTopics (1 partition, RF 1); TOPIC_ALREADY_EXISTS counts as done
  {"kind": "roundtrip", "name": N, "conf": {...}, "topic": T, "records": R, "timeout": S}
      produces R records (value "<name>-<i>", acks=all) to partition 0, then reads partition 0 from the beginning
      by assignment; answers {"ok", "produced", "consumed": [values], "errors": [[code name, text], ...]}
  {"kind": "connect", "name": N, "conf": {...}, "timeout": S}
      AdminClient metadata (list_topics); answers {"ok": metadata came, "brokers", "errors": [...]} where errors
      are what librdkafka's error callback reported (e.g. ["_AUTHENTICATION", "SASL authentication error: ..."])
  {"kind": "reauth", ... as roundtrip plus "interval": S}: one record every S seconds for "timeout" seconds
      through one producer (the broker's connections.max.reauth.ms makes it re-authenticate meanwhile)

"conf" is librdkafka configuration (bootstrap.servers, security.protocol, sasl.*, ssl.*). Every wait is bounded.
"""
import json
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def err_pair(e):
    if isinstance(e, KafkaError):
        return [e.name(), e.str()]
    return [type(e).__name__, str(e)]


def with_errors(conf, errors):
    c = dict(conf)
    c["error_cb"] = lambda e: errors.append(err_pair(e))
    return c


def scram_users(case):
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    errors = []
    admin = AdminClient(with_errors(case["conf"], errors))
    ups = [UserScramCredentialUpsertion(u, ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")), it),
                                        pw.encode())
           for u, m, pw, it in case["users"]]
    results = {}
    for user, fut in admin.alter_user_scram_credentials(ups, request_timeout=20).items():
        try:
            fut.result(30)
            results[user] = None
        except Exception as e:  # noqa: BLE001 - reported to the test
            results[user] = err_pair(e.args[0] if e.args and isinstance(e.args[0], KafkaError) else e)
    return {"ok": all(v is None for v in results.values()), "results": results, "errors": errors}


def describe_scram(case):
    """DescribeUserScramCredentials of case["users"]: {user: [[mechanism, iterations], ...] or [error name, text]}."""
    errors = []
    admin = AdminClient(with_errors(case["conf"], errors))
    results = {}
    for user, fut in admin.describe_user_scram_credentials(case["users"], request_timeout=20).items():
        try:
            d = fut.result(30)
            results[user] = sorted([i.mechanism.name.replace("_", "-"), i.iterations] for i in d.scram_credential_infos)
        except Exception as e:  # noqa: BLE001 - reported to the test
            results[user] = {"error": err_pair(e.args[0] if e.args and isinstance(e.args[0], KafkaError) else e)}
    return {"ok": True, "results": results, "errors": errors}


def create_topics(case):
    errors = []
    admin = AdminClient(with_errors(case["conf"], errors))
    results = {}
    for t, fut in admin.create_topics([NewTopic(t, 1, 1) for t in case["topics"]], request_timeout=20).items():
        try:
            fut.result(30)
            results[t] = None
        except KafkaException as e:
            ke = e.args[0]
            results[t] = None if ke.code() == KafkaError.TOPIC_ALREADY_EXISTS else err_pair(ke)
    return {"ok": all(v is None for v in results.values()), "results": results, "errors": errors}


def produce(case, producer, errors, values, dr_errors):
    def dr(err, msg):
        if err is not None:
            dr_errors.append(err_pair(err))
    for v in values:
        producer.produce(case["topic"], value=v.encode(), partition=0, on_delivery=dr)
        producer.poll(0)


def consume(case, errors, want, deadline):
    conf = with_errors(case["conf"], errors)
    conf.update({"group.id": "sec-" + case["name"], "enable.auto.commit": False, "auto.offset.reset": "earliest",
                 "enable.partition.eof": False})
    c = Consumer(conf)
    got = []
    try:
        c.assign([TopicPartition(case["topic"], 0, confluent_kafka.OFFSET_BEGINNING)])
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                errors.append(err_pair(m.error()))
                continue
            got.append(m.value().decode("utf-8", "replace"))
    finally:
        c.close()
    return got


def roundtrip(case):
    timeout = case.get("timeout", 30)
    deadline = time.monotonic() + timeout
    errors, dr_errors = [], []
    conf = with_errors(case["conf"], errors)
    conf.update({"acks": "all", "linger.ms": 5, "message.timeout.ms": int(timeout * 1000 * 0.6)})
    p = Producer(conf)
    values = ["%s-%d" % (case["name"], i) for i in range(case["records"])]
    produce(case, p, errors, values, dr_errors)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    produced = len(values) - left - len(dr_errors)
    got = consume(case, errors, len(values), deadline) if produced == len(values) else []
    return {"ok": got == values, "produced": produced, "consumed": got, "errors": (dr_errors + errors)[:10]}


def reauth(case):
    timeout, interval = case.get("timeout", 8), case.get("interval", 0.5)
    errors, dr_errors = [], []
    conf = with_errors(case["conf"], errors)
    conf.update({"acks": "all", "linger.ms": 0, "message.timeout.ms": 10000})
    p = Producer(conf)
    values, acked = [], []
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < timeout:
        v = "%s-%d" % (case["name"], i)
        values.append(v)
        p.produce(case["topic"], value=v.encode(), partition=0,
                  on_delivery=lambda err, msg: (dr_errors if err else acked).append(
                      err_pair(err) if err else msg.value().decode()))
        p.flush(interval * 4)
        i += 1
        time.sleep(interval)
    p.flush(10)
    got = consume(case, errors, len(values), time.monotonic() + 15)
    return {"ok": got == values and acked == values, "produced": len(acked), "consumed": got,
            "errors": (dr_errors + errors)[:10], "seconds": round(time.monotonic() - start, 1)}


def connect(case):
    errors = []
    admin = AdminClient(with_errors(case["conf"], errors))
    timeout = case.get("timeout", 8)
    deadline = time.monotonic() + timeout
    md, exc = None, None
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=min(0.5, max(0.1, deadline - time.monotonic())))
            break
        except KafkaException as e:
            exc = err_pair(e.args[0])
        admin.poll(0)  # serves the error callback
        if errors and case.get("expect_failure"):
            break  # the error callback has said why; no need to wait out the timeout
    admin.poll(0.1)
    return {"ok": md is not None, "brokers": sorted(md.brokers) if md else [], "errors": errors[:10],
            "exception": exc if md is None else None}


KINDS = {"scram_users": scram_users, "describe_scram": describe_scram, "create_topics": create_topics, "roundtrip": roundtrip, "connect": connect,
         "reauth": reauth}


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out({"info": "confluent-kafka %s librdkafka %s" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0])})
    for case in spec["cases"]:
        t0 = time.monotonic()
        try:
            r = KINDS[case["kind"]](case)
        except Exception as e:  # noqa: BLE001 - a crash of one case is that case's result
            r = {"ok": False, "exception": err_pair(e.args[0] if e.args and isinstance(e.args[0], KafkaError) else e)}
        r["name"] = case["name"]
        r["ms"] = int((time.monotonic() - t0) * 1000)
        out(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
