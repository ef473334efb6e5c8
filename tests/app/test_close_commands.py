"""`fundpipe close` is a group — `month`, `review`, `reject`, `reopen`, `list`, `verify` — and
every spelling from before the group still works for this release: it does the same and says
once, on stderr, which sub-command to use."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from fundpipe.app.cli import app

runner = CliRunner()

#: One month's whole close, each step in the group's words and in the words before it.
STEPS: list[tuple[list[str], list[str], str]] = [
    (
        ["month", "{p}", "--prepared-by", "Ana"],
        ["{p}", "--prepared-by", "Ana"],
        "month {p} --prepared-by NAME",
    ),
    (
        ["reject", "{p}", "--by", "Ben", "--reason", "D1 missing"],
        ["{p}", "--rejected-by", "Ben", "--reason", "D1 missing"],
        "reject {p} --by NAME --reason TEXT",
    ),
    (
        ["reopen", "{p}", "--by", "Ana", "--reason", "redo"],
        ["{p}", "--reopen", "--by", "Ana", "--reason", "redo"],
        "reopen {p} --by NAME --reason TEXT",
    ),
    (
        ["month", "{p}", "--prepared-by", "Ana", "--with-open-exceptions"],
        ["{p}", "--prepared-by", "Ana", "--with-open-exceptions"],
        "month {p} --prepared-by NAME --with-open-exceptions",
    ),
    (["review", "{p}", "--by", "Ben"], ["{p}", "--reviewed-by", "Ben"], "review {p} --by NAME"),
    (["verify", "{p}"], ["--verify", "{p}"], "verify {p}"),
    (["verify", "{p}"], ["{p}", "--verify"], "verify {p}"),
    (["list"], ["--list"], "list"),
]


def _close(args: list[str], period: str) -> Result:
    return runner.invoke(app, ["close", *(a.format(p=period) for a in args)])


def _same(output: str, period: str) -> str:
    """What a step printed, with its month, folder and hashes made comparable."""
    output = output.replace(period, "P")
    return re.sub(r"[0-9a-f]{64}", "SHA", output)


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An organization's data folder nothing has run in; one person may prepare and review (a
    CliRunner's commands all run as this process's OS user)."""
    monkeypatch.setenv("FUNDPIPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FUNDPIPE_ONE_PERSON_CLOSE", "true")
    return tmp_path / "data"


def test_each_old_spelling_does_what_its_sub_command_does_and_names_it_once(data: Path) -> None:
    for new, old, told in STEPS:
        now = _close(new, "2026-09")
        assert now.exit_code == 0, (new, now.output)
        assert now.stderr == ""
        before = _close(old, "2026-10")
        assert before.exit_code == 0, (old, before.output)
        if new != ["list"]:
            assert _same(before.stdout, "2026-10") == _same(now.stdout, "2026-09"), old
        spelled = told.format(p="2026-10")
        assert before.stderr.strip().splitlines() == [
            f"note: this spelling of `fundpipe close` goes in a later release; use "
            f"`fundpipe close {spelled}`"
        ], old
    listed = _close(["list"], "")
    typed = f"(typed at the CLI by OS user {getpass.getuser()})"
    said = " ".join(listed.stdout.split())  # the console wraps the longer lines
    for month in ("2026-09", "2026-10"):
        assert (
            f"{month} closed v2: prepared by Ana {typed} on 2026-11-28, reviewed by Ben {typed} on "
        ) in said
    closed = data / "reports" / "closed"
    assert sorted(p.name for p in closed.iterdir()) == [
        "2026-09",
        "2026-09.v1.review.json",
        "2026-09.v2.review.json",
        "2026-10",
        "2026-10.v1.review.json",
        "2026-10.v2.review.json",
    ]


def test_an_old_spelling_that_asks_for_nothing_is_a_usage_error_naming_the_sub_commands(
    data: Path,
) -> None:
    asked = runner.invoke(app, ["close", "2026-10"])
    assert asked.exit_code == 2, asked.output
    assert "close month 2026-10 --prepared-by NAME" in asked.stderr
    both = runner.invoke(app, ["close", "2026-10", "--prepared-by", "a", "--reviewed-by", "b"])
    assert both.exit_code == 2, both.output
    assert "--prepared-by and --reviewed-by are separate steps" in both.stderr
    assert not (data / "reports" / "closed").exists()
