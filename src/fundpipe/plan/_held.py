"""A roster payment instruction held for a person (part of :mod:`fundpipe.plan`).

Its own module so that the plan's model and the instruction matching both name it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeldInstruction:
    """A roster payment instruction for an entity that already has instructions, matching none
    of them by content (a new account, say). An entity's instructions are created once: it is
    not sent; a person decides. Only the account's last four digits are kept."""

    file_hash: str
    source_file: str
    sheet: str | None
    row: int | None
    entity: str
    entity_id: str
    account_last_four: str
    #: the service's records showed no content to compare with (only their ids)
    unreadable: bool = False

    @property
    def reason(self) -> str:
        """The sentence for the run summary and the file's verdict."""
        where = ", ".join(
            p
            for p in (
                self.source_file,
                f"sheet {self.sheet}" if self.sheet else "",
                f"row {self.row}" if self.row is not None else "",
            )
            if p
        )
        account = f"account ending {self.account_last_four}" if self.account_last_four else "it"
        why = (
            "the service shows no content of that entity's instructions to compare with"
            if self.unreadable
            else "matches none of the instructions it has"
        )
        return (
            f"{where}: payment instructions for {self.entity} ({self.entity_id}, {account}) "
            f"not sent: the entity already has payment instructions and this one {why}; "
            "an entity's instructions are created once — a person decides"
        )
