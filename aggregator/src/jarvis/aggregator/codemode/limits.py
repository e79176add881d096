"""What one code run may use: calls, concurrency, output, wall time and heap."""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class RunLimits:
    calls: int = 50  # inner tool calls (tool_find included) per run
    concurrent: int = 8  # inner calls in flight at once; more wait their turn
    output_bytes: int = 64 * KIB  # the return value's JSON, and separately the console text
    timeout: float = 30.0  # seconds, the default wall time
    max_timeout: float = 120.0  # the most a caller may ask for (an admin's setting)
    heap_mb: int = 128  # V8's old space; a memory bomb ends the process, not Jarvis

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


@dataclass(frozen=True)
class ScopeLimits:
    """code_run for the tokens holding one scope: off, or with tighter limits than the defaults."""

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
        """The caller's limits; None when code_run is off for it. Unlisted scopes take the defaults, and a token
        whose scopes are all listed gets the most any of them allows (scopes add up, they never take away)."""
        if not self.enabled:
            return None
        listed = dict(self.per_scope)
        if not listed or any(s not in listed for s in scopes) or not scopes:
            return self.defaults
        allowed = [listed[s] for s in scopes if listed[s].enabled]
        if not allowed:
            return None
        d = self.defaults
        return RunLimits(
            calls=max(min(x.calls or d.calls, d.calls) for x in allowed),
            concurrent=max(min(x.concurrent or d.concurrent, d.concurrent) for x in allowed),
            output_bytes=d.output_bytes,
            timeout=max(min(x.timeout or d.timeout, d.timeout) for x in allowed),
            max_timeout=max(min(x.timeout or d.max_timeout, d.max_timeout) for x in allowed),
            heap_mb=d.heap_mb,
        )
