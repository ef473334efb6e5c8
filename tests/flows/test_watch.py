"""The inbox watcher: a dropped file is announced once it has settled, and only then.

Partial files (`*.part`, `~$…` office locks, dot files) and files still growing are never
announced; a file renamed to its final name is announced under that name; each settled version
of a file is announced once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fundpipe.app.prefect.watch import SettleTracker, list_candidates, watch_inbox

SETTLE = 1.0


def _listing(**files: tuple[int, float]) -> dict[Path, tuple[int, int]]:
    return {Path(name): (size, int(mtime * 1e9)) for name, (size, mtime) in files.items()}


def test_a_file_is_announced_once_it_stopped_changing_for_the_settle_time() -> None:
    tracker = SettleTracker(SETTLE)
    assert tracker.observe(_listing(a=(10, 100.0)), now=100.2) == []  # first sight
    assert tracker.observe(_listing(a=(20, 100.5)), now=100.6) == []  # still growing
    assert tracker.observe(_listing(a=(20, 100.5)), now=101.0) == []  # not settled yet
    assert tracker.observe(_listing(a=(20, 100.5)), now=101.6) == [Path("a")]
    assert tracker.observe(_listing(a=(20, 100.5)), now=105.0) == []  # announced once


def test_a_file_waiting_before_the_watch_started_is_announced_on_the_second_look() -> None:
    tracker = SettleTracker(SETTLE)
    assert tracker.observe(_listing(old=(5, 10.0)), now=500.0) == []
    assert tracker.observe(_listing(old=(5, 10.0)), now=500.25) == [Path("old")]


def test_a_file_changed_again_after_it_was_announced_is_announced_again() -> None:
    tracker = SettleTracker(SETTLE)
    tracker.observe(_listing(a=(1, 10.0)), now=20.0)
    assert tracker.observe(_listing(a=(1, 10.0)), now=20.3) == [Path("a")]
    tracker.observe(_listing(a=(2, 30.0)), now=30.1)
    assert tracker.observe(_listing(a=(2, 30.0)), now=31.2) == [Path("a")]


def test_partial_and_lock_files_are_never_candidates(tmp_path: Path) -> None:
    for name in ("q4.csv.part", "~$q4.xlsx", ".~lock.q4.xlsx#", ".hidden.csv", "notes.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "q4.csv").write_text("x")
    assert [p.name for p in list_candidates(tmp_path)] == ["q4.csv"]


class Clock:
    """The watcher's clock, moved by the test (seconds since the epoch)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def write(self, path: Path, text: str, *, append: bool = False) -> None:
        """Write ``path`` now (its modification time is the clock's)."""
        with open(path, "a" if append else "w") as handle:
            handle.write(text)
        os.utime(path, (self.now, self.now))


def test_watch_announces_a_renamed_file_under_its_final_name_and_never_the_partial(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    clock = Clock()
    announced: list[tuple[float, list[str]]] = []

    def looks() -> Iterator[None]:
        partial = inbox / "q4.csv.part"
        clock.write(partial, "a,b\n")
        for _ in range(5):  # still being written for a while
            yield
            clock.now += 0.3
            clock.write(partial, "1,2\n", append=True)
        for _ in range(3):
            yield
            clock.now += SETTLE
        assert announced == []  # a partial file is never announced, however old
        partial.rename(inbox / "q4.csv")
        yield  # seen under its final name
        yield  # unchanged since: the rename kept the last write's time, already settled

    watch_inbox(
        inbox,
        lambda paths: announced.append((clock.now, [p.name for p in paths])),
        settle_s=SETTLE,
        clock=clock,
        looks=looks(),
    )
    assert announced == [(clock.now, ["q4.csv"])]


def test_watch_waits_for_a_growing_file(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    clock = Clock()
    growing = inbox / "big.csv"
    clock.write(growing, "a\n")
    announced: list[float] = []
    last_write: list[float] = []

    def looks() -> Iterator[None]:
        for _ in range(6):
            yield
            clock.now += 0.4  # under the settle time: each look sees it grown
            clock.write(growing, "1\n", append=True)
        last_write.append(clock.now)
        for _ in range(5):
            clock.now += 0.5
            yield

    watch_inbox(
        inbox, lambda paths: announced.append(clock.now), settle_s=SETTLE, clock=clock,
        looks=looks(),
    )  # fmt: skip
    assert len(announced) == 1
    assert announced[0] - last_write[0] >= SETTLE
    assert growing.exists()


def test_every_organization_s_inbox_is_watched(tmp_path: Path) -> None:
    from fundpipe.app.prefect.watch import inboxes, watch_inboxes
    from fundpipe.config import Settings

    data = tmp_path / "data"
    (data / "orgs" / "org_seen" / "inbox").mkdir(parents=True)
    settings = Settings(_env_file=None, local={"data_dir": data}, service={"orgs": "org_a,org_b"})  # type: ignore[call-arg]
    watched = inboxes(settings)
    assert watched == [data / "orgs" / org / "inbox" for org in ("org_a", "org_b", "org_seen")]
    clock = Clock()
    announced: list[str] = []

    def looks() -> Iterator[None]:
        yield
        clock.write(data / "orgs" / "org_b" / "inbox" / "q4.csv", "a,b\n")
        yield
        clock.now += SETTLE
        yield

    watch_inboxes(
        lambda: inboxes(settings),
        data,
        lambda paths: announced.extend(f"{p.parent.parent.name}/{p.name}" for p in paths),
        settle_s=SETTLE,
        clock=clock,
        looks=looks(),
    )
    assert announced == ["org_b/q4.csv"]
    # a single-organization inbox not moved yet is watched too
    (data / "inbox").mkdir()
    assert data / "inbox" in inboxes(settings)


def test_an_inbox_created_after_the_watch_started_is_watched(tmp_path: Path) -> None:
    """A fresh clone: no organization folder, no `data/inbox`; the analyst creates
    `data/orgs/<org>/inbox` (the README's path) after `fundpipe serve` started, and a second
    organization's folder later still: both drops are announced."""
    from fundpipe.app.prefect.watch import inbox_finder, inboxes, watch_inboxes
    from fundpipe.config import Settings

    data = tmp_path / "data"
    settings = Settings(_env_file=None, local={"data_dir": data})  # type: ignore[call-arg]
    assert inboxes(settings) == []  # nothing yet, and no legacy data/inbox invented
    clock = Clock()
    announced: list[str] = []

    def looks() -> Iterator[None]:
        first = data / "orgs" / "org_demo" / "inbox"
        first.mkdir(parents=True)
        clock.write(first / "distributions_q4.csv", "a,b\n")
        yield
        clock.now += SETTLE
        yield
        assert announced == ["org_demo/distributions_q4.csv"]
        later = data / "orgs" / "org_new" / "inbox"
        later.mkdir(parents=True)
        clock.write(later / "q1.csv", "a,b\n")
        yield
        clock.now += SETTLE
        yield

    watch_inboxes(
        inbox_finder(settings),
        data,
        lambda paths: announced.extend(f"{p.parent.parent.name}/{p.name}" for p in paths),
        settle_s=SETTLE,
        clock=clock,
        looks=looks(),
    )
    assert announced == ["org_demo/distributions_q4.csv", "org_new/q1.csv"]
    assert not (data / "inbox").exists()


def test_the_watcher_looks_at_each_change_until_stopped(tmp_path: Path) -> None:
    """Without looks of its own the watcher looks at each change watchfiles sees (and each
    tick) and stops when told, a file already settled announced at the first look."""
    from fundpipe.app.prefect.watch import watch_inboxes

    inbox = tmp_path / "data" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "q4.csv").write_text("a,b\n")
    stop = threading.Event()
    announced: list[list[Path]] = []

    def announce(paths: list[Path]) -> None:
        announced.append(paths)
        stop.set()  # the first announcement ends the watch

    watch_inboxes(
        lambda: [inbox], tmp_path / "data", announce, settle_s=0, stop=stop, tick_s=0.05,
        clock=lambda: 4_000_000_000.0,
    )  # fmt: skip
    assert announced == [[inbox / "q4.csv"]]


def test_the_watcher_works_out_the_configured_inboxes_once_and_looks_for_folders_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It looks four times a second: the configured list is not parsed again at every look,
    while an organization folder made later is still found."""
    import fundpipe.orgs
    from fundpipe.app.prefect.watch import inbox_finder
    from fundpipe.config import Settings

    calls: list[str | None] = []
    real = fundpipe.orgs.org_settings

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(getattr(args[1], "id", None))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fundpipe.orgs, "org_settings", counting)
    data = tmp_path / "data"
    settings = Settings(_env_file=None, local={"data_dir": data}, service={"orgs": "org_a,org_b"})  # type: ignore[call-arg]
    find = inbox_finder(settings)
    assert calls == ["org_a", "org_b"]
    expected = [data / "orgs" / "org_a" / "inbox", data / "orgs" / "org_b" / "inbox"]
    assert find() == expected
    (data / "orgs" / "org_c" / "inbox").mkdir(parents=True)
    assert find() == [*expected, data / "orgs" / "org_c" / "inbox"]
    assert calls == ["org_a", "org_b"]  # not again at each look
