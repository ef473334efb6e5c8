"""What the person on call sees and hears of a night: its log lines, events and report links.

Pure functions turn the steps' typed results (`FileOutcome`, `IngestResult`, `SyncResult`,
`ReconcileResult`, `fundpipe.night.NightResult` and its `fundpipe.vocabulary.ExceptionRecord`s) into plain lines (one per
file, per step, per exception, and where the reports are) and into the payloads of the Prefect
events the alerts (`fundpipe.app.prefect.alerts`) react to:

| event | resource | when |
|---|---|---|
| ``fundpipe.file.rejected`` | ``fundpipe.file.<name>`` | a file was rejected |
| ``fundpipe.exception.opened`` | ``fundpipe.exception.<id>`` | an exception opened tonight |
| ``fundpipe.night.completed`` | ``fundpipe.night.<organization>`` | a nightly run finished its steps |
| ``fundpipe.night.failed`` | ``fundpipe.night.<organization>`` | an organization's night failed |

The two ``fundpipe.night.*`` events carry the related resource :data:`NIGHT_WINDOW`: the
missed-night automation (`fundpipe.app.prefect.alerts`) watches them beside the nightly
deployment's own run events, and a trigger's filter applies to both. An exception's resource
says who alerts about it (``fundpipe.exception.alert``): its own alert, or its file's — a
rejected file is one alert, not one for the file and one for the exception it opens.

Every line and payload goes through :func:`plain`: secrets redacted, long digit runs (account
numbers) cut to their last four. Payloads carry the organization, counts, names and ids —
never a secret, a row's values or a traceback.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.cents import format_cents
from fundpipe.vocabulary import KINDS, kind_words
from fundpipe.words import counted, singular

if TYPE_CHECKING:
    from fundpipe.nights import OrgNight
    from fundpipe.reconcile import ReconcileResult
    from fundpipe.submit import FileOutcome, IngestResult
    from fundpipe.sync import SyncResult
    from fundpipe.vocabulary import ExceptionRecord

FILE_REJECTED = "fundpipe.file.rejected"
EXCEPTION_OPENED = "fundpipe.exception.opened"
NIGHT_COMPLETED = "fundpipe.night.completed"
NIGHT_FAILED = "fundpipe.night.failed"
#: A nightly run picked up after its deadline (its missed-night alert was sent): the window its
#: late start opens is closed by this at once — one incident, not a second "missed" one.
NIGHT_STARTED_LATE = "fundpipe.night.started-late"
#: That night (or one still running at its deadline) completed after the deadline: the one
#: message that closes the missed-night incident.
NIGHT_COMPLETED_LATE = "fundpipe.night.completed-late"
#: Every fundpipe automation's name (and alert subject) starts with this.
PREFIX = "fundpipe: "
#: The deployment whose scheduled run opens each night's window (the missed-night alert).
NIGHTLY = "nightly"
#: The related resource of every ``fundpipe.night.*`` event: "this belongs to the nightly's
#: window", with the role and name the missed-night trigger's filter accepts beside the nightly
#: deployment's own (role ``deployment``, name ``nightly``).
NIGHT_WINDOW = {
    "prefect.resource.id": "fundpipe.night-window",
    "prefect.resource.role": "night-window",
    "prefect.resource.name": NIGHTLY,
}
#: The link to the run an alert is about, when the server knows its UI's address.
RUN_LINK = "{% if flow_run %}\nOpen the run: {{ flow_run|ui_url }}{% endif %}"

#: Exception kinds whose alert is the one of the file that opened them.
TOLD_BY_FILE = frozenset(str(k) for k, meaning in KINDS.items() if meaning.told_by_its_file)

#: A run of 9+ digits standing alone: an account number, whatever column it came from.
_LONG_NUMBER = re.compile(r"(?<![\w.,$])\d{5,}(\d{4})(?![\w])")

Emit = Callable[[str, dict[str, str], dict[str, Any]], object]


#: Words from inside fundpipe and its libraries, and what they mean to a person: a line that
#: names one says what it means beside it (the word stays: it is what a search finds).
GLOSSARY = {
    "ConnectError": "the service could not be reached",
    "ConnectTimeout": "the service took too long to accept a connection",
    "ReadTimeout": "the service took too long to answer",
    "Idempotency-Key": "the key that lets a request be sent again without acting twice",
    "FUNDPIPE_RETRY_DEADLINE_S": "how long fundpipe keeps retrying the service",
}
_GLOSSED = re.compile(r"\b(" + "|".join(re.escape(w) for w in GLOSSARY) + r")\b(?! \()")


def in_words(text: str) -> str:
    """``text`` with each internal word followed by what it means, once
    (``ConnectError`` → ``ConnectError (the service could not be reached)``); an exception kind
    (``file_rejected``) becomes its plain words (``Sheet file rejected``)."""
    seen = {word for word, meaning in GLOSSARY.items() if f"{word} ({meaning})" in text}

    def gloss(match: re.Match[str]) -> str:
        word = match.group(1)
        if word in seen:
            return word
        seen.add(word)
        return f"{word} ({GLOSSARY[word]})"

    text = _GLOSSED.sub(gloss, text)
    kinds = [str(k) for k in KINDS if "_" in k]
    return re.sub(r"\b(" + "|".join(kinds) + r")\b", lambda m: kind_words(m.group(1)), text)


def plain(text: str, secrets: Iterable[str | None] = (), *, words: bool = True) -> str:
    """``text`` safe for a log line or an event, in words a person reads: secrets redacted,
    long numbers masked (the one masking function, `fundpipe.sensitive.mask`), internal words explained (:func:`in_words`; ``words=False``: not, for
    a value a machine matches, such as a resource label or an exception's kind)."""
    from fundpipe.client import redact
    from fundpipe.sensitive import mask

    masked = str(redact(_LONG_NUMBER.sub(lambda m: mask(m.group(0)), str(text)), list(secrets)))
    return in_words(masked) if words else masked


def report_url(base: str | None, path: str | Path | None, reports: Path) -> str | None:
    """The URL of a report under ``FUNDPIPE_REPORTS_URL``, the URL the folder ``reports``
    (``Settings.reports_folder``) is published under."""
    if not base or not path:
        return None
    try:
        relative = Path(path).resolve().relative_to(reports.resolve())
    except ValueError:
        return None
    return f"{base.rstrip('/')}/{relative.as_posix()}"


def error_report_of(file: FileOutcome) -> str | None:
    """Where a rejected file's error report is: the CSV ingest wrote (``<name>.errors.csv``
    beside the moved file), for the run log, the events and the exceptions table."""
    return next((str(p) for p in file.error_reports if p.suffix == ".csv"), None)


def error_workbook_of(file: FileOutcome) -> str | None:
    """The error report a person opens for a rejected file: its workbook
    (``<name>.errors.xlsx``), else its CSV."""
    xlsx = next((str(p) for p in file.error_reports if p.suffix == ".xlsx"), None)
    return xlsx or error_report_of(file)


def file_line(file: FileOutcome) -> str:
    """One file's outcome: name, rows, distributions and dollars (a roster: its entities,
    contacts and payment instructions), or why and where to look; a file dropped again
    unchanged names the file it repeats, with no counts (nothing was read or sent)."""
    name = Path(file.source_file).name
    state = file.state
    if state in {"rejected", "conflict", "refused"}:
        reason = file.message or "see its error report"
        report = error_report_of(file) if state == "rejected" else None
        where = f"; error report: {report}" if report else ""
        return f"file {name}: {state}, {counted(file.rows, 'row')} — {reason}{where}"
    if state == "duplicate":  # the message names the earlier file and when it was processed
        return f"file {name}: dropped again — {file.message or 'already submitted, nothing sent'}"
    parts = [f"file {name}: {state}"]
    roster = file.roster
    if roster:  # what a roster holds, not distribution totals it has none of
        parts += [
            counted(int(roster.get("entities", 0)), "entity"),
            counted(int(roster.get("contacts", 0)), "contact"),
            counted(int(roster.get("payment_instructions", 0)), "payment instruction"),
        ]
    if not roster or file.distributions:
        parts += [
            counted(file.rows, "row"),
            counted(file.distributions, "distribution"),
            format_cents(file.total_cents),
        ]
    return ", ".join(parts)


def ingest_line(ingested: IngestResult) -> str:
    """The ingest step in one line: files by outcome, what was submitted."""
    files = ingested.files
    states = Counter(f.state for f in files)
    created = ingested.by_state("processed")
    by_state = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    return (
        f"ingest: {counted(len(files), 'file')} seen"
        + (f" ({by_state})" if by_state else "")
        + f"; {counted(sum(f.distributions for f in created), 'distribution')} submitted, "
        f"{format_cents(sum(f.total_cents for f in created))}"
    )


def left_alone_lines(ingested: IngestResult) -> list[str]:
    """One line per inbox entry fundpipe does not read, with its reason."""
    return [f"inbox: {entry.sentence}" for entry in ingested.left_alone]


#: The service's object names as a person says them in the sync line.
SYNC_WORDS = {
    "financial_accounts": "accounts",
    "distribution_payments": "payments",
    "distribution_notifications": "payment notices",
}


def sync_line(synced: SyncResult) -> str:
    """The sync step in one line: how many of each object were pulled."""
    counts = synced.counts
    said = (counted(n, singular(SYNC_WORDS.get(k, k.replace("_", " ")))) for k, n in counts.items())
    return "sync: " + (", ".join(said) or "nothing pulled")


def reconcile_line(reconciled: ReconcileResult) -> str:
    """The reconcile step in one line: exceptions by kind, and the funding position."""
    summary = reconciled.summary
    by_kind = ", ".join(f"{n} {kind_words(k)}" for k, n in summary.exception_counts.items())
    short = "no vehicle short of funds"  # never "short of funds by $0.00"
    if summary.shortfall_cents:
        short = f"vehicles short of funds by {format_cents(summary.shortfall_cents)} in all"
    return (
        f"reconcile: {counted(summary.exceptions, 'exception')}"
        + (f" ({by_kind})" if by_kind else "")
        + f"; depository available {format_cents(summary.available_cents)}, {short}"
    )


def exception_line(exception: ExceptionRecord) -> str:
    """One exception with its id: opened tonight, still open (aged), resolved or acknowledged."""
    state: str = exception.state
    if state == "open":
        age = exception.age_days
        state = "opened" if exception.opened_tonight else f"still open ({counted(age, 'day')})"
    amount = f" — {exception.amount}" if exception.amount else ""  # never a blank
    return f"exception {exception.id} {state}: {exception.what}{amount}; " + (
        f"to do: {exception.what_to_do}"
    )


def opened(exceptions: Iterable[ExceptionRecord]) -> list[ExceptionRecord]:
    """The exceptions that opened tonight (and are open)."""
    return [e for e in exceptions if e.opened]


def reports_line(out_dir: Path | str | None, url: str | None, host: str | None = None) -> str:
    """Where tonight's reports are — on which machine — and where they were published (a URL
    that opens, or the shared location), when they were."""
    line = f"reports: {out_dir}" + (f" on host {host}" if host else "")
    return f"{line} (published at {url})" if url else line


def restored_lines(night: OrgNight) -> list[str]:
    """What the night's start restored from the record before anything ran, in one line
    (none when it restored nothing)."""
    return [night.restored] if night.restored else []


def rejected_event(
    file: FileOutcome, organization: str, report: str | None = None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The ``fundpipe.file.rejected`` event of one rejected file; ``report``: where its error
    report is for a person (a link that opens, or its path on a machine: `links.Where.text`),
    else its CSV's path."""
    name = Path(file.source_file).name
    return (
        FILE_REJECTED,
        {"prefect.resource.id": f"fundpipe.file.{name}", "prefect.resource.name": name},
        {
            "organization": organization,
            "file": name,
            "rows": file.rows,
            "reason": file.message or "see its error report",
            "error_report": report or error_report_of(file),
        },
    )


def opened_event(
    exception: ExceptionRecord, organization: str, report: str | None = None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The ``fundpipe.exception.opened`` event of one newly opened exception; ``report``: where
    the night's workbook is for a person (a link that opens, or its path on a machine)."""
    return (
        EXCEPTION_OPENED,
        {
            "prefect.resource.id": f"fundpipe.exception.{exception.id}",
            "prefect.resource.name": exception.id,
            "fundpipe.exception.alert": "file" if exception.kind in TOLD_BY_FILE else "own",
        },
        {
            "organization": organization,
            "id": exception.id,
            "kind": exception.kind,
            "what": exception.what,
            "amount": exception.amount,
            "what_to_do": exception.what_to_do,
            **({"report": report} if report else {}),
        },
    )


def night_event(night: OrgNight, organization: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The ``fundpipe.night.completed`` event: the night's counts and the open exceptions' ids
    (read from the typed night, never from a dict's string keys)."""
    still_open = night.open_exceptions
    processed = night.in_state("processed")
    return (
        NIGHT_COMPLETED,
        {
            "prefect.resource.id": f"fundpipe.night.{organization}",
            "prefect.resource.name": f"fundpipe night of {organization}",
        },
        {
            "organization": organization,
            "as_of": night.as_of.isoformat(),
            "counts": {
                "files_seen": len(night.files),
                "files_accepted": len(processed),
                "files_rejected": len(night.rejected),
                "distributions_submitted": sum(f.distributions for f in processed),
                "exceptions_open": len(still_open),
                "exceptions_opened": len(night.opened_exceptions),
            },
            "rejected_files": [Path(f.source_file).name for f in night.rejected],
            "exception_ids": [e.id for e in still_open],
            "restored": night.restored or None,
        },
    )


def failed_event(
    organization: str, name: str, why: str, host: str | None, what_to_do: str
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The ``fundpipe.night.failed`` event of one organization whose night failed: its name, why
    in plain words, the service host it could not reach (if that was why), and what to do."""
    return (
        NIGHT_FAILED,
        {
            "prefect.resource.id": f"fundpipe.night.{organization}",
            "prefect.resource.name": f"fundpipe night of {name}",
        },
        {
            "organization": organization,
            "name": name,
            "why": why,
            "host": host or "",
            "what_to_do": what_to_do,
        },
    )


def late_event(
    event_name: str, organization: str, name: str, deadline: str, verdict: str = ""
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A night's :data:`NIGHT_STARTED_LATE` or :data:`NIGHT_COMPLETED_LATE` event for one
    organization: its name, the deadline it missed (``06:00 America/New_York``), and (completed)
    its verdict in words."""
    return (
        event_name,
        {
            "prefect.resource.id": f"fundpipe.night.{organization}",
            "prefect.resource.name": f"fundpipe night of {name}",
        },
        {"organization": organization, "name": name, "deadline": deadline, "verdict": verdict},
    )


#: The events of a night that the missed-night window watches (see :data:`NIGHT_WINDOW`).
_IN_THE_WINDOW = frozenset({NIGHT_COMPLETED, NIGHT_FAILED, NIGHT_STARTED_LATE})


def related_of(event_name: str) -> list[dict[str, str]]:
    """The related resources an event is emitted with (:data:`NIGHT_WINDOW` for a night's)."""
    return [dict(NIGHT_WINDOW)] if event_name in _IN_THE_WINDOW else []


def safe_event(
    event: tuple[str, dict[str, str], dict[str, Any]], secrets: Iterable[str | None]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """An event whose text values went through :func:`plain`."""
    known = list(secrets)

    def scrub(value: Any, words: bool = True) -> Any:
        if isinstance(value, str):
            return plain(value, known, words=words)
        if isinstance(value, dict):
            return {k: scrub(v, words and k != "kind") for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v, words) for v in value]
        return value

    name, resource, payload = event
    labels = {k: plain(v, known, words=False) for k, v in resource.items()}
    return name, labels, scrub(payload)


def night_sentence(what: str, files: Sequence[FileOutcome], exceptions: int | None = None) -> str:
    """One plain line for the state message: files, distributions, and what needs a person
    (``exceptions``: how many to review, when the step reconciled); each count agrees with its
    noun (``1 file``, ``2 files``)."""
    states = Counter(f.state for f in files)
    parts = [f"{counted(len(files), 'file')} seen"] if files or what != "reconcile" else []
    parts += [f"{n} {state}" for state, n in sorted(states.items())]
    created = sum(f.distributions for f in files if f.state == "processed")
    if created:
        parts.append(f"{counted(created, 'distribution')} submitted")
    if exceptions is not None:
        parts.append(f"{counted(exceptions, 'exception')} to review")
    rejected = [f for f in files if f.state in {"rejected", "conflict", "refused"}]
    needs = "; ".join(
        f"{Path(f.source_file).name} {f.state}: {f.message or 'see its error report'}"
        for f in rejected[:3]
    )
    line = f"{what}: " + (", ".join(parts) or "nothing to do")
    return f"{line} — needs a person: {needs}" if needs else line
