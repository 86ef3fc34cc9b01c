"""Which Host (and Origin) a request may name: the defence against DNS rebinding.

A page on another site can make a browser send requests to a server on this
machine by pointing its own name at 127.0.0.1; the requests then carry that
name as Host (and the page's Origin). Without keys (``recap serve --no-auth``)
only loopback names are answered; with keys, RECAP_API_ALLOWED_HOSTS (or
``--allowed-hosts``) narrows the names when set.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from recap.errors import ConfigError

# The names of this machine: what --no-auth answers unless told otherwise.
LOOPBACK_NAMES = ("localhost", "*.localhost", "127.0.0.1", "::1")


def parse_hosts(raw: str) -> tuple[str, ...]:
    """The names of RECAP_API_ALLOWED_HOSTS (comma-separated; ``*.example.com``
    allows its subdomains); ConfigError names a malformed one."""
    names = []
    for item in (n.strip().lower().rstrip(".") for n in raw.split(",")):
        if not item:
            continue
        bare = item.removeprefix("*.").strip("[]")
        if not bare or any(c in bare for c in "/@?#* ") or (":" in bare and not _is_ip(bare)):
            raise ConfigError(f"RECAP_API_ALLOWED_HOSTS: {item!r} is not a host name "
                              "(a name, an address or *.domain; no port, no scheme)")
        names.append(item if item.startswith("*.") else bare)
    return tuple(names)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_name(header: str) -> str:
    """The name of a Host header, without its port or IPv6 brackets, lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    if header.count(":") > 1:  # an IPv6 address without brackets (and so no port)
        return header
    name, _, port = header.rpartition(":")
    return (name if name and port.isdigit() else header).rstrip(".")


def allowed(name: str, names: tuple[str, ...]) -> bool:
    """Whether ``name`` (from :func:`host_name`) is one of ``names``."""
    return any(name == n or (n.startswith("*.") and name.endswith(n[1:])) for n in names)


def origin_allowed(origin: str, names: tuple[str, ...]) -> bool:
    """Whether a request's Origin header names one of ``names`` (``null``, or one that
    is not a URL, does not)."""
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(name) and allowed(
        (name or "").rstrip("."), names)
