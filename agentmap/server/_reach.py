"""Who may reach a local server from a web page: the `Host` a request names, the `Origin` of a write, the type of
its body, and a per-launch token (the studio's). `Guard` applies them in front of every route of `agentmap serve`
and of the studio.

Two threats, both from a page open in the user's own browser:

- **DNS rebinding**: a page whose domain is made to resolve to 127.0.0.1 talks to a local server as its own
  origin, so the browser's same-origin rule protects nothing. Its requests still name the page's domain in
  `Host`: a server answers only the Hosts that name it (loopback names, the address the connection reached, the
  names the user allows).
- **Cross-site requests**: any page may send a "simple" request (a form, a `text/plain` POST, no custom header)
  without asking; the browser only hides the answer. A write must come from no page at all (no `Origin`: curl,
  the SDKs) or from the server's own page or an origin the user allows, and a body must say it is JSON.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentmap.errors import ErrorCode

__all__ = ["TOKEN_HEADER", "Reach", "Refusal", "host_matches", "hosts_for", "is_loopback", "new_token"]

TOKEN_HEADER = "X-AgentMap-Token"
"""The header carrying a server's per-launch token (the studio's)."""

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def host_matches(host: str, allowed: str) -> bool:
    """Whether the host name `host` is `allowed` (a name, or `*.domain` for the domain's subdomains; lower case)."""
    if allowed.startswith("*."):
        return host.endswith(allowed[1:])
    return host == allowed


def hosts_for(listen: str, allowed: Sequence[str]) -> tuple[str, ...]:
    """The names a server listening on `listen` answers besides its own addresses: those the user `allowed`;
    without any, every name (`*`) when it listens beyond loopback (it then has an API key, which a rebinding
    page cannot send), else none."""
    names = tuple(dict.fromkeys(_split(a)[0] for a in allowed if a.strip()))
    if names:
        return names
    return () if is_loopback(listen) else ("*",)


def new_token() -> str:
    """A fresh per-launch token (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


Refusal = tuple[int, str, str, str]
"""A request refused: its HTTP status, error code, message and hint."""


@dataclass(frozen=True)
class Reach:
    """What a request from a web page must show.

    Attributes:
        hosts: Names `Host` may carry besides this machine's (`localhost`, loopback addresses, the address the
            connection reached): a name, or `*.domain` for its subdomains; `*` switches the check off.
        origins: Origins (`https://app.example`) whose pages may write, besides the server's own (`*`: any); the
            server's `--cors-origin`.
        token: The token every request but a public path must carry (`X-AgentMap-Token`); None: none asked.
    """

    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    token: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", tuple(_split(h)[0] for h in self.hosts if h.strip()))  # `API.Example.com`

    def refusal(self, method: str, headers: dict[str, str], server: Any) -> Refusal | None:
        """Why a request may not go on, or None. `headers` are lower-cased; `server` is the ASGI scope's `server`
        (the address the connection reached)."""
        host = headers.get("host", "")
        if host and not self._host_allowed(_split(host)[0], server):
            return (
                403,
                ErrorCode.HOST_NOT_ALLOWED,
                f"this server does not answer requests for host {host!r}",
                "open it at its own address (127.0.0.1 or localhost); a name it is reached by (a proxy, a load "
                f"balancer) is allowed with --allow-host {_split(host)[0] or 'NAME'}",
            )
        if method not in _WRITES:
            return None
        origin = headers.get("origin")
        cross_site = origin is None and headers.get("sec-fetch-site") == "cross-site"
        if cross_site or (origin is not None and not self._origin_allowed(origin, host)):
            page = f"the web page at {origin}" if origin is not None else "a web page of another site"
            return (
                403,
                ErrorCode.FORBIDDEN_ORIGIN,
                f"{method} requests from {page} are refused",
                "a browser client's origin is allowed with agentmap serve --cors-origin ORIGIN; scripts and SDKs "
                "send no Origin header",
            )
        if _has_body(headers) and not _is_json(headers.get("content-type", "")):
            return (
                415,
                ErrorCode.NOT_JSON,
                f"the request body must be JSON, not Content-Type {headers.get('content-type') or '(none)'}",
                "send the body with Content-Type: application/json",
            )
        return None

    def token_refusal(self, headers: dict[str, str]) -> Refusal | None:
        """Why a request without the right token may not go on, or None (no token asked, or the right one)."""
        if self.token is None:
            return None
        given = headers.get(TOKEN_HEADER.lower(), "")
        if given and hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        return (
            401,
            ErrorCode.TOKEN_REQUIRED,
            "missing or wrong token" if given else "this server needs the token it printed with its address",
            f"open the address the command printed (it ends with token=...), or send the token as the {TOKEN_HEADER} "
            "header",
        )

    def _host_allowed(self, name: str, server: Any) -> bool:
        if "*" in self.hosts or is_loopback(name):
            return True
        if server and name == _split(str(server[0]))[0]:
            return True  # the address this connection reached (an IP literal: no page's name)
        return any(host_matches(name, allowed) for allowed in self.hosts)

    def _origin_allowed(self, origin: str, host: str) -> bool:
        page = origin.strip().rstrip("/").lower()
        if "*" in self.origins or page in {o.strip().rstrip("/").lower() for o in self.origins}:
            return True
        try:
            parts = urlsplit(page)
            scheme, name, port = parts.scheme, parts.hostname, parts.port
        except ValueError:
            return False
        if not name or scheme not in _DEFAULT_PORTS:
            return False  # `null` (a sandboxed frame, a file), or not a web page's origin
        host_name, host_port = _split(host)
        default = _DEFAULT_PORTS[scheme]
        return name.strip("[]") == host_name and (port or default) == (host_port or default)


def _split(host: str) -> tuple[str, int | None]:
    """The name (lower case, without brackets or final dot) and port of a `Host` value or an address."""
    text = host.strip().lower()
    port = ""
    if text.startswith("[") and "]" in text:
        text, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:  # name:port (an IPv6 address has more colons)
        text, _, port = text.partition(":")
    return text.rstrip("."), int(port) if port.isdigit() else None


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length", "")
    return (length.isdigit() and int(length) > 0) or "transfer-encoding" in headers


def _is_json(content_type: str) -> bool:
    kind = content_type.partition(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))
