"""Python twin of broker_process.h: start the real `sluice` binary for script tests.

Port chosen free at run time (bind 127.0.0.1:0), a fresh temp dir with server.properties, data/ and
broker.log; start() waits (bounded) for the port; stop() = SIGTERM + wait (returns the exit code);
kill9(); restart(). Only loopback addresses. Scripts exit 0 on pass, 1 on failure, 77 when skipped.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


def run_in_venv(cache, script):
    """Re-executes `script` with this process' arguments under the compat cache's venv (compat/clients/installers.py:
    the pinned confluent-kafka, prometheus_client, ...) unless this process is that re-execution already (an
    environment marker per script, so that its children re-execute themselves as they need). Returns None in the
    venv; else a reason why no venv can be had (the caller skips). Does not return when it re-executes."""
    marker = "SLUICE_VENV_REEXEC_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(script)).upper()
    if os.environ.get(marker):
        return None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "compat", "clients"))
    import installers
    try:
        py = installers.venv(os.path.abspath(cache))
    except (installers.Unavailable, installers.SetupFailed) as e:
        return str(e)
    os.environ[marker] = "1"
    sys.stdout.flush()
    os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])


_ports_given = set()


def pick_free_port():
    """A loopback port that was free a moment ago, never one this process was given before: the kernel may hand
    out a port it just released again, and two listeners of one test on the same port fail to start."""
    for _ in range(32):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            break
    _ports_given.add(port)
    return port


def wait_until(fn, timeout, step=0.1):
    """Calls fn until it returns a true value or `timeout` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def port_accepts(port, timeout=0.5):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class Broker:
    def __init__(self, binary, overrides=None, advertised_port=None):
        self.binary = binary
        self.advertised_port = advertised_port  # e.g. a capture proxy in front of the broker
        self.overrides = dict(overrides or {})
        self.dir = tempfile.mkdtemp(prefix="sluice-itest-")
        self.data_dir = os.path.join(self.dir, "data")
        os.makedirs(self.data_dir)
        self.log_path = os.path.join(self.dir, "broker.log")
        self.port = pick_free_port()
        self.proc = None
        self.keep = bool(os.environ.get("SLUICE_KEEP_DATA"))

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def _write_config(self):
        with open(os.path.join(self.dir, "server.properties"), "w") as f:
            f.write("# written by tests/integration/sluice_harness.py\n")
            f.write("broker.id=0\n")
            f.write("listeners=PLAINTEXT://127.0.0.1:%d\n" % self.port)
            f.write("advertised.listeners=PLAINTEXT://127.0.0.1:%d\n" % (self.advertised_port or self.port))
            f.write("log.dirs=%s\n" % self.data_dir)

    def start(self, ready_timeout=10.0):
        assert self.proc is None, "already running"
        self._write_config()
        args = [self.binary, "--config", os.path.join(self.dir, "server.properties")]
        for k, v in self.overrides.items():
            args += ["--override", "%s=%s" % (k, v)]
        log = open(self.log_path, "ab")
        log.write(b"==== itest: starting broker on port %d ====\n" % self.port)
        log.flush()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                raise RuntimeError("broker exited with %s before accepting\n%s" % (rc, self.log_text()))
            # The Kafka listener binds before the HTTP side does: a test that talks HTTP first waits for
            # those ports too (a request sent in between was refused).
            if port_accepts(self.port) and all(port_accepts(p) for p in self.http_ports()):
                return
            time.sleep(0.05)
        raise RuntimeError("broker did not accept on ports %s within %.0f s" % ([self.port] + self.http_ports(),
                                                                              ready_timeout))

    def http_ports(self):
        """The ports of the http:// and https:// listeners the overrides name (none for the default)."""
        ports = []
        for url in (self.overrides.get("http.listeners") or "").split(","):
            url = url.strip()
            if "://" in url and url.rsplit(":", 1)[-1].isdigit():
                ports.append(int(url.rsplit(":", 1)[-1]))
        return ports

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit code (negative = killed by that signal)."""
        assert self.proc is not None, "not running"
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise RuntimeError("broker did not exit within %.0f s of SIGTERM" % timeout)
        self.proc = None
        return rc

    def kill9(self):
        assert self.proc is not None, "not running"
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self):
        if self.proc is not None:
            self.stop()
        self.start()

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self, failed=False):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if failed:
            self.keep = True
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def client_test_args(description, script, modules=("confluent_kafka",), add_arguments=None):
    """The command line of a test that drives the broker with the compat cache's venv clients: --broker (or
    $SLUICE_BINARY), --cache, and what `add_arguments(parser)` adds. Returns (args, None) inside the venv, else
    (None, SKIP) after printing why (no binary, or no venv with `modules`); re-executes `script` in the venv when
    the modules are missing here (does not return then)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build-tests", "compat-cache"))
    if add_arguments:
        add_arguments(ap)
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP: no sluice binary (--broker or SLUICE_BINARY)")
        return None, SKIP
    try:
        for m in modules:
            __import__(m)
    except ImportError:
        no_venv = run_in_venv(args.cache, script)
        print("SKIP: %s" % (no_venv or "the venv has no %s" % " or ".join(modules)))
        return None, SKIP
    return args, None


def binary_from_args(description):
    """Parses --broker (or $SLUICE_BINARY); exits 77 (skip) when neither names an executable."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--broker", default="", help="path of the sluice executable")
    ap.add_argument("--seed", type=int, default=None, help="random seed (garbage test)")
    args = ap.parse_args()
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary (pass --broker or set SLUICE_BINARY)")
        sys.exit(SKIP)
    return binary, args


def _short(v, limit=400):
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "... (%d chars)" % len(r)


class Checker:
    """Collects failures instead of stopping at the first; prints them and gives the exit code."""

    def __init__(self):
        self.failures = []

    def eq(self, actual, expected, what):
        if actual != expected:
            self.failures.append("%s: expected %s, got %s" % (what, _short(expected), _short(actual)))
            return False
        return True

    def true(self, cond, what):
        if not cond:
            self.failures.append(what)
        return bool(cond)

    def ok(self):
        return not self.failures

    def report(self):
        for f in self.failures[:50]:
            print("FAIL:", f)
        if len(self.failures) > 50:
            print("... and %d more failures" % (len(self.failures) - 50))
        return 0 if self.ok() else 1


def run(main, binary, overrides=None):
    """Starts a broker, runs main(broker, checker), stops it (asserting exit 0), returns exit code."""
    broker = Broker(binary, overrides)
    check = Checker()
    try:
        broker.start()
        main(broker, check)
        if broker.alive():
            rc = broker.stop()
            check.eq(rc, 0, "broker exit status on SIGTERM")
        else:
            check.true(False, "broker process died during the test")
    except Exception as e:  # noqa: BLE001 - report everything as a test failure
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    failed = not check.ok()
    if failed:
        print("---- broker log (%s, data kept in %s) ----" % (broker.log_path, broker.dir))
        print(broker.log_text()[-20000:])
        print("---- end of broker log ----")
    broker.close(failed=failed)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


def run_cluster_test(make_cluster, body, before=None):
    """A test of brokers on ZooKeeper from start to report: `before(check)` (optional, before ZooKeeper starts),
    then ZooKeeper and `make_cluster(zk)` started, `body(cluster, zk, check)` run, every broker still alive stopped
    with SIGTERM and expected to exit 0. An exception is a failure. Returns the exit code (finish_cluster_run)."""
    check = Checker()
    zk = ZooKeeper()
    cluster = None
    try:
        if before is not None:
            before(check)
        zk.start()
        cluster = make_cluster(zk)
        cluster.start()
        body(cluster, zk, check)
        for i, b in cluster.brokers.items():
            if b.alive():
                check.eq(b.stop(), 0, "broker %d exit status on SIGTERM" % i)
    except Exception as e:  # noqa: BLE001 - reported as a failure
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    return finish_cluster_run(check, cluster, zk)


def kafka_tools_home(cache):
    """The home of Kafka 4.4's tools with their generated bin/ wrappers (compat/kafka/kafka_dist.py), or None after
    printing why they are not available (the caller skips)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "compat", "kafka"))
    import kafka_dist
    try:
        home, _ = kafka_dist.prepare(cache, quiet=True)
    except kafka_dist.Unavailable as e:
        print("SKIPPED: no Kafka 4.4 tools: %s" % e)
        return None
    return home


def cluster_tool_test(description, script, make_cluster, body):
    """main() of a test of brokers on ZooKeeper driven by Kafka 4.4's tools and the venv's confluent-kafka:
    `make_cluster(binary, zk)`, then `body(cluster, kafka_home, check)` (run_cluster_test). Re-executes `script` in
    the venv (the pinned confluent-kafka, not Debian's); SKIP without the venv, ZooKeeper, java or Kafka's jars.
    Returns the exit code."""
    args, skip = client_test_args(description, script)
    if skip is not None:
        return skip
    no_venv = run_in_venv(args.cache, script)
    if no_venv is not None:
        print("SKIPPED: %s" % no_venv)
        return SKIP
    if not ZooKeeper.available():
        print("SKIPPED: ZooKeeper (Debian package zookeeper) or java not installed")
        return SKIP
    home = kafka_tools_home(args.cache)
    if home is None:
        return SKIP
    return run_cluster_test(lambda zk: make_cluster(args.broker, zk), lambda cluster, zk, check: body(cluster, home, check))


def finish_cluster_run(check, cluster, zk, log_tail=8000):
    """The end of a test of brokers on ZooKeeper: on failure the tail of every broker's log; then the brokers and
    ZooKeeper closed (their data kept on failure), the checks reported. Returns the exit code."""
    failed = not check.ok()
    if failed and cluster:
        for i, b in cluster.brokers.items():
            print("---- broker %d log (%s) ----" % (i, b.log_path))
            print(b.log_text()[-log_tail:])
    if cluster:
        cluster.close(failed)
    zk.close(failed)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


def segment_batches(partition_dir):
    """The record batch headers of every segment file of a partition dir, in file order:
    a list of (base offset, attributes, record count) read from the v2 batch header."""
    import struct
    out = []
    for name in sorted(os.listdir(partition_dir)):
        if not name.endswith(".log"):
            continue
        with open(os.path.join(partition_dir, name), "rb") as f:
            data = f.read()
        pos = 0
        while pos + 61 <= len(data):
            base, length = struct.unpack(">qi", data[pos:pos + 12])
            attrs = struct.unpack(">h", data[pos + 21:pos + 23])[0]
            count = struct.unpack(">i", data[pos + 57:pos + 61])[0]
            out.append((base, attrs, count))
            pos += 12 + length
    return out


class ReferenceBroker:
    """What a test's main(broker, check) uses of a Broker (bootstrap, port), for Apache Kafka 4.4."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.port = int(bootstrap.rsplit(":", 1)[1])


def run_reference(main, overrides=None, cache=None):
    """Runs main(broker, checker) against Apache Kafka 4.4 (compat/kafka/kafka_reference.py) started with
    `overrides`; returns the exit code (SKIP when its jars or Java cannot be had)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "compat", "kafka"))
    import kafka_reference as kr
    check = Checker()
    try:
        with kr.KafkaReference(cache or kr.DEFAULT_CACHE, overrides) as kafka:
            main(ReferenceBroker(kafka.bootstrap), check)
    except kr.Unavailable as e:
        print("SKIPPED: %s" % e)
        return SKIP
    except Exception as e:  # noqa: BLE001 - reported as a failure, as run() does
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    code = check.report()
    print("PASS (Apache Kafka 4.4)" if code == 0 else "FAILED (Apache Kafka 4.4)")
    return code


def run_against(main, overrides=None, description=None, add_args=None):
    """Command line of a test that can also run against the reference: `--broker PATH` (or $SLUICE_BINARY)
    runs main on Sluice, `--reference kafka [--cache DIR]` on Apache Kafka 4.4 with the same overrides.
    `add_args(parser)` adds the test's own options; main may take (broker, check, args)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--broker", default="", help="path of the sluice executable")
    ap.add_argument("--reference", choices=["kafka"], help="run against Apache Kafka 4.4 instead of Sluice")
    ap.add_argument("--cache", default=None, help="compat cache holding the Kafka jars (--reference kafka)")
    if add_args:
        add_args(ap)
    args = ap.parse_args()
    body = (lambda b, c: main(b, c, args)) if add_args else main
    if args.reference == "kafka":
        return run_reference(body, overrides, args.cache)
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary (pass --broker or set SLUICE_BINARY)")
        return SKIP
    return run(body, binary, overrides)


ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # Debian's `zookeeper` package


class ZooKeeper:
    """A standalone ZooKeeper server (Debian's package) on a free loopback port, in a temp dir.

    start() waits (bounded) until the port accepts; stop() ends the process it started, by PID.
    """

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-zk-")
        self.port = pick_free_port()
        self.proc = None
        self.log_path = os.path.join(self.dir, "zookeeper.log")

    @staticmethod
    def available():
        return os.path.exists(ZOOKEEPER_JAR) and shutil.which("java") is not None

    @property
    def connect(self):
        return "127.0.0.1:%d" % self.port

    def start(self, ready_timeout=60.0):
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n"
                    % (os.path.join(self.dir, "data"), self.port))
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["java", "-Xmx256m", "-cp", ZOOKEEPER_JAR,
                                      "org.apache.zookeeper.server.ZooKeeperServerMain", cfg],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("zookeeper exited with %s" % self.proc.returncode)
            if port_accepts(self.port):
                return
            time.sleep(0.1)
        raise RuntimeError("zookeeper did not accept on port %d within %.0f s" % (self.port, ready_timeout))

    def cli(self, *command, timeout=60):
        """Runs one zkCli.sh command against this server; returns its output."""
        out = subprocess.run(["/usr/share/zookeeper/bin/zkCli.sh", "-server", self.connect] + list(command),
                             stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        return out.stdout.decode("utf-8", "replace")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def close(self, failed=False):
        self.stop()
        if not failed and not os.environ.get("SLUICE_KEEP_DATA"):
            shutil.rmtree(self.dir, ignore_errors=True)
