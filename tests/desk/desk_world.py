"""A data folder the desk reads, made in seconds: two organizations, `org_demo` (the known
world, reconciled: open exceptions) and `org_demob` (the known world too, so its exceptions
have ids another organization's member could guess), local accounts and a members file."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from fundpipe.config import Organization, Settings, grouped
from fundpipe.desk import Accounts, Desk, DeskSettings
from fundpipe.orgs import org_settings
from fundpipe.reconcile import list_exceptions, reconcile
from fundpipe.warehouse import Warehouse
from worlds.warehouse import seed_known_world

KNOWN_AS_OF = dt.date(2026, 11, 30)
#: every test module's clock starts here (tests/conftest.py)
WORLD_START = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
ORGS = ("org_demo", "org_demob")
PASSWORD = "correct horse battery"

#: email → (name, [(org, role), …]); `nobody@` has an account and no organization
PEOPLE: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "maria@example.com": ("Maria Lopez", [("org_demo", "preparer")]),
    "victor@example.com": ("Victor Viewer", [("org_demo", "viewer")]),
    "rita@example.com": ("Rita Reviewer", [("org_demo", "reviewer")]),
    "bea@example.com": ("Bea Other", [("org_demob", "admin")]),
    "nobody@example.com": ("No Body", []),
}


def members_toml(people: dict[str, tuple[str, list[tuple[str, str]]]]) -> str:
    """The members file listing ``people``."""
    out = []
    for email, (name, entries) in people.items():
        for org, role in entries:
            out.append(
                f'[[member]]\nemail = "{email}"\nname = "{name}"\norg = "{org}"\nrole = "{role}"\n'
            )
    return "\n".join(out)


@dataclass(frozen=True)
class DeskWorld:
    """The data folder and what the tests need to know of it."""

    data: Path
    #: each organization's open exception ids
    open_ids: dict[str, list[str]]

    @property
    def members(self) -> Path:
        return self.data / "desk" / "members.toml"

    def org_settings(self, org: str) -> Settings:
        top = Settings(_env_file=None, local={"data_dir": self.data})  # type: ignore[call-arg]
        return org_settings(
            top, org, among=[Organization(id=o) for o in ORGS], load_secret=None
        ).settings

    def copy(self, to: Path) -> DeskWorld:
        """A copy to change, its desk's log empty (other tests' lines stay in theirs)."""
        shutil.copytree(self.data, to, symlinks=True)
        (to / "desk" / "desk.log").unlink(missing_ok=True)
        return DeskWorld(to, self.open_ids)


#: argon2id still, with parameters that take milliseconds (the desk's own take ~0.5 s a hash)
QUICK_HASHER = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)


def build_world(root: Path, cache_dir: Path) -> DeskWorld:
    """Both organizations' warehouses seeded and reconciled, accounts and members written:
    `org_demob` is a copy of `org_demo`'s folders, so the same exception ids are in both."""
    data = root / "data"
    world = DeskWorld(data, {})
    first, second = (world.org_settings(org) for org in ORGS)
    first.local.data_dir.mkdir(parents=True, exist_ok=True)
    wh = Warehouse(first.local.warehouse_file, cache_dir=cache_dir)
    with wh.write() as con:
        seed_known_world(con)
    reconcile(first, as_of=KNOWN_AS_OF, warehouse=wh)
    shutil.copytree(first.local.data_dir, second.local.data_dir)
    shutil.copytree(first.local.reports_folder, second.local.reports_folder, symlinks=True)
    ids = [e.id for e in list_exceptions(wh, state="open")]
    world.open_ids.update(dict.fromkeys(ORGS, ids))
    accounts = Accounts(data / "desk" / "accounts.json", QUICK_HASHER)
    for email, (name, _) in PEOPLE.items():
        accounts.add(email, name, PASSWORD)
    world.members.write_text(members_toml(PEOPLE), encoding="utf-8")
    return world


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(client: TestClient, path: str = "/sign-in") -> str:
    """The CSRF token a page of the desk gives this client's session."""
    page = client.get(path, headers={"accept": "text/html"})
    found = CSRF.search(page.text)
    assert found, f"{path} has no CSRF token: {page.status_code} {page.text[:200]}"
    return found.group(1)


def sign_in(client: TestClient, email: str, password: str = PASSWORD) -> str:
    """Sign ``client`` in with a local account; the session's CSRF token after."""
    token = csrf_of(client)
    answer = client.post(
        "/sign-in",
        data={"email": email, "password": password, "csrf_token": token},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    return csrf_of(client, "/morning")


def desk_over(world: DeskWorld, **desk: object) -> Desk:
    """The desk's configuration over ``world``'s data folder (`desk`: DeskSettings fields,
    `host`/`clock`, or `orgs`: FUNDPIPE_ORGS, the configured organizations and their names)."""
    from fundpipe.app.embedded import quiet_org_service

    extra: dict[str, object] = {"hasher": QUICK_HASHER, "service": quiet_org_service}
    extra |= {k: desk.pop(k) for k in ("host", "clock") if k in desk}
    fields: dict[str, object] = {"data_dir": world.data}
    if "orgs" in desk:
        fields["orgs"] = desk.pop("orgs")
    settings = Settings(**grouped(_env_file=None, **fields))
    return Desk(settings, DeskSettings(_env_file=None, **desk), **extra)  # type: ignore[arg-type, call-arg]
