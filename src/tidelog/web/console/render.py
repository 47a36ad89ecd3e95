"""How the console shows message bytes (keys, values, header values) in its JSON API, and takes them back
for a produced message.

A field is rendered as ``text`` (UTF-8, undecodable bytes replaced), ``json`` (parsed), ``hex``, or
``auto`` (JSON if it parses, else text if it is UTF-8, else hex); each rendered field says which format it
got. A field longer than ``MAX_FIELD_BYTES`` is cut and marked truncated.

Only what is valid JSON (RFC 8259) counts as JSON: Python's parser also takes ``NaN``, ``Infinity`` and
numbers too large for a double (``1e400``), which the API could not send back as valid JSON, so such a
field is shown as text. A JSON field whose value holds an integer a JavaScript number cannot carry exactly
(beyond +-(2^53 - 1)) also carries ``exact``: the value as JSON text (indented by 2) with every digit, which
the console shows instead of its own rendering of ``data``.
"""

from __future__ import annotations

import binascii
import json
import math
from typing import Any

from tidelog.web.console.api_error import ApiError

MAX_FIELD_BYTES = 64 * 1024
FORMATS = ("auto", "text", "json", "hex")
#: The largest integer a JavaScript number (an IEEE double) holds exactly: Number.MAX_SAFE_INTEGER.
JS_SAFE_INTEGER = 2**53 - 1


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"{text} does not fit a double")
    return value


def parse_json(data: bytes) -> tuple[Any, str | None]:
    """``data`` as strict JSON: (the value, its exact JSON text when it holds an integer beyond
    JavaScript's safe range, else None). Raises ValueError (or UnicodeDecodeError) if it is not JSON."""
    unsafe = False

    def parse_int(text: str) -> int:
        nonlocal unsafe
        value = int(text)
        if not -JS_SAFE_INTEGER <= value <= JS_SAFE_INTEGER:
            unsafe = True
        return value

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant, parse_float=_finite_float,
                           parse_int=parse_int)
        # Sent back inside the API's answer: make sure it encodes (depth), as strict JSON.
        exact = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) if unsafe else None
        if not unsafe:
            json.dumps(value, allow_nan=False)
    except RecursionError:
        raise _NotJson("nested too deeply") from None
    return value, exact


def render(data: bytes | None, fmt: str) -> dict[str, Any] | None:
    if data is None:
        return None
    truncated = len(data) > MAX_FIELD_BYTES
    shown = bytes(data[:MAX_FIELD_BYTES])
    out: dict[str, Any] = {"size": len(data)}
    if truncated:
        out["truncated"] = True
    if fmt in ("auto", "json") and not truncated:
        try:
            value, exact = parse_json(shown)
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            pass
        else:
            out.update(format="json", data=value)
            if exact is not None:
                out["exact"] = exact
            return out
    if fmt == "hex":
        out.update(format="hex", data=shown.hex())
        return out
    try:
        out.update(format="text", data=shown.decode("utf-8"))
    except UnicodeDecodeError:
        if fmt == "text":
            out.update(format="text", data=shown.decode("utf-8", errors="replace"))
        else:
            out.update(format="hex", data=shown.hex())
    return out


def encode(value: Any, fmt: str, name: str) -> bytes | None:
    """A produced key or value from its JSON form."""
    if value is None:
        return None
    if fmt == "json":
        return json.dumps(value).encode()
    if not isinstance(value, str):
        raise ApiError.bad_request(f"'{name}' must be a string (or null) with format {fmt}")
    if fmt == "hex":
        try:
            return binascii.unhexlify(value.replace(" ", ""))
        except (binascii.Error, ValueError):
            raise ApiError.bad_request(f"'{name}' is not valid hex") from None
    return value.encode("utf-8")


__all__ = ["FORMATS", "JS_SAFE_INTEGER", "MAX_FIELD_BYTES", "encode", "parse_json", "render"]
