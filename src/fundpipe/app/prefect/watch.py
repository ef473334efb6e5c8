"""Watch the inbox and announce each settled file, so an `inbox` run starts in seconds.

The `inbox` deployment runs on an interval as a safety net; this watcher is what makes a drop
start a run at once. It never ingests anything itself: it announces a settled file as the Prefect
event ``fundpipe.inbox.file.settled``, and the `inbox` deployment's trigger (in
`flows/prefect.yaml`, and on the deployments `fundpipe serve` serves) starts the run. The run
takes the inbox lock and picks the files up as any run would, so a file announced twice, or
picked up by the interval run first, is still ingested exactly once.

Each organization has its inbox (`data/orgs/<org_id>/inbox`): `inboxes` lists those of the
configured organizations and of every organization folder there (and a single-organization
`data/inbox` not yet moved). `watch_inboxes` watches the data directory as a whole and asks
`inboxes` again at every look, so an organization folder created after the watch started — or
the README's `data/orgs/<org>/inbox` on a fresh clone — is watched too. The `inbox` run a
settled file starts ingests every organization's inbox.

A file is *settled* when its name is a sheet's (not ``~$…``, ``*.part``, dot files…: the same
rule as the ingest's, :func:`fundpipe.submit.inbox.is_transient_name`), and its size and modification
time have not changed for ``settle_s`` seconds. A file still growing is announced only once it
stops; a file renamed from ``x.csv.part`` to ``x.csv`` is announced under its final name.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fundpipe.config import Settings
from fundpipe.errors import ConfigurationError
from fundpipe.submit import InboxDirs, is_transient_name

#: The Prefect event a settled inbox file emits; the `inbox` deployment is triggered by it.
INBOX_EVENT = "fundpipe.inbox.file.settled"
#: The resource id of the inbox in those events (matched by the deployment trigger).
INBOX_RESOURCE = "fundpipe.inbox"

Announce = Callable[[list[Path]], None]
#: When the watcher looks: each item of the iterable is one look (`watch_inboxes`).
Looks = Iterable[object]


@dataclass
class SettleTracker:
    """Which files in an inbox have settled (pure logic: listings and times in, paths out).

    A file has settled when two observations saw the same size and modification time and it was
    last modified at least ``settle_s`` ago (the ingest's own rule, `inbox.stable_files`). Each
    settled version of a file is returned once; a file that changes again is returned again.
    """

    settle_s: float
    _seen: dict[Path, tuple[tuple[int, int], float]] = field(default_factory=dict)
    _announced: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def observe(self, listing: dict[Path, tuple[int, int]], now: float) -> list[Path]:
        """Record ``{path: (size, mtime_ns)}`` seen at ``now``; return the newly settled files."""
        ready: list[Path] = []
        for path, signature in listing.items():
            previous = self._seen.get(path)
            if previous is None or previous[0] != signature:
                self._seen[path] = (signature, now)  # new or still changing
                continue
            if now - signature[1] / 1e9 < self.settle_s:
                continue
            if self._announced.get(path) != signature:
                self._announced[path] = signature
                ready.append(path)
        for gone in set(self._seen) - set(listing):
            self._seen.pop(gone, None)
            self._announced.pop(gone, None)
        return sorted(ready, key=lambda p: p.name)


def list_candidates(inbox: Path) -> dict[Path, tuple[int, int]]:
    """The inbox's sheet files with their size and modification time (transient names left out)."""
    out: dict[Path, tuple[int, int]] = {}
    if not inbox.is_dir():
        return out
    for path in inbox.iterdir():
        if is_transient_name(path.name) or path.is_symlink() or not path.is_file():
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:  # moved away between listing and stat
            continue
        out[path] = (stat.st_size, stat.st_mtime_ns)
    return out


def watch_inbox(
    inbox: Path,
    announce: Announce,
    *,
    settle_s: float = 1.0,
    stop: threading.Event | None = None,
    tick_s: float = 0.25,
    clock: Callable[[], float] = time.time,
    looks: Looks | None = None,
) -> None:
    """Announce every file that settles in ``inbox`` until ``stop`` is set (`watch_inboxes`
    with one inbox)."""
    inbox.mkdir(parents=True, exist_ok=True)
    watch_inboxes(
        lambda: [inbox],
        inbox,
        announce,
        settle_s=settle_s,
        stop=stop,
        tick_s=tick_s,
        clock=clock,
        looks=looks,
    )


def inboxes(settings: Settings) -> list[Path]:
    """Every inbox to watch under `settings.data_dir` (see the module docstring)."""
    return inbox_finder(settings)()


def inbox_finder(settings: Settings) -> Callable[[], list[Path]]:
    """`inboxes(settings)` as a function the watcher asks at every look: the configured
    organizations' inboxes are worked out once (the configuration does not change while it
    runs); the folders under `data/orgs/` and a legacy `data/inbox` are looked for each time."""
    from fundpipe.orgs import configured_organizations, org_settings

    top = settings.local.data_dir
    configured = {
        org_settings(settings, o, among=orgs, load_secret=None).settings.local.data_dir / "inbox"
        for orgs in [configured_organizations(settings) or []]
        for o in orgs
    }

    def find() -> list[Path]:
        found = configured | {p for p in (top / "orgs").glob("*/inbox") if p.is_dir()}
        legacy = InboxDirs(top).inbox
        if legacy.is_dir():  # a single-organization layout not moved yet
            found.add(legacy)
        return sorted(found)

    return find


def watch_inboxes(
    find: Callable[[], list[Path]],
    root: Path,
    announce: Announce,
    *,
    settle_s: float = 1.0,
    stop: threading.Event | None = None,
    tick_s: float = 0.25,
    clock: Callable[[], float] = time.time,
    looks: Looks | None = None,
) -> None:
    """Announce every file that settles in any inbox ``find()`` names, until ``stop`` is set
    (or ``looks`` ends).

    ``find`` is asked again at every look, so an inbox created after the start is watched too;
    ``root`` (the data directory, created when missing) is watched recursively with watchfiles
    (inotify on Linux), and a tick every ``tick_s`` seconds checks the settle clocks even when
    nothing changes. Each inbox found is created when missing (a configured organization's
    folder to drop into). Files already waiting are announced once settled. ``clock`` gives the
    time the settle rule compares modification times with; ``looks`` says when to look (one
    look per item, after a first one at the start): by default, each change watchfiles sees
    under ``root`` and each tick — a test hands its own clock and looks, and sleeps not.
    """
    root.mkdir(parents=True, exist_ok=True)
    tracker = SettleTracker(settle_s)
    stop = stop or threading.Event()

    def check() -> None:
        listing: dict[Path, tuple[int, int]] = {}
        for inbox in find():
            # a configured organization's inbox exists from the start: a folder to drop into
            inbox.mkdir(parents=True, exist_ok=True)
            listing.update(list_candidates(inbox))
        ready = tracker.observe(listing, clock())
        if ready:
            announce(ready)

    check()
    for _look in looks if looks is not None else _changes_under(root, stop, tick_s):
        check()


def _changes_under(root: Path, stop: threading.Event, tick_s: float) -> Looks:
    """A look at each change under ``root`` (watchfiles: inotify on Linux) and every ``tick_s``
    seconds, until ``stop`` is set."""
    import watchfiles

    return watchfiles.watch(
        root,
        stop_event=stop,
        yield_on_timeout=True,
        rust_timeout=int(tick_s * 1000),
        debounce=int(tick_s * 1000),
        step=50,
        recursive=True,
        ignore_permission_denied=True,
    )


def prefect_announcer(data_dir: Path) -> Announce:
    """An announcer that emits :data:`INBOX_EVENT` to the configured Prefect server.

    The payload names the files (their base names and sizes) and the data directory; nothing
    else, and never a secret.
    """
    from prefect.events import emit_event

    def announce(paths: list[Path]) -> None:
        # `data/orgs/<org>/inbox/x.csv` names its organization; `data/inbox/x.csv` none
        files = [
            {"name": p.name, "bytes": _size(p), "organization": _org_of(p, data_dir)} for p in paths
        ]
        emit_event(
            event=INBOX_EVENT,
            resource={
                "prefect.resource.id": INBOX_RESOURCE,
                "prefect.resource.name": "fundpipe inbox",
            },
            payload={"files": files, "data_dir": str(data_dir)},
        )

    return announce


def _org_of(path: Path, data_dir: Path) -> str | None:
    parent = path.parent.parent
    return parent.name if parent.parent == data_dir / "orgs" else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def names(paths: Iterable[Path]) -> str:
    """The base names of ``paths``, comma separated (for a log line)."""
    return ", ".join(p.name for p in paths)


def watch_and_announce(settings: Settings, say: Callable[[str], object]) -> None:
    """`fundpipe watch`: announce settled files of the settings' inbox to the Prefect server
    named by `PREFECT_API_URL` until interrupted."""
    import os

    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigurationError(
            "fundpipe watch announces files to a Prefect server: set PREFECT_API_URL "
            "(or use `fundpipe serve`, which watches the inbox itself)"
        )
    announce = prefect_announcer(settings.local.data_dir)

    def announce_and_say(paths: list[Path]) -> None:
        announce(paths)
        say(f"settled: {names(paths)} → inbox run requested")

    now = ", ".join(str(p) for p in inboxes(settings)) or "none yet"
    say(
        f"watching every organization's inbox under {settings.local.data_dir / 'orgs'} (now: {now}), "
        "including ones created later (Ctrl-C stops)"
    )
    watch_inboxes(
        inbox_finder(settings),
        settings.local.data_dir,
        announce_and_say,
        settle_s=settings.pipeline.inbox_settle_s,
    )


def watch_buckets(
    settings: Settings,
    announce: Announce,
    *,
    stop: threading.Event,
    looks: Iterable[object] | None = None,
) -> None:
    """Announce each file that settles in every organization's inbox on the team's storage
    (``FUNDPIPE_INBOX_URL``), listing it every ``FUNDPIPE_INBOX_POLL_S`` seconds until ``stop``
    is set (``looks``: when to look, for a test); a file unchanged across two listings is
    announced once. Nothing is claimed here: the `inbox` run does that."""
    from fundpipe.orgs import configured_organizations
    from fundpipe.submit import BucketInbox

    template = settings.pipeline.inbox_url
    if template is None:
        return
    listed = [o.id for o in configured_organizations(settings) or [] if o.id is not None]
    orgs: list[str] = listed or [settings.service.org_id or "org_demo"]
    boxes = {org: BucketInbox.of(template, org) for org in orgs}
    before: dict[str, dict[str, tuple[int, str]]] = {org: {} for org in orgs}
    told: set[tuple[str, str, tuple[int, str]]] = set()

    def ticks() -> Iterable[object]:
        while not stop.wait(settings.pipeline.inbox_poll_s):
            yield None

    for _look in [None, *(looks if looks is not None else ticks())]:
        ready: list[Path] = []
        for org, box in boxes.items():
            now = box.listing()
            for name in BucketInbox.settled(before[org], now):
                if (org, name, now[name]) not in told:
                    told.add((org, name, now[name]))
                    # named as the local inbox's files are, so the event names its organization
                    ready.append(settings.local.data_dir / "orgs" / org / "inbox" / name)
            before[org] = now
        if ready:
            announce(ready)
