"""The child's hand-off to the parent run through Prefect artifacts.

A child `org-night` run may run on another worker than its parent: what the parent needs of it
(its row of the cross-organization table, its exit code, its open exceptions) travels as JSON in
an artifact the parent reads back by the child's flow run id (`OrgRow.as_json` writes it,
`OrgRow.with_json` reads it).

That artifact is for fundpipe, not for people: it is of Prefect's ``result`` type, which the
UI's run Artifacts tab does not list (as it does not list a run's persisted results), unkeyed
(off the Artifacts page), titled as the hand-off it is (`HANDOFF`), and created last, after
the run's verdict and health page. A flow run's persisted result would need storage the parent's
worker can read, which a deployment's child on another machine may not share; the artifact
travels through the Prefect server both already talk to.
"""

from __future__ import annotations

from typing import Any

from prefect import State

from fundpipe.app.prefect.nightsummary import org_row
from fundpipe.config import Organization
from fundpipe.nights import OrgNight

__all__ = ["HANDOFF", "HANDOFF_TYPE", "ORG_ROW_KEY", "leave_exit_code", "leave_row", "row_left_by"]

#: The title (description) of the artifact a child leaves with its row of the
#: cross-organization summary, for a parent on another worker: what it is, and for whom.
HANDOFF = "Hand-off to the nightly run (for fundpipe, not for people)"
#: Its Prefect artifact type: ``result``, which a run's Artifacts tab does not list.
HANDOFF_TYPE = "result"
#: The title the hand-off had before (a child on an older worker still leaves it so).
ORG_ROW_KEY = "fundpipe internal: this night's row for the nightly run"


def _leave(row: dict[str, Any]) -> None:
    """Leave ``row`` for the parent: the run's hand-off artifact (see the module docstring)."""
    from prefect.artifacts import TableArtifact

    TableArtifact(table=[row], type=HANDOFF_TYPE, description=HANDOFF).create()


def leave_exit_code(final: State[Any]) -> None:
    """A stopped child's exit code (4: its inbox was locked; 2: its configuration; 3: the
    service; 5: anything else, a bug), as its row artifact: a parent on another worker cannot
    read the child's error."""
    from fundpipe.errors import ExitCode, FundpipeError

    error = final.data
    code = int(error.exit_code if isinstance(error, FundpipeError) else ExitCode.INTERNAL)
    _leave({"exit_code": code})


def leave_row(org: Organization, night: OrgNight, final: State[Any]) -> None:
    """The child's row of the cross-organization table (with its open exceptions), as an
    artifact the parent can read when the child ran on another worker."""
    _leave(org_row(org, final, night).as_json())


def _table_left_by(flow_run_id: Any) -> list[dict[str, Any]]:
    """The rows of the hand-off artifact of a flow run (`HANDOFF`, or an older child's
    `ORG_ROW_KEY`)."""
    import json

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
    )

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    for artifact in found:
        if artifact.description not in (HANDOFF, ORG_ROW_KEY):
            continue
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return [dict(d) for d in data]
    return []


def row_left_by(flow_run_id: Any) -> dict[str, Any]:
    """The JSON a child left for the parent (its hand-off artifact; `{}`: none)."""
    rows = _table_left_by(flow_run_id)
    return rows[0] if rows else {}
