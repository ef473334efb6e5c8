"""The ways to run fundpipe: the CLI, the Prefect flows, rendering, the embedded sandbox.

Nothing below `fundpipe.app` imports it: the library returns data, and only this package
prints, starts the embedded sandbox or reads settings from the environment.
"""

import stamina.instrumentation

# The client says each retry once, in its own words ("GET /v1/… failed (503); retry 1 in 0.30 s").
# stamina's default hooks would say it again on its own logger (and count it for Prometheus,
# which Prefect brings in): the ways to run fundpipe turn them off, once, for the process.
stamina.instrumentation.set_on_retry_hooks([])
