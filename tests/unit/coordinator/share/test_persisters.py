"""The broker's persister: the local share coordinator when this broker leads the key's partition, the remote
persister otherwise, and the remote one when the local coordinator turns out not to be the key's."""

from __future__ import annotations

import asyncio

from tidelog.clock import SystemClock
from tidelog.coordinator.share.persister import ShareState, StateWrite
from tidelog.coordinator.share.remote import BrokerSharePersister, RemoteSharePersister
from tidelog.coordinator.share.service import ShareCoordinatorService
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings

from .conftest import key


def unreachable() -> RemoteSharePersister:
    """A remote persister that can reach no broker: its answers say the call went remote."""
    return RemoteSharePersister(PeerClient(PeerSettings(lambda broker_id: None), "test"), lambda: [1], SystemClock(),
                                backoff_ms=1, max_attempts=1)


def test_local_when_this_broker_leads_the_partition(share):
    persister = BrokerSharePersister(ShareCoordinatorService(share.coordinator), unreachable())

    async def scenario() -> ShareState:
        assert await persister.initialize(key(), 0, 4) == ErrorCode.NONE
        assert await persister.write(key(), StateWrite(0, 0, 6)) == ErrorCode.NONE
        return await persister.read(key(), 0)

    assert asyncio.run(scenario()) == ShareState(state_epoch=0, start_offset=6, leader_epoch=0)


def test_remote_when_another_broker_leads_it(share):
    share.writer.not_led.add(share.coordinator.partition_for(key()))
    local = ShareCoordinatorService(share.coordinator)
    assert asyncio.run(local.initialize(key(), 0, 0)) == ErrorCode.NOT_COORDINATOR
    persister = BrokerSharePersister(local, unreachable())
    assert asyncio.run(persister.initialize(key(), 0, 0)) == ErrorCode.NETWORK_EXCEPTION
    assert asyncio.run(persister.read(key(), 0)).error == ErrorCode.NETWORK_EXCEPTION
    # a single node has no remote persister: the local coordinator's answer stands
    assert asyncio.run(BrokerSharePersister(local).read(key(), 0)).error == ErrorCode.NOT_COORDINATOR


def test_remote_when_the_local_write_finds_leadership_gone(share):
    share.writer.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER  # led when chosen, not when written
    persister = BrokerSharePersister(ShareCoordinatorService(share.coordinator), unreachable())
    assert asyncio.run(persister.initialize(key(), 0, 0)) == ErrorCode.NETWORK_EXCEPTION
