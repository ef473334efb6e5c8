"""Progress reporting for long steps (reading, validating, submitting, syncing).

Library functions take a `ProgressSink` and report to it; they never draw anything themselves.
The CLI passes a `fundpipe.app.cli.render.RichProgress` (bars on stderr, so `--json` output on stdout stays clean);
everything else gets `NullProgress`.
"""

from __future__ import annotations

from typing import Protocol


class ProgressSink(Protocol):
    """Where a step reports how far it got."""

    def start(self, key: str, description: str, total: int | None = None) -> None:
        """Begin (or re-describe) the step `key`; `total` None when the end is unknown."""

    def advance(self, key: str, amount: int = 1) -> None:
        """Record `amount` more units of work done on step `key`."""


class NullProgress:
    """A sink that ignores everything (the default outside the CLI)."""

    def start(self, key: str, description: str, total: int | None = None) -> None:
        """Ignore the step."""

    def advance(self, key: str, amount: int = 1) -> None:
        """Ignore the progress."""
