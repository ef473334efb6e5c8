"""The desk's settings (`FUNDPIPE_DESK_*`, one typed object built at the entry point) and where
its own files live: ``<data_dir>/desk/`` — the accounts, the cookie-signing key and the desk's
log, never in the repository."""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from argon2 import PasswordHasher
from argon2.profiles import RFC_9106_LOW_MEMORY
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from fundpipe.config import Settings

__all__ = [
    "HASHER",
    "Clock",
    "Desk",
    "DeskSettings",
    "ServiceOf",
    "is_loopback",
    "system_clock",
]

#: Where anything that depends on time asks for it (tests pass their own).
Clock = Callable[[], datetime]
#: (fundpipe's settings, an organization's id) → a context giving that organization's
#: settings pointed at a running service
ServiceOf = Callable[[Settings, str], AbstractContextManager[Settings]]


#: argon2id with RFC 9106's low-memory parameters (64 MiB, 3 passes): the desk's hasher.
HASHER = PasswordHasher.from_parameters(RFC_9106_LOW_MEMORY)


def system_clock() -> datetime:
    """Now, timezone-aware (UTC)."""
    return datetime.now(UTC)


class DeskSettings(BaseSettings):
    """The desk's configuration, from `FUNDPIPE_DESK_*` (the entry point builds it once)."""

    model_config = SettingsConfigDict(env_prefix="FUNDPIPE_DESK_", extra="ignore")

    #: The members file (TOML, `[[member]]`); default `<data_dir>/desk/members.toml`.
    members: Path | None = None
    #: The address people use (`https://desk.example.com`), for the OpenID Connect redirect.
    url: str | None = None
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    #: A session ends after this many minutes without a request, and after `absolute_hours`.
    idle_minutes: int = 30
    absolute_hours: int = 12

    @property
    def oidc_configured(self) -> bool:
        """Whether sign-in through the identity provider is configured (issuer and client)."""
        return bool(self.oidc_issuer and self.oidc_client_id)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost`` (cookies need no Secure there)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Desk:
    """What the app is built from: fundpipe's settings (the data folder, the organizations),
    the desk's own, the host it listens on (Secure cookies off loopback) and the clock."""

    settings: Settings
    desk: DeskSettings
    host: str = "127.0.0.1"
    clock: Clock = system_clock
    #: how passwords are hashed (argon2id; tests pass cheaper parameters of it)
    hasher: PasswordHasher = field(default_factory=lambda: HASHER, repr=False)
    #: the running service for one organization's settings (the entry point passes
    #: `fundpipe.app.embedded.one_org`'s: the configured service, else the embedded sandbox),
    #: read by the upload's online checks; None: the upload checks offline and says so
    service: ServiceOf | None = field(default=None, repr=False)

    @property
    def folder(self) -> Path:
        """The desk's own folder: ``<data_dir>/desk``."""
        return self.settings.local.data_dir / "desk"

    @property
    def members_file(self) -> Path:
        """The members file: `FUNDPIPE_DESK_MEMBERS`, else ``<data_dir>/desk/members.toml``."""
        return self.desk.members or self.folder / "members.toml"

    @property
    def secure_cookies(self) -> bool:
        """Cookies are Secure whenever the desk is not on loopback (or its URL is https)."""
        return not is_loopback(self.host) or (self.desk.url or "").startswith("https://")

    def signing_key(self) -> bytes:
        """The key that signs session cookies: ``<desk folder>/cookie.key``, made on first use
        (readable by its owner alone), so a restart keeps people signed in."""
        path = self.folder / "cookie.key"
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(48), encoding="utf-8")
        return path.read_text(encoding="utf-8").strip().encode()
