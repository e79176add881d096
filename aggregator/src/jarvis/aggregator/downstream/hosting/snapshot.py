"""A hosted server's state as `jarvis_server list|info`, `jarvis_check_status` and the metrics read it (supervisor.py
takes it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Snapshot:
    """A server's state for `jarvis_server list|info` and `jarvis_check_status`."""

    state: str
    pid: int | None
    uptime_seconds: float | None
    tools: int
    restarts: int
    failures: int
    last_error: str
    last_error_at: float | None
    retry_in_seconds: float | None
    calls: int
    in_flight: int
    quarantined: list[str] = field(default_factory=list)
    schema_fixes: dict[str, list[str]] = field(default_factory=dict)
    container: str | None = None  # a container-image server's container id (its pid is None)
    start_failures: int = 0  # attempts that never reached running (bad command, initialize failed), ever
    speaks: list[str] | None = None  # the protocol versions it is reached in (Connection.speaks), while running
