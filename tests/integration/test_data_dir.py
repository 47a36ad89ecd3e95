"""One data directory, one owner: the lock, bind-before-load, data-directory errors, recovery reports
and asynchronous topic deletion, each with real `tidelog serve` processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.integration.kafka_io import create_topics, produce, read_partition
from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration


def _snapshot(directory: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``directory``: (size, mtime_ns, sha256)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(directory))] = (st.st_size, st.st_mtime_ns,
                                                      hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def _serve(*args: str, timeout: float = 30.0, user: int | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tidelog", "serve", "--host", "127.0.0.1", "--override",
           "metrics.listener=http://127.0.0.1:0", *args]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _consume_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, bytes]]:
    return [(m.offset(), m.value()) for m in read_partition(bootstrap, topic, 0, expected)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------- the lock


def test_a_second_broker_on_the_same_data_dir_exits_at_once_and_touches_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data) as first:
        produce(first.bootstrap, "orders", [b"a", b"b", b"c"])
        before = _snapshot(data)
        started = time.monotonic()
        second = _serve("--port", "0", "--data-dir", str(data))
        took = time.monotonic() - started
        assert second.returncode == 1, second.stderr
        message = second.stderr.strip()
        assert "Traceback" not in second.stderr
        assert str(data.resolve()) in message and f"process {first.proc.pid}" in message, message
        assert took < 10
        assert _snapshot(data) == before  # not one byte or timestamp changed
        # The first broker carries on and offsets stay unique.
        produce(first.bootstrap, "orders", [b"d"])
        got = _consume_all(first.bootstrap, "orders", 4)
        assert got == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_the_lock_goes_with_the_process_after_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = BrokerProcess(data).start()
    produce(first.bootstrap, "t", [b"x"])
    first.kill()
    with BrokerProcess(data) as again:  # no stale lock: the kernel released it
        assert _consume_all(again.bootstrap, "t", 1) == [(0, b"x")]


def test_a_taken_port_is_reported_before_the_data_dir_is_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data) as first:
        before = _snapshot(data)
        # Same data dir and the same port: the port error comes first; nothing is read or locked.
        same = _serve("--port", str(first.port), "--data-dir", str(data))
        assert same.returncode == 1
        assert f"cannot listen on PLAINTEXT://127.0.0.1:{first.port}" in same.stderr, same.stderr
        assert "in use by" not in same.stderr
        assert _snapshot(data) == before
        # Another data dir that does not exist yet: it is not even created.
        other = tmp_path / "other"
        taken = _serve("--port", str(first.port), "--data-dir", str(other))
        assert taken.returncode == 1 and "cannot listen on" in taken.stderr
        assert not other.exists()


# ---------------------------------------------------------------------------- data-dir errors


def test_a_data_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    f = tmp_path / "plain-file"
    f.write_text("not a directory")
    r = _serve("--port", "0", "--data-dir", str(f))
    assert r.returncode == 1
    assert r.stderr.strip() == f"tidelog serve: log dir {f} is a file, not a directory"


def test_a_data_dir_under_a_file_is_named(tmp_path: Path) -> None:
    f = tmp_path / "plain-file"
    f.write_text("x")
    r = _serve("--port", "0", "--data-dir", str(f / "sub" / "data"))
    assert r.returncode == 1
    assert r.stderr.strip() == f"tidelog serve: log dir {f / 'sub' / 'data'} lies under {f}, which is a file"


@pytest.fixture
def read_only_dir() -> Path:
    """A directory on a read-only file system (a tmpfs mounted ro; needs root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a read-only file system needs root")
    mnt = Path(tempfile.mkdtemp(prefix="tidelog-ro-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a read-only tmpfs here: {r.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)
    mnt.rmdir()


def test_a_read_only_data_dir_is_named(read_only_dir: Path) -> None:
    r = _serve("--port", "0", "--data-dir", str(read_only_dir))
    assert r.returncode == 1
    assert str(read_only_dir) in r.stderr and "read-only file system" in r.stderr, r.stderr
    r = _serve("--port", "0", "--data-dir", str(read_only_dir / "new"))
    assert r.returncode == 1
    assert f"cannot create log dir {read_only_dir / 'new'}: read-only file system" in r.stderr, r.stderr


def test_a_data_dir_this_user_cannot_write_is_named() -> None:
    base = Path(tempfile.mkdtemp(prefix="tidelog-perm-"))
    try:
        base.chmod(0o755)
        data = base / "data"
        data.mkdir()
        data.chmod(0o555)
        user = None
        if os.geteuid() == 0:  # root writes anywhere: run the broker as nobody
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv to drop to another user")
            user = 65534
            probe = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                                    sys.executable, "-c", "import tidelog"], capture_output=True, text=True)
            if probe.returncode != 0:  # e.g. a checkout under a 0700 directory (mktemp -d)
                pytest.skip(f"user {user} cannot import tidelog from this checkout: {probe.stderr.strip()[-200:]}")
        r = _serve("--port", "0", "--data-dir", str(data), user=user)
        assert r.returncode == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert f"log dir {data} is not writable" in r.stderr, r.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------- recovery


def test_recovery_says_what_it_checked_and_cut(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    produce(broker.bootstrap, "events", [b"v%d" % i for i in range(5)])
    broker.kill()
    segment = data / "events-0" / ("0" * 20 + ".log")
    with open(segment, "ab") as f:
        f.write(b"\x00" * 7 + b"garbage after a torn write")  # 33 bytes that are no batch
    broker.start()
    try:
        text = broker.stderr_text(until="recovered after an unclean shutdown")
        assert "was not shut down cleanly: recovering its logs" in text, text
        assert "events-0: truncated 33 invalid bytes at offset 5 in 00000000000000000000.log" in text, text
        assert "recovered after an unclean shutdown in" in text
        assert "invalid bytes truncated in 1 partitions" in text
        assert _consume_all(broker.bootstrap, "events", 5) == [(i, b"v%d" % i) for i in range(5)]
        broker.stop()
        broker.stderr_lines.clear()
        broker.start()
        text = broker.stderr_text(until="no recovery needed")
        assert "clean shutdown, no recovery needed" in text, text
        assert "recovered after" not in text
    finally:
        broker.stop()


# --------------------------------------------------------------------------- topic deletion


def test_deleting_many_topics_renames_at_once_and_removes_off_the_loop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        names = [f"doomed-{i}" for i in range(100)]
        create_topics(admin, **dict.fromkeys(names, 1))
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for n in names:
            p.produce(n, b"x" * 1000)
        assert p.flush(15) == 0
        for f in admin.delete_topics(names, operation_timeout=15).values():
            f.result(15)
        assert not any((data / f"{n}-0").exists() for n in names)  # gone from their names at once
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and list(data.glob("*-delete")):
            time.sleep(0.1)
        assert not list(data.glob("*-delete"))  # and the files were removed in the background
        produce(broker.bootstrap, "survivor", [b"ok"])
        assert _consume_all(broker.bootstrap, "survivor", 1) == [(0, b"ok")]


def test_leftover_deleted_partition_dirs_are_removed_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data):
        pass
    leftover = data / "gone-0.0123456789abcdef-delete"
    leftover.mkdir()
    (leftover / ("0" * 20 + ".log")).write_bytes(b"old bytes")
    with BrokerProcess(data):
        deadline = time.monotonic() + 10
        while leftover.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not leftover.exists()
