"""Local accounts: email, name and an argon2id hash, in ``<data_dir>/desk/accounts.json``
(readable by its owner alone); failed sign-ins throttled per account and per address; the
one-time link for the first admin.

There is no default password: an account exists only when someone made it
(`fundpipe desk user add`, or the first-admin link the desk prints on its first start).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from fundpipe.desk._config import HASHER, Clock
from fundpipe.errors import InputError

__all__ = ["Account", "Accounts", "Throttle", "check_email"]

#: A password shorter than this is refused.
MIN_PASSWORD = 12


def check_email(email: str) -> str:
    """``email`` trimmed and lower-cased; one without a single ``@`` is an InputError."""
    cleaned = email.strip().lower()
    if cleaned.count("@") != 1 or cleaned.startswith("@") or cleaned.endswith("@"):
        raise InputError(f"{email!r} is not an email address")
    return cleaned


@dataclass(frozen=True, slots=True)
class Account:
    """A person who signs in with a password."""

    email: str
    name: str


class Accounts:
    """The accounts file: add, check a password, and the first-admin link."""

    def __init__(self, path: Path, hasher: PasswordHasher = HASHER) -> None:
        self.path = path
        self._hasher = hasher
        self._dummy = hasher.hash(secrets.token_urlsafe(16))
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, str]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise InputError(f"{self.path}: cannot read the desk's accounts: {error}") from None
        return {str(k): dict(v) for k, v in data.get("accounts", {}).items()}

    def _write(self, accounts: dict[str, dict[str, str]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"accounts": accounts}, fh, indent=2)
        temporary.replace(self.path)

    def any(self) -> bool:
        """Whether any account exists."""
        return bool(self._read())

    def add(self, email: str, name: str, password: str) -> Account:
        """Make (or replace the password and name of) the account ``email``."""
        email = check_email(email)
        if not name.strip():
            raise InputError("an account needs the person's name (--name)")
        if len(password) < MIN_PASSWORD:
            raise InputError(f"a password needs at least {MIN_PASSWORD} characters")
        with self._lock:
            accounts = self._read()
            accounts[email] = {"name": name.strip(), "hash": self._hasher.hash(password)}
            self._write(accounts)
        return Account(email, name.strip())

    def check(self, email: str, password: str) -> Account | None:
        """The account when ``password`` is its password, else None (the same time is spent
        for an unknown email, so the answer does not tell which accounts exist)."""
        try:
            email = check_email(email)
        except InputError:
            return None
        found = self._read().get(email)
        stored = found["hash"] if found else self._dummy
        try:
            self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return None
        return Account(email, found["name"]) if found else None

    # ------------------------------------------------------------- the first admin's link

    @property
    def _invite_file(self) -> Path:
        return self.path.with_name("first-admin.sha256")

    def first_admin_token(self) -> str | None:
        """A new one-time token for the first admin's link when no account exists (its hash
        alone is kept; a new start makes a new one), else None."""
        if self.any():
            return None
        token = secrets.token_urlsafe(32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._invite_file.write_text(_digest(token), encoding="utf-8")
        self._invite_file.chmod(0o600)
        return token

    def redeem(self, token: str, email: str, name: str, password: str) -> Account | None:
        """Make the first admin's account with the one-time ``token``; None when the token is
        not the one printed (or was used, or an account exists already)."""
        with self._lock:
            if not self.token_valid(token):
                return None
            self._invite_file.unlink()
        return self.add(email, name, password)

    def token_valid(self, token: str) -> bool:
        """Whether ``token`` is the unused first-admin token (and still no account exists)."""
        if self.any() or not self._invite_file.exists():
            return False
        kept = self._invite_file.read_text(encoding="utf-8").strip()
        return secrets.compare_digest(kept, _digest(token))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Throttle:
    """Failed sign-ins per account and per address: past ``limit`` failures within
    ``window``, that account (or address) is refused until the oldest failure leaves the
    window, whatever the password."""

    def __init__(self, clock: Clock, *, limit: int = 5, window: timedelta = timedelta(minutes=15)):
        self._clock = clock
        self.limit = limit
        self.window = window
        self._failures: dict[str, deque[datetime]] = defaultdict(deque)
        self._lock = threading.Lock()

    def _recent(self, key: str) -> deque[datetime]:
        now = self._clock()
        kept = self._failures[key]
        while kept and now - kept[0] >= self.window:
            kept.popleft()
        return kept

    def blocked(self, email: str, address: str) -> bool:
        """Whether a sign-in for ``email`` from ``address`` is refused without looking."""
        with self._lock:
            keys = (f"account:{email.strip().lower()}", f"address:{address}")
            return any(len(self._recent(k)) >= self.limit for k in keys)

    def failed(self, email: str, address: str) -> None:
        """Count one failed sign-in against the account and the address."""
        with self._lock:
            now = self._clock()
            for key in (f"account:{email.strip().lower()}", f"address:{address}"):
                self._recent(key).append(now)
