"""Agent sessions: spawn to first agent event, and memory per idle session, beside a bare `docker run`.

Jarvis: a runtime over gRPC, the real agent image, the real Claude Code CLI talking to a scripted fake of the
Anthropic Messages API on loopback through the egress proxy (tests/support/real_agent.py). Each spawn is a new
workspace (a git worktree) in the project's running container; the clock runs from the SpawnSession call to
  - the agent's first event (Claude Code's `system` init line), and
  - its first `assistant` event (the fake model's answer came back through the proxy),
read by long-polling SessionEvents as a client does. The first spawn also starts the container (shown apart).

Baseline, same image, same run: `docker run -i --rm --network none IMAGE claude -p …` (the preset's command and
variables) given a message on stdin, timed to its first stdout line (its init event; it has no network, so no
model answer to time).

Memory: N sessions left idle after their turn (Claude Code waits for its next message), the project
container's memory (cgroup usage) before and after, per session; beside one bare `docker run` of the same
idle Claude Code.

Run: eval "$(scripts/dockerd)" && .venv/bin/python bench/agent_sessions.py   (BENCH_SPAWNS=10, BENCH_IDLE=3)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jarvis.runtime.domain.presets import PRESETS  # noqa: E402
from tests.support.docker_env import docker_client, docker_host  # noqa: E402
from tests.support.real_agent import IMAGE, Agent, agent_runtime, claude_project  # noqa: E402

SPAWNS = int(os.environ.get("BENCH_SPAWNS", "10"))
IDLE = int(os.environ.get("BENCH_IDLE", "3"))
MESSAGE = json.dumps({"type": "user", "message": {"role": "user", "content": "Say ok."}}) + "\n"
AGENT_EVENTS = ("session_start", "input", "stderr")  # Jarvis's own events; anything else came from the agent


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(label: str, samples: list[float]) -> str:
    return (
        f"{label:<52} p50 {percentile(samples, 0.5) * 1000:8.1f} ms   p99 {percentile(samples, 0.99) * 1000:8.1f}"
        f" ms   (n={len(samples)})"
    )


def spawn_timed(agent: Agent, project: str) -> tuple[str, float, float]:
    """One spawn: its session id, seconds to the agent's first event and to its first assistant event."""
    started = time.perf_counter()
    session = agent.call("SpawnSession", project_id=project, prompt="Say ok.")
    first = answer = 0.0
    after, deadline = 0, time.monotonic() + 120
    while not answer and time.monotonic() < deadline:
        page = agent.call("SessionEvents", project_id=project, session_id=session.id, after=after, wait_seconds=5)
        after = page.next_cursor
        for event in page.events:
            if event.type not in AGENT_EVENTS and not first:
                first = time.perf_counter() - started
            if event.type == "assistant" and not answer:
                answer = time.perf_counter() - started
        if page.state != "running" and not page.events:
            raise RuntimeError(f"session {session.id} ended before its answer: {page}")
    if not answer:
        raise RuntimeError(f"no answer from session {session.id} in 120 s")
    return str(session.id), first, answer


def bare_env() -> dict[str, str]:
    """A session's environment without Jarvis: the preset's variables, a key, and a base URL that fails at once.

    Without a base URL Claude Code spends about 18 s before its first line in a container with no network
    (it waits on its API host, which no name server answers); a session's base URL answers, so the bare run
    gets one that refuses at once (nothing listens on port 9)."""
    return {
        **PRESETS["claude"].env,
        "HOME": "/tmp",
        "ANTHROPIC_API_KEY": "sk-bench",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }


def bare_run_first_line() -> float:
    """`docker run` of Claude Code in the same image, to its first line of output."""
    name = f"bench-bare-{os.getpid()}-{time.monotonic_ns()}"
    env = [part for key, value in bare_env().items() for part in ("-e", f"{key}={value}")]
    argv = [
        "docker",
        "run",
        "-i",
        "--rm",
        "--name",
        name,
        "--network",
        "none",
        "--tmpfs",
        "/tmp",
        *env,
        IMAGE,
        *PRESETS["claude"].command,
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"DOCKER_HOST": docker_host(), "PATH": os.environ["PATH"]},
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(MESSAGE.encode())
    process.stdin.flush()
    process.stdout.readline()
    elapsed = time.perf_counter() - started
    subprocess.run(
        ["docker", "rm", "-f", name],
        capture_output=True,
        check=False,
        env={"DOCKER_HOST": docker_host(), "PATH": os.environ["PATH"]},
    )
    process.wait()
    return elapsed


def memory_bytes(container: Any) -> int:
    """The container's cgroup memory use less its page cache (what `docker stats` shows)."""
    stats = container.stats(stream=False)["memory_stats"]
    cache = stats.get("stats", {}).get("inactive_file", 0)
    return int(stats["usage"]) - int(cache)


def bare_idle_memory(engine: Any) -> int:
    """One bare container of the same image with Claude Code idle on its input after starting."""
    container = engine.containers.run(
        IMAGE,
        list(PRESETS["claude"].command),
        detach=True,
        stdin_open=True,
        network_mode="none",
        tmpfs={"/tmp": ""},
        environment=bare_env(),
    )
    try:
        time.sleep(8)  # Node has loaded Claude Code and waits for its first message
        return memory_bytes(container)
    finally:
        container.remove(force=True)


def main() -> None:
    engine = docker_client()
    with tempfile.TemporaryDirectory() as tmp, agent_runtime(Path(tmp) / "rt", engine, memory="2g") as agent:
        project = claude_project(agent, "bench", Path(tmp) / "src")
        cold_id, cold_first, cold_answer = spawn_timed(agent, project)
        agent.call("EndSession", project_id=project, session_id=cold_id)
        print(
            f"first spawn (starts the project container): first agent event {cold_first * 1000:.0f} ms, "
            f"first answer {cold_answer * 1000:.0f} ms"
        )
        firsts, answers = [], []
        for _ in range(SPAWNS):
            session_id, first, answer = spawn_timed(agent, project)
            firsts.append(first)
            answers.append(answer)
            agent.call("EndSession", project_id=project, session_id=session_id)
        bare = [bare_run_first_line() for _ in range(SPAWNS)]
        print(line("jarvis spawn -> first agent event (init)", firsts))
        print(line("jarvis spawn -> first answer via egress proxy", answers))
        print(line("bare docker run -> first agent output line", bare))

        container = engine.containers.get(agent.call("GetProject", project_id=project).container.id)
        time.sleep(3)
        before = memory_bytes(container)
        idle = [spawn_timed(agent, project)[0] for _ in range(IDLE)]
        time.sleep(5)
        after = memory_bytes(container)
        for session_id in idle:
            agent.call("EndSession", project_id=project, session_id=session_id)
        print(
            f"project container idle, no session: {before / 2**20:7.1f} MiB; with {IDLE} idle Claude Code "
            f"sessions: {after / 2**20:7.1f} MiB"
        )
        print(
            f"memory per idle jarvis session: {(after - before) / IDLE / 2**20:7.1f} MiB   "
            f"bare docker run of the same idle Claude Code: {bare_idle_memory(engine) / 2**20:7.1f} MiB"
        )
        print(f"model API requests the fake answered: {len(agent.fake.requests)}")


if __name__ == "__main__":
    main()
