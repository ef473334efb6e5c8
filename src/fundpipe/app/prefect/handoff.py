"""The child's hand-off to the parent run through Prefect artifacts.

A child `org-night` run may run on another worker than its parent: what the parent needs of it
(its row of the cross-organization table, its exit code, its open exceptions) travels as table
artifacts the parent reads back by the child's flow run id. The row is an unkeyed artifact (off
the UI's Artifacts page); the exceptions are the child's `fundpipe-exceptions-<org>` table.
"""

from __future__ import annotations

from typing import Any

from prefect import State

from fundpipe.app.prefect.nightsummary import org_row
from fundpipe.app.prefect.uiview import org_key
from fundpipe.config import Organization

__all__ = ["ORG_ROW_KEY", "exceptions_left_by", "leave_exit_code", "leave_row", "row_left_by"]

#: Description of the (unkeyed: not on the UI's Artifacts page) table a child leaves with its
#: row of the cross-organization summary, for a parent on another worker.
ORG_ROW_KEY = "fundpipe internal: this night's row for the nightly run"


def leave_exit_code(final: State[Any]) -> None:
    """A stopped child's exit code (4: its inbox was locked; 2: its configuration; 3: the
    service), as its row artifact: a parent on another worker cannot read the child's error."""
    from prefect.artifacts import create_table_artifact

    from fundpipe.errors import FundpipeError

    error = final.data
    code = int(error.exit_code) if isinstance(error, FundpipeError) else 3
    create_table_artifact(table=[{"exit_code": code}], description=ORG_ROW_KEY)


def leave_row(org: Organization, summary: dict[str, Any], final: State[Any]) -> None:
    """The child's row of the cross-organization table, as an artifact the parent can read
    when the child ran on another worker."""
    from prefect.artifacts import create_table_artifact

    row = {k: v for k, v in org_row(org, final, summary).items() if k != "summary"}
    create_table_artifact(table=[row], description=ORG_ROW_KEY)


def _table_left_by(flow_run_id: Any, key: str | None) -> list[dict[str, Any]]:
    """The rows of a table artifact of a flow run: the one with `key`, else the internal row."""
    import json

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
                **({"key": ArtifactFilterKey(any_=[key])} if key else {}),
            )
        )
    for artifact in found:
        if not key and artifact.description != ORG_ROW_KEY:
            continue
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return [dict(d) for d in data]
    return []


def row_left_by(flow_run_id: Any) -> dict[str, Any]:
    """The row a child left for the parent (its internal table artifact)."""
    rows = _table_left_by(flow_run_id, None)
    return rows[0] if rows else {}


def exceptions_left_by(flow_run_id: Any, org: Organization) -> list[dict[str, Any]]:
    """The exceptions a child left in its `fundpipe-exceptions-<org>` table."""
    from fundpipe.app.prefect.uiview import EXCEPTION_LABELS

    keys = {label: key for key, label in EXCEPTION_LABELS.items()}
    rows = _table_left_by(flow_run_id, org_key("fundpipe-exceptions", org.folder))
    return [{keys[k]: v for k, v in r.items() if k in keys} for r in rows if r.get("Exception")]
