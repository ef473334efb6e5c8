"""How `--help` reads: sentences that rich wraps to the terminal, and no type tag on a flag.

Two habits of typer's rich help, fixed here once for every command rather than in each
docstring:

- in rich markup mode typer keeps a docstring's single line breaks (only the first paragraph
  of a command's own help is joined), so a docstring wrapped at 100 columns breaks
  mid-sentence at 80 ("filed in / data/reports/…"). `as_sentences` joins each paragraph's
  lines; a blank line still starts a new paragraph, and a paragraph that starts with `\\b`
  keeps its lines (click's marker for preformatted text).
- typer shows a type column for every parameter, so every flag reads `<bool>`; a flag takes
  no value, and its type says nothing a person needs.

Every fundpipe app is a `Typer` from here, which builds its commands and groups with the
classes below.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

__all__ = ["SentencesCommand", "SentencesGroup", "Typer", "as_sentences"]


def as_sentences(text: str | None) -> str | None:
    """`text` with each paragraph on one line, for rich to wrap to the terminal's width."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph if paragraph.startswith("\b") else " ".join(paragraph.split())
        for paragraph in paragraphs
    )


def _untyped_flag(param: object) -> None:
    """A flag shows no type (`<bool>`): an empty metavar is what typer's type column prints."""
    if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
        param.metavar = ""


class _Sentences:
    """What a command and a group share: help as sentences, and flags (`--help` too) with no
    type. Mixed in before click's class, whose `__init__` and `get_help_option` it wraps."""

    help: str | None
    short_help: str | None
    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = as_sentences(self.help)
        self.short_help = as_sentences(self.short_help)
        for param in self.params:
            _untyped_flag(param)

    def get_help_option(self, ctx: Any) -> Any:
        """Click's `--help` option, shown without a type."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        _untyped_flag(option)
        return option


class SentencesCommand(_Sentences, TyperCommand):
    """A command whose help is sentences and whose flags carry no type."""


class SentencesGroup(_Sentences, TyperGroup):
    """A group whose help is sentences and whose flags (`--help`) carry no type."""


class Typer(typer.Typer):
    """`typer.Typer` whose commands and groups are built with the classes above (unless one
    names its own `cls`): every fundpipe app is one of these."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls", SentencesGroup)
        super().__init__(*args, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", SentencesCommand)
        return super().command(*args, **kwargs)
