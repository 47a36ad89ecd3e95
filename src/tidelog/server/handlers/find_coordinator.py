"""FindCoordinator: where a key's coordinator is, the leader of the key's partition of its internal topic.

The key type says which internal topic (:data:`~tidelog.coordinator.internal_topics.INTERNAL_TOPICS`:
GROUP (0) ``__consumer_offsets``, TRANSACTION (1) ``__transaction_state``, SHARE (2)
``__share_group_state`` when share groups are enabled); the topic is created on first use, as Kafka
does. DESCRIBE on the key (CLUSTER_ACTION on the cluster for SHARE, v6+ only, a key
``group:topic id:partition``) is checked before anything is created. v4+ answers in
the batched ``coordinator_keys`` form; a key type no internal topic answers is INVALID_REQUEST. An
empty key is no error. A topic just created has no leaders until the controller decides them (in its
event queue): the answer waits for them (:meth:`InternalTopicManager.ready
<tidelog.coordinator.internal_topics.InternalTopicManager.ready>`, bounded), then says
COORDINATOR_NOT_AVAILABLE (retriable) for a partition still without one.
"""

from __future__ import annotations

from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.internal_topics import InternalTopicManager
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

NO_NODE = (-1, "", -1)


def _find_coordinator_error(request: FindCoordinatorRequest, code: ErrorCode, message: str | None):
    keys = request.coordinator_keys
    if keys:
        return FindCoordinatorResponse(coordinators=[
            FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(code),
                                                error_message=message) for k in keys])
    return FindCoordinatorResponse(error_code=int(code), error_message=message or code.message, node_id=-1, host="",
                                   port=-1)


class FindCoordinatorHandler:
    """Where a group's, a transactional id's (any internal topic's key type) coordinator is."""

    def __init__(self, store: MetadataStore, internal_topics: InternalTopicManager,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.store = store
        self.internal_topics = internal_topics

    def _coordinator(self, ctx: RequestContext, key_type: int,
                     key: str) -> tuple[ErrorCode, str | None, tuple[int, str, int]]:
        internal = self.internal_topics.by_key_type(key_type)
        if internal is None:
            return ErrorCode.INVALID_REQUEST, f"unsupported coordinator key type {key_type}", NO_NODE
        if ctx.api_version < internal.min_find_coordinator_version:
            return ErrorCode.INVALID_REQUEST, f"key type {key_type} needs FindCoordinator v{internal.min_find_coordinator_version}+", NO_NODE
        # DESCRIBE on the group / transactional id (CLUSTER_ACTION on the cluster for a share-state key),
        # checked before anything is created
        if not self.authorizer.authorize(ctx, *internal.authorization(key)):
            return internal.key_denied, None, NO_NODE
        if internal.key_valid is not None and not internal.key_valid(key):
            return ErrorCode.INVALID_REQUEST, f"malformed coordinator key {key!r}", NO_NODE
        topic, partition = self.internal_topics.locate(internal, key)
        if topic is None or partition >= len(topic.partitions):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, NO_NODE
        node = self.store.image.brokers.get(topic.partitions[partition].leader)
        if node is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, NO_NODE
        host, port = node.endpoint(ctx.listener_name)
        return ErrorCode.NONE, None, (node.broker_id, host, port)

    async def _coordinators(self, ctx: RequestContext, key_type: int,
                            keys: list[str]) -> list[tuple[ErrorCode, str | None, tuple[int, str, int]]]:
        """Each key's answer, once the first leaders of a new internal topic are decided (bounded)."""
        answers = [self._coordinator(ctx, key_type, key) for key in keys]
        internal = self.internal_topics.by_key_type(key_type)
        if internal is None or all(a[0] != ErrorCode.COORDINATOR_NOT_AVAILABLE for a in answers):
            return answers
        await self.internal_topics.ready(internal)
        return [self._coordinator(ctx, key_type, key) if a[0] == ErrorCode.COORDINATOR_NOT_AVAILABLE else a
                for key, a in zip(keys, answers)]

    @handles(ApiKey.FIND_COORDINATOR, 0, 6, _find_coordinator_error)
    async def handle_find_coordinator(self, ctx: RequestContext,
                                      request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        if ctx.api_version >= 4:
            coordinators = []
            keys = list(request.coordinator_keys)
            for key, (code, message, (node_id, host, port)) in zip(
                    keys, await self._coordinators(ctx, request.key_type, keys)):
                coordinators.append(FindCoordinatorResponse.Coordinator(
                    key=key, node_id=node_id, host=host, port=port, error_code=int(code),
                    error_message=message if code != ErrorCode.NONE else None))
            return FindCoordinatorResponse(coordinators=coordinators)
        ((code, message, (node_id, host, port)),) = await self._coordinators(ctx, request.key_type, [request.key])
        return FindCoordinatorResponse(error_code=int(code),
                                       error_message=code.name if code == ErrorCode.NONE else message or code.message,
                                       node_id=node_id, host=host, port=port)


__all__ = ["FindCoordinatorHandler"]
