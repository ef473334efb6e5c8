"""The alerts' pure parts and the CLI around them (the server side is tests/e2e/test_on_call_alerts.py)."""

from __future__ import annotations

from datetime import time, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.app.cli.common import console
from fundpipe.app.prefect import alerts

runner = CliRunner()


def test_the_night_window_runs_from_the_cron_start_to_the_deadline_a_day_later() -> None:
    assert alerts.night_window("30 1 * * *", time(6, 0)) == timedelta(hours=28, minutes=30)
    assert alerts.night_window("0 23 * * *", time(6, 0)) == timedelta(hours=31)
    assert alerts.night_window("* * * * *", time(6, 0)) == timedelta(days=1)


def test_every_automation_notifies_through_the_block_with_a_templated_body() -> None:
    built = alerts.automations("00000000-0000-0000-0000-000000000001", timedelta(days=1), "06:00")
    assert [a.name for a in built] == [
        "fundpipe: a run failed or crashed",
        "fundpipe: no night completed",
        "fundpipe: a file was rejected",
        "fundpipe: an exception opened",
    ]
    bodies = " ".join(a.actions[0].body for a in built)
    for needle in (
        "deployment.name",
        "flow_run.state.message",
        "event.payload.file",
        "event.payload.id",
    ):
        assert needle in bodies
    assert str(built[1].trigger.posture.value) == "Proactive"


def test_alerts_need_a_prefect_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    result = runner.invoke(app, ["alerts", "install", "--webhook", "http://127.0.0.1:1/x"])
    assert result.exit_code == 2
    assert "PREFECT_API_URL" in result.output


def test_alerts_list_shows_what_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    found: list[dict[str, Any]] = [
        {
            "name": "fundpipe: a file was rejected",
            "enabled": True,
            "trigger": "Reactive: fundpipe.file.rejected",
            "actions": ["send-notification"],
            "description": "A dropped file was rejected.",
            "id": "x",
        }
    ]
    monkeypatch.setattr(alerts, "installed", lambda: found)
    monkeypatch.setattr(console, "width", 200)  # one line per automation
    result = runner.invoke(app, ["alerts", "list"])
    assert result.exit_code == 0, result.output
    assert "fundpipe: a file was rejected" in result.output
    assert "send-notification" in result.output
    monkeypatch.setattr(alerts, "installed", lambda: [])
    assert "no fundpipe alerts installed" in runner.invoke(app, ["alerts", "list"]).output
