#!/usr/bin/env python3
"""`sluice acl` and `sluice user` (cli/README.md, issue #19) and the CLI's SASL and TLS connections, against a
Sluice broker and against Apache Kafka 4.4 (--reference kafka), checked by kcat (librdkafka 2.0.2) on the same
broker.

The broker: a PLAINTEXT listener (kcat's setup view), a SASL_PLAINTEXT listener (PLAIN for the super user
`admin`, SCRAM-SHA-256/512 from the credential store), with the authorizer on (super.users=User:admin,
allow.everyone.if.no.acl.found=false); on Sluice also a SASL_SSL listener with a throwaway CA
(tests/integration/security/make_certs.sh). Checks, in order:
  auth        admin over SASL PLAIN creates topic `secured`; a wrong password is SASL_AUTHENTICATION_FAILED (exit 1);
              an unknown property or value of -X is a usage error (exit 2)
  users       `user create` dave (SCRAM-SHA-512, --password) and erin (SCRAM-SHA-256, --password-file -); `user list`
              shows both with their mechanisms and 4096 iterations; confluent-kafka 2.16 (librdkafka, the compat
              cache's venv) logs in as dave with SCRAM-SHA-512 (the salted password the CLI made is right for
              librdkafka too) and the CLI as erin with SCRAM-SHA-256
  denied      dave's `topic list` leaves `secured` out and `produce secured` is TOPIC_AUTHORIZATION_FAILED
  acls        `acl create` Write and Describe on topic secured for User:dave; `acl list --topic secured` (text and
              --json) shows exactly those two; dave then produces 5 records, which kcat (admin) reads back
  delete      `acl delete --topic secured --principal User:dave` lists the two it removed; dave is denied again;
              `user delete dave` removes his credential: `user list` no longer has him and his login fails
  tls         (Sluice) the same topic list over SASL_SSL with ssl.ca.location; without the CA the handshake fails
              (exit 1, SSL_HANDSHAKE_FAILED), with enable.ssl.certificate.verification=false it works
Exit 0 pass, 1 fail, 77 skip.

  cli_security_test.py --broker build-tests/broker/sluice [--reference kafka --cache build-tests/compat-cache]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration", "security"))
import security_common as sc  # noqa: E402  (puts the harness and kafka_reference on the path)
import sluice_harness as h  # noqa: E402


def wait_until(fn, timeout=15.0, step=0.2):
    return h.wait_until(fn, timeout, step)

ADMIN, ADMIN_PW = "admin", "admin-secret"


def broker_config(plain_port, sasl_port, ssl_port=None, certs=None, kafka=False):
    listeners = "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d" % (plain_port, sasl_port)
    proto_map = "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    c = {
        "listener.security.protocol.map": proto_map,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": sc.plain_jaas({ADMIN: ADMIN_PW}),
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": sc.SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": sc.SCRAM_JAAS,
        "authorizer.class.name": ("org.apache.kafka.metadata.authorizer.StandardAuthorizer" if kafka
                                  else "kafka.security.authorizer.AclAuthorizer"),
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
        "num.partitions": 2,
        "offsets.topic.num.partitions": 1,
    }
    if ssl_port:
        listeners += ",SASL_SSL://127.0.0.1:%d" % ssl_port
        c["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
        c["listener.name.sasl_ssl.plain.sasl.jaas.config"] = sc.plain_jaas({ADMIN: ADMIN_PW})
        c.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": os.path.join(certs, "server-chain.pem"),
                  "ssl.truststore.type": "PEM", "ssl.truststore.location": os.path.join(certs, "ca.pem")})
    c["listeners"] = listeners
    c["advertised.listeners"] = listeners
    return c


def body(binary, plain_port, sasl_port, ssl_port, certs, check, venv_python=None):
    plain_bs, sasl_bs = "127.0.0.1:%d" % plain_port, "127.0.0.1:%d" % sasl_port

    def as_user(user, password, mechanism):
        return ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=" + mechanism,
                "-X", "sasl.username=" + user, "-X", "sasl.password=" + password]
    admin = as_user(ADMIN, ADMIN_PW, "PLAIN")

    def cli(*args, stdin=None, brokers=None, timeout=60):
        r = subprocess.run([binary, "--brokers", brokers or sasl_bs] + list(args), input=stdin, capture_output=True,
                           text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def kcat(*args, stdin=None):
        r = subprocess.run(["kcat", "-q"] + list(args), input=stdin, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    # ---- auth
    rc, out, err = cli(*admin, "topic", "create", "secured", "--partitions", "1")
    check.eq((rc, err), (0, ""), "admin over SASL PLAIN creates topic secured (%s)" % out.strip())
    rc, _, err = cli(*as_user(ADMIN, "wrong", "PLAIN"), "topic", "list")
    check.eq(rc, 1, "a wrong password: exit 1")
    check.true(err.startswith("sluice: SASL_AUTHENTICATION_FAILED"), "a wrong password names SASL_AUTHENTICATION_FAILED: %r" % err)
    rc, _, err = cli("-X", "sasl.bogus=1", "topic", "list")
    check.true(rc == 2 and "unknown client property 'sasl.bogus'" in err, "an unknown -X property: %d %r" % (rc, err))
    rc, _, err = cli("-X", "security.protocol=SASL_TLS", "topic", "list")
    check.true(rc == 2 and "security.protocol must be" in err, "a bad security.protocol: %d %r" % (rc, err))

    # ---- users
    rc, out, err = cli(*admin, "user", "create", "dave", "--password", "dave-pass", "--mechanism", "SCRAM-SHA-512")
    check.eq((rc, out.split()[-2:] if out else None), (0, ["dave", "OK"]), "user create dave (%s)" % err)
    rc, out, err = cli(*admin, "user", "create", "erin", "--password-file", "-", "--mechanism", "SCRAM-SHA-256",
                       stdin="erin-pass\n")
    check.eq(rc, 0, "user create erin --password-file - (%s)" % err)

    def users():
        rc, out, err = cli(*admin, "--json", "user", "list")
        return {u["user"]: sorted((c["mechanism"], c["iterations"]) for c in u["credentials"])
                for u in json.loads(out)["users"]} if rc == 0 else {"error": err}
    got = wait_until(lambda: (lambda u: u if {"dave", "erin"} <= set(u) else None)(users())) or users()
    check.eq({k: v for k, v in got.items() if k in ("dave", "erin")},
             {"dave": [("SCRAM-SHA-512", 4096)], "erin": [("SCRAM-SHA-256", 4096)]}, "user list (JSON)")
    rc, out, _ = cli(*admin, "user", "list", "dave")
    check.true(rc == 0 and out.splitlines()[0].split() == ["USER", "MECHANISM", "ITERATIONS"] and
               out.splitlines()[1].split() == ["dave", "SCRAM-SHA-512", "4096"], "user list dave (text): %r" % out)
    # librdkafka checks the credential: confluent-kafka 2.16 from the compat cache's venv (Debian's librdkafka 2.0.2,
    # kcat's, sends its SCRAM client nonce twice and is refused by Kafka 4.4 too: librdkafka#4895).
    login = ("import sys, confluent_kafka.admin as cka\n"
             "a = cka.AdminClient({'bootstrap.servers': sys.argv[1], 'security.protocol': 'SASL_PLAINTEXT',"
             " 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': 'dave', 'sasl.password': 'dave-pass'})\n"
             "a.list_topics(timeout=10)\nprint('logged in')\n")
    if venv_python:
        last = [None]

        def librdkafka_login():
            last[0] = subprocess.run([venv_python, "-c", login, sasl_bs], capture_output=True, text=True, timeout=60)
            return last[0].returncode == 0 and "logged in" in last[0].stdout
        ok = wait_until(librdkafka_login)
        check.true(ok, "confluent-kafka 2.16 (librdkafka) logs in as dave with SCRAM-SHA-512: the CLI's salted password "
                   "is right (%r)" % (last[0].stderr[-400:],))
    else:
        print("# no venv: the librdkafka login as dave is not checked")
    erin = as_user("erin", "erin-pass", "SCRAM-SHA-256")
    rc, _, err = cli(*erin, "topic", "list")
    check.eq((rc, err), (0, ""), "the CLI logs in as erin with SCRAM-SHA-256")
    rc, _, err = cli(*as_user("erin", "nope", "SCRAM-SHA-256"), "topic", "list")
    check.true(rc == 1 and "SASL_AUTHENTICATION_FAILED" in err, "erin with a wrong password: %d %r" % (rc, err))

    rc, _, err = cli(*admin, "user", "create", "frank", "--password", "p", "--iterations", "100000000", timeout=20)
    check.true(rc == 2 and "4096 to 16384" in err, "user create --iterations beyond Kafka's 16384: usage error at once (%r)" % err)
    # A Kafka tools' client.properties: the Java client's sasl.jaas.config and bootstrap.servers, a key the CLI ignores
    props = os.path.join(tempfile.mkdtemp(prefix="cli-security-"), "client.properties")
    with open(props, "w") as f:
        f.write("bootstrap.servers=%s\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                "username=\"erin\" password=\"erin-pass\";\nclient.id=tools\n" % sasl_bs)
    r = subprocess.run([binary, "--command-config", props, "topic", "list"], capture_output=True, text=True, timeout=60)
    check.eq(r.returncode, 0, "--command-config with sasl.jaas.config and bootstrap.servers (%r)" % r.stderr)
    check.true("client.id is not used by this CLI, ignored" in r.stderr, "an unused Java key is named: %r" % r.stderr)
    shutil.rmtree(os.path.dirname(props), ignore_errors=True)

    # ---- denied without ACLs
    dave = as_user("dave", "dave-pass", "SCRAM-SHA-512")
    rc, out, err = cli(*dave, "--json", "topic", "list")
    check.true(rc == 0 and "secured" not in [t["name"] for t in json.loads(out)["topics"]],
               "dave's topic list leaves secured out: %d %r %r" % (rc, out, err))
    rc, _, err = cli(*dave, "produce", "secured", stdin="x\n")
    check.true(rc == 1 and "TOPIC_AUTHORIZATION_FAILED" in err, "dave may not produce: %d %r" % (rc, err))

    # ---- ACLs
    rc, out, err = cli(*admin, "acl", "create", "--allow-principal", "User:dave", "--operation", "Write",
                       "--operation", "Describe", "--topic", "secured")
    check.eq((rc, err), (0, ""), "acl create")
    check.eq(sorted(l.split()[-1] for l in out.splitlines()[1:]), ["OK", "OK"], "acl create: two ACLs OK (%r)" % out)

    def acls():
        rc, out, err = cli(*admin, "--json", "acl", "list", "--topic", "secured")
        return sorted((a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"], a["host"], a["operation"],
                       a["permission"]) for a in json.loads(out)["acls"]) if rc == 0 else [err]
    want = [("Topic", "secured", "Literal", "User:dave", "*", op, "Allow") for op in ("Describe", "Write")]
    check.eq(wait_until(lambda: acls() == want and acls()) or acls(), want, "acl list --topic secured (JSON)")
    rc, out, _ = cli(*admin, "acl", "list", "--principal", "User:dave")
    rows = [l.split() for l in out.splitlines()]
    check.true(rc == 0 and rows and rows[0][:2] == ["RESOURCE-TYPE", "RESOURCE-NAME"] and
               sorted(r[5] for r in rows[1:]) == ["Describe", "Write"], "acl list --principal (text): %r" % out)
    produced = "".join("from dave %d\n" % i for i in range(5))
    ok = wait_until(lambda: cli(*dave, "produce", "secured", stdin=produced)[0] == 0)
    check.true(ok, "dave produces once allowed")
    rc, out, err = kcat("-b", plain_bs, "-C", "-t", "secured", "-e", "-f", "%s\n")
    check.eq(sorted(set(out.splitlines())), sorted(produced.splitlines()), "kcat reads dave's records (%s)" % err.strip())
    rc, out, _ = cli(*dave, "--json", "topic", "list")
    check.true(rc == 0 and "secured" in [t["name"] for t in json.loads(out)["topics"]], "dave now sees secured")

    # ---- delete
    rc, out, err = cli(*admin, "--json", "acl", "delete", "--topic", "secured", "--principal", "User:dave")
    deleted = sorted((a["principal"], a["operation"]) for a in json.loads(out)["deleted"]) if rc == 0 else err
    check.eq(deleted, [("User:dave", "Describe"), ("User:dave", "Write")], "acl delete lists what it removed")
    check.eq(wait_until(lambda: acls() == [] and [0]) or acls(), [0], "no ACL left on secured")
    ok = wait_until(lambda: (lambda r: r[0] == 1 and "TOPIC_AUTHORIZATION_FAILED" in r[2])(cli(*dave, "produce", "secured", stdin="y\n")))
    check.true(ok, "dave is denied again")
    rc, _, err = cli(*admin, "acl", "delete", "--principal", "User:dave")
    check.eq(rc, 2, "acl delete without a resource: usage error (%r)" % err)
    rc, out, err = cli(*admin, "user", "delete", "dave")
    check.eq((rc, err), (0, ""), "user delete dave")
    check.true(wait_until(lambda: "dave" not in users()), "user list no longer has dave")
    ok = wait_until(lambda: (lambda r: r[0] == 1 and "SASL_AUTHENTICATION_FAILED" in r[2])(cli(*dave, "topic", "list")))
    check.true(ok, "dave's login fails once his credential is deleted")

    # ---- TLS (Sluice)
    if ssl_port:
        ssl_bs = "127.0.0.1:%d" % ssl_port
        tls_admin = ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=admin",
                     "-X", "sasl.password=" + ADMIN_PW]
        rc, out, err = cli(*tls_admin, "-X", "ssl.ca.location=" + os.path.join(certs, "ca.pem"), "topic", "list",
                           brokers=ssl_bs)
        check.true(rc == 0 and "secured" in out, "SASL_SSL with the CA: %d %r %r" % (rc, out, err))
        rc, _, err = cli(*tls_admin, "topic", "list", brokers=ssl_bs)
        check.true(rc == 1 and err.startswith("sluice: SSL_HANDSHAKE_FAILED"), "SASL_SSL without the CA: %d %r" % (rc, err))
        rc, out, err = cli(*tls_admin, "-X", "enable.ssl.certificate.verification=false", "topic", "list", brokers=ssl_bs)
        check.true(rc == 0 and "secured" in out, "SASL_SSL without verification: %d %r" % (rc, err))
        conf = os.path.join(certs, "client.properties")
        with open(conf, "w") as f:
            f.write("# Kafka tools' --command-config\nsecurity.protocol=SASL_SSL\nsasl.mechanism = PLAIN\n"
                    "sasl.username=admin\nsasl.password=%s\nssl.ca.location=%s\n" % (ADMIN_PW, os.path.join(certs, "ca.pem")))
        rc, out, err = cli("--command-config", conf, "topic", "list", brokers=ssl_bs)
        check.true(rc == 0 and "secured" in out, "--command-config file: %d %r" % (rc, err))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"), help="the sluice executable (the CLI, and the broker)")
    ap.add_argument("--reference", choices=["kafka"], help="the CLI against Apache Kafka 4.4 instead of a Sluice broker")
    ap.add_argument("--cache", default=os.path.join(REPO, "build-tests", "compat-cache"))
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIPPED: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    if shutil.which("kcat") is None or shutil.which("openssl") is None:
        print("SKIPPED: no kcat or openssl")
        return h.SKIP
    binary = os.path.abspath(args.broker)
    check = h.Checker()
    sys.path.insert(0, os.path.join(REPO, "compat", "clients"))
    import installers
    try:
        venv_python = installers.venv(os.path.abspath(args.cache))
    except (installers.Unavailable, installers.SetupFailed) as e:
        print("# no venv (%s): the librdkafka SCRAM login is skipped" % e)
        venv_python = None
    if args.reference == "kafka":
        import kafka_reference as kr
        try:
            ref = kr.KafkaReference(os.path.abspath(args.cache))
        except kr.Unavailable as e:
            print("SKIPPED: %s" % e)
            return h.SKIP
        sasl_port = sc.free_ports(1, taken=(ref.port, ref.controller_port))[0]
        ref.overrides.update(sc.add_kafka_controller(broker_config(ref.port, sasl_port, kafka=True), ref.controller_port))
        try:
            ref.start()
            wait_until(lambda: h.port_accepts(sasl_port), 10, 0.05)
            body(binary, ref.port, sasl_port, None, None, check, venv_python)
        except kr.Unavailable as e:
            print("SKIPPED: %s" % e)
            return h.SKIP
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            check.failures.append("exception: %r" % (e,))
        failed = not check.ok()
        if failed:
            print(ref.log_text()[-6000:])
        ref.close(failed=failed)
        code = check.report()
        print("PASS (Apache Kafka 4.4)" if code == 0 else "FAILED (Apache Kafka 4.4)")
        return code
    certs = tempfile.mkdtemp(prefix="cli-security-certs-")
    p = subprocess.run(["sh", os.path.join(REPO, "tests", "integration", "security", "make_certs.sh"), certs],
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        print("SKIPPED: make_certs.sh failed: %s" % p.stderr.decode()[-500:])
        return h.SKIP
    broker = h.Broker(binary)
    sasl_port, ssl_port = sc.free_ports(2, taken=(broker.port,))
    broker.overrides.update(broker_config(broker.port, sasl_port, ssl_port, certs))
    try:
        broker.start(ready_timeout=30)
        wait_until(lambda: h.port_accepts(sasl_port) and h.port_accepts(ssl_port), 10, 0.05)
        body(binary, broker.port, sasl_port, ssl_port, certs, check, venv_python)
        check.eq(broker.stop(), 0, "broker exit status on SIGTERM")
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        check.failures.append("exception: %r" % (e,))
    failed = not check.ok()
    if failed:
        print(broker.log_text()[-8000:])
    broker.close(failed=failed)
    shutil.rmtree(certs, ignore_errors=True)
    code = check.report()
    print("PASS" if code == 0 else "FAILED")
    return code


if __name__ == "__main__":
    sys.exit(main())
