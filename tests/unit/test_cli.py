"""The ``tidelog`` command line, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import subprocess
import sys

from tidelog import __version__


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], capture_output=True, text=True, timeout=60)


def test_help_lists_commands() -> None:
    out = _run("--help")
    assert out.returncode == 0
    assert "info" in out.stdout and "usage: tidelog" in out.stdout


def test_version() -> None:
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tidelog {__version__}"


def test_info_reports_codec_and_records() -> None:
    out = _run("info", "--verbose")
    assert out.returncode == 0, out.stderr
    assert f"tidelog {__version__}" in out.stdout
    assert "Produce" in out.stdout and "ApiVersions" in out.stdout
    assert "gzip" in out.stdout and "zstd" in out.stdout


def test_no_command_prints_help_and_fails() -> None:
    out = _run()
    assert out.returncode == 2 and "usage" in out.stdout


def test_unknown_command_is_a_clear_error() -> None:
    out = _run("frobnicate")
    assert out.returncode == 2 and "invalid choice" in out.stderr


# ------------------------------------------------------------------------------------------ bad input
#
# Every command, in-process, with bad input: each must exit 2 with the *sub-command's* usage and one
# error line (or, for what only the command itself can check, the one error line alone), and never
# raise. The broker address is a closed port: a command that got as far as connecting would exit 1.

import argparse  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import tomllib  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tidelog.cli import main as cli_main  # noqa: E402

NOWHERE = ["--bootstrap-server", "127.0.0.1:1"]
#: Commands that take no --bootstrap-server.
OFFLINE = (("info",), ("serve",), ("dev-cluster",), ("schemas", "list"), ("schemas", "get"), ("schemas", "register"),
           ("schemas", "check"), ("schemas", "delete"))

#: A valid invocation of each command (the path of sub-command names, then arguments).
VALID = {
    ("info",): [],
    ("serve",): [],
    ("dev-cluster",): [],
    ("users", "add"): ["u", "--password", "p"],
    ("users", "list"): [],
    ("users", "delete"): ["u"],
    ("topics", "create"): ["t"],
    ("topics", "list"): [],
    ("topics", "describe"): [],
    ("topics", "alter"): ["t", "--partitions", "2"],
    ("topics", "trim"): ["t", "--offset", "1"],
    ("topics", "delete-records"): ["t", "--offset", "1"],
    ("topics", "delete"): ["t"],
    ("topics", "alter-config"): ["t", "--set", "a=1"],
    ("produce",): ["t"],
    ("consume",): ["t"],
    ("offsets",): [],
    ("groups", "list"): [],
    ("groups", "describe"): ["g"],
    ("groups", "delete"): ["g"],
    ("groups", "reset-offsets"): ["g", "--all-topics", "--to-earliest"],
    ("configs", "describe"): ["--broker", "0"],
    ("configs", "alter"): ["--topic", "t", "--add-config", "a=1"],
    ("cluster", "info"): [],
    ("cluster", "brokers"): [],
    ("cluster", "elect-leaders"): ["--election-type", "preferred", "--all-topic-partitions"],
    ("cluster", "reassign"): ["--list"],
    ("features", "describe"): [],
    ("features", "upgrade"): ["--feature", "share.version=1"],
    ("features", "downgrade"): ["--feature", "share.version=0", "--unsafe"],
    ("features", "disable"): ["--feature", "share.version"],
    ("quotas", "describe"): [],
    ("quotas", "alter"): ["--client-id", "c", "--add-config", "producer_byte_rate=1"],
    ("client-metrics", "list"): [],
    ("client-metrics", "describe"): ["--name", "s"],
    ("client-metrics", "alter"): ["--name", "s", "--interval", "1000"],
    ("client-metrics", "delete"): ["--name", "s"],
    ("delegation-tokens", "create"): ["--renewer-principal", "User:ops"],
    ("delegation-tokens", "describe"): ["--owner-principal", "User:alice"],
    ("delegation-tokens", "renew"): ["--hmac", "aGVsbG8="],
    ("delegation-tokens", "expire"): ["--hmac", "aGVsbG8=", "--expiry-time-period", "1000"],
    ("transactions", "list"): [],
    ("transactions", "describe"): ["--transactional-id", "x"],
    ("transactions", "describe-producers"): ["--topic", "t", "--partition", "0"],
    ("transactions", "abort"): ["--topic", "t", "--partition", "0", "--start-offset", "5"],
    ("transactions", "find-hanging"): ["--topic", "t"],
    ("perf", "produce"): ["--topic", "t", "--num-records", "1", "--record-size", "1"],
    ("perf", "consume"): ["--topic", "t", "--messages", "1"],
    ("acls", "add"): ["--allow-principal", "User:a", "--topic", "t"],
    ("acls", "list"): [],
    ("acls", "remove"): ["--topic", "t"],
    ("share-groups", "list"): [],
    ("share-groups", "describe"): ["g"],
    ("share-groups", "reset-offsets"): ["g", "--topic", "t", "--to-earliest"],
    ("share-groups", "delete-offsets"): ["g", "--topic", "t"],
    ("share-groups", "delete"): ["g"],
    ("schemas", "list"): [],
    ("schemas", "get"): ["s"],
    ("schemas", "register"): ["s", "f"],
    ("schemas", "check"): ["s", "f"],
    ("schemas", "delete"): ["s"],
}

#: Bad arguments for each command (besides an unknown option and a bad --bootstrap-server, tried on all).
BAD = {
    ("info",): [["extra"]],
    ("share-groups", "list"): [["--state", "sleeping"]],
    ("share-groups", "describe"): [[], ["g", "--all-groups"], ["g", "--members", "--state"], [""]],
    ("share-groups", "reset-offsets"): [["g", "--topic", "t"], ["g", "--to-earliest"],
                                        ["g", "--topic", "t:x", "--to-earliest"],
                                        ["g", "--topic", "t", "--to-offset", "-1"],
                                        ["g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"],
                                        ["g", "--topic", "t", "--to-datetime", "soon"]],
    ("share-groups", "delete-offsets"): [["g"], ["", "--topic", "t"]],
    ("share-groups", "delete"): [[], [""]],
    ("schemas", "list"): [["a", "b"]],
    ("schemas", "get"): [["--id", "x"]],
    ("schemas", "register"): [[], ["s"], ["s", "f", "--type", "XML"]],
    ("schemas", "check"): [["s"], ["s", "f", "--type", "xml"]],
    ("schemas", "delete"): [[]],
    ("serve",): [["--port", "x"]],
    ("users", "add"): [[], ["u", "--iterations", "x"], ["u", "--iterations", "100"], ["u", "--mechanism", "MD5"],
                       ["u", "--password", "p", "--password-stdin"], ["", "--password", "p"],
                       ["u", "--tubemq", "--password", "p"],  # a TubeMQ secret is written offline only
                       ["u", "--tubemq", "--mechanism", "SCRAM-SHA-256", "--password", "p", "--data-dir", "d"]],
    ("users", "list"): [["--data-dir"]],
    ("users", "delete"): [[], ["u", "--mechanism", "PLAIN"], ["u", "--tubemq"]],
    ("dev-cluster",): [["--brokers", "0"], ["--brokers", "x"], ["--port", "x"], ["--zookeeper-port", "70000"]],
    ("topics", "create"): [[], ["t", "--partitions", "0"], ["t", "--partitions", "x"],
                           ["t", "--partitions", "99999999999"], ["t", "--replication-factor", "-1"],
                           ["t", "--config", "retention.ms"], ["bad name!"], ["a", "--topic", "b"], ["a" * 250]],
    ("topics", "list"): [["extra"]],
    ("topics", "describe"): [["bad/name"], ["--topic", ""]],
    ("topics", "alter"): [["t"], [], ["t", "--partitions", "-1"], ["t", "--partitions", "many"]],
    ("topics", "trim"): [["t"], [], ["t", "--offset", "x"], ["t", "--offset", "0:1,0:2"], ["t", "--offset", "-5"],
                         ["t", "--offset", "0:5", "--partitions", "1"], ["t", "--offset", "1", "--before", "1"],
                         ["t", "--before", "yesterday"], ["t", "--partitions", "3-1", "--offset", "1"],
                         ["t", "--offset", "0:"]],
    ("topics", "delete-records"): [["t"], ["t", "--offset", "nope"]],
    ("topics", "delete"): [[], ["a/b"]],
    ("topics", "alter-config"): [["t"], ["t", "--set", "novalue"], []],
    ("produce",): [[], ["t", "--acks", "2"], ["t", "--partition", "-1"], ["t", "--compression", "brotli"],
                   ["t", "--header", "novalue"], ["t", "--producer-prop", "linger.ms"],
                   ["t", "--producer-prop", "no.such.property=1"], ["t", "--producer-prop", "linger.ms=soon"]],
    ("consume",): [[], ["t", "--offset", "-3"], ["t", "--from-beginning", "--offset", "1"],
                   ["t", "--timestamp", "yesterday"], ["t", "--format", "xml"], ["t", "--max-messages", "0"],
                   ["t", "--timeout-ms", "x"], ["t", "--consumer-prop", "nope"],
                   ["t", "--consumer-prop", "no.such.property=1"], ["a", "--topic", "b"]],
    ("offsets",): [["--time", "tomorrow"], ["--partitions", "a"], ["--topic", "("], ["a", "--topic", "b"],
                   ["--partitions", "-1"]],
    ("groups", "list"): [["--state", "sleeping"], ["--type", "share"]],
    ("groups", "describe"): [[], ["g", "--all-groups"], ["g", "--members", "--state"], [""]],
    ("groups", "delete"): [[], [""]],
    ("groups", "reset-offsets"): [["g", "--topic", "t"], ["g", "--to-earliest"], ["g", "--topic", "t:x", "--to-earliest"],
                                  ["g", "--topic", "t", "--to-offset", "-1"],
                                  ["g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"],
                                  ["g", "--topic", "t", "--shift-by", "x"], ["g", "--topic", "t", "--to-datetime", "soon"]],
    ("configs", "describe"): [[], ["--entity-type", "users"], ["--broker", "x"], ["--broker", "0", "--topic", "t"],
                              ["--entity-type", "topics", "--entity-name", "bad name"],
                              ["--entity-type", "brokers", "--broker", "0"]],
    ("configs", "alter"): [["--broker", "0"], ["--topic", "t", "--add-config", "x"], ["--topic", "t", "--add-config", "a=[1"],
                           ["--topic", "t", "--add-config", "a=1", "--delete-config", "a"],
                           ["--entity-type", "topics", "--add-config", "a=1"], ["--topic", "t", "--delete-config", ","]],
    ("cluster", "info"): [["extra"]],
    ("features", "describe"): [["extra"]],
    ("features", "upgrade"): [[], ["--feature", "share.version"], ["--feature", "share.version=x"],
                              ["--feature", "=1"], ["--feature", "share.version=1", "--unsafe"]],
    ("features", "downgrade"): [[], ["--feature", "share.version"]],
    ("features", "disable"): [[], ["--feature"]],
    ("cluster", "brokers"): [["extra"]],
    ("cluster", "elect-leaders"): [["--all-topic-partitions"], ["--election-type", "random", "--all-topic-partitions"],
                                   ["--election-type", "preferred"], ["--election-type", "preferred", "--topic", "t"],
                                   ["--election-type", "preferred", "--topic", "t", "--partition", "0",
                                    "--all-topic-partitions"],
                                   ["--election-type", "unclean", "--partition", "-1", "--topic", "t"]],
    ("cluster", "reassign"): [[], ["--list", "--verify"], ["--execute"], ["--cancel"],
                              ["--generate", "--broker-list", "1"], ["--generate", "--topics-to-move-json-file", "f"],
                              ["--list", "--additional"], ["--list", "--broker-list", "1"]],
    ("quotas", "describe"): [["--user", "a", "--user-default"], ["extra"]],
    ("client-metrics", "list"): [["extra"]],
    ("client-metrics", "describe"): [["--name"], ["extra"]],
    ("client-metrics", "alter"): [[], ["--name", "s"], ["--name", "s", "--generate-name", "--interval", "1000"],
                                  ["--name", "s", "--interval", "soon"]],
    ("client-metrics", "delete"): [[], ["--name"]],
    ("delegation-tokens", "create"): [["--renewer-principal", "ops"], ["--owner-principal", "User:"],
                                      ["--max-life-time-period", "x"]],
    ("delegation-tokens", "describe"): [["--owner-principal", "alice"], ["extra"]],
    ("delegation-tokens", "renew"): [[], ["--hmac", "not base64!"], ["--hmac", "aGVsbG8=", "--renew-time-period", "x"]],
    ("delegation-tokens", "expire"): [[], ["--hmac", "%%%"], ["--hmac", "aGVsbG8=", "--expiry-time-period", "y"]],
    ("quotas", "alter"): [[], ["--user", "a"], ["--add-config", "producer_byte_rate=1"],
                          ["--user", "a", "--add-config", "producer_byte_rate"],
                          ["--user", "a", "--add-config", "producer_byte_rate=abc"],
                          ["--client-id", "c", "--client-default", "--add-config", "a=1"],
                          ["--user", "a", "--delete-config", ","]],
    ("transactions", "list"): [["--producer-id", "x"], ["--duration-filter", "-5"], ["extra"]],
    ("transactions", "describe"): [[], ["--transactional-id", ""]],
    ("transactions", "describe-producers"): [["--topic", "t"], ["--topic", "t", "--partition", "-1"],
                                             ["--topic", "bad name", "--partition", "0"]],
    ("transactions", "abort"): [["--topic", "t", "--partition", "0"],
                                ["--topic", "t", "--partition", "0", "--producer-id", "5"],
                                ["--topic", "t", "--partition", "0", "--start-offset", "x"],
                                ["--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "40000",
                                 "--coordinator-epoch", "0"]],
    ("transactions", "find-hanging"): [[], ["--partition", "0"], ["--topic", "t", "--max-transaction-timeout", "-1"],
                                       ["--broker-id", "x"]],
    ("perf", "produce"): [["--topic", "t"], ["--topic", "t", "--num-records", "1", "--record-size", "0"],
                          ["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "0"],
                          ["--topic", "t", "--num-records", "1", "--record-size", "2000000000"],
                          ["--topic", "t", "--num-records", "1", "--record-size", "1", "--producer-prop", "acks=maybe"]],
    ("acls", "add"): [["--topic", "t"], ["--allow-principal", "User:a"], ["--allow-principal", "a", "--topic", "t"],
                      ["--allow-principal", "User:a", "--topic", "t", "--operation", "Frobnicate"],
                      ["--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
                      ["--allow-principal", "User:a", "--topic", ""],
                      ["--deny-host", "1.2.3.4", "--allow-principal", "User:a", "--topic", "t"]],
    ("acls", "list"): [["--principal", "alice"], ["--resource-pattern-type", "exact"], ["extra"]],
    ("acls", "remove"): [[], ["--topic", "t", "--operation", "x"], ["--allow-host", "h", "--topic", "t"]],
    ("perf", "consume"): [["--topic", "t"], ["--topic", "t", "--messages", "x"],
                          ["--topic", "t", "--messages", "1", "--timeout-ms", "0"],
                          ["--topic", "t", "--messages", "1", "--consumer-prop", "fetch.max.bytes=lots"]],
}


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Every runnable command (aliases included): path of names -> the prog its errors start with."""
    found: dict[tuple[str, ...], str] = {}
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix: parser.prog}
    for name, child in subs[0].choices.items():
        found.update(command_paths(child, (*prefix, name)))
    return found


COMMANDS = command_paths(cli_main.build_parser())


def invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli_main.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code: int, err: str, prog: str, argv: list[str]) -> None:
    """Exit 2; stderr is one ``PROG: ...`` error line, after the usage of PROG (not of ``tidelog``)."""
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err, argv
    lines = err.rstrip("\n").splitlines()
    errors = [line for line in lines if line.startswith(f"{prog}: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], (argv, err)
    if len(lines) > 1:
        assert lines[0].startswith(f"usage: {prog} ") or lines[0] == f"usage: {prog}", (argv, err)
        assert all(line.startswith(" ") for line in lines[1:-1]), (argv, err)


def test_every_command_has_valid_and_bad_cases() -> None:
    assert set(COMMANDS) == set(VALID) == set(BAD)


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_bad_input_is_a_usage_error_never_a_traceback(path: tuple[str, ...], capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDELOG_BOOTSTRAP_SERVERS", raising=False)
    prog = COMMANDS[path]
    for bad in BAD[path]:
        argv = [*path, *bad]
        if path not in OFFLINE:
            argv += NOWHERE
        code, _, err = invoke(argv, capsys)
        assert_usage_error(code, err, prog, argv)
    # An option the command does not know: the command's own usage, not the top-level one.
    code, _, err = invoke([*path, *VALID[path], "--no-such-option"], capsys)
    assert_usage_error(code, err, prog, [*path, "--no-such-option"])
    assert "unrecognized arguments: --no-such-option" in err
    if path in OFFLINE:
        code, _, err = invoke(["--bootstrap-server", "127.0.0.1:9092", *path], capsys)
        assert_usage_error(code, err, prog, path)
        return
    for address in ("", "host:99999", "a b:1", "host:port"):
        argv = [*path, *VALID[path], "--bootstrap-server", address]
        code, _, err = invoke(argv, capsys)
        assert_usage_error(code, err, prog, argv)
        assert "--bootstrap-server" in err


def test_bad_bootstrap_servers_in_the_environment_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDELOG_BOOTSTRAP_SERVERS", "broker:notaport")
    code, _, err = invoke(["topics", "list"], capsys)
    assert_usage_error(code, err, "tidelog topics list", ["topics", "list"])
    assert "TIDELOG_BOOTSTRAP_SERVERS" in err


# ------------------------------------------------------------------------------------------ parsing


def parsed(argv: list[str]) -> argparse.Namespace:
    return cli_main.parse(cli_main.build_parser(), argv)


def test_bootstrap_server_before_or_after_the_command_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDELOG_BOOTSTRAP_SERVERS", raising=False)
    assert parsed(["--bootstrap-server", "a:1", "topics", "list"]).bootstrap_server == "a:1"
    assert parsed(["topics", "list", "--bootstrap-server", "b:2"]).bootstrap_server == "b:2"
    assert parsed(["--bootstrap-server", "a:1", "topics", "list", "--bootstrap-server", "b:2"]).bootstrap_server == "b:2"
    assert parsed(["topics", "list"]).bootstrap_server == "localhost:9092"
    monkeypatch.setenv("TIDELOG_BOOTSTRAP_SERVERS", " c:3,d:4 ")
    assert parsed(["topics", "list"]).bootstrap_server == "c:3,d:4"
    assert parsed(["--bootstrap-server", "a:1", "consume", "t"]).bootstrap_server == "a:1"


def test_topic_positionally_or_with_the_topic_option() -> None:
    for argv in (["produce", "orders"], ["produce", "--topic", "orders"], ["produce", "orders", "--topic", "orders"]):
        assert parsed(argv).topic == "orders"
    assert parsed(["topics", "describe", "a", "--topic", "b", "--topic", "a"]).topics == ["a", "b"]
    assert parsed(["topics", "delete", "--topic", "x"]).topics == ["x"]
    assert parsed(["consume", "--topic", "t", "--from-beginning"]).topic == "t"


# ------------------------------------------------------------------------------------------ structure


SRC = Path(__file__).resolve().parents[2] / "src" / "tidelog" / "cli"


def test_every_client_module_is_under_the_no_broker_internals_contract() -> None:
    pyproject = tomllib.loads((SRC.parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in pyproject["tool"]["importlinter"]["contracts"]
                  if c["name"].startswith("Client-side CLI commands")]
    modules = {f"tidelog.cli.{p.stem}" for p in SRC.glob("*.py")} - {
        "tidelog.cli.__init__", "tidelog.cli.main", "tidelog.cli.serve"}
    assert set(contract["source_modules"]) == modules


def test_no_cli_module_is_over_600_lines() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in SRC.glob("*.py")}
    assert max(sizes.values()) <= 600, sizes


def test_starting_the_cli_does_not_load_the_wire_codec() -> None:
    """The generated codec takes about half a second to import; only commands that send their own
    requests (cluster info, topics describe) load it, lazily."""
    code = ("import sys; from tidelog.cli.main import build_parser; build_parser(); "
            "print('tidelog.protocol.messages' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "False", out.stderr


def test_help_of_every_command_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    for path, prog in COMMANDS.items():
        code, out, _ = invoke([*path, "--help"], capsys)
        assert code == 0 and out.startswith(f"usage: {prog}"), path
        assert re.search(r"^options:", out, re.M), path
