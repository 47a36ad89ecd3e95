"""A ZooKeeper mirror of one znode's children: every child's data, read whole again whenever a watch
fires (on the parent's children or on any child's data) or the session comes back.

The re-reads run on a one-thread worker, never on kazoo's thread or the event loop, and a burst of
events makes one re-read (a pending flag coalesces them). Each read hands the whole map to its owner;
a read that fails (ZooKeeper gone, a child that does not parse) keeps what the owner has and logs it.
Used by the stores whose lookups must never wait for ZooKeeper (SCRAM credentials, delegation tokens).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class WatchedChildren(Generic[T]):
    """The children of ``path``. ``client`` returns the broker's connected kazoo client (the metadata
    store's); ``parse`` turns a child's data into its value (None: the child is left out; ValueError or
    KeyError: the read fails); ``on_read`` receives every complete read. ``what`` names the children in
    the log, ``thread_name`` the worker."""

    def __init__(self, client: Callable[[], Any], path: str, parse: Callable[[bytes], T | None],
                 on_read: Callable[[dict[str, T]], None], *, what: str, thread_name: str) -> None:
        self._client = client
        self._path = path
        self._parse = parse
        self._on_read = on_read
        self._what = what
        self._thread_name = thread_name
        self._worker: Any = None
        self._pending = threading.Event()

    def watch(self) -> None:
        """Read every child now (blocking: start-up) and again on every change from then on."""
        from concurrent.futures import ThreadPoolExecutor

        zkc = self._client()
        zkc.ensure_path(self._path)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix=self._thread_name)
        zkc.add_listener(self._on_state)
        self._reload()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=False, cancel_futures=True)

    def _on_state(self, state: str) -> None:  # kazoo's thread
        if state == "CONNECTED":
            self._schedule()

    def _on_change(self, _event: object) -> None:  # kazoo's thread
        self._schedule()

    def _schedule(self) -> None:
        if self._worker is not None and not self._pending.is_set():
            self._pending.set()
            try:
                self._worker.submit(self._reload)
            except RuntimeError:  # shut down
                pass

    def _reload(self) -> None:
        """Worker thread (or start-up): every child, leaving watches for the next change."""
        from kazoo.exceptions import KazooException, NoNodeError

        self._pending.clear()
        zkc = self._client()
        if zkc is None:
            return
        try:
            names = zkc.get_children(self._path, watch=self._on_change)
            pending = {name: zkc.get_async(f"{self._path}/{name}", watch=self._on_change) for name in names}
            children = {}
            for name, result in pending.items():
                try:
                    data, _ = result.get()
                except NoNodeError:
                    continue
                value = self._parse(data)
                if value is not None:
                    children[name] = value
        except (KazooException, ValueError, KeyError) as e:
            log.warning("cannot read the %s from ZooKeeper (%r); keeping the last ones read", self._what, e)
            return
        self._on_read(children)


__all__ = ["WatchedChildren"]
