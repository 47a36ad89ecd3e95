"""``tidelog schemas list|get|register|check|delete``: the schema registry (docs/schema-registry.md) over
its REST API, Confluent's, as any client reaches it: by URL. No Kafka client runs.

Where the registry is, first match wins: ``--registry-url``, ``$TIDELOG_SCHEMA_REGISTRY_URL``, then
``http://127.0.0.1:9644/`` (the URL ``tidelog serve`` prints with its default ``metrics.listener`` and
``schema.registry.path``). A registry that authenticates (docs/schema-registry.md, "Authentication")
takes ``--user-info USER:PASSWORD`` (or ``$TIDELOG_SCHEMA_REGISTRY_USER_INFO``), as confluent-kafka's
``basic.auth.user.info``.

A refusal is printed as one line with Confluent's message and error code
(``tidelog schemas get: Subject 'x' not found. (error 40401)``) and exits 1; an unreachable registry
exits 1 too; ``check`` exits 3 when the schema is incompatible (0 when compatible); usage errors exit 2.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tidelog.cli.client import CliError, entry
from tidelog.cli.table import print_table

URL_ENV = "TIDELOG_SCHEMA_REGISTRY_URL"
USER_INFO_ENV = "TIDELOG_SCHEMA_REGISTRY_USER_INFO"
DEFAULT_URL = "http://127.0.0.1:9644/"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TYPES = ("AVRO", "JSON", "PROTOBUF")
#: ``check``'s exit code for "incompatible" (1 is an error, 2 a usage error).
INCOMPATIBLE = 3
TIMEOUT_S = 30.0


class RegistryRefused(CliError):
    """The registry answered with an error body: its HTTP status and Confluent's error code."""

    def __init__(self, status: int, error_code: int | None, message: str) -> None:
        super().__init__(f"{message} (error {error_code})" if error_code is not None else message)
        self.status = status
        self.error_code = error_code


class RegistryClient:
    """Blocking JSON requests to one registry (``urllib``; one request per call)."""

    def __init__(self, url: str, user_info: str | None = None) -> None:
        self.url = url.rstrip("/")
        self._authorization = (
            "Basic " + base64.b64encode(user_info.encode()).decode() if user_info else None)

    def request(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in query.items() if v is not None}
        target = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = {"Accept": CONTENT_TYPE}
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        if self._authorization:
            headers["Authorization"] = self._authorization
        request = urllib.request.Request(target, method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            raise _refusal(e.code, e.read()) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise CliError(f"cannot reach the schema registry at {self.url}/: {reason} "
                           f"(--registry-url or ${URL_ENV})") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise CliError(f"{self.url}{path} did not answer JSON: is it a schema registry?") from None


def _refusal(status: int, raw: bytes) -> RegistryRefused:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and "message" in body:
        code = body.get("error_code")
        return RegistryRefused(status, code if isinstance(code, int) else None, str(body["message"]))
    text = raw.decode(errors="replace").strip().splitlines()
    return RegistryRefused(status, None, f"HTTP {status}" + (f": {text[0][:200]}" if text else ""))


# ------------------------------------------------------------------------------------------ arguments


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schemas", help="list, get, register, check or delete schemas in the schema registry",
        description="Use the schema registry (Confluent's REST API, served by `tidelog serve`) by URL: "
        f"--registry-url, else ${URL_ENV}, else {DEFAULT_URL}.",
    )
    actions = p.add_subparsers(dest="schemas_command", metavar="ACTION", required=True)

    lst = actions.add_parser("list", help="list subjects and their versions",
                             description="List subjects: SUBJECT, VERSIONS, LATEST_ID, TYPE (one request per "
                             "subject). With SUBJECT, list that subject's versions: VERSION, ID, TYPE.")
    lst.add_argument("subject", nargs="?", help="list this subject's versions instead")
    lst.add_argument("--prefix", default="", help="only subjects starting with this")
    lst.add_argument("--deleted", action="store_true", help="include soft-deleted subjects and versions")
    _connection(lst, _list)

    get = actions.add_parser("get", help="print a schema",
                             description="Print a schema's text: SUBJECT's latest version, --version N of it, "
                             "or --id ID. --json prints the whole record (subject, version, id, schemaType, "
                             "references, schema).")
    get.add_argument("subject", nargs="?", help="the subject (or --id)")
    get.add_argument("--version", default="latest", help="a version number or latest (default latest)")
    get.add_argument("--id", type=int, help="the schema with this id (instead of a subject)")
    get.add_argument("--deleted", action="store_true", help="find soft-deleted versions too")
    get.add_argument("--json", action="store_true", help="print the whole record as JSON")
    _connection(get, _get)

    reg = actions.add_parser("register", help="register a schema under a subject",
                             description="Register the schema in FILE ('-': standard input) under SUBJECT and "
                             "print its version and id. Registering the same schema again changes nothing. "
                             "Refused (409) when incompatible at the subject's compatibility level.")
    _schema_arguments(reg)
    reg.add_argument("--normalize", action="store_true", help="store the normalized schema text")
    _connection(reg, _register)

    chk = actions.add_parser("check", help="check a schema's compatibility with a subject",
                             description="Check the schema in FILE against SUBJECT at its compatibility level: "
                             "against --version (default: every version the level says, as a registration "
                             "would). Prints compatible (exit 0) or incompatible with the reasons (exit "
                             f"{INCOMPATIBLE}).")
    _schema_arguments(chk)
    chk.add_argument("--version", help="check against this version only (a number or latest)")
    _connection(chk, _check)

    dele = actions.add_parser("delete", help="delete a subject or one of its versions",
                              description="Delete SUBJECT (every version) or --version N of it: softly (it can "
                              "still be found with --deleted), or, once soft-deleted, with --permanent for good. "
                              "Prints the versions deleted.")
    dele.add_argument("subject", help="the subject")
    dele.add_argument("--version", help="only this version (a number or latest)")
    dele.add_argument("--permanent", action="store_true", help="delete for good (after a soft delete)")
    _connection(dele, _delete)


def _schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subject", help="the subject (by Kafka's convention TOPIC-value or TOPIC-key)")
    parser.add_argument("file", help="the schema's file ('-': standard input)")
    parser.add_argument("--type", choices=TYPES, type=str.upper, default="AVRO",
                        help="the schema's type (default AVRO)")
    parser.add_argument("--reference", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                        help="a schema this one references (repeatable)")


def _connection(parser: argparse.ArgumentParser, fn) -> None:
    parser.add_argument("--registry-url", metavar="URL",
                        help=f"the registry's base URL (default: ${URL_ENV}, else {DEFAULT_URL})")
    parser.add_argument("--user-info", metavar="USER:PASSWORD",
                        help=f"HTTP basic auth credentials, a SASL user's (default: ${USER_INFO_ENV})")
    parser.set_defaults(func=entry(fn, parser.prog), prog=parser.prog, parser=parser)


def _client(args: argparse.Namespace) -> RegistryClient:
    url = args.registry_url or os.environ.get(URL_ENV) or DEFAULT_URL
    if not url.startswith(("http://", "https://")):
        raise CliError(f"--registry-url must be an http:// or https:// URL, got {url!r}", 2)
    user_info = args.user_info or os.environ.get(USER_INFO_ENV)
    if user_info is not None and ":" not in user_info:
        raise CliError("--user-info must be USER:PASSWORD", 2)
    return RegistryClient(url, user_info)


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _version(text: str) -> str:
    if text == "latest" or text == "-1":
        return "latest"
    try:
        if int(text) > 0:
            return str(int(text))
    except ValueError:
        pass
    raise CliError(f"--version must be a positive number or latest, got {text!r}", 2)


def _schema_body(args: argparse.Namespace) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as e:
        raise CliError(f"cannot read {args.file}: {e.strerror or e}") from None
    body: dict[str, Any] = {"schema": text}
    if args.type != "AVRO":
        body["schemaType"] = args.type
    references = []
    for ref in args.reference:
        name, eq, rest = ref.partition("=")
        subject, colon, version = rest.rpartition(":")
        if not eq or not colon or not name or not subject or not version.isdigit():
            raise CliError(f"--reference must be NAME=SUBJECT:VERSION, got {ref!r}", 2)
        references.append({"name": name, "subject": subject, "version": int(version)})
    if references:
        body["references"] = references
    return body


# ------------------------------------------------------------------------------------------ actions


def _list(args: argparse.Namespace) -> int:
    client = _client(args)
    if args.subject is not None:
        base = f"/subjects/{_quote(args.subject)}/versions"
        rows = []
        for version in client.request("GET", base, deleted=args.deleted or None):
            found = client.request("GET", f"{base}/{version}", deleted=args.deleted or None)
            rows.append((version, found["id"], found.get("schemaType", "AVRO")))
        print_table(("VERSION", "ID", "TYPE"), rows)
        return 0
    rows = []
    for subject in client.request("GET", "/subjects", deleted=args.deleted or None, subjectPrefix=args.prefix or None):
        base = f"/subjects/{_quote(subject)}/versions"
        versions = client.request("GET", base, deleted=args.deleted or None)
        latest = client.request("GET", f"{base}/{versions[-1]}", deleted=args.deleted or None) if versions else {}
        rows.append((subject, ",".join(map(str, versions)), latest.get("id"), latest.get("schemaType", "AVRO")))
    print_table(("SUBJECT", "VERSIONS", "LATEST_ID", "TYPE"), rows)
    return 0


def _get(args: argparse.Namespace) -> int:
    client = _client(args)
    if (args.id is None) == (args.subject is None):
        raise CliError("name a SUBJECT or an --id (one of them)", 2)
    if args.id is not None:
        found = client.request("GET", f"/schemas/ids/{args.id}")
        found = {"id": args.id, **found}
    else:
        found = client.request("GET", f"/subjects/{_quote(args.subject)}/versions/{_version(args.version)}",
                               deleted=args.deleted or None)
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        print(found["schema"])
    return 0


def _register(args: argparse.Namespace) -> int:
    client = _client(args)
    body = _schema_body(args)
    path = f"/subjects/{_quote(args.subject)}"
    registered = client.request("POST", path + "/versions", body, normalize=args.normalize or None)
    found = client.request("POST", path, body, normalize=args.normalize or None)
    print(f"{args.subject} version {found['version']} id {registered['id']}")
    return 0


def _check(args: argparse.Namespace) -> int:
    client = _client(args)
    body = _schema_body(args)
    path = f"/compatibility/subjects/{_quote(args.subject)}/versions"
    if args.version is not None:
        path += "/" + _version(args.version)
    answer = client.request("POST", path, body, verbose=True)
    if answer.get("is_compatible"):
        print("compatible")
        return 0
    print("incompatible")
    for message in answer.get("messages") or []:
        print(f"  {message}")
    return INCOMPATIBLE


def _delete(args: argparse.Namespace) -> int:
    client = _client(args)
    path = f"/subjects/{_quote(args.subject)}"
    if args.version is not None:
        path += f"/versions/{_version(args.version)}"
    deleted = client.request("DELETE", path, permanent=args.permanent or None)
    versions = deleted if isinstance(deleted, list) else [deleted]
    how = "permanently" if args.permanent else "softly"
    print(f"{args.subject}: deleted {how} version{'s' if len(versions) != 1 else ''} "
          f"{','.join(map(str, versions))}")
    return 0


__all__ = ["DEFAULT_URL", "INCOMPATIBLE", "RegistryClient", "RegistryRefused", "add_parser"]
