#!/usr/bin/python3
"""Smoke test of the Kafka 4.4.0 reference broker (ctest compat.kafka_reference).

Fetches the jars (once per cache), starts a KafkaReference node, creates a 1-partition topic with
the generated bin/kafka-topics.sh, produces 10 keyed records with kcat (acks=all) and consumes them
back with kcat, checking every key, value and offset; then stops the node and checks that its JVM
is gone and its temp dir removed. Prints the download and start times.

    /usr/bin/python3 compat/kafka/smoke_test.py --cache build-tests/compat-cache

Exit 0 pass, 1 fail, 77 skip (no mvn / Maven Central unreachable / no Java 17 / no kcat).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kafka_reference as kr  # noqa: E402

RECORDS = 10
TOPIC = "smoke"


def run(cmd, timeout, stdin=None, env=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def pid_exists(pid):
    return os.path.exists("/proc/%d" % pid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=kr.DEFAULT_CACHE)
    args = ap.parse_args()
    if shutil.which("kcat") is None:
        print("SKIP: kcat not installed (apt-get install kcat)")
        return kr.SKIP_RC
    failures = []
    t0 = time.monotonic()
    try:
        home, _ = kr.prepare(args.cache)
    except kr.Unavailable as e:
        print("SKIP: %s" % e)
        return kr.SKIP_RC
    except kr.ReferenceFailed as e:
        print("FAIL: %s" % e)
        return 1
    t_fetch = time.monotonic() - t0
    print("# jars and bin/ ready in %.1f s (KAFKA_PATH=%s)" % (t_fetch, home), flush=True)

    ref = kr.KafkaReference(args.cache)
    t1 = time.monotonic()
    try:
        ref.start()
    except (kr.ReferenceFailed, kr.Unavailable) as e:
        ref.close(failed=True)
        print("FAIL: %s" % e)
        return 1
    t_start = time.monotonic() - t1
    print("# Kafka %s serving on %s after %.1f s (pid %d, data %s)"
          % (kr.KAFKA_VERSION, ref.bootstrap, t_start, ref.pid, ref.dir), flush=True)
    pid, tmpdir = ref.pid, ref.dir
    try:
        rc, out, err = run([os.path.join(home, "bin", "kafka-topics.sh"), "--bootstrap-server", ref.bootstrap,
                            "--create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1"], 120)
        if rc != 0 or out.strip() != "Created topic %s." % TOPIC:
            failures.append("kafka-topics.sh --create: exit %d, stdout %r, stderr %r" % (rc, out, err[-500:]))
        rc, out, err = run([os.path.join(home, "bin", "kafka-topics.sh"), "--bootstrap-server", ref.bootstrap,
                            "--describe", "--topic", TOPIC], 120)
        if rc != 0 or "PartitionCount: 1" not in out or "ReplicationFactor: 1" not in out:
            failures.append("kafka-topics.sh --describe: exit %d, stdout %r" % (rc, out))
        lines = "".join("k%d:v%d\n" % (i, i) for i in range(RECORDS)).encode()
        rc, out, err = run(["kcat", "-b", ref.bootstrap, "-P", "-t", TOPIC, "-K:", "-X", "acks=all"], 60, stdin=lines)
        if rc != 0:
            failures.append("kcat -P: exit %d: %s" % (rc, err[-500:]))
        rc, out, err = run(["kcat", "-b", ref.bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q",
                            "-f", "%p %o %k %s\\n"], 60)
        got = [l for l in out.splitlines() if l.strip()]
        want = ["0 %d k%d v%d" % (i, i, i) for i in range(RECORDS)]
        if rc != 0 or got != want:
            failures.append("kcat -C: exit %d, read %d records %r, expected %r; stderr %r"
                            % (rc, len(got), got[:12], want, err[-300:]))
        else:
            print("# produced and consumed %d records: %s ... %s" % (RECORDS, got[0], got[-1]))
    except subprocess.TimeoutExpired as e:
        failures.append("timed out: %s" % e)
    finally:
        t2 = time.monotonic()
        alive = ref.alive()
        try:
            rc = ref.stop() if alive else None
        except RuntimeError as e:
            rc = str(e)
        if not alive:
            failures.append("Kafka died during the test")
        elif rc != 0:
            failures.append("Kafka's exit on SIGTERM: %s (raw %s)" % (rc, ref.exit_status))
        print("# stopped in %.1f s (JVM exit status %s)" % (time.monotonic() - t2, ref.exit_status))
        ref.close(failed=bool(failures))
    if pid_exists(pid):
        failures.append("Kafka's JVM pid %d still exists after stop" % pid)
    if not failures and os.path.exists(tmpdir):
        failures.append("temp dir %s not removed" % tmpdir)
    for f in failures:
        print("FAIL: %s" % f)
    if failures:
        print("# Kafka log kept in %s" % ref.log_path)
        return 1
    print("PASS (fetch %.1f s, start %.1f s)" % (t_fetch, t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
