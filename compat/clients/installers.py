"""Installs the client matrix's third-party clients into the cache, from pinned manifests.

Nothing installed here is committed: everything lands under <cache> (default
<repo>/build/compat-cache, gitignored). Each installer is idempotent (a stamp file records the
digest of the manifest it was made from, so an edited manifest re-installs), serialised by a file
lock per cache folder, and raises:

  Unavailable  the toolchain is missing or its registry cannot be reached: the rows SKIP, with why
  SetupFailed  anything else (a broken manifest, a compile error): the rows FAIL, with why

| installer | manifest | registry | result |
|---|---|---|---|
| java()    | java/pom.xml                  | Maven Central (mvn, ~/.m2)  | <cache>/java-clients-4.4.0/{libs,classes} |
| java_security() | java/pom.xml, java/SecurityClient.java | (java()'s jars) | <cache>/java-clients-4.4.0/security-classes |
| go()      | go/go.mod, go/go.sum          | Go module proxy (go)        | <cache>/go/bin/<driver> (GOMODCACHE, GOCACHE in <cache>/go) |
| venv()    | python/requirements.txt (hashes) | PyPI (pip in a venv)     | <cache>/pyvenv/bin/python |
| node()    | node/package.json, package-lock.json | npm registry (npm ci) | <cache>/node/node_modules |
"""
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ANSI = re.compile(r"\x1b\[[0-9;]*m")
INSTALL_TIMEOUT = 900  # seconds for one download/build command

# What a package tool prints when its registry cannot be reached (as opposed to a broken manifest).
NETWORK_HINTS = re.compile(
    r"No plugin found for prefix|Could not transfer|Could not resolve|could not be resolved|UnknownHost|"
    r"Unknown host|Connection refused|Connect to .* failed|timed out|i/o timeout|Network is unreachable|"
    r"No route to host|offline mode|Temporary failure in name resolution|PKIX|dial tcp|lookup .* on|"
    r"proxy\.golang|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|"
    r"Could not find a version that satisfies|No matching distribution|Max retries exceeded|"
    r"NewConnectionError|ProxyError|SSLError", re.I)


class Unavailable(Exception):
    """The client cannot be had here (toolchain missing, registry unreachable): SKIP."""


class SetupFailed(Exception):
    """Installing or building the client failed for another reason: FAIL."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def digest(*paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _stamp_ok(stamp, want):
    try:
        with open(stamp) as f:
            return f.read().strip() == want
    except OSError:
        return False


def _write(path, text):
    with open(path, "w") as f:
        f.write(text + "\n")


def _run(cmd, what, cwd=None, env=None, logfile=None, timeout=INSTALL_TIMEOUT):
    """Runs an install command; raises Unavailable (network) or SetupFailed (anything else)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError as e:
        raise Unavailable("%s: %s" % (what, e))
    except subprocess.TimeoutExpired:
        raise Unavailable("%s did not finish within %d s (registry slow or unreachable)" % (what, timeout))
    out = ANSI.sub("", p.stdout.decode("utf-8", "replace"))
    if logfile:
        with open(logfile, "a") as f:
            f.write("$ %s\n%s\n" % (" ".join(cmd), out))
    if p.returncode != 0:
        lines = [l.strip() for l in out.splitlines() if l.strip()]
        errs = [l for l in lines if re.search(r"error|fail", l, re.I)] or lines[-3:]
        text = " | ".join(errs[:3])[:500]
        if NETWORK_HINTS.search(out):
            raise Unavailable("%s could not reach its registry: %s" % (what, text))
        raise SetupFailed("%s failed (exit %d%s): %s" % (what, p.returncode,
                                                          "; log " + logfile if logfile else "", text))
    return out


class _Lock:
    def __init__(self, folder):
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, ".lock")

    def __enter__(self):
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


# ---- Java: kafka-clients 4.4.0 and kafka-streams 4.4.0 ----

JAVA_POM = os.path.join(HERE, "java", "pom.xml")
JAVA_SOURCES = [os.path.join(HERE, "java", n) for n in ("JavaClient.java", "StreamsWordCount.java")]


def _kafka_dist():
    """compat/kafka/kafka_dist.py: Java and Maven, shared with the Kafka reference broker."""
    sys.path.insert(0, os.path.join(REPO, "compat", "kafka"))
    import kafka_dist
    return kafka_dist


def find_java():
    kd = _kafka_dist()
    try:
        return kd.find_java()
    except kd.Unavailable as e:
        raise Unavailable(str(e))


def _mvn_copy_command(pom, out_dir):
    """kafka_dist.mvn_copy_command (the pinned dependency plugin, $SLUICE_MAVEN_REPO/FLAGS); no mvn: Unavailable."""
    kd = _kafka_dist()
    try:
        return kd.mvn_copy_command(pom, out_dir)
    except kd.Unavailable as e:
        raise Unavailable(str(e))


def java(cache):
    """Returns (java executable, classpath) with the pinned jars and the compiled drivers."""
    # Absolute: Maven resolves a relative -DoutputDirectory against the pom's folder, not the working directory.
    home = os.path.join(os.path.abspath(cache), "java-clients-4.4.0")
    libs, classes = os.path.join(home, "libs"), os.path.join(home, "classes")
    java_bin = find_java()
    javac = os.path.join(os.path.dirname(os.path.realpath(java_bin)), "javac")
    if not os.access(javac, os.X_OK):
        javac = shutil.which("javac")
    if not javac:
        raise Unavailable("no javac next to %s (apt-get install openjdk-17-jdk-headless)" % java_bin)
    with _Lock(home):
        want = digest(JAVA_POM)
        if not _stamp_ok(os.path.join(libs, ".pom-sha256"), want):
            tmp = libs + ".partial"
            cmd = _mvn_copy_command(JAVA_POM, tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            log("# fetching kafka-clients/kafka-streams 4.4.0 jars (once per cache)")
            _run(cmd, "mvn dependency:copy-dependencies", logfile=os.path.join(home, "mvn.log"))
            if not glob.glob(os.path.join(tmp, "kafka-clients-*.jar")):
                raise SetupFailed("mvn copied no kafka-clients jar into " + tmp)
            _write(os.path.join(tmp, ".pom-sha256"), want)
            shutil.rmtree(libs, ignore_errors=True)
            os.rename(tmp, libs)
        want_src = digest(JAVA_POM, *JAVA_SOURCES)
        if not _stamp_ok(os.path.join(classes, ".src-sha256"), want_src):
            shutil.rmtree(classes, ignore_errors=True)
            os.makedirs(classes)
            _run([javac, "-nowarn", "-d", classes, "-cp", os.path.join(libs, "*")] + JAVA_SOURCES, "javac")
            _write(os.path.join(classes, ".src-sha256"), want_src)
    return java_bin, os.path.join(libs, "*") + os.pathsep + classes


def java_program(cache, src, classes_name):
    """Returns (java executable, classpath) for one Java source file `src` compiled on its own against the jars of
    java() into <cache>/java-clients-4.4.0/<classes_name> (recompiled when it or the pom changes; the matrix's
    classes are left as they are). java() has made sure javac exists."""
    java_bin, _ = java(cache)
    home = os.path.join(os.path.abspath(cache), "java-clients-4.4.0")
    libs, classes = os.path.join(home, "libs"), os.path.join(home, classes_name)
    javac = os.path.join(os.path.dirname(os.path.realpath(java_bin)), "javac")
    if not os.access(javac, os.X_OK):
        javac = shutil.which("javac")
    with _Lock(home):
        want = digest(JAVA_POM, src)
        if not _stamp_ok(os.path.join(classes, ".src-sha256"), want):
            shutil.rmtree(classes, ignore_errors=True)
            os.makedirs(classes)
            _run([javac, "-nowarn", "-d", classes, "-cp", os.path.join(libs, "*"), src],
                 "javac " + os.path.basename(src))
            _write(os.path.join(classes, ".src-sha256"), want)
    return java_bin, os.path.join(libs, "*") + os.pathsep + classes


def java_security(cache):
    """Returns (java executable, classpath) for java/SecurityClient.java (tests/integration/security)."""
    return java_program(cache, os.path.join(HERE, "java", "SecurityClient.java"), "security-classes")


# ---- Go: franz-go, sarama, kafka-go, confluent-kafka-go ----

GO_DIR = os.path.join(HERE, "go")


def go_env(cache):
    env = dict(os.environ)
    gohome = os.path.join(cache, "go")
    env.update({"GOMODCACHE": os.path.join(gohome, "mod"), "GOCACHE": os.path.join(gohome, "build"),
                "GOPATH": os.path.join(gohome, "path"), "GOFLAGS": "-modcacherw -mod=readonly",
                "GOTOOLCHAIN": env.get("GOTOOLCHAIN", "local")})
    return env


def go(cache, name):
    """Builds compat/clients/go/<name> into <cache>/go/bin/<name>; returns its path."""
    gobin = shutil.which("go")
    if gobin is None:
        raise Unavailable("the Go toolchain is not installed (go)")
    gohome = os.path.join(cache, "go")
    exe = os.path.join(gohome, "bin", name)
    srcs = sorted(glob.glob(os.path.join(GO_DIR, "*", "*.go")))
    want = digest(os.path.join(GO_DIR, "go.mod"), os.path.join(GO_DIR, "go.sum"), *srcs)
    with _Lock(gohome):
        if _stamp_ok(exe + ".sha256", want) and os.access(exe, os.X_OK):
            return exe
        env = go_env(cache)
        logf = os.path.join(gohome, "go.log")
        # Only the modules this driver's packages need (`go mod download` would fetch every module
        # of the graph, test-only ones included); a failure here is the registry, not the code.
        _run([gobin, "list", "-deps", "./" + name], "go list -deps ./" + name + " (module download)",
             cwd=GO_DIR, env=env, logfile=logf)
        log("# building Go driver %s" % name)
        _run([gobin, "build", "-o", exe, "./" + name], "go build ./" + name, cwd=GO_DIR, env=env, logfile=logf)
        _write(exe + ".sha256", want)
    return exe


# ---- Python clients of PyPI in a venv: kafka-python 3, aiokafka, confluent-kafka 2 ----

REQUIREMENTS = os.path.join(HERE, "python", "requirements.txt")


def venv(cache):
    """Makes <cache>/pyvenv from python/requirements.txt (pip --require-hashes); returns its python."""
    home = os.path.join(cache, "pyvenv")
    py = os.path.join(home, "bin", "python")
    want = digest(REQUIREMENTS)
    with _Lock(cache + "/pyvenv-lock"):
        if _stamp_ok(os.path.join(home, ".requirements-sha256"), want) and os.access(py, os.X_OK):
            return py
        shutil.rmtree(home, ignore_errors=True)
        base = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        try:
            _run([base, "-m", "venv", home], "python3 -m venv")
        except SetupFailed as e:
            if "ensurepip" not in str(e):
                raise
            if os.geteuid() != 0 or shutil.which("apt-get") is None:
                raise Unavailable("python3 -m venv needs Debian's python3-venv (apt-get install python3-venv)")
            ver = "%d.%d" % sys.version_info[:2] if base == sys.executable else ""
            pkgs = ["python3-venv"] + (["python%s-venv" % ver] if ver else [])
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            try:
                _run(["apt-get", "install", "-y", "-q"] + pkgs, "apt-get install python3-venv", env=env)
            except (SetupFailed, Unavailable):  # empty or stale package lists on a fresh machine
                try:
                    _run(["apt-get", "update", "-q"], "apt-get update", env=env)
                    _run(["apt-get", "install", "-y", "-q"] + pkgs, "apt-get install python3-venv", env=env)
                except SetupFailed as e:
                    raise Unavailable("python3 -m venv needs Debian's python3-venv, which apt-get could not "
                                      "install: %s" % e)
            shutil.rmtree(home, ignore_errors=True)
            _run([base, "-m", "venv", home], "python3 -m venv")
        log("# installing the venv's Kafka clients from PyPI (once per cache)")
        _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input",
              "--require-hashes", "--only-binary", ":all:", "-r", REQUIREMENTS],
             "pip install -r python/requirements.txt", logfile=os.path.join(cache, "pyvenv-pip.log"))
        _write(os.path.join(home, ".requirements-sha256"), want)
    return py


# ---- Node: kafkajs and @platformatic/kafka ----

NODE_DIR = os.path.join(HERE, "node")


def node(cache):
    """npm ci of node/package-lock.json into <cache>/node; copies the drivers there; returns
    (node executable, folder)."""
    nodebin, npm = shutil.which("node"), shutil.which("npm")
    if nodebin is None or npm is None:
        raise Unavailable("Node.js / npm is not installed")
    home = os.path.join(cache, "node")
    with _Lock(home):
        want = digest(os.path.join(NODE_DIR, "package.json"), os.path.join(NODE_DIR, "package-lock.json"))
        if not (_stamp_ok(os.path.join(home, ".lock-sha256"), want)
                and os.path.isdir(os.path.join(home, "node_modules"))):
            for n in ("package.json", "package-lock.json"):
                shutil.copy(os.path.join(NODE_DIR, n), os.path.join(home, n))
            log("# npm ci for the Node drivers (once per cache)")
            _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], "npm ci", cwd=home,
                 logfile=os.path.join(home, "npm.log"))
            _write(os.path.join(home, ".lock-sha256"), want)
        for src in glob.glob(os.path.join(NODE_DIR, "*.js")) + glob.glob(os.path.join(NODE_DIR, "*.mjs")):
            shutil.copy(src, os.path.join(home, os.path.basename(src)))
    return nodebin, home
