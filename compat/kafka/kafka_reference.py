#!/usr/bin/python3
"""Apache Kafka 4.4.0 as a reference broker beside Sluice: jars from Maven Central, one KRaft node
(or a KRaft quorum of several, `KafkaCluster`).

The jars are resolved by Maven from the pinned manifest `compat/kafka/pom.xml` into a cache outside
the tracked files (`<cache>/kafka-4.4.0/libs`), and a `bin/` of small wrappers (kafka-run-class.sh,
kafka-topics.sh, ...) plus `config/` log4j2 files is generated beside them, so
`KAFKA_PATH=<cache>/kafka-4.4.0` looks like an unpacked Kafka distribution to librdkafka's suite.

    /usr/bin/python3 compat/kafka/kafka_reference.py --cache build-tests/compat-cache fetch
    /usr/bin/python3 compat/kafka/kafka_reference.py --cache build-tests/compat-cache start \\
        [--override num.partitions=3] [--no-rebalance-delay]      # prints the bootstrap, Ctrl-C stops
    /usr/bin/python3 compat/kafka/kafka_reference.py --cache build-tests/compat-cache start --nodes 3

As a module (the compat runners' `--reference kafka`):

    from kafka_reference import KafkaReference, Unavailable
    with KafkaReference(cache, {"num.partitions": 3}) as kafka:
        use(kafka.bootstrap)                                       # "127.0.0.1:<port>"

The node is a single combined broker+controller (process.roles=broker,controller, node.id=1) with a
dynamic quorum of itself (KIP-853: controller.quorum.bootstrap.servers, `StorageTool format
--standalone`), PLAINTEXT on a free loopback port, CONTROLLER on another, data in a fresh temp dir.
It is stopped by PID: SIGTERM, then SIGKILL after a bounded wait.

`KafkaCluster(cache, size=3)` (and `start --nodes N`) runs N such combined broker+controller nodes
(node.id 1..N) as one KRaft quorum with a static voter set (controller.quorum.voters, formatted
without --standalone), each on its own loopback ports and temp dir, one cluster id; replication
factors of the internal topics and default.replication.factor are min(3, N). `pids` are the JVMs'.

Exit status of the command line: 0 ok, 1 failure, 77 (ctest SKIP) when the jars cannot be obtained
(no `mvn`, Maven Central unreachable) or no Java >= 17 is found; the reason is printed as `SKIP: ...`.
"""
import argparse
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid

# The distribution (Java, jars, bin/) is kafka_dist.py; its names used by the compat runners and the
# integration harness (kr.prepare, kr.Unavailable, kr.DEFAULT_CACHE, ...) stay reachable from here.
from kafka_dist import (DEFAULT_CACHE, KAFKA_VERSION, SKIP_RC, ReferenceFailed, Unavailable,  # noqa: F401
                        ensure_jars, find_java, kafka_home, log, make_bin, prepare)


# ---------------------------------------------------------------------------------------------
# Talking to the node: ApiVersions v0 and Metadata v1 on a raw socket (readiness only)


def pick_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(port, api_key, version, body, timeout=3.0):
    """Sends one request (header v1, client id "sluice-ref") and returns the response body after the
    correlation id (response header v0)."""
    client = b"sluice-ref"
    header = struct.pack(">hhih", api_key, version, 7, len(client)) + client
    msg = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4:
            chunk = s.recv(4 - len(buf))
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        (size,) = struct.unpack(">i", buf)
        data = b""
        while len(data) < size:
            chunk = s.recv(size - len(data))
            if not chunk:
                raise OSError("connection closed")
            data += chunk
    (corr,) = struct.unpack(">i", data[:4])
    if corr != 7:
        raise OSError("correlation id %d" % corr)
    return data[4:]


def probe(port):
    """Returns the node ids that Metadata v1 lists once ApiVersions v0 answers error 0; raises
    OSError while the node is not serving."""
    body = _request(port, 18, 0, b"")
    (err,) = struct.unpack(">h", body[:2])
    if err != 0:
        raise OSError("ApiVersions error %d" % err)
    body = _request(port, 3, 1, struct.pack(">i", 0))  # Metadata v1, no topics
    (n,) = struct.unpack(">i", body[:4])
    pos, ids = 4, []
    for _ in range(n):
        node, hlen = struct.unpack(">ih", body[pos:pos + 6])
        pos += 6 + hlen + 4
        (rlen,) = struct.unpack(">h", body[pos:pos + 2])
        pos += 2 + max(rlen, 0)
        ids.append(node)
    return ids


def random_cluster_id():
    """A Kafka cluster id: 16 random bytes in URL-safe base64 without padding (22 characters), not
    starting with '-' (as Kafka's Uuid.randomUuid avoids)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


# ---------------------------------------------------------------------------------------------
# The node


class _StartedInWith:
    """`with X(...) as x:` starts x (closing it, kept for a look, when the start fails) and closes it at the end
    (kept when the block raised). For classes with start() and close(failed)."""

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close(failed=True)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(failed=exc_type is not None and not issubclass(exc_type, KeyboardInterrupt))
        return False


class KafkaReference(_StartedInWith):
    """One Kafka 4.4.0 KRaft node (broker+controller) on free loopback ports, in a temp dir.

    Duck-types tests/integration/sluice_harness.Broker where the compat runners use it:
    start(ready_timeout), alive(), stop() -> exit status (0 = orderly shutdown), close(failed),
    bootstrap, dir, log_path, log_text(), keep. Also a context manager (start on enter; stop and
    remove the temp dir on exit, keeping it when the block raised or $SLUICE_KEEP_DATA is set).

    cache: where the jars are (prepared on start when missing); overrides: broker config dict
    applied last (e.g. {"num.partitions": 4}); heap: the broker's -Xmx.
    """

    READY_TIMEOUT = 90.0
    STOP_TIMEOUT = 30.0

    def __init__(self, cache=DEFAULT_CACHE, overrides=None, heap="512M", node_id=1, voters=None,
                 cluster_id=None, port=None, controller_port=None):
        """node_id, voters, cluster_id, port and controller_port are for KafkaCluster: voters
        ("1@127.0.0.1:P,2@...") makes the node one of a static quorum instead of a standalone
        dynamic quorum of itself; the ports default to free ones."""
        self.cache = os.path.abspath(cache)
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.node_id = node_id
        self.voters = voters
        self.dir = tempfile.mkdtemp(prefix="sluice-kafka-ref-")
        self.data_dir = os.path.join(self.dir, "data")
        self.config_path = os.path.join(self.dir, "server.properties")
        self.log_path = os.path.join(self.dir, "kafka.log")
        self.port = port or pick_free_port()
        self.controller_port = controller_port or pick_free_port()
        while self.controller_port == self.port:
            self.controller_port = pick_free_port()
        self.cluster_id = cluster_id or random_cluster_id()
        self.proc = None
        self.pid = None
        self.keep = bool(os.environ.get("SLUICE_KEEP_DATA"))
        self.home = None
        self.java = None
        self.exit_status = None  # the JVM's raw exit status after stop()

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def config(self):
        """The server.properties of this node (dict, overrides applied)."""
        c = {
            "process.roles": "broker,controller",
            "node.id": self.node_id,
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, self.controller_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                                    % (self.port, self.controller_port),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.data_dir,
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "min.insync.replicas": 1,
        }
        if self.voters:
            c["controller.quorum.voters"] = self.voters
        else:
            c["controller.quorum.bootstrap.servers"] = "127.0.0.1:%d" % self.controller_port
        c.update(self.overrides)
        return c

    def _write_config(self):
        with open(self.config_path, "w") as f:
            f.write("# written by compat/kafka/kafka_reference.py\n")
            for k, v in self.config().items():
                f.write("%s=%s\n" % (k, v))

    def _env(self):
        env = dict(os.environ)
        env["JAVA_HOME"] = os.path.dirname(os.path.dirname(os.path.realpath(self.java)))
        return env

    def _format(self):
        """StorageTool format --standalone (KIP-853 dynamic quorum of this one controller), or
        without it for a member of a static quorum (controller.quorum.voters)."""
        if os.path.exists(os.path.join(self.data_dir, "meta.properties")):
            return
        cmd = [os.path.join(self.home, "bin", "kafka-storage.sh"), "format", "--cluster-id", self.cluster_id,
               "--config", self.config_path] + ([] if self.voters else ["--standalone"])
        p = subprocess.run(cmd, capture_output=True, timeout=120, stdin=subprocess.DEVNULL, env=self._env())
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        with open(self.log_path, "a") as f:
            f.write("==== %s\n%s" % (" ".join(cmd), out))
        if p.returncode != 0:
            raise ReferenceFailed("kafka-storage format failed (exit %d): %s" % (p.returncode, out.strip()[-600:]))

    def start(self, ready_timeout=None):
        """Prepares the jars if needed, formats the data dir (first start) and starts kafka.Kafka;
        returns once ApiVersions answers and Metadata lists a broker, within ready_timeout seconds
        (default 90). Raises Unavailable (no jars/Java: skip) or ReferenceFailed."""
        self.launch()
        self.wait_ready(ready_timeout)

    def launch(self):
        """The first half of start(): jars, config, format, and the JVM started (not waited for)."""
        assert self.proc is None, "already running"
        if self.home is None:
            self.home, self.java = prepare(self.cache, quiet=False)
        self._write_config()
        self._format()
        env = self._env()
        env["KAFKA_HEAP_OPTS"] = "-Xmx%s -Xms%s" % (self.heap, self.heap)
        log_f = open(self.log_path, "ab")
        log_f.write(b"==== kafka_reference: starting Kafka %s on %s (controller %d) ====\n"
                    % (KAFKA_VERSION.encode(), self.bootstrap.encode(), self.controller_port))
        log_f.flush()
        self.proc = subprocess.Popen([os.path.join(self.home, "bin", "kafka-server-start.sh"), self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=log_f, stderr=log_f, env=env,
                                     start_new_session=True)
        self.pid = self.proc.pid
        log_f.close()

    def wait_ready(self, ready_timeout=None, node_ids=None):
        """The second half of start(): returns once ApiVersions answers and Metadata lists
        node_ids (default: this node) within ready_timeout seconds; kills the JVM and raises
        ReferenceFailed otherwise."""
        want = set(node_ids or [self.node_id])
        timeout = ready_timeout or self.READY_TIMEOUT
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                raise ReferenceFailed("Kafka exited with %s before serving; log %s:\n%s"
                                      % (rc, self.log_path, self.log_text()[-3000:]))
            try:
                if want <= set(probe(self.port)):
                    return
            except (OSError, struct.error) as e:
                last = e
            time.sleep(0.25)
        self._kill()
        raise ReferenceFailed("Kafka did not answer ApiVersions+Metadata on %s within %.0f s (last: %r); log %s"
                              % (self.bootstrap, timeout, last, self.log_path))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self, timeout=None):
        """SIGTERM to the JVM's PID, wait (bounded, default 30 s), then SIGKILL. Returns 0 after an
        orderly shutdown (a JVM ending on SIGTERM exits 143 = 128 + 15 once its shutdown hooks
        ran), the exit status otherwise; raises RuntimeError when SIGKILL was needed."""
        assert self.proc is not None, "not running"
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout or self.STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
            raise RuntimeError("Kafka did not exit within %.0f s of SIGTERM (killed)" % (timeout or self.STOP_TIMEOUT))
        self.proc = None
        self.exit_status = rc
        return 0 if rc in (0, 143, -signal.SIGTERM) else rc

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self, failed=False):
        """Stops the node if it still runs (SIGTERM, then SIGKILL) and removes the temp dir unless
        failed or keep."""
        if self.proc is not None:
            try:
                self.stop()
            except RuntimeError:
                pass
        if failed:
            self.keep = True
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


class KafkaCluster(_StartedInWith):
    """`size` Kafka 4.4.0 KRaft nodes (each broker+controller, node.id 1..size) forming one quorum
    with a static voter set, on free loopback ports, one temp dir per node.

    bootstrap (all nodes, comma-separated), pids (the JVMs), nodes (KafkaReference each),
    start(ready_timeout), alive(), stop() -> the nodes' stop() results, close(failed); a context
    manager like KafkaReference. overrides apply to every node after the cluster's defaults
    (replication factors min(3, size), min.insync.replicas 1).
    """

    def __init__(self, cache=DEFAULT_CACHE, size=3, overrides=None, heap="512M"):
        rf = min(3, size)
        conf = {
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min(2, rf),
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min(2, rf),
        }
        conf.update(overrides or {})
        ports = set()
        while len(ports) < 2 * size:  # distinct free ports (bounded: a handful of tries)
            ports.add(pick_free_port())
        ports = sorted(ports)
        cluster_id = random_cluster_id()
        voters = ",".join("%d@127.0.0.1:%d" % (i + 1, ports[2 * i + 1]) for i in range(size))
        self.nodes = [KafkaReference(cache, conf, heap, node_id=i + 1, voters=voters, cluster_id=cluster_id,
                                     port=ports[2 * i], controller_port=ports[2 * i + 1])
                      for i in range(size)]

    @property
    def bootstrap(self):
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def pids(self):
        return [n.pid for n in self.nodes]

    def start(self, ready_timeout=None):
        """Starts every node, then waits until each lists all node ids in Metadata (the quorum needs
        a majority of voters before any node serves, so the nodes start together)."""
        home, java = prepare(self.nodes[0].cache, quiet=False)
        for n in self.nodes:
            n.home, n.java = home, java
        for n in self.nodes:
            n.launch()
        ids = [n.node_id for n in self.nodes]
        for n in self.nodes:
            n.wait_ready(ready_timeout, node_ids=ids)

    def alive(self):
        return all(n.alive() for n in self.nodes)

    def stop(self, timeout=None):
        """SIGTERM to every JVM first (so no node waits out its peers' shutdown alone), then each
        node's stop(); returns their results."""
        for n in self.nodes:
            if n.proc is not None and n.proc.poll() is None:
                n.proc.send_signal(signal.SIGTERM)
        return [n.stop(timeout) for n in self.nodes if n.proc is not None]

    def close(self, failed=False):
        try:
            self.stop()
        except RuntimeError:
            pass
        for n in self.nodes:
            n.close(failed)


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="cache folder (default %(default)s)")
    ap.add_argument("command", choices=["fetch", "start"],
                    help="fetch: download the jars and generate bin/; start: run a node until Ctrl-C/SIGTERM")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config (repeatable)")
    ap.add_argument("--nodes", type=int, default=1,
                    help="start: a KRaft quorum of N combined broker+controller nodes (default 1)")
    ap.add_argument("--no-rebalance-delay", action="store_true",
                    help="group.initial.rebalance.delay.ms=0 (Kafka's default is 3000)")
    args = ap.parse_args(argv)
    try:
        if args.command == "fetch":
            home, java = prepare(args.cache)
            log("KAFKA_PATH=%s" % home)
            log("# java: %s" % java)
            return 0
        overrides = {}
        if args.no_rebalance_delay:
            overrides["group.initial.rebalance.delay.ms"] = 0
        for kv in args.override:
            k, sep, v = kv.partition("=")
            if not sep:
                ap.error("--override wants KEY=VALUE, got %r" % kv)
            overrides[k] = v
        stop = {"signal": None}

        def on_signal(signum, frame):
            stop["signal"] = signum
        if args.nodes > 1:
            ref = KafkaCluster(args.cache, args.nodes, overrides)
        else:
            ref = KafkaReference(args.cache, overrides)
        try:
            ref.start()
            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            log(ref.bootstrap)
            nodes = ref.nodes if args.nodes > 1 else [ref]
            for n in nodes:
                log("# Kafka %s node %d pid %d, data %s, log %s" % (KAFKA_VERSION, n.node_id, n.pid, n.dir, n.log_path))
            log("# KAFKA_PATH=%s; Ctrl-C or SIGTERM stops it" % nodes[0].home)
            while stop["signal"] is None and ref.alive():
                time.sleep(0.5)
            if not ref.alive():
                log("ERROR: Kafka died; log(s) %s" % ", ".join(n.log_path for n in nodes))
                ref.close(failed=True)
                return 1
            rcs = ref.stop() if args.nodes > 1 else [ref.stop()]
            rc = next((x for x in rcs if x != 0), 0)
            log("# stopped (exit %s)" % rc)
            ref.close(failed=rc != 0)
            return 0 if rc == 0 else 1
        except BaseException:
            ref.close(failed=True)
            raise
    except Unavailable as e:
        log("SKIP: %s" % e)
        return SKIP_RC
    except ReferenceFailed as e:
        log("ERROR: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
