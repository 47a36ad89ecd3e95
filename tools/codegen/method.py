"""Code for one struct's ``_read`` classmethod and ``_write`` method.

Fields are read and written in wire order, each guarded by the versions it exists in; runs of
fixed-width fields under the same guard share one precompiled ``struct.Struct``. Flexible versions end
with the tagged-field section: known tags are decoded into their fields, unknown ones are kept in
``unknown_tagged_fields`` and written back.
"""

from __future__ import annotations

from tools.codegen.field import (
    FIXED,
    Ctx,
    cond,
    default_value,
    emit_absent_check,
    emit_read_value,
    emit_write_value,
    local,
    non_default_test,
    snake,
)
from tools.codegen.spec import FieldSpec


def positional_groups(fields: tuple[FieldSpec, ...], ctx: Ctx):
    """Yield (guard, [fields]) where runs of fixed-width fields with equal guards are grouped."""
    groups: list[tuple[str | None, list[FieldSpec], bool]] = []
    for f in fields:
        present = f.versions.minus(f.tagged_versions).intersect(ctx.valid)
        if not present:
            continue
        guard = cond(present, ctx.valid)
        fixed = (not f.is_array) and f.type in FIXED
        if fixed and groups and groups[-1][2] and groups[-1][0] == guard:
            groups[-1][1].append(f)
        else:
            groups.append((guard, [f], fixed))
    return groups


def flexibility(ctx: Ctx) -> tuple[str | None, bool]:
    """The guard of the struct's flexible versions (None: always, "False": never), and whether it has any."""
    flex_cond = cond(ctx.spec.flexible_versions, ctx.valid)
    return flex_cond, flex_cond != "False"


def flexible_line(flex_cond: str | None) -> list[str]:
    """The statement that computes ``flexible`` at run time, when the versions do not decide it."""
    return [f"        flexible = {flex_cond}"] if flex_cond not in (None, "False") else []


def guard_open(guard: str | None, out: list[str]) -> str:
    """Open the ``if`` of a version guard (if any); returns the indentation of the guarded statements."""
    if guard is None:
        return "        "
    out.append(f"        if {guard}:")
    return "            "


def group_struct(group: list[FieldSpec], ctx: Ctx) -> str:
    """The precompiled ``struct.Struct`` constant of a run of fixed-width fields."""
    return ctx.fmt_const(">" + "".join(FIXED[f.type][0] for f in group))


def emit_read(name: str, fields: tuple[FieldSpec, ...], ctx: Ctx) -> list[str]:
    valid = ctx.valid
    flex_cond, has_flex = flexibility(ctx)
    out = ["    @classmethod", "    def _read(cls, buf, pos, version):", *flexible_line(flex_cond)]
    for guard, group, fixed in positional_groups(fields, ctx):
        ind = guard_open(guard, out)
        if fixed and len(group) > 1:
            size = sum(FIXED[f.type][1] for f in group)
            out.append(f"{ind}({', '.join(local(f) for f in group)},) = {group_struct(group, ctx)}.unpack_from(buf, pos)")
            out.append(f"{ind}pos += {size}")
        else:
            for f in group:
                present = f.versions.minus(f.tagged_versions).intersect(valid)
                out.extend(emit_read_value(f, present, local(f), ctx, ind))
        if guard is not None:
            out.append("        else:")
            for f in group:
                out.append(f"            {local(f)} = {default_value(f, ctx)}")
    # Tagged-only fields start with their defaults.
    tagged = [f for f in fields if f.tagged_versions.intersect(valid)]
    for f in tagged:
        if not f.versions.minus(f.tagged_versions).intersect(valid):
            out.append(f"        {local(f)} = {default_value(f, ctx)}")
    out.append("        unknown = None")
    if has_flex:
        ind = "        "
        if flex_cond is not None:
            out.append("        if flexible:")
            ind = "            "
        out.append(f"{ind}if buf[pos] == 0:  # no tagged fields, the common case")
        out.append(f"{ind}    pos += 1")
        out.append(f"{ind}    n_tags = 0")
        out.append(f"{ind}else:")
        out.append(f"{ind}    n_tags, pos = read_uvarint(buf, pos)")
        out.append(f"{ind}for _ in range(n_tags):")
        out.append(f"{ind}    tag, pos = read_uvarint(buf, pos)")
        out.append(f"{ind}    size, pos = read_uvarint(buf, pos)")
        out.append(f"{ind}    end = pos + size")
        out.append(f"{ind}    if end > len(buf):")
        out.append(f'{ind}        raise MalformedMessageError("tagged field runs past the end of the message")')
        first = True
        for f in tagged:
            tv = f.tagged_versions.intersect(valid)
            g = cond(tv, valid)
            test = f"tag == {f.tag}" + (f" and ({g})" if g else "")
            out.append(f"{ind}    {'if' if first else 'elif'} {test}:")
            first = False
            out.append(f"{ind}        sub = buf[:end]")
            out.extend(emit_read_value(f, tv, local(f), ctx, ind + "        ", "sub", tagged=True))
        out.append(f"{ind}    {'else' if not first else 'if True'}:")
        out.append(f"{ind}        if unknown is None:")
        out.append(f"{ind}            unknown = []")
        out.append(f"{ind}        unknown.append((tag, bytes(buf[pos:end])))")
        out.append(f"{ind}    pos = end")
    args = ", ".join(local(f) for f in fields if f.versions.intersect(valid))
    out.append(f"        return cls({args}{', ' if args else ''}unknown), pos")
    return out


def emit_write(name: str, fields: tuple[FieldSpec, ...], ctx: Ctx) -> list[str]:
    valid = ctx.valid
    flex_cond, has_flex = flexibility(ctx)
    out = ["    def _write(self, w, version):", "        b = w.buf", *flexible_line(flex_cond)]
    for guard, group, fixed in positional_groups(fields, ctx):
        ind = guard_open(guard, out)
        if fixed and len(group) > 1:
            out.append(f"{ind}b += {group_struct(group, ctx)}.pack({', '.join('self.' + snake(f.name) for f in group)})")
        else:
            for f in group:
                present = f.versions.minus(f.tagged_versions).intersect(valid)
                out.extend(emit_write_value(f, present, "self." + snake(f.name), ctx, ind))
        if guard is not None:
            # A non-default value in a version that lacks the field is an error unless ignorable.
            checks = [f for f in group if not f.ignorable and not f.tagged_versions.intersect(valid)]
            if checks:
                out.append("        else:")
                for f in checks:
                    out.extend(emit_absent_check(f, ctx, "            "))
    tagged = [f for f in fields if f.tagged_versions.intersect(valid)]
    if has_flex:
        ind = "        "
        if flex_cond is not None:
            out.append("        if flexible:")
            ind = "            "
        if not tagged:
            out.append(f"{ind}if self.unknown_tagged_fields:")
            out.append(f"{ind}    write_tagged(b, self.unknown_tagged_fields)")
            out.append(f"{ind}else:")
            out.append(f"{ind}    b.append(0)")
        else:
            out.append(f"{ind}tagged = list(self.unknown_tagged_fields) if self.unknown_tagged_fields else []")
            for f in tagged:
                tv = f.tagged_versions.intersect(valid)
                g = cond(tv, valid)
                attr = "self." + snake(f.name)
                test = non_default_test(f, attr, ctx)
                if g:
                    test = f"({g}) and {test}"
                out.append(f"{ind}if {test}:")
                out.append(f"{ind}    tw = Writer()")
                out.append(f"{ind}    b, outer = tw.buf, b")
                out.extend(emit_write_value(f, tv, attr, ctx, ind + "    ", "tw", tagged=True))
                out.append(f"{ind}    b = outer")
                out.append(f"{ind}    tagged.append(({f.tag}, tw.getvalue()))")
            out.append(f"{ind}if tagged:")
            out.append(f"{ind}    write_tagged(b, tagged)")
            out.append(f"{ind}else:")
            out.append(f"{ind}    b.append(0)")
    return out
