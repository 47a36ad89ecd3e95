"""``tidelog delegation-tokens create|renew|expire|describe``: delegation tokens (KIP-48), as Kafka's
``kafka-delegation-tokens.sh`` manages them, with its option names::

    tidelog delegation-tokens create --command-config admin.properties --renewer-principal User:scheduler
    tidelog delegation-tokens describe --command-config admin.properties --owner-principal User:alice
    tidelog delegation-tokens renew --command-config admin.properties --hmac HMAC
    tidelog delegation-tokens expire --command-config admin.properties --hmac HMAC --expiry-time-period -1

    TOKENID                 HMAC      OWNER       REQUESTER   RENEWERS          ISSUEDATE         EXPIRYDATE        MAXDATE
    Tl3TrGdoQbygAQgSMdA8Kw  sDx4...   User:alice  User:alice  [User:scheduler]  2026-11-28T18:11  2026-11-29T18:11  2026-12-05T18:11

Brokers serve token requests only over SASL or two-way TLS and never over a token's own connection, so
``--command-config`` must name such a transport (``security.protocol``, ``sasl.mechanism``,
``sasl.username``, ``sasl.password`` ...). confluent-kafka's admin API has no token calls, so the requests
go through :mod:`tidelog.cli.broker_connection` to the first bootstrap server. ``describe`` without
``--owner-principal`` lists every token the user may see (``kafka-delegation-tokens.sh`` then sends an
empty owner list, which brokers answer with no tokens). A refusal prints the broker's reason and exits 1;
usage errors exit 2.
"""

from __future__ import annotations

import argparse
import base64
import binascii
from datetime import UTC, datetime

from tidelog.cli.client import CliError, command
from tidelog.cli.table import print_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("delegation-tokens", help="create, renew, expire and describe delegation tokens",
                       description="Delegation tokens (KIP-48), as kafka-delegation-tokens.sh manages them. "
                       "The broker must have delegation.token.secret.key set, and --command-config must "
                       "authenticate over SASL or two-way TLS.")
    actions = p.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a token (printed with its HMAC, the token's password)",
                                description="Create a token owned by the authenticated user (or, with "
                                "CREATE_TOKENS on that user, by --owner-principal).")
    create.add_argument("--max-life-time-period", type=int, default=-1, metavar="MS",
                        help="longest life of the token in ms (-1, the default: the broker's "
                             "delegation.token.max.lifetime.ms)")
    create.add_argument("--renewer-principal", action="append", default=[], metavar="User:NAME", type=_principal,
                        help="a principal that may renew the token (repeatable)")
    create.add_argument("--owner-principal", metavar="User:NAME", type=_principal,
                        help="the token's owner (default: yourself)")
    command(create, _create)
    renew = actions.add_parser("renew", help="push a token's expiry back", description="Renew a token (its owner "
                               "or a renewer): its expiry becomes now + the period, never past its max time.")
    renew.add_argument("--hmac", required=True, type=_hmac, help="the token's HMAC (base64)")
    renew.add_argument("--renew-time-period", type=int, default=-1, metavar="MS",
                       help="renewal period in ms (-1, the default: delegation.token.expiry.time.ms)")
    command(renew, _renew)
    expire = actions.add_parser("expire", help="expire a token now or after a period",
                                description="Expire a token (its owner or a renewer): -1, the default, removes "
                                "it now; a period sets its expiry to now + the period.")
    expire.add_argument("--hmac", required=True, type=_hmac, help="the token's HMAC (base64)")
    expire.add_argument("--expiry-time-period", type=int, default=-1, metavar="MS",
                        help="expire after this many ms (-1, the default: now)")
    command(expire, _expire)
    describe = actions.add_parser("describe", help="list tokens", description="List the tokens you own, may "
                                  "renew, or may describe (ACLs), optionally only those of some owners.")
    describe.add_argument("--owner-principal", action="append", default=[], metavar="User:NAME", type=_principal,
                          help="only this owner's tokens (repeatable); none: every token you may see")
    command(describe, _describe)


def _principal(text: str) -> tuple[str, str]:
    """An argparse type: ``Type:name`` -> (type, name)."""
    principal_type, sep, name = text.strip().partition(":")
    if not sep or not principal_type or not name:
        raise argparse.ArgumentTypeError(f"expected Type:name (e.g. User:alice), got {text!r}")
    return principal_type, name


def _hmac(text: str) -> bytes:
    """An argparse type: the token's HMAC in base64."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise argparse.ArgumentTypeError(f"not base64: {text!r}") from None


def _date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M")


def _request(args: argparse.Namespace, body):
    from tidelog.cli.broker_connection import BrokerConnection

    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        return conn.request(body)


def _refused(what: str, code: int) -> CliError:
    from tidelog.cli.broker_connection import wire_error
    from tidelog.errors import ErrorCode

    try:
        message = ErrorCode(code).message
    except ValueError:
        message = None
    return CliError(f"{what}: {wire_error(code, message)}")


def _table(rows: list[list[str]]) -> None:
    print_table(["TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE"], rows)


def _create(args: argparse.Namespace) -> int:
    from tidelog.protocol.messages import CreateDelegationTokenRequest as C

    renewers = args.renewer_principal
    owner = args.owner_principal or (None, None)
    response = _request(args, C(owner_principal_type=owner[0], owner_principal_name=owner[1],
                                renewers=[C.CreatableRenewers(principal_type=t, principal_name=n) for t, n in renewers],
                                max_lifetime_ms=args.max_life_time_period))
    if response.error_code:
        raise _refused("token not created", response.error_code)
    requester = (f"{response.token_requester_principal_type}:{response.token_requester_principal_name}"
                 if response.token_requester_principal_name else "")
    _table([[response.token_id, base64.b64encode(response.hmac).decode(),
             f"{response.principal_type}:{response.principal_name}", requester,
             "[" + ", ".join(f"{t}:{n}" for t, n in renewers) + "]", _date(response.issue_timestamp_ms),
             _date(response.expiry_timestamp_ms), _date(response.max_timestamp_ms)]])
    return 0


def _renew(args: argparse.Namespace) -> int:
    from tidelog.protocol.messages import RenewDelegationTokenRequest

    response = _request(args, RenewDelegationTokenRequest(hmac=args.hmac,
                                                          renew_period_ms=args.renew_time_period))
    if response.error_code:
        raise _refused("token not renewed", response.error_code)
    print(f"Renewed: the token now expires at {_date(response.expiry_timestamp_ms)}")
    return 0


def _expire(args: argparse.Namespace) -> int:
    from tidelog.protocol.messages import ExpireDelegationTokenRequest

    response = _request(args, ExpireDelegationTokenRequest(hmac=args.hmac,
                                                           expiry_time_period_ms=args.expiry_time_period))
    if response.error_code:
        raise _refused("token not expired", response.error_code)
    print("Expired: the token is removed" if args.expiry_time_period < 0
          else f"The token now expires at {_date(response.expiry_timestamp_ms)}")
    return 0


def _describe(args: argparse.Namespace) -> int:
    from tidelog.protocol.messages import DescribeDelegationTokenRequest as D

    owners = args.owner_principal
    response = _request(args, D(owners=[D.DescribeDelegationTokenOwner(principal_type=t, principal_name=n)
                                        for t, n in owners] or None))
    if response.error_code:
        raise _refused("cannot describe tokens", response.error_code)
    rows = [[t.token_id, base64.b64encode(t.hmac).decode(), f"{t.principal_type}:{t.principal_name}",
             f"{t.token_requester_principal_type}:{t.token_requester_principal_name}"
             if t.token_requester_principal_name else "",
             "[" + ", ".join(f"{r.principal_type}:{r.principal_name}" for r in t.renewers) + "]",
             _date(t.issue_timestamp), _date(t.expiry_timestamp), _date(t.max_timestamp)]
            for t in response.tokens]
    if rows:
        _table(rows)
    else:
        print("no tokens")
    return 0


__all__ = ["add_parser"]
