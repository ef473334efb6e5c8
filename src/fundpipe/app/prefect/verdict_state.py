"""A night's verdict as the Prefect UI shows it: the run's state, the first artifact a person
reads, the health page across nights, and run names that tell runs apart.

Each organization's night ends in one of three verdicts (`fundpipe.vocabulary.Verdict`, said
here in capitals: :attr:`~fundpipe.vocabulary.Verdict.shout`; one :class:`VerdictLine` each, built
by the shell from the library's per-organization verdict):

- **OK** — nothing for a person;
- **NEEDS A PERSON** — what, how much, by when (a rejected file, a conflict, a new or worsened
  exception, open exceptions still due);
- **FAILED** — why in plain words, on which host, what to do next.

The state (:func:`night_state`). Prefect colours a run by its state *type*, not its name: a
COMPLETED state with any name is as green as a clean night, and the dashboard counts it
nowhere. A run that needs a person gets a **FAILED**-type state named
:data:`NEEDS_A_PERSON` ("Needs a person", `fundpipe.vocabulary`): red in the runs list, the graph and the timeline, and
counted by the dashboard's "failed or crashed runs" — read as not fine at a glance, with the name
on the badge saying it is not an outage. Retries do not fire for it: Prefect retries a Failed run
only when the flow or deployment sets `retries`, and fundpipe's night flows set none (one retry
layer: the service client's). The other types were weighed: CANCELLED is grey and reads as
"someone stopped it"; CRASHED says the process died (and its alert says so); PAUSED is not
terminal (the run waits to be resumed). A failed night is a plain FAILED state; an OK night
COMPLETED. The same "Needs a person" ends a one-step run (`inbox`, `ingest_file`) that leaves a
file for a person: one form for every flow, made here alone (:func:`needing_a_person`). The
run's alerts are the incident's own (`fundpipe.app.prefect.alerts`), not one more for the red run.

Only the shells import this module; it holds no I/O but the artifact calls of `publish_*`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from fundpipe.cents import format_cents
from fundpipe.errors import ExitCode, FundpipeError
from fundpipe.vocabulary import NEEDS_A_PERSON_STATE, NEEDS_A_PERSON_STATE_TYPE, Verdict

if TYPE_CHECKING:
    from prefect import State

    from fundpipe.nights import OrgRow

__all__ = [
    "HEALTH_KEY",
    "NEEDS_A_PERSON",
    "VERDICT_KEY",
    "NeedsAPerson",
    "VerdictLine",
    "health_rows",
    "line_of",
    "needing_a_person",
    "needs_a_person_state",
    "next_step_for",
    "night_state",
    "unique_run_name",
    "verdict_markdown",
    "verdict_table",
]

#: The state name of a run that needs a person (state type FAILED: see the module docstring).
NEEDS_A_PERSON = NEEDS_A_PERSON_STATE
#: The key of the verdict artifact (the first a run shows) and of the health page.
VERDICT_KEY = "fundpipe-verdict"
HEALTH_KEY = "fundpipe-health"


@dataclass(frozen=True)
class VerdictLine:
    """One organization's verdict, in the words a person reads.

    ``name`` is how people know the organization (its id when it has no name). For NEEDS A
    PERSON: ``what``, ``amount_cents`` (None: no amount), ``due`` (None: no date). For FAILED:
    ``why`` in plain words and ``host`` (the machine or service it failed on). ``next_step`` for
    either.
    """

    organization: str
    name: str
    verdict: Verdict
    what: str = ""
    amount_cents: int | None = None
    due: date | None = None
    why: str = ""
    host: str = ""
    next_step: str = ""
    #: how much and by when as words, when not cents and a date ("3 row(s)", "today")
    much: str = ""
    when: str = ""

    @property
    def how_much(self) -> str:
        """The amount as dollars text (or its words), empty when there is none."""
        return self.much if self.amount_cents is None else format_cents(self.amount_cents)

    @property
    def by_when(self) -> str:
        """``by 2026-11-30`` (or its words), empty when there is no date."""
        return f"by {self.due.isoformat()}" if self.due else self.when

    def sentence(self) -> str:
        """The verdict in one line: ``Alpha Fund: NEEDS A PERSON: a shortfall, $4,500.00, by
        2026-11-30 — fund the vehicle``."""
        if self.verdict is Verdict.OK:
            return f"{self.name}: OK"
        if self.verdict is Verdict.NEEDS_A_PERSON:
            parts = [p for p in (self.what, self.how_much, self.by_when) if p]
        else:
            parts = [self.why or "see the run's logs"] + ([f"on {self.host}"] if self.host else [])
        text = f"{self.name}: {self.verdict.shout}: {', '.join(parts)}"
        return f"{text} — {self.next_step}" if self.next_step else text


class NeedsAPerson(FundpipeError):
    """The data of a night's "Needs a person" state (of type FAILED, whose data Prefect reads
    as an exception): the night's own result (``value``: an `OrgNight`, a `Nights`), exit code
    1. A plain fundpipe error, so no traceback of it reaches a run's log."""

    exit_code = ExitCode.NEEDS_PERSON

    def __init__(self, message: str, value: Any) -> None:
        """The state's message, and the night's result it carries."""
        super().__init__(message)
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles with its value (a result a worker persists)."""
        return (type(self), (str(self), self.value))


def night_state(lines: Sequence[VerdictLine], data: Any = None, failed: Any = None) -> Any:
    """The Prefect state of a night over ``lines``: COMPLETED when every organization is OK;
    FAILED named "Needs a person" when one needs a person and none failed; a plain FAILED when
    one failed. Its message is the verdict lines, worst first, one per organization.

    ``data`` is the night's result: a COMPLETED state's data as it is, a "Needs a person"
    state's inside :class:`NeedsAPerson`; a FAILED state's is ``failed`` (an exception carrying
    it, e.g. `NightsFailed`), else ``data`` inside a `NeedsAPerson`-like plain error."""
    from prefect.states import Completed, Failed

    ordered = sorted(lines, key=_worst_first)
    message = "; ".join(line.sentence() for line in ordered) or "no organization ran"
    verdicts = {line.verdict for line in lines}
    if Verdict.FAILED in verdicts:
        return Failed(message=message, data=failed)
    if Verdict.NEEDS_A_PERSON in verdicts:
        return needing_a_person(message, data)
    return Completed(message=message, data=data)


def needing_a_person(message: str, data: Any = None) -> State[Any]:
    """The state of any run that ends needing a person — a night, a one-step run that left a
    file for one: FAILED, named :data:`NEEDS_A_PERSON`, ``data`` (the run's result) carried in
    a :class:`NeedsAPerson`."""
    from prefect.states import Failed

    carried = NeedsAPerson(message, data) if data is not None else None
    return Failed(name=NEEDS_A_PERSON, message=message, data=carried)


def needs_a_person_state(state: Any) -> bool:
    """``state`` is a run's "Needs a person" (FAILED type, but the run completed its work)."""
    named = state is not None and state.name == NEEDS_A_PERSON
    return bool(named and state.type.value == NEEDS_A_PERSON_STATE_TYPE)


def next_step_for(exit_code: int, host: str = "") -> str:
    """What to do next about a night that failed with ``exit_code``, in plain words."""
    service = f"the service at {host}" if host and host != "embedded" else "the service"
    steps = {
        ExitCode.USAGE: "fix the setting or file the message names, then run the night again",
        ExitCode.SERVICE: f"check that {service} answers and that our credentials are "
        "accepted, then run the night again",
        ExitCode.LOCKED: "another fundpipe run held this organization's files: let it finish, "
        "then run the night again if it did not cover tonight",
        ExitCode.MACHINE: "free the disk or restore the damaged file the message names "
        "(fundpipe restore), then run the night again",
    }
    return steps.get(
        ExitCode(exit_code) if exit_code in set(ExitCode) else ExitCode.INTERNAL,
        "read the run's logs (an internal error: report it), then run the night again",
    )


def line_of(row: OrgRow) -> VerdictLine:
    """One organization's verdict line from its row of the night (`fundpipe.nights.OrgRow`):
    its findings (one: what, how much, by when; several: each in one sentence), or why it
    failed, on which host, and what to do next."""
    name = row.label  # its name, and its id people search the logs by
    if row.verdict is Verdict.OK:
        return VerdictLine(row.organization, name, Verdict.OK)
    if row.verdict is Verdict.NEEDS_A_PERSON:
        found = row.findings
        if len(found) == 1:
            (one,) = found
            return VerdictLine(
                row.organization,
                name,
                Verdict.NEEDS_A_PERSON,
                what=one.what,
                much=one.how_much,
                when=one.by_when,
            )
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        what = "; ".join(f.plain for f in found[:3]) + more
        return VerdictLine(row.organization, name, Verdict.NEEDS_A_PERSON, what=what)
    from fundpipe.app.prefect.oncall import in_words

    # internal words (ConnectError, FUNDPIPE_RETRY_DEADLINE_S, Idempotency-Key) say what they mean
    why = in_words(row.message) if row.message else f"the night ended {row.state.lower()}"
    return VerdictLine(
        row.organization,
        name,
        Verdict.FAILED,
        why=why,
        host=row.host,
        next_step=next_step_for(row.exit_code, row.host),
    )


def _worst_first(line: VerdictLine) -> tuple[int, str]:
    rank = {Verdict.FAILED: 0, Verdict.NEEDS_A_PERSON: 1, Verdict.OK: 2}
    return rank[line.verdict], line.name.lower()


def verdict_markdown(lines: Sequence[VerdictLine], night: date, links: dict[str, str]) -> str:
    """The first artifact of a night's run: a title counting the verdicts, then one line per
    organization by name, worst first. ``links`` (organization id → a URL that opens, or a
    path and the machine it is on as text) adds where its report is."""
    ordered = sorted(lines, key=_worst_first)
    words = {Verdict.FAILED: "failed", Verdict.NEEDS_A_PERSON: "need a person", Verdict.OK: "OK"}
    counts = [
        f"{sum(line.verdict is v for line in lines)} {said}"
        for v, said in words.items()
        if any(line.verdict is v for line in lines)
    ]
    out = [f"# Night of {night.isoformat()}: {', '.join(counts) or 'no organization ran'}", ""]
    for line in ordered:
        where = links.get(line.organization)
        report = f" ([report]({where}))" if where and _is_url(where) else ""
        verdict, _, rest = line.sentence().split(": ", 1)[1].partition(": ")
        text = f"- **{line.name}**: **{verdict}**" + (f": {rest}" if rest else "") + report
        out.append(text)
        if where and not _is_url(where):
            out.append(f"  - report: {where}")
    return "\n".join(out) + "\n"


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def verdict_table(lines: Sequence[VerdictLine]) -> list[dict[str, str]]:
    """The verdicts as a table, columns in words, worst first."""
    return [
        {
            "Organization": line.name,
            "Verdict": line.verdict.shout,
            "What": line.what or line.why,
            "How much": line.how_much,
            "By when": line.due.isoformat() if line.due else "",
            "On which host": line.host,
            "Next step": line.next_step,
        }
        for line in sorted(lines, key=_worst_first)
    ]


#: The most characters of the health page's "What" cell: Prefect draws a table artifact's
#: cells without wrapping: at 32, the six columns of an organization named like "Demo Fund
#: Administration B (org_demob)" fit a 1600-pixel screen (seen in Chromium); the whole
#: sentence and the next step are in the run's verdict (:data:`VERDICT_KEY`, markdown).
WHAT_WIDTH = 32


def short(text: str, width: int = WHAT_WIDTH) -> str:
    """``text`` on one line in at most ``width`` characters: cut at a word, ending in "…"."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:—-") + "…"


def _what(line: VerdictLine) -> str:
    """The health page's "What" of a verdict: how much and what needs a person, or why the
    night failed — short (:func:`short`)."""
    if line.verdict is Verdict.OK:
        return ""
    if line.verdict is Verdict.NEEDS_A_PERSON:
        # dollars first, never the part cut; a count of rows reads after the file's name
        # (cents, or the dollars a finding carries as words: "$4,500.00", not "3 row(s)")
        dollars = line.amount_cents is not None or line.how_much.startswith("$")
        return short(f"{line.how_much} — {line.what}" if dollars else line.what)
    return short(line.why or "see the run's logs")


#: The health page's "Last good night" of an organization that has had none.
NONE_YET = "none yet"
#: The health page's columns, in words.
HEALTH_COLUMNS = (
    "Organization",
    "Verdict",
    "Nights behind",
    "Last good night",
    "Latest night",
    "What",
)


def health_rows(
    previous: Iterable[dict[str, Any]], tonight: Sequence[VerdictLine], night: date
) -> list[dict[str, Any]]:
    """The health page after ``night``: every organization's latest verdict and its last good
    (OK) night, from the page before (``previous``, its rows as published) and tonight's lines.
    Organizations not in tonight's lines keep their row; behind ones come first.

    "Nights behind" counts the nights since the last good one (0: tonight was good; blank: none
    good yet)."""
    rows: dict[str, dict[str, Any]] = {}
    for row in previous:
        name = str(row.get("Organization") or "")
        if name:
            rows[name] = dict(row)
    for line in tonight:
        row = rows.get(line.name, {"Organization": line.name, "Last good night": ""})
        row["Latest night"] = night.isoformat()
        row["Verdict"] = line.verdict.shout
        row["What"] = _what(line)
        if line.verdict is Verdict.OK:
            row["Last good night"] = night.isoformat()
        rows[line.name] = row
    for row in rows.values():
        row["What"] = short(str(row.get("What") or ""))  # a page written before, too
        good = str(row.get("Last good night") or "")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", good):
            good = ""
            row["Last good night"] = NONE_YET
        row["Nights behind"] = (night - date.fromisoformat(good)).days if good else ""
    ordered = sorted(
        rows.values(),
        key=lambda r: (
            r["Nights behind"] == 0,
            -(r["Nights behind"] if r["Nights behind"] != "" else 10**6),
            str(r["Organization"]).lower(),
        ),
    )
    return [{column: row.get(column, "") for column in HEALTH_COLUMNS} for row in ordered]


def unique_run_name(flow: str, scheduled: datetime, run_id: str, *parts: str) -> str:
    """A run name unique within a day: ``nightly-2026-11-27-0130-1a2b3c4d`` — the flow, any
    ``parts`` (an organization), the scheduled date and time, and the run id's first 8 hex
    digits (two runs scheduled the same minute still differ)."""
    short = re.sub(r"[^0-9a-f]", "", str(run_id).lower())[:8] or "00000000"
    words = [re.sub(r"[^A-Za-z0-9_.]+", "-", p).strip("-") for p in (flow, *parts) if p]
    return "-".join([*words, f"{scheduled:%Y-%m-%d-%H%M}", short])


def publish_verdict(
    lines: Sequence[VerdictLine], night: date, links: dict[str, str] | None = None
) -> None:
    """Attach the verdict (markdown, key :data:`VERDICT_KEY`) to the current run — call it
    before any other artifact, so it is the first a person sees."""
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(
        markdown=verdict_markdown(lines, night, links or {}),
        key=VERDICT_KEY,
        description="Tonight, one line per organization: OK, needs a person, or failed",
    )


async def _latest_health() -> list[dict[str, Any]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactCollectionFilter,
        ArtifactCollectionFilterKey,
    )

    async with get_client() as client:
        found = await client.read_latest_artifacts(
            artifact_filter=ArtifactCollectionFilter(
                key=ArtifactCollectionFilterKey(any_=[HEALTH_KEY])
            )
        )
    data = found[0].data if found else None
    if isinstance(data, str):  # the server keeps a table as its JSON text
        data = json.loads(data)
    if not isinstance(data, list):
        return []
    return [row for row in data if isinstance(row, dict)]


def publish_health(lines: Sequence[VerdictLine], night: date) -> None:
    """Update the health page (table, key :data:`HEALTH_KEY`) with tonight's verdicts; the page
    before is read from the server (its latest version)."""
    import asyncio

    from prefect.artifacts import create_table_artifact

    try:
        previous = asyncio.run(_latest_health())
    except Exception:  # no page yet, or the server does not answer: tonight's rows alone
        previous = []
    create_table_artifact(
        table=health_rows(previous, lines, night),
        key=HEALTH_KEY,
        description="Which organizations are behind: each one's latest verdict and its last "
        "good night. Each one's whole verdict and next step: the run's verdict "
        f"(`{VERDICT_KEY}`).",
    )
