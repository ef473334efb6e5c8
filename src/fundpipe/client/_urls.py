"""The service's URLs as settings give them: checked once, before any request is made."""

from __future__ import annotations

import ipaddress

import httpx

from fundpipe.client._errors import ConfigurationError
from fundpipe.client._redact import redact


def _is_loopback(host: str) -> bool:
    """Whether `host` names this machine (plain http stays on it)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(name: str, url: str, *, transport_injected: bool) -> httpx.URL:
    """`url` parsed; refused unless absolute http(s), and https off loopback (unless injected)."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        msg = f"{name} must be an absolute http(s) URL, got {redact(url)!r}"
        raise ConfigurationError(msg)
    if parsed.scheme == "http" and not _is_loopback(parsed.host) and not transport_injected:
        # Credentials and tokens must never cross a network in clear text.
        msg = f"{name} uses plain http to a non-loopback host ({parsed.host}); use https"
        raise ConfigurationError(msg)
    return parsed


def token_endpoint(token_url: str) -> str:
    """The full token endpoint URL: `token_url` itself, or `<token_url>/oauth/token`."""
    if token_url.rstrip("/").endswith("/oauth/token"):
        return token_url.rstrip("/")
    return token_url.rstrip("/") + "/oauth/token"
