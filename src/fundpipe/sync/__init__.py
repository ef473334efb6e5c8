"""Stage ⑤: pages of the service → Arrow → merged into the warehouse.

Other packages import from here, never from a module of this package:

- `sync` — pull the service into the warehouse (`fundpipe sync`)
- `SyncResult` — what one sync pulled and where it went
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.sync.pull import SyncResult, sync

__all__ = [
    "SyncResult",
    "sync",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "sync": "pull",
    "SyncResult": "pull",
}

__getattr__ = lazy_face(__name__, _HOMES)
