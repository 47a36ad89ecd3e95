"""The web console's JSON API over real HTTP, for the console tests: ``call(broker, "POST", "/topics", {...})``
-> (status, decoded JSON body)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tidelog.testing import BrokerProcess

NO_BODY = object()


def call(broker: BrokerProcess, method: str, path: str, body: Any = NO_BODY, *, raw: bytes | None = None,
         content_type: str | None = "application/json") -> tuple[int, Any]:
    """``path`` under /api/v1 (or absolute from the root when it starts with //)."""
    assert broker.http_url is not None
    url = broker.http_url + (path[2:] if path.startswith("//") else "api/v1" + path)
    data = raw if raw is not None else None if body is NO_BODY else json.dumps(body).encode()
    headers = {"Content-Type": content_type} if content_type and data is not None else {}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            status, payload = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, payload = e.code, e.read()
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload.decode("utf-8", "replace")


def ok(broker: BrokerProcess, method: str, path: str, body: Any = NO_BODY) -> Any:
    """The body of a call that must succeed (2xx)."""
    status, answer = call(broker, method, path, body)
    assert 200 <= status < 300, (status, answer)
    return answer


def add_user(data_dir: Path, user: str, password: str) -> None:
    """A SCRAM user (both mechanisms) written offline into a broker's data dir, as an operator would
    before the first start: ``tidelog users add USER --data-dir DIR``."""
    done = subprocess.run([sys.executable, "-m", "tidelog", "users", "add", user, "--password-stdin",
                           "--data-dir", str(data_dir)], input=password + "\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
