"""Local accounts: argon2id, no default password, throttled failures, the first admin's
one-time link, `fundpipe desk user add` from standard input; members read again on change."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from desk_world import PASSWORD, QUICK_HASHER, DeskWorld, csrf_of, members_toml, sign_in
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fundpipe.app.cli import app as cli
from fundpipe.desk import Accounts

HTML = {"accept": "text/html"}


def _try(client: TestClient, email: str, password: str) -> int:
    token = csrf_of(client)
    return client.post(
        "/sign-in",
        data={"email": email, "password": password, "csrf_token": token},
        follow_redirects=False,
    ).status_code


def test_failed_sign_ins_are_throttled_per_account_and_per_address(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    now = [dt.datetime(2026, 11, 28, 9, tzinfo=dt.UTC)]
    client = client_of(desk_world, clock=lambda: now[0])
    assert [_try(client, "maria@example.com", "wrong guess!") for _ in range(5)] == [401] * 5
    # the right password is refused too now, for that account...
    assert _try(client, "maria@example.com", PASSWORD) == 429
    # ...and from that address for any account
    assert _try(client, "victor@example.com", PASSWORD) == 429
    now[0] += dt.timedelta(minutes=15)
    assert _try(client, "maria@example.com", PASSWORD) == 303
    refused = [e for e in _log(desk_world) if e["event"] == "sign_in_refused"]
    assert {e["detail"] for e in refused} == {"wrong email or password", "too many failures"}
    assert all(
        PASSWORD not in json.dumps(e) and "wrong guess" not in json.dumps(e)
        for e in _log(desk_world)
    )


def test_passwords_are_argon2id_and_an_unknown_email_signs_nobody_in(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path / "accounts.json", QUICK_HASHER)
    assert not accounts.any()
    accounts.add("Ana@Example.com", "Ana", PASSWORD)
    stored = json.loads((tmp_path / "accounts.json").read_text())["accounts"]
    assert stored["ana@example.com"]["hash"].startswith("$argon2id$")
    assert PASSWORD not in (tmp_path / "accounts.json").read_text()
    assert (tmp_path / "accounts.json").stat().st_mode & 0o077 == 0
    assert accounts.check("ana@example.com", PASSWORD) is not None
    assert accounts.check("ana@example.com", "not it at all") is None
    assert accounts.check("who@example.com", PASSWORD) is None


def test_the_first_admins_link_works_once(
    client_of: Callable[..., TestClient], tmp_path: Path
) -> None:
    world = DeskWorld(tmp_path / "data", {})
    (tmp_path / "data").mkdir()
    accounts = Accounts(world.data / "desk" / "accounts.json", QUICK_HASHER)
    token = accounts.first_admin_token()
    assert token is not None
    client = client_of(world)
    assert client.get("/first-admin/guessed", headers=HTML).status_code == 404
    csrf = csrf_of(client, f"/first-admin/{token}")
    made = client.post(
        f"/first-admin/{token}",
        data={
            "csrf_token": csrf,
            "email": "admin@example.com",
            "name": "Ada",
            "password": PASSWORD,
        },
        headers=HTML,
    )
    assert made.status_code == 200
    assert "The account admin@example.com is made" in made.text
    assert client.get(f"/first-admin/{token}", headers=HTML).status_code == 404
    assert accounts.first_admin_token() is None  # an account exists: no new link
    assert sign_in(client, "admin@example.com")
    assert token not in (world.data / "desk" / "desk.log").read_text()


def test_user_add_reads_the_password_from_stdin(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "desk",
            "user",
            "add",
            "Maria@Example.com",
            "--name",
            "Maria Lopez",
            "--data-dir",
            str(tmp_path),
        ],
        input=PASSWORD + "\n",
    )
    assert result.exit_code == 0, result.output
    assert "account maria@example.com (Maria Lopez) saved" in result.output
    assert Accounts(tmp_path / "desk" / "accounts.json").check("maria@example.com", PASSWORD)
    short = CliRunner().invoke(
        cli,
        ["desk", "user", "add", "x@example.com", "--name", "X", "--data-dir", str(tmp_path)],
        input="short\n",
    )
    assert short.exit_code == 2
    assert "at least 12 characters" in short.output
    assert "Traceback" not in short.output


def test_a_change_of_the_members_file_takes_effect_at_once_and_is_logged(
    client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world)
    sign_in(client, "nobody@example.com")
    assert client.get("/orgs/org_demo/exceptions", headers=HTML).status_code == 404
    people = {"nobody@example.com": ("No Body", [("org_demo", "viewer")])}
    own_world.members.write_text(members_toml(people), encoding="utf-8")
    stat = own_world.members.stat()  # a later modification time, as a later edit has
    os.utime(own_world.members, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert client.get("/orgs/org_demo/exceptions", headers=HTML).status_code == 200
    own_world.members.write_text("[[member]]\nemail = 'broken", encoding="utf-8")
    assert client.get("/orgs/org_demo/exceptions", headers=HTML).status_code == 404
    events = [e["event"] for e in _log(own_world) if e["event"].startswith("members")]
    assert events == ["members_read", "members_changed", "members_unreadable"]


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ('email = "a@x.com"\nname = "A"\norg = "o"\nrole = "boss"', "role 'boss' is not one of"),
        ('email = "a@x.com"\nname = "A"\norg = "o"', "needs role"),
    ],
)
def test_a_wrong_members_entry_is_named(entry: str, said: str) -> None:
    from fundpipe.desk._members import parse_members

    with pytest.raises(ValueError, match=re.escape(said)) as raised:
        parse_members(f"[[member]]\n{entry}\n", "members.toml")
    assert "members.toml: [[member]] 1" in str(raised.value)


def test_the_readme_table_of_rights_is_the_code_s() -> None:
    from fundpipe.desk import RIGHTS, Role

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    header = "| right | " + " | ".join(Role) + " |"
    assert header in readme
    for right, roles in RIGHTS.items():
        row = f"| {right.value} | " + " | ".join("yes" if r in roles else "no" for r in Role) + " |"
        assert row in readme, row


def _log(world: DeskWorld) -> list[dict[str, str]]:
    path = world.data / "desk" / "desk.log"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_missing_members_file_is_logged_once_and_gives_no_rights(tmp_path: Path) -> None:
    from fundpipe.desk._log import DeskLog
    from fundpipe.desk._members import Members, Right

    log = DeskLog(tmp_path / "desk.log", lambda: dt.datetime(2026, 11, 28, tzinfo=dt.UTC))
    members = Members(tmp_path / "members.toml", log)
    for _ in range(3):
        assert not members.may("maria@example.com", "org_demo", Right.SEE)
    assert [line["event"] for line in log.lines()] == ["members_missing"]
