"""Reading the JSON API's inputs: query parameters and JSON bodies, checked for type and range, each
failure an :class:`ApiError` 400 that names the parameter."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tidelog.web.console.api_error import ApiError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MAX = 2**31 - 1


def query_int(request: web.Request, name: str, default: int | None = None, *, lo: int = LONG_MIN,
              hi: int = LONG_MAX) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ApiError.bad_request(f"{name} must be an integer, not {raw!r}") from None
    return _in_range(name, value, lo, hi)


def path_int(request: web.Request, name: str, *, lo: int = 0, hi: int = INT_MAX) -> int:
    raw = request.match_info[name]
    try:
        value = int(raw, 10)
    except ValueError:
        raise ApiError.bad_request(f"{name} must be an integer, not {raw!r}") from None
    return _in_range(name, value, lo, hi)


def query_choice(request: web.Request, name: str, choices: tuple[str, ...], default: str) -> str:
    value = request.query.get(name, default)
    if value not in choices:
        raise ApiError.bad_request(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _in_range(name: str, value: int, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise ApiError.bad_request(f"{name} must be between {lo} and {hi}, not {value}")
    return value


async def json_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object (400 MALFORMED_JSON if it is not JSON, 400 if it is not an object)."""
    text = await request.text()
    if not text.strip():
        raise ApiError.bad_request("the request needs a JSON object body", "MALFORMED_JSON")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as e:
        raise ApiError.bad_request(f"the request body is not valid JSON: {e}", "MALFORMED_JSON") from None
    if not isinstance(body, dict):
        raise ApiError.bad_request(f"the request body must be a JSON object, not {type(body).__name__}")
    return body


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object", list: "an array"}


def field(body: dict[str, Any], name: str, kind: type, default: Any = ..., *, nullable: bool = False,
          lo: int = LONG_MIN, hi: int = LONG_MAX) -> Any:
    """``body[name]`` checked to be of ``kind`` (bool is not an int here); missing -> ``default`` or 400."""
    if name not in body:
        if default is ...:
            raise ApiError.bad_request(f"'{name}' is required")
        return default
    value = body[name]
    if value is None and nullable:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ApiError.bad_request(f"'{name}' must be {_TYPE_NAMES.get(kind, kind.__name__)}, "
                                   f"not {type(value).__name__ if value is not None else 'null'}")
    if kind is int:
        _in_range(name, value, lo, hi)
    return value


def string_map(body: dict[str, Any], name: str) -> dict[str, str | None]:
    """An object of string (or null) values, e.g. topic configs."""
    value = field(body, name, dict, {})
    for k, v in value.items():
        if v is not None and not isinstance(v, str | int | float | bool):
            raise ApiError.bad_request(f"'{name}.{k}' must be a string or null")
    return {k: (None if v is None else str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}


__all__ = ["INT_MAX", "LONG_MAX", "LONG_MIN", "field", "json_body", "path_int", "query_choice", "query_int",
           "string_map"]
