#!/usr/bin/env python3
"""Kafka Streams 4.4.0 over a compacted changelog (issue #20): tests/integration/StreamsCompaction.java, compiled here
against the client matrix's pinned jars (compat/clients/installers.py), runs a word count whose changelog
(cleanup.policy=compact, segment.ms 1000 through Streams' topic.* configs) the broker's cleaner compacts while the
application runs (from some 12,500 store updates to at most 3 records per word); then the application restarts with
its local state wiped, restores from the compacted changelog and counts 2,000 more lines exactly.

Usage: streams_compaction_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
Exit 0 pass, 1 fail, 77 skipped (no binary, no Java or no Maven Central).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402


def main_checks(broker, check, java_bin, classpath):
    state = tempfile.mkdtemp(prefix="sluice-streams-state-")
    try:
        p = subprocess.run([java_bin, "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
                            "StreamsCompaction", broker.bootstrap, state], capture_output=True, text=True, timeout=420)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    steps = [line for line in p.stdout.splitlines() if line.startswith("STEP ")]
    for line in steps:
        print(line)
        check.true(" PASS " in line, line)
    check.eq([line.split()[1] for line in steps], ["count", "changelog-config", "changelog-compacted", "restore"],
             "steps reported")
    check.eq(p.returncode, 0, "driver exit code (stderr tail: %s)" % p.stderr[-800:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    try:
        java_bin, classpath = installers.java_program(args.cache, os.path.join(HERE, "StreamsCompaction.java"),
                                                      "streams-compaction-classes")
    except (installers.Unavailable, installers.SetupFailed) as e:
        print("SKIP: no Kafka Streams: %s" % e)
        return h.SKIP
    return h.run(lambda broker, check: main_checks(broker, check, java_bin, classpath), args.broker,
                 {"log.cleaner.backoff.ms": "200"})


if __name__ == "__main__":
    sys.exit(main())
