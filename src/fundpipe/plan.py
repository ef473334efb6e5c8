"""Pure planning: validated frames + what the service already has → ordered requests.

No network, no clock, no filesystem. The plan is a list of *phases* run in order:

1. ``entities``              roster entities whose ``external_reference`` the service lacks
2. ``contacts``              roster contacts whose email the service lacks
3. ``associations``          contact ↔ entity links the service lacks
4. ``payment_instructions``  instructions for entities that have none at the service
5. ``distributions``         distributions to create, in batches of at most ``batch_size``

A request of a later phase may reference an object an earlier phase creates (a roster entity
named by its ``external_reference``, a contact named by its email). Such references are
:class:`Ref` placeholders in the planned body; :meth:`PlannedRequest.resolve` replaces them with
the ``ent_``/``cnt_`` ids once known and only then derives the request's ``Idempotency-Key`` —
so the key is a function of the concrete body, as DESIGN asks, and the same after a restart.

Every distribution is classified: ``create`` (nothing with its ``external_reference`` exists),
``link`` (the same content exists) or ``conflict`` (the reference exists with other content).
A file with a conflict is planned as a whole as a conflict: nothing of it is sent.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import pandas as pd

Phase = Literal["entities", "contacts", "associations", "payment_instructions", "distributions"]
PHASES: tuple[Phase, ...] = (
    "entities",
    "contacts",
    "associations",
    "payment_instructions",
    "distributions",
)
Action = Literal["create", "link", "conflict"]
KeyFunction = Callable[[str, str, str, Any], str]

#: The service's bound on elements per create body (architecture: 1–100).
MAX_BATCH = 100


class UnresolvedReferenceError(LookupError):
    """A placeholder could not be resolved: the object it names was never created."""


@dataclass(frozen=True)
class Ref:
    """A placeholder for an id the service assigns in an earlier phase.

    ``kind`` is ``entity`` (``key`` = the roster ``external_reference``) or ``contact``
    (``key`` = the lower-cased email).
    """

    kind: Literal["entity", "contact"]
    key: str

    def __str__(self) -> str:
        return f"<{self.kind}:{self.key}>"


@dataclass
class IdMap:
    """Known ids: entities by ``external_reference`` and contacts by lower-cased email."""

    entities: dict[str, str] = field(default_factory=dict)
    contacts: dict[str, str] = field(default_factory=dict)

    def lookup(self, ref: Ref) -> str:
        """The id a placeholder stands for; raises :class:`UnresolvedReferenceError`."""
        table = self.entities if ref.kind == "entity" else self.contacts
        try:
            return table[ref.key]
        except KeyError:
            raise UnresolvedReferenceError(f"no {ref.kind} id for {ref.key!r}") from None


# --------------------------------------------------------------------------- service state


@dataclass(frozen=True)
class ServicePayment:
    """The comparable content of one payment the service holds."""

    entity: str
    amount_cents: int
    currency: str
    distribution_date_override: str | None = None


@dataclass(frozen=True)
class ServiceDistribution:
    """The comparable content of one distribution the service holds."""

    id: str
    external_reference: str
    name: str
    vehicle: str
    distribution_date: str
    distribution_timezone: str
    payments: tuple[ServicePayment, ...]
    payment_ids: tuple[str, ...] = ()
    status: str | None = None


@dataclass(frozen=True)
class ServiceState:
    """A snapshot of what the service already has, as planning needs it."""

    org_id: str
    vehicles: frozenset[str] = frozenset()
    entities_by_ref: Mapping[str, str] = field(default_factory=dict)
    entity_ids: frozenset[str] = frozenset()
    entities_with_instructions: frozenset[str] = frozenset()
    contacts_by_email: Mapping[str, str] = field(default_factory=dict)
    contact_ids: frozenset[str] = frozenset()
    contact_entities: Mapping[str, frozenset[str]] = field(default_factory=dict)
    distributions_by_ref: Mapping[str, ServiceDistribution] = field(default_factory=dict)
    available_cents: Mapping[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- plan inputs


@dataclass(frozen=True)
class FileInput:
    """One validated file: its content hash and its canonical frames (see validate.py)."""

    file_hash: str
    source_file: str
    distributions: pd.DataFrame | None
    entities: pd.DataFrame | None = None
    contacts: pd.DataFrame | None = None
    payment_instructions: pd.DataFrame | None = None


# --------------------------------------------------------------------------- plan outputs


@dataclass(frozen=True)
class PlannedPayment:
    """One sheet payment row as it will be sent."""

    source_file: str
    sheet: str
    row: int
    entity: str | Ref
    amount_cents: int
    currency: str
    distribution_date_override: str | None
    notify: tuple[str | Ref, ...]

    def element(self) -> dict[str, Any]:
        """The payment element of the create body (placeholders left in place)."""
        out: dict[str, Any] = {
            "amount": self.amount_cents,
            "currency": self.currency,
            "entity": self.entity,
        }
        if self.distribution_date_override:
            out["distribution_date_override"] = self.distribution_date_override
        if self.notify:
            out["notifications"] = [{"contact": c} for c in self.notify]
        return out


@dataclass(frozen=True)
class PlannedDistribution:
    """One distribution of a sheet with its classification against the service."""

    file_hash: str
    source_file: str
    external_reference: str
    name: str
    vehicle: str
    distribution_date: str
    distribution_timezone: str
    payments: tuple[PlannedPayment, ...]
    action: Action
    existing_id: str | None = None
    reason: str | None = None

    @property
    def total_cents(self) -> int:
        """Sum of the payments, integer cents."""
        return sum(p.amount_cents for p in self.payments)

    def element(self) -> dict[str, Any]:
        """The distribution element of the create body (placeholders left in place)."""
        return {
            "name": self.name,
            "vehicle": self.vehicle,
            "external_reference": self.external_reference,
            "distribution_date": self.distribution_date,
            "distribution_timezone": self.distribution_timezone,
            "payments": [p.element() for p in self.payments],
        }


@dataclass(frozen=True)
class ResolvedRequest:
    """A concrete request: ids in place and its deterministic ``Idempotency-Key``."""

    phase: Phase
    method: str
    path: str
    body: list[dict[str, Any]]
    key: str
    file_hashes: tuple[str, ...]
    distribution_refs: tuple[str, ...]
    label: str


@dataclass(frozen=True)
class PlannedRequest:
    """A request of the plan; its body may hold :class:`Ref` placeholders."""

    phase: Phase
    method: str
    path: str
    body: tuple[Any, ...]
    file_hashes: tuple[str, ...]
    label: str
    distribution_refs: tuple[str, ...] = ()
    path_ref: Ref | None = None
    #: False when the body holds no placeholder (resolving is then a shallow copy)
    needs_ids: bool = True

    @property
    def placeholders(self) -> frozenset[Ref]:
        """Every placeholder this request waits on."""
        found: set[Ref] = set()
        _collect_refs(list(self.body), found)
        if self.path_ref is not None:
            found.add(self.path_ref)
        return frozenset(found)

    def resolve_key(self, org_id: str, key_fn: KeyFunction | None = None) -> str:
        """The key of a request without placeholders (what ``--dry-run`` shows)."""
        if key_fn is None:
            from fundpipe.client import idempotency_key

            key_fn = idempotency_key
        return self.resolve(IdMap(), org_id, key_fn).key

    def resolve(self, ids: IdMap, org_id: str, key_fn: KeyFunction) -> ResolvedRequest:
        """Replace placeholders with ids and derive the key from the concrete request."""
        path = self.path
        if self.path_ref is not None:
            path = path.replace("{ent_id}", ids.lookup(self.path_ref))
        if self.needs_ids:
            body = [_substitute(element, ids) for element in self.body]
        else:
            body = list(self.body)
        return ResolvedRequest(
            phase=self.phase,
            method=self.method,
            path=path,
            body=body,
            key=key_fn(org_id, self.method, path, body),
            file_hashes=self.file_hashes,
            distribution_refs=self.distribution_refs,
            label=self.label,
        )


@dataclass(frozen=True)
class PlannedFile:
    """A file's share of the plan."""

    file_hash: str
    source_file: str
    rows: int
    distributions: int
    total_cents: int
    conflict: bool
    excluded: bool


@dataclass(frozen=True)
class Plan:
    """The ordered requests of one submission and the classification behind them."""

    org_id: str
    files: tuple[PlannedFile, ...]
    distributions: tuple[PlannedDistribution, ...]
    requests: tuple[PlannedRequest, ...]
    batch_size: int = MAX_BATCH

    def phase(self, name: Phase) -> list[PlannedRequest]:
        """The requests of one phase, in order."""
        return [r for r in self.requests if r.phase == name]

    @property
    def conflicts(self) -> list[PlannedDistribution]:
        """Distributions whose reference exists at the service with other content."""
        return [d for d in self.distributions if d.action == "conflict"]

    def to_create(self) -> list[PlannedDistribution]:
        """Distributions the plan sends."""
        excluded = {f.file_hash for f in self.files if f.excluded or f.conflict}
        return [
            d for d in self.distributions if d.action == "create" and d.file_hash not in excluded
        ]

    def totals_by_vehicle(self, *, only_new: bool = True) -> dict[str, int]:
        """Integer cents per vehicle over the distributions to create (or all)."""
        out: dict[str, int] = defaultdict(int)
        for d in self.to_create() if only_new else self.distributions:
            out[d.vehicle] += d.total_cents
        return dict(sorted(out.items()))

    def counts(self) -> dict[str, int]:
        """Requests per phase and distributions per action, for display."""
        out: dict[str, int] = {p: len(self.phase(p)) for p in PHASES}
        for action in ("create", "link", "conflict"):
            out[f"distributions_{action}"] = sum(
                1 for d in self.distributions if d.action == action
            )
        out["payments_to_create"] = sum(len(d.payments) for d in self.to_create())
        return out


# --------------------------------------------------------------------------- helpers


def content_hash(data: bytes) -> str:
    """SHA-256 hex digest of a file's bytes: how a re-dropped file is recognised."""
    return hashlib.sha256(data).hexdigest()


def _collect_refs(value: Any, found: set[Ref]) -> None:
    if isinstance(value, Ref):
        found.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_refs(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_refs(v, found)


def _substitute(value: Any, ids: IdMap) -> Any:
    if isinstance(value, Ref):
        return ids.lookup(value)
    if isinstance(value, dict):
        return {k: _substitute(v, ids) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_substitute(v, ids) for v in value]
    return value


def display_body(value: Any) -> Any:
    """A body with placeholders shown as ``<entity:REF>`` and account numbers masked."""
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, dict):
        return {
            k: (mask_account(v) if k == "account_number" else display_body(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [display_body(v) for v in value]
    return value


def mask_account(value: Any) -> Any:
    """``****1234`` for an account number; None stays None."""
    if value is None:
        return None
    text = str(value)
    return "****" + text[-4:] if len(text) > 4 else "****"


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        if value is pd.NA or bool(pd.isna(value)):
            return True
    except (TypeError, ValueError):
        return False
    return isinstance(value, str) and not value.strip()


def _text(value: Any) -> str | None:
    return None if _blank(value) else str(value).strip()


def _instant(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _pick(row: Mapping[str, Any], *names: str) -> str | None:
    """The first non-blank value among ``names`` (roster frames may use either spelling)."""
    for name in names:
        value = _text(row.get(name))
        if value is not None:
            return value
    return None


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None or frame.empty:
        return []
    return [{str(k): v for k, v in r.items()} for r in frame.to_dict(orient="records")]


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def derived_reference(vehicle: str, name: str, distribution_date: str) -> str:
    """A stable ``external_reference`` for a sheet that gives none (same sheet → same ref)."""
    digest = hashlib.sha256(f"{vehicle}\x1f{name}\x1f{distribution_date}".encode()).hexdigest()
    return "FP-" + digest[:20].upper()


# --------------------------------------------------------------------------- building


def _entity_of(value: Any, is_ref: Any, state: ServiceState, roster: set[str]) -> str | Ref:
    text = _text(value) or ""
    names_reference = bool(is_ref) if not _blank(is_ref) else not text.startswith("ent_")
    if names_reference:
        if text in state.entities_by_ref:
            return state.entities_by_ref[text]
        if text in roster:
            return Ref("entity", text)
        # validate.py rejects unknown references; keep a placeholder so nothing is guessed
        return Ref("entity", text)
    return text


def _contact_of(value: str, state: ServiceState) -> str | Ref:
    if value.startswith("cnt_"):
        return value
    email = value.lower()
    return state.contacts_by_email.get(email) or Ref("contact", email)


def _group_distributions(
    file: FileInput, state: ServiceState, roster: set[str]
) -> list[PlannedDistribution]:
    rows = _records(file.distributions)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        vehicle = _text(row.get("vehicle")) or ""
        name = _text(row.get("distribution_name")) or ""
        date = _text(row.get("distribution_date")) or ""
        ref = _text(row.get("external_reference")) or derived_reference(vehicle, name, date)
        groups.setdefault(ref, []).append(row)
    out: list[PlannedDistribution] = []
    for ref, members in groups.items():
        first = members[0]
        payments = []
        for row in members:
            notify_text = _text(row.get("notify")) or ""
            notify = tuple(
                _contact_of(n.strip(), state) for n in notify_text.split(";") if n.strip()
            )
            payments.append(
                PlannedPayment(
                    source_file=_text(row.get("source_file")) or file.source_file,
                    sheet=_text(row.get("sheet")) or "",
                    row=int(row.get("row") or 0),
                    entity=_entity_of(row.get("entity"), row.get("entity_is_ref"), state, roster),
                    amount_cents=int(row["amount_cents"]),
                    currency=_text(row.get("currency")) or "USD",
                    distribution_date_override=_text(row.get("distribution_date_override")),
                    notify=notify,
                )
            )
        out.append(
            PlannedDistribution(
                file_hash=file.file_hash,
                source_file=file.source_file,
                external_reference=ref,
                name=_text(first.get("distribution_name")) or "",
                vehicle=_text(first.get("vehicle")) or "",
                distribution_date=_text(first.get("distribution_date")) or "",
                distribution_timezone=_text(first.get("distribution_timezone")) or "UTC",
                payments=tuple(payments),
                action="create",
            )
        )
    return out


def _payment_signature(
    entity: str | Ref, amount: int, currency: str, override: str | None
) -> tuple[str, int, str, str]:
    when = _instant(override)
    return (str(entity), amount, currency.upper(), when.isoformat() if when else "")


def same_content(planned: PlannedDistribution, existing: ServiceDistribution) -> str | None:
    """None when the service's distribution matches the sheet's; else what differs."""
    if planned.name != existing.name:
        return f"name differs: sheet {planned.name!r}, service {existing.name!r}"
    if planned.vehicle != existing.vehicle:
        return f"vehicle differs: sheet {planned.vehicle}, service {existing.vehicle}"
    if _instant(planned.distribution_date) != _instant(existing.distribution_date):
        return (
            f"distribution_date differs: sheet {planned.distribution_date}, "
            f"service {existing.distribution_date}"
        )
    if planned.distribution_timezone != existing.distribution_timezone:
        return "distribution_timezone differs"
    sheet = sorted(
        _payment_signature(p.entity, p.amount_cents, p.currency, p.distribution_date_override)
        for p in planned.payments
    )
    service = sorted(
        _payment_signature(p.entity, p.amount_cents, p.currency, p.distribution_date_override)
        for p in existing.payments
    )
    if sheet != service:
        sheet_total = sum(s[1] for s in sheet)
        service_total = sum(s[1] for s in service)
        return (
            f"payments differ: sheet {len(sheet)} payments totalling {sheet_total} cents, "
            f"service {len(service)} payments totalling {service_total} cents"
        )
    return None


def _classify(
    distributions: list[PlannedDistribution], state: ServiceState
) -> list[PlannedDistribution]:
    seen: dict[str, PlannedDistribution] = {}
    out = []
    for d in distributions:
        existing = state.distributions_by_ref.get(d.external_reference)
        if existing is not None:
            diff = same_content(d, existing)
            if diff is None:
                d = replace(d, action="link", existing_id=existing.id)
            else:
                d = replace(d, action="conflict", existing_id=existing.id, reason=diff)
        elif d.external_reference in seen:
            earlier = seen[d.external_reference]
            if earlier.element() == d.element():
                d = replace(d, action="link", reason=f"same as in {earlier.source_file}")
            else:
                d = replace(
                    d,
                    action="conflict",
                    reason=f"external_reference also used with other content in {earlier.source_file}",
                )
        else:
            seen[d.external_reference] = d
        out.append(d)
    return out


def build_plan(
    files: Sequence[FileInput],
    state: ServiceState,
    *,
    batch_size: int = MAX_BATCH,
    exclude: Iterable[str] = (),
) -> Plan:
    """Plan the submission of ``files`` against ``state``.

    ``exclude`` names file hashes that pre-flight refused: they are classified and shown but
    contribute no request. Files with a conflicting distribution contribute none either.
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be within 1..{MAX_BATCH}")
    excluded = set(exclude)
    roster_refs: set[str] = set()
    for f in files:
        for e in _records(f.entities):
            ref = _pick(e, "entity_external_reference", "external_reference")
            if ref:
                roster_refs.add(ref)

    distributions: list[PlannedDistribution] = []
    for f in files:
        distributions.extend(_group_distributions(f, state, roster_refs))
    distributions = _classify(distributions, state)

    conflict_files = {d.file_hash for d in distributions if d.action == "conflict"}
    planned_files = []
    for f in files:
        mine = [d for d in distributions if d.file_hash == f.file_hash]
        planned_files.append(
            PlannedFile(
                file_hash=f.file_hash,
                source_file=f.source_file,
                rows=sum(len(d.payments) for d in mine),
                distributions=len(mine),
                total_cents=sum(d.total_cents for d in mine),
                conflict=f.file_hash in conflict_files,
                excluded=f.file_hash in excluded,
            )
        )
    active = [f for f in files if f.file_hash not in excluded and f.file_hash not in conflict_files]
    active_hashes = {f.file_hash for f in active}

    requests: list[PlannedRequest] = []
    requests += _entity_requests(active, state)
    requests += _contact_requests(active, state)
    requests += _association_requests(active, state)
    requests += _instruction_requests(active, state)
    by_file: dict[str, list[PlannedDistribution]] = defaultdict(list)
    for d in distributions:
        if d.action == "create" and d.file_hash in active_hashes:
            by_file[d.file_hash].append(d)
    for f in active:
        # sorted by reference so a resumed run re-cuts the same batches (and so the same keys)
        mine = sorted(by_file.get(f.file_hash, []), key=lambda d: d.external_reference)
        for chunk in _chunks(mine, batch_size):
            refs = tuple(d.external_reference for d in chunk)
            requests.append(
                PlannedRequest(
                    phase="distributions",
                    method="POST",
                    path="/v1/distributions",
                    body=tuple(d.element() for d in chunk),
                    file_hashes=(f.file_hash,),
                    label=f"{len(chunk)} distributions of {f.source_file} ({refs[0]}…{refs[-1]})",
                    distribution_refs=refs,
                    needs_ids=any(
                        isinstance(p.entity, Ref) or any(isinstance(c, Ref) for c in p.notify)
                        for d in chunk
                        for p in d.payments
                    ),
                )
            )
    return Plan(
        org_id=state.org_id,
        files=tuple(planned_files),
        distributions=tuple(distributions),
        requests=tuple(requests),
        batch_size=batch_size,
    )


def _owners(rows: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for key, file_hash in rows:
        owners[key].add(file_hash)
    return {k: tuple(sorted(v)) for k, v in owners.items()}


def _entity_requests(files: Sequence[FileInput], state: ServiceState) -> list[PlannedRequest]:
    wanted: dict[str, dict[str, Any]] = {}
    owner_rows = []
    for f in files:
        for e in _records(f.entities):
            ref = _pick(e, "entity_external_reference", "external_reference")
            if not ref or ref in state.entities_by_ref:
                continue
            owner_rows.append((ref, f.file_hash))
            element: dict[str, Any] = {
                "name": _pick(e, "entity_name", "name") or ref,
                "type": _pick(e, "entity_type", "type") or "other_entity",
                "external_reference": ref,
            }
            external_type = _pick(e, "entity_external_type", "external_type")
            if external_type:
                element["external_type"] = external_type
            wanted.setdefault(ref, element)
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    return [
        PlannedRequest(
            phase="entities",
            method="POST",
            path="/v1/entities",
            body=tuple(wanted[r] for r in chunk),
            file_hashes=tuple(sorted({h for r in chunk for h in owners[r]})),
            label=f"{len(chunk)} entities ({chunk[0]}…{chunk[-1]})",
        )
        for chunk in _chunks(ordered, MAX_BATCH)
    ]


def _contact_requests(files: Sequence[FileInput], state: ServiceState) -> list[PlannedRequest]:
    wanted: dict[str, dict[str, Any]] = {}
    owner_rows = []
    for f in files:
        for c in _records(f.contacts):
            email = (_pick(c, "contact_email", "email") or "").lower()
            if not email or email in state.contacts_by_email:
                continue
            owner_rows.append((email, f.file_hash))
            element: dict[str, Any] = {
                "name": _pick(c, "contact_name", "name") or email,
                "email": email,
            }
            ext = _pick(c, "contact_external_reference", "external_reference")
            if ext:
                element["external_reference"] = ext
            wanted.setdefault(email, element)
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    return [
        PlannedRequest(
            phase="contacts",
            method="POST",
            path="/v1/contacts",
            body=tuple(wanted[e] for e in chunk),
            file_hashes=tuple(sorted({h for e in chunk for h in owners[e]})),
            label=f"{len(chunk)} contacts",
        )
        for chunk in _chunks(ordered, MAX_BATCH)
    ]


def _contact_entity_refs(row: dict[str, Any]) -> list[str]:
    text = _pick(row, "entity_external_reference", "entity", "entities") or ""
    return [t.strip() for t in text.split(";") if t.strip()]


def _association_requests(files: Sequence[FileInput], state: ServiceState) -> list[PlannedRequest]:
    wanted: dict[str, set[str]] = defaultdict(set)  # entity key -> contact keys
    owner_rows = []
    for f in files:
        for c in _records(f.contacts):
            email = (_pick(c, "contact_email", "email") or "").lower()
            if not email:
                continue
            for entity in _contact_entity_refs(c):
                contact_id = state.contacts_by_email.get(email)
                entity_id = (
                    entity if entity.startswith("ent_") else state.entities_by_ref.get(entity)
                )
                if (
                    contact_id
                    and entity_id
                    and entity_id in state.contact_entities.get(contact_id, frozenset())
                ):
                    continue
                wanted[entity].add(email)
                owner_rows.append((entity, f.file_hash))
    owners = _owners(owner_rows)
    out = []
    for entity in sorted(wanted):
        entity_value: str | Ref
        if entity.startswith("ent_"):
            entity_value = entity
        else:
            entity_value = state.entities_by_ref.get(entity) or Ref("entity", entity)
        contacts = sorted(wanted[entity])
        for chunk in _chunks(contacts, MAX_BATCH):
            body = tuple({"id": _contact_of(email, state)} for email in chunk)
            if isinstance(entity_value, Ref):
                path, path_ref = "/v1/entities/{ent_id}/contacts", entity_value
            else:
                path, path_ref = f"/v1/entities/{entity_value}/contacts", None
            out.append(
                PlannedRequest(
                    phase="associations",
                    method="POST",
                    path=path,
                    body=body,
                    file_hashes=owners[entity],
                    label=f"associate {len(chunk)} contacts with {entity}",
                    path_ref=path_ref,
                )
            )
    return out


# instruction field → the frame columns it may come from (roster spelling first)
_INSTRUCTION_FIELDS: dict[str, tuple[str, ...]] = {
    "type": ("payment_type", "type"),
    "beneficiary_name": ("beneficiary_name",),
    "account_number": ("account_number_secret", "account_number"),
    "routing_number": ("routing_number",),
    "bank_name": ("bank_name",),
    "branch_code": ("branch_code",),
    "external_reference": ("payment_external_reference", "external_reference"),
}


def _instruction_requests(files: Sequence[FileInput], state: ServiceState) -> list[PlannedRequest]:
    # Only entities without any instructions at the service get some: replacing existing
    # instructions is a decision for a person, not for a re-run.
    wanted: dict[str, list[dict[str, Any]]] = defaultdict(list)
    owner_rows = []
    for f in files:
        for p in _records(f.payment_instructions):
            entity = _pick(p, "entity_external_reference", "entity") or ""
            if not entity:
                continue
            entity_id = entity if entity.startswith("ent_") else state.entities_by_ref.get(entity)
            if entity_id and entity_id in state.entities_with_instructions:
                continue
            instruction = {k: _pick(p, *names) for k, names in _INSTRUCTION_FIELDS.items()}
            instruction = {k: v for k, v in instruction.items() if v is not None}
            if not instruction:
                continue  # a roster row carrying only entity or contact columns
            if instruction not in wanted[entity]:
                wanted[entity].append(instruction)
            owner_rows.append((entity, f.file_hash))
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    out = []
    for chunk in _chunks(ordered, MAX_BATCH):
        body = []
        for entity in chunk:
            entity_value: str | Ref = (
                entity
                if entity.startswith("ent_")
                else state.entities_by_ref.get(entity) or Ref("entity", entity)
            )
            body.append({"entity": entity_value, "payment_instructions": wanted[entity]})
        out.append(
            PlannedRequest(
                phase="payment_instructions",
                method="POST",
                path="/v1/payment_instructions",
                body=tuple(body),
                file_hashes=tuple(sorted({h for e in chunk for h in owners[e]})),
                label=f"payment instructions for {len(chunk)} entities",
            )
        )
    return out


def canonical_json(value: Any) -> str:
    """Sorted-key compact JSON, the form hashed and stored by the ledger."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
