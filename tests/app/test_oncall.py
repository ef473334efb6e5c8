"""The on-call view's lines, events and exception adapter: plain data in, plain text out."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from fundpipe.app.prefect import oncall
from fundpipe.app.prefect.artifacts import rejected_key
from fundpipe.night import exceptions_of, night
from fundpipe.nights import OrgNight
from fundpipe.reconcile import ReconcileResult, ReconcileSummary
from fundpipe.submit.verdicts import FileOutcome
from fundpipe.sync.pull import SyncResult
from fundpipe.vocabulary import ExceptionRecord
from worlds.submit import World, write_sheet

REJECTED = FileOutcome(
    "q4_typo.csv",
    "h1",
    "rejected",
    rows=3,
    message="2 validation error(s)",
    moved_to=Path("/data/rejected/q4_typo.csv"),
    error_reports=(
        Path("/data/rejected/q4_typo.csv.errors.csv"),
        Path("/data/rejected/q4_typo.csv.errors.xlsx"),
    ),
)
PROCESSED = FileOutcome(
    "distributions_q4.csv",
    "h2",
    "processed",
    rows=12,
    distributions=2,
    total_cents=22325050,
    moved_to=Path("/data/processed/distributions_q4.csv"),
)
#: one row of the `exceptions` view, as a reconciliation without a lifecycle leaves it
EXCEPTION_ROW = {
    "kind": "file_rejected",
    "object_type": "ledger_file",
    "object_id": "abc123",
    "source_file": "q4_typo.csv",
    "amount_cents": 0,
    "reason": "file rejected: needs a decision",
}


def _reconciled(tmp_path: Path, rows: list[dict[str, object]]) -> ReconcileResult:
    """A reconciliation without an exception lifecycle (a past as-of date), its exceptions
    view holding ``rows``."""
    from datetime import UTC, date, datetime

    import pandas as pd

    exceptions = tmp_path / "exceptions.parquet"
    pd.DataFrame(rows).to_parquet(exceptions)
    summary = ReconcileSummary(
        as_of=date(2026, 11, 23),
        run_at=datetime(2026, 11, 23, 23, 0, tzinfo=UTC),
        organization="org_x",
        last_sync_id=None,
        last_sync_at=None,
        vehicles=1,
        vehicles_short=0,
        available_cents=100,
        obligations_cents=0,
        shortfall_cents=0,
        unexplained_cents=0,
        sheet_rows=0,
        service_payments=0,
        payments_ok=0,
        exception_counts={"file_rejected": len(rows)},
    )
    return ReconcileResult(
        summary=summary,
        out_dir=Path("/data/reports/2026-11-23"),
        parquet={"exceptions": exceptions},
        rows={"exceptions": len(rows)},
        workbook=Path("/data/reports/2026-11-23/reconciliation.xlsx"),
        sheets=[],
    )


def test_a_file_line_says_the_outcome_in_dollars_or_why_and_where() -> None:
    assert oncall.file_line(PROCESSED) == (
        "file distributions_q4.csv: processed, 12 rows, 2 distributions, $223,250.50"
    )
    line = oncall.file_line(REJECTED)
    assert "q4_typo.csv: rejected" in line
    assert "2 validation error(s)" in line
    assert "error report: /data/rejected/q4_typo.csv.errors.csv" in line


def test_a_roster_line_says_what_the_roster_holds_not_dollars() -> None:
    # issue 25: a roster was logged as "0 row(s), 0 distribution(s), $0.00"
    roster = replace(
        PROCESSED,
        source_file="roster_new_investors.xlsx",
        rows=3,
        distributions=0,
        total_cents=0,
        roster={"entities": 3, "contacts": 4, "payment_instructions": 2},
    )
    assert oncall.file_line(roster) == (
        "file roster_new_investors.xlsx: processed, 3 entities, 4 contacts, 2 payment instructions"
    )


def test_a_file_dropped_again_unchanged_says_so_without_counts() -> None:
    # it said "duplicate, 0 row(s), 0 distribution(s), $0.00": counts of nothing read or sent
    again = FileOutcome(
        "roster_new_investors.xlsx",
        "h3",
        "duplicate",
        message="same content as `roster.xlsx`, processed 2026-12-01 21:25 UTC: nothing sent",
    )
    line = oncall.file_line(again)
    assert line == (
        "file roster_new_investors.xlsx: dropped again — same content as `roster.xlsx`, "
        "processed 2026-12-01 21:25 UTC: nothing sent"
    )
    assert "row" not in line
    assert "$0.00" not in line


def test_the_step_lines_carry_counts(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from fundpipe.submit.verdicts import IngestResult

    assert oncall.ingest_line(IngestResult(files=[PROCESSED, REJECTED])) == (
        "ingest: 2 files seen (1 processed, 1 rejected); 2 distributions submitted, $223,250.50"
    )
    now = datetime(2026, 11, 23, tzinfo=UTC)
    synced = SyncResult("sync_1", now, now, tmp_path, {"distributions": 3}, 0, 0, True)
    assert oncall.sync_line(synced) == "sync: 3 distributions"
    # the service's object names in words, not `financial_accounts` (seen in a child's log)
    counts = {"vehicles": 2, "financial_accounts": 4, "distribution_payments": 0}
    synced = SyncResult("sync_1", now, now, tmp_path, counts, 0, 0, True)
    assert oncall.sync_line(synced) == "sync: 2 vehicles, 4 accounts, 0 payments"
    # one of each: "1 distribution", not "1 distributions" (seen in a child's log)
    counts = {"vehicles": 1, "entities": 1, "distributions": 1, "distribution_notifications": 1}
    synced = SyncResult("sync_1", now, now, tmp_path, counts, 0, 0, True)
    assert oncall.sync_line(synced) == "sync: 1 vehicle, 1 entity, 1 distribution, 1 payment notice"
    assert oncall.ingest_line(IngestResult(files=[PROCESSED])).startswith(
        "ingest: 1 file seen (1 processed); 2 distributions submitted"
    )
    reconciled = _reconciled(tmp_path, [EXCEPTION_ROW])
    line = oncall.reconcile_line(reconciled)
    assert line.startswith("reconcile: 1 exception (1 Sheet file rejected)")
    # a night with no shortfall says so, not "short of funds by $0.00 in all"
    assert line.endswith(", no vehicle short of funds"), line
    assert "$0.00 in all" not in line
    short = replace(reconciled, summary=replace(reconciled.summary, shortfall_cents=450_000))
    assert oncall.reconcile_line(short).endswith(", vehicles short of funds by $4,500.00 in all")


def test_no_internal_word_reaches_the_on_call_without_what_it_means() -> None:
    said = oncall.plain(
        "ConnectError on GET /v1/vehicles, 9 attempts; ConnectError again; raise "
        "FUNDPIPE_RETRY_DEADLINE_S; 1 file_rejected"
    )
    assert said == (
        "ConnectError (the service could not be reached) on GET /v1/vehicles, 9 attempts; "
        "ConnectError again; raise FUNDPIPE_RETRY_DEADLINE_S (how long fundpipe keeps retrying "
        "the service); 1 Sheet file rejected"
    )
    assert oncall.plain(said) == said  # explained once, however often it passes


def test_exception_ids_are_stable_and_the_columns_plain(tmp_path: Path) -> None:
    reconciled = _reconciled(tmp_path, [EXCEPTION_ROW])
    first, again = exceptions_of(reconciled), exceptions_of(reconciled)
    assert first == again
    (line,) = first
    assert isinstance(line, ExceptionRecord)
    assert line.id.startswith("exc_")
    assert len(line.id) == 14
    assert (line.state, line.age_days, line.amount) == ("open", 0, "$0.00")
    assert "q4_typo.csv" in line.what
    assert line.what_to_do
    assert oncall.exception_line(line).startswith(f"exception {line.id} opened: ")
    assert oncall.opened(first) == list(first)
    aged = replace(line, age_days=3, opened_tonight=False)
    assert "still open (3 days)" in oncall.exception_line(aged)
    assert "still open (1 day)" in oncall.exception_line(replace(aged, age_days=1))
    assert oncall.opened([aged]) == []


def test_events_carry_organization_counts_and_ids_never_secrets() -> None:
    name, resource, payload = oncall.safe_event(
        oncall.rejected_event(replace(REJECTED, message="bad token s3cr3t"), "org_x"), ["s3cr3t"]
    )
    assert name == "fundpipe.file.rejected"
    assert resource["prefect.resource.id"] == "fundpipe.file.q4_typo.csv"
    assert payload["organization"] == "org_x"
    assert payload["file"] == "q4_typo.csv"
    assert "s3cr3t" not in str(payload)


def test_the_night_event_counts_what_the_night_did(world: World) -> None:
    """`fundpipe.night.completed` reads the typed night: a processed file is counted as
    accepted (it once read a dict key nobody wrote and said `files_accepted: 0` every night)."""
    write_sheet(world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00, 250_01])])
    (world.inbox / "q4_typo.csv").write_text("not,a,sheet\n1,2,3\n", encoding="utf-8")
    result = night(
        world.settings.updated(pipeline={"inbox_settle_s": 0}), transport=world.transport
    )
    _, _, event = oncall.night_event(OrgNight.of("org_x", result), "org_x")
    assert event["counts"]["files_seen"] == 2
    assert event["counts"]["files_accepted"] == 1
    assert event["counts"]["files_rejected"] == 1
    assert event["counts"]["distributions_submitted"] == 1
    # the rejected file's exception, opened tonight (the lifecycle's own id)
    [rejected] = [e for e in result.exceptions if e.kind == "file_rejected"]
    assert rejected.id in event["exception_ids"]
    assert event["exception_ids"] == [e.id for e in result.exceptions if e.state == "open"]
    opened = [e for e in result.exceptions if e.opened]
    assert event["counts"]["exceptions_opened"] == len(opened) >= 1
    assert event["rejected_files"] == ["q4_typo.csv"]
    assert event["as_of"] == result.as_of.isoformat()


def test_the_run_log_and_summary_name_every_inbox_entry_left_alone(world: World) -> None:
    """A folder named like a sheet and a file fundpipe does not read: each has its line in the
    run's log and in the night's warnings (the summary artifact, `fundpipe run`'s output)."""
    from fundpipe.app.prefect.artifacts import summary_markdown
    from fundpipe.nights import OrgNight

    (world.inbox / "folder.csv").mkdir()
    (world.inbox / "memo.docx").write_bytes(b"PK")
    result = night(
        world.settings.updated(pipeline={"inbox_settle_s": 0}), transport=world.transport
    )
    lines = [
        "inbox: folder.csv — left alone: a folder",
        "inbox: memo.docx — left alone: not a sheet fundpipe reads (.docx)",
    ]
    assert oncall.left_alone_lines(result.ingest) == lines
    shown = OrgNight.of("org_x", result)
    assert [w for w in shown.warnings if w.startswith("inbox:")] == lines
    assert all(f"- {line}" in summary_markdown(shown) for line in lines)


def test_plain_masks_account_numbers_and_keeps_money_and_ids() -> None:
    text = oncall.plain("account 123456789012 paid $1,234,567.00 to ent_123456789 (44627650)")
    assert "123456789012" not in text
    assert "****9012" in text
    assert "$1,234,567.00" in text
    assert "ent_123456789" in text
    assert "44627650" in text


def test_report_urls_follow_the_published_folder(tmp_path: Path) -> None:
    workbook = tmp_path / "reports" / "2026-11-23" / "reconciliation.xlsx"
    assert oncall.report_url("https://drive.example/fp/", workbook, tmp_path / "reports") == (
        "https://drive.example/fp/2026-11-23/reconciliation.xlsx"
    )
    assert oncall.report_url(None, workbook, tmp_path / "reports") is None
    assert rejected_key("Q4 Typo (v2).csv") == "fundpipe-rejected-q4-typo-v2-csv"


def test_the_console_level_never_changes_what_reaches_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from fundpipe.app.cli.common import prefect_defaults

    for verbose, console_level in ((False, "CRITICAL"), (True, "INFO")):
        for name in (
            "PREFECT_LOGGING_LEVEL",
            "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL",
            "PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL",
        ):
            monkeypatch.delenv(name, raising=False)
        prefect_defaults(verbose)
        assert os.environ["PREFECT_LOGGING_LEVEL"] == "INFO"  # the run logger → the API
        assert os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL"] == console_level


def test_a_report_is_a_link_only_where_a_browser_opens_it(tmp_path: Path) -> None:
    """An http(s) reports location links; a folder or s3:// location is text (shared: no host),
    or a link under FUNDPIPE_REPORTS_PUBLIC_URL; a report that stayed on the worker is its path
    and the worker's name."""
    import socket

    from fundpipe.app.prefect.artifacts import summary_with_links
    from fundpipe.config import Settings

    workbook = tmp_path / "reports" / "2026-11-23" / "reconciliation.xlsx"
    moved = tmp_path / "rejected" / "q4_typo.csv"
    rejected = replace(
        REJECTED,
        moved_to=moved,
        error_reports=(moved.with_name("q4_typo.csv.errors.csv"),),
    )
    summary = OrgNight("org_x", date(2026, 11, 23), files=(rejected,), workbook=workbook)
    local = summary_with_links(summary, Settings(local={"data_dir": tmp_path}))
    # without FUNDPIPE_REPORTS_URL: no dead link to the worker's disk, but where they are
    assert "file://" not in local
    assert "](" not in local  # not one markdown link
    assert f"- workbook: `{workbook}` on host `{socket.gethostname()}`" in local
    assert "set FUNDPIPE_REPORTS_URL to an http(s) location" in local
    assert f"- q4_typo.csv.errors.csv: `{moved}.errors.csv` on host" in local
    # each Parquet view labelled in words, not its snake_case stem
    views = replace(summary, parquet={"balance_movement": tmp_path / "balance_movement.parquet"})
    labelled = summary_with_links(views, Settings(local={"data_dir": tmp_path}))
    assert "- parquet balance movement: `" in labelled
    assert "parquet balance_movement" not in labelled
    # a folder every machine mounts: its path as text, the same on every machine
    folder = summary_with_links(
        summary, Settings(local={"data_dir": tmp_path, "reports_url": "/mnt/share/fp"})
    )
    assert "](" not in folder
    assert (
        "- workbook: `/mnt/share/fp/2026-11-23/reconciliation.xlsx` (the shared reports location)"
    ) in folder
    # served over http(s): links that open
    shared = summary_with_links(
        summary, Settings(local={"data_dir": tmp_path, "reports_url": "https://drive.example/fp"})
    )
    assert "[workbook](https://drive.example/fp/2026-11-23/reconciliation.xlsx)" in shared
    assert "set FUNDPIPE_REPORTS_URL" not in shared
    public = summary_with_links(
        summary,
        Settings(
            local={
                "data_dir": tmp_path,
                "reports_url": "s3://fp-reports/fp",
                "reports_public_url": "https://cdn.example/fp",
            }
        ),
    )
    assert "[workbook](https://cdn.example/fp/2026-11-23/reconciliation.xlsx)" in public


def test_openable_maps_the_reports_location_onto_its_public_address() -> None:
    from fundpipe.app.prefect.links import openable, where

    assert openable("https://x.example/a.xlsx", None, None) == "https://x.example/a.xlsx"
    assert openable("s3://b/r/org_a/a.xlsx", "s3://b/r", None) is None
    assert openable("s3://b/r/org_a/a.xlsx", "s3://b/r/", "https://cdn.example/r") == (
        "https://cdn.example/r/org_a/a.xlsx"
    )
    assert openable("/elsewhere/a.xlsx", "s3://b/r", "https://cdn.example/r") is None
    assert where(None, "/srv/r/a.xlsx", None, None, host="night-1").text() == (
        "/srv/r/a.xlsx on host night-1"
    )
    assert where(None, None, None, None) is None


def test_the_summary_says_the_service_mode_in_words() -> None:
    from fundpipe.app.prefect.artifacts import summary_markdown

    day = date(2026, 11, 23)
    text = summary_markdown(OrgNight("org_x", day, service_objects="test"))
    assert "| Service objects | test mode |" in text
    assert "service objects | test" not in text
    live = summary_markdown(OrgNight("org_x", day, service_objects="live"))
    assert "| Service objects | live mode |" in live


def test_a_rejected_files_exception_shows_its_amount(world: World) -> None:
    """issue 25: the rejected file's exception had no amount in the artifacts and alerts."""
    write_sheet(world.inbox / "q4.csv", [("R-1", "veh_demo1", [100_00, 250_01])])
    with open(world.inbox / "q4.csv", "a", encoding="utf-8") as fh:
        fh.write(
            "Distribution R-1,veh_demo1,R-1,2026-12-15 09:00,America/New_York,ent_demo3,"
            "twelve dollars,USD\n"
        )
    result = night(
        world.settings.updated(pipeline={"inbox_settle_s": 0}), transport=world.transport
    )
    [rejected] = [e for e in exceptions_of(result.reconcile) if e.kind == "file_rejected"]
    assert rejected == next(e for e in result.exceptions if e.kind == "file_rejected")
    assert rejected.amount == "$350.01"
    assert rejected.amount_cents == 350_01
    assert "$350.01" in rejected.what
    assert oncall.opened_event(rejected, "org_x")[2]["amount"] == "$350.01"


def test_a_night_s_alerts_link_the_report_where_a_link_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A night tells its alerts once its reports are published: a rejected file's alert says
    where its error report (`.errors.xlsx`) is, and an opened exception's where the night's
    workbook is — a link under FUNDPIPE_REPORTS_PUBLIC_URL (or an http(s) reports location),
    else the path and the machine it is on; rendered, the alert's text carries it."""
    import socket

    from fundpipe.app.prefect import alerts, tell
    from fundpipe.app.prefect.sharing import publish_org
    from fundpipe.config import Organization, Settings

    emitted: list[tuple[str, dict[str, object]]] = []

    def emit_event(event: str, resource: object, payload: dict[str, object], **_: object) -> None:
        emitted.append((event, payload))

    monkeypatch.setattr(tell, "emit_event", emit_event)

    def the_night(settings: Settings) -> OrgNight:
        out = settings.local.reports_folder / "2026-11-28" / "20261128T035000Z"
        out.mkdir(parents=True)
        (out / "reconciliation.xlsx").write_bytes(b"xlsx")
        moved = tmp_path / "rejected" / "q4_typo.csv"
        moved.parent.mkdir(parents=True, exist_ok=True)
        reports = (
            moved.with_name("q4_typo.csv.errors.csv"),
            moved.with_name("q4_typo.csv.errors.xlsx"),
        )
        for report in reports:
            report.write_bytes(b"errors")
        shortfall = ExceptionRecord(
            "EX-7", "open", 0, "veh_demo3 short", 450_000, "fund it", "shortfall", True
        )
        return OrgNight(
            "org_demo",
            date(2026, 11, 28),
            files=(replace(REJECTED, moved_to=moved, error_reports=reports),),
            exceptions=(shortfall,),
            workbook=out / "reconciliation.xlsx",
        )

    public = Settings(
        local={
            "data_dir": tmp_path / "public",
            "reports_url": str(tmp_path / "share"),
            "reports_public_url": "https://cdn.example/fp",
        },
        service={"org_id": "org_demo"},
    )
    night = the_night(public)
    night = replace(night, published=publish_org(Organization(id="org_demo"), night, public))
    tell.tell_incidents(night, public)
    (rejected_name, rejected), (opened_name, opened) = emitted
    assert (rejected_name, opened_name) == (oncall.FILE_REJECTED, oncall.EXCEPTION_OPENED)
    day = "https://cdn.example/fp/2026-11-28/20261128T035000Z"
    assert rejected["error_report"] == f"{day}/errors/q4_typo.csv.errors.xlsx"
    assert opened["report"] == f"{day}/reconciliation.xlsx"
    automations = {a.name: a for a in alerts.automations(BLOCK, "06:00", [("org_demo", "Demo")])}
    text = _render(automations["fundpipe: a file was rejected"].actions[0].body, rejected)
    assert f"Error report: {day}/errors/q4_typo.csv.errors.xlsx." in text
    assert ", 3 rows): " in text  # counts agree with their nouns: "1 row", "3 rows"
    one = _render(
        automations["fundpipe: a file was rejected"].actions[0].body, {**rejected, "rows": 1}
    )
    assert ", 1 row): " in one
    text = _render(automations["fundpipe: an exception opened"].actions[0].body, opened)
    assert f"Report: {day}/reconciliation.xlsx" in text

    # no reports location: the path, and the machine it is on (no link that cannot open)
    emitted.clear()
    local = Settings(local={"data_dir": tmp_path / "local"}, service={"org_id": "org_demo"})
    night = the_night(local)
    tell.tell_incidents(night, local)
    (_, rejected), (_, opened) = emitted
    host = socket.gethostname()
    assert rejected["error_report"] == f"{tmp_path}/rejected/q4_typo.csv.errors.xlsx on host {host}"
    assert opened["report"] == f"{night.workbook} on host {host}"


BLOCK = "00000000-0000-0000-0000-000000000001"


def _render(template: str, payload: dict[str, object]) -> str:
    from jinja2 import Environment

    env = Environment(autoescape=False)  # noqa: S701 - plain text, as the server renders it
    return env.from_string(template).render(event={"payload": payload})


def test_a_rejected_file_s_table_reads_in_words() -> None:
    """Seen in Chromium: the rejected file's table had the CSV's own columns (`severity`,
    `letter`, `check` = `amount_negative`) and its reason, the one thing to read, off the
    page. Now: Row(s), Column (with its letter), Value, Why."""
    report = {
        "severity": "error",
        "sheet": "",
        "row": "3",
        "rows": "3",
        "count": "1",
        "column": "Amount ($)",
        "letter": "G",
        "value": "(1,000.00)",
        "check": "amount_negative",
        "reason": "the amount is negative; payments must be positive amounts",
    }
    assert oncall.plain_error_rows([report]) == [
        {
            "Row(s)": "3",
            "Column": "Amount ($) (column G)",
            "Value": "(1,000.00)",
            "Why": "the amount is negative; payments must be positive amounts",
        }
    ]
    warned = {**report, "severity": "warning", "sheet": "Q4"}
    (row,) = oncall.plain_error_rows([warned])
    assert list(row)[:2] == ["Severity", "Sheet"]


def test_a_child_run_that_needs_a_person_warns_by_name_and_is_named_by_its_own_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `org-night` run's summary line starts "org-night:" (not the parent's "nightly:"),
    and what needs a person is a WARNING naming the organization: what, how much, by when."""
    from prefect.states import Completed

    from fundpipe.app.prefect import tell
    from fundpipe.app.prefect.nightsummary import org_row
    from fundpipe.app.prefect.orgnight import _tell_the_night
    from fundpipe.app.prefect.verdict_state import line_of
    from fundpipe.config import Organization, Settings

    monkeypatch.setattr(tell, "emit_event", lambda **_: None)
    said: list[tuple[str, str]] = []

    class Logger:
        def info(self, message: str) -> None:
            said.append(("INFO", message))

        def warning(self, message: str) -> None:
            said.append(("WARNING", message))

    monkeypatch.setattr(tell, "get_run_logger", Logger)
    shortfall = ExceptionRecord(
        "EX-7",
        "open",
        0,
        "Demo Real Assets III (veh_demo3): depository available $750,000.00 is short of open "
        "obligations $754,500.00 by $4,500.00 from 2026-12-15",
        450_000,
        "fund it",
        "shortfall",
        True,
    )
    summary = OrgNight(
        "org_a", date(2026, 11, 28), files=(PROCESSED,), exceptions=(shortfall,), exceptions_found=1
    )
    org = Organization(id="org_a", name="Alder Capital")
    settings = Settings(local={"data_dir": tmp_path}, service={"org_id": "org_a"})
    _tell_the_night(summary, [PROCESSED], [line_of(org_row(org, Completed(), summary))], settings)
    summary_line = (
        "org-night: 1 file seen, 1 processed, 2 distributions submitted, 1 exception to review"
    )
    assert ("INFO", summary_line) in said, said
    assert not any(text.startswith("nightly:") for _, text in said), said
    warnings = [text for level, text in said if level == "WARNING"]
    assert len(warnings) == 1, said
    (warning,) = warnings
    assert warning.startswith("Alder Capital (org_a): NEEDS A PERSON: "), warning
    assert "$4,500.00" in warning, warning
    assert "2026-12-15" in warning, warning

    # a night that needs nobody: no warning
    said.clear()
    calm = replace(summary, exceptions=(), exceptions_found=0)
    _tell_the_night(calm, [PROCESSED], [line_of(org_row(org, Completed(), calm))], settings)
    assert [level for level, _ in said] == ["INFO", "INFO"], said
