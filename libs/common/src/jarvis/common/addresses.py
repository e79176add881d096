"""Which IP addresses are internal: what Jarvis refuses to reach for someone else (the egress proxy, a client's
metadata document URL), unless an admin allowed it."""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 forms that carry an IPv4 address a translator or tunnel reaches: NAT64 (RFC 6052's well-known prefix and
# RFC 8215's local-use one) and IPv4-compatible addresses (deprecated, still routed by some stacks).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, NAT64, 6to4, Teredo's client, IPv4-compatible), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in net for net in _NAT64) or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return low
    return None


def is_internal(address: Address) -> bool:
    """True for anything that is not a public unicast address: loopback, private, link-local (cloud metadata
    169.254.169.254), unique-local (fd00:ec2::254), unspecified, multicast, reserved, shared (100.64/10); and any
    IPv6 form of such an IPv4 address (NAT64 64:ff9b::7f00:1, 6to4 2002:a00:1::, mapped, Teredo, compatible)."""
    if isinstance(address, ipaddress.IPv6Address) and (inner := embedded_ipv4(address)) is not None:
        if is_internal(inner):
            return True
        if address.ipv4_mapped is not None:
            return False
    return not address.is_global or address.is_multicast
