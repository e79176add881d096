"""A profile's log levels are kept per caller session, and no more of them than the proxy keeps sessions: a session
that ends says nothing, so without a bound every caller that ever set a level would stay listed."""

from __future__ import annotations

from typing import Any, cast

import pytest

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.proxy import logs

pytestmark = pytest.mark.anyio


class _Host:
    """What ServerLogs asks of its host before any server is involved: where to report notices."""

    def on_notice(self, _: Any) -> None:
        return None


async def test_the_oldest_sessions_levels_go_beyond_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LISTENERS", 3)
    server_logs = logs.ServerLogs(cast(DownstreamHost, _Host()))
    session = cast(Any, object())
    for n in range(5):
        await server_logs.set_level(f"session-{n}", session, (), "info")
    await server_logs.set_level("session-2", session, (), "debug")  # a session setting its level again is kept
    assert list(server_logs._listeners) == ["session-3", "session-4", "session-2"]
    assert server_logs._listeners["session-2"].level == "debug"
