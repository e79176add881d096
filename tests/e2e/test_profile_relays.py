"""What a profile relays besides answers (issue 13): task status notifications, resource URIs inside content, and
log messages, through `jarvis up` to the mcp SDK's own client over real HTTP.

The servers are reference servers (tests/support/reference_server.py) recording every request they receive:
alpha announces task status as SEP-2663's `notifications/tasks` on the listen streams that name a task, beta as the
2025-era `notifications/tasks/status` on the session that made the task, gamma refuses `logging/setLevel`.
Profiles: `solo` (alpha alone, transparent: the server's own names), `pair` (alpha and beta, prefixed), `trio`
(alpha, beta and gamma, prefixed).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import NotificationBinding
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.test_downstream_tasks import CreatedTask, Raw, Tasks, server_of
from tests.e2e.test_profile_aggregation import Downstream, _reference, text
from tests.support.downstream import FAST_ENV, create_profile
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LEGACY, MODERN = "legacy", "2026-07-28"


@dataclass
class Stack:
    jarvis: RunningJarvis
    servers: dict[str, Downstream]
    tokens: dict[str, str]

    def profile(self, name: str) -> str:
        return self.jarvis.url(f"/mcp/profile/{name}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("relays")
    with (
        _reference(workdir, "alpha") as alpha,
        _reference(workdir, "beta", REFERENCE_TASK_NOTICES="status") as beta,
        _reference(workdir, "gamma", REFERENCE_SET_LEVEL="fail") as gamma,
    ):
        jarvis = start_jarvis(workdir / "jarvis", "--require-auth", env={"HOME": str(workdir), **FAST_ENV})
        try:
            tokens = {
                name: jarvis.create_token(scope, name=name)
                for name, scope in (("admin", "admin"), ("me", "profile"), ("other", "profile"))
            }
            servers = {"alpha": alpha, "beta": beta, "gamma": gamma}
            anyio.run(_install, jarvis, tokens["admin"], servers)
            yield Stack(jarvis, servers, tokens)
        finally:
            jarvis.stop()


async def _install(jarvis: RunningJarvis, admin_token: str, servers: dict[str, Downstream]) -> None:
    async with mcp_client(jarvis.url(), admin_token) as admin:
        for server in servers.values():
            result_json(
                await admin.call_tool(
                    "jarvis_server",
                    {"action": "create", "name": server.name, "type": "streamable-http", "url": server.url},
                )
            )
        await create_profile(admin, "solo", "alpha")
        await create_profile(admin, "pair", "alpha", "beta")
        await create_profile(admin, "trio", "alpha", "beta", "gamma")
        result_json(
            await admin.call_tool(
                "jarvis_config", {"action": "set", "key": "servers.unprefixed_profiles", "value": ["solo"]}
            )
        )


@contextlib.asynccontextmanager
async def client(url: str, mode: str, token: str, **options: Any) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as connected,
    ):
        yield connected


async def _until(check: Any, timeout: float = 20) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.05)


# ------------------------------------------------------------------ task status notifications


class Listening(Tasks):
    """The tasks extension's client side, hearing `notifications/tasks` frames and the listen acknowledgements."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[dict[str, Any]] = []

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/tasks", params_type=Raw, handler=self._heard)]

    async def _heard(self, params: Raw) -> None:
        self.frames.append(params.model_dump())


@contextlib.asynccontextmanager
async def listening(connected: Client, task_ids: list[str], acks: list[Any]) -> AsyncIterator[None]:
    """A `subscriptions/listen` stream naming `task_ids` (the SDK's `listen()` has no field for them), open for the
    block; its acknowledgement lands in `acks`."""
    request = types.SubscriptionsListenRequest(
        params=types.SubscriptionsListenRequestParams(notifications=tasks_filter(task_ids))
    )
    async with anyio.create_task_group() as group:
        group.start_soon(connected.session.send_request, request, Raw)
        await _until(lambda: acks)
        yield
        group.cancel_scope.cancel()


def tasks_filter(task_ids: list[str]) -> types.SubscriptionFilter:
    """A filter naming tasks: the tasks extension's `taskIds`, which the SDK's model keeps as an extra field."""
    return types.SubscriptionFilter.model_validate({"taskIds": task_ids})


def acknowledged(acks: list[Any]) -> Any:
    async def handle(message: Any) -> None:
        if isinstance(message, types.SubscriptionsAcknowledgedNotification):
            acks.append(message.params.notifications.model_dump(by_alias=True, exclude_none=True))

    return handle


def completed(frames: list[dict[str, Any]]) -> set[str]:
    return {frame["taskId"] for frame in frames if frame["status"] == "completed"}


async def start_task(connected: Client, tool: str, label: str) -> str:
    created = await connected.session.call_tool(tool, {"seconds": 2, "label": label}, allow_claimed=True)
    assert isinstance(created, CreatedTask), created
    return created.task_id


@pytest.mark.parametrize(
    ("profile", "tools"),
    [("solo", ["slow_compute"]), ("pair", ["alpha__slow_compute", "beta__slow_compute"])],
)
async def test_task_status_reaches_only_the_caller_whose_task_it_is(
    stack: Stack, profile: str, tools: list[str]
) -> None:
    mine, theirs = Listening(), Listening()
    my_acks: list[Any] = []
    their_acks: list[Any] = []
    url = stack.profile(profile)
    async with (
        client(url, MODERN, stack.tokens["me"], extensions=[mine], message_handler=acknowledged(my_acks)) as me,
        client(
            url, MODERN, stack.tokens["other"], extensions=[theirs], message_handler=acknowledged(their_acks)
        ) as other,
    ):
        handles = [await start_task(me, tool, f"mine-{n}") for n, tool in enumerate(tools)]
        their_handle = await start_task(other, tools[0], "theirs")
        # My stream names my tasks, theirs, and something that is no handle: only mine are acknowledged.
        async with (
            listening(me, [*handles, their_handle, "not-a-handle"], my_acks),
            listening(other, [their_handle], their_acks),
        ):
            assert my_acks == [{"taskIds": handles}]
            assert their_acks == [{"taskIds": [their_handle]}]
            await _until(lambda: completed(mine.frames) >= set(handles) and their_handle in completed(theirs.frames))
        # Every frame names a task by the caller's own handle: never the server's id, never another caller's task.
        assert {frame["taskId"] for frame in mine.frames} == set(handles)
        assert {frame["taskId"] for frame in theirs.frames} == {their_handle}
        # The frames state the task as SEP-2663 does, whichever way the server told Jarvis.
        for frame in mine.frames:
            assert frame["ttlMs"] > 0, frame
            assert frame["pollIntervalMs"] > 0, frame
            assert "ttl" not in frame, frame
        finals = {f["taskId"]: f for f in mine.frames if f["status"] == "completed"}
        servers = {handle: server_of(handle) for handle in handles}
        assert sorted(servers.values()) == (["alpha"] if profile == "solo" else ["alpha", "beta"])
        for n, handle in enumerate(handles):
            if servers[handle] == "alpha":  # SEP-2663's notification carries the result; the 2025-era one does not
                assert finals[handle]["result"]["content"][0]["text"] == f"Computed mine-{n} after 2s"


async def test_a_caller_without_the_tasks_extension_cannot_listen_to_tasks(stack: Stack) -> None:
    acks: list[Any] = []
    async with client(stack.profile("pair"), MODERN, stack.tokens["me"], message_handler=acknowledged(acks)) as plain:
        request = types.SubscriptionsListenRequest(
            params=types.SubscriptionsListenRequestParams(notifications=tasks_filter(["x"]))
        )
        with pytest.raises(MCPError) as refused:
            await plain.session.send_request(request, Raw)
        assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY


# ------------------------------------------------------------------ resource URIs inside content


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_resource_uris_in_results_of_a_mixed_profile_read_back_through_it(stack: Stack, mode: str) -> None:
    alpha, beta = stack.servers["alpha"], stack.servers["beta"]
    async with client(stack.profile("pair"), mode, stack.tokens["me"]) as pair:
        linked = await pair.call_tool("alpha__test_resource_links", {})
        link, embedded = linked.content
        assert isinstance(link, types.ResourceLink)
        assert isinstance(embedded, types.EmbeddedResource)
        assert link.uri == "jarvis://alpha/test://static-text"
        assert embedded.resource.uri == "jarvis://alpha/test://watched-resource"
        assert text(await pair.read_resource(link.uri)) == "This is the content of the static text resource."
        assert text(await pair.read_resource(embedded.resource.uri)) == "Watched resource content"
        assert alpha.requests("resources/read")[-1]["uri"] == "test://watched-resource"

        got = await pair.get_prompt("beta__test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"})
        content = got.messages[0].content
        assert isinstance(content, types.EmbeddedResource)
        assert content.resource.uri == "jarvis://beta/test://static-text"
        reads = len(alpha.requests("resources/read"))
        assert (
            text(await pair.read_resource(content.resource.uri)) == "This is the content of the static text resource."
        )
        assert beta.requests("resources/read")[-1]["uri"] == "test://static-text"
        assert len(alpha.requests("resources/read")) == reads

        # A link forged for a server outside the profile, or naming none: resource not found, and nothing sent.
        seen = {name: len(server.requests()) for name, server in stack.servers.items()}
        for forged in ("jarvis://gamma/test://static-text", "jarvis://alpha", "jarvis:///test://static-text"):
            with pytest.raises(MCPError) as refused:
                await pair.read_resource(forged)
            assert refused.value.error.code == types.INVALID_PARAMS, forged
            assert refused.value.error.data == {"uri": forged}
        assert {name: len(server.requests()) for name, server in stack.servers.items()} == seen


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_a_transparent_profile_keeps_the_servers_uris(stack: Stack, mode: str) -> None:
    async with client(stack.profile("solo"), mode, stack.tokens["me"]) as solo:
        link, embedded = (await solo.call_tool("test_resource_links", {})).content
        assert isinstance(link, types.ResourceLink)
        assert isinstance(embedded, types.EmbeddedResource)
        assert (link.uri, embedded.resource.uri) == ("test://static-text", "test://watched-resource")
        assert text(await solo.read_resource(link.uri)) == "This is the content of the static text resource."
        got = await solo.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"})
        assert got.messages[0].content.resource.uri == "test://static-text"  # type: ignore[union-attr]


# ------------------------------------------------------------------ logging


async def test_set_level_fans_out_and_each_servers_log_messages_reach_the_caller(stack: Stack) -> None:
    heard: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append(params)

    sets = {name: len(server.requests("logging/setLevel")) for name, server in stack.servers.items()}
    async with client(stack.profile("trio"), LEGACY, stack.tokens["me"], logging_callback=on_log) as trio:
        await trio.set_logging_level("info")  # gamma refuses it: the call succeeds all the same
        for name, server in stack.servers.items():
            assert len(server.requests("logging/setLevel")) == sets[name] + 1, name
        assert "logging/setLevel of downstream server gamma failed" in stack.jarvis.log()
        for name in ("alpha", "beta"):
            assert text(await trio.call_tool(f"{name}__test_tool_with_logging", {})).endswith("successfully")
        await _until(lambda: {p.logger.split("/")[0] for p in heard if p.logger} >= {"alpha", "beta"})
        by_server = {
            server: [p.data for p in heard if p.logger and p.logger.split("/")[0] == server]
            for server in ("alpha", "beta")
        }
        for name, lines in by_server.items():
            assert "Tool execution started" in lines, (name, lines)


async def test_a_level_set_through_a_transparent_surface_brings_the_servers_log_lines(stack: Stack) -> None:
    """On a surface that stands for one server, `logging/setLevel` goes to the server as it was, and the server's log
    lines then reach the caller as the server wrote them (no `<server>/` in the logger)."""
    heard: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append(params)

    sets = len(stack.servers["alpha"].requests("logging/setLevel"))
    async with client(stack.profile("solo"), LEGACY, stack.tokens["me"], logging_callback=on_log) as solo:
        await solo.set_logging_level("info")
        assert len(stack.servers["alpha"].requests("logging/setLevel")) == sets + 1
        assert text(await solo.call_tool("test_tool_with_logging", {})).endswith("successfully")
        await _until(lambda: len(heard) >= 3)
        assert [p.data for p in heard] == ["Tool execution started", "Tool processing data", "Tool execution completed"]
        assert {p.logger for p in heard} == {None}


async def test_a_2026_caller_hears_the_log_messages_of_its_own_call(stack: Stack) -> None:
    """A 2026-07-28 caller that asks for log messages in its request's `_meta` hears those the server sends on the
    call's own stream, its logger naming the server on a profile that mixes servers; another caller of the same
    server hears none of them, and a caller that did not ask hears nothing."""
    heard: dict[str, list[types.LoggingMessageNotificationParams]] = {"me": [], "other": [], "quiet": []}

    def listener(who: str) -> Any:
        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            heard[who].append(params)

        return on_log

    pair = stack.profile("pair")
    async with (
        client(pair, MODERN, stack.tokens["me"], log_level="info", logging_callback=listener("me")) as me,
        client(pair, MODERN, stack.tokens["other"], log_level="info", logging_callback=listener("other")) as other,
        client(pair, MODERN, stack.tokens["me"], logging_callback=listener("quiet")) as quiet,
    ):
        assert text(await me.call_tool("alpha__test_tool_with_logging", {})).endswith("successfully")
        await _until(lambda: len(heard["me"]) == 3)
        assert [p.data for p in heard["me"]] == [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        assert {(p.level, p.logger) for p in heard["me"]} == {("info", "alpha")}
        assert (
            text(await other.call_tool("alpha__test_simple_text", {})) == "This is a simple text response for testing."
        )
        assert text(await quiet.call_tool("alpha__test_tool_with_logging", {})).endswith("successfully")
        await anyio.sleep(0.5)  # what a wrongly routed line would take to arrive
        assert heard["other"] == []
        assert heard["quiet"] == []
        assert len(heard["me"]) == 3


async def test_a_2026_requests_log_level_reaches_the_server_it_is_routed_to(stack: Stack) -> None:
    alpha, beta = stack.servers["alpha"], stack.servers["beta"]
    async with client(stack.profile("pair"), MODERN, stack.tokens["me"], log_level="warning") as pair:
        before = len(beta.requests())
        await pair.call_tool("alpha__test_simple_text", {})
        # A URI read nowhere before: a read the server said stays fresh would be answered by Jarvis alone.
        await pair.read_resource("jarvis://alpha/test://template/log-level/data")
        assert [e.get("logLevel") for e in alpha.requests()[-2:]] == ["warning", "warning"]
        assert [e["method"] for e in alpha.requests()[-2:]] == ["tools/call", "resources/read"]
        assert len(beta.requests()) == before
