"""Token scopes: one grammar, validated where tokens are made and enforced where calls arrive.

  `admin` or `*`                  everything
  `read`                          every read-only action on every surface
  `<surface>`                     every non-admin action of that surface
  `<surface>:read`                every read-only action of that surface
  `<surface>:<tool>`              every non-admin action of that tool
  `<surface>:<tool>:<action>`     that action
Actions that define a command or an image ("admin" actions) need `admin` or `*`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jarvis.common.errors import InvalidArgument

ADMIN = "admin"
ALL = "*"
READ = "read"
GRAMMAR = (
    "'<surface>[:<tool>[:<action>]]' (e.g. 'jarvis', 'jarvis:jarvis_server', 'jarvis:jarvis_server:list', "
    "'orchestrator:project:create'), '<surface>:read', 'read' (every read-only action), 'admin' or '*'"
)
_SEGMENT = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def validate_scope(scope: str) -> str:
    """The scope, normalised to lower case, or InvalidArgument stating the grammar."""
    normalised = scope.strip().lower()
    if normalised in (ADMIN, ALL, READ):
        return normalised
    parts = normalised.split(":")
    if len(parts) > 3 or not all(_SEGMENT.match(p) for p in parts):
        raise InvalidArgument(f"invalid scope '{scope}'; a scope is {GRAMMAR}")
    return normalised


def validate_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    checked = tuple(dict.fromkeys(validate_scope(s) for s in scopes))
    if not checked:
        raise InvalidArgument(f"a token needs at least one scope; a scope is {GRAMMAR}")
    return checked


def allows(scopes: Iterable[str], surface: str, tool: str, action: str | None, *,
           read_only: bool, admin: bool = False) -> bool:
    """Whether `scopes` permit calling `action` (None for single-purpose tools) of `tool` on `surface`."""
    target = (surface, tool, action or "")
    for scope in scopes:
        if scope in (ADMIN, ALL):
            return True
        if admin:
            continue
        if scope == READ:
            if read_only:
                return True
            continue
        parts = tuple(scope.split(":"))
        if parts == (surface, READ):
            if read_only:
                return True
            continue
        if parts == target[: len(parts)]:
            return True
    return False


def reaches_surface(scopes: Iterable[str], surface: str) -> bool:
    """Whether any scope reaches `surface` at all (else the HTTP layer refuses with 403)."""
    return any(s in (ADMIN, ALL, READ) or s.split(":")[0] == surface for s in scopes)
