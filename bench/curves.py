#!/usr/bin/python3
"""Throughput and broker CPU curves, Sluice and Kafka 4.4 side by side (issue #23, "Curves"): against record size,
acks, partition count and connection count, as markdown tables and PNG plots in bench/results/.

  /usr/bin/python3 bench/curves.py                          # every curve, both sides, tables only
  /usr/bin/python3 bench/curves.py --plots                  # also curve_<name>.png (matplotlib, bench/requirements.txt)
  /usr/bin/python3 bench/curves.py --curves size,acks --no-kafka

One point is one sluice_load max-rate produce run (5 s after 1 s of warm-up) against a single node of each side,
the sides alternating from point to point, on a fresh topic deleted after the run. Unless the curve varies it: 100 B
records, acks=1, 4 partitions, 4 connections, 100 records per batch, 5 Produce requests in flight per connection.

- size: 10 B, 100 B, 1 KB, 10 KB, 100 KB, 1 MB (1,000,000 B: one such record fits Kafka's default max.message.bytes,
  1,048,588, with its batch header; 1,048,576 would not). Records per batch shrink with the size so a batch stays near
  100 KB (at most 100, at least 1).
- acks: 0, 1, all.
- partitions: 1, 10, 100, 1,000, 10,000: the topic is made first (on Kafka in CreatePartitions steps, under KRaft's
  10,000 records per operation, bench/scale.py), and the run writes to all of its partitions, after a warm-up of
  1 + N/500 s.
- connections: 1, 10, 100, 1,000 busy connections, then 10 busy beside 10,000 idle ones (which negotiate and hold).

Writes bench/results/curves.md (the tables) and bench/results/curves.json, keeping there the curves of an earlier run
that this one did not make (`--curves partitions` redoes one curve); --plots adds the PNGs (installing the pinned
matplotlib of bench/requirements.txt into build-tests/bench-venv on first use). Loopback only; every broker it starts
is stopped by PID.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capacity  # noqa: E402
import scale  # noqa: E402

RESULTS = os.path.join(HERE, "results")
SIZES = [10, 100, 1024, 10240, 102400, 1000000]
ACKS = ["0", "1", "all"]
PARTITIONS = [1, 10, 100, 1000, 10000]
CONNECTIONS = [(1, 0), (10, 0), (100, 0), (1000, 0), (10, 10000)]  # (busy, idle)
CURVES = ("size", "acks", "partitions", "connections")


def size_label(n):
    if n >= 1000000:
        return "%g MB" % (n / 1e6)
    if n >= 1024:
        return "%g KB" % (n / 1024)
    return "%d B" % n


def points(curve):
    """[(label, x for the plot, run settings)] of one curve."""
    out = []
    if curve == "size":
        for s in SIZES:
            out.append((size_label(s), s, dict(size=s, batch=max(1, min(100, 102400 // s)))))
    elif curve == "acks":
        for i, a in enumerate(ACKS):
            out.append(("acks=%s" % a, i, dict(acks="-1" if a == "all" else a)))
    elif curve == "partitions":
        for n in PARTITIONS:
            # A longer warm-up with more partitions, so that the measured seconds are past each one's first append.
            out.append(("%d" % n, n, dict(partitions=n, precreate=True, warmup=1 + n / 500)))
    elif curve == "connections":
        for busy, idle in CONNECTIONS:
            label = "%d" % busy if not idle else "%d busy + %d idle" % (busy, idle)
            out.append((label, busy + idle, dict(connections=busy, idle=idle, threads=2 if busy + idle > 100 else 1)))
    return out


def port_of(side):
    return int(side.bootstrap.split(",")[0].rsplit(":", 1)[1])


class Runner:
    def __init__(self, args):
        self.args = args
        self.seq = 0

    def run_point(self, side, settings):
        """One sluice_load run; returns (figures or None, error or None)."""
        a = self.args
        self.seq += 1
        topic = "curve-%d" % self.seq
        partitions = settings.get("partitions", 4)
        extra = ["--topic", topic, "--acks", settings.get("acks", "1"),
                 "--record-size", str(settings.get("size", 100)), "--batch-records", str(settings.get("batch", 100)),
                 "--connections", str(settings.get("connections", 4)), "--threads", str(settings.get("threads", 1)),
                 "--duration", str(a.duration), "--warmup", str(settings.get("warmup", 1))]
        if settings.get("idle"):
            extra += ["--idle-connections", str(settings["idle"])]
        port = port_of(side)
        if settings.get("precreate"):
            code, _ = scale.create_topic_in_steps(port, topic, partitions, 300)
            if code != 0:
                return None, "CreateTopics of %d partitions answered error %d" % (partitions, code)
            if not scale.wait_partitions(port, topic, partitions, 300):
                return None, "not every partition of %d got a leader" % partitions
            # Metadata names a leader before that broker has taken the partition on (Kafka: its metadata log is
            # applied asynchronously), and the first Produce then gets NOT_LEADER_OR_FOLLOWER. A pause as wide as
            # the case is large.
            time.sleep(2 + partitions / 2000)
            extra += ["--partitions", "0"]
        else:
            extra += ["--partitions", str(partitions)]
        cmd = [a.load_bin, "-b", side.bootstrap, "--json", "--broker-pid", ",".join(str(p) for p in side.pids)] + extra
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.duration + 400, stdin=subprocess.DEVNULL)
            r = json.loads(p.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
            return None, "sluice_load: %s" % str(e)[:300]
        finally:
            capacity.delete_topic(side.bootstrap, topic, timeout=120)
        err = None
        if r.get("errors") or r.get("failed_connections") or r.get("unanswered_requests") or r.get("idle_failed"):
            err = "errors %s, failed connections %s, unanswered %s, idle failed %s" % (
                r.get("errors"), r.get("failed_connections"), r.get("unanswered_requests"), r.get("idle_failed"))
        fig = {"records_per_s": r["records_per_s"], "mb_per_s": r["value_mb_per_s"],
               "cpu_per_million": r.get("broker_cpu_per_million"), "client_cpu_per_million": r.get("client_cpu_per_million"),
               "p99_ms": r["latency_us"]["p99"] / 1000.0 if r["latency_us"]["count"] else None}  # none at acks=0
        return fig, err


def fmt(v, digits=3):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return "{:,.0f}".format(v)
    return ("%%.%dg" % digits) % v


def table(curve, rows, sides):
    head = "| %s |" % curve + "".join(" %s records/s | MB/s | CPU s/M | p99 ms |" % s for s in sides)
    if len(sides) == 2:
        head += " records/s ratio | CPU ratio |"
    lines = [head, "|---|" + "---:|" * (4 * len(sides) + (2 if len(sides) == 2 else 0))]
    for row in rows:
        cells = [row["label"]]
        for s in sides:
            f = row.get(s)
            cells += [fmt(f and f["records_per_s"]), fmt(f and f["mb_per_s"]), fmt(f and f["cpu_per_million"]),
                      fmt(f and f["p99_ms"])] if f else ["failed: " + row.get(s + "_error", "?")[:60], "", "", ""]
        if len(sides) == 2:
            a, b = row.get(sides[0]), row.get(sides[1])
            ok = a and b and b["records_per_s"] and b["cpu_per_million"] and a["cpu_per_million"] is not None
            cells += ["%.2f" % (a["records_per_s"] / b["records_per_s"]) if ok else "-",
                      "%.2f" % (a["cpu_per_million"] / b["cpu_per_million"]) if ok else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


XLABEL = {"size": "record size, bytes", "acks": "acks", "partitions": "partitions",
          "connections": "connections (busy + idle)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    capacity.add_binary_arguments(ap)
    ap.add_argument("--curves", default=",".join(CURVES))
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--no-kafka", action="store_true", help="Sluice only")
    ap.add_argument("--plots", action="store_true", help="also write bench/results/curve_<name>.png")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args()
    curves = [c for c in args.curves.split(",") if c]
    for c in curves:
        if c not in CURVES:
            ap.error("unknown curve %s (known: %s)" % (c, ", ".join(CURVES)))
    sides = [capacity.SluiceSide(args.broker, "single")]
    if not args.no_kafka:
        sides.append(capacity.KafkaSide(args.cache, "single"))
    labels = [s.label for s in sides]
    runner = Runner(args)
    result = {"date": time.strftime("%Y-%m-%d"), "duration_s": args.duration, "curves": {}}
    failures = 0
    try:
        for s in sides:
            s.start()
        for s in sides:  # one uncounted run per side (Kafka's JIT, the page cache)
            runner.run_point(s, {})
        k = 0
        for curve in curves:
            rows = []
            for label, x, settings in points(curve):
                row = {"label": label, "x": x}
                order = sides if k % 2 == 0 else list(reversed(sides))
                k += 1
                for s in order:
                    fig, err = runner.run_point(s, settings)
                    if fig and not err:
                        row[s.label] = fig
                    else:
                        failures += 1
                        row[s.label + "_error"] = err or "no figures"
                        if fig:
                            row[s.label] = fig
                    capacity.log("%s %s %s: %s%s" % (curve, label, s.label, json.dumps(fig),
                                                     " ERROR " + err if err else ""))
                    if not s.alive():
                        raise RuntimeError("%s died during %s %s" % (s.label, curve, label))
                rows.append(row)
            result["curves"][curve] = {"title": "produce, single node, by %s" % XLABEL[curve],
                                       "xlabel": XLABEL[curve], "rows": rows}
    finally:
        for s in sides:
            s.close(failures > 0)
    os.makedirs(args.out, exist_ok=True)
    jpath = os.path.join(args.out, "curves.json")
    try:
        with open(jpath) as f:
            earlier = json.load(f)
        for name, c in earlier.get("curves", {}).items():
            if name not in result["curves"] and name in CURVES:
                result["curves"][name] = c
    except (OSError, ValueError):
        pass
    curves = [c for c in CURVES if c in result["curves"]]
    md = ["# Curves (bench/curves.py, %s)" % result["date"], "",
          "Single node each, max-rate produce, %g s per point; CPU s/M: broker CPU seconds per million records; "
          "ratio: Sluice / Kafka." % args.duration, ""]
    for curve in curves:
        md += ["## By %s" % XLABEL[curve], "", table(curve, result["curves"][curve]["rows"], labels), ""]
        if args.plots:
            md += ["![%s](curve_%s.png)" % (curve, curve), ""]
    text = "\n".join(md)
    print(text)
    with open(os.path.join(args.out, "curves.md"), "w") as f:
        f.write(text + "\n")
    with open(jpath, "w") as f:
        json.dump(result, f, indent=1)
    if args.plots:
        capacity.plot("curves", jpath, args.out)
    if failures:
        print("%d point(s) failed (above)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
