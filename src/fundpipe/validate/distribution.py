"""The distribution template: text columns → canonical payment rows, with every row-level issue.

Order of work, a slice of rows at a time (`CHUNK_ROWS`, each slice a pandas frame of its own):
money and date-times are parsed (their own checks), the pandera model checks ids, lengths,
ranges and zones; then, once over the whole sheet on integer codes, the cross-row rules: rows sharing an ``external_reference`` agree
on name, vehicle, date and zone; no entity twice in one distribution; at most 1,000 payments per
distribution. Entity resolution needs every file of the drop and happens in `fundpipe.validate.files`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.sheets.datetimes import known_zones, parse_datetimes
from fundpipe.sheets.frames import give_back_freed_memory
from fundpipe.sheets.money import MONEY_REASONS, parse_money
from fundpipe.sheets.written_dates import DateOrder
from fundpipe.validate.collect import IssueCollector
from fundpipe.validate.models import ENTITY_ID, DistributionSheetModel, failure_issues

#: Most payments one distribution may hold (service decision).
MAX_PAYMENTS_PER_DISTRIBUTION = 1000

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

_AGREEING = ("distribution_name", "vehicle", "distribution_date", "distribution_timezone")


#: Rows checked at a time: each slice of the sheet becomes a pandas frame of its own, checked
#: by the pandera model and freed before the next (a million-row sheet is never whole in pandas).
CHUNK_ROWS = 50_000

#: The parsed text columns kept per row (`_Coded`: integer codes into a few distinct values).
_PARSED_TEXT = (
    "currency",
    "distribution_timezone",
    "distribution_date",
    "distribution_date_override",
    "notify",
)


@dataclass
class ParsedDistributions:
    """What `check_distributions` read from a sheet, failing rows included (their parsed values
    null): Excel row numbers, the text columns as Arrow, cents and the entity kind as numpy."""

    #: Excel row number of each row
    rows: np.ndarray
    #: canonical text columns as written (name, vehicle, reference, entity)
    text: dict[str, pa.ChunkedArray]
    #: parsed text columns (zone, ISO dates, currency, notify) as codes into their values
    coded: dict[str, _Coded]
    #: the sum of the amounts that could be read, in cents (None: none could)
    read_cents: int | None
    #: cents per row (0 where ``amount_ok`` is False); None once a row issue rejects the sheet
    #: (its payments are never built)
    amount_cents: np.ndarray | None
    #: the entity is named by its external reference (not an ``ent_`` id)
    entity_is_ref: np.ndarray
    #: warnings for the sheet: (column, value, check, reason)
    notes: list[tuple[str, str, str, str]] = field(default_factory=list)


#: The template's canonical columns `check_distributions` reads (optional ones may be absent).
_COLUMNS = (
    "distribution_name",
    "vehicle",
    "external_reference",
    "distribution_date",
    "distribution_timezone",
    "entity",
    "amount",
    "currency",
    "distribution_date_override",
    "notify",
)


def check_distributions(
    table: pa.Table,
    rows: np.ndarray,
    issues: IssueCollector,
    *,
    excel: bool,
    date_order: DateOrder | None = None,
    chunk_rows: int | None = None,
) -> ParsedDistributions:
    """Parse and check a sheet's canonical-named text columns (Arrow; ``rows``: each row's Excel
    row number) and return what was read.

    The row-level checks (money, zones, date-times, the pandera model) run on slices of
    ``chunk_rows`` rows (default `CHUNK_ROWS`), each turned into pandas and let go before the next; the column-wide
    decisions (the order a date column proves) are taken once beforehand and the cross-row
    rules run once afterwards on integer codes of the few columns they compare, so issues name
    the same rows and cells as checking the sheet whole would. ``date_order``: the order
    declared for day and month in figures (see `fundpipe.sheets.datetimes.DateOrder`).
    """
    n = table.num_rows
    chunk_rows = chunk_rows or CHUNK_ROWS
    # optional columns the sheet lacks are blank columns of each slice (not of the sheet)
    absent = [c for c in _COLUMNS if c not in table.column_names]
    whole_dates = {
        column: _distinct_texts(table.column(column)) if column not in absent else []
        for column in ("distribution_date", "distribution_date_override")
    }
    cents = np.zeros(n, dtype=np.int64)
    cents_ok = np.zeros(n, dtype=bool)
    is_ref = np.zeros(n, dtype=bool)
    parsed = {column: _Coded(n) for column in _PARSED_TEXT}
    notes: dict[str, tuple[str, str]] = {}
    for start in range(0, n, chunk_rows):
        stop = min(start + chunk_rows, n)
        frame: pd.DataFrame = table.slice(start, stop - start).to_pandas()
        frame.index = pd.Index(rows[start:stop].astype(np.int64))
        for column in absent:
            frame[column] = pd.Series(pd.NA, index=frame.index, dtype="str")
        out = _check_rows(frame, issues, excel=excel, date_order=date_order, whole=whole_dates)
        del frame
        amount = out.pop("amount_cents")
        cents_ok[start:stop] = amount.notna().to_numpy()
        cents[start:stop] = amount.fillna(0).to_numpy(dtype=np.int64)
        is_ref[start:stop] = out.pop("entity_is_ref").to_numpy(dtype=bool)
        for column in _PARSED_TEXT:
            parsed[column].put(start, out[column])
        for column, proof in out.pop("notes", {}).items():
            notes.setdefault(column, proof)
        del out
        give_back_freed_memory()
    text = {
        column: table.column(column)
        for column in ("distribution_name", "vehicle", "external_reference", "entity")
    }
    give_back_freed_memory()
    read_cents = int(cents[cents_ok].sum()) if cents_ok.any() else None
    del cents_ok
    kept: np.ndarray | None = cents
    if len(issues):
        # rejected already: only what the cross-row rules and the entity check need stays
        kept = None
        for column in ("currency", "distribution_date_override", "notify"):
            del parsed[column]
    del cents
    result = ParsedDistributions(rows, text, parsed, read_cents, kept, is_ref)
    result.notes = [
        _order_note(column, *notes[column])
        for column in ("distribution_date", "distribution_date_override")
        if column in notes
    ]
    _cross_row(result, issues)
    give_back_freed_memory()
    return result


class _Coded:
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
        if not len(distinct):
            return
        ids = [self.names.setdefault(str(v), len(self.names)) for v in distinct]
        wide = np.int16 if len(self.names) < 2**15 else np.int32
        if self.codes is None:
            self.codes = np.full(self.rows, -1, dtype=wide)
        elif np.dtype(wide).itemsize > self.codes.itemsize:
            self.codes = self.codes.astype(wide)
        self.codes[start : start + len(values)] = np.array([*ids, -1], dtype=wide)[codes]

    def codes_and_names(self) -> tuple[np.ndarray, pa.Array]:
        """Codes per row (-1 = null) and the values they index (see `_codes`)."""
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


def _distinct_texts(column: pa.ChunkedArray) -> list[str]:
    """The distinct stripped, non-blank texts of a whole column."""
    distinct = pc.unique(column).drop_null().to_pylist()
    return list(dict.fromkeys(t for t in (str(v).strip() for v in distinct) if t))


def _check_rows(
    frame: pd.DataFrame,
    issues: IssueCollector,
    *,
    excel: bool,
    date_order: DateOrder | None,
    whole: dict[str, list[str]],
) -> dict[str, Any]:
    """The row-level checks of one slice (index = Excel row); its parsed columns."""
    columns: dict[str, Any] = {
        column: frame[column]
        for column in ("distribution_name", "vehicle", "external_reference", "entity", "amount")
    }

    money = parse_money(frame["amount"])
    bad_money = money["check"].notna()
    failed = money["check"][bad_money]
    issues.add(bad_money, "amount", frame["amount"], failed, failed.map(MONEY_REASONS))
    columns["amount_cents"] = money["cents"]

    written_currency = frame["currency"]
    columns["currency"] = written_currency.str.upper().fillna("USD")

    zone = frame["distribution_timezone"].fillna("UTC")
    zone_ok = known_zones(zone)
    columns["distribution_timezone"] = zone
    issues.add(
        ~zone_ok,
        "distribution_timezone",
        zone,
        "known_time_zone",
        "not a known IANA time zone (e.g. America/New_York, UTC)",
    )
    usable_zone = zone.where(zone_ok)

    notes: dict[str, tuple[str, str]] = {}
    for column, required in (("distribution_date", True), ("distribution_date_override", False)):
        dates = parse_datetimes(
            frame[column],
            usable_zone,
            excel_serials=excel,
            required=required,
            date_order=date_order,
            column_texts=whole[column],
        )
        issues.add(dates["check"].notna(), column, frame[column], dates["check"], dates["reason"])
        columns[column] = dates["iso"]
        if "date_order_from_column" in dates.attrs:
            notes[column] = dates.attrs["date_order_from_column"]

    notify = frame["notify"]
    if notify.notna().any():
        notify = notify.str.strip().str.replace(r"\s*[;,]\s*", "; ", regex=True).str.strip("; ")
        notify = notify.mask(notify.eq(""))
    columns["notify"] = notify

    entity = frame["entity"]
    columns["entity_is_ref"] = ~entity.str.fullmatch(ENTITY_ID).fillna(False).astype(bool)

    # The model sees the currency as written (trimmed, upper-cased), not the USD default.
    checked = pd.DataFrame(
        {**columns, "currency": written_currency.str.strip().str.upper()},
        index=frame.index,
        copy=False,
    )
    failure_issues(DistributionSheetModel, checked, issues)
    columns["notes"] = notes
    return columns


def _order_note(column: str, order: str, example: str) -> tuple[str, str, str, str]:
    """The warning that dates in figures of ``column`` were read in the order it proves."""
    spelled = "day/month/year" if order == "dmy" else "month/day/year"
    return (
        column,
        example,
        "date_order_from_column",
        f"dates with day and month in figures in this column were read {spelled}, as "
        f"{example} in the same column shows; set FUNDPIPE_DATE_ORDER={order} to declare it",
    )


def _majority_disagreement(group: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: does its value differ from its group's most common value, and that value's code.

    ``group`` and ``value`` are integer codes (-1 = missing, never flagged). Ties go to the value
    seen first, so a single odd row in a group of two or more is the one flagged.
    """
    live = (group >= 0) & (value >= 0)
    majority = np.full(int(group.max()) + 1 if len(group) else 0, -1, dtype=np.int32)
    width = int(value.max()) + 1 if len(value) else 0
    if live.any() and len(majority) * width <= _DENSE_KEYS:
        _dense_majority(group, value, live, width, majority)
    elif live.any():
        key = group[live].astype(np.int64) * width + value[live]
        # Hashed, not sorted (a million rows): the distinct keys come in order of first sight.
        codes, distinct = pd.factorize(key)
        del key
        counts = np.bincount(codes)
        del codes
        first_seen = np.arange(len(distinct))
        groups, values = distinct // width, distinct % width
        # per group: most rows first, then the value seen first
        order = np.lexsort((first_seen, -counts, groups))
        ordered = groups[order]
        leader = np.r_[True, ordered[1:] != ordered[:-1]]
        majority[ordered[leader]] = values[order][leader]
    expected = majority[np.maximum(group, 0)]
    expected[group < 0] = -1
    return live & (value != expected), expected


#: Most (distribution, value) pairs counted in plain arrays (else hashed): 1 Mi (8 MiB at most).
_DENSE_KEYS = 2**20


def _dense_majority(
    group: np.ndarray, value: np.ndarray, live: np.ndarray, width: int, majority: np.ndarray
) -> None:
    """`_majority_disagreement`'s majority per group, counting pairs in arrays indexed by the
    pair (few distributions and values: the usual sheet), without a per-row hash."""
    size = len(majority) * width
    key = group.astype(np.int32)
    key *= width
    key += value
    key[~live] = size  # one extra slot for the rows that count for nothing
    counts = np.bincount(key, minlength=size + 1)[:size]
    # the first row of each pair
    first = np.full(size + 1, len(group), dtype=np.int32)
    for at in range(0, len(key), CHUNK_ROWS):
        part = key[at : at + CHUNK_ROWS]
        np.minimum.at(first, part, np.arange(at, at + len(part), dtype=np.int32))
    del key
    pairs = np.flatnonzero(counts)
    groups, values = pairs // width, pairs % width
    # per group: most rows first, then the value seen first
    order = np.lexsort((first[pairs], -counts[pairs], groups))
    ordered = groups[order]
    leader = np.r_[True, ordered[1:] != ordered[:-1]]
    majority[ordered[leader]] = values[order][leader]


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Integer codes per row (-1 = null) and the distinct values they index, in order of
    first sight."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries()
    codes = np.empty(len(column), dtype=np.int32)
    at = 0
    for chunk in column.chunks:
        codes[at : at + len(chunk)] = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)
        at += len(chunk)
    names = column.chunk(0).dictionary if column.num_chunks else pa.array([], pa.string())
    return codes, names


def _texts(names: pa.Array, codes: np.ndarray) -> list[str]:
    """``names[code]`` for each code, as Python strings."""
    return [str(v) for v in pc.take(names, pa.array(codes, type=pa.int32())).to_pylist()]


def _cross_row(parsed: ParsedDistributions, issues: IssueCollector) -> None:
    group, ref_names = _codes(parsed.text["external_reference"])
    if not len(ref_names):
        return
    rows = parsed.rows
    for column in _AGREEING:
        if column in parsed.coded:
            codes, names = parsed.coded[column].codes_and_names()
        else:
            codes, names = _codes(parsed.text[column])
        disagree, expected = _majority_disagreement(group, codes)
        if disagree.any():
            where = np.flatnonzero(disagree)
            refs = _texts(ref_names, group[where])
            most = _texts(names, expected[where])
            issues.add_frame(
                pd.DataFrame(
                    {
                        "row": rows[where],
                        "column": column,
                        "value": _texts(names, codes[where]),
                        "check": "distribution_rows_agree",
                        "reason": [
                            f"rows of distribution {r} disagree on {column}; most say {m}"
                            for r, m in zip(refs, most, strict=True)
                        ],
                    }
                )
            )
        del codes
        del disagree, expected

    twice = _entities_twice(group, parsed.text["entity"])
    if len(twice):
        values = [str(v) for v in parsed.text["entity"].take(pa.array(twice)).to_pylist()]
        issues.add_frame(
            pd.DataFrame(
                {
                    "row": rows[twice],
                    "column": "entity",
                    "value": values,
                    "check": "entity_once_per_distribution",
                    "reason": [
                        f"entity appears more than once in distribution {r}"
                        for r in _texts(ref_names, group[twice])
                    ],
                }
            )
        )

    sizes = np.bincount(group[group >= 0], minlength=len(ref_names))
    for code in np.flatnonzero(sizes > MAX_PAYMENTS_PER_DISTRIBUTION):
        name, size = str(ref_names[int(code)]), int(sizes[code])
        issues.add_sheet_level(
            "external_reference",
            name,
            "payments_per_distribution",
            f"distribution {name} has {size:,} payments; at most "
            f"{MAX_PAYMENTS_PER_DISTRIBUTION:,} are allowed — split it",
        )


def _entities_twice(group: np.ndarray, entity: pa.ChunkedArray) -> np.ndarray:
    """Positions of rows whose entity an earlier row of the same distribution already names.

    Rows are taken distribution by distribution (a stable sort of the group codes, so each
    distribution's rows keep their order) in blocks of whole distributions: no hash of every
    entity of the sheet at once (a million distinct texts).
    """
    live = group[group >= 0]
    if np.all(live[1:] >= live[:-1]):
        del live
        return _entities_twice_in_runs(group, entity)
    del live
    order = np.argsort(group, kind="stable")
    order = order[group[order] >= 0]
    found: list[np.ndarray] = []
    at = 0
    while at < len(order):
        stop = min(at + CHUNK_ROWS, len(order))
        # extend to the end of the last distribution of the block
        last = group[order[stop - 1]]
        while stop < len(order) and group[order[stop]] == last:
            stop += 1
        block = order[at:stop]
        found.append(block[_twice_in_block(group[block], entity.take(pa.array(block)))])
        at = stop
    if not found:
        return np.array([], dtype=np.int64)
    return np.sort(np.concatenate(found))


def _twice_in_block(group: np.ndarray, entity: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Positions in a block of whole distributions whose (distribution, entity) an earlier row
    of the block already has; rows without either never count."""
    codes, _ = _codes(entity if isinstance(entity, pa.ChunkedArray) else pa.chunked_array([entity]))
    key = pd.Series(group.astype(np.int64) * (int(codes.max()) + 2) + codes)
    twice = key.duplicated(keep="first").to_numpy() & (codes >= 0) & (group >= 0)
    return np.flatnonzero(twice)


def _entities_twice_in_runs(group: np.ndarray, entity: pa.ChunkedArray) -> np.ndarray:
    """`_entities_twice` for the usual sheet, each distribution's rows together: blocks of
    whole distributions are plain slices of the column (no sort, no copy of the order)."""
    found: list[np.ndarray] = []
    n = len(group)
    at = 0
    while at < n:
        stop = min(at + CHUNK_ROWS, n)
        last = group[stop - 1]
        while stop < n and (group[stop] == last or group[stop] < 0):
            stop += 1
        found.append(_twice_in_block(group[at:stop], entity.slice(at, stop - at)) + at)
        at = stop
    return np.concatenate(found) if found else np.array([], dtype=np.int64)


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
