"""Share sessions (KIP-932; Kafka's ``ShareSessionCache``): the share partitions a member fetches from,
kept between its ShareFetch requests so that each request names only what changed.

A session is keyed by (group, member). The request's ``ShareSessionEpoch`` says what it is:

1. **Epoch 0 opens a session.** An existing one of the member is replaced; the request's partitions are
   the session's. Acknowledgements are not allowed in it (INVALID_REQUEST). When the cache already holds
   ``group.share.max.share.sessions`` sessions, SHARE_SESSION_LIMIT_REACHED.
2. **Epoch -1 closes it.** No partitions may be added (INVALID_REQUEST); acknowledgements are applied; the
   session must exist (SHARE_SESSION_NOT_FOUND).
3. **Any other epoch continues it.** The session must exist (SHARE_SESSION_NOT_FOUND) and the epoch be the
   one the broker expects (INVALID_SHARE_SESSION_EPOCH); the request's partitions are added, its forgotten
   ones removed, and the expected epoch goes up by one (after 2^31-1 it wraps to 1).

ShareAcknowledge uses the same epochs: 0 is INVALID_SHARE_SESSION_EPOCH (no session to open there), -1
acknowledges and closes, any other epoch must match and moves it on.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tidelog.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

TopicIdPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ``ShareRequestMetadata.nextEpoch``: 0 -> 1, -1 stays, 2^31-1 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    #: the epoch the next request must carry
    epoch: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # ordered set
    #: the client connection that opened it (Kafka 4.1+: the session ends when the connection closes)
    connection_id: str = ""


class ShareSessionCache:
    """Every share session of this broker, at most ``max_sessions``."""

    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def fetch_session(self, group_id: str, member_id: str, epoch: int, added: list[TopicIdPartition],
                      forgotten: list[TopicIdPartition], has_acknowledgements: bool,
                      connection_id: str = "") -> ShareSession | None:
        """The session a ShareFetch works in (rules 1-3), updated; None for a closing request (epoch -1),
        whose session is gone once it is answered (the caller calls :meth:`remove`). Raises KafkaError."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "acknowledgements in the request opening a share session")
            self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                                 f"the broker already has {len(self.sessions)} share sessions")
            session = self.sessions[key] = ShareSession(group_id, member_id, next_epoch(epoch),
                                                        dict.fromkeys(added), connection_id)
            return session
        session = self.sessions.get(key)
        if epoch == FINAL_EPOCH:
            if added:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "partitions to fetch in the request closing a share session")
            if session is None:
                raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session of member {member_id}")
            return None
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session of member {member_id}")
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"share session epoch {epoch}, the broker expects {session.epoch}")
        for tp in added:
            session.partitions[tp] = None
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(session.epoch)
        return session

    def acknowledge_session(self, group_id: str, member_id: str, epoch: int) -> ShareSession | None:
        """ShareAcknowledge's check of its session epoch; the session moves on (None: epoch -1, closing)."""
        if epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session of member {member_id}")
        if epoch == FINAL_EPOCH:
            return None
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"share session epoch {epoch}, the broker expects {session.epoch}")
        session.epoch = next_epoch(session.epoch)
        return session

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def of_connection(self, connection_id: str) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.connection_id == connection_id]

    def has_group(self, group_id: str) -> bool:
        return any(k[0] == group_id for k in self.sessions)

    def remove_group(self, group_id: str) -> None:
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]


__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSession", "ShareSessionCache", "next_epoch"]
