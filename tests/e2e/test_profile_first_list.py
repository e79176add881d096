"""A client's first tools/list on a profile answers at once (issue 37 item 1): Claude Code's first check timed out
behind a server started through `npx`. What is up is listed; a server still starting follows by list_changed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import mcp_types as types
import pytest

from tests.support.downstream import create_profile, create_toy, eventually, mcp_session
from tests.support.stack import RunningJarvis, mcp_client

pytestmark = pytest.mark.anyio

# The default wait is 2 s; 1 s keeps this test quick on a loaded machine, with the slow server well past it.
HOSTED_ENV = {"JARVIS_AGGREGATOR_DOWNSTREAM_LIST_WAIT": "1"}


async def test_a_first_listing_answers_at_once_and_a_slow_servers_tools_follow(hosted: RunningJarvis) -> None:
    """A client's first tools/list on a profile does not wait out a server that starts slowly (Claude Code's first
    check timed out behind `npx`): it answers with what is up, and list_changed brings the rest (issue 37)."""
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "brisk")
        await create_toy(admin, "sluggish", "slowstart", TOY_START_SECONDS="4")
        await create_profile(admin, "first-look", "brisk", "sluggish")
    notices: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notices.append(message.method)

    async with mcp_session(hosted.url("/mcp/profile/first-look"), on_message=on_message) as client:
        started = time.monotonic()
        first = {t.name for t in (await client.list_tools()).tools}
        took = time.monotonic() - started
        assert took < 3.5, f"the first listing took {took:.1f} s"
        assert "brisk__echo" in first
        assert "sluggish__echo" not in first
        await eventually(lambda: asyncio.sleep(0, notices), what="tools/list_changed once sluggish is up")
        later = {t.name for t in (await client.list_tools()).tools}
    assert {"brisk__echo", "sluggish__echo"} <= later
