"""Progress reporting for long steps (reading, validating, submitting, syncing).

Library functions take a `ProgressSink` and report to it; they never draw anything themselves.
The CLI passes a `RichProgress` (bars on stderr, so `--json` output on stdout stays clean);
everything else gets `NullProgress`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


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


class RichProgress:
    """Rich progress bars, one per step, drawn on `console` (stderr in the CLI)."""

    def __init__(self, console: Console) -> None:
        """Prepare bars on `console`; they show once the context is entered."""
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}

    def start(self, key: str, description: str, total: int | None = None) -> None:
        """Add a bar for `key`, or update its description and total."""
        if key in self._tasks:
            self._progress.update(self._tasks[key], description=description, total=total)
        else:
            self._tasks[key] = self._progress.add_task(description, total=total)

    def advance(self, key: str, amount: int = 1) -> None:
        """Move `key`'s bar forward (an unknown key starts an open-ended bar)."""
        if key not in self._tasks:
            self.start(key, key)
        self._progress.advance(self._tasks[key], amount)

    def __enter__(self) -> Self:
        """Start drawing."""
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop drawing, leaving the final state of each bar on screen."""
        self._progress.stop()
