"""The CLI reaches every exit code of `fundpipe.errors.ExitCode`, each for the reason it names."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.errors import EXIT_CODE_MEANINGS, ExitCode
from fundpipe.sandbox import SandboxConfig, SandboxServer
from fundpipe.submit.inbox import InboxLock
from worlds.machine import damage, duckdb_no_space, no_space

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"

runner = CliRunner()


@pytest.fixture
def server() -> Iterator[SandboxServer]:
    """A demo sandbox over loopback, the way a configured service is reached."""
    with SandboxServer(SandboxConfig(seed="demo")) as running:
        yield running


@pytest.fixture
def service_env(server: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """FUNDPIPE_* pointing the CLI at ``server`` with the demo client; returns the data dir."""
    for name in ("FUNDPIPE_ORG_ID", "FUNDPIPE_CLIENT_SECRET_BLOCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FUNDPIPE_BASE_URL", server.base_url)
    monkeypatch.setenv("FUNDPIPE_CLIENT_ID", "demo-client")
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "demo-secret")
    monkeypatch.setenv("FUNDPIPE_ORG_ID", "org_demo")
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("FUNDPIPE_INBOX_SETTLE_S", "0")
    return tmp_path


def _drop(data_dir: Path, *names: str) -> None:
    inbox = data_dir / "orgs" / "org_demo" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(SAMPLES / name, inbox / name)


def test_every_exit_code_is_in_the_help() -> None:
    result = runner.invoke(app, ["--help"])
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert f"{int(code)} {meaning}" in " ".join(result.output.split())


def test_a_valid_sheet_exits_0() -> None:
    result = runner.invoke(app, ["validate", str(SAMPLES / "distributions_q4.csv")])
    assert result.exit_code == ExitCode.OK == 0, result.output


def test_a_rejected_sheet_exits_1() -> None:
    sheet = SAMPLES / "broken" / "negative_amount.csv"
    result = runner.invoke(app, ["validate", str(sheet)])
    assert result.exit_code == ExitCode.NEEDS_PERSON == 1, result.output


def test_an_unreadable_input_exits_2() -> None:
    result = runner.invoke(app, ["validate", str(SAMPLES / "broken" / "binary.csv")])
    assert result.exit_code == ExitCode.USAGE == 2, result.output


def test_a_bad_option_value_exits_2_with_one_line() -> None:
    result = runner.invoke(app, ["validate", "--format", "xml", "x.csv"])
    assert result.exit_code == ExitCode.USAGE
    assert "--format must be table or json" in result.output
    assert "Traceback" not in result.output


def test_a_configuration_problem_exits_2(server: SandboxServer, service_env: Path) -> None:
    """A client that reaches two organizations needs --org (or FUNDPIPE_ORG_ID): a setting, not
    the service."""
    control = f"{server.base_url}/_sandbox"
    httpx.post(
        f"{control}/organizations", json={"id": "org_second", "name": "Second"}
    ).raise_for_status()
    httpx.post(
        f"{control}/clients",
        json={
            "client_id": "two-orgs",
            "client_secret": "two-orgs-secret",
            "organizations": ["org_demo", "org_second"],
        },
    ).raise_for_status()
    _drop(service_env, "distributions_q4.csv")
    env = {
        "FUNDPIPE_CLIENT_ID": "two-orgs",
        "FUNDPIPE_CLIENT_SECRET": "two-orgs-secret",
        "FUNDPIPE_ORG_ID": "",
    }
    result = runner.invoke(app, ["ingest"], env=env)
    assert result.exit_code == ExitCode.USAGE == 2, result.output
    assert "2 organizations are configured (org_demo, org_second): name one with --org" in " ".join(
        result.output.split()
    )


def test_a_service_refusal_exits_3(service_env: Path) -> None:
    result = runner.invoke(app, ["sync"], env={"FUNDPIPE_CLIENT_SECRET": "not-the-secret"})
    assert result.exit_code == ExitCode.SERVICE == 3, result.output
    assert "the service refused the request" in result.output
    assert "not-the-secret" not in result.output


def test_an_unreachable_service_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNDPIPE_MAX_ATTEMPTS", "1")
    env = {
        "FUNDPIPE_BASE_URL": "http://127.0.0.1:9",
        "FUNDPIPE_CLIENT_ID": "demo-client",
        "FUNDPIPE_CLIENT_SECRET": "demo-secret",
        "FUNDPIPE_ORG_ID": "org_demo",
        "FUNDPIPE_DATA_DIR": str(tmp_path),
    }
    result = runner.invoke(app, ["sync"], env=env)
    assert result.exit_code == ExitCode.SERVICE, result.output
    assert "ConnectError" in result.output


def test_a_held_inbox_lock_exits_4(service_env: Path) -> None:
    _drop(service_env, "distributions_q4.csv")
    org_dir = service_env / "orgs" / "org_demo"
    with InboxLock(org_dir):
        result = runner.invoke(app, ["ingest"])
    assert result.exit_code == ExitCode.LOCKED == 4, result.output
    assert "another fundpipe ingest is running" in result.output
    assert (org_dir / "inbox" / "distributions_q4.csv").exists()


def test_a_bug_exits_5_and_names_the_log_holding_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception nobody expected is a bug: exit 5, one line naming the log file that holds
    the traceback — never "the service failed", never a traceback on the terminal."""
    import fundpipe.validate.files

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("row_number")

    monkeypatch.setattr(fundpipe.validate.files, "validate_files", broken)
    monkeypatch.setattr("sys.argv", ["fundpipe", "validate"])
    sheet = str(SAMPLES / "distributions_q4.csv")
    result = runner.invoke(app, ["validate", "--data-dir", str(tmp_path), sheet])
    assert result.exit_code == ExitCode.INTERNAL == 5, result.output
    output = " ".join(result.output.split())
    log_file = tmp_path / "logs" / "fundpipe.log"
    assert "internal error (KeyError: 'row_number')" in output
    assert f"the traceback is in {log_file}" in output
    assert "service" not in output.replace("not a problem with the service", "")
    assert "Traceback" not in result.output
    logged = log_file.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in logged
    assert "KeyError: 'row_number'" in logged


# --- the machine's faults: exit 6, one line naming the file, nothing lost ------------------


def _org_dir(data_dir: Path) -> Path:
    return data_dir / "orgs" / "org_demo"


def _one_line(output: str) -> str:
    """The one line a failed command prints (beside the progress bars it drew on stderr)."""
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


def test_a_damaged_warehouse_exits_6_naming_it_and_writes_nothing_into_it(
    service_env: Path,
) -> None:
    """4 KB of the warehouse overwritten: sync (which would write into it) and reconcile stop
    with one line naming the file, the damage and the restore command; the file is untouched."""
    assert runner.invoke(app, ["sync"]).exit_code == 0
    assert runner.invoke(app, ["reconcile"]).exit_code == 0
    warehouse = _org_dir(service_env) / "warehouse.duckdb"
    problem = damage(warehouse, "balance_snapshots")
    damaged = warehouse.read_bytes()
    latest = (service_env / "reports" / "org_demo" / "latest").resolve()
    for command in (["sync"], ["reconcile"]):
        result = runner.invoke(app, command)
        assert result.exit_code == ExitCode.MACHINE == 6, result.output
        line = _one_line(result.output)
        assert f"the warehouse {warehouse} is damaged ({problem})" in line
        assert "fundpipe restore --org org_demo" in line
        assert "bug" not in line
    assert warehouse.read_bytes() == damaged
    assert (service_env / "reports" / "org_demo" / "latest").resolve() == latest


def test_an_ingest_reading_a_damaged_warehouse_exits_6_and_keeps_the_sheet(
    service_env: Path,
) -> None:
    """Ingest reads what the last sync saw from the warehouse: a damaged block there stops it
    before anything is sent; the sheet waits in processing/ for the run after the restore."""
    assert runner.invoke(app, ["sync"]).exit_code == 0
    warehouse = _org_dir(service_env) / "warehouse.duckdb"
    problem = damage(warehouse, "entities")  # "table entities: a block at byte … fails …"
    _drop(service_env, "distributions_q4.csv")
    result = runner.invoke(app, ["ingest"])
    assert result.exit_code == ExitCode.MACHINE, result.output
    line = _one_line(result.output)
    assert f"the warehouse {warehouse} is damaged" in line
    assert problem.removeprefix("table entities: ") in line
    assert "fundpipe restore --org org_demo" in line
    assert (_org_dir(service_env) / "processing" / "distributions_q4.csv").exists()


def test_a_damaged_ledger_exits_6_naming_it_and_keeps_the_sheet(service_env: Path) -> None:
    _drop(service_env, "distributions_q4.csv")
    runner.invoke(app, ["ingest"])  # the ledger now records the sheet (rejected or not)
    ledger = _org_dir(service_env) / "ledger.duckdb"
    problem = damage(ledger, "ledger_files")
    damaged = ledger.read_bytes()
    _drop(service_env, "distributions_q4_special.parquet")
    # a dry run reads it, and says so; a sync copies it into the warehouse, and says so
    for command in (["ingest", "--dry-run"], ["ingest"], ["sync"]):
        result = runner.invoke(app, command)
        assert result.exit_code == ExitCode.MACHINE, result.output
        line = _one_line(result.output)
        assert f"the ledger {ledger} is damaged" in line
        assert problem.split(": ", 1)[-1] in line
        assert "fundpipe restore --org org_demo" in line
        if command[0] == "ingest":  # read whole at its opening: the table is named
            assert f"the ledger {ledger} is damaged ({problem})" in line
    assert ledger.read_bytes() == damaged
    waiting = _org_dir(service_env) / "processing" / "distributions_q4_special.parquet"
    assert waiting.exists()


def test_a_full_disk_under_the_reports_exits_6_naming_the_workbook(
    service_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No space left while the workbook is written: exit 6 naming it; `latest` stays on the
    last complete report."""
    import zipfile

    assert runner.invoke(app, ["sync"]).exit_code == 0
    assert runner.invoke(app, ["reconcile"]).exit_code == 0
    latest_link = service_env / "reports" / "org_demo" / "latest"
    latest = latest_link.resolve()

    class FullDisk(zipfile.ZipFile):
        def __init__(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> None:
            if mode == "w" and str(file).endswith(".xlsx.part"):
                raise no_space()
            super().__init__(file, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipFile", FullDisk)
    # nothing changed since the first report: --rebuild writes one all the same (issue 44)
    result = runner.invoke(app, ["reconcile", "--rebuild"])
    assert result.exit_code == ExitCode.MACHINE, result.output
    line = _one_line(result.output)
    assert "the disk is full" in line
    assert "while writing the reconciliation workbook" in line
    assert f"{latest_link.parent}/{latest.parent.name}/" in line
    assert "/reconciliation.xlsx;" in line
    assert latest_link.resolve() == latest
    assert (latest / "reconciliation.xlsx").stat().st_size > 0


def test_a_full_disk_under_the_warehouse_exits_6_naming_it(
    service_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fundpipe.sync.pull

    warehouse = _org_dir(service_env) / "warehouse.duckdb"

    def full(*args: object, **kwargs: object) -> int:
        raise duckdb_no_space(Path(f"{warehouse}.wal"))

    monkeypatch.setattr(fundpipe.sync.pull, "merge", full)
    result = runner.invoke(app, ["sync"])
    assert result.exit_code == ExitCode.MACHINE, result.output
    line = _one_line(result.output)
    assert f"while writing the warehouse {warehouse}.wal" in line
    assert "the disk is full" in line


def test_a_full_disk_under_the_ledger_exits_6_and_keeps_the_sheet(
    service_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fundpipe.submit.ledger import Ledger

    ledger = _org_dir(service_env) / "ledger.duckdb"

    def full(*args: object, **kwargs: object) -> None:
        raise duckdb_no_space(Path(f"{ledger}.wal"))

    monkeypatch.setattr(Ledger, "record_file", full)
    _drop(service_env, "distributions_q4.csv")
    result = runner.invoke(app, ["ingest"])
    assert result.exit_code == ExitCode.MACHINE, result.output
    line = _one_line(result.output)
    assert f"while writing the ledger {ledger}.wal" in line
    assert (_org_dir(service_env) / "processing" / "distributions_q4.csv").exists()


def test_ingest_names_every_inbox_entry_it_leaves_alone(service_env: Path, tmp_path: Path) -> None:
    """Entries fundpipe does not read change no exit code, but each is named with its reason."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(SAMPLES / "distributions_q4.csv", elsewhere / "q4.csv")
    inbox = _org_dir(service_env) / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "q4.csv").symlink_to(elsewhere / "q4.csv")
    (inbox / "folder.csv").mkdir()
    (inbox / "memo.docx").write_bytes(b"PK")
    result = runner.invoke(app, ["ingest"])
    assert result.exit_code == ExitCode.OK, result.output
    output = " ".join(result.output.split())
    assert "nothing to ingest" in output
    assert "folder.csv — left alone: a folder" in output
    assert "q4.csv — left alone: a link to a file outside the inbox" in output
    assert "memo.docx — left alone: not a sheet fundpipe reads (.docx)" in output
    assert (elsewhere / "q4.csv").is_file()


def _crash(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected crash")


@pytest.mark.parametrize(
    ("layer", "target"),
    [
        # a sheet reader: pyarrow's CSV parser, which the reader calls for a CSV
        ("a sheet reader", "pyarrow.csv.read_csv"),
        # validation: the distribution checks a distribution sheet goes through
        ("validation", "fundpipe.validate.files.check_distributions"),
    ],
)
def test_a_crash_in_a_library_layer_is_an_internal_error_never_a_rejected_file(
    layer: str, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in reading or validating a sheet is not the sheet's fault: exit 5, "internal
    error", its traceback in the log — not "unreadable" (2) or "rejected" (1)."""
    monkeypatch.setattr(target, _crash)
    sheet = str(SAMPLES / "distributions_q4.csv")
    result = runner.invoke(app, ["validate", "--data-dir", str(tmp_path), sheet])
    assert result.exit_code == ExitCode.INTERNAL, (layer, result.output)
    output = " ".join(result.output.split())
    assert "internal error (RuntimeError: injected crash)" in output
    assert "unreadable" not in output
    assert "rejected" not in output
    logged = (tmp_path / "logs" / "fundpipe.log").read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in logged
    assert "RuntimeError: injected crash" in logged


def test_fundpipe_run_exits_1_for_a_night_that_needs_a_person_for_a_shortfall_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A night with no file rejected but a new $4,500 shortfall needs a person: `fundpipe run`
    exits 1 as for a rejected file (a cron or CI reading the code hears it), not 0; a clean
    night still exits 0."""
    from datetime import date

    from prefect.states import Completed

    from fundpipe.app.prefect import flows
    from fundpipe.app.prefect.nightsummary import org_row
    from fundpipe.app.prefect.verdict_state import line_of, night_state
    from fundpipe.config import Organization
    from fundpipe.nights import Nights, OrgNight
    from fundpipe.vocabulary import ExceptionRecord

    shortfall = ExceptionRecord(
        "EX-7", "open", 0, "veh_demo3 is short", 450_000, "fund the vehicle", "shortfall", True
    )
    org = Organization(id="org_demo", name="Demo Fund Administration")

    def night_with(*exceptions: ExceptionRecord) -> Any:
        # the library's night exits 0: no file was rejected
        child = OrgNight("org_demo", date(2026, 11, 28), exceptions=exceptions, exit_code=0)
        row = org_row(org, Completed(), child)
        summary = Nights.of([row], "2026-11-28")
        state = night_state([line_of(row)], data=summary)
        return lambda **kwargs: state

    monkeypatch.setattr(flows, "nightly", night_with(shortfall))
    result = runner.invoke(app, ["run", "--prefect", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == ExitCode.NEEDS_PERSON == 1, result.output
    assert json.loads(result.output)["exit_code"] == 1
    monkeypatch.setattr(flows, "nightly", night_with())
    result = runner.invoke(app, ["run", "--prefect", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == ExitCode.OK, result.output
