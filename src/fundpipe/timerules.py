"""Pure datetime rules shared by the sandbox and the sheet validator.

The service reads a distribution date either as a *plain* wall-clock time in the distribution's
IANA zone (``2026-12-15T09:00``) or as a time carrying an explicit UTC offset
(``2026-12-15T09:00:00-05:00``, ``2026-06-15T13:00:00Z``). The rules, with daylight saving:

- a plain time that does not exist in the zone (spring-forward gap, e.g. ``2026-03-08T02:30``
  in ``America/New_York``) is rejected: :class:`NonexistentTimeError`;
- a plain time that occurs twice (fall-back fold, e.g. ``2026-11-01T01:30`` in
  ``America/New_York``) is rejected as ambiguous: :class:`AmbiguousTimeError`;
- a time with an offset must carry exactly the zone's offset at that instant
  (:class:`OffsetMismatchError`); ``Z`` means ``+00:00`` and is therefore valid only where the
  zone is at UTC+0 at that instant.

Everything here is a function of its arguments (no clock, no I/O) and depends on the standard
library only (``zoneinfo``; on machines without system zone data the ``tzdata`` package supplies
it). Error tree::

    TimeRuleError (ValueError)
    ├── InvalidDateTimeError      text is not an ISO 8601 date-time
    ├── UnknownTimeZoneError      not an IANA zone name
    ├── NonexistentTimeError      plain wall time inside a DST gap
    ├── AmbiguousTimeError        plain wall time inside a DST fold
    └── OffsetMismatchError       explicit offset differs from the zone's offset
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "AmbiguousTimeError",
    "InvalidDateTimeError",
    "NonexistentTimeError",
    "OffsetMismatchError",
    "ParsedDateTime",
    "TimeRuleError",
    "UnknownTimeZoneError",
    "format_offset",
    "get_zone",
    "is_valid_zone",
    "localize",
    "parse_iso_datetime",
    "render_in_zone",
    "render_utc",
    "resolve_in_zone",
]


class TimeRuleError(ValueError):
    """Base of every datetime-rule failure; ``str(err)`` is a reason an analyst can read."""


class InvalidDateTimeError(TimeRuleError):
    """The text is not an ISO 8601 date-time (date and time, optional offset or ``Z``)."""


class UnknownTimeZoneError(TimeRuleError):
    """The zone name is not a known IANA time zone."""


class NonexistentTimeError(TimeRuleError):
    """A plain wall-clock time falls in a daylight-saving gap of the zone."""


class AmbiguousTimeError(TimeRuleError):
    """A plain wall-clock time occurs twice in the zone (daylight-saving fold)."""


class OffsetMismatchError(TimeRuleError):
    """An explicit UTC offset differs from the zone's offset at that instant."""


@dataclass(frozen=True, slots=True)
class ParsedDateTime:
    """An ISO 8601 date-time split into its wall-clock part and its optional offset.

    ``wall`` is naive; ``offset`` is None for a plain time; ``is_z`` tells whether the offset was
    written as ``Z``.
    """

    wall: datetime
    offset: timedelta | None
    is_z: bool


# A date, a `T` (or space) and at least hours and minutes; fromisoformat does the rest.
_SHAPE = re.compile(
    r"^\d{4}-?\d{2}-?\d{2}[T ]\d{2}(:?\d{2}(:?\d{2}([.,]\d{1,9})?)?)?"
    r"(Z|z|[+-]\d{2}(:?\d{2}(:?\d{2})?)?)?$"
)
_MAX_LEN = 64


def parse_iso_datetime(text: str) -> ParsedDateTime:
    """Parse an ISO 8601 date-time with or without a UTC offset (``Z`` allowed).

    Raises :class:`InvalidDateTimeError` for anything else (a date alone, a time alone, junk).
    """
    if not isinstance(text, str) or len(text) > _MAX_LEN or not _SHAPE.fullmatch(text):
        raise InvalidDateTimeError("not an ISO 8601 date-time (expected e.g. 2026-12-15T09:00:00)")
    normalized = (text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text).replace(",", ".")
    try:
        value = datetime.fromisoformat(normalized)
    except ValueError as exc:
        raise InvalidDateTimeError(
            "not a valid ISO 8601 date-time (check month, day, hour and minute ranges)"
        ) from exc
    offset = value.utcoffset()
    return ParsedDateTime(
        wall=value.replace(tzinfo=None), offset=offset, is_z=text.endswith(("Z", "z"))
    )


@lru_cache(maxsize=512)
def get_zone(name: str) -> ZoneInfo:
    """The IANA zone called `name`; :class:`UnknownTimeZoneError` when there is none."""
    if not isinstance(name, str) or not name or len(name) > 64 or name.startswith(("/", ".")):
        raise UnknownTimeZoneError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise UnknownTimeZoneError(f"unknown time zone {name!r}") from exc


def is_valid_zone(name: str) -> bool:
    """True when `name` is a known IANA time zone."""
    try:
        get_zone(name)
    except UnknownTimeZoneError:
        return False
    return True


def format_offset(offset: timedelta) -> str:
    """``+05:30`` / ``-05:00`` / ``+00:00`` for an offset (seconds kept only when present)."""
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{sign}{hours:02d}:{minutes:02d}"
    return f"{out}:{seconds:02d}" if seconds else out


def _gap_message(wall: datetime, zone: tzinfo, label: str) -> str:
    """Why `wall` does not exist in `zone`, and the nearest times that do (before and after)."""
    before = wall.replace(tzinfo=zone, fold=0).utcoffset() or timedelta(0)
    after = wall.replace(tzinfo=zone, fold=1).utcoffset() or timedelta(0)
    # the change happens at the first minute whose offset is the new one
    start = (wall - before).replace(tzinfo=UTC) - abs(after - before)
    change = start
    for _ in range(int(abs(after - before).total_seconds() // 60) * 2 + 2):
        if change.astimezone(zone).utcoffset() == after:
            break
        change += timedelta(minutes=1)
    gap_from = (change + before).replace(tzinfo=None)
    gap_to = (change + after).replace(tzinfo=None)
    last = gap_from - timedelta(minutes=1)
    return (
        f"{wall.isoformat()} does not exist in {label}: clocks jump from "
        f"{gap_from:%H:%M} to {gap_to:%H:%M} on {gap_from:%Y-%m-%d} (daylight-saving gap), so no "
        f"UTC offset makes it valid; the nearest valid times are {last:%Y-%m-%d %H:%M} "
        f"({format_offset(before)}) and {gap_to:%Y-%m-%d %H:%M} ({format_offset(after)})"
    )


def localize(wall: datetime, zone: tzinfo, zone_name: str = "") -> datetime:
    """Attach `zone` to a naive wall-clock time, rejecting DST gaps and folds.

    Returns an aware datetime in `zone`. Raises :class:`NonexistentTimeError` when the wall time
    is skipped by a spring-forward change, :class:`AmbiguousTimeError` when it occurs twice.
    """
    label = zone_name or str(zone)
    early = wall.replace(tzinfo=zone, fold=0)
    late = wall.replace(tzinfo=zone, fold=1)
    # Round-trip through UTC: a time in a gap comes back as a different wall time.
    back = early.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if back != wall.replace(fold=0):
        raise NonexistentTimeError(_gap_message(wall, zone, label))
    if early.utcoffset() != late.utcoffset():
        raise AmbiguousTimeError(
            f"{wall.isoformat()} occurs twice in {label} (daylight-saving fold); "
            "give the time with its UTC offset"
        )
    return early


def resolve_in_zone(text: str, zone_name: str) -> datetime:
    """Apply the service's rules to `text` read in `zone_name`; return the aware instant.

    A plain time is localized (gaps and folds rejected); a time with an offset must carry the
    zone's exact offset at that instant (``Z`` only where the zone is at +00:00). The result is
    an aware datetime in the zone.
    """
    zone = get_zone(zone_name)
    parsed = parse_iso_datetime(text)
    try:
        if parsed.offset is None:
            return localize(parsed.wall, zone, zone_name)
        instant = (parsed.wall - parsed.offset).replace(tzinfo=UTC)
        local = instant.astimezone(zone)
    except OverflowError as exc:
        raise InvalidDateTimeError("date-time out of the supported range") from exc
    expected = local.utcoffset()
    if expected != parsed.offset:
        given = "Z" if parsed.is_z else format_offset(parsed.offset)
        want = format_offset(expected if expected is not None else timedelta(0))
        raise OffsetMismatchError(
            f"offset {given} does not match {zone_name}, which is at UTC{want} on "
            f"{local.date().isoformat()}"
        )
    return local


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")


def render_in_zone(instant: datetime, zone_name: str) -> str:
    """Render an aware instant as ISO 8601 with the zone's offset, e.g. ``…T09:00:00-05:00``."""
    if instant.tzinfo is None:
        raise ValueError("render_in_zone needs an aware datetime")
    return _iso(instant.astimezone(get_zone(zone_name)))


def render_utc(instant: datetime) -> str:
    """Render an aware instant as ISO 8601 UTC with a ``Z`` suffix."""
    if instant.tzinfo is None:
        raise ValueError("render_utc needs an aware datetime")
    return _iso(instant.astimezone(UTC).replace(tzinfo=None)) + "Z"
