"""With several organizations, the commands that only read cover every one of them without
`--org` (one section each, `--json` keyed by organization, the worst exit code); `fundpipe
config` shows each organization's folders and binding; a file dropped again is named as one."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.app.prefect import oncall
from fundpipe.app.prefect.artifacts import summary_markdown
from fundpipe.config import Organization, Settings
from fundpipe.night import night
from fundpipe.nights import OrgNight
from fundpipe.orgs import org_settings
from fundpipe.record import take_snapshot
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.submit.ingest import ingest
from fundpipe.submit.ledger import open_ledger
from fundpipe.warehouse.file import Warehouse
from worlds.submit import write_sheet
from worlds.warehouse import seed_known_world

runner = CliRunner()
DEMO = (Organization("org_demo", name="Demo Capital"), Organization("org_demob"))
#: The instant the tests' snapshots are taken at: never today's date.
TAKEN = dt.datetime(2026, 12, 1, 21, 25, tzinfo=dt.UTC)


def _two_orgs(data_dir: Path) -> dict[str, Settings]:
    """The layout `make run` leaves: `data/orgs/org_demo` and `data/orgs/org_demob`, each with
    a warehouse (org_demo's holding the known world)."""
    top = Settings(_env_file=None, local={"data_dir": data_dir})  # type: ignore[call-arg]
    per_org = {
        o.id or "": org_settings(top, o, among=DEMO, load_secret=None).settings for o in DEMO
    }
    for org, settings in per_org.items():
        settings.local.data_dir.mkdir(parents=True)
        warehouse = Warehouse(settings.local.warehouse_file)
        warehouse.migrate()
        if org == "org_demo":
            with warehouse.write() as con:
                seed_known_world(con)
    return per_org


@pytest.fixture
def two_orgs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Settings]:
    """Two organizations' folders, nothing configured: what the commands find on their own."""
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    return _two_orgs(tmp_path / "data")


def _sections(output: str) -> list[str]:
    return re.findall(r"^organization (\S+)", output, flags=re.MULTILINE)


def test_exceptions_list_covers_every_organization_without_org(
    two_orgs: dict[str, Settings],
) -> None:
    listed = runner.invoke(app, ["exceptions", "list"])
    assert listed.exit_code == 0, listed.output
    assert _sections(listed.output) == ["org_demo", "org_demob"]
    assert listed.output.count("no exceptions") == 2
    as_json = json.loads(runner.invoke(app, ["exceptions", "list", "--json"]).output)
    assert set(as_json) == {"org_demo", "org_demob"}
    assert as_json == {"org_demo": [], "org_demob": []}
    one = runner.invoke(app, ["exceptions", "list", "--org", "org_demob", "--json"])
    assert json.loads(one.output) == []  # one organization named: its list, as before


def test_close_list_covers_every_organization_without_org(two_orgs: dict[str, Settings]) -> None:
    listed = runner.invoke(app, ["close", "list"])
    assert listed.exit_code == 0, listed.output
    assert _sections(listed.output) == ["org_demo", "org_demob"]
    as_json = json.loads(runner.invoke(app, ["close", "list", "--json"]).output)
    assert set(as_json) == {"org_demo", "org_demob"}
    assert all(p["state"] for periods in as_json.values() for p in periods)


def test_commands_that_change_something_still_ask_for_org(two_orgs: dict[str, Settings]) -> None:
    for args in (
        ["exceptions", "ack", "EX-1", "--note", "paid"],
        ["close", "month", "2026-11", "--prepared-by", "ana"],
        ["backup", "--now"],
    ):
        asked = runner.invoke(app, args)
        assert asked.exit_code == 2, (args, asked.output)
        assert "2 organizations are configured (org_demo, org_demob): name one with --org" in (
            asked.output
        )
        assert "Traceback" not in asked.output


def test_backup_and_its_verify_cover_every_organization_with_the_worst_exit_code(
    two_orgs: dict[str, Settings],
) -> None:
    take_snapshot(two_orgs["org_demo"], clock=lambda: TAKEN)
    shown = runner.invoke(app, ["backup"])
    assert shown.exit_code == 0, shown.output
    assert _sections(shown.output) == ["org_demo", "org_demob"]
    assert "record/org_demo\n1 snapshot(s), the newest taken 2026-12-01 21:25 UTC" in shown.output
    assert "data/record/default" not in shown.output
    # org_demob's record holds nothing yet: the worst of the two is 1
    checked = runner.invoke(app, ["backup", "--verify"])
    assert checked.exit_code == 1, checked.output
    assert _sections(checked.output) == ["org_demo", "org_demob"]
    assert "match their SHA-256" in checked.output.split("organization org_demob")[0]
    take_snapshot(two_orgs["org_demob"], clock=lambda: TAKEN)
    as_json = runner.invoke(app, ["backup", "--verify", "--json"])
    assert as_json.exit_code == 0, as_json.output
    verified = json.loads(as_json.output)
    assert {org: v["ok"] for org, v in verified.items()} == {"org_demo": True, "org_demob": True}


def test_the_record_s_organizations_count_when_their_local_folders_are_gone(
    two_orgs: dict[str, Settings],
) -> None:
    """A machine that lost its data folder still sees what the record holds."""
    for settings in two_orgs.values():
        take_snapshot(settings, clock=lambda: TAKEN)
    shutil.rmtree(two_orgs["org_demob"].local.data_dir)
    shown = json.loads(runner.invoke(app, ["backup", "--json"]).output)
    assert set(shown) == {"org_demo", "org_demob"}
    assert [s["taken_at"] for s in shown["org_demob"]["snapshots"]] == [TAKEN.isoformat()]


def _sandbox(data_dir: Path) -> tuple[httpx.ASGITransport, dict[str, Settings]]:
    """A sandbox seeded with both demo organizations, and each one's settings pointed at it."""
    transport = httpx.ASGITransport(
        app=create_app(SandboxConfig(seed="demo", demo_orgs=2, rate_limit_requests=100_000))
    )
    top = Settings(
        _env_file=None,
        local={"data_dir": data_dir},
        http={"rate_limit_per_s": 10_000},
        pipeline={"inbox_settle_s": 0},
    ).with_service("http://sandbox.test")
    per_org = {
        o.id or "": org_settings(top, o, among=DEMO, load_secret=None).settings for o in DEMO
    }
    return transport, per_org


def test_config_shows_each_organization_with_its_folders_and_its_real_binding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport, per_org = _sandbox(tmp_path / "data")
    settings = per_org["org_demo"]
    (settings.local.data_dir / "inbox").mkdir(parents=True)
    write_sheet(settings.local.data_dir / "inbox" / "q4.csv", [("C-1", "veh_demo1", [100])])
    ingest(settings, transport=transport, settle_s=0)  # binds org_demo's ledger
    per_org["org_demob"].local.data_dir.mkdir(parents=True)  # a folder, never ingested
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FUNDPIPE_BASE_URL", "http://sandbox.test")
    values = json.loads(runner.invoke(app, ["config", "--json"]).output)
    orgs = values["organizations"]
    assert set(orgs) == {"org_demo", "org_demob"}
    demo = orgs["org_demo"]
    data = tmp_path / "data"
    assert demo["name"] == "Demo Capital"
    assert demo["inbox"] == str(data / "orgs" / "org_demo" / "inbox")
    assert demo["ledger"] == str(data / "orgs" / "org_demo" / "ledger.duckdb")
    assert demo["warehouse"] == str(data / "orgs" / "org_demo" / "warehouse.duckdb")
    assert demo["reports"] == str(data / "reports" / "org_demo")
    assert demo["record"] == str(data / "record" / "org_demo")
    assert demo["ledger bound to"].startswith("http://sandbox.test, organization org_demo (since")
    assert orgs["org_demob"]["ledger bound to"] == "nothing yet (the first ingest binds it)"
    table = runner.invoke(app, ["config"], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert "organization org_demo" in table.output
    assert "organization org_demob" in table.output
    assert "http://sandbox.test, organization org_demo" in table.output


def test_a_redropped_file_is_named_with_the_file_it_repeats_and_kept_once(tmp_path: Path) -> None:
    transport, per_org = _sandbox(tmp_path / "data")
    settings = per_org["org_demo"]
    inbox = settings.local.data_dir / "inbox"
    inbox.mkdir(parents=True)
    write_sheet(inbox / "distributions_q4.csv", [("C-1", "veh_demo1", [100, 200])])
    shutil.copy(inbox / "distributions_q4.csv", tmp_path / "distributions_q4.csv")
    as_of = dt.date(2026, 11, 30)
    night(settings, transport=transport, as_of=as_of)
    shutil.copy(tmp_path / "distributions_q4.csv", inbox / "distributions_q4.csv")
    again = OrgNight.of("org_demo", night(settings, transport=transport, as_of=as_of))

    (redropped,) = again.redropped
    said = re.compile(
        r"same content as `distributions_q4\.csv`, processed \d{4}-\d\d-\d\d \d\d:\d\d UTC: "
        r"nothing sent"
    )
    assert said.fullmatch(redropped.message or ""), redropped.message
    assert (
        oncall.file_line(redropped)
        == f"file distributions_q4.csv: dropped again — {redropped.message}"
    )
    markdown = summary_markdown(again)
    assert "## Files dropped again" in markdown
    assert f"- `distributions_q4.csv` — {redropped.message}" in markdown
    assert again.as_json()["redropped_files"] == [
        {"file": "distributions_q4.csv", "message": redropped.message}
    ]
    # processed/ keeps one file of that content; the ledger keeps the drop
    processed = settings.local.data_dir / "processed"
    assert [p.name for p in processed.iterdir()] == ["distributions_q4.csv"]
    assert redropped.moved_to == processed / "distributions_q4.csv"
    with open_ledger(settings.local.ledger_file) as ledger:
        (drop,) = ledger.redrops()
        first_name, processed_at = ledger.first_seen(redropped.file_hash)  # type: ignore[misc]
    assert (drop["source_file"], drop["same_as"]) == ("distributions_q4.csv", first_name)
    assert drop["same_as_processed_at"] == processed_at
    assert f"processed {processed_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC" in redropped.message


def test_a_file_twice_in_one_drop_is_named_after_the_first_and_not_copied(
    tmp_path: Path,
) -> None:
    transport, per_org = _sandbox(tmp_path / "data")
    settings = per_org["org_demob"]
    inbox = settings.local.data_dir / "inbox"
    inbox.mkdir(parents=True)
    write_sheet(inbox / "a.csv", [("B-1", "veh_demob1", [100])], entities=["ent_demob1"])
    shutil.copy(inbox / "a.csv", inbox / "b.csv")
    result = ingest(settings, transport=transport, settle_s=0)
    by_name = {f.source_file: f for f in result.files}
    assert by_name["b.csv"].state == "duplicate"
    assert by_name["b.csv"].message == "same content as `a.csv`, in this drop: nothing sent"
    assert by_name["a.csv"].state == "processed", by_name["a.csv"].message
    assert [p.name for p in (settings.local.data_dir / "processed").iterdir()] == ["a.csv"]
