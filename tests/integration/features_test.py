#!/usr/bin/env python3
"""Feature flags through Kafka 4.4's kafka-features.sh (the Java admin client: DescribeFeatures via ApiVersions,
UpdateFeatures) against a single Sluice node (issue #21).

Sluice supports no feature flags, and answers as Kafka 4.4's controller answers for features it does not know
(compat/diff/scenarios/update_features.json compares the raw answers with Kafka 4.4):
 - `describe` lists no feature and exits 0;
 - `upgrade --feature group.version=1` (also with --dry-run, which sends ValidateOnly) fails, exit 1, naming the
   feature and "does not support this feature";
 - `disable --feature group.version` (level 0) fails: "Feature group.version not found";
 - `downgrade --feature x=-1 --unsafe` is refused by the tool itself (a negative level; the broker's own answer
   to one is in the compat diff).
Only loopback addresses; bounded. Exit 0 pass, 1 fail, 77 skipped (no Java or Kafka jars).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402


def main():
    args, skip = h.client_test_args(__doc__, __file__, modules=())
    if skip is not None:
        return skip
    home = h.kafka_tools_home(args.cache)
    if home is None:
        return h.SKIP

    def tool(broker, *words):
        p = subprocess.run([os.path.join(home, "bin", "kafka-features.sh"), "--bootstrap-server", broker.bootstrap]
                           + list(words), capture_output=True, text=True, timeout=120)
        out = (p.stdout + p.stderr).strip()
        print("$ kafka-features.sh %s -> %d\n%s" % (" ".join(words), p.returncode, out))
        return p.returncode, out

    def body(broker, check):
        rc, out = tool(broker, "describe")
        check.eq(rc, 0, "describe exits 0")
        check.true("Feature:" not in out, "describe lists no feature")
        for words in (["upgrade", "--feature", "group.version=1", "--dry-run"], ["upgrade", "--feature", "group.version=1"]):
            rc, out = tool(broker, *words)
            check.eq(rc, 1, "%s fails" % " ".join(words))
            check.true("Invalid update version 1 for feature group.version" in out and
                       "does not support this feature" in out, "%s: Kafka's INVALID_UPDATE_VERSION message" % words[-1])
        rc, out = tool(broker, "disable", "--feature", "group.version")
        check.eq(rc, 1, "disable fails")
        check.true("Feature group.version not found" in out, "disable: the feature is not found")
        rc, out = tool(broker, "downgrade", "--feature", "sluice.test=-1", "--unsafe")
        check.true(rc != 0, "a negative level is refused")
        check.true("negative version level" in out, "the tool refuses the negative level itself")

    return h.run(body, args.broker)


if __name__ == "__main__":
    sys.exit(main())
