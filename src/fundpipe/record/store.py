"""Where an organization's durable record is: a folder or any fsspec URL, written append-only.

`Record(location)` reads and writes objects below ``location`` (``Settings.record_location``:
``<FUNDPIPE_RECORD_URL>/<org>``, by default ``data/record/<org>``) by names relative to it.
`Record.create` writes an object only if none has its name (an exclusive create: ``O_EXCL`` on
a folder, ``If-None-Match: *`` on S3), so nothing already in the record is ever rewritten; the
lock (`fundpipe.record.lock`) rests on the same conditional write.
"""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from fundpipe.errors import InputError

__all__ = ["Record", "RecordError", "RecordExistsError"]


class RecordError(InputError):
    """The durable record cannot be read or written as asked (exit 2); the message names the
    object and what to do."""


class RecordExistsError(RecordError):
    """An object of that name is in the record already (it is never rewritten)."""


class Record:
    """One organization's durable record at ``location`` (a folder path or an fsspec URL)."""

    def __init__(self, location: str) -> None:
        """Describe the record at ``location``; nothing is read or written yet."""
        from fsspec.core import url_to_fs

        self.location = location.rstrip("/")
        fs, root = url_to_fs(self.location)
        self._fs: Any = fs
        self._root: str = str(root).rstrip("/")
        self._local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))

    def url(self, name: str) -> str:
        """The URL (or path) of the object ``name``, as a person would look it up."""
        return f"{self.location}/{name}"

    def _path(self, name: str) -> str:
        return f"{self._root}/{name}"

    def _parent(self, name: str) -> None:
        if self._local:
            parent = self._path(name).rpartition("/")[0]
            self._fs.makedirs(parent, exist_ok=True)

    def create(self, name: str, data: bytes) -> None:
        """Write ``data`` as the new object ``name``; RecordExistsError when one has that name
        (never overwritten), RecordError when the record cannot be written."""
        try:
            self._parent(name)
            with self._fs.open(self._path(name), "xb") as handle:
                handle.write(data)
        except FileExistsError:
            raise RecordExistsError(f"{self.url(name)} is in the record already") from None
        except OSError as error:
            raise self._unwritable(name, error) from None
        except (ValueError, NotImplementedError):
            raise self._no_exclusive_create() from None

    def create_from(self, name: str, source: Path) -> None:
        """Copy the local file ``source`` as the new object ``name`` (an exclusive create)."""
        try:
            self._parent(name)
            with source.open("rb") as src, self._fs.open(self._path(name), "xb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except FileExistsError:
            raise RecordExistsError(f"{self.url(name)} is in the record already") from None
        except OSError as error:
            raise self._unwritable(name, error) from None
        except (ValueError, NotImplementedError):
            raise self._no_exclusive_create() from None

    def _no_exclusive_create(self) -> RecordError:
        return RecordError(
            f"the durable record {self.location} cannot create an object only if it is absent "
            "(fsspec mode 'xb'), which keeps decisions from being overwritten and two machines "
            "from one organization: use a folder or S3, or a newer driver for this store"
        )

    def _unwritable(self, name: str, error: OSError) -> RecordError:
        reason = error.strerror or type(error).__name__
        return RecordError(
            f"the durable record {self.location} could not be written ({self.url(name)}: "
            f"{reason}); check FUNDPIPE_RECORD_URL, the storage and its credentials"
        )

    def replace(self, name: str, data: bytes) -> None:
        """Write ``data`` over the object ``name`` whole (a folder: a temporary file renamed
        over it, atomic); the lock's renewal only — everything else is created once."""
        try:
            self._parent(name)
            if self._local:
                path = Path(self._path(name))
                staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                staged.write_bytes(data)
                staged.replace(path)
            else:
                self._fs.pipe_file(self._path(name), data)
        except OSError as error:
            raise self._unwritable(name, error) from None

    def read(self, name: str) -> bytes:
        """The object ``name``'s bytes; RecordError when it is missing."""
        try:
            with self._fs.open(self._path(name), "rb") as handle:
                data: bytes = handle.read()
        except FileNotFoundError:
            raise RecordError(f"{self.url(name)} is missing from the record") from None
        return data

    def open_read(self, name: str) -> IO[bytes]:
        """The object ``name`` opened for reading (a context manager)."""
        handle: IO[bytes] = self._fs.open(self._path(name), "rb")
        return handle

    def exists(self, name: str) -> bool:
        """Whether the object ``name`` is in the record."""
        return bool(self._fs.exists(self._path(name)))

    def names(self, prefix: str) -> list[str]:
        """Every object below the folder ``prefix``, as names relative to the record, sorted."""
        base = self._path(prefix)
        with suppress(FileNotFoundError):
            if self._fs.isdir(base):
                self._fs.invalidate_cache(base)
                found = self._fs.find(base)
                return sorted(str(p)[len(self._root) + 1 :] for p in found)
        return []

    def folders(self, prefix: str) -> list[str]:
        """The names of the folders directly below ``prefix``, sorted."""
        base = self._path(prefix)
        with suppress(FileNotFoundError):
            if self._fs.isdir(base):
                self._fs.invalidate_cache(base)
                entries = self._fs.ls(base, detail=True)
                return sorted(
                    str(e["name"]).rstrip("/").rpartition("/")[2]
                    for e in entries
                    if e.get("type") == "directory"
                )
        return []

    def remove(self, name: str, *, recursive: bool = False) -> None:
        """Delete the object (or with ``recursive`` the folder) ``name``; retention and the
        lock's release only."""
        with suppress(FileNotFoundError):
            self._fs.rm(self._path(name), recursive=recursive)
