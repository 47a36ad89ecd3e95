"""tidelog.records.crc: the crc32c package's C function, loaded without the package's slow ``__init__``."""

from __future__ import annotations

import subprocess
import sys

import crc32c as package

from tidelog.records.crc import crc32c


def test_same_checksums_as_the_package() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    for data in (b"", b"x", bytes(range(256)) * 17, memoryview(b"abcdef")[1:]):
        assert crc32c(data) == package.crc32c(data)
    assert crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")


def test_the_records_codec_does_not_run_the_package_init() -> None:
    code = "import sys, tidelog.records; print('crc32c' in sys.modules, 'importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
