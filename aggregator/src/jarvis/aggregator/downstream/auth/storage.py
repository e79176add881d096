"""The SDK's TokenStorage over the registry's vault: one person's grant at one server, as one sealed JSON text.

The grant holds the tokens, when the access token expires (absolute, so a restarted Jarvis still refreshes ahead of
expiry), and the client registration (DCR's, a pre-registered one, or the CIMD client id) with the issuer it is for.
Where traced, a consent just given also leaves the trace of the call that asked for it (`asked`), until the person's
next call takes it: every worker reads the grant, so the call that continues links back wherever it lands.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from jarvis.aggregator.gateways.vault import GrantState
from jarvis.common import tracing


class GrantStore(Protocol):
    async def put(
        self, person: str, server: str, secret: str, *, expires_at: int, refreshable: bool, has_tokens: bool
    ) -> None: ...

    async def get(self, person: str, server: str) -> str | None: ...

    async def delete(self, person: str, server: str) -> bool: ...

    async def states(self, person: str) -> list[GrantState]: ...


class VaultStorage:
    """TokenStorage of the MCP SDK's OAuth client for (person, server)."""

    def __init__(self, store: GrantStore, person: str, server: str) -> None:
        self.store = store
        self.person = person
        self.server = server

    async def _read(self) -> dict[str, Any]:
        raw = await self.store.get(self.person, self.server)
        try:
            value = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    async def _write(self, grant: dict[str, Any]) -> None:
        tokens = grant.get("tokens") or {}
        await self.store.put(
            self.person,
            self.server,
            json.dumps(grant, separators=(",", ":")),
            expires_at=int(grant.get("expires_at") or 0),
            refreshable=bool(tokens.get("refresh_token")),
            has_tokens=bool(tokens.get("access_token")),
        )

    async def get_tokens(self) -> OAuthToken | None:
        grant = await self._read()
        tokens = grant.get("tokens")
        if not isinstance(tokens, dict):
            return None
        token = OAuthToken.model_validate(tokens)
        expires_at = grant.get("expires_at")
        if isinstance(expires_at, int) and expires_at > 0:
            # Rounded down, as `expires_at` is: a token read back is never thought to live longer than it does (a
            # second too many and a short-lived token goes out expired, is refused, and the person is asked again).
            token.expires_in = max(0, int(expires_at - time.time()))
        return token

    async def expires_at(self) -> int:
        """When the stored access token expires (unix seconds); 0 when unknown or none is held."""
        value = (await self._read()).get("expires_at")
        return value if isinstance(value, int) else 0

    async def set_tokens(self, tokens: OAuthToken) -> None:
        grant = await self._read()
        grant["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        grant["expires_at"] = int(time.time() + tokens.expires_in) if tokens.expires_in else 0  # rounded down
        await self._write(grant)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = (await self._read()).get("client")
        return OAuthClientInformationFull.model_validate(client) if isinstance(client, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        grant = await self._read()
        grant["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._write(grant)

    async def get_metadata(self) -> dict[str, Any]:
        """The server's protected resource metadata and its authorization server's, as last discovered."""
        value = (await self._read()).get("metadata")
        return value if isinstance(value, dict) else {}

    async def set_metadata(self, metadata: dict[str, Any]) -> None:
        grant = await self._read()
        grant["metadata"] = metadata
        await self._write(grant)

    async def wanted_scope(self) -> str:
        """The scope a step-up asked for (insufficient_scope), for the next consent to ask for too."""
        value = (await self._read()).get("wanted_scope")
        return value if isinstance(value, str) else ""

    async def want_scope(self, scope: str) -> None:
        grant = await self._read()
        grant["wanted_scope"] = scope
        await self._write(grant)

    async def ask_continued(self, fields: dict[str, str], until: float) -> None:
        """Keep the W3C `fields` of the call that asked for the consent just given, for the person's next call (until
        `until`, unix seconds) to link to."""
        grant = await self._read()
        grant["asked"] = {**fields, "until": until}
        await self._write(grant)

    async def take_asked(self) -> dict[str, str]:
        """The W3C fields `ask_continued` kept, once (empty when none, or past their time). Written back only when
        there was one: once per consent, right after it, so a refresh's write is not raced on every call."""
        grant = await self._read()
        asked = grant.pop("asked", None)
        if not isinstance(asked, dict):
            return {}
        await self._write(grant)
        until = asked.get("until")
        return tracing.fields(asked) if isinstance(until, (int, float)) and until > time.time() else {}

    async def forget_tokens(self) -> None:
        """Drop the tokens (a refresh token the server no longer takes), keeping the client registration."""
        grant = await self._read()
        if grant.pop("tokens", None) is not None:
            grant.pop("expires_at", None)
            await self._write(grant)
