"""The plan's types: service state, plan inputs, planned requests and the plan itself.

Part of :mod:`fundpipe.plan` (import from there). Pure data: no network, no clock, no
filesystem. :class:`Ref` placeholders stand for objects an earlier phase creates;
:meth:`PlannedRequest.resolve` replaces them with ids and only then derives the key.
Longer than ~400 lines: the types of one plan, from its inputs to its resolved requests, read
together (resolution's walk of a body beside the types it walks).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pandas as pd

from fundpipe.keys import dumps_plain, idempotency_key, key_of_canonical, to_json_value

if TYPE_CHECKING:
    from fundpipe.plan._held import HeldInstruction

_T = TypeVar("_T")

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


@dataclass(frozen=True, slots=True)
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
    #: ids of the contacts notified about the payment
    notify: tuple[str, ...] = ()


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
    #: entity id → the content fingerprints of the payment instructions it is known to have
    #: (the ledger's successful creates, and the instructions read from the service; see
    #: :func:`fundpipe.plan.instruction_fingerprint`)
    instruction_fingerprints: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: entities whose instructions were read from the service for this plan (their
    #: fingerprints above are all the service shows)
    instructions_read: frozenset[str] = frozenset()
    #: of those, the entities whose records showed no content (only ids) or were not listed
    instructions_unreadable: frozenset[str] = frozenset()
    contacts_by_email: Mapping[str, str] = field(default_factory=dict)
    contact_ids: frozenset[str] = frozenset()
    #: only for contacts whose record lists its entities (the documented record does not)
    contact_entities: Mapping[str, frozenset[str]] = field(default_factory=dict)
    distributions_by_ref: Mapping[str, ServiceDistribution] = field(default_factory=dict)
    available_cents: Mapping[str, int] = field(default_factory=dict)
    #: entity ids by (exact name, type): finds an investor whose reference changed
    entities_by_name: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    #: what the snapshot could not read (an operation the service does not serve), in words
    warnings: tuple[str, ...] = ()
    #: the objects' `livemode` (None when no object was seen; True when any was live)
    livemode: bool | None = None


# --------------------------------------------------------------------------- plan inputs


@dataclass(frozen=True)
class FileInput:
    """One validated file: its content hash and its canonical frames (see validate.py).

    The frames are read, never changed: what is worked out from them once (the roster's rows
    as records, its payment instructions) is kept with the file (:meth:`once`), for the
    snapshot's reads and the plan alike.
    """

    file_hash: str
    source_file: str
    distributions: pd.DataFrame | None
    entities: pd.DataFrame | None = None
    contacts: pd.DataFrame | None = None
    payment_instructions: pd.DataFrame | None = None
    _made: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def once(self, name: str, make: Callable[[FileInput], _T]) -> _T:
        """``make(self)``, made the first time ``name`` is asked for and kept with the file."""
        if name not in self._made:
            self._made[name] = make(self)
        return self._made[name]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- plan outputs


@dataclass(frozen=True, slots=True)  # slots: one per sheet row, 300k on a big night
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
    #: a conflict's Excel row (the first sheet payment the service lacks) and canonical column
    conflict_row: int | None = None
    conflict_column: str | None = None

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
    #: fundpipe's own references of the objects created, in body order, for those the service
    #: is not sent one (contacts; payment instructions, one per instruction); "" where none
    own_references: tuple[str, ...] = ()
    #: the body's canonical JSON (``fundpipe.keys.canonical_json``), made once when resolved:
    #: the key, the bytes sent and the ledger's copy all come from it; "" when not made
    body_json: str = ""


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
    #: see :attr:`ResolvedRequest.own_references`
    own_references: tuple[str, ...] = ()

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
            key_fn = idempotency_key
        return self.resolve(IdMap(), org_id, key_fn).key

    def resolve(self, ids: IdMap, org_id: str, key_fn: KeyFunction) -> ResolvedRequest:
        """Replace placeholders with ids and derive the key from the concrete request."""
        path = self.path
        if self.path_ref is not None:
            path = path.replace("{ent_id}", ids.lookup(self.path_ref))
        if self.needs_ids:  # ids in place and plain JSON data, in one walk of the body
            body = [_substitute(element, ids) for element in self.body]
        else:
            body = list(self.body)
        if key_fn is idempotency_key:  # the recipe's own text of the body, made once
            body_json = dumps_plain(body if self.needs_ids else to_json_value(body))
            key = key_of_canonical(org_id, self.method, path, body_json)
        else:
            body_json, key = "", key_fn(org_id, self.method, path, body)
        return ResolvedRequest(
            phase=self.phase,
            method=self.method,
            path=path,
            body=body,
            key=key,
            file_hashes=self.file_hashes,
            distribution_refs=self.distribution_refs,
            label=self.label,
            own_references=self.own_references,
            body_json=body_json,
        )


@dataclass(frozen=True)
class HeldInvestor:
    """A roster investor whose reference matches nothing at the service but whose exact name
    and type match exactly one existing entity: probably the same investor. It is not
    created, and the distributions paying it are not sent; a person decides."""

    file_hash: str
    source_file: str
    external_reference: str
    name: str
    type: str
    existing_id: str
    #: (file hash, external reference) of the drop's distributions that pay the held investor
    distributions: tuple[tuple[str, str], ...] = ()

    @property
    def reason(self) -> str:
        """The sentence for the run summary and the report."""
        held = ", ".join(ref for _, ref in self.distributions) or "none"
        return (
            f"probably the same investor: roster {self.external_reference} "
            f"({self.name!r}, {self.type}) matches no reference at the service but exactly "
            f"one existing entity by name and type, {self.existing_id}; not created, "
            f"distributions paying it held ({held}) — a person decides"
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
    #: roster investors held as probably the same as an existing entity
    held: tuple[HeldInvestor, ...] = ()
    #: roster instructions for entities that have other instructions, not sent
    held_instructions: tuple[HeldInstruction, ...] = ()

    def held_reasons(self, file_hash: str | None = None) -> list[str]:
        """Why what was held (investors, then instructions) was held, of one file or all."""
        mine = [h.reason for h in self.held if file_hash in (None, h.file_hash)]
        return mine + [h.reason for h in self.held_instructions if file_hash in (None, h.file_hash)]

    def held_refs(self, file_hash: str) -> list[str]:
        """References of ``file_hash``'s distributions held for a probable duplicate investor."""
        return sorted({r for h in self.held for f, r in h.distributions if f == file_hash})

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
        held = {pair for h in self.held for pair in h.distributions}
        return [
            d
            for d in self.distributions
            if d.action == "create"
            and d.file_hash not in excluded
            and (d.file_hash, d.external_reference) not in held
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


# --------------------------------------------------------------------------- placeholders


def _collect_refs(value: Any, found: set[Ref]) -> None:
    if isinstance(value, Ref):
        found.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_refs(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_refs(v, found)


#: Exact types a body's leaves mostly are: plain JSON data as they are.
_PLAIN = frozenset({str, int, bool, type(None)})


def _substitute(value: Any, ids: IdMap) -> Any:
    """``value`` with every :class:`Ref` replaced by its id, as plain JSON data
    (``fundpipe.keys.to_json_value``'s result: the same text, the same key)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict and all(type(k) is str for k in value):
        return {k: v if type(v) in _PLAIN else _substitute(v, ids) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else _substitute(v, ids) for v in value]
    if isinstance(value, Ref):
        return ids.lookup(value)
    if isinstance(value, Mapping):  # keys checked (and refused) as to_json_value does
        return to_json_value({k: _substitute(v, ids) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [_substitute(v, ids) for v in value]
    return to_json_value(value)  # anything else (models, dates): converted, or refused
