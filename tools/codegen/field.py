"""Code for one field: the statements that read or write it, its default, its Python type.

Emitters return lists of source lines at a given indentation. A field's version guard is a Python
expression over ``version`` (:func:`cond`); whether its encoding is flexible or nullable is decided at
generation time where the versions allow it, otherwise at run time (``flexible`` / a guard).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from tools.codegen.spec import FieldSpec, MessageSpec, StructSpec, Versions

FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}
PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "records": "Any",
    "uuid": "uuid.UUID",
}


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_" if keyword.iskeyword(s) else s

# ------------------------------------------------------------------------------------ version guards


def cond(present: Versions, valid: Versions) -> str | None:
    """A Python expression over ``version`` true exactly for ``present`` within ``valid``.

    None means always true; ``"False"`` means never.
    """
    present = present.intersect(valid)
    if present == valid:
        return None
    if not present:
        return "False"
    parts = []
    for lo, hi in present.ranges:
        lo_needed, hi_needed = lo > valid.lowest, hi < valid.highest
        if lo_needed and hi_needed:
            parts.append(f"version == {lo}" if lo == hi else f"{lo} <= version <= {hi}")
        elif lo_needed:
            parts.append(f"version >= {lo}")
        elif hi_needed:
            parts.append(f"version <= {hi}")
        else:
            parts.append("True")
    return " or ".join(parts)


def ranges_literal(v: Versions, valid: Versions) -> str:
    v = v.intersect(valid)
    return "(" + "".join(f"({lo}, {hi}), " for lo, hi in v.ranges) + ")"


# ------------------------------------------------------------------------------------- field helpers


@dataclass
class Ctx:
    """What the generator knows about one message while emitting its structs."""

    spec: MessageSpec
    valid: Versions
    structs: dict[str, StructSpec]  # spec struct name -> definition
    class_names: dict[str, str]  # spec struct name -> generated class name
    structs_fmt: dict[str, str]  # struct format -> constant name
    detaching: set[str]  # struct names whose encoding may reference a blob (records inside)

    def fmt_const(self, fmt: str) -> str:
        if fmt not in self.structs_fmt:
            self.structs_fmt[fmt] = "_S_" + fmt.lstrip('>').replace('?', 'o')
        return self.structs_fmt[fmt]


def default_expr(f: FieldSpec, ctx: Ctx) -> tuple[str, bool]:
    """(python expression for the default, whether it needs default_factory)."""
    d = f.default
    if f.is_array:
        if d == "null":
            return "None", False
        return "list", True
    if f.is_struct:
        if d == "null":
            return "None", False
        return ctx.class_names[f.type], True
    t = f.type
    if d == "null":
        return "None", False
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return (str(int(d, 0)) if d not in (None, "") else "0"), False
    if t == "float64":
        return (repr(float(d)) if d not in (None, "") else "0.0"), False
    if t == "bool":
        return ("True" if d == "true" else "False"), False
    if t == "string":
        return repr(d if d is not None else ""), False
    if t == "bytes":
        return 'b""', False
    if t == "records":
        return "None", False
    if t == "uuid":
        return "ZERO_UUID", False
    raise ValueError(f"no default for {t}")


def py_type(f: FieldSpec, ctx: Ctx) -> str:
    if f.is_struct:
        inner = ctx.class_names[f.element_type]
    else:
        inner = PY_TYPES[f.element_type]
    t = f"list[{inner}]" if f.is_array else inner
    if f.nullable_versions or f.default == "null" or f.type == "records":
        t += " | None"
    return t


def min_item_size(elem: str, flexible: bool) -> int:
    if elem in FIXED:
        return FIXED[elem][1]
    if elem == "uuid":
        return 16
    if elem == "string":
        return 1 if flexible else 2
    if elem in ("bytes", "records"):
        return 1 if flexible else 4
    return 1


def field_flex(f: FieldSpec, present: Versions, ctx: Ctx) -> str:
    """'1' always flexible, '0' never, or 'flexible' (decided at run time)."""
    flex_set = f.flexible_versions if f.flexible_versions is not None else ctx.spec.flexible_versions
    fv = present.intersect(flex_set)
    if not fv:
        return "0"
    if fv == present:
        return "1"
    if f.flexible_versions is not None:
        raise ValueError(f"field-level flexible versions that vary: {f.name}")
    return "flexible"


def field_null(f: FieldSpec, present: Versions) -> str:
    nv = present.intersect(f.nullable_versions)
    if not nv:
        return "0"
    if nv == present:
        return "1"
    return cond(nv, present) or "True"


def pick(flex: str, null: str, names: dict[tuple[str, str], str]) -> str:
    """Choose a primitive function by flexibility and nullability, at generation or at run time."""
    flex_opts = [flex] if flex in ("0", "1") else ["1", "0"]
    null_opts = [null] if null in ("0", "1") else ["1", "0"]

    def by_null(fl: str) -> str:
        if len(null_opts) == 1:
            return names[(fl, null_opts[0])]
        return f"({names[(fl, '1')]} if {null} else {names[(fl, '0')]})"

    if len(flex_opts) == 1:
        return by_null(flex_opts[0])
    return f"({by_null('1')} if flexible else {by_null('0')})"


STRING_READERS = {
    ("0", "0"): "read_string",
    ("0", "1"): "read_nullable_string",
    ("1", "0"): "read_compact_string",
    ("1", "1"): "read_compact_nullable_string",
}
STRING_WRITERS = {k: v.replace("read_", "write_") for k, v in STRING_READERS.items()}
BYTES_READERS = {k: v.replace("string", "bytes") for k, v in STRING_READERS.items()}
BYTES_WRITERS = {k: v.replace("read_", "write_") for k, v in BYTES_READERS.items()}
ARRAY_LEN_READERS = {(fl, nl): ("read_compact_array_len" if fl == "1" else "read_array_len") for fl in "01" for nl in "01"}
ARRAY_LEN_WRITERS = {(fl, nl): ("write_compact_array_len" if fl == "1" else "write_array_len") for fl in "01" for nl in "01"}


# -------------------------------------------------------------------------------------------- reads


def emit_read_value(f: FieldSpec, present: Versions, target: str, ctx: Ctx, ind: str, buf: str = "buf",
                    tagged: bool = False) -> list[str]:
    """Statements that read field ``f`` at ``pos`` into ``target``, advancing ``pos``. A nullable struct
    starts with a presence marker: an int8 (-1 = null) in place, an unsigned varint (0 = null) as a
    tagged field (``tagged``), as Kafka's generated readers do."""
    flex = field_flex(f, present, ctx)
    null = field_null(f, present)
    elem = f.element_type
    out: list[str] = []
    if f.is_array:
        lenf = pick(flex, "0", ARRAY_LEN_READERS)
        mis = min_item_size(elem, flex != "0")  # the smaller bound when flexibility is decided at run time
        out.append(f"{ind}n, pos = {lenf}({buf}, pos, {mis})" if mis != 1 else f"{ind}n, pos = {lenf}({buf}, pos)")
        out.append(f"{ind}if n < 0:")
        if null == "0":
            out.append(f'{ind}    raise MalformedMessageError("null in non-nullable array {f.name}")')
        elif null == "1":
            out.append(f"{ind}    {target} = None")
        else:
            out.append(f"{ind}    if not ({null}):")
            out.append(f'{ind}        raise MalformedMessageError("null in non-nullable array {f.name}")')
            out.append(f"{ind}    {target} = None")
        if elem in FIXED:
            ch, size = FIXED[elem]
            out.append(f"{ind}else:")
            out.append(f'{ind}    {target} = list(struct.unpack_from(">%d{ch}" % n, {buf}, pos))')
            out.append(f"{ind}    pos += n * {size}")
        elif f.is_struct:
            cls = ctx.class_names[elem]
            out.append(f"{ind}else:")
            out.append(f"{ind}    {target} = items = []")
            out.append(f"{ind}    read = {cls}._read")
            out.append(f"{ind}    for _ in range(n):")
            out.append(f"{ind}        item, pos = read({buf}, pos, version)")
            out.append(f"{ind}        items.append(item)")
        else:
            elem_field = FieldSpec(name=f.name, type=elem, versions=f.versions, flexible_versions=f.flexible_versions)
            out.append(f"{ind}else:")
            out.append(f"{ind}    {target} = items = []")
            out.append(f"{ind}    for _ in range(n):")
            out.extend(emit_read_value(elem_field, present, "item", ctx, ind + "        ", buf))
            out.append(f"{ind}        items.append(item)")
        return out
    if f.is_struct:
        cls = ctx.class_names[elem]
        if null == "0":
            out.append(f"{ind}{target}, pos = {cls}._read({buf}, pos, version)")
        else:
            guard = "" if null == "1" else f" and ({null})"
            if tagged:
                out.append(f"{ind}if {buf}[pos] == 0{guard}:  # uvarint presence marker, 0 = null")
            else:
                out.append(f"{ind}if {buf}[pos] >= 128{guard}:  # int8 presence marker, -1 = null")
            out.append(f"{ind}    {target} = None")
            out.append(f"{ind}    pos += 1")
            out.append(f"{ind}else:")
            out.append(f"{ind}    {target}, pos = {cls}._read({buf}, pos + 1, version)")
        return out
    t = f.type
    if t in FIXED:
        ch, size = FIXED[t]
        const = ctx.fmt_const(">" + ch)
        out.append(f"{ind}({target},) = {const}.unpack_from({buf}, pos)")
        out.append(f"{ind}pos += {size}")
    elif t == "string":
        out.append(f"{ind}{target}, pos = {pick(flex, null, STRING_READERS)}({buf}, pos)")
    elif t == "bytes":
        out.append(f"{ind}{target}, pos = {pick(flex, null, BYTES_READERS)}({buf}, pos)")
    elif t == "records":
        fn = {"0": "read_records", "1": "read_compact_records"}.get(flex, "(read_compact_records if flexible else read_records)")
        out.append(f"{ind}{target}, pos = {fn}({buf}, pos)")
    elif t == "uuid":
        out.append(f"{ind}{target}, pos = read_uuid({buf}, pos)")
    else:
        raise ValueError(f"unknown type {t}")
    return out


def local(f: FieldSpec) -> str:
    return "f_" + snake(f.name)


def default_value(f: FieldSpec, ctx: Ctx) -> str:
    expr, factory = default_expr(f, ctx)
    return f"{expr}()" if factory else expr


# ------------------------------------------------------------------------------------------- writes


def emit_write_value(f: FieldSpec, present: Versions, value: str, ctx: Ctx, ind: str, w: str = "w",
                     tagged: bool = False) -> list[str]:
    """Statements that write ``value`` for field ``f`` to bytearray ``b`` (and writer ``w``); for the
    presence marker of nullable structs see :func:`emit_read_value`."""
    flex = field_flex(f, present, ctx)
    null = field_null(f, present)
    elem = f.element_type
    out: list[str] = []
    if f.is_array:
        lenf = pick(flex, "0", ARRAY_LEN_WRITERS)
        out.append(f"{ind}items = {value}")
        out.append(f"{ind}if items is None:")
        if null == "0":
            out.append(f'{ind}    raise ProtocolEncodeError("null in non-nullable array {f.name}")')
        else:
            if null != "1":
                out.append(f"{ind}    if not ({null}):")
                out.append(f'{ind}        raise ProtocolEncodeError("null in non-nullable array {f.name}")')
            out.append(f"{ind}    {lenf}(b, -1)")
        out.append(f"{ind}else:")
        out.append(f"{ind}    {lenf}(b, len(items))")
        if elem in FIXED:
            ch, _ = FIXED[elem]
            out.append(f'{ind}    b += struct.pack(">%d{ch}" % len(items), *items)')
        elif f.is_struct:
            out.append(f"{ind}    for item in items:")
            out.append(f"{ind}        item._write({w}, version)")
            if elem in ctx.detaching:
                out.append(f"{ind}    b = {w}.buf")
        else:
            elem_field = FieldSpec(name=f.name, type=elem, versions=f.versions, flexible_versions=f.flexible_versions)
            out.append(f"{ind}    for item in items:")
            out.extend(emit_write_value(elem_field, present, "item", ctx, ind + "        ", w))
        return out
    if f.is_struct:
        if null == "0":
            out.append(f"{ind}{value}._write({w}, version)")
        else:
            out.append(f"{ind}if {value} is None:")
            if null != "1":
                out.append(f"{ind}    if not ({null}):")
                out.append(f'{ind}        raise ProtocolEncodeError("null in non-nullable struct {f.name}")')
            out.append(f"{ind}    b.append({0 if tagged else 255})")
            out.append(f"{ind}else:")
            out.append(f"{ind}    b.append(1)")
            out.append(f"{ind}    {value}._write({w}, version)")
        if elem in ctx.detaching:
            out.append(f"{ind}b = {w}.buf")
        return out
    t = f.type
    if t in FIXED:
        const = ctx.fmt_const(">" + FIXED[t][0])
        out.append(f"{ind}b += {const}.pack({value})")
    elif t == "string":
        out.append(f"{ind}{pick(flex, null, STRING_WRITERS)}(b, {value})")
    elif t == "bytes":
        out.append(f"{ind}{pick(flex, null, BYTES_WRITERS)}(b, {value})")
    elif t == "records":
        fl = {"0": "False", "1": "True"}.get(flex, "flexible")
        out.append(f"{ind}write_records({w}, {value}, {fl})")
        out.append(f"{ind}b = {w}.buf")
    elif t == "uuid":
        out.append(f"{ind}write_uuid(b, {value})")
    else:
        raise ValueError(f"unknown type {t}")
    return out



def non_default_test(f: FieldSpec, attr: str, ctx: Ctx) -> str:
    """An expression true when ``attr`` differs from the field's default (cheap for lists and structs)."""
    dexpr, factory = default_expr(f, ctx)
    if factory and dexpr == "list":
        # Kafka's generator: an empty default list; null differs from it (written as the null marker).
        return f"({attr} is None or {attr})" if f.nullable_versions else attr
    if factory:  # a struct: compare with a shared, never-returned default instance
        return f"{attr} != _D{dexpr}"
    return f"{attr} != {dexpr}"


def emit_absent_check(f: FieldSpec, ctx: Ctx, ind: str) -> list[str]:
    attr = "self." + snake(f.name)
    dv = default_value(f, ctx)
    if f.is_array:
        test = f"{attr}" if dv != "None" else f"{attr} is not None"
    else:
        test = non_default_test(f, attr, ctx)
    return [
        f"{ind}if {test}:",
        f'{ind}    raise ProtocolEncodeError("{f.name} is not in this version of {ctx.spec.name} (v%d)" % version)',
    ]
