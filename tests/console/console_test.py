#!/usr/bin/env python3
"""The web console (issue #19, acceptance 1) in headless Chromium against a broker filled by real clients.

One broker (HTTP on a free loopback port). confluent-kafka 2.16 (librdkafka, from the compat cache's venv) writes
1,000 records over 3 topics: `orders` (3 partitions, 500 keyed JSON records with a `source` header and timestamps
one second apart), `events` (2 partitions, 300 text records), `blobs` (1 partition, 200 binary values). Two
groups get lag: `billing` reads 200 of orders, commits and leaves (empty); `audit` reads 100 of events, commits and
stays a member while the views are checked. The expected numbers come from the clients (watermarks, committed
offsets, offsets_for_times, AdminClient), never from the HTTP API the console itself reads.

tests/console/console_driver.mjs drives Debian's chromium through playwright-core (tests/console/package-lock.json,
npm ci into <cache>/console-node) and hands back each view's text: tables by column, facts, cards. Checks:
  http          GET / and /console/* (types, ETag, 304 on If-None-Match, CSP), HEAD, 404, 405
  overview      cluster id, broker count, topics, partitions, 0 under-replicated, the brokers table
  topics        the 3 topics with partitions, replication and messages; the rate column fills in
  topic         orders: each partition's leader, ISR, log start and high watermark
  messages      find by timestamp across partitions (the record the client wrote at that time, JSON pretty-printed,
                its header), blobs as base64 and as hex (the bytes written), live tail sees records written later
  groups        billing Empty and audit Stable with their lag; audit's member and assignment; reset disabled
  reset         billing: a dry run changes nothing; a reset to a timestamp commits offsets_for_times' offsets and
                a librdkafka consumer in billing starts at exactly those offsets
  manage        create a topic (with a config), set and reset a config, add partitions, delete: each seen by the
                AdminClient
  metrics       with a producer running, the messages-in chart and the by-topic table show a rate > 0 for events
  keys          g t moves to Topics and focuses its heading; / focuses the filter
  errors        no error in the browser's console (a CSP refusal would show here)
Screenshots of each view: <artifacts>/*.png (default <build>/tests/console/screenshots).

Usage: console_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache [--artifacts DIR]
Exit 0 on pass, 1 on any failure, 77 when Chromium, Node.js or the venv cannot be had.
"""
import argparse
import base64
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import sluice_harness as h  # noqa: E402
from sluice_harness import wait_until  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def http(port, method, path, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def install_driver(cache):
    """npm ci of package-lock.json into <cache>/console-node (again only when the lockfile changes); the folder."""
    home = os.path.join(cache, "console-node")
    os.makedirs(home, exist_ok=True)
    digest = hashlib.sha256()
    for n in ("package.json", "package-lock.json"):
        with open(os.path.join(HERE, n), "rb") as f:
            digest.update(f.read())
    stamp = os.path.join(home, ".lock-sha256")
    want = digest.hexdigest()
    have = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if have != want or not os.path.isdir(os.path.join(home, "node_modules", "playwright-core")):
        for n in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, n), os.path.join(home, n))
        print("# npm ci for the console test (playwright-core)", flush=True)
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=home,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError("npm ci failed: %s" % (r.stdout + r.stderr)[-2000:])
        with open(stamp, "w") as f:
            f.write(want)
    shutil.copy(os.path.join(HERE, "console_driver.mjs"), os.path.join(home, "console_driver.mjs"))
    return home


class Browser:
    """The console driver as a child process: one JSON command per line, one answer per line."""

    def __init__(self, home, url, shots):
        self.proc = subprocess.Popen(["node", os.path.join(home, "console_driver.mjs"), "--url", url, "--chromium", CHROMIUM,
                                      "--shots", shots], cwd=home, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.shots = []

    def cmd(self, op, **kw):
        kw["op"] = op
        self.proc.stdin.write(json.dumps(kw) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the console driver exited: %s" % self.proc.stderr.read()[-3000:])
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError("%s %s: %s" % (op, kw, answer.get("error")))
        return answer

    def goto(self, hash_, shot=None):
        page = self.cmd("goto", hash=hash_)["page"]
        if shot:
            self.shot(shot)
        return page

    def read(self, topic, done_text, fields):
        """The message browser of `topic`: fills the form's (label, value) pairs in order, presses Read and waits
        until the page shows done_text; the page's contents."""
        self.goto("#/topics/%s/messages" % topic)
        for label, value in fields:
            self.cmd("fill", label=label, value=value)
        self.cmd("click", name="Read")
        return self.cmd("wait_text", text=done_text)["page"]

    def shot(self, name):
        self.shots.append(self.cmd("shot", name=name)["file"])

    def close(self):
        try:
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=20)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()


def rows_of(page, index=0):
    """The index-th table of a page as a list of {header: cell}."""
    t = page["tables"][index]
    return [dict(zip(t["headers"], r)) for r in t["rows"]]


def table_with(page, header):
    """The first table of the page that has a column named header, as rows_of gives it."""
    for i, t in enumerate(page["tables"]):
        if header in t["headers"]:
            return rows_of(page, i)
    raise AssertionError("no table with a column %r in %s" % (header, [t["headers"] for t in page["tables"]]))


def iso(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def fill(bootstrap, ck, check):
    """The 1,000 records and the two groups. Returns what the clients saw: the delivery reports and the audit
    consumer (still a member) with its stop flag."""
    admin = ck.admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([ck.admin.NewTopic("orders", 3, 1), ck.admin.NewTopic("events", 2, 1),
                                   ck.admin.NewTopic("blobs", 1, 1)])
    for f in futures.values():
        f.result(15)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    delivered = {"orders": [], "events": [], "blobs": []}
    errors = []

    def report(err, msg):
        if err:
            errors.append(str(err))
        else:
            delivered[msg.topic()].append((msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value()))

    base = (int(time.time() * 1000) // 1000 - 3600) * 1000  # an hour ago, whole seconds
    for i in range(500):
        producer.produce("orders", key=b"customer-%d" % (i % 37), value=json.dumps({"order": i, "total": i * 3}).encode(),
                         headers=[("source", b"web")], timestamp=base + i * 1000, on_delivery=report)
    for i in range(300):
        producer.produce("events", value=b"event %d" % i, on_delivery=report)
    for i in range(200):
        producer.produce("blobs", value=bytes([i, 0xFF, 0x00, i ^ 0x55]), on_delivery=report)
    producer.flush(30)
    check.eq(errors, [], "delivery errors")
    check.eq({t: len(v) for t, v in delivered.items()}, {"orders": 500, "events": 300, "blobs": 200}, "records delivered")

    def consume(group, topic, n, client_id):
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        got, deadline = 0, time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got += 1
        check.eq(got, n, "%s read %d records of %s" % (group, n, topic))
        c.commit(asynchronous=False)
        return c

    consume("billing", "orders", 200, "billing-client").close()
    audit = consume("audit", "events", 100, "audit-client")
    stop = threading.Event()

    def keep_polling():  # stays a member: poll() sends the heartbeats; no commit, so the lag stays
        deadline = time.monotonic() + 300
        while not stop.is_set() and time.monotonic() < deadline:
            audit.poll(0.2)
        audit.close()
    t = threading.Thread(target=keep_polling, daemon=True)
    t.start()
    return delivered, admin, (stop, t)


def expected_state(bootstrap, ck, topics, groups):
    """Watermarks per partition and committed offsets per group, read by a librdkafka consumer."""
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "console-test-reader", "enable.auto.commit": False})
    md = c.list_topics(timeout=10)
    marks = {}
    for t in topics:
        for p in sorted(md.topics[t].partitions):
            marks[(t, p)] = c.get_watermark_offsets(ck.TopicPartition(t, p), timeout=10)
    c.close()
    committed = {}
    for g, t in groups.items():
        gc = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": g, "enable.auto.commit": False})
        parts = [ck.TopicPartition(t, p) for p in sorted(md.topics[t].partitions)]
        committed[g] = {(x.topic, x.partition): x.offset for x in gc.committed(parts, timeout=10)}
        gc.close()
    return md, marks, committed


def check_http(port, check):
    status, headers, body = http(port, "GET", "/")
    check.eq(status, 200, "GET / status")
    check.eq(headers.get("Content-Type"), "text/html; charset=utf-8", "GET / type")
    check.true(b"/console/console.js" in body and b"<main" in body, "GET / is the console's page")
    check.true("default-src 'self'" in headers.get("Content-Security-Policy", ""), "GET / has a CSP")
    etag = headers.get("ETag", "")
    check.true(len(etag) == 18 and etag.startswith('"'), "GET / has a strong ETag: %r" % etag)
    status, _, body = http(port, "GET", "/", {"If-None-Match": etag})
    check.eq((status, body), (304, b""), "GET / with its ETag")
    for name, ctype in (("console.js", "text/javascript; charset=utf-8"), ("console.css", "text/css; charset=utf-8")):
        status, headers, body = http(port, "GET", "/console/" + name)
        with open(os.path.join(REPO, "broker", "http", "console", name), "rb") as f:
            check.eq((status, headers.get("Content-Type"), body == f.read()), (200, ctype, True),
                     "GET /console/%s serves the file as it is in the tree" % name)
    status, headers, body = http(port, "HEAD", "/console/console.js")
    check.eq((status, body, int(headers.get("Content-Length", "0")) > 1000), (200, b"", True), "HEAD /console/console.js")
    status, _, body = http(port, "GET", "/console/missing.js")
    check.eq((status, json.loads(body).get("error")), (404, "NOT_FOUND"), "GET /console/missing.js")
    status, headers, _ = http(port, "POST", "/")
    check.eq((status, headers.get("Allow")), (405, "GET"), "POST /")


def run_all(binary, cache, artifacts):
    import confluent_kafka as ck
    import confluent_kafka.admin  # noqa: F401
    home = install_driver(cache)
    os.makedirs(artifacts, exist_ok=True)
    for old in os.listdir(artifacts):
        if old.endswith(".png"):
            os.remove(os.path.join(artifacts, old))
    port = h.pick_free_port()
    broker = h.Broker(binary, {"http.listeners": "http://127.0.0.1:%d" % port, "offsets.topic.num.partitions": "5",
                               "auto.create.topics.enable": "false"})
    check = h.Checker()
    browser = None
    audit_stop = None
    try:
        broker.start()
        check_http(port, check)
        delivered, admin, audit_stop = fill(broker.bootstrap, ck, check)
        md, marks, committed = expected_state(broker.bootstrap, ck, ["orders", "events", "blobs"],
                                              {"billing": "orders", "audit": "events"})
        browser = Browser(home, "http://127.0.0.1:%d/" % port, artifacts)

        # ---- overview ----
        page = browser.goto("#/", "overview")
        check.eq(page["h1"], "Cluster overview", "overview heading")
        check.eq(page["facts"].get("Cluster id"), md.cluster_id, "overview: cluster id (Metadata's)")
        check.eq(page["facts"].get("Controller"), "broker %d" % md.controller_id, "overview: controller")
        check.eq({k: page["cards"].get(k) for k in ("Brokers", "Topics", "Internal topics", "Partitions", "Internal partitions",
                                                     "Under-replicated partitions", "Offline partitions")},
                 {"Brokers": str(len(md.brokers)), "Topics": "3", "Internal topics": "1", "Partitions": str(3 + 2 + 1),
                  "Internal partitions": "5",
                  "Under-replicated partitions": "0", "Offline partitions": "0"}, "overview: cards")
        brokers = table_with(page, "Listeners")
        check.eq([(r["Broker"], r["Role"]) for r in brokers], [("0", "controller")], "overview: brokers table")
        check.true("127.0.0.1:%d" % broker.port in brokers[0]["Listeners"] if brokers else False,
                   "overview: the broker's listener %s" % (brokers[0]["Listeners"] if brokers else None))

        # ---- topics ----
        page = browser.goto("#/topics", "topics")
        rows = {r["Topic"]: r for r in table_with(page, "Messages")}
        want = {t: {"Partitions": str(n), "Replication": "1",
                    "Messages": str(sum(marks[(t, p)][1] - marks[(t, p)][0] for p in range(n)))}
                for t, n in (("orders", 3), ("events", 2), ("blobs", 1))}
        check.eq({t: {k: r[k] for k in ("Partitions", "Replication", "Messages")} for t, r in rows.items()}, want,
                 "topics: partitions, replication and messages (watermarks)")
        check.eq(want["orders"]["Messages"], "500", "orders holds 500 records")
        page = browser.cmd("wait_text", text="msg/s", ms=8000)["page"]
        rates = [r["Messages in"] for r in table_with(page, "Messages in")]
        check.true(all(x.endswith(" msg/s") for x in rates), "topics: the rate column filled in: %s" % rates)
        check.true(all(r["Size"] not in ("—", "0 B") for r in rows.values()), "topics: sizes %s" % [r["Size"] for r in rows.values()])

        # ---- topic detail ----
        page = browser.goto("#/topics/orders", "topic-orders")
        parts = table_with(page, "High watermark")
        check.eq([(r["Partition"], r["Leader"], r["ISR"], r["Log start"], r["High watermark"]) for r in parts],
                 [(str(p), "0", "0", str(marks[("orders", p)][0]), str(marks[("orders", p)][1])) for p in range(3)],
                 "topic orders: partitions, leader, ISR, offsets")
        check.eq(page["facts"].get("Messages"), "500", "topic orders: messages")
        configs = {r["Config"]: r for r in table_with(page, "Source")}
        check.eq(configs.get("cleanup.policy", {}).get("Value"), "delete", "topic orders: cleanup.policy shown")

        # ---- messages: by timestamp over every partition ----
        target = delivered["orders"][321]
        page = browser.read("orders", "5 records from 3 partitions", [("Partition", "all"), ("From", "timestamp"),
                                                                      ("Offset or time", iso(target[2])), ("Records (N)", "5")])
        browser.shot("messages-by-timestamp")
        found = table_with(page, "Value")
        first = found[0] if found else {}
        check.eq((first.get("Partition"), first.get("Offset"), first.get("Timestamp"), first.get("Key")),
                 (str(target[0]), str(target[1]), iso(target[2]), target[3].decode()),
                 "messages: the first record at or after the timestamp is the one written then")
        check.eq(first.get("Value"), "JSON\n" + json.dumps(json.loads(target[4]), indent=2),
                 "messages: its JSON value pretty-printed")
        check.eq(first.get("Headers"), "source: web", "messages: its header")
        later = [r["Timestamp"] for r in found]
        check.eq(later, sorted(later), "messages: in timestamp order")
        check.eq(len(found), 5, "messages: N records")

        # ---- messages: one offset over every partition; the partitions whose log ends before it are left out ----
        check.eq(browser.cmd("errors")["errors"], [], "no errors in the browser's console up to here")
        hws = {p: marks[("orders", p)][1] for p in range(3)}
        at = max(hws.values()) - 1
        page = browser.read("orders", "from 3 partitions" if all(h >= at for h in hws.values()) else "Left out",
                            [("Partition", "all"), ("From", "offset"), ("Offset or time", str(at)), ("Records (N)", "20")])
        want_rows = sorted((str(p), str(o)) for p, hw in hws.items() for o in range(at, hw))
        check.eq(sorted((r["Partition"], r["Offset"]) for r in table_with(page, "Value")), want_rows,
                 "messages: offset %d of every partition that has it (high watermarks %s)" % (at, hws))
        short = sorted(p for p, hw in hws.items() if hw < at)
        check.true(all("partition %d (OFFSET_OUT_OF_RANGE)" % p in page["text"] for p in short),
                   "messages: the partitions without offset %d are named (%s): %r" % (at, short, page["status"]))
        # The refused reads are the only errors the browser reports (a failed load is logged as one).
        errors = browser.cmd("errors")["errors"]
        check.true(len(errors) == len(short) and all("status of 400" in e for e in errors),
                   "the browser's console has only the refused reads: %s" % errors)
        page = browser.goto("#/topics/%ZZ")
        check.eq((page["h1"], page["title"]), ("Not found", "Not found · Sluice console"), "a malformed %-escape: Not found")

        # ---- messages: binary values, base64 then hex ----
        blob = delivered["blobs"][7]
        page = browser.read("blobs", "1 record from partition 0", [("Partition", "0"), ("From", "offset"),
                                                                     ("Offset or time", str(blob[1])), ("Records (N)", "1")])
        value = table_with(page, "Value")[0]["Value"]
        check.eq(value, "base64 as hex\n" + base64.b64encode(blob[4]).decode(), "messages: binary value as base64")
        browser.cmd("click", name="as hex")
        page = browser.cmd("extract")["page"]
        check.eq(table_with(page, "Value")[0]["Value"], "hex as base64\n" + blob[4].hex(), "messages: switched to hex")
        browser.cmd("fill", label="Show bytes as", value="hex")
        browser.cmd("click", name="Read")
        page = browser.cmd("wait_text", text="hex as base64")["page"]
        check.eq(table_with(page, "Value")[0]["Value"], "hex as base64\n" + blob[4].hex(), "messages: read as hex")
        browser.shot("messages-binary")

        # ---- messages: live tail ----
        # Keyless records stick to one partition per batch: a partition may hold fewer than 3 (or none).
        last_n = sum(min(3, marks[("events", p)][1] - marks[("events", p)][0]) for p in range(2))
        page = browser.read("events", "%d record%s from 2 partitions" % (last_n, "" if last_n == 1 else "s"),
                            [("From", "last"), ("Records (N)", "3")])
        check.eq(sorted(r["Value"] for r in table_with(page, "Value")),
                 sorted(v.decode() for (p, o, ts, k, v) in delivered["events"]
                        if o >= marks[("events", p)][1] - 3), "messages: the last 3 of each partition")
        browser.cmd("check", label="Live tail")
        tail = ck.Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(3):
            tail.produce("events", value=b"tail %d" % i)
        tail.flush(10)
        page = browser.cmd("wait_text", text="tail 2", ms=10000)["page"]
        values = [r["Value"] for r in table_with(page, "Value")]
        check.eq(sorted(v for v in values if v.startswith("tail")), ["tail 0", "tail 1", "tail 2"],
                 "messages: live tail shows the records written after the read")
        browser.shot("messages-tail")
        browser.cmd("check", label="Live tail", on=False)
        marks.update({k: v for k, v in expected_state(broker.bootstrap, ck, ["events"], {})[1].items()})

        # ---- groups ----
        page = browser.goto("#/groups", "groups")
        groups = {r["Group"]: r for r in table_with(page, "Lag")}
        # Lag as kafka-consumer-groups counts it: of the partitions with a committed offset (a partition the
        # consumers had not reached yet has none: OFFSET_INVALID, -1001).
        lag = {g: sum(marks[tp][1] - off for tp, off in committed[g].items() if off >= 0) for g in ("billing", "audit")}
        check.eq({g: (r["State"], r["Members"], r["Lag"]) for g, r in groups.items() if g in ("billing", "audit")},
                 {"billing": ("Empty", "0", str(lag["billing"])), "audit": ("Stable", "1", str(lag["audit"]))},
                 "groups: state, members and lag (watermarks less the committed offsets)")
        check.true(lag["billing"] > 0 and lag["audit"] > 0, "both groups have lag: %s" % lag)
        page = browser.goto("#/groups/audit", "group-audit")
        members = table_with(page, "Assignment")
        check.eq([(m["Client id"], m["Assignment"]) for m in members], [("audit-client", "events: 0, 1")],
                 "group audit: the member and its assignment")
        check.true("Reset offsets" in page["disabled"], "group audit: reset disabled while it has a member")
        audit_lag = {r["Partition"]: r["Lag"] for r in table_with(page, "Lag")}
        check.eq(audit_lag, {"events-%d" % p: str(marks[("events", p)][1] - committed["audit"][("events", p)])
                             if committed["audit"][("events", p)] >= 0 else "—" for p in range(2)},
                 "group audit: lag per partition (none where nothing is committed, as kafka-consumer-groups' '-')")

        # ---- reset from the console, seen by a librdkafka consumer ----
        page = browser.goto("#/groups/billing", "group-billing")
        offsets = table_with(page, "Committed")
        check.eq({r["Partition"]: (r["Committed"], r["Lag"]) for r in offsets},
                 {"orders-%d" % p: (str(committed["billing"][("orders", p)]),
                                    str(marks[("orders", p)][1] - committed["billing"][("orders", p)]))
                  for p in range(3) if committed["billing"][("orders", p)] >= 0},
                 "group billing: committed offsets and lag per partition")
        reset_ms = delivered["orders"][100][2] + 500  # between two records (their timestamps are 1 s apart)
        browser.cmd("fill", label="To", value="timestamp")
        browser.cmd("fill", label="Offset or time", value=str(reset_ms))
        browser.cmd("fill", label="Partitions", value="orders")
        browser.cmd("check", label="Dry run")
        browser.cmd("click", name="Reset offsets")
        page = browser.cmd("wait_text", text="Dry run: would reset 3 partitions")["page"]
        browser.shot("group-reset-dry-run")
        c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "console-test-times"})
        times = c.offsets_for_times([ck.TopicPartition("orders", p, reset_ms) for p in range(3)], timeout=10)
        c.close()
        want_reset = {"orders-%d" % x.partition: str(x.offset) for x in times}
        dry = table_with(page, "New offset")
        check.eq({r["Partition"]: r["New offset"] for r in dry}, want_reset, "reset dry run: the offsets it would commit")
        _, _, after_dry = expected_state(broker.bootstrap, ck, [], {"billing": "orders"})
        check.eq(after_dry["billing"], committed["billing"], "a dry run commits nothing")
        browser.cmd("check", label="Dry run", on=False)
        browser.cmd("click", name="Reset offsets")
        page = browser.cmd("wait_text", text="Reset 3 partitions of group billing")["page"]
        page = browser.cmd("wait_view", path="/groups/billing")["page"]
        browser.shot("group-reset")
        check.eq({r["Partition"]: r["Committed"] for r in table_with(page, "Committed")}, want_reset,
                 "group billing after the reset: the console shows the new offsets")
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing", "auto.offset.reset": "latest",
                                "enable.auto.commit": False})
        consumer.subscribe(["orders"])
        firsts, deadline = {}, time.monotonic() + 30
        while len(firsts) < 3 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                firsts.setdefault("orders-%d" % m.partition(), str(m.offset()))
        consumer.close()
        check.eq(firsts, want_reset, "a librdkafka consumer in billing starts at the offsets reset from the console")

        # ---- create, alter, grow and delete a topic from the console ----
        browser.goto("#/topics")
        browser.cmd("fill", label="Name", value="console-made")
        browser.cmd("fill", label="Partitions", value="2")
        browser.cmd("fill", label="Configs (key=value, one per line)", value="retention.ms=3600000\nmax.message.bytes=2000000")
        browser.cmd("click", name="Create topic")
        page = browser.cmd("wait_view", path="/topics/console-made")["page"]
        browser.shot("topic-created")
        check.true("Created topic console-made with 2 partitions." in page["notice"], "create: notice %r" % page["notice"])

        def topic_state():
            mdt = admin.list_topics(timeout=10).topics.get("console-made")
            if mdt is None or mdt.error is not None:
                return None
            res = ck.admin.ConfigResource(ck.admin.ResourceType.TOPIC, "console-made")
            cfg = admin.describe_configs([res])[res].result(10)
            return (len(mdt.partitions), cfg["retention.ms"].value, cfg["max.message.bytes"].value)
        check.eq(topic_state(), (2, "3600000", "2000000"), "create: the AdminClient sees the topic and its configs")
        browser.cmd("fill", label="Config", value="retention.ms")
        browser.cmd("fill", label="Value", value="7200000")
        browser.cmd("click", name="Set config")
        browser.cmd("wait_text", text="Set retention.ms=7200000 on console-made.")
        browser.cmd("wait_view", path="/topics/console-made")
        check.eq(topic_state(), (2, "7200000", "2000000"), "set config: seen by the AdminClient")
        browser.cmd("click", name="Reset max.message.bytes to its default")
        browser.cmd("wait_text", text="Reset max.message.bytes of console-made to its default.")
        page = browser.cmd("wait_view", path="/topics/console-made")["page"]
        default_max = [r for r in table_with(page, "Source") if r["Config"] == "max.message.bytes"]
        check.eq(topic_state(), (2, "7200000", "1048588"), "reset config to default: seen by the AdminClient")
        check.eq([(r["Value"], r["Source"]) for r in default_max], [("1048588", "DEFAULT_CONFIG")],
                 "reset config: the console shows the default")
        browser.cmd("fill", label="New partition count", value="4")
        browser.cmd("click", name="Add partitions")
        browser.cmd("wait_text", text="console-made now has 4 partitions.")
        page = browser.cmd("wait_view", path="/topics/console-made")["page"]
        check.eq(len(table_with(page, "High watermark")), 4, "add partitions: the console shows 4")
        check.eq(wait_until(lambda: (topic_state() or (0,))[0] == 4, 10), True, "add partitions: seen by the AdminClient")
        browser.cmd("click", name="Delete topic console-made")
        page = browser.cmd("wait_view", path="/topics")["page"]
        check.true("console-made" not in [r["Topic"] for r in table_with(page, "Messages")], "delete: gone from the list")
        check.eq(wait_until(lambda: topic_state() is None, 10), True, "delete: the AdminClient no longer sees it")

        # ---- throughput ----
        stop_load = threading.Event()
        sent = [0]

        def load():
            p = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1})
            deadline = time.monotonic() + 20
            while not stop_load.is_set() and time.monotonic() < deadline:
                for _ in range(20):
                    p.produce("events", value=b"load")
                    sent[0] += 1
                p.poll(0)
                time.sleep(0.05)
            p.flush(10)
        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        browser.goto("#/metrics?interval_ms=500")

        def rate_seen():
            pg = browser.cmd("extract")["page"]
            v = pg["outputs"].get("now-messages-in", "—")
            by = {r["Topic"]: r for r in table_with(pg, "Messages in")} if pg["tables"] else {}  # none yet: a sentence
            ok = v != "—" and float(v.split()[0]) > 0 and "events" in by and float(by["events"]["Messages in"].split()[0]) > 0
            return pg if ok else None
        page = wait_until(rate_seen, 10, 0.5)
        check.true(page is not None, "metrics: messages in > 0 with a producer running")
        if page:
            by = {r["Topic"]: r for r in table_with(page, "Messages in")}
            check.eq(by.get("orders", {}).get("Messages in"), "0.00 msg/s", "metrics: no traffic on orders")
            check.true(float(page["outputs"]["now-bytes-in"].split()[0]) > 0, "metrics: bytes in > 0")
            check.true(float(page["outputs"]["now-requests"].split()[0]) > 0, "metrics: requests > 0")
        time.sleep(1.5)  # a few points on the charts for the screenshot
        browser.shot("throughput")
        stop_load.set()
        loader.join(30)
        print("# load: %d records during the throughput view" % sent[0])

        # ---- keyboard ----
        browser.goto("#/")
        browser.cmd("keys", keys=["g", "t"])
        page = browser.cmd("wait_view", path="/topics")["page"]
        check.eq(page["focused"], "h1:Topics", "keys: g t goes to Topics and focuses its heading")
        browser.cmd("keys", keys=["/"])
        page = browser.cmd("extract")["page"]
        check.eq(page["focused"], "input:", "keys: / focuses the filter")
        browser.cmd("keys", keys=["o", "r", "d", "Enter"])
        page = browser.cmd("extract")["page"]
        check.eq([r["Topic"] for r in table_with(page, "Messages")], ["orders"], "keys: typing in the filter")
        check.eq(browser.cmd("errors")["errors"], [], "no errors in the browser's console")
    except Exception as e:  # noqa: BLE001 - reported as a failure
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    finally:
        if audit_stop:
            audit_stop[0].set()
            audit_stop[1].join(15)
        if browser:
            browser.close()
    if broker.alive():
        check.eq(broker.stop(), 0, "broker exit status on SIGTERM")
    failed = not check.ok()
    if failed:
        print("---- broker log (%s) ----" % broker.log_path)
        print(broker.log_text()[-8000:])
    broker.close(failed=failed)
    for s in (browser.shots if browser else []):
        print("# screenshot: %s" % s)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    ap.add_argument("--artifacts", default=os.path.join(REPO, "build-tests", "tests", "console", "screenshots"))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP console_test: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    for need, what in ((CHROMIUM, "Debian's chromium (tools/deps.sh SLUICE_TEST_PACKAGES)"), ("node", "Node.js"), ("npm", "npm")):
        if shutil.which(need) is None:
            print("SKIP console_test: no %s" % what)
            return h.SKIP
    no_venv = h.run_in_venv(args.cache, __file__)
    if no_venv:
        print("SKIP console_test: no venv with confluent-kafka: %s" % no_venv)
        return h.SKIP
    return run_all(args.broker, os.path.abspath(args.cache), os.path.abspath(args.artifacts))


if __name__ == "__main__":
    sys.exit(main())
