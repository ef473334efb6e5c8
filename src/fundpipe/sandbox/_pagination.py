"""Cursor pagination: `page_…` cursors that encode a row's position (its sequence number).

`page=<c>` returns the rows after the cursor row in list order, `page_before=<c>` the rows before
it (the `limit` nearest ones), so walking back through `previous_page_url` yields exactly the
pages walked forward, however many rows were inserted meanwhile. Top-level lists run newest
first; nested lists (payments, notifications, payment instructions) in request order.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fundpipe.sandbox._errors import ApiError, InvalidParam, param

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
#: Page size of nested lists embedded in a record.
NESTED_LIMIT = 100

_CURSOR = re.compile(r"^page_c([0-9a-z]{1,12})$")
_CURSOR_SHAPE = re.compile(r"^page_[A-Za-z0-9]+$")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
#: A `limit` as it must be written: ASCII digits only (no sign, no spaces).
_PLAIN_DIGITS = re.compile(r"[0-9]{1,9}")
#: An integer with a sign or surrounding whitespace: 400 `parameter_invalid`.
_SIGNED_OR_PADDED = re.compile(r"\s*[+-]?[0-9]{1,9}\s*")


def encode_cursor(seq: int) -> str:
    """The cursor of position `seq` (≥ 0)."""
    if seq == 0:
        return "page_c0"
    out = ""
    while seq:
        seq, rem = divmod(seq, 36)
        out = _DIGITS[rem] + out
    return f"page_c{out}"


def decode_cursor(cursor: str) -> int | None:
    """The position in a cursor, or None when it is not one of ours."""
    match = _CURSOR.fullmatch(cursor)
    return None if match is None else int(match.group(1), 36)


@dataclass(frozen=True, slots=True)
class PageQuery:
    """The validated `limit`, `page` and `page_before` of a list request."""

    limit: int
    after: int | None
    before: int | None


def parse_page_query(query: Mapping[str, str]) -> PageQuery:
    """Validate the common list parameters; 400 with `query.<name>` paths on failure."""
    problems: list[InvalidParam] = []
    limit = DEFAULT_LIMIT
    raw_limit = query.get("limit")
    if raw_limit is not None:
        if _PLAIN_DIGITS.fullmatch(raw_limit):
            limit = int(raw_limit)
            if not 1 <= limit <= MAX_LIMIT:
                problems.append(
                    param(
                        "query.limit", "parameter_invalid", "limit must be from 1 to 100", raw_limit
                    )
                )
        elif _SIGNED_OR_PADDED.fullmatch(raw_limit):
            # An integer, but not as plain digits (`+5`, ` 5 `, `-5`): refused, never read.
            problems.append(
                param(
                    "query.limit",
                    "parameter_invalid",
                    "limit must be plain digits from 1 to 100",
                    raw_limit,
                )
            )
        else:
            problems.append(
                param(
                    "query.limit",
                    "parameter_invalid_integer",
                    "limit must be an integer from 1 to 100",
                    raw_limit,
                )
            )
    cursors: dict[str, int | None] = {"page": None, "page_before": None}
    for name in cursors:
        raw = query.get(name)
        if raw is None:
            continue
        position = decode_cursor(raw)
        if position is None:
            reason = (
                "not a cursor from a previous page URL"
                if _CURSOR_SHAPE.fullmatch(raw)
                else "must match ^page_[A-Za-z0-9]+$"
            )
            problems.append(param(f"query.{name}", "parameter_invalid", reason, raw))
        cursors[name] = position
    if query.get("page") is not None and query.get("page_before") is not None:
        problems.append(
            param(
                "query.page_before", "parameter_invalid", "page and page_before cannot be combined"
            )
        )
    if problems:
        raise ApiError(400, "Invalid list parameters.", problems[0].code, problems)
    return PageQuery(limit, cursors["page"], cursors["page_before"])


def list_envelope(
    data: list[Any],
    url: str,
    next_url: str | None,
    previous_url: str | None,
    *,
    legacy: bool = False,
) -> dict[str, Any]:
    """The list envelope (`has_more` mirrors `next_page_url`).

    `legacy`: the older form, `has_more` and `url` without the two page URLs (legacy
    pagination, see `fundpipe.sandbox._modes`).
    """
    if legacy:
        return {"object": "list", "data": data, "has_more": next_url is not None, "url": url}
    return {
        "object": "list",
        "data": data,
        "next_page_url": next_url,
        "previous_page_url": previous_url,
        "has_more": next_url is not None,
        "url": url,
    }


def _url(path: str, limit: int, key: str, seq: int, extra: Sequence[tuple[str, str]]) -> str:
    return f"{path}?" + urlencode([("limit", str(limit)), (key, encode_cursor(seq)), *extra])


def paginate(
    conn: sqlite3.Connection,
    table: str,
    where: str,
    args: Sequence[Any],
    page: PageQuery,
    path: str,
    *,
    newest_first: bool = True,
    extra_query: Sequence[tuple[str, str]] = (),
) -> tuple[list[sqlite3.Row], str | None, str | None]:
    """One page of `table` rows matching `where`: (rows, next_page_url, previous_page_url)."""
    forward_cmp, forward_order = ("<", "DESC") if newest_first else (">", "ASC")
    back_cmp, back_order = (">", "ASC") if newest_first else ("<", "DESC")
    limit = page.limit

    def fetch(extra: str, extra_args: Sequence[Any], order: str, count: int) -> list[sqlite3.Row]:
        return conn.execute(
            f"SELECT * FROM {table} WHERE {where}{extra} ORDER BY seq {order} LIMIT ?",
            (*args, *extra_args, count),
        ).fetchall()

    def exists(cmp: str, seq: int) -> bool:
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE {where} AND seq {cmp} ? LIMIT 1", (*args, seq)
        ).fetchone()
        return row is not None

    if page.before is None:
        if page.after is None:
            rows = fetch("", (), forward_order, limit + 1)
        else:
            rows = fetch(f" AND seq {forward_cmp} ?", (page.after,), forward_order, limit + 1)
        more_next = len(rows) > limit
        rows = rows[:limit]
        next_url = _url(path, limit, "page", rows[-1]["seq"], extra_query) if more_next else None
        prev_url = None
        if page.after is not None:
            if rows:
                if exists(back_cmp, rows[0]["seq"]):
                    prev_url = _url(path, limit, "page_before", rows[0]["seq"], extra_query)
            else:
                # Past the end: the previous page ends with the cursor row itself.
                edge = max(page.after - 1, 0) if newest_first else page.after + 1
                if exists(back_cmp, edge):
                    prev_url = _url(path, limit, "page_before", edge, extra_query)
        return rows, next_url, prev_url

    rows = fetch(f" AND seq {back_cmp} ?", (page.before,), back_order, limit + 1)
    more_prev = len(rows) > limit
    rows = list(reversed(rows[:limit]))
    prev_url = _url(path, limit, "page_before", rows[0]["seq"], extra_query) if more_prev else None
    next_url = None
    if rows:
        if exists(forward_cmp, rows[-1]["seq"]):
            next_url = _url(path, limit, "page", rows[-1]["seq"], extra_query)
    else:
        edge = page.before + 1 if newest_first else max(page.before - 1, 0)
        if exists(forward_cmp, edge):
            next_url = _url(path, limit, "page", edge, extra_query)
    return rows, next_url, prev_url
