"""One message of a .def file turned into C++: its structs, member names, types, defaults, version
conditions and declarations (header) and definitions (source). The codec bodies come from codec.py,
the test value fillers from roundtrip.py. See protocol/README.md.
"""
import defs as D
from codec import CodecBodies
from common import (BUILTIN, CPP_KEYWORDS, LOCAL_NAMES, MESSAGE_RESERVED, NS, PRIM, api_enum_name, cstr,
                    describe, is_error_code, kind_of, range_cond)
from roundtrip import Fillers


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


class MessageGen(CodecBodies, Fillers):
    """The C++ of one message (msg: a defs.Message; commons: the file's shared structs by name): header()
    and source() give its lines; the mixins add the codec bodies and the test fillers."""

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
        if not self.msg.flexible.empty():
            # `{}`: code that aggregate-initialises the known fields ({a, b, c}) stays free of
            # -Wmissing-field-initializers.
            out.append(i2 + "std::vector<%sraw_tagged_field> unknown_tagged_fields{};  // flexible versions: tags "
                       "not defined here, kept and written back" % NS)
        if s.fields or not self.msg.flexible.empty():
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
