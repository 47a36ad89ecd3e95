"""A broker started from Python, for tests, notebooks and asyncio apps (docs/testing-with-tidelog.md).

    with tidelog.Broker() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

    async with tidelog.AsyncBroker() as broker:
        ...

``mode="thread"`` (the default) runs the broker in this process, on its own event loop in a daemon
thread: nothing to spawn, the fastest start. ``mode="subprocess"`` runs ``tidelog serve`` as a child
process (its own interpreter and GIL; a crash of either side leaves the other standing); the child
is stopped by :meth:`Broker.stop`, at interpreter exit, and by itself when this process dies.

Every listener takes a free port on 127.0.0.1; the data lives in a temporary directory (removed at
stop) unless ``data_dir`` is given. ``security_protocol`` turns on SASL and/or TLS: ``users`` are
created as SCRAM (and PLAIN) users before start, and with TLS and no ``ssl_keystore`` a throw-away
certificate authority is made with ``trustme`` (``pip install trustme``). :meth:`Broker.client_config`
gives the matching confluent-kafka settings. Not thread-safe: one thread starts and stops a broker.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MODES = ("thread", "subprocess")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Settings of a test broker that differ from a production one (each can be overridden by ``config``):
#: a consumer group's first rebalance does not wait 3 s for more members (as in Kafka's quickstart).
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": "0"}
DEFAULT_USERS = {"admin": "admin-secret"}
_PORTS_LINE = "tidelog ports: "
_live: weakref.WeakSet[Broker] = weakref.WeakSet()


class BrokerError(RuntimeError):
    """The broker did not start (the message says why: a port, a setting, the data directory)."""


class Broker:
    """A Tidelog broker for the life of a ``with`` block (or between :meth:`start` and :meth:`stop`)."""

    def __init__(self, *, mode: str = "thread", data_dir: str | os.PathLike | None = None,
                 config: Mapping[str, Any] | None = None, host: str = "127.0.0.1", port: int = 0,
                 http: bool = False, security_protocol: str = "PLAINTEXT",
                 users: Mapping[str, str] | None = None, sasl_mechanism: str = "SCRAM-SHA-256",
                 ssl_keystore: str | os.PathLike | None = None, ssl_ca: str | os.PathLike | None = None,
                 start_timeout: float = 120.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        protocol = security_protocol.upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {', '.join(PROTOCOLS)}, not {security_protocol!r}")
        self.mode = mode
        self.host = host
        self.requested_port = port
        self.http = http
        self.security_protocol = protocol
        self.sasl_mechanism = sasl_mechanism
        self.users = dict(users if users is not None else (DEFAULT_USERS if "SASL" in protocol else {}))
        self.ssl_keystore = Path(ssl_keystore) if ssl_keystore else None
        self.ssl_ca = Path(ssl_ca) if ssl_ca else None
        self.start_timeout = start_timeout
        self.extra_config = {k: str(v) for k, v in (config or {}).items()}
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self.data_dir: Path | None = self._given_dir
        self._temp_dir: str | None = None
        #: Every port the broker opened: ``kafka``, ``listeners`` (name -> port), ``http`` when on.
        self.ports: dict[str, Any] = {}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._done: concurrent.futures.Future | None = None
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []  # the subprocess's stdout and stderr lines

    # ------------------------------------------------------------------------------- the client's view

    @property
    def bootstrap_servers(self) -> str:
        if not self.ports:
            raise BrokerError("the broker is not running")
        return f"{self.host}:{self.ports['kafka']}"

    @property
    def http_url(self) -> str | None:
        """The console, /metrics and health checks (``http=True``), else None."""
        return f"http://{self.host}:{self.ports['http']}/" if "http" in self.ports else None

    def client_config(self, user: str | None = None, **extra: Any) -> dict[str, Any]:
        """confluent-kafka (librdkafka) settings to reach this broker, as ``user`` (default: the first
        of ``users``) on a SASL listener; ``extra`` is added (``{"group.id": ...}``)."""
        out: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers}
        if self.security_protocol != "PLAINTEXT":
            out["security.protocol"] = self.security_protocol
        if "SASL" in self.security_protocol:
            name = user or next(iter(self.users))
            out.update({"sasl.mechanism": self.sasl_mechanism, "sasl.username": name,
                        "sasl.password": self.users[name]})
        if "SSL" in self.security_protocol and self.ssl_ca is not None:
            out["ssl.ca.location"] = str(self.ssl_ca)
        out.update(extra)
        return out

    @property
    def running(self) -> bool:
        if self.mode == "subprocess":
            return self.proc is not None and self.proc.poll() is None
        return self._thread is not None and self._thread.is_alive() and bool(self.ports)

    # -------------------------------------------------------------------------------------- lifecycle

    def start(self) -> Broker:
        if self.running:
            return self
        if self.data_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="tidelog-")
            self.data_dir = Path(self._temp_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        props = self._props()
        try:
            if self.mode == "thread":
                self._start_thread(props)
            else:
                self._start_subprocess(props)
        except BaseException:
            self._cleanup_dir()
            raise
        _live.add(self)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Shut down cleanly (the data directory is removed if it was a temporary one)."""
        try:
            if self.mode == "thread":
                self._stop_thread(timeout)
            else:
                self._stop_subprocess(timeout)
        finally:
            self.ports = {}
            _live.discard(self)
            self._cleanup_dir()

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self.ports else "stopped"
        return f"<tidelog.Broker {self.mode} {self.security_protocol} {state}>"

    # ----------------------------------------------------------------------------------- configuration

    def _props(self) -> dict[str, str]:
        assert self.data_dir is not None
        props = {**TEST_DEFAULTS, "listeners": f"{self.security_protocol}://{self.host}:{self.requested_port}",
                 "log.dirs": str(self.data_dir),
                 "metrics.listener": f"http://{self.host}:0" if self.http else ""}
        if "SASL" in self.security_protocol:
            props["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
            self._create_users()
        if "SSL" in self.security_protocol:
            if self.ssl_keystore is None:
                self._make_certificates()
            props.update({"ssl.keystore.location": str(self.ssl_keystore)})
        props.update(self.extra_config)
        return props

    def _create_users(self) -> None:
        from tidelog.cluster.credential_store import EmbeddedCredentialStore
        from tidelog.security.scram import credential_from_password

        assert self.data_dir is not None
        store = EmbeddedCredentialStore(self.data_dir)
        store.alter([(user, mechanism, credential_from_password(mechanism, password, 4096))
                     for user, password in self.users.items()
                     for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")], [])

    def _make_certificates(self) -> None:
        try:
            import trustme
        except ImportError:
            raise BrokerError("a TLS broker without ssl_keystore makes its own certificates with trustme: "
                              "pip install trustme (or pass ssl_keystore= and ssl_ca=)") from None
        assert self.data_dir is not None
        ca = trustme.CA()
        cert = ca.issue_cert(self.host, "localhost")
        self.ssl_keystore = self.data_dir / "broker.pem"
        cert.private_key_and_cert_chain_pem.write_to_path(str(self.ssl_keystore))
        self.ssl_ca = self.data_dir / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ssl_ca))

    def _cleanup_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self.data_dir = self._given_dir
            if "SSL" in self.security_protocol:
                self.ssl_keystore = self.ssl_ca = None

    # ----------------------------------------------------------------------------- mode="thread"

    def _start_thread(self, props: dict[str, str]) -> None:
        from tidelog.config import BrokerConfig, ConfigError

        try:
            config = BrokerConfig.from_props(props)
        except (ConfigError, ValueError) as e:
            raise BrokerError(str(e)) from None
        started: concurrent.futures.Future = concurrent.futures.Future()
        self._done = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run_loop, args=(config, started), daemon=True,
                                        name=f"tidelog-broker-{id(self):x}")
        self._thread.start()
        try:
            self.ports = started.result(self.start_timeout)
        except concurrent.futures.TimeoutError:
            self._stop_thread(5.0)
            raise BrokerError(f"the broker did not start within {self.start_timeout:g} s") from None

    def _run_loop(self, config: Any, started: concurrent.futures.Future) -> None:
        loop = _new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(config, started))
        except BaseException as e:
            if not started.done():
                started.set_exception(e)
        finally:
            loop.close()
            assert self._done is not None
            self._done.set_result(None)

    async def _serve(self, config: Any, started: concurrent.futures.Future) -> None:
        from tidelog.server.broker import Broker as ServerBroker
        from tidelog.server.network import ListenerError
        from tidelog.storage.log_dir import LogDirError

        self._stop_event = asyncio.Event()
        try:
            broker = ServerBroker(config)
            await broker.start()
        except (ListenerError, LogDirError, OSError, ValueError) as e:
            started.set_exception(BrokerError(str(e)))
            return
        started.set_result(broker.ports)
        await self._stop_event.wait()
        await broker.stop()

    def _stop_thread(self, timeout: float) -> None:
        loop, event, thread = self._loop, self._stop_event, self._thread
        if thread is None:
            return
        if loop is not None and event is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop closed meanwhile
                pass
        thread.join(timeout)
        self._thread = self._loop = self._stop_event = None

    # ------------------------------------------------------------------------- mode="subprocess"

    def _start_subprocess(self, props: dict[str, str]) -> None:
        cmd = [sys.executable, "-m", "tidelog.cli.serve"]  # `tidelog serve`, without the client commands
        for key, value in props.items():
            cmd += ["--override", f"{key}={value}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1", TIDELOG_PARENT_PID=str(os.getpid()))
        # Its own process group: a Ctrl-C in the terminal reaches this process, which stops the child.
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        found: concurrent.futures.Future = concurrent.futures.Future()
        threading.Thread(target=self._read_output, args=(self.proc, found), daemon=True).start()
        try:
            self.ports = found.result(self.start_timeout)
        except concurrent.futures.TimeoutError:
            self._kill_subprocess()
            raise BrokerError(f"the broker did not start within {self.start_timeout:g} s:\n"
                              + "".join(self.output[-20:])) from None
        except BrokerError:
            self._kill_subprocess()
            raise

    def _read_output(self, proc: subprocess.Popen, found: concurrent.futures.Future) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            if line.startswith(_PORTS_LINE) and not found.done():
                found.set_result(json.loads(line[len(_PORTS_LINE):]))
        if not found.done():
            errors = [line for line in self.output if line.startswith("tidelog serve:")]
            found.set_exception(BrokerError("".join(errors or self.output[-20:]).strip()
                                            or f"tidelog serve exited with {proc.wait()}"))

    def _stop_subprocess(self, timeout: float) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_subprocess()
        self.proc = None

    def _kill_subprocess(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()
            self.proc = None


class AsyncBroker:
    """:class:`Broker` for asyncio code: ``async with tidelog.AsyncBroker() as broker`` (start and stop
    run in a worker thread, so the caller's event loop keeps running). Same arguments as Broker."""

    def __init__(self, **kwargs: Any) -> None:
        self.broker = Broker(**kwargs)

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def ports(self) -> dict[str, Any]:
        return self.broker.ports

    def client_config(self, user: str | None = None, **extra: Any) -> dict[str, Any]:
        return self.broker.client_config(user, **extra)

    async def start(self) -> AsyncBroker:
        await asyncio.to_thread(self.broker.start)
        return self

    async def stop(self) -> None:
        await asyncio.to_thread(self.broker.stop)

    async def __aenter__(self) -> AsyncBroker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


@atexit.register
def _stop_all() -> None:
    """At interpreter exit no broker is left running (subprocesses are killed if they hang)."""
    for broker in list(_live):
        try:
            broker.stop(timeout=5.0)
        except Exception:
            pass


__all__ = ["MODES", "TEST_DEFAULTS", "AsyncBroker", "Broker", "BrokerError"]
