#!/usr/bin/python3
"""Invalid topic names as Kafka 4.x answers them (its Topic.validate: 1 to 249 characters of [a-zA-Z0-9._-],
not "." or ".."), with hand-built requests and kcat.

Names tried: "", ".", "..", 250 characters, and names with a space, '/', '*', 'é'. Two brokers: one with
auto.create.topics.enable=true, one with false.

1. Metadata v0, v1, v4 (allow_auto_topic_creation false, then true), v9 (first flexible) and v12 (topic ids),
   each naming every invalid name and one valid unknown name: every invalid name is INVALID_TOPIC_EXCEPTION (17)
   with its name echoed, whether auto-creation is enabled and allowed or not (Kafka's KafkaApis.getTopicMetadata
   and AutoTopicCreationManager); the broker list is intact (this broker, its port); the valid name is created
   exactly when auto-creation is on and allowed (v0-3 always allow), else UNKNOWN_TOPIC_OR_PARTITION (3); no
   invalid name is ever created. A v0 request naming only "" is not "all topics". A 249-character name is valid.
2. CreateTopics v0, v1, v4 (also validate_only), v5 (flexible) and v7: each invalid name is 17 and, from v1,
   Kafka's message ("Topic name is invalid: the empty string is not allowed", "... '.' is not allowed", "... the
   length of '<name>' is longer than the max allowed length 249", "... '<name>' contains one or more characters
   other than ASCII alphanumerics, '.', '_' and '-'"); the valid names of the same request are created. An invalid
   name with both a partition count and an assignment is still 17 (Kafka checks names first).
3. Other APIs naming an invalid topic, as Kafka: DeleteTopics v0/v3/v5/v6 UNKNOWN_TOPIC_OR_PARTITION (3), from
   v5 with "This server does not host this topic-partition."; Produce v3, ListOffsets v1 and Fetch v4 answer 3
   for the partition.
4. `kcat -L -t ""` prints "Invalid topic" for the topic and still lists the broker.
"""
import os
import shutil
import struct
import subprocess

import sluice_harness as h
from idempotence_wire_test import record_batch
from kafka_wire import Conn, Reader, cstring, nstring, uvarint

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 2, 3, 19, 20
NONE, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, INVALID_TOPIC = 0, 3, 5, 17

LONG = "x" * 250
INVALID = ["", ".", "..", LONG, "has space", "a/b", "star*", "caf\u00e9"]
PREFIX = "Topic name is invalid: "
KAFKA_MESSAGES = {
    "": PREFIX + "the empty string is not allowed",
    ".": PREFIX + "'.' is not allowed",
    "..": PREFIX + "'..' is not allowed",
    LONG: PREFIX + "the length of '%s' is longer than the max allowed length 249" % LONG,
}
for _n in INVALID:
    KAFKA_MESSAGES.setdefault(
        _n, PREFIX + "'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'" % _n)


# ---- Metadata ---------------------------------------------------------------------------------------------
def metadata(conn, version, names, allow_auto=True):
    """Metadata request naming `names` (version 0-12); returns (brokers [(id, host, port)], {name: (error,
    partition count)}, topics in order)."""
    flex = version >= 9
    body = uvarint(len(names) + 1) if flex else struct.pack(">i", len(names))
    for n in names:
        if version >= 10:
            body += b"\x00" * 16  # topic id: zero, the name counts
        body += cstring(n) if flex else nstring(n)
        if flex:
            body += b"\x00"
    if version >= 4:
        body += b"\x01" if allow_auto else b"\x00"
    if 8 <= version <= 10:
        body += b"\x00"  # include cluster authorized operations
    if version >= 8:
        body += b"\x00"  # include topic authorized operations
    if flex:
        body += b"\x00"
    r = Reader(conn.request(METADATA, version, body, flexible=flex))
    if flex:
        r.skip_tags()  # response header
    arr = r.compact_array_len if flex else r.int32
    string = r.compact_string if flex else r.string
    if version >= 3:
        r.int32()  # throttle
    brokers = []
    for _ in range(arr()):
        node, host, port = r.int32(), string(), r.int32()
        if version >= 1:
            string()  # rack
        if flex:
            r.skip_tags()
        brokers.append((node, host, port))
    if version >= 2:
        string()  # cluster id
    if version >= 1:
        r.int32()  # controller
    topics = []
    for _ in range(arr()):
        err, name = r.int16(), string()
        if version >= 10:
            r.pos += 16
        if version >= 1:
            r.int8()  # is_internal
        count = 0
        for _ in range(arr()):
            r.int16(), r.int32(), r.int32()
            if version >= 7:
                r.int32()
            for _ in range(arr()):  # replicas
                r.int32()
            for _ in range(arr()):  # isr
                r.int32()
            if version >= 5:
                for _ in range(arr()):  # offline
                    r.int32()
            if flex:
                r.skip_tags()
            count += 1
        if version >= 8:
            r.int32()
        if flex:
            r.skip_tags()
        topics.append((name, err, count))
    if 8 <= version <= 10:
        r.int32()
    if flex:
        r.skip_tags()
    assert r.at_end(), "Metadata v%d: %d bytes left over" % (version, len(r.buf) - r.pos)
    return brokers, {n: (e, c) for n, e, c in topics}, topics


def all_topic_names(conn):
    return set(metadata_all(conn))


def metadata_all(conn):
    """Metadata v1 with a null topic list: every topic's name."""
    r = Reader(conn.request(METADATA, 1, struct.pack(">i", -1)))
    for _ in range(r.int32()):
        r.int32(), r.string(), r.int32(), r.string()
    r.int32()
    names = []
    for _ in range(r.int32()):
        r.int16()
        names.append(r.string())
        r.int8()
        for _ in range(r.int32()):
            r.int16(), r.int32(), r.int32()
            for _ in range(r.int32()):
                r.int32()
            for _ in range(r.int32()):
                r.int32()
    return names


def metadata_part(broker, check, auto_create):
    conn = Conn(broker.port, "itest-topic-names")
    cases = [(0, True), (1, True), (4, False), (4, True), (9, False), (9, True), (12, False), (12, True)]
    for version, allow in cases:
        what = "Metadata v%d allow=%s auto.create=%s" % (version, allow, auto_create)
        valid = "tn-valid-v%d-%s" % (version, "allow" if allow else "deny")
        brokers, by_name, in_order = metadata(conn, version, INVALID + [valid], allow)
        check.eq(brokers, [(0, "127.0.0.1", broker.port)], what + ": broker list")
        check.eq(len(in_order), len(INVALID) + 1, what + ": one topic entry per name")
        for n in INVALID:
            check.eq(by_name.get(n), (INVALID_TOPIC, 0), what + ": topic %r" % n[:20])
        if auto_create and allow:
            err, count = by_name.get(valid, (None, None))
            check.true(err in (NONE, LEADER_NOT_AVAILABLE) and (err != NONE or count == 1),
                       what + ": valid name auto-created, got %r" % ((err, count),))
        else:
            check.eq(by_name.get(valid), (UNKNOWN_TOPIC_OR_PARTITION, 0), what + ": valid unknown name")

    # v0 naming only "": that one topic, not every topic.
    _brokers, by_name, in_order = metadata(conn, 0, [""])
    check.eq(in_order, [("", INVALID_TOPIC, 0)], "Metadata v0 naming only \"\"")
    # 249 characters is the longest valid name.
    longest = "y" * 249
    _brokers, by_name, _ = metadata(conn, 4, [longest], True)
    if auto_create:
        check.eq(by_name.get(longest, (None,))[0] in (NONE, LEADER_NOT_AVAILABLE), True, "249-character name created")
    else:
        check.eq(by_name.get(longest), (UNKNOWN_TOPIC_OR_PARTITION, 0), "249-character name: unknown, valid")

    names = all_topic_names(conn)
    for n in INVALID:
        check.true(n not in names, "invalid name %r was created (auto.create=%s)" % (n[:20], auto_create))
    expected_valid = {"tn-valid-v0-allow", "tn-valid-v1-allow", "tn-valid-v4-allow", "tn-valid-v9-allow",
                      "tn-valid-v12-allow"} if auto_create else set()
    check.eq({n for n in names if n.startswith("tn-valid-")}, expected_valid,
             "auto-created valid names (auto.create=%s)" % auto_create)
    conn.close()


# ---- CreateTopics -----------------------------------------------------------------------------------------
def create_topics(conn, version, topics, validate_only=False):
    """topics: [(name, partitions, replication, assignments {partition: [broker]})]; returns
    [(name, error, message)] in answer order (message None before v1)."""
    flex = version >= 5
    arr = (lambda n: uvarint(n + 1)) if flex else (lambda n: struct.pack(">i", n))
    s = cstring if flex else nstring
    tags = b"\x00" if flex else b""
    body = arr(len(topics))
    for name, partitions, replication, assignments in topics:
        body += s(name) + struct.pack(">ih", partitions, replication) + arr(len(assignments))
        for p, replicas in assignments.items():
            body += struct.pack(">i", p) + arr(len(replicas)) + b"".join(struct.pack(">i", b) for b in replicas) + tags
        body += arr(0) + tags  # configs
    body += struct.pack(">i", 10000)
    if version >= 1:
        body += b"\x01" if validate_only else b"\x00"
    body += tags
    r = Reader(conn.request(CREATE_TOPICS, version, body, flexible=flex))
    if flex:
        r.skip_tags()
    if version >= 2:
        r.int32()
    read_arr = r.compact_array_len if flex else r.int32
    read_s = r.compact_string if flex else r.string
    out = []
    for _ in range(read_arr()):
        name = read_s()
        if version >= 7:
            r.pos += 16
        err = r.int16()
        message = read_s() if version >= 1 else None
        if version >= 5:
            r.int32(), r.int16()  # partitions, replication factor
            for _ in range(max(read_arr(), 0)):  # configs (null: -1)
                read_s(), read_s(), r.int8(), r.int8(), r.int8()
                r.skip_tags()
            r.skip_tags()
        out.append((name, err, message))
    if flex:
        r.skip_tags()
    assert r.at_end(), "CreateTopics v%d: bytes left over" % version
    return out


def create_topics_part(broker, check):
    conn = Conn(broker.port, "itest-topic-names")
    for version, validate_only in [(2, False), (3, False), (4, True), (4, False), (5, False), (7, False)]:
        what = "CreateTopics v%d validate_only=%s" % (version, validate_only)
        valid = "tn-create-v%d-%s" % (version, "check" if validate_only else "make")
        res = create_topics(conn, version, [(n, 1, 1, {}) for n in INVALID] + [(valid, 1, 1, {})], validate_only)
        got = {n: (e, m) for n, e, m in res}
        check.eq(len(res), len(INVALID) + 1, what + ": one result per topic")
        for n in INVALID:
            expected = (INVALID_TOPIC, KAFKA_MESSAGES[n] if version >= 1 else None)
            check.eq(got.get(n), expected, what + ": %r" % n[:20])
        check.eq(got.get(valid, (None,))[0], NONE, what + ": valid name in the same request")
    # Names are checked before the assignment: an invalid name with both a count and an assignment is 17.
    res = create_topics(conn, 2, [("", 1, 1, {0: [0]}), ("has space", -1, -1, {3: [0]})])
    check.eq(res, [("", INVALID_TOPIC, KAFKA_MESSAGES[""]), ("has space", INVALID_TOPIC, KAFKA_MESSAGES["has space"])],
             "CreateTopics v2: invalid names with invalid assignments")
    # The longest valid name.
    longest = "z" * 249
    check.eq(create_topics(conn, 4, [(longest, 1, 1, {})]), [(longest, NONE, None)], "CreateTopics 249 characters")

    names = all_topic_names(conn)
    for n in INVALID:
        check.true(n not in names, "CreateTopics created invalid name %r" % n[:20])
    for v in (2, 3, 4, 5, 7):
        check.true("tn-create-v%d-make" % v in names, "CreateTopics v%d created its valid name" % v)
    check.true("tn-create-v4-check" not in names, "validate_only created nothing")
    check.true(longest in names, "the 249-character topic exists")
    conn.close()


# ---- DeleteTopics, Produce, ListOffsets, Fetch --------------------------------------------------------------
def delete_topics(conn, version, names):
    flex = version >= 4
    if version >= 6:
        body = uvarint(len(names) + 1) + b"".join(cstring(n) + b"\x00" * 16 + b"\x00" for n in names)
    elif flex:
        body = uvarint(len(names) + 1) + b"".join(cstring(n) for n in names)
    else:
        body = struct.pack(">i", len(names)) + b"".join(nstring(n) for n in names)
    body += struct.pack(">i", 10000) + (b"\x00" if flex else b"")
    r = Reader(conn.request(DELETE_TOPICS, version, body, flexible=flex))
    if flex:
        r.skip_tags()
    if version >= 1:
        r.int32()
    out = []
    for _ in range(r.compact_array_len() if flex else r.int32()):
        name = r.compact_string() if flex else r.string()
        if version >= 6:
            r.pos += 16
        err = r.int16()
        message = r.compact_string() if version >= 5 else None
        if flex:
            r.skip_tags()
        out.append((name, err, message))
    return out


def produce_v3(conn, topic):
    batch = record_batch([b"v"], -1, -1, -1)
    body = nstring(None) + struct.pack(">hii", 1, 10000, 1) + nstring(topic)
    body += struct.pack(">iii", 1, 0, len(batch)) + batch
    r = Reader(conn.request(PRODUCE, 3, body))
    r.int32()
    name = r.string()
    r.int32()
    return name, r.int32(), r.int16()


def list_offsets_v1(conn, topic):
    body = struct.pack(">ii", -1, 1) + nstring(topic) + struct.pack(">iiq", 1, 0, -1)
    r = Reader(conn.request(LIST_OFFSETS, 1, body))
    r.int32()
    name = r.string()
    r.int32()
    return name, r.int32(), r.int16()


def fetch_v4(conn, topic):
    body = struct.pack(">iiiibi", -1, 0, 1, 1 << 20, 0, 1) + nstring(topic) + struct.pack(">iiqi", 1, 0, 0, 1 << 20)
    r = Reader(conn.request(FETCH, 4, body))
    r.int32(), r.int32()  # throttle, topic count
    name = r.string()
    r.int32()
    return name, r.int32(), r.int16()


def other_apis_part(broker, check):
    conn = Conn(broker.port, "itest-topic-names")
    unknown_message = "This server does not host this topic-partition."
    for version in (1, 3, 5, 6):  # Kafka 4.0 serves DeleteTopics from v1, CreateTopics from v2 (KIP-896)
        res = delete_topics(conn, version, INVALID)
        expected = [(n, UNKNOWN_TOPIC_OR_PARTITION, unknown_message if version >= 5 else None) for n in INVALID]
        check.eq(sorted(res), sorted(expected), "DeleteTopics v%d" % version)
    # A name given twice: one INVALID_REQUEST entry and nothing deleted (Kafka's ControllerApis.deleteTopics).
    check.eq(create_topics(conn, 2, [("tn-dup", 1, 1, {})]), [("tn-dup", NONE, None)], "CreateTopics tn-dup")
    check.eq(delete_topics(conn, 5, ["tn-dup", "tn-dup"]), [("tn-dup", 42, "Duplicate topic name.")],
             "DeleteTopics v5 with a duplicate name")
    check.true("tn-dup" in all_topic_names(conn), "the duplicated name was not deleted")
    for n in ("", ".", "a/b"):
        check.eq(produce_v3(conn, n), (n, 0, UNKNOWN_TOPIC_OR_PARTITION), "Produce v3 to %r" % n)
        check.eq(list_offsets_v1(conn, n), (n, 0, UNKNOWN_TOPIC_OR_PARTITION), "ListOffsets v1 of %r" % n)
        check.eq(fetch_v4(conn, n), (n, 0, UNKNOWN_TOPIC_OR_PARTITION), "Fetch v4 of %r" % n)
    conn.close()


def kcat_part(broker, check):
    kcat = shutil.which("kcat") or "/usr/bin/kcat"
    if not os.access(kcat, os.X_OK):
        check.true(False, "kcat not installed (tools/deps.sh installs it)")
        return
    out = subprocess.run([kcat, "-b", broker.bootstrap, "-L", "-t", "", "-m", "10"], capture_output=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    text = out.stdout.decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace")
    check.true("Invalid topic" in text, "kcat -L -t \"\": no 'Invalid topic' in %r" % text)
    check.true("1 brokers:" in text and "127.0.0.1:%d" % broker.port in text,
               "kcat -L -t \"\": broker list missing in %r" % text)


def main_with(auto_create):
    def main(broker, check):
        metadata_part(broker, check, auto_create)
        if auto_create:
            create_topics_part(broker, check)
            other_apis_part(broker, check)
            kcat_part(broker, check)
    return main


if __name__ == "__main__":
    import sys
    binary, _args = h.binary_from_args(__doc__)
    rc = h.run(main_with(True), binary, {"auto.create.topics.enable": "true"})
    rc |= h.run(main_with(False), binary, {"auto.create.topics.enable": "false"})
    sys.exit(rc)
