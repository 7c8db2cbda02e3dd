#!/usr/bin/env python3
"""DescribeTopicPartitions (KIP-966, issue #21) with the Java admin client 4.4: describeTopics of a 5-partition and
a 3-partition topic with partitionSizeLimitPerResponse 2 (the client follows NextCursor over several pages) and with
the default limit, and of an unknown topic (DescribeTopicsPaged.java). Checks every partition in order with this
broker as leader, UnknownTopicOrPartitionException for the unknown topic, and, on Sluice, that the client used
DescribeTopicPartitions (kafka_network_requestmetrics_requests_total{request="DescribeTopicPartitions"} >= 5:
pages of 2 partitions over 8 partitions, plus the default-limit call) rather than Metadata.

Usage: describe_topic_partitions_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
       describe_topic_partitions_test.py --reference kafka --cache build-tests/compat-cache   (Apache Kafka 4.4)
Exit 0 pass, 1 fail, 77 skipped (no binary, no Java or no Maven Central).
"""
import os
import re
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402

HTTP_PORT = h.pick_free_port()


def main(broker, check, args):
    try:
        java_bin, classpath = installers.java_program(args.cache or os.path.join(REPO, "build-tests", "compat-cache"),
                                                      os.path.join(HERE, "DescribeTopicsPaged.java"),
                                                      "describe-topics-paged-classes")
    except (installers.Unavailable, installers.SetupFailed) as e:
        check.true(False, "no Java client: %s" % e)
        return
    p = subprocess.run([java_bin, "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
                        "DescribeTopicsPaged", broker.bootstrap, "paged"], capture_output=True, text=True, timeout=120)
    print(p.stdout.strip())
    check.eq(p.returncode, 0, "driver exit code (stderr tail: %s)" % p.stderr[-800:])
    lines = p.stdout.splitlines()
    for limit in (2, 2000):
        for name, n in (("paged-a", 5), ("paged-b", 3)):
            want = "TOPIC %s limit=%d partitions=%s leaders=%s" % (
                name, limit, ",".join(str(i) for i in range(n)), ",".join(["1"] * n))
            check.true(want in lines, "line %r" % want)
    check.true("UNKNOWN UnknownTopicOrPartitionException" in lines, "unknown topic refused")
    if isinstance(broker, h.ReferenceBroker):
        return
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % HTTP_PORT, timeout=10) as r:
        text = r.read().decode()
    used = sum(float(m.group(1)) for m in re.finditer(
        r'^kafka_network_requestmetrics_requests_total\{[^}]*request="DescribeTopicPartitions"[^}]*\} (\S+)$', text,
        re.M))
    print("DescribeTopicPartitions requests: %d" % used)
    check.true(used >= 5, "the admin client paged with DescribeTopicPartitions (%d requests)" % used)


if __name__ == "__main__":
    sys.exit(h.run_against(main, {"broker.id": "1", "http.listeners": "http://127.0.0.1:%d" % HTTP_PORT},
                           description=__doc__, add_args=lambda ap: None))
