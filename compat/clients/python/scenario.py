"""What the Python drivers of the client matrix share: arguments, record contents, and the output
protocol of run_matrix.py (`STEP <step> PASS|FAIL|SKIP <detail>`, `REC` lines, `INFO`; ../README.md)."""
import os
import sys
import time
import traceback

TX_SKIP = "transactions not built yet in Sluice"


class Skip(Exception):
    """The client has no API for this step: SKIP with this reason."""


class Args:
    def __init__(self, argv):
        if len(argv) < 7:
            sys.exit("usage: driver BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST")
        self.bootstrap, self.topic, self.group = argv[1], argv[2], argv[3]
        self.records, self.partitions, self.first = int(argv[4]), int(argv[5]), int(argv[6])
        self.client = os.environ.get("MATRIX_CLIENT", "python")
        self.base = int(time.time() * 1000) - 60000  # CreateTime of record i is base + i


def out(line):
    print(line, flush=True)


def step(name, fn):
    """Runs fn(); prints PASS with its detail, SKIP on Skip, FAIL with the exception."""
    try:
        detail = fn()
        out("STEP %s PASS %s" % (name, str(detail or "").replace("\n", " ")))
        return True
    except Skip as e:
        out("STEP %s SKIP %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - reported as the step's failure
        traceback.print_exc(file=sys.stderr)
        out("STEP %s FAIL %s: %s" % (name, type(e).__name__, str(e).replace("\n", " ")[:400]))
    return False


def key(i):
    return "k%04d" % i


def value(i, client):
    return "v%04d-%s" % (i, client)


def headers(i, client):
    return [("h-index", str(i).encode()), ("h-client", client.encode())]


class Reads:
    """Consumed records per partition (indexes in offset order); prints REC lines."""

    def __init__(self):
        self.by_part = {}

    def rec(self, phase, partition, offset, k, v, hdrs):
        hs = ",".join("%s=%s" % (hk, (hv or b"").decode("utf-8", "replace")) for hk, hv in (hdrs or []))
        out("REC\t%d\t%d\t%d\t%s\t%s\t%s" % (phase, partition, offset, k, v, hs))
        try:
            self.by_part.setdefault(partition, []).append(int(k[1:]))
        except (ValueError, TypeError):
            pass

    def expected_after(self, partition, first):
        """(records with index < first in the partition, records in it): ListOffsets for timestamp
        base+first must answer the former (records are produced in index order, CreateTime base+i)."""
        idx = self.by_part.get(partition, [])
        return sum(1 for i in idx if i < first), len(idx)

    def check_time_offset(self, partition, first, off, no_record=(None, -1), end_offset_ok=False):
        """Judges the offset a client got for timestamp base+first on `partition`: expected_after's count,
        or, when no record is at or after that time, one of `no_record` (what the client answers then) or,
        with end_offset_ok, the partition's end offset. Returns "partition->offset"; raises AssertionError."""
        want, size = self.expected_after(partition, first)
        if not (off == want or (want == size and (off in no_record or (end_offset_ok and off == size)))):
            raise AssertionError("partition %d: offset %s for timestamp base+%d, expected %d"
                                 % (partition, off, first, want))
        return "%d->%s" % (partition, off)


def phase_done(got, want):
    """The verdict of a consume phase that took `got` of `want` records within its 60 s."""
    if got < want:
        raise AssertionError("read %d of %d records in 60 s" % (got, want))
    return "%d records, committed" % got


def check_split(owned_a, owned_b, revoked_a, partitions):
    """The cooperative rebalance's verdict: A and B split every partition, A revoked only B's share."""
    a, b = set(owned_a), set(owned_b)
    if not a or not b or a & b or len(a | b) != partitions:
        raise AssertionError("no clean split: A %s B %s" % (sorted(a), sorted(b)))
    if sorted(revoked_a) != sorted(b):
        raise AssertionError("A revoked %s but B owns %s (not incremental)" % (sorted(revoked_a), sorted(b)))
    return "A %s + B %s, A revoked only %s" % (sorted(a), sorted(b), sorted(revoked_a))
