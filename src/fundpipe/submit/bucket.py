"""An inbox on the team's storage: ``FUNDPIPE_INBOX_URL`` (a folder or fsspec URL with ``{org}``).

The run works on the local data directory as it always has; this module is the bridge to the
shared storage on either side of it:

- :meth:`BucketInbox.pull` lists the inbox twice (``settle_s`` apart, listing caches off) and
  takes the files whose size and ETag (or mtime) did not change — an upload in progress (an S3
  multipart upload is not listed until complete) or a growing file is left for a later look, as
  are ``.part``/``.tmp``/``~$`` names. Each file is **claimed once**: a claim object
  ``claims/<key>/<generation>.json`` written with an exclusive create (``If-None-Match: *`` on
  S3, ``O_EXCL`` on a folder), keyed by the file's name, size and ETag. Only the claimant goes
  on; a claim whose worker died is taken over after its lease by creating the next generation
  (one creator wins). The file is then **moved** to ``processing/<key>/`` beside the inbox —
  copy, verify the copy's size, delete the original — and fetched into the local
  ``processing/`` folder, where the run picks it up as one left by a crash.
- :meth:`BucketInbox.push` moves each finished file to ``processed/`` or ``rejected/`` on the
  storage (its error reports beside it), deletes its ``processing/`` copy and records the end
  in the claim.

Each claim is the file's journal: ``claimed`` (the copy and the delete are done under it) →
``processed`` / ``rejected`` (with ``deleted``: whether the inbox's original went), or ``delete
failed`` on the way: the original is still in the inbox, and a later look deletes it instead of
taking it again. A copy failing halfway leaves the original where it was, and the
claim says ``claimed``; a file whose delete failed is never read a second time. A file dropped
again after its claim ended is a new generation, and the ledger's content hash (as for any
re-drop) decides it was already submitted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fundpipe.errors import MachineFault
from fundpipe.submit.entries import is_transient_name
from fundpipe.submit.inbox import InboxDirs, sanitize_name
from fundpipe.submit.verdicts import IngestResult

__all__ = ["BucketInbox", "InboxStorageError", "Listing", "settled"]

log = logging.getLogger(__name__)

#: name → (size, ETag or mtime) of the inbox's sheet files, as one listing saw them.
Listing = dict[str, tuple[int, str]]
_DONE = frozenset({"processed", "rejected"})
_MAP = ".bucket-claims.json"
#: Files claimed, moved and fetched at once on an object store, and fetched per round (their
#: bytes are held until written).
_CONCURRENCY = 8
_FETCHED_AT_ONCE = 32


class InboxStorageError(MachineFault):
    """The inbox's storage could not be read or written (credentials, network, permission)."""


def settled(before: Listing, now: Listing) -> list[str]:
    """The names seen unchanged (size and ETag/mtime) in two listings, sorted."""
    return sorted(name for name, seen in now.items() if before.get(name) == seen)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class _Claim:
    key: str
    generation: int
    body: dict[str, Any]


class BucketInbox:
    """One organization's inbox at ``url`` (``{org}`` already filled in) and the prefixes beside it."""

    def __init__(
        self,
        url: str,
        *,
        lease_s: float = 900.0,
        clock: Callable[[], datetime] = _utc_now,
        worker: str | None = None,
    ) -> None:
        """Describe the inbox at ``url``; nothing is read yet. ``lease_s``: how long a claim
        holds before another worker may take it over; ``clock``: the time (tests set it)."""
        from fsspec.core import url_to_fs

        self.url = url.rstrip("/")
        fs, root = url_to_fs(self.url, use_listings_cache=False, skip_instance_cache=True)
        self.fs: Any = fs
        self.inbox = str(root).rstrip("/")
        self.beside = self.inbox.rpartition("/")[0]
        self.lease = timedelta(seconds=lease_s)
        self.clock = clock
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
        # files are claimed, moved and fetched side by side on an object store (its fsspec
        # filesystem is asynchronous and safe from threads); one at a time on a folder or a
        # share (an SFTP session is one channel)
        self.concurrency = _CONCURRENCY if getattr(fs, "async_impl", False) else 1

    #: the names seen unchanged in two listings (:func:`settled`)
    settled = staticmethod(settled)

    @classmethod
    def of(cls, template: str, org: str, **kwargs: Any) -> BucketInbox:
        """The inbox of ``org`` for the setting ``template`` (``s3://b/orgs/{org}/inbox``)."""
        return cls(template.replace("{org}", org), **kwargs)

    def where(self, prefix: str) -> str:
        """The path of ``prefix`` (``processing``, ``processed``, ``rejected``, ``claims``)."""
        return f"{self.beside}/{prefix}"

    def _fault(self, doing: str, error: Exception) -> InboxStorageError:
        reason = getattr(error, "strerror", None) or type(error).__name__
        return InboxStorageError(
            f"the inbox's storage {self.url} could not be {doing} ({reason}); check "
            "FUNDPIPE_INBOX_URL, the storage and its credentials"
        )

    # ------------------------------------------------------------------ listing

    def listing(self) -> Listing:
        """The inbox's sheet files now (caches off), transient names left out."""
        try:
            if self._local:
                self.fs.makedirs(self.inbox, exist_ok=True)
            entries = self.fs.ls(self.inbox, detail=True, refresh=True)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise self._fault("listed", error) from None
        found: Listing = {}
        for e in entries:
            name = str(e["name"]).rstrip("/").rpartition("/")[2]
            if e.get("type") != "file" or is_transient_name(name):
                continue
            tag = e.get("ETag") or e.get("etag") or e.get("mtime") or e.get("LastModified")
            found[name] = (int(e.get("size") or 0), str(tag))
        return found

    # ------------------------------------------------------------------ claims

    @staticmethod
    def key(name: str, seen: tuple[int, str]) -> str:
        """The claim key of a file: its name, size and ETag/mtime."""
        text = f"{name}\0{seen[0]}\0{seen[1]}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _claims(self, key: str) -> list[int]:
        base = self.where(f"claims/{key}")
        try:
            names = self.fs.ls(base, detail=False, refresh=True)
        except FileNotFoundError:
            return []
        gens = [str(n).rpartition("/")[2].removesuffix(".json") for n in names]
        return sorted(int(g) for g in gens if g.isdigit())

    def _read_claim(self, key: str, gen: int) -> _Claim:
        path = self.where(f"claims/{key}/{gen:06d}.json")
        return _Claim(key, gen, json.loads(self.fs.cat_file(path)))

    def _create(self, path: str, data: bytes) -> bool:
        """Write ``path`` only if absent; False when another wrote it first."""
        try:
            if self._local:
                self.fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            with self.fs.open(path, "xb") as handle:
                handle.write(data)
        except FileExistsError:
            return False
        except OSError as error:
            raise self._fault("written", error) from None
        return True

    def _journal(self, claim: _Claim, state: str, **more: Any) -> None:
        claim.body.update(state=state, at=self.clock().isoformat(timespec="seconds"), **more)
        path = self.where(f"claims/{claim.key}/{claim.generation:06d}.json")
        self.fs.pipe_file(path, json.dumps(claim.body).encode())
        log.info("%s: %s (%s)", claim.body["name"], state, self.worker)

    def claim(self, name: str, seen: tuple[int, str]) -> _Claim | None:
        """Claim the file ``name`` as ``seen``; None when another worker holds it, or it ended
        and its original only waits to be deleted (done here)."""
        key = self.key(name, seen)
        if (first := self._new_claim(key, 0, name, seen)) is not None:
            return first  # the usual case: one exclusive create, no listing
        gens = self._claims(key)
        gen = 0
        if gens:
            last = self._read_claim(key, gens[-1])
            state = last.body.get("state")
            if state == "delete failed" or (state in _DONE and not last.body.get("deleted")):
                self._delete_original(last)  # already read once: never again
                return None
            expired = datetime.fromisoformat(last.body["expires"]) <= self.clock()
            if state not in _DONE and not expired:
                return None
            gen = gens[-1] + 1  # a re-drop after the end, or a dead worker's claim
        return self._new_claim(key, gen, name, seen)

    def _new_claim(self, key: str, gen: int, name: str, seen: tuple[int, str]) -> _Claim | None:
        now = self.clock()
        body = {
            "name": name,
            "size": seen[0],
            "etag": seen[1],
            "worker": self.worker,
            "since": now.isoformat(timespec="seconds"),
            "expires": (now + self.lease).isoformat(timespec="seconds"),
            "state": "claimed",
        }
        path = self.where(f"claims/{key}/{gen:06d}.json")
        if not self._create(path, json.dumps(body).encode()):
            return None
        return _Claim(key, gen, body)

    def _delete_original(self, claim: _Claim) -> None:
        try:
            self.fs.rm_file(f"{self.inbox}/{claim.body['name']}")
        except FileNotFoundError:
            pass
        except OSError as error:
            log.warning(
                "%s: the inbox's copy could not be deleted yet (%s)", claim.body["name"], error
            )
            return
        self._journal(
            claim, claim.body["state"] if claim.body["state"] in _DONE else "moved", deleted=True
        )

    # ------------------------------------------------------------------ moves

    def _copy_verified(self, src: str, dest: str, size: int) -> None:
        """Copy ``src`` to ``dest`` and check the copy's size; a failed copy is removed."""
        try:
            self.fs.cp_file(src, dest)  # one file: no listing to expand it
            copied = int(self.fs.info(dest, refresh=True).get("size") or 0)
        except OSError as error:
            raise self._fault(f"copied ({src} → {dest})", error) from None
        if copied != size:
            self.fs.rm_file(dest)
            raise InboxStorageError(f"the copy of {src} at {dest} holds {copied} bytes, not {size}")

    def move_in(self, claim: _Claim) -> str:
        """Move the claimed file to ``processing/<key>/`` beside the inbox (copy, verify,
        delete; a failed delete is journalled in the claim); returns where it is now."""
        name = claim.body["name"]
        dest = self.where(f"processing/{claim.key}/{name}")
        if self._local:
            self.fs.makedirs(dest.rpartition("/")[0], exist_ok=True)
        self._copy_verified(f"{self.inbox}/{name}", dest, int(claim.body["size"]))
        try:
            self.fs.rm_file(f"{self.inbox}/{name}")
        except OSError as error:
            log.warning("%s: copied to processing/, its original not deleted (%s)", name, error)
            self._journal(claim, "delete failed", deleted=False, processing=dest)
            return dest
        claim.body["deleted"] = True  # journalled with the claim's end (two writes fewer)
        return dest

    def pull(self, data_dir: Path, *, settle_s: float, before: Listing | None = None) -> Listing:
        """Claim every settled inbox file, move it to ``processing/`` on the storage and fetch
        it into ``data_dir``'s ``processing/``; returns this look's listing (pass it as
        ``before`` to the next look instead of waiting ``settle_s`` again)."""
        if before is None:
            before = self.listing()
            time.sleep(settle_s)
        now = self.listing()
        dirs = InboxDirs(data_dir)
        dirs.create()
        pulled = _read_map(data_dir)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            moved = pool.map(lambda name: self._take(name, now[name]), settled(before, now))
            taken = [t for t in moved if t is not None]
            mine = {c.key for c, _ in taken} | {str(e["key"]) for e in pulled.values()}
            every = taken + self._orphans(mine)
            for start in range(0, len(every), _FETCHED_AT_ONCE):
                some = every[start : start + _FETCHED_AT_ONCE]
                for (claim, remote), data in zip(some, pool.map(self._fetch, some), strict=True):
                    local = _unused(dirs.processing, claim.body["name"])
                    local.write_bytes(data)
                    pulled[local.name] = {
                        "key": claim.key,
                        "generation": claim.generation,
                        "remote": remote,
                        "deleted": bool(claim.body.get("deleted")),
                    }
        _write_map(data_dir, pulled)
        return now

    def _take(self, name: str, seen: tuple[int, str]) -> tuple[_Claim, str] | None:
        """Claim ``name`` and move it to ``processing/``; None when it is not this worker's."""
        claim = self.claim(name, seen)
        return None if claim is None else (claim, self.move_in(claim))

    def _fetch(self, taken: tuple[_Claim, str]) -> bytes:
        """The moved file's bytes (one GET)."""
        remote = taken[1]
        try:
            return bytes(self.fs.cat_file(remote))
        except OSError as error:
            raise self._fault(f"read ({remote})", error) from None

    def _orphans(self, mine: set[str]) -> list[tuple[_Claim, str]]:
        """Files a dead worker left in ``processing/`` on the storage, once its lease ran out,
        each claimed again (the next generation) by this worker."""
        try:
            left = self.fs.find(self.where("processing"))
        except FileNotFoundError:
            return []
        taken = []
        for path in left:
            key = str(path).rstrip("/").rsplit("/", 2)[-2]
            if key in mine:
                continue
            gens = self._claims(key)
            if not gens:
                continue
            last = self._read_claim(key, gens[-1])
            expired = datetime.fromisoformat(last.body["expires"]) <= self.clock()
            if last.body.get("state") in _DONE or not expired:
                continue
            now = self.clock()
            body = dict(last.body, worker=self.worker, since=now.isoformat(timespec="seconds"))
            body["expires"] = (now + self.lease).isoformat(timespec="seconds")
            gen = gens[-1] + 1
            if self._create(self.where(f"claims/{key}/{gen:06d}.json"), json.dumps(body).encode()):
                taken.append((_Claim(key, gen, body), str(path)))
        return taken

    def push(self, data_dir: Path, result: IngestResult) -> None:
        """Move each finished file of ``result`` that came from the storage to ``processed/``
        or ``rejected/`` there (its error reports beside it) and end its claim."""
        pulled = _read_map(data_dir)
        for outcome in result.files:
            entry = pulled.get(outcome.source_file)
            if entry is None or outcome.moved_to is None:
                continue
            folder = "rejected" if outcome.state == "rejected" else "processed"
            dest = self._free(folder, sanitize_name(outcome.source_file))
            self._upload(outcome.moved_to, dest)
            for report in outcome.error_reports:
                extra = report.name.removeprefix(outcome.moved_to.name)
                self._upload(report, dest + extra)
            claim = self._read_claim(entry["key"], int(entry["generation"]))
            self.fs.rm_file(entry["remote"])
            deleted = bool(entry.get("deleted")) or bool(claim.body.get("deleted"))
            self._journal(claim, folder, at_rest=dest, deleted=deleted)
            del pulled[outcome.source_file]
        _write_map(data_dir, pulled)

    def _free(self, folder: str, name: str) -> str:
        stem, suffix = Path(name).stem, Path(name).suffix
        target, n = self.where(f"{folder}/{name}"), 1
        while self.fs.exists(target):
            target, n = self.where(f"{folder}/{stem}-{n}{suffix}"), n + 1
        return target

    def _upload(self, local: Path, dest: str) -> None:
        try:
            if self._local:
                self.fs.makedirs(dest.rpartition("/")[0], exist_ok=True)
            self.fs.put_file(str(local), dest)
        except OSError as error:
            raise self._fault(f"written ({dest})", error) from None


def _unused(folder: Path, name: str) -> Path:
    clean = sanitize_name(name)
    stem, suffix = Path(clean).stem, Path(clean).suffix
    target, n = folder / clean, 1
    while target.exists():
        target, n = folder / f"{stem}-{n}{suffix}", n + 1
    return target


def _read_map(data_dir: Path) -> dict[str, dict[str, Any]]:
    path = data_dir / _MAP
    if not path.exists():
        return {}
    found: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _write_map(data_dir: Path, pulled: dict[str, dict[str, Any]]) -> None:
    path = data_dir / _MAP
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(pulled, indent=1), encoding="utf-8")
    staged.replace(path)
