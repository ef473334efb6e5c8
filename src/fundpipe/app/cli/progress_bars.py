"""The CLI's progress bars (`RichProgress`, re-exported by `fundpipe.app.cli.render`): one per
step, drawn on stderr so `--json` output on stdout stays clean."""

from __future__ import annotations

import math
import time
from types import TracebackType
from typing import Self

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

__all__ = ["RichProgress"]


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
            # Redrawn 4× a second on a terminal; elsewhere (a log file, CI) drawn once at the
            # end: the redraw renders every bar whether or not anyone can see it (~5% of a core
            # through a rate-bound ingest of a hundred seconds).
            auto_refresh=console.is_terminal,
            refresh_per_second=4,
        )
        self._tasks: dict[str, TaskID] = {}
        # steps go to Rich every `_STEP_S` and at a bar's last one, not one by one: Rich's
        # advance takes a lock and a sample (a 100k-payment night advances 10k times)
        self._pending: dict[str, int] = {}
        self._left: dict[str, float] = {}  # steps to a bar's end (inf: open-ended)
        self._handed = 0.0

    _STEP_S = 0.05  #: seconds between two hand-overs: far under a redraw (¼ s)

    def start(self, key: str, description: str, total: int | None = None) -> None:
        """Add a bar for `key`, or update its description and total."""
        self._hand_over()
        if key in self._tasks:
            self._progress.update(self._tasks[key], description=description, total=total)
        else:
            self._tasks[key] = self._progress.add_task(description, total=total)
        task = next(t for t in self._progress.tasks if t.id == self._tasks[key])
        self._left[key] = math.inf if task.total is None else task.total - task.completed

    def advance(self, key: str, amount: int = 1) -> None:
        """Move `key`'s bar forward (an unknown key starts an open-ended bar)."""
        if key not in self._tasks:
            self.start(key, key)
        self._pending[key] = self._pending.get(key, 0) + amount
        self._left[key] -= amount
        if self._left[key] <= 0 or time.monotonic() - self._handed >= self._STEP_S:
            self._hand_over()  # a bar's last step shows at once

    def _hand_over(self) -> None:
        self._handed = time.monotonic()
        pending, self._pending = self._pending, {}
        for key, amount in pending.items():
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
        self._hand_over()
        self._progress.stop()
