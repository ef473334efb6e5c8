"""Serving the sandbox over HTTP with uvicorn: in a background thread, or blocking for the CLI."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from pathlib import Path
from types import TracebackType

import uvicorn

from fundpipe.sandbox._app import SimulatedDisconnect, create_app
from fundpipe.sandbox._config import RateLimitScope, SandboxConfig


class _QuietDrops(logging.Filter):
    """Hide uvicorn's traceback for a simulated dropped connection (it is intended)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, SimulatedDisconnect):
                return False
            exc = exc.__cause__ or exc.__context__
        return True


def quiet_uvicorn_logs() -> None:
    """Install the drop filter on uvicorn's error logger (idempotent)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_host(host: str, allow_non_loopback: bool) -> None:
    if not allow_non_loopback and not is_loopback(host):
        raise ValueError(
            f"refusing to serve the sandbox on non-loopback host {host!r}: its control routes "
            "are unauthenticated (pass allow_non_loopback=True to override)"
        )


def _uvicorn_config(config: SandboxConfig, host: str, port: int) -> uvicorn.Config:
    quiet_uvicorn_logs()
    return uvicorn.Config(
        create_app(config),
        host=host,
        port=port,
        log_level="warning",
        # uvicorn's dictConfig would reconfigure logging mid-run (deadlocking with Prefect's log
        # handler, seen as a hung nightly run); our own loggers are set by quiet_uvicorn_logs
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )


class SandboxServer:
    """The sandbox served by uvicorn in a background thread; use as a context manager.

    `base_url` (e.g. `http://127.0.0.1:54321`) is available once started. `port=0` picks a free
    port. Non-loopback hosts are refused unless `allow_non_loopback`.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_non_loopback: bool = False,
    ) -> None:
        """Prepare (not start) a server for `config` on `host:port`."""
        _check_host(host, allow_non_loopback)
        self.config = config or SandboxConfig()
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def base_url(self) -> str:
        """`http://host:port` of the running server."""
        if self._socket is None:
            raise RuntimeError("the sandbox server is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 15.0) -> None:
        """Bind, start uvicorn in a thread and wait until it accepts connections."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only for
        # sockets that say they are TCP; without it Nagle + delayed ACK add ~40 ms per response.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._socket = sock
        server = uvicorn.Server(_uvicorn_config(self.config, self.host, self.port))
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="fundpipe-sandbox", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the sandbox server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> SandboxServer:
        """Start and return the server."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()


def run_server(
    host: str = "127.0.0.1",
    port: int = 8765,
    db_path: Path | str | None = None,
    seed: str = "demo",
    *,
    allow_non_loopback: bool = False,
    strict_interface: bool = False,
    public_forms: bool = False,
    reject_unknown_fields: bool = False,
    legacy_pagination: bool = False,
    demo_orgs: int = 1,
    rate_limit_scope: RateLimitScope = "client",
) -> None:
    """Serve the sandbox until interrupted (what `fundpipe sandbox` runs); control routes on.

    `db_path` None keeps state in memory; a file is created (and seeded) when missing and
    reopened with its state otherwise. Non-loopback hosts are refused unless allowed. The
    remaining switches are `SandboxConfig`'s (see `fundpipe.sandbox._modes`).
    """
    _check_host(host, allow_non_loopback)
    if seed not in ("demo", "empty"):
        raise ValueError(f"unknown seed {seed!r} (demo or empty)")
    config = SandboxConfig(
        db_path=Path(db_path) if db_path is not None else None,
        seed="demo" if seed == "demo" else "empty",
        control_routes=True,
        strict_interface=strict_interface,
        public_forms=public_forms,
        reject_unknown_fields=reject_unknown_fields,
        legacy_pagination=legacy_pagination,
        demo_orgs=demo_orgs,
        rate_limit_scope=rate_limit_scope,
    )
    uvicorn.Server(_uvicorn_config(config, host, port)).run()
