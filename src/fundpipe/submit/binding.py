"""Which service and organization a data directory belongs to, and what its objects must be.

A ledger remembers what it submitted *to one service, for one organization*: pointed at another,
it would skip files as "already submitted" and report phantom exceptions. So the first ingest
records the binding beside the ledger (``<ledger>.binding.json``: the service — its base URL,
``FUNDPIPE_SERVICE_NAME`` or "embedded sandbox" — the organization and when), and every later
ingest or sync with another service or organization is refused with
:class:`fundpipe.errors.ConfigurationError` (exit 2) before anything is sent or written. To
start fresh, point ``FUNDPIPE_DATA_DIR`` at a new folder (or move the old one away).

The binding also keeps what the client learned about the service's create bodies
(``body_forms``: create path → form, see ``fundpipe.client._forms``): :func:`read_body_forms`
gives them to the next night's client, :func:`remember_body_forms` adds newly learned ones.

:func:`check_livemode` stops a run whose objects are live when test ones were expected (the
embedded sandbox, or ``FUNDPIPE_LIVEMODE=false``), or the reverse.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.config import Settings
from fundpipe.errors import ConfigurationError

if TYPE_CHECKING:
    import httpx

    from fundpipe.client import FundClient

__all__ = [
    "binding_file",
    "bound_name",
    "check_binding",
    "check_livemode",
    "describe_binding",
    "describe_orgs",
    "learned_client",
    "read_binding",
    "read_body_forms",
    "remember_body_forms",
]

_OWN = "(the client's own organization)"


def binding_file(settings: Settings) -> Path:
    """Where the ledger's binding is kept: beside the ledger file."""
    return settings.local.ledger_file.with_suffix(".binding.json")


def read_binding(settings: Settings) -> dict[str, str] | None:
    """The binding (``service``, ``organization``, ``bound_at``, and ``organization_name`` when
    the binding run knew it: "" otherwise); None before the first run."""
    path = binding_file(settings)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path} cannot be read ({exc}); remove it to bind anew") from exc
    keys = ("service", "organization", "organization_name", "bound_at")
    return {k: str(data.get(k) or "") for k in keys}


def _raw(settings: Settings) -> dict[str, object]:
    path = binding_file(settings)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path} cannot be read ({exc}); remove it to bind anew") from exc
    return data if isinstance(data, dict) else {}


def read_body_forms(settings: Settings) -> dict[str, str]:
    """The create-body forms learned on earlier nights (create path → form); {} when none."""
    forms = _raw(settings).get("body_forms")
    if not isinstance(forms, dict):
        return {}
    return {str(k): str(v) for k, v in forms.items() if isinstance(v, str)}


def remember_body_forms(settings: Settings, forms: dict[str, str]) -> bool:
    """Add `forms` to the binding (an existing binding only); True when something was new."""
    data = _raw(settings)
    if not data:
        return False
    known = read_body_forms(settings)
    merged = {**known, **forms}
    if merged == known:
        return False
    data["body_forms"] = dict(sorted(merged.items()))
    _store(binding_file(settings), data)
    return True


@asynccontextmanager
async def learned_client(
    settings: Settings, transport: httpx.AsyncBaseTransport | None
) -> AsyncIterator[FundClient]:
    """The open service client of `settings`, starting with the body forms earlier nights
    learned; on the way out — a failure too — the forms it learned are kept in the binding."""
    from fundpipe.client import FundClient

    client = FundClient(
        settings.client_config(), transport=transport, body_forms=read_body_forms(settings)
    )
    try:
        async with client:
            yield client
    finally:
        remember_body_forms(settings, client.body_forms)


def _org(organization: str) -> str:
    return organization or _OWN


def describe_binding(settings: Settings) -> str:
    """The binding in words, for ``fundpipe config``: read from beside the ledger of these
    settings (an organization's: ``data/orgs/<org>/ledger.binding.json``)."""
    bound = read_binding(settings)
    if bound is None:
        return "nothing yet (the first ingest binds it)"
    return (
        f"{bound['service']}, organization {_org(bound['organization'])} "
        f"(since {bound['bound_at']})"
    )


def bound_name(settings: Settings) -> str | None:
    """The organization's name as the run that bound the ledger knew it; None when unknown."""
    bound = read_binding(settings)
    return (bound or {}).get("organization_name") or None


def describe_orgs(settings: Settings) -> dict[str, Any]:
    """What `fundpipe config` shows of the organizations, read from local files only.

    Every organization (the configured list, else the folders under `data/orgs/`) under
    `organizations`, by id: its name, its inbox, ledger, warehouse, reports and durable record,
    and what its ledger is bound to (`describe_binding`, read beside that organization's
    ledger). The name is the configured one, else the one its binding recorded, else the
    service's (not known before a run). Before any organization has a folder: a sentence
    saying where they will come from, and the single-organization ledger's binding.
    """
    from fundpipe import orgs
    from fundpipe.errors import FundpipeError

    root = settings.local.data_dir / "orgs"
    folders = root.is_dir() and any(p.is_dir() for p in root.iterdir())
    if orgs.configured_organizations(settings) is None and not folders:
        return {
            "organizations": "none has a folder yet: those the client may act for (the "
            "organization read), else FUNDPIPE_ORG_ID",
            "ledger bound to": describe_binding(settings),
        }
    described: dict[str, Any] = {}
    for one in orgs.every_org_settings(settings, None, among=orgs.Among.CONFIGURED):
        local = one.settings.local
        try:
            bound = describe_binding(one.settings)
            name = one.org.name or bound_name(one.settings)
        except FundpipeError as error:  # an unreadable binding: said, the others still shown
            bound, name = f"cannot be read: {error}", one.org.name
        described[one.org.folder] = {
            "name": name or "not configured (the service's organization read names it)",
            "inbox": str(local.data_dir / "inbox"),
            "ledger": str(local.ledger_file),
            "warehouse": str(local.warehouse_file),
            "reports": str(local.reports_folder),
            "record": local.record_location,
            "ledger bound to": bound,
        }
    return {"organizations": described}


def check_binding(settings: Settings, organization: str | None, *, bind: bool) -> None:
    """Refuse a data directory bound to another service or organization; with ``bind``, record
    the binding on the first run. ``organization`` None: not known (a sync without
    ``FUNDPIPE_ORG_ID``), compared by service only."""
    service = settings.service.service_identity
    bound = read_binding(settings)
    if bound is None:
        if bind:
            _write(settings, service, organization or "")
        return
    # "" was bound when the organization was not known (the client's own): any name matches
    same_org = organization is None or bound["organization"] in ("", organization)
    if bound["service"] == service and same_org:
        return
    raise ConfigurationError(
        f"the data directory {settings.local.data_dir} belongs to {bound['service']} (organization "
        f"{_org(bound['organization'])}), not to {service} (organization "
        f"{_org(organization or '')}): its ledger would take files as already submitted. To "
        f"start fresh, set FUNDPIPE_DATA_DIR to a new folder (or move {settings.local.data_dir} "
        f"away); to keep it, point fundpipe back at {bound['service']}"
    )


def _write(settings: Settings, service: str, organization: str) -> None:
    path = binding_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, object] = {
        "service": service,
        "organization": organization,
        "bound_at": datetime.now(UTC).isoformat(),
    }
    if settings.service.org_name:  # what `fundpipe config` names the organization by
        record["organization_name"] = settings.service.org_name
    _store(path, record)


def _store(path: Path, record: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def check_livemode(settings: Settings, seen: bool | None) -> None:
    """Stop when the service's objects are live and test ones were expected, or the reverse."""
    if settings.service.livemode is None or seen is None or seen == settings.service.livemode:
        return
    found, expected = ("live", "test") if seen else ("test", "live")
    raise ConfigurationError(
        f"the service at {settings.service.service_identity} answers with {found} objects, but this "
        f"run expects {expected} ones (FUNDPIPE_LIVEMODE / the embedded sandbox): stopped "
        "before creating anything — check FUNDPIPE_BASE_URL"
    )
