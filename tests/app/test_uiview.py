"""What the Prefect UI shows of a night: state names, run names, tags, keys, labels
(fundpipe.app.prefect.uiview), and the parent's state when a night needs a person."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

from fundpipe.app.prefect.steps import _finished, _sentence
from fundpipe.app.prefect.uiview import (
    called,
    needs_a_person,
    night_date,
    open_exceptions_rows,
    org_key,
    org_part,
    org_tags,
    plain_exceptions,
    run_name,
    step_run_name,
)
from fundpipe.app.prefect.verdict_state import NeedsAPerson, needs_a_person_state
from fundpipe.nights import Finding, OrgNight, OrgRow
from fundpipe.submit.verdicts import FileOutcome
from fundpipe.vocabulary import ExceptionRecord


def test_a_step_that_needs_a_person_ends_in_the_nights_own_red_needs_a_person() -> None:
    """An `inbox` run with a rejected file ends as a night that needs a person does: FAILED
    named "Needs a person" (red, never a green "Needs review"), its result carried inside."""
    rejected = FileOutcome("/in/q4.csv", "h", "rejected", message="1 validation error(s)")
    needs = _finished(1, _sentence("nightly", [rejected]), {"exit_code": 1})
    assert (needs.type.value, needs.name) == ("FAILED", "Needs a person")
    assert needs_a_person_state(needs)
    assert isinstance(needs.data, NeedsAPerson)
    assert (needs.data.exit_code, needs.data.value) == (1, {"exit_code": 1})
    assert "q4.csv rejected" in (needs.message or "")
    clean = _finished(0, _sentence("nightly", []))
    assert (clean.type.value, clean.name) == ("COMPLETED", "Completed")
    assert _finished(3, _sentence("nightly", [])).type.value == "FAILED"


def test_a_night_has_one_date_its_run_name_and_its_artifacts_share() -> None:
    """A nightly scheduled at 22:50 in New York on 27 November, reporting in UTC, is the night
    of the 28th: its run's name says 2026-11-28 (at the cron's 22:50), as the date its verdict,
    health page and reports carry (`night_date` in the reporting timezone) does."""
    scheduled = datetime(2026, 11, 28, 3, 50, tzinfo=UTC)  # 22:50 on the 27th in New York
    zones = ("America/New_York", "UTC")
    name = run_name("nightly", scheduled, "1a2b3c4d-0000", None, zones)
    assert name == "nightly-2026-11-28-2250-1a2b3c4d"
    assert night_date(None, "UTC", now=scheduled) == "2026-11-28"
    assert name.startswith(f"nightly-{night_date(None, zones[1], now=scheduled)}-")
    # a night asked for a date (`as_of`) is that date's, everywhere
    assert run_name("nightly", scheduled, "ab", "2026-11-20", zones) == "nightly-2026-11-20-2250-ab"
    assert night_date("2026-11-20", "UTC", now=scheduled) == "2026-11-20"
    # reporting in New York, the same run is the night of the 27th
    assert run_name("nightly", scheduled, "ab", None, ("America/New_York",) * 2).startswith(
        "nightly-2026-11-27-2250-"
    )


def test_runs_are_named_by_the_organization_s_name_and_date() -> None:
    from fundpipe.app.prefect import flows, uiview

    late_utc = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)
    zone = "UTC"
    # by its name, slugified; by its id when it has none
    assert (
        step_run_name("inbox", {"org": "org_demob"}, zone, now=late_utc, name="Demo Fund B")
        == "inbox-demo-fund-b-2026-11-26"
    )
    assert step_run_name("inbox", {"org": "org_a"}, zone, now=late_utc) == "inbox-org_a-2026-11-26"
    assert step_run_name("sync", {"org": None}, zone, now=late_utc) == "sync-2026-11-26"
    assert (
        step_run_name("reconcile", {"org": "org_b", "as_of": "2026-11-20"}, zone, now=late_utc)
        == "reconcile-org_b-2026-11-20"
    )
    assert org_part("org_demob", "Demo Fund Administration B") == "demo-fund-administration-b"
    assert (
        run_name("org-night", late_utc, "9f8e", None, ("UTC", "UTC"), org_part("org_b", "Bé & Co"))
        == "org-night-b-co-2026-11-26-0300-9f8e"
    )
    # the flows are named by these once their settings are built (`name_run`, from the one
    # `_settings` every flow starts with), not by Prefect's random names, and no run-name
    # callback builds settings of its own
    from fundpipe.app.prefect import deadline, orgnight

    for named in (
        flows.inbox,
        flows.sync,
        flows.reconcile,
        flows.nightly,
        orgnight.org_night,
        deadline.night_check,
    ):
        assert named.name in uiview.RUN_NAMES
        assert named.flow_run_name is None


def test_keys_and_tags_carry_the_organization() -> None:
    assert org_key("fundpipe-exceptions", "org_Demo") == "fundpipe-exceptions-org-demo"
    assert org_key("fundpipe-rejected", "org_a", "q4-csv") == "fundpipe-rejected-org-a-q4-csv"
    # a readable tag to filter by in the UI, and the id beside it for scripts
    assert org_tags("org_demob", "Demo Fund B") == ["org:Demo Fund B", "org-id:org_demob"]
    assert org_tags("org_a") == ["org:org_a", "org-id:org_a"]
    assert called("org_demob", "Demo Fund B") == "Demo Fund B (org_demob)"


def test_the_parent_names_what_needs_a_person_per_organization() -> None:
    """The sentence reads the verdict's findings: a new shortfall (no file rejected) needs a
    person as much as a rejected file; a clean or failed night is not in it."""
    short = Finding("vehicle short of funds: V-1 — fund it", "$4,500.00", "today")
    rows = [
        OrgRow("org_a", "Alpha", state="Completed", findings=(short,)),
        OrgRow("org_b", state="Completed"),
        OrgRow("org_c", state="Failed", findings=(short,)),
    ]
    assert needs_a_person(rows) == [
        "Alpha: vehicle short of funds: V-1 — fund it ($4,500.00) — today"
    ]
    assert [r.state_shown for r in rows] == ["Needs a person", "Completed", "Failed"]


def test_exceptions_read_with_plain_labels() -> None:
    exception = ExceptionRecord("EX-1", "open", 0, "w", 100, "fix", "missing", True)
    (row,) = plain_exceptions([exception], "Alder (org_a)")
    assert list(row) == [
        "Organization",
        "Exception",
        "State",
        "Age (days)",
        "What",
        "Amount",
        "What to do",
    ]
    assert row["Amount"] == "$1.00"


def test_an_exception_without_an_amount_is_logged_without_a_blank() -> None:
    from fundpipe.app.prefect.oncall import exception_line

    rejected = ExceptionRecord(
        id="EX-1",
        state="open",
        age_days=0,
        what="q4.csv was rejected: nothing in it was paid",
        amount_cents=None,
        what_to_do="fix the sheet",
        kind="file_rejected",
        opened_tonight=True,
    )
    line = exception_line(rejected)
    assert (
        line
        == "exception EX-1 opened: q4.csv was rejected: nothing in it was paid; to do: fix the sheet"
    )
    assert exception_line(replace(rejected, amount_cents=500)).endswith(
        "paid — $5.00; to do: fix the sheet"
    )


#: A shortfall as the warehouse words it: a sentence far wider than a table cell on a screen.
SHORTFALL = ExceptionRecord(
    "EX-24D72797D6",
    "open",
    0,
    "Demo Real Assets III (veh_demo3): depository available $750,000.00 is short of open "
    "obligations $754,500.00 by $4,500.00 from 2026-12-15",
    450_000,
    "fund the depository account of Demo Real Assets III with $4,500.00 before 2026-12-15, "
    "or move the distribution's date",
    "shortfall",
    True,
)


def test_the_exceptions_tables_fit_a_screen_and_the_summary_keeps_each_whole() -> None:
    """Seen in Chromium at 1600 pixels: the whole "What" pushed "What to do" off the page of
    `fundpipe-open-exceptions` and `fundpipe-exceptions-<org>`. Both cells are now cut at a
    word (the amount has its own column); the run summary has each sentence in full."""
    from fundpipe.app.prefect.artifacts import summary_markdown

    (mine,) = plain_exceptions([SHORTFALL])
    row = OrgRow("org_demo", "Alder Capital", state="Completed", exceptions=(SHORTFALL,))
    (across,) = open_exceptions_rows([row])
    for table in (mine, across):
        # what it is and on which vehicle first; the next step's verb and object
        assert table["What"] == "Vehicle short of funds: Demo…"
        assert table["What to do"] == "fund the depository account of…"
        assert table["Amount"] == "$4,500.00"
    assert across["Organization"] == "Alder Capital (org_demo)"
    rejected = replace(
        SHORTFALL,
        kind="file_rejected",
        what="Sheet q4 (1).csv rejected: 3 rows, $2,000.00, received 2026-11-28; nothing in it "
        "was paid",
    )
    assert plain_exceptions([rejected])[0]["What"] == "Sheet file rejected: q4 (1).csv"
    # still open from an earlier night: the verdict says the sheet once, not "Sheet file
    # rejected: Sheet q4 (1).csv rejected: …"
    earlier = replace(rejected, opened_tonight=False, age_days=2)
    (finding,) = OrgNight("org_demo", date(2026, 11, 28), exceptions=(earlier,)).findings()
    assert finding.what.startswith("Sheet q4 (1).csv rejected: 3 rows, $2,000.00, "), finding
    # one recorded before the warehouse said it in words
    before = replace(rejected, what="file rejected/q4_typo.csv (3 row(s)) was rejected on …")
    assert plain_exceptions([before])[0]["What"] == "Sheet file rejected: q4_typo.csv"
    summary = summary_markdown(
        OrgNight(
            "org_demo",
            date(2026, 11, 28),
            exceptions=(SHORTFALL,),
            exception_counts={"shortfall": 1},
        )
    )
    assert (
        "- **EX-24D72797D6** (vehicle short of funds, $4,500.00): Demo Real Assets III "
        "(veh_demo3): depository available $750,000.00 is short of open obligations "
        "$754,500.00 by $4,500.00 from 2026-12-15 — fund the depository account of Demo Real "
        "Assets III with $4,500.00 before 2026-12-15, or move the distribution's date"
    ) in summary
    # titled by the organization's name (its id beside it), not "organization org_demo"
    named = summary_markdown(OrgNight("org_demo", date(2026, 11, 28)), "Alder Capital")
    assert named.startswith("# fundpipe nightly run — 2026-11-28 — Alder Capital (org_demo)\n")
    # the kinds counted in words, not the warehouse's `shortfall`
    assert "| Vehicle short of funds | 1 |" in summary
    assert "| shortfall |" not in summary


def test_a_shortfall_needs_a_person_in_words_not_the_internal_kind() -> None:
    """The verdict read "shortfall: Demo Real Assets III …": the warehouse's kind, not words."""
    night = OrgNight("org_demo", date(2026, 11, 28), exceptions=(SHORTFALL,))
    (finding,) = night.findings()
    assert finding.what.startswith("Vehicle short of funds: Demo Real Assets III (veh_demo3)")
    assert "shortfall" not in finding.plain
