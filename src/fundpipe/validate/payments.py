"""What a distribution sheet's checks read, and the canonical payment frame built from it.

`ParsedDistributions` holds a checked sheet's columns in the compact forms the checks leave them
in (Arrow text, integer codes into a few distinct values, numpy cents); `canonical_payments`
turns a fully valid one into the canonical payment frame (docs/architecture.md). The checks
that fill it are in `fundpipe.validate.distribution` and `fundpipe.validate.cross_row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

#: Columns of the canonical payment frame, in order (docs/architecture.md).
CANONICAL_COLUMNS = [
    "source_file",
    "sheet",
    "row",
    "distribution_name",
    "vehicle",
    "external_reference",
    "distribution_date",
    "distribution_timezone",
    "entity",
    "entity_is_ref",
    "amount_cents",
    "currency",
    "distribution_date_override",
    "notify",
]


class CodedColumn:
    """A parsed text column, filled a slice at a time, kept as integer codes into its distinct
    values: 2 bytes a row while they are few (a million ISO date-times as text take 25 MiB),
    nothing for a column left blank."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.codes: np.ndarray | None = None
        self.names: dict[str, int] = {}

    def put(self, start: int, values: pd.Series) -> None:
        """Record ``values`` (<NA>: null) for rows ``start…``."""
        codes, distinct = pd.factorize(values)
        self.put_codes(start, codes, [str(v) for v in distinct])

    def put_codes(self, start: int, codes: np.ndarray, names: Sequence[str | None]) -> None:
        """Record rows ``start…`` as ``names[code]`` (-1 or a None name: null)."""
        ids = [-1 if v is None else self.names.setdefault(v, len(self.names)) for v in names]
        if all(i < 0 for i in ids):
            return
        wide = np.int16 if len(self.names) < 2**15 else np.int32
        if self.codes is None:
            self.codes = np.full(self.rows, -1, dtype=wide)
        elif np.dtype(wide).itemsize > self.codes.itemsize:
            self.codes = self.codes.astype(wide)
        self.codes[start : start + len(codes)] = np.array([*ids, -1], dtype=wide)[codes]

    def codes_and_names(self) -> tuple[np.ndarray, pa.Array]:
        """Codes per row (-1 = null) and the values they index."""
        names = pa.array(list(self.names), type=pa.large_string())
        if self.codes is None:
            return np.full(self.rows, -1, dtype=np.int16), names
        return self.codes, names

    def column(self) -> pa.ChunkedArray:
        """The column as Arrow (dictionary-encoded text)."""
        names = pa.array(list(self.names), type=pa.large_string())
        if self.codes is None:
            return pa.chunked_array([pa.nulls(self.rows, pa.dictionary(pa.int16(), names.type))])
        indices = pa.array(self.codes, mask=self.codes < 0)
        return pa.chunked_array([pa.DictionaryArray.from_arrays(indices, names)])


@dataclass
class ParsedDistributions:
    """What `check_distributions` read from a sheet, failing rows included (their parsed values
    null): Excel row numbers, the text columns as Arrow, cents and the entity kind as numpy."""

    #: Excel row number of each row
    rows: np.ndarray
    #: canonical text columns as written (name, vehicle, reference, entity)
    text: dict[str, pa.ChunkedArray]
    #: parsed text columns (zone, ISO dates, currency, notify) as codes into their values
    coded: dict[str, CodedColumn]
    #: the sum of the amounts that could be read, in cents (None: none could)
    read_cents: int | None
    #: cents per row (0 where ``amount_ok`` is False); None once a row issue rejects the sheet
    #: (its payments are never built)
    amount_cents: np.ndarray | None
    #: the entity is named by its external reference (not an ``ent_`` id)
    entity_is_ref: np.ndarray
    #: warnings for the sheet: (column, value, check, reason)
    notes: list[tuple[str, str, str, str]] = field(default_factory=list)


def canonical_payments(
    parsed: ParsedDistributions, *, source_file: str, sheet: str | None
) -> pd.DataFrame:
    """The canonical payment frame (docs/architecture.md) from a fully valid sheet."""
    # Built in one go from the columns' arrays (positional: the index is 0…n-1).
    columns: dict[str, object] = {
        "source_file": source_file,
        "sheet": sheet,
        "row": parsed.rows.astype("int64", copy=False),
    }
    for name in CANONICAL_COLUMNS[3:]:
        if name == "amount_cents":
            if parsed.amount_cents is None:
                raise ValueError("a rejected sheet has no canonical payments")
            columns[name] = parsed.amount_cents
        elif name == "entity_is_ref":
            columns[name] = parsed.entity_is_ref
        else:
            text = parsed.text[name] if name in parsed.text else parsed.coded[name].column()
            columns[name] = pc.cast(text, pa.large_string()).to_pandas().array
    return pd.DataFrame(columns, index=pd.RangeIndex(len(parsed.rows)))
