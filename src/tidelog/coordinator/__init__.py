"""Coordinators: state machines for consumer groups and transactions (and producer ids)."""

__all__: list[str] = []
