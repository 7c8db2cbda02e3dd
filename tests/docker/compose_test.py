#!/usr/bin/env python3
"""The Docker files without a Docker engine (issue #19, acceptance 3): docker/Dockerfile, docker/compose.yml and
docker/compose.cluster.yml are parsed, and the processes they describe are started here with the same commands
and environment, so that the files cannot rot where no engine runs (this machine, CI).

From the Dockerfile's last stage: the base image (distroless or slim), a non-root USER, the HEALTHCHECK (a `sluice
health` call on /readyz), the ENTRYPOINT, the VOLUME, and the defaults file it copies (docker/server.properties to
/etc/sluice/server.properties). From each compose file: every service's environment (YAML anchors merged), ports,
depends_on order and healthcheck. A service with the image built from the Dockerfile runs as ENTRYPOINT + its
`command`; the zookeeper service runs as Debian's ZooKeeper (tests/integration/sluice_harness.py) on the port the
file names.

What a container has and a host process has not is translated, and only that:
  - names: each service name and `localhost` become 127.0.0.1 (compose's DNS and the published ports);
  - ports: every port the file names (ports:, and host:port in the environment) becomes a free loopback port, the
    same one everywhere it appears (in a container the numbers are private; here they share one host);
  - paths: /usr/local/bin/sluice is the built binary, /etc/sluice/server.properties a copy of
    docker/server.properties, and each service's volume at /var/lib/sluice a temporary folder.
Bitnami's KAFKA_CFG_* variables reach the broker through `--config-env` exactly as in the image.

Checks per file: each broker's healthcheck command exits 0 within 30 s; kcat (librdkafka 2.0.2) produces 20 keyed
records through the host listener(s) and reads them back, the same 20, through the listener other containers use
(in the cluster: from a second broker's INTERNAL address, with 3 replicas in the ISR of every partition); GET / of
each broker's HTTP listener is the console; SIGTERM ends every broker with status 0.

Usage: /usr/bin/python3 compose_test.py --broker build-tests/broker/sluice
Exit 0 pass, 1 fail, 77 skip (no binary, kcat, python3-yaml, or ZooKeeper for the cluster file).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOCKER = os.path.join(REPO, "docker")
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import sluice_harness as h  # noqa: E402


def dockerfile_final_stage(path):
    """The instructions of the last FROM stage: [(INSTRUCTION, argument text)] with continuations joined."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages, cur = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            cur = [("FROM", rest.strip())]
            stages.append(cur)
        elif cur is not None:
            cur.append((word, rest.strip()))
    return stages[-1]


def exec_form(arg):
    """A JSON array argument (ENTRYPOINT ["a","b"]) as a list; a shell form is refused (no shell in the image)."""
    v = json.loads(arg)
    assert isinstance(v, list) and all(isinstance(x, str) for x in v), arg
    return v


class Translation:
    """The container-to-host translation of the docstring."""

    def __init__(self, services, binary):
        self.hosts = set(services) | {"localhost"}
        self.ports = {}
        self.paths = {"/usr/local/bin/sluice": binary}

    def port(self, n, fixed=None):
        n = str(n)
        if n not in self.ports:
            self.ports[n] = str(fixed) if fixed else str(h.pick_free_port())
        return self.ports[n]

    def text(self, s, volume=None, defaults=None):
        s = str(s)
        for a, b in self.paths.items():
            s = s.replace(a, b)
        if defaults:
            s = s.replace("/etc/sluice/server.properties", defaults)
        if volume:
            s = s.replace("/var/lib/sluice", volume)
        # host:port, with or without a scheme (PLAINTEXT://sluice-1:29092, http://0.0.0.0:9644, zookeeper:2181)
        def hostport(m):
            host, port = m.group(1), m.group(2)
            host = "127.0.0.1" if host in self.hosts else host
            return "%s:%s" % (host, self.port(port))
        return re.sub(r"([A-Za-z0-9_.\-]+):(\d{2,5})(?![\d])", hostport, s)


def start_order(services):
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        deps = services[name].get("depends_on") or []
        for d in (deps if isinstance(deps, list) else list(deps)):
            visit(d)
        order.append(name)
    for n in services:
        visit(n)
    return order


def kcat(*args, input_=None, timeout=40):
    return subprocess.run(["kcat", *args], input=input_, capture_output=True, text=True, timeout=timeout)


def run_compose(name, binary, stage, check, zk_available):
    """Starts what one compose file describes; returns nothing, records into check."""
    with open(os.path.join(DOCKER, name)) as f:
        doc = __import__("yaml").safe_load(f)
    services = doc["services"]
    built = {n for n, s in services.items() if s.get("build") or s.get("image") == "sluice:latest"}
    others = [n for n in services if n not in built]
    check.eq(others, ["zookeeper"] if "zookeeper" in services else [], "%s: the services besides Sluice" % name)
    if "zookeeper" in services and not zk_available:
        print("SKIP %s: no ZooKeeper (Debian's zookeeper package)" % name)
        return
    work = tempfile.mkdtemp(prefix="sluice-compose-")
    tr = Translation(services, binary)
    entrypoint = exec_form(dict(stage)["ENTRYPOINT"])
    procs, zk, failed = {}, None, False
    try:
        if "zookeeper" in services:
            zk = h.ZooKeeper()
            zk.start()
            # The port the brokers are told (zookeeper.connect); ZooKeeper is not published on the host.
            connect = [s_.get("environment", {}).get("KAFKA_CFG_ZOOKEEPER_CONNECT") for n_, s_ in services.items() if n_ in built]
            check.eq(sorted(set(connect)), ["zookeeper:2181"], "%s: every broker's zookeeper.connect" % name)
            tr.port(connect[0].rsplit(":", 1)[1], fixed=zk.port)
        with open(os.path.join(DOCKER, "server.properties")) as f:
            props = f.read()
        for n in start_order(services):
            if n not in built:
                continue
            svc = services[n]
            volume = os.path.join(work, n + "-data")
            os.makedirs(volume)
            defaults = os.path.join(work, n + ".server.properties")  # the image's file, with this service's volume
            with open(defaults, "w") as f:
                f.write(tr.text(props, volume))
            env = {k: tr.text(v, volume) for k, v in (svc.get("environment") or {}).items()}
            cmd = [tr.text(a, volume, defaults) for a in entrypoint + list(svc.get("command") or [])]
            log = open(os.path.join(work, n + ".log"), "wb")
            procs[n] = (subprocess.Popen(cmd, env=dict(env, PATH=os.environ.get("PATH", "/usr/bin:/bin")), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log), log, env)
        # The health check: the service's own, else the Dockerfile's HEALTHCHECK.
        image_check = dict(stage)["HEALTHCHECK"]
        image_check = exec_form(image_check[image_check.index("CMD") + 3:].strip())
        for n, (p, _, env) in procs.items():
            test = (services[n].get("healthcheck") or {}).get("test")
            probe = [tr.text(a) for a in (test[1:] if test else image_check)]
            deadline, rc, out = time.monotonic() + 30, None, ""
            while time.monotonic() < deadline and p.poll() is None:
                r = subprocess.run(probe, capture_output=True, text=True, timeout=10)
                rc, out = r.returncode, (r.stdout + r.stderr).strip()
                if rc == 0:
                    break
                time.sleep(0.3)
            check.eq(rc, 0, "%s %s: healthcheck %s (%s)" % (name, n, " ".join(probe[1:]), out))
        # The host listener(s): the advertised address each broker gives for localhost.
        def advertised(n, host):
            for l in procs[n][2]["KAFKA_CFG_ADVERTISED_LISTENERS"].split(","):
                lname, addr = l.split("://")
                if (host == "localhost") == (lname in ("PLAINTEXT", "EXTERNAL")):
                    return addr
            return None
        host_side = ",".join(advertised(n, "localhost") for n in procs)
        inside = advertised(list(procs)[-1], "container")
        topic = "compose-roundtrip"
        records = "".join("k%d:record %d from the host\n" % (i, i) for i in range(20))
        r = kcat("-P", "-b", host_side, "-t", topic, "-K", ":", "-X", "topic.request.required.acks=all", input_=records)
        check.eq((r.returncode, r.stderr.strip()[-300:]), (0, ""), "%s: kcat -P through %s" % (name, host_side))
        got = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = kcat("-C", "-b", inside, "-t", topic, "-e", "-o", "beginning", "-f", "%k:%s\n", "-q")
            got = sorted(r.stdout.splitlines())
            if len(got) >= 20:
                break
            time.sleep(0.5)
        check.eq(got, sorted(records.splitlines()), "%s: the 20 records read back through %s (the containers' side)" % (name, inside))
        want_rf = len(procs)

        def metadata():
            r = kcat("-L", "-b", inside, "-t", topic, "-J")
            if r.returncode != 0:
                return None
            md = json.loads(r.stdout)
            parts = md["topics"][0]["partitions"]
            shape = sorted({(len(p["replicas"]), len(p["isrs"])) for p in parts})
            return md, parts, shape
        deadline = time.monotonic() + 15
        found = metadata()
        while (found is None or found[2] != [(want_rf, want_rf)]) and time.monotonic() < deadline:
            time.sleep(0.5)
            found = metadata()
        if check.true(found is not None, "%s: kcat -L through %s" % (name, inside)):
            md, parts, shape = found
            check.eq(shape, [(want_rf, want_rf)], "%s: replicas and ISR of every partition (%d partitions)" % (name, len(parts)))
            print("# %s: %d broker(s) healthy; %d records in through %s, %d read back through %s; %d partitions, "
                  "replicas/ISR %s" % (name, len(procs), len(records.splitlines()), host_side, len(got or []), inside,
                                       len(parts), shape), flush=True)
            check.eq(sorted(b["name"] for b in md["brokers"]), sorted(advertised(n, "container") for n in procs),
                     "%s: brokers advertised to containers" % name)
        for n, (_, _, env) in procs.items():
            url = env["KAFKA_CFG_HTTP_LISTENERS"] if "KAFKA_CFG_HTTP_LISTENERS" in env else tr.text("http://0.0.0.0:9644")
            url = url.replace("0.0.0.0", "127.0.0.1") + "/"
            with urllib.request.urlopen(url, timeout=10) as resp:
                check.true(resp.status == 200 and b"Sluice console" in resp.read(), "%s %s: the console at %s" % (name, n, url))
        for n, (p, log, _) in reversed(list(procs.items())):
            p.send_signal(signal.SIGTERM)
            try:
                check.eq(p.wait(timeout=30), 0, "%s %s: exit status on SIGTERM" % (name, n))
            except subprocess.TimeoutExpired:
                check.true(False, "%s %s: no exit within 30 s of SIGTERM" % (name, n))
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("%s: exception %r" % (name, e))
    finally:
        for n, (p, log, _) in procs.items():
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
        failed = not check.ok()
        if failed:
            for n in procs:
                print("---- %s %s log ----" % (name, n))
                with open(os.path.join(work, n + ".log"), "rb") as f:
                    print(f.read().decode("utf-8", "replace")[-5000:])
        if zk:
            zk.close(failed)
        if not failed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("# kept %s" % work)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP compose_test: no sluice binary")
        return h.SKIP
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("SKIP compose_test: no python3-yaml")
        return h.SKIP
    if shutil.which("kcat") is None:
        print("SKIP compose_test: no kcat")
        return h.SKIP
    check = h.Checker()
    stage = dockerfile_final_stage(os.path.join(DOCKER, "Dockerfile"))
    d = dict(stage)
    check.true(re.match(r"(gcr\.io/distroless/|debian:[\w.]+-slim)", d["FROM"]), "Dockerfile: a distroless or slim base (%s)" % d["FROM"])
    check.true(d.get("USER", "0").split(":")[0] not in ("0", "root", ""), "Dockerfile: a non-root USER (%s)" % d.get("USER"))
    check.true("/readyz" in d.get("HEALTHCHECK", "") and "health" in d.get("HEALTHCHECK", ""),
               "Dockerfile: HEALTHCHECK with sluice health on /readyz")
    check.eq(exec_form(d["ENTRYPOINT"])[:1], ["/usr/local/bin/sluice"], "Dockerfile: the entrypoint is the broker")
    check.true("--config-env" in exec_form(d["ENTRYPOINT"]), "Dockerfile: the entrypoint reads KAFKA_CFG_* (--config-env)")
    check.true("/var/lib/sluice" in d.get("VOLUME", ""), "Dockerfile: VOLUME /var/lib/sluice")
    with open(os.path.join(DOCKER, "Dockerfile")) as f:
        check.true("cp docker/server.properties /rootfs/etc/sluice/server.properties" in f.read(),
                   "Dockerfile: docker/server.properties is the image's /etc/sluice/server.properties")
    with open(os.path.join(REPO, ".dockerignore")) as f:
        ignored = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    check.true({".git", "build", "build-*", "data"} <= ignored,
               ".dockerignore keeps host build trees, data and .git out of the build context: %s" % sorted(ignored))
    for name in ("compose.yml", "compose.cluster.yml"):
        with open(os.path.join(DOCKER, name)) as f:
            published = [p for s_ in __import__("yaml").safe_load(f)["services"].values() for p in s_.get("ports") or []]
        check.true(published and all(str(p).startswith("127.0.0.1:") for p in published),
                   "%s: ports published on the host's loopback only: %s" % (name, published))
        print("# %s" % name, flush=True)
        run_compose(name, os.path.abspath(args.broker), stage, check, h.ZooKeeper.available())
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


if __name__ == "__main__":
    sys.exit(main())
