"""Who is calling, and what their token's scopes allow.

Scope grammar (also enforced by the registry when tokens are created):
  `admin` or `*`                    everything
  `read`                            every read-only action on every surface
  `<surface>`                       every non-admin action of that surface
  `<surface>:read`                  every read-only action of that surface
  `<surface>:<tool>`                every non-admin action of that tool
  `<surface>:<tool>:<action>`       that action only (unless it needs admin)
Actions that define a command or image ("admin" actions) need `admin`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    token_id: str
    name: str
    scopes: tuple[str, ...]
    # True for an unauthenticated caller on a loopback-only aggregator (the laptop case).
    local: bool = False

    @property
    def is_admin(self) -> bool:
        return "admin" in self.scopes or "*" in self.scopes

    def may(self, surface: str, tool: str, action: str | None, *, read_only: bool, admin: bool) -> bool:
        if self.is_admin:
            return True
        if admin:
            return False
        for scope in self.scopes:
            parts = scope.split(":")
            if scope == "read" and read_only:
                return True
            if parts[0] != surface:
                continue
            if len(parts) == 1:
                return True
            if parts[1] == "read" and len(parts) == 2:
                if read_only:
                    return True
                continue
            if parts[1] != tool:
                continue
            if len(parts) == 2 or (action is not None and parts[2] == action):
                return True
        return False

    def may_use_surface(self, surface: str) -> bool:
        """Whether any scope reaches this surface at all (else the HTTP layer answers 403)."""
        return self.is_admin or any(s == "read" or s.split(":")[0] == surface for s in self.scopes)


LOCAL_ADMIN = Principal(token_id="", name="local", scopes=("admin",), local=True)


def principal_from_token(token_id: str, name: str, scopes: Sequence[str]) -> Principal:
    return Principal(token_id=token_id, name=name, scopes=tuple(scopes))
