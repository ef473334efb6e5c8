"""`fundpipe run` with no Prefect server configured runs the library night in its own process:
the same table, totals, exit code and reports as the Prefect flow, and no Prefect at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.app.cli.direct import needs_the_flow
from fundpipe.config import Settings

AS_OF = "2026-11-30"
#: What a person compares between two nights of the same sheets (not the run's id or link).
ROW_FIELDS = (
    "state",
    "files",
    "rejected",
    "distributions",
    "total_cents",
    "open_exceptions",
    "exit_code",
    "message",
    "verdict",
    "host",
    "rejected_names",
    "findings",
)


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[None]:
    """A Prefect server for this module's flow night (the one the direct night is compared to)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=240):
        yield


def _night(data_dir: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        app, ["run", *extra, "--samples", "--json", "--as-of", AS_OF, "--data-dir", str(data_dir)]
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, json.loads(result.stdout)


def _reports(data_dir: Path, org: str) -> dict[str, Any]:
    """Each Parquet report of an organization's latest night: its columns, rows and the sums
    of its money columns (ids and times differ between two services; what they add up to not)."""
    latest = data_dir / "reports" / org / "latest"
    out: dict[str, Any] = {"files": sorted(p.name for p in latest.iterdir())}
    for path in sorted(latest.glob("*.parquet")):
        table = pq.read_table(path)
        sums = {
            name: sum(v for v in table.column(name).to_pylist() if v is not None)
            for name in table.column_names
            if name.endswith("_cents")
        }
        out[path.name] = (table.column_names, table.num_rows, sums)
    return out


def test_the_direct_night_ends_as_the_flow_night(prefect_harness: None, tmp_path: Path) -> None:
    """The samples, once through the Prefect flow (`--prefect`) and once directly: the same
    rows, totals, exit code and report files, Parquet views alike."""
    flow_code, flow = _night(tmp_path / "flow", "--prefect")
    direct_code, direct = _night(tmp_path / "direct")
    assert direct_code == flow_code == 0
    assert direct["exit_code"] == flow["exit_code"]
    assert direct["totals"] == flow["totals"]
    assert direct["totals"]["distributions"] > 0
    assert set(direct["organizations"]) == set(flow["organizations"]) == {"org_demo", "org_demob"}
    for org, row in flow["organizations"].items():
        mine = direct["organizations"][org]
        assert {k: mine[k] for k in ROW_FIELDS} == {k: row[k] for k in ROW_FIELDS}, org
        assert mine["summary"]["facts"] == row["summary"]["facts"], org
        assert row["run"]  # a flow run's page
        assert not mine["run"]  # the direct night has none
        assert _reports(tmp_path / "direct", org) == _reports(tmp_path / "flow", org)


def test_a_direct_night_imports_no_prefect_and_starts_no_server(tmp_path: Path) -> None:
    """`fundpipe run --samples` on a fresh folder, as the README's first command: it completes
    without Prefect ever imported (so no temporary Prefect server could start), and its run-log
    lines are on standard error with --verbose."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('prefect imported:', 'prefect' in sys.modules, "
        "file=sys.stderr))\n"
        "from fundpipe.app.cli import main\n"
        f"sys.argv = ['fundpipe', 'run', '--samples', '--verbose', '--as-of', '{AS_OF}']\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # no profile naming a server
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "prefect imported: False" in done.stderr, done.stderr
    assert "org_demo reports:" in done.stdout
    assert "file distributions_q4.csv: processed" in done.stderr  # the run log, as the flow's
    assert "nightly: 2 organizations" in done.stderr
    assert not (tmp_path / "prefect-home").exists()  # Prefect never made its home


def test_which_night_runs_when(tmp_path: Path) -> None:
    """The flow when asked, when PREFECT_API_URL or the active Prefect profile names a server,
    when the secret is in a Prefect Secret block, or the children go to a work pool; the direct
    night otherwise."""
    settings = Settings(_env_file=None, local={"data_dir": tmp_path})  # type: ignore[call-arg]
    home = tmp_path / "home"
    plain = {"PREFECT_HOME": str(home)}
    assert not needs_the_flow(settings, False, plain)
    assert needs_the_flow(settings, True, plain)
    assert needs_the_flow(settings, False, {**plain, "PREFECT_API_URL": "http://p:4200/api"})
    home.mkdir()
    (home / "profiles.toml").write_text(
        'active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://p:4200/api"\n'
        '[profiles.local]\nPREFECT_LOGGING_LEVEL = "INFO"\n',
        encoding="utf-8",
    )
    assert needs_the_flow(settings, False, plain)
    assert not needs_the_flow(settings, False, {**plain, "PREFECT_PROFILE": "local"})
    blocked = settings.updated(service={"client_secret_block": "fundpipe-secret"})
    assert needs_the_flow(blocked, False, {**plain, "PREFECT_PROFILE": "local"})
    pooled = settings.updated(orchestration={"fan_out": "deployments"})
    assert needs_the_flow(pooled, False, {**plain, "PREFECT_PROFILE": "local"})
