"""Value helpers of the plan: blank/text/instant coercion, masking, references.

Part of :mod:`fundpipe.plan` (import the public ones from there).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from fundpipe.plan._model import FileInput, Ref
from fundpipe.sensitive import SENSITIVE_FIELDS, mask

#: Instruction fields shown only masked: the account number and the wire details.
SENSITIVE_KEYS = SENSITIVE_FIELDS


def display_body(value: Any) -> Any:
    """A body with placeholders shown as ``<entity:REF>`` and account numbers and wire
    details masked."""
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, dict):
        return {
            k: (mask_account(v) if k in SENSITIVE_KEYS else display_body(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [display_body(v) for v in value]
    return value


def mask_account(value: Any) -> Any:
    """``****1234`` for an account number (`fundpipe.sensitive.mask`); None stays None."""
    return None if value is None else mask(value)


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
    if type(value) is str:  # the common cases, without the NA checks
        return value.strip() or None
    if value is None:  # a column the row leaves empty
        return None
    return None if _blank(value) else str(value).strip()


def _texts(values: list[Any]) -> list[str | None]:
    """:func:`_text` of every value of a column; a column of texts, or of blanks only (NaN),
    without a call per value."""
    kinds = set(map(type, values))
    if kinds <= {str}:
        return [v.strip() or None for v in values]
    if kinds <= {float, type(None)} and all(v is None or math.isnan(v) for v in values):
        return [None] * len(values)
    return [_text(v) for v in values]


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
    # column by column: pandas' own records conversion boxes cell by cell (5x slower)
    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _entity_rows(f: FileInput) -> list[dict[str, Any]]:
    """The roster's entity rows of ``f`` as records (made once per file; not to be changed)."""
    return f.once("entity_rows", lambda file: _records(file.entities))


def _contact_rows(f: FileInput) -> list[dict[str, Any]]:
    """The roster's contact rows of ``f`` as records (made once per file; not to be changed)."""
    return f.once("contact_rows", lambda file: _records(file.contacts))


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def derived_reference(vehicle: str, name: str, distribution_date: str) -> str:
    """A stable ``external_reference`` for a sheet that gives none (same sheet → same ref)."""
    digest = hashlib.sha256(f"{vehicle}\x1f{name}\x1f{distribution_date}".encode()).hexdigest()
    return "FP-" + digest[:20].upper()
