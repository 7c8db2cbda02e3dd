"""What the scripts of tests/integration/security share.

Importing it puts the repo's helper modules on the path (sluice_harness and kafka_wire, compat/clients' installers,
compat/kafka's kafka_reference). Then: the JAAS lines of Kafka's login modules, free ports, the wrapper of a broker
under test (Sluice through sluice_harness.Broker, Apache Kafka 4.4 through kafka_reference.KafkaReference) and
Kafka's controller listener, the command line both scripts take, and their report (one line a check, then the
table of checks by target).
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))                         # sluice_harness, kafka_wire
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))       # installers
sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))         # kafka_reference

import sluice_harness as h  # noqa: E402

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SCRAM_JAAS = SCRAM_MODULE + " required;"  # a broker's SCRAM entry: the users are in its credential store


def plain_jaas(users):
    """A broker's PLAIN entry: its users and their passwords ({user: password})."""
    return "%s required %s;" % (PLAIN_MODULE, " ".join('user_%s="%s"' % kv for kv in users.items()))


def login_jaas(module, user, password):
    """A client's sasl.jaas.config for PLAIN_MODULE or SCRAM_MODULE."""
    return '%s required username="%s" password="%s";' % (module, user, password)


def free_ports(n, taken=()):
    """n distinct free loopback ports, none of `taken`."""
    ports = []
    while len(ports) < n:
        p = h.pick_free_port()
        if p not in ports and p not in taken:
            ports.append(p)
    return ports


def add_kafka_controller(cfg, controller_port):
    """Apache Kafka's (KRaft) part of `cfg`, server.properties as a dict: its CONTROLLER listener, advertised with
    the others, and PLAINTEXT between brokers."""
    cfg["listeners"] += ",CONTROLLER://127.0.0.1:%d" % controller_port
    cfg["advertised.listeners"] = cfg["listeners"]
    cfg["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
    cfg["inter.broker.listener.name"] = "PLAINTEXT"
    return cfg


class BrokerUnderTest:
    """alive(), stop() (the exit code), close(failed) and log_text() of self.server: a sluice_harness.Broker or a
    kafka_reference.KafkaReference, set by the subclass."""

    def alive(self):
        return self.server.alive()

    def stop(self):
        return self.server.stop()

    def close(self, failed):
        self.server.close(failed=failed)

    def log_text(self):
        return self.server.log_text()


def logger(start):
    """log(msg): prints `# [seconds since start] msg`."""
    def log(msg):
        print("# [%5.1f s] %s" % (time.monotonic() - start, msg), flush=True)
    return log


def arg_parser(doc, reference_help):
    """--broker, --reference kafka (`reference_help`), --compare and --cache; the script adds its own options."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="", help="path of the sluice executable (or $SLUICE_BINARY)")
    ap.add_argument("--reference", choices=["kafka"], help=reference_help)
    ap.add_argument("--compare", action="store_true", help="run against Sluice and Kafka 4.4.0, side by side")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE",
                                                      os.path.join(REPO, "build-tests", "compat-cache")),
                    help="compat cache with the clients (and Kafka's jars); default build-tests/compat-cache")
    return ap


NO_BINARY = "SKIPPED: no sluice binary (pass --broker or set SLUICE_BINARY)"


def sluice_binary(args):
    """$SLUICE_BINARY, else --broker, when it is an executable; None otherwise."""
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    return binary if binary and os.access(binary, os.X_OK) else None


def print_report(columns, detail_limit, status_width, agreement):
    """columns: [(target name, {check: (status, detail, observed)})]. Prints `STATUS check[ [target]]: detail` for
    every check of every target (the detail on one line, at most `detail_limit` characters), an empty line, then
    the table: a row a check, each target's status in `status_width` characters and, with two targets,
    agreement(check, [each target's row]) -> (text, agree) at its end. Returns ({status: count}, rows that do not
    agree)."""
    names = []
    for _, rows in columns:
        for k in rows:
            if k not in names:
                names.append(k)
    for target, rows in columns:
        for k in names:
            if k in rows:
                status, detail, _ = rows[k]
                print("%s %s%s: %s" % (status, k, "" if len(columns) == 1 else " [%s]" % target,
                                       detail.replace("\n", " ")[:detail_limit]))
    print()
    width = max([len(n) for n in names] + [10])
    print("%-*s " % (width, "check") + " ".join("%-*s" % (status_width, t) for t, _ in columns) +
          (" agree" if len(columns) == 2 else ""))
    disagree = 0
    for k in names:
        row = [rows.get(k, ("-", "", "")) for _, rows in columns]
        line = "%-*s " % (width, k) + " ".join("%-*s" % (status_width, r[0]) for r in row)
        if len(columns) == 2:
            text, agree = agreement(k, row)
            line += " " + text
            disagree += not agree
        print(line)
    counts = {}
    for _, rows in columns:
        for status, _, _ in rows.values():
            counts[status] = counts.get(status, 0) + 1
    return counts, disagree


def summary(counts, disagree, columns):
    """The last log line: the checks by status and, with two targets, how many rows differ."""
    return "done: %s%s" % (", ".join("%s %d" % kv for kv in sorted(counts.items())),
                           ", %d rows differ between Sluice and Kafka" % disagree if len(columns) == 2 else "")
