"""The 50-test file is long for CI on a small machine: it runs with --fresh-brokers (or always, when
that is quick on your machine: drop this file)."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--fresh-brokers", action="store_true", help="run tests/test_fresh_brokers.py (50 brokers)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--fresh-brokers"):
        return
    skip = pytest.mark.skip(reason="50 fresh brokers: run with --fresh-brokers")
    for item in items:
        if item.path.name == "test_fresh_brokers.py":
            item.add_marker(skip)
