"""Every package's ``__all__`` names what it exports, and nothing it does not have (httpx style)."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["tidelog.protocol", "tidelog.records", "tidelog.storage", "tidelog.errors", "tidelog.clock", "tidelog.config",
            "tidelog.varint", "tidelog.coordinator.group", "tidelog.replica", "tidelog.security", "tidelog.server.handlers",
            "tidelog.protocol.tubemq", "tidelog.server.tubemq"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exist_and_public_names_are_listed(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and getattr(value, "__module__", "").startswith(name)
        and callable(value)
    }
    assert public <= exported, f"{name} exports {sorted(public - exported)} without listing them in __all__"
