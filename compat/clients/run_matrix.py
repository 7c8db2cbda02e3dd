#!/usr/bin/python3
"""Client matrix: one scenario, every client, against Sluice and against Apache Kafka 4.4.0.

Per client (fresh topic and group each): create a 3-partition topic with the client's admin API;
produce 1,000 keyed records with headers (acks=all, idempotent where the client supports it;
CreateTime base+i); consume 500 in a consumer group and commit exactly those; a new consumer in the
group resumes and reads the other 500; offsets for times (ListOffsets by timestamp base+500);
a cooperative-sticky rebalance with two members; describe the topic; DeleteRecords before offset 10
on partition 0; transactions (on TOPIC-txn: a committed transaction with send_offsets_to_transaction,
an aborted one, a committed one; read_committed must read exactly the committed records, in order,
read_uncommitted all of them, and the group's offset must be the one sent); delete the topic. Kafka
Streams runs a stateful word count instead (repartition + changelog topics), once at_least_once and
once exactly_once_v2. Every consumed record is checked here: key k<i> -> value v<i>-<client>,
headers, each (partition, offset) once, offsets dense from 0, phase 2 above phase 1's commit.

    # the acceptance command: a Kafka 4.4 column and a Sluice column
    /usr/bin/python3 compat/clients/run_matrix.py --broker build/broker/sluice --reference kafka
    ... --broker build/broker/sluice              # Sluice single node only
    ... --reference kafka                          # Kafka 4.4.0 only
    ... --bootstrap 127.0.0.1:9092                 # an existing broker
    ... --cluster 3                                # adds a 3-broker Sluice cluster column
                                                   # (rows: --cluster-clients java,streams,franz,rdkafka)
    ... --quick                                    # the CI subset (ctest compat.clients): java,
                                                   # franz, confluent2 and the four Debian clients
    ... --clients java,franz                       # a subset (default: all, see --list)

Third-party clients are installed by installers.py under --cache from the pinned manifests
(java/pom.xml, go/go.mod+go.sum, python/requirements.txt, node/package-lock.json); a toolchain or
registry that cannot be had makes that client's rows SKIP with the reason. Prints the table client x
step (one column per broker), the reasons for every FAIL and SKIP, and last
`clients: N passed, N failed, N skipped` over the Sluice column(s) (the Kafka column when it runs
alone). Sluice FAILs listed in
known_differences.txt are marked `FAIL*` and do not change the exit status. Exit 0 when no other
Sluice row failed, 1 otherwise, 77 when there is no broker at all or no Sluice row could run (every
client skipped: no toolchain, no registry) (ctest SKIP_RETURN_CODE).
Always run with /usr/bin/python3 (Debian's python3-kafka and python3-confluent-kafka live there).
"""
import argparse
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, HERE)
import installers  # noqa: E402
from matrix_checks import ClientFailed, PARTITIONS  # noqa: E402
from matrix_clients import BY_NAME, CLIENTS, run_client  # noqa: E402

QUICK = ["java", "franz", "confluent2", "kcat", "rdkafka", "confluent", "kafkapython"]
KNOWN = os.path.join(HERE, "known_differences.txt")


def load_known():
    """known_differences.txt as {(client or "*", step): reason}; empty when the file is missing."""
    known = {}
    try:
        with open(KNOWN) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    parts = line.split(None, 2)
                    if len(parts) >= 2:
                        known[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    except OSError:
        pass
    return known


# ---- the brokers ----

class Target:
    """One column: a broker (or cluster) started here, or an existing one."""

    def __init__(self, key, title, is_sluice):
        self.key, self.title, self.is_sluice = key, title, is_sluice
        self.nodes, self.zk, self.bootstrap = [], None, ""

    def start(self, args):
        if self.key == "existing":
            self.bootstrap = args.bootstrap
            return
        overrides = {"num.partitions": PARTITIONS}
        for kv in args.override:
            k, _, v = kv.partition("=")
            overrides[k] = v
        if self.key == "kafka":
            sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
            from kafka_reference import KafkaReference
            self.nodes = [KafkaReference(args.cache, overrides)]
        elif self.key == "sluice":
            from sluice_harness import Broker
            self.nodes = [Broker(args.broker, overrides)]
        else:  # a cluster on ZooKeeper, as compat/librdkafka/run_suite.py --cluster
            from sluice_harness import Broker, ZooKeeper
            if not ZooKeeper.available():
                raise installers.Unavailable("ZooKeeper is not installed (apt-get install zookeeper)")
            self.zk = ZooKeeper()
            self.zk.start()
            n = args.cluster
            overrides.update({"zookeeper.connect": self.zk.connect + "/sluice", "zookeeper.session.timeout.ms": 10000,
                              "default.replication.factor": min(3, n), "offsets.topic.replication.factor": min(3, n),
                              "sluice.zookeeper.registration.retry.ms": 15000})
            self.nodes = [Broker(args.broker, dict(overrides, **{"broker.id": i})) for i in range(1, n + 1)]
        for b in self.nodes:
            b.start(ready_timeout=90 if self.key == "kafka" else 30)
        self.bootstrap = ",".join(b.bootstrap for b in self.nodes)
        if self.key == "cluster":
            sys.path.insert(0, os.path.join(REPO, "compat", "librdkafka"))
            from suite_run import wait_for_cluster
            wait_for_cluster(self.bootstrap, args.cluster)

    def stop(self, failed):
        """Stops what start() started; returns a list of problems (a node died or exited non-zero)."""
        problems = []
        for b in self.nodes:
            alive = b.alive()
            rc = b.stop() if alive else None
            if not alive or rc != 0:
                problems.append("%s node %s %s (log %s)" % (self.title, b.bootstrap,
                                                             "died during the run" if not alive else "exit status %s" % rc,
                                                             b.log_path))
            b.close(failed=failed or bool(problems))
        if self.zk is not None:
            self.zk.stop()
        return problems


def run_column(t, runnable, prepared, results, infos, outputs, stamp, workdir):
    """Runs every client of one column; returns True when a row failed."""
    failed_here = False
    for c in runnable:
        state, what = prepared[c.name]
        t0 = time.monotonic()
        if state != "ok":
            results[(t.key, c.name)] = {s: (state, what) for s in c.steps}
        else:
            try:
                steps, info, output = run_client(c, what, t.bootstrap, "%s-%s" % (t.key, stamp), workdir)
            except ClientFailed as e:
                steps, info, output = {s: ("FAIL", str(e)) for s in c.steps}, "", {}
            results[(t.key, c.name)] = steps
            infos.setdefault(c.name, info)
            outputs[(t.key, c.name)] = output
        st = results[(t.key, c.name)]
        failed_here |= any(v[0] == "FAIL" for v in st.values())
        print("# %-10s %-13s %s (%.1f s)" % (t.title, c.name, " ".join(
            "%s:%s" % (s, st.get(s, ("-",))[0]) for s in c.steps), time.monotonic() - t0), flush=True)
    return failed_here


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""),
                    help="sluice executable: start a single node for the run (a Sluice column)")
    ap.add_argument("--bootstrap", default="", help="use a running broker instead (one column)")
    ap.add_argument("--reference", choices=["kafka"], default="",
                    help="also run against Apache Kafka 4.4.0, one KRaft node (compat/kafka/kafka_reference.py)")
    ap.add_argument("--cluster", type=int, default=0, metavar="N",
                    help="also run against N Sluice brokers on a ZooKeeper started here (needs --broker)")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE",
                                                       os.path.join(REPO, "build", "compat-cache")),
                    help="where installed clients and Kafka's jars are kept (default build/compat-cache)")
    ap.add_argument("--clients", default="", help="comma-separated subset (default: all; see --list)")
    ap.add_argument("--cluster-clients", default="java,streams,franz,rdkafka",
                    help="clients run against the --cluster column (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="the CI subset: " + ",".join(QUICK))
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for every node started here")
    ap.add_argument("--list", action="store_true", help="print the clients and exit")
    args = ap.parse_args()
    if args.list:
        for c in CLIENTS:
            print("%-13s %s" % (c.name, c.label))
        return 0
    names = QUICK if args.quick else [c for c in args.clients.split(",") if c] or [c.name for c in CLIENTS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print("unknown client(s) %s; known: %s" % (", ".join(unknown), ", ".join(BY_NAME)))
        return 2
    clients = [BY_NAME[n] for n in names]
    args.cache = os.path.abspath(args.cache)
    os.makedirs(args.cache, exist_ok=True)
    # The brokers' temp dirs (data, logs) under the cache: a shared /tmp is cleaned by others.
    tempfile.tempdir = os.path.join(args.cache, "tmp")
    os.makedirs(tempfile.tempdir, exist_ok=True)

    targets = []
    if args.bootstrap:
        targets.append(Target("existing", "broker", True))
    else:
        if args.reference == "kafka":
            targets.append(Target("kafka", "Kafka 4.4", False))
        if args.broker and os.access(args.broker, os.X_OK):
            targets.append(Target("sluice", "Sluice", True))
            if args.cluster:
                targets.append(Target("cluster", "Sluice x%d" % args.cluster, True))
    if not targets:
        print("SKIPPED: no broker (pass --broker build/broker/sluice, --reference kafka or --bootstrap HOST:PORT)")
        return 77

    t_start = time.monotonic()
    # SIGTERM unwinds like Ctrl-C, so the `finally` blocks stop the nodes started here.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    runs = os.path.join(args.cache, "client-runs")
    os.makedirs(runs, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=runs)
    # Install every client first (once per cache), so broker time is not spent on downloads.
    prepared = {}
    for c in clients:
        t0 = time.monotonic()
        try:
            prepared[c.name] = ("ok", c.prepare(args.cache, workdir))
        except installers.Unavailable as e:
            prepared[c.name] = ("SKIP", str(e))
        except (installers.SetupFailed, ClientFailed) as e:
            prepared[c.name] = ("FAIL", "setup: %s" % e)
        print("# %-13s %s (%.1f s)" % (c.name, prepared[c.name][0] if prepared[c.name][0] != "ok" else "ready",
                                      time.monotonic() - t0), flush=True)

    results = {}  # (target key, client) -> {step: (state, detail)}
    infos, outputs, broker_problems = {}, {}, []
    stamp = "%d-%d" % (os.getpid(), int(time.time()))
    for t in targets:
        runnable = clients if t.key != "cluster" else [c for c in clients if c.name in args.cluster_clients.split(",")]
        try:
            t.start(args)
        except installers.Unavailable as e:
            for c in runnable:
                results[(t.key, c.name)] = {s: ("SKIP", "%s: %s" % (t.title, e)) for s in c.steps}
            continue
        except Exception as e:  # noqa: BLE001 - a broker that does not start fails its column
            if t.key == "kafka" and type(e).__name__ == "Unavailable":
                for c in runnable:
                    results[(t.key, c.name)] = {s: ("SKIP", "Kafka reference: %s" % e) for s in c.steps}
                t.stop(False)
                continue
            broker_problems.append("%s did not start: %s" % (t.title, e))
            for c in runnable:
                results[(t.key, c.name)] = {s: ("FAIL", "%s did not start: %s" % (t.title, e)) for s in c.steps}
            t.stop(True)
            continue
        print("# %s on %s" % (t.title, t.bootstrap), flush=True)
        failed_here = False
        try:
            failed_here = run_column(t, runnable, prepared, results, infos, outputs, stamp, workdir)
        finally:  # also on Ctrl-C: the nodes started here are stopped by PID
            broker_problems += t.stop(failed_here)

    # Streams: the Sluice run's final counts must equal Kafka's (at_least_once: output_equals_kafka;
    # exactly_once_v2: wordcount_eos, which the driver passed on its own counts, fails on a difference).
    for t in targets:
        if ("kafka", "streams") in results and (t.key, "streams") in results and t.key != "kafka":
            mine, ref = outputs.get((t.key, "streams")) or {}, outputs.get(("kafka", "streams")) or {}
            r = results[(t.key, "streams")]
            m, k = mine.get(""), ref.get("")
            if m is None or k is None:
                r["output_equals_kafka"] = ("SKIP", "no word-count output from %s" % ("Kafka" if k is None else t.title))
            elif m == k:
                r["output_equals_kafka"] = ("PASS", "the same %d final counts" % len(m.split(",")))
            else:
                r["output_equals_kafka"] = ("FAIL", "final counts differ: Kafka %s, %s %s" % (k[:200], t.title, m[:200]))
            m, k = mine.get("eos"), ref.get("eos")
            st, detail = r.get("wordcount_eos", ("", ""))
            if st == "PASS":
                if m is not None and k is not None and m != k:
                    r["wordcount_eos"] = ("FAIL", "final counts differ from Kafka 4.4's exactly_once_v2 run: Kafka %s, %s %s"
                                          % (k[:200], t.title, m[:200]))
                elif m is not None and k is not None:
                    r["wordcount_eos"] = ("PASS", detail + "; the same final counts as on Kafka 4.4")
                else:
                    r["wordcount_eos"] = ("PASS", detail + "; not compared (no Kafka 4.4 exactly_once_v2 output)")
    for (tk, cn), r in results.items():
        if cn == "streams":
            r.setdefault("output_equals_kafka", ("SKIP", "no Kafka 4.4 run to compare with (--reference kafka)")
                         if tk != "kafka" else ("SKIP", "this is the reference"))
    return report(args, targets, clients, results, infos, broker_problems, workdir, time.monotonic() - t_start)


def report(args, targets, clients, results, infos, broker_problems, workdir, secs):
    known = load_known()
    cols = [t for t in targets]
    # The last line counts the Sluice column(s); a run against the reference alone counts that one.
    counted = [t for t in cols if t.is_sluice] or cols
    print()
    print("%-13s %-20s " % ("client", "step") + " ".join("%-11s" % t.title for t in cols))
    passed = failed = skipped = 0
    unexpected = []
    notes = {}  # (client, state, reason) -> (columns, steps)
    for c in clients:
        for s in c.steps:
            cells = []
            for t in cols:
                st, detail = results.get((t.key, c.name), {}).get(s, ("-", ""))
                cell = st
                if t in counted and st != "-":
                    k = known.get((c.name, s)) or known.get(("*", s))
                    if st == "FAIL" and k is not None:
                        cell = "FAIL*"
                    if st == "PASS":
                        passed += 1
                    elif st == "FAIL":
                        failed += 1
                        if k is None:
                            unexpected.append((t.title, c.name, s))
                    else:
                        skipped += 1
                cells.append("%-11s" % cell)
                if st == "FAIL" or (st == "SKIP" and detail != "this is the reference"):
                    cols_steps = notes.setdefault((c.name, st, detail[:400]), ([], []))
                    for lst, v in ((cols_steps[0], t.title), (cols_steps[1], s)):
                        if v not in lst:
                            lst.append(v)
            print("%-13s %-20s " % (c.name, s) + " ".join(cells))
    print()
    print("# clients: %s" % "; ".join("%s = %s" % (c.name, infos.get(c.name) or c.label) for c in clients))
    if notes:
        print("# FAIL and SKIP reasons:")
        for (cn, st, detail), (columns, steps) in notes.items():
            print("  %-13s %s %s [%s]: %s" % (cn, st, ",".join(steps), ", ".join(columns), detail))
    for p in broker_problems:
        print("FAIL broker: %s" % p)
    if unexpected:
        print("# Sluice failures not in known_differences.txt: %s"
              % ", ".join("%s/%s/%s" % u for u in unexpected))
    print("# driver logs in %s; took %.0f s" % (workdir, secs))
    print("clients: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if unexpected or broker_problems:
        return 1
    return 77 if passed == 0 and failed == 0 else 0  # nothing could run at all: ctest SKIP


if __name__ == "__main__":
    sys.exit(main())
