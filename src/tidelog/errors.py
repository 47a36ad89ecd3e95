"""Kafka's protocol error codes, in one place, and the exception that carries them.

Every response in the Kafka wire protocol reports failures as an ``int16`` error code. This module is
the single home of that table for Tidelog: :class:`ErrorCode` lists every code Apache Kafka defines
(``UNKNOWN_SERVER_ERROR = -1``, ``NONE = 0``, then ``1`` … ``133`` as of Kafka 4.x, with no gaps),
under the exact names of Kafka's ``org.apache.kafka.common.protocol.Errors`` enum.

Each member is a plain ``int`` (an :class:`~enum.IntEnum`), so codecs can write it straight onto the
wire, and also carries:

* ``retriable`` -- ``True`` when Kafka's exception class for the code is a ``RetriableException``
  (directly or through e.g. ``InvalidMetadataException``), i.e. when a client may simply retry;
* ``message`` -- a short default description (our own wording, not Kafka's).

Codes read off the wire go through :meth:`ErrorCode.from_code`, which maps codes this table does not
know (say, from a newer peer) to ``UNKNOWN_SERVER_ERROR`` the way Kafka's clients do.

:class:`KafkaError` is the exception raised inside the broker when a request must fail with a given
code; the request handler turns it back into the code (and message) of the response::

    raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"partition {tp} is led by broker {leader}")
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ConfigError", "ErrorCode", "KafkaError", "RecordValidationError"]


class ErrorCode(IntEnum):
    """A Kafka protocol error code, with Kafka's retriability and a short default message."""

    retriable: bool
    message: str

    def __new__(cls, code: int, retriable: bool, message: str) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    # name = (code, retriable, default message)
    UNKNOWN_SERVER_ERROR = (-1, False, "The server hit an unexpected error while handling the request.")
    NONE = (0, False, "No error.")
    OFFSET_OUT_OF_RANGE = (1, False, "The requested offset lies outside the range the partition holds.")
    CORRUPT_MESSAGE = (2, True, "A record is corrupt: checksum mismatch, bad size or otherwise malformed.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This broker does not host the requested topic or partition.")
    INVALID_FETCH_SIZE = (4, False, "The fetch size in the request is not valid.")
    LEADER_NOT_AVAILABLE = (5, True, "The partition has no leader right now, usually because of an election.")
    NOT_LEADER_OR_FOLLOWER = (
        6,
        True,
        "This broker is not the partition's leader (or not one of its replicas).",
    )
    REQUEST_TIMED_OUT = (7, True, "The request did not complete within its timeout.")
    BROKER_NOT_AVAILABLE = (8, False, "The broker cannot be reached or is not running.")
    REPLICA_NOT_AVAILABLE = (9, True, "A replica of the partition is not available on this broker.")
    MESSAGE_TOO_LARGE = (10, False, "A record is larger than the broker is willing to accept.")
    STALE_CONTROLLER_EPOCH = (11, False, "The request came from a controller that is no longer current.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "The metadata string attached to the offset is too long.")
    NETWORK_EXCEPTION = (13, True, "The connection was lost before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (
        14,
        True,
        "The coordinator is still loading its state and cannot serve yet.",
    )
    COORDINATOR_NOT_AVAILABLE = (
        15,
        True,
        "No coordinator is currently available for this group or transaction.",
    )
    NOT_COORDINATOR = (16, True, "This broker is not the coordinator for the group or transactional id.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The topic name is invalid or the operation is not allowed on it.")
    RECORD_LIST_TOO_LARGE = (18, False, "A record batch is larger than the configured log segment size.")
    NOT_ENOUGH_REPLICAS = (19, True, "Write refused: fewer in-sync replicas than the configured minimum.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20,
        True,
        "The write was appended but reached too few in-sync replicas.",
    )
    INVALID_REQUIRED_ACKS = (21, False, "The acks value in the produce request is not valid.")
    ILLEGAL_GENERATION = (22, False, "The group generation id in the request is not the current one.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "The member's protocol type or protocols do not fit the group.")
    INVALID_GROUP_ID = (24, False, "The group id is empty or otherwise not valid.")
    UNKNOWN_MEMBER_ID = (25, False, "The member id is not one the coordinator knows.")
    INVALID_SESSION_TIMEOUT = (26, False, "The session timeout is outside the range the broker allows.")
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing; the member has to rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "The offset commit data has an invalid size.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "The client is not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "The client is not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "The client is not authorized for this cluster operation.")
    INVALID_TIMESTAMP = (32, False, "A record timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The requested SASL mechanism is not enabled on this broker.")
    ILLEGAL_SASL_STATE = (34, False, "The request is not allowed at this point of the SASL exchange.")
    UNSUPPORTED_VERSION = (35, False, "The broker does not support this version of the API.")
    TOPIC_ALREADY_EXISTS = (36, False, "The topic to be created already exists.")
    INVALID_PARTITIONS = (37, False, "The requested number of partitions is not valid.")
    INVALID_REPLICATION_FACTOR = (38, False, "The replication factor is not valid for the brokers available.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "The explicit replica assignment is not valid.")
    INVALID_CONFIG = (40, False, "The supplied configuration is not valid.")
    NOT_CONTROLLER = (41, True, "This node is not the active controller.")
    INVALID_REQUEST = (42, False, "The request is malformed or not valid for this broker.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (
        43,
        False,
        "The request needs a newer message format than the one in use.",
    )
    POLICY_VIOLATION = (44, False, "The request violates a policy configured on the broker.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (
        45,
        False,
        "The producer sequence number is not the one the broker expected.",
    )
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "The producer sequence number has already been written.")
    INVALID_PRODUCER_EPOCH = (47, False, "The producer epoch is older than the current one.")
    INVALID_TXN_STATE = (48, False, "The operation is not valid in the transaction's current state.")
    INVALID_PRODUCER_ID_MAPPING = (
        49,
        False,
        "The producer id is not the one assigned to this transactional id.",
    )
    INVALID_TRANSACTION_TIMEOUT = (50, False, "The transaction timeout exceeds the broker's maximum.")
    CONCURRENT_TRANSACTIONS = (51, True, "Another operation on the same transaction is still in progress.")
    TRANSACTION_COORDINATOR_FENCED = (
        52,
        False,
        "The transaction coordinator sending this marker was superseded.",
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (
        53,
        False,
        "The client is not authorized to use the transactional id.",
    )
    SECURITY_DISABLED = (54, False, "Security features are not enabled on this cluster.")
    OPERATION_NOT_ATTEMPTED = (
        55,
        False,
        "The broker skipped this operation, usually as another in the batch failed.",
    )
    KAFKA_STORAGE_ERROR = (56, True, "The broker hit a disk error while accessing the log.")
    LOG_DIR_NOT_FOUND = (57, False, "The requested log directory is not configured on the broker.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication did not succeed.")
    UNKNOWN_PRODUCER_ID = (
        59,
        False,
        "The broker has no state for this producer id, e.g. after its data expired.",
    )
    REASSIGNMENT_IN_PROGRESS = (60, False, "The partition is currently being reassigned.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are not enabled on this cluster.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "The delegation token does not exist on the server.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "The principal is neither owner nor renewer of the token.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64,
        False,
        "Delegation token requests are not allowed on this channel.",
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (
        65,
        False,
        "The client is not authorized for this token operation.",
    )
    DELEGATION_TOKEN_EXPIRED = (66, False, "The delegation token is past its expiry time.")
    INVALID_PRINCIPAL_TYPE = (67, False, "This kind of principal is not supported.")
    NON_EMPTY_GROUP = (68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "No group with this id exists.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The incremental fetch session id is unknown to the broker.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch does not match the broker's.")
    LISTENER_NOT_FOUND = (72, True, "The leader has no listener matching the one this request arrived on.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is turned off on this cluster.")
    FENCED_LEADER_EPOCH = (
        74,
        True,
        "The request carries a leader epoch that is behind the broker's current one.",
    )
    UNKNOWN_LEADER_EPOCH = (75, True, "The request carries a leader epoch this broker has not reached yet.")
    UNSUPPORTED_COMPRESSION_TYPE = (
        76,
        False,
        "The client cannot handle the compression type of this partition.",
    )
    STALE_BROKER_EPOCH = (77, False, "The broker epoch in the request is out of date.")
    OFFSET_NOT_AVAILABLE = (
        78,
        True,
        "The new leader's high watermark has not caught up; offsets are not final.",
    )
    MEMBER_ID_REQUIRED = (79, False, "The member must obtain a member id before it can join the group.")
    PREFERRED_LEADER_NOT_AVAILABLE = (
        80,
        True,
        "The preferred replica cannot take over leadership right now.",
    )
    GROUP_MAX_SIZE_REACHED = (81, False, "The group already has its maximum number of members.")
    FENCED_INSTANCE_ID = (
        82,
        False,
        "Another member with the same group.instance.id fenced this static member.",
    )
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No replica is eligible to become the partition's leader.")
    ELECTION_NOT_NEEDED = (84, True, "The partition already has the desired leader; no election is needed.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "There is no partition reassignment to alter or cancel.")
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86,
        False,
        "Offsets cannot be deleted while the group subscribes to the topic.",
    )
    INVALID_RECORD = (87, False, "The broker rejected a record that failed its validation.")
    UNSTABLE_OFFSET_COMMIT = (
        88,
        True,
        "Pending transactional offsets must settle before offsets can be read.",
    )
    THROTTLING_QUOTA_EXCEEDED = (89, True, "The request went over the client's throttling quota.")
    PRODUCER_FENCED = (90, False, "A newer producer with the same transactional id fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "The request refers to a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "The request names the same resource more than once.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "The credential does not meet the acceptance criteria.")
    INCONSISTENT_VOTER_SET = (
        94,
        False,
        "The sender or receiver of a voter-only request is not an expected voter.",
    )
    INVALID_UPDATE_VERSION = (95, False, "The version given for the update is not acceptable.")
    FEATURE_UPDATE_FAILED = (96, False, "Finalized features could not be updated because of a server error.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (
        97,
        False,
        "The principal of a forwarded request could not be decoded.",
    )
    SNAPSHOT_NOT_FOUND = (98, False, "The requested snapshot does not exist.")
    POSITION_OUT_OF_RANGE = (99, False, "The requested position is negative or past the end of the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "This broker does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "Another broker is already registered with this id.")
    BROKER_ID_NOT_REGISTERED = (102, False, "No broker is registered with this id.")
    INCONSISTENT_TOPIC_ID = (103, True, "The topic id in the request does not match the one in the log.")
    INCONSISTENT_CLUSTER_ID = (
        104,
        False,
        "The request names a different cluster id than this server belongs to.",
    )
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactional id does not exist.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA = (107, False, "The proposed ISR contains a replica that is not eligible.")
    NEW_LEADER_ELECTED = (108, False, "The partition state was updated, but a new leader has been elected.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "The requested offset now lives only in tiered storage.")
    FENCED_MEMBER_EPOCH = (110, False, "The member epoch was fenced; release all partitions and rejoin.")
    UNRELEASED_INSTANCE_ID = (111, False, "Another member still holds this instance id and must leave first.")
    UNSUPPORTED_ASSIGNOR = (112, False, "The group does not support this assignor or its version range.")
    STALE_MEMBER_EPOCH = (113, False, "The member epoch is stale; retry once a heartbeat has refreshed it.")
    MISMATCHED_ENDPOINT_TYPE = (
        114,
        False,
        "This request belongs on the other kind of endpoint (broker vs controller).",
    )
    UNSUPPORTED_ENDPOINT_TYPE = (
        115,
        False,
        "Requests of this kind cannot be served by this type of endpoint yet.",
    )
    UNKNOWN_CONTROLLER_ID = (116, False, "No controller with this id is known.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "The telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE = (118, False, "The pushed telemetry is larger than the broker accepts.")
    INVALID_REGISTRATION = (119, False, "The controller rejected this broker's registration as invalid.")
    TRANSACTION_ABORTABLE = (
        120,
        False,
        "The transaction hit a server error; abort it to go on using the id.",
    )
    INVALID_RECORD_STATE = (121, False, "The record's delivery state does not allow this acknowledgement.")
    SHARE_SESSION_NOT_FOUND = (122, True, "The share session does not exist.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "The share session epoch does not match the broker's.")
    FENCED_STATE_EPOCH = (124, False, "The share-group state epoch did not match the share coordinator's.")
    INVALID_VOTER_KEY = (125, False, "The voter's key is not that of the replica receiving the request.")
    DUPLICATE_VOTER = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "The subscription pattern is not a valid regular expression.")
    REBOOTSTRAP_REQUIRED = (129, False, "The client's metadata is stale; it has to bootstrap again.")
    STREAMS_INVALID_TOPOLOGY = (130, False, "The Streams topology supplied is not valid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "The Streams topology epoch supplied is not valid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "The Streams topology epoch supplied is out of date.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "The broker already has as many share sessions as it allows.")

    @classmethod
    def from_code(cls, code: int) -> ErrorCode:
        """The member for ``code``; codes not in the table map to ``UNKNOWN_SERVER_ERROR``."""
        return cls._value2member_map_.get(code, cls.UNKNOWN_SERVER_ERROR)  # type: ignore[return-value]


class KafkaError(Exception):
    """A request failed with a Kafka error code.

    ``KafkaError(code, message=None)``: ``code`` is an :class:`ErrorCode` (or a known code as ``int``);
    ``message`` defaults to the code's default message. ``NONE`` is refused: it is not an error.
    """

    code: ErrorCode
    message: str

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        code = ErrorCode(code)  # ValueError for an int the table does not know
        if code is ErrorCode.NONE:
            raise ValueError("KafkaError needs an error code, not NONE")
        if message is None:
            message = code.message
        super().__init__(code, message)
        self.code = code
        self.message = message

    @classmethod
    def of(cls, code: ErrorCode | int, detail: str | None = None) -> KafkaError:
        """Shorthand for ``KafkaError(code, detail)``: ``raise KafkaError.of(ErrorCode.X, "...")``."""
        return cls(code, detail)

    @property
    def retriable(self) -> bool:
        """Whether Kafka treats this error as retriable."""
        return self.code.retriable

    def __str__(self) -> str:
        return f"{self.code.name} ({self.code.value}): {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ErrorCode.{self.code.name}, {self.message!r})"


class RecordValidationError(KafkaError):
    """A batch refused because of some of its records (KIP-467): ``record_errors`` lists each
    offending record as (batch index, message), which Produce v8+ returns so clients fail only those
    records. The code is INVALID_TIMESTAMP if any record had a bad timestamp, else INVALID_RECORD, and
    the message Kafka's summary."""

    def __init__(self, record_errors: list[tuple[int, str]], *, bad_timestamp: bool) -> None:
        if bad_timestamp:
            code, message = ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp"
        else:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
            code = ErrorCode.INVALID_RECORD
            message = (f"One or more records have been rejected due to {len(record_errors)} record errors in total, "
                       f"and only showing the first three errors at most: [{shown}]")
        super().__init__(code, message)
        self.record_errors = record_errors


class ConfigError(ValueError):
    """A configuration key is unknown or its value is not valid (the message names the key)."""
