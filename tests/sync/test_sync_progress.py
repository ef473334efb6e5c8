"""What the progress bars of `fundpipe sync` report is what was synced."""

from __future__ import annotations

from collections import Counter

import httpx
from rich.console import Console

from fundpipe.app.cli.render import RichProgress
from fundpipe.config import Settings
from fundpipe.sync.pull import sync


class Recorder:
    """A progress sink that remembers every step and every advance."""

    def __init__(self) -> None:
        self.started: dict[str, str] = {}
        self.done: Counter[str] = Counter()

    def start(self, key: str, description: str, total: int | None = None) -> None:
        self.started[key] = description

    def advance(self, key: str, amount: int = 1) -> None:
        self.done[key] += amount


def test_progress_counts_every_synced_row_per_list(
    service: tuple[httpx.ASGITransport, Settings],
) -> None:
    transport, settings = service
    recorder = Recorder()
    result = sync(settings, transport=transport, progress=recorder)
    assert set(recorder.started) == set(result.counts)
    assert dict(recorder.done) == {k: v for k, v in result.counts.items() if v}
    assert result.counts["financial_accounts"] == 6  # the demo organization's accounts


def test_rich_progress_draws_a_bar_per_list(
    service: tuple[httpx.ASGITransport, Settings],
) -> None:
    transport, settings = service
    console = Console(record=True, width=120, force_terminal=False)
    with RichProgress(console) as progress:
        sync(settings, transport=transport, progress=progress)
    text = console.export_text()
    assert "sync financial accounts" in text
    assert "6/" in text


def test_a_bar_shows_its_last_step_at_once_and_every_step_when_drawn() -> None:
    console = Console(record=True, width=120, force_terminal=False)
    with RichProgress(console) as progress:
        progress.start("submit", "submit requests", total=1000)
        for _ in range(1000):
            progress.advance("submit")
        # the bar is full as soon as its last step is taken, not at the next step or the end
        assert progress._progress.tasks[0].completed == 1000
        for _ in range(7):
            progress.advance("open-ended")
    text = console.export_text()
    assert "1000/1000" in text
    assert "7/?" in text
