"""Obtaining and building librdkafka 2.0.2's test-runner for compat/librdkafka/run_suite.py.

The source is Debian's source package (`apt-get source librdkafka`, a deb-src entry added when apt has
none and this is root), unpacked into the cache and built there once (configure + make libs + make
test-runner, a stamp file recording the options). Unavailable: the source cannot be had (the run is
skipped); BuildFailed: it was had but did not build.
"""
import os
import re
import shutil
import subprocess
import time

RDKAFKA_VERSION = "2.0.2"
DEBIAN_VERSION = "2.0.2-1"
SRC_DIR_NAME = "librdkafka-" + RDKAFKA_VERSION
# Configure options: no TLS / Kerberos / libcurl (no test here can use them against Sluice), no
# optimisation and no debug symbols (the runner builds about twice as fast; tests measure
# behaviour, not speed).
CONFIGURE_ARGS = ["--disable-ssl", "--disable-gssapi", "--disable-curl", "--disable-optimization",
                  "--disable-debug-symbols"]
DEB_SRC_FILE = "/etc/apt/sources.list.d/sluice-deb-src.sources"


def log(msg):
    print(msg, flush=True)


class Unavailable(Exception):
    """The source package cannot be obtained: the run is skipped, not failed."""


class BuildFailed(Exception):
    """The source was obtained but configure or make failed (the message ends with its last lines)."""


# ---------------------------------------------------------------------------------------------
# Obtaining and building the source


def sh(cmd, timeout, cwd=None, logf=None, env=None):
    """Runs cmd; returns (rc, output). Output also appended to logf when given."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        out = p.stdout.decode("utf-8", "replace")
        rc = p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") + "\n[timed out after %d s]" % timeout
        rc = -1
    except FileNotFoundError as e:
        out, rc = str(e), -2
    if logf is not None:
        logf.write("$ %s\n%s\n" % (" ".join(cmd), out))
        logf.flush()
    return rc, out


def ensure_deb_src(logf):
    """Adds a deb-src entry for the running Debian suite when apt has none (needs root)."""
    rc, out = sh(["apt-get", "source", "--print-uris", "librdkafka"], 120, logf=logf)
    if rc == 0:
        return
    if "deb-src" not in out and "source" not in out.lower():
        raise Unavailable("apt-get source --print-uris librdkafka failed: %s" % out.strip()[-300:])
    if os.geteuid() != 0:
        raise Unavailable("apt has no deb-src entry and this is not root: add one (see %s)" % DEB_SRC_FILE)
    codename = "bookworm"
    try:
        with open("/etc/os-release") as f:
            m = re.search(r"^VERSION_CODENAME=(\w+)", f.read(), re.M)
            if m:
                codename = m.group(1)
    except OSError:
        pass
    log("# adding %s (deb-src for %s) and running apt-get update" % (DEB_SRC_FILE, codename))
    with open(DEB_SRC_FILE, "w") as f:
        f.write("# Added by Sluice compat/librdkafka/run_suite.py for `apt-get source librdkafka`.\n"
                "Types: deb-src\nURIs: http://deb.debian.org/debian\n"
                "Suites: %s %s-updates\nComponents: main\n"
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n" % (codename, codename))
    rc, out = sh(["apt-get", "update", "-q"], 300, logf=logf)
    if rc != 0:
        raise Unavailable("apt-get update failed: %s" % out.strip()[-300:])


def obtain_source(cache, logf):
    """Returns the path of the unpacked librdkafka source (Debian patches applied)."""
    src = os.path.join(cache, SRC_DIR_NAME)
    if os.path.exists(os.path.join(src, "tests", "test.c")):
        return src
    if shutil.which("apt-get") is None:
        raise Unavailable("no apt-get: not a Debian system")
    if shutil.which("dpkg-source") is None:
        if os.geteuid() != 0:
            raise Unavailable("dpkg-source missing (apt-get install dpkg-dev)")
        rc, out = sh(["apt-get", "install", "-y", "-q", "--no-install-recommends", "dpkg-dev"], 600,
                     logf=logf, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        if rc != 0:
            raise Unavailable("cannot install dpkg-dev: %s" % out.strip()[-300:])
    ensure_deb_src(logf)
    dl = os.path.join(cache, "download")
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    rc, out = sh(["apt-get", "source", "-q", "librdkafka=" + DEBIAN_VERSION], 600, cwd=dl, logf=logf)
    if rc != 0:
        raise Unavailable("apt-get source librdkafka=%s failed: %s" % (DEBIAN_VERSION, out.strip()[-300:]))
    got = os.path.join(dl, SRC_DIR_NAME)
    if not os.path.exists(os.path.join(got, "tests", "test.c")):
        raise Unavailable("apt-get source did not unpack %s" % SRC_DIR_NAME)
    shutil.rmtree(src, ignore_errors=True)
    os.rename(got, src)
    shutil.rmtree(dl, ignore_errors=True)
    return src


def have_rapidjson():
    return os.path.exists("/usr/include/rapidjson/schema.h")


def build_runner(src, jobs, logf):
    """configure + make libs + make -C tests test-runner, once; a stamp records the options."""
    stamp = os.path.join(src, ".sluice-build-stamp")
    runner = os.path.join(src, "tests", "test-runner")
    if not have_rapidjson() and os.geteuid() == 0 and shutil.which("apt-get"):
        # Header-only; without it the runner skips the statistics checks of 0053, 0098, 0101, 0110.
        sh(["apt-get", "install", "-y", "-q", "--no-install-recommends", "rapidjson-dev"], 300,
           logf=logf, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    want = " ".join(CONFIGURE_ARGS) + " rapidjson=%s\n" % have_rapidjson()
    if os.path.exists(runner) and os.path.exists(stamp) and open(stamp).read() == want:
        return runner
    t0 = time.monotonic()
    log("# building librdkafka %s and its test-runner in %s (-j%d; once, then cached)"
        % (RDKAFKA_VERSION, src, jobs))
    steps = []
    if os.path.exists(stamp) or os.path.exists(runner):
        # A previous build with other options: start clean (the Makefiles do not track them).
        steps += [(["make", "clean"], src, 300), (["make", "clean"], os.path.join(src, "tests"), 300)]
        if os.path.exists(stamp):
            os.unlink(stamp)
    steps += [(["./configure"] + CONFIGURE_ARGS, src, 300),
             (["make", "-j%d" % jobs, "libs"], src, 1800),
             (["make", "-j%d" % jobs, "test-runner"], os.path.join(src, "tests"), 1800)]
    for cmd, cwd, tmo in steps:
        rc, out = sh(cmd, tmo, cwd=cwd, logf=logf)
        if rc != 0:
            tail = "\n".join(out.strip().splitlines()[-15:])
            raise BuildFailed("%s failed (exit %d):\n%s" % (" ".join(cmd), rc, tail))
    with open(stamp, "w") as f:
        f.write(want)
    log("# built in %.0f s" % (time.monotonic() - t0))
    return runner
