#!/usr/bin/env python3
"""Generates the C++ codec of Sluice from protocol/defs (stdlib only). See protocol/README.md.

  generate.py --defs <protocol/defs> --out <build/protocol_gen> [--test-out <file.cc>]

Writes, under --out: protocol/api_key.{h,cc}, protocol/error_code.{h,cc}, protocol/api_traits.{h,cc},
protocol/messages/<api>.{h,cc} (one pair per .def file) and protocol/messages/all.h. With --test-out,
also a GoogleTest source with value fillers and round-trip / truncation tests for every message.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import defs as D  # noqa: E402

NS = "::sluice::protocol::"

# type name -> (C++ type, reader/writer suffix, wire size)
PRIM = {
    "int8": ("int8_t", "int8", 1),
    "int16": ("int16_t", "int16", 2),
    "int32": ("int32_t", "int32", 4),
    "int64": ("int64_t", "int64", 8),
    "uint16": ("uint16_t", "uint16", 2),
    "uint32": ("uint32_t", "uint32", 4),
    "float64": ("double", "float64", 8),
    "bool": ("bool", "bool", 1),
    "uuid": (NS + "uuid", "uuid", 16),
}
BUILTIN = set(PRIM) | {"string", "bytes", "records"}

CPP_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
decltype default delete do double dynamic_cast else enum explicit export extern false float for friend goto if
inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq""".split())
# Names used by the generated code itself (locals, parameters, members).
LOCAL_NAMES = {"r", "w", "n", "i", "e", "v", "version", "flexible", "tag", "size", "start", "tagged_count",
               "sizes", "decode", "encode", "encoded_size"}
MESSAGE_RESERVED = {"key", "min_version", "max_version", "first_flexible_version"}


def kind_of(t):
    if t in PRIM:
        return "prim"
    if t in ("string", "bytes", "records"):
        return t
    return "struct"


def is_error_code(f):
    return f.elem_type == "int16" and f.name.endswith("ErrorCode")


def range_cond(rng, within):
    """C++ condition on `version` for `rng`, knowing that version is inside `within`."""
    r = rng.intersect(within)
    if r.empty():
        return "false"
    parts = []
    if r.lo == r.hi and (r.lo > within.lo or r.hi < within.hi):
        return "version == %d" % r.lo
    if r.lo > within.lo:
        parts.append("version >= %d" % r.lo)
    if r.hi < within.hi:
        parts.append("version <= %d" % r.hi)
    return " && ".join(parts) if parts else "true"


def and_cond(*conds):
    conds = [c for c in conds if c != "true"]
    if "false" in conds:
        return "false"
    if not conds:
        return "true"
    return " && ".join("(%s)" % c if "||" in c else c for c in conds)


class Struct:
    """One C++ struct: a message or a nested struct of a message."""

    def __init__(self, name, kafka_name, fields, msg, is_message):
        self.name = name
        self.kafka_name = kafka_name
        self.fields = fields
        self.msg = msg
        self.is_message = is_message
        self.members = {}

    @property
    def qualified(self):
        return self.name if self.is_message else "%s::%s" % (D.snake(self.msg.name), self.name)


class MessageGen:
    def __init__(self, msg, commons):
        self.msg = msg
        self.cname = D.snake(msg.name)
        self.commons = commons
        self.structs = []  # nested, dependency order
        self.struct_names = set()
        self.field_struct = {}  # id(field) -> Struct
        for f in msg.fields:
            self._collect(f)
        self.top = Struct(self.cname, msg.name, msg.fields, msg, True)
        for s in self.structs + [self.top]:
            self._name_members(s)
        # Versions in which anything can be present.
        self.valid = msg.versions

    def _collect(self, f):
        if kind_of(f.elem_type) != "struct":
            if f.fields:
                raise ValueError("%s: field %s of builtin type has nested fields" % (self.msg.name, f.name))
            return
        fields = f.fields
        if not fields:
            common = self.commons.get(f.elem_type)
            if common is None:
                raise ValueError("%s: struct type %s has no fields and no shared struct" % (self.msg.name, f.elem_type))
            fields = common.fields
        name = D.snake(f.elem_type)
        existing = next((s for s in self.structs if s.name == name), None)
        if existing is not None:
            if existing.fields is not fields:
                raise ValueError("%s: struct %s defined twice" % (self.msg.name, f.elem_type))
            self.field_struct[id(f)] = existing
            return
        for sub in fields:
            self._collect(sub)
        s = Struct(name, f.elem_type, fields, self.msg, False)
        self.structs.append(s)
        self.struct_names.add(name)
        self.field_struct[id(f)] = s

    def _name_members(self, s):
        for f in s.fields:
            n = D.snake(f.name)
            own_type = D.snake(f.elem_type)
            if (n in CPP_KEYWORDS or n in self.struct_names or n == own_type and f.elem_type in BUILTIN - {"int16"}
                    or n in LOCAL_NAMES or (s.is_message and n in MESSAGE_RESERVED) or n == self.cname):
                n += "_"
            s.members[id(f)] = n

    # ----- types and defaults -----
    def optional(self, f):
        return not f.nullable.intersect(f.versions).empty()

    def elem_cpp(self, f):
        t = f.elem_type
        k = kind_of(t)
        if k == "prim":
            return NS + "error_code" if is_error_code(f) else PRIM[t][0]
        if k == "string":
            return "std::string"
        if k == "bytes":
            return "std::vector<uint8_t>"
        if k == "records":
            return NS + "records"
        return self.field_struct[id(f)].name

    def value_cpp(self, f):
        e = self.elem_cpp(f)
        return "std::vector<%s>" % e if f.is_array else e

    def member_cpp(self, f):
        v = self.value_cpp(f)
        return "std::optional<%s>" % v if self.optional(f) else v

    def int_literal(self, f, text):
        val = int(text, 0)
        ctype = PRIM[f.elem_type][0]
        bits = {"int8_t": 8, "int16_t": 16, "int32_t": 32, "int64_t": 64}.get(ctype)
        if bits and val == -(1 << (bits - 1)):
            return "std::numeric_limits<%s>::min()" % ctype
        if ctype == "int64_t" and abs(val) > 0x7fffffff:
            return "INT64_C(%d)" % val
        return str(val)

    def default_value(self, f):
        """C++ expression of the default (None when value-initialisation is the default)."""
        d = f.default
        k = kind_of(f.elem_type)
        opt = self.optional(f)
        if f.is_array:
            if opt and d != "null":
                return "%s{}" % self.value_cpp(f)
            return None
        if k == "prim":
            if d is None or f.elem_type == "uuid":
                return None
            if f.elem_type == "bool":
                return None if d == "false" else "true"
            if f.elem_type == "float64":
                return None if float(d) == 0 else repr(float(d))
            if is_error_code(f):
                v = int(d, 0)
                return None if v == 0 else "static_cast<%serror_code>(%d)" % (NS, v)
            lit = self.int_literal(f, d)
            return None if lit == "0" else lit
        if k == "string":
            if opt:
                return None if d == "null" else 'std::string(%s)' % cstr(d or "")
            return None if not d else cstr(d)
        if k == "bytes":
            return None if (not opt or d == "null") else "std::vector<uint8_t>{}"
        if k == "records":
            return None
        # struct
        if opt and d != "null":
            return "%s{}" % self.value_cpp(f)
        return None

    def differs_from_default(self, f, m):
        """Condition under which a tagged field is written (Kafka writes tagged fields that differ from
        their default)."""
        d = self.default_value(f)
        if d is None:
            k = kind_of(f.elem_type)
            if self.optional(f):
                return "%s.has_value()" % m
            if f.is_array or k in ("string", "bytes"):
                return "!%s.empty()" % m
            if k == "records":
                return "%s.size() != 0" % m
            if k == "struct" or f.elem_type == "uuid":
                return "%s != %s{}" % (m, self.value_cpp(f))
            if f.elem_type == "bool":
                return m
            if is_error_code(f):
                return "%s != %serror_code::none" % (m, NS)
            return "%s != 0" % m
        if self.optional(f) and (f.is_array or kind_of(f.elem_type) == "bytes"):
            return "!(%s && %s->empty())" % (m, m)
        return "%s != %s" % (m, d)

    # ----- conditions -----
    def present(self, f):
        """Range of versions in which f is on the wire (tagged fields: their tagged versions)."""
        r = f.versions.intersect(self.msg.versions)
        if f.tag is not None:
            r = r.intersect(f.tagged).intersect(self.msg.flexible)
        return r

    def nullable_cond(self, f):
        p = self.present(f)
        nr = f.nullable.intersect(p)
        if nr.empty():
            return "false"
        if nr == p:
            return "true"
        return range_cond(nr, self.msg.versions)

    # ----- decode -----
    def read_elem(self, f, label):
        t = f.elem_type
        k = kind_of(t)
        if k == "prim":
            if is_error_code(f):
                return "static_cast<%serror_code>(r.read_int16(%s))" % (NS, label)
            return "r.read_%s(%s)" % (PRIM[t][1], label)
        return "r.read_%s(%s, flexible)" % ({"string": "string", "bytes": "bytes", "records": "records"}[k], label)

    def decode_field(self, s, f, ind):
        m = s.members[id(f)]
        label = cstr("%s.%s" % (s.name, m))
        k = kind_of(f.elem_type)
        nc = self.nullable_cond(f)
        opt = self.optional(f)
        out = []
        if f.is_array:
            min_size = PRIM[f.elem_type][2] if k == "prim" else 1
            extra = ", %d" % min_size if min_size != 1 else ""
            nullable_arg = nc if opt else "false"
            out.append(ind + "{")
            out.append(ind + "  const int32_t n = r.read_array_length(%s, flexible, %s%s);" % (label, nullable_arg, extra))
            inner = ind + "  "
            if opt:
                out.append(ind + "  if (n < 0) {")
                out.append(ind + "    %s.reset();" % m)
                out.append(ind + "  } else {")
                out.append(ind + "    auto& v = %s.emplace();" % m)
                inner = ind + "    "
            else:
                out.append(ind + "  auto& v = %s;" % m)
                out.append(ind + "  v.clear();")
            out.append(inner + "v.reserve(r.reserve_count(n, sizeof(v[0])));")
            if k == "struct":
                body = "v.emplace_back().decode(r, version);"
            else:
                body = "v.push_back(%s);" % self.read_elem(f, label)
            out.append(inner + "for (int32_t i = 0; i < n && r.ok(); ++i) " + body)
            if opt:
                out.append(ind + "  }")
            out.append(ind + "}")
            return out
        if k == "struct":
            if not opt:
                return [ind + "%s.decode(r, version);" % m]
            if nc == "false":
                return [ind + "%s.emplace().decode(r, version);" % m]
            test = "r.read_int8(%s) < 0" % label if nc == "true" else "%s && r.read_int8(%s) < 0" % (
                "(%s)" % nc, label)
            return [ind + "if (%s)" % test, ind + "  %s.reset();" % m, ind + "else",
                    ind + "  %s.emplace().decode(r, version);" % m]
        if not opt or nc == "false":
            return [ind + "%s = %s;" % (m, self.read_elem(f, label))]
        nullable_read = "r.read_nullable_%s(%s, flexible)" % (k, label)
        if nc == "true":
            return [ind + "%s = %s;" % (m, nullable_read)]
        return [ind + "if (%s)" % nc, ind + "  %s = %s;" % (m, nullable_read), ind + "else",
                ind + "  %s = %s;" % (m, self.read_elem(f, label))]

    # ----- encode -----
    def write_elem(self, f, x):
        t = f.elem_type
        k = kind_of(t)
        if k == "prim":
            if is_error_code(f):
                return "w.write_int16(static_cast<int16_t>(%s));" % x
            return "w.write_%s(%s);" % (PRIM[t][1], x)
        if k == "struct":
            return "%s.encode(w, version);" % x
        return "w.write_%s(%s, flexible);" % (k, x)

    def encode_field(self, s, f, ind):
        m = s.members[id(f)]
        k = kind_of(f.elem_type)
        nc = self.nullable_cond(f)
        opt = self.optional(f)
        if f.is_array:
            def body(ref, i2):
                return [i2 + "w.write_array_length(static_cast<int32_t>(%ssize()), flexible);" % sized(ref),
                        i2 + "for (const auto& e : %s) %s" % (ref, self.write_elem(f, "e"))]
            if not opt:
                return body(m, ind)
            null_len = "-1" if nc == "true" else ("0" if nc == "false" else "(%s) ? -1 : 0" % nc)
            return ([ind + "if (%s) {" % m] + body("*" + m, ind + "  ") +
                    [ind + "} else {", ind + "  w.write_array_length(%s, flexible);" % null_len, ind + "}"])
        if k == "struct":
            if not opt:
                return [ind + "%s.encode(w, version);" % m]
            out = []
            if nc != "false":
                cond = "" if nc == "true" else "if (%s) " % nc
                out.append(ind + cond + "w.write_int8(%s ? 1 : -1);" % m)
                out.append(ind + "if (%s) %s->encode(w, version);" % (m, m))
                if nc != "true":
                    out.append(ind + "else if (!(%s)) %s{}.encode(w, version);" % (nc, self.value_cpp(f)))
            else:
                out.append(ind + "(%s ? *%s : %s{}).encode(w, version);" % (m, m, self.value_cpp(f)))
            return out
        if not opt or nc == "false":
            return [ind + self.write_elem(f, m)]
        nullable_write = "w.write_nullable_%s(%s, flexible);" % (k, m)
        if nc == "true":
            return [ind + nullable_write]
        return [ind + "if (%s)" % nc, ind + "  " + nullable_write, ind + "else",
                ind + "  " + self.write_elem(f, m)]

    # ----- size -----
    def size_elem(self, f, x):
        k = kind_of(f.elem_type)
        if k == "prim":
            return str(PRIM[f.elem_type][2])
        if k == "struct":
            return "%s.encoded_size(version)" % x
        return "sizes::%s(%s, flexible)" % (k, x)

    def size_field(self, s, f, ind, var):
        m = s.members[id(f)]
        k = kind_of(f.elem_type)
        nc = self.nullable_cond(f)
        opt = self.optional(f)
        if f.is_array:
            def body(ref, i2):
                out = [i2 + "%s += sizes::array_length(%ssize(), flexible);" % (var, sized(ref))]
                if k == "prim":
                    out.append(i2 + "%s += %ssize() * %d;" % (var, sized(ref), PRIM[f.elem_type][2]))
                else:
                    out.append(i2 + "for (const auto& e : %s) %s += %s;" % (ref, var, self.size_elem(f, "e")))
                return out
            if not opt:
                return body(m, ind)
            null_len = "-1" if nc == "true" else ("0" if nc == "false" else "(%s) ? -1 : 0" % nc)
            return ([ind + "if (%s) {" % m] + body("*" + m, ind + "  ") +
                    [ind + "} else {", ind + "  %s += sizes::array_length_or_null(%s, flexible);" % (var, null_len),
                     ind + "}"])
        if k == "struct":
            if not opt:
                return [ind + "%s += %s.encoded_size(version);" % (var, m)]
            out = []
            if nc != "false":
                if nc == "true":
                    out.append(ind + "%s += 1;" % var)
                else:
                    out.append(ind + "if (%s) %s += 1;" % (nc, var))
                out.append(ind + "if (%s) %s += %s->encoded_size(version);" % (m, var, m))
                if nc != "true":
                    out.append(ind + "else if (!(%s)) %s += %s{}.encoded_size(version);" % (nc, var, self.value_cpp(f)))
            else:
                out.append(ind + "%s += (%s ? *%s : %s{}).encoded_size(version);" % (var, m, m, self.value_cpp(f)))
            return out
        if k == "prim":
            return [ind + "%s += %d;" % (var, PRIM[f.elem_type][2])]
        if not opt or nc == "false":
            return [ind + "%s += sizes::%s(%s, flexible);" % (var, k, m)]
        if nc == "true":
            return [ind + "%s += sizes::nullable_%s(%s, flexible);" % (var, k, m)]
        return [ind + "if (%s)" % nc, ind + "  %s += sizes::nullable_%s(%s, flexible);" % (var, k, m), ind + "else",
                ind + "  %s += sizes::%s(%s, flexible);" % (var, k, m)]

    # ----- per-struct bodies -----
    def flexible_line(self):
        fl = self.msg.flexible
        if fl.empty():
            return "  [[maybe_unused]] constexpr bool flexible = false;"
        return "  [[maybe_unused]] const bool flexible = %s;" % range_cond(fl, Range_all())

    def wrap(self, cond, lines, ind="  "):
        if cond == "true":
            return [ind + l for l in lines]
        if cond == "false":
            return []
        if lines and lines[0] == "{" and lines[-1] == "}":
            lines = [l[2:] for l in lines[1:-1]]
        return [ind + "if (%s) {" % cond] + [ind + "  " + l for l in lines] + [ind + "}"]

    def blocks(self, pairs):
        """Emits (condition, lines) pairs, merging consecutive pairs with the same condition."""
        merged = []
        for cond, lines in pairs:
            if merged and merged[-1][0] == cond:
                merged[-1][1].extend(lines)
            else:
                merged.append((cond, list(lines)))
        out = []
        for cond, lines in merged:
            out += self.wrap(cond, lines)
        return out

    def tagged_fields(self, s):
        return sorted([f for f in s.fields if f.tag is not None and not self.present(f).empty()], key=lambda f: f.tag)

    def gen_decode(self, s):
        out = ["void %s::decode(reader& r, int16_t version) {" % s.qualified, self.flexible_line()]
        pairs = []
        for f in s.fields:
            if f.tag is not None:
                continue
            pairs.append((range_cond(f.versions, self.msg.versions), self.decode_field(s, f, "")))
        out += self.blocks(pairs)
        if not self.msg.flexible.empty():
            tagged = self.tagged_fields(s)
            label = cstr("%s.tagged_fields" % s.name)
            if not tagged:
                out.append("  if (flexible) r.skip_tagged_fields(%s);" % label)
            else:
                out += ["  if (flexible) {",
                        "    const uint32_t tagged_count = r.read_unsigned_varint(%s);" % label,
                        "    for (uint32_t i = 0; i < tagged_count && r.ok(); ++i) {",
                        "      uint32_t tag = 0, size = 0;",
                        "      if (!r.read_tag_header(tag, size, %s)) break;" % label,
                        "      const size_t start = r.position();",
                        "      switch (tag) {"]
                for f in tagged:
                    cond = range_cond(self.present(f), self.msg.versions)
                    m = s.members[id(f)]
                    out.append("        case %d:" % f.tag)
                    body = self.decode_field(s, f, "") + [
                        "r.check_tagged_field_end(start, size, %s);" % cstr("%s.%s" % (s.name, m)), "break;"]
                    if cond == "true":
                        out += ["          " + l for l in body]
                    else:
                        out += ["          if (%s) {" % cond] + ["            " + l for l in body] + \
                               ["          }", "          r.skip(size, %s);" % label, "          break;"]
                out += ["        default:",
                        "          r.skip(size, %s);" % label,
                        "          break;",
                        "      }",
                        "    }",
                        "  }"]
        out.append("}")
        return out

    def gen_encode(self, s):
        out = ["void %s::encode(writer& w, int16_t version) const {" % s.qualified, self.flexible_line()]
        pairs = []
        for f in s.fields:
            if f.tag is not None:
                continue
            pairs.append((range_cond(f.versions, self.msg.versions), self.encode_field(s, f, "")))
        out += self.blocks(pairs)
        if not self.msg.flexible.empty():
            tagged = self.tagged_fields(s)
            if not tagged:
                out.append("  if (flexible) w.write_unsigned_varint(0);")
            else:
                out += ["  if (flexible) {", "    uint32_t tagged_count = 0;"]
                conds = []
                for f in tagged:
                    m = s.members[id(f)]
                    c = and_cond(range_cond(self.present(f), self.msg.versions), self.differs_from_default(f, m))
                    conds.append(c)
                    out.append("    if (%s) ++tagged_count;" % c)
                out.append("    w.write_unsigned_varint(tagged_count);")
                for f, c in zip(tagged, conds):
                    out += ["    if (%s) {" % c,
                            "      w.write_unsigned_varint(%d);" % f.tag,
                            "      size_t size = 0;"]
                    out += self.size_field(s, f, "      ", "size")
                    out.append("      w.write_unsigned_varint(static_cast<uint32_t>(size));")
                    out += self.encode_field(s, f, "      ")
                    out.append("    }")
                out.append("  }")
        out.append("}")
        return out

    def gen_size(self, s):
        out = ["size_t %s::encoded_size(int16_t version) const {" % s.qualified, self.flexible_line(),
               "  size_t n = 0;"]
        pairs = []
        for f in s.fields:
            if f.tag is not None:
                continue
            pairs.append((range_cond(f.versions, self.msg.versions), self.size_field(s, f, "", "n")))
        out += self.blocks(pairs)
        if not self.msg.flexible.empty():
            tagged = self.tagged_fields(s)
            if not tagged:
                out.append("  if (flexible) n += 1;")
            else:
                out += ["  if (flexible) {", "    uint32_t tagged_count = 0;"]
                for f in tagged:
                    m = s.members[id(f)]
                    c = and_cond(range_cond(self.present(f), self.msg.versions), self.differs_from_default(f, m))
                    out += ["    if (%s) {" % c, "      ++tagged_count;", "      size_t size = 0;"]
                    out += self.size_field(s, f, "      ", "size")
                    out += ["      n += sizes::unsigned_varint(%d) + sizes::unsigned_varint(static_cast<uint32_t>(size)) + size;" % f.tag,
                            "    }"]
                out += ["    n += sizes::unsigned_varint(tagged_count);", "  }"]
        out += ["  return n;", "}"]
        return out

    # ----- declarations -----
    def gen_struct_decl(self, s, ind):
        out = [ind + "struct %s {" % s.name]
        i2 = ind + "  "
        if s.is_message:
            m = self.msg
            if m.key is not None:
                out.append(i2 + "static constexpr %sapi_key key = %sapi_key::%s;" % (NS, NS, api_enum_name(m)))
            ff = -1 if m.flexible.empty() else m.flexible.lo
            out.append(i2 + "static constexpr int16_t min_version = %d, max_version = %d, first_flexible_version = %d;" %
                       (m.versions.lo, m.versions.hi, ff))
            for ns in self.structs:
                out += self.gen_struct_decl(ns, i2)
            if self.structs:
                out.append("")
        for f in s.fields:
            m = s.members[id(f)]
            d = self.default_value(f)
            if d is None and not f.is_array and kind_of(f.elem_type) == "prim" and f.elem_type != "uuid":
                d = {"bool": "false", "float64": "0.0"}.get(f.elem_type, "0")
                if is_error_code(f):
                    d = NS + "error_code::none"
            comment = "  // %s" % describe(f)
            out.append(i2 + "%s %s%s;%s" % (self.member_cpp(f), m, " = " + d if d else "", comment))
        if s.fields:
            out.append("")
        out.append(i2 + "void decode(reader& r, int16_t version);")
        out.append(i2 + "void encode(writer& w, int16_t version) const;")
        out.append(i2 + "size_t encoded_size(int16_t version) const;")
        out.append(i2 + "friend bool operator==(const %s&, const %s&) = default;" % (s.name, s.name))
        out.append(ind + "};")
        return out

    def header(self):
        return self.gen_struct_decl(self.top, "")

    def source(self):
        out = []
        for s in self.structs + [self.top]:
            out += self.gen_decode(s) + [""] + self.gen_encode(s) + [""] + self.gen_size(s) + [""]
        return out

    # ----- test support: value fillers -----
    def gen_fill(self, s):
        out = ["void fill(%s& s, int16_t version, int variant) {" % s.qualified,
               "  [[maybe_unused]] const bool flexible = %s;" % (
                   "false" if self.msg.flexible.empty() else range_cond(self.msg.flexible, Range_all()))]
        for f in s.fields:
            cond = range_cond(self.present(f), self.msg.versions)
            if cond == "false":
                continue
            m = "s." + s.members[id(f)]
            nc = self.nullable_cond(f)
            lines = []
            opt = self.optional(f)
            if opt and nc != "false":
                null_if = "variant == 1" if nc == "true" else "variant == 1 && (%s)" % nc
                lines.append("if (%s) { %s.reset(); } else {" % (null_if, m))
            target = m + (".emplace()" if opt else "")
            if f.is_array:
                lines.append("  auto& v = %s;" % target)
                lines.append("  v.clear();")
                lines.append("  for (int i = 0; i < (variant == 1 ? 0 : 2); ++i) {")
                lines.append("    v.emplace_back();")
                lines.append("    " + self.fill_value(f, "v.back()"))
                lines.append("  }")
            else:
                if opt:
                    lines.append("  auto& v = %s;" % target)
                    lines.append("  " + self.fill_value(f, "v"))
                else:
                    lines.append("  " + self.fill_value(f, m))
            if opt and nc != "false":
                lines.append("}")
            out += self.wrap(cond, ["{"] + ["  " + l for l in lines] + ["}"])
        out += ["}", ""]
        return out

    def fill_value(self, f, x):
        k = kind_of(f.elem_type)
        t = f.elem_type
        if k == "struct":
            return "fill(%s, version, variant);" % x
        if k == "string":
            return "%s = next_string(variant);" % x
        if k == "bytes":
            return "%s = next_bytes(variant);" % x
        if k == "records":
            return "%s = next_records(variant);" % x
        if is_error_code(f):
            return "%s = static_cast<::sluice::protocol::error_code>(next_int() %% 100);" % x
        if t == "bool":
            return "%s = (next_int() %% 2) == 0;" % x
        if t == "uuid":
            return "%s = next_uuid();" % x
        if t == "float64":
            return "%s = next_int() * 0.5;" % x
        return "%s = static_cast<%s>(next_int());" % (x, PRIM[t][0])


def sized(ref):
    """`*x` -> `x->` for member access on an optional."""
    return ref[1:] + "->" if ref.startswith("*") else ref + "."


def Range_all():
    r = D.Range("0+")
    return r


def describe(f):
    parts = [f.type, f.versions.text]
    if not f.nullable.empty():
        parts.append("nullable " + f.nullable.text)
    if f.tag is not None:
        parts.append("tag %d" % f.tag)
    if f.default is not None:
        parts.append("default " + (f.default if f.default != "" else '""'))
    return ", ".join(parts)


def cstr(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def api_enum_name(m):
    n = m.name
    for suffix in ("Request", "Response"):
        if n.endswith(suffix):
            n = n[: -len(suffix)]
    return D.snake(n)


def write(path, lines):
    text = "\n".join(lines).rstrip() + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return  # keep the timestamp: no needless rebuilds
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


BANNER = "// Generated by protocol/gen/generate.py from protocol/defs/%s. Do not edit."


def gen_error_codes(rows, out):
    h = ["#pragma once", BANNER % "errors.def",
         "// Kafka error codes (protocol guide, \"Error Codes\"). Enumerators are the Kafka names in lower case.",
         "#include <cstdint>", "#include <string_view>", "", "namespace sluice::protocol {", "",
         "enum class error_code : int16_t {"]
    for code, name in rows:
        h.append("  %s = %d," % (name.lower(), code))
    h += ["};", "",
          "/// Kafka's name of `code` (\"UNKNOWN_TOPIC_OR_PARTITION\"); \"UNKNOWN_ERROR_CODE\" for codes not in the table.",
          "std::string_view error_name(error_code code);", "",
          "/// Whether Kafka marks the code retriable is not tracked here; see the handlers.",
          "}  // namespace sluice::protocol"]
    c = [BANNER % "errors.def", '#include "protocol/error_code.h"', "", "namespace sluice::protocol {", "",
         "std::string_view error_name(error_code code) {", "  switch (code) {"]
    for code, name in rows:
        c.append("    case error_code::%s: return \"%s\";" % (name.lower(), name))
    c += ["  }", '  return "UNKNOWN_ERROR_CODE";', "}", "", "}  // namespace sluice::protocol"]
    write(os.path.join(out, "protocol/error_code.h"), h)
    write(os.path.join(out, "protocol/error_code.cc"), c)


def gen_api_keys(rows, out):
    h = ["#pragma once", BANNER % "api_keys.def", "#include <cstdint>", "#include <string_view>", "",
         "namespace sluice::protocol {", "", "/// Every API key Kafka defines (whether or not Sluice serves it).",
         "enum class api_key : int16_t {"]
    for k, name in rows:
        h.append("  %s = %d," % (D.snake(name), k))
    h += ["};", "", "/// Kafka's API name (\"Produce\"); \"unknown\" for keys not in the table.",
          "std::string_view api_name(int16_t key);",
          "inline std::string_view api_name(api_key key) { return api_name(static_cast<int16_t>(key)); }", "",
          "}  // namespace sluice::protocol"]
    c = [BANNER % "api_keys.def", '#include "protocol/api_key.h"', "", "namespace sluice::protocol {", "",
         "std::string_view api_name(int16_t key) {", "  switch (key) {"]
    for k, name in rows:
        c.append('    case %d: return "%s";' % (k, name))
    c += ["  }", '  return "unknown";', "}", "", "}  // namespace sluice::protocol"]
    write(os.path.join(out, "protocol/api_key.h"), h)
    write(os.path.join(out, "protocol/api_key.cc"), c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--defs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--test-out")
    a = ap.parse_args()

    gen_error_codes(D.parse_table(os.path.join(a.defs, "errors.def")), a.out)
    api_rows = D.parse_table(os.path.join(a.defs, "api_keys.def"))
    gen_api_keys(api_rows, a.out)
    api_names = {k: n for k, n in api_rows}

    files = sorted(f for f in os.listdir(a.defs) if f.endswith(".def") and f not in ("errors.def", "api_keys.def"))
    all_gens = []  # (file stem, MessageGen)
    for fn in files:
        stem = fn[:-4]
        messages, commons = D.parse_file(os.path.join(a.defs, fn))
        gens = [MessageGen(m, commons) for m in messages]
        for g in gens:
            if g.msg.key is not None and g.msg.key not in api_names:
                raise SystemExit("%s: api key %d not in api_keys.def" % (fn, g.msg.key))
        all_gens += [(stem, g) for g in gens]
        h = ["#pragma once", BANNER % fn, "#include <cstddef>", "#include <cstdint>", "#include <limits>",
             "#include <optional>", "#include <string>", "#include <vector>", "", '#include "protocol/api_key.h"',
             '#include "protocol/error_code.h"', '#include "protocol/reader.h"', '#include "protocol/records.h"',
             '#include "protocol/uuid.h"', '#include "protocol/writer.h"', "", "namespace sluice::protocol {", ""]
        for g in gens:
            h += g.header() + [""]
        h.append("}  // namespace sluice::protocol")
        write(os.path.join(a.out, "protocol/messages/%s.h" % stem), h)
        c = [BANNER % fn, '#include "protocol/messages/%s.h"' % stem, "", "namespace sluice::protocol {", ""]
        for g in gens:
            c += g.source()
        c.append("}  // namespace sluice::protocol")
        write(os.path.join(a.out, "protocol/messages/%s.cc" % stem), c)

    requests = sorted([g for _, g in all_gens if g.msg.kind == "request"], key=lambda g: g.msg.key)
    responses = {g.msg.key: g for _, g in all_gens if g.msg.kind == "response"}

    # all.h: every message header plus compile-time dispatch on the api key.
    h = ["#pragma once", "// Generated by protocol/gen/generate.py. Do not edit.", "#include <cstdint>", ""]
    h += ['#include "protocol/messages/%s.h"' % stem for stem in files and [f[:-4] for f in files]]
    h += ["", "namespace sluice::protocol {", "",
          "template <typename T>", "struct type_tag {", "  using type = T;", "};", "",
          "/// Calls f(type_tag<X_request>{}) for the request type of `key`; false if Sluice has no definition.",
          "template <typename F>", "bool visit_request_type(int16_t key, F&& f) {", "  switch (key) {"]
    for g in requests:
        h.append("    case %d: f(type_tag<%s>{}); return true;" % (g.msg.key, g.cname))
    h += ["  }", "  return false;", "}", "",
          "/// Calls f(type_tag<X_response>{}) for the response type of `key`; false if Sluice has no definition.",
          "template <typename F>", "bool visit_response_type(int16_t key, F&& f) {", "  switch (key) {"]
    for k in sorted(responses):
        h.append("    case %d: f(type_tag<%s>{}); return true;" % (k, responses[k].cname))
    h += ["  }", "  return false;", "}", "", "}  // namespace sluice::protocol"]
    write(os.path.join(a.out, "protocol/messages/all.h"), h)

    # api_traits
    h = ["#pragma once", "// Generated by protocol/gen/generate.py. Do not edit.", "#include <cstdint>",
         "#include <span>", "#include <string_view>", "", '#include "protocol/api_key.h"', "",
         "namespace sluice::protocol {", "",
         "/// One API Sluice has definitions for; versions are those of its request definition. The served range",
         "/// (`served=` of the definition, default all) is what the broker's handler table advertises and accepts.",
         "struct api_traits {", "  api_key key;", "  std::string_view name;", "  int16_t min_version;",
         "  int16_t max_version;", "  int16_t first_flexible_version;  // -1: no flexible version",
         "  int16_t served_min_version;", "  int16_t served_max_version;", "};", "",
         "/// Every API with definitions, by increasing api key.",
         "std::span<const api_traits> all_api_traits();",
         "/// nullptr when Sluice has no definition for `key`.",
         "const api_traits* find_api_traits(int16_t key);", "", "}  // namespace sluice::protocol"]
    write(os.path.join(a.out, "protocol/api_traits.h"), h)
    c = ["// Generated by protocol/gen/generate.py. Do not edit.", '#include "protocol/api_traits.h"', "",
         "namespace sluice::protocol {", "namespace {", "constexpr api_traits table[] = {"]
    for g in requests:
        m = g.msg
        if m.served.empty() or m.served.lo < m.versions.lo or m.served.hi > m.versions.hi:
            raise SystemExit("%s: served=%s must lie within versions=%s" % (m.name, m.served.text, m.versions.text))
        c.append('    {api_key::%s, "%s", %d, %d, %d, %d, %d},' % (
            api_enum_name(m), api_names[m.key], m.versions.lo, m.versions.hi,
            -1 if m.flexible.empty() else m.flexible.lo, m.served.lo, m.served.hi))
    c += ["};", "}  // namespace", "", "std::span<const api_traits> all_api_traits() { return table; }", "",
          "const api_traits* find_api_traits(int16_t key) {",
          "  for (const api_traits& t : table)",
          "    if (static_cast<int16_t>(t.key) == key) return &t;",
          "  return nullptr;", "}", "", "}  // namespace sluice::protocol"]
    write(os.path.join(a.out, "protocol/api_traits.cc"), c)

    if a.test_out:
        # A GoogleTest source: value fillers per struct, then one round-trip test per message (the
        # checks live in tests/protocol/roundtrip_support.h).
        t = ["// Generated by protocol/gen/generate.py: round-trip tests of every message. Do not edit.",
             '#include "protocol/messages/all.h"', '#include "roundtrip_support.h"', "",
             "namespace sluice::protocol {", "using namespace ::sluice::protocol::test_support;", ""]
        for _, g in all_gens:
            for s in g.structs + [g.top]:
                t += ["void fill(%s& s, int16_t version, int variant);" % s.qualified]
        t.append("")
        for _, g in all_gens:
            for s in g.structs + [g.top]:
                t += g.gen_fill(s)
        t += ["}  // namespace sluice::protocol", "", "namespace {", "using namespace ::sluice::protocol;", ""]
        for _, g in all_gens:
            t.append("TEST(protocol_roundtrip, %s) { test_support::check_all_versions<%s>(); }" % (g.cname, g.cname))
        t += ["", "}  // namespace"]
        write(a.test_out, t)

if __name__ == "__main__":
    main()
