"""The distribution template: text columns → parsed columns, with every row-level issue.

Order of work, a slice of rows at a time (`CHUNK_ROWS`, each slice a pandas frame of its own):
money and date-times are parsed (their own checks), the pandera model checks ids, lengths,
ranges and zones; then the cross-row rules run once over the whole sheet on integer codes
(`fundpipe.validate.cross_row`). What was read is a `ParsedDistributions`
(`fundpipe.validate.payments`, which also builds the canonical payment rows). Entity resolution
needs every file of the drop and happens in `fundpipe.validate.files`.
"""

from __future__ import annotations

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
from fundpipe.validate.cross_row import check_cross_row
from fundpipe.validate.models import ENTITY_ID, DistributionSheetModel, failure_issues
from fundpipe.validate.payments import CodedColumn, ParsedDistributions

#: Rows checked at a time: each slice of the sheet becomes a pandas frame of its own, checked
#: by the pandera model and freed before the next (a million-row sheet is never whole in pandas).
CHUNK_ROWS = 50_000

#: The parsed text columns kept per row (`CodedColumn`: integer codes into a few distinct values).
_PARSED_TEXT = (
    "currency",
    "distribution_timezone",
    "distribution_date",
    "distribution_date_override",
    "notify",
)


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
    columns: dict[str, pa.ChunkedArray],
    rows: np.ndarray,
    issues: IssueCollector,
    *,
    excel: bool,
    date_order: DateOrder | None = None,
    chunk_rows: int | None = None,
) -> ParsedDistributions:
    """Parse and check a sheet's canonical-named text columns (Arrow; ``rows``: each row's Excel
    row number) and return what was read.

    ``columns`` is handed over: the columns only the row-level checks read (amount, dates, zone,
    currency, notify) are dropped from it once the slices are done, so their memory goes back
    before the cross-row rules run (the caller holds no other reference to them).

    The row-level checks (money, zones, date-times, the pandera model) run on slices of
    ``chunk_rows`` rows (default `CHUNK_ROWS`), each turned into pandas and let go before the next; the column-wide
    decisions (the order a date column proves) are taken once beforehand and the cross-row
    rules run once afterwards on integer codes of the few columns they compare, so issues name
    the same rows and cells as checking the sheet whole would. ``date_order``: the order
    declared for day and month in figures (see `fundpipe.sheets.datetimes.DateOrder`).
    """
    n = len(rows)
    chunk_rows = chunk_rows or CHUNK_ROWS
    # optional columns the sheet lacks are blank columns of each slice (not of the sheet)
    absent = [c for c in _COLUMNS if c not in columns]
    whole_dates = {
        column: _distinct_texts(columns[column]) if column not in absent else []
        for column in ("distribution_date", "distribution_date_override")
    }
    cents = np.zeros(n, dtype=np.int64)
    cents_ok = np.zeros(n, dtype=bool)
    is_ref = np.zeros(n, dtype=bool)
    parsed = {column: CodedColumn(n) for column in _PARSED_TEXT}
    notes: dict[str, tuple[str, str]] = {}
    for start in range(0, n, chunk_rows):
        stop = min(start + chunk_rows, n)
        frame: pd.DataFrame = pa.table(
            {column: values.slice(start, stop - start) for column, values in columns.items()}
        ).to_pandas()
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
        column: columns[column]
        for column in ("distribution_name", "vehicle", "external_reference", "entity")
    }
    columns.clear()
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
    check_cross_row(result, issues, block_rows=chunk_rows)
    give_back_freed_memory()
    return result


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
