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
    settings = Settings(local={"data_dir": tmp_path})
    assert organizations_to_check(settings) == ["org_demo"]  # no night has run yet
    for org in ("org_demob", "org_demo"):
        (tmp_path / "orgs" / org / "inbox").mkdir(parents=True)
    assert organizations_to_check(settings) == ["org_demo", "org_demob"]
    (tmp_path / "inbox").mkdir()  # a single-organization layout left beside them stays put
    configured = settings.updated(service={"orgs": "org_a,org_b"})
    assert organizations_to_check(configured) == ["org_a", "org_b"]
    assert (tmp_path / "inbox").is_dir()
    assert not (tmp_path / "orgs" / "org_a").exists()


BLOCK = "00000000-0000-0000-0000-000000000001"
ORGS = [("org_a", "Alpha Fund"), ("org_b", "Beta Fund"), ("org_c", 'Société "Gamma" {%')]


def _render(template: str, **context: Any) -> str:
    """A notification's text as the server renders it (its `ui_url` filter: the UI's address)."""
    from jinja2 import Environment

    env = Environment(autoescape=False)  # noqa: S701 - plain text, as the server renders it
    env.filters["ui_url"] = lambda obj: f"http://ui.example/runs/flow-run/{obj['id']}"
    return env.from_string(template).render(**context)


def _built() -> dict[str, Any]:
    from datetime import timedelta

    built = alerts.automations(BLOCK, "06:00", ORGS, timedelta(hours=4, minutes=30))
    return {a.name: a for a in built}


def test_no_alert_text_has_an_empty_field_and_each_names_the_organization_and_links() -> None:
    """An exception without an amount (a rejected file's) reads without a dangling dash; the
    organization is named by its name; the run is linked."""
    opened = _built()["fundpipe: an exception opened"].actions[0]
    payload = {"id": "EX-1", "organization": "org_a", "what": "q4.csv rejected: nothing paid"}
    run = {"id": "r-1", "name": "nightly-2026-11-25"}
    text = _render(opened.body, event={"payload": {**payload, "amount": ""}}, flow_run=run)
    assert text == (
        "Exception EX-1 opened (Alpha Fund): q4.csv rejected: nothing paid.\n"
        "Open the run: http://ui.example/runs/flow-run/r-1"
    )
    with_all = {**payload, "amount": "$12.00", "what_to_do": "fix it"}
    text = _render(opened.body, event={"payload": with_all})
    assert text.endswith("nothing paid — $12.00.\nNext step: fix it")
    subject = _render(opened.subject, event={"payload": {**payload, "organization": "org_z"}})
    assert subject == "fundpipe: exception EX-1 opened (org_z)"  # not configured: its id
    subject = _render(opened.subject, event={"payload": {**payload, "organization": "org_c"}})
    assert subject == 'fundpipe: exception EX-1 opened (Société "Gamma" { %)'  # any name reads
    failed = _built()["fundpipe: a run failed"].actions[0]
    run = {"id": "r-2", "name": "sync-org-b", "parameters": {"org": "org_b"}}
    run["state"] = {"name": "Failed", "message": "down"}
    subject = _render(failed.subject, flow={"name": "sync"}, flow_run=run)
    assert subject == "fundpipe: sync Failed (Beta Fund)"  # a plain run: no deployment
    text = _render(failed.body, flow={"name": "sync"}, flow_run=run)
    assert "Next step:" in text
    assert text.endswith("Open the run: http://ui.example/runs/flow-run/r-2")


def test_an_outage_of_one_organization_is_one_alert_with_the_host_and_the_next_step() -> None:
    """A night's Failed run is not alerted as a run (its organization's failed night is, once);
    the alert names the organization, the host, what to do, and links the run."""
    from datetime import timedelta

    night_flows = {"nightly", "org-night"}
    window = timedelta(hours=4)
    built = {
        a.name: a
        for a in alerts.automations(BLOCK, "06:00", ORGS, window, told_by_event=night_flows)
    }
    watched = built["fundpipe: a run failed"].trigger.match_related.root
    assert night_flows.isdisjoint(watched["prefect.resource.name"])
    crashed = built["fundpipe: a run crashed"].trigger.match_related.root
    assert night_flows <= set(crashed["prefect.resource.name"])  # a dead process still alerts
    # the night shells emit fundpipe.night.failed for every failed night: by default, a
    # night's Failed run is not alerted once more as a run
    assert alerts.NIGHTS_TOLD_BY_EVENT == ["nightly", "org-night"]
    wired = _built()["fundpipe: a run failed"].trigger.match_related.root
    assert night_flows.isdisjoint(wired["prefect.resource.name"])
    # a night that needs a person (a Failed-type state named so: verdict_state) is told by its
    # file's and exceptions' alerts, not once more as a failed run: its event has its name
    from fundpipe.app.prefect.verdict_state import NEEDS_A_PERSON

    assert "prefect.flow-run.Failed" in _built()["fundpipe: a run failed"].trigger.expect
    assert (
        f"prefect.flow-run.{NEEDS_A_PERSON}"
        not in _built()["fundpipe: a run failed"].trigger.expect
    )
    failed = built["fundpipe: a night failed"].actions[0]
    payload = {
        "name": "Beta Fund",
        "why": "the service did not answer for 15 minutes",
        "host": "api.example.com",
        "what_to_do": "check the service's status page, then run the night again",
    }
    assert _render(failed.subject, event={"payload": payload}) == (
        "fundpipe: the night of Beta Fund failed"
    )
    text = _render(failed.body, event={"payload": payload}, flow_run={"id": "r-3"})
    assert text == (
        "The night of Beta Fund failed: the service did not answer for 15 minutes "
        "(service api.example.com).\n"
        "Next step: check the service's status page, then run the night again\n"
        "Open the run: http://ui.example/runs/flow-run/r-3"
    )


def test_a_rejected_file_is_one_alert_its_exception_folded_in() -> None:
    """The exception a rejected file opens carries "told by its file": the exception alert's
    filter leaves it out, and the file's alert says it stays open until a corrected file."""
    from fundpipe.app.prefect import oncall
    from fundpipe.vocabulary import ExceptionRecord

    def exception(kind: str) -> ExceptionRecord:
        return ExceptionRecord("EX-9", "open", 0, "what", None, "fix", kind, True)

    filtered = _built()["fundpipe: an exception opened"].trigger.match.root
    assert filtered["fundpipe.exception.alert"] == "own"
    folded = oncall.opened_event(exception("file_rejected"), "org_a")[1]
    assert folded["fundpipe.exception.alert"] == "file"
    assert oncall.opened_event(exception("shortfall"), "org_a")[1]["fundpipe.exception.alert"] == (
        "own"
    )
    rejected = _built()["fundpipe: a file was rejected"].actions[0]
    payload = {"file": "q4.csv", "organization": "org_a", "rows": 3, "reason": "bad amount"}
    assert _render(rejected.subject, event={"payload": payload}) == (
        "fundpipe: q4.csv rejected (Alpha Fund)"
    )
    assert "stays an open exception" in _render(rejected.body, event={"payload": payload})


def test_the_missed_night_window_runs_from_the_nightly_to_the_deadline() -> None:
    from datetime import timedelta

    from fundpipe.app.prefect.deadline import night_window
    from fundpipe.errors import InputError

    assert night_window("30 1 * * *", "06:00") == timedelta(hours=4, minutes=30)
    assert night_window("30 23 * * *", "06:00") == timedelta(hours=6, minutes=30)
    assert night_window("0 6 * * *", "06:00") == timedelta(hours=24)
    with pytest.raises(InputError, match="not once a day"):
        night_window("*/5 * * * *", "06:00")


def _event(name: str, resource: dict[str, str], related: list[dict[str, str]]) -> Any:
    from datetime import UTC, datetime
    from uuid import uuid4

    from prefect.server.events.schemas.events import ReceivedEvent

    return ReceivedEvent(
        occurred=datetime.now(UTC),
        event=name,
        resource=resource,
        related=related,
        id=uuid4(),
    )


def test_the_missed_night_trigger_is_the_servers_own_and_opens_on_the_nightlys_run() -> None:
    """Per organization, by name, proactive: the nightly deployment's run being due (Late with
    nothing to take it, or Pending) opens the window; that organization's completed or failed
    night closes it; other runs' events and other organizations' nights do neither."""
    from prefect.server.events.schemas.automations import EventTrigger

    from fundpipe.app.prefect import oncall

    missed = _built()["fundpipe: no night completed for Beta Fund"]
    assert "fundpipe: no night completed for Alpha Fund" in _built()
    trigger = EventTrigger.model_validate(missed.trigger.model_dump())
    assert trigger.posture.value == "Proactive"
    assert trigger.after == {"prefect.flow-run.Late", "prefect.flow-run.Pending"}
    assert trigger.for_each  # opened only by an `after` event, never by the clock alone

    def run_event(state: str, deployment: str) -> Any:
        related = [
            {"prefect.resource.id": "prefect.flow.f", "prefect.resource.role": "flow"},
            {
                "prefect.resource.id": "prefect.deployment.d",
                "prefect.resource.role": "deployment",
                "prefect.resource.name": deployment,
            },
        ]
        return _event(
            f"prefect.flow-run.{state}", {"prefect.resource.id": "prefect.flow-run.x"}, related
        )

    nightly_late = run_event("Late", "nightly")
    assert trigger.covers(nightly_late)
    assert trigger.starts_after(nightly_late.event)
    assert trigger.covers(run_event("Pending", "nightly"))
    assert not trigger.covers(run_event("Pending", "inbox"))  # the inbox every 5 minutes
    for org, covered in (("org_b", True), ("org_a", False)):
        name = oncall.NIGHT_COMPLETED
        resource = {"prefect.resource.id": f"fundpipe.night.{org}"}
        done = _event(name, resource, oncall.related_of(name))
        assert trigger.covers(done) is covered, org
        assert trigger.expects(done.event)
    failed = oncall.failed_event("org_b", "Beta Fund", "down", "api.example.com", "retry")
    assert trigger.covers(_event(failed[0], failed[1], oncall.related_of(failed[0])))
    assert trigger.bucketing_key(nightly_late) == trigger.bucketing_key(
        _event(failed[0], failed[1], oncall.related_of(failed[0]))
    )
    body = _render(
        missed.actions[0].body,
        flow_run={"id": "r-9", "name": "nightly-2026-11-27", "state": {"name": "Late"}},
    )
    assert body.startswith("No fundpipe night completed for Beta Fund (org_b) by 06:00")
    assert "is Late: nothing took it" in body
    assert body.endswith("Open the run: http://ui.example/runs/flow-run/r-9")


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


class _FakeServer:
    """The few automation calls `alerts._install` makes, on a dict (no Prefect server)."""

    def __init__(self, names: list[str]) -> None:
        from types import SimpleNamespace
        from uuid import uuid4

        self.automations = {n: SimpleNamespace(id=uuid4(), name=n) for n in names}
        self.deleted: list[str] = []

    async def __aenter__(self) -> _FakeServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def read_deployment_by_name(self, name: str) -> Any:
        raise ValueError(f"no deployment {name}")

    async def read_automations_by_name(self, name: str) -> list[Any]:
        return [a for a in self.automations.values() if a.name == name]

    async def create_automation(self, automation: Any) -> None:
        from uuid import uuid4

        from prefect.events.schemas.automations import Automation

        stored = Automation(**automation.model_dump(), id=uuid4())
        self.automations[automation.name] = stored

    async def update_automation(self, automation_id: Any, automation: Any) -> None:
        from prefect.events.schemas.automations import Automation

        stored = Automation(**automation.model_dump(), id=automation_id)
        self.automations[automation.name] = stored

    async def delete_automation(self, automation_id: Any) -> None:
        gone = [n for n, a in self.automations.items() if getattr(a, "id", None) == automation_id]
        for name in gone:
            self.deleted.append(self.automations.pop(name).name)

    async def read_automations(self) -> list[Any]:
        return list(self.automations.values())


def test_installing_replaces_the_old_alerts_and_skips_the_missed_night_for_a_trial_cron(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The old night-check alert is deleted; a nightly every minute (the README's trial) has no
    night to miss by an hour: installing says so instead of failing."""
    import prefect.client.orchestration

    server = _FakeServer(["fundpipe: no night completed", "someone else's automation"])
    monkeypatch.setattr(prefect.client.orchestration, "get_client", lambda: server)

    async def block(webhook: str) -> tuple[str, alerts.Installed]:
        return BLOCK, alerts.Installed(alerts.BLOCK_NAME, "unchanged")

    night = alerts.Night(ORGS, "06:00", "America/New_York", "* * * * *")
    done, notes = alerts.install("http://127.0.0.1:1/hook", night, save_block=block)
    assert server.deleted == ["fundpipe: no night completed"]
    assert "someone else's automation" in server.automations
    assert not [n for n in server.automations if n.startswith("fundpipe: no night completed")]
    (note,) = notes
    assert "not once a day" in note
    assert "missed-night alerts are not installed" in note
    assert ("fundpipe: no night completed", "deleted") in [(d.name, d.outcome) for d in done]
    daily = alerts.Night(ORGS, "06:00", "America/New_York", "30 1 * * *")
    done, notes = alerts.install("http://127.0.0.1:1/hook", daily, save_block=block)
    assert notes == []
    created = [d.name for d in done if d.outcome == "created"]
    assert created == [f"fundpipe: no night completed for {name}" for _, name in ORGS[:2]] + [
        'fundpipe: no night completed for Société "Gamma" (%'
    ]
    again, _ = alerts.install("http://127.0.0.1:1/hook", daily, save_block=block)
    assert {d.outcome for d in again} == {"unchanged"}  # installing twice changes nothing


def test_a_late_nightly_taken_after_its_alert_is_one_incident_closed_by_one_message() -> None:
    """A nightly left Late fires "no night completed"; when a worker then takes it, its Pending
    event opens a new window, which the run's own `fundpipe.night.started-late` (emitted for each
    organization as it starts past its deadline) closes at once: no second "missed" alert. The
    night completing late is one message, naming the organization, the deadline and the
    verdict, and linking the run."""
    from datetime import UTC, datetime

    from prefect.server.events.schemas.automations import EventTrigger

    from fundpipe.app.prefect import oncall
    from fundpipe.app.prefect.deadline import deadline_after

    zone = "America/New_York"
    # the deadline of a night is the first 06:00 after its scheduled time
    at_0130 = datetime(2026, 11, 28, 6, 30, tzinfo=UTC)  # 01:30 in New York
    assert deadline_after(at_0130, "06:00", zone).isoformat() == "2026-11-28T06:00:00-05:00"
    at_2250 = datetime(2026, 11, 28, 3, 50, tzinfo=UTC)  # 22:50 on the 27th in New York
    assert deadline_after(at_2250, "06:00", zone).isoformat() == "2026-11-28T06:00:00-05:00"

    missed = _built()["fundpipe: no night completed for Beta Fund"]
    trigger = EventTrigger.model_validate(missed.trigger.model_dump())
    for org, covered in (("org_b", True), ("org_a", False)):
        name, resource, _ = oncall.late_event(
            oncall.NIGHT_STARTED_LATE, org, "Beta Fund", "06:00 (America/New_York)"
        )
        assert trigger.expects(name)
        assert trigger.covers(_event(name, resource, oncall.related_of(name))) is covered, org
    # the message that closes the incident is not one the missed-night window counts
    assert not trigger.expects(oncall.NIGHT_COMPLETED_LATE)
    late = _built()["fundpipe: a night completed late"]
    assert late.trigger.expect == {oncall.NIGHT_COMPLETED_LATE}
    _, _, payload = oncall.late_event(
        oncall.NIGHT_COMPLETED_LATE,
        "org_b",
        "Beta Fund (org_b)",
        "06:00 (America/New_York)",
        "NEEDS A PERSON: shortfall: V-1 short ($4,500.00)",
    )
    action = late.actions[0]
    assert _render(action.subject, event={"payload": payload}) == (
        "fundpipe: the night of Beta Fund (org_b) completed late"
    )
    text = _render(action.body, event={"payload": payload}, flow_run={"id": "r-7"})
    assert text.startswith(
        "The night of Beta Fund (org_b) completed late, after its 06:00 (America/New_York) "
        "deadline: NEEDS A PERSON: shortfall: V-1 short ($4,500.00).\n"
    )
    assert "This closes its missed-night alert" in text
    assert text.endswith("Open the run: http://ui.example/runs/flow-run/r-7")


def test_a_night_ending_past_its_deadline_tells_each_organization_that_did_not_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the deadline, each organization whose night completed (OK or needing a person) gets
    its "completed late" message; a failed one has its own "night failed" alert, not this."""
    from datetime import UTC, datetime

    from fundpipe.app.prefect import fanout, oncall
    from fundpipe.config import Settings
    from fundpipe.nights import Finding, Nights, OrgRow

    told: list[tuple[str, str, str, str]] = []

    def tell_late(event: str, org: str, name: str, *args: object) -> None:
        told.append((event, org, name, str(args[-1])))

    monkeypatch.setattr(fanout, "tell_late", tell_late)
    short = Finding("shortfall: V-1 short", "$4,500.00", "today")
    summary = Nights.of(
        [
            OrgRow("org_a", "Alpha Fund", state="Completed"),
            OrgRow("org_b", "Beta Fund", state="Completed", findings=(short,)),
            OrgRow("org_c", "Gamma Fund", state="Failed", message="down"),
        ],
        "2026-11-28",
    )
    deadline = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)
    fanout._completed_late(summary, deadline, Settings.model_construct())
    assert [(e, o) for e, o, _, _ in told] == [
        (oncall.NIGHT_COMPLETED_LATE, "org_a"),
        (oncall.NIGHT_COMPLETED_LATE, "org_b"),
    ]
    assert told[0][3] == "OK"
    assert told[1][3].startswith("NEEDS A PERSON: shortfall: V-1 short")
