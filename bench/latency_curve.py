#!/usr/bin/python3
"""Produce latency against offered load, Sluice and Kafka 4.4 side by side (issue #23, "latency percentiles vs
offered load up to saturation").

  /usr/bin/python3 bench/latency_curve.py                                  # 100 B, acks=1, single node, both sides
  /usr/bin/python3 bench/latency_curve.py --size 1024 --acks all --rates 100000,200000,400000,800000

For each offered rate (records/s, open loop: latency from each batch's intended send time, bench/README.md "Load
generator"), one sluice_load run per side on the `single` topology of bench/capacity.py (one node each, 4
partitions, 4 connections, 100 records per batch), the sides alternating, after one uncounted run per side at the
first rate; a fresh topic per run, deleted after it.
Prints one row per rate: achieved records/s, p50/p99/p99.9 in ms and broker CPU s per million records of each side.
A side that falls short of the offered rate is past its saturation at that rate.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capacity  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    capacity.add_binary_arguments(ap)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--rates", default="500000,1000000,2000000,3000000,4000000,5000000")
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--no-kafka", action="store_true", help="Sluice only")
    ap.add_argument("--plots", action="store_true",
                    help="also write bench/results/latency_<size>B_acks<acks>.json and .png (bench/plots.py)")
    args = ap.parse_args()
    # What capacity.Capacity reads of its arguments.
    cap_args = argparse.Namespace(quick=False, duration=args.duration, repeat=1, sizes=str(args.size), acks=args.acks,
                                  load_bin=args.load_bin, batch_records=100)
    cap = capacity.Capacity(cap_args)
    acks = "-1" if args.acks in ("all", "-1") else args.acks
    sides = [capacity.SluiceSide(args.broker, "single")]
    if not args.no_kafka:
        sides.append(capacity.KafkaSide(args.cache, "single"))
    rows = []
    failed = False
    try:
        for s in sides:
            s.start()
        # One uncounted run per side at the first rate (Kafka's JIT, the page cache).
        first = int(args.rates.split(",")[0])
        for s in sides:
            topic = cap.topic("warm")
            cap.load(s, cap.produce_args("single", topic, args.size, acks, rate=first), cap.run_timeout())
            capacity.delete_topic(s.bootstrap, topic)
        for i, rate in enumerate(int(r) for r in args.rates.split(",") if r):
            order = sides if i % 2 == 0 else list(reversed(sides))
            got = {}
            for s in order:
                topic = cap.topic("curve")
                res, err = cap.load(s, cap.produce_args("single", topic, args.size, acks, rate=rate),
                                    cap.run_timeout())
                capacity.delete_topic(s.bootstrap, topic)
                got[s.label] = (res, err)
                capacity.log("  %-6s offered %9d: %s" % (s.label, rate, err or "%.0f rec/s, p99.9 %.3f ms" % (
                    res["records_per_s"], res["latency_us"]["p999"] / 1000.0)))
            rows.append((rate, got))
    except Exception:
        failed = True
        raise
    finally:
        for s in sides:
            s.close(failed)
    labels = [s.label for s in sides]
    head = "| offered records/s |" + "".join(" %s achieved | p50 ms | p99 ms | p99.9 ms | CPU s/M |" % l for l in labels)
    print("\n%d B, acks=%s, single node, %s s per run\n" % (args.size, args.acks, args.duration))
    print(head)
    print("|---:|" + "---:|" * (5 * len(labels)))
    for rate, got in rows:
        cells = []
        for l in labels:
            res, err = got.get(l, (None, "not run"))
            if res is None:
                cells += ["-"] * 5
                continue
            lat = res["latency_us"]
            cells += ["{:,.0f}".format(res["records_per_s"]), "%.3f" % (lat["p50"] / 1000.0),
                      "%.3f" % (lat["p99"] / 1000.0), "%.3f" % (lat["p999"] / 1000.0),
                      "-" if res.get("broker_cpu_per_million") is None else "%.3f" % res["broker_cpu_per_million"]]
        print("| {:,} | ".format(rate) + " | ".join(cells) + " |")
    if args.plots:
        base = os.path.join(capacity.HERE, "results", "latency_%dB_acks%s" % (args.size, args.acks))
        data = {"title": "produce latency against offered load: %d B, acks=%s, single node" % (args.size, args.acks),
                "rows": []}
        for rate, got in rows:
            row = {"offered": rate}
            for l in labels:
                res, err = got.get(l, (None, "not run"))
                if res is not None and not err:
                    lat = res["latency_us"]
                    row[l] = {"records_per_s": res["records_per_s"], "p50_ms": lat["p50"] / 1000.0,
                              "p99_ms": lat["p99"] / 1000.0, "p999_ms": lat["p999"] / 1000.0,
                              "cpu_per_million": res.get("broker_cpu_per_million")}
            data["rows"].append(row)
        with open(base + ".json", "w") as f:
            json.dump(data, f, indent=1)
        capacity.plot("latency", base + ".json", base + ".png")
    errors = [(rate, l, got[l][1]) for rate, got in rows for l in got if got[l][1]]
    for rate, l, err in errors:
        print("%s at %d records/s: %s" % (l, rate, err))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
