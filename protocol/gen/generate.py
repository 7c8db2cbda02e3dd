#!/usr/bin/env python3
"""Generates the C++ codec of Sluice from protocol/defs (stdlib only). See protocol/README.md.

  generate.py --defs <protocol/defs> --out <build/protocol_gen> [--test-out <file.cc>]

Writes, under --out: protocol/api_key.{h,cc}, protocol/error_code.{h,cc}, protocol/api_traits.{h,cc},
protocol/messages/<api>.{h,cc} (one pair per .def file), protocol/messages/all.h and
protocol/messages/fields.h (field lists for tools). With --test-out,
also a GoogleTest source with value fillers and round-trip / truncation tests for every message.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import defs as D  # noqa: E402
from message_gen import MessageGen  # noqa: E402
from fields import gen_fields_h  # noqa: E402
from roundtrip import write_roundtrip_test  # noqa: E402
from tables import gen_all_h, gen_api_keys, gen_api_traits, gen_error_codes, write_message_files  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--defs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--test-out")
    a = ap.parse_args()

    gen_error_codes(D.parse_table(os.path.join(a.defs, "errors.def")), a.out)
    api_rows = D.parse_table(os.path.join(a.defs, "api_keys.def"))
    gen_api_keys(api_rows, a.out)
    api_names = {k: n for k, n in api_rows}

    files = sorted(f for f in os.listdir(a.defs) if f.endswith(".def") and f not in ("errors.def", "api_keys.def"))
    all_gens = []  # (file stem, MessageGen)
    for fn in files:
        stem = fn[:-4]
        messages, commons = D.parse_file(os.path.join(a.defs, fn))
        gens = [MessageGen(m, commons) for m in messages]
        for g in gens:
            if g.msg.key is not None and g.msg.key not in api_names:
                raise SystemExit("%s: api key %d not in api_keys.def" % (fn, g.msg.key))
        all_gens += [(stem, g) for g in gens]
        write_message_files(fn, gens, a.out)

    requests = sorted([g for _, g in all_gens if g.msg.kind == "request"], key=lambda g: g.msg.key)
    responses = {g.msg.key: g for _, g in all_gens if g.msg.kind == "response"}
    gen_all_h(files, requests, responses, a.out)
    gen_api_traits(requests, api_names, a.out)
    gen_fields_h(all_gens, a.out)

    if a.test_out:
        write_roundtrip_test(all_gens, a.test_out)


if __name__ == "__main__":
    main()
