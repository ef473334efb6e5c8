"""Entry points named by `prefect.yaml`: a thin shim over `fundpipe.app.prefect.flows`.

The flows live in the package (so an installed wheel has them); this file only re-exports them
for Prefect's `path:function` entrypoints, under the package's own `__all__` (a flow added
there is here too). Nothing loads flows by file path.
"""

from fundpipe.app.prefect import flows
from fundpipe.app.prefect.flows import *  # noqa: F403 - the entry points, exactly flows.__all__

__all__ = flows.__all__
