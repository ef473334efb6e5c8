"""The installed wheel is the product: built with `uv build`, installed in a fresh venv, it runs
a night from a directory far from the checkout — the schemas, templates and samples come from
the package, not from `schemas/` or `data/samples/` of a checkout.

The venv is filled from uv's cache (offline), so the test costs the build, the install and two
nights under a temporary Prefect server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.skipif(UV is None, reason="uv is installed by `make install`"),
]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600):
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (away from the checkout) with only the built wheel installed; its bin/."""
    assert UV is not None
    out = tmp_path_factory.mktemp("dist")
    built = _run([UV, "build", "--wheel", "--offline", "-o", str(out)], cwd=ROOT)
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("fundpipe-*.whl")
    venv = tmp_path_factory.mktemp("venv") / "venv"
    made = _run([UV, "venv", "--python", sys.executable, str(venv)], cwd=venv.parent)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    install = _run(
        [UV, "pip", "install", "--offline", "--python", str(python), str(wheel)], cwd=venv.parent
    )
    assert install.returncode == 0, install.stderr
    return venv / "bin"


def _env(bin_dir: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FUNDPIPE_"))}
    env.pop("PYTHONPATH", None)
    env.update(
        {
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "PREFECT_HOME": str(home / ".prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "FUNDPIPE_INBOX_SETTLE_S": "0",
        }
    )
    return env


def test_the_wheel_reads_its_data_from_the_package(installed: Path, tmp_path: Path) -> None:
    script = (
        "import fundpipe, fundpipe.resources as r; "
        "print(fundpipe.__file__); print(r.SCHEMAS_DIR / 'warehouse.sql'); "
        "print((r.SCHEMAS_DIR / 'warehouse.sql').is_file(), (r.SAMPLES_DIR).is_dir())"
    )
    shown = _run([str(installed / "python"), "-c", script], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    where, schema, found = shown.stdout.split("\n")[:3]
    venv = str(installed.parent)
    assert where.startswith(venv)
    assert schema.startswith(venv)
    assert not where.startswith(str(ROOT))
    assert found == "True True"


def test_the_wheel_runs_a_night_with_dropped_sheets_and_with_samples(
    installed: Path, tmp_path: Path
) -> None:
    """`fundpipe run` from a temporary directory: sheets dropped into an organization's inbox
    are submitted and reconciled on the embedded sandbox; then `fundpipe run --samples`."""
    work = tmp_path / "elsewhere"
    inbox = work / "data" / "orgs" / "org_demo" / "inbox"
    inbox.mkdir(parents=True)
    shutil.copy2(SAMPLES / "distributions_q4.csv", inbox / "q4.csv")
    # the roster creates the investors the sheet names
    shutil.copy2(SAMPLES / "roster_new_investors.xlsx", inbox / "roster.xlsx")
    fundpipe = str(installed / "fundpipe")
    env = _env(installed, tmp_path)

    night = _run([fundpipe, "run", "--json"], cwd=work, env=env)
    assert night.returncode == 0, night.stdout + night.stderr
    org_dir = work / "data" / "orgs" / "org_demo"
    assert (org_dir / "processed").is_dir()
    assert any((org_dir / "processed").rglob("q4.csv"))
    reports = work / "data" / "reports" / "org_demo" / "latest"
    assert (reports / "reconciliation.xlsx").is_file(), sorted(work.rglob("*.xlsx"))

    assert json.loads(night.stdout)["totals"]["distributions"] > 0

    # the samples come from the installed package (no data/samples here)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    samples = _run([fundpipe, "run", "--samples", "--json"], cwd=fresh, env=env)
    assert samples.returncode == 0, samples.stdout + samples.stderr
    processed = fresh / "data" / "orgs" / "org_demo" / "processed"
    assert any(processed.rglob("roster_new_investors.xlsx"))
    assert (fresh / "data" / "reports" / "org_demo" / "latest" / "reconciliation.xlsx").is_file()
    assert not any(tmp_path.rglob("logs/fundpipe.log"))  # no internal error on the way
