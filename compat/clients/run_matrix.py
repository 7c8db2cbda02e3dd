#!/usr/bin/python3
"""Client matrix: the same scenario with kcat, librdkafka C, confluent-kafka-python and kafka-python.

Scenario per client (fresh topic and group per client): create a 3-partition topic; produce 1,000
keyed records with headers (acks=all); consume in a consumer group until 500 records, commit exactly
what was read, close; a second consumer in the same group resumes and must read exactly the other
500. Every consumed record is checked: key k<i> -> value v<i>-<client>, headers, each (partition,
offset) once, per partition offsets dense 0..n-1 over both phases, and phase 2 starts where phase 1
committed.

    /usr/bin/python3 compat/clients/run_matrix.py --broker build/broker/sluice   # starts a node
    /usr/bin/python3 compat/clients/run_matrix.py --bootstrap 127.0.0.1:9092      # existing broker
    /usr/bin/python3 compat/clients/run_matrix.py --reference kafka               # Apache Kafka 4.4.0
        (compat/kafka/kafka_reference.py: jars from Maven Central cached under --cache)
    ... --clients kcat,rdkafka   (default: all four)

Prints one line per client (`PASS <client> ...` or `FAIL <client>: <first error>`, `SKIP <client>:
<why>` when the client is not installed) and `N passed, N failed, N skipped`. Exit 0 when nothing
failed, 1 on a failure, 77 when there is no broker at all (ctest SKIP_RETURN_CODE).
Always run with /usr/bin/python3 (Debian's python3-kafka and python3-confluent-kafka live there).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

RECORDS = 1000
PARTITIONS = 3
FIRST = 500
CLIENT_TIMEOUT = 180  # seconds for one client's whole scenario
ALL_CLIENTS = ["kcat", "rdkafka", "confluent", "kafkapython"]


class ClientFailed(Exception):
    pass


def run(cmd, timeout, stdin=None):
    """Runs cmd; returns (rc, stdout, stderr). A timeout is a failure naming the command."""
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClientFailed("timed out after %d s: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_error_line(*texts):
    for t in texts:
        for line in t.splitlines():
            s = line.strip()
            if s.startswith("ERROR"):
                return s[6:].strip()
    for t in texts:
        for line in t.splitlines():
            low = line.lower()
            if "error" in low or "fail" in low or "exception" in low:
                return line.strip()[:300]
    for t in texts:
        lines = [l for l in t.splitlines() if l.strip()]
        if lines:
            return lines[-1][:300]
    return "no output"


def parse_records(text):
    recs = []
    for line in text.splitlines():
        if not line.startswith("REC\t"):
            continue
        parts = line.split("\t")
        while len(parts) < 8:
            parts.append("")
        _, phase, part, off, key, value, hdrs = parts[:7]
        recs.append({"phase": int(phase), "partition": int(part), "offset": int(off), "key": key,
                     "value": value, "headers": hdrs})
    return recs


# ---- the drivers: each returns (records, info) or raises ClientFailed ----

def drive_program(cmd, timeout):
    rc, out, err = run(cmd, timeout)
    if rc != 0 or "CONSUMED" not in out:
        raise ClientFailed(first_error_line(out, err) + (" (exit %d)" % rc if rc else ""))
    info = next((l[5:] for l in out.splitlines() if l.startswith("INFO ")), "")
    return parse_records(out), info


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


# ---- checks ----

def check(client, recs):
    """Returns a list of problems (empty = pass)."""
    problems = []
    p1 = [r for r in recs if r["phase"] == 1]
    p2 = [r for r in recs if r["phase"] == 2]
    if len(p1) != FIRST:
        problems.append("phase 1 read %d records, expected %d" % (len(p1), FIRST))
    if len(p1) + len(p2) != RECORDS:
        problems.append("phases read %d + %d records, expected %d in total"
                        % (len(p1), len(p2), RECORDS))
    seen = {}
    keys = set()
    for r in recs:
        po = (r["partition"], r["offset"])
        if po in seen:
            problems.append("partition %d offset %d read twice (phases %d and %d): resume did not "
                            "start at the committed offset" % (po[0], po[1], seen[po], r["phase"]))
            continue
        seen[po] = r["phase"]
        k = r["key"]
        if not (len(k) == 5 and k[0] == "k" and k[1:].isdigit()):
            problems.append("bad key %r at %s" % (k, po))
            continue
        i = int(k[1:])
        keys.add(i)
        if r["value"] != "v%04d-%s" % (i, client):
            problems.append("key %s: value %r" % (k, r["value"]))
        hdrs = r["headers"]
        want = "h-client=kcat,h-fixed=1" if client == "kcat" else "h-index=%d,h-client=%s" % (i, client)
        if hdrs != want:
            problems.append("key %s: headers %r, expected %r" % (k, hdrs, want))
    missing = sorted(set(range(RECORDS)) - keys)
    if missing:
        problems.append("%d records never read (first keys: %s)"
                        % (len(missing), ", ".join("k%04d" % i for i in missing[:5])))
    by_part = {}
    for (p, o), ph in seen.items():
        by_part.setdefault(p, []).append((o, ph))
    for p, offs in sorted(by_part.items()):
        offs.sort()
        if [o for o, _ in offs] != list(range(len(offs))):
            problems.append("partition %d: offsets not dense from 0 (%s...)"
                            % (p, [o for o, _ in offs][:10]))
        phases = [ph for _, ph in offs]
        if phases != sorted(phases):
            problems.append("partition %d: phase 2 read offsets below phase 1's commit" % p)
    if len(by_part) != PARTITIONS:
        problems.append("records came from %d partitions, expected %d" % (len(by_part), PARTITIONS))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""),
                    help="sluice executable: start a single node for the run")
    ap.add_argument("--bootstrap", default="", help="use a running broker instead")
    ap.add_argument("--reference", choices=["kafka"], default="",
                    help="run against a reference broker started here instead of Sluice: kafka = Apache "
                         "Kafka 4.4.0 as one KRaft node (compat/kafka/kafka_reference.py)")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE",
                                                       os.path.join(REPO, "build", "compat-cache")),
                    help="where --reference kafka keeps its jars")
    ap.add_argument("--clients", default=",".join(ALL_CLIENTS))
    args = ap.parse_args()
    clients = [c for c in args.clients.split(",") if c]

    broker = None
    workdir = tempfile.mkdtemp(prefix="sluice-clients-")
    if args.bootstrap:
        bootstrap = args.bootstrap
    elif args.reference == "kafka":
        sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
        from kafka_reference import KafkaReference, ReferenceFailed, Unavailable
        broker = KafkaReference(args.cache, {"num.partitions": PARTITIONS})
        try:
            broker.start()
        except (Unavailable, ReferenceFailed) as e:
            broker.close(failed=isinstance(e, ReferenceFailed))
            print("%s: Kafka reference: %s" % ("SKIPPED" if isinstance(e, Unavailable) else "ERROR", e))
            return 77 if isinstance(e, Unavailable) else 1
        bootstrap = broker.bootstrap
    else:
        if not args.broker or not os.access(args.broker, os.X_OK):
            print("SKIPPED: no broker (pass --broker build/broker/sluice or --bootstrap HOST:PORT)")
            return 77
        from sluice_harness import Broker
        broker = Broker(args.broker, {"num.partitions": PARTITIONS})
        broker.start()
        bootstrap = broker.bootstrap
    print("# client matrix against %s (%s)" % (bootstrap, "existing broker" if broker is None else
                                                 "Kafka 4.4.0 reference started by this script"
                                                 if args.reference else "node started by this script"),
          flush=True)
    passed = failed = skipped = 0
    stamp = "%d-%d" % (os.getpid(), int(time.time()))
    try:
        for client in clients:
            topic = "matrix-%s-%s" % (client, stamp)
            group = "matrix-group-%s-%s" % (client, stamp)
            argv_tail = [bootstrap, topic, group, str(RECORDS), str(PARTITIONS), str(FIRST)]
            t0 = time.monotonic()
            try:
                if client == "kcat":
                    if shutil.which("kcat") is None:
                        raise FileNotFoundError("kcat not installed (apt-get install kcat)")
                    recs, info = drive_kcat(bootstrap, topic, group, workdir)
                elif client == "rdkafka":
                    exe = build_rdkafka_client(workdir)
                    recs, info = drive_program([exe] + argv_tail, CLIENT_TIMEOUT)
                elif client == "confluent":
                    rc, _, _ = run(["/usr/bin/python3", "-c", "import confluent_kafka"], 30)
                    if rc != 0:
                        raise FileNotFoundError("python3-confluent-kafka not installed "
                                                "(apt-get install python3-confluent-kafka)")
                    recs, info = drive_program(["/usr/bin/python3", os.path.join(HERE, "confluent_client.py")]
                                               + argv_tail, CLIENT_TIMEOUT)
                elif client == "kafkapython":
                    rc, _, _ = run(["/usr/bin/python3", "-c", "import kafka"], 30)
                    if rc != 0:
                        raise FileNotFoundError("python3-kafka not installed (apt-get install python3-kafka)")
                    recs, info = drive_program(["/usr/bin/python3", os.path.join(HERE, "kafka_python_client.py")]
                                               + argv_tail, CLIENT_TIMEOUT)
                else:
                    raise FileNotFoundError("unknown client %r (known: %s)" % (client, ", ".join(ALL_CLIENTS)))
            except FileNotFoundError as e:
                skipped += 1
                print("SKIP %-12s %s" % (client, e), flush=True)
                continue
            except ClientFailed as e:
                failed += 1
                print("FAIL %-12s %s (%.1f s)" % (client, e, time.monotonic() - t0), flush=True)
                continue
            problems = check(client, recs)
            secs = time.monotonic() - t0
            if problems:
                failed += 1
                print("FAIL %-12s %s (%d problems; %.1f s) [%s]"
                      % (client, problems[0], len(problems), secs, info), flush=True)
                for p in problems[1:6]:
                    print("       %s" % p)
            else:
                passed += 1
                print("PASS %-12s %d records produced, %d+%d consumed in group, resumed at the "
                      "commit (%.1f s) [%s]" % (client, RECORDS, FIRST, RECORDS - FIRST, secs, info),
                      flush=True)
    finally:
        if broker is not None:
            alive = broker.alive()
            rc = broker.stop() if alive else None
            if not alive or rc != 0:
                failed += 1
                print("FAIL broker: %s" % ("died during the run" if not alive else "exit status %s" % rc))
                print(broker.log_text()[-5000:])
            broker.close(failed=failed > 0)
            if failed:
                print("# broker log kept in %s" % broker.log_path)
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
