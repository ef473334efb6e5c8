"""What one organization's night asks of a person: :class:`Verdict`, and the state names."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NEEDS_A_PERSON_STATE", "NEEDS_REVIEW_STATE", "Verdict"]


#: The Prefect state name of a night (`org-night`, `nightly`) whose verdict is NEEDS_A_PERSON
#: (type FAILED, `fundpipe.app.prefect.verdict_state`), and the label `fundpipe run` shows.
NEEDS_A_PERSON_STATE = "Needs a person"
#: The Prefect state name of a one-step run (`inbox`, `ingest_file`) that left a file for a
#: person (type COMPLETED, `fundpipe.app.prefect.steps`).
NEEDS_REVIEW_STATE = "Needs review"


class Verdict(StrEnum):
    """What one organization's night asks of a person (computed by `fundpipe.nights.OrgRow`):
    ``ok``, ``needs a person`` (its findings: what, how much, by when) or ``failed``."""

    OK = "ok"
    NEEDS_A_PERSON = "needs a person"
    FAILED = "failed"

    @property
    def shout(self) -> str:
        """The verdict as the Prefect verdict, health page and run messages say it: ``OK``,
        ``NEEDS A PERSON``, ``FAILED``."""
        return self.value.upper()
