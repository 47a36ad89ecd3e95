"""Request handlers, one module per API family; importing this package registers them all."""

from tidelog.server.handlers import (  # noqa: F401
    api_versions,
    fetch,
    list_offsets,
    metadata,
    produce,
    producer_ids,
)

__all__: list[str] = []
