"""Tests for tidelog.errors: Kafka's error-code table and KafkaError."""

from __future__ import annotations

import pickle

import pytest

from tidelog.errors import ErrorCode, KafkaError

# The highest code Apache Kafka 4.x assigns (SHARE_SESSION_LIMIT_REACHED, added in Kafka 4.1).
HIGHEST_KAFKA_CODE = 133


# --- the table ------------------------------------------------------------------------------------


def test_codes_are_unique() -> None:
    values = [member.value for member in ErrorCode]
    assert len(values) == len(set(values))
    # No aliases hide behind another name either.
    assert len(ErrorCode.__members__) == len(values)


def test_codes_are_contiguous_from_minus_one_to_the_highest() -> None:
    # Kafka has never left a gap: -1, 0, 1, ..., HIGHEST_KAFKA_CODE.
    assert sorted(member.value for member in ErrorCode) == list(range(-1, HIGHEST_KAFKA_CODE + 1))
    assert len(ErrorCode) == HIGHEST_KAFKA_CODE + 2


def test_declared_in_code_order() -> None:
    values = [member.value for member in ErrorCode]
    assert values == sorted(values)


def test_codes_fit_in_int16() -> None:
    assert all(-(2**15) <= member <= 2**15 - 1 for member in ErrorCode)


@pytest.mark.parametrize("member", list(ErrorCode), ids=lambda m: m.name)
def test_every_member_has_a_short_one_sentence_message(member: ErrorCode) -> None:
    assert isinstance(member.message, str)
    assert member.message.strip() == member.message
    assert member.message
    assert member.message.endswith(".")
    assert len(member.message) <= 100
    assert "\n" not in member.message


@pytest.mark.parametrize("member", list(ErrorCode), ids=lambda m: m.name)
def test_every_member_has_a_bool_retriable_flag(member: ErrorCode) -> None:
    assert type(member.retriable) is bool


def test_names_are_upper_snake_case() -> None:
    for name in ErrorCode.__members__:
        assert name == name.upper()
        assert name.replace("_", "").isalnum()


# Known Kafka values: (name, code, retriable), from Errors.java and its exception classes.
KNOWN = [
    ("UNKNOWN_SERVER_ERROR", -1, False),
    ("NONE", 0, False),
    ("OFFSET_OUT_OF_RANGE", 1, False),
    ("CORRUPT_MESSAGE", 2, True),  # CorruptRecordException extends RetriableException
    ("UNKNOWN_TOPIC_OR_PARTITION", 3, True),
    ("LEADER_NOT_AVAILABLE", 5, True),
    ("NOT_LEADER_OR_FOLLOWER", 6, True),
    ("REQUEST_TIMED_OUT", 7, True),
    ("BROKER_NOT_AVAILABLE", 8, False),
    ("REPLICA_NOT_AVAILABLE", 9, True),
    ("MESSAGE_TOO_LARGE", 10, False),
    ("NETWORK_EXCEPTION", 13, True),
    ("COORDINATOR_LOAD_IN_PROGRESS", 14, True),
    ("COORDINATOR_NOT_AVAILABLE", 15, True),
    ("NOT_COORDINATOR", 16, True),
    ("INVALID_TOPIC_EXCEPTION", 17, False),
    ("NOT_ENOUGH_REPLICAS", 19, True),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20, True),
    ("ILLEGAL_GENERATION", 22, False),
    ("UNKNOWN_MEMBER_ID", 25, False),
    ("REBALANCE_IN_PROGRESS", 27, False),
    ("TOPIC_AUTHORIZATION_FAILED", 29, False),
    ("UNSUPPORTED_VERSION", 35, False),
    ("TOPIC_ALREADY_EXISTS", 36, False),
    ("NOT_CONTROLLER", 41, True),
    ("INVALID_REQUEST", 42, False),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45, False),
    ("DUPLICATE_SEQUENCE_NUMBER", 46, False),
    ("INVALID_PRODUCER_EPOCH", 47, False),
    ("CONCURRENT_TRANSACTIONS", 51, True),
    ("KAFKA_STORAGE_ERROR", 56, True),
    ("UNKNOWN_PRODUCER_ID", 59, False),
    ("FETCH_SESSION_ID_NOT_FOUND", 70, True),
    ("FENCED_LEADER_EPOCH", 74, True),
    ("UNKNOWN_LEADER_EPOCH", 75, True),
    ("MEMBER_ID_REQUIRED", 79, False),
    ("FENCED_INSTANCE_ID", 82, False),
    ("UNSTABLE_OFFSET_COMMIT", 88, True),
    ("THROTTLING_QUOTA_EXCEEDED", 89, True),
    ("PRODUCER_FENCED", 90, False),
    ("UNKNOWN_TOPIC_ID", 100, True),
    ("FENCED_MEMBER_EPOCH", 110, False),
    ("UNRELEASED_INSTANCE_ID", 111, False),
    ("UNSUPPORTED_ASSIGNOR", 112, False),
    ("STALE_MEMBER_EPOCH", 113, False),
    ("TRANSACTION_ABORTABLE", 120, False),
    ("SHARE_SESSION_NOT_FOUND", 122, True),
    ("INVALID_REGULAR_EXPRESSION", 128, False),
    ("REBOOTSTRAP_REQUIRED", 129, False),
    ("STREAMS_TOPOLOGY_FENCED", 132, False),
    ("SHARE_SESSION_LIMIT_REACHED", 133, True),  # ShareSessionLimitReachedException is retriable
]


@pytest.mark.parametrize(("name", "code", "retriable"), KNOWN, ids=[k[0] for k in KNOWN])
def test_known_kafka_values(name: str, code: int, retriable: bool) -> None:
    member = ErrorCode[name]
    assert member.value == code
    assert ErrorCode(code) is member
    assert member.retriable is retriable


def test_retriable_count() -> None:
    # 32 of Kafka's codes map to a RetriableException subclass; a flipped flag changes this count.
    assert sum(member.retriable for member in ErrorCode) == 32


def test_members_are_ints_for_codecs() -> None:
    assert isinstance(ErrorCode.NOT_LEADER_OR_FOLLOWER, int)
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.UNKNOWN_SERVER_ERROR + 0 == -1
    assert int(ErrorCode.UNSUPPORTED_VERSION) == 35
    assert ErrorCode.UNSUPPORTED_VERSION.to_bytes(2, "big", signed=True) == b"\x00\x23"
    assert ErrorCode.UNKNOWN_SERVER_ERROR.to_bytes(2, "big", signed=True) == b"\xff\xff"
    assert f"{ErrorCode.NOT_COORDINATOR:d}" == "16"


def test_members_survive_pickling() -> None:
    for member in ErrorCode:
        assert pickle.loads(pickle.dumps(member)) is member


# --- from_code ------------------------------------------------------------------------------------


@pytest.mark.parametrize("member", list(ErrorCode), ids=lambda m: m.name)
def test_from_code_round_trips_every_known_code(member: ErrorCode) -> None:
    assert ErrorCode.from_code(int(member)) is member


@pytest.mark.parametrize("code", [-2, -32768, HIGHEST_KAFKA_CODE + 1, 999, 32767])
def test_from_code_maps_unknown_codes_to_unknown_server_error(code: int) -> None:
    assert ErrorCode.from_code(code) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_from_code_accepts_a_member() -> None:
    assert ErrorCode.from_code(ErrorCode.REBALANCE_IN_PROGRESS) is ErrorCode.REBALANCE_IN_PROGRESS


def test_plain_lookup_still_rejects_unknown_codes() -> None:
    with pytest.raises(ValueError):
        ErrorCode(HIGHEST_KAFKA_CODE + 1)


# --- KafkaError -----------------------------------------------------------------------------------


def test_kafka_error_defaults_to_the_code_message() -> None:
    err = KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert err.code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert err.message == ErrorCode.NOT_LEADER_OR_FOLLOWER.message
    assert err.retriable is True
    assert str(err) == f"NOT_LEADER_OR_FOLLOWER (6): {ErrorCode.NOT_LEADER_OR_FOLLOWER.message}"


def test_kafka_error_with_custom_message() -> None:
    err = KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, "epoch 3 is older than 5")
    assert err.message == "epoch 3 is older than 5"
    assert err.retriable is False
    assert str(err) == "INVALID_PRODUCER_EPOCH (47): epoch 3 is older than 5"
    assert repr(err) == "KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, 'epoch 3 is older than 5')"


def test_kafka_error_formats_negative_code() -> None:
    err = KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "boom")
    assert str(err) == "UNKNOWN_SERVER_ERROR (-1): boom"


def test_kafka_error_empty_message_is_kept() -> None:
    # Only None means "use the default"; an explicit empty string is respected.
    assert KafkaError(ErrorCode.INVALID_REQUEST, "").message == ""


def test_kafka_error_accepts_a_known_int_code() -> None:
    err = KafkaError(35)
    assert err.code is ErrorCode.UNSUPPORTED_VERSION
    assert str(err).startswith("UNSUPPORTED_VERSION (35): ")


def test_kafka_error_rejects_unknown_int_code() -> None:
    with pytest.raises(ValueError):
        KafkaError(HIGHEST_KAFKA_CODE + 1)


def test_kafka_error_rejects_none() -> None:
    with pytest.raises(ValueError):
        KafkaError(ErrorCode.NONE)


def test_kafka_error_of_is_shorthand() -> None:
    err = KafkaError.of(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "group g1")
    assert isinstance(err, KafkaError)
    assert err.code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert err.message == "group g1"
    assert err.retriable is True
    assert KafkaError.of(ErrorCode.NOT_COORDINATOR).message == ErrorCode.NOT_COORDINATOR.message


def test_kafka_error_is_raisable_and_catchable() -> None:
    with pytest.raises(KafkaError) as info:
        raise KafkaError.of(ErrorCode.REBALANCE_IN_PROGRESS, "rejoin")
    assert info.value.code is ErrorCode.REBALANCE_IN_PROGRESS
    assert info.value.retriable is False
    assert isinstance(info.value, Exception)


def test_kafka_error_survives_pickling() -> None:
    err = KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS, "isr=1 < min.insync.replicas=2")
    copy = pickle.loads(pickle.dumps(err))
    assert copy.code is err.code
    assert copy.message == err.message
    assert str(copy) == str(err)


# --- cross-check against kafka-python, an independent implementation -----------------------------

# Codes whose name in kafka-python (its class's ``message``) differs from the current name in Kafka's
# Errors.java. kafka-python keeps older or its own spellings for these; the codes are the same.
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",  # Kafka renamed UNKNOWN to UNKNOWN_SERVER_ERROR in 1.0 (KAFKA-4763).
    0: "NO_ERROR",  # Kafka calls "no error" NONE.
    6: "NOT_LEADER_FOR_PARTITION",  # renamed NOT_LEADER_OR_FOLLOWER in Kafka 2.6 (KAFKA-10223).
    10: "MESSAGE_SIZE_TOO_LARGE",  # Kafka's enum has always said MESSAGE_TOO_LARGE.
    17: "INVALID_TOPIC",  # Kafka's enum says INVALID_TOPIC_EXCEPTION.
    39: "INVALID_REPLICATION_ASSIGNMENT",  # Kafka's enum says INVALID_REPLICA_ASSIGNMENT.
}

# Codes whose retriable flag in kafka-python differs from Kafka's Java client.
KAFKA_PYTHON_RETRIABLE = {
    # Java's CorruptRecordException extends RetriableException; kafka-python's CorruptRecordError
    # keeps the default retriable = False.
    2: False,
}


def _kafka_python_error_classes() -> list[type]:
    kafka_errors = pytest.importorskip("kafka.errors")
    classes = {
        cls
        for cls in vars(kafka_errors).values()
        if isinstance(cls, type) and getattr(cls, "errno", None) is not None
    }
    return sorted(classes, key=lambda cls: (cls.errno, cls.__name__))


def test_kafka_python_comparison_is_meaningful() -> None:
    classes = _kafka_python_error_classes()
    # kafka-python 3.x covers at least -1..127; a near-empty list would make the checks below vacuous.
    assert len({cls.errno for cls in classes}) >= 120


def test_same_codes_and_names_as_kafka_python() -> None:
    for cls in _kafka_python_error_classes():
        member = ErrorCode.from_code(cls.errno)
        assert member.value == cls.errno, f"{cls.__name__}: code {cls.errno} missing from ErrorCode"
        expected = KAFKA_PYTHON_NAMES.get(cls.errno, member.name)
        assert cls.message == expected, f"{cls.__name__} (errno {cls.errno}) is {cls.message}, not {expected}"


def test_same_retriable_flags_as_kafka_python() -> None:
    for cls in _kafka_python_error_classes():
        retriable = getattr(cls, "retriable", None)
        if retriable is None:
            continue
        member = ErrorCode(cls.errno)
        expected = KAFKA_PYTHON_RETRIABLE.get(cls.errno, member.retriable)
        assert retriable is expected, f"{cls.__name__} (errno {cls.errno}): kafka-python says {retriable}"


def test_known_differences_with_kafka_python_are_still_differences() -> None:
    # If kafka-python ever aligns with Kafka, drop the entry instead of carrying a stale exception.
    by_code = {cls.errno: cls for cls in _kafka_python_error_classes()}
    for code, name in KAFKA_PYTHON_NAMES.items():
        assert ErrorCode(code).name != name
        assert code in by_code
    for code, retriable in KAFKA_PYTHON_RETRIABLE.items():
        assert ErrorCode(code).retriable is not retriable
        assert by_code[code].retriable is retriable
