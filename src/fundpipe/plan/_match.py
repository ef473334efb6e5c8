"""Matching the sheets against the service state: ids, grouping and classification.

Part of :mod:`fundpipe.plan`. Each planned distribution is classified ``create``, ``link``
(the same content exists at the service or earlier in this drop) or ``conflict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fundpipe.cents import format_cents
from fundpipe.plan._model import (
    FileInput,
    HeldInvestor,
    PlannedDistribution,
    PlannedPayment,
    Ref,
    ServiceDistribution,
    ServicePayment,
    ServiceState,
)
from fundpipe.plan._values import (
    _blank,
    _entity_rows,
    _instant,
    _pick,
    _text,
    _texts,
    derived_reference,
)


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


#: the columns a distribution's reference comes from (derived from the last three when blank)
_REFERENCE_COLUMNS = ("external_reference", "vehicle", "distribution_name", "distribution_date")


#: The types of a value a reference's columns give that can be remembered as they are.
_PLAIN_TYPES = frozenset({str, type(None)})


def _reference_of(row: dict[str, Any]) -> str:
    vehicle = _text(row.get("vehicle")) or ""
    name = _text(row.get("distribution_name")) or ""
    date = _text(row.get("distribution_date")) or ""
    return _text(row.get("external_reference")) or derived_reference(vehicle, name, date)


def _row_references(f: FileInput) -> list[str]:
    """The reference of each row of ``f``'s distributions (derived where the sheet gives none).

    A distribution's rows repeat its four values: each text is made into a reference once
    (only texts and blanks are remembered: 1, 1.0 and True would share one entry).
    """
    frame = f.distributions
    if frame is None or frame.empty:
        return []
    blank: list[Any] = [None] * len(frame)
    columns = [frame[c].tolist() if c in frame.columns else blank for c in _REFERENCE_COLUMNS]
    made: dict[tuple[Any, ...], str] = {}
    out: list[str] = []
    # texts and blanks only (the common case): every row can be remembered, unchecked
    every_plain = all(set(map(type, column)) <= _PLAIN_TYPES for column in columns)
    for values in zip(*columns, strict=True):
        plain = every_plain or all(v is None or type(v) is str for v in values)
        ref = made.get(values) if plain else None
        if ref is None:
            ref = _reference_of(dict(zip(_REFERENCE_COLUMNS, values, strict=True)))
            if plain:
                made[values] = ref
        out.append(ref)
    return out


def _references_of(f: FileInput) -> list[str]:
    """:func:`_row_references`, worked out once per file (ingest asks, then the plan)."""
    return f.once("row_references", _row_references)


def references(files: Sequence[FileInput]) -> set[str]:
    """The ``external_reference`` of every distribution the sheets describe (derived where a
    sheet gives none), as the plan will match them against the service."""
    out: set[str] = set()
    for f in files:
        out.update(_references_of(f))
    return out


def _group_distributions(
    file: FileInput, state: ServiceState, roster: set[str]
) -> list[PlannedDistribution]:
    frame = file.distributions
    if frame is None or frame.empty:
        return []
    # column lists and row indices, not one dict per row: a big night has 300k rows
    count = len(frame)
    columns: dict[str, list[Any]] = {str(c): frame[c].tolist() for c in frame.columns}
    blank: list[Any] = [None] * count

    def column(name: str) -> list[Any]:
        return columns.get(name, blank)

    groups: dict[str, list[int]] = {}
    for i, ref in enumerate(_references_of(file)):
        groups.setdefault(ref, []).append(i)
    # the payment columns as texts, a column at a time (a big night has 300k rows)
    sources, sheets, rows = _texts(column("source_file")), _texts(column("sheet")), column("row")
    entities, is_refs = column("entity"), column("entity_is_ref")
    amounts, currencies = column("amount_cents"), _texts(column("currency"))
    overrides = _texts(column("distribution_date_override"))
    notifies = _texts(column("notify"))
    names, vehicles = column("distribution_name"), column("vehicle")
    dates, zones = column("distribution_date"), column("distribution_timezone")
    known: dict[tuple[Any, Any], str | Ref] = {}  # one placeholder per investor, not per row

    def entity_of(value: Any, is_ref: Any) -> str | Ref:
        key = (value, is_ref)
        if key not in known:
            known[key] = _entity_of(value, is_ref, state, roster)
        return known[key]

    out: list[PlannedDistribution] = []
    for ref, members in groups.items():
        first = members[0]
        payments = []
        for i in members:
            notify_text = notifies[i]
            notify = (
                tuple(_contact_of(n.strip(), state) for n in notify_text.split(";") if n.strip())
                if notify_text
                else ()
            )
            payments.append(
                PlannedPayment(  # source file, sheet, row, entity, cents, currency, override
                    sources[i] or file.source_file,
                    sheets[i] or "",
                    int(rows[i] or 0),
                    entity_of(entities[i], is_refs[i]),
                    int(amounts[i]),
                    currencies[i] or "USD",
                    overrides[i],
                    notify,
                )
            )
        out.append(
            PlannedDistribution(
                file_hash=file.file_hash,
                source_file=file.source_file,
                external_reference=ref,
                name=_text(names[first]) or "",
                vehicle=_text(vehicles[first]) or "",
                distribution_date=_text(dates[first]) or "",
                distribution_timezone=_text(zones[first]) or "UTC",
                payments=tuple(payments),
                action="create",
            )
        )
    return out


def _payment_signature(
    entity: str | Ref,
    amount: int,
    currency: str,
    override: str | None,
    notify: Sequence[str | Ref],
) -> tuple[str, int, str, str, tuple[str, ...]]:
    when = _instant(override)
    contacts = tuple(sorted({str(c) for c in notify}))
    return (str(entity), amount, currency.upper(), when.isoformat() if when else "", contacts)


def same_content(planned: PlannedDistribution, existing: ServiceDistribution) -> str | None:
    """None when the service's distribution matches the sheet's; else what differs."""
    found = difference(planned, existing)
    return None if found is None else found[0]


def difference(
    planned: PlannedDistribution, existing: ServiceDistribution
) -> tuple[str, int | None, str | None] | None:
    """None when the service's distribution matches the sheet's; else what differs, the Excel
    row of the first sheet payment it concerns and its canonical column (``entity``,
    ``amount``, ``vehicle``…; None when no one column says it)."""
    first = planned.payments[0].row if planned.payments else None
    if planned.name != existing.name:
        return (
            f"distribution name differs: sheet {planned.name!r}, service {existing.name!r}",
            first,
            "distribution_name",
        )
    if planned.vehicle != existing.vehicle:
        return (
            f"vehicle differs: sheet {planned.vehicle}, service {existing.vehicle}",
            first,
            "vehicle",
        )
    if _instant(planned.distribution_date) != _instant(existing.distribution_date):
        return (
            f"distribution date differs: sheet {planned.distribution_date}, "
            f"service {existing.distribution_date}",
            first,
            "distribution_date",
        )
    if planned.distribution_timezone != existing.distribution_timezone:
        return (
            f"distribution timezone differs: sheet {planned.distribution_timezone}, "
            f"service {existing.distribution_timezone}",
            first,
            "distribution_timezone",
        )
    sheet = sorted(_signature(p) for p in planned.payments)
    service = sorted(_signature(p) for p in existing.payments)
    if [s[:4] for s in sheet] == [s[:4] for s in service] and sheet != service:
        only_sheet, _ = _unmatched(planned, existing)
        return (
            "notifications differ: the payments notify other contacts than the sheet names",
            only_sheet[0].row if only_sheet else first,
            "notify",
        )
    if sheet != service:
        return _payments_differ(planned, existing, first)
    return None


def _signature(p: PlannedPayment | ServicePayment) -> tuple[str, int, str, str, tuple[str, ...]]:
    return _payment_signature(
        p.entity, p.amount_cents, p.currency, p.distribution_date_override, p.notify
    )


def _unmatched(
    planned: PlannedDistribution, existing: ServiceDistribution
) -> tuple[list[PlannedPayment], list[ServicePayment]]:
    """The sheet's payments the service lacks (in sheet order), and the service's the sheet
    lacks."""
    left = list(existing.payments)
    signatures = [_signature(q) for q in left]
    only_sheet: list[PlannedPayment] = []
    for p in planned.payments:
        mine = _signature(p)
        if mine in signatures:
            at = signatures.index(mine)
            del left[at], signatures[at]
        else:
            only_sheet.append(p)
    return only_sheet, left


def _show_entity(entity: str | Ref) -> str:
    """An entity as the analyst wrote it: a reference placeholder shows its reference."""
    if isinstance(entity, Ref):
        return f"{entity.key} (no entity at the service has this reference)"
    return entity


def _payments_differ(
    planned: PlannedDistribution, existing: ServiceDistribution, first: int | None
) -> tuple[str, int | None, str | None]:
    """The first payment of the sheet the service lacks, beside the first the service holds
    that the sheet lacks: the field that differs on both sides, money in dollars (issue 43: a
    conflict says what differs, not two equal totals in cents)."""
    only_sheet, left = _unmatched(planned, existing)
    ours = sum(p.amount_cents for p in planned.payments)
    theirs = sum(p.amount_cents for p in existing.payments)
    counts = (
        f"sheet {len(planned.payments)} payment(s) totalling {format_cents(ours)}, "
        f"service {len(existing.payments)} totalling {format_cents(theirs)}"
    )
    if not left:
        extra = only_sheet[0]
        return (
            f"payments differ: row {extra.row} pays {_show_entity(extra.entity)} "
            f"{format_cents(extra.amount_cents)}, which the service's distribution "
            f"{existing.id} does not hold ({counts})",
            extra.row,
            None,
        )
    if not only_sheet:
        missing = left[0]
        return (
            f"payments differ: the service's distribution {existing.id} also pays "
            f"{missing.entity} {format_cents(missing.amount_cents)}, which the sheet does not "
            f"({counts})",
            first,
            None,
        )
    ps, sp = only_sheet[0], left[0]
    fields: list[tuple[str, str]] = []
    if str(ps.entity) != sp.entity:
        fields.append(("entity", f"entity: sheet {_show_entity(ps.entity)}, service {sp.entity}"))
    if ps.amount_cents != sp.amount_cents:
        fields.append(
            (
                "amount",
                f"amount: sheet {format_cents(ps.amount_cents)}, "
                f"service {format_cents(sp.amount_cents)}",
            )
        )
    if ps.currency.upper() != sp.currency.upper():
        fields.append(("currency", f"currency: sheet {ps.currency}, service {sp.currency}"))
    if _instant(ps.distribution_date_override) != _instant(sp.distribution_date_override):
        fields.append(
            (
                "distribution_date_override",
                f"date override: sheet {ps.distribution_date_override or 'none'}, "
                f"service {sp.distribution_date_override or 'none'}",
            )
        )
    if not fields:
        fields.append(("notify", "the notified contacts differ"))
    more = f" (and {len(only_sheet) - 1} more row(s))" if len(only_sheet) > 1 else ""
    return (
        f"payments differ: row {ps.row}{more} against the service's distribution "
        f"{existing.id}: {'; '.join(text for _, text in fields)} ({counts})",
        ps.row,
        fields[0][0],
    )


def _classify(
    distributions: list[PlannedDistribution], state: ServiceState
) -> list[PlannedDistribution]:
    seen: dict[str, PlannedDistribution] = {}
    out = []
    for d in distributions:
        existing = state.distributions_by_ref.get(d.external_reference)
        if existing is not None and existing.status == "cancelled":
            # never "already there": a person cancelled it; sending it again is their decision
            d = replace(
                d,
                action="conflict",
                existing_id=existing.id,
                reason="cancelled at the service; to send it again, give it a new "
                "external_reference",
            )
        elif existing is not None:
            diff = difference(d, existing)
            if diff is None:
                d = replace(d, action="link", existing_id=existing.id)
            else:
                text, row, column = diff
                d = replace(
                    d,
                    action="conflict",
                    existing_id=existing.id,
                    reason=text,
                    conflict_row=row,
                    conflict_column=column,
                )
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


def _held_investors(
    files: Sequence[FileInput], state: ServiceState, distributions: Sequence[PlannedDistribution]
) -> tuple[HeldInvestor, ...]:
    """Roster investors whose reference the service lacks but whose exact name and type one
    existing entity carries: probably the same investor (issue: never make one twice)."""
    out: list[HeldInvestor] = []
    for f in files:
        seen: set[str] = set()
        for e in _entity_rows(f):
            ref = _pick(e, "entity_external_reference", "external_reference")
            name = _pick(e, "entity_name", "name")
            kind = _pick(e, "entity_type", "type")
            if not ref or not name or not kind or ref in seen or ref in state.entities_by_ref:
                continue
            seen.add(ref)
            matches = state.entities_by_name.get((name, kind), ())
            if len(matches) != 1:
                continue
            paying = tuple(
                sorted(
                    (d.file_hash, d.external_reference)
                    for d in distributions
                    if d.action == "create"
                    and any(p.entity == Ref("entity", ref) for p in d.payments)
                )
            )
            out.append(
                HeldInvestor(f.file_hash, f.source_file, ref, name, kind, matches[0], paying)
            )
    return tuple(out)
