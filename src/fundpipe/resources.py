"""The data files fundpipe reads — schemas (DDL, OpenAPI, sheet templates) and the samples —
shipped inside the package and found through `importlib.resources`, never through
`Path(__file__).parents[N]`: an installed wheel runs a night without a checkout.

In the repository they live in `src/fundpipe/schemas/` and `src/fundpipe/samples/`; the
top-level `schemas` and `data/samples` are symlinks to them, for readers.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["SAMPLES_DIR", "SCHEMAS_DIR", "package_path"]


def package_path(*parts: str) -> Path:
    """The file or folder ``parts`` inside the installed `fundpipe` package, as a path.

    fundpipe is installed unpacked (a wheel, or an editable install), so its resources are
    files on disk; DuckDB and the sheet readers need real paths.
    """
    resource = files("fundpipe").joinpath(*parts)
    return Path(str(resource))


#: `schemas/` of the package: warehouse.sql, views.sql, ledger.sql, warehouse_merge.sql,
#: openapi.yaml, templates/.
SCHEMAS_DIR = package_path("schemas")
#: The sample sheets `fundpipe run --samples` copies into the inbox.
SAMPLES_DIR = package_path("samples")
