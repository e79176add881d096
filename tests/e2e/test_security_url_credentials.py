"""Issue 34, item 2, replayed through a real `jarvis up --require-auth`: a server URL with credentials in its
userinfo and query (`http://alice:pw@host/mcp?api_key=...`) shows neither in `jarvis_server` answers (a read
token's `info` and `list`, the admin's own `create` and `edit`), nor in the audit log, nor in Jarvis's log."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest

from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

CANARY = "canary-issue34-url"
# Port 9 (discard) on loopback: nothing answers, which is all the test needs of the server.
URL = f"http://alice:{CANARY}-pw@127.0.0.1:9/mcp?api_key={CANARY}-key&region=eu#access_token={CANARY}-frag"
SHOWN = "http://***@127.0.0.1:9/mcp?api_key=***&region=eu#access_token=***"
EDITED = f"https://bob:{CANARY}-pw2@mcp.example.com/mcp?Token={CANARY}-t&sig={CANARY}-s&page=2"
EDITED_SHOWN = "https://***@mcp.example.com/mcp?Token=***&sig=***&page=2"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start_jarvis(tmp_path_factory.mktemp("data"), "--require-auth")
    running.tokens = {  # type: ignore[attr-defined]
        "admin": running.create_token("admin", name="admin"),
        "read": running.create_token("read", name="reader"),
    }
    yield running
    running.stop()


def token(running: RunningJarvis, scope: str) -> str:
    return str(running.tokens[scope])  # type: ignore[attr-defined]


async def test_server_url_credentials_are_masked_in_answers_audit_and_log(stack: RunningJarvis) -> None:
    async with mcp_client(stack.url(), token(stack, "admin")) as admin:
        create = {"action": "create", "name": "keyed", "type": "streamable-http", "url": URL}
        created = result_json(await admin.call_tool("jarvis_server", create))["created"]
        assert created["launch"]["url"] == SHOWN
        # A URL the registry refuses is not quoted back in full either.
        refused = error_text(
            await admin.call_tool(
                "jarvis_server",
                {"action": "create", "name": "bad", "type": "streamable-http", "url": f"ftp://u:{CANARY}@h/x"},
            )
        )
        assert "ftp://***@h/x" in refused
        assert CANARY not in refused

    async with mcp_client(stack.url(), token(stack, "read")) as reader:
        info = result_json(await reader.call_tool("jarvis_server", {"action": "info", "name": "keyed"}))
        listed = result_json(await reader.call_tool("jarvis_server", {"action": "list"}))
    assert info["launch"]["url"] == SHOWN
    assert next(s for s in listed["servers"] if s["name"] == "keyed")["launch"] == SHOWN
    assert CANARY not in json.dumps(info)
    assert CANARY not in json.dumps(listed)

    async with mcp_client(stack.url(), token(stack, "admin")) as admin:
        edited = result_json(
            await admin.call_tool("jarvis_server", {"action": "edit", "name": "keyed", "url": EDITED})
        )["edited"]
        assert edited["launch"]["url"] == EDITED_SHOWN
        info = result_json(await admin.call_tool("jarvis_server", {"action": "info", "name": "keyed"}))
        assert info["launch"]["url"] == EDITED_SHOWN  # admin too: answers end up in transcripts

        async def audited() -> list[dict[str, object]]:
            entries = result_json(
                await admin.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": "admin"})
            )["audit"]
            return [e for e in entries if e["tool"] == "jarvis_server" and e["action"] in ("create", "edit")]

        entries = await audited()
        for _ in range(50):
            if len(entries) >= 3:
                break
            await anyio.sleep(0.2)
            entries = await audited()
    urls = sorted(str(e["arguments"]["url"]) for e in entries)  # type: ignore[index]
    assert urls == sorted([SHOWN, "ftp://***@h/x", EDITED_SHOWN]), urls
    assert CANARY not in json.dumps(entries)
    # Every record Jarvis keeps or writes of these calls: the exported audit log and its own log file.
    assert CANARY not in stack.cli("audit", "export").stdout
    assert CANARY not in stack.log()
