"""Per-call cost of checking a signed-in person's JWT access token vs a `jv_` token, through the aggregator's verifier.

Both go through `TokenVerifier.verify` as the gate calls it, in the same run. A `jv_` token's steady state is a hit in
the verifier's cache (the registry is asked once per `token_cache_seconds`), so the registry here answers the one
miss from memory; a JWT is checked (RS256 signature, iss/aud/exp) once per token and surface, then cached as long as
`jv_` answers are but never past its exp; every JWT call also checks the person's standing (disabled, not before:
decision 0057), read from the registry once per cache period. The uncached check's cost is printed too. Issue 31
asks that the JWT check add at most 0.1 ms p50 over a `jv_` token.

Run: .venv/bin/python bench/jwt_check.py   (BENCH_CALLS=5000)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jarvis.aggregator.auth.verifier import TokenVerifier  # noqa: E402
from jarvis.aggregator.oauth import access_tokens  # noqa: E402
from jarvis.aggregator.oauth.keys import SigningKeys  # noqa: E402
from jarvis.aggregator.oauth.resource import ProtectedResource  # noqa: E402
from jarvis.aggregator.oauth.standing import StandingCache  # noqa: E402

BASE = "http://127.0.0.1:8765"
PATH = "/mcp/jarvis"


class MemoryUsers:
    """The registry's user records, from memory: the person's standing is read once per cache period (0057)."""

    async def get(self, kind: str, key: str) -> Any:
        return SimpleNamespace(body={"subject": key, "disabled": False, "not_before": 0})


class MemoryRegistry:
    async def verify_token(self, secret: str) -> Any:
        return SimpleNamespace(id="t1", name="ci", scopes=["jarvis"])


async def p50_ms(verifier: TokenVerifier, secret: str, calls: int) -> float:
    await verifier.verify(secret, PATH)  # warm: the jv_ cache, the key set
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        await verifier.verify(secret, PATH)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1000


async def main() -> None:
    calls = int(os.environ.get("BENCH_CALLS", "5000"))
    keys = SigningKeys.load(Path(tempfile.mkdtemp()) / "keys")

    async def base_url() -> str:
        return BASE

    resource = ProtectedResource(base_url, keys, publish=True)
    resource.standing = StandingCache(MemoryUsers(), ttl=3600)  # every JWT call checks the person's standing
    verifier = TokenVerifier(cast(Any, MemoryRegistry()), ttl=3600, resource=resource)
    jwt = access_tokens.issue(
        keys, issuer=BASE, subject="alice", audience=BASE + PATH, scopes=["jarvis"], client_id="c", ttl_seconds=3600
    )
    jv = await p50_ms(verifier, "jv_" + "x" * 40, calls)
    signed = await p50_ms(verifier, jwt, calls)
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        await resource.principal(jwt, PATH)
        samples.append(time.perf_counter() - began)
    first = statistics.median(samples) * 1000
    print(f"calls={calls}  jv_ token p50={jv:.4f} ms  JWT p50={signed:.4f} ms  difference={signed - jv:.4f} ms")
    print(f"a JWT's first check (signature and claims, once per token and surface per cache period) p50={first:.4f} ms")


if __name__ == "__main__":
    asyncio.run(main())
