"""Dates as analysts write them, beyond ISO: year first with slashes, month names, and day and
month in figures — whose order (`DateOrder`) is declared, settled by the value or its column,
or else an error naming both readings (never a guess).

``03/04/2027`` is 3 April to an analyst in London and 4 March to one in New York. It is read
in the order the organization declares (``FUNDPIPE_DATE_ORDER``, passed down as ``order`` with
``declared``), else the only reading there is (``15/12/2026``: 15 is no month; ``04/04/2027``:
the same either way), else the order the rest of the same column proves (`column_date_order`:
another value with its first number over 12 proves day first, its second over 12 month first;
a column proving both settles nothing). Year-first dates and month names are never ambiguous.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: a wall-clock time after a date, 24-hour or with AM/PM (shared by the other written forms)
_TIME = r"(?:,?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?)?$"
#: year first with slashes or dots: 2026/12/15 (never read day first)
_YMD = re.compile(r"^(\d{4})([/.])(\d{1,2})\2(\d{1,2})" + _TIME)
#: day and month in figures, year last: 03/04/2027, 3.4.2027, 03-04-2027 (order: `DateOrder`)
_DAY_MONTH = re.compile(r"^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})" + _TIME)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_ORDINAL = r"(?:st|nd|rd|th)?"
#: 3 April 2027, 3-Apr-2027, 3rd Apr. 2027
_DAY_NAME = re.compile(r"^(\d{1,2})" + _ORDINAL + r"[\s-]+([A-Za-z]+)\.?,?[\s-]+(\d{4})" + _TIME)
#: April 3, 2027; Apr 3 2027
_NAME_DAY = re.compile(r"^([A-Za-z]+)\.?\s+(\d{1,2})" + _ORDINAL + r",?\s+(\d{4})" + _TIME)

#: How day and month written in figures are read: ``mdy`` (12/15/2026, US) or ``dmy``
#: (15/12/2026); None: by the value itself or its column, else an error (see the module doc).
DateOrder = Literal["mdy", "dmy"]


class AmbiguousOrder(Exception):
    """Day and month in figures that could be read either way."""


class InvalidDate(Exception):
    """Text that cannot be read as a date (the reason says why)."""


def _clock(h: str | None, mi: str | None, s: str | None, ampm: str | None) -> str:
    """``HH:MM:SS`` of a written time (midnight when there is none)."""
    hour = int(h or 0)
    if ampm:
        if not 1 <= hour <= 12:
            raise InvalidDate("the hour must be 1-12 with AM/PM")
        hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
    return f"{hour:02d}:{mi or '00'}:{s or '00'}"


def _spelled(day: int, month: int, year: str) -> str:
    return f"{day} {_MONTH_NAMES[month - 1]} {year}"


def _day_month(
    text: str, first: int, second: int, year: str, order: DateOrder | None, declared: bool
) -> tuple[int, int]:
    """(month, day) of a date written with day and month in figures (see `DateOrder`)."""
    if first == 0 or second == 0:
        raise InvalidDate("0 is neither a day nor a month")
    if declared:
        month, day = (first, second) if order == "mdy" else (second, first)
        if month > 12:
            spelled = "month/day/year" if order == "mdy" else "day/month/year"
            raise InvalidDate(
                f"FUNDPIPE_DATE_ORDER={order} reads dates as {spelled} and {month} is not a month"
            )
        return month, day
    if first > 12 and second > 12:
        raise InvalidDate(f"neither {first} nor {second} is a month")
    if first > 12:
        return second, first
    if second > 12 or first == second or order == "mdy":
        return first, second
    if order == "dmy":
        return second, first
    day_first, month_first = _spelled(first, second, year), _spelled(second, first, year)
    date_part = text.split()[0].rstrip(",")
    raise AmbiguousOrder(
        f"{date_part} could be {day_first} (day first) or {month_first} (month first); write "
        f"it year first ({year}-{second:02d}-{first:02d} or {year}-{first:02d}-{second:02d}) "
        "or set FUNDPIPE_DATE_ORDER=dmy or mdy"
    )


def written_to_iso(text: str, order: DateOrder | None, *, declared: bool) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS`` of a date written year first with ``/`` or ``.``, with a month
    name, or with day and month in figures (read by ``order``); None for any other form.

    Raises `AmbiguousOrder` for figures that stay open, `InvalidDate` for text in one of these
    forms that is no date (``25/04/2027`` under a declared ``mdy``, ``3 Aprul 2027``).
    """
    m = _YMD.match(text)
    if m:
        y, _sep, mo, d, h, mi, s, ampm = m.groups()
        return f"{y}-{int(mo):02d}-{int(d):02d}T{_clock(h, mi, s, ampm)}"
    m = _DAY_MONTH.match(text)
    if m:
        a, _sep, b, y, h, mi, s, ampm = m.groups()
        clock = _clock(h, mi, s, ampm)
        month, day = _day_month(text, int(a), int(b), y, order, declared)
        return f"{y}-{month:02d}-{day:02d}T{clock}"
    named = _DAY_NAME.match(text)
    if named:
        d, name, y, h, mi, s, ampm = named.groups()
    else:
        named = _NAME_DAY.match(text)
        if named:
            name, d, y, h, mi, s, ampm = named.groups()
    if named:
        named_month = _MONTHS.get(name.lower())
        if named_month is None:
            raise InvalidDate(f"{name!r} is not a month name")
        return f"{y}-{named_month:02d}-{int(d):02d}T{_clock(h, mi, s, ampm)}"
    return None


def column_date_order(texts: list[str]) -> DateOrder | None:
    """The order a column's dates in figures prove, or None (no proof, or proof both ways).

    A value with a first number over 12 (``25/04/2027``) proves day first; one with a second
    number over 12 (``04/25/2027``) proves month first. Looked at once per distinct text.
    """
    if not texts:
        return None
    fields = pc.extract_regex(
        pa.array(texts, type=pa.string()),
        r"^(?P<a>\d{1,2})(?P<s1>[/.-])(?P<b>\d{1,2})(?P<s2>[/.-])\d{4}(?:\s|$)",
    )
    valid = pc.is_valid(fields)
    if not pc.any(valid).as_py():
        return None
    shaped = pc.filter(fields, valid)
    # 25/04.2027 is no date: it proves nothing
    shaped = pc.filter(
        shaped, pc.equal(pc.struct_field(shaped, "s1"), pc.struct_field(shaped, "s2"))
    )
    first = pc.cast(pc.struct_field(shaped, "a"), pa.int32()).to_numpy()
    second = pc.cast(pc.struct_field(shaped, "b"), pa.int32()).to_numpy()
    # a number over 12 proves a day only where it can be one (13-31) beside a month (1-12)
    day_first = bool(((first > 12) & (first <= 31) & (second >= 1) & (second <= 12)).any())
    month_first = bool(((second > 12) & (second <= 31) & (first >= 1) & (first <= 12)).any())
    if day_first == month_first:
        return None
    return "dmy" if day_first else "mdy"


def is_open(text: str) -> bool:
    """Day and month in figures, both 12 or under and different: readable either way."""
    m = _DAY_MONTH.match(text)
    if m is None:
        return False
    first, second = int(m.group(1)), int(m.group(3))
    return first <= 12 and second <= 12 and first != second


def proving_example(texts: list[str], order: DateOrder) -> str:
    """A value of the column that proves ``order`` (its first number over 12 for day first)."""
    for text in texts:
        m = _DAY_MONTH.match(text)
        if m is None:
            continue
        first, second = int(m.group(1)), int(m.group(3))
        if order == "mdy":
            first, second = second, first
        if 12 < first <= 31 and 1 <= second <= 12:
            return text
    return ""


#: day and month in figures with a 24-hour time or none, as RE2 reads it (no back-references)
_FIGURES_NAMED = (
    r"^(?P<a>\d{1,2})(?P<s1>[/.-])(?P<b>\d{1,2})(?P<s2>[/.-])(?P<y>\d{4})"
    r"(?:\s+(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)?$"
)


def figures_as_iso(texts: list[str], order: DateOrder | None, *, declared: bool) -> list[str]:
    """``texts`` with every day-and-month-in-figures date whose reading is settled rewritten
    year first (``25/04/2027 09:00`` → ``2027-04-25 09:00:00``), in bulk; the rest unchanged.

    The vectorised date path reads the rewritten texts as ISO; a text left as it was (open,
    impossible, with AM/PM) goes to the scalar rules, which explain it. The choice of reading is
    `_day_month`'s, array-wise.
    """
    fields = pc.extract_regex(pa.array(texts, type=pa.string()), _FIGURES_NAMED)
    valid = pc.is_valid(fields).to_numpy(zero_copy_only=False)
    if not valid.any():
        return texts
    index = np.flatnonzero(valid)
    shaped = pc.filter(fields, pa.array(valid))

    def part(name: str) -> list[str | None]:
        values: list[str | None] = pc.struct_field(shaped, name).to_pylist()
        return values

    first = pc.cast(pc.struct_field(shaped, "a"), pa.int32()).to_numpy()
    second = pc.cast(pc.struct_field(shaped, "b"), pa.int32()).to_numpy()
    same_separator = np.asarray(
        pc.equal(pc.struct_field(shaped, "s1"), pc.struct_field(shaped, "s2")).to_numpy(
            zero_copy_only=False
        ),
        dtype=bool,
    )
    if declared:
        month_first = np.full(len(first), order == "mdy")
        settled = np.ones(len(first), dtype=bool)
    else:
        month_first = (second > 12) | (first == second) | (order == "mdy")
        month_first &= first <= 12
        settled = (first > 12) | month_first | (order == "dmy")
    month = np.where(month_first, first, second)
    day = np.where(month_first, second, first)
    settled &= same_separator & (first > 0) & (second > 0) & (month <= 12)
    out = list(texts)
    years, hours, minutes, seconds = part("y"), part("h"), part("mi"), part("s")
    for k in np.flatnonzero(settled):
        clock = f" {hours[k]}:{minutes[k]}:{seconds[k] or '00'}" if hours[k] else ""
        out[int(index[k])] = f"{years[k]}-{int(month[k]):02d}-{int(day[k]):02d}{clock}"
    return out
