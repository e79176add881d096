"""Where Jarvis will not connect a downstream server's URL to, judged on the addresses its name resolves to."""

from __future__ import annotations

import asyncio
import ipaddress
from urllib.parse import urlsplit

from jarvis.common.addresses import is_metadata_or_link_local


async def refuse_forbidden_address(url: str) -> None:
    """SSRF guard at connect time: the registry judged the URL's literal host; here its name is resolved."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    infos = await asyncio.get_running_loop().getaddrinfo(parts.hostname or "", port)
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if is_metadata_or_link_local(address):
            raise ConnectionError(
                f"{parts.hostname} resolves to {address}, a link-local or metadata address "
                "Jarvis does not connect to (SSRF protection)"
            )
