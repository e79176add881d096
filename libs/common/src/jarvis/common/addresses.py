"""Which IP addresses are internal: what Jarvis refuses to reach for someone else (the egress proxy, a client's
metadata document URL, a downstream server's OAuth hosts), unless an admin allowed it; which are loopback; and which
are link-local or a cloud metadata service, where Jarvis never connects a registered server.

Every such decision in Jarvis is made here, from the tables below, never from `ipaddress`'s is_global, is_private,
is_loopback and the like: those carry the copy of IANA's registries of the interpreter at hand, and it changes
between CPython patch releases (issue 51: Debian's 3.11.2 calls 6to4's 2002::/16 private, pyenv's 3.11.7 global;
3.11.7 calls ORCHIDv2 private, 3.13 global; 3.13 calls ::ffff:127.0.0.1 loopback, 3.11 does not). Of `ipaddress`
only parsing and `in` (integer comparisons) are used.

The tables hold every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2025-2026,
https://www.iana.org/assignments/iana-ipv4-special-registry and .../iana-ipv6-special-registry), with the
registry's "Globally Reachable" flag, and the few ranges beyond them Jarvis decides on (multicast, site-local,
IPv4-compatible). An address takes the verdict of the most specific range holding it; an address in none is
ordinary unicast, public.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Verdict(enum.Enum):
    INTERNAL = "internal"  # refused unless an admin allowed it
    PUBLIC = "public"
    EMBEDDED = "embedded"  # an IPv6 way to reach an IPv4 address: that IPv4 address decides


@dataclass(frozen=True)
class Range:
    network: Network
    name: str
    # The registry's "Globally Reachable": None where it says N/A, where a terminated entry leaves it blank, and
    # for the ranges beyond the registries.
    globally_reachable: bool | None
    verdict: Verdict
    # Why the verdict is not the one the flag gives (True: public, False: internal), or how it was decided
    # where there is no flag.
    why: str = ""
    # For EMBEDDED: how many bits above the address's low end the IPv4 address sits.
    ipv4_shift: int = 0


_INTERNAL, _PUBLIC, _EMBEDDED = Verdict.INTERNAL, Verdict.PUBLIC, Verdict.EMBEDDED


def _v4(net: str, name: str, reachable: bool | None, verdict: Verdict, why: str = "") -> Range:
    return Range(ipaddress.IPv4Network(net), name, reachable, verdict, why)


def _v6(net: str, name: str, reachable: bool | None, verdict: Verdict, why: str = "", ipv4_shift: int = 0) -> Range:
    return Range(ipaddress.IPv6Network(net), name, reachable, verdict, why, ipv4_shift)


# The IANA IPv4 Special-Purpose Address Registry, in its order (its one row of two /32s is two rows here).
IPV4_SPECIAL_PURPOSE: tuple[Range, ...] = (
    _v4("0.0.0.0/8", '"This network"', False, _INTERNAL),
    _v4("0.0.0.0/32", '"This host on this network"', False, _INTERNAL),
    _v4("10.0.0.0/8", "Private-Use", False, _INTERNAL),
    _v4("100.64.0.0/10", "Shared Address Space", False, _INTERNAL),
    _v4("127.0.0.0/8", "Loopback", False, _INTERNAL),
    _v4("169.254.0.0/16", "Link Local", False, _INTERNAL),  # cloud metadata services: 169.254.169.254
    _v4("172.16.0.0/12", "Private-Use", False, _INTERNAL),
    _v4("192.0.0.0/24", "IETF Protocol Assignments", False, _INTERNAL),
    _v4("192.0.0.0/29", "IPv4 Service Continuity Prefix", False, _INTERNAL),
    _v4("192.0.0.8/32", "IPv4 dummy address", False, _INTERNAL),
    _v4("192.0.0.9/32", "Port Control Protocol Anycast", True, _PUBLIC),
    _v4("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", True, _PUBLIC),
    _v4("192.0.0.170/32", "NAT64/DNS64 Discovery", False, _INTERNAL),
    _v4("192.0.0.171/32", "NAT64/DNS64 Discovery", False, _INTERNAL),
    _v4("192.0.2.0/24", "Documentation (TEST-NET-1)", False, _INTERNAL),
    _v4("192.31.196.0/24", "AS112-v4", True, _PUBLIC),
    _v4("192.52.193.0/24", "AMT", True, _PUBLIC),
    _v4(
        "192.88.99.0/24",
        "Deprecated (6to4 Relay Anycast)",
        None,
        _INTERNAL,
        "terminated in 2015 (RFC 7526), so the registry leaves the flag blank; what may still answer there is some "
        "network's 6to4 relay, its operator's equipment and no public service",
    ),
    _v4("192.88.99.2/32", "6a44-relay anycast address", False, _INTERNAL),
    _v4("192.168.0.0/16", "Private-Use", False, _INTERNAL),
    _v4("192.175.48.0/24", "Direct Delegation AS112 Service", True, _PUBLIC),
    _v4("198.18.0.0/15", "Benchmarking", False, _INTERNAL),
    _v4("198.51.100.0/24", "Documentation (TEST-NET-2)", False, _INTERNAL),
    _v4("203.0.113.0/24", "Documentation (TEST-NET-3)", False, _INTERNAL),
    _v4("240.0.0.0/4", "Reserved", False, _INTERNAL),
    _v4("255.255.255.255/32", "Limited Broadcast", False, _INTERNAL),
)

# The IANA IPv6 Special-Purpose Address Registry, in its order.
IPV6_SPECIAL_PURPOSE: tuple[Range, ...] = (
    _v6("::1/128", "Loopback Address", False, _INTERNAL),
    _v6("::/128", "Unspecified Address", False, _INTERNAL),
    _v6(
        "::ffff:0:0/96",
        "IPv4-mapped Address",
        False,
        _EMBEDDED,
        "a socket given ::ffff:a.b.c.d connects to the IPv4 address a.b.c.d, so that address decides",
    ),
    _v6(
        "64:ff9b::/96",
        "IPv4-IPv6 Translat.",
        True,
        _EMBEDDED,
        "a NAT64 translator forwards to the IPv4 address in the low 32 bits (RFC 6052), so that address decides: "
        "64:ff9b::7f00:1 is the translator's 127.0.0.1",
    ),
    # The local-use prefix (RFC 8215) is a network's own translator, refused whole as the registry says (where the
    # IPv4 address sits in it depends on the longer prefix the network chose).
    _v6("64:ff9b:1::/48", "IPv4-IPv6 Translat.", False, _INTERNAL),
    _v6("100::/64", "Discard-Only Address Block", False, _INTERNAL),
    _v6("100:0:0:1::/64", "Dummy IPv6 Prefix", False, _INTERNAL),
    _v6("2001::/23", "IETF Protocol Assignments", False, _INTERNAL),
    _v6(
        "2001::/32",
        "TEREDO",
        None,
        _INTERNAL,
        "N/A in the registry; a Teredo address reaches a host behind someone's NAT through a relay, its IPv4 "
        "address obfuscated in the address: no public service, refused whole",
    ),
    _v6("2001:1::1/128", "Port Control Protocol Anycast", True, _PUBLIC),
    _v6("2001:1::2/128", "Traversal Using Relays around NAT Anycast", True, _PUBLIC),
    _v6("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", True, _PUBLIC),
    _v6("2001:2::/48", "Benchmarking", False, _INTERNAL),
    _v6("2001:3::/32", "AMT", True, _PUBLIC),
    _v6("2001:4:112::/48", "AS112-v6", True, _PUBLIC),
    _v6(
        "2001:10::/28",
        "Deprecated (previously ORCHID)",
        None,
        _INTERNAL,
        "terminated in 2014, so the registry leaves the flag blank; it stays what 2001::/23 around it is",
    ),
    _v6("2001:20::/28", "ORCHIDv2", True, _PUBLIC),
    _v6("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", True, _PUBLIC),
    _v6("2001:db8::/32", "Documentation", False, _INTERNAL),
    _v6(
        "2002::/16",
        "6to4",
        None,
        _EMBEDDED,
        "N/A in the registry; a 6to4 relay forwards to the IPv4 address in bits 16 to 47 (RFC 3056), so that "
        "address decides: 2002:5db8:d70e::1 is 93.184.215.14, public, and 2002:7f00:1::1 is 127.0.0.1",
        ipv4_shift=80,
    ),
    _v6("2620:4f:8000::/48", "Direct Delegation AS112 Service", True, _PUBLIC),
    _v6("3fff::/20", "Documentation", False, _INTERNAL),
    _v6("5f00::/16", "Segment Routing (SRv6) SIDs", False, _INTERNAL),
    _v6("fc00::/7", "Unique-Local", False, _INTERNAL),  # AWS's metadata service: fd00:ec2::254
    _v6("fe80::/10", "Link-Local Unicast", False, _INTERNAL),
)

# Ranges the special-purpose registries do not list, which Jarvis decides on too.
BEYOND_THE_REGISTRIES: tuple[Range, ...] = (
    _v4(
        "224.0.0.0/4",
        "Multicast (RFC 5771; IANA's IPv4 Multicast Address Space registry)",
        None,
        _INTERNAL,
        "no server is reached at a multicast group",
    ),
    _v6(
        "ff00::/8",
        "Multicast (RFC 4291; IANA's IPv6 Multicast Address Space registry)",
        None,
        _INTERNAL,
        "no server is reached at a multicast group",
    ),
    _v6(
        "::/96",
        "IPv4-compatible (deprecated, RFC 4291 section 2.5.5.1)",
        None,
        _EMBEDDED,
        "some stacks still tunnel ::a.b.c.d to the IPv4 address a.b.c.d, so that address decides (::/128 and "
        "::1/128 inside are the registry's own rows)",
    ),
    _v6(
        "fec0::/10",
        "Site-Local (deprecated, RFC 3879; IANA's IPv6 Address Space registry)",
        None,
        _INTERNAL,
        "IPv6's first private-use range, which a network may still route inside",
    ),
)

# The loopback ranges, for the callers that let an admin allow loopback (an IPv4-mapped address counts as its
# IPv4 address, as a socket connects to it).
_LOOPBACK: tuple[Network, ...] = (ipaddress.IPv4Network("127.0.0.0/8"), ipaddress.IPv6Network("::1/128"))
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
# What a registered server's URL must never lead to: link-local (cloud metadata services at 169.254.169.254),
# unspecified, multicast, and AWS's IPv6 metadata address; any IPv6 form of such an IPv4 address too.
_METADATA_OR_LINK_LOCAL: tuple[Network, ...] = (
    ipaddress.IPv4Network("169.254.0.0/16"),
    ipaddress.IPv4Network("0.0.0.0/32"),
    ipaddress.IPv4Network("224.0.0.0/4"),
    ipaddress.IPv6Network("fe80::/10"),
    ipaddress.IPv6Network("::/128"),
    ipaddress.IPv6Network("ff00::/8"),
    ipaddress.IPv6Network("fd00:ec2::254/128"),
)

# Most specific first, so the first range holding an address is its verdict.
_BY_VERSION: dict[int, tuple[Range, ...]] = {
    version: tuple(
        sorted(
            (
                r
                for r in (*IPV4_SPECIAL_PURPOSE, *IPV6_SPECIAL_PURPOSE, *BEYOND_THE_REGISTRIES)
                if r.network.version == version
            ),
            key=lambda r: -r.network.prefixlen,
        )
    )
    for version in (4, 6)
}


def special_range(address: Address) -> Range | None:
    """The most specific range of the tables holding the address; None for ordinary unicast."""
    for candidate in _BY_VERSION[address.version]:
        if address in candidate.network:
            return candidate
    return None


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, NAT64, 6to4, IPv4-compatible), if any."""
    found = special_range(address)
    if found is None or found.verdict is not Verdict.EMBEDDED:
        return None
    return ipaddress.IPv4Address((int(address) >> found.ipv4_shift) & 0xFFFFFFFF)


def is_internal(address: Address) -> bool:
    """True for anything that is not a public unicast address: loopback, private, link-local (cloud metadata
    169.254.169.254), unique-local (fd00:ec2::254), unspecified, multicast, reserved, shared (100.64/10),
    documentation, benchmarking; and any IPv6 form of such an IPv4 address (mapped, NAT64 64:ff9b::7f00:1,
    6to4 2002:a00:1::, IPv4-compatible); Teredo and local-use NAT64 whole."""
    found = special_range(address)
    if found is None:
        return False
    if found.verdict is Verdict.EMBEDDED:
        return is_internal(ipaddress.IPv4Address((int(address) >> found.ipv4_shift) & 0xFFFFFFFF))
    return found.verdict is Verdict.INTERNAL


def is_loopback(address: Address) -> bool:
    """127.0.0.0/8, ::1, and ::ffff:127.x.y.z (a socket given it connects to 127.x.y.z); not the NAT64 or 6to4
    forms of 127.x.y.z, which lead to a translator's or relay's own loopback (those are internal)."""
    if address in _MAPPED:
        address = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return any(address in net for net in _LOOPBACK)


def is_metadata_or_link_local(address: Address) -> bool:
    """Link-local (cloud metadata services at 169.254.169.254), unspecified, multicast, or AWS's fd00:ec2::254; an
    IPv6 form of such an IPv4 address (mapped, NAT64, 6to4, IPv4-compatible) too. Where a registered server's URL
    must never lead, whatever else it may reach (a team's servers live on private addresses)."""
    inner = embedded_ipv4(address)
    if inner is not None:
        address = inner
    return any(address in net for net in _METADATA_OR_LINK_LOCAL)
