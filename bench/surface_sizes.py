"""Prints, for each surface, its tool count and the size of its tools/list answer (bytes, ~tokens).

Tokens are estimated as bytes / 4 (no tokenizer model can be downloaded here); the spec budgets
are stated in bytes (jarvis: < 4,000) and in tokens (debug and discovery: about 500).
"""

from __future__ import annotations

import asyncio
import json

import httpx2
from common import mcp_client, temp_jarvis


async def main() -> None:
    with temp_jarvis() as jarvis:
        surfaces = httpx2.get(jarvis.base_url + "/healthz", timeout=5).json()["surfaces"]
        print(f"{'surface':<22} {'tools':>5} {'bytes':>7} {'~tokens':>8}")
        for path in surfaces:
            async with mcp_client(jarvis.url(path)) as client:
                listed = await client.list_tools()
            compact = json.dumps(
                listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")
            )
            size = len(compact.encode())
            print(f"{path:<22} {len(listed.tools):>5} {size:>7} {size // 4:>8}")


if __name__ == "__main__":
    asyncio.run(main())
