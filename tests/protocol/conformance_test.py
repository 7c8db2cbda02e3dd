#!/usr/bin/env python3
"""Checks protocol/defs against Apache Kafka's message JSON and error table (facts: names, keys, types,
version ranges, nullable and tagged versions, tags, defaults). Exits 77 (skipped) when the reference
folder is absent, as it is in a user's checkout."""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "gen"))
import defs as D  # noqa: E402

SKIP = 77

# Internal-topic record schemas: Kafka defines them in its group-coordinator and transaction-coordinator
# modules, which the reference folder (clients' messages) does not hold. Only these may lack a reference
# file; they are checked by their round-trip tests and by broker/groups' golden bytes instead.
OUTSIDE_REFERENCE = {"OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
                     "TransactionLogKey", "TransactionLogValue",
                     # Kafka 4.x renamed ListClientMetricsResources (key 74, KIP-714) to ListConfigResources and
                     # added v1 (KIP-1142); the reference folder predates it. Checked against kafka-clients
                     # 4.4.0's JSON by hand (issue #21) and by compat/diff against Kafka 4.4.
                     "ListConfigResourcesRequest", "ListConfigResourcesResponse",
                     # KIP-848's __consumer_offsets records (Kafka's group-coordinator module, not kafka-clients):
                     # checked by hand against Apache Kafka's group-coordinator JSON (issue #21).
                     "ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue", "ConsumerGroupMemberMetadataKey",
                     "ConsumerGroupMemberMetadataValue", "ConsumerGroupTargetAssignmentMetadataKey",
                     "ConsumerGroupTargetAssignmentMetadataValue", "ConsumerGroupTargetAssignmentMemberKey",
                     "ConsumerGroupTargetAssignmentMemberValue", "ConsumerGroupCurrentMemberAssignmentKey",
                     "ConsumerGroupCurrentMemberAssignmentValue", "ConsumerGroupRegularExpressionKey",
                     "ConsumerGroupRegularExpressionValue"}
RENAMED_KEYS = {74: ("ListConfigResources", "ListClientMetricsResources")}  # key: (ours, the reference's)

# Versions newer than the reference folder (an older Kafka's JSON), checked against Apache Kafka 4.4 itself: its
# ApiVersions answer and its kafka-clients 4.4.0 message classes (javap shows the fields). For these messages the
# comparison stops at the reference's newest version; fields that start above it must be the ones listed.
NEWER_THAN_REFERENCE = {
    "ConsumerGroupDescribeRequest": set(),                    # v1 (KIP-1099: MemberType)
    "ConsumerGroupDescribeResponse": {"MemberType"},
    "ConsumerGroupHeartbeatRequest": {"SubscribedTopicRegex"},  # v1 (KIP-848 regex, client-side member ids)
    "ConsumerGroupHeartbeatResponse": set(),
    "ListTransactionsRequest": {"TransactionalIdPattern"},   # v2, KIP-1152
    "ListTransactionsResponse": set(),
    "WriteTxnMarkersRequest": {"TransactionVersion"},         # v2, KIP-890 part 2
    "WriteTxnMarkersResponse": set(),
    # Kafka 4.x versions (issue #21), from kafka-clients 4.4.0's common/message/*.json. A field whose range ends
    # at the reference's newest version or later (a name replaced by a topic id) is compared up to that version.
    "AlterPartitionReassignmentsRequest": {"AllowReplicationFactorChange"},   # v1, KIP-860
    "AlterPartitionReassignmentsResponse": {"AllowReplicationFactorChange"},
    "ApiVersionsRequest": {"ClusterId", "NodeId"},            # v5, KIP-1242
    "ApiVersionsResponse": set(),
    "DeleteGroupsRequest": set(),                             # v3
    "DeleteGroupsResponse": {"ErrorMessage"},
    "DescribeClusterRequest": {"IncludeFencedBrokers"},       # v2, KIP-1073
    "DescribeClusterResponse": {"IsFenced"},
    "DescribeGroupsRequest": set(),                           # v6, KIP-1043
    "DescribeGroupsResponse": {"ErrorMessage"},
    "DescribeLogDirsRequest": set(),                          # v5
    "DescribeLogDirsResponse": {"IsCordoned"},
    "FetchRequest": {"HighWatermark"},                        # v18, KIP-1166
    "FetchResponse": set(),
    "ListOffsetsRequest": set(),                              # v11, KIP-1023
    "ListOffsetsResponse": set(),
    "MetadataRequest": set(),                                 # v13
    "MetadataResponse": {"ErrorCode"},
    "OffsetCommitRequest": {"TopicId"},                       # v10, KIP-848: topic ids instead of names
    "OffsetCommitResponse": {"TopicId"},
    "OffsetFetchRequest": {"TopicId"},                        # v10, KIP-848
    "OffsetFetchResponse": {"TopicId"},
    "ProduceRequest": {"TopicId"},                            # v12 (KIP-890), v13 (KIP-516)
    "ProduceResponse": {"TopicId"},
}


def within(fields, hi, extra, where, errors):
    """`fields` without those that start above version `hi` (which must be named in `extra`)."""
    kept = []
    for f in fields:
        if f.versions.lo is not None and f.versions.lo > hi:
            if f.name not in extra:
                errors.append("%s.%s: starts at v%d, beyond the reference, and is not listed as newer" %
                              (where, f.name, f.versions.lo))
            continue
        f.fields = within(f.fields, hi, extra, where + "." + f.name, errors)
        kept.append(f)
    return kept


def load_json(path):
    with open(path, encoding="utf-8") as f:
        lines = [l for l in f.read().splitlines() if not l.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


def norm_default(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def compare_fields(ours, theirs, where, errors, upto=None):
    """`upto`: compare version ranges only up to this version (messages newer than the reference)."""
    def clip(r):
        return r if upto is None else r.intersect(D.Range("0-%d" % upto))
    names_ours = [f.name for f in ours]
    names_theirs = [f["name"] for f in theirs]
    if names_ours != names_theirs:
        errors.append("%s: fields %s != reference %s" % (where, names_ours, names_theirs))
        return
    for f, j in zip(ours, theirs):
        w = "%s.%s" % (where, f.name)
        checks = [
            ("type", f.type, j["type"]),
            ("versions", clip(f.versions), clip(D.Range(j["versions"]))),
            ("nullable", clip(f.nullable), clip(D.Range(j.get("nullableVersions", "none")))),
            ("tag", f.tag, j.get("tag")),
            ("default", f.default, norm_default(j.get("default"))),
        ]
        if "tag" in j:
            checks.append(("tagged", f.tagged, D.Range(j.get("taggedVersions", j["versions"]))))
        for what, a, b in checks:
            if a != b:
                errors.append("%s: %s %r != reference %r" % (w, what, a, b))
        compare_fields(f.fields, j.get("fields", []), w, errors, upto)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--defs", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--errors")
    a = ap.parse_args()
    if not os.path.isdir(a.reference):
        print("SKIPPED: no reference at %s" % a.reference)
        return SKIP

    errors, checked = [], 0
    for fn in sorted(os.listdir(a.defs)):
        if not fn.endswith(".def") or fn in ("errors.def", "api_keys.def"):
            continue
        messages, commons = D.parse_file(os.path.join(a.defs, fn))
        for m in messages:
            path = os.path.join(a.reference, m.name + ".json")
            if not os.path.exists(path) and m.name in OUTSIDE_REFERENCE:
                print("not checked: %s (%s), not in the reference folder" % (m.name, fn))
                continue
            if not os.path.exists(path):
                errors.append("%s: %s has no reference file" % (fn, m.name))
                continue
            j = load_json(path)
            checked += 1
            upto = None
            if m.name in NEWER_THAN_REFERENCE:
                ref = D.Range(j["validVersions"])
                m.versions = m.versions.intersect(D.Range("0-%d" % ref.hi))
                m.fields = within(m.fields, ref.hi, NEWER_THAN_REFERENCE[m.name], m.name, errors)
                upto = ref.hi
            for what, ours, theirs in [("kind", m.kind, j["type"]), ("key", m.key, j.get("apiKey")),
                                       ("versions", m.versions, D.Range(j["validVersions"])),
                                       ("flexible", m.flexible, D.Range(j.get("flexibleVersions", "none")))]:
                if ours != theirs:
                    errors.append("%s: %s %r != reference %r" % (m.name, what, ours, theirs))
            compare_fields(m.fields, j["fields"], m.name, errors, upto)
            ref_commons = {c["name"]: c for c in j.get("commonStructs", [])}
            for name, c in ref_commons.items():
                if name not in commons:
                    errors.append("%s: shared struct %s missing" % (m.name, name))
                else:
                    compare_fields(commons[name].fields, c["fields"], "%s/%s" % (m.name, name), errors)

    keys = dict(D.parse_table(os.path.join(a.defs, "api_keys.def")))
    for fn in os.listdir(a.reference):
        if fn.endswith("Request.json"):
            j = load_json(os.path.join(a.reference, fn))
            ours, theirs = keys.get(j["apiKey"]), j["name"][: -len("Request")]
            if RENAMED_KEYS.get(j["apiKey"]) == (ours, theirs):
                continue
            if ours != theirs:
                errors.append("api_keys.def: key %d is %r, reference %r" % (j["apiKey"], keys.get(j["apiKey"]), j["name"]))

    if a.errors and os.path.exists(a.errors):
        ours = dict(D.parse_table(os.path.join(a.defs, "errors.def")))
        with open(a.errors, encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) >= 2 and cols[0].lstrip("-").isdigit():
                    if ours.get(int(cols[0])) != cols[1]:
                        errors.append("errors.def: code %s is %r, reference %r" % (cols[0], ours.get(int(cols[0])), cols[1]))

    for e in errors:
        print("MISMATCH", e)
    print("%d messages checked, %d mismatches" % (checked, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
