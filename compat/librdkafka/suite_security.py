"""The security mode of compat/librdkafka/run_suite.py (`--security ssl|sasl_plaintext|sasl_ssl`,
`--mechanism`, `--acls`): certificates, the broker settings of Sluice and of the Kafka 4.4 reference, the
test.conf lines and the SSL_* environment librdkafka's tests expect from trivup, and the SCRAM user.

Each node keeps its PLAINTEXT listener (the harness' readiness probe, Kafka's CLI tools through BROKERS,
the SCRAM user's creation) and gets one more listener of the chosen protocol on a free port; test.conf's
bootstrap.servers names only that secure listener, so every client of the suite goes through it.

    certs = Certs(run_dir)                     # make_certs.sh + the DER / PKCS#12 forms (trivup's SSL_* files)
    sec = Security("sasl_ssl", "PLAIN", acls=True, certs=certs)
    overrides.update(sec.broker_overrides(node, secure_port, kafka=False))
    write_test_conf(path, sec.bootstrap, extra=sec.test_conf())
    env.update(sec.env())

The settings are Kafka's own keys, the same for both brokers (trivup's, librdkafka's cluster tool, as far as
the tests look at them):

- TLS: PEM key store `server-chain.pem` (CN=localhost, SAN 127.0.0.1), PEM trust store `ca.pem`,
  `ssl.client.auth=required` broker-wide and `ssl.enabled.protocols=TLSv1.2`, as trivup sets them (trivup:
  TLSv1.2,TLSv1.1,TLSv1; `--override ssl.enabled.protocols=TLSv1.2,TLSv1.3` for TLS 1.3). Kafka applies the broker-wide
  `ssl.client.auth` to SSL listeners only (SASL_SSL ones need `listener.name.<l>.ssl.client.auth`, KIP-684's
  ChannelBuilders warning); 2.14.2's 0097 checks exactly that ("sasl_ssl endpoints don't require SSL
  authentication even when ssl.client.auth=required").
- SASL: `sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER`, one JAAS entry per listener
  and mechanism: PLAIN user admin/admin-secret, SCRAM (users from AlterUserScramCredentials: admin is
  created through the PLAINTEXT listener with Kafka's kafka-configs.sh when the mechanism is SCRAM), unsecured
  OAUTHBEARER.
- ACLs (`--acls`, default with `--security`): Sluice `kafka.security.authorizer.AclAuthorizer`, Kafka (KRaft)
  `org.apache.kafka.metadata.authorizer.StandardAuthorizer`, with `allow.everyone.if.no.acl.found=true` as
  trivup sets it: every test keeps its rights on resources without ACLs while CreateAcls/DescribeAcls/DeleteAcls
  are served, and the test user (admin) is not a super user, because 2.14.2's 0081 checks the authorized
  operations of that very principal after giving it one ACL. `super.users=User:ANONYMOUS` (the PLAINTEXT
  listener: the harness, Kafka's CLI tools through BROKERS, Kafka's controller and inter-broker traffic);
  with `--acls` alone, where every client is User:ANONYMOUS, no super user, so the deny ACLs of
  0109/0115/0119 (kafka-acls.sh) apply. `--override super.users=...` replaces it.
"""
import os
import shutil
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MAKE_CERTS = os.path.join(REPO, "tests", "integration", "security", "make_certs.sh")

PROTOCOLS = ["ssl", "sasl_plaintext", "sasl_ssl"]
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
USER, PASSWORD = "admin", "admin-secret"
KEY_PASSWORD = "client-key-pass"  # the PKCS#12 file's password = ssl.key.password = SSL_password
SLUICE_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
KAFKA_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class Certs:
    """A throwaway CA and certificates (tests/integration/security/make_certs.sh) in <folder>, plus the forms
    librdkafka's 0097_ssl_verify reads through trivup's SSL_* variables (DER, PKCS#12, a two-CA PEM)."""

    def __init__(self, folder):
        self.dir = folder
        os.makedirs(folder, exist_ok=True)
        p = subprocess.run(["sh", MAKE_CERTS, folder], capture_output=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("make_certs.sh failed: %s" % p.stderr.decode("utf-8", "replace"))
        steps = [
            ["openssl", "x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"],
            ["openssl", "x509", "-in", "client.pem", "-outform", "DER", "-out", "client.der"],
            ["openssl", "pkey", "-in", "client.key", "-outform", "DER", "-out", "client.key.der"],
            # certificate + key + the CA (0097 reads the CA back from it too), password-protected as trivup's
            ["openssl", "pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-certfile", "ca.pem",
             "-passout", "pass:" + KEY_PASSWORD, "-out", "client.p12"],
        ]
        for cmd in steps:
            p = subprocess.run(cmd, cwd=folder, capture_output=True, timeout=60)
            if p.returncode != 0:
                raise RuntimeError("%s failed: %s" % (" ".join(cmd), p.stderr.decode("utf-8", "replace")))
        with open(self.path("all-cas.pem"), "w") as out:  # "contains multiple CA certs"
            for name in ("ca.pem", "other-ca.pem"):
                with open(self.path(name)) as f:
                    out.write(f.read())

    def path(self, name):
        return os.path.join(self.dir, name)


class Security:
    def __init__(self, protocol, mechanism, acls, certs):
        assert protocol in PROTOCOLS or protocol == "plaintext", protocol  # plaintext: --acls alone
        self.protocol = protocol              # lower case, as librdkafka's conf_get returns it
        self.listener = protocol.upper()      # listener name = its protocol
        self.mechanism = mechanism if self.sasl else None
        self.acls = acls
        self.certs = certs

    @property
    def sasl(self):
        return self.protocol.startswith("sasl")

    @property
    def tls(self):
        return self.protocol.endswith("ssl")

    def describe(self):
        return "security.protocol=%s%s%s" % (self.protocol, " sasl.mechanism=%s" % self.mechanism if self.sasl else "",
                                             "; ACLs: %s" % ("an authorizer, allow.everyone.if.no.acl.found=true, super.users=%s"
                                                            % (self.super_users() or "(none)") if self.acls else "none"))

    def super_users(self):
        # PLAINTEXT (the harness, Kafka's CLI tools through BROKERS, Kafka's controller and inter-broker
        # listener) is User:ANONYMOUS; with --acls alone every client is, and then it must not be a super user
        # for the deny ACLs of 0109/0115/0119 to apply
        return "User:ANONYMOUS" if self.protocol != "plaintext" else None

    def broker_overrides(self, plaintext_port, secure_port, kafka, controller_port=None):
        """The settings a node gets on top of the run's own (Kafka's keys; same values for both brokers)."""
        l = self.listener
        ll = l.lower()
        listeners = ["PLAINTEXT://127.0.0.1:%d" % plaintext_port, "%s://127.0.0.1:%d" % (l, secure_port)]
        pmap = ["PLAINTEXT:PLAINTEXT", "%s:%s" % (l, l)]
        if kafka:
            listeners.append("CONTROLLER://127.0.0.1:%d" % controller_port)
            pmap.append("CONTROLLER:PLAINTEXT")
        o = {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(pmap),
            "inter.broker.listener.name": "PLAINTEXT",
        }
        if self.tls:
            o.update({
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": self.certs.path("server-chain.pem"),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": self.certs.path("ca.pem"),
                "ssl.client.auth": "required",
                # trivup's ssl.enabled.protocols (TLSv1.2 and older, of which Java 17 and Sluice keep 1.2): the
                # broker checks the client certificate inside the handshake, so a refused one fails it (_SSL with
                # the alert), as 2.14.2's 0097 expects; under TLS 1.3 the refusal comes after the client's
                # handshake is done and reaches the client as a transport error (_TRANSPORT) on both brokers
                "ssl.enabled.protocols": "TLSv1.2",
            })
        if self.sasl:
            o["sasl.enabled.mechanisms"] = ",".join(MECHANISMS)
            o["listener.name.%s.plain.sasl.jaas.config" % ll] = (
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";' % (USER, PASSWORD))
            for m in ("scram-sha-256", "scram-sha-512"):
                o["listener.name.%s.%s.sasl.jaas.config" % (ll, m)] = \
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            o["listener.name.%s.oauthbearer.sasl.jaas.config" % ll] = (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="%s";' % USER)
        if self.acls:
            o["authorizer.class.name"] = KAFKA_AUTHORIZER if kafka else SLUICE_AUTHORIZER
            # trivup's: a resource without ACLs is open to everyone, the test user is no super user (2.14.2's
            # 0081 gives it one READ ACL on a topic and expects exactly READ and DESCRIBE back as its authorized
            # operations there)
            o["allow.everyone.if.no.acl.found"] = "true"
            if self.super_users():
                o["super.users"] = self.super_users()
        return o

    def test_conf(self):
        """test.conf lines after bootstrap.servers (as trivup's LibrdkafkaTestApp writes them)."""
        c = {"security.protocol": self.protocol}
        if self.tls:
            c.update({"ssl.ca.location": self.certs.path("ca.pem"),
                      "ssl.certificate.location": self.certs.path("client.pem"),
                      "ssl.key.location": self.certs.path("client.key"),
                      "ssl.key.password": KEY_PASSWORD})
        if self.sasl:
            c["sasl.mechanisms"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                c["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
                c["sasl.oauthbearer.config"] = "principal=%s scope=requiredScope" % USER
            else:
                c["sasl.username"] = USER
                c["sasl.password"] = PASSWORD
        return c

    def env(self):
        """trivup's SSL_* variables (0097_ssl_verify), only with TLS."""
        if not self.tls:
            return {}
        p = self.certs.path
        return {"SSL_pkcs": p("client.p12"), "SSL_password": KEY_PASSWORD,
                "SSL_pub_der": p("client.der"), "SSL_pub_pem": p("client.pem"),
                "SSL_priv_der": p("client.key.der"), "SSL_priv_pem": p("client.key"),
                "SSL_ca_der": p("ca.der"), "SSL_ca_pem": p("ca.pem"), "SSL_all_cas_pem": p("all-cas.pem"),
                "SSL_client_auth": "required"}

    def add_scram_user(self, kafka_path, plaintext_bootstrap, logf=None, timeout=120):
        """Creates the SCRAM user (both SHA mechanisms) through the PLAINTEXT listener with kafka-configs.sh;
        waits until it is described (bounded)."""
        if not (self.sasl and self.mechanism.startswith("SCRAM")):
            return
        if not kafka_path:
            raise RuntimeError("--mechanism %s needs KAFKA_PATH (Kafka's kafka-configs.sh) to create the SCRAM user"
                               % self.mechanism)
        tool = os.path.join(kafka_path, "bin", "kafka-configs.sh")
        deadline = time.monotonic() + timeout
        # one request per mechanism: Kafka refuses a user named twice in one AlterUserScramCredentials
        # (DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same request"), as Sluice does
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            cmd = [tool, "--bootstrap-server", plaintext_bootstrap, "--alter", "--add-config",
                   "%s=[iterations=4096,password=%s]" % (mech, PASSWORD), "--entity-type", "users",
                   "--entity-name", USER]
            last = ""
            for _ in range(3):  # the node may still be settling (Kafka: metadata not yet published)
                p = subprocess.run(cmd, capture_output=True, timeout=max(10, deadline - time.monotonic()))
                last = (p.stdout + p.stderr).decode("utf-8", "replace").strip()
                if logf:
                    logf.write("$ %s\n%s\n" % (" ".join(cmd), last))
                if p.returncode == 0:
                    break
                time.sleep(2)
            else:
                raise RuntimeError("kafka-configs.sh could not create the %s user %s: %s" % (mech, USER, last[-500:]))
        d = [tool, "--bootstrap-server", plaintext_bootstrap, "--describe", "--entity-type", "users",
             "--entity-name", USER]
        while time.monotonic() < deadline:
            p = subprocess.run(d, capture_output=True, timeout=max(10, deadline - time.monotonic()))
            if b"SCRAM-SHA-512" in p.stdout:
                return
            time.sleep(1)
        raise RuntimeError("SCRAM user %s not described within %d s" % (USER, timeout))

