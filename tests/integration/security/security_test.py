#!/usr/bin/python3
"""TLS, mTLS and SASL (PLAIN, SCRAM-SHA-256/512, unsecured OAUTHBEARER) of a real broker, driven by real clients.

One broker with six listeners; certificates made at run time by make_certs.sh (a throwaway CA) in its temp dir:

  PLAINTEXT       setup only: CreateTopics, SCRAM users (AlterUserScramCredentials, one request per mechanism)
  SSL             server certificate from a PEM keystore (server-chain.pem), no client authentication
  SASL_PLAINTEXT  PLAIN user alice (listener.name.sasl_plaintext.plain.sasl.jaas.config)
  SASL_SSL        PLAIN alice, SCRAM-SHA-256/512 bob, OAUTHBEARER (unsecured JWS, sub carol)
  MTLS            SSL with listener.name.mtls.ssl.client.auth=required and a PKCS12 keystore (server.p12)
  REAUTH          SASL_SSL PLAIN with listener.name.reauth.connections.max.reauth.ms=2000 (KIP-368)

Clients: kcat 1.7.1 (Debian, librdkafka 2.0.2), confluent-kafka-python 2.16 (the compat cache's venv, librdkafka
2.16), the Java client 4.4.0 (compat/clients/java/SecurityClient.java) and kafkajs 2.2.4
(compat/clients/node/kafkajs_security.js), installed into the compat cache by compat/clients/installers.py at their
pinned versions (Debian's confluent-kafka 1.7 for reauth.rdkafka202). Each check prints one
`PASS|FAIL|XFAIL|SKIP <check>: <detail>` line, then a table. CLIENT = kcat, confluent, java, kafkajs:

  roundtrip.CLIENT.MODE   N records (acks=all) to partition 0, read back from offset 0: same values, same order.
                          MODE: ssl, sasl_plaintext_plain, sasl_ssl_plain, sasl_ssl_scram256, sasl_ssl_scram512,
                          sasl_ssl_oauthbearer (not kafkajs: no unsecured token), mtls_client. kcat's SCRAM rows are
                          XFAIL: librdkafka < 2.6.1 sends the client nonce twice (librdkafka#4895) and Kafka 4.4
                          refuses it, so they must be refused with a SASL authentication error
  authfail.CLIENT.MODE    wrong PLAIN password, unknown PLAIN user, wrong SCRAM-SHA-256/512 password, unknown SCRAM
                          user: no metadata, and Kafka 4.4's exact answer: PLAIN "Authentication failed: Invalid
                          username or password", SCRAM "Authentication failed during authentication due to invalid
                          credentials with SASL mechanism SCRAM-SHA-nnn" (librdkafka: error _AUTHENTICATION "SASL
                          authentication error: <text>"; Java: SaslAuthenticationException <text>; kafkajs:
                          KafkaJSSASLAuthenticationError "... authentication failed: <text>")
  refused.CLIENT.MODE     mtls_nocert, mtls_rogue (a certificate of another CA) on MTLS; ssl_untrusted (the client
                          trusts another CA): the TLS handshake fails (Java: SslAuthenticationException), no metadata
  refused.kcat.sasl_unauthenticated  a PLAINTEXT client on SASL_PLAINTEXT gets no metadata
  advertised.kcat.LISTENER  Metadata through each listener names the broker at that listener's port
  reauth.java, reauth.confluent  one record every 0.5 s for 6 s through one producer on REAUTH: every record
                          delivered and read back; on Sluice the log shows no connection of theirs closed for an
                          expired session (they re-authenticated)
  reauth.rdkafka202       the same with librdkafka 2.0.2 (no KIP-368; Debian's confluent-kafka 1.7, as kcat exits at a
                          disconnect): every record delivered; on Sluice the log shows its expired connection closed
  scram_admin.confluent.describe        DescribeUserScramCredentials: bob has SCRAM-SHA-256 and -512, 4096 iterations
  scram_admin.confluent.same_user_twice one AlterUserScramCredentials naming erin twice: DUPLICATE_RESOURCE, nothing
                          stored (Kafka 4.4)
  broker.stop             exit status 0 on SIGTERM

    /usr/bin/python3 tests/integration/security/security_test.py --broker build/broker/sluice \\
        [--cache build-tests/compat-cache] [--records 50] [--clients kcat,confluent,java,kafkajs]
    ... --reference kafka      the same checks against Apache Kafka 4.4.0 (compat/kafka/kafka_reference.py)
    ... --compare              Sluice, then Kafka 4.4.0: both columns and whether they agree

Exit 0 when every check that ran passed (XFAIL included), 1 on any FAIL, 77 (skip) when nothing could run (no broker
binary, no client). A client that cannot be installed (toolchain missing, registry unreachable) SKIPs its checks.
On a failure the broker's temp dir (broker.log, certs, the drivers' spec files) is kept and its log tail printed.
"""
import concurrent.futures
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time

import security_common as sc  # first: it puts sluice_harness, installers and kafka_reference on the path
from security_common import HERE, REPO

import installers  # noqa: E402
import sluice_harness as h  # noqa: E402

KCAT = "/usr/bin/kcat"
CONFLUENT_DRIVER = os.path.join(REPO, "compat", "clients", "python", "confluent_security.py")
CLIENTS = ["kcat", "confluent", "java", "kafkajs"]
LISTENERS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS", "REAUTH", "OAUTHSCOPE"]
PROTOCOL = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL",
            "MTLS": "SSL", "REAUTH": "SASL_SSL", "OAUTHSCOPE": "SASL_PLAINTEXT"}
OAUTH_SCOPE = "produce"  # OAUTHSCOPE's unsecuredValidatorRequiredScope
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
PLAIN_USERS = {"alice": "alice-secret"}
# REAUTH's PLAIN users, one per client, so the broker log tells whose session expired
REAUTH_USERS = {c: ("reauth-" + c, "reauth-%s-secret" % c) for c in ("rdkafka202", "confluent", "java")}
SCRAM_USER, SCRAM_PASSWORD = "bob", "bob-secret"
TWICE_USER = "erin"  # named twice in one AlterUserScramCredentials request
OAUTH_SUB = "carol"
REAUTH_MS = 2000

# mode -> how a client connects: listener, SASL mechanism and credentials, TLS material
MODES = {
    "ssl": dict(listener="SSL"),
    "sasl_plaintext_plain": dict(listener="SASL_PLAINTEXT", mech="PLAIN", user="alice", password="alice-secret"),
    "sasl_ssl_plain": dict(listener="SASL_SSL", mech="PLAIN", user="alice", password="alice-secret"),
    "sasl_ssl_scram256": dict(listener="SASL_SSL", mech="SCRAM-SHA-256", user=SCRAM_USER, password=SCRAM_PASSWORD),
    "sasl_ssl_scram512": dict(listener="SASL_SSL", mech="SCRAM-SHA-512", user=SCRAM_USER, password=SCRAM_PASSWORD),
    "sasl_ssl_oauthbearer": dict(listener="SASL_SSL", mech="OAUTHBEARER", sub=OAUTH_SUB),
    "mtls_client": dict(listener="MTLS", cert="client"),
    "ssl_tls12": dict(listener="SSL", tls="TLSv1.2"),  # the SSL listener allows TLSv1.2 and TLSv1.3 (default)
    "oauth_scope": dict(listener="OAUTHSCOPE", mech="OAUTHBEARER", sub=OAUTH_SUB, scope=OAUTH_SCOPE),
    # expected to fail
    "plain_wrong_password": dict(listener="SASL_PLAINTEXT", mech="PLAIN", user="alice", password="wrong-secret"),
    "plain_unknown_user": dict(listener="SASL_SSL", mech="PLAIN", user="mallory", password="alice-secret"),
    "scram256_wrong_password": dict(listener="SASL_SSL", mech="SCRAM-SHA-256", user=SCRAM_USER, password="wrong"),
    "scram512_wrong_password": dict(listener="SASL_SSL", mech="SCRAM-SHA-512", user=SCRAM_USER, password="wrong"),
    "scram512_unknown_user": dict(listener="SASL_SSL", mech="SCRAM-SHA-512", user="mallory", password="x"),
    "mtls_nocert": dict(listener="MTLS"),
    "mtls_rogue": dict(listener="MTLS", cert="rogue"),
    "ssl_untrusted": dict(listener="SSL", ca="other-ca"),
    "mtls_tls12": dict(listener="MTLS", cert="client", tls="TLSv1.2"),  # MTLS: ssl.enabled.protocols=TLSv1.3
    "oauth_no_scope": dict(listener="OAUTHSCOPE", mech="OAUTHBEARER", sub=OAUTH_SUB),
    "sasl_unauthenticated": dict(listener="SASL_PLAINTEXT", protocol="PLAINTEXT"),
}
for _c, (_u, _p) in REAUTH_USERS.items():  # re-authentication (KIP-368)
    MODES["reauth_" + _c] = dict(listener="REAUTH", mech="PLAIN", user=_u, password=_p)
ROUNDTRIP = ["ssl", "sasl_plaintext_plain", "sasl_ssl_plain", "sasl_ssl_scram256", "sasl_ssl_scram512",
             "sasl_ssl_oauthbearer", "mtls_client", "ssl_tls12", "oauth_scope"]
AUTHFAIL = ["plain_wrong_password", "plain_unknown_user", "scram256_wrong_password", "scram512_wrong_password",
            "scram512_unknown_user", "oauth_no_scope"]
REFUSED = ["mtls_nocert", "mtls_rogue", "ssl_untrusted", "mtls_tls12"]
UNSUPPORTED = {("kafkajs", m) for m in ("sasl_ssl_oauthbearer", "oauth_scope", "oauth_no_scope")}  # no unsecured token
# librdkafka has no setting for the TLS version
UNSUPPORTED |= {(c, m) for c in ("kcat", "confluent") for m in ("ssl_tls12", "mtls_tls12")}
# librdkafka before 2.6.1 (Debian's 2.0.2: kcat) sends the client nonce twice in its SCRAM client-final-message
# (librdkafka#4895); Kafka 4.x compares the nonce exactly (RFC 5802) and refuses it, so these are expected to fail
# with an authentication error, on Sluice as on Kafka 4.4 (XFAIL; an unexpected success is a FAIL: Kafka refuses).
XFAIL = {("kcat", "sasl_ssl_scram256"), ("kcat", "sasl_ssl_scram512")}
XFAIL_WHY = "librdkafka 2.0.2's SCRAM client-final nonce (librdkafka#4895), refused by Kafka 4.4 too"


def auth_text(mode):
    """What Kafka 4.4 answers a failed SaslAuthenticate with (SaslServerAuthenticator): PlainSaslServer's own
    message; for SCRAM one message whatever failed (unknown user, wrong password, bad nonce), so a client cannot
    tell an unknown user from a wrong password."""
    mech = MODES[mode]["mech"]
    if mech == "OAUTHBEARER":  # the JSON error of OAuthBearerSaslServer, from the unsecured validator
        return '{"status":"insufficient_scope", "scope":"[%s]"}' % OAUTH_SCOPE
    if mech == "PLAIN":
        return "Authentication failed: Invalid username or password"
    return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech


# ---------------------------------------------------------------------------------------------------------------
# The brokers under test


def broker_config(ports, certs):
    """The security part of server.properties, the same for Sluice and Kafka (Kafka's own keys)."""
    c = {
        "listeners": ",".join("%s://127.0.0.1:%d" % (l, ports[l]) for l in LISTENERS),
        "listener.security.protocol.map": ",".join("%s:%s" % (l, PROTOCOL[l]) for l in LISTENERS),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": os.path.join(certs, "server-chain.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": os.path.join(certs, "ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.keystore.type": "PKCS12",
        "listener.name.mtls.ssl.keystore.location": os.path.join(certs, "server.p12"),
        "listener.name.mtls.ssl.keystore.password": "p12pass",
        "listener.name.mtls.ssl.key.password": "p12pass",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.reauth.connections.max.reauth.ms": REAUTH_MS,
        "listener.name.mtls.ssl.enabled.protocols": "TLSv1.3",
        "listener.name.oauthscope.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.oauthscope.oauthbearer.sasl.jaas.config":
            'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="%s";' % OAUTH_SCOPE,
        "group.initial.rebalance.delay.ms": 0,
        "offsets.topic.num.partitions": 1,
        "num.partitions": 1,
    }
    for l in ("sasl_plaintext", "sasl_ssl", "reauth"):
        # Kafka wants a JAAS entry per listener and mechanism; Sluice reads PLAIN's users and OAUTHBEARER's options.
        users = dict(PLAIN_USERS, **(dict(REAUTH_USERS.values()) if l == "reauth" else {}))
        c["listener.name.%s.plain.sasl.jaas.config" % l] = sc.plain_jaas(users)
        for m in ("scram-sha-256", "scram-sha-512"):
            c["listener.name.%s.%s.sasl.jaas.config" % (l, m)] = sc.SCRAM_JAAS
        c["listener.name.%s.oauthbearer.sasl.jaas.config" % l] = \
            'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ' \
            'unsecuredLoginStringClaim_sub="broker";'
    return c


def make_certs(folder):
    p = subprocess.run(["sh", os.path.join(HERE, "make_certs.sh"), folder], capture_output=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("make_certs.sh failed: %s" % p.stderr.decode(errors="replace"))
    # the Java client's PEM keystores: certificate then key in one file
    for name in ("client", "rogue"):
        with open(os.path.join(folder, name + "-chain.pem"), "w") as out:
            for part in (name + ".pem", name + ".key"):
                with open(os.path.join(folder, part)) as f:
                    out.write(f.read())


class SluiceTarget(sc.BrokerUnderTest):
    name = "sluice"

    def __init__(self, binary):
        self.broker = self.server = h.Broker(binary)
        self.dir = self.broker.dir
        self.certs = os.path.join(self.dir, "certs")
        others = sc.free_ports(len(LISTENERS) - 1, taken=(self.broker.port,))
        self.ports = dict(zip(LISTENERS, [self.broker.port] + others))
        self.log_path = self.broker.log_path

    def start(self):
        make_certs(self.certs)
        cfg = broker_config(self.ports, self.certs)
        cfg["advertised.listeners"] = cfg["listeners"]
        self.broker.overrides.update(cfg)
        self.broker.start()
        for l in LISTENERS:  # every listener accepts before the clients start
            deadline = time.monotonic() + 10
            while not h.port_accepts(self.ports[l]) and time.monotonic() < deadline:
                time.sleep(0.05)


class KafkaTarget(sc.BrokerUnderTest):
    name = "kafka"

    def __init__(self, cache):
        import kafka_reference as kr
        self.kr = kr
        self.ref = self.server = kr.KafkaReference(cache)
        self.dir = self.ref.dir
        self.certs = os.path.join(self.dir, "certs")
        others = sc.free_ports(len(LISTENERS) - 1, taken=(self.ref.port, self.ref.controller_port))
        self.ports = dict(zip(LISTENERS, [self.ref.port] + others))
        self.log_path = self.ref.log_path

    def start(self):
        make_certs(self.certs)
        self.ref.overrides.update(sc.add_kafka_controller(broker_config(self.ports, self.certs),
                                                          self.ref.controller_port))
        self.ref.start()


# ---------------------------------------------------------------------------------------------------------------
# Client configurations of a mode


def _path(target, name):
    return os.path.join(target.certs, name)


def rdkafka_conf(target, mode):
    m = MODES[mode]
    listener = m["listener"]
    proto = m.get("protocol", PROTOCOL[listener])
    c = {"bootstrap.servers": "127.0.0.1:%d" % target.ports[listener], "security.protocol": proto,
         "reconnect.backoff.max.ms": 500, "socket.timeout.ms": 10000}
    if "SSL" in proto:
        c["ssl.ca.location"] = _path(target, m.get("ca", "ca") + ".pem")
        if m.get("cert"):
            c["ssl.certificate.location"] = _path(target, m["cert"] + ".pem")
            c["ssl.key.location"] = _path(target, m["cert"] + ".key")
    if m.get("mech"):
        c["sasl.mechanism"] = m["mech"]
        if m["mech"] == "OAUTHBEARER":
            c["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
            c["sasl.oauthbearer.config"] = "principal=%s" % m["sub"] + (" scope=%s" % m["scope"] if m.get("scope")
                                                                       else "")
        else:
            c["sasl.username"], c["sasl.password"] = m["user"], m["password"]
    return c


def java_props(target, mode):
    m = MODES[mode]
    listener = m["listener"]
    proto = m.get("protocol", PROTOCOL[listener])
    c = {"bootstrap.servers": "127.0.0.1:%d" % target.ports[listener], "security.protocol": proto,
         "reconnect.backoff.max.ms": "500"}
    if "SSL" in proto:
        c["ssl.truststore.type"] = "PEM"
        c["ssl.truststore.location"] = _path(target, m.get("ca", "ca") + ".pem")
        if m.get("tls"):
            c["ssl.protocol"] = c["ssl.enabled.protocols"] = m["tls"]
        if m.get("cert"):
            c["ssl.keystore.type"] = "PEM"
            c["ssl.keystore.location"] = _path(target, m["cert"] + "-chain.pem")
    mech = m.get("mech")
    if mech:
        c["sasl.mechanism"] = mech
        if mech == "PLAIN" or mech.startswith("SCRAM"):
            c["sasl.jaas.config"] = sc.login_jaas(sc.PLAIN_MODULE if mech == "PLAIN" else sc.SCRAM_MODULE,
                                                  m["user"], m["password"])
        else:
            c["sasl.jaas.config"] = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                                     'unsecuredLoginStringClaim_sub="%s"%s;' % (
                                         m["sub"], ' unsecuredLoginStringClaim_scope="%s"' % m["scope"]
                                         if m.get("scope") else ""))
    return c


def kafkajs_conf(target, mode):
    m = MODES[mode]
    listener = m["listener"]
    proto = m.get("protocol", PROTOCOL[listener])
    c = {"brokers": ["127.0.0.1:%d" % target.ports[listener]], "ssl": None, "sasl": None}
    if "SSL" in proto:
        c["ssl"] = {"ca": _path(target, m.get("ca", "ca") + ".pem")}
        if m.get("tls"):
            c["ssl"]["maxVersion"] = m["tls"]
        if m.get("cert"):
            c["ssl"]["cert"] = _path(target, m["cert"] + ".pem")
            c["ssl"]["key"] = _path(target, m["cert"] + ".key")
    if m.get("mech"):
        c["sasl"] = {"mechanism": m["mech"].lower(), "username": m["user"], "password": m["password"]}
    return c


# ---------------------------------------------------------------------------------------------------------------
# Checks: (check name, client, kind, mode); kind: roundtrip, authfail, refused, reauth, advertised


def plan(clients):
    checks = []
    for c in clients:
        for mode in ROUNDTRIP:
            checks.append(("roundtrip.%s.%s" % (c, mode), c, "roundtrip", mode))
        for mode in AUTHFAIL:
            checks.append(("authfail.%s.%s" % (c, mode), c, "authfail", mode))
        for mode in REFUSED:
            checks.append(("refused.%s.%s" % (c, mode), c, "refused", mode))
    if "kcat" in clients:
        checks.append(("refused.kcat.sasl_unauthenticated", "kcat", "refused", "sasl_unauthenticated"))
        for l in LISTENERS:
            checks.append(("advertised.kcat.%s" % l, "kcat", "advertised", l))
    if "confluent" in clients:  # SCRAM users through the Admin API (AlterUserScramCredentials over PLAINTEXT)
        checks.append(("scram_admin.confluent.describe", "confluent", "scram_describe", None))
        checks.append(("scram_admin.confluent.same_user_twice", "confluent", "scram_twice", None))
    if "kcat" in clients:  # librdkafka 2.0.2 (no KIP-368), through Debian's confluent-kafka 1.7
        checks.append(("reauth.rdkafka202", "kcat", "reauth", "reauth_rdkafka202"))
    for c in ("confluent", "java"):
        if c in clients:
            checks.append(("reauth.%s" % c, c, "reauth", "reauth_" + c))
    return checks


def topic_of(check):
    return "sec-" + check.replace(".", "-").replace("_", "-")


def norm(text):
    """An error text without ports, durations and counters, for comparing two brokers' answers."""
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:P", text or "")
    text = re.sub(r"after \d+ms", "after Nms", text)
    text = re.sub(r"\b[0-9A-F]{12,16}:error", "X:error", text)
    text = re.sub(r"\d+ identical error\(s\) suppressed", "", text)
    return text.strip()


# ---- kcat (Debian's librdkafka 2.0.2) ----

def kcat_args(conf):
    args = ["-b", conf["bootstrap.servers"]]
    for k, v in conf.items():
        if k != "bootstrap.servers":
            args += ["-X", "%s=%s" % (k, v)]
    return args


def run_kcat(args, stdin=None, timeout=30):
    try:
        p = subprocess.run([KCAT] + args, input=stdin, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, "", "kcat timed out after %d s" % timeout


def kcat_check(target, check, kind, mode, records):
    """Returns (status, detail, observed)."""
    if kind == "advertised":
        conf = rdkafka_conf(target, {"PLAINTEXT": "sasl_unauthenticated", "SSL": "ssl",
                                     "SASL_PLAINTEXT": "sasl_plaintext_plain", "SASL_SSL": "sasl_ssl_plain",
                                     "MTLS": "mtls_client", "REAUTH": "reauth_confluent",
                                     "OAUTHSCOPE": "oauth_scope"}[mode])
        if mode == "PLAINTEXT":
            conf["bootstrap.servers"] = "127.0.0.1:%d" % target.ports["PLAINTEXT"]
        rc, out, err = run_kcat(kcat_args(conf) + ["-L", "-J", "-m", "10"], timeout=20)
        try:
            brokers = [b["name"] for b in json.loads(out)["brokers"]]
        except ValueError:
            return "FAIL", "kcat -L -J exit %s: %s" % (rc, last_line(err)), "error"
        want = ["127.0.0.1:%d" % target.ports[mode]]
        if brokers == want:
            return "PASS", "Metadata on %s lists %s" % (mode, brokers), "brokers=listener port"
        return "FAIL", "Metadata on %s lists %s, expected %s" % (mode, brokers, want), "brokers=%s" % brokers
    conf = rdkafka_conf(target, mode)
    if kind == "reauth":
        # kcat exits at the first disconnect (ALL_BROKERS_DOWN), so librdkafka 2.0.2 without KIP-368 re-authentication
        # is driven through Debian's confluent-kafka 1.7 on the same library: the broker must close the connection at
        # the first request after the session's lifetime (checked in its log later), the producer reconnects.
        if not debian_confluent():
            return "SKIP", "Debian's python3-confluent-kafka (librdkafka 2.0.2) is not installed", "SKIP"
        spec = os.path.join(target.dir, "rdkafka202.json")
        with open(spec, "w") as f:
            json.dump({"cases": [{"kind": "reauth", "name": check, "conf": conf, "topic": topic_of(check),
                                  "timeout": 3 * REAUTH_MS / 1000.0, "interval": 0.5}]}, f)
        res, info, problem = run_driver(["/usr/bin/python3", CONFLUENT_DRIVER, spec], timeout=60)
        status, detail, observed = judge_driver("confluent", kind, mode, res.get(check), records)
        if problem and check not in res:
            return "FAIL", problem, "driver failed"
        return status, detail + " (%s)" % info, observed
    if kind == "roundtrip" and ("kcat", mode) in XFAIL:
        rc, out, err = run_kcat_until_error(kcat_args(conf) + ["-L", "-m", "5"], timeout=15)
        first = kcat_first_error(err)
        if rc != 0 and "Metadata for" not in out and "SASL authentication error" in err:
            return "XFAIL", "refused as by Kafka 4.4 (%s): %s" % (XFAIL_WHY, first), "refused"
        return "FAIL", "expected a refusal as by Kafka 4.4 (%s), got exit %s: %s" % (
            XFAIL_WHY, rc, first or out[:200]), "not refused"
    if kind == "roundtrip":
        topic = topic_of(check)
        values = ["%s-%d" % (check, i) for i in range(records)]
        rc, out, err = run_kcat(kcat_args(conf) + ["-P", "-t", topic, "-p", "0", "-X", "acks=all"],
                                stdin=("\n".join(values) + "\n").encode(), timeout=40)
        if rc != 0:
            return "FAIL", "kcat -P exit %s: %s" % (rc, last_line(err)), "produce failed"
        rc, out, err = run_kcat(kcat_args(conf) + ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
                                                   "-f", "%s\n"], timeout=40)
        got = out.splitlines()
        if rc == 0 and got == values:
            return "PASS", "%d records produced and read back" % len(values), "ok"
        return "FAIL", "kcat -C exit %s, read %d of %d (first %r): %s" % (
            rc, len(got), len(values), got[:2], last_line(err)), "consume failed"
    # authfail / refused: metadata must not come
    rc, out, err = run_kcat_until_error(kcat_args(conf) + ["-L", "-m", "5"], timeout=15)
    first = kcat_first_error(err)
    if rc == 0 or "Metadata for" in out:
        return "FAIL", "metadata was returned:\n%s" % out[:300], "metadata returned"
    if kind == "authfail":
        want = "SASL authentication error: " + auth_text(mode)
        if want in err:
            return "PASS", "refused: %s" % first, norm(first)
        return "FAIL", "expected '%s', kcat says: %s" % (want, first), norm(first)
    if mode == "sasl_unauthenticated":
        return "PASS", "no metadata: %s" % first, norm(first)
    if re.search(r"SSL|certificate|handshake", err):
        return "PASS", "TLS refused: %s" % first, norm(first)
    return "FAIL", "no TLS error from kcat: %s" % first, norm(first)


def kcat_first_error(err):
    lines = [l for l in err.splitlines() if "|FAIL|" in l or "|ERROR|" in l]
    return re.sub(r"^%\d\|[\d.]+\|\w+\|[^|]*\| \[thrd:[^\]]*\]: [^ ]* ", "", lines[0]) if lines else last_line(err)


def run_kcat_until_error(args, timeout):
    """kcat -L that is expected to fail: returns at its exit or at its first FAIL/ERROR log line (the child is then
    killed by its PID), so a refusal costs no metadata timeout."""
    p = subprocess.Popen([KCAT] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = b""
    deadline = time.monotonic() + timeout
    os.set_blocking(p.stderr.fileno(), False)
    while time.monotonic() < deadline and p.poll() is None:
        select.select([p.stderr], [], [], 0.1)
        chunk = p.stderr.read() or b""
        err += chunk
        if re.search(rb"\|(FAIL|ERROR)\|[^\n]*\n", err):
            break
    if p.poll() is None:
        p.kill()
    out, rest = p.communicate()
    return p.returncode, out.decode("utf-8", "replace"), (err + (rest or b"")).decode("utf-8", "replace")


def debian_confluent():
    p = subprocess.run(["/usr/bin/python3", "-c", "import confluent_kafka"], capture_output=True, timeout=30)
    return p.returncode == 0


def last_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


# ---- the driver processes (confluent-kafka, Java, kafkajs): one process per client runs all its cases ----

def run_driver(cmd, timeout, env=None, cwd=None):
    """Runs a driver; returns ({case name: result dict}, info, error text or None)."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        out, err, problem = (e.stdout or b""), (e.stderr or b""), "driver timed out after %d s" % timeout
    else:
        out, err, problem = p.stdout, p.stderr, None if p.returncode == 0 else "driver exit %d" % p.returncode
    results, info = {}, ""
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "info" in r:
            info = r["info"]
        elif "name" in r:
            results[r["name"]] = r
    if problem:
        problem += ": " + last_line(err.decode("utf-8", "replace"))
    return results, info, problem


def confluent_cases(target, checks, records):
    cases = []
    plain = {"bootstrap.servers": "127.0.0.1:%d" % target.ports["PLAINTEXT"]}
    for check, _, kind, mode in checks:
        if kind == "scram_describe":
            cases.append({"kind": "describe_scram", "name": check, "conf": plain, "users": [SCRAM_USER]})
            continue
        if kind == "scram_twice":
            # one request naming a user twice: Kafka answers DUPLICATE_RESOURCE for that user and stores nothing
            cases.append({"kind": "scram_users", "name": check, "conf": plain,
                          "users": [[TWICE_USER, "SCRAM-SHA-256", "erin-secret", 4096],
                                    [TWICE_USER, "SCRAM-SHA-512", "erin-secret", 4096]]})
            cases.append({"kind": "describe_scram", "name": check + ".after", "conf": plain, "users": [TWICE_USER]})
            continue
        conf = rdkafka_conf(target, mode)
        if kind == "roundtrip":
            cases.append({"kind": "roundtrip", "name": check, "conf": conf, "topic": topic_of(check),
                          "records": records, "timeout": 30})
        elif kind == "reauth":
            cases.append({"kind": "reauth", "name": check, "conf": conf, "topic": topic_of(check),
                          "timeout": 3 * REAUTH_MS / 1000.0, "interval": 0.5})
        else:
            cases.append({"kind": "connect", "name": check, "conf": conf, "timeout": 6, "expect_failure": True})
    return cases


def java_spec(target, checks, records):
    lines = []
    for check, _, kind, mode in checks:
        props = java_props(target, mode)
        if kind == "roundtrip":
            lines.append("CASE %s roundtrip %s %d 40" % (check, topic_of(check), records))
        elif kind == "reauth":
            lines.append("CASE %s reauth %s 500 %d" % (check, topic_of(check), 3 * REAUTH_MS // 1000))
        else:
            lines.append("CASE %s connect - 0 8" % check)
        lines += ["%s=%s" % kv for kv in props.items()]
        lines.append("")
    return "\n".join(lines) + "\n"


def kafkajs_cases(target, checks, records):
    cases = []
    for check, _, kind, mode in checks:
        conf = kafkajs_conf(target, mode)
        if kind == "roundtrip":
            cases.append({"kind": "roundtrip", "name": check, "conf": conf, "topic": topic_of(check),
                          "records": records, "timeout": 40})
        else:
            cases.append({"kind": "connect", "name": check, "conf": conf, "timeout": 8})
    return cases


def judge_driver(client, kind, mode, r, records, after=None):
    """(status, detail, observed) of one driver result."""
    if r is None:
        return "FAIL", "no result from the driver", "no result"
    if kind == "scram_describe":
        got = (r.get("results") or {}).get(SCRAM_USER)
        want = [["SCRAM-SHA-256", 4096], ["SCRAM-SHA-512", 4096]]
        if got == want:
            return "PASS", "DescribeUserScramCredentials %s: %s" % (SCRAM_USER, got), str(got)
        return "FAIL", "DescribeUserScramCredentials %s: %s, expected %s" % (SCRAM_USER, got, want), str(got)
    if kind == "scram_twice":
        got = (r.get("results") or {}).get(TWICE_USER)
        stored = ((after or {}).get("results") or {}).get(TWICE_USER)
        observed = "%s; then described: %s" % (got, stored)
        if got and got[0] == "DUPLICATE_RESOURCE" and isinstance(stored, dict):
            return "PASS", "AlterUserScramCredentials naming %s twice: %s %s; nothing stored (%s)" % (
                TWICE_USER, got[0], got[1], stored["error"][0]), observed
        return "FAIL", "AlterUserScramCredentials naming %s twice (SCRAM-SHA-256 and -512 in one request): %s, " \
            "then DescribeUserScramCredentials: %s; Kafka 4.4 answers DUPLICATE_RESOURCE 'A user credential cannot " \
            "be altered twice in the same request' and stores nothing" % (TWICE_USER, got, stored), observed
    if kind in ("roundtrip", "reauth"):
        n = records if kind == "roundtrip" else r.get("produced", 0)
        if r.get("ok") and len(r.get("consumed", [])) == n and n > 0:
            extra = " in %.1f s" % r["seconds"] if "seconds" in r else ""
            return "PASS", "%d records produced and read back%s" % (n, extra), "ok"
        why = r.get("error") or r.get("exception") or r.get("errors")
        return "FAIL", "produced %s, read %d (first %r): %s %s" % (
            r.get("produced"), len(r.get("consumed", [])), r.get("consumed", [])[:2], r.get("error_type", ""),
            str(why)[:400]), "failed"
    # authfail / refused
    if r.get("ok"):
        return "FAIL", "metadata was returned (%s)" % (r.get("brokers") or r.get("consumed") or r.get("topics")), \
            "metadata returned"
    if client == "confluent":
        errs = r.get("errors") or []
        first = errs[0] if errs else (r.get("exception") or ["?", "?"])
        text = "%s: %s" % (first[0], first[1])
        if kind == "authfail":
            want = "SASL authentication error: " + auth_text(mode)
            auth = [e for e in errs if e[0] == "_AUTHENTICATION" and want in e[1]]
            if auth:
                return "PASS", "error callback %s: %s" % (auth[0][0], auth[0][1]), norm(auth[0][1])
            return "FAIL", "expected error _AUTHENTICATION '%s', got %s" % (want, errs[:2]), norm(text)
        tls = [e for e in errs if e[0] in ("_SSL", "_TRANSPORT") and re.search(r"SSL|certificate|handshake", e[1])]
        if tls:
            return "PASS", "TLS refused: %s: %s" % (tls[0][0], tls[0][1]), norm(tls[0][1])
        return "FAIL", "no TLS error: %s" % errs[:3], norm(text)
    etype, emsg = r.get("error_type", ""), r.get("error", "")
    text = "%s: %s" % (etype, emsg)
    if client == "java":
        want = "org.apache.kafka.common.errors.SaslAuthenticationException" if kind == "authfail" else \
            "org.apache.kafka.common.errors.SslAuthenticationException"
        if etype == want and (kind != "authfail" or emsg == auth_text(mode)):
            return "PASS", text[:300], norm(text)
        return "FAIL", "expected %s%s, got %s" % (want.rsplit(".", 1)[1], ": " + auth_text(mode) if kind == "authfail"
                                                  else "", text[:400]), norm(text)
    # kafkajs
    if kind == "authfail":
        if etype == "KafkaJSSASLAuthenticationError" and emsg.endswith(" authentication failed: " + auth_text(mode)):
            return "PASS", text[:300], norm(text)
        return "FAIL", "expected KafkaJSSASLAuthenticationError '...: %s', got %s" % (auth_text(mode), text[:400]), \
            norm(text)
    chain = " ".join("%s: %s" % tuple(x) for x in r.get("error_chain", []))
    if etype in ("KafkaJSConnectionError", "KafkaJSNonRetriableError", "KafkaJSConnectionClosedError",
                 "KafkaJSNumberOfRetriesExceeded") and re.search(r"SSL|certificate|socket|TLS|Connection|closed",
                                                                 chain, re.I):
        return "PASS", chain[:300], norm(text)
    return "FAIL", "expected a TLS connection error, got %s" % chain[:400], norm(text)


# ---------------------------------------------------------------------------------------------------------------


class Clients:
    """Installs (once per cache) and locates each client; a client that cannot be had is recorded with why."""

    def __init__(self, cache, wanted):
        self.cache = cache
        self.ready, self.why = {}, {}
        for c in wanted:
            try:
                self.ready[c] = getattr(self, "_" + c)()
            except installers.Unavailable as e:
                self.why[c] = "SKIP:unavailable: %s" % e
            except installers.SetupFailed as e:
                self.why[c] = "FAIL:setup failed: %s" % e

    def _kcat(self):
        if not os.access(KCAT, os.X_OK):
            if os.geteuid() == 0 and shutil.which("apt-get"):
                subprocess.run(["apt-get", "install", "-y", "-q", "kcat"], capture_output=True, timeout=300,
                               env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            if not os.access(KCAT, os.X_OK):
                raise installers.Unavailable("kcat is not installed (apt-get install kcat)")
        return KCAT

    def _confluent(self):
        return installers.venv(self.cache)

    def _java(self):
        return installers.java_security(self.cache)

    def _kafkajs(self):
        return installers.node(self.cache)


def setup(target, clients, topics, log):
    """CreateTopics and the SCRAM users over PLAINTEXT (confluent-kafka's AdminClient), then waits (bounded) until
    bob can authenticate with SCRAM-SHA-512. Returns None or why SCRAM could not be set up."""
    py = clients.ready.get("confluent")
    if py is None:
        return "no confluent-kafka to run AlterUserScramCredentials (%s)" % clients.why.get("confluent")
    plain = {"bootstrap.servers": "127.0.0.1:%d" % target.ports["PLAINTEXT"]}
    cases = [{"kind": "create_topics", "name": "topics", "conf": plain, "topics": topics},
             # one request per mechanism: Kafka refuses a user twice in one request (DUPLICATE_RESOURCE)
             {"kind": "scram_users", "name": "scram", "conf": plain,
              "users": [[SCRAM_USER, "SCRAM-SHA-256", SCRAM_PASSWORD, 4096]]},
             {"kind": "scram_users", "name": "scram512", "conf": plain,
              "users": [[SCRAM_USER, "SCRAM-SHA-512", SCRAM_PASSWORD, 4096]]},
             {"kind": "connect", "name": "scram-ready", "conf": rdkafka_conf(target, "sasl_ssl_scram512"),
              "timeout": 15}]
    spec = os.path.join(target.dir, "setup.json")
    with open(spec, "w") as f:
        json.dump({"cases": cases}, f)
    res, info, problem = run_driver([py, CONFLUENT_DRIVER,
                                     spec], timeout=60, cwd=os.path.join(REPO, "compat", "clients", "python"))
    log("setup (%s): topics %s, SCRAM users %s %s, SCRAM-SHA-512 login %s" % (
        info, res.get("topics", {}).get("ok"), res.get("scram", {}).get("results"),
        res.get("scram512", {}).get("results"),
        "ok" if res.get("scram-ready", {}).get("ok") else res.get("scram-ready")))
    if problem:
        return "setup driver: %s" % problem
    for name in ("scram", "scram512"):
        if not res.get(name, {}).get("ok"):
            return "AlterUserScramCredentials failed: %s" % res.get(name)
    if not res.get("scram-ready", {}).get("ok"):
        return "bob cannot log in with SCRAM-SHA-512 after AlterUserScramCredentials: %s" % res.get("scram-ready")
    return None


def run_client(client, clients, target, checks, records):
    """Runs one client's checks; returns {check: (status, detail, observed)}."""
    mine = [c for c in checks if c[1] == client]
    out = {}
    if not mine:
        return out
    if client == "kcat":
        for check, _, kind, mode in mine:
            try:
                out[check] = kcat_check(target, check, kind, mode, records)
            except Exception as e:  # noqa: BLE001 - one check's crash is that check's failure
                out[check] = ("FAIL", "test error: %s: %s" % (type(e).__name__, e), "test error")
        rc, v, _ = run_kcat(["-V"], timeout=10)
        m = re.search(r"librdkafka ([\d.]+)", v)
        out["_info"] = "kcat, librdkafka %s" % (m.group(1) if m else "?")
        return out
    if client == "confluent":
        spec = os.path.join(target.dir, "confluent.json")
        with open(spec, "w") as f:
            json.dump({"cases": confluent_cases(target, mine, records)}, f)
        cmd = [clients.ready[client], CONFLUENT_DRIVER,
               spec]
        res, info, problem = run_driver(cmd, timeout=150)
    elif client == "java":
        spec = os.path.join(target.dir, "java.spec")
        with open(spec, "w") as f:
            f.write(java_spec(target, mine, records))
        java_bin, cp = clients.ready[client]
        res, info, problem = run_driver([java_bin, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                         "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", cp,
                                         "SecurityClient", spec], timeout=170)
    else:
        spec = os.path.join(target.dir, "kafkajs.json")
        with open(spec, "w") as f:
            json.dump({"cases": kafkajs_cases(target, mine, records)}, f)
        nodebin, home = clients.ready[client]
        res, info, problem = run_driver([nodebin, os.path.join(home, "kafkajs_security.js"), spec], timeout=150,
                                        cwd=home)
    for check, _, kind, mode in mine:
        r = res.get(check)
        if r is None and problem:
            out[check] = ("FAIL", problem, "driver failed")
        else:
            out[check] = judge_driver(client, kind, mode, r, records, res.get(check + ".after"))
    out["_info"] = info
    return out


def reauth_log_checks(text, results):
    """Sluice's log names the principal whose expired session closed a connection: the KIP-368 clients (Java,
    librdkafka 2.16) must have re-authenticated in time, librdkafka 2.0.2 (kcat, no KIP-368) must have been cut."""
    for client, (user, _) in REAUTH_USERS.items():
        check = "reauth.%s" % client
        if check not in results or results[check][0] != "PASS":
            continue
        cut = len(re.findall(r"after the SASL session of User:%s expired" % re.escape(user), text))
        if client == "rdkafka202" and cut == 0:
            results[check] = ("FAIL", results[check][1] + "; but the broker log shows no connection of User:%s "
                              "closed after its session expired" % user, "not cut")
        elif client == "rdkafka202":
            results[check] = ("PASS", results[check][1] + "; the broker closed %d expired connection(s) of User:%s"
                              % (cut, user), results[check][2])
        elif cut:
            results[check] = ("FAIL", results[check][1] + "; but the broker closed %d connection(s) of User:%s "
                              "whose session expired (no re-authentication)" % (cut, user), "cut")
        else:
            results[check] = ("PASS", results[check][1] + "; re-authenticated (no expired session in the broker "
                              "log)", results[check][2])


def log_digest(text, limit=150):
    """The broker log's security lines (authentication, SASL, TLS, warnings, errors) and its last 20 lines, at most
    `limit`, runs of the same line (timestamp and peer port aside) counted once."""
    out, last, repeat = [], None, 0
    lines = text.splitlines()
    keep = re.compile(r"authenticat|SASL|TLS|credential|expired|listener| warn | error |started|stopped", re.I)
    lines = [l for l in lines[:-20] if keep.search(l) and "created topic" not in l] + lines[-20:]
    for line in lines:
        key = re.sub(r"^\[[^\]]*\]|127\.0\.0\.1:\d+", "", line)
        if key == last:
            repeat += 1
            continue
        if repeat:
            out.append("    (the line above %d more times)" % repeat)
        out.append(line)
        last, repeat = key, 0
    if repeat:
        out.append("    (the line above %d more times)" % repeat)
    return "\n".join(out[-limit:])


def run_target(target, args, clients, log):
    """Starts the broker, runs every check, stops it. Returns ({check: (status, detail, observed)}, infos)."""
    results, infos = {}, {}
    checks = [c for c in plan(args.clients) if (c[1], c[3]) not in UNSUPPORTED]
    failed = False
    t0 = time.monotonic()
    try:
        target.start()
        log("%s started in %.1f s: %s" % (target.name, time.monotonic() - t0,
                                          ", ".join("%s %d" % kv for kv in target.ports.items())))
        scram_problem = setup(target, clients, sorted({topic_of(c[0]) for c in checks if c[2] in
                                                       ("roundtrip", "reauth")}), log)
        runnable = []
        for c in checks:
            why = clients.why.get(c[1])
            if why:
                status, detail = why.split(":", 1)
                results[c[0]] = (status, detail, status)
            elif scram_problem and "scram" in (c[3] or c[2]):
                results[c[0]] = ("FAIL" if clients.ready.get("confluent") else "SKIP", scram_problem, "no SCRAM user")
            else:
                runnable.append(c)
        t1 = time.monotonic()
        order = [c for c in ("java", "kafkajs", "confluent", "kcat") if c in clients.ready and c in args.clients]
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
            futs = {pool.submit(run_client, c, clients, target, runnable, args.records): c for c in order}
            for f in concurrent.futures.as_completed(futs):
                try:
                    r = f.result()
                except Exception as e:  # noqa: BLE001 - this client's checks fail, the others go on
                    r = {c[0]: ("FAIL", "test error: %s: %s" % (type(e).__name__, e), "test error")
                         for c in runnable if c[1] == futs[f]}
                infos[futs[f]] = r.pop("_info", "")
                results.update(r)
                log("%s done (%.1f s after setup)" % (futs[f], time.monotonic() - t1))
        if target.alive():
            rc = target.stop()
            if target.name == "sluice":
                reauth_log_checks(target.log_text(), results)
            results["broker.stop"] = ("PASS", "exit status %s on SIGTERM" % rc, "ok") if rc == 0 else \
                ("FAIL", "exit status %s on SIGTERM" % rc, "exit %s" % rc)
        else:
            results["broker.stop"] = ("FAIL", "the broker died during the test", "died")
    except Exception as e:  # noqa: BLE001 - everything is a failure of this target
        import traceback
        traceback.print_exc()
        results["broker.start"] = ("FAIL", "%s: %s" % (type(e).__name__, str(e)[:2000]), "exception")
    failed = any(v[0] == "FAIL" for v in results.values())
    if failed:
        print("---- %s log (%s; temp dir kept: %s) ----" % (target.name, target.log_path, target.dir))
        print(log_digest(target.log_text()))
        print("---- end of %s log ----" % target.name)
    target.close(failed=failed)
    return results, infos


def main():
    ap = sc.arg_parser(__doc__, "run the checks against Apache Kafka 4.4.0 instead")
    ap.add_argument("--records", type=int, default=50, help="records per round trip (default 50)")
    ap.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated subset of " + ",".join(CLIENTS))
    ap.add_argument("--parallel", type=int, default=4, help="clients run at the same time (default 4)")
    args = ap.parse_args()
    args.clients = [c for c in args.clients.split(",") if c]
    for c in args.clients:
        if c not in CLIENTS:
            ap.error("unknown client %s" % c)
    args.cache = os.path.abspath(args.cache)
    os.makedirs(args.cache, exist_ok=True)
    log = sc.logger(time.monotonic())

    targets = []
    if args.reference != "kafka":
        binary = sc.sluice_binary(args)
        if binary is None:
            print(sc.NO_BINARY)
            return h.SKIP
        targets.append(lambda: SluiceTarget(binary))
    if args.reference == "kafka" or args.compare:
        targets.append(lambda: KafkaTarget(args.cache))

    # confluent-kafka also makes the topics and SCRAM users, whichever clients run
    clients = Clients(args.cache, args.clients + ([] if "confluent" in args.clients else ["confluent"]))
    for c in args.clients:
        log("client %s: %s" % (c, "ready" if c in clients.ready else clients.why[c]))
    columns = []
    for make in targets:
        try:
            target = make()
        except Exception as e:  # noqa: BLE001
            print("SKIPPED %s: %s" % ("kafka", e))
            continue
        if target.name == "kafka":
            try:
                target.kr.prepare(args.cache, quiet=True)
            except target.kr.Unavailable as e:
                log("Kafka 4.4.0 unavailable: %s" % e)
                shutil.rmtree(target.dir, ignore_errors=True)
                if not args.compare:
                    print("SKIPPED: %s" % e)
                    return h.SKIP
                continue
        results, infos = run_target(target, args, clients, log)
        log("%s: %s" % (target.name, ", ".join("%s=%s" % kv for kv in sorted(infos.items()))))
        columns.append((target.name, results))

    # the report
    def agreement(k, row):
        same = row[0][0] == row[1][0] and row[0][2] == row[1][2]
        # a refused TLS handshake is described by each side's TLS library (OpenSSL's alert vs Java's SSLEngine's)
        tls_only = row[0][0] == row[1][0] and k.startswith("refused.") and "sasl" not in k
        return ("yes" if same else "yes* %s | %s" % (row[0][2][:110], row[1][2][:110]) if tls_only else
                "NO  sluice: %s | kafka: %s" % (row[0][2][:150], row[1][2][:150])), same or tls_only
    counts, disagree = sc.print_report(columns, 500, 8, agreement)
    if len(columns) == 2:
        print("(yes*: the same outcome, the TLS alert or certificate-chain text differs: OpenSSL vs Java's SSLEngine)")
    log(sc.summary(counts, disagree, columns))
    if counts.get("FAIL"):
        return 1
    if not counts.get("PASS"):
        return h.SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
