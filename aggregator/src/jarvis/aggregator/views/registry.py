"""Views of the registry's objects, as agents read them (field names and order are the public contract)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProfileView:
    name: str
    description: str
    servers: list[str]
    created_at: str | None = None  # RFC 3339; absent when the registry has none
    updated_at: str | None = None


@dataclass(frozen=True)
class ProfileDeleted:
    name: str
    removed_from_clients: list[str]


@dataclass(frozen=True)
class ProfileSuggestion:
    name: str
    servers: list[str]
    reasons: list[str]
    exists: bool


@dataclass(frozen=True)
class ProfileSuggestions:
    suggestions: list[ProfileSuggestion]
    detected: list[str]
    clients_detected: list[str]


# Tokens (used by the orchestrator's `token` tool)


@dataclass(frozen=True)
class TokenView:
    """A token as listed: never its secret, which only creation shows, once."""

    id: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: str | None = None  # RFC 3339
    expires_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None


@dataclass(frozen=True)
class TokenCreated:
    token: TokenView
    secret: str
