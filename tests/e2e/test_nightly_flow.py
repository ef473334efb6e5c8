"""The nightly Prefect flow end to end: samples plus one broken file, on the embedded sandbox.

What an analyst and the on-call engineer would check after a night: the distributions exist at
the service exactly as the sheets say, the broken file sits in `rejected/` with its report, the
workbook's Summary adds up, and the run left its summary and exceptions as Prefect artifacts.
"""

from __future__ import annotations

import asyncio
import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from prefect_processes import tonight

from fundpipe.app.embedded import service
from fundpipe.app.prefect import flows as night_flows
from fundpipe.app.prefect.nightsummary import carried, summary_of_run
from fundpipe.config import Settings
from fundpipe.validate.files import validate_files

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
BROKEN = SAMPLES / "broken" / "negative_amount.csv"

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=240):
        yield


@pytest.fixture(scope="module")
def night(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One nightly run over a fresh data directory: the clean samples and one broken sheet."""
    data_dir = tmp_path_factory.mktemp("night")
    shutil.copytree(SAMPLES, data_dir / "samples", ignore=shutil.ignore_patterns("broken"))
    inbox = data_dir / "orgs" / "org_demo" / "inbox"
    inbox.mkdir(parents=True)
    shutil.copy2(BROKEN, inbox / "q4_typo.csv")  # keeps its mtime: a settled file
    flows = night_flows
    # the flow's result is typed; its JSON form is what `fundpipe run --json` prints; a night
    # that needs a person (the broken sheet) is not green: a FAILED-type state named so
    state = flows.nightly(samples=True, data_dir=str(data_dir), return_state=True)
    assert (state.type.value, state.name) == ("FAILED", "Needs a person"), state.message
    summary = summary_of_run(state).as_json()
    # the embedded sandbox's two demo organizations: org_demo's night is the one checked here
    return {
        "data_dir": data_dir,
        "org_dir": data_dir / "orgs" / "org_demo",
        "summary": summary["organizations"]["org_demo"]["summary"],
        "night": summary,
    }


def _expected_from_samples() -> dict[str, int]:
    """Per external_reference, the sum of cents the clean sample sheets ask for."""
    clean = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.suffix != ".md")
    reports = validate_files(clean)
    assert all(r.valid for r in reports), [r.errors for r in reports if not r.valid]
    expected: dict[str, int] = {}
    for report in reports:
        if report.distributions is None:
            continue
        sums = report.distributions.groupby("external_reference")["amount_cents"].sum()
        for ref, cents in sums.items():
            expected[str(ref)] = expected.get(str(ref), 0) + int(cents)
    return expected


async def _service_distributions(settings: Settings) -> dict[str, list[int]]:
    from fundpipe.client import FundClient

    found: dict[str, list[int]] = {}
    async with FundClient(settings.client_config()) as client:
        async for distribution in client.list_distributions():
            amounts = [p.amount async for p in client.list_distribution_payments(distribution.id)]
            found.setdefault(distribution.external_reference or "", []).append(sum(amounts))
    return found


def test_the_service_holds_exactly_the_sheets_distributions(night: dict[str, Any]) -> None:
    settings = Settings(_env_file=None, local={"data_dir": night["data_dir"]})  # type: ignore[call-arg]
    with service(settings) as live:
        found = asyncio.run(_service_distributions(live))
    expected = _expected_from_samples()
    # each external_reference exactly once, with every cent the sheets asked for
    assert dict(found.items()) == {ref: [cents] for ref, cents in expected.items()}


def test_the_broken_file_is_rejected_with_an_actionable_report(night: dict[str, Any]) -> None:
    data_dir: Path = night["org_dir"]
    rejected = data_dir / "rejected"
    assert (rejected / "q4_typo.csv").exists()
    reports = sorted(rejected.glob("q4_typo*.csv"))
    report = next(p for p in reports if p.name != "q4_typo.csv")
    rows = list(csv.DictReader(report.open(encoding="utf-8-sig")))
    assert rows, "the error report lists the problems"
    first = rows[0]
    assert first["row"].isdigit()
    assert int(first["row"]) >= 2
    assert "amount" in first["column"].lower()
    assert "negative" in first["reason"].lower()
    # the rejected file created nothing: it is neither processed nor in the inbox any more
    assert not (data_dir / "processed" / "q4_typo.csv").exists()
    assert not (data_dir / "inbox" / "q4_typo.csv").exists()
    rejected_names = [Path(item["file"]).name for item in night["summary"]["rejected_files"]]
    assert rejected_names == ["q4_typo.csv"]


def test_the_workbook_summary_adds_up(night: dict[str, Any]) -> None:
    summary = night["summary"]
    workbook = openpyxl.load_workbook(summary["reports"]["workbook"], read_only=True)
    cells = {
        row[0]: row[1]
        for row in workbook["Summary"].iter_rows(values_only=True)
        if row and row[0] is not None
    }
    total_cents = sum(_expected_from_samples().values())
    # nothing has executed yet: every submitted cent is an open obligation
    assert round(float(cells["Open obligations"]) * 100) == total_cents
    assert cells["Sheet rows (ledger)"] == cells["Service payments"] == cells["Payments matching"]
    assert summary["facts"]["files rejected"] == 1
    assert summary["facts"]["distributions submitted"] == len(_expected_from_samples())


def test_the_run_leaves_a_summary_and_an_exceptions_table_as_artifacts(
    night: dict[str, Any],
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        TaskRunFilter,
    )
    from prefect.client.schemas.sorting import ArtifactSort

    async def read(key: str) -> list[Any]:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                flow_run_filter=FlowRunFilter(),
                task_run_filter=TaskRunFilter(),
                sort=ArtifactSort.CREATED_DESC,
                limit=5,
            )

    markdown = asyncio.run(read("fundpipe-run-summary-org-demo"))
    table = asyncio.run(read("fundpipe-exceptions-org-demo"))
    assert markdown
    assert table
    # one summary per organization's child run: org_demo's tells of the rejected file
    texts = [str(m.data) for m in markdown]
    assert any("Files rejected | 1" in text and "q4_typo.csv" in text for text in texts), texts

    # the parent run's artifact: every organization, with a link to its child run
    async def parents() -> list[Any]:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    key=ArtifactFilterKey(any_=["fundpipe-organizations"])
                ),
                sort=ArtifactSort.CREATED_DESC,
                limit=1,
            )

    (organizations,) = asyncio.run(parents())
    text = str(organizations.data)
    rows = night["night"]["organizations"]
    assert any(row["rejected"] for row in rows.values())  # the night's broken sheet
    for row in rows.values():
        # a night with a rejected sheet reads as its run's badge does in the UI
        shown = "Needs a person" if row["rejected"] else "Completed"
        assert f"| {row['name'] or row['organization']} | {shown} |" in text
        assert row["run"].rsplit("/", 1)[-1] in text


def test_an_organization_s_night_is_the_library_night_step_by_step(night: dict[str, Any]) -> None:
    """The `org-night` run's tasks are `fundpipe.night.night`'s steps, in its order (its step
    runner makes each a task), then the artifacts: one sequence, not a second one in the flow."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import TaskRunSort

    from fundpipe.app.prefect.steps import NIGHT_TASKS
    from fundpipe.night import STEPS

    run_id = uuid.UUID(night["night"]["organizations"]["org_demo"]["run"].rsplit("/", 1)[-1])

    async def tasks() -> list[str]:
        async with get_client() as client:
            runs = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])),
                sort=TaskRunSort.EXPECTED_START_TIME_ASC,
            )
        return [r.name.rsplit("-", 1)[0] for r in runs]

    assert asyncio.run(tasks()) == [NIGHT_TASKS[s] for s in STEPS] + ["publish-artifacts"]


def _make_run_command() -> list[str]:
    """The command of the Makefile's `run` target, with `$(BIN)` pointing at this venv."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    line = next(ln.strip() for ln in recipe.splitlines()[1:] if "fundpipe run" in ln)
    command = line.lstrip("@").split(";", 1)[0]  # the recipe goes on to say how to open the desk
    return shlex.split(command.replace("$(BIN)", str(Path(sys.executable).parent)))


def test_make_run_twice_creates_nothing_new(tmp_path: Path) -> None:
    """`make run` twice, as on a fresh clone (no Prefect server: the direct night): both
    organizations shown, the second run sends nothing."""
    shutil.copytree(SAMPLES, tmp_path / "data" / "samples")
    env = {**os.environ}
    env.pop("FUNDPIPE_BASE_URL", None)
    env.pop("PREFECT_API_URL", None)
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            _make_run_command(),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        outputs.append(done.stdout)
    # it shows both demo organizations and says where each one's reports are
    for org in ("org_demo", "org_demob"):
        assert re.search(rf"│ {org}\s*│ Completed", outputs[0]), outputs[0]
        assert f"{org} reports:" in outputs[0]
    assert "reconciliation.xlsx" in outputs[0]
    # the second run recognised every file and submitted nothing (the "all 2" row's distr. is 0)
    assert re.search(r"all 2\s*│\s*0 failed\s*│\s*\d+\s*│\s*\d+\s*│\s*0\s*│", outputs[1]), outputs[
        1
    ]

    settings = Settings(_env_file=None, local={"data_dir": tmp_path / "data"})  # type: ignore[call-arg]
    with service(settings) as live:
        found = asyncio.run(_service_distributions(live))
    assert all(len(totals) == 1 for totals in found.values()), found
    assert set(found) == set(_expected_from_samples())
    demob = settings.updated(service={"org_id": "org_demob"})
    with service(demob) as live:
        found_b = asyncio.run(_service_distributions(live))
    assert all(len(totals) == 1 for totals in found_b.values()), found_b
    assert set(found_b) == {"Q4-2026-DEMOB1", "Q4-2026-DEMOB2"}


# --- how a run ends: a state a person can read -------------------------------------------------


def _logs_of(state: Any) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    async def read() -> list[str]:
        async with get_client() as client:
            logs = await client.read_logs(
                log_filter=LogFilter(
                    flow_run_id=LogFilterFlowRunId(any_=[state.state_details.flow_run_id])
                )
            )
        return [entry.message for entry in logs]

    return asyncio.run(read())


def test_a_run_that_finds_the_inbox_locked_is_cancelled_naming_the_holder(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fundpipe.submit.inbox import InboxLock

    monkeypatch.setenv("FUNDPIPE_INBOX_LOCK_WAIT_S", "1")
    shutil.copy2(SAMPLES / "distributions_q4.csv", tmp_path / "waiting.csv")
    org_dir = tmp_path / "orgs" / "org_demo"
    (org_dir / "inbox").mkdir(parents=True)
    shutil.copy2(tmp_path / "waiting.csv", org_dir / "inbox" / "waiting.csv")
    with InboxLock(org_dir):
        state = night_flows.inbox(data_dir=str(tmp_path), org="org_demo", return_state=True)
    assert state.is_cancelled(), state
    assert f"pid {os.getpid()}" in (state.message or "")
    assert "did nothing" in (state.message or "")
    assert (org_dir / "inbox" / "waiting.csv").exists()  # left for the next run


def test_an_unreachable_service_fails_the_run_with_a_plain_sentence(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("FUNDPIPE_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("FUNDPIPE_CLIENT_ID", "night-client")
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "canary-secret-never-logged")
    monkeypatch.setenv("FUNDPIPE_ORG_ID", "org_night")
    monkeypatch.setenv("FUNDPIPE_RETRY_DEADLINE_S", "2")
    state = night_flows.sync(data_dir=str(tmp_path), return_state=True)
    assert state.is_failed(), state
    assert "could not reach the service" in (state.message or "")
    logs = _logs_of(state)
    assert not any("Traceback" in line for line in logs), logs
    assert not any("canary-secret-never-logged" in line for line in logs)


def test_a_rejected_file_ends_the_run_needs_a_person_saying_what(
    prefect_harness: None, tmp_path: Path
) -> None:
    org_dir = tmp_path / "orgs" / "org_demo"
    (org_dir / "inbox").mkdir(parents=True)
    shutil.copy2(BROKEN, org_dir / "inbox" / "q4_typo.csv")
    # no --org: every organization's inbox in turn (org_demob's is empty)
    state = night_flows.inbox(data_dir=str(tmp_path), return_state=True)
    # red, as a night that needs a person is: FAILED named "Needs a person" — the run over
    # every inbox, not only org_demo's step; its result is carried inside
    assert (state.type.value, state.name) == ("FAILED", "Needs a person"), state
    assert "q4_typo.csv rejected" in (state.message or "")
    assert carried(state.result(raise_on_failure=False)) == {"exit_code": 1}
    assert (org_dir / "rejected" / "q4_typo.csv").exists()


def test_quiet_and_verbose_change_the_console_never_the_servers_logs(
    prefect_harness: None, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from fundpipe.app.cli import app

    runner = CliRunner()
    logs_by_option = {}
    for option in ("--quiet", "--verbose"):
        data_dir = tmp_path / option.strip("-")
        (data_dir / "orgs" / "org_demo" / "inbox").mkdir(parents=True)
        shutil.copy2(BROKEN, data_dir / "orgs" / "org_demo" / "inbox" / "q4_typo.csv")
        # the harness's server is this process's Prefect setting, not PREFECT_API_URL: asked
        result = runner.invoke(app, ["run", "--prefect", option, "--data-dir", str(data_dir)])
        assert result.exit_code == 1, result.output  # the file needs a person, either way
        if option == "--quiet":
            assert "org_demo" not in result.stdout
        # the run just made; its logs reach the server in batches, shortly after
        deadline = time.monotonic() + 30
        while True:
            lines = _newest_nightly_logs(f"org-night-demo-fund-administration-{tonight()}")
            if any(line.startswith("reconcile:") for line in lines) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        logs_by_option[option] = lines
    for lines in logs_by_option.values():
        assert any(line.startswith("file q4_typo.csv:") for line in lines), lines
        assert any(line.startswith("reconcile:") for line in lines), lines


def _newest_nightly_logs(run_name: str) -> list[str]:
    """The logs of the newest flow run whose name starts with `run_name` (org_demo's child of a
    nightly run)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    async def read() -> list[str]:
        async with get_client() as client:
            (run,) = await client.read_flow_runs(
                # names are unique within a day: `<run_name>-<time>-<id>`
                flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=f"{run_name}-")),
                sort=FlowRunSort.START_TIME_DESC,
                limit=1,
            )
            logs = await client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id]))
            )
        return [entry.message for entry in logs]

    return asyncio.run(read())
