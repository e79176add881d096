"""Tasks (SEP-2663) through profiles: a 2026-07-28 SDK client that declares the tasks extension calls task tools of two
reference servers (tests/support/reference_server.py) on one prefixed profile; each task handle Jarvis hands out
routes tasks/get, tasks/update and tasks/cancel back to the server that made the task, and a handle that is unknown,
altered, or from another surface or caller is refused with the spec's -32602 before any server sees it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

from tests.e2e.test_downstream_conformance import _reference
from tests.support.downstream import create_profile
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
TERMINAL = {"completed", "failed", "cancelled"}


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"  # SEP-2663: Mcp-Name carries the task id


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class CreatedTask(types.Result):
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class Tasks(ClientExtension):
    """The client side of the extension: a task result is polled to its end, and its handle kept for the test."""

    identifier = TASKS

    def __init__(self) -> None:
        self.handles: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(created.task_id)
        task = await poll(ctx.session, created.task_id)
        assert task["status"] == "completed", task
        return types.CallToolResult.model_validate(task["result"], by_name=False)


class Raw(BaseModel):
    model_config = ConfigDict(extra="allow")


async def send(session: ClientSession, request: types.Request[Any, Any]) -> dict[str, Any]:
    """A task request as the SDK sends it (Mcp-Name from `name_param`), its result as the wire had it."""
    return (await session.send_request(request, Raw)).model_dump()


async def get(session: ClientSession, handle: str) -> dict[str, Any]:
    return await send(session, GetTask(params=TaskIdParams(taskId=handle)))


async def cancel(session: ClientSession, handle: str) -> dict[str, Any]:
    return await send(session, CancelTask(params=TaskIdParams(taskId=handle)))


async def poll(session: ClientSession, handle: str, until: set[str] = TERMINAL) -> dict[str, Any]:
    for _ in range(150):
        task = await get(session, handle)
        if task["status"] in until:
            return task
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {handle} still {task['status']}")


def server_of(handle: str) -> str:
    part = handle.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def with_server(handle: str, server: str) -> str:
    """`handle` claiming another server: its seal no longer fits."""
    parts = handle.split(".")
    parts[1] = base64.urlsafe_b64encode(server.encode()).decode().rstrip("=")
    return ".".join(parts)


@contextlib.asynccontextmanager
async def tasks_client(url: str, token: str, extension: Tasks | None = None) -> AsyncIterator[Client]:
    """The SDK's client speaking 2026-07-28 with `token`, declaring the tasks extension when given it."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=MODERN, extensions=[extension] if extension else None) as client:
            yield client


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with (
        _reference(tmp_path_factory.mktemp("alpha")) as alpha,
        _reference(tmp_path_factory.mktemp("beta")) as beta,
    ):
        yield alpha, beta


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(tmp_path_factory.mktemp("tasks"), "--require-auth", env={"HOME": str(home)})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def tokens(jarvis: RunningJarvis) -> dict[str, str]:
    """An administrator, and two callers with the same scope on every profile."""
    return {
        name: jarvis.create_token(scope, name=name)
        for name, scope in (("admin", "admin"), ("me", "profile"), ("other", "profile"))
    }


@pytest.fixture(scope="module")
async def profiles(jarvis: RunningJarvis, two_servers: tuple[str, str], tokens: dict[str, str]) -> dict[str, str]:
    """`duo` holds both servers (prefixed tool names), `solo` beta alone: their surfaces' URLs."""
    async with mcp_client(jarvis.url(), tokens["admin"]) as admin:
        for name, url in zip(("alpha", "beta"), two_servers, strict=True):
            result_json(
                await admin.call_tool(
                    "jarvis_server", {"action": "create", "name": name, "type": "streamable-http", "url": url}
                )
            )
        await create_profile(admin, "duo", "alpha", "beta")
        await create_profile(admin, "solo", "beta")
    return {name: jarvis.url(f"/mcp/profile/{name}") for name in ("duo", "solo")}


async def test_each_handle_routes_back_to_the_server_that_made_the_task(
    profiles: dict[str, str], tokens: dict[str, str]
) -> None:
    tasks = Tasks()
    async with tasks_client(profiles["duo"], tokens["me"], tasks) as client:
        alpha = await client.call_tool("alpha__slow_compute", {"seconds": 0.3, "label": "from-alpha"})
        beta = await client.call_tool("beta__slow_compute", {"seconds": 0.1, "label": "from-beta"})
        assert alpha.content[0].text == "Computed from-alpha after 0.3s"  # type: ignore[union-attr]
        assert beta.content[0].text == "Computed from-beta after 0.1s"  # type: ignore[union-attr]
        assert [server_of(handle) for handle in tasks.handles] == ["alpha", "beta"]
        for handle in tasks.handles:
            task = await get(client.session, handle)
            assert (task["taskId"], task["status"], task["resultType"]) == (handle, "completed", "complete")

        # tasks/update reaches the task's server, which resumes it; partial answers keep it waiting.
        created = await client.session.call_tool("beta__multi_input", {}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        waiting = await poll(client.session, created.task_id, {"input_required"})
        first, second = sorted(waiting["inputRequests"])
        ack = await send(client.session, update(created.task_id, {first: answer("Ada")}))
        assert ack["resultType"] == "complete"
        assert "taskId" not in ack
        assert set((await get(client.session, created.task_id))["inputRequests"]) == {second}
        await send(client.session, update(created.task_id, {second: answer("Grace")}))
        done = await poll(client.session, created.task_id)
        assert done["result"]["content"][0]["text"] == "Received Ada and Grace"

        # tasks/cancel reaches it too: the long task settles cancelled.
        running = await client.session.call_tool(
            "alpha__slow_compute", {"seconds": 60, "label": "cancel-me"}, allow_claimed=True
        )
        assert isinstance(running, CreatedTask)
        await cancel(client.session, running.task_id)
        assert (await poll(client.session, running.task_id))["status"] == "cancelled"


def update(handle: str, responses: dict[str, Any]) -> UpdateTask:
    return UpdateTask(params=UpdateParams(taskId=handle, inputResponses=responses))


def answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def test_a_handle_that_is_unknown_altered_or_from_another_surface_or_caller_reaches_no_server(
    profiles: dict[str, str], tokens: dict[str, str]
) -> None:
    me = tokens["me"]
    async with tasks_client(profiles["solo"], me, Tasks()) as solo, tasks_client(profiles["duo"], me, Tasks()) as duo:
        # A long task of beta's, made through `solo`: alive on the server for the whole test.
        created = await solo.session.call_tool(
            "beta__slow_compute", {"seconds": 60, "label": "solo"}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask)
        handle = created.task_id
        assert (await get(solo.session, handle))["status"] == "working"  # the control: valid where it was made

        refused = {
            "unknown": "jt1.YmV0YQ.bm9wZQ.AAAAAAAAAAAAAAAAAAAAAA",
            "not a handle": "tasks-conformance-nonexistent-12345",
            # beta's task, asked on `duo`, which holds beta too: a handle is sealed to the surface it came from.
            "another surface": handle,
        }
        for what, bad in refused.items():
            with pytest.raises(MCPError) as caught:
                await get(duo.session, bad)
            assert caught.value.error.code == types.INVALID_PARAMS, what
        # The same task claimed for alpha, on its own surface: the seal names beta, so it fails there too.
        for method in (get, cancel):
            with pytest.raises(MCPError) as caught:
                await method(solo.session, with_server(handle, "alpha"))
            assert caught.value.error.code == types.INVALID_PARAMS
        with pytest.raises(MCPError) as caught:
            await send(solo.session, update(with_server(handle, "alpha"), {"x": answer("y")}))
        assert caught.value.error.code == types.INVALID_PARAMS
        # Another caller with the same scopes on the same profile: my handle is not theirs to poll or cancel.
        async with tasks_client(profiles["solo"], tokens["other"], Tasks()) as other:
            for method in (get, cancel):
                with pytest.raises(MCPError) as caught:
                    await method(other.session, handle)
                assert caught.value.error.code == types.INVALID_PARAMS
        # Had any of these reached beta it would have cancelled or answered the task: it is still working.
        assert (await get(solo.session, handle))["status"] == "working"
        await cancel(solo.session, handle)

    # A caller that did not declare the extension is told so (-32021), whatever the handle.
    async with tasks_client(profiles["solo"], me) as plain:
        with pytest.raises(MCPError) as caught:
            await get(plain.session, handle)
        assert caught.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
