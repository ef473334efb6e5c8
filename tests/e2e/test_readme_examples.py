"""The README's examples work on the data folder `make run` leaves.

A newcomer runs `make run` (`fundpipe run --samples`: both demo organizations, their sample
sheets, the embedded sandbox), then tries what the README shows. This test does the same from a
temporary directory, with the real command in its own process: every example in the README's
inline code or code blocks that only reads (`config`, `exceptions list`, `close list`,
`backup`, `backup --verify`, `validate FILE`, `ingest --dry-run FILE`, `version`) runs with its
placeholders filled in (`ORG` → `org_demo`, `FILE` → a sample sheet), exits 0 and shows no
traceback; those that cover every organization without `--org` show both. Then a second
`fundpipe run --samples` names each file it recognised and sends nothing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import openpyxl
import pytest
from prefect_processes import BIN, base_env

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SAMPLES = ROOT / "data" / "samples"

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(900)]

#: The reading commands the README shows, as the words after `fundpipe`.
READING = ("config", "exceptions list", "close list", "backup", "validate", "version")
READING += ("ingest --dry-run",)
#: Placeholders the README writes, and what a newcomer would type for them after `make run`.
FILLED = {
    "ORG": "org_demo",
    "org_a": "org_demo",
    "FILE": str(SAMPLES / "distributions_q4.csv"),
    "path/to/sheet.xlsx": str(SAMPLES / "roster_new_investors.xlsx"),
}

#: The embedded sandbox's demo organizations, by the names it gives them.
NAMES = {"org_demo": "Demo Fund Administration", "org_demob": "Demo Fund Administration B"}


def _forms(words: str) -> list[str]:
    """A synopsis as typed: `backup [--org ORG] [--verify]` → `backup`, `backup --verify`
    (an option group with a placeholder is left out; one without, such as a flag, is tried)."""
    groups = re.findall(r"\[([^\]]*)\]", words)
    base = re.sub(r"\s*\[[^\]]*\]", "", words).strip()
    flags = [g for g in groups if not re.search(r"[A-Z]{2,}|\|", g)]
    return [base] + [f"{base} {flag}" for flag in flags]


def readme_examples() -> list[str]:
    """Every `fundpipe …` example of a reading command in the README, as typed (a synopsis
    gives its forms; an example naming files by a pattern, `…/*.xlsx`, is left out)."""
    text = README.read_text(encoding="utf-8")
    spans = re.findall(r"`((?:\.venv/bin/)?fundpipe [^`\n]+)`", text)
    spans += re.findall(r"^\s*((?:\.venv/bin/)?fundpipe [^#\n]+)", text, flags=re.M)
    found = []
    for span in spans:
        words = span.strip().removeprefix(".venv/bin/").removeprefix("fundpipe ").strip()
        if not words.startswith(READING) or "--now" in words or "..." in words or "*" in words:
            continue
        for form in _forms(words):
            if form not in found:
                found.append(form)
    return found


def _fill(words: str) -> list[str]:
    return [FILLED.get(word, word) for word in shlex.split(words)]


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "fundpipe"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_readme_s_reading_examples_work_after_make_run(tmp_path: Path) -> None:
    examples = readme_examples()
    assert {"config", "exceptions list", "close list", "backup --verify"} <= set(examples), examples
    work = tmp_path / "checkout"
    work.mkdir()
    env = base_env(tmp_path / "prefect", None, work / "data")
    env["FUNDPIPE_INBOX_SETTLE_S"] = "0"
    first = _run(["run", "--samples"], work, env)
    assert first.returncode == 0, first.stdout + first.stderr
    # each workbook names its organization as the service does, never by its id (issue 42)
    for org, name in NAMES.items():
        book = work / "data" / "reports" / org / "latest" / "reconciliation.xlsx"
        title = next(openpyxl.load_workbook(book, read_only=True)["Summary"].values)[0]
        assert title == f"Reconciliation — {name}"

    for words in examples:
        shown = _run(_fill(words), work, env)
        said = shown.stdout + shown.stderr
        assert shown.returncode == 0, f"fundpipe {words}: exit {shown.returncode}\n{said}"
        assert "Traceback" not in said, f"fundpipe {words}\n{said}"
        if words in ("exceptions list", "close list", "backup", "backup --verify"):
            assert "org_demo" in said, f"fundpipe {words}\n{said}"
            assert "org_demob" in said, f"fundpipe {words}\n{said}"

    # the second `make run`: every file recognised, named as dropped again, nothing sent
    again = _run(["run", "--samples"], work, env)
    assert again.returncode == 0, again.stdout + again.stderr
    for sheet in ("distributions_q4.csv", "roster_new_investors.xlsx"):
        assert re.search(rf"same content as `?{re.escape(sheet)}`?", again.stdout), again.stdout
    processed = work / "data" / "orgs" / "org_demo" / "processed"
    names = sorted(p.name for p in processed.rglob("*") if p.is_file())
    assert not [n for n in names if re.search(r"-\d+\.(csv|xlsx|parquet)$", n)], names
