"""The ``tidelog`` command line."""

__all__: list[str] = []
