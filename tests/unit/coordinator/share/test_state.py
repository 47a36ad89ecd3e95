"""How state batches combine (Kafka's PersisterStateBatchCombiner rules)."""

from __future__ import annotations

from tidelog.coordinator.share.persister import DeliveryState as S
from tidelog.coordinator.share.persister import StateBatch as B
from tidelog.coordinator.share.state import combine_batches


def test_newer_batch_cuts_the_older_one_it_overlaps():
    assert combine_batches([B(0, 9, S.AVAILABLE, 1)], [B(3, 5, S.ACKNOWLEDGED, 1)], 0) == (
        B(0, 2, S.AVAILABLE, 1), B(3, 5, S.ACKNOWLEDGED, 1), B(6, 9, S.AVAILABLE, 1))


def test_newer_batch_covering_older_ones_replaces_them():
    current = [B(0, 4, S.AVAILABLE, 1), B(5, 9, S.ARCHIVED, 2)]
    assert combine_batches(current, [B(0, 9, S.ACKNOWLEDGED, 1)], -1) == (B(0, 9, S.ACKNOWLEDGED, 1),)


def test_offsets_below_the_start_offset_are_dropped_and_a_straddling_batch_trimmed():
    current = [B(0, 4, S.ACKNOWLEDGED, 1), B(5, 9, S.AVAILABLE, 2), B(10, 12, S.ARCHIVED, 5)]
    assert combine_batches(current, [], 7) == (B(7, 9, S.AVAILABLE, 2), B(10, 12, S.ARCHIVED, 5))


def test_neighbours_with_equal_state_and_count_merge():
    assert combine_batches([B(0, 4, S.ACKNOWLEDGED, 1)], [B(5, 9, S.ACKNOWLEDGED, 1), B(10, 11, S.ACKNOWLEDGED, 2)],
                           0) == (B(0, 9, S.ACKNOWLEDGED, 1), B(10, 11, S.ACKNOWLEDGED, 2))


def test_later_batches_of_one_write_win_over_earlier_ones():
    assert combine_batches([], [B(0, 9, S.AVAILABLE, 1), B(2, 3, S.ARCHIVED, 1)], 0) == (
        B(0, 1, S.AVAILABLE, 1), B(2, 3, S.ARCHIVED, 1), B(4, 9, S.AVAILABLE, 1))
