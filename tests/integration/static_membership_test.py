#!/usr/bin/python3
"""Static membership (KIP-345) with real librdkafka consumers (Debian's confluent-kafka 1.7, librdkafka 2.0.2)
and hand-built requests.

1. Fencing: consumer A joins a 4-partition topic with `group.instance.id=inst-1` and gets every partition.
   Consumer B starts with the same `group.instance.id`: it takes A's place without a rebalance (the
   generation does not move, B gets A's assignment), and A's next Heartbeat/commit is answered
   FENCED_INSTANCE_ID, which librdkafka reports as a fatal error to A's application.
2. The exact answers by hand (kafka_wire): after a static member was replaced, Heartbeat, SyncGroup,
   OffsetCommit and LeaveGroup with its old member id get FENCED_INSTANCE_ID (82); the new member's work.
3. Simple-consumer commits (Kafka 4.x ClassicGroup.validateOffsetCommit): OffsetCommit with generation -1,
   empty member id and a group instance id into a group that does not exist, and into an Empty group, is
   accepted and OffsetFetch returns it; into a Stable group it is refused (FENCED_INSTANCE_ID for a known
   instance, UNKNOWN_MEMBER_ID without one). Through confluent-kafka: a consumer with `group.instance.id` that
   never subscribes (assign() + commit()) commits, and OffsetFetch returns the offset.
"""
import struct
import sys
import time

import kafka_wire as kw
import sluice_harness as h

TOPIC = "static-topic"
PARTITIONS = 4

HEARTBEAT, JOIN, SYNC, LEAVE, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 12, 11, 14, 13, 8, 9, 10


def s_(v):
    return kw.nstring(v)


def arr(items):
    items = list(items)
    return struct.pack(">i", len(items)) + b"".join(items)


def byts(b):
    return struct.pack(">i", len(b)) + b


class R(kw.Reader):
    """kafka_wire's Reader plus int64 and classic bytes."""

    def int64(self):
        return self._unpack(">q")

    def bytes_(self):
        n = self.int32()
        if n < 0:
            return None
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)


class Conn(kw.Conn):
    def __init__(self, port):
        super().__init__(port, "static-test")

    def request(self, api_key, version, body, flexible=False):
        return R(super().request(api_key, version, body, flexible))



def consumer(bootstrap, group, instance, name, errors, assigned):
    from confluent_kafka import Consumer

    def on_assign(c, parts):
        assigned.clear()
        assigned.update(p.partition for p in parts)

    def on_error(e):
        errors.append(e)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
                  "client.id": name, "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "error_cb": on_error})
    c.subscribe([TOPIC], on_assign=on_assign)
    return c


def poll_until(consumers, cond, seconds, errors_of=None):
    """Polls each consumer in turn until cond() or `seconds`; message errors go to errors_of[i]."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            try:
                m = c.poll(0.05)
                if m is not None and m.error() and errors_of is not None:
                    errors_of[i].append(m.error())
            except Exception as e:  # noqa: BLE001 - a fatal consumer raises from poll
                if errors_of is not None:
                    errors_of[i].append(e.args[0] if e.args else e)
        if cond():
            return True
    return cond()


def describe_group(conn, group):
    """DescribeGroups v0: (error, state, [(member_id, client_id)])."""
    body = arr([s_(group)])
    r = conn.request(15, 0, body)
    assert r.int32() == 1
    err = r.int16()
    r.string()  # group id
    state = r.string()
    r.string()  # protocol type
    r.string()  # protocol
    members = []
    for _ in range(r.int32()):
        mid = r.string()
        cid = r.string()
        r.string()  # host
        r.bytes_()
        r.bytes_()
        members.append((mid, cid))
    return err, state, members


def test_fencing_with_librdkafka(broker, check):
    group = "static-rdk"
    ea, aa, eb, ab = [], set(), [], set()
    a = consumer(broker.bootstrap, group, "inst-1", "consumer-a", ea, aa)
    try:
        check.true(poll_until([a], lambda: aa == set(range(PARTITIONS)), 30),
                   "consumer A got every partition (got %s)" % sorted(aa))
        conn = Conn(broker.port)
        err, state, members = describe_group(conn, group)
        check.eq((err, state, len(members)), (0, "Stable", 1), "group after A joined")
        a_member = members[0][0] if members else None
        b = consumer(broker.bootstrap, group, "inst-1", "consumer-b", eb, ab)
        try:
            fatal = lambda: any("fenced" in str(e).lower() for e in ea)  # noqa: E731
            t0 = time.monotonic()
            check.true(poll_until([a, b], lambda: ab == set(range(PARTITIONS)) and fatal(), 30, [ea, eb]),
                       "B took A's place (B has %s) and A was told it is fenced (A's errors: %s)"
                       % (sorted(ab), [str(e) for e in ea]))
            print("A fenced after %.2f s: %s" % (time.monotonic() - t0, [str(e) for e in ea]), flush=True)
            check.true(any("fenced" in str(e).lower() for e in ea),
                       "A's error names the fencing: %s" % [str(e) for e in ea])
            check.eq(eb, [], "B's errors")
            err, state, members = describe_group(conn, group)
            check.eq((err, state, len(members)), (0, "Stable", 1), "group after B replaced A")
            check.true(members and members[0][0] != a_member, "the one member has a new member id")
        finally:
            b.close()
        conn.close()
    finally:
        try:
            a.close()
        except Exception:  # noqa: BLE001 - a fenced consumer may refuse to close cleanly
            pass


def join_v5(conn, group, member_id, instance):
    meta = struct.pack(">hi", 0, 1) + s_(TOPIC) + struct.pack(">i", -1)
    body = (s_(group) + struct.pack(">ii", 6000, 30000) + s_(member_id) + s_(instance)
            + s_("consumer") + arr([s_("range") + byts(meta)]))
    r = conn.request(JOIN, 5, body)
    r.int32()  # throttle
    err = r.int16()
    gen = r.int32()
    r.string()  # protocol
    leader = r.string()
    mid = r.string()
    return err, gen, leader, mid


def sync_v3(conn, group, gen, member_id, instance, assignments=()):
    body = (s_(group) + struct.pack(">i", gen) + s_(member_id) + s_(instance)
            + arr([s_(m) + byts(a) for m, a in assignments]))
    r = conn.request(SYNC, 3, body)
    r.int32()
    return r.int16(), r.bytes_()


def heartbeat_v3(conn, group, gen, member_id, instance):
    body = s_(group) + struct.pack(">i", gen) + s_(member_id) + s_(instance)
    r = conn.request(HEARTBEAT, 3, body)
    r.int32()
    return r.int16()


def commit_v7(conn, group, gen, member_id, instance, offset, partition=0):
    body = (s_(group) + struct.pack(">i", gen) + s_(member_id) + s_(instance)
            + arr([s_(TOPIC) + arr([struct.pack(">iqi", partition, offset, -1)
                                                      + s_(None)])]))
    r = conn.request(OFFSET_COMMIT, 7, body)
    r.int32()
    errs = []
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            r.int32()
            errs.append(r.int16())
    return errs


def leave_v3(conn, group, member_id, instance):
    body = s_(group) + arr([s_(member_id) + s_(instance)])
    r = conn.request(LEAVE, 3, body)
    r.int32()
    top = r.int16()
    per = []
    for _ in range(r.int32()):
        r.string()
        r.string()
        per.append(r.int16())
    return top, per


def fetch_offset_v1(conn, group, partition=0):
    body = s_(group) + arr([s_(TOPIC) + arr([struct.pack(">i", partition)])])
    r = conn.request(OFFSET_FETCH, 1, body)
    r.int32()
    r.string()
    r.int32()
    r.int32()
    off = r.int64()
    r.string()
    err = r.int16()
    return off, err


def group_ready(conn, group, seconds=60):
    """FindCoordinator v1 (the first call creates __consumer_offsets), then OffsetFetch until the coordinator
    answers for `group` (Kafka answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while it loads)."""
    deadline = time.monotonic() + seconds
    while True:
        r = conn.request(FIND_COORDINATOR, 1, s_(group) + b"\x00")
        r.int32()
        err = r.int16()
        if err == 0:
            err = fetch_offset_v1(conn, group)[1]
        if err == 0 or time.monotonic() > deadline:
            return err
        time.sleep(0.2)


def test_fencing_by_hand(broker, check):
    group = "static-wire"
    conn = Conn(broker.port)
    check.eq(group_ready(conn, group), 0, "coordinator ready")
    err, gen, leader, old = join_v5(conn, group, "", "inst-w")
    check.eq(err, 0, "first static join")
    err, assignment = sync_v3(conn, group, gen, old, "inst-w", [(old, b"assignment-1")])
    check.eq((err, assignment), (0, b"assignment-1"), "leader's SyncGroup")
    # Same instance id, unknown member id: replaces the old member without a rebalance.
    err2, gen2, _, new = join_v5(conn, group, "", "inst-w")
    check.eq((err2, gen2), (0, gen), "replacing join: no error, same generation")
    check.true(new != old, "replacing join got a new member id")
    err, assignment = sync_v3(conn, group, gen2, new, "inst-w")
    check.eq((err, assignment), (0, b"assignment-1"), "new member's SyncGroup returns the stored assignment")
    check.eq(heartbeat_v3(conn, group, gen, old, "inst-w"), 82, "Heartbeat with the old member id")
    check.eq(sync_v3(conn, group, gen, old, "inst-w")[0], 82, "SyncGroup with the old member id")
    check.eq(commit_v7(conn, group, gen, old, "inst-w", 3), [82], "OffsetCommit with the old member id")
    check.eq(leave_v3(conn, group, old, "inst-w"), (0, [82]), "LeaveGroup with the old member id")
    check.eq(join_v5(conn, group, old, "inst-w")[0], 82, "JoinGroup with the old member id")
    check.eq(heartbeat_v3(conn, group, gen, new, "inst-w"), 0, "Heartbeat of the new member")
    check.eq(commit_v7(conn, group, gen, new, "inst-w", 3), [0], "OffsetCommit of the new member")
    # Simple-consumer commits while the group is Stable: Kafka's member rules.
    check.eq(commit_v7(conn, group, -1, "", "inst-w", 4), [82], "generation -1 naming the live instance")
    check.eq(commit_v7(conn, group, -1, "", None, 4), [25], "generation -1 without member or instance")
    check.eq(fetch_offset_v1(conn, group), (3, 0), "committed offset after the refused commits")
    # Leaving empties the group; then a generation -1 commit with an instance id is accepted.
    check.eq(leave_v3(conn, group, new, "inst-w"), (0, [0]), "new member leaves")
    check.eq(commit_v7(conn, group, -1, "", "inst-w", 9), [0], "generation -1 with an instance id, Empty group")
    check.eq(fetch_offset_v1(conn, group), (9, 0), "OffsetFetch after the simple commit")
    conn.close()


def test_simple_commits(broker, check):
    conn = Conn(broker.port)
    check.eq(group_ready(conn, "never-joined"), 0, "coordinator ready")
    check.eq(commit_v7(conn, "never-joined", -1, "", "inst-s", 41, partition=1), [0],
             "generation -1 + group instance id into a group that does not exist")
    check.eq(fetch_offset_v1(conn, "never-joined", partition=1), (41, 0), "OffsetFetch of that commit")
    conn.close()
    # librdkafka: a consumer with group.instance.id that uses assign() (no group management) commits.
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "assign-only", "group.instance.id": "inst-x",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 2, 0)])
        res = c.commit(offsets=[TopicPartition(TOPIC, 2, 77)], asynchronous=False)
        check.eq([(p.partition, p.offset, p.error) for p in res], [(2, 77, None)], "librdkafka commit result")
        got = c.committed([TopicPartition(TOPIC, 2)], timeout=10)
        check.eq([(p.partition, p.offset) for p in got], [(2, 77)], "librdkafka committed()")
    except Exception as e:  # noqa: BLE001
        check.true(False, "librdkafka simple commit with group.instance.id failed: %r" % (e,))
    finally:
        c.close()


def main(broker, check):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(40):
        p.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    p.flush(30)
    test_fencing_by_hand(broker, check)
    test_simple_commits(broker, check)
    test_fencing_with_librdkafka(broker, check)


if __name__ == "__main__":
    sys.exit(h.run_against(main, {"group.initial.rebalance.delay.ms": 0}, __doc__))
