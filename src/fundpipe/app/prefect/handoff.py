"""The child's hand-off to the parent run through Prefect artifacts.

A child `org-night` run may run on another worker than its parent: what the parent needs of it
(its row of the cross-organization table, its exit code, its open exceptions) travels as JSON in
an unkeyed table artifact (off the UI's Artifacts page) the parent reads back by the child's
flow run id (`OrgRow.as_json` writes it, `OrgRow.with_json` reads it).
"""

from __future__ import annotations

from typing import Any

from prefect import State

from fundpipe.app.prefect.nightsummary import org_row
from fundpipe.config import Organization
from fundpipe.nights import OrgNight

__all__ = ["ORG_ROW_KEY", "leave_exit_code", "leave_row", "row_left_by"]

#: Description of the (unkeyed: not on the UI's Artifacts page) table a child leaves with its
#: row of the cross-organization summary, for a parent on another worker.
ORG_ROW_KEY = "fundpipe internal: this night's row for the nightly run"


def leave_exit_code(final: State[Any]) -> None:
    """A stopped child's exit code (4: its inbox was locked; 2: its configuration; 3: the
    service; 5: anything else, a bug), as its row artifact: a parent on another worker cannot
    read the child's error."""
    from prefect.artifacts import create_table_artifact

    from fundpipe.errors import ExitCode, FundpipeError

    error = final.data
    code = int(error.exit_code if isinstance(error, FundpipeError) else ExitCode.INTERNAL)
    create_table_artifact(table=[{"exit_code": code}], description=ORG_ROW_KEY)


def leave_row(org: Organization, night: OrgNight, final: State[Any]) -> None:
    """The child's row of the cross-organization table (with its open exceptions), as an
    artifact the parent can read when the child ran on another worker."""
    from prefect.artifacts import create_table_artifact

    create_table_artifact(table=[org_row(org, final, night).as_json()], description=ORG_ROW_KEY)


def _table_left_by(flow_run_id: Any) -> list[dict[str, Any]]:
    """The rows of the internal table artifact of a flow run."""
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
        if artifact.description != ORG_ROW_KEY:
            continue
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return [dict(d) for d in data]
    return []


def row_left_by(flow_run_id: Any) -> dict[str, Any]:
    """The JSON a child left for the parent (its internal table artifact; `{}`: none)."""
    rows = _table_left_by(flow_run_id)
    return rows[0] if rows else {}
