"""Runtime figures on the local Docker engine (DOCKER_HOST), through a real `jarvis up` and MCP:

- session spawn latency p50/p99 with the project's container already running;
- `container exec` of `true` through the aggregator vs `docker exec` through the SDK directly,
  in the same run (the target is < 50 ms added at p50);
- 50 concurrent sessions: spawn, one message and its answer each, errors, memory per session.

Run: eval "$(scripts/dockerd)" && .venv/bin/python bench/runtime.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import mcp_client, start_jarvis

from tests.support.docker_env import agent_image, docker_client, docker_host, remove_managed

URL = "/mcp/orchestrator"
SPAWNS = int(__import__("os").environ.get("BENCH_SPAWNS", "30"))
EXECS = 60
CONCURRENT = int(__import__("os").environ.get("BENCH_SESSIONS", "50"))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(label: str, values: list[float]) -> str:
    return f"{label:<44} p50 {pct(values, 0.5):8.1f} ms   p99 {pct(values, 0.99):8.1f} ms   n={len(values)}"


def rss_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1])
    return 0


async def call(client: Any, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} {args.get('action', '')}: {result.content[0].text}")
    return json.loads(result.content[0].text)


async def answered(client: Any, project: str, session: str) -> None:
    after = 0
    for _ in range(30):
        page = await call(
            client, "session", action="events", project_id=project, session_id=session, after=after, wait=5
        )
        after = page["next_cursor"]
        if any(e["type"] == "result" for e in page["events"]):
            return
    raise RuntimeError(f"session {session} never answered")


async def main() -> None:
    engine = docker_client()
    image = agent_image(engine)
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "HOME": tmp,
            "DOCKER_HOST": docker_host(),
            "JARVIS_RUNTIME_IMAGE": image,
            "JARVIS_RUNTIME_AGENT_COMMAND": '["fake-agent"]',
            "JARVIS_LOG_LEVEL": "WARNING",
        }
        jarvis = start_jarvis(Path(tmp) / "data", env=env)
        try:
            async with mcp_client(jarvis.url(URL)) as client:
                project = (await call(client, "project", action="create", name="bench"))["created"]["id"]
                container = (await call(client, "container", action="start", project_id=project))["container"]["id"]

                spawn_ms = []
                for _ in range(SPAWNS):
                    started = time.perf_counter()
                    session = (await call(client, "session", action="spawn", project_id=project))["session"]
                    spawn_ms.append((time.perf_counter() - started) * 1000)
                    await call(
                        client, "session", action="end", project_id=project, session_id=session["id"], force=True
                    )
                    await call(
                        client, "workspace", action="delete", project_id=project, workspace_id=session["workspace_id"]
                    )

                via_jarvis, via_sdk = [], []
                for _ in range(EXECS):
                    started = time.perf_counter()
                    await call(client, "container", action="exec", project_id=project, command=["true"])
                    via_jarvis.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    exec_id = engine.api.exec_create(container, ["true"], user="1000:1000")["Id"]
                    engine.api.exec_start(exec_id)
                    assert engine.api.exec_inspect(exec_id)["ExitCode"] == 0
                    via_sdk.append((time.perf_counter() - started) * 1000)

                memory_before = engine.api.stats(container, stream=False)["memory_stats"].get("usage", 0)
                rss_before = rss_kib(jarvis.process.pid)
                errors = 0
                started = time.perf_counter()
                spawned = await asyncio.gather(
                    *(
                        call(client, "session", action="spawn", project_id=project, prompt=f"hello {i}")
                        for i in range(CONCURRENT)
                    ),
                    return_exceptions=True,
                )
                sessions = [s["session"]["id"] for s in spawned if not isinstance(s, BaseException)]
                errors += CONCURRENT - len(sessions)
                replies = await asyncio.gather(
                    *(answered(client, project, s) for s in sessions), return_exceptions=True
                )
                errors += sum(isinstance(r, BaseException) for r in replies)
                all_seconds = time.perf_counter() - started
                memory_after = engine.api.stats(container, stream=False)["memory_stats"].get("usage", 0)
                rss_after = rss_kib(jarvis.process.pid)
                ended = await asyncio.gather(
                    *(call(client, "session", action="end", project_id=project, session_id=s) for s in sessions),
                    return_exceptions=True,
                )
                errors += sum(isinstance(r, BaseException) for r in ended)
                await call(client, "project", action="delete", project_id=project)
        finally:
            jarvis.stop()
            remove_managed(engine, Path(tmp) / "data")  # also when a step above failed

    print(line("session spawn (container running)", spawn_ms))
    print(line("container exec `true` via jarvis (MCP→gRPC→engine)", via_jarvis))
    print(line("docker exec `true` via the SDK directly", via_sdk))
    print(f"{'added by jarvis at p50':<44} {pct(via_jarvis, 0.5) - pct(via_sdk, 0.5):8.1f} ms   (target < 50 ms)")
    print(f"{CONCURRENT} concurrent sessions: spawn+answer in {all_seconds:.1f} s, errors {errors}")
    per_container = (memory_after - memory_before) / max(1, len(sessions)) / 1024
    per_jarvis = (rss_after - rss_before) / max(1, len(sessions))
    print(
        f"memory per session: {per_container:.0f} KiB in the container, {per_jarvis:.0f} KiB in jarvis "
        f"(RSS {rss_before / 1024:.0f} → {rss_after / 1024:.0f} MiB)"
    )
    print(f"mean spawn {statistics.mean(spawn_ms):.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
