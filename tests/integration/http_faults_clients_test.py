#!/usr/bin/python3
"""Fault injection (issue #18, broker/http/README.md "Fault rules") seen by the Java client 4.4.0 and kafkajs 2.2.4.

The Python twin is http_test.py (confluent-kafka). Here one broker runs with sluice.test.faults.enable=true and an
HTTP listener on a free port; each client's driver (compat/clients/java/FaultClient.java,
compat/clients/node/kafkajs_faults.js) adds the fault rules itself (POST /v1/faults with its own HTTP client), and
this script checks what the client, the broker's log (`fault <id>: <action> Produce v<n> ...`), GET /v1/faults and
/metrics show. CLIENT = java, kafkajs; each topic has one partition:

  CLIENT.not_leader        one record to warm the producer up; then a rule NOT_LEADER_OR_FOLLOWER on Produce, count
                           3, for the topic; the next record is delivered: the log shows the rule applied exactly 3
                           times, the rule is used up (gone from GET /v1/faults), the broker counted more Metadata
                           requests (the client refreshed; kafkajs also counts its own), and reading the topic from
                           offset 0 gives [warm, record]
  CLIENT.delay             three undelayed single-record sends; then a rule delay 400 ms on Produce (count 1): the
                           next send takes >= 400 ms by the client's own clock while the undelayed ones took < 200 ms,
                           the one after it is fast again, and the log shows the delay applied once
  CLIENT.drop_idempotent   an idempotent producer (Java enable.idempotence=true, request.timeout.ms=1500; kafkajs
                           idempotent, maxInFlightRequests 1, requestTimeout 1500) sends 3 batches of 5 records; the
                           second batch's Produce response is dropped (rule drop, count 1): its records are in the
                           log (end offset 10) while the client still waits, the producer times out and retries (Java record-retry-total, kafkajs request-timeout events; the broker counted
                           one more Produce request), the retry is answered with the offsets of the first attempt,
                           and the topic holds each of the 15 records exactly once, in order, at offsets 0..14
                           (read back from offset 0; kafka_log_log_logendoffset 15)
  broker.stop              exit status 0 on SIGTERM

Prints one `PASS|FAIL|SKIP <check>: <detail>` line per check. The clients come from the compat cache
(compat/clients/installers.py: the pinned kafka-clients jars of java/pom.xml, FaultClient.java compiled here into
<cache>/java-clients-4.4.0/fault-classes; kafkajs from node/package-lock.json). About 10 s once they are cached.

Usage: http_faults_clients_test.py --broker build-tests/broker/sluice --cache build-tests/compat-cache
       [--clients java,kafkajs]
Exit 0 when every check that ran passed, 1 on any FAIL, 77 when no client could run (or no broker binary).
"""
import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
import sluice_harness as h  # noqa: E402
import installers  # noqa: E402

CLIENTS = ["java", "kafkajs"]
DELAY_MS = 400
REQUEST_TIMEOUT_MS = 1500  # the idempotent producers' request timeout (drop_idempotent)


def http(port, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_sum(port, name, **labels):
    """The sum of the samples of `name` on /metrics whose labels include `labels` (0 when none)."""
    status, text = http(port, "GET", "/metrics")
    if status != 200:
        raise RuntimeError("GET /metrics: %d" % status)
    total = 0.0
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        have = dict(LABEL.findall(m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def requests_total(port, api):
    return metric_sum(port, "kafka_network_requestmetrics_requests_total", request=api)


def fault_lines(broker, rule_id, action):
    return len(re.findall(r"fault %d: %s Produce v\d+ " % (rule_id, action), broker.log_text()))


def rule_ids(port):
    status, body = http(port, "GET", "/v1/faults")
    if status != 200:
        raise RuntimeError("GET /v1/faults: %d %s" % (status, body))
    return [r.get("id") for r in json.loads(body).get("faults", [])]


# ---------------------------------------------------------------------------------------------------------------
# The drivers: one process per client, one JSON line per command and per answer


def java_command(cache):
    """Compiles FaultClient.java against the pinned kafka-clients jars (installers.java) into
    <cache>/java-clients-4.4.0/fault-classes (as acl_quota_test.py does for AclAdmin.java); returns the command."""
    java_bin, classpath = installers.java_program(
        cache, os.path.join(REPO, "compat", "clients", "java", "FaultClient.java"), "fault-classes")
    return [java_bin, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath,
            "FaultClient"], None


def kafkajs_command(cache):
    nodebin, home = installers.node(cache)  # copies kafkajs_faults.js next to node_modules
    return [nodebin, os.path.join(home, "kafkajs_faults.js")], home


class Driver:
    def __init__(self, command, cwd, bootstrap, http_base):
        self.proc = subprocess.Popen(command + [bootstrap, http_base], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self.next_id = 0
        try:
            hello = self.lines.get(timeout=60)
        except queue.Empty:
            self.kill()
            raise RuntimeError("the driver said nothing within 60 s")
        if hello is None:
            raise RuntimeError("the driver exited: %s" % "".join(self.stderr[-5:])[-600:])
        self.info = json.loads(hello).get("info", "?")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8", "replace"))
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def start(self, op, **fields):
        """Sends one command; answer() waits for its answer."""
        self.next_id += 1
        self.proc.stdin.write((json.dumps(dict(fields, op=op, id=self.next_id)) + "\n").encode())
        self.proc.stdin.flush()
        return op, self.next_id

    def answer(self, pending, timeout=60):
        op, want = pending
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("no answer to %s within %d s" % (op, timeout))
            if line is None:
                raise RuntimeError("the driver exited during %s: %s" % (op, "".join(self.stderr[-5:])[-600:]))
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("id") == want:
                return r

    def call(self, op, timeout=60, **fields):
        return self.answer(self.start(op, **fields), timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("close", timeout=20)
            except (RuntimeError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


# ---------------------------------------------------------------------------------------------------------------
# The checks


def producer_configs(client):
    """(plain, idempotent) producer settings of each client."""
    if client == "java":
        plain = {"props": {"client.id": "faults-java-plain", "acks": "all", "linger.ms": "0",
                           "enable.idempotence": "false", "retries": "10", "retry.backoff.ms": "100",
                           "request.timeout.ms": "10000", "delivery.timeout.ms": "30000"}}
        idem = {"props": {"client.id": "faults-java-idem", "acks": "all", "linger.ms": "20",
                          "enable.idempotence": "true", "request.timeout.ms": str(REQUEST_TIMEOUT_MS),
                          "delivery.timeout.ms": "30000", "retry.backoff.ms": "100"}}
        return plain, idem
    retry = {"retries": 8, "initialRetryTime": 100, "maxRetryTime": 1000}
    plain = {"client": {"clientId": "faults-kafkajs-plain", "requestTimeout": 10000, "retry": retry},
             "props": {"allowAutoTopicCreation": False}}
    idem = {"client": {"clientId": "faults-kafkajs-idem", "requestTimeout": REQUEST_TIMEOUT_MS, "retry": retry},
            "props": {"allowAutoTopicCreation": False, "idempotent": True, "maxInFlightRequests": 1}}
    return plain, idem


class Failed(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Failed(what)


def send(drv, name, topic, values, timeout=40, meanwhile=None):
    """One send through the client; meanwhile(), if given, runs while the client waits for its answer."""
    pending = drv.start("send", name=name, topic=topic, partition=0, values=values, timeout_ms=timeout * 1000)
    if meanwhile:
        meanwhile()
    r = drv.answer(pending, timeout + 10)
    need(r.get("ok"), "send %s to %s: %s" % (values, topic, r.get("error") or r.get("exception")))
    return r


def leo(port, topic):
    return int(metric_sum(port, "kafka_log_log_logendoffset", topic=topic, partition="0"))


def add_rule(drv, rule):
    r = drv.call("fault", rule=rule)
    need(r.get("status") == 201 and isinstance(r.get("body"), dict) and "id" in r["body"],
         "POST /v1/faults %s by the client: %s %s" % (json.dumps(rule), r.get("status"),
                                                       r.get("body") or r.get("exception")))
    return r["body"]["id"]


def check_not_leader(drv, client, broker, port, topic, state):
    warm = send(drv, "plain", topic, ["nl-warm"])
    md0 = requests_total(port, "Metadata")
    rule = {"api": "Produce", "action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3, "topic": topic}
    rid = add_rule(drv, rule)
    need(rid in rule_ids(port), "rule %d not in GET /v1/faults after the client added it" % rid)
    r = send(drv, "plain", topic, ["nl-after-not-leader"])
    md1 = requests_total(port, "Metadata")
    applied = fault_lines(broker, rid, "error")
    left = rid in rule_ids(port)
    state["expect"][topic] = ["nl-warm", "nl-after-not-leader"]
    own = ""
    if client == "kafkajs":
        own0, own1 = warm["requests"].get("Metadata", 0), r["requests"].get("Metadata", 0)
        own = ", the producer's own Metadata requests %d -> %d" % (own0, own1)
        need(own1 > own0, "kafkajs sent no Metadata request after NOT_LEADER_OR_FOLLOWER (%d -> %d)" % (own0, own1))
    detail = ("rule %d (NOT_LEADER_OR_FOLLOWER x3) logged %d times, %s; Metadata requests at the broker %d -> %d%s; "
              "delivered at offset %s after %.0f ms" % (rid, applied, "still listed" if left else "used up",
                                                         md0, md1, own, r["offsets"], r["send_ms"]))
    need(applied == 3, "the broker logged rule %d applied %d times, want 3: %s" % (rid, applied, detail))
    need(not left, "rule %d still in GET /v1/faults after 3 hits: %s" % (rid, detail))
    need(r["offsets"] == [1], "the record went to offset %s, want [1]: %s" % (r["offsets"], detail))
    need(md1 > md0, "no Metadata request reached the broker after NOT_LEADER_OR_FOLLOWER: %s" % detail)
    return detail


def check_delay(drv, client, broker, port, topic, state):
    send(drv, "plain", topic, ["delay-warm"])
    base = [send(drv, "plain", topic, ["undelayed-%d" % i])["send_ms"] for i in range(3)]
    rid = add_rule(drv, {"api": "Produce", "action": "delay", "delay_ms": DELAY_MS, "count": 1, "topic": topic})
    delayed = send(drv, "plain", topic, ["delayed"])["send_ms"]
    after = send(drv, "plain", topic, ["after-delay"])["send_ms"]
    applied = fault_lines(broker, rid, "delay")
    state["expect"][topic] = ["delay-warm", "undelayed-0", "undelayed-1", "undelayed-2", "delayed", "after-delay"]
    detail = ("send latency %s ms undelayed, %.1f ms with rule %d (delay %d ms), %.1f ms after it; the broker logged "
              "it %d time(s)" % ("/".join("%.1f" % b for b in base), delayed, rid, DELAY_MS, after, applied))
    need(delayed >= DELAY_MS, "the delayed send took %.1f ms < %d ms: %s" % (delayed, DELAY_MS, detail))
    need(max(base) < 200 and after < 200, "an undelayed send took >= 200 ms: %s" % detail)
    need(applied == 1, "the broker logged rule %d %d times, want 1" % (rid, applied))
    return detail


def check_drop(drv, client, broker, port, topic, state):
    batches = [["drop-%d" % (5 * b + i) for i in range(5)] for b in range(3)]
    first = send(drv, "idem", topic, batches[0])
    need(first["offsets"] == list(range(5)), "first batch at offsets %s, want 0..4" % first["offsets"])
    produce0 = requests_total(port, "Produce")
    rid = add_rule(drv, {"api": "Produce", "action": "drop", "count": 1, "topic": topic})
    seen = {}

    def while_waiting():
        # the dropped request is handled: its records are in the log while the client still waits for an answer
        # (until its request timeout), i.e. the retry must be deduplicated
        deadline = time.monotonic() + REQUEST_TIMEOUT_MS / 1000.0
        while time.monotonic() < deadline and not fault_lines(broker, rid, "drop"):
            time.sleep(0.02)
        if fault_lines(broker, rid, "drop"):
            time.sleep(0.1)
            seen["leo"] = leo(port, topic)
    second = send(drv, "idem", topic, batches[1], meanwhile=while_waiting)
    produce1 = requests_total(port, "Produce")
    third = send(drv, "idem", topic, batches[2])
    applied = fault_lines(broker, rid, "drop")
    state["expect"][topic] = batches[0] + batches[1] + batches[2]
    if client == "java":
        retries = second["metrics"]["record-retry-total"] - first["metrics"]["record-retry-total"]
        retry_text = "record-retry-total +%d" % retries
    else:
        retries = second["timeouts"].get("Produce", 0) - first["timeouts"].get("Produce", 0)
        retry_text = "Produce request timeouts +%d" % retries
    leo_after = leo(port, topic)
    detail = ("rule %d (drop) logged %d time(s); log end offset %s while the client waited for the dropped answer; "
              "the dropped batch took %.0f ms (request timeout %d ms), %s, Produce requests at the broker +%d for "
              "it; offsets %s, %s, %s; log end offset %d at the end" % (
                  rid, applied, seen.get("leo"), second["send_ms"], REQUEST_TIMEOUT_MS, retry_text,
                  produce1 - produce0, first["offsets"], second["offsets"], third["offsets"], leo_after))
    need(applied == 1, "the broker logged rule %d %d times, want 1: %s" % (rid, applied, detail))
    need(seen.get("leo") == 10, "the dropped request's records were not in the log (end offset %s, want 10) "
         "while the client waited: %s" % (seen.get("leo"), detail))
    need(retries >= 1, "the client did not retry: %s" % detail)
    need(produce1 - produce0 >= 2, "no retried Produce request reached the broker: %s" % detail)
    need(second["send_ms"] >= REQUEST_TIMEOUT_MS * 0.9, "the dropped batch was acknowledged before the request "
         "timeout: %s" % detail)
    need(second["offsets"] == list(range(5, 10)) and third["offsets"] == list(range(10, 15)),
         "offsets of batches 2 and 3 %s %s, want 5..9 and 10..14: %s" % (second["offsets"], third["offsets"], detail))
    return detail


CHECKS = [("not_leader", check_not_leader), ("delay", check_delay), ("drop_idempotent", check_drop)]


def run_client(client, command, cwd, broker, port, results):
    """Runs the three checks of one client; fills results[check] = (status, detail)."""
    topics = {name: "faults-%s-%s" % (client, name.replace("_", "-")) for name, _ in CHECKS}
    t0 = time.monotonic()
    try:
        drv = Driver(command, cwd, broker.bootstrap, "http://127.0.0.1:%d" % port)
    except (RuntimeError, OSError) as e:
        for name, _ in CHECKS:
            results["%s.%s" % (client, name)] = ("FAIL", "driver did not start: %s" % e)
        return
    print("%s: %s, started in %.1f s" % (client, drv.info, time.monotonic() - t0))
    state = {"expect": {}}
    try:
        r = drv.call("create", topics=list(topics.values()), partitions=1)
        if not r.get("ok"):
            raise RuntimeError("CreateTopics through the client: %s" % r.get("exception"))
        plain, idem = producer_configs(client)
        for name, conf in (("plain", plain), ("idem", idem)):
            r = drv.call("producer", name=name, **conf)
            if not r.get("ok"):
                raise RuntimeError("producer %s: %s" % (name, r.get("exception")))
        done = {}
        for name, fn in CHECKS:
            check = "%s.%s" % (client, name)
            t1 = time.monotonic()
            try:
                done[check] = ("PASS", fn(drv, client, broker, port, topics[name], state))
            except Failed as e:
                done[check] = ("FAIL", str(e))
            except RuntimeError as e:
                done[check] = ("FAIL", "driver: %s" % e)
            print("%s: %s took %.1f s" % (client, check, time.monotonic() - t1))
        # every topic read back from offset 0 by the same client: each record exactly once, in order
        t1 = time.monotonic()
        r = drv.call("read", timeout=50, topics=list(topics.values()), timeout_ms=40000)
        print("%s: read back %s in %.1f s" % (client, {t: len(v) for t, v in r.get("records", {}).items()},
                                              time.monotonic() - t1))
        drop_leo = leo(port, topics["drop_idempotent"])
        for name, _ in CHECKS:
            check, topic = "%s.%s" % (client, name), topics[name]
            if done[check][0] != "PASS":
                continue
            want = state["expect"].get(topic, [])
            recs = r.get("records", {}).get(topic)
            if not r.get("ok") or recs is None:
                done[check] = ("FAIL", "reading %s back: %s" % (topic, r.get("error") or r.get("exception")))
                continue
            values, offsets = [x[2] for x in recs], [x[1] for x in recs]
            if values != want or offsets != list(range(len(want))):
                done[check] = ("FAIL", "%s read back from offset 0: %s at offsets %s, want %s at 0..%d; %s" % (
                    topic, values, offsets, want, len(want) - 1, done[check][1]))
                continue
            extra = ""
            if name == "drop_idempotent":
                if drop_leo != len(want):
                    done[check] = ("FAIL", "kafka_log_log_logendoffset of %s is %s, want %d; %s" % (
                        topic, drop_leo, len(want), done[check][1]))
                    continue
                extra = ", kafka_log_log_logendoffset %d" % drop_leo
            done[check] = ("PASS", "%s; read back from offset 0: the %d records once each, in order%s" % (
                done[check][1], len(want), extra))
        results.update(done)
    except (RuntimeError, OSError, ValueError) as e:
        for name, _ in CHECKS:
            results.setdefault("%s.%s" % (client, name), ("FAIL", "driver: %s" % e))
    finally:
        drv.close()
        if drv.stderr:
            print("%s driver stderr (last lines):\n  %s" % (client, "  ".join(drv.stderr[-8:])))


def wait_ready(port, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if http(port, "GET", "/readyz")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    ap.add_argument("--clients", default=",".join(CLIENTS))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    cache = os.path.abspath(args.cache)
    wanted = [c for c in args.clients.split(",") if c]
    t_start = time.monotonic()
    results, commands = {}, {}
    for client in wanted:
        try:
            commands[client] = {"java": java_command, "kafkajs": kafkajs_command}[client](cache)
        except installers.Unavailable as e:
            for name, _ in CHECKS:
                results["%s.%s" % (client, name)] = ("SKIP", "unavailable: %s" % e)
        except installers.SetupFailed as e:
            for name, _ in CHECKS:
                results["%s.%s" % (client, name)] = ("FAIL", "setup failed: %s" % e)
    print("clients ready in %.1f s: %s" % (time.monotonic() - t_start, ", ".join(commands) or "none"))
    broker = None
    if commands:
        port = h.pick_free_port()
        # group.initial.rebalance.delay.ms=0: kafkajs reads back in a consumer group; no 3-s wait for its join
        broker = h.Broker(args.broker, {"sluice.test.faults.enable": "true",
                                        "http.listeners": "http://127.0.0.1:%d" % port,
                                        "group.initial.rebalance.delay.ms": "0"})
        try:
            broker.start()
            if not wait_ready(port):
                raise RuntimeError("GET /readyz did not answer 200 within 15 s")
            for client, (command, cwd) in commands.items():
                run_client(client, command, cwd, broker, port, results)
            rc = broker.stop()
            results["broker.stop"] = ("PASS" if rc == 0 else "FAIL", "exit status %s on SIGTERM" % rc)
        except (RuntimeError, OSError) as e:
            for client in commands:
                for name, _ in CHECKS:
                    results.setdefault("%s.%s" % (client, name), ("FAIL", "broker: %s" % e))
            results["broker.stop"] = ("FAIL", "broker: %s" % e)
    failed = any(s == "FAIL" for s, _ in results.values())
    if broker is not None:
        if failed:
            print("---- broker log (%s, data kept in %s) ----" % (broker.log_path, broker.dir))
            print(broker.log_text()[-15000:])
            print("---- end of broker log ----")
        broker.close(failed=failed)
    order = ["%s.%s" % (c, n) for c in wanted for n, _ in CHECKS] + ["broker.stop"]
    for check in order:
        if check in results:
            status, detail = results[check]
            print("%s %s: %s" % (status, check, detail))
    print("total %.1f s" % (time.monotonic() - t_start))
    if failed:
        return 1
    if not any(s == "PASS" for c, (s, _) in results.items() if c != "broker.stop"):
        return h.SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
