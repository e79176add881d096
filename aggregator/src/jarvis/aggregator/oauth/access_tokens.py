"""Jarvis's JWT access tokens: audience-bound (RFC 8707), signed with the shared keys, scopes in Jarvis's grammar.

The claims (RFC 9068's profile): iss (Jarvis's public base URL), sub (the person at the provider), aud (the one
surface URL the token is for), iat/exp, jti, scope (space-separated `jarvis.common.scopes` strings), client_id,
and email/name/groups for the audit log.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from joserfc.errors import JoseError
from joserfc.jwt import JWTClaimsRegistry

from jarvis.aggregator.oauth.keys import InvalidToken, SigningKeys
from jarvis.common import tracing

__all__ = ["AccessClaims", "InvalidToken", "issue", "verify"]

_LEEWAY_SECONDS = 30  # clocks of replicas drift a little; no more than this


@dataclass(frozen=True)
class AccessClaims:
    subject: str
    audience: str
    scopes: tuple[str, ...]
    client_id: str
    expires_at: int
    email: str = ""
    name: str = ""
    groups: tuple[str, ...] = ()
    issued_at: int = 0
    session: str = ""  # the agent session an agent credential was minted for (decision 0057); "" for a client's
    trace: tuple[tuple[str, str], ...] = ()  # an agent credential's: the trace of the spawn (decision 0066)


def issue(
    keys: SigningKeys,
    *,
    issuer: str,
    subject: str,
    audience: str | Sequence[str],
    scopes: Sequence[str],
    client_id: str,
    ttl_seconds: int,
    email: str = "",
    name: str = "",
    groups: Sequence[str] = (),
    session: str = "",
    trace: Mapping[str, str] | None = None,
) -> str:
    now = int(time.time())
    extra: dict[str, Any] = {"session": session} if session else {}
    if trace:
        extra["trace"] = dict(trace)
    return keys.sign(
        {
            **extra,
            "iss": issuer,
            "sub": subject,
            "aud": audience if isinstance(audience, str) else list(audience),
            "iat": now,
            "nbf": now,
            "exp": now + ttl_seconds,
            "jti": uuid.uuid4().hex,
            "scope": " ".join(scopes),
            "client_id": client_id,
            "email": email,
            "name": name,
            "groups": list(groups),
        }
    )


def verify(keys: SigningKeys, token: str, *, issuer: str, audience: str) -> AccessClaims:
    """The claims of a token signed by `keys`, issued by `issuer` for exactly `audience`; else InvalidToken(why)."""
    claims = keys.verify(token)
    registry = JWTClaimsRegistry(
        leeway=_LEEWAY_SECONDS,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": audience},
        sub={"essential": True},
        exp={"essential": True},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise InvalidToken(_reason(exc, claims, issuer, audience)) from None
    scope = claims.get("scope", "")
    if not isinstance(scope, str) or not isinstance(claims.get("client_id", ""), str):
        raise InvalidToken("malformed scope or client_id claim")
    return AccessClaims(
        subject=str(claims["sub"]),
        audience=audience,
        scopes=tuple(scope.split()),
        client_id=str(claims.get("client_id", "")),
        expires_at=int(claims["exp"]),
        email=str(claims.get("email") or ""),
        name=str(claims.get("name") or ""),
        groups=tuple(str(g) for g in claims.get("groups") or ()),
        issued_at=int(claims.get("iat") or 0),
        session=str(claims.get("session") or ""),
        trace=tuple(tracing.fields(claims.get("trace")).items()),
    )


def _reason(exc: JoseError, claims: dict[str, Any], issuer: str, audience: str) -> str:
    claim = getattr(exc, "claim", "")
    if claim == "aud":
        return f"the token is for another resource, not {audience}"
    if claim == "iss":
        return f"the token was issued by another issuer, not {issuer}"
    if exc.error == "expired_token":
        return "the token has expired"
    return exc.description or exc.error or "invalid claims"
