#!/usr/bin/env python3
"""Incremental fetch sessions (KIP-227, issue #21) with the Java client 4.4: one consumer assigned to 1,000
partitions reads 20,000 records from the beginning (IncrementalFetch.java), then polls 3 s with nothing new.

Runs twice on fresh brokers: with fetch sessions (max.incremental.fetch.session.cache.slots=1000, the default) and
without (=0: the broker makes no session, so every fetch names all 1,000 partitions). From the broker's /metrics,
the Fetch requests handled and their bytes (sluice_network_request_bytes_total{request="Fetch"}) give the mean
Fetch request size of each run, which the test prints and checks: every record arrives exactly once in both runs;
with sessions the mean request is under a fifth of the sessionless mean (the full first fetch
names every partition, the incremental ones only the partitions whose fetch position moved), and an idle incremental Fetch
(polls with nothing new, measured between the driver's READ_DONE and its exit) is under 200 bytes: it names no
partition.

Usage: fetch_sessions_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
Exit 0 pass, 1 fail, 77 skipped (no binary, no Java or no Maven Central).
"""
import os
import re
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402

PARTITIONS = 1000
RECORDS = 20000


def scrape(port):
    """{(family, labels text): value} of the broker's /metrics."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$', line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def fetch_totals(metrics):
    """(Fetch requests handled, bytes of their frames)."""
    requests = sum(v for (f, l), v in metrics.items()
                   if f == "kafka_network_requestmetrics_requests_total" and 'request="Fetch"' in l)
    nbytes = metrics.get(("sluice_network_request_bytes_total", '{request="Fetch"}'), 0.0)
    return requests, nbytes


def one_run(binary, java_bin, classpath, slots, results):
    http_port = h.pick_free_port()
    overrides = {"http.listeners": "http://127.0.0.1:%d" % http_port,
                 "max.incremental.fetch.session.cache.slots": str(slots)}

    def body(broker, check):
        p = subprocess.Popen([java_bin, "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
                              "IncrementalFetch", broker.bootstrap, "wide", str(PARTITIONS), str(RECORDS), "3000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, at_read_done = [], None
        try:
            for line in p.stdout:  # ends when the driver exits (its own bounds: 180 s reading, 3 s idle)
                lines.append(line.strip())
                if line.startswith("READ_DONE"):
                    at_read_done = fetch_totals(scrape(http_port))
            stderr = p.stderr.read()
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        result = [line for line in lines if line.startswith("RESULT")]
        print("slots=%d: %s" % (slots, result[0] if result else "(no result)"))
        check.eq(p.returncode, 0, "consumer got every record once with slots=%d (stderr tail: %s)"
                 % (slots, stderr[-800:]))
        metrics = scrape(http_port)
        requests, nbytes = fetch_totals(metrics)
        sessions = metrics.get(("kafka_server_fetchsessioncache_numincrementalfetchsessions", ""), -1)
        cached = metrics.get(("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", ""), -1)
        mean = nbytes / requests if requests else 0
        print("slots=%d: %d Fetch requests, %d bytes, mean %.0f bytes; sessions cached %d, partitions cached %d"
              % (slots, requests, nbytes, mean, sessions, cached))
        idle_mean = 0
        if at_read_done:
            idle_requests, idle_bytes = requests - at_read_done[0], nbytes - at_read_done[1]
            idle_mean = idle_bytes / idle_requests if idle_requests else 0
            print("slots=%d: idle phase: %d Fetch requests, mean %.0f bytes" % (slots, idle_requests, idle_mean))
            check.true(idle_requests > 0, "Fetch requests while idle with slots=%d" % slots)
        else:
            check.true(False, "the driver reported READ_DONE with slots=%d" % slots)
        check.true(requests > 0, "Fetch requests counted with slots=%d" % slots)
        results[slots] = {"requests": requests, "bytes": nbytes, "mean": mean, "sessions": sessions,
                          "cached": cached, "idle_mean": idle_mean}

    return h.run(body, binary, overrides)


def main():
    args, skip = h.client_test_args(__doc__, __file__, modules=())  # --broker, --cache; the Java client only
    if skip is not None:
        return skip
    try:
        java_bin, classpath = installers.java_program(args.cache, os.path.join(HERE, "IncrementalFetch.java"),
                                                      "incremental-fetch-classes")
    except (installers.Unavailable, installers.SetupFailed) as e:
        print("SKIP: no Java client: %s" % e)
        return h.SKIP
    results = {}
    codes = [one_run(args.broker, java_bin, classpath, 1000, results),
             one_run(args.broker, java_bin, classpath, 0, results)]
    check = h.Checker()
    if 1000 in results and 0 in results:
        with_s, without = results[1000], results[0]
        check.eq(without["sessions"], 0, "sessions cached with slots=0")
        check.true(without["mean"] > 20 * PARTITIONS,
                   "a sessionless Fetch names every partition (mean %.0f bytes)" % without["mean"])
        check.true(with_s["mean"] * 5 < without["mean"],
                   "mean Fetch request with sessions (%.0f bytes) under a fifth of without (%.0f bytes)"
                   % (with_s["mean"], without["mean"]))
        check.true(0 < with_s["idle_mean"] < 200,
                   "an idle incremental Fetch names no partition (mean %.0f bytes)" % with_s["idle_mean"])
        print("mean Fetch request: %.0f bytes with sessions, %.0f without (%.1fx smaller); idle: %.0f vs %.0f bytes"
              % (with_s["mean"], without["mean"], without["mean"] / max(with_s["mean"], 1), with_s["idle_mean"],
                 without["idle_mean"]))
    else:
        check.true(False, "both runs reported their figures")
    code = check.report()
    if any(c not in (0,) for c in codes) or code != 0:
        print("FAILED")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
