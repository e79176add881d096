"""Who is calling; what their token's scopes allow is decided by `jarvis.common.scopes`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jarvis.common import scopes as scope_rules


@dataclass(frozen=True)
class Principal:
    token_id: str
    name: str
    scopes: tuple[str, ...]
    # True for an unauthenticated caller on a loopback-only aggregator (the laptop case).
    local: bool = False

    def may(
        self, surface: str, tool: str, action: str | None, *, read_only: bool, admin: bool, project: str | None = None
    ) -> bool:
        return scope_rules.allows(self.scopes, surface, tool, action, read_only=read_only, admin=admin, project=project)

    def may_use_surface(self, surface: str) -> bool:
        return scope_rules.reaches_surface(self.scopes, surface)

    @property
    def bound_projects(self) -> tuple[str, ...]:
        """The projects named by this token's project-bound scopes (`<scope>@<project_id>`)."""
        separator = scope_rules.PROJECT_SEPARATOR
        return tuple(sorted({s.partition(separator)[2] for s in self.scopes if separator in s}))


LOCAL_ADMIN = Principal(token_id="", name="local", scopes=(scope_rules.ADMIN,), local=True)


def principal_from_token(token_id: str, name: str, scopes: Sequence[str]) -> Principal:
    return Principal(token_id=token_id, name=name, scopes=tuple(scopes))
