"""The embedded default: with no `FUNDPIPE_BASE_URL`, run against a local sandbox.

`service(settings)` starts `fundpipe.sandbox` on a free loopback port with its state in
`<data_dir>/sandbox/sandbox.sqlite` (seeded the first time with two demo organizations, `org_demo`
and `org_demob`, so a run shows how several organizations go: see `fundpipe.app.prefect.fanout`), yields
settings pointed at it with the demo client's credentials, and stops it afterwards.
`FUNDPIPE_SANDBOX_STRICT=1` and `FUNDPIPE_SANDBOX_PUBLIC_FORMS=1` start it serving only the
documented operations, and the public spec's forms (`fundpipe sandbox --strict-interface
--public-forms`). With a base
URL configured it yields the settings unchanged and never starts a sandbox.

`every_org` / `one_org` add the running service to `fundpipe.orgs.find_organizations` /
`fundpipe.orgs.org_settings` (which organizations, their folders, the one-time move, one
organization's settings), with the client secret from the one Prefect Secret-block loader
(`fundpipe.app.prefect.secrets.with_secret_block`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from fundpipe.config import Organization, Settings

log = logging.getLogger(__name__)

#: What a data directory used with the embedded sandbox is bound to (see fundpipe.submit.binding).
EMBEDDED_SERVICE_NAME = "embedded sandbox"
#: Demo organizations a new embedded sandbox is seeded with (`org_demo`, `org_demob`).
EMBEDDED_DEMO_ORGS = 2
#: How long a night's ingest waits for another run holding the inbox lock before it gives up.
NIGHT_LOCK_WAIT_S = 300.0


def night_settings(data_dir: str | Path | None) -> Settings:
    """The settings a night starts from, before any organization is chosen: from the
    environment, with `data_dir` when given, and a 300 s wait for another run holding the inbox
    (a nightly run and an inbox run may start together: wait for the other, don't give up)
    unless FUNDPIPE_INBOX_LOCK_WAIT_S says otherwise. The Prefect flows and the direct
    `fundpipe run` both start here."""
    settings = Settings()
    if "inbox_lock_wait_s" not in settings.pipeline.model_fields_set:
        settings = settings.updated(pipeline={"inbox_lock_wait_s": NIGHT_LOCK_WAIT_S})
    if data_dir:
        settings = settings.updated(local={"data_dir": Path(data_dir)})
    return settings


def limit_name(settings: Settings) -> str:
    """The name of the service host `settings` talk to, as its concurrency limit is called
    (`fundpipe-service-<host>`: a Prefect global concurrency limit under the flow, a semaphore
    of the direct night)."""
    host = urlsplit(settings.service.base_url or "").hostname or "embedded"
    return "fundpipe-service-" + re.sub(r"[^a-z0-9-]+", "-", host.lower()).strip("-")


def shared_rate(settings: Settings, orgs_on_host: int) -> Settings:
    """`settings` with the client rate of one of `orgs_on_host` organizations sharing a host:
    with FUNDPIPE_HOST_RATE_LIMIT_PER_S set, min(FUNDPIPE_RATE_LIMIT_PER_S, host rate /
    min(FUNDPIPE_ORG_CONCURRENCY, organizations on the host)); unset, unchanged."""
    if settings.orchestration.host_rate_limit_per_s is None:
        return settings
    at_once = max(1, min(settings.orchestration.org_concurrency, orgs_on_host))
    rate = min(
        settings.http.rate_limit_per_s, settings.orchestration.host_rate_limit_per_s / at_once
    )
    return settings.updated(http={"rate_limit_per_s": rate})


def attach(settings: Settings, base_url: str) -> Settings:
    """Settings pointed at an embedded sandbox already listening at `base_url` (a child run of
    the nightly fan-out reaches its parent's sandbox this way)."""
    # the port changes every run: the ledger binds to "the embedded sandbox" instead
    return settings.with_service(base_url).updated(
        service={
            "service_name": settings.service.service_name or EMBEDDED_SERVICE_NAME,
            "livemode": False if settings.service.livemode is None else settings.service.livemode,
        }
    )


@contextmanager
def service(settings: Settings) -> Iterator[Settings]:
    """Yield settings for a running service: the configured one, or an embedded sandbox."""
    if not settings.service.embedded:
        yield settings
        return

    # Imported here: the pipeline touches the sandbox only to start it.
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    state_dir = settings.local.data_dir / "sandbox"
    state_dir.mkdir(parents=True, exist_ok=True)
    config = SandboxConfig(
        db_path=state_dir / "sandbox.sqlite",
        seed="demo",
        strict_interface=settings.sandbox.sandbox_strict,
        public_forms=settings.sandbox.sandbox_public_forms,
        demo_orgs=EMBEDDED_DEMO_ORGS,
    )
    with SandboxServer(config, host="127.0.0.1", port=0) as server:
        log.info("embedded sandbox listening on %s", server.base_url)
        yield attach(settings, server.base_url)


# --- the running service's organizations (fundpipe.orgs finds them; this adds the service) ----


@contextmanager
def every_org(
    settings: Settings, say: Callable[[str], object]
) -> Iterator[tuple[Settings, list[Organization]]]:
    """The running service (the embedded sandbox started when none is configured), with the
    client secret loaded, and every organization; a single-organization layout is moved first
    (`say` tells what moved)."""
    from fundpipe.app.prefect.secrets import with_secret_block
    from fundpipe.orgs import Among, find_organizations

    with service(settings) as live:
        top, orgs = find_organizations(live, Among.SERVICE, load_secret=with_secret_block, say=say)
        assert orgs is not None  # the service always names at least one
        yield top, orgs


@contextmanager
def one_org(
    settings: Settings, wanted: str | None, say: Callable[[str], object]
) -> Iterator[Settings]:
    """The settings of the organization `wanted` (`--org`; default `FUNDPIPE_ORG_ID`, or the
    only one), pointed at a running service (see `every_org`)."""
    from fundpipe.app.prefect.secrets import with_secret_block
    from fundpipe.orgs import Among, org_settings

    with service(settings) as live:
        yield org_settings(
            live,
            wanted
            or settings.service.org_id,  # as configured: the embedded sandbox fills in its own
            among=Among.SERVICE,
            load_secret=with_secret_block,
            say=say,
        ).settings


def quiet_org_service(settings: Settings, org: str) -> AbstractContextManager[Settings]:
    """`one_org` for a reader that prints nothing (the desk's upload checks): the settings of
    ``org`` pointed at the configured service, else at an embedded sandbox started for it."""
    return one_org(settings, org, lambda _: None)
