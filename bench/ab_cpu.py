#!/usr/bin/env python3
"""Broker CPU per million records and produce rate of two sluice binaries (before / after a change), in one run.

usage: bench/ab_cpu.py BEFORE_BINARY AFTER_BINARY [ROUNDS]   (needs build*/bench/sluice_bench: --bench-bin)

For 100 B and 1 KB records, acks 1 and -1, 6 partitions: each round starts a fresh single node of each binary
(order alternating between rounds), produces with sluice_bench and reads the broker's user+system CPU ticks from
/proc before and after. Prints the median over the rounds. CPU per record is what the comparison is about: it
moves little with the machine's load, where records/s on 2 shared cores move a lot. Loopback only; every broker
it starts is stopped by PID.
"""
import os, subprocess, sys, time, socket, tempfile, re
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.environ.get("SLUICE_BENCH_BIN", os.path.join(HERE, "..", "build-tests", "bench", "sluice_bench"))
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])
def one(binary, size, acks, records, partitions):
    d = tempfile.mkdtemp(prefix="sluice-ab-")
    port = free_port()
    p = subprocess.Popen([binary, "--override", "log.dirs=" + d, "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                          "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close(); break
        except OSError:
            time.sleep(0.05)
    t0 = cpu_ticks(p.pid)
    out = subprocess.run([BENCH, "--bootstrap", "127.0.0.1:%d" % port, "--mode", "produce", "--records", str(records),
                          "--size", str(size), "--acks", str(acks), "--partitions", str(partitions)],
                         capture_output=True, text=True, timeout=300).stdout
    t1 = cpu_ticks(p.pid)
    p.terminate(); p.wait(timeout=20)
    subprocess.run(["rm", "-rf", d])
    rate = float(re.search(r"records_per_s=(\d+)", out).group(1))
    hz = os.sysconf("SC_CLK_TCK")
    return (t1 - t0) / hz / records * 1e6, rate
binaries = {"before": sys.argv[1], "after": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
for size, acks, records in [(100, 1, 2000000), (100, -1, 2000000), (1024, 1, 500000), (1024, -1, 500000)]:
    res = {"before": [], "after": []}
    for r in range(rounds):
        for name in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
            res[name].append(one(binaries[name], size, acks, records, 6))
    line = "%5d B acks=%2d:" % (size, acks)
    for name in ("before", "after"):
        cpus = sorted(x[0] for x in res[name]); rates = sorted(x[1] for x in res[name])
        line += "  %s: CPU %.2f s/M records (median of %d), %.0f rec/s" % (name, cpus[len(cpus)//2], rounds, rates[len(rates)//2])
    print(line, flush=True)
print("load average:", open("/proc/loadavg").read().split()[:3])
