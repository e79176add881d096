"""Outbound HTTP to where a stranger points Jarvis (a client's metadata document URL, a downstream server's OAuth
hosts): the host is resolved once, its addresses are checked (jarvis.common.addresses), and the request goes to the
very address checked.

Checking one lookup and letting the HTTP client look the name up again to connect is DNS rebinding's opening: the
first answer public, the second 127.0.0.1 (issue 44 finding 2). `pin` is an httpx2 request hook that rewrites the
request's URL to the checked address, so the client never resolves the name itself; the Host header keeps the name,
and for https so do TLS's SNI and certificate check (httpcore's `sni_hostname`). The runtime's egress proxy connects
to the address it checked in the same way.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import socket
from dataclasses import dataclass

import httpx2

from jarvis.common.addresses import Address, is_internal, is_loopback


class Why(enum.Enum):
    UNRESOLVED = "does not resolve"
    INTERNAL = "is on an internal address"
    PUBLIC = "is on a public address where only loopback may be reached"


class Refused(Exception):
    """The host may not be reached: `why` says which rule refused it, for the caller to word."""

    def __init__(self, host: str, why: Why) -> None:
        super().__init__(f"{host} {why.value}")
        self.host = host
        self.why = why


@dataclass(frozen=True)
class Reach:
    """Where a request may go. Names in `hosts` an admin allowed wherever they lead: they are neither checked nor
    pinned (nothing is checked that a second lookup could undo)."""

    public: bool = True  # False: only loopback (plain http, which Jarvis takes from loopback only)
    loopback: bool = False  # an admin allowed loopback (tests, local clients)
    hosts: frozenset[str] = frozenset()

    def allows(self, address: Address) -> bool:
        if is_loopback(address):
            return self.loopback
        return self.public and not is_internal(address)


async def resolve(host: str, port: int) -> list[Address]:
    """Every address of `host`, once, in the resolver's order; Refused(UNRESOLVED) when it has none."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise Refused(host, Why.UNRESOLVED) from None
    # A scope (fe80::1%eth0) names an interface, not an address: link-local is internal whatever it is.
    found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not found:
        raise Refused(host, Why.UNRESOLVED)
    return list(dict.fromkeys(found))


def choose(host: str, addresses: list[Address], reach: Reach) -> Address:
    """The address to connect to. A name with any address not allowed is refused whole, as the egress proxy does: a
    name answering one public and one internal address is not connected to whichever comes first by luck."""
    for address in addresses:
        if not reach.allows(address):
            raise Refused(host, Why.INTERNAL if is_internal(address) else Why.PUBLIC)
    return addresses[0]


async def pin(request: httpx2.Request, reach: Reach) -> None:
    """An httpx2 request hook's work: send `request` to the checked address of its host, or raise Refused."""
    host = (request.url.host or "").lower()
    if host in reach.hosts:
        return
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    address = choose(host, await resolve(host, port), reach)
    if str(address) == host:
        return  # an address already: nothing to look up again
    if request.url.scheme == "https":
        request.extensions = {**request.extensions, "sni_hostname": host}
    request.url = request.url.copy_with(host=str(address))
    # The connection pool knows connections by address; a connection whose certificate was checked for one name must
    # not carry a request for another name on the same address.
    request.headers["Connection"] = "close"
