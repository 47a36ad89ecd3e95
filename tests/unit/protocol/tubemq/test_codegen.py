"""The generated TubeMQ protobuf modules are fresh against ../shared/tubemq-protocol, and the generator
changes nothing but the package on the way to protoc."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tidelog.protocol.tubemq.generated import broker_service_pb2, master_service_pb2, rpc_pb2
from tools import tubemq_codegen

PROTO_ROOT = tubemq_codegen.default_proto_root()
needs_protos = pytest.mark.skipif(
    not all((PROTO_ROOT / name).is_file() for name in tubemq_codegen.PROTOS),
    reason=f"TubeMQ's .proto files not found at {PROTO_ROOT} (they live in ../shared, outside the repository); "
    "the committed generated modules are used as they are",
)
needs_protoc = pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None,
                                  reason="grpcio-tools (the dev extra) is not installed: no protoc to compare with")


@needs_protos
@needs_protoc
def test_generated_modules_are_fresh() -> None:
    files = tubemq_codegen.generate(PROTO_ROOT)
    assert sorted(files) == ["__init__.py", "broker_service_pb2.py", "broker_service_pb2.pyi",
                             "master_service_pb2.py", "master_service_pb2.pyi", "rpc_pb2.py", "rpc_pb2.pyi"]
    assert tubemq_codegen.stale(files, tubemq_codegen.OUT_DIR) == [], "run `make codegen`"


@needs_protos
@needs_protoc
def test_check_mode_detects_staleness(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path)]
    assert tubemq_codegen.main(out) == 0
    assert tubemq_codegen.main(["--check", *out]) == 0
    victim = tmp_path / "rpc_pb2.py"
    victim.write_text(victim.read_text() + "\n# edited by hand\n")
    assert tubemq_codegen.main(["--check", *out]) == 1
    assert tubemq_codegen.main(out) == 0
    (tmp_path / "leftover_pb2.py").write_text("")
    assert tubemq_codegen.main(["--check", *out]) == 1


def test_a_missing_proto_folder_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tubemq_codegen.main(["--proto-root", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m tools.tubemq_codegen: cannot read ") and err.count("\n") == 1


def test_only_the_package_line_is_added() -> None:
    text = '// header\nsyntax = "proto2";\noption java_package = "x";\nmessage A { required int32 a = 1; }\n'
    assert tubemq_codegen.prepare(text, "A.proto") == text.replace(
        'syntax = "proto2";\n', 'syntax = "proto2";\npackage tidelog.tubemq;\n')
    with pytest.raises(tubemq_codegen.GenerateError, match="declares a package"):
        tubemq_codegen.prepare('syntax = "proto2";\npackage x;\n', "B.proto")
    with pytest.raises(tubemq_codegen.GenerateError, match="no `syntax"):
        tubemq_codegen.prepare('syntax = "proto3";\n', "C.proto")


def test_the_messages_live_in_their_own_package_not_the_global_namespace() -> None:
    assert rpc_pb2.RpcConnHeader.DESCRIPTOR.full_name == "tidelog.tubemq.RpcConnHeader"
    assert master_service_pb2.EventProto.DESCRIPTOR.full_name == "tidelog.tubemq.EventProto"
    assert broker_service_pb2.TransferedMessage.DESCRIPTOR.file.name == "tidelog/protocol/tubemq/generated/broker_service.proto"
