"""What one code run may use: calls, concurrency, output, wall time and memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from jarvis.common.scopes import ADMIN, ALL, PROJECT_SEPARATOR, READ, allows

KIB = 1024
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class RunLimits:
    calls: int = 50  # inner tool calls (tool_find included) per run
    concurrent: int = 8  # inner calls in flight at once; more wait their turn
    output_bytes: int = 64 * KIB  # the return value's JSON, and separately the console text
    timeout: float = 30.0  # seconds, the default wall time
    max_timeout: float = 120.0  # the most a caller may ask for (an admin's setting)
    heap_mb: int = 128  # V8's old space; a memory bomb ends the process, not Jarvis
    # The rest of the process beyond the heap: Deno itself (about 40 MiB resident at rest, its binary included) and
    # what lives outside V8's heap, typed arrays above all. The whole process may hold memory_mb.
    outside_heap_mb: int = 128

    @property
    def memory_mb(self) -> int:
        """What the Deno process may hold in all (resident, its descendants included): past it the run ends."""
        return self.heap_mb + self.outside_heap_mb

    def wall_time(self, asked: float | None) -> float:
        """The run's wall time: what the caller asked for, within (0, max_timeout]."""
        if asked is None or asked <= 0:
            return min(self.timeout, self.max_timeout)
        return min(float(asked), self.max_timeout)


class RunError(Exception):
    """A run that ended without a result: its message says why, for the caller, with no internals."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def within(scope: str, role: str) -> bool:
    """Whether `role` allows every call `scope` allows: `scope` is `role` or a narrower form of it in the scope
    lattice (`read@p1` and `jarvis:read` are within `read`, `jarvis:jarvis_config@p1` within `jarvis`, every scope
    within `admin`). Asked of `allows` itself, with the widest call `scope` names: any tool or action where it names
    none (""), read-only only where it says `read`, naming its project where it is bound to one."""
    base, _, project = scope.partition(PROJECT_SEPARATOR)
    if base in (ADMIN, ALL):
        return allows((role,), "", "", None, read_only=False, admin=True)
    parts = base.split(":")
    read_only = parts[-1] == READ and len(parts) <= 2  # `read`, `<surface>:read` (a third part names an action)
    surface, tool, action = [*(parts[:-1] if read_only else parts), "", "", ""][:3]
    return allows((role,), surface, tool, action or None, read_only=read_only, project=project or None)


def _least(values: Iterable[N | None]) -> N | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


@dataclass(frozen=True)
class ScopeLimits:
    """code_run for the tokens holding one scope or a narrower form of it: off, or with tighter limits than the
    defaults."""

    enabled: bool = True
    calls: int | None = None
    concurrent: int | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class CodePolicy:
    """Who may run code, and with which limits: the defaults, narrowed per scope (a role's scopes)."""

    enabled: bool = True
    defaults: RunLimits = RunLimits()
    per_scope: tuple[tuple[str, ScopeLimits], ...] = ()

    def limits_for(self, scopes: tuple[str, ...]) -> RunLimits | None:
        """The limits of a token whose scopes that let a program call a tool are `scopes` (CodeMode passes only
        those); None when code_run is off for it.

        An entry holds for its scope and each scope `within` it, so `read` turned off holds for `read@p1` and
        `jarvis:read` too: no narrower form of a role's scope steps around it. A scope within several entries gets
        the strictest of them (off if any is, else the least of each limit): each entry is a ceiling on all its
        scope allows, and that scope's calls are among them. A scope within none keeps the defaults.

        Across a token's scopes, the most any one of them gets: scopes add up everywhere in Jarvis (a person's roles
        are a union), so a token never runs with more than one of its scopes alone would, and it is refused only
        when each of its scopes is under an entry that turns code_run off. The strictest across scopes would instead
        let a person's second role take code mode away from the one that grants it. This is safe because only
        scopes that call a tool count: `metrics` or `share:<server>` beside `read` lift nothing."""
        if not self.enabled or not scopes:
            return None
        allowed = [c for c in map(self._ceiling, scopes) if c.enabled]
        if not allowed:
            return None
        d = self.defaults
        return replace(
            d,
            calls=max(min(x.calls or d.calls, d.calls) for x in allowed),
            concurrent=max(min(x.concurrent or d.concurrent, d.concurrent) for x in allowed),
            timeout=max(min(x.timeout or d.timeout, d.timeout) for x in allowed),
            max_timeout=max(min(x.timeout or d.max_timeout, d.max_timeout) for x in allowed),
        )

    def _ceiling(self, scope: str) -> ScopeLimits:
        """The strictest of the entries `scope` is within (no narrowing where it is within none)."""
        entries = [limits for role, limits in self.per_scope if within(scope, role)]
        return ScopeLimits(
            enabled=all(e.enabled for e in entries),
            calls=_least(e.calls for e in entries),
            concurrent=_least(e.concurrent for e in entries),
            timeout=_least(e.timeout for e in entries),
        )
