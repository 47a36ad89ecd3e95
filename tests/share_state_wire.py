"""Requests of the share coordinator's five RPCs, one share partition each, and readers of their answers:
shared by the in-process, integration and cluster tests of the share coordinator."""

from __future__ import annotations

import uuid

from tidelog.protocol.messages import (
    DeleteShareGroupStateRequest,
    FindCoordinatorRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)


def initialize(group: str, tid: uuid.UUID, partition: int, state_epoch: int, start_offset: int):
    r = InitializeShareGroupStateRequest
    return r(group_id=group, topics=[r.InitializeStateData(topic_id=tid, partitions=[
        r.PartitionData(partition=partition, state_epoch=state_epoch, start_offset=start_offset)])])


def write(group: str, tid: uuid.UUID, partition: int, state_epoch: int, leader_epoch: int, start_offset: int,
          batches: list[tuple[int, int, int, int]]):
    r = WriteShareGroupStateRequest
    return r(group_id=group, topics=[r.WriteStateData(topic_id=tid, partitions=[r.PartitionData(
        partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
        state_batches=[r.StateBatch(first_offset=f, last_offset=la, delivery_state=s, delivery_count=c)
                       for f, la, s, c in batches])])])


def read(group: str, tid: uuid.UUID, partition: int, leader_epoch: int):
    r = ReadShareGroupStateRequest
    return r(group_id=group, topics=[r.ReadStateData(topic_id=tid, partitions=[
        r.PartitionData(partition=partition, leader_epoch=leader_epoch)])])


def summary(group: str, tid: uuid.UUID, partition: int):
    r = ReadShareGroupStateSummaryRequest
    return r(group_id=group, topics=[r.ReadStateSummaryData(topic_id=tid, partitions=[
        r.PartitionData(partition=partition, leader_epoch=0)])])


def delete(group: str, tid: uuid.UUID, partition: int):
    r = DeleteShareGroupStateRequest
    return r(group_id=group, topics=[r.DeleteStateData(topic_id=tid, partitions=[r.PartitionData(partition=partition)])])


def only(response):
    [t] = response.results
    [p] = t.partitions
    return p


def batches(p) -> list[tuple[int, int, int, int]]:
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]


def find_share(key: str, version: int = 6) -> FindCoordinatorRequest:
    if version >= 4:
        return FindCoordinatorRequest(key_type=2, coordinator_keys=[key])
    return FindCoordinatorRequest(key_type=2, key=key)
