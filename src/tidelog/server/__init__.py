"""The broker's front end and composition root: listeners and connections, dispatch, request handlers,
fetch sessions; :mod:`tidelog.server.broker` builds and wires every component."""

__all__: list[str] = []
