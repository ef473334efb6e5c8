"""The pre-flight check (pure): a plan against what the service holds, before anything is sent.

:func:`preflight` checks that vehicles exist, ``ent_``/``cnt_`` ids exist, placeholders will be
created, and funding (a vehicle's new distributions vs its depository ``available``): a warning
by default, a refusal of the file with ``require_funds``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from fundpipe.cents import format_cents
from fundpipe.plan._model import Plan, PlannedDistribution, Ref, ServiceState

__all__ = ["Preflight", "PreflightIssue", "preflight"]

Level = Literal["warning", "error"]


@dataclass(frozen=True)
class PreflightIssue:
    """One finding of the pre-flight check."""

    level: Level
    file_hash: str | None
    source_file: str | None
    check: str
    message: str
    #: Where in the sheet, when the finding is about one cell (for the error report).
    sheet: str | None = None
    row: int | None = None
    column: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class Preflight:
    """Pre-flight findings and the files they refuse."""

    issues: tuple[PreflightIssue, ...]
    refused: frozenset[str]

    @property
    def warnings(self) -> list[PreflightIssue]:
        """Findings that do not stop anything."""
        return [i for i in self.issues if i.level == "warning"]

    @property
    def errors(self) -> list[PreflightIssue]:
        """Findings that refuse their file."""
        return [i for i in self.issues if i.level == "error"]


def _created_placeholders(plan: Plan) -> set[Ref]:
    made: set[Ref] = set()
    for r in plan.requests:
        if r.phase == "entities":
            made |= {Ref("entity", e["external_reference"]) for e in r.body}
        elif r.phase == "contacts":
            made |= {Ref("contact", c["email"]) for c in r.body}
    return made


def preflight(plan: Plan, state: ServiceState, *, require_funds: bool = False) -> Preflight:
    """Check ``plan`` against ``state``; pure. Refused files must be excluded from the plan."""
    issues: list[PreflightIssue] = []
    refused: set[str] = set()
    blocked = {f.file_hash for f in plan.files if f.conflict or f.excluded}
    made = _created_placeholders(plan)
    held = {pair for h in plan.held for pair in h.distributions}
    todo = [
        d
        for d in plan.distributions
        if d.action == "create"
        and d.file_hash not in blocked
        and (d.file_hash, d.external_reference) not in held  # not sent: nothing to check
    ]

    def refuse(
        d: PlannedDistribution,
        check: str,
        message: str,
        cell: tuple[str | None, int | None, str | None, str | None] = (None, None, None, None),
    ) -> None:
        refused.add(d.file_hash)
        issues.append(PreflightIssue("error", d.file_hash, d.source_file, check, message, *cell))

    for d in todo:
        if d.vehicle not in state.vehicles:
            first = d.payments[0] if d.payments else None
            refuse(
                d,
                "vehicle_exists",
                f"{d.external_reference}: vehicle {d.vehicle} not found",
                (
                    first.sheet if first else None,
                    first.row if first else None,
                    "Vehicle",
                    d.vehicle,
                ),
            )
        for p in d.payments:
            where = f"{d.external_reference} row {p.row}"
            if isinstance(p.entity, Ref):
                if p.entity not in made:
                    refuse(
                        d,
                        "entity_exists",
                        f"{where}: entity {p.entity.key!r} unknown",
                        (p.sheet, p.row, "Entity ID", p.entity.key),
                    )
            elif p.entity not in state.entity_ids:
                refuse(
                    d,
                    "entity_exists",
                    f"{where}: entity {p.entity} not found",
                    (p.sheet, p.row, "Entity ID", p.entity),
                )
            for c in p.notify:
                if isinstance(c, Ref):
                    if c not in made:
                        refuse(d, "contact_exists", f"{where}: contact {c.key!r} unknown")
                elif c not in state.contact_ids:
                    refuse(d, "contact_exists", f"{where}: contact {c} not found")

    # Funding: files in plan order; with require_funds a file that would overdraw is refused
    # whole and the following files are checked without it.
    committed: dict[str, int] = defaultdict(int)
    for f in plan.files:
        if f.file_hash in blocked or f.file_hash in refused:
            continue
        mine: dict[str, int] = defaultdict(int)
        for d in todo:
            if d.file_hash == f.file_hash:
                mine[d.vehicle] += d.total_cents
        short = {
            v: (committed[v] + cents, state.available_cents.get(v, 0))
            for v, cents in mine.items()
            if committed[v] + cents > state.available_cents.get(v, 0)
        }
        for vehicle, (needed, available) in sorted(short.items()):
            issues.append(
                PreflightIssue(
                    "error" if require_funds else "warning",
                    f.file_hash,
                    f.source_file,
                    "funds_available",
                    f"{vehicle}: distributions total {format_cents(needed, unit='USD')} but the "
                    f"depository has {format_cents(available, unit='USD')} available",
                )
            )
        if short and require_funds:
            refused.add(f.file_hash)
            continue
        for v, cents in mine.items():
            committed[v] += cents
    return Preflight(tuple(issues), frozenset(refused))
