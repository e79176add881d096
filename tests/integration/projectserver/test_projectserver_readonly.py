"""inspect_state and get_logs for real, and proof that neither changes what it reads."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.support.projectserver import LOG_ENTRIES

pytestmark = pytest.mark.anyio


async def inspect(client: Client, path: str, depth: int | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"path": path} if depth is None else {"path": path, "depth": depth}
    result = await client.call_tool("inspect_state", arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return cast(dict[str, Any], result.structured_content)  # mcp types it Any: any JSON value


async def test_reads_registered_singletons_and_module_globals(client: Client) -> None:
    assert await inspect(client, "cache.users.alice") == {"value": {"id": 1, "roles": ["admin"]}, "type": "dict"}
    assert (await inspect(client, "cache.7"))["value"] == "seven"
    assert (await inspect(client, "cache.users.alice.roles.0"))["value"] == "admin"
    assert (await inspect(client, "sample_app.state.SENTINEL.value"))["value"] == 42
    assert (await inspect(client, "settings"))["value"] == {
        "__type__": "sample_app.state.Settings",
        "debug": True,
        "name": "sample",
    }
    assert (await inspect(client, "settings.TIMEOUT"))["value"] == 30
    assert (await inspect(client, "sample_app.state.Settings"))["value"] == {"__class__": "sample_app.state.Settings"}


async def test_depth_bounds_the_rendering(client: Client) -> None:
    shallow = (await inspect(client, "sample_app.state.SENTINEL", depth=2))["value"]
    assert shallow["nested"]["deep"] == {"__type__": "dict", "__truncated__": True, "size": 1}
    default = (await inspect(client, "sample_app.state.SENTINEL"))["value"]  # depth 3 by default
    assert default["nested"]["deep"]["deeper"]["__truncated__"] is True
    assert (await inspect(client, "sample_app.state.SENTINEL", depth=10))["value"]["nested"]["deep"] == {
        "deeper": {"deepest": [1, 2, 3]}
    }


async def test_unknown_paths_answer_with_an_error_not_a_failure(client: Client) -> None:
    missing = await inspect(client, "cache.users.carol")
    assert missing["value"] is None
    assert "cache.users.carol" in missing["error"]
    unknown = await inspect(client, "not_a_module.x")
    assert "registered: ['cache', 'lazy', 'service', 'settings', 'traps']" in unknown["error"]


async def test_no_application_code_runs_and_nothing_changes(client: Client) -> None:
    """Traps record any dunder, property, metaclass hook or override a reader could trigger."""
    sentinel_before = await inspect(client, "sample_app.state.SENTINEL", depth=10)
    reads = [
        "traps",
        "traps.trap",
        "traps.trap.visible.ok",
        "traps.dict",
        "traps.dict.k.1",
        "traps.list",
        "traps.list.1.two",
        "traps.slotted",
        "traps.slotted.a",
        "traps.point",
        "traps.point.y",
        "lazy.absent",
        "lazy",
        "sample_app.traps",
        "sample_app.state",
    ]
    for path in reads:
        await inspect(client, path, depth=4)
    assert (await inspect(client, "traps.trap.visible.ok"))["value"] == 1
    assert (await inspect(client, "traps.slotted.a"))["value"] == 5
    assert (await inspect(client, "traps.point.y"))["value"] == 4
    assert (await inspect(client, "traps.list.1.two"))["value"] == 2
    property_read = await inspect(client, "traps.trap.computed")
    assert property_read["value"] is None
    assert "property" in property_read["error"]
    assert "run application code" in property_read["error"]
    assert (await inspect(client, "traps.slotted.unset"))["error"] == "nothing at 'traps.slotted.unset'"
    # The defaultdict was read by a missing key and is still empty: nothing was inserted.
    assert (await inspect(client, "lazy"))["value"] == {"__type__": "collections.defaultdict", "items": {}}
    assert (await inspect(client, "sample_app.traps.TRIPPED"))["value"] == []
    assert await inspect(client, "sample_app.state.SENTINEL", depth=10) == sentinel_before
    assert sentinel_before["value"]["value"] == 42


def _fingerprint(path: Path) -> tuple[int, int, str]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


async def logs(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("get_logs", arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return cast(dict[str, Any], result.structured_content)  # mcp types it Any: any JSON value


async def test_get_logs_filters_by_level_and_returns_the_newest(client: Client, project: Path) -> None:
    log_file = project / "logs" / "app.ndjson"
    before = _fingerprint(log_file)
    errors = await logs(client, level="error", limit=10)
    assert [e["msg"] for e in errors["entries"]] == ["payment failed", "timeout talking to bank"]
    warn = await logs(client, level="warn", limit=2)
    assert [e["msg"] for e in warn["entries"]] == ["payment failed", "timeout talking to bank"]
    everything = await logs(client, level="debug", limit=500)
    assert everything["entries"] == LOG_ENTRIES
    assert everything["unparsable_lines"] == 1
    info = await logs(client, level="info", limit=500)
    assert [e["msg"] for e in info["entries"]] == [
        "request served",
        "slow query",
        "payment failed",
        "request served",
        "timeout talking to bank",
    ]
    newest = await logs(client, level="info", limit=1)
    assert newest["entries"] == [LOG_ENTRIES[-1]]
    assert _fingerprint(log_file) == before  # not a byte, not an mtime tick


async def test_get_logs_follow_picks_up_new_entries_and_writes_nothing(client: Client, project: Path) -> None:
    log_file = project / "logs" / "app.ndjson"
    late = {"level": "error", "msg": "appended while following"}

    def append_later() -> None:
        time.sleep(0.4)
        with log_file.open("a") as fh:
            fh.write(json.dumps(late) + "\n")

    writer = threading.Thread(target=append_later)
    writer.start()
    followed = await logs(client, level="error", limit=3, follow=True)
    writer.join()
    assert followed["entries"][-1] == late
    assert followed["followed"] == 1
    expected = "\n".join(json.dumps(e) for e in LOG_ENTRIES).count("\n") + 3  # 6 entries, 1 junk, 1 appended
    assert log_file.read_text().count("\n") == expected  # the server added nothing of its own


async def test_environment_and_credential_paths_are_refused(client: Client) -> None:
    """Issue 15: `inspect_state path=os.environ` returned the environment (hex-encoded at depth 3)."""
    for path in (
        "os.environ",
        "os.environ._data",
        "posix.environ",
        "os.environb",
        "service.api_key",
        "service.nested.db_password",
        "sample_app.state.SERVICE.api_key",
    ):
        with pytest.raises(MCPError, match="never reads") as refused:  # invalid params, like other bad paths
            await client.call_tool("inspect_state", {"path": path, "depth": 3})
        assert refused.value.error.code == INVALID_PARAMS


async def test_environment_and_credentials_reached_indirectly_are_hidden(client: Client) -> None:
    service = (await inspect(client, "service", depth=3))["value"]
    assert service["region"] == "eu"
    assert service["api_key"].startswith("<hidden")
    assert service["nested"]["db_password"].startswith("<hidden")
    module = (await inspect(client, "sample_app.state", depth=2))["value"]["items"]
    assert module["ENVIRON"].startswith("<hidden")  # os.environ under another name: hidden by identity
    assert module["ENV_COPY"].get("PATH"), "a plain copy shows what is not a credential"
    assert module["SERVICE"]["api_key"].startswith("<hidden")
    text = json.dumps(await inspect(client, "sample_app", depth=4))
    assert "canary" not in text
    assert "63616e617279" not in text
