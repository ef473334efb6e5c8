"""A night's verdict as the Prefect UI shows it (fundpipe.app.prefect.verdict_state)."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from fundpipe.app.prefect.verdict_state import (
    NEEDS_A_PERSON,
    NeedsAPerson,
    VerdictLine,
    health_rows,
    line_of,
    needs_a_person_state,
    night_state,
    unique_run_name,
    verdict_markdown,
    verdict_table,
)
from fundpipe.vocabulary import Verdict

OK = VerdictLine("org_a", "Alpha Fund", Verdict.OK)
SHORT = VerdictLine(
    "org_b",
    "Beta Fund",
    Verdict.NEEDS_A_PERSON,
    what="Vehicle short of funds",
    amount_cents=450_000,
    due=date(2026, 11, 30),
    next_step="fund the vehicle's account",
)
DOWN = VerdictLine(
    "org_c",
    "Gamma Fund",
    Verdict.FAILED,
    why="the service did not answer for 15 minutes",
    host="api.example.com",
    next_step="check the service, then run the night again",
)


def test_a_night_that_needs_a_person_is_not_green_and_is_not_retried() -> None:
    """Prefect colours by state type: needs a person is FAILED (red, counted), named so; a clean
    night COMPLETED; a failure a plain Failed. None carries data the engine would raise."""
    assert night_state([OK]).type.value == "COMPLETED"
    needs = night_state([OK, SHORT])
    assert needs.type.value == "FAILED"
    assert needs.name == NEEDS_A_PERSON
    failed = night_state([OK, SHORT, DOWN])
    assert (failed.type.value, failed.name) == ("FAILED", "Failed")
    # worst first, one line per organization by name
    assert failed.message == (
        "Gamma Fund: FAILED: the service did not answer for 15 minutes, on api.example.com — "
        "check the service, then run the night again; "
        "Beta Fund: NEEDS A PERSON: Vehicle short of funds, $4,500.00, by 2026-11-30 — "
        "fund the vehicle's account; Alpha Fund: OK"
    )


def test_the_verdict_artifact_is_one_line_per_organization_with_links_that_open() -> None:
    text = verdict_markdown(
        [OK, SHORT, DOWN],
        date(2026, 11, 27),
        {
            "org_a": "https://reports.example/org_a/2026-11-27/reconciliation.xlsx",
            "org_b": "/srv/fundpipe/reports/org_b/2026-11-27 on host night-1",
        },
    )
    lines = text.splitlines()
    assert lines[0] == "# Night of 2026-11-27: 1 failed, 1 need a person, 1 OK"
    assert lines[2].startswith("- **Gamma Fund**: **FAILED**: the service did not answer")
    assert lines[3].startswith("- **Beta Fund**: **NEEDS A PERSON**: Vehicle short of funds")
    # a path is text with its machine, never a link that opens the UI's 404 page
    assert lines[4] == "  - report: /srv/fundpipe/reports/org_b/2026-11-27 on host night-1"
    assert lines[5] == (
        "- **Alpha Fund**: **OK** "
        "([report](https://reports.example/org_a/2026-11-27/reconciliation.xlsx))"
    )
    assert list(verdict_table([OK, DOWN])[0]) == [
        "Organization",
        "Verdict",
        "What",
        "How much",
        "By when",
        "On which host",
        "Next step",
    ]


def test_the_health_page_says_which_organizations_are_behind() -> None:
    first = health_rows([], [OK, SHORT], date(2026, 11, 26))
    assert [r["Organization"] for r in first] == ["Beta Fund", "Alpha Fund"]
    assert first[0]["Last good night"] == "none yet"
    then = health_rows(first, [OK, DOWN], date(2026, 11, 27))
    by_name = {r["Organization"]: r for r in then}
    assert by_name["Alpha Fund"]["Nights behind"] == 0
    assert by_name["Alpha Fund"]["Last good night"] == "2026-11-27"
    # Beta Fund did not run tonight: it keeps its row, its latest night the one before
    assert by_name["Beta Fund"]["Latest night"] == "2026-11-26"
    assert by_name["Beta Fund"]["Verdict"] == "NEEDS A PERSON"
    assert by_name["Gamma Fund"]["Verdict"] == "FAILED"
    assert by_name["Gamma Fund"]["What"].startswith("the service did not answer")
    assert then[-1]["Organization"] == "Alpha Fund"  # the good ones last
    recovered = health_rows(
        then, [VerdictLine("org_b", "Beta Fund", Verdict.OK)], date(2026, 11, 28)
    )
    by_name = {r["Organization"]: r for r in recovered}
    assert by_name["Beta Fund"]["Nights behind"] == 0
    assert by_name["Alpha Fund"]["Nights behind"] == 1


def test_run_names_are_unique_within_a_day() -> None:
    at = datetime(2026, 11, 27, 1, 30, tzinfo=ZoneInfo("America/New_York"))
    first = unique_run_name("nightly", at, "1a2b3c4d-0000-4000-8000-000000000000")
    second = unique_run_name("nightly", at, "9f8e7d6c-0000-4000-8000-000000000000")
    assert first == "nightly-2026-11-27-0130-1a2b3c4d"
    assert first != second
    assert (
        unique_run_name("org-night", at, "ab-cd", "org_a") == "org-night-org_a-2026-11-27-0130-abcd"
    )


def test_each_organization_s_row_reads_as_its_verdict_line_and_the_night_s_state() -> None:
    """A new $4,500 shortfall with no file rejected needs a person (not a plain Completed); a
    failed night says why, on which host and what to do; the state carries the night's result
    in a plain error (Prefect reads a FAILED state's data as one), and pickles."""
    import pickle

    from fundpipe.nights import Finding, Nights, OrgRow

    short = Finding("vehicle short of funds: V-1", "$4,500.00", "today (new or worse tonight)")
    rows = (
        OrgRow("org_a", "Alpha Fund", state="Completed"),
        OrgRow("org_b", "Beta Fund", state="Completed", findings=(short,)),
        OrgRow("org_c", state="Failed", exit_code=3, host="api.example.com", message="no answer"),
    )
    lines = [line_of(r) for r in rows]
    assert [line.sentence() for line in lines] == [
        "Alpha Fund (org_a): OK",
        "Beta Fund (org_b): NEEDS A PERSON: vehicle short of funds: V-1, $4,500.00, "
        "today (new or worse tonight)",
        "org_c: FAILED: no answer, on api.example.com — check that the service at "
        "api.example.com answers and that our credentials are accepted, then run the night again",
    ]
    night = Nights("2026-11-27", rows[:2])
    needs = night_state(lines[:2], data=night)
    assert (needs.type.value, needs.name) == ("FAILED", NEEDS_A_PERSON)
    assert needs_a_person_state(needs)
    carried = pickle.loads(pickle.dumps(needs.data))  # noqa: S301  # our own bytes
    assert isinstance(carried, NeedsAPerson)
    assert carried.exit_code == 1
    assert carried.value == night
    assert night_state(lines[:1], data=night).data is night  # a clean night's result as it is


def test_a_failed_night_s_verdict_says_what_its_internal_words_mean() -> None:
    """Seen in the UI: the verdict read "(ConnectError on GET /v1/vehicles, 5 attempts), longer
    than the retry deadline of 2 s (FUNDPIPE_RETRY_DEADLINE_S) … same Idempotency-Key" bare,
    while the parent's log line said what each meant."""
    from fundpipe.nights import OrgRow

    down = OrgRow(
        "org_night",
        "Dogwood Trust",
        state="Failed",
        exit_code=3,
        host="127.0.0.1",
        message="could not reach the service: (ConnectError on GET /v1/vehicles, 5 attempts), "
        "longer than the retry deadline of 2 s (FUNDPIPE_RETRY_DEADLINE_S); what was not "
        "confirmed is resent with the same Idempotency-Key",
    )
    sentence = line_of(down).sentence()
    assert "ConnectError (the service could not be reached)" in sentence
    assert "FUNDPIPE_RETRY_DEADLINE_S (how long fundpipe keeps retrying the service)" in sentence
    assert "Idempotency-Key (the key that lets a request be sent again" in sentence


def test_the_health_page_s_cells_stay_short_the_whole_verdict_is_in_the_run_s() -> None:
    """Prefect draws a table's cells without wrapping: a long "What" pushed the health page past
    a 1600-pixel screen. Each cell is at most WHAT_WIDTH characters, cut at a word, the amount
    first so it is never the part cut; the whole sentence stays in the verdict (markdown)."""
    from dataclasses import replace

    from fundpipe.app.prefect.verdict_state import WHAT_WIDTH

    long_short = replace(
        SHORT,
        what="shortfall: Q4 Real Assets III (veh_demo3) is short of funds for distributions "
        "due 2026-12-15 — fund the depository account or move the payment date",
    )
    long_down = replace(DOWN, why="could not reach the service: ConnectError " + "x " * 80)
    rows = health_rows(
        [{"Organization": "Old Fund", "What": "w " * 200, "Last good night": "2026-11-01"}],
        [long_short, long_down, OK],
        date(2026, 11, 28),
    )
    for row in rows:
        assert all(len(str(cell)) <= WHAT_WIDTH for cell in row.values()), row
    by_name = {r["Organization"]: r for r in rows}
    assert by_name["Beta Fund"]["What"].startswith("$4,500.00 — shortfall: Q4")
    assert by_name["Beta Fund"]["What"].endswith("…")
    assert by_name["Gamma Fund"]["What"].startswith("could not reach the service")
    assert by_name["Alpha Fund"]["What"] == ""
    # a night's finding carries its dollars as words ("$4,500.00"): first too, not cut off
    # (seen in Chromium: "Vehicle short of funds: Demo…", with no amount on the page)
    from fundpipe.nights import Finding, OrgRow

    found = Finding("Vehicle short of funds: Demo Real Assets III", "$4,500.00", "today")
    row = OrgRow("org_demo", "Alder Capital", state="Completed", findings=(found,))
    (health,) = health_rows([], [line_of(row)], date(2026, 11, 28))
    assert health["What"] == "$4,500.00 — Vehicle short of…"
    # a count of rows is no amount: the file's name comes first
    rejected = replace(SHORT, what="q4_typo.csv rejected: 1 validation error(s)", amount_cents=None)
    (row,) = health_rows([], [replace(rejected, much="1 row(s)")], date(2026, 11, 28))
    assert row["What"].startswith("q4_typo.csv rejected")
    # the verdict artifact keeps every word
    assert "move the payment date" in verdict_markdown([long_short], date(2026, 11, 28), {})
