#!/usr/bin/env python3
"""KIP-848 consumer groups (issue #21, acceptance 1) with the Java client 4.4 and group.protocol=consumer
(Kip848Group.java): three members subscribe to a 12-partition topic while a producer writes to every partition
every 20 ms.

Checks, from the driver's lines: the three share the partitions 4/4/4; when the third leaves, the other two take
6/6 without losing any partition they had (no revocation between the leave and the settled assignment: no
stop-the-world) and keep consuming through the change (records consumed in that window, with the window's length
printed); every partition's committed offset is at the log end after they stop; a new member resumes at the
committed offsets on all 12; the admin client describes a Consumer group, Stable, with one member. With
`--assignor range` the server-side range assignor is asked for instead of the default (uniform); its contiguous
ranges move (one member gives two partitions to the other, on Kafka 4.4 as here), so the no-revocation check is
for uniform only.

Usage: kip848_group_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache [--assignor range]
       kip848_group_test.py --reference kafka --cache build-tests/compat-cache   (Apache Kafka 4.4, same checks)
Exit 0 pass, 1 fail, 77 skipped (no binary, no Java or no Maven Central).
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402


def main(broker, check, args):
    try:
        java_bin, classpath = installers.java_program(args.cache or os.path.join(REPO, "build-tests", "compat-cache"),
                                                      os.path.join(HERE, "Kip848Group.java"), "kip848-group-classes")
    except (installers.Unavailable, installers.SetupFailed) as e:
        check.true(False, "no Java client: %s" % e)
        return
    assignor = args.assignor or ""
    p = subprocess.run([java_bin, "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
                        "Kip848Group", broker.bootstrap, "kip848-t", "kip848-g", assignor],
                       capture_output=True, text=True, timeout=420)
    print(p.stdout.strip())
    lines = p.stdout.splitlines()

    def line(prefix):
        found = [x for x in lines if x.startswith(prefix + " ")]
        return found[0][len(prefix) + 1:] if found else ""

    check.eq(line("ASSIGNED"), "4 4 4", "three members share 12 partitions")
    check.eq(line("AFTER_LEAVE"), "6 6", "the two left take the third's partitions")
    for name in ("m0", "m1"):
        during = [x for x in lines if x.startswith("DURING_LEAVE %s " % name)]
        m = re.search(r"consumed=(\d+) revocations=(\d+)", during[0]) if during else None
        check.true(m is not None, "%s reported the leave window" % name)
        if m and assignor != "range":
            # uniform is sticky; range keeps contiguous ranges, so one member gives up two partitions (Kafka too).
            check.eq(int(m.group(2)), 0, "%s lost none of its partitions while the group changed" % name)
        if m:
            check.true(int(m.group(1)) > 0, "%s kept consuming while the group changed (%s records)"
                       % (name, m.group(1)))
    check.eq(line("COMMITTED"), "partitions=12 at_end=true", "commits of all 12 partitions reached the log end")
    check.eq(line("RESUME"), "assigned=12 at_committed=12", "a restarted member resumes at the committed offsets")
    check.true(line("DESCRIBE").startswith("type=Consumer state=Stable members=1"),
               "described as a consumer group: %s" % line("DESCRIBE"))
    if assignor:
        check.true(line("DESCRIBE").endswith("assignor=" + assignor), "assignor %s in use" % assignor)
    check.eq(p.returncode, 0, "driver exit code (stderr tail: %s)" % p.stderr[-1500:])


if __name__ == "__main__":
    sys.exit(h.run_against(main, {"broker.id": "1"}, description=__doc__,
                           add_args=lambda ap: ap.add_argument("--assignor", default="")))
