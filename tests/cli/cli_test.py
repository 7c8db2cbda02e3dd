#!/usr/bin/env python3
"""The `sluice` CLI (cli/README.md, issue #19) against a real Sluice broker, checked with kcat (librdkafka 2.0.2)
reading and writing the same topics: cluster info, topic create|list|describe|delete|alter-config|add-partitions,
produce (keys, headers, a partition, keyless sticky batches), consume (beginning, end, offset, @timestamp, --num,
--partition, kcat's --format placeholders, --json), --help on every level, --version, $SLUICE_BROKERS and the exit
codes (0 ok, 1 Kafka error naming it, 2 usage, 3 cannot connect). Exit 0 pass, 1 fail, 77 skip.

  cli_test.py --broker build-tests/broker/sluice
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import sluice_harness as h  # noqa: E402


def murmur2(data):
    """Kafka's Utils.murmur2, for the expected partitions of keyed records."""
    m, r = 0x5bd1e995, 24
    length = len(data)
    hh = (0x9747b28c ^ length) & 0xffffffff
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xffffffff
        k ^= k >> r
        k = (k * m) & 0xffffffff
        hh = (hh * m) & 0xffffffff
        hh ^= k
    tail = data[length - length % 4:]
    if len(tail) >= 3:
        hh ^= tail[2] << 16
    if len(tail) >= 2:
        hh ^= tail[1] << 8
    if len(tail) >= 1:
        hh ^= tail[0]
        hh = (hh * m) & 0xffffffff
    hh ^= hh >> 13
    hh = (hh * m) & 0xffffffff
    hh ^= hh >> 15
    return hh


def partition_for(key, n):
    return (murmur2(key.encode()) & 0x7fffffff) % n


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"), help="the sluice executable (the CLI, and the broker)")
    ap.add_argument("--reference", choices=["kafka"], help="run the CLI against Apache Kafka 4.4 instead of a Sluice broker")
    ap.add_argument("--cache", default=None, help="compat cache with the Kafka jars (--reference kafka)")
    args = ap.parse_args()
    binary = args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    if not shutil.which("kcat"):
        print("SKIPPED: no kcat")
        return h.SKIP

    def body(broker, check):
        bs = broker.bootstrap

        def cli(*args, stdin=None, env=None, brokers=True, timeout=60):
            argv = [binary] + (["--brokers", bs] if brokers else []) + list(args)
            r = subprocess.run(argv, input=stdin.encode() if isinstance(stdin, str) else stdin, capture_output=True,
                               timeout=timeout, env=env)
            return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")

        def cli_json(*args, **kw):
            rc, out, err = cli("--json", *args, **kw)
            check.eq(rc, 0, "exit code of %s (stderr %r)" % (" ".join(args), err))
            return json.loads(out) if rc == 0 else {}

        def kcat(*args, stdin=None):
            r = subprocess.run(["kcat", "-b", bs, "-q"] + list(args), input=stdin.encode() if stdin else None,
                               capture_output=True, timeout=60)
            check.eq(r.returncode, 0, "kcat %s: %s" % (" ".join(args), r.stderr))
            return r.stdout.decode("utf-8", "replace")

        def kcat_meta(topic=None):
            return json.loads(kcat("-L", "-J", *(["-t", topic] if topic else [])))

        # --- cluster info
        info = cli_json("cluster", "info")
        meta = kcat_meta()
        check.eq([(b["id"], b["host"], b["port"]) for b in info.get("brokers", [])],
                 [(b["id"], b["name"].rsplit(":", 1)[0], int(b["name"].rsplit(":", 1)[1])) for b in meta["brokers"]],
                 "cluster info brokers == kcat -L brokers")
        broker_id = meta["brokers"][0]["id"]  # 0 for Sluice, 1 for the Kafka reference (node.id=1)
        check.eq(info.get("controller_id"), broker_id, "controller id (a single node)")
        check.true(isinstance(info.get("cluster_id"), str) and len(info["cluster_id"]) == 22, "cluster id: %r" % info)
        rc, out, _ = cli("cluster", "info")
        check.true(rc == 0 and info.get("cluster_id", "?") in out and "127.0.0.1" in out, "text cluster info: %r" % out)

        # --- topic create / list / describe
        rc, out, err = cli("topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=123456",
                           "--config", "cleanup.policy=delete")
        check.eq(rc, 0, "topic create orders: %s" % err)
        check.true("orders" in out and "OK" in out, "create output: %r" % out)
        km = kcat_meta("orders")
        check.eq([len(t["partitions"]) for t in km["topics"] if t["topic"] == "orders"], [3], "kcat sees 3 partitions")
        rc, out, err = cli("topic", "create", "orders", "--partitions", "3")
        check.eq(rc, 1, "create an existing topic: exit 1")
        check.true("TOPIC_ALREADY_EXISTS: Topic 'orders' already exists." in err, "error text: %r" % err)
        rc, out, err = cli("topic", "create", "bad", "--partitions", "1", "--config", "segment.bytes=1")
        check.eq(rc, 1, "create with an invalid config: exit 1")
        check.true(err.startswith("sluice: INVALID_CONFIG"), "invalid config error: %r" % err)
        created = cli_json("topic", "create", "events", "-p", "2", "-r", "1")
        t0 = created.get("topics", [{}])[0]
        check.eq((t0.get("name"), t0.get("partitions"), t0.get("replicas"), t0.get("error")), ("events", 2, 1, None),
                 "create --json")
        kcat("-P", "-t", "auto-made", stdin="x\n")  # a topic made by kcat (auto-create)
        listed = cli_json("topic", "list")
        names = {t["name"]: t["partitions"] for t in listed.get("topics", [])}
        check.eq(names, {"orders": 3, "events": 2, "auto-made": 1}, "topic list (no internal topics)")
        kcat_names = {t["topic"]: len(t["partitions"]) for t in kcat_meta()["topics"] if not t["topic"].startswith("__")}
        check.eq(names, kcat_names, "topic list == kcat -L")
        desc = cli_json("topic", "describe", "orders")
        check.eq([(p["partition"], p["leader"], p["replicas"], p["isr"], p["high_watermark"]) for p in desc.get("partitions", [])],
                 [(p, broker_id, [broker_id], [broker_id], 0) for p in range(3)], "describe partitions")
        cfg = {c["name"]: (c["value"], c["source"]) for c in desc.get("configs", [])}
        check.eq(cfg.get("retention.ms"), ("123456", "DYNAMIC_TOPIC_CONFIG"), "describe: retention.ms set at create")
        rc, out, err = cli("topic", "describe", "nope")
        check.eq((rc, err.strip()), (1, "sluice: UNKNOWN_TOPIC_OR_PARTITION: Topic 'nope' does not exist."),
                 "describe a missing topic")

        # --- alter-config
        rc, _, err = cli("topic", "alter-config", "orders", "--set", "retention.ms=999000", "--delete", "cleanup.policy")
        check.eq(rc, 0, "alter-config: %s" % err)
        cfg = {c["name"]: c["value"] for c in cli_json("topic", "describe", "orders").get("configs", [])}
        check.eq(cfg, {"retention.ms": "999000"}, "configs after alter-config (cleanup.policy deleted)")
        rc, _, err = cli("topic", "alter-config", "orders", "--set", "min.insync.replicas=0")
        check.eq(rc, 1, "alter-config with an invalid value: exit 1")
        check.true("INVALID_CONFIG" in err, "alter-config error: %r" % err)

        # --- add-partitions
        rc, out, err = cli("topic", "add-partitions", "events", "--num", "2")
        check.eq(rc, 0, "add-partitions --num 2: %s" % err)
        check.eq([len(t["partitions"]) for t in kcat_meta("events")["topics"]], [4], "kcat sees 4 partitions of events")
        rc, out, err = cli("topic", "add-partitions", "events", "--total", "3")
        check.eq(rc, 1, "add-partitions to fewer: exit 1")
        check.true("INVALID_PARTITIONS" in err, "add-partitions error: %r" % err)

        # --- produce (keys, headers) -> kcat reads them where the Java partitioner puts them
        lines = ["user%d:payload %d" % (i, i) for i in range(200)]
        rc, out, err = cli("produce", "orders", "--key-separator", ":", "--header", "trace=t1", "--header", "src=cli",
                           stdin="\n".join(lines) + "\n")
        check.eq(rc, 0, "produce keyed: %s" % err)
        check.true("produced 200 records to 'orders'" in err, "produce summary: %r" % err)
        got = kcat("-C", "-t", "orders", "-e", "-f", "%k|%s|%p|%h\n").splitlines()
        want = sorted("user%d|payload %d|%d|trace=t1,src=cli" % (i, i, partition_for("user%d" % i, 3)) for i in range(200))
        check.eq(sorted(got), want, "kcat reads keys, values, headers, murmur2 partitions")
        # order per partition is the input order
        per = {}
        for line in got:
            k, _, p, _ = line.split("|")
            per.setdefault(p, []).append(int(k[4:]))
        check.true(all(v == sorted(v) for v in per.values()), "records in input order per partition")
        # --partition and --json summary
        summary = cli_json("produce", "orders", "--partition", "2", stdin="a\nb\n\nc\n")
        check.eq((summary.get("records"), [(p["partition"], p["records"]) for p in summary.get("partitions", [])]),
                 (3, [(2, 3)]), "produce --partition 2 (the empty line skipped)")
        p2 = kcat("-C", "-t", "orders", "-p", "2", "-e", "-f", "%o %s\n").splitlines()
        n2 = len([1 for i in range(200) if partition_for("user%d" % i, 3) == 2])
        check.eq(p2[-3:], ["%d a" % n2, "%d b" % (n2 + 1), "%d c" % (n2 + 2)], "kcat -p 2: offsets of a, b, c")
        rc, _, err = cli("produce", "orders", "--partition", "7", stdin="x\n")
        check.eq(rc, 2, "produce --partition 7 of 3: usage error")

        # --- keyless records: sticky, one partition per batch (batch.size 16384)
        value = "v" * 100
        keyless = ["%05d%s" % (i, value) for i in range(2000)]
        rc, _, err = cli("produce", "events", "--quiet", stdin="\n".join(keyless) + "\n")
        check.eq(rc, 0, "produce keyless: %s" % err)
        rows = [l.split(" ", 1) for l in kcat("-C", "-t", "events", "-e", "-f", "%p %s\n").splitlines()]
        check.eq(sorted(int(s[:5]) for _, s in rows), list(range(2000)), "every keyless record once")
        by_index = sorted((int(s[:5]), int(p)) for p, s in rows)
        runs = 1 + sum(1 for a, b in zip(by_index, by_index[1:]) if a[1] != b[1])
        # ~110 bytes per record in its batch: about 148 records per 16 KiB batch, 14 batches for 2000 records.
        check.true(10 <= runs <= 16, "keyless records switch partition once per ~16 KiB batch: %d runs" % runs)
        check.true(len(set(p for _, p in by_index)) > 1, "keyless records spread over partitions")

        # --- consume: kcat writes, sluice reads; --format compared with kcat's own output of the same format
        check.eq(cli("topic", "create", "fromkcat", "-p", "2")[0], 0, "create fromkcat")
        kcat("-P", "-t", "fromkcat", "-p", "1", "-K", ":", "-H", "h1=v1", "-H", "h2=", stdin="ka:va\nkb:vb\nkc:vc\n")
        fmt_ = "%t %p %o %k=%s [%h] %K %S %T\\n"
        rc, out, err = cli("consume", "fromkcat", "--partition", "1", "--exit", "--format", fmt_)
        check.eq(rc, 0, "consume --partition 3: %s" % err)
        check.eq(out, kcat("-C", "-t", "fromkcat", "-p", "1", "-e", "-f", fmt_.replace("\\n", "\n")),
                 "consume --format == kcat -f (same placeholders)")
        recs = [json.loads(l) for l in cli("--json", "consume", "fromkcat", "-p", "1", "-e")[1].splitlines()]
        check.eq([(r["offset"], r["key"], r["value"], r["headers"]) for r in recs],
                 [(i, k, v, [{"key": "h1", "value": "v1"}, {"key": "h2", "value": ""}])
                  for i, (k, v) in enumerate([("ka", "va"), ("kb", "vb"), ("kc", "vc")])], "consume --json")
        # all partitions, --num, --from OFFSET / end / @timestamp
        rc, out, _ = cli("consume", "orders", "--exit")
        check.eq(len(out.splitlines()), 203, "consume every partition of orders to the end")
        rc, out, _ = cli("consume", "orders", "--num", "5")
        check.eq((rc, len(out.splitlines())), (0, 5), "consume --num 5")
        rc, out, _ = cli("consume", "fromkcat", "-p", "1", "--from", "1", "-e", "-f", "%o:%k\\n")
        check.eq(out, "1:kb\n2:kc\n", "consume --from 1")
        rc, out, _ = cli("consume", "fromkcat", "-p", "1", "--from", "end", "-e")
        check.eq((rc, out), (0, ""), "consume --from end --exit: nothing")
        ts = int(time.time() * 1000) + 1
        time.sleep(0.05)
        kcat("-P", "-t", "fromkcat", "-p", "1", stdin="late1\nlate2\n")
        rc, out, _ = cli("consume", "fromkcat", "-p", "1", "--from", "@%d" % ts, "-e", "-f", "%o %s\\n")
        check.eq(out, "3 late1\n4 late2\n", "consume --from @timestamp")
        rc, out, _ = cli("consume", "fromkcat", "-p", "1", "--from", "@%d" % (ts + 3600 * 1000), "-e")
        check.eq((rc, out), (0, ""), "consume --from a future @timestamp: nothing")
        # a gzip batch from kcat
        kcat("-P", "-t", "events", "-p", "0", "-z", "gzip", stdin="z1\nz2\n")
        rc, out, _ = cli("consume", "events", "-p", "0", "--from", "end", "-e")
        rc, out, _ = cli("consume", "events", "-p", "0", "-e", "-f", "%s\\n")
        check.eq(out.splitlines()[-2:], ["z1", "z2"], "consume a gzip batch")
        rc, out, err = cli("consume", "orders", "--from", "nonsense")
        check.eq(rc, 2, "consume --from nonsense: usage error")
        rc, out, err = cli("consume", "fromkcat", "-p", "1", "--from", "100", "-e")
        check.eq(rc, 1, "consume from an offset past the end: exit 1")
        check.true("OFFSET_OUT_OF_RANGE" in err, "offset out of range error: %r" % err)

        # --- delete
        rc, out, err = cli("topic", "delete", "auto-made")
        check.eq(rc, 0, "topic delete: %s" % err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(t["topic"] == "auto-made" for t in kcat_meta()["topics"]):
            time.sleep(0.2)
        check.true(not any(t["topic"] == "auto-made" for t in kcat_meta()["topics"]), "kcat no longer lists auto-made")
        rc, out, err = cli("topic", "delete", "auto-made")
        check.eq(rc, 1, "delete a missing topic: exit 1")
        check.true("UNKNOWN_TOPIC_OR_PARTITION" in err, "delete error: %r" % err)

        # --- help, version, usage errors, environment, cannot connect
        for path in ([], ["topic"], ["topic", "create"], ["topic", "list"], ["topic", "describe"], ["topic", "delete"],
                     ["topic", "alter-config"], ["topic", "add-partitions"], ["cluster"], ["cluster", "info"],
                     ["produce"], ["consume"], ["group"], ["acl"], ["acl", "list"], ["acl", "create"], ["acl", "delete"],
                     ["user"], ["user", "list"], ["user", "create"], ["user", "delete"], ["health"]):
            rc, out, err = cli(*(path + ["--help"]))
            check.true(rc == 0 and out.startswith("Usage: sluice"), "--help of %r: %d %r" % (path, rc, out[:80]))
        rc, out, _ = cli("--version")
        check.true(rc == 0 and out.startswith("sluice ") and "revision" in out, "--version: %r" % out)
        for args in (["topic"], ["topic", "frob"], ["frob"], ["topic", "create"], ["topic", "create", "x", "--bogus"],
                     ["topic", "create", "x", "--partitions", "abc"], ["topic", "add-partitions", "events"],
                     ["acl", "create", "--topic", "t", "--operation", "Read"], ["acl", "create", "--allow-principal", "alice",
                     "--operation", "Read", "--topic", "t"], ["acl", "list", "--operation", "Frob"],
                     ["user", "create", "u"], ["user", "create", "u", "--password", "p", "--mechanism", "MD5"],
                     ["-X", "security.protocol=bogus", "topic", "list"], ["health", "--url", "ftp://x"]):
            rc, _, err = cli(*args)
            check.eq(rc, 2, "usage error for %r (%r)" % (args, err))
        env = dict(os.environ, SLUICE_BROKERS=bs)
        rc, out, _ = cli("--json", "topic", "list", env=env, brokers=False)
        check.true(rc == 0 and "orders" in out, "$SLUICE_BROKERS is the default: %r" % out)
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            dead = "127.0.0.1:%d" % s.getsockname()[1]
        r = subprocess.run([binary, "--brokers", dead, "topic", "list"], capture_output=True, timeout=30)
        check.eq(r.returncode, 3, "cannot connect: exit 3")
        check.true(b"cannot connect to " + dead.encode() in r.stderr, "cannot connect message: %r" % r.stderr)
        # the first reachable broker of a list is used
        rc, out, _ = cli("--brokers", dead + "," + bs, "topic", "list", brokers=False)
        check.true(rc == 0 and "orders" in out, "a dead broker first in --brokers: %r" % out)

    if args.reference == "kafka":
        return h.run_reference(body, None, args.cache)
    return h.run(body, binary)


if __name__ == "__main__":
    sys.exit(main())
