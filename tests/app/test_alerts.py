"""The alerts' pure parts and the CLI around them (the server side is tests/e2e/test_on_call_alerts.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.app.cli.common import console
from fundpipe.app.prefect import alerts

runner = CliRunner()


def test_the_check_at_the_deadline_names_each_organization_without_a_completed_night() -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from fundpipe.app.prefect.deadline import MISSED, deadline_of, missed, missed_event

    # the check's own scheduled time is the deadline, in the nightly's timezone
    scheduled = datetime(2026, 11, 25, 12, 0, 7, tzinfo=ZoneInfo("UTC"))
    deadline = deadline_of(scheduled, "America/New_York")
    assert (deadline.hour, deadline.minute, deadline.second) == (7, 0, 0)
    assert missed(["org_a", "org_b", "org_c"], {"org_b"}) == ["org_a", "org_c"]
    assert missed(["org_a"], ["org_a"]) == []
    name, resource, payload = missed_event("org_a", deadline)
    assert name == MISSED
    assert resource["prefect.resource.id"] == "fundpipe.night.org_a"
    assert payload["organization"] == "org_a"
    assert payload["complete_by"] == "07:00"
    assert payload["timezone"] == "America/New_York"
    assert payload["since"] == "2026-11-24T07:00:00-05:00"


def test_the_check_looks_for_every_organization_the_nightly_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded nightly runs both demo organizations: the deadline check expects a night of
    each (their folders), not of the demo one alone; a configured list wins; nothing is moved."""
    from fundpipe.app.prefect.deadline import organizations_to_check
    from fundpipe.config import Settings

    for name in ("FUNDPIPE_ORGS", "FUNDPIPE_ORGS_FILE", "FUNDPIPE_ORG_ID"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(data_dir=tmp_path)
    assert organizations_to_check(settings) == ["org_demo"]  # no night has run yet
    for org in ("org_demob", "org_demo"):
        (tmp_path / "orgs" / org / "inbox").mkdir(parents=True)
    assert organizations_to_check(settings) == ["org_demo", "org_demob"]
    (tmp_path / "inbox").mkdir()  # a single-organization layout left beside them stays put
    configured = settings.model_copy(update={"orgs": "org_a,org_b"})
    assert organizations_to_check(configured) == ["org_a", "org_b"]
    assert (tmp_path / "inbox").is_dir()
    assert not (tmp_path / "orgs" / "org_a").exists()


def test_no_alert_text_has_an_empty_field() -> None:
    """An exception without an amount (a rejected file's) reads without a dangling dash."""
    from jinja2 import Template

    built = alerts.automations("00000000-0000-0000-0000-000000000001", "06:00")
    opened = next(a for a in built if a.name == "fundpipe: an exception opened")
    payload = {"id": "EX-1", "organization": "org_a", "what": "q4.csv rejected: nothing paid"}
    text = Template(opened.actions[0].body).render(event={"payload": {**payload, "amount": ""}})
    assert text == "Exception EX-1 opened (org_a): q4.csv rejected: nothing paid."
    with_all = {**payload, "amount": "$12.00", "what_to_do": "fix it"}
    text = Template(opened.actions[0].body).render(event={"payload": with_all})
    assert text.endswith("nothing paid — $12.00.\nTo do: fix it")
    failed = next(a for a in built if a.name == "fundpipe: a run failed or crashed")
    run = {"name": "nightly-2026-11-25", "state": {"name": "Failed", "message": "down"}, "id": 1}
    subject = Template(failed.actions[0].subject).render(flow={"name": "nightly"}, flow_run=run)
    assert subject == "fundpipe: nightly Failed"  # a plain `fundpipe run`: no deployment


def test_every_automation_notifies_through_the_block_with_a_templated_body() -> None:
    built = alerts.automations("00000000-0000-0000-0000-000000000001", "06:00")
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
    # the deadline is a check of fundpipe's own (fundpipe.app.prefect.deadline), not a proactive window
    assert str(built[1].trigger.posture.value) == "Reactive"
    assert built[1].trigger.expect == {"fundpipe.night.missed"}
    assert "event.payload.organization" in built[1].actions[0].subject


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
