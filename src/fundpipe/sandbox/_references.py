"""External references of entities and contacts: the public spec's array form, and the
uniqueness strict-interface mode enforces.

An element created with `external_references` (public forms) keeps every reference in the
`external_references` table and its first one in the record's `external_reference` column, so
either form can be rendered from either kind of row.

In strict mode a reference may name one entity (or one contact) of an organization only. A
create carrying a reference that an existing object of the same kind already has answers 409
`conflict`, one `invalid-params` entry per clash, each with `conflicts_with` — as the interface
documents it: "`conflicts_with` (optional string; for conflict errors, id of the existing
resource)". Two elements of one batch with the same reference (or one element listing it
twice) are taken: there is no existing object to name, and the public description allows it
(the interface says nothing); each element then carries it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from fundpipe.sandbox._errors import ApiError, InvalidParam, param
from fundpipe.sandbox._store import chunks, placeholders

_TABLES = {"entity": "entities", "contact": "contacts"}


def _element_references(element: dict[str, Any]) -> list[tuple[str, str]]:
    """(reference, field path suffix) of one validated element, in body order."""
    many: list[str] | None = element["external_references"]
    if many is not None:
        return [(ref, f"external_references.[{k}]") for k, ref in enumerate(many)]
    single: str | None = element["external_reference"]
    return [] if single is None else [(single, "external_reference")]


def store_references(
    conn: sqlite3.Connection,
    org: str,
    kind: str,
    ids: Sequence[str],
    clean: Sequence[dict[str, Any]],
) -> None:
    """Keep the array-form references of just-created objects (`kind`: entity or contact)."""
    rows = [
        (org, kind, owner, ref)
        for owner, element in zip(ids, clean, strict=True)
        for ref in element["external_references"] or ()
    ]
    if rows:
        conn.executemany(
            "INSERT INTO external_references (org, kind, owner, ref) VALUES (?, ?, ?, ?)", rows
        )


def _existing(
    conn: sqlite3.Connection, org: str, kind: str, refs: list[str]
) -> dict[str, list[str]]:
    """Reference → ids of the existing `kind` objects of `org` that carry it (creation order)."""
    table = _TABLES[kind]
    found: dict[str, list[str]] = {}
    for part in chunks(refs):
        marks = placeholders(len(part))
        rows = conn.execute(
            f"SELECT ref, owner, created FROM ("
            f"SELECT external_reference AS ref, id AS owner, seq AS created FROM {table} "
            f"WHERE org = ? AND external_reference IN ({marks}) "
            f"UNION SELECT r.ref, r.owner, o.seq FROM external_references r "
            f"JOIN {table} o ON o.id = r.owner "
            f"WHERE r.org = ? AND r.kind = ? AND r.ref IN ({marks})"
            f") ORDER BY created",
            (org, *part, org, kind, *part),
        )
        for ref, owner, _created in rows:
            owners = found.setdefault(ref, [])
            if owner not in owners:
                owners.append(owner)
    return found


def refuse_duplicates(
    conn: sqlite3.Connection, org: str, kind: str, clean: Sequence[dict[str, Any]]
) -> None:
    """Raise 409 when a reference of the batch is already taken by an existing object (one
    repeated within the batch is taken, see the module docstring)."""
    seen: set[str] = set()
    wanted: list[tuple[int, str, str]] = []
    for i, element in enumerate(clean):
        for ref, suffix in _element_references(element):
            seen.add(ref)
            wanted.append((i, ref, suffix))
    existing = _existing(conn, org, kind, sorted(seen))
    clashes: list[InvalidParam] = []
    for i, ref, suffix in wanted:
        for owner in existing.get(ref, ()):
            clash = param(
                f"body.[{i}].{suffix}",
                "conflict",
                f"an existing {kind} already has this reference",
                ref,
            )
            clash.conflicts_with = owner
            clashes.append(clash)
    if clashes:
        noun = "An entity" if kind == "entity" else "A contact"
        raise ApiError(
            409, f"{noun} with this external reference already exists.", "conflict", clashes
        )
