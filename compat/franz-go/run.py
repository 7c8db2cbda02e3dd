#!/usr/bin/python3
"""Runs franz-go's own kgo integration tests (pkg/kgo, `go test`) against Sluice and Apache Kafka 4.4.

The franz-go module (pinned in versions.txt, with its go.sum hash) is fetched with `go mod download`
into <cache>/franz-go/gomod through the Go module proxy, copied to a writable scratch folder
(<cache>/franz-go/src-<version>), and its kgo test binary is built once (`go test -c ./pkg/kgo`).
Nothing of franz-go is committed. Each top-level Test function of `-test.list .` then runs as its
own process (`kgo.test -test.run '^Name$'`, the same as `go test -run '^Name$'` without relinking
every time) with a per-test timeout, so one hang does not end the run.

    # Sluice single node (started here on a free loopback port)
    /usr/bin/python3 compat/franz-go/run.py --broker build/broker/sluice
    # a 3-broker Sluice cluster on a ZooKeeper (tests/integration/sluice_harness.py), KGO_TEST_RF=3
    /usr/bin/python3 compat/franz-go/run.py --broker build/broker/sluice --cluster 3
    # Apache Kafka 4.4.0 only (compat/kafka/kafka_reference.py)
    /usr/bin/python3 compat/franz-go/run.py --reference kafka
    # side by side: a Kafka 4.4.0 column, then a Sluice column (its summary is the last line)
    /usr/bin/python3 compat/franz-go/run.py --reference kafka --broker build/broker/sluice
    # an already running broker, some tests
    /usr/bin/python3 compat/franz-go/run.py --bootstrap 127.0.0.1:9092 --tests 'Group|Txn'

Environment given to every test (franz-go's helpers_test.go): KGO_SEEDS (the bootstrap list),
KGO_TEST_RF (1 for one node, min(3, N) for a cluster), KGO_TEST_RECORDS (--records), KGO_TEST_UNSAFE
(--unsafe only), KGO_TEST_CHAOS (--chaos only), KGO_TEST_STABLE_FETCH=true (as franz-go's CI; not read by v1.21), KGO_LOG_LEVEL
(--log-level). No TLS / SCRAM: the tests needing them skip themselves.

Output: one line per test and column while running, then a table test x broker (PASS / FAIL /
SKIP / TIMEOUT; `FAIL>PASS` = failed, then passed when rerun alone), the failures split into known
(known_failures.txt) and unexpected, and per broker a line `N passed, N failed, N skipped` (TIMEOUT
counts as failed, FAIL>PASS as passed), the Sluice one last. Logs: <cache>/franz-go/runs/<stamp>/.
Exit status: 0 when no Sluice test failed unexpectedly, 1 otherwise, 77 when nothing could run
(no Go toolchain, the module proxy cannot be reached, no broker).
"""
import argparse

import os
import re

import signal
import subprocess
import sys

import time

from kgo_runner import (  # the helpers; importing it also puts the harness folders on sys.path
    HERE,
    REPO,
    SKIP_RC,
    TAIL_LINES,
    log,
    Unavailable,
    read_pin,

    prepare_franz,
    list_tests,
    read_known,
    known_reason,
    Target,
    CURRENT,
    kill_group,
    run_one,
    subtests,
    run_package,
    failure_excerpt,
    skip_reason,
    first_error,
    timeout_reason,
)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""),
                    help="sluice executable: start a single node (or, with --cluster, the cluster's nodes)")
    ap.add_argument("--cluster", type=int, default=0, metavar="N",
                    help="a ZooKeeper and N Sluice brokers instead of one node (KGO_TEST_RF=min(3, N))")
    ap.add_argument("--bootstrap", default="", metavar="HOST:PORT", help="an already running broker (a column)")
    ap.add_argument("--rf", type=int, default=0, help="KGO_TEST_RF for --bootstrap (default 1)")
    ap.add_argument("--reference", choices=["kafka"], default="",
                    help="a Kafka 4.4.0 column (compat/kafka/kafka_reference.py); alone, or first beside Sluice")
    ap.add_argument("--cache", default=os.environ.get("SLUICE_COMPAT_CACHE", os.path.join(REPO, "build", "compat-cache")),
                    help="downloads, builds, logs and brokers' data (default %(default)s)")
    ap.add_argument("--tests", default="", metavar="REGEX",
                    help="only the top-level tests whose name matches (re.search, as go test -run)")
    ap.add_argument("--per-test-timeout", type=int, default=300, help="seconds per test (default %(default)s)")
    ap.add_argument("--overall-timeout", type=int, default=7200,
                    help="seconds for the whole invocation; tests not started by then are skipped (default %(default)s)")
    ap.add_argument("--records", type=int, default=50000,
                    help="KGO_TEST_RECORDS, records per ETL test (franz-go's default 500000; default here %(default)s)")
    ap.add_argument("--unsafe", action="store_true", help="set KGO_TEST_UNSAFE (EndAndBeginTransaction unsafe mode)")
    ap.add_argument("--chaos", action="store_true",
                    help="set KGO_TEST_CHAOS=1: TestGroupETL's and TestShareGroupETL's clients drop every "
                         "connection 0.5-1.5 s after dialing (reconnects, produce retries, sequence rewinds)")
    ap.add_argument("--log-level", default="", choices=["", "info", "debug", "none"], help="KGO_LOG_LEVEL")
    ap.add_argument("--no-rerun", action="store_true", help="do not rerun a failing test alone once")
    ap.add_argument("--one-process", action="store_true",
                    help="all selected tests in one process, concurrently as franz-go's CI (`go test ./...`); "
                         "Sluice's known failures are left out; --overall-timeout bounds it")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config for the brokers started here (repeatable)")
    ap.add_argument("--versions", default=os.path.join(HERE, "versions.txt"))
    ap.add_argument("--known-failures", default=os.path.join(HERE, "known_failures.txt"))
    ap.add_argument("--build-only", action="store_true", help="download and build the test binary, run nothing")
    args = ap.parse_args()
    if args.cluster and not args.broker:
        ap.error("--cluster needs --broker")
    args.cache = os.path.abspath(args.cache)
    deadline = time.monotonic() + args.overall_timeout
    os.makedirs(args.cache, exist_ok=True)

    module, version, want_sum = read_pin(args.versions)
    with open(os.path.join(args.cache, "franz-go-obtain.log"), "a") as logf:
        try:
            binary, pkg = prepare_franz(args.cache, module, version, want_sum, logf)
        except Unavailable as e:
            log("SKIPPED: %s" % e)
            return SKIP_RC
        except subprocess.TimeoutExpired as e:
            log("SKIPPED: %s timed out" % (e.cmd,))
            return SKIP_RC
    if args.build_only:
        log("# kgo test binary: %s (package dir %s)" % (binary, pkg))
        return 0

    targets = []
    if args.reference:
        targets.append(Target("kafka", "Kafka 4.4.0", False, "single"))
    if args.bootstrap:
        targets.append(Target("existing", "broker " + args.bootstrap, True, "single"))
    if args.broker:
        if not os.access(args.broker, os.X_OK):
            log("SKIPPED: %s is not an executable" % args.broker)
            return SKIP_RC
        if args.cluster:
            targets.append(Target("cluster", "Sluice x%d" % args.cluster, True, "cluster"))
        else:
            targets.append(Target("sluice", "Sluice", True, "single"))
    if not targets:
        log("SKIPPED: no broker (pass --broker PATH, --bootstrap HOST:PORT or --reference kafka)")
        return SKIP_RC

    names = list_tests(binary, pkg)
    if args.tests:
        rx = re.compile(args.tests)
        names = [n for n in names if rx.search(n)]
    if not names:
        log("no tests selected")
        return 2
    known = read_known(args.known_failures)
    run_dir = os.path.join(args.cache, "franz-go", "runs", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(run_dir, exist_ok=True)
    failures_log = os.path.join(run_dir, "failures.log")
    log("# franz-go %s kgo tests (%d selected), KGO_TEST_RECORDS=%d, per test %d s; logs in %s"
        % (version, len(names), args.records, args.per_test_timeout, run_dir))

    results = {}  # (target key, name) -> (state, secs, first, rerun state or None, why)
    subs = {}  # (target key, name) -> (subtests, skipped, failed)

    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)

    interrupted = False
    try:
        for t in targets:
            if time.monotonic() > deadline:
                for n in names:
                    results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "overall timeout reached")
                continue
            colddir = os.path.join(run_dir, t.key)
            os.makedirs(colddir, exist_ok=True)
            try:
                t.start(args)
            except Exception as e:  # noqa: BLE001 - the column cannot run
                log("# %s could not be started: %s" % (t.title, e))
                t.notes.append("could not be started: %s" % e)
                t.stop(failed=True)
                for n in names:
                    results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "broker could not be started")
                continue
            env = dict(os.environ)
            env.update({"KGO_SEEDS": t.bootstrap, "KGO_TEST_RF": str(t.rf), "KGO_TEST_RECORDS": str(args.records),
                        "KGO_TEST_STABLE_FETCH": "true"})
            for k in ("KGO_TEST_CHAOS", "KGO_TEST_UNSAFE", "KGO_TEST_TLS", "KGO_TEST_SCRAM", "KGO_TEST_SCRAM_SEEDS", "KGO_LOG_LEVEL"):
                env.pop(k, None)
            if args.unsafe:
                env["KGO_TEST_UNSAFE"] = "1"
            if args.chaos:
                env["KGO_TEST_CHAOS"] = "1"
            if args.log_level:
                env["KGO_LOG_LEVEL"] = args.log_level
            failed_any = False
            try:
                if args.one_process:
                    runnable = [n for n in names if not (t.is_sluice and known_reason(known, n, t) is not None)]
                    for n in names:
                        if n not in runnable:
                            results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "known failure: not run with --one-process")
                    tmo = max(10, min(int(deadline - time.monotonic()), 2 * args.per_test_timeout))
                    log("# %s: %d tests in one process (timeout %d s)" % (t.title, len(runnable), tmo))
                    for n, (state, secs, text, skipwhy) in run_package(binary, pkg, runnable, env, tmo,
                                                              os.path.join(colddir, "one-process.log")).items():
                        why = ""
                        if state in ("FAIL", "TIMEOUT"):
                            failed_any = True
                            why = timeout_reason(text, tmo) if state == "TIMEOUT" else first_error(text)
                            with open(failures_log, "a") as f:
                                f.write("==== %s %s %s (one process): its lines of %s\n%s\n\n"
                                        % (t.title, n, state, os.path.join(colddir, "one-process.log"),
                                           "\n".join(text.splitlines()[-TAIL_LINES:])))
                        elif state == "SKIP":
                            why = skipwhy
                        results[(t.key, n)] = (state, secs, state, None, why)
                        subs[(t.key, n)] = subtests(text, n)
                        log("# %-11s %-55s %s (%.1f s)%s" % (t.title, n, state, secs, (": " + why) if why else ""))
                    t.revive("the one-process run")
                    names_loop = []
                else:
                    names_loop = names
                for n in names_loop:
                    left = int(deadline - time.monotonic())
                    if left < 10:
                        results[(t.key, n)] = ("SKIP", 0.0, "SKIP", None, "overall timeout reached")
                        continue
                    tmo = min(args.per_test_timeout, left)
                    state, secs, text = run_one(binary, pkg, n, env, tmo, os.path.join(colddir, n + ".log"))
                    t.revive(n)
                    first, rerun, why = state, None, ""
                    is_known = t.is_sluice and known_reason(known, n, t) is not None
                    if state in ("FAIL", "TIMEOUT") and is_known:
                        log("# %-11s %-55s %s (%.1f s); known failure, not rerun" % (t.title, n, state, secs))
                    if state in ("FAIL", "TIMEOUT") and not args.no_rerun and not is_known \
                            and deadline - time.monotonic() > 10:
                        log("# %-11s %-55s %s (%.1f s); rerunning it alone" % (t.title, n, state, secs))
                        with open(failures_log, "a") as f:
                            f.write("==== %s %s %s (%.1f s), first run: last %d lines of %s\n%s\n\n"
                                    % (t.title, n, state, secs, TAIL_LINES, os.path.join(colddir, n + ".log"),
                                       failure_excerpt(text)))
                        time.sleep(2)
                        rerun, secs2, text2 = run_one(binary, pkg, n, env, min(args.per_test_timeout,
                                                                               int(deadline - time.monotonic())),
                                                      os.path.join(colddir, n + ".rerun.log"))
                        t.revive(n + " (rerun)")
                        state, secs, text = rerun, secs2, text2  # the verdict is the rerun's; `first` keeps the other
                    if state in ("FAIL", "TIMEOUT"):
                        failed_any = failed_any or not is_known  # data dirs are kept for unexpected ones
                        why = timeout_reason(text, tmo) if state == "TIMEOUT" else first_error(text)
                        logpath = os.path.join(colddir, n + (".rerun.log" if rerun else ".log"))
                        with open(failures_log, "a") as f:
                            f.write("==== %s %s %s (%.1f s)%s: last %d lines of %s\n%s\n\n"
                                    % (t.title, n, state, secs, ", rerun alone" if rerun else "", TAIL_LINES,
                                       logpath, failure_excerpt(text)))
                    elif state == "SKIP":
                        why = skip_reason(text, n)
                    results[(t.key, n)] = (state, secs, first, rerun, why)
                    subs[(t.key, n)] = subtests(text, n)
                    shown = state if rerun is None or rerun == first else "%s>%s" % (first, rerun)
                    nsub, nskip, nfail = subs[(t.key, n)]
                    subnote = " [%d subtests: %d skipped, %d failed]" % (nsub, nskip, nfail) if nsub else ""
                    log("# %-11s %-55s %s (%.1f s)%s%s" % (t.title, n, shown, secs, subnote,
                                                           (": " + why) if why else ""))
            finally:
                t.stop(failed=failed_any)
    except KeyboardInterrupt as e:
        interrupted = True
        log("# interrupted (%s): stopping what was started" % (e or "Ctrl-C"))
    finally:
        kill_group(CURRENT["proc"])
        for t in targets:
            if t.nodes or t.zk:
                t.stop(failed=True)

    # ---- report ----
    width = max(len(n) for n in names)
    cols = [t for t in targets]
    log("")
    log("%-*s  %s" % (width, "test", "  ".join("%-20s" % t.title for t in cols)))
    for n in names:
        cells = []
        for t in cols:
            r = results.get((t.key, n))
            if r is None:
                cells.append("%-20s" % "-")
                continue
            state, secs, first, rerun, why = r
            s = state if rerun is None or rerun == first else "%s>%s" % (first, rerun)
            if t.is_sluice and state in ("FAIL", "TIMEOUT") and known_reason(known, n, t) is not None:
                s += "*"
            if state != "SKIP":
                s = "%s %.0fs" % (s, secs)
            nsub, nskip, nfail = subs.get((t.key, n), (0, 0, 0))
            if nskip:
                s += " s%d/%d" % (nskip, nsub)
            cells.append("%-20s" % s)
        log("%-*s  %s" % (width, n, "  ".join(cells)))
    log("(* = known failure, known_failures.txt; A>B = A first, B when rerun alone; sK/N = K of N subtests skipped)")

    exit_code = 0
    summaries = []
    for t in cols:
        p = f_ = s = 0
        flaky, knownf, unexpected, skipped = [], [], [], []
        for n in names:
            r = results.get((t.key, n))
            if r is None:
                continue
            state, secs, first, rerun, why = r
            if state == "PASS":
                p += 1
                if first != "PASS":
                    flaky.append(n)
            elif state in ("FAIL", "TIMEOUT"):
                f_ += 1
                reason = known_reason(known, n, t) if t.is_sluice else None
                if reason is not None:
                    knownf.append("%s %s: %s [known: %s]" % (n, state, why, reason))
                else:
                    unexpected.append("%s %s: %s" % (n, state, why))
            else:
                s += 1
                skipped.append("%s: %s" % (n, why))
        log("")
        log("## %s (%s)" % (t.title, t.bootstrap or "not started"))
        for note in t.notes:
            log("#   note: %s" % note)
        if flaky:
            log("#   failed, then passed when rerun alone: %s" % " ".join(flaky))
        for k in knownf:
            log("#   known failure: %s" % k)
        for u in unexpected:
            log("#   %s: %s" % ("UNEXPECTED failure" if t.is_sluice else "failure", u))
        if skipped:
            log("#   skipped: %d (%s)" % (len(skipped), "; ".join(sorted(set(x.split(": ", 1)[1] or "no reason"
                                                                        for x in skipped)))[:600]))
        if t.is_sluice and unexpected:
            exit_code = 1
        summaries.append((t, "%d passed, %d failed, %d skipped" % (p, f_, s)))
    if os.path.exists(failures_log):
        log("# failing tests' last %d lines: %s" % (TAIL_LINES, failures_log))
    log("# logs of every test: %s" % run_dir)
    # Sluice's summary last (targets are ordered Kafka, existing, Sluice).
    for t, line in summaries:
        log("# %s:" % t.title)
        log(line)
    if interrupted:
        return 130
    return exit_code

if __name__ == "__main__":
    sys.exit(main())
