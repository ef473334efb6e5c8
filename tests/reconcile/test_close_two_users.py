"""The second person reviews at their own login on a shared machine: one non-root OS user closes
a month with `fundpipe close month`, another (of the same team group, with the same write access
to the organization's data folder) reviews it with `fundpipe close review`. The review is its own
file beside the package: the package stays byte-identical and read-only, `close list` shows the
reviewer and `close verify` passes. A user without write access gets exit 6 and one line naming
the path and what was needed, never "a bug".

As root (as CI runs) the test creates the OS users and their group (`useradd`, `groupadd`), a
group-writable setgid data folder under /tmp, and runs each `fundpipe` through `runuser -u USER`
with umask 002 (a team's shared folder); it removes them after. Not root, it cannot become
another user: it closes and reviews as itself (the organization allowing a one-person close),
which still proves nothing is written into the read-only package, and the denied user is the
same user facing a `closed/` folder it may not write.

Each `fundpipe` is a real process of this checkout's code. The venv's python may live where
other users cannot reach it (pyenv under /root, mode 700): then the system's python of the same
minor version runs it, with the venv's site-packages.
"""

from __future__ import annotations

import contextlib
import getpass
import grp
import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: Several `fundpipe` processes of some seconds each: `make test` hands it out first.
pytestmark = pytest.mark.slow

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = SITE / "site-packages"
RUN_CLI = (
    "import sys; from fundpipe.app.cli import main; sys.argv[0] = 'fundpipe'; sys.exit(main())"
)
#: The same, for a python without the venv: the venv's site-packages (and its .pth files) first.
RUN_CLI_FROM_SITE = f"import site; site.addsitedir({str(SITE)!r}); {RUN_CLI}"
#: What the processes keep of this one's environment: libfaketime's, when the suite runs under it.
PERIOD_BEFORE_LAST = (
    "import datetime as d; t = d.date.today().replace(day=1) - d.timedelta(days=40); "
    "print(t.strftime('%Y-%m'))"
)
KEPT = ("LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_FAKE_MONOTONIC", "FAKETIME_NO_CACHE", "TZ")


@dataclass(frozen=True)
class Person:
    """An OS user to run `fundpipe` as (None: this process's own user) and their home."""

    user: str | None
    home: Path


@dataclass(frozen=True)
class Machine:
    """The shared machine: the organization's data folder, the people, how to run fundpipe."""

    data: Path
    preparer: Person
    reviewer: Person
    outsider: Person
    python: list[str]
    as_root: bool

    def fundpipe(
        self, person: Person, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `fundpipe ARGS` as `person`, with umask 002, in their home."""
        variables = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(person.home),
            "LANG": "C.UTF-8",
            "COLUMNS": "400",  # one error line stays one line
            "FUNDPIPE_DATA_DIR": str(self.data),
            "FUNDPIPE_CACHE_DIR": str(person.home / "cache"),
            "PREFECT_HOME": str(person.home / "prefect"),
            **{k: os.environ[k] for k in KEPT if k in os.environ},
            **(env or {}),
        }
        command = ["/bin/sh", "-c", 'umask 002 && exec "$@"', "sh", *self.python, *args]
        if person.user is not None:
            command = [
                "runuser",
                "-u",
                person.user,
                "--",
                "env",
                "-i",
                *(f"{k}={v}" for k, v in variables.items()),
                *command,
            ]
            variables = {}
        return subprocess.run(
            command,
            env=variables or None,
            cwd=person.home,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=60)


def _python_for(user: str) -> list[str]:
    """The interpreter `user` can run this checkout with: the venv's, or (when the venv's python
    is out of their reach) the system's of the same minor version, with the venv's packages."""
    own = [sys.executable, "-c", RUN_CLI]
    check = ["runuser", "-u", user, "--", sys.executable, "-c", "import fundpipe"]
    if subprocess.run(check, capture_output=True, timeout=60, check=False).returncode == 0:
        return own
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    reach = f"import site; site.addsitedir({str(SITE)!r}); import fundpipe.app.cli"
    check = ["runuser", "-u", user, "--", str(system), "-S", "-c", reach]
    if system.is_file():
        reached = subprocess.run(check, capture_output=True, timeout=120, check=False)
        if reached.returncode == 0:
            return [str(system), "-S", "-c", RUN_CLI_FROM_SITE]
    pytest.fail(
        f"the OS user {user} can run neither {sys.executable} nor {system} with this checkout's "
        f"packages ({SITE}): give other users read and search access to them"
    )


def _remove(base: Path) -> None:
    """Delete the machine's folder, read-only closed packages included."""
    for folder in [base, *(p for p in base.rglob("*") if p.is_dir() and not p.is_symlink())]:
        folder.chmod(0o700)
    shutil.rmtree(base)


@contextlib.contextmanager
def _shared_machine() -> Iterator[Machine]:
    """As root: a team group with two members and an outsider, a setgid data folder the team
    may write; removed after. Not root: this user in every role, in a folder of its own."""
    base = Path(tempfile.mkdtemp(prefix="fundpipe-two-users-", dir="/tmp"))
    base.chmod(0o755)
    data = base / "data"
    data.mkdir()
    if os.geteuid() != 0:
        me = Person(None, base)
        try:
            # this process's own python and import path: it runs as this user anyway
            here = f"import sys; sys.path[:0] = {sys.path!r}; {RUN_CLI}"
            yield Machine(data, me, me, me, [sys.executable, "-c", here], as_root=False)
        finally:
            _remove(base)
        return
    tag = f"{os.getpid() % 100000}"
    team, ana, ben, eve = (f"fp41{role}{tag}" for role in ("team", "ana", "ben", "eve"))
    made: list[str] = []
    try:
        _run("groupadd", team)
        for user, group in ((ana, ["-g", team]), (ben, ["-g", team]), (eve, ["-U"])):
            _run("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", *group, user)
            made.append(user)
        people = []
        for user in (ana, ben, eve):
            home = base / f"home-{user}"
            home.mkdir(mode=0o700)
            os.chown(home, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
            people.append(Person(user, home))
        os.chown(data, 0, grp.getgrnam(team).gr_gid)
        data.chmod(0o2775)  # the team writes it; what is made in it is the team's
        yield Machine(data, *people, _python_for(ana), as_root=True)
    finally:
        _remove(base)
        for user in made:
            subprocess.run(["userdel", user], capture_output=True, timeout=60, check=False)
        subprocess.run(["groupdel", team], capture_output=True, timeout=60, check=False)


def _package(folder: Path) -> dict[str, tuple[str, int]]:
    """Every entry of a closed package: its SHA-256 (a folder: "") and its mode."""
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "",
            stat.S_IMODE(p.stat().st_mode),
        )
        for p in sorted([folder, *folder.rglob("*")])
    }


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_another_os_user_of_the_team_reviews_a_month_closed_by_one_and_an_outsider_gets_exit_6() -> (
    None
):
    with _shared_machine() as machine:
        # a month that has ended on any day the suite runs (two months back, by their clock)
        period = subprocess.run(
            [sys.executable, "-c", PERIOD_BEFORE_LAST],
            capture_output=True,
            text=True,
            check=True,
            env={k: os.environ[k] for k in KEPT if k in os.environ},
        ).stdout.strip()
        alone = {} if machine.as_root else {"FUNDPIPE_ONE_PERSON_CLOSE": "true"}

        closed = machine.fundpipe(
            machine.preparer, "close", "month", period, "--prepared-by", "Ana Preparer"
        )
        assert closed.returncode == 0, closed.stderr
        folder = machine.data / "reports" / "closed" / period
        package = _package(folder)
        assert package["."][1] == 0o555  # read-only, as the close leaves it
        assert {mode for _, mode in package.values()} == {0o555, 0o444}

        # without write access: exit 6 and one line naming the path, nothing recorded
        if machine.as_root:
            denied = machine.fundpipe(
                machine.outsider, "close", "review", period, "--by", "Eve Outsider"
            )
        else:
            folder.parent.chmod(0o555)
            denied = machine.fundpipe(
                machine.outsider, "close", "review", period, "--by", "Eve Outsider", env=alone
            )
            folder.parent.chmod(0o775)
        line = _one_line(denied)
        assert denied.returncode == 6, denied.stderr
        assert line.startswith("error: permission denied: the OS user "), line
        assert str(machine.data) in line
        assert "needed write access to" in line
        assert "bug" not in line
        assert "Traceback" not in denied.stderr

        reviewed = machine.fundpipe(
            machine.reviewer, "close", "review", period, "--by", "Ben Reviewer", env=alone
        )
        assert reviewed.returncode == 0, reviewed.stderr
        assert "reviewed by Ben Reviewer" in reviewed.stdout
        assert _package(folder) == package  # byte-identical and still read-only
        review = folder.parent / f"{period}.v1.review.json"
        assert stat.S_IMODE(review.stat().st_mode) == 0o444
        if machine.as_root:
            assert review.stat().st_uid == pwd.getpwnam(str(machine.reviewer.user)).pw_uid

        listed = machine.fundpipe(machine.reviewer, "close", "list")
        assert listed.returncode == 0, listed.stderr
        # who typed each name, and at which login, is part of what is recorded
        assert (
            f"{period}  closed: prepared by Ana Preparer (typed at the CLI by OS user "
            f"{machine.preparer.user or getpass.getuser()}) on "
        ) in listed.stdout
        assert (
            f"reviewed by Ben Reviewer (typed at the CLI by OS user {machine.reviewer.user or getpass.getuser()}) on "
            in listed.stdout
        )
        assert "Eve" not in listed.stdout
        verified = machine.fundpipe(machine.preparer, "close", "verify", period)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "match the manifest, and the review matches the one recorded" in verified.stdout
