"""One night over two organizations (issue 15): each ends exactly as it would alone.

A sandbox over loopback with two demo organizations, listed in FUNDPIPE_ORGS. `org_demo` gets the
clean samples and one broken sheet; `org_demob` gets its own sample while the service answers its
requests (only its, `X-Organization-Id`-scoped faults) with 503 for a while. Both organizations'
distributions exist once, each has its reports under data/reports/<org>/, the rejected file and
its exception belong to org_demo alone, and the parent run's cross-organization summary adds up.
When one organization's service stays down, the other still completes and the parent run fails
naming the one that did not.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prefect_processes import tonight

from fundpipe.app.prefect import flows as night_flows
from fundpipe.app.prefect.nightsummary import summary_of_run
from fundpipe.config import Settings
from fundpipe.nights import NightsFailed
from fundpipe.sandbox import SandboxConfig, SandboxServer
from fundpipe.validate.files import validate_files

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
BROKEN = SAMPLES / "broken" / "negative_amount.csv"
ORGS = ("org_demo", "org_demob")

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=240):
        yield


@pytest.fixture
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig(seed="demo", demo_orgs=2)) as running:
        yield running


@pytest.fixture
def two_orgs(sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """FUNDPIPE_* for the two demo organizations at `sandbox`, and a drop in each inbox."""
    for name in ("FUNDPIPE_ORG_ID", "FUNDPIPE_CLIENT_SECRET_BLOCK", "FUNDPIPE_ORGS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FUNDPIPE_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("FUNDPIPE_CLIENT_ID", "demo-client")
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "demo-secret")
    monkeypatch.setenv(
        "FUNDPIPE_ORGS", json.dumps([{"id": "org_demo", "name": "Demo"}, {"id": "org_demob"}])
    )
    monkeypatch.setenv("FUNDPIPE_INBOX_SETTLE_S", "0")
    # the sandbox limits the demo client: the two organizations share its rate
    monkeypatch.setenv("FUNDPIPE_HOST_RATE_LIMIT_PER_S", "9")
    data = tmp_path / "data"
    demo_inbox = data / "orgs" / "org_demo" / "inbox"
    demo_inbox.mkdir(parents=True)
    for sheet in _sheets(SAMPLES):
        shutil.copy2(sheet, demo_inbox / sheet.name)
    shutil.copy2(BROKEN, demo_inbox / "q4_typo.csv")
    demob_inbox = data / "orgs" / "org_demob" / "inbox"
    demob_inbox.mkdir(parents=True)
    for sheet in _sheets(SAMPLES / "org_demob"):
        shutil.copy2(sheet, demob_inbox / sheet.name)
    return data


def _sheets(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".md")


def _expected(org: str) -> dict[str, int]:
    """Per external_reference, the cents the organization's clean sheets ask for."""
    reports = validate_files(_sheets(SAMPLES if org == "org_demo" else SAMPLES / org))
    expected: dict[str, int] = {}
    for report in reports:
        if report.distributions is not None:
            sums = report.distributions.groupby("external_reference")["amount_cents"].sum()
            for ref, cents in sums.items():
                expected[str(ref)] = expected.get(str(ref), 0) + int(cents)
    return expected


def _at_service(base_url: str, org: str) -> dict[str, list[int]]:
    from fundpipe.client import FundClient

    settings = Settings(
        _env_file=None,
        service={
            "base_url": base_url,
            "client_id": "demo-client",
            "client_secret": "demo-secret",
            "org_id": org,
        },
    )

    async def read() -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        async with FundClient(settings.client_config()) as client:
            async for distribution in client.list_distributions():
                cents = [p.amount async for p in client.list_distribution_payments(distribution.id)]
                found.setdefault(distribution.external_reference or "", []).append(sum(cents))
        return found

    return asyncio.run(read())


class _FaultsLifted(logging.Handler):
    """Lifts the sandbox's faults once the client has been answered 503 `after` times."""

    def __init__(self, base_url: str, after: int) -> None:
        super().__init__(logging.INFO)
        self.base_url, self.after, self.seen = base_url, after, 0

    def emit(self, record: logging.LogRecord) -> None:
        if "-> 503" in record.getMessage():
            self.seen += 1
            if self.seen == self.after:
                url = f"{self.base_url}/_sandbox/faults"
                threading.Thread(target=httpx.delete, args=(url,)).start()


def _fault(base_url: str, org: str) -> None:
    httpx.put(
        f"{base_url}/_sandbox/faults",
        json={"error_rate": 1.0, "statuses": [503], "retry_after_s": 1, "org_id": org},
    ).raise_for_status()


def test_two_organizations_each_end_as_they_would_alone(
    prefect_harness: None, sandbox: SandboxServer, two_orgs: Path
) -> None:
    lifted = _FaultsLifted(sandbox.base_url, after=3)
    client_log = logging.getLogger("fundpipe.client")
    client_log.addHandler(lifted)
    client_log.setLevel(logging.INFO)
    _fault(sandbox.base_url, "org_demob")
    try:
        state = night_flows.nightly(data_dir=str(two_orgs), return_state=True)
    finally:
        client_log.removeHandler(lifted)
    assert lifted.seen >= 3, "org_demob's requests were answered 503 for a while"
    # org_demo's rejected sheet needs a person: a state not shown green (FAILED type), named so
    assert (state.type.value, state.name) == ("FAILED", "Needs a person"), state.message
    assert "(org_demo): NEEDS A PERSON: q4_typo.csv rejected" in (state.message or "")
    assert "org_demob: OK" in (state.message or "")
    summary = summary_of_run(state).as_json()  # what `fundpipe run --json` prints
    rows = summary["organizations"]
    assert list(rows) == list(ORGS)

    for org in ORGS:
        # every distribution exactly once, with every cent its sheets asked for
        assert _at_service(sandbox.base_url, org) == {
            ref: [cents] for ref, cents in _expected(org).items()
        }
        # its reports, in its own folder
        assert (two_orgs / "reports" / org / "latest" / "reconciliation.xlsx").is_file()
        assert rows[org]["state"] == "Completed"
        assert rows[org]["total_cents"] == sum(_expected(org).values())
    assert sorted(p.name for p in (two_orgs / "reports").iterdir()) == sorted(ORGS)

    # the broken sheet, its report and its exception are org_demo's alone
    demo, demob = rows["org_demo"], rows["org_demob"]
    assert (two_orgs / "orgs" / "org_demo" / "rejected" / "q4_typo.csv").is_file()
    assert not (two_orgs / "orgs" / "org_demob" / "rejected").exists() or not any(
        (two_orgs / "orgs" / "org_demob" / "rejected").iterdir()
    )
    assert (demo["rejected"], demob["rejected"]) == (1, 0)
    # no exception stays open for it: distributions_q4.csv, in the same drop, carries every
    # distribution the broken copy names (nothing of it is lost); the verdict above names it
    assert "file_rejected" not in demo["summary"]["exception_counts"]
    assert "file_rejected" not in demob["summary"]["exception_counts"]
    assert [item["organization"] for item in summary["rejected_files"]] == ["org_demo"]
    # each organization's ledger is bound to the service and to it
    for org in ORGS:
        binding = json.loads((two_orgs / "orgs" / org / "ledger.binding.json").read_text())
        assert binding["organization"] == org

    # the cross-organization summary adds up
    totals = summary["totals"]
    for key in ("files", "rejected", "distributions", "total_cents", "open_exceptions"):
        assert totals[key] == sum(row[key] for row in rows.values()), key
    assert totals["total_cents"] == sum(sum(_expected(org).values()) for org in ORGS)
    assert (totals["organizations"], totals["failed"]) == (2, 0)
    # each row links its child run, named after its organization (by its name, else its id)
    # and unique within the day
    names = {_run_name(row["run"]) for row in rows.values()}
    assert {n.rsplit("-", 2)[0] for n in names} == {
        f"org-night-{o}-{tonight()}" for o in ("demo", "org_demob")
    }


def test_one_organization_down_fails_only_itself_and_the_parent_says_which(
    prefect_harness: None,
    sandbox: SandboxServer,
    two_orgs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FUNDPIPE_RETRY_DEADLINE_S", "2")
    monkeypatch.setenv("FUNDPIPE_MAX_ATTEMPTS", "2")
    _fault(sandbox.base_url, "org_demob")  # and never lifted
    state = night_flows.nightly(data_dir=str(two_orgs), return_state=True)
    assert state.is_failed(), state.message
    message = state.message or ""
    assert "org_demob: FAILED: " in message  # by name, why, on which host, what to do
    assert "run the night again" in message
    assert "Traceback" not in message
    assert "Traceback" not in _run_log(state.state_details.flow_run_id)
    # the failed parent's data is an exception a worker can read (never "Unexpected result for
    # failed state"), plain (a FundpipeError: no traceback in the run's log), with the summary
    with pytest.raises(NightsFailed):
        state.result()
    summary = summary_of_run(state).as_json()
    rows = summary["organizations"]
    assert rows["org_demo"]["state"] == "Completed"
    assert rows["org_demob"]["state"] == "Failed"
    assert rows["org_demob"]["exit_code"] == 3
    assert summary["exit_code"] == 3
    # org_demo's night went on regardless
    assert _at_service(sandbox.base_url, "org_demo") == {
        ref: [cents] for ref, cents in _expected("org_demo").items()
    }
    assert (two_orgs / "reports" / "org_demo" / "latest" / "reconciliation.xlsx").is_file()
    # org_demob's files wait in processing/ or its inbox for the next night: none was lost
    left = [
        p.name
        for sub in ("inbox", "processing")
        for p in (two_orgs / "orgs" / "org_demob" / sub).glob("*.csv")
    ]
    assert left == [p.name for p in _sheets(SAMPLES / "org_demob")]


def _run_name(run: str) -> str:
    from prefect.client.orchestration import get_client

    async def read() -> str:
        async with get_client() as client:
            return (await client.read_flow_run(uuid.UUID(run.rsplit("/", 1)[-1]))).name

    return asyncio.run(read())


def test_deployments_fan_out_without_its_deployment_stops_before_any_organization(
    prefect_harness: None,
    sandbox: SandboxServer,
    two_orgs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FUNDPIPE_FAN_OUT", "deployments")  # and no org-night deployment
    state = night_flows.nightly(data_dir=str(two_orgs), return_state=True)
    assert state.is_failed(), state.message
    message = state.message or ""
    assert "has no org-night/org-night deployment" in message
    assert "prefect deploy --all" in message
    assert "Traceback" not in message
    # no organization talked to the service, and every file still waits in its inbox
    logged = httpx.get(f"{sandbox.base_url}/_sandbox/request_log").json()["requests"]
    assert [r for r in logged if r["org_id"]] == []
    for org, folder in (("org_demo", SAMPLES), ("org_demob", SAMPLES / "org_demob")):
        waiting = {p.name for p in (two_orgs / "orgs" / org / "inbox").iterdir()}
        assert {p.name for p in _sheets(folder)} <= waiting


def test_a_stopped_child_leaves_its_exit_code_for_a_parent_on_another_worker(
    prefect_harness: None,
    sandbox: SandboxServer,
    two_orgs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With FUNDPIPE_FAN_OUT=deployments the parent reads a child's row from its artifact: a
    child stopped by a locked inbox leaves exit code 4 there, as a subflow's error would say."""
    from fundpipe.app.prefect import fanout, handoff
    from fundpipe.submit.inbox import InboxLock

    monkeypatch.setenv("FUNDPIPE_INBOX_LOCK_WAIT_S", "0")
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(two_orgs))
    with InboxLock(two_orgs / "orgs" / "org_demob"):  # another run holds org_demob's inbox
        state = fanout.org_night(org="org_demob", several=True, return_state=True)
    assert state.is_cancelled(), state.message
    assert handoff.row_left_by(state.state_details.flow_run_id) == {"exit_code": 4}


def _run_log(flow_run_id: uuid.UUID) -> str:
    """Every line of a flow run's log on the Prefect server (after sending what waits)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()

    async def read() -> str:
        async with get_client() as client:
            logs = await client.read_logs(
                LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
            )
        return "\n".join(log.message for log in logs)

    return asyncio.run(read())


def test_a_crash_in_a_child_or_the_parent_is_an_internal_error_with_its_traceback_logged(
    prefect_harness: None,
    sandbox: SandboxServer,
    two_orgs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception nobody expected, in one organization's night (a Prefect child) or in the
    parent, is exit 5: "internal error" in the run's state message, its traceback in the run's
    log — never 3, the service's."""
    import fundpipe.orgs
    import fundpipe.sync.pull
    from fundpipe.errors import ExitCode, InternalError

    real_sync = fundpipe.sync.pull.sync

    def sync_crashing_for_demob(settings: Settings, **kwargs: object) -> object:
        if settings.service.org_id == "org_demob":
            raise RuntimeError("injected crash in a child")
        return real_sync(settings, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fundpipe.sync.pull, "sync", sync_crashing_for_demob)
    state = night_flows.nightly(data_dir=str(two_orgs), return_state=True)
    assert state.is_failed(), state.message
    summary = summary_of_run(state)
    (row,) = [r for r in summary.rows if r.organization == "org_demob"]
    assert row.exit_code == ExitCode.INTERNAL
    assert "internal error (RuntimeError: injected crash in a child)" in row.message
    assert summary.exit_code == ExitCode.INTERNAL
    assert "org_demob: FAILED: internal error" in (state.message or "")
    child = uuid.UUID(row.run.rsplit("/", 1)[-1])
    logged = _run_log(child)
    assert "Traceback (most recent call last)" in logged
    assert "RuntimeError: injected crash in a child" in logged
    assert "Traceback" not in _run_log(state.state_details.flow_run_id)

    def crashing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected crash in the parent")

    monkeypatch.setattr(fundpipe.orgs, "find_organizations", crashing)
    state = night_flows.nightly(data_dir=str(two_orgs), return_state=True)
    assert state.is_failed()
    assert "internal error (RuntimeError: injected crash in the parent)" in (state.message or "")
    with pytest.raises(InternalError) as raised:
        summary_of_run(state)
    assert raised.value.exit_code == ExitCode.INTERNAL
    logged = _run_log(state.state_details.flow_run_id)
    assert "Traceback (most recent call last)" in logged
    assert "RuntimeError: injected crash in the parent" in logged
