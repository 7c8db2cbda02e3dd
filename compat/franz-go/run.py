#!/usr/bin/python3
"""Runs franz-go's own kgo integration tests (pkg/kgo, `go test`) against Sluice and Apache Kafka 4.4.

The franz-go module (pinned in versions.txt, with its go.sum hash) is fetched with `go mod download`
into <cache>/franz-go/gomod through the Go module proxy, copied to a writable scratch folder
(<cache>/franz-go/src-<version>), and its kgo test binary is built once (`go test -c ./pkg/kgo`).
Nothing of franz-go is committed. Each top-level Test function of `-test.list .` then runs as its
own process (`kgo.test -test.run '^Name$'`, the same as `go test -run '^Name$'` without relinking
every time) with a per-test timeout, so one hang does not end the run.

    # Sluice single node (started here on a free loopback port)
    /usr/bin/python3 compat/franz-go/run.py --broker build/broker/sluice
    # a 3-broker Sluice cluster on a ZooKeeper (tests/integration/sluice_harness.py), KGO_TEST_RF=3
    /usr/bin/python3 compat/franz-go/run.py --broker build/broker/sluice --cluster 3
    # Apache Kafka 4.4.0 only (compat/kafka/kafka_reference.py)
    /usr/bin/python3 compat/franz-go/run.py --reference kafka
    # side by side: a Kafka 4.4.0 column, then a Sluice column (its summary is the last line)
    /usr/bin/python3 compat/franz-go/run.py --reference kafka --broker build/broker/sluice
    # an already running broker, some tests
    /usr/bin/python3 compat/franz-go/run.py --bootstrap 127.0.0.1:9092 --tests 'Group|Txn'

Environment given to every test (franz-go's helpers_test.go): KGO_SEEDS (the bootstrap list),
KGO_TEST_RF (1 for one node, min(3, N) for a cluster), KGO_TEST_RECORDS (--records), KGO_TEST_UNSAFE
(--unsafe only), KGO_TEST_CHAOS (--chaos only), KGO_TEST_STABLE_FETCH=true (as franz-go's CI; not read by v1.21), KGO_LOG_LEVEL
(--log-level). No TLS / SCRAM: the tests needing them skip themselves.

Output: one line per test and column while running, then a table test x broker (PASS / FAIL /
SKIP / TIMEOUT; `FAIL>PASS` = failed, then passed when rerun alone), the failures split into known
(known_failures.txt) and unexpected, and per broker a line `N passed, N failed, N skipped` (TIMEOUT
counts as failed, FAIL>PASS as passed), the Sluice one last. Logs: <cache>/franz-go/runs/<stamp>/.
Exit status: 0 when no Sluice test failed unexpectedly, 1 otherwise, 77 when nothing could run
(no Go toolchain, the module proxy cannot be reached, no broker).
"""
import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
sys.path.insert(0, os.path.join(REPO, "compat", "librdkafka"))

SKIP_RC = 77
TAIL_LINES = 40


def log(msg=""):
    print(msg, flush=True)


class Unavailable(Exception):
    """Something needed cannot be had here (toolchain, proxy): the run is skipped."""


# ---------------------------------------------------------------------------------------------
# franz-go: download, scratch copy, test binary


def read_pin(path):
    """versions.txt -> (module, version, h1 hash)."""
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) >= 2:
                return line[0], line[1], (line[2] if len(line) > 2 else "")
    raise SystemExit("no module line in %s" % path)


def go_env(cache):
    base = os.path.join(cache, "franz-go")
    env = dict(os.environ)
    env.update({"GOMODCACHE": os.path.join(base, "gomod"), "GOPATH": os.path.join(base, "gopath"),
                "GOCACHE": os.path.join(base, "gocache"), "GOFLAGS": "-modcacherw -buildvcs=false",
                "GOTOOLCHAIN": "local", "GO111MODULE": "on", "GOWORK": "off"})
    return env


def prepare_franz(cache, module, version, want_sum, logf):
    """Returns (test binary, package dir) for franz-go `version`: downloaded, copied, built once."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        raise Unavailable("no Go toolchain (`go` not on PATH)")
    base = os.path.join(cache, "franz-go")
    os.makedirs(base, exist_ok=True)
    src = os.path.join(base, "src-" + version)
    binary = os.path.join(base, "kgo-%s.test" % version)
    pkg = os.path.join(src, "pkg", "kgo")
    env = go_env(cache)
    with open(os.path.join(base, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download / build per cache at a time
        if not os.path.exists(os.path.join(src, ".sluice-copied")):
            with tempfile.TemporaryDirectory(prefix="franz-dl-") as tmp:  # outside any module
                p = subprocess.run([go, "mod", "download", "-json", "%s@%s" % (module, version)], cwd=tmp, env=env,
                                   capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
            out = p.stdout.decode("utf-8", "replace")
            logf.write("==== go mod download %s@%s (exit %d)\n%s\n%s\n"
                       % (module, version, p.returncode, out, p.stderr.decode("utf-8", "replace")))
            logf.flush()
            try:
                info = json.loads(out)
            except ValueError:
                info = {}
            if p.returncode != 0 or not info.get("Dir"):
                raise Unavailable("go mod download %s@%s failed: %s" % (module, version,
                                                                         (info.get("Error") or p.stderr.decode(
                                                                             "utf-8", "replace")).strip()[-400:]))
            if want_sum and info.get("Sum") != want_sum:
                raise SystemExit("ERROR: %s@%s has hash %s, versions.txt pins %s"
                                 % (module, version, info.get("Sum"), want_sum))
            shutil.rmtree(src, ignore_errors=True)
            shutil.copytree(info["Dir"], src)
            for root, dirs, files in os.walk(src):  # the module cache is read-only
                for n in dirs + files:
                    os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
            open(os.path.join(src, ".sluice-copied"), "w").close()
            if os.path.exists(binary):
                os.remove(binary)
        if not os.path.exists(binary):
            log("# building the kgo test binary (go test -c ./pkg/kgo; a few minutes on 2 busy cores)")
            t0 = time.monotonic()
            p = subprocess.run([go, "test", "-c", "-o", binary, "./pkg/kgo"], cwd=src, env=env,
                               capture_output=True, timeout=1800, stdin=subprocess.DEVNULL)
            logf.write("==== go test -c ./pkg/kgo (exit %d, %.0f s)\n%s%s\n"
                       % (p.returncode, time.monotonic() - t0, p.stdout.decode("utf-8", "replace"),
                          p.stderr.decode("utf-8", "replace")))
            logf.flush()
            if p.returncode != 0:
                err = p.stderr.decode("utf-8", "replace")
                if "proxy.golang.org" in err or "dial tcp" in err or "lookup " in err:
                    raise Unavailable("building kgo tests needs the module proxy: %s" % err.strip()[-400:])
                raise SystemExit("ERROR: go test -c ./pkg/kgo failed (log %s):\n%s" % (logf.name, err[-2000:]))
    return binary, pkg


def list_tests(binary, pkg):
    p = subprocess.run([binary, "-test.list", "."], cwd=pkg, capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    names = [l.strip() for l in p.stdout.decode().splitlines() if re.match(r"^(Test|Example|Fuzz)\w*$", l.strip())]
    return [n for n in names if n.startswith("Test")]


# ---------------------------------------------------------------------------------------------
# Known failures


def read_known(path):
    """known_failures.txt: `<TestName> [single|cluster] <reason>` -> {name: (mode or "", reason)}."""
    known = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                parts = line.split(None, 1)
                rest = parts[1] if len(parts) > 1 else ""
                mode = ""
                m = re.match(r"^\[(single|cluster)\]\s*(.*)$", rest)
                if m:
                    mode, rest = m.group(1), m.group(2)
                known.setdefault(parts[0], []).append((mode, rest))
    except OSError:
        pass
    return known


def known_reason(known, name, target):
    for mode, reason in known.get(name, []):
        if not mode or mode == target.mode:
            return reason
    return None


# ---------------------------------------------------------------------------------------------
# Brokers (one column each)


class Target:
    """A column: Kafka 4.4.0, a Sluice node, a Sluice cluster (started here) or an existing broker."""

    def __init__(self, key, title, is_sluice, mode):
        self.key, self.title, self.is_sluice, self.mode = key, title, is_sluice, mode
        self.nodes, self.zk, self.bootstrap, self.rf = [], None, "", 1
        self.notes = []

    def start(self, args):
        if self.key == "existing":
            self.bootstrap, self.rf = args.bootstrap, args.rf or 1
            return
        overrides = {}
        if self.key == "kafka":
            # What franz-go's own CI gives Kafka besides replication factors 1 (kafka_reference writes
            # those): every group protocol, a share state topic of 5 partitions, delivery limit 10.
            overrides.update({"group.coordinator.rebalance.protocols": "classic,consumer,share",
                              "share.coordinator.state.topic.num.partitions": 5,
                              "group.share.delivery.count.limit": 10})
        for kv in args.override:
            k, _, v = kv.partition("=")
            overrides[k] = v
        if self.key == "kafka":
            import kafka_reference
            self.nodes = [kafka_reference.KafkaReference(args.cache, overrides)]
        elif self.key == "sluice":
            from sluice_harness import Broker
            self.nodes = [Broker(args.broker, overrides)]
        else:  # a ZooKeeper cluster, as compat/librdkafka/run_suite.py --cluster
            from sluice_harness import Broker, ZooKeeper
            if not ZooKeeper.available():
                raise Unavailable("ZooKeeper is not installed (Debian's zookeeper package)")
            n = args.cluster
            self.rf = min(3, n)
            self.zk = ZooKeeper()
            self.zk.start()
            overrides.update({"zookeeper.connect": self.zk.connect + "/sluice", "zookeeper.session.timeout.ms": 10000,
                              "default.replication.factor": self.rf, "offsets.topic.replication.factor": self.rf,
                              "sluice.zookeeper.registration.retry.ms": 15000})
            self.nodes = [Broker(args.broker, dict(overrides, **{"broker.id": i})) for i in range(1, n + 1)]
        for b in self.nodes:
            b.start(ready_timeout=90 if self.key == "kafka" else 30)
        self.bootstrap = ",".join(b.bootstrap for b in self.nodes)
        if self.key == "cluster":
            from suite_run import wait_for_cluster
            wait_for_cluster(self.bootstrap, args.cluster)
        log("# %s on %s (data %s)" % (self.title, self.bootstrap, ", ".join(b.dir for b in self.nodes)))

    def revive(self, after):
        """Restarts nodes that died (noted); returns True when one had."""
        died = False
        for b in self.nodes:
            if not b.alive():
                died = True
                self.notes.append("node %s died during %s (log %s); restarted" % (b.bootstrap, after, b.log_path))
                log("# %s: node %s died during %s; restarting it (log %s)" % (self.title, b.bootstrap, after,
                                                                             b.log_path))
                b.keep = True
                b.proc = None
                try:
                    b.start(ready_timeout=90 if self.key == "kafka" else 30)
                except Exception as e:  # noqa: BLE001 - reported; the following tests will fail
                    self.notes.append("restart of %s failed: %s" % (b.bootstrap, e))
        return died

    def stop(self, failed):
        for b in self.nodes:
            alive = b.alive()
            try:
                rc = b.stop() if alive else None
            except (RuntimeError, AssertionError) as e:
                rc = str(e)
            if not alive or rc != 0:
                self.notes.append("node %s %s (log %s)" % (b.bootstrap, "was not running at the end" if not alive
                                                           else "exit status %s on SIGTERM" % rc, b.log_path))
            b.close(failed=failed or not alive or rc != 0)
        self.nodes = []
        if self.zk is not None:
            self.zk.close(failed=failed)
            self.zk = None


# ---------------------------------------------------------------------------------------------
# One test


CURRENT = {"proc": None}


def kill_group(proc):
    """Ends the test process we started, and its process group (the binary's children), by its PID."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def run_one(binary, pkg, name, env, timeout, logpath, raw_pattern=False):
    """Runs one top-level test; returns (state, seconds, output text)."""
    go_timeout = max(30, timeout - 15)  # Go's own timeout first: it prints where the test hung
    cmd = [binary, "-test.run", name if raw_pattern else "^%s$" % name, "-test.v", "-test.count", "1", "-test.timeout", "%ds" % go_timeout]
    t0 = time.monotonic()
    with open(logpath, "wb") as out:
        out.write(("$ %s\n# KGO_SEEDS=%s KGO_TEST_RF=%s KGO_TEST_RECORDS=%s\n"
                   % (" ".join(cmd), env.get("KGO_SEEDS"), env.get("KGO_TEST_RF"), env.get("KGO_TEST_RECORDS"))).encode())
        out.flush()
        proc = subprocess.Popen(cmd, cwd=pkg, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        CURRENT["proc"] = proc
        killed = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            kill_group(proc)
        except BaseException:  # Ctrl-C / SIGTERM: end the test process before going up
            kill_group(proc)
            raise
        finally:
            CURRENT["proc"] = None
    secs = time.monotonic() - t0
    with open(logpath, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    if killed or "panic: test timed out after" in text:
        return "TIMEOUT", secs, text
    top = re.compile(r"^--- (PASS|FAIL|SKIP): %s \(" % re.escape(name), re.M)
    m = top.findall(text)
    if proc.returncode == 0:
        if m and m[-1] == "SKIP":
            return "SKIP", secs, text
        if "testing: warning: no tests to run" in text:
            return "SKIP", secs, text
        return "PASS", secs, text
    return "FAIL", secs, text


def subtests(text, name):
    """(subtests run, of them skipped, failed) from the -test.v lines `    --- STATE: Name/sub (...)`."""
    states = re.findall(r"^\s+--- (PASS|FAIL|SKIP): %s/\S+ \(" % re.escape(name), text, re.M)
    return len(states), states.count("SKIP"), states.count("FAIL")


def run_package(binary, pkg, names, env, timeout, logpath):
    """--one-process: every name in one test process, as franz-go's CI runs `go test ./...` (the
    t.Parallel tests, TestGroupETL, TestTxnEtl, TestShareGroupETL..., then run concurrently).
    Returns {name: (state, seconds, its lines, skip reason)}; a test without a `--- STATE: Name` line got no verdict
    (TIMEOUT when the process was killed or Go's timeout fired, FAIL otherwise)."""
    rx = "^(%s)$" % "|".join(re.escape(n) for n in names)
    state, secs, text = run_one(binary, pkg, rx, env, timeout, logpath, raw_pattern=True)
    out = {}
    for n in names:
        m = re.findall(r"^--- (PASS|FAIL|SKIP): %s \(([\d.]+)s\)" % re.escape(n), text, re.M)
        mine = "\n".join(l for l in text.splitlines() if n in l or l.startswith("panic:"))
        if m:
            out[n] = (m[-1][0], float(m[-1][1]), mine, skip_reason(text, n) if m[-1][0] == "SKIP" else "")
        else:
            out[n] = ("TIMEOUT" if state == "TIMEOUT" else "FAIL", secs, mine + "\n" + failure_excerpt(text), "")
    return out


def failure_excerpt(text, n=TAIL_LINES):
    """The last n lines before Go's timeout goroutine dump (or of the output)."""
    cut = text.find("panic: test timed out after")
    if cut >= 0:
        text = text[:cut + 200]
    lines = text.rstrip("\n").splitlines()
    return "\n".join(lines[-n:])


def skip_reason(text, name):
    """The t.Skip message of a skipped test: the `file_test.go:N: ...` line next to its `--- SKIP`."""
    lines = text.splitlines()
    msg = re.compile(r"^\S+_test\.go:\d+: ")
    for i, l in enumerate(lines):
        if l.startswith("--- SKIP: %s " % name):
            for j in range(i - 1, max(i - 4, -1), -1):  # -test.v streams the message before `--- SKIP`
                s = lines[j].strip()
                if s.startswith("=== ") or s.startswith("--- "):
                    break
                if msg.match(s):
                    return msg.sub("", s)
            for j in range(i + 1, min(i + 4, len(lines))):
                s = lines[j].strip()
                if s.startswith("=== ") or s.startswith("--- "):
                    break
                if msg.match(s):
                    return msg.sub("", s)
    return ""


def first_error(text):
    """A short reason for a FAIL: the first `file_test.go:N: ...` message that is not a (sub)test's skip
    message (those sit next to its `--- SKIP` line), or the first panic line."""
    lines = [l.strip() for l in text.splitlines()]
    near_skip = set()
    for i, l in enumerate(lines):
        if l.startswith("--- SKIP:"):
            near_skip.update(range(i - 2, i + 3))
    # franz-go's helpers log these; parallel subtests print their `--- SKIP` lines only at the end
    benign = re.compile(r"completed in |does not support |not set, skipping")
    for i, s in enumerate(lines):
        if s.startswith("panic:") or (re.match(r"^\S+_test\.go:\d+: ", s) and i not in near_skip
                                      and not benign.search(s)):
            return s[:220]
    return ""


def timeout_reason(text, tmo):
    """For a TIMEOUT: Go's own timeout and the tests it names as still running, else our kill."""
    m = re.search(r"panic: test timed out after (\S+)\n\s*running tests:\n((?:\s+\S+ \(\S+\)\n)+)", text)
    if m:
        running = [l.split()[0] for l in m.group(2).splitlines() if l.strip()]
        return "Go's -test.timeout %s; still running: %s" % (m.group(1), ", ".join(running)[:300])
    return "killed after %d s" % tmo


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""),
                    help="sluice executable: start a single node (or, with --cluster, the cluster's nodes)")
    ap.add_argument("--cluster", type=int, default=0, metavar="N",
                    help="a ZooKeeper and N Sluice brokers instead of one node (KGO_TEST_RF=min(3, N))")
    ap.add_argument("--bootstrap", default="", metavar="HOST:PORT", help="an already running broker (a column)")
    ap.add_argument("--rf", type=int, default=0, help="KGO_TEST_RF for --bootstrap (default 1)")
    ap.add_argument("--reference", choices=["kafka"], default="",
                    help="a Kafka 4.4.0 column (compat/kafka/kafka_reference.py); alone, or first beside Sluice")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE", os.path.join(REPO, "build", "compat-cache")),
                    help="downloads, builds, logs and brokers' data (default %(default)s)")
    ap.add_argument("--tests", default="", metavar="REGEX",
                    help="only the top-level tests whose name matches (re.search, as go test -run)")
    ap.add_argument("--per-test-timeout", type=int, default=300, help="seconds per test (default %(default)s)")
    ap.add_argument("--overall-timeout", type=int, default=7200,
                    help="seconds for the whole invocation; tests not started by then are skipped (default %(default)s)")
    ap.add_argument("--records", type=int, default=50000,
                    help="KGO_TEST_RECORDS, records per ETL test (franz-go's default 500000; default here %(default)s)")
    ap.add_argument("--unsafe", action="store_true", help="set KGO_TEST_UNSAFE (EndAndBeginTransaction unsafe mode)")
    ap.add_argument("--chaos", action="store_true",
                    help="set KGO_TEST_CHAOS=1: TestGroupETL's and TestShareGroupETL's clients drop every "
                         "connection 0.5-1.5 s after dialing (reconnects, produce retries, sequence rewinds)")
    ap.add_argument("--log-level", default="", choices=["", "info", "debug", "none"], help="KGO_LOG_LEVEL")
    ap.add_argument("--no-rerun", action="store_true", help="do not rerun a failing test alone once")
    ap.add_argument("--one-process", action="store_true",
                    help="all selected tests in one process, concurrently as franz-go's CI (`go test ./...`); "
                         "Sluice's known failures are left out; --overall-timeout bounds it")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config for the brokers started here (repeatable)")
    ap.add_argument("--versions", default=os.path.join(HERE, "versions.txt"))
    ap.add_argument("--known-failures", default=os.path.join(HERE, "known_failures.txt"))
    ap.add_argument("--build-only", action="store_true", help="download and build the test binary, run nothing")
    args = ap.parse_args()
    if args.cluster and not args.broker:
        ap.error("--cluster needs --broker")
    args.cache = os.path.abspath(args.cache)
    deadline = time.monotonic() + args.overall_timeout
    os.makedirs(args.cache, exist_ok=True)

    module, version, want_sum = read_pin(args.versions)
    with open(os.path.join(args.cache, "franz-go-obtain.log"), "a") as logf:
        try:
            binary, pkg = prepare_franz(args.cache, module, version, want_sum, logf)
        except Unavailable as e:
            log("SKIPPED: %s" % e)
            return SKIP_RC
        except subprocess.TimeoutExpired as e:
            log("SKIPPED: %s timed out" % (e.cmd,))
            return SKIP_RC
    if args.build_only:
        log("# kgo test binary: %s (package dir %s)" % (binary, pkg))
        return 0

    targets = []
    if args.reference:
        targets.append(Target("kafka", "Kafka 4.4.0", False, "single"))
    if args.bootstrap:
        targets.append(Target("existing", "broker " + args.bootstrap, True, "single"))
    if args.broker:
        if not os.access(args.broker, os.X_OK):
            log("SKIPPED: %s is not an executable" % args.broker)
            return SKIP_RC
        if args.cluster:
            targets.append(Target("cluster", "Sluice x%d" % args.cluster, True, "cluster"))
        else:
            targets.append(Target("sluice", "Sluice", True, "single"))
    if not targets:
        log("SKIPPED: no broker (pass --broker PATH, --bootstrap HOST:PORT or --reference kafka)")
        return SKIP_RC

    names = list_tests(binary, pkg)
    if args.tests:
        rx = re.compile(args.tests)
        names = [n for n in names if rx.search(n)]
    if not names:
        log("no tests selected")
        return 2
    known = read_known(args.known_failures)
    run_dir = os.path.join(args.cache, "franz-go", "runs", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(run_dir, exist_ok=True)
    failures_log = os.path.join(run_dir, "failures.log")
    log("# franz-go %s kgo tests (%d selected), KGO_TEST_RECORDS=%d, per test %d s; logs in %s"
        % (version, len(names), args.records, args.per_test_timeout, run_dir))

    results = {}  # (target key, name) -> (state, secs, first, rerun state or None, why)
    subs = {}  # (target key, name) -> (subtests, skipped, failed)

    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)

    interrupted = False
    try:
        for t in targets:
            if time.monotonic() > deadline:
                for n in names:
                    results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "overall timeout reached")
                continue
            colddir = os.path.join(run_dir, t.key)
            os.makedirs(colddir, exist_ok=True)
            try:
                t.start(args)
            except Exception as e:  # noqa: BLE001 - the column cannot run
                log("# %s could not be started: %s" % (t.title, e))
                t.notes.append("could not be started: %s" % e)
                t.stop(failed=True)
                for n in names:
                    results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "broker could not be started")
                continue
            env = dict(os.environ)
            env.update({"KGO_SEEDS": t.bootstrap, "KGO_TEST_RF": str(t.rf), "KGO_TEST_RECORDS": str(args.records),
                        "KGO_TEST_STABLE_FETCH": "true"})
            for k in ("KGO_TEST_CHAOS", "KGO_TEST_UNSAFE", "KGO_TEST_TLS", "KGO_TEST_SCRAM", "KGO_TEST_SCRAM_SEEDS", "KGO_LOG_LEVEL"):
                env.pop(k, None)
            if args.unsafe:
                env["KGO_TEST_UNSAFE"] = "1"
            if args.chaos:
                env["KGO_TEST_CHAOS"] = "1"
            if args.log_level:
                env["KGO_LOG_LEVEL"] = args.log_level
            failed_any = False
            try:
                if args.one_process:
                    runnable = [n for n in names if not (t.is_sluice and known_reason(known, n, t) is not None)]
                    for n in names:
                        if n not in runnable:
                            results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "known failure: not run with --one-process")
                    tmo = max(10, min(int(deadline - time.monotonic()), 2 * args.per_test_timeout))
                    log("# %s: %d tests in one process (timeout %d s)" % (t.title, len(runnable), tmo))
                    for n, (state, secs, text, skipwhy) in run_package(binary, pkg, runnable, env, tmo,
                                                              os.path.join(colddir, "one-process.log")).items():
                        why = ""
                        if state in ("FAIL", "TIMEOUT"):
                            failed_any = True
                            why = timeout_reason(text, tmo) if state == "TIMEOUT" else first_error(text)
                            with open(failures_log, "a") as f:
                                f.write("==== %s %s %s (one process): its lines of %s\n%s\n\n"
                                        % (t.title, n, state, os.path.join(colddir, "one-process.log"),
                                           "\n".join(text.splitlines()[-TAIL_LINES:])))
                        elif state == "SKIP":
                            why = skipwhy
                        results[(t.key, n)] = (state, secs, state, None, why)
                        subs[(t.key, n)] = subtests(text, n)
                        log("# %-11s %-55s %s (%.1f s)%s" % (t.title, n, state, secs, (": " + why) if why else ""))
                    t.revive("the one-process run")
                    names_loop = []
                else:
                    names_loop = names
                for n in names_loop:
                    left = int(deadline - time.monotonic())
                    if left < 10:
                        results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "overall timeout reached")
                        continue
                    tmo = min(args.per_test_timeout, left)
                    state, secs, text = run_one(binary, pkg, n, env, tmo, os.path.join(colddir, n + ".log"))
                    t.revive(n)
                    first, rerun, why = state, None, ""
                    is_known = t.is_sluice and known_reason(known, n, t) is not None
                    if state in ("FAIL", "TIMEOUT") and is_known:
                        log("# %-11s %-55s %s (%.1f s); known failure, not rerun" % (t.title, n, state, secs))
                    if state in ("FAIL", "TIMEOUT") and not args.no_rerun and not is_known \
                            and deadline - time.monotonic() > 10:
                        log("# %-11s %-55s %s (%.1f s); rerunning it alone" % (t.title, n, state, secs))
                        with open(failures_log, "a") as f:
                            f.write("==== %s %s %s (%.1f s), first run: last %d lines of %s\n%s\n\n"
                                    % (t.title, n, state, secs, TAIL_LINES, os.path.join(colddir, n + ".log"),
                                       failure_excerpt(text)))
                        time.sleep(2)
                        rerun, secs2, text2 = run_one(binary, pkg, n, env, min(args.per_test_timeout,
                                                                               int(deadline - time.monotonic())),
                                                      os.path.join(colddir, n + ".rerun.log"))
                        t.revive(n + " (rerun)")
                        state, secs, text = rerun, secs2, text2  # the verdict is the rerun's; `first` keeps the other
                    if state in ("FAIL", "TIMEOUT"):
                        failed_any = failed_any or not is_known  # data dirs are kept for unexpected ones
                        why = timeout_reason(text, tmo) if state == "TIMEOUT" else first_error(text)
                        logpath = os.path.join(colddir, n + (".rerun.log" if rerun else ".log"))
                        with open(failures_log, "a") as f:
                            f.write("==== %s %s %s (%.1f s)%s: last %d lines of %s\n%s\n\n"
                                    % (t.title, n, state, secs, ", rerun alone" if rerun else "", TAIL_LINES,
                                       logpath, failure_excerpt(text)))
                    elif state == "SKIP":
                        why = skip_reason(text, n)
                    results[(t.key, n)] = (state, secs, first, rerun, why)
                    subs[(t.key, n)] = subtests(text, n)
                    shown = state if rerun is None or rerun == first else "%s>%s" % (first, rerun)
                    nsub, nskip, nfail = subs[(t.key, n)]
                    subnote = " [%d subtests: %d skipped, %d failed]" % (nsub, nskip, nfail) if nsub else ""
                    log("# %-11s %-55s %s (%.1f s)%s%s" % (t.title, n, shown, secs, subnote,
                                                           (": " + why) if why else ""))
            finally:
                t.stop(failed=failed_any)
    except KeyboardInterrupt as e:
        interrupted = True
        log("# interrupted (%s): stopping what was started" % (e or "Ctrl-C"))
    finally:
        kill_group(CURRENT["proc"])
        for t in targets:
            if t.nodes or t.zk:
                t.stop(failed=True)

    # ---- report ----
    width = max(len(n) for n in names)
    cols = [t for t in targets]
    log("")
    log("%-*s  %s" % (width, "test", "  ".join("%-20s" % t.title for t in cols)))
    for n in names:
        cells = []
        for t in cols:
            r = results.get((t.key, n))
            if r is None:
                cells.append("%-20s" % "-")
                continue
            state, secs, first, rerun, why = r
            s = state if rerun is None or rerun == first else "%s>%s" % (first, rerun)
            if t.is_sluice and state in ("FAIL", "TIMEOUT") and known_reason(known, n, t) is not None:
                s += "*"
            if state != "SKIP":
                s = "%s %.0fs" % (s, secs)
            nsub, nskip, nfail = subs.get((t.key, n), (0, 0, 0))
            if nskip:
                s += " s%d/%d" % (nskip, nsub)
            cells.append("%-20s" % s)
        log("%-*s  %s" % (width, n, "  ".join(cells)))
    log("(* = known failure, known_failures.txt; A>B = A first, B when rerun alone; sK/N = K of N subtests skipped)")

    exit_code = 0
    summaries = []
    for t in cols:
        p = f_ = s = 0
        flaky, knownf, unexpected, skipped = [], [], [], []
        for n in names:
            r = results.get((t.key, n))
            if r is None:
                continue
            state, secs, first, rerun, why = r
            if state == "PASS":
                p += 1
                if first != "PASS":
                    flaky.append(n)
            elif state in ("FAIL", "TIMEOUT"):
                f_ += 1
                reason = known_reason(known, n, t) if t.is_sluice else None
                if reason is not None:
                    knownf.append("%s %s: %s [known: %s]" % (n, state, why, reason))
                else:
                    unexpected.append("%s %s: %s" % (n, state, why))
            else:
                s += 1
                skipped.append("%s: %s" % (n, why))
        log("")
        log("## %s (%s)" % (t.title, t.bootstrap or "not started"))
        for note in t.notes:
            log("#   note: %s" % note)
        if flaky:
            log("#   failed, then passed when rerun alone: %s" % " ".join(flaky))
        for k in knownf:
            log("#   known failure: %s" % k)
        for u in unexpected:
            log("#   %s: %s" % ("UNEXPECTED failure" if t.is_sluice else "failure", u))
        if skipped:
            log("#   skipped: %d (%s)" % (len(skipped), "; ".join(sorted(set(x.split(": ", 1)[1] or "no reason"
                                                                        for x in skipped)))[:600]))
        if t.is_sluice and unexpected:
            exit_code = 1
        summaries.append((t, "%d passed, %d failed, %d skipped" % (p, f_, s)))
    if os.path.exists(failures_log):
        log("# failing tests' last %d lines: %s" % (TAIL_LINES, failures_log))
    log("# logs of every test: %s" % run_dir)
    # Sluice's summary last (targets are ordered Kafka, existing, Sluice).
    for t, line in summaries:
        log("# %s:" % t.title)
        log(line)
    if interrupted:
        return 130
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
