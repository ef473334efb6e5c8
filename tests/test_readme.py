"""The README is true: every link inside it leads to a section, and every command its table
lists answers `--help` (exit 0, no type tag on a flag)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"
runner = CliRunner()


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation dropped, spaces
    to hyphens (a repeated heading gets `-1`, `-2`)."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _without_code_blocks(text), flags=re.M):
        slug = github_slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_the_slug_follows_github() -> None:
    assert github_slug("One ledger, one service and organization") == (
        "one-ledger-one-service-and-organization"
    )
    assert github_slug("What the person on call sees and hears") == (
        "what-the-person-on-call-sees-and-hears"
    )
    assert github_slug("The analyst's inbox workflow") == "the-analysts-inbox-workflow"


def test_every_link_inside_the_readme_leads_to_a_section() -> None:
    text = README.read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(#([^)\s]+)\)", _without_code_blocks(text)))
    assert links, "the README links to none of its sections"
    assert links <= anchors(text), sorted(links - anchors(text))


def test_no_section_is_named_in_italics_without_a_link() -> None:
    """'see *Some section*' reads as a link and leads nowhere: link it."""
    text = _without_code_blocks(README.read_text(encoding="utf-8"))
    assert not re.findall(r"see \*[A-Z][^*]+\*", text)


def table_commands() -> list[str]:
    """Each command of the README's command table, as its words before the first option."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    commands = []
    for cell in re.findall(r"^\| `fundpipe ([^`]+)`", section, flags=re.M):
        words = []
        for word in cell.split():
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            words.append(word)
        commands.append(" ".join(words))
    return sorted(set(commands))


def test_the_table_lists_commands() -> None:
    assert {"run", "validate", "ingest", "exceptions list", "close month", "config"} <= set(
        table_commands()
    )


@pytest.mark.parametrize("command", table_commands())
def test_every_command_of_the_table_answers_help(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    assert "<bool>" not in result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
