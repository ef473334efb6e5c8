"""The ways to run fundpipe: the CLI, the Prefect flows, rendering, the embedded sandbox.

Nothing below `fundpipe.app` imports it: the library returns data, and only this package
prints, starts the embedded sandbox or reads settings from the environment.
"""
