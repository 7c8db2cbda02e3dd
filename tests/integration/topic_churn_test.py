#!/usr/bin/python3
"""Concurrent create and delete of the same topic names (a crash found by a break-it run of issue #18: a create
reused the logs a deletion was still closing, and the broker died within seconds).

Six threads for 4 s each loop over create and delete of two names through the HTTP admin API (which runs the
broker's CreateTopics and DeleteTopics handlers) while kcat produces to one of them. Then:
  - the broker is alive and answers /healthz;
  - every answer was one of the documented ones (201/409 for create, 204/404 for delete), and some of each kind;
  - after a last delete of both names, a create of each gives an empty topic (high watermark 0 per partition) and
    a record produced to it is read back at offset 0: no log of an earlier incarnation leaked into the new one.

Usage: topic_churn_test.py --broker build-tests/broker/sluice. Exit 0 pass, 1 fail, 77 skipped (no binary).
"""
import collections
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402

NAMES = ["churn-a", "churn-b"]


def call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body))
        r = c.getresponse()
        data = r.read()
        return r.status, (json.loads(data) if data else None)
    finally:
        c.close()


def main_checks(broker, check, http_port):
    stats = collections.Counter()
    errors = []

    def worker(seed):
        rnd = random.Random(seed)
        end = time.monotonic() + 4
        while time.monotonic() < end:
            name = rnd.choice(NAMES)
            try:
                if rnd.random() < 0.5:
                    st, _ = call(http_port, "POST", "/v1/topics", {"name": name, "partitions": rnd.randrange(1, 4)})
                    stats[("create", st)] += 1
                else:
                    st, _ = call(http_port, "DELETE", "/v1/topics/" + name)
                    stats[("delete", st)] += 1
            except OSError as e:
                errors.append(repr(e))
                return

    producer = subprocess.Popen(["kcat", "-b", broker.bootstrap, "-P", "-t", NAMES[0], "-X", "message.timeout.ms=3000"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    try:
        for i in range(200):
            producer.stdin.write(b"r%d\n" % i)
            producer.stdin.flush()
            time.sleep(0.01)
    except BrokenPipeError:
        pass
    for t in threads:
        t.join(timeout=60)
    try:
        producer.stdin.close()
    except BrokenPipeError:
        pass
    try:
        producer.wait(timeout=20)
    except subprocess.TimeoutExpired:
        producer.kill()
        producer.wait()
    print("answers: %s" % dict(stats))
    check.eq(errors, [], "no connection failure during the churn")
    check.true(broker.alive(), "the broker is alive after the churn")
    check.eq(call(http_port, "GET", "/healthz")[0], 200, "GET /healthz after the churn")
    allowed = {("create", 201), ("create", 409), ("delete", 204), ("delete", 404)}
    check.eq(sorted(k for k in stats if k not in allowed), [], "only documented answers")
    for kind in allowed:
        check.true(stats[kind] > 0, "%s %d answered at least once (%d)" % (kind[0], kind[1], stats[kind]))
    for name in NAMES:
        call(http_port, "DELETE", "/v1/topics/" + name)
    deadline = time.monotonic() + 10
    for name in NAMES:
        while True:
            st, body = call(http_port, "POST", "/v1/topics", {"name": name, "partitions": 2})
            if st == 201 or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # 409 "marked for deletion" while the last drop finishes
        check.eq(st, 201, "create %s after the churn: %s" % (name, body))
        st, desc = call(http_port, "GET", "/v1/topics/" + name + "?configs=false")
        check.eq([p["high_watermark"] for p in desc["partitions"]], [0, 0], "%s starts empty" % name)
        st, res = call(http_port, "POST", "/v1/topics/%s/partitions/1/records" % name, {"records": [{"value": "fresh"}]})
        check.eq((st, res["offsets"][0].get("offset")), (200, 0), "first record of the new %s at offset 0" % name)
        st, page = call(http_port, "GET", "/v1/topics/%s/partitions/1/records?offset=0&limit=5" % name)
        check.eq([r["value"] for r in page["records"]], ["fresh"], "%s-1 holds only the new record" % name)


def main():
    binary, _ = h.binary_from_args(__doc__)
    http_port = h.pick_free_port()
    overrides = {"http.listeners": "http://127.0.0.1:%d" % http_port}
    return h.run(lambda broker, check: main_checks(broker, check, http_port), binary, overrides)


if __name__ == "__main__":
    sys.exit(main())
