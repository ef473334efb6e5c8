"""Sheet date-times → ISO 8601 strings carrying the distribution zone's offset.

What analysts type is normalised to ISO first: ``2026-12-15`` (midnight), ``2026-12-15 9:00``,
``2026-12-15T09:00:00-05:00``, ``2026/12/15``, month names (``15 Dec 2026``, ``December 15,
2026 9:00 AM``), day and month in figures (``12/15/2026 9:00 AM``, ``15.12.2026``) and, for cells
read from XLSX, Excel date serials (``46371.375``).

Day and month in figures are read by `DateOrder` (`fundpipe.sheets.written_dates`): the order
the organization declares (``FUNDPIPE_DATE_ORDER``), else the only reading there is, else the
order the rest of the same column proves. A date that stays open (``03/04/2027`` with nothing
else to go by) is a row error naming both readings, never a guess.

The service's rules then apply through
`fundpipe.timerules` (shared with the sandbox): a naive time is wall-clock in the zone and must
exist exactly once there; an explicit offset must be the zone's offset at that instant; ``Z`` only
where the zone is at +00:00.

Work is done once per distinct (text, zone) pair and mapped back onto the column, so a
million-row sheet with a handful of distribution dates costs a handful of parses.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe import timerules
from fundpipe.sheets.frames import text_by_code
from fundpipe.sheets.written_dates import (
    AmbiguousOrder,
    DateOrder,
    InvalidDate,
    column_date_order,
    figures_as_iso,
    is_open,
    proving_example,
    written_to_iso,
)

_ISO_LOOSE = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|z|[+-]\d{2}:?\d{2})?$"
)
_SERIAL = re.compile(r"^\d{1,6}(?:\.\d+)?$")
_EXCEL_EPOCH = datetime(1899, 12, 30)

#: check name → reason template (``{zone}`` and ``{detail}`` are filled in)
DATETIME_CHECKS = {
    "datetime_required": "the date is blank",
    "datetime_invalid": "not a date-time fundpipe can read ({detail}); write e.g. 2026-12-15 09:00",
    "datetime_nonexistent": "{detail}",
    "datetime_ambiguous": "{detail}",
    "datetime_offset_mismatch": "{detail}",
    "date_order_ambiguous": "{detail}",
}


def _to_iso(
    text: str, *, excel_serials: bool, order: DateOrder | None = None, declared: bool = False
) -> str:
    """Normalise one analyst-typed date-time to an ISO 8601 string timerules can read.

    ``order``: how day and month in figures are read (declared by the organization when
    ``declared``, else proven by the column; see `fundpipe.sheets.written_dates`).
    """
    m = _ISO_LOOSE.match(text)
    if m:
        y, mo, d, h, mi, s, frac, off = m.groups()
        core = f"{y}-{int(mo):02d}-{int(d):02d}T{int(h or 0):02d}:{mi or '00'}:{s or '00'}"
        if frac:
            core += "." + frac[:6]
        return core + (off or "")
    written = written_to_iso(text, order, declared=declared)
    if written is not None:
        return written
    if excel_serials and _SERIAL.match(text):
        serial = float(text)
        if not 1 <= serial < 2958466:
            raise InvalidDate("the number is not an Excel date")
        value = _EXCEL_EPOCH + timedelta(days=serial)
        # Excel keeps times to the millisecond; round away float noise to the second.
        value = (value + timedelta(microseconds=500_000)).replace(microsecond=0)
        return value.isoformat()
    raise InvalidDate("unrecognised format")


def _resolve(
    text: str,
    zone: str,
    *,
    excel_serials: bool,
    order: DateOrder | None = None,
    declared: bool = False,
) -> tuple[str | None, str | None, str]:
    """(iso, check, reason) for one distinct pair; iso None when the pair is rejected."""
    try:
        iso = _to_iso(text, excel_serials=excel_serials, order=order, declared=declared)
        instant = timerules.resolve_in_zone(iso, zone)
    except AmbiguousOrder as exc:
        return None, "date_order_ambiguous", str(exc)
    except InvalidDate as exc:
        return None, "datetime_invalid", DATETIME_CHECKS["datetime_invalid"].format(detail=exc)
    except timerules.NonexistentTimeError as exc:
        return None, "datetime_nonexistent", str(exc)
    except timerules.AmbiguousTimeError as exc:
        return None, "datetime_ambiguous", str(exc)
    except timerules.OffsetMismatchError as exc:
        reason = str(exc)
        if text.rstrip().endswith(("Z", "z")):
            reason += "; Z is only allowed where the zone is at +00:00"
        return None, "datetime_offset_mismatch", reason
    except timerules.UnknownTimeZoneError as exc:
        return None, "known_time_zone", str(exc)
    except timerules.TimeRuleError as exc:
        return None, "datetime_invalid", DATETIME_CHECKS["datetime_invalid"].format(detail=exc)
    return timerules.render_in_zone(instant, zone), None, ""


#: Above this many distinct (text, zone) pairs the pandas path is used (see `resolve_many`).
VECTORISE_ABOVE = 2000

_ISO_NAMED = (
    r"^(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)?"
    r"\s*(?P<off>Z|z|[+-]\d{2}:?\d{2})?$"
)


def resolve_many(
    texts: list[str],
    zones: list[str],
    *,
    excel_serials: bool,
    vectorised: bool | None = None,
    order: DateOrder | None = None,
    declared: bool = False,
) -> list[tuple[str | None, str | None, str]]:
    """(iso, check, reason) for each distinct (text, zone) pair.

    ``order``/``declared``: how day and month in figures are read (`DateOrder`; declared by the
    organization, or proven by the column).

    Few pairs (the usual sheet: a handful of distribution dates) go through `fundpipe.timerules`
    one by one. Many pairs take a pandas path per zone — ``tz_localize`` with
    ``nonexistent="NaT"`` and both ``ambiguous`` answers to find gaps and folds, ``tz_convert``
    to check explicit offsets — and only the rows it cannot settle (other formats, errors whose
    reason must be spelled out) fall back to the scalar rules, so both paths agree exactly.
    """
    if vectorised is None:
        vectorised = len(texts) > VECTORISE_ABOVE
    if not vectorised:
        return [
            _resolve(t, z, excel_serials=excel_serials, order=order, declared=declared)
            for t, z in zip(texts, zones, strict=True)
        ]
    out: list[tuple[str | None, str | None, str] | None] = [None] * len(texts)
    # Day and month in figures whose reading is settled are rewritten year first, so the ISO
    # path below reads them too; open or odd ones stay as they are, for the scalar rules.
    parts = pa.array(figures_as_iso(texts, order, declared=declared), type=pa.string())
    fields = pc.extract_regex(parts, _ISO_NAMED)
    matched = np.asarray(pc.is_valid(fields).to_numpy(zero_copy_only=False), dtype=bool)
    frame = pd.DataFrame(
        {
            name: pd.Series(pc.struct_field(fields, name).to_pandas(), dtype="str")
            for name in ("y", "mo", "d", "h", "mi", "s", "off")
        }
    )
    numbers = frame[["y", "mo", "d", "h", "mi", "s"]].replace("", "0").fillna("0")
    naive = pd.to_datetime(
        pd.DataFrame(
            {
                "year": numbers["y"].astype("int64"),
                "month": numbers["mo"].astype("int64"),
                "day": numbers["d"].astype("int64"),
                "hour": numbers["h"].astype("int64"),
                "minute": numbers["mi"].astype("int64"),
                "second": numbers["s"].astype("int64"),
            }
        ),
        errors="coerce",
    )
    off = frame["off"].fillna("")
    has_off = off.ne("").to_numpy()
    sign = np.where(off.str.startswith("-").to_numpy(), -1, 1)
    digits = off.str.replace(r"[^0-9]", "", regex=True).str.pad(4, side="right", fillchar="0")
    off_minutes = sign * (
        digits.str.slice(0, 2).astype("int64").to_numpy() * 60
        + digits.str.slice(2, 4).astype("int64").to_numpy()
    )
    zone_series = pd.Series(zones)
    in_range = (
        numbers["h"].astype("int64").le(23)
        & numbers["mi"].astype("int64").le(59)
        & numbers["s"].astype("int64").le(59)
    ).to_numpy()
    usable = matched & in_range & naive.notna().to_numpy()
    for zone, index in zone_series[usable].groupby(zone_series[usable]).groups.items():
        rows = np.asarray(index)
        local = _localize_group(naive.iloc[rows], off_minutes[rows], has_off[rows], str(zone))
        if local is None:
            continue
        rendered = _render(local, naive.iloc[rows])
        for row, iso in zip(rows, rendered, strict=True):
            if isinstance(iso, str):
                out[row] = (iso, None, "")
    return [
        done
        if done is not None
        else _resolve(t, z, excel_serials=excel_serials, order=order, declared=declared)
        for done, t, z in zip(out, texts, zones, strict=True)
    ]


def _render(local: pd.Series, naive: pd.Series) -> pd.Series:
    """ISO text with the zone's offset (as `timerules.render_in_zone` writes it); <NA> where NaT."""
    wall = pd.Series(
        np.datetime_as_string(naive.to_numpy(dtype="datetime64[s]"), unit="s"), index=naive.index
    )
    seconds = (
        local.dt.tz_localize(None) - local.dt.tz_convert("UTC").dt.tz_localize(None)
    ).dt.total_seconds()
    labels = {
        v: timerules.format_offset(timedelta(seconds=int(v))) for v in seconds.dropna().unique()
    }
    rendered: pd.Series = (wall + seconds.map(labels)).where(local.notna())
    return rendered


def _localize_group(
    naive: pd.Series, off_minutes: np.ndarray, has_off: np.ndarray, zone: str
) -> pd.Series | None:
    """Aware times in ``zone`` for one zone's rows; NaT where a rule fails (scalar path explains)."""
    if not timerules.is_valid_zone(zone):
        return None
    count = len(naive)
    early = naive.dt.tz_localize(zone, ambiguous=np.ones(count, dtype=bool), nonexistent="NaT")
    late = naive.dt.tz_localize(zone, ambiguous=np.zeros(count, dtype=bool), nonexistent="NaT")
    plain_ok = early.notna() & early.eq(late)
    instant = (
        (naive - pd.to_timedelta(off_minutes, unit="m")).dt.tz_localize("UTC").dt.tz_convert(zone)
    )
    offset_ok = instant.dt.tz_localize(None).eq(naive)
    plain = pd.Series(~has_off, index=naive.index)
    local: pd.Series = early.where(plain & plain_ok, instant.where(~plain & offset_ok))
    return local


def parse_datetimes(
    text: pd.Series,
    zones: pd.Series,
    *,
    excel_serials: bool = False,
    required: bool = True,
    date_order: DateOrder | None = None,
    column_texts: list[str] | None = None,
) -> pd.DataFrame:
    """Resolve a column of date-times, each in the zone on the same row.

    ``column_texts``: when ``text`` is a slice of a longer column, the distinct (stripped)
    texts of the whole column: the order the column proves is read from all of them, so every
    slice reads day and month alike.

    ``date_order``: the order the organization declares for day and month in figures
    (``FUNDPIPE_DATE_ORDER``); None reads them by the value itself or the rest of this column,
    and rejects a date that stays open (``date_order_ambiguous``, naming both readings). The
    order the column proved, if any, is in ``attrs["date_order_from_column"]`` as (order, an
    example value).

    ``zones`` must already hold a zone name per row (blank → ``UTC`` is the caller's default)
    and rows whose zone is unknown must be <NA> there: they get no date and no date error
    (the zone itself is the error). Returns a frame on ``text``'s index with ``iso`` (ISO 8601
    with the zone's offset), ``check`` and ``reason`` (<NA> when fine).
    """
    if not required and text.isna().all():
        # An optional column left blank (the usual override column): nothing to parse.
        empty = pd.Series(pd.NA, index=text.index, dtype="str")
        return pd.DataFrame({"iso": empty, "check": empty, "reason": empty}, copy=False)
    values = text.astype("str").str.strip()
    blank = (values.isna() | values.eq("")).to_numpy(dtype=bool)
    text_codes, text_names = pd.factorize(values)
    zone_codes, zone_names = pd.factorize(zones.astype("str"))
    distinct_texts = [str(t) for t in text_names]
    whole = distinct_texts if column_texts is None else column_texts
    order, proof = column_order(whole, date_order)
    row_code, answers = datetime_codes(
        text_codes,
        distinct_texts,
        zone_codes,
        [str(z) for z in zone_names],
        blank,
        excel_serials=excel_serials,
        required=required,
        order=order,
        declared=date_order is not None,
    )
    # the columns are built from the codes in Arrow: no per-row Python strings
    out = pd.DataFrame(
        {
            "iso": text_by_code(row_code, [iso for iso, _, _ in answers], text.index),
            "check": text_by_code(row_code, [check for _, check, _ in answers], text.index),
            "reason": text_by_code(
                row_code,
                [reason if check is not None else None for _, check, reason in answers],
                text.index,
            ),
        },
        index=text.index,
        copy=False,
    )
    if proof is not None:
        out.attrs["date_order_from_column"] = proof
    return out


#: (iso, check, reason) of one distinct (text, zone) pair (see `resolve_many`)
Answer = tuple[str | None, str | None, str]


def column_order(
    whole: list[str], date_order: DateOrder | None
) -> tuple[DateOrder | None, tuple[DateOrder, str] | None]:
    """How a column's day and month in figures are read: the declared ``date_order``, else the
    order the column's distinct texts ``whole`` prove; and that proof (the order, an example),
    when it settled a date that was open."""
    if date_order is not None:
        return date_order, None
    order = column_date_order(whole)
    if order is None:
        return None, None
    proof = (order, proving_example(whole, order))
    return order, proof if any(is_open(t) for t in whole) else None


def datetime_codes(
    text_codes: np.ndarray,
    texts: list[str],
    zone_codes: np.ndarray,
    zones: list[str],
    blank: np.ndarray,
    *,
    excel_serials: bool,
    required: bool,
    order: DateOrder | None,
    declared: bool,
    known: dict[tuple[str, str], Answer] | None = None,
) -> tuple[np.ndarray, list[Answer]]:
    """`parse_datetimes` on codes: each row's answer as a code into a list of (iso, check,
    reason) answers, -1 where there is none (a blank optional cell, an unknown zone).

    ``text_codes`` index the (stripped) ``texts``, ``zone_codes`` the ``zones``; -1 is missing.
    Each distinct (text, zone) pair is resolved once; ``known``, when given, keeps the answers
    across calls (the slices of one column, read in one order), so a pair is resolved once
    for the whole column.
    """
    live = (text_codes >= 0) & (zone_codes >= 0) & ~blank
    width = len(zones) + 1
    # One code per distinct (text, zone) pair, without building tuples per row.
    pair = text_codes.astype(np.int64) * width + zone_codes
    codes, distinct = pd.factorize(pair[live])  # hashing, not sorting, a million rows
    keys = [(texts[int(p) // width], zones[int(p) % width]) for p in distinct]
    if known is None:
        known = {}
    missing = [key for key in dict.fromkeys(keys) if key not in known]
    if missing:
        known.update(
            zip(
                missing,
                resolve_many(
                    [t for t, _ in missing],
                    [z for _, z in missing],
                    excel_serials=excel_serials,
                    order=order,
                    declared=declared,
                ),
                strict=True,
            )
        )
    answers: list[Answer] = [known[key] for key in keys]
    row_code = np.full(len(text_codes), -1, dtype=np.int32)
    row_code[np.flatnonzero(live)] = codes
    if required:
        row_code[blank] = len(answers)
        answers.append((None, "datetime_required", DATETIME_CHECKS["datetime_required"]))
    return row_code, answers
