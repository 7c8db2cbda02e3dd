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
STEPS = ["create", "produce", "consume", "resume", "offsets_for_times", "rebalance", "describe",
         "delete_records", "delete", "transactions"]
STREAMS_STEPS = ["create", "produce", "wordcount", "internal_topics", "output_equals_kafka"]


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


def parse_steps(text):
    """A driver's stdout -> ({step: (state, detail)}, first INFO text, OUTPUT text or None)."""
    steps, info, output = {}, "", None
    for line in text.splitlines():
        if line.startswith("STEP "):
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                steps[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
        elif line.startswith("INFO ") and not info:
            info = line[5:].strip()
        elif line.startswith("OUTPUT "):
            output = line[7:].strip()
    return steps, info, output


def apply_checks(client, steps, recs):
    """The consume and resume steps pass only when the records read check out."""
    if steps.get("consume", ("",))[0] == "PASS":
        probs = phase1_problems(client.name, recs)
        steps["consume"] = ("FAIL", "%s (%d problems)" % (probs[0], len(probs))) if probs else \
            ("PASS", "%d records in the group, committed" % FIRST)
    if steps.get("resume", ("",))[0] == "PASS":
        probs = check(client.name, recs)
        steps["resume"] = ("FAIL", "%s (%d problems)" % (probs[0], len(probs))) if probs else \
            ("PASS", "%d records from the commit on; all %d checked" % (RECORDS - FIRST, RECORDS))
    return steps
