"""A create answered 409 with `conflicts_with`: link to what exists, or report the clash.

The service refuses an entity or contact create whose `external_reference` it already holds
(409 `conflict`, one `invalid-params` entry per clash naming the existing object). That answer
is definitive — the batch created nothing (creates are atomic) — so :func:`send_adopting` reads
each existing object and compares it with the element the sheet asked for:

- same content (entity: name and type; contact: name and email) → the existing object is
  used, exactly as if this run had created it;
- other content → nothing is created for that element and the clash is reported in words
  (whatever pays that investor is then not sent: a person decides);

and sends the rest of the batch once more, with a key derived from that smaller body.

Contact association is optional (its path is a guess): :func:`association_warnings` turns its
failure into one sentence per contact, and nothing else is held.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fundpipe.client import FundClient
from fundpipe.client.errors import (
    AlreadyExistsError,
    FundServiceError,
    OperationUnavailableError,
)
from fundpipe.plan import PlannedRequest, ResolvedRequest

__all__ = ["Adopted", "association_warnings", "send_adopting"]

#: How many smaller batches one create may be re-sent as (each clash removes at least one).
_MAX_ROUNDS = 5

Sender = Callable[[ResolvedRequest], Awaitable[list[Any]]]


@dataclass
class Adopted:
    """What a create that met existing objects ended with."""

    records: list[Any] = field(default_factory=list)  # created or linked, as records
    linked: list[str] = field(default_factory=list)  # ids of existing objects used
    conflicts: list[str] = field(default_factory=list)  # one sentence per clash
    requests: list[ResolvedRequest] = field(default_factory=list)  # re-sent smaller batches


def _references(element: dict[str, Any]) -> set[str]:
    refs = set(element.get("external_references") or [])
    if element.get("external_reference"):
        refs.add(str(element["external_reference"]))
    return refs


def _record_references(record: Any) -> set[str]:
    refs = set(getattr(record, "external_references", None) or [])
    if getattr(record, "external_reference", None):
        refs.add(str(record.external_reference))
    return refs


def _differs(phase: str, element: dict[str, Any], record: Any) -> str | None:
    """None when ``record`` holds what ``element`` asks for; else what differs."""
    if element.get("name") != getattr(record, "name", None):
        return f"name {record.name!r} at the service, {element.get('name')!r} in the sheet"
    if phase == "entities" and element.get("type") != getattr(record, "type", None):
        return f"type {record.type!r} at the service, {element.get('type')!r} in the sheet"
    if phase == "contacts":
        email = (getattr(record, "email", None) or "").lower()
        if email != str(element.get("email") or "").lower():
            return "another email at the service than in the sheet"
    return None


async def _existing(client: FundClient, phase: str, ident: str) -> Any:
    if phase == "entities":
        return await client.get_entity(ident)
    return await client.get_contact(ident)


async def send_adopting(
    client: FundClient,
    request: ResolvedRequest,
    send: Sender,
    key_fn: Callable[[str, str, str, Any], str],
    org_id: str,
    record_intent: Callable[[ResolvedRequest], Awaitable[None]],
) -> Adopted:
    """Send an entity or contact create; on 409 `conflicts_with`, link or report each clash
    and send the rest (see the module docstring). Other errors are raised as they are."""
    out = Adopted()
    current = request
    for _ in range(_MAX_ROUNDS):
        try:
            out.records.extend(await send(current))
            return out
        except AlreadyExistsError as exc:
            if not exc.conflicts_with:
                raise
            rest = await _adopt(client, current.phase, current.body, exc.conflicts_with, out)
            if len(rest) == len(current.body):
                raise  # no element matched what the service named: nothing to link
        if not rest:
            return out
        current = replace(
            current, body=rest, key=key_fn(org_id, current.method, current.path, rest)
        )
        await record_intent(current)
        out.requests.append(current)
    msg = f"{request.label}: the service kept naming existing objects; stopped re-sending"
    raise RuntimeError(msg)


async def _adopt(
    client: FundClient,
    phase: str,
    body: Sequence[dict[str, Any]],
    existing_ids: Sequence[str],
    out: Adopted,
) -> list[dict[str, Any]]:
    """Match each existing object to its element; returns the elements still to create."""
    remaining = list(body)
    for ident in existing_ids:
        record = await _existing(client, phase, ident)
        refs = _record_references(record)
        element = next((e for e in remaining if _references(e) & refs), None)
        if element is None:
            continue
        remaining.remove(element)
        noun = "entity" if phase == "entities" else "contact"
        reference = ", ".join(sorted(_references(element) & refs))
        why = _differs(phase, element, record)
        if why is None:
            out.records.append(record)
            out.linked.append(ident)
        else:
            out.conflicts.append(
                f"{noun} {reference}: the service already holds {ident} under this reference "
                f"with other content ({why}); not created — a person decides"
            )
    return remaining


def association_warnings(
    request: PlannedRequest, resolved: ResolvedRequest, exc: FundServiceError
) -> list[str]:
    """One sentence per contact an association request could not associate."""
    entity = request.path_ref.key if request.path_ref is not None else resolved.path.split("/")[3]
    if isinstance(exc, OperationUnavailableError):
        why = "the service does not serve contact association (optional; nothing else is held)"
    else:
        why = f"the service refused: {exc}"
    return [f"contact {c['id']} not associated with {entity}: {why}" for c in resolved.body]
