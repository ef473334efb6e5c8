"""The Fund Distribution Service sandbox: a faithful, durable, fault-injectable implementation.

    from fundpipe.sandbox import create_app, SandboxConfig, SandboxServer, run_server

- `create_app(config)` — the FastAPI (ASGI) app; pass it to `httpx.ASGITransport` in tests.
- `SandboxServer(config, host="127.0.0.1", port=0)` — uvicorn on loopback in a thread.
- `run_server(host, port, db_path, seed, ...)` — blocking server for `fundpipe sandbox`.
- `SandboxConfig(strict_interface=..., public_forms=..., legacy_pagination=..., demo_orgs=...)`
  — the other forms of the service it can serve (`fundpipe.sandbox._modes`) and further demo
  organizations (`fundpipe.sandbox._seed`); all off by default.
- `SimulatedDisconnect` — what an in-process client sees when a committed create is "dropped".

The service decisions it implements are in docs/architecture.md; it never imports the client.
"""

from fundpipe.sandbox._app import SimulatedDisconnect, create_app
from fundpipe.sandbox._config import DEFAULT_APP_URL, SandboxConfig
from fundpipe.sandbox._server import SandboxServer, run_server

__all__ = [
    "DEFAULT_APP_URL",
    "SandboxConfig",
    "SandboxServer",
    "SimulatedDisconnect",
    "create_app",
    "run_server",
]
