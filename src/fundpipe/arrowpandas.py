"""pyarrow without importing pandas, in a process that has not imported it.

pyarrow imports pandas (with numpy.ma: about half a second of CPU, more on a loaded machine) the
first time it turns a Python value into Arrow (``pa.array`` of a page of records, a compute
function given a Python number), only to ask whether the value is a pandas object. A process
that has not imported pandas holds no pandas object, so the answer is known: :func:`spare_pandas`
gives pyarrow that answer instead, which spares `fundpipe sync` and `fundpipe reconcile` (neither
reads a sheet) the import. The moment anything imports pandas afterwards, pyarrow is told it is
there, before the importer can hand it a pandas object: a Series, a DataFrame, a Categorical are
then converted exactly as they are without this module.
"""

from __future__ import annotations

import sys
import threading
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["scalar", "spare_pandas"]

_lock = threading.Lock()


def _shim() -> Any:
    """pyarrow's lazy pandas importer (`pyarrow.lib._pandas_api`)."""
    import pyarrow.lib

    return pyarrow.lib._pandas_api  # type: ignore[attr-defined]


class _PandasWatch(MetaPathFinder):
    """Answers pyarrow's probe "no pandas" (in the probing thread only), then tells pyarrow of
    pandas right after pandas is imported, and leaves ``sys.meta_path``."""

    def __init__(self) -> None:
        self.probing: int | None = None

    def find_spec(
        self, name: str, path: Any = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """None (the other finders decide) for every module but pandas."""
        if name != "pandas":
            return None
        if self.probing == threading.get_ident():
            raise ModuleNotFoundError("pandas spared", name=name)
        _leave(self)
        spec = _spec_without(self, name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader: Any = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            del loader.exec_module  # the loader as it was
            _shim().compat  # noqa: B018 - pyarrow imports it again (done: cheap) and now knows

        loader.exec_module = exec_module
        return spec


def _leave(watch: _PandasWatch) -> None:
    with _lock:
        if watch in sys.meta_path:
            sys.meta_path.remove(watch)


def _spec_without(
    watch: _PandasWatch, name: str, path: Any, target: ModuleType | None
) -> ModuleSpec | None:
    for finder in list(sys.meta_path):
        if finder is watch or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(name, path, target)
        if spec is not None:
            return spec
    return None


def spare_pandas() -> None:
    """Let pyarrow convert Python values without importing pandas, as long as nothing else has
    imported it (see the module's docstring). Idempotent; does nothing where pandas is already
    imported or pyarrow has already looked for it."""
    if "pandas" in sys.modules:
        return
    with _lock:
        if any(isinstance(f, _PandasWatch) for f in sys.meta_path):
            return
        watch = _PandasWatch()
        sys.meta_path.insert(0, watch)
    shim = _shim()
    watch.probing = threading.get_ident()
    try:
        found = shim.have_pandas  # pyarrow looks for pandas once, and remembers the answer
    finally:
        watch.probing = None
    if found:  # it had looked before (and imported pandas): nothing to watch for
        _leave(watch)


def scalar(value: bool | int | float | str) -> Any:
    """The Arrow scalar pyarrow would make of a Python `value` (bool, int64, float64, string),
    made without inferring its type: inference looks for pandas (importing it, see
    :func:`spare_pandas`), an explicit type does not."""
    import pyarrow as pa

    if isinstance(value, bool):
        return pa.scalar(value, pa.bool_())
    if isinstance(value, int):
        return pa.scalar(value, pa.int64())
    if isinstance(value, float):
        return pa.scalar(value, pa.float64())
    return pa.scalar(value, pa.string())
