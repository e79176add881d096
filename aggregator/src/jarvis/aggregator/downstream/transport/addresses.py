"""Where Jarvis will not connect a downstream server's URL to, judged on the addresses its name resolves to."""

from __future__ import annotations

import asyncio
import ipaddress
from urllib.parse import urlsplit

_AWS_IMDS_V6 = ipaddress.ip_address("fd00:ec2::254")


async def refuse_forbidden_address(url: str) -> None:
    """SSRF guard at connect time: the registry judged the URL's literal host; here its name is resolved."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    infos = await asyncio.get_running_loop().getaddrinfo(parts.hostname or "", port)
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_link_local or address.is_unspecified or address.is_multicast or address == _AWS_IMDS_V6:
            raise ConnectionError(
                f"{parts.hostname} resolves to {address}, a link-local or metadata address "
                "Jarvis does not connect to (SSRF protection)"
            )
