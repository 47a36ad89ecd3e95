"""The registry by API key is built without importing the codecs (start-up time), from versions
tools/codegen writes out: they must be the classes' own."""

from __future__ import annotations

import subprocess
import sys

from tidelog.protocol import messages
from tidelog.protocol.api_keys import API_REGISTRY


def test_the_written_out_versions_are_the_classes_versions() -> None:
    for key, entry in API_REGISTRY.items():
        request, response = messages.API_MESSAGES[key]
        assert (entry.request, entry.response) == (request, response)
        assert key == request.API_KEY
        assert entry.name == request.__name__[: -len("Request")]
        assert entry.min_version == min(request.MIN_VERSION, response.MIN_VERSION)
        assert entry.max_version == max(request.MAX_VERSION, response.MAX_VERSION)
        assert entry.flexible_from == request.FLEXIBLE_FROM


def test_the_registry_imports_no_codec_until_one_is_used() -> None:
    code = ("import sys; from tidelog.protocol import API_REGISTRY, decode_request;"
            "loaded = lambda: sorted(m for m in sys.modules if m.startswith('tidelog.protocol.messages.'));"
            "assert len(API_REGISTRY) > 80;"
            "before = loaded();"
            "from tidelog.protocol.messages import FetchRequest;"
            "print(before, loaded())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, after = done.stdout.strip().split("] [")
    assert "fetch'" not in before and "tidelog.protocol.messages.fetch'" in after
    assert len(after.split(",")) < 20  # a handful: the protocol package's own needs, and fetch
