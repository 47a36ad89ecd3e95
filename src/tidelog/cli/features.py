"""``tidelog features``: describe and change the cluster's finalized feature levels (KIP-584), as Kafka's
``kafka-features.sh`` does::

    $ tidelog features describe
    Feature: group.version                             SupportedMinVersion: 0                SupportedMaxVersion: 1  ...
    Feature: metadata.version                          SupportedMinVersion: 4.4-IV2          SupportedMaxVersion: 4.4-IV2  ...
    Feature: share.version                             SupportedMinVersion: 0                SupportedMaxVersion: 2  ...
    Feature: transaction.version                       SupportedMinVersion: 0                SupportedMaxVersion: 2  ...

(each line goes on with ``FinalizedVersionLevel: N`` and ``Epoch: N``, in kafka-features.sh's columns)
    $ tidelog features downgrade --feature share.version=0
    share.version was downgraded to 0.
    $ tidelog features upgrade --feature share.version=2
    share.version was upgraded to 2.

``upgrade``, ``downgrade`` (``--unsafe`` for a lossy one) and ``disable`` (level 0) send one UpdateFeatures
request with every ``--feature``; ``--dry-run`` validates only. A refused request prints Kafka's message for
each feature (``Could not upgrade share.version to 3. The update failed for all features since ...``) and
exits 1. The supported ranges are those of the broker asked (ApiVersions v3+); which features Tidelog has
and which can change at runtime: docs/compat.md "Feature levels".
"""

from __future__ import annotations

import argparse

from tidelog.cli.client import CliError, command

#: How kafka-features.sh names metadata.version's levels; Tidelog supports 4.4-IV2 only.
METADATA_VERSIONS = {33: "4.4-IV2"}
METADATA_VERSION = "metadata.version"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _feature(text: str) -> tuple[str, int]:
    name, sep, level = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected FEATURE=LEVEL, e.g. share.version=1")
    if name == METADATA_VERSION and level in METADATA_VERSIONS.values():
        return name, next(k for k, v in METADATA_VERSIONS.items() if v == level)
    try:
        return name, int(level)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the level must be a number") from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "features", help="describe, upgrade and downgrade the cluster's feature levels",
        description="The cluster's finalized feature levels (KIP-584: share.version turns share groups on, "
        "group.version, transaction.version, metadata.version), through ApiVersions and UpdateFeatures; "
        "the output follows kafka-features.sh.",
    )
    actions = p.add_subparsers(dest="features_command", metavar="ACTION", required=True)

    describe = actions.add_parser(
        "describe", help="show each feature's supported range and finalized level",
        description="Print every feature the broker supports: its supported range, the cluster's finalized "
        "level and the finalized features' epoch.")
    command(describe, _describe)

    for name, verb, help_text in (
        ("upgrade", "upgrade", "raise feature levels"),
        ("downgrade", "downgrade", "lower feature levels (safe downgrades unless --unsafe)"),
    ):
        action = actions.add_parser(name, help=help_text, description=f"{help_text[0].upper()}{help_text[1:]} "
                                    "with one UpdateFeatures request (all or none are applied).")
        action.add_argument("--feature", action="append", type=_feature, required=True, metavar="FEATURE=LEVEL",
                            help="the feature and its new level (repeatable), e.g. share.version=1")
        if name == "downgrade":
            action.add_argument("--unsafe", action="store_true",
                                help="an unsafe (lossy) downgrade, where Kafka would refuse a safe one")
        action.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
        command(action, _upgrade if verb == "upgrade" else _downgrade)

    disable = actions.add_parser("disable", help="set features to level 0",
                                 description="Disable features (level 0, a safe downgrade unless --unsafe).")
    disable.add_argument("--feature", action="append", required=True, metavar="FEATURE",
                         help="the feature to disable (repeatable)")
    disable.add_argument("--unsafe", action="store_true", help="an unsafe (lossy) downgrade")
    disable.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
    command(disable, _disable)


def _connect(args: argparse.Namespace):
    """A connection to the first bootstrap broker that answers (UpdateFeatures goes to any broker)."""
    from tidelog.cli.broker_connection import BrokerConnection

    failure: CliError | None = None
    for address in args.bootstrap_server.split(","):
        try:
            return BrokerConnection.open(address.strip(), args.client_properties)
        except CliError as e:
            failure = e
    assert failure is not None
    raise failure


def _level_text(feature: str, level: int) -> str:
    return METADATA_VERSIONS.get(level, str(level)) if feature == METADATA_VERSION else str(level)


def _describe(args: argparse.Namespace) -> int:
    from tidelog import __version__
    from tidelog.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

    with _connect(args) as conn:
        versions = conn.api_versions()
        if versions.get(18, (0, 0))[1] < 3:
            raise CliError(f"the broker at {conn.address} does not report feature levels (ApiVersions v3+)")
        answer = conn.request(ApiVersionsRequest(client_software_name="tidelog-cli", client_software_version=__version__),
                              min(versions[18][1], 4))
    assert isinstance(answer, ApiVersionsResponse)
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    epoch = answer.finalized_features_epoch
    for f in sorted(answer.supported_features, key=lambda f: f.name):
        # kafka-features.sh 4.4's columns
        print(f"Feature: {f.name:<42}SupportedMinVersion: {_level_text(f.name, f.min_version):<17}"
              f"SupportedMaxVersion: {_level_text(f.name, f.max_version):<17}"
              f"FinalizedVersionLevel: {_level_text(f.name, finalized.get(f.name, 0)):<17}"
              f"Epoch: {epoch if epoch >= 0 else '-'}")
    return 0


def _update(args: argparse.Namespace, updates: list[tuple[str, int]], upgrade_type: int, verb: str) -> int:
    from tidelog.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse

    with _connect(args) as conn:
        version = conn.version_for(UpdateFeaturesRequest.API_KEY)
        if args.dry_run and version < 1:
            raise CliError(f"the broker at {conn.address} cannot validate only (UpdateFeatures v1+)")
        # v0 says a downgrade with allow_downgrade, v1+ with the upgrade type
        request = UpdateFeaturesRequest(
            feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
                feature=name, max_version_level=level, **({"allow_downgrade": upgrade_type != UPGRADE} if version == 0
                                                          else {"upgrade_type": upgrade_type}))
                for name, level in updates],
            validate_only=args.dry_run)
        answer = conn.request(request, version)
    assert isinstance(answer, UpdateFeaturesResponse)
    done = "can be" if args.dry_run else "was"
    past = {"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[verb]
    for name, level in updates:
        if answer.error_code:
            print(f"Could not {verb} {name}{'' if verb == 'disable' else f' to {_level_text(name, level)}'}. "
                  f"{answer.error_message}")
        elif verb == "disable":
            print(f"{name} {done} {past}.")
        else:
            print(f"{name} {done} {past} to {_level_text(name, level)}.")
    if answer.error_code:
        raise CliError(f"{len(updates)} out of {len(updates)} operation(s) failed.")
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    return _update(args, args.feature, UPGRADE, "upgrade")


def _downgrade(args: argparse.Namespace) -> int:
    return _update(args, args.feature, UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE, "downgrade")


def _disable(args: argparse.Namespace) -> int:
    return _update(args, [(name, 0) for name in args.feature], UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE,
                   "disable")
