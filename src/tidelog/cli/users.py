"""``tidelog users add|list|delete``: SCRAM users, as ``kafka-configs.sh --entity-type users
--alter --add-config 'SCRAM-SHA-256=[password=...]'`` manages them: AlterUserScramCredentials through
confluent-kafka's admin API, one request per mechanism (Kafka refuses a user named twice in one request),
and DescribeUserScramCredentials with Tidelog's own codec (confluent-kafka crashes on a refusal).

The first admin user of a fresh single node cannot be created over the network (nobody can
authenticate yet): ``tidelog users add admin --data-dir DIR`` writes the credential straight into the
data dir's credential file, before the broker starts (or while it runs: it re-reads the file), as
Kafka's ``kafka-storage format --add-scram`` does. The password comes from ``--password``, standard input
(``--password-stdin``) or a prompt; it never appears in the output. The broker stores only the salted
credential (docs/security.md).

``--tubemq`` (with ``--data-dir``) instead gives the user a TubeMQ secret, the password TubeMQ clients
sign with when ``tubemq.authentication.enable`` is on. TubeMQ's signature is keyed by the plain
password, so the broker keeps that secret as it is (owner-only file), apart from the SCRAM credentials;
use a password of its own, not the user's SCRAM password (docs/security.md, "TubeMQ secrets").

``--command-config FILE`` takes client properties (``security.protocol``, ``sasl.mechanism``,
``sasl.username``, ``sasl.password``, ``ssl.ca.location`` ...) for a secured listener, as Kafka's tools do.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from tidelog.cli.argument import bounded_int
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error
from tidelog.cli.table import table

MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "users", help="add, list or delete SCRAM users (SASL credentials)",
        description="Manage the SCRAM credentials clients authenticate with (SASL PLAIN, SCRAM-SHA-256, "
        "SCRAM-SHA-512). The broker keeps only salted credentials, never passwords.",
    )
    actions = p.add_subparsers(dest="users_command", metavar="ACTION", required=True)

    add = actions.add_parser(
        "add", help="create a user or change its password",
        description="Create a SCRAM credential for USER (or replace it). With --data-dir, write it offline into "
        "a broker's data dir: the way to create the first admin user before the broker starts.")
    add.add_argument("user", help="the user name")
    add.add_argument("--mechanism", choices=sorted(MECHANISMS), action="append",
                     help="SCRAM mechanism (repeatable; default: SCRAM-SHA-256 and SCRAM-SHA-512)")
    add.add_argument("--iterations", type=bounded_int(MIN_ITERATIONS, MAX_ITERATIONS), default=MIN_ITERATIONS,
                     help=f"PBKDF2 iterations, {MIN_ITERATIONS}-{MAX_ITERATIONS} (default {MIN_ITERATIONS})")
    add.add_argument("--password", help="the password (visible in the process list: prefer the prompt or "
                     "--password-stdin)")
    add.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    add.add_argument("--tubemq", action="store_true",
                     help="give the user a TubeMQ secret (the password TubeMQ clients sign with) instead of SCRAM "
                     "credentials; needs --data-dir")
    _add_connection_arguments(add)

    lst = actions.add_parser("list", help="list users and their SCRAM mechanisms",
                             description="List users with SCRAM credentials: USER, MECHANISM, ITERATIONS "
                             "(with --data-dir also TubeMQ secrets, as mechanism TUBEMQ).")
    lst.add_argument("user", nargs="*", help="only these users")
    _add_connection_arguments(lst)

    delete = actions.add_parser("delete", help="delete a user's SCRAM credentials",
                                description="Delete USER's credentials (every mechanism unless --mechanism).")
    delete.add_argument("user", help="the user name")
    delete.add_argument("--mechanism", choices=sorted(MECHANISMS), action="append", help="only this mechanism")
    delete.add_argument("--tubemq", action="store_true", help="delete the user's TubeMQ secret instead; needs --data-dir")
    _add_connection_arguments(delete)

    for parser, fn in ((add, _add), (lst, _list), (delete, _delete)):
        command(parser, fn)


def _add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", metavar="DIR",
                        help="work offline on this broker data dir (its first log dir) instead of over the network")


def _password(args: argparse.Namespace) -> str:
    if args.password is not None and args.password_stdin:
        raise CliError("give the password once: --password or --password-stdin", 2)
    if args.password is not None:
        password = args.password
    elif args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.user}: ")
        if getpass.getpass("again: ") != password:
            raise CliError("the passwords differ", 2)
    else:
        raise CliError("no password: use --password-stdin, --password or a terminal prompt", 2)
    if not password:
        raise CliError("the password must not be empty", 2)
    return password


def _admin(args: argparse.Namespace):
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(cluster.config())
    cluster.metadata(admin)  # reachable (and, on a SASL listener, authenticated) within a bounded wait
    return admin


def _mechanisms(args: argparse.Namespace) -> list[str]:
    return list(dict.fromkeys(args.mechanism or ["SCRAM-SHA-256", "SCRAM-SHA-512"]))


def _tubemq_store(args: argparse.Namespace):
    if not args.data_dir:
        raise CliError("--tubemq needs --data-dir: a TubeMQ secret is no Kafka credential, the admin API cannot "
                       "set it", 2)
    if getattr(args, "mechanism", None):
        raise CliError("--tubemq takes no --mechanism (TubeMQ signs with HMAC-SHA1 of the secret)", 2)
    from pathlib import Path

    from tidelog.cluster.tubemq_secret_store import TubeSecretStore

    return TubeSecretStore(Path(args.data_dir))


def _add(args: argparse.Namespace) -> int:
    if not args.user:
        raise CliError("the user name must not be empty", 2)
    if args.tubemq:
        store = _tubemq_store(args)
        store.alter({args.user: _password(args)}, [])
        print(f"added TubeMQ secret of user {args.user} to {store.path}")
        return 0
    password = _password(args)
    if args.data_dir:
        from pathlib import Path

        from tidelog.cluster.credential_store import EmbeddedCredentialStore
        from tidelog.security.scram import credential_from_password

        store = EmbeddedCredentialStore(Path(args.data_dir))
        store.alter([(args.user, m, credential_from_password(m, password, args.iterations))
                     for m in _mechanisms(args)], [])
        print(f"added user {args.user} ({', '.join(_mechanisms(args))}) to {store.path}")
        return 0
    admin = _admin(args)
    _alter_each(admin, args.user, [(m, UserScramCredentialUpsertion(
        args.user, ScramCredentialInfo(MECHANISMS[m], args.iterations), password.encode())) for m in _mechanisms(args)])
    print(f"added user {args.user} ({', '.join(_mechanisms(args))})")
    return 0


def _list(args: argparse.Namespace) -> int:
    rows = []
    if args.data_dir:
        from pathlib import Path

        from tidelog.cluster.credential_store import EmbeddedCredentialStore
        from tidelog.cluster.tubemq_secret_store import TubeSecretStore

        users = EmbeddedCredentialStore(Path(args.data_dir)).users()
        tubemq = set(TubeSecretStore(Path(args.data_dir)).users())
        for name in args.user:
            if name not in users and name not in tubemq:
                raise CliError(f"no user {name}")
        for user in sorted(set(users) | tubemq):
            if not args.user or user in args.user:
                rows += [[user, m, str(c.iterations)] for m, c in sorted(users.get(user, {}).items())]
                rows += [[user, "TUBEMQ", "-"]] if user in tubemq else []
    else:
        for user, infos in sorted(_described(args, list(dict.fromkeys(args.user))).items()):
            rows += [[user, mechanism, str(iterations)] for mechanism, iterations in infos]
    print("\n".join(table(["USER", "MECHANISM", "ITERATIONS"], rows)))
    return 0


def _delete(args: argparse.Namespace) -> int:
    if args.tubemq:
        store = _tubemq_store(args)
        if store.get(args.user) is None:
            raise CliError(f"no such TubeMQ secret: user {args.user}")
        store.alter({}, [args.user])
        print(f"deleted TubeMQ secret of user {args.user}")
        return 0
    if args.data_dir:
        from pathlib import Path

        from tidelog.cluster.credential_store import EmbeddedCredentialStore

        store = EmbeddedCredentialStore(Path(args.data_dir))
        have = store.users().get(args.user, {})
        chosen = [m for m in (args.mechanism or list(have)) if m in have]
        if not chosen:
            raise CliError(f"no such credential: user {args.user}")
        store.alter([], [(args.user, m) for m in chosen])
    else:
        chosen = args.mechanism or [m for m, _ in _described(args, [args.user])[args.user] if m in MECHANISMS]
        admin = _admin(args)
        _alter_each(admin, args.user, [(m, UserScramCredentialDeletion(args.user, MECHANISMS[m])) for m in chosen])
    print(f"deleted user {args.user} ({', '.join(chosen)})")
    return 0


def _described(args: argparse.Namespace, users: list[str]) -> dict[str, list[tuple[str, int]]]:
    """``{user: [(mechanism, iterations)]}`` of ``users`` (every user if none), from DescribeUserScramCredentials
    sent with Tidelog's own codec: confluent-kafka 2.16 crashes the process (``free(): invalid size``) on
    the answer a user without DESCRIBE on the cluster gets. A refusal is an error, never an empty list."""
    from tidelog.cli.broker_connection import BrokerConnection, wire_error
    from tidelog.protocol.messages import DescribeUserScramCredentialsRequest as Describe
    from tidelog.security.scram import MECHANISM_TYPES

    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        answer = conn.request(Describe(users=[Describe.UserName(name=u) for u in users] if users else None))
    if answer.error_code:
        raise CliError(f"cannot describe SCRAM users: {wire_error(answer.error_code, answer.error_message)}")
    described: dict[str, list[tuple[str, int]]] = {}
    for result in answer.results or []:
        if result.error_code:
            raise CliError(f"user {result.user}: {wire_error(result.error_code, result.error_message)}")
        described[result.user] = sorted((MECHANISM_TYPES.get(i.mechanism, f"mechanism {i.mechanism}"), i.iterations)
                                        for i in result.credential_infos)
    return described


def _alter_each(admin, user: str, alterations: list[tuple[str, object]]) -> None:
    """One AlterUserScramCredentials request per mechanism: Kafka refuses a user named twice in one
    request (DUPLICATE_RESOURCE, whatever the mechanisms), so ``kafka-configs.sh --add-config
    'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]'`` fails against Kafka 4.4 itself. Not atomic: a failure
    names the mechanisms already changed."""
    done: list[str] = []
    for mechanism, alteration in alterations:
        futures = admin.alter_user_scram_credentials([alteration], request_timeout=REQUEST_TIMEOUT_S)
        try:
            for future in futures.values():
                future.result()
        except Exception as e:
            already = f" ({', '.join(done)} already changed)" if done else ""
            raise CliError(f"user {user} ({mechanism}): {_printable(describe_error(e))}{already}") from None
        done.append(mechanism)


def _printable(text: str) -> str:
    """librdkafka 2.16 leaves a stray control character after some broker error messages."""
    return "".join(ch for ch in text if ch.isprintable())


__all__ = ["add_parser"]
