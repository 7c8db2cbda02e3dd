#!/usr/bin/python3
"""Runs librdkafka's own test suite (its tests/ folder; 2.0.2 or 2.14.2) against Sluice.

The source comes from Debian's source package (`apt-get source librdkafka=<version>` through a private
apt configuration in <cache>/apt naming the deb-src suites that serve it: bookworm for 2.0.2, forky/sid
for 2.14.2; the system's apt sources are not touched), is built once into a cache folder outside the
repository's tracked files
(default: <repo>/build/compat-cache, or $SLUICE_COMPAT_CACHE), and nothing of it is ever committed.

    # full run of the non-local tests, starting a Sluice node (two with the noautocreate scenario)
    /usr/bin/python3 compat/librdkafka/run_suite.py --broker build/broker/sluice
    # against a 3-broker cluster started here (a ZooKeeper + three nodes, replication factor 3)
    /usr/bin/python3 compat/librdkafka/run_suite.py --broker build/broker/sluice --cluster 3
    # against a running broker
    /usr/bin/python3 compat/librdkafka/run_suite.py --bootstrap 127.0.0.1:9092
    # CI subset: the expectations file's `fast` tests
    /usr/bin/python3 compat/librdkafka/run_suite.py --broker build/broker/sluice --quick
    # some tests
    /usr/bin/python3 compat/librdkafka/run_suite.py --broker build/broker/sluice --tests 0001,0012
    # the same selection against Apache Kafka 4.4.0 (compat/kafka/kafka_reference.py) instead of Sluice
    /usr/bin/python3 compat/librdkafka/run_suite.py --reference kafka --tests 0001,0012
    # librdkafka 2.14.2's suite (Debian forky/sid source package), per-version lists in 2.14.2/
    /usr/bin/python3 compat/librdkafka/run_suite.py --version 2.14.2 --broker build/broker/sluice
    # side by side: the selection against Kafka 4.4.0, then against Sluice; both counts, the differences
    /usr/bin/python3 compat/librdkafka/run_suite.py --version 2.14.2 --broker build/broker/sluice --compare
    # over a SASL_SSL listener (PLAIN user admin; TLS certificates made per run; an authorizer for the ACL APIs),
    # both brokers: see README.md "Security mode" (--security ssl|sasl_plaintext|sasl_ssl, --mechanism, --acls)
    /usr/bin/python3 compat/librdkafka/run_suite.py --broker build/broker/sluice --compare --security sasl_ssl \\
        --tests 0001,0081,0097,0135

In every mode KAFKA_PATH is set to the generated Kafka 4.4.0 folder (<cache>/kafka-4.4.0, jars from
Maven Central, fetched once) and BROKERS to the bootstrap list, so the tests that run Kafka's own
command-line tools (kafka-topics.sh, kafka-acls.sh) can run; when the jars cannot be fetched those
tests stay N/A (with --reference kafka the whole run is skipped).

Output: one line per test (`PASS name (secs)`, `FAIL name (secs): first failure line`,
`SKIP name: why`, `N/A name: why` counted as skipped) and a last line `N passed, N failed, N skipped`.
With --retry-failed every failing test number not in known_failures.txt is run once more, alone (4 times
the per-test timeout), before the summary: a test that then passes is counted passed and named as flaky.
With --compare the selection runs against a Kafka 4.4.0 node first, then against Sluice; a table of the
tests whose outcome differs follows, then `kafka 4.4.0: N passed, N failed, N skipped` and, last,
Sluice's `N passed, N failed, N skipped`.
A failing test listed in known_failures.txt gets its reason appended (`[known: why]`); failures not listed
there are named on a line before the last.

Exit status: 0 when every test of expectations.txt that was selected passed; 1 when one of them did
not (or the runner could not be built); 77 when the source package cannot be obtained or there is
no broker, or with --reference kafka when Kafka's jars cannot be fetched (ctest SKIP_RETURN_CODE); 2 on
bad arguments.
"""
import argparse
import fcntl
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from suite_build import (DEFAULT_VERSION, VERSIONS, BuildFailed, Unavailable, build_runner, log,  # noqa: E402
                         obtain_source, with_ssl)
import suite_security  # noqa: E402
from suite_run import (last_lines, parse_test_table, read_list, run_number,  # noqa: E402
                       wait_for_cluster, write_test_conf)

SKIP_RC = 77
# not_applicable.txt reasons starting with this are N/A on a single node only (run with --cluster 3).
CLUSTER_ONLY_REASON = "needs a 3-broker cluster"
# not_applicable.txt reasons ending with this are N/A only when KAFKA_PATH cannot be provided.
KAFKA_PATH_REASON = "via KAFKA_PATH"
# not_applicable.txt reasons starting with this run with --security ssl or sasl_ssl (a TLS listener).
TLS_REASON = "needs an SSL listener"
# not_applicable.txt reasons starting with this run with --acls (a broker with an authorizer).
ACL_REASON = "needs ACLs"
# --retry-failed: the second run of a failed test number may take this many times --per-test-timeout.
RETRY_TIMEOUT_FACTOR = 4


def list_path(given, version, basename):
    """The per-version list file: the folder's own files for 2.0.2, <version>/<file> for the others."""
    if given:
        return given
    if version == DEFAULT_VERSION:
        return os.path.join(HERE, basename)
    return os.path.join(HERE, version, basename)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--version", choices=sorted(VERSIONS), default=DEFAULT_VERSION,
                    help="librdkafka version whose suite runs (default %s)" % DEFAULT_VERSION)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""),
                    help="sluice executable: start single nodes for the run")
    ap.add_argument("--bootstrap", default="", help="test a running broker (default scenario only)")
    ap.add_argument("--reference", choices=["kafka"], default="",
                    help="start Apache Kafka 4.4.0 nodes (compat/kafka/kafka_reference.py) instead of Sluice")
    ap.add_argument("--compare", action="store_true",
                    help="run the selection against Kafka 4.4.0 nodes, then against Sluice (--broker, "
                         "--cluster), and print both counts and the tests whose outcome differs")
    ap.add_argument("--cluster", type=int, default=0, metavar="N",
                    help="start a ZooKeeper and N Sluice brokers (cluster mode) per scenario instead of "
                         "single nodes; topics get replication factor min(3, N)")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE",
                                                       os.path.join(REPO, "build", "compat-cache")),
                    help="where the source is unpacked and built (never inside tracked files)")
    ap.add_argument("--tests", default="", help="comma-separated test numbers or names (default: all non-local)")
    ap.add_argument("--subtests", default="",
                    help="SUBTESTS for the runner: only the subtests whose name contains this string run "
                         "(e.g. one do_test_... function of 0081_admin)")
    ap.add_argument("--quick", action="store_true", help="only the expectations file's `fast` tests (CI)")
    ap.add_argument("--runner-quick", action="store_true",
                    help="pass -Q to the runner: less data, and every SUB_TEST() that is not "
                         "SUB_TEST_QUICK() is skipped while its test still reports PASSED (so off by default)")
    ap.add_argument("--kafka-version", default=os.environ.get("TEST_KAFKA_VERSION", ""),
                    help="TEST_KAFKA_VERSION: the Kafka feature level the broker claims (default: 3.9.0 "
                         "for 2.0.2, 4.0.0 for 2.14.2)")
    ap.add_argument("--group-protocol", choices=["classic", "consumer"],
                    default=os.environ.get("TEST_CONSUMER_GROUP_PROTOCOL") or None,
                    help="TEST_CONSUMER_GROUP_PROTOCOL for 2.14.2's consumers (default unset = classic; "
                         "consumer = KIP-848, which Sluice does not have yet)")
    ap.add_argument("--per-test-timeout", type=int, default=180, help="seconds per test name (default 180)")
    ap.add_argument("--overall-timeout", type=int, default=3600,
                    help="seconds for the whole run, per broker with --compare (default 3600)")
    ap.add_argument("--retry-failed", action="store_true",
                    help="run every failing test number not in known_failures.txt once more, alone, before the "
                         "summary (with %d times the per-test timeout)" % RETRY_TIMEOUT_FACTOR)
    ap.add_argument("--expectations", default="", help="default: expectations.txt of the version")
    ap.add_argument("--not-applicable", default="", help="default: not_applicable.txt of the version")
    ap.add_argument("--known-failures", default="", help="default: known_failures.txt of the version")
    ap.add_argument("--jobs", type=int, default=2, help="make -j for the one-time build (default 2)")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config for the nodes started here (repeatable)")
    ap.add_argument("--security", choices=suite_security.PROTOCOLS, default="",
                    help="give every node a second listener of this protocol (TLS: a throwaway CA, "
                         "ssl.client.auth=required; SASL: the mechanisms PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and "
                         "point test.conf's bootstrap.servers, security.protocol, ssl.* and sasl.* at it, as trivup "
                         "does; 2.0.2 is then built with OpenSSL in its own folder (librdkafka-2.0.2-ssl)")
    ap.add_argument("--mechanism", choices=suite_security.MECHANISMS, default="PLAIN",
                    help="sasl.mechanisms of test.conf with --security sasl_* (default PLAIN; SCRAM users are "
                         "created with Kafka's kafka-configs.sh through the PLAINTEXT listener)")
    ap.add_argument("--acls", action=argparse.BooleanOptionalAction, default=None,
                    help="start the nodes with an authorizer (Sluice: kafka.security.authorizer.AclAuthorizer, "
                         "Kafka: StandardAuthorizer) and super.users = the test user, the client certificate's "
                         "principal and User:ANONYMOUS, so the ACL APIs are served (default: on with --security)")
    ap.add_argument("--build-only", action="store_true", help="obtain and build, run nothing")
    ap.add_argument("--verbose", action="store_true", help="print the runner's output of failing tests")
    args = ap.parse_args()
    if args.reference and (args.cluster or args.bootstrap):
        ap.error("--reference kafka starts single Kafka nodes: not with --cluster or --bootstrap")
    if args.compare and (args.reference or args.bootstrap):
        ap.error("--compare runs Kafka 4.4.0 and then Sluice (--broker): not with --reference or --bootstrap")
    if args.security and args.bootstrap:
        ap.error("--security configures the nodes started here: not with --bootstrap")
    if args.acls is None:
        args.acls = bool(args.security)
    version = VERSIONS[args.version]
    if args.security:
        version = with_ssl(version)  # TLS, SCRAM and OAUTHBEARER need librdkafka built with OpenSSL
    args.kafka_version = args.kafka_version or version.kafka_version
    args.expectations = list_path(args.expectations, args.version, "expectations.txt")
    args.not_applicable = list_path(args.not_applicable, args.version, "not_applicable.txt")
    args.known_failures = list_path(args.known_failures, args.version, "known_failures.txt")
    args.cache = os.path.abspath(args.cache)  # the runner runs in the source tests/ folder

    os.makedirs(args.cache, exist_ok=True)
    lock = open(os.path.join(args.cache, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one build / unpack at a time per cache
    logf = open(os.path.join(args.cache, "obtain-build.log"), "a")
    try:
        src = obtain_source(args.cache, version, logf)
        runner = build_runner(src, version, args.jobs, logf)
    except Unavailable as e:
        log("SKIPPED: librdkafka %s source package cannot be obtained: %s" % (version.upstream, e))
        return SKIP_RC
    except BuildFailed as e:
        log("ERROR: building librdkafka's test-runner: %s\n(full log: %s)" % (e, logf.name))
        return 1
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
    # KAFKA_PATH for the tests that run Kafka's CLI tools, in every mode (the reference's jars).
    sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
    import kafka_reference
    kafka_path = None
    try:
        kafka_path, _ = kafka_reference.prepare(args.cache)
    except (kafka_reference.Unavailable, kafka_reference.ReferenceFailed) as e:
        if args.reference or args.compare:
            log("%s: Kafka reference: %s" % ("SKIPPED" if isinstance(e, kafka_reference.Unavailable) else "ERROR", e))
            return SKIP_RC if isinstance(e, kafka_reference.Unavailable) else 1
        log("# no KAFKA_PATH (tests needing Kafka's CLI tools stay N/A): %s" % e)
    if args.build_only:
        log("# test-runner: %s" % runner)
        if kafka_path:
            log("# KAFKA_PATH=%s" % kafka_path)
        return 0

    table = parse_test_table(src)
    expectations = read_list(args.expectations, with_reason=False)

    # Selection: non-local, non-manual tests.
    selected = [t for t in table if "TEST_F_LOCAL" not in t.flags and "TEST_F_MANUAL" not in t.flags]
    if args.quick:
        fast = {n for n, tags in expectations.items() if "fast" in tags.split()}
        selected = [t for t in selected if t.name in fast]
    if args.tests:
        wanted = [w.strip() for w in args.tests.split(",") if w.strip()]
        selected = [t for t in selected if any(t.name == w or t.number == w for w in wanted)]
    if not selected:
        log("no tests selected")
        return 2

    if not args.bootstrap and not args.reference and (not args.broker or not os.access(args.broker, os.X_OK)):
        log("SKIPPED: no broker (pass --broker build/broker/sluice or --bootstrap HOST:PORT)")
        return SKIP_RC

    stamp = time.strftime("%Y%m%d-%H%M%S")
    if args.compare:
        ref = run_target(args, version, runner, selected, expectations, kafka_path, kafka_reference,
                         "kafka", os.path.join(args.cache, "runs", stamp + "-kafka"))
        sl = run_target(args, version, runner, selected, expectations, kafka_path, kafka_reference,
                        "sluice", os.path.join(args.cache, "runs", stamp + "-sluice"))
        log("")
        log("# side by side (librdkafka %s; only the tests whose outcome differs):" % version.upstream)
        log("# %-48s %-6s %s" % ("test", "kafka", "sluice"))
        for t in selected:
            a, b = ref.outcome.get(t.name, "-"), sl.outcome.get(t.name, "-")
            if a != b:
                log("# %-48s %-6s %s" % (t.name, a, b))
        both = [t.name for t in selected if ref.outcome.get(t.name) == "FAIL" and sl.outcome.get(t.name) == "FAIL"]
        if both:
            log("# failing on both: %s" % " ".join(both))
        log("kafka %s: %s" % (kafka_reference.KAFKA_VERSION, ref.counts()))
        log("sluice %s: %s" % ("%d-broker cluster" % args.cluster if args.cluster else "single node", sl.counts()))
        log(sl.counts())
        return 1 if sl.expected_not_passing else 0
    target = "bootstrap" if args.bootstrap else ("kafka" if args.reference else "sluice")
    res = run_target(args, version, runner, selected, expectations, kafka_path, kafka_reference, target,
                     os.path.join(args.cache, "runs", stamp))
    log(res.counts())
    return 1 if res.expected_not_passing else 0


class Result:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.outcome = {}
        self.expected_not_passing = []

    def counts(self):
        return "%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped)


def run_target(args, version, runner, selected, expectations, kafka_path, kafka_reference, target, run_dir):
    """Runs the selection against one target ("sluice": nodes started here, "kafka": Kafka 4.4.0 nodes,
    "bootstrap": a running broker); prints one line per test and the list notes; returns a Result."""
    deadline = time.monotonic() + args.overall_timeout
    reference = target == "kafka"
    cluster = 0 if reference else args.cluster
    na = read_list(args.not_applicable, with_reason=True)
    known = read_list(args.known_failures, with_reason=True)
    slow = {}
    for name, rest in read_list(list_path("", args.version, "timeouts.txt"), with_reason=True).items():
        slow[name] = int(rest.split()[0])
    os.makedirs(run_dir, exist_ok=True)
    sec = None
    if args.security or args.acls:
        certs = suite_security.Certs(os.path.join(run_dir, "certs")) if args.security else None
        sec = suite_security.Security(args.security or "plaintext", args.mechanism, args.acls, certs)
    log("# librdkafka %s test suite against %s; TEST_KAFKA_VERSION=%s%s; runner mode %s; KAFKA_PATH=%s; logs in %s"
        % (version.upstream, args.bootstrap or ("a %d-broker Sluice cluster started here" % cluster
                                                if cluster else "a Kafka %s node started here"
                                                % kafka_reference.KAFKA_VERSION if reference
                                                else "a Sluice node started here"),
           args.kafka_version,
           ("; TEST_CONSUMER_GROUP_PROTOCOL=%s" % args.group_protocol if args.group_protocol else "")
           + ("; SUBTESTS=%s" % args.subtests if args.subtests else ""),
           "-Q (quick)" if args.runner_quick else "full", kafka_path or "(none)", run_dir))
    if sec is not None:
        log("# security: %s" % sec.describe())

    res = Result()
    outcome = res.outcome
    texts = {}

    def report(name, state, text, recount_from=None):
        if recount_from == "FAIL":
            res.failed -= 1
        outcome[name] = state
        if state == "PASS":
            res.passed += 1
        elif state == "FAIL":
            res.failed += 1
            if name in known:
                text += " [known: %s]" % known[name]
        else:
            res.skipped += 1
        log("%-4s %s%s" % (state, name, text))

    # Static skips first: N/A list, sockem, upstream known issues.
    runnable = []
    for t in selected:
        if t.name in na and not (cluster >= 3 and na[t.name].startswith(CLUSTER_ONLY_REASON)) \
                and not (kafka_path and na[t.name].endswith(KAFKA_PATH_REASON)) \
                and not (sec is not None and sec.tls and na[t.name].startswith(TLS_REASON)) \
                and not (args.acls and na[t.name].startswith(ACL_REASON)):
            report(t.name, "N/A", ": " + na[t.name])
        elif "TEST_F_SOCKEM" in t.flags:
            report(t.name, "N/A", ": needs sockem (librdkafka's socket emulator: delays/drops by test)")
        elif "TEST_F_KNOWN_ISSUE" in t.flags and "WIN32" not in t.flags and "OSX" not in t.flags:
            report(t.name, "SKIP", ": upstream known issue" + (" (%s)" % t.extra if t.extra else ""))
        elif t.scenario != "default" and "default" not in t.scenario.split(",") and args.bootstrap:
            report(t.name, "SKIP", ": needs scenario %s (a broker with auto.create.topics.enable=false);"
                   " run with --broker to get one" % t.scenario)
        else:
            runnable.append(t)

    # Group by (scenario, number): the runner selects by number.
    groups = []
    for t in runnable:
        sc = "default" if "default" in t.scenario.split(",") else t.scenario
        key = (sc, t.number)
        if not groups or groups[-1][0] != key:
            groups.append((key, []))
        groups[-1][1].append(t)
    groups.sort(key=lambda g: (g[0][0] != "default", g[0]))

    brokers = {}  # scenario -> list of Broker (one, or the cluster's N)
    plain_bootstrap = {}  # scenario -> the PLAINTEXT listeners (BROKERS for Kafka's CLI tools); --security
    secure_bootstrap = {}  # scenario -> the --security listeners (test.conf's bootstrap.servers)
    zookeepers = {}  # scenario -> ZooKeeper (cluster mode)
    conf_paths = {}
    kind = "Kafka" if reference else "Sluice"

    def stop_scenario(sc):
        """Stops the nodes (and ZooKeeper) of one scenario; returns True when one had died or failed."""
        bad_any = False
        for b in brokers.pop(sc, []):
            alive = b.alive()
            try:
                rc = b.stop() if alive else None
            except RuntimeError as e:
                rc = str(e)
            bad = (not alive) or rc != 0
            if bad:
                log("# %s node %s (%s) %s; log kept in %s"
                    % (kind, b.bootstrap, sc, "had died" if not alive else "exited %s on SIGTERM" % rc, b.log_path))
            bad_any = bad_any or bad
            b.close(failed=bad or res.failed > 0)
        zk = zookeepers.pop(sc, None)
        if zk is not None:
            zk.close(failed=bad_any)
        return bad_any

    def bootstrap_for(scenario):
        if args.bootstrap:
            return args.bootstrap
        if scenario not in brokers:
            from sluice_harness import Broker, ZooKeeper
            # librdkafka's scenarios/*.json: num_partitions 4. Everything else is left at the
            # broker's defaults, as trivup's server.properties template does (so
            # group.initial.rebalance.delay.ms is Kafka's 3000; --override to change it).
            overrides = {"num.partitions": 4}
            if scenario == "noautocreate":
                overrides["auto.create.topics.enable"] = "false"
            if cluster:
                # One scenario's cluster at a time (2 cores): the previous one is stopped first.
                for sc in list(brokers):
                    stop_scenario(sc)
                zk = ZooKeeper()
                zk.start()
                zookeepers[scenario] = zk
                rf = min(3, cluster)
                overrides.update({"zookeeper.connect": zk.connect + "/sluice",
                                  "zookeeper.session.timeout.ms": 10000,
                                  "default.replication.factor": rf,
                                  "offsets.topic.replication.factor": rf,
                                  # a node restarted after a crash waits for its old session to expire
                                  "sluice.zookeeper.registration.retry.ms": 15000})
            for kv in args.override:
                k, _, v = kv.partition("=")
                overrides[k] = v
            nodes = []
            secure = []
            for i in range(1, max(1, cluster) + 1):
                o = dict(overrides)
                if cluster:
                    o["broker.id"] = i
                    # 0101_fetch_from_follower: racks named as its client.rack ("RACK<broker id>") and Kafka's
                    # rack-aware read-replica selector (KIP-392)
                    o.setdefault("broker.rack", "RACK%d" % i)
                    o.setdefault("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector")
                if reference:
                    b = kafka_reference.KafkaReference(args.cache, o)
                else:
                    b = Broker(args.broker, o)
                if sec is not None and sec.protocol != "plaintext":
                    from sluice_harness import pick_free_port
                    taken = {b.port, getattr(b, "controller_port", None)} | set(secure)
                    sp = pick_free_port()
                    while sp in taken:
                        sp = pick_free_port()
                    secure.append(sp)
                    # the security settings first, then --override wins
                    so = sec.broker_overrides(b.port, sp, reference, getattr(b, "controller_port", None))
                    so.update(b.overrides)
                    b.overrides = so
                elif sec is not None and sec.acls:
                    b.overrides.update({k: v for k, v in sec.broker_overrides(b.port, 0, reference, 0).items()
                                        if k in ("authorizer.class.name", "super.users",
                                                 "allow.everyone.if.no.acl.found")})
                nodes.append(b)
            brokers[scenario] = nodes
            for b in nodes:
                b.start(ready_timeout=90 if reference else 30)
            from sluice_harness import port_accepts
            for sp in secure:  # the secure listener accepts before the tests start (bounded)
                until = time.monotonic() + 20
                while not port_accepts(sp) and time.monotonic() < until:
                    time.sleep(0.1)
            plain_bootstrap[scenario] = ",".join(b.bootstrap for b in nodes)
            secure_bootstrap[scenario] = ",".join("127.0.0.1:%d" % sp for sp in secure) or plain_bootstrap[scenario]
            if cluster:
                wait_for_cluster(",".join(b.bootstrap for b in nodes), cluster)
                log("# scenario %s: %d Sluice brokers on %s (ZooKeeper %s; data %s)"
                    % (scenario, len(nodes), ", ".join(b.bootstrap for b in nodes), zookeepers[scenario].connect,
                       ", ".join(b.dir for b in nodes)))
            else:
                log("# scenario %s: %s node on %s (data %s)" % (scenario, kind, nodes[0].bootstrap, nodes[0].dir))
            if secure:
                log("# scenario %s: test.conf bootstrap.servers=%s (%s listeners); PLAINTEXT %s for BROKERS"
                    % (scenario, secure_bootstrap[scenario], sec.listener, plain_bootstrap[scenario]))
            if sec is not None:
                sec.add_scram_user(kafka_path, plain_bootstrap[scenario])
        return secure_bootstrap[scenario]

    def run_group(scenario, number, tests, logpath, retry_of=None):
        bs = bootstrap_for(scenario)
        if scenario not in conf_paths:
            conf_paths[scenario] = os.path.join(run_dir, "test-%s.conf" % scenario)
        # Every time: in cluster mode a scenario's nodes are restarted on new ports when it comes back
        # (one scenario's cluster at a time), e.g. for --retry-failed after the noautocreate tests.
        write_test_conf(conf_paths[scenario], bs, sec.test_conf() if sec is not None and args.security else None)
        # A retry gets RETRY_TIMEOUT_FACTOR times the per-test timeout: some long tests (2.14.2's 0113
        # runs 40 subtests, 5-10 min) only need more time than a first pass can give every test.
        per_test = args.per_test_timeout * (RETRY_TIMEOUT_FACTOR if retry_of is not None else 1)
        # timeouts.txt: tests that need more than --per-test-timeout even on an idle machine.
        budget = sum(max(per_test, slow.get(t.name, 0)) for t in tests)
        tmo = min(budget, max(10, int(deadline - time.monotonic())))
        # BROKERS (Kafka's CLI tools, which get no security settings): the PLAINTEXT listeners
        extra_env = {"KAFKA_PATH": kafka_path, "BROKERS": plain_bootstrap.get(scenario, bs)} if kafka_path else {}
        if sec is not None and args.security:
            extra_env.update(sec.env())
        if args.group_protocol:
            extra_env["TEST_CONSUMER_GROUP_PROTOCOL"] = args.group_protocol
        if args.subtests:
            extra_env["SUBTESTS"] = args.subtests
        results, note, secs, text = run_number(runner, number, scenario, conf_paths[scenario],
                                               args.kafka_version, tmo, args.runner_quick, logpath,
                                               extra_env, version.debian)
        for t in tests:
            if retry_of is not None and (retry_of.get(t.name) != "FAIL" or t.name in known):
                continue  # only the failed, not known ones of a retried number are re-reported
            st, s, why = results.get(t.name, (None, secs, ""))
            prefix = " (alone, 2nd run)" if retry_of is not None else ""
            again = "FAIL" if retry_of is not None else None
            if st == "PASSED" and not note:
                report(t.name, "PASS", "%s (%.2f s)" % (prefix, s), again)
            elif st == "SKIPPED" or st == "DNS":
                report(t.name, "SKIP", "%s: %s" % (prefix, why or "skipped by the runner"), again)
            elif st == "FAILED":
                report(t.name, "FAIL", "%s (%.2f s): %s" % (prefix, s, why or last_lines(text)), again)
            else:
                report(t.name, "FAIL", "%s (%.1f s): %s; last output: %s"
                       % (prefix, secs, note or "no result from the runner", last_lines(text)), again)
            if outcome[t.name] == "FAIL" and args.verbose:
                print(text[-4000:])
        for sb in brokers.get(scenario, []):
            if not sb.alive():
                log("# the %s node %s died during %s; restarting it (log: %s)"
                    % (kind, sb.bootstrap, number, sb.log_path))
                sb.keep = True
                sb.proc = None
                sb.start(ready_timeout=90 if reference else 30)

    flaky = []
    try:
        for (scenario, number), tests in groups:
            if time.monotonic() > deadline:
                for t in tests:
                    report(t.name, "SKIP", ": overall timeout of %d s reached" % args.overall_timeout)
                continue
            run_group(scenario, number, tests, os.path.join(run_dir, "%s-%s.log" % (number, scenario)))
        if args.retry_failed:
            for (scenario, number), tests in groups:
                first = {t.name: outcome.get(t.name) for t in tests}
                if not any(st == "FAIL" and n not in known for n, st in first.items()):
                    continue  # nothing failed, or only tests of known_failures.txt
                if time.monotonic() > deadline:
                    log("# overall timeout reached: %s not retried" % number)
                    continue
                log("# retrying %s alone (%s)" % (number, " ".join(n for n, st in first.items()
                                                                  if st == "FAIL" and n not in known)))
                run_group(scenario, number, tests, os.path.join(run_dir, "%s-%s.retry.log" % (number, scenario)),
                          retry_of=first)
                flaky += [n for n, st in first.items() if st == "FAIL" and outcome[n] != "FAIL"]
    finally:
        for sc in list(brokers):
            stop_scenario(sc)

    new_passes = []
    for name, tags in expectations.items():
        if name in outcome and outcome[name] != "PASS":
            res.expected_not_passing.append(name)
    for name, st in outcome.items():
        if st == "PASS" and name not in expectations:
            new_passes.append(name)
    if flaky:
        log("# flaky (failed, then passed or skipped when run again alone): %s" % " ".join(flaky))
    if new_passes and not (args.compare and reference):  # the lists describe Sluice
        log("# passing but not in %s (add them): %s"
            % (os.path.relpath(args.expectations, HERE), " ".join(new_passes)))
    unknown_failures = [n for n, st in outcome.items() if st == "FAIL" and n not in known]
    if unknown_failures:
        log("# failing, not in %s: %s" % (os.path.relpath(args.known_failures, HERE), " ".join(unknown_failures)))
    if res.expected_not_passing:
        log("# REGRESSION: expected to pass but did not: %s" % " ".join(res.expected_not_passing))
    return res


if __name__ == "__main__":
    sys.exit(main())
