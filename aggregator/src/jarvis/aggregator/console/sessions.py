"""The console's browser sessions and one-time sign-in links, kept in the registry's sign-in records (kind
`console`) so that every worker and replica knows them: the cookie holds a random id, the registry its SHA-256.

A session names the person (their subject at the team's provider, or the local admin) and carries the CSRF token its
forms must echo. Nothing about what the person may do is kept here: their scopes are asked anew on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway

KIND = "console"
SESSION_SECONDS = 12 * 3600
LINK_SECONDS = 24 * 3600
LOCAL = ""  # the subject of the local admin's session (no sign-in; the one-time link)


@dataclass(frozen=True)
class Session:
    id: str
    subject: str  # LOCAL for the local admin
    csrf: str

    @property
    def local(self) -> bool:
        return self.subject == LOCAL


def _key(prefix: str, secret: str) -> str:
    return f"{prefix}:{hashlib.sha256(secret.encode()).hexdigest()}"


class Sessions:
    def __init__(self, records: OAuthStateGateway) -> None:
        self.records = records

    async def open(self, subject: str) -> Session:
        session = Session(secrets.token_urlsafe(32), subject, secrets.token_urlsafe(32))
        body = {"subject": subject, "csrf": session.csrf}
        await self.records.put(KIND, _key("session", session.id), body, ttl=SESSION_SECONDS)
        return session

    async def find(self, session_id: str) -> Session | None:
        if not session_id or len(session_id) > 100:
            return None
        stored = await self.records.get(KIND, _key("session", session_id))  # None: unknown or expired
        if stored is None:
            return None
        return Session(session_id, str(stored.body.get("subject", "")), str(stored.body.get("csrf", "")))

    async def close(self, session_id: str) -> None:
        await self.records.delete(KIND, _key("session", session_id))

    async def mint_link(self) -> str:
        """A one-time secret that opens the local admin's session once (`?token=` on /console/)."""
        token = secrets.token_urlsafe(32)
        await self.records.put(KIND, _key("link", token), {"subject": LOCAL}, ttl=LINK_SECONDS)
        return token

    async def redeem_link(self, token: str) -> bool:
        """Whether `token` is a live link not used before (using it ends it, on every worker)."""
        if not token or len(token) > 100:
            return False
        taken = await self.records.take(KIND, _key("link", token))
        return taken is not None and taken[1]
