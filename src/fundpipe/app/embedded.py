"""The embedded default: with no `FUNDPIPE_BASE_URL`, run against a local sandbox.

`service(settings)` starts `fundpipe.sandbox` on a free loopback port with its state in
`<data_dir>/sandbox/sandbox.sqlite` (seeded the first time with two demo organizations, `org_demo`
and `org_demob`, so a run shows how several organizations go: see `fundpipe.app.fanout`), yields
settings pointed at it with the demo client's credentials, and stops it afterwards.
`FUNDPIPE_SANDBOX_STRICT=1` and `FUNDPIPE_SANDBOX_PUBLIC_FORMS=1` start it serving only the
documented operations, and the public spec's forms (`fundpipe sandbox --strict-interface
--public-forms`). With a base
URL configured it yields the settings unchanged and never starts a sandbox.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from fundpipe.config import Settings

log = logging.getLogger(__name__)

#: What a data directory used with the embedded sandbox is bound to (see fundpipe.submit.binding).
EMBEDDED_SERVICE_NAME = "embedded sandbox"
#: Demo organizations a new embedded sandbox is seeded with (`org_demo`, `org_demob`).
EMBEDDED_DEMO_ORGS = 2


def attach(settings: Settings, base_url: str) -> Settings:
    """Settings pointed at an embedded sandbox already listening at `base_url` (a child run of
    the nightly fan-out reaches its parent's sandbox this way)."""
    # the port changes every run: the ledger binds to "the embedded sandbox" instead
    return settings.with_service(base_url).model_copy(
        update={
            "service_name": settings.service_name or EMBEDDED_SERVICE_NAME,
            "livemode": False if settings.livemode is None else settings.livemode,
        }
    )


@contextmanager
def service(settings: Settings) -> Iterator[Settings]:
    """Yield settings for a running service: the configured one, or an embedded sandbox."""
    if not settings.embedded:
        yield settings
        return

    # Imported here: the pipeline touches the sandbox only to start it.
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    state_dir = settings.data_dir / "sandbox"
    state_dir.mkdir(parents=True, exist_ok=True)
    config = SandboxConfig(
        db_path=state_dir / "sandbox.sqlite",
        seed="demo",
        strict_interface=settings.sandbox_strict,
        public_forms=settings.sandbox_public_forms,
        demo_orgs=EMBEDDED_DEMO_ORGS,
    )
    with SandboxServer(config, host="127.0.0.1", port=0) as server:
        log.info("embedded sandbox listening on %s", server.base_url)
        yield attach(settings, server.base_url)
