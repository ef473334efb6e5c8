"""`fundpipe validate --online`: what only the service knows, in the first report, sending nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.sandbox import SandboxConfig, SandboxServer

runner = CliRunner()

HEADER = "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,Amount ($)"


@pytest.fixture
def server() -> Iterator[SandboxServer]:
    """A demo sandbox over loopback, the way a configured service is reached."""
    with SandboxServer(SandboxConfig(seed="demo")) as running:
        yield running


@pytest.fixture
def service_env(server: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """FUNDPIPE_* pointing the CLI at ``server`` with the demo client; returns the data dir."""
    monkeypatch.delenv("FUNDPIPE_CLIENT_SECRET_BLOCK", raising=False)
    monkeypatch.setenv("FUNDPIPE_BASE_URL", server.base_url)
    monkeypatch.setenv("FUNDPIPE_CLIENT_ID", "demo-client")
    monkeypatch.setenv("FUNDPIPE_CLIENT_SECRET", "demo-secret")
    monkeypatch.setenv("FUNDPIPE_ORG_ID", "org_demo")
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path))
    return tmp_path


def test_an_entity_typo_is_found_online_and_not_offline(
    server: SandboxServer, service_env: Path
) -> None:
    sheet = service_env / "q4.csv"
    rows = [
        f"Q4,veh_demo1,Q4-ONLINE,2026-12-15 09:00,America/New_York,ent_demo{i},$10.00"
        for i in (1, 2)
    ]
    rows.append("Q4,veh_demo1,Q4-ONLINE,2026-12-15 09:00,America/New_York,ent_dmeo3,$10.00")
    sheet.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")

    offline = runner.invoke(app, ["validate", "--format", "json", str(sheet)])
    assert offline.exit_code == 0, offline.output

    online = runner.invoke(app, ["validate", "--online", "--format", "json", str(sheet)])
    assert online.exit_code == 1, online.output
    errors = json.loads(online.output)["files"][0]["errors"]
    (typo,) = [e for e in errors if e["value"] == "ent_dmeo3"]
    assert (typo["row"], typo["column"], typo["column_letter"]) == (4, "Entity ID", "F")
    assert "not found" in typo["reason"]
