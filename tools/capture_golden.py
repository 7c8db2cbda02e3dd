#!/usr/bin/python3
"""Refresh tests/golden/data/: capture real client requests through tools/capture_proxy.py.

    tools/capture_golden.py --broker build/broker/sluice [--out tests/golden/data] [--keep N]

Starts `sluice` on a free loopback port B, advertising a second free port P where capture_proxy.py
listens and forwards to B (so clients keep talking through the proxy after Metadata). Then drives:
  librdkafka via kcat: -L, -P (keys + headers, acks=all), -C (fetch from the beginning);
  kafka-python 2.0.2: admin create_topics, producer (acks=all, headers), consumer assign+poll.
Writes at most --keep frames per (client, API, version) into --out as
<client>-<ApiName>-v<version>-<n>.bin (request without the size prefix). Responses are not kept
(they carry broker-specific values); pass --responses to keep them as *.response.bin too.
Without --broker (or $SLUICE_BINARY): --fake mode, recording only the first frame each client
sends on each connection (ApiVersions; kafka-python's fallback probes), no broker needed.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import sluice_harness as h  # noqa: E402

PY = "/usr/bin/python3"
KCAT = "/usr/bin/kcat"

KAFKA_PYTHON_DRIVER = r'''
import sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
bs = sys.argv[1]
fake = sys.argv[2] == "fake"
if fake:
    try:
        KafkaConsumer(bootstrap_servers=bs, request_timeout_ms=3000, api_version_auto_timeout_ms=3000)
    except Exception as e:
        print("expected without broker:", e)
    sys.exit(0)
admin = KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=10000)
admin.create_topics([NewTopic("golden-kp", 2, 1)], timeout_ms=10000)
admin.close()
p = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=20)
for i in range(20):
    p.send("golden-kp", key=b"k%d" % i, value=b"v%d" % i, headers=[("h1", b"v1"), ("i", str(i).encode())])
p.flush(30)
p.close()
c = KafkaConsumer(bootstrap_servers=bs, group_id=None, enable_auto_commit=False)
tps = [TopicPartition("golden-kp", 0), TopicPartition("golden-kp", 1)]
c.assign(tps)
c.seek_to_beginning()
n, deadline = 0, time.monotonic() + 20
while n < 20 and time.monotonic() < deadline:
    n += sum(len(v) for v in c.poll(timeout_ms=500).values())
print("kafka-python consumed", n)
c.close()
'''


def start_proxy(out, target, port, fake):
    args = [PY, os.path.join(HERE, "capture_proxy.py"), "--out", out, "--listen-port", str(port),
            "--max-seconds", "300", "--responses"]
    args += ["--fake"] if fake else ["--target", target]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError("capture_proxy did not start: %r" % line)
    return proc


def run(cmd, stdin=None, timeout=60):
    print("$", " ".join(cmd))
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        print("  exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-2000:]))
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY", ""))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "data"))
    ap.add_argument("--keep", type=int, default=2, help="frames kept per (client, API, version)")
    ap.add_argument("--responses", action="store_true", help="keep responses too")
    args = ap.parse_args()

    fake = not args.broker
    raw = tempfile.mkdtemp(prefix="sluice-capture-")
    proxy_port = h.pick_free_port()
    broker = None
    try:
        if not fake:
            # The broker advertises the proxy so every client connection goes through it.
            broker = h.Broker(args.broker, {}, advertised_port=proxy_port)
            broker.start()
        proxy = start_proxy(raw, None if fake else broker.bootstrap, proxy_port, fake)
        bs = "127.0.0.1:%d" % proxy_port
        try:
            if fake:
                run(["timeout", "5", KCAT, "-b", bs, "-L", "-m", "2"])
            else:
                run([KCAT, "-b", bs, "-L"])
                lines = "".join("key%d:value%d\n" % (i, i) for i in range(20)).encode()
                run([KCAT, "-b", bs, "-P", "-t", "golden-kcat", "-K:", "-H", "h1=v1", "-X", "acks=all"], stdin=lines)
                run([KCAT, "-b", bs, "-C", "-t", "golden-kcat", "-o", "beginning", "-e"])
            run([PY, "-c", KAFKA_PYTHON_DRIVER, bs, "fake" if fake else "real"])
        finally:
            time.sleep(0.5)
            proxy.terminate()
            try:
                out, _ = proxy.communicate(timeout=10)
                print(out)
            except subprocess.TimeoutExpired:
                proxy.kill()
        os.makedirs(args.out, exist_ok=True)
        kept = 0
        for path in sorted(glob.glob(os.path.join(raw, "*.bin"))):
            name = os.path.basename(path)
            if name.endswith(".response.bin") and not args.responses:
                continue
            stem = name.replace(".response.bin", "").replace(".bin", "")
            n = int(stem.rsplit("-", 1)[1])
            if n >= args.keep:
                continue
            shutil.copy(path, os.path.join(args.out, name))
            kept += 1
        print("kept %d files in %s" % (kept, args.out))
        if broker is not None and broker.alive():
            print("broker exit status:", broker.stop())
    finally:
        if broker is not None:
            broker.close()
        shutil.rmtree(raw, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
