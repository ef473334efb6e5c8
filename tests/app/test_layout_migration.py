"""The single-organization layout moves once into data/orgs/<org>/, loss-free, saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fundpipe.config import Organization, Settings, grouped
from fundpipe.errors import ConfigurationError
from fundpipe.layout import migrate_layout

ORG_A, ORG_B = Organization(id="org_a"), Organization(id="org_b")


def _settings(data_dir: Path, **values: object) -> Settings:
    return Settings(**grouped(data_dir=data_dir, _env_file=None, **values))  # type: ignore[call-arg]


def _old_layout(data: Path, organization: str = "org_a") -> dict[str, bytes]:
    """A data directory as a single-organization fundpipe left it; returns path → content."""
    files = {
        "inbox/q4.csv": b"waiting",
        "processing/half.csv": b"in flight",
        "processing/.validated/abc.json": b"{}",
        "processed/q3.csv": b"done",
        "rejected/typo.csv": b"bad",
        "rejected/typo.csv.errors.csv": b"row,column",
        "ledger.duckdb": b"ledger",
        "warehouse.duckdb": b"warehouse",
        "reports/2026-11-23/010203Z/reconciliation.xlsx": b"xlsx",
    }
    for name, content in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(content)
    (data / "ledger.binding.json").write_text(
        json.dumps({"service": "https://api.example.com", "organization": organization}),
        encoding="utf-8",
    )
    (data / "reports" / "latest").symlink_to("2026-11-23/010203Z", target_is_directory=True)
    (data / "sandbox").mkdir()
    (data / "sandbox" / "sandbox.sqlite").write_bytes(b"shared")
    (data / "inbox" / ".gitkeep").write_bytes(b"")
    return files


def test_the_old_layout_moves_into_the_bound_organization_loss_free(tmp_path: Path) -> None:
    data = tmp_path / "data"
    files = _old_layout(data, organization="org_b")
    message = migrate_layout(_settings(data), [ORG_A, ORG_B])
    assert message is not None
    assert "organization org_b" in message
    assert str(data / "orgs" / "org_b") in message
    assert str(data / "reports" / "org_b") in message
    for name, content in files.items():
        if name.startswith("reports/"):
            moved = data / "reports" / "org_b" / name.removeprefix("reports/")
        else:
            moved = data / "orgs" / "org_b" / name
        assert moved.read_bytes() == content, name
        assert not (data / name).exists()
    binding = data / "orgs" / "org_b" / "ledger.binding.json"
    assert json.loads(binding.read_text(encoding="utf-8"))["organization"] == "org_b"
    # the latest link still points at the newest report
    latest = data / "reports" / "org_b" / "latest"
    assert (latest / "reconciliation.xlsx").read_bytes() == b"xlsx"
    # shared state stays; a git checkout's .gitkeep stays
    assert (data / "sandbox" / "sandbox.sqlite").read_bytes() == b"shared"
    assert (data / "inbox" / ".gitkeep").exists()
    # once: nothing left to move
    assert migrate_layout(_settings(data), [ORG_A, ORG_B]) is None


def test_unbound_state_goes_to_the_single_organization_or_fundpipe_org_id(tmp_path: Path) -> None:
    data = tmp_path / "single"
    _old_layout(data, organization="")
    (data / "ledger.binding.json").unlink()
    assert migrate_layout(_settings(data), [ORG_A]) is not None
    assert (data / "orgs" / "org_a" / "inbox" / "q4.csv").exists()
    several = tmp_path / "several"
    _old_layout(several, organization="")
    with pytest.raises(ConfigurationError, match="set FUNDPIPE_ORG_ID"):
        migrate_layout(_settings(several), [ORG_A, ORG_B])
    assert (several / "inbox" / "q4.csv").exists()  # nothing moved
    assert migrate_layout(_settings(several, org_id="org_b"), [ORG_A, ORG_B]) is not None
    assert (several / "orgs" / "org_b" / "ledger.duckdb").read_bytes() == b"ledger"


def test_a_clash_refuses_before_moving_anything(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _old_layout(data)
    newer = data / "orgs" / "org_a" / "ledger.duckdb"
    newer.parent.mkdir(parents=True)
    newer.write_bytes(b"another ledger")
    before = sorted(str(p) for p in data.rglob("*"))
    with pytest.raises(ConfigurationError) as caught:
        migrate_layout(_settings(data), [ORG_A])
    assert "already exists: nothing was moved" in str(caught.value)
    assert sorted(str(p) for p in data.rglob("*")) == before
    assert newer.read_bytes() == b"another ledger"


def test_state_bound_to_an_unconfigured_organization_is_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _old_layout(data, organization="org_gone")
    with pytest.raises(
        ConfigurationError,
        match=r"organization org_gone \(its ledger is bound to it\), which is not configured",
    ):
        migrate_layout(_settings(data), [ORG_A, ORG_B])
    assert (data / "ledger.duckdb").exists()


def test_explicit_ledger_and_warehouse_paths_stay_where_they_are(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _old_layout(data)
    settings = _settings(
        data, ledger_path=data / "ledger.duckdb", warehouse_path=data / "warehouse.duckdb"
    )
    migrate_layout(settings, [ORG_A])
    assert (data / "ledger.duckdb").exists()
    assert (data / "warehouse.duckdb").exists()
    assert (data / "orgs" / "org_a" / "inbox" / "q4.csv").exists()
    assert (data / "orgs" / "org_a" / "processed" / "q3.csv").exists()


def test_the_first_command_moves_the_layout_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from fundpipe.app.cli import app

    data = tmp_path / "data"
    (data / "inbox").mkdir(parents=True)
    (data / "inbox" / "q4.csv").write_text("waiting\n", encoding="utf-8")
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(data))
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "http://127.0.0.1:9")  # never reached
    monkeypatch.setenv("FUNDPIPE_ORGS", "org_a")
    runner = CliRunner()
    first = runner.invoke(app, ["exceptions", "list"])
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())
    assert "moved the single-organization layout" in said
    assert f"inbox into {data / 'orgs' / 'org_a'}" in said
    assert (data / "orgs" / "org_a" / "inbox" / "q4.csv").read_text() == "waiting\n"
    second = runner.invoke(app, ["exceptions", "list"])
    assert second.exit_code == 0, second.output
    assert "moved" not in second.output
