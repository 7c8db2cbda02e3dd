"""The decode / encode / encoded_size bodies of one generated struct (a mixin of MessageGen in
message_gen.py, which supplies the member names, defaults and version ranges). See protocol/README.md.
"""
from common import NS, PRIM, and_cond, cstr, is_error_code, kind_of, range_cond, sized, Range_all


class CodecBodies:
    """Field-level reads, writes and sizes, and the per-struct functions built from them. Every method
    returns C++ source lines; conditions are on `version` within the message's versions."""

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
            # emplace(T{}), not emplace(): clang 14 (the SLUICE_FUZZ build) finds a nested struct with default
            # member initialisers not default-constructible inside optional::emplace()'s constraint.
            if nc == "false":
                return [ind + "%s.emplace(decltype(%s)::value_type{}).decode(r, version);" % (m, m)]
            test = "r.read_int8(%s) < 0" % label if nc == "true" else "%s && r.read_int8(%s) < 0" % (
                "(%s)" % nc, label)
            return [ind + "if (%s)" % test, ind + "  %s.reset();" % m, ind + "else",
                    ind + "  %s.emplace(decltype(%s)::value_type{}).decode(r, version);" % (m, m)]
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

    def array_lines(self, f, m, ind, body, null_line):
        """Lines for the array member m of field f: body(ref, indent) on the value; for an optional field,
        under `if (m)`, with null_line(length) (-1 where null is allowed, else 0) in the else branch."""
        if not self.optional(f):
            return body(m, ind)
        nc = self.nullable_cond(f)
        null_len = "-1" if nc == "true" else ("0" if nc == "false" else "(%s) ? -1 : 0" % nc)
        return ([ind + "if (%s) {" % m] + body("*" + m, ind + "  ") +
                [ind + "} else {", ind + "  " + null_line(null_len), ind + "}"])

    def encode_field(self, s, f, ind):
        m = s.members[id(f)]
        if f.is_array:
            def body(ref, i2):
                return [i2 + "w.write_array_length(static_cast<int32_t>(%ssize()), flexible);" % sized(ref),
                        i2 + "for (const auto& e : %s) %s" % (ref, self.write_elem(f, "e"))]
            return self.array_lines(f, m, ind, body, lambda n: "w.write_array_length(%s, flexible);" % n)
        k = kind_of(f.elem_type)
        nc = self.nullable_cond(f)
        opt = self.optional(f)
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
        if f.is_array:
            def body(ref, i2):
                out = [i2 + "%s += sizes::array_length(%ssize(), flexible);" % (var, sized(ref))]
                if k == "prim":
                    out.append(i2 + "%s += %ssize() * %d;" % (var, sized(ref), PRIM[f.elem_type][2]))
                else:
                    out.append(i2 + "for (const auto& e : %s) %s += %s;" % (ref, var, self.size_elem(f, "e")))
                return out
            return self.array_lines(f, m, ind, body,
                                    lambda n: "%s += sizes::array_length_or_null(%s, flexible);" % (var, n))
        nc = self.nullable_cond(f)
        opt = self.optional(f)
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

    def untagged_blocks(self, s, field_lines):
        """The lines of every untagged field of `s` (field_lines(f) -> lines), each under its version
        condition, consecutive fields with the same condition in one block."""
        pairs = []
        for f in s.fields:
            if f.tag is not None:
                continue
            pairs.append((range_cond(f.versions, self.msg.versions), field_lines(f)))
        return self.blocks(pairs)

    def tagged_write_cond(self, s, f):
        """When tagged field f of s is written: in its tagged versions and different from its default."""
        return and_cond(range_cond(self.present(f), self.msg.versions), self.differs_from_default(f, s.members[id(f)]))

    def gen_decode(self, s):
        out = ["void %s::decode(reader& r, int16_t version) {" % s.qualified, self.flexible_line()]
        out += self.untagged_blocks(s, lambda f: self.decode_field(s, f, ""))
        if not self.msg.flexible.empty():
            # Known tags in their tagged versions are decoded into their members; any other tag is kept
            # in unknown_tagged_fields (Kafka's _unknownTaggedFields).
            tagged = self.tagged_fields(s)
            label = cstr("%s.tagged_fields" % s.name)
            out += ["  if (flexible) {",
                    "    unknown_tagged_fields.clear();",
                    "    const uint32_t tagged_count = r.read_unsigned_varint(%s);" % label,
                    "    for (uint32_t i = 0; i < tagged_count && r.ok(); ++i) {",
                    "      uint32_t tag = 0, size = 0;",
                    "      if (!r.read_tag_header(tag, size, %s)) break;" % label]
            if tagged:
                out += ["      [[maybe_unused]] const size_t start = r.position();",
                        "      switch (tag) {"]
                for f in tagged:
                    cond = range_cond(self.present(f), self.msg.versions)
                    m = s.members[id(f)]
                    body = self.decode_field(s, f, "") + [
                        "r.check_tagged_field_end(start, size, %s);" % cstr("%s.%s" % (s.name, m)), "continue;"]
                    out.append("        case %d:" % f.tag)
                    if cond == "true":
                        out += ["          " + l for l in body]
                    else:
                        out += ["          if (%s) {" % cond] + ["            " + l for l in body] + \
                               ["          }", "          break;"]
                out += ["        default:",
                        "          break;",
                        "      }"]
            out += ["      r.read_unknown_tagged_field(tag, size, unknown_tagged_fields, %s);" % label,
                    "    }",
                    "  }"]
        out.append("}")
        return out

    def gen_encode(self, s):
        out = ["void %s::encode(writer& w, int16_t version) const {" % s.qualified, self.flexible_line()]
        out += self.untagged_blocks(s, lambda f: self.encode_field(s, f, ""))
        if not self.msg.flexible.empty():
            tagged = self.tagged_fields(s)
            out += ["  if (flexible) {",
                    "    uint32_t tagged_count = static_cast<uint32_t>(unknown_tagged_fields.size());"]
            conds = []
            for f in tagged:
                c = self.tagged_write_cond(s, f)
                conds.append(c)
                out.append("    if (%s) ++tagged_count;" % c)
            out.append("    w.write_unsigned_varint(tagged_count);")
            if tagged:
                out.append("    size_t unknown = 0;")
            for f, c in zip(tagged, conds):
                out += ["    unknown = w.write_raw_tagged_fields(unknown_tagged_fields, unknown, %d);" % f.tag,
                        "    if (%s) {" % c,
                        "      w.write_unsigned_varint(%d);" % f.tag,
                        "      size_t size = 0;"]
                out += self.size_field(s, f, "      ", "size")
                out.append("      w.write_unsigned_varint(static_cast<uint32_t>(size));")
                out += self.encode_field(s, f, "      ")
                out.append("    }")
            out.append("    w.write_raw_tagged_fields(unknown_tagged_fields, %s, uint64_t{1} << 32);" % (
                "unknown" if tagged else "0"))
            out.append("  }")
        out.append("}")
        return out

    def gen_size(self, s):
        out = ["size_t %s::encoded_size(int16_t version) const {" % s.qualified, self.flexible_line(),
               "  size_t n = 0;"]
        out += self.untagged_blocks(s, lambda f: self.size_field(s, f, "", "n"))
        if not self.msg.flexible.empty():
            tagged = self.tagged_fields(s)
            out += ["  if (flexible) {",
                    "    uint32_t tagged_count = static_cast<uint32_t>(unknown_tagged_fields.size());",
                    "    n += sizes::raw_tagged_fields(unknown_tagged_fields);"]
            for f in tagged:
                c = self.tagged_write_cond(s, f)
                out += ["    if (%s) {" % c, "      ++tagged_count;", "      size_t size = 0;"]
                out += self.size_field(s, f, "      ", "size")
                out += ["      n += sizes::unsigned_varint(%d) + sizes::unsigned_varint(static_cast<uint32_t>(size)) + size;" % f.tag,
                        "    }"]
            out += ["    n += sizes::unsigned_varint(tagged_count);", "  }"]
        out += ["  return n;", "}"]
        return out
