"""A setting the environment gets wrong is one line and exit 2 naming the variable, the value and
the form expected — never pydantic's own words (the time, cron, zone and date-order settings)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect.client.schemas.schedules import CronSchedule
from pydantic import ValidationError
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.config import Settings
from fundpipe.errors import ExitCode

runner = CliRunner()

BAD = [
    ("FUNDPIPE_COMPLETE_BY", "25:00", "expected HH:MM on the 24-hour clock, e.g. 06:00"),
    ("FUNDPIPE_COMPLETE_BY", "nine", "expected HH:MM on the 24-hour clock, e.g. 06:00"),
    ("FUNDPIPE_COMPLETE_BY", "6:00", "expected HH:MM on the 24-hour clock, e.g. 06:00"),
    ("FUNDPIPE_NIGHTLY_CRON", "nonsense", "expected a cron of five fields (minute hour"),
    ("FUNDPIPE_NIGHTLY_CRON", "30 25 * * *", "its hour '25' is not within 0-23"),
    ("FUNDPIPE_NIGHTLY_TIMEZONE", "Nowhere", "expected an IANA time zone, e.g. America/New_York"),
    ("FUNDPIPE_REPORTING_TIMEZONE", "Mars/Base", "expected an IANA time zone"),
    ("FUNDPIPE_DATE_ORDER", "ymd", "expected mdy (12/15/2026) or dmy (15/12/2026), or unset"),
    ("FUNDPIPE_ORG_CONCURRENCY", "0", "greater than or equal to 1"),
]


@pytest.fixture(autouse=True)
def _no_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's `.env` in the working directory."""
    monkeypatch.chdir(tmp_path)


def _one_line_usage_error(output: str, variable: str, value: str, expected: str) -> None:
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: invalid settings: "), output
    assert f"{variable}='{value}': " in lines[0], output
    assert expected in lines[0], output
    for pydantic_words in ("Value error", "String should match", "pydantic", "Traceback"):
        assert pydantic_words not in output, output


@pytest.mark.parametrize(("variable", "value", "expected"), BAD)
def test_a_bad_setting_is_one_line_naming_variable_value_and_form(
    variable: str, value: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    result = runner.invoke(app, ["config"])
    assert result.exit_code == ExitCode.USAGE == 2, result.output
    _one_line_usage_error(result.output, variable, value, expected)


def test_alerts_install_with_a_bad_deadline_says_so_before_reaching_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing listens there
    monkeypatch.setenv("FUNDPIPE_COMPLETE_BY", "25:00")
    result = runner.invoke(app, ["alerts", "install", "--webhook", "http://127.0.0.1:9/hook"])
    assert result.exit_code == ExitCode.USAGE, result.output
    _one_line_usage_error(
        result.output, "FUNDPIPE_COMPLETE_BY", "25:00", "expected HH:MM on the 24-hour clock"
    )


@pytest.mark.parametrize("option", ["06", "0600", "06:00:30", "24:00"])
def test_alerts_install_takes_complete_by_in_the_form_of_the_setting(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing listens there
    result = runner.invoke(
        app, ["alerts", "install", "--webhook", "http://127.0.0.1:9/hook", "--complete-by", option]
    )
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.output.strip() == (
        f"error: --complete-by '{option}': expected HH:MM on the 24-hour clock, e.g. 06:00"
    )


def test_alerts_install_says_when_its_hour_is_not_the_night_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The night check runs at FUNDPIPE_COMPLETE_BY; an alert installed for another hour says
    so (and says nothing when they agree)."""
    from fundpipe.app.prefect import alerts

    installed: list[str] = []
    monkeypatch.setattr(
        alerts, "install", lambda webhook, night: installed.append(night.complete_by) or ([], [])
    )
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setenv("FUNDPIPE_COMPLETE_BY", "06:00")
    hook = ["alerts", "install", "--webhook", "http://127.0.0.1:9/hook"]
    result = runner.invoke(app, [*hook, "--complete-by", "07:30"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "records missed nights at FUNDPIPE_COMPLETE_BY (06:00), not 07:30" in said
    assert "FUNDPIPE_COMPLETE_BY=07:30" in said
    for same in ([], ["--complete-by", "06:00"]):
        result = runner.invoke(app, [*hook, *same])
        assert result.exit_code == 0, result.output
        assert "note:" not in result.output
    assert installed == ["07:30", "06:00", "06:00"]


@pytest.mark.parametrize(
    "cron", ["30 1 * * *", "*/15 1-5 * jan-mar mon-fri", "0 6 1,15 * 0-6/2", "@daily", "0 0 L * *"]
)
def test_a_cron_prefect_schedules_by_is_accepted(cron: str) -> None:
    CronSchedule(cron=cron)  # Prefect takes it ...
    assert (
        Settings(_env_file=None, orchestration={"nightly_cron": cron}).orchestration.nightly_cron
        == cron
    )  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "cron", ["nonsense", "30 1 * *", "61 1 * * *", "0 0 * 13 *", "0 0 */0 * *"]
)
def test_a_cron_prefect_refuses_is_refused_by_the_settings(cron: str) -> None:
    with pytest.raises(ValueError, match="Invalid cron"):
        CronSchedule(cron=cron)  # Prefect would refuse it at `fundpipe serve` ...
    with pytest.raises(ValidationError, match="expected a cron of five fields"):
        Settings(_env_file=None, orchestration={"nightly_cron": cron})  # type: ignore[call-arg]
