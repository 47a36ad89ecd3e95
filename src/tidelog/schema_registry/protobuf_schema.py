"""Protobuf schemas as descriptors: a registered schema (``.proto`` text, or the base64
``FileDescriptorProto`` confluent-kafka's Python serializer sends) and the schemas it references,
turned into ``FileDescriptorProto`` messages (the ``protobuf`` package's descriptors), which the
compatibility rules (:mod:`tidelog.schema_registry.protobuf_compat`) compare.

``.proto`` text is compiled by protoc itself, the one grpcio-tools embeds (``grpc_tools``), in
process: the text and the ``.proto`` texts it references are written to a temporary directory under
their reference names (what ``import`` names), beside the well-known types grpcio-tools ships
(``google/protobuf/*.proto``) and ``google/type/*.proto`` when googleapis-common-protos is installed.
protoc's errors are the reasons an invalid text is refused (42201). Its Python generator embeds each
compiled file's serialized ``FileDescriptorProto``; that literal is read back (with :mod:`ast`, never
executed) so that nothing is added to the process's default descriptor pool.

A descriptor (base64) is decoded; the files it imports are the references' (decoded, or compiled
when they are text) and the well-known types of the ``protobuf`` runtime. An import found nowhere
is left out: the rules then compare the types it would define by name, as Confluent's do when they
cannot resolve a name.

Compiled results are cached (by text and references): a serializer looks its schema up repeatedly.
"""

from __future__ import annotations

import ast
import base64
import functools
import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tidelog.schema_registry import errors

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
#: the name the registered schema's own file gets when compiled (it is never imported)
MAIN_FILE = "tidelog_registered_schema.proto"


class Referenced(NamedTuple):
    """A schema a schema references (directly or through another reference)."""

    name: str
    subject: str
    version: int
    schema_type: str
    text: str


def is_descriptor(text: str) -> bool:
    """True when ``text`` is a base64 ``FileDescriptorProto`` (no ``.proto`` text is one base64 word)."""
    stripped = text.strip()
    return bool(_BASE64.match(stripped)) and len(stripped) % 4 == 0


def decode_descriptor(text: str) -> Any:
    """The ``FileDescriptorProto`` of a base64 text; raises 42201 when it does not decode."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    descriptor = descriptor_pb2.FileDescriptorProto()
    try:
        descriptor.ParseFromString(base64.standard_b64decode(text.strip()))
    except (DecodeError, ValueError) as e:
        raise errors.invalid_schema(f"Invalid schema {text}, details: not a FileDescriptorProto: {e}") from None
    return descriptor


@dataclass(eq=False)
class ProtobufSchema:
    """A registered Protobuf schema with what it references; compiled on first use (:meth:`compiled`)."""

    text: str
    references: tuple[Referenced, ...] = ()
    _compiled: Compiled | None = field(default=None, repr=False)

    def compiled(self) -> Compiled:
        """The descriptors (raises 42201 when the schema does not compile)."""
        if self._compiled is None:
            self._compiled = _compile(self.text, tuple(self.references))
        return self._compiled


@dataclass(frozen=True)
class Compiled:
    #: the registered schema's own file
    main: Any
    #: every file by name (the main one and what it imports, transitively)
    files: dict[str, Any]
    #: file name -> (subject, version) of the reference that provides it (the main file: ("", -1))
    origin: dict[str, tuple[str, int]]


@functools.lru_cache(maxsize=512)
def _compile(text: str, references: tuple[Referenced, ...]) -> Compiled:
    origin = {ref.name: (ref.subject, ref.version) for ref in references}
    if is_descriptor(text):
        main = decode_descriptor(text)
        files: dict[str, Any] = {}
        texts = {r.name: r.text for r in references if not is_descriptor(r.text)}
        for ref in references:
            if is_descriptor(ref.text):
                files[ref.name] = decode_descriptor(ref.text)
        if texts:  # text references of a descriptor: compile each (with the other texts)
            for name in texts:
                if name not in files:
                    files.update(_protoc(name, texts))
        _add_well_known(main, files)
        files[main.name] = main
        origin[main.name] = ("", -1)
        return Compiled(main, files, origin)
    texts = {r.name: r.text for r in references if not is_descriptor(r.text)}
    texts[MAIN_FILE] = text
    files = _protoc(MAIN_FILE, texts)
    origin[MAIN_FILE] = ("", -1)
    return Compiled(files[MAIN_FILE], files, origin)


def _include_dirs() -> list[str]:
    """protoc's include path beside the schema's own directory: the well-known types grpcio-tools
    ships and, when installed, googleapis-common-protos' ``google/type``."""
    import grpc_tools

    dirs = [os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")]
    try:
        import google.type as gtype  # googleapis-common-protos (optional)

        root = os.path.dirname(os.path.dirname(next(iter(gtype.__path__))))
        if os.path.isdir(os.path.join(root, "google", "type")):
            dirs.append(root)
    except ImportError:
        pass
    return dirs


def _protoc(name: str, texts: dict[str, str]) -> dict[str, Any]:
    """Compile ``texts[name]`` (``texts``: file name -> .proto text) with protoc; every file it
    reaches, by name. Raises 42201 with protoc's errors."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import _protoc_compiler

    with tempfile.TemporaryDirectory(prefix="tidelog-proto-") as root:
        for file_name, source in texts.items():
            path = os.path.normpath(os.path.join(root, file_name))
            if not path.startswith(root + os.sep):
                raise errors.invalid_schema(f"Invalid schema: reference name {file_name!r} is not a relative path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
        include = [root.encode(), *(d.encode() for d in _include_dirs())]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                generated = _protoc_compiler.get_protos(name.encode(), include)
        except _protoc_compiler.ProtocErrors as e:
            details = "; ".join(f"{_text(err.filename)}:{err.line}:{err.column}: {_text(err.message)}"
                                for err in e.errors())
            raise errors.invalid_schema(f"Invalid schema {texts[name]}, details: {details or e}") from None
    files: dict[str, Any] = {}
    for _module, code in generated:
        serialized = _serialized_file(code)
        if serialized is not None:
            proto = descriptor_pb2.FileDescriptorProto.FromString(serialized)
            files[proto.name] = proto
    if name not in files:
        raise errors.invalid_schema(f"Invalid schema {texts[name]}, details: protoc produced no descriptor")
    return files


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _serialized_file(code: bytes) -> bytes | None:
    """The ``AddSerializedFile(b'...')`` literal of protoc's generated Python module (read, not run)."""
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "AddSerializedFile" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes)):
            return node.args[0].value
    return None


def _add_well_known(main: Any, files: dict[str, Any]) -> None:
    """Add the ``google/protobuf/*.proto`` files ``main`` (or what it imports) imports and no
    reference provides, from the protobuf runtime."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    pending = list(main.dependency)
    while pending:
        dep = pending.pop()
        if dep in files or not dep.startswith("google/protobuf/"):
            continue
        module = dep.removeprefix("google/protobuf/").removesuffix(".proto")
        try:
            __import__(f"google.protobuf.{module}_pb2")
            found = descriptor_pool.Default().FindFileByName(dep)
        except (ImportError, KeyError):
            continue
        proto = descriptor_pb2.FileDescriptorProto.FromString(found.serialized_pb)
        files[dep] = proto
        pending.extend(proto.dependency)


__all__ = ["MAIN_FILE", "Compiled", "ProtobufSchema", "Referenced", "decode_descriptor", "is_descriptor"]
