#!/usr/bin/env python3
"""The HTTP admin API (issue #18, acceptance 2 and the "no state behind" half of 4) against real clients: kcat
(librdkafka 2.0.2) and confluent-kafka 2.16 (librdkafka 2.x, from the compat cache's venv). Every check compares
an HTTP answer with what a Kafka client reads from the same broker in the same run.

  a  topics made by POST /v1/topics and by the AdminClient (auto-creation off: kcat cannot make one), keyed
     records produced by kcat (partitioner murmur2_random): GET /v1/topics/{t} partition count, leader,
     replicas, ISR as Metadata says, per-partition high_watermark = Consumer.get_watermark_offsets; PATCH
     configs then GET (and DescribeConfigs) show the new value; POST partitions raises the count (list_topics
     agrees); DELETE removes the topic (list_topics agrees)
  b  GET .../partitions/{p}/records?offset=0&limit=N = kcat -C -o 0 -c N (offsets, keys, values); ?timestamp=
     starts at the offset ListOffsets(for_timestamp) gives; binary values come back base64 and decode to the
     bytes produced; POST /v1/topics/{t}/records with keys lands on the partitions librdkafka's murmur2_random
     picks for the same keys (kcat to a twin topic), and kcat reads the records with their headers
  c  groups of confluent-kafka consumers (one live with two members, one closed): GET /v1/groups = ListGroups
     (states); GET /v1/groups/{g}: members and assignments = each consumer's memberid()/assignment(),
     committed offsets = list_consumer_group_offsets, lag = ListOffsets latest - committed (and /metrics
     kafka_consumergroup_lag); POST .../offsets to earliest: 409 NON_EMPTY_GROUP on the live group, on the
     closed one the log start offsets (one moved by DeleteRecords); to timestamp and to offset (clamped to the
     log start); DELETE: 204 on the empty group (then 404), 409 on the live one
  d  errors: unknown topic 404 UNKNOWN_TOPIC_OR_PARTITION, duplicate create 409 TOPIC_ALREADY_EXISTS, bad bodies
     400, wrong methods 405 with an Allow header (RFC 9110 15.5.6)
  e  POST /v1/reset after topics, groups with committed offsets, an idempotent producer and a committed
     transaction: no topic (HTTP and Metadata), no group (ListGroups), no committed offsets of the old groups,
     no partition directory in the log dir, no fault rule; a topic made again under an old name is empty, with a
     new id and default configs; the same transactional.id initialises and commits again; a produce/consume
     round trip works. With sluice.test.faults.enable off, POST /v1/reset is 403 and deletes nothing.

Each check prints `PASS|FAIL|SKIP <check>: <detail>`. About 15 s once the venv exists.
Usage: admin_api_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
Exit 0 pass, 1 fail, 77 skipped (no binary, no kcat, or no venv).
"""
import argparse
import base64
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402
from sluice_harness import wait_until  # noqa: E402

BROKER_ID = 0  # sluice_harness writes broker.id=0
TIMEOUT = 15   # seconds for one client call


class Report:
    """Prints each check as `PASS|FAIL|SKIP <check>: <detail>` and keeps the tally."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, ok, detail=""):
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return bool(ok)

    def eq(self, name, actual, expected, detail=""):
        ok = actual == expected
        text = ("%s" % short(actual)) if ok else ("expected %s, got %s" % (short(expected), short(actual)))
        return self.check(name, ok, text + ((" (%s)" % detail) if detail else ""))

    def skip(self, name, why):
        print("SKIP %s: %s" % (name, why), flush=True)
        self.skipped += 1


def short(v, limit=300):
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "...(%d chars)" % len(r)


def http(port, method, path, body=None, timeout=30, with_headers=False):
    """(status, parsed JSON or text[, response headers]) of one request to the broker's HTTP side."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text, headers = r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        status, text, headers = e.code, e.read().decode(), e.headers
    try:
        out = json.loads(text) if text.strip() else None
    except ValueError:
        out = text
    return (status, out, headers) if with_headers else (status, out)


def kcat(args, stdin=None, timeout=30):
    """Runs kcat; returns (rc, stdout bytes, stderr text)."""
    r = subprocess.run(["kcat"] + args, input=stdin, capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


# confluent-kafka's ConsumerGroupState names -> Kafka's group state names (ListGroups, DescribeGroups).
KAFKA_STATE = {"STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead", "PREPARING_REBALANCING": "PreparingRebalance",
               "COMPLETING_REBALANCING": "CompletingRebalance", "UNKNOWN": "Unknown"}


class Ctx:
    def __init__(self, broker, http_port, report):
        from confluent_kafka.admin import AdminClient
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self.port = http_port
        self.r = report
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def http(self, method, path, body=None):
        return http(self.port, method, path, body)

    def list_topics(self):
        return self.admin.list_topics(timeout=TIMEOUT).topics

    def list_offsets(self, spec_by_tp):
        """{TopicPartition: OffsetSpec} -> {(topic, partition): offset} through AdminClient.list_offsets."""
        futures = self.admin.list_offsets(spec_by_tp, request_timeout=TIMEOUT)
        return {(tp.topic, tp.partition): f.result(timeout=TIMEOUT).offset for tp, f in futures.items()}

    def committed(self, group):
        """{(topic, partition): offset} through AdminClient.list_consumer_group_offsets (all committed ones)."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        fut = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                     request_timeout=TIMEOUT)[group]
        res = fut.result(timeout=TIMEOUT)
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}

    def list_groups(self):
        """{group_id: Kafka state name} through AdminClient.list_consumer_groups (ListGroups)."""
        res = self.admin.list_consumer_groups(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
        return {g.group_id: KAFKA_STATE.get(g.state.name, g.state.name) for g in res.valid}

    def create_admin_topic(self, name, partitions):
        from confluent_kafka.admin import NewTopic
        for f in self.admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=TIMEOUT).values():
            f.result(timeout=TIMEOUT)


def consumer(ctx, group, extra=None):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": ctx.bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    conf.update(extra or {})
    return Consumer(conf)


def producer(ctx, extra=None):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": ctx.bootstrap, "linger.ms": 5, "acks": "all"}
    conf.update(extra or {})
    return Producer(conf)


def produce_all(p, records):
    """records: list of dict(topic=..., key=..., value=..., timestamp=..., headers=...); returns delivery errors."""
    errors = []
    for rec in records:
        p.produce(on_delivery=lambda err, msg: errors.append(err) if err else None, **rec)
        p.poll(0)
    left = p.flush(TIMEOUT)
    if left:
        errors.append("%d records not delivered within %d s" % (left, TIMEOUT))
    return errors


def consume_n(consumers, n, timeout):
    """Polls the consumers in turn until n records came in all or `timeout` s passed; returns [msgs per consumer]."""
    got = [[] for _ in consumers]
    deadline = time.monotonic() + timeout
    while sum(len(g) for g in got) < n and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            if sum(len(g) for g in got) >= n:
                break
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got[i].append(m)
    return got


def partition_dirs(data_dir):
    """Partition directories under a log dir: <topic>-<n>, and Kafka's -delete / -future / -stray forms."""
    out = []
    for name in sorted(os.listdir(data_dir)):
        if os.path.isdir(os.path.join(data_dir, name)) and (re.match(r"^.+-\d+$", name) or
                                                             re.search(r"-(delete|future|stray)$", name)):
            out.append(name)
    return out


# ---------------------------------------------------------------------------------------------------------------
# a: topics

def section_a(ctx):
    r = ctx.r
    t_http, t_admin = "adm-http", "adm-client"
    # Auto-creation is off: kcat cannot make a topic, so the topics below are those the two admin paths made.
    rc, _, err = kcat(["-P", "-b", ctx.bootstrap, "-t", "adm-absent", "-X", "message.timeout.ms=3000"],
                      stdin=b"x\n", timeout=30)
    st, body = ctx.http("GET", "/v1/topics/adm-absent")
    r.check("a.auto_create_off", st == 404 and "adm-absent" not in ctx.list_topics(),
            "kcat -P to a missing topic: rc %d; GET /v1/topics/adm-absent %d; not in Metadata" % (rc, st))

    st, body = ctx.http("POST", "/v1/topics", {"name": t_http, "partitions": 3, "replication_factor": 1})
    r.check("a.create.http", st == 201 and body.get("partitions") == 3 and body.get("name") == t_http,
            "POST /v1/topics -> %d %s" % (st, short(body)))
    ctx.create_admin_topic(t_admin, 4)
    r.check("a.create.adminclient", t_admin in ctx.list_topics(), "AdminClient create_topics(%s, 4)" % t_admin)

    # Keyed records by kcat, Java-compatible partitioner.
    produced = {}
    for t, n in ((t_http, 60), (t_admin, 80)):
        lines = "".join("key-%d:value-%d\n" % (i, i) for i in range(n)).encode()
        rc, _, err = kcat(["-P", "-b", ctx.bootstrap, "-t", t, "-K:", "-X", "partitioner=murmur2_random"], stdin=lines)
        produced[t] = n
        r.check("a.kcat_produce[%s]" % t, rc == 0 and "ERROR" not in err, "kcat -P of %d keyed records: rc %d %s"
                % (n, rc, err.strip()[:200]))

    from confluent_kafka import TopicPartition
    # A consumer with a group.id keeps asking for its coordinator: it is closed before section e's reset.
    watermarks = consumer(ctx, "adm-watermark-reader")
    for t, count in ((t_http, 3), (t_admin, 4)):
        st, d = ctx.http("GET", "/v1/topics/%s" % t)
        if not r.check("a.describe.status[%s]" % t, st == 200, "GET /v1/topics/%s -> %d" % (t, st)):
            continue
        meta = ctx.list_topics()[t]
        r.eq("a.describe.partition_count[%s]" % t, (d["partition_count"], len(d["partitions"])),
             (len(meta.partitions), len(meta.partitions)), "Metadata has %d" % len(meta.partitions))
        r.eq("a.describe.partition_count_created[%s]" % t, d["partition_count"], count)
        http_layout = {p["partition"]: (p["leader"], p["replicas"], p["isr"]) for p in d["partitions"]}
        meta_layout = {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in meta.partitions.values()}
        r.eq("a.describe.leader_replicas_isr[%s]" % t, http_layout, meta_layout, "vs AdminClient list_topics")
        r.check("a.describe.leader_is_broker[%s]" % t,
                all(v == (BROKER_ID, [BROKER_ID], [BROKER_ID]) for v in http_layout.values()),
                "leader/replicas/isr %s" % short(http_layout))
        hws = {p["partition"]: p["high_watermark"] for p in d["partitions"]}
        wm = {}
        for p in sorted(meta.partitions):
            lo, hi = watermarks.get_watermark_offsets(TopicPartition(t, p), timeout=TIMEOUT, cached=False)
            wm[p] = hi
        r.eq("a.describe.high_watermark[%s]" % t, hws, wm, "vs Consumer.get_watermark_offsets")
        r.eq("a.describe.high_watermark_sum[%s]" % t, sum(hws.values()), produced[t], "records kcat produced")
        r.check("a.describe.size_bytes[%s]" % t,
                d["size_bytes"] > 0 and d["size_bytes"] == sum(p["size_bytes"] for p in d["partitions"]),
                "size_bytes %s = sum of the partitions'" % d.get("size_bytes"))
    watermarks.close()

    # Configs: PATCH then GET, and DescribeConfigs through the AdminClient.
    from confluent_kafka.admin import ConfigResource, ResourceType
    for t in (t_http, t_admin):
        st, body = ctx.http("PATCH", "/v1/topics/%s/configs" % t,
                            {"set": {"retention.ms": "7200000", "max.message.bytes": "500000"}})
        r.check("a.configs.patch[%s]" % t, st == 200, "PATCH -> %d" % st)
        st, body = ctx.http("GET", "/v1/topics/%s/configs" % t)
        got = {k: (body["configs"][k]["value"], body["configs"][k]["source"]) for k in ("retention.ms", "max.message.bytes")} \
            if st == 200 else st
        r.eq("a.configs.get[%s]" % t, got, {"retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG"),
                                            "max.message.bytes": ("500000", "DYNAMIC_TOPIC_CONFIG")})
        res = ConfigResource(ResourceType.TOPIC, t)
        entries = ctx.admin.describe_configs([res], request_timeout=TIMEOUT)[res].result(timeout=TIMEOUT)
        r.eq("a.configs.describeconfigs[%s]" % t,
             {k: entries[k].value for k in ("retention.ms", "max.message.bytes")},
             {"retention.ms": "7200000", "max.message.bytes": "500000"}, "AdminClient describe_configs")
        # Everything else DescribeConfigs reports, HTTP reports with the same value.
        if st == 200:
            diff = {k: (body["configs"].get(k, {}).get("value"), e.value) for k, e in entries.items()
                    if body["configs"].get(k, {}).get("value") != e.value}
            r.eq("a.configs.all_values_agree[%s]" % t, diff, {}, "%d configs compared" % len(entries))
    st, body = ctx.http("PATCH", "/v1/topics/%s/configs" % t_http, {"delete": ["max.message.bytes"]})
    entries = ctx.admin.describe_configs([ConfigResource(ResourceType.TOPIC, t_http)],
                                         request_timeout=TIMEOUT)[ConfigResource(ResourceType.TOPIC, t_http)]
    entries = entries.result(timeout=TIMEOUT)
    http_v = body["configs"]["max.message.bytes"] if st == 200 else st
    r.check("a.configs.delete", st == 200 and http_v["source"] != "DYNAMIC_TOPIC_CONFIG" and
            http_v["value"] == entries["max.message.bytes"].value and entries["max.message.bytes"].value != "500000",
            "PATCH delete max.message.bytes: HTTP %s, DescribeConfigs %s" % (short(http_v),
                                                                            entries["max.message.bytes"].value))

    # Partitions: 4 -> 6 on the AdminClient's topic, 3 -> 5 on the HTTP one.
    for t, new in ((t_admin, 6), (t_http, 5)):
        st, body = ctx.http("POST", "/v1/topics/%s/partitions" % t, {"count": new})
        r.check("a.partitions.post[%s]" % t, st == 200 and body.get("partitions") == new, "-> %d %s" % (st, short(body)))
        meta_n = len(ctx.list_topics()[t].partitions)
        st, d = ctx.http("GET", "/v1/topics/%s" % t)
        r.eq("a.partitions.count[%s]" % t, (meta_n, d.get("partition_count") if st == 200 else st), (new, new),
             "AdminClient list_topics, GET /v1/topics/{t}")

    # DELETE removes the AdminClient's topic.
    st, _ = ctx.http("DELETE", "/v1/topics/%s" % t_admin)
    r.eq("a.delete.status", st, 204)
    gone = wait_until(lambda: t_admin not in ctx.list_topics(), 5)
    st2, body2 = ctx.http("GET", "/v1/topics/%s" % t_admin)
    _, listing = ctx.http("GET", "/v1/topics")
    r.check("a.delete.gone", gone and st2 == 404 and t_admin not in [x["name"] for x in listing["topics"]],
            "list_topics has it: %s; GET -> %d %s; in GET /v1/topics: %s"
            % (not gone, st2, short(body2), t_admin in [x["name"] for x in listing["topics"]]))
    return t_http


# ---------------------------------------------------------------------------------------------------------------
# b: records

def kcat_read(ctx, topic, partition, offset, count, fmt="%o %k %s\\n"):
    """kcat -C of one partition (all of them when `partition` is None) from `offset`, up to `count` records."""
    args = ["-C", "-b", ctx.bootstrap, "-t", topic, "-o", str(offset), "-e", "-q", "-f", fmt]
    if partition is not None:
        args[5:5] = ["-p", str(partition)]
    if count is not None:
        args[-4:-4] = ["-c", str(count)]
    rc, out, err = kcat(args)
    return rc, out.decode("utf-8", "replace").splitlines(), err


def section_b(ctx, t_http):
    r = ctx.r
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    # Reads of the kcat-produced topic, partition by partition, against kcat -C.
    st, d = ctx.http("GET", "/v1/topics/%s" % t_http)
    for p in d["partitions"]:
        hw = p["high_watermark"]
        for n in sorted({max(1, hw - 1), hw + 5}):
            st, body = ctx.http("GET", "/v1/topics/%s/partitions/%d/records?offset=0&limit=%d" % (t_http, p["partition"], n))
            mine = ["%d %s %s" % (x["offset"], x["key"], x["value"]) for x in body["records"]] if st == 200 else st
            rc, theirs, err = kcat_read(ctx, t_http, p["partition"], 0, n)
            r.check("b.read_vs_kcat[%s/%d,limit=%d]" % (t_http, p["partition"], n),
                    mine == theirs and rc == 0 and len(theirs) == min(n, hw),
                    "%d records (hw %d); HTTP %s, kcat %s" % (len(theirs), hw, short(mine, 120), short(theirs, 120)))
    # From the middle.
    p0 = max(d["partitions"], key=lambda p: p["high_watermark"])
    mid = p0["high_watermark"] // 2
    st, body = ctx.http("GET", "/v1/topics/%s/partitions/%d/records?offset=%d&limit=3" % (t_http, p0["partition"], mid))
    mine = ["%d %s %s" % (x["offset"], x["key"], x["value"]) for x in body["records"]]
    rc, theirs, err = kcat_read(ctx, t_http, p0["partition"], mid, 3)
    r.check("b.read_from_middle", mine == theirs and len(mine) == 3, "offset %d: HTTP %s, kcat %s" % (mid, mine, theirs))

    # Timestamps: records with known CreateTime, one partition.
    t_ts = "adm-ts"
    st, _ = ctx.http("POST", "/v1/topics", {"name": t_ts, "partitions": 1})
    base = int(time.time() * 1000) - 600000
    stamps = [base + 1000 * i for i in range(10)] + [base + 9000] * 2 + [base + 20000]  # a repeat, then a gap
    p = producer(ctx)
    errs = produce_all(p, [dict(topic=t_ts, key=b"k%d" % i, value=b"v%d" % i, timestamp=ts) for i, ts in enumerate(stamps)])
    r.check("b.timestamp.produce", not errs and st == 201, "create %d, delivery errors %s" % (st, errs))
    queries = [base - 5000, base, base + 500, base + 4000, base + 9000, base + 9500, base + 20000, base + 99999]
    specs = {}
    for q in queries:
        specs[q] = ctx.list_offsets({TopicPartition(t_ts, 0): OffsetSpec.for_timestamp(q)})[(t_ts, 0)]
    for q in queries:
        st, body = ctx.http("GET", "/v1/topics/%s/partitions/0/records?timestamp=%d&limit=1" % (t_ts, q))
        want = specs[q]
        if want >= 0:
            got = (body["records"][0]["offset"], body["records"][0]["timestamp"]) if st == 200 and body["records"] else (st, body)
            r.eq("b.timestamp_query[%+d ms]" % (q - base), got, (want, stamps[want]),
                 "ListOffsets(for_timestamp) gives offset %d" % want)
        else:
            got = (st, body["records"], body["next_offset"]) if st == 200 else (st, body)
            r.eq("b.timestamp_query[%+d ms]" % (q - base), got, (200, [], len(stamps)),
                 "ListOffsets(for_timestamp) gives -1: nothing to read, next_offset = the end")

    # Binary values: a file produced whole by kcat, and bytes from confluent-kafka.
    t_bin = "adm-bin"
    ctx.http("POST", "/v1/topics", {"name": t_bin, "partitions": 1})
    blobs = [bytes(range(256)), b"\xff\xfe\xfd\x00\x80 not utf-8 \xc3\x28", b"\n\x00\xc0\xaf\n"]  # none is UTF-8
    for i, blob in enumerate(blobs[:2]):
        path = os.path.join(ctx.broker.dir, "blob%d.bin" % i)
        with open(path, "wb") as f:
            f.write(blob)
        rc, _, err = kcat(["-P", "-b", ctx.bootstrap, "-t", t_bin, "-p", "0", "-k", "bin-%d" % i, path])
        r.check("b.binary.kcat_produce[%d]" % i, rc == 0, "kcat -P of a %d-byte file: rc %d %s" % (len(blob), rc, err.strip()[:100]))
    errs = produce_all(producer(ctx), [dict(topic=t_bin, partition=0, key=b"\x01\x02\xff", value=blobs[2])])
    r.check("b.binary.confluent_produce", not errs, "errors %s" % errs)
    st, body = ctx.http("GET", "/v1/topics/%s/partitions/0/records?offset=0&limit=10" % t_bin)
    recs = body["records"] if st == 200 else []
    r.eq("b.binary.count", len(recs), 3)
    for i, (rec, blob) in enumerate(zip(recs, blobs)):
        dec = base64.b64decode(rec["value"]) if rec.get("value_encoding") == "base64" else None
        r.check("b.binary.value_base64[%d]" % i, rec.get("value_encoding") == "base64" and dec == blob,
                "value_encoding %s, %d bytes decoded, equal: %s" % (rec.get("value_encoding"), len(dec or b""), dec == blob))
    if len(recs) == 3:
        kd = base64.b64decode(recs[2]["key"]) if recs[2].get("key_encoding") == "base64" else None
        r.check("b.binary.key_base64", kd == b"\x01\x02\xff", "key %s (%s)" % (recs[2]["key"], recs[2].get("key_encoding")))
    st, body = ctx.http("GET", "/v1/topics/%s/partitions/0/records?offset=1&limit=1&encoding=hex" % t_bin)
    r.eq("b.binary.hex", body["records"][0]["value"] if st == 200 else st, blobs[1].hex())

    # POST records with keys: the partitions must be murmur2_random's (kcat produces the same keys to a twin).
    t_post, t_twin = "adm-post", "adm-post-kcat"
    for t in (t_post, t_twin):
        st, _ = ctx.http("POST", "/v1/topics", {"name": t, "partitions": 7})
    keys = ["user-%d" % i for i in range(40)] + ["ключ-%d" % i for i in range(5)] + ["", "k"]
    posted = [{"key": k, "value": "val-%d" % i, "headers": {"h-index": str(i), "source": "http"}}
              for i, k in enumerate(keys)]
    st, resp = ctx.http("POST", "/v1/topics/%s/records" % t_post, {"records": posted})
    ok = r.check("b.post.status", st == 200 and len(resp["offsets"]) == len(keys), "POST %d records -> %d" % (len(keys), st))
    http_part = {k: o["partition"] for k, o in zip(keys, resp["offsets"])} if ok else {}
    lines = "".join("%s\t%s\n" % (k, "twin-%d" % i) for i, k in enumerate(keys)).encode()
    rc, _, err = kcat(["-P", "-b", ctx.bootstrap, "-t", t_twin, "-K\t", "-X", "partitioner=murmur2_random"], stdin=lines)
    kcat_part = {}
    for line in kcat_read(ctx, t_twin, None, "beginning", None, "%p %k\\n")[1]:
        p, k = line.split(" ", 1)
        kcat_part[k] = int(p)
    r.eq("b.post.partitions_vs_murmur2_random", http_part, kcat_part,
         "%d keys over 7 partitions, %d distinct partitions used" % (len(keys), len(set(kcat_part.values()))))
    # kcat reads the posted records back at the offsets the POST answered, with their headers.
    want = {}
    for i, (k, o) in enumerate(zip(keys, resp["offsets"] if ok else [])):
        want.setdefault(o["partition"], []).append("%d|%s|val-%d|h-index=%d,source=http" % (o["offset"], k, i, i))
    got = {}
    for line in kcat_read(ctx, t_post, None, "beginning", None, "%p|%o|%k|%s|%h\\n")[1]:
        p, rest = line.split("|", 1)
        got.setdefault(int(p), []).append(rest)
    r.eq("b.post.read_by_kcat_with_headers", got, want, "%d records" % sum(len(v) for v in got.values()))
    # An explicit partition in the path, and a base64 body.
    st, resp = ctx.http("POST", "/v1/topics/%s/partitions/3/records" % t_post,
                        {"value_encoding": "base64", "records": [{"key": "x", "value": base64.b64encode(blobs[1]).decode()}]})
    off = resp["offsets"][0]["offset"] if st == 200 else None
    rc, out, _ = kcat(["-C", "-b", ctx.bootstrap, "-t", t_post, "-p", "3", "-o", str(off or 0), "-c", "1", "-e", "-q",
                       "-f", "%s"])
    r.check("b.post.partition_path_base64", st == 200 and resp["offsets"][0]["partition"] == 3 and out == blobs[1],
            "-> %d, partition %s offset %s, kcat reads %d bytes equal: %s"
            % (st, resp["offsets"][0].get("partition") if st == 200 else None, off, len(out), out == blobs[1]))


# ---------------------------------------------------------------------------------------------------------------
# c: groups

def section_c(ctx):
    r = ctx.r
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    topic, live, closed = "adm-grp", "adm-live", "adm-closed"
    st, _ = ctx.http("POST", "/v1/topics", {"name": topic, "partitions": 4})
    r.eq("c.create_topic", st, 201)

    # The live group: two members, settled while the topic is still empty.
    c1 = consumer(ctx, live, {"client.id": "live-1"})
    c1.subscribe([topic])
    wait_until(lambda: c1.poll(0.1) is None and len(c1.assignment()) == 4, 20, 0)
    c2 = consumer(ctx, live, {"client.id": "live-2"})
    c2.subscribe([topic])

    def settled():
        c1.poll(0.1)
        c2.poll(0.1)
        a1, a2 = {(t.topic, t.partition) for t in c1.assignment()}, {(t.topic, t.partition) for t in c2.assignment()}
        return a1 and a2 and not (a1 & a2) and len(a1 | a2) == 4
    ok = wait_until(settled, 30, 0)
    r.check("c.live_group_settled", ok, "assignments %s / %s" % (
        sorted(t.partition for t in c1.assignment()), sorted(t.partition for t in c2.assignment())))

    # 100 records with known timestamps, keyed over the 4 partitions.
    base = int(time.time() * 1000) - 300000
    errs = produce_all(producer(ctx, {"partitioner": "murmur2_random"}),
                       [dict(topic=topic, key=b"g%d" % i, value=b"gv%d" % i, timestamp=base + 100 * i) for i in range(100)])
    r.check("c.produce", not errs, "100 records, errors %s" % errs)

    got = consume_n([c1, c2], 40, 20)
    for c, msgs in zip((c1, c2), got):
        if msgs:
            c.commit(asynchronous=False)
    r.check("c.live_consumed", sum(len(g) for g in got) == 40, "live-1 %d, live-2 %d records" % tuple(len(g) for g in got))

    c3 = consumer(ctx, closed, {"client.id": "closed-1"})
    c3.subscribe([topic])
    got3 = consume_n([c3], 50, 20)[0]
    c3.commit(asynchronous=False)
    closed_committed_by_client = {(t.topic, t.partition): t.offset for t in c3.committed(c3.assignment(), timeout=TIMEOUT)
                                  if t.offset >= 0}
    c3.close()
    r.check("c.closed_consumed", len(got3) == 50, "closed-1 read %d records, committed %s" % (len(got3), closed_committed_by_client))

    # GET /v1/groups vs ListGroups.
    def http_groups():
        st, body = ctx.http("GET", "/v1/groups")
        return {g["group_id"]: g["state"] for g in body["groups"]} if st == 200 else {}
    wait_until(lambda: http_groups().get(live) == "Stable" and http_groups().get(closed) == "Empty", 10)
    hg, ag = http_groups(), ctx.list_groups()
    r.check("c.list_groups", hg.get(live) == "Stable" and hg.get(closed) == "Empty" and
            {g: hg.get(g) for g in (live, closed)} == {g: ag.get(g) for g in (live, closed)},
            "HTTP %s, AdminClient list_consumer_groups %s" % (hg, ag))
    r.eq("c.list_groups_same_set", sorted(hg), sorted(ag), "every group")

    # GET /v1/groups/{live}: members, assignments, committed offsets, lag.
    parts = [TopicPartition(topic, p) for p in range(4)]
    latest = ctx.list_offsets({tp: OffsetSpec.latest() for tp in parts})
    for group, members in ((live, [c1, c2]), (closed, [])):
        st, g = ctx.http("GET", "/v1/groups/%s" % group)
        if not r.check("c.describe.status[%s]" % group, st == 200, "-> %d %s" % (st, short(g))):
            continue
        r.eq("c.describe.state[%s]" % group, g["state"], "Stable" if members else "Empty")
        http_members = {m["member_id"]: sorted((a["topic"], p) for a in m["assignment"] for p in a["partitions"])
                        for m in g["members"]}
        client_members = {c.memberid(): sorted((t.topic, t.partition) for t in c.assignment()) for c in members}
        r.eq("c.describe.members_assignments[%s]" % group, http_members, client_members,
             "member ids from Consumer.memberid(), partitions from assignment()")
        if members:
            r.eq("c.describe.client_ids[%s]" % group, sorted(m["client_id"] for m in g["members"]), ["live-1", "live-2"])
        committed = ctx.committed(group)
        http_committed = {(o["topic"], o["partition"]): o["committed_offset"] for o in g["offsets"]
                          if o["committed_offset"] is not None}
        r.eq("c.describe.committed[%s]" % group, http_committed, committed, "AdminClient list_consumer_group_offsets")
        if not members:
            r.eq("c.describe.committed_vs_consumer[%s]" % group, committed, closed_committed_by_client,
                 "what the consumer itself read back with committed()")
        want_lag = {tp: latest[tp] - off for tp, off in committed.items()}
        http_lag = {(o["topic"], o["partition"]): o["lag"] for o in g["offsets"] if o["lag"] is not None}
        r.eq("c.describe.lag[%s]" % group, http_lag, want_lag, "ListOffsets latest %s - committed" % short(latest))
        r.eq("c.describe.total_lag[%s]" % group, g["lag"], sum(want_lag.values()))
        r.eq("c.describe.log_end_offset[%s]" % group,
             {(o["topic"], o["partition"]): o["log_end_offset"] for o in g["offsets"] if o["committed_offset"] is not None},
             {tp: latest[tp] for tp in committed})
        if members:
            owners = {(o["topic"], o["partition"]): o["member_id"] for o in g["offsets"]}
            want_owner = {(t.topic, t.partition): c.memberid() for c in members for t in c.assignment()}
            r.eq("c.describe.offset_owner[%s]" % group, owners, want_owner, "member of each partition")
        # /metrics kafka_consumergroup_lag
        from prometheus_client.parser import text_string_to_metric_families
        st, text = http(ctx.port, "GET", "/metrics")
        mlag = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == "kafka_consumergroup_lag" and s.labels.get("consumergroup") == group:
                    mlag[(s.labels["topic"], int(s.labels["partition"]))] = int(s.value)
        r.eq("c.metrics.kafka_consumergroup_lag[%s]" % group, mlag, want_lag)

    # Reset offsets: refused while members are there.
    before = ctx.committed(live)
    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % live, {"to": "earliest"})
    r.eq("c.reset.live_refused", (st, body.get("error") if isinstance(body, dict) else body), (409, "NON_EMPTY_GROUP"))
    r.eq("c.reset.live_unchanged", ctx.committed(live), before)

    # The closed group: move one committed partition's log start with DeleteRecords first.
    committed = ctx.committed(closed)
    moved = None
    for tp, off in sorted(committed.items()):
        if off >= 3:
            moved = tp
            break
    if moved:
        res = ctx.admin.delete_records([TopicPartition(moved[0], moved[1], 2)], request_timeout=TIMEOUT)
        for f in res.values():
            f.result(timeout=TIMEOUT)
    earliest = ctx.list_offsets({tp: OffsetSpec.earliest() for tp in parts})
    r.check("c.reset.delete_records", moved is not None and earliest[moved] == 2,
            "log start of %s now %s" % (moved, earliest.get(moved)))
    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % closed, {"to": "earliest"})
    after = ctx.committed(closed)
    r.check("c.reset.earliest", st == 200 and after == {tp: earliest[tp] for tp in committed},
            "-> %d; list_consumer_group_offsets %s, log start offsets %s" % (st, after, {tp: earliest[tp] for tp in committed}))
    r.eq("c.reset.earliest_answer", {(o["topic"], o["partition"]): o["offset"] for o in body["offsets"]} if st == 200 else st,
         after)

    ts = base + 100 * 57 + 50  # between two records
    by_time = ctx.list_offsets({tp: OffsetSpec.for_timestamp(ts) for tp in parts})
    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % closed, {"to": "timestamp", "timestamp": ts})
    after = ctx.committed(closed)
    want = {tp: (by_time[tp] if by_time[tp] >= 0 else latest[tp]) for tp in committed}
    r.check("c.reset.timestamp", st == 200 and after == want,
            "-> %d; committed %s, ListOffsets(for_timestamp %d) %s" % (st, after, ts, by_time))

    future = base + 3600 * 1000  # after every record: ListOffsets gives -1, kafka-consumer-groups resets to the end
    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % closed, {"to": "timestamp", "timestamp": future})
    after = ctx.committed(closed)
    by_time = ctx.list_offsets({tp: OffsetSpec.for_timestamp(future) for tp in parts})
    r.check("c.reset.timestamp_after_all", st == 200 and after == {tp: latest[tp] for tp in committed} and
            all(by_time[tp] == -1 for tp in committed),
            "-> %d; committed %s; ListOffsets(for_timestamp) %s, latest %s" % (st, after, by_time, latest))

    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % closed, {"to": "offset", "offset": 1, "topics": [topic]})
    after = ctx.committed(closed)
    want = {tp: min(max(1, earliest[tp]), latest[tp]) for tp in latest}
    r.check("c.reset.offset", st == 200 and after == want,
            "-> %d; committed %s; expected max(1, log start) %s" % (st, after, want))

    st, body = ctx.http("POST", "/v1/groups/%s/offsets" % closed, {"to": "latest", "dry_run": True})
    r.check("c.reset.dry_run", st == 200 and ctx.committed(closed) == after and
            {(o["topic"], o["partition"]): o["offset"] for o in body["offsets"]} == {tp: latest[tp] for tp in after},
            "-> %d; committed unchanged, answer %s" % (st, short(body)))

    # DELETE: 409 on the live group, 204 on the empty one, then 404.
    st, body = ctx.http("DELETE", "/v1/groups/%s" % live)
    r.eq("c.delete.live_refused", (st, body.get("error") if isinstance(body, dict) else body), (409, "NON_EMPTY_GROUP"))
    st, _ = ctx.http("DELETE", "/v1/groups/%s" % closed)
    r.eq("c.delete.empty", st, 204)
    st, body = ctx.http("GET", "/v1/groups/%s" % closed)
    r.eq("c.delete.then_404", (st, body.get("error") if isinstance(body, dict) else body), (404, "GROUP_ID_NOT_FOUND"))
    ag = ctx.list_groups()
    r.check("c.delete.gone_from_listgroups", closed not in ag and ag.get(live) == "Stable", "ListGroups %s" % ag)
    r.eq("c.delete.offsets_gone", ctx.committed(closed), {})
    st, body = ctx.http("DELETE", "/v1/groups/adm-no-such-group")
    r.eq("c.delete.unknown", (st, body.get("error") if isinstance(body, dict) else body), (404, "GROUP_ID_NOT_FOUND"))
    c1.close()
    c2.close()


# ---------------------------------------------------------------------------------------------------------------
# d: errors

def section_d(ctx, t_http):
    r = ctx.r

    def expect(name, method, path, body, status, error=None):
        st, b = ctx.http(method, path, body)
        err = b.get("error") if isinstance(b, dict) else None
        ok = st == status and (error is None or err == error) and isinstance(b, dict) and "message" in b
        r.check("d.%s" % name, ok, "%s %s -> %d %s (expected %d%s)" % (method, path, st, short(b, 160), status,
                                                                        " " + error if error else ""))

    unknown = "UNKNOWN_TOPIC_OR_PARTITION"
    expect("unknown_topic.get", "GET", "/v1/topics/adm-nope", None, 404, unknown)
    expect("unknown_topic.configs", "GET", "/v1/topics/adm-nope/configs", None, 404, unknown)
    expect("unknown_topic.patch_configs", "PATCH", "/v1/topics/adm-nope/configs", {"set": {"retention.ms": "1000"}}, 404, unknown)
    expect("unknown_topic.delete", "DELETE", "/v1/topics/adm-nope", None, 404, unknown)
    expect("unknown_topic.partitions", "POST", "/v1/topics/adm-nope/partitions", {"count": 3}, 404, unknown)
    expect("unknown_topic.read", "GET", "/v1/topics/adm-nope/partitions/0/records?offset=0", None, 404, unknown)
    expect("unknown_topic.produce", "POST", "/v1/topics/adm-nope/records", {"records": [{"value": "x"}]}, 404, unknown)
    expect("unknown_partition.read", "GET", "/v1/topics/%s/partitions/99/records?offset=0" % t_http, None, 404, unknown)
    expect("unknown_partition.produce", "POST", "/v1/topics/%s/partitions/99/records" % t_http,
           {"records": [{"value": "x"}]}, 404, unknown)
    expect("duplicate_create.http_topic", "POST", "/v1/topics", {"name": t_http, "partitions": 1}, 409, "TOPIC_ALREADY_EXISTS")
    ctx.create_admin_topic("adm-client-2", 2)
    expect("duplicate_create.adminclient_topic", "POST", "/v1/topics", {"name": "adm-client-2"}, 409, "TOPIC_ALREADY_EXISTS")

    bad = [("malformed_json", "POST", "/v1/topics", b"{not json"),
           ("not_an_object", "POST", "/v1/topics", b"[1, 2]"),
           ("missing_name", "POST", "/v1/topics", {"partitions": 1}),
           ("partitions_string", "POST", "/v1/topics", {"name": "adm-bad", "partitions": "three"}),
           ("unknown_field", "POST", "/v1/topics", {"name": "adm-bad", "colour": "blue"}),
           ("configs_not_object", "POST", "/v1/topics", {"name": "adm-bad", "configs": ["retention.ms"]}),
           ("zero_partitions", "POST", "/v1/topics", {"name": "adm-bad", "partitions": 0}),
           ("bad_config_value", "POST", "/v1/topics", {"name": "adm-bad", "configs": {"retention.ms": "soon"}}),
           ("invalid_topic_name", "POST", "/v1/topics", {"name": "bad topic!"}),
           ("patch_nothing", "PATCH", "/v1/topics/%s/configs" % t_http, {}),
           ("patch_set_not_object", "PATCH", "/v1/topics/%s/configs" % t_http, {"set": "retention.ms=1"}),
           ("patch_bad_value", "PATCH", "/v1/topics/%s/configs" % t_http, {"set": {"retention.ms": "soon"}}),
           ("partitions_missing_count", "POST", "/v1/topics/%s/partitions" % t_http, {}),
           ("partitions_decrease", "POST", "/v1/topics/%s/partitions" % t_http, {"count": 1}),
           ("produce_no_records", "POST", "/v1/topics/%s/records" % t_http, {"records": []}),
           ("produce_records_not_array", "POST", "/v1/topics/%s/records" % t_http, {"records": {"value": "x"}}),
           ("produce_bad_base64", "POST", "/v1/topics/%s/records" % t_http,
            {"value_encoding": "base64", "records": [{"value": "***"}]}),
           ("produce_bad_partition", "POST", "/v1/topics/%s/records" % t_http, {"records": [{"value": "x", "partition": 42}]}),
           ("reset_offsets_bad_to", "POST", "/v1/groups/adm-any/offsets", {"to": "yesterday"}),
           ("reset_offsets_timestamp_missing", "POST", "/v1/groups/adm-any/offsets", {"to": "timestamp"})]
    for name, method, path, body in bad:
        expect("bad_body.%s" % name, method, path, body, 400)
    st, _ = ctx.http("GET", "/v1/topics/adm-bad")
    r.eq("d.bad_bodies_created_nothing", st, 404)
    for name, q in (("limit_zero", "offset=0&limit=0"), ("offset_negative", "offset=-1"), ("limit_text", "limit=ten"),
                    ("offset_and_timestamp", "offset=0&timestamp=5"), ("encoding", "encoding=rot13")):
        expect("bad_query.%s" % name, "GET", "/v1/topics/%s/partitions/0/records?%s" % (t_http, q), None, 400)

    no_allow = []
    wrong = (("put_topics", "PUT", "/v1/topics"), ("delete_topics", "DELETE", "/v1/topics"),
             ("put_topic", "PUT", "/v1/topics/%s" % t_http),
             ("post_topic", "POST", "/v1/topics/%s" % t_http),
             ("delete_configs", "DELETE", "/v1/topics/%s/configs" % t_http),
             ("delete_partitions", "DELETE", "/v1/topics/%s/partitions" % t_http),
             ("get_topic_records", "GET", "/v1/topics/%s/records" % t_http),
             ("post_groups", "POST", "/v1/groups"),
             ("get_group_offsets", "GET", "/v1/groups/adm-any/offsets"),
             ("get_reset", "GET", "/v1/reset"))
    for name, method, path in wrong:
        expect("wrong_method.%s" % name, method, path, {} if method in ("PUT", "POST") else None, 405)
        st, b, hdrs = http(ctx.port, method, path, {} if method in ("PUT", "POST") else None, with_headers=True)
        if st == 405 and not hdrs.get("Allow"):
            no_allow.append("%s %s (body names %s)" % (method, path, b.get("message") if isinstance(b, dict) else b))
    # RFC 9110 section 15.5.6: "The origin server MUST generate an Allow header field in a 405 response".
    r.check("d.wrong_method.allow_header", not no_allow,
            "%d of %d 405 answers without an Allow header: %s" % (len(no_allow), len(wrong), "; ".join(no_allow[:3])))
    expect("unknown_route", "GET", "/v1/nothing-here", None, 404)


# ---------------------------------------------------------------------------------------------------------------
# e: POST /v1/reset

def section_e(ctx, old_groups):
    r = ctx.r
    from confluent_kafka import TopicPartition
    # Fill: topics, a group with committed offsets, an idempotent producer, a committed transaction.
    ctx.http("POST", "/v1/topics", {"name": "adm-e-http", "partitions": 3})
    ctx.create_admin_topic("adm-e-client", 2)
    p = producer(ctx, {"enable.idempotence": True})
    errs = produce_all(p, [dict(topic="adm-e-http", key=b"i%d" % i, value=b"idem-%d" % i) for i in range(30)])
    r.check("e.fill.idempotent_producer", not errs, "30 records, errors %s" % errs)
    c = consumer(ctx, "adm-e-group")
    c.subscribe(["adm-e-http"])
    got = consume_n([c], 30, 20)[0]
    c.commit(asynchronous=False)
    c.close()
    tp = producer(ctx, {"transactional.id": "adm-e-txn"})
    tp.init_transactions(TIMEOUT)
    tp.begin_transaction()
    for i in range(10):
        tp.produce("adm-e-client", key=b"t%d" % i, value=b"txn-%d" % i)
    tp.commit_transaction(TIMEOUT)
    del tp, p
    gc.collect()
    committed = ctx.committed("adm-e-group")
    st, listing = ctx.http("GET", "/v1/topics")
    names = sorted(t["name"] for t in listing["topics"])
    r.check("e.fill.state", len(got) == 30 and sum(committed.values()) == 30 and "__consumer_offsets" in names and
            "__transaction_state" in names,
            "group read %d and committed %s; topics %s" % (len(got), committed, names))
    dirs_before = partition_dirs(ctx.broker.data_dir)
    st_f, _ = ctx.http("POST", "/v1/faults", {"api": "DeleteRecords", "action": "delay", "delay_ms": 1, "count": 5})
    st_old, old_http = ctx.http("GET", "/v1/topics/adm-http")
    r.check("e.fill.fault_rule_and_old_topic", st_f == 201 and st_old == 200 and
            old_http["configs"]["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG",
            "fault rule -> %d; adm-http id %s, HW %s, retention.ms %s" % (
                st_f, old_http.get("topic_id"), [p["high_watermark"] for p in old_http.get("partitions", [])],
                old_http.get("configs", {}).get("retention.ms")))

    t0 = time.monotonic()
    st, body = ctx.http("POST", "/v1/reset")
    took = time.monotonic() - t0
    r.check("e.reset.status", st == 200 and sorted(body.get("deleted_topics", [])) == names,
            "-> %d in %.0f ms, deleted %s" % (st, took * 1000, short(body)))
    # On disk first (a later FindCoordinator makes __consumer_offsets again).
    # Live partition directories must be gone at the answer; renamed "-delete" ones (never loaded again) are
    # removed by the broker's background deleter, as Kafka's delayed deletion, and must be gone soon after.
    left = partition_dirs(ctx.broker.data_dir)
    live = [d for d in left if not d.endswith("-delete")]
    r.check("e.reset.no_partition_dirs", live == [],
            "%d partition dirs before, live ones right after the answer: %s (%d renamed for deletion)" % (
                len(dirs_before), short(live), len(left) - len(live)))
    gone = wait_until(lambda: partition_dirs(ctx.broker.data_dir) == [], 5)
    r.check("e.reset.deleted_dirs_gone", gone, "renamed -delete dirs removed within 5 s: %s" %
            short(partition_dirs(ctx.broker.data_dir)))
    st, listing = ctx.http("GET", "/v1/topics")
    r.eq("e.reset.http_topics_empty", (st, listing.get("topics")), (200, []))
    r.eq("e.reset.metadata_topics_empty", sorted(ctx.list_topics()), [], "AdminClient list_topics")
    st, groups = ctx.http("GET", "/v1/groups")
    r.eq("e.reset.http_groups_empty", (st, groups.get("groups")), (200, []))
    r.eq("e.reset.listgroups_empty", ctx.list_groups(), {}, "AdminClient list_consumer_groups")
    # GET /v1/groups/{g} starts with FindCoordinator and waits until the coordinator has loaded.
    st, body = ctx.http("GET", "/v1/groups/adm-e-group")
    r.eq("e.reset.http_group_gone", (st, body.get("error") if isinstance(body, dict) else body), (404, "GROUP_ID_NOT_FOUND"))
    # A new AdminClient: the old one still has broker 0 as the group's coordinator, gets NOT_COORDINATOR (right:
    # __consumer_offsets is gone) and librdkafka's ListConsumerGroupOffsets then dereferences its NULL consumer
    # group handle (SIGSEGV in rd_kafka_cgrp_op, librdkafka issue #5040, still in 2.16).
    from confluent_kafka.admin import AdminClient
    ctx.admin = AdminClient({"bootstrap.servers": ctx.bootstrap})
    for g in ["adm-e-group"] + old_groups:
        r.eq("e.reset.committed_offsets_gone[%s]" % g, ctx.committed(g), {}, "list_consumer_group_offsets")
    st, faults = ctx.http("GET", "/v1/faults")
    r.eq("e.reset.faults_cleared", (st, faults.get("faults")), (200, []))

    # A topic made again under an old name starts empty, with a new id and no old config override.
    st, _ = ctx.http("POST", "/v1/topics", {"name": "adm-http", "partitions": 2})
    st2, d = ctx.http("GET", "/v1/topics/adm-http")
    st3, recs = ctx.http("GET", "/v1/topics/adm-http/partitions/0/records?offset=0&limit=10")
    r.check("e.after.same_name_topic_is_new",
            st == 201 and st2 == 200 and d["topic_id"] != old_http.get("topic_id") and
            [(p["log_start_offset"], p["high_watermark"], p["size_bytes"]) for p in d["partitions"]] == [(0, 0, 0)] * 2 and
            d["configs"]["retention.ms"]["source"] == "DEFAULT_CONFIG" and st3 == 200 and recs["records"] == [],
            "create %d; id %s (old %s); (log start, HW, bytes) %s; retention.ms %s; records %s" % (
                st, d.get("topic_id"), old_http.get("topic_id"),
                [(p["log_start_offset"], p["high_watermark"], p["size_bytes"]) for p in d.get("partitions", [])],
                d.get("configs", {}).get("retention.ms"), recs.get("records") if isinstance(recs, dict) else recs))

    # The same transactional.id again, on a new topic.
    st, _ = ctx.http("POST", "/v1/topics", {"name": "adm-e-after", "partitions": 2})
    try:
        tp = producer(ctx, {"transactional.id": "adm-e-txn"})
        tp.init_transactions(TIMEOUT)
        tp.begin_transaction()
        for i in range(5):
            tp.produce("adm-e-after", key=b"a%d" % i, value=b"after-%d" % i)
        tp.commit_transaction(TIMEOUT)
        txn_ok, txn_err = True, ""
    except Exception as e:  # noqa: BLE001 - the failure is the check's detail
        txn_ok, txn_err = False, repr(e)
    rc_c = consumer(ctx, "adm-e-after-reader", {"isolation.level": "read_committed"})
    rc_c.assign([TopicPartition("adm-e-after", p, 0) for p in range(2)])
    seen = sorted(m.value() for ms in consume_n([rc_c], 5, 15) for m in ms)
    rc_c.close()
    r.check("e.after.transactional_id_again", txn_ok and seen == [b"after-%d" % i for i in range(5)],
            "init_transactions + commit: %s %s; read_committed reads %s" % (txn_ok, txn_err, seen))

    # An ordinary produce / consume round trip with a group.
    st, _ = ctx.http("POST", "/v1/topics", {"name": "adm-e-roundtrip", "partitions": 3})
    errs = produce_all(producer(ctx), [dict(topic="adm-e-roundtrip", key=b"r%d" % i, value=b"rt-%d" % i) for i in range(20)])
    c = consumer(ctx, "adm-e-group")  # the old group's name: it starts from nothing
    c.subscribe(["adm-e-roundtrip"])
    got = consume_n([c], 20, 20)[0]
    c.commit(asynchronous=False)
    c.close()
    r.check("e.after.roundtrip", not errs and sorted(m.value() for m in got) == sorted(b"rt-%d" % i for i in range(20)) and
            ctx.committed("adm-e-group") == {tp: n for tp, n in ctx.list_offsets(_latest_specs("adm-e-roundtrip", 3)).items()
                                              if n > 0},
            "produced 20 (errors %s), group read %d, committed %s" % (errs, len(got), ctx.committed("adm-e-group")))


def _latest_specs(topic, n):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    return {TopicPartition(topic, p): OffsetSpec.latest() for p in range(n)}


def reset_disabled(binary, r):
    """A broker without test controls: POST /v1/reset is 403 and deletes nothing."""
    port = h.pick_free_port()
    b = h.Broker(binary, {"http.listeners": "http://127.0.0.1:%d" % port, "auto.create.topics.enable": "false"})
    failed = False
    try:
        b.start()
        wait_until(lambda: http(port, "GET", "/readyz")[0] == 200, 10)
        st, _ = http(port, "POST", "/v1/topics", {"name": "kept", "partitions": 1})
        st_reset, body = http(port, "POST", "/v1/reset")
        st_after, _ = http(port, "GET", "/v1/topics/kept")
        failed = not r.check("e.reset_disabled_403", st == 201 and st_reset == 403 and st_after == 200,
                             "create %d; POST /v1/reset -> %d %s; the topic after it: GET %d"
                             % (st, st_reset, short(body), st_after))
        rc = b.stop()
        r.eq("e.reset_disabled_broker_exit", rc, 0)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        failed = not r.check("e.reset_disabled", False, "exception %r" % e)
    finally:
        b.close(failed=failed)


def run_all(binary):
    r = Report()
    http_port = h.pick_free_port()
    overrides = {"http.listeners": "http://127.0.0.1:%d" % http_port, "sluice.test.faults.enable": "true",
                 "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
                 "offsets.topic.num.partitions": "5", "transaction.state.log.num.partitions": "3"}
    broker = h.Broker(binary, overrides)
    t_start = time.monotonic()
    try:
        broker.start()
        r.check("ready", wait_until(lambda: http(http_port, "GET", "/readyz")[0] == 200, 10), "GET /readyz 200")
        ctx = Ctx(broker, http_port, r)
        t_http = None
        for name, fn in (("a", lambda: section_a(ctx)), ("b", lambda: section_b(ctx, t_http)),
                         ("c", lambda: section_c(ctx)), ("d", lambda: section_d(ctx, t_http)),
                         ("e", lambda: section_e(ctx, ["adm-live", "adm-closed"]))):
            t0 = time.monotonic()
            try:
                out = fn()
                if name == "a":
                    t_http = out
            except Exception as e:  # noqa: BLE001 - an exception fails its section, the others still run
                traceback.print_exc()
                r.check("%s.section" % name, False, "exception %r" % (e,))
            print("# section %s took %.1f s" % (name, time.monotonic() - t0), flush=True)
            if name == "a" and t_http is None:
                t_http = "adm-http"
        del ctx
        gc.collect()
        rc = broker.stop()
        r.eq("broker_exit_status", rc, 0, "SIGTERM")
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        r.check("harness", False, "exception %r" % (e,))
    if r.failed:
        print("---- broker log (%s, data kept in %s) ----" % (broker.log_path, broker.dir))
        print(broker.log_text()[-8000:])
        print("---- end of broker log ----")
    broker.close(failed=bool(r.failed))
    reset_disabled(binary, r)
    print("# %d passed, %d failed, %d skipped in %.1f s" % (r.passed, r.failed, r.skipped, time.monotonic() - t_start))
    if r.failed:
        return 1
    return 0 if r.passed else h.SKIP


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP admin_api_test: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    if shutil.which("kcat") is None:
        print("SKIP admin_api_test: no kcat on PATH")
        return h.SKIP
    # Always the venv's pinned confluent-kafka 2.16 (Debian's python3-confluent-kafka 1.7 may be importable here).
    no_venv = h.run_in_venv(args.cache, __file__)
    if no_venv:
        print("SKIP admin_api_test: no venv with confluent-kafka and prometheus_client: %s" % no_venv)
        return h.SKIP
    try:
        import confluent_kafka
        import prometheus_client  # noqa: F401
    except ImportError as e:
        print("SKIP admin_api_test: the venv has no confluent_kafka or prometheus_client: %s" % e)
        return h.SKIP
    kv = [x for x in subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout.splitlines() if "Version" in x]
    print("# confluent-kafka %s (librdkafka %s); kcat %s" % ((lambda v: v[0] if isinstance(v, tuple) else v)(confluent_kafka.version()), confluent_kafka.libversion()[0],
                                                           kv[0].split("builtin")[0].strip() if kv else "?"))
    return run_all(args.broker)


if __name__ == "__main__":
    sys.exit(main())
