"""Report links that open: a link only where a browser can follow it, else the path as text
with the machine it is on.

A report is somewhere a browser can reach only when its location is an ``http(s)`` URL, or when
the shared reports location (``FUNDPIPE_REPORTS_URL``: a folder, ``s3://…``) is served under a
public address (``FUNDPIPE_REPORTS_PUBLIC_URL``: a web server over the folder, the bucket's
public or CDN URL). A folder path or an ``s3://`` URL in a Prefect artifact opens the UI's own
404 page, so it is shown as text: the path, and the host it is on (the worker's, for a report
that stayed on its disk; none for the shared location, the same on every machine).
"""

from __future__ import annotations

import socket
from pathlib import Path

__all__ = ["Where", "markdown", "openable", "where"]


def _is_web(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def openable(location: str | None, reports_url: str | None, public_url: str | None) -> str | None:
    """The URL a browser opens for ``location`` (a published location, or a URL), or None.

    ``location`` under ``reports_url`` maps onto ``public_url`` when there is one
    (``s3://b/reports/org_a/x.xlsx`` → ``https://cdn.example/reports/org_a/x.xlsx``)."""
    if not location:
        return None
    if _is_web(location):
        return location
    if public_url and reports_url:
        root = reports_url.rstrip("/") + "/"
        if location.startswith(root):
            return f"{public_url.rstrip('/')}/{location[len(root) :]}"
    return None


class Where:
    """Where a report is, for a person: a link that opens, or a path on a machine."""

    def __init__(self, url: str | None, path: str, host: str | None) -> None:
        """``url`` when it opens; else ``path`` (on ``host``, None: on the shared location)."""
        self.url = url
        self.path = path
        self.host = host

    def text(self) -> str:
        """``https://…``, or ``/srv/reports/x.xlsx on host night-1``."""
        if self.url:
            return self.url
        return f"{self.path} on host {self.host}" if self.host else self.path

    def __repr__(self) -> str:
        return f"Where({self.text()!r})"


def where(
    published: str | None,
    local: str | Path | None,
    reports_url: str | None,
    public_url: str | None,
    host: str | None = None,
) -> Where | None:
    """Where one report is: its published location when it has one (a link if it opens, else
    the shared path as text), else its local path on this machine (``host``, default this
    machine's name)."""
    url = openable(published, reports_url, public_url)
    if url or published:
        return Where(url, published or "", None)
    if local:
        return Where(None, str(local), host or socket.gethostname())
    return None


def markdown(name: str, place: Where | None) -> str:
    """A markdown list item for a report: ``- [name](url)``, or its path (and machine) as code
    text that no browser is asked to open."""
    if place is None:
        return f"- {name}: not written"
    if place.url:
        return f"- [{name}]({place.url})"
    on = f" on host `{place.host}`" if place.host else " (the shared reports location)"
    return f"- {name}: `{place.path}`{on}"
