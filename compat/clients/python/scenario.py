"""What the Python drivers of the client matrix share: arguments, record contents, and the output
protocol of run_matrix.py (`STEP <step> PASS|FAIL|SKIP <detail>`, `REC` lines, `INFO`; ../README.md)."""
import os
import sys
import time
import traceback

# The transactions step (../README.md): on TOPIC-txn, a transactional producer commits 30 records (and
# the group GROUP-txn's offset TXN_OFFSET for TOPIC partition 0 where the client can send offsets),
# aborts 20, commits 10. Record i of transaction t has key "k<i>", value "<client>-<TXN_TAGS[t]>-<i>"
# and goes to partition i % 3. A read_committed and a read_uncommitted consumer print what they read
# as TXN lines, the group's offset is printed as TXNOFFSET; run_matrix.py checks them.
TXN_TAGS = ("c", "a", "c2")
TXN_COUNTS = (30, 20, 10)
TXN_OFFSET = 7


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


def txn_records(t, client, partitions):
    """(partition, key, value) of transaction t's records (t = 0, 1, 2)."""
    return [(i % partitions, "k%d" % i, "%s-%s-%d" % (client, TXN_TAGS[t], i)) for i in range(TXN_COUNTS[t])]


def txn_rec(view, partition, offset, k, v):
    """Prints one record a consumer read from TOPIC-txn; view is "committed" or "uncommitted"."""
    out("TXN\t%s\t%d\t%d\t%s\t%s" % (view, partition, offset, k, v))


class TxnReader:
    """Counts the TXN records of one view: done() once `want` were read and 1 s more passed (an extra
    record is a failure too), or after 30 s."""

    def __init__(self, view, want):
        self.view, self.want, self.got = view, want, 0
        self.deadline = time.monotonic() + 30

    def rec(self, partition, offset, k, v):
        txn_rec(self.view, partition, offset, k, v)
        self.got += 1
        if self.got == self.want:
            self.deadline = min(self.deadline, time.monotonic() + 1)

    def done(self):
        return time.monotonic() >= self.deadline


def txn_wait_offset(fetch, sleep=time.sleep):
    """Calls fetch() (the group's committed offset for TOPIC partition 0, None when there is none)
    until it answers TXN_OFFSET, for at most 15 s (the offset shows once the COMMIT marker is in
    __consumer_offsets); prints TXNOFFSET with the last answer and returns it."""
    deadline = time.monotonic() + 15
    while True:
        o = fetch()
        if o == TXN_OFFSET or time.monotonic() > deadline:
            out("TXNOFFSET %s" % (-1 if o is None else o))
            return o
        sleep(0.2)
