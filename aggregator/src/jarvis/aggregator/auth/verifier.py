"""Bearer tokens: `jv_` tokens verified with the registry, briefly cached; signed-in people's JWT access tokens
checked locally against the shared signing keys and the surface they are for (oauth/resource.py).

A person's own `jv_` token (one with an owner, decision 0071) speaks for them as their sign-in would: with what both
the token and their roles allow now, and not once they are disabled."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from datetime import datetime

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.oauth.resource import ProtectedResource
from jarvis.aggregator.oauth.server.people import People, narrowed, user_identity
from jarvis.aggregator.tooling.principal import Principal, principal_from_token
from jarvis.aggregator.views.registry import TokenView
from jarvis.common.errors import Unauthenticated


class TokenVerifier:
    """Verifies secrets with the registry (JWTs with the signing keys); caches answers for `ttl` seconds (a JWT's
    no longer than it is valid).

    The cache bounds how long a revoked token keeps working on this replica: at most `ttl`.
    Keys are SHA-256 digests, so secrets are not kept in memory longer than the request.
    """

    def __init__(
        self,
        registry: RegistryGateway,
        ttl: float = 5.0,
        max_entries: int = 10_000,
        resource: ProtectedResource | None = None,
        people: People | None = None,
    ) -> None:
        self._registry = registry
        self.resource = resource
        self.people = people
        self._ttl = ttl
        self._max = max_entries
        self._cache: OrderedDict[str, tuple[float, Principal | None]] = OrderedDict()

    async def verify(self, secret: str, path: str = "") -> Principal:
        """The caller `secret` speaks for at the surface served at `path` (a JWT is good for one surface only)."""
        if (
            self.resource is not None
            and self.resource.runs is not None
            and self.resource.runs.is_run_credential(secret)
        ):
            return await self._run_credential(secret)
        jwt = self.resource is not None and self.resource.is_jwt(secret)
        # A JWT is good for one surface, so its path is part of the key; a refused one is not remembered (its reason
        # is what the client needs, and checking it costs no registry call).
        key = hashlib.sha256(f"{path}\n{secret}".encode() if jwt else secret.encode()).hexdigest()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            if hit[1] is None:
                raise Unauthenticated("invalid token")
            if hit[1].user:
                assert self.resource is not None
                await self.resource.check_current(hit[1])  # a disable, a session's end reach cached tokens too
            return hit[1]
        if jwt:
            assert self.resource is not None
            principal, expires_at = await self.resource.principal(secret, path)
            self._remember(key, now, principal, min(self._ttl, expires_at - time.time()))
            return principal
        try:
            token = await self._registry.verify_token(secret)
        except Unauthenticated:
            self._remember(key, now, None)
            raise
        principal = (
            await self._owned(token) if token.owner else principal_from_token(token.id, token.name, token.scopes)
        )
        self._remember(key, now, principal)
        return principal

    async def _owned(self, token: TokenView) -> Principal:
        """A person's token: them, with what both the token and their roles allow now (roles narrowed since it was
        made narrow it too), checked like their sign-in's tokens (a disable ends it, on every replica)."""
        if self.people is None or self.resource is None:
            raise Unauthenticated(
                "this token acts for a person, and this Jarvis signs no one in: use a machine's token"
            )
        user = await self.people.user(token.owner)
        if user is None:
            raise Unauthenticated("the person this token acts for is not known here: create a new token")
        identity = user_identity(user)
        created = datetime.fromisoformat(token.created_at) if token.created_at else None
        principal = Principal(
            token_id=token.id,
            name=identity.email or identity.name or identity.subject,
            scopes=narrowed(await self.people.scopes_for(identity), token.scopes),
            user=identity.subject,
            issued_at=int(created.timestamp()) if created is not None else 0,
            via=f"token {token.name}",
        )
        await self.resource.check_current(principal)
        return principal

    async def _run_credential(self, secret: str) -> Principal:
        """A scheduled run's credential: the person it acts for, checked like a JWT's (standing on every call)."""
        assert self.resource is not None
        assert self.resource.runs is not None
        key = hashlib.sha256(secret.encode()).hexdigest()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            if hit[1] is None:
                raise Unauthenticated("invalid token")
            principal = hit[1]
        else:
            try:
                principal = await self.resource.runs.principal(secret)
            except Unauthenticated:
                self._remember(key, now, None)  # guessed or spent secrets cost the registry one call per period
                raise
            self._remember(key, now, principal)
        await self.resource.check_current(principal)
        return principal

    def _remember(self, key: str, now: float, principal: Principal | None, ttl: float | None = None) -> None:
        self._cache[key] = (now + (self._ttl if ttl is None else ttl), principal)
        self._cache.move_to_end(key)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
