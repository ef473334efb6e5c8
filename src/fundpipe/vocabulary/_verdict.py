"""What one organization's night asks of a person: :class:`Verdict`, and the state names."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NEEDS_A_PERSON_STATE", "NEEDS_A_PERSON_STATE_TYPE", "Verdict"]


#: The one Prefect form of "needs a person": the state name of every run that ends needing one —
#: a night (`org-night`, `nightly`) whose verdict is NEEDS_A_PERSON, a one-step run (`inbox`,
#: `ingest_file`) that left a file for a person — and the label `fundpipe run` shows. Its state
#: is made in one place, `fundpipe.app.prefect.verdict_state.needing_a_person`.
NEEDS_A_PERSON_STATE = "Needs a person"
#: Its state type: FAILED, so that the UI shows it red, never as green as a clean run (the name
#: on the badge says it is not an outage).
NEEDS_A_PERSON_STATE_TYPE = "FAILED"


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
