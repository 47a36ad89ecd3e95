"""``tidelog delegation-tokens`` against a real broker (SASL_PLAINTEXT, a SCRAM user made offline,
``delegation.token.secret.key`` set): the token it creates authenticates (SCRAM ``tokenauth``) as its
owner, describe lists it, renew and expire change it, and refusals (clear text, a bad HMAC) exit 1
with the broker's reason. About 10 s."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tidelog.errors import ErrorCode
from tidelog.peer.wire import SaslRefused
from tidelog.protocol.messages import DescribeDelegationTokenRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cli_delegation_tokens")]

USER, PASSWORD = "cli-owner", "cli-secret"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cli-tokens")
    subprocess.run([sys.executable, "-m", "tidelog", "users", "add", USER, "--data-dir", str(root / "data"),
                    "--password-stdin"], input=PASSWORD + "\n", text=True, check=True, capture_output=True)
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "delegation.token.secret.key": "cli-test-secret"}
    with BrokerProcess(root / "data", overrides=overrides) as process:
        props = root / "owner.properties"
        props.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                         f"sasl.username={USER}\nsasl.password={PASSWORD}\n")
        process.owner_props = props
        yield process


def tokens(b: BrokerProcess, *args: str, props=None, sasl: bool = True) -> subprocess.CompletedProcess[str]:
    bootstrap = f"127.0.0.1:{b.listener_port('SASL_PLAINTEXT')}" if sasl else b.bootstrap
    extra = ["--command-config", str(props or b.owner_props)] if sasl else []
    return subprocess.run([sys.executable, "-m", "tidelog", "delegation-tokens", *args, "--bootstrap-server",
                           bootstrap, *extra], capture_output=True, text=True, timeout=60)


def _token_session(b: BrokerProcess, token_id: str, hmac: str) -> WireClient | None:
    client = WireClient.connect(f"127.0.0.1:{b.listener_port('SASL_PLAINTEXT')}")
    try:
        client.authenticate("SCRAM-SHA-512", token_id, hmac, tokenauth=True)
    except SaslRefused:
        client.close()
        return None
    return client


def test_create_authenticate_describe_renew_expire(broker: BrokerProcess) -> None:
    created = tokens(broker, "create", "--renewer-principal", "User:ops", "--max-life-time-period", "3600000")
    assert created.returncode == 0, created.stderr
    row = created.stdout.splitlines()[1].split()
    token_id, hmac = row[0], row[1]
    assert row[2:5] == [f"User:{USER}", f"User:{USER}", "[User:ops]"]

    session = _token_session(broker, token_id, hmac)
    assert session is not None
    with session:  # authenticated, but a token's connection may not even describe tokens (as in Kafka)
        described = session.request(DescribeDelegationTokenRequest(owners=None), 3)
        assert described.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

    listed = tokens(broker, "describe", "--owner-principal", f"User:{USER}")
    assert listed.returncode == 0 and token_id in listed.stdout and hmac in listed.stdout
    assert tokens(broker, "describe", "--owner-principal", "User:nobody").stdout.strip() == "no tokens"

    renewed = tokens(broker, "renew", "--hmac", hmac, "--renew-time-period", "60000")
    assert renewed.returncode == 0 and re.search(r"expires at \d{4}-\d\d-\d\dT", renewed.stdout), renewed.stderr

    expired = tokens(broker, "expire", "--hmac", hmac)
    assert expired.returncode == 0 and "removed" in expired.stdout
    assert _token_session(broker, token_id, hmac) is None
    again = tokens(broker, "renew", "--hmac", hmac)
    assert again.returncode == 1 and "DELEGATION_TOKEN_NOT_FOUND" in again.stderr


def test_refusals_exit_1_with_the_brokers_reason(broker: BrokerProcess) -> None:
    plain = tokens(broker, "create", sasl=False)
    assert plain.returncode == 1 and "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" in plain.stderr
    bad = tokens(broker, "renew", "--hmac", "not base64!")
    assert bad.returncode == 2 and "not base64" in bad.stderr
    principal = tokens(broker, "create", "--renewer-principal", "ops")
    assert principal.returncode == 2 and "Type:name" in principal.stderr
