"""Configuration, with Kafka's names and defaults, in one place.

Two kinds of settings share one table:

* **topic configs** (``segment.bytes``, ``retention.ms``, ``cleanup.policy`` ...), set per topic with
  CreateTopics/AlterConfigs, each with a **broker synonym** (``log.segment.bytes``, ``log.retention.ms``
  ...) in ``server.properties`` that supplies the default for topics that don't set it;
* **broker configs** (``log.dirs``, ``log.flush.scheduler.interval.ms`` ...) that only
  ``server.properties`` sets.

Values are validated when parsed: a bad value raises :class:`ConfigError` whose message names the key,
the value and what is allowed. Parsed configs are immutable: :class:`TopicConfig` has one attribute per
topic config, the snake_case of its Kafka name (``segment.bytes`` -> ``segment_bytes``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from tidelog.config_def import (
    COMPRESSION_TYPES,
    INT_MAX,
    LONG_MAX,
    SASL_MECHANISMS,
    TOPIC_NAME_STRATEGY,
    ConfigDef,
)
from tidelog.config_def import int_value as _int
from tidelog.config_def import long_value as _long
from tidelog.config_def import optional as _optional
from tidelog.config_def import parse_authorizer as _parse_authorizer
from tidelog.config_def import parse_bool as _parse_bool
from tidelog.config_def import parse_choice as _parse_choice
from tidelog.config_def import parse_choice_ignoring_case as _parse_choice_ignoring_case
from tidelog.config_def import parse_cleanup_policy as _parse_cleanup_policy
from tidelog.config_def import parse_console_authentication as _parse_console_authentication
from tidelog.config_def import parse_float as _parse_float
from tidelog.config_def import parse_int as _parse_int
from tidelog.config_def import parse_list as _parse_list
from tidelog.config_def import parse_log_dirs as _parse_log_dirs
from tidelog.config_def import parse_pem_type as _parse_pem_type
from tidelog.config_def import parse_sasl_mechanisms as _parse_sasl_mechanisms
from tidelog.config_def import parse_string as _parse_string
from tidelog.config_def import parse_subject_name_strategy as _parse_subject_name_strategy
from tidelog.config_def import parse_super_users as _parse_super_users
from tidelog.errors import ConfigError
from tidelog.listener import (
    NON_ROUTABLE_HOSTS,
    SECURITY_PROTOCOLS,
    Listener,
    check_inter_broker_listener,
    check_listeners,
    check_tubemq_listeners,
    parse_endpoint,
    parse_http_endpoint,
    parse_listeners,
    parse_protocol_map,
)
from tidelog.zookeeper_connect import parse_zookeeper_connect


def is_sensitive(key: str) -> bool:
    """Whether a broker key (possibly listener-prefixed, listener.name.x.ssl.key.password) holds a secret."""
    base = key
    if key.startswith("listener.name."):
        base = key.split(".", 3)[-1] if key.count(".") >= 3 else key
    d = BROKER_CONFIGS.get(base)
    if d is not None:
        return d.sensitive
    return base.endswith((".password", ".jaas.config", "sasl.jaas.config")) or "secret" in base



def _parse_list_or_empty(key: str, raw: Any) -> tuple[str, ...]:
    """A comma-separated list that may be empty (Kafka's LIST configs with an empty default)."""
    return tuple(p.strip() for p in str(raw).split(",") if p.strip())


_TOPIC_DEFS = [
    ConfigDef("cleanup.policy", _parse_cleanup_policy, "delete",
              "delete (retention), compact (keep the latest record per key), or compact,delete.", "log.cleanup.policy"),
    ConfigDef("compression.type", _parse_choice(*COMPRESSION_TYPES), "producer",
              "Codec the broker stores batches in; producer keeps what the producer sent.", "compression.type"),
    ConfigDef("delete.retention.ms", _long(), 86_400_000,
              "How long tombstones are kept after compaction reaches them.", "log.cleaner.delete.retention.ms"),
    ConfigDef("file.delete.delay.ms", _long(), 60_000,
              "Delay before a deleted segment's files are removed from disk.", "log.segment.delete.delay.ms"),
    ConfigDef("flush.messages", _long(1), LONG_MAX,
              "fsync the log after this many messages.", "log.flush.interval.messages"),
    ConfigDef("flush.ms", _long(), LONG_MAX,
              "fsync the log when its oldest unflushed message is this old.", "log.flush.interval.ms"),
    ConfigDef("index.interval.bytes", _int(), 4096,
              "Bytes of log between two entries of the sparse offset index.", "log.index.interval.bytes"),
    ConfigDef("max.compaction.lag.ms", _long(1), LONG_MAX,
              "Longest time a record may stay uncompacted.", "log.cleaner.max.compaction.lag.ms"),
    ConfigDef("max.message.bytes", _int(), 1_048_588,
              "Largest record batch the topic accepts.", "message.max.bytes"),
    ConfigDef("message.timestamp.after.max.ms", _long(), 3_600_000,
              "How far in the future a CreateTime timestamp may be.", "log.message.timestamp.after.max.ms"),
    ConfigDef("message.timestamp.before.max.ms", _long(), LONG_MAX,
              "How far in the past a CreateTime timestamp may be.", "log.message.timestamp.before.max.ms"),
    ConfigDef("message.timestamp.type", _parse_choice("CreateTime", "LogAppendTime"), "CreateTime",
              "Whether records keep the producer's timestamp or get the broker's append time.",
              "log.message.timestamp.type"),
    ConfigDef("min.cleanable.dirty.ratio", _parse_float(0.0, 1.0), 0.5,
              "Share of the log that must be uncompacted before the cleaner runs.", "log.cleaner.min.cleanable.ratio"),
    ConfigDef("min.compaction.lag.ms", _long(), 0,
              "Records younger than this are never compacted.", "log.cleaner.min.compaction.lag.ms"),
    ConfigDef("min.insync.replicas", _int(1), 1,
              "Replicas that must acknowledge an acks=all write.", "min.insync.replicas"),
    ConfigDef("preallocate", _parse_bool, False, "Preallocate segment files (accepted, not used).", "log.preallocate"),
    ConfigDef("retention.bytes", _long(-1), -1,
              "Largest size of a partition before old segments are deleted; -1 = no limit.", "log.retention.bytes"),
    ConfigDef("retention.ms", _long(-1), 604_800_000,
              "How long records are kept before their segment is deleted; -1 = forever.", "log.retention.ms"),
    ConfigDef("segment.bytes", _int(14), 1_073_741_824, "Size of a log segment file.", "log.segment.bytes"),
    ConfigDef("segment.index.bytes", _int(4), 10_485_760,
              "Size of a segment's offset and time index files.", "log.index.size.max.bytes"),
    ConfigDef("segment.jitter.ms", _long(), 0, "Random jitter subtracted from segment.ms.", "log.roll.jitter.ms"),
    ConfigDef("segment.ms", _long(1), 604_800_000,
              "Roll a new segment after this long even if it is not full.", "log.roll.ms"),
    ConfigDef("unclean.leader.election.enable", _parse_bool, False,
              "Allow an out-of-sync replica to become leader.", "unclean.leader.election.enable"),
    # Broker-side schema id validation, as Confluent Server names it (docs/schema-registry.md): topic-only,
    # no broker default.
    ConfigDef("confluent.key.schema.validation", _parse_bool, False,
              "Refuse records whose key does not carry a schema id registered for the key's subject.", None),
    ConfigDef("confluent.key.subject.name.strategy", _parse_subject_name_strategy, TOPIC_NAME_STRATEGY,
              "How the key's subject is named for confluent.key.schema.validation: TopicNameStrategy "
              "(<topic>-key), RecordNameStrategy or TopicRecordNameStrategy.", None),
    ConfigDef("confluent.value.schema.validation", _parse_bool, False,
              "Refuse records whose value does not carry a schema id registered for the value's subject.", None),
    ConfigDef("confluent.value.subject.name.strategy", _parse_subject_name_strategy, TOPIC_NAME_STRATEGY,
              "How the value's subject is named for confluent.value.schema.validation: TopicNameStrategy "
              "(<topic>-value), RecordNameStrategy or TopicRecordNameStrategy.", None),
    ConfigDef("errors.deadletterqueue.group.enable", _parse_bool, False,
              "Whether share groups may use this topic as their dead-letter queue (KIP-1191)."),
]

_BROKER_DEFS = [
    ConfigDef("broker.id", _int(0), 0, "This broker's id (node.id is accepted as a synonym).", topic=False),
    # Cluster mode (docs/cluster.md): set zookeeper.connect and a broker.id unique in the cluster.
    ConfigDef("zookeeper.connect", parse_zookeeper_connect, None, "ZooKeeper ensemble of the cluster, "
              "host:port[,host:port...][/chroot]; empty: a single node with embedded metadata.", topic=False),
    ConfigDef("zookeeper.session.timeout.ms", _int(1), 18_000, "ZooKeeper session timeout.", topic=False),
    ConfigDef("zookeeper.connection.timeout.ms", _optional(_int(1)), None,
              "How long to wait for a ZooKeeper connection; default: the session timeout.", topic=False),
    ConfigDef("broker.rack", _optional(_parse_string), None, "Rack of this broker (rack-aware replica assignment).",
              topic=False),
    ConfigDef("replica.lag.time.max.ms", _long(1), 30_000,
              "A follower that has not caught up for this long leaves the ISR.", topic=False),
    ConfigDef("listeners", parse_listeners, (Listener("PLAINTEXT", "localhost", 9092),),
              "Where the broker listens: comma-separated NAME://HOST:PORT (an empty host means every interface; "
              "port 0 picks a free port).", topic=False),
    ConfigDef("advertised.listeners", parse_listeners, (),
              "Addresses handed to clients in Metadata, by listener name; default: the listeners' own (an empty "
              "or 0.0.0.0 host advertises this machine's host name).", topic=False),
    ConfigDef("listener.security.protocol.map", parse_protocol_map,
              {p: p for p in SECURITY_PROTOCOLS},
              "Security protocol of each listener name, as NAME:PROTOCOL pairs.", topic=False),
    ConfigDef("inter.broker.listener.name", _optional(lambda key, raw: str(raw).strip().upper()), None,
              "The listener brokers use to talk to each other (cluster mode); must be one of the listeners. "
              "Default: the listener of security.inter.broker.protocol.", topic=False),
    ConfigDef("security.inter.broker.protocol", _parse_choice(*SECURITY_PROTOCOLS), "PLAINTEXT",
              "Security protocol between brokers when inter.broker.listener.name is not set.", topic=False),
    ConfigDef("sasl.mechanism.inter.broker.protocol", _parse_string, "GSSAPI",
              "SASL mechanism brokers authenticate with on a SASL inter-broker listener: PLAIN, SCRAM-SHA-256 or "
              "SCRAM-SHA-512 (credentials: listener.name.<listener>.<mechanism>.sasl.jaas.config). Kafka's default, "
              "GSSAPI, is refused at start-up when the inter-broker listener uses SASL.", topic=False),
    # Security (docs/security.md). Every ssl.* and sasl.enabled.mechanisms key may also be set for one listener
    # as listener.name.<listener name in lower case>.<key>, as in Kafka.
    ConfigDef("sasl.enabled.mechanisms", _parse_sasl_mechanisms, ("SCRAM-SHA-256", "SCRAM-SHA-512"),
              "SASL mechanisms served on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, "
              "SCRAM-SHA-512 (Kafka's default, GSSAPI, is not served).", topic=False),
    ConfigDef("sasl.server.max.receive.size", _int(1), 524_288,
              "Largest frame accepted before a client has authenticated.", topic=False),
    ConfigDef("connections.max.reauth.ms", _long(), 0,
              "Longest SASL session before the client must re-authenticate (KIP-368); 0: sessions never "
              "expire.", topic=False),
    # Delegation tokens (docs/security.md "Delegation tokens"): served once the secret key is set.
    ConfigDef("delegation.token.secret.key", _optional(_parse_string), None,
              "Secret key of the HMACs of delegation tokens (the same on every broker); unset: delegation "
              "tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).", topic=False, sensitive=True),
    ConfigDef("delegation.token.max.lifetime.ms", _long(1), 604_800_000,
              "Longest life of a delegation token; renewals cannot extend it past this.", topic=False),
    ConfigDef("delegation.token.expiry.time.ms", _long(1), 86_400_000,
              "How long a delegation token lives until it is renewed (the default renewal period).", topic=False),
    ConfigDef("delegation.token.expiry.check.interval.ms", _long(1), 3_600_000,
              "How often expired delegation tokens are removed.", topic=False),
    ConfigDef("sasl.jaas.config", _optional(_parse_string), None,
              "Accepted for compatibility and not used: users are SCRAM credentials (tidelog users).",
              topic=False, sensitive=True),
    ConfigDef("ssl.keystore.type", _parse_pem_type, "PEM", "Format of the key store: PEM only.", topic=False),
    ConfigDef("ssl.keystore.location", _optional(_parse_string), None,
              "PEM file holding the broker's private key and certificate chain.", topic=False),
    ConfigDef("ssl.keystore.certificate.chain", _optional(_parse_string), None,
              "The broker's certificate chain, inline PEM (instead of ssl.keystore.location).", topic=False,
              sensitive=True),
    ConfigDef("ssl.keystore.key", _optional(_parse_string), None,
              "The broker's private key, inline PEM (instead of ssl.keystore.location).", topic=False,
              sensitive=True),
    ConfigDef("ssl.key.password", _optional(_parse_string), None,
              "Password of an encrypted private key.", topic=False, sensitive=True),
    ConfigDef("ssl.keystore.password", _optional(_parse_string), None,
              "Password of the key store (for PEM: of the private key, when ssl.key.password is not set).",
              topic=False, sensitive=True),
    ConfigDef("ssl.truststore.type", _parse_pem_type, "PEM", "Format of the trust store: PEM only.", topic=False),
    ConfigDef("ssl.truststore.location", _optional(_parse_string), None,
              "PEM file of the certificate authorities client certificates are checked against.", topic=False),
    ConfigDef("ssl.truststore.certificates", _optional(_parse_string), None,
              "Trusted certificate authorities, inline PEM (instead of ssl.truststore.location).", topic=False,
              sensitive=True),
    ConfigDef("ssl.truststore.password", _optional(_parse_string), None,
              "Accepted for compatibility (PEM trust stores have no password).", topic=False, sensitive=True),
    ConfigDef("ssl.client.auth", _parse_choice("none", "requested", "required"), "none",
              "Client certificates: none, requested (checked when sent) or required.", topic=False),
    ConfigDef("ssl.enabled.protocols", _parse_list, ("TLSv1.2", "TLSv1.3"),
              "TLS versions accepted (TLSv1.2, TLSv1.3).", topic=False),
    ConfigDef("ssl.protocol", _optional(_parse_string), "TLSv1.3", "Accepted for compatibility.", topic=False),
    ConfigDef("ssl.cipher.suites", _optional(_parse_list), None,
              "TLS 1.2 cipher suites (OpenSSL names); default: Python's.", topic=False),
    ConfigDef("ssl.principal.mapping.rules", _parse_string, "DEFAULT",
              "How a client certificate's distinguished name becomes a principal: DEFAULT (the whole name) "
              "or RULE:pattern/replacement/[LU] entries, as in Kafka.", topic=False),
    ConfigDef("ssl.endpoint.identification.algorithm", _optional(_parse_string), "https",
              "Accepted for compatibility (clients check the broker's host name).", topic=False),
    ConfigDef("log.dirs", _parse_log_dirs, ("./tidelog-data",), "Directories holding the partition logs.", topic=False),
    ConfigDef("num.partitions", _int(1), 1, "Partitions of an auto-created topic.", topic=False),
    ConfigDef("default.replication.factor", _int(1), 1, "Replication factor of an auto-created topic.", topic=False),
    ConfigDef("auto.create.topics.enable", _parse_bool, True,
              "Create a topic when a client asks for its metadata or produces to it.", topic=False),
    ConfigDef("delete.topic.enable", _parse_bool, True, "Allow DeleteTopics.", topic=False),
    ConfigDef("socket.request.max.bytes", _int(1), 104_857_600,
              "Largest request frame accepted; a larger one closes the connection.", topic=False),
    ConfigDef("connections.max.idle.ms", _long(1), 600_000, "Close connections idle this long.", topic=False),
    ConfigDef("queued.max.requests", _int(1), 500,
              "Requests read ahead per connection before the broker stops reading from it.", topic=False),
    ConfigDef("replica.fetch.max.bytes", _int(0), 1_048_576, "Per-partition fetch size of followers.", topic=False),
    ConfigDef("replica.fetch.response.max.bytes", _int(0), 10_485_760, "Response size of a follower's fetch.",
              topic=False),
    ConfigDef("replica.fetch.wait.max.ms", _int(0), 500, "How long a follower's fetch waits at the leader for data.",
              topic=False),
    ConfigDef("replica.fetch.backoff.ms", _int(0), 1000, "A follower's pause after a failed fetch.", topic=False),
    ConfigDef("replica.socket.timeout.ms", _int(1), 30_000, "A follower's network timeout towards its leader.",
              topic=False),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", _long(1), 5000,
              "How often each log dir's replication-offset-checkpoint (high watermarks) is written.", topic=False),
    ConfigDef("controlled.shutdown.enable", _parse_bool, True,
              "On a clean stop, ask the controller to move this broker's leaderships away first (cluster mode).",
              topic=False),
    ConfigDef("controlled.shutdown.max.retries", _int(0), 3,
              "Controlled-shutdown attempts before the broker stops anyway.", topic=False),
    ConfigDef("controlled.shutdown.retry.backoff.ms", _long(0), 5000,
              "Pause between controlled-shutdown attempts.", topic=False),
    ConfigDef("auto.leader.rebalance.enable", _parse_bool, True,
              "The controller moves leadership back to preferred replicas when brokers are imbalanced "
              "(cluster mode).", topic=False),
    ConfigDef("leader.imbalance.check.interval.seconds", _long(1), 300,
              "How often the controller checks the leader imbalance.", topic=False),
    ConfigDef("leader.imbalance.per.broker.percentage", _int(0), 10,
              "Share of a broker's preferred partitions led elsewhere above which they move back.", topic=False),
    ConfigDef("group.initial.rebalance.delay.ms", _int(0), 3000, "Delay of a new group's first rebalance.",
              topic=False),
    ConfigDef("offsets.topic.num.partitions", _int(1), 50, "Partitions of __consumer_offsets.", topic=False),
    ConfigDef("offsets.topic.replication.factor", _int(1), 3, "Replication factor of __consumer_offsets.",
              topic=False),
    ConfigDef("offsets.topic.segment.bytes", _int(1), 104_857_600, "Segment size of __consumer_offsets.",
              topic=False),
    ConfigDef("offsets.retention.minutes", _int(1), 10_080,
              "Committed offsets of a group are kept this long after the group became empty (or after the "
              "commit, for groups without members).", topic=False),
    ConfigDef("offsets.commit.timeout.ms", _int(1), 5000,
              "How long the group coordinator waits for the in-sync replicas to have its writes (offset "
              "commits, group metadata) before it answers the request with an error (cluster mode).", topic=False),
    ConfigDef("offsets.retention.check.interval.ms", _long(1), 600_000,
              "How often expired committed offsets are looked for.", topic=False),
    ConfigDef("offset.metadata.max.bytes", _int(0), 4096,
              "Longest metadata string an offset commit may carry.", topic=False),
    ConfigDef("group.min.session.timeout.ms", _int(0), 6000,
              "Shortest session timeout a classic group member may ask for.", topic=False),
    ConfigDef("group.max.session.timeout.ms", _int(0), 1_800_000,
              "Longest session timeout a classic group member may ask for.", topic=False),
    ConfigDef("group.max.size", _int(1), INT_MAX, "Most members a classic group may have.", topic=False),
    ConfigDef("quota.window.num", _int(1), 11,
              "Samples kept by each client quota's rate measurement.", topic=False),
    ConfigDef("quota.window.size.seconds", _int(1), 1,
              "Time span of each client quota sample.", topic=False),
    ConfigDef("group.coordinator.rebalance.protocols", _parse_list, ("classic", "consumer", "streams"),
              "Rebalance protocols the group coordinator offers (Kafka 4.4's default: all three; without "
              "'streams' the streams group APIs are not served and streams.version is 0).", topic=False),
    ConfigDef("group.consumer.assignors", _parse_list, ("uniform", "range"),
              "Server-side assignors of consumer groups (KIP-848); the first is the default.", topic=False),
    ConfigDef("group.consumer.session.timeout.ms", _int(1), 45_000,
              "Session timeout of consumer group members (KIP-848).", topic=False),
    ConfigDef("group.consumer.min.session.timeout.ms", _int(1), 45_000,
              "Shortest session timeout of a consumer group (KIP-848).", topic=False),
    ConfigDef("group.consumer.max.session.timeout.ms", _int(1), 60_000,
              "Longest session timeout of a consumer group (KIP-848).", topic=False),
    ConfigDef("group.consumer.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to consumer group members (KIP-848).", topic=False),
    ConfigDef("group.consumer.min.heartbeat.interval.ms", _int(1), 5000,
              "Shortest heartbeat interval of a consumer group (KIP-848).", topic=False),
    ConfigDef("group.consumer.max.heartbeat.interval.ms", _int(1), 15_000,
              "Longest heartbeat interval of a consumer group (KIP-848).", topic=False),
    ConfigDef("group.consumer.max.size", _int(1), INT_MAX, "Most members a consumer group may have (KIP-848).",
              topic=False),
    ConfigDef("group.consumer.migration.policy",
              _parse_choice_ignoring_case("bidirectional", "upgrade", "downgrade", "disabled"), "bidirectional",
              "Online conversion of non-empty groups between the classic and the consumer protocol: upgrade "
              "(classic -> consumer), downgrade (consumer -> classic), bidirectional or disabled.", topic=False),
    ConfigDef("group.share.session.timeout.ms", _int(1), 45_000,
              "Session timeout of share group members (KIP-932).", topic=False),
    ConfigDef("group.share.min.session.timeout.ms", _int(1), 45_000,
              "Shortest session timeout of a share group (KIP-932).", topic=False),
    ConfigDef("group.share.max.session.timeout.ms", _int(1), 60_000,
              "Longest session timeout of a share group (KIP-932).", topic=False),
    ConfigDef("group.share.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to share group members (KIP-932).", topic=False),
    ConfigDef("group.share.min.heartbeat.interval.ms", _int(1), 5000,
              "Shortest heartbeat interval of a share group (KIP-932).", topic=False),
    ConfigDef("group.share.max.heartbeat.interval.ms", _int(1), 15_000,
              "Longest heartbeat interval of a share group (KIP-932).", topic=False),
    ConfigDef("group.share.max.size", _int(1), 200, "Most members a share group may have (KIP-932).", topic=False),
    # Streams groups (KIP-1071; docs/streams-groups.md), served unless group.coordinator.rebalance.protocols leaves out
    # ``streams`` (by default it lists it, as Kafka 4.4's).
    ConfigDef("group.streams.session.timeout.ms", _int(1), 45_000,
              "Session timeout of streams group members (KIP-1071).", topic=False),
    ConfigDef("group.streams.min.session.timeout.ms", _int(1), 45_000,
              "Shortest session timeout of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.max.session.timeout.ms", _int(1), 60_000,
              "Longest session timeout of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to streams group members (KIP-1071).", topic=False),
    ConfigDef("group.streams.min.heartbeat.interval.ms", _int(1), 5000,
              "Shortest heartbeat interval of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.max.heartbeat.interval.ms", _int(1), 15_000,
              "Longest heartbeat interval of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.max.size", _int(1), INT_MAX, "Most members a streams group may have (KIP-1071).",
              topic=False),
    ConfigDef("group.streams.num.standby.replicas", _int(0), 0,
              "Standby replicas of each task of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.max.standby.replicas", _int(0), 2,
              "Most standby replicas a streams group may ask for (KIP-1071).", topic=False),
    ConfigDef("group.streams.initial.rebalance.delay.ms", _int(0), 3000,
              "How long a new streams group waits for more members before its first assignment (KIP-1071).",
              topic=False),
    ConfigDef("group.streams.assignment.interval.ms", _int(0), 1000,
              "A streams group's target assignment is computed at most once per this interval (KIP-1071); a "
              "heartbeat that would need a new one sooner sees ASSIGNMENT_DELAYED.", topic=False),
    ConfigDef("group.streams.min.assignment.interval.ms", _int(0), 0,
              "Shortest assignment interval of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.max.assignment.interval.ms", _int(0), 15_000,
              "Longest assignment interval of a streams group (KIP-1071).", topic=False),
    ConfigDef("group.streams.rack.aware.assignment.tags", _parse_list_or_empty, (),
              "Client tag keys over which a streams group's standby tasks are spread (KIP-1071); a member "
              "lacking one is told MISSING_CLIENT_TAGS.", topic=False),
    ConfigDef("log.flush.scheduler.interval.ms", _long(), LONG_MAX,
              "How often the flusher checks whether a log needs an fsync by time.", topic=False),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", _int(), 60_000,
              "How often recovery points are written to disk.", topic=False),
    ConfigDef("log.retention.check.interval.ms", _long(1), 300_000,
              "How often segments are checked for deletion.", topic=False),
    ConfigDef("log.cleaner.enable", _parse_bool, True, "Run the log cleaner (compaction).", topic=False),
    ConfigDef("log.cleaner.backoff.ms", _long(), 15_000,
              "Sleep between cleaner passes that found nothing to do.", topic=False),
    ConfigDef("producer.id.expiration.ms", _int(1), 86_400_000,
              "Forget a producer id after this long without writes.", topic=False),
    ConfigDef("transaction.state.log.num.partitions", _int(1), 50, "Partitions of __transaction_state.",
              topic=False),
    ConfigDef("transaction.state.log.replication.factor", _int(1), 3,
              "Replication factor of __transaction_state (at most the number of brokers).", topic=False),
    ConfigDef("transaction.state.log.segment.bytes", _int(1), 104_857_600, "Segment size of __transaction_state.",
              topic=False),
    ConfigDef("transaction.state.log.min.isr", _int(1), 2,
              "min.insync.replicas of __transaction_state (at most its replication factor).", topic=False),
    ConfigDef("transaction.max.timeout.ms", _int(1), 900_000,
              "Longest transaction timeout a producer may ask for (InitProducerId).", topic=False),
    ConfigDef("transactional.id.expiration.ms", _int(1), 604_800_000,
              "Forget a transactional id after this long without a transaction.", topic=False),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int(1), 10_000,
              "How often transactions open longer than their timeout are looked for and aborted.", topic=False),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", _int(1), 3_600_000,
              "How often expired transactional ids are looked for.", topic=False),
    ConfigDef("transaction.partition.verification.enable", _parse_bool, True,
              "Check with the transaction coordinator that a partition is in the transaction before its first "
              "transactional write (KIP-890).", topic=False),
    ConfigDef("add.partitions.to.txn.retry.backoff.ms", _int(1), 20,
              "Backoff between the broker's attempts to add a partition to a transaction (Produce v12+).",
              topic=False),
    ConfigDef("add.partitions.to.txn.retry.backoff.max.ms", _int(0), 100,
              "How long the broker keeps retrying to add a partition to a transaction whose previous one is "
              "still completing.", topic=False),
    ConfigDef("transaction.version", _parse_int(0, 2), 2,
              "The transaction protocol the broker finalizes (Kafka's transaction.version feature): 2 is "
              "KIP-890's, where every transaction bumps the producer epoch.", topic=False),
    ConfigDef("share.version", _parse_int(0, 2), 2,
              "The share-group protocol a new cluster finalizes (Kafka's share.version feature, KIP-932): 0 serves "
              "no share-group API; 1 serves share groups (docs/share-groups.md); 2, the default as in Kafka 4.4, "
              "adds their dead-letter queues (KIP-1191). The initial level only: UpdateFeatures (tidelog features, "
              "kafka-features.sh) changes the cluster's level at runtime.", topic=False),
    ConfigDef("errors.deadletterqueue.auto.create.topics.enable", _parse_bool, False,
              "Whether the broker creates a share group's dead-letter queue topic when it does not exist "
              "(KIP-1191, share.version=2).", topic=False),
    ConfigDef("errors.deadletterqueue.topic.name.prefix", _parse_string, "dlq.",
              "The prefix every share group's dead-letter queue topic name must have (KIP-1191); empty: any "
              "name.", topic=False),
    ConfigDef("share.coordinator.state.topic.num.partitions", _int(1), 50,
              "Partitions of __share_group_state (the share coordinator's topic, KIP-932).", topic=False),
    ConfigDef("share.coordinator.state.topic.replication.factor", _int(1), 3,
              "Replication factor of __share_group_state (at most the number of brokers).", topic=False),
    ConfigDef("share.coordinator.state.topic.segment.bytes", _int(1), 104_857_600,
              "Segment size of __share_group_state.", topic=False),
    ConfigDef("share.coordinator.state.topic.min.isr", _int(1), 2,
              "min.insync.replicas of __share_group_state (at most its replication factor).", topic=False),
    ConfigDef("share.coordinator.snapshot.update.records.per.snapshot", _int(0), 500,
              "ShareUpdate records written for a share partition before its next write is a whole ShareSnapshot.",
              topic=False),
    ConfigDef("share.coordinator.write.timeout.ms", _int(1), 5000,
              "How long the share coordinator waits for a write to be committed (the ISR has it) before it "
              "answers COORDINATOR_NOT_AVAILABLE.", topic=False),
    ConfigDef("group.share.record.lock.duration.ms", _int(1000), 30_000,
              "How long a share group's consumer holds the records it acquired before they are offered again "
              "(the broker default of the group config share.record.lock.duration.ms).", topic=False),
    ConfigDef("group.share.delivery.count.limit", _parse_int(2, 10), 5,
              "Deliveries of a record to a share group after which it is archived instead of offered again.",
              topic=False),
    ConfigDef("group.share.partition.max.record.locks", _parse_int(100, 4000), 2000,
              "Records in flight (acquired or waiting to be offered again) per share partition.", topic=False),
    ConfigDef("group.share.max.share.sessions", _int(1), 2000, "Share sessions (ShareFetch) kept.", topic=False),
    # Client telemetry (KIP-714, docs/telemetry.md).
    ConfigDef("telemetry.enable", _parse_bool, False,
              "Serve client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry appear in ApiVersions, "
              "clients that match a client-metrics subscription push their metrics, shown on /metrics and in the "
              "console. Kafka serves them only with a ClientTelemetry metrics reporter plugin, so the default (off) "
              "answers as a plain Kafka broker does.", topic=False),
    ConfigDef("telemetry.max.bytes", _int(1), 1_048_576,
              "The largest telemetry push (after compression) the broker takes from a client (TELEMETRY_TOO_LARGE "
              "beyond it).", topic=False),
    ConfigDef("max.incremental.fetch.session.cache.slots", _int(), 1000, "Fetch sessions kept.", topic=False),
    ConfigDef("metrics.listener", parse_http_endpoint, ("127.0.0.1", 9644),
              "HTTP listener for /metrics (Prometheus), /healthz, /readyz and the web console, as "
              "http://HOST:PORT (port 0 picks a free port; unset, it is 9644, or a free port when the first of "
              "listeners has port 0); empty: no HTTP listener.", topic=False),
    ConfigDef("console.enable", _parse_bool, True,
              "Serve the web console and its JSON API on the HTTP listener (metrics.listener).", topic=False),
    ConfigDef("console.read.only", _parse_bool, True,
              "The web console only shows: every request that would change data (create or delete topics, alter "
              "configs, produce, reset offsets) is refused. Set to false to allow changes.", topic=False),
    ConfigDef("console.authentication", _parse_console_authentication, "",
              "Who may use the web console: none (everyone, as User:ANONYMOUS) or sasl (a login with a SASL user's "
              "name and password; each request then runs as that user, under the ACLs). Empty: sasl when "
              "authorizer.class.name is set, else none.", topic=False),
    ConfigDef("console.sample.interval.ms", _long(100), 5000,
              "How often the web console samples message rates and consumer lag for its live charts.", topic=False),
    # The schema registry (docs/schema-registry.md): Confluent's REST API on the HTTP listener.
    ConfigDef("schema.registry.enable", _parse_bool, True,
              "Serve a schema registry with Confluent's REST API on the HTTP listener (metrics.listener), its "
              "state in the compacted topic _schemas. In a cluster every broker serves it: the leader of _schemas "
              "writes, the others forward writes to it.", topic=False),
    ConfigDef("schema.registry.path", lambda key, raw: _parse_registry_path(key, raw), "/",
              "Where the schema registry's API is on the HTTP listener: / (the default: /subjects, /schemas ... "
              "at the root) or a prefix such as /schema-registry; clients are given http://HOST:PORT/PATH.",
              topic=False),
    ConfigDef("schema.registry.topic.replication.factor", _int(1), 3,
              "Replication factor of _schemas (capped at the number of brokers).", topic=False),
    ConfigDef("schema.registry.topic.segment.bytes", _int(1), 104_857_600, "Segment size of _schemas.",
              topic=False),

    # Authorization (docs/security.md "Authorization").
    ConfigDef("authorizer.class.name", _parse_authorizer, "",
              "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or Kafka's older "
              "kafka.security.authorizer.AclAuthorizer) checks every request against the ACLs; empty: none, "
              "every client may do everything.", topic=False),
    ConfigDef("super.users", _parse_super_users, (),
              "Principals the authorizer allows everything, separated by ';' (User:admin;User:broker).",
              topic=False),
    ConfigDef("allow.everyone.if.no.acl.found", _parse_bool, False,
              "With an authorizer: allow an operation on a resource no ACL covers (false: refuse).", topic=False),
    ConfigDef("tubemq.master.listener", parse_endpoint, None,
              "Where the TubeMQ master service listens, as HOST:PORT (TubeMQ's usual port is 8715); empty: TubeMQ "
              "clients are not served. Set together with tubemq.broker.listener.", topic=False),
    ConfigDef("tubemq.broker.listener", parse_endpoint, None,
              "Where the TubeMQ broker service listens, as HOST:PORT (TubeMQ's usual port is 8123); empty: TubeMQ "
              "clients are not served. Set together with tubemq.master.listener.", topic=False),
    ConfigDef("tubemq.broker.advertised.listener", parse_endpoint, None,
              "The TubeMQ broker address the master hands to clients, when it differs from "
              "tubemq.broker.listener (NAT, containers); an empty host advertises this machine's host name.",
              topic=False),
    ConfigDef("tubemq.authentication.enable", _parse_bool, False,
              "TubeMQ clients must authenticate: the master refuses registers and heartbeats without a valid "
              "signature by a user's TubeMQ secret (tidelog users add NAME --tubemq; docs/security.md) with "
              "415 CERTIFICATE_FAILURE, and the broker service messages without the token it handed out.",
              topic=False),
]

TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _TOPIC_DEFS}
BROKER_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _BROKER_DEFS}
BROKER_SYNONYMS: dict[str, str] = {d.broker_synonym: d.name for d in _TOPIC_DEFS if d.broker_synonym}

# Broker keys in coarser units that map onto a millisecond key (Kafka's precedence: ms > minutes > hours).
UNIT_ALIASES = {
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.roll.ms": (("log.roll.hours", 3_600_000),),
    "log.roll.jitter.ms": (("log.roll.jitter.hours", 3_600_000),),
}


BROKER_ALIASES = {"node.id": "broker.id", "log.dir": "log.dirs"}
#: Every key server.properties may hold that Tidelog reads.
KNOWN_BROKER_KEYS = (frozenset(BROKER_CONFIGS) | frozenset(BROKER_SYNONYMS) | frozenset(BROKER_ALIASES)
                     | frozenset(a for al in UNIT_ALIASES.values() for a, _ in al))


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` text: ``key=value`` or ``key: value`` lines, ``#``/``!`` comments,
    backslash line continuations."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                key, value = line[:i].strip(), line[i + 1 :].strip()
                break
        else:
            key, value = line, ""
        out[key] = value
    return out


@dataclass(frozen=True)
class BrokerConfig:
    """A broker's configuration: known broker keys parsed, topic defaults derived from synonyms.

    ``props`` keeps every supplied key as text (for DescribeConfigs); ``unknown`` lists keys Tidelog
    does not use, which the broker logs but accepts (as Kafka does)."""

    props: dict[str, str]
    values: dict[str, Any]
    topic_defaults: TopicConfig
    unknown: tuple[str, ...]
    #: unknown key -> the known key it is probably a misspelling of
    suggestions: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Parse ``server.properties`` values; a bad value raises ConfigError naming the key as the
        user wrote it (``node.id``, ``log.retention.hours`` ...)."""
        normalized: dict[str, str] = {}
        written_as: dict[str, str] = {}
        for key, value in props.items():
            canonical = BROKER_ALIASES.get(key, key)
            if canonical in normalized and canonical == key:
                pass  # the canonical spelling wins over its alias
            elif canonical in normalized:
                continue
            normalized[canonical] = str(value)
            written_as[canonical] = key
        values = {d.name: d.default for d in _BROKER_DEFS}
        for key, raw in normalized.items():
            d = BROKER_CONFIGS.get(key)
            if d is not None:
                values[key] = d.parse(written_as[key], raw)
        check_listeners(values)
        _free_http_port(values, normalized)
        check_tubemq_listeners(values)
        check_inter_broker_listener(values)
        if values["zookeeper.connect"] is not None and "broker.id" not in normalized:
            raise ConfigError("broker.id (or node.id) must be set when zookeeper.connect is: each broker of a "
                              "cluster needs its own id")
        topic_defaults = topic_defaults_from_broker(normalized)
        unknown = tuple(sorted(k for k in normalized if k not in KNOWN_BROKER_KEYS and not _listener_override(k)))
        suggestions = {}
        for key in unknown:
            close = difflib.get_close_matches(key, sorted(KNOWN_BROKER_KEYS), n=1, cutoff=0.8)
            if close:
                suggestions[key] = close[0]
        return cls(normalized, values, topic_defaults, unknown, suggestions)

    def describe_unknown(self, key: str) -> str:
        """The warning for an unknown key, with a suggestion when one is close."""
        text = f"unknown configuration {key!r} is ignored"
        if key in self.suggestions:
            text += f"; did you mean {self.suggestions[key]!r}?"
        return text


def _parse_registry_path(key: str, raw: Any) -> str:
    """``schema.registry.path``: "/" or "/a/b" (kept without its trailing slash; "/" is the root)."""
    value = str(raw).strip()
    if not value.startswith("/") or any(c in value for c in "{}?#% ") or "//" in value:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: a path such as / or /schema-registry")
    return value.rstrip("/") or "/"


def _free_http_port(values: dict[str, Any], given: Mapping[str, str]) -> None:
    """A first listener on port 0 (``--port 0``: "any free port") makes the HTTP listener pick a free
    port too, unless ``metrics.listener`` is set: a second broker on one machine must not collide on
    the default 127.0.0.1:9644 (the TubeMQ listeners have no default port: they are always named)."""
    listeners = values["listeners"]
    if "metrics.listener" in given or not listeners or listeners[0].port != 0:
        return
    if values["metrics.listener"] is not None:
        values["metrics.listener"] = (values["metrics.listener"][0], 0)


def _listener_override(key: str) -> bool:
    """``listener.name.<name>.<key>``: a per-listener value of a broker key (checked when the broker
    builds its listeners), or of a SASL mechanism's key (``listener.name.x.plain.sasl.jaas.config``)."""
    parts = key.split(".", 3)
    return len(parts) == 4 and parts[:2] == ["listener", "name"] and bool(parts[2])


def attr_name(kafka_name: str) -> str:
    return kafka_name.replace(".", "_")


@dataclass(frozen=True)
class TopicConfig:
    """Effective configuration of one topic (immutable). Attribute = Kafka name with ``_`` for ``.``."""

    cleanup_policy: str = "delete"
    compression_type: str = "producer"
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    message_timestamp_after_max_ms: int = 3_600_000
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824
    segment_index_bytes: int = 10_485_760
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False
    confluent_key_schema_validation: bool = False
    confluent_key_subject_name_strategy: str = TOPIC_NAME_STRATEGY
    confluent_value_schema_validation: bool = False
    confluent_value_subject_name_strategy: str = TOPIC_NAME_STRATEGY
    errors_deadletterqueue_group_enable: bool = False

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def from_dict(cls, overrides: Mapping[str, Any], defaults: TopicConfig | None = None) -> TopicConfig:
        """Kafka-named overrides on top of ``defaults`` (the broker's topic defaults)."""
        base = defaults or cls()
        values = {}
        for key, raw in overrides.items():
            d = TOPIC_CONFIGS.get(key)
            if d is None:
                raise ConfigError(f"Unknown topic config name: {key}")
            values[attr_name(key)] = d.parse(key, raw)
        return base.replace(**values)

    def replace(self, **values: Any) -> TopicConfig:
        current = {f.name: getattr(self, f.name) for f in fields(self)}
        current.update(values)
        return TopicConfig(**current)

    def to_dict(self) -> dict[str, Any]:
        return {d.name: getattr(self, attr_name(d.name)) for d in _TOPIC_DEFS}


def validate_topic_configs(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Parse Kafka-named topic configs; raises ConfigError naming the first bad one."""
    out = {}
    for key, raw in configs.items():
        d = TOPIC_CONFIGS.get(key)
        if d is None:
            raise ConfigError(f"Unknown topic config name: {key}")
        out[key] = d.parse(key, raw)
    return out


#: Broker keys whose negative values all mean "no limit" (Kafka's ``logRetentionTimeMillis``).
_UNLIMITED_WHEN_NEGATIVE = frozenset({"log.retention.ms", "log.retention.minutes", "log.retention.hours"})


def topic_defaults_from_broker(props: Mapping[str, Any]) -> TopicConfig:
    """The topic defaults a broker's ``server.properties`` implies (``log.retention.hours=1`` ...).
    A bad value raises ConfigError naming the key as written. ``log.retention.{ms,minutes,hours}``
    below zero mean unlimited (-1), as in Kafka."""
    values: dict[str, Any] = {}
    for ms_key, aliases in UNIT_ALIASES.items():
        written = [(ms_key, 1)] + [a for a in aliases]
        for key, factor in written:
            if key in props:
                amount = _parse_int(-LONG_MAX, LONG_MAX)(key, props[key])
                if amount < 0 and key in _UNLIMITED_WHEN_NEGATIVE:
                    amount, factor = -1, 1
                parsed = TOPIC_CONFIGS[BROKER_SYNONYMS[ms_key]].parse(key, amount * factor)
                values[attr_name(BROKER_SYNONYMS[ms_key])] = parsed
                break
    for key, raw in props.items():
        if key in BROKER_SYNONYMS and key not in UNIT_ALIASES:
            values[attr_name(BROKER_SYNONYMS[key])] = TOPIC_CONFIGS[BROKER_SYNONYMS[key]].parse(key, raw)
    return TopicConfig().replace(**values)


__all__ = [
    "BROKER_ALIASES",
    "BROKER_CONFIGS",
    "BROKER_SYNONYMS",
    "COMPRESSION_TYPES",
    "KNOWN_BROKER_KEYS",
    "LONG_MAX",
    "NON_ROUTABLE_HOSTS",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "TOPIC_CONFIGS",
    "UNIT_ALIASES",
    "BrokerConfig",
    "ConfigDef",
    "ConfigError",
    "Listener",
    "TopicConfig",
    "attr_name",
    "is_sensitive",
    "parse_properties",
    "topic_defaults_from_broker",
    "validate_topic_configs",
]
