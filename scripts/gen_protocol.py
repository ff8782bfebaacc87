#!/usr/bin/env python3
"""Generates tarn's Kafka message codecs from the schema files in schema/ (standard library only).

Usage: gen_protocol.py SCHEMA_DIR OUT_DIR

For every schema/NNN_<api>.schema it writes OUT_DIR/protocol/messages/<api>_request.{h,cc} and
<api>_response.{h,cc}; for request_header.schema and response_header.schema one pair each; plus
OUT_DIR/protocol/api_table.h (from the api lines), OUT_DIR/protocol/error_codes.h (from
schema/errors.schema) and OUT_DIR/protocol/messages.h (includes everything, visit_api()).
For every schema/records/<record>.schema (a coordinator record's key or value, e.g. of
__consumer_offsets) it writes OUT_DIR/protocol/records/<record>.{h,cc}, plus
OUT_DIR/protocol/records.h (includes them all, visit_record(), the record framing).
The schema format and the generated C++ API are described in docs/schema-format.md. Files are
only rewritten when their content changes, so an unchanged schema does not rebuild dependants.
"""

import os
import re
import sys

MAX_VERSION = 0x7FFF
PRIMITIVES = {
    # type: (C++ type, fixed wire size or None, reader call, writer call)
    "int8": ("int8_t", 1, "read_int8", "write_int8"),
    "int16": ("int16_t", 2, "read_int16", "write_int16"),
    "int32": ("int32_t", 4, "read_int32", "write_int32"),
    "int64": ("int64_t", 8, "read_int64", "write_int64"),
    "uint16": ("uint16_t", 2, "read_uint16", "write_uint16"),
    "uint32": ("uint32_t", 4, "read_uint32", "write_uint32"),
    "float64": ("double", 8, "read_float64", "write_float64"),
    "bool": ("bool", 1, "read_bool", "write_bool"),
    "uuid": ("uuid", 16, "read_uuid", "write_uuid"),
    "string": ("std::string_view", None, None, None),
    "bytes": ("bytes_view", None, None, None),
    "records": ("bytes_view", None, None, None),
}
CPP_KEYWORDS = {"default", "operator", "class", "namespace", "new", "delete", "template",
                "this", "union", "register", "int", "char", "long", "short", "bool"}
# Parameters and locals of the generated member functions: a field of that name would be shadowed
# (ConsumerGroupRegularExpressionValue's Version), so it gets a trailing underscore like a keyword.
GENERATED_LOCALS = {"version", "r", "w", "n", "sub", "tag", "tag_size", "tagged_count",
                    "field_size", "count", "items", "item", "i", "message"}


class SchemaError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Version ranges: (lo, hi) inclusive, hi = MAX_VERSION for "N+"; None for "none".

def parse_range(text, where):
    if text == "none":
        return None
    m = re.fullmatch(r"(\d+)\+", text)
    if m:
        return (int(m.group(1)), MAX_VERSION)
    m = re.fullmatch(r"(\d+)-(\d+)", text)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise SchemaError(f"{where}: empty version range {text}")
        return (lo, hi)
    m = re.fullmatch(r"\d+", text)
    if m:
        return (int(text), int(text))
    raise SchemaError(f"{where}: bad version range '{text}'")


def format_range(r):
    if r is None:
        return "none"
    if r[1] == MAX_VERSION:
        return f"{r[0]}+"
    return f"{r[0]}-{r[1]}" if r[0] != r[1] else f"{r[0]}"


def in_range(r, v):
    return r is not None and r[0] <= v <= r[1]


def intersect(a, b):
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


# ---------------------------------------------------------------------------------------------
# Parsing

class Field:
    def __init__(self, name, type_, attrs, doc, where):
        self.name = name
        self.type = type_
        self.doc = doc
        self.where = where
        self.fields = []
        known = {"v", "null", "tag", "tagged", "flexible", "default"}
        for k in attrs:
            if k not in known:
                raise SchemaError(f"{where}: unknown attribute '{k}'")
        if "v" not in attrs:
            raise SchemaError(f"{where}: field {name} has no v= (versions)")
        self.versions = parse_range(attrs["v"], where)
        self.nullable = parse_range(attrs["null"], where) if "null" in attrs else None
        self.tagged = parse_range(attrs["tagged"], where) if "tagged" in attrs else None
        self.tag = int(attrs["tag"]) if "tag" in attrs else None
        if (self.tag is None) != (self.tagged is None):
            raise SchemaError(f"{where}: tag= and tagged= go together")
        # Kafka's per-field flexibleVersions (e.g. "none" for the header's ClientId).
        self.has_flexible_override = "flexible" in attrs
        self.flexible_override = parse_range(attrs["flexible"], where) \
            if self.has_flexible_override else None
        self.default = attrs.get("default")
        if self.default == '""':
            self.default = ""

    @property
    def is_array(self):
        return self.type.startswith("[]")

    @property
    def elem_type(self):
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self):
        return self.elem_type not in PRIMITIVES


class Message:
    def __init__(self, kind, name, api_key, api_name, valid, flexible, path):
        self.kind = kind  # request, response, header; key or value (a coordinator record)
        self.record_type = None  # a coordinator record's type (its key's version prefix)
        self.subdir = "messages"  # protocol/<subdir>/ of the generated files; "records" for records
        self.name = name
        self.api_key = api_key
        self.api_name = api_name
        self.valid = valid
        self.flexible = flexible
        self.path = path
        self.fields = []


def parse_schema(path):
    """Returns (messages, api) for one .schema file; api is (key, name, valid, flexible) or None."""
    messages = []
    api = None
    valid = flexible = None
    current = None
    stack = []  # (indent depth, Field) of the open parent fields
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for lineno, raw in enumerate(lines, 1):
        where = f"{os.path.basename(path)}:{lineno}"
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        doc = ""
        body = raw
        if "//" in raw:
            body, doc = raw.split("//", 1)
            doc = doc.strip()
        indent = len(body) - len(body.lstrip(" "))
        words = body.split()
        if indent == 0:
            key = words[0]
            if key == "api":
                api = [int(words[1]), words[2]]
            elif key == "valid":
                valid = parse_range(words[1], where)
            elif key == "flexible":
                flexible = parse_range(words[1], where)
            elif key == "record":
                # record <type> <Name>: a coordinator record's key (Name ends in Key) or value.
                if len(words) != 3 or not re.fullmatch(r"\d+", words[1]) or \
                        not re.fullmatch(r"\w+(Key|Value)", words[2]):
                    raise SchemaError(f"{where}: expected 'record <type> <Name>Key|Value'")
                current = Message("key" if words[2].endswith("Key") else "value", words[2], None,
                                  None, None, None, path)
                current.record_type = int(words[1])
                current.subdir = "records"
                messages.append(current)
                stack = []
            elif key in ("request", "response", "header"):
                if valid is None and key != "header":
                    raise SchemaError(f"{where}: 'valid' must come before '{key}'")
                current = Message(key, words[1], api[0] if api else None,
                                  api[1] if api else None, valid, flexible, path)
                messages.append(current)
                stack = []
            else:
                raise SchemaError(f"{where}: unknown directive '{key}'")
            continue
        if current is None:
            raise SchemaError(f"{where}: field outside a message")
        if indent % 2:
            raise SchemaError(f"{where}: indent by two spaces")
        depth = indent // 2
        if len(words) < 2:
            raise SchemaError(f"{where}: a field needs a name and a type")
        attrs = {}
        for w in words[2:]:
            if "=" not in w:
                raise SchemaError(f"{where}: expected key=value, got '{w}'")
            k, v = w.split("=", 1)
            attrs[k] = v
        field = Field(words[0], words[1], attrs, doc, where)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if depth == 1:
            current.fields.append(field)
        else:
            if not stack or stack[-1][0] != depth - 1:
                raise SchemaError(f"{where}: indented without a parent struct")
            stack[-1][1].fields.append(field)
        stack.append((depth, field))
    # Headers and records carry their own valid/flexible lines after the header/record line.
    for m in messages:
        if m.kind in ("header", "key", "value"):
            m.valid, m.flexible = valid, flexible
    if api is not None:
        api = (api[0], api[1], valid, flexible)
    for m in messages:
        check_fields(m, m.fields)
    return messages, api


RESERVED_MEMBERS = {"read", "write", "size", "is_default", "min_size", "decode", "encode",
                    "encoded_size", "api_key", "min_version", "max_version", "flexible_from",
                    "kafka_name", "type_name", "record_type", "is_key"}


def check_fields(msg, fields, top=True):
    tags = set()
    for f in fields:
        n = snake(f.name)
        if n in ("read", "write", "size", "is_default", "min_size") or (top and n in RESERVED_MEMBERS):
            raise SchemaError(f"{f.where}: field name {f.name} clashes with a generated member")
        if f.is_struct and not f.fields:
            raise SchemaError(f"{f.where}: struct type {f.elem_type} needs nested fields")
        if not f.is_struct and f.fields:
            raise SchemaError(f"{f.where}: {f.type} cannot have nested fields")
        if f.nullable and not (f.is_array or f.is_struct or f.type in ("string", "bytes", "records")):
            raise SchemaError(f"{f.where}: only strings, bytes, records, arrays and structs may be "
                              "nullable")
        if f.tagged is not None:
            if f.tag in tags:
                raise SchemaError(f"{f.where}: duplicate tag {f.tag}")
            tags.add(f.tag)
            if msg.flexible is None or f.tagged[0] < msg.flexible[0]:
                raise SchemaError(f"{f.where}: tagged versions must be flexible versions")
        check_fields(msg, f.fields, top=False)


def parse_errors(path):
    errors = []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip() or raw.startswith("#"):
                continue
            body, _, doc = raw.partition("//")
            words = body.split()
            if len(words) != 3 or words[2] not in ("retriable", "not_retriable"):
                raise SchemaError(f"errors.schema:{lineno}: expected CODE NAME retriable|not_retriable")
            errors.append((int(words[0]), words[1], words[2] == "retriable", doc.strip()))
    return errors


# ---------------------------------------------------------------------------------------------
# C++ generation

def snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = s.lower()
    return s + "_" if s in CPP_KEYWORDS or s in GENERATED_LOCALS else s


def mentions_version(code):
    """Whether generated code uses the version parameter (not a field named version_)."""
    return re.search(r"\bversion\b", code) is not None


def cpp_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def struct_shape(fields):
    """Everything of a struct's fields that reaches the wire or the C++ type (not the docs)."""
    return [(f.name, f.type, f.versions, f.nullable, f.tag, f.tagged, f.flexible_override,
             f.default, struct_shape(f.fields)) for f in fields]


class Gen:
    """Generates one message (top-level struct plus its nested structs)."""

    def __init__(self, msg):
        self.msg = msg
        self.top = snake(msg.name)
        # Nested struct names, flat inside the top-level struct (as Kafka's Java classes are).
        field_names = set()
        structs = []

        def walk(fields):
            for f in fields:
                field_names.add(snake(f.name))
                if f.is_struct:
                    structs.append(f)
                    walk(f.fields)
        walk(msg.fields)
        self.type_names = {}
        for f in structs:
            n = snake(f.elem_type)
            # A type may not share its name with a field (C++ would reinterpret the name).
            if n in field_names or n == self.top:
                n += "_data"
            if f.elem_type in self.type_names:
                # A struct used by several fields (Kafka's commonStructs) is one C++ type; each
                # use repeats its fields, which must be the same.
                first = next(g for g in structs if g.elem_type == f.elem_type)
                if struct_shape(first.fields) != struct_shape(f.fields):
                    raise SchemaError(f"{f.where}: struct {f.elem_type} defined twice, differently")
                continue
            self.type_names[f.elem_type] = n
        self.structs = structs

    # --- version conditions, folded against the message's valid range
    def cond(self, r):
        lo, hi = self.msg.valid
        r2 = intersect(r, self.msg.valid)
        if r2 is None:
            return "false"
        parts = []
        if r2[0] > lo:
            parts.append(f"version >= {r2[0]}")
        if r2[1] < hi:
            parts.append(f"version <= {r2[1]}")
        return " && ".join(parts) if parts else "true"

    def flex_cond(self):
        return self.cond(self.msg.flexible)

    def compact_cond(self, f):
        if f.has_flexible_override:
            return self.cond(intersect(f.flexible_override, self.msg.flexible))
        return self.flex_cond()

    def regular_cond(self, f):
        """Versions where f is an ordinary (positional) field."""
        if f.tagged is None:
            return self.cond(f.versions)
        # Versions of f that are not tagged: f.versions minus f.tagged (tagged is open-ended).
        r = intersect(f.versions, (0, f.tagged[0] - 1)) if f.tagged[0] > 0 else None
        return self.cond(r)

    def nullable_type(self, f):
        return f.nullable is not None and intersect(f.nullable, self.msg.valid) is not None

    def elem_cpp(self, f):
        if f.is_struct:
            return self.type_names[f.elem_type]
        return PRIMITIVES[f.elem_type][0]

    def field_cpp(self, f):
        t = self.elem_cpp(f)
        if f.is_array:
            t = f"std::vector<{t}>"
        if self.nullable_type(f):
            t = f"std::optional<{t}>"
        return t

    def default_init(self, f):
        d = f.default
        if f.is_array:
            if d == "null":
                return " = std::nullopt"
            # A tagged nullable array starts as Kafka's default, the empty array: an absent tag
            # decodes to it, and it is not written (a null one is).
            if f.tagged is not None and self.nullable_type(f):
                return f" = std::vector<{self.elem_cpp(f)}>{{}}"
            return ""
        if f.is_struct and self.nullable_type(f):
            return " = std::nullopt" if d == "null" else f" = {self.elem_cpp(f)}{{}}"
        t = f.type
        if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            v = int(d, 0) if d is not None else 0
            if v == 0:
                return " = 0"
            return f" = static_cast<{PRIMITIVES[t][0]}>({v}LL)" if v < 0 or v > 0x7FFFFFFF \
                else f" = {v}"
        if t == "float64":
            return f" = {float(d) if d is not None else 0.0!r}"
        if t == "bool":
            return f" = {'true' if d == 'true' else 'false'}"
        if t == "string":
            if d == "null":
                return " = std::nullopt"
            if self.nullable_type(f):
                return f" = std::string_view({cpp_string(d or '')})"
            return f" = {cpp_string(d)}" if d else ""
        if t in ("bytes", "records"):
            if d == "null" or (t == "records" and self.nullable_type(f)):
                return " = std::nullopt"
            return " = bytes_view{}" if self.nullable_type(f) else ""
        return ""

    def is_default_expr(self, f, x):
        d = f.default
        t = f.type
        nullable = self.nullable_type(f)
        if f.is_array:
            if d == "null":
                return f"!{x}.has_value()"
            return f"({x}.has_value() && {x}->empty())" if nullable else f"{x}.empty()"
        if f.is_struct:
            if nullable:
                return f"!{x}.has_value()" if d == "null" else \
                    f"({x}.has_value() && {x}->is_default())"
            return f"{x}.is_default()"
        if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            return f"{x} == {int(d, 0) if d is not None else 0}" if t != "int64" else \
                f"{x} == static_cast<int64_t>({int(d, 0) if d is not None else 0}LL)"
        if t == "float64":
            return f"{x} == {float(d) if d is not None else 0.0!r}"
        if t == "bool":
            return f"{x} == {'true' if d == 'true' else 'false'}"
        if t == "uuid":
            return f"{x}.is_zero()"
        if t == "string":
            if d == "null":
                return f"!{x}.has_value()"
            if nullable:
                return f"({x}.has_value() && *{x} == {cpp_string(d or '')})"
            return f"{x} == {cpp_string(d or '')}"
        # bytes, records
        if d == "null" or (t == "records" and nullable):
            return f"!{x}.has_value()"
        return f"({x}.has_value() && {x}->empty())" if nullable else f"{x}.empty()"

    # --- per-field code; c = compact expression, n = nullable-in-this-version expression
    def min_size_expr(self, f, c, n="false"):
        if f.is_array:
            return f"({c} ? 1 : 4)"
        if f.is_struct:
            e = f"{self.type_names[f.elem_type]}::min_size(version)"
            if not self.nullable_type(f) or n == "false":
                return e
            return "1" if n == "true" else f"(({n}) ? 1 : {e})"  # 1: the null marker
        if f.type == "string":
            return f"({c} ? 1 : 2)"
        if f.type in ("bytes", "records"):
            return f"({c} ? 1 : 4)"
        return str(PRIMITIVES[f.type][1])

    def elem_min_size(self, f, c):
        et = f.elem_type
        if f.is_struct:
            return f"{self.type_names[et]}::min_size(version)"
        if et == "string":
            return f"({c} ? 1 : 2)"
        if et in ("bytes", "records"):
            return f"({c} ? 1 : 4)"
        return str(PRIMITIVES[et][1])

    def read_scalar(self, et, c, rd="r"):
        if et == "string":
            return f"{rd}.read_string({c})"
        if et in ("bytes", "records"):
            return f"{rd}.read_bytes({c})"
        return f"{rd}.{PRIMITIVES[et][2]}()"

    def read_field(self, f, x, c, n, out, ind, rd="r"):
        p = "  " * ind
        nullable = self.nullable_type(f)
        if f.is_array:
            em = self.elem_min_size(f, c)
            out.append(f"{p}{{")
            out.append(f"{p}  int32_t count = {rd}.read_array_count({c}, {n}, {em});")
            if nullable:
                out.append(f"{p}  if (count < 0) {{")
                out.append(f"{p}    {x}.reset();")
                out.append(f"{p}  }} else {{")
                out.append(f"{p}    auto& items = {x}.emplace();")
            else:
                out.append(f"{p}  {{")
                out.append(f"{p}    auto& items = {x};")
            if f.is_struct:
                out.append(f"{p}    items.clear();")
                out.append(f"{p}    items.resize(static_cast<size_t>(count));")
                out.append(f"{p}    for (auto& item : items) {{")
                out.append(f"{p}      item.read({rd}, version);")
                out.append(f"{p}      if (!{rd}.ok()) break;")
                out.append(f"{p}    }}")
            else:
                out.append(f"{p}    items.clear();")
                out.append(f"{p}    items.reserve(static_cast<size_t>(count));")
                out.append(f"{p}    for (int32_t i = 0; i < count && {rd}.ok(); ++i) "
                           f"items.push_back({self.read_scalar(f.elem_type, c, rd)});")
            out.append(f"{p}  }}")
            out.append(f"{p}}}")
        elif f.is_struct and nullable:
            # Kafka's nullable struct: an int8 marker (negative: null) before the struct, in the
            # versions where it is nullable.
            body = [f"if ({rd}.read_int8() < 0) {{", f"  {x}.reset();", "} else {",
                    f"  {x} = {self.emplace_value(x)};", f"  {x}->read({rd}, version);", "}"]
            if n != "true":
                body = [f"if ({n}) {{"] + ["  " + b for b in body] + \
                    ["} else {", f"  {x} = {self.emplace_value(x)};",
                     f"  {x}->read({rd}, version);", "}"]
            out += [p + b for b in body]
        elif f.is_struct:
            out.append(f"{p}{x}.read({rd}, version);")
        elif f.type == "string" and nullable and n == "true":
            out.append(f"{p}{x} = {rd}.read_nullable_string({c});")
        elif f.type in ("bytes", "records") and nullable and n == "true":
            out.append(f"{p}{x} = {rd}.read_nullable_bytes({c});")
        elif f.type == "string" and nullable:
            out.append(f"{p}if ({n}) {{")
            out.append(f"{p}  {x} = {rd}.read_nullable_string({c});")
            out.append(f"{p}}} else {{")
            out.append(f"{p}  {x} = {rd}.read_string({c});")
            out.append(f"{p}}}")
        elif f.type in ("bytes", "records") and nullable:
            out.append(f"{p}if ({n}) {{")
            out.append(f"{p}  {x} = {rd}.read_nullable_bytes({c});")
            out.append(f"{p}}} else {{")
            out.append(f"{p}  {x} = {rd}.read_bytes({c});")
            out.append(f"{p}}}")
        else:
            out.append(f"{p}{x} = {self.read_scalar(f.type, c, rd)};")

    def write_scalar(self, et, v, c):
        if et == "string":
            return f"w.write_string({v}, {c});"
        if et in ("bytes", "records"):
            return f"w.write_bytes({v}, {c});"
        return f"w.{PRIMITIVES[et][3]}({v});"

    def write_field(self, f, x, c, n, out, ind):
        p = "  " * ind
        nullable = self.nullable_type(f)
        if f.is_array:
            if nullable:
                out.append(f"{p}if (!{x}.has_value()) {{")
                out.append(f"{p}  w.write_array_count(({n}) ? -1 : 0, {c});")
                out.append(f"{p}}} else {{")
                items = f"*{x}"
            else:
                out.append(f"{p}{{")
                items = x
            out.append(f"{p}  w.write_array_count(static_cast<int64_t>(({items}).size()), {c});")
            if f.is_struct:
                out.append(f"{p}  for (const auto& item : {items}) item.write(w, version);")
            else:
                out.append(f"{p}  for (const auto& item : {items}) "
                           f"{self.write_scalar(f.elem_type, 'item', c)}")
            out.append(f"{p}}}")
        elif f.is_struct and nullable:
            t = self.elem_cpp(f)
            body = [f"if (!{x}.has_value()) {{", "  w.write_int8(-1);", "} else {",
                    "  w.write_int8(1);", f"  {x}->write(w, version);", "}"]
            if n != "true":
                body = [f"if ({n}) {{"] + ["  " + b for b in body] + \
                    ["} else {", f"  {x}.value_or({t}{{}}).write(w, version);", "}"]
            out += [p + b for b in body]
        elif f.is_struct:
            out.append(f"{p}{x}.write(w, version);")
        elif f.type == "string" and nullable and n == "true":
            out.append(f"{p}w.write_nullable_string({x}, {c});")
        elif f.type in ("bytes", "records") and nullable and n == "true":
            out.append(f"{p}w.write_nullable_bytes({x}, {c});")
        elif f.type == "string" and nullable:
            out.append(f"{p}if ({n}) {{")
            out.append(f"{p}  w.write_nullable_string({x}, {c});")
            out.append(f"{p}}} else {{")
            out.append(f"{p}  w.write_string({x}.value_or(std::string_view{{}}), {c});")
            out.append(f"{p}}}")
        elif f.type in ("bytes", "records") and nullable:
            out.append(f"{p}if ({n}) {{")
            out.append(f"{p}  w.write_nullable_bytes({x}, {c});")
            out.append(f"{p}}} else {{")
            out.append(f"{p}  w.write_bytes({x}.value_or(bytes_view{{}}), {c});")
            out.append(f"{p}}}")
        else:
            out.append(f"{p}{self.write_scalar(f.type, x, c)}")

    def scalar_size(self, et, v, c):
        if et == "string":
            return f"string_size({v}, {c})"
        if et in ("bytes", "records"):
            return f"bytes_size({v}, {c})"
        return str(PRIMITIVES[et][1])

    def size_field(self, f, x, c, n, acc, out, ind):
        p = "  " * ind
        nullable = self.nullable_type(f)
        if f.is_array:
            if nullable:
                out.append(f"{p}if (!{x}.has_value()) {{")
                out.append(f"{p}  {acc} += array_count_size(({n}) ? -1 : 0, {c});")
                out.append(f"{p}}} else {{")
                items = f"*{x}"
            else:
                out.append(f"{p}{{")
                items = x
            out.append(f"{p}  {acc} += array_count_size(static_cast<int64_t>(({items}).size()), "
                       f"{c});")
            fixed = None if f.is_struct else PRIMITIVES[f.elem_type][1]
            if fixed is not None:
                out.append(f"{p}  {acc} += ({items}).size() * {fixed};")
            elif f.is_struct:
                out.append(f"{p}  for (const auto& item : {items}) {acc} += item.size(version);")
            else:
                out.append(f"{p}  for (const auto& item : {items}) "
                           f"{acc} += {self.scalar_size(f.elem_type, 'item', c)};")
            out.append(f"{p}}}")
        elif f.is_struct and nullable:
            t = self.elem_cpp(f)
            e = f"({x}.has_value() ? 1 + {x}->size(version) : 1)"
            if n != "true":
                e = f"(({n}) ? {e} : {x}.value_or({t}{{}}).size(version))"
            out.append(f"{p}{acc} += {e};")
        elif f.is_struct:
            out.append(f"{p}{acc} += {x}.size(version);")
        elif f.type == "string" and nullable and n == "true":
            out.append(f"{p}{acc} += nullable_string_size({x}, {c});")
        elif f.type in ("bytes", "records") and nullable and n == "true":
            out.append(f"{p}{acc} += nullable_bytes_size({x}, {c});")
        elif f.type == "string" and nullable:
            out.append(f"{p}{acc} += ({n}) ? nullable_string_size({x}, {c}) "
                       f": string_size({x}.value_or(std::string_view{{}}), {c});")
        elif f.type in ("bytes", "records") and nullable:
            out.append(f"{p}{acc} += ({n}) ? nullable_bytes_size({x}, {c}) "
                       f": bytes_size({x}.value_or(bytes_view{{}}), {c});")
        else:
            out.append(f"{p}{acc} += {self.scalar_size(f.type, x, c)};")

    # A present nullable struct, assigned rather than emplace()d: clang 14 caches
    # is_constructible<T> as false while the enclosing struct is incomplete (T's default member
    # initializers are not usable yet), so optional<T>::emplace() does not compile there.
    @staticmethod
    def emplace_value(x):
        return f"std::remove_reference_t<decltype(*{x})>{{}}"

    # --- a tagged field's value (always the flexible encoding). A nullable struct's marker there is
    # an unsigned varint, 0 for null and 1 before the struct (Kafka's generator; outside tagged
    # fields it is an int8, -1 or 1). Everything else is encoded as an ordinary field.
    def tagged_read(self, f, x, out):
        if f.is_struct and self.nullable_type(f):
            out += ["if (sub.read_unsigned_varint() == 0) {", f"  {x}.reset();", "} else {",
                    f"  {x} = {self.emplace_value(x)};", f"  {x}->read(sub, version);", "}"]
        else:
            self.read_field(f, x, "true", self.cond(f.nullable), out, 0, rd="sub")

    def tagged_write(self, f, x, out):
        if f.is_struct and self.nullable_type(f):
            out += [f"    w.write_unsigned_varint({x}.has_value() ? 1 : 0);",
                    f"    if ({x}.has_value()) {x}->write(w, version);"]
        else:
            self.write_field(f, x, "true", self.cond(f.nullable), out, 2)

    def tagged_size(self, f, x, out):
        if f.is_struct and self.nullable_type(f):
            out.append(f"    field_size += {x}.has_value() ? 1 + {x}->size(version) : 1;")
        else:
            self.size_field(f, x, "true", self.cond(f.nullable), "field_size", out, 2)

    # --- struct bodies
    def struct_decl(self, name, fields, out, ind, top=False):
        p = "  " * ind
        for f in fields:
            if f.doc:
                out.append(f"{p}// {f.doc}")
            vs = [f"versions {format_range(f.versions)}"]
            if f.nullable:
                vs.append(f"nullable {format_range(f.nullable)}")
            if f.tagged:
                vs.append(f"tag {f.tag} in {format_range(f.tagged)}")
            out.append(f"{p}// ({', '.join(vs)})")
            out.append(f"{p}{self.field_cpp(f)} {snake(f.name)}{self.default_init(f)};")
        out.append("")
        out.append(f"{p}// Building blocks of decode/encode, also used by enclosing structs.")
        out.append(f"{p}void read(reader& r, int16_t version);")
        out.append(f"{p}void write(writer& w, int16_t version) const;")
        out.append(f"{p}size_t size(int16_t version) const;")
        out.append(f"{p}bool is_default() const;")
        out.append(f"{p}static size_t min_size(int16_t version);")

    def struct_defs(self, qual, fields, out):
        regular = [f for f in fields if self.regular_cond(f) != "false"]
        tagged = sorted([f for f in fields if f.tagged is not None and self.cond(f.tagged) != "false"],
                        key=lambda f: f.tag)
        flex = self.flex_cond()
        uses_version = False

        def guard(cond, body, ind=1):
            p = "  " * ind
            if cond == "true":
                return body
            return [f"{p}if ({cond}) {{"] + ["  " + b for b in body] + [f"{p}}}"]

        # read
        body = []
        for f in regular:
            fb = []
            self.read_field(f, snake(f.name), self.compact_cond(f), self.cond(f.nullable), fb, 1)
            body += guard(self.regular_cond(f), fb)
        if flex != "false":
            tb = ["  uint32_t tagged_count = r.read_unsigned_varint();",
                  "  for (uint32_t i = 0; i < tagged_count && r.ok(); ++i) {",
                  "    uint32_t tag = r.read_unsigned_varint();",
                  "    uint32_t tag_size = r.read_unsigned_varint();",
                  "    reader sub = r.sub_reader(tag_size);"]
            if tagged:
                tb.append("    switch (tag) {")
                for f in tagged:
                    fb = []
                    self.tagged_read(f, snake(f.name), fb)
                    tb.append(f"      case {f.tag}:")
                    tb.append(f"        if ({self.cond(f.tagged)}) {{")
                    tb += ["          " + b for b in fb]
                    tb.append("          r.absorb(sub);")
                    tb.append("        }")
                    tb.append("        break;")
                tb.append("      default:  // unknown tags are skipped")
                tb.append("        break;")
                tb.append("    }")
            else:
                tb.append("    (void)tag;  // no known tags: every tagged field is skipped")
                tb.append("    (void)sub;")
            tb.append("  }")
            body += guard(flex, tb)
        text = "\n".join(body)
        uses_version = mentions_version(text)
        out.append(f"void {qual}::read(reader& r, int16_t version) {{")
        if not uses_version:
            out.append("  (void)version;")
        if not body:
            out.append("  (void)r;")
        out += body
        out.append("}")
        out.append("")

        # write
        body = []
        for f in regular:
            fb = []
            self.write_field(f, snake(f.name), self.compact_cond(f), self.cond(f.nullable), fb, 1)
            body += guard(self.regular_cond(f), fb)
        if flex != "false":
            tb = ["  uint32_t tagged_count = 0;"]
            for f in tagged:
                tb.append(f"  const bool has_{snake(f.name)} = ({self.cond(f.tagged)}) && "
                          f"!({self.is_default_expr(f, snake(f.name))});")
                tb.append(f"  if (has_{snake(f.name)}) ++tagged_count;")
            tb.append("  w.write_unsigned_varint(tagged_count);")
            for f in tagged:
                x = snake(f.name)
                tb.append(f"  if (has_{x}) {{")
                tb.append(f"    w.write_unsigned_varint({f.tag});")
                tb.append("    size_t field_size = 0;")
                sb = []
                self.tagged_size(f, x, sb)
                tb += sb
                tb.append("    w.write_unsigned_varint(static_cast<uint32_t>(field_size));")
                wb = []
                self.tagged_write(f, x, wb)
                tb += wb
                tb.append("  }")
            body += guard(flex, tb)
        text = "\n".join(body)
        out.append(f"void {qual}::write(writer& w, int16_t version) const {{")
        if not mentions_version(text):
            out.append("  (void)version;")
        if not body:
            out.append("  (void)w;")
        out += body
        out.append("}")
        out.append("")

        # size
        body = []
        for f in regular:
            fb = []
            self.size_field(f, snake(f.name), self.compact_cond(f), self.cond(f.nullable), "n",
                            fb, 1)
            body += guard(self.regular_cond(f), fb)
        if flex != "false":
            tb = ["  uint32_t tagged_count = 0;"]
            for f in tagged:
                x = snake(f.name)
                tb.append(f"  if (({self.cond(f.tagged)}) && !({self.is_default_expr(f, x)})) {{")
                tb.append("    ++tagged_count;")
                tb.append("    size_t field_size = 0;")
                sb = []
                self.tagged_size(f, x, sb)
                tb += sb
                tb.append(f"    n += unsigned_varint_size({f.tag}) + "
                          "unsigned_varint_size(field_size) + field_size;")
                tb.append("  }")
            tb.append("  n += unsigned_varint_size(tagged_count);")
            body += guard(flex, tb)
        text = "\n".join(body)
        out.append(f"size_t {qual}::size(int16_t version) const {{")
        if not mentions_version(text):
            out.append("  (void)version;")
        out.append("  size_t n = 0;")
        out += body
        out.append("  return n;")
        out.append("}")
        out.append("")

        # is_default
        exprs = [self.is_default_expr(f, snake(f.name)) for f in fields]
        out.append(f"bool {qual}::is_default() const {{")
        out.append("  return " + (" &&\n         ".join(exprs) if exprs else "true") + ";")
        out.append("}")
        out.append("")

        # min_size
        body = []
        for f in regular:
            cond = self.regular_cond(f)
            e = self.min_size_expr(f, self.compact_cond(f), self.cond(f.nullable))
            body.append(f"  n += {e};" if cond == "true" else f"  if ({cond}) n += {e};")
        if flex != "false":
            body.append("  n += 1;" if flex == "true" else f"  if ({flex}) n += 1;")
        text = "\n".join(body)
        out.append(f"size_t {qual}::min_size(int16_t version) {{")
        if not mentions_version(text):
            out.append("  (void)version;")
        out.append("  size_t n = 0;")
        out += body
        out.append("  return n;")
        out.append("}")
        out.append("")

    def header(self):
        m = self.msg
        out = []
        title = {"request": "request", "response": "response", "header": "header",
                 "key": f"the key of coordinator record type {m.record_type}",
                 "value": f"the value of coordinator record type {m.record_type}"}[m.kind]
        out.append(f"// GENERATED by scripts/gen_protocol.py from {schema_path(m)} -- do not edit.")
        out.append(f"// Kafka's {m.name} ({title}); the API is described in docs/schema-format.md."
                   " A decoded")
        out.append("// message borrows the buffer it was decoded from (strings, bytes and records"
                   " are views).")
        out.append("#pragma once")
        out.append("")
        for inc in ("<cstddef>", "<cstdint>", "<optional>", "<string_view>", "<vector>"):
            out.append(f"#include {inc}")
        out.append("")
        out.append('#include "base/result.h"')
        out.append('#include "protocol/reader.h"')
        out.append('#include "protocol/writer.h"')
        out.append("")
        out.append("namespace tarn::protocol {")
        out.append("")
        out.append(f"struct {self.top} {{")
        if m.api_key is not None:
            out.append(f"  static constexpr int16_t api_key = {m.api_key};")
        if m.record_type is not None:
            is_key = "true" if m.kind == "key" else "false"
            out.append(f"  static constexpr int16_t record_type = {m.record_type};"
                       "  // docs/groups.md")
            out.append(f"  static constexpr bool is_key = {is_key};")
        out.append(f"  static constexpr int16_t min_version = {m.valid[0]};")
        out.append(f"  static constexpr int16_t max_version = {m.valid[1]};")
        flex_from = m.flexible[0] if m.flexible else -1
        out.append(f"  static constexpr int16_t flexible_from = {flex_from};  // -1: never flexible")
        out.append(f"  static constexpr std::string_view kafka_name = {cpp_string(m.name)};")
        out.append(f"  static constexpr std::string_view type_name = {cpp_string(self.top)};")
        out.append("")
        # nested structs, innermost first
        emitted = set()

        def emit_struct(f):
            for sub in f.fields:
                if sub.is_struct:
                    emit_struct(sub)
            n = self.type_names[f.elem_type]
            if n in emitted:
                return
            emitted.add(n)
            out.append(f"  struct {n} {{")
            self.struct_decl(n, f.fields, out, 2)
            out.append("  };")
            out.append("")
        for f in m.fields:
            if f.is_struct:
                emit_struct(f)
        self.struct_decl(self.top, m.fields, out, 1, top=True)
        out.append("")
        out.append("  // Decodes a message of this version from r; the result borrows r's buffer."
                   " Never throws;")
        out.append("  // allocates at most in proportion to the bytes read.")
        out.append(f"  static result<{self.top}, decode_error> decode(reader& r, int16_t version);")
        out.append("  // Appends the encoding for this version (which must be in"
                   " [min_version, max_version]).")
        out.append("  void encode(writer& w, int16_t version) const { write(w, version); }")
        out.append("  size_t encoded_size(int16_t version) const { return size(version); }")
        out.append("};")
        out.append("")
        out.append("}  // namespace tarn::protocol")
        return "\n".join(out) + "\n"

    def source(self, header_name):
        m = self.msg
        out = [f"// GENERATED by scripts/gen_protocol.py from {schema_path(m)} -- do not edit.",
               f'#include "protocol/{m.subdir}/{header_name}"', "",
               "namespace tarn::protocol {", ""]

        defined = set()

        def walk(fields):
            for f in fields:
                if f.is_struct:
                    walk(f.fields)
                    n = self.type_names[f.elem_type]
                    if n not in defined:
                        defined.add(n)
                        self.struct_defs(f"{self.top}::{n}", f.fields, out)
        walk(m.fields)
        self.struct_defs(self.top, m.fields, out)
        out.append(f"result<{self.top}, decode_error> {self.top}::decode(reader& r, "
                   "int16_t version) {")
        out.append("  if (version < min_version || version > max_version) {")
        out.append("    r.fail(decode_errc::unsupported_version);")
        out.append("    return fail(r.error());")
        out.append("  }")
        out.append(f"  {self.top} message;")
        out.append("  message.read(r, version);")
        out.append("  if (!r.ok()) return fail(r.error());")
        out.append("  return message;")
        out.append("}")
        out.append("")
        out.append("}  // namespace tarn::protocol")
        return "\n".join(out) + "\n"


def schema_path(m):
    """The schema file of a message as generated files name it (schema/..., schema/records/...)."""
    sub = "records/" if m.subdir == "records" else ""
    return f"schema/{sub}{os.path.basename(m.path)}"


def write_if_changed(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def load_all(schema_dir):
    """Returns (messages, apis) for every schema file, apis sorted by key."""
    messages, apis = [], []
    for name in sorted(os.listdir(schema_dir)):
        if not name.endswith(".schema") or name == "errors.schema":
            continue
        msgs, api = parse_schema(os.path.join(schema_dir, name))
        stem = name[:-len(".schema")]
        m = re.fullmatch(r"(\d{3})_([a-z0-9_]+)", stem)
        for msg in msgs:
            expected = f"{m.group(2)}_{msg.kind}" if m else stem
            if snake(msg.name) != expected:
                raise SchemaError(f"{name}: message {msg.name} does not match the file name")
            if m and int(m.group(1)) != msg.api_key:
                raise SchemaError(f"{name}: api key {msg.api_key} does not match the file name")
        messages += msgs
        if api:
            apis.append(api)
    apis.sort()
    return messages, apis


def load_records(schema_dir):
    """Every coordinator record in SCHEMA_DIR/records/ (none if the folder is absent), sorted by
    record type, key before value. Each file holds one key or value and is named after it."""
    records = []
    d = os.path.join(schema_dir, "records")
    if not os.path.isdir(d):
        return records
    for name in sorted(os.listdir(d)):
        if not name.endswith(".schema"):
            continue
        msgs, api = parse_schema(os.path.join(d, name))
        if api is not None or len(msgs) != 1 or msgs[0].record_type is None:
            raise SchemaError(f"records/{name}: expected one 'record' and nothing else")
        if snake(msgs[0].name) != name[:-len(".schema")]:
            raise SchemaError(f"records/{name}: record {msgs[0].name} does not match the file name")
        records += msgs
    types = {}
    for m in records:
        if m.kind in types.setdefault(m.record_type, {}):
            raise SchemaError(f"records: two {m.kind}s for record type {m.record_type}")
        types[m.record_type][m.kind] = m
    for t, kinds in types.items():
        if len(kinds) != 2:
            raise SchemaError(f"records: record type {t} has a {next(iter(kinds))} only")
        key = kinds["key"]
        if key.name[:-len("Key")] + "Value" != kinds["value"].name:
            raise SchemaError(f"records: record type {t}: {key.name} and {kinds['value'].name}")
        if key.valid != (0, 0):
            # Kafka writes and reads every key at version 0 (the prefix is the record type).
            raise SchemaError(f"records: {key.name} must be valid in version 0 only")
    records.sort(key=lambda m: (m.record_type, m.kind != "key"))
    return records


def records_umbrella(records):
    out = ["// GENERATED by scripts/gen_protocol.py from schema/records/ -- do not edit.",
           "// Every coordinator record (docs/groups.md), visit_record(), and the framing",
           "// Kafka's CoordinatorRecordSerde gives them in a record batch: the key is the record",
           "// type (int16) and then the key at version 0; the value is its version (int16) and",
           "// then the value at that version; a tombstone's value is null.",
           "#pragma once", "", "#include <cstdint>", "#include <vector>", ""]
    for m in records:
        out.append(f'#include "protocol/records/{snake(m.name)}.h"')
    out += ["", "namespace tarn::protocol {", "",
            "// Calls f.template operator()<key_type, value_type>() for a record type; returns",
            "// false (and calls nothing) if tarn has no schema for it.",
            "template <typename F>",
            "bool visit_record(int16_t record_type, F&& f) {",
            "  switch (record_type) {"]
    for m in records:
        if m.kind == "key":
            value = snake(m.name[:-len("Key")] + "Value")
            out += [f"    case {m.record_type}:",
                    f"      f.template operator()<{snake(m.name)}, {value}>();",
                    "      return true;"]
    out += ["    default:", "      return false;", "  }", "}", "",
            "// The bytes of a record's key: the record type, then the key at version 0.",
            "template <typename Key>",
            "  requires(Key::is_key)",
            "std::vector<uint8_t> encode_record_key(const Key& key) {",
            "  std::vector<uint8_t> out;",
            "  out.reserve(2 + key.encoded_size(0));",
            "  writer w(out);",
            "  w.write_int16(Key::record_type);",
            "  key.encode(w, 0);",
            "  return out;",
            "}", "",
            "// The bytes of a record's value: the version, then the value at that version.",
            "template <typename Value>",
            "  requires(!Value::is_key)",
            "std::vector<uint8_t> encode_record_value(const Value& value, int16_t version) {",
            "  std::vector<uint8_t> out;",
            "  out.reserve(2 + value.encoded_size(version));",
            "  writer w(out);",
            "  w.write_int16(version);",
            "  value.encode(w, version);",
            "  return out;",
            "}", "",
            "}  // namespace tarn::protocol"]
    return "\n".join(out) + "\n"


def api_table(apis):
    out = ["// GENERATED by scripts/gen_protocol.py from the api lines in schema/*.schema -- do not"
           " edit.",
           "// The APIs tarn can parse: key, Kafka's name, the versions the schema can decode and the",
           "// first flexible version. What the broker serves is its own (narrower) choice.",
           "#pragma once", "", "#include <array>", "#include <cstdint>", "#include <string_view>",
           "", "namespace tarn::protocol {", "",
           "struct api_info {",
           "  int16_t api_key;",
           "  std::string_view name;",
           "  int16_t min_version;  // lowest version the schema can parse",
           "  int16_t max_version;  // highest version the schema can parse",
           "  int16_t flexible_from;  // first flexible version, -1 if none",
           "};", "",
           f"inline constexpr std::array<api_info, {len(apis)}> all_apis = {{{{"]
    for key, name, valid, flexible in apis:
        ff = flexible[0] if flexible else -1
        out.append(f"    {{{key}, {cpp_string(name)}, {valid[0]}, {valid[1]}, {ff}}},")
    out += ["}};", "",
            "// The entry for api_key, or nullptr if tarn has no schema for it.",
            "constexpr const api_info* find_api(int16_t api_key) {",
            "  for (const api_info& api : all_apis) {",
            "    if (api.api_key == api_key) return &api;",
            "  }",
            "  return nullptr;",
            "}", "", "}  // namespace tarn::protocol"]
    return "\n".join(out) + "\n"


def error_table(errors):
    out = ["// GENERATED by scripts/gen_protocol.py from schema/errors.schema -- do not edit.",
           "// Kafka's error codes (org.apache.kafka.common.protocol.Errors, Kafka 4.4.0): the code,",
           "// Kafka's name, whether a client may retry, and Kafka's default message.",
           "#pragma once", "", "#include <array>", "#include <cstdint>", "#include <string_view>",
           "", "namespace tarn::protocol {", "",
           "enum class error_code : int16_t {"]
    for code, name, _, _ in errors:
        out.append(f"  {name.lower()} = {code},")
    out += ["};", "",
            "struct error_info {",
            "  error_code code;",
            "  std::string_view name;  // Kafka's name, e.g. UNKNOWN_TOPIC_OR_PARTITION",
            "  bool retriable;         // the Java client's exception is a RetriableException",
            "  std::string_view message;",
            "};", "",
            f"inline constexpr std::array<error_info, {len(errors)}> all_errors = {{{{"]
    for code, name, retriable, msg in errors:
        out.append(f"    {{error_code::{name.lower()}, {cpp_string(name)}, "
                   f"{'true' if retriable else 'false'},")
        out.append(f"     {cpp_string(msg)}}},")
    out += ["}};", "",
            "// The entry for a wire error code, or nullptr for a code Kafka 4.4 does not define.",
            "constexpr const error_info* find_error(int16_t code) {",
            "  for (const error_info& e : all_errors) {",
            "    if (static_cast<int16_t>(e.code) == code) return &e;",
            "  }",
            "  return nullptr;",
            "}",
            "constexpr const error_info& describe(error_code code) {",
            "  const error_info* e = find_error(static_cast<int16_t>(code));",
            "  return e ? *e : all_errors[0];  // UNKNOWN_SERVER_ERROR",
            "}",
            "constexpr bool is_retriable(error_code code) { return describe(code).retriable; }",
            "// The int16 a response field carries for an error (found by ADL: code(error_code::x)).",
            "constexpr int16_t code(error_code e) { return static_cast<int16_t>(e); }",
            "", "}  // namespace tarn::protocol"]
    return "\n".join(out) + "\n"


def umbrella(messages, apis):
    out = ["// GENERATED by scripts/gen_protocol.py -- do not edit.",
           "// Every generated message, the API table, the error table, and visit_api(): calls",
           "// f.template operator()<request_type, response_type>() for an API key, so code can be",
           "// written once for every API (the fuzz target, the broker's dispatch, tests).",
           "#pragma once", "", "#include <cstdint>", "",
           '#include "protocol/api_table.h"', '#include "protocol/error_codes.h"']
    for m in messages:
        out.append(f'#include "protocol/messages/{snake(m.name)}.h"')
    out += ["", "namespace tarn::protocol {", "",
            "// Returns false (and calls nothing) if tarn has no schema for api_key.",
            "template <typename F>",
            "bool visit_api(int16_t api_key, F&& f) {",
            "  switch (api_key) {"]
    by_key = {}
    for m in messages:
        if m.api_key is not None:
            by_key.setdefault(m.api_key, {})[m.kind] = snake(m.name)
    for key in sorted(by_key):
        out.append(f"    case {key}:")
        out.append(f"      f.template operator()<{by_key[key]['request']}, "
                   f"{by_key[key]['response']}>();")
        out.append("      return true;")
    out += ["    default:", "      return false;", "  }", "}", "",
            "}  // namespace tarn::protocol"]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    schema_dir, out_dir = argv[1], argv[2]
    try:
        messages, apis = load_all(schema_dir)
        errors = parse_errors(os.path.join(schema_dir, "errors.schema"))
        for msg in messages:
            g = Gen(msg)
            base = snake(msg.name)
            write_if_changed(os.path.join(out_dir, "protocol", "messages", base + ".h"), g.header())
            write_if_changed(os.path.join(out_dir, "protocol", "messages", base + ".cc"),
                             g.source(base + ".h"))
        write_if_changed(os.path.join(out_dir, "protocol", "api_table.h"), api_table(apis))
        write_if_changed(os.path.join(out_dir, "protocol", "error_codes.h"), error_table(errors))
        write_if_changed(os.path.join(out_dir, "protocol", "messages.h"),
                         umbrella(messages, apis))
        records = load_records(schema_dir)
        for rec in records:
            g = Gen(rec)
            base = snake(rec.name)
            write_if_changed(os.path.join(out_dir, "protocol", "records", base + ".h"), g.header())
            write_if_changed(os.path.join(out_dir, "protocol", "records", base + ".cc"),
                             g.source(base + ".h"))
        write_if_changed(os.path.join(out_dir, "protocol", "records.h"), records_umbrella(records))
    except SchemaError as e:
        print(f"gen_protocol: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
