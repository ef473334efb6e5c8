"""Which organizations a run covers: configured, or read from the service.

`organizations(settings)` gives the list, in this order of precedence:

1. `FUNDPIPE_ORGS`: a JSON list (objects with `id`, `name`, `base_url`, `client_id`,
   `secret_block`, `work_queue`, or plain ids), or the short form `org_a,org_b`;
2. `FUNDPIPE_ORGS_FILE`: a TOML file of `[[organizations]]` tables with the same keys;
3. the organizations the client may act for, through the organization read (a guessed path,
   `Settings.paths["organizations"]`);
4. when that read is not served: `FUNDPIPE_ORG_ID`, else the client's own organization (no
   `X-Organization-Id` header), with a warning.

A mistake in the configured list is a :class:`fundpipe.errors.ConfigurationError` (exit 2) naming
the entry.

`org_settings` is the one way to one organization's settings, for every entry point (the CLI's
commands, the flows, a fan-out's child, the watcher, `fundpipe config`): it finds the
organizations where the caller says (`Among`: the service, the local folders, the configured
list, or a list the caller already holds), moves a single-organization layout once
(`fundpipe.layout`), picks the one wanted, gives it its own state, reports and service
(`Settings.for_org`, called nowhere else) and loads its client secret with the caller's
`load_secret` — the shells pass the one Prefect Secret-block loader
(`fundpipe.app.prefect.secrets.with_secret_block`); the library never imports Prefect.
"""

from __future__ import annotations

import json
import logging
import re
import tomllib
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from fundpipe.config import OWN_ORG_FOLDER, Organization, Settings
from fundpipe.errors import ConfigurationError

__all__ = [
    "Among",
    "OrgSettings",
    "SecretLoader",
    "configured_organizations",
    "configured_orgs",
    "every_org_settings",
    "find_organizations",
    "org_settings",
    "organizations",
    "parse_orgs",
    "pick_org",
    "waiting_sheets",
]

log = logging.getLogger(__name__)

_KEYS = ("id", "name", "base_url", "client_id", "secret_block", "work_queue", "materiality")
#: What an organization id may look like: it names folders under data/orgs/ and reports/.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def _entry(raw: Any, where: str) -> Organization:
    """One organization from one entry of the configured list."""
    if isinstance(raw, str):
        raw = {"id": raw}
    if not isinstance(raw, dict):
        raise ConfigurationError(
            f"{where} is not an organization: give an id or a table of {_KEYS}"
        )
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise ConfigurationError(f"{where} has unknown keys {unknown}; known: {list(_KEYS)}")
    values = {}
    for key in _KEYS:
        value = raw.get(key)
        if key == "materiality" and isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # dollars written as a number
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(f"{where}: {key} must be text, not {value!r}")
        values[key] = value.strip() if isinstance(value, str) and value.strip() else None
    org_id = values["id"]
    if org_id is None:
        raise ConfigurationError(f'{where} has no id (e.g. id = "org_a")')
    if not _ID.match(org_id):
        raise ConfigurationError(
            f"{where}: id {org_id!r} must be letters, digits, '_', '-' or '.' (it names folders)"
        )
    url = values["base_url"]
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"{where} ({org_id}): base_url {url!r} is not an http(s) URL")
    return Organization(
        id=org_id,
        name=values["name"],
        base_url=url,
        client_id=values["client_id"],
        secret_block=values["secret_block"],
        work_queue=values["work_queue"],
        materiality=_materiality(values["materiality"], f"{where} ({org_id})"),
    )


def _materiality(text: str | None, where: str) -> int | None:
    """An entry's `materiality` dollars as cents (None when it gives none)."""
    from fundpipe.config.local import dollars_to_cents

    if text is None:
        return None
    try:
        return dollars_to_cents(text)
    except ValueError as error:
        raise ConfigurationError(f"{where}: materiality: {error}") from None


def _checked(entries: Sequence[Any], source: str) -> list[Organization]:
    if not entries:
        raise ConfigurationError(f"{source} lists no organization")
    orgs = [_entry(raw, f"{source} entry {n}") for n, raw in enumerate(entries, start=1)]
    seen: set[str | None] = set()
    for n, org in enumerate(orgs, start=1):
        if org.id in seen:
            raise ConfigurationError(f"{source} entry {n} repeats the organization {org.id}")
        seen.add(org.id)
    return orgs


def parse_orgs(text: str, source: str = "FUNDPIPE_ORGS") -> list[Organization]:
    """The organizations of `FUNDPIPE_ORGS`: a JSON list, or ids separated by commas/spaces."""
    text = text.strip()
    if text.startswith(("[", "{")):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"{source} is not valid JSON ({exc.args[0]})") from None
        if not isinstance(data, list):
            raise ConfigurationError(f"{source} must be a JSON list of organizations")
        return _checked(data, source)
    return _checked(text.replace(",", " ").split(), source)


def _from_file(settings: Settings) -> list[Organization]:
    path = settings.service.orgs_file
    assert path is not None
    source = f"FUNDPIPE_ORGS_FILE {path}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{source} cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{source} is not valid TOML ({exc})") from None
    tables = data.get("organizations")
    if not isinstance(tables, list):
        raise ConfigurationError(f"{source} has no [[organizations]] tables")
    return _checked(tables, source)


def configured_organizations(settings: Settings) -> list[Organization] | None:
    """The organizations `FUNDPIPE_ORGS` or `FUNDPIPE_ORGS_FILE` list; None when neither is set."""
    if settings.service.orgs and settings.service.orgs.strip():
        return parse_orgs(settings.service.orgs)
    if settings.service.orgs_file is not None:
        return _from_file(settings)
    return None


def organizations(settings: Settings, transport: object | None = None) -> list[Organization]:
    """Every organization this run covers (see the module docstring for the order).

    `settings` name a running service (the embedded sandbox already started); `transport`
    stands in for the network in tests.
    """
    configured = configured_organizations(settings)
    if configured is not None:
        return configured
    import asyncio

    from fundpipe.client.errors import OperationUnavailableError

    try:
        read = asyncio.run(_read_organizations(settings, transport))
    except OperationUnavailableError:
        fallback = Organization(id=settings.service.org_id)
        log.warning(
            "the service does not serve the organization read (%s): running for %s only; "
            "list the organizations in FUNDPIPE_ORGS to run for several",
            settings.service.paths["organizations"],
            fallback.label,
        )
        return [fallback]
    if not read:
        raise ConfigurationError("the service lists no organization this client may act for")
    if len(read) == 1 and settings.service.org_id in (None, read[0].id):
        return read
    if settings.service.org_id and not any(o.id == settings.service.org_id for o in read):
        raise ConfigurationError(
            f"FUNDPIPE_ORG_ID {settings.service.org_id} is not one of the organizations this client may "
            f"act for ({', '.join(str(o.id) for o in read)})"
        )
    return read


async def _read_organizations(settings: Settings, transport: object | None) -> list[Organization]:
    import httpx

    from fundpipe.client import FundClient

    # the read names no organization: it lists those the client may act for
    unscoped = settings.updated(service={"org_id": None})
    found: list[Organization] = []
    net = transport if isinstance(transport, httpx.AsyncBaseTransport) else None
    async with FundClient(unscoped.client_config(), transport=net) as client:
        async for org in client.list_organizations():
            found.append(Organization(id=org.id, name=org.name))
    return sorted(found, key=lambda o: o.id or "")


def pick_org(orgs: Sequence[Organization], wanted: str | None) -> Organization:
    """The organization `--org` names; with no `--org`, the only one (a plain error otherwise)."""
    if wanted:
        for org in orgs:
            if org.id == wanted:
                return org
        known = ", ".join(o.folder for o in orgs)
        raise ConfigurationError(f"--org {wanted} is not a configured organization ({known})")
    if len(orgs) == 1:
        return orgs[0]
    known = ", ".join(o.folder for o in orgs)
    raise ConfigurationError(
        f"{len(orgs)} organizations are configured ({known}): name one with --org"
    )


#: How an entry point fills in the client secret its settings name (a Prefect Secret block):
#: settings in, settings with `client_secret` out. The shells pass
#: `fundpipe.app.prefect.secrets.with_secret_block`; None: these settings build no client.
SecretLoader = Callable[[Settings], Settings]


class Among(StrEnum):
    """Where `org_settings` finds the organizations to pick from."""

    #: the configured list, else the service's organization read (the settings name a running
    #: service); a single-organization layout is moved first
    SERVICE = "service"
    #: the configured list (a single-organization layout moved first), else the folders under
    #: `data/orgs/`, else the single-organization layout read as it is; never the service
    LOCAL = "local"
    #: the configured list, else the organization named (`wanted`: None is the client's own);
    #: never the service, nothing moved (a fan-out's child, an offline check)
    CONFIGURED = "configured"


class OrgSettings(NamedTuple):
    """One organization and its settings (`org_settings`)."""

    org: Organization
    settings: Settings


def _say_nothing(line: str) -> None:
    """The default `say`: tell nobody."""


def find_organizations(
    settings: Settings,
    among: Among,
    *,
    load_secret: SecretLoader | None,
    wanted: str | None = None,
    say: Callable[[str], object] = _say_nothing,
    transport: object | None = None,
) -> tuple[Settings, list[Organization] | None]:
    """`settings` with their client secret loaded (`load_secret`: the service may be asked), and
    the organizations found `among` (see `Among`); None for `Among.LOCAL` when the data
    directory is still in the single-organization layout and no organization is configured.
    A single-organization layout moved says so through `say`."""
    from fundpipe.layout import migrate_layout

    top = load_secret(settings) if load_secret is not None else settings
    if among is Among.SERVICE:
        found = organizations(top, transport)
    else:
        configured = configured_organizations(top)
        if among is Among.CONFIGURED:
            return top, configured or [Organization(id=wanted)]
        if configured is None:
            root = top.local.data_dir / "orgs"
            folders = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
            if not folders:
                return top, None
            # folders only: nothing to move (a moved layout made them)
            return top, [Organization(id=None if f == OWN_ORG_FOLDER else f) for f in folders]
        found = configured
    moved = migrate_layout(top, found)
    if moved:
        say(moved)
    return top, found


def org_settings(
    settings: Settings,
    wanted: str | Organization | None = None,
    *,
    among: Among | Sequence[Organization] = Among.SERVICE,
    load_secret: SecretLoader | None,
    several: bool | None = None,
    say: Callable[[str], object] = _say_nothing,
    transport: object | None = None,
) -> OrgSettings:
    """One organization's settings: the one way every entry point gets them.

    The organization is `wanted` — an `Organization` as it is, or an id (`--org`, else
    `FUNDPIPE_ORG_ID` as the process started: the caller says; None: the only one) picked from
    the organizations found `among` (an `Among`, or a list the caller already holds; see
    `find_organizations`). Its settings are `Settings.for_org` (its state, reports and service;
    `several` defaults to whether more than one organization was found) with the client secret
    loaded by `load_secret` (the shells' Prefect Secret-block loader; None for a command that
    builds no client), before the service is asked and again for an organization naming its
    own Secret block.

    With `Among.LOCAL`, no organization configured and no organization folder yet, the data
    directory is the single-organization layout and is read as it is (the next command that
    talks to the service moves it).
    """
    if isinstance(among, Among):
        top, found = find_organizations(
            settings,
            among,
            load_secret=load_secret,
            wanted=wanted if isinstance(wanted, str) else None,
            say=say,
            transport=transport,
        )
    else:
        top = load_secret(settings) if load_secret is not None else settings
        found = list(among)
    if found is None:  # Among.LOCAL, single-organization layout
        named = wanted.id if isinstance(wanted, Organization) else wanted
        if named and top.service.org_id not in (None, named):
            raise ConfigurationError(
                f"--org {named} is not FUNDPIPE_ORG_ID ({top.service.org_id}) and "
                f"{top.local.data_dir / 'orgs'} holds no organization's folders"
            )
        org = Organization(id=named)
        return OrgSettings(org, top.updated(service={"org_id": org.id}))
    org = wanted if isinstance(wanted, Organization) else pick_org(found, wanted)
    one = top.for_org(org, several=len(found) > 1 if several is None else several)
    return OrgSettings(org, load_secret(one) if load_secret is not None else one)


def every_org_settings(
    settings: Settings,
    wanted: str | None,
    *,
    among: Among,
    also: Sequence[str] = (),
    say: Callable[[str], object] = _say_nothing,
) -> list[OrgSettings]:
    """What a command that only reads covers (`among`: LOCAL or CONFIGURED; no secret loaded):
    the organization `wanted` names, else every one — the configured list, else the folders
    under `data/orgs/` and those `also` names (the durable record's), else the only one."""
    if among is Among.SERVICE:
        raise ValueError("every_org_settings reads local state only: Among.LOCAL or CONFIGURED")
    if wanted:
        return [org_settings(settings, wanted, among=among, load_secret=None, say=say)]
    configured = configured_organizations(settings)
    if configured is None:
        root = settings.local.data_dir / "orgs"
        local = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
        folders = sorted(local | set(also))
        if not folders:  # a single-organization layout, or the client's own organization
            return [org_settings(settings, None, among=among, load_secret=None, say=say)]
        found = [Organization(id=None if f == OWN_ORG_FOLDER else f) for f in folders]
    else:
        found = configured
        if among is Among.LOCAL:  # a single-organization layout moves first, as for one
            _, moved = find_organizations(settings, among, load_secret=None, say=say)
            found = moved or configured
    return [org_settings(settings, o, among=found, load_secret=None) for o in found]


def waiting_sheets(settings: Settings, wanted: str | None) -> list[Path]:
    """The sheets waiting in one organization's inbox, for an offline check (`fundpipe validate`
    without files): the organization is `wanted`, else the only configured one, else
    `FUNDPIPE_ORG_ID`; the service is not asked."""
    from fundpipe.submit import stable_files

    # only its inbox is read: explicit ledger paths do not matter here (several=False)
    one = org_settings(
        settings,
        wanted or settings.service.org_id,
        among=Among.CONFIGURED,
        load_secret=None,
        several=False,
    )
    return stable_files(one.settings.local.data_dir / "inbox", settle_s=0)


def configured_orgs(settings: Settings) -> dict[str, Any]:
    """What `fundpipe.submit.binding.describe_orgs` reads of the organizations (it sits below
    this module): whether a list is configured, and every one's organization and settings."""
    every = every_org_settings
    return {
        "configured": configured_organizations(settings) is not None,
        "each": lambda: (
            (o.org, o.settings) for o in every(settings, None, among=Among.CONFIGURED)
        ),
    }
