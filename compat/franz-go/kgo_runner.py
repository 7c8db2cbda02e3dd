"""Helpers of compat/franz-go/run.py: the pinned franz-go module, its kgo test binary, one test per process,
known failures, and reading go test output (skips, first errors, timeouts)."""

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
