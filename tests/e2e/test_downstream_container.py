"""Container-image MCP servers in a real `jarvis up`: registered with `jarvis_server`, run by the runtime on
the real Docker engine with no network, proxied on a profile surface, restarted after a crash, and never
left running after Jarvis."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import docker
import pytest
from mcp import Client

from tests.support.docker_env import docker_host, managed, remove_managed
from tests.support.downstream import FAST_ENV, create_profile, eventually, server_info, text_of
from tests.support.everything_image import everything_image
from tests.support.mcp_server_image import mcp_server_image
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def mcp_image(engine: docker.DockerClient) -> str:
    return mcp_server_image(engine)


@pytest.fixture(scope="module")
def everything(engine: docker.DockerClient) -> str:
    return everything_image(engine)


def jarvis_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "DOCKER_HOST": docker_host(),
        "JARVIS_RUNTIME_SESSION_END_GRACE_SECONDS": "2",
        **FAST_ENV,
    }


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory, engine: docker.DockerClient) -> Iterator[RunningJarvis]:
    data = tmp_path_factory.mktemp("containers")
    running = start_jarvis(data, env=jarvis_env(tmp_path_factory.mktemp("home")))
    yield running
    running.stop()
    remove_managed(engine, data)


async def create_container_server(admin: Client, name: str, image: str, **env: str) -> Any:
    return result_json(
        await admin.call_tool(
            "jarvis_server", {"action": "create", "name": name, "type": "container", "image": image, "env": env}
        )
    )


def server_containers(engine: docker.DockerClient, data_dir: Path, name: str) -> list[Any]:
    return [c for c in managed(engine, data_dir) if c.labels.get("jarvis.server") == name]


async def test_a_container_server_is_hosted_and_proxied(
    boxed: RunningJarvis, mcp_image: str, engine: docker.DockerClient
) -> None:
    async with mcp_client(boxed.url()) as admin:
        await create_container_server(admin, "box", mcp_image, GREETING="hello")
        await create_profile(admin, "boxes", "box")
    async with mcp_client(boxed.url("/mcp/profile/boxes")) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        echoed = await client.call_tool("box__echo", {"text": "from a container"})
        who = text_of(await client.call_tool("box__whoami", {}))
    assert tools == {"box__echo", "box__whoami", "box__crash"}
    assert not echoed.is_error
    assert text_of(echoed) == "from a container"
    assert "uid=1000" in who
    async with mcp_client(boxed.url()) as admin:
        info = await server_info(admin, "box")
    runtime = info["runtime"]
    assert runtime["state"] == "running"
    assert "pid" not in runtime  # a container has no pid here: its id stands in
    assert who.startswith(f"host={runtime['container'][:12]}")
    (container,) = server_containers(engine, boxed.data_dir, "box")
    assert container.id == runtime["container"]
    host = container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "GREETING=hello" in container.attrs["Config"]["Env"]


async def test_a_crash_mid_call_is_a_clear_error_and_the_next_call_restarts_it(
    boxed: RunningJarvis, mcp_image: str, engine: docker.DockerClient
) -> None:
    async with mcp_client(boxed.url()) as admin:
        await create_container_server(admin, "brittle-box", mcp_image)
        await create_profile(admin, "brittle-boxes", "brittle-box")
    async with mcp_client(boxed.url("/mcp/profile/brittle-boxes")) as client:
        before = text_of(await client.call_tool("brittle-box__whoami", {}))
        with anyio.fail_after(15):
            crashed = await client.call_tool("brittle-box__crash", {})
        again = await client.call_tool("brittle-box__echo", {"text": "back again"})
        after = text_of(await client.call_tool("brittle-box__whoami", {}))
    assert crashed.is_error
    message = text_of(crashed)
    assert "brittle-box" in message
    assert "exited with code 7" in message
    assert "crashing as asked" in message
    assert not again.is_error
    assert text_of(again) == "back again"
    assert after != before  # a new container
    async with mcp_client(boxed.url()) as admin:
        info = await server_info(admin, "brittle-box")
    assert info["runtime"]["restarts"] >= 1
    assert len(server_containers(engine, boxed.data_dir, "brittle-box")) == 1  # the crashed one was removed


async def test_a_missing_image_is_reported_with_what_to_do(boxed: RunningJarvis) -> None:
    async with mcp_client(boxed.url()) as admin:
        await create_container_server(admin, "phantom", "jarvis-test-absent:never")
        await create_profile(admin, "phantoms", "phantom")
    async with mcp_client(boxed.url("/mcp/profile/phantoms")) as client:
        assert (await client.list_tools()).tools == []
    async with mcp_client(boxed.url()) as admin:
        info = await eventually(lambda: _failing(admin, "phantom"), what="the failure is reported")
    assert "jarvis-test-absent:never" in info["runtime"]["last_error"]
    assert "never pulls" in info["runtime"]["last_error"]


async def _failing(admin: Client, name: str) -> Any:
    info = await server_info(admin, name)
    return info if info["runtime"]["last_error"] else None


async def test_no_server_container_outlives_jarvis(tmp_path: Path, mcp_image: str, engine: docker.DockerClient) -> None:
    data = tmp_path / "jarvis"
    for stop in ("graceful", "killed"):
        running = start_jarvis(data, env=jarvis_env(tmp_path))
        try:
            async with mcp_client(running.url()) as admin:
                if stop == "graceful":
                    await create_container_server(admin, "tenant", mcp_image)
                    await create_profile(admin, "tenants", "tenant")
            async with mcp_client(running.url("/mcp/profile/tenants")) as client:
                assert not (await client.call_tool("tenant__echo", {"text": "here"})).is_error
            assert len(server_containers(engine, data, "tenant")) == 1
        finally:
            if stop == "killed":
                running.process.kill()  # SIGKILL: the next start removes what it left
                running.process.wait(10)
            running.stop()
        if stop == "graceful":
            assert server_containers(engine, data, "tenant") == []
    assert len(server_containers(engine, data, "tenant")) == 1  # its input closed with the killed Jarvis
    running = start_jarvis(data, env=jarvis_env(tmp_path))
    try:
        for _ in range(100):
            if not server_containers(engine, data, "tenant"):
                break
            await asyncio.sleep(0.1)
        assert server_containers(engine, data, "tenant") == []
    finally:
        running.stop()
        remove_managed(engine, data)


async def test_a_third_party_server_image_is_hosted_and_proxied(
    boxed: RunningJarvis, everything: str, engine: docker.DockerClient
) -> None:
    """server-everything (npm) in a hardened container: tools, results and progress pass the container path."""
    async with mcp_client(boxed.url()) as admin:
        await create_container_server(admin, "everybox", everything)
        await create_profile(admin, "everyboxes", "everybox")
    notified: list[tuple[float, float | None, str | None]] = []

    # The parameter names match mcp's ProgressFnT protocol, which mypy checks by keyword.
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notified.append((progress, total, message))

    async with mcp_client(boxed.url("/mcp/profile/everyboxes")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        echo = await client.call_tool("everybox__echo", {"message": "hello from a container"})
        summed = await client.call_tool("everybox__get-sum", {"a": 2, "b": 40})
        with anyio.fail_after(15):
            await client.call_tool(
                "everybox__trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
            )
    assert {"everybox__echo", "everybox__get-sum", "everybox__trigger-long-running-operation"} <= names
    assert not echo.is_error
    assert "hello from a container" in text_of(echo)
    assert not summed.is_error
    assert "42" in text_of(summed)
    assert [p[0] for p in notified] == [1, 2, 3], notified
    assert notified[-1][1] == 3
    async with mcp_client(boxed.url()) as admin:
        runtime = (await server_info(admin, "everybox"))["runtime"]
    assert (runtime["state"], runtime.get("pid")) == ("running", None)
    (container,) = server_containers(engine, boxed.data_dir, "everybox")
    assert container.id == runtime["container"]
    assert container.attrs["Config"]["User"] == "1000:1000"  # the image's non-root user
    assert container.attrs["HostConfig"]["NetworkMode"] == "none"
