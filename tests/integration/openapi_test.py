#!/usr/bin/env python3
"""The HTTP side against its OpenAPI file (issue #18): broker/http/openapi.yaml is the contract, both ways.

  1. The file: OpenAPI 3.1, every schema a valid JSON Schema (Draft 2020-12), every example valid against its schema.
  2. A broker (sluice.test.faults.enable=true) filled with real data by kcat: topic oa-orders (3 partitions, 30
     keyed records with a header, Java's murmur2 partitioner), a consumer group committed by `kcat -G -e`, and a
     live `kcat -G` member. Then every operation of the file is called, at least once with success and once with an
     error; every answer's status must be declared for that operation and its body must validate against the
     schema declared for that status (204: empty; HEAD: empty). Request bodies and query values are checked against
     the file too: what the broker accepts must validate, what it refuses as INVALID_REQUEST must not (except the
     refusals no schema can express, marked "semantic"). The values are checked as well: records read over HTTP
     are those kcat wrote and read, HTTP produce picks kcat's partitions for the same keys, committed offsets and lag
     match the log, resets land where asked.
  3. A second broker with an authorizer and no test controls: 403 from the ACLs (User:ANONYMOUS) and from
     FAULTS_DISABLED / TEST_CONTROLS_DISABLED.
  4. The reverse direction: every method the file does not document on a documented path is 405, HEAD answers as
     GET without a body, and a sample of undocumented paths is 404 (all with the Error schema).

Prints `PASS|FAIL <check>: <detail>` per check. Exit 0 pass, 1 fail, 77 skipped (no broker binary, no kcat, or no
python3-yaml / python3-jsonschema). About 15 s.

Usage: /usr/bin/python3 openapi_test.py --broker build-tests/broker/sluice
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SPEC = os.path.join(REPO, "broker", "http", "openapi.yaml")
sys.path.insert(0, HERE)
import sluice_harness as h  # noqa: E402

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
TOPIC = "oa-orders"
SMALL = "oa-small"
GROUP = "oa-group"
LIVE = "oa-live"


class Failed(Exception):
    pass


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        line = "%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else "")
        print(line if len(line) < 2000 else line[:2000] + "...", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def short(v, n=300):
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


class Spec:
    """The OpenAPI document: operations by (path template, method), schemas by JSON pointer."""

    def __init__(self, path):
        import yaml
        import jsonschema
        self.jsonschema = jsonschema
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.V = jsonschema.Draft202012Validator
        self._registry = None
        try:  # jsonschema >= 4.18
            from referencing import Registry, Resource
            from referencing.jsonschema import DRAFT202012
            self._registry = Registry().with_resource(
                "urn:sluice:openapi", Resource.from_contents(self.doc, default_specification=DRAFT202012))
        except ImportError:
            pass
        self.templates = []
        for tpl in self.doc["paths"]:
            parts = tpl.strip("/").split("/")
            rx = "^/" + "/".join("(?P<%s>[^/]+)" % p[1:-1] if p.startswith("{") else re.escape(p) for p in parts) + "$"
            self.templates.append((tpl, re.compile(rx), sum(1 for p in parts if not p.startswith("{"))))
        self.templates.sort(key=lambda t: -t[2])

    def pointer(self, ptr):
        node = self.doc
        for tok in ptr.lstrip("/").split("/"):
            if tok == "":
                continue
            tok = tok.replace("~1", "/").replace("~0", "~")
            node = node[int(tok)] if isinstance(node, list) else node[tok]
        return node

    @staticmethod
    def esc(s):
        return s.replace("~", "~0").replace("/", "~1")

    def deref(self, obj, ptr):
        while isinstance(obj, dict) and "$ref" in obj:
            ptr = obj["$ref"][1:]
            obj = self.pointer(ptr)
        return obj, ptr

    def validator(self, ptr):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if self._registry is not None:
                return self.V({"$ref": "urn:sluice:openapi#" + ptr}, registry=self._registry)
            return self.V({"$ref": "#" + ptr}, resolver=self.jsonschema.RefResolver("", self.doc))

    def errors(self, ptr, instance):
        """Validation errors of `instance` against the schema at `ptr` (a list of strings; empty: valid)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            errs = sorted(self.validator(ptr).iter_errors(instance), key=lambda e: list(e.absolute_path))
        return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message[:300]) for e in errs]

    def match(self, path):
        for tpl, rx, _ in self.templates:
            m = rx.match(path)
            if m:
                return tpl, m.groupdict()
        return None, {}

    def head_as_get(self, tpl):
        return self.doc["paths"][tpl].get("x-head-as-get", True) is not False

    def operation(self, tpl, method):
        m = method.lower()
        item = self.doc["paths"][tpl]
        if m not in item or m == "parameters" or m.startswith("x-"):
            return None
        return item[m]

    def operations(self):
        for tpl, item in self.doc["paths"].items():
            for m in item:
                if m in ("get", "put", "post", "delete", "options", "head", "patch", "trace"):
                    yield tpl, m.upper()

    def parameters(self, tpl, method):
        """{(in, name): pointer of the parameter's schema} for the operation."""
        out = {}
        base = "/paths/" + self.esc(tpl)
        item = self.doc["paths"][tpl]
        for where, lst in (("", item.get("parameters", [])), ("/" + method.lower(), item.get(method.lower(), {}).get("parameters", []))):
            for i, p in enumerate(lst):
                p, ptr = self.deref(p, "%s%s/parameters/%d" % (base, where, i))
                out[(p["in"], p["name"])] = ptr + "/schema"
        return out

    def request_schema(self, tpl, method):
        op = self.operation(tpl, method)
        if op is None or "requestBody" not in op:
            return None
        rb, ptr = self.deref(op["requestBody"], "/paths/%s/%s/requestBody" % (self.esc(tpl), method.lower()))
        return ptr + "/content/application~1json/schema"

    def response(self, tpl, method, status):
        """(response object, its pointer) declared for this status, or (None, None). `default` does not count."""
        op = self.operation(tpl, method)
        r = op.get("responses", {}).get(str(status))
        if r is None:
            return None, None
        return self.deref(r, "/paths/%s/%s/responses/%d" % (self.esc(tpl), method.lower(), status))


class Api:
    """HTTP calls to one broker, each checked against the spec."""

    def __init__(self, spec, report, port, name):
        self.spec, self.r, self.port, self.name = spec, report, port, name
        self.coverage = {}  # (tpl, METHOD) -> {"ok", "err"}
        self.seen_405 = set()  # templates where an undocumented method was answered 405

    def raw(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def call(self, method, path, body=None, expect=None, what="", semantic=False, error=None):
        """One request. `expect`: the status (or statuses) wanted; `error`: the `error` name wanted.
        `semantic`: an INVALID_REQUEST the schemas cannot express. Returns (status, parsed body)."""
        raw_body = None
        if body is not None:
            raw_body = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(raw_body, str):
                raw_body = raw_body.encode()
        status, hdrs, data = self.raw(method, path, raw_body, {"Content-Type": "application/json"} if raw_body is not None else None)
        label = "%s %s %s%s" % (self.name, method, short(path, 120), (" (%s)" % what) if what else "")
        route = path.split("?", 1)[0]
        query = {}
        if "?" in path:
            from urllib.parse import parse_qsl
            for k, v in parse_qsl(path.split("?", 1)[1], keep_blank_values=True):
                query.setdefault(k, v)
        tpl, params = self.spec.match(route)
        doc_method = "GET" if method == "HEAD" and tpl and self.spec.head_as_get(tpl) else method
        op = self.spec.operation(tpl, doc_method) if tpl else None
        parsed = None
        ctype = hdrs.get("content-type", "")
        if data and ctype.startswith("application/json"):
            try:
                parsed = json.loads(data)
            except ValueError as e:
                self.r.check(False, label, "body is not JSON (%s): %s" % (e, short(data.decode("utf-8", "replace"))))
                return status, None
        ok = True
        notes = []
        if expect is not None:
            want = expect if isinstance(expect, (set, tuple, list)) else {expect}
            if status not in want:
                ok = False
                notes.append("status %d, expected %s; body %s" % (status, sorted(want), short(data.decode("utf-8", "replace"))))
        if error is not None and method != "HEAD" and (parsed is None or parsed.get("error") != error):
            ok = False
            notes.append("error %r, expected %r" % (parsed and parsed.get("error"), error))

        if tpl is None or op is None:
            # Not in the file: 404 for an unknown path, 405 for an unknown method (403 on a disabled test control).
            want = 404 if tpl is None else 405
            if status != want and not (status == 403 and tpl is not None and tpl.startswith(("/v1/faults", "/v1/reset"))):
                ok = False
                notes.append("undocumented %s answered %d, expected %d" % ("path" if tpl is None else "method", status, want))
            if status == 405 and tpl is not None:
                self.seen_405.add(tpl)
            ptr = "/components/schemas/Error"
            if method == "HEAD":
                if data:
                    ok = False
                    notes.append("HEAD with a body")
            else:
                errs = self.spec.errors(ptr, parsed) if parsed is not None else ["no JSON body"]
                if errs:
                    ok = False
                    notes.append("Error schema: %s" % "; ".join(errs[:5]))
            self.r.check(ok, label, "%d %s" % (status, "; ".join(notes) if notes else "undocumented -> %d, Error schema" % status))
            return status, parsed

        # Documented operation: status declared, body per its schema, request per its schema.
        key = (tpl, doc_method)
        self.coverage.setdefault(key, set()).add("ok" if status < 400 else "err")
        resp, rptr = self.spec.response(tpl, doc_method, status)
        if resp is None:
            ok = False
            notes.append("status %d is not declared for %s %s" % (status, doc_method, tpl))
        else:
            content = resp.get("content")
            if method == "HEAD":
                if data:
                    ok = False
                    notes.append("HEAD answered with %d body bytes" % len(data))
            elif not content:
                if data:
                    ok = False
                    notes.append("%d must have an empty body, got %s" % (status, short(data.decode("utf-8", "replace"))))
            elif "application/json" in content:
                if not ctype.startswith("application/json"):
                    ok = False
                    notes.append("content type %r" % ctype)
                errs = self.spec.errors(rptr + "/content/application~1json/schema", parsed) if parsed is not None else ["no JSON body"]
                if errs:
                    ok = False
                    notes.append("response schema: %s; body %s" % ("; ".join(errs[:6]), short(parsed)))
            elif not any(ctype.startswith(t) for t in content):
                ok = False
                notes.append("content type %r, declared %s" % (ctype, sorted(content)))
        # The request side.
        invalid = []
        for (where, name), sptr in self.spec.parameters(tpl, doc_method).items():
            value = params.get(name) if where == "path" else query.get(name)
            if value is None:
                continue
            from urllib.parse import unquote
            value = unquote(value) if where == "path" else value
            inst = int(value) if re.fullmatch(r"-?\d+", value) else value
            invalid += ["%s %s=%r: %s" % (where, name, value, e) for e in self.spec.errors(sptr, inst)]
        bptr = self.spec.request_schema(tpl, doc_method)
        if bptr is not None and raw_body is not None:
            try:
                inst = json.loads(raw_body)
                invalid += ["body " + e for e in self.spec.errors(bptr, inst)]
            except ValueError:
                invalid.append("body is not JSON")
        refused = status == 400 and parsed is not None and parsed.get("error") == "INVALID_REQUEST" and "error_code" not in parsed
        path_refused = (status == 404 and parsed is not None and parsed.get("error") == "NOT_FOUND" and
                        parsed.get("message", "").startswith(("no route", "no partition ")))
        if status < 300 and invalid:
            ok = False
            notes.append("accepted, but the file says the request is invalid: %s" % "; ".join(invalid[:4]))
        if refused and not semantic and not invalid:
            ok = False
            notes.append("refused (%s), but the request validates against the file" % parsed.get("message"))
        if path_refused and not invalid:
            ok = False
            notes.append("NOT_FOUND for a path whose parameters validate")
        if refused and semantic:
            notes.append("semantic refusal: %s" % parsed.get("message"))
        if ok and not notes:
            sch = ""
            if resp is not None and resp.get("content"):
                s = resp["content"].get("application/json", {}).get("schema", {})
                sch = s.get("$ref", "inline").rsplit("/", 1)[-1]
            notes.append("declared, schema %s%s" % (sch or "none", ", request refused by the file too" if refused else ""))
        self.r.check(ok, label, "%d %s" % (status, "; ".join(notes)))
        return status, parsed


def free_port():
    return h.pick_free_port()


def wait_for(what, fn, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise Failed("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


def kcat(args, stdin=None, timeout=30):
    p = subprocess.run(["kcat"] + args, input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------------------------
# 1. The file itself

def check_spec_file(spec, r):
    d = spec.doc
    r.check(str(d.get("openapi", "")).startswith("3.1"), "spec: OpenAPI 3.1", str(d.get("openapi")))
    bad = []
    for name, s in d["components"]["schemas"].items():
        try:
            spec.V.check_schema(s)
        except spec.jsonschema.exceptions.SchemaError as e:
            bad.append("%s: %s" % (name, e.message))
    r.check(not bad, "spec: every component schema is a valid Draft 2020-12 schema", "; ".join(bad) or "%d schemas" % len(d["components"]["schemas"]))
    # Every example next to a schema validates against it.
    examples = []

    def walk(node, ptr):
        if isinstance(node, dict):
            if "schema" in node and ("example" in node or "examples" in node):
                if "example" in node:
                    examples.append((ptr + "/schema", node["example"], ptr + "/example"))
                for k, ex in (node.get("examples") or {}).items():
                    ex, _ = spec.deref(ex, ptr)
                    if "value" in ex:
                        examples.append((ptr + "/schema", ex["value"], ptr + "/examples/" + k))
            for k, v in node.items():
                walk(v, ptr + "/" + Spec.esc(str(k)))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s/%d" % (ptr, i))

    walk(d["paths"], "/paths")
    walk(d["components"], "/components")
    for sptr, value, eptr in examples:
        schema = spec.pointer(sptr)
        if schema.get("type") == "string" and isinstance(value, str):
            continue
        errs = spec.errors(sptr, value)
        r.check(not errs, "spec: example %s" % eptr, "; ".join(errs) or "valid")
    ops = list(spec.operations())
    r.check(len(ops) >= 25, "spec: operations", "%d operations on %d paths" % (len(ops), len(d["paths"])))
    missing = [(t, m) for t, m in ops if not spec.operation(t, m).get("operationId")]
    r.check(not missing, "spec: every operation has an operationId", str(missing))


# ---------------------------------------------------------------------------------------------------------------
# 2. The main broker

def fill(api, broker, r):
    """oa-orders: 3 partitions, 30 keyed records with a header, by kcat with Java's partitioner."""
    api.call("POST", "/v1/topics", {"name": TOPIC, "partitions": 3, "replication_factor": 1,
                                    "configs": {"retention.ms": 86400000}}, expect=201, what="create " + TOPIC)
    lines = "".join("key-%d:value-%d\n" % (i % 10, i) for i in range(30))
    rc, _, err = kcat(["-P", "-b", broker.bootstrap, "-t", TOPIC, "-K:", "-H", "source=kcat", "-z", "none",
                       "-X", "partitioner=murmur2_random"], stdin=lines.encode())
    r.check(rc == 0, "kcat produced 30 keyed records", err.strip()[-300:])
    rc, out, err = kcat(["-C", "-b", broker.bootstrap, "-t", TOPIC, "-e", "-q", "-f", "%p\t%o\t%k\t%s\n"])
    by_partition = {}
    for line in out.splitlines():
        p, o, k, v = line.split("\t")
        by_partition.setdefault(int(p), []).append((int(o), k, v))
    r.check(sum(len(v) for v in by_partition.values()) == 30 and len(by_partition) == 3, "kcat read the 30 records back",
            "per partition %s" % {p: len(v) for p, v in sorted(by_partition.items())})
    return by_partition


def topics_checks(api, r, kc):
    s, body = api.call("GET", "/v1/topics", expect=200)
    r.check(any(t["name"] == TOPIC and t["partitions"] == 3 for t in (body or {}).get("topics", [])),
            "GET /v1/topics lists %s with 3 partitions" % TOPIC)
    # create: success cases, Kafka errors, refusals
    api.call("POST", "/v1/topics", {"name": "oa-dry", "partitions": 2, "validate_only": True}, expect=200, what="validate_only")
    s, body = api.call("GET", "/v1/topics/oa-dry", expect=404, what="validate_only created nothing")
    api.call("POST", "/v1/topics", {"name": TOPIC, "partitions": 3}, expect=409, error="TOPIC_ALREADY_EXISTS")
    api.call("POST", "/v1/topics", {"name": "bad name!"}, expect=400, error="INVALID_TOPIC_EXCEPTION")
    api.call("POST", "/v1/topics", {"name": "oa-zero", "partitions": 0}, expect=400, error="INVALID_PARTITIONS")
    api.call("POST", "/v1/topics", {"name": "oa-rf", "replication_factor": 3}, expect=400, error="INVALID_REPLICATION_FACTOR")
    api.call("POST", "/v1/topics", {"name": "oa-cfg", "configs": {"retention.ms": "soon"}}, expect=400, error="INVALID_CONFIG")
    for what, body in [("unknown member", {"name": "oa-x", "bogus": 1}), ("no name", {"partitions": 1}),
                       ("empty name", {"name": ""}), ("not an object", [1]), ("not JSON", "{nope"),
                       ("partitions as text", {"name": "oa-x", "partitions": "3"}),
                       ("config as array", {"name": "oa-x", "configs": {"retention.ms": [1]}}),
                       ("validate_only as text", {"name": "oa-x", "validate_only": "yes"}),
                       ("partitions beyond int32", {"name": "oa-x", "partitions": 2147483648})]:
        api.call("POST", "/v1/topics", body, expect=400, error="INVALID_REQUEST", what=what)
    # describe
    s, d = api.call("GET", "/v1/topics/" + TOPIC, expect=200)
    if d:
        r.check(d["partition_count"] == 3 and [p["partition"] for p in d["partitions"]] == [0, 1, 2],
                "describe: 3 partitions in order")
        r.check(sum(p["high_watermark"] for p in d["partitions"]) == 30 and
                all(p["high_watermark"] == len(kc.get(p["partition"], [])) for p in d["partitions"]),
                "describe: high watermarks match what kcat read", str([p["high_watermark"] for p in d["partitions"]]))
        r.check(all(p["local_replica"] == "leader" and p["leader"] == 0 for p in d["partitions"]), "describe: leader 0, local leader replica")
        r.check(d["size_bytes"] == sum(p["size_bytes"] for p in d["partitions"]) and d["size_bytes"] > 0, "describe: size_bytes is the sum")
        cfg = d.get("configs", {}).get("retention.ms", {})
        r.check(cfg.get("value") == "86400000" and cfg.get("source") == "DYNAMIC_TOPIC_CONFIG",
                "describe: configs given at creation (a JSON number sent as its text)", str(cfg))
    s, d2 = api.call("GET", "/v1/topics/%s?configs=false" % TOPIC, expect=200)
    r.check(d2 is not None and "configs" not in d2, "describe ?configs=false has no configs")
    api.call("GET", "/v1/topics/oa-nope", expect=404, error="UNKNOWN_TOPIC_OR_PARTITION")
    api.call("GET", "/v1/topics/bad%20name", expect=400, error="INVALID_TOPIC_EXCEPTION")
    # partitions
    s, d3 = api.call("GET", "/v1/topics/%s/partitions" % TOPIC, expect=200)
    r.check(d3 is not None and "configs" not in d3 and d3["partition_count"] == 3, "GET .../partitions: the description without configs")
    api.call("GET", "/v1/topics/oa-nope/partitions", expect=404)
    # delete
    api.call("POST", "/v1/topics", {"name": "oa-scratch"}, expect=201)
    api.call("DELETE", "/v1/topics/oa-scratch", expect=204)
    api.call("GET", "/v1/topics/oa-scratch", expect=404, what="deleted")
    api.call("DELETE", "/v1/topics/oa-scratch", expect=404, error="UNKNOWN_TOPIC_OR_PARTITION", what="again")


def configs_checks(api, r):
    s, c = api.call("GET", "/v1/topics/%s/configs" % TOPIC, expect=200)
    r.check(c is not None and "segment.ms" in c["configs"] and c["configs"]["cleanup.policy"]["value"] == "delete",
            "GET configs: every config with its default")
    s, c = api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, {"set": {"retention.ms": "3600000", "segment.ms": 7200000},
                                                              "delete": []}, expect=200)
    if c:
        r.check(c["configs"]["retention.ms"]["value"] == "3600000" and c["configs"]["segment.ms"]["value"] == "7200000" and
                c["configs"]["segment.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG", "PATCH set: values in the answer")
    s, c = api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, {"delete": ["segment.ms"]}, expect=200)
    if c:
        r.check(c["configs"]["segment.ms"]["source"] == "DEFAULT_CONFIG", "PATCH delete: back to the default", str(c["configs"]["segment.ms"]))
    s, c = api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, {"set": {"retention.ms": "1000"}, "validate_only": True}, expect=200)
    if c:
        r.check(c["configs"]["retention.ms"]["value"] == "3600000", "PATCH validate_only changes nothing")
    s, c = api.call("POST", "/v1/topics/%s/configs" % TOPIC, {"set": {"retention.bytes": 1073741824}}, expect=200, what="POST alias")
    if c:
        r.check(c["configs"]["retention.bytes"]["value"] == "1073741824", "POST configs (alias of PATCH) applied")
    api.call("POST", "/v1/topics/%s/configs" % TOPIC, {"set": {"retention.bytes": "lots"}}, expect=400, error="INVALID_CONFIG",
             what="POST alias, bad value")
    api.call("POST", "/v1/topics/%s/configs" % TOPIC, {"unset": ["x"]}, expect=400, error="INVALID_REQUEST", what="POST alias")
    api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, {"set": {"retention.ms": "abc"}}, expect=400, error="INVALID_CONFIG")
    api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, {"set": {"no.such.config": "1"}}, expect=400, error="INVALID_CONFIG")
    api.call("PATCH", "/v1/topics/oa-nope/configs", {"set": {"retention.ms": "1000"}}, expect=404)
    api.call("GET", "/v1/topics/oa-nope/configs", expect=404)
    for what, body in [("nothing to change", {"set": {}}), ("only validate_only", {"validate_only": True}),
                       ("unknown member", {"sett": {"retention.ms": "1"}}), ("null value", {"set": {"retention.ms": None}}),
                       ("delete not an array", {"delete": "segment.ms"})]:
        api.call("PATCH", "/v1/topics/%s/configs" % TOPIC, body, expect=400, error="INVALID_REQUEST", what=what)


def records_checks(api, r, kc):
    base = "/v1/topics/%s/partitions/%%d/records" % TOPIC
    # Every record kcat wrote, read over HTTP, per partition.
    for p in range(3):
        s, page = api.call("GET", (base % p) + "?limit=100", expect=200, what="all of partition %d" % p)
        if page:
            got = [(x["offset"], x["key"], x["value"]) for x in page["records"]]
            r.check(got == [(o, k, v) for o, k, v in kc.get(p, [])], "records of partition %d are kcat's" % p,
                    "%d records" % len(got))
            r.check(all(x["headers"] == [{"key": "source", "value": "kcat", "value_encoding": "utf8"}] for x in page["records"]),
                    "partition %d: kcat's header" % p)
            r.check(page["next_offset"] == page["high_watermark"] == len(kc.get(p, [])), "partition %d: next_offset at the end" % p)
    n0 = len(kc.get(0, []))
    s, page = api.call("GET", (base % 0) + "?offset=1&limit=2", expect=200)
    r.check(page is not None and [x["offset"] for x in page["records"]] == [1, 2] and page["next_offset"] == 3, "offset=1&limit=2")
    s, page = api.call("GET", (base % 0) + "?offset=latest", expect=200)
    r.check(page is not None and page["records"] == [] and page["next_offset"] == n0, "offset=latest: nothing, at the end")
    s, page = api.call("GET", (base % 0) + "?offset=earliest&limit=1&encoding=hex", expect=200)
    if page and page["records"]:
        x = page["records"][0]
        r.check(bytes.fromhex(x["key"]).decode() == kc[0][0][1] and x["key_encoding"] == "hex", "encoding=hex")
    s, page = api.call("GET", (base % 0) + "?limit=1&encoding=base64&isolation=read_committed", expect=200)
    if page and page["records"]:
        import base64
        r.check(base64.b64decode(page["records"][0]["value"]).decode() == kc[0][0][2], "encoding=base64, read_committed")
    s, page = api.call("GET", (base % 0) + "?timestamp=0&limit=1", expect=200)
    r.check(page is not None and page["records"] and page["records"][0]["offset"] == 0, "timestamp=0: from the start")
    s, page = api.call("GET", (base % 0) + "?timestamp=99999999999999", expect=200)
    r.check(page is not None and page["records"] == [] and page["next_offset"] == n0, "a future timestamp: nothing, at the end")
    api.call("GET", (base % 0) + "?offset=%d" % (n0 + 100), expect=400, error="OFFSET_OUT_OF_RANGE")
    api.call("GET", base % 7, expect=404, error="UNKNOWN_TOPIC_OR_PARTITION")
    api.call("GET", "/v1/topics/oa-nope/partitions/0/records", expect=404, error="UNKNOWN_TOPIC_OR_PARTITION")
    api.call("GET", "/v1/topics/%s/partitions/x/records" % TOPIC, expect=404, error="NOT_FOUND", what="partition not a number")
    api.call("GET", "/v1/topics/%s/partitions/-1/records" % TOPIC, expect=404, error="NOT_FOUND", what="negative partition")
    for q in ["limit=0", "limit=10001", "encoding=ebcdic", "isolation=serializable", "offset=-1", "offset=abc", "timestamp=abc"]:
        api.call("GET", (base % 0) + "?" + q, expect=400, error="INVALID_REQUEST")
    api.call("GET", (base % 0) + "?offset=1&timestamp=1", expect=400, error="INVALID_REQUEST", semantic=True, what="both")

    # Produce: Java's partitioner, as kcat's murmur2_random.
    key_partition = {k: p for p, recs in kc.items() for _, k, _ in recs}
    keys = sorted(key_partition)
    s, res = api.call("POST", "/v1/topics/%s/records" % TOPIC,
                      {"records": [{"key": k, "value": "http-" + k} for k in keys]}, expect=200, what="keyed")
    if res:
        r.check([o["partition"] for o in res["offsets"]] == [key_partition[k] for k in keys],
                "HTTP produce puts each key where kcat (murmur2) put it", str([o["partition"] for o in res["offsets"]]))
        firsts = {}
        for o in res["offsets"]:
            firsts.setdefault(o["partition"], o["offset"])
        r.check(all(firsts[p] == len(kc[p]) for p in firsts), "produced offsets continue the log", str(firsts))
    s, res = api.call("POST", "/v1/topics/%s/records" % TOPIC, {"records": [{"value": "a"}, {"value": "b"}], "acks": 1}, expect=200, what="keyless")
    r.check(res is not None and len({o["partition"] for o in res["offsets"]}) == 1, "keyless records of one call: one partition")
    s, res = api.call("POST", "/v1/topics/%s/records" % TOPIC, {"records": [{"value": "fire and forget"}], "acks": 0}, expect=202)
    s, res = api.call("POST", "/v1/topics/%s/records" % TOPIC, {"records": [{"value": "all", "timestamp": 1000}], "acks": "all",
                                                              "timeout_ms": 5000}, expect=200, what="acks all")
    api.call("POST", "/v1/topics/oa-nope/records", {"records": [{"value": "x"}]}, expect=404, error="UNKNOWN_TOPIC_OR_PARTITION")
    for what, body in [("no records", {"records": []}), ("unknown member", {"recs": [{"value": "x"}]}),
                       ("value not a string", {"records": [{"value": 1}]}), ("headers a number", {"records": [{"value": "a", "headers": 5}]}),
                       ("unknown record member", {"records": [{"value": "a", "x": 1}]}), ("acks 2", {"records": [{"value": "a"}], "acks": 2}),
                       ("bad encoding", {"records": [{"value": "a"}], "key_encoding": "latin1"}),
                       ("negative timestamp", {"records": [{"value": "a", "timestamp": -5}]})]:
        api.call("POST", "/v1/topics/%s/records" % TOPIC, body, expect=400, error="INVALID_REQUEST", what=what)
    api.call("POST", "/v1/topics/%s/records" % TOPIC, {"records": [{"value": "zz"}], "value_encoding": "hex"}, expect=400,
             error="INVALID_REQUEST", semantic=True, what="not hex")
    api.call("POST", "/v1/topics/%s/records" % TOPIC, {"records": [{"value": "a", "partition": 3}]}, expect=400,
             error="INVALID_REQUEST", semantic=True, what="partition beyond the topic")

    # 207 / all failed: a topic whose max.message.bytes one record exceeds.
    api.call("POST", "/v1/topics", {"name": SMALL, "partitions": 2, "configs": {"max.message.bytes": "300"}}, expect=201)
    big = "x" * 600
    s, res = api.call("POST", "/v1/topics/%s/records" % SMALL, {"records": [{"value": big, "partition": 0}, {"value": "ok", "partition": 1}]},
                      expect=207, what="one too large")
    if res:
        r.check(res["offsets"][0].get("error") == "MESSAGE_TOO_LARGE" and res["offsets"][1] == {"partition": 1, "offset": 0},
                "207: per-record error and offset", short(res))
    api.call("POST", "/v1/topics/%s/records" % SMALL, {"records": [{"value": big}]}, expect=400, error="MESSAGE_TOO_LARGE",
             what="all too large")
    # Partition path; bytes in base64 and hex; headers both ways; read back in each encoding.
    pbase = "/v1/topics/%s/partitions/1/records" % SMALL
    s, res = api.call("POST", pbase, {"key_encoding": "base64", "value_encoding": "hex",
                                      "records": [{"key": "AAE=", "value": "ff00", "headers": [{"key": "bin", "value": "0102"}, {"key": "none"}]},
                                                  {"key": None, "value": None, "partition": 1, "headers": {"h": "6869"}}]}, expect=200)
    if res:
        r.check([o["offset"] for o in res["offsets"]] == [1, 2] and {o["partition"] for o in res["offsets"]} == {1}, "partition path: offsets 1, 2")
    s, page = api.call("GET", pbase + "?offset=1&encoding=hex", expect=200)
    if page and len(page["records"]) == 2:
        a, b = page["records"]
        r.check(a["key"] == "0001" and a["value"] == "ff00" and a["headers"] == [
            {"key": "bin", "value": "0102", "value_encoding": "hex"}, {"key": "none", "value": None}], "hex read back", short(a))
        r.check(b["key"] is None and b["value"] is None and "key_encoding" not in b and b["headers"][0]["value"] == "6869",
                "null key and value read back", short(b))
    s, page = api.call("GET", pbase + "?offset=1&limit=1", expect=200, what="utf8 falls back to base64")
    if page and page["records"]:
        a = page["records"][0]
        r.check(a["key"] == "\u0000\u0001" and a["key_encoding"] == "utf8" and a["value"] == "/wA=" and a["value_encoding"] == "base64",
                "utf8: valid UTF-8 as text, the rest as base64", short(a))
    api.call("POST", pbase, {"records": [{"value": "a", "partition": 0}]}, expect=400, error="INVALID_REQUEST", semantic=True,
             what="record partition differs from the path")
    api.call("POST", "/v1/topics/%s/partitions/5/records" % SMALL, {"records": [{"value": "a"}]}, expect=404,
             error="UNKNOWN_TOPIC_OR_PARTITION")
    api.call("POST", "/v1/topics/%s/partitions/0/records" % SMALL, {"records": [{"value": big}]}, expect=400, error="MESSAGE_TOO_LARGE")

    # Add partitions (on oa-small; oa-orders keeps 3 for the partitioner check).
    api.call("POST", "/v1/topics/%s/partitions" % SMALL, {"count": 5, "validate_only": True}, expect=200)
    s, res = api.call("POST", "/v1/topics/%s/partitions" % SMALL, {"count": 3}, expect=200)
    s, d = api.call("GET", "/v1/topics/%s/partitions" % SMALL, expect=200, what="after growing")
    r.check(d is not None and d["partition_count"] == 3, "partitions grown to 3 (validate_only did not grow them)")
    api.call("POST", "/v1/topics/%s/partitions" % SMALL, {"count": 2}, expect=400, error="INVALID_PARTITIONS")
    api.call("POST", "/v1/topics/oa-nope/partitions", {"count": 4}, expect=404)
    for what, body in [("no count", {}), ("count 0", {"count": 0}), ("unknown member", {"count": 4, "x": 1}),
                       ("count as text", {"count": "4"})]:
        api.call("POST", "/v1/topics/%s/partitions" % SMALL, body, expect=400, error="INVALID_REQUEST", what=what)


def group_state(api, group):
    s, _, data = api.raw("GET", "/v1/groups/" + group)
    if s != 200:
        return None
    return json.loads(data)


def groups_checks(api, broker, r, kc):
    # A group committed by kcat -G -e (reads to the end, commits on close).
    rc, _, err = kcat(["-b", broker.bootstrap, "-G", GROUP, "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true",
                       "-X", "auto.commit.interval.ms=100", "-e", "-q", TOPIC], timeout=40)
    r.check(rc == 0, "kcat -G %s -e consumed and left" % GROUP, err.strip()[-300:])
    s, d = api.call("GET", "/v1/topics/%s?configs=false" % TOPIC, expect=200, what="high watermarks")
    hw = {p["partition"]: p["high_watermark"] for p in d["partitions"]} if d else {}
    g = wait_for("committed offsets of " + GROUP, lambda: (lambda g: g if g and len(g["offsets"]) == 3 and all(
        o["committed_offset"] == hw.get(o["partition"]) for o in g["offsets"]) else None)(group_state(api, GROUP)), 15)
    s, g = api.call("GET", "/v1/groups/" + GROUP, expect=200, what="empty, committed")
    if g:
        r.check(g["state"] == "Empty" and g["members"] == [] and g["protocol_type"] == "consumer", "kcat's group: Empty, consumer protocol")
        r.check(all(o["lag"] == 0 and o["log_end_offset"] == hw[o["partition"]] for o in g["offsets"]) and g["lag"] == 0,
                "committed at the end: lag 0", short(g["offsets"]))
    s, lst = api.call("GET", "/v1/groups", expect=200)
    r.check(lst is not None and any(x["group_id"] == GROUP and x["state"] == "Empty" for x in lst["groups"]), "GET /v1/groups lists it")

    # A live member.
    live = subprocess.Popen(["kcat", "-b", broker.bootstrap, "-G", LIVE, "-X", "client.id=oa-live-client", "-q", TOPIC],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("a Stable %s with its member" % LIVE, lambda: (lambda g: g if g and g["state"] == "Stable" and g["members"] and
                                                                 g["members"][0]["assignment"] else None)(group_state(api, LIVE)), 20)
        s, g = api.call("GET", "/v1/groups/" + LIVE, expect=200, what="stable, one member")
        if g:
            m = g["members"][0]
            parts = sorted(p for a in m["assignment"] if a["topic"] == TOPIC for p in a["partitions"])
            r.check(len(g["members"]) == 1 and m["client_id"] == "oa-live-client" and parts == [0, 1, 2] and g["protocol"],
                    "live member: client id, all 3 partitions assigned, an assignor", short(m))
            r.check(all(o["member_id"] == m["member_id"] for o in g["offsets"]) and len(g["offsets"]) == 3,
                    "offsets name the member each partition is assigned to")
        api.call("DELETE", "/v1/groups/" + LIVE, expect=409, error="NON_EMPTY_GROUP")
        api.call("POST", "/v1/groups/%s/offsets" % LIVE, {"to": "earliest"}, expect=409, error="NON_EMPTY_GROUP")
    finally:
        live.terminate()
        try:
            live.wait(timeout=10)
        except subprocess.TimeoutExpired:
            live.kill()
            live.wait()
    wait_for(LIVE + " empty after its member left", lambda: (lambda g: g and g["state"] == "Empty")(group_state(api, LIVE)), 20)

    # Resets of the empty group.
    total = sum(hw.values())
    s, res = api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "earliest", "dry_run": True}, expect=200)
    r.check(res is not None and res["dry_run"] and [o["offset"] for o in res["offsets"]] == [0, 0, 0], "dry run: earliest is 0")
    s, g = api.call("GET", "/v1/groups/" + GROUP, expect=200, what="dry run changed nothing")
    r.check(g is not None and g["lag"] == 0, "dry run committed nothing")
    s, res = api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "offset", "offset": 2, "partitions": [{"topic": TOPIC, "partition": 0}]}, expect=200)
    s, g = api.call("GET", "/v1/groups/" + GROUP, expect=200, what="after offset 2 on partition 0")
    if g:
        o0 = [o for o in g["offsets"] if o["partition"] == 0][0]
        r.check(o0["committed_offset"] == 2 and o0["lag"] == hw[0] - 2 and g["lag"] == hw[0] - 2, "partition 0 at 2, lag counted", short(o0))
    s, res = api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "offset", "offset": 10 ** 9, "topics": [TOPIC]}, expect=200)
    r.check(res is not None and {o["partition"]: o["offset"] for o in res["offsets"]} == hw, "an offset beyond the end is kept at the end")
    s, res = api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "timestamp", "timestamp": 0}, expect=200)
    r.check(res is not None and all(o["offset"] == 0 for o in res["offsets"]), "timestamp 0: the start")
    s, g = api.call("GET", "/v1/groups/" + GROUP, expect=200, what="lag after the reset")
    r.check(g is not None and g["lag"] == total, "lag is every record", "lag %s, records %d" % (g and g["lag"], total))
    s, res = api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "latest"}, expect=200)
    r.check(res is not None and {o["partition"]: o["offset"] for o in res["offsets"]} == hw, "latest: the high watermarks")
    api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "latest", "topics": ["oa-nope"]}, expect=404, error="UNKNOWN_TOPIC_OR_PARTITION")
    api.call("POST", "/v1/groups/%s/offsets" % GROUP, {"to": "latest", "partitions": [{"topic": TOPIC, "partition": 9}]}, expect=404)
    for what, body in [("bad to", {"to": "sideways"}), ("no to", {}), ("offset missing", {"to": "offset"}),
                       ("timestamp missing", {"to": "timestamp"}), ("unknown member", {"to": "latest", "extra": 1}),
                       ("partition item without partition", {"to": "latest", "partitions": [{"topic": TOPIC}]}),
                       ("negative offset", {"to": "offset", "offset": -1}), ("dry_run as text", {"to": "latest", "dry_run": "no"})]:
        api.call("POST", "/v1/groups/%s/offsets" % GROUP, body, expect=400, error="INVALID_REQUEST", what=what)
    api.call("POST", "/v1/groups/oa-nothing/offsets", {"to": "latest"}, expect=400, error="INVALID_REQUEST", semantic=True,
             what="a group without offsets, no partitions named")
    # A group made by a reset, then deleted.
    s, res = api.call("POST", "/v1/groups/oa-admin/offsets", {"to": "earliest", "topics": [TOPIC]}, expect=200, what="creates the group")
    s, g = api.call("GET", "/v1/groups/oa-admin", expect=200)
    r.check(g is not None and g["state"] == "Empty" and g["members"] == [] and g["lag"] == total, "a group with offsets only", short(g))
    api.call("DELETE", "/v1/groups/oa-admin", expect=204)
    api.call("DELETE", "/v1/groups/oa-admin", expect=404, error="GROUP_ID_NOT_FOUND", what="again")
    api.call("GET", "/v1/groups/oa-admin", expect=404, error="GROUP_ID_NOT_FOUND", what="deleted")
    api.call("GET", "/v1/groups/oa-never", expect=404, error="GROUP_ID_NOT_FOUND")


def faults_checks(api, broker, r):
    s, f = api.call("GET", "/v1/faults", expect=200)
    r.check(f == {"faults": []}, "no rule at first")
    s, a = api.call("POST", "/v1/faults", {"api": "Produce", "action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3, "topic": TOPIC}, expect=201)
    r.check(a is not None and a["api_key"] == 0 and a["error_code"] == 6 and a["count"] == 3 and a["applied"] == 0, "error rule", short(a))
    s, b = api.call("POST", "/v1/faults", {"api": 1, "action": "delay", "delay_ms": 5, "rate": 0.5, "client_id": "nobody",
                                            "connection": "10.0.0.1:1"}, expect=201)
    r.check(b is not None and b["api"] == "Fetch" and b["rate"] == 0.5 and "count" not in b, "delay rule by API key, with a rate")
    s, c = api.call("POST", "/v1/faults", {"api": "Fetch", "action": "drop", "client_id": "nobody"}, expect=201)
    r.check(c is not None and c["count"] == 1, "without count or rate: the next one")
    s, m = api.call("POST", "/v1/faults", {"api": "Metadata", "action": "delay", "delay_ms": 1, "count": 100}, expect=201)
    s, lst = api.call("GET", "/v1/faults", expect=200)
    r.check(lst is not None and [x["id"] for x in lst["faults"]] == [x["id"] for x in (a, b, c, m) if x], "rules listed in order")
    if m:
        kcat(["-L", "-b", broker.bootstrap, "-t", TOPIC], timeout=20)
        s, got = api.call("GET", "/v1/faults/%d" % m["id"], expect=200)
        r.check(got is not None and got["applied"] >= 1 and got["count"] == 100 - got["applied"],
                "a rule counts the requests it hit (kcat -L)", short(got))
    if a:
        api.call("DELETE", "/v1/faults/%d" % a["id"], expect=204)
        api.call("DELETE", "/v1/faults/%d" % a["id"], expect=404, error="NOT_FOUND", what="again")
        api.call("GET", "/v1/faults/%d" % a["id"], expect=404, error="NOT_FOUND")
    api.call("GET", "/v1/faults/abc", expect=404, error="NOT_FOUND", what="not a number")
    for what, body in [("unknown member", {"api": "Produce", "action": "drop", "x": 1}), ("no api", {"action": "drop"}),
                       ("no action", {"api": "Produce"}), ("bad action", {"api": "Produce", "action": "explode"}),
                       ("delay without delay_ms", {"api": "Fetch", "action": "delay"}),
                       ("delay_ms too large", {"api": "Fetch", "action": "delay", "delay_ms": 3600001}),
                       ("count and rate", {"api": "Fetch", "action": "drop", "count": 1, "rate": 0.5}),
                       ("rate above 1", {"api": "Fetch", "action": "drop", "rate": 2}),
                       ("count 0", {"api": "Fetch", "action": "drop", "count": 0}),
                       ("error on drop", {"api": "Fetch", "action": "drop", "error": "NOT_COORDINATOR"}),
                       ("error rule without error", {"api": "Fetch", "action": "error"}),
                       ("error NONE", {"api": "Fetch", "action": "error", "error": "NONE"}),
                       ("api key 200", {"api": 200, "action": "drop"}), ("topic a number", {"api": "Fetch", "action": "drop", "topic": 5}),
                       ("not an object", [])]:
        api.call("POST", "/v1/faults", body, expect=400, error="INVALID_REQUEST", what=what)
    for what, body in [("unknown API name", {"api": "Nope", "action": "drop"}),
                       ("unknown error name", {"api": "Fetch", "action": "error", "error": "NO_SUCH_ERROR"}),
                       ("API without an error field", {"api": "LeaderAndIsr", "action": "error", "error": "NOT_CONTROLLER"})]:
        api.call("POST", "/v1/faults", body, expect=400, error="INVALID_REQUEST", semantic=True, what=what)
    api.call("DELETE", "/v1/faults", expect=204)
    s, lst = api.call("GET", "/v1/faults", expect=200, what="after DELETE")
    r.check(lst == {"faults": []}, "DELETE /v1/faults removed every rule")


def probe_checks(api, r, broker, http_port):
    s, b = api.call("GET", "/healthz", expect=200)
    s, b = api.call("GET", "/readyz", expect=200)
    s, hdrs, text = api.raw("GET", "/metrics")
    api.call("GET", "/metrics", expect=200)
    # The web console's files (their use is tests/console/console_test.py).
    _, page_headers, _ = api.raw("GET", "/")
    api.call("GET", "/", expect=200)
    api.call("GET", "/console/console.js", expect=200)
    api.call("GET", "/console/console.css", expect=200)
    api.call("GET", "/console/app.js", expect=404, error="NOT_FOUND", what="no such console file")
    r.check("etag" in page_headers, "GET / has an ETag", str(page_headers))
    if "etag" in page_headers:
        s304, _, body = api.raw("GET", "/", headers={"If-None-Match": page_headers["etag"]})
        r.check(s304 == 304 and body == b"", "GET / with its ETag: 304 without a body", "%d, %d bytes" % (s304, len(body)))
    t = text.decode("utf-8", "replace")
    r.check("kafka_server_replicamanager_partitioncount" in t and "# TYPE" in t, "/metrics is Prometheus text")
    s, c = api.call("GET", "/v1/cluster", expect=200)
    r.check(c is not None and c["broker_id"] == 0 and c["controller_id"] == 0, "a single node is its own controller", short(c))
    s, b = api.call("GET", "/v1/brokers", expect=200)
    r.check(b is not None and len(b["brokers"]) == 1 and b["brokers"][0]["controller"] and
            b["brokers"][0]["listeners"][0]["port"] == broker.port, "brokers: this one with its Kafka listener", short(b))


def transport_checks(api, r):
    # 413: a declared Content-Length beyond http.max.request.bytes (only the headers are sent: no reset while sending).
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=30)
    try:
        conn.putrequest("POST", "/v1/topics")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(200000))
        conn.endheaders()
        resp = conn.getresponse()
        body = resp.read()
        status = resp.status
    finally:
        conn.close()
    tpl_ok = api.spec.response("/v1/topics", "POST", 413)[0] is not None
    errs = api.spec.errors("/components/schemas/Error", json.loads(body)) if body else ["empty"]
    r.check(status == 413 and tpl_ok and not errs and json.loads(body)["error"] == "REQUEST_TOO_LARGE",
            "%s POST /v1/topics beyond http.max.request.bytes" % api.name, "%d %s %s" % (status, body[:200], errs))
    # Malformed HTTP: 400 BAD_REQUEST with the Error schema.
    with socket.create_connection(("127.0.0.1", api.port), timeout=10) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    ok = head.startswith(b"HTTP/1.1 400")
    errs = api.spec.errors("/components/schemas/Error", json.loads(body)) if ok and body else ["no body"]
    r.check(ok and not errs, "%s malformed HTTP request" % api.name, "%s %s %s" % (head.split(b"\r\n")[0], body[:200], errs))


def reverse_checks(api, r, samples):
    """Every undocumented method on each documented path: 405; HEAD like GET; undocumented paths: 404."""
    for tpl in api.spec.doc["paths"]:
        path = tpl
        for name, value in samples.items():
            path = path.replace("{%s}" % name, value)
        documented = {m.upper() for m in api.spec.doc["paths"][tpl] if m != "parameters" and not m.startswith("x-")}
        for m in METHODS:
            if m in documented or (m == "HEAD" and "GET" in documented and api.spec.head_as_get(tpl)):
                continue
            api.call(m, path, expect=405, error="METHOD_NOT_ALLOWED", what="undocumented method")
            if m in ("PUT", "DELETE", "POST", "PATCH"):
                status, hdrs, _ = api.raw(m, path)
                allowed = {x.strip() for x in hdrs.get("allow", "").split(",") if x.strip()}
                # POST on a configs path is an alias of PATCH; HEAD goes with GET.
                want = documented | ({"HEAD"} if "GET" in documented else set())
                if status == 405:
                    r.check(want <= allowed | {"HEAD"} and allowed <= want | {"POST"},
                            "%s %s %s: Allow header names the documented methods" % (api.name, m, path),
                            "Allow %r, documented %s" % (hdrs.get("allow"), sorted(documented)))
        if "GET" in documented and api.spec.head_as_get(tpl):
            s_get, _, _ = api.raw("GET", path)
            api.call("HEAD", path, expect=s_get, what="HEAD as GET")
    for path in ["/index.html", "/console", "/v1", "/v2/topics", "/healthz/deep", "/metrics/x", "/v1/clusters", "/v1/brokers/0",
                 "/v1/topics/%s/partitions/0" % TOPIC, "/v1/topics/%s/partitions/0/records/1" % TOPIC,
                 "/v1/topics/%s/configs/retention.ms" % TOPIC, "/v1/topics/%s/records/x" % TOPIC, "/v1/topics/%s/x" % TOPIC,
                 "/v1/groups/%s/members" % GROUP, "/v1/groups/%s/offsets/0" % GROUP, "/v1/faultsX", "/v1/faults/1/x",
                 "/v1/reset/now", "/v1/acls", "/api/v1/topics"]:
        for m in ("GET", "POST", "DELETE"):
            api.call(m, path, expect=404, error="NOT_FOUND", what="undocumented path")


def leader_checks(api, r):
    """Single node: a leader move is refused (400), bad bodies too; unknown partition 404."""
    path = "/v1/topics/%s/partitions/0/leader" % TOPIC
    api.call("POST", path, {"broker": 0}, expect=400, error="INVALID_REQUEST", what="single node", semantic=True)
    api.call("POST", path, {"broker": "x"}, expect=400, error="INVALID_REQUEST", what="bad body")
    api.call("POST", path, {"broker": 0, "extra": 1}, expect=400, error="INVALID_REQUEST", what="unknown member")


def reset_checks(api, r):
    s, res = api.call("POST", "/v1/reset", expect=200)
    if res:
        r.check({TOPIC, SMALL, "__consumer_offsets"} <= set(res["deleted_topics"]) and res["deleted_topics"] == sorted(res["deleted_topics"]),
                "reset deleted every topic, internal ones too, in name order", short(res))
    s, t = api.call("GET", "/v1/topics", expect=200, what="after reset")
    r.check(t == {"topics": []}, "no topic after reset", short(t))
    s, f = api.call("GET", "/v1/faults", expect=200, what="after reset")
    r.check(f == {"faults": []}, "no fault rule after reset")
    s, res = api.call("POST", "/v1/reset", expect=200, what="nothing left")
    r.check(res is not None and res["deleted_topics"] == [], "a second reset deletes nothing")


def secured_checks(api, r):
    """A broker with an authorizer (no ACLs) and test controls off."""
    api.call("GET", "/healthz", expect=200)
    api.call("POST", "/v1/topics", {"name": "oa-denied"}, expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("GET", "/v1/topics/oa-denied", expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("GET", "/v1/topics/oa-denied/configs", expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("PATCH", "/v1/topics/oa-denied/configs", {"set": {"retention.ms": "1"}}, expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("DELETE", "/v1/topics/oa-denied", expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("POST", "/v1/topics/oa-denied/partitions", {"count": 2}, expect=403, error="TOPIC_AUTHORIZATION_FAILED")
    api.call("GET", "/v1/groups/oa-denied", expect=403, error="GROUP_AUTHORIZATION_FAILED")
    api.call("DELETE", "/v1/groups/oa-denied", expect=403, error="GROUP_AUTHORIZATION_FAILED")
    api.call("GET", "/v1/faults", expect=403, error="FAULTS_DISABLED")
    api.call("POST", "/v1/faults", {"api": "Produce", "action": "drop"}, expect=403, error="FAULTS_DISABLED")
    api.call("DELETE", "/v1/faults", expect=403, error="FAULTS_DISABLED")
    api.call("GET", "/v1/faults/1", expect=403, error="FAULTS_DISABLED")
    api.call("DELETE", "/v1/faults/1", expect=403, error="FAULTS_DISABLED")
    api.call("POST", "/v1/reset", expect=403, error="TEST_CONTROLS_DISABLED")
    api.call("POST", "/v1/topics/oa-denied/partitions/0/leader", {"broker": 0}, expect=403, error="TEST_CONTROLS_DISABLED")
    api.call("GET", "/v1/reset", expect=403, error="TEST_CONTROLS_DISABLED", what="any method, test controls off")


# Operations whose declared errors (if any) a healthy single broker cannot be made to give (/readyz 503 before the
# logs are recovered, /v1/groups 503 while a coordinator loads): their error case is the 405 of another method.
# Operations whose success needs a ZooKeeper cluster: their 200 is covered by integration.leader_move_test.
CLUSTER_ONLY_SUCCESS = {("/v1/topics/{topic}/partitions/{partition}/leader", "POST")}
NO_REACHABLE_ERROR = {("/", "GET"), ("/healthz", "GET"), ("/readyz", "GET"), ("/metrics", "GET"), ("/v1/cluster", "GET"),
                      ("/v1/brokers", "GET"), ("/v1/topics", "GET"), ("/v1/groups", "GET")}


def coverage_checks(r, spec, apis):
    seen, seen_405 = {}, set()
    for api in apis:
        for k, v in api.coverage.items():
            seen.setdefault(k, set()).update(v)
        seen_405 |= api.seen_405
    for tpl, m in spec.operations():
        got = seen.get((tpl, m), set())
        if (tpl, m) in CLUSTER_ONLY_SUCCESS:
            ok = "err" in got
            detail = "errors here; success in cluster mode (integration.leader_move_test)" if ok else "seen %s" % sorted(got)
        elif (tpl, m) in NO_REACHABLE_ERROR:
            ok = "ok" in got and tpl in seen_405
            detail = "success, and 405 for an undocumented method as the error case" if ok else "seen %s, 405 %s" % (sorted(got), tpl in seen_405)
        else:
            ok = got >= {"ok", "err"}
            detail = "success and error" if ok else "missing %s" % sorted({"ok", "err"} - got)
        r.check(ok, "coverage %s %s" % (m, tpl), detail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default=os.environ.get("SLUICE_BINARY"))
    ap.add_argument("--spec", default=DEFAULT_SPEC, help="the OpenAPI file (default: broker/http/openapi.yaml)")
    args = ap.parse_args()
    if not args.broker or not os.access(args.broker, os.X_OK):
        print("SKIP: no sluice binary (--broker or SLUICE_BINARY)")
        return h.SKIP
    try:
        import yaml  # noqa: F401
        import jsonschema  # noqa: F401
        jsonschema.Draft202012Validator  # noqa: B018
    except (ImportError, AttributeError) as e:
        print("SKIP: needs python3-yaml and python3-jsonschema with Draft 2020-12 (%s)" % e)
        return h.SKIP
    if not shutil.which("kcat"):
        print("SKIP: kcat is not installed")
        return h.SKIP

    def on_alarm(signum, frame):
        raise Failed("the test ran over its 150 s budget")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(150)
    started = time.monotonic()
    r = Report()
    spec = Spec(args.spec)
    check_spec_file(spec, r)

    port_a, port_b = free_port(), free_port()
    a = h.Broker(args.broker, {"http.listeners": "http://127.0.0.1:%d" % port_a, "sluice.test.faults.enable": "true",
                               "http.max.request.bytes": "131072", "num.partitions": "1"})
    b = h.Broker(args.broker, {"http.listeners": "http://127.0.0.1:%d" % port_b,
                               "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    brokers = [a, b]
    crashed = False
    try:
        for x in brokers:
            x.start()
        api_a = Api(spec, r, port_a, "A")
        api_b = Api(spec, r, port_b, "B")
        for api in (api_a, api_b):
            wait_for("GET /readyz 200 on %s" % api.name, lambda: api.raw("GET", "/readyz")[0] == 200, 15)
        probe_checks(api_a, r, a, port_a)
        kc = fill(api_a, a, r)
        topics_checks(api_a, r, kc)
        configs_checks(api_a, r)
        records_checks(api_a, r, kc)
        groups_checks(api_a, a, r, kc)
        faults_checks(api_a, a, r)
        transport_checks(api_a, r)
        reverse_checks(api_a, r, {"topic": TOPIC, "partition": "0", "group": GROUP, "id": "1", "file": "console.js"})
        leader_checks(api_a, r)
        reset_checks(api_a, r)
        secured_checks(api_b, r)
        coverage_checks(r, spec, [api_a, api_b])
        for x, name in ((a, "A"), (b, "B")):
            alive = x.alive()
            r.check(alive, "broker %s still running" % name)
            if alive:
                rc = x.stop()
                r.check(rc == 0, "broker %s exit status on SIGTERM" % name, str(rc))
            else:
                crashed = True
    except Exception as e:  # noqa: BLE001 - a failure with its reason
        import traceback
        traceback.print_exc()
        r.check(False, "test ran to the end", repr(e))
    finally:
        signal.alarm(0)
        failed = r.failed > 0
        if failed or crashed:
            for x, name in ((a, "A"), (b, "B")):
                print("---- broker %s log (%s) ----" % (name, x.log_path))
                print(x.log_text()[-6000:])
        for x in brokers:
            x.close(failed=failed)
    print("%s: %d checks passed, %d failed, %.1f s" % ("PASS" if r.failed == 0 else "FAILED", r.passed, r.failed,
                                                       time.monotonic() - started))
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
