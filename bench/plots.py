"""PNG plots of the benchmark scripts' JSON (issue #23's curves), run by capacity.plot() under the matplotlib pinned in
bench/requirements.txt:

  plots.py curves  CURVES_JSON OUT_DIR     # curves.py: records/s and broker CPU per curve -> curve_<name>.png
  plots.py latency LATENCY_JSON OUT_PNG    # latency_curve.py: p50/p99/p99.9 and achieved rate against offered load
  plots.py scale   SCALE_JSONL OUT_PNG     # scale.py: RSS and start to first accepted connection against partitions
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"sluice": "o-", "kafka": "s--"}


def finish(fig, title, out):
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def curves(path, out_dir):
    data = json.load(open(path))
    for curve, c in data["curves"].items():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        xs = [r["x"] for r in c["rows"]]
        for side, mark in STYLE.items():
            pts = [(x, r[side]["records_per_s"], r[side].get("cpu_per_million"))
                   for x, r in zip(xs, c["rows"]) if r.get(side)]
            if not pts:
                continue
            ax1.plot([p[0] for p in pts], [p[1] for p in pts], mark, label=side)
            ax2.plot([p[0] for p in pts if p[2] is not None], [p[2] for p in pts if p[2] is not None], mark,
                     label=side)
        for ax in (ax1, ax2):
            if curve == "acks":
                ax.set_xticks(xs, [r["label"] for r in c["rows"]])
            else:
                ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(c["xlabel"])
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        ax1.set_ylabel("records/s")
        ax2.set_ylabel("broker CPU s per million records")
        finish(fig, c["title"], "%s/curve_%s.png" % (out_dir, curve))


def latency(path, out):
    data = json.load(open(path))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for side, mark in STYLE.items():
        rows = [(r["offered"], r[side]) for r in data["rows"] if r.get(side)]
        if not rows:
            continue
        xs = [x for x, _ in rows]
        for key, width in (("p50_ms", 1.0), ("p99_ms", 1.5), ("p999_ms", 2.0)):
            ax1.plot(xs, [v[key] for _, v in rows], mark, linewidth=width, label="%s %s" % (side, key[:-3]))
        ax2.plot(xs, [v["records_per_s"] for _, v in rows], mark, label=side)
    top = max(r["offered"] for r in data["rows"])
    ax2.plot([0, top], [0, top], ":", color="grey", label="offered")
    ax1.set_yscale("log")
    ax1.set_ylabel("latency ms (intended send to response)")
    ax2.set_ylabel("achieved records/s")
    for ax in (ax1, ax2):
        ax.set_xlabel("offered records/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    finish(fig, data["title"], out)


def scale(path, out):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for side, mark in STYLE.items():
        pts = sorted((r["partitions"], r["created"]["rss_mb"], r.get("restart_accept_ms"))
                     for r in rows if r.get("side") == side and "partitions" in r and r.get("created"))
        if not pts:
            continue
        ax1.plot([p[0] for p in pts], [p[1] for p in pts], mark, label=side)
        ax2.plot([p[0] for p in pts if p[2] is not None], [p[2] for p in pts if p[2] is not None], mark, label=side)
    ax1.set_ylabel("RSS MB, idle, after creating the topic")
    ax2.set_ylabel("restart to first accepted connection, ms")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions (one topic, RF 1)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    finish(fig, "single node: idle RSS and start time against partitions", out)


if __name__ == "__main__":
    kinds = {"curves": curves, "latency": latency, "scale": scale}
    if len(sys.argv) != 4 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    kinds[sys.argv[1]](sys.argv[2], sys.argv[3])
