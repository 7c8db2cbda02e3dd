#!/usr/bin/python3
"""Acceptance 3: a consumer reading ~1 GB from the page cache makes the broker call sendfile(2) and no
read() of segment data. Run by hand for the full size; CTest runs a small variant with --check.

    /usr/bin/python3 tests/integration/sendfile_strace.py --broker build/broker/sluice --mb 1024
    /usr/bin/python3 tests/integration/sendfile_strace.py --broker build/broker/sluice --mb 64 --check

Steps: start the broker (message.max.bytes=8 MiB); produce --mb MiB of --record-kb KiB records to one
partition with kcat -P (batch.size 8 MB, so batches of ~80 records); consume them once (page cache warm);
then attach `strace -f -C -y -e trace=sendfile,read,pread64,readv,preadv,preadv2 -p <broker pid>`
(-f with -p attaches every thread; -C gives the -c table plus one line per call; -y names each fd's
file), consume everything again with kcat -C, detach (SIGINT) and print strace's table plus a table of
calls and bytes per syscall and per kind of file (.log segment, .index/.timeindex, socket, other).

--check asserts: sendfile moved at least as many bytes out of .log files as the partition holds; no
read()/readv() touched a .log file; pread64 on .log files (batch headers: 61 bytes each, the forward
walk from an index entry) read less than 1% of the bytes served.
Needs ptrace (strace attaches to a running process): without it the script says so and exits 77.
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_harness as h  # noqa: E402

LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")


def classify(fd_arg):
    m = re.match(r"\d+<(.*)>$", fd_arg.strip())
    target = m.group(1) if m else ""
    if target.endswith(".log"):
        return "segment .log"
    if target.endswith(".index") or target.endswith(".timeindex"):
        return "index"
    if target.startswith("TCP") or target.startswith("socket") or target.startswith("UNIX"):
        return "socket"
    return "other (%s)" % (target.split("/")[-1][:20] if target else "?")


def split_args(args):
    """Top-level comma split (strings and brackets kept whole)."""
    out, depth, cur, in_str, esc = [], 0, "", False, False
    for c in args:
        if in_str:
            cur += c
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in "[{<(":
            depth += 1
        elif c in "]}>)":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def analyse(trace_path):
    calls = collections.Counter()
    nbytes = collections.Counter()
    sizes = collections.defaultdict(collections.Counter)
    summary = []
    in_summary = False
    with open(trace_path, errors="replace") as f:
        for line in f:
            if line.startswith("% time"):
                in_summary = True
            if in_summary:
                summary.append(line.rstrip("\n"))
                continue
            m = LINE.match(line)
            if not m:
                continue
            name, args, ret = m.group(2), split_args(m.group(3)), int(m.group(4))
            if not args:
                continue
            fd_arg = args[1] if name == "sendfile" and len(args) > 1 else args[0]
            kind = classify(fd_arg)
            calls[(name, kind)] += 1
            if ret > 0:
                nbytes[(name, kind)] += ret
                if kind == "segment .log" and name != "sendfile":
                    sizes[name][ret] += 1
    return calls, nbytes, sizes, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="")
    ap.add_argument("--mb", type=int, default=1024, help="MiB to produce and consume")
    ap.add_argument("--record-kb", type=int, default=100)
    ap.add_argument("--check", action="store_true", help="assert (CTest variant)")
    args = ap.parse_args()
    binary = os.environ.get("SLUICE_BINARY") or args.broker
    if not binary or not os.access(binary, os.X_OK):
        print("SKIPPED: no sluice binary")
        return h.SKIP
    for tool in ("strace", "kcat"):
        if not shutil.which(tool):
            print("SKIPPED: %s not installed (Debian package %s)" % (tool, tool))
            return h.SKIP

    broker = h.Broker(binary, {"broker.id": "1", "num.partitions": "1", "message.max.bytes": "8388608"})
    check = h.Checker()
    strace = None
    try:
        broker.start()
        bs = broker.bootstrap
        record = b"x" * (args.record_kb * 1024 - 1) + b"\n"
        count = args.mb * 1024 // args.record_kb
        t = time.monotonic()
        prod = subprocess.Popen(["kcat", "-P", "-b", bs, "-t", "big", "-p", "0", "-X", "batch.size=8000000",
                                 "-X", "message.max.bytes=8388608", "-X", "linger.ms=50",
                                 "-X", "queue.buffering.max.kbytes=262144"], stdin=subprocess.PIPE)
        for _ in range(count):
            prod.stdin.write(record)
        prod.stdin.close()
        rc = prod.wait(timeout=600)
        produce_s = time.monotonic() - t
        check.eq(rc, 0, "kcat -P exit status")
        part_dir = os.path.join(broker.data_dir, "big-0")
        log_bytes = sum(os.path.getsize(os.path.join(part_dir, f)) for f in os.listdir(part_dir) if f.endswith(".log"))
        print("produced %d records of %d KiB (%.0f MiB in .log files) in %.1f s"
              % (count, args.record_kb, log_bytes / 2**20, produce_s))

        kcat_c = ["kcat", "-C", "-b", bs, "-t", "big", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o\n",
                  "-X", "fetch.max.bytes=52428800", "-X", "max.partition.fetch.bytes=10485760",
                  "-X", "receive.message.max.bytes=104857600"]
        # Warm the page cache (and check the count) without strace.
        t = time.monotonic()
        out = subprocess.run(kcat_c, stdout=subprocess.PIPE, timeout=600).stdout.split()
        print("warm-up consume: %d records in %.1f s" % (len(out), time.monotonic() - t))
        check.eq(len(out), count, "records consumed (warm-up)")

        trace_path = os.path.join(broker.dir, "strace.txt")
        cmd = ["strace", "-f", "-C", "-y", "-o", trace_path,
               "-e", "trace=sendfile,read,pread64,readv,preadv,preadv2", "-p", str(broker.proc.pid)]
        strace = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        # Wait (bounded) for "attached" on stderr, or for strace to fail (no ptrace permission).
        deadline = time.monotonic() + 10
        attached = False
        os.set_blocking(strace.stderr.fileno(), False)
        err_text = b""
        while time.monotonic() < deadline:
            chunk = strace.stderr.read() or b""
            err_text += chunk
            if b"attached" in err_text:
                attached = True
                break
            if strace.poll() is not None:
                break
            time.sleep(0.05)
        if not attached:
            print("strace could not attach (ptrace not permitted?): %s" % err_text.decode(errors="replace"))
            print("Fallback proposal: count in the broker, per syscall, the calls and bytes of sendfile() and "
                  "of pread() on segment files (a storage::io_stats with two atomics each, shown in "
                  "DescribeLogDirs or a log line at shutdown).")
            strace.kill()
            strace.wait()
            strace = None
            return h.SKIP
        time.sleep(0.5)  # let -f attach every thread
        t = time.monotonic()
        out = subprocess.run(kcat_c, stdout=subprocess.PIPE, timeout=600).stdout.split()
        consume_s = time.monotonic() - t
        strace.send_signal(signal.SIGINT)
        strace.wait(timeout=60)
        strace = None
        print("traced consume: %d records, %.0f MiB in %.1f s (%.0f MiB/s under strace)"
              % (len(out), log_bytes / 2**20, consume_s, log_bytes / 2**20 / max(consume_s, 1e-6)))
        check.eq(len(out), count, "records consumed (traced)")
        check.eq(out[-1].decode() if out else None, str(count - 1), "last offset consumed")

        calls, nbytes, sizes, summary = analyse(trace_path)
        print("\nstrace -f -C -e trace=sendfile,read,pread64,readv,preadv,preadv2 -p %d:" % broker.proc.pid)
        print("\n".join(summary))
        print("\n%-10s %-22s %10s %16s" % ("syscall", "fd", "calls", "bytes"))
        for key in sorted(calls):
            print("%-10s %-22s %10d %16d" % (key[0], key[1], calls[key], nbytes[key]))
        for name, c in sizes.items():
            common = ", ".join("%d B x%d" % (s, n) for s, n in c.most_common(5))
            print("%s sizes on .log files (most common): %s" % (name, common))

        if args.check:
            sent = nbytes[("sendfile", "segment .log")]
            check.true(calls[("sendfile", "segment .log")] > 0, "no sendfile() from a .log file")
            check.true(sent >= log_bytes, "sendfile moved %d bytes out of .log files, the log holds %d" % (sent, log_bytes))
            for name in ("read", "readv", "preadv", "preadv2"):
                check.eq(calls[(name, "segment .log")], 0, "%s() calls on .log files" % name)
            pread = nbytes[("pread64", "segment .log")]
            check.true(pread < log_bytes // 100, "pread64 read %d bytes of .log files (>= 1%% of %d)" % (pread, log_bytes))
        rc = broker.stop()
        check.eq(rc, 0, "broker exit status")
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    finally:
        if strace is not None:
            strace.kill()
            strace.wait()
    failed = not check.ok()
    if failed:
        print(broker.log_text()[-5000:])
    broker.close(failed=failed)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


if __name__ == "__main__":
    sys.exit(main())
