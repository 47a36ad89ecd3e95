"""Test support shipped with the package: a manual clock (and later a broker subprocess runner)."""

from tidelog.testing.clock import ManualClock

__all__ = ["ManualClock"]
