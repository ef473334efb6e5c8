"""A package's public face, imported on first use.

A package of fundpipe names what other packages may use in its `__init__` (`__all__`, one line
each in its docstring). Importing the package must stay cheap — `fundpipe validate` never loads
the warehouse's or the client's modules, `fundpipe sync` never loads pandas — so the `__init__`
does not import its modules; it maps each public name to the module that defines it:

```python
_HOMES = {"Warehouse": "file", "transaction": "connection"}
__getattr__ = lazy_face(__name__, _HOMES)   # `from fundpipe.warehouse import Warehouse`
```

A name whose home is itself (``{"ingest": "ingest"}``) is a public submodule, as
`fundpipe.client.errors` is: its module is its face.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_face"]


def lazy_face(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for ``package`` that imports ``homes[name]`` (a submodule of
    ``package``) when ``name`` is asked for, and returns the name from it."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}.{home}")
        # read from its home each time, never cached here: a name replaced in its home module
        # (a test's monkeypatch) is the one every later import through the face gets
        return module if home == name else getattr(module, name)

    return __getattr__
