"""The address browsers load ``xdptui serve``'s page and assets from.

textual-serve writes ``http://HOST:PORT`` into the page for its scripts and its websocket. Bound
to a wildcard (``--host 0.0.0.0`` or ``::``, as a classroom server is), that would send every
browser to 0.0.0.0 -- itself. Without ``--public-url`` the server takes this machine's first
non-loopback address instead, or refuses when it has none.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

WILDCARDS = ("0.0.0.0", "::", "", "*", "[::]")
# A documentation address (RFC 5737): connecting a UDP socket to it sends nothing, but makes the
# kernel choose the source address of the default route.
_PROBE = ("192.0.2.1", 9)


class NoPublicUrl(Exception):
    """A wildcard bind on a machine with no address another host could use."""


def is_wildcard(host: str) -> bool:
    return host.strip() in WILDCARDS


def _usable(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast)


def host_addresses() -> list[str]:
    """This machine's addresses another host could reach, best first: the default route's
    source address, then those its host name resolves to."""
    found: list[str] = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(_PROBE)
            found.append(str(s.getsockname()[0]))
    except OSError:
        pass
    try:
        for *_, sockaddr in socket.getaddrinfo(socket.gethostname(), None):
            found.append(str(sockaddr[0]))
    except (OSError, UnicodeError):
        pass
    return [a for i, a in enumerate(found) if _usable(a) and a not in found[:i]]


def public_url(
    host: str, port: int, addresses: Callable[[], list[str]] | None = None
) -> str | None:
    """The URL to give textual-serve: None (its own ``http://HOST:PORT``) for a named host;
    for a wildcard, ``http://ADDRESS:PORT`` with this machine's first usable address.
    Raises :class:`NoPublicUrl` when there is none."""
    if not is_wildcard(host):
        return None
    usable = (addresses or host_addresses)()
    if not usable:
        raise NoPublicUrl(
            f"listening on {host or '*'} needs the address browsers will use: this machine has "
            "no non-loopback address to put in the page; give it with --public-url "
            f"http://NAME:{port}"
        )
    address = usable[0]
    shown = f"[{address}]" if ":" in address else address
    return f"http://{shown}:{port}"
