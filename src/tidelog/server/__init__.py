"""The broker's network side: connections, dispatch, request handlers, purgatory, composition root."""

__all__: list[str] = []
