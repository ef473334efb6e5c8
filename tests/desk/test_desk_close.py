"""The close on the desk: a preparer closes November (over open exceptions only when ticked)
and cannot review it; a reviewer, another signed-in person, reviews, rejects with a reason or
reopens; a viewer may not act, another organization's member gets 404; a change after the
close shows as changed after sign-off until a person acknowledges it."""

from __future__ import annotations

import datetime as dt
import getpass
from collections.abc import Callable
from pathlib import Path

import httpx
import openpyxl
import time_machine
from desk_world import DeskWorld, sign_in
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fundpipe.app.cli import app as cli
from fundpipe.reconcile import reconcile
from fundpipe.warehouse import Warehouse

HTML = {"accept": "text/html"}
#: November has ended in the reporting timezone: it may be closed
DEC_2 = dt.datetime(2026, 12, 2, 15, 0, tzinfo=dt.UTC)
NOVEMBER = "/orgs/org_demo/close/2026-11"
runner = CliRunner()


def _client(
    client_of: Callable[..., TestClient], world: DeskWorld, email: str, at: dt.datetime = DEC_2
) -> tuple[TestClient, str]:
    client = client_of(world, clock=lambda: at)
    return client, sign_in(client, email)


def _post(client: TestClient, path: str, token: str, **form: str) -> httpx.Response:
    return client.post(
        path, data={"csrf_token": token, **form}, headers=HTML, follow_redirects=False
    )


def _closed_by_maria(client_of: Callable[..., TestClient], world: DeskWorld) -> None:
    maria, token = _client(client_of, world, "maria@example.com")
    answer = _post(maria, f"{NOVEMBER}/close", token, with_open_exceptions="yes")
    assert answer.status_code == 303, answer.text


def _events(world: DeskWorld) -> list[dict[str, object]]:
    with Warehouse(world.org_settings("org_demo").local.warehouse_file).read() as con:
        rows = con.execute(
            "SELECT event, by_name, os_user, reason FROM period_events ORDER BY seq"
        ).fetchall()
    return [dict(zip(("event", "by", "user", "reason"), r, strict=True)) for r in rows]


def test_closing_over_open_exceptions_needs_the_tick_box(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    maria, token = _client(client_of, own_world, "maria@example.com")
    month = maria.get(NOVEMBER, headers=HTML)
    assert month.status_code == 200
    assert all(i in month.text for i in own_world.open_ids["org_demo"])  # listed before closing
    assert 'name="with_open_exceptions"' in month.text
    refused = _post(maria, f"{NOVEMBER}/close", token)
    assert refused.status_code == 409
    assert "open exception(s)" in refused.text
    assert _events(own_world) == []
    done = _post(maria, f"{NOVEMBER}/close", token, with_open_exceptions="yes")
    assert done.status_code == 303
    (closed,) = _events(own_world)
    assert closed == {
        "event": "closed",
        "by": "Maria Lopez <maria@example.com>",
        "user": "desk:local:maria@example.com",
        "reason": None,
    }
    listing = maria.get("/orgs/org_demo/close", headers=HTML)
    assert "Maria Lopez &lt;maria@example.com&gt;" in listing.text
    assert "2026-12-02 15:00 UTC" in listing.text
    assert "not yet reviewed" in listing.text


def test_the_preparer_cannot_review_and_another_person_can(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    _closed_by_maria(client_of, own_world)
    # maria is also given the reviewer's role: still the same person, by identity
    members = own_world.members.read_text(encoding="utf-8")
    own_world.members.write_text(
        members + '\n[[member]]\nemail = "maria@example.com"\nname = "M. LOPEZ"\norg = "org_demo"\n'
        'role = "reviewer"\n',
        encoding="utf-8",
    )
    maria, token = _client(client_of, own_world, "maria@example.com")
    offered = maria.get(NOVEMBER, headers=HTML).text
    assert 'action="/orgs/org_demo/close/2026-11/review"' not in offered
    assert "You closed this month: its review is by another signed-in person." in offered
    refused = _post(maria, f"{NOVEMBER}/review", token)
    assert refused.status_code == 409
    assert "the review must be by another signed-in person" in refused.text
    assert [e["event"] for e in _events(own_world)] == ["closed"]

    rita, token = _client(client_of, own_world, "rita@example.com")
    assert 'action="/orgs/org_demo/close/2026-11/review"' in rita.get(NOVEMBER, headers=HTML).text
    assert _post(rita, f"{NOVEMBER}/review", token).status_code == 303
    reviewed = _events(own_world)[-1]
    assert (reviewed["event"], reviewed["by"], reviewed["user"]) == (
        "reviewed",
        "Rita Reviewer <rita@example.com>",
        "desk:local:rita@example.com",
    )
    page = rita.get(NOVEMBER, headers=HTML)
    assert "reviewed by Rita Reviewer" in page.text
    assert 'action="/orgs/org_demo/close/2026-11/reopen"' in page.text


def test_a_rejection_needs_a_reason_then_the_month_can_be_reopened(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    _closed_by_maria(client_of, own_world)
    rita, token = _client(client_of, own_world, "rita@example.com")
    assert _post(rita, f"{NOVEMBER}/reject", token, reason="  ").status_code == 400
    assert [e["event"] for e in _events(own_world)] == ["closed"]
    assert _post(rita, f"{NOVEMBER}/reject", token, reason="D1 missing").status_code == 303
    assert "D1 missing" in rita.get(NOVEMBER, headers=HTML).text
    assert _post(rita, f"{NOVEMBER}/reopen", token, reason="redo").status_code == 303
    assert [e["event"] for e in _events(own_world)] == ["closed", "rejected", "reopened"]
    assert "open (reopened)" in rita.get("/orgs/org_demo/close", headers=HTML).text


def test_a_viewer_may_look_but_not_act_and_another_org_gets_404(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    victor, token = _client(client_of, own_world, "victor@example.com")
    page = victor.get(NOVEMBER, headers=HTML)
    assert page.status_code == 200
    assert "may look but not act" in page.text
    assert '<form method="post" action="/orgs/org_demo/close/2026-11/close"' not in page.text
    for act in ("close", "review", "reject", "reopen", "acknowledge-changes"):
        answer = _post(victor, f"{NOVEMBER}/{act}", token, reason="x", with_open_exceptions="yes")
        assert answer.status_code == 403, act
    bea, token = _client(client_of, own_world, "bea@example.com")
    assert bea.get("/orgs/org_demo/close", headers=HTML).status_code == 404
    assert bea.get(NOVEMBER, headers=HTML).status_code == 404
    answer = _post(bea, f"{NOVEMBER}/close", token, with_open_exceptions="yes")
    assert answer.status_code == 404
    assert bea.get("/orgs/org_demob/close/2026-11", headers=HTML).status_code == 200
    assert _events(own_world) == []
    assert bea.get("/orgs/org_demob/close/not-a-month", headers=HTML).status_code == 404


def _payment_changes(world: DeskWorld, at: dt.datetime) -> None:
    """The service says dpmt_1 (November, $300.00) is $325.00, learned at `at`."""
    with Warehouse(world.org_settings("org_demo").local.warehouse_file).write() as con:
        con.execute(
            "INSERT INTO distribution_payment_history "
            "SELECT *, ?, 'sync_late' FROM distribution_payments WHERE id = 'dpmt_1'",
            [at],
        )
        con.execute(
            "UPDATE distribution_payments SET amount_cents = 32500, last_seen_at = ? "
            "WHERE id = 'dpmt_1'",
            [at],
        )


def test_a_change_after_the_close_shows_until_acknowledged(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    _closed_by_maria(client_of, own_world)
    _payment_changes(own_world, dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC))
    later = dt.datetime(2026, 12, 4, 9, tzinfo=dt.UTC)
    rita, token = _client(client_of, own_world, "rita@example.com", at=later)
    listing = rita.get("/orgs/org_demo/close", headers=HTML)
    assert "changed after sign-off" in listing.text
    assert "1 adjustment, +$25.00" in listing.text
    month = rita.get(NOVEMBER, headers=HTML)
    assert "Changed after sign-off" in month.text
    assert all(s in month.text for s in ("dpmt_1", "$300.00", "$325.00", "+$25.00"))
    assert _post(rita, f"{NOVEMBER}/acknowledge-changes", token).status_code == 303
    acknowledged = _events(own_world)[-1]
    assert (acknowledged["event"], acknowledged["by"]) == (
        "changes_acknowledged",
        "Rita Reviewer <rita@example.com>",
    )
    assert "changed after sign-off" not in rita.get("/orgs/org_demo/close", headers=HTML).text
    month = rita.get(NOVEMBER, headers=HTML)
    assert "Changes acknowledged by" in month.text
    # nothing new to acknowledge: a refusal on the page, not an error
    again = _post(rita, f"{NOVEMBER}/acknowledge-changes", token)
    assert again.status_code == 409
    # the acknowledgement is in the organization's durable record
    record = Path(own_world.org_settings("org_demo").local.record_location)
    assert any(
        '"changes_acknowledged"' in p.read_text(encoding="utf-8")
        for p in record.rglob("*")
        if p.is_file() and p.suffix in {".json", ".jsonl"}
    )


def test_the_close_is_linked_from_the_morning(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client, _ = _client(client_of, desk_world, "maria@example.com")
    assert 'href="/orgs/org_demo/close"' in client.get("/morning", headers=HTML).text


def test_the_cli_lists_the_same_people_and_the_change_and_acknowledges_it(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    _closed_by_maria(client_of, own_world)
    _payment_changes(own_world, dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC))
    env = {"FUNDPIPE_DATA_DIR": str(own_world.data)}
    with time_machine.travel(dt.datetime(2026, 12, 4, 9, tzinfo=dt.UTC), tick=False):
        listed = runner.invoke(cli, ["close", "list", "--org", "org_demo"], env=env)
        assert listed.exit_code == 0, listed.output
        said = " ".join(listed.stdout.split())  # the console wraps long lines
        november = said[said.index("2026-11 ") : said.index("2026-12 ")]
        assert "prepared by Maria Lopez <maria@example.com>" in november
        assert "CHANGED AFTER SIGN-OFF: 1 adjustment(s), +$25.00" in november
        assert "dpmt_1 +$25.00" in november
        seen = runner.invoke(
            cli,
            ["close", "acknowledge-changes", "2026-11", "--by", "Pat", "--org", "org_demo"],
            env=env,
        )
        assert seen.exit_code == 0, seen.output
        again = runner.invoke(cli, ["close", "list", "--org", "org_demo"], env=env)
    assert "CHANGED AFTER SIGN-OFF" not in again.stdout
    acknowledged = _events(own_world)[-1]
    assert acknowledged["by"] == f"Pat (typed at the CLI by OS user {getpass.getuser()})"


def _summary_text(workbook: Path) -> str:
    """The Summary sheet's cells, row by row, as a reviewer reads the printout."""
    book = openpyxl.load_workbook(workbook, read_only=True)
    rows = book["Summary"].iter_rows(values_only=True)
    return "\n".join(" | ".join(str(v) for v in row if v) for row in rows)


def test_the_workbook_says_changed_after_sign_off_as_the_desk_does(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    settings = own_world.org_settings("org_demo")
    _closed_by_maria(client_of, own_world)
    closed = _summary_text(
        reconcile(settings, clock=lambda: DEC_2 + dt.timedelta(hours=1)).workbook
    )
    assert "Closed months changed after sign-off\nNone: every closed month is as it was signed" in (
        closed
    )
    _payment_changes(own_world, dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC))
    later = dt.datetime(2026, 12, 4, 9, tzinfo=dt.UTC)
    changed = _summary_text(reconcile(settings, clock=lambda: later).workbook)
    assert (
        "2026-11: CHANGED AFTER SIGN-OFF | 1 adjustment(s), +$25.00, since it was prepared by "
        "Maria Lopez <maria@example.com>" in changed
    )
    assert "payment dpmt_1: $300.00 → $325.00 (+$25.00), learned 2026-12-03 12:00 UTC" in changed
    # the report as issued before the change (known at the close) still says nothing changed
    before = reconcile(
        settings,
        as_of=dt.date(2026, 12, 2),
        known_at=DEC_2 + dt.timedelta(hours=1),
        out_dir=own_world.data / "as-issued",
        clock=lambda: later,
    )
    assert "None: every closed month is as it was signed" in _summary_text(before.workbook)
    rita, token = _client(client_of, own_world, "rita@example.com", at=later)
    # the desk's Summary of the same report says the same
    page = rita.get("/orgs/org_demo/reconciliation", headers=HTML).text
    assert "Closed months changed after sign-off" in page
    assert "payment dpmt_1: $300.00 → $325.00 (+$25.00)" in page
    assert _post(rita, f"{NOVEMBER}/acknowledge-changes", token).status_code == 303
    seen = later + dt.timedelta(hours=1)
    after = _summary_text(reconcile(settings, clock=lambda: seen, rebuild=True).workbook)
    assert "CHANGED AFTER SIGN-OFF" not in after
    assert "None: every closed month is as it was signed" in after
