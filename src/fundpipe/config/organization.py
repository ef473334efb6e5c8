"""One organization fundpipe runs for, as the settings name it (`fundpipe.config.Organization`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OWN_ORG_FOLDER", "Organization"]

#: Folder name of the organization's state when its id is not known (a client acting for its
#: one organization, without `X-Organization-Id`, and no organization read).
OWN_ORG_FOLDER = "default"


@dataclass(frozen=True, slots=True)
class Organization:
    """One organization fundpipe runs for (`FUNDPIPE_ORGS`, `FUNDPIPE_ORGS_FILE`, or the
    service's organization read): its id, display name, and optionally its own service URL,
    OAuth client id and the name of the Prefect Secret block holding that client's secret, and
    the work queue its `org-night` run goes to (`FUNDPIPE_FAN_OUT=deployments`; None: the
    deployment's own).

    `id` None: the client's own organization, not named (no `X-Organization-Id` header).
    """

    id: str | None
    name: str | None = None
    base_url: str | None = None
    client_id: str | None = None
    secret_block: str | None = None
    work_queue: str | None = None
    #: Its materiality in cents (the `materiality` dollars of its entry; None: the setting's).
    materiality: int | None = None

    @property
    def folder(self) -> str:
        """The name of its folders under `data/orgs/` and `data/reports/`."""
        return self.id or OWN_ORG_FOLDER

    @property
    def label(self) -> str:
        """How people are told about it: the id, with the display name when there is one."""
        ident = self.id or "the client's own organization"
        return f"{ident} ({self.name})" if self.name and self.name != self.id else ident
