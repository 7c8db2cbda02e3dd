#!/usr/bin/env python3
"""Writes Sluice .def files from Apache Kafka's message JSON (a factual reference only).

Only facts are carried over: names, types, version ranges, nullable/tagged versions, tags, defaults.
Descriptions, comments and every other attribute are dropped. The output is our own format, see
protocol/README.md. Run it by hand when adding an API; the build never needs the Kafka JSON.

  import_kafka_json.py --ref ../shared/reference/kafka-messages --out protocol/defs Produce Fetch ...
  import_kafka_json.py --ref ... --api-keys protocol/defs/api_keys.def
  import_kafka_json.py --errors ../shared/reference/kafka-error-codes.tsv --out-errors protocol/defs/errors.def
"""
import argparse
import json
import os
import re
import sys


def load_json(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # Strip // comments (whole-line and trailing; the files never put // inside strings except URLs
    # in comments, which are removed with their line).
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("//"):
            continue
        lines.append(line)
    return json.loads("\n".join(lines))


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def field_line(f, depth):
    indent = "  " * depth
    parts = [(indent + f["name"]).ljust(30), f["type"].ljust(32), f["versions"].ljust(5)]
    if "nullableVersions" in f:
        parts.append("nullable=" + f["nullableVersions"])
    if "tag" in f:
        parts.append("tag=%d" % f["tag"])
        tv = f.get("taggedVersions", f["versions"])
        if tv != f["versions"]:
            parts.append("tagged=" + tv)
    if "flexibleVersions" in f:
        raise SystemExit("field-level flexibleVersions not supported: " + f["name"])
    if "default" in f:
        d = str(f["default"]).lower() if isinstance(f["default"], bool) else str(f["default"])
        parts.append("default=" + (d if d != "" else '""'))
    return " ".join(parts).rstrip()


def emit_fields(fields, depth, out):
    for f in fields:
        out.append(field_line(f, depth))
        if "fields" in f:
            emit_fields(f["fields"], depth + 1, out)


def emit_message(d, out):
    head = [d["type"], d["name"]]
    if "apiKey" in d:
        head.append("key=%d" % d["apiKey"])
    head.append("versions=" + d["validVersions"])
    head.append("flexible=" + d.get("flexibleVersions", "none"))
    out.append(" ".join(head))
    emit_fields(d["fields"], 1, out)
    for c in d.get("commonStructs", []):
        out.append("struct %s versions=%s" % (c["name"], c["versions"]))
        emit_fields(c["fields"], 1, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref")
    ap.add_argument("--out")
    ap.add_argument("--api-keys")
    ap.add_argument("--errors")
    ap.add_argument("--out-errors")
    ap.add_argument("apis", nargs="*", help="API names (Produce) or data names (ConsumerProtocolSubscription)")
    a = ap.parse_args()

    for api in a.apis:
        names = [api + "Request", api + "Response"]
        if not os.path.exists(os.path.join(a.ref, names[0] + ".json")):
            names = [api]
        out = ["# %s: our definition, facts from the Kafka protocol (see protocol/README.md)." % api, ""]
        for n in names:
            emit_message(load_json(os.path.join(a.ref, n + ".json")), out)
            out.append("")
        target = os.path.join(a.out, snake(api) + ".def")
        with open(target, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        print("wrote", target)

    if a.api_keys:
        rows = []
        for fn in sorted(os.listdir(a.ref)):
            if fn.endswith("Request.json"):
                d = load_json(os.path.join(a.ref, fn))
                rows.append((d["apiKey"], d["name"][: -len("Request")]))
        rows.sort()
        with open(a.api_keys, "w", encoding="utf-8") as f:
            f.write("# api key, API name\n")
            for k, n in rows:
                f.write("%d %s\n" % (k, n))
        print("wrote", a.api_keys)

    if a.errors:
        rows = []
        with open(a.errors, encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) >= 2 and re.fullmatch(r"-?\d+", cols[0]):
                    rows.append((int(cols[0]), cols[1]))
        with open(a.out_errors, "w", encoding="utf-8") as f:
            f.write("# error code, name\n")
            for c, n in rows:
                f.write("%d %s\n" % (c, n))
        print("wrote", a.out_errors)


if __name__ == "__main__":
    sys.exit(main())
