"""Where a follower's log departs from its leader's, by leader epochs (KIP-101, KIP-279, KIP-595).

A follower fetches with its log end offset and the epoch of its last batch (``last_fetched_epoch``).
The leader answers from its leader-epoch cache (:func:`diverging_epoch`): if it does not know that
epoch, or the epoch ended in its log before the follower's fetch offset, the response carries the
*diverging epoch* (the largest epoch the leader has <= the follower's, and where it ended) and no
records. The follower then cuts its log (:func:`truncation_offset`) at the smaller of the leader's end
of that epoch and its own end of it; if it does not have that epoch itself, it cuts at its own end of
the largest epoch below and asks again (the next fetch carries an older last epoch), which is how
KIP-279's case of several leader changes between two fetches resolves in several rounds. Records
below the cut are, by the epochs, the leader's records; nothing above it is kept, so the follower
neither loses committed data nor keeps a fork.

Pure functions over the caches; unit-tested.
"""

from __future__ import annotations

from tidelog.storage.leader_epoch import UNDEFINED_EPOCH, LeaderEpochCache


def diverging_epoch(leader_epochs: LeaderEpochCache, leader_end: int, last_fetched_epoch: int,
                    fetch_offset: int) -> tuple[int, int] | None:
    """The leader's side: (epoch, end offset) to send back as the diverging epoch, or None to read."""
    if last_fetched_epoch < 0:
        return None
    epoch, end = leader_epochs.end_offset_for(last_fetched_epoch, leader_end)
    if epoch < last_fetched_epoch or end < fetch_offset:
        return epoch, end
    return None


def truncation_offset(follower_epochs: LeaderEpochCache, follower_end: int, high_watermark: int,
                      leader_epoch: int, leader_end: int) -> tuple[int, bool]:
    """The follower's side: (offset to truncate to, whether the truncation is complete) given the
    leader's diverging epoch. An undefined answer (the leader knows no such epoch) falls back to the
    follower's high watermark, as Kafka does."""
    if leader_epoch == UNDEFINED_EPOCH or leader_end < 0:
        return min(high_watermark, follower_end), True
    epoch, end = follower_epochs.end_offset_for(leader_epoch, follower_end)
    if epoch == UNDEFINED_EPOCH:  # no epochs here (an empty or pre-epoch log): keep up to the leader's end
        return min(leader_end, follower_end), True
    if epoch != leader_epoch:
        return min(end, follower_end), False
    return min(end, leader_end, follower_end), True


__all__ = ["diverging_epoch", "truncation_offset"]
