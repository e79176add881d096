"""Traces (issue 50): the browser's return from a consent is a span of the call that asked for it, the call that
continues (the person's next one to that server) links to the call that asked, and the OAuth token refresh a later
call needs is a span of that call's trace (the authorization server is told the trace too). A
real `jarvis up` exporting real OTLP/HTTP, and an OAuth-protected server whose access tokens live 3 s
(tests/support/oauth_downstream.py: the MCP SDK's own authorization server)."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Iterator

import pytest

from tests.e2e.test_traces import CLIENT_KIND, SERVER_KIND, STEP_CHAINS, call, named, steps_between
from tests.support.downstream import create_profile
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser, protected_server
from tests.support.otlp_receiver import otlp_receiver
from tests.support.stack import mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")


@pytest.fixture
def notes() -> Iterator[ProtectedServer]:
    with protected_server(token_seconds=3) as server:
        yield server


async def test_a_token_refresh_is_a_span_of_the_call_that_needed_it(
    notes: ProtectedServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with otlp_receiver() as receiver:
        env = {
            "HOME": str(tmp_path_factory.mktemp("home")),
            "JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]',  # the authorization server, on loopback
            "JARVIS_DOWNSTREAM_OAUTH_REFRESH_AHEAD_SECONDS": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        jarvis = start_jarvis(tmp_path_factory.mktemp("traced-oauth"), "--require-auth", env=env)
        try:
            admin = jarvis.create_token("admin", name="admin")
            async with mcp_client(jarvis.url(), admin) as client:
                create = {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
                result_json(await client.call_tool("jarvis_server", create))
                config = {"action": "set", "key": "servers.oauth", "value": ["notes"]}
                result_json(await client.call_tool("jarvis_config", config))
                await create_profile(client, "notes", "notes")
            asking = secrets.token_hex(16)
            asked = await asyncio.to_thread(call, jarvis, admin, "/mcp/profile/notes", "notes__whoami", {}, asking)
            link = LINK.search(
                json.dumps(asked)
            )  # a tool error with the consent link: this client takes no elicitation
            assert link is not None, asked
            await asyncio.to_thread(consent_in_browser, link.group(1), "alice")
            # The browser's return to Jarvis is a span of the call that asked for the consent.
            consent = receiver.wait_for(lambda s: any(x.name == "consent callback" for x in s), asking)

            await asyncio.sleep(3.5)  # the access token has expired: the next call refreshes it first
            refreshes = notes.accounts.grants.count("refresh_token")
            trace_id = secrets.token_hex(16)
            result = await asyncio.to_thread(call, jarvis, admin, "/mcp/profile/notes", "notes__whoami", {}, trace_id)
            assert "alice" in json.dumps(result), result
            assert notes.accounts.grants.count("refresh_token") == refreshes + 1
            spans = receiver.wait_for(lambda s: any(x.name == "tools/call notes__whoami" for x in s), trace_id)
            later = secrets.token_hex(16)  # the consent is continued once: the call after is not linked to it
            await asyncio.to_thread(call, jarvis, admin, "/mcp/profile/notes", "notes__whoami", {}, later)
            after = receiver.wait_for(lambda s: any(x.name == "tools/call notes__whoami" for x in s), later)
        finally:
            jarvis.stop()
    callback = named(consent, "consent callback")
    assert callback.kind == SERVER_KIND
    assert callback.parent_id in {s.span_id for s in consent}, [(s.name, s.span_id) for s in consent]
    assert callback.attributes["jarvis.downstream.server"] == "notes"

    # The call that continued links to the call that asked (the span the callback is the child of): a trace viewer
    # goes from the asking call to the browser's callback and on to this call, in a trace of its own.
    pipeline = named(spans, "call notes__whoami")
    linking = [s for s in spans if s.links]  # the call's span, or a step's that took time
    assert [s.links for s in linking] == [((asking, callback.parent_id),)], linking
    assert linking[0] == pipeline or [*steps_between(spans, linking[0], pipeline), linking[0].name] in STEP_CHAINS
    assert all(not s.links for s in after), [(s.name, s.links) for s in after]

    refresh = named(spans, "oauth refresh")
    backend = named(spans, "backend notes")
    # The refresh happened for this call, under Jarvis's span for its request to the server.
    assert (refresh.parent_id, refresh.kind) == (backend.span_id, CLIENT_KIND)
    assert refresh.attributes["http.response.status_code"] == 200
    assert refresh.attributes["server.address"] == "localhost"
    assert backend.start_ns <= refresh.start_ns <= refresh.end_ns <= backend.end_ns
    kept = json.dumps([s.attributes for s in spans])
    assert not any(token in kept for token in [*notes.accounts.access, *notes.accounts.refresh])
