"""The client matrix's scenario sizes, its driver-output parsing and its record checks (run_matrix.py).

A driver prints `STEP <step> PASS|FAIL|SKIP <detail>`, `REC phase partition offset key value headers`
(tab-separated), `INFO ...` and for Streams `OUTPUT ...` lines (README.md, "The driver protocol");
the checks here turn the REC lines into a verdict on the consume and resume steps.
"""
import subprocess

RECORDS = 1000
PARTITIONS = 3
FIRST = 500
CLIENT_TIMEOUT = 300  # seconds for one client's whole scenario
# transactions runs before delete: its send_offsets_to_transaction commits an offset of TOPIC
STEPS = ["create", "produce", "consume", "resume", "offsets_for_times", "rebalance", "describe",
         "delete_records", "transactions", "delete"]
STREAMS_STEPS = ["create", "produce", "wordcount", "internal_topics", "output_equals_kafka", "wordcount_eos"]
# The transactions step (README.md): on TOPIC-txn, 3 transactions of a transactional producer,
# committed (TXN_COMMITTED records, + the group GROUP-txn's offset TXN_OFFSET for TOPIC partition 0),
# aborted (TXN_ABORTED), committed (TXN_COMMITTED2); record i of each goes to partition i % 3.
TXN_COMMITTED, TXN_ABORTED, TXN_COMMITTED2, TXN_OFFSET = 30, 20, 10, 7


class ClientFailed(Exception):
    """A client's run could not be had (a command timed out, a build failed): its rows FAIL."""


def run(cmd, timeout, stdin=None):
    """Runs cmd; returns (rc, stdout, stderr). A timeout is a failure naming the command."""
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClientFailed("timed out after %d s: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_error_line(*texts):
    """The most telling line of a failed command's outputs (an ERROR line, else one naming an error)."""
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
    """The REC lines of a driver's stdout as dicts (phase, partition, offset, key, value, headers)."""
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


def phase1_problems(client, recs):
    """Problems of the first consume phase alone: its count and its records' contents."""
    p1 = [r for r in recs if r["phase"] == 1]
    problems = [] if len(p1) == FIRST else ["phase 1 read %d records, expected %d" % (len(p1), FIRST)]
    return problems + [p for p in check(client, p1) if not p.startswith(("phase", "records came from"))
                       and "never read" not in p]


def parse_txn(text):
    """The transactions step's lines of a driver's stdout: ({"committed": [(partition, offset, key,
    value)], "uncommitted": [...]}, [offsets reported by TXNOFFSET lines])."""
    views, offsets = {"committed": [], "uncommitted": []}, []
    for line in text.splitlines():
        if line.startswith("TXN\t"):
            parts = line.split("\t")
            if len(parts) >= 6 and parts[1] in views:
                views[parts[1]].append((int(parts[2]), int(parts[3]), parts[4], parts[5]))
        elif line.startswith("TXNOFFSET "):
            offsets.append(line.split()[1])
    return views, offsets


def txn_expected(client, committed_only):
    """partition -> [(key, value)] in produce order: what a read_committed (committed_only) or a
    read_uncommitted consumer must read from TOPIC-txn."""
    want = {p: [] for p in range(PARTITIONS)}
    batches = [("c", TXN_COMMITTED), ("a", TXN_ABORTED), ("c2", TXN_COMMITTED2)]
    for tag, n in batches:
        if committed_only and tag == "a":
            continue
        for i in range(n):
            want[i % PARTITIONS].append(("k%d" % i, "%s-%s-%d" % (client, tag, i)))
    return want


def txn_problems(client, text, detail):
    """Problems of the transactions step (empty = pass): exactly the committed records per partition
    in produce order for read_committed, all of them for read_uncommitted, the same offsets in both
    views, and the group's committed offset where the driver sent offsets."""
    views, offsets = parse_txn(text)
    problems = []
    at = {}  # (partition, offset) -> value, from the read_uncommitted view
    for r in views["uncommitted"]:
        at[(r[0], r[1])] = r[3]
    for view, committed_only in (("committed", True), ("uncommitted", False)):
        recs = views[view]
        want = txn_expected(client, committed_only)
        total = sum(len(v) for v in want.values())
        if len(recs) != total:
            aborted = sum(1 for r in recs if "-a-" in r[3])
            problems.append("read_%s read %d records, expected %d%s" % (
                view, len(recs), total, " (%d of them aborted)" % aborted if committed_only and aborted else ""))
        for p in range(PARTITIONS):
            got = [r for r in recs if r[0] == p]
            offs = [r[1] for r in got]
            if offs != sorted(set(offs)):
                problems.append("read_%s partition %d: offsets not increasing (%s)" % (view, p, offs[:12]))
            kv = [(r[2], r[3]) for r in got]
            if kv != want[p]:
                first_bad = next((i for i in range(max(len(kv), len(want[p])))
                                  if i >= len(kv) or i >= len(want[p]) or kv[i] != want[p][i]), 0)
                problems.append("read_%s partition %d: record %d is %s, expected %s (%d read, %d expected)" % (
                    view, p, first_bad, kv[first_bad] if first_bad < len(kv) else "missing",
                    want[p][first_bad] if first_bad < len(want[p]) else "none", len(kv), len(want[p])))
            if committed_only:
                for r in got:
                    if (r[0], r[1]) in at and at[(r[0], r[1])] != r[3]:
                        problems.append("partition %d offset %d: read_committed %r, read_uncommitted %r"
                                        % (r[0], r[1], r[3], at[(r[0], r[1])]))
                        break
    if "send_offsets skipped" not in detail:
        if not offsets:
            problems.append("no committed offset of the group reported (TXNOFFSET)")
        elif offsets[-1] != str(TXN_OFFSET):
            problems.append("group offset for partition 0 is %s after the commit, expected %d"
                            % (offsets[-1], TXN_OFFSET))
    return problems


def parse_steps(text):
    """A driver's stdout -> ({step: (state, detail)}, first INFO text, {OUTPUT kind: text}: "" for
    the OUTPUT line, "eos" for OUTPUT_EOS)."""
    steps, info, output = {}, "", {}
    for line in text.splitlines():
        if line.startswith("STEP "):
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                steps[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
        elif line.startswith("INFO ") and not info:
            info = line[5:].strip()
        elif line.startswith("OUTPUT "):
            output[""] = line[7:].strip()
        elif line.startswith("OUTPUT_EOS "):
            output["eos"] = line[11:].strip()
    return steps, info, output


def apply_checks(client, steps, recs, text=""):
    """The consume and resume steps pass only when the records read check out; so does transactions
    (its TXN lines in text)."""
    if steps.get("consume", ("",))[0] == "PASS":
        probs = phase1_problems(client.name, recs)
        steps["consume"] = ("FAIL", "%s (%d problems)" % (probs[0], len(probs))) if probs else \
            ("PASS", "%d records in the group, committed" % FIRST)
    if steps.get("resume", ("",))[0] == "PASS":
        probs = check(client.name, recs)
        steps["resume"] = ("FAIL", "%s (%d problems)" % (probs[0], len(probs))) if probs else \
            ("PASS", "%d records from the commit on; all %d checked" % (RECORDS - FIRST, RECORDS))
    if steps.get("transactions", ("",))[0] == "PASS":
        detail = steps["transactions"][1]
        probs = txn_problems(client.name, text, detail)
        steps["transactions"] = ("FAIL", "%s (%d problems)" % (probs[0], len(probs))) if probs else \
            ("PASS", detail)
    return steps
