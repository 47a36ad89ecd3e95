"""Suite-wide hooks: one summary line per missing toolchain instead of a SKIPPED line per test.

Also loads, for every test directory, the shared broker fixtures (``broker``, ``fresh_broker``, ``cluster``,
``admin``, ``wire`` ...: tests/fixtures.py) and the Kafka-oracle fixtures (``kafka_broker``,
``tidelog_broker``, ``any_broker``, ``java_classpath``: tests/oracle/fixtures.py).
"""

from __future__ import annotations

from collections import Counter

from tests import toolchain

# pytester: the pytest plugin's tests (tests/plugin/) run small test files in a pytest of their own.
pytest_plugins = ["tests.oracle.fixtures", "tests.fixtures", "pytester"]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    missing: Counter[str] = Counter()
    by_module: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(toolchain.PREFIX):
            missing[reason] += 1
        else:
            by_module[report.nodeid.split("::")[0]] += 1
    if by_module and config.option.reportchars and "s" not in config.option.reportchars:
        terminalreporter.section("skipped (pytest -rs lists each reason)")
        for module, count in sorted(by_module.items()):
            terminalreporter.write_line(f"{count:5d} in {module}")
    if not missing:
        return
    terminalreporter.section("skipped for a missing toolchain")
    for reason, count in sorted(missing.items()):
        terminalreporter.write_line(f"{count:5d} test(s): {reason}")
    terminalreporter.write_line(f"(CI sets {toolchain.ENV}=1, which turns these skips into failures)")


# librdkafka writes its log lines (connection refused to a broker a test just stopped ...) straight to
# file descriptor 2 from its own threads, often after the test that made the client has finished, so
# they land in the middle of the progress output. Every confluent-kafka client the tests create logs
# to the Python logger "librdkafka" instead: pytest keeps those lines with the test and shows them
# when it fails. The clients are the real ones; only where their log lines go changes.
def _route_librdkafka_logs() -> None:
    import logging

    import confluent_kafka
    import confluent_kafka.admin

    logger = logging.getLogger("librdkafka")

    def routed(cls):
        class Routed(cls):
            def __init__(self, *args, **kwargs):
                if "logger" not in kwargs and not (args and isinstance(args[0], dict) and "logger" in args[0]):
                    kwargs["logger"] = logger
                super().__init__(*args, **kwargs)

        Routed.__name__ = Routed.__qualname__ = cls.__name__
        return Routed

    confluent_kafka.Producer = routed(confluent_kafka.Producer)  # C types: a subclass
    confluent_kafka.Consumer = routed(confluent_kafka.Consumer)
    admin_init = confluent_kafka.admin.AdminClient.__init__  # a Python class that names itself in super()

    def init(self, conf, **kwargs):
        if "logger" not in kwargs and "logger" not in conf:
            kwargs["logger"] = logger
        admin_init(self, conf, **kwargs)

    confluent_kafka.admin.AdminClient.__init__ = init


_route_librdkafka_logs()
