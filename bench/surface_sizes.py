"""Prints, for each surface, its tool count and the size of its tools/list answer as a model reads it (bytes,
~tokens; without the tools' `_meta`, which is for the client).

Tokens are estimated as bytes / 4 (no tokenizer model can be downloaded here); the spec budgets
are stated in bytes (jarvis: < 4,000) and in tokens (debug and discovery: about 500).
"""

from __future__ import annotations

import asyncio

import httpx2
from common import mcp_client, temp_jarvis

from tests.support.discovery import listing_bytes


async def main() -> None:
    with temp_jarvis() as jarvis:
        surfaces = httpx2.get(jarvis.base_url + "/healthz", timeout=5).json()["surfaces"]
        print(f"{'surface':<22} {'tools':>5} {'bytes':>7} {'~tokens':>8}")
        for path in surfaces:
            async with mcp_client(jarvis.url(path)) as client:
                listed = await client.list_tools()
            size = listing_bytes(listed)
            print(f"{path:<22} {len(listed.tools):>5} {size:>7} {size // 4:>8}")


if __name__ == "__main__":
    asyncio.run(main())
