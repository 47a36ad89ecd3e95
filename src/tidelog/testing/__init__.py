"""Test support shipped with the package: a manual clock (and later a broker subprocess runner)."""

from tidelog.testing.broker import BrokerProcess
from tidelog.testing.clock import ManualClock

__all__ = ["BrokerProcess", "ManualClock"]
