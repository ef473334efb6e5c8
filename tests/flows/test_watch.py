"""The inbox watcher: a dropped file is announced once it has settled, and only then.

Partial files (`*.part`, `~$…` office locks, dot files) and files still growing are never
announced; a file renamed to its final name is announced under that name; each settled version
of a file is announced once.
"""

from __future__ import annotations

import threading
import time
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


def test_watch_announces_a_renamed_file_under_its_final_name_and_never_the_partial(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    announced: list[tuple[float, list[str]]] = []
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_inbox,
        args=(inbox, lambda paths: announced.append((time.time(), [p.name for p in paths]))),
        kwargs={"settle_s": SETTLE, "stop": stop, "tick_s": 0.1},
        daemon=True,
    )
    watcher.start()
    try:
        time.sleep(0.3)
        partial = inbox / "q4.csv.part"
        partial.write_text("a,b\n")
        for _ in range(5):  # still being written for a while
            time.sleep(0.3)
            with open(partial, "a") as handle:
                handle.write("1,2\n")
        time.sleep(SETTLE + 0.5)
        assert announced == []
        partial.rename(inbox / "q4.csv")
        renamed_at = time.time()
        deadline = renamed_at + 5
        while not announced and time.time() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=5)
    assert [names for _, names in announced] == [["q4.csv"]]
    # the rename keeps the mtime of the last write, which is already past the settle time
    assert announced[0][0] - renamed_at < SETTLE + 1.0


def test_watch_waits_for_a_growing_file(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    announced: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_inbox,
        args=(inbox, lambda paths: announced.append(time.time())),
        kwargs={"settle_s": SETTLE, "stop": stop, "tick_s": 0.1},
        daemon=True,
    )
    growing = inbox / "big.csv"
    growing.write_text("a\n")
    watcher.start()
    try:
        for _ in range(6):
            time.sleep(0.4)
            with open(growing, "a") as handle:
                handle.write("1\n")
        last_write = time.time()
        deadline = last_write + 5
        while not announced and time.time() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=5)
    assert len(announced) == 1
    assert announced[0] - last_write >= SETTLE - 0.05
    assert growing.exists()


def test_every_organization_s_inbox_is_watched(tmp_path: Path) -> None:
    from fundpipe.app.prefect.watch import inboxes, watch_inboxes
    from fundpipe.config import Settings

    data = tmp_path / "data"
    (data / "orgs" / "org_seen" / "inbox").mkdir(parents=True)
    settings = Settings(data_dir=data, orgs="org_a,org_b", _env_file=None)  # type: ignore[call-arg]
    watched = inboxes(settings)
    assert watched == [data / "orgs" / org / "inbox" for org in ("org_a", "org_b", "org_seen")]
    announced: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_inboxes,
        args=(
            lambda: inboxes(settings),
            data,
            lambda paths: announced.extend(f"{p.parent.parent.name}/{p.name}" for p in paths),
        ),
        kwargs={"settle_s": SETTLE, "stop": stop},
        daemon=True,
    )
    watcher.start()
    try:
        time.sleep(0.5)
        (data / "orgs" / "org_b" / "inbox" / "q4.csv").write_text("a,b\n")
        deadline = time.time() + SETTLE + 5
        while not announced and time.time() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert announced == ["org_b/q4.csv"]
    # a single-organization inbox not moved yet is watched too
    (data / "inbox").mkdir()
    assert data / "inbox" in inboxes(settings)


def _wait_for(announced: list[str], count: int, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while len(announced) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_an_inbox_created_after_the_watch_started_is_watched(tmp_path: Path) -> None:
    """A fresh clone: no organization folder, no `data/inbox`; the analyst creates
    `data/orgs/<org>/inbox` (the README's path) after `fundpipe serve` started, and a second
    organization's folder later still: both drops are announced."""
    from fundpipe.app.prefect.watch import inbox_finder, inboxes, watch_inboxes
    from fundpipe.config import Settings

    data = tmp_path / "data"
    settings = Settings(data_dir=data, _env_file=None)  # type: ignore[call-arg]
    assert inboxes(settings) == []  # nothing yet, and no legacy data/inbox invented
    announced: list[str] = []
    stop = threading.Event()
    # an injected clock a minute ahead: every file is past its settle time at first sight
    watcher = threading.Thread(
        target=watch_inboxes,
        args=(
            inbox_finder(settings),
            data,
            lambda paths: announced.extend(f"{p.parent.parent.name}/{p.name}" for p in paths),
        ),
        kwargs={"settle_s": SETTLE, "stop": stop, "clock": lambda: time.time() + 60},
        daemon=True,
    )
    watcher.start()
    try:
        first = data / "orgs" / "org_demo" / "inbox"
        first.mkdir(parents=True)
        (first / "distributions_q4.csv").write_text("a,b\n")
        _wait_for(announced, 1)
        later = data / "orgs" / "org_new" / "inbox"
        later.mkdir(parents=True)
        (later / "q1.csv").write_text("a,b\n")
        _wait_for(announced, 2)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert announced == ["org_demo/distributions_q4.csv", "org_new/q1.csv"]
    assert not (data / "inbox").exists()


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
    settings = Settings(data_dir=data, orgs="org_a,org_b", _env_file=None)  # type: ignore[call-arg]
    find = inbox_finder(settings)
    assert calls == ["org_a", "org_b"]
    expected = [data / "orgs" / "org_a" / "inbox", data / "orgs" / "org_b" / "inbox"]
    assert find() == expected
    (data / "orgs" / "org_c" / "inbox").mkdir(parents=True)
    assert find() == [*expected, data / "orgs" / "org_c" / "inbox"]
    assert calls == ["org_a", "org_b"]  # not again at each look
