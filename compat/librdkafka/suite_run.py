"""The librdkafka test table and one run of its test-runner, for compat/librdkafka/run_suite.py:
parse_test_table (tests[] of tests/test.c), read_list (expectations / N/A / known-failure files),
run_number (the runner on one test number, its summary parsed), wait_for_cluster.
"""
import os
import re
import signal
import subprocess
import time

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SUMMARY_LINE = re.compile(r"^\|\s*(\S+)\s*\|\s*(DNS|SKIPPED|RUNNING|PASSED|FAILED)\s*\|\s*([\d.]+)s\s*\|\s?(.*)$")
FAIL_HEADER = re.compile(r'^### Test "([^"]+)" failed at (.*): ###$')


# ---------------------------------------------------------------------------------------------
# The test table


class Test:
    def __init__(self, name, flags, scenario, extra):
        self.name = name
        self.number = name[:4]
        self.flags = flags
        self.scenario = scenario
        self.extra = extra


def parse_test_table(src):
    """The tests[] array of tests/test.c: name, flags, scenario and extra of every test."""
    text = open(os.path.join(src, "tests", "test.c"), encoding="utf-8", errors="replace").read()
    start = text.index("struct test tests[] = {")
    end = text.index("{NULL}", start)
    body = text[start:end]
    tests = []
    parts = re.split(r"\b_TEST\(", body)[1:]
    for p in parts:
        m = re.match(r"\s*(\w+)\s*,\s*([^,)]+)", p)
        if not m:
            continue
        name, flags = m.group(1), m.group(2).strip()
        chunk = p.split("\n#")[0]
        sc = re.search(r'\.scenario\s*=\s*"([^"]*)"', chunk)
        ex = re.search(r'\.extra\s*=\s*((?:"[^"]*"\s*)+)', chunk)
        extra = "".join(re.findall(r'"([^"]*)"', ex.group(1))) if ex else ""
        tests.append(Test(name, flags, sc.group(1) if sc else "default", extra))
    return tests


def read_list(path, with_reason):
    """Lines `name [rest]`; '#' starts a comment. Returns {name: rest}."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.split("#", 1)[0].strip() if not with_reason else line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition(" ")
        out[name] = rest.strip()
    return out


# ---------------------------------------------------------------------------------------------
# Running


def write_test_conf(path, bootstrap, extra=None):
    """test.conf: bootstrap.servers, test.topic.random, then `extra` (run_suite.py --security: security.protocol,
    ssl.*, sasl.*)."""
    with open(path, "w") as f:
        f.write("# written by compat/librdkafka/run_suite.py\n")
        f.write("bootstrap.servers=%s\n" % bootstrap)
        f.write("test.topic.random=true\n")
        for k, v in (extra or {}).items():
            f.write("%s=%s\n" % (k, v))


def run_number(runner, number, scenario, conf_path, kafka_version, timeout, quick_mode, logpath,
               extra_env=None, debian_version=""):
    """Runs the test-runner for one test number; returns {name: (state, secs, text)}, note."""
    tests_dir = os.path.dirname(runner)
    src = os.path.dirname(tests_dir)
    env = dict(os.environ)
    env.update(extra_env or {})
    env.update({
        "TESTS": number,
        "TEST_KAFKA_VERSION": kafka_version,
        "RDKAFKA_TEST_CONF": conf_path,
        "RDKAFKA_GITVER": "debian-" + debian_version,
        "TEST_SCENARIO": scenario,
        "LD_LIBRARY_PATH": os.path.join(src, "src") + ":" + os.path.join(src, "src-cpp"),
    })
    env.pop("CI", None)  # CI=... would make the runner run tests 3 at a time with longer timeouts
    args = [runner, "-p1", "-L", "-E", "-K", "-s", scenario]
    if quick_mode:
        args.append("-Q")
    t0 = time.monotonic()
    note = ""
    with open(logpath, "wb") as out:
        p = subprocess.Popen(args, cwd=tests_dir, env=env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
            if rc < 0:
                note = "crashed (signal %d)" % -rc
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the runner's own process group (start_new_session)
            p.wait()
            note = "killed after the per-test timeout of %d s" % timeout
    secs = time.monotonic() - t0
    text = ANSI.sub("", open(logpath, "rb").read().decode("utf-8", "replace"))
    results = {}
    first_fail = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = SUMMARY_LINE.match(line.strip())
        if m and m.group(1) != "<MAIN>":
            results[m.group(1)] = (m.group(2), float(m.group(3)), m.group(4).strip())
        m = FAIL_HEADER.match(line.strip())
        if m:
            nm = m.group(1).split(" (")[0]
            if nm not in first_fail and i + 1 < len(lines):
                first_fail[nm] = lines[i + 1].strip()
    for nm, msg in first_fail.items():
        st, s, txt = results.get(nm, ("FAILED", secs, ""))
        if st != "PASSED":
            results[nm] = ("FAILED", s, txt or msg)
    return results, note, secs, text


def wait_for_cluster(bootstrap, count, timeout=60):
    """Bounded wait until Metadata through the bootstrap list shows `count` brokers and a controller."""
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        time.sleep(5)
        return
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
            last = (len(md.brokers), md.controller_id)
            if len(md.brokers) >= count and md.controller_id >= 0:
                return
        except Exception as e:  # noqa: BLE001 - not up yet
            last = e
        time.sleep(0.5)
    raise RuntimeError("cluster of %d not formed within %d s (last: %r)" % (count, timeout, last))


def last_lines(text, n=2):
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("|")]
    return " | ".join(lines[-n:])[:300]

