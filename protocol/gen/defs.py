"""Parser for Sluice protocol definition files (protocol/defs/*.def). See protocol/README.md.

A file holds messages; each message is a header line followed by indented field lines:

  request ProduceRequest key=0 versions=0-11 flexible=9+
    TransactionalId   string              3+   nullable=3+ default=null
    TopicData         []TopicProduceData  0+
      Name            string              0+

Header: <request|response|data> <Name> [key=<api key>] versions=<range> flexible=<range> [served=<range>]
Field:  <Name> <type> <versions> [nullable=<range>] [tag=<n>] [tagged=<range>] [default=<value>]
Nested fields are indented two spaces deeper than their parent (a struct or []struct field).
`struct <Name> versions=<range>` at column 0 declares a struct shared by the messages of the file,
used by fields of type <Name> / []<Name> that list no nested fields.
Ranges: "none", "N", "N+", "A-B". Lines starting with # and blank lines are ignored.
"""
import re

INF = 1 << 15


class Range:
    def __init__(self, text):
        self.text = text
        if text == "none":
            self.lo, self.hi = None, None
        elif text.endswith("+"):
            self.lo, self.hi = int(text[:-1]), INF
        elif "-" in text:
            a, b = text.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(text)

    def empty(self):
        return self.lo is None

    def contains(self, v):
        return not self.empty() and self.lo <= v <= self.hi

    def intersect(self, other):
        if self.empty() or other.empty():
            return Range("none")
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        if lo > hi:
            return Range("none")
        r = Range("none")
        r.lo, r.hi = lo, hi
        r.text = "%d+" % lo if hi == INF else ("%d" % lo if lo == hi else "%d-%d" % (lo, hi))
        return r

    def __eq__(self, other):
        return (self.lo, self.hi) == (other.lo, other.hi)

    def __repr__(self):
        return self.text


class Field:
    def __init__(self, name, type_, versions, attrs, line):
        self.name = name
        self.type = type_
        self.versions = Range(versions)
        self.nullable = Range(attrs.pop("nullable", "none"))
        self.tag = int(attrs.pop("tag")) if "tag" in attrs else None
        self.tagged = Range(attrs.pop("tagged")) if "tagged" in attrs else (self.versions if self.tag is not None else Range("none"))
        self.default = attrs.pop("default", None)
        if self.default == '""':
            self.default = ""
        if attrs:
            raise ValueError("line %d: unknown attributes %s" % (line, sorted(attrs)))
        self.fields = []  # nested fields (struct types)
        self.line = line

    @property
    def is_array(self):
        return self.type.startswith("[]")

    @property
    def elem_type(self):
        return self.type[2:] if self.is_array else self.type


class Message:
    def __init__(self, kind, name, attrs, line):
        self.kind = kind
        self.name = name
        self.key = int(attrs.pop("key")) if "key" in attrs else None
        self.versions = Range(attrs.pop("versions"))
        self.flexible = Range(attrs.pop("flexible", "none"))
        # Requests only: the versions Sluice serves and advertises in ApiVersions (default: all it defines).
        self.served = Range(attrs.pop("served", self.versions.text))
        if attrs:
            raise ValueError("line %d: unknown attributes %s" % (line, sorted(attrs)))
        self.fields = []
        self.line = line


def _attrs(tokens, line):
    out = {}
    for t in tokens:
        if "=" not in t:
            raise ValueError("line %d: expected key=value, got %r" % (line, t))
        k, v = t.split("=", 1)
        out[k] = v
    return out


def parse(text, filename="<defs>"):
    """Returns (messages, common_structs) where common_structs maps a name to a Message-like struct."""
    messages, commons = [], {}
    current = None
    stack = []  # (indent, field)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        tokens = line.split()
        try:
            if indent == 0:
                kind = tokens[0]
                if kind not in ("request", "response", "data", "struct"):
                    raise ValueError("line %d: unknown top-level kind %r" % (lineno, kind))
                current = Message(kind, tokens[1], _attrs(tokens[2:], lineno), lineno)
                if kind == "struct":
                    commons[current.name] = current
                else:
                    messages.append(current)
                stack = [(0, current)]
                continue
            if current is None or indent % 2:
                raise ValueError("line %d: bad indentation" % lineno)
            if len(tokens) < 3:
                raise ValueError("line %d: a field needs name, type, versions" % lineno)
            f = Field(tokens[0], tokens[1], tokens[2], _attrs(tokens[3:], lineno), lineno)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if not stack or stack[-1][0] != indent - 2:
                raise ValueError("line %d: indentation jumps more than one level" % lineno)
            stack[-1][1].fields.append(f)
            stack.append((indent, f))
        except ValueError as e:
            raise ValueError("%s: %s" % (filename, e)) from None
    return messages, commons


def parse_file(path):
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)


def parse_table(path):
    """A two-column table file (errors.def, api_keys.def): '<int> <NAME>' lines."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            num, name = line.split()
            rows.append((int(num), name))
    return rows


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()
