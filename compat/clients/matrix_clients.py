"""The client matrix's rows (run_matrix.py): how each client is installed and how its driver runs.

Every CLIENTS entry has a prepare(cache, workdir) that returns the driver's command line (raising
installers.Unavailable for a SKIP, installers.SetupFailed for a FAIL); run_client runs it once against
a bootstrap and returns its steps. kcat has no driver: drive_kcat runs the scenario with kcat itself.
"""
import os
import re
import shutil
import subprocess
import time

import installers
from matrix_checks import (CLIENT_TIMEOUT, FIRST, PARTITIONS, RECORDS, STEPS, STREAMS_STEPS, ClientFailed,
                           apply_checks, first_error_line, parse_records, parse_steps, run)

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the drivers: each returns (records, info) or raises ClientFailed ----

def kcat_version():
    rc, out, err = run(["kcat", "-V"], 10)
    m = re.search(r"^Version (\S+) \(.*?(librdkafka \S+)", out, re.M)
    return "kcat %s, %s" % (m.group(1), m.group(2)) if m else "kcat"


def drive_kcat(bootstrap, topic, group, workdir):
    """kcat cannot create topics or send per-record headers: the topic is auto-created by a
    metadata request (the matrix starts the node with num.partitions=3) and every record carries
    the same -H headers (h-client=kcat, h-fixed=1)."""
    deadline = time.monotonic() + CLIENT_TIMEOUT
    left = lambda: max(5, int(deadline - time.monotonic()))  # noqa: E731
    rc, out, err = run(["kcat", "-b", bootstrap, "-L", "-t", topic], left())
    if rc != 0:
        raise ClientFailed("kcat -L -t: " + first_error_line(out, err))
    # Wait (bounded) for the auto-created topic to show its partitions.
    for _ in range(50):
        rc, out, err = run(["kcat", "-b", bootstrap, "-L", "-t", topic], left())
        if out.count("partition ") >= PARTITIONS:
            break
        time.sleep(0.1)
    else:
        raise ClientFailed("auto-created topic %s did not show %d partitions: %s"
                           % (topic, PARTITIONS, out.strip()[-300:]))
    lines = "".join("k%04d:v%04d-kcat\n" % (i, i) for i in range(RECORDS)).encode()
    rc, out, err = run(["kcat", "-b", bootstrap, "-P", "-t", topic, "-K:", "-H", "h-client=kcat",
                        "-H", "h-fixed=1", "-X", "acks=all"], left(), stdin=lines)
    if rc != 0:
        raise ClientFailed("kcat -P: " + first_error_line(out, err))
    recs = []
    fmt = "REC\t%s\t%%p\t%%o\t%%k\t%%s\t%%h\n"
    # Phase 1: balanced consumer (-G), exactly FIRST records (-c), offsets stored per message
    # delivered to kcat and committed by the consumer close on exit (auto commit).
    for phase, extra in ((1, ["-c", str(FIRST)]), (2, ["-c", str(RECORDS - FIRST)])):
        cmd = ["kcat", "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
               "-f", fmt % phase, "-q"] + extra + [topic]
        rc, out, err = run(cmd, left())
        if rc != 0:
            raise ClientFailed("kcat -G phase %d: %s" % (phase, first_error_line(out, err)))
        recs += parse_records(out.replace("\n\n", "\n"))
    return recs, kcat_version()


def build_rdkafka_client(workdir):
    exe = os.path.join(workdir, "rdkafka_client")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ClientFailed("no C compiler to build rdkafka_client.c")
    rc, out, err = run([cc, "-O1", "-Wall", "-o", exe, os.path.join(HERE, "rdkafka_client.c"),
                        "-lrdkafka"], 120)
    if rc != 0:
        raise ClientFailed("building rdkafka_client.c: " + first_error_line(err, out))
    return exe


# ---- the clients ----

class Client:
    """One row group of the table: how to install the client and how to run its driver."""

    def __init__(self, name, label, kind, prepare, note=""):
        self.name, self.label, self.kind, self.prepare, self.note = name, label, kind, prepare, note

    @property
    def steps(self):
        return STREAMS_STEPS if self.kind == "streams" else STEPS


def _java(cls):
    def prepare(cache, workdir):
        java, cp = installers.java(cache)
        return [java, "-Xmx384m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.logFile=System.err", "-cp", cp, cls]
    return prepare


def _go(name):
    return lambda cache, workdir: [installers.go(cache, name)]


def _venv(script):
    return lambda cache, workdir: [installers.venv(cache), os.path.join(HERE, "python", script)]


def _system_python(module, script, apt):
    def prepare(cache, workdir):
        rc, _, _ = run(["/usr/bin/python3", "-c", "import " + module], 30)
        if rc != 0:
            raise installers.Unavailable("Debian's %s is not installed (apt-get install %s)" % (apt, apt))
        return ["/usr/bin/python3", os.path.join(HERE, "python", script)]
    return prepare


def _node(script):
    def prepare(cache, workdir):
        nodebin, home = installers.node(cache)
        return [nodebin, os.path.join(home, script)]
    return prepare


def _rdkafka(cache, workdir):
    exe = os.path.join(workdir, "rdkafka_client")
    if not os.path.exists(exe):
        try:
            build_rdkafka_client(workdir)
        except ClientFailed as e:
            if "rdkafka" in str(e) and ("No such file" in str(e) or "not found" in str(e)):
                raise installers.Unavailable("librdkafka-dev not installed (apt-get install librdkafka-dev): %s" % e)
            raise installers.SetupFailed(str(e))
    return [exe]


def _kcat(cache, workdir):
    if shutil.which("kcat") is None:
        raise installers.Unavailable("kcat not installed (apt-get install kcat)")
    return ["kcat"]


CLIENTS = [
    Client("java", "Apache Kafka Java client 4.4.0 (Maven)", "steps", _java("JavaClient")),
    Client("streams", "Kafka Streams 4.4.0 word count (Maven)", "streams", _java("StreamsWordCount")),
    Client("franz", "franz-go v1.22.3 kgo + kadm v1.20.0", "steps", _go("franz")),
    Client("sarama", "IBM/sarama v1.61.1", "steps", _go("sarama")),
    Client("kafkago", "segmentio/kafka-go v0.4.51", "steps", _go("kafkago")),
    Client("confluentgo", "confluent-kafka-go v2.11.1 (bundled librdkafka)", "steps", _go("confluentgo")),
    Client("kafkapython3", "kafka-python 3.x (PyPI, venv)", "steps", _venv("kafka_python_driver.py")),
    Client("aiokafka", "aiokafka 0.14 (PyPI, venv)", "steps", _venv("aiokafka_driver.py")),
    Client("confluent2", "confluent-kafka 2.16 (PyPI, venv)", "steps", _venv("confluent_driver.py")),
    Client("kafkajs", "kafkajs 2.2.4 (npm)", "steps", _node("kafkajs_driver.js")),
    Client("platformatic", "@platformatic/kafka (npm)", "steps", _node("platformatic_driver.mjs")),
    Client("kcat", "kcat 1.7.1 (Debian)", "kcat", _kcat),
    Client("rdkafka", "librdkafka 2.0.2 C (Debian)", "legacy", _rdkafka),
    Client("confluent", "confluent-kafka 1.7 (Debian)", "steps",
           _system_python("confluent_kafka", "confluent_driver.py", "python3-confluent-kafka")),
    Client("kafkapython", "kafka-python 2.0.2 (Debian)", "steps",
           _system_python("kafka", "kafka_python_driver.py", "python3-kafka")),
]
BY_NAME = {c.name: c for c in CLIENTS}


def run_client(client, argv, bootstrap, stamp, workdir):
    """Runs one client's driver; returns ({step: (state, detail)}, info, {OUTPUT kind: text})."""
    topic = "matrix-%s-%s" % (client.name, stamp)
    group = "matrix-group-%s-%s" % (client.name, stamp)
    tail = [bootstrap, topic, group, str(RECORDS), str(PARTITIONS), str(FIRST)]
    if client.kind == "kcat":
        recs, info = drive_kcat(bootstrap, topic, group, workdir)
        steps = {s: ("SKIP", "kcat has no API for this") for s in STEPS}
        steps["create"] = ("SKIP", "kcat has no admin API: topic auto-created by Metadata (num.partitions=3)")
        steps["produce"] = ("PASS", "%d records, one set of -H headers" % RECORDS)
        steps["consume"] = steps["resume"] = ("PASS", "")
        steps["transactions"] = ("SKIP", "kcat has no transactional producer")
        return apply_checks(client, steps, recs), info, {}
    if client.kind == "streams":
        tail.append(os.path.join(workdir, "streams-state-" + stamp))
    env = dict(os.environ, MATRIX_CLIENT=client.name, PYTHONUNBUFFERED="1")
    try:
        p = subprocess.run(argv + tail, capture_output=True, timeout=CLIENT_TIMEOUT, env=env,
                           stdin=subprocess.DEVNULL)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        ended = None if p.returncode == 0 else "driver exited %d: %s" % (p.returncode, first_error_line(out, err))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        ended = "driver timed out after %d s" % CLIENT_TIMEOUT
    with open(os.path.join(workdir, "%s-%s.log" % (client.name, stamp)), "w") as f:
        f.write("$ %s\n--- stdout\n%s\n--- stderr\n%s\n" % (" ".join(argv + tail), out, err))
    steps, info, output = parse_steps(out)
    if client.kind == "legacy":  # rdkafka_client.c: PRODUCED / REC / CONSUMED lines only
        legacy = {s: ("FAIL", "driver ended before this step: %s" % (ended or first_error_line(out, err)))
                  for s in STEPS}
        legacy.update(steps)  # the STEP lines it prints after the resume
        if "PRODUCED" in out:
            legacy["create"] = ("PASS", "rd_kafka_CreateTopics")
            legacy["produce"] = ("PASS", "%d records" % RECORDS)
        else:
            legacy["create"] = legacy["produce"] = ("FAIL", first_error_line(out, err))
        legacy["consume"] = legacy["resume"] = (("PASS", "") if "CONSUMED" in out
                                                else ("FAIL", first_error_line(out, err)))
        steps = legacy
    for s in client.steps:
        if s not in steps and s != "output_equals_kafka":
            steps[s] = ("FAIL", "driver ended before this step: %s" % (ended or first_error_line(out, err)))
    if client.kind != "streams":
        steps = apply_checks(client, steps, parse_records(out), out)
    return steps, info, output
