"""The distribution template: text frame → canonical payment rows, with every row-level issue.

Order of work: money and date-times are parsed (their own checks), the pandera model checks ids,
lengths, ranges and zones, then the cross-row rules: rows sharing an ``external_reference`` agree
on name, vehicle, date and zone; no entity twice in one distribution; at most 1,000 payments per
distribution. Entity resolution needs every file of the drop and happens in `fundpipe.validate.files`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fundpipe.sheets.datetimes import known_zones, parse_datetimes
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


def check_distributions(
    frame: pd.DataFrame,
    issues: IssueCollector,
    *,
    excel: bool,
    date_order: DateOrder | None = None,
) -> pd.DataFrame:
    """Parse and check a canonical-named text frame (index = Excel row); return the parsed frame.

    The returned frame has every canonical column except ``source_file``/``sheet``/``row`` and
    still holds failing rows (their parsed values are <NA>). ``date_order``: the order declared
    for day and month in figures (see `fundpipe.sheets.datetimes.DateOrder`). Its
    ``attrs["notes"]`` holds warnings for the sheet: (column, value, check, reason).
    """
    # Columns are gathered in a dict and framed once: inserting them one by one costs more than
    # the checks themselves on a small sheet (pandas rebuilds its column index per insert).
    columns: dict[str, pd.Series] = {
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
    columns["currency_written"] = written_currency

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

    dates = parse_datetimes(
        frame["distribution_date"], usable_zone, excel_serials=excel, date_order=date_order
    )
    issues.add(
        dates["check"].notna(),
        "distribution_date",
        frame["distribution_date"],
        dates["check"],
        dates["reason"],
    )
    columns["distribution_date"] = dates["iso"]

    override = parse_datetimes(
        frame["distribution_date_override"],
        usable_zone,
        excel_serials=excel,
        required=False,
        date_order=date_order,
    )
    issues.add(
        override["check"].notna(),
        "distribution_date_override",
        frame["distribution_date_override"],
        override["check"],
        override["reason"],
    )
    columns["distribution_date_override"] = override["iso"]

    notify = frame["notify"]
    if notify.notna().any():
        notify = notify.str.strip().str.replace(r"\s*[;,]\s*", "; ", regex=True).str.strip("; ")
        notify = notify.mask(notify.eq(""))
    columns["notify"] = notify

    entity = frame["entity"]
    columns["entity_is_ref"] = ~entity.str.fullmatch(ENTITY_ID).fillna(False).astype(bool)

    out = pd.DataFrame(columns, index=frame.index, copy=False)
    # The model sees the currency as written (trimmed, upper-cased), not the USD default.
    checked = pd.DataFrame(
        {**columns, "currency": written_currency.str.strip().str.upper()},
        index=frame.index,
        copy=False,
    )
    failure_issues(DistributionSheetModel, checked, issues)
    _cross_row(out, issues)
    out.attrs["notes"] = [
        _order_note(column, *parsed.attrs["date_order_from_column"])
        for column, parsed in (
            ("distribution_date", dates),
            ("distribution_date_override", override),
        )
        if "date_order_from_column" in parsed.attrs
    ]
    return out


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
    majority = np.full(int(group.max()) + 1 if len(group) else 0, -1, dtype=np.int64)
    if live.any():
        width = int(value.max()) + 1
        key = group[live].astype(np.int64) * width + value[live]
        # Hashed, not sorted (a million rows): the distinct keys come in order of first sight.
        codes, distinct = pd.factorize(key)
        counts = np.bincount(codes)
        first_seen = np.arange(len(distinct))
        groups, values = distinct // width, distinct % width
        # per group: most rows first, then the value seen first
        order = np.lexsort((first_seen, -counts, groups))
        ordered = groups[order]
        leader = np.r_[True, ordered[1:] != ordered[:-1]]
        majority[ordered[leader]] = values[order][leader]
    expected = np.where(group >= 0, majority[np.maximum(group, 0)], -1)
    return live & (value != expected), expected


def _cross_row(out: pd.DataFrame, issues: IssueCollector) -> None:
    ref = out["external_reference"]
    group, ref_names = pd.factorize(ref)
    if not len(ref_names):
        return
    for column in _AGREEING:
        values = out[column]
        codes, names = pd.factorize(values)
        disagree, expected = _majority_disagreement(group, codes)
        if disagree.any():
            mask = pd.Series(disagree, index=out.index)
            where = np.flatnonzero(disagree)
            reason = pd.Series(pd.NA, index=out.index, dtype="str")
            reason.iloc[where] = [
                f"rows of distribution {ref_names[g]} disagree on {column}; most say {names[e]}"
                for g, e in zip(group[where], expected[where], strict=True)
            ]
            issues.add(mask, column, values, "distribution_rows_agree", reason)

    entity_codes, _ = pd.factorize(out["entity"])
    live = (group >= 0) & (entity_codes >= 0)
    key = pd.Series(group.astype(np.int64) * (entity_codes.max() + 1) + entity_codes)
    twice = key.duplicated(keep="first").to_numpy() & live
    if twice.any():
        mask = pd.Series(twice, index=out.index)
        reason = pd.Series(pd.NA, index=out.index, dtype="str")
        where = np.flatnonzero(twice)
        reason.iloc[where] = [
            f"entity appears more than once in distribution {ref_names[g]}" for g in group[where]
        ]
        issues.add(mask, "entity", out["entity"], "entity_once_per_distribution", reason)

    sizes = np.bincount(group[group >= 0], minlength=len(ref_names))
    for code in np.flatnonzero(sizes > MAX_PAYMENTS_PER_DISTRIBUTION):
        name, size = ref_names[int(code)], int(sizes[code])
        issues.add_sheet_level(
            "external_reference",
            str(name),
            "payments_per_distribution",
            f"distribution {name} has {size:,} payments; at most "
            f"{MAX_PAYMENTS_PER_DISTRIBUTION:,} are allowed — split it",
        )


def canonical_payments(out: pd.DataFrame, *, source_file: str, sheet: str | None) -> pd.DataFrame:
    """The canonical payment frame (docs/architecture.md) from a fully valid parsed frame."""
    # Built in one go from the columns' arrays (positional: the new index is 0…n-1).
    columns: dict[str, object] = {
        "source_file": source_file,
        "sheet": sheet,
        "row": out.index.to_numpy(dtype="int64"),
    }
    for name in CANONICAL_COLUMNS[3:]:
        columns[name] = out[name].array
    columns["amount_cents"] = out["amount_cents"].to_numpy(dtype="int64")
    columns["entity_is_ref"] = out["entity_is_ref"].to_numpy(dtype=bool)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(out)))
