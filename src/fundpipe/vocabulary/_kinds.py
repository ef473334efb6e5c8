"""What each kind of exception means: :class:`ExceptionKind` and the one table, :data:`KINDS`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "KINDS",
    "LOOK_INTO_IT",
    "ExceptionKind",
    "KindMeaning",
    "is_material",
    "kind_words",
    "what_to_do",
]


class ExceptionKind(StrEnum):
    """What an exception is about (the `kind` column of the `exceptions` view)."""

    SHORTFALL = "shortfall"
    MISSING = "missing"
    EXTRA = "extra"
    AMOUNT_MISMATCH = "amount_mismatch"
    STATUS_MISMATCH = "status_mismatch"
    UNEXPLAINED_BALANCE = "unexplained_balance"
    DISTRIBUTION_TIE_OUT = "distribution_tie_out"
    FILE_REJECTED = "file_rejected"
    FILE_CONFLICT = "file_conflict"
    FILE_REFUSED = "file_refused"
    AFTER_CLOSE_ADJUSTMENT = "after_close_adjustment"


#: What a person does about an exception whose kind has no advice of its own.
LOOK_INTO_IT = "look into it and decide"


@dataclass(frozen=True, slots=True)
class KindMeaning:
    """What one kind of exception means to a person and to the reconciliation."""

    #: the kind in a controller's words ("Vehicle short of funds"); Parquet keeps the kind
    words: str
    #: what to do about it, when the view's row says nothing more precise
    what_to_do: str = LOOK_INTO_IT
    #: the materiality rule: an item of this kind smaller (in absolute value) than the
    #: organization's materiality (FUNDPIPE_MATERIALITY) is listed, but opens no exception
    below_materiality_is_no_exception: bool = False
    #: a sheet file opens it: on the night it opens, the file's own finding says it
    opened_by_a_file: bool = False
    #: its alert is the one of the file that opened it (one alert, not two)
    told_by_its_file: bool = False
    #: the fixed words of each action the `exceptions` view writes for it (SQL keeps the
    #: texts, the amounts and names in them; `tests/test_vocabulary.py` reads them there)
    view_actions: tuple[str, ...] = ()


#: The one table of what each kind means.
KINDS: Mapping[ExceptionKind, KindMeaning] = {
    ExceptionKind.SHORTFALL: KindMeaning(
        "Vehicle short of funds",
        "fund the vehicle's depository account or move the payment date",
        view_actions=("fund the depository account of ",),
    ),
    ExceptionKind.MISSING: KindMeaning(
        "Sheet row not at the service",
        "re-drop the file, or find out why the service lacks the payment",
        view_actions=(
            "check the service for this payment; drop the sheet again if it never arrived",
        ),
    ),
    ExceptionKind.EXTRA: KindMeaning(
        "Service payment in no sheet",
        "find the sheet this payment came from, or cancel it at the service",
        view_actions=("find the sheet this payment came from, or cancel it at the service",),
    ),
    ExceptionKind.AMOUNT_MISMATCH: KindMeaning(
        "Amount differs (sheet vs service)",
        "compare the sheet with the service; correct whichever is wrong",
        view_actions=(
            "agree the amount with the investor team, then correct the sheet or the service",
        ),
    ),
    ExceptionKind.STATUS_MISMATCH: KindMeaning(
        "Payment failed, cancelled or not confirmed",
        "see why the payment failed or was cancelled, and pay it again if due",
        view_actions=(
            "fund the vehicle's depository account, then pay the investor again",
            "fix the investor's payment instructions and pay again",
            "confirm the cancellation was intended; remove the row from the sheet",
            "check the payment's status at the service",
        ),
    ),
    ExceptionKind.UNEXPLAINED_BALANCE: KindMeaning(
        "Reconciling item (unexplained balance)",
        "look for a movement of the account that no payment explains",
        below_materiality_is_no_exception=True,
        view_actions=(", then acknowledge this item with a note saying what it was",),
    ),
    ExceptionKind.DISTRIBUTION_TIE_OUT: KindMeaning(
        "Distribution does not tie out",
        view_actions=(
            "find the payments that differ on the Payments sheet (same distribution reference) and ",
        ),
    ),
    ExceptionKind.FILE_REJECTED: KindMeaning(
        "Sheet file rejected",
        "correct the file from its error report and drop it again",
        opened_by_a_file=True,
        told_by_its_file=True,
        view_actions=(
            "open its error report beside it in rejected/, fix the sheet and drop it in the inbox "
            "again",
        ),
    ),
    ExceptionKind.FILE_CONFLICT: KindMeaning(
        "Sheet file conflicts with the service",
        "decide which version stands: change it at the service, or drop the old one",
        opened_by_a_file=True,
        view_actions=(
            "make the change at the service (or restore the sheet), then drop the file again",
        ),
    ),
    ExceptionKind.FILE_REFUSED: KindMeaning("Sheet file refused"),
    ExceptionKind.AFTER_CLOSE_ADJUSTMENT: KindMeaning(
        "After-close adjustment (closed month changed)",
        view_actions=("record the adjustment in ",),
    ),
}


def _meaning(kind: str) -> KindMeaning | None:
    try:
        return KINDS[ExceptionKind(kind)]
    except ValueError:
        return None


def _words(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def kind_words(kind: str) -> str:
    """An exception kind in plain words (an unknown kind as it is, underscores as spaces)."""
    meaning = _meaning(kind)
    return meaning.words if meaning is not None else _words(kind)


def what_to_do(kind: str) -> str:
    """What a person does about an exception of ``kind`` when its row gives no action."""
    meaning = _meaning(kind)
    return meaning.what_to_do if meaning is not None else LOOK_INTO_IT


def is_material(kind: str, amount_cents: int | None, materiality_cents: int) -> bool:
    """The materiality rule: whether an item of ``kind`` for ``amount_cents`` is an exception
    under an organization's materiality (the `exceptions` view applies the same rule)."""
    meaning = _meaning(kind)
    if meaning is None or not meaning.below_materiality_is_no_exception:
        return True
    return abs(amount_cents or 0) >= materiality_cents
