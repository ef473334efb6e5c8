"""The analyst's upload (issue 43): a sheet checked at once by the night's checks — the
service read for entities it knows — with every problem listed and its cell marked, nothing
dropped until it is clean; a clean sheet goes into the inbox recorded as the person's, and
is followed there. The embedded sandbox (no service configured) is the service read."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

from desk_world import PASSWORD, QUICK_HASHER, DeskWorld, members_toml, sign_in
from fastapi.testclient import TestClient

from fundpipe.desk import Accounts

HEADER = (
    "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,"
    "Amount ($),Currency,Date Override,Notify"
)
ROW = (
    "Q4 2026 Income Fund II Distribution,veh_demo2,Q4-2026-UPLOAD,{date},{zone},{entity},"
    '"{amount}",{currency},,'
)
CLEAN = [
    {"date": "2026-12-18 10:30", "zone": "America/Chicago", "entity": f"ent_demo{n}",
     "amount": f"${n},000.00", "currency": "USD"}
    for n in range(1, 6)
]  # fmt: skip


def _sheet(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("\n".join([HEADER, *(ROW.format(**r) for r in rows)]) + "\n", "utf-8")
    return path


def _broken() -> list[dict[str, str]]:
    """Five kinds of problem, one per row: an amount, a currency, an entity the service does
    not know (a typo only the online check sees), a timezone, a date."""
    rows = [dict(r) for r in CLEAN]
    rows[0]["amount"] = "$1,000.0x"
    rows[1]["currency"] = "USX"
    rows[2]["entity"] = "ent_dmeo3"
    rows[3]["zone"] = "America/Chicgo"
    rows[4]["date"] = "2026-13-18 10:30"
    return rows


def _post(client: TestClient, org: str, csrf: str, path: Path) -> object:
    with open(path, "rb") as fh:
        return client.post(
            f"/orgs/{org}/upload",
            data={"csrf_token": csrf},
            files={"sheet": (path.name, fh, "text/csv")},
            headers={"accept": "text/html"},
            follow_redirects=False,
        )


def _inbox(world: DeskWorld, org: str = "org_demo") -> list[str]:
    folder = world.data / "orgs" / org / "inbox"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_every_problem_is_shown_at_once_with_its_cell_marked_and_nothing_is_dropped(
    own_world: DeskWorld, client_of: Callable[..., TestClient], tmp_path: Path
) -> None:
    client = client_of(own_world)
    csrf = sign_in(client, "maria@example.com")
    answer = _post(client, "org_demo", csrf, _sheet(tmp_path / "q4_upload.csv", _broken()))
    assert answer.status_code == 422, answer.text  # type: ignore[attr-defined]
    text = answer.text  # type: ignore[attr-defined]
    listed = re.search(r'<table id="problem-list">(.*?)</table>', text, re.S)
    assert listed, text[:2000]
    rows = re.findall(r"<tr><td class=\"money\">(\d+)</td><td>([^<]*)</td>", listed[1])
    where = {(int(r), c) for r, c in rows}
    # each kind, on its row (as Excel numbers it) and in its column with the letter
    assert (2, "Amount ($) (G)") in where
    assert (3, "Currency (H)") in where
    assert (4, "Entity ID (F)") in where, "the entity typo is found in the same pass"
    assert (5, "Timezone (E)") in where
    assert (6, "Payment Date (D)") in where
    assert "ent_dmeo3" in listed[1]
    assert "USX" in listed[1]
    # the grid marks exactly those cells, the reason on each
    marked = re.findall(r'<td class="bad" title="([^"]+)">([^<]*)</td>', text)
    assert {value for _, value in marked} >= {
        "$1,000.0x",
        "USX",
        "ent_dmeo3",
        "America/Chicgo",
        "2026-13-18 10:30",
    }
    assert "checked against the service too" in text
    assert _inbox(own_world) == []  # nothing dropped
    assert not (own_world.data / "desk" / "uploads" / "org_demo.jsonl").exists()


def test_a_clean_sheet_goes_to_the_inbox_as_the_persons_and_is_never_written_over(
    own_world: DeskWorld, client_of: Callable[..., TestClient], tmp_path: Path
) -> None:
    client = client_of(own_world)
    csrf = sign_in(client, "maria@example.com")
    sheet = _sheet(tmp_path / "q4_upload.csv", CLEAN)
    sent = sheet.read_bytes()
    answer = _post(client, "org_demo", csrf, sheet)
    assert answer.status_code == 303, answer.text  # type: ignore[attr-defined]
    followed = answer.headers["location"]  # type: ignore[attr-defined]
    assert re.fullmatch(r"/orgs/org_demo/upload/[0-9a-f]{12}\?done=uploaded", followed)
    assert _inbox(own_world) == ["q4_upload.csv"]
    assert (own_world.data / "orgs/org_demo/inbox/q4_upload.csv").read_bytes() == sheet.read_bytes()
    (line,) = (own_world.data / "desk/uploads/org_demo.jsonl").read_text().splitlines()
    recorded = json.loads(line)
    assert (recorded["by_name"], recorded["by_email"], recorded["identity"]) == (
        "Maria Lopez",
        "maria@example.com",
        "desk:local:maria@example.com",
    )
    assert (recorded["rows"], recorded["total_cents"]) == (5, 15_000_00)

    one = client.get(followed, headers={"accept": "text/html"})
    assert one.status_code == 200
    assert "waiting" in re.search(r'<td id="progress"[^>]*>(.*?)</td>', one.text, re.S)[1]  # type: ignore[index]
    assert "Maria Lopez (maria@example.com)" in one.text
    # a page left open on a waiting file looks again by itself (no script: a meta refresh)
    assert '<meta http-equiv="refresh" content="30">' in one.text
    assert "$15,000.00" in one.text

    # the same name again is refused, whatever it holds: nothing is written over
    other = tmp_path / "other"
    other.mkdir()
    again = _post(client, "org_demo", csrf, _sheet(other / "q4_upload.csv", CLEAN[:2]))
    assert again.status_code == 409  # type: ignore[attr-defined]
    assert "already waiting in the inbox" in again.text  # type: ignore[attr-defined]
    assert (own_world.data / "orgs/org_demo/inbox/q4_upload.csv").read_bytes() == sent
    # the list shows the upload and who made it
    listing = client.get("/orgs/org_demo/upload", headers={"accept": "text/html"})
    assert "q4_upload.csv" in listing.text
    assert "Maria Lopez" in listing.text
    assert '<td class="state-waiting">waiting</td>' in listing.text
    morning = client.get("/morning", headers={"accept": "text/html"}).text
    assert "q4_upload.csv</a>: <strong>waiting</strong>" in morning
    # another member's morning does not list Maria's uploads as theirs
    rita = client_of(own_world)
    sign_in(rita, "rita@example.com")
    assert "q4_upload.csv" not in rita.get("/morning", headers={"accept": "text/html"}).text


def test_the_upload_is_for_analysts_and_above_and_refuses_what_is_not_a_sheet(
    own_world: DeskWorld, client_of: Callable[..., TestClient], tmp_path: Path
) -> None:
    viewer = client_of(own_world)
    csrf = sign_in(viewer, "victor@example.com")
    sheet = _sheet(tmp_path / "q4_upload.csv", CLEAN)
    assert viewer.get("/orgs/org_demo/upload", headers={"accept": "text/html"}).status_code == 403
    assert _post(viewer, "org_demo", csrf, sheet).status_code == 403  # type: ignore[attr-defined]
    # another organization's upload is 404 for a member of this one, its form too
    assert viewer.get("/orgs/org_demob/upload", headers={"accept": "text/html"}).status_code == 404
    assert _post(viewer, "org_demob", csrf, sheet).status_code == 404  # type: ignore[attr-defined]

    maria = client_of(own_world)
    csrf = sign_in(maria, "maria@example.com")
    # without the CSRF token: 403, nothing dropped
    with open(sheet, "rb") as fh:
        bare = maria.post("/orgs/org_demo/upload", files={"sheet": (sheet.name, fh, "text/csv")})
    assert bare.status_code == 403
    script = tmp_path / "payload.sh"
    script.write_text("#!/bin/sh\nrm -rf /\n")
    refused = _post(maria, "org_demo", csrf, script)
    assert refused.status_code == 400  # type: ignore[attr-defined]
    assert "not a sheet fundpipe reads" in refused.text  # type: ignore[attr-defined]
    # a name that tries to leave the inbox stays in it
    with open(sheet, "rb") as fh:
        climbing = maria.post(
            "/orgs/org_demo/upload",
            data={"csrf_token": csrf},
            files={"sheet": ("../../../escape.csv", fh, "text/csv")},
            follow_redirects=False,
        )
    assert climbing.status_code == 303, climbing.text
    assert _inbox(own_world) == ["escape.csv"]
    assert not (own_world.data / "escape.csv").exists()
    assert not (own_world.data.parent / "escape.csv").exists()


def test_the_upload_is_followed_through_the_night_to_the_distributions_it_created(
    tmp_path: Path, client_of: Callable[..., TestClient]
) -> None:
    """A data folder as `make run` starts one: no night yet. The analyst's clean sheet goes in,
    the night (`fundpipe run`, in this process on the test's clock) processes it, and the
    upload's page names the distribution it created at the service. The same content under
    another name is then refused at the upload, as already submitted."""
    from typer.testing import CliRunner

    from fundpipe.app.cli import app as cli

    data = tmp_path / "data"
    (data / "orgs" / "org_demo").mkdir(parents=True)
    world = DeskWorld(data, {})
    accounts = Accounts(data / "desk" / "accounts.json", QUICK_HASHER)
    accounts.add("ana@example.com", "Ana Analyst", PASSWORD)
    world.members.write_text(
        members_toml({"ana@example.com": ("Ana Analyst", [("org_demo", "analyst")])}), "utf-8"
    )
    client = client_of(world)
    csrf = sign_in(client, "ana@example.com")
    sheet = _sheet(tmp_path / "q4_upload.csv", CLEAN)
    answer = _post(client, "org_demo", csrf, sheet)
    assert answer.status_code == 303, answer.text  # type: ignore[attr-defined]
    followed = answer.headers["location"]  # type: ignore[attr-defined]

    # the file was written on the machine's clock, the night runs on the test's: settle at once
    night = CliRunner().invoke(
        cli, ["run", "--data-dir", str(data)], env={"FUNDPIPE_INBOX_SETTLE_S": "0"}
    )
    assert night.exit_code in {0, 1}, night.output  # 1: exceptions to look at, not a failure

    one = client.get(followed, headers={"accept": "text/html"})
    progress = re.search(r'<td id="progress"[^>]*>(.*?)</td>', one.text, re.S)
    assert progress, one.text[:2000]
    assert "processed" in progress[1], progress[1]
    assert 'http-equiv="refresh"' not in one.text  # nothing more to wait for
    # the analyst's morning says where her upload went, and the upload list too
    morning = client.get("/morning", headers={"accept": "text/html"}).text
    mine = re.search(r'<ul class="uploads" id="uploads-org_demo">(.*?)</ul>', morning, re.S)
    assert mine, morning[:3000]
    assert "q4_upload.csv</a>: <strong>processed</strong>" in mine[1]
    listing = client.get("/orgs/org_demo/upload", headers={"accept": "text/html"}).text
    assert '<td class="state-processed">processed</td>' in listing
    created = re.search(r'<table id="created">(.*?)</table>', one.text, re.S)
    assert created, one.text[:3000]
    assert "Q4 2026 Income Fund II Distribution" in created[1]
    assert re.search(r'<td class="id">dst_\w+</td>', created[1]), created[1]
    assert "$15,000.00" in created[1]

    renamed = tmp_path / "again"
    renamed.mkdir()
    twice = _post(client, "org_demo", csrf, _sheet(renamed / "q4_again.csv", CLEAN))
    assert twice.status_code == 409  # type: ignore[attr-defined]
    assert "submitted already, as q4_upload.csv (processed)" in twice.text  # type: ignore[attr-defined]


def test_a_hostile_workbook_is_refused_as_the_inbox_refuses_it_and_nothing_is_dropped(
    own_world: DeskWorld, client_of: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A zip bomb posing as a workbook is refused by its directory, before anything expands;
    a formula in a cell is shown as the text it is, never evaluated."""
    client = client_of(own_world)
    csrf = sign_in(client, "maria@example.com")
    bomb = tmp_path / "q4_bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (64 * 1024 * 1024))
    assert bomb.stat().st_size < 1024 * 1024  # small on the wire
    with open(bomb, "rb") as fh:
        answer = client.post(
            "/orgs/org_demo/upload",
            data={"csrf_token": csrf},
            files={"sheet": (bomb.name, fh, "application/octet-stream")},
            headers={"accept": "text/html"},
            follow_redirects=False,
        )
    assert answer.status_code == 422, answer.text
    assert "compression ratio" in answer.text
    assert "Traceback" not in answer.text

    rows = [dict(r) for r in CLEAN]
    rows[1]["entity"] = "=cmd|' /C calc'!A0"
    formula = _post(client, "org_demo", csrf, _sheet(tmp_path / "q4_formula.csv", rows))
    assert formula.status_code == 422  # type: ignore[attr-defined]
    text = formula.text  # type: ignore[attr-defined]
    # the cell is named as the text it is (escaped), the formula never run
    listed = re.search(r'<table id="problem-list">(.*?)</table>', text, re.S)
    assert listed, text[:3000]
    assert "=cmd|&#39; /C calc&#39;!A0" in listed[1], listed[1]
    assert _inbox(own_world) == []
    assert not list((own_world.data / "desk").glob("uploads/*.jsonl"))
