"""The Prefect shell: flows and tasks (`flows`, `steps`, `fanout`, `orgnight`, `nightsummary`),
the server `fundpipe serve` starts (`server`), the inbox watcher (`watch`), the on-call's lines
and events (`oncall`, `tell`), artifacts, alerts, and the one Prefect Secret-block loader
(`secrets`).

Only this package (and the CLI commands that start flows) imports Prefect.
"""

from fundpipe.app import quiet_retries

quiet_retries()  # a flow's retries are said once, by the client
