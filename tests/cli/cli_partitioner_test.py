#!/usr/bin/env python3
"""Issue #19, acceptance 2: `sluice produce` sends each key to the partition the Java client's default partitioner
picks. For 10,000 random keys (seeded, printed) on topics of 1, 3, 7 and 12 partitions, kafka-clients 4.4.0's
KafkaProducer (tests/cli/KeyPartitions.java, compiled here against the pinned jars of compat/clients/installers.py)
and `sluice produce -K :` each write the keys into a topic of their own on a real Sluice broker; the partition of
every key is read back with kcat from both topics (and taken from the Java client's RecordMetadata) and must be the
same for every key. Exit 0 pass, 1 fail, 77 skip (no broker binary, no Java client, no kcat).

  cli_partitioner_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache [--seed N]
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402

PARTITION_COUNTS = [1, 3, 7, 12]
KEYS = 10000
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.#/ é日本ß"


def java_command(cache):
    """Compiles KeyPartitions.java into <cache>/java-clients-4.4.0/cli-classes; returns the java command."""
    java_bin, classpath = installers.java_program(cache, os.path.join(HERE, "KeyPartitions.java"), "cli-classes")
    return [java_bin, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
            "KeyPartitions"]


def random_keys(rng):
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(KEYS)]


def kcat_key_partitions(bootstrap, topic):
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-e", "-q", "-f", "%k\t%p\n"],
                         capture_output=True, timeout=120, check=True).stdout.decode("utf-8")
    pairs = [line.split("\t") for line in out.splitlines()]
    return [(k, int(p)) for k, p in pairs]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--broker", default="")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary")
        return h.SKIP
    if not shutil.which("kcat"):
        print("SKIPPED: no kcat")
        return h.SKIP
    try:
        java = java_command(args.cache)
    except (installers.Unavailable, installers.SetupFailed) as e:
        print("SKIPPED: no Java client: %s" % e)
        return h.SKIP
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)

    def body(broker, check):
        cli = [binary, "--brokers", broker.bootstrap]
        for n in PARTITION_COUNTS:
            keys = random_keys(rng)
            for t in ("java-%d" % n, "cli-%d" % n):
                r = subprocess.run(cli + ["topic", "create", t, "--partitions", str(n)], capture_output=True, timeout=60)
                check.eq(r.returncode, 0, "create %s: %s" % (t, r.stderr))
            jr = subprocess.run(java + [broker.bootstrap, "java-%d" % n], input="\n".join(keys).encode("utf-8"),
                                capture_output=True, timeout=300)
            if not check.eq(jr.returncode, 0, "Java producer on %d partitions: %s" % (n, jr.stderr[-2000:])):
                continue
            java_pairs = [(k, int(p)) for k, p in (l.split("\t") for l in jr.stdout.decode("utf-8").splitlines())]
            check.eq([k for k, _ in java_pairs], keys, "Java producer answered every key in order (%d partitions)" % n)
            java_map = dict(java_pairs)
            # The Java client's topic read back with kcat: the partitions its RecordMetadata named.
            check.eq(sorted(kcat_key_partitions(broker.bootstrap, "java-%d" % n)), sorted(java_pairs),
                     "kcat reads the Java client's keys where it said it wrote them (%d partitions)" % n)
            lines = "".join("%s:%s\n" % (k, k) for k in keys)
            pr = subprocess.run(cli + ["produce", "cli-%d" % n, "--key-separator", ":", "--quiet"],
                                input=lines.encode("utf-8"), capture_output=True, timeout=120)
            check.eq(pr.returncode, 0, "sluice produce on %d partitions: %s" % (n, pr.stderr))
            cli_pairs = kcat_key_partitions(broker.bootstrap, "cli-%d" % n)
            check.eq(len(cli_pairs), KEYS, "records sluice produce wrote (%d partitions)" % n)
            differ = [(k, p, java_map.get(k)) for k, p in cli_pairs if java_map.get(k) != p]
            check.eq(differ[:10], [], "keys whose partition differs from the Java client's (%d partitions)" % n)
            used = len(set(p for _, p in cli_pairs))
            check.eq(used, n, "partitions used for %d random keys on %d partitions" % (KEYS, n))
            print("%2d partitions: %d keys, %d differ from the Java client, %d partitions used" %
                  (n, len(cli_pairs), len(differ), used))

    return h.run(body, binary)


if __name__ == "__main__":
    sys.exit(main())
