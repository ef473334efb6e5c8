"""Entry points named by `prefect.yaml`: a thin shim over `fundpipe.app.flows`.

The flows live in the package (so an installed wheel has them); this file only re-exports them
for Prefect's `path:function` entrypoints. Nothing loads flows by file path.
"""

from fundpipe.app.fanout import org_night
from fundpipe.app.flows import (
    deployments,
    inbox,
    ingest_file,
    nightly,
    reconcile,
    serve_all,
    sync,
)

__all__ = [
    "deployments",
    "inbox",
    "ingest_file",
    "nightly",
    "org_night",
    "reconcile",
    "serve_all",
    "sync",
]
