"""The distribution template: text columns → parsed columns, with every row-level issue.

Order of work, a slice of rows at a time (`CHUNK_ROWS`): money, zones, currency and date-times
are worked out in Arrow on codes into each column's distinct values (their own checks; a date
and zone pair is resolved once for the sheet), then the pandera model checks ids, lengths,
ranges and currency on a pandas frame of the slice's model columns; then the cross-row rules
run once over the whole sheet on integer codes
(`fundpipe.validate.cross_row`). What was read is a `ParsedDistributions`
(`fundpipe.validate.payments`, which also builds the canonical payment rows). Entity resolution
needs every file of the drop and happens in `fundpipe.validate.files`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe import timerules
from fundpipe.sheets.datetimes import Answer, column_order, datetime_codes
from fundpipe.sheets.frames import give_back_freed_memory
from fundpipe.sheets.money import MONEY_CHECKS, MONEY_REASONS, money_codes
from fundpipe.sheets.written_dates import DateOrder
from fundpipe.validate.collect import IssueCollector
from fundpipe.validate.cross_row import check_cross_row
from fundpipe.validate.models import DistributionSheetModel, failure_issues, id_shaped
from fundpipe.validate.payments import CodedColumn, ParsedDistributions

#: Rows checked at a time: each slice of the sheet is checked in Arrow, its model columns become
#: a pandas frame for the pandera model, and all is freed before the next slice (a million-row
#: sheet is never whole in pandas).
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
    ``chunk_rows`` rows (default `CHUNK_ROWS`), each let go before the next; the column-wide
    decisions (the order a date column proves) are taken once beforehand and the cross-row
    rules run once afterwards on integer codes of the few columns they compare, so issues name
    the same rows and cells as checking the sheet whole would. ``date_order``: the order
    declared for day and month in figures (see `fundpipe.sheets.datetimes.DateOrder`).
    """
    n = len(rows)
    chunk_rows = chunk_rows or CHUNK_ROWS
    # optional columns the sheet lacks are blank columns of each slice (not of the sheet)
    absent = [c for c in _COLUMNS if c not in columns]
    dates = {
        column: _DateColumn(
            column,
            _distinct_texts(columns[column]) if column not in absent else [],
            date_order,
            excel=excel,
        )
        for column in ("distribution_date", "distribution_date_override")
    }
    cents = np.zeros(n, dtype=np.int64)
    cents_ok = np.zeros(n, dtype=bool)
    is_ref = np.zeros(n, dtype=bool)
    parsed = {column: CodedColumn(n) for column in _PARSED_TEXT}
    for start in range(0, n, chunk_rows):
        stop = min(start + chunk_rows, n)
        part = {
            column: columns[column].slice(start, stop - start)
            if column not in absent
            else pa.chunked_array([pa.nulls(stop - start, pa.string())])
            for column in _COLUMNS
        }
        slice_cents, slice_ok, slice_is_ref = _check_rows(
            part, rows[start:stop], start, issues, dates=dates, parsed=parsed
        )
        del part
        cents[start:stop] = slice_cents
        cents_ok[start:stop] = slice_ok
        is_ref[start:stop] = slice_is_ref
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
        _order_note(column, *date.proof)
        for column, date in dates.items()
        if date.proof is not None and date.seen
    ]
    check_cross_row(result, issues, block_rows=chunk_rows)
    give_back_freed_memory()
    return result


def _distinct_texts(column: pa.ChunkedArray) -> list[str]:
    """The distinct stripped, non-blank texts of a whole column."""
    distinct = pc.unique(column).drop_null().to_pylist()
    return list(dict.fromkeys(t for t in (str(v).strip() for v in distinct) if t))


class _DateColumn:
    """One date column of a sheet checked in slices: the order its distinct texts prove, and
    the answer of each (text, zone) pair met so far, so that a pair is resolved once."""

    #: most pairs remembered (a column of a million distinct date-times is resolved per slice)
    MAX_KNOWN = 100_000

    def __init__(
        self, column: str, whole: list[str], date_order: DateOrder | None, *, excel: bool
    ) -> None:
        self.column = column
        self.required = column == "distribution_date"
        self.excel = excel
        self.declared = date_order is not None
        self.order, self.proof = column_order(whole, date_order)
        #: whether a slice had a date in it (an optional column left blank says nothing)
        self.seen = self.required
        self.known: dict[tuple[str, str], Answer] = {}

    def check(
        self,
        text: pa.ChunkedArray,
        zone_codes: np.ndarray,
        zones: list[str],
        rows: np.ndarray,
        issues: IssueCollector,
    ) -> tuple[np.ndarray, list[Answer]]:
        """Each row's answer (a code into the answers; -1: none) for one slice; its issues."""
        if not self.required and text.null_count == len(text):
            return np.full(len(text), -1, dtype=np.int32), []
        self.seen = True
        encoded = _encoded(text)
        texts = pc.utf8_trim_whitespace(encoded.dictionary)
        blank_text = np.asarray(
            pc.fill_null(pc.equal(texts, ""), True).to_numpy(zero_copy_only=False), dtype=bool
        )
        codes = _indices(encoded)
        blank = (codes < 0) | np.append(blank_text, True)[codes]
        if len(self.known) > self.MAX_KNOWN:
            self.known.clear()
        row_code, answers = datetime_codes(
            codes,
            [str(t) for t in texts.to_pylist()],
            zone_codes,
            zones,
            blank,
            excel_serials=self.excel,
            required=self.required,
            order=self.order,
            declared=self.declared,
            known=self.known,
        )
        failed = np.array([check is not None for _, check, _ in answers] + [False], dtype=bool)
        bad = np.flatnonzero(failed[row_code])
        if len(bad):
            at = row_code[bad]
            issues.add_rows(
                rows[bad],
                self.column,
                text.take(pa.array(bad)).to_pylist(),
                [answers[i][1] for i in at],
                [answers[i][2] for i in at],
            )
        return row_code, answers


def _encoded(values: pa.ChunkedArray) -> pa.DictionaryArray:
    """A slice's text as one dictionary array (codes into its distinct values)."""
    encoded = pc.dictionary_encode(
        values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    )
    assert isinstance(encoded, pa.DictionaryArray)
    return encoded


def _indices(encoded: pa.DictionaryArray) -> np.ndarray:
    """A dictionary array's codes as int32, -1 for null."""
    return np.asarray(
        pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int32
    )


_ZONE_REASON = "not a known IANA time zone (e.g. America/New_York, UTC)"


def _check_rows(
    part: dict[str, pa.ChunkedArray],
    rows: np.ndarray,
    start: int,
    issues: IssueCollector,
    *,
    dates: dict[str, _DateColumn],
    parsed: dict[str, CodedColumn],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row-level checks of one slice (Arrow; ``rows``: its Excel row numbers), its parsed
    columns recorded in ``parsed`` from row ``start``; returns its cents (0 where rejected),
    which amounts were read, and which entities are named by reference.

    Money, zones, currency and date-times are worked out in Arrow on codes into each column's
    distinct values; the pandera model then checks a pandas frame of the slice."""
    amount = part["amount"]
    cents, money_check = money_codes(amount)
    bad = np.flatnonzero(money_check >= 0)
    if len(bad):
        failed = [MONEY_CHECKS[c] for c in money_check[bad]]
        issues.add_rows(
            rows[bad],
            "amount",
            amount.take(pa.array(bad)).to_pylist(),
            failed,
            [MONEY_REASONS[str(c)] for c in failed],
        )
    amount_ok = money_check < 0

    currency = _encoded(part["currency"])
    currency_codes = _indices(currency)
    written = [
        None if c is None else str(c) for c in pc.utf8_upper(currency.dictionary).to_pylist()
    ]
    # blank → USD, as the payment is read (the model checks the currency as written)
    usd = np.where(currency_codes < 0, len(written), currency_codes)
    parsed["currency"].put_codes(start, usd, [*written, "USD"])

    zone = _encoded(pc.fill_null(part["distribution_timezone"], "UTC"))
    zone_codes = _indices(zone)
    zones = [str(z) for z in zone.dictionary.to_pylist()]
    known = np.array([timerules.is_valid_zone(z) for z in zones] + [False], dtype=bool)
    parsed["distribution_timezone"].put_codes(start, zone_codes, zones)
    bad = np.flatnonzero(~known[zone_codes])
    if len(bad):
        issues.add_rows(
            rows[bad],
            "distribution_timezone",
            [zones[c] for c in zone_codes[bad]],
            "known_time_zone",
            _ZONE_REASON,
        )
    # rows whose zone is unknown get no date and no date error (the zone is the error)
    usable = np.where(known[zone_codes], zone_codes, -1)

    for column, date in dates.items():
        row_code, answers = date.check(part[column], usable, zones, rows, issues)
        parsed[column].put_codes(start, row_code, [iso for iso, _, _ in answers])

    index = pd.Index(rows.astype(np.int64))
    notify = pd.Series(part["notify"].to_pandas().array, dtype="str", index=index)
    if notify.notna().any():
        notify = notify.str.strip().str.replace(r"\s*[;,]\s*", "; ", regex=True).str.strip("; ")
        notify = notify.mask(notify.eq(""))
        parsed["notify"].put(start, notify)

    entity = part["entity"]
    is_ref = ~id_shaped(entity, "ent_")

    # The model sees the currency as written (trimmed, upper-cased), not the USD default.
    checked = pa.table(
        {
            **{
                column: part[column]
                for column in (
                    "distribution_name",
                    "vehicle",
                    "external_reference",
                    "entity",
                    "amount",
                )
            },
            "currency": pc.utf8_upper(pc.utf8_trim_whitespace(part["currency"])),
            "distribution_timezone": zone.dictionary_decode(),
        }
    ).to_pandas()
    checked.index = index
    checked.insert(5, "amount_cents", pd.arrays.IntegerArray(cents.copy(), ~amount_ok))
    checked["notify"] = notify
    failure_issues(DistributionSheetModel, checked, issues)
    return cents, amount_ok, is_ref


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
