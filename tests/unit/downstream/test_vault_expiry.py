"""A token's expiry as the vault keeps it (downstream/auth/storage.py): rounded down on the way in and on the way back,
so a token read back is never thought to live longer than it does. (Rounded the other way, a 1 s token read back
0.9 s after it came counted as good for another second, went out expired, and its person was asked to consent
again instead of Jarvis refreshing it.)"""

from __future__ import annotations

import time

import pytest
from mcp.shared.auth import OAuthToken

from jarvis.aggregator.downstream.auth.storage import VaultStorage
from jarvis.aggregator.gateways.vault import GrantState

pytestmark = pytest.mark.anyio


class MemoryGrants:
    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], str] = {}

    async def put(
        self, person: str, server: str, secret: str, *, expires_at: int, refreshable: bool, has_tokens: bool
    ) -> None:
        self.secrets[(person, server)] = secret

    async def get(self, person: str, server: str) -> str | None:
        return self.secrets.get((person, server))

    async def delete(self, person: str, server: str) -> bool:
        return self.secrets.pop((person, server), None) is not None

    async def states(self, person: str) -> list[GrantState]:
        return []


async def test_a_token_read_back_never_outlives_its_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = VaultStorage(MemoryGrants(), "user:rita", "notes")
    now = [1000.9]  # it came 0.9 s into a second
    monkeypatch.setattr(time, "time", lambda: now[0])
    await storage.set_tokens(OAuthToken(access_token="a", token_type="Bearer", expires_in=1, refresh_token="r"))
    assert await storage.expires_at() == 1001  # 1001.9 rounded down
    now[0] = 1001.5  # 0.6 s later: 0.4 s left, which rounds to nothing
    token = await storage.get_tokens()
    assert token is not None
    assert token.expires_in == 0  # stale: the SDK refreshes it before use
    now[0] = 1000.95
    fresh = await storage.get_tokens()
    assert fresh is not None
    assert fresh.expires_in == 0  # 0.05 s left of the rounded-down expiry: already counted as gone
