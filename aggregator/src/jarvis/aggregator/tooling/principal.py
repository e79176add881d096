"""Who is calling; what their token's scopes allow is decided by `jarvis.common.scopes`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jarvis.common import scopes as scope_rules

CONSOLE = "console"  # a Principal's `via` in the console's browser session


@dataclass(frozen=True)
class Principal:
    token_id: str
    name: str
    scopes: tuple[str, ...]
    # True for an unauthenticated caller on a loopback-only aggregator (the laptop case).
    local: bool = False
    # The person behind a signed-in (OAuth) token: their subject at the identity provider; "" for a `jv_` token.
    user: str = ""
    # When a person's token was issued (unix seconds), checked against their standing (oauth/standing.py); 0 else.
    issued_at: int = 0
    # How the person is calling, for the audit log: "token <client>" for a client's access token, "session <id>" for
    # an agent session's credential (decision 0057); "" for a `jv_` token, whose name says it all.
    via: str = ""
    # The agent session an agent's credential was minted for, which it is good only while it runs (decision 0058).
    agent_session: str = ""
    # The W3C trace context an agent's credential was minted in (its run's or spawn's): the parent of its calls that
    # name none themselves, since agent CLIs do not forward one (decision 0066).
    trace: tuple[tuple[str, str], ...] = ()

    @property
    def at_console(self) -> bool:
        """The person themselves, in the console's browser session (its forms carry a CSRF token): not a client's
        or an agent's credential, nor a token minted from one. Only here may they manage their own tokens."""
        return bool(self.user) and self.via == CONSOLE

    @property
    def who(self) -> str:
        """The caller as the audit log names them: "alice@example.com via session s1", or the token's name."""
        return f"{self.name} via {self.via}" if self.via else self.name

    def may(
        self, surface: str, tool: str, action: str | None, *, read_only: bool, admin: bool, project: str | None = None
    ) -> bool:
        return scope_rules.allows(self.scopes, surface, tool, action, read_only=read_only, admin=admin, project=project)

    def may_use_surface(self, surface: str) -> bool:
        return scope_rules.reaches_surface(self.scopes, surface)

    @property
    def sees_everything(self) -> bool:
        return scope_rules.ADMIN in self.scopes or scope_rules.ALL in self.scopes

    @property
    def bound_projects(self) -> tuple[str, ...]:
        """The projects named by this token's project-bound scopes (`<scope>@<project_id>`)."""
        separator = scope_rules.PROJECT_SEPARATOR
        return tuple(sorted({s.partition(separator)[2] for s in self.scopes if separator in s}))


LOCAL_ADMIN = Principal(token_id="", name="local", scopes=(scope_rules.ADMIN,), local=True)
# An HTTP request the gate did not resolve to a caller: it may do nothing (fail closed, never the local admin).
NOBODY = Principal(token_id="", name="unauthenticated", scopes=())


def principal_from_token(token_id: str, name: str, scopes: Sequence[str]) -> Principal:
    return Principal(token_id=token_id, name=name, scopes=tuple(scopes))
