"""CRC-32C (Castagnoli), the checksum of v2 record batches: the ``crc32c`` package's C function.

Loaded without running the package's ``__init__``, which finds its own version with
``importlib.metadata`` and imports its command line (argparse) and email parsing: about a sixth of a
cold broker start (bench/startup.py). If the extension cannot be found that way (another layout of
the package), the ordinary import is used.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, FileFinder, PathFinder
from importlib.util import module_from_spec


def _load() -> Callable[..., int]:
    loaded = sys.modules.get("crc32c._crc32c")
    if loaded is None:
        package = PathFinder.find_spec("crc32c")  # locates the package, imports nothing
        locations = package.submodule_search_locations if package is not None else None
        for location in locations or ():
            spec = FileFinder(location, (ExtensionFileLoader, EXTENSION_SUFFIXES)).find_spec("crc32c._crc32c")
            if spec is not None and spec.loader is not None:
                loaded = module_from_spec(spec)
                spec.loader.exec_module(loaded)
                sys.modules["crc32c._crc32c"] = loaded  # what ``import crc32c`` reuses later
                break
    if loaded is None:
        from crc32c import crc32c as function

        return function
    return loaded.crc32c


#: ``crc32c(data, value=0) -> int``, as ``crc32c.crc32c``.
crc32c = _load()

__all__ = ["crc32c"]
