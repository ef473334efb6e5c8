"""Shared helpers of the endpoint modules: path ids, lookups in the acting organization."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from fundpipe.sandbox._checks import id_problem
from fundpipe.sandbox._errors import ApiError, not_found
from fundpipe.sandbox._pagination import list_envelope
from fundpipe.sandbox._store import chunks, placeholders

_TABLES = {
    "vehicle": "vehicles",
    "entity": "entities",
    "contact": "contacts",
    "financial_account": "financial_accounts",
}


def path_id(request: Request, name: str, kind: str) -> str:
    """The path parameter `name`, checked to be a `kind` id (400 `path.<name>` otherwise)."""
    value = str(request.path_params[name])
    problem = id_problem(kind, value, f"path.{name}")
    if problem is not None:
        raise ApiError(400, f"Invalid {kind} id.", problem.code, [problem])
    return value


def org_lookup(conn: sqlite3.Connection, org: str) -> Callable[[str, set[str]], set[str]]:
    """A reference checker: (kind, ids) → the ids among them that exist in `org`."""

    def lookup(kind: str, ids: set[str]) -> set[str]:
        found: set[str] = set()
        values = sorted(ids)
        for part in chunks(values):
            rows = conn.execute(
                f"SELECT id FROM {_TABLES[kind]} WHERE org = ? AND id IN ({placeholders(len(part))})",
                (org, *part),
            )
            found.update(row[0] for row in rows)
        return found

    return lookup


def one(conn: sqlite3.Connection, table: str, ident: str, org: str, what: str) -> sqlite3.Row:
    """The row `ident` of `table` in `org`; 404 when there is none."""
    row = conn.execute(f"SELECT * FROM {table} WHERE id = ? AND org = ?", (ident, org)).fetchone()
    if row is None:
        raise not_found(what, ident)
    result: sqlite3.Row = row
    return result


def created(path: str, data: list[Any], *, legacy: bool = False) -> tuple[int, Any]:
    """201 with a list envelope of the created records (`legacy`: legacy pagination form)."""
    return 201, list_envelope(data, path, None, None, legacy=legacy)


def rows_by_id(conn: sqlite3.Connection, table: str, ids: list[str]) -> list[sqlite3.Row]:
    """Rows of `table` for `ids`, in the order of `ids`."""
    found: dict[str, sqlite3.Row] = {}
    for part in chunks(ids):
        for row in conn.execute(
            f"SELECT * FROM {table} WHERE id IN ({placeholders(len(part))})", tuple(part)
        ):
            found[row["id"]] = row
    return [found[i] for i in ids]
