"""`fundpipe sandbox`: serve the Fund Distribution Service sandbox over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fundpipe.app.cli_common import console, user_errors
from fundpipe.errors import InputError

__all__ = ["sandbox_command"]


def sandbox_command(
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    db: Annotated[
        Path | None, typer.Option(help="SQLite state file (default: a temporary one).")
    ] = None,
    seed: Annotated[str, typer.Option(help="Initial state: demo or empty.")] = "demo",
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            "--allow-non-loopback",
            help="Allow binding beyond loopback (its /_sandbox/ control routes have no auth).",
        ),
    ] = False,
    strict_interface: Annotated[
        bool,
        typer.Option(
            "--strict-interface",
            help="Serve only the documented interface: our own routes 404, our fields left out.",
        ),
    ] = False,
    public_forms: Annotated[
        bool,
        typer.Option(
            "--public-forms", help="Serve the public spec's forms (external_references, ...)."
        ),
    ] = False,
    reject_unknown_fields: Annotated[
        bool,
        typer.Option(
            "--reject-unknown-fields",
            help="Refuse create bodies with fields the public description does not allow, in "
            "the public error form (param, no invalid-params): a strict real service's rehearsal.",
        ),
    ] = False,
    legacy_pagination: Annotated[
        bool,
        typer.Option(
            "--legacy-pagination", help="Lists in the older has_more-only form (no page URLs)."
        ),
    ] = False,
    demo_orgs: Annotated[
        int,
        typer.Option(
            "--demo-orgs", min=1, max=26, help="Demo organizations the demo seed creates."
        ),
    ] = 1,
    rate_limit_scope: Annotated[
        str,
        typer.Option(
            "--rate-limit-scope",
            help="Sandbox mode: the quota per client (client) or per client and organization "
            "(client_org).",
        ),
    ] = "client",
) -> None:
    """Serve the Fund Distribution Service sandbox over HTTP (Ctrl-C stops it).

    Clients: demo-client / demo-secret (every scope) and demo-reader / reader-secret (read only)
    act for org_demo. /_sandbox/ control routes reset it, advance its clock and inject faults.

    Example: fundpipe sandbox --port 8765 --seed demo
    """
    with user_errors():
        if seed not in {"demo", "empty"}:
            raise InputError("--seed must be demo or empty")
        if rate_limit_scope not in {"client", "client_org"}:
            raise InputError("--rate-limit-scope must be client or client_org")
        if host not in {"127.0.0.1", "localhost", "::1"} and not allow_non_loopback:
            raise InputError(
                f"refusing to serve on {host}: the sandbox's control routes "
                "are unauthenticated; pass --allow-non-loopback if you mean it"
            )
        from fundpipe.sandbox import run_server

        console.print(f"sandbox on http://{host}:{port} (seed {seed}); Ctrl-C to stop")
        run_server(
            host=host,
            port=port,
            db_path=db,
            seed=seed,
            allow_non_loopback=allow_non_loopback,
            strict_interface=strict_interface,
            public_forms=public_forms,
            reject_unknown_fields=reject_unknown_fields,
            legacy_pagination=legacy_pagination,
            demo_orgs=demo_orgs,
            rate_limit_scope="client_org" if rate_limit_scope == "client_org" else "client",
        )
