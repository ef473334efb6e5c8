"""The shared datetime rules: ISO 8601 parsing, DST gaps and folds, offsets, rendering."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fundpipe.timerules import (
    AmbiguousTimeError,
    InvalidDateTimeError,
    NonexistentTimeError,
    OffsetMismatchError,
    UnknownTimeZoneError,
    parse_iso_datetime,
    render_in_zone,
    render_utc,
    resolve_in_zone,
)

NY = "America/New_York"


def test_plain_time_in_spring_forward_gap_is_rejected() -> None:
    with pytest.raises(NonexistentTimeError, match="does not exist"):
        resolve_in_zone("2026-03-08T02:30", NY)


def test_plain_time_in_fall_back_fold_is_rejected_as_ambiguous() -> None:
    with pytest.raises(AmbiguousTimeError, match="occurs twice"):
        resolve_in_zone("2026-11-01T01:30", NY)


@pytest.mark.parametrize(
    ("text", "utc_hour"), [("2026-11-01T01:30-04:00", 5), ("2026-11-01T01:30-05:00", 6)]
)
def test_fold_time_with_either_real_offset_is_accepted(text: str, utc_hour: int) -> None:
    assert resolve_in_zone(text, NY).astimezone(UTC).hour == utc_hour


def test_offset_must_match_the_zone_on_that_date() -> None:
    assert resolve_in_zone("2026-07-01T09:00:00-04:00", NY).utcoffset() == timedelta(hours=-4)
    with pytest.raises(OffsetMismatchError, match="UTC-04:00"):
        resolve_in_zone("2026-07-01T09:00:00-05:00", NY)


def test_z_is_valid_only_where_the_zone_is_at_utc() -> None:
    assert resolve_in_zone("2026-12-01T12:00:00Z", "Europe/London").utcoffset() == timedelta(0)
    assert resolve_in_zone("2026-12-01T12:00:00Z", "UTC").utcoffset() == timedelta(0)
    with pytest.raises(OffsetMismatchError):
        resolve_in_zone("2026-07-01T12:00:00Z", "Europe/London")  # BST, +01:00
    with pytest.raises(OffsetMismatchError):
        resolve_in_zone("2026-12-01T12:00:00Z", NY)


def test_plain_time_is_read_as_wall_clock_in_the_zone() -> None:
    instant = resolve_in_zone("2026-12-15T09:00", NY)
    assert instant.astimezone(UTC) == datetime(2026, 12, 15, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    "text", ["2026-12-15", "09:00", "yesterday", "2026-02-30T10:00", "2026-12-15T25:00", ""]
)
def test_non_datetimes_are_rejected(text: str) -> None:
    with pytest.raises(InvalidDateTimeError):
        parse_iso_datetime(text)


def test_iso_offsets_in_several_spellings_parse() -> None:
    assert parse_iso_datetime("2026-12-15T09:00:00+0530").offset == timedelta(hours=5, minutes=30)
    assert parse_iso_datetime("2026-12-15T09:00:00.250-05:00").wall.microsecond == 250_000
    assert parse_iso_datetime("2026-12-15T09:00:00z").is_z


def test_unknown_zone_is_rejected() -> None:
    with pytest.raises(UnknownTimeZoneError):
        resolve_in_zone("2026-12-15T09:00", "Mars/Olympus_Mons")


def test_rendering_uses_the_zone_offset_of_that_date() -> None:
    winter = datetime(2026, 12, 15, 14, tzinfo=UTC)
    summer = datetime(2026, 7, 15, 13, tzinfo=UTC)
    assert render_in_zone(winter, NY) == "2026-12-15T09:00:00-05:00"
    assert render_in_zone(summer, NY) == "2026-07-15T09:00:00-04:00"
    assert render_in_zone(winter, "UTC") == "2026-12-15T14:00:00+00:00"
    assert render_utc(winter) == "2026-12-15T14:00:00Z"


ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/St_Johns",
]


@settings(max_examples=100, deadline=None)
@given(
    instant=st.datetimes(
        min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1), timezones=st.just(UTC)
    ),
    zone=st.sampled_from(ZONES),
)
# both 01:00s of New York's fall-back night (EDT, then EST)
@example(instant=datetime(2000, 10, 29, 5, tzinfo=UTC), zone="America/New_York")
@example(instant=datetime(2000, 10, 29, 6, tzinfo=UTC), zone="America/New_York")
def test_rendered_dates_read_back_to_the_same_instant(instant: datetime, zone: str) -> None:
    rendered = render_in_zone(instant, zone)
    resolved = resolve_in_zone(rendered, zone)
    # compared in UTC: by PEP 495 an aware time inside a fall-back hour (01:00 EDT on
    # 2000-10-29) never equals a time of another zone, whatever the instants
    assert resolved.astimezone(UTC) == instant
    assert render_in_zone(resolved, zone) == rendered


@settings(max_examples=100, deadline=None)
@given(
    wall=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1)),
    zone=st.sampled_from(ZONES),
)
def test_plain_times_resolve_to_that_wall_time_or_are_rejected(wall: datetime, zone: str) -> None:
    try:
        resolved = resolve_in_zone(wall.isoformat(), zone)
    except (NonexistentTimeError, AmbiguousTimeError):
        return
    assert resolved.replace(tzinfo=None) == wall
