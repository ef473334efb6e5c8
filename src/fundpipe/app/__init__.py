"""The ways to run fundpipe: the CLI, the Prefect flows, rendering, the embedded sandbox.

Nothing below `fundpipe.app` imports it: the library returns data, and only this package
prints, starts the embedded sandbox or reads settings from the environment.
"""


def quiet_retries() -> None:
    """Turn stamina's own retry hooks off for the process (each way to run fundpipe does, as
    it starts its work: a CLI command as its body begins, the Prefect shell as it is
    imported). The client says each retry once, in its own words ("GET /v1/… failed (503);
    retry 1 in 0.30 s"); stamina's default hooks would say it again on its own logger (and count
    it for Prometheus, which Prefect brings in). Imported here, not at the package's import:
    `fundpipe --help` never retries anything."""
    import stamina.instrumentation

    stamina.instrumentation.set_on_retry_hooks([])
