"""A first sync's new warehouse, built while the lists are pulled.

The first sync of a data directory creates its warehouse, and creating it applies every
migration of `schemas/warehouse.sql` (CPU and disk, about a second on two busy cores) — work
that needs nothing from the service. :class:`FreshWarehouse` does it in a worker thread beside
the pull (which mostly waits on the service), into a file next to the warehouse; the file takes
the warehouse's name only once the pull is known good (`place`), so a sync refused before it
writes (say, live objects where test ones were expected) still leaves no warehouse behind.
Given the settings' cache folder, the new file is a copy of the empty warehouse kept there
(`fundpipe.warehouse.template`): milliseconds instead of the migrations.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from fundpipe.warehouse import Warehouse

__all__ = ["FreshWarehouse"]


class FreshWarehouse:
    """The schema of `warehouse`'s file, built beside it when the file does not exist yet."""

    def __init__(self, warehouse: Warehouse) -> None:
        """Start building (in a worker thread) when `warehouse`'s file is missing; else nothing."""
        self.target = warehouse.path
        self.staged = self.target.with_name(f"{self.target.name}.new-{os.getpid()}")
        self._task: asyncio.Future[None] | None = None
        if not self.target.exists():
            staged = Warehouse(
                self.staged,
                schema_file=warehouse.schema_file,
                views_file=warehouse.views_file,
                org=warehouse.org,
                cache_dir=warehouse.cache_dir,
            )
            self._task = asyncio.ensure_future(asyncio.to_thread(staged.migrate))

    async def place(self) -> None:
        """Give the built file the warehouse's name, unless a warehouse appeared meanwhile (it
        is then kept, and migrated as usual when it is opened) or the file system cannot."""
        if self._task is None:
            return
        await self._task
        if not _wal(self.staged).exists():  # closed cleanly: the file holds everything
            # never over a file that appeared meanwhile; where hard links are not allowed the
            # merge builds the file again as it always did
            with contextlib.suppress(OSError):
                os.link(self.staged, self.target)

    async def discard(self) -> None:
        """Wait for the worker thread, then remove the staged file (placed or not)."""
        if self._task is None:
            return
        await asyncio.wait([self._task])
        for leftover in (self.staged, _wal(self.staged)):
            leftover.unlink(missing_ok=True)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")
