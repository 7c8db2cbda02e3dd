#!/usr/bin/env python3
"""`sluice group list|describe|reset-offsets|delete` and `sluice consume --group` (cli/README.md, issue #19) against a
real Sluice broker, checked with confluent-kafka 2.16 (librdkafka; the compat cache's venv): a group of confluent-kafka
consumers listed and described as its AdminClient reports it (list_consumer_groups, describe_consumer_groups,
list_consumer_group_offsets, watermarks for the lag); reset-offsets refused while the group has members, a dry run that
commits nothing, and each --to-* scenario seen by a confluent-kafka consumer of the group; delete; `sluice consume
--group` run twice resumes exactly (no record twice, none skipped) and two at once split the partitions.
Exit 0 pass, 1 fail, 77 skip.

  cli_group_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
"""
import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import sluice_harness as h  # noqa: E402

OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "num.partitions": "1"}


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def body(binary, broker, check):
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient
    bs = broker.bootstrap

    def cli(*args, stdin=None, timeout=60):
        r = subprocess.run([binary, "--brokers", bs] + list(args), input=stdin.encode() if stdin else None,
                           capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")

    def cli_json(*args):
        rc, out, err = cli("--json", *args)
        check.eq(rc, 0, "exit code of %s (stderr %r)" % (" ".join(args), err))
        return json.loads(out) if rc == 0 else {}

    admin = AdminClient({"bootstrap.servers": bs})

    def ck_offsets(group):
        fut = admin.list_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(group)])[group]
        return {(tp.topic, tp.partition): tp.offset for tp in fut.result(timeout=20).topic_partitions if tp.offset >= 0}

    def ck_groups():
        return {g.group_id: g.state.name for g in admin.list_consumer_groups().result(timeout=20).valid}

    def high_watermarks(topic, n):
        c = ck.Consumer({"bootstrap.servers": bs, "group.id": "wm-probe"})
        try:
            return {(topic, p): c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=10)[1] for p in range(n)}
        finally:
            c.close()

    def ck_consumer(group, client_id, **extra):
        conf = {"bootstrap.servers": bs, "group.id": group, "client.id": client_id, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "partition.assignment.strategy": "range",
                "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
        conf.update(extra)
        return ck.Consumer(conf)

    def first_offsets(group, topic, partitions, timeout=30):
        """Joins `group` with a confluent-kafka consumer and returns the first offset it reads of each partition
        (without committing anything)."""
        c = ck_consumer(group, "probe")
        c.subscribe([topic])
        got = {}
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and len(got) < len(partitions):
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                got.setdefault(m.partition(), m.offset())
        finally:
            c.close()
        return got

    # ---- a topic with records and a group of two confluent-kafka consumers that committed what they read
    rc, _, err = cli("topic", "create", "orders", "--partitions", "4")
    check.eq(rc, 0, "topic create orders: %s" % err)
    lines = "".join("k%d:v%d\n" % (i, i) for i in range(200))
    rc, _, err = cli("produce", "orders", "--key-separator", ":", stdin=lines)
    check.eq(rc, 0, "produce 200: %s" % err)
    consumers = [ck_consumer("cg", "ck-a"), ck_consumer("cg", "ck-b")]
    for c in consumers:
        c.subscribe(["orders"])
    # Read until the two owners' positions cover the 200 records: a record counted before a rebalance moved its
    # partition is read again by the new owner, so a count of records read is not enough.
    def positions_total():
        owned = [tp for c in consumers for tp in c.position(c.assignment())]
        return sum(tp.offset for tp in owned if tp.offset >= 0) if len(owned) == 4 else -1
    seen = 0
    deadline = time.monotonic() + 60
    while positions_total() < 200 and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen += 1
    check.eq(positions_total(), 200, "the confluent-kafka group read the 200 records (%d reads)" % seen)
    for c in consumers:
        c.commit(asynchronous=False)
    wait_for(lambda: all(c.assignment() for c in consumers), 30, "both consumers assigned")
    rc, _, err = cli("produce", "orders", "--partition", "2", stdin="".join("late%d\n" % i for i in range(7)))
    check.eq(rc, 0, "produce 7 more to partition 2 (lag): %s" % err)
    for c in consumers:
        c.poll(0.1)

    # ---- list
    listed = cli_json("group", "list")
    mine = {g["group_id"]: g["state"] for g in listed.get("groups", [])}
    theirs = ck_groups()
    check.eq({k: v.upper() for k, v in mine.items()}, theirs, "group list == AdminClient.list_consumer_groups")
    check.eq(mine.get("cg"), "Stable", "cg is Stable")
    check.eq([g.get("protocol_type") for g in listed.get("groups", []) if g["group_id"] == "cg"], ["consumer"],
             "cg protocol type")
    rc, out, _ = cli("group", "list")
    check.true(rc == 0 and out.splitlines()[0].split() == ["GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"] and
               any(l.split()[:2] == ["cg", "Stable"] for l in out.splitlines()[1:]), "text group list: %r" % out)
    rc, out, _ = cli("--json", "group", "list", "--state", "Empty")
    check.true(rc == 0 and "cg" not in [g["group_id"] for g in json.loads(out)["groups"]], "--state Empty leaves cg out")

    # ---- describe against describe_consumer_groups, list_consumer_group_offsets and the watermarks
    d = cli_json("group", "describe", "cg").get("groups", [{}])[0]
    desc = admin.describe_consumer_groups(["cg"])["cg"].result(timeout=20)
    check.eq(d.get("state", "").upper(), desc.state.name, "describe state == AdminClient's")
    check.eq(d.get("protocol"), desc.partition_assignor, "assignment strategy == AdminClient's")
    check.eq(d.get("protocol_type"), "consumer", "protocol type")
    ours = sorted((m["member_id"], m["client_id"], m["host"],
                   sorted((a["topic"], p) for a in m["assignment"] for p in a["partitions"])) for m in d.get("members", []))
    ref = sorted((m.member_id, m.client_id, m.host, sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions))
                 for m in desc.members)
    check.eq(ours, ref, "members (id, client id, host, assignment) == describe_consumer_groups")
    check.eq(sorted(m[1] for m in ours), ["ck-a", "ck-b"], "client ids")
    committed = ck_offsets("cg")
    hw = high_watermarks("orders", 4)
    rows = {(o["topic"], o["partition"]): o for o in d.get("offsets", [])}
    check.eq({k: o["current_offset"] for k, o in rows.items()}, committed, "current offsets == list_consumer_group_offsets")
    check.eq({k: o["log_end_offset"] for k, o in rows.items()}, hw, "log end offsets == watermarks")
    check.eq({k: o["lag"] for k, o in rows.items()}, {k: hw[k] - committed[k] for k in hw}, "lag == watermark - committed")
    check.eq(sum(o["lag"] for o in rows.values()), 7, "total lag 7")
    owner = {(tp.topic, tp.partition): m.member_id for m in desc.members for tp in m.assignment.topic_partitions}
    check.eq({k: o["consumer_id"] for k, o in rows.items()}, owner, "owner of each partition == AdminClient's")
    rc, out, _ = cli("group", "describe", "cg")
    text = out.splitlines()
    check.eq(text[0].split() if text else [], ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                               "CONSUMER-ID", "HOST", "CLIENT-ID"], "describe text header")
    want_rows = sorted(["cg", "orders", str(p), str(committed[("orders", p)]), str(hw[("orders", p)]),
                        str(hw[("orders", p)] - committed[("orders", p)]), owner[("orders", p)]] for p in range(4))
    check.eq(sorted(l.split()[:7] for l in text[1:]), want_rows, "describe text rows")
    rc, out, _ = cli("group", "describe", "cg", "--members")
    check.eq(sorted(l.split()[1] for l in out.splitlines()[1:]), sorted(m[0] for m in ours), "--members lists the members")
    rc, out, _ = cli("group", "describe", "cg", "--state")
    check.true(rc == 0 and out.splitlines()[1].split()[2:] == ["range", "Stable", "2"], "--state view: %r" % out)
    rc, _, err = cli("group", "describe", "nobody")
    check.true(rc == 1 and "GROUP_ID_NOT_FOUND" in err, "describe an unknown group: exit 1 GROUP_ID_NOT_FOUND (%d %r)" % (rc, err))

    # ---- reset-offsets and delete are refused while the group has members
    rc, _, err = cli("group", "reset-offsets", "cg", "--all-topics", "--to-earliest", "--execute")
    check.eq(rc, 1, "reset-offsets of an active group: exit 1")
    check.true("NON_EMPTY_GROUP: Assignments can only be reset if the group 'cg' is inactive, but the current state is "
               "Stable." in err, "reset-offsets refusal message: %r" % err)
    rc, _, err = cli("group", "delete", "cg")
    check.true(rc == 1 and "NON_EMPTY_GROUP" in err, "delete an active group: exit 1 NON_EMPTY_GROUP (%r)" % err)
    for c in consumers:
        c.close()
    wait_for(lambda: ck_groups().get("cg") == "EMPTY", 30, "cg empty after the consumers closed")

    # ---- dry run: prints, commits nothing
    rc, out, err = cli("group", "reset-offsets", "cg", "--all-topics", "--to-earliest")
    check.eq(rc, 0, "dry run exit code: %s" % err)
    check.eq(sorted(l.split() for l in out.splitlines()[1:]), sorted(["cg", "orders", str(p), "0"] for p in range(4)),
             "dry run prints offset 0 for each partition")
    check.true("dry run" in err, "dry run says so on stderr: %r" % err)
    check.eq(ck_offsets("cg"), committed, "dry run committed nothing")

    # ---- --to-earliest --execute, seen by a confluent-kafka consumer of the group
    r = cli_json("group", "reset-offsets", "cg", "--all-topics", "--to-earliest", "--execute")
    check.eq(r.get("executed"), True, "executed")
    check.eq({(p["topic"], p["partition"]): (p["previous_offset"], p["new_offset"]) for p in r.get("partitions", [])},
             {k: (committed[k], 0) for k in committed}, "--to-earliest: previous and new offsets")
    check.eq(ck_offsets("cg"), {k: 0 for k in committed}, "AdminClient sees offsets 0")
    check.eq(first_offsets("cg", "orders", range(4)), {p: 0 for p in range(4)}, "the consumer starts at 0 everywhere")

    # ---- --to-offset on chosen partitions (kept within the log), --shift-by, --to-latest
    r = cli_json("group", "reset-offsets", "cg", "--topic", "orders:1,3", "--to-offset", "5", "--execute")
    check.eq([(p["partition"], p["new_offset"]) for p in r.get("partitions", [])], [(1, 5), (3, 5)], "--to-offset 5 on 1,3")
    r = cli_json("group", "reset-offsets", "cg", "--topic", "orders:0", "--to-offset", "100000", "--execute")
    check.eq([(p["partition"], p["new_offset"]) for p in r.get("partitions", [])], [(0, hw[("orders", 0)])],
             "--to-offset past the end is the log end")
    r = cli_json("group", "reset-offsets", "cg", "--topic", "orders:3", "--shift-by", "-2", "--execute")
    check.eq([(p["partition"], p["new_offset"]) for p in r.get("partitions", [])], [(3, 3)], "--shift-by -2 from 5")
    check.eq(ck_offsets("cg"), {("orders", 0): hw[("orders", 0)], ("orders", 1): 5, ("orders", 2): 0, ("orders", 3): 3},
             "AdminClient after the partial resets")
    got = first_offsets("cg", "orders", [1, 2, 3])
    check.eq({p: got.get(p) for p in (1, 2, 3)}, {1: 5, 2: 0, 3: 3}, "the consumer starts at 5, 0, 3")
    r = cli_json("group", "reset-offsets", "cg", "--topic", "orders", "--to-latest", "--execute")
    check.eq(ck_offsets("cg"), hw, "--to-latest: AdminClient sees the watermarks")

    # ---- --to-timestamp / --to-datetime: the first offset at or after it, as offsets_for_times answers
    time.sleep(0.05)
    ts = int(time.time() * 1000)
    time.sleep(0.05)
    rc, _, err = cli("produce", "orders", "--key-separator", ":", stdin="".join("t%d:x%d\n" % (i, i) for i in range(40)))
    check.eq(rc, 0, "produce 40 after the timestamp: %s" % err)
    probe = ck.Consumer({"bootstrap.servers": bs, "group.id": "ts-probe"})
    want = {(tp.topic, tp.partition): tp.offset for tp in probe.offsets_for_times(
        [ck.TopicPartition("orders", p, ts) for p in range(4)], timeout=10)}
    probe.close()
    hw2 = high_watermarks("orders", 4)
    want = {k: (o if o >= 0 else hw2[k]) for k, o in want.items()}
    r = cli_json("group", "reset-offsets", "cg", "--all-topics", "--to-timestamp", str(ts), "--execute")
    check.eq({(p["topic"], p["partition"]): p["new_offset"] for p in r.get("partitions", [])}, want,
             "--to-timestamp == offsets_for_times")
    check.eq(ck_offsets("cg"), want, "AdminClient after --to-timestamp")
    got = first_offsets("cg", "orders", [p for p in range(4) if want[("orders", p)] < hw2[("orders", p)]])
    check.eq(got, {p: want[("orders", p)] for p in range(4) if want[("orders", p)] < hw2[("orders", p)]},
             "the consumer starts at the timestamp's offsets")
    iso = datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ts % 1000)
    r = cli_json("group", "reset-offsets", "cg", "--all-topics", "--to-datetime", iso)
    check.eq({(p["topic"], p["partition"]): p["new_offset"] for p in r.get("partitions", [])}, want,
             "--to-datetime %s (dry run) == --to-timestamp" % iso)
    check.eq(r.get("executed"), False, "--to-datetime without --execute is a dry run")

    # ---- usage errors
    for args in (["group", "reset-offsets", "cg", "--all-topics"],
                 ["group", "reset-offsets", "cg", "--to-earliest"],
                 ["group", "reset-offsets", "cg", "--all-topics", "--to-earliest", "--to-latest"],
                 ["group", "reset-offsets", "cg", "--all-topics", "--to-datetime", "yesterday"],
                 ["group", "reset-offsets", "cg", "--topic", "orders:x", "--to-earliest"],
                 ["group", "describe"], ["group", "delete"], ["group", "frob"]):
        rc, _, err = cli(*args)
        check.eq(rc, 2, "usage error for %r (%r)" % (args, err))
    for path in (["group"], ["group", "list"], ["group", "describe"], ["group", "reset-offsets"], ["group", "delete"]):
        rc, out, _ = cli(*(path + ["--help"]))
        check.true(rc == 0 and out.startswith("Usage: sluice"), "--help of %r" % path)

    # ---- delete
    rc, out, err = cli("group", "delete", "cg")
    check.true(rc == 0 and out.splitlines()[1].split() == ["cg", "OK"], "delete cg: %d %r %r" % (rc, out, err))
    wait_for(lambda: "cg" not in ck_groups(), 20, "AdminClient no longer lists cg")
    check.eq(ck_offsets("cg"), {}, "no committed offsets left")
    rc, out, err = cli("group", "delete", "cg")
    check.true(rc == 1 and "GROUP_ID_NOT_FOUND" in err, "delete it again: exit 1 GROUP_ID_NOT_FOUND (%r)" % err)

    # ---- consume --group: a second run resumes exactly where the first one committed
    rc, _, err = cli("topic", "create", "feed", "--partitions", "3")
    check.eq(rc, 0, "topic create feed: %s" % err)
    produced = ["k%d:r%d" % (i, i) for i in range(150)]
    rc, _, err = cli("produce", "feed", "--key-separator", ":", stdin="".join(l + "\n" for l in produced))
    check.eq(rc, 0, "produce 150 keyed: %s" % err)
    hw_feed = high_watermarks("feed", 3)
    check.true(all(v > 0 for v in hw_feed.values()), "records in every partition: %r" % hw_feed)
    fmt_ = "%p %o %k:%s\\n"

    def parse(out):
        return [tuple(l.split(" ", 2)) for l in out.splitlines()]

    rc, out, _ = cli("consume", "feed", "--group", "sg", "--num", "10", "--exit")
    check.eq((rc, out), (0, ""), "a new member starts at the end by default (auto.offset.reset=latest): nothing")
    rc, _, err = cli("group", "delete", "sg")
    check.eq(rc, 0, "delete sg again: %s" % err)
    rc, out1, err = cli("consume", "feed", "--group", "sg", "--from", "beginning", "--num", "55", "-f", fmt_)
    check.eq(rc, 0, "first consume --group --num 55: %s" % err)
    run1 = parse(out1)
    check.eq(len(run1), 55, "the first run printed 55 records")
    d = cli_json("group", "describe", "sg").get("groups", [{}])[0]
    check.eq(d.get("state"), "Empty", "the member left on exit")
    per_part = {}
    for p, o, _ in run1:
        per_part[int(p)] = max(per_part.get(int(p), -1), int(o))
    check.eq(ck_offsets("sg"), {("feed", p): o + 1 for p, o in per_part.items()} |
             {("feed", p): 0 for p in range(3) if p not in per_part},
             "committed offsets (AdminClient) = after the last record printed of each partition")
    rc, out2, err = cli("consume", "feed", "--group", "sg", "--num", "95", "-f", fmt_)
    check.eq(rc, 0, "second consume --group --num 95: %s" % err)
    run2 = parse(out2)
    both = run1 + run2
    print("# resume: run 1 printed %d records, run 2 %d; log end %r" % (len(run1), len(run2), sorted(hw_feed.values())))
    check.eq(len(both), 150, "two runs printed 150 records")
    check.eq(len(set((p, o) for p, o, _ in both)), 150, "no record twice")
    check.eq(sorted(v for _, _, v in both), sorted(produced), "every record produced, none skipped")
    for p in range(3):
        offs = [int(o) for q, o, _ in both if int(q) == p]
        check.eq(offs, list(range(hw_feed[("feed", p)])), "partition %d read in order across the restart" % p)
    check.eq(ck_offsets("sg"), hw_feed, "committed offsets = log end after both runs")
    rc, out, _ = cli("consume", "feed", "--group", "sg", "--exit")
    check.eq((rc, out), (0, ""), "a third run with --exit: nothing left")

    # ---- two `sluice consume --group` at once split the partitions (range assignor) and read each record once
    tmp = getattr(broker, "dir", None) or __import__("tempfile").mkdtemp(prefix="cli-group-")

    def start(name):
        f = open(os.path.join(tmp, name + ".out"), "w+b")
        e = open(os.path.join(tmp, name + ".err"), "w+b")
        p = subprocess.Popen([binary, "--brokers", bs, "consume", "feed", "--group", "pair", "--from", "beginning",
                              "-f", fmt_], stdout=f, stderr=e)
        return p, f, e

    def members():
        rc, out, _ = cli("--json", "group", "describe", "pair")
        if rc != 0:
            return None
        g = json.loads(out)["groups"][0]
        return g if g["state"] == "Stable" else None

    procs = []
    try:
        procs.append(start("a"))
        wait_for(lambda: (members() or {}).get("members") and len(members()["members"]) == 1, 30, "member a joined")
        wait_for(lambda: sum(1 for _ in open(os.path.join(tmp, "a.out"))) >= 150, 30, "a read the 150 records")
        procs.append(start("b"))
        g = wait_for(lambda: (lambda m: m if m and len(m["members"]) == 2 else None)(members()), 40, "b joined, Stable")
        assigned = sorted(sorted(p for a in m["assignment"] for p in a["partitions"]) for m in g["members"])
        check.eq(sorted(p for a in assigned for p in a), [0, 1, 2], "the two members own every partition once")
        check.eq(sorted(len(a) for a in assigned), [1, 2], "range assignor: 2 and 1 partitions")
        check.eq(sorted(m["client_id"] for m in g["members"]), ["sluice-cli", "sluice-cli"], "client ids")
        more = ["m%d:s%d" % (i, i) for i in range(90)]
        rc, _, err = cli("produce", "feed", "--key-separator", ":", stdin="".join(l + "\n" for l in more))
        check.eq(rc, 0, "produce 90 more: %s" % err)
        hw_now = high_watermarks("feed", 3)
        total = sum(hw_now.values())

        def printed():
            return sum(sum(1 for _ in open(os.path.join(tmp, n + ".out"))) for n in ("a", "b"))
        wait_for(lambda: printed() >= total, 30, "a and b printed every record")
        for p, _, _ in procs:
            p.send_signal(signal.SIGTERM)
        for name, (p, _, e) in zip("ab", procs):
            rc = p.wait(timeout=30)
            e.seek(0)
            check.eq(rc, 0, "member %s exits 0 on SIGTERM (stderr %r)" % (name, e.read()[-500:]))
        outs = {}
        for name, (_, f, _) in zip("ab", procs):
            f.seek(0)
            outs[name] = parse(f.read().decode())
        allrec = outs["a"] + outs["b"]
        print("# pair: a printed %d records, b %d; assignments %r; log end %r" % (len(outs["a"]), len(outs["b"]), assigned,
                                                                               sorted(hw_now.values())))
        check.eq(len(allrec), total, "a and b printed %d records in all" % total)
        check.eq(len(set((p, o) for p, o, _ in allrec)), total, "no record printed by both or twice")
        check.eq(sorted(v for _, _, v in allrec), sorted(produced + more), "every record, none skipped")
        late_a = {int(p) for p, _, v in outs["a"] if v.startswith("m")}
        late_b = {int(p) for p, _, v in outs["b"] if v.startswith("m")}
        check.true(late_a and late_b and not (late_a & late_b),
                   "after the rebalance a and b read disjoint partitions: %r %r" % (late_a, late_b))
        check.true(sorted(late_a | late_b) == [0, 1, 2] and sorted([sorted(late_a), sorted(late_b)]) == sorted(assigned),
                   "the partitions each read are its assignment: %r %r %r" % (late_a, late_b, assigned))
        wait_for(lambda: ck_groups().get("pair") == "EMPTY", 20, "pair empty after both left")
        check.eq(ck_offsets("pair"), hw_now, "pair committed the log end of every partition")
    finally:
        for p, f, e in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            f.close()
            e.close()

    # ---- a committed offset the log no longer holds (DeleteRecords moved the log start past it): the group
    # starts over as the Java consumer's auto.offset.reset does (--from beginning: the log start), with a note
    check.eq(cli("topic", "create", "trimmed", "--partitions", "1")[0], 0, "create trimmed")
    rc, _, err = cli("produce", "trimmed", stdin="".join("t%d\n" % i for i in range(10)))
    check.eq(rc, 0, "produce 10 to trimmed: %s" % err)
    rc, out, err = cli("consume", "trimmed", "--group", "trim", "--from", "beginning", "--num", "3", "-f", "%o\\n")
    check.eq((rc, out), (0, "0\n1\n2\n"), "trim read 3 records and committed offset 3 (%s)" % err)
    check.eq(ck_offsets("trim"), {("trimmed", 0): 3}, "trim committed 3")
    futs = admin.delete_records([ck.TopicPartition("trimmed", 0, 6)])
    for f in futs.values():
        f.result(15)
    rc, out, err = cli("consume", "trimmed", "--group", "trim", "--from", "beginning", "--exit", "-f", "%o %s\\n")
    check.eq((rc, out), (0, "".join("%d t%d\n" % (i, i) for i in range(6, 10))),
             "committed 3 below the log start 6: read from the log start (%s)" % err)
    check.true("trimmed-0: offset 3 is out of range (OFFSET_OUT_OF_RANGE); resetting to 6 (the log start)" in err,
               "the reset is reported: %r" % err)
    check.eq(ck_offsets("trim"), {("trimmed", 0): 10}, "trim committed the log end after the reset")

    rc, _, err = cli("consume", "nosuch", "--group", "x", "--exit")
    check.true(rc == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err, "consume --group of a missing topic: %r" % err)
    rc, _, err = cli("consume", "feed", "--group", "x", "--partition", "0")
    check.eq(rc, 2, "--group with --partition: usage error")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    ap.add_argument("--reference", choices=["kafka"], help="run the CLI against Apache Kafka 4.4 instead of a Sluice broker")
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIPPED: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    # The venv's pinned confluent-kafka 2.16 (Debian's python3-confluent-kafka may be importable here too).
    no_venv = h.run_in_venv(args.cache, __file__)
    if no_venv:
        print("SKIPPED: no venv with confluent-kafka: %s" % no_venv)
        return h.SKIP
    try:
        import confluent_kafka
    except ImportError as e:
        print("SKIPPED: the venv has no confluent_kafka: %s" % e)
        return h.SKIP
    print("# confluent-kafka %s (librdkafka %s)" % (confluent_kafka.version()[0] if isinstance(confluent_kafka.version(), tuple) else confluent_kafka.version(), confluent_kafka.libversion()[0]))
    t0 = time.monotonic()
    run = lambda broker, check: body(os.path.abspath(args.broker), broker, check)  # noqa: E731
    if args.reference == "kafka":
        code = h.run_reference(run, OVERRIDES, os.path.abspath(args.cache))
    else:
        code = h.run(run, args.broker, OVERRIDES)
    print("# %.1f s" % (time.monotonic() - t0))
    return code


if __name__ == "__main__":
    sys.exit(main())
