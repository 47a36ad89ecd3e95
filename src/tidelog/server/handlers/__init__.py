"""Request handlers, one module per API family; importing this package registers them all."""

from tidelog.server.handlers import (  # noqa: F401
    api_versions,
    cluster_info,
    configs,
    consumer_group,
    delete_records,
    fetch,
    groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    topics,
)

__all__: list[str] = []
