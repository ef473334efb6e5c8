"""The fan-out's rules: one limit per service host, the rate each organization gets, and a
cross-organization summary that adds up."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from fundpipe.app.prefect.fanout import limit_name, shared_rate
from fundpipe.app.prefect.nightsummary import cross_markdown, org_row
from fundpipe.config import Organization, Settings, grouped
from fundpipe.nights import Nights, NightsFailed, OrgNight
from fundpipe.submit.verdicts import FileOutcome
from fundpipe.vocabulary import ExceptionRecord, Verdict


def _settings(**values: object) -> Settings:
    return Settings(**grouped(data_dir=Path("data"), _env_file=None, **values))  # type: ignore[call-arg]


def test_one_limit_per_service_host_whatever_its_port_or_path() -> None:
    a = limit_name(_settings(base_url="https://API.example.com:8443/v1"))
    b = limit_name(_settings(base_url="https://api.example.com"))
    assert a == b == "fundpipe-service-api-example-com"
    assert limit_name(_settings(base_url="https://eu.example.com")) != a


@pytest.mark.parametrize(
    ("host_rate", "limit", "orgs", "expected"),
    [
        (None, 2, 4, 9.0),  # the service limits each client and organization: no sharing
        (9.0, 2, 4, 4.5),  # two talk at once: half the host's rate each
        (9.0, 4, 3, 3.0),  # three organizations, all at once: a third each
        (20.0, 2, 1, 9.0),  # never above the organization's own rate
    ],
)
def test_the_host_rate_is_shared_by_the_organizations_talking_at_once(
    host_rate: float | None, limit: int, orgs: int, expected: float
) -> None:
    settings = _settings(
        rate_limit_per_s=9.0, host_rate_limit_per_s=host_rate, org_concurrency=limit
    )
    shared = shared_rate(settings, orgs)
    assert shared.http.rate_limit_per_s == pytest.approx(expected)
    at_once = min(limit, orgs)
    if host_rate is not None:
        assert shared.http.rate_limit_per_s * at_once <= host_rate + 1e-9


def _child(files: list[tuple[str, int, int]], exceptions: int) -> OrgNight:
    return OrgNight(
        "org_a",
        date(2026, 11, 30),
        files=tuple(
            FileOutcome(f"{n}.csv", f"h{n}", state, distributions=d, total_cents=cents)  # type: ignore[arg-type]
            for n, (state, d, cents) in enumerate(files)
        ),
        exceptions=tuple(
            ExceptionRecord(f"EX-{n}", "open", 0, "w", None, "fix", "missing", True)
            for n in range(exceptions)
        ),
        exit_code=1 if any(f[0] == "rejected" for f in files) else 0,
    )


def test_the_cross_organization_summary_adds_up() -> None:
    from prefect.states import Completed, Failed

    a = org_row(
        Organization(id="org_a", name="Alder"),
        Completed(message="ok"),
        _child([("processed", 2, 150_000), ("rejected", 0, 99)], 1),
    )
    a = replace(a, run="http://127.0.0.1:4200/runs/flow-run/1111")
    b = replace(
        org_row(Organization(id="org_b"), Failed(message="the service failed"), None), run="2222"
    )
    summary = Nights.of([a, b], "2026-11-30")
    totals = summary.as_json()["totals"]
    assert (a.total_cents, a.total, a.rejected) == (150_000, "$1,500.00", 1)
    assert totals == {
        "organizations": 2,
        "failed": 1,
        "files": 2,
        "rejected": 1,
        "distributions": 2,
        "total_cents": 150_000,
        "total": "$1,500.00",
        "open_exceptions": 1,
    }
    assert summary.as_json()["rejected_files"] == [
        {"file": "1.csv", "report": None, "message": None, "organization": "org_a"}
    ]
    text = cross_markdown(summary)
    # a completed night with a rejected file reads as its run's badge in the UI does
    assert (
        "| Alder | Needs a person | 2 | 1 | 2 | $1,500.00 | 1 | [open run](http://127.0.0.1:4200"
        in text
    )
    assert "| org_b | Failed | 0 | 0 | 0 | $0.00 | 0 | `2222` |" in text
    assert "- org_b (Failed): the service failed" in text
    # a failed organization's reason says what its internal words mean, as the verdict does
    down = replace(b, message="could not reach the service (ConnectError on GET /v1/vehicles)")
    glossed = cross_markdown(Nights.of([a, down], "2026-11-30"))
    assert "ConnectError (the service could not be reached) on GET" in glossed
    # the child's "Needs a person" state (FAILED type, not green) is a night that completed
    needs = org_row(
        Organization(id="org_a", name="Alder"),
        Failed(name="Needs a person", message="Alder: NEEDS A PERSON: …"),
        _child([("rejected", 0, 99)], 1),
    )
    assert (needs.state, needs.completed, needs.verdict) == (
        "Completed",
        True,
        Verdict.NEEDS_A_PERSON,
    )


def test_the_summary_keeps_its_json_shape_and_pickles() -> None:
    """`fundpipe run --json` (and scripts reading it) see the keys they always did; the typed
    summary is the flow's result, so it pickles."""
    import pickle

    from prefect.states import Completed

    row = org_row(Organization(id="org_a"), Completed(), _child([("processed", 1, 5)], 1))
    summary = Nights.of([row], None)
    assert pickle.loads(pickle.dumps(summary)) == summary  # noqa: S301  # our own bytes
    # a failed night's state carries it inside an exception, which pickles whole too
    failed = pickle.loads(pickle.dumps(NightsFailed("1 did not complete", summary)))  # noqa: S301
    assert (str(failed), failed.nights) == ("1 did not complete", summary)
    out = summary.as_json()
    assert list(out) == [
        "as_of",
        "organizations",
        "totals",
        "rejected_files",
        "redropped_files",
        "warnings",
        "exit_code",
        "morning",
    ]
    assert out["as_of"] == "2026-11-30"  # the organizations' date when none was asked for
    org = out["organizations"]["org_a"]
    assert list(org) == [
        "organization", "name", "state", "files", "rejected", "distributions", "total_cents",
        "total", "open_exceptions", "exit_code", "message", "run", "as_of", "report_folder",
        "rejected_names", "new_exceptions", "host", "verdict", "why", "findings", "summary",
        "exceptions",
    ]  # fmt: skip
    assert org["new_exceptions"] == ["EX-0"]
    assert org["verdict"] == "needs a person"  # an exception opened tonight waits for a person
    assert list(org["summary"]) == [
        "as_of", "facts", "files", "rejected_files", "redropped_files", "reports", "exceptions",
        "exception_counts",
        "warnings", "notes", "exit_code", "organization", "open_exceptions", "opened_ids",
        "exception_list", "published", "restored",
    ]  # fmt: skip
    assert list(org["summary"]["facts"])[:3] == [
        "files seen", "files processed (new)", "files rejected"
    ]  # fmt: skip
    assert org["exceptions"][0]["amount"] == ""


def test_a_child_on_another_worker_hands_its_row_over_whole() -> None:
    """A deployment child's row travels as JSON (`hand_off`) and comes back the same row."""
    import json

    from prefect.states import Completed

    left = org_row(
        Organization(id="org_a", name="Alder"),
        Completed(),
        _child([("processed", 2, 150_000), ("rejected", 0, 99)], 2),
    )
    wire = json.loads(json.dumps(left.as_json()))
    back = org_row(Organization(id="org_a", name="Alder"), Completed(), None).with_json(wire)
    assert back == replace(left, night=None)
    assert back.rejected_names == ("1.csv",)
    assert [e.id for e in back.exceptions] == ["EX-0", "EX-1"]
    stopped = org_row(Organization(id="org_a"), None, None).with_json({"exit_code": 4})
    assert (stopped.exit_code, stopped.files, stopped.exceptions) == (4, 0, ())


def test_a_deployment_child_s_open_exceptions_reach_the_parent_s_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With FUNDPIPE_FAN_OUT=deployments the parent's row (and its table of every
    organization's open exceptions) comes from the JSON the child left, exceptions included;
    the state, message and run are the parent's own view of the child run."""
    import json
    import uuid
    from types import SimpleNamespace

    import prefect.deployments
    from prefect.states import Completed

    from fundpipe.app.prefect import fanout, handoff
    from fundpipe.orgs import parse_orgs

    org = Organization(id="org_a", name="Alder")
    child = org_row(org, Completed(message="child"), _child([("processed", 2, 150_000)], 2))
    left = json.loads(json.dumps(child.as_json()))
    run_id = uuid.uuid4()

    started: list[dict[str, object]] = []

    def run_deployment(name: str, **kwargs: object) -> SimpleNamespace:
        started.append(kwargs)
        return SimpleNamespace(id=run_id, state=Completed(message="done"))

    monkeypatch.setattr(prefect.deployments, "run_deployment", run_deployment)
    monkeypatch.setattr(fanout, "ensure_limit", lambda name, limit: None)
    monkeypatch.setattr(fanout, "check_deployment", lambda: None)
    monkeypatch.setattr(handoff, "row_left_by", lambda flow_run_id: left)
    (row,) = fanout.fan_out(
        _settings(base_url="https://x.example"),
        parse_orgs('[{"id": "org_a", "name": "Alder"}]'),
        as_of=None,
        data_dir=None,
        base_url=None,
        mode="deployments",
    ).rows
    assert (row.state, row.message) == ("Completed", "done")
    # the child run is found by the organization's name in the UI, by its id in a script
    assert started[0]["tags"] == ["org:Alder", "org-id:org_a"]
    params = started[0]["parameters"]
    assert isinstance(params, dict)
    assert params["name"] == "Alder"
    # the verdict the child computed travels with its row
    assert row.verdict == child.verdict == Verdict.NEEDS_A_PERSON
    assert row.why == child.why
    assert row.host == "x.example"
    assert row.run.endswith(str(run_id))  # its page in the UI, or its id
    assert (row.files, row.distributions, row.total, row.open_exceptions) == (
        1,
        2,
        "$1,500.00",
        2,
    )
    assert [e.id for e in row.exceptions] == ["EX-0", "EX-1"]
    assert row.night is None  # the child's night stayed on its worker
    assert (
        Nights.of([row], None).as_json()["organizations"]["org_a"]["exceptions"][0]["id"] == "EX-0"
    )


def test_fundpipe_run_prints_each_organization_its_rejections_and_reports() -> None:
    from prefect.states import Completed, Failed
    from rich.console import Console

    from fundpipe.app.cli.render import render_run_summary

    night = replace(
        _child([("processed", 2, 150_000), ("rejected", 0, 99)], 1),
        workbook=Path("/reports/org_a/2026-11-30/reconciliation.xlsx"),
        warnings=("a contact was not associated",),
    )
    night = replace(
        night,
        files=(
            night.files[0],
            replace(
                night.files[1],
                source_file="q4.csv",
                moved_to=Path("/rejected/q4.csv"),
                error_reports=(
                    Path("/rejected/q4.csv.errors.csv"),
                    Path("/rejected/q4.csv.errors.xlsx"),
                ),
            ),
        ),
    )
    a = org_row(Organization(id="org_a"), Completed(), night)
    b = org_row(Organization(id="org_b"), Failed(message="the service failed"), None)
    console = Console(record=True, width=100)
    render_run_summary(Nights.of([a, b], "2026-11-30"), console)
    text = console.export_text()
    assert "fundpipe nightly run — 2026-11-30 — every organization" in text
    assert "$1,500.00" in text
    assert "all 2" in text
    assert "1 failed" in text
    assert "org_b the service failed" in text
    # the error report an analyst opens, not the rejected sheet itself
    assert "rejected org_a: q4.csv — error report: /rejected/q4.csv.errors.xlsx" in text
    assert "warning org_a: a contact was not associated" in text
    assert "org_a reports: /reports/org_a/2026-11-30/reconciliation.xlsx" in text
    # the verdict's findings: what needs a person, how much and by when
    assert "needs a person org_a: q4.csv rejected: see its error report" in text
    # the exception's kind in words ("Sheet row not at the service"), not `missing`
    assert (
        "needs a person org_a: Sheet row not at the service: w — fix — today (new or worse tonight)"
    ) in text
    # org_a's night completed with a rejected file: the table says so as the UI's badge does,
    # while --json keeps the run's state type
    (org_a_line,) = [line for line in text.splitlines() if line.startswith("│ org_a")]
    assert "Needs a person" in org_a_line
    assert Nights.of([a, b], None).as_json()["organizations"]["org_a"]["state"] == "Completed"


def test_a_child_s_hand_off_is_for_the_parent_not_the_person_and_comes_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child's hand-off to the parent is titled as what it is, for whom, of Prefect's
    ``result`` type (which the run's Artifacts tab does not list), and made after the run's
    verdict; the parent reads it back whole."""
    import uuid
    from types import SimpleNamespace

    import prefect.artifacts
    import prefect.client.orchestration
    from prefect.states import Completed, Failed

    from fundpipe.app.prefect import handoff
    from fundpipe.app.prefect.orgnight import _stopped
    from fundpipe.errors import ServiceUnavailable

    made: list[SimpleNamespace] = []

    def create(self: prefect.artifacts.Artifact, *_: object, **__: object) -> SimpleNamespace:
        made.append(
            SimpleNamespace(type=self.type, description=self.description, data=self.format())
        )
        return SimpleNamespace(id=uuid.uuid4())

    monkeypatch.setattr(prefect.artifacts.Artifact, "create", create)
    org = Organization(id="org_a", name="Alder")
    # a stopped child: its verdict (a person's first read) first, the hand-off last
    _stopped(
        "org_a", Failed(message="the service did not answer", data=ServiceUnavailable("x")), {}
    )
    verdict, left = made
    assert verdict.type == "markdown"
    assert "FAILED" in verdict.data
    assert left.type == "result"  # the UI's run Artifacts tab lists every type but "result"
    assert left.description == "Hand-off to the nightly run (for fundpipe, not for people)"

    made.clear()
    child = org_row(org, Completed(), _child([("processed", 2, 150_000)], 2))
    handoff.leave_row(org, _child([("processed", 2, 150_000)], 2), Completed())
    (left,) = made
    assert (left.type, left.description) == ("result", handoff.HANDOFF)

    class Client:
        def __enter__(self) -> Client:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def read_artifacts(self, **_: object) -> list[SimpleNamespace]:
            return made

    monkeypatch.setattr(prefect.client.orchestration, "get_client", lambda **_: Client())
    back = org_row(org, Completed(), None).with_json(handoff.row_left_by(uuid.uuid4()))
    assert back == replace(child, night=None)
