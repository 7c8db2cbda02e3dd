"""Obtaining and building librdkafka's test-runner (2.0.2 or 2.14.2) for compat/librdkafka/run_suite.py.

The source is Debian's source package (`apt-get source librdkafka=<Debian version>`), fetched through a
private apt configuration under the cache (its own sources.list naming only the deb-src suites that serve
that version, its own lists and archives folders): the system's apt sources are never touched and no root
is needed for it. It is unpacked into the cache and built there once (configure + make libs + make
test-runner, a stamp file recording the options). Unavailable: the source cannot be had (the run is
skipped); BuildFailed: it was had but did not build.
"""
import os
import re
import shutil
import subprocess
import time


class Version:
    """One librdkafka version the suite runs: where Debian serves it and how it is built."""

    def __init__(self, upstream, debian, suites, configure, skip_patches, kafka_version, packages=()):
        self.upstream = upstream          # "2.14.2"
        self.debian = debian              # "2.14.2-1"
        self.suites = suites              # deb-src suites of deb.debian.org that serve it
        self.configure = configure        # ./configure arguments
        self.skip_patches = skip_patches  # unpack without Debian's patches (see below)
        self.kafka_version = kafka_version  # default TEST_KAFKA_VERSION
        self.packages = list(packages)  # Debian build packages beyond BUILD_PACKAGES
        self.src_dir_name = "librdkafka-" + upstream


# Configure options: no TLS / Kerberos / libcurl (no test here can use them against Sluice), no
# optimisation and no debug symbols (the runner builds about twice as fast; tests measure
# behaviour, not speed).
_BASE_CONFIGURE = ["--disable-ssl", "--disable-gssapi", "--disable-curl", "--disable-optimization",
                   "--disable-debug-symbols"]
VERSIONS = {
    # bookworm's own version (Debian 12); TEST_KAFKA_VERSION 3.9.0 as before.
    "2.0.2": Version("2.0.2", "2.0.2-1", ["bookworm"], _BASE_CONFIGURE, False, "3.9.0"),
    # Served by forky (testing) and sid (unstable) as 2.14.2-1 (checked 2026-12-01; trixie has 2.8.0-1).
    # Debian's three patches only unbundle cJSON and nanopb and regenerate the OpenTelemetry (KIP-714)
    # protobuf C files from the opentelemetry-proto package (Debian's rules move src/opentelemetry
    # away and run nanopb_generator); that package is not in bookworm, so the source is unpacked
    # without them (`dpkg-source -x --skip-patches`) and built with the cJSON, nanopb and
    # OpenTelemetry files the upstream tarball bundles. No patch changes behaviour.
    # TEST_KAFKA_VERSION 4.0.0: Sluice's baseline (the API versions Kafka 4.0 serves and newer), and
    # the level at which the suite enables its Kafka-4 paths (0016, 0052, 0081, 0092 test >= 4.0.0).
    # Built with OpenSSL (libssl-dev): 2.14.2's 0064_interceptors makes rd_kafka_new() fail on a bad
    # ssl.ca.location and fails at once when security.protocol=ssl is not even a valid value.
    "2.14.2": Version("2.14.2", "2.14.2-1", ["forky", "sid"],
                      [a for a in _BASE_CONFIGURE if a != "--disable-ssl"], True, "4.0.0",
                      packages=["libssl-dev"]),
}
DEFAULT_VERSION = "2.0.2"


def with_ssl(version):
    """The version built with OpenSSL (run_suite.py --security: TLS, SCRAM and OAUTHBEARER need it). A version
    configured --disable-ssl gets a second build folder, <cache>/librdkafka-<version>-ssl (a copy of the
    unpacked source), so the default build (CI's --quick) is left as it is; 2.14.2 is already built with it."""
    if "--disable-ssl" not in version.configure:
        return version
    v = Version(version.upstream, version.debian, version.suites,
                [a for a in version.configure if a != "--disable-ssl"], version.skip_patches, version.kafka_version,
                packages=list(version.packages) + ["libssl-dev"])
    v.src_dir_name = version.src_dir_name + "-ssl"
    v.copy_of = version
    return v
DEB_MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


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


def apt_options(cache):
    """apt-get/apt-cache options for the private apt folder <cache>/apt (own sources, lists, archives)."""
    d = os.path.join(cache, "apt")
    return ["-o", "Dir::Etc::SourceList=" + os.path.join(d, "sources.list"),
            "-o", "Dir::Etc::SourceParts=" + os.path.join(d, "sources.list.d"),
            "-o", "Dir::State::Lists=" + os.path.join(d, "lists"),
            "-o", "Dir::Cache=" + os.path.join(d, "cache")] + \
        (["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else [])  # _apt may not reach the cache


def prepare_private_apt(cache, version, logf):
    """Writes <cache>/apt/sources.list with deb-src lines for the suites serving `version` and runs
    `apt-get update` on it (the system's sources are neither read nor changed)."""
    d = os.path.join(cache, "apt")
    for sub in ("sources.list.d", "lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    signed = "[signed-by=%s] " % KEYRING if os.path.exists(KEYRING) else ""
    with open(os.path.join(d, "sources.list"), "w") as f:
        f.write("# written by Sluice compat/librdkafka/suite_build.py for librdkafka %s\n" % version.upstream)
        for suite in version.suites:
            f.write("deb-src %s%s %s main\n" % (signed, DEB_MIRROR, suite))
    rc, out = sh(["apt-get"] + apt_options(cache) + ["update", "-q"], 300, logf=logf)
    if rc != 0:
        raise Unavailable("apt-get update (private sources %s) failed: %s" % (" ".join(version.suites),
                                                                           out.strip()[-300:]))


def obtain_source(cache, version, logf):
    """Returns the path of the unpacked librdkafka source of `version` (a Version)."""
    src = os.path.join(cache, version.src_dir_name)
    if os.path.exists(os.path.join(src, "tests", "test.c")):
        return src
    base = getattr(version, "copy_of", None)
    if base is not None:
        # with_ssl(): a copy of the unpacked source without the other build's outputs (built again here).
        got = obtain_source(cache, base, logf)
        tmp = src + ".partial"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(got, tmp, symlinks=True, ignore=shutil.ignore_patterns(
            "*.o", "*.d", "*.a", "*.so", "*.so.*", "test-runner", ".sluice-build-stamp"))
        os.rename(tmp, src)
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
    log("# fetching Debian's source package librdkafka=%s (deb-src %s, private apt folder %s)"
        % (version.debian, " ".join(version.suites), os.path.join(cache, "apt")))
    prepare_private_apt(cache, version, logf)
    dl = os.path.join(cache, "download")
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    cmd = ["apt-get"] + apt_options(cache) + ["source", "-q"]
    if version.skip_patches:
        cmd.append("--download-only")
    rc, out = sh(cmd + ["librdkafka=" + version.debian], 600, cwd=dl, logf=logf)
    if rc != 0:
        raise Unavailable("apt-get source librdkafka=%s failed: %s" % (version.debian, out.strip()[-300:]))
    if version.skip_patches:
        # Unpack without Debian's patches (why: VERSIONS above).
        dsc = os.path.join(dl, "librdkafka_%s.dsc" % version.debian)
        rc, out = sh(["dpkg-source", "-x", "--skip-patches", dsc, version.src_dir_name], 300, cwd=dl, logf=logf)
        if rc != 0:
            raise Unavailable("dpkg-source -x %s failed: %s" % (dsc, out.strip()[-300:]))
    got = os.path.join(dl, version.src_dir_name)
    if not os.path.exists(os.path.join(got, "tests", "test.c")):
        raise Unavailable("apt-get source did not unpack %s" % version.src_dir_name)
    shutil.rmtree(src, ignore_errors=True)
    os.rename(got, src)
    shutil.rmtree(dl, ignore_errors=True)
    return src


# Debian packages the build uses when installed (a subset of both versions' Build-Depends; installed
# when missing and root): rapidjson-dev is header-only, and without it the runner skips the statistics
# checks of 0053, 0098, 0101, 0110; the compression libraries back lz4 and zstd (0017_compression;
# without liblz4-dev librdkafka uses its bundled lz4, without libzstd-dev it has no zstd, without
# zlib1g-dev no gzip).
BUILD_PACKAGES = ["rapidjson-dev", "zlib1g-dev", "libzstd-dev", "liblz4-dev"]


def deb_installed(pkg):
    rc, out = sh(["dpkg-query", "-W", "-f=${Status}", pkg], 30)
    return rc == 0 and "install ok installed" in out


def have_rapidjson():
    return os.path.exists("/usr/include/rapidjson/schema.h")


def build_runner(src, version, jobs, logf):
    """configure + make libs + make -C tests test-runner, once; a stamp records the options."""
    stamp = os.path.join(src, ".sluice-build-stamp")
    runner = os.path.join(src, "tests", "test-runner")
    missing = [p for p in BUILD_PACKAGES + version.packages if not deb_installed(p)]
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        # From the system's own (bookworm) sources; what cannot be installed is built without.
        log("# installing Debian build packages: %s" % " ".join(missing))
        sh(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing, 600,
           logf=logf, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    want = " ".join(version.configure) + " rapidjson=%s\n" % have_rapidjson()
    if os.path.exists(runner) and os.path.exists(stamp) and open(stamp).read() == want:
        return runner
    t0 = time.monotonic()
    log("# building librdkafka %s and its test-runner in %s (-j%d; once, then cached)"
        % (version.upstream, src, jobs))
    steps = []
    if os.path.exists(stamp) or os.path.exists(runner):
        # A previous build with other options: start clean (the Makefiles do not track them).
        steps += [(["make", "clean"], src, 300), (["make", "clean"], os.path.join(src, "tests"), 300)]
        if os.path.exists(stamp):
            os.unlink(stamp)
    steps += [(["./configure"] + version.configure, src, 300),
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
