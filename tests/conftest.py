"""Suite-wide hooks: one summary line per missing toolchain instead of a SKIPPED line per test.

Also loads the Kafka-oracle fixtures (``kafka_broker``, ``tidelog_broker``, ``any_broker``,
``java_classpath``: tests/oracle/fixtures.py) for every test directory.
"""

from __future__ import annotations

from collections import Counter

from tests import toolchain

pytest_plugins = ["tests.oracle.fixtures"]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    missing: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(toolchain.PREFIX):
            missing[reason] += 1
    if not missing:
        return
    terminalreporter.section("skipped for a missing toolchain")
    for reason, count in sorted(missing.items()):
        terminalreporter.write_line(f"{count:5d} test(s): {reason}")
    terminalreporter.write_line(f"(CI sets {toolchain.ENV}=1, which turns these skips into failures)")
