"""Counts in words: ``1 distribution``, ``3 distributions``, ``1 entity`` — never ``1
distributions`` nor ``distribution(s)`` in the text a person reads (the on-call lines, the
summaries)."""

from __future__ import annotations

__all__ = ["counted", "plural", "singular"]

#: Plurals that are not the singular plus "s".
_IRREGULAR: dict[str, str] = {}
_SINGULAR = {p: s for s, p in _IRREGULAR.items()}


def plural(noun: str) -> str:
    """The plural of ``noun`` (its last word: ``payment instruction`` → ``payment
    instructions``, ``entity`` → ``entities``)."""
    head, _, last = noun.rpartition(" ")
    consonant_y = last.endswith("y") and last[-2:-1] not in set("aeiou")
    many = _IRREGULAR.get(last) or (last[:-1] + "ies" if consonant_y else last + "s")
    return f"{head} {many}" if head else many


def singular(noun: str) -> str:
    """The singular of a plural ``noun`` (``accounts`` → ``account``, ``entities`` →
    ``entity``); a noun that is not a plural of `plural` is returned as it is."""
    head, _, last = noun.rpartition(" ")
    one = _SINGULAR.get(last)
    if one is None:
        if last.endswith("ies"):
            one = last[:-3] + "y"
        elif last.endswith("s") and not last.endswith("ss"):
            one = last[:-1]
        else:
            one = last
    return f"{head} {one}" if head else one


def counted(n: int | str, noun: str) -> str:
    """``n`` and ``noun`` (singular) agreeing: ``1 file``, ``0 files``, ``3 files``."""
    return f"{n} {noun if str(n) == '1' else plural(noun)}"
